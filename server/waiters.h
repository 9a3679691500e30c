/*
 * Held frames.get requests: how frames reach their readers.
 *
 * A frames.get that carries wait_ms and asks for a frame not solved yet is
 * not answered at once while its session may still produce frames: the
 * request is parked here, holding its nng context, and answered as soon as
 * the frame is stored, the run ends, the session is deleted, or wait_ms has
 * passed. Each reader has passed the auth token and the session's owner
 * token like any request, so frames go to nobody else (PROTOCOL.md section
 * 9); the frame arrives one request round trip after it is stored, with
 * nothing polling meanwhile.
 *
 * Bounds: at most SRV_WAITERS_MAX requests are held at once, so the control
 * socket always keeps contexts for other requests (control.h); beyond that
 * a frames.get is answered at once (empty), and the client polls. Loop
 * thread only.
 */
#ifndef DRAPE_SRV_WAITERS_H
#define DRAPE_SRV_WAITERS_H

#include <stdbool.h>

#include "proto/proto.h"
#include "server/control.h"
#include "server/server.h"

/* Held frames.get requests at most: SRV_CONTEXTS less the contexts kept
 * free for every other request. */
#define SRV_WAITERS_MAX (SRV_CONTEXTS - SRV_CONTEXTS_FREE)

/* Whether more frames of s may come without another session.run: a run is
 * queued or going, or a frame or the run's end is still in flight. */
bool srv_session_live(const srv_session *s);

/* Sets up the timer that answers waits that time out. Returns 0 or a libuv
 * error. */
int srv_waiters_init(srv_server *srv);

/* Holds a frames.get (head, g) of session s whose reply goes to reply_to.
 * Returns false, holding nothing, when SRV_WAITERS_MAX are held or memory
 * is short: the caller answers at once. */
bool srv_waiters_park(srv_server *srv, const srv_session *s, const proto_header *head,
		      const proto_frames_get_req *g, void *reply_to);

/* Answers every held request of s that can be answered now: its frame is
 * stored, s is no longer live, or s is deleted (ENOTFOUND). Call after
 * anything that stores a frame or ends a run. */
void srv_waiters_wake(srv_server *srv, srv_session *s);

/* Answers every held request of session id with ENOTFOUND: it is being
 * deleted. */
void srv_waiters_drop_session(srv_server *srv, uint32_t id);

/* Shutdown: answers every held request (as if its wait had run out) and
 * closes the timer. Before the control socket closes. */
void srv_waiters_close(srv_server *srv);

/* Frees what is still held without answering (the control socket is
 * closed). */
void srv_waiters_free(srv_server *srv);

#endif
