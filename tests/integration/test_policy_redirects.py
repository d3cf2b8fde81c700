# SPDX-License-Identifier: MIT
"""Every redirect hop of web_extract is judged by the policy's host rules before it is
fetched (docs/policy.md, "Hosts"; docs/security.md 4; DESIGN §15), through the real binary,
as a script's call and as `ptc tool web_extract`, against real HTTP servers on loopback.

Three hosts are simulated with two servers: 127.0.0.1 and `localhost` reach the server on
127.0.0.1 (the "allowed" hosts), 127.0.0.2 reaches the other one (the one the rules deny or
ask about). A denied hop's server must never see a request, and the page must never come
back: an allowed host's redirect to a denied one used to return the denied page."""

import json
import textwrap
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import expect
import pty_util

SECRET_MARKER = "DENIED_HOST_PAGE_MARKER"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body="", headers=None):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        self.server.log(u.path)
        if u.path == "/to":  # a redirect to wherever ?u= says
            return self._send(302, "", {"Location": q["u"][0]})
        if u.path == "/slow":
            time.sleep(float(q["s"][0]))
            return self._send(200, "<html><body>slow</body></html>")
        if u.path == "/loop":
            return self._send(302, "", {"Location": "/loop"})
        if u.path == "/pingpong":  # a loop between the two names of this server
            other = "127.0.0.1" if self.headers["Host"].startswith("localhost") else "localhost"
            return self._send(302, "", {"Location": f"http://{other}:{self.server.port}/pingpong"})
        if u.path.startswith("/page/"):
            name = u.path[len("/page/"):]
            marker = SECRET_MARKER if self.server.denied else "ALLOWED_PAGE_MARKER"
            return self._send(200, f"<html><head><title>{name}</title></head><body>"
                                   f"<p>{marker} {name}</p></body></html>")
        return self._send(404, "not here")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, addr, denied):
        super().__init__((addr, 0), Handler)
        self.denied = denied
        self.port = self.server_address[1]
        self._lock = threading.Lock()
        self.paths = []
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True).start()

    def log(self, path):
        with self._lock:
            self.paths.append(path)

    def handle_error(self, request, client_address):
        pass


class Sites:
    def __init__(self):
        self.ok = Server("127.0.0.1", denied=False)
        try:
            self.bad = Server("127.0.0.2", denied=True)
        except OSError as e:
            self.ok.shutdown()
            self.ok.server_close()
            pytest.skip(f"cannot listen on 127.0.0.2 here: {e}")

    def a(self, path):  # allowed, by the address
        return f"http://127.0.0.1:{self.ok.port}{path}"

    def b(self, path):  # allowed, by the name
        return f"http://localhost:{self.ok.port}{path}"

    def denied(self, path):
        return f"http://127.0.0.2:{self.bad.port}{path}"

    def reset(self):
        self.ok.paths.clear()
        self.bad.paths.clear()

    def stop(self):
        for s in (self.ok, self.bad):
            s.shutdown()
            s.server_close()


def to(url, via):
    """@via's URL that redirects to @url."""
    return via("/to?u=" + urllib.parse.quote(url, safe=""))


@pytest.fixture(scope="module")
def sites():
    s = Sites()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _reset(sites):
    sites.reset()
    yield


def config(ptc, action="deny", headless="deny", extra_rule=""):
    return ptc.write_config(f"""
        web:
          timeout: 20
          allow_private_urls: true
        policy:
          headless: {headless}
          rules:
{textwrap.indent(textwrap.dedent(extra_rule), " " * 12)}
            - tool: web_extract
              match: ["127.0.0.2"]
              action: {action}
        """)


def extract(ptc, cfg, urls, **kw):
    code = ("import json\nfrom hermes_tools import web_extract\n"
            f"print(json.dumps(web_extract({urls!r})))\n")
    r = ptc.run(code, "--config", str(cfg), "--tools", "web_extract", input=b"", **kw)
    expect(r, 0, "success")
    res = r.output_json()["results"]
    assert len(res) == len(urls), res
    return res


def assert_denied(e, rule=0, host="127.0.0.2"):
    assert e["content"] == "" and e["title"] == "", e
    assert SECRET_MARKER not in json.dumps(e), e
    assert isinstance(e["error"], str), e
    assert e["error"].startswith(f"Denied by policy: redirect to {host} (policy.rules[{rule}])"), e


# ---- deny ---------------------------------------------------------------------------------


