#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzz one target for real (docs/testing.md, "Fuzzing"):
#
#   scripts/fuzz.sh TARGET [SECONDS] [-- LIBFUZZER-OPTION...]
#   scripts/fuzz.sh list
#
# TARGET is NAME of tests/fuzz/fuzz-NAME.c. Builds build-fuzz/ (clang, -Dfuzzing=true,
# ASan+UBSan), then runs the libFuzzer program for SECONDS (default 60) on a scratch corpus
# seeded with tests/fuzz/corpus/NAME/. A crash, leak, timeout (10 s an input) or
# out-of-memory (2 GiB) stops it with the input in build-fuzz/findings/NAME/ and exit
# status 1; add that input to the corpus once it is fixed, so CI replays it. New inputs that
# add coverage are merged, minimised, into build-fuzz/corpus/NAME/; copy the ones worth
# keeping into tests/fuzz/corpus/NAME/ (small ones: the replay runs in every CI).
# The last line is a summary: TARGET, executions, coverage, seconds taken, findings. Pass
# -- -runs=N to stop after N executions (the campaign: scripts/fuzz.sh NAME 1200 -- -runs=10000000).
set -uo pipefail
cd "$(dirname "$0")/.."

usage() {
        sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
}

[ $# -ge 1 ] || usage
if [ "$1" = list ]; then
        for f in tests/fuzz/fuzz-*.c; do
                n=${f#tests/fuzz/fuzz-}
                n=${n%.c}
                [ "$n" = main ] || echo "$n"
        done
        exit 0
fi
target=$1
shift
seconds=60
if [ $# -ge 1 ] && [ "$1" != -- ]; then
        seconds=$1
        shift
fi
[ "${1:-}" = -- ] && shift
case $target in
*[!a-z0-9-]* | "" | main) echo "fuzz.sh: no such target '$target' (scripts/fuzz.sh list)" >&2; exit 2 ;;
esac
[ -f "tests/fuzz/fuzz-$target.c" ] || { echo "fuzz.sh: no such target '$target' (scripts/fuzz.sh list)" >&2; exit 2; }
case $seconds in
'' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)" >&2; exit 2; }

dir=build-fuzz
mkdir -p "$dir"
# Two fuzz.sh at once (one a CPU) must not configure or build the same objects together.
{
        flock 9
        if [ ! -f "$dir/build.ninja" ]; then
                CC=clang meson setup "$dir" --buildtype=debugoptimized -Dtests=enabled -Dfuzzing=true \
                        -Db_sanitize=address,undefined -Db_lundef=false \
                        "-Dc_args=-fno-sanitize-recover=undefined -fno-omit-frame-pointer" >/dev/null ||
                        { echo "fuzz.sh: meson setup $dir failed" >&2; exit 1; }
        fi
        ninja -C "$dir" "tests/fuzz-$target" >"$dir/ninja-$target.log" 2>&1 ||
                { tail -n 30 "$dir/ninja-$target.log" >&2; echo "fuzz.sh: build failed" >&2; exit 1; }
} 9>"$dir/.build-lock"

corpus="$dir/corpus/$target"
findings="$dir/findings/$target"
mkdir -p "$corpus" "$findings"
seed="tests/fuzz/corpus/$target"
log="$dir/fuzz-$target.log"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
start=$SECONDS
"$dir/tests/fuzz-$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" "$@" \
        "$corpus" "$seed" >"$log" 2>&1
rc=$?
elapsed=$((SECONDS - start))
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
found=$(find "$findings" -type f | wc -l)
if [ $rc -ne 0 ]; then
        grep -E "ERROR|SUMMARY|artifact" "$log" | head -n 20 >&2
fi
echo "$target: ${execs:-0} executions, coverage ${cov:-0}, $elapsed s, $found findings (log: $log)"
[ $rc -eq 0 ] && [ "$found" -eq 0 ]
