/*
 * libFuzzer target for the daemon's request handler, end to end.
 *
 * One real draped lives in this process (server/, its loop, its sockets on
 * an ipc path in a private folder, a state directory on /dev/shm when there
 * is one). An input is a sequence of requests, each after a two-byte
 * little-endian length; a length past the end of the input takes what is
 * left, so every mutation still yields requests. Each request goes through
 * srv_request_handle exactly as control.c hands it over; replies given
 * later (a job's, a held frames.get's) are caught by wrapping
 * srv_control_reply, and the loop runs until every job, solve and output
 * stage of the input has landed and every request is answered.
 *
 * Checked on every reply, besides the sanitizers: it is one msgpack map with
 * a boolean "ok"; an error carries a code and a message that is valid UTF-8;
 * a request that carried an id gets it back. Checked after every input: the
 * server settles (no job, solve or output left in flight) within a bound
 * rather than hanging; once every session is deleted the table is empty,
 * every held request has had its one answer, and the descriptor count is
 * what it was before the first input.
 *
 * So that requests after a create can reach the ops that need the owner
 * token, getrandom is wrapped (-Wl,--wrap=getrandom) to hand out the fixed
 * token FUZZ_TOKEN_BYTE x 16; each input starts from an empty table with
 * session ids counted from 1 and an empty replay cache, so every input
 * replays alone to the same result.
 */
#include <dirent.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/config.h"
#include "server/log.h"
#include "server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void __wrap_srv_control_reply(void *reply_to, proto_buf *out);
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned flags);
void __wrap_srv_log(srv_log_level level, const char *fmt, ...);
static void check_reply(const proto_buf *rep, const proto_header *head);

#define FUZZ_TOKEN_BYTE 0x5a
#define FUZZ_MAX_REQUESTS 16
/* A settle longer than this is reported as a hang (longer than the
 * longest frames.get wait). */
#define FUZZ_SETTLE_MS 40000

static srv_config g_cfg;
static srv_server g_srv;
static bool g_ready;
static int g_fds;
static char g_dir[256];

/* One slot per request of the input: replies that come later (a job's, or
 * a held frames.get's) find their request's header through it. */
typedef struct fuzz_pending {
	bool used, answered;
	proto_op op;
	proto_header head;
} fuzz_pending;
static fuzz_pending g_pending[FUZZ_MAX_REQUESTS];

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_daemon: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned flags)
{
	(void)flags;
	memset(buf, FUZZ_TOKEN_BYTE, len);
	return (ssize_t)len;
}

/* The log is formatted, so fuzzed text goes through the same vsnprintf as
 * in draped, and then dropped: a fuzzer printing a line per request would
 * spend its time writing. FUZZ_DAEMON_LOG=1 shows the lines. */
void __wrap_srv_log(srv_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	static int show = -1;
	if (show < 0)
		show = getenv("FUZZ_DAEMON_LOG") != NULL;
	if (show)
		fprintf(stderr, "draped %d: %s\n", (int)level, line);
}

void __wrap_srv_control_reply(void *reply_to, proto_buf *out)
{
	fuzz_pending *p = reply_to;
	if (p < g_pending || p >= g_pending + FUZZ_MAX_REQUESTS || !p->used)
		fail("a reply to a request this harness did not send", NULL);
	if (p->answered)
		fail("a request was answered twice", NULL);
	check_reply(out, &p->head);
	proto_buf_free(out);
	p->answered = true;
}

/* Open descriptors, pipes left out: libFuzzer starts the sanitizers'
 * symbolizer on a pair of pipes the first time it names a newly covered
 * function, and the server itself opens no pipe after it has started.
 * The standard descriptors count whatever they are. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char path[300], target[64];
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(path, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strncmp(target, "pipe:", 5) != 0 || atoi(e->d_name) <= 2)
			n++;
	}
	closedir(d);
	return n;
}

/* Names every open descriptor on stderr, for a report of a changed count. */
static void list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char path[300], target[256];
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n > 0) {
			target[n] = '\0';
			fprintf(stderr, "  fd %s -> %s\n", e->d_name, target);
		}
	}
	closedir(d);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool settled(void)
{
	return g_srv.in_flight == 0 && g_srv.outputs == 0 && g_srv.jobs == 0;
}

