/*
 * Value types shared by several messages: parameters, per-frame stats,
 * topology counts, meshes, frames, keyframes, errors and states. Each has one
 * reader and one writer, driven by a field table where the fields are many,
 * so the wire names cannot differ between the two directions.
 */
#include "proto/wire.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- Parameters ----------------------------------------------------------- */

enum { F_F32, F_I32, F_VEC3 };

typedef struct param_field {
	const char *name;
	uint32_t bit;
	int kind;
	size_t off;
} param_field;

#define PF(name, bit, kind) { #name, bit, kind, offsetof(drape_sim_params, name) }
static const param_field param_fields[] = {
	PF(fps, PROTO_PARAM_FPS, F_F32),
	PF(substeps, PROTO_PARAM_SUBSTEPS, F_I32),
	PF(iterations, PROTO_PARAM_ITERATIONS, F_I32),
	PF(gravity, PROTO_PARAM_GRAVITY, F_VEC3),
	PF(damping, PROTO_PARAM_DAMPING, F_F32),
	PF(wind, PROTO_PARAM_WIND, F_VEC3),
	PF(drag, PROTO_PARAM_DRAG, F_F32),
	PF(lift, PROTO_PARAM_LIFT, F_F32),
	PF(air_density, PROTO_PARAM_AIR_DENSITY, F_F32),
	PF(density, PROTO_PARAM_DENSITY, F_F32),
	PF(stretch, PROTO_PARAM_STRETCH, F_F32),
	PF(shear, PROTO_PARAM_SHEAR, F_F32),
	PF(bend, PROTO_PARAM_BEND, F_F32),
	PF(thickness, PROTO_PARAM_THICKNESS, F_F32),
	PF(long_range, PROTO_PARAM_LONG_RANGE, F_I32),
	PF(self_collision, PROTO_PARAM_SELF_COLLISION, F_I32),
	PF(self_thickness, PROTO_PARAM_SELF_THICKNESS, F_F32),
	PF(self_friction, PROTO_PARAM_SELF_FRICTION, F_F32),
	PF(model, PROTO_PARAM_MODEL, F_I32),
	PF(stretch_k, PROTO_PARAM_STRETCH_K, F_F32),
	PF(stretch_k_weft, PROTO_PARAM_STRETCH_K_WEFT, F_F32),
	PF(shear_k, PROTO_PARAM_SHEAR_K, F_F32),
	PF(bend_k, PROTO_PARAM_BEND_K, F_F32),
	PF(compress_k, PROTO_PARAM_COMPRESS_K, F_F32),
	PF(damping_rate, PROTO_PARAM_DAMPING_RATE, F_F32),
	PF(tear_strain, PROTO_PARAM_TEAR_STRAIN, F_F32),
	PF(schedule, PROTO_PARAM_SCHEDULE, F_I32),
};
#undef PF

drape_err proto_wire_read_params(proto_wire_dec *d, const msgpack_object *o, const char *path,
			   proto_params *out)
{
	drape_err rc = proto_wire_map(d, o, path);
	if (rc != DRAPE_OK)
		return rc;
	proto_params p;
	memset(&p, 0, sizeof p);
	for (size_t i = 0; i < sizeof param_fields / sizeof param_fields[0]; i++) {
		const param_field *f = &param_fields[i];
		const msgpack_object *v = proto_wire_get(o, f->name);
		if (v == NULL)
			continue;
		char sub[96];
		snprintf(sub, sizeof sub, "%s.%s", path, f->name);
		void *dst = (char *)&p.values + f->off;
		switch (f->kind) {
		case F_F32:
			rc = proto_wire_f32(d, v, sub, dst);
			break;
		case F_I32:
			rc = proto_wire_i32(d, v, sub, dst);
			break;
		default:
			rc = proto_wire_f32_array(d, v, sub, dst, 3);
			break;
		}
		if (rc != DRAPE_OK)
			return rc;
		p.mask |= f->bit;
	}
	*out = p;
	return DRAPE_OK;
}

