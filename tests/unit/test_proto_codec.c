/*
 * Codec tests: round trips of every request, reply and stream message; the
 * pre-validator on hostile byte strings; the decoder's error codes and field
 * names on malformed messages; and a randomized pass over garbage and
 * mutated messages that may only ever produce an error or a valid decode
 * (run it under AddressSanitizer and UndefinedBehaviorSanitizer).
 */
#include "proto/proto.h"

#include <math.h>
#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* ---- Shared fixtures --------------------------------------------------------- */

/* A 3x3-vertex sheet: 9 vertices, 8 triangles. */
static const float sheet_pos[27] = {
	0, 0, 0,   0.5f, 0, 0,   1, 0, 0,
	0, 0.5f, 0, 0.5f, 0.5f, 0, 1, 0.5f, 0,
	0, 1, 0,   0.5f, 1, 0,   1, 1, 0.25f,
};
static const uint32_t sheet_tri[24] = {
	0, 1, 4, 0, 4, 3, 1, 2, 5, 1, 5, 4, 3, 4, 7, 3, 7, 6, 4, 5, 8, 4, 8, 7,
};
static const uint8_t token16[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void fill_params(proto_params *p)
{
	memset(p, 0, sizeof *p);
	drape_sim_params *v = &p->values;
	v->fps = 30;
	v->substeps = 5;
	v->iterations = 12;
	v->gravity[0] = 0.5f;
	v->gravity[1] = -9.81f;
	v->gravity[2] = 0.25f;
	v->damping = 0.98f;
	v->wind[0] = 3;
	v->wind[1] = 0;
	v->wind[2] = -1;
	v->drag = 1.5f;
	v->lift = 0.25f;
	v->air_density = 1.2f;
	v->density = 0.3f;
	v->stretch = 1;
	v->shear = 0.75f;
	v->bend = 0.125f;
	v->thickness = 0.004f;
	v->long_range = -1;
	v->self_collision = 1;
	v->self_thickness = 0.003f;
	v->self_friction = 0.2f;
	v->model = DRAPE_MODEL_XPBD;
	v->stretch_k = 4070.5f;
	v->stretch_k_weft = 410.75f;
	v->shear_k = 26.5f;
	v->bend_k = 8.0625e-5f;
	v->compress_k = 12.5f;
	v->damping_rate = 0.24f;
	p->mask = PROTO_PARAMS_ALL;
}

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
	       a->damping_rate == b->damping_rate;
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

static proto_request base_request(proto_op op)
{
	proto_request r;
	proto_request_init(&r, op);
	r.id = 0x1122334455667788ull;
	r.has_client = true;
	r.client = 42;
	if (proto_op_needs_session(op)) {
		r.has_session = true;
		r.session = 7;
	}
	if (proto_op_needs_token(op)) {
		r.has_token = true;
		memcpy(r.token, token16, 16);
	}
	return r;
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
	fill_params(&r.u.create.params);
	r.u.create.name = "shirt-take-3";
	CHECK_OK(request_roundtrip(&r, &d, &err));
	const proto_create_req *c = &d.u.create;
	CHECK(c->mesh.vertex_count == 9 && c->mesh.triangle_count == 8);
	CHECK(memcmp(c->mesh.positions, sheet_pos, sizeof sheet_pos) == 0);
	CHECK(memcmp(c->mesh.triangles, sheet_tri, sizeof sheet_tri) == 0);
	CHECK(c->inv_mass != NULL && memcmp(c->inv_mass, inv_mass, sizeof inv_mass) == 0);
	CHECK(c->pin_count == 2 && c->pins[0] == 0 && c->pins[1] == 2);
	CHECK(c->uvs != NULL && c->uvs != uvs && memcmp(c->uvs, uvs, sizeof uvs) == 0);
	CHECK(c->params.mask == PROTO_PARAMS_ALL);
	CHECK(params_equal(&c->params.values, &r.u.create.params.values));
	CHECK(c->name != NULL && strcmp(c->name, "shirt-take-3") == 0);
	/* Decoded arrays are copies, never the caller's or the wire buffer's. */
	CHECK(c->mesh.positions != sheet_pos);
	proto_request_free(&d);

	/* Optional fields absent: NULL pointers and an empty mask. */
	r.u.create.inv_mass = NULL;
	r.u.create.uvs = NULL;
	r.u.create.pins = NULL;
	r.u.create.pin_count = 0;
	r.u.create.params.mask = 0;
	r.u.create.name = NULL;
	CHECK_OK(request_roundtrip(&r, &d, &err));
	CHECK(d.u.create.inv_mass == NULL && d.u.create.pins == NULL && d.u.create.pin_count == 0);
	CHECK(d.u.create.uvs == NULL);
	CHECK(d.u.create.params.mask == 0 && d.u.create.name == NULL);
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
	r.u.create.topology = (drape_sim_topology){ 9, 8, 16, 8, 8, 1, 2, 3, 4, 3, 10, 7 };
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
		{ 1, "a", PROTO_STATE_IDLE, 0, 9 },
		{ 2, NULL, PROTO_STATE_RUNNING, 5, 4096 },
		{ 3, "c", PROTO_STATE_DONE, 48, 100 },
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

/* ---- proto_check -------------------------------------------------------------------- */

static void test_check_valid_and_truncated(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_SESSION_CREATE);
	r.u.create.mesh = (proto_mesh){ sheet_pos, 9, sheet_tri, 8 };
	fill_params(&r.u.create.params);
	proto_buf b = { 0 };
	CHECK_OK(proto_request_encode(&r, &b, &err));
	CHECK_OK(proto_check(b.data, b.len, 0, &err));
	/* Every proper prefix is truncated. */
	for (size_t n = 0; n < b.len; n++) {
		drape_err rc = proto_check(b.data, n, 0, &err);
		CHECKF(rc == DRAPE_ETRUNCATED, "prefix of %zu/%zu bytes gave %s", n, b.len,
		       drape_err_name(rc));
	}
	/* And the decoder says the same. */
	proto_request d;
	CHECK(proto_request_decode(b.data, b.len - 1, 0, &d, NULL, &err) == DRAPE_ETRUNCATED);
	proto_buf_free(&b);

	/* Every scalar type msgpack has is accepted in a container. */
	static const uint8_t all[] = {
		0xdc, 0x00, 18, /* array16 of 18 */
		0x01, 0xff, 0xc0, 0xc2, 0xc3,
		0xcc, 1, 0xcd, 0, 1, 0xce, 0, 0, 0, 1, 0xcf, 0, 0, 0, 0, 0, 0, 0, 1,
		0xd0, 0xff, 0xca, 0, 0, 0, 0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0,
		0xa2, 'h', 'i', 0xc4, 2, 1, 2, 0xd4, 1, 2, 0xc7, 1, 5, 9,
		0x80, 0x90,
	};
	CHECK_OK(proto_check(all, sizeof all, 0, &err));
}

static void test_check_huge_claims(void)
{
	drape_error err;
	/* A map and an array claiming 2^32 - 1 elements in five bytes. */
	static const uint8_t map32[] = { 0xdf, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t arr32[] = { 0xdd, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t str32[] = { 0xdb, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t bin32[] = { 0xc6, 0x7f, 0xff, 0xff, 0xff };
	CHECK(proto_check(map32, 5, 0, &err) == DRAPE_ETRUNCATED);
	CHECK(strstr(err.message, "4294967295") != NULL);
	CHECK(proto_check(arr32, 5, 0, &err) == DRAPE_ETRUNCATED);
	CHECK(proto_check(str32, 5, 0, &err) == DRAPE_ETRUNCATED);
	CHECK(proto_check(bin32, 5, 0, &err) == DRAPE_ETRUNCATED);
	/* The decoders refuse it before msgpack-c reserves anything. */
	proto_request d;
	proto_reply rd;
	CHECK(proto_request_decode(map32, 5, 0, &d, NULL, &err) == DRAPE_ETRUNCATED);
	CHECK(proto_reply_decode(arr32, 5, 0, PROTO_OP_HELLO, &rd, &err) == DRAPE_ETRUNCATED);

	/* A nested claim: a map of one entry whose value claims 65535 elements. */
	static const uint8_t nested[] = { 0x81, 0xa1, 'x', 0xdc, 0xff, 0xff, 0xc0, 0xc0 };
	CHECK(proto_check(nested, sizeof nested, 0, &err) == DRAPE_ETRUNCATED);
}

static void test_check_too_deep(void)
{
	drape_error err;
	uint8_t deep[1001];
	memset(deep, 0x91, 1000); /* 1000 nested one-element arrays */
	deep[1000] = 0xc0;
	CHECK(proto_check(deep, sizeof deep, 0, &err) == DRAPE_ETOODEEP);
	proto_request d;
	CHECK(proto_request_decode(deep, sizeof deep, 0, &d, NULL, &err) == DRAPE_ETOODEEP);

	/* Exactly PROTO_MAX_DEPTH levels pass, one more does not. */
	uint8_t ok[PROTO_MAX_DEPTH + 1];
	memset(ok, 0x91, PROTO_MAX_DEPTH);
	ok[PROTO_MAX_DEPTH] = 0xc0;
	CHECK_OK(proto_check(ok, sizeof ok, 0, &err));
	uint8_t over[PROTO_MAX_DEPTH + 2];
	memset(over, 0x91, PROTO_MAX_DEPTH + 1);
	over[PROTO_MAX_DEPTH + 1] = 0xc0;
	CHECK(proto_check(over, sizeof over, 0, &err) == DRAPE_ETOODEEP);
	/* Maps count as levels too. */
	uint8_t maps[2 * (PROTO_MAX_DEPTH + 1) + 1];
	for (int i = 0; i <= PROTO_MAX_DEPTH; i++) {
		maps[2 * i] = 0x81;
		maps[2 * i + 1] = 0x00; /* integer key */
	}
	maps[sizeof maps - 1] = 0xc0;
	CHECK(proto_check(maps, sizeof maps, 0, &err) == DRAPE_ETOODEEP);
}

static void test_check_too_large(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_SESSION_LIST);
	proto_buf b = { 0 };
	CHECK_OK(proto_request_encode(&r, &b, &err));
	CHECK_OK(proto_check(b.data, b.len, b.len, &err));
	CHECK(proto_check(b.data, b.len, b.len - 1, &err) == DRAPE_ETOOLARGE);
	proto_request d;
	CHECK(proto_request_decode(b.data, b.len, 16, &d, NULL, &err) == DRAPE_ETOOLARGE);
	CHECK(strstr(err.message, "limit") != NULL);
	proto_buf_free(&b);

	/* More objects than PROTO_MAX_OBJECTS in an otherwise small message. */
	const size_t n = (size_t)PROTO_MAX_OBJECTS + 10;
	uint8_t *many = malloc(n + 5);
	CHECK(many != NULL);
	many[0] = 0xdd;
	many[1] = (uint8_t)(n >> 24);
	many[2] = (uint8_t)(n >> 16);
	many[3] = (uint8_t)(n >> 8);
	many[4] = (uint8_t)n;
	memset(many + 5, 0xc0, n);
	drape_err rc = proto_check(many, n + 5, 0, &err);
	free(many);
	CHECK(rc == DRAPE_ETOOLARGE);
}

static void test_check_garbage(void)
{
	drape_error err;
	static const uint8_t c1[] = { 0xc1 };
	static const uint8_t c1_inside[] = { 0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0xc1 };
	static const uint8_t trailing[] = { 0x80, 0x00 };
	CHECK(proto_check(c1, 1, 0, &err) == DRAPE_EPROTO);
	CHECK(strstr(err.message, "0xc1") != NULL);
	CHECK(proto_check(c1_inside, sizeof c1_inside, 0, &err) == DRAPE_EPROTO);
	CHECK(proto_check(trailing, sizeof trailing, 0, &err) == DRAPE_EPROTO);
	CHECK(proto_check(NULL, 0, 0, &err) == DRAPE_ETRUNCATED);

	/* A valid msgpack value that is not a map is a protocol error. */
	static const uint8_t arr[] = { 0x91, 0x01 };
	proto_request d;
	CHECK(proto_request_decode(arr, sizeof arr, 0, &d, NULL, &err) == DRAPE_EPROTO);
	CHECK(strstr(err.message, "map") != NULL);
}

/* ---- Malformed requests ------------------------------------------------------------- */

/* A tiny msgpack writer for hand-made messages. */
typedef struct tb {
	msgpack_sbuffer sb;
	msgpack_packer pk;
} tb;

static void tb_init(tb *t, uint32_t entries)
{
	msgpack_sbuffer_init(&t->sb);
	msgpack_packer_init(&t->pk, &t->sb, msgpack_sbuffer_write);
	msgpack_pack_map(&t->pk, entries);
}

static void tb_key(tb *t, const char *k)
{
	msgpack_pack_str(&t->pk, strlen(k));
	msgpack_pack_str_body(&t->pk, k, strlen(k));
}

static void tb_str(tb *t, const char *k, const char *v)
{
	tb_key(t, k);
	msgpack_pack_str(&t->pk, strlen(v));
	msgpack_pack_str_body(&t->pk, v, strlen(v));
}

static void tb_u(tb *t, const char *k, uint64_t v)
{
	tb_key(t, k);
	msgpack_pack_uint64(&t->pk, v);
}

static void tb_bin(tb *t, const char *k, const void *p, size_t n)
{
	tb_key(t, k);
	msgpack_pack_bin(&t->pk, n);
	msgpack_pack_bin_body(&t->pk, p, n);
}

/* Starts a request map with v, id and op (3 of its entries). */
static void tb_request(tb *t, uint32_t entries, const char *op)
{
	tb_init(t, entries);
	tb_u(t, "v", 1);
	tb_u(t, "id", 5);
	tb_str(t, "op", op);
}

/* Decodes t's bytes, expects code and a message containing field, and
 * checks the output struct was left untouched. Frees t. */
static int expect_request_error(tb *t, drape_err code, const char *field, char *why, size_t wn)
{
	drape_error err;
	proto_request d;
	memset(&d, 0xab, sizeof d);
	proto_header head;
	drape_err rc = proto_request_decode(t->sb.data, t->sb.size, 0, &d, &head, &err);
	msgpack_sbuffer_destroy(&t->sb);
	const unsigned char *bytes = (const unsigned char *)&d;
	int untouched = 1;
	for (size_t i = 0; i < sizeof d; i++)
		untouched &= bytes[i] == 0xab;
	snprintf(why, wn, "got %s \"%s\", want %s naming \"%s\"%s", drape_err_name(rc),
		 rc == DRAPE_OK ? "" : err.message, drape_err_name(code), field,
		 untouched ? "" : " (output touched)");
	if (rc == DRAPE_OK)
		proto_request_free(&d);
	return rc == code && strstr(err.message, field) != NULL && untouched && head.has_id &&
	       head.id == 5;
}

#define EXPECT_ERR(t, code, field)                                       \
	do {                                                             \
		char why_[400];                                          \
		int ok_ = expect_request_error(t, code, field, why_, sizeof why_); \
		CHECKF(ok_, "%s", why_);                                  \
	} while (0)

static void test_decode_missing_fields(void)
{
	tb t;
	/* create without triangles */
	tb_request(&t, 4, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	EXPECT_ERR(&t, DRAPE_EPROTO, "triangles");

	/* run without frames */
	tb_request(&t, 5, "session.run");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	EXPECT_ERR(&t, DRAPE_EPROTO, "frames");

	/* a session op without session */
	tb_request(&t, 4, "session.run");
	tb_u(&t, "frames", 3);
	EXPECT_ERR(&t, DRAPE_EPROTO, "session");

	/* no op */
	tb_init(&t, 2);
	tb_u(&t, "v", 1);
	tb_u(&t, "id", 5);
	EXPECT_ERR(&t, DRAPE_EPROTO, "op");

	/* collider.add sphere without radius */
	tb_request(&t, 7, "collider.add");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_str(&t, "shape", "sphere");
	tb_key(&t, "center");
	msgpack_pack_array(&t.pk, 3);
	for (int i = 0; i < 3; i++)
		msgpack_pack_float(&t.pk, 0);
	EXPECT_ERR(&t, DRAPE_EPROTO, "radius");

	/* nil counts as absent for a required field */
	tb_request(&t, 6, "session.run");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_key(&t, "frames");
	msgpack_pack_nil(&t.pk);
	EXPECT_ERR(&t, DRAPE_EPROTO, "frames");
}

static void test_decode_wrong_types(void)
{
	tb t;
	tb_request(&t, 5, "session.run");
	tb_u(&t, "session", 1);
	tb_str(&t, "frames", "ten");
	EXPECT_ERR(&t, DRAPE_EPROTO, "frames");

	/* positions as an array of numbers instead of a bin */
	tb_request(&t, 5, "session.create");
	tb_key(&t, "positions");
	msgpack_pack_array(&t.pk, 3);
	for (int i = 0; i < 3; i++)
		msgpack_pack_float(&t.pk, 1);
	tb_bin(&t, "triangles", sheet_tri, 12);
	EXPECT_ERR(&t, DRAPE_EPROTO, "positions");

	/* a parameter of the wrong type names its full path */
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_key(&t, "params");
	msgpack_pack_map(&t.pk, 1);
	tb_str(&t, "substeps", "four");
	EXPECT_ERR(&t, DRAPE_EPROTO, "params.substeps");

	/* session id negative */
	tb_request(&t, 4, "session.status");
	tb_key(&t, "session");
	msgpack_pack_int64(&t.pk, -3);
	EXPECT_ERR(&t, DRAPE_EINVAL, "session");

	/* token of the wrong length */
	tb_request(&t, 5, "session.delete");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 15);
	EXPECT_ERR(&t, DRAPE_EINVAL, "token");

	/* gravity with two components */
	tb_request(&t, 6, "session.update");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_key(&t, "params");
	msgpack_pack_map(&t.pk, 1);
	tb_key(&t, "gravity");
	msgpack_pack_array(&t.pk, 2);
	msgpack_pack_float(&t.pk, 0);
	msgpack_pack_float(&t.pk, -9.81f);
	EXPECT_ERR(&t, DRAPE_EINVAL, "params.gravity");

	/* an integer key in the top-level map */
	tb_request(&t, 4, "session.list");
	msgpack_pack_int(&t.pk, 1);
	msgpack_pack_int(&t.pk, 2);
	EXPECT_ERR(&t, DRAPE_EPROTO, "key");

	/* a duplicated key */
	tb_request(&t, 5, "session.status");
	tb_u(&t, "session", 1);
	tb_u(&t, "session", 2);
	EXPECT_ERR(&t, DRAPE_EPROTO, "session");
}

static void test_decode_bad_bulk(void)
{
	tb t;
	float bad[27];
	memcpy(bad, sheet_pos, sizeof bad);

	/* bin length not a multiple of 4 */
	tb_request(&t, 5, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos - 2);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	EXPECT_ERR(&t, DRAPE_EPROTO, "positions");

	/* float count not a multiple of 3 */
	tb_request(&t, 5, "session.create");
	tb_bin(&t, "positions", sheet_pos, 4 * 26);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	EXPECT_ERR(&t, DRAPE_EINVAL, "positions");

	/* NaN and infinity, named with their vertex and component */
	bad[5] = NAN;
	tb_request(&t, 5, "session.create");
	tb_bin(&t, "positions", bad, sizeof bad);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "positions[1][2]");
	bad[5] = 0;
	bad[24] = INFINITY;
	tb_request(&t, 5, "session.create");
	tb_bin(&t, "positions", bad, sizeof bad);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "positions[8][0]");

	/* triangle index out of range */
	uint32_t tri[24];
	memcpy(tri, sheet_tri, sizeof tri);
	tri[16] = 9; /* triangles[5][1] */
	tb_request(&t, 5, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", tri, sizeof tri);
	EXPECT_ERR(&t, DRAPE_ERANGE, "triangles[5][1]");

	/* pin index out of range */
	uint32_t pins[2] = { 0, 100 };
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "pins", pins, sizeof pins);
	EXPECT_ERR(&t, DRAPE_ERANGE, "pins[1]");

	/* inv_mass of the wrong count, then negative */
	float im[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "inv_mass", im, 8 * 4);
	EXPECT_ERR(&t, DRAPE_EINVAL, "inv_mass");
	im[4] = -1;
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "inv_mass", im, sizeof im);
	EXPECT_ERR(&t, DRAPE_EINVAL, "inv_mass[4]");

	/* uvs: the wrong count (one vertex short), an odd float count, the
	 * wrong type, and a non-finite coordinate named with its vertex */
	float uv[18] = { 0 };
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "uvs", uv, 16 * 4);
	EXPECT_ERR(&t, DRAPE_EINVAL, "uvs");
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "uvs", uv, 17 * 4);
	EXPECT_ERR(&t, DRAPE_EINVAL, "uvs");
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_str(&t, "uvs", "0 0 1 1");
	EXPECT_ERR(&t, DRAPE_EPROTO, "uvs");
	uv[13] = NAN;
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "uvs", uv, sizeof uv);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "uvs[6][1]");

	/* material parameters: a string for the model, infinity for a
	 * stiffness */
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_key(&t, "params");
	msgpack_pack_map(&t.pk, 1);
	tb_str(&t, "model", "xpbd");
	EXPECT_ERR(&t, DRAPE_EPROTO, "params.model");
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_key(&t, "params");
	msgpack_pack_map(&t.pk, 1);
	tb_key(&t, "bend_k");
	msgpack_pack_double(&t.pk, INFINITY);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "params.bend_k");

	/* empty mesh */
	tb_request(&t, 5, "preflight");
	tb_bin(&t, "positions", sheet_pos, 0);
	tb_bin(&t, "triangles", sheet_tri, 0);
	EXPECT_ERR(&t, DRAPE_EINVAL, "positions");

	/* NaN in a parameter, as a msgpack float */
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_key(&t, "params");
	msgpack_pack_map(&t.pk, 1);
	tb_key(&t, "damping");
	msgpack_pack_double(&t.pk, NAN);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "params.damping");

	/* a collider mesh whose triangles point past its vertices */
	tb_request(&t, 8, "collider.add");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_str(&t, "shape", "mesh");
	tb_bin(&t, "vertices", sheet_pos, 12 * 3);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	EXPECT_ERR(&t, DRAPE_ERANGE, "triangles[");

	/* keyframes not a multiple of 7 floats */
	tb_request(&t, 7, "collider.transform");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "index", 0);
	tb_bin(&t, "keyframes", sheet_pos, 4 * 8);
	EXPECT_ERR(&t, DRAPE_EINVAL, "keyframes");
}

