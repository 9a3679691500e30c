/* The users file and token authentication (users.h). */
#include "server/users.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *srv_role_name(srv_role r)
{
	return r == SRV_ROLE_ADMIN ? "admin" : "user";
}

static int srv_hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Decodes exactly n hex digits into n / 2 bytes; false on a bad digit. */
static bool srv_hex_decode(const char *s, size_t n, uint8_t *out)
{
	if (n % 2 != 0)
		return false;
	for (size_t i = 0; i < n; i += 2) {
		const int hi = srv_hexval(s[i]), lo = srv_hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* Splits the next whitespace-separated field of [*p, end); false at end. */
static bool srv_field(const char **p, const char *end, const char **f, size_t *n)
{
	const char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == end)
		return false;
	const char *e = s;
	while (e < end && *e != ' ' && *e != '\t')
		e++;
	*f = s;
	*n = (size_t)(e - s);
	*p = e;
	return true;
}

/* One line (without its newline) into *u; false with why filled. */
static bool srv_users_line_parse(const char *s, const char *end, srv_user *u, char *why, size_t why_len)
{
	const char *f[4];
	size_t n[4];
	int k = 0;
	const char *p = s;
	while (k < 4 && srv_field(&p, end, &f[k], &n[k]))
		k++;
	if (k != 3) {
		snprintf(why, why_len, "expected 3 fields (NAME ROLE sha256$SALT$HASH), found %s", k > 3 ? "more" : k == 0 ? "none" : k == 1 ? "1" : "2");
		return false;
	}
	memset(u, 0, sizeof *u);
	if (n[0] > SRV_USER_NAME_MAX) {
		snprintf(why, why_len, "name: longer than %d characters", SRV_USER_NAME_MAX);
		return false;
	}
	memcpy(u->name, f[0], n[0]);
	if (!proto_user_name_ok(u->name)) {
		snprintf(why, why_len, "name '%s': only letters, digits, '.', '_' and '-' are allowed", u->name);
		return false;
	}
	if (n[1] == 4 && memcmp(f[1], "user", 4) == 0)
		u->role = SRV_ROLE_USER;
	else if (n[1] == 5 && memcmp(f[1], "admin", 5) == 0)
		u->role = SRV_ROLE_ADMIN;
	else {
		snprintf(why, why_len, "role '%.*s': expected user or admin", (int)(n[1] > 32 ? 32 : n[1]), f[1]);
		return false;
	}
	/* sha256$SALT$HASH */
	const char *h = f[2];
	const size_t hn = n[2];
	if (hn < 7 || memcmp(h, "sha256$", 7) != 0) {
		snprintf(why, why_len, "hash: expected sha256$SALT$HASH (drape admin hash-token writes it)");
		return false;
	}
	const char *salt = h + 7;
	const char *dollar = memchr(salt, '$', hn - 7);
	if (dollar == NULL) {
		snprintf(why, why_len, "hash: expected sha256$SALT$HASH, the second '$' is missing");
		return false;
	}
	const size_t sn = (size_t)(dollar - salt);
	const char *hex = dollar + 1;
	const size_t xn = hn - 7 - sn - 1;
	if (sn < 16 || sn > 2 * SRV_USER_SALT_MAX || !srv_hex_decode(salt, sn, u->salt)) {
		snprintf(why, why_len, "hash: the salt must be 8 to %d bytes written as hex digits", SRV_USER_SALT_MAX);
		return false;
	}
	u->salt_len = sn / 2;
	if (xn != 2 * PROTO_SHA256_SIZE || !srv_hex_decode(hex, xn, u->hash)) {
		snprintf(why, why_len, "hash: the digest must be 64 hex digits");
		return false;
	}
	return true;
}

drape_err srv_users_parse(const char *text, size_t len, const char *name, srv_users **out, drape_error *err)
{
	srv_users *t = calloc(1, sizeof *t);
	size_t cap = 0;
	if (t == NULL || (t->path = strdup(name)) == NULL) {
		free(t);
		return drape_error_setf(err, DRAPE_ENOMEM, "users file %s: out of memory", name);
	}
	const char *p = text, *end = text + len;
	unsigned line = 0;
	while (p < end) {
		line++;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *next = nl ? nl + 1 : end;
		if (e > p && e[-1] == '\r')
			e--;
		const char *s = p;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		p = next;
		if (s == e || *s == '#')
			continue;
		if (memchr(s, '\0', (size_t)(e - s)) != NULL) {
			srv_users_free(t);
			return drape_error_setf(err, DRAPE_EINVAL, "users file %s line %u: a NUL byte", name, line);
		}
		srv_user u;
		char why[200];
		if (!srv_users_line_parse(s, e, &u, why, sizeof why)) {
			srv_users_free(t);
			return drape_error_setf(err, DRAPE_EINVAL, "users file %s line %u: %s", name, line, why);
		}
		if (srv_users_find(t, u.name) != NULL) {
			srv_users_free(t);
			return drape_error_setf(err, DRAPE_EINVAL, "users file %s line %u: user '%s' is already defined",
						name, line, u.name);
		}
		if (t->count == SRV_USERS_MAX) {
			srv_users_free(t);
			return drape_error_setf(err, DRAPE_EINVAL, "users file %s line %u: more than %d users", name,
						line, SRV_USERS_MAX);
		}
		if (t->count == cap) {
			cap = cap ? cap * 2 : 8;
			srv_user *items = realloc(t->items, cap * sizeof *items);
			if (items == NULL) {
				srv_users_free(t);
				return drape_error_setf(err, DRAPE_ENOMEM, "users file %s: out of memory", name);
			}
			t->items = items;
		}
		t->items[t->count++] = u;
	}
	if (t->count == 0) {
		srv_users_free(t);
		return drape_error_setf(err, DRAPE_EINVAL, "users file %s: no user defined (it would let nobody in)",
					name);
	}
	*out = t;
	return DRAPE_OK;
}

drape_err srv_users_load(const char *path, srv_users **out, drape_error *err)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return drape_error_setf(err, DRAPE_EIO, "users file %s: %s", path, strerror(errno));
	/* A users file of SRV_USERS_MAX lines is well under 2 MiB. */
	const size_t max = 4u << 20;
	char *buf = malloc(max + 1);
	if (buf == NULL) {
		fclose(f);
		return drape_error_setf(err, DRAPE_ENOMEM, "users file %s: out of memory", path);
	}
	const size_t n = fread(buf, 1, max + 1, f);
	const bool bad = ferror(f) != 0;
	fclose(f);
	drape_err rc;
	if (bad)
		rc = drape_error_setf(err, DRAPE_EIO, "users file %s: read error", path);
	else if (n > max)
		rc = drape_error_setf(err, DRAPE_EINVAL, "users file %s: larger than %zu bytes", path, max);
	else
		rc = srv_users_parse(buf, n, path, out, err);
	free(buf);
	return rc;
}

