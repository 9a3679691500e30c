/*
 * A still body's kept candidate lists for the body-ridge/cloth-edge
 * contact (bodyedge.c; split from it, the search's steps are there).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bodyedge_impl.h"
#include "server/sim/box.h"

/*
 * Kept candidates (issue 22). A still body's ridges are the same all
 * through a step, and so are their swept boxes pb (q0 = q1); only the
 * cloth moves. The search (bodyedge.c) builds the hash of the cloth edges'
 * boxes and walks it for every ridge near the cloth, every substep, which
 * on the demo garment was most of the contact's cost. For still bodies, the
 * lists are kept instead:
 *
 *  - Collected (sim_be_collect()) at the step's first substep, or when the bound
 *    below fails: each cloth edge's box B is widened by a margin m into
 *    W (m = BODYEDGE_KEEP_REACH times the largest coordinate of any cloth
 *    vertex's predicted motion, plus BODYEDGE_KEEP_MIN), a hash of the W
 *    is walked once per ridge whose box meets their union, and the ridge
 *    keeps every cloth edge whose W meets its box, in increasing order.
 *  - The bound, checked on every cloth edge each substep while the lists
 *    are kept: its box B' of that substep lies inside its W (each min of
 *    B' at least W's, each max at most W's, compared exactly, no
 *    arithmetic). And every B' is a box (min <= max on each axis, which
 *    fails only for NaN positions; then this substep searches afresh).
 *  - Claim: while the bound holds, the cloth edges the search would test
 *    against a ridge (those whose box B' meets the ridge's box pb, as
 *    sim_box_overlap() compares them) are all in the ridge's list. Proof:
 *    B' meets pb means, on every axis, lo(B') <= hi(pb) and lo(pb) <=
 *    hi(B'); with lo(W) <= lo(B') and hi(B') <= hi(W) this gives lo(W) <=
 *    hi(pb) and lo(pb) <= hi(W): W meets pb, and pb is the same box as at
 *    collection (a still body's ends, the same floats), so the edge was
 *    kept. The comparisons are of stored floats, so the step holds in
 *    floating point as on paper. The cloth's box (the union of the B') is
 *    inside the union of the W, so every ridge the search looks up had
 *    its list collected. Conversely, a cloth edge whose box is a box and
 *    meets pb is met by the search: in the hash's cells (its cell box
 *    meets pb's, floor being monotone), in the list of big boxes, or in
 *    the loop over every cloth edge when pb spans too many cells.
 *  - The filter (sim_be_filter()) tests each kept edge with sim_box_overlap()
 *    against pb and then sim_be_consider(), the search's own tests (the ridge's
 *    with sim_be_ridge_setup() and ridge_qualifies()), so it keeps exactly the
 *    search's pairs. Their order is the search's: the walk meets a cloth
 *    edge at the first of pb's cells, in the walk's order, whose slot
 *    holds it (its own first cell in pb's, or an earlier cell of pb whose
 *    slot one of its cells shares), and within a slot in decreasing
 *    index (the build fills slots backwards); big boxes come after, in
 *    increasing index, and a ridge spanning too many cells meets them in
 *    increasing index (the lists' order). order_pairs() computes that key
 *    from the substep's cell size, so the pairs, the pinch marks and the
 *    frames are the same bits as the search's.
 *  - The lists are dropped at the start of every step (sim.c passes the
 *    first substep), when a body's pose or ridges change (sim_be_classify()),
 *    and when the bound fails; a moving body never has them. The pairs do
 *    not depend on when the lists were made, so a run resumed from a
 *    saved state gives the same bits as one that was not stopped.
 */
#define BODYEDGE_KEEP_REACH 4.0f
#define BODYEDGE_KEEP_MIN 5e-4f

static int u32_cmp(const void *pa, const void *pb)
{
	uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
	return x < y ? -1 : x > y;
}


/* Room for more candidates in a chunk's list; 0 when out of memory. */
static int kc_reserve(be_kchunk *o, size_t more)
{
	if (o->count + more <= o->cap)
		return 1;
	size_t cap = o->count + more + (o->count + more) / 2 + 256;
	uint32_t *k = realloc(o->kc, cap * sizeof *k);
	if (k == NULL)
		return 0;
	o->kc = k;
	o->cap = cap;
	return 1;
}

