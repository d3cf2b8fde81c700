# SPDX-License-Identifier: MIT
"""The web module through the library: a host process maps libcurl and gumbo only once a
web tool runs, then loads ptc-web.so from beside the libptc.so it uses, once, also when
eight threads make the first web calls at the same moment. Each case runs in a fresh
interpreter (this one may have loaded the module already)."""

import json
import os
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pyhost import ASAN_PRELOAD, HARD, REPO_ROOT, ptc  # noqa: F401

PAGE = b"<html><head><title>Lazy</title></head><body><p>loaded on demand</p></body></html>"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


@pytest.fixture
def page_url():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/"
    finally:
        srv.shutdown()
        srv.server_close()


HOST = textwrap.dedent("""
    import json, sys, threading
    import ptc

    def mapped():
        names = {l.split()[-1] for l in open("/proc/self/maps") if l.count("/")}
        lib = next(n for n in names if "/libptc.so" in n)
        web = sorted(n for n in names if "ptc-web.so" in n or "libcurl" in n or "libgumbo" in n)
        return lib, web

    with ptc.Engine(no_config_file=True) as e:
        e.set("web.allow_private_urls", "true")
        e.start()
        r = e.execute("print(6 * 7)")
        assert r.ok and r.output == "42\\n", r
        lib, before = mapped()
        results = [None] * 8
        go = threading.Barrier(8)

        def call(i):
            go.wait()
            results[i] = e.call_tool("web_extract", urls=[sys.argv[1]])

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _, after = mapped()
    print(json.dumps({"lib": lib, "before": before, "after": after, "results": results}))
""")


def test_the_web_module_is_loaded_on_the_first_web_call_once(page_url):
    lib = os.environ.get("PTC_LIBRARY") or str(REPO_ROOT / "build" / "libptc.so.0")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "python"), "PTC_LIBRARY": lib}
    if ASAN_PRELOAD:
        # An ASan library loads only after the sanitizer runtime (pyhost.py).
        env["LD_PRELOAD"] = ASAN_PRELOAD
    p = subprocess.run([sys.executable, "-c", HOST, page_url], capture_output=True, text=True,
                       env=env, timeout=4 * HARD)
    assert p.returncode == 0, p
    out = json.loads(p.stdout)
    assert out["before"] == [], out["before"]
    module = str(Path(out["lib"]).parent / "ptc-web.so")
    assert module in out["after"], out["after"]
    assert len([n for n in out["after"] if n.endswith("ptc-web.so")]) == 1, out["after"]
    assert any("libcurl" in n for n in out["after"]), out["after"]
    for r in out["results"]:
        entry = r["results"][0]
        assert entry["error"] is None and entry["title"] == "Lazy", r
        assert entry["content"] == "loaded on demand", r
