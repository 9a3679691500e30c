/*
 * Culling of chunk pairs that cannot hold a candidate (selfcandidates.c's
 * chunk_pair asks self_cull_skip first). On a smooth cloth most of the
 * search's work is spent on chunk pairs that are mesh neighbours: their boxes
 * always meet, and their members (a flat sheet's vertices and triangles 0.71
 * and 1 edge length apart, just outside the reach) must each be measured to
 * be dropped. This file proves, per chunk pair and per substep, that none of
 * those pairs can pass the search's test, so that the pair is skipped and
 * the candidate list stays exactly what it was (same pairs, same order: the
 * frames are bit-identical with and without the culling).
 *
 * The idea is the normal-cone culling of Volino and Magnenat-Thalmann (1994,
 * "Efficient self-collision detection on smoothly discretized surface
 * animations using geometrical shape regularity"; also Provot 1997): a patch
 * of surface that is nearly flat, viewed along its mean normal, is a
 * one-to-one map of the plane and cannot touch itself. Their test proves
 * that a patch does not intersect itself; the search needs more, that no
 * pair of the patch comes within the reach, so the bound used here is made
 * quantitative:
 *
 * Let P be a set of vertices that holds those of the triangles of chunks A
 * and B (here the neighbourhood of A: the vertices of A and of all its
 * partners, so that one fit per chunk and substep serves all its pairs),
 * y_i in R^2 the
 * rest position of vertex i in a plane of chunk A (its rest position x0_i
 * projected on two fixed orthonormal directions u, w), and x_i its position
 * at the start of the substep. Fit an affine map x ~ c + F y (F 3 x 2, by
 * least squares; any F would do for the proof, the fit only makes it tight)
 * and let pi be the orthogonal projection on the plane spanned by F's
 * columns, G = pi F (2 x 2), e_i = pi (x_i - c - F y_i) the in-plane
 * residuals and eps = max |e_i|. A point q of one member (vertex, edge or
 * triangle) of P is a convex combination sum a_i x_i of its corners; take
 * q0 = sum a_i y_i, and r, r0 likewise for a member of the other side. Then
 *
 *   |q - r| >= |pi (q - r)| = |G (q0 - r0) + sum a_i e_i - sum b_j e_j|
 *           >= sigma_min(G) |q0 - r0| - 2 eps
 *           >= sigma_min(G) D0 - 2 eps,
 *
 * where D0 is the smallest distance, in the rest plane, between two members
 * of the pair of chunks that the search would test (a vertex and a triangle
 * without it, two edges without a common vertex), computed once at create.
 * So the distance at x of every such pair is at least sigma D0 - 2 eps. The
 * search drops a pair when its distance at x less its motion bound M (the
 * largest relative motion x -> p of a corner of one side and a corner of the
 * other) exceeds the reach; M is at most the diagonal of the box of the
 * displacements p_i - x_i over P. The chunk pair is skipped when
 *
 *   sigma D0 - 2 eps - diag > reach,
 *
 * with slack for the rounding (SELF_CULL_REL, SELF_CULL_ABS), and no
 * triangle of A or B is a sliver at x (a sliver makes every pair of its
 * triangle a candidate, see vt_consider).
 *
 * Why the projection: on a cloth bent to a radius R, the fit's residual
 * across a patch of size L is about L^2 / 8R along the normal but only about
 * L^3 / 6R^2 in the tangent plane, and the projection shortens lengths by
 * the cosine of the normals' spread, which enters sigma. The normal
 * component would eat the margin of a flat sheet's neighbours (0.71 edges
 * against a reach of 0.65) on any curve; the tangential one does not. That
 * is the normal cone's role here: where the normals of P spread (a fold, a
 * wrinkle), sigma falls and the residual grows, the bound fails and the pair
 * is searched as before; the proof never assumes the patch is smooth.
 *
 * Nothing here depends on the mesh's topology (seams, several objects,
 * holes): the bound holds for any two convex combinations of P's vertices.
 * A chunk pair whose rest projection is poor (a curved rest patch seen
 * through a plane, triangles that project to slivers) gets D0 = 0 and is
 * never skipped.
 */
