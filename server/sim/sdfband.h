/*
 * The exact signed distance to a closed triangle mesh on a voxel grid
 * stored in 8^3 bricks allocated on demand (issue 22): the distance computation of drape_sdf_build, in C, apart from
 * OpenVDB. sdf_vdb.cc drives it (its threads, the grid it fills); nothing
 * here knows OpenVDB or TBB.
 *
 * Method. (1) Shell: for each triangle, every voxel of its bounding box
 * grown by SIM_SDFBAND_SHELL voxels gets the exact point-triangle distance,
 * keeping the minimum (ties to the lower triangle index, so the result does
 * not depend on the order of the triangles nor on the threads). A voxel
 * whose minimum is within SIM_SDFBAND_SHELL voxels is exact: its nearest
 * triangle's grown box holds it. (2) Layers: from the shell, breadth-first
 * over face neighbours, each new voxel takes the nearest of the triangles
 * its already-known neighbours found (the closest-triangle propagation of
 * distance transforms; Mauch 2003 bounds how far it can be off, a small
 * fraction of a voxel in practice). Outside, the layers stop where the
 * distance passes the band; inside they go on through the whole interior,
 * so a deep point reads its depth. (3) Sign: the nearest feature's
 * angle-weighted pseudo-normal (Baerentzen and Aanaes, IEEE TVCG 11(3),
 * 2005): the face normal, the sum of an edge's two face normals, or the
 * vertex normal weighted by the incident angles. It is exact for a closed,
 * manifold, consistently oriented mesh, so sim_sdfband_prepare accepts only
 * those (after welding equal positions and orienting each connected piece
 * outwards) and says why otherwise; the caller then falls back to OpenVDB.
 *
 * Each stage's work is split into independent ranges that any thread may
 * run in any order; every voxel's value depends only on the mesh and the
 * previous stage, so the field is the same at any thread count.
 */
#ifndef DRAPE_SIM_SDFBAND_H
#define DRAPE_SIM_SDFBAND_H

#include <stddef.h>
#include <stdint.h>

/* Voxels around each triangle whose distance is computed exactly. */
#define SIM_SDFBAND_SHELL 1
/* Voxel layers (along the first axis) per task of the shell stage. */
#define SIM_SDFBAND_SLAB 2

/*
 * The grid is stored in 8^3 bricks aligned to the global voxel coordinates
 * (OpenVDB's leaves), allocated when the shell or a layer first reaches
 * them: a voxel's 18 neighbours mostly share its brick's cache lines, and
 * empty space costs nothing. Voxel (x, y, z) of a brick is at index
 * (x * 8 + y) * 8 + z; its bit in a mask is bit y * 8 + z of word x.
 */
typedef struct sim_sdfband_brick {
	float dist[512];   /* signed distance, once known */
	int32_t near[512]; /* nearest triangle + 1, 0 not yet known */
	uint64_t known[8]; /* near > 0 (the layers read only these neighbours) */
	uint64_t reach[8]; /* known, or in the current layer */
	uint64_t front[8]; /* the current layer */
	uint64_t grow[8];  /* the last layer's (or the shell's) voxels the next one grows from */
	int32_t c[3];      /* brick coordinates in the table */
	uint32_t stamp;    /* the last layer that listed it */
} sim_sdfband_brick;

