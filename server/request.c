/*
 * One request, start to finish, on the loop: decode and validate (every
 * failure becomes an error reply naming the field; wire input never
 * asserts), the replay cache, auth, the owner token, dispatch to the op, and
 * the encoded reply. hello and server.stats live here; the other ops live
 * with what they act on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/budget.h"
#include "server/control.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/waiters.h"

/* Replay keys of requests without a client id: the nng pipe id in the low
 * 32 bits under this marker. */
#define SRV_PIPE_KEY 0x7069706500000000ull

/* Ops that change something: their replies are kept for replay, because
 * acting twice on a resent request would be wrong. Read-only ops are simply
 * answered again. */
static bool srv_op_mutates(proto_op op)
{
	switch (op) {
	case PROTO_OP_SESSION_CREATE:
	case PROTO_OP_SESSION_UPDATE:
	case PROTO_OP_SESSION_RUN:
	case PROTO_OP_SESSION_CANCEL:
	case PROTO_OP_SESSION_DELETE:
	case PROTO_OP_SESSION_RESUME:
	case PROTO_OP_COLLIDER_ADD:
	case PROTO_OP_COLLIDER_TRANSFORM:
	case PROTO_OP_COLLIDER_UPDATE:
	case PROTO_OP_COLLIDER_REMOVE:
	case PROTO_OP_PINS_ATTACH:
	case PROTO_OP_COLLIDER_FRAMES:
		return true;
	default:
		return false;
	}
}

static bool srv_auth_ok(const srv_config *c, const proto_request *req)
{
	/* Constant time in the token's contents: see srv_config_auth_ok. */
	return srv_config_auth_ok(c, req->auth, req->auth_len);
}

/*
 * Under --users-file, what a user may do to a session: its owner anything
 * (the owner token, when sent, must still match: a wrong one is a mistake
 * worth an error), an admin anything but with no token needed, everyone
 * else nothing: status, frames, cancel and delete of another user's
 * session are each EPERM, and the message does not say whose it is.
 */
static drape_err srv_user_may(const srv_server *srv, const srv_session *s, const proto_request *req,
			      drape_error *err)
{
	const srv_user *u = srv->req_user;
	const bool owner = strcmp(s->owner, u->name) == 0;
	if (!owner && u->role != SRV_ROLE_ADMIN)
		return drape_error_setf(err, DRAPE_EPERM, "session %u: belongs to another user", (unsigned)req->session);
	if (owner && u->role != SRV_ROLE_ADMIN && req->has_token && proto_op_needs_token(req->op) &&
	    !srv_session_token_ok(s, req->token))
		return drape_error_setf(err, DRAPE_EPERM, "session %u: owner token does not match", (unsigned)req->session);
	return DRAPE_OK;
}

/*
 * --max-disk-per-user, checked when a run starts: the frames on disk of
 * every session of the session's owner, plus those this run will add (a
 * run of `frames` from now, or for a resume up to its last target). A run
 * until canceled adds an unknown number; only what is there is counted.
 */
static drape_err srv_user_disk_check(const srv_server *srv, const srv_session *s, uint32_t frames, drape_error *err)
{
	const uint64_t limit = srv->cfg->max_disk_per_user;
	if (srv->cfg->users == NULL || limit == 0)
		return DRAPE_OK;
	uint64_t used = 0;
	for (size_t i = 0; i < srv->sessions.count; i++) {
		const srv_session *o = srv->sessions.items[i];
		if (!o->deleted && strcmp(o->owner, s->owner) == 0)
			used += srv_session_disk_bytes(o);
	}
	uint64_t add = frames;
	if (add == 0 && s->last_target > s->frames_done)
		add = s->last_target - s->frames_done;
	used += add * (uint64_t)s->frames.record;
	if (used > limit)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"session %u: frames on disk of user %s would be %llu bytes, over the limit "
					"max_disk_per_user = %llu",
					(unsigned)s->id, s->owner[0] ? s->owner : "-", (unsigned long long)used,
					(unsigned long long)limit);
	return DRAPE_OK;
}

