/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the URL guards of web_extract: the secret guard (src/core/web/web-url.c)
 * and the SSRF guard (src/core/web/net-guard.c and its use before a fetch in web-fetch.c),
 * on a URL a script chose. The input is the URL (a NUL ends it). Checked:
 *  - the secret guard answers 0 or 1, and 1 for a URL with a password or a known secret;
 *  - the host the web module's curl helper reads has no brackets or upper case;
 *  - web_fetch_many() with the guard on refuses, before curl runs, every URL whose host is
 *    a literal address that an independent oracle (getaddrinfo(AI_NUMERICHOST) for IPv4 in
 *    every notation glibc reads, inet_pton() for IPv6, and the ranges written out below)
 *    calls loopback, private, link-local, metadata or otherwise never public, and every
 *    metadata host name; a URL it lets through ends as "timed out", never with a
 *    connection attempt (the deadline passed in is long gone, so nothing goes out);
 *  - net_guard_check() refuses what the oracle refuses, on the host's address and on the
 *    input's first bytes taken as a raw IPv4 and IPv6 address.
 *
 * The corpus (corpus/url/) replays under meson through fuzz-main.c; scripts/fuzz.sh url
 * fuzzes it for real.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "core/output/redact.h"
#include "core/web/net-guard.h"
#include "core/web/web-fetch.h"
#include "core/web/web-module.h"
#include "core/web/web-url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Made up, registered as a scrubbed variable's value would be. */
#define SECRET_VALUE "q8Zt3MadeUpValue77"
#define BLOCKED_TEXT "Blocked: URL targets a private or internal network address"
/* Longer URLs are refused by web_fetch_many() before the guard (WEB_FETCH_URL_MAX). */
#define FETCH_URL_MAX 16384

enum verdict {
        MAY_BE_PUBLIC, /* the oracle does not say; the guard decides */
        LOCAL,         /* loopback, private, link-local, CGNAT, ...: refused unless allowed */
        NEVER,         /* metadata, unspecified, multicast, broadcast: refused always */
};

#define V4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((c) << 8) | (d))

static bool in4(uint32_t a, uint32_t net, unsigned len)
{
        return len == 0 || (a >> (32 - len)) == (net >> (32 - len));
}

/* The oracle for IPv4 (host byte order), written from the RFCs, not from net-guard.c. */
static enum verdict oracle4(uint32_t a)
{
        if (a == V4(169, 254, 169, 254) || a == V4(169, 254, 170, 2) || a == V4(100, 100, 100, 200))
                return NEVER;
        if (in4(a, V4(0, 0, 0, 0), 8) || in4(a, V4(224, 0, 0, 0), 4) || in4(a, V4(240, 0, 0, 0), 4))
                return NEVER;
        if (in4(a, V4(127, 0, 0, 0), 8) || in4(a, V4(10, 0, 0, 0), 8) ||
            in4(a, V4(172, 16, 0, 0), 12) || in4(a, V4(192, 168, 0, 0), 16) ||
            in4(a, V4(169, 254, 0, 0), 16) || in4(a, V4(100, 64, 0, 0), 10))
                return LOCAL;
        return MAY_BE_PUBLIC;
}

static uint32_t be32(const uint8_t *p)
{
        return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

static enum verdict oracle6(const uint8_t *a)
{
        static const uint8_t zero[16] = {0};
        static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
        static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
        static const uint8_t ec2[16] = {0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02};

        if (memcmp(a, ec2, 16) == 0 || memcmp(a, zero, 16) == 0 || a[0] == 0xff)
                return NEVER;
        if (memcmp(a, zero, 15) == 0 && a[15] == 1)
                return LOCAL;
        /* IPv4-mapped, IPv4-compatible and NAT64: the packet goes to the IPv4 inside. */
        if (memcmp(a, mapped, 12) == 0 || memcmp(a, zero, 12) == 0 || memcmp(a, nat64, 12) == 0)
                return oracle4(be32(a + 12));
        if (a[0] == 0x20 && a[1] == 0x02) /* 6to4 */
                return oracle4(be32(a + 2));
        if ((a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80))
                return LOCAL; /* unique local, link-local */
        return MAY_BE_PUBLIC;
}

static void check_addr(const struct sockaddr *sa, socklen_t len, enum verdict v)
{
        if (v == LOCAL && net_guard_check(sa, len, false))
                abort();
        if (v == NEVER && (net_guard_check(sa, len, false) || net_guard_check(sa, len, true)))
                abort();
}

static void check_raw(const uint8_t *data, size_t size)
{
        struct sockaddr_in in = {.sin_family = AF_INET};
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};

        if (size >= 4) {
                memcpy(&in.sin_addr, data, 4);
                check_addr((const struct sockaddr *) &in, sizeof(in), oracle4(be32(data)));
                /* Too short for its family: never allowed. */
                if (net_guard_check((const struct sockaddr *) &in, sizeof(in) - 1, true))
                        abort();
        }
        if (size >= 16) {
                memcpy(&in6.sin6_addr, data, 16);
                check_addr((const struct sockaddr *) &in6, sizeof(in6), oracle6(data));
        }
}

