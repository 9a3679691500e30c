/*
 * The optional open frame stream (--stream): one nng PUB socket listening on
 * every stream URL, for raw subscribers on a box where every user may read
 * every session (config.c refuses it with an auth token or a non-loopback
 * address; clients get their frames with frames.get, see waiters.h).
 * Messages are topic + msgpack (proto_stream_encode); a subscriber filters
 * by proto_stream_topic(session). PUB never blocks: a subscriber that does
 * not keep up loses messages (nng drops them when its queue is full) and
 * fetches what it missed with frames.get, so a slow reader costs the daemon
 * no memory beyond nng's per-pipe queue.
 */
#ifndef DRAPE_SRV_STREAM_H
#define DRAPE_SRV_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "server/config.h"

typedef struct srv_stream srv_stream;

/* Opens the PUB socket and its listeners; returns 0 or an nng error code,
 * with the failing URL in *bad_url. */
int srv_stream_open(const srv_config *cfg, srv_stream **out, const char **bad_url);
/* Publishes one encoded message (copied). Any thread. */
void srv_stream_publish(srv_stream *st, const void *data, size_t len);

/* An encoded message made ready for sending, so that the copy into nng's
 * message happens on the thread that made it (a frame's output stage), not
 * on the loop. NULL on out of memory. Any thread. */
typedef struct srv_stream_msg srv_stream_msg;
srv_stream_msg *srv_stream_msg_new(const void *data, size_t len);
/* Publishes m without copying it and frees it. Any thread. */
void srv_stream_send(srv_stream *st, srv_stream_msg *m);
/* Frees a message that will not be sent; NULL is a no-op. */
void srv_stream_msg_free(srv_stream_msg *m);
void srv_stream_close(srv_stream *st);

#endif
