/*
 * proto_check: a structural walk over raw msgpack bytes before msgpack-c is
 * allowed to see them.
 *
 * msgpack-c's unpacker trusts the element count in a container header and
 * reserves memory for it up front, so a five-byte message claiming 2^32
 * elements makes it ask for gigabytes. This walk refuses such claims: every
 * element takes at least one byte, so a container cannot honestly claim more
 * elements than bytes remain. It keeps one counter per open container in a
 * fixed array (no recursion, no allocation), so its own cost is linear in
 * the message and constant in memory whatever the input.
 */
#include "proto/proto.h"

#include <stdint.h>

/* Big-endian unsigned integer of n bytes (1, 2, 4 or 8) at p. */
static uint64_t check_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

drape_err proto_check(const void *buf, size_t len, size_t max_len, drape_error *err)
{
	const uint8_t *b = buf;
	/* need[d] counts the objects still expected inside the container open
	 * at nesting level d; level 0 is the message itself, which holds one. */
	uint64_t need[PROTO_MAX_DEPTH + 1];
	unsigned depth = 0;
	size_t pos = 0;
	uint64_t objects = 0;

	if (max_len == 0)
		max_len = PROTO_DEFAULT_MAX_MESSAGE;
	if (len > max_len)
		return drape_error_setf(err, DRAPE_ETOOLARGE,
					"message: %zu bytes exceeds the limit of %zu bytes", len, max_len);
	if (len == 0 || b == NULL)
		return drape_error_setf(err, DRAPE_ETRUNCATED, "message: empty");

	need[0] = 1;
	for (;;) {
		while (depth > 0 && need[depth] == 0)
			depth--;
		if (depth == 0 && need[0] == 0)
			break;
		if (pos >= len)
			return drape_error_setf(err, DRAPE_ETRUNCATED,
						"message: ends at byte %zu inside a container still "
						"expecting %llu objects",
						pos, (unsigned long long)need[depth]);
		if (++objects > PROTO_MAX_OBJECTS)
			return drape_error_setf(err, DRAPE_ETOOLARGE,
						"message: more than %u msgpack objects",
						(unsigned)PROTO_MAX_OBJECTS);
		need[depth]--;

		const size_t at = pos;
		const uint8_t t = b[pos++];
		const size_t rest = len - pos;
		unsigned lenbytes = 0;   /* size of a length or count field */
		uint64_t payload = 0;    /* bytes of str/bin/ext data or a fixed value */
		uint64_t elems = 0;      /* objects inside a container */
		bool container = false;
		bool is_map = false;

		if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
			/* positive/negative fixint, nil, false, true: the byte alone */
		} else if (t <= 0x8f) {
			container = is_map = true;
			elems = (uint64_t)(t & 0x0f) * 2u;
		} else if (t <= 0x9f) {
			container = true;
			elems = t & 0x0f;
		} else if (t <= 0xbf) {
			payload = t & 0x1f;
		} else {
			switch (t) {
			case 0xc1:
				return drape_error_setf(err, DRAPE_EPROTO,
							"message: byte %zu: 0xc1 is not a msgpack type", at);
			case 0xc4: case 0xd9: lenbytes = 1; break; /* bin8, str8 */
			case 0xc5: case 0xda: lenbytes = 2; break; /* bin16, str16 */
			case 0xc6: case 0xdb: lenbytes = 4; break; /* bin32, str32 */
			case 0xc7: lenbytes = 1; payload = 1; break; /* ext8: length, type */
			case 0xc8: lenbytes = 2; payload = 1; break;
			case 0xc9: lenbytes = 4; payload = 1; break;
			case 0xca: payload = 4; break;  /* float32 */
			case 0xcb: payload = 8; break;  /* float64 */
			case 0xcc: case 0xd0: payload = 1; break;
			case 0xcd: case 0xd1: payload = 2; break;
			case 0xce: case 0xd2: payload = 4; break;
			case 0xcf: case 0xd3: payload = 8; break;
			case 0xd4: payload = 2; break;  /* fixext1: type + 1 */
			case 0xd5: payload = 3; break;
			case 0xd6: payload = 5; break;
			case 0xd7: payload = 9; break;
			case 0xd8: payload = 17; break;
			case 0xdc: container = true; lenbytes = 2; break;
			case 0xdd: container = true; lenbytes = 4; break;
			case 0xde: container = is_map = true; lenbytes = 2; break;
			case 0xdf: container = is_map = true; lenbytes = 4; break;
			default:
				/* Every byte value is covered above; this keeps the
				 * compiler and a future reader honest. */
				return drape_error_setf(err, DRAPE_EPROTO,
							"message: byte %zu: unknown type 0x%02x", at, t);
			}
		}

		if (lenbytes > rest)
			return drape_error_setf(err, DRAPE_ETRUNCATED,
						"message: byte %zu: header of type 0x%02x cut short", at, t);
		if (lenbytes > 0) {
			uint64_t n = check_be(b + pos, lenbytes);
			pos += lenbytes;
			if (container)
				elems = is_map ? n * 2u : n;
			else
				payload += n;
		}
		if (payload > len - pos)
			return drape_error_setf(err, DRAPE_ETRUNCATED,
						"message: byte %zu: object claims %llu bytes but %zu remain",
						at, (unsigned long long)payload, len - pos);
		pos += (size_t)payload;

		if (container) {
			if (depth + 1 > PROTO_MAX_DEPTH)
				return drape_error_setf(err, DRAPE_ETOODEEP,
							"message: byte %zu: containers nested deeper than %d",
							at, PROTO_MAX_DEPTH);
			if (elems > len - pos)
				return drape_error_setf(err, DRAPE_ETRUNCATED,
							"message: byte %zu: %s claims %llu %s but only %zu "
							"bytes remain",
							at, is_map ? "map" : "array",
							(unsigned long long)(is_map ? elems / 2u : elems),
							is_map ? "entries" : "elements", len - pos);
			if (elems > 0)
				need[++depth] = elems;
		}
	}
	if (pos != len)
		return drape_error_setf(err, DRAPE_EPROTO,
					"message: %zu bytes left over after the message ended at byte %zu",
					len - pos, pos);
	return DRAPE_OK;
}
