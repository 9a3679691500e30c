/*
 * The body's edges against the cloth's edges (bodyedge.h).
 *
 * Two triangle meshes meet vertex to face or edge to edge. The vertex
 * contact keeps the cloth's vertices off the body's faces and bodypush.c
 * the body's vertices off the cloth's faces; what is left is a body edge
 * crossing a cloth edge: a ridge finer than the cloth (a shin's crest, a
 * finger, a knife edge) whose two vertices lie beyond the cloth's span,
 * with the cloth's edges passing over its crest between its ends. This is
 * the edge-edge half of the contact pair (the edge-edge proximity test of
 * Bridson, Fedkiw, Anderson 2002; the same constraint as cloth-cloth edge contact with one
 * edge kinematic):
 *
 *  1. Once per substep, for each edge of every mesh collider (static, rigid
 *     or deforming; ends q0 at the start and q1 at the end of the substep)
 *     whose swept box meets the cloth's box, the cloth edges whose box over
 *     their start and predicted positions (grown by h + 1 mm, h the cloth
 *     thickness plus the collider's) meets it come from a spatial hash of
 *     those boxes (selfhash.h, cells the boxes' mean size). A moving
 *     body's edges are classified (below) every substep, and only those
 *     whose box meets the cloth's: the test is made first, from each
 *     vertex's box placed once against the cloth's (outcode()), so most
 *     of a body (the head, the hands, the feet) costs one comparison per
 *     edge, and the pairs are those, in the order, of the full loop.
 *     A still body's candidates are instead kept across a step's
 *     substeps and filtered with the same tests ("Kept candidates",
 *     bodyedgekeep.c): the same pairs, in the same order.
 *     Only ridges take part: the edge must be convex (each face's far
 *     vertex below the other face's plane) and sharp at the cloth's scale,
 *     the body falling away from it across half the cloth edge's length
 *     (sin(a/2) over that half for an exterior dihedral angle a) by more
 *     than the contact distance h: the cloth edge's vertices resting on
 *     the two faces then leave its middle under the crest. A flat or
 *     concave body edge cannot rise between the cloth's vertices, which
 *     rest on the faces beside it. And the ridge
 *     must be at least half as long as the cloth edge: a shorter one has
 *     its own vertices under the faces beside the cloth edge, which the
 *     vertex-face contact keeps off them (see sim_be_consider()).
 *  2. With the closest points of the two lines at the start (parameters s
 *     on the body edge, t on the cloth edge, both inside [0, 1]: a closest
 *     point at a vertex belongs to a vertex contact), the contact normal is
 *     n = u x v / |u x v| (u, v the edges' directions), turned to the
 *     body's outer side: n . nb > 0 with nb the edge's outward normal, the
 *     mean of its two faces' unit normals (outward by the mesh's enclosed
 *     volume, as the collider holds it). Edges within 11.5 degrees of
 *     parallel have no such normal (a cloth edge along a ridge has its
 *     vertices on the ridge, for the vertex contact), nor has a pair whose
 *     n is more than 60 degrees from nb (the cloth edge crossing the ridge
 *     down one of its sides, held by that side's faces). The gap
 *     g0 = n . (cloth point - body point) is the cloth edge's height over
 *     the ridge; the pair is kept when g0 >= -h (on the outer side, or at
 *     most h inside, which is brought back out) and small enough to close
 *     in this substep. Since the side comes from the start and is enforced
 *     at the end, a ridge that sweeps through the cloth edge within the
 *     substep, however fast, pushes it back to the side it came from: the
 *     continuous test linearised, as in bodypush.c and deform.c. A cloth
 *     edge deeper inside is never pulled through.
 *     A cloth edge met by ridges from opposite sides (n . n' < 0: between
 *     two fingers closing, in a crease) is dropped as bodypush.c drops a
 *     pinched face, and left to the vertex contact.
 *  3. Each iteration, for each pair in order: the closest points again at
 *     p and q1, n as above; when C = h - n . (c - b) > 0 the cloth edge's
 *     vertices move along n by w_k b_k / (w_0 b_0^2 + w_1 b_1^2) C, with
 *     b = (1 - t, t) (a PBD projection of the edge point with the body's
 *     inverse mass 0, Müller et al. 2006). A push larger than
 *     the motion possible in the substep is refused, and so is one that
 *     moves a vertex by more than BODYPUSH_LEVER times C (next to a pin).
 *  4. Friction: the tangential motion of the cloth point relative to the
 *     body point over the substep, removed below static_friction C and
 *     reduced by friction C otherwise (Macklin et al. 2014, eq. 24), as the
 *     collider's other contacts do, so a sleeve is carried by the moving
 *     arm's crest.
 *
 * It runs after bodypush.c and before the vertex contact (sim.c), which has
 * the last word: where an edge push and a vertex disagree no cloth vertex
 * is left inside the body. The pairs come in a fixed order (bodies, their
 * edges, the hash's order of cloth edges, each once), so the result is
 * the same for any thread count and SIMD width: a still body's ridges are
 * searched (and their kept lists collected) on the pool in fixed chunks
 * of BODYEDGE_CHUNK ridges, each into its own list, joined in chunk order,
 * and the pinch marks are made in the join (pairs_join()); the cloth
 * edges' boxes are built in blocks on the pool, and a moving body's edges
 * are classified and searched on the pool in fixed chunks of
 * BODYEDGE_EDGE_CHUNK edges, joined the same way. The projection runs in
 * bodysched.h's order, as bodypush.c's: the tiles' pairs in parallel on
 * the pool, then the pairs across tiles, whatever the thread count.
 */
#include "server/sim/bodyedge.h"
#include "server/sim/bodyedge_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bodypush.h"
#include "server/sim/box.h"
#include "server/sim/pool.h"
#include "server/sim/selfhash.h"


