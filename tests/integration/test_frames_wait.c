/*
 * Black-box test of held frames.get requests (server/waiters.c) over the
 * wire protocol, with nng and the proto codec only: a real draped ($DRAPED)
 * on a fresh ipc:// socket. A frames.get with wait_ms for a frame not solved
 * yet is answered when that frame is stored, when its wait runs out, when
 * the run ends (live false) or when the session is deleted (ENOTFOUND); it
 * needs both tokens like any read of frames; and however many readers wait,
 * other requests are still answered, because held requests may take only
 * SRV_CONTEXTS - SRV_CONTEXTS_FREE of the daemon's contexts.
 *
 * Every wait is for a condition with a generous deadline; the only timed
 * bound is that a held request is not answered before its wait_ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "server/control.h"
#include "tests/unit/check.h"
#include "tests/integration/itest.h"

static char tmpdir[256], url[320], logpath[320], tokfile[320];
static pid_t daemon_pid = -1;

#define TOKEN "frames-wait-token"

static void stop_daemon(void)
{
	itest_pid_stop(daemon_pid, SIGKILL, 10000);
	daemon_pid = -1;
}

static void on_fatal(int sig)
{
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- Requests ------------------------------------------------------------------ */

static int open_req(nng_socket *s)
{
	return itest_req_open(url, 60000, 10000, s);
}

/* Encodes and sends req, with the auth token when `auth` (no reply
 * awaited). */
static int send_req_auth(nng_socket s, proto_request *req, bool auth)
{
	req->id = itest_next_id();
	if (auth) {
		req->auth = (const uint8_t *)TOKEN;
		req->auth_len = strlen(TOKEN);
	}
	proto_buf b = {NULL, 0};
	drape_error err;
	if (proto_request_encode(req, &b, &err) != DRAPE_OK) {
		printf("  encode: %s\n", err.message);
		return -1;
	}
	int rv = nng_send(s, b.data, b.len, 0);
	proto_buf_free(&b);
	return rv;
}

static int send_req(nng_socket s, proto_request *req)
{
	return send_req_auth(s, req, true);
}

/* Receives and decodes the reply to op (flags: 0 or NNG_FLAG_NONBLOCK).
 * 0, NNG_EAGAIN when none is there yet, else an error. */
