/* The dense spatial hash over chunk boxes of the self-collision (selfhash.h). */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the spatial hash (selfhash.h) ------------------------------------------ */

drape_err sim_hash_init(sim_hash *h, uint32_t object_count)
{
	memset(h, 0, sizeof *h);
	uint64_t table = 2ull * (object_count ? object_count : 1u);
	if (table > UINT32_MAX - 1u)
		table = UINT32_MAX - 1u;
	h->table_size = (uint32_t)table;
	h->object_cap = object_count;
	h->entry_cap = 4u * (size_t)(object_count ? object_count : 1u);
	h->start = malloc(((size_t)h->table_size + 1) * sizeof *h->start);
	h->entries = malloc(h->entry_cap * sizeof *h->entries);
	h->big = malloc((size_t)(object_count ? object_count : 1u) * sizeof *h->big);
	if (h->start == NULL || h->entries == NULL || h->big == NULL) {
		sim_hash_free(h);
		return DRAPE_ENOMEM;
	}
	memset(h->start, 0, ((size_t)h->table_size + 1) * sizeof *h->start);
	h->cell = 1.0f;
	h->inv_cell = 1.0f;
	return DRAPE_OK;
}

void sim_hash_free(sim_hash *h)
{
	free(h->start);
	free(h->entries);
	free(h->big);
	memset(h, 0, sizeof *h);
}

int sim_hash_build(sim_hash *h, const float *boxes, uint32_t count, float cell)
{
	uint32_t *restrict start = h->start;
	const uint32_t size = h->table_size;
	h->cell = cell;
	h->inv_cell = 1.0f / cell;
	h->big_count = 0;
	h->entry_count = 0;
	memset(start, 0, ((size_t)size + 1) * sizeof *start);
	if (count > h->object_cap)
		count = h->object_cap;

	/* Pass 1: count the cells of every box. */
	size_t total = 0;
	for (uint32_t o = 0; o < count; o++) {
		const float *b = &boxes[6 * (size_t)o];
		if (!sim_box_valid(b))
			continue;
		sim_cellbox c = sim_hash_cells(h, b);
		uint64_t n = sim_cellbox_count(&c);
		if (n > SIM_HASH_MAX_CELLS) {
			h->big[h->big_count++] = o;
			continue;
		}
		for (int32_t z = c.lo[2]; z <= c.hi[2]; z++)
			for (int32_t y = c.lo[1]; y <= c.hi[1]; y++)
				for (int32_t x = c.lo[0]; x <= c.hi[0]; x++)
					start[sim_hash_slot(h, x, y, z)]++;
		total += (size_t)n;
	}
	if (total > h->entry_cap) {
		/* Amortized growth: half again what is needed, so a slowly
		 * spreading cloth does not reallocate every substep. */
		size_t cap = total + total / 2;
		uint32_t *e = realloc(h->entries, cap * sizeof *e);
		if (e == NULL) {
			memset(start, 0, ((size_t)size + 1) * sizeof *start);
			h->big_count = 0;
			return -1;
		}
		h->entries = e;
		h->entry_cap = cap;
	}
	/* Prefix sum: start[i] becomes the end of slot i; the fill below
	 * decrements it to the slot's first entry, so afterwards slot i spans
	 * [start[i], start[i + 1]). */
	uint32_t run = 0;
	for (uint32_t i = 0; i < size; i++) {
		run += start[i];
		start[i] = run;
	}
	start[size] = run;
	/* Pass 2: fill. */
	uint32_t *restrict entries = h->entries;
	for (uint32_t o = 0; o < count; o++) {
		const float *b = &boxes[6 * (size_t)o];
		if (!sim_box_valid(b))
			continue;
		sim_cellbox c = sim_hash_cells(h, b);
		if (sim_cellbox_count(&c) > SIM_HASH_MAX_CELLS)
			continue;
		for (int32_t z = c.lo[2]; z <= c.hi[2]; z++)
			for (int32_t y = c.lo[1]; y <= c.hi[1]; y++)
				for (int32_t x = c.lo[0]; x <= c.hi[0]; x++)
					entries[--start[sim_hash_slot(h, x, y, z)]] = o;
	}
	h->entry_count = total;
	return 0;
}

