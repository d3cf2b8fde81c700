/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/ptc-test.h"

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/web/html-markdown.h"

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Convert @html with @base and compare with @want (and the title with @want_title). */
static void check_full(const char *html, const char *base, const char *want, const char *want_title)
{
        _cleanup_free_ char *md = NULL, *title = NULL;

        assert_int_equal(html_to_markdown(html, strlen(html), base, 0, &md, &title), 0);
        assert_non_null(md);
        if (strcmp(md, want) != 0)
                fprintf(stderr, "# html: %s\n# got:\n%s\n# want:\n%s\n", html, md, want);
        assert_string_equal(md, want);
        if (want_title)
                assert_string_equal(title, want_title);
        else
                assert_null(title);
        assert_true(utf8_is_valid(md, strlen(md)));
}

static void check(const char *html, const char *want)
{
        _cleanup_free_ char *md = NULL;

        assert_int_equal(html_to_markdown(html, strlen(html), "https://example.com/dir/page.html",
                                          0, &md, NULL),
                         0);
        if (strcmp(md, want) != 0)
                fprintf(stderr, "# html: %s\n# got:\n%s\n# want:\n%s\n", html, md, want);
        assert_string_equal(md, want);
}

static void test_html_to_markdown_blocks(void **state)
{
        check("<h1>Title</h1><p>One  two\n\tthree</p><p>Four</p>",
              "# Title\n\nOne two three\n\nFour");
        check("<h2>A</h2><h3>B</h3><h4>C</h4><h5>D</h5><h6>E</h6>",
              "## A\n\n### B\n\n#### C\n\n##### D\n\n###### E");
        check("<p>a<br>b<br><br><br><br>c</p>", "a\nb\n\nc");
        check("<p>x</p><hr><p>y</p>", "x\n\n---\n\ny");
        check("<div>a</div><div>b</div>\n\n\n<p>c</p>", "a\nb\n\nc");
        check("<p>  lead and trail  </p>", "lead and trail");
        check("<h2>  </h2><p></p><p>only</p>", "only");
        check("<p>a&nbsp;&nbsp;b &amp; &lt;c&gt;</p>", "a b & <c>");
        /* No heading is made up from <title>. */
        check_full("<title>T</title><p>body</p>", NULL, "body", "T");
}

static void test_html_to_markdown_inline(void **state)
{
        check("<p><b>bold</b> <strong>strong</strong> <i>it</i> <em>em</em></p>",
              "**bold** **strong** *it* *em*");
        check("<p>a<b> spaced </b>b</p>", "a **spaced** b");
        check("<p>x<b></b>y<em> </em>z</p>", "xy z");
        check("<p><b><i>both</i></b></p>", "***both***");
        check("<p>use <code>ls -l</code> now</p>", "use `ls -l` now");
        check("<p><code>a`b</code></p>", "``a`b``");
        check("<p><code>`x`</code></p>", "`` `x` ``");
        check("<p><code>  </code>x</p>", "x");
}

static void test_html_to_markdown_links(void **state)
{
        const char *base = "https://example.com/dir/page.html?q=1";

        check_full("<p><a href=\"other.html\">rel</a> <a href=\"/root\">abs</a> "
                   "<a href=\"//cdn.example.org/x\">proto</a> "
                   "<a href=\"https://o.example/p\">full</a> <a href=\"#sec\">frag</a> "
                   "<a href=\"../up/a b\">space</a></p>",
                   base,
                   "[rel](https://example.com/dir/other.html) [abs](https://example.com/root) "
                   "[proto](https://cdn.example.org/x) [full](https://o.example/p) "
                   "[frag](https://example.com/dir/page.html?q=1#sec) "
                   "[space](https://example.com/up/a%20b)",
                   NULL);
        /* <base href> wins over the base URL, and is itself resolved against it. */
        check_full("<head><base href=\"/other/\"></head><a href=\"x.html\">x</a>", base,
                   "[x](https://example.com/other/x.html)", NULL);
        check_full("<head><base href=\"https://b.example/s/\"></head><a href=\"x\">x</a>", NULL,
                   "[x](https://b.example/s/x)", NULL);
        /* No base at all: kept as written. */
        check_full("<a href=\"rel/x\">x</a>", NULL, "[x](rel/x)", NULL);
        check("<p><a href=\"javascript:alert(1)\">click</a> <a href=\" JavaScript:x\">me</a></p>",
              "click me");
        check("<p><a href=\"/e\"></a> <a href=\"/f\"><img src=\"\"></a></p>",
              "[https://example.com/e](https://example.com/e) "
              "[https://example.com/f](https://example.com/f)");
        check("<p><a>no href</a> <a href=\"mailto:a@b.example\">mail</a></p>",
              "no href [mail](mailto:a@b.example)");
        check("<a href=\"/c\"><div><h3>Card</h3><p>text</p></div></a>",
              "[Card text](https://example.com/c)");
        check("<p><a href=\"/x\"> <b>bold</b> link </a>!</p>",
              "[**bold** link](https://example.com/x) !");
}

