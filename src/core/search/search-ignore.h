/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Ignore rules of search_files, as ripgrep 13 applies them by default (the seed shelled out to
 * `rg`): gitignore-syntax files (.gitignore, .ignore, .rgignore, .git/info/exclude) and the
 * --glob overrides (file_glob, and the name pattern of target="files").
 *
 * Glob syntax (ripgrep's globset with literal_separator and backslash escapes): `*` and `?`
 * never match '/', `[...]` / `[!...]` / `[^...]` classes (never matching '/'), `{a,b}`
 * alternatives (not nested), `\x` a literal x, and `**` as a whole path component: at the start
 * (followed by a slash) it matches any leading directories or none, between two slashes any
 * middle ones or none, after a final slash everything below; `**` elsewhere is `*`.
 *
 * Gitignore lines: `#` comments, trailing blanks trimmed unless escaped, `!` negates (a
 * whitelist), `\!` and `\#` are literal, a trailing `/` matches directories only, a leading or
 * middle `/` anchors the pattern to the file's directory, otherwise the pattern matches the
 * base name at any depth. Within one file the last matching line wins.
 *
 * Everything here may be called from any thread; a parsed struct ignore_file is immutable.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/* Lines of one ignore file we keep; the rest is dropped (a hostile tree cannot make us slow). */
#define IGNORE_RULES_MAX 20000
/* Bytes of one ignore file we read. */
#define IGNORE_FILE_BYTES_MAX (4u * 1024 * 1024)
/* Alternatives one `{a,b}` line may expand to. */
#define IGNORE_ALTERNATIVES_MAX 64

enum ignore_match {
        IGNORE_NONE = 0,  /* no rule says anything */
        IGNORE_IGNORE,    /* skip the entry */
        IGNORE_WHITELIST, /* keep the entry, whatever less specific rules (and hiddenness) say */
};

struct ignore_file;

/*
 * Parse gitignore-syntax @text (@n bytes, need not be NUL-terminated). Lines that are not
 * valid globs are skipped, as ripgrep does. On success *ret is a new object (caller frees with
 * ignore_file_free(); it may hold no rules). Returns 0 or -ENOMEM.
 */
_must_check_ int ignore_file_parse(const char *text, size_t n, struct ignore_file **ret);

/*
 * Parse one --glob override (a gitignore line whose meaning is inverted: "*.py" keeps matching
 * files and drops the others, "!*.min.js" drops matching entries). Returns 0, -ENOMEM, or
 * -EINVAL when @glob is not a valid glob, with a static message in *ret_err.
 */
_must_check_ int ignore_glob_parse(const char *glob, struct ignore_file **ret,
                                   const char **ret_err);

struct ignore_file *ignore_file_free(struct ignore_file *f);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct ignore_file *, ignore_file_free)
#define _cleanup_ignore_file_ _cleanup_(ignore_file_freep)

/* Number of rules (expanded alternatives count one each). */
size_t ignore_file_size(const struct ignore_file *f);
/* True when some rule matches whole paths (anchored), not only base names. */
bool ignore_file_has_anchored(const struct ignore_file *f);

/*
 * Match @path (@len bytes, relative to the file's directory, '/'-separated, no leading "./"
 * or '/') against the rules of @f (NULL: none), last matching rule first.
 */
enum ignore_match ignore_file_match(const struct ignore_file *f, const char *path, size_t len,
                                    bool is_dir);

/*
 * ripgrep's override semantics for --glob rules @f, on @path as ripgrep would see it (the
 * printed path without a leading "./"): a matching plain glob keeps the entry
 * (IGNORE_WHITELIST), a matching "!glob" drops it (IGNORE_IGNORE); a file that matches no rule
 * is dropped when there are plain globs; a directory that matches none gets IGNORE_NONE.
 */
enum ignore_match ignore_override_match(const struct ignore_file *f, const char *path, size_t len,
                                        bool is_dir);

/*
 * One glob (syntax above, without the gitignore line rules) against @s. For tests and for
 * the override code; the `{a,b}` alternatives are not handled here (ignore_file_parse
 * expands them).
 */
bool ignore_glob_match(const char *pat, size_t plen, const char *s, size_t slen);

/* --- per-directory rule chains --- */

