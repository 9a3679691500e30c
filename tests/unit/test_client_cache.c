/*
 * Cache writers (client/cachewrite.c, include/drape/cache.h): each format is
 * written from the solver's frames and read back, PC2 and MDD through
 * libdrape's point-cache readers (client/pointcache.c), Houdini's JSON
 * geometry through a reader written here against Houdini's documented
 * layout, OBJ through the OBJ reader; positions must come back bit for bit.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "client/obj.h"
#include "client/pointcache.h"
#include "drape/cache.h"
#include "drape/sim.h"
#include "sim_fixtures.h"

#define FRAMES 6

/* A free-falling sheet: 9 x 7 vertices, no air, no damping, FRAMES frames
 * of the solver (frames[0] is the rest pose, frames[k] the state after k
 * steps). */
typedef struct run {
	grid g;
	float *frames[FRAMES + 1];
	float fps;
} run;

static int run_make(run *r)
{
	memset(r, 0, sizeof *r);
	const float o[3] = {0, 2, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 0.75f};
	if (!grid_make(&r->g, 9, 7, o, u, v))
		return 0;
	drape_sim_desc d;
	desc_from_grid(&d, &r->g);
	d.params.damping = 1.0f;
	d.params.air_density = 0.0f;
	r->fps = d.params.fps;
	drape_sim *sim;
	if (drape_sim_create(&d, &sim, NULL) != DRAPE_OK)
		return 0;
	size_t bytes = (size_t)r->g.nv * 3 * sizeof(float);
	for (int k = 0; k <= FRAMES; k++) {
		r->frames[k] = malloc(bytes);
		if (r->frames[k] == NULL)
			return 0;
		if (k == 0) {
			memcpy(r->frames[0], r->g.pos, bytes);
			continue;
		}
		drape_sim_stats st;
		if (drape_sim_step(sim, &st, NULL) != DRAPE_OK)
			return 0;
		drape_sim_get_positions(sim, r->frames[k]);
	}
	drape_sim_destroy(sim);
	return 1;
}

static void run_free(run *r)
{
	for (int k = 0; k <= FRAMES; k++)
		free(r->frames[k]);
	grid_free(&r->g);
}

/* A fresh empty folder under /tmp. */
static void temp_dir(char *buf, size_t cap, const char *tag)
{
	snprintf(buf, cap, "/tmp/drape_cache_%s_XXXXXX", tag);
	if (mkdtemp(buf) == NULL)
		buf[0] = '\0';
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	struct dirent *e;
	char p[4096];
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	if (d != NULL)
		closedir(d);
	return n;
}

/* What every writer test starts from: the solved run, a fresh folder and a
 * cache description of the run's vertex count in that folder. */
typedef struct fixture {
	run r;
	char dir[256];
	drape_cache_desc d;
} fixture;

static int fixture_open(fixture *f, const char *tag, drape_cache_format format)
{
	if (!run_make(&f->r))
		return 0;
	temp_dir(f->dir, sizeof f->dir, tag);
	drape_cache_desc_default(&f->d);
	f->d.format = format;
	f->d.dir = f->dir;
	f->d.vertex_count = f->r.g.nv;
	f->d.fps = f->r.fps;
	return f->dir[0] != '\0';
}

static void fixture_close(fixture *f)
{
	if (f->dir[0] != '\0')
		remove_dir(f->dir);
	run_free(&f->r);
}

/* PC2: after every frame the file is a valid cache of the frames so far. */
static void test_pc2_roundtrip(void)
{
	fixture f;
	CHECK(fixture_open(&f, "pc2", DRAPE_CACHE_PC2));
	drape_cache_writer *w;
	drape_error err;
	CHECK_OK(drape_cache_open(&f.d, &w, &err));
	char path[512];
	snprintf(path, sizeof path, "%s/cloth.pc2", f.dir);
	int bad = 0;
	for (uint32_t k = 1; k <= FRAMES && !bad; k++) {
		if (drape_cache_write_frame(w, k, f.r.frames[k], &err) != DRAPE_OK) {
			bad = 1;
			break;
		}
		drape_anim a;
		if (drape_pc2_read_file(path, NULL, &a, &err) != DRAPE_OK) {
			printf("  %s\n", err.message);
			bad = 2;
			break;
		}
		if (a.sample_count != k || a.vertex_count != f.r.g.nv || a.start != 1.0f || a.rate != 1.0f)
			bad = 3;
		for (uint32_t j = 0; j < a.sample_count && !bad; j++)
			if (memcmp(a.positions + (size_t)j * f.r.g.nv * 3, f.r.frames[j + 1],
				   (size_t)f.r.g.nv * 12) != 0)
				bad = 4;
		drape_anim_free(&a);
	}
	CHECK_OK(drape_cache_close(w, &err));
	fixture_close(&f);
	CHECKF(bad == 0, "failure %d", bad);
}

