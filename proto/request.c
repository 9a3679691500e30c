/*
 * Requests: the header every request carries, one body per op, and the
 * encoder the client uses. The decoder reads everything into a local struct
 * and an arena and hands them over only when the whole request is valid, so
 * a bad request leaves the caller's struct untouched and nothing allocated.
 */
#include "proto/wire.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const shape_names[] = {
	[DRAPE_SHAPE_PLANE] = "plane", [DRAPE_SHAPE_SPHERE] = "sphere", [DRAPE_SHAPE_BOX] = "box",
	[DRAPE_SHAPE_CAPSULE] = "capsule", [DRAPE_SHAPE_MESH] = "mesh",
};

/* ---- Header ---------------------------------------------------------------- */

/* Reads whatever header fields are readable, ignoring malformed ones, so an
 * error reply can still echo id and op. */
static void header_lenient(const msgpack_object *root, proto_header *h)
{
	const msgpack_object *v;
	memset(h, 0, sizeof *h);
	if (root->type != MSGPACK_OBJECT_MAP)
		return;
	v = proto_wire_get(root, "v");
	if (v != NULL && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= UINT32_MAX) {
		h->has_v = true;
		h->v = (uint32_t)v->via.u64;
	}
	v = proto_wire_get(root, "id");
	if (v != NULL && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		h->has_id = true;
		h->id = v->via.u64;
	}
	v = proto_wire_get(root, "client");
	if (v != NULL && v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		h->has_client = true;
		h->client = v->via.u64;
	}
	v = proto_wire_get(root, "op");
	if (v != NULL && v->type == MSGPACK_OBJECT_STR)
		h->op = proto_op_from_name(v->via.str.ptr, v->via.str.size);
}

drape_err proto_request_peek(const void *buf, size_t len, size_t max_len, proto_header *head,
			     drape_error *err)
{
	msgpack_zone zone;
	msgpack_object root;
	memset(head, 0, sizeof *head);
	if (!msgpack_zone_init(&zone, 1024))
		return drape_error_setf(err, DRAPE_ENOMEM, "request: out of memory");
	drape_err rc = proto_wire_unpack(buf, len, max_len, &zone, &root, "request", err);
	if (rc == DRAPE_OK)
		header_lenient(&root, head);
	msgpack_zone_destroy(&zone);
	return rc;
}

/* The strict header: version first, so a request of another major version
 * gets EVERSION whatever else it contains. */
