/*
 * Deforming mesh colliders: a triangle mesh whose vertices move through
 * per-frame positions (a skinned body), solved against its moving
 * triangles instead of a signed distance field (deform.c has the method).
 *
 * collider.c owns the collider and calls this file for a mesh collider that
 * has animation frames; nothing here knows the other collider kinds.
 */
#ifndef DRAPE_SIM_DEFORM_H
#define DRAPE_SIM_DEFORM_H

#include <stdint.h>

#include "drape/sim.h"
#include "server/sim/closest.h"
#include "server/sim/vec.h"

typedef struct sim_deform sim_deform;

/* A rigid transform: world = r * local + t, r row-major (collider.c's
 * keyframes; identity without keys). */
typedef struct sim_rigid {
	float r[9];
	sim_v3 t;
} sim_rigid;

/* A point bound to the skin: triangle `tri` of the rest pose, barycentric
 * coordinates b of its nearest point there, and the offset from that point
 * in the triangle's own frame (first edge direction, normal x edge,
 * normal), so the bound point turns and moves with its triangle. */
typedef struct sim_skin {
	uint32_t tri;
	float b[3];
	float off[3];
} sim_skin;

/* Contact response of a collider (collider.c's fields). */
typedef struct sim_contact_params {
	float friction, static_friction, restitution;
} sim_contact_params;

/*
 * Checks `count` frames of vertex_count * 3 floats that would join `have`
 * frames already held by collider `index`: a non-NULL array, the frame
 * limits and finite numbers. Errors name "colliders[index].frames".
 */
drape_err sim_deform_check_frames(uint32_t index, const float *frames, uint32_t count,
				  uint32_t have, uint32_t vertex_count, drape_error *err);

/* Makes a deforming collider from its rest pose (copied), its triangles
 * (copied) and its first frames (copied, already checked). NULL when out of
 * memory. */
sim_deform *sim_deform_create(const float *rest, uint32_t nv, const uint32_t *tris, uint32_t nt,
			      const float *frames, uint32_t count, float frame_start);
void sim_deform_free(sim_deform *d);
/* Appends frames (already checked); DRAPE_ENOMEM leaves d unchanged. */
drape_err sim_deform_append(sim_deform *d, const float *frames, uint32_t count, drape_error *err);
uint32_t sim_deform_frame_count(const sim_deform *d);

/*
 * The body's local positions at time t (fractional sim frames: animation
 * frame i is at frame_start + i, linear between frames, the first or last
 * frame held outside them), written to out (vertex_count * 3 floats).
 */
void sim_deform_pose(const sim_deform *d, float t, float *out);

/* Per-cloth-vertex scratch for n cloth vertices; allocated once (at add,
 * when the cloth is known) so that a step never allocates. -1 when out of
 * memory. */
int sim_deform_reserve(sim_deform *d, uint32_t n);

/* Bytes a deforming collider of nv vertices, nt triangles and `frames`
 * poses holds against a cloth of cloth_n vertices: the poses (frames * nv
 * * 12), the triangle tree and the per-substep scratch. */
uint64_t sim_deform_bytes(uint32_t nv, uint32_t nt, uint32_t frames, uint32_t cloth_n);

/* The body's turn from time t0 (transform x0) to t1 (x1), pose to pose:
 * the largest angle a vertex normal (the sum of its triangles'
 * area-weighted normals) turns through, in radians (a vertex without a
 * normal is skipped). Reads the frames and leaves the substep's state
 * alone (it writes only scratch that the next refit writes afresh). */
float sim_deform_motion(sim_deform *d, float t0, float t1, const sim_rigid *x0, const sim_rigid *x1);

/* Moves the body to its world poses at the start (t0, transform x0) and
 * end (t1, x1) of the substep and refits the tree. */
void sim_deform_begin_substep(sim_deform *d, float t0, float t1, const sim_rigid *x0,
			      const sim_rigid *x1);

/*
 * Finds, for every free cloth vertex, the body triangles it may meet in
 * this substep (from its start position x and its predicted motion to p)
 * and which side of each it is on at the start. r is the contact distance
 * (cloth thickness + collider thickness). Per vertex, independent of the
 * others, so the pool's split never changes a result.
 */
void sim_deform_begin_contacts(sim_deform *d, const sim_vec4 *x, const sim_vec4 *p, uint32_t n,
			       float r, drape_pool *pool);

/* Per cloth vertex properties for begin_contacts and project (borrowed,
 * NULL: none): thickness replaces the cloth part of r (the collider's own
 * `extra` is added to it), friction in place of cp's friction and static
 * friction (-1: cp's). */
void sim_deform_set_cloth(sim_deform *d, const float *thickness, const float *friction, float extra);

/*
 * Keeps p[i] (i in [begin, end)) at distance r outside the body's triangles
 * at the end of the substep, on the side each vertex was at the start, with
 * friction and restitution relative to the body surface's own motion.
 * Returns the number of contacts. A vertex the iterations carried beyond
 * what its triangle lists cover has them gathered again; only its own
 * entries change, so disjoint ranges may run on different threads.
 */
uint32_t sim_deform_project(sim_deform *d, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			    uint32_t begin, uint32_t end, float r, const sim_contact_params *cp);

/* How the candidate lists were found since the collider was made: vertex
 * substeps served from a kept list, vertex substeps gathered from the
 * tree, and gathers of kept lists (deform.c, "Kept candidates"). */
void sim_deform_keep_stats(const sim_deform *d, uint64_t *filtered, uint64_t *fresh, uint64_t *gathers);

/* Tests only: off = 1 gathers every vertex from the tree every substep
 * (the lists a kept list must reproduce); scale > 1 lets a kept list serve
 * scale times the drift proven safe (a test that must then fail). Drops
 * the kept lists. */
void sim_deform_keep_test(sim_deform *d, int off, float scale);

/* Tests only: cloth vertex i's lists as the last begin_contacts or
 * project left them: the nearest (DEFORM_NEAR, 8), the kept planes'
 * triangles (DEFORM_PLANES, 12: the 8 nearest front-facing and up to 4
 * from the path list) and the path list (DEFORM_PATH_LIST, 12). */
typedef struct sim_deform_vertex_lists {
	uint32_t nn, nc, np, mode;
	uint32_t near[8], cand[12], path[12];
	float ndist[8], pdist[12];
	float reach, safe, clear;
} sim_deform_vertex_lists;
void sim_deform_lists(const sim_deform *d, uint32_t i, sim_deform_vertex_lists *out);

/* The body as the current substep has it: vertex and triangle counts, the
 * triangles (wound outward), the world poses at the start and end. */
void sim_deform_view(const sim_deform *d, uint32_t *nv, uint32_t *nt, const uint32_t **tris,
		     const float **p0, const float **p1);

/* Binds a local-space point to the nearest point of the rest pose (rest,
 * tris: the collider's mesh; degenerate triangles are skipped; ties go to
 * the lower triangle index). */
void sim_skin_bind(const float *rest, const uint32_t *tris, uint32_t nt, const float local[3],
		   sim_skin *out);
void sim_deform_bind(const sim_deform *d, const float local[3], sim_skin *out);
/* A triangle's own frame (skin.c): first edge direction, normal x edge,
 * normal. Returns 0 for a degenerate triangle. */
int sim_skin_frame(sim_v3 a, sim_v3 b, sim_v3 c, sim_v3 f[3]);
/* Where a bound point is at the end of the current substep (world). */
void sim_deform_skin_point(const sim_deform *d, const sim_skin *s, float out[3]);


#endif
