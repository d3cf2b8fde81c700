/* SPDX-License-Identifier: MIT */
/*
 * ptc's half of the exec supervisor (exec-supervisor.h). The order of one notification is
 * seccomp_unotify(2)'s: receive, read the tracee's memory and /proc, check the id is still
 * valid (so what was read was that process's), decide, answer.
 *
 * What CONTINUE cannot promise (seccomp_unotify(2), "Caveats"): the kernel reads the path and
 * argv again after ptc answers, so a thread sharing the tracee's memory can change them in
 * between. Such an exec (a process of several threads, or a vfork child whose parent has
 * other threads running) is refused when a terminal deny or ask rule could be evaded by it;
 * otherwise judged on what was read (docs/security.md says what holds).
 */

#include "core/tools/exec-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/fs/path-resolve.h"
#include "core/policy/approval.h"
#include "core/sandbox/exec-notify.h"
#include "core/sandbox/seccomp-policy.h"
#include "core/tools/tool.h"

#if defined(__x86_64__)
#        define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#        define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#        define NATIVE_AUDIT_ARCH AUDIT_ARCH_RISCV64
#endif

/* What one exec may carry to be judged: past these it is refused, never judged in part. */
#define ARGC_MAX 16384
#define ARGV_BYTES_MAX (1024 * 1024)
/* The spellings of one exec judged (exec-supervisor.h). */
#define SPELLINGS_MAX 5

struct exec_supervisor {
        struct exec_supervisor_opts o;
        char *home;
        int sock;         /* ours: the listener arrives here */
        int child_sock;   /* the child's end (the child has its copy), until the stop */
        int stop_pipe[2]; /* written by exec_supervisor_stop() */
        bool strict;      /* terminal deny/ask rules, threaded_exec deny: refuse racy execs */
        pthread_t thread;
        bool thread_started;
        struct seccomp_notif_sizes sizes;
        char *strings; /* ARGV_BYTES_MAX */
        char **argv;   /* ARGC_MAX + 1 */
        struct exec_supervisor_report rep;
        pid_t own[8]; /* processes near ptc that exec'd (ptc_own_start()) */
        size_t n_own;
        /* An ask at exec stops the command's clock: read by the terminal's wait loop. */
        bool asking;        /* atomic */
        usec_t paused_usec; /* atomic: the asks' time so far */
        int wake_fd;        /* eventfd: written when an ask ends */
};

