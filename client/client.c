/*
 * libdrape: the connection, the request/reply path and the session,
 * collider and server operations. Each public operation builds one
 * proto_request, sends it on the REQ socket and converts the reply into the
 * public structs of drape.h; the codec (proto/) does all encoding and
 * validation of what comes back.
 */
#include "client/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <nng/protocol/reqrep0/req.h>

/* Default largest reply: frames.get replies carry many frames, so replies
 * may be far larger than the requests the server accepts. */
#define CLIENT_DEFAULT_MAX_MESSAGE (256ull * 1024 * 1024)

int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void drape_client_opts_default(drape_client_opts *opts)
{
	memset(opts, 0, sizeof *opts);
	opts->request_timeout_ms = 10000;
	opts->build_timeout_ms = 300000;
	opts->poll_interval_ms = 200;
	opts->max_message = CLIENT_DEFAULT_MAX_MESSAGE;
	opts->use_stream = true;
	opts->reconnect_timeout_ms = 120000;
}

drape_err client_nng_error(int rv, const char *what, drape_error *err)
{
	drape_err code;
	switch (rv) {
	case NNG_ETIMEDOUT:
		code = DRAPE_ETIMEDOUT;
		break;
	case NNG_ECONNREFUSED:
	case NNG_ENOENT:
	case NNG_EUNREACHABLE:
	case NNG_ECONNRESET:
	case NNG_ECONNSHUT:
	case NNG_ECONNABORTED:
	case NNG_EPEERAUTH:
	case NNG_ECRYPTO: /* a TLS handshake that failed: no trusted server here */
		code = DRAPE_EUNAVAILABLE;
		break;
	case NNG_EPERM:
		code = DRAPE_EPERM;
		break;
	case NNG_ENOMEM:
		code = DRAPE_ENOMEM;
		break;
	case NNG_ECLOSED:
		code = DRAPE_ECLOSED;
		break;
	case NNG_EADDRINVAL:
	case NNG_ENOTSUP:
	case NNG_EINVAL:
		code = DRAPE_EINVAL;
		break;
	case NNG_EMSGSIZE:
		code = DRAPE_ETOOLARGE;
		break;
	default:
		code = DRAPE_EIO;
		break;
	}
	return drape_error_setf(err, code, "%s: %s", what, nng_strerror(rv));
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d != NULL)
		memcpy(d, s, n);
	return d;
}

static uint64_t random_u64(void)
{
	uint64_t v = 0;
	/* getrandom on a small buffer does not fail short once the pool is
	 * initialised; the clock is a fallback so ids still differ. */
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		v = (uint64_t)client_now_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&v;
	return v;
}

/* ---- TLS -------------------------------------------------------------------- */

static void url_host(const char *url, const char **host, size_t *len);

bool client_url_is_tls(const char *url)
{
	return strncmp(url, "tls+", 4) == 0 || strncmp(url, "wss", 3) == 0;
}

/* Reads a whole PEM file as a string (nng takes PEM as strings); NULL with
 * errno set on failure. */
