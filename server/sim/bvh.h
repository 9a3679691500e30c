/*
 * A bounding volume hierarchy over the triangles of a deforming mesh: built
 * once from one pose by median splits, then refit every substep to the boxes
 * the triangles sweep as the mesh moves, and queried with boxes.
 *
 * Why this structure: the mesh keeps its topology and only moves, so the
 * tree's shape can stay and only its boxes change. A refit is one pass over
 * the nodes (children before parents), about as cheap as reading the
 * positions, where a rebuild or a voxel field costs a sort or seconds. A
 * skinned body's triangles stay near the ones they were built with, so the
 * tree stays tight enough (James and Pai 2004; Van den Bergen 1997 refit
 * AABB trees of deforming models the same way).
 */
#ifndef DRAPE_SIM_BVH_H
#define DRAPE_SIM_BVH_H

#include <stdint.h>

/* A node: its box, and either a leaf's run of tri[first .. first + count)
 * (count > 0) or an inner node (count == 0) whose left child is the next
 * node and whose right child is node `first`. Children follow their parent,
 * so a refit walks the nodes backwards. */
typedef struct sim_bvh_node {
	float lo[3], hi[3];
	uint32_t first, count;
} sim_bvh_node;

typedef struct sim_bvh {
	sim_bvh_node *nodes;
	uint32_t node_count;
	uint32_t *tri; /* triangle indices in leaf order */
	uint32_t tri_count;
} sim_bvh;

/* Leaves hold at most this many triangles. */
#define SIM_BVH_LEAF 4u

/* Builds the tree over nt triangles (tris: 3 vertex indices each) of the
 * positions pos (xyz). Returns 0 on success, -1 when out of memory (b is
 * then empty). The tree's shape depends only on the input. */
int sim_bvh_build(sim_bvh *b, const float *pos, const uint32_t *tris, uint32_t nt);
void sim_bvh_free(sim_bvh *b);

/* Sets every box to the triangles' extent over both poses a and b (the
 * box a triangle sweeps when its vertices move linearly from a to b). */
void sim_bvh_refit(sim_bvh *b, const float *a, const float *pb, const uint32_t *tris);
/* The same from each vertex's own box (lo, hi: 4 floats per vertex, the
 * fourth unused, e.g. over the two poses): a vertex shared by six
 * triangles is then ordered once instead of six times, and a vertex's box
 * is one vector of four lanes. */
void sim_bvh_refit_boxes(sim_bvh *b, const float *lo, const float *hi, const uint32_t *tris);

/* Calls visit(ctx, t) for every triangle t whose box overlaps [lo, hi], in
 * the tree's fixed order. */
typedef void sim_bvh_visit(void *ctx, uint32_t tri);
void sim_bvh_query(const sim_bvh *b, const float lo[3], const float hi[3], sim_bvh_visit *visit,
		   void *ctx);

#endif
