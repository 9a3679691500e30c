/*
 * Users and roles (--users-file). Each line of the file is
 *
 *   NAME ROLE sha256$SALT$HASH
 *
 * NAME 1 to 32 of [A-Za-z0-9._-], ROLE `user` or `admin`, SALT 8 to 64
 * bytes as hex, HASH = SHA-256(SALT bytes || token) as 64 hex digits
 * (proto/userhash.h; `drape admin hash-token NAME ROLE` writes such a line). Blank lines and
 * lines starting with `#` are skipped. A request is authenticated by its
 * "auth" token: the user whose hash it matches. The table never holds a
 * token, only its salted hash, so a leaked users file does not let anyone
 * in.
 *
 * A table is immutable once loaded: srv_users_load builds a new one without
 * touching any other, so a reload (SIGHUP) can swap tables and keep the old
 * one when the new file is bad. Loop thread for the lookups; loading is
 * pure and may run anywhere.
 */
#ifndef DRAPE_SRV_USERS_H
#define DRAPE_SRV_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "proto/userhash.h"

#define SRV_USER_NAME_MAX PROTO_USER_NAME_MAX
#define SRV_USER_SALT_MAX PROTO_USER_SALT_MAX
#define SRV_USERS_MAX 4096

typedef enum srv_role {
	SRV_ROLE_USER = 0,
	SRV_ROLE_ADMIN = 1
} srv_role;

typedef struct srv_user {
	char name[SRV_USER_NAME_MAX + 1];
	srv_role role;
	uint8_t salt[SRV_USER_SALT_MAX];
	size_t salt_len;
	uint8_t hash[PROTO_SHA256_SIZE];
} srv_user;

typedef struct srv_users {
	srv_user *items;
	size_t count;
	char *path; /* the file it was read from */
} srv_users;

/*
 * Reads path into a new table. On success *out owns it (srv_users_free).
 * On failure *out is untouched and err (EINVAL for a bad line, naming the
 * file, the line number and what is wrong with it; EIO for an unreadable
 * file) says why. An empty table (no user line) is refused: it would lock
 * everyone out.
 */
drape_err srv_users_load(const char *path, srv_users **out, drape_error *err);

/* Parses the text of a users file (name for messages). As srv_users_load. */
drape_err srv_users_parse(const char *text, size_t len, const char *name, srv_users **out, drape_error *err);

void srv_users_free(srv_users *u);

/* A deep copy of u (NULL for NULL or out of memory), for threads that must
 * not read the live table a reload swaps (the browser view's JSON API). */
srv_users *srv_users_copy(const srv_users *u);

/*
 * The user whose hash token matches, or NULL. Every user's hash is computed
 * and compared in full, whatever matched before, so the time taken depends
 * on the table's size and the token's length, never on how much of it is
 * right or on which user it belongs to.
 */
const srv_user *srv_users_auth(const srv_users *u, const uint8_t *token, size_t token_len);

/* Finds a user by name (NULL if none). */
const srv_user *srv_users_find(const srv_users *u, const char *name);

const char *srv_role_name(srv_role r);

#endif