/* Runs the loop until cond() holds; a server that never gets there hangs. */
static void run_until(bool (*cond)(void), const char *what)
{
	const uint64_t t0 = now_ms();
	while (!cond()) {
		uv_run(&g_srv.loop, UV_RUN_ONCE);
		if (now_ms() - t0 > FUZZ_SETTLE_MS)
			fail("the server did not settle", what);
	}
}

static const fuzz_pending *g_waiting_for;

static bool answered(void)
{
	return g_waiting_for->answered;
}

/* Every session gone, nothing in flight, every request answered. */
static bool all_done(void)
{
	if (!settled() || g_srv.sessions.count != 0)
		return false;
	for (int i = 0; i < FUZZ_MAX_REQUESTS; i++)
		if (g_pending[i].used && !g_pending[i].answered)
			return false;
	return true;
}

static void setup(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(g_dir, sizeof g_dir, "%s/drape-fuzz-daemon-%ld", base, (long)getpid());
	if (mkdir(g_dir, 0700) != 0)
		fail("cannot make the private folder", g_dir);
	char listen[320], state[300];
	snprintf(listen, sizeof listen, "ipc://%s/ctl", g_dir);
	snprintf(state, sizeof state, "%s/state", g_dir);
	char *argv[] = {"draped", "--listen", listen, "--state-dir", state, "--threads", "1",
			"--pool-threads", "1", "--max-vertices", "4096", "--max-triangles", "8192",
			"--max-frames-retained", "8", NULL};
	char msg[1024];
	srv_config_default(&g_cfg);
	if (srv_config_parse(&g_cfg, (int)(sizeof argv / sizeof argv[0]) - 1, argv, msg, sizeof msg) !=
		    SRV_CONFIG_OK ||
	    srv_config_finish(&g_cfg, msg, sizeof msg) != SRV_CONFIG_OK)
		fail("config", msg);
	srv_log_set_verbose(true);
	if (srv_server_init(&g_srv, &g_cfg) != SRV_EXIT_OK)
		fail("srv_server_init failed", NULL);
	g_fds = count_fds();
	g_ready = true;
}

/* Whether bytes [p, p + n) are valid UTF-8 (no overlongs, no surrogates). */
static bool utf8_ok(const unsigned char *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = p[i];
		size_t k;
		unsigned min;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			k = 1, min = 0x80, c &= 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2, min = 0x800, c &= 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3, min = 0x10000, c &= 0x07;
		} else {
			return false;
		}
		if (i + k >= n)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				return false;
			c = (c << 6) | (p[i + j] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
	const size_t kl = strlen(key);
	for (uint32_t i = 0; i < m->via.map.size; i++) {
		const msgpack_object *k = &m->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl && memcmp(k->via.str.ptr, key, kl) == 0)
			return &m->via.map.ptr[i].val;
	}
	return NULL;
}

/* Every string anywhere in the reply must be valid UTF-8. */
static void check_strings(const msgpack_object *o, int depth)
{
	if (depth > 16)
		return;
	switch (o->type) {
	case MSGPACK_OBJECT_STR:
		if (!utf8_ok((const unsigned char *)o->via.str.ptr, o->via.str.size))
			fail("a reply holds a str that is not valid UTF-8", NULL);
		break;
	case MSGPACK_OBJECT_ARRAY:
		for (uint32_t i = 0; i < o->via.array.size; i++)
			check_strings(&o->via.array.ptr[i], depth + 1);
		break;
	case MSGPACK_OBJECT_MAP:
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			check_strings(&o->via.map.ptr[i].key, depth + 1);
			check_strings(&o->via.map.ptr[i].val, depth + 1);
		}
		break;
	default:
		break;
	}
}

