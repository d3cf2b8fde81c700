/* SPDX-License-Identifier: MIT */
#include "basic/strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char **strv_free(char **l)
{
        if (!l)
                return NULL;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
        return NULL;
}

char **strv_free_wipe(char **l)
{
        if (!l)
                return NULL;
        for (char **p = l; *p; p++)
                explicit_wipe(*p, strlen(*p));
        return strv_free(l);
}

size_t strv_length(char *const *l)
{
        size_t n = 0;

        if (!l)
                return 0;
        while (l[n])
                n++;
        return n;
}

bool strv_contains(char *const *l, const char *s)
{
        if (!l)
                return false;
        for (; *l; l++)
                if (strcmp(*l, s) == 0)
                        return true;
        return false;
}

int strv_consume(char ***l, char *s)
{
        size_t n = strv_length(*l);
        char **p;

        if (!s)
                return -ENOMEM;
        p = realloc(*l, sizeof(char *) * (n + 2));
        if (!p) {
                free(s);
                return -ENOMEM;
        }
        p[n] = s;
        p[n + 1] = NULL;
        *l = p;
        return 0;
}

int strv_extend(char ***l, const char *s)
{
        return strv_consume(l, strdup(s));
}

int strv_copy(char *const *l, char ***ret)
{
        _cleanup_strv_free_ char **copy = calloc(strv_length(l) + 1, sizeof(char *));
        size_t i = 0;

        if (!copy)
                return -ENOMEM;
        for (; l && l[i]; i++)
                if (!(copy[i] = strdup(l[i])))
                        return -ENOMEM;
        *ret = TAKE_PTR(copy);
        return 0;
}

int strv_split(const char *s, const char *seps, char ***ret)
{
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        while (*s) {
                size_t n;

                s += strspn(s, seps);
                n = strcspn(s, seps);
                if (n == 0)
                        break;
                r = strv_consume(&l, strndup(s, n));
                if (r < 0)
                        return r;
                s += n;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
