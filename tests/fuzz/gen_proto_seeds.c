/*
 * Writes the seed corpus of fuzz_proto: one valid message per request op
 * (several for the ops with optional fields), a reply per op plus error
 * replies, and stream frame and end messages, all made by the real encoders
 * so the fuzzer starts from what peers actually send.
 *   gen_proto_seeds DIR
 * Files are named by what they hold ("req-session.create-2"), so rerunning
 * overwrites the same files.
 */
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_dir;
static int g_written;

static void save(const char *kind, const char *what, int variant, const proto_buf *b)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/seed-%s-%s-%d", g_dir, kind, what, variant);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	g_written++;
}

static void put_request(const proto_request *r, int variant)
{
	proto_buf b = {0};
	drape_error err;
	if (proto_request_encode(r, &b, &err) != DRAPE_OK) {
		fprintf(stderr, "encode %s: %s\n", proto_op_name(r->op), err.message);
		exit(1);
	}
	save("req", proto_op_name(r->op), variant, &b);
	proto_buf_free(&b);
}

static void put_reply(const proto_reply *r, int variant)
{
	proto_buf b = {0};
	drape_error err;
	if (proto_reply_encode(r, &b, &err) != DRAPE_OK) {
		fprintf(stderr, "encode reply %d: %s\n", (int)r->op, err.message);
		exit(1);
	}
	const char *name = proto_op_name(r->op);
	save("rep", name != NULL ? name : "none", variant, &b);
	proto_buf_free(&b);
}

static void put_stream(const proto_stream_msg *m, const char *what, int variant)
{
	proto_buf b = {0};
	drape_error err;
	if (proto_stream_encode(m, &b, &err) != DRAPE_OK) {
		fprintf(stderr, "encode stream: %s\n", err.message);
		exit(1);
	}
	save("stream", what, variant, &b);
	proto_buf_free(&b);
}

/* A 3 x 3 sheet: 9 vertices, 8 triangles. */
static float g_pos[27];
static uint32_t g_tri[24];
static const uint8_t g_token[PROTO_TOKEN_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void make_sheet(void)
{
	for (int j = 0; j < 3; j++)
		for (int i = 0; i < 3; i++) {
			float *p = &g_pos[(j * 3 + i) * 3];
			p[0] = (float)i * 0.5f - 0.5f;
			p[1] = 1.0f;
			p[2] = (float)j * -0.5f + 0.25f;
		}
	int t = 0;
	for (uint32_t j = 0; j < 2; j++)
		for (uint32_t i = 0; i < 2; i++) {
			uint32_t a = j * 3 + i, b = a + 1, c = a + 3, d = a + 4;
			uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&g_tri[t], q, sizeof q);
			t += 6;
		}
}

static void header(proto_request *r, proto_op op, uint64_t id)
{
	proto_request_init(r, op);
	r->id = id;
	if (proto_op_needs_session(op)) {
		r->has_session = true;
		r->session = 42;
	}
	if (proto_op_needs_token(op)) {
		r->has_token = true;
		memcpy(r->token, g_token, sizeof g_token);
	}
}

