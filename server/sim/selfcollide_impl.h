/*
 * Internals of the self-collision shared by its parts: the tuning constants,
 * the candidate records, struct sim_self, the narrow-phase geometry and the
 * motion bounds. Only selfcollide.c, selfcandidates.c, selfproject.c and
 * selfguard.c include it; everything else goes through selfcollide.h.
 *
 *   selfcollide.c     create and destroy: chunks, adjacency, buffers
 *   selfhash.c        the dense spatial hash over chunk boxes
 *   selfcandidates.c  candidate pairs once per substep (begin_substep)
 *   selfreuse.c       a wider list kept over substeps, filtered each one
 *   selfcull.c        chunk pairs proven to hold no candidate, skipped
 *   selfproject.c     the pushes and friction of every iteration
 *   selfguard.c       the continuous guard at the end of the substep
 */
#ifndef DRAPE_SIM_SELFCOLLIDE_IMPL_H
#define DRAPE_SIM_SELFCOLLIDE_IMPL_H

#include "server/sim/selfcollide.h"

#include "server/sim/pool.h"
#include "server/sim/preflight.h"
#include "server/sim/selfhash.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


/* Same sliver criterion as topology.c: twice the area below this fraction of
 * the longest edge squared means the normal is rounding noise. */
#define SELF_SLIVER_RATIO 1e-6f

/* A vertex whose start-of-substep projection falls within the triangle
 * enlarged by this barycentric margin was "over" the triangle at x: its side
 * is trusted even when it is now deep on the other side. */
#define SELF_TRUST_MARGIN 0.05f

/* Edge pairs more parallel than this (|e_a x e_b| / (|e_a| |e_b|), the sine
 * of their angle) have no stable separating direction; vertex-triangle pairs
 * cover their contacts. */
#define SELF_PARALLEL_SINE 1e-3f

/* The guard moves a crossing pair back to this fraction of its time of
 * impact in its first rounds, then (if crossings remain) to x itself. */
#define SELF_GUARD_BACKOFF 0.8
#define SELF_GUARD_PARTIAL_ROUNDS 2
/* Rounds of the guard that move a crossing pair as one body (zone_move)
 * before any is moved back along its path. */
#define SELF_GUARD_ZONE_ROUNDS 8

/* Rounds after which the guard stops resolving crossings one by one and
 * sends every free vertex back to x (revert_all). Each round after the
 * partial ones returns at least one more vertex to x or carries one, so this
 * is only reached when hundreds of vertices form one chain of crossings. */
#define SELF_GUARD_MAX_ROUNDS 256

/* Contact tolerance of the swept test, relative to the pair's size. */
#define SELF_GUARD_TOL 1e-4f

/* Triangles per chunk of the broad phase (see build_chunks). Larger chunks
 * mean fewer chunk pairs and more member tests in each; with the reach of
 * 1.3 thicknesses, 16 took 11 % less self-collision time than 8 on a
 * 300 x 300 sheet folding on a sphere (one thread, 17 frames: 7.9 against
 * 8.9 s, two runs each), and 32 or 64 gave no more. */
#define SELF_CHUNK 16u

/* Zeroed slack after the flat arrays that member_hits reads eight at a
 * time. */
#define SELF_PAD 8u

/*
 * `lb` of a pair is a lower bound on its distance while its vertices move
 * from x to the prediction p of begin_substep: the distance at x less the
 * motion bound (vt_motion_bound). sim_self_project skips a pair whose lb is
 * more than the thickness plus twice the largest stray of any vertex from
 * that prediction: it cannot be within the thickness, nor have crossed, so
 * its projection would do nothing. -INFINITY when no bound is known.
 *
 * `dx` is the pair's distance at x itself (-INFINITY when the triangle is
 * degenerate there) and `tol` the guard's contact tolerance for it
 * (SELF_GUARD_TOL times the longest edge at x). x does not change within a
 * substep, so both hold until its end: the guard clears a pair with
 * dx > M + tol, M its motion bound over x -> p as p is then, by the very
 * test vt_toi and ee_toi would make first, without the distance
 * computation (guard_clears).
 */
typedef struct self_vt {
	uint32_t v, t;
	int32_t side;     /* +1 or -1: side of the triangle's plane at x */
	uint16_t trusted; /* 1 when the vertex was over the triangle at x */
	uint16_t rest_close; /* 1 for mesh neighbours closer than the thickness at rest, see
			      * SELF_REST_UNKNOWN */
	float lb, dx, tol;
} self_vt;

