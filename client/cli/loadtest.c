/*
 * drape CLI: `drape loadtest`, the scripted load test. N client threads,
 * each with its own drape_client (a client may be used by one thread at a
 * time), create sessions, run them, receive every frame with
 * drape_next_frame and verify it. Optional stalled clients run a large
 * session and never read a frame, to show that a client that stops reading
 * costs the others nothing; the churn mode only connects and disconnects,
 * to show that clients that come and go leave nothing behind on the server.
 */
#include "client/cli/cli.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Longest wait for one frame; a server that delivers nothing for this long
 * counts as an error for that session, so a load test never hangs. */
#define LT_FRAME_WAIT_MS 30000
/* Longest wait for the stalled clients' sessions to be accepted. */
#define LT_STALL_START_MS 10000

typedef struct lt_cfg {
	const char *url;
	const cli_opts *o;
	uint32_t clients;
	uint32_t sessions;
	uint32_t frames;
	uint32_t vertices;
	uint32_t stalled;
	uint32_t stalled_vertices;
	uint32_t churn;
	bool poll; /* --poll: no held frames.get; frames.get every 10 ms */
} lt_cfg;

/* A growable array of latencies in milliseconds. */
typedef struct lt_samples {
	double *v;
	size_t n, cap;
} lt_samples;

typedef struct lt_worker {
	const lt_cfg *cfg;
	uint32_t index;
	pthread_t thread;
	bool started;
	lt_samples req;  /* create, run, status, delete, connect */
	lt_samples wait; /* each drape_next_frame call that returned a frame */
	uint64_t frames;
	uint64_t bytes;
	uint64_t lost;
	uint64_t errors;
	uint64_t sessions_done;
	char first_error[300];
} lt_worker;

/* Shared between the main thread and the stalled clients. */
static atomic_bool lt_others_done;
static atomic_uint lt_stalled_ready;

/* A pinned grid sheet of r x r vertices in the plane z = 0. */
typedef struct lt_grid {
	float *pos;
	uint32_t *tri;
	uint32_t *pins;
	uint32_t nv, nt, np;
} lt_grid;

static void lt_grid_free(lt_grid *g)
{
	free(g->pos);
	free(g->tri);
	free(g->pins);
	memset(g, 0, sizeof *g);
}

static bool lt_grid_make(lt_grid *g, uint32_t vertices)
{
	memset(g, 0, sizeof *g);
	uint32_t r = (uint32_t)lround(sqrt((double)vertices));
	if (r < 2)
		r = 2;
	g->nv = r * r;
	g->nt = 2 * (r - 1) * (r - 1);
	g->np = r;
	g->pos = malloc((size_t)g->nv * 3 * sizeof *g->pos);
	g->tri = malloc((size_t)g->nt * 3 * sizeof *g->tri);
	g->pins = malloc((size_t)g->np * sizeof *g->pins);
	if (g->pos == NULL || g->tri == NULL || g->pins == NULL) {
		lt_grid_free(g);
		return false;
	}
	const float h = 1.0f / (float)(r - 1);
	for (uint32_t y = 0; y < r; y++)
		for (uint32_t x = 0; x < r; x++) {
			float *p = g->pos + 3 * (y * r + x);
			p[0] = (float)x * h - 0.5f;
			p[1] = 1.5f - (float)y * h;
			p[2] = 0.0f;
		}
	uint32_t t = 0;
	for (uint32_t y = 0; y + 1 < r; y++)
		for (uint32_t x = 0; x + 1 < r; x++) {
			uint32_t a = y * r + x, b = a + 1, c = a + r, d = c + 1;
			uint32_t *q = g->tri + 3 * t;
			q[0] = a, q[1] = c, q[2] = b;
			q[3] = b, q[4] = c, q[5] = d;
			t += 2;
		}
	/* The top row is pinned so the sheet hangs and keeps moving. */
	for (uint32_t x = 0; x < r; x++)
		g->pins[x] = x;
	return true;
}

static void lt_push(lt_samples *s, double ms)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		double *v = realloc(s->v, cap * sizeof *v);
		if (v == NULL)
			return; /* A lost sample only blurs a percentile. */
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ms;
}

static void lt_error(lt_worker *w, const char *what, drape_err rc, const drape_error *e)
{
	w->errors++;
	if (w->first_error[0] == '\0')
		snprintf(w->first_error, sizeof w->first_error, "client %u: %s: %s (%s)",
			 (unsigned)w->index, what,
			 e != NULL && e->message[0] ? e->message : drape_strerror(rc), drape_err_name(rc));
}

