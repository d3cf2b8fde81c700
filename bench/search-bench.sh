#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# search_files against ripgrep, side by side in one run: the 2,000-file fixture tree
# (/tmp/ptc-bench/tree, from ../shared/bench/make_fixtures.sh) and the large tree
# (/tmp/ptc-bench/large, from bench/make-large-tree.sh). Each case runs ptc through
# `ptc tool search_files '{...}'` and rg doing the same work (rg -c; rg --files --sortr=modified)
# plus the seed's own rg command line, alternately, after one warm-up run; wall-clock medians
# are printed as a Markdown table, with the totals both report (rg -c summed,
# rg --files | wc -l) so a speed-up cannot hide a wrong answer.
#   bench/search-bench.sh [--repeat N] [--quick]     (--quick: fixture tree only)
# Needs a ptc built with search_files registered, rg on PATH, /usr/bin/python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${PTC_SHARED:-$root/../shared}
ptc=${PTC_BIN:-$root/build/ptc}
rg=${RG:-$(command -v rg || true)}
repeat=5
quick=0
while [ $# -gt 0 ]; do
        case "$1" in
        --repeat) repeat=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        *) echo "usage: $0 [--repeat N] [--quick]" >&2; exit 2 ;;
        esac
done

[ -x "$ptc" ] || { echo "no ptc at $ptc (build it, or set PTC_BIN)" >&2; exit 1; }
[ -n "$rg" ] || { echo "ripgrep (rg) not found" >&2; exit 1; }
if ! "$ptc" tool search_files '{"pattern": "x", "path": "/nonexistent-ptc-bench"}' \
        >/dev/null 2>&1; then
        echo "$ptc has no search_files tool" >&2
        exit 1
fi
[ -d /tmp/ptc-bench/tree ] || bash "$shared/bench/make_fixtures.sh" >&2
[ "$quick" = 1 ] || "$here/make-large-tree.sh" >&2

exec /usr/bin/python3 - "$ptc" "$rg" "$repeat" "$quick" <<'PYEOF'
import json, os, platform, statistics, subprocess, sys, time

ptc, rg, repeat, quick = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
tree, large = "/tmp/ptc-bench/tree", "/tmp/ptc-bench/large"

# (name, ptc args, rg command, rg's second form, how to read rg's count). The first rg command
# does the same work as ptc (the whole tree searched, exact totals: rg -c; all files sorted by
# mtime: --sortr=modified) and gives the ratio; the second is shown too: the seed's content
# command line without its `| head` (prints every match), or an unsorted (parallel) --files.
def content(name, pattern, path):
    return (name, {"pattern": pattern, "path": path}, [rg, "-c", pattern, path],
            [rg, "--line-number", "--no-heading", "--with-filename", pattern, path], "sum")

def files(name, glob, path):
    return (name, {"pattern": glob, "target": "files", "path": path},
            [rg, "--files", "--sortr=modified", "-g", glob, path],
            [rg, "--files", "-g", glob, path], "lines")

cases = [
    content("fixture literal `TODO\\(bench\\)`", r"TODO\(bench\)", tree),
    files("fixture files `*.txt`", "*.txt", tree),
]
if not quick:
    cases += [
        content("large literal `PATH_MAX`", "PATH_MAX", large),
        content("large regex `\\w+_t\\b`", r"\w+_t\b", large),
        content("large regex `[A-Z]{3,}[0-9]{3,}`", "[A-Z]{3,}[0-9]{3,}", large),
        files("large files `*.h`", "*.h", large),
    ]

def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, p

def ptc_cmd(args):
    return [ptc, "tool", "search_files", json.dumps(args)]

rows = []
for name, pargs, rg_main, rg_alt, how in cases:
    pc = ptc_cmd(pargs)
    _, p = run(pc)
    res = json.loads(p.stdout)
    if "error" in res:
        sys.exit(f"{name}: ptc error: {res['error']}")
    ptc_total = res["total_count"]
    out = subprocess.run(rg_main, stdout=subprocess.PIPE).stdout.decode("utf-8", "replace")
    if how == "sum":
        rg_total = sum(int(l.rsplit(":", 1)[1]) for l in out.splitlines() if l)
    else:
        rg_total = len([l for l in out.splitlines() if l])
    run(rg_alt)  # warm-up
    tp, tr, ta = [], [], []
    for _ in range(repeat):
        tp.append(run(pc)[0])
        tr.append(run(rg_main)[0])
        ta.append(run(rg_alt)[0])
    rows.append((name, statistics.median(tp), statistics.median(tr), statistics.median(ta),
                 ptc_total, rg_total, pc, rg_main, rg_alt))

load = os.getloadavg()[0]
print(f"search_files vs ripgrep: {repeat} runs each, alternating, median wall time; "
      f"{os.cpu_count()} CPUs, load {load:.1f}, {platform.machine()}, "
      f"{subprocess.run([rg, '--version'], stdout=subprocess.PIPE).stdout.decode().splitlines()[0]}")
print()
print("| case | ptc (ms) | rg (ms) | ptc / rg | rg, 2nd form (ms) | ptc total | rg total | same |")
print("|---|---:|---:|---:|---:|---:|---:|:---:|")
for name, mp, mr, ma, pt, rt, _, _, _ in rows:
    print(f"| {name} | {mp * 1000:.1f} | {mr * 1000:.1f} | {mp / mr:.2f}x | {ma * 1000:.1f} | "
          f"{pt} | {rt} | {'yes' if pt == rt else 'NO'} |")
print()
print("Commands (ptc prints the first 50 results and the true total):")
for name, _, _, _, _, _, pc, rm, ra in rows:
    print(f"- {name}: `{' '.join(pc[:3])} '{pc[3]}'` vs `{' '.join(rm)}` "
          f"(2nd form: `{' '.join(ra)}`)")
PYEOF
