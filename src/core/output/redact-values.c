/* SPDX-License-Identifier: MIT */
/*
 * Value-based redaction (docs/contracts.md 9.10): struct redactor holds the
 * secret values ptc knows about and their encoded forms (hex, base64, JSON
 * escapes); the value step, redact_text()'s first, replaces each occurrence
 * of one, as it is or URL-encoded, by "***".
 */
#include "core/output/redact-internal.h"

#include "basic/parse-util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Caps on what redactor_add_secret() accepts: far more than ptc registers (the
 * scrubbed variables and provider keys), and every value costs ~15 forms.
 */
#define REDACT_SECRETS_MAX 1024
#define REDACT_SECRET_LEN_MAX (64 * 1024)

/* Value-based lookup table: a bloom filter and hash buckets over the first 4 bytes of each form. */
#define BLOOM_BITS 16
#define N_BUCKETS (1u << 12)

struct vform {
        char *data;
        size_t len;
};

/*
 * pass_values() probes the text at every 4th offset only. That sees every
 * occurrence of a form because forms are at least VALUE_FORM_MIN bytes long
 * and are indexed by their 4-byte grams at offsets 0..3: one of the first 4
 * offsets of an occurrence is a multiple of 4, and the gram there lies
 * inside the form.
 */
#define VALUE_FORM_MIN 8
struct vgram {
        uint32_t form; /* index into forms */
        uint32_t off;  /* 0..3 */
        uint32_t next; /* 1-based index of the next gram in the same bucket, 0 = none */
};

struct vsecret {
        char *data;
        size_t len;
        uint32_t next; /* 1-based index of the next secret with the same first byte */
};

struct redactor {
        struct vsecret *secrets;
        size_t n_secrets;
        struct vform *forms;
        size_t n_forms;
        struct vgram *grams;
        size_t n_grams;
        size_t max_len; /* of the secrets */
        uint32_t first_head[256];
        uint8_t first_bits[256 / 8];
        /*
         * For url_at(): the byte pairs a URL-encoded secret can start with
         * when its first byte is not encoded: (v[0], v[1]), (v[0], '%'), and
         * (v[0], '+') for a v[1] of ' '.
         */
        uint8_t url_pairs[65536 / 8];
        uint32_t bucket_head[N_BUCKETS];
        uint8_t bloom[(1u << BLOOM_BITS) / 8];
};

static uint32_t prefix_hash(const char *p)
{
        uint32_t k;

        memcpy(&k, p, sizeof(k));
        return (k * 0x9E3779B1u) >> (32 - BLOOM_BITS);
}

int redactor_new(struct redactor **ret)
{
        struct redactor *r;
        int e;

        if (!ret)
                return -EINVAL;
        e = redact_rx_ensure();
        if (e < 0)
                return e;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

struct redactor *redactor_free(struct redactor *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_secrets; i++)
                free_wiped(r->secrets[i].data, r->secrets[i].len);
        for (size_t i = 0; i < r->n_forms; i++)
                free_wiped(r->forms[i].data, r->forms[i].len);
        free(r->secrets);
        free(r->forms);
        free(r->grams);
        explicit_wipe(r, sizeof(*r));
        free(r);
        return NULL;
}

size_t redactor_secret_count(const struct redactor *r)
{
        return r ? r->n_secrets : 0;
}

int redactor_add_secrets_of(struct redactor *r, const struct redactor *src)
{
        if (!r)
                return -EINVAL;
        for (size_t i = 0; src && i < src->n_secrets; i++) {
                int e = redactor_add_secret(r, src->secrets[i].data);

                if (e == -ENOMEM || e == -EINVAL)
                        return e;
        }
        return 0;
}

size_t redactor_max_secret_len(const struct redactor *r)
{
        return r ? r->max_len : 0;
}

/* The encoded forms of one secret, built before anything is committed to the redactor. */
struct form_set {
        struct {
                char *data;
                size_t len;
        } f[24];
        size_t n;
};

