/*
 * Dihedral bending, Müller, Heidelberger, Hennix, Ratcliff, "Position Based
 * Dynamics" (VRIPHYS 2006), section 4.2 and the appendix.
 *
 * Two triangles (p1, p2, p3) and (p1, p2, p4) share the edge p1 p2. With p1
 * moved to the origin, n1 = (p2 x p3) / |p2 x p3|, n2 = (p2 x p4) / |p2 x p4|
 * and d = n1 . n2, the constraint is C = acos(d) - phi0. The appendix gives
 *
 *   q3 = (p2 x n2 + (n1 x p2) d) / |p2 x p3|
 *   q4 = (p2 x n1 + (n2 x p2) d) / |p2 x p4|
 *   q2 = -(p3 x n2 + (n1 x p3) d) / |p2 x p3| - (p4 x n1 + (n2 x p4) d) / |p2 x p4|
 *   q1 = -q2 - q3 - q4
 *
 * which are the gradients of -d, so grad_i C = q_i / sqrt(1 - d^2), and the
 * projection (equation (9) of the paper) is
 *
 *   dp_i = -w_i sqrt(1 - d^2) (acos(d) - phi0) / (sum_j w_j |q_j|^2) q_i.
 *
 * Where the prototype differs: it normalised with |v| + EPSILON (biasing every
 * normal), took sqrt(1 - d^2) of an unclamped d (NaN once rounding gives
 * |d| > 1) and divided by a vanishing denominator at flat pairs. Here
 * sqrt(1 - d^2) is computed as |n1 x n2|, which equals it exactly in real
 * arithmetic but keeps its precision near d = +-1, the angle is
 * atan2(|n1 x n2|, d) (no acos domain error, and accurate near 0 and pi), and the projection is skipped
 * when a normal has zero length or the pair is flat or fully folded: there
 * q_i and sqrt(1 - d^2) both vanish and the direction is 0/0.
 */
#include "server/sim/internal.h"

#include <float.h>

/* Below this |n1 x n2| (the sine of the dihedral angle) the pair counts as
 * flat or fully folded, about 0.006 degrees from it. */
#define SIM_BEND_MIN_SINE 1e-4f

/*
 * atan2(y, x) for y >= 0, in [0, pi]: the Cephes atanf range reduction and
 * polynomial (about 1e-7 relative error), a quarter of the cost of libm's
 * atan2f, which dominated the bending projection. Only ever called with the
 * sine y = |n1 x n2| >= 0 and the cosine x = n1 . n2.
 */
static float angle_of(float y, float x)
{
	float ax = fabsf(x);
	if (!(y > 0.0f))
		return x < 0.0f ? (float)M_PI : 0.0f;
	/* atan(y / ax) in [0, pi/2] with t = y / ax, reduced as in Cephes. */
	float base, t;
	if (y > 2.414213562373095f * ax) {
		base = (float)M_PI_2;
		t = -ax / y;
	} else if (y > 0.4142135623730950f * ax) {
		base = (float)M_PI_4;
		t = (y - ax) / (y + ax);
	} else {
		base = 0.0f;
		t = y / ax;
	}
	float z = t * t;
	float a = base + ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z -
			   3.33329491539e-1f) * z * t + t);
	return x < 0.0f ? (float)M_PI - a : a;
}

/* q_i of the appendix for p1 = origin, plus the normals' sine and cosine.
 * Returns 0 when a triangle is degenerate. */
static int bend_q(const sim_v3 p[4], sim_v3 q[4], float *sine, float *cosine)
{
	sim_v3 e2 = v3_sub(p[1], p[0]), e3 = v3_sub(p[2], p[0]), e4 = v3_sub(p[3], p[0]);
	sim_v3 c23 = v3_cross(e2, e3), c24 = v3_cross(e2, e4);
	float l23 = v3_len(c23), l24 = v3_len(c24);
	if (!(l23 > FLT_MIN) || !(l24 > FLT_MIN))
		return 0;
	float i23 = 1.0f / l23, i24 = 1.0f / l24;
	sim_v3 n1 = v3_scale(c23, i23), n2 = v3_scale(c24, i24);
	float d = v3_dot(n1, n2);
	d = d > 1.0f ? 1.0f : (d < -1.0f ? -1.0f : d);
	/* The appendix's four cross-product pairs share two vectors:
	 * p x n2 + (n1 x p) d = p x (n2 - d n1), and likewise for n1. */
	sim_v3 m1 = v3_scale(v3_sub(n2, v3_scale(n1, d)), i23);
	sim_v3 m2 = v3_scale(v3_sub(n1, v3_scale(n2, d)), i24);
	q[2] = v3_cross(e2, m1);
	q[3] = v3_cross(e2, m2);
	q[1] = v3_scale(v3_add(v3_cross(e3, m1), v3_cross(e4, m2)), -1.0f);
	q[0] = v3_scale(v3_add(v3_add(q[1], q[2]), q[3]), -1.0f);
	*sine = v3_len(v3_cross(n1, n2));
	*cosine = d;
	return 1;
}

int sim_bend_gradient(const sim_v3 p[4], sim_v3 grad[4], float *phi)
{
	sim_v3 q[4];
	float s, d;
	if (!bend_q(p, q, &s, &d) || !(s > SIM_BEND_MIN_SINE))
		return 0;
	for (int i = 0; i < 4; i++)
		grad[i] = v3_scale(q[i], 1.0f / s);
	*phi = angle_of(s, d);
	return 1;
}

float sim_bend_rest_angle(sim_v3 p1, sim_v3 p2, sim_v3 p3, sim_v3 p4)
{
	sim_v3 e2 = v3_sub(p2, p1);
	sim_v3 c23 = v3_cross(e2, v3_sub(p3, p1)), c24 = v3_cross(e2, v3_sub(p4, p1));
	float l23 = v3_len(c23), l24 = v3_len(c24);
	if (!(l23 > FLT_MIN) || !(l24 > FLT_MIN))
		return (float)M_PI;
	sim_v3 n1 = v3_scale(c23, 1.0f / l23), n2 = v3_scale(c24, 1.0f / l24);
	return angle_of(v3_len(v3_cross(n1, n2)), v3_dot(n1, n2));
}

void sim_bend_project(sim_vec4 *restrict p, const sim_bend *c, float k)
{
	sim_v3 x[4], q[4];
	float w[4];
	for (int i = 0; i < 4; i++) {
		sim_vec4 v = p[c->v[i]];
		x[i] = v3(v.x, v.y, v.z);
		w[i] = v.w;
	}
	float s, d;
	if (!bend_q(x, q, &s, &d) || !(s > SIM_BEND_MIN_SINE))
		return;
	float denom = 0.0f;
	for (int i = 0; i < 4; i++)
		denom += w[i] * v3_dot(q[i], q[i]);
	if (!(denom > FLT_MIN))
		return;
	float phi = angle_of(s, d);
	float lambda = k * s * (phi - c->rest) / denom;
	for (int i = 0; i < 4; i++) {
		float f = lambda * w[i];
		sim_vec4 *v = &p[c->v[i]];
		v->x -= f * q[i].x;
		v->y -= f * q[i].y;
		v->z -= f * q[i].z;
	}
}

void sim_bend_project_all(sim_vec4 *restrict p, const sim_bend *c, const sim_colouring *col,
			  float k)
{
	for (uint32_t g = 0; g < col->colours; g++)
		for (uint32_t i = col->start[g]; i < col->start[g + 1]; i++)
			sim_bend_project(p, &c[i], k);
}
