/*
 * Unit tests of the solver core: bending gradients, distance projection,
 * pins, iteration-independent stiffness, determinism, wind, bad input, odd
 * meshes and state round trips. Each test asserts a property that a wrong
 * solver fails. Settling and convergence live in test_sim_settle.c.
 */
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#include <stdint.h>
#include <string.h>

/* ---- 1. bending gradients ------------------------------------------------- */

/* acos(n1 . n2) in double, p1..p4 as in bend.c. */
static double dihedral_d(const double p[12])
{
	double e2[3], e3[3], e4[3], n1[3], n2[3];
	for (int k = 0; k < 3; k++) {
		e2[k] = p[3 + k] - p[k];
		e3[k] = p[6 + k] - p[k];
		e4[k] = p[9 + k] - p[k];
	}
	n1[0] = e2[1] * e3[2] - e2[2] * e3[1];
	n1[1] = e2[2] * e3[0] - e2[0] * e3[2];
	n1[2] = e2[0] * e3[1] - e2[1] * e3[0];
	n2[0] = e2[1] * e4[2] - e2[2] * e4[1];
	n2[1] = e2[2] * e4[0] - e2[0] * e4[2];
	n2[2] = e2[0] * e4[1] - e2[1] * e4[0];
	double l1 = sqrt(n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2]);
	double l2 = sqrt(n2[0] * n2[0] + n2[1] * n2[1] + n2[2] * n2[2]);
	double d = (n1[0] * n2[0] + n1[1] * n2[1] + n1[2] * n2[2]) / (l1 * l2);
	return acos(d > 1 ? 1 : (d < -1 ? -1 : d));
}

static void test_bend_gradient_fd(void)
{
	int tested = 0;
	double worst = 0.0;
	for (int trial = 0; trial < 2000 && tested < 300; trial++) {
		sim_v3 p[4];
		double pd[12];
		for (int i = 0; i < 4; i++) {
			p[i] = v3((float)(2 * rnd() - 1), (float)(2 * rnd() - 1), (float)(2 * rnd() - 1));
			pd[3 * i] = p[i].x, pd[3 * i + 1] = p[i].y, pd[3 * i + 2] = p[i].z;
		}
		/* Non-degenerate: both triangles well shaped, not near flat or folded. */
		sim_v3 e2 = v3_sub(p[1], p[0]);
		if (v3_len(v3_cross(e2, v3_sub(p[2], p[0]))) < 0.2f ||
		    v3_len(v3_cross(e2, v3_sub(p[3], p[0]))) < 0.2f)
			continue;
		double phi_d = dihedral_d(pd);
		if (sin(phi_d) < 0.2)
			continue;
		sim_v3 g[4];
		float phi;
		CHECK(sim_bend_gradient(p, g, &phi) == 1);
		CHECK_NEAR(phi, phi_d, 1e-5);
		double fd[12], gmax = 0.0, emax = 0.0;
		const double h = 1e-6;
		for (int k = 0; k < 12; k++) {
			double a[12], b[12];
			memcpy(a, pd, sizeof a);
			memcpy(b, pd, sizeof b);
			a[k] += h;
			b[k] -= h;
			fd[k] = (dihedral_d(a) - dihedral_d(b)) / (2 * h);
			gmax = fmax(gmax, fabs(fd[k]));
		}
		for (int i = 0; i < 4; i++) {
			emax = fmax(emax, fabs(g[i].x - fd[3 * i]));
			emax = fmax(emax, fabs(g[i].y - fd[3 * i + 1]));
			emax = fmax(emax, fabs(g[i].z - fd[3 * i + 2]));
		}
		double rel = emax / gmax;
		worst = fmax(worst, rel);
		CHECKF(rel <= 1e-3, "config %d: gradient relative error %.3g > 1e-3", trial, rel);

		/* One projection with random masses: momentum sum_i m_i dp_i = 0,
		 * and with k = 1 the angle moves towards the rest angle. */
		sim_vec4 q[4], q0[4];
		for (int i = 0; i < 4; i++)
			q[i] = q0[i] = (sim_vec4){p[i].x, p[i].y, p[i].z, (float)(0.5 + rnd())};
		/* phi_d is in [0.2, pi - 0.2], so the rest angle stays inside (0, pi). */
		sim_bend c = {{0, 1, 2, 3}, (float)(phi_d + (rnd() < 0.5 ? -0.15 : 0.15))};
		sim_bend_project(q, &c, 1.0f);
		double mom[3] = {0, 0, 0}, mag = 0.0;
		for (int i = 0; i < 4; i++) {
			double m = 1.0 / q[i].w;
			double dx = (double)q[i].x - q0[i].x, dy = (double)q[i].y - q0[i].y,
			       dz = (double)q[i].z - q0[i].z;
			mom[0] += m * dx, mom[1] += m * dy, mom[2] += m * dz;
			mag += m * sqrt(dx * dx + dy * dy + dz * dz);
		}
		CHECKF(mag > 0.0, "config %d: projection moved nothing", trial);
		CHECKF(sqrt(mom[0] * mom[0] + mom[1] * mom[1] + mom[2] * mom[2]) <= 1e-5 * mag,
		       "config %d: momentum change %.3g of %.3g", trial,
		       sqrt(mom[0] * mom[0] + mom[1] * mom[1] + mom[2] * mom[2]), mag);
		double after[12];
		for (int i = 0; i < 4; i++)
			after[3 * i] = q[i].x, after[3 * i + 1] = q[i].y, after[3 * i + 2] = q[i].z;
		CHECKF(fabs(dihedral_d(after) - c.rest) < 0.5 * fabs(phi_d - c.rest),
		       "config %d: angle %.6f did not approach rest %.6f from %.6f", trial,
		       dihedral_d(after), (double)c.rest, phi_d);
		tested++;
	}
	CHECKF(tested >= 100, "only %d usable random configurations", tested);
	printf("  bend gradient: %d configs, worst relative error vs finite differences %.2e\n",
	       tested, worst);
}

