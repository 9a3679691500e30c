/* Exact signed distances of the analytic collider shapes; see shapes.h. */
#include "server/sim/shapes.h"

#include <math.h>

/* Below this length a direction is treated as undefined and replaced. */
#define SHAPE_TINY 1e-12f

/* A unit vector perpendicular to d, used where the gradient is undefined on a
 * capsule's axis: any perpendicular points straight out of the surface. */
static sim_v3 shape_perpendicular(sim_v3 d)
{
	sim_v3 t = fabsf(d.x) < 0.9f * v3_len(d) ? v3(1, 0, 0) : v3(0, 1, 0);
	sim_v3 c = v3_cross(d, t);
	float l = v3_len(c);
	return l > SHAPE_TINY ? v3_scale(c, 1.0f / l) : v3(0, 1, 0);
}

float sim_shape_plane(sim_v3 q, sim_v3 point, sim_v3 normal, sim_v3 *grad)
{
	*grad = normal;
	return v3_dot(v3_sub(q, point), normal);
}

float sim_shape_sphere(sim_v3 q, sim_v3 center, float radius, sim_v3 *grad)
{
	sim_v3 d = v3_sub(q, center);
	float l = v3_len(d);
	/* At the very centre every direction is equally short; pick +y (up) so
	 * a point there leaves the way gravity would least resist. */
	*grad = l > SHAPE_TINY ? v3_scale(d, 1.0f / l) : v3(0, 1, 0);
	return l - radius;
}

float sim_shape_box(sim_v3 q, sim_v3 center, sim_v3 half_extents, sim_v3 *grad)
{
	sim_v3 d = v3_sub(q, center);
	float s[3] = {d.x < 0 ? -1.0f : 1.0f, d.y < 0 ? -1.0f : 1.0f, d.z < 0 ? -1.0f : 1.0f};
	/* Distance of each coordinate beyond its face: positive outside the slab. */
	float e[3] = {fabsf(d.x) - half_extents.x, fabsf(d.y) - half_extents.y,
		      fabsf(d.z) - half_extents.z};
	if (e[0] > 0 || e[1] > 0 || e[2] > 0) {
		/* Outside: the nearest point is the clamp of q onto the box, so the
		 * distance is the length of the positive parts of e. */
		float o[3] = {fmaxf(e[0], 0) * s[0], fmaxf(e[1], 0) * s[1], fmaxf(e[2], 0) * s[2]};
		sim_v3 g = v3(o[0], o[1], o[2]);
		float l = v3_len(g);
		*grad = v3_scale(g, 1.0f / l);
		return l;
	}
	/* Inside: the nearest face is the one with the largest (least negative)
	 * e; its outward normal is the gradient. Ties go to the lower axis. */
	int k = 0;
	if (e[1] > e[k])
		k = 1;
	if (e[2] > e[k])
		k = 2;
	float g[3] = {0, 0, 0};
	g[k] = s[k];
	*grad = v3(g[0], g[1], g[2]);
	return e[k];
}

float sim_shape_capsule(sim_v3 q, sim_v3 a, sim_v3 b, float radius, sim_v3 *grad)
{
	sim_v3 ab = v3_sub(b, a);
	float len2 = v3_dot(ab, ab);
	float t = len2 > 0 ? v3_dot(v3_sub(q, a), ab) / len2 : 0.0f;
	t = fminf(fmaxf(t, 0.0f), 1.0f);
	sim_v3 c = v3_add(a, v3_scale(ab, t));
	sim_v3 d = v3_sub(q, c);
	float l = v3_len(d);
	if (l > SHAPE_TINY)
		*grad = v3_scale(d, 1.0f / l);
	else
		*grad = len2 > 0 ? shape_perpendicular(ab) : v3(0, 1, 0);
	return l - radius;
}