/* rest_close, side and trusted are worked out when a projection first
 * needs them (settle_vt, settle_ee): most pairs are skipped before
 * (apart_now), and they cost a closest-point computation at rest and a
 * plane or line test at x. Until then rest_close is SELF_REST_UNKNOWN. */
#define SELF_REST_UNKNOWN 2u

typedef struct self_ee {
	uint32_t a, b;    /* edge indices */
	int32_t side;     /* sign of the line-line separation at x; 0 unknown */
	uint16_t trusted; /* 1 when the lines' closest points lay on both segments at x */
	uint16_t rest_close;
	float lb, dx, tol;
} self_ee;

/* Candidate pairs found by one block of chunks (collect), grown by doubling
 * in begin_substep only. */
typedef struct self_pairs {
	self_vt *vt;
	uint32_t vt_count, vt_cap;
	self_ee *ee;
	uint32_t ee_count, ee_cap;
	/* Edge pairs found by the boxes, waiting for ee_flush: edges qi[k]
	 * and qj[k] (qi < qj), in the order found. */
	uint32_t qi[8], qj[8];
	uint32_t qn;
} self_pairs;

/* Chunks per block of the parallel collection: the blocks, not the threads,
 * fix the order of the pairs, so it is the same for any thread count. */
#define SELF_COLLECT_BLOCK 64u