static int recv_rep(nng_socket s, proto_op op, proto_reply *rep, int flags)
{
	void *r = NULL;
	size_t rl = 0;
	int rv = nng_recv(s, &r, &rl, NNG_FLAG_ALLOC | flags);
	if (rv != 0)
		return rv;
	drape_error err;
	drape_err rc = proto_reply_decode(r, rl, 0, op, rep, &err);
	nng_free(r, rl);
	if (rc != DRAPE_OK) {
		printf("  reply decode: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int call(nng_socket s, proto_request *req, proto_reply *rep)
{
	int rv = send_req(s, req);
	return rv != 0 ? rv : recv_rep(s, req->op, rep, 0);
}

typedef struct owned {
	uint32_t id;
	uint8_t token[PROTO_TOKEN_SIZE];
} owned;

static void session_req(proto_request *req, proto_op op, const owned *o)
{
	proto_request_init(req, op);
	req->has_session = true;
	req->session = o->id;
	req->has_token = true;
	memcpy(req->token, o->token, PROTO_TOKEN_SIZE);
}

static void frames_req(proto_request *req, const owned *o, uint32_t first, uint32_t wait_ms)
{
	session_req(req, PROTO_OP_FRAMES_GET, o);
	req->u.frames_get.first = first;
	req->u.frames_get.count = 4;
	req->u.frames_get.wait_ms = wait_ms;
}

/* A pinned n x n grid sheet, created; 0 or -1. */
static int create(nng_socket s, uint32_t n, owned *o)
{
	const uint32_t nv = (n + 1) * (n + 1), nt = 2 * n * n;
	float *pos = malloc(nv * 12u);
	uint32_t *tri = malloc(nt * 12u);
	uint32_t pins[2] = {0, n};
	if (pos == NULL || tri == NULL) {
		free(pos);
		free(tri);
		return -1;
	}
	for (uint32_t j = 0; j <= n; j++)
		for (uint32_t i = 0; i <= n; i++) {
			float *p = pos + 3 * (j * (n + 1) + i);
			p[0] = (float)i / (float)n;
			p[1] = 1.0f;
			p[2] = (float)j / (float)n;
		}
	for (uint32_t j = 0, k = 0; j < n; j++)
		for (uint32_t i = 0; i < n; i++, k += 6) {
			uint32_t a = j * (n + 1) + i, b = a + 1, c = a + n + 1, d = c + 1;
			uint32_t t[6] = {a, c, b, b, c, d};
			memcpy(tri + k, t, sizeof t);
		}
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_CREATE);
	req.u.create.mesh.positions = pos;
	req.u.create.mesh.vertex_count = nv;
	req.u.create.mesh.triangles = tri;
	req.u.create.mesh.triangle_count = nt;
	req.u.create.pins = pins;
	req.u.create.pin_count = 2;
	int rc = -1;
	if (call(s, &req, &rep) == 0) {
		if (rep.ok) {
			o->id = rep.u.create.session;
			memcpy(o->token, rep.u.create.token, PROTO_TOKEN_SIZE);
			rc = 0;
		} else {
			printf("  create: %s\n", rep.error.message);
		}
		proto_reply_free(&rep);
	}
	free(pos);
	free(tri);
	return rc;
}

/* An owner op whose reply is only ok; frames is session.run's count. */
static bool owner_op(nng_socket s, proto_op op, const owned *o, uint32_t frames)
{
	proto_request req;
	proto_reply rep;
	session_req(&req, op, o);
	req.u.run.frames = frames;
	if (call(s, &req, &rep) != 0)
		return false;
	bool ok = rep.ok;
	if (!ok)
		printf("  %s: %s\n", proto_op_name(op), rep.error.message);
	proto_reply_free(&rep);
	return ok;
}

/* frames_done of session o, or -1. */
static int64_t frames_done(nng_socket s, const owned *o)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_STATUS);
	req.has_session = true;
	req.session = o->id;
	if (call(s, &req, &rep) != 0)
		return -1;
	int64_t d = rep.ok ? (int64_t)rep.u.status.frames_done : -1;
	proto_reply_free(&rep);
	return d;
}

/* A session running until cancelled, with at least one frame solved. */
static bool running_session(nng_socket s, owned *o)
{
	if (create(s, 24, o) != 0 || !owner_op(s, PROTO_OP_SESSION_RUN, o, 0))
		return false;
	double t0 = itest_now_ms();
	while (itest_now_ms() - t0 < 30000) {
		if (frames_done(s, o) >= 1)
			return true;
		itest_sleep_ms(10);
	}
	return false;
}

/* Frames far beyond anything the test lets the session solve. */
#define FAR_AHEAD 100000000u

/* ---- Tests ------------------------------------------------------------------------- */

static void test_start(void)
{
	snprintf(url, sizeof url, "ipc://%s/ctl", tmpdir);
	snprintf(logpath, sizeof logpath, "%s/draped.log", tmpdir);
	snprintf(tokfile, sizeof tokfile, "%s/token", tmpdir);
	FILE *f = fopen(tokfile, "w");
	CHECK(f != NULL);
	fputs(TOKEN "\n", f);
	fclose(f);
	char state[320];
	snprintf(state, sizeof state, "%s/state", tmpdir);
	const char *bin = getenv("DRAPED");
	CHECKF(bin != NULL && access(bin, X_OK) == 0, "$DRAPED must name the draped binary");
	const char *argv[] = {bin, "--listen", url, "--state-dir", state, "--auth-token-file", tokfile, "--threads", "1",
			      "--pool-threads", "1", "--max-frames-retained", "64", "--idle-timeout", "0",
			      /* 240 readers from one address: more than a peer's default. */
			      "--max-connections", "512", "--max-connections-per-peer", "512", NULL};
	daemon_pid = itest_exec_child(argv, logpath, true);
	CHECK(daemon_pid >= 0);
	double t0 = itest_now_ms();
	bool up = false;
	while (!up && itest_now_ms() - t0 < 10000) {
		nng_socket s;
		if (open_req(&s) == 0) {
			proto_request req;
			proto_reply rep;
			proto_request_init(&req, PROTO_OP_HELLO);
			nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 500);
			up = call(s, &req, &rep) == 0 && rep.ok;
			if (up)
				proto_reply_free(&rep);
			nng_close(s);
		}
		if (!up)
			itest_sleep_ms(50);
	}
	CHECKF(up, "draped did not answer on %s", url);
}

