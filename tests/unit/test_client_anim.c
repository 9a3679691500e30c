/*
 * Tests of the vertex animation readers (client/pointcache.c): PC2, MDD and
 * OBJ sequences, well-formed and malformed, and the resampling to one pose
 * per simulation frame. Run from the repository root (tests/run.sh does).
 */
#include "client/obj.h"
#include "client/pointcache.h"
#include "client/scene.h"
#include "tests/unit/check.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA "tests/data/"

static void put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put_u32be(uint8_t *p, uint32_t v)
{
	p[3] = (uint8_t)v;
	p[2] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)(v >> 16);
	p[0] = (uint8_t)(v >> 24);
}

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* The value vertex v's component c has at sample s in the synthetic caches:
 * linear in the sample, so an interpolated pose is known exactly. */
static float synth(uint32_t s, uint32_t v, uint32_t c)
{
	return (float)s * 0.5f + (float)v * 0.25f + (float)c;
}

/* A PC2 file in memory: `points` x `samples` of synth(). Caller frees. */
static uint8_t *make_pc2(uint32_t points, uint32_t samples, float start, float rate, size_t *len)
{
	*len = DRAPE_PC2_HEADER_SIZE + (size_t)points * samples * 12;
	uint8_t *b = calloc(1, *len);
	memcpy(b, "POINTCACHE2", 12);
	put_u32le(b + 12, 1);
	put_u32le(b + 16, points);
	put_u32le(b + 20, bits_of(start));
	put_u32le(b + 24, bits_of(rate));
	put_u32le(b + 28, samples);
	for (uint32_t s = 0; s < samples; s++)
		for (uint32_t v = 0; v < points; v++)
			for (uint32_t c = 0; c < 3; c++)
				put_u32le(b + DRAPE_PC2_HEADER_SIZE + (((size_t)s * points + v) * 3 + c) * 4,
					  bits_of(synth(s, v, c)));
	return b;
}

static uint8_t *make_mdd(uint32_t points, uint32_t frames, const float *times, size_t *len)
{
	*len = 8 + (size_t)frames * 4 + (size_t)points * frames * 12;
	uint8_t *b = calloc(1, *len);
	put_u32be(b, frames);
	put_u32be(b + 4, points);
	for (uint32_t i = 0; i < frames; i++)
		put_u32be(b + 8 + (size_t)i * 4, bits_of(times[i]));
	uint8_t *p = b + 8 + (size_t)frames * 4;
	for (uint32_t s = 0; s < frames; s++)
		for (uint32_t v = 0; v < points; v++)
			for (uint32_t c = 0; c < 3; c++)
				put_u32be(p + (((size_t)s * points + v) * 3 + c) * 4, bits_of(synth(s, v, c)));
	return b;
}

/* ---- PC2 ----------------------------------------------------------------------- */

/* The walk cache against what its provenance note says of it: 96 samples of
 * the 13652-vertex body from frame 1 at one sample per frame, and frame 1
 * equal to the rest mesh within 2e-7 m. */
static void test_pc2_walk(void)
{
	drape_anim a;
	drape_error err;
	CHECK_OK(drape_pc2_read_file(DATA "anim/walk.pc2", NULL, &a, &err));
	drape_obj_mesh body;
	drape_err rc = drape_obj_read_file(DATA "anim/body_rest_m.obj", NULL, &body, &err);
	if (rc != DRAPE_OK)
		drape_anim_free(&a);
	CHECK_OK(rc);
	int ok = a.format == DRAPE_ANIM_PC2 && a.vertex_count == 13652 && a.sample_count == 96 && a.start == 1.0f &&
		 a.rate == 1.0f && body.vertex_count == a.vertex_count;
	double worst = 0;
	for (uint32_t i = 0; ok && i < a.vertex_count * 3; i++) {
		double d = fabs((double)a.positions[i] - body.positions[i]);
		if (d > worst)
			worst = d;
	}
	/* The walk moves the body 0.6 m forward (+Z) over frames 49-96. */
	double dz = 0;
	for (uint32_t v = 0; ok && v < a.vertex_count; v++)
		dz += (double)a.positions[((size_t)95 * a.vertex_count + v) * 3 + 2] - a.positions[(size_t)v * 3 + 2];
	dz /= a.vertex_count;
	uint32_t nv = a.vertex_count, ns = a.sample_count;
	drape_anim_free(&a);
	drape_obj_free(&body);
	CHECKF(ok, "points %u samples %u", nv, ns);
	CHECKF(worst <= 2e-7, "frame 1 differs from the rest mesh by %g m", worst);
	CHECKF(dz > 0.5 && dz < 0.7, "mean forward motion %g m, want about 0.6", dz);
}

