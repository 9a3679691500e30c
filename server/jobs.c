/*
 * Op jobs on the threadpool (see jobs.h).
 */
#include "server/jobs.h"

#include <stdlib.h>
#include <string.h>

#include "server/budget.h"
#include "server/checkpoint.h"
#include "server/control.h"
#include "server/log.h"

typedef struct srv_job {
	uv_work_t work;
	srv_server *srv;
	proto_request req;
	proto_header head;
	const void *raw;
	size_t raw_len;
	srv_reply_key key;
	void *reply_to;
	srv_session *session;      /* collider ops: the session; create: the new one */
	uint32_t new_id;           /* create */
	drape_sim_params params;   /* create */
	proto_reply rep;
	drape_err rc;
	drape_error err;
	drape_tri_pair *pairs;     /* preflight */
	uint64_t reserved;         /* bytes held in srv->reserved until the job is freed */
	struct srv_job *next;      /* the server's list of jobs */
	char owner[33];            /* create: the user and peer the session will record */
	char host[64];
} srv_job;

size_t srv_jobs_creating_owner(const srv_server *srv, const char *owner, uint64_t *vertices)
{
	size_t n = 0;
	for (const srv_job *j = srv->jobs_head; j != NULL; j = j->next) {
		if (j->req.op != PROTO_OP_SESSION_CREATE || strcmp(j->owner, owner) != 0)
			continue;
		n++;
		*vertices += j->req.u.create.mesh.vertex_count;
	}
	return n;
}

/* Live jobs are few (one per request in progress), so srv->jobs_head is a
 * plain list. */
bool srv_jobs_pending(const srv_server *srv, uint64_t key, uint64_t id)
{
	for (const srv_job *j = srv->jobs_head; j != NULL; j = j->next)
		if (j->key.cache && j->key.key == key && j->key.id == id)
			return true;
	return false;
}

static void srv_job_unlink(srv_job *job)
{
	for (srv_job **pp = &job->srv->jobs_head; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			return;
		}
	}
}

/* Worker thread. */
static void srv_job_work(uv_work_t *w)
{
	srv_job *job = w->data;
	drape_error_clear(&job->err);
	switch (job->req.op) {
	case PROTO_OP_SESSION_CREATE:
		job->session = srv_create_build(job->srv, job->new_id, &job->req, &job->params, &job->err);
		job->rc = job->session ? DRAPE_OK : (job->err.code ? job->err.code : DRAPE_EINTERNAL);
		if (job->session != NULL) {
			memcpy(job->session->owner, job->owner, sizeof job->owner);
			memcpy(job->session->host, job->host, sizeof job->host);
			job->rc = srv_create_persist(job->srv, job->session, job->raw, job->raw_len, &job->err);
		}
		break;
	case PROTO_OP_PREFLIGHT:
		job->rc = srv_preflight_run(&job->req, &job->rep, &job->pairs, &job->err);
		break;
	default:
		job->rc = srv_collider_apply(job->srv->cfg, job->session, &job->req, &job->rep, &job->err);
		break;
	}
}

static void srv_job_free(srv_job *job)
{
	job->srv->reserved -= job->reserved;
	srv_job_unlink(job);
	proto_request_free(&job->req);
	free(job->pairs);
	free(job);
}

/* Loop: sends the job's reply and frees it. */
static void srv_job_reply(srv_job *job)
{
	proto_buf out = { NULL, 0 };
	srv_reply_finish(job->srv, &job->head, &job->rep, job->rc, &job->err, &job->key, &out);
	srv_control_reply(job->reply_to, &out);
	srv_job_free(job);
}

