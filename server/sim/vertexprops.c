/*
 * Properties painted per vertex (drape_sim_desc.stiffness_scale,
 * vertex_thickness, vertex_friction): a stiff collar, a hem that rests
 * higher, a grippy cuff, from OBJ groups or arrays on the wire.
 *
 * Stiffness. A constraint's stiffness under the physical material is the
 * material's times a geometric factor (compliance.c, xpbd.geo); the scale
 * multiplies that factor once, at create, by the harmonic mean of the
 * record's vertices' factors of its kind (stretch, shear or bend: a cloth of
 * another fabric differs from the session's material by three ratios),
 * s_e = m / sum(1 / s_i). For an edge that is
 * exact: each vertex owns half of the edge, and two half-springs of
 * stiffness 2 k s_a and 2 k s_b in series have the stiffness
 * 2 k s_a s_b / (s_a + s_b), compliances adding (the rule compliance.c
 * already uses for warp and weft). So a strip whose lower half is four
 * times stiffer stretches as the two halves in series predict, the
 * interface at the middle of the edges that cross it
 * (test_sim_props.c). The arithmetic mean would make the crossing edges
 * too stiff. The tethers' slack (tether.c) takes the softest stretch factor, so a
 * soft patch is not held by tethers sized for the stiff rest.
 *
 * Thickness and friction are read per contact by the collider projection
 * (collider.c) from arrays in internal vertex order held here; the
 * self-collision keeps its own copy of the thickness (selfthick.c).
 */
#include "server/sim/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static drape_err check_array(const float *a, uint32_t n, uint32_t tuple, const char *field, float lo,
			     float hi, int allow_minus_one, int open_lo, drape_error *err)
{
	if (a == NULL)
		return DRAPE_OK;
	for (uint64_t k = 0; k < (uint64_t)n * tuple; k++) {
		float s = a[k];
		if (allow_minus_one && s == -1.0f)
			continue;
		int ok = isfinite(s) && (open_lo ? s > lo : s >= lo) && s <= hi;
		if (ok)
			continue;
		char at[32];
		if (tuple > 1)
			snprintf(at, sizeof at, "[%u][%u]", (unsigned)(k / tuple), (unsigned)(k % tuple));
		else
			snprintf(at, sizeof at, "[%u]", (unsigned)k);
		return drape_error_setf(err, DRAPE_EINVAL, "%s%s: %g must be finite and in %s%g, %g]%s",
					field, at, (double)s, open_lo ? "(" : "[", (double)lo, (double)hi,
					allow_minus_one ? ", or -1 for the collider's" : "");
	}
	return DRAPE_OK;
}

drape_err sim_vertex_props_validate(const drape_sim_desc *d, drape_error *err)
{
	if (d->stiffness_scale != NULL && d->params.model != DRAPE_MODEL_XPBD)
		return drape_error_setf(err, DRAPE_EINVAL,
					"stiffness_scale: needs the physical material (model xpbd); "
					"the pbd model's stiffness is one number for the cloth");
	drape_err rc = check_array(d->stiffness_scale, d->vertex_count, 3, "stiffness_scale", 0.0f,
				   DRAPE_SIM_MAX_STIFFNESS_SCALE, 0, 1, err);
	if (rc == DRAPE_OK)
		rc = check_array(d->vertex_thickness, d->vertex_count, 1, "vertex_thickness", 0.0f, 1.0f,
				 0, 0, err);
	if (rc == DRAPE_OK)
		rc = check_array(d->vertex_friction, d->vertex_count, 1, "vertex_friction", 0.0f,
				 DRAPE_SIM_MAX_FRICTION, 1, 0, err);
	return rc;
}

/* The harmonic mean of the factors of kind `kind` (0 stretch, 1 shear,
 * 2 bend) of m vertices (internal numbers). */
static double harmonic(const float *scale, int kind, const uint32_t *v, int m, const drape_sim *sim,
		       uint32_t (*caller)(const drape_sim *, uint32_t))
{
	double inv = 0.0;
	for (int i = 0; i < m; i++)
		inv += 1.0 / (double)scale[3 * (size_t)caller(sim, v[i]) + kind];
	return (double)m / inv;
}

void sim_stiffness_scale_apply(drape_sim *sim, const float *scale,
			       uint32_t (*caller)(const drape_sim *, uint32_t))
{
	sim->stiffness_min = 1.0f;
	if (scale == NULL)
		return;
	float lo = INFINITY;
	for (uint32_t i = 0; i < sim->n; i++)
		lo = scale[3 * (size_t)i] < lo ? scale[3 * (size_t)i] : lo;
	sim->stiffness_min = lo;
	sim_xpbd *X = &sim->xpbd;
	for (uint32_t i = 0; i < sim->stretch_count; i++) {
		const uint32_t v[2] = {sim->stretch[i].a, sim->stretch[i].b};
		X->stretch_geo[i] = (float)((double)X->stretch_geo[i] * harmonic(scale, 0, v, 2, sim, caller));
	}
	for (uint32_t i = 0; i < sim->shear_count; i++) {
		const uint32_t v[2] = {sim->shear[i].a, sim->shear[i].b};
		X->shear_geo[i] = (float)((double)X->shear_geo[i] * harmonic(scale, 1, v, 2, sim, caller));
	}
	for (uint32_t i = 0; i < sim->bend_count; i++)
		X->bend_geo[i] =
			(float)((double)X->bend_geo[i] * harmonic(scale, 2, sim->bend[i].v, 4, sim, caller));
}

/* A copy of a per-vertex array in internal order; NULL stays NULL. */
static drape_err internal_copy(const drape_sim *sim, const float *a, float **out,
			       uint32_t (*caller)(const drape_sim *, uint32_t), drape_error *err)
{
	*out = NULL;
	if (a == NULL)
		return DRAPE_OK;
	float *c = malloc((size_t)sim->n * sizeof *c);
	if (c == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "vertex properties: out of memory");
	for (uint32_t i = 0; i < sim->n; i++)
		c[i] = a[caller(sim, i)];
	*out = c;
	return DRAPE_OK;
}

drape_err sim_vertex_props_build(drape_sim *sim, const drape_sim_desc *d,
				 uint32_t (*caller)(const drape_sim *, uint32_t), drape_error *err)
{
	drape_err rc = internal_copy(sim, d->vertex_thickness, &sim->vthick, caller, err);
	if (rc == DRAPE_OK)
		rc = internal_copy(sim, d->vertex_friction, &sim->vfric, caller, err);
	sim->colliders.cloth_thickness = sim->vthick;
	sim->colliders.cloth_friction = sim->vfric;
	return rc;
}

void sim_vertex_props_free(drape_sim *sim)
{
	free(sim->vthick);
	free(sim->vfric);
	sim->vthick = sim->vfric = NULL;
}

size_t sim_vertex_props_bytes(const drape_sim *sim)
{
	return ((sim->vthick != NULL) + (sim->vfric != NULL)) * (size_t)sim->n * sizeof(float);
}
