/* SPDX-License-Identifier: MIT */
#include "core/env/env.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/output/redact.h"

extern char **environ;

static const char *const secret_substrings[] = {
        "KEY",  "TOKEN", "SECRET",  "PASSWORD", "CREDENTIAL", "PASSWD",
        "AUTH", "DSN",   "WEBHOOK", "CREDS",    "BEARER",     "APIKEY",
};

/*
 * The seed's prefix list, naive prefix match included ("PATHOLOGY" passes).
 * HERMES_ is kept for compatibility with scripts written for the seed; PTC_
 * is ours (PTC_TIMEZONE is consumed before this check).
 */
static const char *const safe_prefixes[] = {
        "PATH", "HOME",  "USER",    "LANG", "LC_",        "TERM",        "TMPDIR", "TMP",
        "TEMP", "SHELL", "LOGNAME", "XDG_", "PYTHONPATH", "VIRTUAL_ENV", "CONDA",  "HERMES_",
};

bool env_name_is_secret(const char *name)
{
        char up[256];
        size_t i;

        for (i = 0; name[i] && i < sizeof(up) - 1; i++)
                up[i] = (char) toupper((unsigned char) name[i]);
        up[i] = 0;
        /* A name too long for the buffer is secret by default: fail closed. */
        if (name[i])
                return true;
        for (size_t k = 0; k < ELEMENTSOF(secret_substrings); k++)
                if (strstr(up, secret_substrings[k]))
                        return true;
        return false;
}

bool env_name_is_safe(const char *name)
{
        for (size_t k = 0; k < ELEMENTSOF(safe_prefixes); k++)
                if (strncmp(name, safe_prefixes[k], strlen(safe_prefixes[k])) == 0)
                        return true;
        return false;
}

static bool name_in(char *const *list, const char *entry, size_t namelen)
{
        if (!list)
                return false;
        for (; *list; list++)
                if (strlen(*list) == namelen && strncmp(*list, entry, namelen) == 0)
                        return true;
        return false;
}

int env_take_secrets(char *const *passthrough, struct redactor *redactor, char ***ret_kept)
{
        _cleanup_strv_free_ char **kept = NULL;
        size_t i = 0, j = 0;
        int removed = 0, r;

        if (!environ)
                return 0;
        for (i = 0; environ[i]; i++) {
                char *e = environ[i];
                char *eq = strchr(e, '=');
                char name[256];
                size_t nl;

                if (!eq) {
                        environ[j++] = e;
                        continue;
                }
                nl = (size_t) (eq - e);
                if (name_in(passthrough, e, nl)) {
                        environ[j++] = e;
                        continue;
                }
                snprintf(name, sizeof(name), "%.*s", (int) MIN(nl, sizeof(name) - 1), e);
                if (nl >= sizeof(name) || env_name_is_secret(name)) {
                        if (redactor) {
                                r = redactor_add_secret(redactor, eq + 1);
                                /*
                                 * A huge value (over the redactor's cap) is still
                                 * removed from the environment; it just is not
                                 * searched for in output.
                                 */
                                if (r == -ENOMEM)
                                        return r;
                        }
                        if (ret_kept) {
                                r = strv_extend(&kept, e);
                                if (r < 0)
                                        return r;
                        }
                        /*
                         * Wipe the bytes where they live. At start-up environ
                         * points into the block the kernel copied onto our
                         * stack, which is exactly what /proc/<pid>/environ
                         * shows; unsetenv() alone would leave it there.
                         */
                        explicit_wipe(eq + 1, strlen(eq + 1));
                        explicit_wipe(e, nl);
                        removed++;
                        continue;
                }
                environ[j++] = e;
        }
        environ[j] = NULL;
        if (ret_kept)
                *ret_kept = TAKE_PTR(kept);
        return removed;
}

int env_read_secrets(char *const *src, char *const *passthrough, struct redactor *redactor)
{
        int found = 0;

        for (size_t i = 0; src && src[i]; i++) {
                const char *e = src[i], *eq = strchr(e, '=');
                char name[256];
                size_t nl;
                int r;

                if (!eq)
                        continue;
                nl = (size_t) (eq - e);
                if (name_in(passthrough, e, nl))
                        continue;
                snprintf(name, sizeof(name), "%.*s", (int) MIN(nl, sizeof(name) - 1), e);
                if (nl < sizeof(name) && !env_name_is_secret(name))
                        continue;
                r = redactor_add_secret(redactor, eq + 1);
                /* A value over the redactor's cap is not searched for, as in env_take_secrets(). */
                if (r == -ENOMEM)
                        return r;
                found++;
        }
        return found;
}

int env_set(char ***env, const char *name, const char *value)
{
        size_t nl = strlen(name);
        char *entry;

        if (asprintf(&entry, "%s=%s", name, value) < 0)
                return -ENOMEM;
        for (char **p = *env; p && *p; p++)
                if (strncmp(*p, name, nl) == 0 && (*p)[nl] == '=') {
                        free(*p);
                        *p = entry;
                        return 0;
                }
        return strv_consume(env, entry);
}

const char *env_get(char *const *env, const char *name)
{
        size_t nl = strlen(name);

        for (; env && *env; env++)
                if (strncmp(*env, name, nl) == 0 && (*env)[nl] == '=')
                        return *env + nl + 1;
        return NULL;
}

int env_build_child(char *const *src, char *const *passthrough, char ***ret)
{
        _cleanup_strv_free_ char **out = NULL;
        const char *tz = NULL;
        int r;

        out = calloc(1, sizeof(char *));
        if (!out)
                return -ENOMEM;
        for (; src && *src; src++) {
                const char *e = *src, *eq = strchr(e, '=');
                char name[256];
                size_t nl;

                if (!eq || eq == e)
                        continue;
                nl = (size_t) (eq - e);
                if (nl == strlen("PTC_TIMEZONE") && strncmp(e, "PTC_TIMEZONE", nl) == 0) {
                        tz = eq + 1;
                        continue;
                }
                if (nl >= sizeof(name))
                        continue;
                memcpy(name, e, nl);
                name[nl] = 0;
                if (name_in(passthrough, e, nl) ||
                    (!env_name_is_secret(name) && env_name_is_safe(name))) {
                        r = strv_extend(&out, e);
                        if (r < 0)
                                return r;
                }
        }
        if (tz) {
                while (isspace((unsigned char) *tz))
                        tz++;
                if (*tz) {
                        _cleanup_free_ char *t = strdup(tz);
                        size_t l;

                        if (!t)
                                return -ENOMEM;
                        l = strlen(t);
                        while (l && isspace((unsigned char) t[l - 1]))
                                t[--l] = 0;
                        r = env_set(&out, "TZ", t);
                        if (r < 0)
                                return r;
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}
