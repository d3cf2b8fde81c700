/* SPDX-License-Identifier: MIT */
/*
 * The Landlock ruleset of a terminal call or a script, built from the policy's deny rules on
 * write_file and patch paths (path-protect.h says what and why).
 */
#include "core/policy/path-protect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/strv.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/*
 * Entries granted at most: past it the rest get no write right (stricter, and said). A
 * directory with more entries than this on the way to a protected path is rare; listing
 * and granting each costs a few microseconds when the ruleset is built.
 */
#define MAX_GRANTS 16384
/* Paths a glob of a rule may expand to (and directories it may read); past it the glob's
 * fixed directory is protected whole. */
#define MAX_GLOB_PATHS 4096

/* What a terminal command needs to write even where a rule covers /dev (or /): never keys. */
static const char *const device_grants[] = {
        "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
        "/dev/tty",  "/dev/ptmx", "/dev/pts",  NULL,
};

/* The own trees of a child in its own mount namespace (a terminal.isolation strict command, a
 * script under the namespaces layer): fresh tmpfs, none of the host's files. */
static const char *const private_trees[] = {"/tmp", "/dev/shm", NULL};

/* A new string, or NULL on ENOMEM. */
_printf_(1, 2) static char *strdup_printf(const char *fmt, ...)
{
        char *s;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? NULL : s;
}

/* A list of strings with its length, grown by doubling (strv_extend() is quadratic). */
struct list {
        char **v;
        size_t n, alloc;
};

static void list_free(struct list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (struct list){};
}

/* Append @s (taken, even on failure). 0 or -ENOMEM. */
static int list_consume(struct list *l, char *s)
{
        if (!s)
                return -ENOMEM;
        if (l->n + 1 >= l->alloc) {
                size_t a = l->alloc ? l->alloc * 2 : 16;
                char **v = reallocarray(l->v, a, sizeof(char *));

                if (!v) {
                        free(s);
                        return -ENOMEM;
                }
                l->v = v;
                l->alloc = a;
        }
        l->v[l->n++] = s;
        l->v[l->n] = NULL;
        return 0;
}

static bool list_has(const struct list *l, const char *s)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->v[i], s) == 0)
                        return true;
        return false;
}

static bool rule_binds(const struct policy_rule *r)
{
        if (r->subject != POLICY_SUBJECT_PATH || r->action != POLICY_DENY || !r->match)
                return false;
        for (char **t = r->tools; t && *t; t++)
                if (strcmp(*t, "write_file") == 0 || strcmp(*t, "patch") == 0)
                        return true;
        return false;
}

bool path_protect_wanted(const struct ptc_config *c)
{
        for (size_t i = 0; c && i < c->policy.n_rules; i++)
                if (rule_binds(&c->policy.rules[i]))
                        return true;
        return false;
}

/* A name at any depth (no '/'), or a "**" before the pattern's end: not for Landlock. */
static bool pattern_is_landlock_able(const char *pattern)
{
        _cleanup_free_ char *s = NULL;
        size_t n;

        if (!strchr(pattern, '/') && strcmp(pattern, "~") != 0)
                return false;
        s = strdup(pattern);
        if (!s)
                return true; /* judged again, for real, when the ruleset is built */
        n = strlen(s);
        for (;;) {
                while (n > 1 && s[n - 1] == '/')
                        s[--n] = 0;
                if (n >= 3 && strcmp(s + n - 3, "/**") == 0)
                        s[n -= 3] = 0;
                else
                        break;
        }
        return !strstr(s, "**");
}

/* Whom @who names, for a warning. */
static const char *who_text(unsigned who)
{
        switch (who & (PATH_PROTECT_TERMINAL | PATH_PROTECT_SCRIPT)) {
        case PATH_PROTECT_TERMINAL:
                return "terminal commands";
        case PATH_PROTECT_SCRIPT:
                return "the script's own writes (open(), os.rename() ...)";
        default:
                return "terminal commands nor the script's own writes (open(), os.rename() ...)";
        }
}

int path_protect_unbound(const struct ptc_config *c, const char *why, unsigned who,
                         char ***warnings)
{
        if (!path_protect_wanted(c) || !(who & (PATH_PROTECT_TERMINAL | PATH_PROTECT_SCRIPT)))
                return 0;
        return strv_consume(warnings,
                            strdup_printf("policy: %s: deny rules on write_file and patch paths "
                                          "bind the script's tool calls only, not %s",
                                          why, who_text(who)));
}

