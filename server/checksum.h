/*
 * FNV-1a 64: the checksum in every file draped writes (frame records,
 * session inputs, checkpoints), so a torn or corrupted file is detected and
 * skipped instead of being loaded as garbage.
 */
#ifndef DRAPE_SRV_CHECKSUM_H
#define DRAPE_SRV_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define SRV_FNV_INIT 0xcbf29ce484222325ull

/* Continues hash h over n bytes (start with SRV_FNV_INIT). */
uint64_t srv_fnv1a64(uint64_t h, const void *data, size_t n);

#endif