#include "server/sim/selfcollide_impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack of the bound: the float fit, projection and singular value
 * are correct to a few units in the last place (about 1e-6 relative); the
 * search's own distances carry SELF_BOUND_ROUNDING (a thousandth of the
 * reach); the bound is held a thousandth of the reach above it. */
#define SELF_CULL_REL 1e-4f

/* Absolute slack, in units of the largest coordinate of the patch: the
 * search's distances are differences of coordinates, so their rounding is a
 * few FLT_EPSILON of the coordinates' size. */
#define SELF_CULL_ABS (64.0f * FLT_EPSILON)

/* Most substeps a chunk whose fit could not skip its nearest partner waits
 * before the next fit (see self_cull_fit); the wait doubles from 1 while
 * the fits fail. */
#define SELF_CULL_RETRY 64u

/* Rest members nearer than this many mean edge lengths are measured for D0;
 * farther ones count as this far (a lower bound, so D0 stays a lower bound
 * of the true smallest distance). */
#define SELF_CULL_D0_CAP 2.0f

/* Chunk pairs that get a record: their rest boxes within this many mean
 * edge lengths of each other. Farther pairs are mostly parted by the boxes
 * already. */
#define SELF_CULL_PARTNER_GAP 1.0f

/* A triangle whose rest projection on the chunk's plane has twice its area
 * below this fraction of its longest projected edge squared is too oblique
 * to that plane: the record's D0 is set to 0. */
#define SELF_CULL_MIN_SHAPE 0.05f

/* The rest-plane coordinates of vertex v in the frame of chunk a: the same
 * operations at create (D0) and in every substep (the fit), so the same
 * bits. */
static inline void rest2(const sim_self *s, uint32_t a, uint32_t v, float *y0, float *y1)
{
	const float *f = &s->cull_frame[9 * (size_t)a];
	sim_v3 d = v3_sub(s->x0[v], v3(f[0], f[1], f[2]));
	*y0 = v3_dot(d, v3(f[3], f[4], f[5]));
	*y1 = v3_dot(d, v3(f[6], f[7], f[8]));
}

/* The rest frame of chunk c: origin at its vertices' centroid, u and w
 * orthonormal across its mean rest normal. 0 when it has no normal. */
static int chunk_frame(sim_self *s, uint32_t c)
{
	float *f = &s->cull_frame[9 * (size_t)c];
	memset(f, 0, 9 * sizeof *f);
	sim_v3 o = v3(0.0f, 0.0f, 0.0f), n = v3(0.0f, 0.0f, 0.0f);
	const uint32_t k0 = s->cvall_start[c], k1 = s->cvall_start[c + 1];
	for (uint32_t k = k0; k < k1; k++)
		o = v3_add(o, s->x0[s->cvall[k]]);
	if (k1 == k0)
		return 0;
	o = v3_scale(o, 1.0f / (float)(k1 - k0));
	sim_v3 longest = v3(0.0f, 0.0f, 0.0f);
	for (uint32_t i = c * SELF_CHUNK, e = chunk_end(s, c); i < e; i++) {
		const uint32_t *tv = &s->tris[3 * (size_t)s->chunk_tri[i]];
		sim_v3 ab = v3_sub(s->x0[tv[1]], s->x0[tv[0]]), ac = v3_sub(s->x0[tv[2]], s->x0[tv[0]]);
		n = v3_add(n, v3_cross(ab, ac));
		if (v3_dot(ab, ab) > v3_dot(longest, longest))
			longest = ab;
	}
	float nl = v3_len(n);
	if (!(nl > 0.0f) || !isfinite(nl))
		return 0;
	n = v3_scale(n, 1.0f / nl);
	sim_v3 u = v3_sub(longest, v3_scale(n, v3_dot(longest, n)));
	float ul = v3_len(u);
	if (!(ul > 0.0f))
		return 0;
	u = v3_scale(u, 1.0f / ul);
	sim_v3 w = v3_cross(n, u);
	const float vals[9] = {o.x, o.y, o.z, u.x, u.y, u.z, w.x, w.y, w.z};
	memcpy(f, vals, sizeof vals);
	return 1;
}

/* Vertex v's rest-plane coordinates from a table filled for one chunk's
 * frame (self_cull_build), as a point of the plane z = 0. */
static inline sim_v3 rest2v(const float *ytab, uint32_t v)
{
	return v3(ytab[2 * (size_t)v], ytab[2 * (size_t)v + 1], 0.0f);
}

