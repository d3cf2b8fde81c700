/* SPDX-License-Identifier: MIT */
/*
 * The provider credentials store. It replaces the environment for the few
 * variables ptc itself needs after the start-up take-over wiped them (see
 * web-keys.h). Written once before threads start, read-only afterwards, so
 * it needs no lock.
 */

#include "core/web/web-keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"

const char *const web_key_names[] = {
        "BRAVE_API_KEY",     "BRAVE_SEARCH_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY",
        "FIRECRAWL_API_URL", "EXA_API_KEY",          "SEARXNG_URL",    NULL,
};

/* "NAME=VALUE" copies of the provider variables taken at start-up. */
static char **kept_keys;

static bool is_provider_name(const char *s, size_t n)
{
        for (size_t i = 0; web_key_names[i]; i++)
                if (strlen(web_key_names[i]) == n && memcmp(web_key_names[i], s, n) == 0)
                        return true;
        return false;
}

void web_keys_clear(void)
{
        strv_free_wipe(kept_keys);
        kept_keys = NULL;
}

int web_keys_take(char *const *kept)
{
        _cleanup_(strv_free_wipep) char **copy = NULL;
        size_t n = 0;

        for (size_t i = 0; kept && kept[i]; i++) {
                const char *eq = strchr(kept[i], '=');

                if (eq && is_provider_name(kept[i], (size_t) (eq - kept[i])))
                        n++;
        }
        copy = calloc(n + 1, sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; kept && kept[i]; i++) {
                const char *eq = strchr(kept[i], '=');

                if (!eq || !is_provider_name(kept[i], (size_t) (eq - kept[i])))
                        continue;
                copy[n] = strdup(kept[i]);
                if (!copy[n])
                        return -ENOMEM;
                n++;
        }
        web_keys_clear();
        kept_keys = TAKE_PTR(copy);
        return 0;
}

const char *web_key_get(const char *name)
{
        size_t len;
        const char *v;

        if (!name)
                return NULL;
        len = strlen(name);
        for (size_t i = 0; kept_keys && kept_keys[i]; i++)
                if (strncmp(kept_keys[i], name, len) == 0 && kept_keys[i][len] == '=')
                        return kept_keys[i][len + 1] ? kept_keys[i] + len + 1 : NULL;
        /* Never taken: on the passthrough list, not secret-named (SEARXNG_URL), or no take-over. */
        v = getenv(name);
        return v && v[0] ? v : NULL;
}