const struct seccomp_program *exec_supervisor_program(void)
{
        return seccomp_exec_notify_program(NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* Reading the tracee                                                                       */

static ssize_t read_mem(pid_t pid, uint64_t addr, void *buf, size_t n)
{
        struct iovec local = {.iov_base = buf, .iov_len = n};
        struct iovec remote = {.iov_base = (void *) (uintptr_t) addr, .iov_len = n};
        ssize_t k = process_vm_readv(pid, &local, 1, &remote, 1, 0);

        return k < 0 ? -errno : k == 0 ? -EFAULT : k;
}

/* A NUL-terminated string at @addr into @out (at most @max bytes with its NUL): its length,
 * -E2BIG past @max, -errno when unreadable. Reads page by page: the next may be unmapped. */
static ssize_t read_string(pid_t pid, uint64_t addr, char *out, size_t max)
{
        size_t got = 0;

        while (got < max) {
                size_t chunk = 4096 - (size_t) ((addr + got) % 4096);
                ssize_t k;
                char *nul;

                chunk = MIN(chunk, max - got);
                k = read_mem(pid, addr + got, out + got, chunk);
                if (k < 0)
                        return k;
                nul = memchr(out + got, 0, (size_t) k);
                if (nul)
                        return nul - out;
                got += (size_t) k;
        }
        return -E2BIG;
}

/* argv at @addr into s->argv (strings in s->strings): argc, -E2BIG past the caps, -errno. */
static ssize_t read_argv(struct exec_supervisor *s, pid_t pid, uint64_t addr, size_t used)
{
        uint64_t ptrs[512];
        size_t argc = 0;

        if (addr == 0)
                return 0; /* Linux runs a NULL argv as an empty one */
        for (;;) {
                size_t n =
                        MIN(ELEMENTSOF(ptrs), (4096 - (size_t) (addr % 4096)) / sizeof(uint64_t));
                ssize_t k;

                if (n == 0)
                        n = 1;
                k = read_mem(pid, addr, ptrs, n * sizeof(uint64_t));
                if (k < 0)
                        return k;
                n = (size_t) k / sizeof(uint64_t);
                if (n == 0)
                        return -EFAULT;
                for (size_t i = 0; i < n; i++) {
                        ssize_t len;

                        if (ptrs[i] == 0) {
                                s->argv[argc] = NULL;
                                return (ssize_t) argc;
                        }
                        if (argc >= ARGC_MAX || used >= ARGV_BYTES_MAX)
                                return -E2BIG;
                        len = read_string(pid, ptrs[i], s->strings + used, ARGV_BYTES_MAX - used);
                        if (len < 0)
                                return len;
                        s->argv[argc++] = s->strings + used;
                        used += (size_t) len + 1;
                }
                addr += n * sizeof(uint64_t);
        }
}

/* "PPid:" and "Threads:" of /proc/@pid/status. */
static int read_status(pid_t pid, pid_t *ret_ppid, long *ret_threads)
{
        char path[64], line[256];
        FILE *f;

        *ret_ppid = 0;
        *ret_threads = 0;
        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "PPid:", 5) == 0)
                        *ret_ppid = (pid_t) strtol(line + 5, NULL, 10);
                else if (strncmp(line, "Threads:", 8) == 0)
                        *ret_threads = strtol(line + 8, NULL, 10);
        }
        fclose(f);
        return *ret_threads > 0 ? 0 : -EIO;
}

/*
 * Whether another running thread can write @pid's memory between ptc's read and the
 * kernel's: it has several threads, or it shares its memory with its parent (a vfork child)
 * while the parent has more than the one thread vfork suspends. Unknown counts as yes.
 */
static bool memory_may_change(pid_t pid)
{
        pid_t ppid, pp;
        long threads, parent_threads;

        if (read_status(pid, &ppid, &threads) < 0 || threads > 1)
                return true;
        /* ptc's own child before its exec (a vfork of ptc's): ptc changes nothing. */
        if (ppid == getpid())
                return false;
        if (ppid <= 0 || read_status(ppid, &pp, &parent_threads) < 0)
                return false; /* no parent of ours to share with */
        if (parent_threads <= 1)
                return false;
        /* kcmp: 0 = the same memory. Unknown (no CONFIG_KCMP): assume shared. */
        return syscall(SYS_kcmp, pid, ppid, KCMP_VM, 0, 0) <= 0;
}

/* ptc's child (1), its grandchild (2), or further (0). /proc/PID/status is readable even
 * where the process's memory is not. */
static int depth_from_ptc(pid_t pid)
{
        pid_t ppid, pp;
        long threads;

        if (read_status(pid, &ppid, &threads) < 0)
                return 0;
        if (ppid == getpid())
                return 1;
        if (ppid > 0 && read_status(ppid, &pp, &threads) == 0 && pp == getpid())
                return 2;
        return 0;
}

static bool own_seen(const struct exec_supervisor *s, pid_t pid)
{
        for (size_t i = 0; i < s->n_own; i++)
                if (s->own[i] == pid)
                        return true;
        return false;
}

/* A process near ptc that exec'd: from now on it runs the command's code, not ptc's. (Only
 * such a process's first exec is unreadable: ptc not root, its copy non-dumpable; as root
 * every exec is read.) */
