/* Candidate pairs of the self-collision, collected once per substep: see
 * selfcollide.c for the method and selfcollide_impl.h for the bounds. */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX__)
#include <immintrin.h>
#endif


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
	if (tv[0] == v || tv[1] == v || tv[2] == v || self_masked(s, v, tv[0]))
		return;
	const uint32_t jidx[4] = {v, tv[0], tv[1], tv[2]};
	if (self_joined(s, jidx, 0))
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
	    self_reserve((void **)&out->vt, &out->vt_cap, sizeof *out->vt, (uint64_t)out->vt_count + 1) != 0)
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
	if (a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1 || self_masked(s, a0, b0))
		return;
	const uint32_t jidx[4] = {a0, a1, b0, b1};
	if (self_joined(s, jidx, 1))
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
	    self_reserve((void **)&out->ee, &out->ee_cap, sizeof *out->ee, (uint64_t)out->ee_count + 1) != 0)
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

/*
 * The edges of chunk B whose boxes meet chunk A's grown box, gathered into
 * a small structure of arrays in their order, for member_hits to test
 * against each of A's edges (ee_chunks). An owned edge's query box (its
 * swept box grown by the reach) lies inside A's grown chunk box: each bound
 * is the edge's bound less (or plus) the reach, the chunk's the extreme of
 * its triangles' less (plus) the same reach, and rounding is monotonic. So
 * an edge of B that misses A's grown box misses every such query box, and
 * testing the gathered edges gives the same hits, in the same order, as
 * testing them all. Measured with callgrind on a 120 x 120 sheet folding on
 * a sphere (30 frames, one thread): 3.9 % fewer instructions in ee_chunks,
 * 1.2 % fewer in the step, same positions to the bit. The same gathering
 * for vt_chunks (16 triangles, two groups of eight) cost more than it
 * saved (+16 % in vt_chunks), and gathering for fewer than
 * SELF_COMPACT_MIN query edges as well.
 */
#define SELF_COMPACT_STRIDE (SELF_CHUNK_MEMBERS + SELF_PAD)

/* Queries from which gathering pays: below, each query tests all members. */
#define SELF_COMPACT_MIN 4u

typedef struct self_compact {
	float box[6 * SELF_COMPACT_STRIDE];
	uint32_t v[2 * SELF_COMPACT_STRIDE]; /* the edges' two vertices */
	uint32_t idx[SELF_COMPACT_STRIDE]; /* the member's index in the full arrays */
	uint32_t n;
} self_compact;

