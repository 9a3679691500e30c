/*
 * The body's vertices against the cloth's triangles (bodypush.h).
 *
 * The vertex contact keeps every cloth vertex at distance h (cloth
 * thickness + collider thickness) outside the body, but a cloth triangle
 * spans 2 to 3 cm on a garment and the body under it is not flat: a nose,
 * a knuckle or a thigh bulging between three cloth vertices comes out
 * through the face between them. This is the other half of the
 * vertex-triangle contact pair (the body's vertices against the cloth's
 * faces), the same constraint as the self-collision's point-triangle one
 * with the point kinematic:
 *
 *  1. Once per substep, for each body vertex q (world positions q0, q1 at
 *     the start and end of the substep) inside the cloth's bounding box,
 *     the cloth triangles whose box over their start and predicted
 *     positions (grown by h + 1 mm) holds q's motion are found with a
 *     spatial hash of those boxes (selfhash.h, Müller's dense hash; cells
 *     the triangles' mean size).
 *     Only features take part: a body vertex in a hollow, or too smooth
 *     at the scale of the face to rise over it (sharp_enough), is left
 *     to the vertex contact, and so is a face met from both of its sides
 *     (drop_pinched); mark_hollow measures the body's shape, once for a
 *     still body and once a frame for a moving one.
 *     Within a frame the candidates are kept from substep to substep
 *     while the cloth and the body drift little (bodykeep.c): filtered
 *     with the same box test and put in the hash query's order, they give
 *     the same pairs as the search, which then runs only when the drift
 *     exceeds the bound or the frame begins. No list is collected while
 *     a body vertex moves further in one substep than the bound allows
 *     (the walk's strides): it could serve no later substep.
 *  2. The side is decided then, by the body: the outer side of a triangle
 *     is the one the body's own normal at q points to (area-weighted
 *     vertex normal, outward by the mesh's enclosed volume), so the
 *     orientation of the cloth's triangles, which a garment does not
 *     define, never matters. A triangle seen edge-on from q (|n . nb| <
 *     0.3) has no such side and is left to its neighbours. The pair is
 *     kept when q was under the triangle at the start, or at most
 *     BODYPUSH_RECOVER above it (a feature already through, from the
 *     input pose or an earlier substep the solve could not satisfy, is
 *     brought back under), and near enough to meet it in this substep.
 *     Because the side comes from the start and is enforced at the end,
 *     a body vertex that crosses a triangle within the substep, however
 *     fast, is still pushed back to the side it came from: the continuous
 *     test linearised, as in deform.c.
 *  3. Each iteration, for each pair in order: with n the triangle's unit
 *     normal at p oriented by the pair's sign, the gap s = n . (q1 - p0);
 *     when q1 projects inside the triangle (barycentric coordinates b_k
 *     >= -BODYPUSH_EDGE) and C = s + h > 0, the triangle moves out along n
 *     by C at the point over q1: vertex k by w_k b_k / (sum_j w_j b_j^2)
 *     C n (the point-triangle projection of Müller et al. 2006, section
 *     4.4 with the body's point of inverse mass 0; Bridson et al. 2002
 *     weight triangle impulses the same way). A push larger than the
 *     motion possible in the substep is refused, as in deform.c, and so
 *     is one that would move a vertex by more than BODYPUSH_LEVER times
 *     C (the point next to a pinned vertex). The step runs this before
 *     the vertex contact, which has the last word (sim.c).
 *  4. Friction: the tangential motion of that point relative to q over
 *     the substep is removed entirely below static_friction C and reduced
 *     by friction C otherwise (Macklin et al. 2014, eq. 24), spread over
 *     the triangle's vertices the same way, so the response is the
 *     collider's vertex contact's.
 *
 * The pairs come in a fixed order (bodies, then their vertices, then the
 * hash's order of triangles, each once), so the result is the same for
 * any thread count and SIMD width. The search of step 1 runs on the pool
 * in fixed chunks of SIM_BODY_CHUNK body vertices (and the cloth's boxes
 * in blocks of BODYPUSH_BOX_BLOCK triangles), each chunk into its own
 * list, joined in chunk order: that order exactly. A body's normals,
 * hollows and falls (every substep for a moving body) are gathered per
 * vertex on the pool, each vertex summing its triangles in the order the
 * serial loop over triangles did (bp_adj): the same bits. The projection
 * runs in bodysched.h's order: each tile's pairs (all three vertices in
 * one tile of the cloth) in list order, the tiles in parallel on the pool,
 * then the pairs across tiles in list order; an order fixed by the list
 * and the cloth's vertex count, so the same bits at any thread count. Its
 * cost on the demos is in docs/bodycontact.md and docs/speed.md ("The
 * demo garment is not real time": "The body contact's projections on
 * every thread").
 */
#include "server/sim/bodypush.h"

#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bodykeep.h"
#include "server/sim/bodysched.h"
#include "server/sim/box.h"
#include "server/sim/pool.h"
#include "server/sim/selfhash.h"

/* How far above a triangle (outside the cloth) a body vertex may start a
 * substep and still be brought back under: the 13 mm the issue saw at
 * most, with margin. Beyond it the vertex is taken to be outside the
 * cloth on purpose (a hand out of a sleeve). */
#define BODYPUSH_RECOVER 0.02f
/* Barycentric slack at a triangle's edges, so that a body vertex right on
 * an edge between two triangles meets both and neither lets it through. */
#define BODYPUSH_EDGE 0.02f
/* The rise over the tangent plane, as a fraction of the distance, that
 * makes a body vertex's neighbour a hollow's wall (about 6 degrees). */
#define BODYPUSH_HOLLOW 0.1f
/* The fall, as a fraction of the contact distance, from which a body
 * vertex is a feature the faces must be kept off (sharp_enough). */
#define BODYPUSH_SHARP 0.25f
/* The most a cloth vertex may move per unit of push: 1 when the three
 * are free (b_k / sum b_j^2 <= 1 for equal masses), more beside a pin. */
