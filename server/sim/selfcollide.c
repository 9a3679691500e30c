/*
 * Self-collision of the cloth: broad phase by a dense spatial hash built once
 * per substep, vertex-triangle and edge-edge candidate pairs collected once
 * per substep and projected every iteration, and a continuous (swept) guard
 * at the end of the substep. See selfcollide.h for the call order.
 *
 * Broad phase (Müller, Ten Minute Physics "spatial hashing"; selfhash.h):
 * the triangles are grouped at create into chunks of SELF_CHUNK along a
 * Morton curve (compact patches of cloth), and every chunk's box swept from
 * x to p and grown by the reach (1.3 times the thickness, see
 * SELF_REACH_FACTOR) is inserted into the cells it overlaps, cells about a
 * chunk in size. Each chunk queries the cells of its own swept box once and
 * meets every overlapping chunk pair once; inside a pair the vertices,
 * edges and triangles the two chunks own are tested box against box, eight
 * at a time, from flat arrays (collect). Box-overlapping pairs then pass
 * cheap distance bounds at x before they become candidates. Blocks of
 * chunks run on the worker pool, joined in a fixed order.
 *
 * Memory: every buffer is sized at create. The candidate arrays (those of
 * the blocks too) and the hash entry array may grow, by doubling
 * (amortized), only inside
 * sim_self_begin_substep (and the guard's rare re-collection in
 * sim_self_end_substep, outside the iteration loop); sim_self_project never
 * allocates. If a growth fails the pairs that do not fit are dropped for that
 * substep rather than failing the step (the interface has no error path
 * there, and a step without some contacts is better than no step).
 *
 * Narrow phase: closest point on a triangle (Ericson, Real-Time Collision
 * Detection, 5.1.5) and closest points of two segments (Ericson 5.1.9). The
 * side a vertex belongs on is decided from the start-of-substep positions x,
 * so a vertex that went through a triangle within one substep is pulled back
 * rather than pushed further through. Pushes are PBD projections of
 * C = n . (q - sum b_i a_i) - thickness >= 0 with gradients (n, -b_i n), so
 * the corrections w_i * lambda * grad_i sum, with masses 1/w_i, to zero:
 * linear momentum is conserved (Müller et al. 2006, section 3.3). Edge-edge
 * pushes use the weights (1 - s, s, -(1 - t), -t) of the closest points the
 * same way. Friction removes a fraction of the pair's relative tangential
 * displacement since x with the same weights, so it conserves momentum too.
 *
 * `thickness` everywhere is the distance kept between a vertex and a
 * triangle (or between two edges), i.e. the distance between the two
 * layers' mid-surfaces. It should stay below the mesh's edge length (see
 * rest_close for what happens between neighbours).
 */
#include "server/sim/selfcollide.h"