static void test_decode_bad_values(void)
{
	tb t;
	/* other protocol version */
	tb_init(&t, 3);
	tb_u(&t, "v", 2);
	tb_u(&t, "id", 5);
	tb_str(&t, "op", "no.such.op.in.v2");
	EXPECT_ERR(&t, DRAPE_EVERSION, "v");

	tb_request(&t, 3, "session.explode");
	EXPECT_ERR(&t, DRAPE_EPROTO, "session.explode");

	tb_request(&t, 7, "collider.add");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_str(&t, "shape", "cone");
	tb_u(&t, "radius", 1);
	EXPECT_ERR(&t, DRAPE_EINVAL, "shape");

	tb_request(&t, 6, "frames.get");
	tb_u(&t, "session", 1);
	tb_u(&t, "first", 0);
	tb_u(&t, "count", 5);
	EXPECT_ERR(&t, DRAPE_EINVAL, "first");

	tb_request(&t, 6, "session.run");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "frames", 1ull << 32);
	EXPECT_ERR(&t, DRAPE_EINVAL, "frames");

	tb_request(&t, 6, "preflight");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_u(&t, "max_pairs", PROTO_MAX_PREFLIGHT_PAIRS + 1);
	EXPECT_ERR(&t, DRAPE_EINVAL, "max_pairs");

	char name[PROTO_MAX_NAME + 2];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_str(&t, "name", name);
	EXPECT_ERR(&t, DRAPE_EINVAL, "name");

	/* A value too large for float32 is as unusable as infinity. */
	tb_request(&t, 6, "collider.add");
	tb_u(&t, "session", 1);
	tb_str(&t, "shape", "sphere");
	tb_key(&t, "center");
	msgpack_pack_array(&t.pk, 3);
	msgpack_pack_double(&t.pk, 0);
	msgpack_pack_double(&t.pk, 1e300);
	msgpack_pack_double(&t.pk, 0);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "center[1]");
}