static void srv_limits(const srv_config *c, proto_limits *l)
{
	memset(l, 0, sizeof *l);
	l->max_message = c->max_message;
	l->max_vertices = c->max_vertices;
	l->max_triangles = c->max_triangles;
	l->max_colliders = c->max_colliders;
	l->max_voxels = c->max_voxels;
	l->max_keyframes = DRAPE_MAX_KEYFRAMES;
	l->max_anim_frames = c->max_anim_frames;
	l->max_anim_bytes = c->max_anim_bytes;
	l->max_sessions = c->max_sessions;
	l->max_sessions_per_client = c->max_sessions_per_client;
	l->max_frames_retained = c->max_frames_retained;
	l->max_frames_per_get = c->max_frames_per_get;
	l->max_session_memory = c->max_session_memory;
	l->idle_timeout_s = c->idle_timeout_s;
	l->max_memory = c->max_memory;
	l->max_connections = c->max_connections;
	l->max_connections_per_peer = c->max_connections_per_peer;
}

static void srv_op_hello(srv_server *srv, const proto_request *req, proto_reply *rep)
{
	proto_hello_rep *h = &rep->u.hello;
	h->version = PROTO_VERSION;
	h->server = srv->build;
	/* A PUB stream exists only when configured, and only without an auth
	 * token (config.c); its address is still told only to clients that
	 * showed the token, should one be set. */
	if (srv_auth_ok(srv->cfg, req)) {
		h->stream_urls = (const char *const *)srv->cfg->stream;
		h->stream_url_count = (uint32_t)srv->cfg->stream_count;
	}
	h->auth_required = srv->cfg->auth_token != NULL || srv->cfg->users != NULL;
	srv_limits(srv->cfg, &h->limits);
}

static void srv_op_stats(srv_server *srv, proto_reply *rep)
{
	proto_server_stats_rep *r = &rep->u.server_stats;
	for (size_t i = 0; i < srv->sessions.count; i++) {
		const srv_session *s = srv->sessions.items[i];
		if (s->deleted)
			continue;
		r->sessions++;
		r->queued += s->state == PROTO_STATE_QUEUED;
		r->running += s->state == PROTO_STATE_RUNNING;
		r->memory += s->memory + srv_frames_memory(&s->frames);
	}
	r->frames_solved = srv->counters.frames_solved;
	r->frames_served = srv->counters.frames_served;
	r->requests = srv->counters.requests;
	r->clients = srv->replay.clients;
	r->threads = srv->cfg->threads;
	r->uptime_s = (double)(srv_now_ms(srv) - srv->started_ms) / 1000.0;
}

static void srv_encode(const proto_reply *rep, proto_buf *out)
{
	drape_error err;
	if (proto_reply_encode(rep, out, &err) == DRAPE_OK)
		return;
	/* Our own reply failed to encode: say so rather than go silent. */
	srv_error("cannot encode the reply to %s: %s", proto_op_name(rep->op) ? proto_op_name(rep->op) : "?",
		  err.message);
	proto_reply fallback;
	proto_header head = { 0 };
	head.has_id = rep->has_id;
	head.id = rep->id;
	head.op = rep->op;
	drape_error e;
	drape_error_setf(&e, DRAPE_EINTERNAL, "the server could not encode its reply: %s", err.message);
	proto_reply_init_error(&fallback, &head, &e);
	if (proto_reply_encode(&fallback, out, &err) != DRAPE_OK)
		out->data = NULL;
}

void srv_reply_finish(srv_server *srv, const proto_header *head, proto_reply *rep, drape_err rc, drape_error *err,
		      const srv_reply_key *k, proto_buf *out)
{
	if (rc != DRAPE_OK)
		srv_metrics_error(err != NULL && err->code != DRAPE_OK ? err->code : rc);
	if (rc != DRAPE_OK) {
		if (err->code == DRAPE_OK)
			drape_error_setf(err, rc, "%s failed", proto_op_name(head->op) ? proto_op_name(head->op) : "request");
		proto_reply_init_error(rep, head, err);
	}
	srv_debug("request %s id %llu: %s%s%s", proto_op_name(head->op) ? proto_op_name(head->op) : "?",
		  (unsigned long long)head->id, rc == DRAPE_OK ? "ok" : drape_err_name(err->code),
		  rc == DRAPE_OK ? "" : " ", rc == DRAPE_OK ? "" : err->message);
	srv_encode(rep, out);
	if (k->cache && out->data != NULL)
		srv_replay_put(&srv->replay, k->key, k->id, out->data, out->len, srv_now_ms(srv));
}