/* Flat, fully folded and degenerate pairs stay finite and are left alone. */
static void test_bend_degenerate_finite(void)
{
	const sim_v3 cases[][4] = {
		/* flat, dihedral pi */
		{{0, 0, 0}, {1, 0, 0}, {0.5f, 1, 0}, {0.5f, -1, 0}},
		/* fully folded: both wings on the same side, coplanar */
		{{0, 0, 0}, {1, 0, 0}, {0.5f, 1, 0}, {0.3f, 0.8f, 0}},
		/* wings coincide */
		{{0, 0, 0}, {1, 0, 0}, {0.5f, 1, 0}, {0.5f, 1, 0}},
		/* wing on the edge's line: zero-length normal */
		{{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {0.5f, -1, 0}},
		/* shared edge of zero length */
		{{0, 0, 0}, {0, 0, 0}, {0.5f, 1, 0}, {0.5f, -1, 0}},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		sim_v3 g[4];
		float phi;
		CHECKF(sim_bend_gradient(cases[k], g, &phi) == 0, "case %zu: gradient reported", k);
		float rest = sim_bend_rest_angle(cases[k][0], cases[k][1], cases[k][2], cases[k][3]);
		CHECKF(isfinite(rest) && rest >= 0.0f && rest <= (float)M_PI, "case %zu: rest %g", k,
		       (double)rest);
		sim_vec4 q[4];
		for (int i = 0; i < 4; i++)
			q[i] = (sim_vec4){cases[k][i].x, cases[k][i].y, cases[k][i].z, 1.0f};
		sim_bend c = {{0, 1, 2, 3}, 1.0f};
		sim_bend_project(q, &c, 1.0f);
		for (int i = 0; i < 4; i++)
			CHECKF(isfinite(q[i].x) && isfinite(q[i].y) && isfinite(q[i].z),
			       "case %zu: vertex %d not finite", k, i);
	}
	/* Slightly off flat the projection works and stays bounded. */
	sim_vec4 q[4] = {{0, 0, 0, 1}, {1, 0, 0, 1}, {0.5f, 1, 0.01f, 1}, {0.5f, -1, 0.01f, 1}};
	sim_bend c = {{0, 1, 2, 3}, (float)M_PI};
	sim_bend_project(q, &c, 1.0f);
	for (int i = 0; i < 4; i++)
		CHECK(isfinite(q[i].x) && isfinite(q[i].y) && isfinite(q[i].z) && fabsf(q[i].z) < 0.05f);
	CHECKF(fabsf(q[2].z - q[0].z) < 0.005f, "near-flat pair not flattened: %g", (double)q[2].z);
}

/* ---- 2. stretch projection -------------------------------------------------- */

static void test_stretch_projection(void)
{
	for (int trial = 0; trial < 100; trial++) {
		sim_vec4 p[2];
		for (int i = 0; i < 2; i++)
			p[i] = (sim_vec4){(float)(2 * rnd() - 1), (float)(2 * rnd() - 1),
					  (float)(2 * rnd() - 1), 1.0f};
		float len0 = v3_len(v3_sub(v3_of4(p[0]), v3_of4(p[1])));
		sim_dist c = {0, 1, (float)(0.2 + 2 * rnd())};
		sim_v3 com = v3_scale(v3_add(v3_of4(p[0]), v3_of4(p[1])), 0.5f);
		sim_vec4 h[2] = {p[0], p[1]};
		sim_dist_project(p, &c, 1.0f);
		float len = v3_len(v3_sub(v3_of4(p[0]), v3_of4(p[1])));
		CHECK_NEAR(len, c.rest, 2e-6 * fmax(1.0, c.rest));
		sim_v3 com2 = v3_scale(v3_add(v3_of4(p[0]), v3_of4(p[1])), 0.5f);
		CHECK(v3_len(v3_sub(com, com2)) < 1e-6f);
		/* k = 0.5 removes half of the error in one projection. */
		sim_dist_project(h, &c, 0.5f);
		float lh = v3_len(v3_sub(v3_of4(h[0]), v3_of4(h[1])));
		CHECK_NEAR(lh - c.rest, 0.5 * (len0 - c.rest), 2e-6);
	}
	/* One end pinned: it stays bit-identical and the other restores the length. */
	sim_vec4 p[2] = {{0.3f, -0.2f, 0.7f, 0.0f}, {1.1f, 0.4f, -0.5f, 2.0f}};
	sim_vec4 pinned = p[0];
	sim_dist c = {0, 1, 0.5f};
	sim_dist_project(p, &c, 1.0f);
	CHECK(memcmp(&p[0], &pinned, sizeof pinned) == 0);
	CHECK_NEAR(v3_len(v3_sub(v3_of4(p[0]), v3_of4(p[1]))), 0.5, 1e-6);
	/* Both pinned: nothing moves. */
	sim_vec4 q[2] = {{0, 0, 0, 0}, {2, 0, 0, 0}}, q0[2] = {q[0], q[1]};
	sim_dist_project(q, &c, 1.0f);
	CHECK(memcmp(q, q0, sizeof q) == 0);
}

/* ---- 3. pins ------------------------------------------------------------------ */

static void test_pins_bit_identical(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -1, 0};
	CHECK(grid_make(&g, 12, 12, o, u, v));
	/* Include a -0.0 coordinate among the pinned ones: -0.0 + 0.0 is +0.0,
	 * which a careless update would turn into a bit change. */
	g.pos[3 * 5 + 2] = -0.0f;
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[12];
	for (uint32_t i = 0; i < 12; i++)
		pins[i] = i;
	d.pins = pins;
	d.pin_count = 12;
	d.params.wind[0] = 4.0f;
	d.params.wind[2] = 7.0f;
	drape_sim *sim = NULL;
	drape_error err;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	float *x = malloc((size_t)g.nv * 3 * sizeof *x);
	int ok = 1;
	for (int f = 0; f < 200 && ok; f++) {
		if (drape_sim_step(sim, NULL, &err) != DRAPE_OK)
			ok = 0;
		drape_sim_get_positions(sim, x);
		if (memcmp(x, g.pos, 12 * 3 * sizeof *x) != 0)
			ok = 0;
	}
	float moved = fabsf(x[3 * (g.nv - 1) + 2] - g.pos[3 * (g.nv - 1) + 2]);
	drape_sim_destroy(sim);
	free(x);
	grid_free(&g);
	CHECK(ok);
	CHECKF(moved > 0.1f, "free corner moved only %g m downwind", (double)moved);
}