static char *read_pem(const char *path)
{
	enum { MAX_PEM = 1 << 20 };
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = malloc(MAX_PEM + 1);
	size_t n = buf != NULL ? fread(buf, 1, MAX_PEM + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (buf == NULL || bad || n > MAX_PEM) {
		free(buf);
		errno = buf == NULL ? ENOMEM : bad ? EIO : EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * Builds the client TLS configuration for url from o: the CA that must have
 * signed the server's certificate, the name it must carry, and an optional
 * client certificate. Every problem names the option and file at fault.
 */
static drape_err tls_make(const drape_client_opts *o, const char *url, nng_tls_config **out,
			  drape_error *err)
{
	if ((o->tls_cert_file == NULL) != (o->tls_key_file == NULL))
		return drape_error_setf(err, DRAPE_EINVAL, "%s is set without %s",
					o->tls_cert_file != NULL ? "tls_cert_file" : "tls_key_file",
					o->tls_cert_file != NULL ? "tls_key_file" : "tls_cert_file");
	nng_tls_config *t;
	int rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_CLIENT);
	if (rv != 0)
		return client_nng_error(rv, "connect: TLS", err);
	drape_err rc = DRAPE_OK;
	char *cert = NULL, *key = NULL;
	/* Verification is never switched off: a client that does not check
	 * the server's certificate would hand the auth token to anyone in the
	 * middle. */
	rv = nng_tls_config_auth_mode(t, NNG_TLS_AUTH_MODE_REQUIRED);
	if (rv != 0) {
		rc = client_nng_error(rv, "connect: TLS", err);
		goto out;
	}
	if (o->tls_ca_file != NULL) {
		char *ca = read_pem(o->tls_ca_file);
		if (ca == NULL) {
			rc = drape_error_setf(err, DRAPE_EINVAL, "tls_ca_file %s: %s", o->tls_ca_file,
					      strerror(errno));
			goto out;
		}
		rv = nng_tls_config_ca_chain(t, ca, NULL);
		free(ca);
		if (rv != 0) {
			rc = drape_error_setf(err, DRAPE_EINVAL,
					      "tls_ca_file %s: not PEM CA certificates (%s)",
					      o->tls_ca_file, nng_strerror(rv));
			goto out;
		}
	}
	/* The name checked against the certificate: the URL's host unless the
	 * caller names another (a certificate issued for a DNS name reached
	 * through an address, for example). nng's TLS engine (mbedtls 2.28 on
	 * Debian 12) matches only DNS names and the common name, never IP
	 * address entries, so for an address the name is left unchecked and
	 * only the CA signature is verified. */
	char name[256] = "";
	if (o->tls_server_name != NULL) {
		snprintf(name, sizeof name, "%s", o->tls_server_name);
	} else {
		const char *h;
		size_t n;
		url_host(url, &h, &n);
		if (n >= 2 && h[0] == '[') {
			h++;
			n -= 2;
		}
		char host[256];
		snprintf(host, sizeof host, "%.*s", (int)n, h);
		unsigned char addr[16];
		if (inet_pton(AF_INET, host, addr) != 1 && inet_pton(AF_INET6, host, addr) != 1)
			snprintf(name, sizeof name, "%s", host);
	}
	if (name[0] != '\0') {
		rv = nng_tls_config_server_name(t, name);
		if (rv != 0) {
			rc = client_nng_error(rv, "connect: TLS server name", err);
			goto out;
		}
	}
	if (o->tls_cert_file != NULL) {
		cert = read_pem(o->tls_cert_file);
		if (cert == NULL) {
			rc = drape_error_setf(err, DRAPE_EINVAL, "tls_cert_file %s: %s", o->tls_cert_file,
					      strerror(errno));
			goto out;
		}
		key = read_pem(o->tls_key_file);
		if (key == NULL) {
			rc = drape_error_setf(err, DRAPE_EINVAL, "tls_key_file %s: %s", o->tls_key_file,
					      strerror(errno));
			goto out;
		}
		rv = nng_tls_config_own_cert(t, cert, key, NULL);
		if (rv != 0) {
			rc = drape_error_setf(err, DRAPE_EINVAL,
					      "tls_cert_file %s / tls_key_file %s: not a PEM certificate "
					      "and its unencrypted private key (%s)",
					      o->tls_cert_file, o->tls_key_file, nng_strerror(rv));
			goto out;
		}
	}
out:
	if (key != NULL) {
		/* The key is secret: do not leave it in freed heap memory. */
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	if (rc != DRAPE_OK) {
		nng_tls_config_free(t);
		return rc;
	}
	*out = t;
	return DRAPE_OK;
}

/* ---- Request path ---------------------------------------------------------- */

drape_err client_call(drape_client *c, proto_request *req, proto_reply *rep, drape_error *err)
{
	req->id = c->next_id++;
	req->has_client = true;
	req->client = c->client_id;
	if (c->auth != NULL) {
		req->auth = (const uint8_t *)c->auth;
		req->auth_len = c->auth_len;
	}
	const char *op = proto_op_name(req->op);
	proto_buf buf = {0};
	drape_err rc = proto_request_encode(req, &buf, err);
	if (rc != DRAPE_OK)
		return rc;
	/* Requests that build something on the server wait longer. */
	int32_t wait = c->opts.request_timeout_ms;
	switch (req->op) {
	case PROTO_OP_SESSION_CREATE:
	case PROTO_OP_SESSION_RESUME:
	case PROTO_OP_COLLIDER_ADD:
	case PROTO_OP_COLLIDER_UPDATE:
	case PROTO_OP_COLLIDER_FRAMES:
	case PROTO_OP_PREFLIGHT:
		wait = c->opts.build_timeout_ms;
		break;
	case PROTO_OP_FRAMES_GET:
		/* The server may hold it that long before it answers. */
		wait += (int32_t)req->u.frames_get.wait_ms;
		break;
	default:
		break;
	}
	nng_socket_set_ms(c->req, NNG_OPT_RECVTIMEO, wait);
	int rv = nng_send(c->req, buf.data, buf.len, 0);
	proto_buf_free(&buf);
	if (rv != 0)
		return client_nng_error(rv, op, err);

	void *data = NULL;
	size_t len = 0;
	rv = nng_recv(c->req, &data, &len, NNG_FLAG_ALLOC);
	if (rv != 0) {
		if (rv == NNG_ETIMEDOUT)
			return drape_error_setf(err, DRAPE_ETIMEDOUT,
						"%s: no reply from %s within %d ms", op, c->url, (int)wait);
		return client_nng_error(rv, op, err);
	}
	/* The server answered: it is reachable (frames.c, reconnects). */
	c->lost_since_ms = 0;
	c->lost_tries = 0;
	proto_reply r;
	rc = proto_reply_decode(data, len, (size_t)c->opts.max_message, req->op, &r, err);
	nng_free(data, len);
	if (rc != DRAPE_OK)
		return rc;
	if (r.has_id && r.id != req->id) {
		proto_reply_free(&r);
		return drape_error_setf(err, DRAPE_EPROTO, "%s: reply id %llu does not match request %llu",
					op, (unsigned long long)r.id, (unsigned long long)req->id);
	}
	if (!r.ok) {
		drape_err code = r.error.code != DRAPE_OK ? r.error.code : DRAPE_EINTERNAL;
		/* The server's message already names the field; it is passed on as
		 * it is so callers can show it to the user. */
		if (err != NULL) {
			err->code = code;
			snprintf(err->message, sizeof err->message, "%s", r.error.message);
		}
		proto_reply_free(&r);
		return code;
	}
	*rep = r;
	return DRAPE_OK;
}

/* A request whose reply carries nothing but ok: the outcome is the result. */
static drape_err call_ack(drape_client *c, proto_request *req, drape_error *err)
{
	proto_reply rep;
	drape_err rc = client_call(c, req, &rep, err);
	if (rc == DRAPE_OK)
		proto_reply_free(&rep);
	return rc;
}

/* Fills the session and token fields of a request for session s. */
static void set_session(proto_request *req, drape_session s)
{
	static const uint8_t zero[DRAPE_TOKEN_SIZE];
	req->has_session = true;
	req->session = s.id;
	if (memcmp(s.token, zero, sizeof zero) != 0) {
		req->has_token = true;
		memcpy(req->token, s.token, PROTO_TOKEN_SIZE);
	}
}

/* ---- Connecting ------------------------------------------------------------- */

/* Length of the "scheme://" prefix of url, 0 if it has none. */
static size_t scheme_len(const char *url)
{
	const char *p = strstr(url, "://");
	return p == NULL ? 0 : (size_t)(p - url) + 3;
}

/* The host part of a tcp-like URL: start and length (brackets kept). */
static void url_host(const char *url, const char **host, size_t *len)
{
	const char *h = url + scheme_len(url);
	const char *end;
	if (*h == '[') {
		end = strchr(h, ']');
		end = end != NULL ? end + 1 : h + strlen(h);
	} else {
		end = strrchr(h, ':');
		if (end == NULL)
			end = h + strlen(h);
	}
	*host = h;
	*len = (size_t)(end - h);
}

static bool is_wildcard(const char *h, size_t n)
{
	return n == 0 || (n == 1 && h[0] == '*') || (n == 7 && memcmp(h, "0.0.0.0", 7) == 0) ||
	       (n == 4 && memcmp(h, "[::]", 4) == 0);
}

/*
 * Picks the stream URL to show (drape_server_info; libdrape itself gets
 * frames with frames.get) from the ones hello announced, one per
 * listener of a daemon started with --stream, since the client does not
 * know which listener it reached: the
 * same scheme and host as the control URL first, then the same scheme. A
 * wildcard listen address is replaced by the control URL's host, since the
 * client reached the server there.
 */
static void choose_stream_url(drape_client *c)
{
	const size_t sl = scheme_len(c->url);
	int best = -1, best_score = -1;
	for (uint32_t i = 0; i < c->stream_url_count; i++) {
		const char *u = c->stream_urls[i];
		int score = 0;
		if (sl > 0 && strncmp(u, c->url, sl) == 0) {
			score = 1;
			const char *h1, *h2;
			size_t n1, n2;
			url_host(u, &h1, &n1);
			url_host(c->url, &h2, &n2);
			if (n1 == n2 && memcmp(h1, h2, n1) == 0)
				score = 2;
		}
		if (score > best_score) {
			best = (int)i;
			best_score = score;
		}
	}
	c->info.stream_url[0] = '\0';
	if (best < 0)
		return;
	const char *u = c->stream_urls[best];
	const char *h;
	size_t n;
	url_host(u, &h, &n);
	bool tcp_like = strncmp(u, "tcp", 3) == 0 || strncmp(u, "ws", 2) == 0 ||
			strncmp(u, "tls+tcp", 7) == 0;
	if (tcp_like && is_wildcard(h, n) && best_score >= 1) {
		const char *ch;
		size_t cn;
		url_host(c->url, &ch, &cn);
		snprintf(c->info.stream_url, sizeof c->info.stream_url, "%.*s%.*s%s", (int)(h - u), u,
			 (int)cn, ch, h + n);
	} else {
		snprintf(c->info.stream_url, sizeof c->info.stream_url, "%s", u);
	}
}

static void free_stream_urls(drape_client *c)
{
	for (uint32_t i = 0; i < c->stream_url_count; i++)
		free(c->stream_urls[i]);
	c->stream_url_count = 0;
}

drape_err client_hello(drape_client *c, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_HELLO);
	req.u.hello.client = c->client_name;
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_hello_rep *h = &rep.u.hello;
	if (h->version != PROTO_VERSION) {
		proto_reply_free(&rep);
		return drape_error_setf(err, DRAPE_EVERSION,
					"hello: server speaks protocol %u, libdrape speaks %d",
					(unsigned)h->version, PROTO_VERSION);
	}
	free_stream_urls(c);
	for (uint32_t i = 0; i < h->stream_url_count && i < PROTO_MAX_STREAM_URLS; i++) {
		c->stream_urls[i] = dup_str(h->stream_urls[i]);
		if (c->stream_urls[i] == NULL) {
			free_stream_urls(c);
			proto_reply_free(&rep);
			return drape_error_setf(err, DRAPE_ENOMEM, "hello: out of memory");
		}
		c->stream_url_count = i + 1;
	}
	c->info.version = h->version;
	snprintf(c->info.server, sizeof c->info.server, "%s", h->server ? h->server : "");
	c->info.auth_required = h->auth_required;
	const proto_limits *l = &h->limits;
	c->info.limits = (drape_server_limits){
		.max_message = l->max_message,
		.max_vertices = l->max_vertices,
		.max_triangles = l->max_triangles,
		.max_colliders = l->max_colliders,
		.max_voxels = l->max_voxels,
		.max_keyframes = l->max_keyframes,
		.max_sessions = l->max_sessions,
		.max_sessions_per_client = l->max_sessions_per_client,
		.max_frames_retained = l->max_frames_retained,
		.max_frames_per_get = l->max_frames_per_get,
		.max_session_memory = l->max_session_memory,
		.idle_timeout_s = l->idle_timeout_s,
		.max_memory = l->max_memory,
		.max_connections = l->max_connections,
		.max_connections_per_peer = l->max_connections_per_peer,
		.max_anim_frames = l->max_anim_frames,
		.max_anim_bytes = l->max_anim_bytes,
	};
	proto_reply_free(&rep);
	choose_stream_url(c);
	return DRAPE_OK;
}

static void client_free(drape_client *c)
{
	client_tracks_free(c);
	free_stream_urls(c);
	free(c->url);
	free(c->auth);
	free(c->client_name);
	if (c->tls != NULL)
		nng_tls_config_free(c->tls);
	free(c);
}

drape_err drape_connect(const char *url, const drape_client_opts *opts, drape_client **out,
			drape_error *err)
{
	drape_client_opts o;
	if (opts != NULL)
		o = *opts;
	else
		drape_client_opts_default(&o);
	if (url == NULL || url[0] == '\0') {
		const char *env = getenv("DRAPE_SERVER");
		url = env != NULL && env[0] != '\0' ? env : DRAPE_DEFAULT_URL;
	}
	if (client_url_is_pool(url))
		return client_pool_connect(url, opts, out, err);
	if (o.request_timeout_ms <= 0)
		o.request_timeout_ms = 10000;
	if (o.build_timeout_ms <= 0)
		o.build_timeout_ms = 300000;
	if (o.build_timeout_ms < o.request_timeout_ms)
		o.build_timeout_ms = o.request_timeout_ms;
	if (o.poll_interval_ms <= 0)
		o.poll_interval_ms = 200;
	if (o.reconnect_timeout_ms == 0)
		o.reconnect_timeout_ms = 120000;
	if (o.max_message == 0)
		o.max_message = CLIENT_DEFAULT_MAX_MESSAGE;
	if (o.auth_token != NULL && strlen(o.auth_token) > PROTO_MAX_AUTH)
		return drape_error_setf(err, DRAPE_EINVAL, "auth_token: longer than %d bytes",
					PROTO_MAX_AUTH);
	if (scheme_len(url) == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"url: \"%s\" has no scheme (ipc://PATH or tcp://HOST:PORT)", url);

	drape_client *c = calloc(1, sizeof *c);
	if (c == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "connect: out of memory");
	c->opts = o;
	c->url = dup_str(url);
	char name[64];
	snprintf(name, sizeof name, "libdrape %s", DRAPE_CLIENT_VERSION);
	c->client_name = dup_str(o.client_name != NULL ? o.client_name : name);
	if (o.auth_token != NULL) {
		c->auth = dup_str(o.auth_token);
		c->auth_len = strlen(o.auth_token);
	}
	if (c->url == NULL || c->client_name == NULL || (o.auth_token != NULL && c->auth == NULL)) {
		client_free(c);
		return drape_error_setf(err, DRAPE_ENOMEM, "connect: out of memory");
	}
	c->opts.auth_token = NULL;
	c->opts.client_name = NULL;
	c->opts.tls_ca_file = c->opts.tls_server_name = NULL;
	c->opts.tls_cert_file = c->opts.tls_key_file = NULL;
	if (client_url_is_tls(url)) {
		drape_err trc = tls_make(&o, url, &c->tls, err);
		if (trc != DRAPE_OK) {
			client_free(c);
			return trc;
		}
	}
	c->client_id = random_u64();
	c->next_id = random_u64() >> 16;

	int rv = nng_req0_open(&c->req);
	if (rv != 0) {
		client_free(c);
		return client_nng_error(rv, "connect: opening the request socket", err);
	}
	nng_socket_set_size(c->req, NNG_OPT_RECVMAXSZ, (size_t)o.max_message);
	nng_socket_set_ms(c->req, NNG_OPT_SENDTIMEO, o.request_timeout_ms);
	nng_socket_set_ms(c->req, NNG_OPT_RECVTIMEO, o.request_timeout_ms);
	/* Reconnect quickly after a daemon restart, but without hammering it. */
	nng_socket_set_ms(c->req, NNG_OPT_RECONNMINT, 50);
	nng_socket_set_ms(c->req, NNG_OPT_RECONNMAXT, 1000);
	/* A synchronous dial reports a refused connection now, which is what a
	 * user running `drape status` against a stopped server wants to hear;
	 * once connected, nng redials by itself. */
	nng_dialer d;
	rv = nng_dialer_create(&d, c->req, url);
	if (rv == 0 && c->tls != NULL)
		rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, c->tls);
	if (rv == 0)
		rv = nng_dialer_start(d, 0);
	if (rv != 0) {
		drape_err code = client_nng_error(rv, "connect", err);
		if (err != NULL && c->tls != NULL && rv != NNG_ECONNREFUSED && rv != NNG_EADDRINVAL) {
			/* A refused handshake gives only a terse nng error; say what
			 * is most likely wrong and where to fix it. */
			const char *why;
			if (o.tls_ca_file == NULL)
				why = "no CA was given to verify the server's certificate (tls_ca_file; "
				      "drape --tls-ca or DRAPE_TLS_CA)";
			else if ((rv == NNG_ECONNSHUT || rv == NNG_ECONNRESET) && o.tls_cert_file == NULL)
				why = "the server ended the handshake; it probably wants a client certificate "
				      "(tls_cert_file and tls_key_file; drape --tls-cert and --tls-key)";
			else if (rv == NNG_ECONNSHUT || rv == NNG_ECONNRESET)
				why = "the server ended the handshake; it probably does not trust the client "
				      "certificate (tls_cert_file)";
			else if (o.tls_cert_file != NULL)
				why = "the server's certificate is not signed by tls_ca_file or does not name "
				      "this host (tls_server_name; drape --tls-server-name), or the server "
				      "does not trust the client certificate (tls_cert_file)";
			else
				why = "the server's certificate is not signed by tls_ca_file or does not name "
				      "this host (tls_server_name; drape --tls-server-name)";
			snprintf(err->message, sizeof err->message,
				 "cannot connect to %s: TLS handshake failed (%s): %s", url, nng_strerror(rv), why);
		} else if (err != NULL) {
			snprintf(err->message, sizeof err->message, "cannot connect to %s: %s", url,
				 nng_strerror(rv));
		}
		nng_close(c->req);
		client_free(c);
		return code;
	}
	drape_err rc = client_hello(c, err);
	if (rc != DRAPE_OK) {
		nng_close(c->req);
		client_free(c);
		return rc;
	}
	*out = c;
	return DRAPE_OK;
}

void drape_close(drape_client *c)
{
	if (c == NULL)
		return;
	/* The REQ socket is this client's own and idle here, since each
	 * request waits for its reply. */
	nng_close(c->req);
	client_free(c);
}

void drape_server_info_get(const drape_client *c, drape_server_info *out)
{
	*out = c->info;
}

drape_err drape_ping(drape_client *c, drape_error *err)
{
	return client_hello(c, err);
}

/* ---- Small helpers ---------------------------------------------------------- */

void drape_token_format(const uint8_t token[DRAPE_TOKEN_SIZE], char out[DRAPE_TOKEN_HEX_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < DRAPE_TOKEN_SIZE; i++) {
		out[2 * i] = hex[token[i] >> 4];
		out[2 * i + 1] = hex[token[i] & 15];
	}
	out[2 * DRAPE_TOKEN_SIZE] = '\0';
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

drape_err drape_token_parse(const char *hex, uint8_t token[DRAPE_TOKEN_SIZE])
{
	uint8_t t[DRAPE_TOKEN_SIZE];
	if (hex == NULL || strlen(hex) != 2 * DRAPE_TOKEN_SIZE)
		return DRAPE_EINVAL;
	for (int i = 0; i < DRAPE_TOKEN_SIZE; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return DRAPE_EINVAL;
		t[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(token, t, sizeof t);
	return DRAPE_OK;
}

const char *drape_state_name(drape_state s)
{
	const char *n = proto_state_name((proto_state)s);
	return n != NULL ? n : "unknown";
}

/* ---- Parameters --------------------------------------------------------------- */

enum { PF_FLOAT, PF_INT, PF_VEC };

/* Every parameter with its wire bit, so set fields can be found generically. */
static const struct {
	uint32_t bit;
	size_t off;
	int kind;
	const char *name;
} param_fields[] = {
	{PROTO_PARAM_FPS, offsetof(drape_sim_params, fps), PF_FLOAT, "fps"},
	{PROTO_PARAM_SUBSTEPS, offsetof(drape_sim_params, substeps), PF_INT, "substeps"},
	{PROTO_PARAM_ITERATIONS, offsetof(drape_sim_params, iterations), PF_INT, "iterations"},
	{PROTO_PARAM_GRAVITY, offsetof(drape_sim_params, gravity), PF_VEC, "gravity"},
	{PROTO_PARAM_DAMPING, offsetof(drape_sim_params, damping), PF_FLOAT, "damping"},
	{PROTO_PARAM_WIND, offsetof(drape_sim_params, wind), PF_VEC, "wind"},
	{PROTO_PARAM_DRAG, offsetof(drape_sim_params, drag), PF_FLOAT, "drag"},
	{PROTO_PARAM_LIFT, offsetof(drape_sim_params, lift), PF_FLOAT, "lift"},
	{PROTO_PARAM_AIR_DENSITY, offsetof(drape_sim_params, air_density), PF_FLOAT, "air_density"},
	{PROTO_PARAM_DENSITY, offsetof(drape_sim_params, density), PF_FLOAT, "density"},
	{PROTO_PARAM_STRETCH, offsetof(drape_sim_params, stretch), PF_FLOAT, "stretch"},
	{PROTO_PARAM_SHEAR, offsetof(drape_sim_params, shear), PF_FLOAT, "shear"},
	{PROTO_PARAM_BEND, offsetof(drape_sim_params, bend), PF_FLOAT, "bend"},
	{PROTO_PARAM_THICKNESS, offsetof(drape_sim_params, thickness), PF_FLOAT, "thickness"},
	{PROTO_PARAM_LONG_RANGE, offsetof(drape_sim_params, long_range), PF_INT, "long_range"},
	{PROTO_PARAM_SELF_COLLISION, offsetof(drape_sim_params, self_collision), PF_INT,
	 "self_collision"},
	{PROTO_PARAM_SELF_THICKNESS, offsetof(drape_sim_params, self_thickness), PF_FLOAT,
	 "self_thickness"},
	{PROTO_PARAM_SELF_FRICTION, offsetof(drape_sim_params, self_friction), PF_FLOAT,
	 "self_friction"},
	{PROTO_PARAM_MODEL, offsetof(drape_sim_params, model), PF_INT, "model"},
	{PROTO_PARAM_STRETCH_K, offsetof(drape_sim_params, stretch_k), PF_FLOAT, "stretch_k"},
	{PROTO_PARAM_STRETCH_K_WEFT, offsetof(drape_sim_params, stretch_k_weft), PF_FLOAT,
	 "stretch_k_weft"},
	{PROTO_PARAM_SHEAR_K, offsetof(drape_sim_params, shear_k), PF_FLOAT, "shear_k"},
	{PROTO_PARAM_BEND_K, offsetof(drape_sim_params, bend_k), PF_FLOAT, "bend_k"},
	{PROTO_PARAM_COMPRESS_K, offsetof(drape_sim_params, compress_k), PF_FLOAT, "compress_k"},
	{PROTO_PARAM_DAMPING_RATE, offsetof(drape_sim_params, damping_rate), PF_FLOAT, "damping_rate"},
	{PROTO_PARAM_TEAR_STRAIN, offsetof(drape_sim_params, tear_strain), PF_FLOAT, "tear_strain"},
	{PROTO_PARAM_SCHEDULE, offsetof(drape_sim_params, schedule), PF_INT, "schedule"},
};
#define PARAM_FIELD_COUNT (sizeof param_fields / sizeof param_fields[0])

void drape_params_unset(drape_sim_params *p)
{
	memset(p, 0, sizeof *p);
	for (size_t i = 0; i < PARAM_FIELD_COUNT; i++) {
		char *f = (char *)p + param_fields[i].off;
		if (param_fields[i].kind == PF_INT) {
			int32_t v = INT32_MIN;
			memcpy(f, &v, sizeof v);
		} else {
			float v = NAN;
			for (int k = 0; k < (param_fields[i].kind == PF_VEC ? 3 : 1); k++)
				memcpy(f + k * sizeof v, &v, sizeof v);
		}
	}
}

/* Converts a params struct with unset markers into values plus mask. A
 * vector with some but not all components set is refused, since the wire
 * carries vectors whole. */
static drape_err params_to_wire(const drape_sim_params *p, proto_params *out, const char *what,
				drape_error *err)
{
	out->values = *p;
	out->mask = 0;
	for (size_t i = 0; i < PARAM_FIELD_COUNT; i++) {
		const char *f = (const char *)p + param_fields[i].off;
		if (param_fields[i].kind == PF_INT) {
			int32_t v;
			memcpy(&v, f, sizeof v);
			if (v != INT32_MIN)
				out->mask |= param_fields[i].bit;
		} else {
			int n = param_fields[i].kind == PF_VEC ? 3 : 1, set = 0;
			for (int k = 0; k < n; k++) {
				float v;
				memcpy(&v, f + k * sizeof v, sizeof v);
				set += !isnan(v);
			}
			if (set == n)
				out->mask |= param_fields[i].bit;
			else if (set != 0)
				return drape_error_setf(err, DRAPE_EINVAL,
							"%s: params.%s: %d of 3 components set", what,
							param_fields[i].name, set);
		}
	}
	return DRAPE_OK;
}

/* ---- Sessions ------------------------------------------------------------------ */

void drape_session_desc_default(drape_session_desc *d)
{
	memset(d, 0, sizeof *d);
	drape_params_unset(&d->params);
	d->sew_speed = 0.5f;
}

drape_err drape_session_create(drape_client *c, const drape_session_desc *d, drape_session *out,
			       drape_create_info *info, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_CREATE);
	proto_create_req *cr = &req.u.create;
	cr->mesh.positions = d->positions;
	cr->mesh.vertex_count = d->vertex_count;
	cr->mesh.triangles = d->triangles;
	cr->mesh.triangle_count = d->triangle_count;
	cr->inv_mass = d->inv_mass;
	cr->uvs = d->uvs;
	cr->pins = d->pin_count > 0 ? d->pins : NULL;
	cr->pin_count = d->pin_count;
	cr->pin_stiffness = d->pin_count > 0 ? d->pin_stiffness : NULL;
	cr->name = d->name;
	cr->rest_positions = d->rest_positions;
	cr->rest_scale = d->rest_scale;
	cr->stiffness_scale = d->stiffness_scale;
	cr->vertex_thickness = d->vertex_thickness;
	cr->vertex_friction = d->vertex_friction;
	if (d->object_count > 0 && d->objects == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "objects: NULL with object_count %u",
					d->object_count);
	for (uint32_t i = 0; i < d->object_count; i++)
		if (d->objects[i].name == NULL)
			return drape_error_setf(err, DRAPE_EINVAL, "objects[%u].name: NULL", i);
	proto_object *objects = NULL;
	if (d->object_count > 0) {
		objects = malloc((size_t)d->object_count * sizeof *objects);
		if (objects == NULL)
			return drape_error_setf(err, DRAPE_ENOMEM, "objects: out of memory for %u",
						d->object_count);
		for (uint32_t i = 0; i < d->object_count; i++)
			objects[i] = (proto_object){d->objects[i].name, d->objects[i].range};
		cr->objects = objects;
		cr->object_count = d->object_count;
	}
	/* Stitches travel as two flat arrays (PROTOCOL.md, session.create). */
	uint32_t *stitch_v = NULL;
	float *stitch_t = NULL;
	if (d->stitch_count > 0) {
		if (d->stitches == NULL) {
			free(objects);
			return drape_error_setf(err, DRAPE_EINVAL, "stitches: NULL with stitch_count %u",
						d->stitch_count);
		}
		stitch_v = malloc((size_t)d->stitch_count * 3 * sizeof *stitch_v);
		stitch_t = malloc((size_t)d->stitch_count * sizeof *stitch_t);
		if (stitch_v == NULL || stitch_t == NULL) {
			free(stitch_v);
			free(stitch_t);
			free(objects);
			return drape_error_setf(err, DRAPE_ENOMEM, "stitches: out of memory for %u",
						d->stitch_count);
		}
		for (uint32_t i = 0; i < d->stitch_count; i++) {
			stitch_v[3 * (size_t)i] = d->stitches[i].a;
			stitch_v[3 * (size_t)i + 1] = d->stitches[i].b0;
			stitch_v[3 * (size_t)i + 2] = d->stitches[i].b1;
			stitch_t[i] = d->stitches[i].t;
		}
		cr->stitch_v = stitch_v;
		cr->stitch_t = stitch_t;
		cr->stitch_count = d->stitch_count;
		cr->stitch_k = d->stitch_k;
		cr->sew_speed = d->sew_speed;
		cr->has_stitch_k = cr->has_sew_speed = true;
	}
	drape_err rc = params_to_wire(&d->params, &cr->params, "session.create", err);
	if (rc == DRAPE_OK)
		rc = client_call(c, &req, &rep, err);
	free(stitch_v);
	free(stitch_t);
	free(objects);
	if (rc != DRAPE_OK)
		return rc;
	out->id = rep.u.create.session;
	memcpy(out->token, rep.u.create.token, DRAPE_TOKEN_SIZE);
	if (info != NULL) {
		info->topology = rep.u.create.topology;
		info->intersections = rep.u.create.intersections;
	}
	proto_reply_free(&rep);
	/* A session id may be reused by the server after a delete; frames this
	 * client kept under the old session must not leak into the new one. */
	client_track_forget(c, out->id);
	return DRAPE_OK;
}

static void run_info(const proto_run_rep *r, drape_run_info *info)
{
	if (info == NULL)
		return;
	info->state = (drape_state)r->state;
	info->frames_done = r->frames_done;
	info->frames_target = r->frames_target;
	info->queue_position = r->queue_position;
}

drape_err drape_session_run(drape_client *c, drape_session s, uint32_t frames, drape_run_info *info,
			    drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_RUN);
	set_session(&req, s);
	req.u.run.frames = frames;
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	run_info(&rep.u.run, info);
	proto_reply_free(&rep);
	return DRAPE_OK;
}

drape_err drape_session_resume(drape_client *c, drape_session s, drape_run_info *info,
			       drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_RESUME);
	set_session(&req, s);
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	run_info(&rep.u.run, info);
	proto_reply_free(&rep);
	return DRAPE_OK;
}

drape_err drape_session_cancel(drape_client *c, drape_session s, drape_state *state,
			       uint32_t *frames_done, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_CANCEL);
	set_session(&req, s);
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	if (state != NULL)
		*state = (drape_state)rep.u.cancel.state;
	if (frames_done != NULL)
		*frames_done = rep.u.cancel.frames_done;
	proto_reply_free(&rep);
	return DRAPE_OK;
}