#define BODYPUSH_LEVER 2.0f
/* |n . nb| below which a triangle is taken to be edge-on to the body
 * vertex (25 degrees). Cloth lies along the skin, so a feature under the
 * cloth faces it nearly square; at steeper angles the body vertex is in a
 * crease or on a side wall whose own vertex contact already holds the
 * cloth, and pushing across it drove sleeve vertices into a bending elbow
 * (test_sim_deform's test_elbow fails at 0.7). */
#define BODYPUSH_FACING 0.5f

/* Cloth triangles per block of the boxes' loop on the pool. */
#define BODYPUSH_BOX_BLOCK 1024u

/* One block's bounds of the triangles' boxes (box_blocks()). */
typedef struct bp_bred {
	float lo[3], hi[3], half;
} bp_bred;

typedef struct bp_pair {
	uint32_t tri;
	float sigma;    /* +-1: turns the triangle's normal to the outer side */
	sim_v3 q1, dq;  /* the body vertex at the end, and its motion over the substep */
	sim_v3 nb;      /* the body's outward unit normal at the vertex */
	float h, reach; /* contact distance, the largest push accepted */
	float mu, mus;
} bp_pair;

/* One chunk's pairs (SIM_BODY_CHUNK body vertices), joined in chunk order. */
typedef struct bp_chunk {
	bp_pair *pair;
	uint32_t count, cap;
} bp_chunk;

/* A body's triangle corners grouped by vertex: vertex v's corners are
 * corner[start[v] .. start[v + 1]), each 3 t + j (corner j of triangle t),
 * in increasing order, which is the order the loops over triangles and
 * their corners visited v. tn holds each triangle's area-weighted normal
 * at the substep's start. Built once per mesh (its stamp, mesh). */
typedef struct bp_adj {
	uint64_t mesh;
	uint32_t nt, nv;
	uint32_t *start, *corner;
	float *tn;
} bp_adj;

struct sim_bodypush {
	uint32_t ntri;
	float *box;    /* 6 per triangle: the boxes hashed */
	float *ext;    /* per triangle: its box's largest extent, before growing */
	bp_bred *bred; /* per block of BODYPUSH_BOX_BLOCK triangles */
	/* Per triangle: bit 0 met from its +n side, bit 1 from -n; set by
	 * every chunk's worker, an or, so in any order the same bits. */
	_Atomic uint8_t *sides;
	sim_hash hash;
	/* The parallel search: one body's chunks' pairs, and the workers'
	 * scratch (a running chunk takes a free one: busy). */
	bp_chunk *chunk;
	uint32_t chunk_cap;
	sim_bodykeep_scratch *scr;
	_Atomic uint8_t *busy;
	uint32_t nscr;
	float *nrm;       /* 3 per body vertex: normals at the start */
	uint8_t *hollow;  /* per body vertex: 1 where a neighbour rises over its tangent plane */
	float *fall;      /* 2 per body vertex: sine of the steepest fall to a neighbour, its distance */
	uint32_t nrm_cap; /* body vertices the normals hold */
	/* Per collider: its triangles' corners by vertex, so that the
	 * normals, hollows and falls are gathered per vertex on the pool in
	 * the order the serial loop over triangles summed them (bp_adj). */
	struct bp_adj *adj;
	uint32_t adj_cap;
	bp_pair *pair;
	uint32_t pair_count, pair_cap;
	/* The still body whose normals, hollows and falls are in the arrays
	 * (its start positions and version), so a static body's are not
	 * measured again every substep. */
	const float *still_q0;
	uint64_t still_version;
	uint32_t shape_of; /* 1 + the collider whose hollows and falls are held, 0 none */
	const uint32_t *tris;
	/* The candidates kept across a frame's substeps (bodykeep.c); NULL
	 * when out of memory, then every substep searches. */
	sim_bodykeep *keep;
	/* The iterations' order of the pairs (bodysched.h), made again at
	 * the first iteration after a begin (sched_stale). */
	sim_bodysched sched;
	int sched_stale;
};

sim_bodypush *sim_bodypush_create(uint32_t ntri)
{
	sim_bodypush *b = calloc(1, sizeof *b);
	if (b == NULL)
		return NULL;
	b->ntri = ntri;
	b->box = malloc(6 * (size_t)ntri * sizeof *b->box);
	b->sides = calloc((size_t)ntri + 1, sizeof *b->sides);
	b->ext = malloc((size_t)ntri * sizeof *b->ext + 1);
	b->bred = malloc(((size_t)ntri / BODYPUSH_BOX_BLOCK + 1) * sizeof *b->bred);
	b->keep = sim_bodykeep_create();
	if (b->box == NULL || b->sides == NULL || b->ext == NULL || b->bred == NULL ||
	    sim_hash_init(&b->hash, ntri) != DRAPE_OK) {
		sim_bodypush_free(b);
		return NULL;
	}
	return b;
}

void sim_bodypush_free(sim_bodypush *b)
{
	if (b == NULL)
		return;
	free(b->box);
	free((void *)b->sides);
	free(b->ext);
	free(b->bred);
	for (uint32_t c = 0; c < b->chunk_cap; c++)
		free(b->chunk[c].pair);
	free(b->chunk);
	for (uint32_t j = 0; j < b->nscr; j++)
		sim_bodykeep_scratch_free(&b->scr[j]);
	free(b->scr);
	free((void *)b->busy);
	sim_hash_free(&b->hash);
	free(b->nrm);
	free(b->hollow);
	free(b->fall);
	for (uint32_t i = 0; i < b->adj_cap; i++) {
		free(b->adj[i].start);
		free(b->adj[i].corner);
		free(b->adj[i].tn);
	}
	free(b->adj);
	free(b->pair);
	sim_bodykeep_free(b->keep);
	sim_bodysched_free(&b->sched);
	free(b);
}