/* ---- 5. iteration-independent stiffness --------------------------------- */

/*
 * One free edge (vertices 0 and 1) whose third triangle vertex is pinned 1 km
 * away, so the two other edges are perpendicular to the motion and do not
 * disturb it. Gravity 0, no air, and damping 0 so each substep starts at rest
 * (damping^(1/substeps) = 0) and long-range attachments off: the only thing
 * removing error is the n = substeps x iterations projections at k', which
 * must remove the fraction k per frame.
 */
static void test_stiffness_fraction(void)
{
	const int32_t counts[3][2] = {{1, 1}, {2, 5}, {4, 20}};
	const float ks[2] = {0.5f, 0.3f};
	for (int kk = 0; kk < 2; kk++)
		for (int c = 0; c < 3; c++) {
			float pos[9] = {-0.5f, 0, 0, 0.5f, 0, 0, 0, 0, 1000.0f};
			uint32_t tri[3] = {0, 1, 2}, pin = 2;
			drape_sim_desc d;
			drape_sim_desc_default(&d);
			d.positions = pos;
			d.vertex_count = 3;
			d.triangles = tri;
			d.triangle_count = 1;
			d.pins = &pin;
			d.pin_count = 1;
			d.params.gravity[1] = 0.0f;
			d.params.air_density = 0.0f;
			d.params.damping = 0.0f;
			/* The tethers to the far pin would be a second constraint. */
			d.params.long_range = 0;
			d.params.stretch = ks[kk];
			d.params.substeps = counts[c][0];
			d.params.iterations = counts[c][1];
			drape_sim *sim = NULL;
			CHECK_OK(drape_sim_create(&d, &sim, NULL));
			float x0[9] = {-0.6f, 0, 0, 0.6f, 0, 0, 0, 0, 1000.0f}, vel[9] = {0};
			CHECK_OK(drape_sim_set_state(sim, x0, vel, 0, NULL));
			CHECK_OK(drape_sim_step(sim, NULL, NULL));
			float x1[9];
			drape_sim_get_positions(sim, x1);
			drape_sim_destroy(sim);
			double e0 = 1.2 - 1.0;
			double l1 = sqrt(pow((double)x1[3] - x1[0], 2) + pow((double)x1[4] - x1[1], 2) +
					 pow((double)x1[5] - x1[2], 2));
			double removed = (e0 - (l1 - 1.0)) / e0;
			CHECKF(fabs(removed - ks[kk]) <= 1e-4,
			       "k = %.2f at %dx%d: fraction removed %.6f", (double)ks[kk],
			       counts[c][0], counts[c][1], removed);
		}
}