static inline int boxes2_near(const float *a, const float *b, float g)
{
	return a[0] - g <= b[2] && b[0] <= a[2] + g && a[1] - g <= b[3] && b[1] <= a[3] + g;
}

/* The 2-d box of points y (z ignored). */
static void box2(const sim_v3 *y, int n, float *b)
{
	b[0] = b[2] = y[0].x;
	b[1] = b[3] = y[0].y;
	for (int k = 1; k < n; k++) {
		b[0] = minf(b[0], y[k].x), b[2] = maxf(b[2], y[k].x);
		b[1] = minf(b[1], y[k].y), b[3] = maxf(b[3], y[k].y);
	}
}

/* Whether every triangle of chunk c projects on the plane of chunk a as a
 * well-shaped triangle (closest_on_triangle is then exact there). */
static int chunk_projects_well(const sim_self *s, const float *ytab, uint32_t c)
{
	for (uint32_t i = c * SELF_CHUNK, e = chunk_end(s, c); i < e; i++) {
		const uint32_t *tv = &s->tris[3 * (size_t)s->chunk_tri[i]];
		sim_v3 p0 = rest2v(ytab, tv[0]), p1 = rest2v(ytab, tv[1]), p2 = rest2v(ytab, tv[2]);
		sim_v3 ab = v3_sub(p1, p0), ac = v3_sub(p2, p0), bc = v3_sub(p2, p1);
		float area2 = fabsf(ab.x * ac.y - ab.y * ac.x);
		float l2 = maxf(v3_dot(ab, ab), maxf(v3_dot(ac, ac), v3_dot(bc, bc)));
		if (!(area2 > SELF_CULL_MIN_SHAPE * l2))
			return 0;
	}
	return 1;
}

/* The owned vertices of chunk V against the triangles of chunk T, in the
 * rest plane of chunk a: the smallest distance of a pair vt_chunks would
 * test, or `cap` when none is nearer. */
static float d0_vt(const sim_self *s, const float *ytab, uint32_t V, uint32_t T, float cap)
{
	float d0 = cap;
	for (uint32_t k = s->cv_start[V]; k < s->cv_start[V + 1]; k++) {
		const uint32_t v = s->cv[k];
		sim_v3 q = rest2v(ytab, v);
		for (uint32_t i = T * SELF_CHUNK, e = chunk_end(s, T); i < e; i++) {
			const uint32_t *tv = &s->tris[3 * (size_t)s->chunk_tri[i]];
			if (tv[0] == v || tv[1] == v || tv[2] == v)
				continue;
			sim_v3 y[3] = {rest2v(ytab, tv[0]), rest2v(ytab, tv[1]), rest2v(ytab, tv[2])};
			float b[4], qb[4] = {q.x, q.y, q.x, q.y};
			box2(y, 3, b);
			if (!boxes2_near(qb, b, d0))
				continue;
			d0 = minf(d0, point_triangle_distance(q, y[0], y[1], y[2]));
		}
	}
	return d0;
}

/* The owned edges of chunk A against those of chunk B (the pairs within A
 * when equal), as ee_chunks tests them, in the rest plane of chunk a. */
static float d0_ee(const sim_self *s, const float *ytab, uint32_t A, uint32_t B, float cap)
{
	float d0 = cap;
	for (uint32_t i = s->ce_start[A]; i < s->ce_start[A + 1]; i++) {
		const uint32_t a0 = s->ce_v[i], a1 = s->ce_v[s->ce_start[s->chunk_count] + i];
		sim_v3 ya[2] = {rest2v(ytab, a0), rest2v(ytab, a1)};
		float ba[4];
		box2(ya, 2, ba);
		for (uint32_t j = A == B ? i + 1 : s->ce_start[B]; j < s->ce_start[B + 1]; j++) {
			const uint32_t b0 = s->ce_v[j], b1 = s->ce_v[s->ce_start[s->chunk_count] + j];
			if (a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1)
				continue;
			sim_v3 yb[2] = {rest2v(ytab, b0), rest2v(ytab, b1)};
			float bb[4];
			box2(yb, 2, bb);
			if (!boxes2_near(ba, bb, d0))
				continue;
			d0 = minf(d0, segment_distance(ya[0], ya[1], yb[0], yb[1]));
		}
	}
	return d0;
}

