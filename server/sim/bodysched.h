/*
 * The order in which the body contacts' pairs are projected each
 * iteration (issues 16 and 22), shared by bodypush.c (a pair moves the 3
 * vertices of a cloth face) and bodyedge.c (the 2 of a cloth edge).
 *
 * The cloth's vertices are cut into the sweep's tiles (sim_tile_vertices:
 * runs of consecutive vertices in the locality order, a size that depends
 * on the vertex count alone). A pair whose vertices all lie in one tile is
 * that tile's; the others cross tiles. An iteration projects every tile's
 * pairs, in their list order, the tiles in parallel on the pool (no two
 * share a vertex, and a pair reads and writes only its own vertices' p),
 * then the crossing pairs in their list order on the calling thread. The
 * order is fixed by the pair list and the vertex count, never by the
 * threads, so every thread count (and no pool) gives the same bits.
 */
#ifndef DRAPE_SIM_BODYSCHED_H
#define DRAPE_SIM_BODYSCHED_H

#include <stddef.h>
#include <stdint.h>

#include "drape/sim.h"

typedef struct sim_bodysched {
	/* Pair indices: the tiles' pairs, tile by tile (each tile's in list
	 * order), then the crossing pairs in list order. */
	uint32_t *order;
	uint32_t order_cap;
	/* The tiles that have pairs, as groups: group g's pairs are
	 * order[first[g] .. first[g + 1]); the crossing pairs are
	 * order[first[groups] .. count). */
	uint32_t *first;
	uint32_t groups;
	uint32_t count; /* pairs scheduled; 0 when out of memory (see build) */
	/* Per tile: its pairs, then its next slot (scratch of build). */
	uint32_t *slot;
	uint32_t slot_cap;
	/* Per group: the pairs it pushed in the last run. */
	uint32_t *pushed;
} sim_bodysched;

/*
 * Schedules count pairs of a cloth of n vertices: pair k is the record at
 * pairs + k * stride, whose uint32_t at byte offset `at` names a cloth
 * element, which touches vertices elem[e * arity .. e * arity + arity)
 * (a face's 3, an edge's 2). Returns 0 when out of memory: the
 * schedule is then empty and sim_bodysched_run projects the list in list
 * order on the calling thread (the contact still holds; only the order,
 * and so the last bits, differ from a scheduled run's).
 */
int sim_bodysched_build(sim_bodysched *s, const uint32_t *elem, int arity, const void *pairs,
			size_t stride, size_t at, uint32_t count, uint32_t n);
void sim_bodysched_free(sim_bodysched *s);
size_t sim_bodysched_bytes(const sim_bodysched *s);

/* Projects the pairs order[k] (k itself when order is NULL) for k in
 * [begin, end), in that order, and returns those that pushed. */
typedef uint32_t sim_bodysched_fn(void *ctx, const uint32_t *order, uint32_t begin, uint32_t end);

/* One iteration in the schedule's order over a list of count pairs: the
 * groups on pool (NULL: one after another on the calling thread), then
 * the crossing pairs. Returns the pairs that pushed. */
uint32_t sim_bodysched_run(sim_bodysched *s, uint32_t count, drape_pool *pool,
			   sim_bodysched_fn *fn, void *ctx);

#endif
