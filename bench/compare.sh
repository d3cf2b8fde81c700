#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measure ptc against the seed with the shared harness (../shared/bench/compare.py),
# side by side in one run. Prints the Markdown table; JSON lines go to /tmp/ptc-bench/.
#   bench/compare.sh [extra compare.py args, e.g. --workloads hello,calls1000 --repeat 5]
# Needs /usr/bin/python3 with psutil (Debian: python3-psutil) for the seed side.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${PTC_SHARED:-$root/../shared}
ptc=${PTC_BIN:-$root/build/ptc}

[ -x "$ptc" ] || { echo "build ptc first: scripts/demo.sh or meson compile -C build" >&2; exit 1; }
[ -f "$shared/bench/compare.py" ] || { echo "no $shared/bench/compare.py (set PTC_SHARED)" >&2; exit 1; }
cd "$shared/bench"
exec /usr/bin/python3 compare.py --ptc "$ptc" "$@"
