/*
 * The physical material's constants mapped onto the mesh's constraints
 * (params.model == DRAPE_MODEL_XPBD): each constraint's stiffness k_e is
 * chosen so that the energy the constraints store under a uniform
 * deformation of the cloth equals the continuum energy of that deformation.
 * A constraint C with stiffness k_e stores E = k_e C^2 / 2; XPBD (xpbd.c)
 * solves it with compliance alpha = 1 / k_e.
 *
 * Stretch, membrane stiffness k [N/m] (force per unit width per unit
 * strain of a strip free to narrow, as a fabric tensile test measures it).
 * An edge of rest length l0 strained by eps stores k_e (l0 eps)^2 / 2; the
 * continuum stores k eps^2 / 2 per unit area. Giving each edge the area A
 * of the triangles around it, k_e = beta k A / l0^2 makes the sum of the
 * edges' energies independent of the mesh resolution (halving the edges
 * quarters both A and l0^2). beta follows from the regular grid with
 * alternating diagonals (square cells of side h, one edge of each of the
 * three directions per cell, A = h^2 for every interior edge): a strain
 * (eps along x, eta across) strains the x edges by eps, the y edges by eta
 * and the diagonals by (eps + eta) / 2, so the energy per cell is
 *     beta k h^2 / 2 [eps^2 + eta^2 + (eps + eta)^2 / 4];
 * a strip pulled along x chooses eta to minimise it, eta = -eps / 5, which
 * leaves beta k h^2 / 2 * 1.2 eps^2. The strip's stiffness is k when
 * beta = 1 / 1.2 = 5 / 6 (test_sim_material.c checks a pulled strip against
 * F L / (k w)). A boundary edge has one triangle, so half the area: its
 * energy is half an interior edge's, as the half cell it borders.
 *
 * Warp and weft (stretch_k along the mesh's u, stretch_k_weft along v): an
 * edge's direction in the fabric is its uv difference (du, dv); the
 * fraction along the warp is c = du^2 / (du^2 + dv^2), and its compliance
 * blends the two, 1 / k(c) = c / k_u + (1 - c) / k_v, as two springs in
 * series, with k_u and k_v the edges' warp and weft (edge_warp_weft below:
 * stretch_k and stretch_k_weft corrected for the diagonals' share of a
 * pull). That takes the UV layout to have the same scale in u and v, as a
 * garment's pattern layout does. Without uvs the fabric is isotropic at
 * the warp's stiffness (stretch_k as it is, c = SIM_WARP_NONE), and so is
 * an edge whose ends share their uvs (a cloth without them joined to one
 * that has them, in a scene's "cloths"). Compression (compress_k, C < 0) uses the same geometry,
 * isotropic; 0 means the edge's stretch stiffness.
 *
 * Shear, in-plane shear stiffness G [N/m] (energy G gamma^2 / 2 per area),
 * on the wing distance of each interior edge: k_e = c_s G A / l0^2 with A
 * the two triangles' area and l0 the wings' rest distance. On the grid a
 * shear gamma strains a cell's diagonal wing by gamma / 2 (A / l0^2 = 1/2)
 * and its two axis wings, across (2h, h), by 2 gamma / 5 (A / l0^2 = 1/5):
 * the energy per cell is c_s G h^2 gamma^2 (1/8 + 2 * 2/25) = 0.285 c_s
 * G h^2 gamma^2, which is G h^2 gamma^2 / 2 for c_s = 1.754. The stretch
 * diagonals resist shear too (beta k / 4 on the grid), so shear_k below
 * about a fifth of stretch_k adds to a floor the mesh already has.
 *
 * Bending, bending stiffness B [N m] (energy B kappa^2 / 2 per area, with
 * kappa the curvature): a dihedral angle theta at an edge of length |e|
 * bends a band of the cloth along it, as wide as the distance d between the
 * two triangles' centres, to curvature theta / d, storing
 * B (theta / d)^2 / 2 * |e| d = (B |e| / d) theta^2 / 2: k_e = B |e| / d.
 * Grinspun, Hirani, Desbrun, Schröder, "Discrete Shells" (SCA 2003), take
 * d from the triangles' heights, d = (A1 + A2) / (c |e|) with c = 3 / 2
 * at the centroids (their 3 |e|^2 / (A1 + A2)); on the grid a cylinder
 * along the y edges bends only those edges, by kappa h, with a band h wide
 * (the faces through two generator lines are tilted as at the middle of
 * their strip, not at their centroids), so d = h = (A1 + A2) / |e|:
 * k_e = c_b B |e|^2 / (A1 + A2) with c_b = 1, which the cantilever test
 * (Peirce 1930, ASTM D1388) confirms within a few per cent.
 *
 * Mass: the lumped vertex masses of sim.c (density times a third of the
 * area around each vertex), so density sets the weight the constants hold.
 */
