/*
 * Untangling: cloth that starts with triangles through each other.
 *
 * The projections keep each candidate pair on the side it had at the start
 * of the substep, and the guard (selfguard.c) undoes every motion through a
 * surface, both on the assumption that nothing intersects at that start. A
 * mesh that comes tangled breaks it: every motion that would undo the
 * crossing is itself a crossing and is stopped, so the tangle is locked in
 * and the cloth around it stretches away (the MakeHuman dress's cuffs, 28
 * intersecting pairs, reached 187 % strain in 24 frames).
 *
 * So the tangled region is released, as Baraff, Witkin and Kass ("Untangling
 * cloth", SIGGRAPH 2003) and Volino and Magnenat-Thalmann (2006) do: the
 * features there are not kept apart and not guarded until that region no
 * longer intersects, and the cloth's own forces and the body contact pull
 * it apart. Which side of a surface a released vertex ends on is then left
 * to those forces (no contour-minimising push here).
 *
 * The region, found at the start of each substep from x:
 * - the contour triangles: those in an intersecting pair (the preflight's
 *   exact test, preflight.h);
 * - with tangle_fill (the default), also the parts of the cloth that the
 *   contours cut off: the triangles outside the contour, in parts joined
 *   by edges, each part that borders a contour and is not the largest part
 *   of its piece of cloth. That is the area a closed contour encloses
 *   (BWK 2003 take the smaller side as the one on the wrong side): a band
 *   pushed through a sheet has a flat bottom whose vertices are in no
 *   contour triangle, and without it they are guarded and stop when they
 *   reach the sheet, which holds the band through it.
 * A released vertex is a vertex of a region triangle; a vertex-triangle or
 * edge-edge pair is released when all four of its vertices are. On the
 * MakeHuman dress this region clears the 28 pairs by frame 1 and keeps it
 * clear; growing it by one ring of triangles left 6 pairs locked at the
 * end, by two tore the cloth (343 % strain); the contour triangles alone
 * (no parts) clear the dress too but leave the synthetic bands of
 * tests/unit/test_sim_untangle.c locked (docs/untangle.md has the figures).
 *
 * Why the guard still holds for the other pairs: a pair with a vertex
 * outside the region is apart at x. A triangle with such a vertex is in no
 * intersecting pair, so a vertex does not touch it; and a vertex outside
 * touches no triangle, or its own triangles would intersect that triangle.
 * The same holds for edges. Hence x is intersection-free for every pair
 * that is still guarded, which is what the guard assumes.
 *
 * Why the next check may test the region's neighbourhood only: a new
 * intersecting pair needs a crossing, which only a released pair may make,
 * and the triangles on both sides of it have a released vertex. So the
 * next check tests every triangle with a released vertex against the
 * others. Each frame's first substep tests the whole mesh, so that a frame
 * depends on its start state alone (a resumed run gives the same bits).
 *
 * Cost: one whole-mesh test at the first substep; once nothing intersects
 * the state is dropped and nothing runs again, so an intersection-free
 * input gives the same bits as without this file.
 */
#include "server/sim/selfcollide_impl.h"

#include "server/sim/preflight.h"

#include <stdlib.h>
#include <string.h>

/* Pairs of triangles the self-collision never keeps apart: across objects
 * that do not collide, or holding two stitched vertices (a seam). */
static int tangle_skip(void *ctx, uint32_t a, uint32_t b)
{
	const sim_self *s = ctx;
	const uint32_t *ta = &s->tris[3 * (size_t)a], *tb = &s->tris[3 * (size_t)b];
	if (self_masked(s, ta[0], tb[0]))
		return 1;
	for (int k = 0; k < 3; k++) {
		const uint32_t idx[4] = {ta[k], tb[0], tb[1], tb[2]};
		if (self_joined(s, idx, 0))
			return 1;
	}
	return 0;
}

