/*
 * Internals of libdrape shared by client.c (connection, requests, session
 * ops) and frames.c (the frame stream and drape_next_frame). Not installed.
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
 * hand out), from the stream or from frames.get; any later frame is known
 * only through known_done and fetched when its turn comes.
 */
typedef struct client_track {
	uint32_t id;
	uint32_t cursor;       /* next index drape_next_frame returns */
	uint32_t known_done;   /* highest frame index known to be solved */
	bool subscribed;       /* the stream subscription is in place */
	bool need_status;      /* ask the server before waiting on the stream */
	bool ended;            /* the last call reported the end of a run */
	bool end_seen;         /* an end message came on the stream since the last end reported */
	bool saw_active;       /* this client saw the run going (so an end message will come) */
	drape_frame *queue;    /* ring of queue_cap frames */
	uint32_t queue_head, queue_len, queue_cap;
	size_t vertex_bytes;   /* size of one frame's positions, once one was seen */
} client_track;

/* The frame stream's SUB socket, shared by the clients of the process that
 * dial the same stream (stream.c), and one client's place in it. */
typedef struct client_stream client_stream;
typedef struct client_stream_member client_stream_member;

struct drape_client {
	nng_socket req;
	/* This client's place on the shared stream socket once frames were
	 * asked for; NULL before, or when frames come only by polling. */
	client_stream_member *stream;
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
	/* TLS configuration of the REQ dialer, reused by the SUB dialer when
	 * the stream URL is TLS too; NULL for a plain URL. */
	nng_tls_config *tls;
	/* What, besides the URL, decides whether two clients may share a
	 * stream connection: the TLS files and server name; NULL for a
	 * plain URL. */
	char *tls_id;
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

/* Maps an nng error of `what` to a drape_err and message. */
drape_err client_nng_error(int rv, const char *what, drape_error *err);

/* Frees every frame and subscription of session id kept by frames.c. */
void client_track_forget(drape_client *c, uint32_t id);
/* Frees every track (drape_close). */
void client_tracks_free(drape_client *c);

/*
 * Joins the process's stream connection to url (dialing it if this is the
 * first client to want it); tls is the client's TLS configuration (held by
 * the connection while it lasts) and tls_id its identity, see tls_id above.
 * NULL if no connection could be set up: frames then come by polling.
 */
client_stream_member *client_stream_join(const char *url, nng_tls_config *tls, const char *tls_id,
					 size_t max_message);
/* Adds or drops the member's subscription to a session's frames; false if
 * out of memory (the frames then come by polling). */
bool client_stream_subscribe(client_stream_member *m, uint32_t session, bool on);
/* The next stream message for one of the member's sessions, waiting up to
 * wait_ms; NULL if none came. The caller frees it with nng_msg_free. */
nng_msg *client_stream_recv(client_stream_member *m, int32_t wait_ms);
/* Leaves the stream connection (NULL is ignored); the last member to leave
 * closes it. */
void client_stream_leave(client_stream_member *m);

/* Milliseconds of a monotonic clock. */
int64_t client_now_ms(void);

#endif
