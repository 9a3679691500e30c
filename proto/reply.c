/*
 * Replies: encoded by the daemon, decoded by the client. The client decodes
 * against the op it asked for; an error reply is a successful decode with
 * ok = false, so "could not read the reply" and "the server said no" stay
 * distinct for the caller.
 */
#include "proto/colliders.h"
#include "proto/wire.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define LF(name) { #name, offsetof(proto_limits, name) }
static const struct {
	const char *name;
	size_t off;
} limit_fields[] = {
	LF(max_message),         LF(max_vertices),       LF(max_triangles),
	LF(max_colliders),       LF(max_voxels),         LF(max_keyframes),
	LF(max_sessions),        LF(max_sessions_per_client), LF(max_frames_retained),
	LF(max_frames_per_get),  LF(max_session_memory), LF(idle_timeout_s),
	LF(max_memory),          LF(max_connections),    LF(max_connections_per_peer),
	LF(max_anim_frames),     LF(max_anim_bytes),
};
#undef LF

#define SSF(name) { #name, offsetof(proto_server_stats_rep, name) }
static const struct {
	const char *name;
	size_t off;
} server_stat_fields[] = {
	SSF(sessions),      SSF(queued),        SSF(running), SSF(memory),
	SSF(frames_solved), SSF(frames_served), SSF(requests), SSF(clients),
};
#undef SSF

/* ---- Decoding ---------------------------------------------------------------- */

