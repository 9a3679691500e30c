/*
 * libFuzzer target for the wire codec (proto/).
 *
 * Every input goes to each decoder a peer can reach: proto_request_peek,
 * proto_request_decode, proto_reply_decode for every op a client may expect,
 * and proto_stream_decode. The sanitizers catch memory errors; the property
 * checked on top is the round trip: a request, reply or stream message that
 * decodes must encode again (the decoder accepted nothing the encoder cannot
 * write), the encoding must decode, and for requests the second decode must
 * equal the first field by field. For replies and stream messages the two
 * encodings must be the same bytes. Any violation calls abort(), which
 * libFuzzer and the replay driver report as a crash.
 */
#include "proto/proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs larger than this are refused by proto_check (ETOOLARGE) without
 * looking further, which keeps the fuzzer's time in the decoders. */
#define FUZZ_MAX_MESSAGE (1u << 20)

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_proto: round trip broken: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

static void check(bool ok, const char *what)
{
	if (!ok)
		fail(what, NULL);
}

/* Arrays compare by bytes, so floats compare bit for bit (-0 stays -0).
 * Two absent arrays are the same; an absent and a present one are not. */
static bool same_bytes(const void *a, const void *b, size_t n)
{
	if (a == NULL || b == NULL)
		return a == b || n == 0;
	if (n == 0)
		return true;
	return memcmp(a, b, n) == 0;
}