void srv_users_free(srv_users *u)
{
	if (u == NULL)
		return;
	free(u->items);
	free(u->path);
	free(u);
}

srv_users *srv_users_copy(const srv_users *u)
{
	if (u == NULL)
		return NULL;
	srv_users *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->items = malloc((u->count ? u->count : 1) * sizeof *c->items);
	c->path = u->path != NULL ? strdup(u->path) : NULL;
	if (c->items == NULL || (u->path != NULL && c->path == NULL)) {
		srv_users_free(c);
		return NULL;
	}
	if (u->count > 0)
		memcpy(c->items, u->items, u->count * sizeof *c->items);
	c->count = u->count;
	return c;
}

const srv_user *srv_users_auth(const srv_users *u, const uint8_t *token, size_t token_len)
{
	if (u == NULL || token == NULL)
		return NULL;
	/* No early exit: every user is hashed and compared byte by byte, and
	 * the match is selected without a branch on secret data. */
	size_t found = SIZE_MAX;
	for (size_t i = 0; i < u->count; i++) {
		uint8_t d[PROTO_SHA256_SIZE];
		proto_user_digest(u->items[i].salt, u->items[i].salt_len, token, token_len, d);
		volatile uint8_t diff = 0;
		for (size_t j = 0; j < PROTO_SHA256_SIZE; j++)
			diff |= (uint8_t)(d[j] ^ u->items[i].hash[j]);
		/* mask is all ones when diff == 0. */
		const size_t mask = (size_t)0 - (size_t)(((unsigned)diff - 1u) >> 8 & 1u);
		found = (found & ~mask) | (i & mask);
	}
	return found == SIZE_MAX ? NULL : &u->items[found];
}

const srv_user *srv_users_find(const srv_users *u, const char *name)
{
	if (u == NULL)
		return NULL;
	for (size_t i = 0; i < u->count; i++)
		if (strcmp(u->items[i].name, name) == 0)
			return &u->items[i];
	return NULL;
}
