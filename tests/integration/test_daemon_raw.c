/*
 * Black-box test of draped over its wire protocol, with nng and the proto
 * codec only (no libdrape): it starts real daemons (from $DRAPED) on a fresh
 * ipc:// socket and on tcp://127.0.0.1:<free port>, and checks the happy
 * path, hostile input, replay, tokens, cancel, idle expiry, crash recovery
 * and SIGTERM. Every daemon it starts is killed on every exit path.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <msgpack.h>
#include <netinet/in.h>
#include <pthread.h>
#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/req.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drape/sim.h"
#include "proto/proto.h"
#include "tests/unit/check.h"
#include "tests/integration/grid.h"
#include "tests/integration/itest.h"

/* ---- Daemons ------------------------------------------------------------- */

static char tmpdir[256];

/* Waits up to ms for pid to exit; returns its wait status or -1. */
static int wait_exit(pid_t pid, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			itest_forget(pid);
			return st;
		}
		usleep(10000);
	}
	return -1;
}

/* ---- Requests ------------------------------------------------------------- */

static int open_req(const char *url, nng_socket *s)
{
	return itest_req_open(url, 5000, 5000, s);
}

/* Decodes an error reply to a malformed request (its op is unknown, so
 * accept any echo by trying hello, the op with no reply fields). */
static int decode_error_reply(const void *r, size_t rl, proto_reply *rep)
{
	drape_error err;
	for (int op = PROTO_OP_HELLO; op < PROTO_OP_COUNT_; op++)
		if (proto_reply_decode(r, rl, 0, (proto_op)op, rep, &err) == DRAPE_OK)
			return 0;
	return -1;
}

/* ---- Meshes ---------------------------------------------------------------- */

static void create_req(proto_request *req, const itest_grid *g)
{
	proto_request_init(req, PROTO_OP_SESSION_CREATE);
	req->u.create.mesh.positions = g->pos;
	req->u.create.mesh.vertex_count = g->nv;
	req->u.create.mesh.triangles = g->tri;
	req->u.create.mesh.triangle_count = g->nt;
	req->u.create.pins = g->pins;
	req->u.create.pin_count = 2;
	req->u.create.params.values.fps = 30.0f;
	req->u.create.params.mask = PROTO_PARAM_FPS;
	req->u.create.name = "raw-test";
}

static void sphere_desc(drape_collider_desc *d)
{
	drape_collider_desc_default(d);
	d->shape = DRAPE_SHAPE_SPHERE;
	d->center[0] = 0.5f;
	d->center[1] = 0.6f;
	d->center[2] = 0.5f;
	d->radius = 0.3f;
}

/* Positions after `frames` frames of the same scene solved in process,
 * with the test's sphere collider when `sphere` is set. */
static float *solve_in_process_with(const itest_grid *g, uint32_t frames, bool sphere)
{
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = g->pos;
	d.vertex_count = g->nv;
	d.triangles = g->tri;
	d.triangle_count = g->nt;
	d.pins = g->pins;
	d.pin_count = 2;
	drape_sim_params_default(&d.params);
	d.params.fps = 30.0f;
	drape_sim *sim = NULL;
	if (drape_sim_create(&d, &sim, NULL) != DRAPE_OK)
		return NULL;
	if (sphere) {
		drape_collider_desc c;
		uint32_t index;
		sphere_desc(&c);
		if (drape_sim_add_collider(sim, &c, &index, NULL) != DRAPE_OK) {
			drape_sim_destroy(sim);
			return NULL;
		}
	}
	for (uint32_t i = 0; i < frames; i++)
		drape_sim_step(sim, NULL, NULL);
	float *out = malloc(g->nv * 12u);
	drape_sim_get_positions(sim, out);
	drape_sim_destroy(sim);
	return out;
}

static float *solve_in_process(const itest_grid *g, uint32_t frames)
{
	return solve_in_process_with(g, frames, false);
}

typedef struct owned {
	uint32_t id;
	uint8_t token[PROTO_TOKEN_SIZE];
} owned;

static int create(nng_socket s, const itest_grid *g, owned *o)
{
	proto_request req;
	proto_reply rep;
	create_req(&req, g);
	if (itest_call(s, &req, &rep) != 0 || !rep.ok) {
		if (!rep.ok)
			printf("  create: %s\n", rep.error.message);
		proto_reply_free(&rep);
		return -1;
	}
	o->id = rep.u.create.session;
	memcpy(o->token, rep.u.create.token, PROTO_TOKEN_SIZE);
	proto_reply_free(&rep);
	return 0;
}

static void session_req(proto_request *req, proto_op op, const owned *o)
{
	proto_request_init(req, op);
	req->has_session = true;
	req->session = o->id;
	req->has_token = true;
	memcpy(req->token, o->token, PROTO_TOKEN_SIZE);
}

/* One owner op on a session whose reply carries only ok. */
static bool session_op_ok(nng_socket s, proto_op op, const owned *o)
{
	proto_request req;
	proto_reply rep;
	session_req(&req, op, o);
	if (itest_call(s, &req, &rep) != 0)
		return false;
	bool ok = rep.ok;
	if (!ok)
		printf("  %s: %s\n", proto_op_name(op), rep.error.message);
	proto_reply_free(&rep);
	return ok;
}

static int run(nng_socket s, const owned *o, uint32_t frames, proto_reply *rep)
{
	proto_request req;
	session_req(&req, PROTO_OP_SESSION_RUN, o);
	req.u.run.frames = frames;
	return itest_call(s, &req, rep);
}

static int status(nng_socket s, uint32_t id, proto_reply *rep)
{
	proto_request req;
	proto_request_init(&req, PROTO_OP_SESSION_STATUS);
	req.has_session = true;
	req.session = id;
	return itest_call(s, &req, rep);
}

/* Polls status until the session leaves queued/running or ms pass. */
static proto_state wait_stopped(nng_socket s, uint32_t id, int ms, uint32_t *frames_done)
{
	for (int t = 0; t < ms; t += 20) {
		proto_reply rep;
		if (status(s, id, &rep) != 0 || !rep.ok)
			return PROTO_STATE_COUNT_;
		proto_state st = rep.u.status.state;
		*frames_done = rep.u.status.frames_done;
		proto_reply_free(&rep);
		if (st != PROTO_STATE_RUNNING && st != PROTO_STATE_QUEUED)
			return st;
		usleep(20000);
	}
	return PROTO_STATE_RUNNING;
}

static int get_frame(nng_socket s, const owned *o, uint32_t index, float *out, uint32_t nv)
{
	proto_request req;
	proto_reply rep;
	session_req(&req, PROTO_OP_FRAMES_GET, o);
	req.u.frames_get.first = index;
	req.u.frames_get.count = 1;
	if (itest_call(s, &req, &rep) != 0)
		return -1;
	int rc = -1;
	if (rep.ok && rep.u.frames_get.count == 1 && rep.u.frames_get.frames[0].index == index &&
	    rep.u.frames_get.frames[0].vertex_count == nv) {
		memcpy(out, rep.u.frames_get.frames[0].positions, nv * 12u);
		rc = 0;
	}
	proto_reply_free(&rep);
	return rc;
}

