/* Users-file token hashes (userhash.h). */
#include "proto/userhash.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

bool proto_user_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > PROTO_USER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		const char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

void proto_user_digest(const uint8_t *salt, size_t salt_len, const uint8_t *token, size_t token_len,
		       uint8_t out[PROTO_SHA256_SIZE])
{
	proto_sha256 c;
	proto_sha256_init(&c);
	proto_sha256_update(&c, salt, salt_len);
	proto_sha256_update(&c, token, token_len);
	proto_sha256_final(&c, out);
}

drape_err proto_user_line(const char *name, const char *role, const uint8_t *token, size_t token_len, char *out,
			  drape_error *err)
{
	if (!proto_user_name_ok(name))
		return drape_error_setf(err, DRAPE_EINVAL, "NAME '%.40s': 1 to %d letters, digits, '.', '_' or '-'",
					name, PROTO_USER_NAME_MAX);
	if (strcmp(role, "user") != 0 && strcmp(role, "admin") != 0)
		return drape_error_setf(err, DRAPE_EINVAL, "ROLE '%.40s': expected user or admin", role);
	if (token_len == 0 || token_len > 256)
		return drape_error_setf(err, DRAPE_EINVAL, "token: 1 to 256 bytes, got %zu", token_len);
	uint8_t salt[16];
	if (getrandom(salt, sizeof salt, 0) != (ssize_t)sizeof salt)
		return drape_error_setf(err, DRAPE_EINTERNAL, "getrandom failed: %s", strerror(errno));
	uint8_t d[PROTO_SHA256_SIZE];
	proto_user_digest(salt, sizeof salt, token, token_len, d);
	static const char hx[] = "0123456789abcdef";
	size_t k = (size_t)snprintf(out, PROTO_USER_LINE_MAX, "%s %s sha256$", name, role);
	for (size_t i = 0; i < sizeof salt; i++) {
		out[k++] = hx[salt[i] >> 4];
		out[k++] = hx[salt[i] & 15];
	}
	out[k++] = '$';
	for (size_t i = 0; i < sizeof d; i++) {
		out[k++] = hx[d[i] >> 4];
		out[k++] = hx[d[i] & 15];
	}
	out[k] = '\0';
	return DRAPE_OK;
}