drape_err sim_bodypush_reserve(sim_bodypush *b, const sim_collider_set *set, drape_error *err)
{
	uint32_t need = 0;
	for (uint32_t i = 0; i < set->count; i++) {
		/* Before the first substep a rigid mesh has no world pose yet:
		 * its size is asked for apart from the view. */
		uint32_t nv = sim_colliders_body_size(set, i);
		need = nv > need ? nv : need;
	}
	if (need <= b->nrm_cap)
		return DRAPE_OK;
	float *n = realloc(b->nrm, 3 * (size_t)need * sizeof *n);
	if (n != NULL)
		b->nrm = n;
	uint8_t *hl = n != NULL ? realloc(b->hollow, need) : NULL;
	if (hl != NULL)
		b->hollow = hl;
	float *fl = hl != NULL ? realloc(b->fall, 2 * (size_t)need * sizeof *fl) : NULL;
	if (fl != NULL)
		b->fall = fl;
	if (n == NULL || hl == NULL || fl == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM,
					"colliders: out of memory for the body contact of %u vertices", need);
	b->nrm_cap = need;
	/* A first guess at the pairs: a few per cloth triangle. */
	if (b->pair_cap == 0) {
		uint32_t cap = 4 * b->ntri + 64;
		bp_pair *p = malloc((size_t)cap * sizeof *p);
		if (p != NULL) {
			b->pair = p;
			b->pair_cap = cap;
		}
	}
	return DRAPE_OK;
}

static inline sim_v3 at3(const float *pos, uint32_t v)
{
	return v3(pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]);
}

/* Appends a pair to a chunk's, growing the array by half again when full
 * (amortised: a garment's pairs settle after the first substeps). 0 when
 * out of memory: the pair is dropped and the contact is weaker this
 * substep. */
static int pair_push(bp_chunk *ch, const bp_pair *pr)
{
	if (ch->count == ch->cap) {
		uint32_t cap = ch->cap + ch->cap / 2 + 64;
		bp_pair *p = realloc(ch->pair, (size_t)cap * sizeof *p);
		if (p == NULL)
			return 0;
		ch->pair = p;
		ch->cap = cap;
	}
	ch->pair[ch->count++] = *pr;
	return 1;
}

/* Appends chunk ch's pairs to b's; the pairs that do not fit when out of
 * memory are dropped, as pair_push drops them. */
static void pairs_join(sim_bodypush *b, const bp_chunk *ch)
{
	uint32_t n = ch->count;
	if (b->pair_count + n > b->pair_cap) {
		uint32_t cap = b->pair_count + n + (b->pair_count + n) / 2 + 64;
		bp_pair *p = realloc(b->pair, (size_t)cap * sizeof *p);
		if (p != NULL) {
			b->pair = p;
			b->pair_cap = cap;
		} else {
			n = b->pair_cap - b->pair_count;
		}
	}
	if (n > 0)
		memcpy(&b->pair[b->pair_count], ch->pair, (size_t)n * sizeof *ch->pair);
	b->pair_count += n;
}

/* The body vertex (q0, q1, outward unit normal nb) against triangle t:
 * kept when it starts under the triangle (or at most BODYPUSH_RECOVER
 * over it) and near enough to meet it in this substep. */
/*
 * A body vertex can come out through a face whose three vertices rest on
 * the body (at h) only where the body rises more than h over them: the
 * surface falls away from the vertex by about (L/2) sin(a) over half the
 * triangle's longest edge L, with a the steepest fall to a neighbour at
 * distance d, linearly (a cone's tip: as far as the neighbour reaches) and
 * then, past d, bending on as a circle would (a limb: (L/2)^2 sin(a) / d).
 * A vertex whose fall is under BODYPUSH_SHARP h is smooth at the cloth's
 * scale: the vertex contact keeps the face off it, and pushing the face as
 * well over-constrains a taut garment (a sleeve pinned at the shoulder
 * over a bending elbow: the face held on the forearm drags cloth into the
 * crease, where the vertex contact loses).
 */
static int sharp_enough(const sim_bodypush *b, const uint32_t *v, const sim_vec4 *x, uint32_t qi,
			float h)
{
	float L = 0.0f;
	for (int k = 0; k < 3; k++) {
		float e = v3_len(v3_sub(v3_of4(x[v[k]]), v3_of4(x[v[(k + 1) % 3]])));
		L = e > L ? e : L;
	}
	const float *f = &b->fall[2 * (size_t)qi];
	if (!(f[1] > 0.0f))
		return 0; /* nothing falls away from it */
	float half = 0.5f * L;
	float drop = half * f[0] * (f[1] > half ? 1.0f : half / f[1]);
	return drop > BODYPUSH_SHARP * h;
}

static void consider(sim_bodypush *b, bp_chunk *out, uint32_t t, const sim_vec4 *x,
		     const sim_vec4 *p, sim_v3 q0, sim_v3 q1, sim_v3 nb, uint32_t qi,
		     const sim_body_view *bv, float h)
{
	const uint32_t *v = &b->tris[3 * (size_t)t];
	sim_v3 a = v3_of4(x[v[0]]), e1 = v3_sub(v3_of4(x[v[1]]), a), e2 = v3_sub(v3_of4(x[v[2]]), a);
	sim_v3 n = v3_cross(e1, e2);
	float l = v3_len(n);
	if (!(l > 0.0f))
		return;
	n = v3_scale(n, 1.0f / l);
	float f = v3_dot(n, nb);
	if (!(fabsf(f) >= BODYPUSH_FACING))
		return;
	float sigma = f < 0.0f ? -1.0f : 1.0f;
	float s0 = sigma * v3_dot(n, v3_sub(q0, a));
	if (!(s0 <= BODYPUSH_RECOVER))
		return;
	/* Under the triangle within the pinch distance: seen from this side
	 * (drop_pinched). */
	if (-s0 <= h) {
		const uint8_t bit = sigma > 0.0f ? 1u : 2u;
		if (!(atomic_load_explicit(&b->sides[t], memory_order_relaxed) & bit))
			atomic_fetch_or_explicit(&b->sides[t], bit, memory_order_relaxed);
	}
	/* Only a feature sharp for this triangle's size can come through it
	 * (see below); the sides were marked first, so a pinch is still seen. */
	if (!sharp_enough(b, v, x, qi, h))
		return;
	float motion = 0.0f;
	for (int k = 0; k < 3; k++) {
		float m = v3_len(v3_sub(v3_of4(p[v[k]]), v3_of4(x[v[k]])));
		motion = m > motion ? m : motion;
	}
	sim_v3 dq = v3_sub(q1, q0);
	/* The iterations may carry the cloth further than its prediction:
	 * twice its motion, as deform.c allows. */
	float reach = h + v3_len(dq) + 2.0f * motion + 1e-3f;
	if (!(-s0 <= reach))
		return;
	bp_pair pr = {t, sigma, q1, dq, nb, h, reach + BODYPUSH_RECOVER, bv->friction,
		      bv->static_friction};
	pair_push(out, &pr);
}

