/*
 * Rest scale per vertex (drape_sim_desc.rest_scale): shrink a cuff,
 * loosen a sleeve, without a second mesh. An edge's rest length is its
 * length in the rest shape times the mean of its two vertices' scales; so
 * is a shear wing's. The tethers and the strain limit measure from the
 * stretch rest lengths (tether.c builds its distances from them after this
 * runs), so they follow. Bending rest angles are unchanged (a uniformly
 * scaled patch keeps its angles), and so are the areas and masses: the
 * cloth is the same cloth, cut smaller or larger. The XPBD stiffness per
 * edge (compliance.c: k A / L^2) is taken before the scale, and is the same
 * after it (A and L^2 scale alike).
 */
#include "server/sim/internal.h"

#include <math.h>

drape_err sim_rest_scale_validate(const drape_sim_desc *d, drape_error *err)
{
	if (d->rest_scale == NULL)
		return DRAPE_OK;
	for (uint32_t i = 0; i < d->vertex_count; i++) {
		float s = d->rest_scale[i];
		if (!(s > 0.0f) || !isfinite(s))
			return drape_error_setf(err, DRAPE_EINVAL,
						"rest_scale[%u]: %g must be finite and > 0", i,
						(double)s);
	}
	return DRAPE_OK;
}

void sim_rest_scale_apply(drape_sim *sim, const float *scale,
			  uint32_t (*caller)(const drape_sim *, uint32_t))
{
	if (scale == NULL)
		return;
	for (uint32_t i = 0; i < sim->stretch_count; i++) {
		sim_dist *c = &sim->stretch[i];
		c->rest *= 0.5f * (scale[caller(sim, c->a)] + scale[caller(sim, c->b)]);
	}
	for (uint32_t i = 0; i < sim->shear_count; i++) {
		sim_dist *c = &sim->shear[i];
		c->rest *= 0.5f * (scale[caller(sim, c->a)] + scale[caller(sim, c->b)]);
	}
}
