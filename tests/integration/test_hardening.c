/*
 * Hardening of draped against hostile or unlucky clients (issue 15), over
 * its wire protocol with nng and the proto codec only: failing creates must
 * not leak or close file descriptors, error replies must be valid UTF-8,
 * an ipc mode wider than 0660 is warned about, and a session whose creator
 * went away before running it is reclaimed after --orphan-timeout.
 *
 * Every test waits for conditions (polling with generous deadlines), never
 * for fixed durations, and every daemon it starts is killed on every exit
 * path.
 */
#include <dirent.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "proto/proto.h"
#include "tests/unit/check.h"
#include "tests/integration/grid.h"
#include "tests/integration/itest.h"

/* ---- Daemons ------------------------------------------------------------- */

static char tmpdir[256];

/* Open descriptors of a process (entries of /proc/PID/fd), -1 on error. */
static int fd_count(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* True when the file holds needle (read whole; logs are small). */
static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return false;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* ---- Requests ------------------------------------------------------------ */

static int open_req(const char *url, nng_socket *s)
{
	return itest_req_open(url, 10000, 10000, s);
}

static int wait_ready(const char *url, int ms)
{
	const double end = itest_now_ms() + ms;
	while (itest_now_ms() < end) {
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
		itest_sleep_ms(50);
	}
	return -1;
}

static void create_req(proto_request *req, const itest_grid *g)
{
	proto_request_init(req, PROTO_OP_SESSION_CREATE);
	req->u.create.mesh.positions = g->pos;
	req->u.create.mesh.vertex_count = g->nv;
	req->u.create.mesh.triangles = g->tri;
	req->u.create.mesh.triangle_count = g->nt;
	req->u.create.pins = g->pins;
	req->u.create.pin_count = 2;
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
	if (itest_call(s, &req, &rep) != 0)
		return -1;
	if (!rep.ok) {
		printf("  create: %s\n", rep.error.message);
		proto_reply_free(&rep);
		return -1;
	}
	o->id = rep.u.create.session;
	memcpy(o->token, rep.u.create.token, PROTO_TOKEN_SIZE);
	proto_reply_free(&rep);
	return 0;
}

/* True when session id is in session.list (asked on s). */
static int listed(nng_socket s, uint32_t id)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	if (itest_call(s, &req, &rep) != 0 || !rep.ok)
		return -1;
	int found = 0;
	for (uint32_t i = 0; i < rep.u.list.count; i++)
		if (rep.u.list.sessions[i].id == id)
			found = 1;
	proto_reply_free(&rep);
	return found;
}

/* ---- Failed creates keep every descriptor ---------------------------------- */

/*
 * A create the solver refuses (a triangle naming one vertex twice, as an OBJ
 * face `f 1 1 2` gives) used to free a half-built session whose frame store
 * was still zeroed, closing descriptor 0 of the daemon; the slot was then
 * reused by an nng connection that the next failing create closed under
 * nng, and the daemon stopped answering. Each iteration dials a fresh
 * connection, so a connection would land in a freed slot.
 */
