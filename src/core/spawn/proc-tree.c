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

/* Breadth-first: @s starts with the roots; their descendants are appended. */
static void expand_tree(struct pidset *s)
{
        for (size_t i = 0; i < s->n; i++)
                (void) collect_children(s->p[i], false, s);
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

static bool is_zombie(pid_t pid)
{
        char name[32], state;
        int pgrp;

        (void) snprintf(name, sizeof(name), "%d", (int) pid);
        if (!read_stat(name, &state, &pgrp))
                return true; /* gone */
        return state == 'Z' || state == 'X';
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
                do
                        k = poll(pfd, n, n > 0 ? poll_timeout_ms(deadline) : 1);
                while (k < 0 && errno == EINTR);
                for (nfds_t i = 0; i < n; i++)
                        safe_close(pfd[i].fd);
                if (k == 0 && now_usec() >= deadline)
                        return -ETIMEDOUT;
        }
}

/* @root's tree, and with @orphans (non-NULL) every other child of our main thread and its tree. */
static void gather(pid_t root, struct pidset *s, struct pidset *orphans)
{
        pid_t self = getpid();

        if (root > 0)
                (void) pidset_add(s, root);
        if (orphans) {
                struct pidset o = {};
                (void) collect_children(self, true, &o);
                for (size_t i = 0; i < o.n; i++)
                        if (o.p[i] != root) {
                                (void) pidset_add(s, o.p[i]);
                                (void) pidset_add(orphans, o.p[i]);
                        }
                free(o.p);
        }
        expand_tree(s);
}

int proc_signal_execution(pid_t root, bool include_root, bool orphans_too, int sig)
{
        struct pidset s = {}, orphans = {};
        int n = 0;

        gather(root, &s, orphans_too ? &orphans : NULL);
        for (size_t i = 0; i < s.n; i++)
                if ((include_root || s.p[i] != root) && kill(s.p[i], sig) == 0)
                        n++;
        free(s.p);
        free(orphans.p);
        return n;
}

void proc_reap_orphans(pid_t keep)
{
        pid_t *kids = NULL;
        int n;

        n = proc_children(getpid(), true, &kids);
        for (int i = 0; i < n; i++)
                if (kids[i] != keep)
                        (void) waitpid(kids[i], NULL, WNOHANG);
        free(kids);
}

int proc_kill_execution(pid_t root, bool orphans_too, usec_t timeout)
{
        usec_t end = now_usec() + timeout;
        bool was_empty = false;

        for (;;) {
                struct pidset s = {}, orphans = {};
                size_t alive = 0;

                gather(root, &s, orphans_too ? &orphans : NULL);
                /*
                 * SIGSTOP first so nothing in the tree can fork between our
                 * walk and our kill (a fork bomb would otherwise outrun us);
                 * then SIGKILL, which also ends stopped processes.
                 */
                for (size_t i = 0; i < s.n; i++)
                        (void) kill(s.p[i], SIGSTOP);
                for (size_t i = 0; i < s.n; i++) {
                        if (is_zombie(s.p[i]))
                                continue;
                        alive++;
                        (void) kill(s.p[i], SIGKILL);
                }
                /* Reap our orphans; a SIGKILLed process exits promptly. */
                for (size_t i = 0; i < orphans.n; i++) {
                        if (alive)
                                (void) waitpid(orphans.p[i], NULL, 0);
                        else
                                (void) waitpid(orphans.p[i], NULL, WNOHANG);
                }
                free(s.p);
                free(orphans.p);
                /*
                 * A process that turned zombie during this walk handed its
                 * children to us after we had listed ours, so this round may
                 * have missed them: only two empty rounds in a row prove that
                 * nothing is left.
                 */
                if (alive == 0) {
                        if (was_empty)
                                return 0;
                        was_empty = true;
                        continue;
                }
                was_empty = false;
                if (now_usec() >= end)
                        return -ETIMEDOUT;
        }
}
