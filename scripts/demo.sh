#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Quick start, step 1: install what is missing (as root), build ptc, and run
# examples/demo.py, a script that makes several real tool calls.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh build
if [ ! -f build/build.ninja ]; then
        meson setup build --buildtype=debugoptimized >/dev/null
fi
if ! meson compile -C build ptc:executable >build/demo-compile.log 2>&1; then
        cat build/demo-compile.log >&2
        echo "ptc: build failed" >&2
        exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== ptc run examples/demo.py --cwd $work" >&2
build/ptc run examples/demo.py --cwd "$work" --pretty
