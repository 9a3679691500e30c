/*
 * One solver iteration over the tiled layout (internal.h, sim_tiling).
 *
 * The colour-by-colour sweep reads the whole position array once per colour,
 * about forty times per iteration, and waits at a barrier after each colour.
 * Tiles cut both: a tile's positions stay in L1 while all its colour runs of
 * every kind are projected, and the tiles, which share no vertex, need no
 * barrier among themselves. Only the boundary records, a small fraction with
 * tiles of SIM_TILE_VERTICES compact vertices, are swept colour by colour
 * over the whole mesh afterwards.
 *
 * The Gauss-Seidel order is fixed by the layout: tile by tile (each tile's
 * kinds in the order bend, shear, stretch, each kind colour by colour), then
 * the boundary records in the same order; then the long-range attachments
 * over the whole mesh, and the strain limit, tiles then boundary. Tiles read
 * and write only their own vertices, so running them on any threads in any
 * order gives the same bits; SIM_CREATE_REFERENCE walks the same order with
 * the scalar kernels.
 */
#include "server/sim/internal.h"
#include "server/sim/pool.h"

typedef struct sweep_job {
	const drape_sim *sim;
	unsigned kinds;
	int scalar;
} sweep_job;

static void sweep_tile(const sweep_job *J, uint32_t t)
{
	const drape_sim *sim = J->sim;
	const int scalar = J->scalar;
	const int xpbd = sim->params.model == DRAPE_MODEL_XPBD;
	const sim_xpbd *X = &sim->xpbd;
	sim_vec4 *p = sim->p;
	if (J->kinds & SIM_SWEEP_BEND) {
		const sim_tiling *tl = &sim->bend_tiles;
		for (uint32_t r = tl->first[t]; r < tl->first[t + 1]; r++) {
			uint32_t b = tl->run[r], m = tl->run[r + 1] - b;
			if (xpbd)
				sim_bend_xrange(p, sim->bend + b, X->bend_rest + b, X->bend_kt + b,
						X->bend_lambda + b, m, scalar || tl->serial[r]);
			else
				sim_bend_range(p, sim->bend + b, m, sim->k_bend, scalar || tl->serial[r]);
		}
	}
	if (J->kinds & SIM_SWEEP_SHEAR) {
		const sim_tiling *tl = &sim->shear_tiles;
		for (uint32_t r = tl->first[t]; r < tl->first[t + 1]; r++) {
			uint32_t b = tl->run[r], m = tl->run[r + 1] - b;
			/* Shear wings resist only stretching of the wing distance
			 * and its shortening alike: the same stiffness both ways. */
			if (xpbd)
				sim_xdist_range(p, sim->shear + b, X->shear_kt + b, X->shear_kt + b,
						X->shear_lambda + b, m, scalar || tl->serial[r]);
			else
				sim_dist_range(p, sim->shear + b, m, sim->k_shear, scalar || tl->serial[r]);
		}
	}
	const sim_tiling *st = &sim->stretch_tiles;
	if (J->kinds & SIM_SWEEP_STRETCH)
		for (uint32_t r = st->first[t]; r < st->first[t + 1]; r++) {
			uint32_t b = st->run[r], m = st->run[r + 1] - b;
			if (xpbd)
				sim_xdist_range(p, sim->stretch + b, X->stretch_kt + b, X->stretch_kc + b,
						X->stretch_lambda + b, m, scalar || st->serial[r]);
			else
				sim_dist_range(p, sim->stretch + b, m, sim->k_stretch, scalar || st->serial[r]);
		}
	if (J->kinds & SIM_SWEEP_LIMIT)
		for (uint32_t r = st->first[t]; r < st->first[t + 1]; r++)
			sim_strain_limit_range(p, sim->stretch + st->run[r], st->run[r + 1] - st->run[r],
					       sim_strain_limit_bound(sim), scalar || st->serial[r]);
}

static void sweep_tiles(void *ctx, uint32_t begin, uint32_t end)
{
	for (uint32_t t = begin; t < end; t++)
		sweep_tile(ctx, t);
}

/* The tiles' records of `kinds`, tiles over the pool. */
static void tiles_pass(const drape_sim *sim, unsigned kinds)
{
	if (sim->tiles == 0 || kinds == 0)
		return;
	sweep_job job = {sim, kinds, (sim->flags & SIM_CREATE_REFERENCE) != 0};
	sim_pool_for(sim->pool, sim->tiles, 1, sweep_tiles, &job);
}

void sim_sweep(const drape_sim *sim, unsigned kinds)
{
	/* The constraints, tiles then boundary (every record when there are
	 * no tiles). */
	tiles_pass(sim, kinds & (SIM_SWEEP_BEND | SIM_SWEEP_SHEAR | SIM_SWEEP_STRETCH));
	if (sim->params.model == DRAPE_MODEL_XPBD) {
		const sim_xpbd *X = &sim->xpbd;
		if (kinds & SIM_SWEEP_BEND)
			sim_xbend_solve(sim);
		if (kinds & SIM_SWEEP_SHEAR)
			sim_xdist_solve(sim, sim->shear, &sim->shear_col, X->shear_kt, X->shear_kt,
					X->shear_lambda);
		if (kinds & SIM_SWEEP_STRETCH)
			sim_xdist_solve(sim, sim->stretch, &sim->stretch_col, X->stretch_kt,
					X->stretch_kc, X->stretch_lambda);
	} else {
		if (kinds & SIM_SWEEP_BEND)
			sim_bend_solve(sim);
		if (kinds & SIM_SWEEP_SHEAR)
			sim_dist_solve(sim, sim->shear, &sim->shear_col, sim->k_shear);
		if (kinds & SIM_SWEEP_STRETCH)
			sim_dist_solve(sim, sim->stretch, &sim->stretch_col, sim->k_stretch);
	}
	/* The bounds on stretching get the last word over every edge, the
	 * boundary edges too, so they come after the whole constraint pass:
	 * the tethers in one pass over the mesh (each reads a pin that may lie
	 * in another tile), then the strain limit, tiles then boundary. */
	const int xpbd = sim->params.model == DRAPE_MODEL_XPBD;
	if ((kinds & SIM_SWEEP_LRA) && !xpbd)
		sim_lra_solve(sim);
	/* The physical material's bounds (tether.c): the chains coarse to
	 * fine, the edges, and last the tethers, whose pins do not move, so
	 * the bound on the distance to the pins holds exactly after it. */
	if (xpbd && (kinds & SIM_SWEEP_LRA) && (kinds & SIM_SWEEP_LIMIT))
		sim_tether_chain_solve(sim);
	tiles_pass(sim, kinds & SIM_SWEEP_LIMIT);
	if (kinds & SIM_SWEEP_LIMIT)
		sim_strain_limit_solve(sim);
	if ((kinds & SIM_SWEEP_LRA) && xpbd)
		sim_lra_solve(sim);
}
