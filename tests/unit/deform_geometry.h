/*
 * Geometry for the deforming-collider tests (test_sim_deform*.c), written
 * apart from the solver's: meshes (a box, orientation by signed volume),
 * exact point-to-mesh distances, inside-ness by ray parity over a grid of
 * the triangles, the deepest cloth vertex inside a body, a state hash and a
 * finiteness check. Header-only like sim_fixtures.h: each test program is
 * one object file.
 */
#ifndef DRAPE_TEST_DEFORM_GEOMETRY_H
#define DRAPE_TEST_DEFORM_GEOMETRY_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"

/* ---- Meshes ----------------------------------------------------------------- */

typedef struct mesh {
	float *v;
	uint32_t *t;
	uint32_t nv, nt;
} mesh;

static inline void mesh_free(mesh *m)
{
	free(m->v);
	free(m->t);
	memset(m, 0, sizeof *m);
}

/* Reads the 'v' and 'f' lines of an OBJ file (polygons as triangle fans),
 * scaled. -1 when the file is missing or malformed. */
static inline int mesh_read_obj(const char *path, float scale, mesh *out)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	uint32_t capv = 1024, capt = 1024;
	mesh m = {malloc(capv * 3 * sizeof(float)), malloc(capt * 3 * sizeof(uint32_t)), 0, 0};
	char line[1024];
	int bad = 0;
	while (!bad && fgets(line, sizeof line, f)) {
		if (line[0] == 'v' && line[1] == ' ') {
			float x, y, z;
			if (sscanf(line + 2, "%f %f %f", &x, &y, &z) != 3) {
				bad = 1;
				break;
			}
			if (m.nv == capv)
				m.v = realloc(m.v, (capv *= 2) * 3 * sizeof(float));
			m.v[m.nv * 3] = x * scale, m.v[m.nv * 3 + 1] = y * scale, m.v[m.nv * 3 + 2] = z * scale;
			m.nv++;
		} else if (line[0] == 'f' && line[1] == ' ') {
			uint32_t idx[64], n = 0;
			char *s = line + 2;
			while (n < 64) {
				char *end;
				long i = strtol(s, &end, 10);
				if (end == s)
					break;
				idx[n++] = (uint32_t)(i < 0 ? (long)m.nv + i : i - 1);
				s = end;
				while (*s && *s != ' ' && *s != '\t' && *s != '\n')
					s++;
			}
			for (uint32_t j = 1; j + 1 < n; j++) {
				if (m.nt == capt)
					m.t = realloc(m.t, (capt *= 2) * 3 * sizeof(uint32_t));
				m.t[m.nt * 3] = idx[0], m.t[m.nt * 3 + 1] = idx[j], m.t[m.nt * 3 + 2] = idx[j + 1];
				m.nt++;
			}
		}
	}
	fclose(f);
	for (uint32_t i = 0; !bad && i < m.nt * 3; i++)
		bad = m.t[i] >= m.nv;
	if (bad || m.nt == 0) {
		mesh_free(&m);
		return -1;
	}
	*out = m;
	return 0;
}

/* The 8 corners and 12 outward triangles of the box c +- h. */
static inline void box_mesh(mesh *m, const double c[3], const double h[3])
{
	m->nv = 8;
	m->nt = 12;
	m->v = malloc(24 * sizeof *m->v);
	m->t = malloc(36 * sizeof *m->t);
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 3; k++)
			m->v[3 * i + k] = (float)(c[k] + ((i >> k) & 1 ? h[k] : -h[k]));
	/* Corner i has bit k set for +h along axis k. */
	static const uint32_t q[6][4] = {{0, 2, 6, 4}, {1, 5, 7, 3}, {0, 4, 5, 1},
					 {2, 3, 7, 6}, {0, 1, 3, 2}, {4, 6, 7, 5}};
	for (int f = 0; f < 6; f++) {
		uint32_t *t = &m->t[6 * f];
		t[0] = q[f][0], t[1] = q[f][1], t[2] = q[f][2];
		t[3] = q[f][0], t[4] = q[f][2], t[5] = q[f][3];
	}
}

