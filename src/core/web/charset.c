/* SPDX-License-Identifier: MIT */
#include "core/web/charset.h"

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/buf.h"
#include "basic/utf8.h"

/* The WHATWG encoding sniffing algorithm looks at this much of a document. */
#define CHARSET_META_SCAN_MAX 1024

/* Longest charset label we look at; real ones are under 20 bytes. */
#define CHARSET_LABEL_MAX 64

#define REPLACEMENT "\xEF\xBF\xBD"

/*
 * WHATWG labels (https://encoding.spec.whatwg.org/#names-and-labels) for the
 * encodings seen on the web, mapped to glibc iconv names. The web's
 * "iso-8859-1"/"ascii" is really windows-1252, "gbk"/"gb2312" is decoded as
 * GB18030, "shift_jis" as windows-31j, "euc-kr" as windows-949 and "big5" as
 * Big5-HKSCS.
 */
static const struct {
        const char *label, *iconv;
} labels[] = {
        {"utf-8", "UTF-8"},
        {"utf8", "UTF-8"},
        {"unicode-1-1-utf-8", "UTF-8"},
        {"unicode11utf8", "UTF-8"},
        {"unicode20utf8", "UTF-8"},
        {"x-unicode20utf8", "UTF-8"},
        {"utf-16", "UTF-16LE"},
        {"utf-16le", "UTF-16LE"},
        {"ucs-2", "UTF-16LE"},
        {"unicode", "UTF-16LE"},
        {"utf-16be", "UTF-16BE"},
        {"ansi_x3.4-1968", "WINDOWS-1252"},
        {"ascii", "WINDOWS-1252"},
        {"us-ascii", "WINDOWS-1252"},
        {"cp1252", "WINDOWS-1252"},
        {"cp819", "WINDOWS-1252"},
        {"csisolatin1", "WINDOWS-1252"},
        {"ibm819", "WINDOWS-1252"},
        {"iso-8859-1", "WINDOWS-1252"},
        {"iso-ir-100", "WINDOWS-1252"},
        {"iso8859-1", "WINDOWS-1252"},
        {"iso88591", "WINDOWS-1252"},
        {"iso_8859-1", "WINDOWS-1252"},
        {"iso_8859-1:1987", "WINDOWS-1252"},
        {"l1", "WINDOWS-1252"},
        {"latin1", "WINDOWS-1252"},
        {"windows-1252", "WINDOWS-1252"},
        {"x-cp1252", "WINDOWS-1252"},
        {"x-user-defined", "WINDOWS-1252"},
        {"iso-8859-9", "WINDOWS-1254"},
        {"latin5", "WINDOWS-1254"},
        {"l5", "WINDOWS-1254"},
        {"iso-8859-11", "WINDOWS-874"},
        {"tis-620", "WINDOWS-874"},
        {"windows-874", "WINDOWS-874"},
        {"windows-1250", "WINDOWS-1250"},
        {"cp1250", "WINDOWS-1250"},
        {"windows-1251", "WINDOWS-1251"},
        {"cp1251", "WINDOWS-1251"},
        {"windows-1253", "WINDOWS-1253"},
        {"windows-1254", "WINDOWS-1254"},
        {"windows-1255", "WINDOWS-1255"},
        {"windows-1256", "WINDOWS-1256"},
        {"windows-1257", "WINDOWS-1257"},
        {"windows-1258", "WINDOWS-1258"},
        {"iso-8859-2", "ISO-8859-2"},
        {"latin2", "ISO-8859-2"},
        {"iso-8859-3", "ISO-8859-3"},
        {"iso-8859-4", "ISO-8859-4"},
        {"iso-8859-5", "ISO-8859-5"},
        {"iso-8859-6", "ISO-8859-6"},
        {"iso-8859-7", "ISO-8859-7"},
        {"iso-8859-8", "ISO-8859-8"},
        {"iso-8859-8-i", "ISO-8859-8"},
        {"iso-8859-10", "ISO-8859-10"},
        {"iso-8859-13", "ISO-8859-13"},
        {"iso-8859-14", "ISO-8859-14"},
        {"iso-8859-15", "ISO-8859-15"},
        {"latin9", "ISO-8859-15"},
        {"iso-8859-16", "ISO-8859-16"},
        {"koi8-r", "KOI8-R"},
        {"koi8", "KOI8-R"},
        {"koi8-u", "KOI8-U"},
        {"macintosh", "MACINTOSH"},
        {"mac", "MACINTOSH"},
        {"gbk", "GB18030"},
        {"gb2312", "GB18030"},
        {"chinese", "GB18030"},
        {"x-gbk", "GB18030"},
        {"gb_2312-80", "GB18030"},
        {"gb18030", "GB18030"},
        {"big5", "BIG5-HKSCS"},
        {"big5-hkscs", "BIG5-HKSCS"},
        {"x-x-big5", "BIG5-HKSCS"},
        {"cn-big5", "BIG5-HKSCS"},
        {"shift_jis", "WINDOWS-31J"},
        {"shift-jis", "WINDOWS-31J"},
        {"sjis", "WINDOWS-31J"},
        {"x-sjis", "WINDOWS-31J"},
        {"ms932", "WINDOWS-31J"},
        {"ms_kanji", "WINDOWS-31J"},
        {"windows-31j", "WINDOWS-31J"},
        {"csshiftjis", "WINDOWS-31J"},
        {"euc-jp", "EUC-JP"},
        {"x-euc-jp", "EUC-JP"},
        {"iso-2022-jp", "ISO-2022-JP"},
        {"euc-kr", "CP949"},
        {"ks_c_5601-1987", "CP949"},
        {"korean", "CP949"},
        {"windows-949", "CP949"},
};

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* A label trimmed and lower-cased into @out; false when empty or too long. */
static bool normalize_label(const char *s, size_t n, char *out, size_t size)
{
        while (n > 0 && is_space(*s))
                s++, n--;
        while (n > 0 && is_space(s[n - 1]))
                n--;
        if (n == 0 || n >= size)
                return false;
        for (size_t i = 0; i < n; i++)
                out[i] = (char) tolower((unsigned char) s[i]);
        out[n] = 0;
        return true;
}

