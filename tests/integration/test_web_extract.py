# SPDX-License-Identifier: MIT
"""web_extract (docs/seed.md 2.7, docs/contracts.md 9.13) through the real binary,
against real HTTP servers on loopback (web_server.py): HTML to Markdown, redirects, timeouts,
caps, charsets, content types, char_limit, the URL secret guard, the SSRF guard, the
extraction providers, concurrency and cancellation.

The site runs on 127.0.0.1, so every test that expects a page to be fetched configures
web.allow_private_urls: true; the SSRF tests use the default (false).
"""

import json
import os
import re
import shutil
import subprocess
import textwrap

import pytest

from conftest import expect, expect_usage_error
from web_server import PAGE_SECRET, PDF_TEXT, JSON_DOC, PLAIN_TEXT, text_of_length
from web_server import web, web_log_reset  # noqa: F401  (pytest fixtures)

BLOCKED_PRIVATE = "Blocked: URL targets a private or internal network address"
BLOCKED_SECRET = ("Blocked: URL contains what appears to be an API key or token. "
                  "Secrets must not be sent in URLs.")


def config(ptc, allow_private=True, timeout=2, extra="", name="web.yaml"):
    text = f"web:\n  timeout: {timeout}\n"
    if allow_private:
        text += "  allow_private_urls: true\n"
    return ptc.write_config(text + textwrap.dedent(extra), name=name)


def run_extract(ptc, cfg, urls, char_limit=None, env=None, opts=(), timeout=30):
    """`ptc run --tools web_extract` a script that prints web_extract(urls, ...) as JSON.
    Returns (the decoded tool result, the ptc Result)."""
    call = f"web_extract({urls!r}" + (f", char_limit={char_limit!r})" if char_limit is not None
                                      else ")")
    code = ("import json\nfrom hermes_tools import web_extract\n"
            f"r = {call}\nprint(json.dumps(r, ensure_ascii=False))\n")
    r = ptc.run(code, "--config", cfg, "--tools", "web_extract", *opts, env=env,
                timeout=timeout)
    expect(r, 0, "success")
    return r.output_json(), r


def results(d, n):
    assert isinstance(d, dict) and isinstance(d.get("results"), list), d
    assert len(d["results"]) == n, d
    for e in d["results"]:
        assert set(e) >= {"url", "title", "content", "error"}, e
    return d["results"]


def one(ptc, cfg, url, **kw):
    """web_extract([url]): the single result entry."""
    d, _ = run_extract(ptc, cfg, [url], **kw)
    return results(d, 1)[0]


def ok_entry(e):
    assert e["error"] is None, e
    assert isinstance(e["content"], str) and e["content"], e
    return e["content"]


def lines(md):
    return md.splitlines()


# --- enabled by default ---------------------------------------------------------