static void test_pc2_synthetic(void)
{
	size_t len;
	uint8_t *b = make_pc2(5, 4, 10.0f, 2.0f, &len);
	drape_anim a;
	drape_error err;
	drape_err rc = drape_pc2_read_buffer(b, len, "s.pc2", NULL, &a, &err);
	free(b);
	CHECK_OK(rc);
	int ok = a.vertex_count == 5 && a.sample_count == 4 && a.start == 10.0f && a.rate == 2.0f;
	for (uint32_t s = 0; ok && s < 4; s++)
		for (uint32_t v = 0; v < 5; v++)
			for (uint32_t c = 0; c < 3; c++)
				ok &= a.positions[((size_t)s * 5 + v) * 3 + c] == synth(s, v, c);
	double f3 = drape_anim_sample_frame(&a, 3, 24.0);
	drape_anim_free(&a);
	CHECK(ok);
	CHECK_NEAR(f3, 16.0, 0);
}

/* One malformed PC2 and the field its error must name. */
static void pc2_refused(uint8_t *b, size_t len, drape_err code, const char *field, int line)
{
	drape_anim a;
	memset(&a, 0x5a, sizeof a);
	drape_anim before = a;
	drape_error err;
	drape_error_clear(&err);
	drape_err rc = drape_pc2_read_buffer(b, len, "bad.pc2", NULL, &a, &err);
	CHECKF(rc == code, "line %d: code %s, want %s (%s)", line, drape_err_name(rc), drape_err_name(code),
	       err.message);
	CHECKF(strstr(err.message, "bad.pc2: ") == err.message && strstr(err.message, field) != NULL,
	       "line %d: message \"%s\" does not name bad.pc2 and %s", line, err.message, field);
	CHECKF(memcmp(&a, &before, sizeof a) == 0, "line %d: the output changed on failure", line);
}

static void test_pc2_malformed(void)
{
	size_t len;
	uint8_t *b = make_pc2(3, 2, 1.0f, 1.0f, &len);
	uint8_t *c = malloc(len + 4);
#define RESET() memcpy(c, b, len)
	RESET();
	pc2_refused(c, 31, DRAPE_ETRUNCATED, "header", __LINE__);
	RESET();
	c[0] = 'X';
	pc2_refused(c, len, DRAPE_EINVAL, "header.signature", __LINE__);
	RESET();
	put_u32le(c + 12, 2);
	pc2_refused(c, len, DRAPE_EINVAL, "header.version", __LINE__);
	RESET();
	put_u32le(c + 16, 0);
	pc2_refused(c, len, DRAPE_EINVAL, "header.points", __LINE__);
	RESET();
	put_u32le(c + 16, 0x80000000u); /* negative */
	pc2_refused(c, len, DRAPE_EINVAL, "header.points", __LINE__);
	RESET();
	put_u32le(c + 28, 0);
	pc2_refused(c, len, DRAPE_EINVAL, "header.samples", __LINE__);
	RESET();
	put_u32le(c + 24, bits_of(0.0f));
	pc2_refused(c, len, DRAPE_EINVAL, "header.sample_rate", __LINE__);
	RESET();
	put_u32le(c + 20, bits_of(INFINITY));
	pc2_refused(c, len, DRAPE_ENONFINITE, "header.start_frame", __LINE__);
	RESET();
	/* A header that claims more than the file holds, and a file longer
	 * than its header says. */
	put_u32le(c + 28, 3);
	pc2_refused(c, len, DRAPE_ETRUNCATED, "size", __LINE__);
	RESET();
	pc2_refused(c, len - 4, DRAPE_ETRUNCATED, "size", __LINE__);
	RESET();
	pc2_refused(c, len + 4, DRAPE_EINVAL, "size", __LINE__);
	RESET();
	/* Huge counts whose byte size overflows 32 bits are refused by the
	 * limits before any allocation. */
	put_u32le(c + 16, 0x7fffffffu);
	put_u32le(c + 28, 0x7fffffffu);
	pc2_refused(c, len, DRAPE_ELIMIT, "header.points", __LINE__);
	RESET();
	put_u32le(c + DRAPE_PC2_HEADER_SIZE + ((1 * 3 + 2) * 3 + 1) * 4, bits_of(NAN));
	pc2_refused(c, len, DRAPE_ENONFINITE, "samples[1].points[2].y", __LINE__);
#undef RESET
	free(b);
	free(c);
}

