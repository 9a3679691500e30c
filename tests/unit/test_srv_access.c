/*
 * draped's access rules as pure functions: the constant-time auth token
 * comparison, TLS option checks, tls+tcp:// stream URL derivation and the
 * protected-mode matrix (which address needs what). The daemon-level
 * behaviour is in tests/integration/test_access.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"
#include "tests/unit/check.h"

static char token_path[64];

/* Parses argv (NULL-terminated) and finishes; the finish result. */
static srv_config_rc configure(srv_config *c, char *msg, const char **argv)
{
	int argc = 0;
	while (argv[argc] != NULL)
		argc++;
	srv_config_default(c);
	srv_config_rc rc = srv_config_parse(c, argc, (char **)argv, msg, 512);
	if (rc != SRV_CONFIG_OK)
		return rc;
	return srv_config_finish(c, msg, 512);
}

static void test_auth_compare(void)
{
	srv_config c;
	srv_config_default(&c);
	CHECK(srv_config_auth_ok(&c, NULL, 0)); /* no token configured: open */
	c.auth_token = (char *)"abcdef";
	c.auth_token_len = 6;
	CHECK(srv_config_auth_ok(&c, (const uint8_t *)"abcdef", 6));
	CHECK(!srv_config_auth_ok(&c, NULL, 0));
	CHECK(!srv_config_auth_ok(&c, (const uint8_t *)"", 0));
	CHECK(!srv_config_auth_ok(&c, (const uint8_t *)"abcde", 5));
	CHECK(!srv_config_auth_ok(&c, (const uint8_t *)"abcdefg", 7));
	/* Bytes past the end of a short guess read as 0, so a guess padded
	 * with NULs must still fail on its length. */
	CHECK(!srv_config_auth_ok(&c, (const uint8_t *)"abcdef\0", 7));
	for (int i = 0; i < 6; i++) {
		uint8_t g[6];
		memcpy(g, "abcdef", 6);
		g[i] ^= 1;
		CHECKF(!srv_config_auth_ok(&c, g, 6), "byte %d changed", i);
	}
}

