/* SPDX-License-Identifier: MIT */
#include "basic/process-util.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/fd-util.h"

static int self_pidfd_value = -ENOSYS;
static pthread_once_t self_pidfd_once = PTHREAD_ONCE_INIT;

static void self_pidfd_open(void)
{
        self_pidfd_value = pidfd_open_compat(getpid());
}

int self_pidfd(void)
{
        (void) pthread_once(&self_pidfd_once, self_pidfd_open);
        return self_pidfd_value;
}

_no_sanitize_address_ void init_signal_set(sigset_t *ret)
{
        sigemptyset(ret);
        sigaddset(ret, SIGINT);
        sigaddset(ret, SIGTERM);
        sigaddset(ret, SIGHUP);
        sigaddset(ret, SIGCHLD);
}

bool pidfd_exited(int pidfd)
{
        /* Readable once the process has exited; a negative or closed @pidfd: false. */
        return fd_wait_readable(pidfd, 0) > 0;
}
