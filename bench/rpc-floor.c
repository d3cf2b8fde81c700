/* SPDX-License-Identifier: MIT */
/*
 * The floor under a tool call's round trip, for bench/rpc-floor.py: a Unix socket server that
 * does nothing but answer. It accepts one connection and, for every '\n'-terminated request
 * line, writes the canned answer given in the file argv[2] (one line). Blocking I/O, one
 * thread, no parsing: what is left is the kernel's part (two writes, two reads, two wakeups)
 * and the client's.
 *
 *   rpc-floor SOCKET_PATH ANSWER_FILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define REQUEST_MAX (1 << 20)

static int send_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -1;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int main(int argc, char **argv)
{
        static char in[REQUEST_MAX];
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct stat st;
        size_t have = 0;
        char *answer;
        int afd, lfd, fd;

        if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "usage: rpc-floor SOCKET_PATH ANSWER_FILE\n");
                return 2;
        }
        afd = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (afd < 0 || fstat(afd, &st) < 0 || st.st_size <= 0 || st.st_size > REQUEST_MAX) {
                perror(argv[2]);
                return 1;
        }
        answer = malloc((size_t) st.st_size);
        if (!answer || read(afd, answer, (size_t) st.st_size) != st.st_size) {
                perror("read answer");
                return 1;
        }
        close(afd);

        strcpy(sa.sun_path, argv[1]);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0) {
                perror("listen");
                return 1;
        }
        /* Ready: the client may connect. */
        if (write(STDOUT_FILENO, "ready\n", 6) != 6)
                return 1;
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
                perror("accept");
                return 1;
        }
        for (;;) {
                ssize_t k = recv(fd, in + have, sizeof(in) - have, 0);
                char *nl;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return 0;
                have += (size_t) k;
                /* One request at a time: the client waits for each answer. */
                nl = memchr(in, '\n', have);
                if (!nl) {
                        if (have == sizeof(in))
                                return 1;
                        continue;
                }
                have -= (size_t) (nl + 1 - in);
                memmove(in, nl + 1, have);
                if (send_all(fd, answer, (size_t) st.st_size) < 0)
                        return 0;
        }
}
