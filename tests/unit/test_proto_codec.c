/*
 * Codec tests: round trips of every request, reply and stream message, and
 * the op names. Hostile input (the pre-validator, malformed messages,
 * random and mutated bytes) is in test_proto_malformed.c.
 */
#include "proto/proto.h"

#include <math.h>
#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "proto_fixtures.h"

/* ---- Shared fixtures --------------------------------------------------------- */

static void fill_stats(drape_sim_stats *s, uint32_t frame)
{
	memset(s, 0, sizeof *s);
	s->frame = frame;
	s->solve_ms = 12.5;
	s->collide_ms = 3.25;
	s->self_ms = 1.125;
	s->max_strain = 0.0625f;
	s->mean_strain = 0.015625f;
	s->nonfinite = 0;
	s->contacts = 17;
	s->self_pairs = 99;
	s->projections = 1234567890123ull;
}

static int stats_equal(const drape_sim_stats *a, const drape_sim_stats *b)
{
	return a->frame == b->frame && a->solve_ms == b->solve_ms &&
	       a->collide_ms == b->collide_ms && a->self_ms == b->self_ms &&
	       a->max_strain == b->max_strain && a->mean_strain == b->mean_strain &&
	       a->nonfinite == b->nonfinite && a->contacts == b->contacts &&
	       a->self_pairs == b->self_pairs && a->projections == b->projections;
}

static int params_equal(const drape_sim_params *a, const drape_sim_params *b)
{
	return a->fps == b->fps && a->substeps == b->substeps && a->iterations == b->iterations &&
	       memcmp(a->gravity, b->gravity, sizeof a->gravity) == 0 && a->damping == b->damping &&
	       memcmp(a->wind, b->wind, sizeof a->wind) == 0 && a->drag == b->drag &&
	       a->lift == b->lift && a->air_density == b->air_density && a->density == b->density &&
	       a->stretch == b->stretch && a->shear == b->shear && a->bend == b->bend &&
	       a->thickness == b->thickness && a->long_range == b->long_range &&
	       a->self_collision == b->self_collision && a->self_thickness == b->self_thickness &&
	       a->self_friction == b->self_friction && a->model == b->model &&
	       a->stretch_k == b->stretch_k && a->stretch_k_weft == b->stretch_k_weft &&
	       a->shear_k == b->shear_k && a->bend_k == b->bend_k && a->compress_k == b->compress_k &&
	       a->damping_rate == b->damping_rate && a->schedule == b->schedule;
}

/* Encodes req and decodes it back into *out (caller frees); returns the
 * decode result, failing the calling test through *ok when encode fails. */
static drape_err request_roundtrip(const proto_request *req, proto_request *out, drape_error *err)
{
	proto_buf b = { 0 };
	drape_err rc = proto_request_encode(req, &b, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = proto_request_decode(b.data, b.len, 0, out, NULL, err);
	proto_buf_free(&b);
	return rc;
}

static drape_err reply_roundtrip(const proto_reply *rep, proto_reply *out, drape_error *err)
{
	proto_buf b = { 0 };
	drape_err rc = proto_reply_encode(rep, &b, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = proto_reply_decode(b.data, b.len, 0, rep->op, out, err);
	proto_buf_free(&b);
	return rc;
}

/* ---- Request round trips ---------------------------------------------------------- */

static void test_request_header_roundtrip(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_SESSION_STATUS), d;
	static const uint8_t auth[] = "s3cret-token";
	r.auth = auth;
	r.auth_len = sizeof auth - 1;
	r.has_token = true;
	memcpy(r.token, token16, 16);
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.v == PROTO_VERSION && d.id == r.id && d.op == PROTO_OP_SESSION_STATUS);
	CHECK(d.has_client && d.client == 42);
	CHECK(d.has_session && d.session == 7);
	CHECK(d.has_token && memcmp(d.token, token16, 16) == 0);
	CHECK(d.auth_len == r.auth_len && memcmp(d.auth, auth, r.auth_len) == 0);
	CHECK(d.mem != NULL);
	proto_request_free(&d);
	CHECK(d.mem == NULL && d.auth == NULL);
}

static void test_request_roundtrip_hello_and_bodyless(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_HELLO), d;
	r.u.hello.client = "libdrape test";
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.op == PROTO_OP_HELLO && d.u.hello.client != NULL &&
	      strcmp(d.u.hello.client, "libdrape test") == 0);
	CHECK(!d.has_session);
	proto_request_free(&d);

	static const proto_op bodyless[] = {
		PROTO_OP_SESSION_CANCEL, PROTO_OP_SESSION_STATUS, PROTO_OP_SESSION_LIST,
		PROTO_OP_SESSION_DELETE, PROTO_OP_SESSION_RESUME, PROTO_OP_SERVER_STATS,
	};
	for (size_t i = 0; i < sizeof bodyless / sizeof bodyless[0]; i++) {
		r = base_request(bodyless[i]);
		CHECK_OK(request_roundtrip(&r, &d, &err));
		CHECKF(d.op == bodyless[i] && d.id == r.id && d.has_session == r.has_session &&
			       d.session == r.session,
		       "op %s", proto_op_name(bodyless[i]));
		proto_request_free(&d);
	}
	/* session.list's optional "all" (issue 20): false unless sent. */
	r = base_request(PROTO_OP_SESSION_LIST);
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(!d.u.list.all);
	proto_request_free(&d);
	r.u.list.all = true;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.list.all);
	proto_request_free(&d);
}