/* Connects as cli_connect does; with --poll the client does not have the
 * daemon hold its frames.get until a frame is solved, and asks every 10 ms
 * instead. */
static drape_err lt_open(const lt_cfg *cfg, drape_client **c, drape_error *err)
{
	if (!cfg->poll)
		return cli_connect(cfg->url, cfg->o, c, err);
	drape_client_opts co;
	drape_client_opts_default(&co);
	co.client_name = "drape loadtest " DRAPE_CLIENT_VERSION;
	co.use_stream = false;
	co.poll_interval_ms = 10;
	if (cfg->o->timeout_ms > 0)
		co.request_timeout_ms = cfg->o->timeout_ms;
	char token[512] = "";
	if (cfg->o->token_file != NULL) {
		FILE *f = fopen(cfg->o->token_file, "r");
		if (f == NULL || fgets(token, sizeof token, f) == NULL)
			token[0] = '\0';
		if (f != NULL)
			fclose(f);
		token[strcspn(token, "\r\n")] = '\0';
		if (token[0] == '\0')
			return drape_error_setf(err, DRAPE_EINVAL, "--token-file %s: unreadable or empty",
						cfg->o->token_file);
		co.auth_token = token;
	} else if (getenv("DRAPE_TOKEN") != NULL && getenv("DRAPE_TOKEN")[0] != '\0') {
		co.auth_token = getenv("DRAPE_TOKEN");
	}
	return drape_connect(cfg->url, &co, c, err);
}

static drape_err lt_connect(lt_worker *w, drape_client **c)
{
	drape_error err;
	double t = cli_now_ms();
	drape_err rc = lt_open(w->cfg, c, &err);
	lt_push(&w->req, cli_now_ms() - t);
	if (rc != DRAPE_OK)
		lt_error(w, "connect", rc, &err);
	return rc;
}

static drape_err lt_create(lt_worker *w, drape_client *c, const lt_grid *g, drape_session *s)
{
	drape_session_desc d;
	drape_session_desc_default(&d);
	d.positions = g->pos;
	d.vertex_count = g->nv;
	d.triangles = g->tri;
	d.triangle_count = g->nt;
	d.pins = g->pins;
	d.pin_count = g->np;
	/* Few substeps and iterations: the load test measures the server's
	 * plumbing, not the solver. */
	d.params.substeps = 1;
	d.params.iterations = 2;
	d.name = "loadtest";
	drape_error err;
	double t = cli_now_ms();
	drape_err rc = drape_session_create(c, &d, s, NULL, &err);
	lt_push(&w->req, cli_now_ms() - t);
	if (rc != DRAPE_OK)
		lt_error(w, "session.create", rc, &err);
	return rc;
}

static drape_err lt_delete(lt_worker *w, drape_client *c, drape_session s)
{
	drape_error err;
	double t = cli_now_ms();
	drape_err rc = drape_session_delete(c, s, &err);
	lt_push(&w->req, cli_now_ms() - t);
	if (rc != DRAPE_OK)
		lt_error(w, "session.delete", rc, &err);
	return rc;
}

/* Checks one frame: index, size and finite values. Returns false (and
 * records why) if it is wrong. */
static bool lt_verify(lt_worker *w, const drape_frame *f, uint32_t want_index, uint32_t nv)
{
	char why[160] = "";
	if (f->index != want_index)
		snprintf(why, sizeof why, "frame %u arrived where %u was due", (unsigned)f->index,
			 (unsigned)want_index);
	else if (f->vertex_count != nv || f->positions == NULL)
		snprintf(why, sizeof why, "frame %u has %u vertices, the sheet has %u", (unsigned)f->index,
			 (unsigned)f->vertex_count, (unsigned)nv);
	else
		for (size_t i = 0; i < (size_t)nv * 3; i++)
			if (!isfinite(f->positions[i])) {
				snprintf(why, sizeof why, "frame %u: coordinate %zu is not finite",
					 (unsigned)f->index, i);
				break;
			}
	if (why[0] == '\0')
		return true;
	drape_error e;
	memset(&e, 0, sizeof e);
	snprintf(e.message, sizeof e.message, "%s", why);
	lt_error(w, "verify", DRAPE_EPROTO, &e);
	return false;
}

