/*
 * draped's configuration: defaults, command line, JSON file, precedence,
 * stream URL derivation and the protected-mode rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"
#include "tests/unit/check.h"

static srv_config_rc parse(srv_config *c, char *msg, int argc, const char **argv)
{
	srv_config_default(c);
	return srv_config_parse(c, argc, (char **)argv, msg, 512);
}

static void test_defaults(void)
{
	srv_config c;
	char msg[512];
	const char *argv[] = { "draped", NULL };
	CHECK(parse(&c, msg, 1, argv) == SRV_CONFIG_OK);
	CHECK(srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(c.listen_count == 1 && strcmp(c.listen[0], "tcp://127.0.0.1:7450") == 0);
	/* No open PUB stream by default (PROTOCOL.md section 9). */
	CHECK(c.stream_count == 0);
	/* 64 MiB holds a million-vertex session.create (about 36 MB) while
	 * bounding what one unauthenticated connection can make nng reserve. */
	CHECK(c.idle_timeout_s == 3600 && c.max_message == 64u * 1024u * 1024u);
	CHECK(c.orphan_timeout_s == 30);
	CHECK(c.max_connections_per_peer == 64);
	/* Connections x max-message (what unauthenticated clients can make
	 * nng hold) stays within the budget, between 64 and 256 connections. */
	CHECK(c.max_connections >= 64 && c.max_connections <= 256);
	CHECK(c.max_connections == 64 || c.max_connections * c.max_message <= c.max_memory);
	CHECK(srv_config_default_connections(24ull << 30, 64u << 20) == 256);
	CHECK(srv_config_default_connections(12ull << 30, 64u << 20) == 192);
	CHECK(srv_config_default_connections(2ull << 30, 64u << 20) == 64);
	CHECK(srv_config_default_connections(0, 64u << 20) == 256);
	/* The memory budget defaults to half of this machine's RAM. */
	const uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	CHECKF(c.max_memory == ram / 2 && c.max_memory > 0, "max_memory %llu, RAM %llu",
	       (unsigned long long)c.max_memory, (unsigned long long)ram);
	CHECK(c.threads >= 1 && c.state_dir != NULL && c.checkpoint_every == 10);
	/* The shared solver pool defaults to the number of cores. */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	CHECKF(c.pool_threads == (uint32_t)(cores < 1 ? 1 : cores > 256 ? 256 : cores),
	       "pool_threads %u, %ld cores", c.pool_threads, cores);
	srv_config_free(&c);
}

