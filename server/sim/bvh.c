/*
 * The triangle tree of a deforming collider; see bvh.h.
 */
#include "server/sim/bvh.h"

#include <stdlib.h>
#include <string.h>

/* The build sorts triangles by the centroid along one axis; the sort key is
 * (coordinate, index) so that the order, and the tree, never depend on the
 * sort routine's handling of ties. */
typedef struct bvh_key {
	float c;
	uint32_t t;
} bvh_key;

static int key_cmp(const void *pa, const void *pb)
{
	const bvh_key *a = pa, *b = pb;
	if (a->c != b->c)
		return a->c < b->c ? -1 : 1;
	return (a->t > b->t) - (a->t < b->t);
}

typedef struct bvh_build {
	sim_bvh *b;
	const float *cen; /* centroids, 3 per triangle */
	bvh_key *keys;
} bvh_build;

/* Builds the subtree over tri[first .. first + count) at node `at`;
 * returns the next free node. */
static uint32_t build_node(bvh_build *B, uint32_t at, uint32_t first, uint32_t count)
{
	sim_bvh *b = B->b;
	sim_bvh_node *nd = &b->nodes[at];
	if (count <= SIM_BVH_LEAF) {
		nd->first = first;
		nd->count = count;
		return at + 1;
	}
	float lo[3] = {B->cen[3 * b->tri[first]], B->cen[3 * b->tri[first] + 1], B->cen[3 * b->tri[first] + 2]};
	float hi[3] = {lo[0], lo[1], lo[2]};
	for (uint32_t i = first; i < first + count; i++)
		for (int k = 0; k < 3; k++) {
			float c = B->cen[3 * b->tri[i] + k];
			lo[k] = c < lo[k] ? c : lo[k];
			hi[k] = c > hi[k] ? c : hi[k];
		}
	int axis = 0;
	for (int k = 1; k < 3; k++)
		if (hi[k] - lo[k] > hi[axis] - lo[axis])
			axis = k;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t t = b->tri[first + i];
		B->keys[i] = (bvh_key){B->cen[3 * t + axis], t};
	}
	qsort(B->keys, count, sizeof *B->keys, key_cmp);
	for (uint32_t i = 0; i < count; i++)
		b->tri[first + i] = B->keys[i].t;
	uint32_t half = count / 2;
	nd->count = 0;
	uint32_t next = build_node(B, at + 1, first, half);
	b->nodes[at].first = next;
	return build_node(B, next, first + half, count - half);
}

int sim_bvh_build(sim_bvh *b, const float *pos, const uint32_t *tris, uint32_t nt)
{
	memset(b, 0, sizeof *b);
	if (nt == 0)
		return 0;
	/* A binary tree with leaves of 1 .. SIM_BVH_LEAF triangles split at the
	 * median has fewer than 2 nt / (SIM_BVH_LEAF / 2) nodes; 2 nt bounds it
	 * for any leaf size. */
	b->nodes = calloc(2 * (size_t)nt, sizeof *b->nodes);
	b->tri = malloc((size_t)nt * sizeof *b->tri);
	float *cen = malloc((size_t)nt * 3 * sizeof *cen);
	bvh_key *keys = malloc((size_t)nt * sizeof *keys);
	if (b->nodes == NULL || b->tri == NULL || cen == NULL || keys == NULL) {
		free(cen);
		free(keys);
		sim_bvh_free(b);
		return -1;
	}
	for (uint32_t t = 0; t < nt; t++) {
		b->tri[t] = t;
		for (int k = 0; k < 3; k++)
			cen[3 * t + k] = (pos[3 * tris[3 * t] + k] + pos[3 * tris[3 * t + 1] + k] +
					  pos[3 * tris[3 * t + 2] + k]) /
					 3.0f;
	}
	b->tri_count = nt;
	bvh_build B = {b, cen, keys};
	b->node_count = build_node(&B, 0, 0, nt);
	free(cen);
	free(keys);
	sim_bvh_refit(b, pos, pos, tris);
	return 0;
}

void sim_bvh_free(sim_bvh *b)
{
	free(b->nodes);
	free(b->tri);
	memset(b, 0, sizeof *b);
}

