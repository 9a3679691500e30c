/* The exact signed distance to a closed mesh on a bricked grid (sdfband.h). */
#include "server/sim/sdfband.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline double dot3(const double a[3], const double b[3])
{
	return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void sub3(double r[3], const double a[3], const double b[3])
{
	r[0] = a[0] - b[0], r[1] = a[1] - b[1], r[2] = a[2] - b[2];
}

static inline void cross3(double r[3], const double a[3], const double b[3])
{
	r[0] = a[1] * b[2] - a[2] * b[1];
	r[1] = a[2] * b[0] - a[0] * b[2];
	r[2] = a[0] * b[1] - a[1] * b[0];
}

/* The nearest point of segment a-b to p; t in [0, 1] along it. */
static double point_segment(const double p[3], const double a[3], const double b[3], double *t, double q[3])
{
	double ab[3], ap[3];
	sub3(ab, b, a);
	sub3(ap, p, a);
	double l = dot3(ab, ab), s = l > 0 ? dot3(ap, ab) / l : 0;
	s = s < 0 ? 0 : s > 1 ? 1 : s;
	for (int k = 0; k < 3; k++)
		q[k] = a[k] + s * ab[k];
	double d[3];
	sub3(d, p, q);
	*t = s;
	return sqrt(dot3(d, d));
}

/*
 * The nearest point by the Voronoi regions of the triangle's features: the
 * dot products of p - vertex with the two edge vectors place p against each
 * vertex's and each edge's region; what is left projects onto the face.
 * A degenerate triangle (no face region) is the nearest of its edges.
 */
double sim_sdfband_point_triangle(const double p[3], const double a[3], const double b[3],
				  const double c[3], int *feature, double q[3])
{
	double ab[3], ac[3], ap[3], bp[3], cp[3], d[3];
	sub3(ab, b, a);
	sub3(ac, c, a);
	sub3(ap, p, a);
	const double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
	if (d1 <= 0 && d2 <= 0) {
		*feature = 1;
		memcpy(q, a, sizeof(double) * 3);
		goto out;
	}
	sub3(bp, p, b);
	const double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
	if (d3 >= 0 && d4 <= d3) {
		*feature = 2;
		memcpy(q, b, sizeof(double) * 3);
		goto out;
	}
	const double vc = d1 * d4 - d3 * d2;
	if (vc <= 0 && d1 >= 0 && d3 <= 0 && d1 - d3 > 0) {
		const double v = d1 / (d1 - d3);
		*feature = 4;
		for (int k = 0; k < 3; k++)
			q[k] = a[k] + v * ab[k];
		goto out;
	}
	sub3(cp, p, c);
	const double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
	if (d6 >= 0 && d5 <= d6) {
		*feature = 3;
		memcpy(q, c, sizeof(double) * 3);
		goto out;
	}
	const double vb = d5 * d2 - d1 * d6;
	if (vb <= 0 && d2 >= 0 && d6 <= 0 && d2 - d6 > 0) {
		const double w = d2 / (d2 - d6);
		*feature = 6; /* edge 2 runs c -> a */
		for (int k = 0; k < 3; k++)
			q[k] = a[k] + w * ac[k];
		goto out;
	}
	const double va = d3 * d6 - d5 * d4;
	if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0 && (d4 - d3) + (d5 - d6) > 0) {
		const double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
		*feature = 5;
		for (int k = 0; k < 3; k++)
			q[k] = b[k] + w * (c[k] - b[k]);
		goto out;
	}
	const double sum = va + vb + vc;
	if (sum > 0) {
		const double v = vb / sum, w = vc / sum;
		*feature = 0;
		for (int k = 0; k < 3; k++)
			q[k] = a[k] + v * ab[k] + w * ac[k];
		goto out;
	}
	/* Degenerate: the nearest edge, its end points as vertices. */
	{
		const double *e[3][2] = {{a, b}, {b, c}, {c, a}};
		double best = INFINITY;
		for (int k = 0; k < 3; k++) {
			double t, r[3];
			double l = point_segment(p, e[k][0], e[k][1], &t, r);
			if (l < best) {
				best = l;
				memcpy(q, r, sizeof r);
				*feature = t <= 0 ? 1 + k : t >= 1 ? 1 + (k + 1) % 3 : 4 + k;
			}
		}
		return best;
	}
out:
	sub3(d, p, q);
	return sqrt(dot3(d, d));
}

void sim_sdfband_free(sim_sdfband *b)
{
	free(b->pos);
	free(b->tri);
	free(b->fn);
	free(b->en);
	free(b->vn);
	free(b->sphere);
	free(b->slab_start);
	free(b->slab_tri);
	free(b->row_k);
	free(b->btab);
	free(b->bricks);
	free(b->list);
	free(b->old);
	free(b->count);
	memset(b, 0, sizeof *b);
}

typedef struct weld_rec {
	float x, y, z;
	uint32_t i;
} weld_rec;

