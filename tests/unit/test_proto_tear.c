/*
 * The torn-mesh keys of a frame (PROTOCOL.md, "Torn meshes"): a frame's
 * topology generation and, where its mesh changed, its triangles survive
 * the codec both ways in frames.get replies and stream messages; a reply
 * whose frame changes vertex count or generation without triangles, whose
 * first frame has a generation and no triangles, or whose triangles index
 * past their own frame's vertices is refused naming the frame; and
 * session.topology carries a torn cloth's newest mesh beside the created one.
 */
#include "proto/proto.h"
#include "tests/unit/check.h"

#include <string.h>

/* Four vertices, then two more split off (six). */
static float pos[6 * 3] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0};
static uint32_t tri0[6] = {0, 1, 2, 0, 2, 3};
static uint32_t tri1[6] = {0, 4, 5, 0, 2, 3};

/* Frames 1 (created mesh), 2 (torn: 6 vertices, triangles), 3 (same mesh). */
static void three_frames(proto_frame f[3])
{
	memset(f, 0, 3 * sizeof *f);
	for (int i = 0; i < 3; i++) {
		f[i].index = (uint32_t)i + 1;
		f[i].positions = pos;
		f[i].vertex_count = i == 0 ? 4 : 6;
		f[i].topology = i == 0 ? 0 : 1;
	}
	f[1].triangles = tri1;
	f[1].triangle_count = 2;
}

static drape_err roundtrip(const proto_frame *f, uint32_t n, proto_reply *d, drape_error *err)
{
	proto_reply r;
	proto_reply_init(&r, PROTO_OP_FRAMES_GET, 9);
	r.u.frames_get.session = 3;
	r.u.frames_get.frames = f;
	r.u.frames_get.count = n;
	r.u.frames_get.frames_done = n;
	proto_buf b = {0};
	drape_err rc = proto_reply_encode(&r, &b, err);
	if (rc == DRAPE_OK)
		rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_FRAMES_GET, d, err);
	proto_buf_free(&b);
	return rc;
}

static void test_reply_carries_torn_meshes(void)
{
	proto_frame f[3];
	three_frames(f);
	proto_reply d;
	drape_error err;
	CHECK_OK(roundtrip(f, 3, &d, &err));
	const proto_frame *g = d.u.frames_get.frames;
	int ok = d.u.frames_get.count == 3 && g[0].topology == 0 && g[0].triangles == NULL &&
		 g[0].vertex_count == 4 && g[1].topology == 1 && g[1].vertex_count == 6 &&
		 g[1].triangle_count == 2 && g[1].triangles != NULL &&
		 memcmp(g[1].triangles, tri1, sizeof tri1) == 0 && g[2].topology == 1 &&
		 g[2].triangles == NULL && g[2].vertex_count == 6;
	proto_reply_free(&d);
	CHECK(ok);
}

static void test_change_without_triangles_refused(void)
{
	proto_frame f[3];
	three_frames(f);
	proto_reply d;
	drape_error err;
	f[1].triangles = NULL;
	CHECK(roundtrip(f, 3, &d, &err) == DRAPE_EPROTO);
	CHECKF(strstr(err.message, "frames[1]") != NULL, "%s", err.message);
	/* A generation change with the same vertex count, too. */
	three_frames(f);
	f[2].topology = 2;
	CHECK(roundtrip(f, 3, &d, &err) == DRAPE_EPROTO);
	CHECKF(strstr(err.message, "frames[2]") != NULL, "%s", err.message);
	/* A reply starting on a torn mesh must carry it. */
	three_frames(f);
	CHECK(roundtrip(f + 2, 1, &d, &err) == DRAPE_EPROTO);
	CHECKF(strstr(err.message, "frames[0]") != NULL, "%s", err.message);
	CHECK_OK(roundtrip(f + 1, 2, &d, &err));
	proto_reply_free(&d);
}

