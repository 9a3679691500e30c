/*
 * Typed readers and writers of msgpack values. Readers never trust the wire:
 * each checks the type, range and finiteness of one value and, when it is
 * wrong, names the field. Writers pack straight through and leave failures
 * in the encoder for one check at the end.
 */
#include "proto/wire.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- Decoding ------------------------------------------------------------ */

drape_err proto_wire_unpack(const void *buf, size_t len, size_t max_len, msgpack_zone *zone,
		      msgpack_object *root, const char *what, drape_error *err)
{
	drape_err rc = proto_check(buf, len, max_len, err);
	if (rc != DRAPE_OK)
		return rc;
	size_t off = 0;
	msgpack_unpack_return ur = msgpack_unpack(buf, len, &off, zone, root);
	switch (ur) {
	case MSGPACK_UNPACK_SUCCESS:
		break;
	case MSGPACK_UNPACK_NOMEM_ERROR:
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory while unpacking", what);
	default:
		/* proto_check accepted the bytes, so msgpack-c disagreeing is
		 * a gap in the pre-validator; report it as the peer's fault
		 * all the same, never assert on wire input. */
		return drape_error_setf(err, DRAPE_EPROTO, "%s: msgpack-c refused the message (%d)",
					what, (int)ur);
	}
	if (root->type != MSGPACK_OBJECT_MAP)
		return drape_error_setf(err, DRAPE_EPROTO, "%s: the message is not a map", what);
	return DRAPE_OK;
}

drape_err proto_wire_fail(proto_wire_dec *d, drape_err code, const char *path, const char *fmt, ...)
{
	if (d->err != NULL) {
		char text[DRAPE_ERROR_MESSAGE_MAX];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(text, sizeof text, fmt, ap);
		va_end(ap);
		drape_error_setf(d->err, code, "%s: %s: %s", d->what, path, text);
	}
	return code;
}

static const char *type_name(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL: return "nil";
	case MSGPACK_OBJECT_BOOLEAN: return "a boolean";
	case MSGPACK_OBJECT_POSITIVE_INTEGER: return "an integer";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "a negative integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64: return "a float";
	case MSGPACK_OBJECT_STR: return "a string";
	case MSGPACK_OBJECT_ARRAY: return "an array";
	case MSGPACK_OBJECT_MAP: return "a map";
	case MSGPACK_OBJECT_BIN: return "a bin";
	case MSGPACK_OBJECT_EXT: return "an ext";
	}
	return "an unknown type";
}

drape_err proto_wire_map(proto_wire_dec *d, const msgpack_object *o, const char *path)
{
	if (o->type != MSGPACK_OBJECT_MAP)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected a map, got %s", type_name(o));
	const msgpack_object_map *m = &o->via.map;
	if (m->size > PROTO_MAX_KEYS)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "%u keys exceed the limit of %d",
				 (unsigned)m->size, PROTO_MAX_KEYS);
	for (uint32_t i = 0; i < m->size; i++) {
		const msgpack_object *k = &m->ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR)
			return proto_wire_fail(d, DRAPE_EPROTO, path, "key %u is %s, expected a string",
					 (unsigned)i, type_name(k));
		for (uint32_t j = 0; j < i; j++) {
			const msgpack_object *q = &m->ptr[j].key;
			if (q->via.str.size == k->via.str.size &&
			    memcmp(q->via.str.ptr, k->via.str.ptr, k->via.str.size) == 0)
				return proto_wire_fail(d, DRAPE_EPROTO, path, "key \"%.*s\" appears twice",
						 (int)(k->via.str.size > 64 ? 64 : k->via.str.size),
						 k->via.str.ptr);
		}
	}
	return DRAPE_OK;
}

const msgpack_object *proto_wire_get(const msgpack_object *map, const char *key)
{
	const size_t n = strlen(key);
	const msgpack_object_map *m = &map->via.map;
	for (uint32_t i = 0; i < m->size; i++) {
		const msgpack_object *k = &m->ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
		    memcmp(k->via.str.ptr, key, n) == 0) {
			const msgpack_object *v = &m->ptr[i].val;
			return v->type == MSGPACK_OBJECT_NIL ? NULL : v;
		}
	}
	return NULL;
}

drape_err proto_wire_need(proto_wire_dec *d, const msgpack_object *map, const char *key, const char *path,
		    const msgpack_object **out)
{
	const msgpack_object *v = proto_wire_get(map, key);
	if (v == NULL)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "missing");
	*out = v;
	return DRAPE_OK;
}

