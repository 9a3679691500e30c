/*
 * Collider ops (collider.add/transform/update/remove, pins.attach) and
 * preflight. The checks that need only the request and the session's sizes
 * run on the loop (srv_*_admit); the solver calls run on a worker as jobs
 * (jobs.c), because building a mesh collider's distance field or checking a
 * big mesh for intersections can take seconds and must not stall other
 * clients.
 */
#include <stdlib.h>
#include <string.h>

#include "server/budget.h"
#include "server/fieldcache.h"
#include "server/fielddisk.h"
#include "server/log.h"
#include "server/server.h"

/* Checks `total` animation frames of `vertices` vertices against the
 * configured limits, before anything is allocated for them. */
static drape_err srv_anim_limits(const srv_config *cfg, const char *op, uint64_t total, uint32_t vertices,
				 drape_error *err)
{
	if (cfg->max_anim_frames != 0 && total > cfg->max_anim_frames)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"%s: frames: %llu animation frames exceed the limit max_anim_frames %llu", op,
					(unsigned long long)total, (unsigned long long)cfg->max_anim_frames);
	const uint64_t bytes = total * vertices * 12u;
	if (cfg->max_anim_bytes != 0 && bytes > cfg->max_anim_bytes)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"%s: frames: %llu frames of %u vertices are %llu bytes, over the limit "
					"max_anim_bytes %llu",
					op, (unsigned long long)total, (unsigned)vertices, (unsigned long long)bytes,
					(unsigned long long)cfg->max_anim_bytes);
	return DRAPE_OK;
}

drape_err srv_collider_admit(srv_server *srv, const srv_session *s, const proto_request *req, drape_error *err)
{
	if (req->op == PROTO_OP_COLLIDER_ADD) {
		const uint64_t max = srv->cfg->max_colliders;
		if (max != 0 && (uint64_t)s->colliders + 1 > max)
			return drape_error_setf(err, DRAPE_ELIMIT,
						"collider.add: session %u has %u colliders; the limit "
						"max_colliders is %llu",
						(unsigned)s->id, (unsigned)s->colliders, (unsigned long long)max);
		const drape_collider_desc *d = &req->u.collider_add.desc;
		if (d->frame_count > 0) {
			drape_err rc = srv_anim_limits(srv->cfg, "collider.add", d->frame_count, d->vertex_count, err);
			if (rc != DRAPE_OK)
				return rc;
		}
	}
	if (req->op == PROTO_OP_COLLIDER_FRAMES && req->u.collider_frames.index >= s->colliders)
		return drape_error_setf(err, DRAPE_ERANGE, "collider.frames: index: %u >= collider count %u",
					(unsigned)req->u.collider_frames.index, (unsigned)s->colliders);
	if (req->op == PROTO_OP_PINS_ATTACH) {
		const proto_pins_attach_req *p = &req->u.pins_attach;
		for (uint32_t i = 0; i < p->count; i++)
			if (p->vertices[i] >= s->vertices)
				return drape_error_setf(err, DRAPE_ERANGE,
							"pins.attach: vertices[%u]: index %u >= vertex count %u",
							(unsigned)i, (unsigned)p->vertices[i], (unsigned)s->vertices);
	}
	return DRAPE_OK;
}

/* What collider ci holds in the solver beyond the session's own estimate:
 * a deforming mesh's poses, tree and contact scratch. A static mesh's field
 * is counted in the field cache (budget.h); shapes hold a few bytes. */
static uint64_t srv_collider_bytes(const srv_collider_info *ci, uint32_t cloth_vertices)
{
	if (ci->frames == 0)
		return 0;
	return drape_sim_deform_bytes(ci->vertex_count, ci->triangle_count, ci->frames, cloth_vertices);
}

uint64_t srv_session_collider_bytes(const srv_session *s)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < s->cinfo_count; i++)
		sum += srv_collider_bytes(&s->cinfo[i], s->vertices);
	return sum;
}

