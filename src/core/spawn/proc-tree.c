/* SPDX-License-Identifier: MIT */
#include "core/spawn/proc-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/compat/pidfd.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/parse-util.h"

/* A tree larger than this is cut off; the next round finds the rest. */
#define PROC_TREE_MAX 65536
/* A kill stops the tree in at most this many walks, then kills what it found. */
#define TREE_STOP_ROUNDS_MAX 1000

struct pidset {
        pid_t *p;
        size_t n, alloc;
};

static int pidset_add(struct pidset *s, pid_t pid)
{
        for (size_t i = 0; i < s->n; i++)
                if (s->p[i] == pid)
                        return 0;
        if (s->n >= PROC_TREE_MAX)
                return -E2BIG;
        if (s->n == s->alloc) {
                size_t a = s->alloc ? s->alloc * 2 : 32;
                pid_t *p = realloc(s->p, a * sizeof(pid_t));
                if (!p)
                        return -ENOMEM;
                s->p = p;
                s->alloc = a;
        }
        s->p[s->n++] = pid;
        return 1;
}

static int parse_pids(const char *s, struct pidset *out)
{
        while (*s) {
                char *end;
                long v = strtol(s, &end, 10);
                if (end == s)
                        break;
                if (v > 0) {
                        int r = pidset_add(out, (pid_t) v);
                        if (r < 0)
                                return r;
                }
                s = end;
                while (*s == ' ' || *s == '\n')
                        s++;
        }
        return 0;
}

static int read_children_file(const char *path, struct pidset *out)
{
        _cleanup_free_ char *data = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t len = 0, alloc = 4096;

        /* /proc files report size 0, so read_file_at's size check does not fit. */
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        data = malloc(alloc);
        if (!data)
                return -ENOMEM;
        for (;;) {
                ssize_t k;
                if (len + 1 >= alloc) {
                        char *p;
                        if (alloc >= 4 * 1024 * 1024)
                                break;
                        p = realloc(data, alloc * 2);
                        if (!p)
                                return -ENOMEM;
                        data = p;
                        alloc *= 2;
                }
                k = read(fd, data + len, alloc - 1 - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        data[len] = 0;
        return parse_pids(data, out);
}

static int collect_children(pid_t pid, bool main_thread_only, struct pidset *out)
{
        char path[64];
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (main_thread_only) {
                snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) pid, (int) pid);
                return read_children_file(path, out);
        }
        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char p2[320];
                int k;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(p2, sizeof(p2), "/proc/%d/task/%s/children", (int) pid, de->d_name);
                k = read_children_file(p2, out);
                if (k < 0 && k != -ENOENT && k != -ESRCH && r == 0)
                        r = k;
        }
        closedir(d);
        return r;
}

int proc_children(pid_t pid, bool main_thread_only, pid_t **ret)
{
        struct pidset s = {};
        int r;

        r = collect_children(pid, main_thread_only, &s);
        if (r < 0 && s.n == 0) {
                free(s.p);
                return r;
        }
        *ret = s.p;
        return (int) s.n;
}

/*
 * From /proc/@pid/stat: the state letter and the process group. False when the process is
 * gone or its stat cannot be read.
 */
static bool read_stat(const char *pid, char *ret_state, int *ret_pgrp)
{
        char path[sizeof("/proc//stat") + 32], buf[512];
        _cleanup_close_ int fd = -EBADF;
        int ppid;
        ssize_t k;
        char *rp;

        (void) snprintf(path, sizeof(path), "/proc/%.31s/stat", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (k <= 0)
                return false;
        buf[k] = 0;
        /* After the last ')' (the command name may hold one): state, ppid, pgrp. */
        rp = strrchr(buf, ')');
        return rp && sscanf(rp + 1, " %c %d %d", ret_state, &ppid, ret_pgrp) == 3;
}

/* The processes of group @pgid that are not zombies, from /proc/N/stat. */
static void group_members(pid_t pgid, struct pidset *s)
{
        DIR *d = opendir("/proc");
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                int64_t pid;
                char state;
                int pgrp;

                if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
                    !read_stat(de->d_name, &state, &pgrp))
                        continue;
                if (pgrp == (int) pgid && state != 'Z' && state != 'X' &&
                    safe_atoi64(de->d_name, &pid) >= 0)
                        (void) pidset_add(s, (pid_t) pid);
        }
        closedir(d);
}