drape_err proto_wire_u64(proto_wire_dec *d, const msgpack_object *o, const char *path, uint64_t *out)
{
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "%lld is negative", (long long)o->via.i64);
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected an unsigned integer, got %s",
				 type_name(o));
	*out = o->via.u64;
	return DRAPE_OK;
}

drape_err proto_wire_u32(proto_wire_dec *d, const msgpack_object *o, const char *path, uint32_t *out)
{
	uint64_t v = 0;
	drape_err rc = proto_wire_u64(d, o, path, &v);
	if (rc != DRAPE_OK)
		return rc;
	if (v > UINT32_MAX)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "%llu exceeds 4294967295",
				 (unsigned long long)v);
	*out = (uint32_t)v;
	return DRAPE_OK;
}

drape_err proto_wire_i32(proto_wire_dec *d, const msgpack_object *o, const char *path, int32_t *out)
{
	switch (o->type) {
	case MSGPACK_OBJECT_BOOLEAN:
		*out = o->via.boolean ? 1 : 0;
		return DRAPE_OK;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		if (o->via.u64 > INT32_MAX)
			return proto_wire_fail(d, DRAPE_EINVAL, path, "%llu exceeds %d",
					 (unsigned long long)o->via.u64, INT32_MAX);
		*out = (int32_t)o->via.u64;
		return DRAPE_OK;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		if (o->via.i64 < INT32_MIN)
			return proto_wire_fail(d, DRAPE_EINVAL, path, "%lld is below %d",
					 (long long)o->via.i64, INT32_MIN);
		*out = (int32_t)o->via.i64;
		return DRAPE_OK;
	default:
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected an integer, got %s", type_name(o));
	}
}

drape_err proto_wire_bool(proto_wire_dec *d, const msgpack_object *o, const char *path, bool *out)
{
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected a boolean, got %s", type_name(o));
	*out = o->via.boolean;
	return DRAPE_OK;
}

drape_err proto_wire_f64(proto_wire_dec *d, const msgpack_object *o, const char *path, double *out)
{
	switch (o->type) {
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		*out = o->via.f64;
		return DRAPE_OK;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		*out = (double)o->via.u64;
		return DRAPE_OK;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		*out = (double)o->via.i64;
		return DRAPE_OK;
	default:
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected a number, got %s", type_name(o));
	}
}

drape_err proto_wire_f32(proto_wire_dec *d, const msgpack_object *o, const char *path, float *out)
{
	double v = 0;
	drape_err rc = proto_wire_f64(d, o, path, &v);
	if (rc != DRAPE_OK)
		return rc;
	if (!isfinite(v))
		return proto_wire_fail(d, DRAPE_ENONFINITE, path, "%g is not finite", v);
	if (fabs(v) > FLT_MAX)
		return proto_wire_fail(d, DRAPE_ENONFINITE, path, "%g overflows float32", v);
	*out = (float)v;
	return DRAPE_OK;
}

drape_err proto_wire_f32_array(proto_wire_dec *d, const msgpack_object *o, const char *path, float *out,
			 uint32_t n)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected an array of %u numbers, got %s",
				 (unsigned)n, type_name(o));
	if (o->via.array.size != n)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "expected %u numbers, got %u", (unsigned)n,
				 (unsigned)o->via.array.size);
	float tmp[16];
	for (uint32_t i = 0; i < n && i < 16; i++) {
		char sub[96];
		snprintf(sub, sizeof sub, "%s[%u]", path, (unsigned)i);
		drape_err rc = proto_wire_f32(d, &o->via.array.ptr[i], sub, &tmp[i]);
		if (rc != DRAPE_OK)
			return rc;
	}
	memcpy(out, tmp, (size_t)(n < 16 ? n : 16) * sizeof(float));
	return DRAPE_OK;
}

drape_err proto_wire_str_ref(proto_wire_dec *d, const msgpack_object *o, const char *path, const char **p,
		       size_t *n)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected a string, got %s", type_name(o));
	*p = o->via.str.ptr;
	*n = o->via.str.size;
	return DRAPE_OK;
}

drape_err proto_wire_str(proto_wire_dec *d, const msgpack_object *o, const char *path, size_t max,
		   const char **out)
{
	const char *p = NULL;
	size_t n = 0;
	drape_err rc = proto_wire_str_ref(d, o, path, &p, &n);
	if (rc != DRAPE_OK)
		return rc;
	if (n > max)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "%zu bytes exceed the limit of %zu", n, max);
	if (n > 0 && memchr(p, '\0', n) != NULL)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "contains a NUL byte");
	char *s = proto_mem_alloc(d->mem, n + 1);
	if (s == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, path, "out of memory");
	if (n > 0)
		memcpy(s, p, n);
	s[n] = '\0';
	*out = s;
	return DRAPE_OK;
}