drape_err drape_session_update(drape_client *c, drape_session s, const drape_sim_params *p,
			       drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_UPDATE);
	set_session(&req, s);
	drape_err rc = params_to_wire(p, &req.u.update.params, "session.update", err);
	if (rc == DRAPE_OK)
		rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	proto_reply_free(&rep);
	return DRAPE_OK;
}

drape_err drape_session_delete(drape_client *c, drape_session s, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_DELETE);
	set_session(&req, s);
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	proto_reply_free(&rep);
	client_track_forget(c, s.id);
	return DRAPE_OK;
}

drape_err drape_session_status(drape_client *c, drape_session s, drape_status *out, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_STATUS);
	req.has_session = true;
	req.session = s.id;
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_status_rep *st = &rep.u.status;
	memset(out, 0, sizeof *out);
	out->state = (drape_state)st->state;
	snprintf(out->name, sizeof out->name, "%s", st->name ? st->name : "");
	out->queue_position = st->queue_position;
	out->frames_done = st->frames_done;
	out->frames_target = st->frames_target;
	out->frames_first = st->frames_first;
	out->vertices = st->vertices;
	out->triangles = st->triangles;
	out->colliders = st->colliders;
	out->has_error = st->has_error;
	out->error = st->error;
	out->error_frame = st->error_frame;
	out->has_stats = st->has_stats;
	out->stats = st->stats;
	out->has_storage_error = st->has_storage_error;
	out->storage_error = st->storage_error;
	proto_reply_free(&rep);
	return DRAPE_OK;
}

