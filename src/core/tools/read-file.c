/* SPDX-License-Identifier: MIT */
/*
 * read_file (docs/seed.md 2.1): numbered lines of a text file.
 *
 * The seed shells out to wc, head and sed; we read the file directly but
 * keep what that pipeline produced: "%6d|text" lines joined by "\n", an
 * extra empty numbered line when the last printed line ended in a newline,
 * total_lines as the newline count. Unlike the seed there is no dedup stub
 * and no repeated-read guard (docs/contracts.md 9.6): a script may read
 * the same file as often as it likes.
 *
 * Memory stays bounded whatever the file: only the requested lines are kept
 * (each cut to a few kilobytes), the rest of the file is only scanned for
 * newlines in 64 KiB blocks.
 */

#include "core/tools/tool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/fs/file-safety.h"
#include "core/output/capture.h"
#include "core/output/redact.h"
#include "core/tools/tool-chase.h"
#include "core/tools/tool-util.h"

#define DEFAULT_OFFSET 1
#define DEFAULT_LIMIT 500
#define MAX_LIMIT 2000
/* Characters per line before "... [truncated]" (tool_output.max_line_length). */
#define MAX_LINE_CHARS 2000
/*
 * Bytes of one line kept: more than 4 * MAX_LINE_CHARS, so the first
 * MAX_LINE_CHARS characters always decode from what we kept.
 */
#define LINE_KEEP_BYTES (4 * MAX_LINE_CHARS + 200)
/* The seed's file_read_max_chars. */
#define MAX_READ_CHARS 100000
/* The seed's large-file nudge threshold. */
#define LARGE_FILE_HINT_BYTES 512000
/* Binary sniff: this many leading bytes, binary when more than 30% are control characters. */
#define SNIFF_BYTES 1000
#define READ_BLOCK (64 * 1024)
/* Check the deadline and the cancel fd once per this many blocks (16 MiB). */
#define CHECK_EVERY_BLOCKS 256
/* Content buffer cap: MAX_READ_CHARS characters of up to 4 bytes, plus one line. */
#define CONTENT_CAP (4 * MAX_READ_CHARS + 4 * LINE_KEEP_BYTES)

/* Not-found suggestions: the first entries of the parent as `ls -1 | head -50` lists them. */
#define SIMILAR_LIST_MAX 50
#define SIMILAR_RESULT_MAX 5
#define SIMILAR_SCAN_MAX 100000
#define NAME_CHARS_MAX 1024

#define TRUNCATED_SUFFIX "... [truncated]"
#define TRUNCATED_SUFFIX_CHARS 15

#define BINARY_MESSAGE \
        "Binary file - cannot display as text. Use appropriate tools to handle this file type."

struct reader {
        int64_t offset, end; /* 1-based, inclusive */
        int64_t line_no;     /* line being read */
        uint64_t newlines;
        /* the line being collected (only inside the range) */
        char *line;
        size_t line_len;
        bool line_over;
        /* output */
        struct buf content;
        uint64_t content_chars; /* characters of the joined content, even past the buffer */
        int64_t printed;
        bool last_had_nl;
};

/* Python's int() of a tool argument, falling back to @def as the seed's _coerce_int. */
static int64_t coerce_int(json_t *args, const char *key, int64_t def)
{
        json_t *v = json_object_get(args, key);
        int64_t i;

        if (!v || json_is_null(v))
                return def;
        if (json_is_boolean(v))
                return json_is_true(v) ? 1 : 0;
        if (json_is_real(v)) {
                double d = json_real_value(v);

                if (d != d || d > 9.2e18 || d < -9.2e18)
                        return def;
                return (int64_t) d; /* int(3.7) == 3 */
        }
        if (tool_arg_int(args, key, def, &i, NULL) < 0)
                return def;
        return i;
}

