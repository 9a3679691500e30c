/*
 * Connection admission (server/conns.h): the total and per-peer limits,
 * that a closed connection frees its place, and that peers are told apart
 * by address or uid, not by port or pipe.
 */
#include <stdint.h>
#include <string.h>

#include "server/conns.h"
#include "tests/unit/check.h"

static srv_peer ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	srv_peer p;
	memset(&p, 0, sizeof p);
	p.kind = SRV_PEER_IPV4;
	p.addr[0] = a, p.addr[1] = b, p.addr[2] = c, p.addr[3] = d;
	return p;
}

static void test_per_peer_limit(void)
{
	srv_conns t;
	srv_conns_init(&t, 0, 3);
	srv_peer a = ipv4(127, 0, 0, 2), b = ipv4(127, 0, 0, 1);
	for (uint32_t i = 1; i <= 3; i++)
		CHECK(srv_conns_admit(&t, i, &a, NULL) == SRV_CONNS_OK);
	uint64_t refused = 0;
	CHECK(srv_conns_admit(&t, 4, &a, &refused) == SRV_CONNS_PEER_FULL && refused == 1);
	/* Another address is a different peer and still gets in. */
	CHECK(srv_conns_admit(&t, 5, &b, NULL) == SRV_CONNS_OK);
	CHECK(srv_conns_count(&t, &a) == 3 && srv_conns_count(&t, &b) == 1 && srv_conns_count(&t, NULL) == 4);
	/* A refused pipe was never recorded: removing it changes nothing. */
	srv_conns_remove(&t, 4);
	CHECK(srv_conns_count(&t, &a) == 3);
	/* Closing one of a's connections makes room for a again. */
	srv_conns_remove(&t, 2);
	CHECK(srv_conns_admit(&t, 6, &a, NULL) == SRV_CONNS_OK);
	CHECK(srv_conns_admit(&t, 7, &a, NULL) == SRV_CONNS_PEER_FULL);
	srv_conns_free(&t);
}

static void test_total_limit(void)
{
	srv_conns t;
	srv_conns_init(&t, 100, 0);
	for (uint32_t i = 0; i < 100; i++) {
		srv_peer p = ipv4(10, 0, (uint8_t)(i >> 8), (uint8_t)i);
		CHECK(srv_conns_admit(&t, i + 1, &p, NULL) == SRV_CONNS_OK);
	}
	srv_peer p = ipv4(10, 1, 0, 0);
	CHECK(srv_conns_admit(&t, 1000, &p, NULL) == SRV_CONNS_FULL);
	for (uint32_t i = 0; i < 100; i++)
		srv_conns_remove(&t, i + 1);
	CHECK(srv_conns_count(&t, NULL) == 0);
	CHECK(srv_conns_admit(&t, 1001, &p, NULL) == SRV_CONNS_OK);
	srv_conns_free(&t);
}

static void test_uid_and_ipv6_peers(void)
{
	srv_conns t;
	srv_conns_init(&t, 0, 1);
	srv_peer u1, u2, v6;
	memset(&u1, 0, sizeof u1);
	u1.kind = SRV_PEER_UID;
	u1.addr[0] = 0xe8, u1.addr[1] = 0x03; /* uid 1000 */
	u2 = u1;
	u2.addr[0] = 0xe9; /* uid 1001 */
	memset(&v6, 0, sizeof v6);
	v6.kind = SRV_PEER_IPV6;
	v6.addr[15] = 1; /* ::1 */
	CHECK(srv_conns_admit(&t, 1, &u1, NULL) == SRV_CONNS_OK);
	CHECK(srv_conns_admit(&t, 2, &u1, NULL) == SRV_CONNS_PEER_FULL);
	CHECK(srv_conns_admit(&t, 3, &u2, NULL) == SRV_CONNS_OK);
	CHECK(srv_conns_admit(&t, 4, &v6, NULL) == SRV_CONNS_OK);
	char s[64];
	srv_peer_format(&u1, s, sizeof s);
	CHECKF(strcmp(s, "uid 1000") == 0, "%s", s);
	srv_peer_format(&v6, s, sizeof s);
	CHECKF(strcmp(s, "[0:0:0:0:0:0:0:1]") == 0, "%s", s);
	srv_peer a = ipv4(127, 0, 0, 2);
	srv_peer_format(&a, s, sizeof s);
	CHECKF(strcmp(s, "127.0.0.2") == 0, "%s", s);
	srv_conns_free(&t);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_per_peer_limit),
		CHECK_TEST(test_total_limit),
		CHECK_TEST(test_uid_and_ipv6_peers),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