/*
 * A triangle met by body vertices from both of its sides is pinched
 * between two surfaces of the body (the inside of a bending elbow, between
 * the thighs): pushing it out for one side pushes it into the other, and
 * the iterations would fight until its vertices end up inside the body.
 * Its pairs are dropped, leaving the triangle to the vertex contact, which
 * lets the cloth slide out of the crease. A side counts when its body
 * vertex is within the contact distance under the face. Pairs keep their
 * order.
 */
static void drop_pinched(sim_bodypush *b)
{
	uint32_t kept = 0;
	for (uint32_t k = 0; k < b->pair_count; k++)
		if (atomic_load_explicit(&b->sides[b->pair[k].tri], memory_order_relaxed) != 3u)
			b->pair[kept++] = b->pair[k];
	b->pair_count = kept;
}

/*
 * Only where the body bulges can it come through a cloth face: the cloth
 * lies on the bulge's tops through its own vertices, and the body between
 * them rises over the chord. A vertex in a hollow (the inside of an elbow,
 * an armpit, between the thighs) lies under any face resting on the body
 * around it; there the cloth is kept out by its own vertices, and a face
 * pushed along the hollow's normal is pushed into the body's other side.
 * A vertex is in a hollow when a neighbour along one of its triangles
 * rises over its tangent plane by more than BODYPUSH_HOLLOW of the
 * distance to it (a cylinder along its axis, a flat or a convex patch
 * have none). Measured with the normals of `bv` in b->nrm.
 */
static void mark_hollow(sim_bodypush *b, const sim_body_view *bv, const bp_adj *A, uint32_t i)
{
	uint8_t hollow = 0;
	float f[2] = {0.0f, 0.0f};
	sim_v3 nb = v3_scale(at3(b->nrm, i), bv->orient);
	float nl = v3_len(nb);
	if (nl > 0.0f) {
		sim_v3 q = at3(bv->q0, i);
		for (uint32_t c = A->start[i]; c < A->start[i + 1]; c++) {
			const uint32_t *v = &bv->tris[3 * (size_t)(A->corner[c] / 3)];
			const uint32_t j = A->corner[c] % 3;
			for (uint32_t k = 1; k < 3; k++) {
				sim_v3 d = v3_sub(at3(bv->q0, v[(j + k) % 3]), q);
				float dl = v3_len(d), rise = v3_dot(d, nb) / nl;
				if (rise > BODYPUSH_HOLLOW * dl)
					hollow = 1;
				if (dl > 0.0f && -rise / dl > f[0])
					f[0] = -rise / dl, f[1] = dl;
			}
		}
	}
	b->hollow[i] = hollow;
	b->fall[2 * (size_t)i] = f[0];
	b->fall[2 * (size_t)i + 1] = f[1];
}

/* Body vertices (or triangles) per block of the normals' and the
 * hollows' passes on the pool. */
#define BODYPUSH_SHAPE_BLOCK 1024u

/* What the passes over one body's shape share. */
typedef struct bp_sjob {
	sim_bodypush *b;
	const sim_body_view *bv;
	const bp_adj *A;
	int shape;
} bp_sjob;

/* The area-weighted normals of triangles [begin, end) at the start. */
static void tri_normals(void *ctx, uint32_t begin, uint32_t end)
{
	const bp_sjob *J = ctx;
	const sim_body_view *bv = J->bv;
	for (uint32_t t = begin; t < end; t++) {
		const uint32_t *v = &bv->tris[3 * (size_t)t];
		sim_v3 a = at3(bv->q0, v[0]);
		sim_v3 n = v3_cross(v3_sub(at3(bv->q0, v[1]), a), v3_sub(at3(bv->q0, v[2]), a));
		float *o = &J->A->tn[3 * (size_t)t];
		o[0] = n.x, o[1] = n.y, o[2] = n.z;
	}
}

/* Vertices [begin, end): each one's normal, the sum of its triangles'
 * from 0 in triangle order (the serial scatter's additions, in its
 * order: the same bits), then, when the shape is measured, its hollow
 * and fall. */
static void vertex_shape(void *ctx, uint32_t begin, uint32_t end)
{
	const bp_sjob *J = ctx;
	const bp_adj *A = J->A;
	for (uint32_t i = begin; i < end; i++) {
		float q[3] = {0.0f, 0.0f, 0.0f};
		for (uint32_t c = A->start[i]; c < A->start[i + 1]; c++) {
			const float *n = &A->tn[3 * (size_t)(A->corner[c] / 3)];
			q[0] += n[0], q[1] += n[1], q[2] += n[2];
		}
		float *o = &J->b->nrm[3 * (size_t)i];
		o[0] = q[0], o[1] = q[1], o[2] = q[2];
	}
	if (J->shape)
		for (uint32_t i = begin; i < end; i++)
			mark_hollow(J->b, J->bv, A, i);
}

/* Collider ci's corners by vertex (bp_adj), built when its mesh (stamp)
 * is new; NULL when out of memory (the body then takes no part). */
