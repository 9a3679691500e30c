/*
 * Several cloths in one sim (drape_sim_desc.objects, server/sim/objects.c):
 * cloth-cloth contact is the self-collision with its guarantee (no two
 * layers cross), and collision layers switch it off between chosen
 * objects. Crossings are counted with the exact triangle-triangle test of
 * drape_preflight: the pairs between two objects are the pairs of the
 * whole mesh less those within each.
 *
 *  - two sheets of different resolution dropped on a sphere 3 cm apart:
 *    0 crossing pairs between them at every frame, the upper resting at
 *    least a thickness above the lower; with layers that do not meet, the
 *    upper falls through the lower onto the sphere (crossings appear, the
 *    two centres end at one height);
 *  - issue 19's layered outfit: the T-shirt and trousers of
 *    tests/data/meshes/mh_male_casualsuit04.obj, and a jacket-like copy
 *    of the T-shirt offset 8 mm outwards along its vertex normals, on the
 *    static body:
 *    0 crossing pairs between the layers at every frame;
 *  - objects that are not consecutive ranges, or a triangle joining two,
 *    are refused naming the field;
 *  - bit-identical across thread counts.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

/* Under AddressSanitizer (about ten times slower) the outfit runs 8
 * frames instead of 24: the layers let through cross by frame 3. */
#if defined(__SANITIZE_ADDRESS__)
#define LAYERS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LAYERS_SANITIZED 1
#endif
#endif
#ifndef LAYERS_SANITIZED
#define LAYERS_SANITIZED 0
#endif

/* Two meshes in one: b's vertices and triangles after a's. */
typedef struct two {
	float *pos;
	uint32_t *tri;
	uint32_t nv, nt, nv_a, nt_a;
} two;

static int two_join(two *m, const float *pa, uint32_t na, const uint32_t *ta, uint32_t nta,
		    const float *pb, uint32_t nb, const uint32_t *tb, uint32_t ntb)
{
	m->nv = na + nb;
	m->nt = nta + ntb;
	m->nv_a = na;
	m->nt_a = nta;
	m->pos = malloc(3 * (size_t)m->nv * sizeof *m->pos);
	m->tri = malloc(3 * (size_t)m->nt * sizeof *m->tri);
	if (m->pos == NULL || m->tri == NULL)
		return 0;
	memcpy(m->pos, pa, 3 * (size_t)na * sizeof *pa);
	memcpy(m->pos + 3 * (size_t)na, pb, 3 * (size_t)nb * sizeof *pb);
	memcpy(m->tri, ta, 3 * (size_t)nta * sizeof *ta);
	for (size_t k = 0; k < 3 * (size_t)ntb; k++)
		m->tri[3 * (size_t)nta + k] = tb[k] + na;
	return 1;
}

static void two_free(two *m)
{
	free(m->pos);
	free(m->tri);
}

/* Intersecting triangle pairs between the two objects of m at positions x:
 * those of the whole, less those within a and within b. */
static uint64_t cross_pairs(const two *m, const float *x)
{
	uint64_t all = 0, in_a = 0, in_b = 0;
	uint32_t *tb = malloc(3 * (size_t)(m->nt - m->nt_a) * sizeof *tb);
	if (tb == NULL)
		return UINT64_MAX;
	for (size_t k = 0; k < 3 * (size_t)(m->nt - m->nt_a); k++)
		tb[k] = m->tri[3 * (size_t)m->nt_a + k] - m->nv_a;
	if (drape_preflight(x, m->nv, m->tri, m->nt, NULL, 0, &all, NULL) != DRAPE_OK ||
	    drape_preflight(x, m->nv_a, m->tri, m->nt_a, NULL, 0, &in_a, NULL) != DRAPE_OK ||
	    drape_preflight(x + 3 * (size_t)m->nv_a, m->nv - m->nv_a, tb, m->nt - m->nt_a, NULL, 0,
			    &in_b, NULL) != DRAPE_OK)
		all = UINT64_MAX, in_a = in_b = 0;
	free(tb);
	return all - in_a - in_b;
}

