#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI check: compare the freshly built libptc.so.0 with the committed baseline
# abi/libptc.abi (abigail-tools' abidiff), restricted to the public headers include/ptc/.
#   scripts/abi-check.sh [BUILD_DIR]            check (default build dir: build)
#   scripts/abi-check.sh --update [BUILD_DIR]   rewrite the baseline (an intentional change;
#                                               docs/install.md says when that is allowed)
# Exit 0: compatible (or no change). 1: an incompatible change, or an error. 77: abidiff is
# not installed (the skip status of meson test; .ci/run installs abigail-tools).
set -uo pipefail
cd "$(dirname "$0")/.."

update=0
if [ "${1:-}" = --update ]; then
        update=1
        shift
fi
build=${1:-build}
lib="$build/libptc.so.0"
baseline=${PTC_ABI_BASELINE:-abi/libptc.abi}   # the override is for the tests

if ! command -v abidiff >/dev/null || ! command -v abidw >/dev/null; then
        echo "abi-check: abidiff/abidw not installed (Debian: apt-get install abigail-tools)" >&2
        exit 77
fi
if [ ! -e "$lib" ]; then
        echo "abi-check: $lib not built (meson compile -C $build)" >&2
        exit 1
fi

if [ "$update" = 1 ]; then
        abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types \
                --headers-dir include/ptc "$lib" |
                # translation units' paths without the build dir's location: the same
                # baseline from any checkout
                sed -E "s#path='[^']*/(src|include)/#path='\1/#" >"$baseline.tmp" &&
                mv "$baseline.tmp" "$baseline" || { rm -f "$baseline.tmp"; exit 1; }
        echo "abi-check: wrote $baseline from $lib"
        exit 0
fi

abidiff --headers-dir2 include/ptc --no-added-syms "$baseline" "$lib"
rc=$?
# abidiff's status is a bit field: 1 error, 2 usage, 4 ABI change, 8 incompatible change.
if [ $((rc & 3)) -ne 0 ]; then
        echo "abi-check: abidiff failed (status $rc)" >&2
        exit 1
fi
if [ $((rc & 8)) -ne 0 ]; then
        echo "abi-check: INCOMPATIBLE change of libptc's ABI against $baseline" >&2
        echo "  (intentional? bump the soname and run scripts/abi-check.sh --update; docs/install.md)" >&2
        exit 1
fi
if [ $((rc & 4)) -ne 0 ]; then
        # A compatible change (a member appended, say) is not an error, but the baseline
        # should follow: say so.
        echo "abi-check: compatible ABI change; refresh $baseline with --update" >&2
        exit 0
fi
echo "abi-check: $lib matches $baseline"
exit 0
