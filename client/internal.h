/*
 * Internals of libdrape shared by client.c (connection, requests, session
 * ops) and frames.c (frames.get and drape_next_frame). Not installed.
 */
#ifndef DRAPE_CLIENT_INTERNAL_H
#define DRAPE_CLIENT_INTERNAL_H

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "drape/drape.h"
#include "proto/proto.h"

/*
 * The client's view of one session it receives frames of. `queue` holds
 * frames with consecutive indices starting at `cursor` (the next frame to
 * hand out), from frames.get; any later frame is known only through
 * known_done and fetched when its turn comes.
 */
typedef struct client_track {
	uint32_t id;
	uint32_t cursor;       /* next index drape_next_frame returns */
	uint32_t known_done;   /* highest frame index known to be solved */
	uint8_t token[PROTO_TOKEN_SIZE]; /* the session's owner token, for frames.get */
	bool need_status;      /* ask the server before waiting for frames */
	bool ended;            /* the last call reported the end of a run */
	bool end_seen;         /* a frames.get said no frame is coming (live false) since the last end reported */
	bool saw_active;       /* this client saw the run going */
	bool polling;          /* poll (use_stream false, or a daemon that does not hold frames.get) */
	drape_frame *queue;    /* ring of queue_cap frames */
	uint32_t queue_head, queue_len, queue_cap;
	size_t vertex_bytes;   /* size of one frame's positions, once one was seen */
} client_track;

struct drape_client {
	nng_socket req;
	char *url;
	char *auth;
	size_t auth_len;
	char *client_name;
	drape_client_opts opts;
	uint64_t client_id;  /* random per instance: the server's replay-cache key */
	uint64_t next_id;    /* request ids, starting at a random value */
	drape_server_info info;
	char *stream_urls[PROTO_MAX_STREAM_URLS];
	uint32_t stream_url_count;
	client_track *tracks;
	uint32_t track_count, track_cap;
	/* TLS configuration of the REQ dialer; NULL for a plain URL. */
	nng_tls_config *tls;
	/* Following across a restart (frames.c): when the server was first
	 * found unreachable since it last answered (0 = it answers), and the
	 * reconnect attempts since. */
	int64_t lost_since_ms;
	uint32_t lost_tries;
};

/* True for URLs whose transport runs over TLS (tls+tcp://, wss://). */
bool client_url_is_tls(const char *url);

/*
 * Sends *req (the header fields id, client and auth are filled here) and
 * waits for the reply to op req->op. On success *rep is the decoded reply
 * with rep->ok true (free with proto_reply_free). A reply with ok false is
 * turned into its error code and message, and *rep is left empty.
 */
drape_err client_call(drape_client *c, proto_request *req, proto_reply *rep, drape_error *err);

/* Says hello again (after a reconnect): refreshes the server's info. */
drape_err client_hello(drape_client *c, drape_error *err);
/* A comma-separated list of URLs: a pool of servers (pool.c). */
bool client_url_is_pool(const char *url);
/* drape_connect for a pool: connects to its least-loaded box (pool.c). */
drape_err client_pool_connect(const char *urls, const drape_client_opts *opts, drape_client **out,
			      drape_error *err);

/* Maps an nng error of `what` to a drape_err and message. */
drape_err client_nng_error(int rv, const char *what, drape_error *err);

/* Frees every frame and subscription of session id kept by frames.c. */
void client_track_forget(drape_client *c, uint32_t id);
/* Frees every track (drape_close). */
void client_tracks_free(drape_client *c);

/* Milliseconds of a monotonic clock. */
int64_t client_now_ms(void);

#endif