static inline double signed_volume(const float *v, const uint32_t *t, uint32_t nt)
{
	double s = 0.0;
	for (uint32_t i = 0; i < nt; i++) {
		const float *a = &v[3 * t[3 * i]], *b = &v[3 * t[3 * i + 1]], *c = &v[3 * t[3 * i + 2]];
		s += (double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
		     (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
		     (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0]);
	}
	return s / 6.0;
}

/* Flips every triangle when the mesh's volume is negative (inward). */
static inline void orient_outward(mesh *m)
{
	if (signed_volume(m->v, m->t, m->nt) < 0)
		for (uint32_t i = 0; i < m->nt; i++) {
			uint32_t s = m->t[3 * i + 1];
			m->t[3 * i + 1] = m->t[3 * i + 2];
			m->t[3 * i + 2] = s;
		}
}

/* ---- Geometry checks, written apart from the solver's ------------------------ */

/* Distance from q to triangle (a, b, c): the projection onto the plane when
 * it falls inside, else the nearest of the three edges. */
static inline double seg_dist(const double q[3], const double a[3], const double b[3], double out[3])
{
	double ab[3], aq[3], l2 = 0, t = 0;
	for (int k = 0; k < 3; k++) {
		ab[k] = b[k] - a[k];
		aq[k] = q[k] - a[k];
		l2 += ab[k] * ab[k];
		t += ab[k] * aq[k];
	}
	t = l2 > 0 ? fmin(fmax(t / l2, 0.0), 1.0) : 0.0;
	double d = 0;
	for (int k = 0; k < 3; k++) {
		out[k] = a[k] + t * ab[k];
		d += (q[k] - out[k]) * (q[k] - out[k]);
	}
	return sqrt(d);
}

static inline void cross3(const double a[3], const double b[3], double o[3])
{
	o[0] = a[1] * b[2] - a[2] * b[1];
	o[1] = a[2] * b[0] - a[0] * b[2];
	o[2] = a[0] * b[1] - a[1] * b[0];
}

static inline double dot3(const double a[3], const double b[3])
{
	return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Distance and nearest point (and its barycentric coordinates when the
 * projection is inside) of q to a triangle. */
static inline double tri_dist(const double q[3], const double A[3], const double B[3], const double C[3],
			      double near[3], double bary[3])
{
	double e1[3], e2[3], n[3], aq[3];
	for (int k = 0; k < 3; k++) {
		e1[k] = B[k] - A[k];
		e2[k] = C[k] - A[k];
		aq[k] = q[k] - A[k];
	}
	cross3(e1, e2, n);
	double nn = dot3(n, n);
	if (nn > 0) {
		/* Barycentric coordinates of the projection by areas. */
		double c1[3], c2[3];
		cross3(aq, e2, c1);
		cross3(e1, aq, c2);
		double v = dot3(c1, n) / nn, w = dot3(c2, n) / nn, u = 1 - v - w;
		if (u >= 0 && v >= 0 && w >= 0) {
			for (int k = 0; k < 3; k++)
				near[k] = u * A[k] + v * B[k] + w * C[k];
			bary[0] = u, bary[1] = v, bary[2] = w;
			double d = dot3(aq, n) / sqrt(nn);
			return fabs(d);
		}
	}
	double p[3], best = INFINITY;
	memcpy(near, A, 3 * sizeof *near); /* kept only if every edge distance is NaN */
	const double *E[3][2] = {{A, B}, {B, C}, {C, A}};
	for (int e = 0; e < 3; e++) {
		double d = seg_dist(q, E[e][0], E[e][1], p);
		if (d < best) {
			best = d;
			memcpy(near, p, sizeof p);
		}
	}
	bary[0] = bary[1] = bary[2] = -1;
	return best;
}

static inline void vget(const float *v, uint32_t i, double o[3])
{
	o[0] = v[3 * (size_t)i], o[1] = v[3 * (size_t)i + 1], o[2] = v[3 * (size_t)i + 2];
}

static inline double mesh_dist(const float *v, const uint32_t *t, uint32_t nt, const double q[3])
{
	double best = INFINITY, near[3], b[3], A[3], B[3], C[3];
	for (uint32_t i = 0; i < nt; i++) {
		vget(v, t[3 * i], A), vget(v, t[3 * i + 1], B), vget(v, t[3 * i + 2], C);
		double d = tri_dist(q, A, B, C, near, b);
		best = d < best ? d : best;
	}
	return best;
}

/*
 * Inside a closed mesh by ray parity: a ray from q along +x, crossings
 * counted where the triangle's projection onto the yz plane contains q's.
 * q is nudged by amounts far below any tolerance checked here so that the
 * ray never grazes an edge or a vertex exactly. A uniform grid of the
 * triangles' yz boxes keeps the walking body's 27,000 triangles cheap.
 */
typedef struct parity_grid {
	double y0, z0, cell;
	int ny, nz;
	uint32_t *start, *items;
	const float *v;
	const uint32_t *t;
} parity_grid;

static inline void grid_build(parity_grid *g, const float *v, const uint32_t *t, uint32_t nv, uint32_t nt,
		       double cell)
{
	double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
	for (uint32_t i = 0; i < nv; i++)
		for (int k = 0; k < 2; k++) {
			lo[k] = fmin(lo[k], v[3 * i + 1 + k]);
			hi[k] = fmax(hi[k], v[3 * i + 1 + k]);
		}
	g->y0 = lo[0], g->z0 = lo[1], g->cell = cell, g->v = v, g->t = t;
	g->ny = (int)((hi[0] - lo[0]) / cell) + 1;
	g->nz = (int)((hi[1] - lo[1]) / cell) + 1;
	size_t nc = (size_t)g->ny * g->nz;
	g->start = calloc(nc + 1, sizeof *g->start);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < nt; i++) {
			double a[2] = {INFINITY, INFINITY}, b[2] = {-INFINITY, -INFINITY};
			for (int c = 0; c < 3; c++)
				for (int k = 0; k < 2; k++) {
					a[k] = fmin(a[k], v[3 * t[3 * i + c] + 1 + k]);
					b[k] = fmax(b[k], v[3 * t[3 * i + c] + 1 + k]);
				}
			int y0 = (int)((a[0] - g->y0) / cell), y1 = (int)((b[0] - g->y0) / cell);
			int z0 = (int)((a[1] - g->z0) / cell), z1 = (int)((b[1] - g->z0) / cell);
			for (int y = y0; y <= y1; y++)
				for (int z = z0; z <= z1; z++) {
					size_t c = (size_t)y * g->nz + z;
					if (pass == 0)
						g->start[c + 1]++;
					else
						g->items[g->start[c]++] = i;
				}
		}
		if (pass == 0) {
			for (size_t c = 0; c < nc; c++)
				g->start[c + 1] += g->start[c];
			g->items = malloc((g->start[nc] ? g->start[nc] : 1) * sizeof *g->items);
		} else {
			for (size_t c = nc; c > 0; c--)
				g->start[c] = g->start[c - 1];
			g->start[0] = 0;
		}
	}
}

