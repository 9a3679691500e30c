/*
 * Unit tests of the collider module on its own: analytic shapes, OpenVDB mesh
 * fields, validation, keyframed motion and the contact response. No solver
 * step is involved; where motion matters the tests integrate a point by hand.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drape/sim.h"
#include "server/sim/collider.h"
#include "server/sim/shapes.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"

#define PI 3.14159265358979323846

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* A small deterministic generator so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* A uniformly random unit vector. */
static sim_v3 rnd_dir(void)
{
	double z = 2 * rnd() - 1, a = 2 * PI * rnd(), s = sqrt(1 - z * z);
	return v3((float)(s * cos(a)), (float)(s * sin(a)), (float)z);
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* ---- Test meshes ------------------------------------------------------------ */

/* A UV sphere wound outwards: two poles, `rings` - 1 rings of `seg` vertices. */
static mesh uv_sphere(float radius, uint32_t seg, uint32_t rings)
{
	mesh m;
	m.nv = 2 + (rings - 1) * seg;
	m.nt = 2 * seg * (rings - 1);
	m.v = malloc(m.nv * 3 * sizeof(float));
	m.t = malloc(m.nt * 3 * sizeof(uint32_t));
	uint32_t k = 0;
	m.v[k++] = 0, m.v[k++] = radius, m.v[k++] = 0;
	for (uint32_t r = 1; r < rings; r++) {
		double th = PI * r / rings;
		for (uint32_t s = 0; s < seg; s++) {
			double ph = 2 * PI * s / seg;
			m.v[k++] = (float)(radius * sin(th) * cos(ph));
			m.v[k++] = (float)(radius * cos(th));
			m.v[k++] = (float)(-radius * sin(th) * sin(ph));
		}
	}
	m.v[k++] = 0, m.v[k++] = -radius, m.v[k++] = 0;
	uint32_t south = m.nv - 1, *t = m.t;
#define RING(r, s) (1 + ((r) - 1) * seg + ((s) % seg))
	for (uint32_t s = 0; s < seg; s++)
		*t++ = 0, *t++ = RING(1, s), *t++ = RING(1, s + 1);
	for (uint32_t r = 1; r + 1 < rings; r++)
		for (uint32_t s = 0; s < seg; s++) {
			*t++ = RING(r, s), *t++ = RING(r + 1, s), *t++ = RING(r + 1, s + 1);
			*t++ = RING(r, s), *t++ = RING(r + 1, s + 1), *t++ = RING(r, s + 1);
		}
	for (uint32_t s = 0; s < seg; s++)
		*t++ = south, *t++ = RING(rings - 1, s + 1), *t++ = RING(rings - 1, s);
#undef RING
	return m;
}

/* ---- Analytic shapes ---------------------------------------------------------- */

/* Checks the gradient is unit and agrees with central differences of the
 * distance at a point where the distance is smooth. */
#define CHECK_GRAD(call_d, q, g)                                                       \
	do {                                                                           \
		CHECK_NEAR(v3_len(g), 1.0, 1e-5);                                       \
		sim_v3 gg_;                                                             \
		const float h_ = 1e-3f;                                                 \
		float fd_[3];                                                           \
		for (int k_ = 0; k_ < 3; k_++) {                                        \
			sim_v3 a_ = q, b_ = q;                                          \
			((float *)&a_)[k_] += h_;                                       \
			((float *)&b_)[k_] -= h_;                                       \
			fd_[k_] = (call_d(a_, &gg_) - call_d(b_, &gg_)) / (2 * h_);     \
		}                                                                       \
		CHECK_NEAR(fd_[0], g.x, 2e-3);                                          \
		CHECK_NEAR(fd_[1], g.y, 2e-3);                                          \
		CHECK_NEAR(fd_[2], g.z, 2e-3);                                          \
	} while (0)

static float plane_d(sim_v3 q, sim_v3 *g)
{
	float s = 1.0f / sqrtf(2.0f);
	return sim_shape_plane(q, v3(0, 1, 0), v3(0, s, s), g);
}
static float sphere_d(sim_v3 q, sim_v3 *g) { return sim_shape_sphere(q, v3(1, 2, 3), 0.5f, g); }
static float box_d(sim_v3 q, sim_v3 *g) { return sim_shape_box(q, v3(1, 0, 0), v3(1, 2, 3), g); }
static float capsule_d(sim_v3 q, sim_v3 *g)
{
	return sim_shape_capsule(q, v3(0, 0, 0), v3(0, 2, 0), 0.25f, g);
}

static void test_shape_plane(void)
{
	sim_v3 g, q;
	float s = 1.0f / sqrtf(2.0f);
	CHECK_NEAR(plane_d(v3(5, 1, 0), &g), 0.0, 1e-6);
	CHECK_NEAR(g.y, s, 1e-6);
	CHECK_NEAR(g.z, s, 1e-6);
	CHECK_NEAR(plane_d(v3(0, 2, 1), &g), 2 * s, 1e-6);
	CHECK_NEAR(plane_d(v3(3, 0, -1), &g), -2 * s, 1e-6);
	q = v3(0.3f, -0.2f, 0.7f);
	plane_d(q, &g);
	CHECK_GRAD(plane_d, q, g);
}

static void test_shape_sphere(void)
{
	sim_v3 g;
	CHECK_NEAR(sphere_d(v3(1, 2, 4), &g), 0.5, 1e-6);
	CHECK_NEAR(g.z, 1.0, 1e-6);
	CHECK_NEAR(sphere_d(v3(1, 1.8f, 3), &g), -0.3, 1e-6);
	CHECK_NEAR(g.y, -1.0, 1e-6);
	CHECK_NEAR(sphere_d(v3(1, 2, 3), &g), -0.5, 1e-6);
	CHECK_NEAR(v3_len(g), 1.0, 1e-6);
	sim_v3 q = v3(1.3f, 2.2f, 2.6f);
	sphere_d(q, &g);
	CHECK_GRAD(sphere_d, q, g);
	q = v3(1.1f, 2.1f, 3.05f);
	sphere_d(q, &g);
	CHECK_GRAD(sphere_d, q, g);
}

static void test_shape_box(void)
{
	sim_v3 g;
	/* Box x in [0, 2], y in [-2, 2], z in [-3, 3]. */
	CHECK_NEAR(box_d(v3(3, 0, 0), &g), 1.0, 1e-6); /* face */
	CHECK_NEAR(g.x, 1.0, 1e-6);
	CHECK_NEAR(box_d(v3(3, 3, 0), &g), sqrt(2.0), 1e-6); /* edge */
	CHECK_NEAR(g.x, 1 / sqrt(2.0), 1e-6);
	CHECK_NEAR(g.y, 1 / sqrt(2.0), 1e-6);
	CHECK_NEAR(box_d(v3(-1, -4, 5), &g), 3.0, 1e-6); /* corner: (1, 2, 2) */
	CHECK_NEAR(g.x, -1.0 / 3, 1e-6);
	CHECK_NEAR(g.y, -2.0 / 3, 1e-6);
	CHECK_NEAR(g.z, 2.0 / 3, 1e-6);
	/* Inside: the nearest face wins, exactly. */
	CHECK_NEAR(box_d(v3(1.8f, 0, 0), &g), -0.2, 1e-6);
	CHECK_NEAR(g.x, 1.0, 1e-6);
	CHECK_NEAR(box_d(v3(1, -1.9f, 0.5f), &g), -0.1, 1e-6);
	CHECK_NEAR(g.y, -1.0, 1e-6);
	CHECK_NEAR(box_d(v3(1, 0, -2.5f), &g), -0.5, 1e-6);
	CHECK_NEAR(g.z, -1.0, 1e-6);
	CHECK_NEAR(box_d(v3(1, 0, 0), &g), -1.0, 1e-6); /* centre: x face at 1 */
	CHECK_NEAR(v3_len(g), 1.0, 1e-6);
	sim_v3 qs[] = {v3(2.5f, 0.3f, 0.2f), v3(2.4f, 2.7f, -3.3f), v3(0.3f, 1.5f, 0.1f)};
	for (int i = 0; i < 3; i++) {
		box_d(qs[i], &g);
		CHECK_GRAD(box_d, qs[i], g);
	}
}

static void test_shape_capsule(void)
{
	sim_v3 g;
	CHECK_NEAR(capsule_d(v3(1, 1, 0), &g), 0.75, 1e-6); /* side */
	CHECK_NEAR(g.x, 1.0, 1e-6);
	CHECK_NEAR(capsule_d(v3(0, 3, 0), &g), 0.75, 1e-6); /* top cap */
	CHECK_NEAR(g.y, 1.0, 1e-6);
	CHECK_NEAR(capsule_d(v3(0, -0.1f, 0), &g), -0.15, 1e-6); /* inside bottom cap */
	CHECK_NEAR(g.y, -1.0, 1e-6);
	CHECK_NEAR(capsule_d(v3(0, 0, 0.2f), &g), -0.05, 1e-6);
	CHECK_NEAR(g.z, 1.0, 1e-6);
	CHECK_NEAR(capsule_d(v3(0, 1, 0), &g), -0.25, 1e-6); /* on the axis */
	CHECK_NEAR(v3_len(g), 1.0, 1e-6);
	CHECK_NEAR(g.y, 0.0, 1e-6); /* perpendicular to the axis */
	sim_v3 q = v3(0.2f, 2.3f, -0.3f);
	capsule_d(q, &g);
	CHECK_GRAD(capsule_d, q, g);
	q = v3(-0.1f, 0.7f, 0.05f);
	capsule_d(q, &g);
	CHECK_GRAD(capsule_d, q, g);
}

/* ---- OpenVDB fields --------------------------------------------------------- */

/* Random points within `shell` of a sphere of radius R centred at the origin:
 * the field's distance is within `tol` of the exact one and the gradient
 * within `deg` degrees of the radial direction. */
static int sphere_field_agrees(const drape_sdf *sdf, float R, float shell, float tol, float deg,
			       int only_sign, char *why, size_t why_n)
{
	enum { N = 2000 };
	static float pts[N * 3], d[N], g[N * 3];
	static float exact[N];
	int off = 0;
	for (int i = 0; i < N; i++) {
		sim_v3 u = rnd_dir();
		float r = R + (float)(2 * rnd() - 1) * shell;
		pts[i * 3] = u.x * r, pts[i * 3 + 1] = u.y * r, pts[i * 3 + 2] = u.z * r;
		exact[i] = r - R;
	}
	drape_sdf_sample(sdf, pts, N, d, g);
	for (int i = 0; i < N; i++) {
		if (only_sign) {
			/* Points in the outer or inner half of the shell must
			 * have the right sign whatever the mesh's defects. */
			if (fabsf(exact[i]) > 0.3f * shell && (d[i] > 0) != (exact[i] > 0)) {
				snprintf(why, why_n, "point %d at exact distance %g reads %g", i,
					 (double)exact[i], (double)d[i]);
				return 0;
			}
			continue;
		}
		if (fabsf(d[i] - exact[i]) > tol) {
			snprintf(why, why_n, "point %d: field %g, exact %g, tolerance %g", i, (double)d[i],
				 (double)exact[i], (double)tol);
			return 0;
		}
		sim_v3 gv = v3(g[i * 3], g[i * 3 + 1], g[i * 3 + 2]);
		sim_v3 u = v3(pts[i * 3], pts[i * 3 + 1], pts[i * 3 + 2]);
		float c = v3_dot(gv, u) / (v3_len(gv) * v3_len(u));
		float angle = acosf(fminf(c, 1.0f)) * 180 / (float)PI;
		/* OpenVDB's interior values near a vertex where many thin
		 * triangles meet (the UV sphere's poles) are off by a fraction
		 * of a voxel, which tilts the gradient of a few points; so
		 * most points must be within `deg`, and none grossly off. */
		if (angle > deg)
			off++;
		if (!(angle <= 45) || off > N / 100) {
			snprintf(why, why_n,
				 "point %d (%g %g %g, exact distance %g): gradient %g degrees off radial "
				 "(|g| = %g); %d points over %g degrees",
				 i, (double)pts[i * 3], (double)pts[i * 3 + 1], (double)pts[i * 3 + 2],
				 (double)exact[i], (double)angle, (double)v3_len(gv), off, (double)deg);
			return 0;
		}
	}
	return 1;
}

static void test_vdb_sphere_matches_analytic(void)
{
	mesh m = uv_sphere(0.5f, 96, 48);
	drape_sdf *sdf = NULL;
	drape_error err;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0.05f, 0, &sdf, &err));
	mesh_free(&m);
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	CHECK_NEAR(info.voxel_size, 0.01, 1e-7);
	CHECK(info.band >= 0.05f - 1e-6f && info.band < 0.05f + 0.011f);
	CHECK(info.voxels > 1000);
	CHECK(info.bytes > 0);
	CHECK_NEAR(info.bbox_min[0], -0.55, 0.02);
	CHECK_NEAR(info.bbox_max[1], 0.55, 0.02);
	char why[256];
	int ok = sphere_field_agrees(sdf, 0.5f, info.band - 1.5f * info.voxel_size, info.voxel_size,
				     3.0f, 0, why, sizeof why);
	drape_sdf_release(sdf);
	CHECKF(ok, "%s", why);
}