typedef struct sim_sdfband {
	/* The welded, oriented mesh in double precision. */
	double *pos;        /* 3 per vertex */
	uint32_t *tri;      /* 3 per triangle, outward (counter-clockwise seen from outside) */
	uint32_t nv, nt;
	double *fn;         /* unit face normals, 3 per triangle (0 for a degenerate one) */
	double *en;         /* edge pseudo-normals, 9 per triangle: edge k runs v[k] -> v[k+1] */
	double *vn;         /* vertex pseudo-normals, 3 per vertex */
	double *sphere;     /* per triangle: centroid xyz and bounding radius */
	/* The grid: voxel (i, j, k) is at (org + (i, j, k)) * voxel in world
	 * space, for i, j, k in [0, dim) (the box the layers may reach). */
	double voxel, band; /* band: the exterior band's width, metres */
	int32_t org[3], dim[3];
	/* Shell tasks: triangles overlapping each slab of SIM_SDFBAND_SLAB first-axis layers. */
	uint32_t slabs;
	uint32_t *slab_start, *slab_tri;
	/* Per row (i, j): the k range [lo, hi] of the triangles' grown boxes
	 * that reach it (lo > hi: none), so the passes after the shell walk
	 * only those. */
	int32_t *row_k;
	/* The brick table: leaf_org[k] = org[k] rounded down to a multiple of
	 * 8, leaf_dim bricks along each axis; btab holds a brick's index + 1
	 * (0: none), index (a * leaf_dim1 + c) * leaf_dim2 + e. */
	int32_t leaf_org[3], leaf_dim[3];
	uint32_t *btab;
	sim_sdfband_brick *bricks; /* capacity: one per table cell, touched only when used */
	uint32_t nbricks;
	/* The bricks of the current layer (list), of the one before (old). */
	uint32_t *list, *old, *count;
	uint32_t nlist, nold;
	uint32_t layers;    /* propagation layers made so far */
	uint32_t pieces;    /* connected pieces of the mesh */
	uint32_t flipped;   /* triangles whose winding was reversed to face out */
} sim_sdfband;

/*
 * Welds, checks and orients the mesh and sizes the grid: voxels of size
 * voxel covering the mesh's box grown by band_voxels + 2 voxels. Returns 0,
 * or -1 with why[] saying why this mesh needs the fallback (open or
 * non-manifold edge, non-orientable piece, grid over max_dense voxels, out
 * of memory). b is empty after a failure.
 */
int sim_sdfband_prepare(sim_sdfband *b, const float *vertices, uint32_t vertex_count,
			const uint32_t *triangles, uint32_t triangle_count, double voxel, int band_voxels,
			uint64_t max_dense, char *why, size_t why_size);
/* Stage 1 for slabs [s0, s1) of b->slabs; independent across slabs. */
void sim_sdfband_shell(sim_sdfband *b, uint32_t s0, uint32_t s1);
/*
 * Stage 2, the layers, breadth first from the shell:
 *
 *   sim_sdfband_begin_layers(b);
 *   for (;;) {
 *           n = sim_sdfband_plan(b);                    serial
 *           sim_sdfband_front(b, 0 .. n);               any ranges, any threads
 *           if ((n = sim_sdfband_settle(b)) == 0)       serial
 *                   break;
 *           sim_sdfband_layer(b, 0 .. n);               any ranges, any threads
 *   }
 *
 * plan commits the last layer and lists the bricks the next one may touch
 * (allocating them), front finds each listed brick's voxels of the next
 * layer (the unreached face neighbours of the last layer's voxels that
 * grow), settle keeps the bricks that have some and returns their count,
 * layer computes their voxels. Each stage reads only what the one before
 * wrote, so the field is the same at any thread count.
 */
void sim_sdfband_begin_layers(sim_sdfband *b);
uint32_t sim_sdfband_plan(sim_sdfband *b);
void sim_sdfband_front(sim_sdfband *b, uint32_t r0, uint32_t r1);
uint32_t sim_sdfband_settle(sim_sdfband *b);
void sim_sdfband_layer(sim_sdfband *b, uint32_t r0, uint32_t r1);
/* The voxels of brick n that belong in the field (interior, or exterior
 * within the band), as a mask (word x, bit y * 8 + z). After the layers. */
void sim_sdfband_keep_mask(const sim_sdfband *b, uint32_t n, uint64_t mask[8]);
void sim_sdfband_free(sim_sdfband *b);

/* The exact distance from p to triangle (a, b, c) and the nearest feature:
 * 0 the face, 1 + k vertex k, 4 + k edge k (v[k] -> v[k+1]). Exposed for
 * the tests. */
double sim_sdfband_point_triangle(const double p[3], const double a[3], const double b[3],
				  const double c[3], int *feature, double q[3]);

/* The tests' hash of a built field's voxels (sdf_vdb.cc): the sum over its
 * leaves of FNV-1a of the origin, the 512 values and the active mask. */
struct drape_sdf;
uint64_t sim_sdf_voxel_hash(const struct drape_sdf *sdf, uint64_t *leaf_count);

#endif