static void form_set_done(struct form_set *fs)
{
        for (size_t i = 0; i < fs->n; i++)
                free_wiped(fs->f[i].data, fs->f[i].len);
        fs->n = 0;
}

/* Take @p (malloc'ed, @n bytes); drops duplicates. */
static int form_set_take(struct form_set *fs, char *p, size_t n)
{
        if (!p)
                return -ENOMEM;
        for (size_t i = 0; i < fs->n; i++)
                if (fs->f[i].len == n && memcmp(fs->f[i].data, p, n) == 0) {
                        free_wiped(p, n);
                        return 0;
                }
        /*
         * Secrets have at least REDACT_MIN_SECRET_LEN (8) bytes, and none of
         * their forms is shorter (hex: 2n, base64: over 4n/3 - 2), so the
         * length check drops nothing; pass_values() depends on it.
         */
        if (n < VALUE_FORM_MIN || fs->n >= ELEMENTSOF(fs->f)) {
                free_wiped(p, n);
                return 0;
        }
        fs->f[fs->n].data = p;
        fs->f[fs->n].len = n;
        fs->n++;
        return 0;
}

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64 of @p; padding added when @pad. */
static char *b64_encode(const unsigned char *p, size_t n, const char *alpha, bool pad,
                        size_t *ret_len)
{
        char *o = malloc((n + 2) / 3 * 4 + 1);
        size_t j = 0, i;

        if (!o)
                return NULL;
        for (i = 0; i + 2 < n; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
                o[j++] = alpha[v >> 18 & 63];
                o[j++] = alpha[v >> 12 & 63];
                o[j++] = alpha[v >> 6 & 63];
                o[j++] = alpha[v & 63];
        }
        if (n - i == 1) {
                uint32_t v = (uint32_t) p[i] << 16;
                o[j++] = alpha[v >> 18 & 63];
                o[j++] = alpha[v >> 12 & 63];
                if (pad) {
                        o[j++] = '=';
                        o[j++] = '=';
                }
        } else if (n - i == 2) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8;
                o[j++] = alpha[v >> 18 & 63];
                o[j++] = alpha[v >> 12 & 63];
                o[j++] = alpha[v >> 6 & 63];
                if (pad)
                        o[j++] = '=';
        }
        o[j] = 0;
        *ret_len = j;
        return o;
}

/*
 * The characters of base64(X + secret) that depend on the secret alone, for a
 * prefix X of @shift (0..2) bytes: this is what a secret looks like inside a
 * longer base64 text, e.g. "Authorization: Basic base64(user:password)".
 */
static char *b64_core(const unsigned char *v, size_t n, size_t shift, const char *alpha,
                      size_t *ret_len)
{
        unsigned char *tmp = calloc(1, n + shift);
        size_t len, lead = (8 * shift + 5) / 6, full = 8 * (n + shift) / 6;
        char *e;

        if (!tmp)
                return NULL;
        memcpy(tmp + shift, v, n);
        e = b64_encode(tmp, n + shift, alpha, false, &len);
        free_wiped((char *) tmp, n + shift);
        if (!e)
                return NULL;
        memmove(e, e + lead, full - lead);
        explicit_wipe(e + (full - lead), len - (full - lead));
        *ret_len = full - lead;
        return e;
}

static char *hex_encode(const unsigned char *p, size_t n, bool upper, size_t *ret_len)
{
        const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
        char *o = malloc(2 * n + 1);

        if (!o)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                o[2 * i] = digits[p[i] >> 4];
                o[2 * i + 1] = digits[p[i] & 15];
        }
        o[2 * n] = 0;
        *ret_len = 2 * n;
        return o;
}

static int json_esc_u(struct buf *b, uint32_t u, bool upper)
{
        return buf_printf(b, upper ? "\\u%04X" : "\\u%04x", (unsigned) u);
}

/*
 * The secret as a JSON string body: @ascii like Python's json.dumps()
 * (non-ASCII as \uXXXX, surrogate pairs), otherwise like jansson (UTF-8 kept).
 * NULL with *ret_len = 0 when not applicable (invalid UTF-8).
 */
