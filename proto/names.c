/*
 * Names of ops and states, which ops need a session or its token, and the
 * small helpers that start or merge message structs.
 */
#include "proto/wire.h"

#include <stdio.h>
#include <string.h>

static const char *const op_names[PROTO_OP_COUNT_] = {
	[PROTO_OP_NONE] = NULL,
	[PROTO_OP_HELLO] = "hello",
	[PROTO_OP_SESSION_CREATE] = "session.create",
	[PROTO_OP_SESSION_UPDATE] = "session.update",
	[PROTO_OP_SESSION_RUN] = "session.run",
	[PROTO_OP_SESSION_CANCEL] = "session.cancel",
	[PROTO_OP_SESSION_STATUS] = "session.status",
	[PROTO_OP_SESSION_LIST] = "session.list",
	[PROTO_OP_SESSION_DELETE] = "session.delete",
	[PROTO_OP_SESSION_RESUME] = "session.resume",
	[PROTO_OP_FRAMES_GET] = "frames.get",
	[PROTO_OP_SERVER_STATS] = "server.stats",
	[PROTO_OP_COLLIDER_ADD] = "collider.add",
	[PROTO_OP_COLLIDER_TRANSFORM] = "collider.transform",
	[PROTO_OP_COLLIDER_UPDATE] = "collider.update",
	[PROTO_OP_COLLIDER_REMOVE] = "collider.remove",
	[PROTO_OP_PINS_ATTACH] = "pins.attach",
	[PROTO_OP_PREFLIGHT] = "preflight",
	[PROTO_OP_COLLIDER_FRAMES] = "collider.frames",
	[PROTO_OP_SESSION_TOPOLOGY] = "session.topology",
	[PROTO_OP_SESSION_COLLIDERS] = "session.colliders",
};

static const char *const state_names[PROTO_STATE_COUNT_] = {
	[PROTO_STATE_IDLE] = "idle",         [PROTO_STATE_QUEUED] = "queued",
	[PROTO_STATE_RUNNING] = "running",   [PROTO_STATE_DONE] = "done",
	[PROTO_STATE_CANCELED] = "canceled", [PROTO_STATE_FAILED] = "failed",
};

const char *proto_op_name(proto_op op)
{
	if ((unsigned)op >= PROTO_OP_COUNT_)
		return NULL;
	return op_names[op];
}

proto_op proto_op_from_name(const char *name, size_t len)
{
	if (name == NULL)
		return PROTO_OP_NONE;
	for (unsigned i = 1; i < PROTO_OP_COUNT_; i++) {
		if (strlen(op_names[i]) == len && memcmp(op_names[i], name, len) == 0)
			return (proto_op)i;
	}
	return PROTO_OP_NONE;
}

bool proto_op_needs_session(proto_op op)
{
	switch (op) {
	case PROTO_OP_SESSION_UPDATE:
	case PROTO_OP_SESSION_RUN:
	case PROTO_OP_SESSION_CANCEL:
	case PROTO_OP_SESSION_STATUS:
	case PROTO_OP_SESSION_DELETE:
	case PROTO_OP_SESSION_RESUME:
	case PROTO_OP_FRAMES_GET:
	case PROTO_OP_COLLIDER_ADD:
	case PROTO_OP_COLLIDER_TRANSFORM:
	case PROTO_OP_COLLIDER_UPDATE:
	case PROTO_OP_COLLIDER_REMOVE:
	case PROTO_OP_PINS_ATTACH:
	case PROTO_OP_COLLIDER_FRAMES:
	case PROTO_OP_SESSION_TOPOLOGY:
	case PROTO_OP_SESSION_COLLIDERS:
		return true;
	default:
		return false;
	}
}

bool proto_op_needs_token(proto_op op)
{
	return proto_op_needs_session(op) && op != PROTO_OP_SESSION_STATUS;
}

const char *proto_state_name(proto_state s)
{
	if ((unsigned)s >= PROTO_STATE_COUNT_)
		return NULL;
	return state_names[s];
}

bool proto_state_from_name(const char *name, size_t len, proto_state *out)
{
	if (name == NULL)
		return false;
	for (unsigned i = 0; i < PROTO_STATE_COUNT_; i++) {
		if (strlen(state_names[i]) == len && memcmp(state_names[i], name, len) == 0) {
			*out = (proto_state)i;
			return true;
		}
	}
	return false;
}

