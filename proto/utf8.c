/*
 * UTF-8 checks for the wire's text: msgpack `str` must hold UTF-8, and
 * strict decoders (JavaScript's TextDecoder with fatal, Python's msgpack
 * with raw=False) refuse a reply otherwise. Error messages may quote bytes a
 * client sent (an unknown op name), so the one place that encodes them
 * (proto_wire_pack_error) escapes what is not well-formed.
 *
 * Well-formed means the Unicode Standard's table 3-7 (section 3.9): no
 * overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
 */
#include <stdio.h>

#include "proto/proto.h"

size_t proto_utf8_seq(const unsigned char *p, size_t n)
{
	if (n == 0)
		return 0;
	const unsigned char b = p[0];
	if (b < 0x80)
		return 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* bounds of the second byte */
	if (b >= 0xc2 && b <= 0xdf) {
		len = 2;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3;
		if (b == 0xe0)
			lo = 0xa0; /* overlong below U+0800 */
		else if (b == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4;
		if (b == 0xf0)
			lo = 0x90; /* overlong below U+10000 */
		else if (b == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0; /* a continuation byte, C0, C1 or F5..FF */
	}
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

size_t proto_utf8_check(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t at = 0;
	while (at < n) {
		const size_t k = proto_utf8_seq(p + at, n - at);
		if (k == 0)
			return at;
		at += k;
	}
	return n;
}

size_t proto_utf8_escape(const char *s, size_t n, char *out, size_t cap)
{
	if (cap == 0)
		return 0;
	const unsigned char *p = (const unsigned char *)s;
	size_t at = 0, w = 0;
	while (at < n) {
		const size_t k = proto_utf8_seq(p + at, n - at);
		/* A well-formed sequence is copied whole; one ill-formed byte
		 * becomes the four characters \xNN. Nothing is cut in half. */
		const size_t need = k ? k : 4;
		if (w + need > cap - 1)
			break;
		if (k != 0) {
			for (size_t i = 0; i < k; i++)
				out[w++] = (char)p[at + i];
			at += k;
		} else {
			snprintf(out + w, 5, "\\x%02x", p[at]);
			w += 4;
			at++;
		}
	}
	out[w] = '\0';
	return w;
}
