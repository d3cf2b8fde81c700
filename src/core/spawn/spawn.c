/* SPDX-License-Identifier: MIT */
#include "core/spawn/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/compat/close-range.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/process-util.h"
#include "basic/time-util.h"

/* The stack of a child that shares our memory until its exec (vfork_start()). */
#define VFORK_STACK (256 * 1024)
/* The stack of a child that lives on in our memory (shared_start()), and its starter's. */
#define SHARED_STACK (256 * 1024)
#define STARTER_STACK (64 * 1024)

/* What the child needs besides the options, prepared before the fork. */
struct child_ctx {
        const struct spawn_opts *o;
        struct spawn_child c;
        int errfd_r; /* the read end: the child drops its copy first */
        int devnull;
        sigset_t mask;
};

_no_sanitize_address_ bool spawn_child_parent_gone(const struct spawn_child *c)
{
        int k;

        if (!c->in_pid_namespace)
                return getppid() != c->parent;
        if (c->parent_pidfd >= 0)
                return pidfd_exited(c->parent_pidfd);
        k = fd_wait(c->errfd, 0, 0);
        return k > 0 && (k & (POLLERR | POLLHUP));
}

/* Move @fd to @target; the result must not be CLOEXEC. */
_no_sanitize_address_ static int move_fd(int fd, int target)
{
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target) < 0 ? -1 : 0;
}

_no_sanitize_address_ static void setup_stdio(const struct child_ctx *x)
{
        const struct spawn_opts *o = x->o;
        int in = o->stdin_fd >= 0 ? o->stdin_fd : x->devnull;
        int out = o->stdout_fd >= 0 ? o->stdout_fd : x->devnull;
        int err = o->stderr_fd >= 0 ? o->stderr_fd : x->devnull;

        /*
         * dup2 onto 0..2 in an order that cannot clobber a source: copy the sources above 2
         * first when they sit in the target range.
         */
        if (in < 3 && in != 0)
                in = fcntl(in, F_DUPFD_CLOEXEC, 3);
        if (out < 3 && out != 1)
                out = fcntl(out, F_DUPFD_CLOEXEC, 3);
        if (err < 3 && err != 2)
                err = fcntl(err, F_DUPFD_CLOEXEC, 3);
        if (in < 0 || out < 0 || err < 0 || move_fd(in, 0) < 0 || move_fd(out, 1) < 0 ||
            move_fd(err, 2) < 0)
                spawn_child_fail(x->c.errfd, SPAWN_STAGE_STDIO, -1);
        if (o->pass_fd > 2) {
                if (o->pass_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(o->pass_fd, 3) < 0)
                        spawn_child_fail(x->c.errfd, SPAWN_STAGE_STDIO, -1);
        }
}

_no_sanitize_address_ static void close_fds(const struct child_ctx *x)
{
        const struct spawn_opts *o = x->o;
        int keep[SPAWN_KEEP_FDS_MAX + 5] = {0, 1, 2, x->c.errfd, x->c.parent_pidfd};
        size_t n = 5;

        if (!o->close_other_fds) {
                /* Nothing of ptc's but 0-2 (and the passed fd) may cross exec, even leaked fds. */
                (void) close_range_compat(o->pass_fd > 2 ? 4U : 3U, ~0U, CLOSE_RANGE_CLOEXEC);
                return;
        }
        /*
         * We hold a copy of every fd ptc had at the fork, the pipes of other threads' starts
         * among them: close them now, not at exec (CLOEXEC), which this child may never
         * reach, nor after its setup, while a start that waits for EOF on one of them would
         * wait for us (helpers holding each other's pipes hung ptc once).
         */
        if (o->pass_fd > 2)
                keep[n++] = 3;
        for (size_t i = 0; i < o->n_keep_fds && i < SPAWN_KEEP_FDS_MAX; i++)
                keep[n++] = o->keep_fds[i];
        if (close_all_fds_but(keep, n) < 0)
                spawn_child_fail(x->c.errfd, SPAWN_STAGE_FDS, -1);
}

