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
#include "server/sim/pool.h"
#include "server/sim/simd.h"

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

/* ---- The fast sweep ------------------------------------------------------- */

/* angle_of, lane by lane: the three range-reduction branches become selects
 * of the same numerator, denominator and base, so each lane performs the
 * same division and polynomial as the scalar branch it would have taken. */
static inline simd_f angle_of_w(simd_f y, simd_f x)
{
	const simd_f zero = simd_splat(0.0f);
	simd_f ax = simd_abs(x);
	simd_m big = simd_gt(y, simd_mul(simd_splat(2.414213562373095f), ax));
	simd_m mid = simd_andnot(big, simd_gt(y, simd_mul(simd_splat(0.4142135623730950f), ax)));
	simd_f base = simd_select(big, simd_splat((float)M_PI_2),
				  simd_select(mid, simd_splat((float)M_PI_4), zero));
	simd_f num = simd_select(big, simd_neg(ax), simd_select(mid, simd_sub(y, ax), y));
	simd_f den = simd_select(big, y, simd_select(mid, simd_add(y, ax), ax));
	simd_f t = simd_div(num, den);
	simd_f z = simd_mul(t, t);
	simd_f poly = simd_sub(simd_mul(simd_splat(8.05374449538e-2f), z), simd_splat(1.38776856032e-1f));
	poly = simd_add(simd_mul(poly, z), simd_splat(1.99777106478e-1f));
	poly = simd_sub(simd_mul(poly, z), simd_splat(3.33329491539e-1f));
	simd_f a = simd_add(base, simd_add(simd_mul(simd_mul(poly, z), t), t));
	simd_f r = simd_select(simd_lt(x, zero), simd_sub(simd_splat((float)M_PI), a), a);
	/* y = 0 exactly: the angle is 0 or pi (never projected anyway). */
	simd_f flat = simd_select(simd_lt(x, zero), simd_splat((float)M_PI), zero);
	return simd_select(simd_gt(y, zero), r, flat);
}

typedef struct bend_job {
	sim_vec4 *p;
	const sim_bend *c;
	float k;
} bend_job;

/* The expressions of bend_q and sim_bend_project for SIMD_W records
 * r[0..SIMD_W-1], lane by lane and in the same order; lanes the scalar code
 * would skip keep their positions, and only the first n lanes are stored. */
static inline void bend_group(sim_vec4 *restrict p, const sim_bend *r, uint32_t n, simd_f k)
{
	const simd_f zero = simd_splat(0.0f), one = simd_splat(1.0f), minus_one = simd_splat(-1.0f);
	const uint32_t *idx[4] = {SIMD_IDX(r, .v[0]), SIMD_IDX(r, .v[1]), SIMD_IDX(r, .v[2]),
				  SIMD_IDX(r, .v[3])};
	simd_v3 x[4];
	simd_f w[4];
	for (int v = 0; v < 4; v++)
		simd_gather(p, idx[v], &x[v].x, &x[v].y, &x[v].z, &w[v]);
	simd_f rest = SIMD_FLT(r, .rest);
	simd_v3 e2 = simd_v3_sub(x[1], x[0]), e3 = simd_v3_sub(x[2], x[0]), e4 = simd_v3_sub(x[3], x[0]);
	simd_v3 c23 = simd_v3_cross(e2, e3), c24 = simd_v3_cross(e2, e4);
	simd_f l23 = simd_sqrt(simd_v3_dot(c23, c23)), l24 = simd_sqrt(simd_v3_dot(c24, c24));
	simd_m ok = simd_and(simd_gt(l23, simd_splat(FLT_MIN)), simd_gt(l24, simd_splat(FLT_MIN)));
	simd_f i23 = simd_div(one, l23), i24 = simd_div(one, l24);
	simd_v3 n1 = simd_v3_scale(c23, i23), n2 = simd_v3_scale(c24, i24);
	simd_f d = simd_min(simd_max(simd_v3_dot(n1, n2), minus_one), one);
	simd_v3 m1 = simd_v3_scale(simd_v3_sub(n2, simd_v3_scale(n1, d)), i23);
	simd_v3 m2 = simd_v3_scale(simd_v3_sub(n1, simd_v3_scale(n2, d)), i24);
	simd_v3 q[4];
	q[2] = simd_v3_cross(e2, m1);
	q[3] = simd_v3_cross(e2, m2);
	q[1] = simd_v3_scale(simd_v3_add(simd_v3_cross(e3, m1), simd_v3_cross(e4, m2)), minus_one);
	q[0] = simd_v3_scale(simd_v3_add(simd_v3_add(q[1], q[2]), q[3]), minus_one);
	simd_v3 sn = simd_v3_cross(n1, n2);
	simd_f s = simd_sqrt(simd_v3_dot(sn, sn));
	ok = simd_and(ok, simd_gt(s, simd_splat(SIM_BEND_MIN_SINE)));
	simd_f denom = zero;
	for (int v = 0; v < 4; v++)
		denom = simd_add(denom, simd_mul(w[v], simd_v3_dot(q[v], q[v])));
	ok = simd_and(ok, simd_gt(denom, simd_splat(FLT_MIN)));
	simd_f phi = angle_of_w(s, d);
	simd_f lambda = simd_div(simd_mul(simd_mul(k, s), simd_sub(phi, rest)), denom);
	for (int v = 0; v < 4; v++) {
		simd_f f = simd_mul(lambda, w[v]);
		simd_scatter(p, idx[v], n, simd_select(ok, simd_sub(x[v].x, simd_mul(f, q[v].x)), x[v].x),
			     simd_select(ok, simd_sub(x[v].y, simd_mul(f, q[v].y)), x[v].y),
			     simd_select(ok, simd_sub(x[v].z, simd_mul(f, q[v].z)), x[v].z), w[v]);
	}
}

static void bend_block(void *ctx, uint32_t begin, uint32_t end)
{
	const bend_job *J = ctx;
	const simd_f k = simd_splat(J->k);
	uint32_t i = begin;
	for (; i + SIMD_W <= end; i += SIMD_W)
		bend_group(J->p, &J->c[i], SIMD_W, k);
	if (i < end) {
		/* The last records of the colour, padded to a full group by
		 * repeating the last one (computed, never stored). */
		sim_bend tmp[SIMD_W];
		for (uint32_t l = 0; l < SIMD_W; l++)
			tmp[l] = J->c[i + l < end ? i + l : end - 1];
		bend_group(J->p, tmp, end - i, k);
	}
}

void sim_bend_solve(const drape_sim *sim)
{
	const sim_colouring *col = &sim->bend_col;
	if (sim->flags & SIM_CREATE_REFERENCE) {
		sim_bend_project_all(sim->p, sim->bend, col, sim->k_bend);
		return;
	}
	for (uint32_t g = 0; g < col->colours; g++) {
		uint32_t b = col->start[g], e = col->start[g + 1];
		if (col->overflow && g + 1 == col->colours) {
			for (uint32_t i = b; i < e; i++)
				sim_bend_project(sim->p, &sim->bend[i], sim->k_bend);
			continue;
		}
		bend_job job = {sim->p, sim->bend + b, sim->k_bend};
		sim_pool_for(sim->pool, e - b, sim_pool_block(sim->pool, e - b), bend_block, &job);
	}
}
