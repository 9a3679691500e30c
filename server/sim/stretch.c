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

/* Loads the vertex indices and rest values of records [i, i + SIMD_W) up to
 * end; lanes past end repeat the last record (they are computed and never
 * stored). */
static inline uint32_t dist_lanes(const sim_dist *c, uint32_t i, uint32_t end, uint32_t *ia,
				  uint32_t *ib, float *rest)
{
	uint32_t n = end - i < SIMD_W ? end - i : SIMD_W;
	for (uint32_t l = 0; l < SIMD_W; l++) {
		const sim_dist *r = &c[l < n ? i + l : end - 1];
		ia[l] = r->a;
		ib[l] = r->b;
		rest[l] = r->rest;
	}
	return n;
}

static inline simd_f load_lanes(const float *f)
{
#if SIMD_W == 8
	return _mm256_loadu_ps(f);
#elif SIMD_W == 4
	return _mm_loadu_ps(f);
#else
	return f[0];
#endif
}

/* The expressions of sim_dist_project, lane by lane, in the same order;
 * lanes that sim_dist_project would skip keep their old positions. */
static void dist_block(void *ctx, uint32_t begin, uint32_t end)
{
	const dist_job *J = ctx;
	sim_vec4 *restrict p = J->p;
	const simd_f k = simd_splat(J->k), zero = simd_splat(0.0f);
	for (uint32_t i = begin; i < end; i += SIMD_W) {
		uint32_t ia[SIMD_W], ib[SIMD_W];
		float rest_l[SIMD_W];
		uint32_t n = dist_lanes(J->c, i, end, ia, ib, rest_l);
		simd_f ax, ay, az, aw, bx, by, bz, bw;
		simd_gather(p, ia, &ax, &ay, &az, &aw);
		simd_gather(p, ib, &bx, &by, &bz, &bw);
		simd_f rest = load_lanes(rest_l);
		simd_f wsum = simd_add(aw, bw);
		simd_f dx = simd_sub(ax, bx), dy = simd_sub(ay, by), dz = simd_sub(az, bz);
		simd_f len = simd_sqrt(simd_add(simd_add(simd_mul(dx, dx), simd_mul(dy, dy)),
						simd_mul(dz, dz)));
		simd_m ok = simd_and(simd_gt(wsum, zero), simd_gt(len, zero));
		simd_f s = simd_div(simd_mul(k, simd_sub(len, rest)), simd_mul(len, wsum));
		simd_f sa = simd_mul(s, aw), sb = simd_mul(s, bw);
		simd_scatter(p, ia, n, simd_select(ok, simd_sub(ax, simd_mul(sa, dx)), ax),
			     simd_select(ok, simd_sub(ay, simd_mul(sa, dy)), ay),
			     simd_select(ok, simd_sub(az, simd_mul(sa, dz)), az), aw);
		simd_scatter(p, ib, n, simd_select(ok, simd_add(bx, simd_mul(sb, dx)), bx),
			     simd_select(ok, simd_add(by, simd_mul(sb, dy)), by),
			     simd_select(ok, simd_add(bz, simd_mul(sb, dz)), bz), bw);
	}
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
		sim_pool_for(sim->pool, e - b, SIM_POOL_BLOCK, dist_block, &job);
	}
}

typedef struct lra_job {
	sim_vec4 *p;
	const sim_dist *c;
} lra_job;

/* The expressions of sim_lra_project_all, lane by lane. Each record writes
 * only its free vertex a, and no two records share one, so the whole array
 * is a single colour (b, the pin, is only read). */
static void lra_block(void *ctx, uint32_t begin, uint32_t end)
{
	const lra_job *J = ctx;
	sim_vec4 *restrict p = J->p;
	const simd_f zero = simd_splat(0.0f);
	for (uint32_t i = begin; i < end; i += SIMD_W) {
		uint32_t ia[SIMD_W], ib[SIMD_W];
		float rest_l[SIMD_W];
		uint32_t n = dist_lanes(J->c, i, end, ia, ib, rest_l);
		simd_f ax, ay, az, aw, bx, by, bz, bw;
		simd_gather(p, ia, &ax, &ay, &az, &aw);
		simd_gather(p, ib, &bx, &by, &bz, &bw);
		simd_f rest = load_lanes(rest_l);
		simd_f dx = simd_sub(ax, bx), dy = simd_sub(ay, by), dz = simd_sub(az, bz);
		simd_f len = simd_sqrt(simd_add(simd_add(simd_mul(dx, dx), simd_mul(dy, dy)),
						simd_mul(dz, dz)));
		simd_m ok = simd_and(simd_ne(aw, zero), simd_gt(len, rest));
		simd_f s = simd_div(simd_sub(len, rest), len);
		simd_scatter(p, ia, n, simd_select(ok, simd_sub(ax, simd_mul(s, dx)), ax),
			     simd_select(ok, simd_sub(ay, simd_mul(s, dy)), ay),
			     simd_select(ok, simd_sub(az, simd_mul(s, dz)), az), aw);
	}
}

void sim_lra_solve(const drape_sim *sim)
{
	if (sim->flags & SIM_CREATE_REFERENCE) {
		sim_lra_project_all(sim->p, sim->lra, sim->lra_count);
		return;
	}
	lra_job job = {sim->p, sim->lra};
	sim_pool_for(sim->pool, sim->lra_count, SIM_POOL_BLOCK, lra_block, &job);
}