static void srv_job_done(uv_work_t *w, int status)
{
	srv_job *job = w->data;
	srv_server *srv = job->srv;
	srv->jobs--;
	if (status != 0 && job->rc == DRAPE_OK)
		job->rc = drape_error_setf(&job->err, DRAPE_EINTERNAL, "the job failed: %s", uv_strerror(status));
	if (job->req.op == PROTO_OP_SESSION_CREATE) {
		srv->creating--;
		/* From here the session's own estimate counts (budget.c). */
		srv->reserved -= job->reserved;
		job->reserved = 0;
		if (job->rc == DRAPE_OK) {
			job->session->pipe = job->key.pipe;
			srv_session_who(job->session);
			job->rc = srv_create_finish(srv, job->session, &job->rep, &job->err);
		} else if (job->session != NULL) {
			/* Built, but the state dir refused its files: nothing is
			 * left behind. */
			srv_warn("session %u not created: %s", (unsigned)job->session->id, job->err.message);
			srv_ckpt_remove_session(srv, job->session);
			srv_session_free(job->session);
			job->session = NULL;
		}
	} else if (job->req.op != PROTO_OP_PREFLIGHT) {
		srv_session *s = job->session;
		s->busy = false;
		s->colliders = s->work_colliders;
		/* The solver side (work_memory) plus the loop's own copy of the
		 * colliders, which srv_colview_record keeps up to date. */
		s->memory = s->work_memory + s->colview.bytes;
		if (s->deleted) {
			if (job->rc == DRAPE_OK)
				job->rc = drape_error_setf(&job->err, DRAPE_ENOTFOUND,
							   "session %u was deleted while %s ran", (unsigned)s->id,
							   proto_op_name(job->req.op));
			/* Freed here, or when the frame being written lands. */
			srv_sched_settle(srv, s);
		} else {
			s->last_active_ms = srv_now_ms(srv);
			if (job->rc == DRAPE_OK) {
				srv_info("session %u: %s done (%u colliders)", (unsigned)s->id,
					 proto_op_name(job->req.op), (unsigned)s->colliders);
				srv_colview_record(s, &job->req);
				srv_ckpt_append_op(srv, s, job->raw, job->raw_len);
			}
			/* A run (started before or during the job) goes on; one
			 * canceled during it ends now, after any frame still
			 * being written. */
			if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
				srv_sched_enqueue(srv, s);
			srv_sched_settle(srv, s);
		}
	}
	srv_job_reply(job);
	srv_sched_kick(srv);
	if (srv->stopping)
		srv_server_maybe_finish(srv);
}

static drape_err srv_job_queue(srv_server *srv, srv_job *job)
{
	job->work.data = job;
	int rv = uv_queue_work(&srv->loop, &job->work, srv_job_work, srv_job_done);
	if (rv != 0)
		return drape_error_setf(&job->err, DRAPE_EINTERNAL, "cannot queue the work: %s", uv_strerror(rv));
	return DRAPE_OK;
}

/* Loop: gives a collider job its session's sim and queues it. */
static drape_err srv_job_take_session(srv_server *srv, srv_job *job)
{
	srv_session *s = job->session;
	/* The session is idle here (no frame, no other job), so its collider
	 * table can be read: an animation's bytes are admitted against the
	 * session's and the server's memory limits now, and reserved until
	 * the job lands and the session's estimate holds them. */
	uint64_t more = 0;
	drape_err rc = srv_collider_admit_memory(srv, s, &job->req, &more, &job->err);
	if (rc != DRAPE_OK)
		return rc;
	srv_sched_dequeue(srv, s);
	s->busy = true;
	rc = srv_job_queue(srv, job);
	if (rc != DRAPE_OK) {
		s->busy = false;
		if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
			srv_sched_enqueue(srv, s);
		return rc;
	}
	job->reserved += more;
	srv->reserved += more;
	return rc;
}