void proto_wire_pack_params(proto_wire_enc *e, const proto_params *p)
{
	uint32_t n = 0;
	size_t at = proto_wire_map_begin(e);
	for (size_t i = 0; i < sizeof param_fields / sizeof param_fields[0]; i++) {
		const param_field *f = &param_fields[i];
		if (!(p->mask & f->bit))
			continue;
		const void *src = (const char *)&p->values + f->off;
		proto_wire_kv(e, &n, f->name);
		switch (f->kind) {
		case F_F32: {
			float v;
			memcpy(&v, src, sizeof v);
			proto_wire_pack_f32(e, v);
			break;
		}
		case F_I32: {
			int32_t v;
			memcpy(&v, src, sizeof v);
			proto_wire_pack_i64(e, v);
			break;
		}
		default: {
			float v[3];
			memcpy(v, src, sizeof v);
			proto_wire_pack_f32_array(e, v, 3);
			break;
		}
		}
	}
	proto_wire_map_end(e, at, n);
}

/* ---- Stats and topology ---------------------------------------------------- */

/* Stats are informational and describe frames that may have gone wrong, so
 * their floats are taken as sent, NaN included; every field is optional and
 * absent means 0, which lets later versions add figures freely. */
enum { S_U32, S_U64, S_F32, S_F64 };

typedef struct stat_field {
	const char *name;
	int kind;
	size_t off;
} stat_field;

#define SF(name, kind) { #name, kind, offsetof(drape_sim_stats, name) }
static const stat_field stat_fields[] = {
	SF(frame, S_U32),       SF(solve_ms, S_F64),    SF(collide_ms, S_F64),
	SF(self_ms, S_F64),     SF(max_strain, S_F32),  SF(mean_strain, S_F32),
	SF(nonfinite, S_U32),   SF(contacts, S_U32),    SF(self_pairs, S_U32),
	SF(projections, S_U64),
};
#undef SF

drape_err proto_wire_read_stats(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  drape_sim_stats *out)
{
	drape_err rc = proto_wire_map(d, o, path);
	if (rc != DRAPE_OK)
		return rc;
	drape_sim_stats s;
	memset(&s, 0, sizeof s);
	for (size_t i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
		const stat_field *f = &stat_fields[i];
		const msgpack_object *v = proto_wire_get(o, f->name);
		if (v == NULL)
			continue;
		char sub[96];
		snprintf(sub, sizeof sub, "%s.%s", path, f->name);
		void *dst = (char *)&s + f->off;
		switch (f->kind) {
		case S_U32:
			rc = proto_wire_u32(d, v, sub, dst);
			break;
		case S_U64:
			rc = proto_wire_u64(d, v, sub, dst);
			break;
		case S_F32: {
			double x = 0;
			rc = proto_wire_f64(d, v, sub, &x);
			if (rc == DRAPE_OK) {
				float fx = (float)x;
				memcpy(dst, &fx, sizeof fx);
			}
			break;
		}
		default:
			rc = proto_wire_f64(d, v, sub, dst);
			break;
		}
		if (rc != DRAPE_OK)
			return rc;
	}
	*out = s;
	return DRAPE_OK;
}

void proto_wire_pack_stats(proto_wire_enc *e, const drape_sim_stats *s)
{
	uint32_t n = 0;
	size_t at = proto_wire_map_begin(e);
	for (size_t i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
		const stat_field *f = &stat_fields[i];
		const void *src = (const char *)s + f->off;
		proto_wire_kv(e, &n, f->name);
		switch (f->kind) {
		case S_U32: {
			uint32_t v = 0;
			memcpy(&v, src, sizeof v);
			proto_wire_pack_u64(e, v);
			break;
		}
		case S_U64: {
			uint64_t v = 0;
			memcpy(&v, src, sizeof v);
			proto_wire_pack_u64(e, v);
			break;
		}
		case S_F32: {
			float v;
			memcpy(&v, src, sizeof v);
			proto_wire_pack_f32(e, v);
			break;
		}
		default: {
			double v = 0;
			memcpy(&v, src, sizeof v);
			proto_wire_pack_f64(e, v);
			break;
		}
		}
	}
	proto_wire_map_end(e, at, n);
}

