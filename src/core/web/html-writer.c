/* SPDX-License-Identifier: MIT */
/* The Markdown writer (prefixes, pending openers, escaping) and URL resolution. */

#include "core/web/html-markdown-internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "basic/utf8.h"

/* ---- the Markdown writer ---- */

void md_raw(struct md *m, const char *s, size_t n)
{
        int r;

        if (m->full || m->err || n == 0)
                return;
        r = buf_append(&m->out, s, n);
        if (r == -E2BIG) {
                size_t k = utf8_prefix_len(s, n, m->out.cap - m->out.len);

                if (buf_append(&m->out, s, k) < 0) {
                        /* Cannot fail: k bytes fit under the cap and were reserved. */
                }
                m->full = true;
        } else if (r < 0)
                m->err = r;
}

void md_str(struct md *m, const char *s)
{
        md_raw(m, s, strlen(s));
}

void md_write_prefixes(struct md *m, bool blank)
{
        size_t n = blank ? MIN(m->blank_prefix, m->nprefix) : m->nprefix;

        for (size_t i = 0; i < n; i++) {
                struct prefix *p = &m->prefixes[i];

                if (p->has_marker && !blank) {
                        md_str(m, p->marker);
                        p->has_marker = false;
                } else
                        md_str(m, p->indent);
        }
}

/* Materialise pending line breaks, prefixes, the lead, a pending space and openers. */
void md_begin_content(struct md *m)
{
        if (m->nl > 0 && m->any) {
                for (int i = 0; i < m->nl; i++) {
                        md_raw(m, "\n", 1);
                        if (i + 1 < m->nl)
                                md_write_prefixes(m, true);
                }
                m->line_empty = true;
        }
        m->nl = 0;
        if (m->line_empty) {
                md_write_prefixes(m, false);
                md_str(m, m->lead);
                m->lead[0] = 0;
                m->line_empty = false;
        } else if (m->space)
                md_raw(m, " ", 1);
        m->space = false;
        md_raw(m, m->pend, m->pend_n);
        m->pend_n = 0;
        m->blank_prefix = m->nprefix;
        m->any = true;
        m->li_fresh = false;
}

void md_break(struct md *m, int n)
{
        if (n == 0)
                return;
        if (m->inline_mode > 0) {
                m->space = true;
                return;
        }
        if (m->li_fresh)
                return;
        if (n > m->nl)
                m->nl = n;
        m->space = false;
}

bool md_pend_push(struct md *m, const char *s)
{
        size_t n = strlen(s);

        if (n > sizeof(m->pend) - m->pend_n)
                return false;
        memcpy(m->pend + m->pend_n, s, n);
        m->pend_n += n;
        return true;
}

/* Would @s, at the start of a line, be read as Markdown structure? */
static bool needs_escape(const char *s, size_t n, size_t *ret_at)
{
        size_t i = 0;

        *ret_at = 0;
        switch (s[0]) {
        case '>':
                return true;
        case '#':
                for (i = 0; i < n && s[i] == '#'; i++)
                        ;
                return i == n && n <= 6;
        case '-':
        case '+':
        case '*':
        case '=':
        case '_':
                if (n == 1)
                        return true;
                for (i = 0; i < n && s[i] == s[0]; i++)
                        ;
                return i == n && s[0] != '+';
        case '`':
        case '~':
                return n >= 3 && s[1] == s[0] && s[2] == s[0];
        default:
                break;
        }
        while (i < n && i < 10 && s[i] >= '0' && s[i] <= '9')
                i++;
        if (i > 0 && i + 1 == n && (s[i] == '.' || s[i] == ')')) {
                *ret_at = i;
                return true;
        }
        return false;
}

