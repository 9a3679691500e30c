/*
 * Running sessions: the run queue and the solver work items.
 *
 * Every runnable session waits in one FIFO. A free worker takes the head,
 * solves exactly one frame on libuv's threadpool, and after_work (back on
 * the loop) stores and publishes that frame and puts the session at the
 * tail again if it is still running. So sessions interleave frame by frame
 * whatever their size, no session waits behind another's whole run, and a
 * cancel takes effect within one frame.
 *
 * While a work item is in flight the session is `busy`: the worker owns its
 * sim and work buffers, and the loop touches neither (update and collider
 * ops answer EBUSY, delete is deferred until the frame lands).
 */
#include <stdlib.h>
#include <string.h>

#include "server/checkpoint.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/server.h"
#include "server/stream.h"

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
}

void srv_sched_enqueue(srv_server *srv, srv_session *s)
{
	if (!s->started)
		s->state = PROTO_STATE_QUEUED;
	if (!s->busy && !s->in_queue)
		srv_sched_append(srv, s);
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
	proto_buf b = { NULL, 0 };
	drape_error err;
	if (proto_stream_encode(&m, &b, &err) == DRAPE_OK)
		srv_stream_publish(srv->stream, b.data, b.len);
	else
		srv_error("session %u: cannot encode its end message: %s", (unsigned)s->id, err.message);
	proto_buf_free(&b);
}

/* Worker thread: one frame. Touches only s->sim and the work fields. */
static void srv_work(uv_work_t *w)
{
	srv_session *s = w->data;
	drape_error_clear(&s->work_err);
	memset(&s->work_stats, 0, sizeof s->work_stats);
	s->work_disk_ok = false;
	s->work_msg = NULL;
	s->work_msg_len = 0;
	drape_sim_set_pool(s->sim, s->work_pool);
	s->work_rc = drape_sim_step(s->sim, &s->work_stats, &s->work_err);
	if (s->work_rc != DRAPE_OK)
		return;
	drape_sim_get_positions(s->sim, s->work_positions);
	s->work_disk_ok = srv_frames_write(&s->frames, s->work_stats.frame, &s->work_stats, s->work_positions,
					   s->work_record);
	const uint64_t every = s->server->cfg->checkpoint_every;
	if (every != 0 && s->work_stats.frame % every == 0)
		srv_ckpt_save_state_worker(s);
	/* Encoding here keeps the loop free of per-vertex work. */
	proto_stream_msg m;
	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_FRAME;
	m.session = s->id;
	m.frame.index = s->work_stats.frame;
	m.frame.vertex_count = s->vertices;
	m.frame.positions = s->work_positions;
	m.frame.stats = s->work_stats;
	proto_buf b = { NULL, 0 };
	if (proto_stream_encode(&m, &b, NULL) == DRAPE_OK) {
		s->work_msg = b.data;
		s->work_msg_len = b.len;
	}
}

static void srv_finish_run(srv_server *srv, srv_session *s, proto_state state, const char *how)
{
	s->state = state;
	s->end_pending = false;
	srv_sched_publish_end(srv, s);
	srv_info("session %u %s at frame %u", (unsigned)s->id, how, (unsigned)s->frames_done);
}

/* Loop: the frame of s landed. A failed frame still lets a parked job run
 * (failed sessions accept collider changes like idle ones). */