#include "server/sim/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIM_XPBD_BETA (5.0 / 6.0)

/*
 * The edges' warp and weft (a, b) for a fabric of warp ku and weft kv. The
 * grid's diagonals take part in a pull (the 1.2 above); with ku != kv
 * they sit at the springs-in-series blend d = 2ab / (a + b), stiffer than
 * the weft edges and softer than the warp's, so a and b = ku, kv made a
 * strip 19 % softer than ku along the warp and 8 % stiffer than kv along
 * the weft at ku = 4 kv (docs/limits.md). Minimising the grid's energy
 * per cell over the free direction, a strip pulled along u stores
 * beta [a + b d / (4 b + d)] per unit strain squared, and one pulled
 * along v beta [b + a d / (4 a + d)]; a and b are chosen so that these
 * are ku and kv (a fixed point, converged to rounding in 50 rounds for
 * any ratio up to 10^6; tested by test_sim_material's test_warp_weft).
 * An isotropic fabric keeps a = b = k exactly.
 */
static void edge_warp_weft(double ku, double kv, double *a, double *b)
{
	*a = ku, *b = kv;
	if (ku == kv)
		return;
	const double U = ku / SIM_XPBD_BETA, V = kv / SIM_XPBD_BETA;
	double x = ku, y = kv;
	for (int i = 0; i < 50; i++) {
		double d = 2.0 * x * y / (x + y);
		x = U - y * d / (4.0 * y + d);
		d = 2.0 * x * y / (x + y);
		y = V - x * d / (4.0 * x + d);
	}
	*a = x, *b = y;
}
#define SIM_XPBD_SHEAR_C 1.754
#define SIM_XPBD_BEND_C 1.0

static float tri_area(sim_v3 a, sim_v3 b, sim_v3 c)
{
	return 0.5f * v3_len(v3_cross(v3_sub(b, a), v3_sub(c, a)));
}

/* An undirected edge or wing pair as a sortable key, with a value. */
typedef struct key_val {
	uint64_t key;
	uint32_t index;
	float value;
} key_val;

