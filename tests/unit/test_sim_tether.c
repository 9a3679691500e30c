/*
 * The physical material's long-range attachments and strain limit
 * (server/sim/tether.c) against physics:
 *
 *  - the slack is the static bound of the file comment, computed by hand:
 *    4 M g / (k_min n_pins h), at least 1 %;
 *  - a woven sheet (k = 2000 N/m, 0.22 kg/m^2, as the cotton preset) on
 *    1 cm cells, released horizontal from its pinned top row at the
 *    bench's 60 fps and 4 x 5: the weight per unit width of the pinned row
 *    is rho g L = 2.2 N/m, so the largest tension of the swing (three times
 *    that, a pendulum's bottom) strains the fabric by 0.3 %; the edges must
 *    end under 2 % (the target, on the last frame), where the same
 *    sheet without tethers (long_range 0) ends far beyond it, and stay
 *    under 5 % over the run (34 % without);
 *  - no free vertex is ever farther from its pin than the geodesic rest
 *    distance times 1 + slack (the bound the tethers enforce);
 *  - where the material itself stretches more than 1 % (a soft 60 N/m
 *    strip under its own weight, converged settings), the tethers change
 *    nothing: the elongation matches rho g L^2 / (2 k) and equals the run
 *    without tethers.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#define G 9.81

/* Under AddressSanitizer, where the case's purpose is memory safety, the
 * woven sheet swings for its first 0.75 s (SWING_FRAMES 45 instead of
 * 90): the same sheet and checks, through the bottom of the first swing
 * (the run's largest strain without tethers, 33.9 %, and 2.1 % with them,
 * both as over 90 frames), the last frame 14.5 % without tethers and
 * 1.35 % with. The plain pass swings the full 1.5 s (docs/testsuite.md). */
#ifndef TETHER_SANITIZED
#if defined(__SANITIZE_ADDRESS__)
#define TETHER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_SANITIZED 1
#endif
#endif
#endif
#ifndef TETHER_SANITIZED
#define TETHER_SANITIZED 0
#endif
#ifndef SWING_FRAMES
#define SWING_FRAMES (TETHER_SANITIZED ? 45 : 90)
#endif

static void woven_params(drape_sim_params *p, float k, float rho)
{
	drape_sim_params_default(p);
	p->model = DRAPE_MODEL_XPBD;
	p->stretch_k = k;
	p->shear_k = k / 100.0f;
	p->bend_k = 1.25e-4f;
	p->density = rho;
	p->damping_rate = 0.24f;
	p->drag = 0.0f;
	p->lift = 0.0f;
}

/* Largest tension strain of the stretch edges, from the solver's records. */
static double max_tension(const drape_sim *sim)
{
	double mx = 0.0;
	for (uint32_t e = 0; e < sim->stretch_count; e++) {
		const sim_dist *c = &sim->stretch[e];
		sim_vec4 a = sim->x[c->a], b = sim->x[c->b];
		double dx = (double)a.x - b.x, dy = (double)a.y - b.y, dz = (double)a.z - b.z;
		double s = sqrt(dx * dx + dy * dy + dz * dz) / (double)c->rest - 1.0;
		mx = s > mx ? s : mx;
	}
	return mx;
}

/* Largest |x_a - pin| / geodesic rest distance - 1 over the tethers. */
static double max_tether_excess(const drape_sim *sim)
{
	double mx = -1.0;
	for (uint32_t i = 0; i < sim->lra_count; i++) {
		const sim_dist *c = &sim->lra[i];
		sim_vec4 a = sim->x[c->a], b = sim->x[c->b];
		double dx = (double)a.x - b.x, dy = (double)a.y - b.y, dz = (double)a.z - b.z;
		double s = sqrt(dx * dx + dy * dy + dz * dz) / (double)c->rest - 1.0;
		mx = s > mx ? s : mx;
	}
	return mx;
}

