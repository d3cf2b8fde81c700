/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The SSRF guard's address policy (docs/contracts.md 9.13).
 *
 * Classes, IPv4 and IPv6 (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96
 * and 6to4 2002::/16 addresses are judged by the IPv4 address inside):
 *  - metadata: cloud metadata endpoints (169.254.169.254, 169.254.170.2,
 *    100.100.100.200, fd00:ec2::254) — refused always;
 *  - unspecified, multicast, broadcast, reserved (0.0.0.0/8, 224.0.0.0/4,
 *    240.0.0.0/4, ::, ff00::/8) — refused always;
 *  - loopback (127/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7),
 *    link-local (169.254/16, fe80::/10), shared CGNAT (100.64/10), and the
 *    benchmark/documentation ranges — refused unless allow_private;
 *  - everything else: public, allowed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum net_addr_class {
        NET_ADDR_PUBLIC,
        NET_ADDR_PRIVATE,   /* loopback, RFC 1918, ULA, link-local, CGNAT, ... */
        NET_ADDR_METADATA,  /* cloud metadata endpoints */
        NET_ADDR_FORBIDDEN, /* unspecified, multicast, broadcast, reserved, non-IP */
};

enum net_addr_class net_addr_classify(const struct sockaddr *sa, socklen_t len);

/* True when a connection to @sa may be made under the policy above. */
bool net_guard_check(const struct sockaddr *sa, socklen_t len, bool allow_private);

/* Host names that are refused before any lookup (metadata.google.internal, ...). */
bool net_guard_host_is_metadata(const char *host);

/*
 * The length of @host without its one trailing dot ("localhost." names "localhost", as the
 * resolver reads it), the one spelling the guard and the policy compare. Only a dot after a
 * label is dropped: "a.." and "." are no names a resolver takes, and stay as they are.
 */
size_t net_guard_host_len(const char *host);