struct sim_self {
	uint32_t nv, nt, ne;
	uint32_t *tris;      /* 3 per triangle */
	uint8_t *tri_skip;   /* 1 for a zero-area triangle at x0 */
	uint32_t *edges;     /* 2 per unique edge, smaller index first */
	uint32_t *tri_edges; /* 3 per triangle: indices into edges */
	float base_cell;     /* mean rest edge length */
	float *tri_box;      /* 6 per triangle: swept box grown by the reach */
	/*
	 * Chunks (build_chunks): the nh non-degenerate triangles in Morton
	 * order of their rest centroids, cut into runs of SELF_CHUNK, so that a
	 * chunk is a small patch of cloth, with the vertices and edges its
	 * triangles own (tri_own). The hash holds chunks, not triangles: a
	 * chunk pair whose boxes meet has its vertex, edge and triangle boxes
	 * tested against each other from flat arrays, which costs far less
	 * than a hash visit per triangle pair.
	 */
	uint32_t nh, chunk_count;
	uint32_t *chunk_tri; /* nh triangle indices, chunk after chunk */
	uint32_t *cv_start, *cv; /* owned vertices of chunk c: cv[cv_start[c] .. cv_start[c + 1]) */
	uint32_t *ce_start, *ce; /* owned edges, the same way */
	uint32_t *ce_v;      /* 2 arrays of ce_start[chunk_count]: the owned edges' vertices */
	uint32_t *ct_v;      /* 3 arrays of nh: the vertices of the triangles in chunk order */
	/* The chunk of each triangle, and the chunk owning each vertex and
	 * edge (UINT32_MAX for none: zero-area triangles and their only
	 * vertices), and a per-chunk mark: for the guard's partial
	 * re-collection (recollect_strayed). */
	uint32_t *t_chunk, *v_chunk, *e_chunk;
	uint8_t *chunk_mark;
	float *sbox;         /* 6 arrays of nh floats: swept triangle boxes in chunk order */
	float *vsbox;        /* 6 arrays of cv_start[chunk_count]: swept vertex boxes, in cv order */
	float *esbox;        /* 6 arrays of ce_start[chunk_count]: swept edge boxes, in ce order */
	float *chunk_sbox;   /* 6 per chunk: union of its triangles' swept boxes */
	float *chunk_box;    /* 6 per chunk: the same grown by the reach (what is hashed) */
	float chunk_scale;   /* mean largest extent of a chunk's box at rest */
	sim_hash hash;
	drape_pool *pool;    /* may be NULL: everything on the caller's thread */
	self_pairs *blocks;  /* one per SELF_COLLECT_BLOCK chunks, and one for orphans */
	uint32_t block_count;
	uint32_t *tri_stamp;
	/* Ownership, so that every vertex and edge is searched for exactly once
	 * through one triangle: bits 0-2 of tri_own[t] mark the corners k whose
	 * vertex t owns (its first non-degenerate triangle), bits 3-5 the edges.
	 * Vertices in no non-degenerate triangle are searched on their own. */
	uint8_t *tri_own;
	uint32_t *orphans;
	uint32_t orphan_count;
	uint32_t stamp;
	self_vt *vt;
	uint32_t vt_count, vt_cap;
	self_ee *ee;
	uint32_t ee_count, ee_cap;
	/*
	 * Rest positions and vertex adjacency (CSR over the unique edges). A
	 * pair of mesh neighbours (a vertex of one side joined by an edge to a
	 * vertex of the other) already closer than the thickness in the rest
	 * mesh is a neighbourhood, not a contact: with a fine mesh and a thick
	 * cloth, a vertex and the triangle across a quad's diagonal are 0.71
	 * edge lengths apart, and pushing them to the thickness would inflate
	 * the cloth at rest. Such pairs are not projected, but stay in the list
	 * so that the guard still stops them from crossing. Pairs that are not
	 * neighbours (separate layers placed close in the input) are pushed.
	 */
	sim_v3 *x0;
	uint32_t *adj_start, *adj;
	float thickness; /* of the current substep, for the rest-distance test */
	sim_vec4 *p_pred;    /* p as predicted at begin, for the guard's stray check */
	uint8_t *dirty, *dirty_next;
	uint8_t *carried; /* 1 for a vertex the guard carried along (see carry) */
	/* Triangles of each vertex (CSR) and a per-round mark, for the guard's
	 * re-check around the vertices it moved back (see guard_neighbourhood). */
	uint32_t *vtri_start, *vtri;
	uint32_t *tri_mark;
	uint32_t mark;
	/* Vertices stitched together (sim_self_set_joins), CSR both ways; NULL
	 * without stitches. A pair whose sides hold two joined vertices is a
	 * seam, one piece of cloth: never a candidate, never guarded. */
	uint32_t *join_start, *join;
	/* Cloth objects (sim_self_set_objects; the sim owns the arrays):
	 * each vertex's object and the obj_count^2 table of the pairs of
	 * objects that collide. NULL with one object. */
	const uint32_t *obj;
	const uint8_t *obj_pass;
	uint32_t obj_count;
	/*
	 * Candidate reuse (selfreuse.c): the pairs within reuse_wide of each
	 * other at the positions reuse_x, a superset of every substep's
	 * candidates while no vertex has moved more than the drift budget
	 * from reuse_x (common translation aside). reuse_reach is the reach
	 * the list serves, 0 when there is none; reuse_served the substeps it
	 * has served; reuse_wait the substeps to collect afresh before the
	 * next list is tried (a list that served one substep cost more than it
	 * saved).
	 */
	sim_vec4 *reuse_x;
	self_vt *reuse_vt;
	uint32_t reuse_vt_count, reuse_vt_cap;
	self_ee *reuse_ee;
	uint32_t reuse_ee_count, reuse_ee_cap;
	float reuse_reach, reuse_wide;
	uint32_t reuse_served, reuse_wait;
	/* Substeps whose candidates came from a kept list, lists collected,
	 * and substeps collected afresh, since create. */
	uint64_t reuse_hits, reuse_builds, fresh_collects;
	/* 1 when the hash and boxes were not built for this substep's
	 * x -> p (the candidates came from the kept list): the guard builds
	 * them over x -> p_end, p as the guard found it, when it needs them. */
	int hash_stale;
	sim_vec4 *p_end;
	/*
	 * Thickness per vertex (selfthick.c, sim_self_set_thickness): each
	 * vertex's own (vh), the mean of each triangle's corners (th) and of
	 * each edge's ends (eh); a pair is kept apart by the mean of its two
	 * sides (self_vt_h, self_ee_h). NULL when none was given or every
	 * vertex has the same: then the thickness the step passes is every
	 * pair's, to the bit as before. vh_on is 0 while the session's
	 * self_thickness overrides them; vh_max is the largest, what the step
	 * passes as the thickness, so that the reach, the hash, the guard
	 * and the kept list are sized for the thickest pair.
	 */
	float *vh, *th, *eh;
	float vh_max;
	int vh_given, vh_on;
	/*
	 * Chunk-pair culling (selfcull.c): every vertex of each chunk's
	 * triangles (CSR), each chunk's rest frame (origin, u, w; cull_framed
	 * 0 without one), 1 in chunk_sliver for a chunk with a sliver at x
	 * (written by chunk_boxes each substep), and for every chunk A its
	 * partners B >= A near it at rest, cull_b[cull_start[A] ..
	 * cull_start[A + 1]) in increasing order, with the smallest rest
	 * distance cull_d0 of the pairs between them that the search tests.
	 * cull_on 0 turns the culling off and cull_scale multiplies D0: both
	 * only for tests (1 and 1 otherwise).
	 */
	uint32_t *cvall_start, *cvall;
	float *cull_frame;
	uint8_t *cull_framed, *chunk_sliver;
	uint32_t *cull_start, *cull_b;
	float *cull_d0;
	/* Each chunk's neighbourhood for the fit: the vertices of its partners
	 * (CSR), their rest-plane coordinates in its frame (2 each), the rest
	 * side of the fit (5 per chunk: mean, inverse scatter) and the fit of a
	 * substep (4 per chunk: sigma, eps, displacement diagonal, largest
	 * coordinate; written by chunk_boxes). */
	uint32_t *cnb_start, *cnb;
	float *cnb_y, *cnb_fit, *cull_fit;
	/* Each chunk's smallest D0 over its partners (0 for none), and the fits
	 * it skips before trying again after a fit that could not skip that
	 * partner. */
	float *cull_bestd0;
	uint8_t *cull_wait, *cull_backoff;
	int cull_on;
	float cull_scale;
	/*
	 * Untangling (selftangle.c): tangle_state says whether the mesh was
	 * checked for intersections and whether some remain; while they do,
	 * tangled[v] is 1 for a released vertex (NULL otherwise) and the rest
	 * is the check's scratch: the triangles in a pair (hit), the subset
	 * tested, parts and their sizes, each triangle's piece of cloth
	 * (mcomp), each piece's largest part and the edge -> triangles CSR.
	 * tangle_fill 0 releases the contour triangles only, tangle_rings
	 * the rings of triangles the region is grown by (for tests).
	 */
	int tangle_state, tangle_full, tangle_fill, tangle_rings;
	uint8_t *tangled, *tangle_hit;
	uint32_t *tangle_sub, *tangle_label, *tangle_queue, *tangle_mcomp;
	uint32_t *tangle_lsize, *tangle_lbest, *tangle_et_start, *tangle_et;
	sim_preflight_scratch tangle_pf; /* the checks' boxes and hash, kept while tangled */
	uint64_t tangle_pairs, tangle_pairs0;     /* at the last check, at the first */
	uint32_t tangle_vertices, tangle_vertices0; /* released, the same way */
};

