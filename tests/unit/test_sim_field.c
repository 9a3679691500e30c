/*
 * The body's collider field against geometry (issue 22): the MakeHuman body
 * of the garment demo at the demo's own voxel size (5 mm), its field built
 * by drape_sdf_build, checked against the exact distance to its triangles
 * computed by brute force over the whole mesh (tests/unit/deform_geometry.h,
 * written apart from the solver) and the inside test by ray parity.
 *
 * - Points in the band (random points of the surface moved along the face
 *   normal by up to the band width either way) where the demo's garment
 *   is (its bounding box) read the exact distance to within half a voxel,
 *   with the sign of the ray parity. Elsewhere the field is known to differ
 *   and the test only reports by how much: pockets whose opening is
 *   narrower than a voxel (eyes, mouth, ears, between the toes and the
 *   fingers) were sealed to OpenVDB's exterior flood fill and read as solid;
 *   the exact builder (sdfband.c) no longer does, but trilinear sampling
 *   still blurs what is narrower than a voxel.
 * - The field's own values at voxel centres all over the body: exact to
 *   float rounding within a voxel of the surface, close beyond, the sign of
 *   the ray parity everywhere.
 * - A point 10 cm inside the chest reads its true depth to within half a
 *   voxel, and its gradient points at the nearest surface point.
 * - The collider's projection moves that point out through the nearest
 *   surface, to the contact distance, in one call.
 * - The build's stage times (drape_sdf_info) add up within its build_ms,
 *   and a field read back from bytes reports none.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/collider.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"

/* A small deterministic generator so failures reproduce. */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* The body of examples/garment.json (decimetres to metres) and its field at
 * the scene's voxel size and the collider's exterior band (the cloth's 3 mm
 * plus 2 cm). Built once for all the tests. */
static mesh g_body;
static drape_sdf *g_sdf;
static drape_sdf_info g_info;
static parity_grid g_parity;
/* The bounding box of the demo garment (examples/garment.json's cloth). */
static double g_lo[3], g_hi[3];

static int body_field(void)
{
	if (g_sdf != NULL)
		return 0;
	if (mesh_read_obj("tests/data/meshes/mh_proxy_male_generic.obj", 0.1f, &g_body) != 0)
		return -1;
	drape_error err;
	if (drape_sdf_build(g_body.v, g_body.nv, g_body.t, g_body.nt, 0.005f, 0.023f, 0, &g_sdf, &err) !=
	    DRAPE_OK) {
		printf("  build: %s\n", err.message);
		return -1;
	}
	drape_sdf_get_info(g_sdf, &g_info);
	mesh cloth;
	if (mesh_read_obj("tests/data/meshes/mh_male_casualsuit04.obj", 0.1f, &cloth) != 0)
		return -1;
	for (int k = 0; k < 3; k++)
		g_lo[k] = INFINITY, g_hi[k] = -INFINITY;
	for (uint32_t i = 0; i < cloth.nv; i++)
		for (int k = 0; k < 3; k++) {
			g_lo[k] = fmin(g_lo[k], cloth.v[3 * i + k]);
			g_hi[k] = fmax(g_hi[k], cloth.v[3 * i + k]);
		}
	mesh_free(&cloth);
	grid_build(&g_parity, g_body.v, g_body.t, g_body.nv, g_body.nt, 0.01);
	return 0;
}

/* Exact distance from q to the body and the nearest surface point. */
static double body_nearest(const double q[3], double near[3])
{
	double best = INFINITY, p[3], b[3], A[3], B[3], C[3];
	for (uint32_t i = 0; i < g_body.nt; i++) {
		vget(g_body.v, g_body.t[3 * i], A), vget(g_body.v, g_body.t[3 * i + 1], B);
		vget(g_body.v, g_body.t[3 * i + 2], C);
		double d = tri_dist(q, A, B, C, p, b);
		if (d < best) {
			best = d;
			memcpy(near, p, sizeof p);
		}
	}
	return best;
}

