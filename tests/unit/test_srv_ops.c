/*
 * draped's operations layer in isolation: the Prometheus exposition and
 * the health decision (metrics.c), the log line formats (log.c), the
 * sd_notify datagrams (notify.c) and the options that drive them (config.c).
 * The daemon-level behaviour (signals, reload under load, promtool) is in
 * tests/integration/service.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "drape/error.h"
#include "server/config.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/notify.h"
#include "tests/unit/check.h"

/* The value of the first sample line that starts with "name " (or the
 * exact series "name{...} "), or -1. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

static void test_histogram_buckets_cumulative(void)
{
	char *text = NULL;
	size_t len = 0;
	CHECK(srv_metrics_render(&text, &len));
	const double before_inf = sample(text, "drape_frame_solve_seconds_bucket{le=\"+Inf\"}");
	const double before_10ms = sample(text, "drape_frame_solve_seconds_bucket{le=\"0.01\"}");
	const double before_sum = sample(text, "drape_frame_solve_seconds_sum");
	free(text);
	/* 3 ms, 7 ms, 2 s and a minute and a half (past the last bound). */
	srv_metrics_observe(SRV_H_SOLVE, 0.003);
	srv_metrics_observe(SRV_H_SOLVE, 0.007);
	srv_metrics_observe(SRV_H_SOLVE, 2.0);
	srv_metrics_observe(SRV_H_SOLVE, 90.0);
	CHECK(srv_metrics_render(&text, &len));
	CHECK(strlen(text) == len);
	CHECK_NEAR(sample(text, "drape_frame_solve_seconds_bucket{le=\"0.01\"}") - before_10ms, 2, 0);
	CHECK_NEAR(sample(text, "drape_frame_solve_seconds_bucket{le=\"2.5\"}") - before_10ms, 3, 0);
	CHECK_NEAR(sample(text, "drape_frame_solve_seconds_bucket{le=\"60\"}") - before_10ms, 3, 0);
	CHECK_NEAR(sample(text, "drape_frame_solve_seconds_bucket{le=\"+Inf\"}") - before_inf, 4, 0);
	CHECK_NEAR(sample(text, "drape_frame_solve_seconds_count"),
		   sample(text, "drape_frame_solve_seconds_bucket{le=\"+Inf\"}"), 0);
	CHECK_NEAR(sample(text, "drape_frame_solve_seconds_sum") - before_sum, 92.01, 1e-6);
	free(text);
}

static void test_counters_errors_and_requests(void)
{
	char *text = NULL;
	size_t len = 0;
	CHECK(srv_metrics_render(&text, &len));
	const double solved0 = sample(text, "drape_frames_solved_total");
	const double eperm0 = sample(text, "drape_errors_total{code=\"EPERM\"}");
	const double runs0 = sample(text, "drape_requests_total{op=\"session.run\"}");
	free(text);
	CHECK(solved0 >= 0 && eperm0 >= 0 && runs0 >= 0);
	srv_metrics_add(SRV_M_FRAMES_SOLVED, 5);
	srv_metrics_error(DRAPE_EPERM);
	srv_metrics_error(DRAPE_EPERM);
	srv_metrics_error(0);     /* not an error: not counted */
	srv_metrics_error(-1000); /* out of range: ignored, never a crash */
	srv_metrics_request(PROTO_OP_SESSION_RUN);
	srv_metrics_request((proto_op)9999);
	CHECK(srv_metrics_render(&text, &len));
	CHECK_NEAR(sample(text, "drape_frames_solved_total") - solved0, 5, 0);
	CHECK_NEAR(sample(text, "drape_errors_total{code=\"EPERM\"}") - eperm0, 2, 0);
	CHECK_NEAR(sample(text, "drape_requests_total{op=\"session.run\"}") - runs0, 1, 0);
	/* Every family a scraper relies on is there, with HELP and TYPE. */
	static const char *const families[] = {
		"drape_sessions", "drape_queue_length", "drape_queue_wait_seconds", "drape_frames_solved_total",
		"drape_frames_served_total", "drape_frame_solve_seconds", "drape_request_duration_seconds",
		"drape_received_bytes_total", "drape_sent_bytes_total", "drape_memory_estimate_bytes",
		"drape_resident_memory_bytes", "drape_field_cache_hits_total", "drape_errors_total",
	};
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
		char head[160];
		snprintf(head, sizeof head, "# TYPE %s ", families[i]);
		CHECKF(strstr(text, head) != NULL, "no %s", head);
	}
	/* The RSS is read from /proc, so it is a real, positive number. */
	CHECK(sample(text, "drape_resident_memory_bytes") > 1e5);
	free(text);
}

