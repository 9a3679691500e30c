/*
 * Writes the seed corpus of fuzz_daemon: sequences of requests made by the
 * real encoder, each after its two-byte little-endian length (see
 * fuzz_daemon.c), that walk a session
 * through its life so the fuzzer starts deep in the daemon: create, run,
 * status, frames (held ones too), colliders, pins, cancel, resume, delete, and the failing
 * creates whose clean-up once closed descriptor 0.
 *   gen_daemon_seeds DIR
 * The owner token in the seeds is the one the harness's getrandom hands
 * out, and sessions are numbered from 1 in every input.
 */
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_BYTE 0x5a

static const char *g_dir;
static FILE *g_file;
static uint64_t g_id;

static float g_pos[27];
static uint32_t g_tri[24];

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

static void begin(const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/seed-%s", g_dir, name);
	g_file = fopen(path, "wb");
	if (g_file == NULL) {
		perror(path);
		exit(1);
	}
	g_id = 1;
}

static void end(void)
{
	if (fclose(g_file) != 0) {
		perror("fclose");
		exit(1);
	}
	g_file = NULL;
}

static void req(proto_op op, uint32_t session, proto_request *r)
{
	r->op = op;
	r->id = g_id++;
	if (proto_op_needs_session(op)) {
		r->has_session = true;
		r->session = session;
	}
	if (proto_op_needs_token(op)) {
		r->has_token = true;
		memset(r->token, TOKEN_BYTE, sizeof r->token);
	}
	proto_buf b = {0};
	drape_error err;
	if (proto_request_encode(r, &b, &err) != DRAPE_OK) {
		fprintf(stderr, "encode %s: %s\n", proto_op_name(op), err.message);
		exit(1);
	}
	if (b.len > 0xffff) {
		fprintf(stderr, "%s: %zu bytes do not fit the length prefix\n", proto_op_name(op), b.len);
		exit(1);
	}
	fputc((int)(b.len & 0xff), g_file);
	fputc((int)(b.len >> 8), g_file);
	fwrite(b.data, 1, b.len, g_file);
	proto_buf_free(&b);
}

static void simple(proto_op op, uint32_t session)
{
	proto_request r;
	proto_request_init(&r, op);
	req(op, session, &r);
}

static void create(const uint32_t *tri)
{
	proto_request r;
	proto_request_init(&r, PROTO_OP_SESSION_CREATE);
	r.u.create.mesh = (proto_mesh){g_pos, 9, tri, 8};
	drape_sim_params_default(&r.u.create.params.values);
	r.u.create.params.values.substeps = 1;
	r.u.create.params.values.iterations = 2;
	r.u.create.params.mask = PROTO_PARAMS_ALL;
	r.u.create.name = "fuzz";
	req(PROTO_OP_SESSION_CREATE, 0, &r);
}

static void run(uint32_t session, uint32_t frames)
{
	proto_request r;
	proto_request_init(&r, PROTO_OP_SESSION_RUN);
	r.u.run.frames = frames;
	req(PROTO_OP_SESSION_RUN, session, &r);
}

static void frames_get(uint32_t session, uint32_t first, uint32_t count, uint32_t wait_ms)
{
	proto_request r;
	proto_request_init(&r, PROTO_OP_FRAMES_GET);
	r.u.frames_get.first = first;
	r.u.frames_get.count = count;
	r.u.frames_get.wait_ms = wait_ms;
	req(PROTO_OP_FRAMES_GET, session, &r);
}

static void sphere(uint32_t session)
{
	proto_request r;
	proto_request_init(&r, PROTO_OP_COLLIDER_ADD);
	drape_collider_desc_default(&r.u.collider_add.desc);
	r.u.collider_add.desc.shape = DRAPE_SHAPE_SPHERE;
	r.u.collider_add.desc.center[1] = 0.5f;
	r.u.collider_add.desc.radius = 0.3f;
	req(PROTO_OP_COLLIDER_ADD, session, &r);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_daemon_seeds DIR\n");
		return 64;
	}
	g_dir = argv[1];
	make_sheet();

	begin("hello-stats-list");
	simple(PROTO_OP_HELLO, 0);
	simple(PROTO_OP_SERVER_STATS, 0);
	simple(PROTO_OP_SESSION_LIST, 0);
	end();

	begin("life");
	create(g_tri);
	frames_get(1, 1, 1, 2000); /* held until frame 1 is solved */
	run(1, 3);
	simple(PROTO_OP_SESSION_STATUS, 1);
	frames_get(1, 1, 3, 0);
	frames_get(1, 4, 1, 1000); /* held past the run's end */
	simple(PROTO_OP_SESSION_DELETE, 1);
	end();

	begin("colliders");
	create(g_tri);
	sphere(1);
	{
		static const drape_keyframe keys[2] = {{1, {0, 0, 0}, {0, 0, 0}}, {4, {0.2f, 0, 0}, {0, 45, 0}}};
		proto_request r;
		proto_request_init(&r, PROTO_OP_COLLIDER_TRANSFORM);
		r.u.collider_transform.index = 0;
		r.u.collider_transform.keyframes = keys;
		r.u.collider_transform.keyframe_count = 2;
		req(PROTO_OP_COLLIDER_TRANSFORM, 1, &r);
		static const uint32_t pins[2] = {0, 2};
		proto_request_init(&r, PROTO_OP_PINS_ATTACH);
		r.u.pins_attach.vertices = pins;
		r.u.pins_attach.count = 2;
		r.u.pins_attach.collider = 0;
		req(PROTO_OP_PINS_ATTACH, 1, &r);
		proto_request_init(&r, PROTO_OP_COLLIDER_REMOVE);
		r.u.collider_remove.index = 0;
		req(PROTO_OP_COLLIDER_REMOVE, 1, &r);
	}
	run(1, 2);
	frames_get(1, 1, 2, 0);
	end();

	begin("cancel-resume");
	create(g_tri);
	run(1, 6);
	simple(PROTO_OP_SESSION_CANCEL, 1);
	simple(PROTO_OP_SESSION_RESUME, 1);
	simple(PROTO_OP_SESSION_STATUS, 1);
	end();

	begin("update-preflight");
	create(g_tri);
	{
		proto_request r;
		proto_request_init(&r, PROTO_OP_SESSION_UPDATE);
		drape_sim_params_default(&r.u.update.params.values);
		r.u.update.params.values.wind[0] = 3.0f;
		r.u.update.params.mask = PROTO_PARAM_WIND | PROTO_PARAM_FPS;
		req(PROTO_OP_SESSION_UPDATE, 1, &r);
		proto_request_init(&r, PROTO_OP_PREFLIGHT);
		r.u.preflight.mesh = (proto_mesh){g_pos, 9, g_tri, 8};
		req(PROTO_OP_PREFLIGHT, 0, &r);
	}
	run(1, 1);
	end();

	/* A face with a repeated vertex fails the create after the session
	 * was half built: its clean-up once closed descriptor 0. */
	begin("failing-creates");
	{
		static uint32_t bad[24];
		memcpy(bad, g_tri, sizeof bad);
		bad[1] = bad[0];
		for (int i = 0; i < 4; i++)
			create(bad);
		simple(PROTO_OP_HELLO, 0);
	}
	end();
	return 0;
}
