/*
 * The body-feature candidates kept across substeps (issue 22's speed):
 * the (body vertex, cloth triangle) pairs that bodypush.c's search may
 * meet, collected once with a margin and filtered, on later substeps of
 * the same frame, by the search's own exact box test and put in the
 * search's own order, as long as nothing has drifted by more than the
 * margin allows. bodykeep.c has the proof that the filtered list is what
 * a fresh search finds, pair for pair and in the same order, so the
 * frames are the same bits with the list kept or not.
 */
#ifndef DRAPE_SIM_BODYKEEP_H
#define DRAPE_SIM_BODYKEEP_H

#include <stddef.h>
#include <stdint.h>

#include "server/sim/collider.h"
#include "server/sim/selfhash.h"

/* The margin the candidates are collected with, metres: the cloth's
 * triangles and the body's vertices may drift by half of it in all
 * before the list is collected again. */
#define SIM_BODYKEEP_MARGIN 0.01f

/* The body vertices of one chunk of the parallel search (bodypush.c): a
 * body's vertices [c * SIM_BODY_CHUNK, (c + 1) * SIM_BODY_CHUNK) are
 * searched by one worker into the chunk's own lists, and the chunks'
 * lists are joined in chunk order, so the pairs and the kept candidates
 * are the same whatever the thread count. A constant, never the thread
 * count: the split must not depend on it. */
#define SIM_BODY_CHUNK 512u

/* One worker's scratch for the queries of a chunk (bodypush.c hands each
 * running chunk a free one): the per-triangle stamps of a hash query and
 * the ordering's keys. Its contents never change a result. */
typedef struct sim_bodykeep_scratch {
	uint32_t *stamp; /* per cloth triangle: the last query that met it */
	uint32_t stamp_cap, epoch;
	uint64_t *key; /* one vertex's ordered candidates */
	uint32_t *out;
	uint32_t key_cap;
	uint32_t slots[SIM_HASH_MAX_CELLS]; /* a triangle's cells' slots */
} sim_bodykeep_scratch;

/* Room in s for ntri triangles' stamps and n ordered candidates; 0 when
 * out of memory (s keeps what it had). */
int sim_bodykeep_scratch_reserve(sim_bodykeep_scratch *s, uint32_t ntri, uint32_t n);
void sim_bodykeep_scratch_free(sim_bodykeep_scratch *s);

typedef struct sim_bodykeep sim_bodykeep;

/* NULL when out of memory (bodypush.c then searches every substep). */
sim_bodykeep *sim_bodykeep_create(void);
void sim_bodykeep_free(sim_bodykeep *k);

/* margin 0 switches the list off (a fresh search every substep); budget
 * is the share of the margin the drift may use, 0.5 what the proof at
 * the top of bodykeep.c allows. Anything above it is for tests that
 * show the comparison can fail. */
void sim_bodykeep_configure(sim_bodykeep *k, float margin, float budget);
float sim_bodykeep_margin(const sim_bodykeep *k);
/* Forgets the list (at each frame's start, so a run resumed from a
 * checkpoint at a frame boundary gives the same bits). */
void sim_bodykeep_drop(sim_bodykeep *k);

/*
 * At a substep's begin, with the cloth's triangle boxes `box` (6 per
 * triangle, grown by `grow`) and half the longest edge at x: 1 when the
 * kept list still holds every pair a fresh search can find (the drift
 * bound below, the same triangles, bodies and contact distances), else 0
 * and the caller collects again (sim_bodykeep_start).
 */
int sim_bodykeep_valid(sim_bodykeep *k, const sim_collider_set *set, const uint32_t *tris,
		       uint32_t ntri, const float *box, float grow, float half_max, float thickness);

/* Starts a collection over the same inputs; 0 when out of memory (the
 * caller searches afresh this substep and the list stays dropped). */
int sim_bodykeep_start(sim_bodykeep *k, const sim_collider_set *set, const uint32_t *tris,
		       uint32_t ntri, const float *box, float grow, float half_max, float thickness);

/* 0 when this list and the one before it each drifted past the bound
 * before serving a substep (a body moving by centimetres a substep, the
 * walk's strides): a collection costs more than the search it replaces,
 * so the rest of the frame searches afresh (bodypush.c collects again at
 * the next frame's start). Only the cost depends on it, never a result. */
int sim_bodykeep_worth(const sim_bodykeep *k);
/*
 * 1 when a moving body's vertex moves, in this substep, by more than the
 * drift the budget allows along an axis (the walk's strides: feet and
 * hands 8 to 11 mm a substep against 5 mm). The next substep starts
 * from this one's end pose, so by then the body has drifted past the
 * bound (sim_bodykeep_valid's body drift is at least that motion) and a
 * list collected now can serve no later substep: bodypush.c then
 * searches afresh without collecting, even at a frame's start. Only the
 * cost depends on it, never a result.
 */
int sim_bodykeep_outrun(const sim_bodykeep *k, const sim_collider_set *set);
/* 1 while a list is collected or kept (a collection that ran out of
 * memory ends it at sim_bodykeep_finish: the caller then searches
 * afresh). */
int sim_bodykeep_live(const sim_bodykeep *k);
/* The half longest edge the collection's vertex filter used (at least
 * half_max at the start). */
float sim_bodykeep_half_bound(const sim_bodykeep *k);
/* 1 when body `ci`'s hollows and falls stay the same until the frame
 * ends (a still body, or the only body), so the collection may leave out
 * the vertices its filter rejects; else every vertex is collected. */
int sim_bodykeep_filtered(const sim_bodykeep *k, uint32_t ci);

/* Collects the triangles of the hash H (built over box) whose boxes meet
 * pb (the body vertex's box over the substep) grown by the margin, for
 * vertex i of collider ci, into the list of i's chunk (SIM_BODY_CHUNK),
 * with the scratch s (stamps for every triangle). Chunks may collect on
 * several threads at once, each chunk on one. 0 when out of memory: that
 * vertex and the rest of its chunk must then be searched afresh, and
 * sim_bodykeep_finish drops the list. */
int sim_bodykeep_collect(sim_bodykeep *k, sim_bodykeep_scratch *s, uint32_t ci, uint32_t i,
			 const sim_hash *H, const float *box, const float *pb);
/* After a collection's chunks are all done (serially): drops the list if
 * a chunk ran out of memory, and sizes the nscr scratches for the largest
 * vertex's candidates so sim_bodykeep_order never allocates. */
void sim_bodykeep_finish(sim_bodykeep *k, sim_bodykeep_scratch *scr, uint32_t nscr);

/*
 * The triangles of vertex i of collider ci whose boxes meet pb, in the
 * order a query of a hash with H's cell size over `box` visits them
 * (bodykeep.c), with the scratch s. *out points to them (in s) until
 * the next call with s.
 */
uint32_t sim_bodykeep_order(const sim_bodykeep *k, sim_bodykeep_scratch *s, uint32_t ci,
			    uint32_t i, const sim_hash *H, const float *box, const float *pb,
			    const uint32_t **out);

/* Collections and substeps served from a kept list since create (for tests
 * and statistics). */
void sim_bodykeep_counts(const sim_bodykeep *k, uint64_t *collected, uint64_t *kept);
size_t sim_bodykeep_bytes(const sim_bodykeep *k);

#endif
