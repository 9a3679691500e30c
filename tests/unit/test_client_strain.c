/*
 * The edge strain of `drape run`'s summary (client/cli/strain.c): the last
 * frame's maximum and 99th percentile against the rest mesh, checked on
 * deformations whose strains are known in closed form.
 */
#include "client/cli/strain.c"
#include "tests/unit/check.h"

#include <math.h>
#include <stdlib.h>

enum { N = 21 }; /* vertices per side */

/* An N x N grid of unit spacing, split along alternating diagonals. */
static void grid(float *pos, uint32_t *tri)
{
	for (uint32_t j = 0; j < N; j++)
		for (uint32_t i = 0; i < N; i++) {
			pos[(j * N + i) * 3] = (float)i;
			pos[(j * N + i) * 3 + 1] = (float)j;
			pos[(j * N + i) * 3 + 2] = 0.0f;
		}
	uint32_t *t = tri;
	for (uint32_t j = 0; j + 1 < N; j++)
		for (uint32_t i = 0; i + 1 < N; i++) {
			uint32_t a = j * N + i, b = a + 1, c = a + N + 1, d = a + N;
			*t++ = a, *t++ = b, *t++ = c, *t++ = a, *t++ = c, *t++ = d;
		}
}

static void test_uniform_stretch(void)
{
	float rest[N * N * 3], pos[N * N * 3];
	uint32_t tri[(N - 1) * (N - 1) * 6];
	grid(rest, tri);
	/* x stretched by 10 %: edges along x strain 0.1, along y 0, the
	 * diagonals sqrt(1.1^2 + 1) / sqrt(2) - 1 = 0.05125. */
	for (int v = 0; v < N * N; v++) {
		pos[v * 3] = rest[v * 3] * 1.1f;
		pos[v * 3 + 1] = rest[v * 3 + 1];
		pos[v * 3 + 2] = 0.0f;
	}
	float mx = -1, p99 = -1;
	CHECK(cli_edge_strain(rest, pos, N * N, tri, (N - 1) * (N - 1) * 2, &mx, &p99) == 0);
	CHECK_NEAR(mx, 0.1, 1e-6);
	/* A third of the edges are x edges, so the 99th percentile is 0.1 too. */
	CHECK_NEAR(p99, 0.1, 1e-6);
	/* Rigid motion is no strain: a rotation by 90 degrees and a shift. */
	for (int v = 0; v < N * N; v++) {
		pos[v * 3] = -rest[v * 3 + 1] + 5.0f;
		pos[v * 3 + 1] = rest[v * 3] - 2.0f;
		pos[v * 3 + 2] = 3.0f;
	}
	CHECK(cli_edge_strain(rest, pos, N * N, tri, (N - 1) * (N - 1) * 2, &mx, &p99) == 0);
	CHECK(mx < 1e-6f && p99 < 1e-6f);
}

/* One vertex pulled out of the plane: only its 6 edges strain, so the
 * maximum is theirs while the 99th percentile stays 0. */
static void test_percentile_ignores_a_few_edges(void)
{
	float rest[N * N * 3], pos[N * N * 3];
	uint32_t tri[(N - 1) * (N - 1) * 6];
	grid(rest, tri);
	memcpy(pos, rest, sizeof pos);
	const int v = 10 * N + 10;
	pos[v * 3 + 2] = 0.75f;
	float mx = -1, p99 = -1;
	CHECK(cli_edge_strain(rest, pos, N * N, tri, (N - 1) * (N - 1) * 2, &mx, &p99) == 0);
	/* Its axis-aligned edges: sqrt(1 + 0.75^2) - 1 = 0.25; diagonals:
	 * sqrt(2 + 0.5625) / sqrt(2) - 1 = 0.1319. */
	CHECK_NEAR(mx, 0.25, 1e-6);
	/* 2 * 20 * 21 + 400 = 1240 unique edges: the 99th percentile is the
	 * nearest rank ceil(0.99 * 1240) = 1228, below the 6 strained ones. */
	CHECK_NEAR(p99, 0.0, 1e-7);
}

static void test_no_edges(void)
{
	float p[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
	uint32_t t[3] = {0, 0, 0};
	float mx = 7, p99 = 7;
	CHECK(cli_edge_strain(p, p, 3, t, 1, &mx, &p99) == -1);
	CHECK(mx == 7 && p99 == 7);
	CHECK(cli_edge_strain(p, p, 3, t, 0, &mx, &p99) == -1);
}

static const check_test tests[] = {
	CHECK_TEST(test_uniform_stretch),
	CHECK_TEST(test_percentile_ignores_a_few_edges),
	CHECK_TEST(test_no_edges),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