void self_tangle_free(sim_self *s)
{
	free(s->tangled);
	free(s->tangle_hit);
	free(s->tangle_sub);
	free(s->tangle_label);
	free(s->tangle_queue);
	free(s->tangle_mcomp);
	free(s->tangle_lsize);
	free(s->tangle_lbest);
	free(s->tangle_et_start);
	free(s->tangle_et);
	sim_preflight_scratch_free(&s->tangle_pf);
	s->tangled = NULL;
	s->tangle_hit = NULL;
	s->tangle_sub = NULL;
	s->tangle_label = s->tangle_queue = s->tangle_mcomp = NULL;
	s->tangle_lsize = s->tangle_lbest = NULL;
	s->tangle_et_start = s->tangle_et = NULL;
}

/* Labels the triangles with keep[t] set in parts joined by edges, into
 * label[] (UINT32_MAX for the others); returns the number of parts and
 * their sizes in lsize. */
static uint32_t label_parts(sim_self *s, const uint8_t *skip_t, uint32_t *label, uint32_t *lsize)
{
	const uint32_t nt = s->nt;
	uint32_t parts = 0;
	for (uint32_t t = 0; t < nt; t++)
		label[t] = UINT32_MAX;
	for (uint32_t t0 = 0; t0 < nt; t0++) {
		if (label[t0] != UINT32_MAX || (skip_t != NULL && skip_t[t0]))
			continue;
		uint32_t head = 0, tail = 0, size = 0;
		s->tangle_queue[tail++] = t0;
		label[t0] = parts;
		while (head < tail) {
			const uint32_t t = s->tangle_queue[head++];
			size++;
			for (int k = 0; k < 3; k++) {
				const uint32_t e = s->tri_edges[3 * (size_t)t + k];
				for (uint32_t i = s->tangle_et_start[e]; i < s->tangle_et_start[e + 1];
				     i++) {
					const uint32_t u = s->tangle_et[i];
					if (label[u] != UINT32_MAX || (skip_t != NULL && skip_t[u]))
						continue;
					label[u] = parts;
					s->tangle_queue[tail++] = u;
				}
			}
		}
		lsize[parts++] = size;
	}
	return parts;
}

/* Buffers and the mesh's pieces, when a first check finds a tangle. */
static int tangle_alloc(sim_self *s)
{
	const size_t nt = s->nt, nv = s->nv, ne = s->ne;
	s->tangled = calloc(nv + 1, 1);
	s->tangle_hit = calloc(nt + 1, 1);
	s->tangle_sub = malloc(nt * sizeof *s->tangle_sub + 1);
	s->tangle_label = malloc(nt * sizeof *s->tangle_label + 1);
	s->tangle_queue = malloc(nt * sizeof *s->tangle_queue + 1);
	s->tangle_mcomp = malloc(nt * sizeof *s->tangle_mcomp + 1);
	s->tangle_lsize = malloc(nt * sizeof *s->tangle_lsize + 1);
	s->tangle_lbest = malloc(nt * sizeof *s->tangle_lbest + 1);
	s->tangle_et_start = calloc(ne + 1, sizeof *s->tangle_et_start);
	s->tangle_et = malloc(3 * nt * sizeof *s->tangle_et + 1);
	if (s->tangled == NULL || s->tangle_hit == NULL || s->tangle_sub == NULL ||
	    s->tangle_label == NULL || s->tangle_queue == NULL || s->tangle_mcomp == NULL ||
	    s->tangle_lsize == NULL || s->tangle_lbest == NULL || s->tangle_et_start == NULL ||
	    s->tangle_et == NULL) {
		self_tangle_free(s);
		return -1;
	}
	/* Edge -> triangles, CSR. */
	for (size_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++)
			s->tangle_et_start[s->tri_edges[3 * t + k] + 1]++;
	for (size_t e = 0; e < ne; e++)
		s->tangle_et_start[e + 1] += s->tangle_et_start[e];
	uint32_t *tmp = malloc(ne * sizeof *tmp + 1);
	if (tmp == NULL) {
		self_tangle_free(s);
		return -1;
	}
	memcpy(tmp, s->tangle_et_start, ne * sizeof *tmp);
	for (size_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++)
			s->tangle_et[tmp[s->tri_edges[3 * t + k]]++] = (uint32_t)t;
	free(tmp);
	/* The pieces of cloth (parts of the whole mesh). */
	label_parts(s, NULL, s->tangle_mcomp, s->tangle_lsize);
	return 0;
}

