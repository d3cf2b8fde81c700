/* SPDX-License-Identifier: MIT */
#include "core/exec/staging.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/path-util.h"

static int write_new_file(const char *path, const char *data, size_t n)
{
        _cleanup_close_ int fd =
                open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        return write_all(fd, data, n);
}

static int make_dir(const char *base, char **ret)
{
        char *tmpl;

        if (asprintf(&tmpl, "%s/ptc-XXXXXX", base) < 0)
                return -ENOMEM;
        if (!mkdtemp(tmpl)) {
                int r = -errno;
                free(tmpl);
                return r;
        }
        *ret = tmpl;
        return 0;
}

int staging_create(struct staging *s, const char *code, size_t code_len, const char *module_name,
                   const char *module_text)
{
        const char *base = getenv("TMPDIR");
        struct sockaddr_un sa;
        _cleanup_free_ char *module_file = NULL;
        int r;

        *s = (struct staging){};
        if (!base || base[0] != '/')
                base = "/tmp";
        /* The socket path must fit sun_path; a deep TMPDIR falls back to /tmp. */
        if (strlen(base) + strlen("/ptc-XXXXXX/rpc.sock") >= sizeof(sa.sun_path))
                base = "/tmp";
        r = make_dir(base, &s->dir);
        if (r < 0)
                return r;
        s->script_path = path_join(s->dir, "script.py");
        s->socket_path = path_join(s->dir, "rpc.sock");
        if (asprintf(&module_file, "%s/%s.py", s->dir, module_name) < 0)
                module_file = NULL;
        if (!s->script_path || !s->socket_path || !module_file) {
                staging_remove(s);
                return -ENOMEM;
        }
        r = write_new_file(s->script_path, code, code_len);
        if (r >= 0)
                r = write_new_file(module_file, module_text, strlen(module_text));
        if (r < 0) {
                staging_remove(s);
                return r;
        }
        return 0;
}

int staging_add_file(const struct staging *s, const char *name, const char *data, size_t n,
                     char **ret_path)
{
        _cleanup_free_ char *p = path_join(s->dir, name);
        int r;

        if (!p)
                return -ENOMEM;
        r = write_new_file(p, data, n);
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(p);
        return 0;
}

void staging_remove(struct staging *s)
{
        if (!s)
                return;
        if (s->dir)
                (void) rm_rf(s->dir);
        free(s->dir);
        free(s->script_path);
        free(s->socket_path);
        *s = (struct staging){};
}