static const bp_adj *body_adj(sim_bodypush *b, uint32_t ci, const sim_body_view *bv)
{
	if (ci >= b->adj_cap) {
		bp_adj *a = realloc(b->adj, ((size_t)ci + 1) * sizeof *a);
		if (a == NULL)
			return NULL;
		memset(a + b->adj_cap, 0, ((size_t)ci + 1 - b->adj_cap) * sizeof *a);
		b->adj = a;
		b->adj_cap = ci + 1;
	}
	bp_adj *A = &b->adj[ci];
	if (A->mesh == bv->mesh && A->nt == bv->nt && A->nv == bv->nv && A->start != NULL)
		return A;
	free(A->start);
	free(A->corner);
	free(A->tn);
	memset(A, 0, sizeof *A);
	A->start = calloc((size_t)bv->nv + 2, sizeof *A->start);
	A->corner = malloc(3 * (size_t)bv->nt * sizeof *A->corner + 1);
	A->tn = malloc(3 * (size_t)bv->nt * sizeof *A->tn + 1);
	if (A->start == NULL || A->corner == NULL || A->tn == NULL) {
		free(A->start);
		free(A->corner);
		free(A->tn);
		memset(A, 0, sizeof *A);
		return NULL;
	}
	/* A counting sort of the corners by vertex, stable: within a
	 * vertex, corners in increasing order. */
	const size_t nc = 3 * (size_t)bv->nt;
	for (size_t c = 0; c < nc; c++)
		A->start[bv->tris[c] + 2]++;
	for (uint32_t v = 0; v < bv->nv; v++)
		A->start[v + 2] += A->start[v + 1];
	for (size_t c = 0; c < nc; c++)
		A->corner[A->start[bv->tris[c] + 1]++] = (uint32_t)c;
	A->mesh = bv->mesh;
	A->nt = bv->nt;
	A->nv = bv->nv;
	return A;
}

/* What the chunks of one body's search share (sim_bodypush_begin). */
typedef struct bp_job {
	sim_bodypush *b;
	const sim_body_view *bv;
	uint32_t ci;
	const sim_vec4 *x, *p;
	const sim_hash *H;
	const float *cloth_box;
	float h, half_max, kmargin, hb;
	int kept, collecting, kfilter;
} bp_job;

/* consider's arguments but the triangle, for sim_hash_visit. */
typedef struct bp_vertex {
	sim_bodypush *b;
	bp_chunk *out;
	const sim_vec4 *x, *p;
	sim_v3 q0, q1, nb;
	uint32_t qi;
	const sim_body_view *bv;
	float h;
} bp_vertex;

static int visit_triangle(void *ctx, uint32_t t)
{
	const bp_vertex *v = ctx;
	consider(v->b, v->out, t, v->x, v->p, v->q0, v->q1, v->nb, v->qi, v->bv, v->h);
	return 1;
}

/* Body vertex i of job J's body: collected into the kept list when one
 * is being collected, then its pairs into out, from the kept list or a
 * fresh query of the hash. *cfail is set when the chunk's collection ran
 * out of memory (its later vertices then search afresh). */
static void search_vertex(const bp_job *J, sim_bodykeep_scratch *S, bp_chunk *out, uint32_t i,
			  int *cfail)
{
	sim_bodypush *b = J->b;
	const sim_body_view *bv = J->bv;
	const float h = J->h, half_max = J->half_max, kmargin = J->kmargin, hb = J->hb;
	const sim_hash *H = J->H;
	sim_bodykeep *K = b->keep;
	const float *fl = &b->fall[2 * (size_t)i];
	const int collecting = J->collecting && !*cfail;
	if (collecting &&
	    (!J->kfilter ||
	     (!b->hollow[i] && fl[1] > 0.0f &&
	      hb * fl[0] * (fl[1] > hb ? 1.0f : hb / fl[1]) > BODYPUSH_SHARP * h))) {
		sim_v3 c0 = at3(bv->q0, i), c1 = at3(bv->q1, i);
		float kb[6] = {sim_box_min(c0.x, c1.x), sim_box_min(c0.y, c1.y),
			       sim_box_min(c0.z, c1.z), sim_box_max(c0.x, c1.x),
			       sim_box_max(c0.y, c1.y), sim_box_max(c0.z, c1.z)};
		/* Only a shortcut: a box out of the cloth's box meets no
		 * triangle's and collects nothing. */
		float km[6] = {kb[0] - kmargin, kb[1] - kmargin, kb[2] - kmargin,
			       kb[3] + kmargin, kb[4] + kmargin, kb[5] + kmargin};
		if (sim_box_overlap(km, J->cloth_box) &&
		    !sim_bodykeep_collect(K, S, J->ci, i, H, b->box, kb))
			*cfail = 1;
	}
	/* A hollow, or a vertex too smooth to come through the largest of
	 * the cloth's faces (sharp_enough), meets none. */
	if (b->hollow[i] || !(fl[1] > 0.0f) ||
	    !(half_max * fl[0] * (fl[1] > half_max ? 1.0f : half_max / fl[1]) > BODYPUSH_SHARP * h))
		return;
	sim_v3 q0 = at3(bv->q0, i), q1 = at3(bv->q1, i);
	float pb[6] = {sim_box_min(q0.x, q1.x), sim_box_min(q0.y, q1.y), sim_box_min(q0.z, q1.z),
		       sim_box_max(q0.x, q1.x), sim_box_max(q0.y, q1.y), sim_box_max(q0.z, q1.z)};
	if (!sim_box_overlap(pb, J->cloth_box))
		return;
	sim_v3 nb = v3_scale(at3(b->nrm, i), bv->orient);
	float nl = v3_len(nb);
	if (!(nl > 0.0f))
		return;
	nb = v3_scale(nb, 1.0f / nl);
	const sim_vec4 *x = J->x, *p = J->p;
	if (J->kept || (J->collecting && !*cfail)) {
		const uint32_t *ts;
		uint32_t nts = sim_bodykeep_order(K, S, J->ci, i, H, b->box, pb, &ts);
		for (uint32_t j = 0; j < nts; j++)
			consider(b, out, ts[j], x, p, q0, q1, nb, i, bv, h);
		return;
	}
	const uint32_t epoch = sim_stamp_next(S->stamp, S->stamp_cap, &S->epoch);
	const sim_cellbox cb = sim_hash_cells(H, pb);
	bp_vertex v = {b, out, x, p, q0, q1, nb, i, bv, h};
	sim_hash_visit(H, &cb, b->box, pb, S->stamp, epoch, visit_triangle, &v);
}