/* ---- MDD ----------------------------------------------------------------------- */

static void test_mdd(void)
{
	const float times[3] = {0.0f, 0.5f, 1.0f};
	size_t len;
	uint8_t *b = make_mdd(4, 3, times, &len);
	drape_anim a;
	drape_error err;
	drape_err rc = drape_mdd_read_buffer(b, len, "w.mdd", NULL, &a, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	int ok = a.format == DRAPE_ANIM_MDD && a.vertex_count == 4 && a.sample_count == 3 && a.times != NULL &&
		 a.times[1] == 0.5f;
	for (uint32_t s = 0; ok && s < 3; s++)
		for (uint32_t v = 0; v < 4; v++)
			for (uint32_t c = 0; c < 3; c++)
				ok &= a.positions[((size_t)s * 4 + v) * 3 + c] == synth(s, v, c);
	/* Sample 1 at 0.5 s is frame 12 at 24 fps. */
	double f1 = drape_anim_sample_frame(&a, 1, 24.0);
	drape_anim_free(&a);
	CHECK(ok);
	CHECK_NEAR(f1, 12.0, 0);

	/* Malformed: times not increasing, a NaN time, a truncated file. */
	const float bad[3] = {0.0f, 0.5f, 0.5f};
	uint8_t *c = make_mdd(4, 3, bad, &len);
	rc = drape_mdd_read_buffer(c, len, "w.mdd", NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "w.mdd: times[2]") != NULL, "%s", err.message);
	put_u32be(c + 8 + 4, bits_of(NAN));
	rc = drape_mdd_read_buffer(c, len, "w.mdd", NULL, &a, &err);
	CHECKF(rc == DRAPE_ENONFINITE && strstr(err.message, "w.mdd: times[1]") != NULL, "%s", err.message);
	rc = drape_mdd_read_buffer(b, len - 1, "w.mdd", NULL, &a, &err);
	CHECKF(rc == DRAPE_ETRUNCATED && strstr(err.message, "w.mdd: size") != NULL, "%s", err.message);
	put_u32be(b + 4, 0);
	rc = drape_mdd_read_buffer(b, len, "w.mdd", NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "w.mdd: header.points") != NULL, "%s", err.message);
	free(b);
	free(c);
}

/* ---- OBJ sequences ---------------------------------------------------------------- */

static void write_obj(const char *path, uint32_t s, uint32_t points, int extra_face)
{
	FILE *f = fopen(path, "w");
	for (uint32_t v = 0; v < points; v++)
		fprintf(f, "v %.9g %.9g %.9g\n", (double)synth(s, v, 0), (double)synth(s, v, 1),
			(double)synth(s, v, 2));
	fprintf(f, "f 1 2 3\n");
	if (extra_face)
		fprintf(f, "f 1 3 4\n");
	fclose(f);
}

static void test_objseq(void)
{
	char dir[] = "/tmp/drape_objseq_XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[256], pattern[256];
	for (uint32_t s = 0; s < 3; s++) {
		snprintf(path, sizeof path, "%s/body_%04u.obj", dir, 7 + s);
		write_obj(path, s, 4, 0);
	}
	/* Names that must not join the sequence. */
	snprintf(path, sizeof path, "%s/body_12.obj", dir);
	write_obj(path, 0, 5, 0);
	snprintf(path, sizeof path, "%s/body_0011.obj.bak", dir);
	write_obj(path, 0, 5, 0);
	snprintf(pattern, sizeof pattern, "%s/body_%%04d.obj", dir);
	drape_anim a;
	drape_error err;
	drape_err rc = drape_anim_read_file(pattern, NULL, &a, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	int ok = a.format == DRAPE_ANIM_OBJSEQ && a.vertex_count == 4 && a.sample_count == 3 && a.start == 7.0f &&
		 a.rate == 1.0f;
	for (uint32_t s = 0; ok && s < 3; s++)
		for (uint32_t v = 0; v < 4; v++)
			for (uint32_t c = 0; c < 3; c++)
				ok &= a.positions[((size_t)s * 4 + v) * 3 + c] == synth(s, v, c);
	drape_anim_free(&a);
	CHECK(ok);

	/* A gap: frame 10 missing before 11. */
	snprintf(path, sizeof path, "%s/body_0011.obj", dir);
	write_obj(path, 0, 4, 0);
	rc = drape_objseq_read(pattern, NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "body_0010.obj is missing") != NULL, "%s", err.message);
	unlink(path);
	/* A frame with another vertex count, and one with other faces. */
	snprintf(path, sizeof path, "%s/body_0010.obj", dir);
	write_obj(path, 0, 5, 0);
	rc = drape_objseq_read(pattern, NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "body_0010.obj: vertices: 5") != NULL, "%s", err.message);
	write_obj(path, 0, 4, 1);
	rc = drape_objseq_read(pattern, NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "body_0010.obj: faces") != NULL, "%s", err.message);
	unlink(path);
	/* Patterns without exactly one conversion. */
	snprintf(pattern, sizeof pattern, "%s/body_%%04d_%%d.obj", dir);
	rc = drape_objseq_read(pattern, NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "exactly one") != NULL, "%s", err.message);
	snprintf(pattern, sizeof pattern, "%s/none_%%04d.obj", dir);
	rc = drape_objseq_read(pattern, NULL, &a, &err);
	CHECKF(rc == DRAPE_ENOTFOUND, "%s", err.message);
	for (uint32_t s = 7; s <= 12; s++) {
		snprintf(path, sizeof path, "%s/body_%04u.obj", dir, s);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/body_12.obj", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/body_0011.obj.bak", dir);
	unlink(path);
	CHECK(rmdir(dir) == 0);
}