static int cedge_cmp(const void *pa, const void *pb)
{
	const be_cedge *x = pa, *y = pb;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

sim_bodyedge *sim_bodyedge_create(const uint32_t *tris, uint32_t ntri)
{
	sim_bodyedge *b = calloc(1, sizeof *b);
	if (b == NULL)
		return NULL;
	b->ce = malloc(3 * (size_t)ntri * sizeof *b->ce + 1);
	if (b->ce == NULL) {
		sim_bodyedge_free(b);
		return NULL;
	}
	for (uint32_t t = 0; t < ntri; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t u = tris[3 * (size_t)t + k], v = tris[3 * (size_t)t + (k + 1) % 3];
			b->ce[3 * (size_t)t + k] = (be_cedge){u < v ? u : v, u < v ? v : u};
		}
	qsort(b->ce, 3 * (size_t)ntri, sizeof *b->ce, cedge_cmp);
	uint32_t n = 0;
	for (size_t k = 0; k < 3 * (size_t)ntri; k++)
		if (n == 0 || b->ce[n - 1].a != b->ce[k].a || b->ce[n - 1].b != b->ce[k].b)
			b->ce[n++] = b->ce[k];
	b->nce = n;
	b->box = malloc(6 * (size_t)n * sizeof *b->box + 1);
	b->side = malloc(3 * (size_t)n * sizeof *b->side + 1);
	b->side_at = calloc((size_t)n + 1, sizeof *b->side_at);
	b->pinched = calloc((size_t)n + 1, 1);
	b->wbox = malloc(6 * (size_t)n * sizeof *b->wbox + 1);
	b->ext = malloc((size_t)n * sizeof *b->ext + 1);
	b->bred = malloc(((size_t)n / BODYEDGE_BOX_BLOCK + 1) * sizeof *b->bred);
	b->keep = 1;
	if (b->box == NULL || b->side == NULL || b->side_at == NULL ||
	    b->pinched == NULL || b->wbox == NULL || b->ext == NULL || b->bred == NULL ||
	    sim_hash_init(&b->hash, n) != DRAPE_OK) {
		sim_bodyedge_free(b);
		return NULL;
	}
	return b;
}

void sim_bodyedge_free(sim_bodyedge *b)
{
	if (b == NULL)
		return;
	free(b->ce);
	free(b->box);
	free(b->side);
	free(b->side_at);
	free(b->pinched);
	free(b->wbox);
	free(b->ext);
	free(b->bred);
	free(b->kc);
	for (uint32_t c = 0; c < b->chunk_cap; c++) {
		free(b->chunk[c].pair);
		free(b->chunk[c].n);
	}
	free(b->chunk);
	for (uint32_t c = 0; c < b->chunk_cap; c++)
		free(b->kchunk[c].kc);
	free(b->kchunk);
	for (uint32_t j = 0; j < b->nscr; j++) {
		free(b->scr[j].stamp);
		free(b->scr[j].key);
		free(b->scr[j].tmp);
	}
	free(b->scr);
	free((void *)b->busy);
	sim_hash_free(&b->hash);
	sim_bodysched_free(&b->sched);
	for (uint32_t i = 0; i < b->body_cap; i++) {
		free(b->body[i].kstart);
		free(b->body[i].e);
		free(b->body[i].fn);
		free(b->body[i].voc);
		free(b->body[i].ridge);
	}
	free(b->body);
	free(b->pair);
	free(b);
}

static inline sim_v3 at3(const float *pos, uint32_t v)
{
	return v3(pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]);
}

typedef struct half_edge {
	uint32_t a, b, f, o;
} half_edge;

static int half_cmp(const void *pa, const void *pb)
{
	const half_edge *x = pa, *y = pb;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return x->f < y->f ? -1 : x->f > y->f;
}

/* The edges with exactly two faces of a collider's mesh (a border edge,
 * or a non-manifold one, has no ridge to speak of), sorted; 0 when out of
 * memory (the collider then takes no part). */
static int body_edges(be_body *bd, const sim_body_view *bv)
{
	free(bd->e);
	free(bd->fn);
	free(bd->voc);
	free(bd->ridge);
	free(bd->kstart);
	memset(bd, 0, sizeof *bd);
	half_edge *h = malloc(3 * (size_t)bv->nt * sizeof *h + 1);
	be_bedge *e = malloc(3 * (size_t)bv->nt / 2 * sizeof *e + sizeof *e);
	float *fn = malloc(3 * (size_t)bv->nt * sizeof *fn + 1);
	uint32_t *rg = malloc(3 * (size_t)bv->nt / 2 * sizeof *rg + sizeof *rg);
	uint8_t *vc = malloc((size_t)bv->nv + 1);
	uint32_t *ks = malloc((3 * (size_t)bv->nt / 2 + 2) * sizeof *ks);
	if (h == NULL || e == NULL || fn == NULL || rg == NULL || vc == NULL ||
	    ks == NULL) {
		free(ks);
		free(vc);
		free(h);
		free(e);
		free(fn);
		free(rg);
		return 0;
	}
	for (uint32_t t = 0; t < bv->nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t u = bv->tris[3 * (size_t)t + k], v = bv->tris[3 * (size_t)t + (k + 1) % 3];
			uint32_t o = bv->tris[3 * (size_t)t + (k + 2) % 3];
			h[3 * (size_t)t + k] = (half_edge){u < v ? u : v, u < v ? v : u, t, o};
		}
	size_t nh = 3 * (size_t)bv->nt;
	qsort(h, nh, sizeof *h, half_cmp);
	uint32_t n = 0;
	for (size_t k = 0; k < nh;) {
		size_t j = k + 1;
		while (j < nh && h[j].a == h[k].a && h[j].b == h[k].b)
			j++;
		if (j - k == 2 && n < 3 * (size_t)bv->nt / 2 + 1)
			e[n++] = (be_bedge){h[k].a, h[k].b, h[k].f, h[k + 1].f, h[k].o, h[k + 1].o};
		k = j;
	}
	free(h);
	bd->mesh = bv->mesh;
	bd->nt = bv->nt;
	bd->nv = bv->nv;
	bd->e = e;
	bd->ne = n;
	bd->fn = fn;
	bd->voc = vc;
	bd->ridge = rg;
	bd->kstart = ks;
	return 1;
}

/* One body slot per collider; 0 when out of memory. */
static int body_slots(sim_bodyedge *b, uint32_t count)
{
	if (b->body_cap >= count)
		return 1;
	be_body *nb = realloc(b->body, (size_t)count * sizeof *nb);
	if (nb == NULL)
		return 0;
	memset(nb + b->body_cap, 0, (size_t)(count - b->body_cap) * sizeof *nb);
	b->body = nb;
	b->body_cap = count;
	return 1;
}

