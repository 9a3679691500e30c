/*
 * The replay cache: nng's REQ socket resends a request whose reply it has
 * not seen (after its resend time, or on reconnect), and a client may retry
 * after a timeout. A request carrying the same (client id, request id) as
 * one already answered gets the first reply's bytes again instead of acting
 * twice.
 *
 * Bounded: the newest SRV_REPLAY_PER_CLIENT replies per client, at most
 * max_clients clients and max_bytes of reply bytes in all (the least
 * recently seen client is dropped first), and clients unseen for the expiry
 * time are forgotten by the cron. A client's ring grows with its replies,
 * so the many short-lived clients of a busy box (each drape command, each
 * DCC reconnect) hold a few hundred bytes each, not a full ring. Loop
 * thread only.
 */
#ifndef DRAPE_SRV_REPLAY_H
#define DRAPE_SRV_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_REPLAY_PER_CLIENT 256
#define SRV_REPLAY_MAX_BYTES (16u * 1024u * 1024u)

typedef struct srv_replay_entry {
	uint64_t id;
	uint8_t *data; /* NULL = empty slot */
	size_t len;
} srv_replay_entry;

typedef struct srv_replay_client {
	uint64_t client;
	uint64_t last_seen_ms;
	uint32_t next; /* ring position of the next insert once the ring is full */
	uint32_t count, cap; /* entries used and allocated (cap <= SRV_REPLAY_PER_CLIENT) */
	srv_replay_entry *entries;
	struct srv_replay_client *hnext; /* hash chain */
} srv_replay_client;

typedef struct srv_replay {
	srv_replay_client **buckets;
	size_t nbuckets;
	size_t clients;
	size_t max_clients;
	size_t bytes;     /* reply bytes held */
	size_t max_bytes; /* SRV_REPLAY_MAX_BYTES after init */
} srv_replay;

bool srv_replay_init(srv_replay *r, size_t max_clients);
void srv_replay_free(srv_replay *r);

/* The stored reply for (client, id), or NULL. Marks the client seen. */
const srv_replay_entry *srv_replay_find(srv_replay *r, uint64_t client, uint64_t id, uint64_t now_ms);

/* Stores a copy of reply bytes for (client, id), replacing the client's
 * oldest entry when its ring is full, then drops the least recently seen
 * other clients while more than max_bytes are held. Out of memory only
 * skips caching. */
void srv_replay_put(srv_replay *r, uint64_t client, uint64_t id, const void *data, size_t len,
		    uint64_t now_ms);

/* Forgets clients not seen since now_ms - max_age_ms. Returns how many. */
size_t srv_replay_expire(srv_replay *r, uint64_t now_ms, uint64_t max_age_ms);

#endif
