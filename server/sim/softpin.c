/*
 * Soft pins: a pinned vertex pulled towards its target with a stiffness
 * instead of held there.
 *
 * A soft pin of stiffness k (N/m) is the XPBD zero-length constraint
 * (Macklin, Müller and Chentanez 2016) of its vertex to the fixed target
 * point q (the vertex's start position),
 *
 *     C = |x - q|,   gradient n = (x - q) / |x - q|,
 *
 * with compliance alpha = 1 / (k dt^2). Only the vertex moves (the target
 * has no mass), so the generalised inverse mass is w. At rest under a
 * constant force f the per-substep correction w * lambda cancels the
 * force's displacement w f dt^2, and C + alpha lambda = 0 gives C = |f| / k:
 * Hooke's law, whatever the substeps and iterations. A hanging mass m
 * settles m g / k below its target.
 *
 * A hard pin (stiffness 0) keeps the inverse mass 0 of sim.c; a soft pin
 * keeps its vertex's mass, so it is not "pinned" for the tethers or for
 * drape_sim_attach_pins. Like the stitches the constraints run serially,
 * in the order given, once per iteration after the material's sweep.
 */
#include "server/sim/internal.h"

#include <math.h>
#include <stdlib.h>

drape_err sim_softpin_validate(const drape_sim_desc *d, drape_error *err)
{
	if (d->pin_stiffness == NULL)
		return DRAPE_OK;
	/* The pin that last named each vertex, + 1 (0: none so far), to
	 * refuse a soft pin on a vertex pinned twice in linear time. */
	uint32_t *seen = calloc((size_t)d->vertex_count + 1, sizeof *seen);
	if (seen == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "pin_stiffness: out of memory");
	drape_err rc = DRAPE_OK;
	for (uint32_t i = 0; i < d->pin_count && rc == DRAPE_OK; i++) {
		float k = d->pin_stiffness[i];
		uint32_t v = d->pins[i];
		if (!(k >= 0.0f) || !isfinite(k))
			rc = drape_error_setf(err, DRAPE_EINVAL,
					      "pin_stiffness[%u]: %g must be finite and >= 0 "
					      "(N/m; 0 is a hard pin)",
					      i, (double)k);
		else if (seen[v] != 0 && (k > 0.0f || d->pin_stiffness[seen[v] - 1] > 0.0f))
			rc = drape_error_setf(err, DRAPE_EINVAL,
					      "pin_stiffness[%u]: vertex %u is pinned twice (pins[%u]), "
					      "once soft",
					      i, v, seen[v] - 1);
		seen[v] = i + 1;
	}
	free(seen);
	return rc;
}

int sim_softpin_is_soft(const drape_sim_desc *d, uint32_t i)
{
	return d->pin_stiffness != NULL && d->pin_stiffness[i] > 0.0f;
}

drape_err sim_softpin_build(drape_sim *sim, const drape_sim_desc *d,
			    uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err)
{
	sim->softpin_count = 0;
	uint32_t count = 0;
	for (uint32_t i = 0; i < d->pin_count; i++)
		count += sim_softpin_is_soft(d, i) != 0;
	if (count == 0)
		return DRAPE_OK;
	sim->softpin = malloc((size_t)count * sizeof *sim->softpin);
	if (sim->softpin == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "pin_stiffness: cannot allocate %u soft pins",
					count);
	for (uint32_t i = 0; i < d->pin_count; i++) {
		if (!sim_softpin_is_soft(d, i))
			continue;
		sim_softpin *s = &sim->softpin[sim->softpin_count++];
		s->v = internal(sim, d->pins[i]);
		s->q = v3_of4(sim->x[s->v]);
		s->k = d->pin_stiffness[i];
		s->lambda = 0.0f;
	}
	return DRAPE_OK;
}

void sim_softpin_free(drape_sim *sim)
{
	free(sim->softpin);
	sim->softpin = NULL;
	sim->softpin_count = 0;
}

void sim_softpin_reset(drape_sim *sim)
{
	for (uint32_t i = 0; i < sim->softpin_count; i++)
		sim->softpin[i].lambda = 0.0f;
}

void sim_softpin_project(drape_sim *sim, float dt)
{
	sim_vec4 *restrict p = sim->p;
	for (uint32_t i = 0; i < sim->softpin_count; i++) {
		sim_softpin *s = &sim->softpin[i];
		const float w = p[s->v].w;
		sim_v3 d = v3_sub(v3_of4(p[s->v]), s->q);
		float len = v3_len(d);
		if (!(len > 0.0f) || !(w > 0.0f))
			continue;
		const float alpha = 1.0f / (s->k * dt * dt);
		float dl = (-len - alpha * s->lambda) / (w + alpha);
		s->lambda += dl;
		sim_v3 n = v3_scale(d, w * dl / len);
		p[s->v].x += n.x;
		p[s->v].y += n.y;
		p[s->v].z += n.z;
	}
}

size_t sim_softpin_bytes(const drape_sim *sim)
{
	return (size_t)sim->softpin_count * sizeof(sim_softpin);
}
