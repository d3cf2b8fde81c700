#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Quick start, step 1: install what is missing (as root), build ptc, and run
# examples/demo.py, a script that makes several real tool calls.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh build
if [ ! -d build ]; then
        meson setup build --buildtype=debugoptimized -Dtests=disabled >/dev/null
fi
meson compile -C build ptc >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== ptc run examples/demo.py --cwd $work" >&2
build/ptc run examples/demo.py --cwd "$work" --pretty
