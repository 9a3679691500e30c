/*
 * Dihedral bending, Müller, Heidelberger, Hennix, Ratcliff, "Position Based
 * Dynamics" (VRIPHYS 2006), section 4.2, with the gradient in the closed
 * form of Bridson, Marino, Fedkiw, "Simulation of Clothing with Folds and
 * Wrinkles" (SCA 2003), section 4, which needs no normalised normals.
 *
 * Two triangles (p1, p2, p3) and (p1, p2, p4) share the edge e = p2 - p1.
 * With e3 = p3 - p1 and e4 = p4 - p1, the unnormalised normals are
 * N1 = e x e3 and N2 = e x e4, and the constraint is C = phi - phi0 with phi
 * the angle between N1 and N2, in [0, pi] (pi for a flat pair, since both
 * normals are taken with the same edge orientation). By the identity
 * (e x e3) x (e x e4) = V e with V = e . (e3 x e4) = N1 . e4,
 *
 *   |N1 x N2| = |e| |V|,   so   phi = atan2(|e| |V|, N1 . N2),
 *
 * with no normalisation at all (the common factor |N1| |N2| cancels). A wing
 * moving out of its triangle's plane turns that triangle about the edge by
 * its displacement over its height |N1| / |e|, and the edge vertices carry
 * the opposite turn in proportion to where the wing projects onto the edge,
 * t3 = (e3 . e) / |e|^2 (Bridson et al., eq. (4)-(7)):
 *
 *   g3 = -sgn(V) |e| N1 / |N1|^2,   g4 = +sgn(V) |e| N2 / |N2|^2,
 *   g2 = -(t3 g3 + t4 g4),          g1 = -(g2 + g3 + g4),
 *
 * which is exactly the appendix's q_i / sqrt(1 - d^2) of Müller 2006, the
 * gradient of acos(n1 . n2), at a fraction of the cost: one square root and
 * three reciprocals instead of three square roots, and no cancellation in
 * n2 - d n1 near flat. The projection (equation (9) of the paper) is
 *
 *   dp_i = -k w_i (phi - phi0) / (sum_j w_j |g_j|^2) g_i.
 *
 * A pair is skipped when a triangle or the edge has zero length (no normal
 * or no axis), and when it is within SIM_BEND_MIN_ANGLE of flat or of fully
 * folded: there V = 0 and the gradient's direction, the sign of V, is
 * undefined. Where the prototype differed: it normalised with |v| + EPSILON
 * (biasing every normal), took acos of an unclamped cosine (NaN once
 * rounding gave |d| > 1) and divided by a vanishing denominator at flat
 * pairs.
 */
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "server/sim/simd.h"

#include <float.h>
#include <string.h>

/* Within this angle (radians) of flat or fully folded a pair is skipped:
 * about 0.006 degrees, where the sine of the angle is 1e-4. */
#define SIM_BEND_MIN_ANGLE 1e-4f

/*
 * atan2(y, x) for y >= 0, in [0, pi]: the Cephes atanf range reduction and
 * polynomial (about 1e-7 relative error), a quarter of the cost of libm's
 * atan2f. Only ever called with y = |e| |V| >= 0 and x = N1 . N2, which
 * scale together, so the ratio is what matters.
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

/* The angle phi of four points (file comment), pi when a triangle or the
 * edge is degenerate. *ok is 0 when the pair must not be projected. */
static float bend_angle(const sim_v3 p[4], sim_v3 *e, sim_v3 *e3, sim_v3 *e4, sim_v3 *n1,
			sim_v3 *n2, float *vol, float *ee, int *ok)
{
	*e = v3_sub(p[1], p[0]);
	*e3 = v3_sub(p[2], p[0]);
	*e4 = v3_sub(p[3], p[0]);
	*n1 = v3_cross(*e, *e3);
	*n2 = v3_cross(*e, *e4);
	*ee = v3_dot(*e, *e);
	*vol = v3_dot(*n1, *e4);
	float el = sqrtf(*ee);
	float phi = angle_of(el * fabsf(*vol), v3_dot(*n1, *n2));
	float a2 = v3_dot(*n1, *n1), b2 = v3_dot(*n2, *n2);
	int shaped = a2 > FLT_MIN && b2 > FLT_MIN && *ee > FLT_MIN;
	*ok = shaped && phi > SIM_BEND_MIN_ANGLE && phi < (float)M_PI - SIM_BEND_MIN_ANGLE;
	return shaped ? phi : (float)M_PI;
}

