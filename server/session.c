/*
 * Sessions: the table, and the ops that create, inspect, change and delete
 * them. Running is scheduler.c's; colliders are colliders.c's.
 */
#include "server/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "server/checkpoint.h"
#include "server/control.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/owner.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/stream.h"
#include "server/waiters.h"

void srv_sessions_init(srv_sessions *t)
{
	memset(t, 0, sizeof *t);
	t->next_id = 1;
}

void srv_sessions_free(srv_sessions *t)
{
	for (size_t i = 0; i < t->count; i++)
		srv_session_free(t->items[i]);
	free(t->items);
	memset(t, 0, sizeof *t);
}

bool srv_sessions_add(srv_sessions *t, srv_session *s)
{
	if (t->count == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		srv_session **items = realloc(t->items, cap * sizeof *items);
		if (items == NULL)
			return false;
		t->items = items;
		t->cap = cap;
	}
	t->items[t->count++] = s;
	return true;
}

srv_session *srv_sessions_find(const srv_sessions *t, uint32_t id)
{
	for (size_t i = 0; i < t->count; i++)
		if (t->items[i]->id == id && !t->items[i]->deleted)
			return t->items[i];
	return NULL;
}

void srv_sessions_remove(srv_sessions *t, srv_session *s)
{
	for (size_t i = 0; i < t->count; i++) {
		if (t->items[i] == s) {
			t->items[i] = t->items[--t->count];
			return;
		}
	}
}

size_t srv_sessions_count_client(const srv_sessions *t, uint64_t client)
{
	size_t n = 0;
	for (size_t i = 0; i < t->count; i++)
		if (t->items[i]->client == client && !t->items[i]->deleted)
			n++;
	return n;
}

size_t srv_sessions_count_owner(const srv_sessions *t, const char *owner, uint64_t *vertices)
{
	size_t n = 0;
	for (size_t i = 0; i < t->count; i++) {
		const srv_session *s = t->items[i];
		if (s->deleted || strcmp(s->owner, owner) != 0)
			continue;
		n++;
		*vertices += s->vertices;
	}
	return n;
}

void srv_session_free(srv_session *s)
{
	if (s == NULL)
		return;
	drape_sim_destroy(s->sim);
	free(s->cinfo);
	srv_colview_free(&s->colview);
	srv_frames_free(&s->frames);
	free(s->work_positions);
	free(s->out_positions);
	free(s->work_record);
	free(s->work_tris);
	free(s->work_origin);
	free(s->out_tris);
	free(s->out_origin);
	srv_tear_free(&s->tear);
	srv_stream_msg_free(s->out_msg);
	srv_ckpt_snap_free(s->work_ckpt);
	srv_ckpt_snap_free(s->out_ckpt);
	free(s->name);
	free(s->dir);
	free(s->in_positions);
	free(s->in_triangles);
	free(s->in_uvs);
	for (uint32_t i = 0; s->in_objects != NULL && i < s->in_object_count; i++)
		free((char *)s->in_objects[i].name);
	free(s->in_objects);
	free(s);
}

void srv_session_who(srv_session *s)
{
	if (s->owner[0] == '\0' && s->host[0] == '\0')
		s->who[0] = '\0';
	else
		snprintf(s->who, sizeof s->who, ", user %s, from %s", s->owner[0] ? s->owner : "-",
			 s->host[0] ? s->host : "-");
}

bool srv_session_token_ok(const srv_session *s, const uint8_t token[PROTO_TOKEN_SIZE])
{
	/* Constant time: the time taken must not tell an attacker how many
	 * leading bytes of a guess were right. */
	volatile uint8_t diff = 0;
	for (size_t i = 0; i < PROTO_TOKEN_SIZE; i++)
		diff |= (uint8_t)(s->token[i] ^ token[i]);
	return diff == 0;
}

