/*
 * The session.colliders reply (proto.h, proto_colliders_rep): every
 * collider of a session placed at one frame, for viewers (the browser view)
 * that hold only the tokens. Its own file beside reply.c, which calls the
 * two functions here, because a collider's wire form is one concept: shape
 * fields as collider.add sends them, its rigid placement, and for meshes
 * the triangles once and a deforming mesh's pose per frame.
 */
#include "proto/colliders.h"

#include <stdio.h>
#include <string.h>

static const char *const shape_names[] = {
	[DRAPE_SHAPE_PLANE] = "plane", [DRAPE_SHAPE_SPHERE] = "sphere", [DRAPE_SHAPE_BOX] = "box",
	[DRAPE_SHAPE_CAPSULE] = "capsule", [DRAPE_SHAPE_MESH] = "mesh",
};

static void kv_vec3(proto_wire_enc *e, uint32_t *n, const char *key, const float v[3])
{
	proto_wire_kv(e, n, key);
	proto_wire_pack_f32_array(e, v, 3);
}

static void kv_f32(proto_wire_enc *e, uint32_t *n, const char *key, float v)
{
	proto_wire_kv(e, n, key);
	proto_wire_pack_f32(e, v);
}

static void kv_u32(proto_wire_enc *e, uint32_t *n, const char *key, uint32_t v)
{
	proto_wire_kv(e, n, key);
	proto_wire_pack_u64(e, v);
}

static void encode_one(proto_wire_enc *e, const proto_collider_view *c)
{
	uint32_t n = 0;
	size_t at = proto_wire_map_begin(e);
	if (c->shape < DRAPE_SHAPE_PLANE || c->shape > DRAPE_SHAPE_MESH) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, "colliders.shape", "unknown shape %d", (int)c->shape);
		return;
	}
	kv_u32(e, &n, "index", c->index);
	proto_wire_kv(e, &n, "shape");
	proto_wire_pack_str(e, "colliders.shape", shape_names[c->shape], 16);
	switch (c->shape) {
	case DRAPE_SHAPE_PLANE:
		kv_vec3(e, &n, "point", c->point);
		kv_vec3(e, &n, "normal", c->normal);
		break;
	case DRAPE_SHAPE_SPHERE:
		kv_vec3(e, &n, "center", c->center);
		kv_f32(e, &n, "radius", c->radius);
		break;
	case DRAPE_SHAPE_BOX:
		kv_vec3(e, &n, "center", c->center);
		kv_vec3(e, &n, "half_extents", c->half_extents);
		break;
	case DRAPE_SHAPE_CAPSULE:
		kv_vec3(e, &n, "a", c->a);
		kv_vec3(e, &n, "b", c->b);
		kv_f32(e, &n, "radius", c->radius);
		break;
	case DRAPE_SHAPE_MESH:
		kv_u32(e, &n, "vertex_count", c->vertex_count);
		kv_u32(e, &n, "triangle_count", c->triangle_count);
		if (c->vertices != NULL) {
			proto_wire_kv(e, &n, "vertices");
			proto_wire_pack_bin_f32(e, "colliders.vertices", c->vertices, 3u * (uint64_t)c->vertex_count);
		}
		if (c->triangles != NULL) {
			proto_wire_kv(e, &n, "triangles");
			proto_wire_pack_bin_u32(e, "colliders.triangles", c->triangles,
						3u * (uint64_t)c->triangle_count);
		}
		if (c->frame_count > 0) {
			kv_u32(e, &n, "frames", c->frame_count);
			kv_f32(e, &n, "frame_start", c->frame_start);
			proto_wire_kv(e, &n, "positions");
			proto_wire_pack_bin_f32(e, "colliders.positions", c->positions,
						3u * (uint64_t)c->vertex_count);
		}
		break;
	}
	proto_wire_kv(e, &n, "rotation");
	proto_wire_pack_f32_array(e, c->rotation, 9);
	kv_vec3(e, &n, "translate", c->translate);
	proto_wire_map_end(e, at, n);
}

void proto_colliders_encode(proto_wire_enc *e, uint32_t *n, const proto_colliders_rep *r)
{
	if (r->colliders == NULL && r->count > 0) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, "colliders", "NULL with %u colliders", (unsigned)r->count);
		return;
	}
	kv_u32(e, n, "session", r->session);
	kv_u32(e, n, "frame", r->frame);
	proto_wire_kv(e, n, "colliders");
	proto_wire_pack_array(e, r->count);
	for (uint32_t i = 0; i < r->count && e->rc == DRAPE_OK; i++)
		encode_one(e, &r->colliders[i]);
}

