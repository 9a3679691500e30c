/*
 * The dense spatial hash shared by self-collision (selfhash.c, selfcandidates.c) and the
 * preflight intersection check (preflight.c).
 *
 * Layout after Müller, Ten Minute Physics "spatial hashing": integer cell
 * coordinates are hashed into a table of `table_size` slots (twice the object
 * count); each object (a box) is counted into every slot its box overlaps,
 * a prefix sum turns the counts into start offsets, and a second pass fills
 * one flat entry array. Nothing is allocated per cell. Distinct cells may hash
 * to the same slot, so a query sees a superset of the objects in its cells
 * and possibly the same object twice: callers test boxes and deduplicate.
 *
 * Objects whose box covers more than SIM_HASH_MAX_CELLS cells (a triangle
 * flung across the scene in one substep) are kept in a separate `big` list
 * that every query must scan, so that one runaway object cannot make the
 * build quadratic.
 */
#ifndef DRAPE_SIM_SELFHASH_H
#define DRAPE_SIM_SELFHASH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "drape/error.h"

#define SIM_HASH_MAX_CELLS 1024u

/* Cell coordinates are clamped to +-2^30 so that far-away (or NaN) positions
 * never overflow an int32 or the cell-count arithmetic. */
#define SIM_HASH_COORD_LIMIT 1073741824.0f

typedef struct sim_hash {
	float cell, inv_cell;
	uint32_t table_size;
	uint32_t object_cap; /* objects the hash was sized for */
	uint32_t *start;     /* table_size + 1 offsets into entries */
	uint32_t *entries;
	size_t entry_count, entry_cap;
	uint32_t *big; /* object_cap slots */
	uint32_t big_count;
} sim_hash;

/* Integer cell box: lo..hi inclusive on each axis. */
typedef struct sim_cellbox {
	int32_t lo[3], hi[3];
} sim_cellbox;

static inline int32_t sim_hash_coord(float v, float inv_cell)
{
	float f = floorf(v * inv_cell);
	/* Written so that NaN takes the first branch: no undefined conversion. */
	if (!(f >= -SIM_HASH_COORD_LIMIT))
		f = -SIM_HASH_COORD_LIMIT;
	if (f > SIM_HASH_COORD_LIMIT)
		f = SIM_HASH_COORD_LIMIT;
	return (int32_t)f;
}

/* box: min x, y, z then max x, y, z. */
static inline sim_cellbox sim_hash_cells(const sim_hash *h, const float *box)
{
	sim_cellbox c;
	for (int k = 0; k < 3; k++) {
		c.lo[k] = sim_hash_coord(box[k], h->inv_cell);
		c.hi[k] = sim_hash_coord(box[k + 3], h->inv_cell);
		if (c.hi[k] < c.lo[k])
			c.hi[k] = c.lo[k];
	}
	return c;
}

static inline uint64_t sim_cellbox_count(const sim_cellbox *c)
{
	return (uint64_t)((int64_t)c->hi[0] - c->lo[0] + 1) *
	       (uint64_t)((int64_t)c->hi[1] - c->lo[1] + 1) *
	       (uint64_t)((int64_t)c->hi[2] - c->lo[2] + 1);
}

/* Müller's hash of a cell, reduced to a table slot. Unsigned arithmetic so
 * the products wrap instead of overflowing. */
static inline uint32_t sim_hash_slot(const sim_hash *h, int32_t x, int32_t y, int32_t z)
{
	uint32_t k = ((uint32_t)x * 92837111u) ^ ((uint32_t)y * 689287499u) ^
		     ((uint32_t)z * 283923481u);
	return k % h->table_size;
}

/* A box is "in use" when every min <= max; a NaN box or an inverted one
 * (how callers mark skipped objects) is left out of the hash. */
static inline int sim_box_valid(const float *b)
{
	return b[0] <= b[3] && b[1] <= b[4] && b[2] <= b[5];
}

static inline int sim_box_overlap(const float *a, const float *b)
{
	return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] &&
	       b[2] <= a[5];
}

/* Sizes the table for object_count objects and an initial entry capacity of
 * four cells per object. On failure nothing is left allocated. */
drape_err sim_hash_init(sim_hash *h, uint32_t object_count);
void sim_hash_free(sim_hash *h);

/*
 * Builds the hash over `count` boxes (6 floats each) with cell size `cell`.
 * Invalid boxes are skipped. The entry array grows here when needed (by half
 * again its size, amortized); returns -1 if that growth fails, leaving the
 * hash empty but usable, else 0.
 */
int sim_hash_build(sim_hash *h, const float *boxes, uint32_t count, float cell);

/* The next epoch of a stamp array of cap entries, for deduplicating a
 * query's entries: an entry has been seen in this epoch once stamped with
 * it. On wrap the array is cleared, so no stale stamp matches. */
static inline uint32_t sim_stamp_next(uint32_t *stamp, uint32_t cap, uint32_t *epoch)
{
	if (++*epoch == 0) {
		memset(stamp, 0, (size_t)cap * sizeof *stamp);
		*epoch = 1;
	}
	return *epoch;
}

/* Calls visit(ctx, t) once for each object t of h that is hashed into the
 * cells cb (those of the query box q) or is big, and whose own box
 * (boxes[6 t ..]) overlaps q: the cells in z, y, x order, each slot's
 * entries in order, then the big objects in order. stamp and epoch
 * (sim_stamp_next) drop the repeats. visit returns 0 to stop the walk (out
 * of memory); the walk then returns 0, else 1. Inline, so that a constant
 * visit is inlined into the loop. */
static inline int sim_hash_visit(const sim_hash *h, const sim_cellbox *cb, const float *boxes, const float *q,
				 uint32_t *stamp, uint32_t epoch, int (*visit)(void *, uint32_t), void *ctx)
{
	for (int32_t z = cb->lo[2]; z <= cb->hi[2]; z++)
		for (int32_t y = cb->lo[1]; y <= cb->hi[1]; y++)
			for (int32_t x = cb->lo[0]; x <= cb->hi[0]; x++) {
				const uint32_t slot = sim_hash_slot(h, x, y, z);
				for (uint32_t e = h->start[slot]; e < h->start[slot + 1]; e++) {
					const uint32_t t = h->entries[e];
					if (stamp[t] == epoch)
						continue;
					stamp[t] = epoch;
					if (sim_box_overlap(&boxes[6 * (size_t)t], q) && !visit(ctx, t))
						return 0;
				}
			}
	for (uint32_t k = 0; k < h->big_count; k++) {
		const uint32_t t = h->big[k];
		if (stamp[t] != epoch && sim_box_overlap(&boxes[6 * (size_t)t], q)) {
			stamp[t] = epoch;
			if (!visit(ctx, t))
				return 0;
		}
	}
	return 1;
}

#endif