size_t srv_session_estimate(uint32_t vertices, uint32_t triangles, uint64_t frames_in_memory)
{
	/* Per vertex the solver keeps positions, predictions, velocities and
	 * masses (about 64 bytes) and roughly three edges of constraint
	 * records (about 48 bytes each with bending and shear); per triangle
	 * its indices and wind/collision scratch (about 48 bytes). The frame
	 * ring adds 12 bytes per vertex per frame kept in memory, and the
	 * solve and the output stage one frame buffer each. The mesh as
	 * created is kept for session.topology: 20 bytes per vertex
	 * (positions and uvs) and 12 per triangle. */
	return (size_t)vertices * (64u + 3u * 48u + 24u + 20u) + (size_t)triangles * (48u + 12u) +
	       (size_t)vertices * 12u * (size_t)(frames_in_memory + 2);
}

static drape_err srv_check_limit(uint64_t value, uint64_t limit, const char *what, const char *name,
				 drape_error *err)
{
	if (limit != 0 && value > limit)
		return drape_error_setf(err, DRAPE_ELIMIT, "%s %llu is over the limit %s = %llu", what,
					(unsigned long long)value, name, (unsigned long long)limit);
	return DRAPE_OK;
}

/* Gives s its frame store and work buffers; the directory when there is a
 * state dir. */
static drape_err srv_session_buffers(srv_server *srv, srv_session *s, bool keep_cache, drape_error *err)
{
	const srv_config *c = srv->cfg;
	char path[4200];
	const char *cache = NULL;
	if (s->dir != NULL) {
		snprintf(path, sizeof path, "%s/frames.bin", s->dir);
		cache = path;
	}
	drape_err rc = srv_frames_init(&s->frames, s->cap_vertices, (uint32_t)c->frames_in_memory,
				       (uint32_t)c->max_frames_retained, cache, keep_cache, err);
	if (rc != DRAPE_OK)
		return rc;
	/* Two frame buffers: the solve of one frame fills one while the output
	 * stage writes the frame before it from the other. */
	s->work_positions = malloc((size_t)s->cap_vertices * 12u);
	s->out_positions = malloc((size_t)s->cap_vertices * 12u);
	s->work_record = malloc(srv_frames_record_size(s->cap_vertices));
	if (s->work_positions == NULL || s->out_positions == NULL || s->work_record == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "session %u: out of memory for frame buffers",
					(unsigned)s->id);
	return DRAPE_OK;
}