/* ---- 6. determinism --------------------------------------------------------- */

static void test_determinism(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -0.2f, 1};
	CHECK(grid_make(&g, 20, 16, o, u, v));
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[2] = {0, 19};
	d.pins = pins;
	d.pin_count = 2;
	d.params.wind[0] = 3.0f;
	d.params.wind[2] = 2.0f;
	d.params.bend = 0.5f;
	float *a = malloc((size_t)g.nv * 3 * sizeof *a), *b = malloc((size_t)g.nv * 3 * sizeof *b);
	for (int run = 0; run < 2; run++) {
		drape_sim *sim = NULL;
		CHECK_OK(drape_sim_create(&d, &sim, NULL));
		for (int f = 0; f < 60; f++)
			CHECK_OK(drape_sim_step(sim, NULL, NULL));
		drape_sim_get_positions(sim, run ? b : a);
		drape_sim_destroy(sim);
	}
	int same = memcmp(a, b, (size_t)g.nv * 3 * sizeof *a) == 0;
	int moved = memcmp(a, g.pos, (size_t)g.nv * 3 * sizeof *a) != 0;
	free(a);
	free(b);
	grid_free(&g);
	CHECK(same);
	CHECK(moved);
}

/* ---- 7. wind ---------------------------------------------------------------- */

