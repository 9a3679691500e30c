/*
 * frames.get's optional "mesh" (the browser view's way to the triangles):
 * the request flag travels and is type-checked, the reply carries the
 * triangles as a bin of uint32 and the decoder bounds every index by the
 * frames' vertex count, and a reply without them decodes as before.
 */
#include "proto/proto.h"

#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

static proto_request base_request(proto_op op)
{
	proto_request r;
	proto_request_init(&r, op);
	r.id = 77;
	r.has_session = true;
	r.session = 7;
	r.has_token = true;
	memset(r.token, 0xab, sizeof r.token);
	return r;
}

static void test_request_mesh_flag(void)
{
	drape_error err;
	proto_request r = base_request(PROTO_OP_FRAMES_GET), d;
	r.u.frames_get.first = 1;
	r.u.frames_get.count = 4;
	proto_buf b = {0};
	CHECK(proto_request_encode(&r, &b, &err) == DRAPE_OK);
	CHECK(proto_request_decode(b.data, b.len, 0, &d, NULL, &err) == DRAPE_OK);
	CHECK(!d.u.frames_get.mesh);
	proto_request_free(&d);
	proto_buf_free(&b);
	r.u.frames_get.mesh = true;
	CHECK(proto_request_encode(&r, &b, &err) == DRAPE_OK);
	CHECK(proto_request_decode(b.data, b.len, 0, &d, NULL, &err) == DRAPE_OK);
	CHECK(d.u.frames_get.mesh);
	proto_request_free(&d);
	proto_buf_free(&b);
}

/* A frames.get request with "mesh" of the wrong type is refused naming it. */
static void test_request_mesh_wrong_type(void)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 8);
	const char *keys[] = {"v", "id", "op", "session", "token", "first", "count", "mesh"};
	for (int i = 0; i < 8; i++) {
		msgpack_pack_str(&pk, strlen(keys[i]));
		msgpack_pack_str_body(&pk, keys[i], strlen(keys[i]));
		switch (i) {
		case 2:
			msgpack_pack_str(&pk, 10);
			msgpack_pack_str_body(&pk, "frames.get", 10);
			break;
		case 4: {
			uint8_t t[PROTO_TOKEN_SIZE] = {0};
			msgpack_pack_bin(&pk, sizeof t);
			msgpack_pack_bin_body(&pk, t, sizeof t);
			break;
		}
		case 7:
			msgpack_pack_str(&pk, 3);
			msgpack_pack_str_body(&pk, "yes", 3);
			break;
		default:
			msgpack_pack_uint32(&pk, 1);
		}
	}
	proto_request d;
	drape_error err;
	drape_err rc = proto_request_decode(sb.data, sb.size, 0, &d, NULL, &err);
	msgpack_sbuffer_destroy(&sb);
	CHECKF(rc != DRAPE_OK, "a string \"mesh\" was accepted");
	CHECKF(strstr(err.message, "mesh") != NULL, "%s", err.message);
}

static void test_reply_carries_triangles(void)
{
	drape_error err;
	float pos[4 * 3] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
	uint32_t tri[6] = {0, 1, 2, 0, 2, 3};
	proto_frame f = {0};
	f.index = 5;
	f.vertex_count = 4;
	f.positions = pos;
	proto_reply r, d;
	proto_reply_init(&r, PROTO_OP_FRAMES_GET, 9);
	r.u.frames_get.session = 3;
	r.u.frames_get.frames = &f;
	r.u.frames_get.count = 1;
	r.u.frames_get.frames_done = 5;
	r.u.frames_get.triangles = tri;
	r.u.frames_get.triangle_count = 2;
	proto_buf b = {0};
	CHECK(proto_reply_encode(&r, &b, &err) == DRAPE_OK);
	CHECK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_FRAMES_GET, &d, &err) == DRAPE_OK);
	CHECK(d.u.frames_get.triangle_count == 2 && d.u.frames_get.triangles != NULL);
	CHECK(memcmp(d.u.frames_get.triangles, tri, sizeof tri) == 0);
	proto_reply_free(&d);
	proto_buf_free(&b);

	/* An index beyond the frames' vertices is refused, naming the field. */
	tri[4] = 4;
	CHECK(proto_reply_encode(&r, &b, &err) == DRAPE_OK);
	CHECK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_FRAMES_GET, &d, &err) == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "triangles") != NULL, "%s", err.message);
	proto_buf_free(&b);

	/* Without "mesh" nothing is sent and nothing decoded. */
	r.u.frames_get.triangles = NULL;
	CHECK(proto_reply_encode(&r, &b, &err) == DRAPE_OK);
	CHECK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_FRAMES_GET, &d, &err) == DRAPE_OK);
	CHECK(d.u.frames_get.triangles == NULL && d.u.frames_get.triangle_count == 0);
	proto_reply_free(&d);
	proto_buf_free(&b);
}

static const check_test tests[] = {
	CHECK_TEST(test_request_mesh_flag),
	CHECK_TEST(test_request_mesh_wrong_type),
	CHECK_TEST(test_reply_carries_triangles),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