/* Appends cloth edge ck to the chunk's list (sim_hash_visit); 0 when out of
 * memory. */
static int append_edge(void *ctx, uint32_t ck)
{
	be_kchunk *o = ctx;
	if (!kc_reserve(o, 1))
		return 0;
	o->kc[o->count++] = ck;
	return 1;
}

/* Appends to o, in increasing order, the cloth edges whose widened box
 * meets pb, from the hash of the widened boxes (stamps in S); 0 when out
 * of memory. */
static int collect_ridge(const sim_bodyedge *b, be_scratch *S, be_kchunk *o, const float *pb)
{
	const sim_hash *H = &b->hash;
	size_t first = o->count;
	const uint32_t epoch = sim_stamp_next(S->stamp, S->stamp_cap, &S->epoch);
	const sim_cellbox cb = sim_hash_cells(H, pb);
	if (sim_cellbox_count(&cb) > SIM_HASH_MAX_CELLS) {
		for (uint32_t ck = 0; ck < b->nce; ck++)
			if (sim_box_overlap(&b->wbox[6 * (size_t)ck], pb)) {
				if (!kc_reserve(o, 1))
					return 0;
				o->kc[o->count++] = ck;
			}
		return 1;
	}
	if (!sim_hash_visit(H, &cb, b->wbox, pb, S->stamp, epoch, append_edge, o))
		return 0;
	/* A chunk that met nothing yet has no array: qsort's pointer must
	 * not be null even for no elements. */
	if (o->count - first > 1)
		qsort(o->kc + first, o->count - first, sizeof *o->kc, u32_cmp);
	return 1;
}

/* What a collection's chunks share. */
typedef struct be_cjob {
	sim_bodyedge *b;
	be_body *bd;
	const sim_body_view *bv;
	const float *wb;
	float h;
} be_cjob;

/* Chunks [begin, end) of a still body's ridges (BODYEDGE_CHUNK each):
 * each ridge's candidates into its chunk's list, kstart relative to it. */
static void collect_chunks(void *ctx, uint32_t begin, uint32_t end)
{
	const be_cjob *J = ctx;
	sim_bodyedge *b = J->b;
	be_body *bd = J->bd;
	const uint32_t w = sim_slot_claim(b->busy, b->nscr);
	for (uint32_t c = begin; c < end; c++) {
		be_kchunk *o = &b->kchunk[c];
		o->count = 0;
		o->failed = 0;
		const uint32_t r1 = bd->nridge - c * BODYEDGE_CHUNK > BODYEDGE_CHUNK
					    ? (c + 1) * BODYEDGE_CHUNK
					    : bd->nridge;
		ridge r;
		r.h = J->h;
		r.bv = J->bv;
		float pb[6];
		for (uint32_t ri = c * BODYEDGE_CHUNK; ri < r1 && !o->failed; ri++) {
			bd->kstart[ri] = (uint32_t)o->count;
			if (sim_be_ridge_box(&r, J->bv, &bd->e[bd->ridge[ri]], pb, J->wb) &&
			    !collect_ridge(b, &b->scr[w], o, pb))
				o->failed = 1;
			if (o->count > UINT32_MAX)
				o->failed = 1;
		}
	}
	sim_slot_release(b->busy, w);
}

/* Collects the lists of every still body (see above) from the boxes of
 * this substep in b->box; 0 when out of memory (the search then runs).
 * A body's ridges are collected in fixed chunks on the pool and the
 * chunks' lists joined in chunk order: the lists of the serial loop. */