static void test_request_roundtrip_create(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_SESSION_CREATE), d;
	float inv_mass[9] = { 0, 1, 1, 1, 1, 1, 1, 1, 2.5f };
	uint32_t pins[2] = { 0, 2 };
	float uvs[18];
	for (int i = 0; i < 9; i++) {
		uvs[2 * i] = sheet_pos[3 * i] * 0.75f - 0.125f;
		uvs[2 * i + 1] = sheet_pos[3 * i + 1] * 1.5f;
	}
	r.u.create.mesh = (proto_mesh){ sheet_pos, 9, sheet_tri, 8 };
	r.u.create.inv_mass = inv_mass;
	r.u.create.uvs = uvs;
	r.u.create.pins = pins;
	r.u.create.pin_count = 2;
	float pin_k[2] = { 0.0f, 42.5f };
	r.u.create.pin_stiffness = pin_k;
	float rest[27];
	for (int i = 0; i < 27; i++)
		rest[i] = sheet_pos[i] * 1.25f;
	r.u.create.rest_positions = rest;
	float rscale[9] = { 1, 1, 1, 0.8f, 0.8f, 0.8f, 1.1f, 1.1f, 1.1f };
	r.u.create.rest_scale = rscale;
	uint32_t stitch_v[6] = { 0, 4, 4, 8, 6, 7 };
	float stitch_t[2] = { 0.0f, 0.375f };
	r.u.create.stitch_v = stitch_v;
	r.u.create.stitch_t = stitch_t;
	r.u.create.stitch_count = 2;
	r.u.create.stitch_k = 150.0f;
	r.u.create.sew_speed = 0.25f;
	r.u.create.has_stitch_k = r.u.create.has_sew_speed = true;
	fill_params(&r.u.create.params);
	r.u.create.name = "shirt-take-3";
	float sscale[27];
	for (int i = 0; i < 27; i++)
		sscale[i] = 0.5f + (float)(i % 5);
	float vthick[9] = { 0.004f, 0.004f, 0.004f, 0.012f, 0.012f, 0.012f, 0, 0, 0 };
	float vfric[9] = { -1, -1, -1, 0.8f, 0.8f, 0.8f, 0, 0, 0 };
	r.u.create.stiffness_scale = sscale;
	r.u.create.vertex_thickness = vthick;
	r.u.create.vertex_friction = vfric;
	const proto_object objs[2] = { { "shirt", { 0, 6, 1, 0xffffffffu } },
				       { "jacket", { 6, 3, 2, 1 } } };
	r.u.create.objects = objs;
	r.u.create.object_count = 2;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	const proto_create_req *c = &d.u.create;
	CHECK(c->stiffness_scale != NULL && memcmp(c->stiffness_scale, sscale, sizeof sscale) == 0);
	CHECK(c->vertex_thickness != NULL && memcmp(c->vertex_thickness, vthick, sizeof vthick) == 0);
	CHECK(c->vertex_friction != NULL && memcmp(c->vertex_friction, vfric, sizeof vfric) == 0);
	CHECK(c->object_count == 2 && strcmp(c->objects[0].name, "shirt") == 0 &&
	      strcmp(c->objects[1].name, "jacket") == 0);
	CHECK(memcmp(&c->objects[1].range, &objs[1].range, sizeof objs[1].range) == 0 &&
	      memcmp(&c->objects[0].range, &objs[0].range, sizeof objs[0].range) == 0);
	CHECK(c->mesh.vertex_count == 9 && c->mesh.triangle_count == 8);
	CHECK(memcmp(c->mesh.positions, sheet_pos, sizeof sheet_pos) == 0);
	CHECK(memcmp(c->mesh.triangles, sheet_tri, sizeof sheet_tri) == 0);
	CHECK(c->inv_mass != NULL && memcmp(c->inv_mass, inv_mass, sizeof inv_mass) == 0);
	CHECK(c->pin_count == 2 && c->pins[0] == 0 && c->pins[1] == 2);
	CHECK(c->pin_stiffness != NULL && c->pin_stiffness[0] == 0.0f &&
	      c->pin_stiffness[1] == 42.5f);
	CHECK(c->uvs != NULL && c->uvs != uvs && memcmp(c->uvs, uvs, sizeof uvs) == 0);
	CHECK(c->params.mask == PROTO_PARAMS_ALL);
	CHECK(params_equal(&c->params.values, &r.u.create.params.values));
	CHECK(c->name != NULL && strcmp(c->name, "shirt-take-3") == 0);
	CHECK(c->rest_positions != NULL && memcmp(c->rest_positions, rest, sizeof rest) == 0);
	CHECK(c->rest_scale != NULL && memcmp(c->rest_scale, rscale, sizeof rscale) == 0);
	CHECK(c->stitch_count == 2 && memcmp(c->stitch_v, stitch_v, sizeof stitch_v) == 0 &&
	      memcmp(c->stitch_t, stitch_t, sizeof stitch_t) == 0);
	CHECK(c->has_stitch_k && c->stitch_k == 150.0f && c->has_sew_speed && c->sew_speed == 0.25f);
	/* Decoded arrays are copies, never the caller's or the wire buffer's. */
	CHECK(c->mesh.positions != sheet_pos);
	proto_request_free(&d);

	/* Optional fields absent: NULL pointers and an empty mask. */
	r.u.create.inv_mass = NULL;
	r.u.create.uvs = NULL;
	r.u.create.pins = NULL;
	r.u.create.pin_count = 0;
	r.u.create.pin_stiffness = NULL;
	r.u.create.params.mask = 0;
	r.u.create.name = NULL;
	r.u.create.rest_positions = NULL;
	r.u.create.rest_scale = NULL;
	r.u.create.stiffness_scale = r.u.create.vertex_thickness = r.u.create.vertex_friction = NULL;
	r.u.create.objects = NULL;
	r.u.create.object_count = 0;
	r.u.create.stitch_count = 0;
	r.u.create.has_stitch_k = r.u.create.has_sew_speed = false;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.create.rest_positions == NULL && d.u.create.stitch_count == 0 &&
	      d.u.create.stitch_v == NULL && !d.u.create.has_stitch_k && !d.u.create.has_sew_speed);
	CHECK(d.u.create.inv_mass == NULL && d.u.create.pins == NULL && d.u.create.pin_count == 0);
	CHECK(d.u.create.uvs == NULL && d.u.create.pin_stiffness == NULL &&
	      d.u.create.rest_scale == NULL);
	CHECK(d.u.create.params.mask == 0 && d.u.create.name == NULL);
	CHECK(d.u.create.stiffness_scale == NULL && d.u.create.vertex_thickness == NULL &&
	      d.u.create.vertex_friction == NULL && d.u.create.objects == NULL &&
	      d.u.create.object_count == 0);
	proto_request_free(&d);
}