/* Runs one session to its end and receives every frame. */
static void lt_one_session(lt_worker *w, drape_client *c, const lt_grid *g)
{
	const lt_cfg *cfg = w->cfg;
	drape_session s;
	if (lt_create(w, c, g, &s) != DRAPE_OK) {
		w->lost += cfg->frames;
		return;
	}
	drape_error err;
	double t = cli_now_ms();
	drape_err rc = drape_session_run(c, s, cfg->frames, NULL, &err);
	lt_push(&w->req, cli_now_ms() - t);
	uint32_t got = 0;
	if (rc != DRAPE_OK) {
		lt_error(w, "session.run", rc, &err);
	} else {
		/* Bounded: each pass either returns a frame (at most `frames` of
		 * them, past which the run must end) or ends the loop. */
		for (uint32_t pass = 0; pass <= cfg->frames; pass++) {
			if (cli_interrupted)
				break;
			drape_frame f;
			t = cli_now_ms();
			rc = drape_next_frame(c, s, &f, LT_FRAME_WAIT_MS, &err);
			if (rc == DRAPE_EDONE)
				break;
			if (rc != DRAPE_OK) {
				lt_error(w, "next frame", rc, &err);
				break;
			}
			lt_push(&w->wait, cli_now_ms() - t);
			bool ok = lt_verify(w, &f, got + 1, g->nv);
			w->bytes += (uint64_t)f.vertex_count * 3 * sizeof(float);
			drape_frame_free(&f);
			if (!ok)
				break;
			got++;
			w->frames++;
		}
		if (got > cfg->frames) {
			drape_error e;
			memset(&e, 0, sizeof e);
			snprintf(e.message, sizeof e.message, "received %u frames of a %u-frame run",
				 (unsigned)got, (unsigned)cfg->frames);
			lt_error(w, "verify", DRAPE_EPROTO, &e);
		}
		drape_status st;
		t = cli_now_ms();
		rc = drape_session_status(c, s, &st, &err);
		lt_push(&w->req, cli_now_ms() - t);
		if (rc != DRAPE_OK) {
			lt_error(w, "session.status", rc, &err);
		} else if (st.state != DRAPE_STATE_DONE || st.frames_done != cfg->frames) {
			drape_error e;
			memset(&e, 0, sizeof e);
			snprintf(e.message, sizeof e.message, "session %u ended %s at frame %u of %u",
				 (unsigned)s.id, drape_state_name(st.state), (unsigned)st.frames_done,
				 (unsigned)cfg->frames);
			lt_error(w, "session.status", DRAPE_ESTATE, &e);
		}
	}
	if (got < cfg->frames)
		w->lost += cfg->frames - got;
	else
		w->sessions_done++;
	lt_delete(w, c, s);
}

static void *lt_worker_main(void *arg)
{
	lt_worker *w = arg;
	const lt_cfg *cfg = w->cfg;
	lt_grid g;
	if (!lt_grid_make(&g, cfg->vertices)) {
		lt_error(w, "grid", DRAPE_ENOMEM, NULL);
		return NULL;
	}
	drape_client *c;
	if (lt_connect(w, &c) != DRAPE_OK) {
		w->lost += (uint64_t)cfg->sessions * cfg->frames;
		lt_grid_free(&g);
		return NULL;
	}
	for (uint32_t m = 0; m < cfg->sessions && !cli_interrupted; m++)
		lt_one_session(w, c, &g);
	drape_close(c);
	lt_grid_free(&g);
	return NULL;
}

/* Connects and closes `churn` times; every other round also creates and
 * deletes a small session, so both the bare connection and a session's
 * whole life are exercised. */
static void *lt_churn_main(void *arg)
{
	lt_worker *w = arg;
	const lt_cfg *cfg = w->cfg;
	lt_grid g;
	if (!lt_grid_make(&g, cfg->vertices)) {
		lt_error(w, "grid", DRAPE_ENOMEM, NULL);
		return NULL;
	}
	for (uint32_t r = 0; r < cfg->churn && !cli_interrupted; r++) {
		drape_client *c;
		if (lt_connect(w, &c) != DRAPE_OK)
			continue;
		drape_session s;
		if ((r + w->index) % 2 == 0 && lt_create(w, c, &g, &s) == DRAPE_OK) {
			if (lt_delete(w, c, s) == DRAPE_OK)
				w->sessions_done++;
		}
		drape_close(c);
	}
	lt_grid_free(&g);
	return NULL;
}