static int key_cmp(const void *a, const void *b)
{
	const key_val *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

static uint64_t edge_key(uint32_t a, uint32_t b)
{
	uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
	return ((uint64_t)lo << 32) | hi;
}

/* The first entry with `key`, or NULL. */
static key_val *key_find(key_val *kv, uint32_t n, uint64_t key)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (kv[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && kv[lo].key == key ? &kv[lo] : NULL;
}

float sim_warp_fraction(double du, double dv)
{
	double s = du * du + dv * dv;
	return s > 0.0 ? (float)(du * du / s) : SIM_WARP_NONE;
}

drape_err sim_xpbd_build(drape_sim *sim, const float *uvs, drape_error *err)
{
	sim_xpbd *X = &sim->xpbd;
	const uint32_t ns = sim->stretch_count, nsh = sim->shear_count, nb = sim->bend_count;
	X->stretch_geo = calloc(ns ? ns : 1, sizeof(float));
	X->stretch_warp = malloc((ns ? ns : 1) * sizeof(float));
	X->shear_geo = calloc(nsh ? nsh : 1, sizeof(float));
	X->bend_geo = calloc(nb ? nb : 1, sizeof(float));
	X->bend_rest = calloc(nb ? nb : 1, sizeof(float));
	uint32_t nk = ns > nb ? ns : nb;
	key_val *kv = malloc((nk ? nk : 1) * sizeof *kv);
	if (!X->stretch_geo || !X->stretch_warp || !X->shear_geo || !X->bend_geo || !X->bend_rest || !kv) {
		free(kv);
		return drape_error_setf(err, DRAPE_ENOMEM, "material: out of memory");
	}
	const sim_vec4 *x = sim->x;

	/* Stretch: the area around each edge, by a sorted search of each
	 * triangle's edges among the records (O(n log n), no hash map). */
	for (uint32_t i = 0; i < ns; i++)
		kv[i] = (key_val){edge_key(sim->stretch[i].a, sim->stretch[i].b), i, 0.0f};
	qsort(kv, ns, sizeof *kv, key_cmp);
	for (uint32_t t = 0; t < sim->ntri; t++) {
		float area = sim->tri_rest_area[t];
		if (!(area > 0.0f))
			continue;
		const uint32_t *v = &sim->tris[3 * (size_t)t];
		for (int j = 0; j < 3; j++) {
			key_val *k = key_find(kv, ns, edge_key(v[j], v[(j + 1) % 3]));
			if (k != NULL)
				k->value += area;
		}
	}
	for (uint32_t i = 0; i < ns; i++) {
		const key_val *k = &kv[i];
		float rest = sim->stretch[k->index].rest;
		sim->xpbd.stretch_geo[k->index] = (float)(SIM_XPBD_BETA * k->value / ((double)rest * rest));
	}
	for (uint32_t i = 0; i < ns; i++) {
		float c = SIM_WARP_NONE;
		if (uvs != NULL) {
			uint32_t a = sim->order ? sim->order[sim->stretch[i].a] : sim->stretch[i].a;
			uint32_t b = sim->order ? sim->order[sim->stretch[i].b] : sim->stretch[i].b;
			c = sim_warp_fraction((double)uvs[2 * (size_t)a] - uvs[2 * (size_t)b],
					      (double)uvs[2 * (size_t)a + 1] - uvs[2 * (size_t)b + 1]);
		}
		X->stretch_warp[i] = c;
	}

	/* Bending: |e|^2 / (A1 + A2) from the record's own vertices; the
	 * same two triangles give each shear wing pair its area. */
	for (uint32_t i = 0; i < nb; i++) {
		const sim_bend *c = &sim->bend[i];
		sim_v3 p0 = v3_of4(x[c->v[0]]), p1 = v3_of4(x[c->v[1]]);
		sim_v3 p2 = v3_of4(x[c->v[2]]), p3 = v3_of4(x[c->v[3]]);
		double area = (double)tri_area(p0, p1, p2) + (double)tri_area(p0, p1, p3);
		sim_v3 e = v3_sub(p1, p0);
		double ee = (double)v3_dot(e, e);
		X->bend_geo[i] = area > 0.0 ? (float)(SIM_XPBD_BEND_C * ee / area) : 0.0f;
		X->bend_rest[i] = sim_bend_signed_rest(p0, p1, p2, p3);
		kv[i] = (key_val){edge_key(c->v[2], c->v[3]), i, (float)area};
	}
	qsort(kv, nb, sizeof *kv, key_cmp);
	for (uint32_t i = 0; i < nsh; i++) {
		const sim_dist *c = &sim->shear[i];
		const key_val *k = key_find(kv, nb, edge_key(c->a, c->b));
		/* Wings of a pair with a zero-area triangle have no bending
		 * record and no area: no shear stiffness either. */
		if (k != NULL)
			X->shear_geo[i] = (float)(SIM_XPBD_SHEAR_C * k->value / ((double)c->rest * c->rest));
	}
	free(kv);
	return DRAPE_OK;
}

void sim_xpbd_free(sim_xpbd *X)
{
	free(X->stretch_geo);
	free(X->stretch_warp);
	free(X->shear_geo);
	free(X->bend_geo);
	free(X->bend_rest);
	free(X->stretch_kt);
	free(X->stretch_kc);
	free(X->stretch_lambda);
	free(X->shear_kt);
	free(X->shear_lambda);
	free(X->bend_kt);
	free(X->bend_lambda);
	free(X->lra);
	free(X->chain);
	memset(X, 0, sizeof *X);
}

size_t sim_xpbd_bytes(const drape_sim *sim)
{
	size_t per_stretch = 2 + (sim->xpbd.stretch_kt ? 3 : 0);
	size_t per_other = 1 + (sim->xpbd.stretch_kt ? 2 : 0);
	return sizeof(float) * (per_stretch * sim->stretch_count +
				per_other * ((size_t)sim->shear_count + sim->bend_count) + sim->bend_count) +
	       (sim->xpbd.lra ? sim->lra_count * sizeof(sim_dist) : 0) +
	       (size_t)sim->xpbd.chain_count * sizeof(sim_dist);
}

/*
 * The XPBD schedule, chosen by measurement (docs/material.md): the frame's
 * budget of substeps x iterations projections is spent as that many small
 * steps of one iteration each (Macklin, Storey, Lu, Terdiman, Chentanez,
 * Kim, Müller, "Small Steps in Physics Simulation", SCA 2019): the error a
 * stiff constraint leaves after one iteration falls with dt^2, so the same
 * number of sweeps gets far closer to the converged cloth than iterations
 * of fewer substeps (corner-hung sheet of k = 5000 N/m at 4 x 10: the
 * bottom edge drops 1.5 cm against 7.3 cm).
 *
 * Steps shorter than SIM_XPBD_MIN_DT are not taken: positions are float32,
 * and a vertex at rest a metre from the origin moves by g dt^2 in its first
 * substep, which below about 1e-4 s is less than half a unit in the last
 * place of its coordinate: p = x + dt v rounds back to x, the velocity
 * (p - x) / dt comes out 0, and the vertex never starts to fall (a strip at
 * 16 x 40 and 24 fps stood still). At 1 / 2000 s the first substep's
 * motion is 20 units in the last place at 1 m. The rest of the budget goes
 * to iterations within each step, where lambda accumulates (XPBD proper).
 * The step count never goes below params.substeps.
 */
#define SIM_XPBD_MIN_DT (1.0 / 2000.0)

/*
 * The mesh-aware schedule (params.schedule = DRAPE_SCHEDULE_MESH, or the
 * internal SIM_CREATE_XPBD_MESH): a step's error grows with the stiffness
 * number k_e dt^2 (w_a + w_b) of its edges (docs/material.md, "What the defaults
 * resolve"). Refining a mesh by r keeps k_e (k A / l0^2) and divides the
 * vertex masses by r^2, so the same frame budget leaves a finer cloth
 * softer. This schedule measures the number at the frame schedule's step
 * (the SIM_XPBD_MESH_PERCENTILE-th percentile over the stretch edges that
 * have a free end, so that a few slivers do not set the pace for the whole
 * cloth) and takes as many more steps as keep it at SIM_XPBD_MESH_TARGET:
 * the number falls as dt^2, so n = n_frame sqrt(number / target). Steps
 * stay no shorter than SIM_XPBD_MIN_DT; what is still wanted past that
 * goes to iterations per step, and the whole frame is capped at
 * SIM_XPBD_MESH_MAX_FACTOR times the user's budget of sweeps, rounded up
 * to whole iterations of every step (a 15k-vertex woven would otherwise ask
 * for thousands). It never takes fewer steps or
 * sweeps than the frame schedule. The target was chosen on a hanging denim
 * strip (test_sim_material.c, test_resolution_independence; number 0.43
 * on 5 x 17 vertices and 3.1 on 13 x 49 at 40 steps): 0.25 left the
 * coarse strip 6.5 % longer than converged (53 steps), 0.1 is within
 * 0.2 % on both (83 x 2 and 83 x 3), 0.05 no closer. -D overrides it for
 * such measurements.
 */
#define SIM_XPBD_MESH_PERCENTILE 0.95
#ifndef SIM_XPBD_MESH_TARGET
#define SIM_XPBD_MESH_TARGET 0.1
#endif
#define SIM_XPBD_MESH_MAX_FACTOR 8u

static int float_cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

drape_err sim_xpbd_stiffness_number(const drape_sim *sim, double dt, double *out, drape_error *err)
{
	const drape_sim_params *P = &sim->params;
	const sim_xpbd *X = &sim->xpbd;
	const uint32_t ns = sim->stretch_count;
	float *v = malloc((ns ? ns : 1) * sizeof *v);
	if (v == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "material: out of memory for the schedule");
	const double k0 = P->stretch_k;
	double ku, kv;
	edge_warp_weft(k0, P->stretch_k_weft > 0.0f ? P->stretch_k_weft : k0, &ku, &kv);
	uint32_t m = 0;
	for (uint32_t i = 0; i < ns; i++) {
		double w = (double)sim->x[sim->stretch[i].a].w + (double)sim->x[sim->stretch[i].b].w;
		if (!(w > 0.0))
			continue;
		double c = X->stretch_warp[i];
		double k = c < 0.0 ? k0 : 1.0 / (c / ku + (1.0 - c) / kv);
		v[m++] = (float)((double)X->stretch_geo[i] * k * w);
	}
	double q = 0.0;
	if (m > 0) {
		qsort(v, m, sizeof *v, float_cmp);
		q = v[(uint32_t)floor(SIM_XPBD_MESH_PERCENTILE * (double)(m - 1))];
	}
	free(v);
	*out = q * dt * dt;
	return DRAPE_OK;
}

int sim_xpbd_mesh_schedule(const drape_sim *sim)
{
	return sim->params.model == DRAPE_MODEL_XPBD &&
	       ((sim->flags & SIM_CREATE_XPBD_MESH) || sim->params.schedule == DRAPE_SCHEDULE_MESH);
}

void sim_xpbd_schedule(const drape_sim *sim, double number, uint32_t *steps, uint32_t *iterations)
{
	const drape_sim_params *P = &sim->params;
	const uint32_t S = (uint32_t)P->substeps, I = (uint32_t)P->iterations;
	if (sim->flags & SIM_CREATE_XPBD_ITERATE) {
		*steps = S;
		*iterations = I;
		return;
	}
	uint32_t budget = S * I;
	double cap = floor(1.0 / ((double)P->fps * SIM_XPBD_MIN_DT));
	uint32_t most = cap < 1.0 ? 1u : cap > (double)budget ? budget : (uint32_t)cap;
	uint32_t n = most > S ? most : S;
	uint32_t it = (budget + n - 1) / n;
	if (sim_xpbd_mesh_schedule(sim) && number > SIM_XPBD_MESH_TARGET) {
		/* number is the figure at the frame schedule's step (1 / (fps n)). */
		double want = ceil((double)n * sqrt(number / SIM_XPBD_MESH_TARGET));
		double sweeps = (double)n * it;
		double top = (double)SIM_XPBD_MESH_MAX_FACTOR * budget;
		if (top < sweeps)
			top = sweeps;
		if (want > top)
			want = top;
		uint32_t longest = cap < 1.0 ? 1u : cap > want ? (uint32_t)want : (uint32_t)cap;
		uint32_t n2 = longest > n ? longest : n;
		uint32_t it2 = (uint32_t)ceil(want / n2);
		if (it2 < it)
			it2 = it;
		if (it2 > DRAPE_SIM_MAX_ITERATIONS)
			it2 = DRAPE_SIM_MAX_ITERATIONS;
		n = n2;
		it = it2;
	}
	*steps = n;
	*iterations = it;
}

drape_err sim_xpbd_derive(drape_sim *sim, drape_error *err)
{
	const drape_sim_params *P = &sim->params;
	sim_xpbd *X = &sim->xpbd;
	if (P->model != DRAPE_MODEL_XPBD)
		return DRAPE_OK;
	const uint32_t ns = sim->stretch_count, nsh = sim->shear_count, nb = sim->bend_count;
	if (X->stretch_kt == NULL) {
		X->stretch_kt = malloc((ns ? ns : 1) * sizeof(float));
		X->stretch_kc = malloc((ns ? ns : 1) * sizeof(float));
		X->stretch_lambda = calloc(ns ? ns : 1, sizeof(float));
		X->shear_kt = malloc((nsh ? nsh : 1) * sizeof(float));
		X->shear_lambda = calloc(nsh ? nsh : 1, sizeof(float));
		X->bend_kt = malloc((nb ? nb : 1) * sizeof(float));
		X->bend_lambda = calloc(nb ? nb : 1, sizeof(float));
		if (!X->stretch_kt || !X->stretch_kc || !X->stretch_lambda || !X->shear_kt ||
		    !X->shear_lambda || !X->bend_kt || !X->bend_lambda) {
			free(X->stretch_kt), free(X->stretch_kc), free(X->stretch_lambda);
			free(X->shear_kt), free(X->shear_lambda), free(X->bend_kt), free(X->bend_lambda);
			X->stretch_kt = X->stretch_kc = X->stretch_lambda = NULL;
			X->shear_kt = X->shear_lambda = X->bend_kt = X->bend_lambda = NULL;
			return drape_error_setf(err, DRAPE_ENOMEM, "material: out of memory");
		}
	}
	double number = 0.0;
	if (sim_xpbd_mesh_schedule(sim)) {
		/* The figure at the frame schedule's step, which is where the
		 * schedule starts from (number 0 gives the frame schedule). */
		uint32_t s0, i0;
		sim_xpbd_schedule(sim, 0.0, &s0, &i0);
		drape_err rc = sim_xpbd_stiffness_number(sim, 1.0 / ((double)P->fps * s0), &number, err);
		if (rc != DRAPE_OK)
			return rc;
	}
	sim_xpbd_schedule(sim, number, &X->steps, &X->iterations);
	X->number = number;
	X->dt = 1.0 / ((double)P->fps * (double)X->steps);
	sim_xpbd_rates(sim, X->dt);
	return sim_tether_derive(sim, err);
}

void sim_xpbd_rates(drape_sim *sim, double dt)
{
	const drape_sim_params *P = &sim->params;
	sim_xpbd *X = &sim->xpbd;
	const uint32_t ns = sim->stretch_count, nsh = sim->shear_count, nb = sim->bend_count;
	const double dt2 = dt * dt;
	const double k0 = P->stretch_k;
	double ku, kv;
	edge_warp_weft(k0, P->stretch_k_weft > 0.0f ? P->stretch_k_weft : k0, &ku, &kv);
	const double kcmp = P->compress_k;
	for (uint32_t i = 0; i < ns; i++) {
		double c = X->stretch_warp[i];
		/* Springs in series: the compliances add (file comment); no
		 * grain, the warp as it is. */
		double k = c < 0.0 ? k0 : 1.0 / (c / ku + (1.0 - c) / kv);
		double g = X->stretch_geo[i];
		X->stretch_kt[i] = (float)(g * k * dt2);
		X->stretch_kc[i] = (float)(g * (kcmp > 0.0 ? kcmp : k) * dt2);
	}
	for (uint32_t i = 0; i < nsh; i++)
		X->shear_kt[i] = (float)((double)X->shear_geo[i] * P->shear_k * dt2);
	for (uint32_t i = 0; i < nb; i++)
		X->bend_kt[i] = (float)((double)X->bend_geo[i] * P->bend_k * dt2);
}

void sim_xpbd_reset(const drape_sim *sim)
{
	const sim_xpbd *X = &sim->xpbd;
	memset(X->stretch_lambda, 0, sim->stretch_count * sizeof(float));
	memset(X->shear_lambda, 0, sim->shear_count * sizeof(float));
	memset(X->bend_lambda, 0, sim->bend_count * sizeof(float));
}