static void requests(void)
{
	static const float inv_mass[9] = {0, 1, 1, 1, 1, 1, 1, 1, 0};
	static const uint32_t pins[2] = {0, 2};
	static const drape_keyframe keys[2] = {{1, {0, 0, 0}, {0, 0, 0}}, {24, {0.5f, 0, -1}, {0, 90, 0}}};
	proto_request r;

	for (int op = PROTO_OP_HELLO; op < PROTO_OP_COUNT_; op++) {
		header(&r, (proto_op)op, (uint64_t)op);
		switch ((proto_op)op) {
		case PROTO_OP_SESSION_CREATE:
		case PROTO_OP_PREFLIGHT: {
			proto_mesh *m = op == PROTO_OP_PREFLIGHT ? &r.u.preflight.mesh : &r.u.create.mesh;
			m->positions = g_pos;
			m->vertex_count = 9;
			m->triangles = g_tri;
			m->triangle_count = 8;
			break;
		}
		case PROTO_OP_SESSION_UPDATE:
			drape_sim_params_default(&r.u.update.params.values);
			r.u.update.params.mask = PROTO_PARAM_FPS | PROTO_PARAM_BEND;
			break;
		case PROTO_OP_SESSION_RUN:
			r.u.run.frames = 48;
			break;
		case PROTO_OP_FRAMES_GET:
			r.u.frames_get.first = 1;
			r.u.frames_get.count = 4;
			r.u.frames_get.wait_ms = 5000;
			break;
		case PROTO_OP_COLLIDER_ADD:
			drape_collider_desc_default(&r.u.collider_add.desc);
			r.u.collider_add.desc.shape = DRAPE_SHAPE_SPHERE;
			r.u.collider_add.desc.center[1] = 0.5f;
			r.u.collider_add.desc.radius = 0.5f;
			break;
		case PROTO_OP_COLLIDER_TRANSFORM:
			r.u.collider_transform.index = 0;
			r.u.collider_transform.keyframes = keys;
			r.u.collider_transform.keyframe_count = 2;
			break;
		case PROTO_OP_COLLIDER_UPDATE:
			r.u.collider_update.index = 1;
			r.u.collider_update.vertices = g_pos;
			r.u.collider_update.vertex_count = 9;
			break;
		case PROTO_OP_COLLIDER_REMOVE:
			r.u.collider_remove.index = 2;
			break;
		case PROTO_OP_PINS_ATTACH:
			r.u.pins_attach.vertices = pins;
			r.u.pins_attach.count = 2;
			r.u.pins_attach.collider = 0;
			break;
		case PROTO_OP_COLLIDER_FRAMES:
			r.u.collider_frames.index = 0;
			r.u.collider_frames.frames = g_pos;
			r.u.collider_frames.point_count = 9;
			break;
		default:
			break;
		}
		put_request(&r, 0);
	}

	/* Variants with every optional field. */
	header(&r, PROTO_OP_HELLO, 100);
	r.u.hello.client = "libdrape 0.1 (fuzz seed)";
	r.has_client = true;
	r.client = 0x1122334455667788ull;
	static const uint8_t auth[] = "s3cret-auth-token";
	r.auth = auth;
	r.auth_len = sizeof auth - 1;
	put_request(&r, 1);

	header(&r, PROTO_OP_SESSION_CREATE, 101);
	r.has_client = true;
	r.client = 7;
	r.u.create.mesh = (proto_mesh){g_pos, 9, g_tri, 8};
	r.u.create.inv_mass = inv_mass;
	r.u.create.pins = pins;
	r.u.create.pin_count = 2;
	drape_sim_params_default(&r.u.create.params.values);
	r.u.create.params.values.self_collision = 1;
	r.u.create.params.mask = PROTO_PARAMS_ALL;
	r.u.create.name = "flag";
	put_request(&r, 1);

	header(&r, PROTO_OP_SESSION_UPDATE, 102);
	drape_sim_params_default(&r.u.update.params.values);
	r.u.update.params.values.wind[0] = 3.0f;
	r.u.update.params.mask = PROTO_PARAMS_ALL;
	put_request(&r, 1);

	static const drape_shape shapes[] = {DRAPE_SHAPE_PLANE, DRAPE_SHAPE_BOX, DRAPE_SHAPE_CAPSULE, DRAPE_SHAPE_MESH};
	for (int s = 0; s < 4; s++) {
		header(&r, PROTO_OP_COLLIDER_ADD, 110 + (uint64_t)s);
		drape_collider_desc *d = &r.u.collider_add.desc;
		drape_collider_desc_default(d);
		d->shape = shapes[s];
		d->normal[1] = 1.0f;
		d->half_extents[0] = d->half_extents[1] = d->half_extents[2] = 0.25f;
		d->b[1] = 1.0f;
		d->radius = 0.1f;
		d->vertices = g_pos;
		d->vertex_count = 9;
		d->triangles = g_tri;
		d->triangle_count = 8;
		d->voxel_size = 0.01f;
		d->keyframes = keys;
		d->keyframe_count = s == 3 ? 2 : 0;
		r.u.collider_add.mask = s == 3 ? PROTO_COLLIDER_ALL : PROTO_COLLIDER_FRICTION;
		put_request(&r, 1 + s);
	}

	/* A deforming mesh: two poses from frame 25, then two more appended. */
	static float poses[2 * 27];
	for (int i = 0; i < 2 * 27; i++)
		poses[i] = g_pos[i % 27] + (i % 3 == 1 ? 0.1f * (float)(i / 27) : 0.0f);
	header(&r, PROTO_OP_COLLIDER_ADD, 115);
	drape_collider_desc_default(&r.u.collider_add.desc);
	r.u.collider_add.desc.shape = DRAPE_SHAPE_MESH;
	r.u.collider_add.desc.vertices = g_pos;
	r.u.collider_add.desc.vertex_count = 9;
	r.u.collider_add.desc.triangles = g_tri;
	r.u.collider_add.desc.triangle_count = 8;
	r.u.collider_add.desc.frames = poses;
	r.u.collider_add.desc.frame_count = 2;
	r.u.collider_add.desc.frame_start = 25.0f;
	put_request(&r, 5);
	header(&r, PROTO_OP_COLLIDER_FRAMES, 116);
	r.u.collider_frames.index = 1;
	r.u.collider_frames.frames = poses;
	r.u.collider_frames.point_count = 18;
	put_request(&r, 1);

	header(&r, PROTO_OP_COLLIDER_TRANSFORM, 120);
	r.u.collider_transform.index = 3; /* no keyframes: back to identity */
	put_request(&r, 1);

	header(&r, PROTO_OP_SESSION_RUN, 121);
	r.u.run.frames = 0;
	put_request(&r, 1);
}