static void test_decode_unknown_keys_ignored_and_peek(void)
{
	drape_error err;
	tb t;
	proto_request d;
	tb_request(&t, 6, "session.run");
	tb_u(&t, "session", 3);
	tb_u(&t, "frames", 24);
	tb_str(&t, "future_field", "ignored by a v1 peer");
	CHECK_OK(proto_request_decode(t.sb.data, t.sb.size, 0, &d, NULL, &err));
	CHECK(d.u.run.frames == 24 && d.session == 3);
	proto_request_free(&d);

	proto_header h;
	CHECK_OK(proto_request_peek(t.sb.data, t.sb.size, 0, &h, &err));
	CHECK(h.has_v && h.v == 1 && h.has_id && h.id == 5 && h.op == PROTO_OP_SESSION_RUN);
	msgpack_sbuffer_destroy(&t.sb);

	/* peek still gives the id of a request whose body is bad */
	tb_request(&t, 4, "session.run");
	tb_str(&t, "session", "x");
	CHECK_OK(proto_request_peek(t.sb.data, t.sb.size, 0, &h, &err));
	CHECK(h.has_id && h.id == 5 && h.op == PROTO_OP_SESSION_RUN);
	msgpack_sbuffer_destroy(&t.sb);
}

/* ---- Randomized robustness ---------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* Feeds buf to every decoder; each must return an error or a valid decode
 * (which is then freed). Returns how many decoded. */