static inline void compact_members(const float *restrict soa, size_t stride,
				   const uint32_t *restrict vrows, int nv, uint32_t j0, uint32_t j1,
				   const float g[6], self_compact *restrict c)
{
	c->n = member_hits(soa, stride, NULL, 0, 0, 0, j0, j1, g, c->idx);
	for (uint32_t k = 0; k < c->n; k++) {
		const uint32_t j = c->idx[k];
		for (int a = 0; a < 6; a++)
			c->box[a * SELF_COMPACT_STRIDE + k] = soa[(size_t)a * stride + j];
		for (int r = 0; r < nv; r++)
			c->v[r * SELF_COMPACT_STRIDE + k] = vrows[(size_t)r * stride + j];
	}
	/* The lanes member_hits reads past the end (up to the next multiple
	 * of eight) are masked off; zeroed so that no uninitialised value is
	 * ever compared. */
	for (uint32_t k = c->n; k % 8u != 0; k++) {
		for (int a = 0; a < 6; a++)
			c->box[a * SELF_COMPACT_STRIDE + k] = 0.0f;
		for (int r = 0; r < nv; r++)
			c->v[r * SELF_COMPACT_STRIDE + k] = 0u;
	}
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
	/* With several edges of A to test, B's edges that A's grown box
	 * misses are dropped once rather than once per edge. */
	self_compact cb;
	const float *bsoa = s->esbox;
	const uint32_t *bv = s->ce_v;
	size_t bstride = neo;
	const uint32_t *bmap = NULL;
	if (A != B && na >= SELF_COMPACT_MIN) {
		compact_members(s->esbox, neo, s->ce_v, 2, s->ce_start[B], s->ce_start[B + 1],
				&s->chunk_box[6 * (size_t)A], &cb);
		if (cb.n == 0)
			return;
		bsoa = cb.box, bv = cb.v, bstride = SELF_COMPACT_STRIDE, bmap = cb.idx;
	}
	for (uint32_t a = 0; a < na; a++) {
		float g[6];
		soa_box(s->esbox, neo, ai[a], reach, g);
		uint32_t j0 = A == B ? ai[a] + 1 : bmap ? 0 : s->ce_start[B];
		uint32_t j1 = bmap ? cb.n : s->ce_start[B + 1];
		uint32_t nh = member_hits(bsoa, bstride, bv, 2, v0[ai[a]], v1[ai[a]], j0, j1, g, hit);
		const uint32_t i = s->ce[ai[a]];
		for (uint32_t b = 0; b < nh; b++) {
			const uint32_t j = s->ce[bmap ? bmap[hit[b]] : hit[b]];
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
	/* Mesh neighbours on a smooth patch: proven empty (selfcull.c). */
	if (self_cull_skip(s, x, p, A, B, reach))
		return;
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
	int fits; /* SELF_FITS_*: which chunks chunk_boxes fits */
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
		if (job->fits == SELF_FITS_ALL ||
		    (job->fits == SELF_FITS_MARKED && self_cull_needed(s, c))) {
			self_cull_fit(s, x, p, c, reach);
		} else {
			/* No fit: nothing skipped with c as the lower chunk;
			 * its sliver flag (read when c is the higher one) is
			 * made for this x, or 1 (skip nothing) without use. */
			memset(&s->cull_fit[4 * (size_t)c], 0, 4 * sizeof *s->cull_fit);
			if (job->fits == SELF_FITS_MARKED)
				self_cull_slivers(s, x, c);
			else
				s->chunk_sliver[c] = 1;
		}
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
			  float reach, int fits)
{
	for (uint32_t t = 0; t < s->nt; t++)
		if (s->tri_skip[t]) {
			float *b = &s->tri_box[6 * (size_t)t];
			b[0] = b[1] = b[2] = INFINITY;
			b[3] = b[4] = b[5] = -INFINITY;
		}
	self_collect_job job = {s, x, p, reach, fits};
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
int self_boxes_and_hash(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			float reach, int fits)
{
	s->hash_stale = 0;
	compute_boxes(s, x, p, reach, fits);
	float cell = maxf(s->chunk_scale + reach, 2.0f * reach);
	return sim_hash_build(&s->hash, s->chunk_box, s->chunk_count, cell) != 0 ? -1 : 0;
}

static void join_blocks(sim_self *s, uint32_t count);

void self_collect(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach)
{
	s->vt_count = 0;
	s->ee_count = 0;
	if (self_boxes_and_hash(s, x, p, reach, SELF_FITS_ALL) != 0) {
		/* No memory for the entries: no pairs this substep. */
		return;
	}
	const uint32_t nb = s->block_count - 1;
	self_collect_job job = {s, x, p, reach, SELF_FITS_ALL};
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
	if (self_reserve((void **)&s->vt, &s->vt_cap, sizeof *s->vt, nvt) != 0)
		nvt = s->vt_cap;
	if (self_reserve((void **)&s->ee, &s->ee_cap, sizeof *s->ee, nee) != 0)
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
int self_recollect_strayed(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
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
	/* Only the chunk pairs with a marked chunk are collected below, and
	 * chunk_pair reads the fit of the lower chunk of a pair, which is
	 * then marked or has the marked one among its partners (a pair
	 * that is not a partner record has D0 = 0 and is never skipped):
	 * the other chunks' fits, nearly all of them, are not made again
	 * for p as it is now. (They were 7 % of all the instructions of the
	 * bench's fold scene at 120 x 120; see docs/speed.md.) */
	if (self_boxes_and_hash(s, x, p, reach, SELF_FITS_MARKED) != 0)
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


/* Whether the swept boxes of vertex v (grown by reach) and triangle t meet:
 * the test vt_chunks makes, with the same operations. */
static int vt_boxes_meet(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			 uint32_t v, uint32_t t, float reach)
{
	const uint32_t *tv = &s->tris[3 * (size_t)t];
	float g[6], b[6], o[6];
	swept_box(x[v], p[v], g);
	box_grow(g, reach);
	swept_box(x[tv[0]], p[tv[0]], b);
	swept_box(x[tv[1]], p[tv[1]], o);
	box_union(b, o);
	swept_box(x[tv[2]], p[tv[2]], o);
	box_union(b, o);
	return sim_box_overlap(g, b);
}

/* The same for edges i and j (ee_chunks). */
static int ee_boxes_meet(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			 uint32_t i, uint32_t j, float reach)
{
	const uint32_t *ei = &s->edges[2 * (size_t)i], *ej = &s->edges[2 * (size_t)j];
	float g[6], b[6], o[6];
	swept_box(x[ei[0]], p[ei[0]], g);
	swept_box(x[ei[1]], p[ei[1]], o);
	box_union(g, o);
	box_grow(g, reach);
	swept_box(x[ej[0]], p[ej[0]], b);
	swept_box(x[ej[1]], p[ej[1]], o);
	box_union(b, o);
	return sim_box_overlap(g, b);
}

typedef struct self_filter_job {
	const sim_self *s;
	const sim_vec4 *x, *p;
	float reach;
	const self_vt *vt;
	const self_ee *ee;
	uint32_t nvt, nee, parts;
} self_filter_job;

/* Parts [begin, end) of the list, part b into blocks[b]: its share of the
 * vertex-triangle pairs and of the edge pairs, each in the list's order. */
static void filter_parts(void *ctx, uint32_t begin, uint32_t end)
{
	const self_filter_job *J = ctx;
	const sim_self *s = J->s;
	const sim_vec4 *restrict x = J->x, *restrict p = J->p;
	for (uint32_t b = begin; b < end; b++) {
		self_pairs *out = &s->blocks[b];
		out->vt_count = out->ee_count = out->qn = 0;
		const uint32_t v0 = (uint32_t)((uint64_t)J->nvt * b / J->parts);
		const uint32_t v1 = (uint32_t)((uint64_t)J->nvt * (b + 1) / J->parts);
		const uint32_t e0 = (uint32_t)((uint64_t)J->nee * b / J->parts);
		const uint32_t e1 = (uint32_t)((uint64_t)J->nee * (b + 1) / J->parts);
		for (uint32_t k = v0; k < v1; k++)
			if (vt_boxes_meet(s, x, p, J->vt[k].v, J->vt[k].t, J->reach))
				vt_consider(s, out, x, p, J->vt[k].v, J->vt[k].t, J->reach);
		for (uint32_t k = e0; k < e1; k++)
			if (ee_boxes_meet(s, x, p, J->ee[k].a, J->ee[k].b, J->reach))
				ee_queue(s, out, x, p, J->ee[k].a, J->ee[k].b, J->reach);
		ee_flush(s, out, x, p, J->reach);
	}
}

/* Pairs of the list per part of the parallel filter: a part is a few
 * microseconds of work, worth a claim on the pool. */
#define SELF_FILTER_PART 1024u

void self_filter(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach,
		 const self_vt *vt, uint32_t nvt, const self_ee *ee, uint32_t nee)
{
	s->vt_count = 0;
	s->ee_count = 0;
	/* The parts, and so the order the join gives, depend on the list's
	 * size alone, never on the threads; the join puts every part's pairs
	 * in list order, the same as one part would. */
	uint64_t parts = ((uint64_t)nvt + nee) / SELF_FILTER_PART + 1;
	if (parts > s->block_count)
		parts = s->block_count;
	self_filter_job job = {s, x, p, reach, vt, ee, nvt, nee, (uint32_t)parts};
	sim_pool_for(s->pool, (uint32_t)parts, 1, filter_parts, &job);
	join_blocks(s, (uint32_t)parts);
}

void sim_self_begin_substep(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			    float thickness)
{
	memcpy(s->p_pred, p, (size_t)s->nv * sizeof *p);
	s->thickness = thickness > 0.0f && isfinite(thickness) ? thickness : 0.0f;
	self_tangle_begin(s, x);
	if (!self_reuse_begin(s, x, p, reach_of(thickness))) {
		s->fresh_collects++;
		self_collect(s, x, p, reach_of(thickness));
	}
	self_tangle_filter(s);
}

