/*
 * Properties of the cloth per OBJ group in a scene (client/SCENE.md,
 * "Garments"): "mass_scale" multiplies the areal-density mass of a group's
 * vertices (a heavy hem, a light yoke), "rest_scale" the rest lengths of
 * their edges (a shrunk cuff, a loose sleeve: drape_sim_desc.rest_scale,
 * sent as it is). The scene keeps the per-vertex
 * factors; drape_scene_inv_mass turns them into the inverse masses the
 * session is created with, from the density the scene resolves to when it
 * is submitted (so `drape run --material` is honoured).
 */
#include "client/scene_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An object of group name -> number > 0 into a per-vertex factor array
 * (vertex_count floats, 1 where no group names the vertex; a vertex in
 * several of the groups takes the one listed last). */
static drape_err scn_group_range(scn *c, const cJSON *v, double hi, int lo_open, float **out)
{
	const drape_obj_mesh *m = &c->s.cloth;
	drape_err e;
	if ((e = scn_want_object(c, v)) != DRAPE_OK)
		return e;
	float *f = malloc((size_t)m->vertex_count * sizeof *f + 1);
	if (f == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < m->vertex_count; i++)
		f[i] = 1.0f;
	*out = f;
	for (const cJSON *it = v->child; it != NULL; it = it->next) {
		size_t old = scn_push_key(c, it->string);
		const drape_obj_group *g = drape_obj_find_group(m, it->string);
		if (g == NULL) {
			char list[120];
			size_t n = 0;
			list[0] = '\0';
			for (uint32_t i = 0; i < m->group_count && n + 1 < sizeof list; i++) {
				int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
						 m->groups[i].name);
				if (w < 0)
					break;
				n += (size_t)w;
			}
			return scn_fail(c, DRAPE_ENOTFOUND, "no group '%.40s' in the cloth mesh (%s%s)",
					it->string, m->group_count ? "groups: " : "it has no groups", list);
		}
		float s = 1.0f;
		if ((e = scn_float_in(c, it, 0.0, hi, lo_open, &s)) != DRAPE_OK)
			return e;
		for (uint32_t i = 0; i < g->count; i++)
			f[g->vertices[i]] = s;
		scn_pop(c, old);
	}
	return DRAPE_OK;
}

/* Factors in (0, hi]. */
static drape_err scn_group_factors(scn *c, const cJSON *v, double hi, float **out)
{
	return scn_group_range(c, v, hi, 1, out);
}

/* An object of group name -> value in [0, hi] into a per-vertex array
 * whose other vertices hold `fill` (a frictionless group, a group with no
 * thickness). */
