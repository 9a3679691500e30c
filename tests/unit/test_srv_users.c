/*
 * Users and roles (server/users.h, proto/userhash.h): SHA-256 against the
 * FIPS 180-2 test vectors, the users file's lines (every kind of bad line
 * is refused naming the file and the line), token authentication, and a
 * load that fails leaving the table it would replace alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proto/sha256.h"
#include "proto/userhash.h"
#include "server/users.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* FIPS 180-2 appendix B: "abc", the 448-bit two-block message, and a
 * million 'a' (fed in uneven pieces, to cross block boundaries). */
static void test_sha256_vectors(void)
{
	uint8_t d[PROTO_SHA256_SIZE];
	char h[65];
	proto_sha256_once("abc", 3, d);
	hex(d, sizeof d, h);
	CHECKF(strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "%s", h);
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	proto_sha256_once(m, strlen(m), d);
	hex(d, sizeof d, h);
	CHECKF(strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0, "%s", h);
	proto_sha256_once("", 0, d);
	hex(d, sizeof d, h);
	CHECKF(strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0, "%s", h);
	proto_sha256 c;
	proto_sha256_init(&c);
	char a[997];
	memset(a, 'a', sizeof a);
	size_t left = 1000000;
	while (left > 0) {
		size_t n = left < sizeof a ? left : sizeof a;
		proto_sha256_update(&c, a, n);
		left -= n;
	}
	proto_sha256_final(&c, d);
	hex(d, sizeof d, h);
	CHECKF(strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "%s", h);
}

/* A line that proto_user_line writes is read back, and authenticates its
 * token and only it. */
static void test_line_roundtrip_and_auth(void)
{
	char l1[PROTO_USER_LINE_MAX], l2[PROTO_USER_LINE_MAX], text[4 * PROTO_USER_LINE_MAX];
	drape_error err;
	CHECK(proto_user_line("ana", "user", (const uint8_t *)"secret-a", 8, l1, &err) == DRAPE_OK);
	CHECK(proto_user_line("boss", "admin", (const uint8_t *)"secret-b", 8, l2, &err) == DRAPE_OK);
	snprintf(text, sizeof text, "# studio users\n\n%s\n   \n%s\r\n", l1, l2);
	srv_users *u = NULL;
	CHECKF(srv_users_parse(text, strlen(text), "t", &u, &err) == DRAPE_OK, "%s", err.message);
	if (u == NULL)
		return;
	CHECK(u->count == 2);
	const srv_user *a = srv_users_auth(u, (const uint8_t *)"secret-a", 8);
	const srv_user *b = srv_users_auth(u, (const uint8_t *)"secret-b", 8);
	CHECK(a != NULL && strcmp(a->name, "ana") == 0 && a->role == SRV_ROLE_USER);
	CHECK(b != NULL && strcmp(b->name, "boss") == 0 && b->role == SRV_ROLE_ADMIN);
	/* A prefix, an extension, one changed byte, nothing: nobody. */
	CHECK(srv_users_auth(u, (const uint8_t *)"secret-", 7) == NULL);
	CHECK(srv_users_auth(u, (const uint8_t *)"secret-aa", 9) == NULL);
	CHECK(srv_users_auth(u, (const uint8_t *)"secret-c", 8) == NULL);
	CHECK(srv_users_auth(u, NULL, 0) == NULL);
	/* Two lines for the same token get different salts. */
	char l3[PROTO_USER_LINE_MAX];
	CHECK(proto_user_line("ana", "user", (const uint8_t *)"secret-a", 8, l3, &err) == DRAPE_OK);
	CHECK(strcmp(l1, l3) != 0);
	srv_users_free(u);
	/* Bad arguments name themselves. */
	CHECK(proto_user_line("a b", "user", (const uint8_t *)"x", 1, l3, &err) == DRAPE_EINVAL &&
	      strstr(err.message, "NAME") != NULL);
	CHECK(proto_user_line("ana", "root", (const uint8_t *)"x", 1, l3, &err) == DRAPE_EINVAL &&
	      strstr(err.message, "ROLE") != NULL);
}