/* Write a run of non-space text: '|' escaped in cells, inline base64 images replaced. */
static void write_run(struct md *m, const char *s, size_t n)
{
        static const char data_img[] = "data:image/";
        const size_t dl = sizeof(data_img) - 1;
        size_t start = 0;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == '|' && m->cell_mode > 0) {
                        md_raw(m, s + start, i - start);
                        md_raw(m, "\\|", 2);
                        start = i + 1;
                } else if ((s[i] == 'd' || s[i] == 'D') && n - i > dl &&
                           strncasecmp(s + i, data_img, dl) == 0) {
                        size_t j = i + dl;
                        const char *b64;

                        while (j < n && s[j] != ';' && s[j] != ',')
                                j++;
                        b64 = s + j;
                        if (n - j < 8 || strncasecmp(b64, ";base64,", 8) != 0)
                                continue;
                        j += 8;
                        while (j < n && (isalnum((unsigned char) s[j]) || s[j] == '+' ||
                                         s[j] == '/' || s[j] == '=' || s[j] == '%'))
                                j++;
                        md_raw(m, s + start, i - start);
                        md_str(m, HTML_MARKDOWN_BASE64_IMAGE_MARKER);
                        start = j;
                        i = j - 1;
                }
        }
        md_raw(m, s + start, n - start);
}

void md_text(struct md *m, const char *s, size_t n)
{
        size_t i = 0;

        while (i < n && !m->full && !m->err) {
                size_t k = html_ws_len(s + i, n - i), j, at;
                bool line_start;

                if (k > 0) {
                        m->space = true;
                        i += k;
                        continue;
                }
                for (j = i; j < n && html_ws_len(s + j, n - j) == 0; j++)
                        ;
                line_start = (m->line_empty || (m->nl > 0 && m->any)) && m->pend_n == 0 &&
                             m->lead[0] == 0;
                md_begin_content(m);
                if (line_start && needs_escape(s + i, j - i, &at)) {
                        md_raw(m, s + i, at);
                        md_raw(m, "\\", 1);
                        i += at;
                }
                write_run(m, s + i, j - i);
                i = j;
        }
}

/* ---- URLs ---- */

static bool has_scheme(const char *s, size_t *ret_len)
{
        size_t i = 0;

        if (!isalpha((unsigned char) s[0]))
                return false;
        while (isalnum((unsigned char) s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
                i++;
        if (s[i] != ':')
                return false;
        *ret_len = i;
        return true;
}

/*
 * Copy a URL for a Markdown link destination: spaces and control characters
 * are percent-encoded (they would end the destination), and so is '|' in a
 * table cell. NULL on ENOMEM.
 */
static char *url_for_markdown(const struct md *m, const char *u)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);

        for (const char *p = u; *p; p++) {
                unsigned char c = (unsigned char) *p;
                int r;

                if (c <= ' ' || c == 0x7F || (c == '|' && m->cell_mode > 0))
                        r = buf_printf(&b, "%%%02X", c);
                else
                        r = buf_append_char(&b, (char) c);
                if (r < 0)
                        return NULL;
        }
        if (!b.data)
                return strdup("");
        return buf_steal(&b, NULL);
}

/*
 * Resolve @href for output. NULL when there is nothing to link to (empty,
 * javascript:, data:, ...) or on ENOMEM (then m->err is set).
 */
