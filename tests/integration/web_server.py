# SPDX-License-Identifier: MIT
"""Fixture HTTP servers for the web_search / web_extract integration tests.

Stdlib only: http.server.ThreadingHTTPServer on 127.0.0.1, port 0, served by
a daemon thread. Each server has a role:

  site       test pages (HTML, redirects, slow, huge, gzip, charsets, PDF, ...)
  searxng    fake SearXNG   GET  /search?q=..&format=json&pageno=1
  brave      fake Brave     GET  /res/v1/web/search?q=..&count=N  (X-Subscription-Token)
  tavily     fake Tavily    POST /search, POST /extract           (api_key in the body)
  firecrawl  fake Firecrawl POST /v1/search, POST /v1/scrape      (Authorization: Bearer)
  exa        fake Exa       POST /search, POST /contents          (x-api-key)
  http500    every request answers HTTP 500
  nonjson    every request answers 200 with an HTML body

Every server keeps a request log (method, path, query, headers, body) that the
tests assert on: what a provider received, and that a blocked URL was never
requested. A provider asked with a query containing "echo-key" puts the
credential it received into the first result's description ("echoed KEY"; the
redaction test).

The pytest fixture `web` (module scope) starts all of them once per test
module; `web_log_reset` (autouse in the importing module, function scope)
clears the logs before each test.
"""

import gzip
import json
import pathlib
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

# --- page bodies ---------------------------------------------------------------

# A page Debian's gumbo 0.10.1 asserts on (found by fuzz-html; its corpus keeps it).
GUMBO_ABORT_PAGE = (pathlib.Path(__file__).resolve().parents[1] / "fuzz" / "corpus" / "html" /
                    "b726e86008af638d07066225f8a9a8098fa6fbed").read_bytes()

# A 1x1 transparent PNG.
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082")

DATA_IMAGE_B64 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQAB"
                  "DQottAAAAABJRU5ErkJggg==")

MAIN_PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Fixture Page Title</title>
<style>.style-rule-marker {{ color: red; }}</style>
<script>var scriptMarker = "SCRIPT_TEXT_MARKER"; document.title = "x";</script>
</head>
<body>
<nav><a href="/nav-link">NAV_TEXT_MARKER</a> <a href="/other">Other nav</a></nav>
<h1>Main Heading</h1>
<p>First paragraph with <a href="/relative/link">a relative link</a> and
<a href="https://example.org/abs">an absolute link</a>.</p>
<h2>Lists Section</h2>
<ul>
  <li>Apple</li>
  <li>Banana
    <ul><li>Nested Cherry</li></ul>
  </li>
</ul>
<ol>
  <li>First step</li>
  <li>Second step</li>
</ol>
<p><img src="/img/logo.png" alt="Logo alt"></p>
<p><img src="data:image/png;base64,{DATA_IMAGE_B64}" alt="inline pixel"></p>
<p>Call <code>inline_code()</code> here.</p>
<pre><code class="language-python">def hello():
    return 42
</code></pre>
<table>
  <tr><th>Name</th><th>Qty</th></tr>
  <tr><td>Widget</td><td>7</td></tr>