/* Vertex nearest the sheet's centre column, in the caller's numbering. */
static uint32_t centre_vertex(const float *x, uint32_t first, uint32_t count)
{
	uint32_t best = first;
	double bd = 1e30;
	for (uint32_t i = first; i < first + count; i++) {
		double d = (double)x[3 * i] * x[3 * i] + (double)x[3 * i + 2] * x[3 * i + 2];
		if (d < bd)
			bd = d, best = i;
	}
	return best;
}

/*
 * Two sheets over a sphere of radius 0.2 m: a 0.5 m square of 25 x 25
 * vertices at y = 0.30 and one of 24 x 24 at y = 0.33. meet = 1: default
 * layers; 0: the lower sheet's layer is not in the upper's collides_with.
 * Returns the most crossing pairs of any frame, and the centres' final
 * height difference (upper - lower) in *gap.
 */
static uint64_t sheets_on_sphere(int meet, int frames, drape_pool *pool, double *gap, float *out)
{
	grid a = {0}, b = {0};
	const float oa[3] = {-0.25f, 0.30f, -0.25f}, ob[3] = {-0.25f, 0.33f, -0.25f};
	const float u[3] = {0.5f, 0, 0}, v[3] = {0, 0, 0.5f};
	two m = {0};
	uint64_t worst = UINT64_MAX;
	if (!grid_make(&a, 25, 25, oa, u, v) || !grid_make(&b, 24, 24, ob, u, v) ||
	    !two_join(&m, a.pos, a.nv, a.tri, a.nt, b.pos, b.nv, b.tri, b.nt))
		goto done;
	drape_sim_object obj[2] = {{0, a.nv, 1u, 0xffffffffu}, {a.nv, b.nv, 2u, meet ? 0xffffffffu : 2u}};
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = m.pos;
	d.vertex_count = m.nv;
	d.triangles = m.tri;
	d.triangle_count = m.nt;
	d.params.self_collision = 1;
	d.params.thickness = 0.005f;
	d.params.self_friction = 0.6f;
	d.objects = obj;
	d.object_count = 2;
	d.pool = pool;
	drape_sim *sim = NULL;
	if (drape_sim_create(&d, &sim, NULL) != DRAPE_OK)
		goto done;
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_SPHERE;
	cd.radius = 0.2f;
	cd.friction = 0.6f;
	cd.static_friction = 0.8f;
	float *x = malloc(3 * (size_t)m.nv * sizeof *x);
	if (x == NULL || drape_sim_add_collider(sim, &cd, NULL, NULL) != DRAPE_OK) {
		free(x);
		drape_sim_destroy(sim);
		goto done;
	}
	worst = 0;
	for (int f = 0; f < frames; f++) {
		if (drape_sim_step(sim, NULL, NULL) != DRAPE_OK) {
			worst = UINT64_MAX;
			break;
		}
		drape_sim_get_positions(sim, x);
		uint64_t c = cross_pairs(&m, x);
		worst = c > worst ? c : worst;
	}
	uint32_t ca = centre_vertex(x, 0, a.nv), cb = centre_vertex(x, a.nv, b.nv);
	*gap = (double)x[3 * cb + 1] - x[3 * ca + 1];
	if (out != NULL)
		memcpy(out, x, 3 * (size_t)m.nv * sizeof *x);
	free(x);
	drape_sim_destroy(sim);
done:
	grid_free(&a);
	grid_free(&b);
	two_free(&m);
	return worst;
}

static void test_sheets_layered(void)
{
	double gap = 0.0;
	uint64_t worst = sheets_on_sphere(1, 36, NULL, &gap, NULL);
	printf("  two sheets on a sphere, colliding: most crossing pairs in a frame %llu, upper "
	       "centre %.2f mm above the lower\n",
	       (unsigned long long)worst, gap * 1e3);
	CHECKF(worst == 0, "%llu crossing pairs between the sheets", (unsigned long long)worst);
	/* The self-collision holds the layers about its thickness (5 mm)
	 * apart; half of it is far from the 0 of the sheets let through. */
	CHECKF(gap > 0.0025, "upper centre %.4f m above the lower", gap);
}

