/*
 * Text on the wire is UTF-8: the well-formedness check against the Unicode
 * Standard's table 3-7 (section 3.9, "well-formed UTF-8 byte sequences"),
 * the \xNN escaping of error messages, error replies whose message quotes
 * invalid bytes, and session names that are refused when not UTF-8.
 */
#include "proto/proto.h"

#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define S(lit) (lit), (sizeof(lit) - 1)

static void test_well_formed_sequences(void)
{
	/* Each row of table 3-7 at its bounds. */
	CHECK(proto_utf8_check(S("plain ascii ~\x7f")) == 14);
	CHECK(proto_utf8_check(S("\xc2\x80")) == 2);             /* U+0080 */
	CHECK(proto_utf8_check(S("\xdf\xbf")) == 2);             /* U+07FF */
	CHECK(proto_utf8_check(S("\xe0\xa0\x80")) == 3);         /* U+0800 */
	CHECK(proto_utf8_check(S("\xe2\x82\xac")) == 3);         /* U+20AC euro */
	CHECK(proto_utf8_check(S("\xed\x9f\xbf")) == 3);         /* U+D7FF */
	CHECK(proto_utf8_check(S("\xee\x80\x80")) == 3);         /* U+E000 */
	CHECK(proto_utf8_check(S("\xef\xbf\xbf")) == 3);         /* U+FFFF */
	CHECK(proto_utf8_check(S("\xf0\x90\x80\x80")) == 4);     /* U+10000 */
	CHECK(proto_utf8_check(S("\xf0\x9f\x98\x80")) == 4);     /* U+1F600 */
	CHECK(proto_utf8_check(S("\xf4\x8f\xbf\xbf")) == 4);     /* U+10FFFF */
	CHECK(proto_utf8_check(S("")) == 0);
}

static void test_ill_formed_sequences(void)
{
	/* The offset returned is the first byte that is not part of a
	 * well-formed sequence. */
	CHECK(proto_utf8_check(S("ab\x80")) == 2);               /* lone continuation */
	CHECK(proto_utf8_check(S("\xc0\xaf")) == 0);             /* overlong '/' */
	CHECK(proto_utf8_check(S("\xc1\xbf")) == 0);             /* overlong */
	CHECK(proto_utf8_check(S("\xe0\x9f\xbf")) == 0);         /* overlong below U+0800 */
	CHECK(proto_utf8_check(S("\xed\xa0\x80")) == 0);         /* surrogate U+D800 */
	CHECK(proto_utf8_check(S("\xed\xbf\xbf")) == 0);         /* surrogate U+DFFF */
	CHECK(proto_utf8_check(S("\xf0\x8f\xbf\xbf")) == 0);     /* overlong below U+10000 */
	CHECK(proto_utf8_check(S("\xf4\x90\x80\x80")) == 0);     /* U+110000 */
	CHECK(proto_utf8_check(S("\xf5\x80\x80\x80")) == 0);
	CHECK(proto_utf8_check(S("\xff")) == 0);
	CHECK(proto_utf8_check(S("x\xe2\x82")) == 1);            /* cut short at the end */
	CHECK(proto_utf8_check(S("\xe2\x28\xa1")) == 0);         /* bad second byte */
	CHECK(proto_utf8_check(S("\xf0\x9f\x98\x28")) == 0);     /* bad fourth byte */
}

static void test_escape(void)
{
	char out[64];
	size_t n = proto_utf8_escape(S("op \"\xff" "ab\xc0\" \xe2\x82\xac"), out, sizeof out);
	CHECK(strcmp(out, "op \"\\xffab\\xc0\" \xe2\x82\xac") == 0);
	CHECK(n == strlen(out));
	CHECK(proto_utf8_check(out, n) == n);

	/* Valid text is copied unchanged. */
	n = proto_utf8_escape(S("caf\xc3\xa9"), out, sizeof out);
	CHECK(n == 5 && memcmp(out, "caf\xc3\xa9", 6) == 0);

	/* The output stops before what does not fit: never half a sequence,
	 * never half an escape. */
	n = proto_utf8_escape(S("ab\xe2\x82\xac"), out, 5);
	CHECK(n == 2 && strcmp(out, "ab") == 0);
	n = proto_utf8_escape(S("ab\xff"), out, 6);
	CHECK(n == 2 && strcmp(out, "ab") == 0);
	n = proto_utf8_escape(S("ab\xff"), out, 7);
	CHECK(n == 6 && strcmp(out, "ab\\xff") == 0);
	n = proto_utf8_escape(S("abc"), out, 1);
	CHECK(n == 0 && out[0] == '\0');
}

