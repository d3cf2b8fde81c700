#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measure ptc against the seed with the shared harness (../shared/bench/compare.py),
# side by side in one run. Prints the Markdown table; JSON lines go to /tmp/ptc-bench/.
#   bench/compare.sh [--via-server] [extra compare.py args, e.g. --workloads hello,calls1000]
# --via-server: every `ptc run` goes through a per-user server's warm pool (docs/sessions.md):
# a scratch XDG_RUNTIME_DIR, a config file with the harness's tools and mode, `ptc run
# --server --config FILE` (the first run starts the server, the others find it); the server
# is stopped at the end. Without it, `--no-server`: a server the user runs is not measured.
# Needs /usr/bin/python3 with psutil (Debian: python3-psutil) for the seed side.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${PTC_SHARED:-$root/../shared}
ptc=${PTC_BIN:-$root/build/ptc}

[ -x "$ptc" ] || { echo "build ptc first: scripts/demo.sh or meson compile -C build" >&2; exit 1; }
[ -f "$shared/bench/compare.py" ] || { echo "no $shared/bench/compare.py (set PTC_SHARED)" >&2; exit 1; }
cd "$shared/bench"

if [ "${1:-}" != --via-server ]; then
        exec /usr/bin/python3 compare.py --ptc "$ptc" --ptc-arg=--no-server "$@"
fi
shift
run=$(mktemp -d /tmp/ptc-bench-serve.XXXXXX)
export XDG_RUNTIME_DIR=$run
stop_server() {
        # The server started by the first run: the one whose environment names $run.
        for p in /proc/[0-9]*; do
                if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "XDG_RUNTIME_DIR=$run" &&
                        tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q '^ptc serve '; then
                        kill "${p#/proc/}" 2>/dev/null || true
                fi
        done
        rm -rf "$run"
}
trap stop_server EXIT
# The server's configuration must be the runs': compare.py passes the manifest's tools and
# mode on each run's command line.
/usr/bin/python3 - "$run/config.yaml" <<'EOF'
import json, sys
m = json.load(open("workloads/manifest.json"))
mode = m["config_defaults"]["mode"]
with open(sys.argv[1], "w") as f:
    f.write(f"code_execution:\n  mode: {mode}\n  tools: [{', '.join(m['compare_tools'])}]\n")
EOF
/usr/bin/python3 compare.py --ptc "$ptc" --ptc-arg=--server "--ptc-arg=--config=$run/config.yaml" "$@"
