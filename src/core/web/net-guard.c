/* SPDX-License-Identifier: MIT */
#include "core/web/net-guard.h"

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "basic/macro.h"

/*
 * The policy lives here as two tables of prefixes, checked in order; the first
 * match decides. Metadata addresses come first because they sit inside ranges
 * that are merely private (169.254/16, 100.64/10, fc00::/7), and they must stay
 * refused when the caller allows private addresses.
 *
 * Why some ranges are "private" rather than "public": the documentation and
 * benchmark ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 198.18/15,
 * 2001:db8::/32, 3fff::/20) never route on the Internet, so a page pointing at
 * them is either broken or aimed at something local (benchmark labs use
 * 198.18/15 inside networks). 192.0.0.0/24 holds IETF protocol assignments
 * (DS-Lite, NAT64 discovery) that are local by nature. 192.88.99.0/24 is the
 * deprecated 6to4 relay anycast range.
 *
 * IPv6 space outside 2000::/3 is unassigned by IANA apart from the special
 * prefixes listed below, so anything else there is "forbidden": no public
 * server lives there, and a stack may route it somewhere surprising.
 */

struct prefix4 {
        uint32_t addr; /* host byte order */
        unsigned len;
        enum net_addr_class cls;
};

#define IP4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((c) << 8) | (d))

static const struct prefix4 v4_table[] = {
        /* Cloud metadata: AWS/GCP/Azure/OpenStack/Oracle, AWS ECS task
         * metadata, Alibaba Cloud. */
        {IP4(169, 254, 169, 254), 32, NET_ADDR_METADATA},
        {IP4(169, 254, 170, 2), 32, NET_ADDR_METADATA},
        {IP4(100, 100, 100, 200), 32, NET_ADDR_METADATA},

        {IP4(0, 0, 0, 0), 8, NET_ADDR_FORBIDDEN},   /* "this network", 0.0.0.0 */
        {IP4(224, 0, 0, 0), 4, NET_ADDR_FORBIDDEN}, /* multicast */
        {IP4(240, 0, 0, 0), 4, NET_ADDR_FORBIDDEN}, /* reserved + 255.255.255.255 */

        {IP4(10, 0, 0, 0), 8, NET_ADDR_PRIVATE},      /* RFC 1918 */
        {IP4(100, 64, 0, 0), 10, NET_ADDR_PRIVATE},   /* shared address space (CGNAT) */
        {IP4(127, 0, 0, 0), 8, NET_ADDR_PRIVATE},     /* loopback */
        {IP4(169, 254, 0, 0), 16, NET_ADDR_PRIVATE},  /* link-local */
        {IP4(172, 16, 0, 0), 12, NET_ADDR_PRIVATE},   /* RFC 1918 */
        {IP4(192, 0, 0, 0), 24, NET_ADDR_PRIVATE},    /* IETF protocol assignments */
        {IP4(192, 0, 2, 0), 24, NET_ADDR_PRIVATE},    /* TEST-NET-1 */
        {IP4(192, 88, 99, 0), 24, NET_ADDR_PRIVATE},  /* 6to4 relay anycast (deprecated) */
        {IP4(192, 168, 0, 0), 16, NET_ADDR_PRIVATE},  /* RFC 1918 */
        {IP4(198, 18, 0, 0), 15, NET_ADDR_PRIVATE},   /* benchmarking */
        {IP4(198, 51, 100, 0), 24, NET_ADDR_PRIVATE}, /* TEST-NET-2 */
        {IP4(203, 0, 113, 0), 24, NET_ADDR_PRIVATE},  /* TEST-NET-3 */
};

static enum net_addr_class classify4(uint32_t a)
{
        for (size_t i = 0; i < ELEMENTSOF(v4_table); i++) {
                const struct prefix4 *p = &v4_table[i];
                uint32_t mask = p->len == 0 ? 0 : ~(uint32_t) 0 << (32 - p->len);

                if ((a & mask) == p->addr)
                        return p->cls;
        }
        return NET_ADDR_PUBLIC;
}

struct prefix6 {
        uint8_t addr[16];
        unsigned len;
        enum net_addr_class cls;
};

static const struct prefix6 v6_table[] = {
        /* AWS metadata over IPv6 (Nitro instances). */
        {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, NET_ADDR_METADATA},

        {{[15] = 0x00}, 128, NET_ADDR_FORBIDDEN},                     /* :: */
        {{[15] = 0x01}, 128, NET_ADDR_PRIVATE},                       /* ::1 */
        {{0x01, 0x00}, 64, NET_ADDR_FORBIDDEN},                       /* 100::/64 discard-only */
        {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, NET_ADDR_PRIVATE}, /* local-use NAT64 */
        /* Teredo (2001::/32): the IPv4 inside is obfuscated and the peer is
         * reached through a relay; nothing public needs it. */
        {{0x20, 0x01, 0x00, 0x00}, 32, NET_ADDR_PRIVATE},
        {{0x20, 0x01, 0x0d, 0xb8}, 32, NET_ADDR_PRIVATE}, /* documentation */
        {{0x3f, 0xff}, 20, NET_ADDR_PRIVATE},             /* documentation (RFC 9637) */
        {{0xfc}, 7, NET_ADDR_PRIVATE},                    /* unique local */
        {{0xfe, 0x80}, 10, NET_ADDR_PRIVATE},             /* link-local */
        {{0xfe, 0xc0}, 10, NET_ADDR_PRIVATE},             /* site-local (deprecated) */
        {{0xff}, 8, NET_ADDR_FORBIDDEN},                  /* multicast */
};

