/*
 * A program as a DCC plugin is built: it includes the public headers and
 * links ONLY build/libdrape.so (the Makefile's rule for this program; no
 * static library, no nng, msgpack or solver of its own; libdrape.sh checks
 * its DT_NEEDED). Against a real draped ($DRAPED) it loads a scene with
 * drape_scene_load, runs 3 frames and gets DRAPE_EDONE at the end; scenes
 * that the reader or the server refuse leave nothing on the server.
 */
#include "drape/drape.h"
#include "drape/scene.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *draped_path;
static char dir[64];        /* this test's folder: socket, state, log, scenes */
static char url[128];
static pid_t daemon_pid = -1;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void daemon_stop(void)
{
	if (daemon_pid <= 0)
		return;
	kill(daemon_pid, SIGTERM);
	double until = now_ms() + 10000;
	int status;
	while (waitpid(daemon_pid, &status, WNOHANG) == 0) {
		if (now_ms() > until) {
			kill(daemon_pid, SIGKILL);
			waitpid(daemon_pid, &status, 0);
			break;
		}
		sleep_ms(20);
	}
	daemon_pid = -1;
}

static void on_fatal(int sig)
{
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Starts draped on ipc in dir with one extra option (NULL = none) and
 * polls until a client connects (a generous deadline for a loaded box). */
static int daemon_start(const char *opt, const char *val)
{
	char state[128], log[128];
	snprintf(url, sizeof url, "ipc://%s/ctl.sock", dir);
	snprintf(state, sizeof state, "%s/state", dir);
	snprintf(log, sizeof log, "%s/draped.log", dir);
	pid_t pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		const char *argv[] = {draped_path, "--listen", url, "--state-dir", state, opt, val, NULL};
		execv(draped_path, (char *const *)argv);
		_exit(127);
	}
	daemon_pid = pid;
	double until = now_ms() + 30000;
	while (now_ms() < until) {
		drape_client *c;
		if (drape_connect(url, NULL, &c, NULL) == DRAPE_OK) {
			drape_close(c);
			return 1;
		}
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			daemon_pid = -1;
			printf("  draped exited early (see %s)\n", log);
			return 0;
		}
		sleep_ms(50);
	}
	return 0;
}

static int write_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return 0;
	int ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

static uint32_t session_count(drape_client *c)
{
	drape_session_entry *e = NULL;
	uint32_t n = 0;
	if (drape_session_list(c, &e, &n, NULL) != DRAPE_OK)
		return UINT32_MAX;
	free(e);
	return n;
}

/* An 8 x 8 horizontal sheet 1 m square at y = 1 (vertex j * 8 + i at
 * x = -0.5 + i / 7), its left edge (i = 0) pinned, a sphere far below it and
 * a plane under that: 3 frames at 24 fps, 4 substeps. */
#define NX 8
#define NY 8
static const char sheet_scene[] =
	"{\"fps\": 24, \"frames\": 3, \"substeps\": 4, \"iterations\": 10,\n"
	" \"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [8, 8],\n"
	"            \"center\": [0, 1, 0], \"normal\": [0, 1, 0]}},\n"
	"           \"pins\": {\"group\": \"left\"}},\n"
	" \"colliders\": [{\"sphere\": {\"center\": [0, -3, 0], \"radius\": 0.5}},\n"
	"               {\"plane\": {\"point\": [0, -5, 0], \"normal\": [0, 1, 0]}}]}\n";

static void test_version_and_layout_through_the_so(void)
{
	char want[32];
	snprintf(want, sizeof want, "%d.%d.%d", DRAPE_VERSION_MAJOR, DRAPE_VERSION_MINOR, DRAPE_VERSION_PATCH);
	CHECKF(strcmp(drape_version(), want) == 0, "drape_version() = %s, headers %s", drape_version(), want);
	CHECK(drape_abi_struct_size("drape_scene_info") == sizeof(drape_scene_info));
	CHECK(drape_abi_struct_size("drape_status") == sizeof(drape_status));
	CHECK(drape_abi_struct_size("drape_client_opts") == sizeof(drape_client_opts));
	CHECK(drape_abi_struct_size("no_such_struct") == 0);
	CHECK(strcmp(drape_strerror(DRAPE_EDONE), "run finished") == 0);
	/* No client, no path: refused by name, nothing written. */
	drape_session s = {.id = 4242};
	drape_error e;
	CHECK(drape_scene_load(NULL, "x.json", NULL, &s, NULL, &e) == DRAPE_EINVAL);
	CHECKF(strstr(e.message, "client") != NULL, "%s", e.message);
	drape_client *c;
	CHECK_OK(drape_connect(url, NULL, &c, &e));
	drape_err rc = drape_scene_load(c, NULL, NULL, &s, NULL, &e);
	drape_close(c);
	CHECK(rc == DRAPE_EINVAL && strstr(e.message, "path") != NULL);
	CHECK(s.id == 4242);
}