int sim_be_collect(sim_bodyedge *b, const sim_collider_set *set, const sim_vec4 *x,
		   const sim_vec4 *p, float thickness, drape_pool *pool)
{
	b->kept_gen = 0;
	float dmax = 0.0f;
	for (uint32_t k = 0; k < b->nce; k++) {
		const uint32_t v[2] = {b->ce[k].a, b->ce[k].b};
		for (int j = 0; j < 2; j++) {
			const sim_vec4 *a = &x[v[j]], *c = &p[v[j]];
			float d = fmaxf(fabsf(c->x - a->x), fmaxf(fabsf(c->y - a->y), fabsf(c->z - a->z)));
			dmax = d > dmax ? d : dmax;
		}
	}
	const float m = BODYEDGE_KEEP_REACH * dmax + BODYEDGE_KEEP_MIN;
	float wb[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
	double size = 0.0;
	for (uint32_t k = 0; k < b->nce; k++) {
		const float *bx = &b->box[6 * (size_t)k];
		float *w = &b->wbox[6 * (size_t)k];
		for (int j = 0; j < 3; j++) {
			w[j] = bx[j] - m;
			w[j + 3] = bx[j + 3] + m;
			wb[j] = sim_box_min(wb[j], w[j]);
			wb[j + 3] = sim_box_max(wb[j + 3], w[j + 3]);
		}
		float ext = sim_box_max(w[3] - w[0], sim_box_max(w[4] - w[1], w[5] - w[2]));
		size += isfinite(ext) ? ext : 0.0f;
	}
	float cell = (float)(size / b->nce);
	if (!(cell > 1e-4f) || !isfinite(cell))
		cell = 1e-4f;
	if (sim_hash_build(&b->hash, b->wbox, b->nce, cell) != 0)
		return 0;
	if (++b->gen_next == 0)
		b->gen_next = 1;
	const uint32_t gen = b->gen_next;
	b->kc_count = 0;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv) || bv.moving)
			continue;
		be_body *bd = &b->body[ci];
		if (!sim_be_current(bd, &bv))
			continue; /* its edges could not be built: no part */
		const float h = thickness + bv.thickness;
		sim_be_face_normals(bd, &bv);
		sim_be_classify(bd, &bv, h);
		const uint32_t nc = (bd->nridge + BODYEDGE_CHUNK - 1) / BODYEDGE_CHUNK;
		if (!sim_be_workers(b, nc, pool))
			return 0;
		be_cjob job = {b, bd, &bv, wb, h};
		sim_pool_for(pool, nc, 1, collect_chunks, &job);
		for (uint32_t c = 0; c < nc; c++) {
			const be_kchunk *o = &b->kchunk[c];
			const size_t base = b->kc_count;
			if (o->failed || base + o->count > UINT32_MAX)
				return 0;
			if (base + o->count > b->kc_cap) {
				size_t cap = base + o->count + (base + o->count) / 2 + 256;
				uint32_t *k = realloc(b->kc, cap * sizeof *k);
				if (k == NULL)
					return 0;
				b->kc = k;
				b->kc_cap = cap;
			}
			if (o->count > 0)
				memcpy(&b->kc[base], o->kc, o->count * sizeof *o->kc);
			const uint32_t r1 = bd->nridge - c * BODYEDGE_CHUNK > BODYEDGE_CHUNK
						    ? (c + 1) * BODYEDGE_CHUNK
						    : bd->nridge;
			for (uint32_t ri = c * BODYEDGE_CHUNK; ri < r1; ri++)
				bd->kstart[ri] += (uint32_t)base;
			b->kc_count = base + o->count;
		}
		bd->kstart[bd->nridge] = (uint32_t)b->kc_count;
		bd->kept_gen = gen;
	}
	b->kept_gen = gen;
	b->collections++;
	return 1;
}


static int key_cmp(const void *pa, const void *pb)
{
	const be_key *x = pa, *y = pb;
	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * Puts the pairs from b->pair[first] on, one ridge's, in the order the
 * search's walk of H (this substep's cells) over pb would have made them
 * (see above). They were made in increasing cloth edge order, which is
 * the search's when pb spans more cells than the hash walks.
 */