static void test_wind_side(void)
{
	grid g;
	/* A vertical 1 m sheet in the x-y plane, top row pinned, wind along +z. */
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -1, 0};
	CHECK(grid_make(&g, 16, 16, o, u, v));
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[16];
	for (uint32_t i = 0; i < 16; i++)
		pins[i] = i;
	d.pins = pins;
	d.pin_count = 16;
	d.params.wind[2] = 6.0f;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, NULL));
	for (int f = 0; f < 72; f++)
		CHECK_OK(drape_sim_step(sim, NULL, NULL));
	float *x = malloc((size_t)g.nv * 3 * sizeof *x);
	drape_sim_get_positions(sim, x);
	drape_sim_destroy(sim);
	double mean_z = 0.0;
	for (uint32_t i = 16; i < g.nv; i++)
		mean_z += x[3 * i + 2];
	mean_z /= (g.nv - 16);
	/* Non-planar: distance of every vertex from the plane through the two
	 * pinned top corners and the bottom-middle vertex. */
	sim_v3 A = v3(x[0], x[1], x[2]), B = v3(x[3 * 15], x[3 * 15 + 1], x[3 * 15 + 2]);
	uint32_t m = 15 * 16 + 8;
	sim_v3 C = v3(x[3 * m], x[3 * m + 1], x[3 * m + 2]);
	sim_v3 n = v3_cross(v3_sub(B, A), v3_sub(C, A));
	float nl = v3_len(n);
	double dev = 0.0;
	for (uint32_t i = 0; i < g.nv; i++)
		dev = fmax(dev, fabs(v3_dot(v3_sub(v3(x[3 * i], x[3 * i + 1], x[3 * i + 2]), A), n) / nl));
	free(x);
	grid_free(&g);
	printf("  side wind 6 m/s: mean downwind displacement %.3f m, off-plane %.3f m\n", mean_z, dev);
	CHECKF(mean_z > 0.1, "mean downwind displacement %.3f m", mean_z);
	CHECKF(dev > 0.02, "surface nearly planar: max deviation %.4f m", dev);
}

/* ---- 8. bad input, odd meshes, state ------------------------------------- */

static void test_bad_input(void)
{
	float pos[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0};
	uint32_t tri[6] = {0, 1, 2, 1, 3, 2};
	float inv[4] = {1, 1, 1, 1};
	uint32_t pins[2] = {0, 1};
	enum { N_CASES = 19 };
	for (int k = 0; k < N_CASES; k++) {
		float p2[12];
		uint32_t t2[6];
		float i2[4];
		uint32_t pn2[2];
		memcpy(p2, pos, sizeof p2);
		memcpy(t2, tri, sizeof t2);
		memcpy(i2, inv, sizeof i2);
		memcpy(pn2, pins, sizeof pn2);
		drape_sim_desc d;
		drape_sim_desc_default(&d);
		d.positions = p2;
		d.vertex_count = 4;
		d.triangles = t2;
		d.triangle_count = 2;
		d.inv_mass = i2;
		d.pins = pn2;
		d.pin_count = 2;
		drape_err want = DRAPE_EINVAL;
		const char *field = "";
		switch (k) {
		case 0: t2[4] = 900; want = DRAPE_ERANGE; field = "triangles[1][1]: vertex 900 >= vertex_count 4"; break;
		case 1: p2[5] = NAN; want = DRAPE_ENONFINITE; field = "positions[1][2]"; break;
		case 2: p2[9] = INFINITY; want = DRAPE_ENONFINITE; field = "positions[3][0]"; break;
		case 3: d.triangle_count = 0; field = "triangle_count"; break;
		case 4: d.params.fps = 0.0f; field = "params.fps"; break;
		case 5: d.params.substeps = 0; field = "params.substeps"; break;
		case 6: d.params.iterations = 257; field = "params.iterations"; break;
		case 7: d.params.damping = 1.5f; field = "params.damping"; break;
		case 8: d.params.stretch = -0.1f; field = "params.stretch"; break;
		case 9: d.params.bend = NAN; field = "params.bend"; break;
		case 10: d.params.density = 0.0f; field = "params.density"; break;
		case 11: d.params.gravity[1] = -INFINITY; want = DRAPE_ENONFINITE; field = "params.gravity[1]"; break;
		case 12: i2[2] = -1.0f; field = "inv_mass[2]"; break;
		case 13: i2[3] = NAN; field = "inv_mass[3]"; break;
		case 14: pn2[1] = 4; want = DRAPE_ERANGE; field = "pins[1]: vertex 4 >= vertex_count 4"; break;
		case 15: d.pins = NULL; field = "pins"; break;
		case 16: t2[2] = 0; field = "triangles[0]"; break;
		case 17: d.positions = NULL; field = "positions"; break;
		case 18: d.params.drag = -1.0f; field = "params.drag"; break;
		}
		drape_sim *sentinel = (drape_sim *)(uintptr_t)0x1234;
		drape_sim *out = sentinel;
		drape_error err;
		drape_error_clear(&err);
		drape_err rc = drape_sim_create(&d, &out, &err);
		CHECKF(rc == want, "case %d: rc %d, want %d (%s)", k, (int)rc, (int)want, err.message);
		CHECKF(err.code == want, "case %d: err.code %d", k, (int)err.code);
		CHECKF(out == sentinel, "case %d: *out changed", k);
		CHECKF(strstr(err.message, field) == err.message, "case %d: message \"%s\" lacks \"%s\"",
		       k, err.message, field);
	}

	/* A failed set_params keeps the old parameters. */
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = 4;
	d.triangles = tri;
	d.triangle_count = 2;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, NULL));
	drape_sim_params before, bad, after;
	drape_sim_get_params(sim, &before);
	bad = before;
	bad.shear = 2.0f;
	bad.fps = 30.0f;
	drape_error err;
	drape_err rc = drape_sim_set_params(sim, &bad, &err);
	drape_sim_get_params(sim, &after);
	drape_sim_destroy(sim);
	CHECK(rc == DRAPE_EINVAL);
	CHECK(strstr(err.message, "params.shear") != NULL);
	CHECK(memcmp(&before, &after, sizeof before) == 0);
}

