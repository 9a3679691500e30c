/*
 * SHA-256 (FIPS 180-4), for the salted token hashes of draped's users file
 * (proto/userhash.h). Small and self-contained: the dependency list holds
 * no crypto library (openssl is there as a command-line tool only).
 */
#ifndef DRAPE_PROTO_SHA256_H
#define DRAPE_PROTO_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_SHA256_SIZE 32

typedef struct proto_sha256 {
	uint32_t h[8];
	uint64_t len;     /* bytes hashed so far */
	uint8_t buf[64];  /* the partial block */
	size_t used;
} proto_sha256;

void proto_sha256_init(proto_sha256 *c);
void proto_sha256_update(proto_sha256 *c, const void *data, size_t len);
void proto_sha256_final(proto_sha256 *c, uint8_t out[PROTO_SHA256_SIZE]);
/* One call: out = SHA-256(data). */
void proto_sha256_once(const void *data, size_t len, uint8_t out[PROTO_SHA256_SIZE]);

#endif