static drape_err scn_group_values(scn *c, const cJSON *v, double hi, float fill, float **out)
{
	drape_err e = scn_group_range(c, v, hi, 0, out);
	if (e != DRAPE_OK)
		return e;
	const drape_obj_mesh *m = &c->s.cloth;
	float *f = *out;
	uint8_t *named = calloc((size_t)m->vertex_count + 1, 1);
	if (named == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	for (const cJSON *it = v->child; it != NULL; it = it->next) {
		const drape_obj_group *g = drape_obj_find_group(m, it->string);
		for (uint32_t i = 0; g != NULL && i < g->count; i++)
			named[g->vertices[i]] = 1;
	}
	for (uint32_t i = 0; i < m->vertex_count; i++)
		if (!named[i])
			f[i] = fill;
	free(named);
	return DRAPE_OK;
}

/* "stiffness_scale": {group: factor}, the same factor on stretch, shear
 * and bending (vertex_count * 3). */
static drape_err scn_stiffness_groups(scn *c, const cJSON *v)
{
	float *f = NULL;
	drape_err e = scn_group_factors(c, v, 1e6, &f);
	if (e != DRAPE_OK) {
		free(f);
		return e;
	}
	const uint32_t n = c->s.cloth.vertex_count;
	float *s = malloc(3 * (size_t)n * sizeof *s + 1);
	if (s == NULL) {
		free(f);
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		s[3 * (size_t)i] = s[3 * (size_t)i + 1] = s[3 * (size_t)i + 2] = f[i];
	free(f);
	free(c->s.stiffness_scale);
	c->s.stiffness_scale = s;
	return DRAPE_OK;
}

/* "friction" as a number: every vertex of the cloth. */
static drape_err scn_friction_all(scn *c, const cJSON *v)
{
	float mu;
	drape_err e = scn_float_in(c, v, 0.0, SCN_MAX_FRICTION, 0, &mu);
	if (e != DRAPE_OK)
		return e;
	const uint32_t n = c->s.cloth.vertex_count;
	float *f = malloc((size_t)n * sizeof *f + 1);
	if (f == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		f[i] = mu;
	c->s.vertex_friction = f;
	return DRAPE_OK;
}

/* A per-vertex array of `tuple` ones, when *a is NULL. */
static drape_err ones(scn *c, float **a, uint32_t tuple)
{
	if (*a != NULL)
		return DRAPE_OK;
	const size_t n = (size_t)c->s.cloth.vertex_count * tuple;
	float *f = malloc(n * sizeof *f + 1);
	if (f == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		f[i] = 1.0f;
	*a = f;
	return DRAPE_OK;
}

/* "materials": {group: preset}: the group's vertices get the preset's
 * stretch, shear and bending constants and density as ratios to the
 * cloth's material (stiffness_scale, mass_scale), on top of the factors
 * those keys gave. */
static drape_err scn_group_materials(scn *c, const cJSON *v)
{
	const drape_obj_mesh *m = &c->s.cloth;
	const drape_sim_params *base = &c->s.params;
	drape_err e;
	if ((e = scn_want_object(c, v)) != DRAPE_OK)
		return e;
	for (const cJSON *it = v->child; it != NULL; it = it->next) {
		size_t old = scn_push_key(c, it->string);
		const drape_obj_group *g = drape_obj_find_group(m, it->string);
		if (g == NULL)
			return scn_fail(c, DRAPE_ENOTFOUND, "no group '%.40s' in the cloth mesh",
					it->string);
		if (!cJSON_IsString(it))
			return scn_fail(c, DRAPE_EINVAL, "must be a preset name (a string)");
		drape_sim_params p = *base;
		drape_error pe;
		if ((e = drape_material_preset(it->valuestring, &p, &pe)) != DRAPE_OK) {
			const char *msg = strncmp(pe.message, "material: ", 10) == 0 ? pe.message + 10
										   : pe.message;
			return scn_fail(c, e, "%s", msg);
		}
		const double r[3] = {(double)p.stretch_k / base->stretch_k,
				     (double)p.shear_k / base->shear_k, (double)p.bend_k / base->bend_k};
		for (int k = 0; k < 3; k++)
			if (!(r[k] > 0.0) || !isfinite(r[k]))
				return scn_fail(c, DRAPE_EINVAL,
						"\"%s\" has no ratio to the cloth's material (a constant of "
						"the cloth's is 0)",
						it->valuestring);
		if ((e = ones(c, &c->s.stiffness_scale, 3)) != DRAPE_OK ||
		    (e = ones(c, &c->s.mass_scale, 1)) != DRAPE_OK)
			return e;
		const float dr = (float)((double)p.density / base->density);
		for (uint32_t i = 0; i < g->count; i++) {
			const uint32_t vx = g->vertices[i];
			for (int k = 0; k < 3; k++)
				c->s.stiffness_scale[3 * (size_t)vx + k] *= (float)r[k];
			c->s.mass_scale[vx] *= dr;
		}
		scn_pop(c, old);
	}
	return DRAPE_OK;
}

drape_err scn_props(scn *c, const cJSON *cl)
{
	SCN_FIELD(c, cl, "mass_scale", scn_group_factors(c, v_, 1e6, &c->s.mass_scale));
	SCN_FIELD(c, cl, "rest_scale", scn_group_factors(c, v_, 100.0, &c->s.rest_scale));
	const cJSON *ss = scn_get(cl, "stiffness_scale");
	if (ss != NULL && c->s.params.model != DRAPE_MODEL_XPBD) {
		scn_push_key(c, "stiffness_scale");
		return scn_fail(c, DRAPE_EINVAL,
				"needs a \"material\" (the pbd model's stiffness is one number for "
				"the cloth)");
	}
	SCN_FIELD(c, cl, "stiffness_scale", scn_stiffness_groups(c, v_));
	const cJSON *gm = scn_get(cl, "materials");
	if (gm != NULL && c->s.params.model != DRAPE_MODEL_XPBD) {
		scn_push_key(c, "materials");
		return scn_fail(c, DRAPE_EINVAL,
				"needs a \"material\" for the cloth (the groups' are ratios to it)");
	}
	SCN_FIELD(c, cl, "materials", scn_group_materials(c, v_));
	const cJSON *th = scn_get(cl, "thickness");
	if (th != NULL && cJSON_IsObject(th))
		SCN_FIELD(c, cl, "thickness",
			  scn_group_values(c, v_, 1.0, c->s.params.thickness, &c->s.vertex_thickness));
	const cJSON *fr = scn_get(cl, "friction");
	if (fr != NULL && cJSON_IsObject(fr))
		SCN_FIELD(c, cl, "friction",
			  scn_group_values(c, v_, SCN_MAX_FRICTION, -1.0f, &c->s.vertex_friction));
	else
		SCN_FIELD(c, cl, "friction", scn_friction_all(c, v_));
	return DRAPE_OK;
}

drape_err drape_scene_inv_mass(const drape_scene *sc, float **out, drape_error *err)
{
	*out = NULL;
	if (sc->mass_scale == NULL)
		return DRAPE_OK;
	const drape_obj_mesh *m = &sc->cloth;
	const float *x = sc->rest_positions != NULL ? sc->rest_positions : m->positions;
	double *mass = calloc((size_t)m->vertex_count + 1, sizeof *mass);
	float *w = malloc(((size_t)m->vertex_count + 1) * sizeof *w);
	if (mass == NULL || w == NULL) {
		free(mass);
		free(w);
		return drape_error_setf(err, DRAPE_ENOMEM, "mass_scale: out of memory for %u vertices",
					m->vertex_count);
	}
	/* The solver's own rule (sim.c, area_masses): a third of each
	 * triangle's rest area times the density per corner; a vertex in no
	 * triangle with area gets the mean. */
	for (uint32_t t = 0; t < m->triangle_count; t++) {
		const uint32_t *tri = &m->triangles[3 * (size_t)t];
		const float *a = &x[3 * (size_t)tri[0]], *b = &x[3 * (size_t)tri[1]],
			    *q = &x[3 * (size_t)tri[2]];
		double u[3], v[3];
		for (int k = 0; k < 3; k++) {
			u[k] = (double)b[k] - a[k];
			v[k] = (double)q[k] - a[k];
		}
		double cx = u[1] * v[2] - u[2] * v[1], cy = u[2] * v[0] - u[0] * v[2],
		       cz = u[0] * v[1] - u[1] * v[0];
		double third = (double)sc->params.density * 0.5 * sqrt(cx * cx + cy * cy + cz * cz) / 3.0;
		for (int k = 0; k < 3; k++)
			mass[tri[k]] += third;
	}
	double total = 0.0;
	uint32_t with = 0;
	for (uint32_t i = 0; i < m->vertex_count; i++)
		if (mass[i] > 0.0) {
			total += mass[i];
			with++;
		}
	double fallback = with ? total / with : (double)sc->params.density * 1e-4;
	for (uint32_t i = 0; i < m->vertex_count; i++) {
		double mi = (mass[i] > 0.0 ? mass[i] : fallback) * sc->mass_scale[i];
		w[i] = (float)(1.0 / mi);
	}
	free(mass);
	*out = w;
	return DRAPE_OK;
}