static const char *iconv_name(const char *label)
{
        for (size_t i = 0; i < ELEMENTSOF(labels); i++)
                if (strcmp(labels[i].label, label) == 0)
                        return labels[i].iconv;
        return NULL;
}

/* The value of parameter "charset" in a Content-Type-like string of @n bytes. */
static bool find_charset_param(const char *s, size_t n, const char **ret, size_t *ret_len)
{
        size_t i = 0;

        while (i + 7 <= n) {
                const char *p = s + i;
                size_t k;

                if (strncasecmp(p, "charset", 7) != 0 ||
                    (i > 0 && isalnum((unsigned char) p[-1]))) {
                        i++;
                        continue;
                }
                k = i + 7;
                while (k < n && is_space(s[k]))
                        k++;
                if (k >= n || s[k] != '=') {
                        i++;
                        continue;
                }
                k++;
                while (k < n && is_space(s[k]))
                        k++;
                if (k < n && (s[k] == '"' || s[k] == '\'')) {
                        char q = s[k++];
                        size_t e = k;

                        while (e < n && s[e] != q)
                                e++;
                        *ret = s + k;
                        *ret_len = e - k;
                } else {
                        size_t e = k;

                        while (e < n && !is_space(s[e]) && s[e] != ';' && s[e] != '"' &&
                               s[e] != '\'' && s[e] != '>')
                                e++;
                        *ret = s + k;
                        *ret_len = e - k;
                }
                return *ret_len > 0;
        }
        return false;
}

char *charset_from_content_type(const char *content_type)
{
        char label[CHARSET_LABEL_MAX];
        const char *v;
        size_t n;

        if (!content_type || !find_charset_param(content_type, strlen(content_type), &v, &n))
                return NULL;
        if (!normalize_label(v, n, label, sizeof(label)))
                return NULL;
        return strdup(label);
}

