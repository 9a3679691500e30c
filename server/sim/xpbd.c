/*
 * The XPBD projections of the physical material (params.model ==
 * DRAPE_MODEL_XPBD): Macklin, Müller, Chentanez, "XPBD: Position-Based
 * Simulation of Compliant Constrained Dynamics" (MIG 2016), eq. (18):
 *
 *     dlambda = (-C - alpha~ lambda) / (sum_i w_i |grad_i C|^2 + alpha~),
 *     dp_i    = w_i grad_i C dlambda,             alpha~ = alpha / dt^2,
 *
 * with lambda reset to 0 at the start of every substep. Each record carries
 * kt = dt^2 / alpha = k_e dt^2 (kg), the per-constraint stiffness k_e
 * (compliance.c maps the fabric's continuum constants to it) times dt^2.
 * Multiplying numerator and denominator by kt gives the form used here,
 *
 *     dlambda = (-kt C - lambda) / (kt sum_i w_i |grad_i C|^2 + 1),
 *
 * which stays finite for kt = 0 (no stiffness: dlambda = -lambda = 0) and
 * tends to PBD's -C / sum w |grad C|^2 for a rigid constraint (kt -> inf).
 *
 * Distance records (stretch edges, shear wings): C = |p_a - p_b| - rest,
 * grad_a C = n = (p_a - p_b) / |p_a - p_b| = -grad_b C, so the denominator
 * is kt (w_a + w_b) + 1. A stretch edge has two stiffnesses, kt for
 * tension and kc for compression (compress_k: woven fabric buckles rather
 * than shortens), chosen by the sign of C. Bending records: C = phi - phi0,
 * the dihedral angle and its gradient of bend.c.
 *
 * Like the PBD kernels, the SIMD group functions compute lane by lane the
 * same correctly rounded operations in the same order as the scalar ones,
 * so every SIMD width and thread count gives the same bits. The per-record
 * kt, kc and lambda arrays run parallel to the records (same index), so the
 * lanes of a colour run load them contiguously.
 */
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "server/sim/simd.h"

#include <float.h>
#include <string.h>

/* ---- Distance ------------------------------------------------------------- */

static inline void xdist_one(sim_vec4 *restrict p, const sim_dist *c, float kt, float kc,
			     float *restrict lam)
{
	sim_vec4 a = p[c->a], b = p[c->b];
	float wsum = a.w + b.w;
	float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
	float len = sqrtf(dx * dx + dy * dy + dz * dz);
	/* Both ends pinned, or coincident ends (no direction): skipped. */
	if (!(wsum > 0.0f && len > 0.0f))
		return;
	float C = len - c->rest;
	float k = C < 0.0f ? kc : kt;
	float dl = (-(k * C) - *lam) / (k * wsum + 1.0f);
	*lam = *lam + dl;
	/* dp_a = w_a dl (d / len), dp_b = -w_b dl (d / len). */
	float s = dl / len;
	float sa = s * a.w, sb = s * b.w;
	p[c->a].x = a.x + sa * dx;
	p[c->a].y = a.y + sa * dy;
	p[c->a].z = a.z + sa * dz;
	p[c->b].x = b.x - sb * dx;
	p[c->b].y = b.y - sb * dy;
	p[c->b].z = b.z - sb * dz;
}

/* xdist_one for SIMD_W records, lane by lane; only the first n lanes are
 * stored (positions and lambdas). */
SIMD_KERNEL void xdist_group(sim_vec4 *restrict p, const sim_dist *r, const float *kt_,
			     const float *kc_, float *lam_, uint32_t n)
{
	const simd_f zero = simd_splat(0.0f), one = simd_splat(1.0f);
	simd_f ax, ay, az, aw, bx, by, bz, bw;
	simd_gather_s(p, SIMD_REC(r, .a), &ax, &ay, &az, &aw);
	simd_gather_s(p, SIMD_REC(r, .b), &bx, &by, &bz, &bw);
	simd_f rest = SIMD_FLT(r, .rest);
	simd_f kt = simd_load(kt_), kc = simd_load(kc_), lam = simd_load(lam_);
	simd_f wsum = simd_add(aw, bw);
	simd_f dx = simd_sub(ax, bx), dy = simd_sub(ay, by), dz = simd_sub(az, bz);
	simd_f len = simd_sqrt(simd_add(simd_add(simd_mul(dx, dx), simd_mul(dy, dy)), simd_mul(dz, dz)));
	simd_m ok = simd_and(simd_gt(wsum, zero), simd_gt(len, zero));
	simd_f C = simd_sub(len, rest);
	simd_f k = simd_select(simd_lt(C, zero), kc, kt);
	simd_f dl = simd_div(simd_sub(simd_neg(simd_mul(k, C)), lam), simd_add(simd_mul(k, wsum), one));
	simd_f nlam = simd_select(ok, simd_add(lam, dl), lam);
	simd_f s = simd_div(dl, len);
	simd_f sa = simd_mul(s, aw), sb = simd_mul(s, bw);
	simd_scatter_s(p, SIMD_REC(r, .a), n, simd_select(ok, simd_add(ax, simd_mul(sa, dx)), ax),
		       simd_select(ok, simd_add(ay, simd_mul(sa, dy)), ay),
		       simd_select(ok, simd_add(az, simd_mul(sa, dz)), az), aw);
	simd_scatter_s(p, SIMD_REC(r, .b), n, simd_select(ok, simd_sub(bx, simd_mul(sb, dx)), bx),
		       simd_select(ok, simd_sub(by, simd_mul(sb, dy)), by),
		       simd_select(ok, simd_sub(bz, simd_mul(sb, dz)), bz), bw);
	if (n == SIMD_W) {
		simd_store(lam_, nlam);
	} else {
		float tmp[SIMD_W];
		simd_store(tmp, nlam);
		memcpy(lam_, tmp, n * sizeof *tmp);
	}
}

