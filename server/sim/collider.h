/*
 * Obstacle colliders as the solver step sees them: a set of analytic shapes
 * and OpenVDB mesh fields, each with keyframed rigid motion and a contact
 * response (static and dynamic friction, restitution), and deforming meshes
 * solved against their moving triangles (deform.h).
 *
 * The public drape_sim_*collider* functions in sim.c are thin wrappers over
 * this interface; the step calls sim_colliders_begin_substep() once per
 * substep and sim_colliders_project() once per iteration, after shear.
 */
#ifndef DRAPE_SIM_COLLIDER_H
#define DRAPE_SIM_COLLIDER_H

#include <stdint.h>

#include "drape/sim.h"
#include "server/sim/deform.h"
#include "server/sim/vec.h"

typedef struct sim_collider sim_collider;

typedef struct sim_collider_set {
	sim_collider **items;
	uint32_t count;
	uint32_t cap;
	/* The cloth's vertex count, set by the sim (0 when unknown): a
	 * deforming collider sizes its per-vertex scratch when added. */
	uint32_t cloth_n;
	/* Per cloth vertex (internal order; NULL = uniform, owned by the
	 * sim): the collision thickness replacing the uniform one, and the
	 * friction replacing the collider's friction and static friction
	 * (-1: the collider's). Read by every collider (deforming ones
	 * through sim_deform_set_cloth). */
	const float *cloth_thickness;
	const float *cloth_friction;
	/* The last stamp handed out (sim_body_view's mesh and version): a
	 * count over the set's life, so no two meshes or poses of its
	 * colliders ever share one, even when a removed collider's arrays
	 * are reused by the allocator for the next. */
	uint64_t stamp;
} sim_collider_set;

void sim_colliders_init(sim_collider_set *set);
/* Sets cloth_n and sizes every deforming collider's per-vertex scratch for
 * it (a torn cloth has more vertices, tear.c); -1 when out of memory. */
int sim_colliders_set_cloth_n(sim_collider_set *set, uint32_t n);
void sim_colliders_free(sim_collider_set *set);

/* Validates *d completely (shape, finite numbers, ranges, mesh indices, voxel
 * cap) before changing anything; builds the field for a mesh without one. */
drape_err sim_colliders_add(sim_collider_set *set, const drape_collider_desc *d, uint32_t *index,
			    drape_error *err);
drape_err sim_colliders_remove(sim_collider_set *set, uint32_t index, drape_error *err);
drape_err sim_colliders_set_keyframes(sim_collider_set *set, uint32_t index,
				      const drape_keyframe *keys, uint32_t count, drape_error *err);
drape_err sim_colliders_update_mesh(sim_collider_set *set, uint32_t index, const float *vertices,
				    uint32_t vertex_count, drape_error *err);
drape_err sim_colliders_set_sdf(sim_collider_set *set, uint32_t index, drape_sdf *sdf,
				drape_error *err);

/* The exterior band a mesh collider's field is built with. */
float sim_collider_band(const drape_collider_desc *d);
/* Validates *d and builds its mesh field (d->voxel_size used as given). */
drape_err sim_collider_build_sdf(const drape_collider_desc *d, drape_sdf **out, drape_error *err);

/*
 * Evaluates every collider's transform at the start (t0) and end (t1) of the
 * substep, in fractional frames: the input state is at t = 0 and output frame
 * k (1-based, the k-th solved frame) is at t = k, the numbering keyframes use.
 * Between keyframes translation and rotation are interpolated linearly;
 * before the first and after the last the nearest key holds. Called once per
 * substep, before the iterations.
 */
void sim_colliders_begin_substep(sim_collider_set *set, float t0, float t1);

/*
 * How far the colliders turn from time t0 to t1 (frames), pose to pose, for
 * the step's choice of substeps (sim.c): the largest angle any collider's
 * surface turns through, in radians (a deforming mesh's vertex normals, a
 * keyframed collider's rotation; a translation does not count). Changes no
 * collider state.
 */
float sim_colliders_motion(const sim_collider_set *set, float t0, float t1);

/*
 * After begin_substep and with the substep's predicted positions: each
 * deforming collider finds the triangles every free cloth vertex may meet
 * and the side it starts on (deform.h). pool may be NULL.
 */
void sim_colliders_begin_contacts(sim_collider_set *set, const sim_vec4 *x, const sim_vec4 *p,
				  uint32_t n, float thickness, drape_pool *pool);