/*
 * A simplified form of the WHATWG prescan: each "<meta" in the first 1024
 * bytes, its attributes up to '>', charset=... or http-equiv=content-type
 * with content="...charset=...". Only the charset label is extracted; the
 * document itself is parsed by gumbo.
 */
static bool sniff_meta(const char *data, size_t n, char *label, size_t size)
{
        n = MIN(n, CHARSET_META_SCAN_MAX);
        for (size_t i = 0; i + 5 < n; i++) {
                const char *end, *v;
                size_t len, vl;
                bool http_equiv = false;
                const char *content = NULL;
                size_t content_len = 0;

                if (data[i] != '<' || strncasecmp(data + i + 1, "meta", 4) != 0 ||
                    !(is_space(data[i + 5]) || data[i + 5] == '/'))
                        continue;
                end = memchr(data + i, '>', n - i);
                len = end ? (size_t) (end - (data + i)) : n - i;
                /* Walk name=value pairs. */
                for (size_t k = i + 5; k < i + len;) {
                        const char *name;
                        size_t nl;

                        while (k < i + len && (is_space(data[k]) || data[k] == '/'))
                                k++;
                        name = data + k;
                        while (k < i + len && !is_space(data[k]) && data[k] != '=' &&
                               data[k] != '/')
                                k++;
                        nl = (size_t) (data + k - name);
                        while (k < i + len && is_space(data[k]))
                                k++;
                        v = NULL;
                        vl = 0;
                        if (k < i + len && data[k] == '=') {
                                k++;
                                while (k < i + len && is_space(data[k]))
                                        k++;
                                if (k < i + len && (data[k] == '"' || data[k] == '\'')) {
                                        char q = data[k++];
                                        v = data + k;
                                        while (k < i + len && data[k] != q)
                                                k++;
                                        vl = (size_t) (data + k - v);
                                        k++;
                                } else {
                                        v = data + k;
                                        while (k < i + len && !is_space(data[k]))
                                                k++;
                                        vl = (size_t) (data + k - v);
                                }
                        }
                        if (nl == 0) {
                                k++;
                                continue;
                        }
                        if (nl == 7 && strncasecmp(name, "charset", 7) == 0 && v &&
                            normalize_label(v, vl, label, size))
                                return true;
                        if (nl == 10 && strncasecmp(name, "http-equiv", 10) == 0 && v && vl == 12 &&
                            strncasecmp(v, "content-type", 12) == 0)
                                http_equiv = true;
                        if (nl == 7 && strncasecmp(name, "content", 7) == 0 && v) {
                                content = v;
                                content_len = vl;
                        }
                }
                if (http_equiv && content && find_charset_param(content, content_len, &v, &vl) &&
                    normalize_label(v, vl, label, size))
                        return true;
        }
        return false;
}

static int utf8_replace(const char *data, size_t n, char **ret, size_t *ret_len)
{
        size_t len;
        char *s = utf8_sanitize(data, n, &len, NULL);

        if (!s)
                return -ENOMEM;
        *ret = s;
        *ret_len = len;
        return 0;
}

/*
 * Convert with iconv. Bytes that do not decode become U+FFFD (one per
 * byte for single-byte charsets, per code unit for UTF-16); a truncated
 * sequence at the end becomes one U+FFFD. -EOPNOTSUPP when iconv does not
 * know @from.
 */
