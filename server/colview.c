/*
 * The loop's copy of a session's colliders and session.colliders (see
 * colview.h).
 */
#include "server/colview.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/server.h"

/* Per collider in a reply, beyond its arrays: the map's keys and numbers. */
#define COLVIEW_ITEM_BYTES 512u

uint64_t srv_colview_bytes_for(uint32_t vertex_count, uint32_t triangle_count, uint32_t key_count,
			       uint32_t frame_count)
{
	return (uint64_t)vertex_count * 12u + (uint64_t)triangle_count * 12u + (uint64_t)key_count * sizeof(drape_keyframe) +
	       (uint64_t)frame_count * vertex_count * 12u;
}

static size_t item_bytes(const srv_colview_item *c)
{
	return (size_t)srv_colview_bytes_for(c->vertex_count, c->triangle_count, c->key_count, c->frame_count);
}

static void item_free(srv_colview_item *c)
{
	free(c->vertices), free(c->triangles), free(c->keys), free(c->frames);
	memset(c, 0, sizeof *c);
}

void srv_colview_free(srv_colview *v)
{
	for (uint32_t i = 0; i < v->count; i++)
		item_free(&v->items[i]);
	free(v->items);
	memset(v, 0, sizeof *v);
}

/* A copy of n bytes (NULL for none); *ok turns false when out of memory. */
static void *dup_bytes(const void *p, size_t n, bool *ok)
{
	if (p == NULL || n == 0)
		return NULL;
	void *q = malloc(n);
	if (q == NULL)
		*ok = false;
	else
		memcpy(q, p, n);
	return q;
}

static bool add(srv_colview *v, const drape_collider_desc *d)
{
	if (v->count == v->cap) {
		uint32_t cap = v->cap ? v->cap * 2 : 4;
		srv_colview_item *n = realloc(v->items, cap * sizeof *n);
		if (n == NULL)
			return false;
		v->items = n;
		v->cap = cap;
	}
	srv_colview_item c;
	memset(&c, 0, sizeof c);
	c.shape = d->shape;
	memcpy(c.point, d->point, sizeof c.point);
	memcpy(c.normal, d->normal, sizeof c.normal);
	memcpy(c.center, d->center, sizeof c.center);
	memcpy(c.half_extents, d->half_extents, sizeof c.half_extents);
	memcpy(c.a, d->a, sizeof c.a);
	memcpy(c.b, d->b, sizeof c.b);
	c.radius = d->radius;
	c.frame_start = d->frame_start;
	bool ok = true;
	if (d->shape == DRAPE_SHAPE_MESH) {
		c.vertex_count = d->vertex_count;
		c.triangle_count = d->triangle_count;
		c.vertices = dup_bytes(d->vertices, (size_t)d->vertex_count * 12u, &ok);
		c.triangles = dup_bytes(d->triangles, (size_t)d->triangle_count * 12u, &ok);
		c.frame_count = d->frames != NULL ? d->frame_count : 0;
		c.frames = dup_bytes(d->frames, (size_t)c.frame_count * d->vertex_count * 12u, &ok);
	}
	c.key_count = d->keyframes != NULL ? d->keyframe_count : 0;
	c.keys = dup_bytes(d->keyframes, (size_t)c.key_count * sizeof *c.keys, &ok);
	if (!ok) {
		item_free(&c);
		return false;
	}
	v->items[v->count++] = c;
	return true;
}

static bool set_keys(srv_colview_item *c, const drape_keyframe *k, uint32_t n)
{
	bool ok = true;
	drape_keyframe *copy = dup_bytes(k, (size_t)n * sizeof *k, &ok);
	if (!ok)
		return false;
	free(c->keys);
	c->keys = copy;
	c->key_count = copy != NULL ? n : 0;
	return true;
}

static bool set_vertices(srv_colview_item *c, const float *p, uint32_t n)
{
	if (n != c->vertex_count)
		return false; /* the solver refuses another count; never reached */
	memcpy(c->vertices, p, (size_t)n * 12u);
	return true;
}

static bool append_frames(srv_colview_item *c, const float *p, uint32_t points)
{
	if (c->vertex_count == 0 || points % c->vertex_count != 0)
		return false;
	const uint32_t add_n = points / c->vertex_count;
	float *n = realloc(c->frames, ((size_t)c->frame_count + add_n) * c->vertex_count * 12u);
	if (n == NULL)
		return false;
	memcpy(n + (size_t)c->frame_count * c->vertex_count * 3u, p, (size_t)points * 12u);
	c->frames = n;
	c->frame_count += add_n;
	return true;
}

void srv_colview_record(srv_session *s, const proto_request *req)
{
	srv_colview *v = &s->colview;
	if (v->lost)
		return;
	bool ok = true;
	uint32_t index = 0;
	switch (req->op) {
	case PROTO_OP_COLLIDER_ADD: {
		/* The description as the daemon applied it: defaults first, then
		 * what the request set (colliders.c does the same). */
		drape_collider_desc d;
		drape_collider_desc_default(&d);
		proto_collider_apply(&d, &req->u.collider_add);
		index = v->count;
		ok = add(v, &d);
		break;
	}
	case PROTO_OP_COLLIDER_TRANSFORM:
		index = req->u.collider_transform.index;
		ok = index < v->count && set_keys(&v->items[index], req->u.collider_transform.keyframes,
						  req->u.collider_transform.keyframe_count);
		break;
	case PROTO_OP_COLLIDER_UPDATE:
		index = req->u.collider_update.index;
		ok = index < v->count && set_vertices(&v->items[index], req->u.collider_update.vertices,
						      req->u.collider_update.vertex_count);
		break;
	case PROTO_OP_COLLIDER_FRAMES:
		index = req->u.collider_frames.index;
		ok = index < v->count && append_frames(&v->items[index], req->u.collider_frames.frames,
						       req->u.collider_frames.point_count);
		break;
	case PROTO_OP_COLLIDER_REMOVE:
		index = req->u.collider_remove.index;
		ok = index < v->count;
		if (ok) {
			item_free(&v->items[index]);
			memmove(v->items + index, v->items + index + 1, (v->count - index - 1) * sizeof *v->items);
			v->count--;
		}
		break;
	default:
		return;
	}
	if (!ok) {
		v->lost = true;
		srv_warn("session %u: cannot keep a copy of collider %u after %s (out of memory); "
			 "session.colliders answers ENOMEM from now on",
			 (unsigned)s->id, (unsigned)index, proto_op_name(req->op));
	}
	size_t bytes = 0;
	for (uint32_t i = 0; i < v->count; i++)
		bytes += item_bytes(&v->items[i]);
	s->memory = s->memory - v->bytes + bytes;
	v->bytes = bytes;
}