static void test_failed_creates_keep_fds(void)
{
	char url[300], log[300], state[300];
	snprintf(url, sizeof url, "ipc://%s/fds", tmpdir);
	snprintf(log, sizeof log, "%s/fds.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-fds", tmpdir);
	const char *args[] = { "--listen", url, "--state-dir", state, "--threads", "1", NULL };
	pid_t pid = itest_spawn(log, args);
	CHECK(pid > 0);
	CHECKF(wait_ready(url, 10000) == 0, "daemon not answering on %.200s", url);
	/* The ready check's own connection is closed by now on our side; the
	 * daemon's count is taken once it has settled (unchanged for 25 polls
	 * in a row), so that close is not counted as a leak later. */
	int before = fd_count(pid), same = 0;
	for (double end = itest_now_ms() + 10000; same < 25 && itest_now_ms() < end; same++) {
		itest_sleep_ms(20);
		const int n = fd_count(pid);
		if (n != before) {
			before = n;
			same = 0;
		}
	}
	CHECK(before > 0);

	itest_grid g;
	itest_grid_make(&g, 4);
	/* Triangle 5 names vertex 6 twice. */
	g.tri[5 * 3 + 1] = g.tri[5 * 3 + 0];
	const int rounds = 200;
	int refused = 0, answered = 0;
	for (int i = 0; i < rounds; i++) {
		nng_socket s;
		if (open_req(url, &s) != 0)
			break;
		proto_request req;
		proto_reply rep;
		create_req(&req, &g);
		if (itest_call(s, &req, &rep) == 0) {
			answered++;
			if (!rep.ok && rep.error.code == DRAPE_EINVAL &&
			    strstr(rep.error.message, "triangles[5]") != NULL &&
			    strstr(rep.error.message, "repeated") != NULL)
				refused++;
			else if (refused == i)
				printf("  create %d: %s\n", i, rep.ok ? "accepted" : rep.error.message);
			proto_reply_free(&rep);
		}
		nng_close(s);
		if (answered != i + 1)
			break;
	}
	itest_grid_free(&g);
	/* The closes of the test's connections reach the daemon a little
	 * later; wait for its count to settle back (or time out). */
	int after = fd_count(pid);
	for (double end = itest_now_ms() + 10000; after != before && itest_now_ms() < end; after = fd_count(pid))
		itest_sleep_ms(20);
	printf("  %d failing creates: %d refused naming triangles[5]; daemon fds %d before, %d after\n", rounds,
	       refused, before, after);
	const bool alive = wait_ready(url, 5000) == 0;
	itest_kill(pid);
	CHECKF(answered == rounds, "only %d of %d creates were answered", answered, rounds);
	CHECKF(refused == rounds, "only %d of %d creates were refused naming triangles[5]", refused, rounds);
	CHECKF(alive, "the daemon stopped answering after the failing creates");
	CHECKF(after == before, "daemon fds %d before, %d after", before, after);
}

/* ---- Error replies are valid UTF-8 ------------------------------------------ */

/* Finds error.message in a reply's bytes (a strict reader's view). */
static bool reply_message(const void *data, size_t len, char *out, size_t cap, size_t *n)
{
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	bool found = false;
	if (msgpack_unpack_next(&u, data, len, NULL) == MSGPACK_UNPACK_SUCCESS && u.data.type == MSGPACK_OBJECT_MAP) {
		const msgpack_object_map *m = &u.data.via.map;
		for (uint32_t i = 0; i < m->size; i++) {
			const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
			if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 5 ||
			    memcmp(k->via.str.ptr, "error", 5) != 0 || v->type != MSGPACK_OBJECT_MAP)
				continue;
			for (uint32_t j = 0; j < v->via.map.size; j++) {
				const msgpack_object *ek = &v->via.map.ptr[j].key, *ev = &v->via.map.ptr[j].val;
				if (ek->type == MSGPACK_OBJECT_STR && ek->via.str.size == 7 &&
				    memcmp(ek->via.str.ptr, "message", 7) == 0 && ev->type == MSGPACK_OBJECT_STR &&
				    ev->via.str.size < cap) {
					memcpy(out, ev->via.str.ptr, ev->via.str.size);
					out[ev->via.str.size] = '\0';
					*n = ev->via.str.size;
					found = true;
				}
			}
		}
	}
	msgpack_unpacked_destroy(&u);
	return found;
}

/*
 * An op name that is not UTF-8 used to come back verbatim inside the error
 * message, a msgpack str that strict decoders refuse. The daemon now
 * escapes the bytes: the message is valid UTF-8 and still names the op.
 */