static drape_err header_strict(proto_wire_dec *d, const msgpack_object *root, proto_request *r)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_field_u32(d, root, "v", true, &r->v, NULL);
	if (rc != DRAPE_OK)
		return rc;
	if (r->v != PROTO_VERSION)
		return proto_wire_fail(d, DRAPE_EVERSION, "v",
				 "protocol version %u is not supported; this peer speaks %d",
				 (unsigned)r->v, PROTO_VERSION);
	rc = proto_wire_field_u64(d, root, "id", true, &r->id, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u64(d, root, "client", false, &r->client, &r->has_client);
	if (rc != DRAPE_OK)
		return rc;

	const char *name = NULL;
	size_t n = 0;
	rc = proto_wire_need(d, root, "op", "op", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_str_ref(d, v, "op", &name, &n);
	if (rc != DRAPE_OK)
		return rc;
	r->op = proto_op_from_name(name, n);
	if (r->op == PROTO_OP_NONE)
		return proto_wire_fail(d, DRAPE_EPROTO, "op", "unknown operation \"%.*s\"",
				 (int)(n > 40 ? 40 : n), name);
	d->what = proto_op_name(r->op);

	v = proto_wire_get(root, "auth");
	if (v != NULL) {
		if (v->type != MSGPACK_OBJECT_BIN && v->type != MSGPACK_OBJECT_STR)
			return proto_wire_fail(d, DRAPE_EPROTO, "auth", "expected a bin or a string");
		/* bin and str share their layout in msgpack_object. */
		const uint32_t size = v->via.bin.size;
		if (size > PROTO_MAX_AUTH)
			return proto_wire_fail(d, DRAPE_EINVAL, "auth", "%u bytes exceed the limit of %d",
					 (unsigned)size, PROTO_MAX_AUTH);
		uint8_t *a = proto_mem_alloc(d->mem, size);
		if (a == NULL)
			return proto_wire_fail(d, DRAPE_ENOMEM, "auth", "out of memory");
		if (size > 0)
			memcpy(a, v->via.bin.ptr, size);
		r->auth = a;
		r->auth_len = size;
	}

	v = proto_wire_get(root, "token");
	if (v != NULL) {
		if (v->type != MSGPACK_OBJECT_BIN)
			return proto_wire_fail(d, DRAPE_EPROTO, "token", "expected a bin of %d bytes",
					 PROTO_TOKEN_SIZE);
		if (v->via.bin.size != PROTO_TOKEN_SIZE)
			return proto_wire_fail(d, DRAPE_EINVAL, "token", "%u bytes, expected %d",
					 (unsigned)v->via.bin.size, PROTO_TOKEN_SIZE);
		memcpy(r->token, v->via.bin.ptr, PROTO_TOKEN_SIZE);
		r->has_token = true;
	}

	return proto_wire_field_u32(d, root, "session", proto_op_needs_session(r->op), &r->session,
			      &r->has_session);
}

/* ---- Bodies ------------------------------------------------------------------ */

/* One optional per-vertex float array, each value in [lo, hi] (or -1 when
 * minus_one); an element out of range is named with its index. */
static drape_err vertex_floats(proto_wire_dec *d, const msgpack_object *m, const char *key,
			       uint32_t tuple, uint32_t count, float lo, bool open_lo, float hi,
			       bool minus_one, const float **out)
{
	const msgpack_object *v = proto_wire_get(m, key);
	if (v == NULL)
		return DRAPE_OK;
	uint32_t n = 0;
	drape_err rc = proto_wire_bin_f32(d, v, key, tuple, count, out, &n);
	if (rc != DRAPE_OK)
		return rc;
	for (uint64_t i = 0; i < (uint64_t)n * tuple; i++) {
		const float x = (*out)[i];
		if (minus_one && x == -1.0f)
			continue;
		if (!(open_lo ? x > lo : x >= lo) || !(x <= hi)) {
			char sub[64];
			if (tuple > 1)
				snprintf(sub, sizeof sub, "%s[%u][%u]", key, (unsigned)(i / tuple),
					 (unsigned)(i % tuple));
			else
				snprintf(sub, sizeof sub, "%s[%u]", key, (unsigned)i);
			return proto_wire_fail(d, DRAPE_EINVAL, sub, "%g is outside %s%g, %g]%s", (double)x,
					       open_lo ? "(" : "[", (double)lo, (double)hi,
					       minus_one ? " (or -1: the collider's)" : "");
		}
	}
	return DRAPE_OK;
}

static drape_err decode_vertex_props(proto_wire_dec *d, const msgpack_object *m, proto_create_req *c)
{
	const uint32_t n = c->mesh.vertex_count;
	drape_err rc = vertex_floats(d, m, "stiffness_scale", 3, n, 0.0f, true,
				     DRAPE_SIM_MAX_STIFFNESS_SCALE, false, &c->stiffness_scale);
	if (rc == DRAPE_OK)
		rc = vertex_floats(d, m, "vertex_thickness", 1, n, 0.0f, false, 1.0f, false,
				   &c->vertex_thickness);
	if (rc == DRAPE_OK)
		rc = vertex_floats(d, m, "vertex_friction", 1, n, 0.0f, false, DRAPE_SIM_MAX_FRICTION,
				   true, &c->vertex_friction);
	return rc;
}

/* objects[i].key as a uint32, named with its index when missing or bad. */
static drape_err object_u32(proto_wire_dec *d, const msgpack_object *e, uint32_t i, const char *key,
			    bool required, uint32_t *out)
{
	char path[64];
	snprintf(path, sizeof path, "objects[%u].%s", (unsigned)i, key);
	const msgpack_object *v = proto_wire_get(e, key);
	if (v == NULL)
		return required ? proto_wire_fail(d, DRAPE_EINVAL, path, "missing") : DRAPE_OK;
	return proto_wire_u32(d, v, path, out);
}

/* "objects": an array of maps {name, first_vertex, vertex_count, layer?,
 * collides_with?}, consecutive ranges covering the mesh, unique names
 * (session.create, and the session.topology reply). */
drape_err proto_wire_read_objects(proto_wire_dec *d, const msgpack_object *v, uint32_t vertex_count,
				  const proto_object **out, uint32_t *count)
{
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return proto_wire_fail(d, DRAPE_EPROTO, "objects", "expected an array of maps");
	const uint32_t n = v->via.array.size;
	if (n == 0 || n > DRAPE_SIM_MAX_OBJECTS)
		return proto_wire_fail(d, n == 0 ? DRAPE_EINVAL : DRAPE_ELIMIT, "objects",
				       "%u objects; 1 to %u", (unsigned)n, DRAPE_SIM_MAX_OBJECTS);
	proto_object *o = proto_mem_alloc(d->mem, (size_t)n * sizeof *o);
	if (o == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, "objects", "out of memory");
	uint64_t next = 0;
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *e = &v->via.array.ptr[i];
		char path[64];
		snprintf(path, sizeof path, "objects[%u]", (unsigned)i);
		drape_err rc = proto_wire_map(d, e, path);
		if (rc != DRAPE_OK)
			return rc;
		const msgpack_object *nm;
		snprintf(path, sizeof path, "objects[%u].name", (unsigned)i);
		if ((rc = proto_wire_need(d, e, "name", path, &nm)) != DRAPE_OK ||
		    (rc = proto_wire_str(d, nm, path, PROTO_MAX_NAME, &o[i].name)) != DRAPE_OK)
			return rc;
		const size_t len = strlen(o[i].name);
		if (len == 0 || proto_utf8_check(o[i].name, len) != len)
			return proto_wire_fail(d, DRAPE_EINVAL, path, "empty or not valid UTF-8");
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(o[j].name, o[i].name) == 0)
				return proto_wire_fail(d, DRAPE_EINVAL, path,
						       "\"%s\" is also objects[%u].name", o[i].name,
						       (unsigned)j);
		drape_sim_object *r = &o[i].range;
		r->layer = 1u;
		r->collides_with = 0xffffffffu;
		if ((rc = object_u32(d, e, i, "first_vertex", true, &r->first_vertex)) ||
		    (rc = object_u32(d, e, i, "vertex_count", true, &r->vertex_count)) ||
		    (rc = object_u32(d, e, i, "layer", false, &r->layer)) ||
		    (rc = object_u32(d, e, i, "collides_with", false, &r->collides_with)))
			return rc;
		if (r->first_vertex != next) {
			snprintf(path, sizeof path, "objects[%u].first_vertex", (unsigned)i);
			return proto_wire_fail(d, DRAPE_EINVAL, path,
					       "%u, expected %llu: objects are consecutive vertex ranges",
					       (unsigned)r->first_vertex, (unsigned long long)next);
		}
		next += r->vertex_count;
		if (r->vertex_count == 0 || next > vertex_count) {
			snprintf(path, sizeof path, "objects[%u].vertex_count", (unsigned)i);
			return proto_wire_fail(d, DRAPE_EINVAL, path, "%u: 0, or past the %u vertices",
					       (unsigned)r->vertex_count, (unsigned)vertex_count);
		}
	}
	if (next != vertex_count)
		return proto_wire_fail(d, DRAPE_EINVAL, "objects", "cover %llu of %u vertices",
				       (unsigned long long)next, (unsigned)vertex_count);
	*out = o;
	*count = n;
	return DRAPE_OK;
}

