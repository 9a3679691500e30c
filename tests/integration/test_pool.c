/*
 * A pool of real draped daemons ($DRAPED) behind one libdrape URL list:
 * drape_connect given "A,B,C" (or $DRAPE_SERVER holding it, with url NULL)
 * connects to the least-loaded box that answers. Each case is built so that
 * the list order alone would pick another box: load (queued + running per
 * solver thread) beats free memory and list order, free memory beats list
 * order among equally loaded boxes, a stopped box is skipped, and a malformed URL is
 * an error rather than a box skipped. Every wait polls a condition.
 */
#include "tests/unit/check.h"
#include "tests/integration/grid.h"
#include "tests/integration/itest.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drape/drape.h"

static itest_daemon boxes[3] = {{.pid = -1}, {.pid = -1}, {.pid = -1}};
static const char *draped_path;
static drape_client *busy_client; /* holds the session that keeps box A running */
static drape_session busy;

static void stop_all(void)
{
	if (busy_client != NULL) {
		drape_session_cancel(busy_client, busy, NULL, NULL, NULL);
		drape_close(busy_client);
		busy_client = NULL;
	}
	for (int i = 0; i < 3; i++)
		itest_daemon_stop(&boxes[i], 10000);
}

static bool box_start(itest_daemon *d)
{
	if (!itest_daemon_place(d, "drape-pool", false))
		return false;
	char state[300], log[300];
	snprintf(state, sizeof state, "%s/state", d->dir);
	snprintf(log, sizeof log, "%s/draped.log", d->dir);
	const char *argv[] = {draped_path, "--listen", d->url, "--state-dir", state, "--threads", "1", NULL};
	pid_t pid = itest_exec_child(argv, log, false);
	if (pid < 0)
		return false;
	d->pid = pid;
	return itest_wait_connect(pid, d->url, 20000) == 1;
}

/* "A,B,C" in the order given (indices into boxes). */
static void pool_url(char *out, size_t size, int a, int b, int c)
{
	snprintf(out, size, "%s,%s,%s", boxes[a].url, boxes[b].url, boxes[c].url);
}

/* Connects to the pool and returns the index of the chosen box (-1 on
 * failure, -2 for an unknown URL). */
static int placed(const char *pool)
{
	drape_client *c;
	drape_error err;
	if (drape_connect(pool, NULL, &c, &err) != DRAPE_OK) {
		printf("  connect %s: %s\n", pool, err.message);
		return -1;
	}
	const char *u = drape_client_url(c);
	int which = -2;
	for (int i = 0; i < 3; i++)
		if (strcmp(u, boxes[i].url) == 0)
			which = i;
	drape_close(c);
	return which;
}

/* A session of an n x n grid on box i; run for `frames` when frames > 0. */
static drape_err make_session(int i, uint32_t n, uint32_t frames, drape_client **cout, drape_session *s)
{
	itest_grid g;
	itest_grid_make(&g, n);
	drape_client *c;
	drape_error err;
	drape_err rc = drape_connect(boxes[i].url, NULL, &c, &err);
	if (rc != DRAPE_OK) {
		itest_grid_free(&g);
		return rc;
	}
	drape_session_desc d;
	drape_session_desc_default(&d);
	d.positions = g.pos;
	d.vertex_count = g.nv;
	d.triangles = g.tri;
	d.triangle_count = g.nt;
	d.pins = g.pins;
	d.pin_count = 2;
	rc = drape_session_create(c, &d, s, NULL, &err);
	if (rc == DRAPE_OK && frames > 0)
		rc = drape_session_run(c, *s, frames, NULL, &err);
	itest_grid_free(&g);
	if (rc != DRAPE_OK)
		printf("  session on box %d: %s\n", i, err.message);
	if (rc != DRAPE_OK || cout == NULL)
		drape_close(c);
	else
		*cout = c;
	return rc;
}