/* D0 of chunk pair (A, B), A <= B, in the frame of A (0 when it cannot be
 * had), less a relative 1e-5 for its own rounding. */
static float chunk_pair_d0(const sim_self *s, const float *ytab, uint32_t A, uint32_t B)
{
	if (!s->cull_framed[A] || !chunk_projects_well(s, ytab, A) || !chunk_projects_well(s, ytab, B))
		return 0.0f;
	float d0 = SELF_CULL_D0_CAP * s->base_cell;
	d0 = d0_vt(s, ytab, A, B, d0);
	if (A != B)
		d0 = d0_vt(s, ytab, B, A, d0);
	d0 = d0_ee(s, ytab, A, B, d0);
	return d0 * (1.0f - 1e-5f);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

typedef struct cull_sort {
	float lo;
	uint32_t c;
} cull_sort;

static int cull_sort_cmp(const void *a, const void *b)
{
	const cull_sort *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->c > y->c) - (x->c < y->c);
}

/* Every chunk's neighbourhood: the vertices of its partners' triangles
 * (itself among them), once each, their rest-plane coordinates in its
 * frame, and the rest side of the least-squares fit (the mean and the
 * inverse of the scatter matrix). Returns -1 when out of memory. */
static int build_neighbourhoods(sim_self *s)
{
	const uint32_t nc = s->chunk_count;
	uint64_t cap = 0;
	for (uint32_t A = 0; A < nc; A++)
		for (uint32_t k = s->cull_start[A]; k < s->cull_start[A + 1]; k++)
			cap += s->cvall_start[s->cull_b[k] + 1] - s->cvall_start[s->cull_b[k]];
	if (cap > UINT32_MAX)
		return -1;
	s->cnb_start = malloc(((size_t)nc + 1) * sizeof *s->cnb_start);
	s->cnb = malloc((size_t)cap * sizeof *s->cnb + 1);
	s->cnb_y = malloc(2 * (size_t)cap * sizeof *s->cnb_y + 1);
	s->cnb_fit = calloc(5 * (size_t)nc + 1, sizeof *s->cnb_fit);
	s->cull_fit = calloc(4 * (size_t)nc + 1, sizeof *s->cull_fit);
	if (s->cnb_start == NULL || s->cnb == NULL || s->cnb_y == NULL || s->cnb_fit == NULL ||
	    s->cull_fit == NULL)
		return -1;
	uint32_t n = 0;
	for (uint32_t A = 0; A < nc; A++) {
		const uint32_t b = n;
		s->cnb_start[A] = b;
		for (uint32_t k = s->cull_start[A]; k < s->cull_start[A + 1]; k++) {
			const uint32_t B = s->cull_b[k];
			for (uint32_t j = s->cvall_start[B]; j < s->cvall_start[B + 1]; j++)
				s->cnb[n++] = s->cvall[j];
		}
		qsort(&s->cnb[b], n - b, sizeof *s->cnb, u32_cmp);
		uint32_t m = b;
		for (uint32_t k = b; k < n; k++)
			if (k == b || s->cnb[k] != s->cnb[m - 1])
				s->cnb[m++] = s->cnb[k];
		n = m;
		if (!s->cull_framed[A] || n - b < 3)
			continue;
		double ym0 = 0.0, ym1 = 0.0;
		for (uint32_t k = b; k < n; k++) {
			rest2(s, A, s->cnb[k], &s->cnb_y[2 * (size_t)k], &s->cnb_y[2 * (size_t)k + 1]);
			ym0 += s->cnb_y[2 * (size_t)k];
			ym1 += s->cnb_y[2 * (size_t)k + 1];
		}
		const float m0 = (float)(ym0 / (n - b)), m1 = (float)(ym1 / (n - b));
		double s00 = 0.0, s01 = 0.0, s11 = 0.0;
		for (uint32_t k = b; k < n; k++) {
			const double a = s->cnb_y[2 * (size_t)k] - m0, c = s->cnb_y[2 * (size_t)k + 1] - m1;
			s00 += a * a, s01 += a * c, s11 += c * c;
		}
		const double det = s00 * s11 - s01 * s01;
		if (!(det > 1e-12 * (s00 + s11) * (s00 + s11)))
			continue;
		float *f = &s->cnb_fit[5 * (size_t)A];
		f[0] = m0, f[1] = m1;
		f[2] = (float)(s11 / det), f[3] = (float)(-s01 / det), f[4] = (float)(s00 / det);
	}
	s->cnb_start[nc] = n;
	return 0;
}