/*
 * Finds the intersecting pairs at x, over the whole mesh (full) or over the
 * triangles with a released vertex, and marks the released vertices. Drops
 * the state when nothing intersects.
 */
static void tangle_check(sim_self *s, const sim_vec4 *restrict x, int full)
{
	const uint32_t nt = s->nt;
	uint32_t n = 0;
	if (s->tangled == NULL) {
		/* The first check: buffers only when something intersects, so
		 * a clean mesh costs one test and no memory. */
		uint8_t *hit = calloc(nt + 1, 1);
		uint32_t *sub = malloc((size_t)nt * sizeof *sub + 1);
		int64_t found = -1;
		if (hit != NULL && sub != NULL) {
			n = 0;
			for (uint32_t t = 0; t < nt; t++)
				if (!s->tri_skip[t])
					sub[n++] = t;
			found = sim_preflight_subset(&x[0].x, 4, s->tris, sub, n, tangle_skip, s,
						     hit, &s->tangle_pf);
		}
		free(hit);
		free(sub);
		if (found <= 0 || tangle_alloc(s) != 0) {
			sim_preflight_scratch_free(&s->tangle_pf);
			s->tangle_state = SELF_TANGLE_DONE;
			s->tangle_pairs = 0;
			s->tangle_vertices = 0;
			return;
		}
		full = 1;
	}
	n = 0;
	for (uint32_t t = 0; t < nt; t++) {
		if (s->tri_skip[t])
			continue;
		const uint32_t *tv = &s->tris[3 * (size_t)t];
		if (full || s->tangled[tv[0]] | s->tangled[tv[1]] | s->tangled[tv[2]])
			s->tangle_sub[n++] = t;
	}
	memset(s->tangle_hit, 0, nt);
	int64_t found = sim_preflight_subset(&x[0].x, 4, s->tris, s->tangle_sub, n, tangle_skip, s,
					     s->tangle_hit, &s->tangle_pf);
	if (found <= 0) {
		/* Untangled (or out of memory: the guard as before). */
		self_tangle_free(s);
		s->tangle_state = SELF_TANGLE_DONE;
		s->tangle_pairs = 0;
		s->tangle_vertices = 0;
		return;
	}
	s->tangle_state = SELF_TANGLE_ACTIVE;
	s->tangle_pairs = (uint64_t)found;
	memset(s->tangled, 0, s->nv);
	uint8_t *region = s->tangle_hit;
	if (s->tangle_fill) {
		/* The parts outside the contours; of each piece, the largest part
		 * stays guarded and the others that border a contour are
		 * released. lbest[piece] is the piece's largest part. */
		uint32_t *label = s->tangle_label, *lsize = s->tangle_lsize, *best = s->tangle_lbest;
		uint32_t parts = label_parts(s, s->tangle_hit, label, lsize);
		for (uint32_t t = 0; t < nt; t++)
			best[t] = UINT32_MAX;
		for (uint32_t t = 0; t < nt; t++) {
			const uint32_t l = label[t];
			if (l == UINT32_MAX)
				continue;
			uint32_t *b = &best[s->tangle_mcomp[t]];
			if (*b == UINT32_MAX || lsize[l] > lsize[*b] || (lsize[l] == lsize[*b] && l < *b))
				*b = l;
		}
		/* A part borders a contour when one of its triangles shares an
		 * edge with a contour triangle (the queue is free scratch now). */
		uint8_t *touch = (uint8_t *)s->tangle_queue;
		memset(touch, 0, parts);
		for (uint32_t t = 0; t < nt; t++) {
			if (!s->tangle_hit[t])
				continue;
			for (int k = 0; k < 3; k++) {
				const uint32_t e = s->tri_edges[3 * (size_t)t + k];
				for (uint32_t i = s->tangle_et_start[e]; i < s->tangle_et_start[e + 1]; i++)
					if (label[s->tangle_et[i]] != UINT32_MAX)
						touch[label[s->tangle_et[i]]] = 1;
			}
		}
		for (uint32_t t = 0; t < nt; t++) {
			const uint32_t l = label[t];
			if (l != UINT32_MAX && touch[l] && best[s->tangle_mcomp[t]] != l) {
				const uint32_t *tv = &s->tris[3 * (size_t)t];
				s->tangled[tv[0]] = s->tangled[tv[1]] = s->tangled[tv[2]] = 1;
			}
		}
	}
	for (uint32_t t = 0; t < nt; t++) {
		if (!region[t])
			continue;
		const uint32_t *tv = &s->tris[3 * (size_t)t];
		s->tangled[tv[0]] = s->tangled[tv[1]] = s->tangled[tv[2]] = 1;
	}
	/* Grown by tangle_rings rings of triangles, for measurements: on the
	 * dress every ring made it worse (docs/untangle.md), as a larger released
	 * region has more pairs free to cross into new tangles. */
	for (int ring = 0; ring < s->tangle_rings; ring++) {
		memset(s->tangle_hit, 0, nt);
		for (uint32_t t = 0; t < nt; t++) {
			const uint32_t *tv = &s->tris[3 * (size_t)t];
			s->tangle_hit[t] = s->tangled[tv[0]] | s->tangled[tv[1]] | s->tangled[tv[2]];
		}
		for (uint32_t t = 0; t < nt; t++) {
			if (!s->tangle_hit[t])
				continue;
			const uint32_t *tv = &s->tris[3 * (size_t)t];
			s->tangled[tv[0]] = s->tangled[tv[1]] = s->tangled[tv[2]] = 1;
		}
	}
	uint32_t nr = 0;
	for (uint32_t v = 0; v < s->nv; v++)
		nr += s->tangled[v];
	s->tangle_vertices = nr;
}

