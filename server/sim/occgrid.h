/*
 * A dense occupancy grid over a set of boxes: which cells of a region some
 * box touches. The body contacts (bodypush.c, bodyedge.c) ask it, before
 * anything else, whether a body feature's swept box can meet any of the
 * cloth's boxes at all; most of a body is far from a garment (the head,
 * the hands, the feet, a bare arm), and those features are then skipped
 * without measuring their shape or walking the cloth's hash.
 *
 * Exact as a filter: a cell is marked for every box that touches it, and
 * cell indices are floor((v - lo) * (1 / cell)), monotone in v under correctly
 * rounded arithmetic, so a point inside both a query box and a marked box
 * falls in a cell of the query's range that is marked. A query that
 * answers 0 therefore overlaps no box (sim_box_overlap); 1 may be a false
 * positive, which the caller's own tests remove. The grid holds one byte
 * per cell; its cell grows so that it never holds more than
 * SIM_OCCGRID_MAX_CELLS.
 */
#ifndef DRAPE_SIM_OCCGRID_H
#define DRAPE_SIM_OCCGRID_H

#include <stddef.h>
#include <stdint.h>

#define SIM_OCCGRID_MAX_CELLS (1u << 18)

/* fminf and fmaxf as libm computes them (the other operand when one is
 * NaN), inline: the boxes the body contacts build every substep called
 * libm's out-of-line functions once per coordinate. */
static inline float sim_box_min(float a, float b)
{
	return (a < b || b != b) ? a : b;
}

static inline float sim_box_max(float a, float b)
{
	return (a > b || b != b) ? a : b;
}

typedef struct sim_occgrid {
	float lo[3], cell, inv; /* inv = 1 / cell: indices are floor((v - lo) * inv) */
	uint32_t n[3];  /* cells per axis; 0 when the grid holds nothing */
	uint8_t *occ;   /* n[0] * n[1] * n[2] bytes, x fastest */
	size_t cap;
} sim_occgrid;

/*
 * Marks the cells of region (min x, y, z, max x, y, z: the union of the
 * boxes) touched by each of count boxes (6 floats each, the same layout),
 * with cells of about `cell`. A box with a NaN, or empty, overlaps nothing
 * and marks nothing. 0 on success; -1 when out of memory or the region is
 * not finite, and the grid then answers 1 to every query (no feature is
 * skipped).
 */
int sim_occgrid_build(sim_occgrid *g, const float *boxes, uint32_t count, const float *region,
		      float cell);

/* 0 when box (6 floats) meets no box of the last build; 1 otherwise. */
int sim_occgrid_any(const sim_occgrid *g, const float *box);

/*
 * The cells of box: lo[k], hi[k] per axis, -1 below the grid and n[k]
 * above it. Monotone, so the cells of the union of two boxes are the
 * per-axis min of their lo and max of their hi: a caller that holds the
 * cells of each vertex's box gets an edge's without building its box.
 * A box with a NaN gets the whole grid.
 */
void sim_occgrid_cells(const sim_occgrid *g, const float *box, int32_t *lo, int32_t *hi);

/* sim_occgrid_any for the cells lo..hi (from sim_occgrid_cells). */
int sim_occgrid_any_cells(const sim_occgrid *g, const int32_t *lo, const int32_t *hi);

void sim_occgrid_free(sim_occgrid *g);

#endif