def test_allowed_to_denied_is_refused_naming_the_rule(ptc, sites):
    url = to(sites.denied("/page/secret"), sites.a)
    [e] = extract(ptc, config(ptc), [url])
    assert_denied(e)
    assert e["error"] == ("Denied by policy: redirect to 127.0.0.2 (policy.rules[0]). Do not "
                          "retry it; find another way or ask the user."), e
    assert e["url"] == url, e
    assert sites.bad.paths == [], sites.bad.paths  # never even asked for
    assert sites.ok.paths == ["/to"], sites.ok.paths


def test_allowed_allowed_denied_is_refused_and_allowed_chains_still_work(ptc, sites):
    """Two allowed hops, then the denied one; in the same call an allowed chain (through both
    allowed hosts, with a relative Location) is fetched as before."""
    deep = to(to(sites.denied("/page/secret"), sites.b), sites.a)
    fine = to(to("/page/fine", sites.b), sites.a)  # the second Location is relative
    denied, ok = extract(ptc, config(ptc), [deep, fine])
    assert_denied(denied)
    assert ok["error"] is None and "ALLOWED_PAGE_MARKER fine" in ok["content"], ok
    assert ok["url"] == sites.b("/page/fine"), ok
    assert ok["title"] == "fine", ok
    assert sites.bad.paths == [], sites.bad.paths
    assert sorted(sites.ok.paths) == ["/page/fine", "/to", "/to", "/to", "/to"], sites.ok.paths


@pytest.mark.parametrize("location", [
    "//127.0.0.2:{port}/page/secret",        # relative to the scheme
    "http://2130706434:{port}/page/secret",  # 127.0.0.2 as one number
    "http://0x7f.0.0.2:{port}/page/secret",
    "http://[::ffff:127.0.0.2]:{port}/page/secret",
    "http://127.0.0.2.:{port}/page/secret",
], ids=["scheme-relative", "decimal", "hex", "v4-mapped", "trailing-dot"])
def test_a_hop_is_judged_in_the_policys_spelling_of_its_host(ptc, sites, location):
    url = to(location.format(port=sites.bad.port), sites.a)
    [e] = extract(ptc, config(ptc), [url])
    assert_denied(e)
    assert sites.bad.paths == [], sites.bad.paths


def test_the_rules_message_is_the_reason(ptc, sites):
    cfg = ptc.write_config("""
        web: {allow_private_urls: true}
        policy:
          rules:
            - tool: web_extract
              match: ["127.0.0.2"]
              action: deny
              message: "Internal hosts are not for agents."
        """)
    [e] = extract(ptc, cfg, [to(sites.denied("/page/secret"), sites.a)])
    assert e["error"] == ("Denied by policy: redirect to 127.0.0.2 (policy.rules[0]): Internal "
                          "hosts are not for agents."), e
    assert sites.bad.paths == []


def test_ptc_tool_web_extract_judges_each_hop(ptc, sites):
    cfg = config(ptc)
    args = json.dumps({"urls": [to(to(sites.denied("/page/secret"), sites.b), sites.a),
                                sites.a("/page/direct")]})
    r = ptc.run_ptc(["tool", "--config", str(cfg), "web_extract", args], input=b"")
    expect(r, 0)
    denied, direct = r.data["results"]
    assert_denied(denied)
    assert direct["error"] is None and "ALLOWED_PAGE_MARKER direct" in direct["content"]
    assert sites.bad.paths == [], sites.bad.paths