drape_err drape_session_list(drape_client *c, drape_session_entry **out, uint32_t *count,
			     drape_error *err)
{
	return drape_session_list_all(c, false, out, count, err);
}

drape_err drape_session_list_all(drape_client *c, bool all, drape_session_entry **out, uint32_t *count,
				 drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	req.u.list.all = all;
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_list_rep *l = &rep.u.list;
	drape_session_entry *e = NULL;
	if (l->count > 0) {
		e = calloc(l->count, sizeof *e);
		if (e == NULL) {
			proto_reply_free(&rep);
			return drape_error_setf(err, DRAPE_ENOMEM, "session.list: out of memory");
		}
	}
	for (uint32_t i = 0; i < l->count; i++) {
		e[i].id = l->sessions[i].id;
		snprintf(e[i].name, sizeof e[i].name, "%s",
			 l->sessions[i].name ? l->sessions[i].name : "");
		e[i].state = (drape_state)l->sessions[i].state;
		e[i].frames_done = l->sessions[i].frames_done;
		e[i].vertices = l->sessions[i].vertices;
		snprintf(e[i].owner, sizeof e[i].owner, "%s", l->sessions[i].owner ? l->sessions[i].owner : "");
		snprintf(e[i].host, sizeof e[i].host, "%s", l->sessions[i].host ? l->sessions[i].host : "");
		e[i].created = l->sessions[i].created;
		e[i].frames_target = l->sessions[i].frames_target;
		e[i].memory = l->sessions[i].memory;
		e[i].disk = l->sessions[i].disk;
	}
	*out = e;
	*count = l->count;
	proto_reply_free(&rep);
	return DRAPE_OK;
}

