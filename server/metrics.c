/*
 * Prometheus metrics and /healthz (see metrics.h). Names follow the
 * Prometheus conventions: a drape_ prefix, base units (seconds, bytes),
 * _total for counters.
 */
#include "server/metrics.h"

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drape/error.h"
#include "server/fieldcache.h"
#include "server/config.h"

/* Bucket bounds in seconds, shared by every histogram: from half a
 * millisecond (a status request) to a minute (a big frame on a busy box). */
static const double srv_bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				     0.25,   0.5,   1,      2.5,   5,    10,    30,    60 };
#define SRV_NBOUNDS (sizeof srv_bounds / sizeof srv_bounds[0])

typedef struct srv_histogram {
	atomic_uint_fast64_t buckets[SRV_NBOUNDS + 1]; /* not cumulative; the last is +Inf */
	atomic_uint_fast64_t sum_ns;
	atomic_uint_fast64_t count;
} srv_histogram;

/* Enough for every drape_err (0 to -22 today) with room to grow. */
#define SRV_MAX_CODES 64

static atomic_uint_fast64_t srv_counters_[SRV_M_COUNTER_COUNT_];
static srv_histogram srv_hists_[SRV_H_COUNT_];
static atomic_uint_fast64_t srv_requests_[PROTO_OP_COUNT_];
static atomic_uint_fast64_t srv_errors_[SRV_MAX_CODES];
static atomic_uint_fast64_t srv_reloads_ok_, srv_reloads_failed_;
static atomic_uint_fast64_t srv_last_reload_ns_;
static atomic_uint_fast64_t srv_tick_ms_;

static pthread_mutex_t srv_gauges_mu = PTHREAD_MUTEX_INITIALIZER;
static srv_metrics_gauges srv_gauges_;

static nng_http_server *srv_http_;
static nng_http_handler *srv_h_metrics_, *srv_h_health_;

uint64_t srv_metrics_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void srv_metrics_add(srv_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&srv_counters_[c], n, memory_order_relaxed);
}

uint64_t srv_metrics_counter(srv_counter c)
{
	return atomic_load_explicit(&srv_counters_[c], memory_order_relaxed);
}

