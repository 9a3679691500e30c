/*
 * The strain limit on the stretch edges (Provot, "Deformation Constraints in
 * a Mass-Spring Model to Describe Rigid Cloth Behavior", Graphics Interface
 * 1995, section 5): at the end of each iteration, after the tethers, every
 * edge longer than (1 + SIM_STRAIN_LIMIT) times its rest length is shortened
 * to exactly that length, the correction split by inverse masses as in the
 * stretch projection (Müller 2006, section 3.3); shorter edges are left
 * alone, so the pass changes nothing in cloth that is within the limit.
 *
 * Why it is needed beside the long-range attachments: the tethers bound each
 * vertex's distance to its pin, not the length of each edge. While the sheet
 * swings, the lower part of a column is not straight below its pin: its
 * tethers are slack and the iterations alone must carry the tension, and at
 * the bend a vertex held on its tether sphere is pulled sideways against the
 * edge below it. The limit pass is the last word on the edges, after the
 * tethers and the bend and shear projections that stretch them.
 *
 * The pass walks the stretch records in their colour order, each colour
 * split over the pool and SIMD_W records at a time (the overflow colour
 * serially), so the result is the same for any thread count and equal to
 * the scalar loop sim_strain_limit_project_all.
 */
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "server/sim/simd.h"

/* One record: the arithmetic the SIMD lanes below repeat exactly. */
static inline void limit_one(sim_vec4 *restrict p, const sim_dist *c, float smax)
{
	sim_vec4 a = p[c->a], b = p[c->b];
	float wsum = a.w + b.w;
	float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
	float len = sqrtf(dx * dx + dy * dy + dz * dz);
	float lmax = c->rest * smax;
	/* Both ends pinned, or within the limit: nothing to do (len > lmax
	 * also excludes len = 0, which has no direction). */
	if (!(wsum > 0.0f && len > lmax))
		return;
	float s = (len - lmax) / (len * wsum);
	float sa = s * a.w, sb = s * b.w;
	p[c->a].x = a.x - sa * dx;
	p[c->a].y = a.y - sa * dy;
	p[c->a].z = a.z - sa * dz;
	p[c->b].x = b.x + sb * dx;
	p[c->b].y = b.y + sb * dy;
	p[c->b].z = b.z + sb * dz;
}

void sim_strain_limit_project_all(sim_vec4 *restrict p, const sim_dist *c,
				  const sim_colouring *col, float smax)
{
	for (uint32_t g = 0; g < col->colours; g++)
		for (uint32_t i = col->start[g]; i < col->start[g + 1]; i++)
			limit_one(p, &c[i], smax);
}

typedef struct limit_job {
	sim_vec4 *p;
	const sim_dist *c; /* first record of the colour */
	float smax;
} limit_job;

/* limit_one for SIMD_W records r[0..SIMD_W-1], lane by lane; lanes within
 * the limit keep their positions, and only the first n lanes are stored. */
SIMD_KERNEL void limit_group(sim_vec4 *restrict p, const sim_dist *r, uint32_t n, simd_f smax)
{
	const simd_f zero = simd_splat(0.0f);
	const uint32_t *ia = SIMD_IDX(r, .a), *ib = SIMD_IDX(r, .b);
	simd_f ax, ay, az, aw, bx, by, bz, bw;
	simd_gather(p, ia, &ax, &ay, &az, &aw);
	simd_gather(p, ib, &bx, &by, &bz, &bw);
	simd_f wsum = simd_add(aw, bw);
	simd_f dx = simd_sub(ax, bx), dy = simd_sub(ay, by), dz = simd_sub(az, bz);
	simd_f len = simd_sqrt(simd_add(simd_add(simd_mul(dx, dx), simd_mul(dy, dy)), simd_mul(dz, dz)));
	simd_f lmax = simd_mul(SIMD_FLT(r, .rest), smax);
	simd_m ok = simd_and(simd_gt(wsum, zero), simd_gt(len, lmax));
	/* Most groups of cloth that holds its length have no edge over the
	 * limit: storing their unchanged positions back is most of the cost. */
	if (!simd_any(ok))
		return;
	simd_f s = simd_div(simd_sub(len, lmax), simd_mul(len, wsum));
	simd_f sa = simd_mul(s, aw), sb = simd_mul(s, bw);
	simd_scatter(p, ia, n, simd_select(ok, simd_sub(ax, simd_mul(sa, dx)), ax),
		     simd_select(ok, simd_sub(ay, simd_mul(sa, dy)), ay),
		     simd_select(ok, simd_sub(az, simd_mul(sa, dz)), az), aw);
	simd_scatter(p, ib, n, simd_select(ok, simd_add(bx, simd_mul(sb, dx)), bx),
		     simd_select(ok, simd_add(by, simd_mul(sb, dy)), by),
		     simd_select(ok, simd_add(bz, simd_mul(sb, dz)), bz), bw);
}

static void limit_block(void *ctx, uint32_t begin, uint32_t end)
{
	const limit_job *J = ctx;
	const simd_f smax = simd_splat(J->smax);
	uint32_t i = begin;
	for (; i + SIMD_W <= end; i += SIMD_W)
		limit_group(J->p, &J->c[i], SIMD_W, smax);
	if (i < end) {
		/* A full group whose missing lanes repeat the last record: they
		 * are computed but never stored. */
		sim_dist tmp[SIMD_W];
		for (uint32_t l = 0; l < SIMD_W; l++)
			tmp[l] = J->c[i + l < end ? i + l : end - 1];
		limit_group(J->p, tmp, end - i, smax);
	}
}

void sim_strain_limit_range(sim_vec4 *restrict p, const sim_dist *c, uint32_t count, float smax,
			    int scalar)
{
	if (scalar) {
		for (uint32_t i = 0; i < count; i++)
			limit_one(p, &c[i], smax);
		return;
	}
	limit_job job = {p, c, smax};
	limit_block(&job, 0, count);
}

float sim_strain_limit_bound(const drape_sim *sim)
{
	if (sim->params.model == DRAPE_MODEL_XPBD)
		return (float)(1.0 + sim->xpbd.tether_slack);
	return 1.0f + SIM_STRAIN_LIMIT;
}

void sim_strain_limit_solve(const drape_sim *sim)
{
	const float smax = sim_strain_limit_bound(sim);
	const sim_colouring *col = &sim->stretch_col;
	if (sim->flags & SIM_CREATE_REFERENCE) {
		sim_strain_limit_project_all(sim->p, sim->stretch, col, smax);
		return;
	}
	for (uint32_t g = 0; g < col->colours; g++) {
		uint32_t b = col->start[g], e = col->start[g + 1];
		if (col->overflow && g + 1 == col->colours) {
			/* Records here may share vertices: one at a time. */
			for (uint32_t i = b; i < e; i++)
				limit_one(sim->p, &sim->stretch[i], smax);
			continue;
		}
		limit_job job = {sim->p, sim->stretch + b, smax};
		sim_pool_for(sim->pool, e - b, sim_pool_block(sim->pool, e - b), limit_block, &job);
	}
}