static void test_sheets_layers_off(void)
{
	double gap = 1.0;
	uint64_t worst = sheets_on_sphere(0, 36, NULL, &gap, NULL);
	printf("  two sheets on a sphere, layers apart: most crossing pairs in a frame %llu, upper "
	       "centre %.2f mm above the lower\n",
	       (unsigned long long)worst, gap * 1e3);
	CHECKF(worst != UINT64_MAX && worst > 0, "no crossing: the mask did not let them through");
	CHECKF(fabs(gap) < 0.002, "centres %.4f m apart; both should rest on the sphere", gap);
}

static void test_layers_deterministic(void)
{
	const uint32_t nv = 25 * 25 + 24 * 24;
	float *o1 = malloc(3 * nv * sizeof *o1), *o3 = malloc(3 * nv * sizeof *o3);
	drape_pool *pool = NULL;
	CHECK(o1 && o3 && drape_pool_create(3, &pool, NULL) == DRAPE_OK);
	double g1, g3;
	CHECK(sheets_on_sphere(1, 12, NULL, &g1, o1) != UINT64_MAX);
	CHECK(sheets_on_sphere(1, 12, pool, &g3, o3) != UINT64_MAX);
	drape_pool_destroy(pool);
	CHECK(memcmp(o1, o3, 3 * nv * sizeof *o1) == 0);
	free(o1);
	free(o3);
}

/* A small OBJ reader (v and f lines, polygons fanned) scaled by s. */
static int load_obj(const char *path, float s, float **pos, uint32_t *nv, uint32_t **tri, uint32_t *nt)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	size_t vc = 1024, tc = 1024, vn = 0, tn = 0;
	float *P = malloc(3 * vc * sizeof *P);
	uint32_t *T = malloc(3 * tc * sizeof *T);
	char line[1024];
	while (P && T && fgets(line, sizeof line, f)) {
		if (line[0] == 'v' && line[1] == ' ') {
			if (vn == vc)
				P = realloc(P, 3 * (vc *= 2) * sizeof *P);
			if (P && sscanf(line + 2, "%f %f %f", &P[3 * vn], &P[3 * vn + 1], &P[3 * vn + 2]) == 3) {
				for (int k = 0; k < 3; k++)
					P[3 * vn + k] *= s;
				vn++;
			}
		} else if (line[0] == 'f' && line[1] == ' ') {
			long idx[64];
			int n = 0;
			char *c = line + 2;
			while (n < 64) {
				char *end;
				long v = strtol(c, &end, 10);
				if (end == c)
					break;
				idx[n++] = v < 0 ? (long)vn + v : v - 1;
				c = end;
				while (*c && *c != ' ' && *c != '\t' && *c != '\n')
					c++;
			}
			for (int k = 1; k + 1 < n; k++) {
				if (tn == tc)
					T = realloc(T, 3 * (tc *= 2) * sizeof *T);
				if (T == NULL)
					break;
				T[3 * tn] = (uint32_t)idx[0];
				T[3 * tn + 1] = (uint32_t)idx[k];
				T[3 * tn + 2] = (uint32_t)idx[k + 1];
				tn++;
			}
		}
	}
	fclose(f);
	if (P == NULL || T == NULL) {
		free(P);
		free(T);
		return 0;
	}
	*pos = P;
	*tri = T;
	*nv = (uint32_t)vn;
	*nt = (uint32_t)tn;
	return 1;
}

/*
 * The layered outfit on the static body (tests/data/anim/body_rest_m.obj,
 * metres): the suit, and a copy of its T-shirt moved 8 mm along its
 * area-weighted vertex normals (turned to point away from the body's
 * vertical axis) as the jacket. Self-collision on at 3 mm, the suit's settings of
 * test_sim_deform.c; 24 frames (1 s), every frame checked.
 */