void srv_colview_pose(const srv_colview_item *c, float t, float *out)
{
	const size_t per = (size_t)c->vertex_count * 3u;
	const double f = (double)t - (double)c->frame_start;
	if (!(f > 0.0) || c->frame_count == 1) {
		memcpy(out, c->frames, per * sizeof *out);
		return;
	}
	if (f >= (double)(c->frame_count - 1)) {
		memcpy(out, c->frames + (size_t)(c->frame_count - 1) * per, per * sizeof *out);
		return;
	}
	const double fl = floor(f);
	const size_t i = (size_t)fl;
	const float s = (float)(f - fl);
	const float *a = c->frames + i * per, *b = a + per;
	for (size_t k = 0; k < per; k++)
		out[k] = a[k] + s * (b[k] - a[k]);
}

drape_err srv_op_colliders(srv_server *srv, srv_session *s, const proto_request *req, proto_reply *rep,
			   proto_collider_view **views, float **poses, drape_error *err)
{
	const srv_colview *v = &s->colview;
	const uint32_t frame = req->u.colliders.frame;
	const bool mesh = req->u.colliders.mesh;
	if (frame > s->frames_done)
		return drape_error_setf(err, DRAPE_ERANGE,
					"session.colliders: frame: %u is past the last frame solved, %u (0 is the "
					"input pose)",
					(unsigned)frame, (unsigned)s->frames_done);
	if (v->lost)
		return drape_error_setf(err, DRAPE_ENOMEM,
					"session.colliders: session %u: the daemon ran out of memory keeping its "
					"colliders' copy, so it cannot show them",
					(unsigned)s->id);
	/* The reply must reach a client that takes replies up to max_message,
	 * as every reply does (frames.get stops short of it). */
	uint64_t bytes = 64, pose_floats = 0;
	for (uint32_t i = 0; i < v->count; i++) {
		const srv_colview_item *c = &v->items[i];
		bytes += COLVIEW_ITEM_BYTES;
		if (mesh)
			bytes += (uint64_t)c->vertex_count * 12u + (uint64_t)c->triangle_count * 12u;
		if (c->frame_count > 0) {
			bytes += (uint64_t)c->vertex_count * 12u;
			pose_floats += (uint64_t)c->vertex_count * 3u;
		}
	}
	if (bytes > srv->cfg->max_message)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"session.colliders: %s: the reply would be %llu bytes, over max_message %llu%s",
					mesh ? "mesh" : "frame", (unsigned long long)bytes,
					(unsigned long long)srv->cfg->max_message,
					mesh ? " (the meshes' vertices and triangles make most of it)" : "");
	proto_collider_view *out = calloc(v->count ? v->count : 1, sizeof *out);
	float *buf = pose_floats ? malloc((size_t)pose_floats * sizeof *buf) : NULL;
	if (out == NULL || (pose_floats && buf == NULL)) {
		free(out), free(buf);
		return drape_error_setf(err, DRAPE_ENOMEM, "session.colliders: out of memory for %u colliders",
					(unsigned)v->count);
	}
	float *at = buf;
	for (uint32_t i = 0; i < v->count; i++) {
		const srv_colview_item *c = &v->items[i];
		proto_collider_view *o = &out[i];
		o->index = i;
		o->shape = c->shape;
		memcpy(o->point, c->point, sizeof o->point);
		memcpy(o->normal, c->normal, sizeof o->normal);
		memcpy(o->center, c->center, sizeof o->center);
		memcpy(o->half_extents, c->half_extents, sizeof o->half_extents);
		memcpy(o->a, c->a, sizeof o->a);
		memcpy(o->b, c->b, sizeof o->b);
		o->radius = c->radius;
		/* Simulation frame N is the state after N steps, whose last
		 * substep ends at time N: where the solver had the collider. */
		drape_keyframes_eval(c->keys, c->key_count, (float)frame, o->rotation, o->translate);
		if (c->shape == DRAPE_SHAPE_MESH) {
			o->vertex_count = c->vertex_count;
			o->triangle_count = c->triangle_count;
			if (mesh) {
				o->vertices = c->vertices;
				o->triangles = c->triangles;
			}
			if (c->frame_count > 0) {
				o->frame_count = c->frame_count;
				o->frame_start = c->frame_start;
				srv_colview_pose(c, (float)frame, at);
				o->positions = at;
				at += (size_t)c->vertex_count * 3u;
			}
		}
	}
	rep->u.colliders.session = s->id;
	rep->u.colliders.frame = frame;
	rep->u.colliders.colliders = out;
	rep->u.colliders.count = v->count;
	*views = out;
	*poses = buf;
	return DRAPE_OK;
}
