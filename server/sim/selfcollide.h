/*
 * Self-collision of the cloth, as the step sees it: a dense spatial hash
 * (Müller, Ten Minute Physics "spatial hashing": cell counts, prefix sum, one
 * flat entry array) built once per substep, the candidate vertex-triangle and
 * edge-edge pairs collected once per substep, projected every iteration, and a
 * continuous-collision guard at the end of the substep.
 *
 * Order of calls per substep, from sim.c:
 *   predict p from x
 *   sim_self_begin_substep(s, x, p, ...)        build hash, collect pairs, record sides from x
 *   for each iteration: stretch, bend, shear, obstacles, sim_self_project(s, p, x, ...)
 *   sim_self_end_substep(s, p, x, ...)          swept guard: nothing apart at x is crossed at p
 *   v = (p - x) / dt, x = p
 */
#ifndef DRAPE_SIM_SELFCOLLIDE_H
#define DRAPE_SIM_SELFCOLLIDE_H

#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"
#include "server/sim/vec.h"

typedef struct sim_self sim_self;

/* Sizes every buffer for the mesh (triangles are copied). Validation of the
 * mesh is the caller's (drape_sim_create). On success the caller owns *out. */
drape_err sim_self_create(const uint32_t *triangles, uint32_t triangle_count, uint32_t vertex_count,
			  const sim_vec4 *x0, sim_self **out, drape_error *err);
void sim_self_destroy(sim_self *s);

/* Joins vertex pairs (pairs[2k], pairs[2k + 1]) as stitched: a pair of
 * a vertex and a triangle, or of two edges, that holds two joined vertices
 * one on each side is a seam and neither pushed apart nor guarded. Replaces
 * earlier joins; count 0 removes them. Out of memory keeps the old ones. */
drape_err sim_self_set_joins(sim_self *s, const uint32_t *pairs, uint32_t count, drape_error *err);

/* Leaves vertices[0 .. count - 1] (increasing) out of the vertices in no
 * triangle, which are otherwise tested against every triangle: a weld's
 * followers (weld.c) are in no triangle and move with a vertex that is. */
void sim_self_drop_orphans(sim_self *s, const uint32_t *vertices, uint32_t count);

/* Gives the self-collision the cloth objects (objects.c): obj[v] the
 * object of vertex v, pass[a * count + b] nonzero when objects a and b
 * collide. The arrays are the caller's and must outlive s; obj NULL
 * makes every pair collide. */
void sim_self_set_objects(sim_self *s, const uint32_t *obj, const uint8_t *pass, uint32_t count);

/* Gives each vertex its own thickness h[v] (s's vertex order, nv floats,
 * finite and >= 0; copied): a vertex-triangle pair is then kept apart by the
 * mean of the vertex's and the triangle's (its corners' mean), an edge pair
 * by the mean of the edges' (their ends' mean); see selfproject.c. NULL,
 * or every value the same, leaves one thickness for every pair (the one
 * the calls below pass). Out of memory keeps the old values. */
drape_err sim_self_set_thickness(sim_self *s, const float *h, drape_error *err);

/* 1 when per-vertex values were given to sim_self_set_thickness (uniform
 * ones too), with *max their largest: the thickness the caller must pass
 * to the calls below, which size the search for the thickest pair. */
int sim_self_vertex_thickness(const sim_self *s, float *max);

/* Whether the projections read the per-vertex values (default on): off
 * while the session's self_thickness overrides them. */
void sim_self_use_vertex_thickness(sim_self *s, int on);

/* Builds the hash over triangle boxes swept from x to p and grown by
 * thickness and collects candidate pairs. The side of each candidate
 * triangle (and edge pair) the vertices are on at the start of the substep,
 * x, is the side the projection keeps them on. */
void sim_self_begin_substep(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			    float thickness);

/* One projection of every candidate pair: vertex-triangle and edge-edge pushes
 * to `thickness` on the recorded side, split by inverse masses (p[i].w) and
 * barycentric weights so momentum is conserved; friction between layers. */
void sim_self_project(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x, float thickness,
		      float friction);

/* Continuous guard: any pair apart at x that would cross between x and p is
 * stopped on its own side. */
void sim_self_end_substep(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			  float thickness);

/* The worker pool that collects candidates in parallel (may be NULL; the
 * pairs and their order do not depend on it). The caller keeps it alive. */
void sim_self_set_pool(sim_self *s, drape_pool *pool);

/* The start of a frame: the candidate list kept over substeps
 * (selfreuse.c) is dropped, so that a frame depends on its start state
 * alone. */
void sim_self_begin_frame(sim_self *s);

/* Since create: substeps whose candidates were filtered from a kept list,
 * lists collected, and substeps collected afresh. */
void sim_self_reuse_counts(const sim_self *s, uint64_t *hits, uint64_t *builds, uint64_t *fresh);

/* Untangling (selftangle.c). The check of the mesh at x for intersecting
 * pairs, done by the first substep unless called before (for the log at
 * create); nothing after the first check. */
void sim_self_tangle_check(sim_self *s, const sim_vec4 *restrict x);
/* Intersecting pairs and released vertices at the first check and at the
 * last (0 once none remain). */
void sim_self_tangle_counts(const sim_self *s, uint64_t *pairs0, uint32_t *vertices0,
			    uint64_t *pairs, uint32_t *vertices);
/* on 0: release the contour triangles only, not the parts they cut off;
 * rings: grow the region by that many rings of triangles (for tests and
 * measurements; default 1 and SELF_TANGLE_RINGS). */
void sim_self_tangle_fill(sim_self *s, int on, int rings);

/* Candidate pairs collected in the current substep. */
uint32_t sim_self_pair_count(const sim_self *s);

#endif