/* A held frames.get is answered with the frame it waits for, as soon as
 * that frame is stored: long before its wait_ms. */
static void test_answered_when_frame_stored(void)
{
	nng_socket s;
	owned o;
	CHECK(open_req(&s) == 0);
	CHECK(running_session(s, &o));
	int64_t d = frames_done(s, &o);
	CHECK(d >= 1);
	proto_request req;
	proto_reply rep;
	frames_req(&req, &o, (uint32_t)d + 2, 30000);
	double t0 = itest_now_ms();
	CHECK(call(s, &req, &rep) == 0);
	double el = itest_now_ms() - t0;
	CHECKF(rep.ok, "%s", rep.error.message);
	CHECKF(rep.u.frames_get.count >= 1 && rep.u.frames_get.frames[0].index == (uint32_t)d + 2,
	       "%u frames from %u, asked from %u", rep.u.frames_get.count,
	       rep.u.frames_get.count ? rep.u.frames_get.frames[0].index : 0, (unsigned)d + 2);
	CHECK(rep.u.frames_get.has_live && rep.u.frames_get.live);
	CHECKF(el < 20000, "answered after %.0f ms", el);
	proto_reply_free(&rep);
	CHECK(owner_op(s, PROTO_OP_SESSION_DELETE, &o, 0));
	nng_close(s);
}

/* A held frames.get whose frame does not come is answered empty once its
 * wait runs out, not before, and says the run goes on. */
static void test_wait_runs_out(void)
{
	nng_socket s;
	owned o;
	CHECK(open_req(&s) == 0);
	CHECK(running_session(s, &o));
	proto_request req;
	proto_reply rep;
	frames_req(&req, &o, FAR_AHEAD, 400);
	double t0 = itest_now_ms();
	CHECK(call(s, &req, &rep) == 0);
	double el = itest_now_ms() - t0;
	CHECKF(rep.ok, "%s", rep.error.message);
	CHECK(rep.u.frames_get.count == 0 && rep.u.frames_get.has_live && rep.u.frames_get.live);
	CHECKF(el >= 390, "answered after %.0f ms, before its 400 ms wait", el);
	proto_reply_free(&rep);
	CHECK(owner_op(s, PROTO_OP_SESSION_DELETE, &o, 0));
	nng_close(s);
}

/* The end of the run answers a held frames.get (live false), and a wait
 * on a session with no run going is answered at once. */
static void test_answered_when_run_ends(void)
{
	nng_socket a, b;
	owned o;
	CHECK(open_req(&a) == 0 && open_req(&b) == 0);
	CHECK(running_session(b, &o));
	proto_request req;
	proto_reply rep;
	frames_req(&req, &o, FAR_AHEAD, 30000);
	double t0 = itest_now_ms();
	CHECK(send_req(a, &req) == 0);
	/* The cancel may come before the frames.get is held; either way the
	 * reply must say that no frame is coming. */
	CHECK(owner_op(b, PROTO_OP_SESSION_CANCEL, &o, 0));
	CHECK(recv_rep(a, PROTO_OP_FRAMES_GET, &rep, 0) == 0);
	double el = itest_now_ms() - t0;
	CHECKF(rep.ok, "%s", rep.error.message);
	CHECK(rep.u.frames_get.count == 0 && rep.u.frames_get.has_live && !rep.u.frames_get.live);
	CHECKF(el < 20000, "answered after %.0f ms", el);
	proto_reply_free(&rep);

	frames_req(&req, &o, FAR_AHEAD, 30000);
	t0 = itest_now_ms();
	CHECK(call(a, &req, &rep) == 0);
	el = itest_now_ms() - t0;
	CHECK(rep.ok && rep.u.frames_get.count == 0 && !rep.u.frames_get.live);
	CHECKF(el < 20000, "a wait on a stopped session took %.0f ms", el);
	proto_reply_free(&rep);
	CHECK(owner_op(b, PROTO_OP_SESSION_DELETE, &o, 0));
	nng_close(a);
	nng_close(b);
}

