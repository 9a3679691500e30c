/*
 * Stitches: zero-length ties that sew panels together.
 *
 * A stitch ties vertex a to the point q = (1 - t) b0 + t b1 of an edge (to
 * vertex b0 when b1 == b0), so the two sides of a seam of different
 * resolutions (a T-junction: a vertex of the fine side lands between two
 * vertices of the coarse one) close without remeshing. Each is an XPBD
 * constraint (Macklin, Müller and Chentanez 2016)
 *
 *     C = |x_a - q| - r(t),
 *
 * projected only while positive (a stitch pulls, never pushes), with
 * gradients n, -(1 - t) n, -t n (n the unit direction from q to x_a),
 * so the generalised inverse mass is w_a + (1 - t)^2 w_b0 + t^2 w_b1 and the
 * corrections, weighted by the inverse masses, sum to zero (momentum is
 * conserved). The compliance is 1/stitch_k (0 for a rigid stitch), scaled
 * by 1/dt^2, so a stitch's stiffness does not depend on the substeps.
 *
 * Sewing: a stitch whose ends start d0 apart (panels placed around a body)
 * has the rest length r(t) = max(0, d0 - sew_speed * t), t the simulated
 * time since create: the gap closes at sew_speed instead of in one substep,
 * which would fling the panels together. The time comes from the frame
 * counter, so a checkpointed session restored at frame F sews on exactly as
 * the uninterrupted run does.
 *
 * The constraints run serially after the sweep of the material, in the
 * order given, once per iteration: their count is that of a seam's
 * vertices, small next to the cloth's edges.
 */
#include "server/sim/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

drape_err sim_stitch_validate(const drape_sim_desc *d, drape_error *err)
{
	if (d->stitch_count > 0 && d->stitches == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "stitches: NULL with stitch_count %u",
					d->stitch_count);
	if (d->stitch_count > d->vertex_count * 4u + 64u)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"stitch_count: %u is more than 4 per vertex (%u vertices)",
					d->stitch_count, d->vertex_count);
	if (!(d->stitch_k >= 0.0f) || !isfinite(d->stitch_k))
		return drape_error_setf(err, DRAPE_EINVAL,
					"stitch_k: %g must be finite and >= 0 (0 is rigid)",
					(double)d->stitch_k);
	if (!(d->sew_speed >= 0.0f) || !isfinite(d->sew_speed))
		return drape_error_setf(err, DRAPE_EINVAL,
					"sew_speed: %g must be finite and >= 0 (m/s; 0 closes at once)",
					(double)d->sew_speed);
	for (uint32_t i = 0; i < d->stitch_count; i++) {
		const drape_stitch *s = &d->stitches[i];
		const uint32_t v[3] = {s->a, s->b0, s->b1};
		static const char *const name[3] = {"a", "b0", "b1"};
		for (int k = 0; k < 3; k++)
			if (v[k] >= d->vertex_count)
				return drape_error_setf(err, DRAPE_ERANGE,
							"stitches[%u].%s: vertex %u >= vertex_count %u",
							i, name[k], v[k], d->vertex_count);
		if (s->a == s->b0 || s->a == s->b1)
			return drape_error_setf(err, DRAPE_EINVAL,
						"stitches[%u]: vertex %u is stitched to itself", i,
						s->a);
		if (s->b1 != s->b0 && !(s->t >= 0.0f && s->t <= 1.0f))
			return drape_error_setf(err, DRAPE_EINVAL,
						"stitches[%u].t: %g is outside [0, 1]", i,
						(double)s->t);
	}
	return DRAPE_OK;
}

/* The point of the edge a stitch ties to, at positions p. */
static inline sim_v3 stitch_point(const sim_stitch *s, const sim_vec4 *p)
{
	sim_v3 b0 = v3_of4(p[s->b0]), b1 = v3_of4(p[s->b1]);
	return v3_add(v3_scale(b0, 1.0f - s->t), v3_scale(b1, s->t));
}

