/*
 * The "body shows through" measure (bodythrough.h has the definitions).
 * The cloth's triangles go into a bounding volume hierarchy (bvh.h) built
 * for the one pose measured; each body vertex queries the box of half-width
 * `cover` around it and keeps the nearest triangle. For the edge counts
 * each mesh's unique edges (sorted (min, max) pairs) query the other
 * mesh's tree with their box, and the crossings are tested in double.
 */
#include "server/sim/bodythrough.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bvh.h"
#include "server/sim/deform.h"
#include "server/sim/vec.h"

static inline sim_v3 at3(const float *pos, uint32_t v)
{
	return v3(pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]);
}

typedef struct nearest_ctx {
	const float *cloth;
	const uint32_t *tris;
	sim_v3 q;
	float best;     /* squared distance of the best so far */
	uint32_t tri;   /* UINT32_MAX: none */
	float bary[3];
} nearest_ctx;

static void nearest_visit(void *vctx, uint32_t t)
{
	nearest_ctx *c = vctx;
	const uint32_t *v = &c->tris[3 * (size_t)t];
	float b[3];
	float d2 = sim_closest_on_triangle(c->q, at3(c->cloth, v[0]), at3(c->cloth, v[1]),
					   at3(c->cloth, v[2]), b);
	if (d2 < c->best || (d2 == c->best && t < c->tri)) {
		c->best = d2;
		c->tri = t;
		memcpy(c->bary, b, sizeof b);
	}
}

/* A unique edge of a triangle mesh and its (first two) triangles. */
typedef struct m_edge {
	uint32_t a, b;   /* a < b */
	uint32_t f0, f1; /* f1 = UINT32_MAX on a border */
} m_edge;

static int m_edge_cmp(const void *pa, const void *pb)
{
	const m_edge *x = pa, *y = pb;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return x->f0 < y->f0 ? -1 : x->f0 > y->f0;
}

/* The unique edges of tris, sorted; NULL when out of memory (*count 0). */
static m_edge *unique_edges(const uint32_t *tris, uint32_t nt, uint32_t *count)
{
	m_edge *e = malloc(3 * (size_t)nt * sizeof *e + 1);
	*count = 0;
	if (e == NULL)
		return NULL;
	for (uint32_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t u = tris[3 * (size_t)t + k], v = tris[3 * (size_t)t + (k + 1) % 3];
			e[3 * (size_t)t + k] = (m_edge){u < v ? u : v, u < v ? v : u, t, UINT32_MAX};
		}
	qsort(e, 3 * (size_t)nt, sizeof *e, m_edge_cmp);
	uint32_t n = 0;
	for (size_t k = 0; k < 3 * (size_t)nt; k++) {
		if (n > 0 && e[n - 1].a == e[k].a && e[n - 1].b == e[k].b) {
			if (e[n - 1].f1 == UINT32_MAX)
				e[n - 1].f1 = e[k].f0;
			continue;
		}
		e[n++] = e[k];
	}
	*count = n;
	return e;
}

typedef struct dv3 {
	double x, y, z;
} dv3;

