/*
 * Integration tests of animated (deforming) colliders against a real draped
 * ($DRAPED, set by tests/run.sh), started on ipc:// in a temporary folder
 * with a small --max-message, so that libdrape has to send the animation as
 * a collider.add and several collider.frames parts:
 *
 *  - the frames solved through the daemon are bit-identical to the same
 *    scene stepped in process with the whole animation in one desc;
 *  - a part whose vertex count or data does not match is refused with an
 *    error naming the field, and the session is unchanged (its collider
 *    count, its animation length, its frames);
 *  - after a SIGKILL and a restart on the same state dir the session has the
 *    same animation: the resumed run is bit-identical to the reference;
 *  - the poses and the triangle tree count in the session's memory estimate
 *    (session.list), and an animation over --max-session-memory or the
 *    server's --max-memory is refused at collider.add and at collider.frames
 *    with an error naming the field, the session unchanged.
 */
#include "tests/unit/check.h"
#include "tests/integration/itest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drape/drape.h"
#include "drape/sim.h"

#define MAX_MESSAGE "32768"

static const char *draped_path;
static pid_t daemon_pid = -1;
static char tmp_dir[256];
static char url[320];

static void daemon_kill(int sig)
{
	itest_pid_stop(daemon_pid, sig, 5000);
	daemon_pid = -1;
}

static pid_t mem_pid = -1;

static void cleanup(void)
{
	itest_pid_stop(mem_pid, SIGTERM, 5000);
	daemon_kill(SIGTERM);
	if (tmp_dir[0])
		itest_rm_tree(tmp_dir);
}

/* Starts draped on url with the state dir and log in tmp_dir (appending to
 * the log after a crash); waits (bounded) until hello answers. */
static bool daemon_spawn(void)
{
	char state[300], log[300];
	snprintf(state, sizeof state, "%s/state", tmp_dir);
	snprintf(log, sizeof log, "%s/draped.log", tmp_dir);
	/* --no-resume-interrupted: the restart test resumes by hand. */
	const char *argv[] = {draped_path, "--listen", url, "--state-dir", state, "--max-message", MAX_MESSAGE,
			      "--checkpoint-every", "1", "--threads", "1", "--no-resume-interrupted", NULL};
	pid_t pid = itest_exec_child(argv, log, false);
	if (pid < 0)
		return false;
	daemon_pid = pid;
	int up = itest_wait_connect(pid, url, 20000);
	if (up == 0)
		daemon_pid = -1;
	return up == 1;
}