static int feed_all(const uint8_t *buf, size_t len)
{
	drape_error err;
	int decoded = 0;
	proto_request rq;
	proto_header h;
	if (proto_request_decode(buf, len, 1u << 20, &rq, &h, &err) == DRAPE_OK) {
		decoded++;
		proto_request_free(&rq);
	}
	proto_request_peek(buf, len, 1u << 20, &h, &err);
	proto_reply rp;
	proto_op op = (proto_op)(1 + rnd() % (PROTO_OP_COUNT_ - 1));
	if (proto_reply_decode(buf, len, 1u << 20, op, &rp, &err) == DRAPE_OK) {
		decoded++;
		proto_reply_free(&rp);
	}
	proto_stream_msg sm;
	if (proto_stream_decode(buf, len, 1u << 20, &sm, &err) == DRAPE_OK) {
		decoded++;
		proto_stream_free(&sm);
	}
	return decoded;
}

static void test_random_bytes_never_crash(void)
{
	/* Bytes drawn mostly from msgpack's container and length headers so
	 * the walk gets deep into structure instead of failing at byte 0. */
	static const uint8_t interesting[] = { 0x80, 0x81, 0x8f, 0x90, 0x91, 0x9f, 0xa1, 0xa5,
					       0xc0, 0xc1, 0xc4, 0xc6, 0xca, 0xcb, 0xcf, 0xd3,
					       0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xff, 0x00,
					       0x01, 0x7f, 0xc7, 0xd8 };
	uint8_t buf[96];
	for (int iter = 0; iter < 5000; iter++) {
		size_t len = rnd() % sizeof buf;
		for (size_t i = 0; i < len; i++)
			buf[i] = (rnd() & 1) ? interesting[rnd() % sizeof interesting]
					      : (uint8_t)rnd();
		feed_all(buf, len);
	}
	CHECK(1);
}

