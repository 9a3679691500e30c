/*
 * Running sessions: the run queue, the solver work items and the output
 * stage.
 *
 * Every runnable session waits in one FIFO. A free worker takes the head
 * and solves exactly one frame on libuv's threadpool; after_work (back on
 * the loop) hands the frame to the session's output stage and puts the
 * session at the tail again if it is still running. So sessions interleave
 * frame by frame whatever their size, no session waits behind another's
 * whole run, and a cancel takes effect within one frame.
 *
 * The output stage is a second work item per session: it writes the frame
 * to the on-disk cache, writes a checkpoint when one is due (after the
 * frame's record, so state.bin never gets ahead of frames.bin) and encodes
 * the stream message; when it lands, the loop stores the frame in the ring,
 * counts it done and publishes it. It runs while the session's next frame
 * is solving, so a running session's frame interval approaches its solve
 * time instead of solve + output. A session has at most one frame in the
 * output stage and one solved frame waiting for it (`pending`, which holds
 * the session out of the run queue), so frames are stored, written and
 * published strictly in order and its memory stays two frame buffers.
 *
 * While a solve or an op job is in flight the session is `busy`: the worker
 * owns its sim and work fields, and the loop touches neither (update and
 * collider ops answer EBUSY or wait, delete is deferred until the frame
 * lands). While `writing`, the output worker owns the out fields; the sim
 * is free for a collider op, but anything that ends with the session (the
 * END message, a delete, a checkpoint asked for on the loop) waits for the
 * frames in flight to land (srv_sched_settle).
 *
 * A write the state dir refuses during a run (a frame's record, a
 * checkpoint) ends the run as failed with EIO at that frame: the frames
 * solved so far stay served (the frame store keeps in memory what the disk
 * does not have), and session.run / session.resume write those frames
 * before they start again, or refuse with EIO while the disk is still full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/checkpoint.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/stream.h"
#include "server/waiters.h"
#include "server/web.h"

void srv_sched_dequeue(srv_server *srv, srv_session *s)
{
	if (!s->in_queue)
		return;
	srv_session **pp = &srv->runq_head;
	srv_session *prev = NULL;
	while (*pp != NULL && *pp != s) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (*pp == s) {
		*pp = s->qnext;
		if (srv->runq_tail == s)
			srv->runq_tail = prev;
	}
	s->qnext = NULL;
	s->in_queue = false;
}

static void srv_sched_append(srv_server *srv, srv_session *s)
{
	s->qnext = NULL;
	if (srv->runq_tail != NULL)
		srv->runq_tail->qnext = s;
	else
		srv->runq_head = s;
	srv->runq_tail = s;
	s->in_queue = true;
	s->queued_ns = uv_hrtime();
}

uint32_t srv_sched_solved(const srv_session *s)
{
	return s->frames_done + (s->writing ? 1u : 0u) + (s->pending ? 1u : 0u);
}

/* Puts a running session back in the queue if it may solve another frame:
 * its sim is free, no solved frame waits for the output stage, and its
 * target is not solved yet (frames still in the output stage count). */
static void srv_sched_requeue(srv_server *srv, srv_session *s)
{
	if (s->busy || s->in_queue || s->pending || s->fail_pending || s->deleted)
		return;
	if (s->target != 0 && srv_sched_solved(s) >= s->target)
		return;
	srv_sched_append(srv, s);
}

void srv_sched_enqueue(srv_server *srv, srv_session *s)
{
	if (!s->started)
		s->state = PROTO_STATE_QUEUED;
	srv_sched_requeue(srv, s);
	srv_sched_kick(srv);
}

uint32_t srv_sched_position(const srv_server *srv, const srv_session *s)
{
	if (s->state != PROTO_STATE_QUEUED)
		return 0;
	uint32_t pos = 1;
	for (const srv_session *q = srv->runq_head; q != NULL && q != s; q = q->qnext)
		if (q->state == PROTO_STATE_QUEUED)
			pos++;
	return pos;
}

