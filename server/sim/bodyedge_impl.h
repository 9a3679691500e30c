/*
 * What bodyedge.c (the body's ridges against the cloth's edges) and
 * bodyedgekeep.c (a still body's kept candidate lists) share: the
 * session's state and the steps of the search both use. Private to those
 * two files; the solver calls bodyedge.h.
 */
#ifndef DRAPE_SIM_BODYEDGE_IMPL_H
#define DRAPE_SIM_BODYEDGE_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/sim/bodyedge.h"
#include "server/sim/bodypush.h"
#include "server/sim/bodysched.h"
#include "server/sim/pool.h"
#include "server/sim/selfhash.h"

/* Cloth edges per block of the boxes' loop on the pool. */
#define BODYEDGE_BOX_BLOCK 1024u

/* Ridges per chunk of a still body's parallel search: a constant, so the
 * split never depends on the thread count (see sim_bodyedge_begin). */
#define BODYEDGE_CHUNK 128u

/* A moving body's edges per chunk of its classification and search on
 * the pool, every substep: a constant, as BODYEDGE_CHUNK; most of a
 * body's edges are far from the cloth and cost one comparison. */
#define BODYEDGE_EDGE_CHUNK 1024u

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

/* One collider's edge list, built for the mesh it was made from (its
 * stamp: sim_body_view.mesh; 0 for none). */
typedef struct be_body {
	uint64_t mesh;
	uint32_t nt, nv;
	be_bedge *e;
	uint32_t ne;
	/* 3 per face: unit outward normals at the start pose (0 when
	 * degenerate), once per substep for a moving body, once per pose
	 * (its start positions and version) for a still one. */
	float *fn;
	/* Per vertex: where a moving body's vertex's box over the substep
	 * lies against the cloth's box (outcode()). */
	uint8_t *voc;
	const float *still_q0;
	uint64_t still_version;
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

/* Whether bd's edges were built for the mesh bv shows. */
static inline int sim_be_current(const be_body *bd, const sim_body_view *bv)
{
	return bd->mesh != 0 && bd->mesh == bv->mesh && bd->nt == bv->nt && bd->nv == bv->nv;
}

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
	/* The iterations' order of the pairs (bodysched.h), made again at
	 * the first iteration after a begin (sched_stale). */
	sim_bodysched sched;
	int sched_stale;
};

typedef struct be_key {
	uint64_t key;
	uint32_t at;
} be_key;

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

/* bodyedge.c: the search's steps (their comments there). */
void sim_be_face_normals(be_body *bd, const sim_body_view *bv);
void sim_be_classify(be_body *bd, const sim_body_view *bv, float h);
void sim_be_consider(const sim_bodyedge *b, be_chunk *out, uint32_t k, const sim_vec4 *x,
		     const sim_vec4 *p, const ridge *r);
int sim_be_ridge_box(ridge *r, const sim_body_view *bv, const be_bedge *e, float *pb,
		     const float *cloth_box);
int sim_be_ridge_setup(ridge *r, const be_body *bd, const be_bedge *e, float sh, float half_max);
void sim_be_lookup(const sim_bodyedge *b, be_scratch *S, be_chunk *out, const be_body *bd,
		   const be_bedge *e, ridge *r, float sh, const float *pb, float half_max,
		   const sim_vec4 *x, const sim_vec4 *p);
int sim_be_workers(sim_bodyedge *b, uint32_t chunks, const drape_pool *pool);

/* bodyedgekeep.c: a still body's kept lists (the proof is there). */
int sim_be_collect(sim_bodyedge *b, const sim_collider_set *set, const sim_vec4 *x,
		   const sim_vec4 *p, float thickness, drape_pool *pool);
void sim_be_filter(const sim_bodyedge *b, be_scratch *S, be_chunk *out, const be_body *bd,
		   uint32_t ri, const be_bedge *e, ridge *r, float sh, const float *pb,
		   float half_max, const sim_vec4 *x, const sim_vec4 *p, const sim_hash *H);

#endif