static void test_scene_load_runs_three_frames_then_edone(void)
{
	CHECK(write_file("sheet.json", sheet_scene));
	drape_client *c;
	drape_error e;
	CHECK_OK(drape_connect(url, NULL, &c, &e));
	char path[256];
	snprintf(path, sizeof path, "%s/sheet.json", dir);
	drape_session s;
	drape_scene_info info;
	memset(&info, 0xab, sizeof info);
	drape_err rc = drape_scene_load(c, path, NULL, &s, &info, &e);
	if (rc != DRAPE_OK) {
		drape_close(c);
		CHECKF(0, "drape_scene_load: %s (%s)", e.message, drape_err_name(rc));
	}
	int ok = info.vertex_count == NX * NY && info.triangle_count == 2 * (NX - 1) * (NY - 1) &&
		 info.frames == 3 && info.start_frame == 1 && info.collider_count == 2 &&
		 info.pin_count == NX && info.fps == 24.0f && info.intersections == 0;
	drape_status st;
	drape_err src = drape_session_status(c, s, &st, &e);
	drape_session_entry *list = NULL;
	uint32_t n = 0;
	drape_err lrc = drape_session_list(c, &list, &n, &e);
	int named = lrc == DRAPE_OK && n == 1 && strcmp(list[0].name, "sheet.json") == 0;
	free(list);
	if (!ok || src != DRAPE_OK || st.colliders != 2 || st.vertices != NX * NY || !named) {
		drape_close(c);
		CHECKF(0, "info: %u vertices, %u triangles, %u frames, start %u, %u colliders, %u pins, fps %g; "
			  "status %s: %u colliders; listed %s", info.vertex_count, info.triangle_count, info.frames,
		       info.start_frame, info.collider_count, info.pin_count, (double)info.fps,
		       drape_err_name(src), st.colliders, named ? "by its file name" : "wrong");
	}
	rc = drape_session_run(c, s, info.frames, NULL, &e);
	if (rc != DRAPE_OK) {
		drape_close(c);
		CHECKF(0, "session.run: %s", e.message);
	}
	/* Physics of the first frames (t = 3/24 s): the pinned left edge does
	 * not move at all (inverse mass 0), and the free right edge falls, but
	 * no faster than free fall. With semi-implicit Euler over n substeps of dt the
	 * free-fall drop is g dt^2 n (n + 1) / 2; constraints to the pins,
	 * damping and air drag only hold the cloth back. */
	const double g = 9.81, dt = 1.0 / (24.0 * 4.0);
	double edge_drop[4] = {0};
	uint32_t got = 0;
	for (;;) {
		drape_frame f;
		rc = drape_next_frame(c, s, &f, 60000, &e);
		if (rc != DRAPE_OK)
			break;
		got++;
		int bad = f.index != got || f.vertex_count != NX * NY;
		for (uint32_t j = 0; j < NY && !bad; j++) {
			const float *p = f.positions + (size_t)(j * NX) * 3;
			bad = p[0] != -0.5f || p[1] != 1.0f;
		}
		double sum = 0;
		for (uint32_t j = 0; j < NY && !bad; j++)
			sum += 1.0 - (double)f.positions[(size_t)(j * NX + NX - 1) * 3 + 1];
		if (!bad && got <= 3)
			edge_drop[got] = sum / NY;
		drape_frame_free(&f);
		if (bad || got > 3) {
			drape_close(c);
			CHECKF(0, "frame %u: wrong index, size, or a pinned vertex moved", got);
		}
	}
	drape_close(c);
	CHECKF(rc == DRAPE_EDONE, "after %u frames: %s (%s), want EDONE", got, drape_err_name(rc), e.message);
	CHECK(strstr(e.message, "run finished") != NULL);
	CHECKF(got == 3, "%u frames", got);
	printf("  free edge drop: %.6f %.6f %.6f m (free fall %.6f %.6f %.6f)\n", edge_drop[1], edge_drop[2],
	       edge_drop[3], g * dt * dt * 4 * 5 / 2, g * dt * dt * 8 * 9 / 2, g * dt * dt * 12 * 13 / 2);
	for (uint32_t k = 1; k <= 3; k++) {
		double steps = 4.0 * k, bound = g * dt * dt * steps * (steps + 1) / 2;
		CHECKF(edge_drop[k] > edge_drop[k - 1] && edge_drop[k] <= bound + 1e-6,
		       "frame %u: free edge dropped %.6f m (frame before %.6f), free fall %.6f", k,
		       edge_drop[k], edge_drop[k - 1], bound);
	}
}