static inline void parity_free(parity_grid *g)
{
	free(g->start);
	free(g->items);
}

static inline int grid_inside(const parity_grid *g, const double q0[3])
{
	double q[3] = {q0[0], q0[1] + 3.1e-9, q0[2] + 1.7e-9};
	int y = (int)floor((q[1] - g->y0) / g->cell), z = (int)floor((q[2] - g->z0) / g->cell);
	if (y < 0 || z < 0 || y >= g->ny || z >= g->nz)
		return 0;
	size_t c = (size_t)y * g->nz + z;
	int crossings = 0;
	for (uint32_t k = g->start[c]; k < g->start[c + 1]; k++) {
		const uint32_t *t = &g->t[3 * g->items[k]];
		double P[3][3];
		for (int j = 0; j < 3; j++)
			vget(g->v, t[j], P[j]);
		/* 2D barycentric of (y, z) in the projected triangle. */
		double d = (P[1][1] - P[0][1]) * (P[2][2] - P[0][2]) - (P[2][1] - P[0][1]) * (P[1][2] - P[0][2]);
		if (d == 0)
			continue;
		double v = ((q[1] - P[0][1]) * (P[2][2] - P[0][2]) - (P[2][1] - P[0][1]) * (q[2] - P[0][2])) / d;
		double w = ((P[1][1] - P[0][1]) * (q[2] - P[0][2]) - (q[1] - P[0][1]) * (P[1][2] - P[0][2])) / d;
		double u = 1 - v - w;
		if (u < 0 || v < 0 || w < 0)
			continue;
		double x = u * P[0][0] + v * P[1][0] + w * P[2][0];
		if (x > q[0])
			crossings++;
	}
	return crossings & 1;
}

