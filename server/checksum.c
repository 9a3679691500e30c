/*
 * FNV-1a 64 (Fowler, Noll, Vo): tiny, no table, good enough to detect torn
 * writes and bit rot, which is all the state files need (they are not
 * authenticated; the state directory is private, mode 0700).
 *
 * XXH64 (Yann Collet, xxHash, as specified in doc/xxhash_spec.md of
 * Cyan4973/xxHash): the same job for frame records, which are hashed on
 * every frame and every cache read. FNV-1a takes one dependent multiply per
 * byte (about 1 ms for a 1 MB sheet300 frame); XXH64 runs four independent
 * lanes over 8-byte words, an order of magnitude faster.
 */
#include "server/checksum.h"

#include <string.h>

uint64_t srv_fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define SRV_XXP1 0x9E3779B185EBCA87ull
#define SRV_XXP2 0xC2B2AE3D27D4EB4Full
#define SRV_XXP3 0x165667B19E3779F9ull
#define SRV_XXP4 0x85EBCA77C2B2AE63ull
#define SRV_XXP5 0x27D4EB2F165667C5ull

static uint64_t srv_rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64u - r));
}

/* The spec reads little-endian words; frame records are host-endian and
 * private to this host (frames.h), and draped builds for x86-64 and other
 * little-endian targets, where memcpy gives exactly that. */
static uint64_t srv_read64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t srv_read32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t srv_xxh_round(uint64_t acc, uint64_t input)
{
	acc += input * SRV_XXP2;
	acc = srv_rotl64(acc, 31);
	return acc * SRV_XXP1;
}

static uint64_t srv_xxh_merge(uint64_t acc, uint64_t v)
{
	acc ^= srv_xxh_round(0, v);
	return acc * SRV_XXP1 + SRV_XXP4;
}

uint64_t srv_xxh64(const void *data, size_t n, uint64_t seed)
{
	const unsigned char *p = data;
	const unsigned char *const end = p + n;
	uint64_t h;
	if (n >= 32) {
		uint64_t v1 = seed + SRV_XXP1 + SRV_XXP2, v2 = seed + SRV_XXP2, v3 = seed, v4 = seed - SRV_XXP1;
		const unsigned char *const limit = end - 32;
		do {
			v1 = srv_xxh_round(v1, srv_read64(p));
			v2 = srv_xxh_round(v2, srv_read64(p + 8));
			v3 = srv_xxh_round(v3, srv_read64(p + 16));
			v4 = srv_xxh_round(v4, srv_read64(p + 24));
			p += 32;
		} while (p <= limit);
		h = srv_rotl64(v1, 1) + srv_rotl64(v2, 7) + srv_rotl64(v3, 12) + srv_rotl64(v4, 18);
		h = srv_xxh_merge(h, v1);
		h = srv_xxh_merge(h, v2);
		h = srv_xxh_merge(h, v3);
		h = srv_xxh_merge(h, v4);
	} else {
		h = seed + SRV_XXP5;
	}
	h += (uint64_t)n;
	for (; p + 8 <= end; p += 8) {
		h ^= srv_xxh_round(0, srv_read64(p));
		h = srv_rotl64(h, 27) * SRV_XXP1 + SRV_XXP4;
	}
	if (p + 4 <= end) {
		h ^= (uint64_t)srv_read32(p) * SRV_XXP1;
		h = srv_rotl64(h, 23) * SRV_XXP2 + SRV_XXP3;
		p += 4;
	}
	for (; p < end; p++) {
		h ^= (uint64_t)*p * SRV_XXP5;
		h = srv_rotl64(h, 11) * SRV_XXP1;
	}
	h ^= h >> 33;
	h *= SRV_XXP2;
	h ^= h >> 29;
	h *= SRV_XXP3;
	h ^= h >> 32;
	return h;
}