static void test_error_reply_utf8(void)
{
	char url[300], log[300], state[300];
	snprintf(url, sizeof url, "ipc://%s/utf8", tmpdir);
	snprintf(log, sizeof log, "%s/utf8.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-utf8", tmpdir);
	const char *args[] = { "--listen", url, "--state-dir", state, "--threads", "1", NULL };
	pid_t pid = itest_spawn(log, args);
	CHECK(pid > 0);
	CHECKF(wait_ready(url, 10000) == 0, "daemon not answering on %.200s", url);
	nng_socket s;
	CHECK(open_req(url, &s) == 0);

	static const char op[] = "\xff" "session.crea\xc3\x28te\xed\xa0\x80";
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "v", 1);
	msgpack_pack_uint32(&pk, PROTO_VERSION);
	msgpack_pack_str_with_body(&pk, "id", 2);
	msgpack_pack_uint64(&pk, 99);
	msgpack_pack_str_with_body(&pk, "op", 2);
	msgpack_pack_str_with_body(&pk, op, sizeof op - 1);
	void *r = NULL;
	size_t rl = 0;
	const int rv = itest_raw_call(s, sb.data, sb.size, &r, &rl);
	msgpack_sbuffer_destroy(&sb);
	char msg[512];
	size_t n = 0;
	const bool found = rv == 0 && reply_message(r, rl, msg, sizeof msg, &n);
	if (rv == 0)
		nng_free(r, rl);
	nng_close(s);
	itest_kill(pid);
	CHECKF(rv == 0, "no reply: %s", nng_strerror(rv));
	CHECK(found);
	printf("  reply message: %s\n", msg);
	CHECKF(proto_utf8_check(msg, n) == n, "byte %zu of the message is not UTF-8", proto_utf8_check(msg, n));
	CHECKF(strstr(msg, "op") != NULL && strstr(msg, "\\xffsession.crea\\xc3(te\\xed\\xa0\\x80") != NULL,
	       "the message does not name the op: %.300s", msg);
}

/* ---- --ipc-mode wider than 0660 is logged as a WARNING ------------------------- */

static void test_ipc_mode_warning(void)
{
	char url[300], log[300], state[300], url2[300], log2[300];
	snprintf(url, sizeof url, "ipc://%s/wide", tmpdir);
	snprintf(log, sizeof log, "%s/wide.log", tmpdir);
	snprintf(url2, sizeof url2, "ipc://%s/narrow", tmpdir);
	snprintf(log2, sizeof log2, "%s/narrow.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-mode", tmpdir);
	const char *args[] = { "--listen", url, "--state-dir", state, "--threads", "1", "--ipc-mode", "0666", NULL };
	pid_t pid = itest_spawn(log, args);
	CHECK(pid > 0);
	/* The line is written before the sockets open, so a daemon that
	 * answers has written it if it ever will. */
	const bool up = wait_ready(url, 10000) == 0;
	itest_kill(pid);
	CHECKF(up, "daemon not answering on %.200s", url);
	CHECKF(file_has(log, " warn WARNING: --ipc-mode 0666 is wider than 0660: every local user can connect"),
	       "no WARNING line in %.200s", log);

	const char *args2[] = { "--listen", url2, "--state-dir", state, "--threads", "1", NULL };
	pid = itest_spawn(log2, args2);
	CHECK(pid > 0);
	const bool up2 = wait_ready(url2, 10000) == 0;
	itest_kill(pid);
	CHECK(up2);
	CHECKF(!file_has(log2, "--ipc-mode"), "the default 0660 was warned about in %.200s", log2);
}

/* ---- Orphaned sessions are reclaimed ---------------------------------------- */

/* Sends a request for session o with its token (adopting it to s's
 * connection); true when answered ok. */
static bool owner_op(nng_socket s, proto_op op, const owned *o)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, op);
	req.has_session = true;
	req.session = o->id;
	req.has_token = true;
	memcpy(req.token, o->token, PROTO_TOKEN_SIZE);
	if (op == PROTO_OP_SESSION_RUN)
		req.u.run.frames = 2;
	if (itest_call(s, &req, &rep) != 0)
		return false;
	const bool ok = rep.ok;
	if (!ok)
		printf("  %s: %s\n", proto_op_name(op), rep.error.message);
	proto_reply_free(&rep);
	return ok;
}

