/*
 * The body-feature candidates kept across substeps (bodykeep.h).
 *
 * bodypush.c searches, every substep, for the cloth triangles each body
 * vertex may meet: it hashes the triangles' boxes and, for each body
 * vertex that passes its filters (not in a hollow, sharp enough for the
 * cloth's largest face, inside the cloth's box), queries the hash with
 * the vertex's box over the substep and hands every triangle whose box
 * overlaps to consider(), the exact test that keeps a pair. On the demo
 * garment that search was about 40 % of the step's instructions while the
 * cloth, settling on a still body, moves by a fraction of a millimetre a
 * substep. Here the candidates are collected once with a margin m and
 * reused while the drift allows, giving consider() the very triangles, in
 * the very order, that the fresh search gives it.
 *
 * Notation, for a substep s: B_t(s), triangle t's box (6 floats: the
 * bounds of x and p of its three vertices, grown by grow = h_max + 1 mm,
 * bodypush.c); P_i(s), body vertex i's box (the bounds of q0 and q1).
 * The fresh search meets F_i(s) = { t : overlap(B_t(s), P_i(s)) } (the
 * hash only proposes a superset, sim_box_overlap decides; closed
 * intervals on every axis). At the collection substep c the list holds
 * K_i = { t : overlap(B_t(c), P_i(c) grown by m) }, the growth computed
 * in float.
 *
 * Claim: when, on every axis, every triangle's box bound moved by at most
 * d_c and every body vertex's box bound by at most d_b since c, with
 * d_c + d_b <= m/2, then F_i(s) is a subset of K_i.
 * Proof, on one axis (the others alike): t in F_i(s) means
 * B.lo(s) <= P.hi(s). Then B.lo(c) <= B.lo(s) + d_c <= P.hi(s) + d_c
 * <= P.hi(c) + d_b + d_c <= P.hi(c) + m/2 <= fl(P.hi(c) + m), the last
 * because rounding the sum loses at most half an ulp of it, under 4e-5 m
 * for coordinates under 1 km (sim_bodykeep_start refuses a cloth that
 * far out; a body vertex that far out is beyond every box and the
 * inequality holds by monotony: fl(P.hi + m) >= P.hi). Likewise
 * fl(P.lo(c) - m) <= B.hi(c). So B_t(c) overlaps P_i(c) grown by m and t
 * is in K_i. The drifts are measured in float (d = fl(|a - b|), summed
 * in float): each is within a relative 2^-24 of the exact value, which
 * the other half of the margin covers many times over.
 *
 * The triangle bounds are compared directly (box0 below), so d_c covers
 * the motion of x and p together; a still body (the same pose arrays and
 * version) has d_b = 0; a moving one is compared vertex by vertex with
 * the poses kept at c. The grow, the contact distances, the triangles and
 * the bodies must be the very same, else the list is collected again.
 *
 * The filtered list: at substep s, K_i is filtered with the same
 * sim_box_overlap(B_t(s), P_i(s)) on the same floats, which leaves
 * exactly F_i(s). The vertex filters are evaluated afresh at s, so the
 * list must hold every vertex they can pass within the frame: the hollows
 * and falls are fixed for a frame when the body is still or the only one
 * (bodypush.c measures a moving body's at the frame's first substep, and
 * every body's again when several take turns in its arrays); the sharp
 * test grows with the half longest edge, monotonically in float too, so
 * collecting with a bound 1.25 times the edge and collecting again when
 * the edge exceeds it covers it; the cloth box and the normal test leave
 * a vertex out only when the search would find nothing for it, or would
 * skip it, the same at s.
 *
 * The order: the query visits P_i's cells z, then y, then x; each cell's
 * slot in the order sim_hash_build filled it, which is descending object
 * index (it fills each slot backwards); a triangle already met is
 * skipped; then the big list (triangles over SIM_HASH_MAX_CELLS cells,
 * in no slot) in ascending index. So t is met at the first of P_i's
 * cells j whose slot equals the slot of one of t's own cells, and the
 * triangles first met in the same cell in descending index.
 * sim_bodykeep_order sorts by that key (j, then descending t; big ones
 * last, ascending), with the cell size bodypush.c computed for the
 * substep, by the same expressions, and the same slot function. consider()
 * then runs on the same triangles in the same order with the same inputs:
 * the same pairs, the same sides (a bitwise or) and so the same pinches
 * dropped. test_sim_bodykeep checks all of it pair by pair, and that a
 * budget past the proof's loses pairs.
 *
 * The list is dropped at each frame's start: the collection and so the
 * whole computation depend only on the frame's own state, and a run
 * resumed from a checkpoint at a frame boundary gives the same bits.
 */