static char *json_escape(const char *v, size_t n, bool ascii, size_t *ret_len)
{
        _cleanup_buf_ struct buf b = BUF_INIT(12 * n + 16);
        size_t i = 0;
        int r = 0;

        *ret_len = 0;
        while (i < n && r >= 0) {
                uint32_t cp;
                size_t l = decode_cp(v + i, n - i, &cp);

                if (l == 0)
                        return NULL;
                if (cp == '"')
                        r = put_str(&b, "\\\"");
                else if (cp == '\\')
                        r = put_str(&b, "\\\\");
                else if (cp == '\n')
                        r = put_str(&b, "\\n");
                else if (cp == '\r')
                        r = put_str(&b, "\\r");
                else if (cp == '\t')
                        r = put_str(&b, "\\t");
                else if (cp == '\b')
                        r = put_str(&b, "\\b");
                else if (cp == '\f')
                        r = put_str(&b, "\\f");
                else if (cp < 0x20)
                        r = json_esc_u(&b, cp, !ascii);
                else if (cp < 0x80 || !ascii)
                        r = put(&b, v + i, l);
                else if (cp < 0x10000)
                        r = json_esc_u(&b, cp, false);
                else {
                        r = json_esc_u(&b, 0xD800 + ((cp - 0x10000) >> 10), false);
                        if (r >= 0)
                                r = json_esc_u(&b, 0xDC00 + ((cp - 0x10000) & 0x3FF), false);
                }
                i += l;
        }
        if (r < 0) {
                explicit_wipe(b.data, b.len);
                *ret_len = SIZE_MAX; /* distinguishes ENOMEM from "not applicable" */
                return NULL;
        }
        return buf_steal(&b, ret_len);
}

static int build_forms(struct form_set *fs, const char *v, size_t n)
{
        const unsigned char *u = (const unsigned char *) v;
        static const char *const alphas[] = {b64_std, b64_url};
        size_t len;
        char *p;
        int r;

        r = form_set_take(fs, strndup(v, n), n);
        for (size_t upper = 0; r >= 0 && upper < 2; upper++) {
                p = hex_encode(u, n, upper, &len);
                r = form_set_take(fs, p, len);
        }
        for (size_t a = 0; r >= 0 && a < ELEMENTSOF(alphas); a++) {
                for (size_t pad = 0; r >= 0 && pad < 2; pad++) {
                        p = b64_encode(u, n, alphas[a], pad, &len);
                        r = form_set_take(fs, p, len);
                }
                for (size_t shift = 0; r >= 0 && shift < 3; shift++) {
                        p = b64_core(u, n, shift, alphas[a], &len);
                        r = form_set_take(fs, p, len);
                }
        }
        for (size_t ascii = 0; r >= 0 && ascii < 2; ascii++) {
                p = json_escape(v, n, ascii, &len);
                if (p)
                        r = form_set_take(fs, p, len);
                else if (len == SIZE_MAX)
                        r = -ENOMEM;
        }
        return r;
}

