#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/plot.py: bench/RESULTS.md's compare.py numbers as an SVG chart (stdlib only).

Reads the first `## Run of ...` section of RESULTS.md that has compare.py's table (workload,
runs, seed median ms, ptc median ms, ...) and its "physical limit" table, and draws, per
workload, the seed's and ptc's medians as bars on a logarithmic scale, with the
`python3 -c pass` median of the same run as a line: the floor no process that starts an
interpreter goes below.

    bench/plot.py [RESULTS.md] [OUT.svg]   (defaults: bench/RESULTS.md, bench/compare.svg)
"""

import math
import re
import sys
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
ROW = re.compile(r"^\| (\w+) \| (\d+) \| ([\d,.]+) \| ([\d,.]+) \|")
FLOOR = re.compile(r"^\| `/usr/bin/python3 -c pass` \| \d+ \| ([\d,.]+) \|")
RUN = re.compile(r"^## Run of (.+)$")


def number(text):
    return float(text.replace(",", ""))


def parse(text):
    """(title, [(workload, seed_ms, ptc_ms)], floor_ms) of the first run with a table."""
    title, rows, floor = None, [], None
    for line in text.splitlines():
        m = RUN.match(line)
        if m:
            if rows:
                break
            title = m.group(1)
            continue
        m = ROW.match(line)
        if m and title:
            rows.append((m.group(1), number(m.group(3)), number(m.group(4))))
            continue
        m = FLOOR.match(line)
        if m and title and rows:
            floor = number(m.group(1))
    if not rows:
        raise SystemExit("plot.py: no compare.py table under a '## Run of' heading")
    return title, rows, floor


def svg(title, rows, floor):
    left, right, top, bar, gap = 110, 120, 60, 14, 14
    width = 760
    plot_w = width - left - right
    height = top + len(rows) * (2 * bar + gap) + 50
    lo = math.log10(1)
    hi = math.log10(max(max(s, p) for _, s, p in rows) * 2)

    def x(ms):
        return left + plot_w * (math.log10(max(ms, 1)) - lo) / (hi - lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15">ptc vs the seed: median ms per workload '
           f'(log scale)</text>',
           f'<text x="{left}" y="40" fill="#555">{escape(title)}; lower is better</text>']
    for decade in range(0, int(math.ceil(hi)) + 1):
        ms = 10 ** decade
        if ms > 10 ** hi:
            break
        gx = x(ms)
        out.append(f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{height - 40}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{gx:.1f}" y="{height - 26}" text-anchor="middle" '
                   f'fill="#555">{ms:g} ms</text>')
    y = top
    for name, seed, ptc in rows:
        out.append(f'<text x="{left - 8}" y="{y + bar + 4}" text-anchor="end">'
                   f'{escape(name)}</text>')
        for value, color, label in ((seed, "#b0b0b0", "seed"), (ptc, "#2a6fdb", "ptc")):
            w = max(x(value) - left, 1)
            out.append(f'<rect class="{label}" data-workload="{escape(name)}" x="{left}" '
                       f'y="{y}" width="{w:.1f}" height="{bar}" fill="{color}"/>')
            out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar - 3}" fill="#333">'
                       f'{label} {value:,.1f}</text>')
            y += bar
        y += gap
    if floor:
        fx = x(floor)
        out.append(f'<line class="floor" x1="{fx:.1f}" y1="{top - 6}" x2="{fx:.1f}" '
                   f'y2="{height - 40}" stroke="#d33" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{fx + 4:.1f}" y="{top - 8}" fill="#d33">python3 -c pass '
                   f'{floor:g} ms</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    src = Path(argv[1]) if len(argv) > 1 else HERE / "RESULTS.md"
    dst = Path(argv[2]) if len(argv) > 2 else HERE / "compare.svg"
    title, rows, floor = parse(src.read_text(encoding="utf-8"))
    dst.write_text(svg(title, rows, floor), encoding="utf-8")
    print(f"{dst}: {len(rows)} workloads from '{title}'")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