drape_err srv_job_start(srv_server *srv, proto_request *req, const proto_header *head, const void *raw,
			size_t raw_len, srv_session *s, const srv_reply_key *key, void *reply_to, drape_error *err)
{
	drape_err rc;
	switch (req->op) {
	case PROTO_OP_SESSION_CREATE:
	case PROTO_OP_PREFLIGHT:
		break;
	default:
		if (s->parked != NULL) {
			proto_request_free(req);
			return drape_error_setf(err, DRAPE_EBUSY,
						"%s: session %u already has a change waiting for its frame; "
						"retry when it is answered",
						proto_op_name(req->op), (unsigned)s->id);
		}
		break;
	}
	srv_job *job = calloc(1, sizeof *job);
	if (job == NULL) {
		proto_request_free(req);
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", proto_op_name(req->op));
	}
	job->srv = srv;
	job->req = *req;
	memset(req, 0, sizeof *req);
	job->head = *head;
	job->raw = raw;
	job->raw_len = raw_len;
	job->key = *key;
	job->reply_to = reply_to;
	job->session = s;
	if (srv->req_user != NULL)
		snprintf(job->owner, sizeof job->owner, "%s", srv->req_user->name);
	snprintf(job->host, sizeof job->host, "%s", srv->req_host);
	proto_reply_init(&job->rep, job->req.op, job->req.id);

	/* What the job may hold while it works is checked against the memory
	 * budget and reserved before it starts (budget.h). */
	uint64_t need = 0;
	if (job->req.op == PROTO_OP_SESSION_CREATE) {
		const proto_create_req *c = &job->req.u.create;
		need = srv_session_estimate(c->mesh.vertex_count, c->mesh.triangle_count,
					    srv->cfg->frames_in_memory);
		if ((c->params.mask & PROTO_PARAM_TEAR_STRAIN) && c->params.values.tear_strain > 0.0f)
			need += srv_tear_extra_bytes(c->mesh.vertex_count, c->mesh.triangle_count,
						     srv->cfg->frames_in_memory);
	} else if ((job->req.op == PROTO_OP_COLLIDER_ADD && job->req.u.collider_add.desc.shape == DRAPE_SHAPE_MESH &&
		  job->req.u.collider_add.desc.frame_count == 0) ||
		 job->req.op == PROTO_OP_COLLIDER_UPDATE)
		need = srv_budget_field_bytes(srv->cfg);
	/* A deforming mesh builds no field; its poses and tree are admitted
	 * when the job takes the session (srv_collider_admit_memory). */

	switch (job->req.op) {
	case PROTO_OP_SESSION_CREATE:
		rc = srv_create_admit(srv, &job->req, &job->params, &job->new_id, err);
		if (rc == DRAPE_OK)
			rc = srv_budget_check(srv, "session.create", need, err);
		if (rc == DRAPE_OK && (rc = srv_job_queue(srv, job)) != DRAPE_OK)
			*err = job->err;
		if (rc == DRAPE_OK)
			srv->creating++;
		break;
	case PROTO_OP_PREFLIGHT:
		rc = srv_preflight_admit(srv->cfg, &job->req, err);
		if (rc == DRAPE_OK && (rc = srv_job_queue(srv, job)) != DRAPE_OK)
			*err = job->err;
		break;
	default:
		rc = srv_collider_admit(srv, s, &job->req, err);
		if (rc == DRAPE_OK && need > 0)
			rc = srv_budget_check(srv, proto_op_name(job->req.op), need, err);
		if (rc != DRAPE_OK)
			break;
		if (s->busy) {
			/* A frame is in flight: the job waits for it. */
			s->parked = job;
			break;
		}
		if ((rc = srv_job_take_session(srv, job)) != DRAPE_OK)
			*err = job->err;
		break;
	}
	if (rc != DRAPE_OK) {
		proto_request_free(&job->req);
		free(job);
		return rc;
	}
	srv->jobs++;
	job->reserved += need;
	srv->reserved += need;
	job->next = srv->jobs_head;
	srv->jobs_head = job;
	return DRAPE_OK;
}

bool srv_job_unpark(srv_server *srv, srv_session *s)
{
	srv_job *job = s->parked;
	if (job == NULL)
		return false;
	s->parked = NULL;
	if (srv_job_take_session(srv, job) != DRAPE_OK) {
		srv->jobs--;
		job->rc = job->err.code ? job->err.code : DRAPE_EINTERNAL;
		srv_job_reply(job);
		return false;
	}
	return true;
}

void srv_job_drop_parked(srv_server *srv, srv_session *s, const char *why)
{
	srv_job *job = s->parked;
	if (job == NULL)
		return;
	s->parked = NULL;
	srv->jobs--;
	job->rc = drape_error_setf(&job->err, DRAPE_ENOTFOUND, "session %u was %s before %s could run", (unsigned)s->id,
				   why, proto_op_name(job->req.op));
	srv_job_reply(job);
}