#define SELF_TANGLE_UNCHECKED 0
#define SELF_TANGLE_ACTIVE 1
#define SELF_TANGLE_DONE 2
/* Rings of triangles the released region is grown by (selftangle.c): 0,
 * as measured on the MakeHuman dress (docs/untangle.md). */
#define SELF_TANGLE_RINGS 0

/* 1 when all four vertices of a pair are released (selftangle.c): the pair
 * is neither pushed apart nor guarded. */
static inline int self_released(const sim_self *s, const uint32_t idx[4])
{
	const uint8_t *r = s->tangled;
	return r != NULL && (r[idx[0]] & r[idx[1]] & r[idx[2]] & r[idx[3]]);
}

/* selftangle.c: the check at a substep's start (before the candidates),
 * the candidates' filter (after), and the buffers' release. */
void self_tangle_begin(sim_self *s, const sim_vec4 *restrict x);
void self_tangle_filter(sim_self *s);
void self_tangle_free(sim_self *s);

/* 1 when vertices a and b belong to objects that do not collide: a pair
 * across them is never a candidate and never guarded (objects.c). */
static inline int self_masked(const sim_self *s, uint32_t a, uint32_t b)
{
	if (s->obj == NULL)
		return 0;
	const uint32_t oa = s->obj[a], ob = s->obj[b];
	return oa != ob && !s->obj_pass[(size_t)oa * s->obj_count + ob];
}

/* 1 when the pair idx (ee = 0: vertex idx[0] against triangle idx[1..3];
 * ee = 1: edge idx[0..1] against edge idx[2..3]) holds two vertices joined
 * by a stitch, one on each side. */
static inline int self_joined(const sim_self *s, const uint32_t idx[4], int ee)
{
	if (s->join_start == NULL)
		return 0;
	for (int i = 0; i < 1 + ee; i++)
		for (uint32_t k = s->join_start[idx[i]]; k < s->join_start[idx[i] + 1]; k++)
			for (int j = 1 + ee; j < 4; j++)
				if (s->join[k] == idx[j])
					return 1;
	return 0;
}


/* One past the last slot of chunk c in chunk_tri and sbox. */
static inline uint32_t chunk_end(const sim_self *s, uint32_t c)
{
	uint64_t e = (uint64_t)(c + 1) * SELF_CHUNK;
	return e < s->nh ? (uint32_t)e : s->nh;
}
/* ---- geometry --------------------------------------------------------------- */

static inline sim_v3 lerp3(sim_v3 a, sim_v3 b, float t)
{
	return v3(a.x + t * (b.x - a.x), a.y + t * (b.y - a.y), a.z + t * (b.z - a.z));
}