srv_session *srv_session_build(srv_server *srv, uint32_t id, const proto_create_req *c, const drape_sim_params *p,
			       bool keep_cache, drape_error *err)
{
	drape_sim_desc desc;
	drape_sim_desc_default(&desc);
	desc.positions = c->mesh.positions;
	desc.vertex_count = c->mesh.vertex_count;
	desc.triangles = c->mesh.triangles;
	desc.triangle_count = c->mesh.triangle_count;
	desc.inv_mass = c->inv_mass;
	desc.uvs = c->uvs;
	desc.pins = c->pins;
	desc.pin_count = c->pin_count;
	desc.pin_stiffness = c->pin_stiffness;
	desc.rest_positions = c->rest_positions;
	desc.rest_scale = c->rest_scale;
	desc.stiffness_scale = c->stiffness_scale;
	desc.vertex_thickness = c->vertex_thickness;
	desc.vertex_friction = c->vertex_friction;
	if (c->has_stitch_k)
		desc.stitch_k = c->stitch_k;
	if (c->has_sew_speed)
		desc.sew_speed = c->sew_speed;
	/* The wire carries stitches as two flat arrays; the solver takes
	 * records. Freed once the solver is built (it keeps its own copy). */
	drape_stitch *stitches = NULL;
	if (c->stitch_count > 0) {
		stitches = malloc((size_t)c->stitch_count * sizeof *stitches);
		if (stitches == NULL) {
			drape_error_setf(err, DRAPE_ENOMEM, "session.create: out of memory for %u stitches",
					 c->stitch_count);
			return NULL;
		}
		for (uint32_t i = 0; i < c->stitch_count; i++)
			stitches[i] = (drape_stitch){c->stitch_v[3 * (size_t)i],
						     c->stitch_v[3 * (size_t)i + 1],
						     c->stitch_v[3 * (size_t)i + 2], c->stitch_t[i]};
		desc.stitches = stitches;
		desc.stitch_count = c->stitch_count;
	}
	/* The objects' ranges as the solver takes them (its own copy); the
	 * names stay with the request. */
	drape_sim_object *objects = NULL;
	if (c->object_count > 0) {
		objects = malloc((size_t)c->object_count * sizeof *objects);
		if (objects == NULL) {
			free(stitches);
			drape_error_setf(err, DRAPE_ENOMEM, "session.create: out of memory for %u objects",
					 c->object_count);
			return NULL;
		}
		for (uint32_t i = 0; i < c->object_count; i++)
			objects[i] = c->objects[i].range;
		desc.objects = objects;
		desc.object_count = c->object_count;
	}
	desc.params = *p;
	/* The shared pool is handed over frame by frame (srv_sched_kick):
	 * a session solving alone gets it, sessions solving side by side
	 * keep to their own worker. The result never depends on which. */
	desc.pool = NULL;

	srv_session *s = calloc(1, sizeof *s);
	if (s == NULL) {
		free(stitches);
		free(objects);
		drape_error_setf(err, DRAPE_ENOMEM, "session.create: out of memory");
		return NULL;
	}
	/* Every handle starts invalid, so freeing a session whose build failed
	 * half way closes only what it opened: a zeroed frame store would say
	 * fd 0, and closing that took whatever connection had reused slot 0. */
	s->frames.fd = -1;
	s->id = id;
	s->server = srv;
	s->params = *p;
	s->vertices = c->mesh.vertex_count;
	s->triangles = c->mesh.triangle_count;
	/* A tearing cloth's frames may hold up to this many vertices. */
	s->cap_vertices = p->tear_strain > 0.0f ? srv_tear_capacity(s->vertices, s->triangles)
						: s->vertices;
	/* The mesh as the caller sent it, for the frames.get mesh reply (web
	 * view) and for session.topology (attach, export): the solver
	 * renumbers vertices, so the caller's arrays are kept as they came. */
	s->in_positions = malloc((size_t)s->vertices * 12u);
	s->in_triangles = malloc((size_t)s->triangles * 12u);
	if (c->uvs != NULL)
		s->in_uvs = malloc((size_t)s->vertices * 8u);
	if (s->in_positions == NULL || s->in_triangles == NULL ||
	    (c->uvs != NULL && s->in_uvs == NULL) ||
	    (c->name != NULL && (s->name = strdup(c->name)) == NULL)) {
		free(stitches);
		free(objects);
		goto nomem;
	}
	memcpy(s->in_positions, c->mesh.positions, (size_t)s->vertices * 12u);
	memcpy(s->in_triangles, c->mesh.triangles, (size_t)s->triangles * 12u);
	if (c->uvs != NULL)
		memcpy(s->in_uvs, c->uvs, (size_t)s->vertices * 8u);
	if (c->object_count > 0) {
		s->in_objects = calloc(c->object_count, sizeof *s->in_objects);
		if (s->in_objects == NULL) {
			free(stitches);
			free(objects);
			goto nomem;
		}
		s->in_object_count = c->object_count;
		for (uint32_t i = 0; i < c->object_count; i++) {
			s->in_objects[i].range = c->objects[i].range;
			if ((s->in_objects[i].name = strdup(c->objects[i].name)) == NULL) {
				free(stitches);
				free(objects);
				goto nomem;
			}
		}
	}
	s->state = PROTO_STATE_IDLE;
	drape_err rc = drape_sim_create(&desc, &s->sim, err);
	free(stitches);
	free(objects);
	if (rc != DRAPE_OK) {
		srv_session_free(s);
		return NULL;
	}
	drape_sim_get_topology(s->sim, &s->topology);
	s->memory = srv_session_estimate(s->vertices, s->triangles, srv->cfg->frames_in_memory);
	if (s->cap_vertices != s->vertices)
		s->memory += srv_tear_extra_bytes(s->vertices, s->triangles, srv->cfg->frames_in_memory);
	s->memory_base = s->work_memory = s->memory;
	if (srv->sessions_dir[0] != '\0') {
		char dir[4200];
		snprintf(dir, sizeof dir, "%s/%u", srv->sessions_dir, (unsigned)id);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			/* A session the state dir cannot hold would not survive a
			 * restart: the create fails (a reload has its directory). */
			drape_error_setf(err, DRAPE_EIO, "session.create: cannot create its directory: %s (%s)",
					 strerror(errno), dir);
			srv_session_free(s);
			return NULL;
		}
		if ((s->dir = strdup(dir)) == NULL)
			goto nomem;
	}
	if (srv_session_buffers(srv, s, keep_cache, err) != DRAPE_OK) {
		srv_session_free(s);
		return NULL;
	}
	if (s->dir != NULL && s->frames.fd < 0 && !keep_cache) {
		drape_error_setf(err, DRAPE_EIO, "session.create: cannot open frames.bin: %s (in %s)",
				 strerror(s->frames.open_errno ? s->frames.open_errno : EIO), s->dir);
		srv_ckpt_remove_session(srv, s);
		srv_session_free(s);
		return NULL;
	}
	return s;
