/*
 * Checksums in every file draped writes, so a torn or corrupted file is
 * detected and skipped instead of being loaded as garbage: FNV-1a 64 for
 * session inputs, checkpoints and version-1 frame records, XXH64 for
 * version-2 frame records (frames.c), which are hashed once per frame.
 */
#ifndef DRAPE_SRV_CHECKSUM_H
#define DRAPE_SRV_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define SRV_FNV_INIT 0xcbf29ce484222325ull

/* Continues hash h over n bytes (start with SRV_FNV_INIT). */
uint64_t srv_fnv1a64(uint64_t h, const void *data, size_t n);
/* XXH64 of n bytes with a seed, as xxHash's XXH64() on little-endian hosts. */
uint64_t srv_xxh64(const void *data, size_t n, uint64_t seed);

#endif