/* ---- Resampling to simulation frames ---------------------------------------------- */

/* A whole start frame at one sample per frame passes through bit for bit. */
static void test_resample_identity(void)
{
	size_t len;
	uint8_t *b = make_pc2(3, 5, 1.0f, 1.0f, &len);
	drape_anim a;
	drape_error err;
	drape_err rc = drape_pc2_read_buffer(b, len, "s.pc2", NULL, &a, &err);
	free(b);
	CHECK_OK(rc);
	float *f = NULL;
	uint32_t n = 0, first = 0;
	rc = drape_anim_resample(&a, 24.0, "s.pc2", &f, &n, &first, &err);
	int same = rc == DRAPE_OK && n == 5 && first == 1 && memcmp(f, a.positions, 5 * 3 * 3 * sizeof *f) == 0;
	free(f);
	drape_anim_free(&a);
	CHECKF(same, "rc %d n %u first %u", (int)rc, (unsigned)n, (unsigned)first);
}

/* Half-frame samples from frame 0.5 and an MDD at 10 samples per second on
 * a 24 fps scene: every whole frame gets the linear pose of its time. */
static void test_resample_rates(void)
{
	size_t len;
	uint8_t *b = make_pc2(2, 9, 0.5f, 0.5f, &len); /* frames 0.5 .. 4.5 */
	drape_anim a;
	drape_error err;
	drape_err rc = drape_pc2_read_buffer(b, len, "h.pc2", NULL, &a, &err);
	free(b);
	CHECK_OK(rc);
	float *f = NULL;
	uint32_t n = 0, first = 0;
	rc = drape_anim_resample(&a, 30.0, "h.pc2", &f, &n, &first, &err);
	drape_anim_free(&a);
	CHECKF(rc == DRAPE_OK && n == 4 && first == 1, "rc %d n %u first %u", (int)rc, (unsigned)n, (unsigned)first);
	/* Frame k is sample (k - 0.5) / 0.5 = 2k - 1. */
	double worst = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t v = 0; v < 2; v++)
			for (uint32_t c = 0; c < 3; c++)
				worst = fmax(worst, fabs((double)f[((size_t)i * 2 + v) * 3 + c] -
							 synth(2 * (first + i) - 1, v, c)));
	free(f);
	CHECKF(worst == 0, "half-frame samples: off by %g", worst);

	/* MDD samples at 0, 0.1, ..., 0.5 s; at 24 fps frames 0 .. 12; frame k
	 * is at sample k / 2.4, pose 0.5 * k / 2.4 + ... */
	float times[6];
	for (int i = 0; i < 6; i++)
		times[i] = 0.1f * (float)i;
	b = make_mdd(2, 6, times, &len);
	rc = drape_mdd_read_buffer(b, len, "m.mdd", NULL, &a, &err);
	free(b);
	CHECK_OK(rc);
	rc = drape_anim_resample(&a, 24.0, "m.mdd", &f, &n, &first, &err);
	drape_anim_free(&a);
	CHECKF(rc == DRAPE_OK && n == 13 && first == 0, "rc %d n %u first %u", (int)rc, (unsigned)n, (unsigned)first);
	worst = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t v = 0; v < 2; v++)
			for (uint32_t c = 0; c < 3; c++) {
				double s = (double)i / 2.4;
				double want = s * 0.5 + v * 0.25 + c;
				worst = fmax(worst, fabs((double)f[((size_t)i * 2 + v) * 3 + c] - want));
			}
	free(f);
	CHECKF(worst < 1e-5, "MDD at 24 fps: off by %g", worst);

	/* An animation entirely before frame 0 is refused. */
	const float early[2] = {-2.0f, -1.0f};
	b = make_mdd(2, 2, early, &len);
	rc = drape_mdd_read_buffer(b, len, "e.mdd", NULL, &a, &err);
	free(b);
	CHECK_OK(rc);
	rc = drape_anim_resample(&a, 24.0, "e.mdd", &f, &n, &first, &err);
	drape_anim_free(&a);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "e.mdd") != NULL, "%s", err.message);
}

