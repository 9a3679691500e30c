/*
 * A full state directory seen through libdrape ($DRAPED, set by
 * tests/run.sh): the requests whose writes the disk refuses say so, change
 * nothing they promise not to, and session.status reports what is not on
 * disk until it is. tests/integration/diskfull.sh covers runs, restarts and
 * creates through the CLI; this covers session.update and collider ops.
 *
 * The state dir is a 2 MiB tmpfs, filled with a filler file when a test
 * needs the disk full. Mounting needs root: without it every test is
 * skipped with a note, and the program reports 0 passed.
 */
#include "tests/unit/check.h"
#include "tests/integration/itest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drape/drape.h"
#include "drape/sim.h"

static char dir[256];   /* the test's folder: socket, log, state mount */
static char state[300]; /* the tmpfs */
static char url[320];
static pid_t daemon_pid = -1;
static bool mounted;

static void daemon_stop(void)
{
	itest_pid_stop(daemon_pid, SIGTERM, 10000);
	daemon_pid = -1;
}

static bool daemon_start(void)
{
	const char *draped = getenv("DRAPED") ? getenv("DRAPED") : "build/draped";
	char log[300];
	snprintf(log, sizeof log, "%s/draped.log", dir);
	const char *argv[] = {draped, "--listen", url, "--state-dir", state, "--threads", "1", NULL};
	pid_t pid = itest_exec_child(argv, log, false);
	if (pid < 0)
		return false;
	daemon_pid = pid;
	int up = itest_wait_connect(pid, url, 20000);
	if (up == 0)
		daemon_pid = -1;
	return up == 1;
}

/* Fills the state dir until the disk refuses (a filler file); false if
 * the disk never filled. */
static bool disk_fill(void)
{
	char path[400];
	snprintf(path, sizeof path, "%s/filler", state);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0)
		return false;
	static char zeros[65536];
	for (int i = 0; i < 1000; i++) {
		if (write(fd, zeros, sizeof zeros) < 0) {
			const bool full = errno == ENOSPC;
			/* Page by page, so not even a small record fits. */
			while (full && write(fd, zeros, 512) > 0) {
			}
			close(fd);
			return full;
		}
	}
	close(fd);
	return false;
}

static void disk_free(void)
{
	char path[400];
	snprintf(path, sizeof path, "%s/filler", state);
	unlink(path);
}

/* A vertical 12 x 12 sheet pinned along its top row, with wind. */
typedef struct scene {
	uint32_t nv, nt, npins;
	float pos[144 * 3];
	uint32_t tri[2 * 11 * 11 * 3];
	uint32_t pins[12];
	drape_sim_params params;
} scene;

static void scene_make(scene *s)
{
	const uint32_t n = 12;
	memset(s, 0, sizeof *s);
	s->nv = n * n;
	s->nt = 2 * (n - 1) * (n - 1);
	for (uint32_t j = 0; j < n; j++)
		for (uint32_t i = 0; i < n; i++) {
			float *p = &s->pos[3 * (j * n + i)];
			p[0] = (float)i / (float)(n - 1) - 0.5f;
			p[1] = 1.0f + (float)j / (float)(n - 1);
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < n; j++)
		for (uint32_t i = 0; i + 1 < n; i++) {
			uint32_t a = j * n + i, b = a + 1, c = a + n, d = c + 1;
			uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&s->tri[3 * t], q, sizeof q);
			t += 2;
		}
	for (uint32_t i = 0; i < n; i++)
		s->pins[i] = (n - 1) * n + i;
	s->npins = n;
	drape_sim_params_default(&s->params);
	s->params.wind[0] = 2.0f;
	s->params.wind[2] = 1.0f;
	s->params.substeps = 2;
}

static drape_err create(drape_client *c, const scene *s, drape_session *out, drape_error *e)
{
	drape_session_desc d;
	drape_session_desc_default(&d);
	d.positions = s->pos;
	d.vertex_count = s->nv;
	d.triangles = s->tri;
	d.triangle_count = s->nt;
	d.pins = s->pins;
	d.pin_count = s->npins;
	d.params = s->params;
	return drape_session_create(c, &d, out, NULL, e);
}

/* Frame n of the scene solved in process with params p, into out. */
static bool reference(const scene *s, const drape_sim_params *p, uint32_t n, float *out)
{
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = s->pos;
	d.vertex_count = s->nv;
	d.triangles = s->tri;
	d.triangle_count = s->nt;
	d.pins = s->pins;
	d.pin_count = s->npins;
	d.params = *p;
	drape_sim *sim;
	if (drape_sim_create(&d, &sim, NULL) != DRAPE_OK)
		return false;
	bool ok = true;
	for (uint32_t k = 0; ok && k < n; k++)
		ok = drape_sim_step(sim, NULL, NULL) == DRAPE_OK;
	drape_sim_get_positions(sim, out);
	drape_sim_destroy(sim);
	return ok;
}

/* Runs s for n frames and waits (bounded) until the run is over. */
static drape_err run_to_end(drape_client *c, drape_session s, uint32_t n, drape_status *st)
{
	drape_err rc = drape_session_run(c, s, n, NULL, NULL);
	if (rc != DRAPE_OK)
		return rc;
	double t0 = itest_now_ms();
	while (itest_now_ms() - t0 < 60000) {
		if ((rc = drape_session_status(c, s, st, NULL)) != DRAPE_OK)
			return rc;
		if (st->state != DRAPE_STATE_QUEUED && st->state != DRAPE_STATE_RUNNING)
			return DRAPE_OK;
		itest_sleep_ms(20);
	}
	return DRAPE_ETIMEDOUT;
}