static dv3 dat(const float *pos, uint32_t v)
{
	return (dv3){pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]};
}
static dv3 dsub(dv3 a, dv3 b) { return (dv3){a.x - b.x, a.y - b.y, a.z - b.z}; }
static double ddot(dv3 a, dv3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static dv3 dcross(dv3 a, dv3 b)
{
	return (dv3){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

/*
 * Whether segment p0-p1 crosses the interior of triangle abc (its ends
 * strictly on opposite sides of the plane, the crossing point strictly
 * inside). Fills d[0], d[1] with the ends' heights over the plane along
 * the unit normal of (b - a) x (c - a), and *nrm with that normal.
 */
static int seg_crosses(dv3 p0, dv3 p1, dv3 a, dv3 b, dv3 c, double d[2], dv3 *nrm)
{
	dv3 n = dcross(dsub(b, a), dsub(c, a));
	double l = sqrt(ddot(n, n));
	if (!(l > 0.0))
		return 0;
	n = (dv3){n.x / l, n.y / l, n.z / l};
	d[0] = ddot(n, dsub(p0, a));
	d[1] = ddot(n, dsub(p1, a));
	if (!((d[0] > 0.0 && d[1] < 0.0) || (d[0] < 0.0 && d[1] > 0.0)))
		return 0;
	double t = d[0] / (d[0] - d[1]);
	dv3 x = {p0.x + t * (p1.x - p0.x), p0.y + t * (p1.y - p0.y), p0.z + t * (p1.z - p0.z)};
	*nrm = n;
	return ddot(n, dcross(dsub(b, a), dsub(x, a))) > 0.0 &&
	       ddot(n, dcross(dsub(c, b), dsub(x, b))) > 0.0 &&
	       ddot(n, dcross(dsub(a, c), dsub(x, c))) > 0.0;
}

typedef struct cross_ctx {
	const float *pos;      /* the mesh whose triangles are queried */
	const uint32_t *tris;
	dv3 p0, p1;            /* the segment */
	dv3 out;               /* body edge: its outward normal; cloth edge: unused */
	double tol;
	int hit;
} cross_ctx;

/* A body edge against cloth triangle t. */
static void body_edge_visit(void *vctx, uint32_t t)
{
	cross_ctx *c = vctx;
	if (c->hit)
		return;
	const uint32_t *v = &c->tris[3 * (size_t)t];
	double d[2];
	dv3 n;
	if (!seg_crosses(c->p0, c->p1, dat(c->pos, v[0]), dat(c->pos, v[1]), dat(c->pos, v[2]), d, &n))
		return;
	/* The end on the triangle's outer side, as the body sees it. */
	double f = ddot(n, c->out), over;
	if (fabs(f) < 0.1)
		over = fmax(fabs(d[0]), fabs(d[1]));
	else
		over = f > 0.0 ? fmax(d[0], d[1]) : fmax(-d[0], -d[1]);
	if (over > c->tol)
		c->hit = 1;
}

/* A cloth edge against body triangle t. */
static void cloth_edge_visit(void *vctx, uint32_t t)
{
	cross_ctx *c = vctx;
	if (c->hit)
		return;
	const uint32_t *v = &c->tris[3 * (size_t)t];
	double d[2];
	dv3 n;
	if (!seg_crosses(c->p0, c->p1, dat(c->pos, v[0]), dat(c->pos, v[1]), dat(c->pos, v[2]), d, &n))
		return;
	c->hit = 1;
}

/*
 * The edge counts of bodythrough.h: body edges against the cloth's tree,
 * cloth edges against a tree of the body's triangles. nrm holds the body's
 * area-weighted vertex normals, orient their sign. 0 when out of memory.
 */
static int count_edges(const float *body, uint32_t nbv, const uint32_t *btris, uint32_t nbt,
		       const float *cloth, const uint32_t *ctris, uint32_t nct,
		       const sim_bvh *ctree, float orient, float tol, sim_body_through *r)
{
	(void)nbv;
	uint32_t nbe = 0, nce = 0;
	m_edge *be = unique_edges(btris, nbt, &nbe);
	m_edge *ce = unique_edges(ctris, nct, &nce);
	float *fn = malloc(3 * (size_t)nbt * sizeof *fn + 1);
	sim_bvh btree;
	memset(&btree, 0, sizeof btree);
	int ok = be != NULL && ce != NULL && fn != NULL && nbt > 0 &&
		 sim_bvh_build(&btree, body, btris, nbt) == 0;
	if (ok) {
		sim_bvh_refit(&btree, body, body, btris);
		/* The body's outward unit face normals. */
		for (uint32_t t = 0; t < nbt; t++) {
			const uint32_t *v = &btris[3 * (size_t)t];
			dv3 a = dat(body, v[0]);
			dv3 n = dcross(dsub(dat(body, v[1]), a), dsub(dat(body, v[2]), a));
			double l = sqrt(ddot(n, n));
			l = l > 0.0 ? orient / l : 0.0;
			fn[3 * (size_t)t] = (float)(n.x * l);
			fn[3 * (size_t)t + 1] = (float)(n.y * l);
			fn[3 * (size_t)t + 2] = (float)(n.z * l);
		}
		for (uint32_t k = 0; k < nbe; k++) {
			cross_ctx c = {cloth, ctris, dat(body, be[k].a), dat(body, be[k].b), {0, 0, 0},
				       tol, 0};
			const float *n0 = &fn[3 * (size_t)be[k].f0];
			c.out = (dv3){n0[0], n0[1], n0[2]};
			if (be[k].f1 != UINT32_MAX) {
				const float *n1 = &fn[3 * (size_t)be[k].f1];
				c.out = (dv3){c.out.x + n1[0], c.out.y + n1[1], c.out.z + n1[2]};
			}
			float lo[3], hi[3];
			const double e[2][3] = {{c.p0.x, c.p0.y, c.p0.z}, {c.p1.x, c.p1.y, c.p1.z}};
			for (int j = 0; j < 3; j++) {
				lo[j] = (float)fmin(e[0][j], e[1][j]);
				hi[j] = (float)fmax(e[0][j], e[1][j]);
			}
			sim_bvh_query(ctree, lo, hi, body_edge_visit, &c);
			r->edges_through += (uint32_t)c.hit;
		}
		for (uint32_t k = 0; k < nce; k++) {
			cross_ctx c = {body, btris, dat(cloth, ce[k].a), dat(cloth, ce[k].b), {0, 0, 0},
				       tol, 0};
			float lo[3], hi[3];
			const double e[2][3] = {{c.p0.x, c.p0.y, c.p0.z}, {c.p1.x, c.p1.y, c.p1.z}};
			for (int j = 0; j < 3; j++) {
				lo[j] = (float)fmin(e[0][j], e[1][j]);
				hi[j] = (float)fmax(e[0][j], e[1][j]);
			}
			sim_bvh_query(&btree, lo, hi, cloth_edge_visit, &c);
			r->cloth_edges_in += (uint32_t)c.hit;
		}
	}
	sim_bvh_free(&btree);
	free(fn);
	free(be);
	free(ce);
	return ok || nbt == 0;
}

drape_err sim_body_through_measure(const float *body, uint32_t nbv, const uint32_t *btris,
				   uint32_t nbt, const float *cloth, uint32_t ncv,
				   const uint32_t *ctris, uint32_t nct, float tol, float cover,
				   sim_body_through *out, drape_error *err)
{
	for (size_t k = 0; k < 3 * (size_t)nbt; k++)
		if (btris[k] >= nbv)
			return drape_error_setf(err, DRAPE_ERANGE,
						"body triangles[%zu][%zu]: vertex %u >= %u", k / 3,
						k % 3, btris[k], nbv);
	for (size_t k = 0; k < 3 * (size_t)nct; k++)
		if (ctris[k] >= ncv)
			return drape_error_setf(err, DRAPE_ERANGE,
						"cloth triangles[%zu][%zu]: vertex %u >= %u", k / 3,
						k % 3, ctris[k], ncv);
	float *nrm = calloc(3 * (size_t)nbv + 1, sizeof *nrm);
	sim_bvh tree;
	memset(&tree, 0, sizeof tree);
	if (nrm == NULL || (nct > 0 && sim_bvh_build(&tree, cloth, ctris, nct) != 0)) {
		free(nrm);
		return drape_error_setf(err, DRAPE_ENOMEM, "body through: out of memory");
	}
	if (nct > 0)
		sim_bvh_refit(&tree, cloth, cloth, ctris);
	/* Area-weighted vertex normals (the unnormalised cross product is
	 * twice the area times the unit normal), and the enclosed volume whose
	 * sign says whether the winding faces out. */
	double vol = 0.0;
	for (uint32_t t = 0; t < nbt; t++) {
		const uint32_t *v = &btris[3 * (size_t)t];
		sim_v3 a = at3(body, v[0]), b = at3(body, v[1]), c = at3(body, v[2]);
		sim_v3 n = v3_cross(v3_sub(b, a), v3_sub(c, a));
		vol += (double)v3_dot(a, v3_cross(b, c));
		for (int j = 0; j < 3; j++) {
			float *q = &nrm[3 * (size_t)v[j]];
			q[0] += n.x, q[1] += n.y, q[2] += n.z;
		}
	}
	const float orient = vol < 0.0 ? -1.0f : 1.0f;
	sim_body_through r = {0, 0, 0.0f, UINT32_MAX, UINT32_MAX, 0, 0};
	for (uint32_t i = 0; i < nbv && nct > 0; i++) {
		sim_v3 nb = v3_scale(at3(nrm, i), orient);
		float nl = v3_len(nb);
		if (!(nl > 0.0f))
			continue; /* a vertex of no triangle has no outside */
		nb = v3_scale(nb, 1.0f / nl);
		sim_v3 q = at3(body, i);
		nearest_ctx c = {cloth, ctris, q, cover * cover, UINT32_MAX, {0, 0, 0}};
		float lo[3] = {q.x - cover, q.y - cover, q.z - cover};
		float hi[3] = {q.x + cover, q.y + cover, q.z + cover};
		sim_bvh_query(&tree, lo, hi, nearest_visit, &c);
		if (c.tri == UINT32_MAX || !(c.bary[0] > 0.0f && c.bary[1] > 0.0f && c.bary[2] > 0.0f))
			continue;
		const uint32_t *v = &ctris[3 * (size_t)c.tri];
		sim_v3 a = at3(cloth, v[0]);
		sim_v3 nt = v3_cross(v3_sub(at3(cloth, v[1]), a), v3_sub(at3(cloth, v[2]), a));
		float tl = v3_len(nt);
		if (!(tl > 0.0f))
			continue;
		nt = v3_scale(nt, 1.0f / tl);
		float facing = v3_dot(nt, nb);
		if (!(fabsf(facing) >= 0.5f))
			continue;
		if (facing < 0.0f)
			nt = v3_scale(nt, -1.0f);
		float s = v3_dot(nt, v3_sub(q, a));
		r.covered++;
		if (s > tol)
			r.through++;
		if (s > r.deepest) {
			r.deepest = s;
			r.deepest_vertex = i;
			r.deepest_tri = c.tri;
		}
	}
	int ok = nct == 0 ||
		 count_edges(body, nbv, btris, nbt, cloth, ctris, nct, &tree, orient, tol, &r);
	sim_bvh_free(&tree);
	free(nrm);
	if (!ok)
		return drape_error_setf(err, DRAPE_ENOMEM, "body through: out of memory for the edges");
	*out = r;
	return DRAPE_OK;
}