int self_cull_build(sim_self *s)
{
	const uint32_t nc = s->chunk_count;
	s->cull_on = 1;
	s->cull_scale = 1.0f;
	s->cvall_start = malloc(((size_t)nc + 1) * sizeof *s->cvall_start);
	s->cvall = malloc(3 * (size_t)s->nh * sizeof *s->cvall + 1);
	s->cull_frame = calloc(9 * (size_t)nc + 1, sizeof *s->cull_frame);
	s->cull_framed = calloc((size_t)nc + 1, 1);
	s->chunk_sliver = calloc((size_t)nc + 1, 1);
	s->cull_start = calloc((size_t)nc + 1, sizeof *s->cull_start);
	s->cull_bestd0 = calloc((size_t)nc + 1, sizeof *s->cull_bestd0);
	s->cull_wait = calloc((size_t)nc + 1, sizeof *s->cull_wait);
	s->cull_backoff = calloc((size_t)nc + 1, sizeof *s->cull_backoff);
	float *rb = malloc(6 * (size_t)nc * sizeof *rb + 1);
	cull_sort *order = malloc((size_t)nc * sizeof *order + 1);
	if (s->cvall_start == NULL || s->cvall == NULL || s->cull_frame == NULL ||
	    s->cull_framed == NULL || s->chunk_sliver == NULL || s->cull_start == NULL ||
	    s->cull_bestd0 == NULL || s->cull_wait == NULL || s->cull_backoff == NULL || rb == NULL ||
	    order == NULL) {
		free(rb);
		free(order);
		return -1;
	}
	/* Every vertex of each chunk's triangles, once. */
	uint32_t n = 0;
	for (uint32_t c = 0; c < nc; c++) {
		s->cvall_start[c] = n;
		for (uint32_t i = c * SELF_CHUNK, e = chunk_end(s, c); i < e; i++)
			for (int k = 0; k < 3; k++)
				s->cvall[n++] = s->tris[3 * (size_t)s->chunk_tri[i] + k];
		uint32_t b = s->cvall_start[c];
		qsort(&s->cvall[b], n - b, sizeof *s->cvall, u32_cmp);
		uint32_t m = b;
		for (uint32_t k = b; k < n; k++)
			if (k == b || s->cvall[k] != s->cvall[m - 1])
				s->cvall[m++] = s->cvall[k];
		n = m;
	}
	s->cvall_start[nc] = n;
	for (uint32_t c = 0; c < nc; c++) {
		s->cull_framed[c] = (uint8_t)chunk_frame(s, c);
		float *b = &rb[6 * (size_t)c];
		b[0] = b[1] = b[2] = INFINITY;
		b[3] = b[4] = b[5] = -INFINITY;
		for (uint32_t k = s->cvall_start[c]; k < s->cvall_start[c + 1]; k++) {
			const float q[3] = {s->x0[s->cvall[k]].x, s->x0[s->cvall[k]].y, s->x0[s->cvall[k]].z};
			for (int a = 0; a < 3; a++) {
				b[a] = minf(b[a], q[a]);
				b[a + 3] = maxf(b[a + 3], q[a]);
			}
		}
		order[c] = (cull_sort){b[0], c};
	}
	/* Partners by a sweep along x over the rest boxes grown by the gap:
	 * counted first, then filled, for every A the partners B >= A in
	 * increasing order. */
	qsort(order, nc, sizeof *order, cull_sort_cmp);
	const float g = SELF_CULL_PARTNER_GAP * s->base_cell;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			uint32_t run = 0;
			for (uint32_t c = 0; c <= nc; c++) {
				uint32_t k = c < nc ? s->cull_start[c] : 0;
				s->cull_start[c] = run;
				run += k;
			}
			s->cull_b = malloc((size_t)run * sizeof *s->cull_b + 1);
			s->cull_d0 = malloc((size_t)run * sizeof *s->cull_d0 + 1);
			if (s->cull_b == NULL || s->cull_d0 == NULL) {
				free(rb);
				free(order);
				return -1;
			}
		}
		uint32_t *fill = pass == 1 ? calloc((size_t)nc + 1, sizeof *fill) : NULL;
		if (pass == 1 && fill == NULL) {
			free(rb);
			free(order);
			return -1;
		}
		for (uint32_t i = 0; i < nc; i++) {
			const float *bi = &rb[6 * (size_t)order[i].c];
			for (uint32_t j = i; j < nc && order[j].lo <= bi[3] + g; j++) {
				const float *bj = &rb[6 * (size_t)order[j].c];
				if (bj[1] > bi[4] + g || bi[1] > bj[4] + g || bj[2] > bi[5] + g ||
				    bi[2] > bj[5] + g)
					continue;
				uint32_t A = order[i].c, B = order[j].c;
				if (A > B) {
					uint32_t t = A;
					A = B, B = t;
				}
				if (pass == 0)
					s->cull_start[A]++;
				else
					s->cull_b[s->cull_start[A] + fill[A]++] = B;
			}
		}
		free(fill);
	}
	free(rb);
	free(order);
	for (uint32_t A = 0; A < nc; A++) {
		uint32_t k0 = s->cull_start[A], k1 = s->cull_start[A + 1];
		qsort(&s->cull_b[k0], k1 - k0, sizeof *s->cull_b, u32_cmp);
	}
	if (build_neighbourhoods(s) != 0)
		return -1;
	/* D0 of every record, with the rest-plane coordinates of A's
	 * neighbourhood (which holds every vertex of its records) looked up
	 * from a table rather than projected again for every pair. */
	float *ytab = calloc(2 * (size_t)s->nv + 1, sizeof *ytab);
	if (ytab == NULL)
		return -1;
	for (uint32_t A = 0; A < nc; A++) {
		for (uint32_t k = s->cnb_start[A]; k < s->cnb_start[A + 1]; k++) {
			ytab[2 * (size_t)s->cnb[k]] = s->cnb_y[2 * (size_t)k];
			ytab[2 * (size_t)s->cnb[k] + 1] = s->cnb_y[2 * (size_t)k + 1];
		}
		float best = INFINITY;
		for (uint32_t k = s->cull_start[A]; k < s->cull_start[A + 1]; k++) {
			s->cull_d0[k] = chunk_pair_d0(s, ytab, A, s->cull_b[k]);
			if (s->cull_d0[k] > 0.0f)
				best = minf(best, s->cull_d0[k]);
		}
		s->cull_bestd0[A] = isfinite(best) ? best : 0.0f;
	}
	free(ytab);
	return 0;
}

