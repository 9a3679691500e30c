/*
 * Distance constraints C = |p_a - p_b| - rest, used for stretch (every unique
 * edge) and shear (the two wing vertices of every interior edge).
 *
 * Müller et al. 2006, section 3.3: with s = C / (w_a + w_b),
 *     dp_a = -w_a s n,  dp_b = +w_b s n,  n = (p_a - p_b) / |p_a - p_b|,
 * scaled by the per-projection stiffness k'. The corrections are weighted by
 * inverse mass, so the centre of mass is kept and a pinned vertex (w = 0)
 * never moves.
 */
#include "server/sim/internal.h"

void sim_dist_project(sim_vec4 *restrict p, const sim_dist *c, float k)
{
	sim_vec4 a = p[c->a], b = p[c->b];
	float wsum = a.w + b.w;
	if (wsum <= 0.0f)
		return;
	float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
	float len = sqrtf(dx * dx + dy * dy + dz * dz);
	/* Coincident end points have no direction to push along; the other
	 * constraints separate them again. */
	if (!(len > 0.0f))
		return;
	/* The division by len normalises (dx, dy, dz) in the same factor. */
	float s = k * (len - c->rest) / (len * wsum);
	float sa = s * a.w, sb = s * b.w;
	p[c->a].x = a.x - sa * dx;
	p[c->a].y = a.y - sa * dy;
	p[c->a].z = a.z - sa * dz;
	p[c->b].x = b.x + sb * dx;
	p[c->b].y = b.y + sb * dy;
	p[c->b].z = b.z + sb * dz;
}

void sim_dist_project_all(sim_vec4 *restrict p, const sim_dist *c, const sim_colouring *col,
			  float k)
{
	/* Records of one colour share no vertex: this inner loop is the unit a
	 * thread or a SIMD lane group may take whole (except the overflow
	 * colour, which must stay serial). */
	for (uint32_t g = 0; g < col->colours; g++)
		for (uint32_t i = col->start[g]; i < col->start[g + 1]; i++)
			sim_dist_project(p, &c[i], k);
}

void sim_lra_project_all(sim_vec4 *restrict p, const sim_dist *c, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		sim_vec4 a = p[c[i].a];
		const sim_vec4 b = p[c[i].b];
		if (a.w == 0.0f)
			continue;
		float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
		float len = sqrtf(dx * dx + dy * dy + dz * dz);
		/* Unilateral: only a vertex farther than its tether moves, and
		 * it moves the whole way back, as in Kim et al. 2012, eq. (3). */
		if (!(len > c[i].rest))
			continue;
		float s = (len - c[i].rest) / len;
		p[c[i].a].x = a.x - s * dx;
		p[c[i].a].y = a.y - s * dy;
		p[c[i].a].z = a.z - s * dz;
	}
}
