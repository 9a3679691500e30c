/*
 * REP contexts feeding the loop (see control.h).
 */
#include "server/control.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/conns.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server.h"

typedef struct srv_ctx {
	struct srv_control *ctl;
	nng_ctx ctx;
	nng_aio *aio;
	bool sending;
	nng_msg *msg; /* received, waiting for the loop */
	uint64_t recv_ns; /* uv_hrtime when it arrived, for the request latency metric */
	struct srv_ctx *next;
} srv_ctx;

struct srv_control {
	struct srv_server *srv;
	nng_socket rep;
	srv_ctx ctxs[SRV_CONTEXTS];
	size_t nctx;
	pthread_mutex_t mu;
	srv_ctx *head, *tail; /* ready list, guarded by mu */
	uint32_t *gone;       /* ids of pipes that closed since the last drain, guarded by mu */
	size_t ngone, capgone;
	bool closing;         /* guarded by mu */
	uv_async_t async;
	srv_conns conns;      /* open connections, per peer (conns.h) */
	/* The tls+tcp:// listeners and their URLs, for a reload's new
	 * certificate. */
	nng_listener tls_listeners[SRV_MAX_URLS];
	const char *tls_urls[SRV_MAX_URLS];
	size_t ntls;
};

/* nng thread: a receive or a send finished on this context. */
static void srv_ctx_cb(void *arg)
{
	srv_ctx *c = arg;
	srv_control *ctl = c->ctl;
	const int rv = nng_aio_result(c->aio);
	if (c->sending) {
		c->sending = false;
		if (rv != 0) {
			/* A failed send leaves the message with us (usually the
			 * client went away; REQ resends to a live pipe). */
			nng_msg_free(nng_aio_get_msg(c->aio));
			if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
				return;
		}
		nng_ctx_recv(c->ctx, c->aio);
		return;
	}
	if (rv != 0) {
		if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
			return;
		nng_ctx_recv(c->ctx, c->aio);
		return;
	}
	nng_msg *m = nng_aio_get_msg(c->aio);
	c->recv_ns = uv_hrtime();
	srv_metrics_add(SRV_M_BYTES_IN, nng_msg_len(m));
	pthread_mutex_lock(&ctl->mu);
	if (ctl->closing) {
		pthread_mutex_unlock(&ctl->mu);
		nng_msg_free(m);
		return;
	}
	c->msg = m;
	c->next = NULL;
	if (ctl->tail != NULL)
		ctl->tail->next = c;
	else
		ctl->head = c;
	ctl->tail = c;
	pthread_mutex_unlock(&ctl->mu);
	uv_async_send(&ctl->async);
}

/* Who is at the other end of pipe p: its IP address, or over ipc its user
 * id; a transport that tells neither counts as one local peer. */
static void srv_pipe_peer(nng_pipe p, srv_peer *peer)
{
	memset(peer, 0, sizeof *peer);
	nng_sockaddr sa;
	if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
		return;
	if (sa.s_family == NNG_AF_INET) {
		peer->kind = SRV_PEER_IPV4;
		memcpy(peer->addr, &sa.s_in.sa_addr, 4);
	} else if (sa.s_family == NNG_AF_INET6) {
		peer->kind = SRV_PEER_IPV6;
		memcpy(peer->addr, sa.s_in6.sa_addr, 16);
	} else if (sa.s_family == NNG_AF_IPC) {
		uint64_t uid;
		if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) == 0) {
			peer->kind = SRV_PEER_UID;
			for (int i = 0; i < 4; i++)
				peer->addr[i] = (uint8_t)(uid >> (8 * i));
		}
	}
}

/* nng thread: a connection finished its SP handshake (ADD_PRE) or went away
 * (REM_POST). One over the limits is closed before the socket reads any
 * request from it; nng then reports nothing more for it. A removed one's
 * id goes to the loop, which marks the sessions it owned (orphans,
 * session.h); the wake-up is sent under mu, so srv_control_close, which
 * sets closing under mu before it closes the async handle, never races it. */