void srv_sched_publish_end(srv_server *srv, srv_session *s)
{
	proto_stream_msg m;
	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_END;
	m.session = s->id;
	m.state = s->state;
	m.frames_done = s->frames_done;
	if (s->state == PROTO_STATE_FAILED && s->has_error) {
		m.has_error = true;
		m.error = s->error;
	}
	/* Readers waiting for a frame learn that none is coming. */
	srv_waiters_wake(srv, s);
	if (srv->stream == NULL)
		return;
	proto_buf b = { NULL, 0 };
	drape_error err;
	if (proto_stream_encode(&m, &b, &err) == DRAPE_OK)
		srv_stream_publish(srv->stream, b.data, b.len);
	else
		srv_error("session %u: cannot encode its end message: %s", (unsigned)s->id, err.message);
	proto_buf_free(&b);
}

/* Ends the run in `state`. Its END message follows the run's last frame:
 * while a frame or job is in flight it waits for srv_sched_settle. */
static void srv_finish_run(srv_server *srv, srv_session *s, proto_state state, const char *how)
{
	s->state = state;
	srv_info("session %u %s at frame %u%s", (unsigned)s->id, how, (unsigned)srv_sched_solved(s), s->who);
	if (s->busy || s->writing) {
		s->end_pending = true;
		return;
	}
	s->end_pending = false;
	srv_sched_publish_end(srv, s);
}

/* Ends a running or queued run of s as failed because a write of its files
 * failed at `frame` (e says which and why). */
static void srv_fail_storage(srv_server *srv, srv_session *s, uint32_t frame, const drape_error *e)
{
	srv_sched_dequeue(srv, s);
	s->has_error = true;
	s->error = *e;
	s->error_frame = frame;
	srv_finish_run(srv, s, PROTO_STATE_FAILED, "failed (state directory)");
}

void srv_sched_settle(srv_server *srv, srv_session *s)
{
	if (s->busy || s->writing)
		return;
	if (s->deleted) {
		if (s->end_pending)
			srv_sched_publish_end(srv, s);
		/* Its directory went at delete time, but the output stage may
		 * have written a checkpoint into it since. */
		srv_ckpt_remove_session(srv, s);
		srv_sessions_remove(&srv->sessions, s);
		srv_session_free(s);
		return;
	}
	if (s->end_pending) {
		s->end_pending = false;
		srv_sched_publish_end(srv, s);
	}
	drape_error e;
	if (s->ckpt_want && srv_ckpt_save_state(srv, s, &e) != DRAPE_OK &&
	    (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED))
		srv_fail_storage(srv, s, s->frames_done, &e);
}

/* Worker thread: one frame. Touches only s->sim and the work fields. */
static void srv_work(uv_work_t *w)
{
	srv_session *s = w->data;
	drape_error_clear(&s->work_err);
	memset(&s->work_stats, 0, sizeof s->work_stats);
	drape_sim_set_pool(s->sim, s->work_pool);
	const uint64_t t0 = uv_hrtime();
	s->work_rc = drape_sim_step(s->sim, &s->work_stats, &s->work_err);
	srv_metrics_observe(SRV_H_SOLVE, (double)(uv_hrtime() - t0) / 1e9);
	if (s->work_rc != DRAPE_OK)
		return;
	/* A tearing cloth may have split vertices this frame: the frame
	 * carries its vertex count and, when it tore, its new mesh. */
	const uint32_t n = drape_sim_vertex_count(s->sim);
	s->work_n = n;
	s->work_topology = s->work_stats.topology;
	if (n > s->cap_vertices) {
		s->work_rc = drape_error_setf(&s->work_err, DRAPE_EINTERNAL,
					      "frame %u: %u vertices, beyond the %u a frame holds",
					      (unsigned)s->work_stats.frame, (unsigned)n,
					      (unsigned)s->cap_vertices);
		return;
	}
	if (s->work_stats.split_vertices > 0) {
		s->work_tris = malloc((size_t)s->triangles * 12u);
		s->work_origin = malloc((size_t)n * 4u);
		if (s->work_tris == NULL || s->work_origin == NULL ||
		    drape_sim_get_mesh(s->sim, s->work_tris, s->work_origin, &s->work_err) != DRAPE_OK) {
			free(s->work_tris);
			free(s->work_origin);
			s->work_tris = s->work_origin = NULL;
			s->work_rc = drape_error_setf(&s->work_err, DRAPE_ENOMEM,
						      "frame %u: out of memory for the torn mesh",
						      (unsigned)s->work_stats.frame);
			return;
		}
	}
	drape_sim_get_positions(s->sim, s->work_positions);
	/* The state is copied now, while this worker holds the sim; the
	 * output stage writes it after the frame's record. */
	const uint64_t every = s->server->cfg->checkpoint_every;
	if (s->dir != NULL && every != 0 && s->work_stats.frame % every == 0)
		s->work_ckpt = srv_ckpt_snapshot(s, PROTO_STATE_RUNNING, s->work_target, s->work_last_target,
						 &s->work_params);
}