static drape_err decode_shape(proto_wire_dec *d, const msgpack_object *m, drape_shape *out)
{
	const msgpack_object *v;
	const char *name;
	size_t len;
	drape_err rc = proto_wire_need(d, m, "shape", "shape", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_str_ref(d, v, "shape", &name, &len);
	if (rc != DRAPE_OK)
		return rc;
	for (int s = DRAPE_SHAPE_PLANE; s <= DRAPE_SHAPE_MESH; s++)
		if (strlen(shape_names[s]) == len && memcmp(shape_names[s], name, len) == 0) {
			*out = (drape_shape)s;
			return DRAPE_OK;
		}
	return proto_wire_fail(d, DRAPE_EPROTO, "shape", "unknown shape \"%.*s\"", (int)(len > 40 ? 40 : len), name);
}

static drape_err decode_one(proto_wire_dec *d, const msgpack_object *m, proto_collider_view *c)
{
	const msgpack_object *v;
	uint32_t count;
	drape_err rc = proto_wire_field_u32(d, m, "index", true, &c->index, NULL);
	if (rc == DRAPE_OK)
		rc = decode_shape(d, m, &c->shape);
	if (rc != DRAPE_OK)
		return rc;
	switch (c->shape) {
	case DRAPE_SHAPE_PLANE:
		rc = proto_wire_field_vec3(d, m, "point", true, c->point, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_vec3(d, m, "normal", true, c->normal, NULL);
		break;
	case DRAPE_SHAPE_SPHERE:
		rc = proto_wire_field_vec3(d, m, "center", true, c->center, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_f32(d, m, "radius", true, &c->radius, NULL);
		break;
	case DRAPE_SHAPE_BOX:
		rc = proto_wire_field_vec3(d, m, "center", true, c->center, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_vec3(d, m, "half_extents", true, c->half_extents, NULL);
		break;
	case DRAPE_SHAPE_CAPSULE:
		rc = proto_wire_field_vec3(d, m, "a", true, c->a, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_vec3(d, m, "b", true, c->b, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_f32(d, m, "radius", true, &c->radius, NULL);
		break;
	case DRAPE_SHAPE_MESH:
		rc = proto_wire_field_u32(d, m, "vertex_count", true, &c->vertex_count, NULL);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "triangle_count", true, &c->triangle_count, NULL);
		if (rc == DRAPE_OK && (v = proto_wire_get(m, "vertices")) != NULL)
			rc = proto_wire_bin_f32(d, v, "vertices", 3, c->vertex_count, &c->vertices, &count);
		if (rc == DRAPE_OK && (v = proto_wire_get(m, "triangles")) != NULL) {
			rc = proto_wire_bin_u32(d, v, "triangles", 3, c->vertex_count, "vertex_count", &c->triangles,
						&count);
			if (rc == DRAPE_OK && count != c->triangle_count)
				rc = proto_wire_fail(d, DRAPE_EPROTO, "triangles", "%u triangles, triangle_count is %u",
						     (unsigned)count, (unsigned)c->triangle_count);
		}
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(d, m, "frames", false, &c->frame_count, NULL);
		if (rc == DRAPE_OK && c->frame_count > 0) {
			rc = proto_wire_field_f32(d, m, "frame_start", true, &c->frame_start, NULL);
			if (rc == DRAPE_OK)
				rc = proto_wire_need(d, m, "positions", "positions", &v);
			if (rc == DRAPE_OK)
				rc = proto_wire_bin_f32(d, v, "positions", 3, c->vertex_count, &c->positions, &count);
		}
		break;
	}
	if (rc == DRAPE_OK && (rc = proto_wire_need(d, m, "rotation", "rotation", &v)) == DRAPE_OK)
		rc = proto_wire_f32_array(d, v, "rotation", c->rotation, 9);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_vec3(d, m, "translate", true, c->translate, NULL);
	return rc;
}

drape_err proto_colliders_decode(proto_wire_dec *d, const msgpack_object *m, proto_colliders_rep *r)
{
	const msgpack_object *v;
	drape_err rc = proto_wire_field_u32(d, m, "session", true, &r->session, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u32(d, m, "frame", true, &r->frame, NULL);
	if (rc == DRAPE_OK)
		rc = proto_wire_need(d, m, "colliders", "colliders", &v);
	if (rc != DRAPE_OK)
		return rc;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return proto_wire_fail(d, DRAPE_EPROTO, "colliders", "expected an array of collider maps");
	const uint32_t n = v->via.array.size;
	proto_collider_view *c = proto_mem_alloc(d->mem, (size_t)(n ? n : 1) * sizeof *c);
	if (c == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, "colliders", "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		/* Fields are named relative to the entry, so a message reads
		 * "session.colliders: colliders[2]: radius: ...". */
		char sub[32], what[160];
		snprintf(sub, sizeof sub, "colliders[%u]", (unsigned)i);
		rc = proto_wire_map(d, &v->via.array.ptr[i], sub);
		if (rc != DRAPE_OK)
			return rc;
		const char *saved = d->what;
		snprintf(what, sizeof what, "%s: %s", saved, sub);
		d->what = what;
		rc = decode_one(d, &v->via.array.ptr[i], &c[i]);
		d->what = saved;
		if (rc != DRAPE_OK)
			return rc;
	}
	r->colliders = c;
	r->count = n;
	return DRAPE_OK;
}