/* `internal` maps a caller's vertex to the one that moves for it (a weld's
 * representative, weld.c): the welds' own stitches are left out. */
drape_err sim_stitch_build(drape_sim *sim, const drape_sim_desc *d, uint32_t (*internal)(
				   const drape_sim *, uint32_t), drape_error *err)
{
	sim->stitch_count = 0;
	sim->stitch_k = d->stitch_k;
	sim->sew_speed = d->sew_speed;
	if (d->stitch_count == 0)
		return DRAPE_OK;
	sim->stitch = malloc((size_t)d->stitch_count * sizeof *sim->stitch);
	if (sim->stitch == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "stitches: cannot allocate %u",
					d->stitch_count);
	uint32_t kept = 0;
	for (uint32_t i = 0; i < d->stitch_count; i++) {
		const drape_stitch *in = &d->stitches[i];
		sim_stitch *s = &sim->stitch[kept];
		s->a = internal(sim, in->a);
		s->b0 = internal(sim, in->b0);
		s->b1 = internal(sim, in->b1);
		/* A weld made its ends one vertex (weld.c); a stitch whose end
		 * is welded to its own edge would only collapse that edge. */
		if (s->a == s->b0 || s->a == s->b1)
			continue;
		/* A vertex-vertex stitch is the edge point at t = 0. */
		s->t = in->b1 == in->b0 ? 0.0f : in->t;
		s->lambda = 0.0f;
		s->d0 = v3_len(v3_sub(v3_of4(sim->x[s->a]), stitch_point(s, sim->x)));
		kept++;
	}
	sim->stitch_count = kept;
	sim->topo.stitches = kept;
	return DRAPE_OK;
}

void sim_stitch_free(drape_sim *sim)
{
	free(sim->stitch);
	sim->stitch = NULL;
	sim->stitch_count = 0;
}

void sim_stitch_reset(drape_sim *sim)
{
	for (uint32_t i = 0; i < sim->stitch_count; i++)
		sim->stitch[i].lambda = 0.0f;
}

void sim_stitch_project(drape_sim *sim, float dt, float time)
{
	const float alpha = sim->stitch_k > 0.0f ? 1.0f / (sim->stitch_k * dt * dt) : 0.0f;
	const float sewn = sim->sew_speed > 0.0f ? sim->sew_speed * time : INFINITY;
	sim_vec4 *restrict p = sim->p;
	for (uint32_t i = 0; i < sim->stitch_count; i++) {
		sim_stitch *s = &sim->stitch[i];
		float rest = s->d0 - sewn;
		if (!(rest > 0.0f))
			rest = 0.0f;
		sim_v3 d = v3_sub(v3_of4(p[s->a]), stitch_point(s, p));
		float len = v3_len(d);
		float C = len - rest;
		if (!(C > 0.0f) || !(len > 0.0f))
			continue;
		float wa = p[s->a].w, w0 = p[s->b0].w * (1.0f - s->t), w1 = p[s->b1].w * s->t;
		float W = wa + w0 * (1.0f - s->t) + w1 * s->t;
		if (!(W + alpha > 0.0f))
			continue;
		float dl = (-C - alpha * s->lambda) / (W + alpha);
		s->lambda += dl;
		sim_v3 n = v3_scale(d, dl / len);
		p[s->a].x += wa * n.x;
		p[s->a].y += wa * n.y;
		p[s->a].z += wa * n.z;
		p[s->b0].x -= w0 * n.x;
		p[s->b0].y -= w0 * n.y;
		p[s->b0].z -= w0 * n.z;
		if (s->b1 != s->b0) {
			p[s->b1].x -= w1 * n.x;
			p[s->b1].y -= w1 * n.y;
			p[s->b1].z -= w1 * n.z;
		}
	}
}

size_t sim_stitch_bytes(const drape_sim *sim)
{
	return (size_t)sim->stitch_count * sizeof(sim_stitch);
}