static void test_html_to_markdown_images(void **state)
{
        check("<p><img src=\"pic.png\" alt=\"A  cat\"> <img src=\"/p.jpg\"></p>",
              "![A cat](https://example.com/dir/pic.png) ![](https://example.com/p.jpg)");
        check("<img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"x\">",
              "[BASE64_IMAGE_REMOVED]");
        check("<img src=\"data:image/gif;base64,R0lGOD==\" data-src=\"/real.png\" alt=\"r\">",
              "![r](https://example.com/real.png)");
        check("<p>see data:image/png;base64,iVBORw0KGgoAAAANSUhEUg== here</p>",
              "see [BASE64_IMAGE_REMOVED] here");
        check("<p>x<img alt=\"no src\">y</p>", "xno srcy");
        check("<a href=\"/big\"><img src=\"t.png\" alt=\"thumb\"></a>",
              "[![thumb](https://example.com/dir/t.png)](https://example.com/big)");
}

static void test_html_to_markdown_lists(void **state)
{
        check("<ul><li>a</li><li>b<ul><li>b1</li><li>b2<ol><li>x</li><li>y</li></ol></li></ul>"
              "</li><li>c</li></ul><p>after</p>",
              "- a\n- b\n  - b1\n  - b2\n    1. x\n    2. y\n- c\n\nafter");
        check("<ol start=\"7\"><li>seven</li><li>eight<ul><li>in</li></ul></li></ol>",
              "7. seven\n8. eight\n   - in");
        check("<ul><li><p>para one</p><p>para two</p></li><li></li><li>last</li></ul>",
              "- para one\n\n  para two\n- last");
        check("<p>before</p><ul><li>x</li></ul>", "before\n\n- x");
        check("<ol><li><pre>code\nmore</pre></li></ol>", "1. ```\n   code\n   more\n   ```");
}

static void test_html_to_markdown_escapes(void **state)
{
        check("<p># not a heading</p><p>- not a list</p><p>1. not ordered</p><p>&gt; no</p>",
              "\\# not a heading\n\n\\- not a list\n\n1\\. not ordered\n\n\\> no");
        check("<p>#tag and a-b 1.5 x</p>", "#tag and a-b 1.5 x");
        check("<p>a<br>- b</p>", "a\n\\- b");
}

static void test_html_to_markdown_code_blocks(void **state)
{
        check("<pre><code class=\"language-python\">def f():\n    return 1\n</code></pre>",
              "```python\ndef f():\n    return 1\n```");
        check("<pre class=\"lang-c\">int x;</pre>", "```c\nint x;\n```");
        check("<pre>a ``` b\n````</pre>", "`````\na ``` b\n````\n`````");
        check("<pre>  keep   spaces\n\tand tabs</pre>", "```\n  keep   spaces\n\tand tabs\n```");
        check("<pre>a<br>b</pre>", "```\na\nb\n```");
        check("<pre>\n\n</pre><p>x</p>", "x");
}

static void test_html_to_markdown_quotes(void **state)
{
        check("<blockquote><p>one</p><p>two</p><blockquote>inner</blockquote></blockquote><p>out</"
              "p>",
              "> one\n>\n> two\n>\n> > inner\n\nout");
        check("<ul><li>item<blockquote>q</blockquote></li></ul>", "- item\n\n  > q");
}

static void test_html_to_markdown_tables(void **state)
{
        check("<table><tr><th>Name</th><th>Value</th></tr>"
              "<tr><td>a|b</td><td>line1<br>line2</td></tr>"
              "<tr><td>only</td></tr></table>",
              "| Name | Value |\n| --- | --- |\n| a\\|b | line1 line2 |\n| only | |");
        check("<table><thead><tr><th>A</th><th>B</th><th>C</th></tr></thead><tbody>"
              "<tr><td colspan=\"2\">wide</td><td><a href=\"/x\">l</a></td></tr>"
              "<tr><td></td><td><code>a|b</code></td><td><b>x</b></td></tr></tbody></table>",
              "| A | B | C |\n| --- | --- | --- |\n| wide | | [l](https://example.com/x) |\n"
              "| | `a\\|b` | **x** |");
        check("<p>x</p><table></table><table><tr></tr></table><p>y</p>", "x\n\ny");
        /* One column, or block content in cells: layout, not data. */
        check("<table><tr><td><h2>Head</h2><p>text</p></td><td>side</td></tr></table>",
              "## Head\n\ntext\n\nside");
        check("<table><tr><td>1.</td><td>a</td></tr></table><table><tr><td>solo</td></tr>"
              "<tr><td>two</td></tr></table>",
              "| 1. | a |\n| --- | --- |\n\nsolo\ntwo");
}

