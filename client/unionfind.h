/*
 * Union-find over vertex indices (the client's seams and drape check's
 * pieces): parent[v] == v for a root; paths are halved on the way up, and
 * a union keeps the smaller index as the root, so the roots do not depend
 * on the order of the unions.
 */
#ifndef DRAPE_CLIENT_UNIONFIND_H
#define DRAPE_CLIENT_UNIONFIND_H

#include <stdint.h>

static inline uint32_t uf_find(uint32_t *parent, uint32_t v)
{
	while (parent[v] != v) {
		parent[v] = parent[parent[v]];
		v = parent[v];
	}
	return v;
}

static inline void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
	a = uf_find(parent, a);
	b = uf_find(parent, b);
	if (a != b)
		parent[a < b ? b : a] = a < b ? a : b;
}

#endif