static int weld_cmp(const void *pa, const void *pb)
{
	const weld_rec *a = pa, *b = pb;
	if (a->x != b->x)
		return a->x < b->x ? -1 : 1;
	if (a->y != b->y)
		return a->y < b->y ? -1 : 1;
	if (a->z != b->z)
		return a->z < b->z ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* A half-edge: the undirected edge's key, and triangle * 3 + slot. */
typedef struct half_rec {
	uint64_t key;
	uint32_t he;
} half_rec;

static int half_cmp(const void *pa, const void *pb)
{
	const half_rec *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->he < b->he ? -1 : a->he > b->he;
}

static int fail(sim_sdfband *b, char *why, size_t n, const char *msg)
{
	snprintf(why, n, "%s", msg);
	sim_sdfband_free(b);
	return -1;
}

/* Brick (x, y, z) of the table, made if it is not there yet. Serial. */
static sim_sdfband_brick *brick_alloc(sim_sdfband *b, int32_t x, int32_t y, int32_t z)
{
	const size_t cell = ((size_t)x * (size_t)b->leaf_dim[1] + (size_t)y) * (size_t)b->leaf_dim[2] + (size_t)z;
	if (b->btab[cell] == 0) {
		sim_sdfband_brick *k = b->bricks + b->nbricks;
		k->c[0] = x, k->c[1] = y, k->c[2] = z;
		b->btab[cell] = ++b->nbricks;
	}
	return b->bricks + b->btab[cell] - 1;
}

/* Triangle t's box grown by the shell, in voxels from org (both ends in). */
static void tri_box(const sim_sdfband *b, uint32_t t, int32_t a0[3], int32_t a1[3])
{
	double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (int c = 0; c < 3; c++)
		for (int k = 0; k < 3; k++) {
			lo[k] = fmin(lo[k], b->pos[3 * (size_t)b->tri[t * 3 + c] + k]);
			hi[k] = fmax(hi[k], b->pos[3 * (size_t)b->tri[t * 3 + c] + k]);
		}
	for (int k = 0; k < 3; k++) {
		a0[k] = (int32_t)ceil(lo[k] / b->voxel - SIM_SDFBAND_SHELL) - b->org[k];
		a1[k] = (int32_t)floor(hi[k] / b->voxel + SIM_SDFBAND_SHELL) - b->org[k];
	}
}

int sim_sdfband_prepare(sim_sdfband *b, const float *vertices, uint32_t vertex_count,
			const uint32_t *triangles, uint32_t triangle_count, double voxel, int band_voxels,
			uint64_t max_dense, char *why, size_t why_size)
{
	memset(b, 0, sizeof *b);
	char msg[200];
	/* Weld: vertices at the same position are one (exporters split them
	 * along UV seams; those seams are not holes). */
	weld_rec *w = malloc(sizeof *w * (vertex_count ? vertex_count : 1));
	uint32_t *canon = malloc(sizeof *canon * (vertex_count ? vertex_count : 1));
	if (w == NULL || canon == NULL) {
		free(w);
		free(canon);
		return fail(b, why, why_size, "out of memory");
	}
	for (uint32_t i = 0; i < vertex_count; i++)
		w[i] = (weld_rec){vertices[i * 3], vertices[i * 3 + 1], vertices[i * 3 + 2], i};
	qsort(w, vertex_count, sizeof *w, weld_cmp);
	uint32_t nv = 0;
	for (uint32_t i = 0; i < vertex_count; i++) {
		if (i == 0 || w[i].x != w[i - 1].x || w[i].y != w[i - 1].y || w[i].z != w[i - 1].z)
			nv++;
		canon[w[i].i] = nv - 1;
	}
	b->pos = malloc(sizeof(double) * 3 * nv);
	b->tri = malloc(sizeof(uint32_t) * 3 * (triangle_count ? triangle_count : 1));
	if (b->pos == NULL || b->tri == NULL) {
		free(w);
		free(canon);
		return fail(b, why, why_size, "out of memory");
	}
	for (uint32_t i = 0; i < vertex_count; i++) {
		double *p = b->pos + 3 * (size_t)canon[i];
		p[0] = vertices[i * 3], p[1] = vertices[i * 3 + 1], p[2] = vertices[i * 3 + 2];
	}
	free(w);
	b->nv = nv;
	/* Triangles with two corners at one position have no area and only
	 * repeat an edge of their neighbours: dropped. */
	uint32_t nt = 0;
	for (uint32_t t = 0; t < triangle_count; t++) {
		uint32_t a = canon[triangles[t * 3]], c1 = canon[triangles[t * 3 + 1]], c2 = canon[triangles[t * 3 + 2]];
		if (a == c1 || c1 == c2 || c2 == a)
			continue;
		b->tri[nt * 3] = a, b->tri[nt * 3 + 1] = c1, b->tri[nt * 3 + 2] = c2;
		nt++;
	}
	free(canon);
	b->nt = nt;
	if (nt == 0)
		return fail(b, why, why_size, "no triangle with three distinct corners");

	/* Every edge must join exactly two triangles. */
	half_rec *h = malloc(sizeof *h * 3 * (size_t)nt);
	uint32_t *opp = malloc(sizeof *opp * 3 * (size_t)nt);
	int8_t *flip = malloc((size_t)nt);
	uint32_t *queue = malloc(sizeof *queue * (size_t)nt);
	uint32_t *piece = malloc(sizeof *piece * (size_t)nt);
	if (h == NULL || opp == NULL || flip == NULL || queue == NULL || piece == NULL)
		goto oom;
	for (uint32_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint64_t u = b->tri[t * 3 + k], v = b->tri[t * 3 + (k + 1) % 3];
			h[t * 3 + k] = (half_rec){u < v ? u << 32 | v : v << 32 | u, t * 3 + (uint32_t)k};
		}
	qsort(h, 3 * (size_t)nt, sizeof *h, half_cmp);
	for (size_t i = 0; i < 3 * (size_t)nt;) {
		size_t j = i;
		while (j < 3 * (size_t)nt && h[j].key == h[i].key)
			j++;
		if (j - i != 2) {
			snprintf(msg, sizeof msg, "the edge between welded vertices %u and %u has %zu triangles (open or non-manifold)",
				 (unsigned)(h[i].key >> 32), (unsigned)(h[i].key & 0xffffffffu), j - i);
			goto bad;
		}
		opp[h[i].he] = h[i + 1].he;
		opp[h[i + 1].he] = h[i].he;
		i = j;
	}
	free(h);
	h = NULL;

	/* Orient each connected piece consistently (breadth first over shared
	 * edges: two triangles agree when they run their shared edge in
	 * opposite directions), then outwards (positive enclosed volume). */
	memset(flip, -1, (size_t)nt);
	uint32_t pieces = 0;
	for (uint32_t s = 0; s < nt; s++) {
		if (flip[s] >= 0)
			continue;
		uint32_t head = 0, tail = 0;
		flip[s] = 0;
		queue[tail++] = s;
		while (head < tail) {
			uint32_t t = queue[head++];
			piece[t] = pieces;
			for (int k = 0; k < 3; k++) {
				uint32_t o = opp[t * 3 + k], t2 = o / 3, k2 = o % 3;
				/* Direction of each half-edge: whether it runs from the lower vertex. */
				int dir1 = b->tri[t * 3 + k] < b->tri[t * 3 + (k + 1) % 3];
				int dir2 = b->tri[t2 * 3 + k2] < b->tri[t2 * 3 + (k2 + 1) % 3];
				int8_t want = (int8_t)((dir1 ^ flip[t]) == dir2 ? 1 : 0);
				if (flip[t2] < 0) {
					flip[t2] = want;
					queue[tail++] = t2;
				} else if (flip[t2] != want) {
					snprintf(msg, sizeof msg, "a connected piece of the mesh is not orientable (triangle %u)",
						 (unsigned)t2);
					goto bad;
				}
			}
		}
		/* Six times the enclosed volume, with this orientation. */
		double vol = 0;
		for (uint32_t i = 0; i < tail; i++) {
			uint32_t t = queue[i];
			const double *a = b->pos + 3 * b->tri[t * 3], *c1 = b->pos + 3 * b->tri[t * 3 + 1],
				     *c2 = b->pos + 3 * b->tri[t * 3 + 2];
			double x[3];
			cross3(x, c1, c2);
			vol += flip[t] ? -dot3(a, x) : dot3(a, x);
		}
		if (!(vol != 0)) {
			snprintf(msg, sizeof msg, "a connected piece of the mesh encloses no volume");
			goto bad;
		}
		if (vol < 0)
			for (uint32_t i = 0; i < tail; i++)
				flip[queue[i]] ^= 1;
		pieces++;
	}
	b->pieces = pieces;
	free(queue);
	queue = NULL;
	free(piece);
	piece = NULL;
	for (uint32_t t = 0; t < nt; t++)
		if (flip[t]) {
			uint32_t x = b->tri[t * 3 + 1];
			b->tri[t * 3 + 1] = b->tri[t * 3 + 2];
			b->tri[t * 3 + 2] = x;
			b->flipped++;
		}

	/* Pseudo-normals (Baerentzen and Aanaes 2005, eq. 2 and the edge rule). */
	b->fn = calloc(3 * (size_t)nt, sizeof(double));
	b->en = calloc(9 * (size_t)nt, sizeof(double));
	b->vn = calloc(3 * (size_t)nv, sizeof(double));
	b->sphere = malloc(sizeof(double) * 4 * (size_t)nt);
	if (b->fn == NULL || b->en == NULL || b->vn == NULL || b->sphere == NULL)
		goto oom;
	for (uint32_t t = 0; t < nt; t++) {
		const double *v[3] = {b->pos + 3 * b->tri[t * 3], b->pos + 3 * b->tri[t * 3 + 1],
				      b->pos + 3 * b->tri[t * 3 + 2]};
		double e1[3], e2[3], n[3];
		sub3(e1, v[1], v[0]);
		sub3(e2, v[2], v[0]);
		cross3(n, e1, e2);
		double l = sqrt(dot3(n, n));
		for (int k = 0; k < 3; k++)
			b->fn[t * 3 + k] = l > 0 ? n[k] / l : 0;
		double *sp = b->sphere + 4 * (size_t)t, r2 = 0;
		for (int k = 0; k < 3; k++)
			sp[k] = (v[0][k] + v[1][k] + v[2][k]) / 3;
		for (int c = 0; c < 3; c++) {
			double d[3];
			sub3(d, v[c], sp);
			r2 = fmax(r2, dot3(d, d));
			/* The corner's angle weights the face normal at the vertex. */
			double a1[3], a2[3], x[3];
			sub3(a1, v[(c + 1) % 3], v[c]);
			sub3(a2, v[(c + 2) % 3], v[c]);
			cross3(x, a1, a2);
			double ang = atan2(sqrt(dot3(x, x)), dot3(a1, a2));
			for (int k = 0; k < 3; k++)
				b->vn[3 * (size_t)b->tri[t * 3 + c] + k] += ang * b->fn[t * 3 + k];
		}
		/* A margin so that rounding never prunes a triangle that ties. */
		sp[3] = sqrt(r2) * (1 + 1e-9) + 1e-12;
	}
	/* Edge slot k of triangle t was slot 2 - k before a flip (the flip
	 * swapped corners 1 and 2, reversing every edge). */
	for (uint32_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t o = opp[t * 3 + k], t2 = o / 3;
			int slot = flip[t] ? 2 - k : k;
			for (int c = 0; c < 3; c++)
				b->en[9 * (size_t)t + 3 * slot + c] = b->fn[t * 3 + c] + b->fn[t2 * 3 + c];
		}
	free(opp);
	opp = NULL;
	free(flip);
	flip = NULL;

	/* The grid: the mesh's box grown by the band and two voxels. */
	double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = 0; i < nv; i++)
		for (int k = 0; k < 3; k++) {
			lo[k] = fmin(lo[k], b->pos[i * 3 + k]);
			hi[k] = fmax(hi[k], b->pos[i * 3 + k]);
		}
	b->voxel = voxel;
	b->band = band_voxels * voxel;
	uint64_t dense = 1;
	for (int k = 0; k < 3; k++) {
		double l = floor(lo[k] / voxel) - band_voxels - 2, u = ceil(hi[k] / voxel) + band_voxels + 2;
		if (!(l > -1e9 && u < 1e9 && u - l < 1e6))
			return fail(b, why, why_size, "the mesh is too far from the origin for the grid");
		b->org[k] = (int32_t)l;
		b->dim[k] = (int32_t)(u - l) + 1;
		dense *= (uint64_t)b->dim[k];
	}
	if (dense > max_dense || dense > 0xffffffffull) {
		snprintf(msg, sizeof msg, "the dense grid of %llu voxels is over %llu",
			 (unsigned long long)dense, (unsigned long long)max_dense);
		return fail(b, why, why_size, msg);
	}
	b->slabs = (uint32_t)((b->dim[0] + SIM_SDFBAND_SLAB - 1) / SIM_SDFBAND_SLAB);
	b->slab_start = calloc((size_t)b->slabs + 1, sizeof(uint32_t));
	size_t cells = 1;
	for (int k = 0; k < 3; k++) {
		b->leaf_org[k] = b->org[k] & ~7;
		b->leaf_dim[k] = ((b->org[k] + b->dim[k] - 1) & ~7) / 8 - b->leaf_org[k] / 8 + 1;
		cells *= (size_t)b->leaf_dim[k];
	}
	b->btab = calloc(cells, sizeof(uint32_t));
	/* calloc: a brick's pages are touched (and zeroed) only when it is used. */
	b->bricks = calloc(cells, sizeof(sim_sdfband_brick));
	b->list = malloc(sizeof(uint32_t) * cells);
	b->old = malloc(sizeof(uint32_t) * cells);
	b->count = malloc(sizeof(uint32_t) * cells);
	b->row_k = malloc(sizeof(int32_t) * 2 * (size_t)b->dim[0] * (size_t)b->dim[1]);
	if (b->row_k != NULL)
		for (size_t r = 0; r < (size_t)b->dim[0] * (size_t)b->dim[1]; r++)
			b->row_k[2 * r] = INT32_MAX, b->row_k[2 * r + 1] = -1;
	if (b->row_k == NULL || b->btab == NULL || b->bricks == NULL || b->list == NULL || b->old == NULL ||
	    b->count == NULL || b->slab_start == NULL)
		goto oom;

	/* Each triangle's slabs, counted then listed (ascending triangle order per slab). */
	for (int pass = 0; pass < 2; pass++) {
		uint32_t *fill = NULL;
		if (pass == 1) {
			for (uint32_t s = 0; s < b->slabs; s++)
				b->slab_start[s + 1] += b->slab_start[s];
			b->slab_tri = malloc(sizeof(uint32_t) * (b->slab_start[b->slabs] ? b->slab_start[b->slabs] : 1));
			fill = malloc(sizeof(uint32_t) * b->slabs);
			if (b->slab_tri == NULL || fill == NULL) {
				free(fill);
				goto oom;
			}
			memcpy(fill, b->slab_start, sizeof(uint32_t) * b->slabs);
		}
		for (uint32_t t = 0; t < nt; t++) {
			double x0 = INFINITY, x1 = -INFINITY;
			for (int c = 0; c < 3; c++) {
				x0 = fmin(x0, b->pos[3 * b->tri[t * 3 + c]]);
				x1 = fmax(x1, b->pos[3 * b->tri[t * 3 + c]]);
			}
			int32_t i0 = (int32_t)ceil(x0 / voxel - SIM_SDFBAND_SHELL) - b->org[0];
			int32_t i1 = (int32_t)floor(x1 / voxel + SIM_SDFBAND_SHELL) - b->org[0];
			for (int32_t s = i0 / SIM_SDFBAND_SLAB; s <= i1 / SIM_SDFBAND_SLAB; s++) {
				if (pass == 0)
					b->slab_start[s + 1]++;
				else
					b->slab_tri[fill[s]++] = t;
			}
		}
		free(fill);
	}
	/* The bricks of every triangle's grown box, in triangle order. */
	for (uint32_t t = 0; t < nt; t++) {
		int32_t a0[3], a1[3];
		tri_box(b, t, a0, a1);
		for (int k = 0; k < 3; k++) {
			a0[k] = (a0[k] + b->org[k] - b->leaf_org[k]) >> 3;
			a1[k] = (a1[k] + b->org[k] - b->leaf_org[k]) >> 3;
		}
		for (int32_t x = a0[0]; x <= a1[0]; x++)
			for (int32_t y = a0[1]; y <= a1[1]; y++)
				for (int32_t z = a0[2]; z <= a1[2]; z++)
					brick_alloc(b, x, y, z);
	}
	return 0;
oom:
	snprintf(msg, sizeof msg, "out of memory");
bad:
	free(h);
	free(opp);
	free(flip);
	free(queue);
	free(piece);
	return fail(b, why, why_size, msg);
}