static void test_by_name(void)
{
	drape_anim a;
	drape_error err;
	drape_err rc = drape_anim_read_file(DATA "anim/body_rest_m.obj", NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "not a known animation") != NULL, "%s", err.message);
	rc = drape_anim_read_file(DATA "anim/missing.pc2", NULL, &a, &err);
	CHECKF(rc == DRAPE_ENOTFOUND && strstr(err.message, "missing.pc2") != NULL, "%s", err.message);
	/* A PC2 reader given an OBJ names the signature. */
	rc = drape_pc2_read_file(DATA "anim/body_rest_m.obj", NULL, &a, &err);
	CHECKF(rc == DRAPE_EINVAL && strstr(err.message, "header.signature") != NULL, "%s", err.message);
}

/* ---- Scenes with an animated collider ---------------------------------------------- */

/* The walking demo scene: the body's 96 poses from frame 1, pose 1 the rest
 * mesh (SOURCES.md), the scene running to the animation's last frame. */
static void test_scene_walk(void)
{
	drape_scene sc;
	drape_error err;
	drape_err rc = drape_scene_read("examples/walk.json", NULL, &sc, &err);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	const drape_collider_desc *d = &sc.colliders[0];
	int ok = sc.collider_count == 1 && d->shape == DRAPE_SHAPE_MESH && d->frame_count == 96 &&
		 d->frame_start == 1.0f && d->vertex_count == 13652 && sc.frames == 96 && sc.start_frame == 1 &&
		 sc.collider_anims[0].samples == 96 && d->keyframe_count == 0;
	double worst = 0;
	for (uint32_t i = 0; ok && i < d->vertex_count * 3; i++)
		worst = fmax(worst, fabs((double)d->frames[i] - d->vertices[i]));
	drape_scene_free(&sc);
	CHECK(ok);
	CHECKF(worst <= 2e-7, "pose 1 differs from the rest mesh by %g m", worst);
}

/* Writes the 4-vertex mesh and a PC2 of it (`samples` from `start`) into
 * dir; returns 0 on success. */
static int write_anim_files(const char *dir, uint32_t samples, float start)
{
	char path[256];
	snprintf(path, sizeof path, "%s/body.obj", dir);
	write_obj(path, 0, 4, 1);
	size_t len;
	uint8_t *b = make_pc2(4, samples, start, 1.0f, &len);
	snprintf(path, sizeof path, "%s/walk.pc2", dir);
	FILE *f = fopen(path, "wb");
	int bad = f == NULL || fwrite(b, 1, len, f) != len;
	if (f != NULL)
		bad |= fclose(f) != 0;
	free(b);
	b = make_pc2(5, 2, 1.0f, 1.0f, &len);
	snprintf(path, sizeof path, "%s/five.pc2", dir);
	f = fopen(path, "wb");
	bad |= f == NULL || fwrite(b, 1, len, f) != len;
	if (f != NULL)
		bad |= fclose(f) != 0;
	free(b);
	return bad;
}

