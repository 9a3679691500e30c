/*
 * The session.colliders op in the codec: the request needs a session and
 * its token and carries frame (required) and mesh; the reply round-trips
 * every shape bit for bit; a hostile reply (a triangle index past the
 * vertex count, a pose of the wrong length, an unknown shape, a NaN in a
 * transform, a missing field) is refused naming the field, before a
 * client sees it.
 */
#include <stdint.h>

#include "check.h"
#include "proto/proto.h"

static const float verts[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
static const uint32_t tris[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
static const float pose[12] = {0, 1, 0, 1, 1, 0, 0, 2, 0, 0, 1, 1};
static proto_collider_view views[5];

static void reply_make(proto_reply *r)
{
	memset(views, 0, sizeof views);
	for (uint32_t i = 0; i < 5; i++) {
		views[i].index = i;
		views[i].rotation[0] = views[i].rotation[4] = views[i].rotation[8] = 1.0f;
	}
	views[0].shape = DRAPE_SHAPE_SPHERE;
	views[0].center[1] = 0.5f;
	views[0].radius = 0.25f;
	views[0].translate[0] = 0.125f;
	views[0].rotation[1] = 0.5f; /* any numbers: the codec carries, it does not judge */
	views[1].shape = DRAPE_SHAPE_BOX;
	views[1].center[2] = -1.0f;
	views[1].half_extents[0] = 1.0f, views[1].half_extents[1] = 0.1f, views[1].half_extents[2] = 2.0f;
	views[2].shape = DRAPE_SHAPE_CAPSULE;
	views[2].a[1] = 1.0f, views[2].b[1] = 2.0f, views[2].radius = 0.1f;
	views[3].shape = DRAPE_SHAPE_PLANE;
	views[3].point[1] = -2.0f, views[3].normal[1] = 2.0f;
	views[4].shape = DRAPE_SHAPE_MESH;
	views[4].vertex_count = 4, views[4].triangle_count = 4;
	views[4].vertices = verts, views[4].triangles = tris;
	views[4].frame_count = 3, views[4].frame_start = 2.0f;
	views[4].positions = pose;
	proto_reply_init(r, PROTO_OP_SESSION_COLLIDERS, 9);
	r->u.colliders.session = 4;
	r->u.colliders.frame = 7;
	r->u.colliders.colliders = views;
	r->u.colliders.count = 5;
}

static drape_err through(const proto_reply *r, proto_reply *out, drape_error *err)
{
	proto_buf b = {0};
	drape_err rc = proto_reply_encode(r, &b, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_COLLIDERS, out, err);
	proto_buf_free(&b);
	if (rc == DRAPE_OK && out->ok == false)
		rc = DRAPE_EINTERNAL;
	return rc;
}

static void test_names(void)
{
	CHECK(strcmp(proto_op_name(PROTO_OP_SESSION_COLLIDERS), "session.colliders") == 0);
	CHECK(proto_op_from_name("session.colliders", 17) == PROTO_OP_SESSION_COLLIDERS);
	CHECK(proto_op_needs_session(PROTO_OP_SESSION_COLLIDERS));
	/* Where a session's colliders are is its owner's, like its frames. */
	CHECK(proto_op_needs_token(PROTO_OP_SESSION_COLLIDERS));
}

static void test_request(void)
{
	proto_request q, d;
	proto_request_init(&q, PROTO_OP_SESSION_COLLIDERS);
	q.id = 3;
	q.has_session = true;
	q.session = 12;
	q.has_token = true;
	memset(q.token, 7, sizeof q.token);
	q.u.colliders.frame = 41;
	q.u.colliders.mesh = true;
	proto_buf b = {0};
	drape_error err;
	CHECK_OK(proto_request_encode(&q, &b, &err));
	drape_err rc = proto_request_decode(b.data, b.len, 0, &d, NULL, &err);
	proto_buf_free(&b);
	CHECK_OK(rc);
	CHECK(d.op == PROTO_OP_SESSION_COLLIDERS && d.session == 12 && d.u.colliders.frame == 41 && d.u.colliders.mesh);
	proto_request_free(&d);
	q.u.colliders.mesh = false;
	CHECK_OK(proto_request_encode(&q, &b, &err));
	rc = proto_request_decode(b.data, b.len, 0, &d, NULL, &err);
	proto_buf_free(&b);
	CHECK_OK(rc);
	CHECK(d.u.colliders.frame == 41 && !d.u.colliders.mesh);
	proto_request_free(&d);
}

static void test_reply_roundtrip(void)
{
	proto_reply r, d;
	drape_error err;
	reply_make(&r);
	CHECKF(through(&r, &d, &err) == DRAPE_OK, "%s", err.message);
	const proto_colliders_rep *c = &d.u.colliders;
	CHECK(c->session == 4 && c->frame == 7 && c->count == 5);
	for (uint32_t i = 0; i < 5; i++) {
		const proto_collider_view *a = &views[i], *b = &c->colliders[i];
		CHECK(a->index == b->index && a->shape == b->shape);
		CHECK(memcmp(a->rotation, b->rotation, sizeof a->rotation) == 0);
		CHECK(memcmp(a->translate, b->translate, sizeof a->translate) == 0);
	}
	CHECK(c->colliders[0].radius == 0.25f && c->colliders[0].center[1] == 0.5f);
	CHECK(c->colliders[1].half_extents[2] == 2.0f && c->colliders[1].center[2] == -1.0f);
	CHECK(c->colliders[2].b[1] == 2.0f && c->colliders[2].radius == 0.1f);
	CHECK(c->colliders[3].normal[1] == 2.0f && c->colliders[3].point[1] == -2.0f);
	const proto_collider_view *m = &c->colliders[4];
	CHECK(m->vertex_count == 4 && m->triangle_count == 4 && m->frame_count == 3 && m->frame_start == 2.0f);
	CHECK(memcmp(m->vertices, verts, sizeof verts) == 0 && memcmp(m->triangles, tris, sizeof tris) == 0);
	CHECK(memcmp(m->positions, pose, sizeof pose) == 0);
	proto_reply_free(&d);
	/* Without the mesh: counts and pose, no vertices or triangles. */
	reply_make(&r);
	views[4].vertices = NULL;
	views[4].triangles = NULL;
	CHECKF(through(&r, &d, &err) == DRAPE_OK, "%s", err.message);
	m = &d.u.colliders.colliders[4];
	CHECK(m->vertices == NULL && m->triangles == NULL && m->vertex_count == 4 && m->positions != NULL);
	proto_reply_free(&d);
	/* No colliders: an empty list. */
	reply_make(&r);
	r.u.colliders.count = 0;
	CHECKF(through(&r, &d, &err) == DRAPE_OK, "%s", err.message);
	CHECK(d.u.colliders.count == 0);
	proto_reply_free(&d);
}

static void test_reply_hostile(void)
{
	proto_reply r, d;
	drape_error err;
	static const uint32_t far[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 4};
	reply_make(&r);
	views[4].triangles = far;
	CHECK(through(&r, &d, &err) == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "colliders[4]") != NULL && strstr(err.message, "triangles[3][2]") != NULL, "%s",
	       err.message);

	static const float nan_rot[9] = {1, 0, 0, 0, NAN, 0, 0, 0, 1};
	reply_make(&r);
	memcpy(views[0].rotation, nan_rot, sizeof nan_rot);
	CHECK(through(&r, &d, &err) != DRAPE_OK);
	CHECKF(strstr(err.message, "colliders[0]") != NULL && strstr(err.message, "rotation") != NULL, "%s",
	       err.message);

	reply_make(&r);
	views[2].shape = (drape_shape)9;
	CHECK(through(&r, &d, &err) != DRAPE_OK);
	CHECKF(strstr(err.message, "shape") != NULL, "%s", err.message);
}

/* A reply forged byte by byte: a mesh whose pose has 1 point for its 2
 * vertices, and a sphere without its radius. */
static void test_reply_forged(void)
{
	unsigned char m[256];
	size_t n = 0;
#define PUT(...)                                                          \
	do {                                                              \
		const unsigned char x_[] = {__VA_ARGS__};                 \
		memcpy(m + n, x_, sizeof x_);                             \
		n += sizeof x_;                                           \
	} while (0)
#define STR(s)                                                            \
	do {                                                              \
		m[n++] = (unsigned char)(0xa0 | (sizeof(s) - 1));         \
		memcpy(m + n, s, sizeof(s) - 1);                          \
		n += sizeof(s) - 1;                                       \
	} while (0)
	for (int variant = 0; variant < 2; variant++) {
		n = 0;
		PUT(0x87);
		STR("v");
		PUT(0x01);
		STR("id");
		PUT(0x05);
		STR("op");
		m[n++] = 0xd9, m[n++] = 17;
		memcpy(m + n, "session.colliders", 17);
		n += 17;
		STR("ok");
		PUT(0xc3);
		STR("session");
		PUT(0x02);
		STR("frame");
		PUT(0x03);
		STR("colliders");
		PUT(0x91);
		if (variant == 0) {
			PUT(0x89);
			STR("index");
			PUT(0x00);
			STR("shape");
			STR("mesh");
			STR("vertex_count");
			PUT(0x02);
			STR("triangle_count");
			PUT(0x00);
			STR("frames");
			PUT(0x01);
			STR("frame_start");
			PUT(0x00);
			STR("positions");
			PUT(0xc4, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		} else {
			PUT(0x85);
			STR("index");
			PUT(0x00);
			STR("shape");
			STR("sphere");
			STR("center");
			PUT(0x93, 0, 0, 0);
		}
		STR("rotation");
		PUT(0x99, 1, 0, 0, 0, 1, 0, 0, 0, 1);
		STR("translate");
		PUT(0x93, 0, 0, 0);
		proto_reply d;
		drape_error err;
		drape_err rc = proto_reply_decode(m, n, 0, PROTO_OP_SESSION_COLLIDERS, &d, &err);
		if (rc == DRAPE_OK)
			proto_reply_free(&d);
		if (variant == 0)
			CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "positions") != NULL, "%s: %s",
			       drape_err_name(rc), err.message);
		else
			CHECKF(rc == DRAPE_EPROTO && strstr(err.message, "radius") != NULL, "%s: %s", drape_err_name(rc),
			       err.message);
	}
#undef PUT
#undef STR
}

static const check_test tests[] = {
	CHECK_TEST(test_names),	      CHECK_TEST(test_request), CHECK_TEST(test_reply_roundtrip),
	CHECK_TEST(test_reply_hostile), CHECK_TEST(test_reply_forged),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
