/*
 * Codec tests on hostile input: the pre-validator on hostile byte strings;
 * the decoder's error codes and field names on malformed messages (the
 * animation ops' too); and a randomized pass over garbage and mutated
 * messages that may only ever produce an error or a valid decode (run it
 * under AddressSanitizer and UndefinedBehaviorSanitizer). Round trips are in
 * test_proto_codec.c.
 */
#include "proto/proto.h"

#include <math.h>
#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "proto_fixtures.h"

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

/* One bin entry of a session.create request. */
typedef struct bin_entry {
	const char *key;
	const void *p;
	size_t n;
} bin_entry;

/* A session.create made of bin entries (up to 4), and the error it must get. */
typedef struct bulk_case {
	const char *what;
	bin_entry bins[4];
	drape_err code;
	const char *field;
} bulk_case;

static void test_decode_bad_bulk(void)
{
	/* The bad variants of the sheet's arrays the cases below send. */
	float pos_nan[27], pos_inf[27];
	memcpy(pos_nan, sheet_pos, sizeof pos_nan);
	memcpy(pos_inf, sheet_pos, sizeof pos_inf);
	pos_nan[5] = NAN;      /* positions[1][2] */
	pos_inf[24] = INFINITY; /* positions[8][0] */
	uint32_t tri_far[24];
	memcpy(tri_far, sheet_tri, sizeof tri_far);
	tri_far[16] = 9; /* triangles[5][1] */
	static const uint32_t pins_far[2] = { 0, 100 };
	static const float im[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	static const float im_neg[9] = { 1, 1, 1, 1, -1, 1, 1, 1, 1 };
	static const float uv[18] = { 0 };
	static const float uv_nan[18] = { [13] = NAN };
	static const uint32_t pv[2] = { 0, 2 };
	static const float pk[2] = { 50.0f, 0.0f };
	static const float pk_neg[2] = { 50.0f, -3.0f };
	static const float pk_inf[2] = { INFINITY, -3.0f };
	static const float rs[9] = { 1, 1, 1, 1, 1, 1, 1, 0, 1 };
	static const uint32_t sv[6] = { 0, 4, 4, 8, 6, 7 };
	static const uint32_t sv_far[6] = { 0, 4, 4, 8, 9, 7 };
	static const float st[2] = { 0.0f, 0.5f };
	static const float st_nan[2] = { 0.0f, NAN };
#define POS { "positions", sheet_pos, sizeof sheet_pos }
#define TRI { "triangles", sheet_tri, sizeof sheet_tri }
	const bulk_case cases[] = {
		{ "bin length not a multiple of 4",
		  { { "positions", sheet_pos, sizeof sheet_pos - 2 }, TRI }, DRAPE_EPROTO, "positions" },
		{ "float count not a multiple of 3",
		  { { "positions", sheet_pos, 4 * 26 }, TRI }, DRAPE_EINVAL, "positions" },
		{ "NaN, named with its vertex and component",
		  { { "positions", pos_nan, sizeof pos_nan }, TRI }, DRAPE_ENONFINITE, "positions[1][2]" },
		{ "infinity", { { "positions", pos_inf, sizeof pos_inf }, TRI }, DRAPE_ENONFINITE, "positions[8][0]" },
		{ "triangle index out of range",
		  { POS, { "triangles", tri_far, sizeof tri_far } }, DRAPE_ERANGE, "triangles[5][1]" },
		{ "pin index out of range", { POS, TRI, { "pins", pins_far, sizeof pins_far } }, DRAPE_ERANGE, "pins[1]" },
		{ "inv_mass of the wrong count", { POS, TRI, { "inv_mass", im, 8 * 4 } }, DRAPE_EINVAL, "inv_mass" },
		{ "negative inv_mass", { POS, TRI, { "inv_mass", im_neg, sizeof im_neg } }, DRAPE_EINVAL, "inv_mass[4]" },
		{ "uvs one vertex short", { POS, TRI, { "uvs", uv, 16 * 4 } }, DRAPE_EINVAL, "uvs" },
		{ "uvs of an odd float count", { POS, TRI, { "uvs", uv, 17 * 4 } }, DRAPE_EINVAL, "uvs" },
		{ "non-finite uv, named with its vertex",
		  { POS, TRI, { "uvs", uv_nan, sizeof uv_nan } }, DRAPE_ENONFINITE, "uvs[6][1]" },
		{ "pin_stiffness without pins", { POS, TRI, { "pin_stiffness", pk, sizeof pk } }, DRAPE_EINVAL,
		  "pin_stiffness" },
		{ "pin_stiffness of another count than the pins'",
		  { POS, TRI, { "pins", pv, sizeof pv }, { "pin_stiffness", pk, 4 } }, DRAPE_EINVAL, "pin_stiffness" },
		{ "negative pin stiffness",
		  { POS, TRI, { "pins", pv, sizeof pv }, { "pin_stiffness", pk_neg, sizeof pk_neg } }, DRAPE_EINVAL,
		  "pin_stiffness[1]" },
		{ "non-finite pin stiffness",
		  { POS, TRI, { "pins", pv, sizeof pv }, { "pin_stiffness", pk_inf, sizeof pk_inf } },
		  DRAPE_ENONFINITE, "pin_stiffness[0]" },
		{ "rest_scale one vertex short", { POS, TRI, { "rest_scale", rs, sizeof rs - 4 } }, DRAPE_EINVAL,
		  "rest_scale" },
		{ "a zero rest scale, named with its vertex", { POS, TRI, { "rest_scale", rs, sizeof rs } },
		  DRAPE_EINVAL, "rest_scale[7]" },
		{ "stitch_v without stitch_t", { POS, TRI, { "stitch_v", sv, sizeof sv } }, DRAPE_EINVAL, "stitch_t" },
		{ "stitched vertex out of range",
		  { POS, TRI, { "stitch_v", sv_far, sizeof sv_far }, { "stitch_t", st, sizeof st } }, DRAPE_ERANGE,
		  "stitch_v[1]" },
		{ "stitch_t of another count than the stitches",
		  { POS, TRI, { "stitch_v", sv, sizeof sv }, { "stitch_t", st, 4 } }, DRAPE_EINVAL, "stitch_t" },
		{ "non-finite stitch t",
		  { POS, TRI, { "stitch_v", sv, sizeof sv }, { "stitch_t", st_nan, sizeof st_nan } },
		  DRAPE_ENONFINITE, "stitch_t[1]" },
		{ "rest shape one vertex short",
		  { POS, TRI, { "rest_positions", sheet_pos, sizeof sheet_pos - 12 } }, DRAPE_EINVAL,
		  "rest_positions" },
	};
#undef POS
#undef TRI
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const bulk_case *c = &cases[i];
		uint32_t n = 0;
		while (n < 4 && c->bins[n].key != NULL)
			n++;
		tb t;
		tb_request(&t, 3 + n, "session.create");
		for (uint32_t k = 0; k < n; k++)
			tb_bin(&t, c->bins[k].key, c->bins[k].p, c->bins[k].n);
		char why[400];
		int ok = expect_request_error(&t, c->code, c->field, why, sizeof why);
		CHECKF(ok, "%s: %s", c->what, why);
	}
	tb t;
	/* Per-vertex properties: a count short, a value out of range named
	 * with its vertex; -1 friction is the collider's (accepted below). */
	float pv9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, ss[27];
	for (int i = 0; i < 27; i++)
		ss[i] = 1.0f;
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "stiffness_scale", pv9, sizeof pv9);
	EXPECT_ERR(&t, DRAPE_EINVAL, "stiffness_scale");
	ss[14] = 0.0f;
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "stiffness_scale", ss, sizeof ss);
	EXPECT_ERR(&t, DRAPE_EINVAL, "stiffness_scale[4][2]");
	pv9[4] = 1.5f;
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "vertex_thickness", pv9, sizeof pv9);
	EXPECT_ERR(&t, DRAPE_EINVAL, "vertex_thickness[4]");
	pv9[4] = -0.5f;
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_bin(&t, "vertex_friction", pv9, sizeof pv9);
	EXPECT_ERR(&t, DRAPE_EINVAL, "vertex_friction[4]");

	/* objects: not an array, empty, an element without its name, a
	 * range that leaves a gap, one that runs past the mesh, two names
	 * alike, and ranges that leave vertices out */
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_u(&t, "objects", 3);
	EXPECT_ERR(&t, DRAPE_EPROTO, "objects");
	tb_request(&t, 6, "session.create");
	tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
	tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
	tb_key(&t, "objects");
	msgpack_pack_array(&t.pk, 0);
	EXPECT_ERR(&t, DRAPE_EINVAL, "objects");
	const struct {
		const char *name[2];
		uint32_t first[2], count[2];
		drape_err code;
		const char *field;
	} ob[] = {
		{ { NULL, "b" }, { 0, 6 }, { 6, 3 }, DRAPE_EPROTO, "objects[0].name" },
		{ { "a", "b" }, { 0, 7 }, { 6, 2 }, DRAPE_EINVAL, "objects[1].first_vertex" },
		{ { "a", "b" }, { 0, 6 }, { 6, 4 }, DRAPE_EINVAL, "objects[1].vertex_count" },
		{ { "a", "a" }, { 0, 6 }, { 6, 3 }, DRAPE_EINVAL, "objects[1].name" },
		{ { "a", "b" }, { 0, 6 }, { 6, 2 }, DRAPE_EINVAL, "objects: cover 8 of 9" },
	};
	for (size_t k = 0; k < sizeof ob / sizeof ob[0]; k++) {
		tb_request(&t, 6, "session.create");
		tb_bin(&t, "positions", sheet_pos, sizeof sheet_pos);
		tb_bin(&t, "triangles", sheet_tri, sizeof sheet_tri);
		tb_key(&t, "objects");
		msgpack_pack_array(&t.pk, 2);
		for (int i = 0; i < 2; i++) {
			msgpack_pack_map(&t.pk, ob[k].name[i] ? 3 : 2);
			if (ob[k].name[i])
				tb_str(&t, "name", ob[k].name[i]);
			tb_u(&t, "first_vertex", ob[k].first[i]);
			tb_u(&t, "vertex_count", ob[k].count[i]);
		}
		EXPECT_ERR(&t, ob[k].code, ob[k].field);
	}


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
	proto_frame fr[2] = { { 1, 9, sheet_pos, { 0 }, 0, NULL, 0 }, { 2, 9, sheet_pos, { 0 }, 0, NULL, 0 } };
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
	CHECK_TEST(test_decode_bad_anim),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
