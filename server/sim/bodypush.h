/*
 * The body's features against the cloth's faces (issue 19): body vertices
 * of every mesh collider (static, rigid or deforming) that would come
 * through a cloth triangle push the triangle out. The vertex contact
 * (collider.c, deform.c) keeps cloth vertices outside the body; between
 * them a coarse garment's triangles would let a fine body's nose, knuckles
 * or thighs through. bodypush.c has the method.
 */
#ifndef DRAPE_SIM_BODYPUSH_H
#define DRAPE_SIM_BODYPUSH_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"
#include "server/sim/collider.h"
#include "server/sim/vec.h"

typedef struct sim_bodypush sim_bodypush;

/* Scratch for a cloth of ntri triangles (at sim create); NULL when out of
 * memory. */
sim_bodypush *sim_bodypush_create(uint32_t ntri);
void sim_bodypush_free(sim_bodypush *b);

/* Sizes the per-body-vertex scratch for the colliders now in the set (call
 * after adding one); DRAPE_ENOMEM leaves the old scratch in place. */
drape_err sim_bodypush_reserve(sim_bodypush *b, const sim_collider_set *set, drape_error *err);

/*
 * Once per substep, after sim_colliders_begin_substep and the prediction:
 * finds the (body vertex, cloth triangle) pairs that may meet in this
 * substep (x the cloth at its start, p predicted) and the side each body
 * vertex must stay on. thickness is the cloth's; new_frame is nonzero at
 * a frame's first substep (a moving body's shape is measured then). The
 * body's vertices are searched in fixed chunks on pool (NULL: the calling
 * thread): the same pairs in the same order whatever its threads.
 */
void sim_bodypush_begin(sim_bodypush *b, const sim_collider_set *set, const uint32_t *tris,
			uint32_t ntri, const sim_vec4 *x, const sim_vec4 *p, float thickness,
			int new_frame, drape_pool *pool);

/* Once per iteration: pushes every pair's triangle out by what it lacks,
 * with friction, in the order of bodysched.h for a cloth of n vertices:
 * the tiles' pairs in parallel on pool (NULL: the calling thread), then
 * the pairs across tiles; the same bits whatever its threads. Returns the
 * pairs that pushed. Touches only p. */
uint32_t sim_bodypush_project(sim_bodypush *b, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			      uint32_t n, drape_pool *pool);

/*
 * The push and friction of one body contact on a point of k cloth vertices
 * (k = 3 a face's, bodypush.c; 2 an edge's, bodyedge.c): the point
 * sum_j bc[j] P[j], W = sum_j w_j bc[j]^2 > 0, moves along the unit normal
 * n by c (each vertex by w_j bc[j] / W c), then its motion over the
 * substep (from x[vi[j]]) relative to the body's dq loses its tangential
 * part below static friction mus c and is reduced by mu c otherwise
 * (Macklin et al. 2014, eq. 24), as the vertex contact's friction does.
 */
void sim_body_contact_push(sim_vec4 *const *P, const uint32_t *vi, const float *bc, int k, float W,
			   sim_v3 n, float c, sim_v3 dq, float mu, float mus, const sim_vec4 *x);

/* Pairs found at the last begin (for tests and statistics). */
uint32_t sim_bodypush_pair_count(const sim_bodypush *b);
/* The projection order of the last iteration (bodysched.h; for tests and
 * statistics). */
const struct sim_bodysched *sim_bodypush_sched(const sim_bodypush *b);
/* Pair k of the last begin as stored (its bytes, *size of them) and its
 * triangle; NULL past the last (for the tests that compare two lists). */
const void *sim_bodypush_pair_record(const sim_bodypush *b, uint32_t k, size_t *size,
				     uint32_t *tri);

/* The candidates kept across a frame's substeps (bodykeep.h): margin 0
 * searches afresh every substep, the reference the kept list is tested
 * against (SIM_CREATE_BODYPUSH_FRESH); budget the share of the margin the
 * drift may use (0.5 proven, bodykeep.c). The default is
 * SIM_BODYKEEP_MARGIN and 0.5. */
void sim_bodypush_set_keep(sim_bodypush *b, float margin, float budget);
/* Collections and substeps served from the kept list since create. */
void sim_bodypush_keep_counts(const sim_bodypush *b, uint64_t *collected, uint64_t *kept);
size_t sim_bodypush_bytes(const sim_bodypush *b);

#endif
