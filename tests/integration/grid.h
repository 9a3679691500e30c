/* The cloths the integration tests send: the raw-socket tests' square of
 * n x n quads in the plane y = 1 pinned at two corners, and the libdrape
 * tests' sheet hanging from its top row. Shared by the programs in
 * tests/integration/ (see the Makefile). */
#ifndef DRAPE_TESTS_GRID_H
#define DRAPE_TESTS_GRID_H

#include <stdbool.h>
#include <stdint.h>

#include "drape/drape.h"

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

/* A sheet of nx x ny vertices spanning x in [-0.5, 0.5] and y in [1, 2]
 * (z = 0), triangulated, hanging from its top row (y = 2), which is pinned. */
typedef struct itest_sheet {
	float *pos;     /* nv * 3 */
	uint32_t *tri;  /* nt * 3 */
	uint32_t *pins; /* the top row: nx */
	uint32_t nx, ny, nv, nt;
} itest_sheet;

/* Fills s; false when out of memory. Free with itest_sheet_free. */
bool itest_sheet_make(itest_sheet *s, uint32_t nx, uint32_t ny);

/* Fills d with drape_session_desc_default's values plus s's mesh and pins;
 * d points into s, which must outlive the request. */
void itest_sheet_desc(const itest_sheet *s, drape_session_desc *d);

void itest_sheet_free(itest_sheet *s);

#endif
