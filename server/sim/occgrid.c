/* The occupancy grid of the body contacts' broad phase (occgrid.h). */
#include "server/sim/occgrid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The cell of v along axis k, clamped into the grid. A value below lo (or
 * NaN) gives 0 and one past the last cell the last: clamping only widens a
 * range, so the filter stays exact. */
static inline uint32_t coord(const sim_occgrid *g, int k, float v)
{
	float f = floorf((v - g->lo[k]) / g->cell);
	if (!(f >= 0.0f))
		return 0;
	if (f >= (float)(g->n[k] - 1))
		return g->n[k] - 1;
	return (uint32_t)f;
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
	for (;;) {
		cells = 1.0;
		for (int k = 0; k < 3; k++) {
			ext[k] = floor(((double)region[k + 3] - region[k]) / cell) + 1.0;
			cells *= ext[k];
		}
		if (cells <= SIM_OCCGRID_MAX_CELLS)
			break;
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
		uint32_t lo[3], hi[3];
		for (int k = 0; k < 3; k++) {
			lo[k] = coord(g, k, b[k]);
			hi[k] = coord(g, k, b[k + 3]);
		}
		for (uint32_t z = lo[2]; z <= hi[2]; z++)
			for (uint32_t y = lo[1]; y <= hi[1]; y++)
				memset(&g->occ[z * sz + y * sy + lo[0]], 1, hi[0] - lo[0] + 1);
	}
	return 0;
}

int sim_occgrid_any(const sim_occgrid *g, const float *box)
{
	if (g->n[0] == 0)
		return 1;
	if (!(box[0] <= box[3] && box[1] <= box[4] && box[2] <= box[5]))
		return 1;
	uint32_t lo[3], hi[3];
	for (int k = 0; k < 3; k++) {
		/* Wholly outside the region along an axis: it meets nothing. */
		if (box[k + 3] < g->lo[k])
			return 0;
		lo[k] = coord(g, k, box[k]);
		hi[k] = coord(g, k, box[k + 3]);
	}
	const size_t sy = g->n[0], sz = (size_t)g->n[0] * g->n[1];
	for (uint32_t z = lo[2]; z <= hi[2]; z++)
		for (uint32_t y = lo[1]; y <= hi[1]; y++) {
			const uint8_t *row = &g->occ[z * sz + y * sy];
			for (uint32_t x = lo[0]; x <= hi[0]; x++)
				if (row[x])
					return 1;
		}
	return 0;
}

void sim_occgrid_free(sim_occgrid *g)
{
	free(g->occ);
	memset(g, 0, sizeof *g);
}