static inline float clamp01(float v)
{
	return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

/* Plain comparisons rather than fminf/fmaxf, which glibc does not inline
 * (they must order NaN); a NaN here only makes a box invalid. */
static inline float maxf(float a, float b)
{
	return a > b ? a : b;
}

static inline float minf(float a, float b)
{
	return a < b ? a : b;
}

/* Twice the area's normal, and whether the triangle is a sliver. */
static inline int tri_degenerate(sim_v3 a, sim_v3 b, sim_v3 c, sim_v3 *n_out)
{
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), bc = v3_sub(c, b);
	sim_v3 n = v3_cross(ab, ac);
	float l2 = maxf(v3_dot(ab, ab), maxf(v3_dot(ac, ac), v3_dot(bc, bc)));
	*n_out = n;
	float nn = v3_len(n);
	return !(nn > SELF_SLIVER_RATIO * l2) || !(l2 > 0.0f);
}

/*
 * Closest point on triangle abc to p by Voronoi regions (Ericson 5.1.5).
 * Writes the barycentric weights of the closest point and returns 1 when it
 * lies in the face region (strictly inside), 0 on an edge or a vertex. The
 * caller has rejected degenerate triangles; the divisions are still guarded
 * so that a sliver gives a vertex, never NaN.
 */
static inline int closest_on_triangle(sim_v3 p, sim_v3 a, sim_v3 b, sim_v3 c, float bary[3])
{
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), ap = v3_sub(p, a);
	float d1 = v3_dot(ab, ap), d2 = v3_dot(ac, ap);
	if (d1 <= 0.0f && d2 <= 0.0f) {
		bary[0] = 1.0f, bary[1] = 0.0f, bary[2] = 0.0f;
		return 0;
	}
	sim_v3 bp = v3_sub(p, b);
	float d3 = v3_dot(ab, bp), d4 = v3_dot(ac, bp);
	if (d3 >= 0.0f && d4 <= d3) {
		bary[0] = 0.0f, bary[1] = 1.0f, bary[2] = 0.0f;
		return 0;
	}
	float vc = d1 * d4 - d3 * d2;
	if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
		float den = d1 - d3;
		float v = den > 0.0f ? d1 / den : 0.0f;
		bary[0] = 1.0f - v, bary[1] = v, bary[2] = 0.0f;
		return 0;
	}
	sim_v3 cp = v3_sub(p, c);
	float d5 = v3_dot(ab, cp), d6 = v3_dot(ac, cp);
	if (d6 >= 0.0f && d5 <= d6) {
		bary[0] = 0.0f, bary[1] = 0.0f, bary[2] = 1.0f;
		return 0;
	}
	float vb = d5 * d2 - d1 * d6;
	if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
		float den = d2 - d6;
		float w = den > 0.0f ? d2 / den : 0.0f;
		bary[0] = 1.0f - w, bary[1] = 0.0f, bary[2] = w;
		return 0;
	}
	float va = d3 * d6 - d5 * d4;
	if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
		float den = (d4 - d3) + (d5 - d6);
		float w = den > 0.0f ? (d4 - d3) / den : 0.0f;
		bary[0] = 0.0f, bary[1] = 1.0f - w, bary[2] = w;
		return 0;
	}
	float sum = va + vb + vc;
	if (!(sum > 0.0f)) {
		bary[0] = 1.0f, bary[1] = 0.0f, bary[2] = 0.0f;
		return 0;
	}
	float v = vb / sum, w = vc / sum;
	bary[0] = 1.0f - v - w, bary[1] = v, bary[2] = w;
	return 1;
}

/*
 * Closest points of segments p1q1 and p2q2 (Ericson 5.1.9): parameters s on
 * the first and t on the second, both clamped to [0, 1]. Zero-length
 * segments degrade to points.
 */
static inline void closest_segments(sim_v3 p1, sim_v3 q1, sim_v3 p2, sim_v3 q2, float *s_out,
			     float *t_out)
{
	const float eps = 1e-20f;
	sim_v3 d1 = v3_sub(q1, p1), d2 = v3_sub(q2, p2), r = v3_sub(p1, p2);
	float a = v3_dot(d1, d1), e = v3_dot(d2, d2), f = v3_dot(d2, r);
	float s, t;
	if (a <= eps && e <= eps) {
		s = t = 0.0f;
	} else if (a <= eps) {
		s = 0.0f;
		t = clamp01(f / e);
	} else {
		float c = v3_dot(d1, r);
		if (e <= eps) {
			t = 0.0f;
			s = clamp01(-c / a);
		} else {
			float b = v3_dot(d1, d2);
			float denom = a * e - b * b;
			s = denom > 0.0f ? clamp01((b * f - c * e) / denom) : 0.0f;
			t = (b * s + f) / e;
			if (t < 0.0f) {
				t = 0.0f;
				s = clamp01(-c / a);
			} else if (t > 1.0f) {
				t = 1.0f;
				s = clamp01((b - c) / a);
			}
		}
	}
	*s_out = s;
	*t_out = t;
}