void self_cull_free(sim_self *s)
{
	free(s->cvall_start);
	free(s->cvall);
	free(s->cull_frame);
	free(s->cull_framed);
	free(s->chunk_sliver);
	free(s->cull_start);
	free(s->cull_b);
	free(s->cull_d0);
	free(s->cnb_start);
	free(s->cnb);
	free(s->cnb_y);
	free(s->cnb_fit);
	free(s->cull_fit);
	free(s->cull_bestd0);
	free(s->cull_wait);
	free(s->cull_backoff);
}

/* The bound of the head comment for a chunk pair of rest distance d0,
 * with the fit f of the lower chunk's neighbourhood. */
static inline int cull_passes(const sim_self *s, const float *f, float d0, float reach)
{
	const float lhs = (f[0] * d0 * s->cull_scale - 2.0f * f[1]) * (1.0f - SELF_CULL_REL) -
			  f[2] * (1.0f + SELF_CULL_REL);
	const float rhs = reach * (1.0f + 1e-3f) + SELF_CULL_ABS * (1.0f + f[3]);
	return lhs > rhs;
}

/*
 * The fit of chunk c's neighbourhood (cnb: the vertices of c and of every
 * partner B >= c) for x -> p, into cull_fit[4 c ..]: sigma_min(G), eps, the
 * diagonal of the displacements' box and the largest coordinate (see the
 * head comment). Once per chunk and substep (chunk_boxes), so that each
 * chunk pair then costs a few comparisons. Writes zeros (nothing is
 * skipped) when the fit is degenerate.
 */