/* PC2 of a run received from frame 3 on: the start frame is 3. */
static void test_pc2_start_frame(void)
{
	fixture f;
	CHECK(fixture_open(&f, "pc2s", DRAPE_CACHE_PC2));
	f.d.name = "shirt";
	drape_cache_writer *w;
	CHECK_OK(drape_cache_open(&f.d, &w, NULL));
	drape_err e1 = drape_cache_write_frame(w, 3, f.r.frames[3], NULL);
	drape_err e2 = drape_cache_write_frame(w, 4, f.r.frames[4], NULL);
	/* A gap and a repeat are refused and change nothing. */
	drape_error err;
	drape_err gap = drape_cache_write_frame(w, 6, f.r.frames[6], &err);
	drape_err rep = drape_cache_write_frame(w, 4, f.r.frames[4], NULL);
	CHECK_OK(drape_cache_close(w, NULL));
	char path[512];
	snprintf(path, sizeof path, "%s/shirt.pc2", f.dir);
	drape_anim a;
	drape_err rd = drape_pc2_read_file(path, NULL, &a, NULL);
	fixture_close(&f);
	CHECK(e1 == DRAPE_OK && e2 == DRAPE_OK);
	CHECK(gap == DRAPE_EINVAL && strstr(err.message, "index") != NULL);
	CHECK(rep == DRAPE_EINVAL);
	CHECK(rd == DRAPE_OK);
	CHECKF(a.start == 3.0f && a.sample_count == 2, "start %g samples %u", (double)a.start, a.sample_count);
	drape_anim_free(&a);
}

static void test_mdd_roundtrip(void)
{
	fixture f;
	CHECK(fixture_open(&f, "mdd", DRAPE_CACHE_MDD));
	f.d.frame_count = FRAMES;
	drape_cache_writer *w;
	CHECK_OK(drape_cache_open(&f.d, &w, NULL));
	int bad = 0;
	for (uint32_t k = 1; k <= FRAMES; k++)
		if (drape_cache_write_frame(w, k, f.r.frames[k], NULL) != DRAPE_OK)
			bad = 1;
	/* One past the declared count is refused. */
	if (drape_cache_write_frame(w, FRAMES + 1, f.r.frames[1], NULL) != DRAPE_EINVAL)
		bad = 2;
	CHECK_OK(drape_cache_close(w, NULL));
	char path[512];
	snprintf(path, sizeof path, "%s/cloth.mdd", f.dir);
	drape_anim a;
	drape_error err;
	drape_err rd = drape_mdd_read_file(path, NULL, &a, &err);
	if (rd == DRAPE_OK) {
		if (a.sample_count != FRAMES || a.vertex_count != f.r.g.nv)
			bad = 3;
		for (uint32_t j = 0; j < a.sample_count && !bad; j++) {
			if (a.times[j] != (float)(j + 1) / f.r.fps)
				bad = 4;
			if (memcmp(a.positions + (size_t)j * f.r.g.nv * 3, f.r.frames[j + 1], (size_t)f.r.g.nv * 12))
				bad = 5;
		}
		drape_anim_free(&a);
	}
	fixture_close(&f);
	CHECKF(rd == DRAPE_OK, "%s", err.message);
	CHECKF(bad == 0, "failure %d", bad);
}

/* A run that ends before the frames announced: close compacts the file to
 * a valid MDD of the frames written. */