void sim_bvh_refit(sim_bvh *b, const float *a, const float *pb, const uint32_t *tris)
{
	for (uint32_t i = b->node_count; i-- > 0;) {
		sim_bvh_node *nd = &b->nodes[i];
		float lo[3], hi[3];
		if (nd->count > 0) {
			const uint32_t *v = &tris[3 * b->tri[nd->first]];
			for (int k = 0; k < 3; k++)
				lo[k] = hi[k] = a[3 * v[0] + k];
			for (uint32_t j = nd->first; j < nd->first + nd->count; j++) {
				v = &tris[3 * b->tri[j]];
				for (int c = 0; c < 3; c++)
					for (int k = 0; k < 3; k++) {
						float pa = a[3 * v[c] + k], pq = pb[3 * v[c] + k];
						float mn = pa < pq ? pa : pq, mx = pa < pq ? pq : pa;
						lo[k] = mn < lo[k] ? mn : lo[k];
						hi[k] = mx > hi[k] ? mx : hi[k];
					}
			}
		} else {
			const sim_bvh_node *l = &b->nodes[i + 1], *r = &b->nodes[nd->first];
			for (int k = 0; k < 3; k++) {
				lo[k] = l->lo[k] < r->lo[k] ? l->lo[k] : r->lo[k];
				hi[k] = l->hi[k] > r->hi[k] ? l->hi[k] : r->hi[k];
			}
		}
		memcpy(nd->lo, lo, sizeof lo);
		memcpy(nd->hi, hi, sizeof hi);
	}
}

void sim_bvh_refit_boxes(sim_bvh *b, const float *vlo, const float *vhi, const uint32_t *tris)
{
	for (uint32_t i = b->node_count; i-- > 0;) {
		sim_bvh_node *nd = &b->nodes[i];
		float lo[4], hi[4];
		if (nd->count > 0) {
			const uint32_t *v = &tris[3 * b->tri[nd->first]];
			memcpy(lo, &vlo[4 * (size_t)v[0]], sizeof lo);
			memcpy(hi, &vhi[4 * (size_t)v[0]], sizeof hi);
			for (uint32_t j = nd->first; j < nd->first + nd->count; j++) {
				v = &tris[3 * b->tri[j]];
				for (int c = 0; c < 3; c++) {
					const float *mn = &vlo[4 * (size_t)v[c]], *mx = &vhi[4 * (size_t)v[c]];
					for (int k = 0; k < 4; k++) {
						lo[k] = mn[k] < lo[k] ? mn[k] : lo[k];
						hi[k] = mx[k] > hi[k] ? mx[k] : hi[k];
					}
				}
			}
		} else {
			const sim_bvh_node *l = &b->nodes[i + 1], *r = &b->nodes[nd->first];
			for (int k = 0; k < 3; k++) {
				lo[k] = l->lo[k] < r->lo[k] ? l->lo[k] : r->lo[k];
				hi[k] = l->hi[k] > r->hi[k] ? l->hi[k] : r->hi[k];
			}
		}
		memcpy(nd->lo, lo, 3 * sizeof(float));
		memcpy(nd->hi, hi, 3 * sizeof(float));
	}
}

static int overlaps(const sim_bvh_node *nd, const float lo[3], const float hi[3])
{
	return nd->lo[0] <= hi[0] && nd->hi[0] >= lo[0] && nd->lo[1] <= hi[1] && nd->hi[1] >= lo[1] &&
	       nd->lo[2] <= hi[2] && nd->hi[2] >= lo[2];
}

void sim_bvh_query(const sim_bvh *b, const float lo[3], const float hi[3], sim_bvh_visit *visit,
		   void *ctx)
{
	if (b->node_count == 0)
		return;
	/* Depth is at most log2(nt) + 1 for median splits: 64 covers any
	 * 32-bit triangle count. */
	uint32_t stack[64];
	uint32_t top = 0;
	stack[top++] = 0;
	while (top > 0) {
		const sim_bvh_node *nd = &b->nodes[stack[--top]];
		if (!overlaps(nd, lo, hi))
			continue;
		if (nd->count > 0) {
			for (uint32_t j = nd->first; j < nd->first + nd->count; j++)
				visit(ctx, b->tri[j]);
		} else {
			uint32_t self = (uint32_t)(nd - b->nodes);
			stack[top++] = nd->first;
			stack[top++] = self + 1;
		}
	}
}
