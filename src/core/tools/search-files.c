/* SPDX-License-Identifier: MIT */
/*
 * search_files (docs/seed.md 2.3, docs/contracts.md 9.5): content search and file
 * search, in-process. The seed piped `rg` into `head`; we walk and search ourselves with the
 * same default rules (search-walk.c, search-ignore.c) and fix what the pipeline got wrong:
 *
 *   - total_count is the true total, whatever limit and offset say;
 *   - results come in a fixed order: content results by path (byte order) then line number,
 *     file results newest-modified first (ties by path);
 *   - the truncation hint is a "_hint" member of the JSON, not text after it (#81610);
 *   - an invalid regex is an error naming the offset, not zero matches.
 *
 * Result shapes (the seed's keys; the list is present even when empty):
 *   content:    {"total_count": entries, "matches": [{"path", "line", "content"}, ...]}
 *               With context > 0 the context lines are entries too, in the same shape and
 *               order (overlapping ranges merged, each line once), and count in total_count,
 *               so pages never split or repeat a line.
 *   files_only: {"total_count": files, "files": [path, ...]}
 *   count:      {"total_count": matching lines, "counts": {path: lines, ...}} (a page of files)
 *   files:      {"total_count": files, "files": [path, ...]} (target="files")
 * plus "truncated": true and "_hint" when more results follow the page. Errors are
 * {"total_count": 0, "error": "..."}. "content" is at most 500 characters, redacted.
 * Binary files (a NUL byte anywhere; rg -l/-n only look before the first reported match, rg -c
 * agrees with us) give no results; target="files" lists them.
 *
 * Memory stays bounded whatever the tree: pass 1 keeps only the first offset+limit files in
 * result order (a bounded max-heap) and exact totals, never the matches themselves. Pass 2
 * searches again the few files that hold the requested page and takes its entries from them.
 * Files are read with read() into one reusable buffer per thread, in chunks that end on a line
 * boundary (the unfinished line is carried over), so a file of any size takes the same memory.
 *
 * Parts (core/search/search.h): search-match.c compiles the pattern and finds matching
 * lines, search-scan.c scans one file; this file takes the arguments, walks (search-walk.c),
 * keeps pass 1's records and builds the result.
 */

#include "core/tools/tool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/fs/fs-chase.h"
#include "core/output/redact.h"
#include "core/policy/policy.h"
#include "core/search/search-ignore.h"
#include "core/search/search-walk.h"
#include "core/search/search.h"
#include "core/tools/tool-chase.h"
#include "core/tools/tool-util.h"

#define DEFAULT_LIMIT 50
/*
 * offset + limit at most: pass 1 keeps that many file records (path and count). Deeper pages
 * are refused with a message; a narrower pattern, path or file_glob gets there instead.
 */
#define SEARCH_WINDOW_MAX 100000
/* Similar paths of the not-found message: the first entries of the parent, as `ls | head`. */
#define SIMILAR_LIST_MAX 20
#define SIMILAR_RESULT_MAX 5
#define SIMILAR_SCAN_MAX 100000

#define TRUNCATED_HINT_FMT                                                                       \
        "Results truncated. Use offset=%" PRIu64 " to see more, or narrow with a more specific " \
        "pattern or file_glob."

/* --- arguments --- */

/* {"total_count": 0, "error": msg}, the seed's SearchResult error shape. */
static int search_error_result(json_t **ret, const char *msg)
{
        json_auto_t *o = json_object();

        if (!o || tool_json_set(o, "total_count", json_integer(0)) < 0 ||
            tool_json_set(o, "error", tool_json_str(msg)) < 0)
                return -ENOMEM;
        *ret = json_incref(o);
        return 0;
}

_printf_(2, 3) static int arg_error(json_t **ret, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        return search_error_result(ret, msg);
}

static int get_int(json_t *args, const char *key, int64_t def, int64_t *v, json_t **ret)
{
        json_t *j = json_object_get(args, key);

        if (json_is_boolean(j)) {
                *v = json_is_true(j) ? 1 : 0;
                return 1;
        }
        if (tool_arg_int(args, key, def, v, NULL) >= 0)
                return 1;
        return arg_error(ret, "search_files: '%s' must be an integer, got %s.", key,
                         tool_json_type_name(j));
}

