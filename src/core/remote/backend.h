/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Where a script runs: a backend SPEC (`--backend`, `code_execution.backend`; docs/remote.md)
 * and the channel command that reaches it.
 *
 *   local                           this machine (no channel)
 *   ssh:[USER@]HOST[:PORT]          HOST a name from DNS or the ssh config, or [IPv6]
 *   docker:CONTAINER  podman:CONTAINER
 *   kubectl:[NAMESPACE/]POD[:CONTAINER]
 *   apptainer:INSTANCE
 *   exec:COMMAND...                 any command whose stdin and stdout are a POSIX shell on
 *                                   the target: words as a shell splits them, quotes
 *                                   allowed; no operators, redirections or expansions
 *
 * Every channel command ends in a shell on the target reading its stdin (`sh`), so the
 * host starts the agent the same way on all of them: it writes the start-up commands to
 * that shell, and the shell's exec of the agent turns the rest of stdin and stdout into the
 * stream (remote/frame.h). Names are checked against what the tool accepts, and none may
 * start with '-': a SPEC can never become an option of ssh, docker or kubectl.
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>

#include "basic/macro.h"

struct diag;

/* Bytes of a SPEC. */
#define BACKEND_SPEC_MAX 4096

enum backend_kind {
        BACKEND_LOCAL,
        BACKEND_SSH,
        BACKEND_DOCKER,
        BACKEND_PODMAN,
        BACKEND_KUBECTL,
        BACKEND_APPTAINER,
        BACKEND_EXEC,
};

/* A parsed SPEC. Every string is owned; backend_free() frees them. */
struct backend {
        enum backend_kind kind;
        char *spec;      /* the SPEC as given, for messages */
        char *user;      /* ssh: NULL when not given (the ssh config's, or the login name) */
        char *host;      /* ssh: without the brackets of an IPv6 address */
        unsigned port;   /* ssh: 0 when not given */
        char *namespace; /* kubectl: NULL for the context's namespace */
        char *name;      /* the container, pod or instance */
        char *container; /* kubectl: NULL for the pod's default container */
        char **command;  /* exec: the words, NULL-terminated */
};

/*
 * Parse @spec. On success *ret is the caller's (backend_free()). Returns 0, -EINVAL with
 * @reterr saying what is wrong and what a SPEC looks like, or -ENOMEM.
 */
_must_check_ int backend_parse(const char *spec, struct backend **ret, struct diag *reterr);

/* NULL-safe; returns NULL. */
struct backend *backend_free(struct backend *b);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct backend *, backend_free);
#define _cleanup_backend_ _cleanup_(backend_freep)

/* "local", "ssh", "docker", ... Static storage. */
const char *backend_kind_name(enum backend_kind kind);

/*
 * The channel command of a remote backend: the argv that opens a POSIX shell on the
 * target with its stdin and stdout as the channel (`ssh -T -o BatchMode=yes ... HOST sh`,
 * `docker exec -i CONTAINER sh`, ...). *ret is a NULL-terminated strv, the caller's
 * (strv_free()). Returns 0, -EINVAL for a local backend, or -ENOMEM.
 */
_must_check_ int backend_channel_argv(const struct backend *b, char ***ret);