#define TF(name) { #name, offsetof(drape_sim_topology, name) }
static const struct {
	const char *name;
	size_t off;
} topo_fields[] = {
	TF(vertices),       TF(triangles),          TF(edges),
	TF(bends),          TF(boundary_edges),     TF(nonmanifold_edges),
	TF(zero_area_triangles), TF(degenerate_edges), TF(unreferenced_vertices),
	TF(pinned_vertices), TF(long_range),        TF(colours),
	TF(stitches),       TF(welds),
};
#undef TF

drape_err proto_wire_read_topology(proto_wire_dec *d, const msgpack_object *o, const char *path,
			     drape_sim_topology *out)
{
	drape_err rc = proto_wire_map(d, o, path);
	if (rc != DRAPE_OK)
		return rc;
	drape_sim_topology t;
	memset(&t, 0, sizeof t);
	for (size_t i = 0; i < sizeof topo_fields / sizeof topo_fields[0]; i++) {
		const msgpack_object *v = proto_wire_get(o, topo_fields[i].name);
		if (v == NULL)
			continue;
		char sub[96];
		snprintf(sub, sizeof sub, "%s.%s", path, topo_fields[i].name);
		rc = proto_wire_u32(d, v, sub, (uint32_t *)((char *)&t + topo_fields[i].off));
		if (rc != DRAPE_OK)
			return rc;
	}
	*out = t;
	return DRAPE_OK;
}

void proto_wire_pack_topology(proto_wire_enc *e, const drape_sim_topology *t)
{
	uint32_t n = 0;
	size_t at = proto_wire_map_begin(e);
	for (size_t i = 0; i < sizeof topo_fields / sizeof topo_fields[0]; i++) {
		uint32_t v = 0;
		memcpy(&v, (const char *)t + topo_fields[i].off, sizeof v);
		proto_wire_kv(e, &n, topo_fields[i].name);
		proto_wire_pack_u64(e, v);
	}
	proto_wire_map_end(e, at, n);
}

/* ---- Meshes, frames, keyframes --------------------------------------------- */

drape_err proto_wire_read_mesh(proto_wire_dec *d, const msgpack_object *map, proto_mesh *out)
{
	const msgpack_object *o;
	proto_mesh m;
	drape_err rc = proto_wire_need(d, map, "positions", "positions", &o);
	if (rc == DRAPE_OK)
		rc = proto_wire_bin_f32(d, o, "positions", 3, UINT32_MAX, &m.positions, &m.vertex_count);
	if (rc != DRAPE_OK)
		return rc;
	if (m.vertex_count == 0)
		return proto_wire_fail(d, DRAPE_EINVAL, "positions", "no vertices");
	rc = proto_wire_need(d, map, "triangles", "triangles", &o);
	if (rc == DRAPE_OK)
		rc = proto_wire_bin_u32(d, o, "triangles", 3, m.vertex_count, "vertex count", &m.triangles,
				  &m.triangle_count);
	if (rc != DRAPE_OK)
		return rc;
	if (m.triangle_count == 0)
		return proto_wire_fail(d, DRAPE_EINVAL, "triangles", "no triangles");
	*out = m;
	return DRAPE_OK;
}

