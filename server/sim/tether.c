/*
 * Long-range attachments for the physical material (params.model ==
 * DRAPE_MODEL_XPBD): Kim, Chentanez, Müller, "Long Range Attachments - A
 * Method to Simulate Inextensible Clothing in Computer Games" (SCA 2012).
 *
 * Why: Gauss-Seidel carries a pin's pull one edge per sweep, so a woven
 * fabric on 1 cm cells hangs far longer than its constants allow at the
 * default budget (the 300 x 300 sheet of make bench, cotton, 60 fps, 4 x 5:
 * 26.9 % edge strain at frame 180 without them). A tether bounds each free
 * vertex's distance to the pin nearest along the cloth, in one pass,
 * whatever the mesh resolution.
 *
 * The bound, and why it is physics rather than a cap on it. A path along
 * the cloth of rest length L, each piece strained by at most eps, is at
 * most L (1 + eps) long, and the straight line from the pin is no longer
 * than the path: |p - pin| <= L_geo (1 + eps_max). Hanging cloth carries
 * at most its whole weight M g through its pins; the narrowest section that
 * weight crosses is the pinned one, n_pins edges of mean rest length h
 * wide (a pinned row: its width; two corner pins: two cells, where the
 * stress concentrates), so no section is strained by more than
 * M g / (k_min n_pins h) at rest, k_min the softer of warp and weft. The
 * tether's slack is that static bound times SIM_TETHER_SAFETY (a pendulum
 * released from the horizontal pulls three times its weight at the bottom
 * of its swing, and a load applied at once strains twice its static value:
 * at 3 the bounds clipped the first frames of the tensile test), and never
 * below SIM_TETHER_MIN_SLACK: the tethers are slack in every static or
 * swinging state of the material and act only on
 * the unconverged excess, where a vertex hangs farther from its pin than
 * the fabric can stretch. M is the free vertices' mass, so masses the
 * caller gives (a weight hung on a strip) count; the wind's largest
 * pressure on the whole cloth is added to the weight (params.wind; a wind
 * changed by set_params re-derives the slack).
 *
 * The same bound limits each stretch edge (the strain-limit pass of
 * strainlimit.c at 1 + slack): no edge of the hanging cloth carries more
 * than the pinned section does.
 *
 * Chains: a tether bounds the whole path's stretch, not where it sits, so
 * a path of L metres may put all of its slack s L into its last edge (the
 * hem of a swinging sheet whips out: a 1 m woven sheet at the bench's
 * settings reached 9 % on the hem's edges with tethers and a single
 * strain-limit pass, 4.9 % with four passes, where theory allows 0.3 %;
 * with the chains below, 3.9 % at the worst frame and 1.6 % at the last,
 * tests/unit/test_sim_tether.c).
 * The same path argument bounds any two vertices of the cloth, not only a
 * vertex and its pin: |x_v - x_u| <= (1 + s) geodesic(v, u). Along each
 * vertex's shortest path to its pin (the tree of the tethers' Dijkstra
 * search), sim_tether_build adds that bound between the vertex and its
 * ancestors 2, 4, 8, ... edges up (not the pin: the tether holds that;
 * not the parent: the strain limit holds that edge), so the excess of a
 * chain of 2^j edges is bounded in one projection, and the coarse bounds
 * are projected before the fine ones, as a multigrid V-cycle descends, and
 * within a level from the pins down. Then the edges' limit, and last the
 * tethers, whose pins do not move, so their bound holds exactly (sweep.c).
 * Both ends move, split by inverse masses (the strain limit's projection,
 * strainlimit.c); the records share vertices, so they run serially, in a
 * fixed order, the same bits at any thread count and SIMD width.
 *
 * The tethers are the seed's records (topology.c, sim_lra_build: geodesic
 * rest distances by Dijkstra over the stretch edges) with the rest length
 * times 1 + slack; the projection is the seed's unilateral one (stretch.c).
 * Under XPBD they are on when params.long_range is 1, or -1 (the default)
 * and the cloth has pins; 0 turns them off.
 */
#include "server/sim/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Above a pendulum's 3 m g and a sudden load's 2x (file comment). */
#define SIM_TETHER_SAFETY 4.0
/* The same 1 % as the seed's strain limit (internal.h, SIM_STRAIN_LIMIT). */
#define SIM_TETHER_MIN_SLACK 0.01

