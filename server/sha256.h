/*
 * SHA-256 (FIPS 180-4), for the salted token hashes of the users file
 * (users.h). Small and self-contained: the dependency list holds no crypto
 * library the daemon links (openssl is there as a command-line tool only).
 */
#ifndef DRAPE_SRV_SHA256_H
#define DRAPE_SRV_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SRV_SHA256_SIZE 32

typedef struct srv_sha256 {
	uint32_t h[8];
	uint64_t len;     /* bytes hashed so far */
	uint8_t buf[64];  /* the partial block */
	size_t used;
} srv_sha256;

void srv_sha256_init(srv_sha256 *c);
void srv_sha256_update(srv_sha256 *c, const void *data, size_t len);
void srv_sha256_final(srv_sha256 *c, uint8_t out[SRV_SHA256_SIZE]);
/* One call: out = SHA-256(data). */
void srv_sha256_once(const void *data, size_t len, uint8_t out[SRV_SHA256_SIZE]);

#endif
