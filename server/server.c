/*
 * The daemon's life: set-up, the housekeeping cron, signals and the orderly
 * shutdown (stop taking work, let frames in flight land, checkpoint, close
 * sockets, let the loop run dry).
 */
#include "server/server.h"

#include <errno.h>
#include <malloc.h>
#include <nng/nng.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/budget.h"
#include "server/checkpoint.h"
#include "server/fieldcache.h"
#include "server/fielddisk.h"
#include "server/control.h"
#include "server/log.h"
#include "server/resume.h"
#include "server/metrics.h"
#include "server/notify.h"
#include "server/reload.h"
#include "server/stream.h"
#include "server/waiters.h"
#include "server/web.h"

/* Housekeeping period. Idle expiry is checked this often, so a session
 * lives at most this much beyond its timeout. */
#define SRV_CRON_MS 250
/* Replay entries outlive idle sessions by at least this much, longer than
 * nng's default resend time (60 s). */
#define SRV_REPLAY_MIN_AGE_MS (10u * 60u * 1000u)

uint64_t srv_now_ms(srv_server *s)
{
	return uv_now(&s->loop);
}

/* Loop: what /metrics reports that only the loop may read, and the
 * heartbeat /healthz checks (metrics.h). */
static void srv_publish_gauges(srv_server *srv)
{
	srv_metrics_gauges g;
	memset(&g, 0, sizeof g);
	const uint64_t now_ns = uv_hrtime();
	for (size_t i = 0; i < srv->sessions.count; i++) {
		const srv_session *s = srv->sessions.items[i];
		if (s->deleted)
			continue;
		if ((unsigned)s->state < PROTO_STATE_COUNT_)
			g.sessions[s->state]++;
		srv_metrics_count_user(&g, s->owner);
		g.memory_estimate += s->memory + srv_frames_memory(&s->frames);
	}
	for (const srv_session *q = srv->runq_head; q != NULL; q = q->qnext) {
		g.queue_length++;
		const double w = now_ns > q->queued_ns ? (double)(now_ns - q->queued_ns) / 1e9 : 0.0;
		if (w > g.queue_oldest_wait_s)
			g.queue_oldest_wait_s = w;
	}
	g.memory_estimate += srv->reserved;
	g.memory_budget = srv->cfg->max_memory;
	g.frames_in_flight = srv->in_flight;
	g.connections = srv_control_connections(srv->control);
	g.waiters = srv->waiter_count;
	g.uptime_s = (double)(srv_now_ms(srv) - srv->started_ms) / 1000.0;
	srv_metrics_publish(&g, srv_metrics_now_ms());
}

