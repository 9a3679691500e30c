/*
 * Obstacle colliders: validation, keyframed rigid motion and the contact
 * response of the projection step; see collider.h for the interface.
 *
 * Every shape lives in its own space and is sampled there: a world point is
 * taken into the collider's space by the inverse of the current transform, so
 * a mesh field is built once however the collider moves.
 *
 * Keyframes carry a translation and XYZ Euler angles in degrees; the world
 * transform is world = T + Rz Ry Rx local (X applied first, about the
 * collider's own origin). Between keys the translation and the three angles
 * are interpolated linearly. Linear Euler interpolation is what DCC
 * applications do with rotation channels, and unlike a quaternion slerp it
 * keeps spins of more than 180 degrees between two keys (a wheel keyed 0 and
 * 360 turns once instead of standing still).
 *
 * Contact response, per point and per collider, with depth d = r - phi(p)
 * for r = cloth thickness + collider thickness:
 *   1. push: p += d n, with n the unit gradient of phi (PBD, Mueller 2006);
 *   2. friction on the displacement relative to the collider's surface: the
 *      start position x is carried rigidly by the substep's motion to
 *      xc = T1 T0^-1 x, and the tangential part t of (p - xc) is removed
 *      entirely when |t| < static_friction d, otherwise reduced by
 *      min(friction d / |t|, 1) (Macklin et al. 2014, "Unified Particle
 *      Physics", eq. 24). So cloth resting on a moving platform is carried;
 *   3. restitution: the normal displacement relative to the surface,
 *      (p - xc) . n, is raised to at least e times the approach (xc - p) . n
 *      of the predicted position, so the velocity (p - x) / dt leaves with e
 *      times the approach speed wherever in the substep the impact fell (a
 *      point hit by a moving wall gets the wall's speed times 1 + e).
 *      Reflecting only the penetration, p += e d n, would make the rebound
 *      depend on the gap at the start of the substep.
 * The response depends only on p, x and the transforms, so repeating it in
 * every solver iteration converges instead of compounding: after step 3 the
 * point is outside and a second pass finds no contact; if the cloth pulls it
 * back, the same target relative to xc is set again, not added to.
 */
#include "server/sim/collider.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/deform.h"
#include "server/sim/pool.h"
#include "server/sim/shapes.h"

/* Points handled together per collider: the field sampler and the transform
 * run over a block held on the stack, so the step allocates nothing. */
#define COLLIDER_BLOCK 64
/* Half-width of a built field's band beyond the collider's own thickness:
 * more than a cloth thickness plus one substep's motion of a fast garment. */
#define COLLIDER_BAND 0.02f
#define COLLIDER_MAX_FRICTION 10.0f
#define COLLIDER_MAX_THICKNESS 1.0f

/* A rigid transform: world = r * local + t, r row-major (deform.h's,
 * which a deforming collider's keyframes move it by). */
typedef sim_rigid collider_xform;

struct sim_collider {
	drape_shape shape;
	/* Shape parameters in the collider's own space. */
	sim_v3 point, normal, center, half_extents, a, b;
	float radius;
	/* Mesh colliders: the field and, when given, the mesh it came from (kept
	 * for sim_colliders_update_mesh). */
	drape_sdf *sdf;
	float *vertices;
	uint32_t vertex_count;
	uint32_t *triangles;
	uint32_t triangle_count;
	float voxel_size;
	uint64_t max_voxels;
	float friction, static_friction, restitution, thickness;
	drape_keyframe *keys;
	uint32_t key_count;
	/* A deforming mesh (deform.c): solved against its moving triangles
	 * instead of the field, which it then does not hold. frame_start is
	 * kept for a mesh that becomes deforming with its first appended
	 * frames. */
	sim_deform *deform;
	float frame_start;
	collider_xform rest;   /* at t = 0, for attached points */
	collider_xform x0, x1; /* at the start and end of the current substep */
	/* A rigid mesh's vertices in the world at the start (w0) and end
	 * (w1) of the substep, for the body-feature contact (bodypush.h),
	 * valid once world_valid; orient is -1 when its triangles enclose a
	 * negative volume (wound inward). NULL without a triangle mesh. */
	float *w0, *w1;
	float orient;
	int world_valid;
	/* The set's stamps (sim_body_view): of the triangles, and of w0, w1
	 * (new at each recomputation). */
	uint64_t mesh_stamp, world_version;
};

/* ---- Transforms ---------------------------------------------------------- */

static sim_v3 xf_apply(const collider_xform *x, sim_v3 v)
{
	const float *r = x->r;
	return v3(r[0] * v.x + r[1] * v.y + r[2] * v.z + x->t.x,
		  r[3] * v.x + r[4] * v.y + r[5] * v.z + x->t.y,
		  r[6] * v.x + r[7] * v.y + r[8] * v.z + x->t.z);
}

static sim_v3 xf_rotate(const collider_xform *x, sim_v3 v)
{
	const float *r = x->r;
	return v3(r[0] * v.x + r[1] * v.y + r[2] * v.z, r[3] * v.x + r[4] * v.y + r[5] * v.z,
		  r[6] * v.x + r[7] * v.y + r[8] * v.z);
}