/* Polls session o's state on s until it is `want` (deadline ms). */
static bool wait_state(nng_socket s, uint32_t id, proto_state want, int ms)
{
	for (double end = itest_now_ms() + ms; itest_now_ms() < end; itest_sleep_ms(20)) {
		proto_request req;
		proto_reply rep;
		proto_request_init(&req, PROTO_OP_SESSION_STATUS);
		req.has_session = true;
		req.session = id;
		if (itest_call(s, &req, &rep) != 0)
			return false;
		const bool done = rep.ok && rep.u.status.state == want;
		proto_reply_free(&rep);
		if (done)
			return true;
	}
	return false;
}

/* Polls until session id is no longer listed (deadline ms). */
static bool wait_gone(nng_socket s, uint32_t id, int ms)
{
	for (double end = itest_now_ms() + ms; itest_now_ms() < end; itest_sleep_ms(50))
		if (listed(s, id) == 0)
			return true;
	return false;
}

/*
 * The rule (README, PROTOCOL.md): a session that has never run, whose
 * owner's connection (the create's, or the last one a request with its
 * token came on) has closed, is deleted after --orphan-timeout. A session
 * that ran, or whose owner is still connected, or that a request with its
 * token adopted onto a live connection, stays.
 */
static void test_orphans_reclaimed(void)
{
	char url[300], log[300], state[300];
	snprintf(url, sizeof url, "ipc://%s/orphan", tmpdir);
	snprintf(log, sizeof log, "%s/orphan.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-orphan", tmpdir);
	const char *args[] = { "--listen", url, "--state-dir", state, "--threads", "1", "--orphan-timeout", "1", NULL };
	pid_t pid = itest_spawn(log, args);
	CHECK(pid > 0);
	CHECKF(wait_ready(url, 10000) == 0, "daemon not answering on %.200s", url);
	itest_grid g;
	itest_grid_make(&g, 4);
	nng_socket keep, s;
	owned kept, ran, orphan, adopted;
	/* kept: its creator stays connected. */
	CHECK(open_req(url, &keep) == 0);
	CHECK(create(keep, &g, &kept) == 0);
	/* ran: its creator ran it and went away. */
	CHECK(open_req(url, &s) == 0);
	CHECK(create(s, &g, &ran) == 0);
	CHECK(owner_op(s, PROTO_OP_SESSION_RUN, &ran));
	CHECK(wait_state(s, ran.id, PROTO_STATE_DONE, 20000));
	nng_close(s);
	/* adopted: its creator went away, but the owner's token came back on
	 * the kept connection (cancelling an idle session is a no-op). */
	CHECK(open_req(url, &s) == 0);
	CHECK(create(s, &g, &adopted) == 0);
	nng_close(s);
	CHECK(owner_op(keep, PROTO_OP_SESSION_CANCEL, &adopted));
	/* orphan: created, never run, creator gone. */
	CHECK(open_req(url, &s) == 0);
	CHECK(create(s, &g, &orphan) == 0);
	nng_close(s);
	const double t0 = itest_now_ms();
	const bool gone = wait_gone(keep, orphan.id, 30000);
	const double waited = itest_now_ms() - t0;
	printf("  orphaned session %u deleted %.1f s after its creator closed (timeout 1 s)\n", orphan.id,
	       waited / 1000.0);
	CHECKF(gone, "the orphan %u is still listed after 30 s", orphan.id);
	CHECK(listed(keep, kept.id) == 1);
	CHECK(listed(keep, ran.id) == 1);
	CHECK(listed(keep, adopted.id) == 1);
	CHECK(file_has(log, "deleted (orphaned: never run"));

	/* Once the kept connection closes, both never-run sessions it owned
	 * go too; the one that ran stays. */
	nng_close(keep);
	CHECK(open_req(url, &s) == 0);
	const bool both = wait_gone(s, kept.id, 30000) && wait_gone(s, adopted.id, 30000);
	const int still = listed(s, ran.id);
	nng_close(s);
	itest_grid_free(&g);
	itest_kill(pid);
	CHECK(both);
	CHECK(still == 1);
}

/*
 * A creator that disconnects while its create is still being built never
 * gets the token; the session must not wait for the idle timeout. The
 * daemon holds one session at most, so a probe create (with parameters
 * that would be refused later) answers "max_sessions" exactly while the
 * big create is admitted: that is when the creator disconnects.
 */
