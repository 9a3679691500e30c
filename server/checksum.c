/*
 * FNV-1a 64 (Fowler, Noll, Vo): tiny, no table, good enough to detect torn
 * writes and bit rot, which is all the state files need (they are not
 * authenticated; the state directory is private, mode 0700).
 */
#include "server/checksum.h"

uint64_t srv_fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
