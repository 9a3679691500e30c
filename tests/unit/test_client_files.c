/*
 * Tests of the client's file readers and writers: the OBJ reader and writer
 * (client/obj.c) and the scene loader (client/scene.c). Run from the
 * repository root (tests/run.sh does), since the data lives in tests/data/.
 */
#include "client/obj.h"
#include "client/scene.h"
#include "tests/unit/check.h"

#include <float.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#define DATA "tests/data/"

/* Twice the area of triangle t, projected on +Z (all planar test data lies
 * in z = 0 facing +Z). */
static double tri_area_z(const drape_obj_mesh *m, uint32_t t)
{
	const uint32_t *i = m->triangles + (size_t)t * 3;
	const float *a = m->positions + (size_t)i[0] * 3, *b = m->positions + (size_t)i[1] * 3,
		    *c = m->positions + (size_t)i[2] * 3;
	return ((double)b[0] - a[0]) * ((double)c[1] - a[1]) - ((double)b[1] - a[1]) * ((double)c[0] - a[0]);
}

static int same_set(const drape_obj_group *g, const uint32_t *want, uint32_t n)
{
	if (g == NULL || g->count != n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (g->vertices[i] != want[i])
			return 0;
	return 1;
}

/* ---- OBJ reader ------------------------------------------------------------- */

static void test_obj_triangulate_counts(void)
{
	drape_obj_mesh m;
	drape_error err;
	CHECK_OK(drape_obj_read_file(DATA "obj/mixed.obj", NULL, &m, &err));
	int ok = m.vertex_count == 15 && m.face_count == 5 && m.triangle_count == 11;
	uint32_t nv = m.vertex_count, nf = m.face_count, nt = m.triangle_count;
	/* Every triangle faces +Z (winding kept) and the areas add up to the
	 * polygons' areas: 1 + 1 + 1.25 + 2 = 5.25 (times 2 for the cross). */
	double sum = 0, minarea = 1e9;
	for (uint32_t t = 0; t < m.triangle_count; t++) {
		double a = tri_area_z(&m, t);
		sum += a;
		if (a < minarea)
			minarea = a;
	}
	drape_obj_free(&m);
	CHECKF(ok, "v %u f %u t %u, want 15 5 11", nv, nf, nt);
	CHECK_NEAR(sum, 2 * 5.25, 1e-5);
	CHECKF(minarea >= 0, "a triangle is flipped (area %g)", minarea);
}

static void test_obj_ngon_nonconvex(void)
{
	drape_obj_mesh m;
	drape_error err;
	CHECK_OK(drape_obj_read_file(DATA "obj/lshape.obj", NULL, &m, &err));
	uint32_t nt = m.triangle_count;
	/* Ear clipping keeps every triangle inside the outline: none flipped,
	 * and the unsigned areas add up to the polygon's area. A fan from the
	 * reflex vertex would give a flipped triangle and a larger sum. */
	double abs_sum = 0, minarea = 1e9;
	for (uint32_t t = 0; t < m.triangle_count; t++) {
		double a = tri_area_z(&m, t);
		abs_sum += fabs(a);
		if (a < minarea)
			minarea = a;
	}
	drape_obj_free(&m);
	CHECKF(nt == 4 + 2, "%u triangles, want 6", nt);
	CHECKF(minarea > 0, "a triangle is flipped or empty (area %g)", minarea);
	CHECK_NEAR(abs_sum, 2 * (3.0 + 0.375), 1e-5);
}

static void test_obj_negative_indices(void)
{
	drape_obj_mesh m;
	drape_error err;
	CHECK_OK(drape_obj_read_file(DATA "obj/negative.obj", NULL, &m, &err));
	uint32_t want[6] = {0, 1, 2, 0, 2, 3};
	int ok = m.triangle_count == 2 && memcmp(m.triangles, want, sizeof want) == 0;
	drape_obj_free(&m);
	CHECK(ok);
}

static void test_obj_index_forms(void)
{
	drape_obj_mesh m;
	drape_error err;
	CHECK_OK(drape_obj_read_file(DATA "obj/forms.obj", NULL, &m, &err));
	uint32_t want[6] = {0, 1, 2, 0, 2, 3};
	/* The continued line gives vertex 4 = (0, 1, 0); w and colours dropped. */
	int ok = m.vertex_count == 4 && m.triangle_count == 2 && memcmp(m.triangles, want, sizeof want) == 0 &&
		 m.positions[9] == 0.0f && m.positions[10] == 1.0f && m.positions[11] == 0.0f &&
		 m.positions[3] == 1.0f && m.positions[4] == 0.0f;
	int groups = m.group_count == 1 && strcmp(m.groups[0].name, "sheet") == 0 && m.groups[0].count == 4;
	drape_obj_free(&m);
	CHECK(ok);
	CHECK(groups);
}

static void test_obj_groups(void)
{
	drape_obj_mesh m;
	drape_error err;
	CHECK_OK(drape_obj_read_file(DATA "obj/groups.obj", NULL, &m, &err));
	static const uint32_t left[] = {0, 1, 2, 3}, right[] = {1, 2, 4, 5}, thing[] = {2, 3, 5};
	int ok = m.group_count == 4 && same_set(drape_obj_find_group(&m, "left"), left, 4) &&
		 same_set(drape_obj_find_group(&m, "both"), left, 4) &&
		 same_set(drape_obj_find_group(&m, "right"), right, 4) &&
		 same_set(drape_obj_find_group(&m, "thing"), thing, 3) && drape_obj_find_group(&m, "x") == NULL &&
		 m.triangle_count == 2 + 2 + 1 + 1;
	drape_obj_free(&m);
	CHECK(ok);
}

typedef struct bad_case {
	const char *text;
	drape_err code;
	const char *message; /* expected message, after "t.obj:" */
} bad_case;

static void test_obj_broken(void)
{
	static const bad_case cases[] = {
		{"v 0 0 0\nv 1 0 0\nf 1 2 3\n", DRAPE_ERANGE, "3: face index 3 out of range (1..2)"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\n\n# c\nf 1 2 -4\n", DRAPE_ERANGE,
		 "6: face index -4 out of range (-1..-3)"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 0\n", DRAPE_ERANGE,
		 "4: face index 0 is not valid (OBJ indices start at 1)"},
		{"f 1 2 3\nv 0 0 0\n", DRAPE_ERANGE, "1: face index 1 out of range (no vertex defined above the face)"},
		{"v 0 0 0\nv 1 0 0\nf 1 2\n", DRAPE_EPARSE, "3: face has 2 vertices (at least 3 needed)"},
		{"v 0 0 0\nv 1 0 0\nf\n", DRAPE_EPARSE, "3: face has 0 vertices (at least 3 needed)"},
		{"v 0 0\n", DRAPE_EPARSE, "1: vertex has 2 coordinates (3 needed)"},
		{"v 0 0 0\nv 1 nan 0\n", DRAPE_ENONFINITE, "2: vertex coordinate 'nan' is not a finite float"},
		{"v 0 0 inf\n", DRAPE_ENONFINITE, "1: vertex coordinate 'inf' is not a finite float"},
		{"v 0 0 1e39\n", DRAPE_ENONFINITE, "1: vertex coordinate '1e39' is not a finite float"},
		{"v 0 0 1.5x\n", DRAPE_EPARSE, "1: '1.5x' is not a number"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3/\n", DRAPE_OK, NULL},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3//x\n", DRAPE_EPARSE,
		 "4: face vertex '3//x' is not v, v/vt, v//vn or v/vt/vn"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 a\n", DRAPE_EPARSE,
		 "4: face vertex 'a' is not v, v/vt, v//vn or v/vt/vn"},
		{"v 0 0 0\nv 1 0 \\\n 0\nbogus 1 2\n", DRAPE_EPARSE, "4: unknown statement 'bogus'"},
		{"v 0 0 0\ncstype bspline\n", DRAPE_EPARSE, "2: free-form geometry ('cstype') is not supported"},
		{"v 0 0 0\n\x01\x02\x03\n", DRAPE_EPARSE, "2: unknown statement (binary data; not an OBJ file?)"},
		{"v 0 0 0\nv 1 \0 0\n", DRAPE_EPARSE, "2: NUL byte in the text (not an OBJ file?)"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 99999999999999999999\n", DRAPE_ERANGE,
		 "4: face index 1000000000000 out of range (1..3)"},
	};
	for (size_t i = 0; i < CHECK_COUNT(cases); i++) {
		drape_obj_mesh m;
		drape_error err;
		memset(&m, 0x5a, sizeof m);
		/* Case 17 holds a NUL byte, so its length is not strlen's. */
		size_t len = i == 17 ? 19 : strlen(cases[i].text);
		drape_err rc = drape_obj_read_buffer(cases[i].text, len, "t.obj", NULL, &m, &err);
		if (cases[i].code == DRAPE_OK) {
			CHECKF(rc == DRAPE_OK, "case %zu: %s", i, err.message);
			drape_obj_free(&m);
			continue;
		}
		char want[160];
		snprintf(want, sizeof want, "t.obj:%s", cases[i].message);
		CHECKF(rc == cases[i].code && strcmp(err.message, want) == 0, "case %zu: rc %d '%s', want %d '%s'", i,
		       (int)rc, err.message, (int)cases[i].code, want);
		/* Output untouched on failure. */
		unsigned char probe[sizeof m];
		memset(probe, 0x5a, sizeof probe);
		CHECKF(memcmp(&m, probe, sizeof m) == 0, "case %zu: output touched on failure", i);
	}
	drape_obj_mesh m;
	drape_error err;
	CHECK(drape_obj_read_file(DATA "obj/bad_index.obj", NULL, &m, &err) == DRAPE_ERANGE);
	CHECKF(strcmp(err.message, DATA "obj/bad_index.obj:7: face index 9 out of range (1..4)") == 0, "%s",
	       err.message);
	CHECK(drape_obj_read_file(DATA "obj/bad_nan.obj", NULL, &m, &err) == DRAPE_ENONFINITE);
	CHECKF(strstr(err.message, "bad_nan.obj:2: ") != NULL, "%s", err.message);
	CHECK(drape_obj_read_file(DATA "obj/missing.obj", NULL, &m, &err) == DRAPE_ENOTFOUND);
	CHECK(drape_obj_read_file(DATA "obj", NULL, &m, &err) == DRAPE_EIO);
	/* A FIFO is refused at once instead of blocking the reader. */
	const char *fifo = "build/test_client_files.fifo";
	mkdir("build", 0777);
	remove(fifo);
	if (mkfifo(fifo, 0600) == 0) {
		drape_err rc = drape_obj_read_file(fifo, NULL, &m, &err);
		remove(fifo);
		CHECKF(rc == DRAPE_EIO && strstr(err.message, "not a regular file") != NULL, "%s", err.message);
	}
}

/* `vt` lines give per-vertex texture coordinates when every face corner
 * names one; seams are counted; bad texture indices are errors. */
static void test_obj_texcoords(void)
{
	drape_obj_mesh m;
	drape_error err;
	/* A quad of two charts' worth of corners: vertex 3 (1-based) is given
	 * (1, 1) by the first face and (2, 1) by the second: a seam. */
	static const char quad[] = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
				   "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1 0.5\nvt 2 1\nvt 0.25\n"
				   "f 1/1 2/2/1 3/3\nf 1/1 3/5 -1/-3\nvn 0 0 1\n";
	CHECK_OK(drape_obj_read_buffer(quad, strlen(quad), "q.obj", NULL, &m, &err));
	CHECK(m.uvs != NULL && m.vertex_count == 4);
	/* -1/-3 on the second face: vertex 4, texture 4 of 6. */
	static const float want_uv[8] = {0, 0, 1, 0, 1, 1, 0, 1};
	CHECK(memcmp(m.uvs, want_uv, sizeof want_uv) == 0);
	CHECK(m.uv_seam_vertices == 1);
	drape_obj_free(&m);
	CHECK(m.uvs == NULL);

	/* One corner without a texture index: no per-vertex coordinates. */
	static const char mixed[] = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\n"
				    "f 1/1 2/1 3/1\nf 1/1 3/1 4\n";
	CHECK_OK(drape_obj_read_buffer(mixed, strlen(mixed), "m.obj", NULL, &m, &err));
	CHECK(m.uvs == NULL && m.uv_seam_vertices == 0);
	drape_obj_free(&m);
	/* No vt at all, and a vertex in no face (it gets 0, 0). */
	static const char none[] = "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n";
	CHECK_OK(drape_obj_read_buffer(none, strlen(none), "n.obj", NULL, &m, &err));
	CHECK(m.uvs == NULL);
	drape_obj_free(&m);
	static const char loose[] = "v 5 5 5\nv 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0.5 0.5\nvt 1 0\nvt 1 1\n"
				    "f 2/1 3/2 4/3\n";
	CHECK_OK(drape_obj_read_buffer(loose, strlen(loose), "l.obj", NULL, &m, &err));
	CHECK(m.uvs != NULL && m.uvs[0] == 0.0f && m.uvs[1] == 0.0f && m.uvs[2] == 0.5f && m.uvs[7] == 1.0f);
	drape_obj_free(&m);

	static const bad_case cases[] = {
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nf 1/1 2/2 3/1\n", DRAPE_ERANGE,
		 "5: texture index 2 out of range (1..1)"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nf 1/1 2/-2 3/1\n", DRAPE_ERANGE,
		 "5: texture index -2 out of range (-1..-1)"},
		{"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1/1 2/1 3/1\nvt 0 0\n", DRAPE_ERANGE,
		 "4: texture index 1 out of range (1..0)"},
		{"vt\n", DRAPE_EPARSE, "1: texture coordinate has 0 numbers (1 to 3 expected)"},
		{"vt 0 0 0 0\n", DRAPE_EPARSE, "1: texture coordinate has 4 numbers (1 to 3 expected)"},
		{"vt 0 nan\n", DRAPE_ENONFINITE, "1: vertex coordinate 'nan' is not a finite float"},
	};
	for (size_t i = 0; i < CHECK_COUNT(cases); i++) {
		memset(&m, 0x5a, sizeof m);
		drape_err rc = drape_obj_read_buffer(cases[i].text, strlen(cases[i].text), "t.obj", NULL, &m, &err);
		char want[160];
		snprintf(want, sizeof want, "t.obj:%s", cases[i].message);
		CHECKF(rc == cases[i].code && strcmp(err.message, want) == 0, "case %zu: rc %d '%s', want %d '%s'", i,
		       (int)rc, err.message, (int)cases[i].code, want);
		unsigned char probe[sizeof m];
		memset(probe, 0x5a, sizeof probe);
		CHECKF(memcmp(&m, probe, sizeof m) == 0, "case %zu: output touched on failure", i);
	}
	/* The MakeHuman suit has vt on every corner. */
	CHECK_OK(drape_obj_read_file(DATA "meshes/mh_male_casualsuit04.obj", NULL, &m, &err));
	CHECK(m.uvs != NULL);
	for (uint32_t v = 0; v < m.vertex_count * 2; v++)
		CHECK(isfinite(m.uvs[v]) && m.uvs[v] >= -1.0f && m.uvs[v] <= 2.0f);
	drape_obj_free(&m);
}