static int get_string(json_t *args, const char *key, const char **v, json_t **ret)
{
        if (tool_arg_string(args, key, v, NULL) >= 0)
                return 1;
        return arg_error(ret, "search_files: '%s' must be a string, got %s.", key,
                         tool_json_type_name(json_object_get(args, key)));
}

/* --- pass 1: records --- */

static int rec_cmp(const struct search *s, const struct rec *a, const struct rec *b)
{
        if (s->mode == MODE_FILES) {
                if (a->mtime_sec != b->mtime_sec)
                        return a->mtime_sec > b->mtime_sec ? -1 : 1;
                if (a->mtime_nsec != b->mtime_nsec)
                        return a->mtime_nsec > b->mtime_nsec ? -1 : 1;
        }
        return strcmp(a->rel, b->rel);
}

static void heap_sift_down(struct search *s, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                struct rec tmp;

                if (l < s->n_heap && rec_cmp(s, &s->heap[l], &s->heap[m]) > 0)
                        m = l;
                if (r < s->n_heap && rec_cmp(s, &s->heap[r], &s->heap[m]) > 0)
                        m = r;
                if (m == i)
                        return;
                tmp = s->heap[i];
                s->heap[i] = s->heap[m];
                s->heap[m] = tmp;
                i = m;
        }
}

static void heap_sift_up(struct search *s, size_t i)
{
        while (i > 0) {
                size_t p = (i - 1) / 2;
                struct rec tmp;

                if (rec_cmp(s, &s->heap[i], &s->heap[p]) <= 0)
                        return;
                tmp = s->heap[i];
                s->heap[i] = s->heap[p];
                s->heap[p] = tmp;
                i = p;
        }
}

/* Count a file with results and keep it when it is among the first `window` in order. */
static int commit(struct search *s, const struct rec *key, uint64_t total_add)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        s->total += total_add;
        s->total_files++;
        if (s->n_heap < s->window || rec_cmp(s, key, &s->heap[0]) < 0) {
                char *rel = strdup(key->rel);

                if (!rel)
                        r = -ENOMEM;
                else if (s->n_heap < s->window) {
                        if (s->n_heap == s->heap_alloc) {
                                size_t na = MIN(MAX(s->heap_alloc * 2, (size_t) 64), s->window);
                                struct rec *nh = realloc(s->heap, na * sizeof(*nh));

                                if (!nh) {
                                        free(rel);
                                        r = -ENOMEM;
                                        goto out;
                                }
                                s->heap = nh;
                                s->heap_alloc = na;
                        }
                        s->heap[s->n_heap] = *key;
                        s->heap[s->n_heap].rel = rel;
                        heap_sift_up(s, s->n_heap++);
                } else {
                        free(s->heap[0].rel);
                        s->heap[0] = *key;
                        s->heap[0].rel = rel;
                        heap_sift_down(s, 0);
                }
        }
out:
        pthread_mutex_unlock(&s->lock);
        return r;
}

static void note_limit(struct search *s, const char *rel)
{
        pthread_mutex_lock(&s->lock);
        if (!s->limit_path)
                s->limit_path = strdup(rel);
        pthread_mutex_unlock(&s->lock);
}

/* Pass 1 for one open file. Returns >= 0, or -errno to stop the search. */
static int search_one(struct scan_thread *t, int fd, const char *rel)
{
        struct search *s = t->s;
        struct scan sc;
        int r;

        search_scan_setup(&sc, t);
        r = search_scan_fd(&sc, fd);
        if (r == -ELOOP) {
                note_limit(s, rel);
                return -ELOOP;
        }
        if (r == -ENOMEM || r == -ECANCELED)
                return r;
        /* Unreadable files are skipped, like unreadable directories. */
        if (r < 0 || sc.binary || sc.lines == 0)
                return 0;
        return commit(s, &(struct rec){.rel = (char *) rel, .count = sc.entries},
                      s->mode == MODE_COUNT     ? sc.lines
                      : s->mode == MODE_CONTENT ? sc.entries
                                                : 1);
}

static int on_file(void *state, int dirfd, const char *name, const char *rel, size_t rel_len,
                   void *userdata)
{
        struct scan_thread *t = state;
        struct search *s = t->s;
        _cleanup_close_ int fd = -EBADF;

        if (s->mode == MODE_FILES) {
                struct stat st;

                if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        return 0;
                return commit(s,
                              &(struct rec){.rel = (char *) rel,
                                            .mtime_sec = st.st_mtim.tv_sec,
                                            .mtime_nsec = st.st_mtim.tv_nsec},
                              1);
        }
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        return search_one(t, fd, rel);
}

