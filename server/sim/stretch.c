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
#include "server/sim/pool.h"
#include "server/sim/simd.h"

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

/* ---- The fast sweeps ------------------------------------------------------ */

typedef struct dist_job {
	sim_vec4 *p;
	const sim_dist *c; /* first record of the colour */
	float k;
} dist_job;

/* The expressions of sim_dist_project for SIMD_W records r[0..SIMD_W-1],
 * lane by lane, in the same order; lanes that sim_dist_project would skip
 * keep their old positions, and only the first n lanes are stored. */
SIMD_KERNEL void dist_group(sim_vec4 *restrict p, const sim_dist *r, uint32_t n, simd_f k)
{
	const simd_f zero = simd_splat(0.0f);
	simd_f ax, ay, az, aw, bx, by, bz, bw;
	simd_gather_s(p, SIMD_REC(r, .a), &ax, &ay, &az, &aw);
	simd_gather_s(p, SIMD_REC(r, .b), &bx, &by, &bz, &bw);
	simd_f rest = SIMD_FLT(r, .rest);
	simd_f wsum = simd_add(aw, bw);
	simd_f dx = simd_sub(ax, bx), dy = simd_sub(ay, by), dz = simd_sub(az, bz);
	simd_f len = simd_sqrt(simd_add(simd_add(simd_mul(dx, dx), simd_mul(dy, dy)), simd_mul(dz, dz)));
	simd_m ok = simd_and(simd_gt(wsum, zero), simd_gt(len, zero));
	simd_f s = simd_div(simd_mul(k, simd_sub(len, rest)), simd_mul(len, wsum));
	simd_f sa = simd_mul(s, aw), sb = simd_mul(s, bw);
	simd_scatter_s(p, SIMD_REC(r, .a), n, simd_select(ok, simd_sub(ax, simd_mul(sa, dx)), ax),
		       simd_select(ok, simd_sub(ay, simd_mul(sa, dy)), ay),
		       simd_select(ok, simd_sub(az, simd_mul(sa, dz)), az), aw);
	simd_scatter_s(p, SIMD_REC(r, .b), n, simd_select(ok, simd_add(bx, simd_mul(sb, dx)), bx),
		       simd_select(ok, simd_add(by, simd_mul(sb, dy)), by),
		       simd_select(ok, simd_add(bz, simd_mul(sb, dz)), bz), bw);
}

/* Copies the last n < SIMD_W records of a range into a full group, the
 * missing lanes repeating the last record (computed, never stored). */
#define SIM_TAIL(tmp, c, i, end)                                  \
	do {                                                      \
		for (uint32_t l_ = 0; l_ < SIMD_W; l_++)          \
			(tmp)[l_] = (c)[(i) + l_ < (end) ? (i) + l_ : (end) - 1]; \
	} while (0)

static void dist_block(void *ctx, uint32_t begin, uint32_t end)
{
	const dist_job *J = ctx;
	const simd_f k = simd_splat(J->k);
	uint32_t i = begin;
	for (; i + SIMD_W <= end; i += SIMD_W)
		dist_group(J->p, &J->c[i], SIMD_W, k);
	if (i < end) {
		sim_dist tmp[SIMD_W];
		SIM_TAIL(tmp, J->c, i, end);
		dist_group(J->p, tmp, end - i, k);
	}
}

void sim_dist_range(sim_vec4 *restrict p, const sim_dist *c, uint32_t count, float k, int scalar)
{
	if (scalar) {
		for (uint32_t i = 0; i < count; i++)
			sim_dist_project(p, &c[i], k);
		return;
	}
	dist_job job = {p, c, k};
	dist_block(&job, 0, count);
}

void sim_dist_solve(const drape_sim *sim, const sim_dist *c, const sim_colouring *col, float k)
{
	if (sim->flags & SIM_CREATE_REFERENCE) {
		sim_dist_project_all(sim->p, c, col, k);
		return;
	}
	for (uint32_t g = 0; g < col->colours; g++) {
		uint32_t b = col->start[g], e = col->start[g + 1];
		if (col->overflow && g + 1 == col->colours) {
			/* Records here may share vertices: one at a time. */
			for (uint32_t i = b; i < e; i++)
				sim_dist_project(sim->p, &c[i], k);
			continue;
		}
		dist_job job = {sim->p, c + b, k};
		sim_pool_for(sim->pool, e - b, sim_pool_block(sim->pool, e - b), dist_block, &job);
	}
}

typedef struct lra_job {
	sim_vec4 *p;
	const sim_dist *c;
} lra_job;

/* The expressions of sim_lra_project_all, lane by lane. Each record writes
 * only its free vertex a, and no two records share one, so the whole array
 * is a single colour (b, the pin, is only read). */
SIMD_KERNEL void lra_group(sim_vec4 *restrict p, const sim_dist *r, uint32_t n)
{
	const simd_f zero = simd_splat(0.0f);
	const uint32_t *ia = SIMD_IDX(r, .a), *ib = SIMD_IDX(r, .b);
	simd_f ax, ay, az, aw, bx, by, bz, bw;
	simd_gather(p, ia, &ax, &ay, &az, &aw);
	simd_gather(p, ib, &bx, &by, &bz, &bw);
	simd_f rest = SIMD_FLT(r, .rest);
	simd_f dx = simd_sub(ax, bx), dy = simd_sub(ay, by), dz = simd_sub(az, bz);
	simd_f len = simd_sqrt(simd_add(simd_add(simd_mul(dx, dx), simd_mul(dy, dy)), simd_mul(dz, dz)));
	simd_m ok = simd_and(simd_ne(aw, zero), simd_gt(len, rest));
	simd_f s = simd_div(simd_sub(len, rest), len);
	simd_scatter(p, ia, n, simd_select(ok, simd_sub(ax, simd_mul(s, dx)), ax),
		     simd_select(ok, simd_sub(ay, simd_mul(s, dy)), ay),
		     simd_select(ok, simd_sub(az, simd_mul(s, dz)), az), aw);
}

static void lra_block(void *ctx, uint32_t begin, uint32_t end)
{
	const lra_job *J = ctx;
	uint32_t i = begin;
	for (; i + SIMD_W <= end; i += SIMD_W)
		lra_group(J->p, &J->c[i], SIMD_W);
	if (i < end) {
		sim_dist tmp[SIMD_W];
		SIM_TAIL(tmp, J->c, i, end);
		lra_group(J->p, tmp, end - i);
	}
}

void sim_lra_solve(const drape_sim *sim)
{
	/* The physical material's tethers carry its slack (tether.c). */
	const sim_dist *c = sim->params.model == DRAPE_MODEL_XPBD && sim->xpbd.lra ? sim->xpbd.lra : sim->lra;
	if (sim->flags & SIM_CREATE_REFERENCE) {
		sim_lra_project_all(sim->p, c, sim->lra_count);
		return;
	}
	lra_job job = {sim->p, c};
	sim_pool_for(sim->pool, sim->lra_count, sim_pool_block(sim->pool, sim->lra_count), lra_block, &job);
}