static void test_obj_limits(void)
{
	drape_obj_limits lim;
	drape_obj_limits_default(&lim);
	drape_obj_mesh m;
	drape_error err;
	const char *text = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";
	lim.max_vertices = 3;
	CHECK(drape_obj_read_buffer(text, strlen(text), "t.obj", &lim, &m, &err) == DRAPE_ELIMIT);
	CHECKF(strcmp(err.message, "t.obj:4: more than 3 vertices (limit)") == 0, "%s", err.message);
	drape_obj_limits_default(&lim);
	lim.max_triangles = 1;
	CHECK(drape_obj_read_buffer(text, strlen(text), "t.obj", &lim, &m, &err) == DRAPE_ELIMIT);
	drape_obj_limits_default(&lim);
	lim.max_face_vertices = 3;
	CHECK(drape_obj_read_buffer(text, strlen(text), "t.obj", &lim, &m, &err) == DRAPE_ELIMIT);
	drape_obj_limits_default(&lim);
	lim.max_bytes = 10;
	CHECK(drape_obj_read_buffer(text, strlen(text), "t.obj", &lim, &m, &err) == DRAPE_ELIMIT);
	drape_obj_limits_default(&lim);
	lim.max_groups = 1;
	const char *g = "g a\ng b\n";
	CHECK(drape_obj_read_buffer(g, strlen(g), "t.obj", &lim, &m, &err) == DRAPE_ELIMIT);
	/* An empty buffer is an empty mesh, not an error. */
	CHECK_OK(drape_obj_read_buffer("", 0, "t.obj", NULL, &m, &err));
	CHECK(m.vertex_count == 0 && m.triangle_count == 0);
	drape_obj_free(&m);
}