/* Also on a vfork child's stack (vfork_start()): no ASan instrumentation. */
_noreturn_ _no_sanitize_address_ static void child_main(struct child_ctx *x)
{
        const struct spawn_opts *o = x->o;
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        int errfd = x->c.errfd, r;

        (void) close(x->errfd_r);

        /*
         * ptc blocks SIGINT/SIGTERM/SIGCHLD (signalfd) and ignores SIGPIPE. Dispositions
         * first: a signal pending in the old mask must not run one of ptc's handlers here.
         */
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void) sigaction(s, &dfl, NULL);
        if (sigprocmask(SIG_SETMASK, &x->mask, NULL) < 0)
                spawn_child_fail(errfd, SPAWN_STAGE_SIGNALS, -1);

        /* Own session and process group: the whole group can be killed at once. */
        if (o->new_session && setsid() < 0)
                spawn_child_fail(errfd, SPAWN_STAGE_SESSION, -1);
        if (o->die_with_parent) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        spawn_child_fail(errfd, SPAWN_STAGE_PDEATHSIG, -1);
                /* The parent may have died before prctl took effect. */
                if (spawn_child_parent_gone(&x->c))
                        _exit(127);
        }

        setup_stdio(x);
        close_fds(x);

        if (o->nofile && setrlimit(RLIMIT_NOFILE, o->nofile) < 0)
                spawn_child_fail(errfd, SPAWN_STAGE_RLIMIT, -1);
        if (o->cwd && chdir(o->cwd) < 0)
                spawn_child_fail(errfd, SPAWN_STAGE_CHDIR, -1);
        if (o->setup) {
                r = o->setup(&x->c, o->userdata);
                if (r != 0)
                        spawn_child_fail(errfd, r, -1);
        }

        if (!o->path) {
                (void) syscall(SYS_execveat, o->exec_fd, "", o->argv, o->envp, AT_EMPTY_PATH);
                spawn_child_fail(errfd, SPAWN_STAGE_EXEC, -1);
        }
        execve(o->path, o->argv, o->envp);
        if (errno == ENOENT && o->fallback_path)
                execve(o->fallback_path, o->argv, o->envp);
        spawn_child_fail(errfd, SPAWN_STAGE_EXEC, -1);
}

_no_sanitize_address_ static int clone_vm_child(void *arg)
{
        child_main(arg);
}

/*
 * A child that only sets up and execs shares our memory until its exec, on a stack of its
 * own, while we wait (CLONE_VM | CLONE_VFORK, as glibc's posix_spawn): no copy of ptc's page
 * tables, which fork() makes and the exec throws away at once. Every signal stays blocked
 * across the clone, so no handler of ptc's runs on the child's stack before child_main()
 * resets the dispositions; child_main() takes no lock and allocates nothing, and what it
 * writes of ours (errno) is nothing we read after. Returns the pid or -1 (errno).
 */
static pid_t vfork_start(struct child_ctx *x)
{
        char *stack = mmap(NULL, VFORK_STACK, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        sigset_t all, old;
        pid_t pid;
        int e;

        if (stack == MAP_FAILED)
                return -1;
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = clone(clone_vm_child, stack + VFORK_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, x);
        e = errno;
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        (void) munmap(stack, VFORK_STACK);
        errno = e;
        return pid;
}

/* A child that lives on in our memory: what its starter thread owns until it is gone. */
struct shared_child {
        struct child_ctx x; /* the child's copy: it reads it until spawn_wait_setup() returns */
        char *stack;
        pid_t tid; /* the child's pid; the kernel zeroes it (and wakes us) when the child is
                    * gone from our memory (CLONE_CHILD_CLEARTID, as pthread_join waits) */
};

/* The caller's side of a start, on its stack: gone once @started is posted. */
struct shared_start_req {
        struct shared_child *sc;
        sem_t started;
        pid_t pid;
        int error;
};

/*
 * The starter thread: clones the child, hands its pid to the caller, then only waits for the
 * child's end and frees what it ran on. The child's errno and TLS are this thread's, and this
 * thread looks at neither again: futex() failing here (EINTR, EAGAIN) is just looked at again.
 */
static void *shared_starter(void *arg)
{
        struct shared_start_req *req = arg;
        struct shared_child *sc = req->sc;
        pid_t pid, t;

        pid = clone(clone_vm_child, sc->stack + SHARED_STACK,
                    CLONE_VM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD, &sc->x,
                    &sc->tid, NULL, &sc->tid);
        req->pid = pid;
        /* Not read after a success: the child may be writing it already (it is its errno). */
        req->error = pid < 0 ? errno : 0;
        sem_post(&req->started); /* req is the caller's again */
        if (pid > 0)
                /* Not FUTEX_PRIVATE_FLAG: the kernel's wake at the child's exit is shared. */
                while ((t = __atomic_load_n(&sc->tid, __ATOMIC_ACQUIRE)) != 0)
                        (void) syscall(SYS_futex, &sc->tid, FUTEX_WAIT, t, NULL, NULL, 0);
        (void) munmap(sc->stack, SHARED_STACK);
        free(sc);
        return NULL;
}

/*
 * A child that never execs (an init) runs in our memory for its whole life, cloned by a
 * detached thread of its own (shared_starter()) so that its errno and TLS are not those of a
 * thread of ours that does anything. Every signal stays blocked in that thread, as across
 * vfork_start()'s clone. Returns the pid or -1 (errno).
 */
static pid_t shared_start(const struct child_ctx *x)
{
        struct shared_start_req req = {.pid = -1};
        struct shared_child *sc = calloc(1, sizeof(*sc));
        pthread_attr_t attr;
        sigset_t all, old;
        pthread_t th;
        int r;

        if (!sc)
                return -1;
        sc->x = *x;
        sc->stack = mmap(NULL, SHARED_STACK, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (sc->stack == MAP_FAILED) {
                free(sc);
                return -1;
        }
        req.sc = sc;
        if (sem_init(&req.started, 0, 0) < 0)
                goto fail;
        r = pthread_attr_init(&attr);
        if (r != 0) {
                sem_destroy(&req.started);
                errno = r;
                goto fail;
        }
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        (void) pthread_attr_setstacksize(&attr, STARTER_STACK);
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&th, &attr, shared_starter, &req);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                sem_destroy(&req.started);
                errno = r;
                goto fail;
        }
        while (sem_wait(&req.started) < 0)
                ; /* EINTR */
        sem_destroy(&req.started);
        errno = req.error;
        return req.pid;
fail:
        r = errno;
        (void) munmap(sc->stack, SHARED_STACK);
        free(sc);
        errno = r;
        return -1;
}