static void test_band_matches_exact_distance(void)
{
	CHECK(body_field() == 0);
	CHECK(g_info.voxel_size == 0.005f);
	enum { N = 1000 };
	const double half = 0.5 * g_info.voxel_size;
	int checked = 0, inside = 0, elsewhere = 0, elsewhere_off = 0;
	double worst = 0, worst_elsewhere = 0;
	for (int i = 0; i < N; i++) {
		/* A random point of a random triangle, moved along its normal. */
		uint32_t t = (uint32_t)(rnd() * g_body.nt) % g_body.nt;
		double A[3], B[3], C[3], e1[3], e2[3], n[3];
		vget(g_body.v, g_body.t[3 * t], A), vget(g_body.v, g_body.t[3 * t + 1], B);
		vget(g_body.v, g_body.t[3 * t + 2], C);
		for (int k = 0; k < 3; k++)
			e1[k] = B[k] - A[k], e2[k] = C[k] - A[k];
		cross3(e1, e2, n);
		double nl = sqrt(dot3(n, n));
		if (!(nl > 0))
			continue;
		double u = rnd(), v = rnd();
		if (u + v > 1)
			u = 1 - u, v = 1 - v;
		/* Up to the band outside, as deep as the band inside. */
		double s = (2 * rnd() - 1) * (g_info.band - g_info.voxel_size);
		double q[3], near[3];
		for (int k = 0; k < 3; k++)
			q[k] = A[k] + u * e1[k] + v * e2[k] + s * n[k] / nl;
		double exact = body_nearest(q, near);
		int in = grid_inside(&g_parity, q);
		double want = in ? -exact : exact;
		float p[3] = {(float)q[0], (float)q[1], (float)q[2]}, d;
		drape_sdf_sample(g_sdf, p, 1, &d, NULL);
		int covered = 1;
		for (int k = 0; k < 3; k++)
			covered &= q[k] >= g_lo[k] && q[k] <= g_hi[k];
		if (!covered) {
			elsewhere++;
			elsewhere_off += fabs(d - want) > half;
			worst_elsewhere = fmax(worst_elsewhere, fabs(d - want));
			continue;
		}
		CHECKF(fabs(d - want) <= half,
		       "point %d (%g %g %g): field %g, exact signed distance %g (half a voxel %g)", i, q[0],
		       q[1], q[2], (double)d, want, half);
		worst = fmax(worst, fabs(d - want));
		checked++;
		inside += in;
	}
	printf("  %d points within the band under the garment, %d inside: worst |field - exact| %.3g mm "
	       "(half a voxel %.3g mm); elsewhere (head, hands, feet) %d of %d off by more, worst %.3g mm\n",
	       checked, inside, worst * 1e3, half * 1e3, elsewhere_off, elsewhere, worst_elsewhere * 1e3);
	/* A fair share of the surface is under the garment (the head and hands
	 * hold most of the proxy's triangles), and both sides were sampled. */
	CHECK(checked > N / 8 && inside > checked / 5 && inside < checked * 4 / 5);
	/* Since the exact builder, the rest of the body too (OpenVDB's sealed
	 * pockets put 98 of these 760 points off by up to 42 mm). */
	CHECKF(elsewhere_off == 0, "%d of %d points elsewhere off by more than half a voxel", elsewhere_off,
	       elsewhere);
}

/*
 * The field's own values, at voxel centres (where the trilinear sample is
 * the voxel's value) near random points of the whole body, head, hands and
 * feet included: within a voxel of the surface the exact builder computed
 * the exact distance, so it must agree with the brute force to float
 * rounding (0.01 mm, 1/500 of a voxel); farther out in the band the value
 * comes from the nearest triangles of its neighbours (closest-triangle
 * propagation, not exact where the nearest triangle changes) and must be
 * within 0.15 voxel (measured: 0.59 mm, 0.12 voxel, at worst). The sign must match the ray parity everywhere, including
 * inside the pockets narrower than a voxel that OpenVDB's flood fill
 * sealed (points closer than 0.1 mm to the surface are left out of the
 * sign check, where parity rounding decides).
 */