/* Each bad line is refused with its line number and what is wrong. */
static void test_bad_lines_named(void)
{
	static const char good[] = "ana user sha256$00112233445566778899aabbccddeeff$"
				   "e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n";
	static const struct {
		const char *line;
		const char *says;
	} bad[] = {
		{ "bob user\n", "expected 3 fields" },
		{ "bob user sha256$00112233445566778899aabbccddeeff$00 extra\n", "expected 3 fields" },
		{ "bob superuser sha256$00112233445566778899aabbccddeeff$"
		  "e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n", "role 'superuser'" },
		{ "b/b user sha256$00112233445566778899aabbccddeeff$"
		  "e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n", "name 'b/b'" },
		{ "bob user md5$00112233445566778899aabbccddeeff$"
		  "e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n", "hash: expected sha256$" },
		{ "bob user sha256$0011$e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n", "salt" },
		{ "bob user sha256$00112233445566778899aabbccddeeff$e8ff\n", "digest" },
		{ "bob user sha256$00112233445566778899aabbccddeeff$"
		  "g8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n", "digest" },
		{ "bob user sha256$00112233445566778899aabbccddeeff\n", "second '$'" },
		{ "ana admin sha256$00112233445566778899aabbccddeeff$"
		  "e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n", "already defined" },
	};
	for (size_t i = 0; i < CHECK_COUNT(bad); i++) {
		char text[1024];
		/* The bad line is line 3, after a comment and a good line. */
		snprintf(text, sizeof text, "# users\n%s%s", good, bad[i].line);
		srv_users *u = (srv_users *)&text; /* must stay untouched */
		drape_error err;
		drape_err rc = srv_users_parse(text, strlen(text), "users.txt", &u, &err);
		CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "users.txt line 3:") != NULL &&
			       strstr(err.message, bad[i].says) != NULL,
		       "case %zu: %s: %s", i, drape_err_name(rc), err.message);
		CHECK(u == (srv_users *)&text);
	}
	/* No user at all would lock everyone out. */
	srv_users *u = NULL;
	drape_error err;
	CHECK(srv_users_parse("# nobody\n\n", 10, "e", &u, &err) == DRAPE_EINVAL && u == NULL &&
	      strstr(err.message, "no user") != NULL);
}

/* srv_users_load builds a new table and never touches another: a reload
 * that fails keeps the old one usable. */
static void test_load_keeps_old(void)
{
	char dir[] = "/tmp/drape-users-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/users", dir);
	char line[PROTO_USER_LINE_MAX];
	drape_error err;
	CHECK(proto_user_line("ana", "user", (const uint8_t *)"tok", 3, line, &err) == DRAPE_OK);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	fprintf(f, "%s\n", line);
	fclose(f);
	srv_users *old = NULL;
	CHECKF(srv_users_load(path, &old, &err) == DRAPE_OK, "%s", err.message);
	f = fopen(path, "w");
	fprintf(f, "%s\nbroken\n", line);
	fclose(f);
	srv_users *neu = old;
	CHECK(srv_users_load(path, &neu, &err) == DRAPE_EINVAL && neu == old && strstr(err.message, "line 2") != NULL);
	CHECK(old != NULL && srv_users_auth(old, (const uint8_t *)"tok", 3) != NULL);
	snprintf(line, sizeof line, "%s/missing", dir);
	CHECK(srv_users_load(line, &neu, &err) == DRAPE_EIO && neu == old);
	srv_users_free(old);
	unlink(path);
	rmdir(dir);
}

/* A copy (what the browser view's JSON API reads on nng's threads)
 * authenticates the same tokens as the table, and still does once the
 * table it came from is freed, as a reload frees the old table. */
static void test_copy_outlives_table(void)
{
	char l1[PROTO_USER_LINE_MAX], l2[PROTO_USER_LINE_MAX], text[4 * PROTO_USER_LINE_MAX];
	drape_error err;
	CHECK(proto_user_line("ana", "user", (const uint8_t *)"secret-a", 8, l1, &err) == DRAPE_OK);
	CHECK(proto_user_line("boss", "admin", (const uint8_t *)"secret-b", 8, l2, &err) == DRAPE_OK);
	snprintf(text, sizeof text, "%s\n%s\n", l1, l2);
	srv_users *u = NULL;
	CHECKF(srv_users_parse(text, strlen(text), "t", &u, &err) == DRAPE_OK, "%s", err.message);
	if (u == NULL)
		return;
	srv_users *c = srv_users_copy(u);
	CHECK(c != NULL && c != u && c->items != u->items && c->count == 2);
	srv_users_free(u);
	if (c == NULL)
		return;
	const srv_user *a = srv_users_auth(c, (const uint8_t *)"secret-a", 8);
	const srv_user *b = srv_users_auth(c, (const uint8_t *)"secret-b", 8);
	CHECK(a != NULL && strcmp(a->name, "ana") == 0 && a->role == SRV_ROLE_USER);
	CHECK(b != NULL && strcmp(b->name, "boss") == 0 && b->role == SRV_ROLE_ADMIN);
	CHECK(srv_users_auth(c, (const uint8_t *)"secret-c", 8) == NULL);
	CHECK(c->path != NULL && strcmp(c->path, "t") == 0);
	srv_users_free(c);
	CHECK(srv_users_copy(NULL) == NULL);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_sha256_vectors),
		CHECK_TEST(test_line_roundtrip_and_auth),
		CHECK_TEST(test_bad_lines_named),
		CHECK_TEST(test_load_keeps_old),
		CHECK_TEST(test_copy_outlives_table),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