nomem:
	srv_session_free(s);
	drape_error_setf(err, DRAPE_ENOMEM, "session.create: out of memory");
	return NULL;
}

/* The per-owner limits: with --users-file per user, over every connection
 * and process of theirs (creates still being built included); without,
 * per client id as before. */
static drape_err srv_create_admit_owner(srv_server *srv, const proto_create_req *c, uint64_t client,
					drape_error *err)
{
	const srv_config *cfg = srv->cfg;
	if (srv->req_user == NULL)
		return srv_check_limit(srv_sessions_count_client(&srv->sessions, client) + 1,
				       cfg->max_sessions_per_client, "session.create: sessions of this client",
				       "max_sessions_per_client", err);
	const char *who = srv->req_user->name;
	uint64_t vertices = 0;
	size_t n = srv_sessions_count_owner(&srv->sessions, who, &vertices);
	n += srv_jobs_creating_owner(srv, who, &vertices);
	char what[96];
	snprintf(what, sizeof what, "session.create: sessions of user %s", who);
	drape_err rc = srv_check_limit(n + 1, cfg->max_sessions_per_user, what, "max_sessions_per_user", err);
	if (rc != DRAPE_OK)
		return rc;
	snprintf(what, sizeof what, "session.create: vertices of user %s's sessions", who);
	return srv_check_limit(vertices + c->mesh.vertex_count, cfg->max_vertices_per_user, what,
			       "max_vertices_per_user", err);
}

drape_err srv_create_admit(srv_server *srv, const proto_request *req, drape_sim_params *p, uint32_t *id,
			   drape_error *err)
{
	const srv_config *cfg = srv->cfg;
	const proto_create_req *c = &req->u.create;
	const uint64_t client = req->has_client ? req->client : 0;
	drape_err rc;
	/* Creates still being built count against the session limits, so a
	 * burst of them cannot overshoot. */
	if ((rc = srv_check_limit(c->mesh.vertex_count, cfg->max_vertices, "session.create: mesh vertices",
				  "max_vertices", err)) != DRAPE_OK ||
	    (rc = srv_check_limit(c->mesh.triangle_count, cfg->max_triangles, "session.create: mesh triangles",
				  "max_triangles", err)) != DRAPE_OK ||
	    (rc = srv_check_limit(srv->sessions.count + srv->creating + 1, cfg->max_sessions,
				  "session.create: sessions", "max_sessions", err)) != DRAPE_OK ||
	    (rc = srv_create_admit_owner(srv, c, client, err)) != DRAPE_OK ||
	    (rc = srv_check_limit(srv_session_estimate(c->mesh.vertex_count, c->mesh.triangle_count,
						       cfg->frames_in_memory),
				  cfg->max_session_memory, "session.create: estimated memory (bytes)",
				  "max_session_memory", err)) != DRAPE_OK)
		return rc;

	drape_sim_params_default(p);
	proto_params_apply(p, &c->params);
	if ((rc = drape_sim_params_validate(p, err)) != DRAPE_OK)
		return rc;
	/* A tearing cloth's frame buffers hold the most vertices it can
	 * tear into (tear.h). */
	if (p->tear_strain > 0.0f &&
	    (rc = srv_check_limit(srv_session_estimate(c->mesh.vertex_count, c->mesh.triangle_count,
						       cfg->frames_in_memory) +
					  srv_tear_extra_bytes(c->mesh.vertex_count,
							       c->mesh.triangle_count,
							       cfg->frames_in_memory),
				  cfg->max_session_memory,
				  "session.create: estimated memory of a tearing cloth (bytes)",
				  "max_session_memory", err)) != DRAPE_OK)
		return rc;
	if (srv->sessions.next_id == UINT32_MAX)
		return drape_error_setf(err, DRAPE_ELIMIT, "session.create: session ids are exhausted");
	/* The id is taken now, on the loop, so ids stay monotonic; a create
	 * that fails later leaves a gap, never a reuse. */
	*id = srv->sessions.next_id++;
	return DRAPE_OK;
}