static void test_mutated_messages_never_crash(void)
{
	drape_error err;
	proto_buf seeds[6];
	memset(seeds, 0, sizeof seeds);
	proto_request r = base_request(PROTO_OP_SESSION_CREATE);
	r.u.create.mesh = (proto_mesh){ sheet_pos, 9, sheet_tri, 8 };
	fill_params(&r.u.create.params);
	r.u.create.name = "seed";
	CHECK_OK(proto_request_encode(&r, &seeds[0], &err));
	r = base_request(PROTO_OP_COLLIDER_ADD);
	r.u.collider_add.desc.shape = DRAPE_SHAPE_MESH;
	r.u.collider_add.desc.vertices = sheet_pos;
	r.u.collider_add.desc.vertex_count = 9;
	r.u.collider_add.desc.triangles = sheet_tri;
	r.u.collider_add.desc.triangle_count = 8;
	r.u.collider_add.mask = PROTO_COLLIDER_ALL;
	CHECK_OK(proto_request_encode(&r, &seeds[1], &err));

	proto_reply rep;
	proto_frame fr[2] = { { 1, 9, sheet_pos, { 0 } }, { 2, 9, sheet_pos, { 0 } } };
	proto_reply_init(&rep, PROTO_OP_FRAMES_GET, 3);
	rep.u.frames_get.frames = fr;
	rep.u.frames_get.count = 2;
	CHECK_OK(proto_reply_encode(&rep, &seeds[2], &err));
	static const char *const urls[] = { "ipc:///tmp/x" };
	proto_reply_init(&rep, PROTO_OP_HELLO, 4);
	rep.u.hello.server = "draped";
	rep.u.hello.stream_urls = urls;
	rep.u.hello.stream_url_count = 1;
	CHECK_OK(proto_reply_encode(&rep, &seeds[3], &err));
	proto_reply_init(&rep, PROTO_OP_SESSION_STATUS, 5);
	rep.u.status.has_stats = true;
	rep.u.status.has_error = true;
	rep.u.status.error.code = DRAPE_EINVAL;
	CHECK_OK(proto_reply_encode(&rep, &seeds[4], &err));
	proto_stream_msg sm;
	memset(&sm, 0, sizeof sm);
	sm.kind = PROTO_STREAM_FRAME;
	sm.session = 1;
	sm.frame = fr[0];
	CHECK_OK(proto_stream_encode(&sm, &seeds[5], &err));

	/* Unmutated seeds decode; that makes the mutations meaningful. */
	int seeds_ok = 0;
	for (int s = 0; s < 6; s++) {
		proto_request rq;
		proto_reply rp;
		proto_stream_msg m;
		if (s < 2 && proto_request_decode(seeds[s].data, seeds[s].len, 0, &rq, NULL, &err) == 0) {
			seeds_ok++;
			proto_request_free(&rq);
		}
		proto_op ops[6] = { 0, 0, PROTO_OP_FRAMES_GET, PROTO_OP_HELLO, PROTO_OP_SESSION_STATUS, 0 };
		if (s >= 2 && s < 5 && proto_reply_decode(seeds[s].data, seeds[s].len, 0, ops[s], &rp, &err) == 0) {
			seeds_ok++;
			proto_reply_free(&rp);
		}
		if (s == 5 && proto_stream_decode(seeds[s].data, seeds[s].len, 0, &m, &err) == 0) {
			seeds_ok++;
			proto_stream_free(&m);
		}
	}
	CHECK(seeds_ok == 6);

	uint8_t *buf = malloc(4096);
	CHECK(buf != NULL);
	for (int iter = 0; iter < 6000; iter++) {
		const proto_buf *s = &seeds[iter % 6];
		size_t len = s->len < 4000 ? s->len : 4000;
		memcpy(buf, s->data, len);
		int muts = 1 + (int)(rnd() % 4);
		for (int k = 0; k < muts && len > 0; k++) {
			size_t at = rnd() % len;
			switch (rnd() % 5) {
			case 0: /* flip a bit */
				buf[at] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 1: /* a random byte */
				buf[at] = (uint8_t)rnd();
				break;
			case 2: /* truncate */
				len = at;
				break;
			case 3: /* a huge length or count */
				buf[at] = 0xff;
				break;
			default: /* duplicate a slice (may claim counts that no longer fit) */
				if (len + 8 < 4096) {
					memmove(buf + at + 8, buf + at, len - at);
					len += 8;
				}
				break;
			}
		}
		feed_all(buf, len);
	}
	free(buf);
	for (int s = 0; s < 6; s++)
		proto_buf_free(&seeds[s]);
}

