/*
 * The daemon: one libuv loop owns every session; nng threads hand requests
 * to it (control.c); solver work runs on libuv's threadpool one frame per
 * work item (scheduler.c); frames go to their readers through held
 * frames.get requests (waiters.c), and on the optional PUB socket
 * (stream.c) when one is configured.
 */
#ifndef DRAPE_SRV_SERVER_H
#define DRAPE_SRV_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "proto/proto.h"
#include "server/config.h"
#include "server/replay.h"
#include "server/session.h"
#include "server/users.h"

struct srv_control;
struct srv_stream;
struct srv_waiter;

/* Exit codes (sysexits.h values). */
enum {
	SRV_EXIT_OK = 0,
	SRV_EXIT_USAGE = 64,
	SRV_EXIT_NOINPUT = 66,
	SRV_EXIT_UNAVAILABLE = 69,
	SRV_EXIT_SOFTWARE = 70,
	SRV_EXIT_CANTCREAT = 73
};

typedef struct srv_counters {
	uint64_t requests;
	uint64_t frames_solved;
	uint64_t frames_served;
	uint64_t sessions_created;
	uint64_t sessions_expired;
} srv_counters;

typedef struct srv_server {
	srv_config *cfg;
	uv_loop_t loop;
	uv_timer_t cron;
	uv_signal_t sigterm, sigint;
	struct srv_control *control;
	struct srv_web *web; /* --http: the browser view (web.c); NULL without */
	struct srv_stream *stream; /* NULL unless --stream is given */
	/* Held frames.get requests (waiters.c) and the timer of their
	 * deadlines. */
	struct srv_waiter *waiters;
	uint32_t waiter_count;
	uv_timer_t wait_timer;
	bool wait_timer_ready;
	srv_sessions sessions;
	srv_replay replay;
	srv_counters counters;
	/* Runnable sessions waiting for a worker, FIFO; each solves one frame
	 * and goes back to the tail, so sessions share the workers fairly. */
	srv_session *runq_head, *runq_tail;
	uint32_t in_flight; /* frame work items queued to libuv */
	uint32_t outputs;   /* output work items (scheduler.c) queued to libuv */
	uint32_t jobs;      /* op work items (create, colliders, preflight) in flight or parked */
	uint32_t creating;  /* creates admitted and still being built */
	uint64_t reserved;  /* bytes the jobs in progress reserved against --max-memory (budget.h) */
	size_t trim_sessions; /* session count at the last cron: fewer now = memory to trim */
	struct srv_job *jobs_head; /* every live job (jobs.c) */
	bool stopping;      /* SIGTERM/SIGINT seen */
	bool closed;        /* sockets closed, handles closing */
	bool loop_ready;    /* uv_loop_init succeeded */
	uint64_t started_ms;
	double started_s;
	char build[128];    /* "draped 0.1.0 (avx2, solver pool of 2 threads)" */
	/* The one solver pool every session shares (--pool-threads; NULL for
	 * 1). srv_sched_kick hands it to a frame that solves alone. */
	drape_pool *pool;
	char sessions_dir[4096];
	/* The request being handled (loop thread, set by srv_request_handle):
	 * its user (NULL without --users-file) and the peer it came from. */
	const struct srv_user *req_user;
	char req_host[64];
	/* Operations (reload.c, notify.c, metrics.c): SIGHUP reloads, SIGUSR1
	 * reopens the log file, the watchdog timer pings systemd. argc/argv
	 * are main's, parsed again by a reload; NULL argv = no reload. */
	uv_signal_t sighup, sigusr1;
	uv_timer_t watchdog;
	bool watchdog_on;
	bool metrics_on;
	int argc;
	char **argv;
} srv_server;

/* Sets up everything from a finished config; returns an SRV_EXIT_* code. */
int srv_server_init(srv_server *s, srv_config *cfg);
/* Runs the loop until shutdown completes; returns the exit code. */
int srv_server_run(srv_server *s);
void srv_server_free(srv_server *s);

/* Loop: handles one request's bytes and returns the reply bytes (the caller
 * owns out->data). Never fails: every problem becomes an error reply.
 * pipe_id (the nng pipe it came on) keys the replay cache for requests
 * without a client id. */
typedef enum srv_reply_mode {
	SRV_REPLY_NOW,   /* *out holds the reply */
	SRV_REPLY_LATER, /* a job answers with srv_control_reply(reply_to, ...) */
	SRV_REPLY_NONE   /* a repeat of a request still in progress: no reply; the
			  * client's REQ socket resends and gets the cached one */
} srv_reply_mode;

srv_reply_mode srv_request_handle(srv_server *s, const void *buf, size_t len, uint32_t pipe_id, void *reply_to,
				  proto_buf *out);

/* Request bookkeeping a job carries to its reply. */
typedef struct srv_reply_key {
	bool cache;   /* store the reply in the replay cache */
	uint64_t key; /* replay key (client id or pipe key) */
	uint64_t id;  /* request id */
	uint32_t pipe; /* nng pipe the request came on (0 = none) */
} srv_reply_key;

/* Loop: encodes rep (or an error reply for rc/err answering head), stores
 * it for replay when k->cache, and leaves the bytes in *out. */
