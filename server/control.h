/*
 * The control socket: one nng REP socket listening on every --listen URL,
 * served through SRV_CONTEXTS nng contexts so that many clients' requests
 * are in progress at once.
 *
 * Threads: a context's aio callback runs on an nng thread. It only moves the
 * received message into a mutex-protected ready list and wakes the loop with
 * uv_async_send; the loop decodes, handles and encodes, then sends the reply
 * on the same context (nng_ctx_send) and that context receives again. No
 * session state is touched off the loop.
 */
#ifndef DRAPE_SRV_CONTROL_H
#define DRAPE_SRV_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <nng/nng.h>
#include <uv.h>

#include "proto/proto.h"
#include "server/config.h"

/* Contexts receiving requests. A frames.get that waits for its frame holds
 * its context (waiters.h), so there are many more than requests in flight
 * at once usually need; SRV_CONTEXTS_FREE of them are never held by a
 * waiting frames.get, so other requests are always received. */
#define SRV_CONTEXTS 256
#define SRV_CONTEXTS_FREE 32

struct srv_server;
typedef struct srv_control srv_control;

/* Opens the REP socket and its listeners (receive maximum = max_message,
 * ipc permissions = ipc_mode) and starts every context receiving. Returns 0
 * or an nng error code with the failing URL in *bad_url. */
int srv_control_open(struct srv_server *srv, uv_loop_t *loop, const srv_config *cfg, srv_control **out,
		     const char **bad_url);

/* Loop: sends the reply to a request answered later (SRV_REPLY_LATER);
 * reply_to is what srv_request_handle was given. Takes out->data. */
void srv_control_reply(void *reply_to, proto_buf *out);

/* Loop: false once the connection with this nng pipe id has closed. */
bool srv_control_pipe_alive(uint32_t pipe_id);

/* Closes the socket (in-flight replies are dropped; clients retry), waits
 * for every callback to finish, and closes the async handle. Loop thread. */
void srv_control_close(srv_control *ctl);

/* "127.0.0.1", "uid 1000", ... of the peer at the other end of pipe
 * pipe_id, for the session's host (any thread). */
void srv_control_pipe_host(uint32_t pipe_id, char *out, size_t out_len);
/* Loop: the SIGHUP reload's new limits (conns.h) and TLS configuration: each
 * tls+tcp:// listener presents tls from its next handshake on (connections
 * already open keep theirs). Returns 0 or the nng error of the first
 * listener that refused, with its URL in *bad_url. */
void srv_control_set_conn_limits(srv_control *ctl, uint64_t max_total, uint64_t max_per_peer);
int srv_control_set_tls(srv_control *ctl, struct nng_tls_config *tls, const char **bad_url);

/* Any thread: control connections open now. */
size_t srv_control_connections(srv_control *ctl);
/* The control REP socket, for more listeners (server/web.c's WebSocket). */
nng_socket srv_control_socket(const srv_control *ctl);

#endif