static void test_gauges_published_by_the_loop(void)
{
	srv_metrics_gauges g;
	memset(&g, 0, sizeof g);
	g.sessions[PROTO_STATE_RUNNING] = 3;
	g.sessions[PROTO_STATE_QUEUED] = 2;
	g.queue_length = 2;
	g.memory_estimate = 123456789;
	srv_metrics_count_user(&g, "ana");
	srv_metrics_count_user(&g, "bob");
	srv_metrics_count_user(&g, "ana");
	srv_metrics_count_user(&g, ""); /* no owner: not counted */
	srv_metrics_publish(&g, srv_metrics_now_ms());
	char *text = NULL;
	size_t len = 0;
	CHECK(srv_metrics_render(&text, &len));
	CHECK_NEAR(sample(text, "drape_sessions{state=\"running\"}"), 3, 0);
	CHECK_NEAR(sample(text, "drape_sessions{state=\"queued\"}"), 2, 0);
	CHECK_NEAR(sample(text, "drape_queue_length"), 2, 0);
	CHECK_NEAR(sample(text, "drape_memory_estimate_bytes"), 123456789, 0);
	CHECK_NEAR(sample(text, "drape_user_sessions{user=\"ana\"}"), 2, 0);
	CHECK_NEAR(sample(text, "drape_user_sessions{user=\"bob\"}"), 1, 0);
	CHECK(strstr(text, "(other)") == NULL || strstr(text, "drape_user_sessions{user=\"(other)\"}") == NULL);
	free(text);

	/* Past 256 users the rest are summed in one label. */
	memset(&g, 0, sizeof g);
	for (int i = 0; i < SRV_METRICS_MAX_USERS + 3; i++) {
		char name[16];
		snprintf(name, sizeof name, "u%d", i);
		srv_metrics_count_user(&g, name);
	}
	srv_metrics_publish(&g, srv_metrics_now_ms());
	CHECK(srv_metrics_render(&text, &len));
	CHECK_NEAR(sample(text, "drape_user_sessions{user=\"(other)\"}"), 3, 0);
	CHECK_NEAR(sample(text, "drape_user_sessions{user=\"u0\"}"), 1, 0);
	free(text);
}

static void test_health_bound(void)
{
	CHECK(srv_metrics_health_status(0, 10000, 5000) == 503); /* never ticked */
	CHECK(srv_metrics_health_status(10000, 10000, 5000) == 200);
	CHECK(srv_metrics_health_status(10000, 15000, 5000) == 200);
	CHECK(srv_metrics_health_status(10000, 15001, 5000) == 503);
	CHECK(srv_metrics_health_status(10000, 9000, 5000) == 200); /* tick after the reading */
}

static void test_log_json_escapes(void)
{
	char line[512];
	srv_log_set_format(SRV_LOG_JSON);
	size_t n = srv_log_format_line(line, sizeof line, SRV_LOG_WARN, "say \"hi\"\\ \n\x01 end");
	srv_log_set_format(SRV_LOG_TEXT);
	CHECK(n > 0 && line[n - 1] == '\n');
	line[n] = '\0';
	CHECKF(strstr(line, "\"level\":\"warn\"") != NULL, "%s", line);
	CHECKF(strstr(line, "\"msg\":\"say \\\"hi\\\"\\\\ \\u000a\\u0001 end\"}") != NULL, "%s", line);
	/* One line: the only newline is the last byte. */
	CHECK(memchr(line, '\n', n - 1) == NULL);
}

static void test_log_text_cut_not_split(void)
{
	char line[64];
	char big[300];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	big[10] = '\n';
	size_t n = srv_log_format_line(line, sizeof line, SRV_LOG_INFO, big);
	CHECK(n <= sizeof line);
	CHECK(line[n - 1] == '\n' && memchr(line, '\n', n - 1) == NULL);
}

static void test_log_journal_prefix(void)
{
	/* JOURNAL_STREAM naming our stderr turns the prefixes on; naming
	 * anything else (an inherited variable) leaves them off. */
	char path[] = "/tmp/drape-ops-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	int saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	struct stat st;
	fstat(fd, &st);
	char js[64];
	snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	srv_log_detect_journal();
	const bool on = srv_log_journal();
	char line[256];
	size_t n = srv_log_format_line(line, sizeof line, SRV_LOG_ERROR, "boom");
	line[n] = '\0';
	setenv("JOURNAL_STREAM", "1:2", 1);
	srv_log_detect_journal();
	const bool off = !srv_log_journal();
	unsetenv("JOURNAL_STREAM");
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	unlink(path);
	CHECK(on && off);
	CHECKF(strncmp(line, "<3>error boom", 13) == 0, "%s", line);
}

