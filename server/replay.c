/*
 * Replay cache (see replay.h): a chained hash of clients, each with a ring
 * of its newest replies. Lookups scan one client's ring (at most
 * SRV_REPLAY_PER_CLIENT entries), which is cheaper than any per-request
 * index.
 */
#include "server/replay.h"

#include <stdlib.h>
#include <string.h>

bool srv_replay_init(srv_replay *r, size_t max_clients)
{
	memset(r, 0, sizeof *r);
	r->nbuckets = 1024;
	r->max_clients = max_clients ? max_clients : 4096;
	r->max_bytes = SRV_REPLAY_MAX_BYTES;
	r->buckets = calloc(r->nbuckets, sizeof *r->buckets);
	return r->buckets != NULL;
}

static void srv_replay_client_free(srv_replay *r, srv_replay_client *c)
{
	for (size_t i = 0; i < c->count; i++) {
		r->bytes -= c->entries[i].len;
		free(c->entries[i].data);
	}
	free(c->entries);
	free(c);
	r->clients--;
}

void srv_replay_free(srv_replay *r)
{
	if (r->buckets == NULL)
		return;
	for (size_t b = 0; b < r->nbuckets; b++) {
		srv_replay_client *c = r->buckets[b];
		while (c != NULL) {
			srv_replay_client *next = c->hnext;
			srv_replay_client_free(r, c);
			c = next;
		}
	}
	free(r->buckets);
	memset(r, 0, sizeof *r);
}

static size_t srv_replay_bucket(const srv_replay *r, uint64_t client)
{
	/* Client ids are random, but a hostile client could pick them; mixing
	 * costs nothing and spreads sequential ids. */
	uint64_t h = client * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) % r->nbuckets;
}

static srv_replay_client *srv_replay_lookup(srv_replay *r, uint64_t client)
{
	for (srv_replay_client *c = r->buckets[srv_replay_bucket(r, client)]; c != NULL; c = c->hnext)
		if (c->client == client)
			return c;
	return NULL;
}

const srv_replay_entry *srv_replay_find(srv_replay *r, uint64_t client, uint64_t id, uint64_t now_ms)
{
	srv_replay_client *c = srv_replay_lookup(r, client);
	if (c == NULL)
		return NULL;
	c->last_seen_ms = now_ms;
	for (size_t i = 0; i < c->count; i++)
		if (c->entries[i].data != NULL && c->entries[i].id == id)
			return &c->entries[i];
	return NULL;
}

/* Drops the least recently seen client other than keep (NULL = any) to
 * make room. */
static void srv_replay_evict_one(srv_replay *r, const srv_replay_client *keep)
{
	srv_replay_client **victim = NULL;
	for (size_t b = 0; b < r->nbuckets; b++)
		for (srv_replay_client **pc = &r->buckets[b]; *pc != NULL; pc = &(*pc)->hnext)
			if (*pc != keep && (victim == NULL || (*pc)->last_seen_ms < (*victim)->last_seen_ms))
				victim = pc;
	if (victim != NULL) {
		srv_replay_client *c = *victim;
		*victim = c->hnext;
		srv_replay_client_free(r, c);
	}
}

void srv_replay_put(srv_replay *r, uint64_t client, uint64_t id, const void *data, size_t len,
		    uint64_t now_ms)
{
	srv_replay_client *c = srv_replay_lookup(r, client);
	if (c == NULL) {
		if (r->clients >= r->max_clients)
			srv_replay_evict_one(r, NULL);
		c = calloc(1, sizeof *c);
		if (c == NULL)
			return;
		c->client = client;
		size_t b = srv_replay_bucket(r, client);
		c->hnext = r->buckets[b];
		r->buckets[b] = c;
		r->clients++;
	}
	c->last_seen_ms = now_ms;
	uint8_t *copy = malloc(len ? len : 1);
	if (copy == NULL)
		return;
	memcpy(copy, data, len);
	srv_replay_entry *e;
	if (c->count < SRV_REPLAY_PER_CLIENT) {
		if (c->count == c->cap) {
			uint32_t cap = c->cap ? 2 * c->cap : 4;
			if (cap > SRV_REPLAY_PER_CLIENT)
				cap = SRV_REPLAY_PER_CLIENT;
			srv_replay_entry *grown = realloc(c->entries, cap * sizeof *grown);
			if (grown == NULL) {
				free(copy);
				return;
			}
			c->entries = grown;
			c->cap = cap;
		}
		e = &c->entries[c->count++];
	} else {
		/* Full: entries[next] is the oldest. */
		e = &c->entries[c->next];
		r->bytes -= e->len;
		free(e->data);
		c->next = (c->next + 1) % SRV_REPLAY_PER_CLIENT;
	}
	e->id = id;
	e->data = copy;
	e->len = len;
	r->bytes += len;
	while (r->bytes > r->max_bytes && r->clients > 1)
		srv_replay_evict_one(r, c);
}

size_t srv_replay_expire(srv_replay *r, uint64_t now_ms, uint64_t max_age_ms)
{
	size_t n = 0;
	for (size_t b = 0; b < r->nbuckets; b++) {
		srv_replay_client **pc = &r->buckets[b];
		while (*pc != NULL) {
			srv_replay_client *c = *pc;
			if (now_ms - c->last_seen_ms > max_age_ms) {
				*pc = c->hnext;
				srv_replay_client_free(r, c);
				n++;
			} else {
				pc = &c->hnext;
			}
		}
	}
	return n;
}
