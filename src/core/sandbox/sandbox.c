/* SPDX-License-Identifier: MIT */
#include "core/sandbox/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/sandbox/exec-notify.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox-internal.h"
#include "core/sandbox/sandbox-plan.h"
#include "core/sandbox/seccomp-policy.h"
#include "core/spawn/spawn.h"

/* The child's setup takes milliseconds; one stuck in it is killed after this. */
#define SETUP_TIMEOUT_MS 10000

static const char *const layer_names[_SANDBOX_LAYER_MAX] = {
        [SANDBOX_LAYER_NAMESPACES] = "namespaces",
        [SANDBOX_LAYER_LANDLOCK] = "landlock",
        [SANDBOX_LAYER_SECCOMP] = "seccomp",
        [SANDBOX_LAYER_RLIMITS] = "rlimits",
};

const char *sandbox_layer_to_string(enum sandbox_layer l)
{
        return (unsigned) l < _SANDBOX_LAYER_MAX ? layer_names[l] : "?";
}

/*
 * Map our uid and gid in the user namespace we are in (the one line the kernel lets us
 * write). ptc is non-dumpable, and so are we after a uid change: our /proc/self files would
 * then be root's, so we flip the flag first.
 */
const char *sandbox_step_to_string(enum sandbox_step s)
{
        static const char *const names[] = {
                [SANDBOX_STEP_PLAN] = "plan",
                [SANDBOX_STEP_CLONE] = "clone",
                [SANDBOX_STEP_USERNS] = "user namespace",
                [SANDBOX_STEP_FILE_SYSTEM] = "file system",
                [SANDBOX_STEP_SANDBOX_UID] = "sandbox uid",
                [SANDBOX_STEP_INIT] = "init",
                [SANDBOX_STEP_SCRIPT_FORK] = "script fork",
                [SANDBOX_STEP_RLIMITS] = "rlimits",
                [SANDBOX_STEP_NO_NEW_PRIVS] = "no_new_privs",
                [SANDBOX_STEP_LANDLOCK] = "landlock",
                [SANDBOX_STEP_SECCOMP] = "seccomp",
        };

        return (size_t) s < ELEMENTSOF(names) ? names[s] : "?";
}

static int write_own_maps(const struct sandbox_plan *p)
{
        if (prctl(PR_SET_DUMPABLE, 1) < 0 ||
            write_string_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 ||
            write_string_at(AT_FDCWD, "/proc/self/uid_map", p->uid_map) < 0 ||
            write_string_at(AT_FDCWD, "/proc/self/gid_map", p->gid_map) < 0)
                return -1;
        return 0;
}

/*
 * Root only: become the sandbox uid, then enter a user namespace of our own. The raw system
 * calls, not glibc's wrappers: those run the set*id broadcast to every thread of the process,
 * under a lock another thread of ptc may have held when we were cloned. That was a real hang
 * (three runs started at once, one child waiting on that lock forever).
 */
static void drop_root(struct sandbox_plan *p, int errfd)
{
        const long id = SANDBOX_HOST_UID;

        if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, id, id, id) < 0 ||
            syscall(SYS_setresuid, id, id, id) < 0)
                fail(errfd, ST_DROP_IDS, -1);
        if (unshare(CLONE_NEWUSER) < 0 || write_own_maps(p) < 0)
                fail(errfd, ST_USERNS, -1);
        step_done(p, SANDBOX_STEP_SANDBOX_UID);
}

_no_sanitize_address_ static void set_limit(int resource, uint64_t v, int errfd)
{
        struct rlimit rl = {.rlim_cur = (rlim_t) v, .rlim_max = (rlim_t) v};

        if (v && setrlimit(resource, &rl) < 0)
                fail(errfd, ST_RLIMIT, resource);
}