/* ---- OBJ writer ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 32);
}

/* Random float bits, finite, over the whole exponent range. */
static float rng_float(void)
{
	for (;;) {
		uint32_t b = rng_next();
		float f;
		memcpy(&f, &b, sizeof f);
		if (isfinite(f))
			return f;
	}
}

static void test_obj_roundtrip_exact(void)
{
	/* Bit-exact round trip: the writer uses 9 significant digits. Values
	 * cover every magnitude (the fast path and the %.9g fallback), signed
	 * zeros, subnormals and the extremes. */
	enum { NV = 20000, NT = 5000 };
	float *pos = malloc(NV * 3 * sizeof *pos);
	uint32_t *tri = malloc(NT * 3 * sizeof *tri);
	CHECK(pos && tri);
	static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 1e-5f, 9.99999975e-06f, 1e9f,
					999999999.0f, 123456789.0f, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f,
					0.3f, 2.5f, 1e-4f, 99999.9922f, 16777216.0f, 0.999999940f};
	for (uint32_t i = 0; i < NV * 3; i++) {
		if (i < CHECK_COUNT(special))
			pos[i] = special[i];
		else if (i % 2)
			pos[i] = rng_float();
		else /* typical mesh coordinates */
			pos[i] = (float)((double)rng_next() / 4294967296.0 * 4.0 - 2.0);
	}
	for (uint32_t i = 0; i < NT * 3; i++)
		tri[i] = rng_next() % NV;
	char *text = NULL;
	size_t len = 0;
	drape_error err;
	drape_obj_mesh m;
	drape_err rc = drape_obj_format(pos, NV, tri, NT, &text, &len, &err);
	if (rc == DRAPE_OK)
		rc = drape_obj_read_buffer(text, len, "rt.obj", NULL, &m, &err);
	free(text);
	if (rc != DRAPE_OK) {
		free(pos);
		free(tri);
		CHECKF(0, "%s", err.message);
	}
	int ok = m.vertex_count == NV && m.triangle_count == NT &&
		 memcmp(m.positions, pos, NV * 3 * sizeof *pos) == 0 && memcmp(m.triangles, tri, NT * 3 * sizeof *tri) == 0;
	uint32_t bad = 0;
	for (uint32_t i = 0; i < NV * 3 && ok == 0; i++)
		if (memcmp(&m.positions[i], &pos[i], sizeof(float)) != 0) {
			bad = i;
			break;
		}
	float got = m.positions ? m.positions[bad] : 0, want = pos[bad];
	drape_obj_free(&m);
	free(pos);
	free(tri);
	CHECKF(ok, "mismatch at %u: wrote %.9g read %.9g", bad, (double)want, (double)got);
}