/* The signed distance from p to triangle t, given its nearest point and feature. */
static double signed_from(const sim_sdfband *b, const double p[3], uint32_t t, double d, int feature,
			  const double q[3])
{
	const double *n;
	if (feature == 0)
		n = b->fn + 3 * (size_t)t;
	else if (feature <= 3)
		n = b->vn + 3 * (size_t)b->tri[t * 3 + feature - 1];
	else
		n = b->en + 9 * (size_t)t + 3 * (feature - 4);
	double r[3];
	sub3(r, p, q);
	return dot3(r, n) < 0 ? -d : d;
}

static inline void voxel_point(const sim_sdfband *b, int32_t i, int32_t j, int32_t k, double p[3])
{
	p[0] = (double)(b->org[0] + i) * b->voxel;
	p[1] = (double)(b->org[1] + j) * b->voxel;
	p[2] = (double)(b->org[2] + k) * b->voxel;
}

static inline double tri_distance(const sim_sdfband *b, const double p[3], uint32_t t, int *feature,
				  double q[3])
{
	const uint32_t *v = b->tri + 3 * (size_t)t;
	return sim_sdfband_point_triangle(p, b->pos + 3 * (size_t)v[0], b->pos + 3 * (size_t)v[1],
					  b->pos + 3 * (size_t)v[2], feature, q);
}