/* Lines of the daemon's log that contain `what`. */
static int log_count(const char *what)
{
	char log[300], line[1024];
	snprintf(log, sizeof log, "%s/draped.log", tmp_dir);
	FILE *f = fopen(log, "r");
	int n = 0;
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/* ---- The scene: a sheet falling onto a sphere that rises and slides -------------- */

#define NX 16
#define NV (NX * NX)
#define NT (2 * (NX - 1) * (NX - 1))
#define RINGS 11
#define SEGS 24
#define BV (2 + (RINGS - 1) * SEGS)
#define BT (2 * SEGS + 2 * SEGS * (RINGS - 2))
#define POSES 30
#define FRAMES 30

static float cloth_pos[NV * 3];
static uint32_t cloth_tri[NT * 3];
static float body_rest[BV * 3];
static uint32_t body_tri[BT * 3];
static float poses[POSES * BV * 3];

static void scene_build(void)
{
	for (uint32_t j = 0; j < NX; j++)
		for (uint32_t i = 0; i < NX; i++) {
			float *p = &cloth_pos[3 * (j * NX + i)];
			p[0] = (float)i / (NX - 1) - 0.5f;
			p[1] = 0.45f;
			p[2] = (float)j / (NX - 1) - 0.5f;
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < NX; j++)
		for (uint32_t i = 0; i + 1 < NX; i++) {
			uint32_t a = j * NX + i, b = a + 1, c = a + NX, d = c + 1;
			uint32_t q[6] = {a, c, d, a, d, b};
			memcpy(&cloth_tri[3 * t], q, sizeof q);
			t += 2;
		}
	/* A UV sphere of radius 0.3: the poles, then RINGS - 1 rings. */
	const double pi = 3.14159265358979323846;
	uint32_t v = 0;
	body_rest[v * 3 + 1] = 0.3f;
	v++;
	for (uint32_t r = 1; r < RINGS; r++)
		for (uint32_t s = 0; s < SEGS; s++, v++) {
			double th = pi * r / RINGS, ph = 2 * pi * s / SEGS;
			body_rest[v * 3 + 0] = (float)(0.3 * sin(th) * cos(ph));
			body_rest[v * 3 + 1] = (float)(0.3 * cos(th));
			body_rest[v * 3 + 2] = (float)(0.3 * sin(th) * sin(ph));
		}
	body_rest[v * 3 + 1] = -0.3f;
	const uint32_t south = v;
	t = 0;
	for (uint32_t s = 0; s < SEGS; s++) {
		uint32_t s1 = (s + 1) % SEGS;
		uint32_t top[3] = {0, 1 + s1, 1 + s};
		memcpy(&body_tri[3 * t++], top, sizeof top);
		uint32_t base = 1 + (RINGS - 2) * SEGS;
		uint32_t bot[3] = {south, base + s, base + s1};
		memcpy(&body_tri[3 * t++], bot, sizeof bot);
	}
	for (uint32_t r = 0; r + 2 < RINGS; r++)
		for (uint32_t s = 0; s < SEGS; s++) {
			uint32_t s1 = (s + 1) % SEGS;
			uint32_t a = 1 + r * SEGS + s, b = 1 + r * SEGS + s1, c = a + SEGS, d = b + SEGS;
			uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&body_tri[3 * t], q, sizeof q);
			t += 2;
		}
	/* Pose i: the sphere rises 1 cm, slides 0.5 cm and swells 0.5 % a
	 * frame, so the poses are not a rigid motion. */
	for (uint32_t i = 0; i < POSES; i++)
		for (uint32_t k = 0; k < BV; k++) {
			float *p = &poses[((size_t)i * BV + k) * 3];
			const float g = 1.0f + 0.005f * (float)i;
			p[0] = body_rest[k * 3 + 0] * g + 0.005f * (float)i;
			p[1] = body_rest[k * 3 + 1] * g + 0.01f * (float)i;
			p[2] = body_rest[k * 3 + 2] * g;
		}
}

static drape_sim_params scene_params(void)
{
	drape_sim_params p;
	drape_sim_params_default(&p);
	p.substeps = 2;
	p.iterations = 5;
	return p;
}

static drape_collider_desc body_desc(void)
{
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_MESH;
	d.vertices = body_rest;
	d.vertex_count = BV;
	d.triangles = body_tri;
	d.triangle_count = BT;
	d.frames = poses;
	d.frame_count = POSES;
	d.frame_start = 1.0f;
	return d;
}

static float *reference;

/* FRAMES frames stepped in process with the whole animation in one desc. */
static bool reference_build(void)
{
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = cloth_pos;
	d.vertex_count = NV;
	d.triangles = cloth_tri;
	d.triangle_count = NT;
	d.params = scene_params();
	drape_sim *sim;
	drape_error e;
	if (drape_sim_create(&d, &sim, &e) != DRAPE_OK) {
		printf("  reference: %s\n", e.message);
		return false;
	}
	drape_collider_desc b = body_desc();
	if (drape_sim_add_collider(sim, &b, NULL, &e) != DRAPE_OK) {
		printf("  reference collider: %s\n", e.message);
		drape_sim_destroy(sim);
		return false;
	}
	reference = malloc((size_t)FRAMES * NV * 3 * sizeof *reference);
	for (uint32_t k = 0; k < FRAMES; k++) {
		if (drape_sim_step(sim, NULL, &e) != DRAPE_OK) {
			printf("  reference step %u: %s\n", (unsigned)k + 1, e.message);
			drape_sim_destroy(sim);
			return false;
		}
		drape_sim_get_positions(sim, reference + (size_t)k * NV * 3);
	}
	drape_sim_destroy(sim);
	return true;
}

static drape_err create(drape_client *c, drape_session *s)
{
	drape_session_desc d;
	drape_session_desc_default(&d);
	d.positions = cloth_pos;
	d.vertex_count = NV;
	d.triangles = cloth_tri;
	d.triangle_count = NT;
	d.params = scene_params();
	d.name = "anim";
	drape_error e;
	drape_err rc = drape_session_create(c, &d, s, NULL, &e);
	if (rc != DRAPE_OK)
		printf("  session.create: %s\n", e.message);
	return rc;
}

