/* SPDX-License-Identifier: MIT */
/*
 * How `ptc serve` and its clients know each other (cli.h, docs/sessions.md "Who may talk to
 * the server"): a random key in a 0600 file of the server's 0700 directory, which no
 * isolation level that confines shows to a script, and a challenge both ways on connect,
 * before any request. Never process ancestry: a process that holds the key is the user's,
 * one that does not is refused, however it was started.
 *
 * On the socket, one line each (the nonces and MACs in lowercase hex, the MACs HMAC-SHA256
 * with the key, through nettle):
 *
 *   client: "ptc-serve/1 hello NONCE_C"
 *   server: "ptc-serve/1 server NONCE_S MAC("ptc-serve/1 server" NONCE_C NONCE_S)"
 *   client: "ptc-serve/1 client MAC("ptc-serve/1 client" NONCE_S NONCE_C)", then its request
 *
 * The client sends nothing but its nonce before the server has proved it holds the key, and
 * the server reads no request before the client has. Lines are read a byte at a time up to
 * AUTH_LINE_MAX, so that nothing of the request line after the proof is consumed here.
 */

#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "basic/fd-util.h"
#include "basic/log.h"

#define AUTH_VERSION "ptc-serve/1"
#define NONCE_SIZE 32
#define MAC_SIZE SHA256_DIGEST_SIZE
/* The longest handshake line is the server's: 3 words, 2 hex fields, a newline. */
#define AUTH_LINE_MAX 256

