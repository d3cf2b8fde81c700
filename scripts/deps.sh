#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Make sure the Debian packages ptc needs are installed.
#   scripts/deps.sh build   what building needs
#   scripts/deps.sh test    + what the test suite needs (cmocka, pytest, clang sanitizers,
#                           and the pinned npm packages of tests/mcp: the official MCP SDK
#                           and reference servers, which the MCP tests drive ptc with)
# As root the missing ones are installed with apt-get; otherwise the exact
# apt-get line is printed and the script fails.
set -euo pipefail

build_pkgs=(meson ninja-build pkg-config gcc libc6-dev libjansson-dev libyaml-dev libpcre2-dev libcurl4-openssl-dev
            libgumbo-dev libidn2-dev libseccomp-dev nettle-dev python3)
test_pkgs=(libcmocka-dev python3-pytest python3-jsonschema clang libclang-rt-14-dev ripgrep poppler-utils abigail-tools groff-base
           man-db openssh-server openssh-client)

want=("${build_pkgs[@]}")
if [ "${1:-build}" = test ]; then
        want+=("${test_pkgs[@]}")
fi

# The MCP tests need Node.js; a machine that has node (any packaging) keeps it.
if [ "${1:-build}" = test ] && ! command -v node >/dev/null; then
        want+=(nodejs npm)
fi

npm_deps() {
        [ "${1:-build}" = test ] || return 0
        [ -f tests/mcp/package-lock.json ] || return 0
        if [ ! -d tests/mcp/node_modules ] ||
                ! cmp -s tests/mcp/package-lock.json tests/mcp/node_modules/.ptc-lock; then
                echo "ptc: installing the pinned npm packages of tests/mcp (npm ci)" >&2
                npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error >/dev/null
                # Stamp: the next run installs again only when the lock file changed.
                cp tests/mcp/package-lock.json tests/mcp/node_modules/.ptc-lock
        fi
}

cd "$(dirname "$0")/.."
missing=()
for p in "${want[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
                missing+=("$p")
        fi
done
if [ ${#missing[@]} -eq 0 ]; then
        npm_deps "${1:-build}"
        exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
        echo "ptc: installing missing Debian packages: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        # A fresh machine has no package lists yet.
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        npm_deps "${1:-build}"
        exit 0
fi
echo "ptc: missing Debian packages. Install them with:" >&2
echo "  sudo apt-get install -y ${missing[*]}" >&2
exit 1