static void test_voxel_centres_exact(void)
{
	CHECK(body_field() == 0);
	enum { N = 1500 };
	const double h = g_info.voxel_size;
	int shell = 0, outer = 0, signs = 0;
	double worst_shell = 0, worst_outer = 0;
	for (int i = 0; i < N; i++) {
		uint32_t t = (uint32_t)(rnd() * g_body.nt) % g_body.nt;
		double A[3], B[3], C[3], q[3], near[3];
		vget(g_body.v, g_body.t[3 * t], A), vget(g_body.v, g_body.t[3 * t + 1], B);
		vget(g_body.v, g_body.t[3 * t + 2], C);
		double u = rnd(), v = rnd();
		if (u + v > 1)
			u = 1 - u, v = 1 - v;
		float p[3];
		for (int k = 0; k < 3; k++) {
			/* A voxel centre within two voxels of the surface point. */
			double x = A[k] + u * (B[k] - A[k]) + v * (C[k] - A[k]);
			x = (floor(x / h) + (int)(rnd() * 5) - 2) * h;
			p[k] = (float)x;
			q[k] = p[k];
		}
		double exact = body_nearest(q, near);
		if (exact >= g_info.band - h)
			continue;
		float d;
		drape_sdf_sample(g_sdf, p, 1, &d, NULL);
		if (exact > 1e-4) {
			int in = grid_inside(&g_parity, q);
			CHECKF((d < 0) == in, "voxel centre (%g %g %g): field %g, ray parity says %s (exact %g)", q[0],
			       q[1], q[2], (double)d, in ? "inside" : "outside", exact);
			signs++;
		}
		double off = fabs(fabs((double)d) - exact);
		if (exact <= h) {
			CHECKF(off <= 1e-5, "voxel centre (%g %g %g) in the shell: |field| %g, exact %g", q[0], q[1],
			       q[2], fabs((double)d), exact);
			worst_shell = fmax(worst_shell, off);
			shell++;
		} else {
			CHECKF(off <= 0.15 * h, "voxel centre (%g %g %g): |field| %g, exact %g", q[0], q[1], q[2],
			       fabs((double)d), exact);
			worst_outer = fmax(worst_outer, off);
			outer++;
		}
	}
	printf("  %d voxel centres within a voxel of the surface: worst %.3g um; %d farther in the band: "
	       "worst %.3g um; %d signs checked against the ray parity\n",
	       shell, worst_shell * 1e6, outer, worst_outer * 1e6, signs);
	CHECK(shell > N / 5 && outer > N / 5 && signs > N / 2);
	CHECKF(strncmp(g_info.builder, "band", 4) == 0, "builder %s", g_info.builder);
}

/* A point 10 cm behind the front of the chest: the body's frontmost vertex
 * at chest height near the middle, moved 10 cm towards the back. */
static void chest_point(double q[3])
{
	double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = 0; i < g_body.nv; i++)
		for (int k = 0; k < 3; k++) {
			lo[k] = fmin(lo[k], g_body.v[3 * i + k]);
			hi[k] = fmax(hi[k], g_body.v[3 * i + k]);
		}
	const double h = hi[1] - lo[1], cx = 0.5 * (lo[0] + hi[0]);
	double best = -INFINITY;
	for (uint32_t i = 0; i < g_body.nv; i++) {
		const float *p = &g_body.v[3 * i];
		if (p[1] < lo[1] + 0.68 * h || p[1] > lo[1] + 0.74 * h || fabs(p[0] - cx) > 0.06)
			continue;
		if (p[2] > best) {
			best = p[2];
			q[0] = p[0], q[1] = p[1], q[2] = p[2] - 0.10;
		}
	}
}

static void test_deep_point_reads_true_depth(void)
{
	CHECK(body_field() == 0);
	double q[3], near[3];
	chest_point(q);
	CHECK(grid_inside(&g_parity, q));
	double exact = body_nearest(q, near);
	/* 10 cm behind the front; nothing else of the torso is nearer than
	 * about 8 cm (the chest is some 25 cm deep). */
	CHECKF(exact > 0.07 && exact <= 0.1 + 1e-6, "depth %g", exact);
	float p[3] = {(float)q[0], (float)q[1], (float)q[2]}, d, g[3];
	drape_sdf_sample(g_sdf, p, 1, &d, g);
	CHECKF(fabs(d + exact) <= 0.5 * g_info.voxel_size, "field %g, exact depth %g", (double)d, exact);
	/* The gradient points out, at the nearest surface point. */
	double out[3], gl = sqrt((double)g[0] * g[0] + (double)g[1] * g[1] + (double)g[2] * g[2]);
	for (int k = 0; k < 3; k++)
		out[k] = (near[k] - q[k]) / exact;
	double cosang = (g[0] * out[0] + g[1] * out[1] + g[2] * out[2]) / gl;
	CHECKF(fabs(gl - 1) < 0.05 && cosang > cos(10 * 3.14159265358979 / 180),
	       "gradient (%g %g %g), towards the nearest point (%g %g %g)", (double)g[0], (double)g[1],
	       (double)g[2], out[0], out[1], out[2]);
}