/* Looks up key for the proto_wire_field_* readers: NULL with DRAPE_OK when an
 * optional key is absent. */
static drape_err field(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
		       bool *present, const msgpack_object **v)
{
	*v = proto_wire_get(map, key);
	if (present != NULL)
		*present = *v != NULL;
	if (*v == NULL && required)
		return proto_wire_fail(d, DRAPE_EPROTO, key, "missing");
	return DRAPE_OK;
}

#define PROTO_WIRE_FIELD_(fn, type, reader)                                                          \
	drape_err fn(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,  \
		     type *out, bool *present)                                                 \
	{                                                                                      \
		const msgpack_object *v;                                                       \
		drape_err rc = field(d, map, key, required, present, &v);                      \
		if (rc != DRAPE_OK || v == NULL)                                               \
			return rc;                                                             \
		return reader(d, v, key, out);                                                 \
	}
PROTO_WIRE_FIELD_(proto_wire_field_u32, uint32_t, proto_wire_u32)
PROTO_WIRE_FIELD_(proto_wire_field_u64, uint64_t, proto_wire_u64)
PROTO_WIRE_FIELD_(proto_wire_field_f32, float, proto_wire_f32)
PROTO_WIRE_FIELD_(proto_wire_field_f64, double, proto_wire_f64)
PROTO_WIRE_FIELD_(proto_wire_field_bool, bool, proto_wire_bool)
#undef PROTO_WIRE_FIELD_

drape_err proto_wire_field_vec3(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			  float out[3], bool *present)
{
	const msgpack_object *v;
	drape_err rc = field(d, map, key, required, present, &v);
	if (rc != DRAPE_OK || v == NULL)
		return rc;
	return proto_wire_f32_array(d, v, key, out, 3);
}

drape_err proto_wire_field_str(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			 size_t max, const char **out)
{
	const msgpack_object *v;
	drape_err rc = field(d, map, key, required, NULL, &v);
	if (rc != DRAPE_OK || v == NULL)
		return rc;
	return proto_wire_str(d, v, key, max, out);
}

/* Little-endian uint32 at p, whatever the host's byte order and alignment. */
static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Checks a bin of 4-byte values forming tuples; returns the value count. */
static drape_err bin_shape(proto_wire_dec *d, const msgpack_object *o, const char *path,
			   uint32_t tuple, uint32_t expect, const char *kind, uint32_t *values)
{
	if (o->type != MSGPACK_OBJECT_BIN)
		return proto_wire_fail(d, DRAPE_EPROTO, path, "expected a bin of little-endian %s, got %s",
				 kind, type_name(o));
	const uint32_t size = o->via.bin.size;
	if (size % 4u != 0)
		return proto_wire_fail(d, DRAPE_EPROTO, path,
				 "bin length %u is not a multiple of 4 (%s are 4 bytes)",
				 (unsigned)size, kind);
	const uint32_t n = size / 4u;
	if (n % tuple != 0)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "%u values are not a multiple of %u",
				 (unsigned)n, (unsigned)tuple);
	if (expect != UINT32_MAX && n / tuple != expect)
		return proto_wire_fail(d, DRAPE_EINVAL, path, "%u entries, expected %u",
				 (unsigned)(n / tuple), (unsigned)expect);
	*values = n;
	return DRAPE_OK;
}

