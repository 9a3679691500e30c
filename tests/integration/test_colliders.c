/*
 * session.colliders against a real draped ($DRAPED), on ipc:// in a
 * temporary folder, driven through the codec (no libdrape):
 *
 *  - a session without colliders answers an empty list;
 *  - malformed requests get an error naming the field at fault (a session
 *    that does not exist, frame missing or not a number, a frame past the
 *    frames solved) and a wrong or missing owner token gets EPERM;
 *  - analytic shapes come back as sent, placed by their keyframes at the
 *    asked frame (the linear interpolation worked out here by hand);
 *  - a deforming mesh's positions at frame N are pose N - frame_start of
 *    the animation the test sent (added, then appended with
 *    collider.frames), bit for bit, and the first or last pose outside
 *    them; the triangles come only when asked for;
 *  - the daemon's copy of the colliders counts in the session's memory;
 *  - after collider.remove the list shrinks, and after a SIGKILL and a
 *    restart on the same state dir (ops.bin replayed) the answer is the
 *    same.
 */
#include "tests/unit/check.h"
#include "tests/integration/grid.h"
#include "tests/integration/itest.h"

#include <msgpack.h>
#include <nng/nng.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "drape/sim.h"
#include "proto/proto.h"

static const char *draped_path;
static itest_daemon dm;
static nng_socket sock;
static bool sock_open;

typedef struct owned {
	uint32_t id;
	uint8_t token[PROTO_TOKEN_SIZE];
} owned;

static bool daemon_start(void)
{
	char state[300], log[300];
	snprintf(state, sizeof state, "%s/state", dm.dir);
	snprintf(log, sizeof log, "%s/draped.log", dm.dir);
	const char *argv[] = {draped_path, "--listen", dm.url, "--state-dir", state, "--checkpoint-every", "1",
			      "--threads", "1", "--no-resume-interrupted", NULL};
	dm.pid = itest_exec_child(argv, log, false);
	if (dm.pid < 0 || itest_wait_connect(dm.pid, dm.url, 30000) != 1)
		return false;
	if (sock_open)
		nng_close(sock);
	sock_open = itest_req_open(dm.url, 30000, 5000, &sock) == 0;
	return sock_open;
}

static void stop_all(void)
{
	if (sock_open)
		nng_close(sock);
	sock_open = false;
	itest_daemon_stop(&dm, 5000);
}

static int create(const itest_grid *g, owned *o)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_CREATE);
	req.u.create.mesh.positions = g->pos;
	req.u.create.mesh.vertex_count = g->nv;
	req.u.create.mesh.triangles = g->tri;
	req.u.create.mesh.triangle_count = g->nt;
	req.u.create.pins = g->pins;
	req.u.create.pin_count = 2;
	if (itest_call(sock, &req, &rep) != 0 || !rep.ok) {
		printf("  create: %s\n", rep.ok ? "no reply" : rep.error.message);
		proto_reply_free(&rep);
		return -1;
	}
	o->id = rep.u.create.session;
	memcpy(o->token, rep.u.create.token, PROTO_TOKEN_SIZE);
	proto_reply_free(&rep);
	return 0;
}

static void session_req(proto_request *req, proto_op op, const owned *o)
{
	proto_request_init(req, op);
	req->has_session = true;
	req->session = o->id;
	req->has_token = true;
	memcpy(req->token, o->token, PROTO_TOKEN_SIZE);
}

/* Sends req and checks the reply is ok; false (printed) otherwise. */
static bool call_ok(proto_request *req, proto_reply *rep)
{
	if (itest_call(sock, req, rep) != 0)
		return false;
	if (!rep->ok) {
		printf("  %s: %s\n", proto_op_name(req->op), rep->error.message);
		proto_reply_free(rep);
		return false;
	}
	return true;
}

static bool add_collider(const owned *o, const drape_collider_desc *d)
{
	proto_request req;
	proto_reply rep;
	session_req(&req, PROTO_OP_COLLIDER_ADD, o);
	req.u.collider_add.desc = *d;
	req.u.collider_add.mask = 0;
	if (!call_ok(&req, &rep))
		return false;
	proto_reply_free(&rep);
	return true;
}