static void test_tshirt_jacket(void)
{
	float *bp = NULL, *sp = NULL;
	uint32_t *bt = NULL, *st = NULL, bn, bnt, sn, snt;
	if (!load_obj("tests/data/anim/body_rest_m.obj", 1.0f, &bp, &bn, &bt, &bnt) ||
	    !load_obj("tests/data/meshes/mh_male_casualsuit04.obj", 0.1f, &sp, &sn, &st, &snt)) {
		free(bp), free(bt), free(sp), free(st);
		CHECKF(0, "tests/data meshes missing");
	}
	/* The T-shirt: the connected component holding the highest vertex
	 * (the other is the trousers). Union-find over the triangles. */
	uint32_t *root = malloc((size_t)sn * sizeof *root);
	CHECK(root != NULL);
	for (uint32_t i = 0; i < sn; i++)
		root[i] = i;
	for (uint32_t t = 0; t < snt; t++)
		for (int j = 1; j < 3; j++) {
			uint32_t a = st[3 * t], b = st[3 * t + j];
			while (root[a] != a)
				a = root[a] = root[root[a]];
			while (root[b] != b)
				b = root[b] = root[root[b]];
			if (a != b)
				root[a < b ? b : a] = a < b ? a : b;
		}
	uint32_t top = 0;
	for (uint32_t i = 0; i < sn; i++) {
		while (root[root[i]] != root[i])
			root[i] = root[root[i]];
		if (sp[3 * i + 1] > sp[3 * top + 1])
			top = i;
	}
	const uint32_t shirt = root[root[top]];
	/* Area-weighted normals, oriented away from the body's axis. */
	float *nrm = calloc(3 * (size_t)sn, sizeof *nrm), *jp = malloc(3 * (size_t)sn * sizeof *jp);
	CHECK(nrm && jp);
	double cx = 0, cz = 0;
	for (uint32_t i = 0; i < bn; i++)
		cx += bp[3 * i], cz += bp[3 * i + 2];
	cx /= bn, cz /= bn;
	for (uint32_t t = 0; t < snt; t++) {
		const uint32_t *v = &st[3 * t];
		float e1[3], e2[3];
		for (int k = 0; k < 3; k++) {
			e1[k] = sp[3 * v[1] + k] - sp[3 * v[0] + k];
			e2[k] = sp[3 * v[2] + k] - sp[3 * v[0] + k];
		}
		float c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
			      e1[0] * e2[1] - e1[1] * e2[0]};
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 3; k++)
				nrm[3 * v[j] + k] += c[k];
	}
	double out = 0.0;
	for (uint32_t i = 0; i < sn; i++)
		out += nrm[3 * i] * (sp[3 * i] - cx) + nrm[3 * i + 2] * (sp[3 * i + 2] - cz);
	const float sign = out >= 0.0 ? 1.0f : -1.0f;
	for (uint32_t i = 0; i < sn; i++) {
		float *n = &nrm[3 * i];
		float l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
		for (int k = 0; k < 3; k++)
			jp[3 * i + k] = sp[3 * i + k] + (l > 0.0f ? sign * 0.008f * n[k] / l : 0.0f);
	}
	/* The jacket: the T-shirt's vertices and triangles, renumbered. */
	uint32_t *jmap = malloc((size_t)sn * sizeof *jmap), *jt = malloc(3 * (size_t)snt * sizeof *jt);
	float *jv = malloc(3 * (size_t)sn * sizeof *jv);
	CHECK(jmap && jt && jv);
	uint32_t jn = 0, jnt = 0;
	for (uint32_t i = 0; i < sn; i++) {
		jmap[i] = UINT32_MAX;
		if (root[i] == shirt) {
			memcpy(&jv[3 * jn], &jp[3 * i], 3 * sizeof *jv);
			jmap[i] = jn++;
		}
	}
	for (uint32_t t = 0; t < snt; t++)
		if (jmap[st[3 * t]] != UINT32_MAX) {
			for (int k = 0; k < 3; k++)
				jt[3 * jnt + k] = jmap[st[3 * t + k]];
			jnt++;
		}
	two m = {0};
	CHECK(two_join(&m, sp, sn, st, snt, jv, jn, jt, jnt));
	uint64_t start = cross_pairs(&m, m.pos);
	drape_sim_object obj[2] = {{0, sn, 1u, 0xffffffffu}, {sn, jn, 1u, 0xffffffffu}};
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = m.pos;
	d.vertex_count = m.nv;
	d.triangles = m.tri;
	d.triangle_count = m.nt;
	d.params.fps = 24;
	d.params.substeps = 8;
	d.params.iterations = 20;
	d.params.shear = 0.9f;
	d.params.bend = 0.1f;
	d.params.thickness = 0.003f;
	d.params.self_collision = 1;
	d.objects = obj;
	d.object_count = 2;
	drape_sim *sim = NULL;
	drape_error err;
	CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = bp;
	cd.vertex_count = bn;
	cd.triangles = bt;
	cd.triangle_count = bnt;
	cd.friction = 0.5f;
	cd.static_friction = 0.7f;
	cd.voxel_size = 0.005f;
	CHECKF(drape_sim_add_collider(sim, &cd, NULL, &err) == DRAPE_OK, "%s", err.message);
	float *x = malloc(3 * (size_t)m.nv * sizeof *x);
	CHECK(x != NULL);
	uint64_t worst = 0;
	int worst_frame = 0;
	const int frames = LAYERS_SANITIZED ? 8 : 24;
	for (int f = 1; f <= frames; f++) {
		CHECKF(drape_sim_step(sim, NULL, &err) == DRAPE_OK, "frame %d: %s", f, err.message);
		drape_sim_get_positions(sim, x);
		uint64_t c = cross_pairs(&m, x);
		if (c > worst)
			worst = c, worst_frame = f;
	}
	drape_sim_destroy(sim);
	printf("  T-shirt and trousers (%u vertices) under the T-shirt offset 8 mm (%u vertices) on "
	       "the static body: %llu crossing pairs at the start, at most %llu in any of %d frames\n",
	       sn, jn, (unsigned long long)start, (unsigned long long)worst, frames);
	CHECKF(start == 0, "the layers cross at the start: %llu pairs", (unsigned long long)start);
	CHECKF(worst == 0, "%llu crossing pairs between the layers at frame %d",
	       (unsigned long long)worst, worst_frame);
	free(x);
	free(nrm);
	free(jp);
	free(root);
	free(jmap);
	free(jt);
	free(jv);
	free(bp), free(bt), free(sp), free(st);
	two_free(&m);
}