static void own_mark(struct exec_supervisor *s, pid_t pid)
{
        if (s->n_own < ELEMENTSOF(s->own) && !own_seen(s, pid) && depth_from_ptc(pid) > 0)
                s->own[s->n_own++] = pid;
}

/*
 * Whether @pid's exec is ptc's own start of the command: ptc's child or grandchild (a
 * sandbox's init's child) that has not exec'd yet, so still ptc's code. Such a process is a
 * copy of ptc, non-dumpable when ptc is not root, so its memory cannot be read; what it
 * execs is what ptc asked for (the shell, or the pid namespace's init). Once it exec'd
 * (own_mark()), a later exec it cannot be read for is refused: a command that made itself
 * non-dumpable gets no pass, nor does anything further down the tree.
 */
static bool ptc_own_start(const struct exec_supervisor *s, pid_t pid)
{
        return !own_seen(s, pid) && depth_from_ptc(pid) > 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Judging                                                                                  */

static const char *base_name(const char *p)
{
        const char *b = strrchr(p, '/');

        return b && b[1] ? b + 1 : p;
}

static bool name_in(const char *name, const char *const *list)
{
        for (size_t i = 0; list[i]; i++)
                if (strcmp(name, list[i]) == 0)
                        return true;
        return false;
}

/* A shell's script operand (`sh FILE ARGS`: the kernel would run FILE the same way from its
 * #! line): its index in @argv, or 0 when it reads -c STRING or stdin. */
static size_t shell_script_operand(char *const *argv, size_t argc)
{
        for (size_t i = 1; i < argc; i++) {
                const char *w = argv[i];

                if (strcmp(w, "--") == 0)
                        return i + 1 < argc ? i + 1 : 0;
                if (strcmp(w, "-") == 0)
                        return 0;
                if (w[0] != '-' && w[0] != '+')
                        return i;
                if (w[1] != '-' && strpbrk(w + 1, "cs"))
                        return 0;
                if (strcmp(w + 1, "o") == 0 || strcmp(w + 1, "O") == 0 ||
                    strcmp(w, "--rcfile") == 0 || strcmp(w, "--init-file") == 0)
                        i++;
        }
        return 0;
}

/* @path as the kernel would find it for @pid (relative to @base_dir, a /proc link):
 * realpath, else as written. */
static void resolve_in(pid_t pid, const char *base_dir, const char *path, char *out, size_t n)
{
        char full[PATH_MAX + 64];
        char real[PATH_MAX];

        if (path[0] == '/')
                (void) snprintf(full, sizeof(full), "/proc/%d/root%s", (int) pid, path);
        else
                (void) snprintf(full, sizeof(full), "%s/%s", base_dir, path);
        if (realpath(full, real))
                (void) snprintf(out, n, "%s", real);
        else
                (void) snprintf(out, n, "%s", path);
}

/* The words of @words, shell-quoted where needed, cut to @n bytes. */
static void join_words(char *const *words, char *out, size_t n)
{
        size_t used = 0;

        out[0] = 0;
        for (size_t i = 0; words[i] && used + 4 < n; i++) {
                bool plain = words[i][0] && !strpbrk(words[i], " \t\n'\"\\$`*?[]{}()<>|&;#~");
                int k = snprintf(out + used, n - used, plain ? "%s%s" : "%s'%s'", i ? " " : "",
                                 words[i]);

                if (k < 0 || (size_t) k >= n - used) {
                        if (n > 4)
                                memcpy(out + n - 4, "...", 4);
                        return;
                }
                used += (size_t) k;
        }
}

static void vnote(struct exec_supervisor *s, const char *fmt, va_list ap) _printf_(2, 0);
static void vnote(struct exec_supervisor *s, const char *fmt, va_list ap)
{
        if (s->rep.n_notes < EXEC_SUPERVISOR_NOTES_MAX)
                (void) vsnprintf(s->rep.notes[s->rep.n_notes++], EXEC_SUPERVISOR_NOTE_MAX, fmt, ap);
        else
                s->rep.n_left_out++;
}

/* A refused exec, for the result. */
static void add_note(struct exec_supervisor *s, const char *fmt, ...) _printf_(2, 3);
static void add_note(struct exec_supervisor *s, const char *fmt, ...)
{
        va_list ap;

        s->rep.n_refused++;
        va_start(ap, fmt);
        vnote(s, fmt, ap);
        va_end(ap);
}

/* An exec an ask let go on that no person answered: never silent (docs/policy.md). */
static void unasked_note(struct exec_supervisor *s, const char *fmt, ...) _printf_(2, 3);
static void unasked_note(struct exec_supervisor *s, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vnote(s, fmt, ap);
        va_end(ap);
}

static bool same_ask(const struct policy_ask *a, const struct policy_ask *b)
{
        return a->origin == b->origin &&
               (a->origin == POLICY_ORIGIN_RULE ? a->rule == b->rule
                                                : strcmp(a->what, b->what) == 0);
}

/* Every ask of @v was one of the command text's, which a person (or policy.headless)
 * already answered yes before the command started. */
static bool asked_before(const struct exec_supervisor *s, const struct policy_verdict *v)
{
        const struct policy_verdict *t = s->o.text_verdict;

        if (!t || t->kind != POLICY_VERDICT_ASK || v->asks_overflow)
                return false;
        for (size_t i = 0; i < v->n_asks; i++) {
                bool found = false;

                for (size_t j = 0; j < t->n_asks && !found; j++)
                        found = same_ask(&v->asks[i], &t->asks[j]);
                if (!found)
                        return false;
        }
        return v->n_asks > 0;
}

/* Put the ask to whoever answers the call's asks: true when allowed. @why: a refusal's text. */
static bool ask(struct exec_supervisor *s, const struct policy_verdict *v, const char *shown,
                const char *program, char *why, size_t n)
{
        json_auto_t *args = json_pack("{s:s, s:s}", "command", shown, "program", program);
        json_auto_t *refusal = NULL;
        struct approval_outcome outcome;
        const struct approval_call call = {
                .config = s->o.config,
                .tool = "terminal",
                .args = args,
                .cwd = "/",
                .env = s->o.env,
                .approver = s->o.approver,
                .clock = s->o.clock,
                .redactor = s->o.redactor,
                /* Stopping the supervisor (the command ended, timed out or was cancelled)
                 * ends the wait. */
                .cancel_fd = s->stop_pipe[0],
        };

        usec_t t0 = now_usec();
        uint64_t one = 1;
        int r;

        __atomic_store_n(&s->asking, true, __ATOMIC_RELEASE);
        r = args ? approval_gate_verdict(&call, v, &refusal, &outcome) : -ENOMEM;
        __atomic_add_fetch(&s->paused_usec, now_usec() - t0, __ATOMIC_RELEASE);
        __atomic_store_n(&s->asking, false, __ATOMIC_RELEASE);
        (void) write(s->wake_fd, &one, sizeof(one));
        if (r < 0) {
                (void) snprintf(why, n, "out of memory while asking");
                return false;
        }
        if (!refusal) {
                if (strcmp(outcome.answered_by, "headless") == 0) {
                        json_auto_t *o = json_object();

                        approval_note(&outcome, o);
                        unasked_note(s, "ptc ran %.200s: %s", shown,
                                     json_string_value(json_object_get(o, "approval"))
                                             ?: "not "
                                                "asked");
                }
                return true;
        }
        (void) snprintf(why, n, "%s",
                        json_string_value(json_object_get(refusal, "error")) ?: "denied");
        return false;
}

/*
 * Judge one notification: 0 to let the exec go on, -EPERM to fail it (a note says why),
 * -ESRCH when it is no longer valid (no answer to send).
 */
static int judge(struct exec_supervisor *s, int listener, const struct seccomp_notif *req)
{
        pid_t pid = (pid_t) req->pid;
        bool at = false;
        uint64_t path_addr, argv_addr;
        int dirfd = AT_FDCWD, flags = 0;
        char cwd_dir[64], base_dir[64], real[PATH_MAX], script[PATH_MAX], why[512], shown[1024];
        char *path;
        ssize_t plen, argc;
        char **spell[SPELLINGS_MAX] = {};
        size_t n_spell = 0;
        struct policy_verdict v;
        size_t op = 0;
        bool racy = false, own = false;
        int r = 0;

#ifdef NATIVE_AUDIT_ARCH
        if (req->data.arch != NATIVE_AUDIT_ARCH) {
                if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
                        return -ESRCH;
                add_note(s,
                         "ptc refused an exec through a foreign system call ABI (audit arch "
                         "0x%x): it cannot be judged",
                         req->data.arch);
                return -EPERM;
        }
#endif
        /* x32 shares x86_64's audit arch, its numbers carry a bit of their own: foreign too. */
        if (req->data.nr != SYS_execve && req->data.nr != SYS_execveat) {
                if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
                        return -ESRCH;
                add_note(s,
                         "ptc refused an exec through a foreign system call ABI (system call "
                         "0x%x): it cannot be judged",
                         (unsigned) req->data.nr);
                return -EPERM;
        }
        at = req->data.nr == SYS_execveat;
        path_addr = at ? req->data.args[1] : req->data.args[0];
        argv_addr = at ? req->data.args[2] : req->data.args[1];
        if (at) {
                dirfd = (int) req->data.args[0];
                flags = (int) req->data.args[4];
        }

        path = s->strings;
        plen = read_string(pid, path_addr, path, PATH_MAX);
        if (plen >= 0)
                argc = read_argv(s, pid, argv_addr, (size_t) plen + 1);
        else
                argc = plen;
        (void) snprintf(cwd_dir, sizeof(cwd_dir), "/proc/%d/cwd", (int) pid);
        if (at && dirfd != AT_FDCWD)
                (void) snprintf(base_dir, sizeof(base_dir), "/proc/%d/fd/%d", (int) pid, dirfd);
        else
                memcpy(base_dir, cwd_dir, sizeof(cwd_dir));
        if (argc >= 0) {
                if (at && (flags & AT_EMPTY_PATH) && path[0] == 0) {
                        /* fexecve(): the file is the descriptor's. */
                        ssize_t k = readlink(base_dir, real, sizeof(real) - 1);

                        real[k > 0 ? k : 0] = 0;
                        if (k > 0 && real[0] == '/') {
                                char tmp[PATH_MAX];

                                if (realpath(base_dir, tmp))
                                        memcpy(real, tmp, sizeof(tmp));
                        }
                } else
                        resolve_in(pid, base_dir, path, real, sizeof(real));
                op = argc > 0 ? shell_script_operand(s->argv, (size_t) argc) : 0;
                if (op && strcmp(base_name(real), "busybox") != 0) {
                        const char *const shells[] = {"sh",   "bash", "dash", "zsh",  "ksh",
                                                      "mksh", "ash",  "posh", "yash", NULL};

                        if (name_in(base_name(real), shells))
                                resolve_in(pid, cwd_dir, s->argv[op], script, sizeof(script));
                        else
                                op = 0;
                } else
                        op = 0;
                racy = s->strict && memory_may_change(pid);
        } else if (argc == -EPERM)
                own = ptc_own_start(s, pid);
        /* What was read was this process's only if it is still waiting in this exec. */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
                return -ESRCH;
        s->rep.n_execs++;
        if (own) {
                own_mark(s, pid);
                return 0;
        }

        if (argc == -E2BIG || plen == -E2BIG) {
                add_note(s,
                         "ptc refused an exec whose path or arguments are past what it judges "
                         "(%d arguments, %d bytes): not judged, not run",
                         ARGC_MAX, ARGV_BYTES_MAX);
                return -EPERM;
        }
        if (argc < 0) {
                add_note(s, "ptc refused an exec whose arguments it cannot read (%s)",
                         strerror((int) -argc));
                return -EPERM;
        }

        /* The spellings: the binary the kernel resolves, argv[0] (a multi-call binary
         * dispatches on it), the path as written; a multi-call binary's applet; a shell's
         * script. */
        for (size_t k = 0; k < SPELLINGS_MAX; k++) {
                spell[k] = calloc((size_t) argc + 2, sizeof(char *));
                if (!spell[k]) {
                        add_note(s, "ptc refused an exec: out of memory");
                        r = -EPERM;
                        goto finish;
                }
        }
#define SPELL_WITH(first, from)                                        \
        do {                                                           \
                spell[n_spell][0] = (char *) (first);                  \
                for (ssize_t _i = (from); _i < argc; _i++)             \
                        spell[n_spell][1 + _i - (from)] = s->argv[_i]; \
                n_spell++;                                             \
        } while (0)
        SPELL_WITH(real, 1);
        if (argc > 0 && strcmp(s->argv[0], real) != 0)
                SPELL_WITH(s->argv[0], 1);
        if (path[0] && strcmp(path, real) != 0 && (argc == 0 || strcmp(path, s->argv[0]) != 0))
                SPELL_WITH(path, 1);
        if (argc > 1 &&
            (strcmp(base_name(real), "busybox") == 0 || strcmp(base_name(real), "toybox") == 0 ||
             strcmp(base_name(s->argv[0]), "busybox") == 0))
                SPELL_WITH(s->argv[1], 2);
        if (op && n_spell < SPELLINGS_MAX)
                SPELL_WITH(script, (ssize_t) op + 1);
#undef SPELL_WITH

        if (policy_decide_exec(s->o.config, (char *const *const *) spell, n_spell, s->home, &v) <
            0) {
                add_note(s, "ptc refused an exec: out of memory");
                r = -EPERM;
                goto finish;
        }
        join_words(spell[0], shown, sizeof(shown));
        switch (v.kind) {
        case POLICY_VERDICT_ALLOW:
                break;
        case POLICY_VERDICT_ASK:
                if (asked_before(s, &v))
                        break;
                if (!ask(s, &v, shown, real, why, sizeof(why))) {
                        add_note(s, "ptc refused to run %.200s: %s", shown, why);
                        r = -EPERM;
                        goto finish;
                }
                break;
        case POLICY_VERDICT_DENY:
                add_note(s, "ptc refused to run %.200s: denied by policy (%s%s%.100s)%s%.100s",
                         shown, v.what, v.subject[0] ? ": " : "", v.subject, v.message ? ": " : "",
                         v.message ?: "");
                r = -EPERM;
                goto finish;
        case POLICY_VERDICT_BLOCKED:
                add_note(s, "ptc refused to run %.200s: BLOCKED (hardline): %s", shown, v.what);
                r = -EPERM;
                goto finish;
        }
        if (racy) {
                add_note(s,
                         "ptc refused to run %.200s: it was asked for by a process whose "
                         "memory another running thread shares, which could change the "
                         "program after ptc judged it (terminal rules are in force)",
                         shown);
                r = -EPERM;
        }
finish:
        for (size_t k = 0; k < SPELLINGS_MAX; k++)
                free(spell[k]);
        return r;
}

/* ---------------------------------------------------------------------------------------- */
/* The thread                                                                               */

/* The listener from the child, or -1 when it sent none (it could not install the filter)
 * or the supervisor stopped first. */
static int receive_listener(struct exec_supervisor *s)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        char byte;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = u.buf,
                            .msg_controllen = sizeof(u.buf)};
        struct cmsghdr *cm;
        int fd = -1, k;

        /* No deadline: the child's word (or its end) or the stop pipe wakes this. */
        k = fd_wait_either(s->sock, s->stop_pipe[0], USEC_INFINITY);
        if (k < 0 || !(k & FD_WAIT_A))
                return -1;
        if (recvmsg(s->sock, &mh, MSG_CMSG_CLOEXEC) <= 0)
                return -1;
        cm = CMSG_FIRSTHDR(&mh);
        if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
            cm->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        return fd;
}

