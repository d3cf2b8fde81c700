# SPDX-License-Identifier: MIT
"""web_search (docs/seed.md 2.6) through the real binary, against fake providers on
loopback (web_server.py): SearXNG, Brave, Tavily, Firecrawl and Exa. What each provider
receives (query encoding, headers, JSON body, credentials), the result shape, limit
clamping, provider failures, provider auto-selection, when the tool is enabled, and that
the script never sees the keys while a key echoed back by a provider is redacted.
"""

import json
import textwrap

import pytest

from conftest import expect, expect_usage_error
from web_server import web, web_log_reset  # noqa: F401  (pytest fixtures)

# The schema lists a tool by its signature line (see test_schema_stubs.py).
SIG_SEARCH = "web_search(query"
SIG_EXTRACT = "web_extract(urls"

QUERY = "ptc tests & more: caf\u00e9/?#+=%"

KEYS = {
    "brave": ("BRAVE_API_KEY", "brave-fixture-key-0123456789ab"),
    "tavily": ("TAVILY_API_KEY", "tavily-fixture-key-0123456789ab"),
    "firecrawl": ("FIRECRAWL_API_KEY", "firecrawl-fixture-key-0123456789"),
    "exa": ("EXA_API_KEY", "exa-fixture-key-0123456789abcd"),
}
# (No vendor prefixes such as "tvly-" or "fc-": the redaction test is about the value of
# a secret variable, which becomes "***", not about the prefix patterns.)

NAMES = {"searxng": "SearXNG", "brave": "Brave", "tavily": "Tavily", "firecrawl": "Firecrawl",
         "exa": "Exa"}


def provider_config(ptc, web, provider=None, urls_from=None, extra="", name="search.yaml"):
    """A config selecting @provider (None: leave web.search_provider unset) with every
    provider's base URL pointing at its fake (or at the server @urls_from, e.g. the
    HTTP-500 one)."""
    text = "web:\n  timeout: 5\n"
    if provider:
        text += f"  search_provider: {provider}\n"
    for p in NAMES:
        srv = urls_from or getattr(web, p)
        text += f"  {p}_url: {srv.base_url}\n"
    return ptc.write_config(text + textwrap.dedent(extra), name=name)


def key_env(*providers):
    return {KEYS[p][0]: KEYS[p][1] for p in providers if p in KEYS}


def run_search(ptc, cfg, query=QUERY, limit=None, env=None, limit_expr=None, tools="web_search"):
    """`ptc run` a script printing web_search(query[, limit]) as JSON.
    Returns (the decoded result, the ptc Result)."""
    arg = limit_expr if limit_expr is not None else (repr(limit) if limit is not None else None)
    call = f"web_search({query!r}" + (f", limit={arg})" if arg is not None else ")")
    code = ("import json\nfrom hermes_tools import web_search\n"
            f"r = {call}\nprint(json.dumps(r, ensure_ascii=False))\n")
    opts = ["--tools", tools] if tools else []
    r = ptc.run(code, "--config", cfg, *opts, env=env)
    expect(r, 0, "success")
    return r.output_json(), r


def web_list(d):
    assert d.get("success") is True, d
    items = d["data"]["web"]
    assert isinstance(items, list), d
    for i, it in enumerate(items, 1):
        assert set(it) >= {"title", "url", "description", "position"}, it
        assert it["position"] == i, items
    return items


# --- the five providers ---------------------------------------------------------------


def test_searxng_request_and_sorting(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "searxng"), limit=3)
    items = web_list(d)
    assert [it["title"] for it in items] == [f"SearXNG result {k} for {QUERY}"
                                             for k in (120, 119, 118)], items
    assert items[0] == {"title": f"SearXNG result 120 for {QUERY}",
                        "url": "https://searxng.example/120",
                        "description": "SearXNG content 120", "position": 1}, items[0]
    reqs = web.searxng.requests()
    assert len(reqs) == 1, web.searxng.paths()
    q = reqs[0]
    assert q["method"] == "GET" and q["path"] == "/search", q
    assert q["query"].get("q") == [QUERY], q
    assert q["query"].get("format") == ["json"] and q["query"].get("pageno") == ["1"], q


def test_searxng_url_from_env(ptc, web):
    cfg = ptc.write_config("web:\n  timeout: 5\n")
    d, _ = run_search(ptc, cfg, query="env url", limit=2,
                      env={"SEARXNG_URL": web.searxng.base_url})
    assert [it["url"] for it in web_list(d)] == ["https://searxng.example/120",
                                                 "https://searxng.example/119"], d
    assert web.searxng.paths() == ["/search"]


