/*
 * The body contacts' projection order (bodysched.h).
 *
 * The pairs used to be projected in their list order on one thread: on the
 * walk's striding frames 20 % of the instructions, and on the garment the
 * largest serial item left (docs/speed.md, "The body contact's projections on
 * every thread"). Gauss-Seidel needs an order, not that one: any order
 * fixed independently of the thread count keeps the project's rule. This
 * one is the sweep's (sweep.c): the tiles' own pairs, tiles in parallel,
 * then the pairs on the tiles' boundaries. The groups are the tiles that
 * have pairs, in tile order, each a block of one pool job.
 */
#include "server/sim/bodysched.h"

#include <stdlib.h>
#include <string.h>

#include "server/sim/internal.h"
#include "server/sim/pool.h"

void sim_bodysched_free(sim_bodysched *s)
{
	free(s->order);
	free(s->first);
	free(s->slot);
	free(s->pushed);
	*s = (sim_bodysched){0};
}

size_t sim_bodysched_bytes(const sim_bodysched *s)
{
	return (size_t)s->order_cap * sizeof *s->order +
	       ((size_t)s->slot_cap * 3 + 1) * sizeof *s->slot;
}

/* Room for count pairs and tiles tiles (and as many groups); 0 when out of
 * memory, the old arrays kept. */
static int reserve(sim_bodysched *s, uint32_t count, uint32_t tiles)
{
	if (count > s->order_cap) {
		uint32_t cap = count + count / 2 + 64;
		uint32_t *o = realloc(s->order, (size_t)cap * sizeof *o);
		if (o == NULL)
			return 0;
		s->order = o;
		s->order_cap = cap;
	}
	if (tiles + 1 > s->slot_cap) {
		uint32_t cap = tiles + 1;
		uint32_t *sl = realloc(s->slot, (size_t)cap * sizeof *sl);
		if (sl == NULL)
			return 0;
		s->slot = sl;
		uint32_t *f = realloc(s->first, ((size_t)cap + 1) * sizeof *f);
		if (f == NULL)
			return 0;
		s->first = f;
		uint32_t *pu = realloc(s->pushed, (size_t)cap * sizeof *pu);
		if (pu == NULL)
			return 0;
		s->pushed = pu;
		s->slot_cap = cap;
	}
	return 1;
}

/* The tile of the pair at rec, or tiles when its vertices lie in more
 * than one. */
static inline uint32_t tile_of(const uint32_t *elem, int arity, const unsigned char *rec,
			       uint32_t shift, uint32_t tiles)
{
	uint32_t e;
	memcpy(&e, rec, sizeof e);
	const uint32_t *v = &elem[(size_t)e * (size_t)arity];
	uint32_t t = v[0] >> shift;
	for (int j = 1; j < arity; j++)
		if (v[j] >> shift != t)
			return tiles;
	return t;
}

int sim_bodysched_build(sim_bodysched *s, const uint32_t *elem, int arity, const void *pairs,
			size_t stride, size_t at, uint32_t count, uint32_t n)
{
	const unsigned char *rec = (const unsigned char *)pairs + at;
	s->count = 0;
	s->groups = 0;
	/* The tile size is a power of two (topology.c). */
	const uint32_t tv = sim_tile_vertices(n);
	uint32_t shift = 0;
	while ((1u << shift) < tv)
		shift++;
	const uint32_t tiles = n == 0 ? 0 : ((n - 1) >> shift) + 1;
	if (count == 0 || !reserve(s, count, tiles))
		return count == 0;
	/* A stable counting sort by tile, the crossing pairs as tile
	 * `tiles`: each group keeps its pairs' list order. */
	uint32_t *slot = s->slot;
	for (uint32_t t = 0; t <= tiles; t++)
		slot[t] = 0;
	for (uint32_t k = 0; k < count; k++)
		slot[tile_of(elem, arity, rec + (size_t)k * stride, shift, tiles)]++;
	uint32_t next = 0, g = 0;
	for (uint32_t t = 0; t <= tiles; t++) {
		uint32_t c = slot[t];
		if (t < tiles && c > 0)
			s->first[g++] = next;
		slot[t] = next;
		next += c;
	}
	s->groups = g;
	s->first[g] = slot[tiles];
	for (uint32_t k = 0; k < count; k++)
		s->order[slot[tile_of(elem, arity, rec + (size_t)k * stride, shift, tiles)]++] = k;
	s->count = count;
	return 1;
}

typedef struct run_job {
	const sim_bodysched *s;
	sim_bodysched_fn *fn;
	void *ctx;
} run_job;

static void run_groups(void *ctx, uint32_t begin, uint32_t end)
{
	const run_job *J = ctx;
	const sim_bodysched *s = J->s;
	for (uint32_t g = begin; g < end; g++)
		s->pushed[g] = J->fn(J->ctx, s->order, s->first[g], s->first[g + 1]);
}

uint32_t sim_bodysched_run(sim_bodysched *s, uint32_t count, drape_pool *pool,
			   sim_bodysched_fn *fn, void *ctx)
{
	if (count == 0)
		return 0;
	if (s->count != count)
		return fn(ctx, NULL, 0, count);
	run_job job = {s, fn, ctx};
	sim_pool_for(pool, s->groups, 1, run_groups, &job);
	uint32_t pushed = 0;
	for (uint32_t g = 0; g < s->groups; g++)
		pushed += s->pushed[g];
	return pushed + fn(ctx, s->order, s->first[s->groups], count);
}