/* The inverse of a rigid transform is the transposed rotation. */
static sim_v3 xf_inverse(const collider_xform *x, sim_v3 w)
{
	const float *r = x->r;
	sim_v3 v = v3_sub(w, x->t);
	return v3(r[0] * v.x + r[3] * v.y + r[6] * v.z, r[1] * v.x + r[4] * v.y + r[7] * v.z,
		  r[2] * v.x + r[5] * v.y + r[8] * v.z);
}

/* The keys' transform at t: drape_keyframes_eval (keyframes.c), shared
 * with the daemon's view of where a collider is at a frame. */
static void collider_eval(const sim_collider *c, float t, collider_xform *out)
{
	float tr[3];
	drape_keyframes_eval(c->keys, c->key_count, t, out->r, tr);
	out->t = v3(tr[0], tr[1], tr[2]);
}

static void collider_reset_motion(sim_collider *c)
{
	collider_eval(c, 0.0f, &c->rest);
	c->x0 = c->rest;
	c->x1 = c->rest;
}

/* ---- Validation ------------------------------------------------------------ */

static const char *shape_name(drape_shape s)
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
	return "unknown";
}

static drape_err check_vec3(const char *shape, const char *field, const float v[3], drape_error *err)
{
	for (int i = 0; i < 3; i++)
		if (!isfinite(v[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE,
						"colliders.%s.%s[%d]: %g is not finite", shape, field, i,
						(double)v[i]);
	return DRAPE_OK;
}

static drape_err check_positive(const char *shape, const char *field, float v, drape_error *err)
{
	if (!isfinite(v))
		return drape_error_setf(err, DRAPE_ENONFINITE, "colliders.%s.%s: %g is not finite",
					shape, field, (double)v);
	if (!(v > 0))
		return drape_error_setf(err, DRAPE_EINVAL, "colliders.%s.%s: %g is not > 0", shape,
					field, (double)v);
	return DRAPE_OK;
}

static drape_err check_range(const char *field, float v, float lo, float hi, drape_error *err)
{
	if (!isfinite(v))
		return drape_error_setf(err, DRAPE_ENONFINITE, "colliders.%s: %g is not finite", field,
					(double)v);
	if (!(v >= lo && v <= hi))
		return drape_error_setf(err, DRAPE_EINVAL, "colliders.%s: %g is not in [%g, %g]", field,
					(double)v, (double)lo, (double)hi);
	return DRAPE_OK;
}

static drape_err check_keyframes(const drape_keyframe *keys, uint32_t count, drape_error *err)
{
	if (count > DRAPE_MAX_KEYFRAMES)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"colliders.keyframes: %u keyframes, over the limit %u", count,
					(unsigned)DRAPE_MAX_KEYFRAMES);
	if (count > 0 && keys == NULL)
		return drape_error_setf(err, DRAPE_EINVAL,
					"colliders.keyframes: NULL with keyframe_count %u", count);
	for (uint32_t i = 0; i < count; i++) {
		const drape_keyframe *k = &keys[i];
		if (!isfinite(k->frame))
			return drape_error_setf(err, DRAPE_ENONFINITE,
						"colliders.keyframes[%u].frame: %g is not finite", i,
						(double)k->frame);
		for (int j = 0; j < 3; j++) {
			if (!isfinite(k->translate[j]))
				return drape_error_setf(err, DRAPE_ENONFINITE,
							"colliders.keyframes[%u].translate[%d]: %g is not finite",
							i, j, (double)k->translate[j]);
			if (!isfinite(k->rotate[j]))
				return drape_error_setf(err, DRAPE_ENONFINITE,
							"colliders.keyframes[%u].rotate[%d]: %g is not finite",
							i, j, (double)k->rotate[j]);
		}
		if (i > 0 && !(k->frame > keys[i - 1].frame))
			return drape_error_setf(err, DRAPE_EINVAL,
						"colliders.keyframes[%u].frame: %g is not after keyframes[%u].frame = %g "
						"(keys must be sorted by frame, without repeats)",
						i, (double)k->frame, i - 1, (double)keys[i - 1].frame);
	}
	return DRAPE_OK;
}

static drape_err check_mesh_vertices(const float *v, uint32_t count, drape_error *err)
{
	if (v == NULL || count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "colliders.mesh.vertices: empty (no vertices)");
	for (uint64_t i = 0; i < (uint64_t)count * 3; i++)
		if (!isfinite(v[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE,
						"colliders.mesh.vertices[%llu][%d]: %g is not finite",
						(unsigned long long)(i / 3), (int)(i % 3), (double)v[i]);
	return DRAPE_OK;
}

static drape_err check_mesh(const drape_collider_desc *d, drape_error *err)
{
	drape_err rc = check_mesh_vertices(d->vertices, d->vertex_count, err);
	if (rc != DRAPE_OK)
		return rc;
	if (d->triangles == NULL || d->triangle_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"colliders.mesh.triangles: empty (at least one triangle needed)");
	for (uint64_t i = 0; i < (uint64_t)d->triangle_count * 3; i++)
		if (d->triangles[i] >= d->vertex_count)
			return drape_error_setf(err, DRAPE_ERANGE,
						"colliders.mesh.triangles[%llu][%d]: vertex index %u >= vertex count %u",
						(unsigned long long)(i / 3), (int)(i % 3), d->triangles[i],
						d->vertex_count);
	return DRAPE_OK;
}

static drape_err check_desc(const drape_collider_desc *d, drape_error *err)
{
	if (d == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "colliders: NULL description");
	const char *s = shape_name(d->shape);
	drape_err rc = DRAPE_OK;
	switch (d->shape) {
	case DRAPE_SHAPE_PLANE:
		if ((rc = check_vec3(s, "point", d->point, err)) || (rc = check_vec3(s, "normal", d->normal, err)))
			return rc;
		if (!(sqrt((double)d->normal[0] * d->normal[0] + (double)d->normal[1] * d->normal[1] +
			   (double)d->normal[2] * d->normal[2]) > 1e-12))
			return drape_error_setf(err, DRAPE_EINVAL, "colliders.plane.normal: (%g, %g, %g) is zero",
						(double)d->normal[0], (double)d->normal[1], (double)d->normal[2]);
		break;
	case DRAPE_SHAPE_SPHERE:
		if ((rc = check_vec3(s, "center", d->center, err)) || (rc = check_positive(s, "radius", d->radius, err)))
			return rc;
		break;
	case DRAPE_SHAPE_BOX:
		if ((rc = check_vec3(s, "center", d->center, err)) ||
		    (rc = check_vec3(s, "half_extents", d->half_extents, err)))
			return rc;
		for (int i = 0; i < 3; i++)
			if (!(d->half_extents[i] > 0))
				return drape_error_setf(err, DRAPE_EINVAL, "colliders.box.half_extents[%d]: %g is not > 0",
							i, (double)d->half_extents[i]);
		break;
	case DRAPE_SHAPE_CAPSULE:
		if ((rc = check_vec3(s, "a", d->a, err)) || (rc = check_vec3(s, "b", d->b, err)) ||
		    (rc = check_positive(s, "radius", d->radius, err)))
			return rc;
		break;
	case DRAPE_SHAPE_MESH:
		if (d->sdf == NULL || d->vertices != NULL || d->triangles != NULL)
			if ((rc = check_mesh(d, err)))
				return rc;
		if (!isfinite(d->frame_start))
			return drape_error_setf(err, DRAPE_ENONFINITE,
						"colliders.mesh.frame_start: %g is not finite",
						(double)d->frame_start);
		if (!isfinite(d->voxel_size) || d->voxel_size < 0)
			return drape_error_setf(err, isfinite(d->voxel_size) ? DRAPE_EINVAL : DRAPE_ENONFINITE,
						"colliders.mesh.voxel_size: %g is not a finite number >= 0",
						(double)d->voxel_size);
		break;
	default:
		return drape_error_setf(err, DRAPE_EINVAL,
					"colliders.shape: %d is not a known shape (plane 1, sphere 2, box 3, "
					"capsule 4, mesh 5)",
					(int)d->shape);
	}
	if ((rc = check_range("friction", d->friction, 0, COLLIDER_MAX_FRICTION, err)) ||
	    (rc = check_range("static_friction", d->static_friction, 0, COLLIDER_MAX_FRICTION, err)) ||
	    (rc = check_range("restitution", d->restitution, 0, 1, err)) ||
	    (rc = check_range("thickness", d->thickness, 0, COLLIDER_MAX_THICKNESS, err)))
		return rc;
	return check_keyframes(d->keyframes, d->keyframe_count, err);
}

/* ---- Set management -------------------------------------------------------- */

static void collider_free(sim_collider *c)
{
	if (c == NULL)
		return;
	drape_sdf_release(c->sdf);
	sim_deform_free(c->deform);
	free(c->w0);
	free(c->w1);
	free(c->vertices);
	free(c->triangles);
	free(c->keys);
	free(c);
}

/* Builds a field for a mesh collider, prefixing the builder's message with
 * the collider field names the caller knows. */
static drape_err collider_build(const float *vertices, uint32_t vertex_count,
				const uint32_t *triangles, uint32_t triangle_count, float voxel_size,
				float band, uint64_t max_voxels, drape_sdf **out, drape_error *err)
{
	drape_error e;
	drape_error_clear(&e);
	drape_err rc = drape_sdf_build(vertices, vertex_count, triangles, triangle_count, voxel_size,
				       band, max_voxels, out, &e);
	if (rc != DRAPE_OK)
		return drape_error_setf(err, rc, "colliders.mesh.%s", e.message);
	return DRAPE_OK;
}

float sim_collider_band(const drape_collider_desc *d)
{
	return d->thickness + COLLIDER_BAND;
}

drape_err sim_collider_build_sdf(const drape_collider_desc *d, drape_sdf **out, drape_error *err)
{
	drape_err rc = check_desc(d, err);
	if (rc != DRAPE_OK)
		return rc;
	if (d->shape != DRAPE_SHAPE_MESH || d->vertices == NULL)
		return drape_error_setf(err, DRAPE_EINVAL,
					"colliders.shape: a field is built only for a mesh with vertices");
	return collider_build(d->vertices, d->vertex_count, d->triangles, d->triangle_count,
			      d->voxel_size, sim_collider_band(d), d->max_voxels, out, err);
}

/* -1 when the triangles enclose a negative volume (divergence theorem,
 * summed in double in a fixed order), else 1: which way "out" is for a
 * mesh wound either way. */
static float collider_orient(const float *v, const uint32_t *t, uint32_t nt)
{
	double vol = 0.0;
	for (uint32_t i = 0; i < nt; i++) {
		const float *a = &v[3 * (size_t)t[3 * i]], *b = &v[3 * (size_t)t[3 * i + 1]];
		const float *c = &v[3 * (size_t)t[3 * i + 2]];
		vol += (double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
		       (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
		       (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0]);
	}
	return vol < 0.0 ? -1.0f : 1.0f;
}

void sim_colliders_init(sim_collider_set *set)
{
	set->items = NULL;
	set->count = 0;
	set->cap = 0;
	set->cloth_n = 0;
	set->cloth_thickness = NULL;
	set->cloth_friction = NULL;
}

void sim_colliders_free(sim_collider_set *set)
{
	for (uint32_t i = 0; i < set->count; i++)
		collider_free(set->items[i]);
	free(set->items);
	uint32_t n = set->cloth_n;
	sim_colliders_init(set);
	set->cloth_n = n;
}

int sim_colliders_set_cloth_n(sim_collider_set *set, uint32_t n)
{
	for (uint32_t i = 0; i < set->count; i++)
		if (set->items[i]->deform != NULL && sim_deform_reserve(set->items[i]->deform, n) != 0)
			return -1;
	set->cloth_n = n;
	return 0;
}

drape_err sim_colliders_add(sim_collider_set *set, const drape_collider_desc *d, uint32_t *index,
			    drape_error *err)
{
	drape_err rc = check_desc(d, err);
	if (rc != DRAPE_OK)
		return rc;
	const int deforming = d->shape == DRAPE_SHAPE_MESH && (d->frames != NULL || d->frame_count > 0);
	if (deforming) {
		if (d->vertices == NULL)
			return drape_error_setf(err, DRAPE_EINVAL,
						"colliders[%u].frames: a deforming collider needs its rest pose "
						"(vertices and triangles), not only a field",
						set->count);
		if ((rc = sim_deform_check_frames(set->count, d->frames, d->frame_count, 0,
						  d->vertex_count, err)))
			return rc;
	}
	if (set->count == set->cap) {
		uint32_t cap = set->cap ? set->cap * 2 : 4;
		sim_collider **items = realloc(set->items, cap * sizeof *items);
		if (items == NULL)
			return drape_error_setf(err, DRAPE_ENOMEM, "colliders: out of memory");
		set->items = items;
		set->cap = cap;
	}
	sim_collider *c = calloc(1, sizeof *c);
	if (c == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "colliders: out of memory");
	c->shape = d->shape;
	c->point = v3(d->point[0], d->point[1], d->point[2]);
	c->center = v3(d->center[0], d->center[1], d->center[2]);
	c->half_extents = v3(d->half_extents[0], d->half_extents[1], d->half_extents[2]);
	c->a = v3(d->a[0], d->a[1], d->a[2]);
	c->b = v3(d->b[0], d->b[1], d->b[2]);
	c->radius = d->radius;
	if (d->shape == DRAPE_SHAPE_PLANE) {
		double nx = d->normal[0], ny = d->normal[1], nz = d->normal[2];
		double l = sqrt(nx * nx + ny * ny + nz * nz);
		c->normal = v3((float)(nx / l), (float)(ny / l), (float)(nz / l));
	}
	c->friction = d->friction;
	c->static_friction = d->static_friction;
	c->restitution = d->restitution;
	c->thickness = d->thickness;
	c->voxel_size = d->voxel_size;
	c->max_voxels = d->max_voxels;
	c->frame_start = d->frame_start;
	c->orient = 1.0f;
	if (d->keyframe_count > 0) {
		c->keys = malloc((size_t)d->keyframe_count * sizeof *c->keys);
		if (c->keys == NULL)
			goto nomem;
		memcpy(c->keys, d->keyframes, (size_t)d->keyframe_count * sizeof *c->keys);
		c->key_count = d->keyframe_count;
	}
	if (d->shape == DRAPE_SHAPE_MESH) {
		if (d->vertices != NULL) {
			size_t vb = (size_t)d->vertex_count * 3 * sizeof(float);
			size_t tb = (size_t)d->triangle_count * 3 * sizeof(uint32_t);
			c->vertices = malloc(vb);
			c->triangles = malloc(tb);
			if (c->vertices == NULL || c->triangles == NULL)
				goto nomem;
			memcpy(c->vertices, d->vertices, vb);
			memcpy(c->triangles, d->triangles, tb);
			c->vertex_count = d->vertex_count;
			c->triangle_count = d->triangle_count;
			c->orient = collider_orient(c->vertices, c->triangles, c->triangle_count);
			if (!deforming) {
				c->w0 = malloc(vb);
				c->w1 = malloc(vb);
				if (c->w0 == NULL || c->w1 == NULL)
					goto nomem;
			}
		}
		if (deforming) {
			/* No field: the surface path needs none, and building one
			 * would cost seconds for a body (a given sdf is not kept). */
			c->deform = sim_deform_create(d->vertices, d->vertex_count, d->triangles,
						      d->triangle_count, d->frames, d->frame_count,
						      d->frame_start);
			if (c->deform == NULL ||
			    (set->cloth_n > 0 && sim_deform_reserve(c->deform, set->cloth_n) != 0))
				goto nomem;
		} else if (d->sdf != NULL) {
			drape_sdf_retain(d->sdf);
			c->sdf = d->sdf;
		} else {
			rc = collider_build(d->vertices, d->vertex_count, d->triangles, d->triangle_count,
					    d->voxel_size, sim_collider_band(d), d->max_voxels, &c->sdf,
					    err);
			if (rc != DRAPE_OK) {
				collider_free(c);
				return rc;
			}
		}
	}
	collider_reset_motion(c);
	c->mesh_stamp = ++set->stamp;
	set->items[set->count] = c;
	if (index != NULL)
		*index = set->count;
	set->count++;
	return DRAPE_OK;
nomem:
	collider_free(c);
	return drape_error_setf(err, DRAPE_ENOMEM, "colliders: out of memory");
}

static drape_err check_index(const sim_collider_set *set, uint32_t index, drape_error *err)
{
	if (index >= set->count)
		return drape_error_setf(err, DRAPE_ENOTFOUND, "collider: index %u >= collider count %u",
					index, set->count);
	return DRAPE_OK;
}

drape_err sim_colliders_remove(sim_collider_set *set, uint32_t index, drape_error *err)
{
	drape_err rc = check_index(set, index, err);
	if (rc != DRAPE_OK)
		return rc;
	collider_free(set->items[index]);
	memmove(&set->items[index], &set->items[index + 1],
		(size_t)(set->count - index - 1) * sizeof *set->items);
	set->count--;
	return DRAPE_OK;
}

drape_err sim_colliders_set_keyframes(sim_collider_set *set, uint32_t index,
				      const drape_keyframe *keys, uint32_t count, drape_error *err)
{
	drape_err rc = check_index(set, index, err);
	if (rc == DRAPE_OK)
		rc = check_keyframes(keys, count, err);
	if (rc != DRAPE_OK)
		return rc;
	drape_keyframe *copy = NULL;
	if (count > 0) {
		copy = malloc((size_t)count * sizeof *copy);
		if (copy == NULL)
			return drape_error_setf(err, DRAPE_ENOMEM, "colliders.keyframes: out of memory");
		memcpy(copy, keys, (size_t)count * sizeof *copy);
	}
	sim_collider *c = set->items[index];
	free(c->keys);
	c->keys = copy;
	c->key_count = count;
	collider_reset_motion(c);
	c->world_valid = 0;
	return DRAPE_OK;
}

drape_err sim_colliders_update_mesh(sim_collider_set *set, uint32_t index, const float *vertices,
				    uint32_t vertex_count, drape_error *err)
{
	drape_err rc = check_index(set, index, err);
	if (rc != DRAPE_OK)
		return rc;
	sim_collider *c = set->items[index];
	if (c->shape != DRAPE_SHAPE_MESH || c->triangles == NULL)
		return drape_error_setf(err, DRAPE_ESTATE,
					"collider %u: not a mesh collider built from triangles", index);
	if (c->deform != NULL)
		return drape_error_setf(err, DRAPE_ESTATE,
					"collider %u: deforming; its motion comes from its frames "
					"(append more with drape_sim_append_collider_frames)",
					index);
	if (vertex_count != c->vertex_count)
		return drape_error_setf(err, DRAPE_EINVAL,
					"colliders.mesh.vertices: %u vertices, the mesh has %u", vertex_count,
					c->vertex_count);
	if ((rc = check_mesh_vertices(vertices, vertex_count, err)))
		return rc;
	/* The new field keeps the old voxel size and band, so a deforming
	 * collider does not change resolution from frame to frame. */
	drape_sdf_info info;
	drape_sdf_get_info(c->sdf, &info);
	drape_sdf *sdf = NULL;
	rc = collider_build(vertices, vertex_count, c->triangles, c->triangle_count, info.voxel_size,
			    info.band, c->max_voxels, &sdf, err);
	if (rc != DRAPE_OK)
		return rc;
	drape_sdf_release(c->sdf);
	c->sdf = sdf;
	memcpy(c->vertices, vertices, (size_t)vertex_count * 3 * sizeof(float));
	c->orient = collider_orient(c->vertices, c->triangles, c->triangle_count);
	c->world_valid = 0;
	return DRAPE_OK;
}

drape_err sim_colliders_set_sdf(sim_collider_set *set, uint32_t index, drape_sdf *sdf,
				drape_error *err)
{
	drape_err rc = check_index(set, index, err);
	if (rc != DRAPE_OK)
		return rc;
	sim_collider *c = set->items[index];
	if (c->shape != DRAPE_SHAPE_MESH)
		return drape_error_setf(err, DRAPE_ESTATE, "collider %u: a %s, not a mesh collider",
					index, shape_name(c->shape));
	if (sdf == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "colliders.mesh.sdf: NULL");
	if (c->deform != NULL)
		return drape_error_setf(err, DRAPE_ESTATE,
					"collider %u: deforming; it is solved against its triangles, "
					"not a field",
					index);
	drape_sdf_retain(sdf);
	drape_sdf_release(c->sdf);
	c->sdf = sdf;
	return DRAPE_OK;
}

/* ---- The step ------------------------------------------------------------- */

static void collider_world(sim_collider_set *set, sim_collider *c);

void sim_colliders_begin_substep(sim_collider_set *set, float t0, float t1)
{
	for (uint32_t i = 0; i < set->count; i++) {
		sim_collider *c = set->items[i];
		collider_eval(c, t0, &c->x0);
		collider_eval(c, t1, &c->x1);
		if (c->deform != NULL)
			sim_deform_begin_substep(c->deform, t0, t1, &c->x0, &c->x1);
		else if (c->w0 != NULL && (!c->world_valid || c->key_count > 0))
			collider_world(set, c);
	}
}

/* The angle of the rotation taking r0 to r1: the rotation r1 r0^T has
 * trace 1 + 2 cos(angle). */
static double xf_turn(const collider_xform *x0, const collider_xform *x1)
{
	double tr = 0.0;
	for (int k = 0; k < 9; k++)
		tr += (double)x1->r[k] * (double)x0->r[k];
	double c = 0.5 * (tr - 1.0);
	return acos(c > 1.0 ? 1.0 : c < -1.0 ? -1.0 : c);
}

float sim_colliders_motion(const sim_collider_set *set, float t0, float t1)
{
	float tm = 0.0f;
	for (uint32_t i = 0; i < set->count; i++) {
		const sim_collider *c = set->items[i];
		collider_xform a, b;
		collider_eval(c, t0, &a);
		collider_eval(c, t1, &b);
		float ct = 0.0f;
		if (c->deform != NULL)
			ct = sim_deform_motion(c->deform, t0, t1, &a, &b);
		else if (c->key_count > 0)
			ct = (float)xf_turn(&a, &b);
		tm = fmaxf(tm, ct);
	}
	return tm;
}

/* The rigid mesh's world vertices at both ends of the substep; a static
 * one (no keys) keeps them until its mesh or keys change. */
static void collider_world(sim_collider_set *set, sim_collider *c)
{
	for (uint32_t i = 0; i < c->vertex_count; i++) {
		sim_v3 l = v3(c->vertices[3 * (size_t)i], c->vertices[3 * (size_t)i + 1],
			      c->vertices[3 * (size_t)i + 2]);
		sim_v3 a = xf_apply(&c->x0, l), b = xf_apply(&c->x1, l);
		float *q0 = &c->w0[3 * (size_t)i], *q1 = &c->w1[3 * (size_t)i];
		q0[0] = a.x, q0[1] = a.y, q0[2] = a.z;
		q1[0] = b.x, q1[1] = b.y, q1[2] = b.z;
	}
	c->world_valid = 1;
	c->world_version = ++set->stamp;
}

int sim_colliders_body(const sim_collider_set *set, uint32_t index, sim_body_view *out)
{
	const sim_collider *c = set->items[index];
	sim_body_view v = {0,    0, NULL, NULL, NULL, 1.0f, c->thickness, c->friction,
			   c->static_friction, 1, c->mesh_stamp, c->world_version};
	if (c->deform != NULL) {
		sim_deform_view(c->deform, &v.nv, &v.nt, &v.tris, &v.q0, &v.q1);
	} else if (c->w0 != NULL && c->world_valid) {
		v.nv = c->vertex_count;
		v.nt = c->triangle_count;
		v.tris = c->triangles;
		v.q0 = c->w0;
		v.q1 = c->w1;
		v.orient = c->orient;
		v.moving = c->key_count > 0;
	} else {
		return 0;
	}
	*out = v;
	return 1;
}

void sim_colliders_begin_contacts(sim_collider_set *set, const sim_vec4 *x, const sim_vec4 *p,
				  uint32_t n, float thickness, drape_pool *pool)
{
	for (uint32_t i = 0; i < set->count; i++) {
		sim_collider *c = set->items[i];
		if (c->deform != NULL) {
			sim_deform_set_cloth(c->deform, set->cloth_thickness, set->cloth_friction,
					     c->thickness);
			sim_deform_begin_contacts(c->deform, x, p, n, thickness + c->thickness, pool);
		}
	}
}

/* Distance and (not necessarily unit) gradient of m local points. */
static void collider_sample(const sim_collider *c, const float *q, uint32_t m, float *dist, float *grad)
{
	if (c->shape == DRAPE_SHAPE_MESH) {
		drape_sdf_sample(c->sdf, q, m, dist, grad);
		return;
	}
	for (uint32_t j = 0; j < m; j++) {
		sim_v3 p = v3(q[j * 3], q[j * 3 + 1], q[j * 3 + 2]), g = v3(0, 0, 0);
		float d;
		switch (c->shape) {
		case DRAPE_SHAPE_PLANE:
			d = sim_shape_plane(p, c->point, c->normal, &g);
			break;
		case DRAPE_SHAPE_SPHERE:
			d = sim_shape_sphere(p, c->center, c->radius, &g);
			break;
		case DRAPE_SHAPE_BOX:
			d = sim_shape_box(p, c->center, c->half_extents, &g);
			break;
		default:
			d = sim_shape_capsule(p, c->a, c->b, c->radius, &g);
			break;
		}
		dist[j] = d;
		grad[j * 3] = g.x;
		grad[j * 3 + 1] = g.y;
		grad[j * 3 + 2] = g.z;
	}
}

/* The field of collider `index` at world points (m of them, xyz) in its
 * pose at the start of the current substep: the distance and the unit
 * world gradient (0, 0, 0 where none is known), the distance measured
 * from the collider's own thickness. 0 for a deforming
 * collider, whose contact does not go through a field (deform.c). */
int sim_colliders_sample_start(const sim_collider_set *set, uint32_t index, const float *world,
			       uint32_t m, float *dist, float *grad)
{
	const sim_collider *c = set->items[index];
	if (c->deform != NULL)
		return 0;
	float q[COLLIDER_BLOCK * 3], g[COLLIDER_BLOCK * 3];
	for (uint32_t base = 0; base < m; base += COLLIDER_BLOCK) {
		uint32_t k = m - base < COLLIDER_BLOCK ? m - base : COLLIDER_BLOCK;
		for (uint32_t j = 0; j < k; j++) {
			const float *w = &world[3 * (size_t)(base + j)];
			sim_v3 l = xf_inverse(&c->x0, v3(w[0], w[1], w[2]));
			q[j * 3] = l.x;
			q[j * 3 + 1] = l.y;
			q[j * 3 + 2] = l.z;
		}
		collider_sample(c, q, k, &dist[base], g);
		for (uint32_t j = 0; j < k; j++) {
			dist[base + j] -= c->thickness;
			sim_v3 v = v3(g[j * 3], g[j * 3 + 1], g[j * 3 + 2]);
			float l = v3_len(v);
			v = l > 1e-12f ? xf_rotate(&c->x0, v3_scale(v, 1.0f / l)) : v3(0, 0, 0);
			float *o = &grad[3 * (size_t)(base + j)];
			o[0] = v.x;
			o[1] = v.y;
			o[2] = v.z;
		}
	}
	return 1;
}

/* Points [begin, end) against every collider, block by block. */
static uint32_t project_range(const sim_collider_set *set, sim_vec4 *restrict p,
			      const sim_vec4 *restrict x, uint32_t begin, uint32_t end, float thickness)
{
	uint32_t contacts = 0;
	float q[COLLIDER_BLOCK * 3], dist[COLLIDER_BLOCK], grad[COLLIDER_BLOCK * 3];
	for (uint32_t base = begin; base < end; base += COLLIDER_BLOCK) {
		uint32_t m = end - base < COLLIDER_BLOCK ? end - base : COLLIDER_BLOCK;
		for (uint32_t ci = 0; ci < set->count; ci++) {
			const sim_collider *c = set->items[ci];
			if (c->deform != NULL) {
				sim_contact_params cp = {c->friction, c->static_friction, c->restitution};
				contacts += sim_deform_project(c->deform, p, x, base, base + m,
							       thickness + c->thickness, &cp);
				continue;
			}
			for (uint32_t j = 0; j < m; j++) {
				sim_v3 l = xf_inverse(&c->x1, v3_of4(p[base + j]));
				q[j * 3] = l.x;
				q[j * 3 + 1] = l.y;
				q[j * 3 + 2] = l.z;
			}
			collider_sample(c, q, m, dist, grad);
			const float *vth = set->cloth_thickness, *vfr = set->cloth_friction;
			for (uint32_t j = 0; j < m; j++) {
				sim_vec4 *pi = &p[base + j];
				const float r = (vth ? vth[base + j] : thickness) + c->thickness;
				if (!(pi->w > 0) || !(dist[j] < r))
					continue;
				/* A vertex's own friction replaces the collider's. */
				float mu_s = c->static_friction, mu_d = c->friction;
				if (vfr != NULL && vfr[base + j] >= 0.0f)
					mu_s = mu_d = vfr[base + j];
				sim_v3 g = v3(grad[j * 3], grad[j * 3 + 1], grad[j * 3 + 2]);
				float gl = v3_len(g);
				/* No direction is known (deep inside a field's band):
				 * leave the point rather than push it anywhere. */
				if (!(gl > 1e-12f))
					continue;
				sim_v3 nrm = xf_rotate(&c->x1, v3_scale(g, 1.0f / gl));
				float depth = r - dist[j];
				sim_v3 np = v3_add(v3_of4(*pi), v3_scale(nrm, depth));
				/* Where the start position x would be had it moved
				 * rigidly with the collider over the substep. */
				sim_v3 xc = xf_apply(&c->x1, xf_inverse(&c->x0, v3_of4(x[base + j])));
				sim_v3 rel = v3_sub(np, xc);
				sim_v3 tan = v3_sub(rel, v3_scale(nrm, v3_dot(rel, nrm)));
				float tl = v3_len(tan);
				if (tl < mu_s * depth)
					np = v3_sub(np, tan);
				else if (tl > 0)
					np = v3_sub(np, v3_scale(tan, fminf(mu_d * depth / tl, 1.0f)));
				if (c->restitution > 0.0f) {
					/* Restitution acts on velocity, and a PBD velocity is
					 * (p - x) / dt: the normal displacement relative to the
					 * surface must be at least e times the approach. */
					float approach = -v3_dot(v3_sub(v3_of4(*pi), xc), nrm);
					float out_n = v3_dot(v3_sub(np, xc), nrm);
					float want = c->restitution * approach;
					if (approach > 0.0f && out_n < want)
						np = v3_add(np, v3_scale(nrm, want - out_n));
				}
				pi->x = np.x;
				pi->y = np.y;
				pi->z = np.z;
				contacts++;
			}
		}
	}
	return contacts;
}

uint32_t sim_colliders_project(const sim_collider_set *set, sim_vec4 *restrict p,
			       const sim_vec4 *restrict x, uint32_t n, float thickness)
{
	return project_range(set, p, x, 0, n, thickness);
}

typedef struct project_job {
	const sim_collider_set *set;
	sim_vec4 *p;
	const sim_vec4 *x;
	float thickness;
	uint32_t contacts; /* summed atomically: a sum is the same in any order */
} project_job;

static void project_job_range(void *ctx, uint32_t begin, uint32_t end)
{
	project_job *J = ctx;
	uint32_t c = project_range(J->set, J->p, J->x, begin, end, J->thickness);
	__atomic_fetch_add(&J->contacts, c, __ATOMIC_RELAXED);
}

uint32_t sim_colliders_project_pool(const sim_collider_set *set, sim_vec4 *restrict p,
				    const sim_vec4 *restrict x, uint32_t n, float thickness,
				    drape_pool *pool)
{
	/* Each point's result depends on that point alone (its collider
	 * order is fixed), so the split never changes a bit. Blocks are a
	 * multiple of COLLIDER_BLOCK so the field sampler's runs stay whole. */
	project_job J = {set, p, x, thickness, 0};
	sim_pool_for(pool, n, 4 * COLLIDER_BLOCK, project_job_range, &J);
	return J.contacts;
}

void sim_colliders_attached_point(const sim_collider_set *set, uint32_t index, const float rest[3],
				  float out[3])
{
	const sim_collider *c = set->items[index];
	sim_v3 w = xf_apply(&c->x1, xf_inverse(&c->rest, v3(rest[0], rest[1], rest[2])));
	out[0] = w.x;
	out[1] = w.y;
	out[2] = w.z;
}

int sim_colliders_bind_skin(const sim_collider_set *set, uint32_t index, const float world[3],
			    sim_skin *out)
{
	const sim_collider *c = set->items[index];
	if (c->shape != DRAPE_SHAPE_MESH || c->vertices == NULL)
		return 0;
	/* The rest pose is in the collider's own space, where its keyframes'
	 * transform at t = 0 takes a world point. */
	sim_v3 l = xf_inverse(&c->rest, v3(world[0], world[1], world[2]));
	float q[3] = {l.x, l.y, l.z};
	sim_skin_bind(c->vertices, c->triangles, c->triangle_count, q, out);
	return 1;
}

void sim_colliders_follow(const sim_collider_set *set, uint32_t index, const float rest[3],
			  const sim_skin *skin, float out[3])
{
	const sim_collider *c = set->items[index];
	if (c->deform != NULL && skin != NULL)
		sim_deform_skin_point(c->deform, skin, out);
	else
		sim_colliders_attached_point(set, index, rest, out);
}

drape_err sim_colliders_append_frames(sim_collider_set *set, uint32_t index, const float *frames,
				      uint32_t count, drape_error *err)
{
	drape_err rc = check_index(set, index, err);
	if (rc != DRAPE_OK)
		return rc;
	sim_collider *c = set->items[index];
	if (c->shape != DRAPE_SHAPE_MESH || c->vertices == NULL || c->triangles == NULL)
		return drape_error_setf(err, DRAPE_ESTATE,
					"colliders[%u].frames: collider %u is a %s without its triangles; "
					"only a mesh collider given vertices and triangles can deform",
					index, index, shape_name(c->shape));
	uint32_t have = c->deform ? sim_deform_frame_count(c->deform) : 0;
	if ((rc = sim_deform_check_frames(index, frames, count, have, c->vertex_count, err)))
		return rc;
	if (c->deform != NULL)
		return sim_deform_append(c->deform, frames, count, err);
	sim_deform *d = sim_deform_create(c->vertices, c->vertex_count, c->triangles,
					  c->triangle_count, frames, count, c->frame_start);
	if (d == NULL || (set->cloth_n > 0 && sim_deform_reserve(d, set->cloth_n) != 0)) {
		sim_deform_free(d);
		return drape_error_setf(err, DRAPE_ENOMEM, "colliders[%u].frames: out of memory", index);
	}
	/* From now on the surface path: the field is dropped, and the
	 * triangles are the deforming mesh's own array. */
	c->deform = d;
	c->mesh_stamp = ++set->stamp;
	drape_sdf_release(c->sdf);
	c->sdf = NULL;
	return DRAPE_OK;
}

int sim_colliders_body_mesh(const sim_collider_set *set, uint32_t index, const uint32_t **tris,
			    uint32_t *nt, uint32_t *nv, uint64_t *mesh)
{
	const sim_collider *c = set->items[index];
	*mesh = c->mesh_stamp;
	if (c->deform != NULL) {
		const float *q0, *q1;
		sim_deform_view(c->deform, nv, nt, tris, &q0, &q1);
		return 1;
	}
	if (c->w0 == NULL)
		return 0;
	*nv = c->vertex_count;
	*nt = c->triangle_count;
	*tris = c->triangles;
	return 1;
}

uint32_t sim_colliders_body_size(const sim_collider_set *set, uint32_t index)
{
	const sim_collider *c = set->items[index];
	if (c->deform == NULL && c->w0 == NULL)
		return 0;
	return c->vertex_count;
}

drape_collider_kind sim_colliders_kind(const sim_collider_set *set, uint32_t index)
{
	if (index >= set->count)
		return DRAPE_COLLIDER_NONE;
	const sim_collider *c = set->items[index];
	if (c->shape != DRAPE_SHAPE_MESH)
		return DRAPE_COLLIDER_SHAPE;
	return c->deform != NULL ? DRAPE_COLLIDER_SURFACE : DRAPE_COLLIDER_FIELD;
}

uint32_t sim_colliders_frame_count(const sim_collider_set *set, uint32_t index)
{
	if (index >= set->count || set->items[index]->deform == NULL)
		return 0;
	return sim_deform_frame_count(set->items[index]->deform);
}