def test_brave_request(ptc, web):
    d, r = run_search(ptc, provider_config(ptc, web, "brave"), limit=3, env=key_env("brave"))
    items = web_list(d)
    assert items == [{"title": f"Brave result {i} for {QUERY}",
                      "url": f"https://brave.example/{i}",
                      "description": f"Brave description {i}", "position": i}
                     for i in (1, 2, 3)], items
    (q,) = web.brave.requests()
    assert q["method"] == "GET" and q["path"] == "/res/v1/web/search", q
    assert q["query"]["q"] == [QUERY] and q["query"]["count"] == ["3"], q
    assert q["headers"].get("x-subscription-token") == KEYS["brave"][1], q["headers"]


def test_brave_count_capped_at_20(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "brave"), limit=50, env=key_env("brave"))
    assert len(web_list(d)) == 20, d
    (q,) = web.brave.requests()
    assert q["query"]["count"] == ["20"], q


def test_brave_search_api_key_alternative(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "brave"), limit=1,
                      env={"BRAVE_SEARCH_API_KEY": "brave-alt-key-0123456789"})
    assert len(web_list(d)) == 1, d
    (q,) = web.brave.requests()
    assert q["headers"].get("x-subscription-token") == "brave-alt-key-0123456789"


def test_tavily_request(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "tavily"), limit=3, env=key_env("tavily"))
    items = web_list(d)
    assert items == [{"title": f"Tavily result {i} for {QUERY}",
                      "url": f"https://tavily.example/{i}",
                      "description": f"Tavily description {i}", "position": i}
                     for i in (1, 2, 3)], items
    (q,) = web.tavily.requests()
    assert q["method"] == "POST" and q["path"] == "/search", q
    assert q["headers"].get("content-type", "").startswith("application/json"), q["headers"]
    body = json.loads(q["body"])
    assert body["api_key"] == KEYS["tavily"][1], body
    assert body["query"] == QUERY and body["max_results"] == 3, body


def test_firecrawl_request(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "firecrawl"), limit=3,
                      env=key_env("firecrawl"))
    items = web_list(d)
    assert [(it["title"], it["url"], it["description"]) for it in items] == \
        [(f"Firecrawl result {i} for {QUERY}", f"https://firecrawl.example/{i}",
          f"Firecrawl description {i}") for i in (1, 2, 3)], items
    (q,) = web.firecrawl.requests()
    assert q["method"] == "POST" and q["path"] == "/v1/search", q
    assert q["headers"].get("authorization") == f"Bearer {KEYS['firecrawl'][1]}", q["headers"]
    body = json.loads(q["body"])
    assert body["query"] == QUERY and body["limit"] == 3, body


def test_firecrawl_api_url_keyless(ptc, web):
    cfg = ptc.write_config("web:\n  timeout: 5\n")
    d, _ = run_search(ptc, cfg, query="self hosted", limit=2,
                      env={"FIRECRAWL_API_URL": web.firecrawl.base_url})
    assert [it["url"] for it in web_list(d)] == ["https://firecrawl.example/1",
                                                 "https://firecrawl.example/2"], d
    (q,) = web.firecrawl.requests()
    assert q["path"] == "/v1/search", q
    assert "authorization" not in q["headers"], q["headers"]


def test_exa_request(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "exa"), limit=2, env=key_env("exa"))
    items = web_list(d)
    assert [(it["title"], it["url"]) for it in items] == \
        [(f"Exa result {i} for {QUERY}", f"https://exa.example/{i}") for i in (1, 2)], items
    for i, it in enumerate(items, 1):
        assert f"Exa highlight {i}a" in it["description"], it
        assert f"Exa highlight {i}b" in it["description"], it
    (q,) = web.exa.requests()
    assert q["method"] == "POST" and q["path"] == "/search", q
    assert q["headers"].get("x-api-key") == KEYS["exa"][1], q["headers"]
    body = json.loads(q["body"])
    assert body["query"] == QUERY and body["numResults"] == 2, body
    assert body["contents"]["highlights"] is True, body


# --- limit ------------------------------------------------------------------------------


@pytest.mark.parametrize("limit_expr,n", [("0", 1), ("500", 100), ("'abc'", 5),
                                          (None, 5), ("7", 7)])
