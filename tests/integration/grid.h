/* The cloth the raw-socket integration tests send: a square of n x n quads
 * in the plane y = 1, pinned at two corners. Shared by the programs in
 * tests/integration/ (see the Makefile). */
#ifndef DRAPE_TESTS_GRID_H
#define DRAPE_TESTS_GRID_H

#include <stdint.h>

typedef struct itest_grid {
	float *pos;
	uint32_t *tri;
	uint32_t nv, nt;
	uint32_t pins[2];
} itest_grid;

/* Fills g with (n + 1)^2 vertices on the unit square and 2 n^2 triangles;
 * pins vertices 0 and n. Free with itest_grid_free. */
void itest_grid_make(itest_grid *g, uint32_t n);

void itest_grid_free(itest_grid *g);

#endif
