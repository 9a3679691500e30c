/*
 * Prometheus metrics and the health check (--metrics tcp://HOST:PORT).
 *
 * Counters and histograms are process-wide atomics that any thread adds to
 * (the control socket's nng threads, the loop, solver workers); the HTTP
 * handlers run on nng's threads and read them with atomic loads. What only
 * the loop may read (sessions by state, the run queue, the memory estimate)
 * the loop publishes as a snapshot under a mutex at every cron tick
 * (srv_metrics_publish), together with the tick's time: /healthz answers 200
 * while the last tick is younger than SRV_HEALTH_BOUND_MS and 503 after, so
 * a loop that stopped turning shows as unhealthy even though nng's threads
 * still answer HTTP.
 *
 * The listener comes from nng_http_server_hold, which hands out the same
 * server for the same address: another part of draped (the web view's
 * --http) given the same URL shares it and registers its own paths.
 */
#ifndef DRAPE_SRV_METRICS_H
#define DRAPE_SRV_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* /healthz says 503 once the loop has not ticked for this long. The cron
 * ticks every 250 ms; 5 s leaves room for a loaded machine. */
#define SRV_HEALTH_BOUND_MS 5000u

typedef enum srv_counter {
	SRV_M_FRAMES_SOLVED = 0,
	SRV_M_FRAMES_SERVED,
	SRV_M_SESSIONS_CREATED,
	SRV_M_SESSIONS_EXPIRED,
	SRV_M_BYTES_IN,
	SRV_M_BYTES_OUT,
	SRV_M_CONNECTIONS_OPENED,
	SRV_M_CONNECTIONS_REFUSED,
	SRV_M_COUNTER_COUNT_
} srv_counter;

typedef enum srv_hist {
	SRV_H_REQUEST = 0, /* request received to reply sent, seconds */
	SRV_H_SOLVE,       /* one frame on a worker, seconds */
	SRV_H_QUEUE_WAIT,  /* runnable to started on a worker, seconds */
	SRV_H_COUNT_
} srv_hist;

/* What the loop publishes at each cron tick. */
#define SRV_METRICS_MAX_USERS 256

typedef struct srv_metrics_gauges {
	uint64_t sessions[PROTO_STATE_COUNT_];
	uint64_t queue_length;
	double queue_oldest_wait_s; /* the longest a queued session has waited now */
	uint64_t memory_estimate;   /* bytes: sessions, their frames, builds in progress */
	uint64_t memory_budget;     /* --max-memory, 0 = none */
	uint64_t frames_in_flight;
	uint64_t connections;
	uint64_t waiters;           /* frames.get requests held for their frame */
	double uptime_s;
	/* Sessions per owner user (draped --users-file; the sessions of a
	 * box without users have no owner and are not counted here). Users
	 * past SRV_METRICS_MAX_USERS are summed in users_other. */
	struct {
		char name[33];
		uint64_t sessions;
	} users[SRV_METRICS_MAX_USERS];
	size_t user_count;
	uint64_t users_other;
} srv_metrics_gauges;

/* Adds one session of user `name` to g's per-user counts (loop). */
void srv_metrics_count_user(srv_metrics_gauges *g, const char *name);

/* Any thread. */
void srv_metrics_add(srv_counter c, uint64_t n);
void srv_metrics_observe(srv_hist h, double seconds);
void srv_metrics_request(proto_op op);
void srv_metrics_error(int code); /* a drape_err code of an error reply */
void srv_metrics_reload(bool ok, double seconds);
uint64_t srv_metrics_counter(srv_counter c);

/* Loop: publishes g and stamps the loop's heartbeat (monotonic ms). */
void srv_metrics_publish(const srv_metrics_gauges *g, uint64_t now_ms);

/* 200 when the loop's last heartbeat is at most bound_ms older than now_ms,
 * 503 otherwise (also before the first). */
int srv_metrics_health_status(uint64_t last_tick_ms, uint64_t now_ms, uint64_t bound_ms);

/*
 * Writes the text exposition (format 0.0.4) into a heap buffer *out of
 * *len bytes. Returns false when out of memory. Any thread.
 */
bool srv_metrics_render(char **out, size_t *len);

/* Starts serving /metrics and /healthz on url (tcp://HOST:PORT or
 * http://HOST:PORT). Returns 0 or an nng error code. */
int srv_metrics_open(const char *url);
/* Stops serving (handlers removed, the server released). */
void srv_metrics_close(void);

/* Monotonic milliseconds (CLOCK_MONOTONIC), comparable across threads. */
uint64_t srv_metrics_now_ms(void);

#endif