/* Frames first..last of s through frames.get, compared with the reference;
 * returns how many matched in order. */
static uint32_t fetch_and_compare(drape_client *c, drape_session s, uint32_t first, uint32_t last)
{
	uint32_t ok = 0;
	const double t0 = itest_now_ms();
	for (uint32_t k = first; k <= last;) {
		drape_frame *f = NULL;
		uint32_t n = 0, done = 0;
		drape_error e;
		if (drape_frames_get(c, s, k, last - k + 1, &f, &n, &done, &e) != DRAPE_OK) {
			printf("  frames.get %u: %s\n", (unsigned)k, e.message);
			return ok;
		}
		if (n == 0) {
			drape_frames_free(f, n);
			if (itest_now_ms() - t0 > 120000) {
				printf("  frame %u not solved within 120 s\n", (unsigned)k);
				return ok;
			}
			itest_sleep_ms(20);
			continue;
		}
		for (uint32_t i = 0; i < n; i++, k++) {
			bool same = f[i].index == k && f[i].vertex_count == NV &&
				    memcmp(f[i].positions, reference + (size_t)(k - 1) * NV * 3, sizeof cloth_pos) == 0;
			if (!same) {
				printf("  frame %u differs from the in-process reference\n", (unsigned)k);
				drape_frames_free(f, n);
				return ok;
			}
			ok++;
		}
		drape_frames_free(f, n);
	}
	return ok;
}

/* Polls status until the run is over (done, failed or canceled). */
static bool wait_done(drape_client *c, drape_session s, drape_status *st)
{
	double t0 = itest_now_ms();
	while (itest_now_ms() - t0 < 120000) {
		if (drape_session_status(c, s, st, NULL) != DRAPE_OK)
			return false;
		if (st->state == DRAPE_STATE_DONE || st->state == DRAPE_STATE_FAILED ||
		    st->state == DRAPE_STATE_CANCELED)
			return true;
		itest_sleep_ms(20);
	}
	return false;
}

static drape_session main_session;

/* ---- Tests ---------------------------------------------------------------------------- */

static void test_parts_bit_identical_to_in_process(void)
{
	drape_client *c;
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	drape_server_info info;
	drape_server_info_get(c, &info);
	CHECKF(info.limits.max_message == 32768 && info.limits.max_anim_frames == 100000,
	       "hello limits: max_message %llu, max_anim_frames %llu", (unsigned long long)info.limits.max_message,
	       (unsigned long long)info.limits.max_anim_frames);
	const int parts_before = log_count("collider.frames done");
	drape_session s;
	CHECK_OK(create(c, &s));
	main_session = s;
	drape_collider_desc b = body_desc();
	uint32_t index = 99;
	drape_error e;
	drape_err rc = drape_collider_add(c, s, &b, &index, &e);
	CHECKF(rc == DRAPE_OK && index == 0, "collider.add: %s", e.message);
	/* 30 poses of 3.1 KB do not fit a 32 KB message with the mesh: the
	 * first few go with collider.add, the rest in at least three parts. */
	const int parts = log_count("collider.frames done") - parts_before;
	CHECKF(parts >= 3, "%d collider.frames parts, want several", parts);
	CHECK(log_count("deforming mesh") >= 1 && log_count("kind surface") >= 1);
	CHECK_OK(drape_session_run(c, s, FRAMES, NULL, NULL));
	drape_status st;
	CHECK(wait_done(c, s, &st));
	CHECKF(st.state == DRAPE_STATE_DONE && st.frames_done == FRAMES, "state %s, %u frames",
	       drape_state_name(st.state), (unsigned)st.frames_done);
	uint32_t same = fetch_and_compare(c, s, 1, FRAMES);
	drape_close(c);
	CHECKF(same == FRAMES, "%u of %u frames equal the in-process run", (unsigned)same, FRAMES);
}