static void test_deep_point_pushed_out_nearest_side(void)
{
	CHECK(body_field() == 0);
	double q[3], near[3];
	chest_point(q);
	double exact = body_nearest(q, near);
	sim_collider_set set;
	sim_colliders_init(&set);
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_MESH;
	d.sdf = g_sdf;
	d.friction = 0, d.static_friction = 0;
	drape_error err;
	CHECK_OK(sim_colliders_add(&set, &d, NULL, &err));
	const float th = 0.003f;
	sim_vec4 p = {(float)q[0], (float)q[1], (float)q[2], 1}, x = p;
	CHECK(sim_colliders_project(&set, &p, &x, 1, th) >= 1);
	double r[3] = {p.x, p.y, p.z}, rn[3];
	double after = body_nearest(r, rn);
	/* Out of the body, at the contact distance, beside the nearest point it
	 * started from: through the front of the chest, not the back. */
	CHECKF(!grid_inside(&g_parity, r), "still inside at (%g %g %g)", r[0], r[1], r[2]);
	CHECKF(fabs(after - th) <= 0.5 * g_info.voxel_size, "%g from the surface, contact distance %g",
	       after, (double)th);
	double moved = 0;
	for (int k = 0; k < 3; k++)
		moved += (r[k] - near[k]) * (r[k] - near[k]);
	CHECKF(sqrt(moved) <= th + g_info.voxel_size, "%g m from the nearest surface point (depth was %g)",
	       sqrt(moved), exact);
	sim_colliders_free(&set);
}

static void test_build_stages_account_for_the_build(void)
{
	CHECK(body_field() == 0);
	const drape_sdf_info *i = &g_info;
	/* Each stage OpenVDB runs for this field was seen: voxelising, the
	 * sign, growing the band (5 voxels, and the interior) and the
	 * renormalisation; together they are the build less our own checks. */
	CHECKF(i->voxelize_ms > 0 && i->sign_ms > 0 && i->expand_ms > 0 && i->renormalize_ms > 0,
	       "stages %g %g %g %g ms", i->voxelize_ms, i->sign_ms, i->expand_ms, i->renormalize_ms);
	double sum = i->voxelize_ms + i->sign_ms + i->expand_ms + i->renormalize_ms;
	CHECKF(sum <= i->build_ms && sum >= 0.5 * i->build_ms, "stages %g ms of a %g ms build", sum,
	       i->build_ms);
	CHECK(i->threads >= 1);
	void *data = NULL;
	size_t size = 0;
	drape_error err;
	drape_sdf *back = NULL;
	CHECK_OK(drape_sdf_serialize(g_sdf, &data, &size, &err));
	drape_err rc = drape_sdf_deserialize(data, size, &back, &err);
	free(data);
	CHECK_OK(rc);
	drape_sdf_info b;
	drape_sdf_get_info(back, &b);
	drape_sdf_release(back);
	CHECK(b.voxelize_ms == 0 && b.sign_ms == 0 && b.expand_ms == 0 && b.renormalize_ms == 0 &&
	      b.threads == 0);
	CHECK(b.build_ms == i->build_ms && b.voxels == i->voxels);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_band_matches_exact_distance),
		CHECK_TEST(test_voxel_centres_exact),
		CHECK_TEST(test_deep_point_reads_true_depth),
		CHECK_TEST(test_deep_point_pushed_out_nearest_side),
		CHECK_TEST(test_build_stages_account_for_the_build),
	};
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	drape_sdf_release(g_sdf);
	if (g_sdf != NULL)
		parity_free(&g_parity);
	mesh_free(&g_body);
	return rc;
}
