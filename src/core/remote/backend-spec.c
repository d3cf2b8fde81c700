/* SPDX-License-Identifier: MIT */
#include "core/remote/backend.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/diag.h"
#include "basic/parse-util.h"
#include "basic/strv.h"
#include "core/shell/shell-parse.h"

#define SPEC_FORMS                                                            \
        "local, ssh:[USER@]HOST[:PORT], docker:CONTAINER, podman:CONTAINER, " \
        "kubectl:[NAMESPACE/]POD[:CONTAINER], apptainer:INSTANCE or exec:COMMAND..."
/* Bytes of a SPEC echoed in a message. */
#define ECHO_MAX 200

static const char *const kind_names[] = {
        [BACKEND_LOCAL] = "local",     [BACKEND_SSH] = "ssh",
        [BACKEND_DOCKER] = "docker",   [BACKEND_PODMAN] = "podman",
        [BACKEND_KUBECTL] = "kubectl", [BACKEND_APPTAINER] = "apptainer",
        [BACKEND_EXEC] = "exec",
};

const char *backend_kind_name(enum backend_kind kind)
{
        return kind <= BACKEND_EXEC ? kind_names[kind] : "unknown";
}

struct backend *backend_free(struct backend *b)
{
        if (!b)
                return NULL;
        free(b->spec);
        free(b->user);
        free(b->host);
        free(b->namespace);
        free(b->name);
        free(b->container);
        strv_free(b->command);
        free(b);
        return NULL;
}

static bool is_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [A-Za-z0-9] then [A-Za-z0-9._-]: a user, a host name or alias, a container, an instance. */
static bool is_name(const char *s, size_t n, size_t max)
{
        if (n == 0 || n > max || !is_alnum(s[0]))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
                        return false;
        return true;
}

/* Kubernetes' DNS-1123 label (namespace, container: @dots false) or subdomain (a pod). */
static bool is_dns_name(const char *s, size_t n, size_t max, bool dots)
{
        if (n == 0 || n > max || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_lower_alnum(s[i]) && s[i] != '-' && !(dots && s[i] == '.'))
                        return false;
        return true;
}

/* An IPv6 address as written between brackets, with an optional %zone. */
static bool is_ipv6(const char *s, size_t n)
{
        bool colon = false;

        if (n == 0 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '%')
                        return colon && is_name(s + i + 1, n - i - 1, 32);
                if (c == ':')
                        colon = true;
                else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                           (c >= 'A' && c <= 'F') || c == '.'))
                        return false;
        }
        return colon;
}

static int bad(const char *spec, struct diag *reterr, const char *why)
{
        return diag_set(reterr, -EINVAL, "backend '%.*s': %s", ECHO_MAX, spec, why);
}

static int set(char **dst, const char *s, size_t n)
{
        *dst = strndup(s, n);
        return *dst ? 0 : -ENOMEM;
}

static int parse_ssh(struct backend *b, const char *s, struct diag *reterr)
{
        const char *at = strrchr(s, '@'), *host = at ? at + 1 : s, *port = NULL, *end;
        int64_t v;
        int k;

        if (at && !is_name(s, (size_t) (at - s), 64))
                return bad(b->spec, reterr,
                           "the user must be letters, digits, '.', '_' or '-' (not first), "
                           "at most 64");
        if (host[0] == '[') {
                end = strchr(host, ']');
                if (!end || !is_ipv6(host + 1, (size_t) (end - host - 1)))
                        return bad(b->spec, reterr, "an IPv6 host is written [ADDRESS]");
                if (end[1] == ':')
                        port = end + 2;
                else if (end[1])
                        return bad(b->spec, reterr, "after ']' only ':PORT' may follow");
                k = set(&b->host, host + 1, (size_t) (end - host - 1));
        } else {
                end = strchr(host, ':');
                if (end)
                        port = end + 1;
                else
                        end = host + strlen(host);
                if (!is_name(host, (size_t) (end - host), 253))
                        return bad(b->spec, reterr,
                                   "the host must be a name (letters, digits, '.', '_' or '-', "
                                   "not first) or [IPv6]");
                k = set(&b->host, host, (size_t) (end - host));
        }
        if (k < 0)
                return k;
        if (port) {
                if (safe_atoi64(port, &v) < 0 || v < 1 || v > 65535)
                        return bad(b->spec, reterr, "the port must be a number from 1 to 65535");
                b->port = (unsigned) v;
        }
        return at ? set(&b->user, s, (size_t) (at - s)) : 0;
}