drape_err sim_bodyedge_reserve(sim_bodyedge *b, const sim_collider_set *set, drape_error *err)
{
	if (!body_slots(b, set->count))
		return drape_error_setf(err, DRAPE_ENOMEM,
					"colliders: out of memory for the body edge contact of %u colliders",
					set->count);
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		memset(&bv, 0, sizeof bv);
		if (!sim_colliders_body_mesh(set, ci, &bv.tris, &bv.nt, &bv.nv, &bv.mesh))
			continue;
		be_body *bd = &b->body[ci];
		if (!sim_be_current(bd, &bv) && !body_edges(bd, &bv))
			return drape_error_setf(err, DRAPE_ENOMEM,
						"colliders[%u]: out of memory for the edges of its %u triangles",
						ci, bv.nt);
	}
	return DRAPE_OK;
}

/* The unit outward normal of face f at the start pose, into bd->fn. */
static void face_normal(be_body *bd, const sim_body_view *bv, uint32_t f)
{
	const uint32_t *v = &bv->tris[3 * (size_t)f];
	sim_v3 a = at3(bv->q0, v[0]);
	sim_v3 c = v3_cross(v3_sub(at3(bv->q0, v[1]), a), v3_sub(at3(bv->q0, v[2]), a));
	float l = v3_len(c);
	sim_v3 n = l > 0.0f ? v3_scale(c, bv->orient / l) : v3(0, 0, 0);
	float *o = &bd->fn[3 * (size_t)f];
	o[0] = n.x, o[1] = n.y, o[2] = n.z;
}

/* The unit outward normals of the body's faces at the start pose. */
void sim_be_face_normals(be_body *bd, const sim_body_view *bv)
{
	if (!bv->moving && bd->still_q0 == bv->q0 && bd->still_version == bv->version)
		return;
	bd->still_q0 = bv->moving ? NULL : bv->q0;
	bd->still_version = bv->version;
	bd->ridge_valid = 0;
	for (uint32_t f = 0; f < bv->nt; f++)
		face_normal(bd, bv, f);
}

/* Appends a pair and its normal to a chunk's, growing the arrays by half
 * again when full. 0 when out of memory: the pair is dropped and the
 * contact is weaker this substep. */
static int pair_push(be_chunk *ch, const be_pair *pr, sim_v3 n)
{
	if (ch->count == ch->cap) {
		uint32_t cap = ch->cap + ch->cap / 2 + 64;
		be_pair *p = realloc(ch->pair, (size_t)cap * sizeof *p);
		if (p == NULL)
			return 0;
		ch->pair = p;
		sim_v3 *nn = realloc(ch->n, (size_t)cap * sizeof *nn);
		if (nn == NULL)
			return 0;
		ch->n = nn;
		ch->cap = cap;
	}
	ch->n[ch->count] = n;
	ch->pair[ch->count++] = *pr;
	return 1;
}

/*
 * Appends chunk ch's pairs to b's, in order, marking their cloth edges'
 * sides: a cloth edge met from both sides in this substep is pinched (see
 * the header). A cloth edge has at most one pair per ridge, so this order
 * restricted to one cloth edge is the order the serial search met it in,
 * and the first pair's side, kept for the later ones, is the same.
 */
static void pairs_join(sim_bodyedge *b, const be_chunk *ch)
{
	for (uint32_t j = 0; j < ch->count; j++) {
		const uint32_t k = ch->pair[j].edge;
		const sim_v3 n = ch->n[j];
		float *sd = &b->side[3 * (size_t)k];
		if (b->side_at[k] != b->substep) {
			b->side_at[k] = b->substep;
			sd[0] = n.x, sd[1] = n.y, sd[2] = n.z;
			b->pinched[k] = 0;
		} else if (v3_dot(n, v3(sd[0], sd[1], sd[2])) < 0.0f) {
			b->pinched[k] = 1;
		}
		if (b->pair_count == b->pair_cap) {
			uint32_t cap = b->pair_cap + b->pair_cap / 2 + 64;
			be_pair *p = realloc(b->pair, (size_t)cap * sizeof *p);
			if (p == NULL)
				continue;
			b->pair = p;
			b->pair_cap = cap;
		}
		b->pair[b->pair_count++] = ch->pair[j];
	}
}

/*
 * The closest points of the lines through a + s u and c + t v: 0 when the
 * two are within BODYEDGE_PARALLEL of parallel, else s, t and the unit
 * normal u x v / |u x v|.
 */
static int closest_lines(sim_v3 a, sim_v3 u, sim_v3 c, sim_v3 v, float *s, float *t, sim_v3 *n)
{
	sim_v3 w = v3_sub(a, c);
	float uu = v3_dot(u, u), uv = v3_dot(u, v), vv = v3_dot(v, v);
	float uw = v3_dot(u, w), vw = v3_dot(v, w);
	sim_v3 x = v3_cross(u, v);
	float D = v3_dot(x, x);
	if (!(D > BODYEDGE_PARALLEL * uu * vv))
		return 0;
	*s = (uv * vw - vv * uw) / D;
	*t = (uu * vw - uv * uw) / D;
	*n = v3_scale(x, 1.0f / sqrtf(D));
	return 1;
}


