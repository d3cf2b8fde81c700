/* SPDX-License-Identifier: MIT */
/*
 * The init of every confined start (sandbox.h): the process between ptc and the script. It
 * starts the script, reaps everything, forwards a stop once, and reports the script's status
 * when the script is gone, after everything the script left behind is gone too. A session's
 * interpreter (sandbox_opts.outlive_script) is reported as soon as it is gone, and its init
 * lives on while the interpreter's forks do.
 *
 * With the namespace layer it is pid 1 of the sandbox's pid namespace, and its exit makes the
 * kernel kill whatever is left in there. Without that layer (isolation none, or auto on a
 * machine without user namespaces) there is no such namespace: the init is a child subreaper
 * instead, so what the script leaves behind (a daemon that double-forked and called setsid()
 * included) is reparented to it, and it kills and reaps all of that itself before it exits.
 * Either way a script's leftovers are its own init's business and never the whole process's,
 * so executions may run at once on any threads (a library host, `ptc mcp`).
 *
 * All of this runs in a clone of a multi-threaded process that never execs: async-signal-safe
 * calls only, no malloc, no stdio, fixed buffers on the stack. Without the namespace layer
 * the clone shares ptc's memory (spawn_opts.share_memory) on a stack ASan does not know:
 * nothing here is instrumented, and nothing of ptc's is written but errno, which is the
 * starter thread's (spawn.c).
 */
#include "core/sandbox/sandbox-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/process-util.h"

/* Processes one stop or one kill round reaches; a bigger tree takes more rounds. */
#define INIT_PIDS_MAX 4096
#define SCRIPT_STACK (256 * 1024)

struct pid_list {
        pid_t p[INIT_PIDS_MAX];
        size_t n;
};

/* "/proc/<pid>/task" into @buf (at least 32 bytes). */
_no_sanitize_address_ static void task_dir_path(char *buf, pid_t pid)
{
        char digits[16];
        size_t n = 0, k;

        do
                digits[n++] = (char) ('0' + pid % 10);
        while ((pid /= 10) > 0 && n < sizeof(digits));
        memcpy(buf, "/proc/", 6);
        for (k = 0; k < n; k++)
                buf[6 + k] = digits[n - 1 - k];
        memcpy(buf + 6 + n, "/task", 6);
}