static void serve_one(struct exec_supervisor *s, int listener, struct seccomp_notif *req,
                      struct seccomp_notif_resp *resp)
{
        int r;

        memset(req, 0, s->sizes.seccomp_notif);
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
                return; /* ENOENT: the tracee was killed meanwhile */
        r = judge(s, listener, req);
        if (r == -ESRCH)
                return;
        memset(resp, 0, s->sizes.seccomp_notif_resp);
        resp->id = req->id;
        if (r < 0)
                resp->error = -EPERM;
        else
                resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        /* ENOENT: it died waiting; nothing to answer. */
        (void) ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp);
}

static void *serve(void *userdata)
{
        struct exec_supervisor *s = userdata;
        _cleanup_close_ int listener = -EBADF;
        _cleanup_free_ struct seccomp_notif *req = NULL;
        _cleanup_free_ struct seccomp_notif_resp *resp = NULL;

        listener = receive_listener(s);
        if (listener < 0)
                return NULL;
        s->rep.supervised = true;
        req = calloc(1, MAX(s->sizes.seccomp_notif, sizeof(*req)));
        resp = calloc(1, MAX(s->sizes.seccomp_notif_resp, sizeof(*resp)));
        s->sizes.seccomp_notif = MAX(s->sizes.seccomp_notif, sizeof(*req));
        s->sizes.seccomp_notif_resp = MAX(s->sizes.seccomp_notif_resp, sizeof(*resp));
        if (!req || !resp)
                return NULL; /* the listener closes: every exec fails (ENOSYS), closed */
        for (;;) {
                struct pollfd fds[2] = {{.fd = listener, .events = POLLIN},
                                        {.fd = s->stop_pipe[0], .events = POLLIN}};

                /* No deadline: a notification, the filter's end or the stop pipe wakes this. */
                if (poll_until(fds, 2, USEC_INFINITY) < 0)
                        break;
                if (fds[1].revents)
                        break;
                if (fds[0].revents & POLLIN)
                        serve_one(s, listener, req, resp);
                else if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL))
                        break; /* every process of the filter is gone */
        }
        return NULL;
}