static void srv_pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	srv_control *ctl = arg;
	const uint32_t id = (uint32_t)nng_pipe_id(p);
	if (ev == NNG_PIPE_EV_REM_POST) {
		srv_conns_remove(&ctl->conns, id);
		pthread_mutex_lock(&ctl->mu);
		if (!ctl->closing) {
			if (ctl->ngone == ctl->capgone) {
				size_t cap = ctl->capgone ? ctl->capgone * 2 : 16;
				uint32_t *g = realloc(ctl->gone, cap * sizeof *g);
				if (g != NULL) {
					ctl->gone = g;
					ctl->capgone = cap;
				}
			}
			/* Out of memory drops the event: such a session then
			 * waits for the idle timeout instead. */
			if (ctl->ngone < ctl->capgone)
				ctl->gone[ctl->ngone++] = id;
			uv_async_send(&ctl->async);
		}
		pthread_mutex_unlock(&ctl->mu);
		return;
	}
	if (ev != NNG_PIPE_EV_ADD_PRE)
		return;
	srv_peer peer;
	srv_pipe_peer(p, &peer);
	uint64_t n = 0;
	const srv_conns_rc rc = srv_conns_admit(&ctl->conns, id, &peer, &n);
	srv_metrics_add(rc == SRV_CONNS_OK ? SRV_M_CONNECTIONS_OPENED : SRV_M_CONNECTIONS_REFUSED, 1);
	if (rc == SRV_CONNS_OK)
		return;
	nng_pipe_close(p);
	/* A flood would fill the log: the first refusal, then every 1024th. */
	if (n == 1 || n % 1024 == 0) {
		char who[64];
		srv_peer_format(&peer, who, sizeof who);
		srv_warn("control: connection from %s refused: %s (%llu refused so far)", who,
			 rc == SRV_CONNS_FULL ? "max_connections reached" : "max_connections_per_peer reached",
			 (unsigned long long)n);
	}
}

void srv_control_pipe_host(uint32_t pipe_id, char *out, size_t out_len)
{
	nng_pipe p = NNG_PIPE_INITIALIZER;
	p.id = pipe_id;
	srv_peer peer;
	if (pipe_id == 0) {
		snprintf(out, out_len, "local");
		return;
	}
	srv_pipe_peer(p, &peer);
	srv_peer_format(&peer, out, out_len);
}

bool srv_control_pipe_alive(uint32_t pipe_id)
{
	nng_pipe p = NNG_PIPE_INITIALIZER;
	p.id = pipe_id;
	nng_sockaddr sa;
	/* nng finds pipes by id; a removed one is ENOENT (or ECLOSED while
	 * the socket closes). Any other answer means it is there. */
	const int rv = nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa);
	return rv != NNG_ENOENT && rv != NNG_ECLOSED;
}

/* Loop: sends reply bytes on the context the request came on, or drops the
 * request when there are none (out of memory): the client resends. */
static void srv_ctx_send(srv_ctx *c, proto_buf *out)
{
	nng_msg *m = c->msg;
	c->msg = NULL;
	nng_msg_clear(m);
	if (out->data == NULL || nng_msg_append(m, out->data, out->len) != 0) {
		srv_error("control: cannot build a reply; the request is dropped");
		nng_msg_free(m);
		proto_buf_free(out);
		nng_ctx_recv(c->ctx, c->aio);
		return;
	}
	srv_metrics_add(SRV_M_BYTES_OUT, out->len);
	srv_metrics_observe(SRV_H_REQUEST, (double)(uv_hrtime() - c->recv_ns) / 1e9);
	proto_buf_free(out);
	nng_aio_set_msg(c->aio, m);
	c->sending = true;
	nng_ctx_send(c->ctx, c->aio);
}

void srv_control_reply(void *reply_to, proto_buf *out)
{
	srv_ctx_send(reply_to, out);
}

