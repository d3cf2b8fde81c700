/* SPDX-License-Identifier: MIT */
/*
 * web_extract (docs/seed.md 2.7, docs/contracts.md 9.13): fetch up
 * to five pages and return their content as Markdown or text.
 *
 * Built in and keyless: the pages are fetched concurrently with libcurl
 * (web-fetch.h) behind the SSRF guard, HTML goes through gumbo to Markdown
 * (html-markdown.h), both in the web module loaded on first use
 * (web-module.h), text and JSON pass through, PDFs become text with
 * pdftotext when it is installed. An extraction provider (Firecrawl, Tavily,
 * Exa) is used instead when web.extract_provider names one.
 *
 * Before anything is fetched, every URL passes the secret guard: a script
 * must not be able to send a key to a server of its choosing by putting it
 * in a URL (web-url.h). The guard refuses the whole call, as the seed does.
 */

#include "core/tools/tool.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/utf8.h"
#include "core/command/command.h"
#include "core/output/capture.h"
#include "core/spawn/fork-call.h"
#include "core/tools/tool-util.h"
#include "core/tools/web-redirects.h"
#include "core/web/charset.h"
#include "core/web/html-markdown.h"
#include "core/web/search-providers.h"
#include "core/web/web-fetch.h"
#include "core/web/web-module.h"
#include "core/web/web-url.h"

/* The seed uses the first five URLs of a call. */
#define WEB_EXTRACT_URLS_MAX 5
#define WEB_EXTRACT_CHAR_LIMIT_DEFAULT 15000
/* Below this a page is mostly notice; above it one page would flood the script's memory. */
#define WEB_EXTRACT_CHAR_LIMIT_MIN 100
#define WEB_EXTRACT_CHAR_LIMIT_MAX 1000000
/* Text pdftotext may produce for one document. */
#define WEB_EXTRACT_PDF_TEXT_MAX (8u * 1024 * 1024)
/* Markdown kept of one page before the char_limit cut (bounds the converter's output). */
#define WEB_EXTRACT_MARKDOWN_MAX (16u * 1024 * 1024)

#define SECRET_URL_ERROR                                                                     \
        "Blocked: URL contains what appears to be an API key or token. Secrets must not be " \
        "sent in URLs."

/* ------------------------------------------------------------------------------------------ */
/* Content types                                                                               */

enum page_kind {
        PAGE_HTML,
        PAGE_TEXT,
        PAGE_PDF,
        PAGE_UNSUPPORTED,
};