/*
 * Whether triangle t is certainly farther from p than best: its plane's
 * distance |n . (p - a)| is a lower bound on the distance to the triangle
 * (0 for a degenerate one, whose normal is 0). The bound must exceed best
 * by margin, far more than the rounding of either distance (and of a
 * distance to float, which the shell stores), so a triangle it drops could
 * neither win nor tie: the field is the one without the test. It drops
 * most of the voxels of a triangle's box that its sphere keeps, those off
 * its plane.
 */
static inline int beyond_plane(const sim_sdfband *b, const double p[3], uint32_t t, double best, double margin)
{
	const double *n = b->fn + 3 * (size_t)t, *a = b->pos + 3 * (size_t)b->tri[3 * (size_t)t];
	const double h = (p[0] - a[0]) * n[0] + (p[1] - a[1]) * n[1] + (p[2] - a[2]) * n[2];
	return fabs(h) > best + margin;
}

/* The brick holding voxel (i, j, k) (from org) and the voxel's index in it;
 * NULL when no brick is there. */
static inline sim_sdfband_brick *voxel_brick(const sim_sdfband *b, int32_t i, int32_t j, int32_t k, uint32_t *at)
{
	const int32_t u = i + b->org[0] - b->leaf_org[0], v = j + b->org[1] - b->leaf_org[1],
		      w = k + b->org[2] - b->leaf_org[2];
	const uint32_t n = b->btab[((size_t)(u >> 3) * (size_t)b->leaf_dim[1] + (size_t)(v >> 3)) *
					   (size_t)b->leaf_dim[2] +
				   (size_t)(w >> 3)];
	*at = (uint32_t)(((u & 7) * 8 + (v & 7)) * 8 + (w & 7));
	return n ? b->bricks + n - 1 : NULL;
}