static void test_mismatch_refused_session_unchanged(void)
{
	CHECK(main_session.id != 0);
	drape_client *c;
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	drape_session s = main_session;
	drape_status before;
	CHECK_OK(drape_session_status(c, s, &before, NULL));
	drape_error e;
	uint32_t total = 0;

	/* Poses of one vertex more than the body has. */
	static float wrong[(BV + 1) * 3 * 2];
	memcpy(wrong, poses, sizeof wrong);
	drape_err rc = drape_collider_append_frames(c, s, 0, wrong, 2, BV + 1, &total, &e);
	CHECKF(rc == DRAPE_EINVAL && strstr(e.message, "frames") && strstr(e.message, "whole poses"), "%s: %s",
	       drape_err_name(rc), e.message);
	/* A NaN in the data: refused by the codec, naming pose and component. */
	static float nan_pose[BV * 3];
	memcpy(nan_pose, poses, sizeof nan_pose);
	nan_pose[7 * 3 + 1] = NAN;
	rc = drape_collider_append_frames(c, s, 0, nan_pose, 1, BV, &total, &e);
	CHECKF(rc == DRAPE_ENONFINITE && strstr(e.message, "frames[7][1]"), "%s: %s", drape_err_name(rc), e.message);
	/* A collider that does not exist. */
	rc = drape_collider_append_frames(c, s, 5, poses, 1, BV, &total, &e);
	CHECKF(rc == DRAPE_ERANGE && strstr(e.message, "index"), "%s: %s", drape_err_name(rc), e.message);
	/* A deforming collider.add whose poses hold a NaN: nothing is added. */
	drape_collider_desc b = body_desc();
	b.frames = nan_pose;
	b.frame_count = 1;
	rc = drape_collider_add(c, s, &b, NULL, &e);
	CHECKF(rc == DRAPE_ENONFINITE && strstr(e.message, "frames"), "%s: %s", drape_err_name(rc), e.message);

	drape_status after;
	CHECK_OK(drape_session_status(c, s, &after, NULL));
	CHECKF(after.colliders == before.colliders && after.frames_done == before.frames_done &&
		       after.state == before.state,
	       "colliders %u -> %u, frames %u -> %u", (unsigned)before.colliders, (unsigned)after.colliders,
	       (unsigned)before.frames_done, (unsigned)after.frames_done);
	/* The frames solved before are all still there and unchanged. */
	CHECK(fetch_and_compare(c, s, 1, FRAMES) == FRAMES);
	/* The animation is as long as before: one good pose makes it 31. */
	rc = drape_collider_append_frames(c, s, 0, poses + (size_t)(POSES - 1) * BV * 3, 1, BV, &total, &e);
	CHECKF(rc == DRAPE_OK && total == POSES + 1, "%s: total %u", e.message, (unsigned)total);

	/* A shape collider cannot take poses. */
	drape_collider_desc sph;
	drape_collider_desc_default(&sph);
	sph.shape = DRAPE_SHAPE_SPHERE;
	sph.radius = 0.1f;
	uint32_t si = 0;
	CHECK_OK(drape_collider_add(c, s, &sph, &si, NULL));
	rc = drape_collider_append_frames(c, s, si, poses, 1, BV, &total, &e);
	CHECKF(rc == DRAPE_EINVAL && strstr(e.message, "only a mesh collider"), "%s: %s", drape_err_name(rc),
	       e.message);
	drape_close(c);
}

static void test_animation_survives_sigkill(void)
{
	drape_client *c;
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	drape_session s;
	CHECK_OK(create(c, &s));
	drape_collider_desc b = body_desc();
	drape_error e;
	CHECKF(drape_collider_add(c, s, &b, NULL, &e) == DRAPE_OK, "collider.add: %s", e.message);
	CHECK_OK(drape_session_run(c, s, FRAMES, NULL, NULL));
	/* Kill the daemon once a few frames are solved (polled, not timed). */
	drape_status st;
	double t0 = itest_now_ms();
	do {
		CHECK_OK(drape_session_status(c, s, &st, NULL));
		if (st.frames_done >= 3)
			break;
		itest_sleep_ms(5);
	} while (itest_now_ms() - t0 < 60000);
	drape_close(c);
	daemon_kill(SIGKILL);
	CHECK(daemon_spawn());
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	CHECK_OK(drape_session_status(c, s, &st, NULL));
	CHECKF(st.colliders == 1, "%u colliders after the restart", (unsigned)st.colliders);
	if (st.frames_done < FRAMES)
		CHECK_OK(drape_session_resume(c, s, NULL, NULL));
	CHECK(wait_done(c, s, &st));
	CHECKF(st.state == DRAPE_STATE_DONE && st.frames_done == FRAMES, "state %s, %u frames",
	       drape_state_name(st.state), (unsigned)st.frames_done);
	/* Frames after the kill were solved with the replayed animation: every
	 * pose that came in a later part is needed to match. */
	uint32_t same = fetch_and_compare(c, s, 1, FRAMES);
	drape_close(c);
	CHECKF(same == FRAMES, "%u of %u frames equal the in-process run after the restart", (unsigned)same, FRAMES);
}