static void test_malformed_list_is_an_error(void)
{
	drape_client *c = NULL;
	drape_error err;
	char url[800];
	snprintf(url, sizeof url, "%s,nonsense", boxes[0].url);
	CHECK(drape_connect(url, NULL, &c, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "nonsense") != NULL, "message: %s", err.message);
	CHECK(drape_connect(" , ", NULL, &c, &err) == DRAPE_EINVAL);
	CHECK(c == NULL);
}

static void test_idle_pool_follows_list_order(void)
{
	char url[1000];
	pool_url(url, sizeof url, 0, 1, 2);
	CHECKF(placed(url) == 0, "all idle and empty: the first box");
	pool_url(url, sizeof url, 2, 1, 0);
	CHECKF(placed(url) == 2, "all idle and empty: the first box");
}

static void test_load_beats_free_memory(void)
{
	/* Box 1 holds a large idle session (no load, much memory); box 0
	 * runs a small one on its one thread (load 1 per thread, little
	 * memory). Free memory alone, or the list order, would pick box 0. */
	drape_session s;
	CHECK_OK(make_session(1, 64, 0, NULL, &s));
	CHECK_OK(make_session(0, 6, 100000, &busy_client, &busy));
	drape_status st;
	double deadline = itest_now_ms() + 60000;
	do {
		CHECK_OK(drape_session_status(busy_client, busy, &st, NULL));
		if (st.state == DRAPE_STATE_RUNNING)
			break;
		itest_sleep_ms(20);
	} while (itest_now_ms() < deadline);
	CHECK(st.state == DRAPE_STATE_RUNNING);
	char url[1000];
	snprintf(url, sizeof url, "%s,%s", boxes[0].url, boxes[1].url);
	int p = placed(url);
	CHECKF(p == 1, "box 0 is busy, box 1 idle with more memory held: box 1, got %d", p);
}

static void test_free_memory_beats_list_order(void)
{
	/* Boxes 1 and 2 are idle; box 1 holds memory, box 2 none. */
	char url[1000];
	snprintf(url, sizeof url, "%s,%s", boxes[1].url, boxes[2].url);
	int p = placed(url);
	CHECKF(p == 2, "box 1 holds memory: box 2, got %d", p);
}

static void test_env_list_skips_a_stopped_box(void)
{
	itest_daemon_stop(&boxes[2], 10000);
	char url[1000];
	pool_url(url, sizeof url, 2, 0, 1);
	setenv("DRAPE_SERVER", url, 1);
	drape_client *c = NULL;
	drape_error err;
	drape_err rc = drape_connect(NULL, NULL, &c, &err);
	unsetenv("DRAPE_SERVER");
	CHECKF(rc == DRAPE_OK, "connect through DRAPE_SERVER: %s", err.message);
	bool on1 = strcmp(drape_client_url(c), boxes[1].url) == 0;
	drape_close(c);
	CHECKF(on1, "box 2 is down, box 0 busy: box 1 (idle, though holding memory)");
}

static void test_no_box_answers(void)
{
	char url[1000];
	snprintf(url, sizeof url, "%s,%s", boxes[2].url, boxes[2].url);
	drape_client *c = NULL;
	drape_error err;
	CHECK(drape_connect(url, NULL, &c, &err) == DRAPE_EUNAVAILABLE);
	CHECKF(strstr(err.message, "no server of the pool answered") != NULL, "message: %s", err.message);
	CHECK(c == NULL);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_malformed_list_is_an_error),
		CHECK_TEST(test_idle_pool_follows_list_order),
		CHECK_TEST(test_load_beats_free_memory),
		CHECK_TEST(test_free_memory_beats_list_order),
		CHECK_TEST(test_env_list_skips_a_stopped_box),
		CHECK_TEST(test_no_box_answers),
	};
	draped_path = getenv("DRAPED");
	if (draped_path == NULL || access(draped_path, X_OK) != 0) {
		printf("FAIL setup: DRAPED is not set to an executable draped\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	atexit(stop_all);
	for (int i = 0; i < 3; i++)
		if (!box_start(&boxes[i])) {
			printf("FAIL setup: draped did not start\n0 passed, 1 failed\n");
			return 1;
		}
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