static void test_notify_datagram(void)
{
	char path[108];
	snprintf(path, sizeof path, "/tmp/drape-notify-%d", (int)getpid());
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	unsetenv("NOTIFY_SOCKET");
	const int none = srv_notify("READY=1");
	setenv("NOTIFY_SOCKET", path, 1);
	const int sent = srv_notify("READY=1\nSTATUS=x");
	char buf[64] = { 0 };
	ssize_t r = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	const int bad = srv_notify("READY=1");
	unsetenv("NOTIFY_SOCKET");
	close(fd);
	unlink(path);
	CHECK(none == 0 && sent == 1 && bad == -EINVAL);
	CHECK(r == 16 && strcmp(buf, "READY=1\nSTATUS=x") == 0);
	/* The watchdog interval, and only for this process. */
	setenv("WATCHDOG_USEC", "400000", 1);
	unsetenv("WATCHDOG_PID");
	CHECK(srv_notify_watchdog_usec() == 400000);
	setenv("WATCHDOG_PID", "1", 1);
	CHECK(getpid() == 1 || srv_notify_watchdog_usec() == 0);
	setenv("WATCHDOG_USEC", "abc", 1);
	unsetenv("WATCHDOG_PID");
	CHECK(srv_notify_watchdog_usec() == 0);
	unsetenv("WATCHDOG_USEC");
}

static srv_config_rc parse_finish(srv_config *c, char *msg, int argc, const char **argv)
{
	srv_config_default(c);
	srv_config_rc rc = srv_config_parse(c, argc, (char **)argv, msg, 512);
	if (rc == SRV_CONFIG_OK)
		rc = srv_config_finish(c, msg, 512);
	return rc;
}

static void test_config_ops_options(void)
{
	setenv("DRAPED_CONFIG", "", 1);
	srv_config c;
	char msg[512];
	const char *a1[] = { "draped", "--log-format", "xml" };
	CHECK(parse_finish(&c, msg, 3, a1) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--log-format") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a2[] = { "draped", "--metrics", "tcp://0.0.0.0:9100" };
	CHECK(parse_finish(&c, msg, 3, a2) == SRV_CONFIG_USAGE);
	CHECKF(strstr(msg, "--metrics") != NULL && strstr(msg, "loopback") != NULL, "%s", msg);
	srv_config_free(&c);
	const char *a3[] = { "draped", "--metrics", "udp://127.0.0.1:9100" };
	CHECK(parse_finish(&c, msg, 3, a3) == SRV_CONFIG_USAGE);
	srv_config_free(&c);
	const char *a4[] = { "draped", "--metrics", "tcp://127.0.0.1:9100", "--log-format", "json",
			     "--log-file", "/tmp/x.log", "--check-config" };
	CHECKF(parse_finish(&c, msg, 8, a4) == SRV_CONFIG_OK, "%s", msg);
	CHECK(c.check_config && strcmp(c.log_format, "json") == 0 && strcmp(c.log_file, "/tmp/x.log") == 0);
	CHECK(c.config_file == NULL);
	srv_config_free(&c);
	/* check-config belongs on the command line, not in a file. */
	srv_config_default(&c);
	CHECK(srv_config_apply_json(&c, "{\"check-config\": true}", msg, sizeof msg) == SRV_CONFIG_USAGE);
	srv_config_free(&c);
}

static void test_config_default_file(void)
{
	char path[] = "/tmp/drape-ops-cfg-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char *json = "{ \"max-sessions\": 7 }";
	CHECK(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
	close(fd);
	srv_config c;
	char msg[512];
	const char *argv[] = { "draped" };
	setenv("DRAPED_CONFIG", path, 1);
	srv_config_rc rc = parse_finish(&c, msg, 1, argv);
	const bool read = rc == SRV_CONFIG_OK && c.max_sessions == 7 && c.config_file != NULL &&
			  strcmp(c.config_file, path) == 0;
	srv_config_free(&c);
	/* --config wins over the default file. */
	char other[] = "/tmp/drape-ops-cfg2-XXXXXX";
	fd = mkstemp(other);
	const char *json2 = "{ \"max-sessions\": 9 }";
	const bool w2 = fd >= 0 && write(fd, json2, strlen(json2)) == (ssize_t)strlen(json2);
	close(fd);
	const char *argv2[] = { "draped", "--config", other };
	rc = parse_finish(&c, msg, 3, argv2);
	const bool explicit_wins = w2 && rc == SRV_CONFIG_OK && c.max_sessions == 9;
	srv_config_free(&c);
	/* A default file that does not exist is no error. */
	setenv("DRAPED_CONFIG", "/nonexistent/drape/draped.json", 1);
	rc = parse_finish(&c, msg, 1, argv);
	const bool absent_ok = rc == SRV_CONFIG_OK && c.max_sessions == 256 && c.config_file == NULL;
	srv_config_free(&c);
	setenv("DRAPED_CONFIG", "", 1);
	unlink(path);
	unlink(other);
	CHECK(read && explicit_wins && absent_ok);
}

static const check_test tests[] = {
	CHECK_TEST(test_histogram_buckets_cumulative),
	CHECK_TEST(test_counters_errors_and_requests),
	CHECK_TEST(test_gauges_published_by_the_loop),
	CHECK_TEST(test_health_bound),
	CHECK_TEST(test_log_json_escapes),
	CHECK_TEST(test_log_text_cut_not_split),
	CHECK_TEST(test_log_journal_prefix),
	CHECK_TEST(test_notify_datagram),
	CHECK_TEST(test_config_ops_options),
	CHECK_TEST(test_config_default_file),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