int redactor_add_secret(struct redactor *r, const char *value)
{
        struct form_set fs = {.n = 0};
        struct vsecret *ns;
        struct vform *nf;
        struct vgram *ng;
        size_t n;
        char *copy;
        int e;

        if (!r || !value)
                return -EINVAL;
        n = strnlen(value, REDACT_SECRET_LEN_MAX + 1);
        if (n < REDACT_MIN_SECRET_LEN)
                return 0;
        if (n > REDACT_SECRET_LEN_MAX || r->n_secrets >= REDACT_SECRETS_MAX)
                return -E2BIG;
        for (size_t i = 0; i < r->n_secrets; i++)
                if (r->secrets[i].len == n && memcmp(r->secrets[i].data, value, n) == 0)
                        return 0;

        e = build_forms(&fs, value, n);
        if (e < 0)
                goto out_forms;
        copy = strndup(value, n);
        if (!copy) {
                e = -ENOMEM;
                goto out_forms;
        }
        ns = realloc(r->secrets, (r->n_secrets + 1) * sizeof(*ns));
        if (!ns) {
                free_wiped(copy, n);
                e = -ENOMEM;
                goto out_forms;
        }
        r->secrets = ns;
        nf = realloc(r->forms, (r->n_forms + fs.n) * sizeof(*nf));
        if (!nf) {
                free_wiped(copy, n);
                e = -ENOMEM;
                goto out_forms;
        }
        r->forms = nf;
        ng = realloc(r->grams, (r->n_grams + 4 * fs.n) * sizeof(*ng));
        if (!ng) {
                free_wiped(copy, n);
                e = -ENOMEM;
                goto out_forms;
        }
        r->grams = ng;

        /* Commit: nothing below can fail. */
        ns[r->n_secrets] = (struct vsecret){.data = copy, .len = n};
        ns[r->n_secrets].next = r->first_head[(unsigned char) copy[0]];
        r->first_head[(unsigned char) copy[0]] = (uint32_t) ++r->n_secrets;
        r->first_bits[(unsigned char) copy[0] >> 3] |= 1u << ((unsigned char) copy[0] & 7);

        r->max_len = MAX(r->max_len, n);
        for (size_t k = 0; k < 3; k++) {
                static const char second[] = {0, '%', '+'};
                unsigned pair = (unsigned char) copy[0] |
                                (unsigned) (unsigned char) (k == 0 ? copy[1] : second[k]) << 8;

                if (k < 2 || copy[1] == ' ')
                        r->url_pairs[pair >> 3] |= (uint8_t) (1u << (pair & 7));
        }

        for (size_t i = 0; i < fs.n; i++) {
                nf[r->n_forms] = (struct vform){.data = fs.f[i].data, .len = fs.f[i].len};
                for (uint32_t off = 0; off < 4; off++) {
                        uint32_t h = prefix_hash(fs.f[i].data + off);

                        ng[r->n_grams] = (struct vgram){
                                .form = (uint32_t) r->n_forms,
                                .off = off,
                                .next = r->bucket_head[h % N_BUCKETS],
                        };
                        r->bucket_head[h % N_BUCKETS] = (uint32_t) ++r->n_grams;
                        r->bloom[h >> 3] |= 1u << (h & 7);
                }
                r->n_forms++;
        }
        fs.n = 0;
        return 0;

out_forms:
        form_set_done(&fs);
        return e;
}

/*
 * best[j]: the longest literal form (raw, hex, base64, JSON-escaped) at
 * offset k - 3 + j, for the forms whose gram at @k is theirs (see struct vgram).
 */
static void literal_probe(const struct redactor *r, const char *s, size_t n, size_t k,
                          size_t best[4])
{
        uint32_t h;

        if (n - k < 4)
                return;
        h = prefix_hash(s + k);
        if (!(r->bloom[h >> 3] & (1u << (h & 7))))
                return;
        for (uint32_t g = r->bucket_head[h % N_BUCKETS]; g; g = r->grams[g - 1].next) {
                const struct vgram *e = &r->grams[g - 1];
                const struct vform *f = &r->forms[e->form];
                size_t i;

                if (e->off > k)
                        continue;
                i = k - e->off;
                if (f->len > best[3 - e->off] && f->len <= n - i &&
                    memcmp(s + i, f->data, f->len) == 0)
                        best[3 - e->off] = f->len;
        }
}

/*
 * Length of the text at @t that URL-decodes to @v: each byte either as itself,
 * as %XX (either hex case) or, for a space, as '+'. 0 when it does not.
 */
static size_t url_match(const char *t, size_t m, const char *v, size_t vl)
{
        size_t j = 0;

        for (size_t k = 0; k < vl; k++) {
                int hi, lo;

                if (j >= m)
                        return 0;
                if (t[j] == '%' && m - j >= 3 && (hi = unhexchar(t[j + 1])) >= 0 &&
                    (lo = unhexchar(t[j + 2])) >= 0 && (char) (hi << 4 | lo) == v[k])
                        j += 3;
                else if (t[j] == v[k] || (t[j] == '+' && v[k] == ' '))
                        j++;
                else
                        return 0;
        }
        return j;
}

