/*
 * PUB socket for the frame stream (see stream.h).
 */
#include "server/stream.h"

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"

struct srv_stream {
	nng_socket pub;
};

int srv_stream_open(const srv_config *cfg, srv_stream **out, const char **bad_url)
{
	srv_stream *st = calloc(1, sizeof *st);
	if (st == NULL)
		return NNG_ENOMEM;
	int rv = nng_pub0_open(&st->pub);
	if (rv != 0) {
		free(st);
		*bad_url = "(pub socket)";
		return rv;
	}
	for (size_t i = 0; i < cfg->stream_count; i++) {
		nng_listener l;
		rv = nng_listener_create(&l, st->pub, cfg->stream[i]);
		if (rv == 0 && cfg->stream[i][0] == 'i')
			rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, (int)cfg->ipc_mode);
		/* The stream of a tls+tcp:// control URL is tls+tcp:// too, with
		 * the same certificate (and the same client-certificate rule). */
		if (rv == 0 && srv_config_url_is_tls(cfg->stream[i]))
			rv = cfg->tls != NULL ? nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg->tls) : NNG_EINVAL;
		if (rv == 0)
			rv = nng_listener_start(l, 0);
		if (rv != 0) {
			*bad_url = cfg->stream[i];
			nng_close(st->pub);
			free(st);
			return rv;
		}
		srv_info("streaming frames on %s", cfg->stream[i]);
	}
	*out = st;
	return 0;
}

void srv_stream_publish(srv_stream *st, const void *data, size_t len)
{
	if (st == NULL)
		return;
	int rv = nng_send(st->pub, (void *)data, len, NNG_FLAG_NONBLOCK);
	if (rv != 0 && rv != NNG_EAGAIN)
		srv_warn("stream: publish failed: %s", nng_strerror(rv));
}

srv_stream_msg *srv_stream_msg_new(const void *data, size_t len)
{
	nng_msg *m;
	if (nng_msg_alloc(&m, len) != 0)
		return NULL;
	memcpy(nng_msg_body(m), data, len);
	return (srv_stream_msg *)m;
}

void srv_stream_send(srv_stream *st, srv_stream_msg *m)
{
	if (m == NULL)
		return;
	if (st == NULL) {
		srv_stream_msg_free(m);
		return;
	}
	/* On success nng owns the message; on failure it is still ours. */
	int rv = nng_sendmsg(st->pub, (nng_msg *)m, NNG_FLAG_NONBLOCK);
	if (rv != 0) {
		srv_stream_msg_free(m);
		if (rv != NNG_EAGAIN)
			srv_warn("stream: publish failed: %s", nng_strerror(rv));
	}
}

void srv_stream_msg_free(srv_stream_msg *m)
{
	if (m != NULL)
		nng_msg_free((nng_msg *)m);
}

void srv_stream_close(srv_stream *st)
{
	if (st == NULL)
		return;
	nng_close(st->pub);
	free(st);
}