drape_err proto_wire_read_frame(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  proto_frame *out)
{
	drape_err rc = proto_wire_map(d, o, path);
	if (rc != DRAPE_OK)
		return rc;
	proto_frame f;
	memset(&f, 0, sizeof f);
	char sub[96];
	const msgpack_object *v;

	snprintf(sub, sizeof sub, "%s.index", path);
	rc = proto_wire_need(d, o, "index", sub, &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_u32(d, v, sub, &f.index);
	if (rc != DRAPE_OK)
		return rc;
	if (f.index == 0)
		return proto_wire_fail(d, DRAPE_EINVAL, sub, "frame indices start at 1");

	snprintf(sub, sizeof sub, "%s.positions", path);
	rc = proto_wire_need(d, o, "positions", sub, &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_bin_f32(d, v, sub, 3, UINT32_MAX, &f.positions, &f.vertex_count);
	if (rc != DRAPE_OK)
		return rc;

	v = proto_wire_get(o, "stats");
	if (v != NULL) {
		snprintf(sub, sizeof sub, "%s.stats", path);
		rc = proto_wire_read_stats(d, v, sub, &f.stats);
		if (rc != DRAPE_OK)
			return rc;
	}
	/* A torn mesh (PROTOCOL.md, "Torn meshes"): its generation, and its
	 * triangles when they changed, each index below this frame's
	 * vertex count. */
	rc = proto_wire_field_u32(d, o, "topology", false, &f.topology, NULL);
	if (rc != DRAPE_OK)
		return rc;
	v = proto_wire_get(o, "triangles");
	if (v != NULL) {
		snprintf(sub, sizeof sub, "%s.triangles", path);
		rc = proto_wire_bin_u32(d, v, sub, 3, f.vertex_count, "the frame's vertex count",
					&f.triangles, &f.triangle_count);
		if (rc != DRAPE_OK)
			return rc;
		if (f.triangle_count == 0)
			return proto_wire_fail(d, DRAPE_EINVAL, sub, "no triangles");
	}
	*out = f;
	return DRAPE_OK;
}

void proto_wire_pack_frame(proto_wire_enc *e, const char *path, const proto_frame *f)
{
	uint32_t n = 0;
	size_t at = proto_wire_map_begin(e);
	proto_wire_kv(e, &n, "index");
	proto_wire_pack_u64(e, f->index);
	proto_wire_kv(e, &n, "positions");
	proto_wire_pack_bin_f32(e, path, f->positions, (uint64_t)f->vertex_count * 3u);
	proto_wire_kv(e, &n, "stats");
	proto_wire_pack_stats(e, &f->stats);
	if (f->topology != 0) {
		proto_wire_kv(e, &n, "topology");
		proto_wire_pack_u64(e, f->topology);
	}
	if (f->triangles != NULL) {
		proto_wire_kv(e, &n, "triangles");
		proto_wire_pack_bin_u32(e, "triangles", f->triangles, (uint64_t)f->triangle_count * 3u);
	}
	proto_wire_map_end(e, at, n);
}

drape_err proto_wire_read_keyframes(proto_wire_dec *d, const msgpack_object *o, const char *path,
			      const drape_keyframe **out, uint32_t *count)
{
	const float *f = NULL;
	uint32_t n = 0;
	drape_err rc = proto_wire_bin_f32(d, o, path, 7, UINT32_MAX, &f, &n);
	if (rc != DRAPE_OK)
		return rc;
	if (n > DRAPE_MAX_KEYFRAMES)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "%u keyframes exceed the limit of %d",
				 (unsigned)n, DRAPE_MAX_KEYFRAMES);
	drape_keyframe *k = NULL;
	if (n > 0) {
		k = proto_mem_alloc(d->mem, (size_t)n * sizeof *k);
		if (k == NULL)
			return proto_wire_fail(d, DRAPE_ENOMEM, path, "out of memory");
		for (uint32_t i = 0; i < n; i++) {
			const float *r = f + 7u * (size_t)i;
			k[i].frame = r[0];
			memcpy(k[i].translate, r + 1, sizeof k[i].translate);
			memcpy(k[i].rotate, r + 4, sizeof k[i].rotate);
		}
	}
	*out = k;
	*count = n;
	return DRAPE_OK;
}

void proto_wire_pack_keyframes(proto_wire_enc *e, const char *path, const drape_keyframe *k, uint32_t n)
{
	if (k == NULL && n > 0) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "NULL with %u keyframes", (unsigned)n);
		return;
	}
	if (n > DRAPE_MAX_KEYFRAMES) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "%u keyframes exceed the limit of %d",
			      (unsigned)n, DRAPE_MAX_KEYFRAMES);
		return;
	}
	/* Packed as 7-tuples through the same little-endian bin writer as
	 * every other bulk array, one small chunk at a time so a keyframe
	 * struct's layout never leaks onto the wire. */
	msgpack_pack_bin(&e->pk, (size_t)n * 28u);
	for (uint32_t i = 0; i < n; i++) {
		const float r[7] = { k[i].frame,     k[i].translate[0], k[i].translate[1],
				     k[i].translate[2], k[i].rotate[0], k[i].rotate[1],
				     k[i].rotate[2] };
		unsigned char b[28];
		for (int j = 0; j < 7; j++) {
			uint32_t x = 0;
			memcpy(&x, &r[j], 4);
			b[4 * j] = (unsigned char)x;
			b[4 * j + 1] = (unsigned char)(x >> 8);
			b[4 * j + 2] = (unsigned char)(x >> 16);
			b[4 * j + 3] = (unsigned char)(x >> 24);
		}
		msgpack_pack_bin_body(&e->pk, b, sizeof b);
	}
}