static void test_html_to_markdown_definition_lists(void **state)
{
        check("<dl><dt>Term</dt><dd>Definition</dd><dt>T2</dt><dt>T3</dt><dd>D2</dd></dl>",
              "Term\n: Definition\n\nT2\nT3\n: D2");
}

static void test_html_to_markdown_dropped(void **state)
{
        check("<html><head><style>p{}</style><script>var x;</script><meta name=a content=b>"
              "</head><body><header>Site banner</header><nav><a href=/>Home</a></nav>"
              "<p>Body text</p><script>alert(1)</script><noscript>enable js</noscript>"
              "<aside>Related</aside><div aria-hidden=\"true\">hidden a</div>"
              "<div hidden>hidden b</div><div role=\"navigation\">menu</div>"
              "<div role=\"banner contentinfo\">chrome</div><div role=\"search\">s</div>"
              "<div role=\"complementary\">c</div>"
              "<form><input value=v><select><option>o</option></select>"
              "<textarea>t</textarea><button>Go</button><label>Label</label></form>"
              "<svg><text>svg text</text></svg><canvas>cv</canvas><iframe src=x></iframe>"
              "<object>obj</object><embed src=y><template><p>tpl</p></template>"
              "<footer>Copyright</footer></body></html>",
              "Body text\n\nLabel");
        /* header and footer inside an article belong to it. */
        check("<article><header><h1>Post</h1></header><p>text</p><footer>by me</footer></article>"
              "<footer>site</footer>",
              "# Post\n\ntext\n\nby me");
}

static void test_html_to_markdown_main_article(void **state)
{
        check("<div>junk</div><main><p>main content</p></main><div>more junk</div>",
              "main content");
        check("<div>junk</div><article><p>the article</p></article><p>x</p>", "the article");
        check("<article><p>one</p></article><article><p>two</p></article><p>three</p>",
              "one\n\ntwo\n\nthree");
        check("<div>junk</div><div role=\"main\">role main</div>", "role main");
        check("<article>inside article</article><main>main wins</main>", "main wins");
}

static void test_html_to_markdown_titles(void **state)
{
        check_full("<title>  The\n  Title </title><meta property=\"og:title\" content=\"OG\">"
                   "<h1>H</h1>",
                   NULL, "# H", "The Title");
        check_full("<meta property=\"og:title\" content=\" OG  title \"><h1>H</h1>", NULL, "# H",
                   "OG title");
        check_full("<title> </title><p>x</p><h1>First <b>h1</b></h1><h1>Second</h1>", NULL,
                   "x\n\n# First **h1**\n\n# Second", "First h1");
        check_full("<p>none</p>", NULL, "none", NULL);
        check_full("<svg><title>svg</title></svg><p>p</p>", NULL, "p", NULL);
}

static void test_html_to_markdown_empty_and_bad_input(void **state)
{
        _cleanup_free_ char *md = NULL, *title = NULL, *md2 = NULL;
        static const char bad[] = "<p>a\xff\xfe b\x00 c\xc3</p><p>d</p>";
        char *x = NULL;

        assert_int_equal(html_to_markdown("", 0, NULL, 0, &md, &title), 0);
        assert_string_equal(md, "");
        assert_null(title);
        md = mfree_str(md);
        assert_int_equal(html_to_markdown(NULL, 0, NULL, 0, &md, NULL), 0);
        assert_string_equal(md, "");
        assert_int_equal(html_to_markdown(NULL, 5, NULL, 0, &x, NULL), -EINVAL);
        assert_null(x);

        assert_int_equal(html_to_markdown(bad, sizeof(bad) - 1, NULL, 0, &md2, NULL), 0);
        assert_true(utf8_is_valid(md2, strlen(md2)));
        assert_string_equal(md2, "a\xef\xbf\xbd\xef\xbf\xbd b c\xef\xbf\xbd\n\nd");
}