/* Three triangles on one edge, an unreferenced vertex and a zero-area
 * triangle: counted, simulated without NaN. */
static void test_odd_meshes(void)
{
	float pos[] = {0, 0, 0, 1, 0, 0, 0.5f, 1, 0, 0.5f, -1, 0, 0.5f, 0, 1,
		       /* unreferenced */ 3, 3, 3,
		       /* collinear triangle 6, 7, 8 sharing vertex 1 */ 2, 0, 0, 3, 0, 0};
	uint32_t tri[] = {0, 1, 2, 1, 0, 3, 0, 1, 4, 1, 6, 7, 1, 2, 6};
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = 8;
	d.triangles = tri;
	d.triangle_count = 5;
	d.params.wind[0] = 5.0f;
	d.params.wind[2] = 3.0f;
	uint32_t pin = 2;
	d.pins = &pin;
	d.pin_count = 1;
	drape_sim *sim = NULL;
	drape_error err;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	drape_sim_topology t;
	drape_sim_get_topology(sim, &t);
	CHECK(t.nonmanifold_edges == 1);
	CHECK(t.zero_area_triangles == 1);
	CHECK(t.unreferenced_vertices == 1);
	CHECK(t.pinned_vertices == 1);
	CHECK(t.edges == 11);
	/* Interior edges: (1,2) with wings 0 and 6 -> one bend; (1,6) has the
	 * zero-area triangle so it gets a shear record but no bend. */
	CHECK(t.bends == 1);
	int ok = 1;
	drape_sim_stats st;
	for (int f = 0; f < 100 && ok; f++)
		ok = drape_sim_step(sim, &st, &err) == DRAPE_OK && st.nonfinite == 0;
	float x[24];
	drape_sim_get_positions(sim, x);
	drape_sim_destroy(sim);
	CHECKF(ok, "step failed: %s", err.message);
	for (int i = 0; i < 24; i++)
		CHECK(isfinite(x[i]));
	CHECK(x[3 * 5 + 1] < -10.0f); /* the unreferenced vertex fell freely */
}

