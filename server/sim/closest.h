/*
 * Closest point of a triangle to a point, shared by the deforming contact
 * (deform.c), the skin binding (skin.c) and the "shows through" measure
 * (bodythrough.c). Inline: it runs once per candidate triangle in the
 * contact's gather.
 */
#ifndef DRAPE_SIM_CLOSEST_H
#define DRAPE_SIM_CLOSEST_H

#include "server/sim/vec.h"

/* Closest point of triangle (a, b, c) to q (Ericson, "Real-Time Collision
 * Detection", 5.1.5): its barycentric coordinates in bary; returns the
 * squared distance. */
static inline float sim_closest_on_triangle(sim_v3 q, sim_v3 a, sim_v3 b, sim_v3 c, float bary[3])
{
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), ap = v3_sub(q, a);
	float d1 = v3_dot(ab, ap), d2 = v3_dot(ac, ap);
	float u, v, w;
	if (d1 <= 0.0f && d2 <= 0.0f) {
		u = 1.0f, v = 0.0f, w = 0.0f;
		goto done;
	}
	sim_v3 bp = v3_sub(q, b);
	float d3 = v3_dot(ab, bp), d4 = v3_dot(ac, bp);
	if (d3 >= 0.0f && d4 <= d3) {
		u = 0.0f, v = 1.0f, w = 0.0f;
		goto done;
	}
	float vc = d1 * d4 - d3 * d2;
	if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
		float s = d1 / (d1 - d3);
		u = 1.0f - s, v = s, w = 0.0f;
		goto done;
	}
	sim_v3 cp = v3_sub(q, c);
	float d5 = v3_dot(ab, cp), d6 = v3_dot(ac, cp);
	if (d6 >= 0.0f && d5 <= d6) {
		u = 0.0f, v = 0.0f, w = 1.0f;
		goto done;
	}
	float vb = d5 * d2 - d1 * d6;
	if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
		float s = d2 / (d2 - d6);
		u = 1.0f - s, v = 0.0f, w = s;
		goto done;
	}
	float va = d3 * d6 - d5 * d4;
	if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
		float s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
		u = 0.0f, v = 1.0f - s, w = s;
		goto done;
	}
	{
		float den = va + vb + vc;
		if (!(den > 0.0f)) {
			/* A degenerate triangle: its first vertex stands for it. */
			u = 1.0f, v = 0.0f, w = 0.0f;
			goto done;
		}
		v = vb / den;
		w = vc / den;
		u = 1.0f - v - w;
	}
done:
	bary[0] = u;
	bary[1] = v;
	bary[2] = w;
	sim_v3 cpt = v3_add(v3_add(v3_scale(a, u), v3_scale(b, v)), v3_scale(c, w));
	sim_v3 dq = v3_sub(q, cpt);
	return v3_dot(dq, dq);
}

#endif
