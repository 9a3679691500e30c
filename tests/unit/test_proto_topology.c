/*
 * The session.topology op in the codec: the request needs a session, the
 * reply round-trips bit for bit, and a hostile reply (indices out of range,
 * the wrong number of uvs, no triangles, a bad fps, a missing field) is
 * refused with an error naming the field, before a client sees it.
 */
#include <stdint.h>

#include "check.h"
#include "proto/proto.h"

static const float pos[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0.5f};
static const float uvs[8] = {0, 0, 1, 0, 1, 1, 0, 1};
static const uint32_t tri[6] = {0, 1, 2, 0, 2, 3};

static void reply_make(proto_reply *r)
{
	proto_reply_init(r, PROTO_OP_SESSION_TOPOLOGY, 5);
	r->u.topology.vertex_count = 4;
	r->u.topology.positions = pos;
	r->u.topology.triangle_count = 2;
	r->u.topology.triangles = tri;
	r->u.topology.uvs = uvs;
	r->u.topology.fps = 30.0f;
}

/* Encodes r and decodes it as a session.topology reply. */
static drape_err through(const proto_reply *r, proto_reply *out, drape_error *err)
{
	proto_buf b = {0};
	drape_err rc = proto_reply_encode(r, &b, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_TOPOLOGY, out, err);
	proto_buf_free(&b);
	return rc;
}

static void test_names(void)
{
	CHECK(strcmp(proto_op_name(PROTO_OP_SESSION_TOPOLOGY), "session.topology") == 0);
	CHECK(proto_op_from_name("session.topology", 16) == PROTO_OP_SESSION_TOPOLOGY);
	CHECK(proto_op_needs_session(PROTO_OP_SESSION_TOPOLOGY));
	/* The mesh is the owner's, like its frames. */
	CHECK(proto_op_needs_token(PROTO_OP_SESSION_TOPOLOGY));
}

static void test_request(void)
{
	proto_request q, d;
	proto_request_init(&q, PROTO_OP_SESSION_TOPOLOGY);
	q.id = 3;
	q.has_session = true;
	q.session = 12;
	q.has_token = true;
	memset(q.token, 7, sizeof q.token);
	proto_buf b = {0};
	drape_error err;
	CHECK_OK(proto_request_encode(&q, &b, &err));
	drape_err rc = proto_request_decode(b.data, b.len, 0, &d, NULL, &err);
	proto_buf_free(&b);
	CHECK_OK(rc);
	CHECK(d.op == PROTO_OP_SESSION_TOPOLOGY && d.has_session && d.session == 12 && d.has_token);
	proto_request_free(&d);
	/* Without a session it is refused, naming the field. */
	q.has_session = false;
	rc = proto_request_encode(&q, &b, &err);
	if (rc == DRAPE_OK) {
		rc = proto_request_decode(b.data, b.len, 0, &d, NULL, &err);
		proto_buf_free(&b);
		if (rc == DRAPE_OK)
			proto_request_free(&d);
	}
	CHECK(rc != DRAPE_OK);
	CHECKF(strstr(err.message, "session") != NULL, "%s", err.message);
}

