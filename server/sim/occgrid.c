/* The occupancy grid of the body contacts' broad phase (occgrid.h). */
#include "server/sim/occgrid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The cell of v along axis k, -1 below the grid (or NaN) and n[k] above
 * it: monotone in v, so the filter stays exact. */
static inline int32_t coord(const sim_occgrid *g, int k, float v)
{
	float f = floorf((v - g->lo[k]) * g->inv);
	if (!(f >= 0.0f))
		return -1;
	if (f >= (float)g->n[k])
		return (int32_t)g->n[k];
	return (int32_t)f;
}

int sim_occgrid_build(sim_occgrid *g, const float *boxes, uint32_t count, const float *region,
		      float cell)
{
	g->n[0] = g->n[1] = g->n[2] = 0;
	for (int k = 0; k < 3; k++)
		if (!(isfinite(region[k]) && isfinite(region[k + 3]) && region[k] <= region[k + 3]))
			return -1;
	if (!(cell > 0.0f) || !isfinite(cell))
		return -1;
	/* Grow the cell until the grid fits its bound (each doubling divides
	 * the cells by up to 8). */
	double ext[3], cells;
	float inv;
	for (;;) {
		/* The last cell is the region's top's, computed as coord()
		 * computes it, so every point of the region has a cell. */
		inv = 1.0f / cell;
		cells = 1.0;
		for (int k = 0; k < 3; k++) {
			ext[k] = (double)floorf((region[k + 3] - region[k]) * inv) + 1.0;
			cells *= ext[k];
		}
		if (cells <= SIM_OCCGRID_MAX_CELLS && cells >= 1.0)
			break;
		if (!(cells >= 1.0))
			return -1;
		cell *= 2.0f;
	}
	if ((size_t)cells > g->cap) {
		uint8_t *o = realloc(g->occ, (size_t)cells);
		if (o == NULL)
			return -1;
		g->occ = o;
		g->cap = (size_t)cells;
	}
	g->cell = cell;
	g->inv = inv;
	for (int k = 0; k < 3; k++) {
		g->lo[k] = region[k];
		g->n[k] = (uint32_t)ext[k];
	}
	memset(g->occ, 0, (size_t)cells);
	const size_t sy = g->n[0], sz = (size_t)g->n[0] * g->n[1];
	for (uint32_t i = 0; i < count; i++) {
		const float *b = &boxes[6 * (size_t)i];
		if (!(b[0] <= b[3] && b[1] <= b[4] && b[2] <= b[5]))
			continue;
		int32_t lo[3], hi[3];
		for (int k = 0; k < 3; k++) {
			/* The region holds every box, so this clamps
			 * nothing; it keeps a bad caller inside the array. */
			int32_t a = coord(g, k, b[k]), c = coord(g, k, b[k + 3]);
			lo[k] = a < 0 ? 0 : a;
			hi[k] = c >= (int32_t)g->n[k] ? (int32_t)g->n[k] - 1 : c;
		}
		for (int32_t z = lo[2]; z <= hi[2]; z++)
			for (int32_t y = lo[1]; y <= hi[1]; y++) {
				uint8_t *row = &g->occ[(size_t)z * sz + (size_t)y * sy];
				for (int32_t x = lo[0]; x <= hi[0]; x++)
					row[x] = 1;
			}
	}
	return 0;
}

void sim_occgrid_cells(const sim_occgrid *g, const float *box, int32_t *lo, int32_t *hi)
{
	for (int k = 0; k < 3; k++) {
		if (!(box[k] <= box[k + 3])) {
			lo[k] = 0, hi[k] = (int32_t)g->n[k] - 1;
			continue;
		}
		lo[k] = coord(g, k, box[k]);
		hi[k] = coord(g, k, box[k + 3]);
	}
}

int sim_occgrid_any_cells(const sim_occgrid *g, const int32_t *lo, const int32_t *hi)
{
	if (g->n[0] == 0)
		return 1;
	int32_t a[3], c[3];
	for (int k = 0; k < 3; k++) {
		/* Wholly below or above the region: the boxes, inside it,
		 * meet nothing of it. */
		if (hi[k] < 0 || lo[k] >= (int32_t)g->n[k])
			return 0;
		a[k] = lo[k] < 0 ? 0 : lo[k];
		c[k] = hi[k] >= (int32_t)g->n[k] ? (int32_t)g->n[k] - 1 : hi[k];
	}
	const size_t sy = g->n[0], sz = (size_t)g->n[0] * g->n[1];
	for (int32_t z = a[2]; z <= c[2]; z++)
		for (int32_t y = a[1]; y <= c[1]; y++) {
			const uint8_t *row = &g->occ[(size_t)z * sz + (size_t)y * sy];
			for (int32_t x = a[0]; x <= c[0]; x++)
				if (row[x])
					return 1;
		}
	return 0;
}

int sim_occgrid_any(const sim_occgrid *g, const float *box)
{
	if (g->n[0] == 0)
		return 1;
	int32_t lo[3], hi[3];
	sim_occgrid_cells(g, box, lo, hi);
	return sim_occgrid_any_cells(g, lo, hi);
}

void sim_occgrid_free(sim_occgrid *g)
{
	free(g->occ);
	memset(g, 0, sizeof *g);
}