static void test_mdd_short_run(void)
{
	fixture f;
	CHECK(fixture_open(&f, "mdds", DRAPE_CACHE_MDD));
	f.d.frame_count = 100;
	drape_cache_writer *w;
	CHECK_OK(drape_cache_open(&f.d, &w, NULL));
	for (uint32_t k = 1; k <= 3; k++)
		CHECK_OK(drape_cache_write_frame(w, k, f.r.frames[k], NULL));
	CHECK_OK(drape_cache_close(w, NULL));
	char path[512];
	snprintf(path, sizeof path, "%s/cloth.mdd", f.dir);
	drape_anim a;
	drape_error err;
	drape_err rd = drape_mdd_read_file(path, NULL, &a, &err);
	int bad = 0;
	if (rd == DRAPE_OK) {
		if (a.sample_count != 3)
			bad = 1;
		for (uint32_t j = 0; j < a.sample_count && !bad; j++)
			if (a.times[j] != (float)(j + 1) / f.r.fps ||
			    memcmp(a.positions + (size_t)j * f.r.g.nv * 3, f.r.frames[j + 1], (size_t)f.r.g.nv * 12))
				bad = 2;
		drape_anim_free(&a);
	}
	fixture_close(&f);
	CHECKF(rd == DRAPE_OK, "%s", err.message);
	CHECKF(bad == 0, "failure %d", bad);
}

/* ---- A reader of Houdini's JSON geometry, for the test ------------------------ */

/* The value after key `key` in a Houdini key/value array, or NULL. */
static const cJSON *kv(const cJSON *arr, const char *key)
{
	if (!cJSON_IsArray(arr))
		return NULL;
	for (const cJSON *k = arr->child; k != NULL && k->next != NULL; k = k->next->next)
		if (cJSON_IsString(k) && strcmp(k->valuestring, key) == 0)
			return k->next;
	return NULL;
}

typedef struct geo {
	long points, vertices, prims;
	float *P, *v;
	uint32_t *indices;
	long n_indices;
	long rle_size, rle_count;
} geo;

/* Reads attribute `name`'s tuples (points x 3) into a new array. */
static float *geo_attr(const cJSON *pattrs, const char *name, long points)
{
	for (const cJSON *a = pattrs ? pattrs->child : NULL; a != NULL; a = a->next) {
		const cJSON *def = cJSON_GetArrayItem(a, 0), *val = cJSON_GetArrayItem(a, 1);
		const cJSON *nm = kv(def, "name");
		if (!cJSON_IsString(nm) || strcmp(nm->valuestring, name) != 0)
			continue;
		const cJSON *values = kv(val, "values");
		const cJSON *size = kv(values, "size");
		const cJSON *storage = kv(values, "storage");
		const cJSON *tuples = kv(values, "tuples");
		if (!cJSON_IsNumber(size) || size->valueint != 3 || !cJSON_IsString(storage) ||
		    strcmp(storage->valuestring, "fpreal32") != 0 || cJSON_GetArraySize(tuples) != points)
			return NULL;
		float *out = malloc((size_t)points * 3 * sizeof *out);
		long i = 0;
		for (const cJSON *t = tuples->child; t != NULL && out != NULL; t = t->next, i++)
			for (int c = 0; c < 3; c++) {
				const cJSON *x = cJSON_GetArrayItem(t, c);
				out[3 * i + c] = cJSON_IsNumber(x) ? (float)x->valuedouble : NAN;
			}
		return out;
	}
	return NULL;
}

static int geo_read(const char *path, geo *g)
{
	memset(g, 0, sizeof *g);
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return 0;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	if (buf == NULL || got != (size_t)n) {
		free(buf);
		return 0;
	}
	buf[n] = '\0';
	cJSON *root = cJSON_Parse(buf);
	free(buf);
	if (root == NULL)
		return 0;
	const cJSON *pc = kv(root, "pointcount"), *vc = kv(root, "vertexcount"), *pr = kv(root, "primitivecount");
	int ok = cJSON_IsNumber(pc) && cJSON_IsNumber(vc) && cJSON_IsNumber(pr);
	if (ok) {
		g->points = (long)pc->valuedouble;
		g->vertices = (long)vc->valuedouble;
		g->prims = (long)pr->valuedouble;
		const cJSON *idx = kv(kv(kv(root, "topology"), "pointref"), "indices");
		g->n_indices = cJSON_GetArraySize(idx);
		g->indices = malloc((size_t)(g->n_indices + 1) * sizeof *g->indices);
		long i = 0;
		for (const cJSON *x = idx ? idx->child : NULL; x != NULL && g->indices; x = x->next)
			g->indices[i++] = (uint32_t)x->valuedouble;
		const cJSON *pattrs = kv(kv(root, "attributes"), "pointattributes");
		g->P = geo_attr(pattrs, "P", g->points);
		g->v = geo_attr(pattrs, "v", g->points);
		const cJSON *prims = kv(root, "primitives");
		const cJSON *run0 = cJSON_GetArrayItem(prims, 0);
		const cJSON *type = kv(cJSON_GetArrayItem(run0, 0), "type");
		const cJSON *rle = kv(cJSON_GetArrayItem(run0, 1), "nvertices_rle");
		if (cJSON_IsString(type) && strcmp(type->valuestring, "Polygon_run") == 0 &&
		    cJSON_GetArraySize(rle) == 2) {
			g->rle_size = (long)cJSON_GetArrayItem(rle, 0)->valuedouble;
			g->rle_count = (long)cJSON_GetArrayItem(rle, 1)->valuedouble;
		}
		ok = g->P != NULL && g->v != NULL && g->indices != NULL;
	}
	cJSON_Delete(root);
	return ok;
}