/*
 * session.update on a full disk: refused with EIO naming the op, the file
 * and the reason; status reports the storage error; the old parameters
 * stay in force (once space is freed the frames equal the scene solved
 * with the old parameters, not the new ones, which differ); the next
 * checkpoint that lands clears the storage error.
 */
static void test_update_refused_and_rolled_back(void)
{
	scene sc;
	scene_make(&sc);
	drape_client *c;
	drape_session s;
	drape_error e;
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	CHECK_OK(create(c, &sc, &s, &e));
	CHECK(disk_fill());
	drape_sim_params p;
	drape_params_unset(&p);
	p.wind[0] = -3.0f;
	p.wind[1] = 0.0f;
	p.wind[2] = 0.0f;
	drape_err rc = drape_session_update(c, s, &p, &e);
	CHECKF(rc == DRAPE_EIO && strstr(e.message, "session.update") && strstr(e.message, "state.bin") &&
		       strstr(e.message, "No space left on device"),
	       "%s: %s", drape_err_name(rc), e.message);
	drape_status st;
	CHECK_OK(drape_session_status(c, s, &st, NULL));
	CHECKF(st.has_storage_error && st.storage_error.code == DRAPE_EIO &&
		       strstr(st.storage_error.message, "state.bin"),
	       "storage_error %d: %s", st.has_storage_error, st.storage_error.message);
	disk_free();
	CHECK_OK(run_to_end(c, s, 4, &st));
	CHECKF(st.state == DRAPE_STATE_DONE && st.frames_done == 4 && !st.has_storage_error, "state %s, %u frames, %s",
	       drape_state_name(st.state), (unsigned)st.frames_done,
	       st.has_storage_error ? st.storage_error.message : "no storage error");
	drape_frame *f;
	uint32_t n;
	CHECK_OK(drape_frames_get(c, s, 4, 1, &f, &n, NULL, NULL));
	float old_ref[144 * 3], new_ref[144 * 3];
	drape_sim_params np = sc.params;
	np.wind[0] = -3.0f;
	np.wind[1] = 0.0f;
	np.wind[2] = 0.0f;
	bool refs = reference(&sc, &sc.params, 4, old_ref) && reference(&sc, &np, 4, new_ref);
	bool same_old = n == 1 && memcmp(f[0].positions, old_ref, sizeof old_ref) == 0;
	bool same_new = n == 1 && memcmp(f[0].positions, new_ref, sizeof new_ref) == 0;
	drape_frames_free(f, n);
	CHECK(refs && memcmp(old_ref, new_ref, sizeof old_ref) != 0);
	CHECKF(same_old && !same_new, "frame 4 equals the old parameters' %d, the refused ones' %d", same_old,
	       same_new);
	CHECK_OK(drape_session_delete(c, s, NULL));
	drape_close(c);
}

/*
 * A collider op on a full disk has taken effect when its record fails, so
 * it is answered (and the collider is there), but the session's status
 * names ops.bin: a restart would lose it. That stays after space is freed
 * and a checkpoint lands, since the op is still missing from disk.
 */
static void test_collider_op_not_recorded_is_reported(void)
{
	scene sc;
	scene_make(&sc);
	drape_client *c;
	drape_session s;
	drape_error e;
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	CHECK_OK(create(c, &sc, &s, &e));
	CHECK(disk_fill());
	drape_collider_desc d;
	drape_collider_desc_unset(&d);
	d.shape = DRAPE_SHAPE_SPHERE;
	d.center[1] = 0.5f;
	d.radius = 0.2f;
	uint32_t index = 99;
	CHECK_OK(drape_collider_add(c, s, &d, &index, NULL));
	drape_status st;
	CHECK_OK(drape_session_status(c, s, &st, NULL));
	CHECKF(index == 0 && st.colliders == 1 && st.has_storage_error && strstr(st.storage_error.message, "ops.bin") &&
		       strstr(st.storage_error.message, "No space left on device"),
	       "index %u, %u colliders, storage_error %d: %s", (unsigned)index, (unsigned)st.colliders,
	       st.has_storage_error, st.storage_error.message);
	disk_free();
	CHECK_OK(run_to_end(c, s, 2, &st));
	CHECKF(st.state == DRAPE_STATE_DONE && st.has_storage_error && strstr(st.storage_error.message, "ops.bin"),
	       "state %s, storage_error %d: %s", drape_state_name(st.state), st.has_storage_error,
	       st.storage_error.message);
	CHECK_OK(drape_session_delete(c, s, NULL));
	drape_close(c);
}

static const check_test tests[] = {
	CHECK_TEST(test_update_refused_and_rolled_back),
	CHECK_TEST(test_collider_op_not_recorded_is_reported),
};

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "/tmp/drape-diskfull-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		printf("FAIL setup: mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	snprintf(state, sizeof state, "%s/state", dir);
	snprintf(url, sizeof url, "ipc://%s/ctl.sock", dir);
	mkdir(state, 0700);
	int rc;
	if (mount("tmpfs", state, "tmpfs", 0, "size=2m,mode=0700") != 0) {
		printf("SKIP test_diskfull: cannot mount a 2 MiB tmpfs for the state dir (needs root): %s\n",
		       strerror(errno));
		printf("0 passed, 0 failed\n");
		rc = 0;
	} else {
		mounted = true;
		if (!daemon_start()) {
			printf("FAIL setup: draped did not start (see %s/draped.log)\n0 passed, 1 failed\n", dir);
			rc = 1;
		} else {
			rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
		}
		daemon_stop();
	}
	if (mounted)
		umount(state);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (rc == 0 && system(cmd) != 0)
		printf("  could not remove %s\n", dir);
	return rc;
}