/*
 * clone3() with the namespaces, a pidfd and maybe the cgroup; without clone3 (Linux < 5.3)
 * the old clone() with the namespaces only. Returns the pid (0 in the child) or -1 (errno).
 */
static pid_t clone_child(const struct spawn_opts *o, int *pidfd, int *ret_cgroup_error)
{
        struct clone_args ca = {
                .flags = o->clone_flags | CLONE_PIDFD,
                .pidfd = (uint64_t) (uintptr_t) pidfd,
                .exit_signal = SIGCHLD,
        };
        pid_t pid;

        if (o->cgroup_fd > 0) {
                ca.flags |= CLONE_INTO_CGROUP;
                ca.cgroup = (uint64_t) o->cgroup_fd;
        }
        pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid < 0 && (ca.flags & CLONE_INTO_CGROUP)) {
                static bool warned;

                *ret_cgroup_error = errno;

                /*
                 * A kernel before 5.7, or a leaf the kernel refuses: the cgroup is an extra,
                 * the rlimits hold without it. If the refusal was for something else, the
                 * second clone fails the same way and says so. Said once per process.
                 */
                if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
                        log_warning("cannot start inside the cgroup %s: %m; starting without "
                                    "it (the rlimits still bound memory and processes)",
                                    o->cgroup_path ?: "?");
                ca.flags &= ~CLONE_INTO_CGROUP;
                ca.cgroup = 0;
                pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
        }
        if (pid < 0 && errno == ENOSYS) {
                *pidfd = -1;
                pid = (pid_t) syscall(SYS_clone, (unsigned long) (o->clone_flags | SIGCHLD), 0UL,
                                      NULL, NULL, 0UL);
        }
        return pid;
}