/* Worker thread: the output of frame frames_done + 1. Touches only the out
 * fields, the output stage's record scratch, the cache file's record of
 * this frame (nobody reads it before the loop has stored the frame) and
 * state.bin (the loop leaves it alone while writing). */
static void srv_out_work(uv_work_t *w)
{
	srv_session *s = w->data;
	/* A torn mesh is on disk before any frame solved on it. */
	drape_error merr;
	bool mesh_ok = s->out_tris == NULL ||
		       srv_ckpt_save_mesh(s, s->out_topology, s->out_stats.frame, s->out_n, s->out_tris,
					  s->out_origin, &merr) == DRAPE_OK;
	s->out_disk_ok = mesh_ok && srv_frames_write_mesh(&s->frames, s->out_stats.frame, &s->out_stats,
							  s->out_positions, s->out_n, s->out_topology,
							  s->work_record);
	s->out_disk_errno = s->out_disk_ok ? 0 : mesh_ok ? errno : EIO;
	/* A checkpoint must never claim a frame whose record is not on disk
	 * (a reload would lose the frames between): it is skipped with it. */
	if (s->out_ckpt != NULL && (s->out_disk_ok || s->frames.fd < 0)) {
		s->out_ckpt_done = true;
		s->out_ckpt_rc = srv_ckpt_write_snapshot(s, s->out_ckpt, &s->out_ckpt_err);
	} else {
		srv_ckpt_snap_free(s->out_ckpt);
	}
	s->out_ckpt = NULL;
	/* Encoding here, into the message nng will send, keeps the loop free
	 * of per-vertex work. Without a PUB stream there is nothing to
	 * encode: readers fetch the frame from the ring. */
	if (s->server->stream == NULL)
		return;
	proto_stream_msg m;
	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_FRAME;
	m.session = s->id;
	m.frame.index = s->out_stats.frame;
	m.frame.vertex_count = s->out_n;
	m.frame.positions = s->out_positions;
	m.frame.stats = s->out_stats;
	m.frame.topology = s->out_topology;
	if (s->out_tris != NULL) {
		m.frame.triangles = s->out_tris;
		m.frame.triangle_count = s->triangles;
	}
	proto_buf b = { NULL, 0 };
	if (proto_stream_encode(&m, &b, NULL) == DRAPE_OK)
		s->out_msg = srv_stream_msg_new(b.data, b.len);
	proto_buf_free(&b);
}

static void srv_out_done(uv_work_t *w, int status);

/* Loop: hands the solved frame in the work fields to the output stage
 * (which must be free); srv_out_queue then starts it. Between the two the
 * session counts as writing. */