/* Append the pids of a "children" file (space-separated decimals) to @l. */
_no_sanitize_address_ static void read_children(int task_fd, const char *tid, struct pid_list *l)
{
        char path[64], buf[1024];
        size_t tl = strnlen(tid, 32);
        pid_t cur = 0;
        bool in_number = false;
        ssize_t k;
        int fd;

        memcpy(path, tid, tl);
        memcpy(path + tl, "/children", 10);
        fd = openat(task_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        while ((k = read(fd, buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR))
                for (ssize_t i = 0; i < k; i++) {
                        if (buf[i] >= '0' && buf[i] <= '9') {
                                if (cur < 1 << 22)
                                        cur = cur * 10 + (buf[i] - '0');
                                in_number = true;
                                continue;
                        }
                        if (in_number && cur > 0 && l->n < INIT_PIDS_MAX)
                                l->p[l->n++] = cur;
                        cur = 0;
                        in_number = false;
                }
        if (in_number && cur > 0 && l->n < INIT_PIDS_MAX)
                l->p[l->n++] = cur;
        close(fd);
}

/*
 * Every descendant of @root, breadth first, through the children of each of its threads
 * (/proc/PID/task/TID/children: a thread's fork is that thread's child). At most
 * INIT_PIDS_MAX; a process forked meanwhile is found by the next call.
 */
_no_sanitize_address_ static void descendants(pid_t root, struct pid_list *l)
{
        size_t next = 0;
        pid_t cur = root;

        l->n = 0;
        for (;;) {
                char path[32], buf[1024];
                int fd;
                long k;

                task_dir_path(path, cur);
                fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        while ((k = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
                                for (long off = 0; off < k;) {
                                        struct dirent64 *de = (struct dirent64 *) (buf + off);

                                        off += de->d_reclen;
                                        if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
                                                read_children(fd, de->d_name, l);
                                }
                        close(fd);
                }
                if (next >= l->n)
                        return;
                cur = l->p[next++];
        }
}

/* Every process of our pid namespace but its init (us): all of /proc in there. */
_no_sanitize_address_ static void namespace_members(struct pid_list *l)
{
        char buf[4096];
        int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        long k;

        l->n = 0;
        if (fd < 0)
                return;
        while ((k = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
                for (long off = 0; off < k && l->n < INIT_PIDS_MAX;) {
                        struct dirent64 *de = (struct dirent64 *) (buf + off);
                        pid_t pid = 0;
                        const char *s = de->d_name;

                        off += de->d_reclen;
                        for (; *s >= '0' && *s <= '9' && pid < 1 << 22; s++)
                                pid = pid * 10 + (*s - '0');
                        if (*s == 0 && pid > 1)
                                l->p[l->n++] = pid;
                }
        }
        close(fd);
}

/*
 * SIGINT to the script's main thread (Python then unwinds and flushes), SIGTERM to every other
 * process of the start. Asked by SIGTERM (a terminal command's timeout), the script gets
 * SIGTERM too: a shell ignores a SIGINT when its foreground child died of something else.
 */
_no_sanitize_address_ static void forward_stop(pid_t script, int asked_by, bool own_pid_ns)
{
        struct pid_list l;

        (void) syscall(SYS_tgkill, script, script, asked_by == SIGTERM ? SIGTERM : SIGINT);
        if (own_pid_ns)
                namespace_members(&l);
        else
                descendants(getpid(), &l);
        for (size_t i = 0; i < l.n; i++)
                if (l.p[i] != script)
                        (void) kill(l.p[i], SIGTERM);
}

/*
 * Without a pid namespace, what the kernel would do at our exit: SIGKILL every descendant, and
 * again for those reparented to us meanwhile, until we have no child left. Each round reaps
 * at least one child, so it ends; a process the kernel cannot kill yet (uninterruptible
 * sleep) holds it up, and ptc's deadline then kills us and our tree from outside.
 */
_no_sanitize_address_ static void kill_descendants(void)
{
        struct pid_list l;

        for (;;) {
                pid_t pid;

                descendants(getpid(), &l);
                for (size_t i = 0; i < l.n; i++)
                        (void) kill(l.p[i], SIGKILL);
                do
                        pid = waitpid(-1, NULL, 0);
                while (pid < 0 && errno == EINTR);
                if (pid < 0)
                        return; /* ECHILD: nothing left */
        }
}

struct script_args {
        const struct sandbox_opts *o;
        struct sandbox_plan *p;
        int errfd, status_fd;
};

/* The script's process until its exec, on the init's memory (the init waits: CLONE_VFORK). */
_no_sanitize_address_ static int script_main(void *arg)
{
        const struct script_args *a = arg;

        close(a->status_fd);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                fail(a->errfd, ST_INIT, -1);
        step_done(a->p, SANDBOX_STEP_SCRIPT_FORK);
        sandbox_exec_script(a->o, a->p, a->errfd);
}

_no_sanitize_address_ void sandbox_run_init(const struct sandbox_opts *o, struct sandbox_plan *p,
                                            int errfd, int status_fd, bool own_pid_ns,
                                            bool shares_memory)
{
        bool forwarded = false, script_gone = false, everything_gone = false;
        /*
         * @o is the starter's, valid only until the script has started: sharing ptc's memory,
         * what it points at is gone after that (a stack frame the starter left).
         */
        const bool outlive = o->outlive_script;
        sigset_t wait_set;
        int status = 0;
        pid_t script;

        if (setsid() < 0)
                fail(errfd, ST_INIT, -1);
        /*
         * Before the script exists: a copy of ptc's memory, which drop_root() made dumpable
         * again (the flag is the memory's, so the script has it until its exec), is not to be
         * read. Sharing ptc's memory, the flag is ptc's own and stays as the host set it:
         * there is no copy, and a confined script cannot reach us (Landlock scopes ptrace).
         */
        if (!shares_memory)
                (void) prctl(PR_SET_DUMPABLE, 0);
        if (p->userns_fd >= 0)
                close(p->userns_fd);
        init_signal_set(&wait_set);
        if (!own_pid_ns) {
                /*
                 * No pid namespace to end with us: the script's orphans come to us, and if ptc
                 * dies first we hear it (SIGUSR1, blocked like the rest of the set until we
                 * wait for it) and take the script's whole tree with us.
                 */
                sigaddset(&wait_set, SIGUSR1);
                if (sigprocmask(SIG_BLOCK, &wait_set, NULL) < 0 ||
                    prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || prctl(PR_SET_PDEATHSIG, SIGUSR1) < 0)
                        fail(errfd, ST_INIT, -1);
        }
        /*
         * The script shares our memory until its exec (CLONE_VM | CLONE_VFORK; we wait):
         * copying the page tables of what is a clone of all of ptc cost 0.5-0.9 ms. Not
         * fork(): glibc's takes its malloc and stdio locks, maybe held at our clone; its stack
         * comes from mmap() for the same reason.
         */
        step_done(p, SANDBOX_STEP_INIT);
        {
                struct script_args sa = {.o = o, .p = p, .errfd = errfd, .status_fd = status_fd};
                char *stack = mmap(NULL, SCRIPT_STACK, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

                if (stack == MAP_FAILED)
                        fail(errfd, ST_FORK, -1);
                script = clone(script_main, stack + SCRIPT_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD,
                               &sa);
                if (script < 0)
                        fail(errfd, ST_FORK, -1);
                (void) munmap(stack, SCRIPT_STACK);
        }
        /* The script's exec closes its copy of errfd; the parent then reads EOF. */
        close(errfd);
        while (!script_gone || (outlive && !everything_gone)) {
                siginfo_t si;
                pid_t pid;
                /* sigwaitinfo(), raw: we are a clone of a multi-threaded process. */
                int st, sig = (int) syscall(SYS_rt_sigtimedwait, &wait_set, &si, NULL,
                                            (size_t) (_NSIG / 8));

                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        if (!own_pid_ns)
                                kill_descendants();
                        _exit(1); /* cannot wait: no report, ptc sees the script killed */
                }
                if (sig == SIGUSR1) {
                        /* ptc is gone: nobody waits for a result. */
                        kill_descendants();
                        _exit(1);
                }
                if (sig != SIGCHLD) {
                        if (!forwarded && !script_gone)
                                forward_stop(script, sig, own_pid_ns);
                        forwarded = true;
                        continue;
                }
                /* One SIGCHLD may stand for several exits. */
                while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                        if (pid == script) {
                                status = st;
                                script_gone = true;
                                /* A session interpreter's death is news while its forks live on. */
                                if (outlive)
                                        (void) !write(status_fd, &status, sizeof(status));
                        }
                if (pid < 0 && errno == ECHILD)
                        script_gone = everything_gone = true;
        }
        if (!own_pid_ns)
                kill_descendants();
        if (!outlive)
                (void) !write(status_fd, &status, sizeof(status));
        _exit(0);
}
