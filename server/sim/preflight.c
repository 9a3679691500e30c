/*
 * Preflight: how many pairs of triangles of a mesh intersect, before a long
 * run starts from a tangled input.
 *
 * Broad phase through the same dense hash as self-collision (selfhash.h),
 * over the triangles' own boxes; narrow phase the exact test of Möller, "A
 * Fast Triangle-Triangle Intersection Test" (journal of graphics tools,
 * 1997), evaluated in double precision on the float input.
 *
 * Semantics, which the tests pin down:
 * - triangles are closed sets: touching (a vertex on the other's face, edges
 *   meeting at a point) counts as intersecting;
 * - coplanar triangles that overlap (or touch) count as intersecting;
 * - pairs that share a vertex index are skipped, even if they also overlap
 *   elsewhere (a mesh's neighbours always touch);
 * - zero-area triangles (the sliver criterion of topology.c) are skipped:
 *   they have no plane for the test and the solver keeps them out of its
 *   area-based forces too;
 * - each unordered pair is counted once; the reported pairs have a < b and
 *   are the first max_pairs in (a, b) order.
 */
#include "drape/sim.h"

#include "server/sim/preflight.h"
#include "server/sim/selfhash.h"
#include "server/sim/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PREFLIGHT_SLIVER_RATIO 1e-6

typedef struct dvec {
	double x, y, z;
} dvec;

