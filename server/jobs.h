/*
 * Jobs: requests whose work is too slow for the loop (session.create builds
 * a solver and checks the mesh; collider ops may build a distance field;
 * preflight checks a mesh). The loop admits the request, a libuv worker does
 * the work, and the loop finishes it and sends the reply on the request's
 * nng context, which waits meanwhile.
 *
 * A collider job owns its session's sim like a frame does (the session is
 * `busy`). If a frame is in flight when the op arrives, the job is parked on
 * the session and starts when the frame lands, so a running session takes
 * collider changes between two frames without the client retrying.
 */
#ifndef DRAPE_SRV_JOBS_H
#define DRAPE_SRV_JOBS_H

#include "proto/proto.h"
#include "server/server.h"

/*
 * Starts (or parks) the job for a decoded request. Takes *req (zeroed on
 * return, whatever happens). raw/raw_len stay valid until the reply is sent
 * (they are the nng message's body). On failure returns the error with err
 * filled and nothing started; the caller replies at once.
 */
drape_err srv_job_start(srv_server *srv, proto_request *req, const proto_header *head, const void *raw,
			size_t raw_len, srv_session *s, const srv_reply_key *key, void *reply_to, drape_error *err);

/* Starts a session's parked job (called by the scheduler when its frame
 * lands). Returns true if one was started. */
bool srv_job_unpark(srv_server *srv, srv_session *s);

/* Creates admitted and still being built for user `owner`; adds the
 * vertices they will hold to *vertices. */
size_t srv_jobs_creating_owner(const srv_server *srv, const char *owner, uint64_t *vertices);

/* Fails a parked job because its session is going away. */
void srv_job_drop_parked(srv_server *srv, srv_session *s, const char *why);

#endif
