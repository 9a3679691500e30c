/*
 * A tearing session's meshes, by generation (see tear.h).
 */
#include "server/tear.h"

#include <stdlib.h>

uint32_t srv_tear_capacity(uint32_t vertices, uint32_t triangles)
{
	uint64_t cap = (uint64_t)vertices + 3ull * triangles;
	return cap > UINT32_MAX / 12u ? UINT32_MAX / 12u : (uint32_t)cap;
}

uint64_t srv_tear_extra_bytes(uint32_t vertices, uint32_t triangles, uint64_t frames_in_memory)
{
	return (uint64_t)(srv_tear_capacity(vertices, triangles) - vertices) * 12u *
	       (frames_in_memory + 2u);
}

void srv_tear_free(srv_tear *t)
{
	for (uint32_t i = 0; i < t->count; i++) {
		free(t->gen[i].tris);
		free(t->gen[i].origin);
	}
	free(t->gen);
	t->gen = NULL;
	t->count = t->cap = 0;
}

bool srv_tear_add(srv_tear *t, uint32_t topology, uint32_t first_frame, uint32_t vertices,
		  uint32_t *tris, uint32_t *origin)
{
	if (t->count == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 8;
		srv_tear_gen *g = realloc(t->gen, cap * sizeof *g);
		if (g == NULL) {
			free(tris);
			free(origin);
			return false;
		}
		t->gen = g;
		t->cap = cap;
	}
	t->gen[t->count++] = (srv_tear_gen){topology, first_frame, vertices, tris, origin};
	return true;
}

const srv_tear_gen *srv_tear_find(const srv_tear *t, uint32_t topology)
{
	/* Generations are appended in order, one per tearing frame. */
	uint32_t lo = 0, hi = t->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->gen[mid].topology < topology)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->count && t->gen[lo].topology == topology ? &t->gen[lo] : NULL;
}

const srv_tear_gen *srv_tear_last(const srv_tear *t)
{
	return t->count ? &t->gen[t->count - 1] : NULL;
}

void srv_tear_truncate(srv_tear *t, uint32_t index)
{
	while (t->count > 0 && t->gen[t->count - 1].first_frame > index) {
		t->count--;
		free(t->gen[t->count].tris);
		free(t->gen[t->count].origin);
	}
}