static void test_bad_objects_refused(void)
{
	grid a = {0}, b = {0};
	const float oa[3] = {0, 0, 0}, ob[3] = {0, 1, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	two m = {0};
	CHECK(grid_make(&a, 3, 3, oa, u, v) && grid_make(&b, 3, 3, ob, u, v));
	CHECK(two_join(&m, a.pos, a.nv, a.tri, a.nt, b.pos, b.nv, b.tri, b.nt));
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = m.pos;
	d.vertex_count = m.nv;
	d.triangles = m.tri;
	d.triangle_count = m.nt;
	drape_sim *sim = NULL;
	drape_error err;
	const struct {
		drape_sim_object o[2];
		const char *field;
	} bad[] = {
		{{{0, 9, 1, ~0u}, {10, 8, 1, ~0u}}, "objects[1].first_vertex"},
		{{{0, 9, 1, ~0u}, {9, 0, 1, ~0u}}, "objects[1].vertex_count: 0"},
		{{{0, 9, 1, ~0u}, {9, 10, 1, ~0u}}, "objects[1].vertex_count: 10 runs past"},
		{{{0, 8, 1, ~0u}, {8, 10, 1, ~0u}}, "triangles["},
		{{{0, 9, 1, ~0u}, {9, 8, 1, ~0u}}, "objects: cover 17"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		d.objects = bad[i].o;
		d.object_count = 2;
		sim = NULL;
		CHECKF(drape_sim_create(&d, &sim, &err) != DRAPE_OK && sim == NULL, "case %zu accepted", i);
		CHECKF(strstr(err.message, bad[i].field) != NULL, "case %zu: %s", i, err.message);
	}
	d.objects = NULL;
	d.object_count = 2;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "objects: NULL") != NULL, "%s", err.message);
	drape_sim_object ok[2] = {{0, 9, 1, ~0u}, {9, 9, 1, ~0u}};
	d.objects = ok;
	CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
	drape_sim_destroy(sim);
	grid_free(&a);
	grid_free(&b);
	two_free(&m);
}

static const check_test tests[] = {
	CHECK_TEST(test_sheets_layered),
	CHECK_TEST(test_sheets_layers_off),
	CHECK_TEST(test_layers_deterministic),
	CHECK_TEST(test_tshirt_jacket),
	CHECK_TEST(test_bad_objects_refused),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