#include "server/sim/bodykeep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/box.h"

/* The largest coordinate a collected cloth may have (the proof's rounding). */
#define BODYKEEP_FAR 1000.0f
/* The collection's half longest edge over the one at the start: the
 * longest edge may stretch by a quarter before the list is collected
 * again. */
#define BODYKEEP_EDGE_SLACK 1.25f

typedef struct kb_body {
	int present; /* a mesh body at collection */
	int moving, filtered;
	uint32_t nv;
	uint64_t version;
	const float *q0, *q1; /* the pose arrays of a still body */
	float h;
	uint32_t base;   /* its first vertex in first/count and (moving) q */
	uint32_t chunk0; /* its first chunk (SIM_BODY_CHUNK vertices each) */
} kb_body;

/* One chunk's candidates, every vertex's in turn (first/count index them). */
typedef struct kb_chunk {
	uint32_t *cand;
	uint32_t count, cap;
	uint32_t maxn; /* the most one vertex has */
	int failed;    /* out of memory in this collection */
} kb_chunk;

struct sim_bodykeep {
	float margin, budget;
	int live;
	const uint32_t *tris;
	uint32_t ntri;
	float grow, half_bound, thickness;
	float *box0; /* 6 per triangle, the boxes at collection */
	uint32_t box_cap;
	kb_body *body;
	uint32_t nbody, body_cap;
	uint32_t *first, *count; /* per body vertex: its range in its chunk's cand */
	float *q;                /* 6 per vertex of a moving body: q0, q1 at collection */
	uint32_t vert_cap;
	kb_chunk *chunk;
	uint32_t nchunk, chunk_cap;
	uint32_t uses;   /* substeps served by the list since its collection */
	uint32_t misses; /* lists in a row before it that served none */
	uint64_t collected, kept;
};

sim_bodykeep *sim_bodykeep_create(void)
{
	sim_bodykeep *k = calloc(1, sizeof *k);
	if (k == NULL)
		return NULL;
	k->margin = SIM_BODYKEEP_MARGIN;
	k->budget = 0.5f;
	return k;
}

void sim_bodykeep_free(sim_bodykeep *k)
{
	if (k == NULL)
		return;
	free(k->box0);
	free(k->body);
	free(k->first);
	free(k->count);
	free(k->q);
	for (uint32_t c = 0; c < k->chunk_cap; c++)
		free(k->chunk[c].cand);
	free(k->chunk);
	free(k);
}

void sim_bodykeep_configure(sim_bodykeep *k, float margin, float budget)
{
	k->margin = margin > 0.0f ? margin : 0.0f;
	k->budget = budget;
	k->live = 0;
}

float sim_bodykeep_margin(const sim_bodykeep *k)
{
	return k != NULL ? k->margin : 0.0f;
}

void sim_bodykeep_drop(sim_bodykeep *k)
{
	if (k != NULL)
		k->live = 0;
}

int sim_bodykeep_worth(const sim_bodykeep *k)
{
	return k != NULL && (k->uses > 0 || k->misses == 0);
}

int sim_bodykeep_outrun(const sim_bodykeep *k, const sim_collider_set *set)
{
	if (k == NULL)
		return 0;
	const float limit = k->budget * k->margin;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv) || !bv.moving)
			continue;
		const size_t n = 3 * (size_t)bv.nv;
		for (size_t j = 0; j < n; j++)
			if (fabsf(bv.q1[j] - bv.q0[j]) > limit)
				return 1;
	}
	return 0;
}

int sim_bodykeep_live(const sim_bodykeep *k)
{
	return k != NULL && k->live;
}

float sim_bodykeep_half_bound(const sim_bodykeep *k)
{
	return k->half_bound;
}