static void remove_anim_files(const char *dir)
{
	char path[256];
	static const char *const names[] = {"body.obj", "walk.pc2", "five.pc2"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static drape_err load_text(const char *dir, const char *json, drape_scene *sc, drape_error *err)
{
	return drape_scene_read_string(json, strlen(json), dir, "s.json", NULL, sc, err);
}

/* Scale and translate move every pose as they move the mesh; start_frame
 * and the default frames follow the animation. */
static void test_scene_anim_transform(void)
{
	char dir[] = "/tmp/drape_scnanim_XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	CHECK(write_anim_files(dir, 6, 3.0f) == 0);
	drape_scene sc;
	drape_error err;
	const char *json = "{\"start_frame\": 5, \"cloth\": {\"mesh\": {\"grid\": {\"size\": [1, 1], "
			   "\"resolution\": [4, 4]}}}, \"colliders\": [{\"mesh\": \"body.obj\", \"animation\": "
			   "\"walk.pc2\", \"scale\": 2, \"translate\": [0, 1, 0]}]}";
	drape_err rc = load_text(dir, json, &sc, &err);
	if (rc != DRAPE_OK)
		remove_anim_files(dir);
	CHECKF(rc == DRAPE_OK, "%s", err.message);
	const drape_collider_desc *d = &sc.colliders[0];
	/* Samples at frames 3..8, so the scene runs to frame 8 and writes 5..8. */
	int ok = d->frame_count == 6 && d->frame_start == 3.0f && sc.frames == 8 && sc.start_frame == 5;
	double worst = 0;
	for (uint32_t p = 0; ok && p < 6; p++)
		for (uint32_t v = 0; v < 4; v++)
			for (uint32_t c = 0; c < 3; c++) {
				double want = (double)synth(p, v, c) * 2.0 + (c == 1 ? 1.0 : 0.0);
				worst = fmax(worst, fabs((double)d->frames[((size_t)p * 4 + v) * 3 + c] - want));
			}
	drape_scene_free(&sc);
	if (!ok || worst > 0)
		remove_anim_files(dir);
	CHECK(ok);
	CHECKF(worst == 0, "poses off by %g after scale 2 and translate y 1", worst);

	/* Malformed scenes, each refused with the field at fault. */
	static const struct {
		const char *json;
		drape_err code;
		const char *want;
	} bad[] = {
		{"{\"cloth\": {\"mesh\": \"body.obj\"}, \"colliders\": [{\"mesh\": \"body.obj\", \"animation\": "
		 "\"five.pc2\"}]}",
		 DRAPE_EINVAL, "s.json: colliders[0].animation: "},
		{"{\"cloth\": {\"mesh\": \"body.obj\"}, \"colliders\": [{\"sphere\": {\"center\": [0,0,0], \"radius\": 1}, "
		 "\"animation\": \"walk.pc2\"}]}",
		 DRAPE_EINVAL, "colliders[0].animation: only mesh colliders"},
		{"{\"cloth\": {\"mesh\": \"body.obj\"}, \"colliders\": [{\"mesh\": \"body.obj\", \"animation\": "
		 "\"walk.pc2\", \"keyframes\": [{\"frame\": 1}]}]}",
		 DRAPE_EINVAL, "colliders[0].keyframes: "},
		{"{\"cloth\": {\"mesh\": \"body.obj\"}, \"colliders\": [{\"mesh\": \"body.obj\", \"animation\": "
		 "\"missing.pc2\"}]}",
		 DRAPE_ENOTFOUND, "colliders[0].animation: "},
		{"{\"cloth\": {\"mesh\": \"body.obj\"}, \"colliders\": [{\"mesh\": \"body.obj\", \"animation\": 3}]}",
		 DRAPE_EINVAL, "colliders[0].animation: must be"},
		{"{\"frames\": 10, \"start_frame\": 11, \"cloth\": {\"mesh\": \"body.obj\"}}", DRAPE_ERANGE,
		 "s.json: start_frame: 11 is after the last frame 10"},
		{"{\"start_frame\": 0, \"cloth\": {\"mesh\": \"body.obj\"}}", DRAPE_ERANGE, "s.json: start_frame"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&sc, 0x5a, sizeof sc);
		rc = load_text(dir, bad[i].json, &sc, &err);
		if (rc == DRAPE_OK)
			drape_scene_free(&sc);
		if (rc != bad[i].code || strstr(err.message, bad[i].want) == NULL) {
			remove_anim_files(dir);
			CHECKF(0, "case %zu: %s \"%s\", want %s naming \"%s\"", i, drape_err_name(rc), err.message,
			       drape_err_name(bad[i].code), bad[i].want);
		}
	}
	remove_anim_files(dir);
}

static const check_test tests[] = {
	CHECK_TEST(test_pc2_walk),	    CHECK_TEST(test_pc2_synthetic),   CHECK_TEST(test_pc2_malformed),
	CHECK_TEST(test_mdd),		    CHECK_TEST(test_objseq),	      CHECK_TEST(test_resample_identity),
	CHECK_TEST(test_resample_rates),    CHECK_TEST(test_by_name),	      CHECK_TEST(test_scene_walk),
	CHECK_TEST(test_scene_anim_transform),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