/* ---- The shared daemon ------------------------------------------------------ */

static char ipc_url[300], tcp_url[64], stream_ipc[320], log_main[300], state_main[300];
static pid_t main_pid;
static bool main_up;

static int wait_ready(const char *url, int ms)
{
	for (int t = 0; t < ms; t += 50) {
		nng_socket s;
		if (open_req(url, &s) == 0) {
			nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 500);
			proto_request req;
			proto_reply rep;
			proto_request_init(&req, PROTO_OP_HELLO);
			int ok = itest_call(s, &req, &rep) == 0 && rep.ok;
			if (ok)
				proto_reply_free(&rep);
			nng_close(s);
			if (ok)
				return 0;
		}
		usleep(50000);
	}
	return -1;
}

static void test_start(void)
{
	snprintf(ipc_url, sizeof ipc_url, "ipc://%s/ctl", tmpdir);
	snprintf(stream_ipc, sizeof stream_ipc, "%s.stream", ipc_url);
	int port = itest_free_port();
	CHECK(port > 0);
	snprintf(tcp_url, sizeof tcp_url, "tcp://127.0.0.1:%d", port);
	snprintf(log_main, sizeof log_main, "%s/main.log", tmpdir);
	snprintf(state_main, sizeof state_main, "%s/state-main", tmpdir);
	/* With the opt-in PUB stream (no auth token here), which raw
	 * subscribers below read. */
	const char *args[] = { "--listen", ipc_url, "--listen", tcp_url, "--stream", stream_ipc, "--state-dir",
			       state_main, "--threads", "2", "--max-message", "1048576", "--verbose", NULL };
	main_pid = itest_spawn(log_main, args);
	CHECK(main_pid > 0);
	CHECKF(wait_ready(ipc_url, 5000) == 0, "daemon not answering on %.200s", ipc_url);
	CHECK(wait_ready(tcp_url, 2000) == 0);
	main_up = true;
}

static void test_hello(void)
{
	CHECK(main_up);
	const char *urls[2] = { ipc_url, tcp_url };
	for (int u = 0; u < 2; u++) {
		nng_socket s;
		CHECK(open_req(urls[u], &s) == 0);
		proto_request req;
		proto_reply rep;
		proto_request_init(&req, PROTO_OP_HELLO);
		req.u.hello.client = "test_daemon_raw";
		int rc = itest_call(s, &req, &rep);
		nng_close(s);
		CHECK(rc == 0 && rep.ok);
		CHECK(rep.u.hello.version == PROTO_VERSION);
		CHECKF(strncmp(rep.u.hello.server, "draped 0.1.0 (", 14) == 0, "server = %s", rep.u.hello.server);
		CHECK(rep.u.hello.stream_url_count == 1);
		CHECKF(strcmp(rep.u.hello.stream_urls[0], stream_ipc) == 0, "stream[0] = %s",
		       rep.u.hello.stream_urls[0]);
		CHECK(rep.u.hello.limits.max_message == 1048576);
		CHECK(rep.u.hello.limits.idle_timeout_s == 3600);
		CHECK(!rep.u.hello.auth_required);
		proto_reply_free(&rep);
	}
	/* ipc sockets are group-accessible only (--ipc-mode default 0660). */
	struct stat st;
	CHECK(stat(ipc_url + 6, &st) == 0 && (st.st_mode & 0777) == 0660);
}

/* create, subscribe, run, stream, status, frames.get, list, delete. */
static void test_happy_path(void)
{
	CHECK(main_up);
	nng_socket s, sub;
	itest_grid g;
	itest_grid_make(&g, 8);
	CHECK(open_req(tcp_url, &s) == 0);
	owned o;
	CHECK(create(s, &g, &o) == 0);
	CHECK(o.id >= 1);

	CHECK(nng_sub0_open(&sub) == 0);
	char topic[PROTO_TOPIC_LEN + 1];
	proto_stream_topic(o.id, topic);
	nng_socket_set(sub, NNG_OPT_SUB_SUBSCRIBE, topic, PROTO_TOPIC_LEN);
	nng_socket_set_ms(sub, NNG_OPT_RECVTIMEO, 5000);
	CHECK(nng_dial(sub, stream_ipc, NULL, 0) == 0);
	usleep(200000); /* let the subscription reach the publisher */

	proto_reply rep;
	CHECK(run(s, &o, 6, &rep) == 0 && rep.ok);
	CHECK(rep.u.run.frames_target == 6);
	CHECK(rep.u.run.state == PROTO_STATE_RUNNING || rep.u.run.state == PROTO_STATE_QUEUED);
	proto_reply_free(&rep);

	/* The stream: frames 1..6 in order, then end (done, 6). */
	float *streamed6 = malloc(g.nv * 12u);
	uint32_t expect = 1;
	bool ended = false;
	while (!ended) {
		void *m = NULL;
		size_t ml = 0;
		int rv = nng_recv(sub, &m, &ml, NNG_FLAG_ALLOC);
		CHECKF(rv == 0, "stream: %s", nng_strerror(rv));
		proto_stream_msg sm;
		drape_error err;
		drape_err dr = proto_stream_decode(m, ml, 0, &sm, &err);
		nng_free(m, ml);
		CHECKF(dr == DRAPE_OK, "stream decode: %s", err.message);
		if (sm.kind == PROTO_STREAM_FRAME) {
			CHECKF(sm.frame.index == expect, "stream frame %u, expected %u", sm.frame.index, expect);
			if (expect == 6)
				memcpy(streamed6, sm.frame.positions, g.nv * 12u);
			expect++;
		} else {
			CHECK(sm.state == PROTO_STATE_DONE && sm.frames_done == 6);
			ended = true;
		}
		proto_stream_free(&sm);
	}
	CHECK(expect == 7);
	nng_close(sub);

	uint32_t done = 0;
	CHECK(wait_stopped(s, o.id, 5000, &done) == PROTO_STATE_DONE && done == 6);
	CHECK(status(s, o.id, &rep) == 0 && rep.ok);
	CHECK(rep.u.status.frames_first == 1 && rep.u.status.vertices == g.nv && rep.u.status.has_stats &&
	      rep.u.status.stats.frame == 6 && strcmp(rep.u.status.name, "raw-test") == 0);
	proto_reply_free(&rep);

	/* frames.get: all six, consecutive; frame 6 equals the streamed one and
	 * the in-process solve bit for bit. */
	proto_request req;
	session_req(&req, PROTO_OP_FRAMES_GET, &o);
	req.u.frames_get.first = 1;
	req.u.frames_get.count = 100;
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	CHECK(rep.u.frames_get.count == 6 && rep.u.frames_get.frames_done == 6);
	for (uint32_t i = 0; i < 6; i++)
		CHECK(rep.u.frames_get.frames[i].index == i + 1);
	float *local = solve_in_process(&g, 6);
	CHECK(local != NULL);
	CHECK(memcmp(rep.u.frames_get.frames[5].positions, streamed6, g.nv * 12u) == 0);
	CHECK(memcmp(rep.u.frames_get.frames[5].positions, local, g.nv * 12u) == 0);
	free(local);
	free(streamed6);
	proto_reply_free(&rep);

	/* A frame not solved yet: an empty successful reply. */
	req.u.frames_get.first = 7;
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok && rep.u.frames_get.count == 0);
	proto_reply_free(&rep);

	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	bool listed = false;
	for (uint32_t i = 0; i < rep.u.list.count; i++)
		listed |= rep.u.list.sessions[i].id == o.id && rep.u.list.sessions[i].frames_done == 6;
	CHECK(listed);
	proto_reply_free(&rep);

	proto_request_init(&req, PROTO_OP_SERVER_STATS);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	CHECK(rep.u.server_stats.frames_solved >= 6 && rep.u.server_stats.sessions >= 1 &&
	      rep.u.server_stats.threads == 2);
	proto_reply_free(&rep);

	CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o));
	CHECK(status(s, o.id, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_ENOTFOUND);
	proto_reply_free(&rep);
	nng_close(s);
	itest_grid_free(&g);
}