/* A client that runs a large session without end and never reads a frame;
 * it stays connected (and subscribed) until the others are done. */
static void *lt_stalled_main(void *arg)
{
	lt_worker *w = arg;
	const lt_cfg *cfg = w->cfg;
	lt_grid g;
	if (!lt_grid_make(&g, cfg->stalled_vertices)) {
		lt_error(w, "grid", DRAPE_ENOMEM, NULL);
		atomic_fetch_add(&lt_stalled_ready, 1);
		return NULL;
	}
	drape_client *c;
	drape_session s;
	drape_error err;
	/* A client that never reads its frames is the case that must not
	 * hold the daemon back. */
	double t = cli_now_ms();
	drape_err crc = cli_connect(cfg->url, cfg->o, &c, &err);
	lt_push(&w->req, cli_now_ms() - t);
	if (crc != DRAPE_OK) {
		lt_error(w, "connect", crc, &err);
		atomic_fetch_add(&lt_stalled_ready, 1);
		lt_grid_free(&g);
		return NULL;
	}
	bool made = lt_create(w, c, &g, &s) == DRAPE_OK;
	if (made) {
		/* Seeking to the first frame sets up the client's track of
		 * the session, as a reader's would be, but it never asks. */
		drape_err rc = drape_frames_seek(c, s, 1, &err);
		if (rc != DRAPE_OK)
			lt_error(w, "frames.seek (stalled)", rc, &err);
		rc = drape_session_run(c, s, 0, NULL, &err);
		if (rc != DRAPE_OK)
			lt_error(w, "session.run (stalled)", rc, &err);
	}
	atomic_fetch_add(&lt_stalled_ready, 1);
	/* Polls the flag: the wait is bounded by the others' run, which is
	 * itself bounded by LT_FRAME_WAIT_MS per frame. */
	while (!atomic_load(&lt_others_done) && !cli_interrupted) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (made) {
		drape_err rc = drape_session_cancel(c, s, NULL, NULL, &err);
		if (rc != DRAPE_OK)
			lt_error(w, "session.cancel (stalled)", rc, &err);
		lt_delete(w, c, s);
	}
	drape_close(c);
	lt_grid_free(&g);
	return NULL;
}

static int lt_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of sorted samples, nearest rank; 0 if none. */
static double lt_quantile(const lt_samples *s, double q)
{
	if (s->n == 0)
		return 0.0;
	size_t k = (size_t)ceil(q * (double)s->n);
	if (k < 1)
		k = 1;
	if (k > s->n)
		k = s->n;
	return s->v[k - 1];
}

static void lt_merge(lt_samples *to, const lt_samples *from)
{
	for (size_t i = 0; i < from->n; i++)
		lt_push(to, from->v[i]);
}