/* Chunks [begin, end) of a body's vertices, each into its own pairs. */
static void search_chunks(void *ctx, uint32_t begin, uint32_t end)
{
	const bp_job *J = ctx;
	sim_bodypush *b = J->b;
	const uint32_t w = sim_slot_claim(b->busy, b->nscr);
	for (uint32_t c = begin; c < end; c++) {
		bp_chunk *out = &b->chunk[c];
		out->count = 0;
		int cfail = 0;
		const uint32_t i1 = J->bv->nv - c * SIM_BODY_CHUNK > SIM_BODY_CHUNK
					    ? (c + 1) * SIM_BODY_CHUNK
					    : J->bv->nv;
		for (uint32_t i = c * SIM_BODY_CHUNK; i < i1; i++)
			search_vertex(J, &b->scr[w], out, i, &cfail);
	}
	sim_slot_release(b->busy, w);
}

/* Room for a body of nv vertices' chunks and for the workers' scratch
 * (stamps for every triangle); 0 when out of memory. */
static int bp_workers(sim_bodypush *b, uint32_t nv, const drape_pool *pool)
{
	const uint32_t chunks = (nv + SIM_BODY_CHUNK - 1) / SIM_BODY_CHUNK;
	if (chunks > b->chunk_cap) {
		bp_chunk *c = realloc(b->chunk, (size_t)chunks * sizeof *c);
		if (c == NULL)
			return 0;
		memset(c + b->chunk_cap, 0, (size_t)(chunks - b->chunk_cap) * sizeof *c);
		b->chunk = c;
		b->chunk_cap = chunks;
	}
	uint32_t want = drape_pool_threads(pool);
	want = want < chunks ? want : chunks;
	want = want > 0 ? want : 1;
	if (want > b->nscr) {
		sim_bodykeep_scratch *s = realloc(b->scr, (size_t)want * sizeof *s);
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
		if (!sim_bodykeep_scratch_reserve(&b->scr[j], b->ntri, 0))
			return 0;
	return 1;
}

/* What the blocks of the cloth triangles' boxes share. */
typedef struct bp_bjob {
	sim_bodypush *b;
	const uint32_t *tris;
	const sim_vec4 *x, *p;
	float grow;
} bp_bjob;

/* The boxes of one block of triangles [begin, end), their sizes into
 * b->ext and the block's bounds into b->bred. */
static void box_block(const bp_bjob *J, uint32_t begin, uint32_t end)
{
	sim_bodypush *b = J->b;
	const sim_vec4 *x = J->x, *p = J->p;
	const float grow = J->grow;
	bp_bred r = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0.0f};
	for (uint32_t t = begin; t < end; t++) {
		float *bx = &b->box[6 * (size_t)t];
		const uint32_t *v = &J->tris[3 * (size_t)t];
		for (int k = 0; k < 3; k++)
			bx[k] = INFINITY, bx[k + 3] = -INFINITY;
		for (int j = 0; j < 3; j++) {
			const sim_vec4 *q[2] = {&x[v[j]], &p[v[j]]};
			for (int m = 0; m < 2; m++) {
				float c[3] = {q[m]->x, q[m]->y, q[m]->z};
				for (int k = 0; k < 3; k++) {
					bx[k] = sim_box_min(bx[k], c[k]);
					bx[k + 3] = sim_box_max(bx[k + 3], c[k]);
				}
			}
		}
		for (int k = 0; k < 3; k++) {
			float e = v3_len(v3_sub(v3_of4(x[v[k]]), v3_of4(x[v[(k + 1) % 3]])));
			r.half = e > r.half ? e : r.half;
		}
		b->ext[t] = sim_box_max(bx[3] - bx[0], sim_box_max(bx[4] - bx[1], bx[5] - bx[2]));
		for (int k = 0; k < 3; k++) {
			bx[k] -= grow;
			bx[k + 3] += grow;
			r.lo[k] = sim_box_min(r.lo[k], bx[k]);
			r.hi[k] = sim_box_max(r.hi[k], bx[k + 3]);
		}
	}
	b->bred[begin / BODYPUSH_BOX_BLOCK] = r;
}

/* Triangles [begin, end): one block of BODYPUSH_BOX_BLOCK, or several
 * when run inline. */
static void box_blocks(void *ctx, uint32_t begin, uint32_t end)
{
	for (uint32_t t0 = begin; t0 < end; t0 += BODYPUSH_BOX_BLOCK)
		box_block(ctx, t0, end - t0 > BODYPUSH_BOX_BLOCK ? t0 + BODYPUSH_BOX_BLOCK : end);
}