/* The oracle's verdict on @host as a literal address, and the guard's on the same address. */
static enum verdict check_host_literal(const char *host)
{
        struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST}, *ai = NULL;
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
        enum verdict v = MAY_BE_PUBLIC;

        /* What glibc's resolver reads as IPv4 without DNS: "127.1", "0x7f.1", "017700000001". */
        if (getaddrinfo(host, NULL, &hints, &ai) == 0) {
                for (struct addrinfo *p = ai; p; p = p->ai_next) {
                        struct sockaddr_in in;
                        enum verdict w;

                        if (p->ai_family != AF_INET || p->ai_addrlen < sizeof(in))
                                continue;
                        memcpy(&in, p->ai_addr, sizeof(in));
                        w = oracle4(ntohl(in.sin_addr.s_addr));
                        check_addr((const struct sockaddr *) &in, sizeof(in), w);
                        v = MAX(v, w);
                }
                freeaddrinfo(ai);
        }
        if (inet_pton(AF_INET6, host, &in6.sin6_addr) == 1) {
                enum verdict w = oracle6(in6.sin6_addr.s6_addr);

                check_addr((const struct sockaddr *) &in6, sizeof(in6), w);
                v = MAX(v, w);
        }
        return v;
}

static struct redactor *secret_redactor(void)
{
        static struct redactor *r;

        /* Made once and kept for the process: the fuzzer calls in a loop. */
        if (!r && (redactor_new(&r) < 0 || redactor_add_secret(r, SECRET_VALUE) < 0))
                abort();
        return r;
}

static void check_secret(const struct web_module *m, const char *url)
{
        int k = web_url_has_secret(secret_redactor(), url);

        if (k != 0 && k != 1 && k != -ENOMEM)
                abort();
        if (k == 0 && (m->url_has_password(url) || strstr(url, SECRET_VALUE)))
                abort();
}

/* The host as url_host() promises it: no brackets, no ASCII upper case, not one trailing dot
 * ("a." is "a"; "a.." stays what it is, a name no resolver takes). */
static void check_host(const char *host)
{
        size_t n = strlen(host);

        for (const char *p = host; *p; p++)
                if ((*p >= 'A' && *p <= 'Z') || *p == '[' || *p == ']')
                        abort();
        if (n > 1 && host[n - 1] == '.' && host[n - 2] != '.')
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const struct web_module *m = web_module_get(NULL);
        _cleanup_free_ char *url = NULL, *host = NULL;
        struct web_request req = {.guard = true, .max_redirects = -1};
        struct web_response resp;
        enum verdict v = MAY_BE_PUBLIC;
        bool metadata = false;

        if (!m)
                abort(); /* linked in (web-module-builtin.c) */
        check_raw(data, size);
        url = strndup((const char *) data, size);
        if (!url)
                return 0;
        check_secret(m, url);

        host = m->url_host(url);
        if (host) {
                check_host(host);
                v = check_host_literal(host);
                metadata = net_guard_host_is_metadata(host);
        }
        if (strlen(url) > FETCH_URL_MAX)
                return 0;

        /*
         * A deadline long past: a request the guard lets through ends with "timed out" before
         * curl is given it, so no name is resolved and no packet sent.
         */
        req.url = url;
        if (web_fetch_many(&req, 1, &resp, 1, -1) < 0)
                return 0; /* -ENOMEM */
        if (!resp.error)
                abort();
        if (resp.blocked) {
                if (strcmp(resp.error, BLOCKED_TEXT) != 0)
                        abort();
        } else if (strncmp(resp.error, "timed out", 9) == 0) {
                /* An http(s) URL with a host: the guard had its say and let it through. */
                if (!host || v != MAY_BE_PUBLIC || metadata)
                        abort();
        } else if (strncmp(resp.error, "invalid URL", 11) != 0 &&
                   strncmp(resp.error, "unsupported URL scheme", 22) != 0)
                abort();
        web_response_release(&resp);
        return 0;
}
