/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "basic/macro.h"
#include "core/web/net-guard.h"

struct addr_case {
        const char *addr;
        enum net_addr_class cls;
};

#define PUB NET_ADDR_PUBLIC
#define PRIV NET_ADDR_PRIVATE
#define META NET_ADDR_METADATA
#define FORB NET_ADDR_FORBIDDEN

static const struct addr_case v4_cases[] = {
        {"8.8.8.8", PUB},          {"1.1.1.1", PUB},          {"93.184.216.34", PUB},
        {"0.0.0.0", FORB},         {"0.255.255.255", FORB},   {"1.0.0.0", PUB},
        {"9.255.255.255", PUB},    {"10.0.0.0", PRIV},        {"10.255.255.255", PRIV},
        {"11.0.0.0", PUB},         {"100.63.255.255", PUB},   {"100.64.0.0", PRIV},
        {"100.127.255.255", PRIV}, {"100.128.0.0", PUB},      {"100.100.100.200", META},
        {"100.100.100.201", PRIV}, {"126.255.255.255", PUB},  {"127.0.0.1", PRIV},
        {"127.255.255.254", PRIV}, {"128.0.0.0", PUB},        {"169.253.255.255", PUB},
        {"169.254.0.1", PRIV},     {"169.254.169.254", META}, {"169.254.169.253", PRIV},
        {"169.254.170.2", META},   {"169.254.170.3", PRIV},   {"169.255.0.0", PUB},
        {"172.15.255.255", PUB},   {"172.16.0.0", PRIV},      {"172.31.255.255", PRIV},
        {"172.32.0.0", PUB},       {"192.0.0.1", PRIV},       {"192.0.1.1", PUB},
        {"192.0.2.1", PRIV},       {"192.0.3.1", PUB},        {"192.88.99.1", PRIV},
        {"192.167.255.255", PUB},  {"192.168.0.1", PRIV},     {"192.168.255.255", PRIV},
        {"192.169.0.0", PUB},      {"198.17.255.255", PUB},   {"198.18.0.0", PRIV},
        {"198.19.255.255", PRIV},  {"198.20.0.0", PUB},       {"198.51.100.7", PRIV},
        {"198.51.101.7", PUB},     {"203.0.113.9", PRIV},     {"203.0.114.9", PUB},
        {"223.255.255.255", PUB},  {"224.0.0.1", FORB},       {"239.255.255.255", FORB},
        {"240.0.0.1", FORB},       {"255.255.255.255", FORB},
};

static const struct addr_case v6_cases[] = {
        {"2606:4700:4700::1111", PUB},
        {"2001:4860:4860::8888", PUB},
        {"::", FORB},
        {"::1", PRIV},
        {"::2", FORB}, /* v4-compatible 0.0.0.2 */
        /* IPv4-mapped */
        {"::ffff:8.8.8.8", PUB},
        {"::ffff:127.0.0.1", PRIV},
        {"::ffff:10.1.2.3", PRIV},
        {"::ffff:169.254.169.254", META},
        {"::ffff:100.100.100.200", META},
        {"::ffff:0.0.0.0", FORB},
        {"::ffff:224.0.0.1", FORB},
        {"::ffff:255.255.255.255", FORB},
        /* IPv4-compatible (deprecated) */
        {"::8.8.8.8", PUB},
        {"::127.0.0.1", PRIV},
        {"::169.254.169.254", META},
        {"::192.168.1.1", PRIV},
        /* NAT64 well-known prefix */
        {"64:ff9b::8.8.8.8", PUB},
        {"64:ff9b::7f00:1", PRIV},
        {"64:ff9b::a9fe:a9fe", META},
        {"64:ff9b::c0a8:101", PRIV},
        {"64:ff9b:1::1", PRIV}, /* local-use NAT64 */
        /* 6to4 */
        {"2002:0808:0808::1", PUB},
        {"2002:7f00:0001::", PRIV},
        {"2002:a9fe:a9fe::1", META},
        {"2002:c0a8:0101:1::1", PRIV},
        {"2002:e000:0001::1", FORB},
        /* ranges */
        {"fc00::1", PRIV},
        {"fd12:3456::1", PRIV},
        {"fd00:ec2::254", META},
        {"fd00:ec2::253", PRIV},
        {"fe80::1", PRIV},
        {"febf:ffff::1", PRIV},
        {"fec0::1", PRIV},
        {"feff::1", PRIV},
        {"ff02::1", FORB},
        {"ff05::1:3", FORB},
        {"2001:db8::1", PRIV},
        {"2001:0:4136:e378::1", PRIV}, /* Teredo */
        {"3fff::1", PRIV},
        {"100::1", FORB},
        {"1000::1", FORB}, /* outside 2000::/3 */
        {"4000::1", FORB},
        {"3ffe::1", PUB},
        {"2a00:1450:4001::200e", PUB},
};

static enum net_addr_class classify_str(const char *s)
{
        struct sockaddr_in in = {.sin_family = AF_INET};
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};

        if (inet_pton(AF_INET, s, &in.sin_addr) == 1)
                return net_addr_classify((struct sockaddr *) &in, sizeof(in));
        assert_int_equal(inet_pton(AF_INET6, s, &in6.sin6_addr), 1);
        return net_addr_classify((struct sockaddr *) &in6, sizeof(in6));
}

static void check_table(const struct addr_case *cases, size_t n)
{
        int bad = 0;

        for (size_t i = 0; i < n; i++) {
                enum net_addr_class got = classify_str(cases[i].addr);

                if (got != cases[i].cls) {
                        print_error("%s: expected class %d, got %d\n", cases[i].addr,
                                    (int) cases[i].cls, (int) got);
                        bad++;
                }
        }
        assert_int_equal(bad, 0);
}