void self_tangle_begin(sim_self *s, const sim_vec4 *restrict x)
{
	if (s->tangle_state == SELF_TANGLE_DONE)
		return;
	const int first = s->tangle_state == SELF_TANGLE_UNCHECKED;
	tangle_check(s, x, s->tangle_full || first);
	s->tangle_full = 0;
	if (first) {
		s->tangle_pairs0 = s->tangle_pairs;
		s->tangle_vertices0 = s->tangle_vertices;
	}
}

/* Drops the released pairs from the substep's candidates, in order. */
void self_tangle_filter(sim_self *s)
{
	if (s->tangled == NULL)
		return;
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->vt_count; i++) {
		const uint32_t *tv = &s->tris[3 * (size_t)s->vt[i].t];
		const uint32_t idx[4] = {s->vt[i].v, tv[0], tv[1], tv[2]};
		if (!self_released(s, idx))
			s->vt[k++] = s->vt[i];
	}
	s->vt_count = k;
	k = 0;
	for (uint32_t i = 0; i < s->ee_count; i++) {
		const self_ee *r = &s->ee[i];
		const uint32_t idx[4] = {s->edges[2 * (size_t)r->a], s->edges[2 * (size_t)r->a + 1],
					 s->edges[2 * (size_t)r->b], s->edges[2 * (size_t)r->b + 1]};
		if (!self_released(s, idx))
			s->ee[k++] = s->ee[i];
	}
	s->ee_count = k;
}

void sim_self_tangle_check(sim_self *s, const sim_vec4 *restrict x)
{
	if (s->tangle_state == SELF_TANGLE_UNCHECKED)
		self_tangle_begin(s, x);
}

void sim_self_tangle_counts(const sim_self *s, uint64_t *pairs0, uint32_t *vertices0,
			    uint64_t *pairs, uint32_t *vertices)
{
	if (pairs0 != NULL)
		*pairs0 = s->tangle_pairs0;
	if (vertices0 != NULL)
		*vertices0 = s->tangle_vertices0;
	if (pairs != NULL)
		*pairs = s->tangle_pairs;
	if (vertices != NULL)
		*vertices = s->tangle_vertices;
}

void sim_self_tangle_fill(sim_self *s, int on, int rings)
{
	s->tangle_fill = on != 0;
	s->tangle_rings = rings;
}