static void test_triangle_past_its_frame_refused(void)
{
	proto_frame f[3];
	three_frames(f);
	uint32_t bad[6] = {0, 4, 6, 0, 2, 3};
	f[1].triangles = bad;
	proto_reply d;
	drape_error err;
	CHECK(roundtrip(f, 3, &d, &err) == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "frames[1].triangles") != NULL, "%s", err.message);
	/* The created mesh's triangles are no torn frame's: tri0 is fine. */
	f[1].triangles = tri0;
	CHECK_OK(roundtrip(f, 3, &d, &err));
	proto_reply_free(&d);
}

static void test_stream_frame_carries_torn_mesh(void)
{
	proto_stream_msg m, d;
	memset(&m, 0, sizeof m);
	m.kind = PROTO_STREAM_FRAME;
	m.session = 7;
	m.frame.index = 12;
	m.frame.vertex_count = 6;
	m.frame.positions = pos;
	m.frame.topology = 3;
	m.frame.triangles = tri1;
	m.frame.triangle_count = 2;
	proto_buf b = {0};
	drape_error err;
	CHECK_OK(proto_stream_encode(&m, &b, &err));
	drape_err rc = proto_stream_decode(b.data, b.len, 0, &d, &err);
	proto_buf_free(&b);
	CHECK_OK(rc);
	int ok = d.frame.topology == 3 && d.frame.vertex_count == 6 && d.frame.triangle_count == 2 &&
		 d.frame.triangles != NULL && memcmp(d.frame.triangles, tri1, sizeof tri1) == 0;
	proto_stream_free(&d);
	CHECK(ok);
}

/* session.topology: the created mesh and, for a torn cloth, its newest
 * mesh (generation, origins, triangles); a bad origin or triangle is
 * refused naming the key. */
static void test_topology_carries_current_mesh(void)
{
	uint32_t origin[6] = {0, 1, 2, 3, 1, 2};
	proto_reply r, d;
	proto_reply_init(&r, PROTO_OP_SESSION_TOPOLOGY, 4);
	proto_topology_rep *t = &r.u.topology;
	t->vertex_count = 4;
	t->positions = pos;
	t->triangle_count = 2;
	t->triangles = tri0;
	t->fps = 24.0f;
	t->generation = 2;
	t->current_vertex_count = 6;
	t->origin = origin;
	t->current_triangles = tri1;
	proto_buf b = {0};
	drape_error err;
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	drape_err rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_TOPOLOGY, &d, &err);
	proto_buf_free(&b);
	CHECK_OK(rc);
	const proto_topology_rep *g = &d.u.topology;
	int ok = g->vertex_count == 4 && g->generation == 2 && g->current_vertex_count == 6 &&
		 memcmp(g->origin, origin, sizeof origin) == 0 &&
		 memcmp(g->current_triangles, tri1, sizeof tri1) == 0 &&
		 memcmp(g->triangles, tri0, sizeof tri0) == 0;
	proto_reply_free(&d);
	CHECK(ok);
	/* An origin past the created vertices. */
	origin[5] = 4;
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_TOPOLOGY, &d, &err);
	proto_buf_free(&b);
	CHECK(rc == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "origin") != NULL, "%s", err.message);
	/* A current triangle past the current vertices. */
	origin[5] = 2;
	uint32_t bad[6] = {0, 4, 6, 0, 2, 3};
	t->current_triangles = bad;
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_TOPOLOGY, &d, &err);
	proto_buf_free(&b);
	CHECK(rc == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "current_triangles") != NULL, "%s", err.message);
	/* A session that never tore sends none of them. */
	t->generation = 0;
	CHECK_OK(proto_reply_encode(&r, &b, &err));
	rc = proto_reply_decode(b.data, b.len, 0, PROTO_OP_SESSION_TOPOLOGY, &d, &err);
	proto_buf_free(&b);
	CHECK_OK(rc);
	ok = d.u.topology.generation == 0 && d.u.topology.origin == NULL;
	proto_reply_free(&d);
	CHECK(ok);
}

static const check_test tests[] = {
	CHECK_TEST(test_topology_carries_current_mesh),
	CHECK_TEST(test_reply_carries_torn_meshes),
	CHECK_TEST(test_change_without_triangles_refused),
	CHECK_TEST(test_triangle_past_its_frame_refused),
	CHECK_TEST(test_stream_frame_carries_torn_mesh),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