/* ---------------------------------------------------------------------------------------- */

static bool has_terminal_rule(const struct ptc_config *c)
{
        for (size_t i = 0; c && i < c->policy.n_rules; i++) {
                const struct policy_rule *r = &c->policy.rules[i];

                if (r->action == POLICY_ALLOW)
                        continue;
                for (size_t j = 0; r->tools[j]; j++)
                        if (fnmatch(r->tools[j], "terminal", 0) == 0)
                                return true;
        }
        return false;
}

usec_t exec_supervisor_deadline(const struct exec_supervisor *s, usec_t deadline)
{
        if (!s || deadline == USEC_INFINITY)
                return deadline;
        if (__atomic_load_n(&s->asking, __ATOMIC_ACQUIRE))
                return USEC_INFINITY;
        return deadline + __atomic_load_n(&s->paused_usec, __ATOMIC_ACQUIRE);
}

int exec_supervisor_wake_fd(const struct exec_supervisor *s)
{
        return s ? s->wake_fd : -1;
}

void exec_supervisor_woken(struct exec_supervisor *s)
{
        uint64_t v;

        if (s)
                (void) read(s->wake_fd, &v, sizeof(v));
}

static void supervisor_free(struct exec_supervisor *s)
{
        if (!s)
                return;
        safe_close(s->wake_fd);
        safe_close(s->sock);
        safe_close(s->child_sock);
        safe_close(s->stop_pipe[0]);
        safe_close(s->stop_pipe[1]);
        free(s->home);
        free(s->strings);
        free(s->argv);
        free(s);
}

