/*
 * Soft pins (server/sim/softpin.c, drape_sim_desc.pin_stiffness), tested
 * against Hooke's law: a mass m hanging on a soft pin of stiffness k
 * settles m g / k below its target, for two stiffnesses (so the sag goes
 * as 1/k); a hard pin beside soft ones does not move at all; bad
 * stiffnesses are refused naming the field; the result does not depend on
 * the thread count.
 */
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A small triangle whose three vertices (mass M each) hang on soft pins
 * of stiffness k: all sag together, the edges unstretched, so each vertex
 * is a mass on a spring. Steps until it is at rest (kinetic energy below
 * a bound, or a generous frame limit) and gives the mean sag. */
#define M 0.1f
static void settled_sag(float k, double *sag_out, double *sideways)
{
	const float pos[9] = {0.0f, 0.0f, 0.0f, 0.1f, 0.0f, 0.0f, 0.0f, 0.0f, 0.1f};
	const uint32_t tri[3] = {0, 1, 2};
	const float inv_mass[3] = {1.0f / M, 1.0f / M, 1.0f / M};
	const uint32_t pins[3] = {0, 1, 2};
	const float stiff[3] = {k, k, k};
	drape_sim_desc d;
	drape_error err;
	drape_sim_desc_default(&d);
	CHECK_OK(drape_material_preset("cotton", &d.params, &err));
	d.params.wind[0] = d.params.wind[1] = d.params.wind[2] = 0.0f;
	d.positions = pos;
	d.vertex_count = 3;
	d.triangles = tri;
	d.triangle_count = 1;
	d.inv_mass = inv_mass;
	d.pins = pins;
	d.pin_count = 3;
	d.pin_stiffness = stiff;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	if (sim == NULL)
		return;
	CHECK(sim->topo.pinned_vertices == 0);
	/* The spring's period is 2 pi sqrt(m/k), a fraction of a second;
	 * the preset's damping settles it within seconds. */
	for (int f = 0; f < 24 * 60; f++) {
		CHECK_OK(drape_sim_step(sim, NULL, &err));
		if (f > 24 && kinetic_energy(sim) < 1e-12)
			break;
	}
	CHECKF(kinetic_energy(sim) < 1e-9, "still moving: %g J", kinetic_energy(sim));
	float x[9];
	drape_sim_get_positions(sim, x);
	double sag = 0.0, side = 0.0;
	for (int i = 0; i < 3; i++) {
		sag += (pos[3 * i + 1] - x[3 * i + 1]) / 3.0;
		side = fmax(side, fabs(x[3 * i] - pos[3 * i]));
		side = fmax(side, fabs(x[3 * i + 2] - pos[3 * i + 2]));
	}
	*sideways = side;
	*sag_out = sag;
	drape_sim_destroy(sim);
}

static void test_soft_pin_sags_mg_over_k(void)
{
	const float ks[2] = {50.0f, 200.0f};
	for (int i = 0; i < 2; i++) {
		double side = 1.0, sag = 0.0;
		settled_sag(ks[i], &sag, &side);
		double want = (double)M * 9.81 / ks[i];
		printf("soft pin k=%g N/m: sag %.6f m, m g / k %.6f m (%.2f %%)\n", (double)ks[i],
		       sag, want, 100.0 * (sag - want) / want);
		CHECKF(fabs(sag - want) < 0.03 * want, "k=%g: sag %g, want %g", (double)ks[i], sag,
		       want);
		CHECKF(side < 1e-4, "k=%g: moved %g sideways", (double)ks[i], side);
	}
}

/* A hanging sheet pinned along its top row, hard at the corners and soft
 * between: the hard pins stay exactly where they started, the soft ones
 * give way to the sheet's weight. */