int proc_group_wait_gone(pid_t pgid, usec_t deadline)
{
        for (;;) {
                struct pollfd pfd[64];
                struct pidset s = {};
                nfds_t n = 0;
                int k;

                group_members(pgid, &s);
                for (size_t i = 0; i < s.n && n < ELEMENTSOF(pfd); i++) {
                        int fd = pidfd_open_compat(s.p[i]);

                        if (fd >= 0)
                                pfd[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
                }
                free(s.p);
                if (s.n == 0)
                        return 0;
                /*
                 * Readable once that process has exited: then look again. Without pidfds
                 * (before Linux 5.3) a millisecond's sleep stands in for the event.
                 */
                k = poll_until(pfd, n,
                               n > 0 ? deadline : MIN(deadline, now_usec() + USEC_PER_MSEC));
                for (nfds_t i = 0; i < n; i++)
                        safe_close(pfd[i].fd);
                if (k == 0 && now_usec() >= deadline)
                        return -ETIMEDOUT;
        }
}

/*
 * A run's tree as it is found: each member pinned by a pidfd opened while its parent, itself
 * a member, still held it, so a pid number the kernel handed to another process meanwhile is
 * never signalled. m[0] is the root.
 */
struct tree_member {
        pid_t pid;
        int pidfd; /* -1: none could be had (ENOSYS before Linux 5.3, EMFILE) */
};

struct tree {
        struct tree_member *m;
        size_t n, alloc;
};

static void tree_done(struct tree *t)
{
        for (size_t i = 0; i < t->n; i++)
                safe_close(t->m[i].pidfd);
        free(t->m);
        *t = (struct tree){};
}

static bool tree_has(const struct tree *t, pid_t pid)
{
        for (size_t i = 0; i < t->n; i++)
                if (t->m[i].pid == pid)
                        return true;
        return false;
}

static int tree_append(struct tree *t, pid_t pid, int pidfd)
{
        if (t->n >= PROC_TREE_MAX)
                return -E2BIG;
        if (t->n == t->alloc) {
                size_t a = t->alloc ? t->alloc * 2 : 32;
                struct tree_member *m = realloc(t->m, a * sizeof(*m));

                if (!m)
                        return -ENOMEM;
                t->m = m;
                t->alloc = a;
        }
        t->m[t->n++] = (struct tree_member){.pid = pid, .pidfd = pidfd};
        return 0;
}

/* The parent of @pid from /proc/@pid/stat, or -1 when it is gone. */
static pid_t read_ppid(pid_t pid)
{
        char name[32], path[64], buf[512], state;
        _cleanup_close_ int fd = -EBADF;
        int ppid;
        ssize_t k;
        char *rp;

        (void) snprintf(name, sizeof(name), "%d", (int) pid);
        (void) snprintf(path, sizeof(path), "/proc/%s/stat", name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (k <= 0)
                return -1;
        buf[k] = 0;
        rp = strrchr(buf, ')');
        if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
                return -1;
        return (pid_t) ppid;
}

/*
 * Take @pid, listed among a member's children, into the tree if it is one of ours once
 * pinned: a pidfd first, then its parent must be a member (the one that listed it, or the
 * root, a subreaper, when that one died meanwhile). Listed but reaped and its number reused
 * by another process, it has another parent: left alone. 1 taken, 0 not, -errno.
 */
static int tree_adopt(struct tree *t, pid_t pid)
{
        int fd, r;

        if (tree_has(t, pid))
                return 0;
        fd = pidfd_open_compat(pid);
        if (fd == -ESRCH)
                return 0; /* gone */
        if (!tree_has(t, read_ppid(pid))) {
                safe_close(fd);
                return 0;
        }
        r = tree_append(t, pid, fd < 0 ? -1 : fd);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        return 1;
}

/* Walk every member's children (all threads'); the members found are appended. */
static void tree_walk(struct tree *t)
{
        for (size_t i = 0; i < t->n; i++) {
                struct pidset kids = {};

                (void) collect_children(t->m[i].pid, false, &kids);
                for (size_t k = 0; k < kids.n; k++)
                        if (tree_adopt(t, kids.p[k]) < 0)
                                break;
                free(kids.p);
        }
}

static int tree_start(struct tree *t, pid_t root)
{
        int fd;

        *t = (struct tree){};
        if (root <= 0)
                return -EINVAL;
        /* The root is the caller's child, not reaped: its number is its own. */
        fd = pidfd_open_compat(root);
        if (fd == -ESRCH)
                return -ESRCH;
        return tree_append(t, root, fd < 0 ? -1 : fd);
}

static bool member_signal(const struct tree_member *m, int sig)
{
        int r = -ENOSYS;

        if (m->pidfd >= 0)
                r = pidfd_send_signal_compat(m->pidfd, sig);
        if (r == -ENOSYS)
                r = kill(m->pid, sig) < 0 ? -errno : 0;
        return r == 0;
}

int proc_tree_signal(pid_t root, bool include_root, int sig)
{
        struct tree t;
        int n = 0;

        if (tree_start(&t, root) < 0)
                return 0;
        tree_walk(&t);
        for (size_t i = include_root ? 0 : 1; i < t.n; i++)
                if (member_signal(&t.m[i], sig))
                        n++;
        tree_done(&t);
        return n;
}

int proc_tree_kill(pid_t root, bool include_root)
{
        struct tree t;
        size_t stopped = 1;
        int n = 0;

        if (tree_start(&t, root) < 0)
                return 0;
        /*
         * SIGSTOP round after round until a walk finds no member it has not stopped: a fork
         * with a signal pending is undone by the kernel, so from then on nothing in the tree
         * can add a process, and the SIGKILL reaches all of it. The root is stopped only
         * with @include_root: left running, it (a subreaper) reaps what dies below it.
         */
        if (include_root)
                (void) member_signal(&t.m[0], SIGSTOP);
        for (unsigned round = 0; round < TREE_STOP_ROUNDS_MAX; round++) {
                tree_walk(&t);
                if (t.n == stopped)
                        break;
                for (; stopped < t.n; stopped++)
                        (void) member_signal(&t.m[stopped], SIGSTOP);
        }
        for (size_t i = include_root ? 0 : 1; i < t.n; i++)
                if (member_signal(&t.m[i], SIGKILL))
                        n++;
        tree_done(&t);
        return n;
}
