/*
 * The body contacts' occupancy grid (server/sim/occgrid.h): a query that
 * answers 0 must meet none of the boxes the grid was built from, whatever
 * their placement against the cells (boxes ending exactly on a cell's
 * border, thin and empty boxes, boxes past the region), because the body
 * contacts skip a feature on that answer and their results must stay
 * those of the full search. And it must answer 0 often enough to be worth
 * asking: most queries far from the boxes are culled.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "server/sim/occgrid.h"
#include "server/sim/selfhash.h"

static uint32_t rng_state = 12345u;

static float frand(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return (float)(rng_state >> 8) / 16777216.0f;
}

/* A box of size up to s at a random place in [0, 1)^3; every fourth one has
 * its faces on multiples of the cell (the borders the floor must get right). */
static void rand_box(float *b, float s, float cell, int snap)
{
	for (int k = 0; k < 3; k++) {
		float lo = frand(), hi = lo + s * frand();
		if (snap) {
			lo = floorf(lo / cell) * cell;
			hi = lo + cell * (float)(int)(3.0f * frand());
		}
		b[k] = lo, b[k + 3] = hi;
	}
}

static void union_of(const float *boxes, uint32_t n, float *region)
{
	for (int k = 0; k < 3; k++)
		region[k] = INFINITY, region[k + 3] = -INFINITY;
	for (uint32_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			region[k] = sim_box_min(region[k], boxes[6 * i + k]);
			region[k + 3] = sim_box_max(region[k + 3], boxes[6 * i + k + 3]);
		}
}

static void test_exact(void)
{
	enum { N = 300, Q = 20000 };
	static float boxes[6 * N];
	const float cell = 0.05f;
	uint32_t culled = 0, far = 0;
	for (int round = 0; round < 4; round++) {
		for (uint32_t i = 0; i < N; i++)
			rand_box(&boxes[6 * i], 0.04f, cell, i % 4 == 0);
		float region[6];
		union_of(boxes, N, region);
		sim_occgrid g;
		memset(&g, 0, sizeof g);
		/* Round 3 asks for cells so small the grid must grow them. */
		CHECK(sim_occgrid_build(&g, boxes, N, region, round == 3 ? 1e-4f : cell) == 0);
		CHECK(g.n[0] * g.n[1] * g.n[2] <= SIM_OCCGRID_MAX_CELLS);
		for (uint32_t q = 0; q < Q; q++) {
			float b[6];
			rand_box(b, 0.03f, g.cell, q % 4 == 0);
			/* Some queries reach past the region. */
			if (q % 7 == 0)
				for (int k = 0; k < 3; k++)
					b[k] -= 0.5f, b[k + 3] += 0.2f * frand();
			int any = 0;
			for (uint32_t i = 0; i < N && !any; i++)
				any = sim_box_overlap(&boxes[6 * i], b);
			int ans = sim_occgrid_any(&g, b);
			CHECKF(ans || !any, "round %d query %u meets a box but the grid answers 0", round, q);
			if (!any) {
				far++;
				culled += !ans;
			}
		}
		sim_occgrid_free(&g);
	}
	printf("  %u queries meeting no box, %u (%.0f %%) culled by the grid\n", far, culled,
	       100.0 * culled / (far ? far : 1));
	/* Sparse boxes: most of the space is empty, so most misses are culled. */
	CHECKF(culled * 2 > far, "only %u of %u misses culled", culled, far);
}

/* Boxes that overlap nothing (NaN, inverted) mark nothing; a NaN or
 * infinite region makes the grid answer 1 to everything. */
static void test_degenerate(void)
{
	float boxes[12] = {0, 0, 0, 0.1f, 0.1f, 0.1f, NAN, 0.5f, 0.5f, 0.6f, 0.6f, 0.6f};
	float region[6] = {0, 0, 0, 1, 1, 1};
	sim_occgrid g;
	memset(&g, 0, sizeof g);
	CHECK(sim_occgrid_build(&g, boxes, 2, region, 0.1f) == 0);
	const float near[6] = {0.05f, 0.05f, 0.05f, 0.06f, 0.06f, 0.06f};
	const float far[6] = {0.55f, 0.55f, 0.55f, 0.56f, 0.56f, 0.56f};
	CHECK(sim_occgrid_any(&g, near) == 1);
	CHECK(sim_occgrid_any(&g, far) == 0);
	const float nanq[6] = {NAN, 0, 0, 1, 1, 1};
	CHECK(sim_occgrid_any(&g, nanq) == 1);
	float bad[6] = {0, 0, 0, INFINITY, 1, 1};
	CHECK(sim_occgrid_build(&g, boxes, 1, bad, 0.1f) == -1);
	CHECK(sim_occgrid_any(&g, far) == 1);
	sim_occgrid_free(&g);
}

/* The inline min and max are libm's fminf and fmaxf, NaN and signed zeros
 * included, so the boxes built with them are the same bits. */
static void test_minmax(void)
{
	const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, INFINITY, -INFINITY, NAN, 3.5f};
	const int n = (int)(sizeof v / sizeof v[0]);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float a = sim_box_min(v[i], v[j]), b = fminf(v[i], v[j]);
			float c = sim_box_max(v[i], v[j]), d = fmaxf(v[i], v[j]);
			CHECKF((isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0, "min(%g, %g)", v[i], v[j]);
			CHECKF((isnan(c) && isnan(d)) || memcmp(&c, &d, 4) == 0, "max(%g, %g)", v[i], v[j]);
		}
}

/* The cells of two boxes' union are the min of their lows and the max of
 * their highs (bodyedge.c takes an edge's cells from its two vertices'). */
static void test_cells_of_union(void)
{
	enum { N = 200 };
	static float boxes[6 * N];
	for (uint32_t i = 0; i < N; i++)
		rand_box(&boxes[6 * i], 0.04f, 0.05f, i % 4 == 0);
	float region[6];
	union_of(boxes, N, region);
	sim_occgrid g;
	memset(&g, 0, sizeof g);
	CHECK(sim_occgrid_build(&g, boxes, N, region, 0.05f) == 0);
	for (int q = 0; q < 20000; q++) {
		float a[6], b[6], u[6];
		rand_box(a, 0.05f, g.cell, q % 3 == 0);
		rand_box(b, 0.05f, g.cell, q % 5 == 0);
		if (q % 7 == 0)
			a[0] -= 0.3f, b[5] += 0.3f;
		for (int k = 0; k < 3; k++)
			u[k] = sim_box_min(a[k], b[k]), u[k + 3] = sim_box_max(a[k + 3], b[k + 3]);
		int32_t la[3], ha[3], lb[3], hb[3], lu[3], hu[3];
		sim_occgrid_cells(&g, a, la, ha);
		sim_occgrid_cells(&g, b, lb, hb);
		sim_occgrid_cells(&g, u, lu, hu);
		for (int k = 0; k < 3; k++) {
			CHECK(lu[k] == (la[k] < lb[k] ? la[k] : lb[k]));
			CHECK(hu[k] == (ha[k] > hb[k] ? ha[k] : hb[k]));
		}
		int any = 0;
		for (uint32_t i = 0; i < N && !any; i++)
			any = sim_box_overlap(&boxes[6 * i], u);
		CHECKF(!any || sim_occgrid_any_cells(&g, lu, hu), "query %d: a box meets the union", q);
	}
	sim_occgrid_free(&g);
}

static const check_test tests[] = {
	CHECK_TEST(test_cells_of_union),
	CHECK_TEST(test_exact),
	CHECK_TEST(test_degenerate),
	CHECK_TEST(test_minmax),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