int exec_supervisor_start(const struct exec_supervisor_opts *o, struct exec_supervisor **ret,
                          int *ret_child_sock, char *why, size_t why_size)
{
        struct exec_supervisor *s;
        int sv[2], r;

        *ret = NULL;
        *ret_child_sock = -1;
#ifndef NATIVE_AUDIT_ARCH
        /* Pointers read as 64 bits and a foreign ABI told apart by its audit arch: known
         * architectures only. */
        (void) snprintf(why, why_size, "not supported on this architecture");
        return 0;
#endif
        if (!exec_notify_is_available(why, why_size))
                return 0;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->o = *o;
        s->sock = s->child_sock = s->stop_pipe[0] = s->stop_pipe[1] = -EBADF;
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0) {
                r = -errno;
                goto fail;
        }
        s->strict = has_terminal_rule(o->config) && o->config->policy.threaded_exec == POLICY_DENY;
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s->sizes) < 0) {
                r = -errno;
                goto fail;
        }
        s->strings = malloc(ARGV_BYTES_MAX);
        s->argv = malloc((ARGC_MAX + 1) * sizeof(char *));
        r = fs_home_dir(o->env, &s->home);
        if (!s->strings || !s->argv || r == -ENOMEM) {
                r = -ENOMEM;
                goto fail;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
            pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }
        s->sock = sv[0];
        s->child_sock = sv[1];
        r = -pthread_create(&s->thread, NULL, serve, s);
        if (r < 0)
                goto fail;
        s->thread_started = true;
        *ret_child_sock = s->child_sock;
        *ret = s;
        return 0;