/* Loop: answers every ready request. */
static void srv_control_drain(uv_async_t *h)
{
	srv_control *ctl = h->data;
	pthread_mutex_lock(&ctl->mu);
	srv_ctx *c = ctl->head;
	ctl->head = ctl->tail = NULL;
	/* Taken together with the requests and handled after them: a
	 * connection's requests were received before its close, so a create
	 * it sent is a job (or a session) by the time its close is seen. */
	uint32_t *gone = ctl->gone;
	const size_t ngone = ctl->ngone;
	ctl->gone = NULL;
	ctl->ngone = ctl->capgone = 0;
	pthread_mutex_unlock(&ctl->mu);
	while (c != NULL) {
		srv_ctx *next = c->next;
		nng_msg *m = c->msg;
		proto_buf out = { NULL, 0 };
		/* The message stays in c->msg while a job works on it: its body
		 * is the raw request a create persists. */
		srv_reply_mode mode = srv_request_handle(ctl->srv, nng_msg_body(m), nng_msg_len(m),
							 (uint32_t)nng_pipe_id(nng_msg_get_pipe(m)), c, &out);
		if (mode == SRV_REPLY_NOW) {
			srv_ctx_send(c, &out);
		} else if (mode == SRV_REPLY_NONE) {
			c->msg = NULL;
			nng_msg_free(m);
			nng_ctx_recv(c->ctx, c->aio);
		}
		c = next;
	}
	for (size_t i = 0; i < ngone; i++)
		srv_sessions_pipe_closed(ctl->srv, gone[i]);
	free(gone);
}

int srv_control_open(struct srv_server *srv, uv_loop_t *loop, const srv_config *cfg, srv_control **out,
		     const char **bad_url)
{
	srv_control *ctl = calloc(1, sizeof *ctl);
	if (ctl == NULL)
		return NNG_ENOMEM;
	ctl->srv = srv;
	pthread_mutex_init(&ctl->mu, NULL);
	srv_conns_init(&ctl->conns, cfg->max_connections, cfg->max_connections_per_peer);
	*bad_url = "(rep socket)";
	int rv = nng_rep0_open(&ctl->rep);
	if (rv == 0)
		rv = nng_pipe_notify(ctl->rep, NNG_PIPE_EV_ADD_PRE, srv_pipe_cb, ctl);
	if (rv == 0)
		rv = nng_pipe_notify(ctl->rep, NNG_PIPE_EV_REM_POST, srv_pipe_cb, ctl);
	if (rv != 0) {
		if (nng_socket_id(ctl->rep) > 0)
			nng_close(ctl->rep);
		srv_conns_free(&ctl->conns);
		pthread_mutex_destroy(&ctl->mu);
		free(ctl);
		return rv;
	}
	/* Refuse oversized messages in the transport, before they are read
	 * into memory (the socket option is inherited by its listeners). */
	nng_socket_set_size(ctl->rep, NNG_OPT_RECVMAXSZ, (size_t)cfg->max_message);
	if (uv_async_init(loop, &ctl->async, srv_control_drain) != 0) {
		nng_close(ctl->rep);
		srv_conns_free(&ctl->conns);
		pthread_mutex_destroy(&ctl->mu);
		free(ctl);
		return NNG_ENOMEM;
	}
	ctl->async.data = ctl;
	for (size_t i = 0; i < cfg->listen_count; i++) {
		nng_listener l;
		const char *url = cfg->listen[i];
		rv = nng_listener_create(&l, ctl->rep, url);
		if (rv == 0)
			rv = nng_listener_set_size(l, NNG_OPT_RECVMAXSZ, (size_t)cfg->max_message);
		if (rv == 0 && url[0] == 'i')
			rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, (int)cfg->ipc_mode);
		/* srv_config_finish made sure a TLS URL has a certificate; a
		 * listener without one would fail every handshake, so a missing
		 * configuration is refused here too. */
		if (rv == 0 && srv_config_url_is_tls(url))
			rv = cfg->tls != NULL ? nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg->tls) : NNG_EINVAL;
		if (rv == 0)
			rv = nng_listener_start(l, 0);
		if (rv == 0 && srv_config_url_is_tls(url) && ctl->ntls < SRV_MAX_URLS) {
			ctl->tls_listeners[ctl->ntls] = l;
			ctl->tls_urls[ctl->ntls++] = url;
		}
		if (rv != 0) {
			*bad_url = url;
			srv_control_close(ctl);
			return rv;
		}
		srv_info("listening on %s", url);
	}
	for (size_t i = 0; i < SRV_CONTEXTS; i++) {
		srv_ctx *c = &ctl->ctxs[i];
		c->ctl = ctl;
		rv = nng_aio_alloc(&c->aio, srv_ctx_cb, c);
		if (rv == 0) {
			rv = nng_ctx_open(&c->ctx, ctl->rep);
			if (rv != 0) {
				nng_aio_free(c->aio);
				c->aio = NULL;
			}
		}
		if (rv != 0) {
			*bad_url = "(rep context)";
			srv_control_close(ctl);
			return rv;
		}
		ctl->nctx++;
	}
	for (size_t i = 0; i < ctl->nctx; i++)
		nng_ctx_recv(ctl->ctxs[i].ctx, ctl->ctxs[i].aio);
	*out = ctl;
	return 0;
}