/* On the script's CLONE_VM stack (sandbox_run_init()): no ASan instrumentation. */
_no_sanitize_address_ void sandbox_exec_script(const struct sandbox_opts *o, struct sandbox_plan *p,
                                               int errfd)
{
        const struct sandbox_limits *l = &o->limits;

        if (setsid() < 0)
                fail(errfd, ST_INIT, -1);
        if (o->layers & (1u << SANDBOX_LAYER_RLIMITS)) {
                set_limit(RLIMIT_DATA, l->data_bytes, errfd);
                set_limit(RLIMIT_AS, l->data_bytes * 4, errfd);
                set_limit(RLIMIT_NPROC, l->pids, errfd);
                set_limit(RLIMIT_NOFILE, l->nofile, errfd);
                set_limit(RLIMIT_FSIZE, l->fsize_bytes, errfd);
                set_limit(RLIMIT_CPU, l->cpu_seconds, errfd);
                {
                        struct rlimit zero = {0, 0};
                        if (setrlimit(RLIMIT_CORE, &zero) < 0)
                                fail(errfd, ST_RLIMIT, RLIMIT_CORE);
                }
                step_done(p, SANDBOX_STEP_RLIMITS);
        } else if (o->plain_nofile && setrlimit(RLIMIT_NOFILE, o->plain_nofile) < 0)
                fail(errfd, ST_RLIMIT, RLIMIT_NOFILE);
        if (chdir(o->cwd) < 0)
                fail(errfd, ST_CHDIR, -1);
        /* stdin again, from this root: the host's /dev/null would read as "/null" in here. */
        if (o->stdin_fd <= 0) {
                int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd < 0 || dup2(fd, 0) < 0)
                        fail(errfd, ST_STDIO, -1);
                close(fd);
        }
        /* Unconfined (isolation none) the script may still gain privileges (sudo). */
        if (o->layers && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail(errfd, ST_NNP, -1);
        step_done(p, SANDBOX_STEP_NO_NEW_PRIVS);
        if (p->ll_ro || p->ll_rw || p->ll_list) {
                struct landlock_policy lp = {
                        .ro_paths = (const char *const *) p->ll_ro,
                        .list_paths = (const char *const *) p->ll_list,
                        .rw_paths = (const char *const *) p->ll_rw,
                        .deny_tcp = !o->network,
                        .scope = true,
                };
                int r = landlock_apply(&lp, o->landlock_abi);
                if (r < 0) {
                        errno = -r;
                        fail(errfd, ST_LANDLOCK, -1);
                }
                step_done(p, SANDBOX_STEP_LANDLOCK);
        }
        if (o->protect) {
                int r = landlock_protect_apply(o->protect);
                if (r < 0) {
                        errno = -r;
                        fail(errfd, ST_LANDLOCK, -1);
                }
        }
        /* Before the seccomp layer, which may refuse seccomp() itself. */
        if (o->exec_notify)
                (void) exec_notify_child_install(o->exec_notify, o->exec_notify_sock);
        if (p->seccomp.filter) {
                int r = seccomp_program_load(&p->seccomp);
                if (r < 0) {
                        errno = -r;
                        fail(errfd, ST_SECCOMP, -1);
                }
                step_done(p, SANDBOX_STEP_SECCOMP);
        } else {
                /* TIOCSTI refused for a process that keeps CAP_SYS_ADMIN (isolation none as
                 * root, a terminal command): it could push input into the user's terminal. */
                int r = seccomp_tty_load(o->tty_seccomp);
                if (r < 0) {
                        errno = -r;
                        fail(errfd, ST_SECCOMP, -1);
                }
        }
        /* The init's stop signals were blocked since the clone; the script starts with none. */
        {
                sigset_t none;
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
        }
        execve(o->path, o->argv, o->envp);
        fail(errfd, ST_EXEC, -1);
}

struct child_args {
        const struct sandbox_opts *o;
        struct sandbox_plan *p;
        int syncfd, status_fd;
};

/*
 * The child after spawn's common steps (spawn.h): the init's signals blocked, ptc's death
 * armed and checked, stdio set, and every fd but ours closed at once. We held a copy of every
 * fd ptc had at the clone, the pipes of other threads' starts among them: they are closed
 * before anything here, not at exec (CLOEXEC), which the init never reaches, nor after the
 * setup, while a start that waits for EOF on one of them would wait for us. Never returns.
 */