/* ---- Errors and states ------------------------------------------------------ */

drape_err proto_wire_read_error(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  drape_error *out)
{
	drape_err rc = proto_wire_map(d, o, path);
	if (rc != DRAPE_OK)
		return rc;
	char sub[96];
	const msgpack_object *v;
	const char *p = NULL;
	size_t n = 0;

	snprintf(sub, sizeof sub, "%s.code", path);
	rc = proto_wire_need(d, o, "code", sub, &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_str_ref(d, v, sub, &p, &n);
	if (rc != DRAPE_OK)
		return rc;
	/* An unknown name (a newer server's code) maps to EINTERNAL, and the
	 * message still says what happened. */
	char name[32];
	drape_err code = DRAPE_EINTERNAL;
	if (n < sizeof name) {
		memcpy(name, p, n);
		name[n] = '\0';
		code = drape_err_from_name(name);
	}
	if (code == DRAPE_OK)
		return proto_wire_fail(d, DRAPE_EPROTO, sub, "an error reply cannot carry OK");

	drape_error er;
	er.code = code;
	er.message[0] = '\0';
	v = proto_wire_get(o, "message");
	if (v != NULL) {
		snprintf(sub, sizeof sub, "%s.message", path);
		rc = proto_wire_str_ref(d, v, sub, &p, &n);
		if (rc != DRAPE_OK)
			return rc;
		if (n >= sizeof er.message)
			n = sizeof er.message - 1;
		memcpy(er.message, p, n);
		er.message[n] = '\0';
		/* A NUL inside would silently cut the text; keep what precedes it. */
	}
	*out = er;
	return DRAPE_OK;
}

void proto_wire_pack_error(proto_wire_enc *e, const drape_error *er)
{
	uint32_t n = 0;
	size_t at = proto_wire_map_begin(e);
	proto_wire_kv(e, &n, "code");
	proto_wire_pack_str(e, "error.code", drape_err_name(er->code), 32);
	proto_wire_kv(e, &n, "message");
	/* msgpack str must be UTF-8, and messages may quote bytes a peer sent
	 * (an unknown op name) or have been cut mid-character by the fixed
	 * buffer: ill-formed bytes go out as \xNN, within the same limit. */
	char text[sizeof er->message];
	const size_t len = proto_utf8_escape(er->message, strnlen(er->message, sizeof er->message), text,
					     sizeof text);
	msgpack_pack_str(&e->pk, len);
	msgpack_pack_str_body(&e->pk, text, len);
	proto_wire_map_end(e, at, n);
}

drape_err proto_wire_read_state(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  proto_state *out)
{
	const char *p = NULL;
	size_t n = 0;
	drape_err rc = proto_wire_str_ref(d, o, path, &p, &n);
	if (rc != DRAPE_OK)
		return rc;
	if (!proto_state_from_name(p, n, out))
		return proto_wire_fail(d, DRAPE_EINVAL, path, "unknown state \"%.*s\"",
				 (int)(n > 32 ? 32 : n), p);
	return DRAPE_OK;
}

void proto_wire_pack_state(proto_wire_enc *e, const char *path, proto_state s)
{
	const char *name = proto_state_name(s);
	if (name == NULL) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "unknown state %d", (int)s);
		return;
	}
	proto_wire_pack_str(e, path, name, 32);
}