srv_session *srv_create_build(srv_server *srv, uint32_t id, const proto_request *req, const drape_sim_params *p,
			      drape_error *err)
{
	srv_session *s = srv_session_build(srv, id, &req->u.create, p, false, err);
	if (s == NULL)
		return NULL;
	if (getrandom(s->token, sizeof s->token, 0) != (ssize_t)sizeof s->token) {
		drape_error_setf(err, DRAPE_EINTERNAL, "session.create: getrandom failed: %s", strerror(errno));
		srv_session_free(s);
		return NULL;
	}
	s->client = req->has_client ? req->client : 0;
	/* Intersections already in the input are reported, never refused: a
	 * tangled mesh is the user's to judge. */
	const proto_mesh *m = &req->u.create.mesh;
	if (drape_preflight(m->positions, m->vertex_count, m->triangles, m->triangle_count, NULL, 0,
			    &s->intersections, NULL) != DRAPE_OK)
		s->intersections = 0;
	/* With self-collision on, the tangled region is released until it no
	 * longer intersects (docs/untangle.md); the log says how much. */
	if (s->intersections > 0)
		drape_sim_tangle(s->sim, NULL, &s->released);
	return s;
}

drape_err srv_create_persist(srv_server *srv, srv_session *s, const void *raw, size_t raw_len, drape_error *err)
{
	drape_error e;
	s->created_unix = (uint64_t)time(NULL);
	if (srv_ckpt_save_session(srv, s, raw, raw_len, &e) != DRAPE_OK || srv_owner_save(s, &e) != DRAPE_OK) {
		drape_error_setf(err, DRAPE_EIO, "session.create: %s", e.message);
		return DRAPE_EIO;
	}
	return DRAPE_OK;
}

drape_err srv_create_finish(srv_server *srv, srv_session *s, proto_reply *rep,
			    drape_error *err)
{
	if (!srv_sessions_add(&srv->sessions, s)) {
		srv_ckpt_remove_session(srv, s);
		srv_session_free(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "session.create: out of memory");
	}
	/* The inputs went to disk on the worker (srv_create_persist); the
	 * next id goes now, before the reply, so a session a client was told
	 * about survives a crash and its id is never given out again; when
	 * the state dir refuses it the create fails with EIO and leaves
	 * nothing behind (PROTOCOL.md). */
	drape_error e;
	if (!srv_ckpt_save_next_id(srv, &e)) {
		drape_error_setf(err, DRAPE_EIO, "session.create: %s", e.message);
		srv_warn("session %u not created: %s", (unsigned)s->id, err->message);
		srv_sessions_remove(&srv->sessions, s);
		srv_ckpt_remove_session(srv, s);
		srv_session_free(s);
		return DRAPE_EIO;
	}
	s->last_active_ms = srv_now_ms(srv);
	srv->counters.sessions_created++;
	srv_metrics_add(SRV_M_SESSIONS_CREATED, 1);
	/* The creator may have gone while the session was being built; its
	 * connection's close was then seen before the session existed. */
	if (s->pipe != 0 && !srv_control_pipe_alive(s->pipe))
		srv_sessions_pipe_closed(srv, s->pipe);
	rep->u.create.session = s->id;
	memcpy(rep->u.create.token, s->token, PROTO_TOKEN_SIZE);
	rep->u.create.topology = s->topology;
	rep->u.create.intersections = s->intersections;
	srv_info("session %u created: %u vertices, %u triangles, %u pins, %llu intersecting pairs "
		 "(%u vertices released to untangle)%s%s, user %s, from %s",
		 (unsigned)s->id, (unsigned)s->vertices, (unsigned)s->triangles,
		 (unsigned)s->topology.pinned_vertices, (unsigned long long)s->intersections,
		 (unsigned)s->released,
		 s->name ? ", name " : "", s->name ? s->name : "", s->owner[0] ? s->owner : "-",
		 s->host[0] ? s->host : "-");
	return DRAPE_OK;
}