void self_cull_fit(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
		   uint32_t c, float reach)
{
	float *out = &s->cull_fit[4 * (size_t)c];
	out[0] = out[1] = out[2] = out[3] = 0.0f;
	/* Unknown until the fit below runs: a chunk pair with a chunk
	 * marked so is never skipped. */
	s->chunk_sliver[c] = 1;
	const uint32_t k0 = s->cnb_start[c], k1 = s->cnb_start[c + 1];
	if (!s->cull_on || !s->cull_framed[c] || k1 - k0 < 3)
		return;
	/* A fit costs about as much as the search it can save in one chunk
	 * pair; where it failed (a fold, a wrinkle, fast relative motion) it
	 * is not tried again for SELF_CULL_RETRY fits. This only decides
	 * when a proof is attempted, never what the search finds. */
	if (s->cull_wait[c] > 0) {
		s->cull_wait[c]--;
		return;
	}
	const float *yy = &s->cnb_y[2 * (size_t)k0];
	const uint32_t n = k1 - k0;
	/* One pass for the displacements' box, the largest coordinate, the
	 * mean position xm and the least-squares sums of x ~ c + F (y - ym).
	 * The sums are taken about the first vertex xr rather than about xm
	 * (which is not known yet), so the pass needs no second gather: the
	 * proof of the head comment holds for any F and any c, and F is
	 * nearly the same (they differ by (xm - xr) sum (y - ym), a sum that
	 * is zero but for rounding). The residuals below are taken about xm
	 * with this F, so eps is exact for the map used. */
	const float *fy = &s->cnb_fit[5 * (size_t)c];
	const float ym0 = fy[0], ym1 = fy[1], i00 = fy[2], i01 = fy[3], i11 = fy[4];
	float dlo[3] = {INFINITY, INFINITY, INFINITY}, dhi[3] = {-INFINITY, -INFINITY, -INFINITY};
	float big = 0.0f;
	const sim_v3 xr = v3_of4(x[s->cnb[k0]]);
	sim_v3 xs = v3(0.0f, 0.0f, 0.0f);
	sim_v3 c0 = v3(0.0f, 0.0f, 0.0f), c1 = v3(0.0f, 0.0f, 0.0f);
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t v = s->cnb[k0 + i];
		const sim_v3 xv = v3_of4(x[v]);
		const float d[3] = {p[v].x - xv.x, p[v].y - xv.y, p[v].z - xv.z};
		for (int a = 0; a < 3; a++) {
			dlo[a] = minf(dlo[a], d[a]);
			dhi[a] = maxf(dhi[a], d[a]);
		}
		big = maxf(big, maxf(fabsf(xv.x), maxf(fabsf(xv.y), fabsf(xv.z))));
		big = maxf(big, maxf(fabsf(p[v].x), maxf(fabsf(p[v].y), fabsf(p[v].z))));
		const sim_v3 dx = v3_sub(xv, xr);
		xs = v3_add(xs, dx);
		const float a = yy[2 * i] - ym0, b = yy[2 * i + 1] - ym1;
		c0 = v3_add(c0, v3_scale(dx, a));
		c1 = v3_add(c1, v3_scale(dx, b));
	}
	const sim_v3 xm = v3_add(xr, v3_scale(xs, 1.0f / (float)n));
	const sim_v3 f1 = v3_add(v3_scale(c0, i00), v3_scale(c1, i01));
	const sim_v3 f2 = v3_add(v3_scale(c0, i01), v3_scale(c1, i11));
	const float l1 = v3_len(f1);
	const sim_v3 nrm = v3_cross(f1, f2);
	const float ln = v3_len(nrm);
	if (!(l1 > 0.0f) || !(ln > 0.0f))
		return;
	const sim_v3 e1 = v3_scale(f1, 1.0f / l1);
	const sim_v3 e2 = v3_cross(v3_scale(nrm, 1.0f / ln), e1);
	/* G = [l1 g01; 0 g11] in the basis (e1, e2); sigma_min = |det| /
	 * sigma_max. */
	const float g01 = v3_dot(f2, e1), g11 = v3_dot(f2, e2);
	const float T = l1 * l1 + g01 * g01 + g11 * g11, D = fabsf(l1 * g11);
	const float smax = sqrtf(0.5f * (T + sqrtf(maxf(T * T - 4.0f * D * D, 0.0f))));
	const float sigma = D / smax;
	const float diag = sqrtf((dhi[0] - dlo[0]) * (dhi[0] - dlo[0]) +
				 (dhi[1] - dlo[1]) * (dhi[1] - dlo[1]) +
				 (dhi[2] - dlo[2]) * (dhi[2] - dlo[2]));
	if (!(sigma > 0.0f) || !isfinite(sigma) || !isfinite(big))
		return;
	/* The bound falls as eps grows: when it fails with eps = 0 for the
	 * record of c with the largest D0 it fails for every record, so the
	 * residuals need not be measured (the relative motion of the
	 * substep, diag, alone exceeds the margin in most of the fold's
	 * fits). Nothing is skipped, as when the full fit fails; the slivers
	 * are still flagged (the pairs of lower chunks with c read them) and
	 * the wait is set as below. */
	float maxd0 = 0.0f;
	for (uint32_t k = s->cull_start[c]; k < s->cull_start[c + 1]; k++)
		maxd0 = maxf(maxd0, s->cull_d0[k]);
	const float opt[4] = {sigma, 0.0f, diag, big};
	const int hopeless = !cull_passes(s, opt, maxd0, reach);
	float eps2 = 0.0f;
	for (uint32_t i = 0; i < n && !hopeless; i++) {
		const float a = yy[2 * i] - ym0, b = yy[2 * i + 1] - ym1;
		const sim_v3 r = v3_sub(v3_sub(v3_of4(x[s->cnb[k0 + i]]), xm),
					v3_add(v3_scale(f1, a), v3_scale(f2, b)));
		const float r1 = v3_dot(r, e1), r2 = v3_dot(r, e2);
		eps2 = maxf(eps2, r1 * r1 + r2 * r2);
	}
	if (!isfinite(eps2))
		return;
	if (!hopeless) {
		out[0] = sigma;
		out[1] = sqrtf(eps2);
		out[2] = diag;
		out[3] = big;
	}
	self_cull_slivers(s, x, c);
	/* Whether the record of c with the smallest D0 (its own pairs, mostly,
	 * the costliest to search) could pass, slivers aside: if not, wait. */
	if (cull_passes(s, out, s->cull_bestd0[c], reach)) {
		s->cull_backoff[c] = 0;
	} else {
		/* Waits of 1, 2, 4, ... SELF_CULL_RETRY fits while it fails. */
		const uint8_t b = s->cull_backoff[c];
		s->cull_wait[c] = (uint8_t)(1u << b);
		if ((1u << b) < SELF_CULL_RETRY)
			s->cull_backoff[c] = (uint8_t)(b + 1);
	}
}