/* Runs `frames` frames and waits (bounded, generous) until they are solved. */
static bool run_frames(const owned *o, uint32_t frames)
{
	proto_request req;
	proto_reply rep;
	session_req(&req, PROTO_OP_SESSION_RUN, o);
	req.u.run.frames = frames;
	if (!call_ok(&req, &rep))
		return false;
	proto_reply_free(&rep);
	const double t0 = itest_now_ms();
	while (itest_now_ms() - t0 < 120000) {
		proto_request_init(&req, PROTO_OP_SESSION_STATUS);
		req.has_session = true;
		req.session = o->id;
		if (!call_ok(&req, &rep))
			return false;
		const proto_state st = rep.u.status.state;
		proto_reply_free(&rep);
		if (st != PROTO_STATE_RUNNING && st != PROTO_STATE_QUEUED)
			return st == PROTO_STATE_DONE;
		itest_sleep_ms(20);
	}
	return false;
}

static int colliders(const owned *o, uint32_t frame, bool mesh, proto_reply *rep)
{
	proto_request req;
	session_req(&req, PROTO_OP_SESSION_COLLIDERS, o);
	req.u.colliders.frame = frame;
	req.u.colliders.mesh = mesh;
	return itest_call(sock, &req, rep);
}

/* A raw session.colliders whose "frame" is packed by `frame_kind`: 0
 * absent, 1 the string "3", 2 the number -1. Returns the error message
 * ("" when the reply was ok, NULL when nothing came back). */
static char *raw_colliders(const owned *o, int frame_kind, char *msg, size_t msg_len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, frame_kind == 0 ? 5 : 6);
#define KEY(s) (msgpack_pack_str(&pk, strlen(s)), msgpack_pack_str_body(&pk, s, strlen(s)))
	KEY("v"), msgpack_pack_uint32(&pk, PROTO_VERSION);
	KEY("id"), msgpack_pack_uint64(&pk, itest_next_id());
	KEY("op"), KEY("session.colliders");
	KEY("session"), msgpack_pack_uint32(&pk, o->id);
	KEY("token"), msgpack_pack_bin(&pk, PROTO_TOKEN_SIZE), msgpack_pack_bin_body(&pk, o->token, PROTO_TOKEN_SIZE);
	if (frame_kind == 1)
		KEY("frame"), KEY("3");
	else if (frame_kind == 2)
		KEY("frame"), msgpack_pack_int32(&pk, -1);
#undef KEY
	void *r = NULL;
	size_t rl = 0;
	char *out = NULL;
	if (itest_raw_call(sock, sb.data, sb.size, &r, &rl) == 0) {
		proto_reply rep;
		drape_error err;
		if (proto_reply_decode(r, rl, 0, PROTO_OP_SESSION_COLLIDERS, &rep, &err) == DRAPE_OK) {
			snprintf(msg, msg_len, "%s", rep.ok ? "" : rep.error.message);
			out = msg;
			proto_reply_free(&rep);
		}
		nng_free(r, rl);
	}
	msgpack_sbuffer_destroy(&sb);
	return out;
}

static itest_grid grid;

/* ---- Tests ---------------------------------------------------------------------- */

static void test_no_colliders_is_an_empty_list(void)
{
	owned o;
	CHECK(create(&grid, &o) == 0);
	proto_reply rep;
	CHECK(colliders(&o, 0, true, &rep) == 0);
	CHECKF(rep.ok, "%s", rep.error.message);
	CHECK(rep.u.colliders.session == o.id && rep.u.colliders.frame == 0 && rep.u.colliders.count == 0);
	proto_reply_free(&rep);
}