_no_sanitize_address_ static int child_setup(const struct spawn_child *c, void *userdata)
{
        const struct child_args *a = userdata;
        const struct sandbox_opts *o = a->o;
        struct sandbox_plan *p = a->p;
        bool ns = o->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        char ch;

        /* The parent writes one byte when it is ready (it lives: spawn's check said so). */
        if (read(a->syncfd, &ch, 1) != 1)
                _exit(127);
        close(a->syncfd);
        step_done(p, SANDBOX_STEP_CLONE);

        if (!ns)
                sandbox_run_init(o, p, c->errfd, a->status_fd, false, c->shares_memory);

        if (!p->as_root) {
                /* Unprivileged, the user namespace came with the clone. */
                if (write_own_maps(p) < 0)
                        fail(c->errfd, ST_USERNS, -1);
                (void) prctl(PR_SET_DUMPABLE, 0);
                step_done(p, SANDBOX_STEP_USERNS);
        }
        sandbox_build_root(p, c->errfd);
        step_done(p, SANDBOX_STEP_FILE_SYSTEM);
        if (p->as_root) {
                drop_root(p, c->errfd);
                /* A credential change clears the parent-death signal. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        fail(c->errfd, ST_SIGNALS, -1);
                if (spawn_child_parent_gone(c))
                        _exit(127);
        }
        if (c->parent_pidfd >= 0)
                close(c->parent_pidfd); /* our copy; ptc keeps its own */
        sandbox_run_init(o, p, c->errfd, a->status_fd, true, c->shares_memory);
}

/*
 * The layer a failed step of the child belongs to, when the failure is the kernel's or the
 * environment's refusal of that layer (isolation auto then runs without it), else
 * _SANDBOX_LAYER_MAX. Only steps that depend on no path count, and only with the errors by
 * which a kernel or a security module refuses a feature: EPERM or EACCES (a container, an
 * LSM, Ubuntu's restricted user namespaces), EINVAL, ENOSYS or EOPNOTSUPP (a kernel without
 * it), ENOSPC or EUSERS (user namespaces limited to 0). A bind, a mount point, a copy, a
 * chdir or an exec depends on paths a script may have shaped: that is the plan's to get
 * right, never a reason to confine a run less (docs/isolation.md).
 */
static enum sandbox_layer refused_layer(int stage, int error)
{
        if (!sandbox_errno_is_refusal(error))
                return _SANDBOX_LAYER_MAX;
        switch (stage) {
        case ST_PRIVATE:
        case ST_BASE_TMPFS:
        case ST_TMPFS:
        case ST_PROC:
        case ST_PIVOT:
        case ST_ROOT_RO:
        case ST_HOSTNAME:
        case ST_DROP_IDS:
        case ST_USERNS:
                return SANDBOX_LAYER_NAMESPACES;
        case ST_RLIMIT:
                return SANDBOX_LAYER_RLIMITS;
        case ST_LANDLOCK:
                return error == EACCES ? _SANDBOX_LAYER_MAX : SANDBOX_LAYER_LANDLOCK;
        case ST_SECCOMP:
                return SANDBOX_LAYER_SECCOMP;
        default:
                return _SANDBOX_LAYER_MAX;
        }
}

static const char *stage_text(int stage)
{
        static const char *const text[] = {
                [ST_SIGNALS] = "namespaces: cannot set up signals",
                [ST_PRIVATE] = "namespaces: cannot make the mount namespace private",
                [ST_OPEN_SOURCE] = "namespaces: cannot open",
                [ST_BASE_TMPFS] = "namespaces: cannot mount the root tmpfs",
                [ST_MKPOINT] = "namespaces: cannot make or open the mount point",
                [ST_BIND] = "namespaces: cannot bind-mount",
                [ST_COPY] = "namespaces: cannot copy",
                [ST_READONLY] = "namespaces: cannot set the mount flags of",
                [ST_TMPFS] = "namespaces: cannot mount a tmpfs on",
                [ST_PROC] = "namespaces: cannot mount a fresh /proc",
                [ST_SYMLINK] = "namespaces: cannot create the symlink",
                [ST_PIVOT] = "namespaces: cannot pivot into the new root",
                [ST_ROOT_RO] = "namespaces: cannot make the root read-only",
                [ST_HOSTNAME] = "namespaces: cannot set the host name",
                [ST_DROP_IDS] = "namespaces: cannot switch to the sandbox uid",
                [ST_USERNS] = "namespaces: cannot enter a user namespace",
                [ST_INIT] = "cannot set up the script's init",
                [ST_FORK] = "cannot fork the script",
                [ST_STDIO] = "cannot set up stdio",
                [ST_RLIMIT] = "rlimits: cannot set a resource limit",
                [ST_CHDIR] = "cannot change to the working directory",
                [ST_NNP] = "cannot set no_new_privs",
                [ST_LANDLOCK] = "landlock: cannot restrict the script",
                [ST_SECCOMP] = "seccomp: cannot install the filter",
                [ST_EXEC] = "cannot execute",
        };

        return stage >= 0 && (size_t) stage < ELEMENTSOF(text) && text[stage] ? text[stage]
                                                                              : "setup failed";
}

/* spawn_opts.describe: the text of a failed step, and the mount point, path or cwd it was on. */
static const char *describe_failure(const struct spawn_child_error *e, void *userdata,
                                    const char **ret_subject)
{
        const struct child_args *a = userdata;
        int stage = e->stage - SPAWN_STAGE_SETUP;
        const char *what = NULL;

        if (e->stage < SPAWN_STAGE_SETUP) {
                /* spawn's common steps: the parent-death signal, stdio and the fds. */
                *ret_subject = NULL;
                return stage_text(e->stage == SPAWN_STAGE_SIGNALS ||
                                                  e->stage == SPAWN_STAGE_PDEATHSIG
                                          ? ST_SIGNALS
                                          : ST_STDIO);
        }
        if (e->index >= 0 && (size_t) e->index < a->p->n && stage != ST_RLIMIT)
                what = a->p->m[e->index].target + strlen(SANDBOX_BASE);
        if (stage == ST_EXEC)
                what = a->o->path;
        else if (stage == ST_CHDIR)
                what = a->o->cwd;
        *ret_subject = what && *what ? what : NULL;
        return stage_text(stage);
}

int sandbox_spawn(const struct sandbox_opts *o, struct sandbox_proc *ret,
                  enum sandbox_layer *ret_failed_layer, struct diag *reterr)
{
        _cleanup_(sandbox_plan_release) struct sandbox_plan p = SANDBOX_PLAN_NULL;
        bool ns = o->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        int syncp[2] = {-1, -1}, statusp[2] = {-1, -1};
        struct spawn_proc sp = {.pid = -1, .pidfd = -1, .errfd = -1};
        struct spawn_child_error ce = {.stage = -1};
        enum sandbox_layer failed = _SANDBOX_LAYER_MAX;
        struct spawn_opts so;
        struct child_args a;
        uint64_t flags = 0;
        sigset_t init_set;
        int keep[5], r;

        if (o->timings) {
                *o->timings = (struct sandbox_timings){.begin = now_usec()};
                /* Shared, so the child's stores reach us whether or not it shares our memory. */
                p.step_end = mmap(NULL, sizeof(o->timings->end), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                if (p.step_end == MAP_FAILED) {
                        p.step_end = NULL;
                        r = diag_set(reterr, -errno, "cannot map the timings page: %m");
                        goto out;
                }
                memset(p.step_end, 0, sizeof(o->timings->end));
        }
        r = sandbox_plan_build(&p, o, &failed, reterr);
        if (r < 0)
                goto out;
        if (p.step_end)
                p.step_end[SANDBOX_STEP_PLAN] = now_usec();
        if (pipe2(syncp, O_CLOEXEC) < 0 || pipe2(statusp, O_CLOEXEC) < 0) {
                r = diag_set(reterr, -errno, "cannot create pipes: %m");
                goto out;
        }
        /*
         * The status is read once the init is reaped, when no one can write any more: a child
         * another thread cloned meanwhile may still hold a copy of the write end, so a read
         * must never wait for EOF.
         */
        r = fd_set_nonblock(statusp[0], true);
        if (r < 0) {
                r = diag_set(reterr, r, "cannot set up the status pipe: %s", strerror(-r));
                goto out;
        }
        if (ns) {
                flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
                if (!o->network)
                        flags |= CLONE_NEWNET;
                /* Root builds the file system as root and enters a user namespace later. */
                if (!p.as_root)
                        flags |= CLONE_NEWUSER;
        }
        /* The init's signals stay blocked until the script's exec (sandbox_exec_script()). */
        init_signal_set(&init_set);
        a = (struct child_args){
                .o = o,
                .p = &p,
                .syncfd = syncp[0],
                .status_fd = statusp[1],
        };
        keep[0] = syncp[0];
        keep[1] = statusp[1];
        keep[2] = p.userns_fd;
        /* A terminal command's ruleset, built in ptc: the script's child restricts itself. */
        keep[3] = o->protect ? o->protect->ruleset_fd : -1;
        keep[4] = o->exec_notify ? o->exec_notify_sock : -1;
        so = (struct spawn_opts){
                .stdin_fd = o->stdin_fd > 0 ? o->stdin_fd : -1,
                .stdout_fd = o->stdout_fd,
                .stderr_fd = o->stderr_fd,
                .die_with_parent = true,
                .pass_fd = -1,
                .exec_mask = &init_set,
                .clone_flags = flags,
                .cgroup_fd = o->cgroup && o->cgroup->path ? o->cgroup->fd : -1,
                .cgroup_path = o->cgroup ? o->cgroup->path : NULL,
                /* The init never execs: nothing may wait on it for a pipe of someone else's. */
                .close_other_fds = true,
                /* Without namespaces the init needs no memory of its own: none is copied. */
                .share_memory = !ns,
                .keep_fds = keep,
                .n_keep_fds = ELEMENTSOF(keep),
                .setup = child_setup,
                .userdata = &a,
                .describe = describe_failure,
        };
        r = spawn_start(&so, &sp, reterr);
        if (r < 0) {
                r = diag_set(reterr, r, "%s: %s",
                             ns ? "namespaces: cannot create the namespaces"
                                : "cannot start the script",
                             strerror(-r));
                /* The kernel refusing the namespaces (or a limit of 0 on them). */
                if (ns &&
                    (r == -EPERM || r == -EINVAL || r == -ENOSPC || r == -EUSERS || r == -ENOSYS))
                        failed = SANDBOX_LAYER_NAMESPACES;
                goto out;
        }
        syncp[0] = safe_close(syncp[0]);
        statusp[1] = safe_close(statusp[1]);

        if (write(syncp[1], "g", 1) != 1) {
                r = diag_set(reterr, -errno, "namespaces: the child is gone: %m");
                (void) kill(sp.pid, SIGKILL);
                (void) waitpid(sp.pid, NULL, 0);
                goto out;
        }
        syncp[1] = safe_close(syncp[1]);

        /* The setup takes milliseconds; a child stuck in it must not hang ptc. */
        r = spawn_wait_setup(&sp, &so, SETUP_TIMEOUT_MS, &ce, reterr);
        if (r == -ETIMEDOUT) {
                r = diag_set(reterr, -ETIMEDOUT,
                             "%s: the confined child did not finish its setup within %d s",
                             ns ? "namespaces" : "sandbox", SETUP_TIMEOUT_MS / 1000);
                goto out;
        }
        if (r < 0) {
                if (ce.stage >= SPAWN_STAGE_SETUP)
                        failed = refused_layer(ce.stage - SPAWN_STAGE_SETUP, ce.error);
                goto out;
        }
        /* The exec closed the error pipe: no store of the child's is still to come. */
        if (p.step_end)
                for (size_t i = 0; i < _SANDBOX_STEP_MAX; i++)
                        o->timings->end[i] = __atomic_load_n(&p.step_end[i], __ATOMIC_ACQUIRE);
        *ret = (struct sandbox_proc){.pid = sp.pid,
                                     .pidfd = sp.pidfd,
                                     .status_fd = statusp[0],
                                     .cgroup_error = sp.cgroup_error};
        sp.pidfd = -1;
        statusp[0] = -1;
        r = 0;
out:
        if (r < 0 && ret_failed_layer)
                *ret_failed_layer = failed;
        safe_close(sp.pidfd);
        safe_close(sp.errfd);
        safe_close(syncp[0]);
        safe_close(syncp[1]);
        safe_close(statusp[0]);
        safe_close(statusp[1]);
        if (p.step_end)
                (void) munmap(p.step_end, sizeof(o->timings->end));
        return r;
}

struct sandbox_limits sandbox_limits_for(uint64_t memory_mb, uint64_t pids, uint64_t nofile,
                                         uint64_t cpu_seconds)
{
        const uint64_t mib = 1024 * 1024;

        return (struct sandbox_limits){
                .data_bytes = memory_mb * mib,
                .pids = pids,
                .nofile = nofile,
                .fsize_bytes = 1024 * mib,
                .cpu_seconds = cpu_seconds,
                .tmp_bytes = MAX(memory_mb * mib / 4, 16 * mib),
        };
}

int sandbox_env(char *const *envp, const char *cwd, char ***ret)
{
        static char home_tmp[] = "HOME=/tmp", tmpdir_tmp[] = "TMPDIR=/tmp";
        size_t n = strv_length(envp), k = 0;
        bool home_kept = false;
        char **env = calloc(n + 3, sizeof(char *));

        if (!env)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *home = strncmp(envp[i], "HOME=", 5) == 0 ? envp[i] + 5 : NULL;

                if (strncmp(envp[i], "TMPDIR=", 7) == 0 || (home && !path_is_below(home, cwd)))
                        continue;
                home_kept = home_kept || home;
                env[k++] = envp[i];
        }
        env[k++] = tmpdir_tmp;
        if (!home_kept)
                env[k++] = home_tmp;
        *ret = env;
        return 0;
}

int sandbox_read_status(int status_fd, int *ret_status)
{
        int st;
        ssize_t k;

        do
                k = read(status_fd, &st, sizeof(st));
        while (k < 0 && errno == EINTR);
        if (k != (ssize_t) sizeof(st))
                return -ENODATA;
        if (WIFEXITED(st))
                *ret_status = WEXITSTATUS(st);
        else if (WIFSIGNALED(st))
                *ret_status = -WTERMSIG(st);
        else
                *ret_status = -SIGKILL;
        return 0;
}