/* ---- Hostile input ---------------------------------------------------------- */

/* Sends raw bytes and expects an error reply with code and a message
 * containing `names`. */
static int expect_error(nng_socket s, const void *data, size_t len, drape_err code, const char *names,
			char *why, size_t why_len)
{
	void *r = NULL;
	size_t rl = 0;
	int rv = itest_raw_call(s, data, len, &r, &rl);
	if (rv != 0) {
		snprintf(why, why_len, "no reply: %s", nng_strerror(rv));
		return -1;
	}
	proto_reply rep;
	int dr = decode_error_reply(r, rl, &rep);
	nng_free(r, rl);
	if (dr != 0) {
		snprintf(why, why_len, "reply undecodable");
		return -1;
	}
	int ok = !rep.ok && rep.error.code == code && strstr(rep.error.message, names) != NULL;
	snprintf(why, why_len, "got %s \"%.200s\", wanted %s naming \"%.40s\"", drape_err_name(rep.error.code),
		 rep.error.message, drape_err_name(code), names);
	proto_reply_free(&rep);
	return ok ? 0 : -1;
}

/* Builds a request map with msgpack-c: header plus `extra` pairs added by
 * the callback. */
typedef void (*packer_fn)(msgpack_packer *pk);

static void pack_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

static void build_v(msgpack_sbuffer *sb, uint32_t v, const char *op, uint32_t nextra, packer_fn extra)
{
	msgpack_packer pk;
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3 + nextra);
	pack_str(&pk, "v");
	msgpack_pack_uint32(&pk, v);
	pack_str(&pk, "id");
	msgpack_pack_uint64(&pk, itest_next_id());
	pack_str(&pk, "op");
	pack_str(&pk, op);
	if (extra)
		extra(&pk);
}

static void build(msgpack_sbuffer *sb, const char *op, uint32_t nextra, packer_fn extra)
{
	build_v(sb, PROTO_VERSION, op, nextra, extra);
}

static void extra_session_str(msgpack_packer *pk)
{
	pack_str(pk, "session");
	pack_str(pk, "seven");
}

static void extra_empty_create(msgpack_packer *pk)
{
	pack_str(pk, "name");
	pack_str(pk, "no mesh");
}

/* Connects to a tcp:// URL as a raw SP REQ peer, announces a message of
 * `size` bytes, and returns 0 if the daemon closes the connection before
 * more than a little of the body could be sent. */