int sim_bodykeep_filtered(const sim_bodykeep *k, uint32_t ci)
{
	return ci < k->nbody && k->body[ci].filtered;
}

static int bits_equal(float a, float b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

/* The contact distance bodypush.c uses for body ci (its view's). */
static float body_h(float thickness, const sim_body_view *bv)
{
	return thickness + bv->thickness;
}

int sim_bodykeep_valid(sim_bodykeep *k, const sim_collider_set *set, const uint32_t *tris,
		       uint32_t ntri, const float *box, float grow, float half_max, float thickness)
{
	if (!k->live || k->tris != tris || k->ntri != ntri || !bits_equal(k->grow, grow) ||
	    !bits_equal(k->thickness, thickness) || !(half_max <= k->half_bound) ||
	    set->count != k->nbody)
		return 0;
	const float limit = k->budget * k->margin;
	/* The bodies first: the same ones, and the moving ones' drift. */
	float db = 0.0f;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		const kb_body *kb = &k->body[ci];
		sim_body_view bv;
		int present = sim_colliders_body(set, ci, &bv);
		if (present != kb->present)
			return 0;
		if (!present)
			continue;
		if (bv.nv != kb->nv || (bv.moving != 0) != kb->moving ||
		    !bits_equal(body_h(thickness, &bv), kb->h))
			return 0;
		if (!kb->moving) {
			if (bv.q0 != kb->q0 || bv.q1 != kb->q1 || bv.version != kb->version)
				return 0;
			continue;
		}
		const float *q = &k->q[6 * (size_t)kb->base];
		for (uint32_t i = 0; i < 3 * bv.nv; i++) {
			float d0 = fabsf(bv.q0[i] - q[2 * (size_t)i]);
			float d1 = fabsf(bv.q1[i] - q[2 * (size_t)i + 1]);
			db = sim_box_max(db, sim_box_max(d0, d1));
		}
		if (!(db <= limit))
			return 0;
	}
	/* Then the triangles' boxes, bound by bound. */
	float dc = 0.0f;
	const float left = limit - db;
	const size_t nb = 6 * (size_t)ntri;
	for (size_t j = 0; j < nb; j += 6) {
		for (int c = 0; c < 6; c++) {
			float d = fabsf(box[j + c] - k->box0[j + c]);
			dc = d > dc ? d : dc;
			if (d != d)
				return 0;
		}
		if (dc > left)
			return 0;
	}
	if (!(db + dc <= limit))
		return 0;
	k->kept++;
	k->uses++;
	return 1;
}