/*
 * Pushes every predicted position p[i] with inverse mass > 0 out of every
 * collider to distance (cloth thickness + collider thickness), then applies
 * friction and restitution to its displacement relative to the collider's
 * surface motion over the substep (x[i] is the position at the start of the
 * substep). Returns the number of contacts. Touches only p.
 */
uint32_t sim_colliders_project(const sim_collider_set *set, sim_vec4 *restrict p,
			       const sim_vec4 *restrict x, uint32_t n, float thickness);
/* The same, its points split over pool (NULL: this thread); the same bits
 * whatever the thread count. */
uint32_t sim_colliders_project_pool(const sim_collider_set *set, sim_vec4 *restrict p,
				    const sim_vec4 *restrict x, uint32_t n, float thickness,
				    drape_pool *pool);

/*
 * Position at the end of the current substep of a point rigidly attached to
 * collider `index`, given its world position `rest` at t = 0.
 */
/* The field of collider `index` at m world points in its pose at the
 * start of the current substep: distances (beyond the collider's own
 * thickness) and unit world gradients ((0, 0, 0) where the field gives
 * none). Returns 0, filling nothing, for a
 * deforming collider (its contact is not a field's). */
int sim_colliders_sample_start(const sim_collider_set *set, uint32_t index, const float *world,
			       uint32_t m, float *dist, float *grad);
void sim_colliders_attached_point(const sim_collider_set *set, uint32_t index, const float rest[3],
				  float out[3]);


/* Binds a world point (at t = 0) to collider `index`'s rest pose; returns 0
 * (and leaves *out) when the collider has no triangle mesh. */
int sim_colliders_bind_skin(const sim_collider_set *set, uint32_t index, const float world[3],
			    sim_skin *out);
/* Where an attached pin is at the end of the substep: on the skin of a
 * deforming collider (skin non-NULL), else carried rigidly from rest. */
void sim_colliders_follow(const sim_collider_set *set, uint32_t index, const float rest[3],
			  const sim_skin *skin, float out[3]);

/* Appends animation frames (checked first; the collider is unchanged on
 * error). A mesh collider with triangles and no frames becomes deforming
 * and drops its field. */
drape_err sim_colliders_append_frames(sim_collider_set *set, uint32_t index, const float *frames,
				      uint32_t count, drape_error *err);
/*
 * A mesh collider's vertices as the body-feature contact sees them
 * (bodypush.h): world positions at the start (q0) and end (q1) of the
 * current substep, its triangles, orient = 1 when they are wound outward
 * and -1 when inward, and its contact response. Valid after
 * begin_substep until the next; pointers into the collider.
 */
typedef struct sim_body_view {
	uint32_t nv, nt;
	const uint32_t *tris;
	const float *q0, *q1;
	float orient;
	float thickness, friction, static_friction;
	/* moving: the poses may change from substep to substep (deforming
	 * or keyframed); else they change only with version. */
	int moving;
	/* What a cache of this body may be keyed by, never by its arrays'
	 * addresses (a collider added after a remove can get the freed
	 * ones): mesh names the triangles (a new collider, or a mesh that
	 * becomes deforming, gets a new one); version names a still body's
	 * pose (q0, q1), new whenever they are recomputed. Both unique over
	 * the set's life (sim_collider_set.stamp). */
	uint64_t mesh;
	uint64_t version;
} sim_body_view;

/* Fills *out and returns 1 for a mesh collider whose triangles the sim
 * holds (static, rigid or deforming), 0 for a shape or a field given
 * without its mesh. */
int sim_colliders_body(const sim_collider_set *set, uint32_t index, sim_body_view *out);
/* The triangles (nt, over nv vertices) and mesh stamp such a view of
 * collider `index` will have, known before its first pose; 0 for none. */
int sim_colliders_body_mesh(const sim_collider_set *set, uint32_t index, const uint32_t **tris,
			    uint32_t *nt, uint32_t *nv, uint64_t *mesh);
/* The vertex count such a view of collider `index` will have (0 for none). */
uint32_t sim_colliders_body_size(const sim_collider_set *set, uint32_t index);

drape_collider_kind sim_colliders_kind(const sim_collider_set *set, uint32_t index);
uint32_t sim_colliders_frame_count(const sim_collider_set *set, uint32_t index);

#endif