/* Finds the error.message str of an encoded reply; false if absent. */
static bool reply_message(const void *data, size_t len, const char **p, size_t *n)
{
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	bool found = false;
	static char copy[512];
	if (msgpack_unpack_next(&u, data, len, NULL) == MSGPACK_UNPACK_SUCCESS && u.data.type == MSGPACK_OBJECT_MAP) {
		const msgpack_object_map *m = &u.data.via.map;
		for (uint32_t i = 0; i < m->size && !found; i++) {
			const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
			if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 5 ||
			    memcmp(k->via.str.ptr, "error", 5) != 0 || v->type != MSGPACK_OBJECT_MAP)
				continue;
			for (uint32_t j = 0; j < v->via.map.size; j++) {
				const msgpack_object *ek = &v->via.map.ptr[j].key, *ev = &v->via.map.ptr[j].val;
				if (ek->type == MSGPACK_OBJECT_STR && ek->via.str.size == 7 &&
				    memcmp(ek->via.str.ptr, "message", 7) == 0 && ev->type == MSGPACK_OBJECT_STR &&
				    ev->via.str.size < sizeof copy) {
					memcpy(copy, ev->via.str.ptr, ev->via.str.size);
					*p = copy;
					*n = ev->via.str.size;
					found = true;
				}
			}
		}
	}
	msgpack_unpacked_destroy(&u);
	return found;
}

/* An error message that quotes invalid bytes (as the daemon's "unknown
 * operation" does) is sent as valid UTF-8 with \xNN escapes, so a strict
 * decoder accepts the reply and the user still sees what was sent. */
static void test_error_reply_is_utf8(void)
{
	drape_error e, err;
	proto_reply r, d;
	drape_error_setf(&e, DRAPE_EPROTO, "op: unknown operation \"%s\"", "\xff" "bogus\xc0");
	proto_reply_init_error(&r, NULL, &e);
	proto_buf b = { 0 };
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	const char *p = NULL;
	size_t n = 0;
	CHECK(reply_message(b.data, b.len, &p, &n));
	CHECKF(proto_utf8_check(p, n) == n, "byte %zu of the message is not UTF-8", proto_utf8_check(p, n));
	CHECK_OK(proto_reply_decode(b.data, b.len, 0, PROTO_OP_HELLO, &d, &err));
	CHECKF(strcmp(d.error.message, "op: unknown operation \"\\xffbogus\\xc0\"") == 0, "%s", d.error.message);
	proto_reply_free(&d);
	proto_buf_free(&b);

	/* A message cut mid-character by the fixed buffer: the stray lead
	 * bytes are escaped, within the same 255-byte limit. */
	char longmsg[400];
	memset(longmsg, 'a', sizeof longmsg);
	for (size_t i = 250; i + 3 <= sizeof longmsg - 1; i += 3)
		memcpy(longmsg + i, "\xe2\x82\xac", 3);
	longmsg[sizeof longmsg - 1] = '\0';
	drape_error_setf(&e, DRAPE_EINVAL, "%s", longmsg);
	proto_reply_init_error(&r, NULL, &e);
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	CHECK(reply_message(b.data, b.len, &p, &n));
	CHECK(n <= 255 && proto_utf8_check(p, n) == n);
	proto_buf_free(&b);
}

/* A session name is echoed in status and list replies, so one that is not
 * UTF-8 is refused at create, naming the field. */
static void test_create_name_must_be_utf8(void)
{
	static const float pos[9] = { 0, 0, 0, 1, 0, 0, 0, 1, 0 };
	static const uint32_t tri[3] = { 0, 1, 2 };
	proto_request req, got;
	proto_request_init(&req, PROTO_OP_SESSION_CREATE);
	req.id = 5;
	req.u.create.mesh.positions = pos;
	req.u.create.mesh.vertex_count = 3;
	req.u.create.mesh.triangles = tri;
	req.u.create.mesh.triangle_count = 1;
	req.u.create.name = "shirt \xe2\x82\xac";
	proto_buf b = { 0 };
	drape_error err;
	CHECK_OK(proto_request_encode(&req, &b, &err));
	CHECK_OK(proto_request_decode(b.data, b.len, 0, &got, NULL, &err));
	CHECK(strcmp(got.u.create.name, "shirt \xe2\x82\xac") == 0);
	proto_request_free(&got);
	proto_buf_free(&b);

	req.u.create.name = "shirt \xed\xa0\x80";
	CHECK_OK(proto_request_encode(&req, &b, &err));
	drape_err rc = proto_request_decode(b.data, b.len, 0, &got, NULL, &err);
	proto_buf_free(&b);
	CHECK(rc == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "name") != NULL && strstr(err.message, "UTF-8 (byte 6)") != NULL, "%s",
	       err.message);
}

static const check_test tests[] = {
	CHECK_TEST(test_well_formed_sequences), CHECK_TEST(test_ill_formed_sequences),
	CHECK_TEST(test_escape),                CHECK_TEST(test_error_reply_is_utf8),
	CHECK_TEST(test_create_name_must_be_utf8),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