/* The deepest cloth vertex inside the mesh (0 when none is inside), and how
 * many are inside. */
static inline double deepest_inside(const float *cloth, uint32_t n, const float *v, const uint32_t *t,
			     uint32_t nv, uint32_t nt, uint32_t *inside)
{
	parity_grid g;
	grid_build(&g, v, t, nv, nt, 0.01);
	double deep = 0.0;
	*inside = 0;
	for (uint32_t i = 0; i < n; i++) {
		double q[3];
		vget(cloth, i, q);
		if (!grid_inside(&g, q))
			continue;
		(*inside)++;
		double d = mesh_dist(v, t, nt, q);
		deep = d > deep ? d : deep;
	}
	parity_free(&g);
	return deep;
}

static inline uint64_t state_hash(const drape_sim *sim)
{
	uint32_t n = drape_sim_vertex_count(sim), frame;
	float *x = malloc((size_t)n * 12), *v = malloc((size_t)n * 12);
	drape_sim_get_state(sim, x, v, &frame);
	uint64_t h = 1469598103934665603ull;
	const unsigned char *b[2] = {(const unsigned char *)x, (const unsigned char *)v};
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < (size_t)n * 12; i++)
			h = (h ^ b[k][i]) * 1099511628211ull;
	h ^= frame;
	free(x);
	free(v);
	return h;
}

static inline int all_finite(const float *x, uint32_t n)
{
	for (uint32_t i = 0; i < 3 * n; i++)
		if (!isfinite(x[i]))
			return 0;
	return 1;
}

/* ---- The demo garment's scene ---------------------------------------------- */

/* d for the shirt as examples/garment.json and the bench's garment rows
 * run it: cotton (with the preset's substeps and iterations), 24 fps,
 * 3 mm, self collision; on pool. 0, or -1 (err says why). */
static inline int garment_desc(drape_sim_desc *d, const mesh *shirt, drape_pool *pool, drape_error *err)
{
	drape_sim_desc_default(d);
	if (drape_material_preset("cotton", &d->params, err) != DRAPE_OK)
		return -1;
	d->positions = shirt->v;
	d->vertex_count = shirt->nv;
	d->triangles = shirt->t;
	d->triangle_count = shirt->nt;
	d->pool = pool;
	d->params.fps = 24.0f;
	d->params.thickness = 0.003f;
	d->params.self_collision = 1;
	d->params.self_thickness = 0.003f;
	d->params.self_friction = 0.2f;
	return 0;
}

/* c for that scene's body: still, a mesh collider at 5 mm voxels, friction
 * 0.5 (static 0.7). */
static inline void garment_body(drape_collider_desc *c, const mesh *body)
{
	drape_collider_desc_default(c);
	c->shape = DRAPE_SHAPE_MESH;
	c->vertices = body->v;
	c->vertex_count = body->nv;
	c->triangles = body->t;
	c->triangle_count = body->nt;
	c->voxel_size = 0.005f;
	c->friction = 0.5f;
	c->static_friction = 0.7f;
}

#endif
