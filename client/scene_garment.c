/*
 * The cloth's garment keys in a scene (client/SCENE.md, "Garments"):
 * explicit stitches, automatic seams, a rest shape from another mesh, and
 * the stitches' stiffness and sewing speed.
 */
#include "client/scene_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Default weld tolerance of "seams": vertices this close are one. */
#define SCN_SEAM_WELD 1e-4f

/* A vertex index of the cloth. */
static drape_err scn_vertex(scn *c, const cJSON *v, uint32_t *out)
{
	int64_t i;
	drape_err e = scn_integer(c, v, 0, (double)c->s.cloth.vertex_count - 1, &i);
	if (e == DRAPE_OK)
		*out = (uint32_t)i;
	return e;
}

/* One entry of "stitches": [a, b] or [a, [e0, e1, t]]. */
static drape_err scn_stitch(scn *c, const cJSON *v, drape_stitch *out)
{
	const char *shape = "must be [a, b] (two vertices) or [a, [e0, e1, t]] (a vertex and the "
			    "point at t of the edge e0-e1)";
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
		return scn_fail(c, DRAPE_EINVAL, "%s", shape);
	drape_stitch s = {0, 0, 0, 0.0f};
	size_t old = scn_push_index(c, 0);
	drape_err e = scn_vertex(c, cJSON_GetArrayItem(v, 0), &s.a);
	if (e != DRAPE_OK)
		return e;
	scn_pop(c, old);
	const cJSON *b = cJSON_GetArrayItem(v, 1);
	old = scn_push_index(c, 1);
	if (cJSON_IsArray(b)) {
		if (cJSON_GetArraySize(b) != 3)
			return scn_fail(c, DRAPE_EINVAL, "%s", shape);
		const cJSON *e0 = cJSON_GetArrayItem(b, 0), *e1 = cJSON_GetArrayItem(b, 1);
		size_t o2 = scn_push_index(c, 0);
		if ((e = scn_vertex(c, e0, &s.b0)) != DRAPE_OK)
			return e;
		scn_pop(c, o2);
		o2 = scn_push_index(c, 1);
		if ((e = scn_vertex(c, e1, &s.b1)) != DRAPE_OK)
			return e;
		scn_pop(c, o2);
		o2 = scn_push_index(c, 2);
		if ((e = scn_float_in(c, cJSON_GetArrayItem(b, 2), 0.0, 1.0, 0, &s.t)) != DRAPE_OK)
			return e;
		scn_pop(c, o2);
		if (s.b0 == s.b1)
			return scn_fail(c, DRAPE_EINVAL, "the edge's two vertices are both %u", s.b0);
	} else {
		if ((e = scn_vertex(c, b, &s.b0)) != DRAPE_OK)
			return e;
		s.b1 = s.b0;
	}
	scn_pop(c, old);
	if (s.a == s.b0 || s.a == s.b1)
		return scn_fail(c, DRAPE_EINVAL, "vertex %u is stitched to itself", s.a);
	*out = s;
	return DRAPE_OK;
}