/* Parses a number option of loadtest; false with a message if it is bad. */
static bool lt_parse_u32(const char *name, const char *val, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = val != NULL && *val >= '0' && *val <= '9' ? strtoull(val, &end, 10) : 0;
	if (val == NULL || end == NULL || *end != '\0' || errno != 0 || v < lo || v > hi) {
		fprintf(stderr, "drape loadtest: %s: expected %u..%u, got \"%s\"\n", name, (unsigned)lo,
			(unsigned)hi, val ? val : "");
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

int cli_cmd_loadtest(int argc, char **argv)
{
	static const char *const allowed[] = {"--server", "--token-file", "--timeout", "--json",
					      "--quiet",  "--frames",     NULL};
	lt_cfg cfg = {.clients = 4, .sessions = 1, .frames = 24, .vertices = 1024,
		      .stalled_vertices = 4096};
	/* The options only loadtest knows are taken out here; the rest go to
	 * the shared parser, so --server and friends behave as everywhere. */
	char **rest = calloc((size_t)argc + 1, sizeof *rest);
	if (rest == NULL)
		return CLI_SOFTWARE;
	int nrest = 0;
	for (int i = 0; i < argc; i++) {
		static const struct {
			const char *name;
			uint32_t lo, hi;
			size_t off;
		} own[] = {
			{"--clients", 1, 1024, offsetof(lt_cfg, clients)},
			{"--sessions-per-client", 1, 10000, offsetof(lt_cfg, sessions)},
			{"--vertices", 4, 4000000, offsetof(lt_cfg, vertices)},
			{"--stalled-clients", 0, 64, offsetof(lt_cfg, stalled)},
			{"--stalled-vertices", 4, 4000000, offsetof(lt_cfg, stalled_vertices)},
			{"--churn", 1, 100000, offsetof(lt_cfg, churn)},
		};
		if (i >= 2 && strcmp(argv[i], "--poll") == 0) {
			cfg.poll = true;
			continue;
		}
		bool taken = false;
		for (size_t k = 0; k < sizeof own / sizeof own[0] && i >= 2; k++) {
			size_t n = strlen(own[k].name);
			if (strncmp(argv[i], own[k].name, n) != 0 ||
			    (argv[i][n] != '\0' && argv[i][n] != '='))
				continue;
			const char *val = argv[i][n] == '=' ? argv[i] + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!lt_parse_u32(own[k].name, val, own[k].lo, own[k].hi,
					  (uint32_t *)(void *)((char *)&cfg + own[k].off))) {
				free(rest);
				return CLI_USAGE;
			}
			taken = true;
			break;
		}
		if (!taken)
			rest[nrest++] = argv[i];
	}
	cli_opts o;
	bool parsed = cli_parse(nrest, rest, 2, allowed, 0, "loadtest", &o);
	free(rest);
	if (!parsed)
		return CLI_USAGE;
	if (o.help) {
		cli_usage("loadtest", false);
		return CLI_OK;
	}
	if (o.frames)
		cfg.frames = o.frames;
	if (cfg.churn > 0 && cfg.stalled > 0) {
		fprintf(stderr, "drape loadtest: --churn and --stalled-clients exclude each other\n");
		return CLI_USAGE;
	}
	cli_signals_install();
	cli_embed emb = {.pid = -1};
	cfg.url = o.server;
	cfg.o = &o;
	if (cfg.url == NULL) {
		int x = cli_embed_start(&emb, &o);
		if (x != 0)
			return x;
		cfg.url = emb.url;
	}

	const uint32_t total = cfg.clients + cfg.stalled;
	lt_worker *w = calloc(total, sizeof *w);
	if (w == NULL) {
		cli_embed_stop(&emb);
		return CLI_SOFTWARE;
	}
	for (uint32_t i = 0; i < total; i++) {
		w[i].cfg = &cfg;
		w[i].index = i;
	}
	uint64_t thread_errors = 0;
	atomic_store(&lt_others_done, false);
	atomic_store(&lt_stalled_ready, 0);
	/* The stalled clients start first and their sessions are running
	 * before the measured clients begin, so the whole measurement sees
	 * them. */
	for (uint32_t i = cfg.clients; i < total; i++) {
		if (pthread_create(&w[i].thread, NULL, lt_stalled_main, &w[i]) == 0)
			w[i].started = true;
		else {
			thread_errors++;
			atomic_fetch_add(&lt_stalled_ready, 1);
		}
	}
	for (double t = cli_now_ms(); atomic_load(&lt_stalled_ready) < cfg.stalled &&
				      cli_now_ms() - t < LT_STALL_START_MS;) {
		struct timespec ts = {0, 5 * 1000000L};
		nanosleep(&ts, NULL);
	}
	const double t0 = cli_now_ms();
	for (uint32_t i = 0; i < cfg.clients; i++) {
		if (pthread_create(&w[i].thread, NULL, cfg.churn ? lt_churn_main : lt_worker_main, &w[i]) == 0)
			w[i].started = true;
		else
			thread_errors++;
	}
	for (uint32_t i = 0; i < cfg.clients; i++)
		if (w[i].started)
			pthread_join(w[i].thread, NULL);
	const double wall_ms = cli_now_ms() - t0;
	atomic_store(&lt_others_done, true);
	for (uint32_t i = cfg.clients; i < total; i++)
		if (w[i].started)
			pthread_join(w[i].thread, NULL);

	lt_samples req = {0}, wait = {0};
	uint64_t frames = 0, bytes = 0, lost = 0, errors = thread_errors, sessions = 0;
	uint64_t stalled_errors = 0;
	const char *first = NULL;
	for (uint32_t i = 0; i < total; i++) {
		lt_merge(&req, &w[i].req);
		if (i < cfg.clients) {
			lt_merge(&wait, &w[i].wait);
			frames += w[i].frames;
			bytes += w[i].bytes;
			lost += w[i].lost;
			sessions += w[i].sessions_done;
		} else {
			stalled_errors += w[i].errors;
		}
		errors += w[i].errors;
		if (first == NULL && w[i].first_error[0] != '\0')
			first = w[i].first_error;
	}
	/* Clients that never started lost every frame they should have had. */
	for (uint32_t i = 0; i < cfg.clients; i++)
		if (!w[i].started && !cfg.churn)
			lost += (uint64_t)cfg.sessions * cfg.frames;
	if (req.n)
		qsort(req.v, req.n, sizeof *req.v, lt_cmp_double);
	if (wait.n)
		qsort(wait.v, wait.n, sizeof *wait.v, lt_cmp_double);
	const double secs = wall_ms / 1000.0;
	const double fps = secs > 0 ? (double)frames / secs : 0.0;
	const double mbps = secs > 0 ? (double)bytes / (1024.0 * 1024.0) / secs : 0.0;
	lt_grid g;
	uint32_t nv = lt_grid_make(&g, cfg.vertices) ? g.nv : 0;
	lt_grid_free(&g);

	if (o.json) {
		printf("{\"mode\":\"%s\",\"clients\":%u,\"sessions_per_client\":%u,\"frames\":%u,"
		       "\"vertices\":%u,\"stalled_clients\":%u,\"churn\":%u,\"sessions_done\":%llu,"
		       "\"frames_received\":%llu,\"lost_frames\":%llu,\"errors\":%llu,"
		       "\"stalled_errors\":%llu,\"poll\":%s,\"wall_s\":%.3f,\"frames_per_s\":%.1f,\"mb_per_s\":%.2f,"
		       "\"requests\":%zu,\"latency_p50_ms\":%.3f,\"latency_p99_ms\":%.3f,"
		       "\"frame_wait_p50_ms\":%.3f,\"frame_wait_p99_ms\":%.3f",
		       cfg.churn ? "churn" : "run", (unsigned)cfg.clients, (unsigned)cfg.sessions,
		       (unsigned)cfg.frames, (unsigned)nv, (unsigned)cfg.stalled, (unsigned)cfg.churn,
		       (unsigned long long)sessions, (unsigned long long)frames, (unsigned long long)lost,
		       (unsigned long long)errors, (unsigned long long)stalled_errors,
		       cfg.poll ? "true" : "false", secs, fps, mbps,
		       req.n, lt_quantile(&req, 0.5), lt_quantile(&req, 0.99), lt_quantile(&wait, 0.5),
		       lt_quantile(&wait, 0.99));
		if (first != NULL) {
			printf(",\"first_error\":");
			cli_json_str(stdout, first);
		}
		printf("}\n");
		fflush(stdout);
	} else {
		if (cfg.churn)
			printf("drape loadtest: %u clients x %u connect/close rounds (%llu sessions created "
			       "and deleted)\n",
			       (unsigned)cfg.clients, (unsigned)cfg.churn, (unsigned long long)sessions);
		else
			printf("drape loadtest: %u clients x %u sessions x %u frames of %u vertices"
			       "%s%u stalled clients\n",
			       (unsigned)cfg.clients, (unsigned)cfg.sessions, (unsigned)cfg.frames,
			       (unsigned)nv, ", ", (unsigned)cfg.stalled);
		printf("  frames:      %llu received, %llu lost\n", (unsigned long long)frames,
		       (unsigned long long)lost);
		printf("  throughput:  %.1f frames/s, %.2f MB/s over %.2f s\n", fps, mbps, secs);
		printf("  requests:    %zu, latency p50 %.2f ms, p99 %.2f ms\n", req.n,
		       lt_quantile(&req, 0.5), lt_quantile(&req, 0.99));
		if (!cfg.churn)
			printf("  frame wait:  p50 %.2f ms, p99 %.2f ms\n", lt_quantile(&wait, 0.5),
			       lt_quantile(&wait, 0.99));
		printf("  errors:      %llu\n", (unsigned long long)errors);
	}
	if (first != NULL)
		fprintf(stderr, "drape loadtest: first error: %s\n", first);
	for (uint32_t i = 0; i < total; i++) {
		free(w[i].req.v);
		free(w[i].wait.v);
	}
	free(w);
	free(req.v);
	free(wait.v);
	cli_embed_stop(&emb);
	if (cli_interrupted)
		return CLI_INTERRUPTED;
	return errors == 0 && lost == 0 ? CLI_OK : CLI_DATAERR;
}
