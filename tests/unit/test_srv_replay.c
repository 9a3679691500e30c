/*
 * The replay cache: a repeated (client, id) finds the first reply; bounds
 * per client and in all; expiry of idle clients.
 */
#include <stdint.h>
#include <string.h>

#include "server/replay.h"
#include "tests/unit/check.h"

static void test_find_put(void)
{
	srv_replay r;
	CHECK(srv_replay_init(&r, 16));
	CHECK(srv_replay_find(&r, 7, 1, 0) == NULL);
	srv_replay_put(&r, 7, 1, "first", 5, 0);
	srv_replay_put(&r, 8, 1, "other", 5, 0);
	const srv_replay_entry *e = srv_replay_find(&r, 7, 1, 1);
	CHECK(e != NULL && e->len == 5 && memcmp(e->data, "first", 5) == 0);
	e = srv_replay_find(&r, 8, 1, 1);
	CHECK(e != NULL && memcmp(e->data, "other", 5) == 0);
	CHECK(srv_replay_find(&r, 7, 2, 1) == NULL);
	CHECK(r.clients == 2 && r.bytes == 10);
	srv_replay_free(&r);
}

static void test_per_client_bound(void)
{
	srv_replay r;
	CHECK(srv_replay_init(&r, 16));
	for (uint64_t id = 1; id <= SRV_REPLAY_PER_CLIENT + 10; id++)
		srv_replay_put(&r, 1, id, &id, sizeof id, 0);
	/* The oldest ten were replaced; the newest are all there. */
	for (uint64_t id = 1; id <= 10; id++)
		CHECK(srv_replay_find(&r, 1, id, 0) == NULL);
	for (uint64_t id = 11; id <= SRV_REPLAY_PER_CLIENT + 10; id++) {
		const srv_replay_entry *e = srv_replay_find(&r, 1, id, 0);
		CHECK(e != NULL && memcmp(e->data, &id, sizeof id) == 0);
	}
	CHECK(r.bytes == SRV_REPLAY_PER_CLIENT * sizeof(uint64_t));
	srv_replay_free(&r);
}

static void test_client_bound_and_expiry(void)
{
	srv_replay r;
	CHECK(srv_replay_init(&r, 4));
	for (uint64_t c = 1; c <= 4; c++)
		srv_replay_put(&r, c, 1, "x", 1, c * 100);
	/* A fifth client evicts the least recently seen (client 1). */
	srv_replay_put(&r, 5, 1, "y", 1, 500);
	CHECK(r.clients == 4);
	CHECK(srv_replay_find(&r, 1, 1, 600) == NULL);
	CHECK(srv_replay_find(&r, 2, 1, 600) != NULL); /* seen at 600 now */
	/* Clients 3, 4 and 5 were last seen at 300..500; with max age 250 at
	 * time 700 those at 300 and 400 go. */
	size_t n = srv_replay_expire(&r, 700, 250);
	CHECK(n == 2 && r.clients == 2);
	CHECK(srv_replay_find(&r, 5, 1, 700) != NULL);
	CHECK(srv_replay_find(&r, 3, 1, 700) == NULL);
	srv_replay_free(&r);
}

/* A short-lived client (one drape command, one DCC session) holds storage
 * for the replies it got, not a full ring: the cache of a busy box grows by
 * a few hundred bytes per client, not by kilobytes. */
static void test_ring_grows_with_replies(void)
{
	srv_replay r;
	CHECK(srv_replay_init(&r, 16));
	srv_replay_put(&r, 9, 1, "a", 1, 0);
	srv_replay_put(&r, 9, 2, "b", 1, 0);
	srv_replay_put(&r, 9, 3, "c", 1, 0);
	const srv_replay_client *c = r.buckets[0];
	for (size_t b = 0; c == NULL && b < r.nbuckets; b++)
		c = r.buckets[b];
	CHECK(c != NULL && c->count == 3);
	CHECKF(c->cap < 16, "a client with 3 replies has room for %u", (unsigned)c->cap);
	for (uint64_t id = 1; id <= 3; id++)
		CHECK(srv_replay_find(&r, 9, id, 0) != NULL);
	srv_replay_free(&r);
}

/* Reply bytes in all are bounded: past max_bytes the least recently seen
 * clients go, never the one just stored. */
static void test_byte_bound(void)
{
	srv_replay r;
	CHECK(srv_replay_init(&r, 1000));
	r.max_bytes = 1000;
	char reply[100];
	memset(reply, 'r', sizeof reply);
	for (uint64_t c = 1; c <= 50; c++)
		srv_replay_put(&r, c, 1, reply, sizeof reply, c);
	CHECKF(r.bytes <= 1000, "%zu bytes held", r.bytes);
	CHECK(r.clients == 10);
	CHECK(srv_replay_find(&r, 50, 1, 60) != NULL);
	CHECK(srv_replay_find(&r, 41, 1, 60) != NULL);
	CHECK(srv_replay_find(&r, 40, 1, 60) == NULL);
	/* One client bigger than the bound keeps its newest reply. */
	char big[2000];
	memset(big, 'b', sizeof big);
	srv_replay_put(&r, 99, 1, big, sizeof big, 70);
	CHECK(r.clients == 1 && srv_replay_find(&r, 99, 1, 70) != NULL);
	srv_replay_free(&r);
}

static const check_test tests[] = {
	CHECK_TEST(test_ring_grows_with_replies),
	CHECK_TEST(test_byte_bound),
	CHECK_TEST(test_find_put),
	CHECK_TEST(test_per_client_bound),
	CHECK_TEST(test_client_bound_and_expiry),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