static void srv_cron(uv_timer_t *t)
{
	srv_server *srv = t->data;
	const uint64_t now = srv_now_ms(srv);
	const uint64_t idle = srv->cfg->idle_timeout_s;
	if (idle != 0) {
		/* Backwards, because destroying swaps the last item into place. */
		for (size_t i = srv->sessions.count; i-- > 0;) {
			srv_session *s = srv->sessions.items[i];
			if (s->deleted || s->busy || s->writing || s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
				continue;
			if (now - s->last_active_ms >= idle * 1000u) {
				char why[64];
				snprintf(why, sizeof why, "idle for %llu s", (unsigned long long)idle);
				srv->counters.sessions_expired++;
				srv_metrics_add(SRV_M_SESSIONS_EXPIRED, 1);
				srv_session_destroy(srv, s, why);
			}
		}
	}
	srv_sessions_reclaim_orphans(srv, now);
	uint64_t age = idle * 1000u;
	if (age < SRV_REPLAY_MIN_AGE_MS)
		age = SRV_REPLAY_MIN_AGE_MS;
	size_t n = srv_replay_expire(&srv->replay, now, age);
	if (n > 0)
		srv_debug("replay cache: forgot %zu idle clients", n);
	/* Sessions went away (deleted, expired or a failed create): hand the
	 * freed memory back to the kernel now, so the daemon's RSS follows its
	 * sessions down instead of staying at its high-water mark. */
	if (srv->sessions.count < srv->trim_sessions || n > 0)
		malloc_trim(0);
	srv_web_publish(srv->web, srv);
	srv->trim_sessions = srv->sessions.count;
	srv_publish_gauges(srv);
}

/* glibc's defaults suit short programs, not a daemon whose sessions come
 * and go: its mmap threshold rises to the largest block ever freed (up to
 * 32 MiB), after which a session's big arrays come from the heap and stay
 * there when freed; and every thread that allocates may get an arena of its
 * own (8 per core), each keeping its free memory. A fixed threshold keeps
 * big arrays in mmap (returned to the kernel on free) and few arenas keep
 * the free lists few; the solver does not allocate in its hot loops, so the
 * contention this could add is small. */
static void srv_malloc_tune(void)
{
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
	mallopt(M_ARENA_MAX, 4);
}

static void srv_close_cb(uv_handle_t *h)
{
	(void)h;
}

void srv_server_maybe_finish(srv_server *srv)
{
	if (!srv->stopping || srv->in_flight != 0 || srv->outputs != 0 || srv->jobs != 0 || srv->closed)
		return;
	srv->closed = true;
	/* Only checkpoints that landed are counted; each failure is logged
	 * with its file and reason (srv_ckpt_failed), and frames that only
	 * memory held are named, since they are lost now. */
	size_t saved = 0, failed = 0;
	uint32_t unsaved = 0;
	for (size_t i = 0; i < srv->sessions.count; i++) {
		srv_session *s = srv->sessions.items[i];
		if (s->deleted || s->dir == NULL)
			continue;
		drape_error err;
		if (srv_ckpt_save_state(srv, s, &err) == DRAPE_OK)
			saved++;
		else
			failed++;
		const uint32_t n = srv_frames_unsaved(&s->frames);
		if (n > 0)
			srv_warn("shutdown: session %u: %u frames could not be written to frames.bin and are lost",
				 (unsigned)s->id, (unsigned)n);
		unsaved += n;
	}
	if (failed == 0 && unsaved == 0)
		srv_info("shutdown: %zu sessions checkpointed", saved);
	else
		srv_warn("shutdown: %zu sessions checkpointed, %zu checkpoints failed, %u frames lost (see above)",
			 saved, failed, (unsigned)unsaved);
	srv_waiters_close(srv);
	srv_web_close(srv->web);
	srv->web = NULL;
	srv_control_close(srv->control);
	srv->control = NULL;
	srv_stream_close(srv->stream);
	srv->stream = NULL;
	if (srv->metrics_on)
		srv_metrics_close();
	srv->metrics_on = false;
	uv_timer_stop(&srv->cron);
	uv_close((uv_handle_t *)&srv->cron, srv_close_cb);
	uv_close((uv_handle_t *)&srv->sigterm, srv_close_cb);
	uv_close((uv_handle_t *)&srv->sigint, srv_close_cb);
	uv_close((uv_handle_t *)&srv->sighup, srv_close_cb);
	uv_close((uv_handle_t *)&srv->sigusr1, srv_close_cb);
	if (srv->watchdog_on) {
		uv_timer_stop(&srv->watchdog);
		uv_close((uv_handle_t *)&srv->watchdog, srv_close_cb);
	}
}

static void srv_on_signal(uv_signal_t *h, int signum)
{
	srv_server *srv = h->data;
	if (srv->stopping) {
		srv_info("%s again: still waiting for %u frames in flight", strsignal(signum),
			 (unsigned)srv->in_flight);
		return;
	}
	srv->stopping = true;
	srv_notify("STOPPING=1\nSTATUS=shutting down");
	srv_info("%s: shutting down after %u frames in flight", strsignal(signum), (unsigned)srv->in_flight);
	srv_server_maybe_finish(srv);
}

/* SIGHUP: reload (reload.h). Sessions, connections and frames in flight
 * are untouched; during shutdown there is nothing to reload for. */
static void srv_on_hup(uv_signal_t *h, int signum)
{
	(void)signum;
	srv_server *srv = h->data;
	if (srv->stopping) {
		srv_info("SIGHUP during shutdown: ignored");
		return;
	}
	srv_reload(srv, NULL);
}

/* SIGUSR1: reopen --log-file, after logrotate moved it away. */
static void srv_on_usr1(uv_signal_t *h, int signum)
{
	(void)signum;
	srv_server *srv = h->data;
	if (srv->cfg->log_file == NULL) {
		srv_info("SIGUSR1: no --log-file to reopen (the log goes to stderr)");
		return;
	}
	int e = srv_log_reopen();
	if (e != 0)
		srv_error("SIGUSR1: cannot reopen the log file %s: %s; still writing to the old one",
			  srv->cfg->log_file, strerror(e));
	else
		srv_info("SIGUSR1: log file %s reopened", srv->cfg->log_file);
}

/* The systemd watchdog: pinged from the loop, so a stuck loop stops it. */
static void srv_on_watchdog(uv_timer_t *t)
{
	(void)t;
	srv_notify("WATCHDOG=1");
}

int srv_server_init(srv_server *s, srv_config *cfg)
{
	memset(s, 0, sizeof *s);
	s->cfg = cfg;
	srv_malloc_tune();
	snprintf(s->build, sizeof s->build, "draped " SRV_VERSION " (%s, solver pool of %u thread%s)",
		 drape_sim_build(), (unsigned)cfg->pool_threads, cfg->pool_threads == 1 ? "" : "s");
	srv_sessions_init(&s->sessions);
	if (!srv_replay_init(&s->replay, 4096)) {
		srv_error("out of memory");
		return SRV_EXIT_SOFTWARE;
	}
	int rv = uv_loop_init(&s->loop);
	if (rv != 0) {
		srv_error("cannot start the event loop: %s", uv_strerror(rv));
		return SRV_EXIT_SOFTWARE;
	}
	s->loop_ready = true;
	s->started_ms = uv_now(&s->loop);
	if (cfg->pool_threads > 1) {
		drape_error err;
		if (drape_pool_create(cfg->pool_threads, &s->pool, &err) != DRAPE_OK) {
			srv_error("cannot start the solver pool of %u threads: %s",
				  (unsigned)cfg->pool_threads, err.message);
			return SRV_EXIT_SOFTWARE;
		}
	}

	/* The field cache is part of the memory budget, so it gets a share
	 * of it rather than a fixed gigabyte (budget.h). */
	srv_fieldcache_set_budget(srv_budget_fieldcache_bytes(cfg));
	srv_fielddisk_configure(cfg->state_dir, cfg->max_field_disk);
	if (cfg->max_memory != 0 && cfg->max_connections != 0 &&
	    cfg->max_connections * cfg->max_message > cfg->max_memory)
		srv_warn("max_connections x max_message = %llu bytes is more than max_memory = %llu: "
			 "connections that never authenticate could hold that much; lower --max-connections "
			 "or --max-message",
			 (unsigned long long)(cfg->max_connections * cfg->max_message),
			 (unsigned long long)cfg->max_memory);

	int e = srv_ckpt_prepare(s);
	if (e != 0) {
		srv_error("cannot create the state directory %s (or its sessions/): %s", cfg->state_dir, strerror(e));
		return SRV_EXIT_CANTCREAT;
	}
	size_t loaded = srv_ckpt_load_all(s);
	srv_info("state directory %s: %zu sessions reloaded, next id %u", cfg->state_dir, loaded,
		 (unsigned)s->sessions.next_id);

	const char *bad = NULL;
	/* The PUB stream is only there when asked for (--stream): it serves
	 * every session's frames to anyone who reaches it (config.c). */
	rv = cfg->stream_count > 0 ? srv_stream_open(cfg, &s->stream, &bad) : 0;
	if (rv != 0) {
		srv_error("cannot listen on %s: %s", bad, nng_strerror(rv));
		return SRV_EXIT_UNAVAILABLE;
	}
	rv = srv_control_open(s, &s->loop, cfg, &s->control, &bad);
	if (rv != 0) {
		srv_error("cannot listen on %s: %s", bad, nng_strerror(rv));
		s->control = NULL;
		return SRV_EXIT_UNAVAILABLE;
	}
	rv = srv_web_open(cfg, srv_control_socket(s->control), &s->web, &bad);
	if (rv != 0) {
		srv_error("cannot serve the browser view on %s: %s", bad, nng_strerror(rv));
		return SRV_EXIT_UNAVAILABLE;
	}
	if (srv_waiters_init(s) != 0) {
		srv_error("cannot start the frames.get timer");
		return SRV_EXIT_SOFTWARE;
	}
	uv_timer_init(&s->loop, &s->cron);
	s->cron.data = s;
	uv_timer_start(&s->cron, srv_cron, SRV_CRON_MS, SRV_CRON_MS);
	uv_signal_init(&s->loop, &s->sigterm);
	uv_signal_init(&s->loop, &s->sigint);
	s->sigterm.data = s->sigint.data = s;
	uv_signal_start(&s->sigterm, srv_on_signal, SIGTERM);
	uv_signal_start(&s->sigint, srv_on_signal, SIGINT);
	/* Without a handler SIGHUP (a systemd reload, logrotate's postrotate)
	 * and SIGUSR1 would end the daemon without a checkpoint. */
	uv_signal_init(&s->loop, &s->sighup);
	uv_signal_init(&s->loop, &s->sigusr1);
	s->sighup.data = s->sigusr1.data = s;
	uv_signal_start(&s->sighup, srv_on_hup, SIGHUP);
	uv_signal_start(&s->sigusr1, srv_on_usr1, SIGUSR1);
	/* The first heartbeat before the listener opens: /healthz never says
	 * 503 for a daemon that has just started. */
	srv_publish_gauges(s);
	if (cfg->metrics != NULL) {
		rv = srv_metrics_open(cfg->metrics);
		if (rv != 0) {
			srv_error("cannot serve metrics on %s: %s", cfg->metrics, nng_strerror(rv));
			return SRV_EXIT_UNAVAILABLE;
		}
		s->metrics_on = true;
		srv_info("metrics on %s (/metrics, /healthz)", cfg->metrics);
	}
	const uint64_t wd = srv_notify_watchdog_usec();
	if (wd > 0) {
		/* sd_watchdog_enabled(3) advises pinging at half the interval. */
		uint64_t ms = wd / 2000u;
		if (ms == 0)
			ms = 1;
		uv_timer_init(&s->loop, &s->watchdog);
		s->watchdog.data = s;
		uv_timer_start(&s->watchdog, srv_on_watchdog, ms, ms);
		s->watchdog_on = true;
		srv_info("systemd watchdog: pinging every %llu ms", (unsigned long long)ms);
	}
	/* A client that vanishes mid-reply must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	if (cfg->users != NULL)
		srv_info("users file %s: %zu users", cfg->users->path, cfg->users->count);
	/* Runs a stop cut short go on (resume.h), now that every handle they
	 * need is open. */
	const size_t resumed = srv_resume_interrupted(s);
	if (resumed > 0)
		srv_info("%zu interrupted runs resumed", resumed);
	srv_info("%s ready: %u solver threads, pool of %u, idle timeout %llu s, max message %llu bytes, "
		 "memory budget %llu bytes, %llu connections (%llu per peer)",
		 s->build, (unsigned)cfg->threads, (unsigned)cfg->pool_threads, (unsigned long long)cfg->idle_timeout_s,
		 (unsigned long long)cfg->max_message, (unsigned long long)cfg->max_memory,
		 (unsigned long long)cfg->max_connections, (unsigned long long)cfg->max_connections_per_peer);
	/* Every socket listens now: clients may connect. */
	srv_notify("READY=1\nSTATUS=serving");
	return SRV_EXIT_OK;
}

int srv_server_run(srv_server *s)
{
	uv_run(&s->loop, UV_RUN_DEFAULT);
	srv_info("stopped");
	return SRV_EXIT_OK;
}

static void srv_walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, srv_close_cb);
}

void srv_server_free(srv_server *s)
{
	/* Set-up may have failed half way: close what is open and let the
	 * loop finish the closes before it is freed. */
	srv_web_close(s->web);
	s->web = NULL;
	srv_control_close(s->control);
	s->control = NULL;
	srv_waiters_free(s);
	srv_stream_close(s->stream);
	s->stream = NULL;
	if (s->metrics_on)
		srv_metrics_close();
	s->metrics_on = false;
	if (s->loop_ready) {
		uv_walk(&s->loop, srv_walk_close, NULL);
		uv_run(&s->loop, UV_RUN_DEFAULT);
		uv_loop_close(&s->loop);
	}
	srv_sessions_free(&s->sessions);
	/* After the loop has run dry: no frame is stepping any more. */
	drape_pool_destroy(s->pool);
	s->pool = NULL;
	srv_replay_free(&s->replay);
	srv_fieldcache_clear();
}