def test_limit_clamped(ptc, web, limit_expr, n):
    d, _ = run_search(ptc, provider_config(ptc, web, "searxng"), limit_expr=limit_expr)
    items = web_list(d)
    assert len(items) == n, (limit_expr, len(items))
    assert items[0]["url"] == "https://searxng.example/120", items[0]


# --- provider failures ------------------------------------------------------------------


@pytest.mark.parametrize("provider", list(NAMES))
def test_provider_http_500(ptc, web, provider):
    d, _ = run_search(ptc, provider_config(ptc, web, provider, urls_from=web.http500),
                      env=key_env(provider))
    assert d == {"success": False, "error": f"{NAMES[provider]} returned HTTP 500"}, d
    assert len(web.http500.requests()) == 1, web.http500.paths()


@pytest.mark.parametrize("provider", list(NAMES))
def test_provider_non_json(ptc, web, provider):
    d, _ = run_search(ptc, provider_config(ptc, web, provider, urls_from=web.nonjson),
                      env=key_env(provider))
    assert d.get("success") is False, d
    assert isinstance(d.get("error"), str) and NAMES[provider] in d["error"], d
    assert "data" not in d, d


def test_provider_unreachable(ptc, web):
    # A port nobody listens on: a failure naming the provider, promptly.
    cfg = ptc.write_config("web:\n  timeout: 3\n  search_provider: searxng\n"
                           "  searxng_url: http://127.0.0.1:9\n")
    d, r = run_search(ptc, cfg)
    assert d.get("success") is False and "SearXNG" in d.get("error", ""), d
    # "Promptly": the refusal itself, not the 3 s timeout, ended it (no stopwatch).
    assert "connection refused" in d["error"] and "timed out" not in d["error"], d


# --- auto-selection ------------------------------------------------------------------------

ORDER = ["firecrawl", "tavily", "exa", "searxng", "brave"]


@pytest.mark.parametrize("i", range(len(ORDER)), ids=ORDER)
def test_auto_selection_order(ptc, web, i):
    present = ORDER[i:]
    env = key_env(*present)
    if "searxng" in present:
        env["SEARXNG_URL"] = web.searxng.base_url
    # Base URLs for every provider, searxng's only from the environment.
    text = "web:\n  timeout: 5\n" + "".join(f"  {p}_url: {getattr(web, p).base_url}\n"
                                            for p in NAMES if p != "searxng")
    d, _ = run_search(ptc, ptc.write_config(text), query="auto", limit=1, env=env)
    items = web_list(d)
    assert items[0]["title"].startswith(NAMES[ORDER[i]] + " result"), (ORDER[i], items)
    for p in NAMES:
        n = len(getattr(web, p).requests())
        assert n == (1 if p == ORDER[i] else 0), (p, n)


def test_configured_provider_beats_auto_selection(ptc, web):
    d, _ = run_search(ptc, provider_config(ptc, web, "brave"), limit=1,
                      env=key_env("brave", "firecrawl", "tavily", "exa"))
    assert web_list(d)[0]["title"].startswith("Brave result"), d
    assert web.firecrawl.requests() == [] and web.tavily.requests() == []


# --- which tools are enabled -------------------------------------------------------------


def schema_desc(ptc, cfg, *args, env=None):
    r = ptc.run_ptc(["schema", "--config", cfg, *args], env=env)
    assert r.rc == 0 and r.data is not None, r
    return r.data["description"]


def test_schema_without_provider_has_no_web_search(ptc, web):
    desc = schema_desc(ptc, ptc.write_config("web:\n  timeout: 5\n"))
    assert SIG_EXTRACT in desc, desc
    assert SIG_SEARCH not in desc, desc


def test_schema_with_provider_has_web_search(ptc, web):
    desc = schema_desc(ptc, provider_config(ptc, web, "searxng"))
    assert SIG_SEARCH in desc and SIG_EXTRACT in desc, desc


def test_schema_with_provider_from_env_has_web_search(ptc, web):
    desc = schema_desc(ptc, ptc.write_config("web:\n  timeout: 5\n"),
                       env={"TAVILY_API_KEY": KEYS["tavily"][1]})
    assert SIG_SEARCH in desc, desc


