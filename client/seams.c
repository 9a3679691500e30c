/*
 * Automatic seams (seams.h).
 *
 * The open edges are those of one triangle. Every vertex on one looks for
 * the nearest point on the other open edges within the seam distance,
 * skipping its own panel's edges within three seam distances of it along
 * the cloth (and its two-ring): its own rim, which is as close in space as
 * on the cloth. What it finds is across a seam: another panel,
 * or the far side of a cut in its own (a sleeve's tube, a dart). Searching
 * from both sides stitches a T-junction both ways, which is what closes a
 * seam whose sides have different vertex counts along their length.
 *
 * The search tests every open-edge vertex against every open edge: a
 * garment of 50,000 vertices has a few thousand of each, some 10^7 cheap
 * tests, well under the time to read its OBJ.
 */
#include "client/seams.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/unionfind.h"

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Parameter of the closest point to p on segment a-b, and its squared
 * distance, in double. */
static double closest_t(const float *p, const float *a, const float *b, double *d2)
{
	double ab[3], ap[3], l2 = 0.0, dot = 0.0;
	for (int k = 0; k < 3; k++) {
		ab[k] = (double)b[k] - a[k];
		ap[k] = (double)p[k] - a[k];
		l2 += ab[k] * ab[k];
		dot += ab[k] * ap[k];
	}
	double t = l2 > 0.0 ? dot / l2 : 0.0;
	t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
	double s = 0.0;
	for (int k = 0; k < 3; k++) {
		double e = ap[k] - t * ab[k];
		s += e * e;
	}
	*d2 = s;
	return t;
}

typedef struct seam_mesh {
	uint32_t nv;
	uint64_t *edges;        /* unique edges, (min << 32) | max */
	uint32_t ne;
	uint32_t *bnd;          /* open edges: 2 vertices each */
	uint32_t nb;
	uint32_t *adj_start, *adj; /* CSR over the unique edges */
	uint32_t *panel;        /* union-find root per vertex */
} seam_mesh;

static void seam_mesh_free(seam_mesh *m)
{
	free(m->edges);
	free(m->bnd);
	free(m->adj_start);
	free(m->adj);
	free(m->panel);
}

static drape_err seam_mesh_build(seam_mesh *m, uint32_t nv, const uint32_t *tri, uint32_t nt,
				 drape_error *err)
{
	memset(m, 0, sizeof *m);
	m->nv = nv;
	uint64_t *all = malloc(3 * (size_t)nt * sizeof *all + 1);
	m->panel = malloc((size_t)nv * sizeof *m->panel + 1);
	if (all == NULL || m->panel == NULL) {
		free(all);
		return drape_error_setf(err, DRAPE_ENOMEM, "seams: out of memory for %u triangles", nt);
	}
	for (uint32_t v = 0; v < nv; v++)
		m->panel[v] = v;
	for (uint32_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t a = tri[3 * (size_t)t + k], b = tri[3 * (size_t)t + (k + 1) % 3];
			uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
			all[3 * (size_t)t + k] = lo << 32 | hi;
			uf_union(m->panel, a, b);
		}
	qsort(all, 3 * (size_t)nt, sizeof *all, u64_cmp);
	m->edges = malloc(3 * (size_t)nt * sizeof *m->edges + 1);
	m->bnd = malloc(6 * (size_t)nt * sizeof *m->bnd + 1);
	m->adj_start = calloc((size_t)nv + 1, sizeof *m->adj_start);
	if (m->edges == NULL || m->bnd == NULL || m->adj_start == NULL) {
		free(all);
		seam_mesh_free(m);
		return drape_error_setf(err, DRAPE_ENOMEM, "seams: out of memory for the edges");
	}
	for (size_t i = 0; i < 3 * (size_t)nt;) {
		size_t j = i;
		while (j < 3 * (size_t)nt && all[j] == all[i])
			j++;
		uint32_t a = (uint32_t)(all[i] >> 32), b = (uint32_t)all[i];
		m->edges[m->ne++] = all[i];
		m->adj_start[a]++;
		m->adj_start[b]++;
		if (j - i == 1) {
			m->bnd[2 * (size_t)m->nb] = a;
			m->bnd[2 * (size_t)m->nb++ + 1] = b;
		}
		i = j;
	}
	free(all);
	m->adj = malloc(2 * (size_t)m->ne * sizeof *m->adj + 1);
	if (m->adj == NULL) {
		seam_mesh_free(m);
		return drape_error_setf(err, DRAPE_ENOMEM, "seams: out of memory for the adjacency");
	}
	uint32_t run = 0;
	for (uint32_t v = 0; v <= nv; v++) {
		uint32_t c = v < nv ? m->adj_start[v] : 0;
		m->adj_start[v] = run + c;
		run += c;
	}
	for (uint32_t e = 0; e < m->ne; e++) {
		uint32_t a = (uint32_t)(m->edges[e] >> 32), b = (uint32_t)m->edges[e];
		m->adj[--m->adj_start[a]] = b;
		m->adj[--m->adj_start[b]] = a;
	}
	for (uint32_t v = 0; v < nv; v++)
		m->panel[v] = uf_find(m->panel, v);
	return DRAPE_OK;
}