/* Bridson's gradient (file comment) of a pair bend_angle accepted. */
static void bend_grad(sim_v3 e, sim_v3 e3, sim_v3 e4, sim_v3 n1, sim_v3 n2, float vol, float ee,
		      sim_v3 g[4])
{
	float el = sqrtf(ee);
	float s = vol < 0.0f ? -el : el;
	float ie = 1.0f / ee;
	g[2] = v3_scale(n1, -s / v3_dot(n1, n1));
	g[3] = v3_scale(n2, s / v3_dot(n2, n2));
	float t3 = v3_dot(e3, e) * ie, t4 = v3_dot(e4, e) * ie;
	g[1] = v3_scale(v3_add(v3_scale(g[2], t3), v3_scale(g[3], t4)), -1.0f);
	g[0] = v3_scale(v3_add(v3_add(g[1], g[2]), g[3]), -1.0f);
}

int sim_bend_gradient(const sim_v3 p[4], sim_v3 grad[4], float *phi)
{
	sim_v3 e, e3, e4, n1, n2;
	float vol, ee;
	int ok;
	float a = bend_angle(p, &e, &e3, &e4, &n1, &n2, &vol, &ee, &ok);
	if (!ok)
		return 0;
	bend_grad(e, e3, e4, n1, n2, vol, ee, grad);
	*phi = a;
	return 1;
}

float sim_bend_rest_angle(sim_v3 p1, sim_v3 p2, sim_v3 p3, sim_v3 p4)
{
	const sim_v3 p[4] = {p1, p2, p3, p4};
	sim_v3 e, e3, e4, n1, n2;
	float vol, ee;
	int ok;
	return bend_angle(p, &e, &e3, &e4, &n1, &n2, &vol, &ee, &ok);
}

