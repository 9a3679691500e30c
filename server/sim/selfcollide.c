/*
 * Self-collision of the cloth: broad phase by a dense spatial hash built once
 * per substep, vertex-triangle and edge-edge candidate pairs collected once
 * per substep and projected every iteration, and a continuous (swept) guard
 * at the end of the substep. See selfcollide.h for the call order.
 *
 * Broad phase (Müller, Ten Minute Physics "spatial hashing"; selfhash.h):
 * every triangle is inserted into each cell that its box swept from x to p
 * and grown by the reach (1.5 times the thickness, see SELF_REACH_FACTOR)
 * overlaps. The cell size is the mean edge length of the rest mesh plus the
 * reach, about the size of a grown box, so a box covers a few cells and a
 * query a few. Each triangle then queries the cells of its own swept box
 * once, on behalf of the vertices and edges it owns (see collect), and meets
 * the triangles, and their edges, found there. Box-overlapping pairs then
 * pass a cheap distance bound at x before they become candidates.
 *
 * Memory: every buffer is sized at create. The candidate arrays and the hash
 * entry array may grow, by doubling (amortized), only inside
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

#include "server/sim/selfhash.h"

#include <math.h>
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

/* Rounds after which the guard stops resolving crossings one by one and
 * sends every free vertex back to x (revert_all). Each round after the
 * partial ones returns at least one more vertex to x or carries one, so this
 * is only reached when hundreds of vertices form one chain of crossings. */
#define SELF_GUARD_MAX_ROUNDS 256

/* Contact tolerance of the swept test, relative to the pair's size. */
#define SELF_GUARD_TOL 1e-4f

typedef struct self_vt {
	uint32_t v, t;
	int32_t side;     /* +1 or -1: side of the triangle's plane at x */
	uint16_t trusted; /* 1 when the vertex was over the triangle at x */
	uint16_t rest_close; /* 1 for mesh neighbours closer than the thickness at rest */
} self_vt;

typedef struct self_ee {
	uint32_t a, b;    /* edge indices */
	int32_t side;     /* sign of the line-line separation at x; 0 unknown */
	uint16_t trusted; /* 1 when the lines' closest points lay on both segments at x */
	uint16_t rest_close;
} self_ee;