int path_protect_describe(const struct ptc_config *c, int abi, unsigned who, char ***warnings)
{
        if (!path_protect_wanted(c) || !(who & (PATH_PROTECT_TERMINAL | PATH_PROTECT_SCRIPT)))
                return 0;
        if (abi < 1) {
                _cleanup_free_ char *why =
                        strdup_printf("Landlock is not available here (%s)", strerror(-abi));

                return why ? path_protect_unbound(c, why, who, warnings) : -ENOMEM;
        }
        if (abi < 3) {
                char *w = strdup_printf(
                        "policy: Landlock ABI %d does not check truncate(2): %s "
                        "may still empty a protected file (they cannot otherwise "
                        "write there)",
                        abi, who & PATH_PROTECT_TERMINAL ? "a terminal command" : "the script");
                int r = strv_consume(warnings, w);

                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->policy.n_rules; i++) {
                const struct policy_rule *rule = &c->policy.rules[i];

                if (!rule_binds(rule))
                        continue;
                for (char **m = rule->match; *m; m++) {
                        int r;

                        if (pattern_is_landlock_able(*m))
                                continue;
                        r = strv_consume(warnings,
                                         strdup_printf("policy.rules[%zu]: '%s' names files at any "
                                                       "depth, which Landlock cannot express: it "
                                                       "does not bind %s (write_file and patch "
                                                       "still hold to it)",
                                                       i, *m, who_text(who)));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/*
 * @path (absolute) as the kernel resolves it: its symlinks and ".." followed; a missing
 * tail kept as written below its nearest existing ancestor's real path. New string or NULL.
 */
static char *resolve(const char *path)
{
        _cleanup_free_ char *head = strdup(path), *real = NULL;
        const char *tail = "";
        char *out;

        if (!head)
                return NULL;
        for (;;) {
                char *slash;

                real = realpath(head, NULL);
                if (real)
                        break;
                if (errno == ENOMEM)
                        return NULL;
                slash = strrchr(head, '/');
                if (!slash || slash == head) {
                        /* Nothing below / resolves: keep it as written. */
                        out = strdup(path);
                        if (out)
                                path_normalize_lexical(out);
                        return out;
                }
                *slash = 0;
                tail = path + (slash - head);
        }
        out = strdup_printf("%s%s", strcmp(real, "/") == 0 ? "" : real, tail);
        if (out) {
                if (!*out) {
                        free(out);
                        out = strdup("/");
                } else
                        path_normalize_lexical(out);
        }
        return out;
}

/* Protect @path (absolute): its real path, and the entry it names itself (a symlink). */
static int protect_path(struct list *prot, const char *path)
{
        _cleanup_free_ char *lex = strdup(path), *real = NULL;
        int r;

        if (!lex)
                return -ENOMEM;
        path_normalize_lexical(lex);
        real = resolve(lex);
        if (!real)
                return -ENOMEM;
        if (!list_has(prot, real)) {
                r = list_consume(prot, TAKE_PTR(real));
                if (r < 0)
                        return r;
        }
        if (strcmp(lex, "/") != 0) {
                char *slash = strrchr(lex, '/');
                _cleanup_free_ char *parent =
                        strndup(lex, slash == lex ? 1 : (size_t) (slash - lex));
                _cleanup_free_ char *rparent = parent ? resolve(parent) : NULL;
                char *entry;

                if (!rparent)
                        return -ENOMEM;
                entry = path_join(rparent, slash + 1);
                if (!entry)
                        return -ENOMEM;
                if (list_has(prot, entry))
                        free(entry);
                else if ((r = list_consume(prot, entry)) < 0)
                        return r;
        }
        return 0;
}

/* @pattern of a rule made absolute ("~", relative), or NULL in *ret when it cannot be. */
static int absolute_pattern(const char *pattern, const char *cwd, const char *home, char **ret)
{
        *ret = NULL;
        if (pattern[0] == '~' && (pattern[1] == 0 || pattern[1] == '/')) {
                if (!home || home[0] != '/')
                        return 0;
                *ret = strdup_printf("%s%s", home, pattern + 1);
        } else if (pattern[0] != '/') {
                if (!cwd || cwd[0] != '/')
                        return 0;
                *ret = strdup_printf("%s/%s", cwd,
                                     pattern[0] == '.' && pattern[1] == '/' ? pattern + 2
                                                                            : pattern);
        } else
                *ret = strdup(pattern);
        return *ret ? 0 : -ENOMEM;
}

/*
 * The existing paths that @pattern (absolute, normalised, no "**") matches, component by
 * component: a component with "*", "?" or "[" is matched with fnmatch(3) against each entry
 * of its directory ("." and ".." never, a leading dot like any other character, as the
 * rules' own matcher does; glob(3) would skip hidden names). -E2BIG past MAX_GLOB_PATHS
 * paths or directories read.
 */
static int expand_from(struct list *out, const char *prefix, const char *rest, size_t *dirs)
{
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *comp = NULL;
        const char *end;
        struct dirent *de;
        int r;

        while (*rest == '/')
                rest++;
        if (!*rest) {
                struct stat st;

                if (lstat(prefix, &st) < 0)
                        return 0;
                if (out->n >= MAX_GLOB_PATHS)
                        return -E2BIG;
                return list_consume(out, strdup(prefix));
        }
        end = strchrnul(rest, '/');
        comp = strndup(rest, (size_t) (end - rest));
        if (!comp)
                return -ENOMEM;
        if (!strpbrk(comp, "*?[")) {
                _cleanup_free_ char *next = path_join(prefix, comp);

                return next ? expand_from(out, next, end, dirs) : -ENOMEM;
        }
        if (++*dirs > MAX_GLOB_PATHS)
                return -E2BIG;
        d = opendir(prefix);
        if (!d)
                return errno == ENOMEM ? -ENOMEM : 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *next = NULL;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    fnmatch(comp, de->d_name, 0) != 0)
                        continue;
                next = path_join(prefix, de->d_name);
                if (!next)
                        return -ENOMEM;
                r = expand_from(out, next, end, dirs);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int expand(struct list *out, const char *pattern, size_t *dirs)
{
        return expand_from(out, "/", pattern, dirs);
}

/* One pattern of a binding rule into @prot; @warnings gets why it cannot bind, if so. */
static int protect_pattern(struct list *prot, const char *pattern, const char *cwd,
                           const char *home, unsigned who, char ***warnings)
{
        _cleanup_free_ char *abs = NULL;
        size_t n;
        int r;

        if (!pattern_is_landlock_able(pattern))
                return 0; /* path_protect_describe() said so */
        r = absolute_pattern(pattern, cwd, home, &abs);
        if (r < 0)
                return r;
        if (!abs)
                return strv_consume(warnings,
                                    strdup_printf("policy: '%s' cannot be resolved (no %s): it "
                                                  "does not bind %s",
                                                  pattern, pattern[0] == '~' ? "HOME" : "cwd",
                                                  who_text(who)));
        /* A trailing "**" component is its directory: Landlock rules cover what is below. */
        n = strlen(abs);
        for (;;) {
                while (n > 1 && abs[n - 1] == '/')
                        abs[--n] = 0;
                if (n >= 3 && strcmp(abs + n - 3, "/**") == 0)
                        abs[n -= 3] = 0;
                else
                        break;
        }
        if (!*abs)
                return protect_path(prot, "/");
        if (!strpbrk(abs, "*?["))
                return protect_path(prot, abs);

        /* A glob: what exists at the call's start. */
        {
                _cleanup_(list_free) struct list found = {};
                size_t dirs = 0;

                r = expand(&found, abs, &dirs);
                if (r == -E2BIG) {
                        /* Too many: the directory the glob starts from, whole (the safe side). */
                        char *w = strpbrk(abs, "*?[");

                        while (w > abs && w[-1] != '/')
                                w--;
                        *w = 0;
                        return protect_path(prot, abs);
                }
                for (size_t i = 0; r >= 0 && i < found.n; i++)
                        r = protect_path(prot, found.v[i]);
                return r;
        }
}

static bool below_any(const struct list *l, const char *path)
{
        for (size_t i = 0; i < l->n; i++)
                if (path_is_below(path, l->v[i]))
                        return true;
        return false;
}

/*
 * A directory listed for a ruleset, as it was before it was listed. A change of its entries
 * changes its mtime and ctime; the inode of each entry granted is in the ruleset (Landlock
 * rules hold inodes), so an entry removed, renamed or replaced since changes its directory.
 */
struct stamp {
        dev_t dev;
        ino_t ino;
        struct timespec mtime, ctime;
};

/* A directory changed this recently (seconds) may change again within the same timestamp
 * tick unseen: a ruleset listed from it is not kept (git's "racily clean" rule). */
#define STAMP_SETTLE_SEC 2
/* Calls one cached ruleset serves at most (cache.uses). */
#define CACHE_USES_MAX 256

/* @path's stamp; false when it cannot be had or is too recent to trust. */
static bool take_stamp(const char *path, struct stamp *ret)
{
        struct timespec now;
        struct stat st;

        if (stat(path, &st) < 0 || clock_gettime(CLOCK_REALTIME, &now) < 0)
                return false;
        *ret = (struct stamp){st.st_dev, st.st_ino, st.st_mtim, st.st_ctim};
        return st.st_mtim.tv_sec + STAMP_SETTLE_SEC < now.tv_sec &&
               st.st_ctim.tv_sec + STAMP_SETTLE_SEC < now.tv_sec;
}

/*
 * Where the grants go: a ruleset built here (@ruleset_fd >= 0: each entry opened relative to
 * its directory and added), or paths the child opens itself (terminal.isolation strict: it
 * sees another root).
 */
struct sink {
        struct path_protect *p; /* the paths go to p->grants */
        int ruleset_fd;
        int abi;
        size_t n; /* grants so far */
        bool capped;
        struct list dirs;     /* what was listed, in order */
        struct stamp *stamps; /* dirs.v[i] as it was before it was listed */
        bool settled;         /* every stamp trustworthy: the ruleset may be kept */
};

static int grant_path(struct sink *k, const char *path)
{
        struct path_protect *p = k->p;
        char **v;

        if (p->n_grants + 1 >= p->n_alloc) {
                size_t a = p->n_alloc ? p->n_alloc * 2 : 64;

                v = reallocarray(p->grants, a, sizeof(char *));
                if (!v)
                        return -ENOMEM;
                p->grants = v;
                p->n_alloc = a;
        }
        p->grants[p->n_grants] = strdup(path);
        if (!p->grants[p->n_grants])
                return -ENOMEM;
        p->grants[++p->n_grants] = NULL;
        return 0;
}

/* Grant @name in @dir (its fd @dfd, or AT_FDCWD with @name absolute). */
static int grant(struct sink *k, int dfd, const char *dir, const char *name)
{
        _cleanup_free_ char *path = NULL;
        int fd, r;

        if (k->n >= MAX_GRANTS) {
                k->capped = true;
                return 0;
        }
        if (k->ruleset_fd < 0) {
                path = dir ? path_join(dir, name) : strdup(name);
                if (!path)
                        return -ENOMEM;
                r = grant_path(k, path);
        } else {
                fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        /* Gone since it was listed: nothing granted, the safe side. */
                        return errno == ENOMEM ? -ENOMEM : 0;
                r = landlock_protect_add(k->ruleset_fd, fd, k->abi);
                (void) close(fd);
        }
        if (r >= 0)
                k->n++;
        return r;
}

/*
 * A device a root command could write a disk or the kernel's memory through, under every
 * rule: /dev as root is granted entry by entry without them.
 */
static bool is_raw_device(const char *dir, const char *name, unsigned char type)
{
        return strcmp(dir, "/dev") == 0 && (type == DT_BLK || strcmp(name, "mem") == 0 ||
                                            strcmp(name, "kmem") == 0 || strcmp(name, "port") == 0);
}

/* Grant every entry of @dir but the protected paths, the ancestors and symlinks. */
static int grant_entries(struct sink *k, const char *dir, const struct list *prot,
                         const struct list *anc)
{
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int dfd, r;

        /* Its stamp before its listing: a change while listing makes the next call rebuild. */
        if (k->dirs.n + 1 >= k->dirs.alloc) {
                struct stamp *v =
                        reallocarray(k->stamps, k->dirs.alloc ? k->dirs.alloc * 2 : 16, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                k->stamps = v;
        }
        k->settled &= take_stamp(dir, &k->stamps[k->dirs.n]);
        r = list_consume(&k->dirs, strdup(dir));
        if (r < 0)
                return r;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOMEM ? -ENOMEM : 0; /* nothing granted there: the safe side */
        d = fdopendir(dfd);
        if (!d) {
                (void) close(dfd);
                return -ENOMEM;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *child = NULL;
                unsigned char type = de->d_type;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                child = path_join(dir, de->d_name);
                if (!child)
                        return -ENOMEM;
                if (list_has(prot, child) || list_has(anc, child))
                        continue;
                if (type == DT_UNKNOWN) {
                        struct stat st;

                        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        type = IFTODT(st.st_mode);
                }
                if (type == DT_LNK)
                        continue;
                /* As root, /dev entry by entry: no disk, no memory (below). */
                if (strcmp(child, "/dev") == 0 && geteuid() == 0) {
                        r = grant_entries(k, "/dev", prot, anc);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (is_raw_device(dir, de->d_name, type))
                        continue;
                r = grant(k, dfd, dir, de->d_name);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every grant for @prot (protected real paths) and @anc (their ancestors) into @k. */
static int grant_all(struct sink *k, bool own_root, const struct list *prot, const struct list *anc)
{
        int r;

        for (size_t i = 0; i < anc->n; i++) {
                r = grant_entries(k, anc->v[i], prot, anc);
                if (r < 0)
                        return r;
        }
        /* The devices every command may need (a rule on / or /dev does not take them). */
        for (const char *const *dev = device_grants; *dev; dev++) {
                bool taken = false;

                for (size_t i = 0; i < prot->n && !taken; i++)
                        taken = strcmp(prot->v[i], "/") != 0 && path_is_below(*dev, prot->v[i]);
                if (!taken && (r = grant(k, AT_FDCWD, NULL, *dev)) < 0)
                        return r;
        }
        /*
         * Its own root (a terminal.isolation strict command, a script under the namespaces
         * layer): its /tmp and /dev/shm are private tmpfs, opened by these names in its own
         * root (the grants are opened there): writable as a plain process's are, unless a
         * protected path lies below them (a working directory under /tmp is bound inside the
         * private /tmp at its host path).
         */
        for (const char *const *t = private_trees; own_root && *t; t++) {
                bool holds = false;

                for (size_t i = 0; i < prot->n && !holds; i++)
                        holds = path_is_below(prot->v[i], *t);
                if (holds && strcmp(*t, "/tmp") == 0)
                        k->p->tmp_held = true;
                if (!holds && (r = grant(k, AT_FDCWD, NULL, *t)) < 0)
                        return r;
        }
        return 0;
}

/* ---- the ruleset of the last call, reused while nothing it was built from changed ---- */

static struct {
        pthread_mutex_t lock;
        int ruleset_fd; /* -1: none */
        int abi;
        uid_t euid;
        struct list prot, dirs;
        struct stamp *stamps; /* one per dirs.v[i] */
        bool capped;
        /* Calls served: a root command's child adds its own devpts to the ruleset it shares
         * (terminal.c), so it is built anew now and then, not grown for ever. */
        unsigned uses;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .ruleset_fd = -1};

static bool lists_equal(const struct list *a, const struct list *b)
{
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->v[i], b->v[i]) != 0)
                        return false;
        return true;
}

static bool stamp_equal(const struct stamp *a, const struct stamp *b)
{
        return a->dev == b->dev && a->ino == b->ino && a->mtime.tv_sec == b->mtime.tv_sec &&
               a->mtime.tv_nsec == b->mtime.tv_nsec && a->ctime.tv_sec == b->ctime.tv_sec &&
               a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Under cache.lock: a copy of the cached ruleset's fd when it holds for @prot, else -1. */
static int cache_lookup(const struct list *prot, int abi, bool *ret_capped)
{
        if (cache.ruleset_fd < 0 || cache.abi != abi || cache.euid != geteuid() ||
            !lists_equal(&cache.prot, prot))
                return -1;
        for (size_t i = 0; i < cache.dirs.n; i++) {
                struct stamp now;

                if (!take_stamp(cache.dirs.v[i], &now) || !stamp_equal(&now, &cache.stamps[i]))
                        return -1;
        }
        if (++cache.uses > CACHE_USES_MAX)
                return -1;
        *ret_capped = cache.capped;
        return fcntl(cache.ruleset_fd, F_DUPFD_CLOEXEC, 3);
}

static void cache_drop(void)
{
        if (cache.ruleset_fd >= 0)
                (void) close(cache.ruleset_fd);
        cache.ruleset_fd = -1;
        list_free(&cache.prot);
        list_free(&cache.dirs);
        free(cache.stamps);
        cache.stamps = NULL;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * The ruleset for @prot and @anc as an fd of its own into *@ret_fd (the caller closes it):
 * the cached one when nothing it was built from changed, else built anew (and cached when
 * every directory it listed had settled).
 */
static int ruleset_for(const struct list *prot, const struct list *anc, int abi, int *ret_fd,
                       bool *ret_capped)
{
        _cleanup_(list_free) struct list prot_copy = {};
        struct path_protect none = PATH_PROTECT_NULL;
        struct sink k = {.p = &none, .abi = abi, .settled = true};
        int r;

        pthread_mutex_lock(&cache.lock);
        *ret_fd = cache_lookup(prot, abi, ret_capped);
        pthread_mutex_unlock(&cache.lock);
        if (*ret_fd >= 0)
                return 0;

        /* Built outside the lock: other calls go on meanwhile. */
        k.ruleset_fd = landlock_protect_ruleset(abi);
        if (k.ruleset_fd < 0)
                return k.ruleset_fd;
        r = grant_all(&k, false, prot, anc);
        for (size_t i = 0; r >= 0 && i < prot->n; i++)
                r = list_consume(&prot_copy, strdup(prot->v[i]));
        if (r >= 0) {
                *ret_fd = fcntl(k.ruleset_fd, F_DUPFD_CLOEXEC, 3);
                if (*ret_fd < 0)
                        r = -errno;
        }
        if (r < 0 || !k.settled) {
                (void) close(k.ruleset_fd);
                k.ruleset_fd = -1;
        }
        *ret_capped = k.capped;
        pthread_mutex_lock(&cache.lock);
        if (k.ruleset_fd >= 0) {
                cache_drop();
                cache.ruleset_fd = k.ruleset_fd;
                cache.abi = abi;
                cache.euid = geteuid();
                cache.prot = prot_copy;
                prot_copy = (struct list){};
                cache.dirs = k.dirs;
                k.dirs = (struct list){};
                cache.stamps = TAKE_PTR(k.stamps);
                cache.capped = k.capped;
                cache.uses = 0;
        }
        pthread_mutex_unlock(&cache.lock);
        list_free(&k.dirs);
        free(k.stamps);
        return r;
}

/*
 * When the working directory (@cwd) is on the way to a protected path, nothing new can be made
 * directly in it (Landlock grants rights down a tree and cannot carve a tree out): a command
 * creating a file at the top of the project fails with EACCES. One warning line says so,
 * naming the first such protected path, so that the failure explains itself.
 */
static int warn_workdir_on_the_way(const struct list *prot, const struct list *anc, const char *cwd,
                                   unsigned who, char ***warnings)
{
        _cleanup_free_ char *real = realpath(cwd, NULL);
        const char *by = !(who & PATH_PROTECT_SCRIPT)     ? "terminal commands"
                         : !(who & PATH_PROTECT_TERMINAL) ? "the script's own writes"
                                                          : "terminal commands or the script";
        size_t n;

        if (!real || !list_has(anc, real))
                return 0;
        n = strlen(real);
        for (size_t i = 0; i < prot->n; i++) {
                const char *p = prot->v[i];

                if (strncmp(p, real, n) != 0 || (n > 1 && p[n] != '/'))
                        continue;
                return strv_consume(
                        warnings,
                        strdup_printf("policy: the working directory '%s' is on the way to the "
                                      "protected '%s': nothing new can be made directly in it "
                                      "by %s (Landlock cannot carve a protected tree out of a "
                                      "writable one); what is in it stays writable, and "
                                      "write_file can make new files there (docs/policy.md)",
                                      real, p, by));
        }
        return 0;
}

int path_protect_build(const struct ptc_config *c, const char *cwd, const char *home,
                       unsigned flags, struct path_protect *ret)
{
        _cleanup_(list_free) struct list prot = {}, anc = {};
        bool capped = false;
        int abi, r;

        *ret = PATH_PROTECT_NULL;
        if (!path_protect_wanted(c))
                return 0;
        abi = landlock_abi();
        r = flags & PATH_PROTECT_QUIET ? 0 : path_protect_describe(c, abi, flags, &ret->warnings);
        if (r < 0 || abi < 1)
                return r;

        for (size_t i = 0; i < c->policy.n_rules; i++) {
                const struct policy_rule *rule = &c->policy.rules[i];

                if (!rule_binds(rule))
                        continue;
                for (char **m = rule->match; *m; m++) {
                        r = protect_pattern(&prot, *m, cwd, home, flags, &ret->warnings);
                        if (r < 0)
                                return r;
                }
        }
        /* Only name patterns (or nothing resolvable): no ruleset, no cost. */
        if (prot.n == 0)
                return 0;
        /* One order whatever the directories gave: the cache compares lists. */
        qsort(prot.v, prot.n, sizeof(char *), cmp_str);

        /* The ancestors of each protected path that are not protected themselves. */
        for (size_t i = 0; i < prot.n; i++) {
                _cleanup_free_ char *a = strdup(prot.v[i]);
                char *slash;

                if (!a)
                        return -ENOMEM;
                while ((slash = strrchr(a, '/'))) {
                        slash[slash == a ? 1 : 0] = 0;
                        if (!below_any(&prot, a) && !list_has(&anc, a) &&
                            (r = list_consume(&anc, strdup(a))) < 0)
                                return r;
                        if (strcmp(a, "/") == 0)
                                break;
                }
        }

        /* The price of an allow-list where it hurts most, said where the model reads it
         * (PATH_PROTECT_QUIET is about the rules' lines, said once a run elsewhere). */
        if (cwd) {
                r = warn_workdir_on_the_way(&prot, &anc, cwd, flags, &ret->warnings);
                if (r < 0)
                        return r;
        }

        if (flags & PATH_PROTECT_OWN_ROOT) {
                /* The child opens the paths in its own root (private /tmp): no ruleset here. */
                struct sink k = {.p = ret, .ruleset_fd = -1, .abi = abi};

                r = grant_all(&k, true, &prot, &anc);
                list_free(&k.dirs);
                free(k.stamps);
                if (r < 0)
                        return r;
                capped = k.capped;
                if (!ret->grants && (r = grant_path(&k, "/dev/null")) < 0)
                        return r;
        } else {
                r = ruleset_for(&prot, &anc, abi, &ret->ll.ruleset_fd, &capped);
                if (r < 0)
                        return r;
        }
        if (capped) {
                r = strv_consume(&ret->warnings,
                                 strdup_printf("policy: more than %d entries beside the protected "
                                               "paths: the rest are not writable",
                                               MAX_GRANTS));
                if (r < 0)
                        return r;
        }
        ret->ll.grants = (const char *const *) ret->grants;
        ret->ll.abi = abi;
        return 0;
}

const struct landlock_protect *path_protect_landlock(const struct path_protect *p)
{
        return p->ll.ruleset_fd >= 0 || p->ll.grants ? &p->ll : NULL;
}

int path_protect_add_warnings(const struct path_protect *p, json_t *result)
{
        json_t *list;

        if (!p->warnings)
                return 0;
        list = json_array();
        if (!list)
                return -ENOMEM;
        for (char **w = p->warnings; *w; w++)
                if (json_array_append_new(list, json_string(*w)) < 0) {
                        json_decref(list);
                        return -ENOMEM;
                }
        return json_object_set_new(result, "warnings", list) < 0 ? -ENOMEM : 0;
}

void path_protect_done(struct path_protect *p)
{
        if (p->ll.ruleset_fd >= 0)
                (void) close(p->ll.ruleset_fd);
        for (size_t i = 0; i < p->n_grants; i++)
                free(p->grants[i]);
        free(p->grants);
        strv_free(p->warnings);
        *p = PATH_PROTECT_NULL;
}