drape_err proto_wire_bin_f32(proto_wire_dec *d, const msgpack_object *o, const char *path, uint32_t tuple,
		       uint32_t expect, const float **out, uint32_t *count)
{
	uint32_t n = 0;
	drape_err rc = bin_shape(d, o, path, tuple, expect, "float32", &n);
	if (rc != DRAPE_OK)
		return rc;
	const unsigned char *src = (const unsigned char *)o->via.bin.ptr;
	/* Validate before allocating, so a bad message costs no memory. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t bits = le32(src + 4u * (size_t)i);
		float f;
		memcpy(&f, &bits, sizeof f);
		if (!isfinite(f)) {
			char sub[128];
			if (tuple == 1)
				snprintf(sub, sizeof sub, "%s[%u]", path, (unsigned)i);
			else
				snprintf(sub, sizeof sub, "%s[%u][%u]", path, (unsigned)(i / tuple),
					 (unsigned)(i % tuple));
			return proto_wire_fail(d, DRAPE_ENONFINITE, sub, "%g is not finite", (double)f);
		}
	}
	float *dst = proto_mem_alloc(d->mem, (size_t)n * sizeof(float));
	if (dst == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, path, "out of memory for %u floats", (unsigned)n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t bits = le32(src + 4u * (size_t)i);
		memcpy(&dst[i], &bits, sizeof bits);
	}
	*out = dst;
	*count = n / tuple;
	return DRAPE_OK;
}

drape_err proto_wire_bin_u32(proto_wire_dec *d, const msgpack_object *o, const char *path, uint32_t tuple,
		       uint64_t bound, const char *bound_name, const uint32_t **out,
		       uint32_t *count)
{
	uint32_t n = 0;
	drape_err rc = bin_shape(d, o, path, tuple, UINT32_MAX, "uint32", &n);
	if (rc != DRAPE_OK)
		return rc;
	const unsigned char *src = (const unsigned char *)o->via.bin.ptr;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = le32(src + 4u * (size_t)i);
		if (v >= bound) {
			char sub[128];
			if (tuple == 1)
				snprintf(sub, sizeof sub, "%s[%u]", path, (unsigned)i);
			else
				snprintf(sub, sizeof sub, "%s[%u][%u]", path, (unsigned)(i / tuple),
					 (unsigned)(i % tuple));
			return proto_wire_fail(d, DRAPE_ERANGE, sub, "index %u >= %s %llu", (unsigned)v,
					 bound_name, (unsigned long long)bound);
		}
	}
	uint32_t *dst = proto_mem_alloc(d->mem, (size_t)n * sizeof(uint32_t));
	if (dst == NULL)
		return proto_wire_fail(d, DRAPE_ENOMEM, path, "out of memory for %u indices", (unsigned)n);
	for (uint32_t i = 0; i < n; i++)
		dst[i] = le32(src + 4u * (size_t)i);
	*out = dst;
	*count = n / tuple;
	return DRAPE_OK;
}

/* ---- Encoding ------------------------------------------------------------ */

static int enc_write(void *data, const char *buf, size_t len)
{
	proto_wire_enc *e = data;
	if (e->rc != DRAPE_OK)
		return -1;
	if (msgpack_sbuffer_write(&e->sb, buf, len) != 0) {
		e->rc = DRAPE_ENOMEM;
		drape_error_setf(e->err, DRAPE_ENOMEM, "%s: out of memory while encoding", e->what);
		return -1;
	}
	return 0;
}

void proto_wire_enc_init(proto_wire_enc *e, const char *what, drape_error *err)
{
	msgpack_sbuffer_init(&e->sb);
	msgpack_packer_init(&e->pk, e, enc_write);
	e->rc = DRAPE_OK;
	e->err = err;
	e->what = what;
}

void proto_wire_enc_fail(proto_wire_enc *e, drape_err code, const char *path, const char *fmt, ...)
{
	if (e->rc != DRAPE_OK)
		return;
	e->rc = code;
	if (e->err != NULL) {
		char text[DRAPE_ERROR_MESSAGE_MAX];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(text, sizeof text, fmt, ap);
		va_end(ap);
		drape_error_setf(e->err, code, "%s: %s: %s", e->what, path, text);
	}
}

drape_err proto_wire_enc_finish(proto_wire_enc *e, proto_buf *out)
{
	drape_err rc = e->rc;
	if (rc == DRAPE_OK) {
		out->data = (uint8_t *)e->sb.data;
		out->len = e->sb.size;
	} else {
		msgpack_sbuffer_destroy(&e->sb);
	}
	e->sb.data = NULL;
	e->sb.size = 0;
	e->sb.alloc = 0;
	return rc;
}

size_t proto_wire_map_begin(proto_wire_enc *e)
{
	const size_t at = e->sb.size;
	static const char hdr[5] = { (char)0xdf, 0, 0, 0, 0 };
	enc_write(e, hdr, sizeof hdr);
	return at;
}

void proto_wire_raw(proto_wire_enc *e, const void *p, size_t n)
{
	enc_write(e, p, n);
}

void proto_wire_map_end(proto_wire_enc *e, size_t at, uint32_t n)
{
	if (e->rc != DRAPE_OK || e->sb.data == NULL || at + 5 > e->sb.size)
		return;
	unsigned char *p = (unsigned char *)e->sb.data + at + 1;
	p[0] = (unsigned char)(n >> 24);
	p[1] = (unsigned char)(n >> 16);
	p[2] = (unsigned char)(n >> 8);
	p[3] = (unsigned char)n;
}

void proto_wire_kv(proto_wire_enc *e, uint32_t *n, const char *key)
{
	const size_t len = strlen(key);
	msgpack_pack_str(&e->pk, len);
	msgpack_pack_str_body(&e->pk, key, len);
	(*n)++;
}

void proto_wire_pack_str(proto_wire_enc *e, const char *path, const char *s, size_t max)
{
	if (s == NULL) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "NULL string");
		return;
	}
	const size_t len = strlen(s);
	if (len > max) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "%zu bytes exceed the limit of %zu", len, max);
		return;
	}
	msgpack_pack_str(&e->pk, len);
	msgpack_pack_str_body(&e->pk, s, len);
}