static void order_pairs(const sim_bodyedge *b, be_scratch *S, be_chunk *out, uint32_t first,
			const float *pb, const sim_hash *H)
{
	const uint32_t m = out->count - first;
	sim_cellbox P = sim_hash_cells(H, pb);
	if (sim_cellbox_count(&P) > SIM_HASH_MAX_CELLS)
		return;
	if (m > S->key_cap) {
		uint32_t cap = m + m / 2 + 16;
		be_key *k = realloc(S->key, (size_t)cap * sizeof *k);
		if (k == NULL)
			return;
		S->key = k;
		be_pair *t = realloc(S->tmp, (size_t)cap * sizeof *t);
		if (t == NULL)
			return;
		S->tmp = t;
		S->key_cap = cap;
	}
	be_key *key = S->key;
	const int32_t nx = P.hi[0] - P.lo[0] + 1, ny = P.hi[1] - P.lo[1] + 1;
	uint32_t pslot[SIM_HASH_MAX_CELLS], cslot[SIM_HASH_MAX_CELLS];
	uint32_t np = 0;
	for (int32_t z = P.lo[2]; z <= P.hi[2]; z++)
		for (int32_t y = P.lo[1]; y <= P.hi[1]; y++)
			for (int32_t xx = P.lo[0]; xx <= P.hi[0]; xx++)
				pslot[np++] = sim_hash_slot(H, xx, y, z);
	for (uint32_t i = 0; i < m; i++) {
		const uint32_t ck = out->pair[first + i].edge;
		sim_cellbox C = sim_hash_cells(H, &b->box[6 * (size_t)ck]);
		key[i].at = first + i;
		if (sim_cellbox_count(&C) > SIM_HASH_MAX_CELLS) {
			key[i].key = (uint64_t)UINT32_MAX << 32 | ck;
			continue;
		}
		/* The first cell of pb's that is also the edge's bounds the
		 * walk's index; an earlier cell of pb's meets the edge when its
		 * slot is one of the edge's cells'. */
		int32_t c0[3];
		for (int j = 0; j < 3; j++)
			c0[j] = P.lo[j] > C.lo[j] ? P.lo[j] : C.lo[j];
		uint32_t bound = (uint32_t)(((c0[2] - P.lo[2]) * ny + (c0[1] - P.lo[1])) * nx +
					    (c0[0] - P.lo[0]));
		if (bound > np)
			bound = np;
		uint32_t nc = 0;
		for (int32_t z = C.lo[2]; z <= C.hi[2]; z++)
			for (int32_t y = C.lo[1]; y <= C.hi[1]; y++)
				for (int32_t xx = C.lo[0]; xx <= C.hi[0]; xx++)
					cslot[nc++] = sim_hash_slot(H, xx, y, z);
		uint32_t at = bound;
		for (uint32_t t = 0; t < bound && at == bound; t++)
			for (uint32_t c = 0; c < nc; c++)
				if (cslot[c] == pslot[t]) {
					at = t;
					break;
				}
		key[i].key = (uint64_t)at << 32 | (uint32_t)~ck;
	}
	qsort(key, m, sizeof *key, key_cmp);
	for (uint32_t i = 0; i < m; i++)
		S->tmp[i] = out->pair[key[i].at];
	memcpy(&out->pair[first], S->tmp, (size_t)m * sizeof *S->tmp);
	/* The normals go with their pairs (pairs_join marks with them), in
	 * the pairs' scratch, free again (a pair holds several normals). */
	sim_v3 *tn = (sim_v3 *)(void *)S->tmp;
	for (uint32_t i = 0; i < m; i++)
		tn[i] = out->n[key[i].at];
	memcpy(&out->n[first], tn, (size_t)m * sizeof *tn);
}

/* Ridge ri (edge e) of still body bd against its kept list: the pairs of
 * sim_be_lookup(), in its order (H has this substep's cells). */
void sim_be_filter(const sim_bodyedge *b, be_scratch *S, be_chunk *out, const be_body *bd,
		   uint32_t ri, const be_bedge *e, ridge *r, float sh, const float *pb,
		   float half_max, const sim_vec4 *x, const sim_vec4 *p, const sim_hash *H)
{
	if (!sim_be_ridge_setup(r, bd, e, sh, half_max))
		return;
	const uint32_t first = out->count;
	for (uint32_t j = bd->kstart[ri]; j < bd->kstart[ri + 1]; j++) {
		uint32_t ck = b->kc[j];
		if (sim_box_overlap(&b->box[6 * (size_t)ck], pb))
			sim_be_consider(b, out, ck, x, p, r);
	}
	if (out->count - first > 1)
		order_pairs(b, S, out, first, pb, H);
}