/* A field written by drape_sdf_serialize and read back is the same field:
 * every sample (distance and gradient) is bit-identical, it still agrees
 * with the analytic sphere, and damaged bytes are refused with ESDF. */
static void test_vdb_serialize_round_trip(void)
{
	mesh m = uv_sphere(0.5f, 96, 48);
	drape_sdf *sdf = NULL, *back = NULL;
	drape_error err;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0.05f, 0, &sdf, &err));
	mesh_free(&m);
	void *data = NULL;
	size_t size = 0;
	CHECK_OK(drape_sdf_serialize(sdf, &data, &size, &err));
	CHECK(data != NULL && size > 64);
	CHECK_OK(drape_sdf_deserialize(data, size, &back, &err));
	drape_sdf_info a, b;
	drape_sdf_get_info(sdf, &a);
	drape_sdf_get_info(back, &b);
	CHECK(a.voxel_size == b.voxel_size && a.band == b.band && a.voxels == b.voxels);
	CHECK(memcmp(a.bbox_min, b.bbox_min, sizeof a.bbox_min) == 0);
	CHECK(memcmp(a.bbox_max, b.bbox_max, sizeof a.bbox_max) == 0);
	/* Points on a lattice through the interior, the band and free space,
	 * offset so they fall between voxel centres. */
	enum { N = 40 * 40 * 40 };
	float *pts = malloc(sizeof(float) * 3 * N);
	float *d1 = malloc(sizeof(float) * N), *d2 = malloc(sizeof(float) * N);
	float *g1 = malloc(sizeof(float) * 3 * N), *g2 = malloc(sizeof(float) * 3 * N);
	CHECK(pts && d1 && d2 && g1 && g2);
	for (int i = 0; i < N; i++) {
		pts[i * 3] = -0.7f + 1.4f * (float)(i % 40) / 39.0f + 0.00137f;
		pts[i * 3 + 1] = -0.7f + 1.4f * (float)(i / 40 % 40) / 39.0f + 0.00291f;
		pts[i * 3 + 2] = -0.7f + 1.4f * (float)(i / 1600) / 39.0f + 0.00053f;
	}
	drape_sdf_sample(sdf, pts, N, d1, g1);
	drape_sdf_sample(back, pts, N, d2, g2);
	CHECK(memcmp(d1, d2, sizeof(float) * N) == 0);
	CHECK(memcmp(g1, g2, sizeof(float) * 3 * N) == 0);
	int inside = 0;
	for (int i = 0; i < N; i++)
		inside += d2[i] < 0;
	CHECKF(inside > N / 20, "%d of %d lattice points inside", inside, N);
	char why[256];
	int ok = sphere_field_agrees(back, 0.5f, b.band - 1.5f * b.voxel_size, b.voxel_size, 3.0f, 0, why,
				     sizeof why);
	CHECKF(ok, "%s", why);
	drape_sdf_release(back);

	/* Truncated anywhere, one byte flipped in the header or the payload,
	 * or a byte too many: refused, and *out left alone. */
	unsigned char *bytes = data;
	const size_t cuts[] = {0, 7, 12, 40, 79, size / 2, size - 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		drape_sdf *untouched = (drape_sdf *)&err;
		CHECKF(drape_sdf_deserialize(bytes, cuts[i], &untouched, &err) == DRAPE_ESDF,
		       "cut at %zu of %zu", cuts[i], size);
		CHECK(untouched == (drape_sdf *)&err);
	}
	const size_t flips[] = {0, 9, size - 1, size / 2, size / 3};
	for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
		bytes[flips[i]] ^= 0x40;
		back = NULL;
		CHECKF(drape_sdf_deserialize(bytes, size, &back, &err) == DRAPE_ESDF, "byte %zu flipped",
		       flips[i]);
		CHECK(back == NULL);
		bytes[flips[i]] ^= 0x40;
	}
	unsigned char *longer = malloc(size + 1);
	CHECK(longer != NULL);
	memcpy(longer, bytes, size);
	longer[size] = 0;
	CHECK(drape_sdf_deserialize(longer, size + 1, &back, &err) == DRAPE_ESDF);
	CHECK(strstr(err.message, "truncated or padded") != NULL);
	free(longer);
	/* The bytes are intact again: they still load. */
	CHECK_OK(drape_sdf_deserialize(bytes, size, &back, &err));
	drape_sdf_release(back);
	CHECK(drape_sdf_serialize(NULL, &data, &size, &err) == DRAPE_EINVAL);
	free(data);
	free(pts);
	free(d1);
	free(d2);
	free(g1);
	free(g2);
	drape_sdf_release(sdf);
}