void sim_be_consider(const sim_bodyedge *b, be_chunk *out, uint32_t k, const sim_vec4 *x,
		     const sim_vec4 *p, const ridge *r)
{
	const be_cedge *ce = &b->ce[k];
	sim_v3 xa = v3_of4(x[ce->a]), xb = v3_of4(x[ce->b]);
	sim_v3 v = v3_sub(xb, xa);
	if (!ridge_qualifies(r, 0.5f * v3_len(v)))
		return;
	float s, t;
	sim_v3 n;
	if (!closest_lines(r->q0a, v3_sub(r->q0b, r->q0a), xa, v, &s, &t, &n))
		return;
	if (!(s >= 0.0f && s <= 1.0f && t >= 0.0f && t <= 1.0f))
		return;
	float f = v3_dot(n, r->nb);
	if (f < 0.0f) {
		n = v3_scale(n, -1.0f);
		f = -f;
	}
	if (!(f >= BODYEDGE_FACING))
		return;
	sim_v3 bp = v3_add(r->q0a, v3_scale(v3_sub(r->q0b, r->q0a), s));
	sim_v3 cp = v3_add(xa, v3_scale(v, t));
	float g0 = v3_dot(n, v3_sub(cp, bp));
	if (!(g0 >= -r->h))
		return;
	float motion = fmaxf(v3_len(v3_sub(v3_of4(p[ce->a]), xa)), v3_len(v3_sub(v3_of4(p[ce->b]), xb)));
	/* The iterations may carry the cloth further than its prediction:
	 * twice its motion, as bodypush.c and deform.c allow. */
	float reach = r->h + r->motion + 2.0f * motion + 1e-3f;
	if (!(g0 <= reach))
		return;
	/* The side is marked when the chunks are joined (pairs_join). */
	const sim_body_view *bv = r->bv;
	be_pair pr = {k,
		      r->q1a,
		      r->q1b,
		      v3_sub(r->q1a, r->q0a),
		      v3_sub(r->q1b, r->q0b),
		      r->nb,
		      r->h,
		      reach + r->h,
		      bv->friction,
		      bv->static_friction};
	pair_push(out, &pr, n);
}

/* The half-sine of edge e's exterior dihedral angle when it is convex
 * (each face's far vertex below the other face's plane), else -1. */
static float ridge_sharpness(const be_body *bd, const sim_body_view *bv, const be_bedge *e)
{
	sim_v3 n0 = at3(bd->fn, e->f0), n1 = at3(bd->fn, e->f1);
	if (!(v3_dot(n0, n0) > 0.0f && v3_dot(n1, n1) > 0.0f))
		return -1.0f;
	sim_v3 a = at3(bv->q0, e->a);
	if (!(v3_dot(n0, v3_sub(at3(bv->q0, e->o1), a)) < 0.0f &&
	      v3_dot(n1, v3_sub(at3(bv->q0, e->o0), a)) < 0.0f))
		return -1.0f;
	return sqrtf(fmaxf(0.0f, 0.5f * (1.0f - v3_dot(n0, n1))));
}

/* Lists the ridges of the start pose: convex edges sharp at their own
 * length (sim_be_consider() pairs an edge only with cloth edges at most twice as
 * long, so len sh bounds the fall it can test), for contact distance h.
 * Once per pose for a still body, every substep for a moving one. */
void sim_be_classify(be_body *bd, const sim_body_view *bv, float h)
{
	if (bd->ridge_valid && bd->ridge_h == h)
		return;
	uint32_t n = 0;
	for (uint32_t k = 0; k < bd->ne; k++) {
		const be_bedge *e = &bd->e[k];
		float sh = ridge_sharpness(bd, bv, e);
		float len = v3_len(v3_sub(at3(bv->q0, e->b), at3(bv->q0, e->a)));
		if (sh > 0.0f && len * sh > BODYEDGE_SHARP * h)
			bd->ridge[n++] = k;
	}
	bd->nridge = n;
	bd->ridge_h = h;
	bd->ridge_valid = !bv->moving;
	bd->kept_gen = 0;
}

/* Bit 2k: the box of q0 and q1 lies below the cloth's box on axis k;
 * bit 2k + 1: above it. Two boxes' union lies below (above) exactly when
 * both do: the min (max) of their ends is the min (max) of the mins. */
static inline uint8_t outcode(sim_v3 q0, sim_v3 q1, const float *cb)
{
	const float lo[3] = {sim_box_min(q0.x, q1.x), sim_box_min(q0.y, q1.y), sim_box_min(q0.z, q1.z)};
	const float hi[3] = {sim_box_max(q0.x, q1.x), sim_box_max(q0.y, q1.y), sim_box_max(q0.z, q1.z)};
	uint8_t c = 0;
	for (int k = 0; k < 3; k++)
		c |= (uint8_t)((hi[k] < cb[k]) << (2 * k) | (lo[k] > cb[k + 3]) << (2 * k + 1));
	return c;
}

/* Ridge e's ends at the start and end of the substep into r, and its
 * swept box into pb: 1 when the box meets the cloth's box. */
int sim_be_ridge_box(ridge *r, const sim_body_view *bv, const be_bedge *e, float *pb,
		     const float *cloth_box)
{
	r->q0a = at3(bv->q0, e->a), r->q0b = at3(bv->q0, e->b);
	r->q1a = at3(bv->q1, e->a), r->q1b = at3(bv->q1, e->b);
	const sim_v3 *c4[4] = {&r->q0a, &r->q0b, &r->q1a, &r->q1b};
	for (int j = 0; j < 3; j++)
		pb[j] = INFINITY, pb[j + 3] = -INFINITY;
	for (int m = 0; m < 4; m++) {
		const float c[3] = {c4[m]->x, c4[m]->y, c4[m]->z};
		for (int j = 0; j < 3; j++) {
			pb[j] = sim_box_min(pb[j], c[j]);
			pb[j + 3] = sim_box_max(pb[j + 3], c[j]);
		}
	}
	return sim_box_overlap(pb, cloth_box);
}

/* The cloth edges whose boxes meet ridge e's swept box pb (its ends in r,
 * sh its ridge_sharpness), each considered once, in the hash's order. */
/* Ridge e's length, outward normal and motion into r (its ends are there
 * from sim_be_ridge_box(), sh its ridge_sharpness): 0 when it has no length or
 * no normal, or is too smooth for every cloth edge (the sharpness of
 * ridge_qualifies() at the longest cloth edge this ridge may pair with,
 * half of it at most its own length and the cloth's longest: the fall
 * grows with the half), and is not looked up. */
int sim_be_ridge_setup(ridge *r, const be_body *bd, const be_bedge *e, float sh, float half_max)
{
	sim_v3 n0 = at3(bd->fn, e->f0), n1 = at3(bd->fn, e->f1);
	r->sh = sh;
	float ul = v3_len(v3_sub(r->q0b, r->q0a));
	if (!(ul > 0.0f))
		return 0;
	r->len = ul;
	if (!ridge_qualifies(r, fminf(ul, half_max)))
		return 0;
	sim_v3 nb = v3_add(n0, n1);
	float nl = v3_len(nb);
	if (!(nl > 0.0f))
		return 0;
	r->nb = v3_scale(nb, 1.0f / nl);
	r->motion = fmaxf(v3_len(v3_sub(r->q1a, r->q0a)), v3_len(v3_sub(r->q1b, r->q0b)));
	return 1;
}

