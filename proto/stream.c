/*
 * Stream messages: what the daemon publishes on its PUB socket. Each starts
 * with a fixed-length ASCII topic naming the session, because nng's SUB
 * filter is a byte-prefix match: a subscriber to "s0000002a" receives
 * session 42 and nothing else, and the fixed length keeps session 4 from
 * matching session 42's prefix.
 */
#include "proto/wire.h"

#include <stdio.h>
#include <string.h>

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

drape_err proto_stream_encode(const proto_stream_msg *m, proto_buf *out, drape_error *err)
{
	if (m->kind != PROTO_STREAM_FRAME && m->kind != PROTO_STREAM_END)
		return drape_error_setf(err, DRAPE_EINVAL, "stream: kind: unknown kind %d",
					(int)m->kind);
	char topic[PROTO_TOPIC_LEN + 1];
	proto_stream_topic(m->session, topic);

	proto_wire_enc e;
	uint32_t n = 0;
	proto_wire_enc_init(&e, "stream", err);
	proto_wire_raw(&e, topic, PROTO_TOPIC_LEN);
	size_t at = proto_wire_map_begin(&e);
	proto_wire_kv(&e, &n, "v");
	proto_wire_pack_u64(&e, PROTO_VERSION);
	proto_wire_kv(&e, &n, "kind");
	proto_wire_pack_str(&e, "kind", m->kind == PROTO_STREAM_FRAME ? "frame" : "end", 8);
	proto_wire_kv(&e, &n, "session");
	proto_wire_pack_u64(&e, m->session);
	if (m->kind == PROTO_STREAM_FRAME) {
		proto_wire_kv(&e, &n, "frame");
		proto_wire_pack_frame(&e, "frame.positions", &m->frame);
	} else {
		proto_wire_kv(&e, &n, "state");
		proto_wire_pack_state(&e, "state", m->state);
		proto_wire_kv(&e, &n, "frames_done");
		proto_wire_pack_u64(&e, m->frames_done);
		if (m->has_error) {
			drape_error er = m->error;
			if (er.code == DRAPE_OK)
				er.code = DRAPE_EINTERNAL;
			proto_wire_kv(&e, &n, "error");
			proto_wire_pack_error(&e, &er);
		}
	}
	proto_wire_map_end(&e, at, n);
	return proto_wire_enc_finish(&e, out);
}

drape_err proto_stream_decode(const void *buf, size_t len, size_t max_len, proto_stream_msg *out,
			      drape_error *err)
{
	const unsigned char *b = buf;
	if (len < PROTO_TOPIC_LEN || b == NULL)
		return drape_error_setf(err, DRAPE_ETRUNCATED,
					"stream: %zu bytes, shorter than the %d-byte topic", len,
					PROTO_TOPIC_LEN);
	uint32_t topic_session = 0;
	bool topic_ok = b[0] == 's';
	for (int i = 1; topic_ok && i < PROTO_TOPIC_LEN; i++) {
		int h = hexval(b[i]);
		topic_ok = h >= 0;
		topic_session = (topic_session << 4) | (uint32_t)(h < 0 ? 0 : h);
	}
	if (!topic_ok)
		return drape_error_setf(err, DRAPE_EPROTO,
					"stream: topic: expected \"s\" and 8 lowercase hex digits");

	msgpack_zone zone;
	msgpack_object root;
	proto_stream_msg m;
	const msgpack_object *v;
	proto_wire_dec d = { err, "stream", NULL };
	if (!msgpack_zone_init(&zone, 1024))
		return drape_error_setf(err, DRAPE_ENOMEM, "stream: out of memory");
	drape_err rc = proto_wire_unpack(b + PROTO_TOPIC_LEN, len - PROTO_TOPIC_LEN, max_len, &zone, &root,
				   "stream", err);
	if (rc == DRAPE_OK)
		rc = proto_wire_map(&d, &root, "message");
	if (rc != DRAPE_OK)
		goto done;
	d.mem = proto_mem_new();
	if (d.mem == NULL) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "stream: out of memory");
		goto done;
	}
	memset(&m, 0, sizeof m);
	uint32_t ver = 0;
	rc = proto_wire_field_u32(&d, &root, "v", true, &ver, NULL);
	if (rc == DRAPE_OK && ver != PROTO_VERSION)
		rc = proto_wire_fail(&d, DRAPE_EVERSION, "v",
			       "protocol version %u is not supported; this peer speaks %d",
			       (unsigned)ver, PROTO_VERSION);
	if (rc == DRAPE_OK)
		rc = proto_wire_field_u32(&d, &root, "session", true, &m.session, NULL);
	if (rc == DRAPE_OK && m.session != topic_session)
		rc = proto_wire_fail(&d, DRAPE_EPROTO, "session", "%u does not match the topic's %u",
			       (unsigned)m.session, (unsigned)topic_session);
	if (rc != DRAPE_OK)
		goto done;

	const char *kind = NULL;
	size_t kn = 0;
	rc = proto_wire_need(&d, &root, "kind", "kind", &v);
	if (rc == DRAPE_OK)
		rc = proto_wire_str_ref(&d, v, "kind", &kind, &kn);
	if (rc != DRAPE_OK)
		goto done;
	if (kn == 5 && memcmp(kind, "frame", 5) == 0) {
		m.kind = PROTO_STREAM_FRAME;
		rc = proto_wire_need(&d, &root, "frame", "frame", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_read_frame(&d, v, "frame", &m.frame);
	} else if (kn == 3 && memcmp(kind, "end", 3) == 0) {
		m.kind = PROTO_STREAM_END;
		rc = proto_wire_need(&d, &root, "state", "state", &v);
		if (rc == DRAPE_OK)
			rc = proto_wire_read_state(&d, v, "state", &m.state);
		if (rc == DRAPE_OK)
			rc = proto_wire_field_u32(&d, &root, "frames_done", false, &m.frames_done, NULL);
		v = rc == DRAPE_OK ? proto_wire_get(&root, "error") : NULL;
		if (v != NULL) {
			rc = proto_wire_read_error(&d, v, "error", &m.error);
			m.has_error = rc == DRAPE_OK;
		}
	} else {
		rc = proto_wire_fail(&d, DRAPE_EPROTO, "kind", "unknown kind \"%.*s\"",
			       (int)(kn > 16 ? 16 : kn), kind);
	}
	if (rc == DRAPE_OK) {
		m.mem = d.mem;
		d.mem = NULL;
		*out = m;
	}
done:
	proto_mem_free(d.mem);
	msgpack_zone_destroy(&zone);
	return rc;
}

void proto_stream_free(proto_stream_msg *m)
{
	if (m == NULL || m->mem == NULL)
		return;
	proto_mem_free(m->mem);
	memset(m, 0, sizeof *m);
}