double sim_tether_slack(const drape_sim *sim)
{
	const drape_sim_params *P = &sim->params;
	double mass = 0.0, h = 0.0;
	uint32_t pins = 0;
	for (uint32_t i = 0; i < sim->n; i++) {
		if (sim->x[i].w > 0.0f)
			mass += 1.0 / (double)sim->x[i].w;
		else
			pins += !sim_weld_follower(sim, i);
	}
	for (uint32_t e = 0; e < sim->stretch_count; e++)
		h += (double)sim->stretch[e].rest;
	h = sim->stretch_count ? h / sim->stretch_count : 0.0;
	double g = sqrt((double)P->gravity[0] * P->gravity[0] + (double)P->gravity[1] * P->gravity[1] +
			(double)P->gravity[2] * P->gravity[2]);
	/* The weft only where some edge has a grain: a cloth without uvs is
	 * isotropic at the warp (compliance.c). */
	int grain = 0;
	for (uint32_t e = 0; e < sim->stretch_count && !grain; e++)
		grain = sim->xpbd.stretch_warp != NULL && sim->xpbd.stretch_warp[e] != SIM_WARP_NONE;
	double ku = P->stretch_k, kv = grain && P->stretch_k_weft > 0.0f ? P->stretch_k_weft : P->stretch_k;
	/* The softest painted patch (vertexprops.c) sets the bound. */
	double kmin = fmin(ku, kv) * (double)sim->stiffness_min, width = (double)pins * h;
	/* The wind's pressure on the whole cloth, drag and lift at most
	 * 1/2 rho_air |v|^2 (c_d + c_l) per area (wind.c), carried by the
	 * pins like the weight. */
	double area = 0.0;
	for (uint32_t t = 0; t < sim->ntri; t++)
		area += (double)sim->tri_rest_area[t];
	double v2 = (double)P->wind[0] * P->wind[0] + (double)P->wind[1] * P->wind[1] +
		    (double)P->wind[2] * P->wind[2];
	double load = mass * g + 0.5 * (double)P->air_density * v2 * ((double)P->drag + P->lift) * area;
	double s = SIM_TETHER_MIN_SLACK;
	if (width > 0.0 && kmin > 0.0)
		s = fmax(s, SIM_TETHER_SAFETY * load / (kmin * width));
	return s;
}

drape_err sim_tether_derive(drape_sim *sim, drape_error *err)
{
	sim_xpbd *X = &sim->xpbd;
	if (sim->lra_count == 0)
		return DRAPE_OK;
	if (X->lra == NULL) {
		X->lra = malloc((size_t)sim->lra_count * sizeof *X->lra);
		if (X->lra == NULL)
			return drape_error_setf(err, DRAPE_ENOMEM, "long-range attachments: out of memory");
	}
	/* The chains, once, when the model first becomes XPBD (at create
	 * or set_params, never inside a step): a PBD sim has none. */
	if (X->chain == NULL) {
		drape_err rc = sim_tether_build(sim, err);
		if (rc != DRAPE_OK)
			return rc;
	}
	X->tether_slack = sim_tether_slack(sim);
	const double f = 1.0 + X->tether_slack;
	for (uint32_t i = 0; i < sim->lra_count; i++) {
		X->lra[i] = sim->lra[i];
		X->lra[i].rest = (float)((double)sim->lra[i].rest * f);
	}
	return DRAPE_OK;
}

/* Hops of the longest chain bound: 2^SIM_TETHER_LEVELS edges. */
#define SIM_TETHER_LEVELS 10

/* Levels of chain bound: ancestors 2^SIM_TETHER_FIRST .. 2^SIM_TETHER_LEVELS
 * edges up. */
#define SIM_TETHER_FIRST 1

typedef struct chain_rec {
	uint32_t level; /* coarsest 0 */
	float dist;     /* the vertex's geodesic distance to its pin */
	sim_dist r;
} chain_rec;

/* A total order: level, distance, vertex (one record per vertex and level). */
static int chain_cmp(const void *x, const void *y)
{
	const chain_rec *a = x, *b = y;
	if (a->level != b->level)
		return a->level < b->level ? -1 : 1;
	if (a->dist != b->dist)
		return a->dist < b->dist ? -1 : 1;
	return (a->r.a > b->r.a) - (a->r.a < b->r.a);
}