int sim_bodykeep_start(sim_bodykeep *k, const sim_collider_set *set, const uint32_t *tris,
		       uint32_t ntri, const float *box, float grow, float half_max, float thickness)
{
	k->live = 0;
	if (!(k->margin > 0.0f))
		return 0;
	/* The proof's rounding holds for a cloth within BODYKEEP_FAR. */
	const size_t nb = 6 * (size_t)ntri;
	for (size_t j = 0; j < nb; j++)
		if (!(fabsf(box[j]) < BODYKEEP_FAR))
			return 0;
	if (ntri > k->box_cap) {
		float *b = realloc(k->box0, nb * sizeof *b);
		if (b == NULL)
			return 0;
		k->box0 = b;
		k->box_cap = ntri;
	}
	if (set->count > k->body_cap) {
		kb_body *b = realloc(k->body, (size_t)set->count * sizeof *b);
		if (b == NULL)
			return 0;
		k->body = b;
		k->body_cap = set->count;
	}
	uint32_t verts = 0, moving = 0, bodies = 0, chunks = 0;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (sim_colliders_body(set, ci, &bv))
			bodies++;
	}
	for (uint32_t ci = 0; ci < set->count; ci++) {
		kb_body *kb = &k->body[ci];
		sim_body_view bv;
		memset(kb, 0, sizeof *kb);
		if (!sim_colliders_body(set, ci, &bv))
			continue;
		kb->present = 1;
		kb->moving = bv.moving != 0;
		kb->filtered = !kb->moving || bodies == 1;
		kb->nv = bv.nv;
		kb->version = bv.version;
		kb->q0 = bv.q0;
		kb->q1 = bv.q1;
		kb->h = body_h(thickness, &bv);
		kb->base = verts;
		kb->chunk0 = chunks;
		verts += bv.nv;
		chunks += (bv.nv + SIM_BODY_CHUNK - 1) / SIM_BODY_CHUNK;
		moving += kb->moving;
	}
	if (verts > k->vert_cap) {
		uint32_t *f = realloc(k->first, (size_t)verts * sizeof *f);
		if (f != NULL)
			k->first = f;
		uint32_t *c = f != NULL ? realloc(k->count, (size_t)verts * sizeof *c) : NULL;
		if (c != NULL)
			k->count = c;
		float *q = c != NULL ? realloc(k->q, 6 * (size_t)verts * sizeof *q) : NULL;
		if (q == NULL)
			return 0;
		k->q = q;
		k->vert_cap = verts;
	}
	if (chunks > k->chunk_cap) {
		kb_chunk *c = realloc(k->chunk, (size_t)chunks * sizeof *c);
		if (c == NULL)
			return 0;
		memset(c + k->chunk_cap, 0, (size_t)(chunks - k->chunk_cap) * sizeof *c);
		k->chunk = c;
		k->chunk_cap = chunks;
	}
	for (uint32_t c = 0; c < chunks; c++) {
		k->chunk[c].count = 0;
		k->chunk[c].maxn = 0;
		k->chunk[c].failed = 0;
	}
	k->nchunk = chunks;
	memset(k->count, 0, (size_t)verts * sizeof *k->count);
	memset(k->first, 0, (size_t)verts * sizeof *k->first);
	for (uint32_t ci = 0; ci < set->count; ci++) {
		const kb_body *kb = &k->body[ci];
		sim_body_view bv;
		if (!kb->present || !kb->moving || !sim_colliders_body(set, ci, &bv))
			continue;
		float *q = &k->q[6 * (size_t)kb->base];
		for (uint32_t i = 0; i < 3 * bv.nv; i++) {
			q[2 * (size_t)i] = bv.q0[i];
			q[2 * (size_t)i + 1] = bv.q1[i];
		}
	}
	memcpy(k->box0, box, nb * sizeof *box);
	k->nbody = set->count;
	k->tris = tris;
	k->ntri = ntri;
	k->grow = grow;
	k->thickness = thickness;
	k->half_bound = BODYKEEP_EDGE_SLACK * half_max;
	if (k->collected > 0)
		k->misses = k->uses > 0 ? 0 : (k->misses < 1000 ? k->misses + 1 : k->misses);
	k->uses = 0;
	k->live = 1;
	k->collected++;
	return 1;
}

int sim_bodykeep_scratch_reserve(sim_bodykeep_scratch *s, uint32_t ntri, uint32_t n)
{
	if (ntri > s->stamp_cap) {
		uint32_t *st = realloc(s->stamp, (size_t)ntri * sizeof *st);
		if (st == NULL)
			return 0;
		memset(st, 0, (size_t)ntri * sizeof *st);
		s->stamp = st;
		s->stamp_cap = ntri;
		s->epoch = 0;
	}
	if (n > s->key_cap) {
		uint32_t cap = n + n / 2 + 16;
		uint64_t *key = realloc(s->key, (size_t)cap * sizeof *key);
		if (key == NULL)
			return 0;
		s->key = key;
		uint32_t *o = realloc(s->out, (size_t)cap * sizeof *o);
		if (o == NULL)
			return 0;
		s->out = o;
		s->key_cap = cap;
	}
	return 1;
}

void sim_bodykeep_scratch_free(sim_bodykeep_scratch *s)
{
	free(s->stamp);
	free(s->key);
	free(s->out);
	memset(s, 0, sizeof *s);
}

/* Appends t to chunk c's candidates; 0 when out of memory (the walk of
 * sim_hash_visit then stops: the chunk fails and keeps nothing). */
static int push_candidate(void *c_, uint32_t t)
{
	kb_chunk *c = c_;
	if (c->count == c->cap) {
		uint32_t cap = c->cap + c->cap / 2 + 1024;
		uint32_t *n = realloc(c->cand, (size_t)cap * sizeof *n);
		if (n == NULL)
			return 0;
		c->cand = n;
		c->cap = cap;
	}
	c->cand[c->count++] = t;
	return 1;
}