/* A scene the reader refuses: the error names the file and the key, and
 * no request reaches the server. */
static void test_bad_scene_leaves_nothing(void)
{
	CHECK(write_file("typo.json", "{\"frames\": 3, \"strech\": 1,\n"
				      " \"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [4, 4],"
				      " \"center\": [0, 1, 0], \"normal\": [0, 0, 1]}}}}\n"));
	drape_client *c;
	drape_error e;
	CHECK_OK(drape_connect(url, NULL, &c, &e));
	uint32_t before = session_count(c);
	char path[256];
	snprintf(path, sizeof path, "%s/typo.json", dir);
	drape_session s = {.id = 4242};
	drape_scene_info info = {.frames = 4242};
	drape_err rc = drape_scene_load(c, path, NULL, &s, &info, &e);
	uint32_t after = session_count(c);
	drape_close(c);
	CHECKF(rc == DRAPE_EINVAL && strstr(e.message, "typo.json") && strstr(e.message, "strech"),
	       "%s: %s", drape_err_name(rc), e.message);
	CHECK(s.id == 4242 && info.frames == 4242);
	CHECKF(before != UINT32_MAX && after == before, "sessions %u before, %u after", before, after);

	/* And a missing file. */
	CHECK_OK(drape_connect(url, NULL, &c, &e));
	snprintf(path, sizeof path, "%s/missing.json", dir);
	rc = drape_scene_load(c, path, NULL, &s, NULL, &e);
	drape_close(c);
	CHECKF(rc != DRAPE_OK && strstr(e.message, "missing.json"), "%s: %s", drape_err_name(rc), e.message);
	CHECK(s.id == 4242);
}

/* A scene the server refuses part-way (its third collider is over the
 * server's --max-colliders 2): the session it had created is deleted
 * again and the error names the collider. */
static void test_refused_collider_deletes_the_session(void)
{
	CHECK(write_file("three.json",
			 "{\"frames\": 3,\n"
			 " \"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [4, 4],"
			 " \"center\": [0, 1, 0], \"normal\": [0, 0, 1]}}},\n"
			 " \"colliders\": [{\"sphere\": {\"center\": [0, -3, 0], \"radius\": 0.5}},\n"
			 "               {\"sphere\": {\"center\": [2, -3, 0], \"radius\": 0.5}},\n"
			 "               {\"plane\": {\"point\": [0, -5, 0], \"normal\": [0, 1, 0]}}]}\n"));
	drape_client *c;
	drape_error e;
	CHECK_OK(drape_connect(url, NULL, &c, &e));
	uint32_t before = session_count(c);
	char path[256];
	snprintf(path, sizeof path, "%s/three.json", dir);
	drape_session s = {.id = 4242};
	drape_err rc = drape_scene_load(c, path, "three", &s, NULL, &e);
	uint32_t after = session_count(c);
	drape_close(c);
	CHECKF(rc != DRAPE_OK && strstr(e.message, "colliders[2]") != NULL, "%s: %s", drape_err_name(rc),
	       e.message);
	CHECK(s.id == 4242);
	CHECKF(before != UINT32_MAX && after == before, "sessions %u before, %u after", before, after);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_version_and_layout_through_the_so),
		CHECK_TEST(test_scene_load_runs_three_frames_then_edone),
		CHECK_TEST(test_bad_scene_leaves_nothing),
		CHECK_TEST(test_refused_collider_deletes_the_session),
	};
	draped_path = getenv("DRAPED");
	if (draped_path == NULL || access(draped_path, X_OK) != 0) {
		printf("FAIL setup: DRAPED is not set to an executable draped\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}
	snprintf(dir, sizeof dir, "/tmp/drape-libso-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		printf("FAIL setup: mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	signal(SIGSEGV, on_fatal);
	signal(SIGABRT, on_fatal);
	signal(SIGINT, on_fatal);
	signal(SIGTERM, on_fatal);
	if (!daemon_start("--max-colliders", "2")) {
		daemon_stop();
		printf("FAIL setup: draped did not start\n0 passed, 1 failed\n");
		return 1;
	}
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	daemon_stop();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("  could not remove %s\n", dir);
	return rc;
}
