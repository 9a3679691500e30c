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
 *     below): the same pairs, in the same order.
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
 *     vertex-face contact keeps off them (see consider()).
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
 * edges' boxes are built in blocks on the pool. A moving body's edges and
 * the projection are serial.
 */
#include "server/sim/bodyedge.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bodypush.h"
#include "server/sim/box.h"
#include "server/sim/pool.h"
#include "server/sim/selfhash.h"

/* Cloth edges per block of the boxes' loop on the pool. */
#define BODYEDGE_BOX_BLOCK 1024u

/* Ridges per chunk of a still body's parallel search: a constant, so the
 * split never depends on the thread count (see sim_bodyedge_begin). */
#define BODYEDGE_CHUNK 128u

/* The fall across a ridge, over half the cloth edge, as a fraction of the
 * contact distance, from which the crest comes through a cloth edge whose
 * vertices rest on its two faces: 1, the crest through the cloth, not
 * merely closer than the contact distance (bodypush.c takes 0.25 for its
 * vertices; at 0.25 the demo body's fine edges made 10,000 ridges to look
 * up every substep, doubling the solve, for crossings the vertex-face
 * contact already prevents). As in bodypush.c, the largest lever. */
#define BODYEDGE_SHARP 1.0f
#define BODYEDGE_LEVER 2.0f
/* sin^2 of the angle below which two edges are taken as parallel (11.5
 * degrees). */
#define BODYEDGE_PARALLEL 0.04f
/* n . nb below which the cloth edge meets the ridge from its side. */
#define BODYEDGE_FACING 0.5f

typedef struct be_cedge {
	uint32_t a, b;
} be_cedge;

/* A body edge: its ends, its two faces and their far vertices. */
typedef struct be_bedge {
	uint32_t a, b, f0, f1, o0, o1;
} be_bedge;

/* One collider's edge list, built for the triangle array it was made from. */
typedef struct be_body {
	const uint32_t *tris;
	uint32_t nt, nv;
	be_bedge *e;
	uint32_t ne;
	/* 3 per face: unit outward normals at the start pose (0 when
	 * degenerate), once per substep for a moving body, once per pose
	 * (its start positions and version) for a still one. */
	float *fn;
	/* Per face: the substep (sim_bodyedge.substep) whose start pose fn
	 * holds the face's normal for, when a moving body's normals are
	 * computed only where an edge near the cloth needs them. */
	uint32_t *fn_at;
	/* Per vertex: where a moving body's vertex's box over the substep
	 * lies against the cloth's box (outcode()). */
	uint8_t *voc;
	const float *still_q0;
	uint32_t still_version;
	/* The edges that are ridges at contact distance ridge_h (convex, and
	 * sharp at their own length: see classify()), for the pose whose
	 * face normals fn holds. */
	uint32_t *ridge;
	uint32_t nridge;
	float ridge_h;
	int ridge_valid;
	/* Kept candidates ("Kept candidates" below): per ridge of the list above, its
	 * start in sim_bodyedge.kc (nridge + 1 offsets), valid while
	 * kept_gen is sim_bodyedge.kept_gen; kept_uses counts the substeps
	 * served from them (tests and statistics). */
	uint32_t *kstart;
	uint32_t kept_gen;
	uint32_t kept_uses;
} be_body;

typedef struct be_pair {
	uint32_t edge;  /* cloth edge */
	sim_v3 b0, b1;  /* the body edge's ends at the end of the substep */
	sim_v3 d0, d1;  /* and their motion over it */
	sim_v3 nb;      /* the body's outward unit normal at the edge */
	float h, reach; /* contact distance, the largest push accepted */
	float mu, mus;
} be_pair;

/* One chunk's pairs, and each pair's contact normal at the start (for
 * the pinch marks, made when the chunks are joined in order). */
typedef struct be_chunk {
	be_pair *pair;
	sim_v3 *n;
	uint32_t count, cap;
} be_chunk;

/* One block's bounds of the cloth edges' boxes (box_blocks()). */
typedef struct be_bred {
	float lo[3], hi[3], half;
	int boxes, inside;
} be_bred;

/* One chunk's candidates of a collection (collect()): its ridges' lists
 * in turn, joined in chunk order into b->kc. */
