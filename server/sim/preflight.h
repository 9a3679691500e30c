/*
 * The preflight's exact triangle-triangle test for the solver's own use
 * (selftangle.c): which triangles of a subset of a mesh are in an
 * intersecting pair, with the semantics of drape_preflight (closed
 * triangles, neighbours sharing a vertex and zero-area triangles skipped).
 */
#ifndef DRAPE_SIM_PREFLIGHT_H
#define DRAPE_SIM_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

/* Nonzero when the pair of triangles (a, b) is not to be counted (a seam,
 * objects that do not collide). */
typedef int (*sim_tri_pair_skip)(void *ctx, uint32_t a, uint32_t b);

/*
 * Tests the triangles subset[0 .. n - 1] (indices into triangles, 3 vertex
 * indices each) against each other. positions has `stride` floats per
 * vertex (x, y, z first); they must be finite. Sets hit[t] = 1 for every
 * triangle t of the subset in an intersecting pair (hit is indexed by
 * triangle and left alone elsewhere) and returns the number of pairs, or
 * -1 when out of memory. Serial and in a fixed order.
 */
int64_t sim_preflight_subset(const float *positions, size_t stride, const uint32_t *triangles,
			     const uint32_t *subset, uint32_t n, sim_tri_pair_skip skip, void *ctx,
			     uint8_t *hit);

#endif