def test_a_remote_targets_web_extract_is_judged_on_the_host(ptc, sites):
    """web_extract of a script on a remote target runs on the host (docs/policy.md): its
    hops too are judged by the host's rules."""
    env = {"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}  # the agent, as test_policy.py
    url = to(to(sites.denied("/page/secret"), sites.b), sites.a)
    code = ("import json\nfrom hermes_tools import web_extract\n"
            f"print(json.dumps(web_extract([{url!r}])))\n")
    r = ptc.run(code, "--config", str(config(ptc)), "--tools", "web_extract", "--backend",
                "exec:sh", env=env, input=b"")
    expect(r, 0, "success")
    [e] = r.output_json()["results"]
    assert_denied(e)
    assert sites.bad.paths == [], sites.bad.paths


def test_a_denied_hop_late_in_the_chain_and_the_cap(ptc, sites):
    """The fifth redirect (the last one allowed) leads to the denied host: refused. A loop
    between two hosts ends at the cap, each of its hops judged (an ask for `localhost`, let
    through by policy.headless: allow, and said so)."""
    hop = sites.denied("/page/secret")
    for via in (sites.a, sites.b, sites.a, sites.b, sites.a):
        hop = to(hop, via)
    cfg = config(ptc, headless="allow", extra_rule="""
        - tool: web_extract
          match: ["localhost"]
          action: ask
        """)
    late, loop = extract(ptc, cfg, [hop, sites.a("/pingpong")])
    assert_denied(late, rule=1)
    assert sites.bad.paths == [], sites.bad.paths
    assert loop["error"] == "too many redirects (more than 5)", loop
    assert sites.ok.paths.count("/pingpong") == 6, sites.ok.paths  # the URL, five redirects
    # Nobody was asked about the hops to localhost (the 1st, 3rd, 5th): the entry says so.
    assert loop["approval"].startswith("redirect to localhost: not asked (policy.rules[0]): "
                                       "policy.headless is allow"), loop
    assert loop["approval"].count("redirect to localhost") == 3, loop


def test_a_hop_on_the_same_host_is_not_asked_again(ptc, sites):
    """Control (passes without hop judging too): the call was asked about `localhost`; its
    redirects within that host (another path, absolute or relative) are not asked again."""
    cfg = config(ptc, headless="allow", action="deny", extra_rule="""
        - tool: web_extract
          match: ["localhost"]
          action: ask
        """)
    url = to(to("/page/same", sites.b), sites.b)
    code = ("import json\nfrom hermes_tools import web_extract\n"
            f"print(json.dumps(web_extract([{url!r}])))\n")
    r = ptc.run(code, "--config", str(cfg), "--tools", "web_extract", input=b"")
    expect(r, 0, "success")
    res = r.output_json()
    [e] = res["results"]
    assert e["error"] is None and "ALLOWED_PAGE_MARKER same" in e["content"], e
    assert "approval" not in e, e
    assert res["approval"].startswith("not asked (policy.rules[0])"), res


def test_the_timeout_holds_over_the_whole_chain(ptc, sites):
    """Control (passes without hop judging too): the chain's hops share web.timeout, and the
    error names it, not what was left of it for the last hop."""
    cfg = ptc.write_config("web: {allow_private_urls: true, timeout: 2}\n")
    [e] = extract(ptc, cfg, [to(to("/slow?s=8", sites.b), sites.a)])
    assert e["error"] == "timed out after 2 s", e
    assert e["content"] == "", e


# ---- ask ----------------------------------------------------------------------------------


def test_an_ask_about_a_hop_with_nobody_to_answer_is_headless(ptc, sites):
    url = to(sites.denied("/page/secret"), sites.a)
    [e] = extract(ptc, config(ptc, action="ask", headless="deny"), [url])
    assert_denied(e)
    assert e["error"] == ("Denied by policy: redirect to 127.0.0.2 (policy.rules[0]) needs "
                          "approval and nobody can answer (policy.headless is deny)."), e
    assert sites.bad.paths == []

    [e] = extract(ptc, config(ptc, action="ask", headless="allow"), [url])
    assert e["error"] is None and SECRET_MARKER in e["content"], e
    assert e["approval"].startswith("redirect to 127.0.0.2: not asked (policy.rules[0]): "
                                    "policy.headless is allow"), e
    assert sites.bad.paths == ["/page/secret"]


class Pty(pty_util.Pty):
    EXPECT_TIMEOUT = 20  # hang guards
    FINISH_TIMEOUT = 60


@pytest.mark.parametrize("answer", ["d", "o"])
def test_an_ask_about_a_hop_is_put_to_the_person(ptc, sites, answer):
    cfg = config(ptc, action="ask", headless="deny")
    url = to(sites.denied("/page/secret"), sites.a)
    script = ptc.path("hop.py")
    script.write_text(textwrap.dedent(f"""
        import json
        from hermes_tools import web_extract
        print(json.dumps(web_extract([{url!r}])))
        """))
    t = Pty(ptc, ["run", "--config", str(cfg), "--tools", "web_extract", str(script)])
    prompt = t.expect("Allow?")
    assert "web_extract" in prompt and "policy.rules[0]" in prompt, prompt
    # The hop, and where it came from: not a URL the script wrote.
    assert f'"urls":["{sites.denied("/page/secret")}"]' in prompt, prompt
    assert f'"redirected_from":"{url}"' in prompt, prompt
    assert sites.bad.paths == []  # asked before it is fetched
    t.send(answer + "\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    [e] = json.loads(res["output"])["results"]
    if answer == "d":
        assert_denied(e)
        assert e["error"] == ("Denied by policy: redirect to 127.0.0.2 (policy.rules[0]): the "
                              "user denied it; do not retry it."), e
        assert sites.bad.paths == []
    else:
        assert e["error"] is None and SECRET_MARKER in e["content"], e
        assert e["url"] == sites.denied("/page/secret"), e
        assert e["approval"] == "redirect to 127.0.0.2: approved (policy.rules[0]) by callback"
        assert sites.bad.paths == ["/page/secret"]
    assert t.seen.count(b"Allow?") == 0, t.seen  # asked once