typedef struct be_kchunk {
	uint32_t *kc;
	size_t count, cap;
	int failed; /* out of memory */
} be_kchunk;

/* One worker's scratch: stamps for a query of the hash, keys for the
 * kept pairs' order. Its contents never change a result. */
struct be_scratch {
	uint32_t *stamp;
	uint32_t epoch, stamp_cap;
	struct be_key *key;
	be_pair *tmp;
	uint32_t key_cap;
};
typedef struct be_scratch be_scratch;

struct sim_bodyedge {
	uint32_t nce;
	be_cedge *ce;
	float *box;       /* 6 per cloth edge: the boxes hashed */
	float *ext;       /* per cloth edge: its box's largest extent, before growing */
	be_bred *bred;    /* per block of BODYEDGE_BOX_BLOCK edges */
	float *side;      /* 3 per cloth edge: the first pair's normal this substep */
	uint32_t *side_at;/* per cloth edge: 1 + the substep's count when side is set */
	uint8_t *pinched; /* per cloth edge: met from both sides this substep */
	uint32_t substep;
	sim_hash hash;
	be_body *body;
	uint32_t body_cap;
	be_pair *pair;
	uint32_t pair_count, pair_cap;
	/* Kept candidates ("Kept candidates" below). keep: still bodies use
	 * them (1 unless switched off); slack: how far a cloth edge's box
	 * may leave its widened box before the lists are dropped (0; more
	 * only in the tests that show a loosened bound loses pairs). */
	int keep;
	float slack;
	float *wbox;       /* 6 per cloth edge: the widened boxes of the lists */
	uint32_t kept_gen; /* the lists' generation, 0 when there are none */
	uint32_t gen_next;
	uint32_t *kc;      /* every still body's ridges' candidates, in turn */
	size_t kc_count, kc_cap;
	uint32_t collections;
	/* The parallel search's chunks and the workers' scratch (a running
	 * chunk takes a free one: busy). */
	be_chunk *chunk;
	uint32_t chunk_cap;
	be_kchunk *kchunk; /* a collection's chunks (collect()) */
	struct be_scratch *scr;
	_Atomic uint8_t *busy;
	uint32_t nscr;
};

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
	for (uint32_t i = 0; i < b->body_cap; i++) {
		free(b->body[i].kstart);
		free(b->body[i].e);
		free(b->body[i].fn);
		free(b->body[i].fn_at);
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
	free(bd->fn_at);
	free(bd->voc);
	free(bd->ridge);
	free(bd->kstart);
	memset(bd, 0, sizeof *bd);
	half_edge *h = malloc(3 * (size_t)bv->nt * sizeof *h + 1);
	be_bedge *e = malloc(3 * (size_t)bv->nt / 2 * sizeof *e + sizeof *e);
	float *fn = malloc(3 * (size_t)bv->nt * sizeof *fn + 1);
	uint32_t *fa = calloc((size_t)bv->nt + 1, sizeof *fa);
	uint32_t *rg = malloc(3 * (size_t)bv->nt / 2 * sizeof *rg + sizeof *rg);
	uint8_t *vc = malloc((size_t)bv->nv + 1);
	uint32_t *ks = malloc((3 * (size_t)bv->nt / 2 + 2) * sizeof *ks);
	if (h == NULL || e == NULL || fn == NULL || fa == NULL || rg == NULL || vc == NULL ||
	    ks == NULL) {
		free(ks);
		free(vc);
		free(h);
		free(e);
		free(fn);
		free(fa);
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
	bd->tris = bv->tris;
	bd->nt = bv->nt;
	bd->nv = bv->nv;
	bd->e = e;
	bd->ne = n;
	bd->fn = fn;
	bd->fn_at = fa;
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
		if (!sim_colliders_body_mesh(set, ci, &bv.tris, &bv.nt, &bv.nv))
			continue;
		be_body *bd = &b->body[ci];
		if ((bd->tris != bv.tris || bd->nt != bv.nt || bd->nv != bv.nv) && !body_edges(bd, &bv))
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
static void face_normals(be_body *bd, const sim_body_view *bv)
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

/* The ridge (q0a - q0b at the start, q1a - q1b at the end, outward normal
 * nb, exterior angle's half-sine sh, length len) against
 * cloth edge k: kept as step 2 of the header says. */
typedef struct ridge {
	sim_v3 q0a, q0b, q1a, q1b, nb;
	float sh, h, motion, len;
	const sim_body_view *bv;
} ridge;

/*
 * Whether ridge r takes part against a cloth edge of half-length half. A
 * body edge shorter than half the cloth edge has both its vertices within
 * a quarter of the cloth edge's length of the crossing, under the two
 * faces beside the cloth edge, where the body's vertices against the
 * cloth's faces (bodypush.c) hold them; the cloth over a crest is a roof,
 * so the crest between them stays under it too. Only ridges long against
 * the cloth need this contact (and the demo's fine body under its coarse
 * suit would otherwise make tens of thousands of pairs for nothing). And
 * it must be sharp for this cloth edge: the body falls away from the
 * crest across half its length by more than BODYEDGE_SHARP h. The fresh
 * search and the kept lists' filter both ask this, so they agree.
 */
static inline int ridge_qualifies(const ridge *r, float half)
{
	return r->len >= half && half * r->sh > BODYEDGE_SHARP * r->h;
}

static void consider(const sim_bodyedge *b, be_chunk *out, uint32_t k, const sim_vec4 *x,
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
 * length (consider() pairs an edge only with cloth edges at most twice as
 * long, so len sh bounds the fall it can test), for contact distance h.
 * Once per pose for a still body, every substep for a moving one. */
static void classify(be_body *bd, const sim_body_view *bv, float h)
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
static int ridge_box(ridge *r, const sim_body_view *bv, const be_bedge *e, float *pb,
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
 * from ridge_box(), sh its ridge_sharpness): 0 when it has no length or
 * no normal, or is too smooth for every cloth edge (the sharpness of
 * ridge_qualifies() at the longest cloth edge this ridge may pair with,
 * half of it at most its own length and the cloth's longest: the fall
 * grows with the half), and is not looked up. */
static int ridge_setup(ridge *r, const be_body *bd, const be_bedge *e, float sh, float half_max)
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

static void lookup(const sim_bodyedge *b, be_scratch *S, be_chunk *out, const be_body *bd,
		   const be_bedge *e, ridge *r, float sh, const float *pb, float half_max,
		   const sim_vec4 *x, const sim_vec4 *p)
{
	const sim_hash *H = &b->hash;
	if (!ridge_setup(r, bd, e, sh, half_max))
		return;
	uint32_t *stamp = S->stamp;
	if (++S->epoch == 0) {
		memset(stamp, 0, (size_t)S->stamp_cap * sizeof *stamp);
		S->epoch = 1;
	}
	const uint32_t epoch = S->epoch;
	sim_cellbox cb = sim_hash_cells(H, pb);
	if (sim_cellbox_count(&cb) > SIM_HASH_MAX_CELLS) {
		/* A body edge spanning more cells than the hash walks (a long
		 * ridge over a fine cloth): every cloth edge, in order. */
		for (uint32_t ck = 0; ck < b->nce; ck++)
			if (sim_box_overlap(&b->box[6 * (size_t)ck], pb))
				consider(b, out, ck, x, p, r);
		return;
	}
	for (int32_t z = cb.lo[2]; z <= cb.hi[2]; z++)
		for (int32_t y = cb.lo[1]; y <= cb.hi[1]; y++)
			for (int32_t xx = cb.lo[0]; xx <= cb.hi[0]; xx++) {
				uint32_t slot = sim_hash_slot(H, xx, y, z);
				for (uint32_t j = H->start[slot]; j < H->start[slot + 1]; j++) {
					uint32_t ck = H->entries[j];
					if (stamp[ck] == epoch)
						continue;
					stamp[ck] = epoch;
					if (sim_box_overlap(&b->box[6 * (size_t)ck], pb))
						consider(b, out, ck, x, p, r);
				}
			}
	for (uint32_t j = 0; j < H->big_count; j++) {
		uint32_t ck = H->big[j];
		if (stamp[ck] != epoch && sim_box_overlap(&b->box[6 * (size_t)ck], pb)) {
			stamp[ck] = epoch;
			consider(b, out, ck, x, p, r);
		}
	}
}

/*
 * Kept candidates (issue 22). A still body's ridges are the same all
 * through a step, and so are their swept boxes pb (q0 = q1); only the
 * cloth moves. The search above builds the hash of the cloth edges'
 * boxes and walks it for every ridge near the cloth, every substep, which
 * on the demo garment is most of this file's cost. For still bodies, the
 * lists are kept instead:
 *
 *  - Collected (collect()) at the step's first substep, or when the bound
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
 *  - The filter (filter()) tests each kept edge with sim_box_overlap()
 *    against pb and then consider(), the search's own tests (the ridge's
 *    with ridge_setup() and ridge_qualifies()), so it keeps exactly the
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
 *    first substep), when a body's pose or ridges change (classify()),
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

static uint32_t be_claim(sim_bodyedge *b);
static void be_release(sim_bodyedge *b, uint32_t j);
static int be_workers(sim_bodyedge *b, uint32_t chunks, const drape_pool *pool);

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

/* Appends to o, in increasing order, the cloth edges whose widened box
 * meets pb, from the hash of the widened boxes (stamps in S); 0 when out
 * of memory. */
static int collect_ridge(const sim_bodyedge *b, be_scratch *S, be_kchunk *o, const float *pb)
{
	const sim_hash *H = &b->hash;
	size_t first = o->count;
	uint32_t *stamp = S->stamp;
	if (++S->epoch == 0) {
		memset(stamp, 0, (size_t)S->stamp_cap * sizeof *stamp);
		S->epoch = 1;
	}
	const uint32_t epoch = S->epoch;
	sim_cellbox cb = sim_hash_cells(H, pb);
	if (sim_cellbox_count(&cb) > SIM_HASH_MAX_CELLS) {
		for (uint32_t ck = 0; ck < b->nce; ck++)
			if (sim_box_overlap(&b->wbox[6 * (size_t)ck], pb)) {
				if (!kc_reserve(o, 1))
					return 0;
				o->kc[o->count++] = ck;
			}
		return 1;
	}
	for (int32_t z = cb.lo[2]; z <= cb.hi[2]; z++)
		for (int32_t y = cb.lo[1]; y <= cb.hi[1]; y++)
			for (int32_t xx = cb.lo[0]; xx <= cb.hi[0]; xx++) {
				uint32_t slot = sim_hash_slot(H, xx, y, z);
				for (uint32_t j = H->start[slot]; j < H->start[slot + 1]; j++) {
					uint32_t ck = H->entries[j];
					if (stamp[ck] == epoch)
						continue;
					stamp[ck] = epoch;
					if (sim_box_overlap(&b->wbox[6 * (size_t)ck], pb)) {
						if (!kc_reserve(o, 1))
							return 0;
						o->kc[o->count++] = ck;
					}
				}
			}
	for (uint32_t j = 0; j < H->big_count; j++) {
		uint32_t ck = H->big[j];
		if (stamp[ck] != epoch && sim_box_overlap(&b->wbox[6 * (size_t)ck], pb)) {
			stamp[ck] = epoch;
			if (!kc_reserve(o, 1))
				return 0;
			o->kc[o->count++] = ck;
		}
	}
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
	const uint32_t w = be_claim(b);
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
			if (ridge_box(&r, J->bv, &bd->e[bd->ridge[ri]], pb, J->wb) &&
			    !collect_ridge(b, &b->scr[w], o, pb))
				o->failed = 1;
			if (o->count > UINT32_MAX)
				o->failed = 1;
		}
	}
	be_release(b, w);
}

/* Collects the lists of every still body (see above) from the boxes of
 * this substep in b->box; 0 when out of memory (the search then runs).
 * A body's ridges are collected in fixed chunks on the pool and the
 * chunks' lists joined in chunk order: the lists of the serial loop. */
static int collect(sim_bodyedge *b, const sim_collider_set *set, const sim_vec4 *x,
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
		if (bd->tris != bv.tris || bd->nt != bv.nt || bd->nv != bv.nv)
			continue; /* its edges could not be built: no part */
		const float h = thickness + bv.thickness;
		face_normals(bd, &bv);
		classify(bd, &bv, h);
		const uint32_t nc = (bd->nridge + BODYEDGE_CHUNK - 1) / BODYEDGE_CHUNK;
		if (!be_workers(b, nc, pool))
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

typedef struct be_key {
	uint64_t key;
	uint32_t at;
} be_key;

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
 * lookup(), in its order (H has this substep's cells). */
static void filter(const sim_bodyedge *b, be_scratch *S, be_chunk *out, const be_body *bd,
		   uint32_t ri, const be_bedge *e, ridge *r, float sh, const float *pb,
		   float half_max, const sim_vec4 *x, const sim_vec4 *p, const sim_hash *H)
{
	if (!ridge_setup(r, bd, e, sh, half_max))
		return;
	const uint32_t first = out->count;
	for (uint32_t j = bd->kstart[ri]; j < bd->kstart[ri + 1]; j++) {
		uint32_t ck = b->kc[j];
		if (sim_box_overlap(&b->box[6 * (size_t)ck], pb))
			consider(b, out, ck, x, p, r);
	}
	if (out->count - first > 1)
		order_pairs(b, S, out, first, pb, H);
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

/* A free worker scratch, taken until be_release (as bodypush.c's). */
static uint32_t be_claim(sim_bodyedge *b)
{
	for (;;)
		for (uint32_t j = 0; j < b->nscr; j++)
			if (!atomic_load_explicit(&b->busy[j], memory_order_relaxed) &&
			    !atomic_exchange_explicit(&b->busy[j], 1, memory_order_acquire))
				return j;
}

static void be_release(sim_bodyedge *b, uint32_t j)
{
	atomic_store_explicit(&b->busy[j], 0, memory_order_release);
}

/* Chunks [begin, end) of a still body's ridges (BODYEDGE_CHUNK each),
 * each into its own pairs: from the kept lists or a fresh lookup. */
static void ridge_chunks(void *ctx, uint32_t begin, uint32_t end)
{
	const be_job *J = ctx;
	sim_bodyedge *b = J->b;
	const be_body *bd = J->bd;
	const uint32_t w = be_claim(b);
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
			if (!ridge_box(&r, J->bv, e, pb, J->cloth_box))
				continue;
			const float sh = ridge_sharpness(bd, J->bv, e);
			if (J->keep)
				filter(b, S, out, bd, ri, e, &r, sh, pb, J->half_max, J->x, J->p, J->H);
			else
				lookup(b, S, out, bd, e, &r, sh, pb, J->half_max, J->x, J->p);
		}
	}
	be_release(b, w);
}

/* Room for n chunks and for the workers' scratch (stamps for every cloth
 * edge); 0 when out of memory. */
static int be_workers(sim_bodyedge *b, uint32_t chunks, const drape_pool *pool)
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

void sim_bodyedge_begin(sim_bodyedge *b, const sim_collider_set *set, const sim_vec4 *x,
			const sim_vec4 *p, float thickness, int first, drape_pool *pool)
{
	b->pair_count = 0;
	/* A new stamp for the pinch marks; 0 is never a substep's. */
	if (++b->substep == 0) {
		memset(b->side_at, 0, (size_t)b->nce * sizeof *b->side_at);
		for (uint32_t i = 0; i < b->body_cap; i++)
			if (b->body[i].fn_at != NULL)
				memset(b->body[i].fn_at, 0, (size_t)b->body[i].nt * sizeof *b->body[i].fn_at);
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
		if ((bd->tris != bv.tris || bd->nt != bv.nt || bd->nv != bv.nv) && !body_edges(bd, &bv))
			continue;
		if (bv.moving || !keep) {
			search = 1;
			continue;
		}
		/* A still body's ridges are classified once per pose. */
		face_normals(bd, &bv);
		classify(bd, &bv, thickness + bv.thickness);
		stale |= b->kept_gen == 0 || bd->kept_gen != b->kept_gen;
	}
	if (keep && stale && !collect(b, set, x, p, thickness, pool)) {
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
		if (bd->tris != bv.tris || bd->nt != bv.nt || bd->nv != bv.nv)
			continue;
		ridge r;
		r.h = thickness + bv.thickness;
		r.bv = &bv;
		float pb[6];
		if (!bv.moving) {
			face_normals(bd, &bv);
			classify(bd, &bv, r.h);
			/* The ridges in fixed chunks on the pool, each chunk's
			 * pairs in its own list, joined in chunk order: the
			 * serial loop's pairs, in its order, at any thread
			 * count (the pinch marks are made in the join). */
			const uint32_t nc = (bd->nridge + BODYEDGE_CHUNK - 1) / BODYEDGE_CHUNK;
			if (!be_workers(b, nc, pool))
				continue;
			be_job job = {b, bd, &bv, cloth_box, &H, x, p, r.h, half_max, keep};
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
		 * classify() followed by the still body's loop. */
		bd->still_q0 = NULL;
		bd->ridge_valid = 0;
		/* Where each vertex's box over the substep lies against the
		 * cloth's box: an edge's box is the union of its two vertices',
		 * so it misses the cloth's box exactly when both lie beyond
		 * the same face of it (the two outcodes share a bit), and such
		 * an edge is not classified. */
		for (uint32_t v = 0; v < bv.nv; v++)
			bd->voc[v] = outcode(at3(bv.q0, v), at3(bv.q1, v), cloth_box);
		/* Serial, into the first chunk's list and the first worker's
		 * scratch, joined as the still bodies' are. */
		if (!be_workers(b, 1, pool))
			continue;
		be_chunk *out = &b->chunk[0];
		out->count = 0;
		for (uint32_t k = 0; k < bd->ne; k++) {
			const be_bedge *e = &bd->e[k];
			if (bd->voc[e->a] & bd->voc[e->b])
				continue;
			const uint32_t f[2] = {e->f0, e->f1};
			for (int j = 0; j < 2; j++)
				if (bd->fn_at[f[j]] != b->substep) {
					bd->fn_at[f[j]] = b->substep;
					face_normal(bd, &bv, f[j]);
				}
			float sh = ridge_sharpness(bd, &bv, e);
			float len = v3_len(v3_sub(at3(bv.q0, e->b), at3(bv.q0, e->a)));
			if (sh > 0.0f && len * sh > BODYEDGE_SHARP * r.h &&
			    ridge_box(&r, &bv, e, pb, cloth_box))
				lookup(b, &b->scr[0], out, bd, e, &r, sh, pb, half_max, x, p);
		}
		pairs_join(b, out);
	}
	/* Drop the pinched cloth edges' pairs; the others keep their order. */
	uint32_t kept = 0;
	for (uint32_t k = 0; k < b->pair_count; k++)
		if (!b->pinched[b->pair[k].edge])
			b->pair[kept++] = b->pair[k];
	b->pair_count = kept;
}

uint32_t sim_bodyedge_project(sim_bodyedge *b, sim_vec4 *restrict p, const sim_vec4 *restrict x)
{
	uint32_t pushed = 0;
	for (uint32_t k = 0; k < b->pair_count; k++) {
		const be_pair *pr = &b->pair[k];
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

uint32_t sim_bodyedge_pair_count(const sim_bodyedge *b)
{
	return b->pair_count;
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
		   (size_t)b->pair_cap * sizeof(be_pair) + (size_t)b->body_cap * sizeof(be_body);
	for (uint32_t c = 0; c < b->chunk_cap; c++)
		s += sizeof(be_chunk) + (size_t)b->chunk[c].cap * (sizeof(be_pair) + sizeof(sim_v3)) +
		     sizeof(be_kchunk) + b->kchunk[c].cap * sizeof(uint32_t);
	for (uint32_t j = 0; j < b->nscr; j++)
		s += sizeof(be_scratch) + (size_t)b->scr[j].stamp_cap * sizeof(uint32_t) +
		     (size_t)b->scr[j].key_cap * (sizeof(be_key) + sizeof(be_pair));
	for (uint32_t i = 0; i < b->body_cap; i++)
		s += (size_t)b->body[i].ne * (sizeof(be_bedge) + 2 * sizeof(uint32_t)) +
		     (size_t)b->body[i].nt * (3 * sizeof(float) + sizeof(uint32_t)) +
		     (size_t)b->body[i].nv;
	return s;
}
