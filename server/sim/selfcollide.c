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
 * rest_close for what happens between neighbours). With a thickness per
 * vertex (selfthick.c) each pair keeps its own (selfproject.c), and the
 * `thickness` the calls receive is the largest, which every bound below
 * (the reach, the hash, the kept list, the guard's stray test) is sized
 * from: a pair's own is never more, so what they prove for the largest
 * holds for it.
 *
 * The parts, one file each (their shared internals in selfcollide_impl.h):
 * this file creates and destroys (chunks, adjacency, buffers); selfhash.c
 * is the spatial hash; selfcandidates.c collects the pairs once per substep;
 * selfcull.c proves chunk pairs of a smooth patch empty so that the search
 * skips them; selfproject.c pushes them apart every iteration; selfguard.c
 * is the continuous guard at the end of the substep.
 */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
	free(s->vh);
	free(s->th);
	free(s->eh);
	free(s->adj_start);
	free(s->adj);
	free(s->join_start);
	free(s->join);
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
	free(s->reuse_x);
	free(s->reuse_vt);
	free(s->reuse_ee);
	free(s->p_end);
	self_cull_free(s);
	self_tangle_free(s);
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
	s->tangle_fill = 1;
	s->tangle_rings = SELF_TANGLE_RINGS;
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
	s->reuse_x = malloc(nv * sizeof *s->reuse_x + 1);
	s->p_end = malloc(nv * sizeof *s->p_end + 1);
	self_half_edge *he = malloc(3 * nt * sizeof *he + 1);
	if (s->tris == NULL || s->tri_skip == NULL || s->tri_edges == NULL || s->tri_box == NULL ||
	    s->tri_stamp == NULL || s->p_pred == NULL || s->x0 == NULL || s->dirty == NULL ||
	    s->dirty_next == NULL || s->carried == NULL || s->reuse_x == NULL || s->p_end == NULL ||
	    he == NULL) {
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
	if (build_chunk_members(s) != 0 || self_cull_build(s) != 0) {
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


/* Room for at least `need` records in *arr of capacity *cap: doubled
 * (from 256), amortized. Returns -1 when that fails, leaving it as it was. */
int self_reserve(void **arr, uint32_t *cap, size_t size, uint64_t need)
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

void sim_self_drop_orphans(sim_self *s, const uint32_t *vertices, uint32_t count)
{
	/* Both lists are increasing: one merge pass. */
	uint32_t kept = 0, k = 0;
	for (uint32_t i = 0; i < s->orphan_count; i++) {
		uint32_t v = s->orphans[i];
		while (k < count && vertices[k] < v)
			k++;
		if (k < count && vertices[k] == v)
			continue;
		s->orphans[kept++] = v;
	}
	s->orphan_count = kept;
}

void sim_self_set_objects(sim_self *s, const uint32_t *obj, const uint8_t *pass, uint32_t count)
{
	s->obj = obj;
	s->obj_pass = pass;
	s->obj_count = count;
}

drape_err sim_self_set_joins(sim_self *s, const uint32_t *pairs, uint32_t count, drape_error *err)
{
	uint32_t *start = NULL, *join = NULL;
	if (count > 0) {
		start = calloc((size_t)s->nv + 1, sizeof *start);
		join = malloc(2 * (size_t)count * sizeof *join);
		if (start == NULL || join == NULL) {
			free(start);
			free(join);
			return drape_error_setf(err, DRAPE_ENOMEM,
						"self-collision: cannot allocate %u stitch joins", count);
		}
		for (uint32_t i = 0; i < 2 * count; i++)
			start[pairs[i]]++;
		uint32_t run = 0;
		for (uint32_t v = 0; v <= s->nv; v++) {
			uint32_t c = v < s->nv ? start[v] : 0;
			start[v] = run + c;
			run += c;
		}
		for (uint32_t i = count; i-- > 0;) {
			uint32_t a = pairs[2 * i], b = pairs[2 * i + 1];
			join[--start[a]] = b;
			join[--start[b]] = a;
		}
	}
	free(s->join_start);
	free(s->join);
	s->join_start = start;
	s->join = join;
	return DRAPE_OK;
}