static void test_tls_options(void)
{
	srv_config c;
	char msg[512];
	const char *a1[] = {"draped", "--listen", "tls+tcp://127.0.0.1:7450", NULL};
	CHECK(configure(&c, msg, a1) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--tls-cert") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a2[] = {"draped", "--tls-cert", "x.crt", NULL};
	CHECK(configure(&c, msg, a2) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--tls-key") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a3[] = {"draped", "--tls-ca", "ca.crt", NULL};
	CHECK(configure(&c, msg, a3) == SRV_CONFIG_USAGE);
	srv_config_free(&c);
	/* The files are read later (srv_tls_open), so finish accepts names. */
	const char *a4[] = {"draped", "--listen", "tls+tcp://127.0.0.1:7450", "--tls-cert", "x.crt",
			    "--tls-key", "x.key", NULL};
	CHECKF(configure(&c, msg, a4) == SRV_CONFIG_OK, "%s", msg);
	/* No PUB stream unless asked for: frames go through frames.get. */
	CHECK(c.stream_count == 0);
	srv_config_free(&c);
	/* The same keys in a config file. */
	srv_config_default(&c);
	CHECK(srv_config_apply_json(&c, "{\"tls-cert\": \"a.crt\", \"tls-key\": \"a.key\", \"tls-ca\": \"ca.crt\"}",
				    msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(strcmp(c.tls_cert, "a.crt") == 0 && strcmp(c.tls_key, "a.key") == 0 && strcmp(c.tls_ca, "ca.crt") == 0);
	srv_config_free(&c);
}

static void test_url_kinds(void)
{
	CHECK(srv_config_url_is_local("tls+tcp://127.0.0.1:1"));
	CHECK(srv_config_url_is_local("tls+tcp://localhost:1"));
	CHECK(!srv_config_url_is_local("tls+tcp://0.0.0.0:1"));
	CHECK(!srv_config_url_is_local("tls+tcp://10.1.2.3:1"));
	CHECK(!srv_config_url_is_local("tcp://:1"));
	CHECK(!srv_config_url_is_local("tcp://*:1"));
	CHECK(srv_config_url_is_tls("tls+tcp://h:1") && srv_config_url_is_tls("wss://h:1/x"));
	CHECK(!srv_config_url_is_tls("tcp://h:1") && !srv_config_url_is_tls("ws://h:1/x"));
}

/* An open PUB stream (--stream) serves every session to whoever connects:
 * refused with an auth token, and on a non-loopback address even with
 * --allow-remote; the message names --stream and the URL. */
static void test_stream_refused_where_it_would_leak(void)
{
	srv_config c;
	char msg[512];
	char tok[] = "/tmp/drape-test-token-XXXXXX";
	int fd = mkstemp(tok);
	CHECK(fd >= 0 && write(fd, "secret\n", 7) == 7);
	close(fd);
	const char *a1[] = {"draped", "--listen", "ipc:///tmp/x", "--stream", "ipc:///tmp/x.stream",
			    "--auth-token-file", tok, NULL};
	CHECK(configure(&c, msg, a1) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--stream ipc:///tmp/x.stream") != NULL && strstr(msg, "--auth-token-file") != NULL,
	       "%s", msg);
	srv_config_free(&c);
	const char *a2[] = {"draped", "--stream", "tcp://0.0.0.0:7451", "--allow-remote", NULL};
	CHECK(configure(&c, msg, a2) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--stream tcp://0.0.0.0:7451") != NULL && strstr(msg, "loopback") != NULL, "%s", msg);
	srv_config_free(&c);
	/* Without a token, on loopback or ipc, it is the user's choice. */
	const char *a3[] = {"draped", "--stream", "tcp://127.0.0.1:7451", "--stream", "ipc:///tmp/x.stream", NULL};
	CHECKF(configure(&c, msg, a3) == SRV_CONFIG_OK, "%s", msg);
	CHECK(c.stream_count == 2);
	srv_config_free(&c);
	unlink(tok);
}

/* Which non-loopback listener starts without --allow-remote. */
static void test_protected_matrix(void)
{
	static const struct {
		const char *url;
		bool tls, token, ok;
	} rows[] = {
		{"tcp://0.0.0.0:7450", false, false, false},
		{"tcp://0.0.0.0:7450", true, true, false}, /* TLS elsewhere does not cover plain tcp */
		{"tcp://0.0.0.0:7450", false, true, false},
		{"tls+tcp://0.0.0.0:7450", true, false, false},
		{"tls+tcp://0.0.0.0:7450", true, true, true},
		{"tls+tcp://192.0.2.7:7450", true, true, true},
		{"tcp://127.0.0.1:7450", false, false, true},
		{"tls+tcp://127.0.0.1:7450", true, false, true},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *argv[16];
		int n = 0;
		argv[n++] = "draped";
		argv[n++] = "--listen";
		argv[n++] = rows[i].url;
		if (rows[i].tls) {
			argv[n++] = "--tls-cert";
			argv[n++] = "x.crt";
			argv[n++] = "--tls-key";
			argv[n++] = "x.key";
		}
		if (rows[i].token) {
			argv[n++] = "--auth-token-file";
			argv[n++] = token_path;
		}
		/* A TLS listener beside plain tcp needs the certificate for
		 * itself, but must not cover the plain one. */
		if (rows[i].tls && strncmp(rows[i].url, "tcp", 3) == 0) {
			argv[n++] = "--listen";
			argv[n++] = "tls+tcp://127.0.0.1:7460";
		}
		argv[n] = NULL;
		srv_config c;
		char msg[512] = "";
		srv_config_rc rc = configure(&c, msg, argv);
		CHECKF((rc == SRV_CONFIG_OK) == rows[i].ok, "row %zu (%s tls %d token %d): rc %d %s", i,
		       rows[i].url, rows[i].tls, rows[i].token, (int)rc, msg);
		if (!rows[i].ok)
			CHECKF(strstr(msg, "--allow-remote") != NULL, "%s", msg);
		/* --allow-remote lets every row start, and the exposed ones are
		 * the ones the daemon warns about. */
		if (rc == SRV_CONFIG_OK)
			CHECK(!srv_config_url_exposed(&c, rows[i].url));
		srv_config_free(&c);
		argv[n++] = "--allow-remote";
		argv[n] = NULL;
		rc = configure(&c, msg, argv);
		CHECKF(rc == SRV_CONFIG_OK, "row %zu with --allow-remote: %s", i, msg);
		CHECK(srv_config_url_exposed(&c, rows[i].url) == !rows[i].ok);
		srv_config_free(&c);
	}
}

static const check_test tests[] = {
	CHECK_TEST(test_auth_compare),
	CHECK_TEST(test_tls_options),
	CHECK_TEST(test_url_kinds),
	CHECK_TEST(test_protected_matrix),
	CHECK_TEST(test_stream_refused_where_it_would_leak),
};

int main(int argc, char **argv)
{
	snprintf(token_path, sizeof token_path, "/tmp/drape-token-XXXXXX");
	int fd = mkstemp(token_path);
	if (fd < 0 || write(fd, "tok\n", 4) != 4) {
		printf("FAIL setup: cannot write a token file\n0 passed, 1 failed\n");
		return 1;
	}
	close(fd);
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	unlink(token_path);
	return rc;
}