/* ---- Deforming colliders: collider.add with frames, collider.frames ------------ */

/* Two poses of the 9-vertex sheet: pose p moves every vertex by p * 0.25 in y. */
static void anim_poses(float *out, uint32_t poses)
{
	for (uint32_t p = 0; p < poses; p++)
		for (uint32_t i = 0; i < 27; i++)
			out[p * 27 + i] = sheet_pos[i] + (i % 3 == 1 ? 0.25f * (float)p : 0.0f);
}

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

/* A mesh collider.add of the sheet with the given frames bytes (and
 * frame_start when fs is not NULL). */
static void tb_anim_add(tb *t, const char *shape, const void *frames, size_t n, const float *fs)
{
	tb_request(t, 9 + (fs != NULL), "collider.add");
	tb_u(t, "session", 1);
	tb_bin(t, "token", token16, 16);
	tb_str(t, "shape", shape);
	tb_bin(t, "vertices", sheet_pos, sizeof sheet_pos);
	tb_bin(t, "triangles", sheet_tri, sizeof sheet_tri);
	if (frames != NULL)
		tb_bin(t, "frames", frames, n);
	else
		tb_u(t, "frames", 3);
	if (fs != NULL) {
		tb_key(t, "frame_start");
		msgpack_pack_float(&t->pk, *fs);
	}
}