static void srv_out_prepare(srv_server *srv, srv_session *s)
{
	float *t = s->out_positions;
	s->out_positions = s->work_positions;
	s->work_positions = t; /* may be NULL; srv_sched_kick allocates it */
	s->out_stats = s->work_stats;
	s->out_n = s->work_n;
	s->out_topology = s->work_topology;
	free(s->out_tris);
	free(s->out_origin);
	s->out_tris = s->work_tris;
	s->out_origin = s->work_origin;
	s->work_tris = s->work_origin = NULL;
	s->out_ckpt = s->work_ckpt;
	s->work_ckpt = NULL;
	if (s->ckpt_want && !s->busy) {
		/* Asked for on the loop meanwhile: it goes out with this frame,
		 * with the run fields as they are now (the sim is at this
		 * frame), so a session that keeps running still gets it. */
		srv_ckpt_snap_free(s->out_ckpt);
		s->out_ckpt = srv_ckpt_snapshot(s, (uint32_t)s->state, s->target, s->last_target, &s->params);
		s->ckpt_want = false;
	}
	s->out_disk_ok = false;
	s->out_disk_errno = 0;
	s->out_ckpt_done = false;
	s->out_ckpt_rc = DRAPE_OK;
	s->out_msg = NULL;
	s->writing = true;
	srv->outputs++;
}

static void srv_out_queue(srv_server *srv, srv_session *s)
{
	s->out_work.data = s;
	if (uv_queue_work(&srv->loop, &s->out_work, srv_out_work, srv_out_done) != 0) {
		/* libuv refuses work only for a missing callback; should it ever,
		 * the frame is still written and published, here on the loop. */
		srv_error("session %u: cannot queue the output of frame %u; writing it on the loop", (unsigned)s->id,
			  (unsigned)s->out_stats.frame);
		srv_out_work(&s->out_work);
		srv_out_done(&s->out_work, 0);
	}
}

/* Loop: the solve of frame frames_done + 1 failed (work_rc, work_err and
 * fail_status say how) and no earlier frame is in flight: the run fails. */
static void srv_fail_run(srv_server *srv, srv_session *s)
{
	const int status = s->fail_status;
	s->fail_pending = false;
	s->has_error = true;
	if (status != 0)
		drape_error_setf(&s->error, DRAPE_EINTERNAL, "frame %u: the work item failed: %s",
				 (unsigned)s->frames_done + 1, uv_strerror(status));
	else
		s->error = s->work_err;
	s->error_frame = s->frames_done + 1;
	s->has_stats = true;
	s->stats = s->work_stats;
	srv_ckpt_snap_free(s->work_ckpt);
	s->work_ckpt = NULL;
	srv_warn("session %u failed at frame %u%s: %s", (unsigned)s->id, (unsigned)s->error_frame, s->who,
		 s->error.message);
	srv_finish_run(srv, s, PROTO_STATE_FAILED, "failed");
}

/* Loop: the solve of a frame of s landed. A failed frame still lets a
 * parked job run (failed sessions accept collider changes like idle ones). */
static void srv_after_work(uv_work_t *w, int status)
{
	srv_session *s = w->data;
	srv_server *srv = s->server;
	bool out = false;
	s->busy = false;
	srv->in_flight--;
	if (s->deleted) {
		/* Its solved frame is dropped. */
		srv_ckpt_snap_free(s->work_ckpt);
		s->work_ckpt = NULL;
		srv_sched_settle(srv, s);
		goto next;
	}
	s->last_active_ms = srv_now_ms(srv);
	if (status != 0 || s->work_rc != DRAPE_OK) {
		srv_sched_dequeue(srv, s);
		s->fail_status = status;
		/* The run fails after its last good frame has landed, so a
		 * client that sees "failed" can fetch every frame before it. */
		if (s->writing)
			s->fail_pending = true;
		else
			srv_fail_run(srv, s);
		goto landed;
	}

	/* A frame solved in more substeps for a collider's motion (sim.c,
	 * "substeps chosen from the body's motion") is logged: the frame
	 * message does not carry it. */
	if (s->work_stats.split > 1)
		srv_info("session %u frame %u solved in %u substeps, %ux the schedule's: a collider's "
			 "surface turned %.1f degrees",
			 (unsigned)s->id, (unsigned)s->work_stats.frame, (unsigned)s->work_stats.substeps,
			 (unsigned)s->work_stats.split, (double)s->work_stats.body_turn * (180.0 / 3.14159265358979));

	/* The frame is kept even when the run was canceled while it solved
	 * (the sim has advanced); the END goes out after it. */
	if (s->writing) {
		s->pending = true; /* srv_out_done starts it */
	} else {
		srv_out_prepare(srv, s);
		out = true;
	}
	if ((s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED) && !srv->stopping)
		srv_sched_requeue(srv, s);
	/* A collider op that waited for this frame goes first; the session
	 * rejoins the queue when it is done. */
landed:
	srv_job_unpark(srv, s);
	srv_sched_settle(srv, s);
next:
	srv_sched_kick(srv);
	/* The output goes on the thread pool after the next solve, so that
	 * the solve gets the first free thread and core: the gap between two
	 * solves is the loss a session sees, the output overlaps the solve. */
	if (out)
		srv_out_queue(srv, s);
	if (srv->stopping)
		srv_server_maybe_finish(srv);
}