/*
 * The policy's path rules on every directory the walk would enter and every file it would
 * hand on (search_walk_opts.judge), on the real path: a denied subtree is pruned where the
 * walk meets it, and a denied file's name and lines never reach the result. A path an ask
 * rule covers is withheld too (nobody is asked per file); searching it by its own path asks.
 */
static int walk_judge(void *userdata, const char *abs, size_t abs_len, bool is_dir)
{
        struct search *s = userdata;
        const struct tool_ctx *ctx = s->judge_data;
        struct policy_verdict v;
        int r;

        if (!ctx || !ctx->config)
                return 0;
        r = policy_decide_real_path(ctx->config, "search_files", abs, ctx->cwd, ctx->env, &v);
        if (r < 0)
                return r;
        /* A rule without a match is about the call, which the gate judged (and asked about). */
        if (v.kind == POLICY_VERDICT_ALLOW ||
            (v.origin == POLICY_ORIGIN_RULE && v.rule < ctx->config->policy.n_rules &&
             !ctx->config->policy.rules[v.rule].match))
                return 0;
        pthread_mutex_lock(&s->lock);
        s->withheld++;
        pthread_mutex_unlock(&s->lock);
        return 1;
}

static int check(void *userdata)
{
        struct search *s = userdata;

        return search_interrupted(s) ? -ECANCELED : 0;
}

/* --- paths --- */

/* rg prints the root as given, joined with the path below it. */
static char *display_path(const char *root_shown, bool root_is_file, const char *rel)
{
        size_t n = strlen(root_shown);
        char *p;

        if (root_is_file)
                return strdup(root_shown);
        if (asprintf(&p, "%s%s%s", root_shown, n > 0 && root_shown[n - 1] == '/' ? "" : "/", rel) <
            0)
                return NULL;
        return p;
}

/*
 * What ripgrep matches --glob rules against for files below @shown: the printed path without
 * a leading "./" and without the cwd's bytes (then a leading '/'), as its ignore crate does.
 */
static char *override_prefix(const char *cwd, const char *shown)
{
        _cleanup_free_ char *p = display_path(shown, false, "");
        const char *q;
        size_t cl = strlen(cwd);

        if (!p)
                return NULL;
        q = p;
        if (strncmp(q, "./", 2) == 0)
                q += 2;
        if (cl > 1 && strncmp(q, cwd, cl) == 0) {
                q += cl;
                if (*q == '/')
                        q++;
        }
        return strdup(q);
}