/* A session the orphan rule may delete: nothing of it ran or is running,
 * and nothing of it is in flight. */
static bool srv_session_never_ran(const srv_session *s)
{
	return s->state == PROTO_STATE_IDLE && s->frames_done == 0 && !s->in_queue && !s->busy && !s->writing &&
	       s->parked == NULL && !s->deleted;
}

void srv_sessions_pipe_closed(srv_server *srv, uint32_t pipe)
{
	if (pipe == 0)
		return;
	const uint64_t now = srv_now_ms(srv);
	for (size_t i = 0; i < srv->sessions.count; i++) {
		srv_session *s = srv->sessions.items[i];
		if (s->pipe != pipe || s->deleted || s->orphan_since_ms != 0)
			continue;
		/* 0 means "not orphaned", so a close at loop time 0 counts as 1. */
		s->orphan_since_ms = now ? now : 1;
		if (srv->cfg->orphan_timeout_s != 0 && srv_session_never_ran(s))
			srv_info("session %u: its owner's connection closed before it ran; deleted in %llu s "
				 "unless a request with its token comes",
				 (unsigned)s->id, (unsigned long long)srv->cfg->orphan_timeout_s);
	}
}

void srv_session_adopt(srv_server *srv, srv_session *s, uint32_t pipe)
{
	(void)srv;
	if (pipe == 0)
		return;
	s->pipe = pipe;
	s->orphan_since_ms = 0;
}

void srv_sessions_reclaim_orphans(srv_server *srv, uint64_t now)
{
	const uint64_t limit = srv->cfg->orphan_timeout_s;
	if (limit == 0)
		return;
	/* Backwards, because destroying swaps the last item into place. */
	for (size_t i = srv->sessions.count; i-- > 0;) {
		srv_session *s = srv->sessions.items[i];
		if (s->orphan_since_ms == 0 || !srv_session_never_ran(s) || now - s->orphan_since_ms < limit * 1000u)
			continue;
		char why[96];
		snprintf(why, sizeof why, "orphaned: never run, its owner's connection closed %llu s ago",
			 (unsigned long long)((now - s->orphan_since_ms) / 1000u));
		srv->counters.sessions_expired++;
		srv_metrics_add(SRV_M_SESSIONS_EXPIRED, 1);
		srv_session_destroy(srv, s, why);
	}
}

drape_err srv_op_update(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
			drape_error *err)
{
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
		return drape_error_setf(err, DRAPE_ESTATE,
					"session %u is %s; cancel it or wait for it to finish before "
					"session.update",
					(unsigned)s->id, proto_state_name(s->state));
	if (s->busy)
		return drape_error_setf(err, DRAPE_EBUSY,
					"session %u: its last frame is still being solved; retry in a moment",
					(unsigned)s->id);
	drape_sim_params p = s->params;
	const drape_sim_params old = s->params;
	proto_params_apply(&p, &req->u.update.params);
	drape_err rc = drape_sim_set_params(s->sim, &p, err);
	if (rc != DRAPE_OK)
		return rc;
	s->params = p;
	/* Parameters a restart would forget are refused: the old ones come
	 * back (they were valid a moment ago) and the reply says why. */
	drape_error e;
	if ((rc = srv_ckpt_save_params(srv, s, &e)) != DRAPE_OK) {
		s->params = old;
		if (drape_sim_set_params(s->sim, &old, NULL) != DRAPE_OK)
			srv_error("session %u: cannot restore its parameters after a failed update", (unsigned)s->id);
		return drape_error_setf(err, rc, "session.update: %s", e.message);
	}
	return DRAPE_OK;
}