static int parse_kubectl(struct backend *b, const char *s, struct diag *reterr)
{
        const char *slash = strchr(s, '/'), *pod = slash ? slash + 1 : s;
        const char *colon = strchr(pod, ':');
        size_t pod_len = colon ? (size_t) (colon - pod) : strlen(pod);
        int k;

        if (slash && !is_dns_name(s, (size_t) (slash - s), 63, false))
                return bad(b->spec, reterr,
                           "the namespace must be a DNS label: lower-case letters, digits and "
                           "'-', at most 63");
        if (!is_dns_name(pod, pod_len, 253, true))
                return bad(b->spec, reterr,
                           "the pod must be lower-case letters, digits, '-' and '.', at most 253");
        if (colon && !is_dns_name(colon + 1, strlen(colon + 1), 63, false))
                return bad(b->spec, reterr,
                           "the container must be a DNS label: lower-case letters, digits and "
                           "'-', at most 63");
        if (slash && (k = set(&b->namespace, s, (size_t) (slash - s))) < 0)
                return k;
        if (colon && (k = set(&b->container, colon + 1, strlen(colon + 1))) < 0)
                return k;
        return set(&b->name, pod, pod_len);
}

/* One simple command of literal words: what the channel runs, as a shell would split it. */
static int parse_exec(struct backend *b, const char *s, struct diag *reterr)
{
        _cleanup_shell_parse_ struct shell_parse *p = NULL;
        const struct shell_command *c;
        struct diag d;
        int k;

        k = shell_parse(s, strlen(s), 0, &p, &d);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return diag_set(reterr, -EINVAL, "backend '%.*s': the command does not parse: %s",
                                ECHO_MAX, b->spec, d.message);
        /* The commands of a `sh -c STRING` word are the target's business, not ours. */
        c = NULL;
        for (size_t i = 0; i < p->n_commands; i++) {
                const struct shell_command *x = &p->commands[i];

                if (x->flags & SHELL_CMD_NESTED_SHELL)
                        continue;
                if (c || x->flags != 0 || x->argc == 0)
                        return bad(b->spec, reterr,
                                   "exec: takes one command, its words only (no ';', '|', "
                                   "'&&', '&', subshell or assignment alone)");
                c = x;
        }
        if (!c)
                return bad(b->spec, reterr, "exec: takes a command");
        if (c->n_redirects > 0)
                return bad(b->spec, reterr,
                           "exec: takes no redirection: ptc owns the channel's "
                           "stdin and stdout");
        for (size_t i = 0; i < c->argc; i++)
                if (c->word_flags[i] &
                    (SHELL_WORD_EXPANDS | SHELL_WORD_GLOB | SHELL_WORD_ASSIGNMENT)) {
                        return diag_set(reterr, -EINVAL,
                                        "backend '%.*s': exec: the word '%.*s' would be "
                                        "expanded by a shell; ptc runs the command without "
                                        "one: write the value itself",
                                        ECHO_MAX, b->spec, ECHO_MAX, c->argv[i]);
                }
        if (c->argv[0][0] == '-')
                return bad(b->spec, reterr, "exec: the command cannot start with '-'");
        return strv_copy(c->argv, &b->command);
}

