/*
 * The salted token hash of a users-file line, shared by the two sides that
 * must agree on it: `drape admin hash-token` writes lines, draped
 * (server/users.c) reads them and checks request tokens against them.
 *
 *   NAME ROLE sha256$SALT$HASH
 *
 * NAME 1 to 32 of [A-Za-z0-9._-]; ROLE `user` or `admin`; SALT 8 to 64
 * bytes in hex; HASH = SHA-256(SALT bytes || token bytes) in hex (64
 * digits). Pure functions; no global state.
 */
#ifndef DRAPE_PROTO_USERHASH_H
#define DRAPE_PROTO_USERHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "proto/sha256.h"

#define PROTO_USER_NAME_MAX 32
#define PROTO_USER_SALT_MAX 64
#define PROTO_USER_LINE_MAX 256

/* True when name is a valid user name. */
bool proto_user_name_ok(const char *name);

/* out = SHA-256(salt || token). */
void proto_user_digest(const uint8_t *salt, size_t salt_len, const uint8_t *token, size_t token_len,
		       uint8_t out[PROTO_SHA256_SIZE]);

/*
 * Writes the users-file line for name, role ("user" or "admin") and token
 * (1 to 256 bytes), with a fresh random 16-byte salt, into out (at least
 * PROTO_USER_LINE_MAX bytes; no newline). EINVAL naming NAME, ROLE or the
 * token when one is not valid; out is then untouched.
 */
drape_err proto_user_line(const char *name, const char *role, const uint8_t *token, size_t token_len, char *out,
			  drape_error *err);

#endif