static drape_err decode_create(proto_wire_dec *d, const msgpack_object *m, proto_create_req *c)
{
	drape_err rc = proto_wire_read_mesh(d, m, &c->mesh);
	if (rc != DRAPE_OK)
		return rc;
	const msgpack_object *v = proto_wire_get(m, "inv_mass");
	if (v != NULL) {
		uint32_t n = 0;
		rc = proto_wire_bin_f32(d, v, "inv_mass", 1, c->mesh.vertex_count, &c->inv_mass, &n);
		if (rc != DRAPE_OK)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			if (c->inv_mass[i] < 0.0f) {
				char sub[48];
				snprintf(sub, sizeof sub, "inv_mass[%u]", (unsigned)i);
				return proto_wire_fail(d, DRAPE_EINVAL, sub, "%g is negative",
						 (double)c->inv_mass[i]);
			}
		}
	}
	v = proto_wire_get(m, "pins");
	if (v != NULL) {
		rc = proto_wire_bin_u32(d, v, "pins", 1, c->mesh.vertex_count, "vertex count", &c->pins,
				  &c->pin_count);
		if (rc != DRAPE_OK)
			return rc;
	}
	v = proto_wire_get(m, "pin_stiffness");
	if (v != NULL) {
		uint32_t n = 0;
		if (c->pin_count == 0)
			return proto_wire_fail(d, DRAPE_EINVAL, "pin_stiffness",
					       "given without pins");
		rc = proto_wire_bin_f32(d, v, "pin_stiffness", 1, c->pin_count, &c->pin_stiffness,
					&n);
		if (rc != DRAPE_OK)
			return rc;
		for (uint32_t i = 0; i < c->pin_count; i++) {
			if (c->pin_stiffness[i] < 0.0f) {
				char sub[48];
				snprintf(sub, sizeof sub, "pin_stiffness[%u]", (unsigned)i);
				return proto_wire_fail(d, DRAPE_EINVAL, sub,
						       "%g is negative (N/m; 0 is a hard pin)",
						       (double)c->pin_stiffness[i]);
			}
		}
	}
	v = proto_wire_get(m, "uvs");
	if (v != NULL) {
		uint32_t n = 0;
		rc = proto_wire_bin_f32(d, v, "uvs", 2, c->mesh.vertex_count, &c->uvs, &n);
		if (rc != DRAPE_OK)
			return rc;
	}
	v = proto_wire_get(m, "rest_positions");
	if (v != NULL) {
		uint32_t n = 0;
		rc = proto_wire_bin_f32(d, v, "rest_positions", 3, c->mesh.vertex_count,
					&c->rest_positions, &n);
		if (rc != DRAPE_OK)
			return rc;
	}
	v = proto_wire_get(m, "rest_scale");
	if (v != NULL) {
		uint32_t n = 0;
		rc = proto_wire_bin_f32(d, v, "rest_scale", 1, c->mesh.vertex_count, &c->rest_scale,
					&n);
		if (rc != DRAPE_OK)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			if (!(c->rest_scale[i] > 0.0f)) {
				char sub[48];
				snprintf(sub, sizeof sub, "rest_scale[%u]", (unsigned)i);
				return proto_wire_fail(d, DRAPE_EINVAL, sub, "%g is not > 0",
						       (double)c->rest_scale[i]);
			}
		}
	}
	rc = decode_vertex_props(d, m, c);
	if (rc != DRAPE_OK)
		return rc;
	v = proto_wire_get(m, "objects");
	if (v != NULL &&
	    (rc = proto_wire_read_objects(d, v, c->mesh.vertex_count, &c->objects, &c->object_count)) !=
		    DRAPE_OK)
		return rc;
	const msgpack_object *sv = proto_wire_get(m, "stitch_v"), *st = proto_wire_get(m, "stitch_t");
	if ((sv == NULL) != (st == NULL))
		return proto_wire_fail(d, DRAPE_EINVAL, sv == NULL ? "stitch_v" : "stitch_t",
				       "missing: stitch_v and stitch_t come together");
	if (sv != NULL) {
		uint32_t nt = 0;
		rc = proto_wire_bin_u32(d, sv, "stitch_v", 3, c->mesh.vertex_count, "vertex count",
					&c->stitch_v, &c->stitch_count);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_f32(d, st, "stitch_t", 1, c->stitch_count, &c->stitch_t,
						&nt);
		if (rc != DRAPE_OK)
			return rc;
	}
	rc = proto_wire_field_f32(d, m, "stitch_k", false, &c->stitch_k, &c->has_stitch_k);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_f32(d, m, "sew_speed", false, &c->sew_speed, &c->has_sew_speed);
	if (rc != DRAPE_OK)
		return rc;
	v = proto_wire_get(m, "params");
	if (v != NULL) {
		rc = proto_wire_read_params(d, v, "params", &c->params);
		if (rc != DRAPE_OK)
			return rc;
	}
	rc = proto_wire_field_str(d, m, "name", false, PROTO_MAX_NAME, &c->name);
	/* The name is echoed in replies (status, list), whose str must be
	 * UTF-8: refuse it here rather than send it on. */
	if (rc == DRAPE_OK && c->name != NULL) {
		const size_t len = strlen(c->name), bad = proto_utf8_check(c->name, len);
		if (bad != len)
			return proto_wire_fail(d, DRAPE_EINVAL, "name", "not valid UTF-8 (byte %zu)", bad);
	}
	return rc;
}