drape_err drape_server_stats_get(drape_client *c, drape_server_stats *out, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SERVER_STATS);
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_server_stats_rep *s = &rep.u.server_stats;
	*out = (drape_server_stats){
		.sessions = s->sessions,
		.queued = s->queued,
		.running = s->running,
		.memory = s->memory,
		.frames_solved = s->frames_solved,
		.frames_served = s->frames_served,
		.requests = s->requests,
		.clients = s->clients,
		.threads = s->threads,
		.uptime_s = s->uptime_s,
	};
	proto_reply_free(&rep);
	return DRAPE_OK;
}

/* ---- Colliders and pins ------------------------------------------------------------ */

void drape_collider_desc_unset(drape_collider_desc *d)
{
	memset(d, 0, sizeof *d);
	d->friction = NAN;
	d->static_friction = NAN;
	d->restitution = NAN;
	d->thickness = NAN;
	d->voxel_size = NAN;
}

/* Room kept in every message for the header, keys and auth token. */
#define CLIENT_MESSAGE_SLACK 4096u

/* The server's animation limits, checked before anything is sent. */
static drape_err client_anim_limits(const drape_client *c, const char *op, uint64_t frames, uint32_t vertices,
				    drape_error *err)
{
	const drape_server_limits *l = &c->info.limits;
	if (l->max_anim_frames != 0 && frames > l->max_anim_frames)
		return drape_error_setf(err, DRAPE_ELIMIT, "%s: frames: %llu animation frames exceed the server's "
					"max_anim_frames %llu",
					op, (unsigned long long)frames, (unsigned long long)l->max_anim_frames);
	const uint64_t bytes = frames * vertices * 12u;
	if (l->max_anim_bytes != 0 && bytes > l->max_anim_bytes)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"%s: frames: %llu frames of %u vertices are %llu bytes, over the server's "
					"max_anim_bytes %llu",
					op, (unsigned long long)frames, (unsigned)vertices, (unsigned long long)bytes,
					(unsigned long long)l->max_anim_bytes);
	return DRAPE_OK;
}