static bool prefix6_match(const uint8_t *a, const struct prefix6 *p)
{
        unsigned full = p->len / 8, rest = p->len % 8;

        if (memcmp(a, p->addr, full) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t) (0xff << (8 - rest));
        return (a[full] & mask) == (p->addr[full] & mask);
}

static uint32_t be32_at(const uint8_t *p)
{
        return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3];
}

static enum net_addr_class classify6(const uint8_t *a)
{
        static const uint8_t zero[12] = {0};
        static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
        static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};

        /* The exact ones first (fd00:ec2::254, ::, ::1), then the forms that
         * carry an IPv4 address: the kernel (mapped), a tunnel (compatible,
         * 6to4) or a translator (NAT64) delivers the packet to that IPv4
         * address, so the IPv4 policy is the one that applies. */
        for (size_t i = 0; i < 3; i++)
                if (prefix6_match(a, &v6_table[i]))
                        return v6_table[i].cls;

        if (memcmp(a, mapped, 12) == 0 || memcmp(a, zero, 12) == 0 || memcmp(a, nat64, 12) == 0)
                return classify4(be32_at(a + 12));
        if (a[0] == 0x20 && a[1] == 0x02)
                return classify4(be32_at(a + 2));

        for (size_t i = 3; i < ELEMENTSOF(v6_table); i++)
                if (prefix6_match(a, &v6_table[i]))
                        return v6_table[i].cls;

        if ((a[0] & 0xe0) != 0x20) /* outside 2000::/3, global unicast */
                return NET_ADDR_FORBIDDEN;
        return NET_ADDR_PUBLIC;
}

enum net_addr_class net_addr_classify(const struct sockaddr *sa, socklen_t len)
{
        if (!sa || len < (socklen_t) sizeof(sa_family_t))
                return NET_ADDR_FORBIDDEN;

        if (sa->sa_family == AF_INET) {
                struct sockaddr_in in;

                if (len < (socklen_t) sizeof(in))
                        return NET_ADDR_FORBIDDEN;
                memcpy(&in, sa, sizeof(in)); /* @sa may be unaligned */
                return classify4(ntohl(in.sin_addr.s_addr));
        }
        if (sa->sa_family == AF_INET6) {
                struct sockaddr_in6 in6;

                if (len < (socklen_t) sizeof(in6))
                        return NET_ADDR_FORBIDDEN;
                memcpy(&in6, sa, sizeof(in6));
                return classify6(in6.sin6_addr.s6_addr);
        }
        /* AF_UNIX and friends: never a web server. */
        return NET_ADDR_FORBIDDEN;
}

bool net_guard_check(const struct sockaddr *sa, socklen_t len, bool allow_private)
{
        switch (net_addr_classify(sa, len)) {
        case NET_ADDR_PUBLIC:
                return true;
        case NET_ADDR_PRIVATE:
                return allow_private;
        case NET_ADDR_METADATA:
        case NET_ADDR_FORBIDDEN:
                break;
        }
        return false;
}

/*
 * Names of metadata services that resolve only inside the cloud:
 *   metadata.google.internal, metadata.goog, metadata  (GCP; "metadata" via the
 *                                                        search domain)
 *   instance-data, instance-data.ec2.internal          (AWS)
 *   metadata.tencentyun.com                            (Tencent Cloud, 169.254.0.23,
 *                                                        an address that is only
 *                                                        "private" by itself)
 * They are refused by name so that allow_private (which admits 169.254/16)
 * cannot reach them through a resolver that maps them elsewhere. Hosts are
 * matched case-insensitively, with or without one trailing dot (net_guard_host_len()).
 */
static const char *const metadata_hosts[] = {
        "metadata.google.internal",   "metadata.goog",           "metadata", "instance-data",
        "instance-data.ec2.internal", "metadata.tencentyun.com",
};

size_t net_guard_host_len(const char *host)
{
        size_t n = strlen(host);

        if (n > 1 && host[n - 1] == '.' && host[n - 2] != '.')
                n--;
        return n;
}

bool net_guard_host_is_metadata(const char *host)
{
        size_t n;

        if (!host)
                return false;
        n = net_guard_host_len(host);
        for (size_t i = 0; i < ELEMENTSOF(metadata_hosts); i++)
                if (strlen(metadata_hosts[i]) == n && strncasecmp(host, metadata_hosts[i], n) == 0)
                        return true;
        return false;
}