static void test_bad_requests_name_the_field(void)
{
	owned o;
	CHECK(create(&grid, &o) == 0);
	proto_reply rep;
	/* A session that does not exist. */
	owned ghost = o;
	ghost.id = o.id + 1000;
	CHECK(colliders(&ghost, 0, false, &rep) == 0);
	CHECKF(!rep.ok && rep.error.code == DRAPE_ENOTFOUND && strstr(rep.error.message, "session") != NULL,
	       "%s", rep.error.message);
	proto_reply_free(&rep);
	/* A frame past the frames solved (none yet). */
	CHECK(colliders(&o, 1, false, &rep) == 0);
	CHECKF(!rep.ok && rep.error.code == DRAPE_ERANGE && strstr(rep.error.message, "frame: 1") != NULL, "%s",
	       rep.error.message);
	proto_reply_free(&rep);
	/* Another owner token, and none: nothing of the session. */
	owned other = o;
	other.token[0] ^= 0xff;
	CHECK(colliders(&other, 0, false, &rep) == 0);
	CHECKF(!rep.ok && rep.error.code == DRAPE_EPERM, "%s", rep.error.message);
	proto_reply_free(&rep);
	proto_request req;
	session_req(&req, PROTO_OP_SESSION_COLLIDERS, &o);
	req.has_token = false;
	CHECK(itest_call(sock, &req, &rep) == 0);
	CHECKF(!rep.ok && rep.error.code == DRAPE_EPERM, "%s", rep.error.message);
	proto_reply_free(&rep);
	/* frame missing, a string, negative: refused naming "frame". */
	char msg[300];
	for (int kind = 0; kind < 3; kind++) {
		CHECK(raw_colliders(&o, kind, msg, sizeof msg) != NULL);
		CHECKF(msg[0] != '\0' && strstr(msg, "frame") != NULL, "kind %d: '%s'", kind, msg);
	}
}

static void test_shapes_placed_by_their_keyframes(void)
{
	owned o;
	CHECK(create(&grid, &o) == 0);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_SPHERE;
	d.center[0] = 0.5f, d.center[1] = -2.0f, d.center[2] = 0.5f;
	d.radius = 0.25f;
	/* Keys at frames 1 and 11: at frame 6 halfway, so 0.5 m along x and
	 * 45 degrees about y; at frame 0 (before the first key) key 0 holds. */
	const drape_keyframe keys[2] = {{1.0f, {0, 0, 0}, {0, 0, 0}}, {11.0f, {1.0f, 0, 0}, {0, 90.0f, 0}}};
	d.keyframes = keys;
	d.keyframe_count = 2;
	CHECK(add_collider(&o, &d));
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_BOX;
	d.center[1] = -3.0f;
	d.half_extents[0] = 1.0f, d.half_extents[1] = 0.1f, d.half_extents[2] = 2.0f;
	CHECK(add_collider(&o, &d));
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_CAPSULE;
	d.a[1] = -4.0f, d.b[1] = -4.0f, d.b[0] = 1.0f;
	d.radius = 0.1f;
	CHECK(add_collider(&o, &d));
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_PLANE;
	d.point[1] = -5.0f;
	d.normal[1] = 2.0f;
	CHECK(add_collider(&o, &d));
	CHECK(run_frames(&o, 6));

	proto_reply rep;
	CHECK(colliders(&o, 6, false, &rep) == 0);
	CHECKF(rep.ok, "%s", rep.error.message);
	const proto_colliders_rep *r = &rep.u.colliders;
	CHECKF(r->count == 4 && r->frame == 6, "count %u frame %u", r->count, r->frame);
	const proto_collider_view *c = r->colliders;
	CHECK(c[0].shape == DRAPE_SHAPE_SPHERE && c[0].radius == 0.25f && c[0].center[1] == -2.0f);
	CHECK(c[1].shape == DRAPE_SHAPE_BOX && c[1].half_extents[2] == 2.0f && c[1].center[1] == -3.0f);
	CHECK(c[2].shape == DRAPE_SHAPE_CAPSULE && c[2].b[0] == 1.0f && c[2].radius == 0.1f);
	CHECK(c[3].shape == DRAPE_SHAPE_PLANE && c[3].normal[1] == 2.0f && c[3].point[1] == -5.0f);
	for (uint32_t i = 0; i < 4; i++)
		CHECK(c[i].index == i);
	CHECK_NEAR(c[0].translate[0], 0.5, 1e-6);
	CHECK_NEAR(c[0].translate[1], 0.0, 1e-6);
	/* R = Ry(45 deg): [[cos, 0, sin], [0, 1, 0], [-sin, 0, cos]]. */
	const double h = sqrt(0.5);
	const double ry[9] = {h, 0, h, 0, 1, 0, -h, 0, h};
	for (int k = 0; k < 9; k++)
		CHECK_NEAR(c[0].rotation[k], ry[k], 1e-6);
	/* Colliders without keys stand still: identity. */
	for (uint32_t i = 1; i < 4; i++)
		for (int k = 0; k < 9; k++)
			CHECK(c[i].rotation[k] == (k % 4 == 0 ? 1.0f : 0.0f) && c[i].translate[k % 3] == 0.0f);
	proto_reply_free(&rep);
	CHECK(colliders(&o, 0, false, &rep) == 0 && rep.ok);
	CHECK(rep.u.colliders.colliders[0].translate[0] == 0.0f && rep.u.colliders.colliders[0].rotation[0] == 1.0f);
	proto_reply_free(&rep);
}