/* How many poses of `vertices` fit one message beside `fixed` other bytes,
 * at most `want`; 0 if not even one. */
static uint32_t client_poses_per_message(const drape_client *c, uint64_t fixed, uint32_t vertices, uint32_t want)
{
	const uint64_t max = c->info.limits.max_message;
	const uint64_t pose = (uint64_t)vertices * 12u;
	if (max <= fixed + CLIENT_MESSAGE_SLACK)
		return 0;
	uint64_t n = (max - fixed - CLIENT_MESSAGE_SLACK) / pose;
	return n < want ? (uint32_t)n : want;
}

/* Sends `count` poses as collider.frames parts that fit max_message. done
 * and all number the poses for messages (done of all sent before). */
static drape_err append_frames(drape_client *c, drape_session s, uint32_t index, const float *frames,
			       uint32_t count, uint32_t vertices, uint32_t done, uint32_t all, uint32_t *total,
			       drape_error *err)
{
	const uint32_t per = client_poses_per_message(c, 0, vertices, count);
	if (per == 0)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"collider.frames: frames: one pose of %u vertices does not fit the server's "
					"max_message of %llu bytes",
					(unsigned)vertices, (unsigned long long)c->info.limits.max_message);
	for (uint32_t sent = 0; sent < count;) {
		const uint32_t n = count - sent < per ? count - sent : per;
		proto_request req;
		proto_reply rep;
		proto_request_init(&req, PROTO_OP_COLLIDER_FRAMES);
		set_session(&req, s);
		req.u.collider_frames.index = index;
		req.u.collider_frames.frames = frames + (size_t)sent * vertices * 3;
		req.u.collider_frames.point_count = n * vertices;
		drape_err rc = client_call(c, &req, &rep, err);
		if (rc != DRAPE_OK) {
			if (err != NULL) {
				char msg[DRAPE_ERROR_MESSAGE_MAX];
				snprintf(msg, sizeof msg, "%s", err->message);
				drape_error_setf(err, rc, "collider.frames (frames %u to %u of %u): %s",
						 (unsigned)(done + sent + 1), (unsigned)(done + sent + n), (unsigned)all,
						 msg);
			}
			return rc;
		}
		if (total != NULL)
			*total = rep.u.collider_frames.frame_count;
		proto_reply_free(&rep);
		sent += n;
	}
	return DRAPE_OK;
}