/* Loop: the output of frame frames_done + 1 landed: store, count and
 * publish it, in order. */
static void srv_out_done(uv_work_t *w, int status)
{
	srv_session *s = w->data;
	srv_server *srv = s->server;
	s->writing = false;
	srv->outputs--;
	if (s->deleted) {
		srv_stream_msg_free(s->out_msg);
		s->out_msg = NULL;
		/* A frame solved meanwhile is dropped with the session. (Without
		 * one, a solve may be in flight and its worker owns work_ckpt;
		 * srv_after_work drops that.) */
		if (s->pending) {
			s->pending = false;
			srv_ckpt_snap_free(s->work_ckpt);
			s->work_ckpt = NULL;
		}
		srv_sched_settle(srv, s);
		goto next;
	}
	if (status != 0) {
		/* Never canceled, so this does not happen; if it did, the frame
		 * is kept in memory and the disk stops being trusted before it. */
		srv_error("session %u: the output of frame %u failed: %s", (unsigned)s->id,
			  (unsigned)s->out_stats.frame, uv_strerror(status));
		s->out_disk_ok = false;
		s->out_disk_errno = EIO;
	}
	const uint32_t index = s->out_stats.frame;
	srv_frames_store_mesh(&s->frames, index, &s->out_stats, &s->out_positions, s->out_n,
			      s->out_topology, s->out_disk_ok);
	if (s->out_tris != NULL) {
		/* The table takes the mesh; without memory for it, frames.get
		 * of these frames fails (EIO) rather than serve a wrong mesh. */
		if (!srv_tear_add(&s->tear, s->out_topology, index, s->out_n, s->out_tris, s->out_origin))
			srv_error("session %u: out of memory for the mesh torn at frame %u",
				  (unsigned)s->id, (unsigned)index);
		s->out_tris = s->out_origin = NULL;
	}
	/* What the disk refused is recorded before anything is published: the
	 * frame itself stays served from memory. */
	bool refused = false;
	drape_error why;
	if (!s->out_disk_ok && s->frames.fd >= 0) {
		drape_error_setf(&why, DRAPE_EIO, "frame %u: cannot write its record to frames.bin: %s (in %s)",
				 (unsigned)index, strerror(s->out_disk_errno ? s->out_disk_errno : EIO),
				 s->dir ? s->dir : "the state directory");
		srv_ckpt_failed(s, &why);
		refused = true;
	}
	if (s->out_ckpt_done) {
		srv_ckpt_landed(s, s->out_ckpt_rc == DRAPE_OK, &s->out_ckpt_err);
		if (s->out_ckpt_rc != DRAPE_OK && !refused) {
			why = s->out_ckpt_err;
			refused = true;
		}
	}
	s->frames_done = index;
	s->stats = s->out_stats;
	s->has_stats = true;
	srv->counters.frames_solved++;
	srv_metrics_add(SRV_M_FRAMES_SOLVED, 1);
	srv_web_frame(srv->web, s->id, index, &s->stats);
	if (s->out_msg != NULL) {
		srv_stream_send(srv->stream, s->out_msg);
		srv->counters.frames_served++;
		srv_metrics_add(SRV_M_FRAMES_SERVED, 1);
		s->out_msg = NULL;
	}
	/* The frame solved meanwhile goes next, even when stopping: no solved
	 * frame is lost. */
	if (s->pending) {
		s->pending = false;
		srv_out_prepare(srv, s);
		srv_out_queue(srv, s);
	}
	const bool wanted = s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED;
	if (s->fail_pending) {
		srv_fail_run(srv, s);
	} else if (wanted && refused) {
		srv_fail_storage(srv, s, index, &why);
	} else if (wanted && s->target != 0 && s->frames_done >= s->target) {
		/* The final checkpoint goes first, so a run whose state cannot be
		 * kept ends failed rather than done. */
		s->state = PROTO_STATE_DONE;
		if (srv_ckpt_save_state(srv, s, &why) != DRAPE_OK)
			srv_fail_storage(srv, s, index, &why);
		else
			srv_finish_run(srv, s, PROTO_STATE_DONE, "done");
	} else if (wanted && !srv->stopping) {
		srv_sched_requeue(srv, s);
	}
	srv_sched_settle(srv, s);
	/* After the run's state is settled, so a reader of the last frame
	 * also learns that the run is over. */
	srv_waiters_wake(srv, s);
next:
	srv_sched_kick(srv);
	if (srv->stopping)
		srv_server_maybe_finish(srv);
}

