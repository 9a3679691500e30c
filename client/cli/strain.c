/*
 * drape CLI: the edge strain of one frame against the rest mesh, for the
 * summary of `drape run` (the last frame's maximum and 99th percentile; the
 * solver's per-frame stats give the maximum only).
 */
#include "client/cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int strain_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int strain_cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

int cli_edge_strain(const float *rest, const float *pos, uint32_t vertex_count, const uint32_t *triangles,
		    uint32_t triangle_count, float *max_out, float *p99_out)
{
	if (rest == NULL || pos == NULL || triangles == NULL || triangle_count == 0)
		return -1;
	/* Unique undirected edges by sorting (min, max) pairs packed in 64 bits. */
	size_t n = (size_t)triangle_count * 3;
	uint64_t *e = malloc(n * sizeof *e);
	if (e == NULL)
		return -1;
	for (size_t t = 0; t < triangle_count; t++) {
		for (int k = 0; k < 3; k++) {
			uint32_t a = triangles[t * 3 + (size_t)k], b = triangles[t * 3 + (size_t)(k + 1) % 3];
			uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
			e[t * 3 + (size_t)k] = (uint64_t)lo << 32 | hi;
		}
	}
	qsort(e, n, sizeof *e, strain_cmp_u64);
	float *s = malloc(n * sizeof *s);
	if (s == NULL) {
		free(e);
		return -1;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && e[i] == e[i - 1])
			continue;
		uint32_t a = (uint32_t)(e[i] >> 32), b = (uint32_t)e[i];
		if (a >= vertex_count || b >= vertex_count || a == b)
			continue;
		double l0 = 0.0, l = 0.0;
		for (int k = 0; k < 3; k++) {
			double d0 = (double)rest[a * 3u + (uint32_t)k] - rest[b * 3u + (uint32_t)k];
			double d = (double)pos[a * 3u + (uint32_t)k] - pos[b * 3u + (uint32_t)k];
			l0 += d0 * d0;
			l += d * d;
		}
		if (!(l0 > 0.0))
			continue;
		s[m++] = (float)fabs(sqrt(l) / sqrt(l0) - 1.0);
	}
	free(e);
	if (m == 0) {
		free(s);
		return -1;
	}
	qsort(s, m, sizeof *s, strain_cmp_f);
	/* The nearest-rank 99th percentile: the smallest value with at least
	 * 99 % of the edges at or below it. */
	size_t rank = (size_t)ceil(0.99 * (double)m);
	*max_out = s[m - 1];
	*p99_out = s[rank > 0 ? rank - 1 : 0];
	free(s);
	return 0;
}