/* The session's memory estimate from session.list; 0 if not found. */
static uint64_t session_memory(drape_client *c, drape_session s)
{
	drape_session_entry *e = NULL;
	uint32_t n = 0;
	uint64_t m = 0;
	if (drape_session_list(c, &e, &n, NULL) != DRAPE_OK)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (e[i].id == s.id)
			m = e[i].memory;
	free(e);
	return m;
}

/* A second draped, on its own socket and state dir, with limits given as
 * strings (NULL for the default). */
static bool mem_daemon(const char *session_limit, const char *budget, char *murl, size_t cap)
{
	char dir[300], state[320], log[320];
	snprintf(dir, sizeof dir, "%s/mem%d", tmp_dir, session_limit ? 1 : 2);
	mkdir(dir, 0700);
	snprintf(state, sizeof state, "%s/state", dir);
	snprintf(log, sizeof log, "%s/draped.log", dir);
	snprintf(murl, cap, "ipc://%s/ctl.sock", dir);
	const char *argv[16];
	int n = 0;
	argv[n++] = draped_path;
	argv[n++] = "--listen";
	argv[n++] = murl;
	argv[n++] = "--state-dir";
	argv[n++] = state;
	argv[n++] = "--threads";
	argv[n++] = "1";
	if (session_limit) {
		argv[n++] = "--max-session-memory";
		argv[n++] = session_limit;
	}
	if (budget) {
		argv[n++] = "--max-memory";
		argv[n++] = budget;
	}
	argv[n] = NULL;
	mem_pid = itest_exec_child(argv, log, false);
	if (mem_pid < 0)
		return false;
	int up = itest_wait_connect(mem_pid, murl, 20000);
	if (up == 0)
		mem_pid = -1;
	return up == 1;
}

/* What an animation of n poses of the test body adds to a session: the
 * solver's poses, tree and scratch, and the daemon's copy for viewers
 * (session.colliders) of the rest mesh and the poses. */
static uint64_t anim_bytes(uint32_t n)
{
	return drape_sim_deform_bytes(BV, BT, n, NV) + ((uint64_t)BV + BT + (uint64_t)n * BV) * 12u;
}

/* Refusals of an animation too large for the limit: at collider.add (30
 * poses) and at collider.frames (past 10 poses), each naming the field and
 * the limit, the session unchanged (colliders, memory, pose count). */