drape_err drape_collider_add(drape_client *c, drape_session s, const drape_collider_desc *d,
			     uint32_t *index, drape_error *err)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_COLLIDER_ADD);
	set_session(&req, s);
	proto_collider_add_req *a = &req.u.collider_add;
	a->desc = *d;
	a->desc.sdf = NULL;
	a->desc.max_voxels = 0;
	a->mask = 0;
	if (!isnan(d->friction))
		a->mask |= PROTO_COLLIDER_FRICTION;
	if (!isnan(d->static_friction))
		a->mask |= PROTO_COLLIDER_STATIC_FRICTION;
	if (!isnan(d->restitution))
		a->mask |= PROTO_COLLIDER_RESTITUTION;
	if (!isnan(d->thickness))
		a->mask |= PROTO_COLLIDER_THICKNESS;
	if (!isnan(d->voxel_size))
		a->mask |= PROTO_COLLIDER_VOXEL_SIZE;
	if (d->shape == DRAPE_SHAPE_MESH && d->sdf != NULL && d->vertices == NULL)
		return drape_error_setf(err, DRAPE_EINVAL,
					"collider.add: a prebuilt sdf cannot be sent; give the mesh");
	const bool deforming = d->shape == DRAPE_SHAPE_MESH && d->frame_count > 0;
	uint32_t first = 0;
	if (deforming) {
		if (d->frames == NULL || d->vertex_count == 0)
			return drape_error_setf(err, DRAPE_EINVAL, "collider.add: frames: %s",
						d->frames == NULL ? "frame_count > 0 but no frames" : "no vertices");
		drape_err rc = client_anim_limits(c, "collider.add", d->frame_count, d->vertex_count, err);
		if (rc != DRAPE_OK)
			return rc;
		/* The mesh, its keyframes and the first poses share the first
		 * message. */
		const uint64_t fixed = (uint64_t)d->vertex_count * 12u + (uint64_t)d->triangle_count * 12u +
				       (uint64_t)d->keyframe_count * 28u;
		first = client_poses_per_message(c, fixed, d->vertex_count, d->frame_count);
		if (first == 0)
			return drape_error_setf(err, DRAPE_ELIMIT,
						"collider.add: frames: the mesh and one pose of %u vertices do not fit "
						"the server's max_message of %llu bytes",
						(unsigned)d->vertex_count, (unsigned long long)c->info.limits.max_message);
		a->desc.frame_count = first;
	}
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const uint32_t at = rep.u.collider_add.index;
	proto_reply_free(&rep);
	if (deforming && first < d->frame_count) {
		const float *rest = d->frames + (size_t)first * d->vertex_count * 3;
		rc = append_frames(c, s, at, rest, d->frame_count - first, d->vertex_count, first, d->frame_count, NULL,
				   err);
		if (rc != DRAPE_OK) {
			/* Leave the session as it was: the collider goes again. */
			drape_error ignored;
			drape_collider_remove(c, s, at, &ignored);
			return rc;
		}
	}
	if (index != NULL)
		*index = at;
	return DRAPE_OK;
}