void sim_sdfband_shell(sim_sdfband *b, uint32_t s0, uint32_t s1)
{
	const double vx = b->voxel, shell = SIM_SDFBAND_SHELL * vx, margin = 1e-6 * vx;
	const size_t d1 = (size_t)b->dim[1];
	for (uint32_t s = s0; s < s1; s++) {
		const int32_t si0 = (int32_t)s * SIM_SDFBAND_SLAB;
		const int32_t si1 = si0 + SIM_SDFBAND_SLAB < b->dim[0] ? si0 + SIM_SDFBAND_SLAB : b->dim[0];
		for (uint32_t n = b->slab_start[s]; n < b->slab_start[s + 1]; n++) {
			const uint32_t t = b->slab_tri[n];
			int32_t a0[3], a1[3];
			tri_box(b, t, a0, a1);
			if (a0[0] < si0)
				a0[0] = si0;
			if (a1[0] > si1 - 1)
				a1[0] = si1 - 1;
			const double *sp = b->sphere + 4 * (size_t)t;
			for (int32_t i = a0[0]; i <= a1[0]; i++)
				for (int32_t j = a0[1]; j <= a1[1]; j++) {
					/* Rows of this slab only: no other task writes them
					 * (nor their voxels: a brick's other rows may be
					 * another slab's). prepare made every brick here. */
					int32_t *rk = b->row_k + 2 * ((size_t)i * d1 + (size_t)j);
					rk[0] = a0[2] < rk[0] ? a0[2] : rk[0];
					rk[1] = a1[2] > rk[1] ? a1[2] : rk[1];
					sim_sdfband_brick *bk = NULL;
					uint32_t at = 0;
					for (int32_t k = a0[2]; k <= a1[2]; k++, at++) {
						/* The brick changes every 8 voxels along the row. */
						if (bk == NULL || (at & 7) == 0)
							bk = voxel_brick(b, i, j, k, &at);
						float *dv = bk->dist + at;
						int32_t *nv = bk->near + at;
						double p[3], c[3], q[3];
						voxel_point(b, i, j, k, p);
						/* Farther than the shell or the best so far by the
						 * bounding sphere: the triangle cannot win. */
						const double best = *nv <= 0 ? shell : fmin((double)*dv, shell);
						if (beyond_plane(b, p, t, best, margin))
							continue;
						sub3(c, p, sp);
						const double reach = best + sp[3];
						if (dot3(c, c) > reach * reach)
							continue;
						int f;
						const double d = tri_distance(b, p, t, &f, q);
						if (*nv <= 0 || d < (double)*dv || (d == (double)*dv && (int32_t)t + 1 < *nv)) {
							*dv = (float)d;
							*nv = (int32_t)t + 1;
						}
					}
				}
		}
		/* The slab is final: keep what is exact (within the shell), signed. */
		for (int32_t i = si0; i < si1; i++)
			for (int32_t j = 0; j < b->dim[1]; j++) {
				const int32_t *rk = b->row_k + 2 * ((size_t)i * d1 + (size_t)j);
				for (int32_t k = rk[0]; k <= rk[1]; k++) {
					uint32_t at;
					sim_sdfband_brick *bk = voxel_brick(b, i, j, k, &at);
					/* The row's range spans its triangles' boxes and
					 * the gaps between them, where no brick may be. */
					if (bk == NULL || bk->near[at] <= 0)
						continue;
					if ((double)bk->dist[at] > shell) {
						bk->near[at] = 0;
						continue;
					}
					double p[3], q[3];
					voxel_point(b, i, j, k, p);
					int f;
					const uint32_t t = (uint32_t)bk->near[at] - 1;
					const double d = tri_distance(b, p, t, &f, q);
					bk->dist[at] = (float)signed_from(b, p, t, d, f, q);
				}
			}
	}
}