static void test_html_to_markdown_output_cap(void **state)
{
        _cleanup_free_ char *md = NULL, *md2 = NULL;
        const char *html = "<p>\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 abcdef</p><p>second</p>";

        /* "éééé abcdef" is 8+7 bytes; a cap of 5 would split the third é. */
        assert_int_equal(html_to_markdown(html, strlen(html), NULL, 5, &md, NULL), 0);
        assert_string_equal(md, "\xc3\xa9\xc3\xa9");
        assert_int_equal(html_to_markdown(html, strlen(html), NULL, 17, &md2, NULL), 0);
        assert_string_equal(md2, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 abcdef");
}

/* A title or alt text over HTML_MARKDOWN_SHORT_MAX (4096) is cut between characters, not inside. */
static void test_html_to_markdown_long_attributes(void **state)
{
        _cleanup_free_ char *og = NULL, *img = NULL, *md = NULL, *title = NULL, *md2 = NULL;
        _cleanup_free_ char *md3 = NULL, *text = malloc(1 + 2 * 2100 + 1);

        /* "a" then 2100 "é": byte 4096 is the second half of an "é". */
        assert_non_null(text);
        text[0] = 'a';
        for (size_t i = 0; i < 2100; i++)
                memcpy(text + 1 + 2 * i, "\xc3\xa9", 2);
        text[1 + 2 * 2100] = 0;
        assert_true(asprintf(&og, "<meta property=\"og:title\" content=\"%s\"><p>x</p>", text) > 0);
        assert_true(asprintf(&img, "<img src=\"/p.png\" alt=\"%s\">", text) > 0);

        assert_int_equal(html_to_markdown(og, strlen(og), NULL, 0, &md, &title), 0);
        assert_non_null(title);
        assert_int_equal(strlen(title), 4095);
        assert_true(utf8_is_valid(title, strlen(title)));
        assert_int_equal(html_to_markdown(img, strlen(img), NULL, 0, &md2, NULL), 0);
        assert_true(utf8_is_valid(md2, strlen(md2)));
        assert_int_equal(strlen(md2), strlen("![](/p.png)") + 4095);

        /* At the output cap: "![a" and 48 "é" fit in 100 bytes, half of the 49th does not. */
        assert_int_equal(html_to_markdown(img, strlen(img), NULL, 100, &md3, NULL), 0);
        assert_true(utf8_is_valid(md3, strlen(md3)));
        assert_int_equal(strlen(md3), 99);
}

static char *repeat(const char *open, size_t times, const char *middle, const char *close,
                    size_t *ret_len)
{
        size_t ol = strlen(open), ml = strlen(middle), cl = strlen(close);
        size_t n = ol * times + ml + cl * times;
        char *s = malloc(n + 1), *p = s;

        assert_non_null(s);
        for (size_t i = 0; i < times; i++, p += ol)
                memcpy(p, open, ol);
        memcpy(p, middle, ml);
        p += ml;
        for (size_t i = 0; i < times; i++, p += cl)
                memcpy(p, close, cl);
        *p = 0;
        *ret_len = n;
        return s;
}

static void test_html_to_markdown_deep_nesting(void **state)
{
        /* Deep enough to go past the per-element state, shallow enough to parse in full. */
        {
                size_t n;
                _cleanup_free_ char *html = repeat("<div>", 3000, "deep <b>text</b>", "", &n);
                _cleanup_free_ char *md = NULL;

                assert_int_equal(html_to_markdown(html, n, NULL, 0, &md, NULL), 0);
                assert_string_equal(md, "deep text");
        }
        {
                size_t n;
                _cleanup_free_ char *html = repeat("<blockquote>", 40, "q", "</blockquote>", &n);
                _cleanup_free_ char *md = NULL;
                char want[128];

                for (int i = 0; i < 32; i++)
                        memcpy(want + 2 * i, "> ", 2);
                memcpy(want + 64, "q", 2);
                assert_int_equal(html_to_markdown(html, n, NULL, 0, &md, NULL), 0);
                assert_string_equal(md, want);
        }
        /* Hostile: gumbo would take tens of seconds; the parse is cut to a prefix. */
        static const char *const opens[] = {"<div>", "<b>", "<ul><li>", "<div><b>"};
        for (size_t k = 0; k < ELEMENTSOF(opens); k++) {
                size_t n;
                _cleanup_free_ char *html = repeat(opens[k], 100000, "bottom", "", &n);
                _cleanup_free_ char *md = NULL;
                double t0 = now_s(), dt;

                memcpy(html, "top", 3); /* "top" replaces the first tag's text start */
                assert_int_equal(html_to_markdown(html, n, NULL, 0, &md, NULL), 0);
                dt = now_s() - t0;
                fprintf(stderr, "# 100000 x %s: %.3f s, %zu bytes out\n", opens[k], dt, strlen(md));
                assert_true(dt < 10.0); /* hang guard: uncut, gumbo takes tens of seconds */
                assert_true(utf8_is_valid(md, strlen(md)));
                assert_true(strncmp(md, "top", 3) == 0);
        }
}

static void test_html_to_markdown_big_page(void **state)
{
        _cleanup_buf_ struct buf b = BUF_INIT(8u << 20);
        _cleanup_free_ char *md = NULL, *title = NULL;
        unsigned i = 0;
        double t0, dt;
        static const char want_start[] =
                "## Section 1\n\nLorem ipsum dolor sit amet, consectetur adipiscing elit, sed do "
                "eiusmod tempor [link 1](https://example.com/page/1?q=1) and **bold** *em* `x = "
                "1`.\n\n- one\n- two [r](https://example.com/rel/1)\n- three\n\n## Section 2";

        assert_int_equal(buf_append_str(&b, "<!doctype html><html><head><title>Big</title></head>"
                                            "<body><nav>menu</nav><main>"),
                         0);
        while (b.len < 5u * 1024 * 1024) {
                i++;
                assert_int_equal(
                        buf_printf(&b,
                                   "<h2 id=\"s%u\">Section %u</h2>\n<p>Lorem ipsum dolor sit amet, "
                                   "consectetur adipiscing elit, sed do eiusmod tempor <a "
                                   "href=\"/page/%u?q=1\">link %u</a> and <b>bold</b> "
                                   "<em>em</em> <code>x = %u</code>.</p>\n<ul><li>one</li>"
                                   "<li>two <a href=\"rel/%u\">r</a></li><li>three</li></ul>\n",
                                   i, i, i, i, i, i),
                        0);
                if (i % 5 == 0)
                        assert_int_equal(buf_append_str(&b,
                                                        "<table><tr><th>A</th><th>B</th></tr>"
                                                        "<tr><td>1</td><td>x|y</td></tr>"
                                                        "<tr><td>2</td><td>z</td></tr></table>\n"),
                                         0);
                if (i % 7 == 0)
                        assert_int_equal(buf_append_str(&b, "<pre><code class=\"language-c\">int "
                                                            "main(void)\n{\n}\n</code></pre>\n"),
                                         0);
        }
        assert_int_equal(buf_append_str(&b, "</main><footer>f</footer></body></html>"), 0);
        t0 = now_s();
        assert_int_equal(html_to_markdown(b.data, b.len, "https://example.com/", 0, &md, &title),
                         0);
        dt = now_s() - t0;
        fprintf(stderr, "# %zu byte page: %.3f s, %zu bytes of Markdown\n", b.len, dt, strlen(md));
        assert_string_equal(title, "Big");
        assert_true(strncmp(md, want_start, strlen(want_start)) == 0);
        assert_non_null(strstr(md, "| A | B |\n| --- | --- |\n| 1 | x\\|y |\n| 2 | z |"));
        assert_non_null(strstr(md, "```c\nint main(void)\n{\n}\n```"));
        assert_null(strstr(md, "menu"));
        assert_true(dt < 10.0); /* hang guard */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_html_to_markdown_blocks),
                cmocka_unit_test(test_html_to_markdown_inline),
                cmocka_unit_test(test_html_to_markdown_links),
                cmocka_unit_test(test_html_to_markdown_images),
                cmocka_unit_test(test_html_to_markdown_lists),
                cmocka_unit_test(test_html_to_markdown_escapes),
                cmocka_unit_test(test_html_to_markdown_code_blocks),
                cmocka_unit_test(test_html_to_markdown_quotes),
                cmocka_unit_test(test_html_to_markdown_tables),
                cmocka_unit_test(test_html_to_markdown_definition_lists),
                cmocka_unit_test(test_html_to_markdown_dropped),
                cmocka_unit_test(test_html_to_markdown_main_article),
                cmocka_unit_test(test_html_to_markdown_titles),
                cmocka_unit_test(test_html_to_markdown_empty_and_bad_input),
                cmocka_unit_test(test_html_to_markdown_output_cap),
                cmocka_unit_test(test_html_to_markdown_long_attributes),
                cmocka_unit_test(test_html_to_markdown_deep_nesting),
                cmocka_unit_test(test_html_to_markdown_big_page),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