/* sim_be_consider's arguments but the cloth edge, for sim_hash_visit. */
typedef struct be_ridge_query {
	const sim_bodyedge *b;
	be_chunk *out;
	const sim_vec4 *x, *p;
	ridge *r;
} be_ridge_query;

static int visit_edge(void *ctx, uint32_t ck)
{
	const be_ridge_query *v = ctx;
	sim_be_consider(v->b, v->out, ck, v->x, v->p, v->r);
	return 1;
}

void sim_be_lookup(const sim_bodyedge *b, be_scratch *S, be_chunk *out, const be_body *bd,
		   const be_bedge *e, ridge *r, float sh, const float *pb, float half_max,
		   const sim_vec4 *x, const sim_vec4 *p)
{
	const sim_hash *H = &b->hash;
	if (!sim_be_ridge_setup(r, bd, e, sh, half_max))
		return;
	const uint32_t epoch = sim_stamp_next(S->stamp, S->stamp_cap, &S->epoch);
	const sim_cellbox cb = sim_hash_cells(H, pb);
	if (sim_cellbox_count(&cb) > SIM_HASH_MAX_CELLS) {
		/* A body edge spanning more cells than the hash walks (a long
		 * ridge over a fine cloth): every cloth edge, in order. */
		for (uint32_t ck = 0; ck < b->nce; ck++)
			if (sim_box_overlap(&b->box[6 * (size_t)ck], pb))
				sim_be_consider(b, out, ck, x, p, r);
		return;
	}
	be_ridge_query v = {b, out, x, p, r};
	sim_hash_visit(H, &cb, b->box, pb, S->stamp, epoch, visit_edge, &v);
}

/* What the chunks of a still body's search share (sim_bodyedge_begin). */
typedef struct be_job {
	sim_bodyedge *b;
	const be_body *bd;
	const sim_body_view *bv;
	const float *cloth_box;
	const sim_hash *H;
	const sim_vec4 *x, *p;
	float h, half_max;
	int keep;
} be_job;

/* Chunks [begin, end) of a still body's ridges (BODYEDGE_CHUNK each),
 * each into its own pairs: from the kept lists or a fresh lookup. */
static void ridge_chunks(void *ctx, uint32_t begin, uint32_t end)
{
	const be_job *J = ctx;
	sim_bodyedge *b = J->b;
	const be_body *bd = J->bd;
	const uint32_t w = sim_slot_claim(b->busy, b->nscr);
	be_scratch *S = &b->scr[w];
	for (uint32_t c = begin; c < end; c++) {
		be_chunk *out = &b->chunk[c];
		out->count = 0;
		const uint32_t r1 = bd->nridge - c * BODYEDGE_CHUNK > BODYEDGE_CHUNK
					    ? (c + 1) * BODYEDGE_CHUNK
					    : bd->nridge;
		for (uint32_t ri = c * BODYEDGE_CHUNK; ri < r1; ri++) {
			/* No candidates, no pairs: most of a body is away
			 * from the cloth. */
			if (J->keep && bd->kstart[ri] == bd->kstart[ri + 1])
				continue;
			ridge r;
			r.h = J->h;
			r.bv = J->bv;
			float pb[6];
			const be_bedge *e = &bd->e[bd->ridge[ri]];
			if (!sim_be_ridge_box(&r, J->bv, e, pb, J->cloth_box))
				continue;
			const float sh = ridge_sharpness(bd, J->bv, e);
			if (J->keep)
				sim_be_filter(b, S, out, bd, ri, e, &r, sh, pb, J->half_max, J->x, J->p, J->H);
			else
				sim_be_lookup(b, S, out, bd, e, &r, sh, pb, J->half_max, J->x, J->p);
		}
	}
	sim_slot_release(b->busy, w);
}

/* Room for n chunks and for the workers' scratch (stamps for every cloth
 * edge); 0 when out of memory. */
int sim_be_workers(sim_bodyedge *b, uint32_t chunks, const drape_pool *pool)
{
	chunks = chunks > 0 ? chunks : 1;
	if (chunks > b->chunk_cap) {
		be_chunk *c = realloc(b->chunk, (size_t)chunks * sizeof *c);
		if (c == NULL)
			return 0;
		memset(c + b->chunk_cap, 0, (size_t)(chunks - b->chunk_cap) * sizeof *c);
		b->chunk = c;
		be_kchunk *k = realloc(b->kchunk, (size_t)chunks * sizeof *k);
		if (k == NULL)
			return 0;
		memset(k + b->chunk_cap, 0, (size_t)(chunks - b->chunk_cap) * sizeof *k);
		b->kchunk = k;
		b->chunk_cap = chunks;
	}
	uint32_t want = drape_pool_threads(pool);
	want = want < chunks ? want : chunks;
	want = want > 0 ? want : 1;
	if (want > b->nscr) {
		be_scratch *s = realloc(b->scr, (size_t)want * sizeof *s);
		if (s == NULL)
			return 0;
		memset(s + b->nscr, 0, (size_t)(want - b->nscr) * sizeof *s);
		b->scr = s;
		_Atomic uint8_t *busy = calloc(want, sizeof *busy);
		if (busy == NULL)
			return 0;
		free((void *)b->busy);
		b->busy = busy;
		b->nscr = want;
	}
	for (uint32_t j = 0; j < b->nscr; j++)
		if (b->scr[j].stamp_cap < b->nce) {
			uint32_t *st = calloc((size_t)b->nce + 1, sizeof *st);
			if (st == NULL)
				return 0;
			free(b->scr[j].stamp);
			b->scr[j].stamp = st;
			b->scr[j].stamp_cap = b->nce;
			b->scr[j].epoch = 0;
		}
	return 1;
}

/* What the blocks of the cloth edges' boxes share (sim_bodyedge_begin). */
typedef struct be_bjob {
	sim_bodyedge *b;
	const sim_vec4 *x, *p;
	float grow, sl;
	int check;
} be_bjob;