static void ascii_lower(char *s)
{
        for (; *s; s++)
                if (*s >= 'A' && *s <= 'Z')
                        *s = (char) (*s - 'A' + 'a');
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The directory whose names a not-found message offers, judged like the search root: a
 * directory the policy denies offers none. The fd or -errno. */
static int similar_dir_open(const struct tool_ctx *ctx, const char *abs, int *ret)
{
        _cleanup_fs_chased_ struct fs_chased c = FS_CHASED_INIT;
        json_auto_t *refused = NULL;
        int r;

        r = tool_chase(ctx, "search_files", abs, 0, NULL, &c, &refused);
        if (r < 0)
                return r;
        if (r > 0)
                return -EPERM;
        r = fs_chased_open(&c, O_RDONLY | O_DIRECTORY);
        if (r < 0)
                return r;
        *ret = r;
        return 0;
}

/*
 * The seed's missing-path result: "Path not found: P[. Similar paths: a, b]", the candidates
 * taken from the first SIMILAR_LIST_MAX names of the parent in `ls -1` order whose lower-cased
 * name contains the query, is contained in it or starts with its first three characters.
 */
static int not_found(const struct tool_ctx *ctx, const char *shown, json_t **ret)
{
        _cleanup_free_ char *parent = NULL, *parent_abs = NULL, *query = NULL, *msg = NULL;
        _cleanup_free_ char **names = NULL;
        _cleanup_buf_ struct buf b = BUF_INIT(16 * 1024);
        const char *slash = strrchr(shown, '/');
        size_t n_names = 0, taken = 0;
        int dfd = -EBADF;
        int r;

        if (slash) {
                size_t l = (size_t) (slash - shown);

                /* os.path.dirname keeps a lone root slash. */
                while (l > 0 && shown[l - 1] == '/')
                        l--;
                parent = l > 0 ? strndup(shown, l) : strndup(shown, (size_t) (slash - shown) + 1);
                query = strdup(slash + 1);
        } else {
                parent = strdup(".");
                query = strdup(shown);
        }
        if (!parent || !query)
                return -ENOMEM;
        ascii_lower(query);

        r = buf_printf(&b, "Path not found: %s", shown);
        if (r == -ENOMEM)
                return r;
        parent_abs = tool_resolve_path(ctx, parent);
        if (!parent_abs)
                return -ENOMEM;
        if (query[0] && similar_dir_open(ctx, parent_abs, &dfd) >= 0) {
                DIR *d = fdopendir(dfd);

                if (!d)
                        dfd = safe_close(dfd);
                struct dirent *de;
                size_t scanned = 0;

                names = calloc(SIMILAR_SCAN_MAX + 1, sizeof(*names));
                if (!names) {
                        if (d)
                                closedir(d);
                        return -ENOMEM;
                }
                while (d && (de = readdir(d)) && scanned++ < SIMILAR_SCAN_MAX) {
                        if (de->d_name[0] == '.')
                                continue;
                        names[n_names] = strdup(de->d_name);
                        if (!names[n_names])
                                break;
                        n_names++;
                }
                if (d)
                        closedir(d);
                qsort(names, n_names, sizeof(*names), cmp_str);
                for (size_t i = 0; i < n_names && i < SIMILAR_LIST_MAX; i++) {
                        _cleanup_free_ char *le = strdup(names[i]);
                        size_t ql = strlen(query), pl = strlen(parent);

                        if (!le)
                                break;
                        ascii_lower(le);
                        if (!(strstr(le, query) || strstr(query, le) ||
                              strncmp(le, query, MIN(ql, (size_t) 3)) == 0))
                                continue;
                        if (taken >= SIMILAR_RESULT_MAX)
                                break;
                        r = buf_printf(&b, "%s%s%s%s", taken ? ", " : ". Similar paths: ", parent,
                                       pl > 0 && parent[pl - 1] == '/' ? "" : "/", names[i]);
                        if (r == -ENOMEM)
                                break;
                        taken++;
                }
                for (size_t i = 0; i < n_names; i++)
                        free(names[i]);
        }
        msg = buf_steal(&b, NULL);
        if (!msg)
                return -ENOMEM;
        return search_error_result(ret, msg);
}

/* --- pass 2 and the result --- */

static char *path_join_abs(const char *root, const char *rel)
{
        size_t n = strlen(root);
        char *p;

        if (asprintf(&p, "%s%s%s", root, n > 0 && root[n - 1] == '/' ? "" : "/", rel) < 0)
                return NULL;
        return p;
}

static int set_truncation(json_t *o, uint64_t total, uint64_t window)
{
        char hint[256];

        if (total <= window)
                return 0;
        (void) snprintf(hint, sizeof(hint), TRUNCATED_HINT_FMT, window);
        if (tool_json_set(o, "truncated", json_true()) < 0 ||
            tool_json_set(o, "_hint", json_string(hint)) < 0)
                return -ENOMEM;
        return 0;
}

static int cmp_rec_ctx(const void *a, const void *b, void *s)
{
        return rec_cmp(s, a, b);
}

/* --- result lines --- */

/* Characters of a result line (the seed's content[:500]). */
#define LINE_CHARS_MAX 500
/* Bytes of a line looked at for its result text (more than 4 * LINE_CHARS_MAX). */
#define LINE_KEEP_BYTES 4096

/* A line's result text: at most LINE_CHARS_MAX characters, invalid UTF-8 replaced, redacted. */
static json_t *line_text(const struct redactor *red, const char *p, size_t n)
{
        _cleanup_free_ char *clean = NULL, *redacted = NULL;
        const char *text;
        size_t len, chars, cut = 0, c = 0;
        int r;

        clean = utf8_sanitize(p, MIN(n, (size_t) LINE_KEEP_BYTES), &len, &chars);
        if (!clean)
                return NULL;
        text = clean;
        if (len > 0) {
                size_t rlen;

                /* Redact before cutting, so a secret at the cut cannot leave a prefix behind. */
                r = redact_text(red, REDACT_CODE, clean, len, &redacted, &rlen);
                if (r < 0)
                        return NULL;
                if (r > 0) {
                        text = redacted;
                        len = rlen;
                }
        }
        while (cut < len && c < LINE_CHARS_MAX) {
                cut++;
                while (cut < len && ((unsigned char) text[cut] & 0xC0) == 0x80)
                        cut++;
                c++;
        }
        return tool_json_string(text, cut);
}

struct page {
        const struct redactor *red;
        const char *display;
        json_t *out;
};

/* search_scan_fd()'s emit(): one entry {"path", "line", "content"} of the page. */
static int page_add(void *userdata, uint64_t line, const char *p, size_t n)
{
        struct page *pg = userdata;
        json_auto_t *o = json_object();

        if (!o || tool_json_set(o, "path", tool_json_str(pg->display)) < 0 ||
            tool_json_set(o, "line", json_integer((json_int_t) line)) < 0 ||
            tool_json_set(o, "content", line_text(pg->red, p, n)) < 0 ||
            json_array_append(pg->out, o) < 0)
                return -ENOMEM;
        return 0;
}

/* Entries [from, to) of one file of the page into @out. */
static int extract(struct search *s, struct scan_thread *t, const char *abs, const char *display,
                   uint64_t from, uint64_t to, json_t *out)
{
        _cleanup_close_ int fd = -EBADF;
        struct page pg = {.red = s->redactor, .display = display, .out = out};
        struct scan sc;
        int r;

        /* The path pass 1 judged, with no symlink on the way: what it named then or nothing
         * (a file swapped for a symlink since is not followed). */
        fd = fs_open_no_symlinks(abs, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return 0; /* gone since pass 1: its entries are missing from the page */
        search_scan_setup(&sc, t);
        sc.need_lines = true;
        sc.first_only = false;
        sc.extract = true;
        sc.from = from;
        sc.to = to;
        sc.emit = page_add;
        sc.userdata = &pg;
        r = search_scan_fd(&sc, fd);
        return r == -ENOMEM || r == -ECANCELED ? r : 0;
}

static int build_result(struct search *s, struct scan_thread *t, const char *root_abs,
                        const char *shown, bool root_is_file, uint64_t offset, uint64_t limit,
                        json_t **ret)
{
        json_auto_t *o = json_object(), *list = NULL;
        uint64_t cum = 0;
        int r;

        if (!o)
                return -ENOMEM;
        /* qsort_r(NULL, 0, ...) is undefined: an empty page has no array. */
        if (s->n_heap > 1)
                qsort_r(s->heap, s->n_heap, sizeof(*s->heap), cmp_rec_ctx, s);
        if (tool_json_set(o, "total_count", json_integer((json_int_t) s->total)) < 0)
                return -ENOMEM;
        /* Not silent: the script learns that the policy hid paths (never which). */
        if (s->withheld > 0 &&
            tool_json_set(o, "withheld_by_policy", json_integer((json_int_t) s->withheld)) < 0)
                return -ENOMEM;
        list = s->mode == MODE_COUNT ? json_object() : json_array();
        if (!list)
                return -ENOMEM;

        for (size_t i = 0; i < s->n_heap; i++) {
                _cleanup_free_ char *display = NULL, *abs = NULL;
                const struct rec *rc = &s->heap[i];
                uint64_t n = s->mode == MODE_CONTENT ? rc->count : 1;

                if (cum + n <= offset) {
                        cum += n;
                        continue;
                }
                if (cum >= offset + limit)
                        break;
                display = display_path(shown, root_is_file, rc->rel);
                if (!display)
                        return -ENOMEM;
                if (s->mode == MODE_CONTENT) {
                        uint64_t from = offset > cum ? offset - cum : 0;
                        uint64_t to = MIN(n, offset + limit - cum);

                        abs = root_is_file ? strdup(root_abs) : path_join_abs(root_abs, rc->rel);
                        if (!abs)
                                return -ENOMEM;
                        r = extract(s, t, abs, display, from, to, list);
                        if (r < 0)
                                return r;
                } else if (s->mode == MODE_COUNT) {
                        r = tool_json_set_name(list, display, json_integer((json_int_t) rc->count));
                        if (r < 0)
                                return r;
                } else if (json_array_append_new(list, tool_json_str(display)) < 0)
                        return -ENOMEM;
                cum += n;
        }

        if (tool_json_set(o,
                          s->mode == MODE_CONTENT ? "matches"
                          : s->mode == MODE_COUNT ? "counts"
                                                  : "files",
                          TAKE_PTR(list)) < 0)
                return -ENOMEM;
        r = set_truncation(o, s->mode == MODE_CONTENT ? s->total : s->total_files, offset + limit);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static void search_release(struct search *s)
{
        for (size_t i = 0; i < s->n_heap; i++)
                free(s->heap[i].rel);
        free(s->heap);
        free(s->limit_path);
        search_matcher_release(&s->m);
        pthread_mutex_destroy(&s->lock);
}

/* The seed's rule for target="files": a bare name matches names ending in it. */
static char *files_glob(const char *pattern)
{
        char *g;

        if (strchr(pattern, '/') || pattern[0] == '*')
                return strdup(pattern);
        if (asprintf(&g, "*%s", pattern) < 0)
                return NULL;
        return g;
}

static int glob_error(json_t **ret, const char *what, const char *glob, const char *err)
{
        _cleanup_free_ char *msg = NULL;

        if (asprintf(&msg, "Invalid %s '%.200s': %s", what, glob, err) < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        return search_error_result(ret, msg);
}

static int search_files_run(const struct tool *tool, const struct tool_ctx *ctx, json_t *args,
                            json_t **ret_result)
{
        _cleanup_free_ char *shown = NULL, *abs = NULL, *real = NULL, *prefix = NULL;
        _cleanup_free_ char *glob = NULL, *path_bytes = NULL, *glob_bytes = NULL;
        _cleanup_free_ char *name_pattern = NULL;
        _cleanup_ignore_file_ struct ignore_file *overrides = NULL, *global_excludes = NULL;
        _cleanup_fs_chased_ struct fs_chased root = FS_CHASED_INIT;
        json_auto_t *refused = NULL;
        _cleanup_(search_release) struct search s = {
                .deadline = ctx->deadline,
                .cancel_fd = ctx->cancel_fd,
                .redactor = ctx->redactor,
                .lock = PTHREAD_MUTEX_INITIALIZER,
        };
        struct scan_thread *t = NULL;
        const char *pattern = NULL, *target = NULL, *path = NULL, *file_glob = NULL;
        const char *output_mode = NULL, *err = NULL;
        int64_t limit, offset, context;
        json_t *pv;
        size_t pattern_len;
        struct stat st;
        bool root_is_file;
        int r;

        if (!json_is_object(args))
                return arg_error(ret_result, "search_files: the arguments must be an object.");
        pv = json_object_get(args, "pattern");
        if (!pv || json_is_null(pv))
                return arg_error(ret_result, "search_files: missing required field 'pattern'.");
        if ((r = get_string(args, "pattern", &pattern, ret_result)) <= 0 ||
            (r = get_string(args, "target", &target, ret_result)) <= 0 ||
            (r = get_string(args, "path", &path, ret_result)) <= 0 ||
            (r = get_string(args, "file_glob", &file_glob, ret_result)) <= 0 ||
            (r = get_string(args, "output_mode", &output_mode, ret_result)) <= 0 ||
            (r = get_int(args, "limit", DEFAULT_LIMIT, &limit, ret_result)) <= 0 ||
            (r = get_int(args, "offset", 0, &offset, ret_result)) <= 0 ||
            (r = get_int(args, "context", 0, &context, ret_result)) <= 0)
                return r;
        pattern_len = json_string_length(pv);

        /* The seed's legacy names for the targets. */
        if (!target || strcmp(target, "content") == 0 || strcmp(target, "grep") == 0)
                s.mode = MODE_CONTENT;
        else if (strcmp(target, "files") == 0 || strcmp(target, "find") == 0)
                s.mode = MODE_FILES;
        else
                return arg_error(ret_result,
                                 "search_files: unknown target '%.100s' (use 'content' or "
                                 "'files').",
                                 target);
        if (s.mode == MODE_CONTENT && output_mode && strcmp(output_mode, "content") != 0) {
                if (strcmp(output_mode, "files_only") == 0)
                        s.mode = MODE_FILES_ONLY;
                else if (strcmp(output_mode, "count") == 0)
                        s.mode = MODE_COUNT;
                else
                        return arg_error(ret_result,
                                         "search_files: unknown output_mode '%.100s' (use "
                                         "'content', 'files_only' or 'count').",
                                         output_mode);
        }

        /*
         * Names are bytes: the path and the name globs take the escape form of bytes that are
         * not UTF-8 (docs/protocol.md). A content regex is matched against text and keeps it.
         */
        if ((path && (r = utf8_unescape_bytes(path, strlen(path), &path_bytes, NULL)) < 0) ||
            (file_glob &&
             (r = utf8_unescape_bytes(file_glob, strlen(file_glob), &glob_bytes, NULL)) < 0) ||
            (s.mode == MODE_FILES &&
             (r = utf8_unescape_bytes(pattern, strlen(pattern), &name_pattern, NULL)) < 0))
                return r;
        if (path)
                path = path_bytes;
        if (file_glob)
                file_glob = glob_bytes;
        if (s.mode == MODE_FILES)
                pattern = name_pattern;

        limit = MAX(limit, (int64_t) 1);
        offset = MAX(offset, (int64_t) 0);
        if (offset >= SEARCH_WINDOW_MAX) {
                char msg[256];

                (void) snprintf(msg, sizeof(msg),
                                "search_files: offset must be below %d; narrow the search with a "
                                "more specific pattern, path or file_glob instead.",
                                SEARCH_WINDOW_MAX);
                return search_error_result(ret_result, msg);
        }
        limit = MIN(limit, (int64_t) SEARCH_WINDOW_MAX - offset);
        s.window = (size_t) (offset + limit);
        s.context = s.mode == MODE_CONTENT ? (unsigned) MIN(MAX(context, (int64_t) 0),
                                                            (int64_t) SEARCH_CONTEXT_MAX)
                                           : 0;

        if (s.mode == MODE_FILES) {
                glob = files_glob(pattern);
                if (!glob)
                        return -ENOMEM;
                r = ignore_glob_parse(glob, &overrides, &err);
                if (r == -EINVAL)
                        return glob_error(ret_result, "glob pattern", glob, err);
                if (r < 0)
                        return r;
        } else {
                _cleanup_free_ char *msg = NULL;

                r = search_matcher_init(&s.m, pattern, pattern_len, &msg);
                if (r == -EINVAL)
                        return search_error_result(ret_result, msg);
                if (r < 0)
                        return r;
                if (file_glob && file_glob[0]) {
                        r = ignore_glob_parse(file_glob, &overrides, &err);
                        if (r == -EINVAL)
                                return glob_error(ret_result, "file_glob", file_glob, err);
                        if (r < 0)
                                return r;
                }
        }

        if (!path || !path[0])
                path = ".";
        r = tool_expand_tilde(ctx, path, &shown);
        if (r < 0)
                return r;
        abs = tool_resolve_path(ctx, path);
        if (!abs)
                return -ENOMEM;
        /* The root as the kernel resolves it, judged on its real path (tool-chase.h); the
         * walk below judges every directory and file it meets (walk_judge()). */
        r = tool_chase(ctx, "search_files", abs, 0, NULL, &root, &refused);
        if (r > 0) {
                *ret_result = TAKE_PTR(refused);
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0 || fstat(root.fd, &st) < 0)
                return not_found(ctx, shown, ret_result);
        real = strdup(root.path);
        if (!real)
                return -ENOMEM;
        root_is_file = !S_ISDIR(st.st_mode);
        s.judge_data = ctx;

        r = search_scan_thread_new(&s, (void **) &t);
        if (r < 0)
                return r;
        if (root_is_file) {
                /* A path given explicitly is searched whatever the ignore rules say, as rg. */
                if (s.mode == MODE_FILES && S_ISREG(st.st_mode))
                        r = commit(&s,
                                   &(struct rec){.rel = (char *) "",
                                                 .mtime_sec = st.st_mtim.tv_sec,
                                                 .mtime_nsec = st.st_mtim.tv_nsec},
                                   1);
                else if (S_ISREG(st.st_mode)) {
                        _cleanup_close_ int fd =
                                fs_chased_open(&root, O_RDONLY | O_NOCTTY | O_NONBLOCK);

                        r = fd >= 0 ? search_one(t, fd, "") : 0;
                }
        } else {
                /* As rg: git's core.excludesFile of the script's user, from its environment. */
                r = ignore_global_excludes_load(tool_env_get(ctx, "HOME"),
                                                tool_env_get(ctx, "XDG_CONFIG_HOME"),
                                                &global_excludes);
                if (r < 0) {
                        search_scan_thread_free(t);
                        return r;
                }
                struct search_walk_opts o = {
                        .root = real,
                        .overrides = overrides,
                        .global_excludes = global_excludes,
                        .on_file = on_file,
                        .thread_init = search_scan_thread_new,
                        .thread_done = search_scan_thread_done,
                        .check = check,
                        .judge = walk_judge,
                        .userdata = &s,
                };

                if (ignore_file_has_anchored(overrides)) {
                        prefix = override_prefix(ctx->cwd, shown);
                        if (!prefix) {
                                search_scan_thread_free(t);
                                return -ENOMEM;
                        }
                        o.override_prefix = prefix;
                }
                r = search_walk_run(&o);
        }

        if (r >= 0 || (r != -ENOMEM && r != -ECANCELED && r != -ELOOP)) {
                /* Other failures (an unreadable root directory) just find nothing, as rg. */
                r = search_interrupted(&s)
                            ? -ECANCELED
                            : build_result(&s, t, real, shown, root_is_file, (uint64_t) offset,
                                           (uint64_t) limit, ret_result);
        }
        if (r == -ECANCELED)
                r = search_error_result(ret_result, "search_files interrupted: the execution was "
                                                    "cancelled or ran out of time");
        else if (r == -ELOOP) {
                _cleanup_free_ char *msg = NULL, *where = NULL;

                where = display_path(shown, root_is_file, s.limit_path ? s.limit_path : "");
                if (where && asprintf(&msg,
                                      "Regex too expensive: PCRE2 hit its match limit on a line "
                                      "of %s. Simplify the pattern (nested quantifiers such as "
                                      "(a+)+ backtrack exponentially).",
                                      where) < 0)
                        msg = NULL;
                r = msg ? search_error_result(ret_result, msg) : -ENOMEM;
        }
        search_scan_thread_free(t);
        return r;
}

const struct tool_def tool_def_search_files = {
        .name = "search_files",
        .description =
                "Search file contents (target=\"content\") or find files by name "
                "(target=\"files\"). Returns dict with \"matches\".\n"
                "Content search takes a regex (PCRE2; a plain string is searched literally) and "
                "honours .gitignore/.ignore, skipping hidden and binary files, as ripgrep. "
                "Results: content -> {\"total_count\", \"matches\": [{\"path\", \"line\", "
                "\"content\"}]} sorted by path and line (context lines are entries too); "
                "files_only -> {\"files\"}; count -> {\"counts\": {path: n}}; target=\"files\" "
                "-> {\"files\"} newest first. total_count is the true total; \"truncated\" and "
                "\"_hint\" say when more pages exist.",
        .parameters_json =
                "{\"type\": \"object\", \"properties\": {"
                "\"pattern\": {\"type\": \"string\", \"description\": \"Regex pattern for content "
                "search, or glob pattern (e.g., '*.py') for file search\"}, "
                "\"target\": {\"type\": \"string\", \"enum\": [\"content\", \"files\"], "
                "\"description\": \"'content' searches inside file contents, 'files' searches "
                "for files by name\", \"default\": \"content\"}, "
                "\"path\": {\"type\": \"string\", \"description\": \"Directory or file to search "
                "in (default: current working directory)\", \"default\": \".\"}, "
                "\"file_glob\": {\"type\": \"string\", \"description\": \"Filter files by pattern "
                "in grep mode (e.g., '*.py' to only search Python files)\"}, "
                "\"limit\": {\"type\": \"integer\", \"description\": \"Maximum number of results "
                "to return (default: 50)\", \"default\": 50, \"minimum\": 1}, "
                "\"offset\": {\"type\": \"integer\", \"description\": \"Skip first N results for "
                "pagination (default: 0)\", \"default\": 0, \"minimum\": 0}, "
                "\"output_mode\": {\"type\": \"string\", \"enum\": [\"content\", \"files_only\", "
                "\"count\"], \"description\": \"Output format for grep mode: 'content' shows "
                "matching lines with line numbers, 'files_only' lists file paths, 'count' shows "
                "match counts per file\", \"default\": \"content\"}, "
                "\"context\": {\"type\": \"integer\", \"description\": \"Number of context lines "
                "before and after each match (grep mode only)\", \"default\": 0}}, "
                "\"required\": [\"pattern\"]}",
        .returns = "target: \"content\" (search inside files) or \"files\" (find files by name). "
                   "Returns {\"matches\": [...]}",
        .run = search_files_run,
};
