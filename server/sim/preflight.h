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

#include "server/sim/selfhash.h"

/* Nonzero when the pair of triangles (a, b) is not to be counted (a seam,
 * objects that do not collide). */
typedef int (*sim_tri_pair_skip)(void *ctx, uint32_t a, uint32_t b);

/*
 * The test's buffers, for a caller that tests again and again (the
 * untangling, every substep while a cloth is tangled): grown to the largest
 * subset seen and kept, so that a test after the first allocates nothing.
 * Zero-initialised is empty; sim_preflight_scratch_free gives it back.
 */
typedef struct sim_preflight_scratch {
	uint32_t cap;     /* triangles the arrays hold */
	float *boxes;     /* 6 per triangle: min x, y, z, max x, y, z */
	uint32_t *stamp;  /* per triangle: the last triangle that met it, + 1 */
	uint32_t *hits;   /* one triangle's partners (drape_preflight's order) */
	size_t hits_cap;
	sim_hash hash;
} sim_preflight_scratch;

void sim_preflight_scratch_free(sim_preflight_scratch *w);

/*
 * Tests the triangles subset[0 .. n - 1] (indices into triangles, 3 vertex
 * indices each) against each other. positions has `stride` floats per
 * vertex (x, y, z first); they must be finite. Sets hit[t] = 1 for every
 * triangle t of the subset in an intersecting pair (hit is indexed by
 * triangle and left alone elsewhere) and returns the number of pairs, or
 * -1 when out of memory. Serial and in a fixed order. The buffers come
 * from w, grown when n is more than it holds.
 */
int64_t sim_preflight_subset(const float *positions, size_t stride, const uint32_t *triangles,
			     const uint32_t *subset, uint32_t n, sim_tri_pair_skip skip, void *ctx,
			     uint8_t *hit, sim_preflight_scratch *w);

#endif
