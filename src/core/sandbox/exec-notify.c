/* SPDX-License-Identifier: MIT */
/*
 * The child's half of the exec supervisor (exec-notify.h).
 */

#include "core/sandbox/exec-notify.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "basic/compat/seccomp.h"
#include "core/sandbox/seccomp-policy.h"

static int load_with_listener(const struct seccomp_program *p)
{
        struct sock_fprog fprog = {.len = p->len, .filter = p->filter};

        return (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                             &fprog);
}

int exec_notify_child_install(const struct seccomp_program *p, int sock)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        char byte = 'L';
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = u.buf,
                            .msg_controllen = sizeof(u.buf)};
        struct cmsghdr *cm;
        int fd;

        if (sock < 0)
                return 0;
        if (!p || !p->filter) {
                close(sock);
                return 0;
        }
        fd = load_with_listener(p);
        if (fd < 0 && errno == EACCES) {
                /* No CAP_SYS_ADMIN: a filter needs NO_NEW_PRIVS, which the command keeps. */
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
                        fd = load_with_listener(p);
        }
        if (fd < 0) {
                close(sock);
                return 0;
        }
        memset(u.buf, 0, sizeof(u.buf));
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 && errno == EINTR)
                ;
        close(fd);
        close(sock);
        return 0;
}

bool exec_notify_is_available(char *why, size_t n)
{
        struct seccomp_notif_sizes sizes = {};
        const char *e = getenv("PTC_TEST_NO_EXEC_NOTIFY"), *build_why = NULL;

        if (e && strcmp(e, "1") == 0) {
                (void) snprintf(why, n, "PTC_TEST_NO_EXEC_NOTIFY=1 says so");
                return false;
        }
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
                (void) snprintf(why, n,
                                "this kernel has no seccomp user notification "
                                "(SECCOMP_GET_NOTIF_SIZES: %s; Linux 5.0 or later)",
                                strerror(errno));
                return false;
        }
        /* API level 6 needs Linux 5.7: SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5) is there, and
         * without it no exec could be let go on. */
        if (seccomp_api_get() < 6) {
                (void) snprintf(why, n,
                                "this kernel cannot let a notified exec go on "
                                "(SECCOMP_USER_NOTIF_FLAG_CONTINUE; Linux 5.7 or later)");
                return false;
        }
        if (!seccomp_exec_notify_program(&build_why)) {
                (void) snprintf(why, n, "the exec filter cannot be built: %s",
                                build_why ?: "libseccomp refused");
                return false;
        }
        return true;
}