struct sim_self {
	uint32_t nv, nt, ne;
	uint32_t *tris;      /* 3 per triangle */
	uint8_t *tri_skip;   /* 1 for a zero-area triangle at x0 */
	uint32_t *edges;     /* 2 per unique edge, smaller index first */
	uint32_t *tri_edges; /* 3 per triangle: indices into edges */
	float base_cell;     /* mean rest edge length */
	float *tri_box;      /* 6 per triangle: swept box grown by the reach */
	float *edge_boxes;   /* 6 per edge: swept box, per substep */
	sim_hash hash;
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

void sim_self_destroy(sim_self *s)
{
	if (s == NULL)
		return;
	free(s->tris);
	free(s->tri_skip);
	free(s->edges);
	free(s->tri_edges);
	free(s->tri_box);
	free(s->edge_boxes);
	sim_hash_free(&s->hash);
	free(s->tri_stamp);
	free(s->tri_own);
	free(s->orphans);
	free(s->vt);
	free(s->ee);
	free(s->p_pred);
	free(s->x0);
	free(s->adj_start);
	free(s->adj);
	free(s->dirty);
	free(s->dirty_next);
	free(s->carried);
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
	    s->dirty_next == NULL || s->carried == NULL || he == NULL ||
	    sim_hash_init(&s->hash, triangle_count) != DRAPE_OK) {
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
	s->edge_boxes = malloc(6 * (size_t)ne * sizeof *s->edge_boxes + 1);
	if (s->edges == NULL || s->tri_own == NULL || s->edge_boxes == NULL) {
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

	/* Candidate capacity: a few pairs per vertex and per edge covers a
	 * folded cloth; more is grown in begin_substep. */
	s->vt_cap = vertex_count < 64u ? 256u : (vertex_count > (1u << 28) ? 1u << 30 : 4u * vertex_count);
	s->ee_cap = ne < 64u ? 256u : (ne > (1u << 28) ? 1u << 30 : 4u * ne);
	s->vt = malloc((size_t)s->vt_cap * sizeof *s->vt);
	s->ee = malloc((size_t)s->ee_cap * sizeof *s->ee);
	if (s->vt == NULL || s->ee == NULL) {
		sim_self_destroy(s);
		return drape_error_setf(err, DRAPE_ENOMEM, "self-collision: out of memory");
	}
	s->stamp = 0;
	*out = s;
	return DRAPE_OK;
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

static inline void edge_box(const sim_self *s, const sim_vec4 *x, const sim_vec4 *p, uint32_t e,
			    float *box)
{
	uint32_t a = s->edges[2 * (size_t)e], b = s->edges[2 * (size_t)e + 1];
	float o[6];
	swept_box(x[a], p[a], box);
	swept_box(x[b], p[b], o);
	box_union(box, o);
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

static int grow_vt(sim_self *s)
{
	uint32_t cap = s->vt_cap > UINT32_MAX / 2 ? UINT32_MAX : s->vt_cap * 2;
	if (cap == s->vt_cap)
		return -1;
	self_vt *n = realloc(s->vt, (size_t)cap * sizeof *n);
	if (n == NULL)
		return -1;
	s->vt = n;
	s->vt_cap = cap;
	return 0;
}

static int grow_ee(sim_self *s)
{
	uint32_t cap = s->ee_cap > UINT32_MAX / 2 ? UINT32_MAX : s->ee_cap * 2;
	if (cap == s->ee_cap)
		return -1;
	self_ee *n = realloc(s->ee, (size_t)cap * sizeof *n);
	if (n == NULL)
		return -1;
	s->ee = n;
	s->ee_cap = cap;
	return 0;
}

/*
 * The reach of the candidate search is 1.5 times the thickness: one
 * thickness for the contact itself and half of one as slack for what the
 * iterations (stretch, obstacles, other contacts) move p away from its
 * prediction. A pair is kept when its swept boxes come within the reach and
 * when a Lipschitz bound allows it: the distance between a point and a
 * triangle (or two segments) shrinks no faster than the relative motion of
 * the two sides (vt_motion_bound, ee_motion_bound), so a pair farther apart
 * at x than that bound plus the reach cannot come within the thickness while
 * no vertex strays more than a quarter thickness from its prediction, nor
 * touch while none strays half the reach. sim_self_end_substep checks the
 * latter and collects again when it fails. (A factor of 2 was measured to
 * cost 2.5 times the pairs on a crumpled sheet for no test it helped.)
 */
#define SELF_REACH_FACTOR 1.5f

/* Largest motion x -> p of vertex v. */
static inline float motion(const sim_vec4 *x, const sim_vec4 *p, uint32_t v)
{
	return v3_len(v3_sub(v3_of4(p[v]), v3_of4(x[v])));
}

/* Motion of vertex v relative to vertex o. */
static inline float rel_motion_len(const sim_vec4 *x, const sim_vec4 *p, uint32_t o, uint32_t v)
{
	sim_v3 d = v3_sub(v3_sub(v3_of4(p[v]), v3_of4(x[v])), v3_sub(v3_of4(p[o]), v3_of4(x[o])));
	return v3_len(d);
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
	return maxf(rel_motion_len(x, p, idx[0], idx[1]),
		    maxf(rel_motion_len(x, p, idx[0], idx[2]), rel_motion_len(x, p, idx[0], idx[3])));
}

/* (An earlier form, |a1 - a0| + max |b - a0| in relative motions, is
 * larger and grows by four times the stray, so a pair it dropped could touch
 * after a stray the end-of-substep check let pass.) */
static inline float ee_motion_bound(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	return maxf(maxf(rel_motion_len(x, p, idx[0], idx[2]), rel_motion_len(x, p, idx[0], idx[3])),
		    maxf(rel_motion_len(x, p, idx[1], idx[2]), rel_motion_len(x, p, idx[1], idx[3])));
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

/* Considers triangle t as a candidate for vertex v (its box already known). */
static inline void vt_consider(sim_self *s, const sim_vec4 *x, const sim_vec4 *p, uint32_t v,
			       const float *vbox, uint32_t t, float reach)
{
	const uint32_t *tv = &s->tris[3 * (size_t)t];
	if (tv[0] == v || tv[1] == v || tv[2] == v)
		return;
	if (!sim_box_overlap(vbox, &s->tri_box[6 * (size_t)t]))
		return;
	if (p[v].w == 0.0f && p[tv[0]].w == 0.0f && p[tv[1]].w == 0.0f && p[tv[2]].w == 0.0f)
		return;
	sim_v3 q = v3_of4(x[v]), a = v3_of4(x[tv[0]]), b = v3_of4(x[tv[1]]), c = v3_of4(x[tv[2]]);
	sim_v3 n;
	if (!tri_degenerate(a, b, c, &n)) {
		const uint32_t idx[4] = {v, tv[0], tv[1], tv[2]};
		float M = vt_motion_bound(x, p, idx);
		/* Cheap lower bounds first: the distance to the triangle's plane,
		 * and the distance to corner a less the longest reach of the
		 * triangle from a. */
		float inv = 1.0f / v3_len(n);
		sim_v3 qa = v3_sub(q, a);
		if (fabsf(v3_dot(qa, n)) * inv - M > reach)
			return;
		float ra = maxf(v3_len(v3_sub(b, a)), v3_len(v3_sub(c, a)));
		if (v3_len(qa) - ra - M > reach)
			return;
		if (point_triangle_distance(q, a, b, c) - M > reach)
			return;
	}
	if (s->vt_count == s->vt_cap && grow_vt(s) != 0)
		return;
	self_vt *r = &s->vt[s->vt_count++];
	r->v = v;
	r->t = t;
	uint32_t trusted;
	vt_side(q, a, b, c, v3_of4(p[v]), v3_of4(p[tv[0]]), v3_of4(p[tv[1]]), v3_of4(p[tv[2]]),
		&r->side, &trusted);
	r->trusted = (uint16_t)trusted;
	/* Hashed triangles are not degenerate at rest, so the distance is
	 * defined. */
	r->rest_close = point_triangle_distance(s->x0[v], s->x0[tv[0]], s->x0[tv[1]],
						s->x0[tv[2]]) < s->thickness &&
			neighbours(s, &v, 1, tv, 3);
}

/* Considers edge j as a partner of edge i, whose swept box grown by the
 * reach is ibox. */
static inline void ee_consider(sim_self *s, const sim_vec4 *x, const sim_vec4 *p, uint32_t i,
			       const float *ibox, uint32_t j, float reach)
{
	const uint32_t a0 = s->edges[2 * (size_t)i], a1 = s->edges[2 * (size_t)i + 1];
	const uint32_t b0 = s->edges[2 * (size_t)j], b1 = s->edges[2 * (size_t)j + 1];
	if (a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1)
		return;
	if (!sim_box_overlap(ibox, &s->edge_boxes[6 * (size_t)j]))
		return;
	if (p[a0].w == 0.0f && p[a1].w == 0.0f && p[b0].w == 0.0f && p[b1].w == 0.0f)
		return;
	sim_v3 xa0 = v3_of4(x[a0]), xa1 = v3_of4(x[a1]), xb0 = v3_of4(x[b0]), xb1 = v3_of4(x[b1]);
	const uint32_t idx[4] = {a0, a1, b0, b1};
	float M = ee_motion_bound(x, p, idx);
	/* A cheap lower bound first: each segment lies within half its length
	 * of its midpoint, so the segments are at least the midpoints'
	 * distance less both half lengths apart. Most box-overlapping pairs
	 * fail here without the closest-point computation. */
	sim_v3 dm = v3_sub(v3_add(xa0, xa1), v3_add(xb0, xb1));
	float bound = 0.5f * (v3_len(dm) - v3_len(v3_sub(xa1, xa0)) - v3_len(v3_sub(xb1, xb0)));
	if (bound - M > reach)
		return;
	/* The separation of the two lines bounds that of the segments too. */
	sim_v3 ea = v3_sub(xa1, xa0), eb = v3_sub(xb1, xb0), nl = v3_cross(ea, eb);
	float nl2 = v3_dot(nl, nl);
	if (nl2 > 0.0f && fabsf(v3_dot(v3_sub(xa0, xb0), nl)) / sqrtf(nl2) - M > reach)
		return;
	if (segment_distance(xa0, xa1, xb0, xb1) - M > reach)
		return;
	if (s->ee_count == s->ee_cap && grow_ee(s) != 0)
		return;
	self_ee *r = &s->ee[s->ee_count++];
	r->a = i;
	r->b = j;
	uint32_t trusted;
	ee_side(xa0, xa1, xb0, xb1, v3_of4(p[a0]), v3_of4(p[a1]), v3_of4(p[b0]), v3_of4(p[b1]),
		&r->side, &trusted);
	r->trusted = (uint16_t)trusted;
	r->rest_close = segment_distance(s->x0[a0], s->x0[a1], s->x0[b0], s->x0[b1]) < s->thickness &&
			neighbours(s, &idx[0], 2, &idx[2], 2);
}

/* Visits the hashed triangles whose cells overlap box cb (and the big list);
 * `body` sees the triangle index as `t_`. A query box covering too many
 * cells scans every triangle instead. */
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
						uint32_t t_ = (h)->entries[e_];            \
						body;                                      \
					}                                                  \
				}                                                          \
		for (uint32_t k_ = 0; k_ < (h)->big_count; k_++) {                         \
			uint32_t t_ = (h)->big[k_];                                        \
			body;                                                              \
		}                                                                          \
	} while (0)

/* Builds the hash over swept triangle boxes grown by the reach and collects
 * the candidate pairs with their sides at x. */
static void collect(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach)
{
	const uint32_t nt = s->nt;
	float *restrict tb = s->tri_box;
	s->vt_count = 0;
	s->ee_count = 0;
	for (uint32_t t = 0; t < nt; t++) {
		float *b = &tb[6 * (size_t)t];
		if (s->tri_skip[t]) {
			b[0] = b[1] = b[2] = INFINITY;
			b[3] = b[4] = b[5] = -INFINITY;
			continue;
		}
		const uint32_t *tv = &s->tris[3 * (size_t)t];
		float o[6];
		swept_box(x[tv[0]], p[tv[0]], b);
		swept_box(x[tv[1]], p[tv[1]], o);
		box_union(b, o);
		swept_box(x[tv[2]], p[tv[2]], o);
		box_union(b, o);
		box_grow(b, reach);
	}
	for (uint32_t e = 0; e < s->ne; e++)
		edge_box(s, x, p, e, &s->edge_boxes[6 * (size_t)e]);
	/* Cells about the size of a grown triangle box: each box then covers
	 * a handful of cells and a vertex's query one or two. */
	float cell = maxf(s->base_cell + reach, 2.0f * reach);
	if (sim_hash_build(&s->hash, tb, nt, cell) != 0) {
		/* No memory for the entries: no pairs this substep. */
		return;
	}
	const sim_hash *h = &s->hash;

	/*
	 * One query per triangle A with its own swept box (ungrown) against the
	 * grown boxes of the hashed triangles B. Every vertex and edge is owned
	 * by one triangle and its box lies inside the owner's, so each
	 * vertex-triangle pair (v owned by A, triangle B) is met exactly once,
	 * and each edge pair (i owned by A, j owned by B) twice, from A and from
	 * B, of which the one with i < j is kept. This visits the hash half as
	 * often as one query per vertex and one per edge would.
	 */
	for (uint32_t a = 0; a < nt; a++) {
		const uint8_t own = s->tri_own[a];
		if (own == 0)
			continue;
		const uint32_t *tv = &s->tris[3 * (size_t)a];
		const uint32_t *te = &s->tri_edges[3 * (size_t)a];
		float ab[6], vb[3][6], eb[3][6];
		for (int k = 0; k < 3; k++)
			swept_box(x[tv[k]], p[tv[k]], vb[k]);
		memcpy(ab, vb[0], sizeof ab);
		box_union(ab, vb[1]);
		box_union(ab, vb[2]);
		for (int k = 0; k < 3; k++)
			if (own & (8u << k)) {
				memcpy(eb[k], &s->edge_boxes[6 * (size_t)te[k]], sizeof eb[k]);
				box_grow(eb[k], reach);
			}
		uint32_t stamp = next_stamp(s);
		SELF_FOR_TRIANGLES(s, h, ab, {
			if (s->tri_stamp[t_] != stamp && t_ != a) {
				s->tri_stamp[t_] = stamp;
				if (sim_box_overlap(ab, &tb[6 * (size_t)t_])) {
					const uint32_t *tbe = &s->tri_edges[3 * (size_t)t_];
					const uint8_t bown = s->tri_own[t_];
					for (int k = 0; k < 3; k++) {
						if (own & (1u << k))
							vt_consider(s, x, p, tv[k], vb[k], t_, reach);
						if (!(own & (8u << k)))
							continue;
						for (int m = 0; m < 3; m++)
							if ((bown & (8u << m)) && tbe[m] > te[k])
								ee_consider(s, x, p, te[k], eb[k], tbe[m],
									    reach);
					}
				}
			}
		});
	}
	/* Vertices of zero-area triangles only: a query of their own. */
	for (uint32_t k = 0; k < s->orphan_count; k++) {
		uint32_t v = s->orphans[k];
		float vb[6];
		swept_box(x[v], p[v], vb);
		uint32_t stamp = next_stamp(s);
		SELF_FOR_TRIANGLES(s, h, vb, {
			if (s->tri_stamp[t_] != stamp) {
				s->tri_stamp[t_] = stamp;
				vt_consider(s, x, p, v, vb, t_, reach);
			}
		});
	}
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

static void project_vt(const sim_self *s, const self_vt *r, sim_vec4 *restrict p,
		       const sim_vec4 *restrict x, float thickness, float friction)
{
	if (r->rest_close)
		return;
	const uint32_t *tv = &s->tris[3 * (size_t)r->t];
	uint32_t idx[4] = {r->v, tv[0], tv[1], tv[2]};
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

static void project_ee(const sim_self *s, const self_ee *r, sim_vec4 *restrict p,
		       const sim_vec4 *restrict x, float thickness, float friction)
{
	if (r->rest_close)
		return;
	uint32_t idx[4] = {s->edges[2 * (size_t)r->a], s->edges[2 * (size_t)r->a + 1],
			   s->edges[2 * (size_t)r->b], s->edges[2 * (size_t)r->b + 1]};
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

void sim_self_project(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x, float thickness,
		      float friction)
{
	if (!(thickness >= 0.0f))
		thickness = 0.0f;
	if (!(friction > 0.0f))
		friction = 0.0f;
	if (friction > 1.0f)
		friction = 1.0f;
	const self_vt *vt = s->vt;
	for (uint32_t i = 0, n = s->vt_count; i < n; i++)
		project_vt(s, &vt[i], p, x, thickness, friction);
	const self_ee *ee = s->ee;
	for (uint32_t i = 0, n = s->ee_count; i < n; i++)
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
 * Stops a pair found crossing at time toi: its free vertices go back to
 * fraction backoff of toi. When that moves nothing (a vertex that moved less
 * than a float step, so that the fraction rounds to p), the pair goes back
 * to x instead, and when the free vertices are at x already, the crossing is
 * the immovable side's and they are carried (carry). A crossing that moves
 * no vertex would end the guard's rounds with the crossing left in place.
 */
static int stop_pair(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		     const uint32_t idx[4], double toi, float backoff)
{
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
 * straight paths x -> p; a pair that touches at time toi (or ends touching)
 * has its free vertices moved back to x + tau (p - x), tau = 0.8 toi in the
 * first two rounds and tau = 0 (the start positions, which were
 * intersection-free) after that. A pair that still crosses with its free
 * vertices at x was crossed by a moving pinned vertex, and they are carried
 * along with it instead (carry). Moved vertices are re-verified in the next
 * round. Once tau is 0 every round that finds a crossing returns at least
 * one more vertex to x or carries one, so the loop ends; if it has not
 * settled after SELF_GUARD_MAX_ROUNDS, every free vertex goes back to x at
 * once. Only a crossing made by pinned vertices alone (two animated pins
 * through each other) cannot be undone here and is left.
 *
 * Momentum: this is not a momentum-conserving projection; it is an
 * inelastic stop of the involved vertices for the rest of the substep (their
 * velocity after v = (p - x) / dt is scaled by tau), like the rigid impact
 * zones of Provot 1997 / Bridson et al. 2002 but without the averaging. It
 * only acts where the projections failed, which the tests show is rare.
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
		collect(s, x, p, reach);
	}

	memset(s->dirty, 1, nv);
	memset(s->carried, 0, nv);
	for (int round = 0;; round++) {
		memset(s->dirty_next, 0, nv);
		int changed = 0;
		float backoff = round < SELF_GUARD_PARTIAL_ROUNDS ? (float)SELF_GUARD_BACKOFF : 0.0f;
		for (uint32_t i = 0; i < s->vt_count; i++) {
			const self_vt *r = &s->vt[i];
			const uint32_t *tv = &s->tris[3 * (size_t)r->t];
			uint32_t idx[4] = {r->v, tv[0], tv[1], tv[2]};
			if (!(s->dirty[idx[0]] | s->dirty[idx[1]] | s->dirty[idx[2]] |
			      s->dirty[idx[3]]))
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