static inline float point_triangle_distance(sim_v3 q, sim_v3 a, sim_v3 b, sim_v3 c)
{
	float w[3];
	closest_on_triangle(q, a, b, c, w);
	sim_v3 cp = v3_add(v3_add(v3_scale(a, w[0]), v3_scale(b, w[1])), v3_scale(c, w[2]));
	return v3_len(v3_sub(q, cp));
}

static inline float segment_distance(sim_v3 a0, sim_v3 a1, sim_v3 b0, sim_v3 b1)
{
	float s, t;
	closest_segments(a0, a1, b0, b1, &s, &t);
	return v3_len(v3_sub(lerp3(a0, a1, s), lerp3(b0, b1, t)));
}


/*
 * The reach of the candidate search is 1.3 times the thickness: one
 * thickness for the contact itself and 0.3 of one as slack for what the
 * iterations (stretch, obstacles, other contacts) move p away from its
 * prediction. A pair is kept when its swept boxes come within the reach and
 * when a Lipschitz bound allows it: the distance between a point and a
 * triangle (or two segments) shrinks no faster than the relative motion of
 * the two sides (vt_motion_bound, ee_motion_bound), so a pair farther apart
 * at x than that bound plus the reach cannot come within the thickness while
 * no vertex strays more than 0.15 thickness from its prediction, nor touch
 * while none strays half the reach. sim_self_end_substep checks the latter
 * and collects again when it fails, so the slack trades only missed
 * touches, never missed crossings, against the pairs kept.
 *
 * With a thickness per vertex, `thickness` here is the largest of any
 * vertex (the step passes that) and a pair's own contact distance h is at
 * most it (the mean of two means of values at most the largest): a pair
 * dropped cannot come within h while no vertex strays 0.15 of the largest,
 * the argument above with the largest read for "the thickness". The cost:
 * thin cloth near a thick panel is searched with the thick panel's reach.
 *
 * Why 1.3 and not more: on a regular mesh with the default thickness of
 * half an edge, the vertex-triangle and edge-edge distances of flat cloth
 * cluster at 0.71 edge lengths (across a quad's diagonal), which a reach of
 * 1.5 thicknesses (0.75 edges) takes in: that factor made every flat
 * vertex a candidate of its diagonal neighbours' triangles and cost 1.6
 * times the self-collision time of a 300 x 300 sheet folding on a sphere
 * (make bench, "fold on sphere + self": 336 against 584 ms per frame,
 * medians of 3 interleaved runs) for no test it helped. A factor of 2 was measured
 * earlier to cost 2.5 times the pairs on a crumpled sheet.
 */
#define SELF_REACH_FACTOR 1.3f

/* W / r of the candidate reuse (selfreuse.c). The pairs within W at X
 * cost a filter test each per substep, where a collection costs a search
 * of the whole cloth; a wider list lasts longer before the drift spends its
 * budget, (W - r) / 6. On the demo garment (cotton, 40 substeps, one
 * thread, CPU time per frame over frames 3-48): 75-101 ms collecting every
 * substep, 40-47 ms with W = 2 r, 38-39 ms with 3 r, 39-47 ms with 4 r. */
#define SELF_REUSE_WIDEN 3.0f

/* ... but never wider than this many mean edge lengths: a list as wide as
 * the distance between a flat cloth's neighbours (0.71 edges across a
 * quad's diagonal) holds a few pairs per vertex that are never candidates,
 * and collecting and filtering them costs more than searching afresh. On
 * the bench's fold (1 cm edges, 5 mm thickness, reach 6.5 mm) a 19.5 mm
 * list doubled the self-collision's CPU time; so there the width is
 * 0.65 edges, the reach itself, and the search is done afresh. */
#define SELF_REUSE_EDGES 0.65f

/* A list narrower than this many reaches leaves too small a drift budget
 * to last: no list is kept. */
#define SELF_REUSE_MIN_WIDEN 1.5f

/* Slack against the rounding of the drift and distances, which are float
 * differences of coordinates: about 1e-7 m at 1 m, far below 1 % of any
 * budget here. */
#define SELF_REUSE_SAFETY 0.99f

/* Largest motion x -> p of vertex v. */
static inline float motion(const sim_vec4 *x, const sim_vec4 *p, uint32_t v)
{
	return v3_len(v3_sub(v3_of4(p[v]), v3_of4(x[v])));
}