static size_t url_at(const struct redactor *r, const char *s, size_t n, size_t i)
{
        unsigned char cand[3];
        size_t nc = 0, best = 0;
        int hi, lo;

        if (s[i] != '%' && s[i] != '+') {
                unsigned pair;

                /* Every secret byte takes at least one byte of text. */
                if (n - i < REDACT_MIN_SECRET_LEN)
                        return 0;
                pair = (unsigned char) s[i] | (unsigned) (unsigned char) s[i + 1] << 8;
                if (!(r->url_pairs[pair >> 3] & (1u << (pair & 7))))
                        return 0;
        }
        cand[nc++] = (unsigned char) s[i];
        if (s[i] == '%' && n - i >= 3 && (hi = unhexchar(s[i + 1])) >= 0 &&
            (lo = unhexchar(s[i + 2])) >= 0)
                cand[nc++] = (unsigned char) (hi << 4 | lo);
        if (s[i] == '+')
                cand[nc++] = ' ';
        for (size_t c = 0; c < nc; c++) {
                if (!(r->first_bits[cand[c] >> 3] & (1u << (cand[c] & 7))))
                        continue;
                for (uint32_t k = r->first_head[cand[c]]; k; k = r->secrets[k - 1].next)
                        best = MAX(best, url_match(s + i, n - i, r->secrets[k - 1].data,
                                                   r->secrets[k - 1].len));
        }
        return best;
}

/*
 * Replace every occurrence of a secret or one of its forms by "***".
 * Occurrences are collected at every offset and overlapping ones merged, so
 * secrets that contain or overlap each other leave nothing of either behind
 * (stronger than replacing longest values first).
 */
static size_t next_byte(const char *s, size_t n, size_t i, char c)
{
        const char *p = memchr(s + i, c, n - i);

        return p ? (size_t) (p - s) : SIZE_MAX;
}

int redact_pass_values(const struct redactor *r, struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, last = 0, cs = 0, ce = 0, pct = 0, plus = 0;
        bool open = false, url;
        int e;

        if (!r || r->n_secrets == 0 || n < REDACT_MIN_SECRET_LEN)
                return 0;
        /*
         * A URL-encoded occurrence that is not also a raw one holds a '%' or
         * '+', and the bytes before the first of them are raw secret bytes:
         * it starts less than max_len bytes before one. pct and plus: the
         * next '%' and '+' at or after the offset (SIZE_MAX: none).
         */
        url = has_char(s, n, '%') || has_char(s, n, '+');

        for (size_t k = 0; k < n + 3; k += 4) {
                size_t best[4] = {0, 0, 0, 0};

                if (k < n)
                        literal_probe(r, s, n, k, best);
                if ((best[0] | best[1] | best[2] | best[3]) == 0 &&
                    (!url || MIN(pct, plus) > k + r->max_len))
                        continue;
                for (size_t j = 0; j < 4; j++) {
                        size_t i = k + j - 3, m = best[j];

                        if (k + j < 3)
                                continue;
                        if (i >= n)
                                break;
                        if (url) {
                                if (pct < i)
                                        pct = next_byte(s, n, i, '%');
                                if (plus < i)
                                        plus = next_byte(s, n, i, '+');
                                if (MIN(pct, plus) - i < r->max_len)
                                        m = MAX(m, url_at(r, s, n, i));
                        }
                        if (m == 0)
                                continue;
                        if (open && i < ce) {
                                ce = MAX(ce, i + m);
                                continue;
                        }
                        if (open) {
                                e = put(io->out, s + last, cs - last);
                                if (e >= 0)
                                        e = put_str(io->out, "***");
                                if (e < 0)
                                        return e;
                                last = ce;
                        }
                        open = true;
                        cs = i;
                        ce = i + m;
                }
        }
        if (!open)
                return 0;
        e = put(io->out, s + last, cs - last);
        if (e >= 0)
                e = put_str(io->out, "***");
        if (e >= 0)
                e = put(io->out, s + ce, n - ce);
        if (e < 0)
                return e;
        io->changed = true;
        return 0;
}
