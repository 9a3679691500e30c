/*
 * draped: the drape simulation daemon. See `draped --help` and
 * ../shared/ARCHITECTURE.md; the work is in the other server/ files.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"
#include "server/log.h"
#include "server/server.h"
#include "server/tls.h"

/*
 * Makes sure descriptors 0, 1 and 2 are open (on /dev/null when they were
 * not). Started with one of them closed, the daemon would hand that number
 * to a socket or a frame cache, and its log lines (stderr) would be written
 * into it. Returns false if /dev/null cannot be opened.
 */
static bool srv_stdio_guard(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1)
			continue;
		int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (n < 0)
			return false;
		/* open returns the lowest free number, which is fd itself. */
		if (n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	if (!srv_stdio_guard())
		return SRV_EXIT_SOFTWARE;
	srv_config cfg;
	char msg[1024];
	srv_config_default(&cfg);
	srv_config_rc rc = srv_config_parse(&cfg, argc, argv, msg, sizeof msg);
	if (rc != SRV_CONFIG_OK) {
		fprintf(stderr, "draped: %s\n(see draped --help)\n", msg);
		srv_config_free(&cfg);
		return (int)rc;
	}
	if (cfg.show_help) {
		srv_config_usage(argv[0]);
		srv_config_free(&cfg);
		return 0;
	}
	if (cfg.show_version) {
		printf("draped " SRV_VERSION " (%s)\n", drape_sim_build());
		srv_config_free(&cfg);
		return 0;
	}
	rc = srv_config_finish(&cfg, msg, sizeof msg);
	if (rc != SRV_CONFIG_OK) {
		fprintf(stderr, "draped: %s\n", msg);
		srv_config_free(&cfg);
		return (int)rc;
	}
	srv_log_set_verbose(cfg.verbose);
	int tls_code = srv_tls_open(&cfg, msg, sizeof msg);
	if (tls_code != SRV_EXIT_OK) {
		fprintf(stderr, "draped: %s\n", msg);
		srv_config_free(&cfg);
		return tls_code;
	}
	if (cfg.check_config) {
		/* Everything a start reads has been read and checked; the
		 * sockets are not opened (a running daemon may hold them). */
		printf("draped: configuration OK (%s%s)\n", cfg.config_file ? "config file " : "no config file",
		       cfg.config_file ? cfg.config_file : "");
		srv_tls_close(&cfg);
		srv_config_free(&cfg);
		return 0;
	}
	srv_log_detect_journal();
	if (cfg.log_format != NULL) {
		srv_log_format f = SRV_LOG_TEXT;
		srv_log_format_parse(cfg.log_format, &f);
		srv_log_set_format(f);
	}
	if (cfg.log_file != NULL) {
		int e = srv_log_open(cfg.log_file);
		if (e != 0) {
			fprintf(stderr, "draped: --log-file %s: %s\n", cfg.log_file, strerror(e));
			srv_tls_close(&cfg);
			srv_config_free(&cfg);
			return SRV_EXIT_CANTCREAT;
		}
	}
	if (cfg.config_file != NULL)
		srv_info("config file %s", cfg.config_file);
	/* --allow-remote let these through protected mode: say so on every
	 * start, so nobody runs an open box without knowing it. */
	for (size_t i = 0; i < cfg.listen_count + cfg.stream_count; i++) {
		const char *u = i < cfg.listen_count ? cfg.listen[i] : cfg.stream[i - cfg.listen_count];
		if (!srv_config_url_exposed(&cfg, u))
			continue;
		const bool tls_ok = srv_config_url_is_tls(u) && cfg.tls != NULL;
		const bool token_ok = cfg.auth_token != NULL;
		srv_warn("WARNING: %s is reachable from other machines without %s (--allow-remote given): "
			 "anyone who can reach it can %s",
			 u, !tls_ok && !token_ok ? "TLS and an auth token" : !tls_ok ? "TLS" : "an auth token",
			 token_ok ? "read the token and every frame off the network" : "read and change every session");
	}
	if (srv_config_ipc_mode_warning(&cfg, msg, sizeof msg))
		srv_warn("%s", msg);
	/* libuv sizes its threadpool from this variable at the first
	 * uv_queue_work, so it must be set before the loop starts. Twice the
	 * solver workers: each solving session's output stage (scheduler.c)
	 * then finds a thread at once instead of waiting behind a solve; the
	 * scheduler still starts at most --threads solves. */
	char threads[16];
	const uint32_t pool = cfg.threads > 512 ? 1024u : 2u * cfg.threads;
	snprintf(threads, sizeof threads, "%u", (unsigned)pool);
	setenv("UV_THREADPOOL_SIZE", threads, 1);

	srv_server srv;
	int code = srv_server_init(&srv, &cfg);
	/* A SIGHUP reload parses the same command line again (reload.h). */
	srv.argc = argc;
	srv.argv = argv;
	if (code == SRV_EXIT_OK)
		code = srv_server_run(&srv);
	srv_server_free(&srv);
	srv_tls_close(&cfg);
	srv_config_free(&cfg);
	return code;
}