drape_err srv_op_status(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	proto_status_rep *r = &rep->u.status;
	r->state = s->state;
	r->name = s->name;
	r->queue_position = srv_sched_position(srv, s);
	r->frames_done = s->frames_done;
	r->frames_target = s->target;
	r->frames_first = srv_frames_first(&s->frames);
	r->vertices = s->vertices;
	r->triangles = s->triangles;
	r->colliders = s->colliders;
	r->has_error = s->has_error;
	r->error = s->error;
	r->error_frame = s->error_frame;
	r->has_stats = s->has_stats;
	r->stats = s->stats;
	r->has_storage_error = s->has_storage_error;
	r->storage_error = s->storage_error;
	return DRAPE_OK;
}

/* Under --users-file a user sees their own sessions; an admin too, or
 * every user's with `all`. */
static bool srv_list_shows(const srv_server *srv, const srv_session *s, bool all)
{
	const srv_user *u = srv->req_user;
	if (srv->cfg->users == NULL)
		return true;
	if (u != NULL && u->role == SRV_ROLE_ADMIN && all)
		return true;
	return u != NULL && strcmp(s->owner, u->name) == 0;
}

uint64_t srv_session_disk_bytes(const srv_session *s)
{
	if (s->frames.fd < 0 || s->frames.newest == 0)
		return 0;
	return (uint64_t)s->frames.newest * s->frames.record;
}

drape_err srv_op_list(srv_server *srv, bool all, proto_reply *rep, proto_session_info **scratch, drape_error *err)
{
	const size_t n = srv->sessions.count;
	proto_session_info *info = calloc(n ? n : 1, sizeof *info);
	if (info == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "session.list: out of memory");
	uint32_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const srv_session *s = srv->sessions.items[i];
		if (s->deleted || !srv_list_shows(srv, s, all))
			continue;
		info[k].id = s->id;
		info[k].owner = s->owner[0] ? s->owner : NULL;
		info[k].host = s->host[0] ? s->host : NULL;
		info[k].created = s->created_unix;
		info[k].frames_target = s->target;
		info[k].memory = s->memory + srv_frames_memory(&s->frames);
		info[k].disk = srv_session_disk_bytes(s);
		info[k].name = s->name;
		info[k].state = s->state;
		info[k].frames_done = s->frames_done;
		info[k].vertices = s->vertices;
		k++;
	}
	/* Ascending ids read better and let a client diff two lists. */
	for (uint32_t i = 1; i < k; i++)
		for (uint32_t j = i; j > 0 && info[j - 1].id > info[j].id; j--) {
			proto_session_info t = info[j];
			info[j] = info[j - 1];
			info[j - 1] = t;
		}
	rep->u.list.sessions = info;
	rep->u.list.count = k;
	*scratch = info;
	return DRAPE_OK;
}

void srv_session_destroy(srv_server *srv, srv_session *s, const char *why)
{
	srv_job_drop_parked(srv, s, "deleted");
	srv_waiters_drop_session(srv, s->id);
	srv_sched_dequeue(srv, s);
	const bool was_running = s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED;
	const bool in_flight = s->busy || s->writing;
	if (was_running) {
		s->state = PROTO_STATE_CANCELED;
		if (in_flight)
			s->end_pending = true;
		else
			srv_sched_publish_end(srv, s);
	}
	srv_ckpt_remove_session(srv, s);
	srv_info("session %u deleted (%s)%s", (unsigned)s->id, why, s->who);
	if (in_flight) {
		/* A worker still holds the sim or the frame being written;
		 * scheduler.c frees the session when they have landed (a frame
		 * solved and not yet written is dropped). */
		s->deleted = true;
		return;
	}
	srv_sessions_remove(&srv->sessions, s);
	srv_session_free(s);
}

drape_err srv_op_delete(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	srv_session_destroy(srv, s, "by request");
	return DRAPE_OK;
}