static void srv_after_work(uv_work_t *w, int status)
{
	srv_session *s = w->data;
	srv_server *srv = s->server;
	s->busy = false;
	srv->in_flight--;
	if (s->deleted) {
		free(s->work_msg);
		s->work_msg = NULL;
		if (s->end_pending)
			srv_sched_publish_end(srv, s);
		srv_sessions_remove(&srv->sessions, s);
		srv_session_free(s);
		goto next;
	}
	s->last_active_ms = srv_now_ms(srv);
	const bool wanted = s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED;
	if (status != 0 || s->work_rc != DRAPE_OK) {
		s->has_error = true;
		if (status != 0)
			drape_error_setf(&s->error, DRAPE_EINTERNAL, "frame %u: the work item failed: %s",
					 (unsigned)s->frames_done + 1, uv_strerror(status));
		else
			s->error = s->work_err;
		s->error_frame = s->frames_done + 1;
		s->has_stats = true;
		s->stats = s->work_stats;
		srv_sched_dequeue(srv, s);
		srv_warn("session %u failed at frame %u: %s", (unsigned)s->id, (unsigned)s->error_frame,
			 s->error.message);
		srv_finish_run(srv, s, PROTO_STATE_FAILED, "failed");
		goto landed;
	}

	const uint32_t index = s->work_stats.frame;
	srv_frames_store(&s->frames, index, &s->work_stats, &s->work_positions, s->work_disk_ok);
	if (s->work_positions == NULL)
		s->work_positions = malloc((size_t)s->vertices * 12u);
	s->frames_done = index;
	s->stats = s->work_stats;
	s->has_stats = true;
	srv->counters.frames_solved++;
	if (s->work_msg != NULL) {
		srv_stream_publish(srv->stream, s->work_msg, s->work_msg_len);
		srv->counters.frames_served++;
		free(s->work_msg);
		s->work_msg = NULL;
	}

	if (s->work_positions == NULL) {
		s->has_error = true;
		drape_error_setf(&s->error, DRAPE_ENOMEM, "frame %u: out of memory for the next frame buffer",
				 (unsigned)index + 1);
		s->error_frame = index + 1;
		srv_sched_dequeue(srv, s);
		srv_finish_run(srv, s, PROTO_STATE_FAILED, "failed");
	} else if (!wanted) {
		/* Canceled while this frame was solving: the frame is kept (the
		 * sim has advanced), and the end goes out after it. */
		if (s->end_pending) {
			s->end_pending = false;
			srv_finish_run(srv, s, PROTO_STATE_CANCELED, "canceled");
		}
	} else if (s->target != 0 && s->frames_done >= s->target) {
		srv_finish_run(srv, s, PROTO_STATE_DONE, "done");
		srv_ckpt_save_state(srv, s);
	} else if (!srv->stopping) {
		s->state = PROTO_STATE_RUNNING;
		srv_sched_append(srv, s);
	}
	/* A collider op that waited for this frame goes first; the session
	 * rejoins the queue when it is done. */
landed:
	srv_job_unpark(srv, s);
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
		s->work.data = s;
		s->work_target = s->target;
		s->work_last_target = s->last_target;
		s->work_params = s->params;
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
			s->error_frame = s->frames_done + 1;
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
	s->target = target;
	s->last_target = target;
	s->started = false;
	s->has_error = false;
	s->error_frame = 0;
	memset(&s->error, 0, sizeof s->error);
	srv_sched_enqueue(srv, s);
	rep->u.run.state = s->state;
	rep->u.run.frames_done = s->frames_done;
	rep->u.run.frames_target = target;
	rep->u.run.queue_position = srv_sched_position(srv, s);
	srv_ckpt_save_run(srv, s);
	if (target != 0)
		srv_info("session %u runs from frame %u to %u", (unsigned)s->id, (unsigned)s->frames_done,
			 (unsigned)target);
	else
		srv_info("session %u runs from frame %u until cancelled", (unsigned)s->id, (unsigned)s->frames_done);
	return DRAPE_OK;
}

drape_err srv_op_run(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
		     drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
		return drape_error_setf(err, DRAPE_ESTATE, "session %u is already %s", (unsigned)s->id,
					proto_state_name(s->state));
	const uint32_t n = req->u.run.frames;
	if (n != 0 && (uint64_t)s->frames_done + n >= UINT32_MAX)
		return drape_error_setf(err, DRAPE_EINVAL,
					"session.run: frames: %u more frames after frame %u overflow the "
					"frame counter",
					(unsigned)n, (unsigned)s->frames_done);
	return srv_start_run(srv, s, n ? s->frames_done + n : 0, rep, err);
}

drape_err srv_op_resume(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
		return drape_error_setf(err, DRAPE_ESTATE, "session %u is already %s", (unsigned)s->id,
					proto_state_name(s->state));
	if (s->last_target != 0 && s->frames_done >= s->last_target)
		return drape_error_setf(err, DRAPE_ESTATE,
					"session %u has nothing to resume: its last run ended at frame %u, "
					"its target",
					(unsigned)s->id, (unsigned)s->frames_done);
	if (s->last_target == 0 && s->state == PROTO_STATE_IDLE && s->frames_done == 0)
		return drape_error_setf(err, DRAPE_ESTATE,
					"session %u has never run; use session.run", (unsigned)s->id);
	return srv_start_run(srv, s, s->last_target, rep, err);
}

drape_err srv_op_cancel(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED) {
		srv_sched_dequeue(srv, s);
		s->state = PROTO_STATE_CANCELED;
		if (s->busy)
			s->end_pending = true;
		else
			srv_finish_run(srv, s, PROTO_STATE_CANCELED, "canceled");
		srv_ckpt_save_run(srv, s);
	}
	rep->u.cancel.state = s->state;
	rep->u.cancel.frames_done = s->frames_done;
	return DRAPE_OK;
}