srv_reply_mode srv_request_handle(srv_server *srv, const void *buf, size_t len, uint32_t pipe_id, void *reply_to,
				  proto_buf *out)
{
	const srv_config *cfg = srv->cfg;
	proto_request req;
	proto_header head;
	proto_reply rep;
	drape_error err;
	drape_error_clear(&err);
	memset(&req, 0, sizeof req);
	srv->counters.requests++;
	srv->req_user = NULL;

	drape_err rc = proto_request_decode(buf, len, cfg->max_message, &req, &head, &err);
	if (rc != DRAPE_OK) {
		srv_metrics_error(err.code);
		srv_debug("request refused (%zu bytes, id %llu): %s %s", len, (unsigned long long)head.id,
			  drape_err_name(err.code), err.message);
		proto_reply_init_error(&rep, &head, &err);
		srv_encode(&rep, out);
		return SRV_REPLY_NOW;
	}

	/* The replay key is (client, id); a request without a client id is
	 * keyed by its nng pipe instead, which covers REQ's resends on one
	 * connection (PROTOCOL.md section 8). Pipe keys live in their own
	 * range so they cannot meet a client's random id by design. */
	srv_reply_key k;
	k.cache = srv_op_mutates(req.op) && (req.has_client || pipe_id != 0);
	k.key = req.has_client ? req.client : (SRV_PIPE_KEY | pipe_id);
	k.id = req.id;
	k.pipe = pipe_id;
	const uint64_t now = srv_now_ms(srv);
	if (k.cache) {
		const srv_replay_entry *e = srv_replay_find(&srv->replay, k.key, k.id, now);
		if (e != NULL && (out->data = malloc(e->len)) != NULL) {
			memcpy(out->data, e->data, e->len);
			out->len = e->len;
			srv_debug("request %s id %llu repeated; first reply sent again", proto_op_name(req.op),
				  (unsigned long long)req.id);
			proto_request_free(&req);
			return SRV_REPLY_NOW;
		}
		if (srv_jobs_pending(srv, k.key, k.id)) {
			srv_debug("request %s id %llu repeated while the first is in progress; no second answer",
				  proto_op_name(req.op), (unsigned long long)req.id);
			proto_request_free(&req);
			return SRV_REPLY_NONE;
		}
	}

	srv_metrics_request(req.op);
	proto_session_info *list = NULL;
	proto_frame *frames = NULL;
	float *frame_buf = NULL;
	proto_collider_view *views = NULL; /* session.colliders */
	float *poses = NULL;
	srv_session *s = NULL;
	proto_reply_init(&rep, req.op, req.id);

	/* Who asks: under --users-file the user whose token "auth" carries;
	 * hello is answered without. */
	srv->req_user = cfg->users != NULL ? srv_users_auth(cfg->users, req.auth, req.auth_len) : NULL;
	/* Only a create records where it came from (owner.h). */
	if (req.op == PROTO_OP_SESSION_CREATE)
		srv_control_pipe_host(pipe_id, srv->req_host, sizeof srv->req_host);
	if (req.op != PROTO_OP_HELLO &&
	    (cfg->users != NULL ? srv->req_user == NULL : !srv_auth_ok(cfg, &req))) {
		/* Which of the two it was is not said (PROTOCOL.md section 9). */
		rc = drape_error_setf(&err, DRAPE_EPERM, "auth: missing or wrong");
		goto reply;
	}
	if (req.op == PROTO_OP_SESSION_LIST && req.u.list.all &&
	    (srv->req_user == NULL ? cfg->users != NULL : srv->req_user->role != SRV_ROLE_ADMIN)) {
		rc = drape_error_setf(&err, DRAPE_EPERM, "all: only an admin may list every user's sessions");
		goto reply;
	}
	if (srv->stopping && (req.op == PROTO_OP_SESSION_CREATE || req.op == PROTO_OP_SESSION_RUN ||
			      req.op == PROTO_OP_SESSION_RESUME || req.op == PROTO_OP_PREFLIGHT)) {
		rc = drape_error_setf(&err, DRAPE_EUNAVAILABLE, "%s: the server is shutting down",
				      proto_op_name(req.op));
		goto reply;
	}
	if (proto_op_needs_session(req.op)) {
		s = srv_sessions_find(&srv->sessions, req.session);
		if (s == NULL) {
			rc = drape_error_setf(&err, DRAPE_ENOTFOUND, "session %u: no such session",
					      (unsigned)req.session);
			goto reply;
		}
		if (cfg->users != NULL) {
			if ((rc = srv_user_may(srv, s, &req, &err)) != DRAPE_OK)
				goto reply;
		} else if (proto_op_needs_token(req.op) && (!req.has_token || !srv_session_token_ok(s, req.token))) {
			rc = drape_error_setf(&err, DRAPE_EPERM, "session %u: owner token %s", (unsigned)req.session,
					      req.has_token ? "does not match" : "is missing");
			goto reply;
		}
		s->last_active_ms = now;
		/* Only the owner holds the token: its request says which
		 * connection the session belongs to now (orphans, session.h). */
		if (proto_op_needs_token(req.op) && (srv->req_user == NULL || strcmp(s->owner, srv->req_user->name) == 0))
			srv_session_adopt(srv, s, pipe_id);
	}

	switch (req.op) {
	case PROTO_OP_HELLO:
		srv_op_hello(srv, &req, &rep);
		if (req.u.hello.client != NULL)
			srv_debug("hello from %s", req.u.hello.client);
		break;
	case PROTO_OP_SERVER_STATS:
		srv_op_stats(srv, &rep);
		break;
	case PROTO_OP_SESSION_CREATE:
	case PROTO_OP_PREFLIGHT:
	case PROTO_OP_COLLIDER_ADD:
	case PROTO_OP_COLLIDER_TRANSFORM:
	case PROTO_OP_COLLIDER_UPDATE:
	case PROTO_OP_COLLIDER_REMOVE:
	case PROTO_OP_PINS_ATTACH:
	case PROTO_OP_COLLIDER_FRAMES:
		/* The job takes the request; on success it replies later. */
		rc = srv_job_start(srv, &req, &head, buf, len, s, &k, reply_to, &err);
		if (rc == DRAPE_OK)
			return SRV_REPLY_LATER;
		break;
	case PROTO_OP_SESSION_UPDATE:
		rc = srv_op_update(srv, s, &req, &rep, &err);
		break;
	case PROTO_OP_SESSION_RUN:
	case PROTO_OP_SESSION_RESUME:
		/* A running session holds run buffers beyond its estimate
		 * (budget.h); one already running adds nothing and gets its
		 * ESTATE from the op. */
		rc = DRAPE_OK;
		if (s->state != PROTO_STATE_RUNNING && s->state != PROTO_STATE_QUEUED)
			rc = srv_budget_check(srv, proto_op_name(req.op), srv_budget_run_bytes(s), &err);
		if (rc == DRAPE_OK && s->state != PROTO_STATE_RUNNING && s->state != PROTO_STATE_QUEUED)
			rc = srv_user_disk_check(srv, s, req.op == PROTO_OP_SESSION_RUN ? req.u.run.frames : 0, &err);
		if (rc == DRAPE_OK)
			rc = req.op == PROTO_OP_SESSION_RUN ? srv_op_run(srv, s, &req, &rep, &err)
							    : srv_op_resume(srv, s, &rep, &err);
		break;
	case PROTO_OP_SESSION_CANCEL:
		rc = srv_op_cancel(srv, s, &rep, &err);
		break;
	case PROTO_OP_SESSION_STATUS:
		rc = srv_op_status(srv, s, &rep, &err);
		break;
	case PROTO_OP_SESSION_TOPOLOGY:
		rc = srv_op_topology(srv, s, &rep, &err);
		break;
	case PROTO_OP_SESSION_COLLIDERS:
		rc = srv_op_colliders(srv, s, &req, &rep, &views, &poses, &err);
		break;
	case PROTO_OP_SESSION_LIST:
		rc = srv_op_list(srv, req.u.list.all, &rep, &list, &err);
		break;
	case PROTO_OP_SESSION_DELETE:
		rc = srv_op_delete(srv, s, &rep, &err);
		break;
	case PROTO_OP_FRAMES_GET:
		rc = srv_op_frames_get(srv, s, &req, &rep, &frames, &frame_buf, &err);
		if (rc != DRAPE_OK)
			break;
		rep.u.frames_get.live = srv_session_live(s);
		/* Nothing to send yet but more will come: the request waits for
		 * its frame (waiters.h), unless too many already wait. */
		if (rep.u.frames_get.count == 0 && req.u.frames_get.wait_ms > 0 && rep.u.frames_get.live &&
		    !srv->stopping && srv_waiters_park(srv, s, &head, &req.u.frames_get, reply_to)) {
			proto_request_free(&req);
			return SRV_REPLY_LATER;
		}
		break;
	default:
		rc = drape_error_setf(&err, DRAPE_EPROTO, "op: %s is not served by this daemon",
				      proto_op_name(req.op) ? proto_op_name(req.op) : "?");
		break;
	}

reply:
	srv_reply_finish(srv, &head, &rep, rc, &err, &k, out);
	free(list);
	free(frames);
	free(frame_buf);
	free(views);
	free(poses);
	proto_request_free(&req);
	return SRV_REPLY_NOW;
}