/* Motion x -> p of vertex v, for bound_now. */
static inline sim_v3 disp(const sim_vec4 *x, const sim_vec4 *p, uint32_t v)
{
	return v3(p[v].x - x[v].x, p[v].y - x[v].y, p[v].z - x[v].z);
}

static inline float dist2(sim_v3 a, sim_v3 b)
{
	sim_v3 d = v3_sub(a, b);
	return v3_dot(d, d);
}

/*
 * The largest relative motion x -> p of a vertex and a corner of the
 * triangle (ee = 0: idx[0] against idx[1..3]), or of an end of one edge and
 * an end of the other (ee = 1: idx[0..1] against idx[2..3]). The square
 * root of the largest square: sqrtf is monotonic and correctly rounded, so
 * this is the largest of the lengths to the bit, with one root.
 */
static inline float bound_now(const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			      const uint32_t idx[4], int ee)
{
	sim_v3 d0 = disp(x, p, idx[0]), d1 = disp(x, p, idx[1]), d2 = disp(x, p, idx[2]),
	       d3 = disp(x, p, idx[3]);
	float m = maxf(dist2(d0, d2), dist2(d0, d3));
	m = maxf(m, ee ? maxf(dist2(d1, d2), dist2(d1, d3)) : dist2(d0, d1));
	return sqrtf(m);
}


/*
 * Bounds on how much the distance between the two sides of a pair can
 * shrink from x to p under linear motion. A point of either side is a convex
 * combination of its corners, so the motion of one side's point relative to
 * the other's is a convex combination of the relative motions of corner
 * pairs (one from each side), and the distance shrinks at most by the
 * largest of those. Relative motions remove a common translation, so a cloth
 * falling as a whole gives 0. Each one changes by at most twice a vertex's
 * stray from its prediction, which sim_self_end_substep relies on.
 */
static inline float vt_motion_bound(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	return bound_now(x, p, idx, 0);
}

/* (An earlier form, |a1 - a0| + max |b - a0| in relative motions, is
 * larger and grows by four times the stray, so a pair it dropped could touch
 * after a stray the end-of-substep check let pass.) */
static inline float ee_motion_bound(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	return bound_now(x, p, idx, 1);
}


/* The swept test's contact tolerance for triangle abc at x, as vt_toi
 * computes it. */
static inline float guard_tol(sim_v3 a, sim_v3 b, sim_v3 c)
{
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), bc = v3_sub(c, b);
	return SELF_GUARD_TOL * sqrtf(maxf(v3_dot(ab, ab), maxf(v3_dot(ac, ac), v3_dot(bc, bc))));
}

/* The distance kept between vertex v and triangle t, and between edges a
 * and b: the mean of the two sides' thickness with per-vertex values, else
 * the substep's `h` itself. */
static inline float self_vt_h(const sim_self *s, uint32_t v, uint32_t t, float h)
{
	return s->vh_on ? 0.5f * (s->vh[v] + s->th[t]) : h;
}

static inline float self_ee_h(const sim_self *s, uint32_t a, uint32_t b, float h)
{
	return s->vh_on ? 0.5f * (s->eh[a] + s->eh[b]) : h;
}

static inline float reach_of(float thickness)
{
	return thickness > 0.0f && isfinite(thickness) ? SELF_REACH_FACTOR * thickness : 0.0f;
}

/* ---- candidate collection (begin_substep) ----------------------------------- */

static inline uint32_t next_stamp(sim_self *s)
{
	if (++s->stamp == 0) {
		/* Wrapped after 2^32 queries: clear so old stamps cannot match. */
		memset(s->tri_stamp, 0, (size_t)s->nt * sizeof *s->tri_stamp);
		s->stamp = 1;
	}
	return s->stamp;
}

static inline void swept_box(sim_vec4 a, sim_vec4 b, float *box)
{
	box[0] = minf(a.x, b.x), box[1] = minf(a.y, b.y), box[2] = minf(a.z, b.z);
	box[3] = maxf(a.x, b.x), box[4] = maxf(a.y, b.y), box[5] = maxf(a.z, b.z);
}

static inline void box_union(float *box, const float *o)
{
	for (int k = 0; k < 3; k++) {
		box[k] = minf(box[k], o[k]);
		box[k + 3] = maxf(box[k + 3], o[k + 3]);
	}
}

static inline void box_grow(float *box, float g)
{
	for (int k = 0; k < 3; k++) {
		box[k] -= g;
		box[k + 3] += g;
	}
}


/* Visits the hashed triangles of every chunk whose grown box overlaps `box`
 * (through the hash of chunks and its big list); `body` sees the triangle
 * index as `t_`. A chunk met in two cells is visited twice, so bodies
 * deduplicate (tri_stamp). A query box covering too many cells scans every
 * triangle instead. */