static void check_refusals(drape_client *c, drape_session s, drape_err want, const char *limit_name)
{
	const uint64_t m0 = session_memory(c, s);
	drape_collider_desc b = body_desc();
	drape_error e;
	memset(&e, 0, sizeof e);
	drape_err rc = drape_collider_add(c, s, &b, NULL, &e);
	CHECKF(rc == want && strstr(e.message, "collider.add: frames") && strstr(e.message, limit_name), "%s: %s",
	       drape_err_name(rc), e.message);
	drape_status st;
	CHECK_OK(drape_session_status(c, s, &st, NULL));
	CHECKF(st.colliders == 0 && session_memory(c, s) == m0, "after a refused add: %u colliders, memory %llu -> %llu",
	       (unsigned)st.colliders, (unsigned long long)m0, (unsigned long long)session_memory(c, s));
	/* Eight poses fit; they count in the estimate by the solver's own measure. */
	b.frame_count = 8;
	uint32_t index = 99, total = 0;
	rc = drape_collider_add(c, s, &b, &index, &e);
	CHECKF(rc == DRAPE_OK && index == 0, "8 poses: %s", e.message);
	const uint64_t m1 = session_memory(c, s);
	CHECKF(m1 - m0 == anim_bytes(8) && m1 - m0 >= 2u * 8u * BV * 12u,
	       "memory %llu -> %llu with 8 poses, want + %llu", (unsigned long long)m0, (unsigned long long)m1,
	       (unsigned long long)anim_bytes(8));
	/* Five more would make 13, past the limit: refused, nothing appended. */
	rc = drape_collider_append_frames(c, s, 0, poses + (size_t)8 * BV * 3, 5, BV, &total, &e);
	CHECKF(rc == want && strstr(e.message, "collider.frames: frames") && strstr(e.message, limit_name), "%s: %s",
	       drape_err_name(rc), e.message);
	CHECK(session_memory(c, s) == m1);
	/* One more still fits, and makes 9: the refused five were not kept. */
	rc = drape_collider_append_frames(c, s, 0, poses + (size_t)8 * BV * 3, 1, BV, &total, &e);
	CHECKF(rc == DRAPE_OK && total == 9, "%s: total %u", e.message, (unsigned)total);
	CHECKF(session_memory(c, s) - m1 == 2u * (uint64_t)BV * 12u, "one pose added %llu bytes, want %u",
	       (unsigned long long)(session_memory(c, s) - m1), (unsigned)(2u * BV * 12u));
	/* Removing the collider gives the bytes back. */
	CHECK_OK(drape_collider_remove(c, s, 0, NULL));
	CHECK(session_memory(c, s) == m0);
}

static void test_animation_counted_in_memory(void)
{
	/* The session's own estimate, measured on the main daemon. */
	drape_client *c;
	CHECK_OK(drape_connect(url, NULL, &c, NULL));
	drape_session s;
	CHECK_OK(create(c, &s));
	const uint64_t base = session_memory(c, s);
	CHECK(base > 0);
	CHECK_OK(drape_session_delete(c, s, NULL));
	drape_close(c);
	/* Room for 10 poses beyond the session's own estimate. */
	char limit[32], murl[400];
	snprintf(limit, sizeof limit, "%llu", (unsigned long long)(base + anim_bytes(10)));

	/* --max-session-memory: DRAPE_ELIMIT. */
	CHECK(mem_daemon(limit, NULL, murl, sizeof murl));
	CHECK_OK(drape_connect(murl, NULL, &c, NULL));
	CHECK_OK(create(c, &s));
	CHECK(session_memory(c, s) == base);
	check_refusals(c, s, DRAPE_ELIMIT, "max_session_memory");
	drape_close(c);
	itest_pid_stop(mem_pid, SIGTERM, 5000);
	mem_pid = -1;

	/* --max-memory, the server's budget over every session: DRAPE_ENOMEM. */
	CHECK(mem_daemon(NULL, limit, murl, sizeof murl));
	CHECK_OK(drape_connect(murl, NULL, &c, NULL));
	CHECK_OK(create(c, &s));
	check_refusals(c, s, DRAPE_ENOMEM, "max_memory");
	drape_close(c);
	itest_pid_stop(mem_pid, SIGTERM, 5000);
	mem_pid = -1;
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_parts_bit_identical_to_in_process),
		CHECK_TEST(test_mismatch_refused_session_unchanged),
		CHECK_TEST(test_animation_survives_sigkill),
		CHECK_TEST(test_animation_counted_in_memory),
	};
	draped_path = getenv("DRAPED");
	if (draped_path == NULL || access(draped_path, X_OK) != 0) {
		printf("FAIL setup: DRAPED is not set to an executable draped\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmp_dir, sizeof tmp_dir, "/tmp/drape-anim-XXXXXX");
	if (mkdtemp(tmp_dir) == NULL) {
		printf("FAIL setup: mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	snprintf(url, sizeof url, "ipc://%s/ctl.sock", tmp_dir);
	atexit(cleanup);
	scene_build();
	if (!reference_build()) {
		printf("FAIL setup: the in-process reference could not be solved\n0 passed, 1 failed\n");
		return 1;
	}
	if (!daemon_spawn()) {
		printf("FAIL setup: draped did not start\n0 passed, 1 failed\n");
		return 1;
	}
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