/* get_state / set_state continue bit-identically; a NaN step is refused. */
static void test_state_round_trip(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -0.3f, 1};
	CHECK(grid_make(&g, 10, 10, o, u, v));
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[2] = {0, 9};
	d.pins = pins;
	d.pin_count = 2;
	d.params.wind[2] = 4.0f;
	size_t nb = (size_t)g.nv * 3 * sizeof(float);
	float *xs = malloc(nb), *vs = malloc(nb), *a = malloc(nb), *b = malloc(nb);
	drape_sim *s1 = NULL, *s2 = NULL;
	CHECK_OK(drape_sim_create(&d, &s1, NULL));
	CHECK_OK(drape_sim_create(&d, &s2, NULL));
	for (int f = 0; f < 30; f++)
		CHECK_OK(drape_sim_step(s1, NULL, NULL));
	uint32_t frame = 0;
	drape_sim_get_state(s1, xs, vs, &frame);
	CHECK(frame == 30);
	CHECK_OK(drape_sim_set_state(s2, xs, vs, frame, NULL));
	for (int f = 0; f < 30; f++) {
		CHECK_OK(drape_sim_step(s1, NULL, NULL));
		CHECK_OK(drape_sim_step(s2, NULL, NULL));
	}
	drape_sim_get_positions(s1, a);
	drape_sim_get_positions(s2, b);
	CHECK(memcmp(a, b, nb) == 0);
	CHECK(drape_sim_frame(s2) == 60);

	/* Bad state is refused and changes nothing. */
	memcpy(xs, a, nb);
	xs[7] = NAN;
	drape_error err;
	CHECK(drape_sim_set_state(s2, xs, vs, 5, &err) == DRAPE_ENONFINITE);
	CHECK(strstr(err.message, "xyz[2][1]") != NULL);
	drape_sim_get_positions(s2, b);
	CHECK(memcmp(a, b, nb) == 0 && drape_sim_frame(s2) == 60);

	/* An absurd gravity overflows to Inf/NaN: the step is refused and the
	 * previous frame's state stays. */
	drape_sim_params p;
	drape_sim_get_params(s2, &p);
	p.gravity[1] = -3e38f;
	CHECK_OK(drape_sim_set_params(s2, &p, NULL));
	drape_sim_stats st;
	CHECK(drape_sim_step(s2, &st, &err) == DRAPE_ENONFINITE);
	CHECK(st.nonfinite > 0);
	drape_sim_get_positions(s2, b);
	CHECK(memcmp(a, b, nb) == 0 && drape_sim_frame(s2) == 60);
	drape_sim_destroy(s1);
	drape_sim_destroy(s2);
	free(xs);
	free(vs);
	free(a);
	free(b);
	grid_free(&g);
}

/* ---- long-range attachments ------------------------------------------------ */

/* Each free vertex of a sheet hanging from its top row is tethered to the pin
 * straight above it at the distance along the mesh; the projection is
 * unilateral and moves only the free vertex. */
static void test_long_range(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -1, 0};
	CHECK(grid_make(&g, 8, 8, o, u, v));
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	d.pins = pins;
	d.pin_count = 8;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, NULL));
	drape_sim_topology t;
	drape_sim_get_topology(sim, &t);
	int ok = t.long_range == 56 && sim->lra_count == 56;
	/* Records are in the solver's internal vertex order; sim->order maps
	 * them back to the grid's (caller's) indices. */
	for (uint32_t r = 0; ok && r < sim->lra_count; r++) {
		const sim_dist *c = &sim->lra[r];
		uint32_t a = sim->order ? sim->order[c->a] : c->a;
		uint32_t b = sim->order ? sim->order[c->b] : c->b;
		uint32_t i = a % 8, j = a / 8;
		ok = b == i && fabsf(c->rest - (float)j / 7.0f) < 1e-5f;
	}
	drape_sim_destroy(sim);
	grid_free(&g);
	CHECK(ok);

	sim_vec4 p[2] = {{0, 0, 0, 0}, {0, -0.5f, 0, 1}};
	sim_dist c = {1, 0, 1.0f};
	sim_vec4 inside = p[1];
	sim_lra_project_all(p, &c, 1);
	CHECK(memcmp(&p[1], &inside, sizeof inside) == 0); /* within its tether: untouched */
	p[1] = (sim_vec4){0.3f, -1.6f, 0.2f, 1};
	sim_vec4 pin = p[0];
	sim_lra_project_all(p, &c, 1);
	CHECK(memcmp(&p[0], &pin, sizeof pin) == 0);
	CHECK_NEAR(v3_len(v3_of4(p[1])), 1.0, 1e-6);
}

