/*
 * The body's edges against the cloth's edges (issues 16 and 19): a thin
 * ridge of a mesh collider (a shin, a finger, a knife edge) whose two
 * vertices lie beyond the cloth's span can cut a cloth face between cloth
 * vertices with no vertex of either inside the other's triangles, where
 * neither the vertex contact (collider.c, deform.c) nor the body's vertices
 * against the cloth's faces (bodypush.c) see anything. bodyedge.c has the
 * method.
 */
#ifndef DRAPE_SIM_BODYEDGE_H
#define DRAPE_SIM_BODYEDGE_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"
#include "server/sim/collider.h"
#include "server/sim/vec.h"

typedef struct sim_bodyedge sim_bodyedge;

/* The cloth's unique edges from its ntri triangles (internal numbering),
 * and scratch for them; NULL when out of memory. */
sim_bodyedge *sim_bodyedge_create(const uint32_t *tris, uint32_t ntri);
void sim_bodyedge_free(sim_bodyedge *b);

/*
 * Builds the edge list of every mesh collider of set that has none (at
 * collider add and remove, and when a torn sim takes the colliders over),
 * so a step does not build it. DRAPE_ENOMEM naming the collider when out
 * of memory.
 */
drape_err sim_bodyedge_reserve(sim_bodyedge *b, const sim_collider_set *set, drape_error *err);

/*
 * Once per substep, after sim_colliders_begin_substep and the prediction
 * (x the cloth at the start of the substep, p predicted): finds the (body
 * edge, cloth edge) pairs that may meet in this substep and keeps those
 * whose cloth edge starts on the body's outer side of the body edge (or
 * at most the contact distance inside). thickness is the cloth's. A mesh
 * collider's edge list comes from sim_bodyedge_reserve (built here only
 * if that was not called or ran out of memory).
 */
/* first: this is a step's first substep, where the kept candidate lists
 * of still bodies are dropped (bodyedge.c, "Kept candidates"); the pairs
 * are the same bits with or without them. A still body's ridges are
 * searched in fixed chunks on pool (NULL: the calling thread): the same
 * pairs in the same order whatever its threads. */
void sim_bodyedge_begin(sim_bodyedge *b, const sim_collider_set *set, const sim_vec4 *x,
			const sim_vec4 *p, float thickness, int first, drape_pool *pool);

/* Once per iteration: pushes every pair's cloth edge out by what it
 * lacks, with friction, in the order of bodysched.h for a cloth of n
 * vertices, as sim_bodypush_project. Returns the pairs that pushed.
 * Touches only p. */
uint32_t sim_bodyedge_project(sim_bodyedge *b, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			      uint32_t n, drape_pool *pool);

/* Pairs kept at the last begin (for tests and statistics). */
uint32_t sim_bodyedge_pair_count(const sim_bodyedge *b);
/* The projection order of the last iteration (bodysched.h; for tests and
 * statistics). */
const struct sim_bodysched *sim_bodyedge_sched(const sim_bodyedge *b);
/* The pairs of the last begin as bytes (for tests that compare two runs):
 * a pointer valid until the next begin, and its size into *bytes. */
const void *sim_bodyedge_pair_data(const sim_bodyedge *b, size_t *bytes);
/* Whether still bodies keep candidate lists across substeps (1 at
 * create), and how far past its widened box a cloth edge's box may go
 * before they are dropped: 0, anything more only to show in the tests
 * that a loosened bound loses pairs. Drops the lists. */
void sim_bodyedge_set_keep(sim_bodyedge *b, int keep, float slack);
/* Substeps collider index was served from kept lists, and the lists'
 * collections, since create (for tests and statistics). */
uint32_t sim_bodyedge_kept_uses(const sim_bodyedge *b, uint32_t index);
uint32_t sim_bodyedge_collections(const sim_bodyedge *b);
size_t sim_bodyedge_bytes(const sim_bodyedge *b);

#endif