/* Deleting the session answers its held frames.get with ENOTFOUND. */
static void test_answered_when_deleted(void)
{
	nng_socket a, b;
	owned o;
	CHECK(open_req(&a) == 0 && open_req(&b) == 0);
	CHECK(running_session(b, &o));
	proto_request req;
	proto_reply rep;
	frames_req(&req, &o, FAR_AHEAD, 30000);
	double t0 = itest_now_ms();
	CHECK(send_req(a, &req) == 0);
	CHECK(owner_op(b, PROTO_OP_SESSION_DELETE, &o, 0));
	CHECK(recv_rep(a, PROTO_OP_FRAMES_GET, &rep, 0) == 0);
	double el = itest_now_ms() - t0;
	CHECK(!rep.ok && rep.error.code == DRAPE_ENOTFOUND);
	CHECKF(strstr(rep.error.message, "session") != NULL, "%s", rep.error.message);
	CHECKF(el < 20000, "answered after %.0f ms", el);
	proto_reply_free(&rep);
	nng_close(a);
	nng_close(b);
}

/* A frames.get without the owner token, with a wrong one, or without the
 * auth token is refused at once (EPERM), never held; a wait_ms beyond the
 * cap is refused naming the field. */
static void test_needs_both_tokens(void)
{
	nng_socket s;
	owned o;
	CHECK(open_req(&s) == 0);
	CHECK(running_session(s, &o));
	for (int k = 0; k < 3; k++) {
		proto_request req;
		proto_reply rep;
		frames_req(&req, &o, 1, 30000);
		if (k == 0)
			req.has_token = false;
		else if (k == 1)
			req.token[5] ^= 0x40;
		int rv = send_req_auth(s, &req, k != 2);
		double t0 = itest_now_ms();
		CHECK(rv == 0 && recv_rep(s, PROTO_OP_FRAMES_GET, &rep, 0) == 0);
		double el = itest_now_ms() - t0;
		CHECKF(!rep.ok && rep.error.code == DRAPE_EPERM, "case %d: %s", k, rep.ok ? "ok" : rep.error.message);
		CHECKF(el < 20000, "case %d: refused after %.0f ms", k, el);
		proto_reply_free(&rep);
	}
	proto_request req;
	proto_reply rep;
	frames_req(&req, &o, 1, PROTO_MAX_FRAMES_WAIT_MS + 1);
	CHECK(call(s, &req, &rep) == 0);
	CHECK(!rep.ok && rep.error.code == DRAPE_EINVAL && strstr(rep.error.message, "wait_ms") != NULL);
	proto_reply_free(&rep);
	CHECK(owner_op(s, PROTO_OP_SESSION_DELETE, &o, 0));
	nng_close(s);
}

/* Held requests take at most SRV_CONTEXTS - SRV_CONTEXTS_FREE contexts:
 * with 16 more readers than that waiting, exactly 16 are answered at once
 * (empty, live), the others stay held, a status from another client is
 * still answered, and the end of the run answers every held one. */