enum ignore_kind {
        IGNORE_KIND_RGIGNORE,  /* .rgignore: highest precedence */
        IGNORE_KIND_IGNORE,    /* .ignore */
        IGNORE_KIND_GITIGNORE, /* .gitignore: only inside a git repository */
        IGNORE_KIND_EXCLUDE,   /* .git/info/exclude of a repository's top directory */
        _IGNORE_KIND_MAX,
};

/*
 * The rules of one directory, linked to those of its parent. The chain reaches up to "/":
 * ripgrep reads the ignore files of the search root's ancestors too. For one entry, each kind
 * is decided by the nearest directory whose file of that kind has a matching rule; the kinds
 * are then tried in precedence order. .gitignore and exclude rules count only from the
 * directory that holds ".git" downwards, and only when there is one (rg's default).
 */
struct ignore_dir {
        const struct ignore_dir *parent;                 /* borrowed; must outlive this one */
        const struct ignore_dir *next[_IGNORE_KIND_MAX]; /* nearest self-or-ancestor with a file */
        const struct ignore_dir *git_root;           /* nearest self-or-ancestor holding ".git" */
        struct ignore_file *files[_IGNORE_KIND_MAX]; /* owned; NULL when absent */
        /*
         * Git's global excludes (core.excludesFile), borrowed, inherited from the parent; the
         * chain's first directory has it set by the caller before ignore_dir_load/link.
         * Lowest precedence; relative to the repository's top directory.
         */
        const struct ignore_file *global;
        size_t abs_len; /* length of the directory's absolute path; 0 for "/" */
        unsigned depth; /* "/" is 0 */
        bool has_git;
};

/* The names below a directory that ignore_dir_load() reads, as bits for its @present mask. */
#define IGNORE_PRESENT_RGIGNORE (1u << IGNORE_KIND_RGIGNORE)
#define IGNORE_PRESENT_IGNORE (1u << IGNORE_KIND_IGNORE)
#define IGNORE_PRESENT_GITIGNORE (1u << IGNORE_KIND_GITIGNORE)
#define IGNORE_PRESENT_GIT (1u << IGNORE_KIND_EXCLUDE) /* ".git" exists */
#define IGNORE_PRESENT_ALL 0xFu

/* Bit of @present for directory entry @name, 0 when the name means nothing to us. */
unsigned ignore_present_bit(const char *name);

/*
 * Fill @d (zeroed by the caller) for the directory open at @dirfd, whose absolute path is
 * @abs_len bytes long, below @parent (NULL for "/"): read the ignore files named in @present
 * (IGNORE_PRESENT_ALL: try every name) and, when ".git" is a directory, .git/info/exclude.
 * Unreadable files count as absent. Returns 1 when @d holds rules or a ".git" (the caller
 * keeps it), 0 when it holds neither (the caller may use @parent instead), -ENOMEM.
 * On every return ignore_dir_release() may be called.
 */
_must_check_ int ignore_dir_load(struct ignore_dir *d, const struct ignore_dir *parent, int dirfd,
                                 size_t abs_len, unsigned present);

/* Set up @d (files already set) below @parent: link the chains. */
void ignore_dir_link(struct ignore_dir *d, const struct ignore_dir *parent, size_t abs_len,
                     bool has_git);

void ignore_dir_release(struct ignore_dir *d);

/*
 * Git's global excludes file, found as ripgrep finds it: the core.excludesFile of
 * @home/.gitconfig, else of $XDG_CONFIG_HOME/git/config (@xdg_config_home, may be NULL: then
 * @home/.config), else $XDG_CONFIG_HOME/git/ignore. A leading "~/" is @home. *ret is NULL when
 * there is none or it cannot be read; otherwise a new object (caller frees). @home NULL: none.
 * Returns 0 or -ENOMEM.
 */
_must_check_ int ignore_global_excludes_load(const char *home, const char *xdg_config_home,
                                             struct ignore_file **ret);

/*
 * The verdict of the chain ending at @d (NULL: no rules) for the entry at absolute path @abs
 * (@len bytes), which lies directly in @d's directory or below.
 */
enum ignore_match ignore_dir_match(const struct ignore_dir *d, const char *abs, size_t len,
                                   bool is_dir);