void srv_reply_finish(srv_server *srv, const proto_header *head, proto_reply *rep, drape_err rc, drape_error *err,
		      const srv_reply_key *k, proto_buf *out);
/* True when a job for (key, id) is in progress. */
bool srv_jobs_pending(const srv_server *srv, uint64_t key, uint64_t id);

/* Loop milliseconds, for activity stamps. */
uint64_t srv_now_ms(srv_server *s);

/* ---- scheduler.c ---- */
/* Puts s in the run queue (state queued) and starts work if a worker is
 * free. */
void srv_sched_enqueue(srv_server *srv, srv_session *s);
/* Takes s out of the run queue if it is there. */
void srv_sched_dequeue(srv_server *srv, srv_session *s);
/* Starts work items while workers are free. */
void srv_sched_kick(srv_server *srv);
/* Frames the sim of s has solved: frames_done (stored, retrievable) plus
 * the frame in the output stage and the one waiting for it. */
uint32_t srv_sched_solved(const srv_session *s);
/* 1-based place of s among the queued (not yet started) sessions; 0 if none. */
uint32_t srv_sched_position(const srv_server *srv, const srv_session *s);
/* Publishes the END message of a run that stopped. */
void srv_sched_publish_end(srv_server *srv, srv_session *s);
/* After a solve, an output or a job of s landed: once nothing of s is in
 * flight, publishes the END of a stopped run (after its last frame),
 * writes a checkpoint asked for meanwhile, and frees s if it was deleted
 * (s must not be used after a call when s->deleted). */
void srv_sched_settle(srv_server *srv, srv_session *s);
/* Called by the server when in_flight drops to zero during shutdown. */
void srv_server_maybe_finish(srv_server *srv);

/* ---- ops: each fills rep (already proto_reply_init'ed) or returns an
 * error with err filled. ---- */
/* session.create in four steps: admission on the loop (limits, params,
 * the id), building on a worker (solver, token, preflight, frame cache),
 * writing its files on that worker (srv_create_persist: the inputs, the
 * first checkpoint and the owner, fsynced, so that the loop, which answers
 * every client, never waits for them), and entering the table on the loop
 * (the next id persisted before the reply). */
drape_err srv_create_admit(srv_server *srv, const proto_request *req, drape_sim_params *p, uint32_t *id,
			   drape_error *err);
srv_session *srv_create_build(srv_server *srv, uint32_t id, const proto_request *req, const drape_sim_params *p,
			      drape_error *err);
/* Worker, on the session srv_create_build made (its owner and host set):
 * EIO with err filled when the state dir refuses a file. */
drape_err srv_create_persist(srv_server *srv, srv_session *s, const void *raw, size_t raw_len,
			     drape_error *err);
drape_err srv_create_finish(srv_server *srv, srv_session *s, proto_reply *rep,
			    drape_error *err);
drape_err srv_op_update(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
			drape_error *err);
drape_err srv_op_status(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err);
/* all: an admin asks for every user's sessions (request.c checks the role). */
drape_err srv_op_list(srv_server *srv, bool all, proto_reply *rep, proto_session_info **scratch, drape_error *err);
/* Bytes of retained frames s holds in its frames.bin. */
uint64_t srv_session_disk_bytes(const srv_session *s);
/* session.topology (topology.c): the session's mesh as created. The reply
 * points into s, which outlives the encode. */
drape_err srv_op_topology(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err);
/* session.colliders (colview.c): on success rep points into *views and
 * *poses (the deforming colliders' poses at the frame), which the caller
 * frees after encoding the reply. */
drape_err srv_op_colliders(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
			   proto_collider_view **views, float **poses, drape_error *err);
drape_err srv_op_delete(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err);
drape_err srv_op_frames_get(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
			    proto_frame **frames_out, float **buf_out, drape_error *err);
drape_err srv_op_run(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
		     drape_error *err);
drape_err srv_op_resume(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err);
drape_err srv_op_cancel(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err);
/* Collider ops and preflight: checks on the loop, the solver call on a
 * worker (building a mesh collider's field can take seconds). */
drape_err srv_collider_admit(srv_server *srv, const srv_session *s, const proto_request *req, drape_error *err);
/* Loop, with s idle: the bytes a collider.add of an animated mesh or a
 * collider.frames would add to s's memory estimate (*more), checked against
 * max_session_memory (DRAPE_ELIMIT) and the server budget --max-memory
 * (DRAPE_ENOMEM), both errors naming the op's "frames" field. */
drape_err srv_collider_admit_memory(srv_server *srv, const srv_session *s, const proto_request *req,
				    uint64_t *more, drape_error *err);
/* What s's deforming colliders hold, by the solver's own count. */
uint64_t srv_session_collider_bytes(const srv_session *s);
drape_err srv_collider_apply(const srv_config *cfg, srv_session *s, const proto_request *req, proto_reply *rep,
			     drape_error *err);
drape_err srv_preflight_admit(const srv_config *cfg, const proto_request *req, drape_error *err);
drape_err srv_preflight_run(const proto_request *req, proto_reply *rep, drape_tri_pair **pairs_out,
			    drape_error *err);

/* Deletes a session now (or, when busy, once its frame lands): removes its
 * state directory too. */
void srv_session_destroy(srv_server *srv, srv_session *s, const char *why);

#endif