static void test_many_readers_do_not_block_others(void)
{
	enum { HELD = SRV_CONTEXTS - SRV_CONTEXTS_FREE, EXTRA = 16, N = HELD + EXTRA };
	static nng_socket r[N];
	static bool answered[N];
	nng_socket s;
	owned o;
	CHECK(open_req(&s) == 0);
	CHECK(running_session(s, &o));
	int opened = 0;
	for (; opened < N; opened++)
		if (open_req(&r[opened]) != 0)
			break;
	CHECKF(opened == N, "opened %d of %d sockets", opened, N);
	for (int i = 0; i < N; i++) {
		proto_request req;
		frames_req(&req, &o, FAR_AHEAD, 30000);
		CHECK(send_req(r[i], &req) == 0);
		answered[i] = false;
	}
	/* Wait for the early answers: each must be empty and live. */
	int early = 0;
	bool bad = false;
	double t0 = itest_now_ms();
	while (early < EXTRA && itest_now_ms() - t0 < 20000) {
		for (int i = 0; i < N; i++) {
			proto_reply rep;
			if (answered[i] || recv_rep(r[i], PROTO_OP_FRAMES_GET, &rep, NNG_FLAG_NONBLOCK) != 0)
				continue;
			answered[i] = true;
			early++;
			bad |= !rep.ok || rep.u.frames_get.count != 0 || !rep.u.frames_get.live;
			proto_reply_free(&rep);
		}
		itest_sleep_ms(5);
	}
	CHECKF(early == EXTRA, "%d early answers, expected %d", early, EXTRA);
	CHECK(!bad);
	/* Another client is served while they wait. */
	nng_socket other;
	CHECK(open_req(&other) == 0);
	nng_socket_set_ms(other, NNG_OPT_RECVTIMEO, 10000);
	t0 = itest_now_ms();
	CHECK(frames_done(other, &o) >= 1);
	CHECKF(itest_now_ms() - t0 < 10000, "status took %.0f ms", itest_now_ms() - t0);
	nng_close(other);
	/* Still exactly EXTRA answered: the rest are held. */
	for (int i = 0; i < N; i++) {
		proto_reply rep;
		if (!answered[i] && recv_rep(r[i], PROTO_OP_FRAMES_GET, &rep, NNG_FLAG_NONBLOCK) == 0) {
			answered[i] = true;
			early++;
			proto_reply_free(&rep);
		}
	}
	CHECKF(early == EXTRA, "%d answered before the cancel, expected %d", early, EXTRA);
	/* The cancel answers every held one: no frame is coming. */
	CHECK(owner_op(s, PROTO_OP_SESSION_CANCEL, &o, 0));
	int ended = 0, not_live = 0;
	for (int i = 0; i < N; i++) {
		proto_reply rep;
		if (answered[i])
			continue;
		if (recv_rep(r[i], PROTO_OP_FRAMES_GET, &rep, 0) == 0) {
			ended++;
			not_live += rep.ok && !rep.u.frames_get.live;
			proto_reply_free(&rep);
		}
	}
	CHECKF(ended == HELD && not_live == HELD, "%d answered after the cancel (%d not live), expected %d", ended,
	       not_live, HELD);
	for (int i = 0; i < opened; i++)
		nng_close(r[i]);
	CHECK(owner_op(s, PROTO_OP_SESSION_DELETE, &o, 0));
	nng_close(s);
}

static const check_test tests[] = {
	CHECK_TEST(test_start),
	CHECK_TEST(test_answered_when_frame_stored),
	CHECK_TEST(test_wait_runs_out),
	CHECK_TEST(test_answered_when_run_ends),
	CHECK_TEST(test_answered_when_deleted),
	CHECK_TEST(test_needs_both_tokens),
	CHECK_TEST(test_many_readers_do_not_block_others),
};

int main(int argc, char **argv)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/drape-wait-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		printf("FAIL setup: mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	signal(SIGINT, on_fatal);
	signal(SIGTERM, on_fatal);
	signal(SIGSEGV, on_fatal);
	signal(SIGABRT, on_fatal);
	signal(SIGPIPE, SIG_IGN);
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	stop_daemon();
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