static void test_reply_roundtrip(void)
{
	proto_reply r, d;
	reply_make(&r);
	drape_error err;
	CHECK_OK(through(&r, &d, &err));
	const proto_topology_rep *t = &d.u.topology;
	int bad = t->vertex_count != 4 || t->triangle_count != 2 || t->fps != 30.0f ||
		  memcmp(t->positions, pos, sizeof pos) || memcmp(t->triangles, tri, sizeof tri) ||
		  t->uvs == NULL || memcmp(t->uvs, uvs, sizeof uvs);
	proto_reply_free(&d);
	CHECK(!bad);
	/* uvs are optional. */
	r.u.topology.uvs = NULL;
	CHECK_OK(through(&r, &d, &err));
	CHECK(d.u.topology.uvs == NULL && d.u.topology.objects == NULL &&
	      d.u.topology.object_count == 0);
	proto_reply_free(&d);
	/* The cloth objects of a session of several come back as created. */
	const proto_object obj[2] = {{"shirt", {0, 3, 1, 0xffffffffu}}, {"jacket", {3, 1, 2, 2}}};
	r.u.topology.objects = obj;
	r.u.topology.object_count = 2;
	CHECK_OK(through(&r, &d, &err));
	t = &d.u.topology;
	bad = t->object_count != 2 || strcmp(t->objects[0].name, "shirt") != 0 ||
	      strcmp(t->objects[1].name, "jacket") != 0 ||
	      memcmp(&t->objects[1].range, &obj[1].range, sizeof obj[1].range) != 0;
	proto_reply_free(&d);
	CHECK(!bad);
	/* Objects that leave a vertex out are refused naming the field. */
	const proto_object short_obj[1] = {{"shirt", {0, 3, 1, 1}}};
	r.u.topology.objects = short_obj;
	r.u.topology.object_count = 1;
	CHECK(through(&r, &d, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "objects: cover 3 of 4") != NULL, "%s", err.message);
}

static void test_reply_hostile(void)
{
	proto_reply r, d;
	drape_error err;
	static const uint32_t far[6] = {0, 1, 2, 0, 2, 4};
	reply_make(&r);
	r.u.topology.triangles = far;
	CHECK(through(&r, &d, &err) == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "triangles[1][2]") != NULL, "%s", err.message);

	reply_make(&r);
	r.u.topology.triangle_count = 0;
	CHECK(through(&r, &d, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "triangles") != NULL, "%s", err.message);

	reply_make(&r);
	r.u.topology.fps = 0.0f;
	CHECK(through(&r, &d, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "fps") != NULL, "%s", err.message);

	static const float nan_pos[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, NAN, 0};
	reply_make(&r);
	r.u.topology.positions = nan_pos;
	CHECK(through(&r, &d, &err) == DRAPE_ENONFINITE);
	CHECKF(strstr(err.message, "positions[3]") != NULL, "%s", err.message);

	reply_make(&r);
	r.u.topology.vertex_count = 0;
	r.u.topology.triangle_count = 0;
	r.u.topology.uvs = NULL;
	CHECK(through(&r, &d, &err) != DRAPE_OK);
}

/* A reply forged byte by byte: uvs of the wrong length, a missing
 * "triangles". */
static void test_reply_forged(void)
{
	/* {"v":1,"id":5,"op":"session.topology","ok":true,
	 *  "positions":bin(3 floats),"triangles":bin(3 u32),"uvs":bin(4 floats),"fps":30.0} */
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
		PUT(variant == 0 ? 0x88 : 0x87);
		STR("v");
		PUT(0x01);
		STR("id");
		PUT(0x05);
		STR("op");
		STR("session.topology");
		STR("ok");
		PUT(0xc3);
		STR("positions");
		PUT(0xc4, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3f);
		if (variant == 0) {
			STR("triangles");
			PUT(0xc4, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		}
		STR("uvs");
		PUT(0xc4, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		STR("fps");
		PUT(0xca, 0x41, 0xf0, 0, 0);
		proto_reply d;
		drape_error err;
		drape_err rc = proto_reply_decode(m, n, 0, PROTO_OP_SESSION_TOPOLOGY, &d, &err);
		if (rc == DRAPE_OK)
			proto_reply_free(&d);
		if (variant == 0) {
			/* One vertex, two uv pairs. */
			CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "uvs") != NULL, "%s: %s", drape_err_name(rc),
			       err.message);
		} else {
			CHECKF(rc == DRAPE_EPROTO && strstr(err.message, "triangles") != NULL, "%s: %s",
			       drape_err_name(rc), err.message);
		}
	}
#undef PUT
#undef STR
}

static const check_test tests[] = {
	CHECK_TEST(test_names),		   CHECK_TEST(test_request),	 CHECK_TEST(test_reply_roundtrip),
	CHECK_TEST(test_reply_hostile),	   CHECK_TEST(test_reply_forged),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