static void srv_control_free_cb(uv_handle_t *h)
{
	srv_control *ctl = h->data;
	/* nng_close has returned, so no pipe callback is running. */
	srv_conns_free(&ctl->conns);
	pthread_mutex_destroy(&ctl->mu);
	free(ctl->gone);
	free(ctl);
}

nng_socket srv_control_socket(const srv_control *ctl)
{
	return ctl->rep;
}

void srv_control_close(srv_control *ctl)
{
	if (ctl == NULL)
		return;
	pthread_mutex_lock(&ctl->mu);
	ctl->closing = true;
	pthread_mutex_unlock(&ctl->mu);
	nng_close(ctl->rep);
	/* nng_aio_stop waits for a running callback, so after this loop no
	 * nng thread can touch ctl or the async handle. */
	for (size_t i = 0; i < ctl->nctx; i++) {
		nng_aio_stop(ctl->ctxs[i].aio);
		nng_aio_free(ctl->ctxs[i].aio);
		ctl->ctxs[i].aio = NULL;
	}
	for (srv_ctx *c = ctl->head; c != NULL; c = c->next) {
		nng_msg_free(c->msg);
		c->msg = NULL;
	}
	ctl->head = ctl->tail = NULL;
	/* The async handle is opened before anything can fail in
	 * srv_control_open, so it is always there to close. */
	uv_close((uv_handle_t *)&ctl->async, srv_control_free_cb);
}

void srv_control_set_conn_limits(srv_control *ctl, uint64_t max_total, uint64_t max_per_peer)
{
	if (ctl != NULL)
		srv_conns_set_limits(&ctl->conns, max_total, max_per_peer);
}

/*
 * nng (1.5.2) gives a TLS connection its configuration when the listener
 * posts its accept, before a client arrives: the accept already waiting
 * when the configuration changes would hand the next client the old
 * certificate. A plain TCP connection of our own, closed at once, takes that
 * accept (the kernel queues connections in order); its handshake fails and
 * nng drops it, and the listener's next accept carries the new
 * configuration.
 */
static void srv_control_tls_nudge(nng_listener l)
{
	nng_sockaddr sa;
	if (nng_listener_get_addr(l, NNG_OPT_LOCADDR, &sa) != 0)
		return;
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof ss);
	if (sa.s_family == NNG_AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		in->sin_family = AF_INET;
		in->sin_port = sa.s_in.sa_port;
		in->sin_addr.s_addr = sa.s_in.sa_addr != 0 ? sa.s_in.sa_addr : htonl(INADDR_LOOPBACK);
		len = sizeof *in;
	} else if (sa.s_family == NNG_AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = sa.s_in6.sa_port;
		memcpy(&in6->sin6_addr, sa.s_in6.sa_addr, 16);
		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			in6->sin6_addr = in6addr_loopback;
		len = sizeof *in6;
	} else {
		return;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* Loopback to a listening socket: connect completes from the backlog
	 * without waiting for the accept. */
	if (connect(fd, (struct sockaddr *)&ss, len) != 0)
		srv_debug("reload: TLS: could not reach our own listener to refresh its accept");
	close(fd);
}

int srv_control_set_tls(srv_control *ctl, struct nng_tls_config *tls, const char **bad_url)
{
	if (ctl == NULL || tls == NULL)
		return 0;
	/* Each listener takes its own reference on tls and drops the one it
	 * held on the old configuration. */
	for (size_t i = 0; i < ctl->ntls; i++) {
		int rv = nng_listener_set_ptr(ctl->tls_listeners[i], NNG_OPT_TLS_CONFIG, tls);
		if (rv != 0) {
			*bad_url = ctl->tls_urls[i];
			return rv;
		}
		srv_control_tls_nudge(ctl->tls_listeners[i]);
	}
	return 0;
}

size_t srv_control_connections(srv_control *ctl)
{
	if (ctl == NULL)
		return 0;
	pthread_mutex_lock(&ctl->conns.mu);
	const size_t n = ctl->conns.count;
	pthread_mutex_unlock(&ctl->conns.mu);
	return n;
}