static void test_orphan_mid_create(void)
{
	char url[300], log[300], state[300];
	snprintf(url, sizeof url, "ipc://%s/midcreate", tmpdir);
	snprintf(log, sizeof log, "%s/midcreate.log", tmpdir);
	snprintf(state, sizeof state, "%s/state-midcreate", tmpdir);
	const char *args[] = { "--listen", url,	   "--state-dir",      state, "--threads",
			       "1",   "--max-sessions", "1", "--orphan-timeout", "1", "--verbose",
			       NULL };
	pid_t pid = itest_spawn(log, args);
	CHECK(pid > 0);
	CHECKF(wait_ready(url, 10000) == 0, "daemon not answering on %.200s", url);
	itest_grid big, small;
	itest_grid_make(&big, 300);
	itest_grid_make(&small, 2);
	nng_socket a, k;
	CHECK(open_req(url, &a) == 0);
	CHECK(open_req(url, &k) == 0);
	proto_request req;
	create_req(&req, &big);
	req.id = itest_next_id();
	proto_buf b = { NULL, 0 };
	CHECK(proto_request_encode(&req, &b, NULL) == DRAPE_OK);
	const int rv = nng_send(a, b.data, b.len, 0);
	proto_buf_free(&b);
	CHECK(rv == 0);
	/* Probe until the big create is admitted (or has finished). */
	int admitted = 0, listed_before = -1;
	for (double end = itest_now_ms() + 30000; !admitted && itest_now_ms() < end;) {
		proto_reply rep;
		create_req(&req, &small);
		req.u.create.params.mask = PROTO_PARAM_SUBSTEPS;
		req.u.create.params.values.substeps = 0;
		if (itest_call(k, &req, &rep) != 0)
			break;
		if (!rep.ok && rep.error.code == DRAPE_ELIMIT && strstr(rep.error.message, "max_sessions") != NULL)
			admitted = 1;
		else if (rep.ok || rep.error.code != DRAPE_EINVAL)
			printf("  probe: %s\n", rep.ok ? "accepted" : rep.error.message);
		proto_reply_free(&rep);
	}
	if (admitted) {
		/* Is the create still being built? The table is empty then. */
		proto_reply rep;
		proto_request_init(&req, PROTO_OP_SESSION_LIST);
		if (itest_call(k, &req, &rep) == 0 && rep.ok)
			listed_before = (int)rep.u.list.count;
		proto_reply_free(&rep);
	}
	/* The creator goes away without its reply. */
	nng_close(a);
	printf("  creator disconnected with %s\n",
	       listed_before == 0 ? "its create still being built" : "its create already answered");
	/* The session appears when the build lands, then is reclaimed: the
	 * daemon logs both, and the table ends empty. */
	bool reclaimed = false;
	for (double end = itest_now_ms() + 30000; !reclaimed && itest_now_ms() < end; itest_sleep_ms(50))
		reclaimed = file_has(log, " created: ") && file_has(log, "deleted (orphaned: never run");
	int left = -1;
	{
		proto_reply rep;
		proto_request_init(&req, PROTO_OP_SESSION_LIST);
		if (itest_call(k, &req, &rep) == 0 && rep.ok)
			left = (int)rep.u.list.count;
		proto_reply_free(&rep);
	}
	nng_close(k);
	itest_grid_free(&big);
	itest_grid_free(&small);
	itest_kill(pid);
	CHECKF(admitted, "the big create was never seen in progress");
	CHECKF(listed_before == 0, "the create had finished before the creator left (%d listed)", listed_before);
	CHECKF(reclaimed, "the session of the vanished creator was not reclaimed (see %.200s)", log);
	CHECK(left == 0);
}

static const check_test tests[] = {
	CHECK_TEST(test_failed_creates_keep_fds),
	CHECK_TEST(test_error_reply_utf8),
	CHECK_TEST(test_ipc_mode_warning),
	CHECK_TEST(test_orphans_reclaimed),
	CHECK_TEST(test_orphan_mid_create),
};

int main(int argc, char **argv)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/drape-hard-XXXXXX");
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