def test_schema_tools_web_search_without_provider_exits_2(ptc, web):
    r = ptc.run_ptc(["schema", "--tools", "web_search", "--config",
                     ptc.write_config("web:\n  timeout: 5\n")])
    expect_usage_error(r, "web.search_provider")


def test_run_tools_web_search_brave_without_key_exits_2(ptc, web):
    cfg = provider_config(ptc, web, "brave")
    r = ptc.run("print(1)", "--config", cfg, "--tools", "web_search")
    expect_usage_error(r, "BRAVE_API_KEY")
    assert web.brave.requests() == []


def test_default_tools_include_web_search_with_provider(ptc, web):
    r = ptc.run("""
        import json
        import hermes_tools
        from hermes_tools import web_search, web_extract
        print(json.dumps(web_search('default tools', limit=1)))
        """, "--config", provider_config(ptc, web, "searxng"))
    expect(r, 0, "success")
    assert web_list(r.output_json())[0]["url"] == "https://searxng.example/120", r
    assert r.data["tool_calls_made"] == 1, r


def test_default_tools_without_provider_no_web_search(ptc, web):
    r = ptc.run("""
        import hermes_tools
        print(hasattr(hermes_tools, 'web_search'), hasattr(hermes_tools, 'web_extract'))
        """, "--config", ptc.write_config("web:\n  timeout: 5\n"))
    expect(r, 0, "success")
    assert r.output == "False True\n", r


# --- keys: never visible to the script, redacted when echoed --------------------------------


def test_script_environment_lacks_provider_keys(ptc, web):
    env = key_env("brave", "tavily", "firecrawl", "exa")
    env.update({"BRAVE_SEARCH_API_KEY": "brave-alt-key-0123456789",
                "SEARXNG_URL": web.searxng.base_url})
    r = ptc.run("""
        import json, os
        from hermes_tools import web_search
        names = ('BRAVE_API_KEY', 'BRAVE_SEARCH_API_KEY', 'TAVILY_API_KEY',
                 'FIRECRAWL_API_KEY', 'EXA_API_KEY')
        print(sorted(n for n in names if n in os.environ))
        vals = [v for v in os.environ.values() if 'fixture-key' in v or 'alt-key' in v]
        print(len(vals))
        r = web_search('keys kept by ptc', limit=1)
        print(r['success'], r['data']['web'][0]['title'].split()[0])
        """, "--config", provider_config(ptc, web, "exa"), "--tools", "web_search", env=env)
    expect(r, 0, "success")
    assert r.output == "[]\n0\nTrue Exa\n", r


@pytest.mark.parametrize("provider", ["brave", "tavily", "firecrawl", "exa"])
def test_key_echoed_by_provider_is_redacted(ptc, web, provider):
    key = KEYS[provider][1]
    d, r = run_search(ptc, provider_config(ptc, web, provider), query="echo-key please",
                      limit=2, env=key_env(provider))
    items = web_list(d)
    assert "***" in items[0]["description"], items[0]
    assert key not in items[0]["description"], items[0]
    assert key.encode() not in r.stdout, r
    # ...and the provider did receive it.
    (q,) = getattr(web, provider).requests()
    assert key in json.dumps(q["headers"]) + q["body"].decode(), q


def test_ptc_tool_web_search(ptc, web):
    cfg = provider_config(ptc, web, "tavily")
    r = ptc.run_ptc(["tool", "--config", cfg, "web_search",
                     json.dumps({"query": "via ptc tool", "limit": 2})], env=key_env("tavily"))
    assert r.rc == 0 and r.data is not None, r
    assert [it["url"] for it in web_list(r.data)] == ["https://tavily.example/1",
                                                      "https://tavily.example/2"], r
    assert json.loads(web.tavily.requests()[0]["body"])["query"] == "via ptc tool"


# --- config -------------------------------------------------------------------------------


@pytest.mark.parametrize("yaml_text,words", [
    ("web:\n  search_provider: bing\n", ["web.search_provider", "bing"]),
    ("web:\n  searxng_url: ftp://x\n", ["web.searxng_url"]),
    ("web:\n  tavily_url: not a url\n", ["web.tavily_url"]),
    ("web:\n  exa_url: 42\n", ["web.exa_url"]),
    ("web:\n  timeout: 0\n", ["web.timeout"]),
])
def test_bad_search_config_exits_2(ptc, yaml_text, words):
    cfg = ptc.write_config(yaml_text)
    expect_usage_error(ptc.run_ptc(["schema", "--config", cfg]), *words)