static drape_err decode_collider_add(proto_wire_dec *d, const msgpack_object *m,
				     proto_collider_add_req *c)
{
	drape_collider_desc *s = &c->desc;
	const msgpack_object *v;
	const char *name = NULL;
	size_t n = 0;
	drape_err rc = proto_wire_need(d, m, "shape", "shape", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_str_ref(d, v, "shape", &name, &n);
	if (rc != DRAPE_OK)
		return rc;
	s->shape = 0;
	for (int i = DRAPE_SHAPE_PLANE; i <= DRAPE_SHAPE_MESH; i++) {
		if (strlen(shape_names[i]) == n && memcmp(shape_names[i], name, n) == 0)
			s->shape = (drape_shape)i;
	}
	switch (s->shape) {
	case DRAPE_SHAPE_PLANE:
		rc = proto_wire_field_vec3(d, m, "point", true, s->point, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_vec3(d, m, "normal", true, s->normal, NULL);
		break;
	case DRAPE_SHAPE_SPHERE:
		rc = proto_wire_field_vec3(d, m, "center", true, s->center, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_f32(d, m, "radius", true, &s->radius, NULL);
		break;
	case DRAPE_SHAPE_BOX:
		rc = proto_wire_field_vec3(d, m, "center", true, s->center, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_vec3(d, m, "half_extents", true, s->half_extents, NULL);
		break;
	case DRAPE_SHAPE_CAPSULE:
		rc = proto_wire_field_vec3(d, m, "a", true, s->a, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_vec3(d, m, "b", true, s->b, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_f32(d, m, "radius", true, &s->radius, NULL);
		break;
	case DRAPE_SHAPE_MESH:
		rc = proto_wire_need(d, m, "vertices", "vertices", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_f32(d, v, "vertices", 3, UINT32_MAX, &s->vertices,
					  &s->vertex_count);
		if (rc == DRAPE_OK && s->vertex_count == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "vertices", "no vertices");
		if (rc == DRAPE_OK)
			rc = proto_wire_need(d, m, "triangles", "triangles", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_u32(d, v, "triangles", 3, s->vertex_count, "vertex count",
					  &s->triangles, &s->triangle_count);
		if (rc == DRAPE_OK && s->triangle_count == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "triangles", "no triangles");
		break;
	default:
		return proto_wire_fail(d, DRAPE_EINVAL, "shape",
				 "unknown shape \"%.*s\" (plane, sphere, box, capsule or mesh)",
				 (int)(n > 40 ? 40 : n), name);
	}
	if (rc != DRAPE_OK)
		return rc;

	static const struct {
		const char *key;
		uint32_t bit;
		size_t off;
	} opt[] = {
		{ "friction", PROTO_COLLIDER_FRICTION, offsetof(drape_collider_desc, friction) },
		{ "static_friction", PROTO_COLLIDER_STATIC_FRICTION,
		  offsetof(drape_collider_desc, static_friction) },
		{ "restitution", PROTO_COLLIDER_RESTITUTION,
		  offsetof(drape_collider_desc, restitution) },
		{ "thickness", PROTO_COLLIDER_THICKNESS, offsetof(drape_collider_desc, thickness) },
		{ "voxel_size", PROTO_COLLIDER_VOXEL_SIZE, offsetof(drape_collider_desc, voxel_size) },
	};
	for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
		bool present;
		rc = proto_wire_field_f32(d, m, opt[i].key, false, (float *)((char *)s + opt[i].off),
				    &present);
		if (rc != DRAPE_OK)
			return rc;
		if (present)
			c->mask |= opt[i].bit;
	}
	v = proto_wire_get(m, "keyframes");
	if (v != NULL) {
		rc = proto_wire_read_keyframes(d, v, "keyframes", &s->keyframes, &s->keyframe_count);
		if (rc != DRAPE_OK)
			return rc;
	}
	v = proto_wire_get(m, "frames");
	if (v == NULL) {
		if (proto_wire_get(m, "frame_start") != NULL)
			return proto_wire_fail(d, DRAPE_EINVAL, "frame_start", "given without frames");
		return DRAPE_OK;
	}
	if (s->shape != DRAPE_SHAPE_MESH)
		return proto_wire_fail(d, DRAPE_EINVAL, "frames", "only a mesh collider can deform");
	/* One tuple is one whole pose, so a bin that ends inside a pose is
	 * refused here, before anything reaches the daemon. */
	rc = proto_wire_bin_f32(d, v, "frames", s->vertex_count * 3u, UINT32_MAX, &s->frames, &s->frame_count);
	if (rc == DRAPE_OK && s->frame_count == 0)
		rc = proto_wire_fail(d, DRAPE_EINVAL, "frames", "no frames");
	if (rc == DRAPE_OK)
		rc = proto_wire_field_f32(d, m, "frame_start", false, &s->frame_start, NULL);
	return rc;
}

static drape_err decode_body(proto_wire_dec *d, const msgpack_object *m, proto_request *r)
{
	const msgpack_object *v;
	drape_err rc = DRAPE_OK;
	switch (r->op) {
	case PROTO_OP_HELLO:
		return proto_wire_field_str(d, m, "client_name", false, PROTO_MAX_STRING,
				      &r->u.hello.client);
	case PROTO_OP_SESSION_CREATE:
		return decode_create(d, m, &r->u.create);
	case PROTO_OP_SESSION_UPDATE:
		rc = proto_wire_need(d, m, "params", "params", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_read_params(d, v, "params", &r->u.update.params);
		return rc;
	case PROTO_OP_SESSION_RUN:
		return proto_wire_field_u32(d, m, "frames", true, &r->u.run.frames, NULL);
	case PROTO_OP_FRAMES_GET: {
		proto_frames_get_req *g = &r->u.frames_get;
		rc = proto_wire_field_u32(d, m, "first", true, &g->first, NULL);
		if (rc == DRAPE_OK && g->first == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "first", "frame indices start at 1");
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "count", true, &g->count, NULL);
		if (rc == DRAPE_OK && g->count == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "count", "must be at least 1");
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "wait_ms", false, &g->wait_ms, NULL);
		if (rc == DRAPE_OK && g->wait_ms > PROTO_MAX_FRAMES_WAIT_MS)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "wait_ms", "%u is more than the %u ms allowed",
					     (unsigned)g->wait_ms, PROTO_MAX_FRAMES_WAIT_MS);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_bool(d, m, "mesh", false, &g->mesh, NULL);
		return rc;
	}
	case PROTO_OP_COLLIDER_ADD:
		return decode_collider_add(d, m, &r->u.collider_add);
	case PROTO_OP_COLLIDER_TRANSFORM: {
		proto_collider_transform_req *t = &r->u.collider_transform;
		rc = proto_wire_field_u32(d, m, "index", true, &t->index, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_need(d, m, "keyframes", "keyframes", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_read_keyframes(d, v, "keyframes", &t->keyframes, &t->keyframe_count);
		return rc;
	}
	case PROTO_OP_COLLIDER_UPDATE: {
		proto_collider_update_req *u = &r->u.collider_update;
		rc = proto_wire_field_u32(d, m, "index", true, &u->index, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_need(d, m, "vertices", "vertices", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_f32(d, v, "vertices", 3, UINT32_MAX, &u->vertices,
					  &u->vertex_count);
		if (rc == DRAPE_OK && u->vertex_count == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "vertices", "no vertices");
		return rc;
	}
	case PROTO_OP_COLLIDER_REMOVE:
		return proto_wire_field_u32(d, m, "index", true, &r->u.collider_remove.index, NULL);
	case PROTO_OP_COLLIDER_FRAMES: {
		proto_collider_frames_req *f = &r->u.collider_frames;
		rc = proto_wire_field_u32(d, m, "index", true, &f->index, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_need(d, m, "frames", "frames", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_f32(d, v, "frames", 3, UINT32_MAX, &f->frames, &f->point_count);
		if (rc == DRAPE_OK && f->point_count == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "frames", "no frames");
		return rc;
	}
	case PROTO_OP_PINS_ATTACH: {
		proto_pins_attach_req *p = &r->u.pins_attach;
		rc = proto_wire_need(d, m, "vertices", "vertices", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_bin_u32(d, v, "vertices", 1, UINT64_MAX, "limit", &p->vertices,
					  &p->count);
		if (rc == DRAPE_OK && p->count == 0)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "vertices", "no vertices");
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "collider", true, &p->collider, NULL);
		return rc;
	}
	case PROTO_OP_PREFLIGHT: {
		proto_preflight_req *p = &r->u.preflight;
		rc = proto_wire_read_mesh(d, m, &p->mesh);
		p->max_pairs = PROTO_DEFAULT_PREFLIGHT_PAIRS;
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "max_pairs", false, &p->max_pairs, NULL);
		if (rc == DRAPE_OK && p->max_pairs > PROTO_MAX_PREFLIGHT_PAIRS)
			rc = proto_wire_fail(d, DRAPE_EINVAL, "max_pairs", "%u exceeds the limit of %d",
				       (unsigned)p->max_pairs, PROTO_MAX_PREFLIGHT_PAIRS);
		return rc;
	}
	case PROTO_OP_SESSION_COLLIDERS:
		rc = proto_wire_field_u32(d, m, "frame", true, &r->u.colliders.frame, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_bool(d, m, "mesh", false, &r->u.colliders.mesh, NULL);
		return rc;
	case PROTO_OP_SESSION_LIST:
		/* Optional "all": an admin asks for every user's sessions. */
		return proto_wire_field_bool(d, m, "all", false, &r->u.list.all, NULL);
	case PROTO_OP_SESSION_CANCEL:
	case PROTO_OP_SESSION_STATUS:
	case PROTO_OP_SESSION_DELETE:
	case PROTO_OP_SESSION_RESUME:
	case PROTO_OP_SERVER_STATS:
	case PROTO_OP_SESSION_TOPOLOGY:
		return DRAPE_OK;
	default:
		return proto_wire_fail(d, DRAPE_EINTERNAL, "op", "no decoder for op %d", (int)r->op);
	}
}

drape_err proto_request_decode(const void *buf, size_t len, size_t max_len, proto_request *out,
			       proto_header *head, drape_error *err)
{
	msgpack_zone zone;
	msgpack_object root;
	proto_request r;
	proto_wire_dec d = { err, "request", NULL };

	if (head != NULL)
		memset(head, 0, sizeof *head);
	if (!msgpack_zone_init(&zone, 4096))
		return drape_error_setf(err, DRAPE_ENOMEM, "request: out of memory");
	drape_err rc = proto_wire_unpack(buf, len, max_len, &zone, &root, "request", err);
	if (rc != DRAPE_OK)
		goto done;
	if (head != NULL)
		header_lenient(&root, head);
	rc = proto_wire_map(&d, &root, "message");
	if (rc != DRAPE_OK)
		goto done;
	d.mem = proto_mem_new();
	if (d.mem == NULL) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "request: out of memory");
		goto done;
	}
	memset(&r, 0, sizeof r);
	rc = header_strict(&d, &root, &r);
	if (rc == DRAPE_OK)
		rc = decode_body(&d, &root, &r);
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

void proto_request_free(proto_request *req)
{
	if (req == NULL || req->mem == NULL)
		return;
	proto_mem_free(req->mem);
	memset(req, 0, sizeof *req);
}

/* ---- Encoding --------------------------------------------------------------- */

static void encode_mesh(proto_wire_enc *e, uint32_t *n, const proto_mesh *m)
{
	proto_wire_kv(e, n, "positions");
	proto_wire_pack_bin_f32(e, "positions", m->positions, (uint64_t)m->vertex_count * 3u);
	proto_wire_kv(e, n, "triangles");
	proto_wire_pack_bin_u32(e, "triangles", m->triangles, (uint64_t)m->triangle_count * 3u);
}

static void encode_collider_add(proto_wire_enc *e, uint32_t *n, const proto_collider_add_req *c)
{
	const drape_collider_desc *s = &c->desc;
	if (s->shape < DRAPE_SHAPE_PLANE || s->shape > DRAPE_SHAPE_MESH) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, "shape", "unknown shape %d", (int)s->shape);
		return;
	}
	proto_wire_kv(e, n, "shape");
	proto_wire_pack_str(e, "shape", shape_names[s->shape], 16);
	switch (s->shape) {
	case DRAPE_SHAPE_PLANE:
		proto_wire_kv(e, n, "point");
		proto_wire_pack_f32_array(e, s->point, 3);
		proto_wire_kv(e, n, "normal");
		proto_wire_pack_f32_array(e, s->normal, 3);
		break;
	case DRAPE_SHAPE_SPHERE:
		proto_wire_kv(e, n, "center");
		proto_wire_pack_f32_array(e, s->center, 3);
		proto_wire_kv(e, n, "radius");
		proto_wire_pack_f32(e, s->radius);
		break;
	case DRAPE_SHAPE_BOX:
		proto_wire_kv(e, n, "center");
		proto_wire_pack_f32_array(e, s->center, 3);
		proto_wire_kv(e, n, "half_extents");
		proto_wire_pack_f32_array(e, s->half_extents, 3);
		break;
	case DRAPE_SHAPE_CAPSULE:
		proto_wire_kv(e, n, "a");
		proto_wire_pack_f32_array(e, s->a, 3);
		proto_wire_kv(e, n, "b");
		proto_wire_pack_f32_array(e, s->b, 3);
		proto_wire_kv(e, n, "radius");
		proto_wire_pack_f32(e, s->radius);
		break;
	case DRAPE_SHAPE_MESH:
		proto_wire_kv(e, n, "vertices");
		proto_wire_pack_bin_f32(e, "vertices", s->vertices, (uint64_t)s->vertex_count * 3u);
		proto_wire_kv(e, n, "triangles");
		proto_wire_pack_bin_u32(e, "triangles", s->triangles, (uint64_t)s->triangle_count * 3u);
		break;
	}
	if (c->mask & PROTO_COLLIDER_FRICTION) {
		proto_wire_kv(e, n, "friction");
		proto_wire_pack_f32(e, s->friction);
	}
	if (c->mask & PROTO_COLLIDER_STATIC_FRICTION) {
		proto_wire_kv(e, n, "static_friction");
		proto_wire_pack_f32(e, s->static_friction);
	}
	if (c->mask & PROTO_COLLIDER_RESTITUTION) {
		proto_wire_kv(e, n, "restitution");
		proto_wire_pack_f32(e, s->restitution);
	}
	if (c->mask & PROTO_COLLIDER_THICKNESS) {
		proto_wire_kv(e, n, "thickness");
		proto_wire_pack_f32(e, s->thickness);
	}
	if (c->mask & PROTO_COLLIDER_VOXEL_SIZE) {
		proto_wire_kv(e, n, "voxel_size");
		proto_wire_pack_f32(e, s->voxel_size);
	}
	if (s->keyframe_count > 0) {
		proto_wire_kv(e, n, "keyframes");
		proto_wire_pack_keyframes(e, "keyframes", s->keyframes, s->keyframe_count);
	}
	if (s->frame_count > 0 && s->shape == DRAPE_SHAPE_MESH) {
		proto_wire_kv(e, n, "frames");
		proto_wire_pack_bin_f32(e, "frames", s->frames,
				  (uint64_t)s->frame_count * s->vertex_count * 3u);
		proto_wire_kv(e, n, "frame_start");
		proto_wire_pack_f32(e, s->frame_start);
	}
}

void proto_wire_pack_objects(proto_wire_enc *e, const proto_object *objects, uint32_t count)
{
	proto_wire_pack_array(e, count);
	for (uint32_t i = 0; i < count; i++) {
		const proto_object *o = &objects[i];
		uint32_t on = 0;
		size_t at = proto_wire_map_begin(e);
		proto_wire_kv(e, &on, "name");
		proto_wire_pack_str(e, "objects.name", o->name, PROTO_MAX_NAME);
		proto_wire_kv(e, &on, "first_vertex");
		proto_wire_pack_u64(e, o->range.first_vertex);
		proto_wire_kv(e, &on, "vertex_count");
		proto_wire_pack_u64(e, o->range.vertex_count);
		proto_wire_kv(e, &on, "layer");
		proto_wire_pack_u64(e, o->range.layer);
		proto_wire_kv(e, &on, "collides_with");
		proto_wire_pack_u64(e, o->range.collides_with);
		proto_wire_map_end(e, at, on);
	}
}

static void encode_body(proto_wire_enc *e, uint32_t *n, const proto_request *r)
{
	switch (r->op) {
	case PROTO_OP_HELLO:
		if (r->u.hello.client != NULL) {
			proto_wire_kv(e, n, "client_name");
			proto_wire_pack_str(e, "client_name", r->u.hello.client, PROTO_MAX_STRING);
		}
		break;
	case PROTO_OP_SESSION_CREATE: {
		const proto_create_req *c = &r->u.create;
		encode_mesh(e, n, &c->mesh);
		if (c->inv_mass != NULL) {
			proto_wire_kv(e, n, "inv_mass");
			proto_wire_pack_bin_f32(e, "inv_mass", c->inv_mass, c->mesh.vertex_count);
		}
		if (c->pins != NULL || c->pin_count > 0) {
			proto_wire_kv(e, n, "pins");
			proto_wire_pack_bin_u32(e, "pins", c->pins, c->pin_count);
		}
		if (c->pin_stiffness != NULL && c->pin_count > 0) {
			proto_wire_kv(e, n, "pin_stiffness");
			proto_wire_pack_bin_f32(e, "pin_stiffness", c->pin_stiffness, c->pin_count);
		}
		if (c->uvs != NULL) {
			proto_wire_kv(e, n, "uvs");
			proto_wire_pack_bin_f32(e, "uvs", c->uvs, (uint64_t)c->mesh.vertex_count * 2u);
		}
		if (c->rest_positions != NULL) {
			proto_wire_kv(e, n, "rest_positions");
			proto_wire_pack_bin_f32(e, "rest_positions", c->rest_positions,
						(uint64_t)c->mesh.vertex_count * 3u);
		}
		if (c->rest_scale != NULL) {
			proto_wire_kv(e, n, "rest_scale");
			proto_wire_pack_bin_f32(e, "rest_scale", c->rest_scale, c->mesh.vertex_count);
		}
		const struct {
			const char *key;
			const float *v;
			uint32_t tuple;
		} vf[3] = {{"stiffness_scale", c->stiffness_scale, 3},
			   {"vertex_thickness", c->vertex_thickness, 1},
			   {"vertex_friction", c->vertex_friction, 1}};
		for (int k = 0; k < 3; k++)
			if (vf[k].v != NULL) {
				proto_wire_kv(e, n, vf[k].key);
				proto_wire_pack_bin_f32(e, vf[k].key, vf[k].v,
							(uint64_t)c->mesh.vertex_count * vf[k].tuple);
			}
		if (c->object_count > 0) {
			proto_wire_kv(e, n, "objects");
			proto_wire_pack_objects(e, c->objects, c->object_count);
		}
		if (c->stitch_count > 0) {
			proto_wire_kv(e, n, "stitch_v");
			proto_wire_pack_bin_u32(e, "stitch_v", c->stitch_v, (uint64_t)c->stitch_count * 3u);
			proto_wire_kv(e, n, "stitch_t");
			proto_wire_pack_bin_f32(e, "stitch_t", c->stitch_t, c->stitch_count);
		}
		if (c->has_stitch_k) {
			proto_wire_kv(e, n, "stitch_k");
			proto_wire_pack_f32(e, c->stitch_k);
		}
		if (c->has_sew_speed) {
			proto_wire_kv(e, n, "sew_speed");
			proto_wire_pack_f32(e, c->sew_speed);
		}
		if (c->params.mask != 0) {
			proto_wire_kv(e, n, "params");
			proto_wire_pack_params(e, &c->params);
		}
		if (c->name != NULL) {
			proto_wire_kv(e, n, "name");
			proto_wire_pack_str(e, "name", c->name, PROTO_MAX_NAME);
		}
		break;
	}
	case PROTO_OP_SESSION_UPDATE:
		proto_wire_kv(e, n, "params");
		proto_wire_pack_params(e, &r->u.update.params);
		break;
	case PROTO_OP_SESSION_RUN:
		proto_wire_kv(e, n, "frames");
		proto_wire_pack_u64(e, r->u.run.frames);
		break;
	case PROTO_OP_FRAMES_GET:
		proto_wire_kv(e, n, "first");
		proto_wire_pack_u64(e, r->u.frames_get.first);
		proto_wire_kv(e, n, "count");
		proto_wire_pack_u64(e, r->u.frames_get.count);
		if (r->u.frames_get.wait_ms != 0) {
			proto_wire_kv(e, n, "wait_ms");
			proto_wire_pack_u64(e, r->u.frames_get.wait_ms);
		}
		if (r->u.frames_get.mesh) {
			proto_wire_kv(e, n, "mesh");
			proto_wire_pack_bool(e, true);
		}
		break;
	case PROTO_OP_SESSION_COLLIDERS:
		proto_wire_kv(e, n, "frame");
		proto_wire_pack_u64(e, r->u.colliders.frame);
		if (r->u.colliders.mesh) {
			proto_wire_kv(e, n, "mesh");
			proto_wire_pack_bool(e, true);
		}
		break;
	case PROTO_OP_COLLIDER_ADD:
		encode_collider_add(e, n, &r->u.collider_add);
		break;
	case PROTO_OP_COLLIDER_TRANSFORM:
		proto_wire_kv(e, n, "index");
		proto_wire_pack_u64(e, r->u.collider_transform.index);
		proto_wire_kv(e, n, "keyframes");
		proto_wire_pack_keyframes(e, "keyframes", r->u.collider_transform.keyframes,
				    r->u.collider_transform.keyframe_count);
		break;
	case PROTO_OP_COLLIDER_UPDATE:
		proto_wire_kv(e, n, "index");
		proto_wire_pack_u64(e, r->u.collider_update.index);
		proto_wire_kv(e, n, "vertices");
		proto_wire_pack_bin_f32(e, "vertices", r->u.collider_update.vertices,
				  (uint64_t)r->u.collider_update.vertex_count * 3u);
		break;
	case PROTO_OP_COLLIDER_REMOVE:
		proto_wire_kv(e, n, "index");
		proto_wire_pack_u64(e, r->u.collider_remove.index);
		break;
	case PROTO_OP_COLLIDER_FRAMES:
		proto_wire_kv(e, n, "index");
		proto_wire_pack_u64(e, r->u.collider_frames.index);
		proto_wire_kv(e, n, "frames");
		proto_wire_pack_bin_f32(e, "frames", r->u.collider_frames.frames,
				  (uint64_t)r->u.collider_frames.point_count * 3u);
		break;
	case PROTO_OP_PINS_ATTACH:
		proto_wire_kv(e, n, "vertices");
		proto_wire_pack_bin_u32(e, "vertices", r->u.pins_attach.vertices, r->u.pins_attach.count);
		proto_wire_kv(e, n, "collider");
		proto_wire_pack_u64(e, r->u.pins_attach.collider);
		break;
	case PROTO_OP_PREFLIGHT:
		encode_mesh(e, n, &r->u.preflight.mesh);
		proto_wire_kv(e, n, "max_pairs");
		proto_wire_pack_u64(e, r->u.preflight.max_pairs);
		break;
	case PROTO_OP_SESSION_LIST:
		if (r->u.list.all) {
			proto_wire_kv(e, n, "all");
			proto_wire_pack_bool(e, true);
		}
		break;
	default:
		break;
	}
}

drape_err proto_request_encode(const proto_request *req, proto_buf *out, drape_error *err)
{
	const char *name = proto_op_name(req->op);
	if (name == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "request: op: unknown op %d", (int)req->op);
	if (proto_op_needs_session(req->op) && !req->has_session)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: session: required", name);

	proto_wire_enc e;
	uint32_t n = 0;
	proto_wire_enc_init(&e, name, err);
	size_t at = proto_wire_map_begin(&e);
	proto_wire_kv(&e, &n, "v");
	proto_wire_pack_u64(&e, PROTO_VERSION);
	proto_wire_kv(&e, &n, "id");
	proto_wire_pack_u64(&e, req->id);
	if (req->has_client) {
		proto_wire_kv(&e, &n, "client");
		proto_wire_pack_u64(&e, req->client);
	}
	proto_wire_kv(&e, &n, "op");
	proto_wire_pack_str(&e, "op", name, 64);
	if (req->auth != NULL) {
		proto_wire_kv(&e, &n, "auth");
		proto_wire_pack_bytes(&e, "auth", req->auth, req->auth_len, PROTO_MAX_AUTH);
	}
	if (req->has_token) {
		proto_wire_kv(&e, &n, "token");
		proto_wire_pack_bytes(&e, "token", req->token, PROTO_TOKEN_SIZE, PROTO_TOKEN_SIZE);
	}
	if (req->has_session) {
		proto_wire_kv(&e, &n, "session");
		proto_wire_pack_u64(&e, req->session);
	}
	encode_body(&e, &n, req);
	proto_wire_map_end(&e, at, n);
	return proto_wire_enc_finish(&e, out);
}
