#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Quick start, step 2: the whole test suite (unit tests + integration tests
# through the real binary + the Python package's tests over the real library).
#   scripts/run-tests.sh           gcc build in build/
#   scripts/run-tests.sh --asan    clang ASan+UBSan build in build-asan/
# Ends with the line "N passed, N failed, N skipped". Exit 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

variant=gcc
[ "${1:-}" = --asan ] && variant=asan

scripts/deps.sh test || exit 1

if [ "$variant" = asan ]; then
        dir=build-asan
        setup=(env CC=clang meson setup "$dir" --buildtype=debug -Dwerror=true -Dtests=enabled
               -Db_sanitize=address,undefined -Db_lundef=false
               "-Dc_args=-fno-sanitize-recover=undefined -fno-omit-frame-pointer")
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
        dir=build
        setup=(env CC=gcc meson setup "$dir" --buildtype=debugoptimized -Dwerror=true
               -Dtests=enabled)
fi

# Reconfigure an existing dir too: demo.sh may have made build/ before cmocka was installed,
# and the options above must hold whoever made it.
[ -f "$dir/build.ninja" ] && setup+=(--reconfigure)
if ! "${setup[@]}" >"$dir.setup.log" 2>&1; then
        cat "$dir.setup.log"
        echo "meson setup failed"
        echo "0 passed, 1 failed"
        exit 1
fi
rm -f "$dir.setup.log"
# The test programs are not built by default (they are not installed): build them too.
if ! { meson compile -C "$dir" && meson compile -C "$dir" test-programs; } >"$dir/compile.log" 2>&1; then
        cat "$dir/compile.log"
        echo "build failed"
        echo "0 passed, 1 failed"
        exit 1
fi

# Unit tests: one cmocka executable per module, TAP lines counted one by one.
meson test -C "$dir" --suite unit --print-errorlogs >"$dir/unit.log" 2>&1
unit_rc=$?
read -r unit_pass unit_fail unit_skip < <(/usr/bin/python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, re, sys
p = f = s = 0
try:
    for line in open(sys.argv[1]):
        t = json.loads(line)
        out = t.get("stdout") or ""
        skip = len(re.findall(r"^ok \d+ # SKIP", out, re.M))
        ok = len(re.findall(r"^ok \d+", out, re.M)) - skip
        nok = len(re.findall(r"^not ok \d+", out, re.M))
        if ok + nok + skip == 0:
            ok, nok = (1, 0) if t.get("result") == "OK" else (0, 1)
        elif t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP") and nok == 0:
            nok = 1  # crashed after its last TAP line
        p += ok
        f += nok
        s += skip
except FileNotFoundError:
    f = 1
print(p, f, s)
PY
)
echo "unit ($variant): $unit_pass passed, $unit_fail failed, $unit_skip skipped"
[ $unit_rc -ne 0 ] && grep -E "not ok|FAIL|Error" "$dir/unit.log" | head -40

# "passed failed skipped" of a pytest JUnit XML file; "0 1 0" when it cannot be read.
junit_counts() {
        /usr/bin/python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 1, 0); sys.exit()
suites = [root] if root.tag == "testsuite" else list(root)
t = f = s = 0
for su in suites:
    t += int(su.get("tests", 0)); f += int(su.get("failures", 0)) + int(su.get("errors", 0))
    s += int(su.get("skipped", 0))
print(t - f - s, f, s)
PY
}

# Integration tests: pytest driving the real binary with real scripts.
junit="$dir/integration-junit.xml"
PTC_BIN="$root/$dir/ptc" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
        --junitxml="$junit" tests/integration >"$dir/integration.log" 2>&1
int_rc=$?
tail -n 30 "$dir/integration.log" | grep -E "FAILED|ERROR|passed|failed" | head -40
read -r int_pass int_fail int_skip < <(junit_counts "$junit")
echo "integration ($variant): $int_pass passed, $int_fail failed, $int_skip skipped"

# The Python package (python/ptc) over the library just built: pytest with real scripts
# calling Python tools. An ASan library loads into the (uninstrumented) interpreter only
# after the sanitizer runtime; Python's own allocations are not ours to leak-check.
pyjunit="$dir/python-junit.xml"
py_env=(PTC_LIBRARY="$root/$dir/libptc.so.0" PTC_BIN="$root/$dir/ptc")
if [ "$variant" = asan ]; then
        py_env+=(LD_PRELOAD="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
                 ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
fi
env "${py_env[@]}" /usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$pyjunit" \
        tests/python >"$dir/python.log" 2>&1
py_rc=$?
tail -n 30 "$dir/python.log" | grep -E "FAILED|ERROR|passed|failed" | head -40
read -r py_pass py_fail py_skip < <(junit_counts "$pyjunit")
echo "python ($variant): $py_pass passed, $py_fail failed, $py_skip skipped"

passed=$((unit_pass + int_pass + py_pass))
failed=$((unit_fail + int_fail + py_fail))
if [ $unit_rc -ne 0 ] && [ "$unit_fail" -eq 0 ]; then failed=$((failed + 1)); fi
if [ $int_rc -ne 0 ] && [ "$int_fail" -eq 0 ]; then failed=$((failed + 1)); fi
if [ $py_rc -ne 0 ] && [ "$py_fail" -eq 0 ]; then failed=$((failed + 1)); fi
echo "$passed passed, $failed failed, $((unit_skip + int_skip + py_skip)) skipped"
[ "$failed" -eq 0 ]