/* A closed tetrahedron far below the cloth (so it does not touch it); pose
 * i is the rest shape moved up by 0.1 i and scaled in x by 1 + i / 8, so
 * every pose differs from every other. */
#define TET_NV 4u
#define POSES 6u
static const float tet_rest[TET_NV * 3] = {0, -3, 0, 1, -3, 0, 0, -3, 1, 0, -2, 0};
static const uint32_t tet_tri[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};

static void pose_of(uint32_t i, float *out)
{
	for (uint32_t v = 0; v < TET_NV; v++) {
		out[v * 3 + 0] = tet_rest[v * 3 + 0] * (1.0f + (float)i / 8.0f);
		out[v * 3 + 1] = tet_rest[v * 3 + 1] + 0.1f * (float)i;
		out[v * 3 + 2] = tet_rest[v * 3 + 2];
	}
}

/* The memory session.list reports for session id (estimate plus frames). */
static uint64_t listed_memory(uint32_t id)
{
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_LIST);
	uint64_t m = 0;
	if (itest_call(sock, &req, &rep) != 0)
		return 0;
	for (uint32_t i = 0; rep.ok && i < rep.u.list.count; i++)
		if (rep.u.list.sessions[i].id == id)
			m = rep.u.list.sessions[i].memory;
	proto_reply_free(&rep);
	return m;
}

static owned deform_session;
static float poses[POSES][TET_NV * 3];

static void test_deforming_mesh_at_the_pose_of_the_frame(void)
{
	owned o;
	CHECK(create(&grid, &o) == 0);
	for (uint32_t i = 0; i < POSES; i++)
		pose_of(i, poses[i]);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_MESH;
	d.vertices = tet_rest;
	d.vertex_count = TET_NV;
	d.triangles = tet_tri;
	d.triangle_count = 4;
	/* Poses 0..3 with the add, 4..5 appended: pose i is frame 2 + i. */
	d.frames = &poses[0][0];
	d.frame_count = 4;
	d.frame_start = 2.0f;
	const uint64_t before = listed_memory(o.id);
	CHECK(add_collider(&o, &d));
	/* The daemon's copy is counted in the session's memory: at least its
	 * vertices, triangles and poses (the solver's own copy may add more). */
	const uint64_t after = listed_memory(o.id);
	CHECKF(before > 0 && after >= before + TET_NV * 12u + 4u * 12u + 4u * TET_NV * 12u, "memory %llu -> %llu",
	       (unsigned long long)before, (unsigned long long)after);
	proto_request req;
	proto_reply rep;
	session_req(&req, PROTO_OP_COLLIDER_FRAMES, &o);
	req.u.collider_frames.index = 0;
	req.u.collider_frames.frames = &poses[4][0];
	req.u.collider_frames.point_count = 2 * TET_NV;
	CHECK(call_ok(&req, &rep));
	proto_reply_free(&rep);
	CHECK(run_frames(&o, 9));

	for (uint32_t f = 0; f <= 9; f++) {
		CHECK(colliders(&o, f, f == 4, &rep) == 0);
		CHECKF(rep.ok, "%s", rep.error.message);
		const proto_collider_view *c = &rep.u.colliders.colliders[0];
		CHECKF(rep.u.colliders.count == 1 && c->shape == DRAPE_SHAPE_MESH && c->frame_count == POSES &&
			       c->frame_start == 2.0f && c->vertex_count == TET_NV && c->triangle_count == 4 &&
			       c->positions != NULL,
		       "frame %u: count %u frames %u", f, rep.u.colliders.count, c->frame_count);
		/* Frames before frame_start hold pose 0, after the last pose
		 * the last one. */
		const uint32_t want = f <= 2 ? 0 : f - 2 >= POSES - 1 ? POSES - 1 : f - 2;
		CHECKF(memcmp(c->positions, poses[want], sizeof poses[want]) == 0,
		       "frame %u: positions are not pose %u (y0 %g, want %g)", f, want, (double)c->positions[1],
		       (double)poses[want][1]);
		if (f == 4) {
			CHECK(c->vertices != NULL && memcmp(c->vertices, tet_rest, sizeof tet_rest) == 0);
			CHECK(c->triangles != NULL && memcmp(c->triangles, tet_tri, sizeof tet_tri) == 0);
		} else {
			CHECK(c->vertices == NULL && c->triangles == NULL);
		}
		proto_reply_free(&rep);
	}
	deform_session = o;
}