def test_web_extract_enabled_by_default_web_search_not(ptc, web):
    cfg = config(ptc)
    r = ptc.run("""
        import hermes_tools
        print(callable(getattr(hermes_tools, 'web_extract', None)),
              callable(getattr(hermes_tools, 'web_search', None)))
        """, "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "True False\n", r


def test_web_extract_default_tools_fetch(ptc, web):
    # No --tools at all: the import works and the call reaches the page.
    r = ptc.run(f"""
        import json
        from hermes_tools import web_extract
        print(json.dumps(web_extract([{web.site.url('/plain')!r}])))
        """, "--config", config(ptc))
    expect(r, 0, "success")
    e = results(r.output_json(), 1)[0]
    assert e["error"] is None and "Plain line one" in e["content"], e
    assert r.data["tool_calls_made"] == 1, r


# --- HTML to Markdown -------------------------------------------------------------


@pytest.fixture
def page(ptc, web):
    """The main fixture page, extracted: (entry, markdown, site base URL)."""
    e = one(ptc, config(ptc), web.site.url("/page"))
    return e, ok_entry(e), web.site.base_url


def test_html_title_url_and_headings(page):
    e, md, base = page
    assert e["title"] == "Fixture Page Title", e
    assert e["url"] == base + "/page", e
    assert "# Main Heading" in lines(md), md
    assert "## Lists Section" in lines(md), md


def test_html_lists(page):
    _, md, _ = page
    ls = lines(md)
    assert "- Apple" in ls, md
    assert any(l.startswith("- Banana") for l in ls), md
    assert re.search(r"^[ \t]+- Nested Cherry$", md, re.M), md
    assert "1. First step" in ls, md
    assert re.search(r"^\d+\. Second step$", md, re.M), md


def test_html_links_and_images_absolute(page):
    _, md, base = page
    assert f"[a relative link]({base}/relative/link)" in md, md
    assert "[an absolute link](https://example.org/abs)" in md, md
    assert f"![Logo alt]({base}/img/logo.png)" in md, md


def test_html_base64_image_removed(page):
    _, md, _ = page
    assert "[BASE64_IMAGE_REMOVED]" in md, md
    assert "base64," not in md and "iVBORw0KGgo" not in md, md


def test_html_code(page):
    _, md, _ = page
    assert "`inline_code()`" in md, md
    assert re.search(r"^```python\ndef hello\(\):\n    return 42\n```$", md, re.M), md


def test_html_table_and_blockquote(page):
    _, md, _ = page
    ls = [l.strip() for l in lines(md)]
    assert "| Name | Qty |" in ls, md
    assert "| Widget | 7 |" in ls, md
    i = ls.index("| Name | Qty |")
    assert re.fullmatch(r"\|\s*:?-{3,}:?\s*\|\s*:?-{3,}:?\s*\|", ls[i + 1]), md
    assert "> Quoted wisdom" in lines(md), md


def test_html_chrome_dropped(page):
    _, md, _ = page
    for marker in ("SCRIPT_TEXT_MARKER", "style-rule-marker", "NAV_TEXT_MARKER",
                   "Other nav", "FOOTER_TEXT_MARKER", "document.title"):
        assert marker not in md, (marker, md)
    assert "First paragraph with" in md, md


# --- redirects, timeouts, caps ------------------------------------------------------


def test_redirect_chain_followed_final_url(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/r1"))
    ok_entry(e)
    assert e["url"] == web.site.url("/page"), e
    assert e["title"] == "Fixture Page Title", e
    assert web.site.paths() == ["/r1", "/r2", "/page"], web.site.paths()


def test_redirect_loop_is_an_error(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/loop-a"))
    assert isinstance(e["error"], str) and "redirect" in e["error"].lower(), e
    assert e["content"] == "", e
    assert 2 <= len(web.site.requests("/loop-")) <= 25, web.site.paths()


def test_redirect_to_metadata_blocked_even_with_allow_private(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/to-metadata"))
    assert isinstance(e["error"], str) and e["error"].startswith("Blocked"), e
    assert e["content"] == "", e


def test_slow_page_times_out(ptc, web):
    d, r = run_extract(ptc, config(ptc, timeout=2), [web.site.url("/slow?s=6")])
    e = results(d, 1)[0]
    assert isinstance(e["error"], str) and "timed out" in e["error"], e
    assert e["content"] == "", e
    assert r.elapsed >= 1.9, r.elapsed  # not early; "timed out" shows the 2 s cut the 6 s page


def test_huge_page_truncated_promptly(ptc, web):
    d, r = run_extract(ptc, config(ptc, timeout=20), [web.site.url("/huge")])
    e = results(d, 1)[0]
    content = ok_entry(e)
    assert r.elapsed < 15, r.elapsed  # hang guard
    assert "huge page filler text" in content, content[:200]
    assert e.get("truncated") is True, {k: v for k, v in e.items() if k != "content"}
    assert isinstance(e.get("total_chars"), int) and e["total_chars"] > 15000, e.get("total_chars")
    assert len(content) <= 15000 + 500, len(content)


def test_gzip_page_decoded(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/gzip"))
    assert "Gzipped content marker, decoded." in ok_entry(e), e
    assert e["title"] == "Gzip Page", e


def test_latin1_charset_from_header(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/latin1"))
    md = ok_entry(e)
    assert "Le caf\u00e9 co\u00fbte 3 \u00a3." in md, md
    assert "\u00dcn\u00efc\u00f6d\u00e9" in md, md
    assert "\ufffd" not in md, md
    assert e["title"] == "Caf\u00e9 Latin", e


def test_windows1252_charset_from_meta(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/cp1252"))
    md = ok_entry(e)
    assert "5 \u20acuro" in md and "\u201cquoted\u201d" in md and "caf\u00e9" in md, md
    assert "\ufffd" not in md, md


def test_text_plain_passed_through(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/plain"))
    assert ok_entry(e).strip() == PLAIN_TEXT.strip(), e


def test_json_passed_through(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/data.json"))
    assert json.loads(ok_entry(e)) == JSON_DOC, e


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext is not installed")
def test_pdf_to_text(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/doc.pdf"))
    assert PDF_TEXT in ok_entry(e), e
    assert "%PDF" not in e["content"] and "endobj" not in e["content"], e


def test_page_the_html_parser_crashes_on_costs_that_page(ptc, web):
    # gumbo asserts on this page; the conversion runs in a forked copy, so ptc, the other
    # page and the result survive.
    urls = [web.site.url("/gumbo-abort"), web.site.url("/page")]
    d, r = run_extract(ptc, config(ptc), urls)
    bad, good = results(d, 2)
    assert bad["error"] == ("the page's HTML could not be converted: the HTML parser crashed "
                            "(SIGABRT)"), bad
    assert bad["content"] == "" and bad["url"] == urls[0], bad
    assert good["title"] == "Fixture Page Title" and good["error"] is None, good


def test_image_is_an_error_naming_the_type(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/img.png"))
    assert isinstance(e["error"], str) and "image/png" in e["error"], e
    assert e["content"] == "", e


@pytest.mark.parametrize("path,code", [("/missing", "404"), ("/error500", "500")])
def test_http_error_status(ptc, web, path, code):
    e = one(ptc, config(ptc), web.site.url(path))
    assert isinstance(e["error"], str) and code in e["error"], e
    assert e["content"] == "", e


def test_secret_value_in_page_is_redacted(ptc, web):
    d, r = run_extract(ptc, config(ptc), [web.site.url("/secret-page")],
                       env={"FIXTURE_SERVICE_TOKEN": PAGE_SECRET})
    e = results(d, 1)[0]
    md = ok_entry(e)
    assert "The value is" in md and "***" in md, md
    assert PAGE_SECRET.encode() not in r.stdout, r


# --- several URLs ---------------------------------------------------------------------


def test_results_in_order_one_per_url(ptc, web):
    urls = [web.site.url("/plain"), web.site.url("/missing"), web.site.url("/r1")]
    d, _ = run_extract(ptc, config(ptc), urls)
    a, b, c = results(d, 3)
    assert a["url"] == urls[0] and "Plain line one" in ok_entry(a), a
    assert b["url"] == urls[1] and "404" in (b["error"] or ""), b
    assert c["url"] == web.site.url("/page") and c["title"] == "Fixture Page Title", c


def test_at_most_five_urls(ptc, web):
    urls = [web.site.url(f"/n/{i}") for i in range(1, 7)]
    d, _ = run_extract(ptc, config(ptc), urls)
    res = results(d, 5)
    assert [e["url"] for e in res] == urls[:5], res
    assert sorted(web.site.paths()) == [f"/n/{i}" for i in range(1, 6)], web.site.paths()


def test_single_string_url_accepted(ptc, web):
    d, _ = run_extract(ptc, config(ptc), web.site.url("/plain"))
    e = results(d, 1)[0]
    assert e["url"] == web.site.url("/plain") and "Plain line two" in ok_entry(e), e


def test_empty_list(ptc, web):
    d, _ = run_extract(ptc, config(ptc), [])
    assert d.get("error") == "Content was inaccessible or not found", d
    assert web.site.requests() == []


def test_concurrent_fetches(ptc, web):
    # A barrier, not a stopwatch: each page is served only once all five requests are in
    # (the server waits up to 20 s); fetched one after another, the first is "alone".
    tag = os.urandom(4).hex()
    urls = [web.site.url(f"/meet/{tag}/5/{i}") for i in range(5)]
    d, r = run_extract(ptc, config(ptc, timeout=30), urls, timeout=60)
    res = results(d, 5)
    for i, e in enumerate(res):
        assert e["error"] is None and f"met {i}" in e["content"], f"not concurrent: {e}"


def test_run_timeout_cancels_fetch(ptc, web):
    r = ptc.run(f"""
        from hermes_tools import web_extract
        print('start', flush=True)
        web_extract([{web.site.url('/slow?s=20')!r}])
        print('not reached')
        """, "--config", config(ptc, timeout=30), "--tools", "web_extract", "--timeout", "2",
                timeout=30)
    expect(r, 124, "timeout")
    assert r.elapsed < 15, r.elapsed  # hang guard: the page takes 20 s
    assert "start" in r.output and "not reached" not in r.output, r
    assert web.site.requests("/slow"), "the page was never requested"


# --- char_limit ------------------------------------------------------------------------


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_char_limit_head_tail_notice(ptc, web):
    full = text_of_length(1000)
    e = one(ptc, config(ptc), web.site.url("/text/1000"), char_limit=200)
    c = ok_entry(e)
    assert e.get("truncated") is True, e
    assert e.get("total_chars") == 1000, e
    head = common_prefix(c, full)
    tail = common_prefix(c[::-1], full[::-1])
    assert head >= 50 and tail >= 20, (head, tail, c)
    assert head + tail <= 200 + 4, (head, tail, c)
    notice = c[head:len(c) - tail]
    assert len(c) <= 200 + 400, len(c)
    assert set(notice) - set(full), f"no truncation notice between head and tail: {c!r}"


def test_char_limit_not_reached_no_keys(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/text/150"), char_limit=200)
    assert ok_entry(e) == text_of_length(150), e
    assert "truncated" not in e and "total_chars" not in e, e


def test_char_limit_counts_characters_not_bytes(ptc, web):
    d, _ = run_extract(ptc, config(ptc), [web.site.url("/utext/300"),
                                          web.site.url("/utext/1000")], char_limit=400)
    short, long_ = results(d, 2)
    assert ok_entry(short) == "\u00e9" * 300, short
    assert "truncated" not in short and "total_chars" not in short, short
    assert long_.get("truncated") is True and long_.get("total_chars") == 1000, \
        {k: v for k, v in long_.items() if k != "content"}
    assert len(ok_entry(long_)) <= 400 + 400, len(long_["content"])


def test_char_limit_default_15000(ptc, web):
    d, _ = run_extract(ptc, config(ptc), [web.site.url("/text/20000"),
                                          web.site.url("/text/14000")])
    big, small = results(d, 2)
    assert big.get("truncated") is True and big.get("total_chars") == 20000, \
        {k: v for k, v in big.items() if k != "content"}
    assert 15000 <= len(big["content"]) <= 15000 + 400, len(big["content"])
    assert ok_entry(small) == text_of_length(14000)
    assert "truncated" not in small and "total_chars" not in small


# --- URL secret guard ---------------------------------------------------------------------

ENV_SECRET = "plainvalue-7Hq2Lm9Zx4wR"


@pytest.mark.parametrize("suffix", [
    "/sg?key=sk-abcdefghijklmnop1234",
    "/sg/ghp_abcdefghijklmnopqrst12345/x",
    "/sg?key=%73%6b%2dabcdefghijklmnop1234",
    "/sg/ghp%5Fabcdefghijklmnopqrst12345",
    f"/sg?v={ENV_SECRET}",
], ids=["sk-query", "ghp-path", "sk-percent", "ghp-percent", "env-value"])
def test_secret_in_url_blocks_whole_call(ptc, web, suffix):
    urls = [web.site.url("/sg-benign"), web.site.url(suffix)]
    d, r = run_extract(ptc, config(ptc), urls, env={"MY_SERVICE_TOKEN": ENV_SECRET})
    assert d == {"success": False, "error": BLOCKED_SECRET}, d
    assert web.site.requests() == [], web.site.paths()


# --- SSRF guard ------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "2130706433", "0x7f.1"])
def test_private_address_blocked_by_default(ptc, web, host):
    url = f"http://{host}:{web.site.port}/ssrf"
    e = one(ptc, config(ptc, allow_private=False), url)
    assert e["error"] == BLOCKED_PRIVATE, e
    assert e["content"] == "", e
    assert web.site.requests() == [], web.site.paths()


def test_allow_private_urls_fetches_loopback(ptc, web):
    cfg = ptc.write_config("web:\n  allow_private_urls: true\n")
    e = one(ptc, cfg, web.site.url("/ssrf-ok"))
    assert e["error"] is None and e["title"] == "Fixture Page Title", e
    assert web.site.paths() == ["/ssrf-ok"]


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/",
                                 "http://metadata.google.internal/computeMetadata/v1/",
                                 "http://[::ffff:169.254.169.254]/latest/meta-data/",
                                 "http://①⑥⑨.254.169.254/latest/meta-data/",
                                 "http://ｍｅｔａｄａｔａ.google.internal/computeMetadata/v1/"])
def test_metadata_blocked_even_with_allow_private(ptc, web, url):
    d, r = run_extract(ptc, config(ptc, timeout=3), [url])
    e = results(d, 1)[0]
    # "Blocked" (not a timeout) shows the request was refused before any connection.
    assert isinstance(e["error"], str) and e["error"].startswith("Blocked"), e
    assert e["content"] == "", e


# --- internationalised host names ------------------------------------------------------------

# A name that is not ASCII is fetched by its UTS #46 ASCII form, which also folds width and
# compatibility forms: "①②⑦.0.0.1" is 127.0.0.1 and "ｌｏｃａｌｈｏｓｔ" is localhost, the only
# internationalised names a test without DNS can fetch, and SSRF spellings the guard must see
# through. (A real one, "bücher.de", is fetched as "xn--bcher-kva.de".)
IDN_LOOPBACK = ["①②⑦.0.0.1", "ｌｏｃａｌｈｏｓｔ", "%E2%91%A0%E2%91%A1%E2%91%A6.0.0.1"]


@pytest.mark.parametrize("host", IDN_LOOPBACK, ids=["circled", "fullwidth", "percent"])
def test_internationalised_host_is_fetched_by_its_ascii_name(ptc, web, host):
    url = f"http://{host}:{web.site.port}/page"
    e = one(ptc, config(ptc), url)
    ok_entry(e)
    assert e["title"] == "Fixture Page Title", e
    assert e["url"] == url, e  # as the script wrote it
    assert web.site.paths() == ["/page"], web.site.paths()


@pytest.mark.parametrize("host", IDN_LOOPBACK, ids=["circled", "fullwidth", "percent"])
def test_internationalised_loopback_blocked_by_default(ptc, web, host):
    e = one(ptc, config(ptc, allow_private=False), f"http://{host}:{web.site.port}/ssrf")
    assert e["error"] == BLOCKED_PRIVATE, e
    assert web.site.requests() == [], web.site.paths()


def have_c_utf8():
    try:
        return os.path.isdir("/usr/lib/locale/C.utf8") or bool(
            subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10)
            .stdout.lower().count("c.utf8"))
    except OSError:
        return False


@pytest.mark.skipif(not have_c_utf8(), reason="no C.UTF-8 locale: curl cannot map a "
                    "redirect's internationalised host (docs/web.md)")
def test_redirect_to_internationalised_host_followed(ptc, web):
    e = one(ptc, config(ptc), web.site.url("/to-idn"))
    ok_entry(e)
    assert e["title"] == "Fixture Page Title", e
    assert web.site.paths() == ["/to-idn", "/page"], web.site.paths()


def test_host_mapping_to_a_port_or_user_is_an_error(ptc, web):
    # FULLWIDTH COLON and COMMERCIAL AT map to ":" and "@": a host that would split the URL.
    urls = [f"http://127.0.0.1\uff1a{web.site.port}/page", "http://a\uff20127.0.0.1/page"]
    d, _ = run_extract(ptc, config(ptc), urls)
    for e in results(d, 2):
        assert e["error"] == ("invalid URL (its host is no valid domain name: it maps to "
                              "characters no host name has)"), e
    assert web.site.requests() == [], web.site.paths()


def test_invalid_internationalised_host_is_an_error(ptc, web):
    e = one(ptc, config(ptc), "http://\u0300a.example/")
    assert e["error"] == ("invalid URL (its host is no valid domain name: string contains a "
                          "forbidden leading combining character)"), e
    assert e["content"] == "", e


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1:21/x",
                                 "gopher://127.0.0.1:70/"])
def test_non_http_scheme_is_an_error(ptc, web, url):
    e = one(ptc, config(ptc), url)
    assert isinstance(e["error"], str) and e["error"], e
    assert not e["content"], e
    assert "root:" not in json.dumps(e), e


# --- extraction providers ----------------------------------------------------------------------

PUBLIC_URL = "http://93.184.216.34/article"  # an IP literal: no DNS needed


@pytest.mark.parametrize("prov,keyvar,key", [
    ("firecrawl", "FIRECRAWL_API_KEY", "firecrawl-fixture-key-0123456789"),
    ("tavily", "TAVILY_API_KEY", "tavily-fixture-key-0123456789"),
    ("exa", "EXA_API_KEY", "exa-fixture-key-0123456789"),
])
def test_extract_provider(ptc, web, prov, keyvar, key):
    srv = getattr(web, prov)
    cfg = ptc.write_config(f"web:\n  extract_provider: {prov}\n  {prov}_url: {srv.base_url}\n"
                           "  timeout: 5\n")
    d, r = run_extract(ptc, cfg, [PUBLIC_URL], env={keyvar: key})
    e = results(d, 1)[0]
    assert e["error"] is None, e
    assert e["url"] == PUBLIC_URL, e
    reqs = srv.requests()
    assert len(reqs) == 1, srv.paths()
    q = reqs[0]
    assert q["method"] == "POST", q
    body = json.loads(q["body"])
    if prov == "firecrawl":
        assert q["path"] == "/v1/scrape", q
        assert body["url"] == PUBLIC_URL and "markdown" in body.get("formats", []), body
        assert q["headers"].get("authorization") == f"Bearer {key}", q["headers"]
        assert "Firecrawl markdown of " + PUBLIC_URL in e["content"], e
        assert e["title"] == "Firecrawl Title", e
    elif prov == "tavily":
        assert q["path"] == "/extract", q
        assert body["api_key"] == key and PUBLIC_URL in body["urls"], body
        assert "Tavily raw content of " + PUBLIC_URL in e["content"], e
    else:
        assert q["path"] == "/contents", q
        assert q["headers"].get("x-api-key") == key, q["headers"]
        assert PUBLIC_URL in body["urls"] and body.get("text") is True, body
        assert "Exa text of " + PUBLIC_URL in e["content"], e
        assert e["title"] == "Exa Title", e
    assert key.encode() not in r.stdout, r
    assert web.site.requests() == []


def test_extract_provider_env_not_visible_to_script(ptc, web):
    cfg = ptc.write_config(f"web:\n  extract_provider: exa\n  exa_url: {web.exa.base_url}\n")
    r = ptc.run("""
        import os
        from hermes_tools import web_extract
        print(sorted(k for k in os.environ if 'EXA' in k or 'KEY' in k))
        print(web_extract(['http://93.184.216.34/x'])['results'][0]['error'])
        """, "--config", cfg, "--tools", "web_extract",
                env={"EXA_API_KEY": "exa-fixture-key-abcdef0123"})
    expect(r, 0, "success")
    assert r.output == "[]\nNone\n", r


# --- ptc tool web_extract ------------------------------------------------------------------


def tool(ptc, cfg, args):
    r = ptc.run_ptc(["tool", "--config", cfg, "web_extract", json.dumps(args)])
    assert r.rc == 0 and r.data is not None, r
    return r.data


def test_ptc_tool_web_extract_page(ptc, web):
    d = tool(ptc, config(ptc), {"urls": [web.site.url("/r1"), web.site.url("/latin1")]})
    a, b = results(d, 2)
    assert a["url"] == web.site.url("/page") and "# Main Heading" in lines(a["content"]), a
    assert "\u00dcn\u00efc\u00f6d\u00e9" in b["content"], b


def test_ptc_tool_web_extract_ssrf_blocked(ptc, web):
    d = tool(ptc, config(ptc, allow_private=False), {"urls": [web.site.url("/ssrf-tool")]})
    e = results(d, 1)[0]
    assert e["error"] == BLOCKED_PRIVATE and e["content"] == "", e
    assert web.site.requests() == []


def test_ptc_tool_web_extract_char_limit(ptc, web):
    d = tool(ptc, config(ptc), {"urls": [web.site.url("/text/1000")], "char_limit": 300})
    e = results(d, 1)[0]
    assert e.get("truncated") is True and e.get("total_chars") == 1000, e
    assert len(e["content"]) <= 300 + 400, e


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize("yaml_text,words", [
    ("web:\n  timeout: -1\n", ["web.timeout", "-1"]),
    ("web:\n  extract_provider: foo\n", ["web.extract_provider", "foo"]),
    ("web:\n  allow_private_urls: maybe\n", ["web.allow_private_urls"]),
    ("web:\n  brave_url: ftp://x\n", ["web.brave_url"]),
    ("web:\n  firecrawl_url: ftp://x\n", ["web.firecrawl_url"]),
])
def test_bad_web_config_exits_2(ptc, yaml_text, words):
    cfg = ptc.write_config(yaml_text)
    expect_usage_error(ptc.run("print(1)", "--config", cfg), *words)