static void test_vdb_outside_band_is_free_space(void)
{
	mesh m = uv_sphere(0.5f, 48, 24);
	drape_sdf *sdf = NULL;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.02f, 0, 0, &sdf, NULL));
	mesh_free(&m);
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	CHECK_NEAR(info.band, 3 * 0.02, 1e-6); /* default band: 3 voxels */
	float pts[] = {3, 0, 0, 0.5f + 0.2f, 0, 0, -40, 25, 1e6f, NAN, 0, 0, 0, 0, 0};
	float d[5], g[15];
	drape_sdf_sample(sdf, pts, 5, d, g);
	for (int i = 0; i < 4; i++) {
		CHECKF(d[i] == info.band, "point %d reads %g, not +band %g", i, (double)d[i],
		       (double)info.band);
		CHECK(g[i * 3] == 0 && g[i * 3 + 1] == 0 && g[i * 3 + 2] == 0);
	}
	/* The interior is filled: the centre, far deeper than the band,
	 * reads its true depth, and a point halfway in knows the way out. */
	CHECK_NEAR(d[4], -0.5, 0.02);
	float half[3] = {0.25f, 0, 0}, dh, gh[3];
	drape_sdf_sample(sdf, half, 1, &dh, gh);
	CHECK_NEAR(dh, -0.25, 0.02);
	CHECKF(gh[0] > 0.9f * sqrtf(gh[0] * gh[0] + gh[1] * gh[1] + gh[2] * gh[2]),
	       "gradient at (0.25, 0, 0) is (%g, %g, %g), not outward", (double)gh[0], (double)gh[1],
	       (double)gh[2]);
	/* grad may be NULL. */
	drape_sdf_sample(sdf, pts, 2, d, NULL);
	CHECK(d[0] == info.band);
	drape_sdf_release(sdf);
}