static void test_hard_pin_does_not_move(void)
{
	grid g;
	const float o[3] = {-0.2f, 0.0f, 0.0f}, u[3] = {0.4f, 0, 0}, v[3] = {0, -0.4f, 0};
	CHECK(grid_make(&g, 9, 9, o, u, v));
	uint32_t pins[9];
	float stiff[9];
	for (uint32_t i = 0; i < 9; i++) {
		pins[i] = i;
		stiff[i] = i == 0 || i == 8 ? 0.0f : 20.0f;
	}
	drape_sim_desc d;
	drape_error err;
	desc_from_grid(&d, &g);
	CHECK_OK(drape_material_preset("cotton", &d.params, &err));
	d.pins = pins;
	d.pin_count = 9;
	d.pin_stiffness = stiff;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	CHECK(sim->topo.pinned_vertices == 2);
	for (int f = 0; f < 48; f++)
		CHECK_OK(drape_sim_step(sim, NULL, &err));
	float *x = malloc((size_t)g.nv * 3 * sizeof *x);
	drape_sim_get_positions(sim, x);
	for (int k = 0; k < 3; k++) {
		CHECK(x[k] == g.pos[k]);
		CHECK(x[3 * 8 + k] == g.pos[3 * 8 + k]);
	}
	/* The middle soft pin carries part of the sheet: it sags, but stays
	 * within what the whole sheet's weight on it alone would stretch. */
	double sag = g.pos[3 * 4 + 1] - x[3 * 4 + 1];
	CHECKF(sag > 1e-4, "soft pin did not give: %g", sag);
	free(x);
	drape_sim_destroy(sim);
	grid_free(&g);
}

static void test_bad_pin_stiffness_refused(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {0.1f, 0, 0}, v[3] = {0, -0.1f, 0};
	CHECK(grid_make(&g, 3, 3, o, u, v));
	const uint32_t pins[3] = {0, 1, 1};
	const float bad[3][3] = {{0.0f, -1.0f, 0.0f}, {0.0f, NAN, 0.0f}, {0.0f, INFINITY, 0.0f}};
	drape_sim_desc d;
	drape_error err;
	drape_sim *sim = NULL;
	for (int i = 0; i < 3; i++) {
		desc_from_grid(&d, &g);
		d.pins = pins;
		d.pin_count = 2;
		d.pin_stiffness = bad[i];
		CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL);
		CHECK(sim == NULL);
		CHECKF(strstr(err.message, "pin_stiffness[1]") != NULL, "%s", err.message);
	}
	/* A vertex pinned twice, once soft: which would hold is ambiguous. */
	const float twice[3] = {0.0f, 0.0f, 5.0f};
	desc_from_grid(&d, &g);
	d.pins = pins;
	d.pin_count = 3;
	d.pin_stiffness = twice;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "pin_stiffness[2]") != NULL, "%s", err.message);
	grid_free(&g);
}

static void test_soft_pins_same_on_any_thread_count(void)
{
	grid g;
	const float o[3] = {-0.3f, 0.0f, 0.0f}, u[3] = {0.6f, 0, 0}, v[3] = {0, 0, 0.6f};
	CHECK(grid_make(&g, 24, 24, o, u, v));
	uint32_t pins[24];
	float stiff[24];
	for (uint32_t i = 0; i < 24; i++) {
		pins[i] = i * 24 + (i % 3) * 7;
		stiff[i] = i % 2 ? 30.0f + (float)i : 0.0f;
	}
	float *xs[2];
	for (int k = 0; k < 2; k++) {
		drape_pool *pool = NULL;
		drape_sim_desc d;
		drape_error err;
		drape_sim *sim = NULL;
		CHECK_OK(drape_pool_create(k == 0 ? 1 : 2, &pool, &err));
		desc_from_grid(&d, &g);
		CHECK_OK(drape_material_preset("cotton", &d.params, &err));
		d.pins = pins;
		d.pin_count = 24;
		d.pin_stiffness = stiff;
		d.pool = pool;
		CHECK_OK(drape_sim_create(&d, &sim, &err));
		for (int f = 0; f < 6; f++)
			CHECK_OK(drape_sim_step(sim, NULL, &err));
		xs[k] = malloc((size_t)g.nv * 3 * sizeof *xs[k]);
		drape_sim_get_positions(sim, xs[k]);
		drape_sim_destroy(sim);
		drape_pool_destroy(pool);
	}
	CHECK(memcmp(xs[0], xs[1], (size_t)g.nv * 3 * sizeof *xs[0]) == 0);
	free(xs[0]);
	free(xs[1]);
	grid_free(&g);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_soft_pin_sags_mg_over_k),
		CHECK_TEST(test_hard_pin_does_not_move),
		CHECK_TEST(test_bad_pin_stiffness_refused),
		CHECK_TEST(test_soft_pins_same_on_any_thread_count),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