int sim_bodykeep_collect(sim_bodykeep *k, sim_bodykeep_scratch *s, uint32_t ci, uint32_t i,
			 const sim_hash *H, const float *box, const float *pb)
{
	const kb_body *kb = &k->body[ci];
	kb_chunk *ch = &k->chunk[kb->chunk0 + i / SIM_BODY_CHUNK];
	if (!k->live || ch->failed || s->stamp_cap < k->ntri) {
		ch->failed = 1;
		return 0;
	}
	const float m = k->margin;
	const float pm[6] = {pb[0] - m, pb[1] - m, pb[2] - m, pb[3] + m, pb[4] + m, pb[5] + m};
	const uint32_t v = kb->base + i, from = ch->count;
	const uint32_t epoch = sim_stamp_next(s->stamp, s->stamp_cap, &s->epoch);
	const sim_cellbox cb = sim_hash_cells(H, pm);
	int ok = sim_hash_visit(H, &cb, box, pm, s->stamp, epoch, push_candidate, ch);
	/* The ordering's scratch holds every vertex's candidates, so
	 * sim_bodykeep_order never allocates (sim_bodykeep_finish sizes the
	 * other workers' scratch for the later substeps). */
	const uint32_t n = ch->count - from;
	if (ok)
		ok = sim_bodykeep_scratch_reserve(s, k->ntri, n);
	if (!ok) {
		/* A list missing a candidate would be wrong: none is kept
		 * (sim_bodykeep_finish), and the caller searches afresh. */
		ch->failed = 1;
		return 0;
	}
	/* Descending, as a single cell's slot holds them (sim_bodykeep_order). */
	uint32_t *c = &ch->cand[from];
	for (uint32_t a = 1; a < n; a++) {
		uint32_t t = c[a], b = a;
		for (; b > 0 && c[b - 1] < t; b--)
			c[b] = c[b - 1];
		c[b] = t;
	}
	k->first[v] = from;
	k->count[v] = n;
	ch->maxn = n > ch->maxn ? n : ch->maxn;
	return 1;
}

void sim_bodykeep_finish(sim_bodykeep *k, sim_bodykeep_scratch *scr, uint32_t nscr)
{
	if (!k->live)
		return;
	uint32_t maxn = 0;
	for (uint32_t c = 0; c < k->nchunk; c++) {
		if (k->chunk[c].failed) {
			k->live = 0;
			return;
		}
		maxn = k->chunk[c].maxn > maxn ? k->chunk[c].maxn : maxn;
	}
	for (uint32_t j = 0; j < nscr; j++)
		if (!sim_bodykeep_scratch_reserve(&scr[j], k->ntri, maxn)) {
			k->live = 0;
			return;
		}
}

/* The index, in the query's order over cb, of the first cell whose slot
 * holds a triangle of cell box ct (which shares a cell with cb). */
static uint32_t first_cell(sim_bodykeep_scratch *k, const sim_hash *H, const sim_cellbox *cb,
			   const sim_cellbox *ct)
{
	uint32_t j = 0, nslots = 0;
	for (int32_t z = cb->lo[2]; z <= cb->hi[2]; z++)
		for (int32_t y = cb->lo[1]; y <= cb->hi[1]; y++)
			for (int32_t x = cb->lo[0]; x <= cb->hi[0]; x++, j++) {
				if (x >= ct->lo[0] && x <= ct->hi[0] && y >= ct->lo[1] &&
				    y <= ct->hi[1] && z >= ct->lo[2] && z <= ct->hi[2])
					return j;
				/* Another cell of the triangle's may share this
				 * cell's slot. */
				if (nslots == 0)
					for (int32_t c = ct->lo[2]; c <= ct->hi[2]; c++)
						for (int32_t b = ct->lo[1]; b <= ct->hi[1]; b++)
							for (int32_t a = ct->lo[0]; a <= ct->hi[0]; a++)
								k->slots[nslots++] =
									sim_hash_slot(H, a, b, c);
				uint32_t s = sim_hash_slot(H, x, y, z);
				for (uint32_t e = 0; e < nslots; e++)
					if (k->slots[e] == s)
						return j;
			}
	return j; /* not reached: the boxes overlap */
}