static void test_slack_by_hand(void)
{
	/* 1 m x 1 m, 11 x 11 vertices, top row pinned: free mass is the
	 * lumped mass of the 110 free vertices. */
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -1, 0};
	CHECK(grid_make(&g, 11, 11, o, u, v));
	uint32_t pins[11];
	for (uint32_t i = 0; i < 11; i++)
		pins[i] = i;
	const float ks[2] = {2000.0f, 20.0f};
	for (int c = 0; c < 2; c++) {
		drape_sim_desc d;
		desc_from_grid(&d, &g);
		woven_params(&d.params, ks[c], 0.22f);
		d.pins = pins;
		d.pin_count = 11;
		drape_sim *sim = NULL;
		CHECK(drape_sim_create(&d, &sim, NULL) == DRAPE_OK);
		if (sim == NULL)
			break;
		/* Mass of the free vertices: the whole sheet minus the pinned
		 * row's lumped share (rows of cells 0.1 m tall: the top row
		 * carries a third of the area of the triangles touching it,
		 * which for this diagonal pattern is 0.1 * 1 / 2 of area). */
		double mass = 0.0, h = 0.0;
		for (uint32_t i = 0; i < sim->n; i++)
			if (sim->x[i].w > 0.0f)
				mass += 1.0 / (double)sim->x[i].w;
		CHECK_NEAR(mass, 0.22 * (1.0 - 0.1 / 2.0), 1e-4);
		for (uint32_t e = 0; e < sim->stretch_count; e++)
			h += sim->stretch[e].rest;
		h /= sim->stretch_count;
		double want = fmax(0.01, 4.0 * mass * G / ((double)ks[c] * 11.0 * h));
		printf("  k %g N/m: slack %.5f, by hand 4 M g / (k n h) = %.5f (M %.4f kg, h %.4f m)\n",
		       (double)ks[c], sim->xpbd.tether_slack, want, mass, h);
		CHECK_NEAR(sim->xpbd.tether_slack, want, 1e-7 * want);
		CHECK_NEAR((double)sim_strain_limit_bound(sim), 1.0 + want, 1e-6);
		drape_sim_destroy(sim);
	}
	grid_free(&g);
}

/* The woven sheet released horizontal; returns the run's largest edge
 * tension and tether excess (frame ends), -1 on failure. */