static void test_net_addr_classify_v4_table(void **state)
{
        check_table(v4_cases, ELEMENTSOF(v4_cases));
}

static void test_net_addr_classify_v6_table(void **state)
{
        check_table(v6_cases, ELEMENTSOF(v6_cases));
}

static void test_net_addr_classify_bad_input(void **state)
{
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x08080808)};
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
        struct sockaddr_un un = {.sun_family = AF_UNIX, .sun_path = "/tmp/x"};

        assert_int_equal(net_addr_classify(NULL, 0), NET_ADDR_FORBIDDEN);
        assert_int_equal(net_addr_classify((struct sockaddr *) &in, sizeof(in)), NET_ADDR_PUBLIC);
        /* a short length is never trusted */
        assert_int_equal(net_addr_classify((struct sockaddr *) &in, sizeof(in) - 1),
                         NET_ADDR_FORBIDDEN);
        assert_int_equal(inet_pton(AF_INET6, "2606:4700::1", &in6.sin6_addr), 1);
        assert_int_equal(net_addr_classify((struct sockaddr *) &in6, sizeof(in6)), NET_ADDR_PUBLIC);
        assert_int_equal(net_addr_classify((struct sockaddr *) &in6, sizeof(struct sockaddr_in)),
                         NET_ADDR_FORBIDDEN);
        assert_int_equal(net_addr_classify((struct sockaddr *) &un, sizeof(un)),
                         NET_ADDR_FORBIDDEN);
}

static bool check_str(const char *s, bool allow_private)
{
        struct sockaddr_in in = {.sin_family = AF_INET};
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};

        if (inet_pton(AF_INET, s, &in.sin_addr) == 1)
                return net_guard_check((struct sockaddr *) &in, sizeof(in), allow_private);
        assert_int_equal(inet_pton(AF_INET6, s, &in6.sin6_addr), 1);
        return net_guard_check((struct sockaddr *) &in6, sizeof(in6), allow_private);
}

static void test_net_guard_check_policy(void **state)
{
        /* public: always */
        assert_true(check_str("8.8.8.8", false));
        assert_true(check_str("8.8.8.8", true));
        assert_true(check_str("2606:4700:4700::1111", false));
        /* private: only with allow_private */
        assert_false(check_str("127.0.0.1", false));
        assert_true(check_str("127.0.0.1", true));
        assert_false(check_str("::1", false));
        assert_true(check_str("::1", true));
        assert_false(check_str("::ffff:192.168.1.1", false));
        assert_true(check_str("::ffff:192.168.1.1", true));
        assert_false(check_str("fd12::1", false));
        assert_true(check_str("fd12::1", true));
        /* metadata and forbidden: never */
        assert_false(check_str("169.254.169.254", true));
        assert_false(check_str("169.254.170.2", true));
        assert_false(check_str("100.100.100.200", true));
        assert_false(check_str("fd00:ec2::254", true));
        assert_false(check_str("::ffff:169.254.169.254", true));
        assert_false(check_str("64:ff9b::a9fe:a9fe", true));
        assert_false(check_str("2002:a9fe:a9fe::", true));
        assert_false(check_str("0.0.0.0", true));
        assert_false(check_str("::", true));
        assert_false(check_str("224.0.0.1", true));
        assert_false(check_str("ff02::1", true));
        assert_false(check_str("255.255.255.255", true));
        assert_false(net_guard_check(NULL, 0, true));
}

static void test_net_guard_host_is_metadata_names(void **state)
{
        static const char *const yes[] = {
                "metadata.google.internal",
                "METADATA.Google.Internal",
                "metadata.google.internal.",
                "metadata.goog",
                "metadata",
                "Metadata.",
                "instance-data",
                "instance-data.ec2.internal",
                "INSTANCE-DATA.EC2.INTERNAL.",
                "metadata.tencentyun.com",
        };
        static const char *const no[] = {
                "",
                ".",
                "example.com",
                "metadata.google.internal.evil.com",
                "xmetadata",
                "metadata..",
                "my-metadata.goog",
                "metadata.google",
                "instance-data.ec2",
                "169.254.169.254", /* addresses are the socket check's job */
        };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (!net_guard_host_is_metadata(yes[i]))
                        fail_msg("'%s' should be a metadata host", yes[i]);
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (net_guard_host_is_metadata(no[i]))
                        fail_msg("'%s' should not be a metadata host", no[i]);
        assert_false(net_guard_host_is_metadata(NULL));
}

static void test_net_guard_host_len_drops_one_dot_after_a_label(void **state)
{
        static const struct {
                const char *host;
                size_t len;
        } cases[] = {
                {"localhost.", 9}, {"localhost", 9}, {"127.0.0.1.", 9}, {"a.", 1},
                {"a..", 3},        {".", 1},         {"", 0},           {"..", 2},
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (net_guard_host_len(cases[i].host) != cases[i].len)
                        fail_msg("net_guard_host_len(\"%s\") is %zu, not %zu", cases[i].host,
                                 net_guard_host_len(cases[i].host), cases[i].len);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_net_addr_classify_v4_table),
                cmocka_unit_test(test_net_addr_classify_v6_table),
                cmocka_unit_test(test_net_addr_classify_bad_input),
                cmocka_unit_test(test_net_guard_check_policy),
                cmocka_unit_test(test_net_guard_host_is_metadata_names),
                cmocka_unit_test(test_net_guard_host_len_drops_one_dot_after_a_label),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