static void test_request_roundtrip_update_partial(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_SESSION_UPDATE), d;
	fill_params(&r.u.update.params);
	r.u.update.params.mask = PROTO_PARAM_GRAVITY | PROTO_PARAM_SUBSTEPS | PROTO_PARAM_SELF_FRICTION;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.update.params.mask == r.u.update.params.mask);

	/* Applying a partial update changes exactly the fields sent. */
	drape_sim_params cur;
	memset(&cur, 0, sizeof cur);
	cur.fps = 24;
	cur.bend = 0.5f;
	proto_params_apply(&cur, &d.u.update.params);
	CHECK(cur.substeps == 5 && cur.gravity[1] == -9.81f && cur.self_friction == 0.2f);
	CHECK(cur.fps == 24 && cur.bend == 0.5f && cur.iterations == 0);
	proto_request_free(&d);
}

static void test_request_roundtrip_run_frames(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_SESSION_RUN), d;
	r.u.run.frames = 0; /* until cancelled */
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.run.frames == 0);
	proto_request_free(&d);
	r.u.run.frames = 4000000000u;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.run.frames == 4000000000u);
	proto_request_free(&d);

	r = base_request(PROTO_OP_FRAMES_GET);
	r.u.frames_get.first = 6;
	r.u.frames_get.count = 100;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.frames_get.first == 6 && d.u.frames_get.count == 100 && d.u.frames_get.wait_ms == 0);
	CHECK(d.has_token); /* a session's frames are its owner's */
	proto_request_free(&d);
	/* A held frames.get: wait_ms travels, up to the protocol's cap. */
	r.u.frames_get.wait_ms = PROTO_MAX_FRAMES_WAIT_MS;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.frames_get.wait_ms == PROTO_MAX_FRAMES_WAIT_MS);
	proto_request_free(&d);
	r.u.frames_get.wait_ms = PROTO_MAX_FRAMES_WAIT_MS + 1;
	CHECK(request_roundtrip(&r, &d, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "wait_ms") != NULL, "%s", err.message);
}