static int swing(int32_t long_range, uint32_t n, int frames, double *max_strain, double *last_strain,
		 double *max_excess, double *slack)
{
	grid g;
	const float o[3] = {0, 1, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	if (!grid_make(&g, n, n, o, u, v)) {
		grid_free(&g);
		return -1;
	}
	uint32_t *pins = malloc(n * sizeof *pins);
	for (uint32_t i = 0; pins && i < n; i++)
		pins[i] = i;
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	woven_params(&d.params, 2000.0f, 0.22f);
	d.params.fps = 60.0f;
	d.params.substeps = 4;
	d.params.iterations = 5;
	d.params.long_range = long_range;
	d.pins = pins;
	d.pin_count = n;
	drape_sim *sim = NULL;
	int rc = pins && drape_sim_create(&d, &sim, NULL) == DRAPE_OK ? 0 : -1;
	*max_strain = 0.0;
	*max_excess = -1.0;
	*slack = sim ? sim->xpbd.tether_slack : 0.0;
	for (int f = 0; rc == 0 && f < frames; f++) {
		if (drape_sim_step(sim, NULL, NULL) != DRAPE_OK) {
			rc = -1;
			break;
		}
		*last_strain = max_tension(sim);
		*max_strain = fmax(*max_strain, *last_strain);
		*max_excess = fmax(*max_excess, max_tether_excess(sim));
	}
	drape_sim_destroy(sim);
	free(pins);
	grid_free(&g);
	return rc;
}

static void test_woven_swing(void)
{
	/* 1 m sheet, 1 cm cells, 1.5 s: it swings down through the vertical
	 * in about 0.5 s and back (0.75 s under the sanitizers). */
	const uint32_t n = 101;
	const int frames = SWING_FRAMES;
	double on_s, on_l, on_x, sl, off_s, off_l, off_x, sl0;
	CHECK(swing(-1, n, frames, &on_s, &on_l, &on_x, &sl) == 0);
	CHECK(swing(0, n, frames, &off_s, &off_l, &off_x, &sl0) == 0);
	const double weight = 0.22 * G * 1.0 / 2000.0;
	printf("  woven sheet 1 m, 1 cm cells, 60 fps 4x5, %d frames: largest edge strain %.3f %% at the last "
	       "frame, %.3f %% over the run, with tethers and chains (slack %.3f %%); %.3f %% and %.3f %% "
	       "without; static rho g L / k = %.3f %%, 3x at the swing's bottom = %.3f %%\n",
	       frames, on_l * 100.0, on_s * 100.0, sl * 100.0, off_l * 100.0, off_s * 100.0, weight * 100.0,
	       3.0 * weight * 100.0);
	printf("  largest distance to the pin over the geodesic rest: %+.4f %% with tethers, %+.4f %% without\n",
	       on_x * 100.0, off_x * 100.0);
	/* The scene must be one the unconverged solve gets wrong, or the
	 * assertions below would prove nothing. */
	CHECKF(off_l > 0.02, "without tethers the sheet ends within 2 %% (%.3f %%): the test is too easy",
	       off_l * 100.0);
	/* The target, on the last frame as make bench measures it. */
	CHECKF(on_l < 0.02, "last frame's largest edge strain %.3f %% (target < 2 %%)", on_l * 100.0);
	/* Over the whole run the hem's whip at the bottom of the second swing
	 * still reaches about 4 % for a frame or two (theory: 0.3 %), against
	 * 34 % without: a guard against regressions, not the physics. */
	CHECKF(on_s < 0.05, "largest edge strain of the run %.3f %%", on_s * 100.0);
	/* The tethers come last in each iteration: their bound holds to
	 * rounding at every frame. */
	CHECKF(on_x <= sl + 1e-5, "a vertex %.4f %% beyond its geodesic distance (slack %.4f %%)", on_x * 100.0,
	       sl * 100.0);
}

/* A soft strip stretching 2.5 % at its top under its own weight
 * (rho g L / k with 0.15 kg/m^2, 60 N/m): at converged settings the
 * elongation is the same with and without tethers, and matches theory. */
static void test_soft_unchanged(void)
{
	const float w = 0.1f, L = 1.0f, rho = 0.15f, k = 60.0f;
	double got[2];
	for (int t = 0; t < 2; t++) {
		grid g;
		const float o[3] = {0, 0, 0}, u[3] = {w, 0, 0}, v[3] = {0, -L, 0};
		CHECK(grid_make(&g, 5, 41, o, u, v));
		uint32_t pins[5] = {0, 1, 2, 3, 4};
		drape_sim_desc d;
		desc_from_grid(&d, &g);
		woven_params(&d.params, k, rho);
		d.params.bend_k = 0.0f;
		d.params.damping_rate = 4.0f;
		d.params.substeps = 16;
		d.params.iterations = 40;
		d.params.long_range = t == 0 ? -1 : 0;
		d.pins = pins;
		d.pin_count = 5;
		drape_sim *sim = NULL;
		CHECK(drape_sim_create(&d, &sim, NULL) == DRAPE_OK);
		for (int f = 0; sim && f < 96; f++)
			CHECK(drape_sim_step(sim, NULL, NULL) == DRAPE_OK);
		float *x = malloc(g.nv * 3 * sizeof *x);
		double drop = 0.0;
		if (sim && x) {
			drape_sim_get_positions(sim, x);
			for (uint32_t i = 0; i < 5; i++)
				drop += -(double)x[3 * (40 * 5 + i) + 1] - L;
			drop /= 5.0;
		}
		got[t] = drop;
		free(x);
		drape_sim_destroy(sim);
		grid_free(&g);
	}
	double want = rho * G * L * L / (2.0 * k);
	printf("  soft strip (60 N/m): elongation %.3f mm with tethers, %.3f mm without, theory %.3f mm\n",
	       got[0] * 1e3, got[1] * 1e3, want * 1e3);
	CHECKF(fabs(got[0] / want - 1.0) < 0.10, "%.4f mm against %.4f mm", got[0] * 1e3, want * 1e3);
	CHECKF(fabs(got[0] / got[1] - 1.0) < 1e-3, "tethers changed the converged elongation: %.4f vs %.4f mm",
	       got[0] * 1e3, got[1] * 1e3);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_slack_by_hand),
		CHECK_TEST(test_woven_swing),
		CHECK_TEST(test_soft_unchanged),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