static int oversized_refused(const char *url, uint32_t size)
{
	int port = atoi(strrchr(url, ':') + 1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = { 3, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	/* SP/TCP: "\0SP\0", protocol REQ (0x30) big-endian, two reserved
	 * bytes; then each message is a 64-bit big-endian length and the
	 * body (REQ puts a 4-byte request id with its top bit set first). */
	const uint8_t hs[8] = { 0, 'S', 'P', 0, 0, 0x30, 0, 0 };
	uint8_t peer[8];
	int rc = -1;
	if (send(fd, hs, sizeof hs, MSG_NOSIGNAL) != (ssize_t)sizeof hs ||
	    recv(fd, peer, sizeof peer, MSG_WAITALL) != (ssize_t)sizeof peer || peer[5] != 0x31) {
		close(fd);
		return -1;
	}
	uint8_t head[12];
	const uint64_t len = (uint64_t)size + 4;
	for (int i = 0; i < 8; i++)
		head[i] = (uint8_t)(len >> (56 - 8 * i));
	head[8] = 0x80;
	head[9] = head[10] = 0;
	head[11] = 1;
	if (send(fd, head, sizeof head, MSG_NOSIGNAL) == (ssize_t)sizeof head) {
		/* The daemon closes as soon as it reads the length; a read then
		 * sees end-of-file or a reset, never a reply. */
		uint8_t b;
		ssize_t r = recv(fd, &b, 1, 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			rc = 0;
	}
	close(fd);
	return rc;
}

static void test_bad_requests(void)
{
	CHECK(main_up);
	nng_socket bad, good;
	CHECK(open_req(ipc_url, &bad) == 0);
	CHECK(open_req(tcp_url, &good) == 0);
	itest_grid g;
	itest_grid_make(&g, 4);
	/* A second client keeps a session running the whole time. */
	owned o;
	proto_reply rep;
	CHECK(create(good, &g, &o) == 0);
	CHECK(run(good, &o, 0, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);

	char why[400];
	msgpack_sbuffer sb;

	/* Unknown op. */
	build(&sb, "session.explode", 0, NULL);
	int r = expect_error(bad, sb.data, sb.size, DRAPE_EPROTO, "session.explode", why, sizeof why);
	msgpack_sbuffer_destroy(&sb);
	CHECKF(r == 0, "unknown op: %s", why);

	/* Wrong type. */
	build(&sb, "session.status", 1, extra_session_str);
	r = expect_error(bad, sb.data, sb.size, DRAPE_EPROTO, "session", why, sizeof why);
	msgpack_sbuffer_destroy(&sb);
	CHECKF(r == 0, "wrong type: %s", why);

	/* Missing fields. */
	build(&sb, "session.create", 1, extra_empty_create);
	r = expect_error(bad, sb.data, sb.size, DRAPE_EPROTO, "positions", why, sizeof why);
	msgpack_sbuffer_destroy(&sb);
	CHECKF(r == 0, "missing field: %s", why);

	/* Triangle index out of range and a NaN coordinate, through the
	 * encoder (which does not validate content). */
	proto_request req;
	proto_buf b = { NULL, 0 };
	create_req(&req, &g);
	uint32_t *tri = malloc(g.nt * 12u);
	memcpy(tri, g.tri, g.nt * 12u);
	tri[7] = g.nv + 5;
	req.u.create.mesh.triangles = tri;
	req.id = itest_next_id();
	CHECK(proto_request_encode(&req, &b, NULL) == DRAPE_OK);
	r = expect_error(bad, b.data, b.len, DRAPE_ERANGE, "triangles[2][1]", why, sizeof why);
	proto_buf_free(&b);
	free(tri);
	CHECKF(r == 0, "triangle index: %s", why);

	float *pos = malloc(g.nv * 12u);
	memcpy(pos, g.pos, g.nv * 12u);
	pos[3 * 5 + 1] = NAN;
	create_req(&req, &g);
	req.u.create.mesh.positions = pos;
	req.id = itest_next_id();
	CHECK(proto_request_encode(&req, &b, NULL) == DRAPE_OK);
	r = expect_error(bad, b.data, b.len, DRAPE_ENONFINITE, "positions", why, sizeof why);
	free(pos);
	CHECKF(r == 0, "NaN: %s", why);

	/* Truncated: the same message cut in half. */
	r = expect_error(bad, b.data, b.len / 2, DRAPE_ETRUNCATED, "", why, sizeof why);
	proto_buf_free(&b);
	CHECKF(r == 0, "truncated: %s", why);

	/* An array claiming 2^32 - 1 elements in five bytes. */
	const uint8_t huge[] = { 0xdd, 0xff, 0xff, 0xff, 0xff };
	r = expect_error(bad, huge, sizeof huge, DRAPE_ETRUNCATED, "", why, sizeof why);
	CHECKF(r == 0, "huge array: %s", why);
	/* The same inside a request map. */
	const uint8_t huge_in_map[] = { 0x81, 0xa2, 'o', 'p', 0xdd, 0xff, 0xff, 0xff, 0xff };
	r = expect_error(bad, huge_in_map, sizeof huge_in_map, DRAPE_ETRUNCATED, "", why, sizeof why);
	CHECKF(r == 0, "huge array in a map: %s", why);

	/* Garbage bytes. */
	const char garbage[] = "garbage, not msgpack \xc1\xc1";
	r = expect_error(bad, garbage, sizeof garbage - 1, DRAPE_EPROTO, "", why, sizeof why);
	CHECKF(r == 0, "garbage: %s", why);

	/* Another protocol version. */
	build_v(&sb, PROTO_VERSION + 1, "hello", 0, NULL);
	r = expect_error(bad, sb.data, sb.size, DRAPE_EVERSION, "version", why, sizeof why);
	msgpack_sbuffer_destroy(&sb);
	CHECKF(r == 0, "version: %s", why);

	/* Oversized (the daemon's max is 1 MiB): spoken as raw SP over TCP, so
	 * the test sees what the daemon does with the length header alone: it
	 * drops the connection without reading the body or replying. */
	CHECKF(oversized_refused(tcp_url, 2u << 20) == 0, "an oversized message was not refused");

	/* The other client was served throughout, and its run kept going.
	 * The bad requests above take about a millisecond, less than a first
	 * frame may need to be solved, written and stored, so its first frame
	 * is waited for (up to 5 s) rather than assumed. */
	bool going = false;
	for (int tries = 0; tries < 250 && !going; tries++) {
		if (status(good, o.id, &rep) != 0)
			break;
		going = rep.ok && rep.u.status.state == PROTO_STATE_RUNNING && rep.u.status.frames_done > 0;
		const bool running = rep.ok && rep.u.status.state == PROTO_STATE_RUNNING;
		proto_reply_free(&rep);
		if (!running)
			break;
		if (!going)
			usleep(20000);
	}
	CHECK(going);
	proto_request_init(&req, PROTO_OP_HELLO);
	CHECK(itest_call(bad, &req, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);

	CHECK(session_op_ok(good, PROTO_OP_SESSION_DELETE, &o));
	nng_close(bad);
	nng_close(good);
	itest_grid_free(&g);
}

/* nngcat from nng-utils sends garbage; the daemon answers with an error and
 * keeps serving. */
static void test_nngcat_garbage(void)
{
	CHECK(main_up);
	char cmd[1024], out[300];
	snprintf(out, sizeof out, "%s/nngcat.out", tmpdir);
	snprintf(cmd, sizeof cmd,
		 "nngcat --req --dial '%s' --data 'garbage bytes' --raw --recv-timeout 3 > '%s' 2>&1", ipc_url, out);
	int st = system(cmd);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nngcat exited %d (is nng-utils installed?)", st);
	FILE *f = fopen(out, "rb");
	CHECK(f != NULL);
	char buf[1024];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	CHECKF(memmem(buf, n, "EPROTO", 6) != NULL, "nngcat got %zu bytes without EPROTO", n);
	nng_socket s;
	CHECK(open_req(ipc_url, &s) == 0);
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_HELLO);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	nng_close(s);
}

/* The same (client, id) twice: the same reply bytes, one session. */
static void test_replay(void)
{
	CHECK(main_up);
	nng_socket s;
	CHECK(open_req(ipc_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 3);
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	const uint32_t before = rep.u.list.count;
	proto_reply_free(&rep);

	create_req(&req, &g);
	req.has_client = true;
	req.client = 0x1234567890abcdefull;
	req.id = 4242;
	proto_buf b = { NULL, 0 };
	CHECK(proto_request_encode(&req, &b, NULL) == DRAPE_OK);
	void *r1 = NULL, *r2 = NULL;
	size_t l1 = 0, l2 = 0;
	CHECK(itest_raw_call(s, b.data, b.len, &r1, &l1) == 0);
	CHECK(itest_raw_call(s, b.data, b.len, &r2, &l2) == 0);
	proto_buf_free(&b);
	const bool same = l1 == l2 && memcmp(r1, r2, l1) == 0;
	CHECK(proto_reply_decode(r1, l1, 0, PROTO_OP_SESSION_CREATE, &rep, NULL) == DRAPE_OK && rep.ok);
	owned o = { rep.u.create.session, { 0 } };
	memcpy(o.token, rep.u.create.token, PROTO_TOKEN_SIZE);
	proto_reply_free(&rep);
	nng_free(r1, l1);
	nng_free(r2, l2);
	CHECK(same);

	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	const uint32_t after = rep.u.list.count;
	proto_reply_free(&rep);
	CHECKF(after == before + 1, "sessions %u -> %u", before, after);

	/* A repeated run does not start a second run (which would be ESTATE). */
	session_req(&req, PROTO_OP_SESSION_RUN, &o);
	req.has_client = true;
	req.client = 0x1234567890abcdefull;
	req.id = 4243;
	req.u.run.frames = 3;
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	CHECK(itest_call(s, &req, &rep) == 0);
	CHECKF(rep.ok, "repeated run: %s", rep.error.message);
	proto_reply_free(&rep);
	uint32_t done = 0;
	CHECK(wait_stopped(s, o.id, 5000, &done) == PROTO_STATE_DONE && done == 3);

	CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o));
	nng_close(s);
	itest_grid_free(&g);
}

static void test_owner_token(void)
{
	CHECK(main_up);
	nng_socket s;
	CHECK(open_req(tcp_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 3);
	owned o, wrong;
	CHECK(create(s, &g, &o) == 0);
	wrong = o;
	wrong.token[3] ^= 0x40;
	proto_request req;
	proto_reply rep;

	session_req(&req, PROTO_OP_SESSION_RUN, &wrong);
	req.u.run.frames = 2;
	CHECK(itest_call(s, &req, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_EPERM);
	CHECKF(strstr(rep.error.message, "owner token does not match") != NULL, "%s", rep.error.message);
	proto_reply_free(&rep);

	session_req(&req, PROTO_OP_SESSION_DELETE, &o);
	req.has_token = false;
	CHECK(itest_call(s, &req, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_EPERM);
	proto_reply_free(&rep);

	/* Read-only ops need no token; the session is intact and idle. */
	CHECK(status(s, o.id, &rep) == 0 && rep.ok && rep.u.status.state == PROTO_STATE_IDLE &&
	      rep.u.status.frames_done == 0);
	proto_reply_free(&rep);

	CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o));
	nng_close(s);
	itest_grid_free(&g);
}

/* A run until cancelled stops within a frame of the cancel. */
static void test_cancel(void)
{
	CHECK(main_up);
	nng_socket s;
	CHECK(open_req(ipc_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 16);
	owned o;
	CHECK(create(s, &g, &o) == 0);
	nng_socket sub;
	CHECK(nng_sub0_open(&sub) == 0);
	char topic[PROTO_TOPIC_LEN + 1];
	proto_stream_topic(o.id, topic);
	nng_socket_set(sub, NNG_OPT_SUB_SUBSCRIBE, topic, PROTO_TOPIC_LEN);
	nng_socket_set_ms(sub, NNG_OPT_RECVTIMEO, 5000);
	CHECK(nng_dial(sub, stream_ipc, NULL, 0) == 0);
	usleep(200000);
	proto_reply rep;
	CHECK(run(s, &o, 0, &rep) == 0 && rep.ok && rep.u.run.frames_target == 0);
	proto_reply_free(&rep);
	uint32_t done = 0;
	for (int t = 0; t < 250 && done < 3; t++) {
		CHECK(status(s, o.id, &rep) == 0 && rep.ok);
		done = rep.u.status.frames_done;
		proto_reply_free(&rep);
		usleep(20000);
	}
	CHECK(done >= 3);
	proto_request req;
	session_req(&req, PROTO_OP_SESSION_CANCEL, &o);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok && rep.u.cancel.state == PROTO_STATE_CANCELED);
	const uint32_t at_cancel = rep.u.cancel.frames_done;
	proto_reply_free(&rep);
	usleep(300000);
	CHECK(status(s, o.id, &rep) == 0 && rep.ok);
	CHECKF(rep.u.status.state == PROTO_STATE_CANCELED && rep.u.status.frames_done <= at_cancel + 1,
	       "state %s, frames %u after cancel at %u", proto_state_name(rep.u.status.state),
	       rep.u.status.frames_done, at_cancel);
	const uint32_t final_frames = rep.u.status.frames_done;
	proto_reply_free(&rep);
	/* The stream ends with "canceled" after the last frame. */
	uint32_t last = 0;
	for (;;) {
		void *m = NULL;
		size_t ml = 0;
		CHECK(nng_recv(sub, &m, &ml, NNG_FLAG_ALLOC) == 0);
		proto_stream_msg sm;
		drape_err dr = proto_stream_decode(m, ml, 0, &sm, NULL);
		nng_free(m, ml);
		CHECK(dr == DRAPE_OK);
		const bool end = sm.kind == PROTO_STREAM_END;
		if (end)
			CHECKF(sm.state == PROTO_STATE_CANCELED && sm.frames_done == final_frames && last == final_frames,
			       "end %s at %u, last frame %u, status %u", proto_state_name(sm.state), sm.frames_done,
			       last, final_frames);
		else
			last = sm.frame.index;
		proto_stream_free(&sm);
		if (end)
			break;
	}
	nng_close(sub);

	/* resume continues it (target 0: until cancelled); cancel again. */
	CHECK(session_op_ok(s, PROTO_OP_SESSION_RESUME, &o));
	CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o));
	nng_close(s);
	itest_grid_free(&g);
}

/* More runnable sessions than workers: the rest queue, all finish. */
static void test_queue(void)
{
	CHECK(main_up);
	nng_socket s;
	CHECK(open_req(ipc_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 12);
	/* Two endless runs, then bounded runs until one is queued, then two
	 * more behind it. */
	enum { ENDLESS = 2, TRIES = 20, BEHIND = 2 };
	owned o[ENDLESS + TRIES + BEHIND];
	int n = 0, tries = 0;
	bool queued = false;
	proto_reply rep;
	for (; n < ENDLESS; n++) {
		CHECK(create(s, &g, &o[n]) == 0);
		CHECK(run(s, &o[n], 0, &rep) == 0 && rep.ok);
		proto_reply_free(&rep);
	}
	/* The two endless runs keep both workers busy, except while one's
	 * solved frame waits for its previous frame's output (the scheduler
	 * then lends the worker to the queue: on a loaded machine the output
	 * thread can lag). A run that arrives then starts at once, which is
	 * right; one that arrives while both solve must be queued, with its
	 * position. So bounded runs are added until one is queued. */
	while (!queued && tries < TRIES) {
		CHECK(create(s, &g, &o[n]) == 0);
		CHECK(run(s, &o[n], 8, &rep) == 0 && rep.ok);
		queued = rep.u.run.state == PROTO_STATE_QUEUED && rep.u.run.queue_position >= 1;
		if (!queued)
			printf("  run %d on 2 busy workers: %s (a worker was free)\n", n + 1,
			       proto_state_name(rep.u.run.state));
		proto_reply_free(&rep);
		n++, tries++;
	}
	CHECKF(queued, "no run was queued behind 2 endless runs on 2 workers in %d tries", tries);
	for (int i = 0; i < BEHIND; i++, n++) {
		CHECK(create(s, &g, &o[n]) == 0);
		CHECK(run(s, &o[n], 8, &rep) == 0 && rep.ok);
		proto_reply_free(&rep);
	}
	/* The workers are shared fairly: the bounded runs finish while the
	 * endless ones go on. */
	for (int i = ENDLESS; i < n; i++) {
		uint32_t done = 0;
		CHECK(wait_stopped(s, o[i].id, 60000, &done) == PROTO_STATE_DONE && done == 8);
	}
	for (int i = 0; i < ENDLESS; i++) {
		proto_request req;
		session_req(&req, PROTO_OP_SESSION_CANCEL, &o[i]);
		CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
		proto_reply_free(&rep);
		uint32_t done = 0;
		CHECK(wait_stopped(s, o[i].id, 60000, &done) == PROTO_STATE_CANCELED && done >= 1);
	}
	for (int i = 0; i < n; i++)
		CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o[i]));
	nng_close(s);
	itest_grid_free(&g);
}

/* Collider ops reach a running session between two frames (the op waits
 * for the frame in flight instead of failing), and need the owner token. */
static void test_colliders(void)
{
	CHECK(main_up);
	nng_socket s;
	CHECK(open_req(ipc_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 16);
	owned o;
	CHECK(create(s, &g, &o) == 0);
	proto_reply rep;
	CHECK(run(s, &o, 0, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	uint32_t done = 0;
	for (int t = 0; t < 250 && done < 2; t++) {
		CHECK(status(s, o.id, &rep) == 0 && rep.ok);
		done = rep.u.status.frames_done;
		proto_reply_free(&rep);
		usleep(10000);
	}
	proto_request req;
	session_req(&req, PROTO_OP_COLLIDER_ADD, &o);
	drape_collider_desc_default(&req.u.collider_add.desc);
	req.u.collider_add.desc.shape = DRAPE_SHAPE_SPHERE;
	req.u.collider_add.desc.center[0] = 0.5f;
	req.u.collider_add.desc.center[1] = 0.5f;
	req.u.collider_add.desc.center[2] = 0.5f;
	req.u.collider_add.desc.radius = 0.25f;
	for (int i = 0; i < 3; i++) {
		CHECK(itest_call(s, &req, &rep) == 0);
		CHECKF(rep.ok && rep.u.collider_add.index == (uint32_t)i, "collider.add %d: %s", i,
		       rep.ok ? "wrong index" : rep.error.message);
		proto_reply_free(&rep);
		req.id = 0;
	}
	req.has_token = false;
	CHECK(itest_call(s, &req, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_EPERM);
	proto_reply_free(&rep);
	CHECK(status(s, o.id, &rep) == 0 && rep.ok);
	CHECKF(rep.u.status.colliders == 3 && rep.u.status.state == PROTO_STATE_RUNNING, "colliders %u, %s",
	       rep.u.status.colliders, proto_state_name(rep.u.status.state));
	const uint32_t before = rep.u.status.frames_done;
	proto_reply_free(&rep);
	usleep(100000);
	CHECK(status(s, o.id, &rep) == 0 && rep.ok && rep.u.status.frames_done > before);
	proto_reply_free(&rep);
	CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o));

	/* preflight runs as a job too: two triangles crossing each other. */
	const float pos[] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0.2f, 0.2f, -1, 0.2f, 0.2f, 1, 0.3f, -1, 0 };
	const uint32_t tri[] = { 0, 1, 2, 3, 4, 5 };
	proto_request_init(&req, PROTO_OP_PREFLIGHT);
	req.u.preflight.mesh.positions = pos;
	req.u.preflight.mesh.vertex_count = 6;
	req.u.preflight.mesh.triangles = tri;
	req.u.preflight.mesh.triangle_count = 2;
	CHECK(itest_call(s, &req, &rep) == 0);
	CHECKF(rep.ok && rep.u.preflight.count == 1 && rep.u.preflight.pair_count == 1, "preflight: %s",
	       rep.ok ? "wrong count" : rep.error.message);
	proto_reply_free(&rep);
	nng_close(s);
	itest_grid_free(&g);
}

/* A run whose state becomes non-finite stops as failed, with the reason
 * and the frame, and an end message on the stream. */
static void test_failed_run(void)
{
	CHECK(main_up);
	nng_socket s, sub;
	CHECK(open_req(ipc_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 4);
	proto_request req;
	proto_reply rep;
	create_req(&req, &g);
	req.u.create.params.values.gravity[1] = -3e38f;
	req.u.create.params.mask |= PROTO_PARAM_GRAVITY;
	CHECK(itest_call(s, &req, &rep) == 0);
	CHECKF(rep.ok, "create: %s", rep.error.message);
	owned o = { rep.u.create.session, { 0 } };
	memcpy(o.token, rep.u.create.token, PROTO_TOKEN_SIZE);
	proto_reply_free(&rep);

	CHECK(nng_sub0_open(&sub) == 0);
	char topic[PROTO_TOPIC_LEN + 1];
	proto_stream_topic(o.id, topic);
	nng_socket_set(sub, NNG_OPT_SUB_SUBSCRIBE, topic, PROTO_TOPIC_LEN);
	nng_socket_set_ms(sub, NNG_OPT_RECVTIMEO, 5000);
	CHECK(nng_dial(sub, stream_ipc, NULL, 0) == 0);
	usleep(200000);

	CHECK(run(s, &o, 20, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	uint32_t done = 0;
	CHECK(wait_stopped(s, o.id, 5000, &done) == PROTO_STATE_FAILED);
	CHECK(status(s, o.id, &rep) == 0 && rep.ok);
	CHECKF(rep.u.status.has_error && rep.u.status.error.code == DRAPE_ENONFINITE &&
		       rep.u.status.error_frame == rep.u.status.frames_done + 1 && rep.u.status.frames_done < 20,
	       "error %s at %u, frames %u", drape_err_name(rep.u.status.error.code), rep.u.status.error_frame,
	       rep.u.status.frames_done);
	proto_reply_free(&rep);
	/* The end message says failed, after any frames that were good. */
	bool ended = false;
	while (!ended) {
		void *m = NULL;
		size_t ml = 0;
		CHECK(nng_recv(sub, &m, &ml, NNG_FLAG_ALLOC) == 0);
		proto_stream_msg sm;
		drape_err dr = proto_stream_decode(m, ml, 0, &sm, NULL);
		nng_free(m, ml);
		CHECK(dr == DRAPE_OK);
		if (sm.kind == PROTO_STREAM_END) {
			CHECK(sm.state == PROTO_STATE_FAILED && sm.has_error && sm.error.code == DRAPE_ENONFINITE);
			ended = true;
		}
		proto_stream_free(&sm);
	}
	nng_close(sub);
	CHECK(session_op_ok(s, PROTO_OP_SESSION_DELETE, &o));
	nng_close(s);
	itest_grid_free(&g);
}

/* --auth-token-file: every request but hello needs the token; such a
 * daemon has no PUB stream to announce, token or not. */
static void test_auth(void)
{
	char url[300], logp[300], state[300], tokfile[300];
	snprintf(url, sizeof url, "ipc://%s/auth", tmpdir);
	snprintf(logp, sizeof logp, "%s/auth.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-auth", tmpdir);
	snprintf(tokfile, sizeof tokfile, "%s/token", tmpdir);
	FILE *f = fopen(tokfile, "w");
	CHECK(f != NULL);
	fputs("s3cret-token\n", f);
	fclose(f);
	const char *args[] = { "--listen", url, "--state-dir", state, "--auth-token-file", tokfile, NULL };
	pid_t pid = itest_spawn(logp, args);
	CHECK(pid > 0);
	CHECK(wait_ready(url, 5000) == 0);
	nng_socket s;
	CHECK(open_req(url, &s) == 0);
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_HELLO);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok && rep.u.hello.auth_required && rep.u.hello.stream_url_count == 0);
	proto_reply_free(&rep);
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	CHECK(itest_call(s, &req, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_EPERM);
	CHECK(strstr(rep.error.message, "auth: missing or wrong") != NULL);
	proto_reply_free(&rep);
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	req.auth = (const uint8_t *)"s3cret-tokeN";
	req.auth_len = 12;
	CHECK(itest_call(s, &req, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_EPERM);
	proto_reply_free(&rep);
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	req.auth = (const uint8_t *)"s3cret-token";
	req.auth_len = 12;
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	proto_request_init(&req, PROTO_OP_HELLO);
	req.auth = (const uint8_t *)"s3cret-token";
	req.auth_len = 12;
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok && rep.u.hello.stream_url_count == 0);
	proto_reply_free(&rep);
	nng_close(s);
	kill(pid, SIGTERM);
	CHECK(wait_exit(pid, 5000) == 0);
}

/* Several clients at once, each on its own socket: every one gets all of
 * its own frames, and none waits for another's requests. */
typedef struct worker {
	pthread_t thread;
	int index;
	int ok;
	char why[128];
} worker;

static void *client_thread(void *arg)
{
	worker *w = arg;
	nng_socket s;
	itest_grid g;
	itest_grid_make(&g, 6 + (uint32_t)w->index);
	snprintf(w->why, sizeof w->why, "connect");
	if (open_req(w->index % 2 ? tcp_url : ipc_url, &s) != 0) {
		itest_grid_free(&g);
		return NULL;
	}
	owned o;
	proto_request req;
	proto_reply rep;
	uint32_t done = 0, got = 0;
	snprintf(w->why, sizeof w->why, "create/run");
	if (create(s, &g, &o) != 0 || run(s, &o, 12, &rep) != 0)
		goto out;
	proto_reply_free(&rep);
	snprintf(w->why, sizeof w->why, "wait");
	if (wait_stopped(s, o.id, 20000, &done) != PROTO_STATE_DONE || done != 12)
		goto out;
	/* Fetch in pieces of five, as a client filling gaps would. */
	while (got < 12) {
		session_req(&req, PROTO_OP_FRAMES_GET, &o);
		req.u.frames_get.first = got + 1;
		req.u.frames_get.count = 5;
		if (itest_call(s, &req, &rep) != 0 || !rep.ok || rep.u.frames_get.count == 0) {
			snprintf(w->why, sizeof w->why, "frames.get from %u", got + 1);
			goto out;
		}
		for (uint32_t i = 0; i < rep.u.frames_get.count; i++) {
			const proto_frame *f = &rep.u.frames_get.frames[i];
			if (f->index != got + 1 || f->vertex_count != g.nv) {
				proto_reply_free(&rep);
				snprintf(w->why, sizeof w->why, "frame %u out of order", f->index);
				goto out;
			}
			got++;
		}
		proto_reply_free(&rep);
	}
	session_req(&req, PROTO_OP_SESSION_DELETE, &o);
	if (itest_call(s, &req, &rep) == 0 && rep.ok)
		w->ok = 1;
	proto_reply_free(&rep);
out:
	nng_close(s);
	itest_grid_free(&g);
	return NULL;
}

static void test_concurrent_clients(void)
{
	CHECK(main_up);
	worker w[8];
	memset(w, 0, sizeof w);
	for (int i = 0; i < 8; i++) {
		w[i].index = i;
		CHECK(pthread_create(&w[i].thread, NULL, client_thread, &w[i]) == 0);
	}
	int ok = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(w[i].thread, NULL);
		ok += w[i].ok;
	}
	for (int i = 0; i < 8; i++)
		CHECKF(w[i].ok, "client %d failed at %s", i, w[i].why);
	CHECK(ok == 8);
}

/* A daemon with --idle-timeout 1 deletes an idle session. */
static void test_idle_expiry(void)
{
	char url[300], logp[300], state[300];
	snprintf(url, sizeof url, "ipc://%s/idle", tmpdir);
	snprintf(logp, sizeof logp, "%s/idle.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-idle", tmpdir);
	const char *args[] = { "--listen", url, "--state-dir", state, "--idle-timeout", "1", NULL };
	pid_t pid = itest_spawn(logp, args);
	CHECK(pid > 0);
	CHECK(wait_ready(url, 5000) == 0);
	nng_socket s;
	CHECK(open_req(url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 3);
	owned o;
	CHECK(create(s, &g, &o) == 0);
	proto_reply rep;
	CHECK(status(s, o.id, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	usleep(1700000);
	CHECK(status(s, o.id, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_ENOTFOUND);
	proto_reply_free(&rep);
	/* Its state directory went with it. */
	char dir[400];
	snprintf(dir, sizeof dir, "%s/sessions/%u", state, o.id);
	struct stat st;
	CHECK(stat(dir, &st) != 0);
	nng_close(s);
	itest_grid_free(&g);
	kill(pid, SIGTERM);
	CHECK(wait_exit(pid, 5000) == 0);
}

/* SIGKILL mid-run, restart on the same state dir: the session is listed,
 * its frames are there, and resume continues bit-identically. A corrupted
 * session file is skipped, not loaded. */
static void test_crash_recovery(void)
{
	char url[300], logp[300], state[300];
	snprintf(url, sizeof url, "ipc://%s/crash", tmpdir);
	snprintf(logp, sizeof logp, "%s/crash.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-crash", tmpdir);
	/* --no-resume-interrupted: this test resumes by hand. */
	const char *args[] = { "--listen", url, "--state-dir", state, "--checkpoint-every", "4", "--threads", "1",
			       "--no-resume-interrupted", NULL };
	pid_t pid = itest_spawn(logp, args);
	CHECK(pid > 0);
	CHECK(wait_ready(url, 5000) == 0);
	nng_socket s;
	CHECK(open_req(url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 24);
	owned o, victim;
	CHECK(create(s, &g, &o) == 0);
	CHECK(create(s, &g, &victim) == 0);
	proto_reply rep;
	proto_request req;
	/* A collider, so its op log is part of what must come back. */
	session_req(&req, PROTO_OP_COLLIDER_ADD, &o);
	sphere_desc(&req.u.collider_add.desc);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	const uint32_t target = 40;
	CHECK(run(s, &o, target, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	uint32_t done = 0;
	for (int t = 0; t < 500 && done < 9; t++) {
		CHECK(status(s, o.id, &rep) == 0 && rep.ok);
		done = rep.u.status.frames_done;
		proto_reply_free(&rep);
		usleep(5000);
	}
	CHECK(done >= 9 && done < target);
	kill(pid, SIGKILL);
	CHECK(wait_exit(pid, 5000) != -1);
	nng_close(s);

	/* Corrupt the other session's inputs. */
	char path[400];
	snprintf(path, sizeof path, "%s/sessions/%u/session.bin", state, victim.id);
	FILE *f = fopen(path, "r+b");
	CHECK(f != NULL);
	/* Flip the byte rather than write a constant, which the byte may
	 * already hold (it can be part of a random owner token). */
	fseek(f, 40, SEEK_SET);
	int byte = fgetc(f);
	CHECK(byte != EOF);
	fseek(f, 40, SEEK_SET);
	fputc(byte ^ 0xff, f);
	fclose(f);

	pid = itest_spawn(logp, args);
	CHECK(pid > 0);
	CHECK(wait_ready(url, 5000) == 0);
	CHECK(open_req(url, &s) == 0);
	CHECK(status(s, victim.id, &rep) == 0 && !rep.ok && rep.error.code == DRAPE_ENOTFOUND);
	proto_reply_free(&rep);
	CHECK(status(s, o.id, &rep) == 0 && rep.ok);
	const uint32_t kept = rep.u.status.frames_done;
	const proto_state st = rep.u.status.state;
	proto_reply_free(&rep);
	CHECKF(kept >= done && st == PROTO_STATE_CANCELED, "after restart: %u frames (had %u), %s", kept, done,
	       proto_state_name(st));
	CHECK(status(s, o.id, &rep) == 0 && rep.ok && rep.u.status.colliders == 1);
	proto_reply_free(&rep);
	float *got = malloc(g.nv * 12u);
	CHECK(get_frame(s, &o, kept, got, g.nv) == 0);
	float *want = solve_in_process_with(&g, kept, true);
	CHECK(memcmp(got, want, g.nv * 12u) == 0);
	free(want);

	session_req(&req, PROTO_OP_SESSION_RESUME, &o);
	CHECK(itest_call(s, &req, &rep) == 0 && rep.ok && rep.u.run.frames_target == target);
	proto_reply_free(&rep);
	CHECK(wait_stopped(s, o.id, 10000, &done) == PROTO_STATE_DONE && done == target);
	CHECK(get_frame(s, &o, target, got, g.nv) == 0);
	want = solve_in_process_with(&g, target, true);
	CHECK(memcmp(got, want, g.nv * 12u) == 0);
	/* The sphere mattered: without it the frame differs. */
	free(want);
	want = solve_in_process(&g, target);
	CHECK(memcmp(got, want, g.nv * 12u) != 0);
	/* An early frame from the disk cache is still there, too. */
	CHECK(get_frame(s, &o, 2, got, g.nv) == 0);
	free(want);
	want = solve_in_process_with(&g, 2, true);
	CHECK(memcmp(got, want, g.nv * 12u) == 0);
	free(want);
	free(got);

	char logbuf[65536];
	f = fopen(logp, "rb");
	CHECK(f != NULL);
	size_t n = fread(logbuf, 1, sizeof logbuf - 1, f);
	fclose(f);
	logbuf[n] = '\0';
	CHECK(strstr(logbuf, "skipping") != NULL && strstr(logbuf, "checksum mismatch") != NULL);
	nng_close(s);
	itest_grid_free(&g);
	kill(pid, SIGTERM);
	CHECK(wait_exit(pid, 5000) == 0);
}

/* SIGTERM: the shared daemon exits 0 (with a run in flight) and checkpoints. */
static void test_sigterm(void)
{
	CHECK(main_up);
	nng_socket s;
	CHECK(open_req(ipc_url, &s) == 0);
	itest_grid g;
	itest_grid_make(&g, 8);
	owned o;
	CHECK(create(s, &g, &o) == 0);
	proto_reply rep;
	CHECK(run(s, &o, 0, &rep) == 0 && rep.ok);
	proto_reply_free(&rep);
	usleep(100000);
	nng_close(s);
	kill(main_pid, SIGTERM);
	int st = wait_exit(main_pid, 5000);
	main_up = false;
	CHECKF(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
	char path[400];
	snprintf(path, sizeof path, "%s/sessions/%u/state.bin", state_main, o.id);
	struct stat sb;
	CHECK(stat(path, &sb) == 0 && sb.st_size > 0);
	itest_grid_free(&g);
}

static void test_usage_errors(void)
{
	char logp[300];
	snprintf(logp, sizeof logp, "%s/usage.log", tmpdir);
	const char *a1[] = { "--no-such-option", NULL };
	pid_t pid = itest_spawn(logp, a1);
	int st = wait_exit(pid, 5000);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 64);
	const char *a2[] = { "--listen", "tcp://0.0.0.0:7999", NULL };
	pid = itest_spawn(logp, a2);
	st = wait_exit(pid, 5000);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 64);
	char url[300];
	snprintf(url, sizeof url, "ipc://%s/nodir/x/y", tmpdir);
	const char *a3[] = { "--listen", url, "--state-dir", "/proc/drape-cannot", NULL };
	pid = itest_spawn(logp, a3);
	st = wait_exit(pid, 5000);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 73);
}

static const check_test tests[] = {
	CHECK_TEST(test_start),	      CHECK_TEST(test_hello),	       CHECK_TEST(test_happy_path),
	CHECK_TEST(test_bad_requests), CHECK_TEST(test_nngcat_garbage), CHECK_TEST(test_replay),
	CHECK_TEST(test_owner_token),  CHECK_TEST(test_cancel),	       CHECK_TEST(test_queue),
	CHECK_TEST(test_colliders),    CHECK_TEST(test_failed_run),     CHECK_TEST(test_auth),
	CHECK_TEST(test_concurrent_clients),
	CHECK_TEST(test_idle_expiry),  CHECK_TEST(test_crash_recovery), CHECK_TEST(test_sigterm),
	CHECK_TEST(test_usage_errors),
};

int main(int argc, char **argv)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/drape-raw-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		printf("0 passed, 1 failed\n");
		return 1;
	}
	atexit(itest_kill_all);
	signal(SIGINT, itest_on_fatal);
	signal(SIGTERM, itest_on_fatal);
	signal(SIGSEGV, itest_on_fatal);
	signal(SIGABRT, itest_on_fatal);
	signal(SIGPIPE, SIG_IGN);
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	itest_kill_all();
	if (rc == 0 && getenv("DRAPE_KEEP_TMP") == NULL) {
		char cmd[400];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	} else {
		fprintf(stderr, "logs kept in %s\n", tmpdir);
	}
	return rc;
}