int spawn_start(const struct spawn_opts *o, struct spawn_proc *ret, struct diag *reterr)
{
        _cleanup_close_ int devnull = -EBADF;
        struct child_ctx x = {.o = o};
        bool cloned = o->clone_flags || o->cgroup_fd > 0;
        int errpipe[2], pidfd = -1, cgroup_error = 0;
        pid_t pid;

        devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (devnull < 0)
                return diag_set(reterr, -errno, "cannot open /dev/null: %s", strerror(errno));
        if (o->exec_mask)
                x.mask = *o->exec_mask;
        else
                sigemptyset(&x.mask);
        if (pipe2(errpipe, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "pipe2 failed: %s", strerror(errno));
        x.devnull = devnull;
        x.errfd_r = errpipe[0];
        x.c = (struct spawn_child){
                .errfd = errpipe[1],
                .parent = getpid(),
                .parent_pidfd = -1,
                .in_pid_namespace = o->clone_flags & CLONE_NEWPID,
        };
        if (x.c.in_pid_namespace && o->die_with_parent) {
                int fd = self_pidfd();
                x.c.parent_pidfd = fd >= 0 ? fd : -1;
        }

        if (cloned)
                pid = clone_child(o, &pidfd, &cgroup_error);
        else if (o->share_memory) {
                x.c.shares_memory = true;
                pid = shared_start(&x);
        } else if (!o->setup && !o->close_other_fds)
                pid = vfork_start(&x); /* an exec soon, and nothing of the caller's before */
        else
                pid = fork();
        if (pid == 0)
                child_main(&x);
        if (pid < 0) {
                int r = -errno;
                safe_close(errpipe[0]);
                safe_close(errpipe[1]);
                return diag_set(reterr, r, "%s failed: %s", cloned ? "clone" : "fork",
                                strerror(-r));
        }
        safe_close(errpipe[1]);
        if (pidfd < 0) {
                pidfd = pidfd_open_compat(pid);
                if (pidfd < 0)
                        pidfd = -1;
        }
        *ret = (struct spawn_proc){
                .pid = pid, .pidfd = pidfd, .errfd = errpipe[0], .cgroup_error = cgroup_error};
        return 0;
}

/* read() that gives up after @timeout_ms (-1: never): the count, 0 at EOF, or -errno. */
static ssize_t read_with_deadline(int fd, void *buf, size_t n, int timeout_ms)
{
        usec_t end =
                timeout_ms < 0 ? USEC_INFINITY : now_usec() + (usec_t) timeout_ms * USEC_PER_MSEC;

        for (;;) {
                int r = fd_wait_readable(fd, end);
                ssize_t k;

                if (r == 0)
                        return -ETIMEDOUT;
                if (r < 0)
                        return r;
                k = read(fd, buf, n);
                if (k < 0 && errno == EINTR)
                        continue;
                return k < 0 ? -errno : k;
        }
}

static const char *common_text(int stage, const struct spawn_opts *o, const char **subject)
{
        static const char *const text[_SPAWN_STAGE_MAX] = {
                [SPAWN_STAGE_SIGNALS] = "child setup failed (resetting signals)",
                [SPAWN_STAGE_SESSION] = "child setup failed (setsid)",
                [SPAWN_STAGE_PDEATHSIG] = "child setup failed (setting the parent-death signal)",
                [SPAWN_STAGE_STDIO] = "child setup failed (setting up stdio)",
                [SPAWN_STAGE_FDS] = "child setup failed (closing inherited fds)",
                [SPAWN_STAGE_RLIMIT] = "child setup failed (restoring the open-files limit)",
                [SPAWN_STAGE_CHDIR] = "cannot change to directory",
                [SPAWN_STAGE_EXEC] = "cannot execute",
        };

        *subject = NULL;
        if (stage == SPAWN_STAGE_CHDIR)
                *subject = o->cwd;
        else if (stage == SPAWN_STAGE_EXEC)
                *subject = o->path ?: "(fd)";
        if (stage >= 0 && stage < _SPAWN_STAGE_MAX)
                return text[stage];
        return "child setup failed (?)";
}

int spawn_wait_setup(struct spawn_proc *p, const struct spawn_opts *o, int timeout_ms,
                     struct spawn_child_error *ret_error, struct diag *reterr)
{
        struct spawn_child_error ce;
        const char *text = NULL, *subject = NULL;
        ssize_t k;
        int r;

        k = read_with_deadline(p->errfd, &ce, sizeof(ce), timeout_ms);
        safe_close(p->errfd);
        p->errfd = -1;
        if (k == 0 || (k > 0 && k != (ssize_t) sizeof(ce)))
                return 0; /* exec'd (a short report cannot be: the pipe is atomic) */

        (void) kill(p->pid, SIGKILL);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        safe_close(p->pidfd);
        p->pidfd = -1;
        if (k == -ETIMEDOUT)
                return diag_set(reterr, -ETIMEDOUT,
                                "the child did not finish its setup within %d s",
                                timeout_ms / 1000);
        if (k < 0)
                return diag_set(reterr, (int) k, "cannot read the child's report: %s",
                                strerror((int) -k));
        if (ret_error)
                *ret_error = ce;
        if (o->describe)
                text = o->describe(&ce, o->userdata, &subject);
        if (!text)
                text = common_text(ce.stage, o, &subject);
        r = ce.error > 0 ? -ce.error : -EIO;
        return diag_set(reterr, r, "%s%s%s%s: %s", text, subject ? " '" : "", subject ?: "",
                        subject ? "'" : "", strerror(-r));
}

int spawn_process(const struct spawn_opts *o, pid_t *ret_pid, int *ret_pidfd, struct diag *reterr)
{
        struct spawn_proc p;
        int r;

        r = spawn_start(o, &p, reterr);
        if (r < 0)
                return r;
        r = spawn_wait_setup(&p, o, -1, NULL, reterr);
        if (r < 0)
                return r;
        if (ret_pidfd)
                *ret_pidfd = p.pidfd;
        else
                safe_close(p.pidfd);
        *ret_pid = p.pid;
        return 0;
}