char *md_resolve_url(struct md *m, const char *href)
{
        _cleanup_free_ char *clean = NULL;
        char *curl_out = NULL, *res;
        size_t n, w = 0, sl;

        if (!href)
                return NULL;
        /* Browsers strip surrounding whitespace and drop tabs and newlines inside. */
        n = strlen(href);
        clean = malloc(n + 1);
        if (!clean) {
                m->err = -ENOMEM;
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                if (href[i] != '\t' && href[i] != '\n' && href[i] != '\r')
                        clean[w++] = href[i];
        while (w > 0 && html_is_ws((unsigned char) clean[w - 1]))
                w--;
        clean[w] = 0;
        href = clean + strspn(clean, " \f");
        if (!*href)
                return NULL;

        if (has_scheme(href, &sl)) {
                if ((sl == 10 && strncasecmp(href, "javascript", sl) == 0) ||
                    (sl == 8 && strncasecmp(href, "vbscript", sl) == 0) ||
                    (sl == 4 && strncasecmp(href, "data", sl) == 0))
                        return NULL;
                if (!((sl == 4 && strncasecmp(href, "http", 4) == 0) ||
                      (sl == 5 && strncasecmp(href, "https", 5) == 0))) {
                        res = url_for_markdown(m, href); /* mailto:, tel:, ftp:, ... as given */
                        if (!res)
                                m->err = -ENOMEM;
                        return res;
                }
        }
        if (href[0] == '#' && m->base_str) {
                /* curl 7.88 resolves "#x" against the directory, not the document. */
                _cleanup_free_ char *joined = NULL;

                if (asprintf(&joined, "%s%s", m->base_str, href) < 0) {
                        m->err = -ENOMEM;
                        return NULL;
                }
                res = url_for_markdown(m, joined);
                if (!res)
                        m->err = -ENOMEM;
                return res;
        }
        {
                CURLU *h = m->base ? curl_url_dup(m->base) : curl_url();

                if (h) {
                        if (curl_url_set(h, CURLUPART_URL, href,
                                         CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE) == CURLUE_OK) {
                                if (curl_url_get(h, CURLUPART_URL, &curl_out, 0) != CURLUE_OK)
                                        curl_out = NULL;
                        }
                        curl_url_cleanup(h);
                }
        }
        /* Unresolvable (no base, or curl refuses it): keep it as written. */
        res = url_for_markdown(m, curl_out ? curl_out : href);
        curl_free(curl_out);
        if (!res)
                m->err = -ENOMEM;
        return res;
}

int md_set_base(struct md *m, const char *url)
{
        CURLU *h = m->base ? curl_url_dup(m->base) : curl_url();
        char *s = NULL;

        if (!h)
                return -ENOMEM;
        if (curl_url_set(h, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE) !=
                    CURLUE_OK ||
            curl_url_set(h, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
            curl_url_get(h, CURLUPART_URL, &s, 0) != CURLUE_OK) {
                curl_url_cleanup(h);
                return 0; /* unusable base: keep the previous one */
        }
        free(m->base_str);
        m->base_str = strdup(s);
        curl_free(s);
        if (!m->base_str) {
                curl_url_cleanup(h);
                return -ENOMEM;
        }
        curl_url_cleanup(m->base);
        m->base = h;
        return 0;
}

/* ---- the finished output ---- */

/* Strip trailing blanks on every line, keep at most one blank line in a row, trim the ends. */
static void normalize(struct buf *b)
{
        size_t r = 0, w = 0;
        bool blank = false;

        while (r < b->len) {
                const char *nl = memchr(b->data + r, '\n', b->len - r);
                size_t e = nl ? (size_t) (nl - b->data) : b->len, len;

                len = e - r;
                while (len > 0 && (b->data[r + len - 1] == ' ' || b->data[r + len - 1] == '\t'))
                        len--;
                if (len == 0)
                        blank = true;
                else {
                        if (w > 0) {
                                b->data[w++] = '\n';
                                if (blank)
                                        b->data[w++] = '\n';
                        }
                        memmove(b->data + w, b->data + r, len);
                        w += len;
                        blank = false;
                }
                r = e + 1;
        }
        b->len = w;
        if (b->data)
                b->data[w] = 0;
}

int html_valid_utf8(char **s, size_t *len, size_t cap)
{
        char *fixed;
        size_t n;

        if (!*s || utf8_is_valid(*s, *len))
                return 0;
        fixed = utf8_sanitize(*s, *len, &n, NULL);
        if (!fixed)
                return -ENOMEM;
        n = utf8_prefix_len(fixed, n, cap);
        while (n > 0 && (fixed[n - 1] == ' ' || fixed[n - 1] == '\t'))
                n--;
        fixed[n] = '\0';
        free(*s);
        *s = fixed;
        *len = n;
        return 0;
}

int md_finish(struct buf *b)
{
        if (b->data && !utf8_is_valid(b->data, b->len)) {
                size_t n;
                _cleanup_free_ char *fixed = utf8_sanitize(b->data, b->len, &n, NULL);

                buf_reset(b);
                if (!fixed || buf_append(b, fixed, utf8_prefix_len(fixed, n, b->cap)) < 0)
                        return -ENOMEM;
        }
        normalize(b);
        return 0;
}