static bool same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool same_f32(float a, float b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static bool same_f32x3(const float *a, const float *b)
{
	return same_f32(a[0], b[0]) && same_f32(a[1], b[1]) && same_f32(a[2], b[2]);
}

static bool same_mesh(const proto_mesh *a, const proto_mesh *b)
{
	return a->vertex_count == b->vertex_count && a->triangle_count == b->triangle_count &&
	       same_bytes(a->positions, b->positions, (size_t)a->vertex_count * 3 * sizeof(float)) &&
	       same_bytes(a->triangles, b->triangles, (size_t)a->triangle_count * 3 * sizeof(uint32_t));
}

/* Only the fields a mask names travel, so only those are compared: both
 * sides are applied onto the same zeroed struct. */
static bool same_params(const proto_params *a, const proto_params *b)
{
	if (a->mask != b->mask)
		return false;
	drape_sim_params pa, pb;
	memset(&pa, 0, sizeof pa);
	memset(&pb, 0, sizeof pb);
	proto_params_apply(&pa, a);
	proto_params_apply(&pb, b);
	return memcmp(&pa, &pb, sizeof pa) == 0;
}

static bool same_collider(const proto_collider_add_req *x, const proto_collider_add_req *y)
{
	const drape_collider_desc *a = &x->desc, *b = &y->desc;
	if (x->mask != y->mask || a->shape != b->shape || a->keyframe_count != b->keyframe_count)
		return false;
	if (!same_bytes(a->keyframes, b->keyframes, (size_t)a->keyframe_count * sizeof(drape_keyframe)))
		return false;
	if (a->frame_count != b->frame_count ||
	    (a->frame_count > 0 &&
	     (!same_f32(a->frame_start, b->frame_start) ||
	      !same_bytes(a->frames, b->frames, (size_t)a->frame_count * a->vertex_count * 3 * sizeof(float)))))
		return false;
	switch (a->shape) {
	case DRAPE_SHAPE_PLANE:
		if (!same_f32x3(a->point, b->point) || !same_f32x3(a->normal, b->normal))
			return false;
		break;
	case DRAPE_SHAPE_SPHERE:
		if (!same_f32x3(a->center, b->center) || !same_f32(a->radius, b->radius))
			return false;
		break;
	case DRAPE_SHAPE_BOX:
		if (!same_f32x3(a->center, b->center) || !same_f32x3(a->half_extents, b->half_extents))
			return false;
		break;
	case DRAPE_SHAPE_CAPSULE:
		if (!same_f32x3(a->a, b->a) || !same_f32x3(a->b, b->b) || !same_f32(a->radius, b->radius))
			return false;
		break;
	case DRAPE_SHAPE_MESH:
		if (a->vertex_count != b->vertex_count || a->triangle_count != b->triangle_count ||
		    !same_bytes(a->vertices, b->vertices, (size_t)a->vertex_count * 3 * sizeof(float)) ||
		    !same_bytes(a->triangles, b->triangles, (size_t)a->triangle_count * 3 * sizeof(uint32_t)))
			return false;
		if ((x->mask & PROTO_COLLIDER_VOXEL_SIZE) && !same_f32(a->voxel_size, b->voxel_size))
			return false;
		break;
	default:
		return false;
	}
	if ((x->mask & PROTO_COLLIDER_FRICTION) && !same_f32(a->friction, b->friction))
		return false;
	if ((x->mask & PROTO_COLLIDER_STATIC_FRICTION) && !same_f32(a->static_friction, b->static_friction))
		return false;
	if ((x->mask & PROTO_COLLIDER_RESTITUTION) && !same_f32(a->restitution, b->restitution))
		return false;
	if ((x->mask & PROTO_COLLIDER_THICKNESS) && !same_f32(a->thickness, b->thickness))
		return false;
	return a->sdf == NULL && b->sdf == NULL;
}

static void compare_requests(const proto_request *a, const proto_request *b)
{
	check(a->v == b->v && a->id == b->id && a->op == b->op, "request header (v, id, op)");
	check(a->has_client == b->has_client && (!a->has_client || a->client == b->client), "request client");
	check((a->auth == NULL) == (b->auth == NULL) && a->auth_len == b->auth_len &&
		      same_bytes(a->auth, b->auth, a->auth_len),
	      "request auth");
	check(a->has_token == b->has_token &&
		      (!a->has_token || memcmp(a->token, b->token, PROTO_TOKEN_SIZE) == 0),
	      "request token");
	check(a->has_session == b->has_session && (!a->has_session || a->session == b->session),
	      "request session");

	switch (a->op) {
	case PROTO_OP_HELLO:
		check(same_str(a->u.hello.client, b->u.hello.client), "hello client_name");
		break;
	case PROTO_OP_SESSION_CREATE: {
		const proto_create_req *x = &a->u.create, *y = &b->u.create;
		check(same_mesh(&x->mesh, &y->mesh), "session.create mesh");
		check((x->inv_mass == NULL) == (y->inv_mass == NULL) &&
			      same_bytes(x->inv_mass, y->inv_mass, (size_t)x->mesh.vertex_count * sizeof(float)),
		      "session.create inv_mass");
		check(x->pin_count == y->pin_count &&
			      same_bytes(x->pins, y->pins, (size_t)x->pin_count * sizeof(uint32_t)),
		      "session.create pins");
		check(same_params(&x->params, &y->params), "session.create params");
		check(same_str(x->name, y->name), "session.create name");
		break;
	}
	case PROTO_OP_SESSION_UPDATE:
		check(same_params(&a->u.update.params, &b->u.update.params), "session.update params");
		break;
	case PROTO_OP_SESSION_RUN:
		check(a->u.run.frames == b->u.run.frames, "session.run frames");
		break;
	case PROTO_OP_FRAMES_GET:
		check(a->u.frames_get.first == b->u.frames_get.first &&
			      a->u.frames_get.count == b->u.frames_get.count &&
			      a->u.frames_get.wait_ms == b->u.frames_get.wait_ms,
		      "frames.get first/count/wait_ms");
		break;
	case PROTO_OP_COLLIDER_ADD:
		check(same_collider(&a->u.collider_add, &b->u.collider_add), "collider.add");
		break;
	case PROTO_OP_COLLIDER_TRANSFORM: {
		const proto_collider_transform_req *x = &a->u.collider_transform, *y = &b->u.collider_transform;
		check(x->index == y->index && x->keyframe_count == y->keyframe_count &&
			      same_bytes(x->keyframes, y->keyframes, (size_t)x->keyframe_count * sizeof(drape_keyframe)),
		      "collider.transform");
		break;
	}
	case PROTO_OP_COLLIDER_UPDATE: {
		const proto_collider_update_req *x = &a->u.collider_update, *y = &b->u.collider_update;
		check(x->index == y->index && x->vertex_count == y->vertex_count &&
			      same_bytes(x->vertices, y->vertices, (size_t)x->vertex_count * 3 * sizeof(float)),
		      "collider.update");
		break;
	}
	case PROTO_OP_COLLIDER_REMOVE:
		check(a->u.collider_remove.index == b->u.collider_remove.index, "collider.remove index");
		break;
	case PROTO_OP_PINS_ATTACH: {
		const proto_pins_attach_req *x = &a->u.pins_attach, *y = &b->u.pins_attach;
		check(x->count == y->count && x->collider == y->collider &&
			      same_bytes(x->vertices, y->vertices, (size_t)x->count * sizeof(uint32_t)),
		      "pins.attach");
		break;
	}
	case PROTO_OP_COLLIDER_FRAMES: {
		const proto_collider_frames_req *x = &a->u.collider_frames, *y = &b->u.collider_frames;
		check(x->index == y->index && x->point_count == y->point_count &&
			      same_bytes(x->frames, y->frames, (size_t)x->point_count * 3 * sizeof(float)),
		      "collider.frames");
		break;
	}
	case PROTO_OP_SESSION_COLLIDERS:
		check(a->u.colliders.frame == b->u.colliders.frame && a->u.colliders.mesh == b->u.colliders.mesh,
		      "session.colliders frame/mesh");
		break;
	case PROTO_OP_PREFLIGHT:
		check(same_mesh(&a->u.preflight.mesh, &b->u.preflight.mesh) &&
			      a->u.preflight.max_pairs == b->u.preflight.max_pairs,
		      "preflight");
		break;
	default:
		break;
	}
}

static void fuzz_request(const uint8_t *data, size_t size)
{
	proto_header peek_head, dec_head;
	drape_error err;
	memset(&peek_head, 0, sizeof peek_head);
	memset(&dec_head, 0, sizeof dec_head);
	drape_err pe = proto_request_peek(data, size, FUZZ_MAX_MESSAGE, &peek_head, &err);

	proto_request req;
	drape_err de = proto_request_decode(data, size, FUZZ_MAX_MESSAGE, &req, &dec_head, &err);
	if (de != DRAPE_OK) {
		/* A failed decode still fills what it could read of the header;
		 * the message must name something. */
		check(err.code == de && err.message[0] != '\0', "request decode error without a message");
		return;
	}
	/* What peek reads of a request that decodes must agree with the decode. */
	check(pe == DRAPE_OK, "peek failed on a request that decodes");
	check(peek_head.op == req.op && dec_head.op == req.op, "peek/decode op");
	check(peek_head.has_id && peek_head.id == req.id, "peek id");
	check(peek_head.has_client == req.has_client && (!req.has_client || peek_head.client == req.client),
	      "peek client");

	proto_buf b1 = {0};
	drape_err ee = proto_request_encode(&req, &b1, &err);
	if (ee != DRAPE_OK)
		fail("a decoded request does not encode", err.message);
	proto_request again;
	drape_err de2 = proto_request_decode(b1.data, b1.len, 0, &again, NULL, &err);
	if (de2 != DRAPE_OK)
		fail("a re-encoded request does not decode", err.message);
	compare_requests(&req, &again);

	proto_buf b2 = {0};
	if (proto_request_encode(&again, &b2, &err) != DRAPE_OK)
		fail("a twice-decoded request does not encode", err.message);
	check(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0, "request encoding not stable");

	proto_buf_free(&b1);
	proto_buf_free(&b2);
	proto_request_free(&again);
	proto_request_free(&req);
	check(req.mem == NULL && again.mem == NULL, "proto_request_free does not zero");
}

static void fuzz_reply(const uint8_t *data, size_t size, proto_op expect)
{
	proto_reply rep;
	drape_error err;
	if (proto_reply_decode(data, size, FUZZ_MAX_MESSAGE, expect, &rep, &err) != DRAPE_OK)
		return;
	check(rep.op == expect || !rep.ok, "reply op differs from the expected one");

	proto_buf b1 = {0}, b2 = {0};
	if (proto_reply_encode(&rep, &b1, &err) != DRAPE_OK)
		fail("a decoded reply does not encode", err.message);
	proto_reply again;
	if (proto_reply_decode(b1.data, b1.len, 0, expect, &again, &err) != DRAPE_OK)
		fail("a re-encoded reply does not decode", err.message);
	check(again.ok == rep.ok && again.op == rep.op && again.has_id == rep.has_id &&
		      (!rep.has_id || again.id == rep.id),
	      "reply header");
	if (!rep.ok) {
		/* The encoder writes ill-formed UTF-8 in an error message as \xNN
		 * (a peer's bytes must not make the reply an invalid str), so
		 * the message comes back escaped, exactly as the escape makes it. */
		char escaped[sizeof rep.error.message];
		proto_utf8_escape(rep.error.message, strnlen(rep.error.message, sizeof rep.error.message), escaped,
				  sizeof escaped);
		check(again.error.code == rep.error.code && strcmp(again.error.message, escaped) == 0,
		      "reply error");
	}
	if (proto_reply_encode(&again, &b2, &err) != DRAPE_OK)
		fail("a twice-decoded reply does not encode", err.message);
	check(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0, "reply encoding not stable");
	proto_buf_free(&b1);
	proto_buf_free(&b2);
	proto_reply_free(&again);
	proto_reply_free(&rep);
}

static void fuzz_stream(const uint8_t *data, size_t size)
{
	proto_stream_msg m;
	drape_error err;
	if (proto_stream_decode(data, size, FUZZ_MAX_MESSAGE, &m, &err) != DRAPE_OK)
		return;
	proto_buf b1 = {0}, b2 = {0};
	if (proto_stream_encode(&m, &b1, &err) != DRAPE_OK)
		fail("a decoded stream message does not encode", err.message);
	proto_stream_msg again;
	if (proto_stream_decode(b1.data, b1.len, 0, &again, &err) != DRAPE_OK)
		fail("a re-encoded stream message does not decode", err.message);
	check(again.kind == m.kind && again.session == m.session, "stream kind/session");
	if (m.kind == PROTO_STREAM_FRAME)
		check(again.frame.index == m.frame.index && again.frame.vertex_count == m.frame.vertex_count &&
			      same_bytes(again.frame.positions, m.frame.positions,
					 (size_t)m.frame.vertex_count * 3 * sizeof(float)),
		      "stream frame");
	if (proto_stream_encode(&again, &b2, &err) != DRAPE_OK)
		fail("a twice-decoded stream message does not encode", err.message);
	check(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0, "stream encoding not stable");
	proto_buf_free(&b1);
	proto_buf_free(&b2);
	proto_stream_free(&again);
	proto_stream_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	drape_error err;
	/* proto_check is the gate in front of every decoder; its verdict must
	 * not depend on anything but the bytes. */
	drape_err c1 = proto_check(data, size, FUZZ_MAX_MESSAGE, &err);
	drape_err c2 = proto_check(data, size, FUZZ_MAX_MESSAGE, NULL);
	check(c1 == c2, "proto_check differs with and without an error struct");

	fuzz_request(data, size);
	for (int op = PROTO_OP_NONE; op < PROTO_OP_COUNT_; op++)
		fuzz_reply(data, size, (proto_op)op);
	fuzz_stream(data, size);
	return 0;
}