static void test_vdb_open_mesh_keeps_inside(void)
{
	mesh m = uv_sphere(0.5f, 64, 32);
	/* Remove scattered single triangles and one whole quad (two
	 * triangles): each leaves a hole several voxels wide. */
	uint32_t kept = 0, removed = 0;
	for (uint32_t i = 0; i < m.nt; i++) {
		int drop = (i % 97 == 5) || i == 1000 || i == 1001;
		if (drop) {
			removed++;
			continue;
		}
		memmove(&m.t[kept * 3], &m.t[i * 3], 3 * sizeof(uint32_t));
		kept++;
	}
	m.nt = kept;
	CHECK(removed > 10);
	drape_sdf *sdf = NULL;
	drape_error err;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0.05f, 0, &sdf, &err));
	mesh_free(&m);
	char why[256];
	int ok = sphere_field_agrees(sdf, 0.5f, 0.04f, 0, 0, 1, why, sizeof why);
	float centre[3] = {0, 0, 0}, d;
	drape_sdf_sample(sdf, centre, 1, &d, NULL);
	drape_sdf_release(sdf);
	CHECKF(ok, "%s", why);
	CHECKF(d < 0, "centre reads %g", (double)d);
}

static void test_vdb_inconsistent_winding(void)
{
	mesh m = uv_sphere(0.5f, 96, 48);
	/* Flip every third triangle. */
	for (uint32_t i = 0; i < m.nt; i += 3) {
		uint32_t s = m.t[i * 3 + 1];
		m.t[i * 3 + 1] = m.t[i * 3 + 2];
		m.t[i * 3 + 2] = s;
	}
	drape_sdf *sdf = NULL;
	drape_error err;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0.05f, 0, &sdf, &err));
	mesh_free(&m);
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	char why[256];
	int ok = sphere_field_agrees(sdf, 0.5f, info.band - 1.5f * info.voxel_size, info.voxel_size,
				     3.0f, 0, why, sizeof why);
	drape_sdf_release(sdf);
	CHECKF(ok, "%s", why);
}

/* A seam of split vertices (same positions, different indices, as exporters
 * write along UV seams) is not a hole: it must not be capped, which would put
 * a surface through the inside. */
static void test_vdb_split_seam_is_not_a_hole(void)
{
	mesh m = uv_sphere(0.5f, 64, 32);
	const uint32_t seg = 64, rings = 32;
	/* Append a copy of the seam column (s = 0) and make the last quad
	 * column use it, as a UV-seam export would. */
	uint32_t nv = m.nv + (rings - 1);
	m.v = realloc(m.v, nv * 3 * sizeof(float));
	for (uint32_t r = 1; r < rings; r++)
		memcpy(&m.v[(m.nv + r - 1) * 3], &m.v[(1 + (r - 1) * seg) * 3], 3 * sizeof(float));
	for (uint32_t i = 0; i < m.nt * 3; i++) {
		uint32_t v = m.t[i];
		if (v == 0 || v >= m.nv - 1 || (v - 1) % seg != 0)
			continue;
		/* Only corners of triangles in the last column (s = seg - 1). */
		uint32_t t = i / 3;
		int last = 0;
		for (int k = 0; k < 3; k++) {
			uint32_t w = m.t[t * 3 + k];
			if (w != 0 && w < m.nv - 1 && (w - 1) % seg == seg - 1)
				last = 1;
		}
		if (last)
			m.t[i] = m.nv + (v - 1) / seg;
	}
	m.nv = nv;
	drape_sdf *sdf = NULL;
	drape_error err;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0.03f, 0, &sdf, &err));
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	/* A hole on the seam: the last column's and the first column's quads
	 * in ring 10 are removed. The hole's boundary runs through split
	 * vertices, so it is one loop only once they are welded. */
	drape_sdf *holed = NULL;
	uint32_t q0 = seg + 2 * (9 * seg), q1 = q0 + 2 * (seg - 1);
	memmove(&m.t[q1 * 3], &m.t[(q1 + 2) * 3], (m.nt - q1 - 2) * 3 * sizeof(uint32_t));
	memmove(&m.t[q0 * 3], &m.t[(q0 + 2) * 3], (m.nt - q0 - 4) * 3 * sizeof(uint32_t));
	m.nt -= 4;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0.03f, 0, &holed, &err));
	mesh_free(&m);
	char why[256];
	int ok = sphere_field_agrees(holed, 0.5f, 0.025f, 0, 0, 1, why, sizeof why);
	drape_sdf_release(holed);
	CHECKF(ok, "%s", why);
	/* Points just off the seam's half-plane (z = 0, x > 0), deep inside,
	 * between the seam and its centroid, where a wrong cap would lie. */
	float pts[] = {0.41f, 0, 0.003f, 0.28f, 0.2f, -0.003f, 0.28f, -0.2f, 0.003f}, d[3];
	drape_sdf_sample(sdf, pts, 3, d, NULL);
	for (int i = 0; i < 3; i++) {
		double r = sqrt((double)pts[3 * i] * pts[3 * i] + (double)pts[3 * i + 1] * pts[3 * i + 1] +
				(double)pts[3 * i + 2] * pts[3 * i + 2]);
		CHECKF(fabs(d[i] - (r - 0.5)) < 0.01, "point %d reads %g, not its depth %g (band %g)",
		       i, (double)d[i], r - 0.5, (double)info.band);
	}
	drape_sdf_release(sdf);
}

static void test_vdb_voxel_cap(void)
{
	/* A 2 km sphere at 1 mm voxels: 8e18 voxels. */
	mesh m = uv_sphere(1000.0f, 16, 8);
	drape_sdf *sdf = NULL;
	drape_error err;
	drape_error_clear(&err);
	double t0 = now_ms();
	drape_err rc = drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.001f, 0, 0, &sdf, &err);
	double ms = now_ms() - t0;
	CHECK(rc == DRAPE_ELIMIT);
	CHECK(err.code == DRAPE_ELIMIT);
	CHECKF(contains(err.message, "max_voxels") && contains(err.message, "64000000"), "message: %s",
	       err.message);
	CHECK(sdf == NULL);
	CHECKF(ms < 100, "rejecting took %g ms", ms);
	/* An explicit small cap, on a small mesh. */
	mesh_free(&m);
	m = uv_sphere(0.5f, 16, 8);
	rc = drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.01f, 0, 1000, &sdf, &err);
	CHECK(rc == DRAPE_ELIMIT);
	CHECKF(contains(err.message, "1000"), "message: %s", err.message);
	CHECK(sdf == NULL);
	/* With an automatic voxel size the cap makes the voxels coarser. */
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0, 0, 100000, &sdf, &err));
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	CHECKF(info.voxel_size > 1.0f / 256, "voxel %g", (double)info.voxel_size);
	CHECK(info.voxels <= 100000);
	drape_sdf_release(sdf);
	mesh_free(&m);
}