drape_err srv_collider_admit_memory(srv_server *srv, const srv_session *s, const proto_request *req,
				    uint64_t *more, drape_error *err)
{
	*more = 0;
	const char *what;
	uint64_t add, frames, vertices;
	if (req->op == PROTO_OP_COLLIDER_ADD && req->u.collider_add.desc.frame_count > 0) {
		const drape_collider_desc *d = &req->u.collider_add.desc;
		what = "collider.add: frames";
		frames = d->frame_count;
		vertices = d->vertex_count;
		/* The solver's poses and tree, and the loop's copy for viewers. */
		add = drape_sim_deform_bytes(d->vertex_count, d->triangle_count, d->frame_count, s->vertices) +
		      srv_colview_bytes_for(d->vertex_count, d->triangle_count, d->keyframe_count, d->frame_count);
	} else if (req->op == PROTO_OP_COLLIDER_FRAMES) {
		const proto_collider_frames_req *f = &req->u.collider_frames;
		/* Malformed appends are refused by srv_collider_frames with their
		 * own errors; only a well-formed one has a size to admit. */
		if (f->index >= s->cinfo_count)
			return DRAPE_OK;
		const srv_collider_info *ci = &s->cinfo[f->index];
		if (ci->shape != DRAPE_SHAPE_MESH || ci->vertex_count == 0 || f->point_count % ci->vertex_count != 0)
			return DRAPE_OK;
		what = "collider.frames: frames";
		frames = (uint64_t)ci->frames + f->point_count / ci->vertex_count;
		vertices = ci->vertex_count;
		if (frames > UINT32_MAX)
			return drape_error_setf(err, DRAPE_ELIMIT, "%s: %llu frames in all", what,
						(unsigned long long)frames);
		srv_collider_info grown = *ci;
		grown.frames = (uint32_t)frames;
		add = srv_collider_bytes(&grown, s->vertices) - srv_collider_bytes(ci, s->vertices) +
		      (frames - ci->frames) * vertices * 12u; /* the viewers' copy of the poses */
	} else {
		return DRAPE_OK;
	}
	const uint64_t limit = srv->cfg->max_session_memory;
	if (limit != 0 && (uint64_t)s->memory + add > limit)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"%s: %llu poses of %llu vertices (with their triangle tree) need about %llu "
					"bytes; the session's estimated memory would be %llu, over the limit "
					"max_session_memory = %llu",
					what, (unsigned long long)frames, (unsigned long long)vertices,
					(unsigned long long)add, (unsigned long long)((uint64_t)s->memory + add),
					(unsigned long long)limit);
	drape_err rc = srv_budget_check(srv, what, add, err);
	if (rc == DRAPE_OK)
		*more = add;
	return rc;
}

static const char *srv_shape_name(drape_shape s)
{
	switch (s) {
	case DRAPE_SHAPE_PLANE:
		return "plane";
	case DRAPE_SHAPE_SPHERE:
		return "sphere";
	case DRAPE_SHAPE_BOX:
		return "box";
	case DRAPE_SHAPE_CAPSULE:
		return "capsule";
	case DRAPE_SHAPE_MESH:
		return "mesh";
	}
	return "?";
}

/* Room for one more srv_collider_info, taken before the solver changes, so
 * a failure here leaves the session as it was. */
static drape_err srv_cinfo_reserve(srv_session *s, drape_error *err)
{
	if (s->cinfo_count < s->cinfo_cap)
		return DRAPE_OK;
	uint32_t cap = s->cinfo_cap ? s->cinfo_cap * 2 : 4;
	srv_collider_info *n = realloc(s->cinfo, cap * sizeof *n);
	if (n == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "collider.add: out of memory");
	s->cinfo = n;
	s->cinfo_cap = cap;
	return DRAPE_OK;
}

/* collider.frames: the poses must be whole poses of a mesh collider and
 * stay within the limits, checked before the solver copies them. */