static void check_reply(const proto_buf *rep, const proto_header *head)
{
	if (rep->data == NULL || rep->len == 0)
		fail("an empty reply", NULL);
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	if (msgpack_unpack_next(&u, (const char *)rep->data, rep->len, &off) != MSGPACK_UNPACK_SUCCESS || off != rep->len)
		fail("a reply that is not exactly one msgpack object", NULL);
	const msgpack_object *m = &u.data;
	if (m->type != MSGPACK_OBJECT_MAP)
		fail("a reply that is not a map", NULL);
	check_strings(m, 0);
	const msgpack_object *ok = map_get(m, "ok");
	if (ok == NULL || ok->type != MSGPACK_OBJECT_BOOLEAN)
		fail("a reply without a boolean ok", NULL);
	if (!ok->via.boolean) {
		const msgpack_object *e = map_get(m, "error");
		if (e == NULL || e->type != MSGPACK_OBJECT_MAP)
			fail("an error reply without an error map", NULL);
		const msgpack_object *code = map_get(e, "code"), *message = map_get(e, "message");
		if (code == NULL || message == NULL || message->type != MSGPACK_OBJECT_STR || message->via.str.size == 0)
			fail("an error without a code and a message", NULL);
	}
	if (head->has_id) {
		const msgpack_object *id = map_get(m, "id");
		if (id == NULL || id->type != MSGPACK_OBJECT_POSITIVE_INTEGER || id->via.u64 != head->id)
			fail("a reply that does not carry its request's id", NULL);
	}
	msgpack_unpacked_destroy(&u);
}

static void handle(fuzz_pending *p, const uint8_t *req, size_t len)
{
	proto_buf out = {NULL, 0};
	memset(p, 0, sizeof *p);
	p->used = true;
	/* The header as the handler will see it, for the id check (a request
	 * that does not decode is answered without one). */
	{
		proto_request tmp;
		drape_error err;
		memset(&tmp, 0, sizeof tmp);
		if (proto_request_decode(req, len, g_cfg.max_message, &tmp, &p->head, &err) == DRAPE_OK) {
			p->op = tmp.op;
			proto_request_free(&tmp);
		} else {
			p->head.has_id = false;
		}
	}
	srv_reply_mode mode = srv_request_handle(&g_srv, req, len, 7, p, &out);
	if (mode == SRV_REPLY_NOW) {
		check_reply(&out, &p->head);
		proto_buf_free(&out);
		p->answered = true;
	} else if (mode == SRV_REPLY_LATER && p->op != PROTO_OP_FRAMES_GET) {
		/* A job: its reply comes once its work on a thread lands. */
		g_waiting_for = p;
		run_until(answered, "waiting for a job's reply");
	} else if (mode == SRV_REPLY_NONE) {
		/* Only a repeat of a request still in progress gets no reply,
		 * and this harness waits for every job before the next. */
		fail("a request got no reply", NULL);
	}
	/* A held frames.get is answered when its frame is stored, its run
	 * ends, its session is deleted or its wait runs out: reset() waits
	 * for that. Let whatever the request started make progress. */
	uv_run(&g_srv.loop, UV_RUN_NOWAIT);
}

/* Back to an empty server: every session deleted, nothing in flight, ids
 * from 1, no replies remembered. */
static void reset(void)
{
	/* A session with a frame in flight stays in the table, marked
	 * deleted, until the frame lands (scheduler.c frees it then). */
	for (size_t i = g_srv.sessions.count; i-- > 0;)
		if (i < g_srv.sessions.count && !g_srv.sessions.items[i]->deleted)
			srv_session_destroy(&g_srv, g_srv.sessions.items[i], "fuzz input done");
	run_until(all_done, "after deleting every session");
	g_srv.sessions.next_id = 1;
	srv_replay_free(&g_srv.replay);
	if (!srv_replay_init(&g_srv.replay, 4096))
		fail("out of memory", NULL);
	const int fds = count_fds();
	if (fds != g_fds) {
		char d[64];
		snprintf(d, sizeof d, "%d before the first input, %d now", g_fds, fds);
		list_fds();
		fail("the open descriptor count changed", d);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_ready)
		setup();
	size_t at = 0;
	memset(g_pending, 0, sizeof g_pending);
	for (int n = 0; n < FUZZ_MAX_REQUESTS && at + 2 <= size; n++) {
		size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;
		at += 2;
		if (len > size - at)
			len = size - at;
		if (len > 0)
			handle(&g_pending[n], data + at, len);
		at += len;
	}
	reset();
	return 0;
}