void proto_params_apply(drape_sim_params *dst, const proto_params *src)
{
	const drape_sim_params *v = &src->values;
	const uint32_t m = src->mask;
	if (m & PROTO_PARAM_FPS)
		dst->fps = v->fps;
	if (m & PROTO_PARAM_SUBSTEPS)
		dst->substeps = v->substeps;
	if (m & PROTO_PARAM_ITERATIONS)
		dst->iterations = v->iterations;
	if (m & PROTO_PARAM_GRAVITY)
		memcpy(dst->gravity, v->gravity, sizeof dst->gravity);
	if (m & PROTO_PARAM_DAMPING)
		dst->damping = v->damping;
	if (m & PROTO_PARAM_WIND)
		memcpy(dst->wind, v->wind, sizeof dst->wind);
	if (m & PROTO_PARAM_DRAG)
		dst->drag = v->drag;
	if (m & PROTO_PARAM_LIFT)
		dst->lift = v->lift;
	if (m & PROTO_PARAM_AIR_DENSITY)
		dst->air_density = v->air_density;
	if (m & PROTO_PARAM_DENSITY)
		dst->density = v->density;
	if (m & PROTO_PARAM_STRETCH)
		dst->stretch = v->stretch;
	if (m & PROTO_PARAM_SHEAR)
		dst->shear = v->shear;
	if (m & PROTO_PARAM_BEND)
		dst->bend = v->bend;
	if (m & PROTO_PARAM_THICKNESS)
		dst->thickness = v->thickness;
	if (m & PROTO_PARAM_LONG_RANGE)
		dst->long_range = v->long_range;
	if (m & PROTO_PARAM_SELF_COLLISION)
		dst->self_collision = v->self_collision;
	if (m & PROTO_PARAM_SELF_THICKNESS)
		dst->self_thickness = v->self_thickness;
	if (m & PROTO_PARAM_SELF_FRICTION)
		dst->self_friction = v->self_friction;
	if (m & PROTO_PARAM_MODEL)
		dst->model = v->model;
	if (m & PROTO_PARAM_STRETCH_K)
		dst->stretch_k = v->stretch_k;
	if (m & PROTO_PARAM_STRETCH_K_WEFT)
		dst->stretch_k_weft = v->stretch_k_weft;
	if (m & PROTO_PARAM_SHEAR_K)
		dst->shear_k = v->shear_k;
	if (m & PROTO_PARAM_BEND_K)
		dst->bend_k = v->bend_k;
	if (m & PROTO_PARAM_COMPRESS_K)
		dst->compress_k = v->compress_k;
	if (m & PROTO_PARAM_DAMPING_RATE)
		dst->damping_rate = v->damping_rate;
	if (m & PROTO_PARAM_TEAR_STRAIN)
		dst->tear_strain = v->tear_strain;
	if (m & PROTO_PARAM_SCHEDULE)
		dst->schedule = v->schedule;
}

void proto_collider_apply(drape_collider_desc *dst, const proto_collider_add_req *src)
{
	const drape_collider_desc *s = &src->desc;
	const uint32_t m = src->mask;
	dst->shape = s->shape;
	memcpy(dst->point, s->point, sizeof dst->point);
	memcpy(dst->normal, s->normal, sizeof dst->normal);
	memcpy(dst->center, s->center, sizeof dst->center);
	dst->radius = s->radius;
	memcpy(dst->half_extents, s->half_extents, sizeof dst->half_extents);
	memcpy(dst->a, s->a, sizeof dst->a);
	memcpy(dst->b, s->b, sizeof dst->b);
	dst->vertices = s->vertices;
	dst->vertex_count = s->vertex_count;
	dst->triangles = s->triangles;
	dst->triangle_count = s->triangle_count;
	dst->keyframes = s->keyframes;
	dst->keyframe_count = s->keyframe_count;
	dst->frames = s->frames;
	dst->frame_count = s->frame_count;
	dst->frame_start = s->frame_start;
	if (m & PROTO_COLLIDER_FRICTION)
		dst->friction = s->friction;
	if (m & PROTO_COLLIDER_STATIC_FRICTION)
		dst->static_friction = s->static_friction;
	if (m & PROTO_COLLIDER_RESTITUTION)
		dst->restitution = s->restitution;
	if (m & PROTO_COLLIDER_THICKNESS)
		dst->thickness = s->thickness;
	if (m & PROTO_COLLIDER_VOXEL_SIZE)
		dst->voxel_size = s->voxel_size;
}

void proto_request_init(proto_request *req, proto_op op)
{
	memset(req, 0, sizeof *req);
	req->v = PROTO_VERSION;
	req->op = op;
	if (op == PROTO_OP_PREFLIGHT)
		req->u.preflight.max_pairs = PROTO_DEFAULT_PREFLIGHT_PAIRS;
}

void proto_reply_init(proto_reply *rep, proto_op op, uint64_t id)
{
	memset(rep, 0, sizeof *rep);
	rep->v = PROTO_VERSION;
	rep->op = op;
	rep->has_id = true;
	rep->id = id;
	rep->ok = true;
}

void proto_reply_init_error(proto_reply *rep, const proto_header *head, const drape_error *e)
{
	memset(rep, 0, sizeof *rep);
	rep->v = PROTO_VERSION;
	if (head != NULL) {
		rep->has_id = head->has_id;
		rep->id = head->id;
		rep->op = head->op;
	}
	rep->ok = false;
	if (e != NULL) {
		rep->error = *e;
		rep->error.message[DRAPE_ERROR_MESSAGE_MAX - 1] = '\0';
	} else {
		rep->error.code = DRAPE_EINTERNAL;
	}
	/* An error reply always carries a failing code, so a caller that
	 * passes a cleared drape_error still sends something a client can act
	 * on instead of "ok": false with code OK. */
	if (rep->error.code == DRAPE_OK)
		rep->error.code = DRAPE_EINTERNAL;
}

void proto_stream_topic(uint32_t session, char out[PROTO_TOPIC_LEN + 1])
{
	snprintf(out, PROTO_TOPIC_LEN + 1, "s%08x", (unsigned)session);
}

size_t proto_frame_encoded_size(uint32_t vertex_count)
{
	/* The positions bin (5-byte header + data) plus a generous allowance
	 * for the frame's map, keys and stats (about 200 bytes in practice),
	 * the reply or stream envelope and the topic. */
	return (size_t)vertex_count * 12u + 5u + 512u;
}