drape_err drape_collider_append_frames(drape_client *c, drape_session s, uint32_t index, const float *frames,
				       uint32_t count, uint32_t vertex_count, uint32_t *total, drape_error *err)
{
	if (frames == NULL || count == 0 || vertex_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "collider.frames: frames: %s",
					vertex_count == 0 ? "vertex_count is 0" : "no frames");
	drape_err rc = client_anim_limits(c, "collider.frames", count, vertex_count, err);
	if (rc != DRAPE_OK)
		return rc;
	return append_frames(c, s, index, frames, count, vertex_count, 0, count, total, err);
}

drape_err drape_collider_transform(drape_client *c, drape_session s, uint32_t index,
				   const drape_keyframe *keys, uint32_t count, drape_error *err)
{
	proto_request req;
	proto_request_init(&req, PROTO_OP_COLLIDER_TRANSFORM);
	set_session(&req, s);
	req.u.collider_transform.index = index;
	req.u.collider_transform.keyframes = count > 0 ? keys : NULL;
	req.u.collider_transform.keyframe_count = count;
	return call_ack(c, &req, err);
}

drape_err drape_collider_update(drape_client *c, drape_session s, uint32_t index,
				const float *vertices, uint32_t vertex_count, drape_error *err)
{
	proto_request req;
	proto_request_init(&req, PROTO_OP_COLLIDER_UPDATE);
	set_session(&req, s);
	req.u.collider_update.index = index;
	req.u.collider_update.vertices = vertices;
	req.u.collider_update.vertex_count = vertex_count;
	return call_ack(c, &req, err);
}

drape_err drape_collider_remove(drape_client *c, drape_session s, uint32_t index, drape_error *err)
{
	proto_request req;
	proto_request_init(&req, PROTO_OP_COLLIDER_REMOVE);
	set_session(&req, s);
	req.u.collider_remove.index = index;
	return call_ack(c, &req, err);
}

drape_err drape_pins_attach(drape_client *c, drape_session s, const uint32_t *vertices,
			    uint32_t count, uint32_t collider, drape_error *err)
{
	proto_request req;
	proto_request_init(&req, PROTO_OP_PINS_ATTACH);
	set_session(&req, s);
	req.u.pins_attach.vertices = vertices;
	req.u.pins_attach.count = count;
	req.u.pins_attach.collider = collider;
	return call_ack(c, &req, err);
}

drape_err drape_server_preflight(drape_client *c, const float *positions, uint32_t vertex_count,
				 const uint32_t *triangles, uint32_t triangle_count,
				 drape_tri_pair *pairs, uint32_t max_pairs, uint32_t *pair_count,
				 uint64_t *count, drape_error *err)
{
	if (max_pairs > PROTO_MAX_PREFLIGHT_PAIRS)
		max_pairs = PROTO_MAX_PREFLIGHT_PAIRS;
	if (max_pairs > 0 && pairs == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "preflight: pairs is NULL");
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_PREFLIGHT);
	req.u.preflight.mesh.positions = positions;
	req.u.preflight.mesh.vertex_count = vertex_count;
	req.u.preflight.mesh.triangles = triangles;
	req.u.preflight.mesh.triangle_count = triangle_count;
	req.u.preflight.max_pairs = max_pairs;
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	uint32_t n = rep.u.preflight.pair_count < max_pairs ? rep.u.preflight.pair_count : max_pairs;
	if (n > 0)
		memcpy(pairs, rep.u.preflight.pairs, n * sizeof *pairs);
	if (pair_count != NULL)
		*pair_count = n;
	*count = rep.u.preflight.count;
	proto_reply_free(&rep);
	return DRAPE_OK;
}
