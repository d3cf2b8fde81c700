#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Make sure the Debian packages ptc needs are installed.
#   scripts/deps.sh build   what building needs
#   scripts/deps.sh test    + what the test suite needs (cmocka, pytest, clang sanitizers)
# As root the missing ones are installed with apt-get; otherwise the exact
# apt-get line is printed and the script fails.
set -euo pipefail

build_pkgs=(meson ninja-build pkg-config gcc libc6-dev libjansson-dev libyaml-dev libpcre2-dev libcurl4-openssl-dev
            libgumbo-dev python3)
test_pkgs=(libcmocka-dev python3-pytest clang libclang-rt-14-dev ripgrep poppler-utils)

want=("${build_pkgs[@]}")
if [ "${1:-build}" = test ]; then
        want+=("${test_pkgs[@]}")
fi

missing=()
for p in "${want[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
                missing+=("$p")
        fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
        echo "ptc: installing missing Debian packages: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        # A fresh machine has no package lists yet.
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        exit 0
fi
echo "ptc: missing Debian packages. Install them with:" >&2
echo "  sudo apt-get install -y ${missing[*]}" >&2
exit 1
