/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Path safety rules of the file tools (docs/seed.md 2.1 and 2.2, the
 * seed's agent/file_safety.py and tools/binary_extensions.py), plus a few
 * helpers private to the builtin tools in this directory. Nothing outside
 * src/core/tools includes this header.
 *
 * Everything here may be called from any thread (the builtin tools run on worker threads).
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"

struct capture;
struct tool_ctx;

/* --- deny lists and path classification (file-safety.c) --- */

/*
 * The device paths read_file refuses by name, without resolving symlinks:
 * /dev/zero, /dev/random, /dev/urandom, /dev/full, /dev/stdin, /dev/tty,
 * /dev/console, /dev/stdout, /dev/stderr, /dev/fd/0..2 and /proc/ * /fd/0..2.
 * @path is the argument after "~" expansion.
 */
bool file_safety_is_blocked_device(const char *path);

/*
 * True when @path ends in one of the seed's binary extensions (images, video,
 * audio, archives, executables and libraries, Office documents, fonts,
 * bytecode, databases, design files, Flash, .lockb/.dat/.data; not .pdf). As
 * the seed, the extension is everything after the last '.' of the whole
 * path, compared case-insensitively.
 */
bool file_safety_has_binary_extension(const char *path);

/*
 * The suffix the seed names in the binary-file message (Python's
 * PurePath.suffix, lower-cased) written into @buf; "" when there is none.
 */
const char *file_safety_suffix(const char *path, char *buf, size_t size);

/*
 * write_file's refusal of system locations: true when @resolved or
 * @normalized starts with /etc/, /boot/, /usr/lib/systemd/, /private/etc/ or
 * /private/var/, or is a docker socket. Either may be NULL.
 */
bool file_safety_is_sensitive_path(const char *resolved, const char *normalized);

/*
 * The write deny list (credentials, shell start-up files, /etc/sudoers ...)
 * and $HERMES_WRITE_SAFE_ROOT, checked on the symlink-resolved form of
 * @abs_path, for the home directory of ctx->env's $HOME and for the real one
 * from the password database. Returns 1 when denied, 0 when allowed, -ENOMEM.
 */
_must_check_ int file_safety_write_denied(const struct tool_ctx *ctx, const char *abs_path);

/*
 * Python's os.path.realpath (non-strict): symlinks resolved in the part of
 * @path that exists, the rest appended as is, dangling symlinks followed.
 * @path must be absolute. Returns 0 or -errno (ENOMEM, ENAMETOOLONG, EINVAL).
 */
_must_check_ int file_safety_realpath(const char *path, char **ret);

/* Python's os.path.normpath (lexical) of @path into *ret (caller frees). 0 or -ENOMEM. */
_must_check_ int file_safety_normpath(const char *path, char **ret);

/* --- helpers shared by the builtin tools (tool-util.c) --- */

/*
 * $HOME of ctx->env, else the password database's home of the user running ptc, into
 * *ret (caller frees). 0, -ENOENT (neither is known) or -ENOMEM.
 */
_must_check_ int tool_home_dir(const struct tool_ctx *ctx, char **ret);
/* The password database's home of the user running ptc. 0, -ENOENT or -ENOMEM. */
_must_check_ int tool_real_home_dir(char **ret);

/*
 * Expand a leading "~", "~/..." (ctx->env's $HOME) or "~user/..." (password database)
 * and nothing else into *ret (caller frees); relative paths stay relative, as the seed
 * shows them in messages, and a "~" whose home is unknown stays literal. 0 or -ENOMEM.
 */
_must_check_ int tool_expand_tilde(const struct tool_ctx *ctx, const char *path, char **ret);

/*
 * A path as the seed's file tools check it. Owns its strings; release with
 * tool_path_release() (or _cleanup_tool_path_).
 */
struct tool_path {
        char *shown;      /* "~" expanded, relative kept (the seed's messages and headers) */
        char *abs;        /* absolute, not normalised */
        char *resolved;   /* os.path.realpath(abs); NULL when it could not be resolved */
        char *normalized; /* os.path.normpath(shown) */
};

/* Fill @ret from @path (relative to ctx->cwd). 0 or -ENOMEM; on failure @ret holds what was made.
 */
_must_check_ int tool_path_init(const struct tool_ctx *ctx, const char *path,
                                struct tool_path *ret);
void tool_path_release(struct tool_path *p);
#define _cleanup_tool_path_ _cleanup_(tool_path_release)

/* The seed's _check_sensitive_path(): true when @p names a system path no tool may write. */
bool tool_path_is_sensitive(const struct tool_path *p);

/*
 * The first check of every tool that writes (write_file, patch, each path of a V4A patch,
 * Move targets included; file-safety.c): fill @ret from @path with tool_path_init(), then
 * refuse a system path as the seed's _check_sensitive_path() does. Returns 0 when the path
 * may be written (the write deny list is checked later, on @ret), 1 when it is refused (then
 * *ret_result is the seed's {"error": "Refusing to write to sensitive system path: <path>
 * ..."}, a new reference), or -ENOMEM. On failure @ret holds what was made.
 */
_must_check_ int tool_path_check(const struct tool_ctx *ctx, const char *path,
                                 struct tool_path *ret, json_t **ret_result);

/*
 * *ret = {"error": <formatted message>}. Returns 0, or -ENOMEM (then *ret is NULL), so a tool
 * can `return tool_error_result(ret, ...)`.
 */
_must_check_ int tool_error_result(json_t **ret, const char *fmt, ...) _printf_(2, 3);
/* The same with the seed's PatchResult shape: {"success": false, "error": <message>}. */
_must_check_ int tool_failure_result(json_t **ret, const char *fmt, ...) _printf_(2, 3);

/*
 * A JSON string of @n bytes of content (file text, command output, a diff): invalid UTF-8
 * replaced by U+FFFD, as the seed decodes output. NULL on ENOMEM.
 */
json_t *tool_json_string(const char *s, size_t n);

/*
 * A JSON string for a name, or a message that may hold names (the error texts): bytes that are
 * not UTF-8 are written in the escape form (utf8_escape_bytes(), docs/protocol.md), so a name
 * taken from a result can be passed back to a tool and names the same file. NULL on ENOMEM.
 */
json_t *tool_json_name(const char *s, size_t n);
static inline json_t *tool_json_str(const char *s)
{
        return tool_json_name(s, s ? strlen(s) : 0);
}

/* Python's type name for a JSON value ("str", "int", "dict", ...; NULL is "NoneType"). */
const char *tool_json_type_name(const json_t *v);

/* Set @key of @o to a new reference, returning -ENOMEM when @v is NULL or the set failed. */
_must_check_ int tool_json_set(json_t *o, const char *key, json_t *v);

/*
 * tool_json_set() for a member named by the file name @name, written as tool_json_name()
 * writes it (a key must be UTF-8 too). Takes @v even on failure. 0 or -ENOMEM.
 */
_must_check_ int tool_json_set_name(json_t *o, const char *name, json_t *v);

/* --- running a helper process (terminal.c; also used by write_file's Python linter) --- */

struct sandbox_opts; /* core/sandbox/sandbox.h */

struct tool_process {
        const char *path;          /* executable, absolute */
        const char *fallback_path; /* tried when @path does not exist (ENOENT); may be NULL */
        char *const *argv;         /* borrowed */
        char *const *envp;         /* borrowed; NULL = empty environment */
        const char *cwd;           /* NULL = "/" */
        int stdin_fd;              /* -1 = /dev/null */
        bool merge_stderr;         /* stderr into the output pipe; else /dev/null */
        usec_t deadline;           /* CLOCK_MONOTONIC; USEC_INFINITY = none */
        int cancel_fd;             /* POLLIN = cancel; -1 = none */
        struct capture *output;    /* where the output goes; NULL = discarded */
        /*
         * Start it as pid 1 of new pid and mount namespaces with a fresh /proc: it sees its
         * own processes only, never ptc (root only: unprivileged, a pid namespace needs a
         * user namespace, which would change file ownership and break sudo). Where the
         * kernel refuses (a container, no CAP_SYS_ADMIN), a plain start, once and for all.
         */
        bool own_pid_namespace;
        /*
         * Confine it in the script's sandbox instead (terminal.isolation: strict): path,
         * argv, envp, cwd and the limits come from here, the stdio fds are set by
         * tool_process_run(). Borrowed; NULL = not confined.
         */
        const struct sandbox_opts *sandbox;
};

struct tool_process_result {
        int exit_code; /* exit status, or -signal as Python's returncode */
        bool timed_out;
        bool cancelled;
        char error[512]; /* when it could not start: why, if more is known than the errno */
};

/*
 * Run the process in its own session with a clean signal state, feed its
 * output into o->output until it exits and the pipe is drained, and reap it.
 * At the deadline the process group gets SIGTERM, one second of grace, then
 * SIGKILL; on cancel SIGKILL at once. When the process exits, what is left of
 * its process group is killed too. Returns 0 (the result is in @ret) or -errno
 * when it could not be started (exec and chdir errors included).
 */
_must_check_ int tool_process_run(const struct tool_process *o, struct tool_process_result *ret);