/* Scratch of the bounded geodesic search: distance and stamp per vertex,
 * and a binary min-heap of (distance, vertex) entries. */
typedef struct seam_entry {
	double d;
	uint32_t v;
} seam_entry;

typedef struct seam_near {
	double *dist;
	uint32_t *mark;
	seam_entry *heap;
	size_t heap_n, heap_cap;
} seam_near;

static void heap_push(seam_near *s, double d, uint32_t v)
{
	if (s->heap_n == s->heap_cap)
		return; /* cannot happen: see mark_near */
	size_t i = s->heap_n++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (s->heap[up].d <= d)
			break;
		s->heap[i] = s->heap[up];
		i = up;
	}
	s->heap[i] = (seam_entry){d, v};
}

static seam_entry heap_pop(seam_near *s)
{
	seam_entry top = s->heap[0], last = s->heap[--s->heap_n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= s->heap_n)
			break;
		if (c + 1 < s->heap_n && s->heap[c + 1].d < s->heap[c].d)
			c++;
		if (last.d <= s->heap[c].d)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->heap_n > 0)
		s->heap[i] = last;
	return top;
}

/*
 * Marks with `stamp` every vertex whose distance from v along the mesh's
 * edges is at most `radius`, and always v's two-ring: the part of its own
 * panel that is near v on the cloth itself. Its own rim there is as close
 * in space as on the cloth; the far side of a cut that closes on itself
 * is close in space only. (Dijkstra, stopped at the radius: a vertex is
 * pushed when its distance improves, which only a vertex popped at its
 * final distance does, once per directed edge; so at most 2 ne + 1
 * entries.)
 */
static void mark_near(const seam_mesh *m, const float *pos, uint32_t v, double radius,
		      seam_near *s, uint32_t stamp)
{
	s->heap_n = 0;
	s->mark[v] = stamp;
	s->dist[v] = 0.0;
	heap_push(s, 0.0, v);
	while (s->heap_n > 0) {
		seam_entry top = heap_pop(s);
		uint32_t a = top.v;
		if (top.d > s->dist[a])
			continue; /* stale: a was reached shorter since */
		const float *pa = &pos[3 * (size_t)a];
		for (uint32_t k = m->adj_start[a]; k < m->adj_start[a + 1]; k++) {
			uint32_t b = m->adj[k];
			const float *pb = &pos[3 * (size_t)b];
			double d = s->dist[a] + sqrt(pow((double)pb[0] - pa[0], 2) +
						     pow((double)pb[1] - pa[1], 2) +
						     pow((double)pb[2] - pa[2], 2));
			if (d > radius || (s->mark[b] == stamp && s->dist[b] <= d))
				continue;
			s->mark[b] = stamp;
			s->dist[b] = d;
			heap_push(s, d, b);
		}
	}
	for (uint32_t k = m->adj_start[v]; k < m->adj_start[v + 1]; k++) {
		uint32_t w = m->adj[k];
		s->mark[w] = stamp;
		for (uint32_t q = m->adj_start[w]; q < m->adj_start[w + 1]; q++)
			s->mark[m->adj[q]] = stamp;
	}
}