int backend_parse(const char *spec, struct backend **ret, struct diag *reterr)
{
        static const struct {
                const char *prefix;
                enum backend_kind kind;
        } kinds[] = {
                {"ssh:", BACKEND_SSH},
                {"docker:", BACKEND_DOCKER},
                {"podman:", BACKEND_PODMAN},
                {"kubectl:", BACKEND_KUBECTL},
                {"apptainer:", BACKEND_APPTAINER},
                {"exec:", BACKEND_EXEC},
        };
        _cleanup_backend_ struct backend *b = NULL;
        const char *rest = NULL;
        size_t n;
        int k;

        if (!spec || !ret)
                return -EINVAL;
        n = strnlen(spec, BACKEND_SPEC_MAX + 1);
        if (n > BACKEND_SPEC_MAX)
                return diag_set(reterr, -EINVAL, "backend: longer than %d bytes", BACKEND_SPEC_MAX);
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->spec = strdup(spec);
        if (!b->spec)
                return -ENOMEM;

        if (strcmp(spec, "local") == 0) {
                b->kind = BACKEND_LOCAL;
                *ret = TAKE_PTR(b);
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(kinds) && !rest; i++)
                if (strncmp(spec, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) {
                        b->kind = kinds[i].kind;
                        rest = spec + strlen(kinds[i].prefix);
                }
        if (!rest)
                return diag_set(reterr, -EINVAL, "backend '%.*s': unknown (allowed: %s)", ECHO_MAX,
                                spec, SPEC_FORMS);
        if (!rest[0])
                return diag_set(reterr, -EINVAL, "backend '%.*s': nothing after '%s:'", ECHO_MAX,
                                spec, backend_kind_name(b->kind));

        switch (b->kind) {
        case BACKEND_SSH:
                k = parse_ssh(b, rest, reterr);
                break;
        case BACKEND_KUBECTL:
                k = parse_kubectl(b, rest, reterr);
                break;
        case BACKEND_EXEC:
                k = parse_exec(b, rest, reterr);
                break;
        default: /* docker, podman, apptainer: one name */
                if (!is_name(rest, strlen(rest), 253))
                        return diag_set(reterr, -EINVAL,
                                        "backend '%.*s': the %s must be letters, digits, '.', "
                                        "'_' or '-' (not first), at most 253",
                                        ECHO_MAX, spec,
                                        b->kind == BACKEND_APPTAINER ? "instance" : "container");
                k = set(&b->name, rest, strlen(rest));
                break;
        }
        if (k < 0)
                return k;
        *ret = TAKE_PTR(b);
        return 0;
}

int backend_channel_argv(const struct backend *b, char ***ret)
{
        _cleanup_strv_free_ char **argv = NULL;
        char port[16], instance[16 + 253];
        int k = 0;

/* Append each string; stop at the first failure. */
#define ADD(...)                                                             \
        do {                                                                 \
                const char *const _w_[] = {__VA_ARGS__};                     \
                for (size_t _i_ = 0; _i_ < ELEMENTSOF(_w_) && k == 0; _i_++) \
                        k = strv_extend(&argv, _w_[_i_]);                    \
        } while (0)

        switch (b->kind) {
        case BACKEND_SSH:
                /* No prompt can reach a person: fail instead of waiting for a password. */
                ADD("ssh", "-T", "-o", "BatchMode=yes");
                if (b->port) {
                        (void) snprintf(port, sizeof(port), "%u", b->port);
                        ADD("-p", port);
                }
                if (b->user)
                        ADD("-l", b->user);
                ADD("--", b->host, "sh");
                break;
        case BACKEND_DOCKER:
        case BACKEND_PODMAN:
                ADD(backend_kind_name(b->kind), "exec", "-i", b->name, "sh");
                break;
        case BACKEND_KUBECTL:
                ADD("kubectl", "exec", "-i");
                if (b->namespace)
                        ADD("-n", b->namespace);
                ADD(b->name);
                if (b->container)
                        ADD("-c", b->container);
                ADD("--", "sh");
                break;
        case BACKEND_APPTAINER:
                (void) snprintf(instance, sizeof(instance), "instance://%s", b->name);
                ADD("apptainer", "exec", instance, "sh");
                break;
        case BACKEND_EXEC:
                k = strv_copy(b->command, &argv);
                break;
        default:
                return -EINVAL;
        }
#undef ADD
        if (k < 0)
                return k;
        *ret = TAKE_PTR(argv);
        return 0;
}