static void test_command_line(void)
{
	srv_config c;
	char msg[512];
	const char *argv[] = { "draped", "--listen", "ipc:///tmp/a", "--listen=tcp://127.0.0.1:9000",
			       "--threads", "3", "--idle-timeout", "0", "--max-vertices", "1000", "--verbose",
			       "--ipc-mode", "0600", "--pool-threads", "1", "--max-memory", "0",
			       "--max-connections", "10", "--max-connections-per-peer", "3", NULL };
	CHECK(parse(&c, msg, 21, argv) == SRV_CONFIG_OK);
	CHECK(srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(c.listen_count == 2 && c.stream_count == 0);
	CHECK(c.threads == 3 && c.idle_timeout_s == 0 && c.max_vertices == 1000 && c.verbose);
	CHECK(c.ipc_mode == 0600 && c.pool_threads == 1);
	/* An explicit 0 means no budget and is not replaced by the default. */
	CHECK(c.max_memory == 0 && c.max_connections == 10 && c.max_connections_per_peer == 3);
	srv_config_free(&c);
}

static void test_bad_values(void)
{
	srv_config c;
	char msg[512];
	const char *a1[] = { "draped", "--threads", "many", NULL };
	CHECK(parse(&c, msg, 3, a1) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--threads") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *ap[] = { "draped", "--pool-threads", "257", NULL };
	CHECK(parse(&c, msg, 3, ap) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--pool-threads") != NULL && strstr(msg, "256") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a2[] = { "draped", "--frobnicate", NULL };
	CHECK(parse(&c, msg, 2, a2) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--frobnicate") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a3[] = { "draped", "--max-message", "-5", NULL };
	CHECK(parse(&c, msg, 3, a3) == SRV_CONFIG_USAGE);
	srv_config_free(&c);
	const char *a4[] = { "draped", "--listen", NULL };
	CHECK(parse(&c, msg, 2, a4) == SRV_CONFIG_USAGE);
	srv_config_free(&c);
	const char *a5[] = { "draped", "--config", "/nonexistent/drape.json", NULL };
	CHECK(parse(&c, msg, 3, a5) == SRV_CONFIG_NOINPUT);
	srv_config_free(&c);
}

static void test_json_and_precedence(void)
{
	char path[] = "/tmp/drape-cfg-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char *json = "{\"listen\": [\"ipc:///tmp/x\", \"ipc:///tmp/y\"], \"threads\": 5, "
			   "\"idle-timeout\": 60, \"verbose\": true, \"max-sessions\": 7}";
	CHECK(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
	close(fd);
	srv_config c;
	char msg[512];
	const char *argv[] = { "draped", "--config", path, "--threads", "2", NULL };
	srv_config_rc rc = parse(&c, msg, 5, argv);
	unlink(path);
	CHECKF(rc == SRV_CONFIG_OK, "%s", msg);
	CHECK(c.listen_count == 2 && strcmp(c.listen[1], "ipc:///tmp/y") == 0);
	CHECK(c.threads == 2); /* the command line wins */
	CHECK(c.idle_timeout_s == 60 && c.verbose && c.max_sessions == 7);
	srv_config_free(&c);

	srv_config_default(&c);
	CHECK(srv_config_apply_json(&c, "{\"thread\": 1}", msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "\"thread\"") != NULL, "%s", msg);
	CHECK(srv_config_apply_json(&c, "{\"threads\": -1}", msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECK(srv_config_apply_json(&c, "{\"threads\": 1.5}", msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECK(srv_config_apply_json(&c, "[1, 2]", msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECK(srv_config_apply_json(&c, "{\"verbose\": 1}", msg, sizeof msg) == SRV_CONFIG_USAGE);
	srv_config_free(&c);
}

static void test_protected_mode(void)
{
	srv_config c;
	char msg[512];
	const char *a1[] = { "draped", "--listen", "tcp://0.0.0.0:7450", NULL };
	CHECK(parse(&c, msg, 3, a1) == SRV_CONFIG_OK);
	CHECK(srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--allow-remote") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a2[] = { "draped", "--listen", "tcp://0.0.0.0:7450", "--allow-remote", NULL };
	CHECK(parse(&c, msg, 4, a2) == SRV_CONFIG_OK);
	CHECK(srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	srv_config_free(&c);
	CHECK(srv_config_url_is_local("tcp://127.0.0.1:1"));
	CHECK(srv_config_url_is_local("tcp://localhost:1"));
	CHECK(srv_config_url_is_local("tcp://[::1]:1"));
	CHECK(srv_config_url_is_local("ipc:///tmp/s"));
	CHECK(!srv_config_url_is_local("tcp://10.0.0.1:1"));
	CHECK(!srv_config_url_is_local("ws://127.0.0.1:1/x"));
}

/* Protected mode decides on resolved addresses, never on how the host is
 * spelled: a name that merely starts with "127." is not loopback. */
static void test_protected_mode_resolves_hosts(void)
{
	CHECK(!srv_config_url_is_local("tcp://127.example.com:7450"));
	CHECK(!srv_config_url_is_local("tcp://127.0.0.1.example.com:7450"));
	CHECK(!srv_config_url_is_local("tls+tcp://127.example.com:7450"));
	CHECK(!srv_config_url_is_local("tcp://localhost.example.com:7450"));
	CHECK(srv_config_url_is_local("tcp://localhost:7450"));
	CHECK(srv_config_url_is_local("tls+tcp://localhost:7450"));
	CHECK(srv_config_url_is_local("tcp://127.0.0.2:7450"));
	CHECK(srv_config_url_is_local("tcp4://127.0.0.1:7450"));
	CHECK(srv_config_url_is_local("tcp://[::1]:7450"));
	CHECK(srv_config_url_is_local("tcp6://[::1]:7450"));
	CHECK(srv_config_url_is_local("tcp://[::ffff:127.0.0.1]:7450"));
	CHECK(!srv_config_url_is_local("tcp://[::ffff:10.0.0.1]:7450"));
	CHECK(!srv_config_url_is_local("tcp://128.0.0.1:7450"));
	CHECK(!srv_config_url_is_local("tcp://0.0.0.0:7450"));
	CHECK(!srv_config_url_is_local("tcp://[::]:7450"));
	CHECK(!srv_config_url_is_local("tcp://:7450"));
	CHECK(!srv_config_url_is_local("tcp://*:7450"));
	CHECK(!srv_config_url_is_local("tcp://[::1:7450"));
	CHECK(!srv_config_url_is_local("tcp://127.0.0.1"));
	CHECK(srv_config_host_is_loopback("localhost"));
	CHECK(!srv_config_host_is_loopback("127.example.com"));
	CHECK(!srv_config_host_is_loopback(""));

	/* finish refuses such a listener unless --allow-remote. */
	srv_config c;
	char msg[512];
	const char *a1[] = { "draped", "--listen", "tcp://127.example.com:7450", NULL };
	CHECK(parse(&c, msg, 3, a1) == SRV_CONFIG_OK);
	CHECK(srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "127.example.com") != NULL && strstr(msg, "--allow-remote") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a2[] = { "draped", "--listen", "tcp://localhost:7450", NULL };
	CHECK(parse(&c, msg, 3, a2) == SRV_CONFIG_OK);
	CHECKF(srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK, "%s", msg);
	srv_config_free(&c);
}

static void test_orphan_timeout_option(void)
{
	srv_config c;
	char msg[512];
	const char *a1[] = { "draped", "--orphan-timeout", "5", NULL };
	CHECK(parse(&c, msg, 3, a1) == SRV_CONFIG_OK && c.orphan_timeout_s == 5);
	srv_config_free(&c);
	const char *a2[] = { "draped", "--orphan-timeout", "-1", NULL };
	CHECK(parse(&c, msg, 3, a2) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--orphan-timeout") != NULL, "%s", msg);
	srv_config_free(&c);
	srv_config_default(&c);
	CHECK(srv_config_apply_json(&c, "{\"orphan-timeout\": 0}", msg, sizeof msg) == SRV_CONFIG_OK &&
	      c.orphan_timeout_s == 0);
	srv_config_free(&c);
}

/* Issue 20's options: interrupted runs resume unless told not to; a users
 * file is loaded by finish, refused with --auth-token-file, and a bad one
 * stops the start naming its line. */
static void test_users_and_resume_options(void)
{
	srv_config c;
	char msg[512];
	const char *a0[] = { "draped", NULL };
	CHECK(parse(&c, msg, 1, a0) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(c.resume_interrupted && c.users == NULL && c.max_sessions_per_user == 32);
	srv_config_free(&c);
	const char *a1[] = { "draped", "--no-resume-interrupted", NULL };
	CHECK(parse(&c, msg, 2, a1) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(!c.resume_interrupted);
	srv_config_free(&c);

	char dir[] = "/tmp/drape-cfg-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char users[64], bad[64], tok[64];
	snprintf(users, sizeof users, "%s/users", dir);
	snprintf(bad, sizeof bad, "%s/bad", dir);
	snprintf(tok, sizeof tok, "%s/tok", dir);
	FILE *f = fopen(users, "w");
	fprintf(f, "ana user sha256$00112233445566778899aabbccddeeff$"
		   "e8ff5f102da8edb2f987a450a9c4550b8bf1da694e915bd8f199a0171fc1e372\n");
	fclose(f);
	f = fopen(bad, "w");
	fprintf(f, "# ok\nana user\n");
	fclose(f);
	f = fopen(tok, "w");
	fprintf(f, "secret\n");
	fclose(f);
	const char *a2[] = { "draped", "--users-file", users, "--max-sessions-per-user", "3", NULL };
	CHECK(parse(&c, msg, 5, a2) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(c.users != NULL && c.max_sessions_per_user == 3);
	srv_config_free(&c);
	const char *a3[] = { "draped", "--users-file", users, "--auth-token-file", tok, NULL };
	CHECK(parse(&c, msg, 5, a3) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--users-file") != NULL && strstr(msg, "--auth-token-file") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a4[] = { "draped", "--users-file", bad, NULL };
	CHECK(parse(&c, msg, 3, a4) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "line 2") != NULL && strstr(msg, "expected 3 fields") != NULL, "%s", msg);
	srv_config_free(&c);
	unlink(users);
	unlink(bad);
	unlink(tok);
	rmdir(dir);
}

/* An ipc mode wider than 0660 is worth a WARNING line; 0660 and narrower
 * are not, nor a mode that applies to no ipc:// socket. */
static void test_ipc_mode_warning(void)
{
	srv_config c;
	char msg[512], line[512];
	const char *a1[] = { "draped", "--listen", "ipc:///tmp/d.sock", "--ipc-mode", "0666", NULL };
	CHECK(parse(&c, msg, 5, a1) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(srv_config_ipc_mode_warning(&c, line, sizeof line));
	CHECKF(strncmp(line, "WARNING: --ipc-mode 0666 is wider than 0660", 43) == 0 &&
		       strstr(line, "every local user") != NULL && strstr(line, "ipc:///tmp/d.sock") != NULL,
	       "%s", line);
	c.ipc_mode = 0670;
	CHECK(srv_config_ipc_mode_warning(&c, line, sizeof line));
	CHECKF(strstr(line, "0670 is wider than 0660") != NULL, "%s", line);
	c.ipc_mode = 0660;
	CHECK(!srv_config_ipc_mode_warning(&c, line, sizeof line));
	c.ipc_mode = 0600;
	CHECK(!srv_config_ipc_mode_warning(&c, line, sizeof line));
	srv_config_free(&c);
	const char *a2[] = { "draped", "--listen", "tcp://127.0.0.1:7450", "--ipc-mode", "0666", NULL };
	CHECK(parse(&c, msg, 5, a2) == SRV_CONFIG_OK && srv_config_finish(&c, msg, sizeof msg) == SRV_CONFIG_OK);
	CHECK(!srv_config_ipc_mode_warning(&c, line, sizeof line));
	srv_config_free(&c);
}

static const check_test tests[] = {
	CHECK_TEST(test_defaults),	     CHECK_TEST(test_command_line),   CHECK_TEST(test_bad_values),
	CHECK_TEST(test_json_and_precedence), CHECK_TEST(test_protected_mode), CHECK_TEST(test_protected_mode_resolves_hosts),
	CHECK_TEST(test_orphan_timeout_option), CHECK_TEST(test_ipc_mode_warning), CHECK_TEST(test_users_and_resume_options),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