void srv_sched_kick(srv_server *srv)
{
	while (!srv->stopping && srv->in_flight < srv->cfg->threads && srv->runq_head != NULL) {
		srv_session *s = srv->runq_head;
		srv->runq_head = s->qnext;
		if (srv->runq_head == NULL)
			srv->runq_tail = NULL;
		s->qnext = NULL;
		s->in_queue = false;
		srv_metrics_observe(SRV_H_QUEUE_WAIT, (double)(uv_hrtime() - s->queued_ns) / 1e9);
		s->work.data = s;
		s->work_target = s->target;
		s->work_last_target = s->last_target;
		s->work_params = s->params;
		s->work_ckpt = NULL;
		/* The ring hands back the buffer of the frame it dropped, or
		 * none while it fills up. */
		if (s->work_positions == NULL && (s->work_positions = malloc((size_t)s->cap_vertices * 12u)) == NULL) {
			s->has_error = true;
			drape_error_setf(&s->error, DRAPE_ENOMEM, "frame %u: out of memory for the frame buffer",
					 (unsigned)srv_sched_solved(s) + 1);
			s->error_frame = srv_sched_solved(s) + 1;
			srv_finish_run(srv, s, PROTO_STATE_FAILED, "failed");
			continue;
		}
		/* The shared pool goes to a frame that will solve alone: with
		 * other frames in flight, or others waiting for a free worker,
		 * the cores are already busy with sessions, and pool threads
		 * would only preempt them. (A frame that got it keeps it to its
		 * end when another starts meanwhile; the pool never makes one
		 * wait for the other, see pool.h.) */
		s->work_pool = srv->in_flight == 0 && (srv->runq_head == NULL || srv->cfg->threads == 1)
				       ? srv->pool
				       : NULL;
		s->busy = true;
		s->started = true;
		s->state = PROTO_STATE_RUNNING;
		int rv = uv_queue_work(&srv->loop, &s->work, srv_work, srv_after_work);
		if (rv != 0) {
			s->busy = false;
			s->has_error = true;
			drape_error_setf(&s->error, DRAPE_EINTERNAL, "cannot queue a frame: %s", uv_strerror(rv));
			s->error_frame = srv_sched_solved(s) + 1;
			srv_finish_run(srv, s, PROTO_STATE_FAILED, "failed");
			continue;
		}
		srv->in_flight++;
	}
}