static void test_request_roundtrip_colliders(void)
{
	drape_error err;
	proto_request r, d;
	static const drape_keyframe keys[2] = {
		{ 1, { 0, 0, 0 }, { 0, 0, 0 } },
		{ 48, { 0.5f, 1, -2 }, { 0, 90, 12.5f } },
	};
	const drape_shape shapes[] = { DRAPE_SHAPE_PLANE, DRAPE_SHAPE_SPHERE, DRAPE_SHAPE_BOX,
				       DRAPE_SHAPE_CAPSULE, DRAPE_SHAPE_MESH };
	for (size_t i = 0; i < 5; i++) {
		r = base_request(PROTO_OP_COLLIDER_ADD);
		drape_collider_desc *s = &r.u.collider_add.desc;
		s->shape = shapes[i];
		s->point[1] = 0.5f;
		s->normal[1] = 1;
		s->center[0] = 1;
		s->center[2] = -1;
		s->radius = 0.25f;
		s->half_extents[0] = s->half_extents[1] = s->half_extents[2] = 0.3f;
		s->a[0] = -1;
		s->b[0] = 1;
		s->vertices = sheet_pos;
		s->vertex_count = 9;
		s->triangles = sheet_tri;
		s->triangle_count = 8;
		s->friction = 0.4f;
		s->static_friction = 0.6f;
		s->restitution = 0.1f;
		s->thickness = 0.002f;
		s->voxel_size = 0.01f;
		s->keyframes = keys;
		s->keyframe_count = 2;
		r.u.collider_add.mask = PROTO_COLLIDER_ALL;
		CHECK_OK(request_roundtrip(&r, &d, &err));
		const drape_collider_desc *o = &d.u.collider_add.desc;
		CHECK(o->shape == shapes[i] && d.u.collider_add.mask == PROTO_COLLIDER_ALL);
		CHECK(o->friction == 0.4f && o->static_friction == 0.6f && o->restitution == 0.1f &&
		      o->thickness == 0.002f && o->voxel_size == 0.01f);
		CHECK(o->keyframe_count == 2 && o->keyframes[1].frame == 48 &&
		      o->keyframes[1].translate[2] == -2 && o->keyframes[1].rotate[2] == 12.5f);
		switch (shapes[i]) {
		case DRAPE_SHAPE_PLANE:
			CHECK(o->point[1] == 0.5f && o->normal[1] == 1);
			break;
		case DRAPE_SHAPE_SPHERE:
			CHECK(o->center[2] == -1 && o->radius == 0.25f);
			break;
		case DRAPE_SHAPE_BOX:
			CHECK(o->center[0] == 1 && o->half_extents[2] == 0.3f);
			break;
		case DRAPE_SHAPE_CAPSULE:
			CHECK(o->a[0] == -1 && o->b[0] == 1 && o->radius == 0.25f);
			break;
		default:
			CHECK(o->vertex_count == 9 && o->triangle_count == 8);
			CHECK(memcmp(o->vertices, sheet_pos, sizeof sheet_pos) == 0);
			CHECK(memcmp(o->triangles, sheet_tri, sizeof sheet_tri) == 0);
			break;
		}
		CHECK(o->sdf == NULL && o->max_voxels == 0);

		/* Merging keeps defaults for fields the message did not carry. */
		drape_collider_desc merged;
		memset(&merged, 0, sizeof merged);
		merged.friction = 0.3f;
		proto_collider_add_req partial = d.u.collider_add;
		partial.mask = PROTO_COLLIDER_RESTITUTION;
		proto_collider_apply(&merged, &partial);
		CHECK(merged.friction == 0.3f && merged.restitution == 0.1f &&
		      merged.shape == shapes[i] && merged.keyframe_count == 2);
		proto_request_free(&d);
	}

	r = base_request(PROTO_OP_COLLIDER_TRANSFORM);
	r.u.collider_transform.index = 3;
	r.u.collider_transform.keyframes = keys;
	r.u.collider_transform.keyframe_count = 2;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.collider_transform.index == 3 && d.u.collider_transform.keyframe_count == 2);
	CHECK(memcmp(&d.u.collider_transform.keyframes[1], &keys[1], sizeof keys[1]) == 0);
	proto_request_free(&d);

	r.u.collider_transform.keyframe_count = 0; /* identity */
	r.u.collider_transform.keyframes = NULL;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.collider_transform.keyframe_count == 0 && d.u.collider_transform.keyframes == NULL);
	proto_request_free(&d);

	r = base_request(PROTO_OP_COLLIDER_UPDATE);
	r.u.collider_update.index = 1;
	r.u.collider_update.vertices = sheet_pos;
	r.u.collider_update.vertex_count = 9;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.collider_update.index == 1 && d.u.collider_update.vertex_count == 9 &&
	      memcmp(d.u.collider_update.vertices, sheet_pos, sizeof sheet_pos) == 0);
	proto_request_free(&d);

	r = base_request(PROTO_OP_COLLIDER_REMOVE);
	r.u.collider_remove.index = 9;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.collider_remove.index == 9);
	proto_request_free(&d);

	static const uint32_t pv[3] = { 0, 1, 2 };
	r = base_request(PROTO_OP_PINS_ATTACH);
	r.u.pins_attach.vertices = pv;
	r.u.pins_attach.count = 3;
	r.u.pins_attach.collider = 2;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.pins_attach.count == 3 && d.u.pins_attach.vertices[2] == 2 &&
	      d.u.pins_attach.collider == 2);
	proto_request_free(&d);
}

static void test_request_roundtrip_preflight(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_PREFLIGHT), d;
	CHECK(r.u.preflight.max_pairs == PROTO_DEFAULT_PREFLIGHT_PAIRS);
	r.u.preflight.mesh = (proto_mesh){ sheet_pos, 9, sheet_tri, 8 };
	r.u.preflight.max_pairs = 100;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.preflight.max_pairs == 100 && d.u.preflight.mesh.triangle_count == 8);
	CHECK(memcmp(d.u.preflight.mesh.positions, sheet_pos, sizeof sheet_pos) == 0);
	proto_request_free(&d);
}

/* Bulk arrays are little-endian float32 on the wire: the exact bytes of the
 * first position appear after the bin header. */
static void test_request_bin_is_little_endian(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_PREFLIGHT);
	static const float pos[9] = { 1.0f, -2.0f, 0.5f, 0, 0, 0, 1, 1, 1 };
	static const uint32_t tri[3] = { 0, 1, 0x01020304u % 3 };
	r.u.preflight.mesh = (proto_mesh){ pos, 3, tri, 1 };
	proto_buf b = { 0 };
	CHECK_OK(proto_request_encode(&r, &b, &err));
	/* 1.0f = 0x3f800000, -2.0f = 0xc0000000: LE bytes 00 00 80 3f 00 00 00 c0. */
	static const uint8_t want[] = { 0xc4, 36, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0 };
	int found = 0;
	for (size_t i = 0; i + sizeof want <= b.len; i++)
		found |= memcmp(b.data + i, want, sizeof want) == 0;
	proto_buf_free(&b);
	CHECK(found);
	CHECK(b.data == NULL && b.len == 0);
}

