/*
 * What a viewer sees of a session's colliders: the daemon's own copy of
 * each collider's description (shape, keyframes, mesh, animation poses),
 * kept by the loop from the collider ops that took effect, so
 * session.colliders is answered at once, while a frame is solving, without
 * touching the solver (whose sim a worker holds meanwhile). The same reason
 * session.topology answers from the session's copy of its mesh.
 *
 * The copy follows the ops as they land (a job done, or a reloaded session
 * replaying ops.bin), so it is the colliders as they are now: a collider
 * changed or removed mid-run is shown in its present form at earlier
 * frames too (PROTOCOL.md, session.colliders). Loop thread only.
 */
#ifndef DRAPE_SRV_COLVIEW_H
#define DRAPE_SRV_COLVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drape/sim.h"
#include "proto/proto.h"

typedef struct srv_colview_item {
	drape_shape shape;
	float point[3], normal[3], center[3], radius, half_extents[3], a[3], b[3];
	float *vertices;          /* mesh: own space, vertex_count * 3 */
	uint32_t vertex_count;
	uint32_t *triangles;      /* mesh: triangle_count * 3 */
	uint32_t triangle_count;
	drape_keyframe *keys;     /* NULL = identity */
	uint32_t key_count;
	float *frames;            /* deforming: frame_count poses of vertex_count * 3 */
	uint32_t frame_count;
	float frame_start;
} srv_colview_item;

typedef struct srv_colview {
	srv_colview_item *items; /* in collider index order */
	uint32_t count, cap;
	size_t bytes;            /* held by the copies, counted in the session's memory */
	/* An op could not be copied (out of memory): the copy no longer
	 * matches the solver's colliders, and session.colliders says so
	 * instead of showing a wrong picture. */
	bool lost;
} srv_colview;

struct srv_session;

/* Loop: records a collider op that has taken effect on s's solver
 * (collider.add, .transform, .update, .frames, .remove; other ops are
 * ignored) and moves s->memory by the bytes the copy gained or freed. */
void srv_colview_record(struct srv_session *s, const proto_request *req);

/* The bytes the copy of one collider holds: its mesh, keys and poses. The
 * admission of an animation counts them beside the solver's. */
uint64_t srv_colview_bytes_for(uint32_t vertex_count, uint32_t triangle_count, uint32_t key_count,
			       uint32_t frame_count);

/* Frees the copies. */
void srv_colview_free(srv_colview *v);

/* A deforming mesh's pose at (fractional) frame t, own space, into out
 * (vertex_count * 3 floats): pose i is frame frame_start + i, linear
 * between poses, the first or last held outside them; the rule the solver
 * moves the body by (server/sim/deform.c, sim_deform_pose). */
void srv_colview_pose(const srv_colview_item *c, float t, float *out);

#endif