void sim_bodypush_begin(sim_bodypush *b, const sim_collider_set *set, const uint32_t *tris,
			uint32_t ntri, const sim_vec4 *x, const sim_vec4 *p, float thickness,
			int new_frame, drape_pool *pool)
{
	b->pair_count = 0;
	b->sched_stale = 1;
	b->tris = tris;
	memset((void *)b->sides, 0, (size_t)b->ntri);
	float hmax = 0.0f;
	uint32_t bodies = 0, nvmax = 0;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv) || bv.nv > b->nrm_cap)
			continue;
		bodies++;
		hmax = fmaxf(hmax, thickness + bv.thickness);
		nvmax = bv.nv > nvmax ? bv.nv : nvmax;
	}
	if (bodies == 0 || ntri == 0 || ntri > b->ntri || !bp_workers(b, nvmax, pool))
		return;
	/* The triangles' boxes over x and p, grown by the largest contact
	 * distance and a millimetre; the cell is their mean size. */
	const float grow = hmax + 1e-3f;
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	double size = 0.0;
	float half_max = 0.0f; /* the longest edge at x, halved below */
	/* In blocks on the pool; the blocks' bounds are combined in order and
	 * the sizes summed in triangle order, as the serial loop did (the
	 * min and max of boxes never meet a signed zero: grow > 0). */
	bp_bjob bj = {b, tris, x, p, grow};
	sim_pool_for(pool, ntri, BODYPUSH_BOX_BLOCK, box_blocks, &bj);
	for (uint32_t c = 0; c * BODYPUSH_BOX_BLOCK < ntri; c++) {
		const bp_bred *r = &b->bred[c];
		half_max = r->half > half_max ? r->half : half_max;
		for (int k = 0; k < 3; k++) {
			lo[k] = sim_box_min(lo[k], r->lo[k]);
			hi[k] = sim_box_max(hi[k], r->hi[k]);
		}
	}
	for (uint32_t t = 0; t < ntri; t++)
		size += isfinite(b->ext[t]) ? b->ext[t] : 0.0f;
	half_max *= 0.5f;
	float cell = 0.5f * (float)(size / ntri) + grow;
	if (!(cell > 1e-4f) || !isfinite(cell))
		cell = 1e-4f;
	/* A list kept from an earlier substep of this frame stands for the
	 * hash while the drift allows (bodykeep.c); else the hash is built
	 * and, with the list switched on, the candidates collected anew.
	 * Either way the same pairs in the same order. */
	sim_bodykeep *K = b->keep;
	int kept = 0, collecting = 0;
	if (sim_bodykeep_margin(K) > 0.0f) {
		kept = !new_frame &&
		       sim_bodykeep_valid(K, set, tris, ntri, b->box, grow, half_max, thickness);
		/* Nor while the body outruns the bound in one substep: such a
		 * list would serve no substep after this one. */
		if (!kept && (new_frame || sim_bodykeep_worth(K)) && !sim_bodykeep_outrun(K, set))
			collecting = sim_bodykeep_start(K, set, tris, ntri, b->box, grow, half_max,
							thickness);
		else if (!kept)
			sim_bodykeep_drop(K);
	}
	if (kept) {
		b->hash.cell = cell;
		b->hash.inv_cell = 1.0f / cell;
	} else if (sim_hash_build(&b->hash, b->box, ntri, cell) != 0) {
		sim_bodykeep_drop(K);
		return;
	}
	const float kmargin = sim_bodykeep_margin(K);
	const float cloth_box[6] = {lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]};
	const sim_hash *H = &b->hash;
	for (uint32_t ci = 0; ci < set->count; ci++) {
		sim_body_view bv;
		if (!sim_colliders_body(set, ci, &bv) || bv.nv > b->nrm_cap)
			continue;
		const float h = thickness + bv.thickness;
		if (!bv.moving && b->shape_of == ci + 1 && b->still_q0 == bv.q0 &&
		    b->still_version == bv.version)
			goto measured;
		/* A moving body's hollows and falls are its shape at the
		 * cloth's scale, which skinning changes slowly: measured at
		 * the first substep of each frame; its normals every substep. */
		const int shape = !bv.moving || new_frame || b->shape_of != ci + 1;
		b->shape_of = ci + 1;
		b->still_q0 = bv.moving ? NULL : bv.q0;
		b->still_version = bv.version;
		/* Area-weighted normals at the start pose, and the shape:
		 * triangles, then vertices, in fixed blocks on the pool, each
		 * vertex summing its triangles in the serial loop's order. */
		const bp_adj *A = body_adj(b, ci, &bv);
		if (A == NULL) {
			b->shape_of = 0;
			continue;
		}
		bp_sjob sj = {b, &bv, A, shape};
		sim_pool_for(pool, bv.nt, BODYPUSH_SHAPE_BLOCK, tri_normals, &sj);
		sim_pool_for(pool, bv.nv, BODYPUSH_SHAPE_BLOCK, vertex_shape, &sj);
	measured:;
		/* A collection takes every vertex the filter below can pass
		 * until the frame ends (bodykeep.c). The vertices are searched
		 * in fixed chunks, on the pool, and the chunks' pairs joined
		 * in chunk order: the pairs of the serial loop, in its order. */
		bp_job job = {b, &bv, ci, x, p, H, cloth_box, h, half_max, kmargin,
			      collecting ? sim_bodykeep_half_bound(K) : 0.0f, kept, collecting,
			      collecting && sim_bodykeep_filtered(K, ci)};
		const uint32_t chunks = (bv.nv + SIM_BODY_CHUNK - 1) / SIM_BODY_CHUNK;
		sim_pool_for(pool, chunks, 1, search_chunks, &job);
		for (uint32_t c = 0; c < chunks; c++)
			pairs_join(b, &b->chunk[c]);
	}
	if (collecting)
		sim_bodykeep_finish(K, b->scr, b->nscr);
	drop_pinched(b);
}

void sim_body_contact_push(sim_vec4 *const *P, const uint32_t *vi, const float *bc, int k, float W,
			   sim_v3 n, float c, sim_v3 dq, float mu, float mus, const sim_vec4 *x)
{
	for (int j = 0; j < k; j++) {
		float s = P[j]->w * bc[j] / W * c;
		P[j]->x += s * n.x;
		P[j]->y += s * n.y;
		P[j]->z += s * n.z;
	}
	sim_v3 dc = v3(0, 0, 0);
	for (int j = 0; j < k; j++)
		dc = v3_add(dc, v3_scale(v3_sub(v3_of4(*P[j]), v3_of4(x[vi[j]])), bc[j]));
	sim_v3 rel = v3_sub(dc, dq);
	sim_v3 tan = v3_sub(rel, v3_scale(n, v3_dot(rel, n)));
	float tl = v3_len(tan);
	if (tl > 0.0f) {
		float keep = tl < mus * c ? 0.0f : 1.0f - sim_box_min(mu * c / tl, 1.0f);
		sim_v3 corr = v3_scale(tan, 1.0f - keep);
		for (int j = 0; j < k; j++) {
			float s = P[j]->w * bc[j] / W;
			P[j]->x -= s * corr.x;
			P[j]->y -= s * corr.y;
			P[j]->z -= s * corr.z;
		}
	}
}

/* What an iteration's groups of pairs share (bodysched.h). */
typedef struct bp_run {
	const sim_bodypush *b;
	sim_vec4 *p;
	const sim_vec4 *x;
} bp_run;