static drape_err srv_start_run(srv_server *srv, srv_session *s, uint32_t target, proto_reply *rep,
			       drape_error *err)
{
	if (srv->stopping)
		return drape_error_setf(err, DRAPE_EUNAVAILABLE, "the server is shutting down");
	/* The canceled run ends before the new one starts, on the stream too. */
	if (s->end_pending) {
		s->end_pending = false;
		srv_sched_publish_end(srv, s);
	}
	/* The run's checkpoint goes first, after any frames that only memory
	 * holds (their write failed before): while the state dir still
	 * refuses, the run is refused with EIO and nothing changes. (While a
	 * frame or job is in flight it goes out after them.) */
	const uint32_t old_target = s->target, old_last = s->last_target;
	const proto_state old_state = s->state;
	const bool old_started = s->started;
	s->target = target;
	s->last_target = target;
	s->started = false;
	s->state = PROTO_STATE_QUEUED;
	drape_error e;
	if (srv_ckpt_save_run(srv, s, &e) != DRAPE_OK) {
		s->target = old_target;
		s->last_target = old_last;
		s->state = old_state;
		s->started = old_started;
		return drape_error_setf(err, e.code, "%s: %s", proto_op_name(rep->op), e.message);
	}
	s->has_error = false;
	s->error_frame = 0;
	memset(&s->error, 0, sizeof s->error);
	srv_sched_enqueue(srv, s);
	rep->u.run.state = s->state;
	rep->u.run.frames_done = srv_sched_solved(s);
	rep->u.run.frames_target = target;
	rep->u.run.queue_position = srv_sched_position(srv, s);
	if (target != 0)
		srv_info("session %u runs from frame %u to %u%s", (unsigned)s->id, (unsigned)s->frames_done,
			 (unsigned)target, s->who);
	else
		srv_info("session %u runs from frame %u until cancelled%s", (unsigned)s->id,
			 (unsigned)s->frames_done, s->who);
	return DRAPE_OK;
}

drape_err srv_op_run(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
		     drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
		return drape_error_setf(err, DRAPE_ESTATE, "session %u is already %s", (unsigned)s->id,
					proto_state_name(s->state));
	/* Counted from the frames already solved, including those the output
	 * stage has not stored yet (after a cancel), as the cancel reported. */
	const uint32_t solved = srv_sched_solved(s);
	const uint32_t n = req->u.run.frames;
	if (n != 0 && (uint64_t)solved + n >= UINT32_MAX)
		return drape_error_setf(err, DRAPE_EINVAL,
					"session.run: frames: %u more frames after frame %u overflow the "
					"frame counter",
					(unsigned)n, (unsigned)solved);
	return srv_start_run(srv, s, n ? solved + n : 0, rep, err);
}

drape_err srv_op_resume(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
		return drape_error_setf(err, DRAPE_ESTATE, "session %u is already %s", (unsigned)s->id,
					proto_state_name(s->state));
	if (s->last_target != 0 && srv_sched_solved(s) >= s->last_target)
		return drape_error_setf(err, DRAPE_ESTATE,
					"session %u has nothing to resume: its last run ended at frame %u, "
					"its target",
					(unsigned)s->id, (unsigned)srv_sched_solved(s));
	if (s->last_target == 0 && s->state == PROTO_STATE_IDLE && srv_sched_solved(s) == 0)
		return drape_error_setf(err, DRAPE_ESTATE,
					"session %u has never run; use session.run", (unsigned)s->id);
	return srv_start_run(srv, s, s->last_target, rep, err);
}

drape_err srv_op_cancel(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED) {
		srv_sched_dequeue(srv, s);
		/* A frame solving or being written now is kept; the END goes
		 * out after it (srv_finish_run). */
		srv_finish_run(srv, s, PROTO_STATE_CANCELED, "canceled");
		/* The cancel has taken effect; a checkpoint the disk refuses
		 * shows in the session's storage_error. */
		srv_ckpt_save_run(srv, s, NULL);
	}
	rep->u.cancel.state = s->state;
	/* Every frame solved so far is kept, those still in the output stage
	 * included, so that is what the run has done: at most the one frame
	 * solving now follows it. */
	rep->u.cancel.frames_done = srv_sched_solved(s);
	return DRAPE_OK;
}