/* Result in the shape of the seed's ReadResult.to_dict() for file-level failures. */
static int read_result_error(const char *error, int64_t file_size, bool is_binary, json_t *similar,
                             json_t **ret)
{
        json_auto_t *o = json_object();

        if (!o)
                return -ENOMEM;
        if (tool_json_set(o, "content", json_string("")) < 0 ||
            tool_json_set(o, "total_lines", json_integer(0)) < 0 ||
            tool_json_set(o, "file_size", json_integer(file_size)) < 0 ||
            tool_json_set(o, "truncated", json_false()) < 0 ||
            tool_json_set(o, "is_binary", json_boolean(is_binary)) < 0 ||
            tool_json_set(o, "is_image", json_false()) < 0 ||
            tool_json_set(o, "error", tool_json_str(error)) < 0)
                return -ENOMEM;
        if (similar && json_array_size(similar) > 0 &&
            json_object_set(o, "similar_files", similar) < 0)
                return -ENOMEM;
        *ret = json_incref(o);
        return 0;
}

static void ascii_lower(char *s)
{
        for (; *s; s++)
                if (*s >= 'A' && *s <= 'Z')
                        *s = (char) (*s - 'A' + 'a');
}

/* Code points of @s (invalid bytes count one each, as surrogate escapes). */
static size_t decode_chars(const char *s, uint32_t *out, size_t max)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s), i = 0, o = 0;

        while (i < n && o < max) {
                size_t k = utf8_valid_seq_len(p + i, n - i);
                uint32_t c;

                if (k == 0) {
                        out[o++] = 0xDC00u + p[i++];
                        continue;
                }
                if (k == 1)
                        c = p[i];
                else if (k == 2)
                        c = ((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
                else if (k == 3)
                        c = ((p[i] & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
                else
                        c = ((p[i] & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) |
                            ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu);
                out[o++] = c;
                i += k;
        }
        return o;
}

/* len(set(a) & set(b)) */
static size_t common_chars(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
        size_t n = 0;

        for (size_t i = 0; i < na; i++) {
                bool seen = false, in_b = false;

                for (size_t j = 0; j < i && !seen; j++)
                        seen = a[j] == a[i];
                if (seen)
                        continue;
                for (size_t j = 0; j < nb && !in_b; j++)
                        in_b = b[j] == a[i];
                if (in_b)
                        n++;
        }
        return n;
}

/* Python's os.path.splitext on a base name: the extension's start, or NULL. */
static const char *splitext(const char *name)
{
        const char *dot = strrchr(name, '.');

        if (!dot)
                return NULL;
        for (const char *p = name; p < dot; p++)
                if (*p != '.')
                        return dot;
        return NULL;
}

static bool startswith(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The seed's _suggest_similar_files() scoring of one directory entry. */
static int similar_score(const char *query_lower, const char *f)
{
        _cleanup_free_ char *lf = strdup(f), *q_stem = NULL, *f_stem = NULL;
        const char *q_ext, *f_ext;

        if (!lf)
                return -ENOMEM;
        ascii_lower(lf);

        q_ext = splitext(query_lower);
        f_ext = splitext(lf);
        q_stem = q_ext ? strndup(query_lower, (size_t) (q_ext - query_lower)) : strdup(query_lower);
        f_stem = f_ext ? strndup(lf, (size_t) (f_ext - lf)) : strdup(lf);
        if (!q_stem || !f_stem)
                return -ENOMEM;

        if (strcmp(lf, query_lower) == 0)
                return 100;
        if (strcmp(f_stem, q_stem) == 0)
                return 90;
        if (startswith(lf, query_lower) || startswith(query_lower, lf))
                return 70;
        if (strstr(lf, query_lower))
                return 60;
        {
                uint32_t a[NAME_CHARS_MAX], b[NAME_CHARS_MAX];
                size_t na = decode_chars(query_lower, a, ELEMENTSOF(a));
                size_t nb = decode_chars(lf, b, ELEMENTSOF(b));

                if (strstr(query_lower, lf) && nb > 2)
                        return 40;
                if (q_ext && f_ext && strcmp(q_ext, f_ext) == 0 &&
                    (double) common_chars(a, na, b, nb) >= (double) MAX(na, nb) * 0.4)
                        return 30;
        }
        return 0;
}

struct name_list {
        char *v[SIMILAR_LIST_MAX];
        size_t n;
};

static void name_list_release(struct name_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        l->n = 0;
}

/*
 * The first SIMILAR_LIST_MAX visible names of @dir in byte order, as `ls -1 | head -50`
 * in the C locale. An unreadable directory gives none.
 */
static int list_first_names(const struct tool_ctx *ctx, const char *dir, struct name_list *l)
{
        _cleanup_fs_chased_ struct fs_chased c = FS_CHASED_INIT;
        json_auto_t *refused = NULL;
        struct dirent *de;
        size_t scanned = 0;
        DIR *d;
        int r, fd;

        /* The directory is judged like the file: no names from a directory a rule denies. */
        r = tool_chase(ctx, "read_file", dir, 0, NULL, &c, &refused);
        if (r == -ENOMEM)
                return r;
        if (r != 0)
                return 0;
        fd = fs_chased_open(&c, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return 0;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return 0;
        }
        while ((de = readdir(d)) && scanned++ < SIMILAR_SCAN_MAX) {
                size_t pos;
                char *copy;

                if (de->d_name[0] == '.')
                        continue;
                /* Insertion into the sorted window of the smallest names. */
                pos = l->n;
                while (pos > 0 && strcmp(l->v[pos - 1], de->d_name) > 0)
                        pos--;
                if (pos >= SIMILAR_LIST_MAX)
                        continue;
                copy = strdup(de->d_name);
                if (!copy) {
                        closedir(d);
                        return -ENOMEM;
                }
                if (l->n == SIMILAR_LIST_MAX)
                        free(l->v[--l->n]);
                memmove(l->v + pos + 1, l->v + pos, (l->n - pos) * sizeof(*l->v));
                l->v[pos] = copy;
                l->n++;
        }
        closedir(d);
        return 0;
}

/* The not-found result with similar_files for @shown (the path as the seed prints it). */
static int not_found(const struct tool_ctx *ctx, const char *shown, json_t **ret)
{
        _cleanup_free_ char *dir_shown = NULL, *dir_abs = NULL, *query = NULL, *msg = NULL;
        _cleanup_(name_list_release) struct name_list names = {};
        json_auto_t *similar = json_array();
        const char *slash = strrchr(shown, '/');
        int scores[SIMILAR_LIST_MAX];
        size_t taken = 0, dl;
        int r;

        if (!similar)
                return -ENOMEM;

        /* posixpath.dirname / basename */
        if (slash) {
                size_t l = (size_t) (slash - shown) + 1;
                bool all_slashes = true;

                for (size_t i = 0; i < l; i++)
                        all_slashes = all_slashes && shown[i] == '/';
                if (!all_slashes)
                        while (l > 0 && shown[l - 1] == '/')
                                l--;
                dir_shown = strndup(shown, l);
                query = strdup(slash + 1);
        } else {
                dir_shown = strdup(".");
                query = strdup(shown);
        }
        if (!dir_shown || !query)
                return -ENOMEM;
        ascii_lower(query);
        dl = strlen(dir_shown);

        dir_abs = tool_resolve_path(ctx, dir_shown);
        if (!dir_abs)
                return -ENOMEM;
        r = list_first_names(ctx, dir_abs, &names);
        if (r < 0)
                return r;

        for (size_t i = 0; i < names.n; i++) {
                scores[i] = similar_score(query, names.v[i]);
                if (scores[i] < 0)
                        return scores[i];
        }
        /* Best first; equal scores keep listing order (Python's sort is stable). */
        for (int s = 100; s > 0 && taken < SIMILAR_RESULT_MAX; s--)
                for (size_t i = 0; i < names.n && taken < SIMILAR_RESULT_MAX; i++) {
                        _cleanup_free_ char *j = NULL;

                        if (scores[i] != s)
                                continue;
                        if (asprintf(&j, "%s%s%s", dir_shown,
                                     dl > 0 && dir_shown[dl - 1] == '/' ? "" : "/",
                                     names.v[i]) < 0) {
                                j = NULL;
                                return -ENOMEM;
                        }
                        if (json_array_append_new(similar, tool_json_str(j)) < 0)
                                return -ENOMEM;
                        taken++;
                }

        if (asprintf(&msg, "File not found: %s", shown) < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        return read_result_error(msg, 0, false, similar, ret);
}

static unsigned digits_of(int64_t v)
{
        unsigned d = 1;

        if (v < 0)
                return 20;
        while (v >= 10) {
                v /= 10;
                d++;
        }
        return d;
}

/* "%6d|" without printf: this runs once per line of every read. */
static int append_number(struct buf *b, int64_t number)
{
        char tmp[32];
        size_t k = sizeof(tmp);
        uint64_t v = number < 0 ? 0 : (uint64_t) number;

        tmp[--k] = '|';
        do {
                tmp[--k] = (char) ('0' + v % 10);
                v /= 10;
        } while (v);
        while (sizeof(tmp) - k < 7)
                tmp[--k] = ' ';
        return buf_append(b, tmp + k, sizeof(tmp) - k);
}

/* Append one numbered element ("%6d|text") to the content. */
static int emit_line(struct reader *rd, int64_t number, const char *bytes, size_t n, bool over)
{
        _cleanup_free_ char *text = NULL;
        size_t len, chars, cut;
        bool truncated, sep;
        int r;

        if (!over && n <= MAX_LINE_CHARS && utf8_is_valid(bytes, n)) {
                /* The common case: valid and short, so no copy and no cut. */
                len = cut = n;
                chars = utf8_count_chars(bytes, n);
                truncated = false;
        } else {
                text = utf8_sanitize(bytes, n, &len, &chars);
                if (!text)
                        return -ENOMEM;
                bytes = text;
                truncated = over || chars > MAX_LINE_CHARS;
                cut = len;
        }
        if (truncated) {
                size_t c = 0, i = 0;

                while (i < len && c < MAX_LINE_CHARS) {
                        i++;
                        while (i < len && ((unsigned char) bytes[i] & 0xC0) == 0x80)
                                i++;
                        c++;
                }
                cut = i;
                chars = MAX_LINE_CHARS + TRUNCATED_SUFFIX_CHARS;
        }

        sep = rd->printed > 0;
        rd->content_chars += (sep ? 1 : 0) + MAX(6u, digits_of(number)) + 1 + chars;
        rd->printed++;

        /* Past the character guard the result is an error anyway: count, do not keep. */
        if (rd->content_chars > MAX_READ_CHARS)
                return 0;
        if (sep) {
                r = buf_append_char(&rd->content, '\n');
                if (r < 0)
                        return r;
        }
        r = append_number(&rd->content, number);
        if (r < 0)
                return r;
        r = buf_append(&rd->content, bytes, cut);
        if (r < 0)
                return r;
        if (truncated)
                r = buf_append_str(&rd->content, TRUNCATED_SUFFIX);
        return r;
}

static void line_add(struct reader *rd, const char *p, size_t n)
{
        size_t room = LINE_KEEP_BYTES - rd->line_len;

        if (n > room) {
                rd->line_over = true;
                n = room;
        }
        memcpy(rd->line + rd->line_len, p, n);
        rd->line_len += n;
}

/* Feed a block of the file. */
static int reader_feed(struct reader *rd, const char *p, size_t n)
{
        while (n > 0) {
                const char *nl;
                size_t k;
                int r;

                if (rd->line_no > rd->end) {
                        /* Past the range: only count. */
                        for (const char *q = p; (q = memchr(q, '\n', (size_t) (p + n - q))); q++)
                                rd->newlines++;
                        return 0;
                }

                nl = memchr(p, '\n', n);
                k = nl ? (size_t) (nl - p) : n;
                if (rd->line_no >= rd->offset)
                        line_add(rd, p, k);
                if (!nl)
                        return 0;

                if (rd->line_no >= rd->offset) {
                        r = emit_line(rd, rd->line_no, rd->line, rd->line_len, rd->line_over);
                        if (r < 0)
                                return r;
                        rd->last_had_nl = true;
                }
                rd->line_len = 0;
                rd->line_over = false;
                rd->line_no++;
                rd->newlines++;
                p += k + 1;
                n -= k + 1;
        }
        return 0;
}

static int reader_finish(struct reader *rd)
{
        int r;

        /* A last line without newline, inside the range: sed prints it without one. */
        if (rd->line_no >= rd->offset && rd->line_no <= rd->end &&
            (rd->line_len > 0 || rd->line_over)) {
                r = emit_line(rd, rd->line_no, rd->line, rd->line_len, rd->line_over);
                if (r < 0)
                        return r;
                rd->last_had_nl = false;
        }
        /* "…\n".split("\n") ends in an empty element, and "" splits into one. */
        if (rd->printed == 0 || rd->last_had_nl)
                return emit_line(rd, rd->offset + rd->printed, "", 0, false);
        return 0;
}

static bool interrupted(const struct tool_ctx *ctx)
{
        if (ctx->deadline != USEC_INFINITY && now_usec() >= ctx->deadline)
                return true;
        return fd_readable_now(ctx->cancel_fd);
}

static bool sample_is_binary(const char *p, size_t n)
{
        _cleanup_free_ char *s = NULL;
        size_t len, chars, ctrl = 0;

        if (n == 0)
                return false;
        s = utf8_sanitize(p, n, &len, &chars);
        if (!s || chars == 0)
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];

                if (c < 32 && c != '\n' && c != '\r' && c != '\t')
                        ctrl++;
        }
        return (double) ctrl / (double) MIN(chars, (size_t) SNIFF_BYTES) > 0.30;
}

/* Up to @n bytes from the start: fewer at EOF, or once @size bytes (when not 0) are in. */
static ssize_t pread_full(int fd, char *p, size_t n, size_t size)
{
        size_t got = 0;

        while (got < n && (size == 0 || got < size)) {
                ssize_t k = pread(fd, p + got, n - got, (off_t) got);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                got += (size_t) k;
        }
        return (ssize_t) got;
}

/* The result for a read(2) that failed with -@error, as the seed words it. */
static int read_failed(int error, json_t **ret)
{
        _cleanup_free_ char *msg = NULL;

        if (asprintf(&msg, "Failed to read file: %s", strerror(-error)) < 0)
                return -ENOMEM;
        return read_result_error(msg, 0, false, NULL, ret);
}

/* Devices, FIFOs and sockets: reading them would block or never end. */
static int device_error(const char *path, json_t **ret)
{
        *ret = tool_error_new("Cannot read '%s': this is a device file that would block or "
                              "produce infinite output.",
                              path);
        return *ret ? 0 : -ENOMEM;
}

static int add_success_fields(json_t *o, const char *content, size_t content_len,
                              uint64_t total_lines, int64_t file_size, int64_t offset, int64_t end,
                              int64_t limit)
{
        bool truncated = total_lines > (uint64_t) end;
        char hint[256];

        if (tool_json_set(o, "content", tool_json_string(content, content_len)) < 0 ||
            tool_json_set(o, "total_lines", json_integer((json_int_t) total_lines)) < 0 ||
            tool_json_set(o, "file_size", json_integer(file_size)) < 0 ||
            tool_json_set(o, "truncated", json_boolean(truncated)) < 0)
                return -ENOMEM;
        if (truncated) {
                (void) snprintf(hint, sizeof(hint),
                                "Use offset=%" PRId64 " to continue reading (showing %" PRId64
                                "-%" PRId64 " of %" PRIu64 " lines)",
                                end + 1, offset, end, total_lines);
                if (tool_json_set(o, "hint", json_string(hint)) < 0)
                        return -ENOMEM;
        }
        if (tool_json_set(o, "is_binary", json_false()) < 0 ||
            tool_json_set(o, "is_image", json_false()) < 0)
                return -ENOMEM;
        if (file_size > LARGE_FILE_HINT_BYTES && limit > 200 && truncated) {
                char num[32];

                (void) snprintf(hint, sizeof(hint),
                                "This file is large (%s bytes). Consider reading only the section "
                                "you need with offset and limit to keep context usage efficient.",
                                format_thousands((uint64_t) file_size, num, sizeof(num)));
                if (tool_json_set(o, "_hint", json_string(hint)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int read_file_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                         json_t **ret_result)
{
        _cleanup_free_ char *shown = NULL, *abs = NULL, *resolved = NULL, *block = NULL;
        _cleanup_free_ char *line = NULL, *redacted = NULL, *path_bytes = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_fs_chased_ struct fs_chased chased = FS_CHASED_INIT;
        json_auto_t *refused = NULL;
        struct reader rd = {};
        json_auto_t *res = NULL;
        json_t *pv;
        const char *path;
        int64_t offset, limit;
        struct stat st;
        ssize_t ns;
        off_t pos = 0;
        unsigned blocks = 0;
        int r, open_errno;

        pv = json_is_object(args) ? json_object_get(args, "path") : NULL;
        if (pv && !json_is_null(pv) && !json_is_string(pv)) {
                *ret_result = tool_error_new("read_file: 'path' must be a string, got %s.",
                                             tool_json_type_name(pv));
                return *ret_result ? 0 : -ENOMEM;
        }
        path = pv && json_is_string(pv) ? json_string_value(pv) : NULL;
        if (!path || !*path) {
                *ret_result = tool_error_new("read_file: missing required field 'path'.");
                return *ret_result ? 0 : -ENOMEM;
        }
        /* The file name's bytes: escapes of bytes that are not UTF-8 (docs/protocol.md) undone. */
        r = utf8_unescape_bytes(path, strlen(path), &path_bytes, NULL);
        if (r < 0)
                return r;
        path = path_bytes;

        offset = MAX(coerce_int(args, "offset", DEFAULT_OFFSET), (int64_t) 1);
        limit = coerce_int(args, "limit", DEFAULT_LIMIT);
        limit = MAX(MIN(limit, (int64_t) MAX_LIMIT), (int64_t) 1);
        if (offset > INT64_MAX - MAX_LIMIT)
                offset = INT64_MAX - MAX_LIMIT;

        r = tool_expand_tilde(ctx, path, &shown);
        if (r < 0)
                return r;
        if (file_safety_is_blocked_device(shown))
                return device_error(path, ret_result);

        abs = tool_resolve_path(ctx, path);
        if (!abs)
                return -ENOMEM;
        /*
         * One resolution (fs_chase()), judged on the real path it reached, and the open of
         * that very object through its descriptor: no second lookup by name, so a symlink
         * flipped after the check cannot lead the read elsewhere. O_NONBLOCK: opening a FIFO
         * or a tty must not hang before we can look at it.
         */
        r = tool_chase(ctx, "read_file", abs, 0, NULL, &chased, &refused);
        if (r < 0 && r != -ENOENT && r != -ENOTDIR && r != -ELOOP && r != -ENAMETOOLONG &&
            r != -EACCES)
                return r;
        if (r > 0) {
                *ret_result = TAKE_PTR(refused);
                return 0;
        }
        if (r == 0 && file_safety_is_blocked_device(chased.path))
                return device_error(path, ret_result);
        if (r == 0) {
                fd = fs_chased_open(&chased, O_RDONLY | O_NOCTTY | O_NONBLOCK);
                open_errno = fd < 0 ? -fd : 0;
                resolved = strdup(chased.path);
                if (!resolved)
                        return -ENOMEM;
        } else
                open_errno = -r;
        if (file_safety_has_binary_extension(resolved ?: abs)) {
                char ext[64];

                *ret_result = tool_error_new(
                        "Cannot read binary file '%s' (%s). Use vision_analyze for images, or "
                        "terminal to inspect binary files.",
                        path, file_safety_suffix(resolved ?: abs, ext, sizeof(ext)));
                return *ret_result ? 0 : -ENOMEM;
        }

        if (fd < 0) {
                _cleanup_free_ char *msg = NULL;
                int e = open_errno;

                if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == ENAMETOOLONG)
                        return not_found(ctx, shown, ret_result);
                if (e == ENXIO || e == EWOULDBLOCK)
                        return device_error(path, ret_result);
                if (asprintf(&msg, "Cannot read '%s': %s", shown, strerror(e)) < 0)
                        return -ENOMEM;
                return read_result_error(msg, 0, false, NULL, ret_result);
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode)) {
                _cleanup_free_ char *msg = NULL;

                if (asprintf(&msg,
                             "Cannot read '%s': it is a directory, not a file. Use "
                             "search_files or terminal to list its contents.",
                             shown) < 0)
                        return -ENOMEM;
                return read_result_error(msg, 0, false, NULL, ret_result);
        }
        if (!S_ISREG(st.st_mode))
                return device_error(path, ret_result);

        block = malloc(READ_BLOCK);
        line = malloc(LINE_KEEP_BYTES);
        if (!block || !line)
                return -ENOMEM;
        /*
         * The first block serves the binary sniff too, and a file that fits in it is read
         * with one pread(): it stops at the size fstat() gave (a snapshot of a growing file
         * is as good as one taken a moment later). Size 0 (procfs) reads to EOF.
         */
        ns = pread_full(fd, block, READ_BLOCK, (size_t) MAX(st.st_size, 0));
        if (ns < 0)
                return read_failed((int) ns, ret_result);
        if (sample_is_binary(block, MIN((size_t) ns, (size_t) SNIFF_BYTES)))
                return read_result_error(BINARY_MESSAGE, (int64_t) st.st_size, true, NULL,
                                         ret_result);

        rd = (struct reader){
                .offset = offset,
                .end = offset + limit - 1,
                .line_no = 1,
                .line = line,
                .content = BUF_INIT(CONTENT_CAP),
        };
        r = reader_feed(&rd, block, (size_t) ns);
        if (r < 0) {
                buf_release(&rd.content);
                return r;
        }
        pos = ns;

        /* A full first block: the rest, to EOF. */
        while (ns == READ_BLOCK) {
                ssize_t k = pread(fd, block, READ_BLOCK, pos);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        buf_release(&rd.content);
                        return read_failed(r, ret_result);
                }
                if (k == 0)
                        break;
                pos += k;
                r = reader_feed(&rd, block, (size_t) k);
                if (r < 0) {
                        buf_release(&rd.content);
                        return r;
                }
                /* Counting newlines of a huge file can take a while: stay interruptible. */
                if (++blocks % CHECK_EVERY_BLOCKS == 0 && interrupted(ctx)) {
                        buf_release(&rd.content);
                        *ret_result = tool_error_new("read_file interrupted: the execution "
                                                     "was cancelled or ran out of time");
                        return *ret_result ? 0 : -ENOMEM;
                }
        }
        r = reader_finish(&rd);
        if (r < 0) {
                buf_release(&rd.content);
                return r;
        }

        res = json_object();
        if (!res) {
                buf_release(&rd.content);
                return -ENOMEM;
        }

        if (rd.content_chars > MAX_READ_CHARS) {
                char n1[32], n2[32];

                buf_release(&rd.content);
                json_decref(res);
                res = tool_error_new("Read produced %s characters which exceeds the safety limit "
                                     "(%s chars). Use offset and limit to read a smaller range. "
                                     "The file has %" PRIu64 " lines total.",
                                     format_thousands(rd.content_chars, n1, sizeof(n1)),
                                     format_thousands(MAX_READ_CHARS, n2, sizeof(n2)), rd.newlines);
                if (!res || tool_json_set(res, "path", tool_json_str(path)) < 0 ||
                    tool_json_set(res, "total_lines", json_integer((json_int_t) rd.newlines)) < 0 ||
                    tool_json_set(res, "file_size", json_integer((json_int_t) pos)) < 0)
                        return -ENOMEM;
                *ret_result = TAKE_PTR(res);
                return 0;
        }

        {
                const char *content = buf_str(&rd.content);
                size_t len = rd.content.len, rlen;

                if (len > 0) {
                        r = redact_text(ctx->redactor, REDACT_CODE, content, len, &redacted, &rlen);
                        if (r < 0) {
                                buf_release(&rd.content);
                                return r;
                        }
                        if (r > 0) {
                                content = redacted;
                                len = rlen;
                        }
                }
                /* The bytes actually read, as `wc -c`: st_size is 0 for /proc files. */
                r = add_success_fields(res, content, len, rd.newlines, (int64_t) pos, offset,
                                       rd.end, limit);
                buf_release(&rd.content);
                if (r < 0)
                        return r;
        }
        *ret_result = TAKE_PTR(res);
        return 0;
}

const struct tool_def tool_def_read_file = {
        .name = "read_file",
        .description = "Read a file (1-indexed lines). Returns dict with \"content\" and "
                       "\"total_lines\".",
        .parameters_json = "{\"type\": \"object\", \"properties\": {"
                           "\"path\": {\"type\": \"string\", \"description\": "
                           "\"Path to the file to read (absolute, relative, or ~/path)\"}, "
                           "\"offset\": {\"type\": \"integer\", \"description\": "
                           "\"Line number to start reading from (1-indexed)\", "
                           "\"default\": 1, \"minimum\": 1}, "
                           "\"limit\": {\"type\": \"integer\", \"description\": "
                           "\"Maximum number of lines to read (max 2000)\", "
                           "\"default\": 500, \"maximum\": 2000}}, "
                           "\"required\": [\"path\"]}",
        .returns = "Lines are 1-indexed. Returns {\"content\": \"...\", \"total_lines\": N}",
        .run = read_file_run,
        .quick = true,
};