drape_err sim_tether_build(drape_sim *sim, drape_error *err)
{
	sim_xpbd *X = &sim->xpbd;
	X->chain = NULL;
	X->chain_count = 0;
	if (sim->lra_count == 0)
		return DRAPE_OK;
	const uint32_t n = sim->n, ne = sim->stretch_count;
	float *dist = malloc((size_t)n * sizeof *dist);
	uint32_t *parent = malloc((size_t)n * sizeof *parent);
	chain_rec *recs = NULL;
	drape_err rc = DRAPE_OK;
	if (dist == NULL || parent == NULL)
		goto oom;
	for (uint32_t i = 0; i < n; i++) {
		dist[i] = sim->x[i].w == 0.0f ? 0.0f : INFINITY;
		parent[i] = UINT32_MAX;
	}
	for (uint32_t i = 0; i < sim->lra_count; i++)
		dist[sim->lra[i].a] = sim->lra[i].rest;
	/* A free vertex's parent: the neighbour through which its geodesic
	 * distance is shortest (the lowest index on a tie), which is its
	 * predecessor on a shortest path, whatever order Dijkstra took. */
	float *best = malloc((size_t)n * sizeof *best);
	if (best == NULL)
		goto oom;
	for (uint32_t i = 0; i < n; i++)
		best[i] = INFINITY;
	for (uint32_t e = 0; e < ne; e++) {
		const sim_dist *c = &sim->stretch[e];
		for (int k = 0; k < 2; k++) {
			uint32_t v = k ? c->b : c->a, u = k ? c->a : c->b;
			if (sim->x[v].w == 0.0f || !isfinite(dist[u]) || !isfinite(dist[v]))
				continue;
			float d = dist[u] + c->rest;
			if (d < best[v] || (d == best[v] && u < parent[v])) {
				best[v] = d;
				parent[v] = u;
			}
		}
	}
	free(best);
	/* A parent must be strictly nearer its pin, or the walk could cycle
	 * (equal distances after rounding): such a vertex gets no chain. */
	for (uint32_t v = 0; v < n; v++)
		if (parent[v] != UINT32_MAX && !(dist[parent[v]] < dist[v]))
			parent[v] = UINT32_MAX;
	/* Count, then fill: for each vertex, its ancestors at 2^j hops,
	 * j = 1 .. SIM_TETHER_LEVELS, while they are free vertices. */
	size_t count = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t v = 0; v < n; v++) {
			if (sim->x[v].w == 0.0f || parent[v] == UINT32_MAX)
				continue;
			uint32_t u = parent[v], hops = 1;
			for (int j = SIM_TETHER_FIRST; j <= SIM_TETHER_LEVELS && u != UINT32_MAX; j++) {
				while (hops < (1u << j) && u != UINT32_MAX && sim->x[u].w != 0.0f) {
					u = parent[u];
					hops++;
				}
				if (u == UINT32_MAX || sim->x[u].w == 0.0f)
					break;
				if (pass == 1)
					recs[count] = (chain_rec){(uint32_t)(SIM_TETHER_LEVELS - j), dist[v],
								  (sim_dist){v, u, dist[v] - dist[u]}};
				count++;
			}
		}
		if (pass == 0) {
			if (count == 0)
				goto done;
			recs = malloc(count * sizeof *recs);
			X->chain = malloc(count * sizeof *X->chain);
			if (recs == NULL || X->chain == NULL)
				goto oom;
			count = 0;
		}
	}
	/* Coarse to fine, and within a level from the pins down, so one
	 * sweep carries a correction down a column. */
	qsort(recs, count, sizeof *recs, chain_cmp);
	for (size_t i = 0; i < count; i++)
		X->chain[i] = recs[i].r;
	X->chain_count = (uint32_t)count;
	goto done;
oom:
	free(X->chain);
	X->chain = NULL;
	X->chain_count = 0;
	rc = drape_error_setf(err, DRAPE_ENOMEM, "long-range attachments: out of memory");
done:
	free(recs);
	free(dist);
	free(parent);
	return rc;
}

void sim_tether_chain_solve(const drape_sim *sim)
{
	const sim_xpbd *X = &sim->xpbd;
	sim_strain_limit_range(sim->p, X->chain, X->chain_count, (float)(1.0 + X->tether_slack), 1);
}
