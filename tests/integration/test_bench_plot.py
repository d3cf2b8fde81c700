# SPDX-License-Identifier: MIT
"""bench/plot.py draws bench/RESULTS.md's compare.py numbers as an SVG, and the committed
bench/compare.svg (shown in RESULTS.md and the README) is what it draws from them now."""

import subprocess
import sys
import xml.dom.minidom

from conftest import REPO_ROOT


def test_the_chart_is_drawn_and_committed_up_to_date(tmp_path):
    out = tmp_path / "chart.svg"
    r = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "plot.py"),
                        str(REPO_ROOT / "bench" / "RESULTS.md"), str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = xml.dom.minidom.parse(str(out))
    rects = [e for e in doc.getElementsByTagName("rect") if e.getAttribute("class")]
    workloads = {e.getAttribute("data-workload") for e in rects}
    assert {"hello", "calls1000", "parallel8"} <= workloads, workloads
    assert len(rects) == 2 * len(workloads)
    assert {e.getAttribute("class") for e in rects} == {"seed", "ptc"}
    assert [e for e in doc.getElementsByTagName("line") if e.getAttribute("class") == "floor"]
    committed = (REPO_ROOT / "bench" / "compare.svg").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == committed, \
        "bench/compare.svg is stale: run bench/plot.py"
    for doc_path in ("README.md", "bench/RESULTS.md"):
        assert "compare.svg" in (REPO_ROOT / doc_path).read_text(encoding="utf-8"), doc_path