static void test_remove_and_restart_keep_the_answer(void)
{
	CHECK(deform_session.id != 0);
	owned o = deform_session;
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_SPHERE;
	d.center[1] = -8.0f;
	d.radius = 0.5f;
	CHECK(add_collider(&o, &d));
	proto_request req;
	proto_reply rep;
	session_req(&req, PROTO_OP_COLLIDER_REMOVE, &o);
	req.u.collider_remove.index = 0;
	CHECK(call_ok(&req, &rep));
	proto_reply_free(&rep);
	CHECK(colliders(&o, 5, false, &rep) == 0 && rep.ok);
	CHECK(rep.u.colliders.count == 1 && rep.u.colliders.colliders[0].shape == DRAPE_SHAPE_SPHERE &&
	      rep.u.colliders.colliders[0].center[1] == -8.0f);
	proto_reply_free(&rep);
	/* Put the deforming mesh back after it, then crash and restart: the
	 * reloaded session replays ops.bin and answers the same. */
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_MESH;
	d.vertices = tet_rest;
	d.vertex_count = TET_NV;
	d.triangles = tet_tri;
	d.triangle_count = 4;
	d.frames = &poses[0][0];
	d.frame_count = POSES;
	d.frame_start = 2.0f;
	CHECK(add_collider(&o, &d));
	itest_pid_stop(dm.pid, SIGKILL, 5000);
	dm.pid = -1;
	CHECK(daemon_start());
	CHECK(colliders(&o, 5, true, &rep) == 0);
	CHECKF(rep.ok, "%s", rep.error.message);
	const proto_collider_view *c = rep.u.colliders.colliders;
	CHECKF(rep.u.colliders.count == 2 && c[0].shape == DRAPE_SHAPE_SPHERE && c[1].shape == DRAPE_SHAPE_MESH &&
		       c[1].frame_count == POSES && c[1].positions != NULL && c[1].triangles != NULL,
	       "after the restart: %u colliders", rep.u.colliders.count);
	CHECK(memcmp(c[1].positions, poses[3], sizeof poses[3]) == 0);
	proto_reply_free(&rep);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_no_colliders_is_an_empty_list),
		CHECK_TEST(test_bad_requests_name_the_field),
		CHECK_TEST(test_shapes_placed_by_their_keyframes),
		CHECK_TEST(test_deforming_mesh_at_the_pose_of_the_frame),
		CHECK_TEST(test_remove_and_restart_keep_the_answer),
	};
	draped_path = getenv("DRAPED");
	if (draped_path == NULL || access(draped_path, X_OK) != 0) {
		printf("FAIL setup: DRAPED must name the daemon\n0 passed, 1 failed\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	atexit(stop_all);
	itest_grid_make(&grid, 8);
	if (!itest_daemon_place(&dm, "drape-colliders", false) || !daemon_start()) {
		printf("FAIL setup: draped did not start in %s\n0 passed, 1 failed\n", dm.dir);
		return 1;
	}
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	itest_grid_free(&grid);
	return rc;
}