static inline dvec dv(const float *p)
{
	return (dvec){p[0], p[1], p[2]};
}
static inline dvec dsub(dvec a, dvec b)
{
	return (dvec){a.x - b.x, a.y - b.y, a.z - b.z};
}
static inline double ddot(dvec a, dvec b)
{
	return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline dvec dcross(dvec a, dvec b)
{
	return (dvec){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
static inline double dcomp(dvec a, int k)
{
	return k == 0 ? a.x : (k == 1 ? a.y : a.z);
}

static int degenerate(dvec a, dvec b, dvec c)
{
	dvec ab = dsub(b, a), ac = dsub(c, a), bc = dsub(c, b);
	double l2 = fmax(ddot(ab, ab), fmax(ddot(ac, ac), ddot(bc, bc)));
	dvec n = dcross(ab, ac);
	return !(sqrt(ddot(n, n)) > PREFLIGHT_SLIVER_RATIO * l2);
}

/* ---- coplanar case (Möller 1997, section 4, "coplanar triangles") ----------- */

static inline double orient2(const double *a, const double *b, const double *c)
{
	return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

static inline int on_segment2(const double *a, const double *b, const double *c)
{
	/* c is collinear with ab: is it within the segment's box? */
	return fmin(a[0], b[0]) <= c[0] && c[0] <= fmax(a[0], b[0]) && fmin(a[1], b[1]) <= c[1] &&
	       c[1] <= fmax(a[1], b[1]);
}

/* Closed segments ab and cd in 2D: proper crossings, touching and collinear
 * overlap all count. */
static int segments_meet2(const double *a, const double *b, const double *c, const double *d)
{
	double o1 = orient2(a, b, c), o2 = orient2(a, b, d);
	double o3 = orient2(c, d, a), o4 = orient2(c, d, b);
	if (((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0)))
		return 1;
	if (o1 == 0 && on_segment2(a, b, c))
		return 1;
	if (o2 == 0 && on_segment2(a, b, d))
		return 1;
	if (o3 == 0 && on_segment2(c, d, a))
		return 1;
	if (o4 == 0 && on_segment2(c, d, b))
		return 1;
	return 0;
}

/* Point in closed 2D triangle, either winding. */
static int point_in_tri2(const double *p, const double *a, const double *b, const double *c)
{
	double d1 = orient2(a, b, p), d2 = orient2(b, c, p), d3 = orient2(c, a, p);
	int neg = d1 < 0 || d2 < 0 || d3 < 0, pos = d1 > 0 || d2 > 0 || d3 > 0;
	return !(neg && pos);
}

/* Projects both triangles onto the axis plane where the normal is largest and
 * tests edges against edges, then containment of one vertex in the other. */
static int coplanar_meet(dvec n, const dvec U[3], const dvec V[3])
{
	double ax = fabs(n.x), ay = fabs(n.y), az = fabs(n.z);
	int i0, i1;
	if (ax >= ay && ax >= az)
		i0 = 1, i1 = 2;
	else if (ay >= az)
		i0 = 0, i1 = 2;
	else
		i0 = 0, i1 = 1;
	double u[3][2], v[3][2];
	for (int k = 0; k < 3; k++) {
		u[k][0] = dcomp(U[k], i0), u[k][1] = dcomp(U[k], i1);
		v[k][0] = dcomp(V[k], i0), v[k][1] = dcomp(V[k], i1);
	}
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			if (segments_meet2(u[i], u[(i + 1) % 3], v[j], v[(j + 1) % 3]))
				return 1;
	return point_in_tri2(u[0], v[0], v[1], v[2]) || point_in_tri2(v[0], u[0], u[1], u[2]);
}

/* ---- general case (Möller 1997, sections 2-3) ------------------------------- */

/*
 * Interval where a triangle with projections p[] on the intersection line
 * and signed distances d[] to the other plane crosses that plane. The lone
 * vertex (the one on its own side) is found as in Möller's code, zeros
 * included. Returns 0 when all distances are zero (coplanar).
 */
static int plane_interval(const double p[3], const double d[3], double *lo, double *hi)
{
	int lone, o1, o2;
	if (d[0] * d[1] > 0.0)
		lone = 2, o1 = 0, o2 = 1;
	else if (d[0] * d[2] > 0.0)
		lone = 1, o1 = 0, o2 = 2;
	else if (d[1] * d[2] > 0.0 || d[0] != 0.0)
		lone = 0, o1 = 1, o2 = 2;
	else if (d[1] != 0.0)
		lone = 1, o1 = 0, o2 = 2;
	else if (d[2] != 0.0)
		lone = 2, o1 = 0, o2 = 1;
	else
		return 0;
	double t1 = p[lone] + (p[o1] - p[lone]) * d[lone] / (d[lone] - d[o1]);
	double t2 = p[lone] + (p[o2] - p[lone]) * d[lone] / (d[lone] - d[o2]);
	*lo = fmin(t1, t2);
	*hi = fmax(t1, t2);
	return 1;
}

/* Signed distances (times |n|) of three points to the plane n.x + d = 0,
 * snapped to zero below a relative epsilon so that a vertex on the plane in
 * exact arithmetic is not split by rounding. Returns the sign pattern: 1 if
 * all strictly on one side (no intersection possible). */
static int plane_dists(dvec n, double nd, const dvec P[3], double scale, double out[3])
{
	double eps = 1e-12 * sqrt(ddot(n, n)) * scale;
	for (int k = 0; k < 3; k++) {
		double d = ddot(n, P[k]) + nd;
		out[k] = fabs(d) <= eps ? 0.0 : d;
	}
	return (out[0] > 0.0 && out[1] > 0.0 && out[2] > 0.0) ||
	       (out[0] < 0.0 && out[1] < 0.0 && out[2] < 0.0);
}

static int tri_tri_intersect(const dvec U[3], const dvec V[3])
{
	double scale = 0.0;
	for (int k = 0; k < 3; k++) {
		scale = fmax(scale, fmax(fabs(U[k].x), fmax(fabs(U[k].y), fabs(U[k].z))));
		scale = fmax(scale, fmax(fabs(V[k].x), fmax(fabs(V[k].y), fabs(V[k].z))));
	}
	scale = fmax(scale, 1e-30);

	/* U's vertices against V's plane. */
	dvec n2 = dcross(dsub(V[1], V[0]), dsub(V[2], V[0]));
	double du[3];
	if (plane_dists(n2, -ddot(n2, V[0]), U, scale, du))
		return 0;
	/* V's vertices against U's plane. */
	dvec n1 = dcross(dsub(U[1], U[0]), dsub(U[2], U[0]));
	double dvv[3];
	if (plane_dists(n1, -ddot(n1, U[0]), V, scale, dvv))
		return 0;
	if (du[0] == 0.0 && du[1] == 0.0 && du[2] == 0.0)
		return coplanar_meet(n1, U, V);
	if (dvv[0] == 0.0 && dvv[1] == 0.0 && dvv[2] == 0.0)
		return coplanar_meet(n1, U, V);

	/* Project onto the largest axis of the intersection line's direction
	 * (Möller's simplification; the intervals keep their order). */
	dvec D = dcross(n1, n2);
	double ax = fabs(D.x), ay = fabs(D.y), az = fabs(D.z);
	int k = (ax >= ay && ax >= az) ? 0 : (ay >= az ? 1 : 2);
	double pu[3] = {dcomp(U[0], k), dcomp(U[1], k), dcomp(U[2], k)};
	double pv[3] = {dcomp(V[0], k), dcomp(V[1], k), dcomp(V[2], k)};
	double a0, a1, b0, b1;
	if (!plane_interval(pu, du, &a0, &a1) || !plane_interval(pv, dvv, &b0, &b1))
		return coplanar_meet(n1, U, V);
	return !(a1 < b0 || b1 < a0);
}

/* ---- the public call's input ------------------------------------------------ */

static drape_err validate(const float *positions, uint32_t vertex_count, const uint32_t *triangles,
			  uint32_t triangle_count, const drape_tri_pair *pairs, uint32_t max_pairs,
			  const uint64_t *count, drape_error *err)
{
	if (count == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "count: NULL");
	if (vertex_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "vertex_count: 0; need at least 3 vertices");
	if (positions == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "positions: NULL with vertex_count %u",
					vertex_count);
	if (triangle_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"triangle_count: 0; need at least one triangle");
	if (triangle_count > UINT32_MAX / 3u)
		return drape_error_setf(err, DRAPE_ELIMIT, "triangle_count: %u > maximum %u",
					triangle_count, UINT32_MAX / 3u);
	if (triangles == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "triangles: NULL with triangle_count %u",
					triangle_count);
	if (pairs == NULL && max_pairs > 0)
		return drape_error_setf(err, DRAPE_EINVAL, "pairs: NULL with max_pairs %u", max_pairs);
	for (uint32_t i = 0; i < vertex_count; i++)
		for (int j = 0; j < 3; j++)
			if (!isfinite(positions[3 * (size_t)i + j]))
				return drape_error_setf(err, DRAPE_ENONFINITE,
							"positions[%u][%d]: %g is not finite", i, j,
							(double)positions[3 * (size_t)i + j]);
	for (uint32_t t = 0; t < triangle_count; t++) {
		const uint32_t *v = &triangles[3 * (size_t)t];
		for (int j = 0; j < 3; j++)
			if (v[j] >= vertex_count)
				return drape_error_setf(err, DRAPE_ERANGE,
							"triangles[%u][%d]: vertex %u >= vertex_count %u",
							t, j, v[j], vertex_count);
		if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2])
			return drape_error_setf(err, DRAPE_EINVAL,
						"triangles[%u]: vertex repeated in (%u, %u, %u)", t,
						v[0], v[1], v[2]);
	}
	return DRAPE_OK;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static inline int share_vertex(const uint32_t *a, const uint32_t *b)
{
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			if (a[i] == b[j])
				return 1;
	return 0;
}

/* ---- the walk both calls share ---------------------------------------------- */

void sim_preflight_scratch_free(sim_preflight_scratch *w)
{
	free(w->boxes);
	free(w->stamp);
	free(w->hits);
	sim_hash_free(&w->hash);
	memset(w, 0, sizeof *w);
}

/* Room for n triangles; -1 when out of memory, with w left empty. */
static int scratch_reserve(sim_preflight_scratch *w, uint32_t n)
{
	if (w->hits == NULL) {
		w->hits_cap = 64;
		if ((w->hits = malloc(w->hits_cap * sizeof *w->hits)) == NULL)
			goto fail;
	}
	if (n <= w->cap)
		return 0;
	float *boxes = realloc(w->boxes, 6 * (size_t)n * sizeof *boxes);
	if (boxes == NULL)
		goto fail;
	w->boxes = boxes;
	uint32_t *stamp = realloc(w->stamp, (size_t)n * sizeof *stamp);
	if (stamp == NULL)
		goto fail;
	w->stamp = stamp;
	sim_hash_free(&w->hash);
	if (sim_hash_init(&w->hash, n) != DRAPE_OK)
		goto fail;
	w->cap = n;
	return 0;
fail:
	sim_preflight_scratch_free(w);
	return -1;
}

/* What a walk found: the number of pairs, the triangles in one (hit, when
 * not NULL) and the first max_pairs pairs in (a, b) order. */
typedef struct pf_found {
	uint64_t count;
	uint8_t *hit;
	drape_tri_pair *pairs;
	uint32_t max_pairs, filled;
} pf_found;

/*
 * The one walk of both calls: the triangles subset[0 .. n - 1] (0 .. n - 1
 * when subset is NULL) are boxed and hashed in w's buffers, and each is
 * tested against the later ones whose boxes overlap its own, in subset
 * order. Returns -1 when out of memory. Inlined into each caller, so that
 * drape_preflight's constants (stride 3, no subset) fold in: as a call it
 * took 4.7 % more instructions than its own walk before this one was
 * shared (README, "Cloth that starts tangled").
 */
__attribute__((always_inline)) static inline int
pf_walk(const float *positions, size_t stride, const uint32_t *triangles, const uint32_t *subset,
	uint32_t n, sim_tri_pair_skip skip, void *ctx, sim_preflight_scratch *w, pf_found *out)
{
	if (scratch_reserve(w, n) != 0)
		return -1;
	float *boxes = w->boxes;
	uint32_t *stamp = w->stamp;

	/* Triangle boxes (zero-area ones inverted so the hash leaves them out)
	 * and the mean edge length for the cell size, as self-collision uses. */
	double len_sum = 0.0;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *tv = &triangles[3 * (size_t)(subset != NULL ? subset[i] : i)];
		const float *pa = &positions[stride * tv[0]], *pb = &positions[stride * tv[1]],
			    *pc = &positions[stride * tv[2]];
		dvec a = dv(pa), b = dv(pb), c = dv(pc);
		len_sum += sqrt(ddot(dsub(b, a), dsub(b, a))) + sqrt(ddot(dsub(c, b), dsub(c, b))) +
			   sqrt(ddot(dsub(a, c), dsub(a, c)));
		float *bx = &boxes[6 * (size_t)i];
		if (degenerate(a, b, c)) {
			bx[0] = bx[1] = bx[2] = INFINITY;
			bx[3] = bx[4] = bx[5] = -INFINITY;
			continue;
		}
		for (int k = 0; k < 3; k++) {
			bx[k] = fminf(pa[k], fminf(pb[k], pc[k]));
			bx[k + 3] = fmaxf(pa[k], fmaxf(pb[k], pc[k]));
		}
	}
	float cell = (float)(len_sum / (3.0 * (double)n));
	if (!(cell > 0.0f) || !isfinite(cell))
		cell = 1.0f;
	if (sim_hash_build(&w->hash, boxes, n, cell) != 0)
		return -1;
	memset(stamp, 0, (size_t)n * sizeof *stamp);

	/* Locals, not fields: the stores to stamp[] and hit[] below could
	 * alias w's and out's fields, which would then be reloaded for
	 * every candidate. */
	const sim_hash hash = w->hash, *h = &hash;
	uint64_t count = 0;
	uint8_t *hit = out->hit;
	uint32_t filled = out->filled;
	for (uint32_t i = 0; i < n; i++) {
		const float *ba = &boxes[6 * (size_t)i];
		if (!sim_box_valid(ba))
			continue;
		const uint32_t ga = subset != NULL ? subset[i] : i;
		const uint32_t *ta = &triangles[3 * (size_t)ga];
		dvec U[3] = {dv(&positions[stride * ta[0]]), dv(&positions[stride * ta[1]]),
			     dv(&positions[stride * ta[2]])};
		size_t nh = 0;
		sim_cellbox c = sim_hash_cells(h, ba);
		/* A big triangle sits in the big list, not in cells: every other
		 * triangle must meet it, so it scans them all. The stamp (i + 1)
		 * marks triangles already seen for this i. */
		int brute = sim_cellbox_count(&c) > SIM_HASH_MAX_CELLS;
		uint32_t cell_iter = 0;
		int32_t cx = c.lo[0], cy = c.lo[1], cz = c.lo[2];
		uint32_t e = 0, e_end = 0, big_i = 0;
		for (;;) {
			uint32_t j;
			if (brute) {
				if (cell_iter >= n)
					break;
				j = cell_iter++;
			} else if (e < e_end) {
				j = h->entries[e++];
			} else if (cz <= c.hi[2]) {
				uint32_t slot = sim_hash_slot(h, cx, cy, cz);
				e = h->start[slot];
				e_end = h->start[slot + 1];
				if (++cx > c.hi[0]) {
					cx = c.lo[0];
					if (++cy > c.hi[1]) {
						cy = c.lo[1];
						cz++;
					}
				}
				continue;
			} else if (big_i < h->big_count) {
				j = h->big[big_i++];
			} else {
				break;
			}
			if (j <= i || stamp[j] == i + 1)
				continue;
			stamp[j] = i + 1;
			const float *bb = &boxes[6 * (size_t)j];
			if (!sim_box_valid(bb) || !sim_box_overlap(ba, bb))
				continue;
			const uint32_t gb = subset != NULL ? subset[j] : j;
			const uint32_t *tb = &triangles[3 * (size_t)gb];
			if (share_vertex(ta, tb) || (skip != NULL && skip(ctx, ga, gb)))
				continue;
			dvec V[3] = {dv(&positions[stride * tb[0]]), dv(&positions[stride * tb[1]]),
				     dv(&positions[stride * tb[2]])};
			if (!tri_tri_intersect(U, V))
				continue;
			count++;
			if (hit != NULL)
				hit[ga] = hit[gb] = 1;
			if (filled < out->max_pairs) {
				if (nh == w->hits_cap) {
					uint32_t *grown = realloc(w->hits, 2 * w->hits_cap * sizeof *grown);
					if (grown == NULL)
						return -1;
					w->hits = grown;
					w->hits_cap *= 2;
				}
				w->hits[nh++] = gb;
			}
		}
		/* Every partner of i is collected while pairs still fit, so the
		 * sorted prefix is exactly the next pairs in (a, b) order. */
		if (nh > 0) {
			qsort(w->hits, nh, sizeof *w->hits, u32_cmp);
			for (size_t k = 0; k < nh && filled < out->max_pairs; k++) {
				out->pairs[filled].a = ga;
				out->pairs[filled].b = w->hits[k];
				filled++;
			}
		}
	}
	out->count = count;
	out->filled = filled;
	return 0;
}

/* ---- the public call -------------------------------------------------------- */

drape_err drape_preflight(const float *positions, uint32_t vertex_count, const uint32_t *triangles,
			  uint32_t triangle_count, drape_tri_pair *pairs, uint32_t max_pairs,
			  uint64_t *count, drape_error *err)
{
	drape_err rc = validate(positions, vertex_count, triangles, triangle_count, pairs,
				max_pairs, count, err);
	if (rc != DRAPE_OK)
		return rc;
	sim_preflight_scratch w = {0};
	pf_found f = {.pairs = pairs, .max_pairs = max_pairs};
	int walked = pf_walk(positions, 3, triangles, NULL, triangle_count, NULL, NULL, &w, &f);
	sim_preflight_scratch_free(&w);
	if (walked != 0)
		return drape_error_setf(err, DRAPE_ENOMEM, "preflight: out of memory for %u triangles",
					triangle_count);
	*count = f.count;
	return DRAPE_OK;
}

/* ---- the solver's subset test (preflight.h) ---------------------------------- */

int64_t sim_preflight_subset(const float *positions, size_t stride, const uint32_t *triangles,
			     const uint32_t *subset, uint32_t n, sim_tri_pair_skip skip, void *ctx,
			     uint8_t *hit, sim_preflight_scratch *w)
{
	if (n < 2)
		return 0;
	pf_found f = {.hit = hit};
	if (pf_walk(positions, stride, triangles, subset, n, skip, ctx, w, &f) != 0)
		return -1;
	return (int64_t)f.count;
}