static void test_vdb_bad_input(void)
{
	mesh m = uv_sphere(0.5f, 16, 8);
	drape_sdf *sdf = NULL;
	drape_error err;
	CHECK(drape_sdf_build(m.v, 0, m.t, m.nt, 0, 0, 0, &sdf, &err) == DRAPE_EINVAL);
	CHECK(drape_sdf_build(m.v, m.nv, m.t, 0, 0, 0, 0, &sdf, &err) == DRAPE_EINVAL);
	m.t[7] = m.nv;
	CHECK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0, 0, 0, &sdf, &err) == DRAPE_ERANGE);
	CHECKF(contains(err.message, "triangles[2][1]"), "message: %s", err.message);
	m.t[7] = 0;
	m.v[4] = NAN;
	CHECK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0, 0, 0, &sdf, &err) == DRAPE_ENONFINITE);
	CHECKF(contains(err.message, "vertices[1][1]"), "message: %s", err.message);
	m.v[4] = 0;
	CHECK(drape_sdf_build(m.v, m.nv, m.t, m.nt, -1, 0, 0, &sdf, &err) == DRAPE_EINVAL);
	/* All vertices in one point. */
	float same[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	uint32_t tri[3] = {0, 1, 2};
	CHECK(drape_sdf_build(same, 3, tri, 1, 0, 0, 0, &sdf, &err) == DRAPE_EINVAL);
	CHECK(sdf == NULL);
	mesh_free(&m);
}

typedef struct sample_job {
	const drape_sdf *sdf;
	const float *pts;
	uint32_t n;
	float *d, *g;
} sample_job;

static void *sample_thread(void *arg)
{
	sample_job *j = arg;
	for (int rep = 0; rep < 20; rep++)
		drape_sdf_sample(j->sdf, j->pts, j->n, j->d, j->g);
	return NULL;
}

static void test_vdb_threads_and_refcount(void)
{
	enum { N = 4096, T = 4 };
	mesh m = uv_sphere(0.5f, 48, 24);
	drape_sdf *sdf = NULL;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.02f, 0.1f, 0, &sdf, NULL));
	mesh_free(&m);
	static float pts[N * 3], ref_d[N], ref_g[N * 3], d[T][N], g[T][N * 3];
	for (int i = 0; i < N * 3; i++)
		pts[i] = (float)(rnd() * 1.4 - 0.7);
	drape_sdf_sample(sdf, pts, N, ref_d, ref_g);
	pthread_t th[T];
	sample_job jobs[T];
	for (int t = 0; t < T; t++) {
		jobs[t] = (sample_job){sdf, pts, N, d[t], g[t]};
		pthread_create(&th[t], NULL, sample_thread, &jobs[t]);
	}
	for (int t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < T; t++) {
		CHECK(memcmp(d[t], ref_d, sizeof ref_d) == 0);
		CHECK(memcmp(g[t], ref_g, sizeof ref_g) == 0);
	}
	/* Two holders: the field lives until the last release (ASan checks). */
	drape_sdf_retain(sdf);
	drape_sdf_release(sdf);
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	CHECK(info.voxels > 0);
	drape_sdf_release(sdf);
}

/* ---- Collider sets: validation ---------------------------------------------- */

static drape_collider_desc sphere_desc(float r)
{
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_SPHERE;
	d.radius = r;
	return d;
}

static void test_desc_validation(void)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_error err;
	uint32_t index = 77;
	drape_collider_desc d = sphere_desc(1);
	CHECK_OK(sim_colliders_add(&set, &d, &index, &err));
	CHECK(index == 0 && set.count == 1);

	mesh m = uv_sphere(0.5f, 16, 8);
	drape_keyframe unsorted[2] = {{5, {0, 0, 0}, {0, 0, 0}}, {2, {1, 0, 0}, {0, 0, 0}}};
	struct {
		const char *what;
		drape_collider_desc d;
		drape_err code;
		const char *field;
	} bad[16];
	int nb = 0;
#define BAD(code_, field_)                                                              \
	bad[nb].what = field_, bad[nb].code = code_, bad[nb].field = field_, bad[nb].d = d, nb++
	d = sphere_desc(1), d.shape = (drape_shape)9, BAD(DRAPE_EINVAL, "colliders.shape");
	d = sphere_desc(1), d.center[1] = NAN, BAD(DRAPE_ENONFINITE, "colliders.sphere.center[1]");
	d = sphere_desc(-1), BAD(DRAPE_EINVAL, "colliders.sphere.radius: -1 is not > 0");
	d = sphere_desc(1), d.shape = DRAPE_SHAPE_BOX, d.half_extents[0] = 1, d.half_extents[1] = 1,
	BAD(DRAPE_EINVAL, "colliders.box.half_extents[2]");
	d = sphere_desc(1), d.shape = DRAPE_SHAPE_PLANE, d.normal[1] = 0,
	BAD(DRAPE_EINVAL, "colliders.plane.normal");
	d = sphere_desc(1), d.shape = DRAPE_SHAPE_CAPSULE, d.radius = 0,
	BAD(DRAPE_EINVAL, "colliders.capsule.radius");
	d = sphere_desc(1), d.shape = DRAPE_SHAPE_MESH, BAD(DRAPE_EINVAL, "colliders.mesh.vertices");
	d = sphere_desc(1), d.shape = DRAPE_SHAPE_MESH, d.vertices = m.v, d.vertex_count = m.nv,
	d.triangles = m.t, d.triangle_count = 0, BAD(DRAPE_EINVAL, "colliders.mesh.triangles");
	d.triangle_count = m.nt, d.vertex_count = 10, BAD(DRAPE_ERANGE, "colliders.mesh.triangles[");
	d.vertex_count = m.nv, d.voxel_size = 1e-5f, BAD(DRAPE_ELIMIT, "max_voxels");
	d = sphere_desc(1), d.keyframes = unsorted, d.keyframe_count = 2,
	BAD(DRAPE_EINVAL, "colliders.keyframes[1].frame");
	d = sphere_desc(1), d.friction = -0.1f, BAD(DRAPE_EINVAL, "colliders.friction");
	d = sphere_desc(1), d.static_friction = INFINITY, BAD(DRAPE_ENONFINITE, "colliders.static_friction");
	d = sphere_desc(1), d.restitution = 1.5f, BAD(DRAPE_EINVAL, "colliders.restitution");
	d = sphere_desc(1), d.thickness = NAN, BAD(DRAPE_ENONFINITE, "colliders.thickness");