void sim_bend_project(sim_vec4 *restrict p, const sim_bend *c, float k)
{
	sim_v3 x[4], g[4];
	float w[4];
	for (int i = 0; i < 4; i++) {
		sim_vec4 v = p[c->v[i]];
		x[i] = v3(v.x, v.y, v.z);
		w[i] = v.w;
	}
	sim_v3 e, e3, e4, n1, n2;
	float vol, ee;
	int ok;
	float phi = bend_angle(x, &e, &e3, &e4, &n1, &n2, &vol, &ee, &ok);
	if (!ok)
		return;
	bend_grad(e, e3, e4, n1, n2, vol, ee, g);
	float denom = 0.0f;
	for (int i = 0; i < 4; i++)
		denom += w[i] * v3_dot(g[i], g[i]);
	/* Zero when every vertex is pinned; infinite for a sliver so thin
	 * that its gradient overflows: either way nothing sensible to do. */
	if (!(denom > FLT_MIN && denom <= FLT_MAX))
		return;
	float lambda = k * (phi - c->rest) / denom;
	for (int i = 0; i < 4; i++) {
		float f = lambda * w[i];
		sim_vec4 *v = &p[c->v[i]];
		v->x -= f * g[i].x;
		v->y -= f * g[i].y;
		v->z -= f * g[i].z;
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

/* The geometry of bend_angle and bend_grad for SIMD_W records r[0..SIMD_W-1],
 * lane by lane and in the same order: positions x, inverse masses w, the
 * angle phi, gradients g, the denominator sum_j w_j |g_j|^2 and the lanes
 * the scalar code would project (ok). */
SIMD_KERNEL void bend_geom(const sim_vec4 *restrict p, const sim_bend *r, simd_v3 x[4], simd_f w[4],
			   simd_v3 g[4], simd_f *phi_out, simd_f *denom_out, simd_m *ok_out)
{
	const simd_f zero = simd_splat(0.0f), one = simd_splat(1.0f), minus_one = simd_splat(-1.0f);
	const simd_f tiny = simd_splat(FLT_MIN);
	simd_gather_s(p, SIMD_REC(r, .v[0]), &x[0].x, &x[0].y, &x[0].z, &w[0]);
	simd_gather_s(p, SIMD_REC(r, .v[1]), &x[1].x, &x[1].y, &x[1].z, &w[1]);
	simd_gather_s(p, SIMD_REC(r, .v[2]), &x[2].x, &x[2].y, &x[2].z, &w[2]);
	simd_gather_s(p, SIMD_REC(r, .v[3]), &x[3].x, &x[3].y, &x[3].z, &w[3]);
	simd_v3 e = simd_v3_sub(x[1], x[0]), e3 = simd_v3_sub(x[2], x[0]), e4 = simd_v3_sub(x[3], x[0]);
	simd_v3 n1 = simd_v3_cross(e, e3), n2 = simd_v3_cross(e, e4);
	simd_f ee = simd_v3_dot(e, e);
	simd_f vol = simd_v3_dot(n1, e4);
	simd_f el = simd_sqrt(ee);
	simd_f phi = angle_of_w(simd_mul(el, simd_abs(vol)), simd_v3_dot(n1, n2));
	simd_f a2 = simd_v3_dot(n1, n1), b2 = simd_v3_dot(n2, n2);
	simd_m ok = simd_and(simd_and(simd_gt(a2, tiny), simd_gt(b2, tiny)), simd_gt(ee, tiny));
	ok = simd_and(ok, simd_and(simd_gt(phi, simd_splat(SIM_BEND_MIN_ANGLE)),
				   simd_lt(phi, simd_splat((float)M_PI - SIM_BEND_MIN_ANGLE))));
	simd_f s = simd_select(simd_lt(vol, zero), simd_neg(el), el);
	simd_f ie = simd_div(one, ee);
	g[2] = simd_v3_scale(n1, simd_div(simd_neg(s), a2));
	g[3] = simd_v3_scale(n2, simd_div(s, b2));
	simd_f t3 = simd_mul(simd_v3_dot(e3, e), ie), t4 = simd_mul(simd_v3_dot(e4, e), ie);
	g[1] = simd_v3_scale(simd_v3_add(simd_v3_scale(g[2], t3), simd_v3_scale(g[3], t4)), minus_one);
	g[0] = simd_v3_scale(simd_v3_add(simd_v3_add(g[1], g[2]), g[3]), minus_one);
	simd_f denom = zero;
#pragma GCC unroll 4
	for (int v = 0; v < 4; v++)
		denom = simd_add(denom, simd_mul(w[v], simd_v3_dot(g[v], g[v])));
	ok = simd_and(ok, simd_and(simd_gt(denom, tiny), simd_le(denom, simd_splat(FLT_MAX))));
	*phi_out = phi;
	*denom_out = denom;
	*ok_out = ok;
}

/* The expressions of sim_bend_project for SIMD_W records r[0..SIMD_W-1],
 * lane by lane and in the same order; lanes the scalar code would skip
 * keep their positions, and only the first n lanes are stored. */
SIMD_KERNEL void bend_group(sim_vec4 *restrict p, const sim_bend *r, uint32_t n, simd_f k)
{
	simd_v3 x[4], g[4];
	simd_f w[4], phi, denom;
	simd_m ok;
	bend_geom(p, r, x, w, g, &phi, &denom, &ok);
	simd_f lambda = simd_div(simd_mul(k, simd_sub(phi, SIMD_FLT(r, .rest))), denom);
#pragma GCC unroll 4
	for (int v = 0; v < 4; v++) {
		simd_f f = simd_mul(lambda, w[v]);
		simd_scatter_s(p, SIMD_REC(r, .v[v]), n, simd_select(ok, simd_sub(x[v].x, simd_mul(f, g[v].x)), x[v].x),
			     simd_select(ok, simd_sub(x[v].y, simd_mul(f, g[v].y)), x[v].y),
			     simd_select(ok, simd_sub(x[v].z, simd_mul(f, g[v].z)), x[v].z), w[v]);
	}
}

/*
 * The XPBD bending constraint (xpbd.c) uses the signed angle
 * theta = sgn(V) (pi - phi), 0 for a flat pair, instead of phi: with a
 * stiffness that is physical rather than a small fraction, the unsigned
 * phi - phi0, whose gradient flips with sgn(V) as a flat pair folds to the
 * other side, makes the pair chatter across flat and pumps energy into the
 * cloth. grad theta = -sgn(V) grad phi, which is Bridson's gradient with
 * sgn(V) |e| replaced by |e| (file comment): g3 = |e| N1 / |N1|^2,
 * g4 = -|e| N2 / |N2|^2, g2 = -(t3 g3 + t4 g4), g1 = -(g2 + g3 + g4). It is
 * defined at flat, so only degenerate pairs are skipped. The rest value is
 * the signed rest angle (compliance.c, bend_rest).
 *
 * dlambda = (-kt C - lambda) / (kt sum_j w_j |g_j|^2 + 1), dp_i = w_i g_i
 * dlambda, with C = theta - theta0.
 */
static void xbend_one(sim_vec4 *restrict p, const sim_bend *c, float rest, float kt, float *lam)
{
	sim_v3 x[4], g[4];
	float w[4];
	for (int i = 0; i < 4; i++) {
		sim_vec4 v = p[c->v[i]];
		x[i] = v3(v.x, v.y, v.z);
		w[i] = v.w;
	}
	sim_v3 e = v3_sub(x[1], x[0]), e3 = v3_sub(x[2], x[0]), e4 = v3_sub(x[3], x[0]);
	sim_v3 n1 = v3_cross(e, e3), n2 = v3_cross(e, e4);
	float ee = v3_dot(e, e);
	float vol = v3_dot(n1, e4);
	float el = sqrtf(ee);
	float phi = angle_of(el * fabsf(vol), v3_dot(n1, n2));
	float a2 = v3_dot(n1, n1), b2 = v3_dot(n2, n2);
	if (!(a2 > FLT_MIN && b2 > FLT_MIN && ee > FLT_MIN))
		return;
	float half = (float)M_PI - phi;
	float theta = vol < 0.0f ? -half : half;
	float ie = 1.0f / ee;
	g[2] = v3_scale(n1, el / a2);
	g[3] = v3_scale(n2, -el / b2);
	float t3 = v3_dot(e3, e) * ie, t4 = v3_dot(e4, e) * ie;
	g[1] = v3_scale(v3_add(v3_scale(g[2], t3), v3_scale(g[3], t4)), -1.0f);
	g[0] = v3_scale(v3_add(v3_add(g[1], g[2]), g[3]), -1.0f);
	float denom = 0.0f;
	for (int i = 0; i < 4; i++)
		denom += w[i] * v3_dot(g[i], g[i]);
	if (!(denom > FLT_MIN && denom <= FLT_MAX))
		return;
	float dl = (-(kt * (theta - rest)) - *lam) / (kt * denom + 1.0f);
	*lam = *lam + dl;
	for (int i = 0; i < 4; i++) {
		float f = dl * w[i];
		sim_vec4 *v = &p[c->v[i]];
		v->x += f * g[i].x;
		v->y += f * g[i].y;
		v->z += f * g[i].z;
	}
}

/* xbend_one for SIMD_W records, lane by lane; the first n lanes stored. */
SIMD_KERNEL void xbend_group(sim_vec4 *restrict p, const sim_bend *r, const float *rest_,
			     const float *kt_, float *lam_, uint32_t n)
{
	const simd_f zero = simd_splat(0.0f), one = simd_splat(1.0f), minus_one = simd_splat(-1.0f);
	const simd_f tiny = simd_splat(FLT_MIN);
	simd_v3 x[4], g[4];
	simd_f w[4];
	simd_gather_s(p, SIMD_REC(r, .v[0]), &x[0].x, &x[0].y, &x[0].z, &w[0]);
	simd_gather_s(p, SIMD_REC(r, .v[1]), &x[1].x, &x[1].y, &x[1].z, &w[1]);
	simd_gather_s(p, SIMD_REC(r, .v[2]), &x[2].x, &x[2].y, &x[2].z, &w[2]);
	simd_gather_s(p, SIMD_REC(r, .v[3]), &x[3].x, &x[3].y, &x[3].z, &w[3]);
	simd_v3 e = simd_v3_sub(x[1], x[0]), e3 = simd_v3_sub(x[2], x[0]), e4 = simd_v3_sub(x[3], x[0]);
	simd_v3 n1 = simd_v3_cross(e, e3), n2 = simd_v3_cross(e, e4);
	simd_f ee = simd_v3_dot(e, e);
	simd_f vol = simd_v3_dot(n1, e4);
	simd_f el = simd_sqrt(ee);
	simd_f phi = angle_of_w(simd_mul(el, simd_abs(vol)), simd_v3_dot(n1, n2));
	simd_f a2 = simd_v3_dot(n1, n1), b2 = simd_v3_dot(n2, n2);
	simd_m ok = simd_and(simd_and(simd_gt(a2, tiny), simd_gt(b2, tiny)), simd_gt(ee, tiny));
	simd_f half = simd_sub(simd_splat((float)M_PI), phi);
	simd_f theta = simd_select(simd_lt(vol, zero), simd_neg(half), half);
	simd_f ie = simd_div(one, ee);
	g[2] = simd_v3_scale(n1, simd_div(el, a2));
	g[3] = simd_v3_scale(n2, simd_div(simd_neg(el), b2));
	simd_f t3 = simd_mul(simd_v3_dot(e3, e), ie), t4 = simd_mul(simd_v3_dot(e4, e), ie);
	g[1] = simd_v3_scale(simd_v3_add(simd_v3_scale(g[2], t3), simd_v3_scale(g[3], t4)), minus_one);
	g[0] = simd_v3_scale(simd_v3_add(simd_v3_add(g[1], g[2]), g[3]), minus_one);
	simd_f denom = zero;
#pragma GCC unroll 4
	for (int v = 0; v < 4; v++)
		denom = simd_add(denom, simd_mul(w[v], simd_v3_dot(g[v], g[v])));
	ok = simd_and(ok, simd_and(simd_gt(denom, tiny), simd_le(denom, simd_splat(FLT_MAX))));
	simd_f kt = simd_load(kt_), lam = simd_load(lam_);
	simd_f C = simd_sub(theta, simd_load(rest_));
	simd_f dl = simd_div(simd_sub(simd_neg(simd_mul(kt, C)), lam), simd_add(simd_mul(kt, denom), one));
	simd_f nlam = simd_select(ok, simd_add(lam, dl), lam);
#pragma GCC unroll 4
	for (int v = 0; v < 4; v++) {
		simd_f f = simd_mul(dl, w[v]);
		simd_scatter_s(p, SIMD_REC(r, .v[v]), n, simd_select(ok, simd_add(x[v].x, simd_mul(f, g[v].x)), x[v].x),
			     simd_select(ok, simd_add(x[v].y, simd_mul(f, g[v].y)), x[v].y),
			     simd_select(ok, simd_add(x[v].z, simd_mul(f, g[v].z)), x[v].z), w[v]);
	}
	float tmp[SIMD_W];
	simd_store(tmp, nlam);
	memcpy(lam_, tmp, n * sizeof *tmp);
}

/* The signed rest angle theta0 of a record's rest positions. */
float sim_bend_signed_rest(sim_v3 p1, sim_v3 p2, sim_v3 p3, sim_v3 p4)
{
	sim_v3 e = v3_sub(p2, p1), e3 = v3_sub(p3, p1), e4 = v3_sub(p4, p1);
	sim_v3 n1 = v3_cross(e, e3), n2 = v3_cross(e, e4);
	float vol = v3_dot(n1, e4);
	float phi = angle_of(sqrtf(v3_dot(e, e)) * fabsf(vol), v3_dot(n1, n2));
	float half = (float)M_PI - phi;
	return vol < 0.0f ? -half : half;
}

void sim_bend_xrange(sim_vec4 *restrict p, const sim_bend *c, const float *rest, const float *kt,
		     float *lam, uint32_t count, int scalar)
{
	if (scalar) {
		for (uint32_t i = 0; i < count; i++)
			xbend_one(p, &c[i], rest[i], kt[i], &lam[i]);
		return;
	}
	uint32_t i = 0;
	for (; i + SIMD_W <= count; i += SIMD_W)
		xbend_group(p, &c[i], &rest[i], &kt[i], &lam[i], SIMD_W);
	if (i < count) {
		/* Padded to a full group by repeating the last record
		 * (computed, never stored). */
		sim_bend tmp[SIMD_W];
		float r[SIMD_W], t[SIMD_W], l[SIMD_W];
		for (uint32_t j = 0; j < SIMD_W; j++) {
			uint32_t s = i + j < count ? i + j : count - 1;
			tmp[j] = c[s];
			r[j] = rest[s];
			t[j] = kt[s];
			l[j] = lam[s];
		}
		xbend_group(p, tmp, r, t, l, count - i);
		memcpy(&lam[i], l, (count - i) * sizeof *l);
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

void sim_bend_range(sim_vec4 *restrict p, const sim_bend *c, uint32_t count, float k, int scalar)
{
	if (scalar) {
		for (uint32_t i = 0; i < count; i++)
			sim_bend_project(p, &c[i], k);
		return;
	}
	bend_job job = {p, c, k};
	bend_block(&job, 0, count);
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