static void test_request_encode_refuses_bad_input(void)
{
	drape_error err;
	proto_buf b = { (uint8_t *)"untouched", 9 };
	proto_request r = base_request(PROTO_OP_SESSION_CREATE);
	r.u.create.mesh = (proto_mesh){ NULL, 9, sheet_tri, 8 };
	CHECK(proto_request_encode(&r, &b, &err) == DRAPE_EINVAL);
	CHECK(strstr(err.message, "positions") != NULL);
	CHECK(b.len == 9 && memcmp(b.data, "untouched", 9) == 0);

	r = base_request(PROTO_OP_SESSION_RUN);
	r.has_session = false;
	CHECK(proto_request_encode(&r, &b, &err) == DRAPE_EINVAL);
	CHECK(strstr(err.message, "session") != NULL);

	r = base_request(PROTO_OP_NONE);
	CHECK(proto_request_encode(&r, &b, &err) == DRAPE_EINVAL);

	char longname[PROTO_MAX_NAME + 2];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	r = base_request(PROTO_OP_SESSION_CREATE);
	r.u.create.mesh = (proto_mesh){ sheet_pos, 9, sheet_tri, 8 };
	r.u.create.name = longname;
	CHECK(proto_request_encode(&r, &b, &err) == DRAPE_EINVAL);
	CHECK(strstr(err.message, "name") != NULL);
	CHECK(b.len == 9);
}

/* ---- Reply round trips -------------------------------------------------------------- */

static void test_reply_roundtrip_hello(void)
{
	drape_error err;
	proto_reply r, d;
	static const char *const urls[] = { "ipc:///tmp/drape.stream", "tcp://127.0.0.1:5556" };
	proto_reply_init(&r, PROTO_OP_HELLO, 99);
	r.u.hello.version = PROTO_VERSION;
	r.u.hello.server = "draped 0.1.0 (avx2)";
	r.u.hello.stream_urls = urls;
	r.u.hello.stream_url_count = 2;
	r.u.hello.auth_required = true;
	r.u.hello.limits = (proto_limits){ 64u << 20, 1u << 20, 2u << 20, 16, 64000000, 100000,
					   64, 8, 100000, 64, 1ull << 32, 3600, 12ull << 30, 256, 64, 5000, 3ull << 30 };
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.ok && d.has_id && d.id == 99 && d.op == PROTO_OP_HELLO);
	const proto_hello_rep *h = &d.u.hello;
	CHECK(h->version == 1 && strcmp(h->server, "draped 0.1.0 (avx2)") == 0 && h->auth_required);
	CHECK(h->stream_url_count == 2 && strcmp(h->stream_urls[1], "tcp://127.0.0.1:5556") == 0);
	CHECK(memcmp(&h->limits, &r.u.hello.limits, sizeof h->limits) == 0);
	proto_reply_free(&d);
}

static void test_reply_roundtrip_create_run_cancel(void)
{
	drape_error err;
	proto_reply r, d;
	proto_reply_init(&r, PROTO_OP_SESSION_CREATE, 1);
	r.u.create.session = 12;
	memcpy(r.u.create.token, token16, 16);
	r.u.create.topology = (drape_sim_topology){ 9, 8, 16, 8, 8, 1, 2, 3, 4, 3, 10, 7, 6, 5 };
	r.u.create.intersections = 5;
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.u.create.session == 12 && memcmp(d.u.create.token, token16, 16) == 0);
	CHECK(memcmp(&d.u.create.topology, &r.u.create.topology, sizeof r.u.create.topology) == 0);
	CHECK(d.u.create.intersections == 5);
	proto_reply_free(&d);

	const proto_op runops[2] = { PROTO_OP_SESSION_RUN, PROTO_OP_SESSION_RESUME };
	for (int i = 0; i < 2; i++) {
		proto_reply_init(&r, runops[i], 2);
		r.u.run = (proto_run_rep){ PROTO_STATE_QUEUED, 10, 58, 3 };
		CHECK_OK(reply_roundtrip(&r, &d, &err));
		CHECK(d.u.run.state == PROTO_STATE_QUEUED && d.u.run.frames_done == 10 &&
		      d.u.run.frames_target == 58 && d.u.run.queue_position == 3);
		proto_reply_free(&d);
	}

	proto_reply_init(&r, PROTO_OP_SESSION_CANCEL, 3);
	r.u.cancel = (proto_cancel_rep){ PROTO_STATE_CANCELED, 17 };
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.u.cancel.state == PROTO_STATE_CANCELED && d.u.cancel.frames_done == 17);
	proto_reply_free(&d);

	/* Ops without result fields still round-trip their envelope. */
	static const proto_op empty[] = { PROTO_OP_SESSION_UPDATE, PROTO_OP_SESSION_DELETE,
					  PROTO_OP_COLLIDER_TRANSFORM, PROTO_OP_COLLIDER_UPDATE,
					  PROTO_OP_COLLIDER_REMOVE, PROTO_OP_PINS_ATTACH };
	for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
		proto_reply_init(&r, empty[i], 100 + i);
		CHECK_OK(reply_roundtrip(&r, &d, &err));
		CHECK(d.ok && d.id == 100 + i && d.op == empty[i]);
		proto_reply_free(&d);
	}

	proto_reply_init(&r, PROTO_OP_COLLIDER_ADD, 4);
	r.u.collider_add.index = 2;
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.u.collider_add.index == 2);
	proto_reply_free(&d);
}