static drape_err srv_collider_frames(const srv_config *cfg, srv_session *s, const proto_collider_frames_req *f,
				     proto_reply *rep, drape_error *err)
{
	if (f->index >= s->cinfo_count)
		return drape_error_setf(err, DRAPE_ERANGE, "collider.frames: index: %u >= collider count %u",
					(unsigned)f->index, (unsigned)s->cinfo_count);
	srv_collider_info *ci = &s->cinfo[f->index];
	if (ci->shape != DRAPE_SHAPE_MESH)
		return drape_error_setf(err, DRAPE_EINVAL,
					"collider.frames: index: collider %u is a %s; only a mesh collider deforms",
					(unsigned)f->index, srv_shape_name(ci->shape));
	if (f->point_count % ci->vertex_count != 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"collider.frames: frames: %u points are not whole poses of the collider's %u "
					"vertices",
					(unsigned)f->point_count, (unsigned)ci->vertex_count);
	const uint32_t count = f->point_count / ci->vertex_count;
	drape_err rc = srv_anim_limits(cfg, "collider.frames", (uint64_t)ci->frames + count, ci->vertex_count, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = drape_sim_append_collider_frames(s->sim, f->index, f->frames, count, err);
	if (rc != DRAPE_OK)
		return rc;
	if (ci->frames == 0)
		srv_info("session %u: collider %u now deforms: kind %s (solved against its moving surface)",
			 (unsigned)s->id, (unsigned)f->index,
			 drape_collider_kind_name(drape_sim_collider_kind(s->sim, f->index)));
	ci->frames += count;
	rep->u.collider_frames.frame_count = ci->frames;
	srv_debug("session %u: collider %u: %u frames appended, %u in all", (unsigned)s->id, (unsigned)f->index,
		  (unsigned)count, (unsigned)ci->frames);
	return DRAPE_OK;
}

drape_err srv_collider_apply(const srv_config *cfg, srv_session *s, const proto_request *req, proto_reply *rep,
			     drape_error *err)
{
	drape_err rc;
	switch (req->op) {
	case PROTO_OP_COLLIDER_ADD: {
		drape_collider_desc d;
		drape_collider_desc_default(&d);
		proto_collider_apply(&d, &req->u.collider_add);
		d.sdf = NULL;
		d.max_voxels = cfg->max_voxels;
		if (d.frame_count > 0 &&
		    (rc = srv_anim_limits(cfg, "collider.add", d.frame_count, d.vertex_count, err)) != DRAPE_OK)
			break;
		if ((rc = srv_cinfo_reserve(s, err)) != DRAPE_OK)
			break;
		/* A mesh field is built once per mesh and settings and shared by
		 * every session that asks for the same (fieldcache.h). A
		 * deforming mesh needs none: the solver collides with its moving
		 * triangles. */
		drape_sdf *field = NULL;
		if (d.shape == DRAPE_SHAPE_MESH && d.frame_count == 0) {
			srv_field_key key = srv_field_key_of(s->sim, &d);
			field = srv_fieldcache_get(key);
			double load_ms = 0;
			if (field != NULL) {
				srv_debug("session %u: collider field from the cache", (unsigned)s->id);
			} else if ((field = srv_fielddisk_load(key, &load_ms)) != NULL) {
				drape_sdf_info info;
				drape_sdf_get_info(field, &info);
				char name[40];
				srv_fielddisk_name(key, name);
				srv_info("session %u: loaded a collider field of %llu voxels (%.3f m) from disk "
					 "(fields/%s) in %.0f ms",
					 (unsigned)s->id, (unsigned long long)info.voxels, (double)info.voxel_size,
					 name, load_ms);
				drape_sdf *loaded = field;
				field = srv_fieldcache_put(key, loaded);
				drape_sdf_release(loaded);
			} else {
				drape_sdf *built = NULL;
				rc = drape_sim_build_collider_sdf(s->sim, &d, &built, err);
				if (rc != DRAPE_OK)
					break;
				drape_sdf_info info;
				drape_sdf_get_info(built, &info);
				srv_info("session %u: built a collider field of %llu voxels (%.3f m) in %.0f ms, builder %s",
					 (unsigned)s->id, (unsigned long long)info.voxels,
					 (double)info.voxel_size, info.build_ms, info.builder);
				srv_fielddisk_store(key, built);
				field = srv_fieldcache_put(key, built);
				drape_sdf_release(built);
			}
			d.sdf = field;
		}
		uint32_t index = 0;
		rc = drape_sim_add_collider(s->sim, &d, &index, err);
		drape_sdf_release(field);
		if (rc != DRAPE_OK)
			break;
		rep->u.collider_add.index = index;
		s->cinfo[s->cinfo_count++] =
			(srv_collider_info){ d.shape, d.vertex_count, d.triangle_count, d.frame_count };
		/* The kind is the solver's own choice, read back rather than
		 * guessed from the request. */
		const drape_collider_kind kind = drape_sim_collider_kind(s->sim, index);
		if (d.frame_count > 0)
			srv_info("session %u: collider %u is a deforming mesh of %u vertices, %u frames from frame %g: "
				 "kind %s (solved against its moving surface, no field)",
				 (unsigned)s->id, (unsigned)index, (unsigned)d.vertex_count, (unsigned)d.frame_count,
				 (double)d.frame_start, drape_collider_kind_name(kind));
		else
			srv_info("session %u: collider %u is a %s %s: kind %s", (unsigned)s->id, (unsigned)index,
				 d.keyframe_count ? "keyframed" : "static", srv_shape_name(d.shape),
				 drape_collider_kind_name(kind));
		break;
	}
	case PROTO_OP_COLLIDER_FRAMES:
		rc = srv_collider_frames(cfg, s, &req->u.collider_frames, rep, err);
		break;
	case PROTO_OP_COLLIDER_TRANSFORM: {
		const proto_collider_transform_req *t = &req->u.collider_transform;
		rc = drape_sim_set_keyframes(s->sim, t->index, t->keyframes, t->keyframe_count, err);
		break;
	}
	case PROTO_OP_COLLIDER_UPDATE: {
		const proto_collider_update_req *u = &req->u.collider_update;
		rc = drape_sim_update_collider_mesh(s->sim, u->index, u->vertices, u->vertex_count, err);
		break;
	}
	case PROTO_OP_COLLIDER_REMOVE: {
		const uint32_t i = req->u.collider_remove.index;
		rc = drape_sim_remove_collider(s->sim, i, err);
		if (rc == DRAPE_OK && i < s->cinfo_count) {
			memmove(s->cinfo + i, s->cinfo + i + 1, (s->cinfo_count - i - 1) * sizeof *s->cinfo);
			s->cinfo_count--;
		}
		break;
	}
	case PROTO_OP_PINS_ATTACH: {
		const proto_pins_attach_req *p = &req->u.pins_attach;
		rc = drape_sim_attach_pins(s->sim, p->vertices, p->count, p->collider, err);
		break;
	}
	default:
		rc = drape_error_setf(err, DRAPE_EINTERNAL, "%s is not a collider op",
				      proto_op_name(req->op) ? proto_op_name(req->op) : "?");
		break;
	}
	/* Read here, on the worker that owns the sim; the loop copies them
	 * into s->colliders and s->memory when the job lands. */
	s->work_colliders = drape_sim_collider_count(s->sim);
	s->work_memory = s->memory_base + srv_session_collider_bytes(s);
	return rc;
}

drape_err srv_preflight_admit(const srv_config *c, const proto_request *req, drape_error *err)
{
	const proto_preflight_req *p = &req->u.preflight;
	if (c->max_vertices != 0 && p->mesh.vertex_count > c->max_vertices)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"preflight: mesh vertices %u is over the limit max_vertices = %llu",
					(unsigned)p->mesh.vertex_count, (unsigned long long)c->max_vertices);
	if (c->max_triangles != 0 && p->mesh.triangle_count > c->max_triangles)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"preflight: mesh triangles %u is over the limit max_triangles = %llu",
					(unsigned)p->mesh.triangle_count, (unsigned long long)c->max_triangles);
	return DRAPE_OK;
}

drape_err srv_preflight_run(const proto_request *req, proto_reply *rep, drape_tri_pair **pairs_out,
			    drape_error *err)
{
	const proto_preflight_req *p = &req->u.preflight;
	drape_tri_pair *pairs = NULL;
	if (p->max_pairs > 0 && (pairs = calloc(p->max_pairs, sizeof *pairs)) == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "preflight: out of memory");
	uint64_t count = 0;
	drape_err rc = drape_preflight(p->mesh.positions, p->mesh.vertex_count, p->mesh.triangles,
				       p->mesh.triangle_count, pairs, p->max_pairs, &count, err);
	if (rc != DRAPE_OK) {
		free(pairs);
		return rc;
	}
	rep->u.preflight.count = count;
	rep->u.preflight.pairs = pairs;
	rep->u.preflight.pair_count = (uint32_t)(count < p->max_pairs ? count : p->max_pairs);
	*pairs_out = pairs;
	return DRAPE_OK;
}