</table>
<blockquote><p>Quoted wisdom</p></blockquote>
<footer>FOOTER_TEXT_MARKER</footer>
<script>console.log("SCRIPT_TEXT_MARKER_2");</script>
</body>
</html>
"""

LATIN1_PAGE = ("<html><head><title>Caf\u00e9 Latin</title></head><body>"
               "<p>Le caf\u00e9 co\u00fbte 3 \u00a3. \u00dcn\u00efc\u00f6d\u00e9 text.</p>"
               "</body></html>")

CP1252_PAGE = ("<html><head><meta charset=\"windows-1252\"><title>Windows Page</title></head>"
               "<body><p>Price: 5 \u20acuro, \u201cquoted\u201d, caf\u00e9.</p></body></html>")

GZIP_PAGE = ("<html><head><title>Gzip Page</title></head><body>"
             "<p>Gzipped content marker, decoded.</p></body></html>")

PLAIN_TEXT = "Plain line one\nPlain line two <not a tag>\n  indented third line"

JSON_DOC = {"kind": "fixture", "items": [1, 2, 3], "nested": {"ok": True}}

PDF_TEXT = "Hello PDF World"

HUGE_BYTES = 30 * 1024 * 1024

# The made-up value of a secret env var given to ptc; /secret-page shows it.
PAGE_SECRET = "fixture-page-secret-4c7d9e1a0b"


def make_pdf(text):
    """A minimal valid one-page PDF showing @text (Helvetica), xref offsets computed."""
    stream = f"BT /F1 24 Tf 72 700 Td ({text}) Tj ET".encode("latin-1")
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream +
        b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n".encode()
    out += b"0000000000 65535 f \n"
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
            .encode())
    return bytes(out)


PDF_DOC = make_pdf(PDF_TEXT)

# Text pages for the char_limit tests: /text/<n> is n characters, no trailing
# whitespace; /utext/<n> is n two-byte characters.


def text_of_length(n):
    """@n characters of numbered lines (no two lines alike), ending in a non-space."""
    out, i = [], 0
    while sum(map(len, out)) < n:
        out.append(f"line {i:05d} abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123\n")
        i += 1
    s = "".join(out)[:n]
    return s[:-1] + "Z" if s[-1:].isspace() else s


# --- request handler --------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    server_version = "ptc-fixture/1"
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):  # keep pytest output clean
        pass

    # -- plumbing

    def _record(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n > 0 else b""
        u = urllib.parse.urlsplit(self.path)
        entry = {
            "method": self.command,
            "path": u.path,
            "query": urllib.parse.parse_qs(u.query, keep_blank_values=True),
            "raw_path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        }
        self.server.log_request_entry(entry)
        return entry

    def _send(self, status, body=b"", ctype="text/html; charset=utf-8", headers=None):
        if isinstance(body, str):
            body = body.encode("utf-8")
        try:
            self.send_response(status)
            if ctype:
                self.send_header("Content-Type", ctype)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, obj, status=200):
        self._send(status, json.dumps(obj), "application/json")

    def do_GET(self):
        self._dispatch(self._record())

    def do_POST(self):
        self._dispatch(self._record())

    def do_HEAD(self):
        self._dispatch(self._record())

    def _dispatch(self, req):
        role = self.server.role
        if role == "site":
            return self._site(req)
        if role == "http500":
            return self._send(500, "<html><body>Internal Server Error</body></html>")
        if role == "nonjson":
            return self._send(200, "<html><body>this is not JSON</body></html>")
        return getattr(self, "_prov_" + role)(req)

    # -- the test site

    def _site(self, req):
        p = req["path"]
        base = self.server.base_url
        if p in ("/page", "/") or p.startswith(("/page/", "/ssrf", "/n/", "/sg")):
            return self._send(200, MAIN_PAGE)
        if p == "/r1":
            return self._send(302, "", headers={"Location": "/r2"})
        if p == "/r2":
            return self._send(301, "", headers={"Location": base + "/page"})
        if p == "/loop-a":
            return self._send(302, "", headers={"Location": "/loop-b"})
        if p == "/loop-b":
            return self._send(302, "", headers={"Location": "/loop-a"})
        if p == "/to-idn":
            # UTF-8 in the header, as servers send it (http.server writes latin-1).
            loc = f"http://①②⑦.0.0.1:{self.server.port}/page"
            return self._send(302, "", headers={"Location": loc.encode().decode("latin-1")})
        if p == "/to-metadata":
            return self._send(302, "", headers={
                "Location": "http://169.254.169.254/latest/meta-data"})
        if p == "/slow":
            secs = float(req["query"].get("s", ["5"])[0])
            time.sleep(secs)
            return self._send(200, "<html><title>Slow</title><body><p>slow done</p></body></html>")
        if p.startswith("/sleep1/"):
            time.sleep(1.0)
            return self._send(200, f"<html><title>Sleepy {p[8:]}</title>"
                                   f"<body><p>slept {p[8:]}</p></body></html>")
        if p.startswith("/meet/"):
            # A barrier: /meet/TAG/N/I answers once N requests for /meet/TAG/N/ are in at
            # the same time (bounded wait, 20 s), with "met I", else "alone I". It proves
            # fetches run at once without timing them.
            tag, n, i = p[len("/meet/"):].split("/", 2)
            met = self.server.meet(f"{tag}/{n}", int(n))
            return self._send(200, f"<html><title>Meet {i}</title>"
                                   f"<body><p>{'met' if met else 'alone'} {i}</p></body></html>")
        if p == "/huge":
            return self._huge()
        if p == "/gzip":
            return self._send(200, gzip.compress(GZIP_PAGE.encode()),
                              headers={"Content-Encoding": "gzip"})
        if p == "/latin1":
            return self._send(200, LATIN1_PAGE.encode("iso-8859-1"),
                              "text/html; charset=ISO-8859-1")
        if p == "/cp1252":
            return self._send(200, CP1252_PAGE.encode("windows-1252"), "text/html")
        if p == "/gumbo-abort":
            return self._send(200, GUMBO_ABORT_PAGE, "text/html; charset=utf-8")
        if p == "/plain":
            return self._send(200, PLAIN_TEXT, "text/plain; charset=utf-8")
        if p == "/data.json":
            return self._send(200, json.dumps(JSON_DOC), "application/json")
        if p == "/doc.pdf":
            return self._send(200, PDF_DOC, "application/pdf")
        if p == "/img.png" or p == "/img/logo.png":
            return self._send(200, PNG_1X1, "image/png")
        if p.startswith("/text/"):
            return self._send(200, text_of_length(int(p[6:])), "text/plain; charset=utf-8")
        if p.startswith("/utext/"):
            return self._send(200, "\u00e9" * int(p[7:]), "text/plain; charset=utf-8")
        if p == "/secret-page":
            return self._send(200, f"<html><title>Secret page</title><body><p>The value is "
                                   f"{PAGE_SECRET} here.</p></body></html>")
        if p == "/error500":
            return self._send(500, "<html><title>Oops</title><body><p>boom</p></body></html>")
        return self._send(404, "<html><title>Not Found</title><body><p>nothing</p></body></html>")

    def _huge(self):
        chunk = ("<p>" + "huge page filler text " * 40 + "</p>\n").encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            head = b"<html><head><title>Huge</title></head><body>\n"
            self.wfile.write(head)
            sent = len(head)
            while sent < HUGE_BYTES:
                part = chunk[:HUGE_BYTES - sent]
                self.wfile.write(part)
                sent += len(part)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    # -- fake search / extraction providers

    @staticmethod
    def _results(name, q, n, start=1):
        return [{"title": f"{name} result {i} for {q}",
                 "url": f"https://{name.lower()}.example/{i}",
                 "description": f"{name} description {i}"} for i in range(start, start + n)]

    def _body_json(self, req):
        try:
            return json.loads(req["body"].decode("utf-8"))
        except ValueError:
            return {}

    def _prov_searxng(self, req):
        if req["method"] != "GET" or req["path"] != "/search":
            return self._send(404, "no such route")
        q = req["query"].get("q", [""])[0]
        # 120 results listed in ASCENDING score order: ptc must sort them.
        res = [{"title": f"SearXNG result {k} for {q}", "url": f"https://searxng.example/{k}",
                "content": f"SearXNG content {k}", "score": k / 10.0}
               for k in range(1, 121)]
        return self._json({"query": q, "results": res})

    def _prov_brave(self, req):
        if req["method"] != "GET" or req["path"] != "/res/v1/web/search":
            return self._send(404, "no such route")
        if not req["headers"].get("x-subscription-token"):
            return self._json({"error": "missing token"}, 401)
        q = req["query"].get("q", [""])[0]
        n = int(req["query"].get("count", ["10"])[0])
        res = self._results("Brave", q, n)
        if "echo-key" in q:
            res[0]["description"] = "echoed " + req["headers"]["x-subscription-token"]
        return self._json({"type": "search", "web": {"results": res}})

    def _prov_tavily(self, req):
        b = self._body_json(req)
        if req["method"] != "POST" or not b.get("api_key"):
            return self._json({"detail": "unauthorized"}, 401)
        if req["path"] == "/search":
            res = [{"title": r["title"], "url": r["url"], "content": r["description"],
                    "score": 0.5}
                   for r in self._results("Tavily", b.get("query"), int(b.get("max_results", 5)))]
            if "echo-key" in str(b.get("query")):
                res[0]["content"] = "echoed " + b["api_key"]
            return self._json({"query": b.get("query"), "results": res})
        if req["path"] == "/extract":
            urls = b.get("urls") or []
            if isinstance(urls, str):
                urls = [urls]
            return self._json({"results": [{"url": u, "raw_content": f"Tavily raw content of {u}"}
                                           for u in urls], "failed_results": []})
        return self._send(404, "no such route")

    def _prov_firecrawl(self, req):
        b = self._body_json(req)
        if req["method"] != "POST":
            return self._send(404, "no such route")
        if req["path"] == "/v1/search":
            res = self._results("Firecrawl", b.get("query"), int(b.get("limit", 5)))
            if "echo-key" in str(b.get("query")):
                auth = req["headers"].get("authorization", "")
                res[0]["description"] = "echoed " + auth.split(" ", 1)[-1]
            return self._json({"success": True, "data": res})
        if req["path"] == "/v1/scrape":
            u = b.get("url")
            return self._json({"success": True, "data": {
                "markdown": f"# Firecrawl Heading\n\nFirecrawl markdown of {u}",
                "metadata": {"title": "Firecrawl Title", "sourceURL": u}}})
        return self._send(404, "no such route")

    def _prov_exa(self, req):
        b = self._body_json(req)
        if req["method"] != "POST" or not req["headers"].get("x-api-key"):
            return self._json({"error": "unauthorized"}, 401)
        if req["path"] == "/search":
            n = int(b.get("numResults", 5))
            res = [{"title": f"Exa result {i} for {b.get('query')}",
                    "url": f"https://exa.example/{i}",
                    "highlights": [f"Exa highlight {i}a", f"Exa highlight {i}b"]}
                   for i in range(1, n + 1)]
            if "echo-key" in str(b.get("query")):
                res[0]["highlights"] = ["echoed " + req["headers"]["x-api-key"]]
            return self._json({"results": res})
        if req["path"] == "/contents":
            urls = b.get("urls") or b.get("ids") or []
            return self._json({"results": [{"url": u, "title": "Exa Title",
                                            "text": f"Exa text of {u}"} for u in urls]})
        return self._send(404, "no such route")


# --- server -------------------------------------------------------------------------


class FixtureServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, role):
        super().__init__(("127.0.0.1", 0), Handler)
        self.role = role
        self.port = self.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._log = []
        self._meet, self._arrived = threading.Condition(), {}
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"fixture-{role}", daemon=True)

    def handle_error(self, request, client_address):
        pass  # a client that hung up mid-response is expected here

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.shutdown()
        self.server_close()
        self._thread.join(5)

    def url(self, path):
        return self.base_url + path

    def meet(self, key, n, timeout=20.0):
        """Wait until @n requests have called meet(@key); False when @timeout passed first."""
        with self._meet:
            self._arrived[key] = self._arrived.get(key, 0) + 1
            self._meet.notify_all()
            return self._meet.wait_for(lambda: self._arrived[key] >= n, timeout)

    def log_request_entry(self, entry):
        with self._lock:
            self._log.append(entry)

    def reset(self):
        with self._lock:
            self._log.clear()

    def requests(self, path_prefix=None):
        """The logged requests (oldest first), those whose path starts with @path_prefix."""
        with self._lock:
            log = list(self._log)
        if path_prefix is None:
            return log
        return [e for e in log if e["path"].startswith(path_prefix)]

    def paths(self):
        return [e["path"] for e in self.requests()]


ROLES = ("site", "searxng", "brave", "tavily", "firecrawl", "exa", "http500", "nonjson")


class Web:
    """All fixture servers of one test module, by role: web.site, web.brave, ..."""

    def __init__(self):
        self.servers = {}
        try:
            for role in ROLES:
                self.servers[role] = FixtureServer(role).start()
        except Exception:
            self.stop()
            raise

    def __getattr__(self, name):
        try:
            return self.__dict__["servers"][name]
        except KeyError:
            raise AttributeError(name) from None

    def reset(self):
        for s in self.servers.values():
            s.reset()

    def stop(self):
        for s in self.servers.values():
            s.stop()


@pytest.fixture(scope="module")
def web():
    w = Web()
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture(autouse=True)
def web_log_reset(request):
    """Clear the request logs before each test of a module that uses `web`."""
    if "web" in request.fixturenames:
        request.getfixturevalue("web").reset()
    yield