static void test_reply_roundtrip_status_list_stats(void)
{
	drape_error err;
	proto_reply r, d;
	proto_reply_init(&r, PROTO_OP_SESSION_STATUS, 5);
	proto_status_rep *s = &r.u.status;
	s->state = PROTO_STATE_FAILED;
	s->name = "cape";
	s->queue_position = 0;
	s->frames_done = 40;
	s->frames_target = 100;
	s->frames_first = 1;
	s->vertices = 4096;
	s->triangles = 8000;
	s->colliders = 2;
	s->has_error = true;
	drape_error_setf(&s->error, DRAPE_ENONFINITE, "frame 41: 3 vertices became NaN");
	s->error_frame = 41;
	s->has_stats = true;
	fill_stats(&s->stats, 40);
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	/* Without a storage error the key is absent and decodes as none. */
	CHECK(!d.u.status.has_storage_error);
	proto_reply_free(&d);
	s->has_storage_error = true;
	drape_error_setf(&s->storage_error, DRAPE_EIO,
			 "frame 40: cannot write its record to frames.bin: No space left on device (in /s/7)");
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	const proto_status_rep *o = &d.u.status;
	CHECK(o->has_storage_error && o->storage_error.code == DRAPE_EIO);
	CHECK(strcmp(o->storage_error.message, s->storage_error.message) == 0);
	CHECK(o->state == PROTO_STATE_FAILED && strcmp(o->name, "cape") == 0);
	CHECK(o->frames_done == 40 && o->frames_target == 100 && o->frames_first == 1);
	CHECK(o->vertices == 4096 && o->triangles == 8000 && o->colliders == 2);
	CHECK(o->has_error && o->error.code == DRAPE_ENONFINITE && o->error_frame == 41);
	CHECK(strcmp(o->error.message, "frame 41: 3 vertices became NaN") == 0);
	CHECK(o->has_stats && stats_equal(&o->stats, &s->stats));
	proto_reply_free(&d);

	proto_session_info infos[3] = {
		{ 1, "a", PROTO_STATE_IDLE, 0, 9, NULL, NULL, 0, 0, 0, 0 },
		{ 2, NULL, PROTO_STATE_RUNNING, 5, 4096, "ana", "127.0.0.1", 1764000000ull, 60, 1ull << 33,
		  (1ull << 32) + 7 },
		{ 3, "c", PROTO_STATE_DONE, 48, 100, NULL, NULL, 0, 0, 0, 0 },
	};
	proto_reply_init(&r, PROTO_OP_SESSION_LIST, 6);
	r.u.list.sessions = infos;
	r.u.list.count = 3;
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.u.list.count == 3);
	CHECK(d.u.list.sessions[1].id == 2 && d.u.list.sessions[1].name == NULL &&
	      d.u.list.sessions[1].state == PROTO_STATE_RUNNING &&
	      d.u.list.sessions[1].frames_done == 5 && d.u.list.sessions[1].vertices == 4096);
	CHECK(strcmp(d.u.list.sessions[2].name, "c") == 0);
	/* The owner fields (issue 20) round-trip, 64-bit sizes intact; absent
	 * ones decode as NULL / 0. */
	CHECK(strcmp(d.u.list.sessions[1].owner, "ana") == 0 && strcmp(d.u.list.sessions[1].host, "127.0.0.1") == 0 &&
	      d.u.list.sessions[1].created == 1764000000ull && d.u.list.sessions[1].frames_target == 60 &&
	      d.u.list.sessions[1].memory == 1ull << 33 && d.u.list.sessions[1].disk == (1ull << 32) + 7);
	CHECK(d.u.list.sessions[0].owner == NULL && d.u.list.sessions[0].host == NULL &&
	      d.u.list.sessions[0].created == 0);
	proto_reply_free(&d);

	proto_reply_init(&r, PROTO_OP_SESSION_LIST, 6);
	CHECK_OK(reply_roundtrip(&r, &d, &err)); /* empty list */
	CHECK(d.u.list.count == 0);
	proto_reply_free(&d);

	proto_reply_init(&r, PROTO_OP_SERVER_STATS, 7);
	r.u.server_stats = (proto_server_stats_rep){ 10, 2, 4, 1ull << 33, 5000, 7000, 123456,
						     9, 8, 3600.5 };
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(memcmp(&d.u.server_stats, &r.u.server_stats, sizeof r.u.server_stats) == 0 ||
	      (d.u.server_stats.memory == 1ull << 33 && d.u.server_stats.uptime_s == 3600.5 &&
	       d.u.server_stats.threads == 8 && d.u.server_stats.clients == 9));
	proto_reply_free(&d);
}

