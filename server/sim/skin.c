/*
 * Points bound to a collider's skin (deform.h): the binding of a point to
 * the nearest point of the rest pose, and the triangle frame its offset is
 * measured in. Where a bound point is at a substep is deform.c's
 * (sim_deform_skin_point).
 */
#include <math.h>
#include <string.h>

#include "server/sim/deform.h"

static inline sim_v3 vat(const float *pos, uint32_t v)
{
	return v3(pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]);
}

static sim_v3 unit(sim_v3 a, float *len)
{
	float l = v3_len(a);
	*len = l;
	return l > 0.0f ? v3_scale(a, 1.0f / l) : v3(0, 0, 0);
}

/* The triangle's own frame: first edge direction, normal x edge, normal.
 * Returns 0 for a degenerate triangle. */
int sim_skin_frame(sim_v3 a, sim_v3 b, sim_v3 c, sim_v3 f[3])
{
	float lu, ln;
	sim_v3 u = unit(v3_sub(b, a), &lu);
	sim_v3 n = unit(v3_cross(v3_sub(b, a), v3_sub(c, a)), &ln);
	if (!(lu > 0.0f) || !(ln > 0.0f))
		return 0;
	f[0] = u;
	f[1] = v3_cross(n, u);
	f[2] = n;
	return 1;
}

void sim_skin_bind(const float *rest, const uint32_t *tris, uint32_t nt, const float local[3],
		   sim_skin *out)
{
	sim_v3 q = v3(local[0], local[1], local[2]);
	float best = INFINITY;
	memset(out, 0, sizeof *out);
	out->b[0] = 1.0f;
	for (uint32_t t = 0; t < nt; t++) {
		const uint32_t *v = &tris[3 * (size_t)t];
		sim_v3 a = vat(rest, v[0]), b = vat(rest, v[1]), c = vat(rest, v[2]), f[3];
		if (!sim_skin_frame(a, b, c, f))
			continue;
		float bary[3];
		float d2 = sim_closest_on_triangle(q, a, b, c, bary);
		if (!(d2 < best))
			continue;
		best = d2;
		out->tri = t;
		memcpy(out->b, bary, sizeof bary);
		sim_v3 cp = v3_add(v3_add(v3_scale(a, bary[0]), v3_scale(b, bary[1])), v3_scale(c, bary[2]));
		sim_v3 o = v3_sub(q, cp);
		out->off[0] = v3_dot(o, f[0]);
		out->off[1] = v3_dot(o, f[1]);
		out->off[2] = v3_dot(o, f[2]);
	}
}