/* Whether the layers grow on from a voxel of distance d: everywhere
 * inside, outside within the band. */
static inline int grows(const sim_sdfband *b, float d)
{
	return d < 0 || (double)d < b->band;
}

/* Masks of the voxels on a brick's faces, in a word (bit y * 8 + z). */
#define Z_LO 0x0101010101010101ull
#define Z_HI 0x8080808080808080ull
#define Y_LO 0x00000000000000ffull
#define Y_HI 0xff00000000000000ull

static inline sim_sdfband_brick *table_brick(const sim_sdfband *b, int32_t x, int32_t y, int32_t z)
{
	if (x < 0 || y < 0 || z < 0 || x >= b->leaf_dim[0] || y >= b->leaf_dim[1] || z >= b->leaf_dim[2])
		return NULL;
	const uint32_t n = b->btab[((size_t)x * (size_t)b->leaf_dim[1] + (size_t)y) * (size_t)b->leaf_dim[2] + (size_t)z];
	return n ? b->bricks + n - 1 : NULL;
}

void sim_sdfband_begin_layers(sim_sdfband *b)
{
	/* Known: the shell's voxels, all within a voxel of the surface, so all
	 * grow. The first plan lists every brick. */
	for (uint32_t n = 0; n < b->nbricks; n++) {
		sim_sdfband_brick *k = b->bricks + n;
		for (int x = 0; x < 8; x++) {
			uint64_t m = 0, g = 0;
			for (int l = 0; l < 64; l++) {
				const int v = x * 64 + l;
				if (k->near[v] > 0) {
					m |= 1ull << l;
					if (grows(b, k->dist[v]))
						g |= 1ull << l;
				}
			}
			k->known[x] = k->reach[x] = m;
			k->grow[x] = g;
		}
		b->list[n] = n;
	}
	b->nlist = b->nbricks;
	b->layers = 0;
}