static void test_reply_roundtrip_frames_preflight(void)
{
	drape_error err;
	proto_reply r, d;
	proto_frame frames[3];
	memset(frames, 0, sizeof frames);
	for (uint32_t i = 0; i < 3; i++) {
		frames[i].index = 6 + i;
		frames[i].vertex_count = 9;
		frames[i].positions = sheet_pos;
		fill_stats(&frames[i].stats, 6 + i);
	}
	proto_reply_init(&r, PROTO_OP_FRAMES_GET, 8);
	r.u.frames_get.session = 7;
	r.u.frames_get.frames = frames;
	r.u.frames_get.count = 3;
	r.u.frames_get.frames_done = 20;
	r.u.frames_get.live = true;
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	const proto_frames_get_rep *g = &d.u.frames_get;
	CHECK(g->session == 7 && g->count == 3 && g->frames_done == 20);
	CHECK(g->has_live && g->live);
	for (uint32_t i = 0; i < 3; i++) {
		CHECK(g->frames[i].index == 6 + i && g->frames[i].vertex_count == 9);
		CHECK(memcmp(g->frames[i].positions, sheet_pos, sizeof sheet_pos) == 0);
		CHECK(stats_equal(&g->frames[i].stats, &frames[i].stats));
	}
	proto_reply_free(&d);
	/* live false travels too (a reader learns no frame is coming). */
	r.u.frames_get.live = false;
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.u.frames_get.has_live && !d.u.frames_get.live);
	proto_reply_free(&d);

	/* A reply whose frames skip an index is refused: clients rely on it. */
	frames[2].index = 10;
	proto_buf b = { 0 };
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	CHECK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_FRAMES_GET, &d, &err) == DRAPE_EPROTO);
	CHECK(strstr(err.message, "frames[2]") != NULL);
	proto_buf_free(&b);

	drape_tri_pair pairs[2] = { { 1, 5 }, { 2, 7 } };
	proto_reply_init(&r, PROTO_OP_PREFLIGHT, 9);
	r.u.preflight.count = 40;
	r.u.preflight.pairs = pairs;
	r.u.preflight.pair_count = 2;
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(d.u.preflight.count == 40 && d.u.preflight.pair_count == 2);
	CHECK(d.u.preflight.pairs[1].a == 2 && d.u.preflight.pairs[1].b == 7);
	proto_reply_free(&d);
}

static void test_reply_error_roundtrip(void)
{
	drape_error err, e;
	proto_reply r, d;
	proto_header head = { true, 1, true, 77, false, 0, PROTO_OP_SESSION_CREATE };
	drape_error_setf(&e, DRAPE_ERANGE, "session.create: triangles[5][1]: index 9 >= vertex count 4");
	proto_reply_init_error(&r, &head, &e);
	CHECK_OK(reply_roundtrip(&r, &d, &err));
	CHECK(!d.ok && d.has_id && d.id == 77 && d.op == PROTO_OP_SESSION_CREATE);
	CHECK(d.error.code == DRAPE_ERANGE && strcmp(d.error.message, e.message) == 0);
	proto_reply_free(&d);

	/* Nothing readable in the request: no id, no op; the client still
	 * decodes the error whatever it asked. */
	drape_error_setf(&e, DRAPE_ETRUNCATED, "message: ends at byte 3");
	proto_reply_init_error(&r, NULL, &e);
	proto_buf b = { 0 };
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	CHECK_OK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_RUN, &d, &err));
	CHECK(!d.ok && !d.has_id && d.error.code == DRAPE_ETRUNCATED);
	proto_reply_free(&d);
	proto_buf_free(&b);

	/* An error reply never says OK, even when handed a cleared error. */
	drape_error_clear(&e);
	proto_reply_init_error(&r, NULL, &e);
	CHECK(r.error.code == DRAPE_EINTERNAL);
}

static void test_reply_op_mismatch(void)
{
	drape_error err;
	proto_reply r, d;
	proto_reply_init(&r, PROTO_OP_COLLIDER_ADD, 1);
	proto_buf b = { 0 };
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	CHECK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_STATUS, &d, &err) == DRAPE_EPROTO);
	CHECK(strstr(err.message, "op") != NULL);
	proto_buf_free(&b);
}

/* ---- Stream messages -------------------------------------------------------------- */

static void test_stream_roundtrip(void)
{
	drape_error err;
	char topic[PROTO_TOPIC_LEN + 1];
	proto_stream_topic(42, topic);
	CHECK(strcmp(topic, "s0000002a") == 0);
	proto_stream_topic(0xdeadbeef, topic);
	CHECK(strcmp(topic, "sdeadbeef") == 0);

	proto_stream_msg m, d;
	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_FRAME;
	m.session = 42;
	m.frame.index = 3;
	m.frame.vertex_count = 9;
	m.frame.positions = sheet_pos;
	fill_stats(&m.frame.stats, 3);
	proto_buf b = { 0 };
	CHECK_OK(proto_stream_encode(&m, &b, &err));
	CHECK(b.len > PROTO_TOPIC_LEN && memcmp(b.data, "s0000002a", PROTO_TOPIC_LEN) == 0);
	CHECK(b.len <= proto_frame_encoded_size(9));
	CHECK_OK(proto_stream_decode(b.data, b.len, 0, &d, &err));
	CHECK(d.kind == PROTO_STREAM_FRAME && d.session == 42 && d.frame.index == 3);
	CHECK(memcmp(d.frame.positions, sheet_pos, sizeof sheet_pos) == 0);
	CHECK(stats_equal(&d.frame.stats, &m.frame.stats));
	proto_stream_free(&d);

	/* A topic naming another session than the body is refused. */
	b.data[PROTO_TOPIC_LEN - 1] = 'b';
	CHECK(proto_stream_decode(b.data, b.len, 0, &d, &err) == DRAPE_EPROTO);
	CHECK(strstr(err.message, "session") != NULL);
	b.data[0] = 'S';
	CHECK(proto_stream_decode(b.data, b.len, 0, &d, &err) == DRAPE_EPROTO);
	CHECK(strstr(err.message, "topic") != NULL);
	CHECK(proto_stream_decode(b.data, 4, 0, &d, &err) == DRAPE_ETRUNCATED);
	proto_buf_free(&b);

	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_END;
	m.session = 42;
	m.state = PROTO_STATE_FAILED;
	m.frames_done = 12;
	m.has_error = true;
	drape_error_setf(&m.error, DRAPE_ENONFINITE, "frame 13: NaN");
	CHECK_OK(proto_stream_encode(&m, &b, &err));
	CHECK_OK(proto_stream_decode(b.data, b.len, 0, &d, &err));
	CHECK(d.kind == PROTO_STREAM_END && d.state == PROTO_STATE_FAILED && d.frames_done == 12);
	CHECK(d.has_error && d.error.code == DRAPE_ENONFINITE &&
	      strcmp(d.error.message, "frame 13: NaN") == 0);
	proto_stream_free(&d);
	proto_buf_free(&b);
}

