/*
 * Connection admission: how many control connections are open, in all and
 * per peer, so that strangers cannot make the daemon hold memory before they
 * authenticate. nng reserves a whole request's announced size (up to
 * --max-message) as soon as its length header arrives, and authentication
 * is only checked once the request is complete; what bounds that memory is
 * max-connections x max-message (and per peer x max-message).
 *
 * A peer is one IP address (tcp://, tls+tcp://, ws://; the port is not part
 * of it) or one user id (ipc://, from the socket's peer credentials). The
 * table is pure bookkeeping; control.c feeds it from nng's pipe events
 * (NNG_PIPE_EV_ADD_PRE closes a pipe the table refuses, before the socket
 * reads anything from it). Thread-safe: pipe events run on nng threads.
 */
#ifndef DRAPE_SRV_CONNS_H
#define DRAPE_SRV_CONNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum srv_peer_kind {
	SRV_PEER_OTHER = 0, /* a transport without a peer identity (inproc): one peer */
	SRV_PEER_IPV4,
	SRV_PEER_IPV6,
	SRV_PEER_UID
} srv_peer_kind;

typedef struct srv_peer {
	uint8_t kind;     /* srv_peer_kind */
	uint8_t addr[16]; /* IPv4 in the first 4 bytes, network order; uid as 4 bytes little-endian */
} srv_peer;

typedef struct srv_conn {
	uint32_t pipe; /* nng pipe id */
	srv_peer peer;
} srv_conn;

typedef struct srv_conns {
	pthread_mutex_t mu;
	srv_conn *items; /* open connections, unordered */
	uint32_t count, cap;
	uint64_t max_total, max_per_peer; /* 0 = no limit */
	uint64_t refused;                 /* since start */
} srv_conns;

void srv_conns_init(srv_conns *t, uint64_t max_total, uint64_t max_per_peer);
void srv_conns_free(srv_conns *t);

/* Why a connection was refused. */
typedef enum srv_conns_rc {
	SRV_CONNS_OK = 0,
	SRV_CONNS_FULL,     /* max_total open already */
	SRV_CONNS_PEER_FULL /* max_per_peer open from this peer already */
} srv_conns_rc;

/* Records pipe as open from peer unless a limit is reached (or memory runs
 * out, which counts as FULL); refused pipes are not recorded. *refused
 * (may be NULL) receives the count of refusals so far. */
srv_conns_rc srv_conns_admit(srv_conns *t, uint32_t pipe, const srv_peer *peer, uint64_t *refused);

/* Forgets pipe (no-op for a pipe that was never admitted). */
void srv_conns_remove(srv_conns *t, uint32_t pipe);

/* Open connections, in all and from peer (NULL = in all only). */
uint32_t srv_conns_count(srv_conns *t, const srv_peer *peer);

/* "127.0.0.1", "[::1]", "uid 1000" or "local", for logs. */
void srv_peer_format(const srv_peer *p, char *out, size_t out_len);

/* Changes the limits (SIGHUP reload); connections already open stay, and
 * the new limits apply from the next one. */
void srv_conns_set_limits(srv_conns *t, uint64_t max_total, uint64_t max_per_peer);

#endif
