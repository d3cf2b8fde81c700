/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Forked children in cmocka tests, and skipping with a reason. Include after ptc-test.h.
 *
 * cmocka catches SIGSEGV, SIGILL, SIGFPE, SIGBUS and SIGSYS while a test runs and longjmps
 * back into its test loop. A child forked by the test inherits those handlers: where it
 * should die of the signal (a probe of a kernel feature, a crash the parent checks for), it
 * would print "not ok" for the parent's test instead and go on running the remaining tests,
 * so that the output has each test twice. test_fork() gives a child with every caught signal
 * back at its default (ignored ones stay ignored) and nothing blocked.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The exit code of a test_run_child() child that could not set NO_NEW_PRIVS. */
#define TEST_CHILD_NNP_FAILED 254

/* Skip the running test, with the reason on the TAP stream as a comment. */
#define test_skip(...)                                 \
        do {                                           \
                print_message("# SKIP: " __VA_ARGS__); \
                print_message("\n");                   \
                skip();                                \
        } while (0)

/* fork(), with stdio flushed first and, in the child, cmocka's handlers taken off. */
static inline pid_t test_fork(void)
{
        pid_t pid;

        (void) fflush(stdout);
        (void) fflush(stderr);
        pid = fork();
        if (pid == 0) {
                sigset_t none;

                for (int sig = 1; sig < NSIG; sig++) {
                        struct sigaction old;

                        /* Signals glibc keeps for itself answer EINVAL: nothing to reset. */
                        if (sigaction(sig, NULL, &old) < 0)
                                continue;
                        if (!(old.sa_flags & SA_SIGINFO) &&
                            (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN))
                                continue;
                        (void) signal(sig, SIG_DFL);
                }
                (void) sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
        }
        return pid;
}

/*
 * Run @fn(@userdata) in a test_fork() child that exits with what @fn returns (0 for success,
 * an errno, or a code of the caller's), after setting NO_NEW_PRIVS first when
 * @no_new_privs (as Landlock and seccomp need). Returns the child's wait status.
 */
static inline int test_run_child(bool no_new_privs, int (*fn)(void *userdata), void *userdata)
{
        int status = 0;
        pid_t pid;

        pid = test_fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(TEST_CHILD_NNP_FAILED);
                _exit(fn(userdata));
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
}
