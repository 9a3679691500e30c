/*
 * Vertex reordering along a Morton curve (see order.h). Morton rather than
 * Hilbert: the two give the same locality for the gathers of one colour
 * (records are sorted by vertex, so a sweep only needs neighbours to be
 * near in index, not the curve to be continuous), and Morton keys are a few
 * shifts.
 */
#include "server/sim/order.h"

#include <math.h>
#include <stdlib.h>

typedef struct order_key {
	uint64_t key;
	uint32_t index;
} order_key;

static int order_key_cmp(const void *a, const void *b)
{
	const order_key *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Spreads the low 21 bits of v so that bit i lands on bit 3i. */
static uint64_t spread3(uint64_t v)
{
	v &= 0x1fffff;
	v = (v | v << 32) & 0x1f00000000ffffull;
	v = (v | v << 16) & 0x1f0000ff0000ffull;
	v = (v | v << 8) & 0x100f00f00f00f00full;
	v = (v | v << 4) & 0x10c30c30c30c30c3ull;
	v = (v | v << 2) & 0x1249249249249249ull;
	return v;
}

drape_err sim_order_build(const float *xyz, uint32_t n, uint32_t *order, uint32_t *rank)
{
	order_key *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
	if (keys == NULL)
		return DRAPE_ENOMEM;
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			lo[k] = fminf(lo[k], xyz[3 * (size_t)i + k]);
			hi[k] = fmaxf(hi[k], xyz[3 * (size_t)i + k]);
		}
	/* One scale for all axes, so cells are cubes and a flat sheet's
	 * missing axis costs no key bits. Computed in double: the extent of
	 * finite floats may overflow a float. */
	double extent = 0.0;
	for (int k = 0; k < 3; k++)
		extent = fmax(extent, (double)hi[k] - (double)lo[k]);
	const double cells = (double)(1u << 21) - 1.0;
	double scale = extent > 0.0 ? cells / extent : 0.0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key = 0;
		for (int k = 0; k < 3; k++) {
			double q = ((double)xyz[3 * (size_t)i + k] - (double)lo[k]) * scale;
			uint64_t c = q <= 0.0 ? 0u : (q >= cells ? (uint64_t)cells : (uint64_t)q);
			key |= spread3(c) << k;
		}
		keys[i] = (order_key){key, i};
	}
	qsort(keys, n, sizeof *keys, order_key_cmp);
	for (uint32_t i = 0; i < n; i++) {
		order[i] = keys[i].index;
		rank[keys[i].index] = i;
	}
	free(keys);
	return DRAPE_OK;
}