static int convert_iconv(const char *from, const char *data, size_t n, char **ret, size_t *ret_len)
{
        /* Every input byte yields at most 3 output bytes (U+FFFD or a BMP character per byte). */
        _cleanup_buf_ struct buf b =
                BUF_INIT(n > (SIZE_MAX - 512) / 4 ? SIZE_MAX / 2 : n * 4 + 512);
        size_t unit = strncmp(from, "UTF-16", 6) == 0 ? 2 : 1;
        iconv_t cd = iconv_open("UTF-8", from);
        char *in = (char *) data;
        size_t inleft = n;
        int r = 0;

        if (cd == (iconv_t) -1)
                return -EOPNOTSUPP;
        for (;;) {
                char *out;
                size_t outleft, rc;

                r = buf_reserve(&b, MAX((size_t) 256, inleft * 2));
                if (r < 0)
                        break;
                out = b.data + b.len;
                outleft = b.alloc - b.len - 1;
                rc = iconv(cd, inleft > 0 ? &in : NULL, &inleft, &out, &outleft);
                b.len = (size_t) (out - b.data);
                if (rc != (size_t) -1) {
                        if (inleft == 0) {
                                /* Flushed the shift state (ISO-2022-JP) too. */
                                if (iconv(cd, NULL, NULL, &out, &outleft) == (size_t) -1 &&
                                    errno == E2BIG)
                                        continue;
                                b.len = (size_t) (out - b.data);
                                break;
                        }
                        continue;
                }
                if (errno == E2BIG)
                        continue;
                if (errno == EILSEQ || errno == EINVAL) {
                        size_t skip = errno == EINVAL ? inleft : MIN(unit, inleft);

                        r = buf_append(&b, REPLACEMENT, 3);
                        if (r < 0)
                                break;
                        in += skip;
                        inleft -= skip;
                        if (inleft == 0) {
                                out = b.data + b.len;
                                outleft = b.alloc - b.len - 1;
                                if (iconv(cd, NULL, NULL, &out, &outleft) != (size_t) -1)
                                        b.len = (size_t) (out - b.data);
                                break;
                        }
                        continue;
                }
                r = -errno;
                break;
        }
        iconv_close(cd);
        if (r < 0)
                return r == -E2BIG ? -ENOMEM : r;
        if (b.data)
                b.data[b.len] = 0;
        else if (buf_append(&b, "", 0) < 0) /* allocate the empty string */
                return -ENOMEM;
        {
                size_t len;
                char *s = buf_steal(&b, &len);

                if (!s)
                        return -ENOMEM;
                /* iconv emits what it decodes; make sure nothing invalid slips through. */
                if (!utf8_is_valid(s, len)) {
                        r = utf8_replace(s, len, ret, ret_len);
                        free(s);
                        return r;
                }
                *ret = s;
                *ret_len = len;
        }
        return 0;
}

int charset_to_utf8(const char *data, size_t n, const char *content_type, bool is_html, char **ret,
                    size_t *ret_len)
{
        const unsigned char *u = (const unsigned char *) data;
        char label[CHARSET_LABEL_MAX];
        const char *enc = NULL;
        bool have_label = false, from_meta = false;
        const char *ct;
        size_t ctl;
        int r;

        if (!data)
                data = "", n = 0;
        if (n >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) {
                data += 3, n -= 3;
                enc = "UTF-8";
        } else if (n >= 2 && u[0] == 0xFF && u[1] == 0xFE) {
                data += 2, n -= 2;
                enc = "UTF-16LE";
        } else if (n >= 2 && u[0] == 0xFE && u[1] == 0xFF) {
                data += 2, n -= 2;
                enc = "UTF-16BE";
        }
        if (!enc && content_type &&
            find_charset_param(content_type, strlen(content_type), &ct, &ctl))
                have_label = normalize_label(ct, ctl, label, sizeof(label));
        if (!enc && !have_label && is_html) {
                have_label = sniff_meta(data, n, label, sizeof(label));
                from_meta = have_label;
        }
        if (!enc && have_label) {
                enc = iconv_name(label);
                /* A <meta> read as ASCII cannot truthfully declare UTF-16. */
                if (enc && from_meta && strncmp(enc, "UTF-16", 6) == 0)
                        enc = "UTF-8";
                if (!enc) {
                        /* Unknown label: what a browser does with Latin-1 labels. */
                        enc = utf8_is_valid(data, n) ? "UTF-8" : "WINDOWS-1252";
                }
        }
        if (!enc || strcmp(enc, "UTF-8") == 0)
                return utf8_replace(data, n, ret, ret_len);
        r = convert_iconv(enc, data, n, ret, ret_len);
        if (r == -EOPNOTSUPP)
                /* No gconv module for it on this system: do not lose the text. */
                return utf8_replace(data, n, ret, ret_len);
        return r;
}