static void to_hex(const uint8_t *p, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 15];
        }
        out[2 * n] = 0;
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* Exactly 2 * @n lowercase hex digits at @s into @out; 0 or -EPROTO. */
static int from_hex(const char *s, uint8_t *out, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                int hi = hex_value(s[2 * i]), lo = hi < 0 ? -1 : hex_value(s[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EPROTO;
                out[i] = (uint8_t) (hi << 4 | lo);
        }
        return 0;
}

static void mac(const uint8_t key[CLI_SERVE_KEY_SIZE], const char *label, const uint8_t *a,
                const uint8_t *b, uint8_t out[MAC_SIZE])
{
        struct hmac_sha256_ctx ctx;

        hmac_sha256_set_key(&ctx, CLI_SERVE_KEY_SIZE, key);
        hmac_sha256_update(&ctx, strlen(label), (const uint8_t *) label);
        hmac_sha256_update(&ctx, NONCE_SIZE, a);
        hmac_sha256_update(&ctx, NONCE_SIZE, b);
        hmac_sha256_digest(&ctx, MAC_SIZE, out);
        explicit_wipe(&ctx, sizeof(ctx));
}

static int nonce(uint8_t out[NONCE_SIZE])
{
        /* Blocks only before the kernel's pool is ready, once in a boot's life. */
        ssize_t n;

        do
                n = getrandom(out, NONCE_SIZE, 0);
        while (n < 0 && errno == EINTR);
        if (n != NONCE_SIZE)
                return n < 0 ? -errno : -EIO;
        return 0;
}

/*
 * One line of at most AUTH_LINE_MAX bytes, without its newline, into @buf (NUL-terminated),
 * read a byte at a time so nothing after it is taken. The socket's SO_RCVTIMEO bounds the
 * wait. -EMSGSIZE for a longer line, -ECONNRESET at the end of the input.
 */
static int read_auth_line(int fd, char buf[AUTH_LINE_MAX + 1])
{
        size_t len = 0;

        for (;;) {
                ssize_t k = read(fd, buf + len, 1);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                if (k == 0)
                        return -ECONNRESET;
                if (buf[len] == '\n') {
                        buf[len] = 0;
                        return 0;
                }
                if (++len >= AUTH_LINE_MAX)
                        return -EMSGSIZE;
        }
}

static int send_line(int fd, const char *s)
{
        return write_all_stalling(fd, s, strlen(s), CLI_SERVE_AUTH_SEC * 1000, true);
}

int cli_serve_key_create(const char *dir, uint8_t key[CLI_SERVE_KEY_SIZE])
{
        char path[PATH_MAX];
        int r;

        if ((size_t) snprintf(path, sizeof(path), "%s/serve.key", dir) >= sizeof(path))
                return -ENAMETOOLONG;
        r = nonce(key);
        /* A new file (O_EXCL, O_NOFOLLOW) renamed over the old one: a reader sees one whole. */
        if (r >= 0)
                r = write_file_atomic(path, key, CLI_SERVE_KEY_SIZE, 0600);
        if (r < 0)
                return log_error_errno(r, "cannot write the server's key '%s': %m", path);
        return 0;
}

int cli_serve_key_load(const char *dir, uint8_t key[CLI_SERVE_KEY_SIZE])
{
        char path[PATH_MAX];
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        ssize_t n;

        if ((size_t) snprintf(path, sizeof(path), "%s/serve.key", dir) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* Ours alone, as the server wrote it: anything else was put there by someone else. */
        if (!S_ISREG(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) ||
            st.st_size != CLI_SERVE_KEY_SIZE)
                return -EPERM;
        do
                n = read(fd, key, CLI_SERVE_KEY_SIZE);
        while (n < 0 && errno == EINTR);
        if (n != CLI_SERVE_KEY_SIZE)
                return n < 0 ? -errno : -EIO;
        return 0;
}

/* The peer is this user's: the kernel's word (the directory is 0700 already). */
static int check_peer_uid(int fd)
{
        struct ucred uc;
        socklen_t len = sizeof(uc);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return -errno;
        return uc.uid == getuid() ? 0 : -EPERM;
}

/* What follows "ptc-serve/1 @word " in @line, or NULL when it does not start so. */
static const char *after_word(const char *line, const char *word)
{
        size_t v = strlen(AUTH_VERSION), w = strlen(word);

        if (strncmp(line, AUTH_VERSION, v) != 0 || line[v] != ' ' ||
            strncmp(line + v + 1, word, w) != 0 || line[v + 1 + w] != ' ')
                return NULL;
        return line + v + w + 2;
}

int cli_serve_auth_client(int fd, const uint8_t key[CLI_SERVE_KEY_SIZE])
{
        uint8_t nc[NONCE_SIZE], ns[NONCE_SIZE], want[MAC_SIZE], got[MAC_SIZE];
        char line[AUTH_LINE_MAX + 1], hex_n[2 * NONCE_SIZE + 1], hex_m[2 * MAC_SIZE + 1];
        char out[AUTH_LINE_MAX];
        struct timeval io = {.tv_sec = CLI_SERVE_AUTH_SEC}, none = {};
        const char *p;
        int r;

        r = check_peer_uid(fd);
        if (r < 0)
                return r;
        /* A listener that does not answer holds us this long at most. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &io, sizeof(io)) < 0)
                return -errno;
        r = nonce(nc);
        if (r < 0)
                return r;
        to_hex(nc, NONCE_SIZE, hex_n);
        (void) snprintf(out, sizeof(out), AUTH_VERSION " hello %s\n", hex_n);
        r = send_line(fd, out);
        if (r >= 0)
                r = read_auth_line(fd, line);
        if (r < 0)
                return r == -EMSGSIZE ? -EPROTO : r;
        /* "ptc-serve/1 server NONCE_S MAC": anything else is no server of this protocol. */
        p = after_word(line, "server");
        if (!p || strlen(p) != 2 * NONCE_SIZE + 1 + 2 * MAC_SIZE || p[2 * NONCE_SIZE] != ' ' ||
            from_hex(p, ns, NONCE_SIZE) < 0 || from_hex(p + 2 * NONCE_SIZE + 1, got, MAC_SIZE) < 0)
                return -EPROTO;
        mac(key, AUTH_VERSION " server", nc, ns, want);
        if (!memeql_sec(want, got, MAC_SIZE))
                return -EKEYREJECTED;
        mac(key, AUTH_VERSION " client", ns, nc, got);
        to_hex(got, MAC_SIZE, hex_m);
        (void) snprintf(out, sizeof(out), AUTH_VERSION " client %s\n", hex_m);
        r = send_line(fd, out);
        explicit_wipe(want, sizeof(want));
        explicit_wipe(got, sizeof(got));
        if (r < 0)
                return r;
        /* The exchange that follows keeps its own deadlines. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none)) < 0)
                return -errno;
        return 0;
}

int cli_serve_auth_server(int fd, const uint8_t key[CLI_SERVE_KEY_SIZE], const char **ret_why)
{
        uint8_t nc[NONCE_SIZE], ns[NONCE_SIZE], want[MAC_SIZE], got[MAC_SIZE];
        char line[AUTH_LINE_MAX + 1], hex_n[2 * NONCE_SIZE + 1], hex_m[2 * MAC_SIZE + 1];
        char out[AUTH_LINE_MAX];
        const char *p;
        int r;

        *ret_why = "another user";
        r = check_peer_uid(fd);
        if (r < 0)
                return r;
        *ret_why = "the client did not prove it holds this server's key (a script, a process "
                   "started by one, or a ptc of another version; docs/sessions.md)";
        r = read_auth_line(fd, line);
        if (r < 0 && r != -EMSGSIZE)
                *ret_why = NULL; /* it said nothing, or left: no one to answer */
        if (r < 0)
                return r;
        p = after_word(line, "hello");
        if (!p || strlen(p) != 2 * NONCE_SIZE || from_hex(p, nc, NONCE_SIZE) < 0)
                return -EPROTO;
        r = nonce(ns);
        if (r < 0)
                return r;
        mac(key, AUTH_VERSION " server", nc, ns, got);
        to_hex(ns, NONCE_SIZE, hex_n);
        to_hex(got, MAC_SIZE, hex_m);
        (void) snprintf(out, sizeof(out), AUTH_VERSION " server %s %s\n", hex_n, hex_m);
        r = send_line(fd, out);
        if (r < 0)
                return r;
        r = read_auth_line(fd, line);
        if (r < 0 && r != -EMSGSIZE)
                *ret_why = NULL;
        if (r < 0)
                return r;
        p = after_word(line, "client");
        if (!p || strlen(p) != 2 * MAC_SIZE || from_hex(p, got, MAC_SIZE) < 0)
                return -EPROTO;
        mac(key, AUTH_VERSION " client", ns, nc, want);
        r = memeql_sec(want, got, MAC_SIZE) ? 0 : -EKEYREJECTED;
        explicit_wipe(want, sizeof(want));
        if (r >= 0)
                *ret_why = NULL;
        return r;
}