void proto_wire_pack_bytes(proto_wire_enc *e, const char *path, const uint8_t *p, size_t n, size_t max)
{
	if (p == NULL && n > 0) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "NULL with length %zu", n);
		return;
	}
	if (n > max) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "%zu bytes exceed the limit of %zu", n, max);
		return;
	}
	msgpack_pack_bin(&e->pk, n);
	if (n > 0)
		msgpack_pack_bin_body(&e->pk, p, n);
}

void proto_wire_pack_u64(proto_wire_enc *e, uint64_t v)
{
	msgpack_pack_uint64(&e->pk, v);
}

void proto_wire_pack_i64(proto_wire_enc *e, int64_t v)
{
	msgpack_pack_int64(&e->pk, v);
}

void proto_wire_pack_f32(proto_wire_enc *e, float v)
{
	msgpack_pack_float(&e->pk, v);
}

void proto_wire_pack_f64(proto_wire_enc *e, double v)
{
	msgpack_pack_double(&e->pk, v);
}

void proto_wire_pack_bool(proto_wire_enc *e, bool v)
{
	if (v)
		msgpack_pack_true(&e->pk);
	else
		msgpack_pack_false(&e->pk);
}

void proto_wire_pack_nil(proto_wire_enc *e)
{
	msgpack_pack_nil(&e->pk);
}

void proto_wire_pack_array(proto_wire_enc *e, uint32_t n)
{
	msgpack_pack_array(&e->pk, n);
}

void proto_wire_pack_f32_array(proto_wire_enc *e, const float *v, uint32_t n)
{
	msgpack_pack_array(&e->pk, n);
	for (uint32_t i = 0; i < n; i++)
		msgpack_pack_float(&e->pk, v[i]);
}

/* Packs n 4-byte values little-endian. On a little-endian host the memory
 * already has the wire layout and goes out in one write; elsewhere values
 * are swapped through a small stack buffer. */
static void pack_bin32(proto_wire_enc *e, const char *path, const void *v, uint64_t n)
{
	if (v == NULL && n > 0) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "NULL with %llu values", (unsigned long long)n);
		return;
	}
	if (n > UINT32_MAX / 4u) {
		proto_wire_enc_fail(e, DRAPE_EINVAL, path, "%llu values exceed a bin's 4 GiB",
			      (unsigned long long)n);
		return;
	}
	const size_t bytes = (size_t)n * 4u;
	msgpack_pack_bin(&e->pk, bytes);
	if (bytes == 0)
		return;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	msgpack_pack_bin_body(&e->pk, v, bytes);
#else
	const unsigned char *src = v;
	unsigned char tmp[4096];
	size_t done = 0;
	while (done < bytes) {
		size_t chunk = bytes - done < sizeof tmp ? bytes - done : sizeof tmp;
		for (size_t i = 0; i < chunk; i += 4) {
			uint32_t x = 0;
			memcpy(&x, src + done + i, 4);
			tmp[i] = (unsigned char)x;
			tmp[i + 1] = (unsigned char)(x >> 8);
			tmp[i + 2] = (unsigned char)(x >> 16);
			tmp[i + 3] = (unsigned char)(x >> 24);
		}
		msgpack_pack_bin_body(&e->pk, tmp, chunk);
		done += chunk;
	}
#endif
}

void proto_wire_pack_bin_f32(proto_wire_enc *e, const char *path, const float *v, uint64_t n)
{
	pack_bin32(e, path, v, n);
}

void proto_wire_pack_bin_u32(proto_wire_enc *e, const char *path, const uint32_t *v, uint64_t n)
{
	pack_bin32(e, path, v, n);
}