#include "server/sim/pool.h"
#include "server/sim/selfhash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX__)
#include <immintrin.h>
#endif

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
};

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
static int closest_on_triangle(sim_v3 p, sim_v3 a, sim_v3 b, sim_v3 c, float bary[3])
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
static void closest_segments(sim_v3 p1, sim_v3 q1, sim_v3 p2, sim_v3 q2, float *s_out,
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

/* ---- create / destroy ------------------------------------------------------- */

typedef struct self_half_edge {
	uint64_t key;
	uint32_t id; /* triangle * 3 + local edge */
} self_half_edge;

static int half_edge_cmp(const void *a, const void *b)
{
	const self_half_edge *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* One past the last slot of chunk c in chunk_tri and sbox. */
static inline uint32_t chunk_end(const sim_self *s, uint32_t c)
{
	uint64_t e = (uint64_t)(c + 1) * SELF_CHUNK;
	return e < s->nh ? (uint32_t)e : s->nh;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Spreads the low 10 bits of v to every third bit (Morton code). */
static uint32_t spread3(uint32_t v)
{
	v &= 0x3ffu;
	v = (v | (v << 16)) & 0x030000ffu;
	v = (v | (v << 8)) & 0x0300f00fu;
	v = (v | (v << 4)) & 0x030c30c3u;
	v = (v | (v << 2)) & 0x09249249u;
	return v;
}

/*
 * Orders the non-degenerate triangles along a Morton curve through their
 * rest centroids and cuts the order into chunks of SELF_CHUNK, so that each
 * chunk is a compact patch of the rest mesh (it stays one while the cloth
 * bends; a fold inside a chunk only makes its box larger). Sizes the hash
 * for the chunks. Returns -1 when out of memory.
 */
static int build_chunks(sim_self *s)
{
	const uint32_t nt = s->nt;
	uint32_t nh = 0;
	for (uint32_t t = 0; t < nt; t++)
		nh += !s->tri_skip[t];
	s->nh = nh;
	s->chunk_count = (nh + SELF_CHUNK - 1) / SELF_CHUNK;
	uint64_t *key = malloc((size_t)nh * sizeof *key + 1);
	s->chunk_tri = malloc((size_t)nh * sizeof *s->chunk_tri + 1);
	s->sbox = calloc(6 * (size_t)nh + SELF_PAD, sizeof *s->sbox);
	s->chunk_sbox = malloc(6 * (size_t)s->chunk_count * sizeof *s->chunk_sbox + 1);
	s->chunk_box = malloc(6 * (size_t)s->chunk_count * sizeof *s->chunk_box + 1);
	if (key == NULL || s->chunk_tri == NULL || s->sbox == NULL || s->chunk_sbox == NULL ||
	    s->chunk_box == NULL || sim_hash_init(&s->hash, s->chunk_count) != DRAPE_OK) {
		free(key);
		return -1;
	}
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t v = 0; v < s->nv; v++) {
		const float c[3] = {s->x0[v].x, s->x0[v].y, s->x0[v].z};
		for (int k = 0; k < 3; k++) {
			lo[k] = minf(lo[k], c[k]);
			hi[k] = maxf(hi[k], c[k]);
		}
	}
	float scale[3];
	for (int k = 0; k < 3; k++)
		scale[k] = hi[k] > lo[k] ? 1023.0f / (hi[k] - lo[k]) : 0.0f;
	uint32_t n = 0;
	for (uint32_t t = 0; t < nt; t++) {
		if (s->tri_skip[t])
			continue;
		const uint32_t *tv = &s->tris[3 * (size_t)t];
		sim_v3 c = v3_scale(v3_add(v3_add(s->x0[tv[0]], s->x0[tv[1]]), s->x0[tv[2]]),
				    1.0f / 3.0f);
		const float cc[3] = {c.x, c.y, c.z};
		uint32_t q[3];
		for (int k = 0; k < 3; k++) {
			float f = (cc[k] - lo[k]) * scale[k];
			q[k] = f > 0.0f ? (f < 1023.0f ? (uint32_t)f : 1023u) : 0u;
		}
		uint32_t code = spread3(q[0]) | (spread3(q[1]) << 1) | (spread3(q[2]) << 2);
		key[n++] = ((uint64_t)code << 32) | t;
	}
	qsort(key, nh, sizeof *key, u64_cmp);
	for (uint32_t i = 0; i < nh; i++)
		s->chunk_tri[i] = (uint32_t)key[i];
	free(key);
	/* The chunks' typical size at rest sets the hash cell (collect). */
	double extent = 0.0;
	for (uint32_t c = 0; c < s->chunk_count; c++) {
		float b[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
		uint32_t end = (c + 1) * SELF_CHUNK < nh ? (c + 1) * SELF_CHUNK : nh;
		for (uint32_t i = c * SELF_CHUNK; i < end; i++)
			for (int k = 0; k < 3; k++) {
				uint32_t v = s->tris[3 * (size_t)s->chunk_tri[i] + k];
				const float p[3] = {s->x0[v].x, s->x0[v].y, s->x0[v].z};
				for (int a = 0; a < 3; a++) {
					b[a] = minf(b[a], p[a]);
					b[a + 3] = maxf(b[a + 3], p[a]);
				}
			}
		extent += maxf(b[3] - b[0], maxf(b[4] - b[1], b[5] - b[2]));
	}
	float mean = s->chunk_count ? (float)(extent / s->chunk_count) : 0.0f;
	s->chunk_scale = mean > 0.0f && isfinite(mean) ? mean : s->base_cell;
	return 0;
}

/* The vertices and edges owned by each chunk's triangles, in chunk order,
 * and room for their boxes. Returns -1 when out of memory. */
static int build_chunk_members(sim_self *s)
{
	const uint32_t nc = s->chunk_count;
	s->cv_start = malloc(((size_t)nc + 1) * sizeof *s->cv_start);
	s->ce_start = malloc(((size_t)nc + 1) * sizeof *s->ce_start);
	s->cv = malloc((size_t)s->nv * sizeof *s->cv + 1);
	s->ce = malloc((size_t)s->ne * sizeof *s->ce + 1);
	/* Rows sized for the owned members (at most nv and ne), padded for
	 * member_hits. */
	s->vsbox = calloc(6 * (size_t)s->nv + SELF_PAD, sizeof *s->vsbox);
	s->esbox = calloc(6 * (size_t)s->ne + SELF_PAD, sizeof *s->esbox);
	s->ce_v = calloc(2 * (size_t)s->ne + SELF_PAD, sizeof *s->ce_v);
	s->ct_v = calloc(3 * (size_t)s->nh + SELF_PAD, sizeof *s->ct_v);
	s->t_chunk = malloc((size_t)s->nt * sizeof *s->t_chunk + 1);
	s->v_chunk = malloc((size_t)s->nv * sizeof *s->v_chunk + 1);
	s->e_chunk = malloc((size_t)s->ne * sizeof *s->e_chunk + 1);
	s->chunk_mark = calloc((size_t)nc + 1, 1);
	if (s->cv_start == NULL || s->ce_start == NULL || s->cv == NULL || s->ce == NULL ||
	    s->vsbox == NULL || s->esbox == NULL || s->ce_v == NULL || s->ct_v == NULL ||
	    s->t_chunk == NULL || s->v_chunk == NULL || s->e_chunk == NULL || s->chunk_mark == NULL)
		return -1;
	for (uint32_t t = 0; t < s->nt; t++)
		s->t_chunk[t] = UINT32_MAX;
	for (uint32_t v = 0; v < s->nv; v++)
		s->v_chunk[v] = UINT32_MAX;
	for (uint32_t e = 0; e < s->ne; e++)
		s->e_chunk[e] = UINT32_MAX;
	for (uint32_t i = 0; i < s->nh; i++)
		s->t_chunk[s->chunk_tri[i]] = i / SELF_CHUNK;
	for (uint32_t i = 0; i < s->nh; i++)
		for (int k = 0; k < 3; k++)
			s->ct_v[(size_t)k * s->nh + i] = s->tris[3 * (size_t)s->chunk_tri[i] + k];
	uint32_t nvo = 0, neo = 0;
	for (uint32_t c = 0; c < nc; c++) {
		s->cv_start[c] = nvo;
		s->ce_start[c] = neo;
		for (uint32_t i = c * SELF_CHUNK, e = chunk_end(s, c); i < e; i++) {
			const uint32_t t = s->chunk_tri[i];
			for (int k = 0; k < 3; k++) {
				if (s->tri_own[t] & (1u << k))
					s->cv[nvo++] = s->tris[3 * (size_t)t + k];
				if (s->tri_own[t] & (8u << k))
					s->ce[neo++] = s->tri_edges[3 * (size_t)t + k];
			}
		}
	}
	s->cv_start[nc] = nvo;
	s->ce_start[nc] = neo;
	for (uint32_t c = 0; c < nc; c++) {
		for (uint32_t k = s->cv_start[c]; k < s->cv_start[c + 1]; k++)
			s->v_chunk[s->cv[k]] = c;
		for (uint32_t k = s->ce_start[c]; k < s->ce_start[c + 1]; k++)
			s->e_chunk[s->ce[k]] = c;
	}
	for (uint32_t k = 0; k < neo; k++) {
		s->ce_v[k] = s->edges[2 * (size_t)s->ce[k]];
		s->ce_v[neo + k] = s->edges[2 * (size_t)s->ce[k] + 1];
	}
	return 0;
}

void sim_self_destroy(sim_self *s)
{
	if (s == NULL)
		return;
	free(s->tris);
	free(s->tri_skip);
	free(s->edges);
	free(s->tri_edges);
	free(s->tri_box);
	free(s->chunk_tri);
	free(s->cv_start);
	free(s->cv);
	free(s->ce_start);
	free(s->ce);
	free(s->ce_v);
	free(s->ct_v);
	free(s->vsbox);
	free(s->esbox);
	free(s->sbox);
	free(s->chunk_sbox);
	free(s->chunk_box);
	sim_hash_free(&s->hash);
	free(s->tri_stamp);
	free(s->tri_own);
	free(s->orphans);
	for (uint32_t b = 0; s->blocks != NULL && b < s->block_count; b++) {
		free(s->blocks[b].vt);
		free(s->blocks[b].ee);
	}
	free(s->blocks);
	free(s->vt);
	free(s->ee);
	free(s->p_pred);
	free(s->x0);
	free(s->adj_start);
	free(s->adj);
	free(s->dirty);
	free(s->dirty_next);
	free(s->carried);
	free(s->t_chunk);
	free(s->v_chunk);
	free(s->e_chunk);
	free(s->chunk_mark);
	free(s->vtri_start);
	free(s->vtri);
	free(s->tri_mark);
	free(s);
}

drape_err sim_self_create(const uint32_t *triangles, uint32_t triangle_count, uint32_t vertex_count,
			  const sim_vec4 *x0, sim_self **out, drape_error *err)
{
	sim_self *s = calloc(1, sizeof *s);
	if (s == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	const size_t nt = triangle_count, nv = vertex_count;
	s->nv = vertex_count;
	s->nt = triangle_count;
	s->tris = malloc(3 * nt * sizeof *s->tris + 1);
	s->tri_skip = calloc(nt + 1, 1);
	s->tri_edges = malloc(3 * nt * sizeof *s->tri_edges + 1);
	s->tri_box = malloc(6 * nt * sizeof *s->tri_box + 1);
	s->tri_stamp = calloc(nt + 1, sizeof *s->tri_stamp);
	s->p_pred = malloc(nv * sizeof *s->p_pred + 1);
	s->x0 = malloc(nv * sizeof *s->x0 + 1);
	s->dirty = calloc(nv + 1, 1);
	s->dirty_next = calloc(nv + 1, 1);
	s->carried = calloc(nv + 1, 1);
	self_half_edge *he = malloc(3 * nt * sizeof *he + 1);
	if (s->tris == NULL || s->tri_skip == NULL || s->tri_edges == NULL || s->tri_box == NULL ||
	    s->tri_stamp == NULL || s->p_pred == NULL || s->x0 == NULL || s->dirty == NULL ||
	    s->dirty_next == NULL || s->carried == NULL || he == NULL) {
		free(he);
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	memcpy(s->tris, triangles, 3 * nt * sizeof *s->tris);
	for (size_t v = 0; v < nv; v++)
		s->x0[v] = v3_of4(x0[v]);
	/* Defined even before the first begin_substep. */
	memcpy(s->p_pred, x0, nv * sizeof *s->p_pred);

	/* Unique edges by sorting (min, max) keys, as topology.c does. */
	for (size_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t a = triangles[3 * t + k], b = triangles[3 * t + (k + 1) % 3];
			uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
			he[3 * t + k].key = ((uint64_t)lo << 32) | hi;
			he[3 * t + k].id = (uint32_t)(3 * t + k);
		}
	qsort(he, 3 * nt, sizeof *he, half_edge_cmp);
	uint32_t ne = 0;
	for (size_t i = 0; i < 3 * nt; i++)
		if (i == 0 || he[i].key != he[i - 1].key)
			ne++;
	s->ne = ne;
	s->edges = malloc(2 * (size_t)ne * sizeof *s->edges + 1);
	s->tri_own = calloc(nt + 1, 1);
	if (s->edges == NULL || s->tri_own == NULL) {
		free(he);
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	double len_sum = 0.0;
	uint32_t e = UINT32_MAX;
	for (size_t i = 0; i < 3 * nt; i++) {
		if (i == 0 || he[i].key != he[i - 1].key) {
			e++;
			uint32_t a = (uint32_t)(he[i].key >> 32), b = (uint32_t)he[i].key;
			s->edges[2 * (size_t)e] = a;
			s->edges[2 * (size_t)e + 1] = b;
			len_sum += v3_len(v3_sub(v3_of4(x0[a]), v3_of4(x0[b])));
		}
		s->tri_edges[he[i].id] = e;
	}
	free(he);
	float mean = ne ? (float)(len_sum / ne) : 0.0f;
	/* A mesh of only zero-length edges has no scale: fall back to a metre so
	 * the hash still has a finite cell (the caller's thickness may raise it). */
	s->base_cell = (mean > 0.0f && isfinite(mean)) ? mean : 1.0f;

	for (size_t t = 0; t < nt; t++) {
		sim_v3 n;
		s->tri_skip[t] = (uint8_t)tri_degenerate(v3_of4(x0[triangles[3 * t]]),
							 v3_of4(x0[triangles[3 * t + 1]]),
							 v3_of4(x0[triangles[3 * t + 2]]), &n);
	}

	if (build_chunks(s) != 0) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}

	/* Adjacency in CSR form: counts, prefix sum, fill. */
	s->adj_start = calloc(nv + 1, sizeof *s->adj_start);
	s->adj = malloc(2 * (size_t)ne * sizeof *s->adj + 1);
	if (s->adj_start == NULL || s->adj == NULL) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	for (size_t i = 0; i < ne; i++) {
		s->adj_start[s->edges[2 * i]]++;
		s->adj_start[s->edges[2 * i + 1]]++;
	}
	for (size_t v = 0, run = 0; v <= nv; v++) {
		size_t c = v < nv ? s->adj_start[v] : 0;
		s->adj_start[v] = (uint32_t)(run + c);
		run += c;
	}
	for (size_t i = 0; i < ne; i++) {
		uint32_t a = s->edges[2 * i], b = s->edges[2 * i + 1];
		s->adj[--s->adj_start[a]] = b;
		s->adj[--s->adj_start[b]] = a;
	}

	/* Triangles of every vertex in CSR form, the same way. */
	s->vtri_start = calloc(nv + 1, sizeof *s->vtri_start);
	s->vtri = malloc(3 * nt * sizeof *s->vtri + 1);
	s->tri_mark = calloc(nt + 1, sizeof *s->tri_mark);
	if (s->vtri_start == NULL || s->vtri == NULL || s->tri_mark == NULL) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	for (size_t k = 0; k < 3 * nt; k++)
		s->vtri_start[triangles[k]]++;
	for (size_t v = 0, run = 0; v <= nv; v++) {
		size_t c = v < nv ? s->vtri_start[v] : 0;
		s->vtri_start[v] = (uint32_t)(run + c);
		run += c;
	}
	for (size_t k = 3 * nt; k-- > 0;)
		s->vtri[--s->vtri_start[triangles[k]]] = (uint32_t)(k / 3);

	/* Owners: the first non-degenerate triangle of every vertex and edge. */
	uint32_t *owner = malloc((nv > ne ? nv : ne) * sizeof *owner + 1);
	if (owner == NULL) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	for (size_t v = 0; v < nv; v++)
		owner[v] = UINT32_MAX;
	for (size_t t = nt; t-- > 0;)
		if (!s->tri_skip[t])
			for (int k = 0; k < 3; k++)
				owner[triangles[3 * t + k]] = (uint32_t)t;
	uint32_t orphans = 0;
	for (size_t v = 0; v < nv; v++)
		orphans += owner[v] == UINT32_MAX;
	s->orphans = malloc((size_t)orphans * sizeof *s->orphans + 1);
	if (s->orphans == NULL) {
		free(owner);
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	for (size_t v = 0; v < nv; v++) {
		if (owner[v] == UINT32_MAX) {
			s->orphans[s->orphan_count++] = (uint32_t)v;
			continue;
		}
		const uint32_t *tv = &triangles[3 * (size_t)owner[v]];
		for (int k = 0; k < 3; k++)
			if (tv[k] == v)
				s->tri_own[owner[v]] |= (uint8_t)(1u << k);
	}
	for (size_t i = 0; i < ne; i++)
		owner[i] = UINT32_MAX;
	for (size_t t = nt; t-- > 0;)
		if (!s->tri_skip[t])
			for (int k = 0; k < 3; k++)
				owner[s->tri_edges[3 * t + k]] = (uint32_t)t;
	for (size_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++)
			if (!s->tri_skip[t] && owner[s->tri_edges[3 * t + k]] == t)
				s->tri_own[t] |= (uint8_t)(8u << k);
	free(owner);
	if (build_chunk_members(s) != 0) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}

	/* Candidate capacity: a few pairs per vertex and per edge covers a
	 * folded cloth; more is grown in begin_substep. */
	s->vt_cap = vertex_count < 64u ? 256u : (vertex_count > (1u << 28) ? 1u << 30 : 4u * vertex_count);
	s->ee_cap = ne < 64u ? 256u : (ne > (1u << 28) ? 1u << 30 : 4u * ne);
	s->vt = malloc((size_t)s->vt_cap * sizeof *s->vt);
	s->ee = malloc((size_t)s->ee_cap * sizeof *s->ee);
	s->block_count = (s->chunk_count + SELF_COLLECT_BLOCK - 1) / SELF_COLLECT_BLOCK + 1;
	s->blocks = calloc(s->block_count, sizeof *s->blocks);
	if (s->vt == NULL || s->ee == NULL || s->blocks == NULL) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	s->stamp = 0;
	*out = s;
	return DRAPE_OK;
}

void sim_self_set_pool(sim_self *s, drape_pool *pool)
{
	s->pool = pool;
}

uint32_t sim_self_pair_count(const sim_self *s)
{
	return s->vt_count + s->ee_count;
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


/*
 * Side of the vertex relative to the triangle's plane at x. A vertex lying
 * exactly on the plane takes the side it comes from, judged by where it is
 * heading (the opposite of its sign at p), so that a projection never helps
 * it through. Trusted when the projection at x falls on the triangle.
 */
static void vt_side(sim_v3 q, sim_v3 a, sim_v3 b, sim_v3 c, sim_v3 qp, sim_v3 ap, sim_v3 bp,
		    sim_v3 cp, int32_t *side, uint32_t *trusted)
{
	sim_v3 n;
	*trusted = 0;
	if (tri_degenerate(a, b, c, &n)) {
		/* No plane at x: fall back to the side at p, untrusted. */
		sim_v3 np = v3_cross(v3_sub(bp, ap), v3_sub(cp, ap));
		*side = v3_dot(v3_sub(qp, ap), np) >= 0.0f ? 1 : -1;
		return;
	}
	float d = v3_dot(v3_sub(q, a), n);
	if (d > 0.0f) {
		*side = 1;
	} else if (d < 0.0f) {
		*side = -1;
	} else {
		sim_v3 np = v3_cross(v3_sub(bp, ap), v3_sub(cp, ap));
		*side = v3_dot(v3_sub(qp, ap), np) > 0.0f ? -1 : 1;
	}
	/* Barycentric coordinates of the projection (Ericson 3.4). */
	sim_v3 v0 = v3_sub(b, a), v1 = v3_sub(c, a), v2 = v3_sub(q, a);
	float d00 = v3_dot(v0, v0), d01 = v3_dot(v0, v1), d11 = v3_dot(v1, v1);
	float d20 = v3_dot(v2, v0), d21 = v3_dot(v2, v1);
	float den = d00 * d11 - d01 * d01;
	if (!(den > 0.0f))
		return;
	float bv = (d11 * d20 - d01 * d21) / den, bw = (d00 * d21 - d01 * d20) / den;
	float bu = 1.0f - bv - bw;
	*trusted = bu >= -SELF_TRUST_MARGIN && bv >= -SELF_TRUST_MARGIN &&
		   bw >= -SELF_TRUST_MARGIN;
}

/*
 * Side of edge pair (a0a1, b0b1) at x: the sign of the separation of their
 * lines along e_a x e_b (the same for any points on the lines). Parallel
 * lines have none (0: use the side at p). Trusted when the lines' closest
 * points fall on both segments, i.e. the edges were really crossing over one
 * another at x rather than beside each other.
 */
static void ee_side(sim_v3 a0, sim_v3 a1, sim_v3 b0, sim_v3 b1, sim_v3 pa0, sim_v3 pa1,
		    sim_v3 pb0, sim_v3 pb1, int32_t *side, uint32_t *trusted)
{
	sim_v3 ea = v3_sub(a1, a0), eb = v3_sub(b1, b0), r = v3_sub(a0, b0);
	sim_v3 n = v3_cross(ea, eb);
	float la = v3_dot(ea, ea), lb = v3_dot(eb, eb), nn = v3_dot(n, n);
	*side = 0;
	*trusted = 0;
	if (!(nn > SELF_PARALLEL_SINE * SELF_PARALLEL_SINE * la * lb))
		return;
	float d = v3_dot(r, n);
	if (d > 0.0f) {
		*side = 1;
	} else if (d < 0.0f) {
		*side = -1;
	} else {
		sim_v3 np = v3_cross(v3_sub(pa1, pa0), v3_sub(pb1, pb0));
		*side = v3_dot(v3_sub(pa0, pb0), np) > 0.0f ? -1 : 1;
	}
	float b = v3_dot(ea, eb), c = v3_dot(ea, r), f = v3_dot(eb, r);
	float den = la * lb - b * b;
	if (!(den > 0.0f))
		return;
	float sp = (b * f - c * lb) / den, tp = (la * f - b * c) / den;
	*trusted = sp >= -SELF_TRUST_MARGIN && sp <= 1.0f + SELF_TRUST_MARGIN &&
		   tp >= -SELF_TRUST_MARGIN && tp <= 1.0f + SELF_TRUST_MARGIN;
}

/* Room for at least `need` records in *arr of capacity *cap: doubled
 * (from 256), amortized. Returns -1 when that fails, leaving it as it was. */
static int reserve(void **arr, uint32_t *cap, size_t size, uint64_t need)
{
	if (need <= *cap)
		return 0;
	uint64_t c = *cap ? *cap : 256u;
	while (c < need)
		c *= 2;
	if (c > UINT32_MAX)
		c = UINT32_MAX;
	if (c < need)
		return -1;
	void *n = realloc(*arr, (size_t)c * size);
	if (n == NULL)
		return -1;
	*arr = n;
	*cap = (uint32_t)c;
	return 0;
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

/* 1 when some vertex of a[0..na) is joined by a mesh edge to some vertex of
 * b[0..nb). */
static int neighbours(const sim_self *s, const uint32_t *a, int na, const uint32_t *b, int nb)
{
	for (int i = 0; i < na; i++)
		for (uint32_t k = s->adj_start[a[i]]; k < s->adj_start[a[i] + 1]; k++)
			for (int j = 0; j < nb; j++)
				if (s->adj[k] == b[j])
					return 1;
	return 0;
}

/* The swept test's contact tolerance for triangle abc at x, as vt_toi
 * computes it. */
static inline float guard_tol(sim_v3 a, sim_v3 b, sim_v3 c)
{
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), bc = v3_sub(c, b);
	return SELF_GUARD_TOL * sqrtf(maxf(v3_dot(ab, ab), maxf(v3_dot(ac, ac), v3_dot(bc, bc))));
}

/* The separating-axis bounds of vt_consider and ee_consider are differences
 * of terms about the size of the coordinates, so their rounding is about
 * 1e-7 m at 1 m from the origin: they drop a pair only when they exceed the
 * reach by this factor, a thousandth, which is far above that for any
 * thickness above a tenth of a millimetre. */
#define SELF_BOUND_ROUNDING 1.001f

/* Considers triangle t as a candidate for vertex v, their swept boxes
 * within the reach. */
static void vt_consider(const sim_self *s, self_pairs *out, const sim_vec4 *x, const sim_vec4 *p,
			uint32_t v, uint32_t t, float reach)
{
	const uint32_t *tv = &s->tris[3 * (size_t)t];
	if (tv[0] == v || tv[1] == v || tv[2] == v)
		return;
	if (p[v].w == 0.0f && p[tv[0]].w == 0.0f && p[tv[1]].w == 0.0f && p[tv[2]].w == 0.0f)
		return;
	sim_v3 q = v3_of4(x[v]), a = v3_of4(x[tv[0]]), b = v3_of4(x[tv[1]]), c = v3_of4(x[tv[2]]);
	sim_v3 n;
	float lb = -INFINITY, dx = -INFINITY;
	if (!tri_degenerate(a, b, c, &n)) {
		const uint32_t idx[4] = {v, tv[0], tv[1], tv[2]};
		float M = vt_motion_bound(x, p, idx);
		/* Cheap lower bounds first: the distance to the triangle's plane,
		 * and the gap between the vertex and the triangle along the line
		 * from the triangle's centroid to the vertex (a separating axis,
		 * as in ee_consider), which parts the vertex from the triangles
		 * beside it in a flat sheet. */
		float inv = 1.0f / v3_len(n);
		sim_v3 qa = v3_sub(q, a);
		if (fabsf(v3_dot(qa, n)) * inv - M > reach)
			return;
		sim_v3 g3 = v3_add(v3_add(a, b), c);
		sim_v3 u = v3_sub(v3_scale(q, 3.0f), g3); /* 3 (q - centroid) */
		float lu = v3_len(u);
		if (lu > 0.0f) {
			float ext = maxf(v3_dot(v3_sub(v3_scale(a, 3.0f), g3), u),
					 maxf(v3_dot(v3_sub(v3_scale(b, 3.0f), g3), u),
					      v3_dot(v3_sub(v3_scale(c, 3.0f), g3), u)));
			float bound = (lu - ext / lu) * (1.0f / 3.0f);
			if (bound - M > reach * SELF_BOUND_ROUNDING)
				return;
		}
		dx = point_triangle_distance(q, a, b, c);
		lb = dx - M;
		if (lb > reach)
			return;
	}
	if (out->vt_count == out->vt_cap &&
	    reserve((void **)&out->vt, &out->vt_cap, sizeof *out->vt, (uint64_t)out->vt_count + 1) != 0)
		return;
	self_vt *r = &out->vt[out->vt_count++];
	r->v = v;
	r->t = t;
	r->lb = lb;
	r->dx = dx;
	r->tol = guard_tol(a, b, c);
	r->side = 0;
	r->trusted = 0;
	r->rest_close = SELF_REST_UNKNOWN;
}

/* Considers edge j as a partner of edge i, their swept boxes within the
 * reach. */
static void ee_consider(const sim_self *s, self_pairs *out, const sim_vec4 *x, const sim_vec4 *p,
			uint32_t i, uint32_t j, float reach)
{
	const uint32_t a0 = s->edges[2 * (size_t)i], a1 = s->edges[2 * (size_t)i + 1];
	const uint32_t b0 = s->edges[2 * (size_t)j], b1 = s->edges[2 * (size_t)j + 1];
	if (a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1)
		return;
	if (p[a0].w == 0.0f && p[a1].w == 0.0f && p[b0].w == 0.0f && p[b1].w == 0.0f)
		return;
	sim_v3 xa0 = v3_of4(x[a0]), xa1 = v3_of4(x[a1]), xb0 = v3_of4(x[b0]), xb1 = v3_of4(x[b1]);
	const uint32_t idx[4] = {a0, a1, b0, b1};
	float M = ee_motion_bound(x, p, idx);
	/* A cheap lower bound first: the two segments' separation along the
	 * line through their midpoints (a separating axis: the distance
	 * between two sets is at least their gap along any unit direction).
	 * Each segment reaches half its projection on that line from its
	 * midpoint. Unlike the line test below it also parts the side-by-side
	 * edges of a flat sheet, most of the box-overlapping pairs there. */
	sim_v3 ea = v3_sub(xa1, xa0), eb = v3_sub(xb1, xb0);
	sim_v3 dm = v3_sub(v3_add(xa0, xa1), v3_add(xb0, xb1));
	float ldm = v3_len(dm);
	if (ldm > 0.0f) {
		float bound = 0.5f * (ldm - (fabsf(v3_dot(ea, dm)) + fabsf(v3_dot(eb, dm))) / ldm);
		if (bound - M > reach * SELF_BOUND_ROUNDING)
			return;
	}
	/* The separation of the two lines bounds that of the segments too. */
	sim_v3 nl = v3_cross(ea, eb);
	float nl2 = v3_dot(nl, nl);
	if (nl2 > 0.0f && fabsf(v3_dot(v3_sub(xa0, xb0), nl)) / sqrtf(nl2) - M > reach)
		return;
	const float dx = segment_distance(xa0, xa1, xb0, xb1);
	float lb = dx - M;
	if (lb > reach)
		return;
	if (out->ee_count == out->ee_cap &&
	    reserve((void **)&out->ee, &out->ee_cap, sizeof *out->ee, (uint64_t)out->ee_count + 1) != 0)
		return;
	self_ee *r = &out->ee[out->ee_count++];
	r->a = i;
	r->b = j;
	r->lb = lb;
	r->dx = dx;
	r->tol = SELF_GUARD_TOL * sqrtf(maxf(v3_dot(ea, ea), v3_dot(eb, eb)));
	r->side = 0;
	r->trusted = 0;
	r->rest_close = SELF_REST_UNKNOWN;
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


/* Box k of `soa` (6 arrays of `stride` floats) grown by g. */
static inline void soa_box(const float *soa, size_t stride, uint32_t k, float g, float *box)
{
	for (int a = 0; a < 3; a++) {
		box[a] = soa[(size_t)a * stride + k] - g;
		box[a + 3] = soa[(size_t)(a + 3) * stride + k] + g;
	}
}

/* Most members of one kind a chunk can have: three per triangle. */
#define SELF_CHUNK_MEMBERS (3u * SELF_CHUNK)

/*
 * Eight box tests at once, written with GCC/Clang vector extensions: one
 * AVX2 instruction per operation in the avx2 build, two SSE2 ones or plain
 * code otherwise. Comparisons are exact, so every build finds the same
 * hits. The arrays read here carry SELF_PAD zeroed floats at their end, so
 * that the last group of eight never reads past them.
 */
typedef float self_f8 __attribute__((vector_size(32)));
typedef int32_t self_i8 __attribute__((vector_size(32)));

static inline self_f8 load_f8(const float *p)
{
	self_f8 v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline self_i8 load_i8(const uint32_t *p)
{
	self_i8 v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* Bit l set when lane l of m is true (all ones). */
static inline uint32_t mask_bits(self_i8 m)
{
#if defined(__AVX__)
	return (uint32_t)_mm256_movemask_ps((__m256)m);
#else
	uint32_t b = 0;
	for (int l = 0; l < 8; l++)
		b |= ((uint32_t)m[l] & 1u) << l;
	return b;
#endif
}

/*
 * The members j in [j0, j1) whose boxes in `soa` (6 rows of `stride`
 * floats) overlap box g and none of whose `nv` vertices (rows of `vrows`,
 * `stride` apart) is a0 or a1, written to out (room for j1 - j0 + 8);
 * returns how many.
 */
static inline uint32_t member_hits(const float *restrict soa, size_t stride,
				   const uint32_t *restrict vrows, int nv, uint32_t a0, uint32_t a1,
				   uint32_t j0, uint32_t j1, const float g[6], uint32_t *restrict out)
{
	const self_i8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
	const self_f8 gx0 = {g[0], g[0], g[0], g[0], g[0], g[0], g[0], g[0]};
	const self_f8 gy0 = {g[1], g[1], g[1], g[1], g[1], g[1], g[1], g[1]};
	const self_f8 gz0 = {g[2], g[2], g[2], g[2], g[2], g[2], g[2], g[2]};
	const self_f8 gx1 = {g[3], g[3], g[3], g[3], g[3], g[3], g[3], g[3]};
	const self_f8 gy1 = {g[4], g[4], g[4], g[4], g[4], g[4], g[4], g[4]};
	const self_f8 gz1 = {g[5], g[5], g[5], g[5], g[5], g[5], g[5], g[5]};
	const self_i8 va = {(int32_t)a0, (int32_t)a0, (int32_t)a0, (int32_t)a0,
			    (int32_t)a0, (int32_t)a0, (int32_t)a0, (int32_t)a0};
	const self_i8 vb = {(int32_t)a1, (int32_t)a1, (int32_t)a1, (int32_t)a1,
			    (int32_t)a1, (int32_t)a1, (int32_t)a1, (int32_t)a1};
	uint32_t n = 0;
	for (uint32_t j = j0; j < j1; j += 8) {
		const int32_t left = (int32_t)(j1 - j);
		self_i8 m = lane < (self_i8){left, left, left, left, left, left, left, left};
		m &= (load_f8(&soa[j]) <= gx1) & (gx0 <= load_f8(&soa[3 * stride + j]));
		m &= (load_f8(&soa[stride + j]) <= gy1) & (gy0 <= load_f8(&soa[4 * stride + j]));
		m &= (load_f8(&soa[2 * stride + j]) <= gz1) & (gz0 <= load_f8(&soa[5 * stride + j]));
		uint32_t bits = mask_bits(m);
		if (bits == 0)
			continue;
		for (int r = 0; r < nv; r++) {
			self_i8 w = load_i8(&vrows[(size_t)r * stride + j]);
			m &= (w != va) & (w != vb);
		}
		for (bits = mask_bits(m); bits != 0; bits &= bits - 1)
			out[n++] = j + (uint32_t)__builtin_ctz(bits);
	}
	return n;
}

/*
 * The box-overlapping edge pairs of ee_chunks are many (a few per vertex
 * every substep) and nearly all are dropped by ee_consider's last test, the
 * distance at x less the motion bound. ee_flush computes that test for
 * eight queued pairs at once, with the very operations of ee_motion_bound
 * and closest_segments in the same order (each branch computed and the
 * taken one selected), so every lane has the bits ee_consider would get;
 * only the pairs that pass go on to ee_consider, which records the same
 * candidates as without the queue, in the same order.
 */
static void ee_flush(const sim_self *s, self_pairs *out, const sim_vec4 *restrict x,
		     const sim_vec4 *restrict p, float reach)
{
	const uint32_t n = out->qn;
	if (n == 0)
		return;
	float c[4][3][8], d[4][3][8];
	for (uint32_t l = 0; l < 8; l++) {
		const uint32_t k = l < n ? l : n - 1;
		const uint32_t idx[4] = {s->edges[2 * (size_t)out->qi[k]],
					 s->edges[2 * (size_t)out->qi[k] + 1],
					 s->edges[2 * (size_t)out->qj[k]],
					 s->edges[2 * (size_t)out->qj[k] + 1]};
		for (int v = 0; v < 4; v++) {
			const sim_vec4 xv = x[idx[v]], pv = p[idx[v]];
			c[v][0][l] = xv.x, c[v][1][l] = xv.y, c[v][2][l] = xv.z;
			d[v][0][l] = pv.x - xv.x, d[v][1][l] = pv.y - xv.y, d[v][2][l] = pv.z - xv.z;
		}
	}
	self_f8 X[4][3], D[4][3];
	for (int v = 0; v < 4; v++)
		for (int k = 0; k < 3; k++) {
			X[v][k] = load_f8(c[v][k]);
			D[v][k] = load_f8(d[v][k]);
		}
#define DOT8(a, b) ((a)[0] * (b)[0] + (a)[1] * (b)[1] + (a)[2] * (b)[2])
#define SEL8(m, a, b) ((self_f8)(((self_i8)(m) & (self_i8)(a)) | (~(self_i8)(m) & (self_i8)(b))))
#define MAX8(a, b) SEL8((a) > (b), (a), (b))
	/* ee_motion_bound: the largest relative motion of an end of one edge
	 * and an end of the other. */
	self_f8 m02[3], m03[3], m12[3], m13[3];
	for (int k = 0; k < 3; k++) {
		m02[k] = D[0][k] - D[2][k];
		m03[k] = D[0][k] - D[3][k];
		m12[k] = D[1][k] - D[2][k];
		m13[k] = D[1][k] - D[3][k];
	}
	self_f8 m = MAX8(DOT8(m02, m02), DOT8(m03, m03));
	m = MAX8(m, MAX8(DOT8(m12, m12), DOT8(m13, m13)));
	/* closest_segments(xa0, xa1, xb0, xb1). */
	self_f8 d1[3], d2[3], r[3];
	for (int k = 0; k < 3; k++) {
		d1[k] = X[1][k] - X[0][k];
		d2[k] = X[3][k] - X[2][k];
		r[k] = X[0][k] - X[2][k];
	}
	const self_f8 zero = {0}, one = zero + 1.0f, eps = zero + 1e-20f;
	self_f8 a = DOT8(d1, d1), e = DOT8(d2, d2), f = DOT8(d2, r);
	self_f8 cc = DOT8(d1, r), b = DOT8(d1, d2);
#define CLAMP8(v) SEL8((v) < zero, zero, SEL8((v) > one, one, (v)))
	self_f8 denom = a * e - b * b;
	self_f8 s0 = SEL8(denom > zero, CLAMP8((b * f - cc * e) / denom), zero);
	self_f8 t0 = (b * s0 + f) / e;
	self_f8 s_lo = CLAMP8(-cc / a), s_hi = CLAMP8((b - cc) / a);
	self_f8 sg = SEL8(t0 < zero, s_lo, SEL8(t0 > one, s_hi, s0));
	self_f8 tg = SEL8(t0 < zero, zero, SEL8(t0 > one, one, t0));
	/* The degenerate cases: both segments points, the first, the second. */
	self_i8 a0m = a <= eps, e0m = e <= eps;
	self_f8 sv = SEL8(a0m, zero, SEL8(e0m, s_lo, sg));
	self_f8 tv = SEL8(a0m & e0m, zero, SEL8(a0m, CLAMP8(f / e), SEL8(e0m, zero, tg)));
	self_f8 q[3];
	for (int k = 0; k < 3; k++)
		q[k] = (X[0][k] + sv * (X[1][k] - X[0][k])) - (X[2][k] + tv * (X[3][k] - X[2][k]));
	self_f8 dd = DOT8(q, q);
#undef CLAMP8
#undef MAX8
#undef SEL8
#undef DOT8
	out->qn = 0;
	for (uint32_t l = 0; l < n; l++) {
		const float dx = sqrtf(dd[l]), M = sqrtf(m[l]);
		if (!(dx - M > reach))
			ee_consider(s, out, x, p, out->qi[l], out->qj[l], reach);
	}
}

/* Queues edge pair (i, j), i < j, for ee_flush. */
static inline void ee_queue(const sim_self *s, self_pairs *out, const sim_vec4 *restrict x,
			    const sim_vec4 *restrict p, uint32_t i, uint32_t j, float reach)
{
	out->qi[out->qn] = i;
	out->qj[out->qn] = j;
	if (++out->qn == 8)
		ee_flush(s, out, x, p, reach);
}

/* Owned vertices of chunk V against the triangles of chunk T (the vertices
 * that cannot reach T's box dropped first), less the triangles that have
 * the vertex. */
static void vt_chunks(const sim_self *s, self_pairs *out, const sim_vec4 *restrict x,
		      const sim_vec4 *restrict p, uint32_t V, uint32_t T, float reach)
{
	uint32_t vi[SELF_CHUNK_MEMBERS + SELF_PAD], hit[SELF_CHUNK + SELF_PAD];
	const size_t nvo = s->cv_start[s->chunk_count];
	uint32_t nvi = member_hits(s->vsbox, nvo, NULL, 0, 0, 0, s->cv_start[V], s->cv_start[V + 1],
				   &s->chunk_box[6 * (size_t)T], vi);
	for (uint32_t a = 0; a < nvi; a++) {
		float g[6];
		soa_box(s->vsbox, nvo, vi[a], reach, g);
		const uint32_t v = s->cv[vi[a]];
		uint32_t nh = member_hits(s->sbox, s->nh, s->ct_v, 3, v, v, T * SELF_CHUNK,
					  chunk_end(s, T), g, hit);
		for (uint32_t b = 0; b < nh; b++)
			vt_consider(s, out, x, p, v, s->chunk_tri[hit[b]], reach);
	}
}

/* Owned edges of chunk A against those of chunk B (A <= B; the pairs within
 * A when equal), less the pairs that share a vertex (most box hits do),
 * recorded with the smaller edge index first. */
static void ee_chunks(const sim_self *s, self_pairs *out, const sim_vec4 *restrict x,
		      const sim_vec4 *restrict p, uint32_t A, uint32_t B, float reach)
{
	uint32_t ai[SELF_CHUNK_MEMBERS + SELF_PAD], hit[SELF_CHUNK_MEMBERS + SELF_PAD];
	const size_t neo = s->ce_start[s->chunk_count];
	const uint32_t *restrict v0 = s->ce_v, *restrict v1 = v0 + neo;
	uint32_t na;
	if (A == B) {
		na = 0;
		for (uint32_t k = s->ce_start[A]; k < s->ce_start[A + 1]; k++)
			ai[na++] = k;
	} else {
		na = member_hits(s->esbox, neo, NULL, 0, 0, 0, s->ce_start[A], s->ce_start[A + 1],
				 &s->chunk_box[6 * (size_t)B], ai);
	}
	for (uint32_t a = 0; a < na; a++) {
		float g[6];
		soa_box(s->esbox, neo, ai[a], reach, g);
		uint32_t j0 = A == B ? ai[a] + 1 : s->ce_start[B];
		uint32_t nh = member_hits(s->esbox, neo, s->ce_v, 2, v0[ai[a]], v1[ai[a]], j0,
					  s->ce_start[B + 1], g, hit);
		const uint32_t i = s->ce[ai[a]];
		for (uint32_t b = 0; b < nh; b++) {
			const uint32_t j = s->ce[hit[b]];
			ee_queue(s, out, x, p, i < j ? i : j, i < j ? j : i, reach);
		}
	}
}

/*
 * Every candidate pair between chunks A and B (A <= B; A == B means the
 * pairs within A): the vertices each owns against the other's triangles,
 * and the edges each owns against the other's. Every vertex and edge is
 * owned by one chunk and every unordered chunk pair is met once (collect),
 * so every vertex-triangle and edge-edge pair is considered once.
 */
static void chunk_pair(const sim_self *s, self_pairs *out, const sim_vec4 *restrict x,
		       const sim_vec4 *restrict p, uint32_t A, uint32_t B, float reach)
{
	vt_chunks(s, out, x, p, A, B, reach);
	if (A != B)
		vt_chunks(s, out, x, p, B, A, reach);
	ee_chunks(s, out, x, p, A, B, reach);
}

/* 1 when cell (cx, cy, cz), met while querying cell box q, is the first
 * cell that q shares with chunk B's cells: each chunk pair is then taken
 * in one cell only, and a chunk met through a colliding slot is dropped. */
static inline int first_shared_cell(const sim_hash *h, const sim_cellbox *q, const float *bbox,
				    int32_t cx, int32_t cy, int32_t cz)
{
	sim_cellbox cb = sim_hash_cells(h, bbox);
	int32_t rx = q->lo[0] > cb.lo[0] ? q->lo[0] : cb.lo[0];
	int32_t ry = q->lo[1] > cb.lo[1] ? q->lo[1] : cb.lo[1];
	int32_t rz = q->lo[2] > cb.lo[2] ? q->lo[2] : cb.lo[2];
	return rx == cx && ry == cy && rz == cz;
}

static inline void soa_store(float *soa, size_t stride, uint32_t k, const float *box)
{
	for (int a = 0; a < 6; a++)
		soa[(size_t)a * stride + k] = box[a];
}

typedef struct self_collect_job {
	const sim_self *s;
	const sim_vec4 *x, *p;
	float reach;
} self_collect_job;

/* The boxes of chunks [begin, end): see compute_boxes. Each chunk writes
 * only its own triangles', vertices' and edges' entries. */
static void chunk_boxes(void *ctx, uint32_t begin, uint32_t end)
{
	const self_collect_job *job = ctx;
	const sim_self *s = job->s;
	const sim_vec4 *restrict x = job->x, *restrict p = job->p;
	const float reach = job->reach;
	const size_t nh = s->nh, nvo = s->cv_start[s->chunk_count];
	const size_t neo = s->ce_start[s->chunk_count];
	for (uint32_t c = begin; c < end; c++) {
		float *cs = &s->chunk_sbox[6 * (size_t)c];
		cs[0] = cs[1] = cs[2] = INFINITY;
		cs[3] = cs[4] = cs[5] = -INFINITY;
		for (uint32_t i = c * SELF_CHUNK, e = chunk_end(s, c); i < e; i++) {
			const uint32_t t = s->chunk_tri[i];
			const uint32_t *tv = &s->tris[3 * (size_t)t];
			float b[6], o[6];
			swept_box(x[tv[0]], p[tv[0]], b);
			swept_box(x[tv[1]], p[tv[1]], o);
			box_union(b, o);
			swept_box(x[tv[2]], p[tv[2]], o);
			box_union(b, o);
			soa_store(s->sbox, nh, i, b);
			box_union(cs, b);
			box_grow(b, reach);
			memcpy(&s->tri_box[6 * (size_t)t], b, sizeof b);
		}
		float *cg = &s->chunk_box[6 * (size_t)c];
		memcpy(cg, cs, 6 * sizeof *cg);
		box_grow(cg, reach);
		for (uint32_t k = s->cv_start[c]; k < s->cv_start[c + 1]; k++) {
			float b[6];
			swept_box(x[s->cv[k]], p[s->cv[k]], b);
			soa_store(s->vsbox, nvo, k, b);
		}
		for (uint32_t k = s->ce_start[c]; k < s->ce_start[c + 1]; k++) {
			uint32_t a = s->edges[2 * (size_t)s->ce[k]], b = s->edges[2 * (size_t)s->ce[k] + 1];
			float eb[6], o[6];
			swept_box(x[a], p[a], eb);
			swept_box(x[b], p[b], o);
			box_union(eb, o);
			soa_store(s->esbox, neo, k, eb);
		}
	}
}

/* Swept boxes of the triangles (plain in sbox and per chunk, grown by the
 * reach in tri_box and chunk_box), the owned vertices and the owned edges;
 * chunks in blocks over the pool. */
static void compute_boxes(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			  float reach)
{
	for (uint32_t t = 0; t < s->nt; t++)
		if (s->tri_skip[t]) {
			float *b = &s->tri_box[6 * (size_t)t];
			b[0] = b[1] = b[2] = INFINITY;
			b[3] = b[4] = b[5] = -INFINITY;
		}
	self_collect_job job = {s, x, p, reach};
	sim_pool_for(s->pool, s->chunk_count, SELF_COLLECT_BLOCK, chunk_boxes, &job);
}

/* Whether collect_chunk of chunk A takes the pair with chunk B: every chunk
 * after A in a full collection; in a partial one (recollect_strayed, A
 * marked) every other chunk, two marked chunks meeting from the lower. */
static inline int chunk_partner(const sim_self *s, uint32_t A, uint32_t B, int partial)
{
	return partial ? B != A && !(s->chunk_mark[B] && B < A) : B > A;
}

/* The chunk pairs of one chunk A (see collect and recollect_strayed), each
 * as chunk_pair(lower, higher). A's plain box meets B's grown box exactly
 * when B's plain box meets A's grown box, so a pair is found from either
 * side. */
static void collect_chunk(const sim_self *s, self_pairs *out, const sim_vec4 *restrict x,
			  const sim_vec4 *restrict p, uint32_t A, float reach, int partial)
{
	const sim_hash *h = &s->hash;
	const uint32_t nc = s->chunk_count;
	const float *ab = &s->chunk_sbox[6 * (size_t)A];
	chunk_pair(s, out, x, p, A, A, reach);
	sim_cellbox q = sim_hash_cells(h, ab);
	if (sim_cellbox_count(&q) > SIM_HASH_MAX_CELLS) {
		for (uint32_t B = partial ? 0 : A + 1; B < nc; B++)
			if (chunk_partner(s, A, B, partial) &&
			    sim_box_overlap(ab, &s->chunk_box[6 * (size_t)B]))
				chunk_pair(s, out, x, p, B < A ? B : A, B < A ? A : B, reach);
		return;
	}
	for (int32_t cz = q.lo[2]; cz <= q.hi[2]; cz++)
		for (int32_t cy = q.lo[1]; cy <= q.hi[1]; cy++)
			for (int32_t cx = q.lo[0]; cx <= q.hi[0]; cx++) {
				uint32_t sl = sim_hash_slot(h, cx, cy, cz);
				const uint32_t e0 = h->start[sl], e1 = h->start[sl + 1];
				for (uint32_t e = e0; e < e1; e++) {
					uint32_t B = h->entries[e];
					/* Two cells of B in this slot: the build
					 * puts them side by side. */
					if (e > e0 && h->entries[e - 1] == B)
						continue;
					const float *bb = &s->chunk_box[6 * (size_t)B];
					if (chunk_partner(s, A, B, partial) && sim_box_overlap(ab, bb) &&
					    first_shared_cell(h, &q, bb, cx, cy, cz))
						chunk_pair(s, out, x, p, B < A ? B : A, B < A ? A : B,
							   reach);
				}
			}
	/* Chunks too large for the cells (flung across the scene). */
	for (uint32_t k = 0; k < h->big_count; k++) {
		uint32_t B = h->big[k];
		if (chunk_partner(s, A, B, partial) && sim_box_overlap(ab, &s->chunk_box[6 * (size_t)B]))
			chunk_pair(s, out, x, p, B < A ? B : A, B < A ? A : B, reach);
	}
}

/* Blocks [begin, end) of chunks, each into its own pair buffer. */
static void collect_blocks(void *ctx, uint32_t begin, uint32_t end)
{
	const self_collect_job *job = ctx;
	const sim_self *s = job->s;
	for (uint32_t b = begin; b < end; b++) {
		self_pairs *out = &s->blocks[b];
		out->vt_count = out->ee_count = out->qn = 0;
		uint32_t c1 = (b + 1) * SELF_COLLECT_BLOCK;
		if (c1 > s->chunk_count)
			c1 = s->chunk_count;
		for (uint32_t A = b * SELF_COLLECT_BLOCK; A < c1; A++)
			collect_chunk(s, out, job->x, job->p, A, job->reach, 0);
		ee_flush(s, out, job->x, job->p, job->reach);
	}
}

/*
 * Builds the hash over the chunks' grown boxes and collects the candidate
 * pairs (their sides at x are worked out later, see settle_vt). Each chunk
 * A queries the cells of its plain box and takes the chunks B > A found
 * there whose grown boxes it overlaps, in the first cell they share
 * (first_shared_cell), so each chunk pair is met once without marks (a
 * chunk with two cells hashed to one slot sits there twice in a row, and
 * the second is skipped); chunk_pair does the rest. Blocks of chunks run on the pool into their own buffers, which are
 * then joined in block order: the list is the same for any thread count.
 *
 * The pairs are collected afresh every substep. Verlet lists (a list per
 * block built at earlier positions X with a margin, kept while every chunk
 * pair's relative displacement since X stays within it) were tried and
 * measured worse on a sheet folding over a sphere: the relative motion
 * between chunks a few centimetres apart is 1 to 2 mm per substep there,
 * so a margin that lasts a few substeps must be several millimetres, and
 * the pair distances of a flat mesh cluster at 0.71 and 1 edge length, so
 * such a margin takes in ten times the candidates (60 to 80 per vertex
 * against 6). Reusing a list over an extrapolated two-substep path fails
 * for a like reason: the iterations (a collider stopping the cloth) move
 * vertices 2 to 4 mm from their prediction in most substeps.
 */
/* The boxes over x -> p, then the hash of the chunks' grown boxes, with
 * cells about the size of a grown chunk box less the reach: the geometric
 * mean of the query and the hashed box sizes, which minimizes the entries a
 * query meets. Returns -1 when out of memory for the entries. */
static int boxes_and_hash(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			  float reach)
{
	compute_boxes(s, x, p, reach);
	float cell = maxf(s->chunk_scale + reach, 2.0f * reach);
	return sim_hash_build(&s->hash, s->chunk_box, s->chunk_count, cell) != 0 ? -1 : 0;
}

static void join_blocks(sim_self *s, uint32_t count);

static void collect(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach)
{
	s->vt_count = 0;
	s->ee_count = 0;
	if (boxes_and_hash(s, x, p, reach) != 0) {
		/* No memory for the entries: no pairs this substep. */
		return;
	}
	const uint32_t nb = s->block_count - 1;
	self_collect_job job = {s, x, p, reach};
	sim_pool_for(s->pool, nb, 1, collect_blocks, &job);

	/* Vertices of zero-area triangles only: a query of their own, into
	 * the last buffer. */
	const sim_hash *h = &s->hash;
	self_pairs *orph = &s->blocks[nb];
	orph->vt_count = orph->ee_count = 0;
	for (uint32_t k = 0; k < s->orphan_count; k++) {
		uint32_t v = s->orphans[k];
		float vb[6];
		swept_box(x[v], p[v], vb);
		uint32_t stamp = next_stamp(s);
		SELF_FOR_TRIANGLES(s, h, vb, {
			if (s->tri_stamp[t_] != stamp) {
				s->tri_stamp[t_] = stamp;
				if (sim_box_overlap(vb, &s->tri_box[6 * (size_t)t_]))
					vt_consider(s, orph, x, p, v, t_, reach);
			}
		});
	}

	join_blocks(s, nb + 1);
}

/* Appends the pairs of blocks 0 .. count - 1, in block order, to the
 * candidate lists. Without room for all, the pairs that do not fit are
 * dropped. */
static void join_blocks(sim_self *s, uint32_t count)
{
	uint64_t nvt = s->vt_count, nee = s->ee_count;
	for (uint32_t b = 0; b < count; b++) {
		nvt += s->blocks[b].vt_count;
		nee += s->blocks[b].ee_count;
	}
	if (reserve((void **)&s->vt, &s->vt_cap, sizeof *s->vt, nvt) != 0)
		nvt = s->vt_cap;
	if (reserve((void **)&s->ee, &s->ee_cap, sizeof *s->ee, nee) != 0)
		nee = s->ee_cap;
	for (uint32_t b = 0; b < count; b++) {
		const self_pairs *o = &s->blocks[b];
		uint32_t nv = o->vt_count, ne = o->ee_count;
		if (nv > nvt - s->vt_count)
			nv = (uint32_t)(nvt - s->vt_count);
		if (ne > nee - s->ee_count)
			ne = (uint32_t)(nee - s->ee_count);
		/* A block that never found a pair has no buffer (NULL). */
		if (nv > 0)
			memcpy(&s->vt[s->vt_count], o->vt, (size_t)nv * sizeof *s->vt);
		if (ne > 0)
			memcpy(&s->ee[s->ee_count], o->ee, (size_t)ne * sizeof *s->ee);
		s->vt_count += nv;
		s->ee_count += ne;
	}
}

/* Whether chunk c (UINT32_MAX: none) is marked for recollect_strayed. */
static inline int chunk_marked(const sim_self *s, uint32_t c)
{
	return c != UINT32_MAX && s->chunk_mark[c];
}

/*
 * The end-of-substep re-collection, for the chunks that hold a vertex that
 * strayed half the reach from its prediction. A pair left out at begin can
 * cross only if one of its own vertices strayed that far (see
 * SELF_REACH_FACTOR: the relative motions of its corners grew by at most
 * twice the largest stray of its vertices), and every such pair lies in a
 * chunk pair with a marked chunk (a marked chunk holds every triangle of a
 * strayed vertex, so also the vertex and edges it owns). The pairs of those
 * chunk pairs are collected again over x -> p as p is now, serially in
 * chunk order, and replace the old ones; the rest stay. Returns -1 when a
 * full collection is the better (or the only sound) way: more than a
 * quarter of the chunks marked, or vertices that no chunk owns.
 */
static int recollect_strayed(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			     float reach)
{
	const uint32_t nc = s->chunk_count;
	if (s->orphan_count > 0)
		return -1;
	memset(s->chunk_mark, 0, nc);
	uint32_t marked = 0;
	for (uint32_t v = 0; v < s->nv; v++) {
		if (motion(s->p_pred, p, v) < 0.5f * reach)
			continue;
		for (uint32_t k = s->vtri_start[v]; k < s->vtri_start[v + 1]; k++) {
			uint32_t c = s->t_chunk[s->vtri[k]];
			if (c != UINT32_MAX && !s->chunk_mark[c]) {
				s->chunk_mark[c] = 1;
				marked++;
			}
		}
	}
	if (marked == 0)
		return 0;
	if ((uint64_t)marked * 4 > nc)
		return -1;
	if (boxes_and_hash(s, x, p, reach) != 0)
		return -1;

	uint32_t kv = 0, ke = 0;
	for (uint32_t i = 0; i < s->vt_count; i++)
		if (!chunk_marked(s, s->v_chunk[s->vt[i].v]) && !chunk_marked(s, s->t_chunk[s->vt[i].t]))
			s->vt[kv++] = s->vt[i];
	for (uint32_t i = 0; i < s->ee_count; i++)
		if (!chunk_marked(s, s->e_chunk[s->ee[i].a]) && !chunk_marked(s, s->e_chunk[s->ee[i].b]))
			s->ee[ke++] = s->ee[i];
	s->vt_count = kv;
	s->ee_count = ke;

	self_pairs *out = &s->blocks[0];
	out->vt_count = out->ee_count = out->qn = 0;
	for (uint32_t A = 0; A < nc; A++)
		if (s->chunk_mark[A])
			collect_chunk(s, out, x, p, A, reach, 1);
	ee_flush(s, out, x, p, reach);
	join_blocks(s, 1);
	return 0;
}

static inline float reach_of(float thickness)
{
	return thickness > 0.0f && isfinite(thickness) ? SELF_REACH_FACTOR * thickness : 0.0f;
}

void sim_self_begin_substep(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			    float thickness)
{
	memcpy(s->p_pred, p, (size_t)s->nv * sizeof *p);
	s->thickness = thickness > 0.0f && isfinite(thickness) ? thickness : 0.0f;
	collect(s, x, p, reach_of(thickness));
}

/* ---- projection ------------------------------------------------------------- */

/*
 * Friction between layers, Coulomb's law as in Macklin et al., "Unified
 * Particle Physics for Real-Time Applications" (SIGGRAPH 2014), eq. 24: the
 * relative tangential displacement since x of the vertex (weight 1) and the
 * points it touches (weights -wt[k]) is reduced by at most `friction` times
 * the normal correction `depth` of this projection, and never reversed. The
 * correction uses the same weighting as the push, so linear momentum is
 * conserved as well. (Removing a fixed fraction of the slip every iteration
 * instead, whatever the normal force, made layers stick together at any
 * friction above zero.)
 */
static inline void apply_friction(sim_vec4 *restrict p, const sim_vec4 *restrict x,
				  const uint32_t *idx, const float *wt, int count, sim_v3 g,
				  float W, float friction, float depth)
{
	sim_v3 rel = v3(0.0f, 0.0f, 0.0f);
	for (int k = 0; k < count; k++) {
		sim_v3 d = v3_sub(v3_of4(p[idx[k]]), v3_of4(x[idx[k]]));
		rel = v3_add(rel, v3_scale(d, wt[k]));
	}
	sim_v3 tan = v3_sub(rel, v3_scale(g, v3_dot(rel, g)));
	float tl = v3_len(tan), limit = friction * depth;
	if (!(tl > 0.0f))
		return;
	float keep = tl <= limit ? 1.0f : limit / tl;
	sim_v3 mu = v3_scale(tan, -keep / W);
	for (int k = 0; k < count; k++) {
		float f = p[idx[k]].w * wt[k];
		p[idx[k]].x += f * mu.x;
		p[idx[k]].y += f * mu.y;
		p[idx[k]].z += f * mu.z;
	}
}

/* Applies p_k += w_k * wt_k * lambda * g to `count` vertices. */
static inline void apply_push(sim_vec4 *restrict p, const uint32_t *idx, const float *wt,
			      int count, sim_v3 g, float lambda)
{
	for (int k = 0; k < count; k++) {
		float f = p[idx[k]].w * wt[k] * lambda;
		p[idx[k]].x += f * g.x;
		p[idx[k]].y += f * g.y;
		p[idx[k]].z += f * g.z;
	}
}

/*
 * 1 when the pair is provably farther apart than the thickness all along
 * x -> p as p is now: its distance at x less its motion bound over that path
 * (see vt_motion_bound), with a relative margin for rounding. Then it is not
 * in contact and has not crossed, and its projection would do nothing. This
 * is the per-pair form of sim_self_project's skip: the iterations move
 * whole regions of the cloth away from the prediction together (a collider
 * stops the part that lands on it), which the global stray counts against
 * every pair but the relative motion of a pair's own vertices does not.
 */
static inline int apart_now(const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			    const uint32_t idx[4], int ee, float dx, float thickness)
{
	return dx > (thickness + bound_now(x, p, idx, ee)) * 1.001f + 1e-7f;
}

/*
 * Works out a candidate's rest_close and, unless it is a rest neighbour,
 * its side and trust at x, with p as predicted at begin_substep (p_pred,
 * what collect saw), so they are what collect would have recorded.
 * Returns rest_close.
 */
static int settle_vt(const sim_self *s, self_vt *r, const sim_vec4 *restrict x,
		     const uint32_t *tv)
{
	/* Hashed triangles are not degenerate at rest, so the distance is
	 * defined. */
	r->rest_close = point_triangle_distance(s->x0[r->v], s->x0[tv[0]], s->x0[tv[1]],
						s->x0[tv[2]]) < s->thickness &&
			neighbours(s, &r->v, 1, tv, 3);
	if (r->rest_close)
		return 1;
	const sim_vec4 *q = s->p_pred;
	uint32_t trusted;
	vt_side(v3_of4(x[r->v]), v3_of4(x[tv[0]]), v3_of4(x[tv[1]]), v3_of4(x[tv[2]]),
		v3_of4(q[r->v]), v3_of4(q[tv[0]]), v3_of4(q[tv[1]]), v3_of4(q[tv[2]]), &r->side,
		&trusted);
	r->trusted = (uint16_t)trusted;
	return 0;
}

static int settle_ee(const sim_self *s, self_ee *r, const sim_vec4 *restrict x,
		     const uint32_t idx[4])
{
	r->rest_close = segment_distance(s->x0[idx[0]], s->x0[idx[1]], s->x0[idx[2]],
					 s->x0[idx[3]]) < s->thickness &&
			neighbours(s, &idx[0], 2, &idx[2], 2);
	if (r->rest_close)
		return 1;
	const sim_vec4 *q = s->p_pred;
	uint32_t trusted;
	ee_side(v3_of4(x[idx[0]]), v3_of4(x[idx[1]]), v3_of4(x[idx[2]]), v3_of4(x[idx[3]]),
		v3_of4(q[idx[0]]), v3_of4(q[idx[1]]), v3_of4(q[idx[2]]), v3_of4(q[idx[3]]), &r->side,
		&trusted);
	r->trusted = (uint16_t)trusted;
	return 0;
}

static void project_vt(const sim_self *s, self_vt *r, sim_vec4 *restrict p,
		       const sim_vec4 *restrict x, float thickness, float friction)
{
	if (r->rest_close == 1)
		return;
	const uint32_t *tv = &s->tris[3 * (size_t)r->t];
	uint32_t idx[4] = {r->v, tv[0], tv[1], tv[2]};
	if (apart_now(x, p, idx, 0, r->dx, thickness))
		return;
	if (r->rest_close == SELF_REST_UNKNOWN && settle_vt(s, r, x, tv))
		return;
	sim_v3 q = v3_of4(p[idx[0]]), a = v3_of4(p[idx[1]]), b = v3_of4(p[idx[2]]),
	       c = v3_of4(p[idx[3]]);
	sim_v3 n;
	if (tri_degenerate(a, b, c, &n))
		return;
	/* The signed plane distance first: it decides the face case alone,
	 * and outside the face the distance to the closest point is at least
	 * its magnitude, so a pair out of reach of the plane is done without
	 * the closest-point computation (most pairs in most iterations). */
	float inv = 1.0f / v3_len(n);
	float d = v3_dot(v3_sub(q, a), n) * inv * (float)r->side;
	if (d >= thickness || (!r->trusted && d < -thickness))
		return;
	float bary[3];
	int inside = closest_on_triangle(q, a, b, c, bary);
	sim_v3 g;
	float C;
	if (inside) {
		/* Face region: a one-sided constraint on the side recorded at x.
		 * An untrusted side (the vertex was beside the triangle at x)
		 * only acts within the thickness of the plane, because deeper on
		 * the other side it has gone round the edge, not through; both
		 * were tested above. */
		g = v3_scale(n, inv * (float)r->side);
		C = d - thickness;
	} else {
		/* Edge or vertex region: keep the distance to the closest point,
		 * along the direction to it. */
		sim_v3 cp = v3_add(v3_add(v3_scale(a, bary[0]), v3_scale(b, bary[1])),
				   v3_scale(c, bary[2]));
		sim_v3 dv = v3_sub(q, cp);
		float dist = v3_len(dv);
		if (dist >= thickness || !(dist > 1e-12f))
			return;
		g = v3_scale(dv, 1.0f / dist);
		C = dist - thickness;
	}
	float wt[4] = {1.0f, -bary[0], -bary[1], -bary[2]};
	float W = p[idx[0]].w + bary[0] * bary[0] * p[idx[1]].w + bary[1] * bary[1] * p[idx[2]].w +
		  bary[2] * bary[2] * p[idx[3]].w;
	if (!(W > 0.0f))
		return;
	apply_push(p, idx, wt, 4, g, -C / W);
	if (friction > 0.0f)
		apply_friction(p, x, idx, wt, 4, g, W, friction, -C);
}

static void project_ee(const sim_self *s, self_ee *r, sim_vec4 *restrict p,
		       const sim_vec4 *restrict x, float thickness, float friction)
{
	if (r->rest_close == 1)
		return;
	uint32_t idx[4] = {s->edges[2 * (size_t)r->a], s->edges[2 * (size_t)r->a + 1],
			   s->edges[2 * (size_t)r->b], s->edges[2 * (size_t)r->b + 1]};
	if (apart_now(x, p, idx, 1, r->dx, thickness))
		return;
	if (r->rest_close == SELF_REST_UNKNOWN && settle_ee(s, r, x, idx))
		return;
	sim_v3 a0 = v3_of4(p[idx[0]]), a1 = v3_of4(p[idx[1]]), b0 = v3_of4(p[idx[2]]),
	       b1 = v3_of4(p[idx[3]]);
	sim_v3 ea = v3_sub(a1, a0), eb = v3_sub(b1, b0);
	sim_v3 n = v3_cross(ea, eb);
	float nn = v3_dot(n, n);
	if (!(nn > SELF_PARALLEL_SINE * SELF_PARALLEL_SINE * v3_dot(ea, ea) * v3_dot(eb, eb)))
		return;
	/* The lines' separation first (cheap); the closest points only for
	 * pairs it leaves in reach. */
	float inv = 1.0f / sqrtf(nn);
	float d0 = v3_dot(v3_sub(a0, b0), n) * inv;
	int32_t side = r->side ? r->side : (d0 >= 0.0f ? 1 : -1);
	float d = d0 * (float)side;
	if (d >= thickness || (!r->trusted && d < -thickness))
		return;
	float sp, tp;
	closest_segments(a0, a1, b0, b1, &sp, &tp);
	/* Only edges crossing over one another (closest points inside both
	 * segments); an endpoint contact is a vertex near a triangle's edge,
	 * which the vertex-triangle pairs already keep apart. */
	if (!(sp > 0.0f && sp < 1.0f && tp > 0.0f && tp < 1.0f))
		return;
	sim_v3 g = v3_scale(n, inv * (float)side);
	float wt[4] = {1.0f - sp, sp, -(1.0f - tp), -tp};
	float W = wt[0] * wt[0] * p[idx[0]].w + wt[1] * wt[1] * p[idx[1]].w +
		  wt[2] * wt[2] * p[idx[2]].w + wt[3] * wt[3] * p[idx[3]].w;
	if (!(W > 0.0f))
		return;
	apply_push(p, idx, wt, 4, g, (thickness - d) / W);
	if (friction > 0.0f)
		apply_friction(p, x, idx, wt, 4, g, W, friction, thickness - d);
}

/*
 * The largest distance of any vertex from the prediction p_pred that the
 * pairs' lower bounds were computed for (begin_substep), or INFINITY when a
 * position is not finite (then no pair is skipped).
 */
static float stray_since_begin(const sim_self *s, const sim_vec4 *restrict p)
{
	const sim_vec4 *restrict q = s->p_pred;
	float m2 = 0.0f;
	uint32_t bad = 0;
	for (uint32_t v = 0; v < s->nv; v++) {
		float dx = p[v].x - q[v].x, dy = p[v].y - q[v].y, dz = p[v].z - q[v].z;
		float d2 = dx * dx + dy * dy + dz * dz;
		bad |= (uint32_t)!(d2 <= INFINITY);
		m2 = d2 > m2 ? d2 : m2;
	}
	return bad ? INFINITY : sqrtf(m2);
}

void sim_self_project(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x, float thickness,
		      float friction)
{
	if (!(thickness >= 0.0f))
		thickness = 0.0f;
	if (!(friction > 0.0f))
		friction = 0.0f;
	if (friction > 1.0f)
		friction = 1.0f;
	/*
	 * A pair whose distance stayed above lb on the predicted motion x ->
	 * p_pred is now at least lb - 2 stray apart (each side moved at most
	 * `stray` since), and cannot have crossed on the way: it is skipped
	 * when that exceeds the thickness, with a relative margin for the
	 * rounding of lb. Most candidates are the cloth's own neighbours,
	 * further apart than the thickness, so most are skipped.
	 */
	const float skip = (thickness + 2.0f * stray_since_begin(s, p)) * 1.001f + 1e-7f;
	self_vt *vt = s->vt;
	for (uint32_t i = 0, n = s->vt_count; i < n; i++)
		if (!(vt[i].lb > skip))
			project_vt(s, &vt[i], p, x, thickness, friction);
	self_ee *ee = s->ee;
	for (uint32_t i = 0, n = s->ee_count; i < n; i++)
		if (!(ee[i].lb > skip))
			project_ee(s, &ee[i], p, x, thickness, friction);
}

/* ---- continuous guard ------------------------------------------------------- */

/*
 * Roots in (0, 1] of c[0] + c[1] t + c[2] t^2 + c[3] t^3, ascending. The
 * interval is split at the critical points so that g is monotonic on each
 * piece; a piece whose ends differ in sign holds one root, found by
 * bisection in double. A root exactly at 0 (touching at the start) is left
 * to the projection. A double root that only grazes zero inside a piece is
 * missed, which is a touch, not a crossing.
 */
static int cubic_roots01(const double c[4], double roots[3])
{
	double pts[4];
	int np = 0, nr = 0;
	pts[np++] = 0.0;
	double A = 3.0 * c[3], B = 2.0 * c[2], Cq = c[1];
	if (A != 0.0) {
		double disc = B * B - 4.0 * A * Cq;
		if (disc >= 0.0) {
			double sq = sqrt(disc);
			/* Numerically stable pair (no cancellation). */
			double qq = -0.5 * (B + (B >= 0.0 ? sq : -sq));
			double r1 = qq / A, r2 = qq != 0.0 ? Cq / qq : r1;
			if (r1 > r2) {
				double t = r1;
				r1 = r2;
				r2 = t;
			}
			if (r1 > 0.0 && r1 < 1.0)
				pts[np++] = r1;
			if (r2 > 0.0 && r2 < 1.0 && r2 != r1)
				pts[np++] = r2;
		}
	} else if (B != 0.0) {
		double r = -Cq / B;
		if (r > 0.0 && r < 1.0)
			pts[np++] = r;
	}
	pts[np++] = 1.0;
	for (int i = 0; i + 1 < np; i++) {
		double l = pts[i], h = pts[i + 1];
		double gl = ((c[3] * l + c[2]) * l + c[1]) * l + c[0];
		double gh = ((c[3] * h + c[2]) * h + c[1]) * h + c[0];
		if (gl == 0.0 && l > 0.0) {
			if (nr == 0 || roots[nr - 1] != l)
				roots[nr++] = l;
			continue;
		}
		if (gh == 0.0) {
			if (nr == 0 || roots[nr - 1] != h)
				roots[nr++] = h;
			continue;
		}
		if ((gl < 0.0) == (gh < 0.0))
			continue;
		for (int it = 0; it < 60; it++) {
			double m = 0.5 * (l + h);
			double gm = ((c[3] * m + c[2]) * m + c[1]) * m + c[0];
			if ((gm < 0.0) == (gl < 0.0)) {
				l = m;
				gl = gm;
			} else {
				h = m;
			}
		}
		roots[nr++] = h;
	}
	return nr;
}

/* Coefficients of the triple product [A + t dA, B + t dB, C + t dC]: the
 * coplanarity condition of a vertex and a triangle, or of two edges, under
 * linear motion (Provot 1997; Bridson et al. 2002). */
static void triple_cubic(const double A[3], const double dA[3], const double B[3],
			 const double dB[3], const double C[3], const double dC[3], double c[4])
{
#define TP(u, v, w)                                                                 \
	((u)[0] * ((v)[1] * (w)[2] - (v)[2] * (w)[1]) +                              \
	 (u)[1] * ((v)[2] * (w)[0] - (v)[0] * (w)[2]) +                              \
	 (u)[2] * ((v)[0] * (w)[1] - (v)[1] * (w)[0]))
	c[0] = TP(A, B, C);
	c[1] = TP(dA, B, C) + TP(A, dB, C) + TP(A, B, dC);
	c[2] = TP(dA, dB, C) + TP(dA, B, dC) + TP(A, dB, dC);
	c[3] = TP(dA, dB, dC);
#undef TP
}

/* Positions of four vertices x -> p, as offsets from vertex `o` (double). */
static void rel_motion(const sim_vec4 *x, const sim_vec4 *p, uint32_t o, uint32_t v, double r[3],
		       double dr[3])
{
	r[0] = (double)x[v].x - x[o].x;
	r[1] = (double)x[v].y - x[o].y;
	r[2] = (double)x[v].z - x[o].z;
	dr[0] = ((double)p[v].x - x[v].x) - ((double)p[o].x - x[o].x);
	dr[1] = ((double)p[v].y - x[v].y) - ((double)p[o].y - x[o].y);
	dr[2] = ((double)p[v].z - x[v].z) - ((double)p[o].z - x[o].z);
}

static inline sim_v3 at_time(const sim_vec4 *x, const sim_vec4 *p, uint32_t v, float t)
{
	return lerp3(v3_of4(x[v]), v3_of4(p[v]), t);
}

/*
 * Earliest time in (0, 1] at which vertex idx[0] touches triangle
 * idx[1..3] while all four move linearly from x to p, or -1. Touching means
 * coplanar (a root of the triple-product cubic) and within a small tolerance
 * of the triangle.
 */
static double vt_toi(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	sim_v3 q = v3_of4(x[idx[0]]), a = v3_of4(x[idx[1]]), b = v3_of4(x[idx[2]]),
	       c = v3_of4(x[idx[3]]);
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), bc = v3_sub(c, b);
	float L = sqrtf(maxf(v3_dot(ab, ab), maxf(v3_dot(ac, ac), v3_dot(bc, bc))));
	float tol = SELF_GUARD_TOL * L;
	/* Conservative filter (vt_motion_bound). The distance to the plane at
	 * x is a lower bound of the distance to the triangle and far cheaper:
	 * a vertex resting over a triangle at the thickness, the common case,
	 * is cleared by it alone. */
	float M = vt_motion_bound(x, p, idx);
	sim_v3 n0;
	if (!tri_degenerate(a, b, c, &n0)) {
		float plane = fabsf(v3_dot(v3_sub(q, a), n0)) / v3_len(n0);
		if (plane > M + tol || point_triangle_distance(q, a, b, c) > M + tol)
			return -1.0;
	}
	double E1[3], dE1[3], E2[3], dE2[3], Q[3], dQ[3], co[4], roots[3];
	rel_motion(x, p, idx[1], idx[2], E1, dE1);
	rel_motion(x, p, idx[1], idx[3], E2, dE2);
	rel_motion(x, p, idx[1], idx[0], Q, dQ);
	triple_cubic(E1, dE1, E2, dE2, Q, dQ, co);
	double scale = (double)(L + M) * (L + M) * (L + M);
	int nr;
	double samples[16];
	if (fabs(co[0]) + fabs(co[1]) + fabs(co[2]) + fabs(co[3]) <= 1e-12 * scale) {
		/* Motion within one plane: the cubic is rounding noise, so
		 * sample the path instead. */
		nr = 16;
		for (int k = 0; k < 16; k++)
			samples[k] = (k + 1) / 16.0;
	} else {
		nr = cubic_roots01(co, roots);
		for (int k = 0; k < nr; k++)
			samples[k] = roots[k];
	}
	for (int k = 0; k < nr; k++) {
		float t = (float)samples[k];
		sim_v3 qt = at_time(x, p, idx[0], t), at = at_time(x, p, idx[1], t),
		       bt = at_time(x, p, idx[2], t), ct = at_time(x, p, idx[3], t);
		sim_v3 nt;
		if (tri_degenerate(at, bt, ct, &nt))
			continue;
		if (point_triangle_distance(qt, at, bt, ct) <= tol)
			return samples[k];
	}
	/* Touching at p without a root: the coplanarity cubic is rounding
	 * noise at t = 1 when the pair ends in one plane (two layers pressed
	 * onto the ground at the same height), and a vertex left on a face
	 * intersects it as much as one that went through. */
	if (nr == 0 || samples[nr - 1] != 1.0) {
		sim_v3 ap = v3_of4(p[idx[1]]), bp = v3_of4(p[idx[2]]), cp = v3_of4(p[idx[3]]);
		sim_v3 np;
		if (!tri_degenerate(ap, bp, cp, &np) &&
		    point_triangle_distance(v3_of4(p[idx[0]]), ap, bp, cp) <= tol)
			return 1.0;
	}
	return -1.0;
}

/* Earliest time in (0, 1] at which edges idx[0..1] and idx[2..3] touch. */
static double ee_toi(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	sim_v3 a0 = v3_of4(x[idx[0]]), a1 = v3_of4(x[idx[1]]), b0 = v3_of4(x[idx[2]]),
	       b1 = v3_of4(x[idx[3]]);
	sim_v3 ea = v3_sub(a1, a0), eb = v3_sub(b1, b0);
	float la2 = v3_dot(ea, ea), lb2 = v3_dot(eb, eb);
	float L = sqrtf(maxf(la2, lb2));
	float tol = SELF_GUARD_TOL * L;
	float M = ee_motion_bound(x, p, idx);
	/* The lines' separation at x bounds the segments' from below (cheap),
	 * as in vt_toi. */
	sim_v3 nl = v3_cross(ea, eb);
	float nl2 = v3_dot(nl, nl);
	if (nl2 > 0.0f && fabsf(v3_dot(v3_sub(a0, b0), nl)) / sqrtf(nl2) > M + tol)
		return -1.0;
	if (segment_distance(a0, a1, b0, b1) > M + tol)
		return -1.0;
	double EA[3], dEA[3], EB[3], dEB[3], R[3], dR[3], co[4], roots[3];
	rel_motion(x, p, idx[0], idx[1], EA, dEA);
	rel_motion(x, p, idx[2], idx[3], EB, dEB);
	rel_motion(x, p, idx[0], idx[2], R, dR);
	triple_cubic(EA, dEA, EB, dEB, R, dR, co);
	double scale = (double)(L + M) * (L + M) * (L + M);
	int nr;
	double samples[16];
	if (fabs(co[0]) + fabs(co[1]) + fabs(co[2]) + fabs(co[3]) <= 1e-12 * scale) {
		nr = 16;
		for (int k = 0; k < 16; k++)
			samples[k] = (k + 1) / 16.0;
	} else {
		nr = cubic_roots01(co, roots);
		for (int k = 0; k < nr; k++)
			samples[k] = roots[k];
	}
	for (int k = 0; k < nr; k++) {
		float t = (float)samples[k];
		sim_v3 pa0 = at_time(x, p, idx[0], t), pa1 = at_time(x, p, idx[1], t),
		       pb0 = at_time(x, p, idx[2], t), pb1 = at_time(x, p, idx[3], t);
		if (segment_distance(pa0, pa1, pb0, pb1) <= tol)
			return samples[k];
	}
	/* Touching at p without a root, as in vt_toi. */
	if ((nr == 0 || samples[nr - 1] != 1.0) &&
	    segment_distance(v3_of4(p[idx[0]]), v3_of4(p[idx[1]]), v3_of4(p[idx[2]]),
			     v3_of4(p[idx[3]])) <= tol)
		return 1.0;
	return -1.0;
}

/* 1 when a vertex of the pair moved and all are finite. A NaN or Inf is left
 * as it is, for the step's own non-finite check to report. */
static inline int pair_moved(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		const sim_vec4 *a = &x[idx[k]], *b = &p[idx[k]];
		if (!isfinite(b->x) || !isfinite(b->y) || !isfinite(b->z))
			return 0;
		moved |= a->x != b->x || a->y != b->y || a->z != b->z;
	}
	return moved;
}

/* A vertex the guard cannot move back: pinned (w = 0, possibly animated by
 * a collider) or already carried along by one in this guard (see carry). */
static inline int immovable(const sim_self *s, const sim_vec4 *p, uint32_t v)
{
	return p[v].w == 0.0f || s->carried[v];
}

/* Moves the free vertices of a crossing pair back along their path to
 * fraction tau; returns how many actually moved. */
static int revert(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		  const uint32_t idx[4], float tau)
{
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		uint32_t v = idx[k];
		if (immovable(s, p, v))
			continue;
		sim_v3 np = at_time(x, p, v, tau);
		if (np.x != p[v].x || np.y != p[v].y || np.z != p[v].z) {
			p[v].x = np.x;
			p[v].y = np.y;
			p[v].z = np.z;
			s->dirty_next[v] = 1;
			moved++;
		}
	}
	return moved;
}

/*
 * A pair still crossing with its free vertices back at x was crossed by its
 * immovable side: a pinned vertex carried by its collider through the cloth
 * (or a vertex carried by one). Moving back cannot help, so the free
 * vertices are carried instead: each goes to x plus the mean motion of the
 * pair's moving immovable vertices. With one driver, or drivers that move
 * together, the pair's relative motion is then zero and it stays as it was
 * at x, apart. The carried vertices become immovable for the rest of the
 * guard, so a layer they are pushed into is carried in turn (a hand pushed
 * through a stack of cloth takes every layer with it). Returns how many
 * vertices moved.
 */
static int carry(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		 const uint32_t idx[4])
{
	sim_v3 d = v3(0.0f, 0.0f, 0.0f);
	int drivers = 0;
	for (int k = 0; k < 4; k++) {
		uint32_t v = idx[k];
		if (!immovable(s, p, v))
			continue;
		sim_v3 dv = v3_sub(v3_of4(p[v]), v3_of4(x[v]));
		if (dv.x != 0.0f || dv.y != 0.0f || dv.z != 0.0f) {
			d = v3_add(d, dv);
			drivers++;
		}
	}
	if (drivers == 0)
		return 0;
	d = v3_scale(d, 1.0f / (float)drivers);
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		uint32_t v = idx[k];
		if (immovable(s, p, v))
			continue;
		sim_v3 np = v3_add(v3_of4(x[v]), d);
		moved += np.x != p[v].x || np.y != p[v].y || np.z != p[v].z;
		p[v].x = np.x;
		p[v].y = np.y;
		p[v].z = np.z;
		s->carried[v] = 1;
		s->dirty_next[v] = 1;
	}
	return moved;
}

/*
 * Moves a crossing pair as one body: every vertex goes to x plus the pair's
 * mass-weighted mean motion, so the pair keeps its momentum and, moving
 * rigidly from its intersection-free state at x, cannot cross itself. This
 * is the rigid impact zone of Provot 1997 and Bridson, Fedkiw, Anderson
 * 2002 reduced to one pair (translation only); other pairs it disturbs are
 * checked again in the next round. Stopping the pair at x instead (revert)
 * throws its momentum away, and a pinch the projections cannot open is then
 * stopped again every substep while the cloth around it moves on: on a large
 * hanging sheet a crumpled corner froze that way and its edges stretched to
 * five times their length. Returns how many vertices moved (0: the pair
 * moves as one already), or -1 for a pair with an immovable vertex, which is
 * left to revert and carry.
 */
static int zone_move(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		     const uint32_t idx[4])
{
	sim_v3 d = v3(0.0f, 0.0f, 0.0f);
	float mass = 0.0f;
	for (int k = 0; k < 4; k++) {
		const uint32_t v = idx[k];
		if (immovable(s, p, v))
			return -1;
		const float m = 1.0f / p[v].w;
		d = v3_add(d, v3_scale(v3_sub(v3_of4(p[v]), v3_of4(x[v])), m));
		mass += m;
	}
	d = v3_scale(d, 1.0f / mass);
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		const uint32_t v = idx[k];
		sim_v3 np = v3_add(v3_of4(x[v]), d);
		if (np.x != p[v].x || np.y != p[v].y || np.z != p[v].z) {
			p[v].x = np.x;
			p[v].y = np.y;
			p[v].z = np.z;
			s->dirty_next[v] = 1;
			moved++;
		}
	}
	return moved;
}

/*
 * Stops a pair found crossing at time toi: its free vertices go back to
 * fraction backoff of toi. When that moves nothing (a vertex that moved less
 * than a float step, so that the fraction rounds to p), the pair goes back
 * to x instead, and when the free vertices are at x already, the crossing is
 * the immovable side's and they are carried (carry). A crossing that moves
 * no vertex would end the guard's rounds with the crossing left in place.
 * A negative backoff asks for a zone move first (zone_move).
 */
static int stop_pair(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		     const uint32_t idx[4], double toi, float backoff)
{
	if (backoff < 0.0f) {
		/* A pair whose vertices are all movable either moves as one
		 * now, or already does (nothing to move: its test found it
		 * touching, not crossing), and is left so. */
		int zm = zone_move(s, p, x, idx);
		if (zm >= 0)
			return zm;
		backoff = 0.0f;
	}
	int moved = revert(s, p, x, idx, (float)(backoff * toi));
	if (moved == 0 && backoff > 0.0f)
		moved = revert(s, p, x, idx, 0.0f);
	if (moved == 0)
		moved = carry(s, p, x, idx);
	return moved;
}

/* Swept tests of one vertex-triangle or edge-edge pair; a crossing pair is
 * stopped (stop_pair). Returns the number of vertices moved. */
static int guard_vt(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		    const uint32_t idx[4], float backoff)
{
	if (!pair_moved(x, p, idx))
		return 0;
	double toi = vt_toi(x, p, idx);
	return toi >= 0.0 ? stop_pair(s, p, x, idx, toi, backoff) : 0;
}

static int guard_ee(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		    const uint32_t idx[4], float backoff)
{
	if (!pair_moved(x, p, idx))
		return 0;
	double toi = ee_toi(x, p, idx);
	return toi >= 0.0 ? stop_pair(s, p, x, idx, toi, backoff) : 0;
}

static inline int tri_has(const uint32_t *tv, uint32_t v)
{
	return tv[0] == v || tv[1] == v || tv[2] == v;
}

static int guard_vertex_triangle(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
				 uint32_t v, uint32_t t, float backoff)
{
	const uint32_t *tb = &s->tris[3 * (size_t)t];
	const uint32_t idx[4] = {v, tb[0], tb[1], tb[2]};
	return guard_vt(s, p, x, idx, backoff);
}

/* Every vertex-triangle and edge-edge pair between triangles a and b. */
static int guard_triangle_pair(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			       uint32_t a, uint32_t b, float backoff)
{
	const uint32_t *ta = &s->tris[3 * (size_t)a], *tb = &s->tris[3 * (size_t)b];
	int changed = 0;
	for (int k = 0; k < 3; k++) {
		if (!tri_has(tb, ta[k])) {
			const uint32_t idx[4] = {ta[k], tb[0], tb[1], tb[2]};
			changed += guard_vt(s, p, x, idx, backoff);
		}
		if (!tri_has(ta, tb[k])) {
			const uint32_t idx[4] = {tb[k], ta[0], ta[1], ta[2]};
			changed += guard_vt(s, p, x, idx, backoff);
		}
	}
	for (int k = 0; k < 3; k++)
		for (int m = 0; m < 3; m++) {
			const uint32_t idx[4] = {ta[k], ta[(k + 1) % 3], tb[m], tb[(m + 1) % 3]};
			if (idx[0] == idx[2] || idx[0] == idx[3] || idx[1] == idx[2] || idx[1] == idx[3])
				continue;
			changed += guard_ee(s, p, x, idx, backoff);
		}
	return changed;
}

/*
 * The candidate pairs were culled by the relative motion of their two sides
 * (vt_motion_bound): a cloth falling as a whole has none. Once the guard
 * moves some vertices back and leaves their neighbours moving, that motion
 * is no longer common, and pairs that were never candidates can cross (a
 * falling layer through a vertex the guard stopped). So around every vertex
 * moved in the previous round, every triangle that has it is tested against
 * every triangle the hash finds near its current swept box, without the
 * relative-motion cull. The hash is still valid: its boxes enclose every
 * vertex's segment x -> p grown by the reach, and moving back stays on that
 * segment. (Carried vertices leave it; sim_self_end_substep keeps them in
 * the dirty set, so they search from their own side.)
 */
static int guard_neighbourhood(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			       float backoff)
{
	if (++s->mark == 0) {
		memset(s->tri_mark, 0, (size_t)s->nt * sizeof *s->tri_mark);
		s->mark = 1;
	}
	const uint32_t mark = s->mark;
	const sim_hash *h = &s->hash;
	int changed = 0;
	for (uint32_t v = 0; v < s->nv; v++) {
		if (!s->dirty[v])
			continue;
		int hashed = 0;
		for (uint32_t k = s->vtri_start[v]; k < s->vtri_start[v + 1]; k++) {
			uint32_t a = s->vtri[k];
			if (s->tri_skip[a])
				continue;
			hashed = 1;
			if (s->tri_mark[a] == mark)
				continue;
			s->tri_mark[a] = mark;
			const uint32_t *ta = &s->tris[3 * (size_t)a];
			float ab[6], o[6];
			swept_box(x[ta[0]], p[ta[0]], ab);
			swept_box(x[ta[1]], p[ta[1]], o);
			box_union(ab, o);
			swept_box(x[ta[2]], p[ta[2]], o);
			box_union(ab, o);
			uint32_t stamp = next_stamp(s);
			SELF_FOR_TRIANGLES(s, h, ab, {
				if (s->tri_stamp[t_] != stamp && t_ != a && !s->tri_skip[t_]) {
					s->tri_stamp[t_] = stamp;
					if (sim_box_overlap(ab, &s->tri_box[6 * (size_t)t_]))
						changed += guard_triangle_pair(s, p, x, a, t_, backoff);
				}
			});
		}
		if (hashed)
			continue;
		/* A vertex of zero-area triangles only: against the triangles
		 * near its own path. */
		float vb[6];
		swept_box(x[v], p[v], vb);
		uint32_t stamp = next_stamp(s);
		SELF_FOR_TRIANGLES(s, h, vb, {
			if (s->tri_stamp[t_] != stamp && !s->tri_skip[t_] &&
			    !tri_has(&s->tris[3 * (size_t)t_], v)) {
				s->tri_stamp[t_] = stamp;
				changed += guard_vertex_triangle(s, p, x, v, t_, backoff);
			}
		});
	}
	return changed;
}

/* The last resort when the rounds do not settle: every free vertex goes
 * back to x, where nothing intersected. Crossings can then remain only with
 * immovable vertices, and each further round carries at least one more
 * vertex along, so the rounds end. */
static void revert_all(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x)
{
	for (uint32_t v = 0; v < s->nv; v++) {
		if (immovable(s, p, v))
			continue;
		if (p[v].x != x[v].x || p[v].y != x[v].y || p[v].z != x[v].z) {
			p[v].x = x[v].x;
			p[v].y = x[v].y;
			p[v].z = x[v].z;
			s->dirty_next[v] = 1;
		}
	}
}

/*
 * The guard. Every candidate pair that moved gets a swept test on the
 * straight paths x -> p. In the first SELF_GUARD_ZONE_ROUNDS rounds a pair
 * that touches (or ends touching) and has no immovable vertex is moved as
 * one body with its mean motion (zone_move), or left alone when it already
 * moves as one. Later, or with an immovable vertex, it has its free vertices
 * moved back to x + tau (p - x), tau = 0.8 toi in the next two rounds and
 * tau = 0 (the start positions, which were intersection-free) after that. A pair that still crosses with its free
 * vertices at x was crossed by a moving pinned vertex, and they are carried
 * along with it instead (carry). Moved vertices are re-verified in the next
 * round. Once tau is 0 every round that finds a crossing returns at least
 * one more vertex to x or carries one, so the loop ends; if it has not
 * settled after SELF_GUARD_MAX_ROUNDS, every free vertex goes back to x at
 * once. Only a crossing made by pinned vertices alone (two animated pins
 * through each other) cannot be undone here and is left.
 *
 * Momentum: a zone move keeps the pair's momentum (an inelastic collision
 * of the pair, as in the rigid impact zones of Provot 1997 / Bridson et al.
 * 2002, per pair and without rotation); a move back is an inelastic stop of
 * the involved vertices for the rest of the substep (their velocity after
 * v = (p - x) / dt is scaled by tau). Both act only where the projections
 * failed, which the tests show is rare.
 *
 * A candidate pair whose distance at x, recorded at collection (dx),
 * exceeds its motion bound over x -> p plus the contact tolerance is
 * cleared before the swept test: that is the test vt_toi and ee_toi begin
 * with, on the same numbers, so only the distance computation is saved.
 *
 * Candidate pairs were found for the motion x -> p as predicted at begin;
 * the iterations have since moved p. A pair left out (boxes more than the
 * reach apart, or farther apart at x than its motion plus the reach) can
 * touch only if some vertex strayed half the reach from its prediction, so
 * in that case the pairs are collected again over x -> p first (outside the
 * iteration loop, so the no-allocation rule of project is kept).
 */
void sim_self_end_substep(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			  float thickness)
{
	const uint32_t nv = s->nv;
	const float reach = reach_of(thickness);
	float stray = 0.0f;
	for (uint32_t v = 0; v < nv; v++)
		stray = maxf(stray, motion(s->p_pred, p, v));
	/* A dropped pair could cross only if some vertex strayed half the reach
	 * from its prediction (see SELF_REACH_FACTOR). */
	if (reach > 0.0f ? stray >= 0.5f * reach : stray > 0.0f) {
		s->thickness = reach / SELF_REACH_FACTOR;
		if (!(reach > 0.0f) || recollect_strayed(s, x, p, reach) != 0)
			collect(s, x, p, reach);
	}

	memset(s->dirty, 1, nv);
	memset(s->carried, 0, nv);
	for (int round = 0;; round++) {
		memset(s->dirty_next, 0, nv);
		int changed = 0;
		/* -1 asks stop_pair for a zone move (see the comment above). */
		float backoff = round < SELF_GUARD_ZONE_ROUNDS ? -1.0f
				: round < SELF_GUARD_ZONE_ROUNDS + SELF_GUARD_PARTIAL_ROUNDS
				? (float)SELF_GUARD_BACKOFF
				: 0.0f;
		for (uint32_t i = 0; i < s->vt_count; i++) {
			const self_vt *r = &s->vt[i];
			const uint32_t *tv = &s->tris[3 * (size_t)r->t];
			uint32_t idx[4] = {r->v, tv[0], tv[1], tv[2]};
			if (!(s->dirty[idx[0]] | s->dirty[idx[1]] | s->dirty[idx[2]] |
			      s->dirty[idx[3]]))
				continue;
			if (r->dx > vt_motion_bound(x, p, idx) + r->tol)
				continue;
			changed += guard_vt(s, p, x, idx, backoff);
		}
		for (uint32_t i = 0; i < s->ee_count; i++) {
			const self_ee *r = &s->ee[i];
			uint32_t idx[4] = {s->edges[2 * (size_t)r->a], s->edges[2 * (size_t)r->a + 1],
					   s->edges[2 * (size_t)r->b], s->edges[2 * (size_t)r->b + 1]};
			if (!(s->dirty[idx[0]] | s->dirty[idx[1]] | s->dirty[idx[2]] |
			      s->dirty[idx[3]]))
				continue;
			if (r->dx > ee_motion_bound(x, p, idx) + r->tol)
				continue;
			changed += guard_ee(s, p, x, idx, backoff);
		}
		/* Round 0's dirty set is every vertex: nothing has been moved
		 * back yet, so the candidates are complete. */
		if (round > 0)
			changed += guard_neighbourhood(s, p, x, backoff);
		if (!changed)
			break;
		if (round + 1 == SELF_GUARD_MAX_ROUNDS)
			revert_all(s, p, x);
		/* Carried vertices have left the boxes the hash was built from,
		 * so a triangle that moves back later may not find theirs: they
		 * search from their own side in every round instead. */
		for (uint32_t v = 0; v < nv; v++)
			s->dirty_next[v] |= s->carried[v];
		uint8_t *t = s->dirty;
		s->dirty = s->dirty_next;
		s->dirty_next = t;
	}
}