void sim_xdist_range(sim_vec4 *restrict p, const sim_dist *c, const float *kt, const float *kc,
		     float *lam, uint32_t count, int scalar)
{
	if (scalar) {
		for (uint32_t i = 0; i < count; i++)
			xdist_one(p, &c[i], kt[i], kc[i], &lam[i]);
		return;
	}
	uint32_t i = 0;
	for (; i + SIMD_W <= count; i += SIMD_W)
		xdist_group(p, &c[i], &kt[i], &kc[i], &lam[i], SIMD_W);
	if (i < count) {
		/* The last records padded to a full group by repeating the last
		 * one (computed, never stored). */
		sim_dist tmp[SIMD_W];
		float t[SIMD_W], k[SIMD_W], l[SIMD_W];
		for (uint32_t j = 0; j < SIMD_W; j++) {
			uint32_t s = i + j < count ? i + j : count - 1;
			tmp[j] = c[s];
			t[j] = kt[s];
			k[j] = kc[s];
			l[j] = lam[s];
		}
		xdist_group(p, tmp, t, k, l, count - i);
		memcpy(&lam[i], l, (count - i) * sizeof *l);
	}
}

typedef struct xdist_job {
	sim_vec4 *p;
	const sim_dist *c;
	const float *kt, *kc;
	float *lam;
} xdist_job;

static void xdist_block(void *ctx, uint32_t begin, uint32_t end)
{
	const xdist_job *J = ctx;
	sim_xdist_range(J->p, J->c + begin, J->kt + begin, J->kc + begin, J->lam + begin, end - begin, 0);
}

void sim_xdist_solve(const drape_sim *sim, const sim_dist *c, const sim_colouring *col,
		     const float *kt, const float *kc, float *lam)
{
	const int scalar = (sim->flags & SIM_CREATE_REFERENCE) != 0;
	for (uint32_t g = 0; g < col->colours; g++) {
		uint32_t b = col->start[g], e = col->start[g + 1];
		if (scalar || (col->overflow && g + 1 == col->colours)) {
			/* The reference, or records that may share vertices:
			 * one at a time, in order. */
			sim_xdist_range(sim->p, c + b, kt + b, kc + b, lam + b, e - b, 1);
			continue;
		}
		xdist_job job = {sim->p, c + b, kt + b, kc + b, lam + b};
		sim_pool_for(sim->pool, e - b, sim_pool_block(sim->pool, e - b), xdist_block, &job);
	}
}

/* ---- Bending -------------------------------------------------------------- */

typedef struct xbend_job {
	sim_vec4 *p;
	const sim_bend *c;
	const float *rest, *kt;
	float *lam;
} xbend_job;

static void xbend_block(void *ctx, uint32_t begin, uint32_t end)
{
	const xbend_job *J = ctx;
	sim_bend_xrange(J->p, J->c + begin, J->rest + begin, J->kt + begin, J->lam + begin, end - begin, 0);
}

void sim_xbend_solve(const drape_sim *sim)
{
	const sim_colouring *col = &sim->bend_col;
	const int scalar = (sim->flags & SIM_CREATE_REFERENCE) != 0;
	const sim_xpbd *X = &sim->xpbd;
	for (uint32_t g = 0; g < col->colours; g++) {
		uint32_t b = col->start[g], e = col->start[g + 1];
		if (scalar || (col->overflow && g + 1 == col->colours)) {
			sim_bend_xrange(sim->p, sim->bend + b, X->bend_rest + b, X->bend_kt + b,
					X->bend_lambda + b, e - b, 1);
			continue;
		}
		xbend_job job = {sim->p, sim->bend + b, X->bend_rest + b, X->bend_kt + b, X->bend_lambda + b};
		sim_pool_for(sim->pool, e - b, sim_pool_block(sim->pool, e - b), xbend_block, &job);
	}
}