/* "text/html; charset=x" -> "text/html" (lower case) in @out. */
static void mime_type_of(const char *content_type, char *out, size_t size)
{
        size_t n = 0;
        const char *p = content_type ? content_type : "";

        while (*p == ' ' || *p == '\t')
                p++;
        for (; *p && *p != ';' && *p != ' ' && *p != '\t' && n + 1 < size; p++)
                out[n++] = (char) ((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
        out[n] = 0;
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);

        return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool looks_like_html(const char *body, size_t n)
{
        size_t i = 0;

        if (n >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0)
                i = 3;
        while (i < n && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
                i++;
        return (n - i >= 14 && strncasecmp(body + i, "<!doctype html", 14) == 0) ||
               (n - i >= 5 && strncasecmp(body + i, "<html", 5) == 0) ||
               (n - i >= 5 && strncasecmp(body + i, "<head", 5) == 0) ||
               (n - i >= 5 && strncasecmp(body + i, "<body", 5) == 0);
}

static enum page_kind classify(const char *mime, const char *body, size_t n)
{
        if (strcmp(mime, "text/html") == 0 || strcmp(mime, "application/xhtml+xml") == 0)
                return PAGE_HTML;
        if (strcmp(mime, "application/pdf") == 0 || strcmp(mime, "application/x-pdf") == 0)
                return PAGE_PDF;
        if (strncmp(mime, "text/", 5) == 0 || strcmp(mime, "application/json") == 0 ||
            ends_with(mime, "+json") || strcmp(mime, "application/xml") == 0 ||
            ends_with(mime, "+xml") || strcmp(mime, "application/javascript") == 0 ||
            strcmp(mime, "application/x-ndjson") == 0 || strcmp(mime, "application/yaml") == 0)
                return PAGE_TEXT;
        /* No type, or the generic one: look at the bytes, as a browser would. */
        if (mime[0] == 0 || strcmp(mime, "application/octet-stream") == 0) {
                if (n >= 5 && memcmp(body, "%PDF-", 5) == 0)
                        return PAGE_PDF;
                if (looks_like_html(body, n))
                        return PAGE_HTML;
                if (!memchr(body, 0, n) && utf8_is_valid(body, n))
                        return PAGE_TEXT;
        }
        return PAGE_UNSUPPORTED;
}

/* ------------------------------------------------------------------------------------------ */
/* Content                                                                                     */

/* Replace every data:image/...;base64,... in @s with the marker (seed: "[BASE64_IMAGE_REMOVED]").
 */
static int strip_base64_images(char **s, size_t *len)
{
        static const char prefix[] = "data:image/";
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        const char *p = *s, *end = *s + *len, *last = *s;
        bool changed = false;
        int r;

        while ((p = memmem(p, (size_t) (end - p), prefix, sizeof(prefix) - 1))) {
                const char *q = p + sizeof(prefix) - 1;

                while (q < end &&
                       (isalnum((unsigned char) *q) || *q == '.' || *q == '+' || *q == '-'))
                        q++;
                if ((size_t) (end - q) < 8 || strncasecmp(q, ";base64,", 8) != 0) {
                        p = q;
                        continue;
                }
                q += 8;
                while (q < end && (isalnum((unsigned char) *q) || *q == '+' || *q == '/' ||
                                   *q == '=' || *q == '%' || *q == '\n' || *q == '\r'))
                        q++;
                r = buf_append(&b, last, (size_t) (p - last));
                if (r >= 0)
                        r = buf_append_str(&b, HTML_MARKDOWN_BASE64_IMAGE_MARKER);
                if (r < 0)
                        return r;
                last = p = q;
                changed = true;
        }
        if (!changed)
                return 0;
        if (buf_append(&b, last, (size_t) (end - last)) < 0)
                return -ENOMEM;
        free(*s);
        *s = buf_steal(&b, len);
        return *s ? 1 : -ENOMEM;
}

/* Byte offset of code point @k in valid UTF-8 @s (or @n when there are fewer). */
static size_t cp_offset(const char *s, size_t n, size_t k)
{
        size_t i = 0;

        for (; i < n && k > 0; k--) {
                size_t l = utf8_valid_seq_len((const unsigned char *) s + i, n - i);
                i += l ? l : 1;
        }
        return i;
}

/* "12,345" */
static void thousands(size_t v, char *out, size_t size)
{
        char tmp[32];
        int n = snprintf(tmp, sizeof(tmp), "%zu", v), o = 0;

        for (int i = 0; i < n && (size_t) o + 2 < size; i++) {
                if (i > 0 && (n - i) % 3 == 0)
                        out[o++] = ',';
                out[o++] = tmp[i];
        }
        out[o] = 0;
}

/*
 * Cut @content (valid UTF-8) to @limit characters: the first three quarters
 * of the budget from the head, the last quarter from the tail, and a notice
 * between them. Sets truncated / total_chars in @entry.
 */
static int apply_char_limit(json_t *entry, char **content, size_t *len, size_t limit, bool body_cut)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        size_t total = utf8_count_chars(*content, *len), head, tail, h_end, t_start;
        char s_total[32], s_omitted[32];
        int r;

        if (total <= limit)
                return 0;
        head = limit - limit / 4;
        tail = limit / 4;
        h_end = cp_offset(*content, *len, head);
        t_start = cp_offset(*content, *len, total - tail);
        thousands(total - head - tail, s_omitted, sizeof(s_omitted));
        thousands(total, s_total, sizeof(s_total));

        r = buf_append(&b, *content, h_end);
        if (r >= 0)
                r = buf_printf(&b,
                               "\n\n[... %s characters omitted: the page has %s%s characters; "
                               "call web_extract with a larger char_limit to see more ...]\n\n",
                               s_omitted, body_cut ? "at least " : "", s_total);
        if (r >= 0)
                r = buf_append(&b, *content + t_start, *len - t_start);
        if (r < 0)
                return r;
        free(*content);
        *content = buf_steal(&b, len);
        if (!*content)
                return -ENOMEM;
        if (tool_json_set(entry, "truncated", json_true()) < 0 ||
            tool_json_set(entry, "total_chars", json_integer((json_int_t) total)) < 0)
                return -ENOMEM;
        return 0;
}

static int pdf_to_text(const struct tool_ctx *ctx, const char *body, size_t n, usec_t deadline,
                       char **ret, size_t *ret_len, char **ret_error)
{
        _cleanup_free_ char *pdftotext = find_in_path("pdftotext");
        _cleanup_close_ int mfd = -EBADF;
        struct command_result res = {};
        struct capture_text txt = {};
        struct capture cap;
        char *argv[] = {(char *) "pdftotext", (char *) "-layout", (char *) "-enc", (char *) "UTF-8",
                        (char *) "-q",        (char *) "-",       (char *) "-",    NULL};
        struct command_opts p = {
                .argv = argv,
                .envp = ctx->env,
                .cwd = "/",
                .merge_stderr = false,
                .deadline = deadline,
                .cancel_fd = ctx->cancel_fd,
        };
        int r;

        if (!pdftotext)
                return asprintf(ret_error, "PDF to text needs pdftotext (Debian package "
                                           "poppler-utils), which is not installed") < 0
                               ? -ENOMEM
                               : 0;
        p.path = pdftotext;
        mfd = memfd_with_data("ptc-pdf", body, n);
        if (mfd < 0)
                return mfd;
        p.stdin_fd = mfd;

        r = capture_init(&cap, WEB_EXTRACT_PDF_TEXT_MAX, 0, 0, NULL, 0);
        if (r < 0)
                return r;
        p.output = &cap;
        r = command_run(&p, &res);
        if (r < 0) {
                capture_release(&cap);
                return asprintf(ret_error, "pdftotext could not run: %s", strerror(-r)) < 0
                               ? -ENOMEM
                               : 0;
        }
        r = capture_text(&cap, &txt);
        capture_release(&cap);
        if (r < 0)
                return r;
        if (res.timed_out || res.cancelled || res.exit_code != 0) {
                free(txt.text);
                if (res.timed_out)
                        r = asprintf(ret_error, "pdftotext did not finish in time");
                else if (res.cancelled)
                        r = asprintf(ret_error, "cancelled");
                else
                        r = asprintf(ret_error, "pdftotext could not read the PDF (exit %d)",
                                     res.exit_code);
                return r < 0 ? -ENOMEM : 0;
        }
        *ret = txt.text;
        *ret_len = txt.len;
        return 0;
}

/* A page's HTML to convert in the forked copy (html_to_markdown_isolated()). */
struct html_job {
        const struct web_module *m;
        const char *html;
        size_t n;
        const char *base_url;
};

/* In the copy: the Markdown's length (8 bytes), the Markdown, then the title if any. */
static int html_job_run(int out_fd, void *userdata)
{
        const struct html_job *j = userdata;
        _cleanup_free_ char *markdown = NULL, *title = NULL;
        uint64_t len;
        int r;

        r = j->m->html_to_markdown(j->html, j->n, j->base_url, WEB_EXTRACT_MARKDOWN_MAX, &markdown,
                                   &title);
        if (r < 0)
                return r;
        len = strlen(markdown);
        if (write_all(out_fd, &len, sizeof(len)) < 0 || write_all(out_fd, markdown, len) < 0 ||
            (title && write_all(out_fd, title, strlen(title)) < 0))
                return -EPIPE;
        return 0;
}

/*
 * Convert a page's HTML in a forked copy of ptc: gumbo, the HTML parser, asserts on some
 * input (Debian's 0.10.1: "handle_in_table: Assertion ... failed", found by fuzz-html), and
 * an abort there must cost this page, not ptc with every result it holds. A page the parser
 * crashes on is an entry with an error (*ret_error); -ENOMEM and the like fail the call.
 */
static int html_to_markdown_isolated(const struct tool_ctx *ctx, struct html_job *j,
                                     char **ret_content, size_t *ret_len, char **ret_title,
                                     char **ret_error)
{
        _cleanup_free_ char *out = NULL;
        size_t out_len = 0;
        uint64_t len;
        int r, sig = 0;

        /* The title is at most 4 KiB (html-markdown.c): 64 KiB is room to spare. */
        r = fork_call(html_job_run, j, sizeof(len) + WEB_EXTRACT_MARKDOWN_MAX + 64 * 1024,
                      ctx->deadline, ctx->cancel_fd, &out, &out_len, &sig);
        switch (r) {
        case 0:
                break;
        case -ECHILD:
                return asprintf(ret_error,
                                "the page's HTML could not be converted: the HTML "
                                "parser crashed (SIG%s)",
                                sigabbrev_np(sig) ?: "?") < 0
                               ? -ENOMEM
                               : 0;
        case -ETIMEDOUT:
        case -ECANCELED:
                return asprintf(ret_error, "the page's HTML could not be converted: %s",
                                r == -ETIMEDOUT ? "out of time" : "cancelled") < 0
                               ? -ENOMEM
                               : 0;
        default:
                return r;
        }
        memcpy(&len, out, MIN(out_len, sizeof(len)));
        if (out_len < sizeof(len) || len > out_len - sizeof(len))
                return -EPROTO;
        *ret_content = strndup(out + sizeof(len), len);
        if (!*ret_content)
                return -ENOMEM;
        *ret_len = len;
        if (out_len > sizeof(len) + len) {
                *ret_title = strdup(out + sizeof(len) + len);
                if (!*ret_title)
                        return -ENOMEM;
        }
        return 0;
}

/*
 * Turn one response into its entry: url, title, content, error. Returns 0 or
 * -ENOMEM; a page that cannot be used is an entry with an error.
 */
static int entry_from_response(const struct web_module *m, const struct tool_ctx *ctx,
                               const char *requested, const struct web_response *resp,
                               size_t char_limit, json_t **ret_entry)
{
        _cleanup_free_ char *title = NULL, *content = NULL, *error = NULL;
        json_auto_t *entry = json_object();
        size_t content_len = 0;
        char mime[128];
        int r;

        if (!entry)
                return -ENOMEM;
        if (resp->error) {
                error = strdup(resp->error);
                if (!error)
                        return -ENOMEM;
        } else if (resp->status >= 400 || resp->status < 100) {
                if (asprintf(&error, "HTTP %ld", resp->status) < 0)
                        return -ENOMEM;
        } else {
                mime_type_of(resp->content_type, mime, sizeof(mime));
                switch (classify(mime, resp->body ?: "", resp->body_len)) {
                case PAGE_HTML: {
                        _cleanup_free_ char *utf8 = NULL;
                        size_t utf8_len;

                        r = charset_to_utf8(resp->body ?: "", resp->body_len, resp->content_type,
                                            true, &utf8, &utf8_len);
                        if (r < 0)
                                return r;
                        r = html_to_markdown_isolated(
                                ctx,
                                &(struct html_job){.m = m,
                                                   .html = utf8,
                                                   .n = utf8_len,
                                                   .base_url = resp->final_url ?: requested},
                                &content, &content_len, &title, &error);
                        if (r < 0)
                                return r;
                        break;
                }
                case PAGE_TEXT:
                        r = charset_to_utf8(resp->body ?: "", resp->body_len, resp->content_type,
                                            false, &content, &content_len);
                        if (r < 0)
                                return r;
                        break;
                case PAGE_PDF:
                        r = pdf_to_text(ctx, resp->body ?: "", resp->body_len, ctx->deadline,
                                        &content, &content_len, &error);
                        if (r < 0)
                                return r;
                        break;
                case PAGE_UNSUPPORTED:
                        if (asprintf(&error, "Unsupported content type: %s",
                                     mime[0] ? mime : "unknown (no Content-Type)") < 0)
                                return -ENOMEM;
                        break;
                }
        }

        if (error)
                content = mfree_str(content);
        if (content) {
                r = strip_base64_images(&content, &content_len);
                if (r < 0)
                        return r;
        }
        if (tool_json_set(entry, "url",
                          tool_json_str(resp->final_url && !error ? resp->final_url : requested)) <
                    0 ||
            tool_json_set(entry, "title", tool_json_str(title ?: "")) < 0)
                return -ENOMEM;
        if (content) {
                r = apply_char_limit(entry, &content, &content_len, char_limit, resp->truncated);
                if (r < 0)
                        return r;
        }
        if (tool_json_set(entry, "content", tool_json_string(content ?: "", content_len)) < 0 ||
            tool_json_set(entry, "error", error ? tool_json_str(error) : json_null()) < 0)
                return -ENOMEM;
        /* Keep the documented key order: truncation facts after the four fixed keys. */
        if (json_object_get(entry, "truncated")) {
                json_t *t = json_incref(json_object_get(entry, "truncated"));
                json_t *n = json_incref(json_object_get(entry, "total_chars"));

                (void) json_object_del(entry, "truncated");
                (void) json_object_del(entry, "total_chars");
                if (json_object_set_new(entry, "truncated", t) < 0 ||
                    json_object_set_new(entry, "total_chars", n) < 0)
                        return -ENOMEM;
        }
        *ret_entry = TAKE_PTR(entry);
        return 0;
}

/* A provider's entry, with the same char_limit cut and image markers as ours. */
static int finish_provider_entry(json_t *entry, size_t char_limit)
{
        json_t *c = json_object_get(entry, "content");
        _cleanup_free_ char *content = NULL;
        size_t len;
        int r;

        if (!json_is_string(c))
                return 0;
        len = json_string_length(c);
        content = malloc(len + 1);
        if (!content)
                return -ENOMEM;
        memcpy(content, json_string_value(c), len + 1);
        r = strip_base64_images(&content, &len);
        if (r < 0)
                return r;
        r = apply_char_limit(entry, &content, &len, char_limit, false);
        if (r < 0)
                return r;
        return tool_json_set(entry, "content", tool_json_string(content, len));
}

/* ------------------------------------------------------------------------------------------ */
/* The tool                                                                                    */

/* urls: a list of strings (a single string is one URL); anything else is an empty list. */
static int collect_urls(json_t *args, const char **urls, size_t *n)
{
        json_t *v = json_object_get(args, "urls");
        size_t i;
        json_t *item;

        *n = 0;
        if (json_is_string(v)) {
                urls[(*n)++] = json_string_value(v);
                return 0;
        }
        if (!json_is_array(v))
                return 0;
        json_array_foreach(v, i, item)
        {
                if (*n >= WEB_EXTRACT_URLS_MAX)
                        break;
                if (!json_is_string(item))
                        return -EINVAL;
                urls[(*n)++] = json_string_value(item);
        }
        return 0;
}

static usec_t request_timeout(const struct tool_ctx *ctx)
{
        double s = ctx->config ? ctx->config->web_timeout : 30;

        return (usec_t) (s * (double) USEC_PER_SEC);
}

static int extract_builtin(const struct web_module *m, const struct tool_ctx *ctx,
                           const char *const *urls, size_t n, size_t char_limit, json_t *results)
{
        struct web_request reqs[WEB_EXTRACT_URLS_MAX] = {};
        struct web_response resps[WEB_EXTRACT_URLS_MAX] = {};
        char *notes[WEB_EXTRACT_URLS_MAX] = {};
        int r;

        for (size_t i = 0; i < n; i++)
                reqs[i] = (struct web_request){
                        .url = urls[i],
                        .guard = true,
                        .allow_private = ctx->config && ctx->config->allow_private_urls,
                        .timeout = request_timeout(ctx),
                };
        /* Redirects are followed there, each hop judged by the policy (web-redirects.h). */
        r = web_fetch_judged(m, ctx, reqs, n, resps, notes);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_t *entry = NULL;

                r = entry_from_response(m, ctx, urls[i], &resps[i], char_limit, &entry);
                /* An allowed ask about a redirect is never silent (approval_note()). */
                if (r >= 0 && notes[i] &&
                    tool_json_set(entry, "approval", tool_json_str(notes[i])) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        r = json_array_append_new(results, entry) < 0 ? -ENOMEM : 0;
                else
                        json_decref(entry);
        }
        for (size_t i = 0; i < n; i++) {
                web_response_release(&resps[i]);
                free(notes[i]);
        }
        return r;
}

static int web_extract_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                           json_t **ret_result)
{
        json_auto_t *results = NULL;
        json_auto_t *res = NULL;
        const char *urls[WEB_EXTRACT_URLS_MAX];
        struct web_provider provider = {};
        const struct web_module *m;
        struct diag d = {};
        int64_t char_limit;
        const char *err;
        size_t n;
        int r;

        if (collect_urls(args, urls, &n) < 0)
                return tool_error_result(ret_result, "urls must be a list of URL strings");
        if (tool_arg_int(args, "char_limit", WEB_EXTRACT_CHAR_LIMIT_DEFAULT, &char_limit, &err) < 0)
                char_limit = WEB_EXTRACT_CHAR_LIMIT_DEFAULT;
        char_limit = MAX(char_limit, WEB_EXTRACT_CHAR_LIMIT_MIN);
        char_limit = MIN(char_limit, WEB_EXTRACT_CHAR_LIMIT_MAX);

        if (n == 0)
                return tool_error_result(ret_result, "Content was inaccessible or not found");

        /* Every path below fetches (and the secret guard decodes) through the web module. */
        m = web_module_get(&d);
        if (!m) {
                *ret_result = json_pack("{s:b, s:s}", "success", 0, "error", d.message);
                return *ret_result ? 0 : -ENOMEM;
        }

        for (size_t i = 0; i < n; i++) {
                r = web_url_has_secret(ctx->redactor, urls[i]);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret_result =
                                json_pack("{s:b, s:s}", "success", 0, "error", SECRET_URL_ERROR);
                        return *ret_result ? 0 : -ENOMEM;
                }
        }

        r = web_extract_provider_resolve(ctx->config, &provider, &d);
        if (r < 0) {
                *ret_result = json_pack("{s:b, s:s}", "success", 0, "error", d.message);
                return *ret_result ? 0 : -ENOMEM;
        }

        if (provider.kind != WEB_PROVIDER_NONE) {
                size_t i;
                json_t *entry;

                r = web_extract_with_provider(&provider, urls, n, request_timeout(ctx),
                                              ctx->deadline, ctx->cancel_fd, &results);
                if (r < 0)
                        return r;
                json_array_foreach(results, i, entry)
                {
                        r = finish_provider_entry(entry, (size_t) char_limit);
                        if (r < 0)
                                return r;
                }
        } else {
                results = json_array();
                if (!results)
                        return -ENOMEM;
                r = extract_builtin(m, ctx, urls, n, (size_t) char_limit, results);
                if (r < 0)
                        return r;
        }

        res = json_object();
        if (!res || json_object_set(res, "results", results) < 0)
                return -ENOMEM;
        *ret_result = TAKE_PTR(res);
        return 0;
}

const struct tool_def tool_def_web_extract = {
        .name = "web_extract",
        .description = "Fetch web pages (up to 5 URLs) and return their content as Markdown.",
        .parameters_json =
                "{\"type\": \"object\", \"properties\": {"
                "\"urls\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, "
                "\"description\": \"URLs to fetch (http or https, at most 5)\"}, "
                "\"char_limit\": {\"type\": \"integer\", \"default\": 15000, \"description\": "
                "\"Characters kept of each page; a longer page keeps its head and tail around "
                "a notice\"}}, "
                "\"required\": [\"urls\"]}",
        .returns = "Returns {\"results\": [{\"url\", \"title\", \"content\", \"error\"}]}",
        .run = web_extract_run,
        .runs_on_host = true,
};