#define SELF_FOR_TRIANGLES(s, h, box, body)                                               \
	do {                                                                               \
		sim_cellbox c_ = sim_hash_cells((h), (box));                               \
		if (sim_cellbox_count(&c_) > SIM_HASH_MAX_CELLS) {                         \
			for (uint32_t t_ = 0; t_ < (s)->nt; t_++) {                        \
				body;                                                      \
			}                                                                  \
			break;                                                             \
		}                                                                          \
		for (int32_t cz_ = c_.lo[2]; cz_ <= c_.hi[2]; cz_++)                       \
			for (int32_t cy_ = c_.lo[1]; cy_ <= c_.hi[1]; cy_++)               \
				for (int32_t cx_ = c_.lo[0]; cx_ <= c_.hi[0]; cx_++) {     \
					uint32_t sl_ = sim_hash_slot((h), cx_, cy_, cz_);  \
					for (uint32_t e_ = (h)->start[sl_];                \
					     e_ < (h)->start[sl_ + 1]; e_++) {             \
						SELF_FOR_CHUNK_(s, (h)->entries[e_], box,  \
								body);                     \
					}                                                  \
				}                                                          \
		for (uint32_t k_ = 0; k_ < (h)->big_count; k_++)                           \
			SELF_FOR_CHUNK_(s, (h)->big[k_], box, body);                       \
	} while (0)

#define SELF_FOR_CHUNK_(s, chunk, box, body)                                               \
	do {                                                                               \
		uint32_t ch_ = (chunk);                                                    \
		if (!sim_box_overlap((box), &(s)->chunk_box[6 * (size_t)ch_]))             \
			break;                                                             \
		uint32_t ce_ = chunk_end((s), ch_);                                        \
		for (uint32_t ci_ = ch_ * SELF_CHUNK; ci_ < ce_; ci_++) {                   \
			uint32_t t_ = (s)->chunk_tri[ci_];                                 \
			body;                                                              \
		}                                                                          \
	} while (0)

/* Grows *arr (of *cap elements of `size` bytes) by doubling to hold `need`;
 * -1 (nothing changed) when that fails. selfcollide.c. */
int self_reserve(void **arr, uint32_t *cap, size_t size, uint64_t need);

/* Collects every candidate pair for the motion x -> p within `reach`
 * (replacing the list), and the partial re-collection around the chunks
 * whose vertices strayed from their prediction (-1: do a full one).
 * selfcandidates.c. */
void self_collect(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach);
/* Which chunks' culling fits (selfcull.c) self_boxes_and_hash makes for
 * x -> p: every chunk's (a full collection), none (the guard's hash, which
 * no chunk pair reads), or only those a partial re-collection can read
 * (self_cull_needed). A chunk not fitted gets a zero fit, which skips
 * nothing, so which fits are made never changes the candidates. */
enum { SELF_FITS_ALL, SELF_FITS_NONE, SELF_FITS_MARKED };

/* The boxes over x -> p and the hash of the chunks (what self_collect
 * builds first), with the fits `fits` asks for; -1 when out of memory for
 * the hash entries. */
int self_boxes_and_hash(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			float reach, int fits);
/* Replaces the candidate lists with the pairs of vt[0 .. nvt) and
 * ee[0 .. nee) that self_collect would keep for x -> p within `reach`:
 * the same box test and the same bounds, pair by pair, in the given
 * order. selfcandidates.c. */
void self_filter(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach,
		 const self_vt *vt, uint32_t nvt, const self_ee *ee, uint32_t nee);
/* Fills the candidate lists from the kept list when it is complete for
 * x -> p (selfreuse.c); returns 0 when the caller must collect afresh. */
int self_reuse_begin(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
		     float reach);
int self_recollect_strayed(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			   float reach);

/* Chunk-pair culling, selfcull.c: the records at create (-1 when out of
 * memory), their release, the per-chunk sliver flag of a substep, and
 * whether chunks A <= B provably hold no candidate for x -> p within
 * `reach` (1: chunk_pair may skip them). */
int self_cull_build(sim_self *s);
void self_cull_free(sim_self *s);
void self_cull_slivers(const sim_self *s, const sim_vec4 *restrict x, uint32_t c);
void self_cull_fit(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
		   uint32_t c, float reach);
int self_cull_skip(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
		   uint32_t A, uint32_t B, float reach);
/* Whether chunk c's fit can be read by a partial re-collection of the
 * marked chunks (chunk_mark): c is marked or has a marked partner. */
int self_cull_needed(const sim_self *s, uint32_t c);

#endif