fail:
        supervisor_free(s);
        return r;
}

void exec_supervisor_stop(struct exec_supervisor *s, struct exec_supervisor_report *ret)
{
        if (ret)
                *ret = (struct exec_supervisor_report){};
        if (!s)
                return;
        s->child_sock = safe_close(s->child_sock);
        if (s->thread_started) {
                char b = 1;

                while (write(s->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
                        ;
                (void) pthread_join(s->thread, NULL);
        }
        if (ret)
                *ret = s->rep;
        supervisor_free(s);
}

int exec_supervisor_opts_for(const struct tool_ctx *ctx, json_t *args,
                             struct exec_supervisor_opts *ret, struct policy_verdict *text_verdict)
{
        int r;

        if (!ctx->config)
                return 0;
        r = policy_decide(ctx->config, "terminal", args, ctx->cwd, ctx->env, text_verdict);
        if (r < 0)
                return r;
        *ret = (struct exec_supervisor_opts){
                .config = ctx->config,
                .env = ctx->env,
                .approver = ctx->approver,
                .clock = ctx->clock,
                .redactor = ctx->redactor,
                .text_verdict = text_verdict,
        };
        return 1;
}

char *exec_supervisor_note(const struct exec_supervisor_report *x, const char *note)
{
        _cleanup_buf_ struct buf b = BUF_INIT(16 * 1024);

        for (size_t i = 0; i < x->n_notes; i++)
                if (buf_printf(&b, "\n[%s]", x->notes[i]) < 0)
                        return NULL;
        if (x->n_left_out > 0 && buf_printf(&b, "\n[ptc: %zu more such line%s left out]",
                                            x->n_left_out, x->n_left_out == 1 ? "" : "s") < 0)
                return NULL;
        if (buf_append_str(&b, note) < 0)
                return NULL;
        return buf_steal(&b, NULL);
}

json_t *exec_supervisor_warnings(const char *why)
{
        char w[512];

        (void) snprintf(w, sizeof(w),
                        "terminal: the programs this command ran were not judged one by one (no "
                        "exec supervision: %s); the policy judged the command text only",
                        why && why[0] ? why : "the command's exec filter could not be installed");
        return json_pack("[s]", w);
}