static void replies(void)
{
	static float frame_pos[27];
	memcpy(frame_pos, g_pos, sizeof frame_pos);
	frame_pos[4] = -0.0f;
	static const char *const urls[] = {"ipc:///tmp/draped.stream", "tcp://127.0.0.1:7701"};
	static const proto_session_info infos[2] = {
		{1, "flag", PROTO_STATE_RUNNING, 12, 9}, {2, NULL, PROTO_STATE_DONE, 48, 400}};
	static const drape_tri_pair pairs[2] = {{0, 5}, {3, 7}};
	drape_sim_stats stats = {3, 1.5, 0.25, 0.125, 0.01f, 0.001f, 0, 4, 2, 123456, 0, 0, 0, 0.0};
	proto_frame frames[2] = {{3, 9, frame_pos, stats, 0, NULL, 0}, {4, 9, g_pos, stats, 0, NULL, 0}};

	proto_reply r;
	for (int op = PROTO_OP_HELLO; op < PROTO_OP_COUNT_; op++) {
		proto_reply_init(&r, (proto_op)op, 1000 + (uint64_t)op);
		switch ((proto_op)op) {
		case PROTO_OP_HELLO:
			r.u.hello.version = PROTO_VERSION;
			r.u.hello.server = "draped 0.1.0 (avx2)";
			r.u.hello.stream_urls = urls;
			r.u.hello.stream_url_count = 2;
			r.u.hello.auth_required = true;
			r.u.hello.limits.max_message = 64u << 20;
			r.u.hello.limits.max_vertices = 1000000;
			r.u.hello.limits.max_frames_per_get = 16;
			r.u.hello.limits.idle_timeout_s = 3600;
			break;
		case PROTO_OP_SESSION_CREATE:
			r.u.create.session = 42;
			memcpy(r.u.create.token, g_token, sizeof g_token);
			r.u.create.topology = (drape_sim_topology){9, 8, 16, 8, 8, 0, 0, 0, 0, 2, 7, 5};
			r.u.create.intersections = 0;
			break;
		case PROTO_OP_SESSION_RUN:
		case PROTO_OP_SESSION_RESUME:
			r.u.run.state = PROTO_STATE_QUEUED;
			r.u.run.frames_done = 5;
			r.u.run.frames_target = 48;
			r.u.run.queue_position = 2;
			break;
		case PROTO_OP_SESSION_CANCEL:
			r.u.cancel.state = PROTO_STATE_CANCELED;
			r.u.cancel.frames_done = 7;
			break;
		case PROTO_OP_SESSION_STATUS:
			r.u.status.state = PROTO_STATE_FAILED;
			r.u.status.name = "flag";
			r.u.status.frames_done = 12;
			r.u.status.frames_first = 1;
			r.u.status.vertices = 9;
			r.u.status.triangles = 8;
			r.u.status.colliders = 1;
			r.u.status.has_error = true;
			r.u.status.error.code = DRAPE_ENONFINITE;
			snprintf(r.u.status.error.message, sizeof r.u.status.error.message,
				 "frame 13: 4 vertices became non-finite");
			r.u.status.error_frame = 13;
			r.u.status.has_stats = true;
			r.u.status.stats = stats;
			break;
		case PROTO_OP_SESSION_LIST:
			r.u.list.sessions = infos;
			r.u.list.count = 2;
			break;
		case PROTO_OP_FRAMES_GET:
			r.u.frames_get.session = 42;
			r.u.frames_get.frames = frames;
			r.u.frames_get.count = 2;
			r.u.frames_get.frames_done = 12;
			break;
		case PROTO_OP_SERVER_STATS:
			r.u.server_stats = (proto_server_stats_rep){3, 1, 2, 1u << 20, 500, 480, 900, 4, 8, 12.5};
			break;
		case PROTO_OP_COLLIDER_ADD:
			r.u.collider_add.index = 1;
			break;
		case PROTO_OP_COLLIDER_FRAMES:
			r.u.collider_frames.frame_count = 96;
			break;
		case PROTO_OP_PREFLIGHT:
			r.u.preflight.count = 2;
			r.u.preflight.pairs = pairs;
			r.u.preflight.pair_count = 2;
			break;
		case PROTO_OP_SESSION_TOPOLOGY:
			r.u.topology.vertex_count = 9;
			r.u.topology.positions = g_pos;
			r.u.topology.triangle_count = 8;
			r.u.topology.triangles = g_tri;
			r.u.topology.uvs = g_pos; /* 18 finite floats: one pair per vertex */
			r.u.topology.fps = 24.0f;
			break;
		default:
			break;
		}
		put_reply(&r, 0);
	}

	/* Error replies: one answering a readable request, one answering
	 * nothing readable (no id, no op). */
	proto_header head = {true, PROTO_VERSION, true, 77, false, 0, PROTO_OP_SESSION_CREATE};
	drape_error e = {DRAPE_ERANGE, "session.create: triangles[5][1]: vertex index 9 >= vertex count 4"};
	proto_reply_init_error(&r, &head, &e);
	put_reply(&r, 1);
	drape_error e2 = {DRAPE_ETRUNCATED, "message ends inside an object at byte 3"};
	proto_reply_init_error(&r, NULL, &e2);
	put_reply(&r, 2);
}

static void streams(void)
{
	proto_stream_msg m;
	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_FRAME;
	m.session = 42;
	m.frame = (proto_frame){1, 9, g_pos, {1, 2.0, 0.5, 0, 0.02f, 0.005f, 0, 3, 0, 4242, 0, 0, 0, 0.0}, 0, NULL, 0};
	put_stream(&m, "frame", 0);

	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_END;
	m.session = 42;
	m.state = PROTO_STATE_DONE;
	m.frames_done = 48;
	put_stream(&m, "end", 0);

	m.state = PROTO_STATE_FAILED;
	m.frames_done = 13;
	m.has_error = true;
	m.error.code = DRAPE_ENONFINITE;
	snprintf(m.error.message, sizeof m.error.message, "frame 13: 4 vertices became non-finite");
	put_stream(&m, "end", 1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	g_dir = argv[1];
	make_sheet();
	requests();
	replies();
	streams();
	printf("%d seeds written to %s\n", g_written, g_dir);
	return 0;
}