#undef BAD
	for (int i = 0; i < nb; i++) {
		drape_error_clear(&err);
		index = 77;
		drape_err rc = sim_colliders_add(&set, &bad[i].d, &index, &err);
		CHECKF(rc == bad[i].code, "%s: returned %d, message \"%s\"", bad[i].what, (int)rc,
		       err.message);
		CHECKF(contains(err.message, bad[i].field), "%s: message \"%s\"", bad[i].what,
		       err.message);
		CHECK(index == 77 && set.count == 1);
	}
	mesh_free(&m);

	/* Index errors on every per-collider call. */
	CHECK(sim_colliders_remove(&set, 1, &err) == DRAPE_ENOTFOUND);
	CHECK(sim_colliders_set_keyframes(&set, 3, NULL, 0, &err) == DRAPE_ENOTFOUND);
	CHECK(sim_colliders_set_keyframes(&set, 0, unsorted, 2, &err) == DRAPE_EINVAL);
	CHECK(sim_colliders_update_mesh(&set, 0, unsorted[0].translate, 1, &err) == DRAPE_ESTATE);
	CHECK(sim_colliders_set_sdf(&set, 0, NULL, &err) == DRAPE_ESTATE);
	CHECK(set.count == 1);
	CHECK_OK(sim_colliders_remove(&set, 0, &err));
	CHECK(set.count == 0);
	sim_colliders_free(&set);
}

/* ---- Projection and response -------------------------------------------------- */

static void test_project_sphere_to_thickness(void)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_collider_desc d = sphere_desc(0.5f);
	d.center[0] = 1;
	d.thickness = 0.002f;
	d.static_friction = 0, d.friction = 0;
	CHECK_OK(sim_colliders_add(&set, &d, NULL, NULL));
	const float th = 0.01f, r = 0.5f + th + 0.002f;
	sim_vec4 p[4] = {{1.2f, 0.1f, 0, 1}, {1, 0, -0.4f, 1}, {2, 0, 0, 1}, {1.1f, 0, 0, 0}};
	sim_vec4 x[4];
	memcpy(x, p, sizeof p);
	sim_colliders_begin_substep(&set, 0, 0.25f);
	uint32_t contacts = sim_colliders_project(&set, p, x, 4, th);
	CHECK(contacts == 2);
	for (int i = 0; i < 2; i++) {
		sim_v3 rel = v3(p[i].x - 1, p[i].y, p[i].z);
		CHECK_NEAR(v3_len(rel), r, 1e-6);
		/* Pushed straight out: the direction from the centre is kept. */
		sim_v3 was = v3(x[i].x - 1, x[i].y, x[i].z);
		CHECK_NEAR(v3_dot(rel, was) / (v3_len(rel) * v3_len(was)), 1.0, 1e-6);
	}
	CHECK(p[2].x == 2 && p[2].y == 0); /* outside: untouched */
	CHECK(p[3].x == 1.1f);             /* pinned: untouched */
	/* A second iteration finds nothing left to do. */
	sim_vec4 again[4];
	memcpy(again, p, sizeof p);
	sim_colliders_project(&set, again, x, 4, th);
	CHECK_NEAR(again[0].x, p[0].x, 1e-6);
	CHECK_NEAR(again[1].z, p[1].z, 1e-6);
	sim_colliders_free(&set);
}

/* One point on a plane y = 0 that was resting at thickness and is predicted 1 mm
 * sideways and 5 mm down: returns its projected position. */
static sim_v3 slide_on_plane(float stat, float dyn, float rest)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_PLANE;
	d.static_friction = stat, d.friction = dyn, d.restitution = rest;
	sim_colliders_add(&set, &d, NULL, NULL);
	sim_vec4 x = {0, 0.01f, 0, 1}, p = {0.001f, 0.005f, 0, 1};
	sim_colliders_begin_substep(&set, 0, 0.25f);
	sim_colliders_project(&set, &p, &x, 1, 0.01f);
	sim_colliders_free(&set);
	return v3_of4(p);
}

static void test_friction_static_sticks(void)
{
	sim_v3 p = slide_on_plane(0.5f, 0.3f, 0); /* limit 0.5 * 5 mm > 1 mm */
	CHECK_NEAR(p.x, 0.0, 1e-7);
	CHECK_NEAR(p.y, 0.01, 1e-7);
}

static void test_friction_zero_slides(void)
{
	sim_v3 p = slide_on_plane(0, 0, 0);
	CHECK_NEAR(p.x, 0.001, 1e-7);
	CHECK_NEAR(p.y, 0.01, 1e-7);
}

static void test_friction_dynamic(void)
{
	/* Limit 0.1 * 5 mm < 1 mm, so dynamic: removes 0.1 * 5 mm of the 1 mm. */
	sim_v3 p = slide_on_plane(0.1f, 0.1f, 0);
	CHECK_NEAR(p.x, 0.0005, 1e-7);
	CHECK_NEAR(p.y, 0.01, 1e-7);
}

static void test_restitution_scales_normal(void)
{
	sim_v3 p0 = slide_on_plane(0, 0, 0);
	sim_v3 p5 = slide_on_plane(0, 0, 0.5f);
	sim_v3 p1 = slide_on_plane(0, 0, 1.0f);
	CHECK_NEAR(p0.y, 0.01, 1e-7);
	CHECK_NEAR(p5.y, 0.01 + 0.5 * 0.005, 1e-7);
	CHECK_NEAR(p1.y, 0.01 + 0.005, 1e-7);
	CHECK_NEAR(p5.x, 0.001, 1e-7);
}

/* A point dropped on a box top that slides sideways 5 cm over frames 0..10;
 * returns the point's final x after 20 frames of hand-integrated PBD. */
static float ride_box(float friction, float *final_y)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_BOX;
	d.center[1] = -0.5f;
	d.half_extents[0] = d.half_extents[1] = d.half_extents[2] = 0.5f;
	d.friction = friction, d.static_friction = friction;
	drape_keyframe keys[2] = {{0, {0, 0, 0}, {0, 0, 0}}, {10, {0.05f, 0, 0}, {0, 0, 0}}};
	d.keyframes = keys, d.keyframe_count = 2;
	sim_colliders_add(&set, &d, NULL, NULL);
	const int substeps = 4, iters = 10;
	const float dt = 1.0f / (24 * substeps), th = 0.005f;
	sim_vec4 x = {0, th, 0, 1}, p;
	sim_v3 v = v3(0, 0, 0);
	for (int f = 0; f < 20; f++)
		for (int s = 0; s < substeps; s++) {
			sim_colliders_begin_substep(&set, f + (float)s / substeps, f + (float)(s + 1) / substeps);
			v.y -= 9.81f * dt;
			p = (sim_vec4){x.x + dt * v.x, x.y + dt * v.y, x.z + dt * v.z, 1};
			for (int it = 0; it < iters; it++)
				sim_colliders_project(&set, &p, &x, 1, th);
			v = v3_scale(v3_sub(v3_of4(p), v3_of4(x)), 1.0f / dt);
			x = p;
		}
	sim_colliders_free(&set);
	*final_y = x.y;
	return x.x;
}