static void test_obj_writer_text(void)
{
	const float pos[] = {0.5f, -0.0f, 1e-7f, 1.0f, 100.25f, -3.0f};
	const uint32_t tri[] = {0, 1, 1};
	char *text;
	size_t len;
	drape_error err;
	CHECK_OK(drape_obj_format(pos, 2, tri, 1, &text, &len, &err));
	const char *want = "# drape: 2 vertices, 1 triangles\nv 0.5 -0 1.00000001e-07\nv 1 100.25 -3\nf 1 2 2\n";
	int ok = strcmp(text, want) == 0 && len == strlen(want);
	CHECKF(ok, "got '%s'", text);
	free(text);
	const float bad[] = {0, NAN, 0};
	CHECK(drape_obj_format(bad, 1, NULL, 0, &text, &len, &err) == DRAPE_ENONFINITE);
	CHECK(drape_obj_format(pos, 1, tri, 1, &text, &len, &err) == DRAPE_ERANGE);

	/* The file writer: a temporary name renamed over the target. */
	const char *path = "build/test_client_files_out.obj";
	mkdir("build", 0777);
	CHECK_OK(drape_obj_write_file(path, pos, 2, tri, 1, &err));
	drape_obj_mesh m;
	CHECK_OK(drape_obj_read_file(path, NULL, &m, &err));
	ok = m.vertex_count == 2 && m.triangle_count == 1 && memcmp(m.positions, pos, sizeof pos) == 0;
	drape_obj_free(&m);
	remove(path);
	CHECK(ok);
	CHECK(drape_obj_write_file("build/no/such/dir/x.obj", pos, 2, tri, 1, &err) == DRAPE_EIO);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Speed is reported, not asserted (ARCHITECTURE.md: benchmarks measure);
 * the check is that a 100k-vertex frame formats and reads back intact. */
static void test_obj_write_speed(void)
{
	enum { N = 100000, T = 2 * N };
	float *pos = malloc(N * 3 * sizeof *pos);
	uint32_t *tri = malloc(T * 3 * sizeof *tri);
	CHECK(pos && tri);
	for (uint32_t i = 0; i < N * 3; i++)
		pos[i] = (float)((double)rng_next() / 4294967296.0 * 2.0 - 1.0);
	for (uint32_t i = 0; i < T * 3; i++)
		tri[i] = rng_next() % N;
	char *text = NULL;
	size_t len = 0;
	drape_error err;
	double best = 1e9;
	drape_err rc = DRAPE_OK;
	for (int rep = 0; rep < 3 && rc == DRAPE_OK; rep++) {
		free(text);
		double t0 = now_ms();
		rc = drape_obj_format(pos, N, tri, T, &text, &len, &err);
		double t = now_ms() - t0;
		if (t < best)
			best = t;
	}
	/* For comparison: the same floats through printf("%.9g"). */
	char *tmp = malloc((size_t)N * 3 * 20);
	double tp = 0;
	if (tmp != NULL) {
		double t1 = now_ms();
		char *o = tmp;
		for (uint32_t i = 0; i < N * 3; i++)
			o += sprintf(o, "%.9g ", (double)pos[i]);
		tp = now_ms() - t1;
		free(tmp);
	}
	double t0 = now_ms();
	drape_obj_mesh m;
	if (rc == DRAPE_OK)
		rc = drape_obj_read_buffer(text, len, "speed.obj", NULL, &m, &err);
	double tr = now_ms() - t0;
	free(text);
	int ok = rc == DRAPE_OK && m.vertex_count == N && memcmp(m.positions, pos, N * 3 * sizeof *pos) == 0;
	if (rc == DRAPE_OK)
		drape_obj_free(&m);
	free(pos);
	free(tri);
	printf("  obj: 100k vertices + 200k triangles: format %.1f ms (%.1f MB; the floats alone through "
	       "printf %%.9g: %.1f ms), read %.1f ms\n",
	       best, (double)len / 1e6, tp, tr);
	CHECK(ok);
}

/* ---- Real meshes ------------------------------------------------------------------ */

typedef struct mesh_count {
	const char *path;
	uint32_t v, f;
} mesh_count;

static void test_obj_project_meshes(void)
{
	/* v / f from tests/data/meshes/SOURCES.md. */
	static const mesh_count meshes[] = {
		{DATA "meshes/mh_male_casualsuit04.obj", 1696, 1620},
		{DATA "meshes/mh_proxy_male_generic.obj", 13652, 13650},
		{DATA "meshes/mh_female_elegantsuit01.obj", 2205, 2096},
		{DATA "meshes/mh_proxy_female_generic.obj", 13868, 13866},
		{DATA "meshes/cj_spot.obj", 2930, 5856},
		{DATA "meshes/dc_tshirt1900.obj", 1921, 3726},
		{DATA "meshes/gc_mean_all.obj", 23752, 47500},
	};
	for (size_t i = 0; i < CHECK_COUNT(meshes); i++) {
		drape_obj_mesh m;
		drape_error err;
		drape_err rc = drape_obj_read_file(meshes[i].path, NULL, &m, &err);
		CHECKF(rc == DRAPE_OK, "%s", err.message);
		int ok = m.vertex_count == meshes[i].v && m.face_count == meshes[i].f && m.triangle_count >= m.face_count;
		uint32_t v = m.vertex_count, f = m.face_count;
		drape_obj_free(&m);
		CHECKF(ok, "%s: v %u f %u, want %u %u", meshes[i].path, v, f, meshes[i].v, meshes[i].f);
	}
}

static void test_obj_shared_meshes(void)
{
	static const mesh_count meshes[] = {
		{"../shared/data/meshes/mh_base.obj", 19158, 18486},
		{"../shared/data/meshes/mh_hair_bob01.obj", 5203, 4237},
	};
	struct stat st;
	if (stat("../shared/data/meshes", &st) != 0) {
		printf("  note: ../shared/data/meshes is absent; mh_base.obj and mh_hair_bob01.obj not checked\n");
		return;
	}
	for (size_t i = 0; i < CHECK_COUNT(meshes); i++) {
		if (stat(meshes[i].path, &st) != 0) {
			printf("  note: %s is absent, skipped\n", meshes[i].path);
			continue;
		}
		drape_obj_mesh m;
		drape_error err;
		drape_err rc = drape_obj_read_file(meshes[i].path, NULL, &m, &err);
		CHECKF(rc == DRAPE_OK, "%s", err.message);
		int ok = m.vertex_count == meshes[i].v && m.face_count == meshes[i].f;
		uint32_t v = m.vertex_count, f = m.face_count, g = m.group_count;
		drape_obj_free(&m);
		CHECKF(ok, "%s: v %u f %u, want %u %u", meshes[i].path, v, f, meshes[i].v, meshes[i].f);
		/* SOURCES.md counts 172 groups: 172 `g` statements, some names
		 * repeated (eyelash helpers), 139 distinct names. */
		if (i == 0)
			CHECKF(g == 139, "mh_base.obj: %u distinct groups, want 139", g);
	}
}

/* ---- Scenes ------------------------------------------------------------------------ */

static drape_err load_str(const char *json, drape_scene *s, drape_error *err)
{
	return drape_scene_read_string(json, strlen(json), DATA "scenes", "s.json", NULL, s, err);
}

static void test_scene_issue_example(void)
{
	drape_scene s;
	drape_error err;
	drape_err rc = drape_scene_read(DATA "scenes/issue3.json", NULL, &s, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	drape_sim_params d;
	drape_sim_params_default(&d);
	const drape_sim_params *p = &s.params;
	int ok = p->fps == 24.0f && s.frames == 48 && p->substeps == 4 && p->iterations == 10 && p->gravity[0] == 0 &&
		 p->gravity[1] == -9.81f && p->gravity[2] == 0 && p->damping == 0.99f && p->wind[0] == 3.0f &&
		 p->wind[1] == 0 && p->wind[2] == 0 && p->drag == 1.0f && p->lift == 0.3f && p->stretch == 1.0f &&
		 p->shear == 0.9f && p->bend == 0.2f && p->thickness == 0.005f &&
		 /* untouched keys keep their defaults */
		 p->density == d.density && p->air_density == d.air_density && p->long_range == d.long_range &&
		 p->self_collision == 0;
	int mesh = s.cloth.vertex_count == 64 && s.cloth.triangle_count == 98 && s.cloth_path != NULL &&
		   strcmp(s.cloth_path, DATA "scenes/../obj/sheet.obj") == 0;
	int pins = s.pin_count == 2 && s.pins[0] == 0 && s.pins[1] == 63 && s.pin_attach[0] == DRAPE_SCENE_NO_ATTACH &&
		   s.collider_count == 0;
	drape_scene_free(&s);
	CHECK(ok);
	CHECK(mesh);
	CHECK(pins);
}

static void test_scene_pins(void)
{
	drape_scene s;
	drape_error err;
	/* By box after scale 2 and translate: the sheet spans x in [1, 3], y in
	 * [0, 2]; the box takes the right column (x = 3), 8 vertices. */
	CHECK_OK(load_str("{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 2, \"translate\": [1, 0, 0],"
			  "\"pins\": {\"box\": {\"min\": [2.9, -1, -1], \"max\": [3.1, 3, 1]}}}}",
			  &s, &err));
	int ok = s.pin_count == 8 && s.cloth.positions[0] == 1.0f && s.cloth.positions[3 * 63] == 3.0f;
	for (uint32_t i = 0; ok && i < 8; i++)
		ok = s.pins[i] == i * 8 + 7;
	drape_scene_free(&s);
	CHECK(ok);

	/* By OBJ group: "top" holds the faces of the top row, so rows 6 and 7. */
	CHECK_OK(load_str("{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": {\"group\": \"top\"}}}", &s, &err));
	ok = s.pin_count == 16 && s.pins[0] == 48 && s.pins[15] == 63;
	drape_scene_free(&s);
	CHECK(ok);

	/* A list, with duplicates merged and per-entry attach. */
	CHECK_OK(load_str("{\"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 1}},"
			  " {\"plane\": {\"point\": [0,0,0], \"normal\": [0,1,0]}}],"
			  " \"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": ["
			  "{\"indices\": [5, 3, 5]}, {\"indices\": [10], \"attach\": 1}, {\"indices\": [3]}]}}",
			  &s, &err));
	ok = s.pin_count == 3 && s.pins[0] == 3 && s.pins[1] == 5 && s.pins[2] == 10 &&
	     s.pin_attach[0] == DRAPE_SCENE_NO_ATTACH && s.pin_attach[1] == DRAPE_SCENE_NO_ATTACH &&
	     s.pin_attach[2] == 1;
	drape_scene_free(&s);
	CHECK(ok);
}

static void test_scene_grid(void)
{
	/* A tilted sheet: its vertices must lie in the plane through the
	 * center with the given normal, every triangle must face the normal,
	 * and the sheet must span the size along two perpendicular axes. */
	const float n0[3] = {1, 2, 2}; /* |n| = 3 */
	const float center[3] = {0.5f, 1.0f, -2.0f};
	const uint32_t nx = 7, ny = 5;
	const float w = 2.0f, h = 1.0f;
	drape_obj_mesh m;
	drape_error err;
	CHECK_OK(drape_scene_make_grid(w, h, nx, ny, center, n0, NULL, &m, &err));
	double n[3] = {1 / 3.0, 2 / 3.0, 2 / 3.0};
	int ok = m.vertex_count == nx * ny && m.triangle_count == 2 * (nx - 1) * (ny - 1);
	double maxoff = 0, minfacing = 1e9;
	for (uint32_t i = 0; i < m.vertex_count; i++) {
		const float *p = m.positions + i * 3;
		double off = fabs((p[0] - center[0]) * n[0] + (p[1] - center[1]) * n[1] + (p[2] - center[2]) * n[2]);
		if (off > maxoff)
			maxoff = off;
	}
	uint32_t diag_a = 0, diag_b = 0;
	for (uint32_t t = 0; t < m.triangle_count; t++) {
		const uint32_t *i = m.triangles + t * 3;
		const float *a = m.positions + i[0] * 3, *b = m.positions + i[1] * 3, *c = m.positions + i[2] * 3;
		double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
		double x[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
		double f = (x[0] * n[0] + x[1] * n[1] + x[2] * n[2]) / sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
		if (f < minfacing)
			minfacing = f;
		/* The first triangle of each cell tells its diagonal. */
		if (t % 2 == 0) {
			if (i[2] == i[0] + nx + 1)
				diag_a++;
			else
				diag_b++;
		}
	}
	/* Corners: vertex 0 to nx-1 spans w along u, 0 to (ny-1)nx spans h
	 * along v, and u is perpendicular to v. */
	const float *p0 = m.positions, *pu = m.positions + (nx - 1) * 3, *pv = m.positions + (ny - 1) * nx * 3;
	double du[3] = {pu[0] - p0[0], pu[1] - p0[1], pu[2] - p0[2]}, dv[3] = {pv[0] - p0[0], pv[1] - p0[1], pv[2] - p0[2]};
	double lu = sqrt(du[0] * du[0] + du[1] * du[1] + du[2] * du[2]);
	double lv = sqrt(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]);
	double dot = du[0] * dv[0] + du[1] * dv[1] + du[2] * dv[2];
	/* The centroid is the center. */
	double cs[3] = {0, 0, 0};
	for (uint32_t i = 0; i < m.vertex_count; i++)
		for (int k = 0; k < 3; k++)
			cs[k] += m.positions[i * 3 + k] / m.vertex_count;
	const drape_obj_group *top = drape_obj_find_group(&m, "top"), *left = drape_obj_find_group(&m, "left");
	int groups = top && top->count == nx && top->vertices[0] == (ny - 1) * nx && left && left->count == ny &&
		     drape_obj_find_group(&m, "corners") && drape_obj_find_group(&m, "corners")->count == 4;
	/* "top" is the side nearest world +Y. */
	int top_up = m.positions[top ? top->vertices[0] * 3 + 1 : 0] > m.positions[1];
	drape_obj_free(&m);
	CHECK(ok);
	CHECKF(maxoff < 1e-5, "a vertex is %g off the plane", maxoff);
	CHECKF(minfacing > 0.9999, "a triangle faces away from the normal (%g)", minfacing);
	CHECK_NEAR(lu, w, 1e-5);
	CHECK_NEAR(lv, h, 1e-5);
	CHECK_NEAR(dot, 0, 1e-5);
	for (int k = 0; k < 3; k++)
		CHECK_NEAR(cs[k], center[k], 1e-5);
	CHECKF(diag_a == 12 && diag_b == 12, "diagonals %u / %u, want alternating 12 / 12", diag_a, diag_b);
	CHECK(groups);
	CHECK(top_up);

	/* Through a scene: the example flag. */
	drape_scene s;
	drape_err rc = drape_scene_read("examples/flag.json", NULL, &s, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	ok = s.cloth.vertex_count == 64 * 64 && s.cloth.triangle_count == 2 * 63 * 63 && s.pin_count == 64 &&
	     s.frames == 120 && s.params.fps == 24.0f && s.cloth_path == NULL;
	/* The flag hangs from a vertical pole along its left edge (grid u is
	 * -Z for a sheet facing +X, so the left edge is the one at max z),
	 * and the wind blows across it, away from the pole. */
	float zmax = -1e9f;
	for (uint32_t i = 0; i < s.cloth.vertex_count; i++)
		if (s.cloth.positions[i * 3 + 2] > zmax)
			zmax = s.cloth.positions[i * 3 + 2];
	int pinned_pole = 1;
	for (uint32_t i = 0; i < s.pin_count; i++)
		pinned_pole &= s.cloth.positions[s.pins[i] * 3 + 2] == zmax;
	int across = s.params.wind[2] < 0.0f && fabsf(s.params.wind[2]) > 4.0f * fabsf(s.params.wind[0]) &&
		     s.params.wind[1] == 0.0f;
	drape_scene_free(&s);
	CHECK(ok);
	CHECK(pinned_pole);
	CHECK(across);
}

typedef struct scene_bad {
	const char *json;
	drape_err code;
	const char *message; /* whole expected message */
} scene_bad;

static void test_scene_errors(void)
{
	static const scene_bad cases[] = {
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"strech\": 1}}", DRAPE_EINVAL,
		 "s.json: cloth.strech: unknown key (did you mean \"stretch\"? expected one of: mesh, scale, "
		 "translate, stretch, shear, bend, thickness, density, pins, material, model, stitches, seams, "
		 "rest_mesh, stitch_stiffness, sew_speed, mass_scale, ...)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"zzz\": 1}}", DRAPE_EINVAL,
		 "s.json: cloth.zzz: unknown key (expected one of: mesh, scale, translate, stretch, shear, bend, "
		 "thickness, density, pins, material, model, stitches, seams, rest_mesh, stitch_stiffness, "
		 "sew_speed, mass_scale, rest_scale, stiffness_scale, ...)"},
		{"{\"fsp\": 24, \"cloth\": {}}", DRAPE_EINVAL, NULL},
		{"{\"fps\": \"24\", \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: fps: must be a number, not a string"},
		{"{\"fps\": 0, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: fps: 0 is outside (0, 1000]"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"shear\": 1.5}}", DRAPE_EINVAL,
		 "s.json: cloth.shear: 1.5 is outside [0, 1]"},
		{"{\"substeps\": 2.5, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: substeps: 2.5 must be an integer"},
		{"{\"iterations\": 1000, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: iterations: 1000 is outside [1, 256]"},
		{"{\"gravity\": [0, -9.81], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: gravity: must be an array of 3 numbers"},
		{"{\"wind\": {\"velocity\": [1, 0, \"x\"]}, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: wind.velocity[2]: must be a number, not a string"},
		{"{\"wind\": {\"drag\": -1}, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: wind.drag: -1 must be finite and >= 0"},
		{"{\"frames\": 0, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_ERANGE,
		 "s.json: frames: 0 is out of range [1, 1000000]"},
		{"{\"cloth\": {\"mesh\": \"../obj/nope.obj\"}}", DRAPE_ENOTFOUND,
		 "s.json: cloth.mesh: tests/data/scenes/../obj/nope.obj: cannot open: No such file or directory"},
		{"{\"cloth\": {\"mesh\": \"../obj/bad_index.obj\"}}", DRAPE_ERANGE,
		 "s.json: cloth.mesh: tests/data/scenes/../obj/bad_index.obj:7: face index 9 out of range (1..4)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": {\"indices\": [0, 1, 2, 5000]}}}",
		 DRAPE_ERANGE, "s.json: cloth.pins.indices[3]: 5000 is out of range (mesh has 64 vertices)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": [{\"indices\": [1]}, {\"indices\": [-1]}]}}",
		 DRAPE_EINVAL, "s.json: cloth.pins[1].indices[0]: must be a vertex index (an integer >= 0)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": {\"group\": \"nope\"}}}", DRAPE_ENOTFOUND,
		 "s.json: cloth.pins.group: no group 'nope' in the cloth mesh (groups: body, top)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": {\"box\": {\"min\": [5,5,5], \"max\": [6,6,6]}}}}",
		 DRAPE_EINVAL, "s.json: cloth.pins.box: selects no vertex of the cloth (after scale, rotate and translate)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": {\"indices\": [1], \"group\": \"top\"}}}",
		 DRAPE_EINVAL, "s.json: cloth.pins: needs exactly one of \"indices\", \"box\" and \"group\""},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": {\"indices\": [1], \"attach\": 0}}}",
		 DRAPE_ERANGE, "s.json: cloth.pins.attach: the scene has no colliders to attach to"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"pins\": [{\"indices\": [1]}, {\"indices\": [1], "
		 "\"attach\": 0}]}, \"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 1}}]}",
		 DRAPE_EINVAL, "s.json: cloth.pins[1].indices[0]: vertex 1 is already pinned with a different attach"},
		{"{\"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [1, 5]}}}}", DRAPE_ERANGE,
		 "s.json: cloth.mesh.grid.resolution[0]: 1 is out of range [2, 1000000000]"},
		{"{\"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [100000, 100000]}}}}",
		 DRAPE_ELIMIT, NULL},
		{"{\"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [4, 4], \"normal\": [0,0,0]}}}}",
		 DRAPE_EINVAL, "s.json: cloth.mesh.grid.normal: must not be zero"},
		{"{\"cloth\": {\"mesh\": {\"grd\": {}}}}", DRAPE_EINVAL,
		 "s.json: cloth.mesh.grd: unknown key (did you mean \"grid\"? expected one of: grid)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 0}}", DRAPE_ERANGE,
		 "s.json: cloth.scale: 0 must be > 0"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": [1, -1, 1]}}", DRAPE_ERANGE,
		 "s.json: cloth.scale[1]: -1 must be > 0"},
		{"{\"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 0], \"resolution\": [4, 4]}}}}", DRAPE_ERANGE,
		 "s.json: cloth.mesh.grid.size[1]: 0 must be > 0"},
		{"{\"colliders\": [{\"box\": {\"center\": [0,0,0], \"half_extents\": [1, 1, 0]}}], \"cloth\": "
		 "{\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_ERANGE, "s.json: colliders[0].box.half_extents[2]: 0 must be > 0"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"bend\": 0.1, \"bend\": 0.2}}", DRAPE_EINVAL,
		 "s.json: cloth.bend: duplicate key"},
		{"{\"self_collision\": {\"enabled\": 1}, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: self_collision.enabled: must be true or false, not a number"},
		{"{\"self_collision\": {\"thickness\": 2}, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: self_collision.thickness: 2 is outside [0, 1]"},
		{"{\"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 0}}], \"cloth\": {\"mesh\": "
		 "\"../obj/sheet.obj\"}}",
		 DRAPE_ERANGE, "s.json: colliders[0].sphere.radius: 0 must be > 0"},
		{"{\"colliders\": [{\"cube\": {}}], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL, NULL},
		{"{\"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 1}, \"plane\": {}}], \"cloth\": "
		 "{\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_EINVAL, "s.json: colliders[0]: has both \"plane\" and \"sphere\" (one shape per collider)"},
		{"{\"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 1}, \"scale\": 2}], \"cloth\": "
		 "{\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_EINVAL, NULL},
		{"{\"colliders\": [{\"mesh\": \"../obj/missing.obj\"}], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_ENOTFOUND,
		 "s.json: colliders[0].mesh: tests/data/scenes/../obj/missing.obj: cannot open: No such file or directory"},
		{"{\"colliders\": [{\"plane\": {\"point\": [0,0,0], \"normal\": [0,1,0]}, \"restitution\": 2}], "
		 "\"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_ERANGE, "s.json: colliders[0].restitution: 2 must be <= 1"},
		{"{\"colliders\": [{\"plane\": {\"point\": [0,0,0], \"normal\": [0,1,0]}, \"keyframes\": "
		 "[{\"frame\": 5}, {\"frame\": 5}]}], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_EINVAL, "s.json: colliders[0].keyframes[1]: frame 5 is not after the previous keyframe's 5"},
		{"{\"colliders\": [{\"plane\": {\"point\": [0,0,0], \"normal\": [0,1,0]}, \"keyframes\": "
		 "[{\"frame\": 1, \"rotate\": [0, 0]}]}], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_EINVAL, "s.json: colliders[0].keyframes[0].rotate: must be an array of 3 numbers"},
		{"{\"colliders\": [{\"plane\": {\"point\": [0,0,0], \"normal\": [0,1,0]}, \"keyframes\": "
		 "[{\"translate\": [0, 0, 0]}]}], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 DRAPE_EINVAL, "s.json: colliders[0].keyframes[0]: needs \"frame\""},
		{"{\"fps\": 24}", DRAPE_EINVAL, "s.json: the scene needs \"cloth\" (or \"cloths\")"},
		{"[1, 2]", DRAPE_EINVAL, "s.json: the scene must be a JSON object, not an array"},
		{"{\"fps\": 24,\n \"cloth\": }", DRAPE_EPARSE, "s.json:2:11: JSON syntax error"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\"}} x", DRAPE_EPARSE, "s.json:1:41: text after the JSON object"},
		{"{\"fps\": 1e999, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_ENONFINITE, NULL},
		{"{\"fps\": 1e300, \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_ENONFINITE,
		 "s.json: fps: 1e+300 is not a finite float"},
		{"{\"long_range\": \"sometimes\", \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", DRAPE_EINVAL,
		 "s.json: long_range: must be true, false or \"auto\""},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"stitches\": [[0, 64]]}}", DRAPE_ERANGE,
		 "s.json: cloth.stitches[0][1]: 64 is out of range [0, 63]"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"stitches\": [[0, [1, 2, 1.5]]]}}", DRAPE_ERANGE,
		 "s.json: cloth.stitches[0][1][2]: 1.5 must be <= 1"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"stitches\": [[3, 3]]}}", DRAPE_EINVAL,
		 "s.json: cloth.stitches[0]: vertex 3 is stitched to itself"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"stitches\": [[3]]}}", DRAPE_EINVAL,
		 "s.json: cloth.stitches[0]: must be [a, b] (two vertices) or [a, [e0, e1, t]] (a vertex and the "
		 "point at t of the edge e0-e1)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"seams\": {\"weld\": 0.001}}}", DRAPE_EINVAL,
		 "s.json: cloth.seams: needs \"distance\": how far apart (m) the sides of a seam may be"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"sew_speed\": -1}}", DRAPE_ERANGE,
		 NULL},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"rest_mesh\": \"../obj/lshape.obj\"}}", DRAPE_EINVAL,
		 NULL},
	};
	for (size_t i = 0; i < CHECK_COUNT(cases); i++) {
		drape_scene s;
		drape_error err;
		memset(&s, 0x5a, sizeof s);
		drape_err rc = load_str(cases[i].json, &s, &err);
		if (rc == DRAPE_OK)
			drape_scene_free(&s);
		CHECKF(rc == cases[i].code, "case %zu: rc %d, want %d (%s)", i, (int)rc, (int)cases[i].code,
		       rc ? err.message : "loaded");
		if (cases[i].message != NULL)
			CHECKF(strcmp(err.message, cases[i].message) == 0, "case %zu:\n   got  '%s'\n   want '%s'", i,
			       err.message, cases[i].message);
		unsigned char probe[sizeof s];
		memset(probe, 0x5a, sizeof probe);
		CHECKF(memcmp(&s, probe, sizeof s) == 0, "case %zu: output touched on failure", i);
	}
	/* The unknown top-level key and the unknown collider kind name the key. */
	drape_scene s;
	drape_error err;
	CHECK(load_str("{\"fsp\": 24, \"cloth\": {}}", &s, &err) == DRAPE_EINVAL);
	CHECKF(strncmp(err.message, "s.json: fsp: unknown key", 24) == 0, "%s", err.message);
	CHECK(load_str("{\"colliders\": [{\"cube\": {}}], \"cloth\": {}}", &s, &err) == DRAPE_EINVAL);
	CHECKF(strncmp(err.message, "s.json: colliders[0].cube: unknown key", 38) == 0, "%s", err.message);
	CHECK(drape_scene_read(DATA "scenes/nope.json", NULL, &s, &err) == DRAPE_ENOTFOUND);
}

static void test_scene_colliders(void)
{
	drape_scene s;
	drape_error err;
	drape_err rc = drape_scene_read(DATA "scenes/colliders.json", NULL, &s, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	int params = s.params.fps == 30.0f && s.frames == 10 && s.params.substeps == 8 && s.params.iterations == 20 &&
		     s.params.damping == 0.98f && s.params.wind[2] == 1.5f && s.params.drag == 0.8f &&
		     s.params.lift == 0.1f && s.params.air_density == 1.25f && s.params.self_collision == 1 &&
		     s.params.self_thickness == 0.004f && s.params.self_friction == 0.2f && s.params.long_range == 0 &&
		     s.params.density == 0.15f;
	const drape_collider_desc *c = s.colliders;
	int n = s.collider_count == 6;
	/* Mesh: negative.obj scaled by 2 and moved down 1. */
	int mesh = n && c[0].shape == DRAPE_SHAPE_MESH && c[0].vertex_count == 4 && c[0].triangle_count == 2 &&
		   c[0].vertices == s.collider_meshes[0].positions && c[0].vertices[3] == 2.0f &&
		   c[0].vertices[4] == -1.0f && c[0].vertices[7] == 1.0f && c[0].friction == 0.4f &&
		   c[0].static_friction == 0.6f && c[0].restitution == 0.1f && c[0].thickness == 0.002f &&
		   c[0].voxel_size == 0.01f && c[0].max_voxels == 1000000 && c[0].keyframe_count == 0;
	/* Plane: normal normalised; defaults kept where not given. */
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	int plane = n && c[1].shape == DRAPE_SHAPE_PLANE && c[1].point[1] == -2.0f && c[1].normal[0] == 0 &&
		    c[1].normal[1] == 1.0f && c[1].friction == 0.5f && c[1].static_friction == d.static_friction &&
		    c[1].restitution == d.restitution;
	int sphere = n && c[2].shape == DRAPE_SHAPE_SPHERE && c[2].center[1] == 0.5f && c[2].radius == 0.25f &&
		     c[2].restitution == 0.5f && c[2].keyframe_count == 2 && c[2].keyframes[0].frame == 1.0f &&
		     c[2].keyframes[1].frame == 24.0f && c[2].keyframes[1].translate[0] == 1.0f &&
		     c[2].keyframes[1].rotate[1] == 90.0f && c[2].keyframes[0].rotate[1] == 0.0f;
	int box = n && c[3].shape == DRAPE_SHAPE_BOX && c[3].center[1] == -1.0f && c[3].half_extents[0] == 1.0f &&
		  c[3].half_extents[1] == 0.1f && c[4].shape == DRAPE_SHAPE_BOX && c[4].center[0] == 0.0f &&
		  c[4].center[1] == -1.0f && c[4].center[2] == 1.0f && c[4].half_extents[0] == 1.0f &&
		  c[4].half_extents[1] == 1.0f && c[4].half_extents[2] == 2.0f && c[4].static_friction == 0.0f;
	int capsule = n && c[5].shape == DRAPE_SHAPE_CAPSULE && c[5].a[1] == 1.0f && c[5].b[1] == 2.0f &&
		      c[5].radius == 0.1f && c[5].keyframe_count == 2 && c[5].keyframes[0].frame == 0.0f &&
		      c[5].keyframes[1].rotate[1] == 180.0f;
	/* Pins: the grid's top row (11) attached to the capsule, one vertex by
	 * box attached to the sphere, and index 5 (on the bottom row). The
	 * grid is 11 x 6 over 1 x 0.5 m around (0, 1, 0): vertex (i, j) at
	 * x = -0.5 + 0.1 i, y = 0.75 + 0.1 j; the box holds (0, 0) only. */
	uint32_t top = 0, sph = 0, free_pins = 0;
	for (uint32_t i = 0; i < s.pin_count; i++) {
		if (s.pin_attach[i] == 5 && s.pins[i] >= 55)
			top++;
		else if (s.pin_attach[i] == 2 && s.pins[i] == 0)
			sph++;
		else if (s.pin_attach[i] == DRAPE_SCENE_NO_ATTACH && s.pins[i] == 5)
			free_pins++;
	}
	uint32_t npins = s.pin_count;
	int pins = npins == 13 && top == 11 && sph == 1 && free_pins == 1;
	drape_scene_free(&s);
	CHECK(params);
	CHECK(mesh);
	CHECK(plane);
	CHECK(sphere);
	CHECK(box);
	CHECK(capsule);
	CHECKF(pins, "pins %u: top %u sphere %u free %u", npins, top, sph, free_pins);
}

/* Absolute difference of a float from an expected value. */
static int near(float v, double want)
{
	return fabs((double)v - want) < 1e-5;
}

/* "rotate" places a mesh that was modelled Z up, or facing away: the sheet
 * (z = 0, [0, 1]^2) stood up or laid down by XYZ Euler degrees, X first,
 * between scale and translate. The expected corners are worked by hand. */
static void test_scene_rotate(void)
{
	drape_scene s;
	drape_error err;
	/* Rx(90) turns +Y into +Z: corner 63 (1, 1, 0), scaled by 2, is
	 * (2, 0, 2), then moved up 1. The box (after the whole placement)
	 * finds the far row, y = 1 in the file, at z = 2. */
	drape_err rc = load_str("{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 2, \"rotate\": [90, 0, 0],"
				"\"translate\": [0, 1, 0], \"pins\": {\"box\": {\"min\": [-1, 0.9, 1.9], "
				"\"max\": [3, 1.1, 2.1]}}}}",
				&s, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	const float *p = s.cloth.positions;
	int corner = rc == DRAPE_OK && near(p[3 * 63], 2) && near(p[3 * 63 + 1], 1) && near(p[3 * 63 + 2], 2) &&
		     near(p[0], 0) && near(p[1], 1) && near(p[2], 0);
	int pins = rc == DRAPE_OK && s.pin_count == 8 && s.pins[0] == 56 && s.pins[7] == 63;
	if (rc == DRAPE_OK)
		drape_scene_free(&s);
	CHECKF(corner, "corner 63 at (%g, %g, %g)", rc ? 0.0 : (double)p[189], rc ? 0.0 : (double)p[190],
	       rc ? 0.0 : (double)p[191]);
	CHECK(pins);

	/* The order: X first, then Y. (1, 1, 0) -> Rx(90) (1, 0, 1) ->
	 * Ry(90) (1, 0, -1); Y first would give (0, 1, 1). The rest mesh
	 * (the same file) takes the same placement, so it rests unstrained. */
	rc = load_str("{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"rotate\": [90, 90, 0],"
		      " \"rest_mesh\": \"../obj/sheet.obj\"}}",
		      &s, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	int order = rc == DRAPE_OK && near(s.cloth.positions[189], 1) && near(s.cloth.positions[190], 0) &&
		    near(s.cloth.positions[191], -1);
	int rest = rc == DRAPE_OK && s.rest_positions != NULL &&
		   memcmp(s.rest_positions, s.cloth.positions, 3 * sizeof(float) * s.cloth.vertex_count) == 0;
	if (rc == DRAPE_OK)
		drape_scene_free(&s);
	CHECK(order);
	CHECK(rest);

	/* A mesh collider turns too (negative.obj's second vertex is (1, 0, 0)
	 * in the file: Rz(90) takes it to (0, 1, 0)); a shape refuses the key. */
	rc = load_str("{\"colliders\": [{\"mesh\": \"../obj/negative.obj\", \"rotate\": [0, 0, 90]}],"
		      " \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		      &s, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	int col = rc == DRAPE_OK && near(s.colliders[0].vertices[3], 0) && near(s.colliders[0].vertices[4], 1) &&
		  near(s.colliders[0].vertices[5], 0);
	if (rc == DRAPE_OK)
		drape_scene_free(&s);
	CHECK(col);
	rc = load_str("{\"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 1}, \"rotate\": [0, 0, 90]}],"
		      " \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		      &s, &err);
	CHECK(rc == DRAPE_EINVAL && strstr(err.message, "colliders[0].rotate: only mesh colliders") != NULL);
	rc = load_str("{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"rotate\": 90}}", &s, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "cloth.rotate: ") != NULL, "%s", err.message);
}

/* The size note: a cloth or a body whose size is implausible in metres is
 * named with its size and the scale that fixes decimetres or centimetres;
 * sizes that are plausible in metres give none. The sheet is 1 m square. */
static void test_scene_size_note(void)
{
	static const struct {
		const char *json;
		const char *want; /* a part of the note, NULL for no note */
	} cases[] = {
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}", NULL},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 3.9}}", NULL},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 10}}",
		 "the cloth is 10 m across: scenes are in metres (a mesh in decimetres needs \"scale\": 0.1"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 0.01}}",
		 "the cloth is 0.01 m across: scenes are in metres (a mesh in millimetres needs \"scale\": 0.001)"},
		{"{\"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 0.03}}", NULL},
		/* negative.obj spans y in [0, 1]: 4 m tall as a body. */
		{"{\"colliders\": [{\"plane\": {\"point\": [0,0,0], \"normal\": [0,1,0]}},"
		 " {\"mesh\": \"../obj/negative.obj\", \"scale\": [1, 4, 1]}], \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 "colliders[1] is 4 m tall: scenes are in metres, Y up"},
		{"{\"colliders\": [{\"mesh\": \"../obj/negative.obj\", \"scale\": [9, 2.9, 9]}],"
		 " \"cloth\": {\"mesh\": \"../obj/sheet.obj\"}}",
		 NULL},
		{"{\"cloths\": [{\"name\": \"small\", \"mesh\": \"../obj/sheet.obj\"},"
		 " {\"name\": \"big\", \"mesh\": \"../obj/sheet.obj\", \"scale\": 20, \"translate\": [0, 0, 1]}]}",
		 "cloth \"big\" is 20 m across"},
		/* A body 0.5 to 3 m tall sizes a cloth of unstated units: the
		 * 10 m sheet is as large as a 1.5 m body at 0.15 of its scale
		 * (the tallest of two), and a 0.1 m sheet at 15 times it. */
		{"{\"colliders\": [{\"mesh\": \"../obj/negative.obj\", \"scale\": [1, 1.2, 1]},"
		 " {\"mesh\": \"../obj/negative.obj\", \"scale\": [1, 1.5, 1]}],"
		 " \"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 10}}",
		 "centimetres 0.01; in units not stated, it is as large as colliders[1] (1.5 m tall) with its "
		 "\"scale\" times 0.15, and a garment worn on it smaller)"},
		{"{\"colliders\": [{\"mesh\": \"../obj/negative.obj\", \"scale\": [1, 1.5, 1]}],"
		 " \"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 0.01}}",
		 "\"scale\": 0.001; in units not stated, it is as large as colliders[0] (1.5 m tall) with its "
		 "\"scale\" times 150,"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		drape_scene s;
		drape_error err;
		drape_err rc = load_str(cases[i].json, &s, &err);
		CHECKF(rc == DRAPE_OK, "case %zu: %s", i, err.message);
		if (rc != DRAPE_OK)
			continue;
		char note[1024];
		size_t n = drape_scene_size_note(&s, note, sizeof note);
		drape_scene_free(&s);
		if (cases[i].want == NULL)
			CHECKF(n == 0 && note[0] == '\0', "case %zu: unexpected note '%.200s'", i, note);
		else
			CHECKF(n == strlen(note) && strstr(note, cases[i].want) != NULL && strstr(note, "\"small\"") == NULL,
			       "case %zu: note '%.300s'", i, note);
	}
	/* A collider under 0.5 m (a ball, a prop) or a body out of metres
	 * sizes nothing: the note is the units one alone. */
	static const char *const unsized[] = {
		"{\"colliders\": [{\"mesh\": \"../obj/negative.obj\", \"scale\": [1, 0.4, 1]}],"
		" \"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 10}}",
		"{\"colliders\": [{\"mesh\": \"../obj/negative.obj\", \"scale\": [1, 17, 1]}],"
		" \"cloth\": {\"mesh\": \"../obj/sheet.obj\", \"scale\": 10}}",
	};
	for (size_t i = 0; i < CHECK_COUNT(unsized); i++) {
		drape_scene s;
		drape_error err;
		drape_err rc = load_str(unsized[i], &s, &err);
		CHECKF(rc == DRAPE_OK, "unsized %zu: %s", i, err.message);
		if (rc != DRAPE_OK)
			continue;
		char note[1024];
		drape_scene_size_note(&s, note, sizeof note);
		drape_scene_free(&s);
		CHECKF(strstr(note, "the cloth is 10 m across") != NULL && strstr(note, "not stated") == NULL,
		       "unsized %zu: note '%.300s'", i, note);
	}
}

static void test_scene_examples(void)
{
	/* Every example scene loads (they are what users copy first). */
	static const char *const files[] = {"examples/flag.json", "examples/sphere_drape.json",
					    "examples/garment.json", "examples/cape.json", "examples/tshirt.json",
					    DATA "scenes/grid_flat.json"};
	for (size_t i = 0; i < CHECK_COUNT(files); i++) {
		drape_scene s;
		drape_error err;
		drape_err rc = drape_scene_read(files[i], NULL, &s, &err);
		CHECKF(rc == DRAPE_OK, "%s", err.message);
		drape_scene_free(&s);
	}
}

/* ---- Robustness ------------------------------------------------------------------- */

/* A small in-test fuzzer: random byte edits of valid inputs must give either
 * success or an error, never a crash or a leak (this runs under ASan in the
 * sanitizer pass). The libFuzzer targets go further; this keeps the
 * property checked on every `make test`. */
static void test_robust_mutations(void)
{
	static const char obj[] = "v 0 0 0\nv 1 0 0 1\nv 1 1 0\nv 0 1 0\nvt 0 0\ng a b\nf 1/1 2/1 3/1 4/1\n"
				  "o x\nf -1 -2 -3\nf 1 2 3 4 1 2\n";
	static const char json[] =
		"{\"fps\": 24, \"wind\": {\"velocity\": [1, 0, 0]}, \"self_collision\": {\"enabled\": true},"
		"\"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 0.5}, \"keyframes\": [{\"frame\": 1}]}],"
		"\"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [4, 4]}},"
		"\"pins\": [{\"indices\": [0, 3]}, {\"group\": \"top\", \"attach\": 0}, {\"box\": {\"min\": [-1,-1,-1],"
		"\"max\": [1,1,1]}}]}}";
	static const char alphabet[] = " \n\\/-+.0123456789eEvfgo#[]{}\",:naiN";
	drape_obj_limits lim;
	drape_obj_limits_default(&lim);
	lim.max_vertices = 10000;
	lim.max_triangles = 20000;
	char buf[1024];
	int loaded = 0;
	for (int it = 0; it < 4000; it++) {
		const char *src = it % 2 ? obj : json;
		size_t len = strlen(src);
		memcpy(buf, src, len);
		int edits = 1 + (int)(rng_next() % 4);
		for (int e = 0; e < edits; e++) {
			size_t at = rng_next() % len;
			uint32_t r = rng_next();
			if (r % 3 == 0)
				buf[at] = alphabet[r / 3 % (sizeof alphabet - 1)];
			else if (r % 3 == 1 && len > 1) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			} else if (len + 1 < sizeof buf) {
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (char)(r >> 8);
				len++;
			}
		}
		drape_error err;
		if (it % 2) {
			drape_obj_mesh m;
			if (drape_obj_read_buffer(buf, len, "f.obj", &lim, &m, &err) == DRAPE_OK) {
				for (uint64_t k = 0; k < m.triangle_count * 3ull; k++)
					CHECK(m.triangles[k] < m.vertex_count);
				drape_obj_free(&m);
				loaded++;
			} else {
				CHECK(err.message[0] != '\0');
			}
		} else {
			drape_scene s;
			if (drape_scene_read_string(buf, len, DATA "scenes", "f.json", &lim, &s, &err) == DRAPE_OK) {
				for (uint32_t k = 0; k < s.pin_count; k++)
					CHECK(s.pins[k] < s.cloth.vertex_count);
				drape_scene_free(&s);
				loaded++;
			} else {
				CHECK(err.message[0] != '\0');
			}
		}
	}
	CHECKF(loaded > 100, "only %d of 4000 mutated inputs loaded; the mutations are too destructive", loaded);
}

static const check_test tests[] = {
	CHECK_TEST(test_obj_triangulate_counts),
	CHECK_TEST(test_obj_ngon_nonconvex),
	CHECK_TEST(test_obj_negative_indices),
	CHECK_TEST(test_obj_index_forms),
	CHECK_TEST(test_obj_groups),
	CHECK_TEST(test_obj_broken),
	CHECK_TEST(test_obj_texcoords),
	CHECK_TEST(test_obj_limits),
	CHECK_TEST(test_obj_roundtrip_exact),
	CHECK_TEST(test_obj_writer_text),
	CHECK_TEST(test_obj_write_speed),
	CHECK_TEST(test_obj_project_meshes),
	CHECK_TEST(test_obj_shared_meshes),
	CHECK_TEST(test_scene_issue_example),
	CHECK_TEST(test_scene_pins),
	CHECK_TEST(test_scene_grid),
	CHECK_TEST(test_scene_errors),
	CHECK_TEST(test_scene_colliders),
	CHECK_TEST(test_scene_rotate),
	CHECK_TEST(test_scene_size_note),
	CHECK_TEST(test_scene_examples),
	CHECK_TEST(test_robust_mutations),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