static void geo_free(geo *g)
{
	free(g->P);
	free(g->v);
	free(g->indices);
}

/* GEO: P bit for bit, topology the triangles, v the finite difference of
 * consecutive frames, and for a free fall v_y is gravity's: the mean
 * velocity over frame k is -g (k - 1/2) / fps. */
static void test_geo_roundtrip(void)
{
	fixture f;
	CHECK(fixture_open(&f, "geo", DRAPE_CACHE_GEO));
	f.d.triangles = f.r.g.tri;
	f.d.triangle_count = f.r.g.nt;
	f.d.previous = f.r.frames[0];
	drape_cache_writer *w;
	CHECK_OK(drape_cache_open(&f.d, &w, NULL));
	int bad = 0;
	for (uint32_t k = 1; k <= FRAMES; k++)
		if (drape_cache_write_frame(w, k, f.r.frames[k], NULL) != DRAPE_OK)
			bad = 1;
	CHECK_OK(drape_cache_close(w, NULL));
	double worst = 0.0;
	for (uint32_t k = 1; k <= FRAMES && !bad; k++) {
		char path[512];
		snprintf(path, sizeof path, "%s/frame_%04u.geo", f.dir, k);
		geo g;
		if (!geo_read(path, &g)) {
			bad = 2;
			break;
		}
		if (g.points != (long)f.r.g.nv || g.vertices != 3 * (long)f.r.g.nt || g.prims != (long)f.r.g.nt ||
		    g.n_indices != 3 * (long)f.r.g.nt || g.rle_size != 3 || g.rle_count != (long)f.r.g.nt)
			bad = 3;
		else if (memcmp(g.indices, f.r.g.tri, (size_t)f.r.g.nt * 12) != 0)
			bad = 4;
		else if (memcmp(g.P, f.r.frames[k], (size_t)f.r.g.nv * 12) != 0)
			bad = 5;
		for (uint32_t i = 0; i < f.r.g.nv * 3 && !bad; i++) {
			float fd = (f.r.frames[k][i] - f.r.frames[k - 1][i]) * f.r.fps;
			if (memcmp(&g.v[i], &fd, 4) != 0)
				bad = 6;
		}
		for (uint32_t i = 0; i < f.r.g.nv && !bad; i++) {
			double expect = -9.81 * ((double)k - 0.5) / f.r.fps;
			double rel = fabs(g.v[3 * i + 1] - expect) / fabs(expect);
			if (rel > worst)
				worst = rel;
		}
		geo_free(&g);
	}
	fixture_close(&f);
	CHECKF(bad == 0, "failure %d", bad);
	/* Substepping (semi-implicit Euler, 4 substeps) is first order in dt:
	 * frame 1's mean velocity is off by about 1/substeps of a half step. */
	CHECKF(worst < 0.3, "free-fall v_y off by %.3g relative", worst);
}

/* ---- OBJ with the source's faces, UVs and groups -------------------------- */

static const char source_obj[] =
	"# a 3 x 2 quad sheet with UVs, normals, two groups and a material\n"
	"mtllib cloth.mtl\n"
	"o sheet\n"
	"v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 0 1\nv 1 0 1\nv 2 0 1\n"
	"vt 0 0\nvt 0.5 0\nvt 1 0\nvt 0 1\nvt 0.5 1\nvt 1 1\n"
	"vn 0 1 0\n"
	"g left\nusemtl silk\ns 1\n"
	"f 1/1/1 4/4/1 5/5/1 2/2/1\n"
	"g right\n"
	"f -5/-5/-1 -2/-2/-1 -1/-1/-1 -4/-4/-1\n";