static void test_moving_box_carries_with_friction(void)
{
	float y;
	float carried = ride_box(0.8f, &y);
	CHECKF(fabsf(carried - 0.05f) < 0.002f, "with friction 0.8 the point moved %g of 0.05",
	       (double)carried);
	CHECK_NEAR(y, 0.005, 0.0015);
	float left = ride_box(0, &y);
	CHECKF(fabsf(left) < 1e-6f, "with friction 0 the point moved %g", (double)left);
	CHECK_NEAR(y, 0.005, 0.0015);
}

static void test_keyframes_interpolate(void)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_collider_desc d = sphere_desc(0.1f);
	CHECK_OK(sim_colliders_add(&set, &d, NULL, NULL));
	drape_keyframe keys[3] = {{2, {0, 0, 0}, {0, 0, 0}},
				  {12, {2, 4, 6}, {0, 0, 90}},
				  {13, {2, 4, 6}, {0, 0, 90}}};
	CHECK_OK(sim_colliders_set_keyframes(&set, 0, keys, 3, NULL));
	float o[3], rest0[3] = {0, 0, 0}, rest1[3] = {1, 0, 0};
	/* Midway between keys 0 and 1: the mean translation, 45 degrees. */
	sim_colliders_begin_substep(&set, 6.5f, 7.0f);
	sim_colliders_attached_point(&set, 0, rest0, o);
	CHECK_NEAR(o[0], 1, 1e-6);
	CHECK_NEAR(o[1], 2, 1e-6);
	CHECK_NEAR(o[2], 3, 1e-6);
	sim_colliders_attached_point(&set, 0, rest1, o);
	CHECK_NEAR(o[0], 1 + cos(PI / 4), 1e-6);
	CHECK_NEAR(o[1], 2 + sin(PI / 4), 1e-6);
	/* Before the first key it holds; after the last too. */
	sim_colliders_begin_substep(&set, 0, 1);
	sim_colliders_attached_point(&set, 0, rest1, o);
	CHECK_NEAR(o[0], 1, 1e-6);
	sim_colliders_begin_substep(&set, 20, 30);
	sim_colliders_attached_point(&set, 0, rest1, o);
	CHECK_NEAR(o[0], 2, 1e-6);
	CHECK_NEAR(o[1], 5, 1e-6);
	/* The sphere itself moved: a point at its keyed centre is inside. */
	sim_vec4 p = {2, 4, 6, 1}, x = p;
	CHECK(sim_colliders_project(&set, &p, &x, 1, 0) == 1);
	CHECK_NEAR(v3_len(v3(p.x - 2, p.y - 4, p.z - 6)), 0.1, 1e-6);
	/* Euler angles are interpolated per channel, so a keyed full turn
	 * passes through 180 degrees instead of standing still. */
	drape_keyframe spin[2] = {{0, {0, 0, 0}, {0, 0, 0}}, {10, {0, 0, 0}, {0, 360, 0}}};
	CHECK_OK(sim_colliders_set_keyframes(&set, 0, spin, 2, NULL));
	sim_colliders_begin_substep(&set, 4.5f, 5);
	sim_colliders_attached_point(&set, 0, rest1, o);
	CHECK_NEAR(o[0], -1, 1e-6);
	/* No keys: identity. */
	CHECK_OK(sim_colliders_set_keyframes(&set, 0, NULL, 0, NULL));
	sim_colliders_begin_substep(&set, 4.5f, 5);
	sim_colliders_attached_point(&set, 0, rest1, o);
	CHECK(o[0] == 1 && o[1] == 0 && o[2] == 0);
	sim_colliders_free(&set);
}

static void test_attached_follow_rotating_capsule(void)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_CAPSULE;
	d.b[1] = 1, d.radius = 0.1f;
	/* Spins about its own axis (Y) and tilts about X while moving. */
	drape_keyframe keys[2] = {{0, {0, 0, 0}, {0, 0, 0}}, {8, {0.4f, 0, 0}, {30, 180, 0}}};
	d.keyframes = keys, d.keyframe_count = 2;
	CHECK_OK(sim_colliders_add(&set, &d, NULL, NULL));
	/* Points on the capsule's surface at t = 0. */
	float rest[3][3] = {{0.1f, 0.5f, 0}, {0, 1.1f, 0}, {0, 0.3f, -0.1f}};
	for (int f = 1; f <= 8; f++) {
		float t = (float)f;
		sim_colliders_begin_substep(&set, t - 0.5f, t);
		double ax = 30.0 * t / 8 * PI / 180, ay = 180.0 * t / 8 * PI / 180;
		for (int i = 0; i < 3; i++) {
			float o[3];
			sim_colliders_attached_point(&set, 0, rest[i], o);
			/* Expected: Ry(ay) * Rx(ax) * rest + translate. */
			double px = rest[i][0], py = rest[i][1], pz = rest[i][2];
			double y1 = py * cos(ax) - pz * sin(ax), z1 = py * sin(ax) + pz * cos(ax);
			double x2 = px * cos(ay) + z1 * sin(ay), z2 = -px * sin(ay) + z1 * cos(ay);
			CHECK_NEAR(o[0], x2 + 0.4 * t / 8, 1e-5);
			CHECK_NEAR(o[1], y1, 1e-5);
			CHECK_NEAR(o[2], z2, 1e-5);
			/* And it stays on the moving surface: no contact push. */
			sim_vec4 p = {o[0], o[1], o[2], 1}, x = p;
			sim_colliders_project(&set, &p, &x, 1, 0);
			CHECK_NEAR(p.x, o[0], 1e-5);
			CHECK_NEAR(p.y, o[1], 1e-5);
		}
	}
	sim_colliders_free(&set);
}

/* ---- Mesh colliders ------------------------------------------------------------ */