/*
 * 1 when a box (of a kept list's cloth, so its coordinates are under
 * BODYKEEP_FAR + the margin) is surely under SIM_HASH_MAX_CELLS cells,
 * without its cell box: under 4 cells wide on each axis it spans at most
 * 7 cells per axis, 343 in all, since the products with inv_cell (under
 * 2^24 for cells over 0.1 mm, bodypush.c's floor) round by at most half
 * a unit each and the floors add one. Most boxes pass; the rest are
 * counted exactly.
 */
static int small_box(const float *b, float inv_cell)
{
	return (b[3] - b[0]) * inv_cell < 4.0f && (b[4] - b[1]) * inv_cell < 4.0f &&
	       (b[5] - b[2]) * inv_cell < 4.0f;
}

uint32_t sim_bodykeep_order(const sim_bodykeep *k, sim_bodykeep_scratch *s, uint32_t ci,
			    uint32_t i, const sim_hash *H, const float *box, const float *pb,
			    const uint32_t **out)
{
	const kb_body *kb = &k->body[ci];
	const uint32_t v = kb->base + i;
	const uint32_t n = k->count[v];
	*out = s->out;
	if (n == 0)
		return 0;
	const uint32_t *c = &k->chunk[kb->chunk0 + i / SIM_BODY_CHUNK].cand[k->first[v]];
	sim_cellbox cb = sim_hash_cells(H, pb);
	const int single = cb.lo[0] == cb.hi[0] && cb.lo[1] == cb.hi[1] && cb.lo[2] == cb.hi[2];
	uint32_t m = 0;
	int sorted = 1;
	for (uint32_t j = 0; j < n; j++) {
		const uint32_t t = c[j];
		const float *bt = &box[6 * (size_t)t];
		if (!sim_box_overlap(bt, pb))
			continue;
		uint64_t key;
		if (single && small_box(bt, H->inv_cell)) {
			/* In no other slot before the one cell's: first met there. */
			s->key[m++] = (uint32_t)~t;
			continue;
		}
		sim_cellbox ct = sim_hash_cells(H, bt);
		if (sim_cellbox_count(&ct) > SIM_HASH_MAX_CELLS) {
			key = ((uint64_t)UINT32_MAX << 32) | t;
			sorted = 0;
		} else {
			uint32_t first = single ? 0 : first_cell(s, H, &cb, &ct);
			key = ((uint64_t)first << 32) | (uint32_t)~t;
			sorted &= first == 0;
		}
		s->key[m++] = key;
	}
	if (!sorted)
		for (uint32_t a = 1; a < m; a++) {
			uint64_t x = s->key[a];
			uint32_t b = a;
			for (; b > 0 && s->key[b - 1] > x; b--)
				s->key[b] = s->key[b - 1];
			s->key[b] = x;
		}
	for (uint32_t j = 0; j < m; j++) {
		uint64_t x = s->key[j];
		s->out[j] = (x >> 32) == UINT32_MAX ? (uint32_t)x : ~(uint32_t)x;
	}
	*out = s->out;
	return m;
}

void sim_bodykeep_counts(const sim_bodykeep *k, uint64_t *collected, uint64_t *kept)
{
	*collected = k != NULL ? k->collected : 0;
	*kept = k != NULL ? k->kept : 0;
}

size_t sim_bodykeep_bytes(const sim_bodykeep *k)
{
	if (k == NULL)
		return 0;
	size_t b = sizeof *k + (size_t)k->box_cap * 6 * sizeof(float) +
		   (size_t)k->body_cap * sizeof(kb_body) +
		   (size_t)k->vert_cap * (2 * sizeof(uint32_t) + 6 * sizeof(float)) +
		   (size_t)k->chunk_cap * sizeof(kb_chunk);
	for (uint32_t c = 0; c < k->chunk_cap; c++)
		b += (size_t)k->chunk[c].cap * sizeof(uint32_t);
	return b;
}