static drape_err decode_hello(proto_wire_dec *d, const msgpack_object *m, proto_hello_rep *h)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_field_u32(d, m, "version", true, &h->version, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_str(d, m, "server", true, PROTO_MAX_STRING, &h->server);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_bool(d, m, "auth_required", false, &h->auth_required, NULL);
	if (rc != DRAPE_OK)
		return rc;

	rc = proto_wire_need(d, m, "stream", "stream", &v);
	if (rc != DRAPE_OK)
		return rc;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return proto_wire_fail(d, DRAPE_EPROTO, "stream", "expected an array of URL strings");
	const uint32_t n = v->via.array.size;
	if (n > PROTO_MAX_STREAM_URLS)
		return proto_wire_fail(d, DRAPE_EINVAL, "stream", "%u URLs exceed the limit of %d",
				 (unsigned)n, PROTO_MAX_STREAM_URLS);
	const char **urls = proto_mem_alloc(d->mem, (n ? n : 1) * sizeof *urls);
	if (urls == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, "stream", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		char sub[32];
		snprintf(sub, sizeof sub, "stream[%u]", (unsigned)i);
		rc = proto_wire_str(d, &v->via.array.ptr[i], sub, PROTO_MAX_STRING, &urls[i]);
		if (rc != DRAPE_OK)
			return rc;
	}
	h->stream_urls = urls;
	h->stream_url_count = n;

	rc = proto_wire_need(d, m, "limits", "limits", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_map(d, v, "limits");
	if (rc != DRAPE_OK)
		return rc;
	for (size_t i = 0; i < sizeof limit_fields / sizeof limit_fields[0]; i++) {
		const msgpack_object *f = proto_wire_get(v, limit_fields[i].name);
		if (f == NULL)
			continue;
		char sub[64];
		snprintf(sub, sizeof sub, "limits.%s", limit_fields[i].name);
		rc = proto_wire_u64(d, f, sub, (uint64_t *)((char *)&h->limits + limit_fields[i].off));
		if (rc != DRAPE_OK)
			return rc;
	}
	return DRAPE_OK;
}

static drape_err decode_create(proto_wire_dec *d, const msgpack_object *m, proto_create_rep *c)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_field_u32(d, m, "session", true, &c->session, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_need(d, m, "token", "token", &v);
	if (rc != DRAPE_OK)
		return rc;
	if (v->type != MSGPACK_OBJECT_BIN || v->via.bin.size != PROTO_TOKEN_SIZE)
		return proto_wire_fail(d, DRAPE_EPROTO, "token", "expected a bin of %d bytes",
				 PROTO_TOKEN_SIZE);
	memcpy(c->token, v->via.bin.ptr, PROTO_TOKEN_SIZE);
	v = proto_wire_get(m, "topology");
	if (v != NULL) {
		rc = proto_wire_read_topology(d, v, "topology", &c->topology);
		if (rc != DRAPE_OK)
			return rc;
	}
	return proto_wire_field_u64(d, m, "intersections", false, &c->intersections, NULL);
}

static drape_err decode_state(proto_wire_dec *d, const msgpack_object *m, proto_state *s)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_need(d, m, "state", "state", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_read_state(d, v, "state", s);
	return rc;
}

static drape_err decode_status(proto_wire_dec *d, const msgpack_object *m, proto_status_rep *s)
{
	const msgpack_object *v;
	drape_err rc = decode_state(d, m, &s->state);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_str(d, m, "name", false, PROTO_MAX_NAME, &s->name);
	static const struct {
		const char *key;
		size_t off;
	} u32s[] = {
		{ "queue_position", offsetof(proto_status_rep, queue_position) },
		{ "frames_done", offsetof(proto_status_rep, frames_done) },
		{ "frames_target", offsetof(proto_status_rep, frames_target) },
		{ "frames_first", offsetof(proto_status_rep, frames_first) },
		{ "vertices", offsetof(proto_status_rep, vertices) },
		{ "triangles", offsetof(proto_status_rep, triangles) },
		{ "colliders", offsetof(proto_status_rep, colliders) },
		{ "error_frame", offsetof(proto_status_rep, error_frame) },
	};
	for (size_t i = 0; rc == DRAPE_OK && i < sizeof u32s / sizeof u32s[0]; i++)
		rc = proto_wire_field_u32(d, m, u32s[i].key, false,
				    (uint32_t *)((char *)s + u32s[i].off), NULL);
	if (rc != DRAPE_OK)
		return rc;
	v = proto_wire_get(m, "error");
	if (v != NULL) {
		rc = proto_wire_read_error(d, v, "error", &s->error);
		if (rc != DRAPE_OK)
			return rc;
		s->has_error = true;
	}
	v = proto_wire_get(m, "stats");
	if (v != NULL) {
		rc = proto_wire_read_stats(d, v, "stats", &s->stats);
		if (rc != DRAPE_OK)
			return rc;
		s->has_stats = true;
	}
	v = proto_wire_get(m, "storage_error");
	if (v != NULL) {
		rc = proto_wire_read_error(d, v, "storage_error", &s->storage_error);
		if (rc != DRAPE_OK)
			return rc;
		s->has_storage_error = true;
	}
	return DRAPE_OK;
}

static drape_err decode_list(proto_wire_dec *d, const msgpack_object *m, proto_list_rep *l)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_need(d, m, "sessions", "sessions", &v);
	if (rc != DRAPE_OK)
		return rc;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return proto_wire_fail(d, DRAPE_EPROTO, "sessions", "expected an array of maps");
	const uint32_t n = v->via.array.size;
	proto_session_info *s = proto_mem_alloc(d->mem, (size_t)(n ? n : 1) * sizeof *s);
	if (s == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, "sessions", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *e = &v->via.array.ptr[i];
		char sub[64];
		snprintf(sub, sizeof sub, "sessions[%u]", (unsigned)i);
		rc = proto_wire_map(d, e, sub);
		/* Sub-fields are named relative to the entry, so the message
		 * reads "sessions[3]: state: ..." through the prefix. */
		const char *saved = d->what;
		char what[160];
		snprintf(what, sizeof what, "%s: %s", saved, sub);
		d->what = what;
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, e, "id", true, &s[i].id, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_str(d, e, "name", false, PROTO_MAX_NAME, &s[i].name);
		if (rc == DRAPE_OK)
			rc = decode_state(d, e, &s[i].state);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, e, "frames_done", false, &s[i].frames_done, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, e, "vertices", false, &s[i].vertices, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_str(d, e, "owner", false, PROTO_MAX_NAME, &s[i].owner);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_str(d, e, "host", false, PROTO_MAX_NAME, &s[i].host);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u64(d, e, "created", false, &s[i].created, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, e, "frames_target", false, &s[i].frames_target, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u64(d, e, "memory", false, &s[i].memory, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u64(d, e, "disk", false, &s[i].disk, NULL);
		d->what = saved;
		if (rc != DRAPE_OK)
			return rc;
	}
	l->sessions = s;
	l->count = n;
	return DRAPE_OK;
}

static drape_err decode_frames(proto_wire_dec *d, const msgpack_object *m, proto_frames_get_rep *g)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_field_u32(d, m, "session", true, &g->session, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u32(d, m, "frames_done", false, &g->frames_done, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_bool(d, m, "live", false, &g->live, &g->has_live);
	if (rc == DRAPE_OK)
		rc = proto_wire_need(d, m, "frames", "frames", &v);
	if (rc != DRAPE_OK)
		return rc;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return proto_wire_fail(d, DRAPE_EPROTO, "frames", "expected an array of frame maps");
	const uint32_t n = v->via.array.size;
	proto_frame *f = proto_mem_alloc(d->mem, (size_t)(n ? n : 1) * sizeof *f);
	if (f == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, "frames", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		char sub[64];
		snprintf(sub, sizeof sub, "frames[%u]", (unsigned)i);
		rc = proto_wire_read_frame(d, &v->via.array.ptr[i], sub, &f[i]);
		if (rc != DRAPE_OK)
			return rc;
		/* Frames of one reply are consecutive and of one session, so
		 * one vertex count, unless the mesh tore: then the frame whose
		 * mesh changed carries its triangles (PROTOCOL.md, "Torn
		 * meshes"), so a client can rely on both without checks. */
		if (i > 0 && f[i].index != f[i - 1].index + 1)
			return proto_wire_fail(d, DRAPE_EPROTO, sub, "index %u does not follow %u",
					 (unsigned)f[i].index, (unsigned)f[i - 1].index);
		if (i > 0 && f[i].triangles == NULL &&
		    (f[i].vertex_count != f[i - 1].vertex_count || f[i].topology != f[i - 1].topology))
			return proto_wire_fail(d, DRAPE_EPROTO, sub,
					       "%u vertices of topology %u, frames[%u] has %u of %u, and no "
					       "triangles",
					       (unsigned)f[i].vertex_count, (unsigned)f[i].topology,
					       (unsigned)i - 1, (unsigned)f[i - 1].vertex_count,
					       (unsigned)f[i - 1].topology);
		if (i == 0 && f[i].topology != 0 && f[i].triangles == NULL)
			return proto_wire_fail(d, DRAPE_EPROTO, sub,
					       "topology %u without its triangles in the first frame",
					       (unsigned)f[i].topology);
	}
	g->frames = f;
	g->count = n;
	/* Optional: the session's triangles, for a frames.get that asked for
	 * "mesh"; each index below the frames' vertex count. */
	const msgpack_object *t = proto_wire_get(m, "triangles");
	if (t != NULL && t->type != MSGPACK_OBJECT_NIL) {
		uint64_t bound = n > 0 ? f[0].vertex_count : UINT32_MAX;
		rc = proto_wire_bin_u32(d, t, "triangles", 3, bound, "the frames' vertex count", &g->triangles,
					&g->triangle_count);
	}
	return rc;
}

static drape_err decode_server_stats(proto_wire_dec *d, const msgpack_object *m,
				     proto_server_stats_rep *s)
{
	drape_err rc = DRAPE_OK;
	for (size_t i = 0; rc == DRAPE_OK && i < sizeof server_stat_fields / sizeof server_stat_fields[0];
	     i++)
		rc = proto_wire_field_u64(d, m, server_stat_fields[i].name, false,
				    (uint64_t *)((char *)s + server_stat_fields[i].off), NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u32(d, m, "threads", false, &s->threads, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_f64(d, m, "uptime_s", false, &s->uptime_s, NULL);
	return rc;
}

static drape_err decode_preflight(proto_wire_dec *d, const msgpack_object *m, proto_preflight_rep *p)
{
	const msgpack_object *v;
	const uint32_t *raw = NULL;
	uint32_t n = 0;
	drape_err rc = proto_wire_field_u64(d, m, "count", true, &p->count, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_need(d, m, "pairs", "pairs", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_bin_u32(d, v, "pairs", 2, UINT64_MAX, "limit", &raw, &n);
	if (rc != DRAPE_OK)
		return rc;
	if (n > PROTO_MAX_PREFLIGHT_PAIRS)
		return proto_wire_fail(d, DRAPE_EINVAL, "pairs", "%u pairs exceed the limit of %d",
				 (unsigned)n, PROTO_MAX_PREFLIGHT_PAIRS);
	if (n > p->count)
		return proto_wire_fail(d, DRAPE_EINVAL, "pairs", "%u pairs but count is %llu", (unsigned)n,
				 (unsigned long long)p->count);
	drape_tri_pair *pairs = proto_mem_alloc(d->mem, (size_t)(n ? n : 1) * sizeof *pairs);
	if (pairs == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, "pairs", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		pairs[i].a = raw[2 * i];
		pairs[i].b = raw[2 * i + 1];
	}
	p->pairs = pairs;
	p->pair_count = n;
	return DRAPE_OK;
}

static drape_err decode_topology(proto_wire_dec *d, const msgpack_object *m, proto_topology_rep *t)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_need(d, m, "positions", "positions", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_bin_f32(d, v, "positions", 3, UINT32_MAX, &t->positions, &t->vertex_count);
	if (rc == DRAPE_OK && t->vertex_count == 0)
		rc = proto_wire_fail(d, DRAPE_EINVAL, "positions", "empty; a session has at least one vertex");
	if (rc == DRAPE_OK)
		rc = proto_wire_need(d, m, "triangles", "triangles", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_bin_u32(d, v, "triangles", 3, t->vertex_count, "vertex count", &t->triangles,
					&t->triangle_count);
	if (rc == DRAPE_OK && t->triangle_count == 0)
		rc = proto_wire_fail(d, DRAPE_EINVAL, "triangles", "empty; a session has at least one triangle");
	t->uvs = NULL;
	if (rc == DRAPE_OK && (v = proto_wire_get(m, "uvs")) != NULL) {
		uint32_t n;
		rc = proto_wire_bin_f32(d, v, "uvs", 2, t->vertex_count, &t->uvs, &n);
	}
	bool has_fps = false;
	if (rc == DRAPE_OK)
		rc = proto_wire_field_f32(d, m, "fps", true, &t->fps, &has_fps);
	if (rc == DRAPE_OK && !(t->fps > 0.0f))
		rc = proto_wire_fail(d, DRAPE_EINVAL, "fps", "%g, must be > 0", (double)t->fps);
	/* A torn cloth's newest mesh: all three keys or none. */
	t->generation = 0;
	t->current_vertex_count = 0;
	t->origin = t->current_triangles = NULL;
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u32(d, m, "generation", false, &t->generation, NULL);
	if (rc == DRAPE_OK && t->generation != 0) {
		uint32_t nt = 0;
		rc = proto_wire_need(d, m, "origin", "origin", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_u32(d, v, "origin", 1, t->vertex_count, "vertex count", &t->origin,
						&t->current_vertex_count);
		if (rc == DRAPE_OK && t->current_vertex_count < t->vertex_count)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "origin", "%u vertices, fewer than the %u created",
					     (unsigned)t->current_vertex_count, (unsigned)t->vertex_count);
		if (rc == DRAPE_OK)
			rc = proto_wire_need(d, m, "current_triangles", "current_triangles", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_u32(d, v, "current_triangles", 3, t->current_vertex_count,
						"the current vertex count", &t->current_triangles, &nt);
		if (rc == DRAPE_OK && nt != t->triangle_count)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "current_triangles",
					     "%u triangles, the mesh has %u", (unsigned)nt,
					     (unsigned)t->triangle_count);
	}
	t->objects = NULL;
	t->object_count = 0;
	if (rc == DRAPE_OK && (v = proto_wire_get(m, "objects")) != NULL)
		rc = proto_wire_read_objects(d, v, t->vertex_count, &t->objects, &t->object_count);
	return rc;
}

static drape_err decode_body(proto_wire_dec *d, const msgpack_object *m, proto_reply *r)
{
	switch (r->op) {
	case PROTO_OP_HELLO:
		return decode_hello(d, m, &r->u.hello);
	case PROTO_OP_SESSION_CREATE:
		return decode_create(d, m, &r->u.create);
	case PROTO_OP_SESSION_RUN:
	case PROTO_OP_SESSION_RESUME: {
		proto_run_rep *u = &r->u.run;
		drape_err rc = decode_state(d, m, &u->state);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "frames_done", false, &u->frames_done, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "frames_target", false, &u->frames_target, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "queue_position", false, &u->queue_position, NULL);
		return rc;
	}
	case PROTO_OP_SESSION_CANCEL: {
		drape_err rc = decode_state(d, m, &r->u.cancel.state);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "frames_done", false, &r->u.cancel.frames_done, NULL);
		return rc;
	}
	case PROTO_OP_SESSION_STATUS:
		return decode_status(d, m, &r->u.status);
	case PROTO_OP_SESSION_TOPOLOGY:
		return decode_topology(d, m, &r->u.topology);
	case PROTO_OP_SESSION_COLLIDERS:
		return proto_colliders_decode(d, m, &r->u.colliders);
	case PROTO_OP_SESSION_LIST:
		return decode_list(d, m, &r->u.list);
	case PROTO_OP_FRAMES_GET:
		return decode_frames(d, m, &r->u.frames_get);
	case PROTO_OP_SERVER_STATS:
		return decode_server_stats(d, m, &r->u.server_stats);
	case PROTO_OP_COLLIDER_ADD:
		return proto_wire_field_u32(d, m, "index", true, &r->u.collider_add.index, NULL);
	case PROTO_OP_COLLIDER_FRAMES:
		return proto_wire_field_u32(d, m, "frames", true, &r->u.collider_frames.frame_count, NULL);
	case PROTO_OP_PREFLIGHT:
		return decode_preflight(d, m, &r->u.preflight);
	default:
		/* session.update/delete, collider.transform/update/remove and
		 * pins.attach carry no result fields. */
		return DRAPE_OK;
	}
}

drape_err proto_reply_decode(const void *buf, size_t len, size_t max_len, proto_op expect,
			     proto_reply *out, drape_error *err)
{
	const char *what = proto_op_name(expect);
	if (what == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "reply: expected op %d is unknown",
					(int)expect);
	msgpack_zone zone;
	msgpack_object root;
	proto_reply r;
	const msgpack_object *v;
	proto_wire_dec d = { err, what, NULL };

	if (!msgpack_zone_init(&zone, 4096))
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", what);
	drape_err rc = proto_wire_unpack(buf, len, max_len, &zone, &root, what, err);
	if (rc == DRAPE_OK)
		rc = proto_wire_map(&d, &root, "reply");
	if (rc != DRAPE_OK)
		goto done;
	d.mem = proto_mem_new();
	if (d.mem == NULL) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	memset(&r, 0, sizeof r);
	rc = proto_wire_field_u32(&d, &root, "v", true, &r.v, NULL);
	if (rc == DRAPE_OK && r.v != PROTO_VERSION)
		rc = proto_wire_fail(&d, DRAPE_EVERSION, "v",
			       "protocol version %u is not supported; this peer speaks %d",
			       (unsigned)r.v, PROTO_VERSION);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u64(&d, &root, "id", false, &r.id, &r.has_id);
	if (rc != DRAPE_OK)
		goto done;
	r.op = expect;
	v = proto_wire_get(&root, "op");
	if (v != NULL) {
		const char *name = NULL;
		size_t n = 0;
		rc = proto_wire_str_ref(&d, v, "op", &name, &n);
		if (rc == DRAPE_OK && proto_op_from_name(name, n) != expect)
			rc = proto_wire_fail(&d, DRAPE_EPROTO, "op", "reply is for \"%.*s\"",
				       (int)(n > 40 ? 40 : n), name);
		if (rc != DRAPE_OK)
			goto done;
	}
	rc = proto_wire_field_bool(&d, &root, "ok", true, &r.ok, NULL);
	if (rc != DRAPE_OK)
		goto done;
	if (!r.ok) {
		rc = proto_wire_need(&d, &root, "error", "error", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_read_error(&d, v, "error", &r.error);
	} else {
		rc = decode_body(&d, &root, &r);
	}
	if (rc == DRAPE_OK) {
		r.mem = d.mem;
		d.mem = NULL;
		*out = r;
	}
done:
	proto_mem_free(d.mem);
	msgpack_zone_destroy(&zone);
	return rc;
}

void proto_reply_free(proto_reply *rep)
{
	if (rep == NULL || rep->mem == NULL)
		return;
	proto_mem_free(rep->mem);
	memset(rep, 0, sizeof *rep);
}

/* ---- Encoding ---------------------------------------------------------------- */

static void encode_u32_field(proto_wire_enc *e, uint32_t *n, const char *key, uint64_t v)
{
	proto_wire_kv(e, n, key);
	proto_wire_pack_u64(e, v);
}

static void encode_body(proto_wire_enc *e, uint32_t *n, const proto_reply *r)
{
	switch (r->op) {
	case PROTO_OP_HELLO: {
		const proto_hello_rep *h = &r->u.hello;
		encode_u32_field(e, n, "version", h->version);
		proto_wire_kv(e, n, "server");
		proto_wire_pack_str(e, "server", h->server, PROTO_MAX_STRING);
		proto_wire_kv(e, n, "auth_required");
		proto_wire_pack_bool(e, h->auth_required);
		if (h->stream_url_count > PROTO_MAX_STREAM_URLS ||
		    (h->stream_urls == NULL && h->stream_url_count > 0)) {
			proto_wire_enc_fail(e, DRAPE_EINVAL, "stream", "%u URLs (NULL or over %d)",
				      (unsigned)h->stream_url_count, PROTO_MAX_STREAM_URLS);
			return;
		}
		proto_wire_kv(e, n, "stream");
		proto_wire_pack_array(e, h->stream_url_count);
		for (uint32_t i = 0; i < h->stream_url_count; i++)
			proto_wire_pack_str(e, "stream", h->stream_urls[i], PROTO_MAX_STRING);
		proto_wire_kv(e, n, "limits");
		uint32_t ln = 0;
		size_t at = proto_wire_map_begin(e);
		for (size_t i = 0; i < sizeof limit_fields / sizeof limit_fields[0]; i++) {
			uint64_t v = 0;
			memcpy(&v, (const char *)&h->limits + limit_fields[i].off, sizeof v);
			encode_u32_field(e, &ln, limit_fields[i].name, v);
		}
		proto_wire_map_end(e, at, ln);
		break;
	}
	case PROTO_OP_SESSION_CREATE: {
		const proto_create_rep *c = &r->u.create;
		encode_u32_field(e, n, "session", c->session);
		proto_wire_kv(e, n, "token");
		proto_wire_pack_bytes(e, "token", c->token, PROTO_TOKEN_SIZE, PROTO_TOKEN_SIZE);
		proto_wire_kv(e, n, "topology");
		proto_wire_pack_topology(e, &c->topology);
		encode_u32_field(e, n, "intersections", c->intersections);
		break;
	}
	case PROTO_OP_SESSION_RUN:
	case PROTO_OP_SESSION_RESUME: {
		const proto_run_rep *u = &r->u.run;
		proto_wire_kv(e, n, "state");
		proto_wire_pack_state(e, "state", u->state);
		encode_u32_field(e, n, "frames_done", u->frames_done);
		encode_u32_field(e, n, "frames_target", u->frames_target);
		encode_u32_field(e, n, "queue_position", u->queue_position);
		break;
	}
	case PROTO_OP_SESSION_CANCEL:
		proto_wire_kv(e, n, "state");
		proto_wire_pack_state(e, "state", r->u.cancel.state);
		encode_u32_field(e, n, "frames_done", r->u.cancel.frames_done);
		break;
	case PROTO_OP_SESSION_STATUS: {
		const proto_status_rep *s = &r->u.status;
		proto_wire_kv(e, n, "state");
		proto_wire_pack_state(e, "state", s->state);
		if (s->name != NULL) {
			proto_wire_kv(e, n, "name");
			proto_wire_pack_str(e, "name", s->name, PROTO_MAX_NAME);
		}
		encode_u32_field(e, n, "queue_position", s->queue_position);
		encode_u32_field(e, n, "frames_done", s->frames_done);
		encode_u32_field(e, n, "frames_target", s->frames_target);
		encode_u32_field(e, n, "frames_first", s->frames_first);
		encode_u32_field(e, n, "vertices", s->vertices);
		encode_u32_field(e, n, "triangles", s->triangles);
		encode_u32_field(e, n, "colliders", s->colliders);
		if (s->has_error) {
			proto_wire_kv(e, n, "error");
			proto_wire_pack_error(e, &s->error);
			encode_u32_field(e, n, "error_frame", s->error_frame);
		}
		if (s->has_stats) {
			proto_wire_kv(e, n, "stats");
			proto_wire_pack_stats(e, &s->stats);
		}
		if (s->has_storage_error) {
			proto_wire_kv(e, n, "storage_error");
			proto_wire_pack_error(e, &s->storage_error);
		}
		break;
	}
	case PROTO_OP_SESSION_LIST: {
		const proto_list_rep *l = &r->u.list;
		if (l->sessions == NULL && l->count > 0) {
			proto_wire_enc_fail(e, DRAPE_EINVAL, "sessions", "NULL with %u entries",
				      (unsigned)l->count);
			return;
		}
		proto_wire_kv(e, n, "sessions");
		proto_wire_pack_array(e, l->count);
		for (uint32_t i = 0; i < l->count; i++) {
			const proto_session_info *s = &l->sessions[i];
			uint32_t sn = 0;
			size_t at = proto_wire_map_begin(e);
			encode_u32_field(e, &sn, "id", s->id);
			if (s->name != NULL) {
				proto_wire_kv(e, &sn, "name");
				proto_wire_pack_str(e, "sessions.name", s->name, PROTO_MAX_NAME);
			}
			proto_wire_kv(e, &sn, "state");
			proto_wire_pack_state(e, "sessions.state", s->state);
			encode_u32_field(e, &sn, "frames_done", s->frames_done);
			encode_u32_field(e, &sn, "vertices", s->vertices);
			if (s->owner != NULL) {
				proto_wire_kv(e, &sn, "owner");
				proto_wire_pack_str(e, "sessions.owner", s->owner, PROTO_MAX_NAME);
			}
			if (s->host != NULL) {
				proto_wire_kv(e, &sn, "host");
				proto_wire_pack_str(e, "sessions.host", s->host, PROTO_MAX_NAME);
			}
			if (s->created != 0)
				encode_u32_field(e, &sn, "created", s->created);
			encode_u32_field(e, &sn, "frames_target", s->frames_target);
			encode_u32_field(e, &sn, "memory", s->memory);
			encode_u32_field(e, &sn, "disk", s->disk);
			proto_wire_map_end(e, at, sn);
		}
		break;
	}
	case PROTO_OP_FRAMES_GET: {
		const proto_frames_get_rep *g = &r->u.frames_get;
		if (g->frames == NULL && g->count > 0) {
			proto_wire_enc_fail(e, DRAPE_EINVAL, "frames", "NULL with %u frames",
				      (unsigned)g->count);
			return;
		}
		encode_u32_field(e, n, "session", g->session);
		encode_u32_field(e, n, "frames_done", g->frames_done);
		proto_wire_kv(e, n, "live");
		proto_wire_pack_bool(e, g->live);
		proto_wire_kv(e, n, "frames");
		proto_wire_pack_array(e, g->count);
		for (uint32_t i = 0; i < g->count; i++)
			proto_wire_pack_frame(e, "frames.positions", &g->frames[i]);
		if (g->triangles != NULL) {
			proto_wire_kv(e, n, "triangles");
			proto_wire_pack_bin_u32(e, "triangles", g->triangles, (uint64_t)g->triangle_count * 3);
		}
		break;
	}
	case PROTO_OP_SERVER_STATS: {
		const proto_server_stats_rep *s = &r->u.server_stats;
		for (size_t i = 0; i < sizeof server_stat_fields / sizeof server_stat_fields[0]; i++) {
			uint64_t v = 0;
			memcpy(&v, (const char *)s + server_stat_fields[i].off, sizeof v);
			encode_u32_field(e, n, server_stat_fields[i].name, v);
		}
		encode_u32_field(e, n, "threads", s->threads);
		proto_wire_kv(e, n, "uptime_s");
		proto_wire_pack_f64(e, s->uptime_s);
		break;
	}
	case PROTO_OP_COLLIDER_ADD:
		encode_u32_field(e, n, "index", r->u.collider_add.index);
		break;
	case PROTO_OP_COLLIDER_FRAMES:
		encode_u32_field(e, n, "frames", r->u.collider_frames.frame_count);
		break;
	case PROTO_OP_SESSION_TOPOLOGY: {
		const proto_topology_rep *t = &r->u.topology;
		proto_wire_kv(e, n, "positions");
		proto_wire_pack_bin_f32(e, "positions", t->positions, 3u * (uint64_t)t->vertex_count);
		proto_wire_kv(e, n, "triangles");
		proto_wire_pack_bin_u32(e, "triangles", t->triangles, 3u * (uint64_t)t->triangle_count);
		if (t->uvs != NULL) {
			proto_wire_kv(e, n, "uvs");
			proto_wire_pack_bin_f32(e, "uvs", t->uvs, 2u * (uint64_t)t->vertex_count);
		}
		proto_wire_kv(e, n, "fps");
		proto_wire_pack_f32(e, t->fps);
		if (t->generation != 0) {
			proto_wire_kv(e, n, "generation");
			proto_wire_pack_u64(e, t->generation);
			proto_wire_kv(e, n, "origin");
			proto_wire_pack_bin_u32(e, "origin", t->origin, t->current_vertex_count);
			proto_wire_kv(e, n, "current_triangles");
			proto_wire_pack_bin_u32(e, "current_triangles", t->current_triangles,
						3u * (uint64_t)t->triangle_count);
		}
		if (t->object_count > 0) {
			proto_wire_kv(e, n, "objects");
			proto_wire_pack_objects(e, t->objects, t->object_count);
		}
		break;
	}
	case PROTO_OP_SESSION_COLLIDERS:
		proto_colliders_encode(e, n, &r->u.colliders);
		break;
	case PROTO_OP_PREFLIGHT: {
		const proto_preflight_rep *p = &r->u.preflight;
		if (p->pair_count > PROTO_MAX_PREFLIGHT_PAIRS ||
		    (p->pairs == NULL && p->pair_count > 0)) {
			proto_wire_enc_fail(e, DRAPE_EINVAL, "pairs", "%u pairs (NULL or over %d)",
				      (unsigned)p->pair_count, PROTO_MAX_PREFLIGHT_PAIRS);
			return;
		}
		encode_u32_field(e, n, "count", p->count);
		/* drape_tri_pair is two uint32 with no padding, but copying
		 * through a flat array keeps the wire layout independent of
		 * the struct's. */
		uint32_t flat[2 * PROTO_MAX_PREFLIGHT_PAIRS];
		for (uint32_t i = 0; i < p->pair_count; i++) {
			flat[2 * i] = p->pairs[i].a;
			flat[2 * i + 1] = p->pairs[i].b;
		}
		proto_wire_kv(e, n, "pairs");
		proto_wire_pack_bin_u32(e, "pairs", flat, 2u * (uint64_t)p->pair_count);
		break;
	}
	default:
		break;
	}
}

drape_err proto_reply_encode(const proto_reply *rep, proto_buf *out, drape_error *err)
{
	const char *name = proto_op_name(rep->op);
	if (rep->ok && name == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "reply: op: unknown op %d", (int)rep->op);

	proto_wire_enc e;
	uint32_t n = 0;
	proto_wire_enc_init(&e, name != NULL ? name : "reply", err);
	size_t at = proto_wire_map_begin(&e);
	proto_wire_kv(&e, &n, "v");
	proto_wire_pack_u64(&e, PROTO_VERSION);
	if (rep->has_id) {
		proto_wire_kv(&e, &n, "id");
		proto_wire_pack_u64(&e, rep->id);
	}
	if (name != NULL) {
		proto_wire_kv(&e, &n, "op");
		proto_wire_pack_str(&e, "op", name, 64);
	}
	proto_wire_kv(&e, &n, "ok");
	proto_wire_pack_bool(&e, rep->ok);
	if (!rep->ok) {
		drape_error er = rep->error;
		if (er.code == DRAPE_OK)
			er.code = DRAPE_EINTERNAL;
		proto_wire_kv(&e, &n, "error");
		proto_wire_pack_error(&e, &er);
	} else {
		encode_body(&e, &n, rep);
	}
	proto_wire_map_end(&e, at, n);
	return proto_wire_enc_finish(&e, out);
}