int self_cull_skip(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
		   uint32_t A, uint32_t B, float reach)
{
	const float *f = &s->cull_fit[4 * (size_t)A];
	if (!s->cull_on || !(f[0] > 0.0f) || s->chunk_sliver[A] || s->chunk_sliver[B])
		return 0;
	float d0 = 0.0f;
	for (uint32_t k = s->cull_start[A]; k < s->cull_start[A + 1]; k++)
		if (s->cull_b[k] == B) {
			d0 = s->cull_d0[k];
			break;
		}
	return cull_passes(s, f, d0, reach);
}

int self_cull_needed(const sim_self *s, uint32_t c)
{
	if (s->chunk_mark[c])
		return 1;
	for (uint32_t k = s->cull_start[c]; k < s->cull_start[c + 1]; k++)
		if (s->chunk_mark[s->cull_b[k]])
			return 1;
	return 0;
}

/* Whether a triangle of chunk c is a sliver at x (tri_degenerate): the
 * search then records its pairs whatever their distance. */
void self_cull_slivers(const sim_self *s, const sim_vec4 *restrict x, uint32_t c)
{
	uint8_t any = 0;
	for (uint32_t i = c * SELF_CHUNK, e = chunk_end(s, c); i < e && !any; i++) {
		const uint32_t *tv = &s->tris[3 * (size_t)s->chunk_tri[i]];
		sim_v3 nn;
		any = (uint8_t)tri_degenerate(v3_of4(x[tv[0]]), v3_of4(x[tv[1]]), v3_of4(x[tv[2]]), &nn);
	}
	s->chunk_sliver[c] = any;
}