static void test_obj_keeps_source(void)
{
	char dir[256];
	temp_dir(dir, sizeof dir, "obj");
	CHECK(dir[0]);
	char src[512];
	snprintf(src, sizeof src, "%s/source.obj", dir);
	FILE *f = fopen(src, "w");
	CHECK(f != NULL);
	fputs(source_obj, f);
	fclose(f);
	drape_obj_mesh in;
	CHECK_OK(drape_obj_read_file(src, NULL, &in, NULL));
	/* The sheet lifted and tilted about x: the normal turns with it. */
	float moved[18];
	const float c = 0.8f, s = 0.6f;
	for (uint32_t i = 0; i < 6; i++) {
		const float *p = in.positions + 3 * i;
		moved[3 * i] = p[0] + 0.125f;
		moved[3 * i + 1] = 3.0f + p[1] * c - p[2] * s;
		moved[3 * i + 2] = p[1] * s + p[2] * c;
	}
	drape_cache_desc d;
	drape_cache_desc_default(&d);
	d.format = DRAPE_CACHE_OBJ;
	d.dir = dir;
	d.vertex_count = in.vertex_count;
	d.obj_source = src;
	drape_cache_writer *w;
	drape_error err;
	drape_err open_rc = drape_cache_open(&d, &w, &err);
	if (open_rc != DRAPE_OK)
		drape_obj_free(&in);
	CHECKF(open_rc == DRAPE_OK, "%s", err.message);
	drape_err wr = drape_cache_write_frame(w, 7, moved, &err);
	drape_cache_close(w, NULL);
	char out[512];
	snprintf(out, sizeof out, "%s/frame_0007.obj", dir);
	drape_obj_mesh m;
	drape_err rd = drape_obj_read_file(out, NULL, &m, &err);
	/* The normals written: one per vertex, each the tilted plane's. */
	int normals = 0, quads = 0, bad_normal = 0;
	f = fopen(out, "r");
	char line[256];
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		float x, y, z;
		if (sscanf(line, "vn %f %f %f", &x, &y, &z) == 3) {
			normals++;
			/* Counter-clockwise seen from +y at rest: the normal is
			 * -y turned by the tilt, (0, -c, -s) or its opposite. */
			if (fabsf(fabsf(y) - c) > 1e-6f || fabsf(fabsf(z) - s) > 1e-6f || x != 0.0f)
				bad_normal++;
		}
		int a[4], t[4], n[4];
		if (line[0] == 'f' && sscanf(line, "f %d/%d/%d %d/%d/%d %d/%d/%d %d/%d/%d", &a[0], &t[0], &n[0], &a[1],
					     &t[1], &n[1], &a[2], &t[2], &n[2], &a[3], &t[3], &n[3]) == 12) {
			quads++;
			for (int k = 0; k < 4; k++)
				if (a[k] != n[k] || a[k] != t[k])
					bad_normal += 100;
		}
	}
	if (f != NULL)
		fclose(f);
	remove_dir(dir);
	int bad = 0;
	if (rd == DRAPE_OK) {
		if (m.vertex_count != 6 || memcmp(m.positions, moved, sizeof moved) != 0)
			bad = 1;
		else if (m.face_count != 2 || m.triangle_count != 4)
			bad = 2;
		else if (m.uvs == NULL || memcmp(m.uvs, in.uvs, 6 * 2 * sizeof(float)) != 0)
			bad = 3;
		else if (m.group_count != in.group_count || drape_obj_find_group(&m, "left") == NULL ||
			 drape_obj_find_group(&m, "right") == NULL ||
			 drape_obj_find_group(&m, "right")->count != 4)
			bad = 4;
		drape_obj_free(&m);
	}
	drape_obj_free(&in);
	CHECKF(wr == DRAPE_OK, "%s", err.message);
	CHECKF(rd == DRAPE_OK, "%s", err.message);
	CHECKF(bad == 0, "failure %d", bad);
	CHECKF(normals == 6 && bad_normal == 0 && quads == 2, "normals %d bad %d quads %d", normals, bad_normal,
	       quads);
}

