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
 * of its swing), and never below SIM_TETHER_MIN_SLACK: the tethers are
 * slack in every static or swinging state of the material and act only on
 * the unconverged excess, where a vertex hangs farther from its pin than
 * the fabric can stretch. M is the free vertices' mass, so masses the
 * caller gives (a weight hung on a strip) count.
 *
 * The same bound limits each stretch edge (the strain-limit pass of
 * strainlimit.c at 1 + slack): no edge of the hanging cloth carries more
 * than the pinned section does.
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

/* A pendulum released from the horizontal: tension 3 m g at the bottom. */
#define SIM_TETHER_SAFETY 3.0
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
			pins++;
	}
	for (uint32_t e = 0; e < sim->stretch_count; e++)
		h += (double)sim->stretch[e].rest;
	h = sim->stretch_count ? h / sim->stretch_count : 0.0;
	double g = sqrt((double)P->gravity[0] * P->gravity[0] + (double)P->gravity[1] * P->gravity[1] +
			(double)P->gravity[2] * P->gravity[2]);
	double ku = P->stretch_k, kv = P->stretch_k_weft > 0.0f ? P->stretch_k_weft : P->stretch_k;
	double kmin = fmin(ku, kv), width = (double)pins * h;
	double s = SIM_TETHER_MIN_SLACK;
	if (width > 0.0 && kmin > 0.0)
		s = fmax(s, SIM_TETHER_SAFETY * mass * g / (kmin * width));
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
	X->tether_slack = sim_tether_slack(sim);
	const double f = 1.0 + X->tether_slack;
	for (uint32_t i = 0; i < sim->lra_count; i++) {
		X->lra[i] = sim->lra[i];
		X->lra[i].rest = (float)((double)sim->lra[i].rest * f);
	}
	return DRAPE_OK;
}