uint32_t sim_sdfband_plan(sim_sdfband *b)
{
	const uint32_t stamp = ++b->layers;
	uint32_t *x = b->old;
	b->old = b->list;
	b->nold = b->nlist;
	b->list = x;
	b->nlist = 0;
	for (uint32_t r = 0; r < b->nold; r++) {
		sim_sdfband_brick *k = b->bricks + b->old[r];
		uint64_t any = 0, ylo = 0, yhi = 0, zlo = 0, zhi = 0;
		for (int w = 0; w < 8; w++) {
			k->known[w] |= k->front[w];
			k->front[w] = 0;
			any |= k->grow[w];
			ylo |= k->grow[w] & Y_LO, yhi |= k->grow[w] & Y_HI;
			zlo |= k->grow[w] & Z_LO, zhi |= k->grow[w] & Z_HI;
		}
		if (any == 0)
			continue;
		/* The brick itself and each neighbour its growing voxels touch. */
		const int spill[6] = {k->grow[0] != 0, k->grow[7] != 0, ylo != 0, yhi != 0, zlo != 0, zhi != 0};
		const int32_t c[3] = {k->c[0], k->c[1], k->c[2]};
		for (int f = -1; f < 6; f++) {
			int32_t d[3] = {c[0], c[1], c[2]};
			if (f >= 0) {
				if (!spill[f])
					continue;
				d[f / 2] += f % 2 ? 1 : -1;
				if (d[f / 2] < 0 || d[f / 2] >= b->leaf_dim[f / 2])
					continue;
			}
			/* The pool has room for every cell: k stays where it is. */
			sim_sdfband_brick *m = brick_alloc(b, d[0], d[1], d[2]);
			if (m->stamp != stamp) {
				m->stamp = stamp;
				b->list[b->nlist++] = (uint32_t)(m - b->bricks);
			}
		}
	}
	return b->nlist;
}

/* The voxels of a brick inside the box [0, dim) (all of them but at its edges). */
static void box_mask(const sim_sdfband *b, const sim_sdfband_brick *k, uint64_t m[8])
{
	int lo[3], hi[3];
	for (int a = 0; a < 3; a++) {
		const int32_t g0 = b->leaf_org[a] + 8 * k->c[a]; /* the brick's first voxel, global */
		lo[a] = b->org[a] - g0 > 0 ? b->org[a] - g0 : 0;
		hi[a] = b->org[a] + b->dim[a] - g0 < 8 ? b->org[a] + b->dim[a] - g0 : 8;
	}
	uint64_t row = 0, plane = 0;
	for (int z = lo[2]; z < hi[2]; z++)
		row |= 1ull << z;
	for (int y = lo[1]; y < hi[1]; y++)
		plane |= row << (8 * y);
	for (int x = 0; x < 8; x++)
		m[x] = x >= lo[0] && x < hi[0] ? plane : 0;
}

void sim_sdfband_front(sim_sdfband *b, uint32_t r0, uint32_t r1)
{
	static const uint64_t none[8];
	for (uint32_t r = r0; r < r1; r++) {
		sim_sdfband_brick *k = b->bricks + b->list[r];
		const int32_t *c = k->c;
		const sim_sdfband_brick *nb[6];
		for (int f = 0; f < 6; f++) {
			int32_t d[3] = {c[0], c[1], c[2]};
			d[f / 2] += f % 2 ? 1 : -1;
			nb[f] = table_brick(b, d[0], d[1], d[2]);
		}
		const uint64_t *g = k->grow, *gx0 = nb[0] ? nb[0]->grow : none, *gx1 = nb[1] ? nb[1]->grow : none,
			       *gy0 = nb[2] ? nb[2]->grow : none, *gy1 = nb[3] ? nb[3]->grow : none,
			       *gz0 = nb[4] ? nb[4]->grow : none, *gz1 = nb[5] ? nb[5]->grow : none;
		uint64_t box[8];
		const int edge = c[0] == 0 || c[1] == 0 || c[2] == 0 || c[0] == b->leaf_dim[0] - 1 ||
				 c[1] == b->leaf_dim[1] - 1 || c[2] == b->leaf_dim[2] - 1;
		if (edge)
			box_mask(b, k, box);
		uint32_t n = 0;
		for (int x = 0; x < 8; x++) {
			/* The face neighbours of the growing voxels: along x the
			 * next words, along y 8 bits, along z 1 bit (not across a
			 * row), and the neighbour bricks' facing planes. */
			uint64_t d = (x > 0 ? g[x - 1] : gx0[7]) | (x < 7 ? g[x + 1] : gx1[0]);
			d |= (g[x] << 1 & ~Z_LO) | (g[x] >> 1 & ~Z_HI) | g[x] << 8 | g[x] >> 8;
			d |= (gy0[x] & Y_HI) >> 56 | (gy1[x] & Y_LO) << 56;
			d |= (gz0[x] & Z_HI) >> 7 | (gz1[x] & Z_LO) << 7;
			d &= ~k->reach[x];
			if (edge)
				d &= box[x];
			k->front[x] = d;
			k->reach[x] |= d;
			n += (uint32_t)__builtin_popcountll(d);
		}
		b->count[r] = n;
	}
}

uint32_t sim_sdfband_settle(sim_sdfband *b)
{
	/* The last layer's growing voxels are spent: the next layer holds
	 * all their unreached neighbours. */
	for (uint32_t r = 0; r < b->nold; r++)
		memset(b->bricks[b->old[r]].grow, 0, sizeof b->bricks[0].grow);
	uint32_t m = 0;
	for (uint32_t r = 0; r < b->nlist; r++)
		if (b->count[r] > 0)
			b->list[m++] = b->list[r];
	b->nlist = m;
	return m;
}