/* Bad input names the field and leaves nothing behind. */
static void test_errors(void)
{
	char dir[256];
	temp_dir(dir, sizeof dir, "err");
	CHECK(dir[0]);
	drape_cache_format fmt = DRAPE_CACHE_PC2;
	drape_error err;
	CHECK(drape_cache_format_parse("abc", &fmt, &err) == DRAPE_EINVAL);
	CHECK(fmt == DRAPE_CACHE_PC2 && strstr(err.message, "obj, pc2, mdd, geo") != NULL);
	CHECK_OK(drape_cache_format_parse("geo", &fmt, NULL));
	CHECK(fmt == DRAPE_CACHE_GEO && strcmp(drape_cache_format_name(fmt), "geo") == 0);

	drape_cache_desc d;
	drape_cache_desc_default(&d);
	d.dir = dir;
	d.vertex_count = 3;
	d.format = DRAPE_CACHE_MDD;
	drape_cache_writer *w = NULL;
	CHECK(drape_cache_open(&d, &w, &err) == DRAPE_EINVAL && strstr(err.message, "frame_count") != NULL);
	d.format = DRAPE_CACHE_GEO;
	const uint32_t tri[3] = {0, 1, 3};
	d.triangles = tri;
	d.triangle_count = 1;
	CHECK(drape_cache_open(&d, &w, &err) == DRAPE_ERANGE && strstr(err.message, "triangles[0][2]") != NULL);
	d.triangles = NULL;
	d.triangle_count = 0;
	d.fps = 0.0f;
	CHECK(drape_cache_open(&d, &w, &err) == DRAPE_EINVAL && strstr(err.message, "fps") != NULL);
	d.fps = 24.0f;
	d.format = DRAPE_CACHE_OBJ;
	d.obj_source = "/nonexistent/x.obj";
	CHECK(drape_cache_open(&d, &w, &err) == DRAPE_EIO);
	d.obj_source = NULL;
	d.format = DRAPE_CACHE_PC2;
	d.name = "../escape";
	CHECK(drape_cache_open(&d, &w, &err) == DRAPE_EINVAL && strstr(err.message, "name") != NULL);
	d.name = NULL;
	CHECK(w == NULL);
	CHECK(count_files(dir) == 0);
	/* A non-finite position writes nothing: the PC2 still holds 1 frame. */
	CHECK_OK(drape_cache_open(&d, &w, NULL));
	float p[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
	CHECK_OK(drape_cache_write_frame(w, 1, p, NULL));
	p[4] = NAN;
	drape_err nf = drape_cache_write_frame(w, 2, p, &err);
	drape_cache_close(w, NULL);
	char path[512];
	snprintf(path, sizeof path, "%s/cloth.pc2", dir);
	drape_anim a;
	drape_err rd = drape_pc2_read_file(path, NULL, &a, NULL);
	uint32_t samples = rd == DRAPE_OK ? a.sample_count : 0;
	if (rd == DRAPE_OK)
		drape_anim_free(&a);
	remove_dir(dir);
	CHECK(nf == DRAPE_ENONFINITE && strstr(err.message, "positions[1]") != NULL);
	CHECK(rd == DRAPE_OK && samples == 1);
}

/* An OBJ source whose vertex count is not the cloth's is refused. */
static void test_obj_source_mismatch(void)
{
	char dir[256];
	temp_dir(dir, sizeof dir, "objm");
	char src[512];
	snprintf(src, sizeof src, "%s/source.obj", dir);
	FILE *f = fopen(src, "w");
	CHECK(f != NULL);
	fputs(source_obj, f);
	fclose(f);
	drape_cache_desc d;
	drape_cache_desc_default(&d);
	d.dir = dir;
	d.vertex_count = 7;
	d.obj_source = src;
	drape_cache_writer *w = NULL;
	drape_error err;
	drape_err rc = drape_cache_open(&d, &w, &err);
	remove_dir(dir);
	CHECK(rc == DRAPE_EINVAL && w == NULL);
	CHECKF(strstr(err.message, "has 6 vertices, the cloth has 7") != NULL, "%s", err.message);
}

static const check_test tests[] = {
	CHECK_TEST(test_pc2_roundtrip),	   CHECK_TEST(test_pc2_start_frame), CHECK_TEST(test_mdd_roundtrip),
	CHECK_TEST(test_mdd_short_run),	   CHECK_TEST(test_geo_roundtrip),   CHECK_TEST(test_obj_keeps_source),
	CHECK_TEST(test_errors),	   CHECK_TEST(test_obj_source_mismatch),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