static void test_names(void)
{
	for (int op = 1; op < PROTO_OP_COUNT_; op++) {
		const char *n = proto_op_name((proto_op)op);
		CHECK(n != NULL);
		CHECK(proto_op_from_name(n, strlen(n)) == (proto_op)op);
	}
	CHECK(proto_op_from_name("session.creat", 13) == PROTO_OP_NONE);
	CHECK(proto_op_name(PROTO_OP_COUNT_) == NULL);
	for (int s = 0; s < PROTO_STATE_COUNT_; s++) {
		proto_state o;
		const char *n = proto_state_name((proto_state)s);
		CHECK(n != NULL && proto_state_from_name(n, strlen(n), &o) && o == (proto_state)s);
	}
	CHECK(proto_op_needs_token(PROTO_OP_SESSION_RUN) && proto_op_needs_token(PROTO_OP_FRAMES_GET));
	CHECK(!proto_op_needs_token(PROTO_OP_SESSION_STATUS));
	CHECK(proto_op_needs_session(PROTO_OP_FRAMES_GET) && !proto_op_needs_session(PROTO_OP_PREFLIGHT));
}

/* ---- Deforming colliders: collider.add with frames, collider.frames ------------ */
static void test_request_roundtrip_anim(void)
{
	drape_error err;
	float poses[3 * 27];
	anim_poses(poses, 3);
	proto_request r = base_request(PROTO_OP_COLLIDER_ADD), d;
	drape_collider_desc *s = &r.u.collider_add.desc;
	s->shape = DRAPE_SHAPE_MESH;
	s->vertices = sheet_pos;
	s->vertex_count = 9;
	s->triangles = sheet_tri;
	s->triangle_count = 8;
	s->frames = poses;
	s->frame_count = 3;
	s->frame_start = 25.0f;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	const drape_collider_desc *o = &d.u.collider_add.desc;
	int ok = o->frame_count == 3 && o->frame_start == 25.0f && o->frames != NULL &&
		 memcmp(o->frames, poses, sizeof poses) == 0;
	drape_collider_desc merged;
	memset(&merged, 0, sizeof merged);
	proto_collider_apply(&merged, &d.u.collider_add);
	ok &= merged.frames == o->frames && merged.frame_count == 3 && merged.frame_start == 25.0f;
	proto_request_free(&d);
	CHECK(ok);

	/* Without frames nothing deform-related is sent or decoded. */
	s->frames = NULL;
	s->frame_count = 0;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	ok = d.u.collider_add.desc.frame_count == 0 && d.u.collider_add.desc.frames == NULL;
	proto_request_free(&d);
	CHECK(ok);

	r = base_request(PROTO_OP_COLLIDER_FRAMES);
	r.u.collider_frames.index = 4;
	r.u.collider_frames.frames = poses;
	r.u.collider_frames.point_count = 2 * 9;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	ok = d.op == PROTO_OP_COLLIDER_FRAMES && d.has_token && d.session == 7 && d.u.collider_frames.index == 4 &&
	     d.u.collider_frames.point_count == 18 && memcmp(d.u.collider_frames.frames, poses, 18 * 12) == 0;
	proto_request_free(&d);
	CHECK(ok);
	CHECK(proto_op_needs_session(PROTO_OP_COLLIDER_FRAMES) && proto_op_needs_token(PROTO_OP_COLLIDER_FRAMES));
	CHECK(proto_op_from_name("collider.frames", 15) == PROTO_OP_COLLIDER_FRAMES);

	proto_reply rep, dr;
	proto_reply_init(&rep, PROTO_OP_COLLIDER_FRAMES, 3);
	rep.u.collider_frames.frame_count = 96;
	CHECK_OK(reply_roundtrip(&rep, &dr, &err));
	ok = dr.ok && dr.u.collider_frames.frame_count == 96;
	proto_reply_free(&dr);
	CHECK(ok);
}

static const check_test tests[] = {
	CHECK_TEST(test_request_header_roundtrip),
	CHECK_TEST(test_request_roundtrip_hello_and_bodyless),
	CHECK_TEST(test_request_roundtrip_create),
	CHECK_TEST(test_request_roundtrip_update_partial),
	CHECK_TEST(test_request_roundtrip_run_frames),
	CHECK_TEST(test_request_roundtrip_colliders),
	CHECK_TEST(test_request_roundtrip_preflight),
	CHECK_TEST(test_request_bin_is_little_endian),
	CHECK_TEST(test_request_encode_refuses_bad_input),
	CHECK_TEST(test_reply_roundtrip_hello),
	CHECK_TEST(test_reply_roundtrip_create_run_cancel),
	CHECK_TEST(test_reply_roundtrip_status_list_stats),
	CHECK_TEST(test_reply_roundtrip_frames_preflight),
	CHECK_TEST(test_reply_error_roundtrip),
	CHECK_TEST(test_reply_op_mismatch),
	CHECK_TEST(test_stream_roundtrip),
	CHECK_TEST(test_names),
	CHECK_TEST(test_request_roundtrip_anim),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