drape_err drape_seams_find(const float *pos, uint32_t nv, const uint32_t *tri, uint32_t nt,
			   float distance, float weld, drape_stitch **out, uint32_t *count,
			   drape_seams_report *report, drape_error *err)
{
	if (!(distance > 0.0f) || !isfinite(distance))
		return drape_error_setf(err, DRAPE_EINVAL, "seams.distance: %g must be finite and > 0",
					(double)distance);
	if (!(weld >= 0.0f) || !isfinite(weld))
		return drape_error_setf(err, DRAPE_EINVAL, "seams.weld: %g must be finite and >= 0",
					(double)weld);
	seam_mesh m;
	drape_err rc = seam_mesh_build(&m, nv, tri, nt, err);
	if (rc != DRAPE_OK)
		return rc;
	seam_near near = {0};
	near.dist = malloc((size_t)nv * sizeof *near.dist + 1);
	near.mark = calloc((size_t)nv + 1, sizeof *near.mark);
	/* Each push follows an improvement along one of the 2 ne directed
	 * edges, plus the start. */
	near.heap_cap = 2 * (size_t)m.ne + 1;
	near.heap = malloc(near.heap_cap * sizeof *near.heap);
	uint32_t *mark = near.mark;
	uint8_t *on_bnd = calloc((size_t)nv, 1);
	uint8_t *joined = calloc((size_t)nv, 1);
	uint64_t *welds = malloc((size_t)nv * sizeof *welds + 1);
	drape_stitch *st = malloc((size_t)nv * sizeof *st + 1);
	if (!near.dist || !mark || !near.heap || !on_bnd || !joined || !welds || !st) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "seams: out of memory for %u vertices", nv);
		goto done;
	}
	drape_seams_report rep;
	memset(&rep, 0, sizeof rep);
	for (uint32_t e = 0; e < m.nb; e++)
		on_bnd[m.bnd[2 * e]] = on_bnd[m.bnd[2 * e + 1]] = 1;
	for (uint32_t v = 0; v < nv; v++) {
		rep.boundary_vertices += on_bnd[v];
		rep.panels += m.panel[v] == v;
	}
	const double D2 = (double)distance * distance;
	uint32_t ns = 0, nw = 0;
	for (uint32_t v = 0; v < nv; v++) {
		if (!on_bnd[v])
			continue;
		/* Three times the seam distance along the cloth: a rim point
		 * that close on the cloth is the rim itself, not a seam. */
		mark_near(&m, pos, v, 3.0 * distance, &near, v + 1);
		const float *p = &pos[3 * (size_t)v];
		double best = D2;
		uint32_t be = UINT32_MAX;
		double bt = 0.0;
		for (uint32_t e = 0; e < m.nb; e++) {
			uint32_t a = m.bnd[2 * e], b = m.bnd[2 * e + 1];
			if (m.panel[a] == m.panel[v] && (mark[a] == v + 1 || mark[b] == v + 1))
				continue;
			const float *pa = &pos[3 * (size_t)a], *pb = &pos[3 * (size_t)b];
			/* Box reject before the projection. */
			int far = 0;
			for (int k = 0; k < 3 && !far; k++) {
				float lo = pa[k] < pb[k] ? pa[k] : pb[k], hi = pa[k] < pb[k] ? pb[k] : pa[k];
				far = p[k] < lo - distance || p[k] > hi + distance;
			}
			if (far)
				continue;
			double d2;
			double t = closest_t(p, pa, pb, &d2);
			if (d2 < best) {
				best = d2;
				be = e;
				bt = t;
			}
		}
		if (be == UINT32_MAX)
			continue;
		uint32_t a = m.bnd[2 * be], b = m.bnd[2 * be + 1];
		double da = 0.0, db = 0.0;
		for (int k = 0; k < 3; k++) {
			da += pow((double)pos[3 * (size_t)a + k] - p[k], 2);
			db += pow((double)pos[3 * (size_t)b + k] - p[k], 2);
		}
		const double W2 = (double)weld * weld;
		uint32_t w = UINT32_MAX;
		if (da <= W2 && da <= db)
			w = a;
		else if (db <= W2)
			w = b;
		if (w != UINT32_MAX) {
			uint64_t lo = v < w ? v : w, hi = v < w ? w : v;
			welds[nw++] = lo << 32 | hi;
		} else {
			st[ns++] = (drape_stitch){v, a, b, (float)bt};
			rep.edge_stitches++;
		}
		joined[v] = 1;
	}
	qsort(welds, nw, sizeof *welds, u64_cmp);
	for (uint32_t i = 0; i < nw; i++) {
		if (i > 0 && welds[i] == welds[i - 1])
			continue;
		uint32_t a = (uint32_t)(welds[i] >> 32), b = (uint32_t)welds[i];
		st[ns++] = (drape_stitch){a, b, b, 0.0f};
		joined[a] = joined[b] = 1;
		rep.welds++;
	}
	/* A seam side is a run of open edges whose two ends are both joined. */
	for (uint32_t v = 0; v < nv; v++)
		m.panel[v] = v;
	uint8_t *in_run = on_bnd; /* reused: 2 = on a joined run */
	for (uint32_t e = 0; e < m.nb; e++) {
		uint32_t a = m.bnd[2 * e], b = m.bnd[2 * e + 1];
		if (joined[a] && joined[b]) {
			uf_union(m.panel, a, b);
			in_run[a] = in_run[b] = 2;
		}
	}
	for (uint32_t v = 0; v < nv; v++)
		rep.seams += in_run[v] == 2 && uf_find(m.panel, v) == v;
	if (ns == 0) {
		free(st);
		st = NULL;
	}
	*out = st;
	*count = ns;
	st = NULL;
	if (report != NULL)
		*report = rep;
	rc = DRAPE_OK;
done:
	free(near.dist);
	free(near.heap);
	free(mark);
	free(on_bnd);
	free(joined);
	free(welds);
	free(st);
	seam_mesh_free(&m);
	return rc;
}