static drape_err scn_stitches(scn *c, const cJSON *a)
{
	if (!cJSON_IsArray(a))
		return scn_fail(c, DRAPE_EINVAL,
				"must be an array of [a, b] or [a, [e0, e1, t]] entries");
	int n = cJSON_GetArraySize(a);
	if (n == 0)
		return DRAPE_OK;
	/* The solver takes at most 4 per vertex (drape_sim_create). */
	if ((uint64_t)n > 4u * (uint64_t)c->s.cloth.vertex_count + 64u)
		return scn_fail(c, DRAPE_ELIMIT, "%d stitches for %u vertices: at most 4 per vertex", n,
				c->s.cloth.vertex_count);
	drape_stitch *st = malloc((size_t)n * sizeof *st);
	if (st == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory for %d stitches", n);
	for (int i = 0; i < n; i++) {
		size_t old = scn_push_index(c, (size_t)i);
		drape_err e = scn_stitch(c, cJSON_GetArrayItem(a, i), &st[i]);
		if (e != DRAPE_OK) {
			free(st);
			return e;
		}
		scn_pop(c, old);
	}
	c->s.stitches = st;
	c->s.stitch_count = c->s.explicit_stitches = (uint32_t)n;
	return DRAPE_OK;
}

/* "seams": {"distance": D, "weld": W}: the stitches drape_seams_find finds
 * on the start shape, after the explicit ones. */
static drape_err scn_seams(scn *c, const cJSON *o)
{
	static const char *const keys[] = {"distance", "weld", NULL};
	drape_err e;
	if ((e = scn_want_object(c, o)) || (e = scn_keys(c, o, keys)))
		return e;
	float distance = 0.0f, weld = -1.0f;
	const cJSON *d = scn_get(o, "distance");
	if (d == NULL)
		return scn_fail(c, DRAPE_EINVAL,
				"needs \"distance\": how far apart (m) the sides of a seam may be");
	SCN_FIELD(c, o, "distance", scn_float_in(c, v_, 0.0, 10.0, 1, &distance));
	SCN_FIELD(c, o, "weld", scn_float_in(c, v_, 0.0, 10.0, 0, &weld));
	if (weld < 0.0f)
		weld = distance < SCN_SEAM_WELD ? distance : SCN_SEAM_WELD;
	drape_stitch *found = NULL;
	uint32_t n = 0;
	drape_error se;
	const drape_obj_mesh *m = &c->s.cloth;
	e = drape_seams_find(m->positions, m->vertex_count, m->triangles, m->triangle_count, distance,
			     weld, &found, &n, &c->s.seams, &se);
	if (e != DRAPE_OK)
		return scn_fail(c, e, "%s", se.message);
	c->s.has_seams = 1;
	if (n == 0)
		return DRAPE_OK;
	uint64_t total = (uint64_t)c->s.stitch_count + n;
	if (total > 4u * (uint64_t)m->vertex_count + 64u) {
		free(found);
		return scn_fail(c, DRAPE_ELIMIT, "%llu stitches for %u vertices: at most 4 per vertex",
				(unsigned long long)total, m->vertex_count);
	}
	drape_stitch *all = realloc(c->s.stitches, (size_t)total * sizeof *all);
	if (all == NULL) {
		free(found);
		return scn_fail(c, DRAPE_ENOMEM, "out of memory for %llu stitches",
				(unsigned long long)total);
	}
	memcpy(all + c->s.stitch_count, found, (size_t)n * sizeof *found);
	free(found);
	c->s.stitches = all;
	c->s.stitch_count = (uint32_t)total;
	return DRAPE_OK;
}

/* "rest_mesh": an OBJ of the same topology as the cloth (the flat pattern,
 * or the garment as modelled), under the cloth's own scale and translate. */
static drape_err scn_rest_mesh(scn *c, const cJSON *v, const scn_xform *x)
{
	drape_obj_mesh r;
	memset(&r, 0, sizeof r);
	drape_err e = scn_load_mesh(c, v, &r, NULL);
	if (e != DRAPE_OK)
		return e;
	const drape_obj_mesh *m = &c->s.cloth;
	if (r.vertex_count != m->vertex_count || r.triangle_count != m->triangle_count) {
		e = scn_fail(c, DRAPE_EINVAL,
			     "%u vertices and %u triangles, the cloth has %u and %u: a rest mesh must "
			     "have the cloth's topology",
			     r.vertex_count, r.triangle_count, m->vertex_count, m->triangle_count);
		drape_obj_free(&r);
		return e;
	}
	for (uint32_t t = 0; t < m->triangle_count; t++)
		if (memcmp(&r.triangles[3 * (size_t)t], &m->triangles[3 * (size_t)t],
			   3 * sizeof *r.triangles) != 0) {
			e = scn_fail(c, DRAPE_EINVAL,
				     "triangle %u is (%u, %u, %u), the cloth's is (%u, %u, %u): a rest "
				     "mesh must have the cloth's topology",
				     t, r.triangles[3 * (size_t)t], r.triangles[3 * (size_t)t + 1],
				     r.triangles[3 * (size_t)t + 2], m->triangles[3 * (size_t)t],
				     m->triangles[3 * (size_t)t + 1], m->triangles[3 * (size_t)t + 2]);
			drape_obj_free(&r);
			return e;
		}
	if ((e = scn_transform(c, &r, x)) != DRAPE_OK) {
		drape_obj_free(&r);
		return e;
	}
	/* Keep the positions, free the rest of the mesh. */
	c->s.rest_positions = r.positions;
	r.positions = NULL;
	drape_obj_free(&r);
	return DRAPE_OK;
}

drape_err scn_garment(scn *c, const cJSON *cl, const scn_xform *x)
{
	c->s.stitch_k = 0.0f;
	c->s.sew_speed = 0.5f;
	SCN_FIELD(c, cl, "stitch_stiffness", scn_float_in(c, v_, 0.0, 1e12, 0, &c->s.stitch_k));
	SCN_FIELD(c, cl, "sew_speed", scn_float_in(c, v_, 0.0, 1e3, 0, &c->s.sew_speed));
	SCN_FIELD(c, cl, "stitches", scn_stitches(c, v_));
	SCN_FIELD(c, cl, "seams", scn_seams(c, v_));
	SCN_FIELD(c, cl, "rest_mesh", scn_rest_mesh(c, v_, x));
	return DRAPE_OK;
}