/* The boxes of one block of cloth edges [begin, end). */
static void box_block(const be_bjob *J, uint32_t begin, uint32_t end)
{
	sim_bodyedge *b = J->b;
	const sim_vec4 *x = J->x, *p = J->p;
	const float grow = J->grow, sl = J->sl;
	be_bred r = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0.0f, 1, 1};
	for (uint32_t k = begin; k < end; k++) {
		float *bx = &b->box[6 * (size_t)k];
		float el = v3_len(v3_sub(v3_of4(x[b->ce[k].a]), v3_of4(x[b->ce[k].b])));
		r.half = el > r.half ? el : r.half;
		const sim_vec4 *q[4] = {&x[b->ce[k].a], &x[b->ce[k].b], &p[b->ce[k].a], &p[b->ce[k].b]};
		for (int j = 0; j < 3; j++)
			bx[j] = INFINITY, bx[j + 3] = -INFINITY;
		for (int m = 0; m < 4; m++) {
			float c[3] = {q[m]->x, q[m]->y, q[m]->z};
			for (int j = 0; j < 3; j++) {
				bx[j] = sim_box_min(bx[j], c[j]);
				bx[j + 3] = sim_box_max(bx[j + 3], c[j]);
			}
		}
		b->ext[k] = sim_box_max(bx[3] - bx[0], sim_box_max(bx[4] - bx[1], bx[5] - bx[2]));
		for (int j = 0; j < 3; j++) {
			bx[j] -= grow;
			bx[j + 3] += grow;
			r.lo[j] = sim_box_min(r.lo[j], bx[j]);
			r.hi[j] = sim_box_max(r.hi[j], bx[j + 3]);
		}
		r.boxes &= sim_box_valid(bx);
		if (J->check) {
			const float *w = &b->wbox[6 * (size_t)k];
			r.inside &= (w[0] - sl <= bx[0]) & (w[1] - sl <= bx[1]) & (w[2] - sl <= bx[2]) &
				    (bx[3] <= w[3] + sl) & (bx[4] <= w[4] + sl) & (bx[5] <= w[5] + sl);
		}
	}
	b->bred[begin / BODYEDGE_BOX_BLOCK] = r;
}

/* The boxes of cloth edges [begin, end) (one block of
 * BODYEDGE_BOX_BLOCK, or several when run inline), their sizes into
 * b->ext and each block's bounds into b->bred. */
static void box_blocks(void *ctx, uint32_t begin, uint32_t end)
{
	for (uint32_t k0 = begin; k0 < end; k0 += BODYEDGE_BOX_BLOCK)
		box_block(ctx, k0, end - k0 > BODYEDGE_BOX_BLOCK ? k0 + BODYEDGE_BOX_BLOCK : end);
}

/* What the passes over a moving body share (sim_bodyedge_begin). */
typedef struct be_mjob {
	sim_bodyedge *b;
	be_body *bd;
	const sim_body_view *bv;
	const float *cloth_box;
	const sim_vec4 *x, *p;
	float h, half_max;
} be_mjob;

/* Where each vertex's box over the substep lies against the cloth's box:
 * an edge's box is the union of its two vertices', so it misses the
 * cloth's box exactly when both lie beyond the same face of it (the two
 * outcodes share a bit), and such an edge is not classified. Vertices
 * [begin, end). */
static void moving_outcodes(void *ctx, uint32_t begin, uint32_t end)
{
	const be_mjob *J = ctx;
	for (uint32_t v = begin; v < end; v++)
		J->bd->voc[v] = outcode(at3(J->bv->q0, v), at3(J->bv->q1, v), J->cloth_box);
}

/* The start normals of faces [begin, end) that an edge classified this
 * substep may need: those with two vertices whose outcodes share no bit
 * (an edge's faces hold its two ends). The others are not read. */
static void moving_normals(void *ctx, uint32_t begin, uint32_t end)
{
	const be_mjob *J = ctx;
	const uint8_t *oc = J->bd->voc;
	for (uint32_t f = begin; f < end; f++) {
		const uint32_t *v = &J->bv->tris[3 * (size_t)f];
		if ((oc[v[0]] & oc[v[1]]) && (oc[v[1]] & oc[v[2]]) && (oc[v[2]] & oc[v[0]]))
			continue;
		face_normal(J->bd, J->bv, f);
	}
}

/* Chunks [begin, end) of a moving body's edges (BODYEDGE_EDGE_CHUNK
 * each): classified, and the ridges among them near the cloth looked up,
 * each chunk into its own pairs. */
static void moving_chunks(void *ctx, uint32_t begin, uint32_t end)
{
	const be_mjob *J = ctx;
	sim_bodyedge *b = J->b;
	const be_body *bd = J->bd;
	const uint32_t w = sim_slot_claim(b->busy, b->nscr);
	be_scratch *S = &b->scr[w];
	ridge r;
	r.h = J->h;
	r.bv = J->bv;
	for (uint32_t c = begin; c < end; c++) {
		be_chunk *out = &b->chunk[c];
		out->count = 0;
		const uint32_t k1 = bd->ne - c * BODYEDGE_EDGE_CHUNK > BODYEDGE_EDGE_CHUNK
					    ? (c + 1) * BODYEDGE_EDGE_CHUNK
					    : bd->ne;
		for (uint32_t k = c * BODYEDGE_EDGE_CHUNK; k < k1; k++) {
			const be_bedge *e = &bd->e[k];
			if (bd->voc[e->a] & bd->voc[e->b])
				continue;
			float sh = ridge_sharpness(bd, J->bv, e);
			float len = v3_len(v3_sub(at3(J->bv->q0, e->b), at3(J->bv->q0, e->a)));
			float pb[6];
			if (sh > 0.0f && len * sh > BODYEDGE_SHARP * r.h &&
			    sim_be_ridge_box(&r, J->bv, e, pb, J->cloth_box))
				sim_be_lookup(b, S, out, bd, e, &r, sh, pb, J->half_max, J->x, J->p);
		}
	}
	sim_slot_release(b->busy, w);
}