static void test_mesh_collider_update_and_sdf(void)
{
	sim_collider_set set;
	sim_colliders_init(&set);
	mesh m = uv_sphere(0.5f, 48, 24);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_MESH;
	d.vertices = m.v, d.vertex_count = m.nv, d.triangles = m.t, d.triangle_count = m.nt;
	d.voxel_size = 0.01f;
	d.friction = d.static_friction = 0;
	drape_error err;
	CHECK_OK(sim_colliders_add(&set, &d, NULL, &err));
	const float th = 0.005f;
	sim_vec4 p = {0.48f, 0, 0, 1}, x = p;
	CHECK(sim_colliders_project(&set, &p, &x, 1, th) == 1);
	CHECK_NEAR(p.x, 0.505, 0.01); /* within one voxel of the analytic answer */
	CHECK_NEAR(p.y, 0, 0.005);
	/* Move the mesh 1 m along +x: the field is rebuilt and follows. */
	for (uint32_t i = 0; i < m.nv; i++)
		m.v[i * 3] += 1.0f;
	CHECK(sim_colliders_update_mesh(&set, 0, m.v, m.nv - 1, &err) == DRAPE_EINVAL);
	CHECK_OK(sim_colliders_update_mesh(&set, 0, m.v, m.nv, &err));
	p = (sim_vec4){0.48f, 0, 0, 1}, x = p;
	CHECK(sim_colliders_project(&set, &p, &x, 1, th) == 0);
	p = (sim_vec4){1.48f, 0, 0, 1}, x = p;
	CHECK(sim_colliders_project(&set, &p, &x, 1, th) == 1);
	CHECK_NEAR(p.x, 1.505, 0.01);
	/* A shared prebuilt field: retained by the set, released by us. */
	drape_sdf *sdf = NULL;
	for (uint32_t i = 0; i < m.nv; i++)
		m.v[i * 3] -= 3.0f;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.02f, 0, 0, &sdf, &err));
	CHECK_OK(sim_colliders_set_sdf(&set, 0, sdf, &err));
	drape_collider_desc d2;
	drape_collider_desc_default(&d2);
	d2.shape = DRAPE_SHAPE_MESH, d2.sdf = sdf;
	CHECK_OK(sim_colliders_add(&set, &d2, NULL, &err));
	drape_sdf_release(sdf);
	p = (sim_vec4){-2, 0.48f, 0, 1}, x = p;
	CHECK(sim_colliders_project(&set, &p, &x, 1, th) >= 1);
	CHECK_NEAR(v3_len(v3(p.x + 2, p.y, p.z)), 0.505, 0.02);
	CHECK(sim_colliders_update_mesh(&set, 1, m.v, m.nv, &err) == DRAPE_ESTATE);
	mesh_free(&m);
	sim_colliders_free(&set);
	CHECK(set.count == 0 && set.items == NULL);
}

static void test_body_field_cost(void)
{
	static const char *paths[] = {"tests/data/meshes/mh_proxy_male_generic.obj",
				      "../shared/data/meshes/mh_proxy_male_generic.obj"};
	mesh m;
	int found = -1;
	for (int i = 0; i < 2 && found < 0; i++)
		if (mesh_read_obj(paths[i], 0.1f, &m) == 0)
			found = i;
	if (found < 0) {
		printf("  body mesh not found; skipped\n");
		return;
	}
	CHECK(m.nv > 1000 && m.nt > 1000);
	drape_sdf *sdf = NULL;
	drape_error err;
	CHECK_OK(drape_sdf_build(m.v, m.nv, m.t, m.nt, 0, 0, 0, &sdf, &err));
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	/* Near-surface points (vertices jittered by a voxel) and points all
	 * over the bounding box. */
	enum { N = 1 << 16, REPS = 8 };
	static float near_pts[N * 3], box_pts[N * 3], d[N], g[N * 3];
	for (int i = 0; i < N; i++) {
		uint32_t v = (uint32_t)(rnd() * m.nv) % m.nv;
		for (int k = 0; k < 3; k++) {
			near_pts[i * 3 + k] = m.v[v * 3 + k] + (float)(2 * rnd() - 1) * info.voxel_size;
			box_pts[i * 3 + k] = info.bbox_min[k] +
					     (float)rnd() * (info.bbox_max[k] - info.bbox_min[k]);
		}
	}
	/* The mesh's own vertex order, jittered: neighbours in the array are
	 * neighbours in space, as a cloth's vertices mostly are. */
	static float seq_pts[N * 3];
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 3; k++)
			seq_pts[i * 3 + k] = m.v[(i % m.nv) * 3 + k] + (float)(2 * rnd() - 1) * info.voxel_size;
	double t0 = now_ms();
	for (int r = 0; r < REPS; r++)
		for (int i = 0; i < N; i += 64)
			drape_sdf_sample(sdf, seq_pts + i * 3, 64, d + i, g + i * 3);
	double seq_ns = (now_ms() - t0) * 1e6 / ((double)N * REPS);
	t0 = now_ms();
	for (int r = 0; r < REPS; r++)
		for (int i = 0; i < N; i += 64)
			drape_sdf_sample(sdf, near_pts + i * 3, 64, d + i, g + i * 3);
	double near_ns = (now_ms() - t0) * 1e6 / ((double)N * REPS);
	int negative = 0;
	for (int i = 0; i < N; i++)
		negative += d[i] < 0;
	t0 = now_ms();
	for (int r = 0; r < REPS; r++)
		for (int i = 0; i < N; i += 64)
			drape_sdf_sample(sdf, box_pts + i * 3, 64, d + i, g + i * 3);
	double box_ns = (now_ms() - t0) * 1e6 / ((double)N * REPS);
	printf("  body (%u vertices, %u triangles): voxel %.4g m, band %.4g m, %llu voxels, %.1f MB, "
	       "build %.1f ms; sample+gradient per point: %.1f ns near the surface in mesh order, "
	       "%.1f ns near the surface in random order, %.1f ns anywhere in the box\n",
	       m.nv, m.nt, (double)info.voxel_size, (double)info.band,
	       (unsigned long long)info.voxels, info.bytes / 1e6, info.build_ms, seq_ns, near_ns, box_ns);
	/* Points jittered about the surface fall on both sides of it. */
	CHECKF(negative > N / 10 && negative < N * 9 / 10, "%d of %d near points inside", negative, N);
	float far[3] = {0, 100, 0}, fd;
	drape_sdf_sample(sdf, far, 1, &fd, NULL);
	CHECK(fd == info.band);
	drape_sdf_release(sdf);
	mesh_free(&m);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_shape_plane),
		CHECK_TEST(test_shape_sphere),
		CHECK_TEST(test_shape_box),
		CHECK_TEST(test_shape_capsule),
		CHECK_TEST(test_vdb_sphere_matches_analytic),
		CHECK_TEST(test_vdb_serialize_round_trip),
		CHECK_TEST(test_vdb_outside_band_is_free_space),
		CHECK_TEST(test_vdb_open_mesh_keeps_inside),
		CHECK_TEST(test_vdb_inconsistent_winding),
		CHECK_TEST(test_vdb_split_seam_is_not_a_hole),
		CHECK_TEST(test_vdb_voxel_cap),
		CHECK_TEST(test_vdb_bad_input),
		CHECK_TEST(test_vdb_threads_and_refcount),
		CHECK_TEST(test_desc_validation),
		CHECK_TEST(test_project_sphere_to_thickness),
		CHECK_TEST(test_friction_static_sticks),
		CHECK_TEST(test_friction_zero_slides),
		CHECK_TEST(test_friction_dynamic),
		CHECK_TEST(test_restitution_scales_normal),
		CHECK_TEST(test_moving_box_carries_with_friction),
		CHECK_TEST(test_keyframes_interpolate),
		CHECK_TEST(test_attached_follow_rotating_capsule),
		CHECK_TEST(test_mesh_collider_update_and_sdf),
		CHECK_TEST(test_body_field_cost),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