void sim_sdfband_layer(sim_sdfband *b, uint32_t r0, uint32_t r1)
{
	const double margin = 1e-6 * b->voxel;
	static const sim_sdfband_brick empty;
	/* The 18 neighbours (face and edge) in the dense builder's order. */
	int8_t off[18][3];
	int doff[18]; /* the same as offsets within a brick */
	int no = 0;
	for (int a = -1; a <= 1; a++)
		for (int e = -1; e <= 1; e++)
			for (int g = -1; g <= 1; g++)
				if ((a | e | g) != 0 && (a & e & g) == 0)
					doff[no] = (a * 8 + e) * 8 + g, off[no][0] = (int8_t)a, off[no][1] = (int8_t)e,
					off[no][2] = (int8_t)g, no++;
	for (uint32_t r = r0; r < r1; r++) {
		sim_sdfband_brick *k = b->bricks + b->list[r];
		/* The 27 bricks around this one (the empty brick where none). */
		const sim_sdfband_brick *nb[27];
		for (int a = 0; a < 27; a++) {
			const sim_sdfband_brick *m = table_brick(b, k->c[0] + a / 9 - 1, k->c[1] + a / 3 % 3 - 1, k->c[2] + a % 3 - 1);
			nb[a] = m ? m : &empty;
		}
		const int32_t g0[3] = {b->leaf_org[0] + 8 * k->c[0], b->leaf_org[1] + 8 * k->c[1], b->leaf_org[2] + 8 * k->c[2]};
		for (int x = 0; x < 8; x++)
			for (uint64_t bits = k->front[x]; bits != 0; bits &= bits - 1) {
				const int l = __builtin_ctzll(bits), y = l >> 3, z = l & 7;
				/* The nearest triangles of the known neighbours (this
				 * layer's own voxels are not known yet): the face
				 * neighbours alone miss the true nearest triangle often
				 * enough deep inside to be off by most of a voxel. */
				int32_t cand[18];
				int nc = 0;
				/* Inside the brick's 6^3 core every neighbour is in it. */
				const int core = x >= 1 && x <= 6 && y >= 1 && y <= 6 && z >= 1 && z <= 6;
				const int v = x * 64 + l;
				for (int m = 0; m < no; m++) {
					int32_t t;
					if (core) {
						const int n = v + doff[m];
						if (!(k->known[n >> 6] >> (n & 63) & 1))
							continue;
						t = k->near[n] - 1;
					} else {
						const int ux = x + off[m][0], uy = y + off[m][1], uz = z + off[m][2];
						const sim_sdfband_brick *q = nb[((ux >> 3) + 1) * 9 + ((uy >> 3) + 1) * 3 + (uz >> 3) + 1];
						const int lx = ux & 7, ly = uy & 7, lz = uz & 7;
						if (!(q->known[lx] >> (ly * 8 + lz) & 1))
							continue;
						t = q->near[(lx * 8 + ly) * 8 + lz] - 1;
					}
					int dup = 0;
					for (int u = 0; u < nc; u++)
						dup |= cand[u] == t;
					if (!dup)
						cand[nc++] = t;
				}
				const double p[3] = {(double)(g0[0] + x) * b->voxel, (double)(g0[1] + y) * b->voxel,
						     (double)(g0[2] + z) * b->voxel};
				double bq[3] = {0, 0, 0}, best = INFINITY;
				int32_t bt = -1;
				int bf = 0;
				for (int m = 0; m < nc; m++) {
					/* The bounding sphere rules most candidates out cheaply. */
					const double *sp = b->sphere + 4 * (size_t)cand[m];
					double c[3], q[3];
					sub3(c, p, sp);
					const double reach = best + sp[3];
					if (dot3(c, c) > reach * reach || beyond_plane(b, p, (uint32_t)cand[m], best, margin))
						continue;
					int fe;
					const double d = tri_distance(b, p, (uint32_t)cand[m], &fe, q);
					if (d < best || (d == best && cand[m] < bt)) {
						best = d, bt = cand[m], bf = fe;
						memcpy(bq, q, sizeof q);
					}
				}
				/* Every voxel of a layer has a known face neighbour in
				 * the one before. Its own value is read by no voxel of
				 * this layer (not known until the next plan). */
				const float dv = (float)signed_from(b, p, (uint32_t)bt, best, bf, bq);
				k->near[v] = bt + 1;
				k->dist[v] = dv;
				if (grows(b, dv))
					k->grow[x] |= 1ull << l;
			}
	}
}

void sim_sdfband_keep_mask(const sim_sdfband *b, uint32_t n, uint64_t mask[8])
{
	const sim_sdfband_brick *k = b->bricks + n;
	for (int x = 0; x < 8; x++) {
		uint64_t m = 0;
		for (uint64_t bits = k->known[x]; bits != 0; bits &= bits - 1) {
			const int l = __builtin_ctzll(bits);
			if ((double)k->dist[x * 64 + l] < b->band)
				m |= 1ull << l;
		}
		mask[x] = m;
	}
}