void sim_bodyedge_begin(sim_bodyedge *b, const sim_collider_set *set, const sim_vec4 *x,
			const sim_vec4 *p, float thickness, int first, drape_pool *pool)
{
	b->pair_count = 0;
	b->sched_stale = 1;
	/* A new stamp for the pinch marks; 0 is never a substep's. */
	if (++b->substep == 0) {
		memset(b->side_at, 0, (size_t)b->nce * sizeof *b->side_at);
		b->substep = 1;
	}
	if (first)
		b->kept_gen = 0;
	float hmax = 0.0f;
	uint32_t bodies = 0;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv))
			continue;
		bodies++;
		hmax = fmaxf(hmax, thickness + bv.thickness);
	}
	if (bodies == 0 || b->nce == 0)
		return;
	/* The cloth edges' boxes over x and p, grown by the largest contact
	 * distance and a millimetre; the cell is their mean size. While lists
	 * are kept, each box must lie inside its widened one (see above). */
	const float grow = hmax + 1e-3f;
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	double size = 0.0;
	float half_max = 0.0f; /* the longest cloth edge at x, halved below */
	int inside = 1, boxes = 1;
	/* In blocks on the pool; the blocks' bounds are combined in order and
	 * the sizes summed in edge order, as the serial loop did (the min and
	 * max of boxes never meet a signed zero: grow > 0). */
	be_bjob bj = {b, x, p, grow, b->slack, b->kept_gen != 0};
	sim_pool_for(pool, b->nce, BODYEDGE_BOX_BLOCK, box_blocks, &bj);
	for (uint32_t c = 0; c * BODYEDGE_BOX_BLOCK < b->nce; c++) {
		const be_bred *r = &b->bred[c];
		half_max = r->half > half_max ? r->half : half_max;
		for (int j = 0; j < 3; j++) {
			lo[j] = sim_box_min(lo[j], r->lo[j]);
			hi[j] = sim_box_max(hi[j], r->hi[j]);
		}
		inside &= r->inside;
		boxes &= r->boxes;
	}
	for (uint32_t k = 0; k < b->nce; k++)
		size += isfinite(b->ext[k]) ? b->ext[k] : 0.0f;
	if (!inside)
		b->kept_gen = 0;
	half_max *= 0.5f;
	float cell = (float)(size / b->nce) + grow;
	if (!(cell > 1e-4f) || !isfinite(cell))
		cell = 1e-4f;
	const float cloth_box[6] = {lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]};
	if (!body_slots(b, set->count))
		return;
	/* Which bodies search and which filter kept lists. A body is found
	 * by its triangles: a removed collider shifts the others; its edges
	 * are built once per mesh. */
	int keep = b->keep && boxes, search = 0, stale = 0;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv))
			continue;
		be_body *bd = &b->body[ci];
		if (!sim_be_current(bd, &bv) && !body_edges(bd, &bv))
			continue;
		if (bv.moving || !keep) {
			search = 1;
			continue;
		}
		/* A still body's ridges are classified once per pose. */
		sim_be_face_normals(bd, &bv);
		sim_be_classify(bd, &bv, thickness + bv.thickness);
		stale |= b->kept_gen == 0 || bd->kept_gen != b->kept_gen;
	}
	if (keep && stale && !sim_be_collect(b, set, x, p, thickness, pool)) {
		b->kept_gen = 0;
		keep = 0;
		search = 1;
	}
	if (search && sim_hash_build(&b->hash, b->box, b->nce, cell) != 0)
		return;
	/* The cells of this substep's search, for the kept pairs' order. */
	sim_hash H = b->hash;
	H.cell = cell;
	H.inv_cell = 1.0f / cell;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv))
			continue;
		be_body *bd = &b->body[ci];
		if (!sim_be_current(bd, &bv))
			continue;
		const float h = thickness + bv.thickness;
		if (!bv.moving) {
			sim_be_face_normals(bd, &bv);
			sim_be_classify(bd, &bv, h);
			/* The ridges in fixed chunks on the pool, each chunk's
			 * pairs in its own list, joined in chunk order: the
			 * serial loop's pairs, in its order, at any thread
			 * count (the pinch marks are made in the join). */
			const uint32_t nc = (bd->nridge + BODYEDGE_CHUNK - 1) / BODYEDGE_CHUNK;
			if (!sim_be_workers(b, nc, pool))
				continue;
			be_job job = {b, bd, &bv, cloth_box, &H, x, p, h, half_max, keep};
			sim_pool_for(pool, nc, 1, ridge_chunks, &job);
			for (uint32_t c = 0; c < nc; c++)
				pairs_join(b, &b->chunk[c]);
			if (keep)
				bd->kept_uses++;
			continue;
		}
		/* A moving body's edges are classified every substep, but only
		 * those whose swept box meets the cloth's box (the still
		 * body's loop skips the others before any lookup), and the
		 * face normals the classification needs are computed for
		 * those edges' faces alone. The edges, their classification
		 * and their lookups are the ones, and in the order, of
		 * sim_be_classify() followed by the still body's loop: each
		 * step runs on the pool in fixed blocks (vertices, faces, then
		 * chunks of BODYEDGE_EDGE_CHUNK edges, each into its own list,
		 * joined in chunk order), so the pairs are the same bits at
		 * any thread count. */
		bd->still_q0 = NULL;
		bd->ridge_valid = 0;
		const uint32_t nc = (bd->ne + BODYEDGE_EDGE_CHUNK - 1) / BODYEDGE_EDGE_CHUNK;
		if (!sim_be_workers(b, nc, pool))
			continue;
		be_mjob mj = {b, bd, &bv, cloth_box, x, p, h, half_max};
		sim_pool_for(pool, bv.nv, BODYEDGE_BOX_BLOCK, moving_outcodes, &mj);
		sim_pool_for(pool, bv.nt, BODYEDGE_BOX_BLOCK, moving_normals, &mj);
		sim_pool_for(pool, nc, 1, moving_chunks, &mj);
		for (uint32_t c = 0; c < nc; c++)
			pairs_join(b, &b->chunk[c]);
	}
	/* Drop the pinched cloth edges' pairs; the others keep their order. */
	uint32_t kept = 0;
	for (uint32_t k = 0; k < b->pair_count; k++)
		if (!b->pinched[b->pair[k].edge])
			b->pair[kept++] = b->pair[k];
	b->pair_count = kept;
}

