/* Connection admission (conns.h): a small table under a mutex. */
#include "server/conns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_conns_init(srv_conns *t, uint64_t max_total, uint64_t max_per_peer)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_init(&t->mu, NULL);
	t->max_total = max_total;
	t->max_per_peer = max_per_peer;
}

void srv_conns_free(srv_conns *t)
{
	free(t->items);
	pthread_mutex_destroy(&t->mu);
	memset(t, 0, sizeof *t);
}

static bool srv_peer_eq(const srv_peer *a, const srv_peer *b)
{
	return a->kind == b->kind && memcmp(a->addr, b->addr, sizeof a->addr) == 0;
}

/* With the lock held. The table holds at most max_total entries, a few
 * hundred by default, so a scan costs less than the connection it guards. */
static uint32_t srv_conns_count_locked(const srv_conns *t, const srv_peer *peer)
{
	if (peer == NULL)
		return t->count;
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->count; i++)
		n += srv_peer_eq(&t->items[i].peer, peer);
	return n;
}

srv_conns_rc srv_conns_admit(srv_conns *t, uint32_t pipe, const srv_peer *peer, uint64_t *refused)
{
	srv_conns_rc rc = SRV_CONNS_OK;
	pthread_mutex_lock(&t->mu);
	if (t->max_total != 0 && t->count >= t->max_total) {
		rc = SRV_CONNS_FULL;
	} else if (t->max_per_peer != 0 && srv_conns_count_locked(t, peer) >= t->max_per_peer) {
		rc = SRV_CONNS_PEER_FULL;
	} else {
		if (t->count == t->cap) {
			uint32_t cap = t->cap ? 2 * t->cap : 64;
			srv_conn *items = realloc(t->items, (size_t)cap * sizeof *items);
			if (items == NULL) {
				rc = SRV_CONNS_FULL;
				goto out;
			}
			t->items = items;
			t->cap = cap;
		}
		t->items[t->count].pipe = pipe;
		t->items[t->count].peer = *peer;
		t->count++;
	}
out:
	if (rc != SRV_CONNS_OK)
		t->refused++;
	if (refused != NULL)
		*refused = t->refused;
	pthread_mutex_unlock(&t->mu);
	return rc;
}

void srv_conns_remove(srv_conns *t, uint32_t pipe)
{
	pthread_mutex_lock(&t->mu);
	for (uint32_t i = 0; i < t->count; i++) {
		if (t->items[i].pipe == pipe) {
			t->items[i] = t->items[--t->count];
			break;
		}
	}
	pthread_mutex_unlock(&t->mu);
}

uint32_t srv_conns_count(srv_conns *t, const srv_peer *peer)
{
	pthread_mutex_lock(&t->mu);
	uint32_t n = srv_conns_count_locked(t, peer);
	pthread_mutex_unlock(&t->mu);
	return n;
}

void srv_peer_format(const srv_peer *p, char *out, size_t out_len)
{
	const uint8_t *a = p->addr;
	switch (p->kind) {
	case SRV_PEER_IPV4:
		snprintf(out, out_len, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
		break;
	case SRV_PEER_IPV6: {
		size_t n = 0;
		n += (size_t)snprintf(out, out_len, "[");
		for (int i = 0; i < 16 && n < out_len; i += 2)
			n += (size_t)snprintf(out + n, out_len - n, "%s%x", i ? ":" : "", (unsigned)(a[i] << 8 | a[i + 1]));
		if (n < out_len)
			snprintf(out + n, out_len - n, "]");
		break;
	}
	case SRV_PEER_UID:
		snprintf(out, out_len, "uid %u",
			 (unsigned)((uint32_t)a[0] | (uint32_t)a[1] << 8 | (uint32_t)a[2] << 16 | (uint32_t)a[3] << 24));
		break;
	default:
		snprintf(out, out_len, "local");
		break;
	}
}

void srv_conns_set_limits(srv_conns *t, uint64_t max_total, uint64_t max_per_peer)
{
	pthread_mutex_lock(&t->mu);
	t->max_total = max_total;
	t->max_per_peer = max_per_peer;
	pthread_mutex_unlock(&t->mu);
}