void srv_metrics_observe(srv_hist h, double seconds)
{
	if (!(seconds >= 0))
		seconds = 0;
	size_t b = 0;
	while (b < SRV_NBOUNDS && seconds > srv_bounds[b])
		b++;
	srv_histogram *x = &srv_hists_[h];
	atomic_fetch_add_explicit(&x->buckets[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&x->sum_ns, (uint64_t)(seconds * 1e9), memory_order_relaxed);
	atomic_fetch_add_explicit(&x->count, 1, memory_order_relaxed);
}

void srv_metrics_request(proto_op op)
{
	if ((unsigned)op < PROTO_OP_COUNT_)
		atomic_fetch_add_explicit(&srv_requests_[op], 1, memory_order_relaxed);
}

void srv_metrics_error(int code)
{
	if (code < 0 && -code < SRV_MAX_CODES)
		atomic_fetch_add_explicit(&srv_errors_[-code], 1, memory_order_relaxed);
}

void srv_metrics_reload(bool ok, double seconds)
{
	atomic_fetch_add(ok ? &srv_reloads_ok_ : &srv_reloads_failed_, 1);
	atomic_store(&srv_last_reload_ns_, (uint64_t)(seconds * 1e9));
}

void srv_metrics_publish(const srv_metrics_gauges *g, uint64_t now_ms)
{
	pthread_mutex_lock(&srv_gauges_mu);
	srv_gauges_ = *g;
	pthread_mutex_unlock(&srv_gauges_mu);
	atomic_store(&srv_tick_ms_, now_ms);
}

void srv_metrics_count_user(srv_metrics_gauges *g, const char *name)
{
	if (name == NULL || name[0] == '\0')
		return;
	for (size_t i = 0; i < g->user_count; i++)
		if (strcmp(g->users[i].name, name) == 0) {
			g->users[i].sessions++;
			return;
		}
	if (g->user_count == SRV_METRICS_MAX_USERS) {
		g->users_other++;
		return;
	}
	snprintf(g->users[g->user_count].name, sizeof g->users[0].name, "%s", name);
	g->users[g->user_count++].sessions = 1;
}

int srv_metrics_health_status(uint64_t last_tick_ms, uint64_t now_ms, uint64_t bound_ms)
{
	if (last_tick_ms == 0)
		return 503;
	return now_ms <= last_tick_ms || now_ms - last_tick_ms <= bound_ms ? 200 : 503;
}

/* ---- rendering ------------------------------------------------------------ */

typedef struct srv_text {
	char *p;
	size_t len, cap;
	bool failed;
} srv_text;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void srv_text_add(srv_text *t, const char *fmt, ...)
{
	if (t->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap * 2 + (size_t)n;
		char *q = realloc(t->p, cap);
		if (q == NULL) {
			t->failed = true;
			return;
		}
		t->p = q;
		t->cap = cap;
	}
}

static void srv_head(srv_text *t, const char *name, const char *type, const char *help)
{
	srv_text_add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void srv_render_hist(srv_text *t, const char *name, const char *help, srv_hist h)
{
	srv_histogram *x = &srv_hists_[h];
	srv_head(t, name, "histogram", help);
	/* Each bucket is read once and summed here, so the cumulative counts
	 * never decrease even while observations land meanwhile; the count is
	 * the +Inf bucket's. */
	uint64_t cum = 0;
	for (size_t b = 0; b <= SRV_NBOUNDS; b++) {
		cum += atomic_load_explicit(&x->buckets[b], memory_order_relaxed);
		if (b < SRV_NBOUNDS)
			srv_text_add(t, "%s_bucket{le=\"%g\"} %llu\n", name, srv_bounds[b], (unsigned long long)cum);
		else
			srv_text_add(t, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
	}
	srv_text_add(t, "%s_sum %.9f\n", name,
		     (double)atomic_load_explicit(&x->sum_ns, memory_order_relaxed) / 1e9);
	srv_text_add(t, "%s_count %llu\n", name, (unsigned long long)cum);
}

static void srv_render_counter(srv_text *t, const char *name, const char *help, srv_counter c)
{
	srv_head(t, name, "counter", help);
	srv_text_add(t, "%s %llu\n", name, (unsigned long long)srv_metrics_counter(c));
}

static uint64_t srv_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return 0;
	unsigned long long size = 0, rss = 0;
	int n = fscanf(f, "%llu %llu", &size, &rss);
	fclose(f);
	return n == 2 ? rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

bool srv_metrics_render(char **out, size_t *len)
{
	srv_text t = { malloc(16384), 0, 16384, false };
	if (t.p == NULL)
		return false;
	srv_metrics_gauges g;
	pthread_mutex_lock(&srv_gauges_mu);
	g = srv_gauges_;
	pthread_mutex_unlock(&srv_gauges_mu);

	srv_head(&t, "drape_build_info", "gauge", "The daemon's version (always 1).");
	srv_text_add(&t, "drape_build_info{version=\"%s\"} 1\n", SRV_VERSION);
	srv_head(&t, "drape_uptime_seconds", "gauge", "Seconds since the daemon started.");
	srv_text_add(&t, "drape_uptime_seconds %.3f\n", g.uptime_s);

	srv_head(&t, "drape_sessions", "gauge", "Sessions by state.");
	for (int s = 0; s < PROTO_STATE_COUNT_; s++)
		srv_text_add(&t, "drape_sessions{state=\"%s\"} %llu\n", proto_state_name((proto_state)s),
			     (unsigned long long)g.sessions[s]);
	/* User names are letters, digits, '.', '_' and '-' (users file), so
	 * they need no escaping in a label. */
	srv_head(&t, "drape_user_sessions", "gauge",
		 "Sessions per owner user (draped --users-file); \"(other)\" past 256 users.");
	for (size_t i = 0; i < g.user_count; i++)
		srv_text_add(&t, "drape_user_sessions{user=\"%s\"} %llu\n", g.users[i].name,
			     (unsigned long long)g.users[i].sessions);
	if (g.users_other > 0)
		srv_text_add(&t, "drape_user_sessions{user=\"(other)\"} %llu\n",
			     (unsigned long long)g.users_other);
	srv_head(&t, "drape_queue_length", "gauge", "Runnable sessions waiting for a solver worker.");
	srv_text_add(&t, "drape_queue_length %llu\n", (unsigned long long)g.queue_length);
	srv_head(&t, "drape_queue_oldest_wait_seconds", "gauge",
		 "How long the session waiting longest in the run queue has waited.");
	srv_text_add(&t, "drape_queue_oldest_wait_seconds %.6f\n", g.queue_oldest_wait_s);
	srv_render_hist(&t, "drape_queue_wait_seconds",
			"Time from runnable to started on a worker, per frame.", SRV_H_QUEUE_WAIT);
	srv_head(&t, "drape_frames_in_flight", "gauge", "Frames being solved on workers now.");
	srv_text_add(&t, "drape_frames_in_flight %llu\n", (unsigned long long)g.frames_in_flight);

	srv_render_counter(&t, "drape_frames_solved_total", "Frames solved and stored.", SRV_M_FRAMES_SOLVED);
	srv_render_counter(&t, "drape_frames_served_total",
			   "Frames sent to clients (frames.get replies and the PUB stream).", SRV_M_FRAMES_SERVED);
	srv_render_hist(&t, "drape_frame_solve_seconds", "Solver time of one frame on a worker.", SRV_H_SOLVE);
	srv_render_counter(&t, "drape_sessions_created_total", "Sessions created.", SRV_M_SESSIONS_CREATED);
	srv_render_counter(&t, "drape_sessions_expired_total", "Sessions deleted after their idle timeout.",
			   SRV_M_SESSIONS_EXPIRED);

	srv_head(&t, "drape_requests_total", "counter", "Requests decoded, by op.");
	for (int op = 1; op < PROTO_OP_COUNT_; op++)
		srv_text_add(&t, "drape_requests_total{op=\"%s\"} %llu\n", proto_op_name((proto_op)op),
			     (unsigned long long)atomic_load(&srv_requests_[op]));
	srv_render_hist(&t, "drape_request_duration_seconds",
			"Time from a request's arrival to its reply being handed to the socket "
			"(frames.get requests held for their frame included).",
			SRV_H_REQUEST);
	srv_head(&t, "drape_errors_total", "counter", "Error replies, by error code.");
	for (int c = 1; c < SRV_MAX_CODES; c++) {
		const char *name = drape_err_name((drape_err)-c);
		uint64_t n = atomic_load(&srv_errors_[c]);
		/* Every known code is listed (0 included), so a rate() sees
		 * the series before the first error. */
		if (strcmp(name, "EUNKNOWN") != 0)
			srv_text_add(&t, "drape_errors_total{code=\"%s\"} %llu\n", name, (unsigned long long)n);
		else if (n > 0)
			srv_text_add(&t, "drape_errors_total{code=\"%d\"} %llu\n", -c, (unsigned long long)n);
	}
	srv_render_counter(&t, "drape_received_bytes_total", "Request bytes received on the control socket.",
			   SRV_M_BYTES_IN);
	srv_render_counter(&t, "drape_sent_bytes_total", "Reply bytes sent on the control socket.", SRV_M_BYTES_OUT);
	srv_render_counter(&t, "drape_connections_opened_total", "Control connections accepted.",
			   SRV_M_CONNECTIONS_OPENED);
	srv_render_counter(&t, "drape_connections_refused_total",
			   "Control connections closed for max-connections or max-connections-per-peer.",
			   SRV_M_CONNECTIONS_REFUSED);
	srv_head(&t, "drape_connections", "gauge", "Control connections open.");
	srv_text_add(&t, "drape_connections %llu\n", (unsigned long long)g.connections);
	srv_head(&t, "drape_frames_get_waiting", "gauge", "frames.get requests held until their frame is solved.");
	srv_text_add(&t, "drape_frames_get_waiting %llu\n", (unsigned long long)g.waiters);

	srv_head(&t, "drape_memory_estimate_bytes", "gauge",
		 "Estimated memory of every session, its frames in memory and the builds in progress "
		 "(what --max-memory limits).");
	srv_text_add(&t, "drape_memory_estimate_bytes %llu\n", (unsigned long long)g.memory_estimate);
	srv_head(&t, "drape_memory_budget_bytes", "gauge", "The --max-memory budget; 0 = none.");
	srv_text_add(&t, "drape_memory_budget_bytes %llu\n", (unsigned long long)g.memory_budget);
	srv_head(&t, "drape_resident_memory_bytes", "gauge", "The daemon's resident set size.");
	srv_text_add(&t, "drape_resident_memory_bytes %llu\n", (unsigned long long)srv_rss_bytes());

	uint64_t hits = 0, misses = 0, bytes = 0;
	uint32_t entries = 0;
	srv_fieldcache_counts(&hits, &misses, &entries, &bytes);
	srv_head(&t, "drape_field_cache_hits_total", "counter", "Mesh collider fields found in the shared cache.");
	srv_text_add(&t, "drape_field_cache_hits_total %llu\n", (unsigned long long)hits);
	srv_head(&t, "drape_field_cache_misses_total", "counter", "Mesh collider fields built because not cached.");
	srv_text_add(&t, "drape_field_cache_misses_total %llu\n", (unsigned long long)misses);
	srv_head(&t, "drape_field_cache_entries", "gauge", "Fields in the shared cache.");
	srv_text_add(&t, "drape_field_cache_entries %u\n", (unsigned)entries);
	srv_head(&t, "drape_field_cache_bytes", "gauge", "Bytes of the fields in the shared cache.");
	srv_text_add(&t, "drape_field_cache_bytes %llu\n", (unsigned long long)bytes);

	srv_head(&t, "drape_reloads_total", "counter", "SIGHUP reloads, by result.");
	srv_text_add(&t, "drape_reloads_total{result=\"ok\"} %llu\n", (unsigned long long)atomic_load(&srv_reloads_ok_));
	srv_text_add(&t, "drape_reloads_total{result=\"failed\"} %llu\n",
		     (unsigned long long)atomic_load(&srv_reloads_failed_));
	srv_head(&t, "drape_last_reload_duration_seconds", "gauge", "How long the last reload took.");
	srv_text_add(&t, "drape_last_reload_duration_seconds %.6f\n", (double)atomic_load(&srv_last_reload_ns_) / 1e9);
	const uint64_t tick = atomic_load(&srv_tick_ms_);
	const uint64_t now = srv_metrics_now_ms();
	srv_head(&t, "drape_loop_heartbeat_age_seconds", "gauge",
		 "Time since the event loop last ticked (/healthz fails past its bound).");
	srv_text_add(&t, "drape_loop_heartbeat_age_seconds %.3f\n", tick == 0 || now < tick ? 0.0 : (double)(now - tick) / 1e3);

	if (t.failed) {
		free(t.p);
		return false;
	}
	*out = t.p;
	*len = t.len;
	return true;
}

/* ---- HTTP ----------------------------------------------------------------- */

static void srv_http_reply(nng_aio *aio, uint16_t status, const char *type, const void *body, size_t len)
{
	nng_http_res *res;
	int rv = nng_http_res_alloc(&res);
	if (rv != 0) {
		nng_aio_finish(aio, rv);
		return;
	}
	if ((rv = nng_http_res_set_status(res, status)) != 0 ||
	    (rv = nng_http_res_set_header(res, "Content-Type", type)) != 0 ||
	    (rv = nng_http_res_set_header(res, "Cache-Control", "no-store")) != 0 ||
	    (rv = nng_http_res_copy_data(res, body, len)) != 0) {
		nng_http_res_free(res);
		nng_aio_finish(aio, rv);
		return;
	}
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

/* nng thread. */
static void srv_http_metrics(nng_aio *aio)
{
	char *body = NULL;
	size_t len = 0;
	if (!srv_metrics_render(&body, &len)) {
		static const char oom[] = "out of memory\n";
		srv_http_reply(aio, 500, "text/plain; charset=utf-8", oom, sizeof oom - 1);
		return;
	}
	srv_http_reply(aio, 200, "text/plain; version=0.0.4; charset=utf-8", body, len);
	free(body);
}

/* nng thread. */
static void srv_http_health(nng_aio *aio)
{
	const uint64_t tick = atomic_load(&srv_tick_ms_);
	const uint64_t now = srv_metrics_now_ms();
	const int status = srv_metrics_health_status(tick, now, SRV_HEALTH_BOUND_MS);
	char body[160];
	int n = snprintf(body, sizeof body, "%s: event loop last answered %llu ms ago (bound %u ms)\n",
			 status == 200 ? "ok" : "unhealthy",
			 (unsigned long long)(tick == 0 || now < tick ? 0 : now - tick), SRV_HEALTH_BOUND_MS);
	srv_http_reply(aio, (uint16_t)status, "text/plain; charset=utf-8", body, (size_t)n);
}

int srv_metrics_open(const char *url)
{
	char http[512];
	const char *rest = strstr(url, "://");
	if (rest == NULL)
		return NNG_EADDRINVAL;
	snprintf(http, sizeof http, "http://%s", rest + 3);
	nng_url *u = NULL;
	int rv = nng_url_parse(&u, http);
	if (rv != 0)
		return rv;
	rv = nng_http_server_hold(&srv_http_, u);
	nng_url_free(u);
	if (rv != 0) {
		srv_http_ = NULL;
		return rv;
	}
	if ((rv = nng_http_handler_alloc(&srv_h_metrics_, "/metrics", srv_http_metrics)) == 0 &&
	    (rv = nng_http_server_add_handler(srv_http_, srv_h_metrics_)) != 0) {
		nng_http_handler_free(srv_h_metrics_);
		srv_h_metrics_ = NULL;
	}
	if (rv == 0 && (rv = nng_http_handler_alloc(&srv_h_health_, "/healthz", srv_http_health)) == 0 &&
	    (rv = nng_http_server_add_handler(srv_http_, srv_h_health_)) != 0) {
		nng_http_handler_free(srv_h_health_);
		srv_h_health_ = NULL;
	}
	if (rv == 0)
		rv = nng_http_server_start(srv_http_);
	if (rv != 0)
		srv_metrics_close();
	return rv;
}

void srv_metrics_close(void)
{
	if (srv_http_ == NULL)
		return;
	/* Removing a handler hands it back to us; the server frees those it
	 * still holds when released. */
	if (srv_h_metrics_ != NULL && nng_http_server_del_handler(srv_http_, srv_h_metrics_) == 0)
		nng_http_handler_free(srv_h_metrics_);
	if (srv_h_health_ != NULL && nng_http_server_del_handler(srv_http_, srv_h_health_) == 0)
		nng_http_handler_free(srv_h_health_);
	srv_h_metrics_ = srv_h_health_ = NULL;
	nng_http_server_stop(srv_http_);
	nng_http_server_release(srv_http_);
	srv_http_ = NULL;
}