/* What an iteration's groups of pairs share (bodysched.h). */
typedef struct be_run {
	const sim_bodyedge *b;
	sim_vec4 *p;
	const sim_vec4 *x;
} be_run;

/* Pairs order[begin .. end) (k itself for a NULL order), in that order. */
static uint32_t project_pairs(void *ctx, const uint32_t *order, uint32_t begin, uint32_t end)
{
	const be_run *R = ctx;
	const sim_bodyedge *b = R->b;
	sim_vec4 *restrict p = R->p;
	const sim_vec4 *restrict x = R->x;
	uint32_t pushed = 0;
	for (uint32_t k = begin; k < end; k++) {
		const be_pair *pr = &b->pair[order != NULL ? order[k] : k];
		const be_cedge *ce = &b->ce[pr->edge];
		sim_vec4 *P[2] = {&p[ce->a], &p[ce->b]};
		sim_v3 ca = v3_of4(*P[0]), v = v3_sub(v3_of4(*P[1]), ca);
		sim_v3 u = v3_sub(pr->b1, pr->b0);
		float s, t;
		sim_v3 n;
		if (!closest_lines(pr->b0, u, ca, v, &s, &t, &n))
			continue;
		/* Past either end the contact is a vertex's. */
		if (!(s >= 0.0f && s <= 1.0f && t >= 0.0f && t <= 1.0f))
			continue;
		float f = v3_dot(n, pr->nb);
		if (f < 0.0f) {
			n = v3_scale(n, -1.0f);
			f = -f;
		}
		/* A cloth edge the iterations turned to cross the ridge down
		 * one of its sides (n more than 60 degrees from nb) is held by
		 * that side's faces, as at the start (step 2): pushed along
		 * this n it would slide along the body, not off its crest
		 * (bodypush.c refuses its turned faces the same way). */
		if (!(f >= BODYEDGE_FACING))
			continue;
		sim_v3 bp = v3_add(pr->b0, v3_scale(u, s));
		sim_v3 cp = v3_add(ca, v3_scale(v, t));
		float c = pr->h - v3_dot(n, v3_sub(cp, bp));
		if (!(c > 0.0f) || c > pr->reach)
			continue;
		const float bc[2] = {1.0f - t, t};
		float W = P[0]->w * bc[0] * bc[0] + P[1]->w * bc[1] * bc[1];
		if (!(W > 0.0f))
			continue;
		/* Next to a pinned vertex the free one would move by C / b,
		 * many times the push: left to the pin and the vertex contact. */
		if (fmaxf(P[0]->w * bc[0], P[1]->w * bc[1]) / W > BODYEDGE_LEVER)
			continue;
		const uint32_t vi[2] = {ce->a, ce->b};
		sim_v3 dq = v3_add(v3_scale(pr->d0, 1.0f - s), v3_scale(pr->d1, s));
		sim_body_contact_push(P, vi, bc, 2, W, n, c, dq, pr->mu, pr->mus, x);
		pushed++;
	}
	return pushed;
}

/* A cloth edge's two vertices are the uint32_t pair the schedule reads. */
_Static_assert(sizeof(be_cedge) == 2 * sizeof(uint32_t), "be_cedge is two vertex indices");

uint32_t sim_bodyedge_project(sim_bodyedge *b, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			      uint32_t n, drape_pool *pool)
{
	/* The schedule of the pairs kept at the last begin, made at its
	 * first iteration (the vertex count sizes the tiles). */
	if (b->sched_stale) {
		sim_bodysched_build(&b->sched, &b->ce[0].a, 2, b->pair, sizeof *b->pair,
				    offsetof(be_pair, edge), b->pair_count, n);
		b->sched_stale = 0;
	}
	be_run run = {b, p, x};
	return sim_bodysched_run(&b->sched, b->pair_count, pool, project_pairs, &run);
}

uint32_t sim_bodyedge_pair_count(const sim_bodyedge *b)
{
	return b->pair_count;
}

const sim_bodysched *sim_bodyedge_sched(const sim_bodyedge *b)
{
	return &b->sched;
}

const void *sim_bodyedge_pair_data(const sim_bodyedge *b, size_t *bytes)
{
	*bytes = (size_t)b->pair_count * sizeof *b->pair;
	return b->pair;
}

void sim_bodyedge_set_keep(sim_bodyedge *b, int keep, float slack)
{
	b->keep = keep;
	b->slack = slack;
	b->kept_gen = 0;
}

uint32_t sim_bodyedge_kept_uses(const sim_bodyedge *b, uint32_t index)
{
	return index < b->body_cap ? b->body[index].kept_uses : 0;
}

uint32_t sim_bodyedge_collections(const sim_bodyedge *b)
{
	return b->collections;
}

size_t sim_bodyedge_bytes(const sim_bodyedge *b)
{
	if (b == NULL)
		return 0;
	size_t s = sizeof *b + (size_t)b->nce * (sizeof(be_cedge) + 6 * sizeof(float) +
						  2 * sizeof(uint32_t) + 3 * sizeof(float) + 1) +
		   (size_t)b->pair_cap * sizeof(be_pair) + (size_t)b->body_cap * sizeof(be_body) +
		   sim_bodysched_bytes(&b->sched);
	for (uint32_t c = 0; c < b->chunk_cap; c++)
		s += sizeof(be_chunk) + (size_t)b->chunk[c].cap * (sizeof(be_pair) + sizeof(sim_v3)) +
		     sizeof(be_kchunk) + b->kchunk[c].cap * sizeof(uint32_t);
	for (uint32_t j = 0; j < b->nscr; j++)
		s += sizeof(be_scratch) + (size_t)b->scr[j].stamp_cap * sizeof(uint32_t) +
		     (size_t)b->scr[j].key_cap * (sizeof(be_key) + sizeof(be_pair));
	for (uint32_t i = 0; i < b->body_cap; i++)
		s += (size_t)b->body[i].ne * (sizeof(be_bedge) + 2 * sizeof(uint32_t)) +
		     (size_t)b->body[i].nt * 3 * sizeof(float) +
		     (size_t)b->body[i].nv;
	return s;
}