/* Pairs order[begin .. end) (k itself for a NULL order), in that order. */
static uint32_t project_pairs(void *ctx, const uint32_t *order, uint32_t begin, uint32_t end)
{
	const bp_run *R = ctx;
	const sim_bodypush *b = R->b;
	sim_vec4 *restrict p = R->p;
	const sim_vec4 *restrict x = R->x;
	uint32_t pushed = 0;
	for (uint32_t k = begin; k < end; k++) {
		const bp_pair *pr = &b->pair[order != NULL ? order[k] : k];
		const uint32_t *v = &b->tris[3 * (size_t)pr->tri];
		sim_vec4 *P[3] = {&p[v[0]], &p[v[1]], &p[v[2]]};
		sim_v3 a = v3_of4(*P[0]);
		sim_v3 e1 = v3_sub(v3_of4(*P[1]), a), e2 = v3_sub(v3_of4(*P[2]), a);
		sim_v3 n = v3_cross(e1, e2);
		float l2 = v3_dot(n, n);
		if (!(l2 > 0.0f))
			continue;
		n = v3_scale(n, pr->sigma / sqrtf(l2));
		/* The face must still face the body vertex as it did when the
		 * pair was kept (step 2): a small face that the iterations
		 * have turned edge-on would be pushed along the body, not out
		 * of it, by up to its reach, and the stretch pulls it back
		 * every substep (the walk's right armpit, 5 mm faces swinging
		 * by 6 mm a substep). Left to its neighbours and the vertex
		 * contact, as an edge-on face is at the start. */
		if (!(v3_dot(n, pr->nb) >= BODYPUSH_FACING))
			continue;
		sim_v3 r = v3_sub(pr->q1, a);
		float c = v3_dot(n, r) + pr->h;
		if (!(c > 0.0f) || c > pr->reach)
			continue;
		/* Barycentric coordinates of q1's projection on the plane:
		 * l2 = |e1 x e2|^2 = d00 d11 - d01^2. */
		float d00 = v3_dot(e1, e1), d01 = v3_dot(e1, e2), d11 = v3_dot(e2, e2);
		float d20 = v3_dot(r, e1), d21 = v3_dot(r, e2);
		float bv = (d11 * d20 - d01 * d21) / l2, bw = (d00 * d21 - d01 * d20) / l2;
		float bu = 1.0f - bv - bw;
		if (!(bu >= -BODYPUSH_EDGE && bv >= -BODYPUSH_EDGE && bw >= -BODYPUSH_EDGE))
			continue;
		/* sim_box_max is fmaxf's result inline (box.h): the same bits
		 * without a call per coordinate of every pair every iteration. */
		float bc[3] = {sim_box_max(bu, 0.0f), sim_box_max(bv, 0.0f), sim_box_max(bw, 0.0f)};
		float bs = bc[0] + bc[1] + bc[2];
		float W = 0.0f, big = 0.0f;
		for (int j = 0; j < 3; j++) {
			bc[j] /= bs;
			W += P[j]->w * bc[j] * bc[j];
		}
		if (!(W > 0.0f))
			continue;
		for (int j = 0; j < 3; j++)
			big = sim_box_max(big, P[j]->w * bc[j] / W);
		/* Next to a pinned vertex the free ones would move by C / b_k,
		 * many times the push, flinging them through the body: such a
		 * point is left to the pin and the vertex contact. */
		if (big > BODYPUSH_LEVER)
			continue;
		sim_body_contact_push(P, v, bc, 3, W, n, c, pr->dq, pr->mu, pr->mus, x);
		pushed++;
	}
	return pushed;
}

uint32_t sim_bodypush_project(sim_bodypush *b, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			      uint32_t n, drape_pool *pool)
{
	/* The schedule of the pairs found at the last begin, made at its
	 * first iteration (the vertex count sizes the tiles). */
	if (b->sched_stale) {
		sim_bodysched_build(&b->sched, b->tris, 3, b->pair, sizeof *b->pair,
				    offsetof(bp_pair, tri), b->pair_count, n);
		b->sched_stale = 0;
	}
	bp_run run = {b, p, x};
	return sim_bodysched_run(&b->sched, b->pair_count, pool, project_pairs, &run);
}

uint32_t sim_bodypush_pair_count(const sim_bodypush *b)
{
	return b->pair_count;
}

const sim_bodysched *sim_bodypush_sched(const sim_bodypush *b)
{
	return &b->sched;
}

void sim_bodypush_set_keep(sim_bodypush *b, float margin, float budget)
{
	if (b->keep != NULL)
		sim_bodykeep_configure(b->keep, margin, budget);
}

void sim_bodypush_keep_counts(const sim_bodypush *b, uint64_t *collected, uint64_t *kept)
{
	sim_bodykeep_counts(b->keep, collected, kept);
}

const void *sim_bodypush_pair_record(const sim_bodypush *b, uint32_t k, size_t *size,
				     uint32_t *tri)
{
	if (k >= b->pair_count)
		return NULL;
	*size = sizeof b->pair[k];
	*tri = b->pair[k].tri;
	return &b->pair[k];
}

size_t sim_bodypush_bytes(const sim_bodypush *b)
{
	if (b == NULL)
		return 0;
	size_t n = sizeof *b + sim_bodykeep_bytes(b->keep) + (size_t)b->ntri * (7 * sizeof(float) + 1) +
		   3 * (size_t)b->nrm_cap * sizeof(float) + (size_t)b->pair_cap * sizeof(bp_pair) +
		   sim_bodysched_bytes(&b->sched);
	for (uint32_t c = 0; c < b->chunk_cap; c++)
		n += sizeof(bp_chunk) + (size_t)b->chunk[c].cap * sizeof(bp_pair);
	for (uint32_t j = 0; j < b->nscr; j++)
		n += sizeof(sim_bodykeep_scratch) + (size_t)b->scr[j].stamp_cap * sizeof(uint32_t) +
		     (size_t)b->scr[j].key_cap * (sizeof(uint64_t) + sizeof(uint32_t));
	for (uint32_t i = 0; i < b->adj_cap; i++)
		n += sizeof(bp_adj) + ((size_t)b->adj[i].nv + 1) * sizeof(uint32_t) +
		     (size_t)b->adj[i].nt * 3 * (sizeof(uint32_t) + sizeof(float));
	return n;
}