drape_err srv_op_frames_get(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
			    proto_frame **frames_out, float **buf_out, drape_error *err)
{
	const proto_frames_get_req *g = &req->u.frames_get;
	proto_frames_get_rep *r = &rep->u.frames_get;
	r->session = s->id;
	r->frames_done = s->frames_done;
	r->count = 0;
	if (g->mesh) {
		r->triangles = s->in_triangles;
		r->triangle_count = s->triangles;
	}
	if (g->first == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "frames.get: first: frame indices start at 1");
	if (g->first > s->frames_done)
		return DRAPE_OK; /* not solved yet: an empty, successful reply */
	const uint32_t oldest = srv_frames_first(&s->frames);
	if (g->first < oldest)
		return drape_error_setf(err, DRAPE_ENOTFOUND,
					"frames.get: first: frame %u of session %u is no longer retained; "
					"the oldest is %u (limit max_frames_retained = %llu)",
					(unsigned)g->first, (unsigned)s->id, (unsigned)oldest,
					(unsigned long long)srv->cfg->max_frames_retained);

	/* The reply must fit the receiver's message limit: the smaller of ours
	 * and the codec's default, which is what libdrape accepts unless told
	 * otherwise. At least one frame is always sent. */
	uint64_t budget = srv->cfg->max_message;
	if (budget > PROTO_DEFAULT_MAX_MESSAGE)
		budget = PROTO_DEFAULT_MAX_MESSAGE;
	/* A tearing session's frame may hold up to cap_vertices and carry
	 * its triangles (PROTOCOL.md, "Torn meshes"). */
	const size_t per = proto_frame_encoded_size(s->cap_vertices) +
			   (s->cap_vertices != s->vertices ? (size_t)s->triangles * 12u + 16u : 0u);
	uint64_t n = (uint64_t)s->frames_done - g->first + 1;
	if (n > g->count)
		n = g->count;
	if (srv->cfg->max_frames_per_get != 0 && n > srv->cfg->max_frames_per_get)
		n = srv->cfg->max_frames_per_get;
	const uint64_t fit = budget > 1024 ? (budget - 1024) / per : 0;
	if (n > fit)
		n = fit ? fit : 1;

	proto_frame *frames = calloc((size_t)n, sizeof *frames);
	float *buf = malloc((size_t)n * s->cap_vertices * 12u);
	/* Its own record scratch: the session's work buffers may belong to a
	 * worker right now. */
	void *scratch = malloc(srv_frames_record_size(s->cap_vertices));
	if (frames == NULL || buf == NULL || scratch == NULL) {
		free(frames);
		free(buf);
		free(scratch);
		return drape_error_setf(err, DRAPE_ENOMEM, "frames.get: out of memory for %llu frames",
					(unsigned long long)n);
	}
	uint32_t k = 0;
	for (; k < n; k++) {
		float *pos = buf + (size_t)k * s->cap_vertices * 3u;
		uint32_t nv = 0, topology = 0;
		drape_err rc = srv_frames_read_mesh(&s->frames, g->first + k, pos, &frames[k].stats, &nv,
						    &topology, scratch, err);
		/* A torn mesh's triangles go with the reply's first frame and
		 * with every frame whose mesh differs from the one before. */
		const srv_tear_gen *mesh = NULL;
		if (rc == DRAPE_OK && topology != 0 && (k == 0 || topology != frames[k - 1].topology) &&
		    ((mesh = srv_tear_find(&s->tear, topology)) == NULL || mesh->vertices != nv))
			rc = drape_error_setf(err, DRAPE_EIO, "frame %u: its mesh (topology %u) is not known",
					      (unsigned)(g->first + k), (unsigned)topology);
		if (rc != DRAPE_OK) {
			if (k > 0)
				break; /* serve what was readable; the client asks again */
			free(frames);
			free(buf);
			free(scratch);
			return rc;
		}
		frames[k].index = g->first + k;
		frames[k].vertex_count = nv;
		frames[k].positions = pos;
		frames[k].topology = topology;
		if (mesh != NULL) {
			frames[k].triangles = mesh->tris;
			frames[k].triangle_count = s->triangles;
		}
	}
	free(scratch);
	r->frames = frames;
	r->count = k;
	*frames_out = frames;
	*buf_out = buf;
	srv->counters.frames_served += k;
	srv_metrics_add(SRV_M_FRAMES_SERVED, k);
	return DRAPE_OK;
}