/* The strain limit shortens only edges longer than smax times their rest
 * length, to exactly that, split by inverse masses; a pinned end stays. */
static void test_strain_limit_kernel(void)
{
	const float smax = 1.0f + SIM_STRAIN_LIMIT;
	sim_dist c[3] = {{0, 1, 1.0f}, {2, 3, 1.0f}, {4, 5, 1.0f}};
	uint32_t start[4] = {0, 1, 2, 3};
	sim_colouring col = {start, 3, 0};
	sim_vec4 p[6] = {
		{0, 0, 0, 1}, {1.005f, 0, 0, 1},     /* within the limit */
		{0, 0, 0, 1}, {0.9f, 0, 0, 1},       /* compressed */
		{0, 0, 0, 0}, {0, -1.5f, 0.2f, 1},   /* pinned a, over the limit */
	};
	sim_vec4 before[6];
	memcpy(before, p, sizeof p);
	sim_strain_limit_project_all(p, c, &col, smax);
	CHECK(memcmp(p, before, 4 * sizeof *p) == 0);
	CHECK(memcmp(&p[4], &before[4], sizeof *p) == 0);
	CHECK_NEAR(v3_len(v3_of4(p[5])), smax, 1e-6);
	/* Moved along the edge: the direction from the pin is kept. */
	CHECK_NEAR(p[5].z / p[5].y, 0.2 / -1.5, 1e-6);

	/* Equal masses: both ends move by half, the midpoint stays. */
	sim_dist e = {0, 1, 1.0f};
	uint32_t s1[2] = {0, 1};
	sim_colouring one = {s1, 1, 0};
	sim_vec4 q[2] = {{0, 0, 0, 2}, {1.5f, 0, 0, 2}};
	sim_strain_limit_project_all(q, &e, &one, smax);
	CHECK_NEAR(q[1].x - q[0].x, smax, 1e-6);
	CHECK_NEAR(0.5 * (q[0].x + q[1].x), 0.75, 1e-6);
}

static void test_build_and_defaults(void)
{
	/* The name reports the wide-float layer the library was built with
	 * (SIMD=avx512 compiles the solver, not this file, for AVX-512). */
#if defined(DRAPE_SIMD_avx512) && defined(__AVX2__)
	CHECK(strcmp(drape_sim_build(), "avx512") == 0);
#elif defined(DRAPE_SIMD_avx2) && defined(__AVX2__)
	CHECK(strcmp(drape_sim_build(), "avx2") == 0);
#elif (defined(DRAPE_SIMD_avx2) || defined(DRAPE_SIMD_sse2)) && defined(__SSE2__)
	CHECK(strcmp(drape_sim_build(), "sse2") == 0);
#else
	CHECK(strcmp(drape_sim_build(), "scalar") == 0);
#endif
	drape_sim_params p;
	drape_sim_params_default(&p);
	CHECK_OK(drape_sim_params_validate(&p, NULL));
	CHECK(p.fps == 24.0f && p.substeps == 4 && p.iterations == 10 && p.damping == 0.99f);
	/* k' for n projections removes k per frame: 1 - (1 - k')^n = k. */
	float kp = sim_stiffness(0.3f, 80);
	CHECK_NEAR(1.0 - pow(1.0 - kp, 80), 0.3, 1e-5);
	CHECK(sim_stiffness(1.0f, 80) == 1.0f && sim_stiffness(0.0f, 80) == 0.0f);
}

static const check_test tests[] = {
	CHECK_TEST(test_bend_gradient_fd),
	CHECK_TEST(test_bend_degenerate_finite),
	CHECK_TEST(test_stretch_projection),
	CHECK_TEST(test_pins_bit_identical),
	CHECK_TEST(test_stiffness_fraction),
	CHECK_TEST(test_determinism),
	CHECK_TEST(test_wind_side),
	CHECK_TEST(test_bad_input),
	CHECK_TEST(test_odd_meshes),
	CHECK_TEST(test_state_round_trip),
	CHECK_TEST(test_long_range),
	CHECK_TEST(test_strain_limit_kernel),
	CHECK_TEST(test_build_and_defaults),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