static void test_decode_bad_anim(void)
{
	tb t;
	float poses[2 * 27];
	anim_poses(poses, 2);
	/* Half a pose more than two: the frames end inside a pose. */
	tb_anim_add(&t, "mesh", poses, 27 * 4 + 12, NULL);
	EXPECT_ERR(&t, DRAPE_EINVAL, "frames");
	/* Not a bin. */
	tb_anim_add(&t, "mesh", NULL, 0, NULL);
	EXPECT_ERR(&t, DRAPE_EPROTO, "frames");
	/* Empty. */
	tb_anim_add(&t, "mesh", poses, 0, NULL);
	EXPECT_ERR(&t, DRAPE_EINVAL, "frames");
	/* A NaN in pose 1, vertex 2's y: component 7 of pose 1. */
	poses[27 + 7] = NAN;
	tb_anim_add(&t, "mesh", poses, sizeof poses, NULL);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "frames[1][7]");
	poses[27 + 7] = 0;
	/* A non-finite frame_start. */
	float inf = INFINITY;
	tb_anim_add(&t, "mesh", poses, sizeof poses, &inf);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "frame_start");
	/* frame_start without frames. */
	tb_request(&t, 9, "collider.add");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_str(&t, "shape", "mesh");
	tb_bin(&t, "vertices", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_u(&t, "frame_start", 3);
	EXPECT_ERR(&t, DRAPE_EINVAL, "frame_start");

	/* collider.frames: missing index, missing frames, empty, not triples,
	 * NaN. */
	tb_request(&t, 6, "collider.frames");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_bin(&t, "frames", poses, sizeof poses);
	EXPECT_ERR(&t, DRAPE_EPROTO, "index");
	tb_request(&t, 6, "collider.frames");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "index", 0);
	EXPECT_ERR(&t, DRAPE_EPROTO, "frames");
	tb_request(&t, 7, "collider.frames");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "index", 0);
	tb_bin(&t, "frames", poses, 0);
	EXPECT_ERR(&t, DRAPE_EINVAL, "frames");
	tb_request(&t, 7, "collider.frames");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "index", 0);
	tb_bin(&t, "frames", poses, 8);
	EXPECT_ERR(&t, DRAPE_EINVAL, "frames");
	poses[40] = NAN; /* point 13, y */
	tb_request(&t, 7, "collider.frames");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "index", 0);
	tb_bin(&t, "frames", poses, sizeof poses);
	EXPECT_ERR(&t, DRAPE_ENONFINITE, "frames[13][1]");
	/* Without a session, and with an index that does not fit 32 bits. */
	tb_request(&t, 5, "collider.frames");
	tb_u(&t, "index", 0);
	tb_bin(&t, "frames", sheet_pos, sizeof sheet_pos);
	EXPECT_ERR(&t, DRAPE_EPROTO, "session");
	tb_request(&t, 7, "collider.frames");
	tb_u(&t, "session", 1);
	tb_bin(&t, "token", token16, 16);
	tb_u(&t, "index", 1ull << 33);
	tb_bin(&t, "frames", sheet_pos, sizeof sheet_pos);
	EXPECT_ERR(&t, DRAPE_EINVAL, "index");
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
	CHECK_TEST(test_check_valid_and_truncated),
	CHECK_TEST(test_check_huge_claims),
	CHECK_TEST(test_check_too_deep),
	CHECK_TEST(test_check_too_large),
	CHECK_TEST(test_check_garbage),
	CHECK_TEST(test_decode_missing_fields),
	CHECK_TEST(test_decode_wrong_types),
	CHECK_TEST(test_decode_bad_bulk),
	CHECK_TEST(test_decode_bad_values),
	CHECK_TEST(test_decode_unknown_keys_ignored_and_peek),
	CHECK_TEST(test_random_bytes_never_crash),
	CHECK_TEST(test_mutated_messages_never_crash),
	CHECK_TEST(test_request_roundtrip_anim),
	CHECK_TEST(test_decode_bad_anim),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
