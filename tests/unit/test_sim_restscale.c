/*
 * Rest scale per vertex (server/sim/restscale.c, drape_sim_desc.
 * rest_scale), tested against what a shrunk or loosened pattern must do: a
 * strip hanging from its top, its lower half scaled 0.8, hangs with that
 * half 20 % shorter (plus the material's stretch under its weight, well
 * under 1 % for cotton) while the upper half keeps its length; scaled 1.1
 * the lower half hangs 10 % longer, which only happens if the tethers and
 * the strain limit measure from the scaled lengths too. Bad scales are
 * refused naming the vertex.
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

#define NX 4u
#define NY 21u
#define LEN 0.6f
/* Rows 0 .. MID are the upper half at scale 1; rows MID + 1 .. NY - 1 the
 * lower half at scale s (the edges between MID and MID + 1 get the mean). */
#define MID 10u
#define JOIN 3u

/* Lengths of the upper half and of the lower one after the strip
 * settles (away from the join, see below). */
static void hang(float s, double *upper, double *lower, int pbd)
{
	grid g;
	const float o[3] = {-0.05f, 1.0f, 0.0f}, u[3] = {0.1f, 0, 0}, v[3] = {0, -LEN, 0};
	*upper = *lower = 0.0;
	CHECK(grid_make(&g, NX, NY, o, u, v));
	float *scale = malloc((size_t)g.nv * sizeof *scale);
	uint32_t pins[NX];
	/* grid_make's vertex (i, j) is j * NX + i, row 0 at the origin. */
	for (uint32_t j = 0; j < NY; j++)
		for (uint32_t i = 0; i < NX; i++)
			scale[j * NX + i] = j > MID ? s : 1.0f;
	for (uint32_t i = 0; i < NX; i++)
		pins[i] = i;
	drape_sim_desc d;
	drape_error err;
	desc_from_grid(&d, &g);
	if (!pbd)
		CHECK_OK(drape_material_preset("cotton", &d.params, &err));
	d.params.damping_rate = 4.0f;
	d.pins = pins;
	d.pin_count = NX;
	d.rest_scale = scale;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	float *x = malloc((size_t)g.nv * 3 * sizeof *x), *prev = calloc((size_t)g.nv * 3, sizeof *x);
	for (int f = 0; f < 24 * 30; f++) {
		CHECK_OK(drape_sim_step(sim, NULL, &err));
		drape_sim_get_positions(sim, x);
		double moved = 0.0;
		for (uint32_t i = 0; i < 3 * g.nv; i++)
			moved = fmax(moved, fabs((double)x[i] - prev[i]));
		memcpy(prev, x, (size_t)g.nv * 3 * sizeof *x);
		if (f > 48 && moved < 2e-7)
			break;
	}
	/* Arc length down every column, averaged, over the edges at least
	 * JOIN rows away from the join: there the narrowing (or widening) of
	 * the strip slants the columns and may wrinkle the cloth, which is
	 * geometry, not length. */
	for (uint32_t i = 0; i < NX; i++)
		for (uint32_t j = 0; j + 1 < NY; j++) {
			const float *p = &x[3 * (size_t)(j * NX + i)], *q = &x[3 * (size_t)((j + 1) * NX + i)];
			double l = sqrt(((double)p[0] - q[0]) * ((double)p[0] - q[0]) +
					((double)p[1] - q[1]) * ((double)p[1] - q[1]) +
					((double)p[2] - q[2]) * ((double)p[2] - q[2]));
			if (j + JOIN < MID)
				*upper += l / NX;
			else if (j >= MID + JOIN)
				*lower += l / NX;
		}
	free(x);
	free(prev);
	free(scale);
	drape_sim_destroy(sim);
	grid_free(&g);
}

static void check_half(float s, int pbd)
{
	const double h = LEN / (NY - 1), up0 = (MID - JOIN) * h, low0 = (NY - 1 - MID - JOIN) * h;
	double up = 0.0, low = 0.0;
	hang(s, &up, &low, pbd);
	printf("%s, lower half scaled %g: upper %.5f m (rest %.5f), lower %.5f m (rest %.5f x %g = "
	       "%.5f): %+.3f %%\n",
	       pbd ? "pbd" : "cotton", (double)s, up, up0, low, low0, (double)s, low0 * s,
	       100.0 * (low / (low0 * s) - 1.0));
	/* Within the material's strain of the scaled rest: at most 1 %
	 * longer (the weight below), at most 0.5 % shorter (the pbd model's
	 * edges give a little to the sideways pull where the strip narrows). */
	CHECKF(low > 0.995 * low0 * s && low < 1.01 * low0 * s, "scale %g: lower half %g m, want %g",
	       (double)s, low, low0 * s);
	CHECKF(up > 0.995 * up0 && up < 1.01 * up0, "scale %g: upper half %g m, want %g", (double)s,
	       up, up0);
}

static void test_shrunk_half_hangs_20_percent_shorter(void)
{
	check_half(0.8f, 0);
	check_half(0.8f, 1);
}

static void test_loosened_half_hangs_10_percent_longer(void)
{
	check_half(1.1f, 0);
	check_half(1.1f, 1);
}

static void test_bad_rest_scale_refused(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {0.1f, 0, 0}, v[3] = {0, -0.1f, 0};
	CHECK(grid_make(&g, 3, 3, o, u, v));
	float scale[9];
	const float bad[3] = {0.0f, -1.0f, NAN};
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 9; i++)
			scale[i] = 1.0f;
		scale[5] = bad[k];
		drape_sim_desc d;
		drape_error err;
		drape_sim *sim = NULL;
		desc_from_grid(&d, &g);
		d.rest_scale = scale;
		CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL);
		CHECK(sim == NULL);
		CHECKF(strstr(err.message, "rest_scale[5]") != NULL, "%s", err.message);
	}
	grid_free(&g);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_shrunk_half_hangs_20_percent_shorter),
		CHECK_TEST(test_loosened_half_hangs_10_percent_longer),
		CHECK_TEST(test_bad_rest_scale_refused),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
