/*
 * Properties painted per vertex (drape_sim_desc.stiffness_scale,
 * vertex_thickness, vertex_friction; server/sim/vertexprops.c) against
 * physics:
 *
 *  - springs in series: a hanging strip whose lower half is four times
 *    stiffer; each half's elongation against the integral of the tension
 *    over its own stiffness, T(y) / (k(y) w) with T(y) = F + rho g w (L - y);
 *  - Coulomb friction on an incline of tan(theta) = 0.4: the piece whose
 *    vertices have mu = 0.8 stays, the piece with mu = 0.2 slides with
 *    a = g (sin theta - mu cos theta), both on one collider whose own
 *    friction (0.5) would hold both;
 *  - thickness per vertex: a sheet resting on a plane, its two halves at
 *    4 and 12 mm, each resting at its own thickness;
 *  - both again on a deforming mesh collider (a slab solved against its
 *    triangles), which takes the vertices' values the same way;
 *  - refusals naming the field, and bit-identical results across thread
 *    counts.
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

#define G 9.81

/* Lumped masses (a third of each triangle's area times rho) as inverse
 * masses, plus `extra` kg on each vertex of the bottom row. */
static float *lumped_inv_mass(const grid *g, float rho, double extra)
{
	double *m = calloc(g->nv, sizeof *m);
	float *w = malloc(g->nv * sizeof *w);
	if (m == NULL || w == NULL) {
		free(m);
		free(w);
		return NULL;
	}
	for (uint32_t t = 0; t < g->nt; t++) {
		const uint32_t *v = &g->tri[3 * t];
		double e1[3], e2[3];
		for (int k = 0; k < 3; k++) {
			e1[k] = g->pos[3 * v[1] + k] - g->pos[3 * v[0] + k];
			e2[k] = g->pos[3 * v[2] + k] - g->pos[3 * v[0] + k];
		}
		double cx = e1[1] * e2[2] - e1[2] * e2[1], cy = e1[2] * e2[0] - e1[0] * e2[2],
		       cz = e1[0] * e2[1] - e1[1] * e2[0];
		double area = 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
		for (int k = 0; k < 3; k++)
			m[v[k]] += rho * area / 3.0;
	}
	for (uint32_t i = 0; i < g->nx; i++)
		m[(g->ny - 1) * g->nx + i] += extra;
	for (uint32_t i = 0; i < g->nv; i++)
		w[i] = (float)(1.0 / m[i]);
	free(m);
	return w;
}

/* The tension integral of a hanging strip between depths a and b:
 * int_a^b F + rho g w (L - y) dy. */
static double tension_integral(double F, double rho, double w, double L, double a, double b)
{
	return F * (b - a) + rho * G * w * ((L - a) * (L - a) - (L - b) * (L - b)) / 2.0;
}

/*
 * A 10 cm x 1 m strip (5 x 41 vertices, 2.5 cm rows, top row pinned)
 * of k = 250 N/m and 0.3 kg/m^2 carrying 0.39 N at its bottom, rows
 * 21..40 at stiffness_scale (4, 4, 4). Under the harmonic-mean rule the edges
 * between rows 20 and 21 are a half of each in series, so the interface
 * is at y_i = 20.5 rows: the top half (rows 0..20, y = 0..0.5 m)
 * stretches by int_0^0.5 T / (k w), the lower half by
 * int_0.5^y_i T / (k w) + int_y_i^L T / (4 k w). Converged settings
 * (16 x 40) as in test_sim_material.c's tensile test, 5 % as there (its
 * stiff half at 1000 N/m, the stiffness that test converges at).
 */
static void test_series_springs(void)
{
	const float w = 0.1f, L = 1.0f, rho = 0.3f, k = 250.0f;
	const uint32_t nx = 5, ny = 41;
	const double M = 0.04, F = M * G, h = L / (ny - 1), yi = 20.5 * h;
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {w, 0, 0}, v[3] = {0, -L, 0};
	CHECK(grid_make(&g, nx, ny, o, u, v));
	float *inv = lumped_inv_mass(&g, rho, M / nx);
	float *scale = malloc(3 * g.nv * sizeof *scale);
	float *x = malloc(g.nv * 3 * sizeof *x);
	uint32_t pins[5] = {0, 1, 2, 3, 4};
	CHECK(inv && scale && x);
	for (uint32_t j = 0; j < ny; j++)
		for (uint32_t i = 0; i < nx; i++)
			for (int q = 0; q < 3; q++)
				scale[3 * (j * nx + i) + q] = j <= 20 ? 1.0f : 4.0f;
	double got[2][2]; /* [uniform, painted][top half, lower half] */
	for (int painted = 0; painted < 2; painted++) {
		drape_sim_desc d;
		desc_from_grid(&d, &g);
		drape_sim_params_default(&d.params);
		d.params.model = DRAPE_MODEL_XPBD;
		d.params.stretch_k = k;
		d.params.shear_k = k / 100.0f;
		d.params.bend_k = 0.0f;
		d.params.density = rho;
		d.params.damping_rate = 4.0f;
		d.params.drag = d.params.lift = 0.0f;
		d.params.substeps = 16;
		d.params.iterations = 40;
		d.inv_mass = inv;
		d.pins = pins;
		d.pin_count = nx;
		d.stiffness_scale = painted ? scale : NULL;
		drape_sim *sim = NULL;
		drape_error err;
		CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
		double top = 0.0, low = 0.0;
		const int frames = 96, avg = 24;
		for (int f = 0; f < frames; f++) {
			CHECK(drape_sim_step(sim, NULL, NULL) == DRAPE_OK);
			if (f < frames - avg)
				continue;
			drape_sim_get_positions(sim, x);
			for (uint32_t i = 0; i < nx; i++) {
				double y20 = x[3 * (20 * nx + i) + 1], y40 = x[3 * (40 * nx + i) + 1];
				top += (-0.5 - y20) / (nx * avg);
				low += ((y20 - y40) - 0.5) / (nx * avg);
			}
		}
		drape_sim_destroy(sim);
		got[painted][0] = top;
		got[painted][1] = low;
	}
	const double kw = (double)k * w;
	const double want_top = tension_integral(F, rho, w, L, 0.0, 0.5) / kw;
	const double want_low = tension_integral(F, rho, w, L, 0.5, yi) / kw +
				tension_integral(F, rho, w, L, yi, L) / (4.0 * kw);
	const double uniform_low = tension_integral(F, rho, w, L, 0.5, L) / kw;
	printf("  uniform strip: top half %.3f mm, lower half %.3f mm (theory %.3f, %.3f)\n",
	       got[0][0] * 1e3, got[0][1] * 1e3, want_top * 1e3, uniform_low * 1e3);
	printf("  lower half 4x stiffer: top half %.3f mm (theory %.3f, %+.1f %%), lower half "
	       "%.3f mm (series theory %.3f, %+.1f %%)\n",
	       got[1][0] * 1e3, want_top * 1e3, (got[1][0] / want_top - 1.0) * 100.0, got[1][1] * 1e3,
	       want_low * 1e3, (got[1][1] / want_low - 1.0) * 100.0);
	CHECKF(fabs(got[1][0] / want_top - 1.0) < 0.05, "top half %.4f mm, theory %.4f mm",
	       got[1][0] * 1e3, want_top * 1e3);
	CHECKF(fabs(got[1][1] / want_low - 1.0) < 0.05, "lower half %.4f mm, theory %.4f mm",
	       got[1][1] * 1e3, want_low * 1e3);
	/* The uniform strip as the control: the discretisation's own error
	 * (the lumped bottom row, the narrowing under load) cancels in the
	 * ratio of the two lower halves, which theory puts at want_low /
	 * uniform_low. */
	const double ratio = got[1][1] / got[0][1], want_ratio = want_low / uniform_low;
	printf("  lower halves painted / uniform %.4f, theory %.4f (%+.1f %%)\n", ratio, want_ratio,
	       (ratio / want_ratio - 1.0) * 100.0);
	CHECKF(fabs(got[0][1] / uniform_low - 1.0) < 0.10, "uniform lower half %.4f mm, theory %.4f mm",
	       got[0][1] * 1e3, uniform_low * 1e3);
	CHECKF(fabs(ratio / want_ratio - 1.0) < 0.05, "ratio %.4f, theory %.4f", ratio, want_ratio);
	free(inv);
	free(scale);
	free(x);
	grid_free(&g);
}

/* Two separate square pieces, `n` x `n` vertices of side `s`, side by
 * side along z with a gap, lying on the plane through the origin with
 * normal nrm, `lift` above it; slope the in-plane direction along x. */
static int two_pieces(grid *g, uint32_t n, float s, const float slope[3], const float nrm[3],
		      float lift)
{
	grid a;
	const float zero[3] = {0, 0, 0}, u[3] = {slope[0] * s, slope[1] * s, slope[2] * s},
		    v[3] = {0, 0, s};
	if (!grid_make(&a, n, n, zero, u, v)) {
		grid_free(&a);
		return 0;
	}
	g->nx = n;
	g->ny = 2 * n;
	g->nv = 2 * a.nv;
	g->nt = 2 * a.nt;
	g->pos = malloc(3 * (size_t)g->nv * sizeof *g->pos);
	g->tri = malloc(3 * (size_t)g->nt * sizeof *g->tri);
	if (g->pos == NULL || g->tri == NULL) {
		grid_free(&a);
		return 0;
	}
	for (int piece = 0; piece < 2; piece++) {
		/* Piece 0 at z in [-s - 2 cm, -2 cm], piece 1 at [2 cm, s + 2 cm]. */
		float dz = piece ? 0.02f : -s - 0.02f;
		for (uint32_t i = 0; i < a.nv; i++)
			for (int c = 0; c < 3; c++)
				g->pos[3 * (piece * a.nv + i) + c] =
					a.pos[3 * i + c] + lift * nrm[c] + (c == 2 ? dz : 0.0f);
		for (uint32_t t = 0; t < 3 * a.nt; t++)
			g->tri[piece * 3 * a.nt + t] = a.tri[t] + piece * a.nv;
	}
	grid_free(&a);
	return 1;
}

/*
 * A deforming mesh collider (solved against its moving triangles, not a
 * field): a 4 x 0.2 x 1 m slab whose top face is the plane through the
 * origin with normal (-sin th, cos th, 0), held still (one animation pose,
 * the rest pose). pos holds 8 * 3 floats, tri 12 * 3 indices.
 */
static void slab(drape_collider_desc *cd, float pos[24], uint32_t tri[36], double th)
{
	static const uint32_t t[36] = {0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
				       2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6};
	const double c = cos(th), sn = sin(th);
	for (int i = 0; i < 8; i++) {
		double lx = (i & 1) ? 2.0 : -2.0, ly = (i & 2) ? 0.0 : -0.2, lz = (i & 4) ? 0.6 : -0.6;
		pos[3 * i] = (float)(c * lx - sn * ly);
		pos[3 * i + 1] = (float)(sn * lx + c * ly);
		pos[3 * i + 2] = (float)lz;
	}
	memcpy(tri, t, sizeof t);
	drape_collider_desc_default(cd);
	cd->shape = DRAPE_SHAPE_MESH;
	cd->vertices = pos;
	cd->vertex_count = 8;
	cd->triangles = tri;
	cd->triangle_count = 12;
	cd->frames = pos;
	cd->frame_count = 1;
}

/*
 * Coulomb on an incline: tan(theta) = 0.4. The piece at mu = 0.8 must not
 * move (under 1 mm in a second); the piece at mu = 0.2 slides with
 * a = g (sin theta - mu cos theta) = 1.82 m/s^2, so 0.91 m in the second
 * (within 10 %: PBD's friction acts on each substep's displacement).
 * The collider's own friction, 0.5 with static 0.5, would hold both.
 */
static void friction_incline(int deforming)
{
	const double th = atan(0.4);
	const float slope[3] = {(float)cos(th), (float)sin(th), 0.0f};
	const float nrm[3] = {(float)-sin(th), (float)cos(th), 0.0f};
	const float thick = 0.005f;
	grid g;
	CHECK(two_pieces(&g, 11, 0.2f, slope, nrm, thick));
	float *fric = malloc(g.nv * sizeof *fric), *x0 = malloc(3 * g.nv * sizeof *x0),
	      *x = malloc(3 * g.nv * sizeof *x);
	CHECK(fric && x0 && x);
	const uint32_t half = g.nv / 2;
	for (uint32_t i = 0; i < g.nv; i++)
		fric[i] = i < half ? 0.8f : 0.2f;
	memcpy(x0, g.pos, 3 * g.nv * sizeof *x0);
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	d.params.damping = 1.0f;
	d.params.drag = d.params.lift = 0.0f;
	d.params.thickness = thick;
	d.params.bend = 0.0f;
	d.vertex_friction = fric;
	drape_sim *sim = NULL;
	drape_error err;
	CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
	drape_collider_desc cd;
	float sp[24];
	uint32_t st[36];
	if (deforming) {
		slab(&cd, sp, st, th);
	} else {
		drape_collider_desc_default(&cd);
		cd.shape = DRAPE_SHAPE_PLANE;
		memcpy(cd.normal, nrm, sizeof cd.normal);
	}
	cd.friction = 0.5f;
	cd.static_friction = 0.5f;
	CHECKF(drape_sim_add_collider(sim, &cd, NULL, &err) == DRAPE_OK, "%s", err.message);
	CHECK(drape_sim_collider_kind(sim, 0) ==
	      (deforming ? DRAPE_COLLIDER_SURFACE : DRAPE_COLLIDER_SHAPE));
	const int frames = 24;
	for (int f = 0; f < frames; f++)
		CHECK(drape_sim_step(sim, NULL, NULL) == DRAPE_OK);
	drape_sim_get_positions(sim, x);
	drape_sim_destroy(sim);
	double move[2] = {0, 0};
	for (uint32_t i = 0; i < g.nv; i++) {
		double dd = 0.0;
		for (int c = 0; c < 3; c++)
			dd += (double)(x[3 * i + c] - x0[3 * i + c]) * slope[c];
		move[i >= half] += dd / half;
	}
	const double t = frames / 24.0;
	const double want = -0.5 * G * (sin(th) - 0.2 * cos(th)) * t * t;
	printf("  incline tan 0.4 (%s), 1 s: mu 0.8 piece moved %.3f mm; mu 0.2 piece %.1f mm down "
	       "the slope (Coulomb %.1f mm, %+.1f %%)\n",
	       deforming ? "deforming mesh" : "plane", move[0] * 1e3, move[1] * 1e3, want * 1e3,
	       (move[1] / want - 1.0) * 100.0);
	CHECKF(fabs(move[0]) < 1e-3, "the mu = 0.8 piece moved %.4f m", move[0]);
	CHECKF(fabs(move[1] / want - 1.0) < 0.10, "the mu = 0.2 piece moved %.4f m, Coulomb %.4f m",
	       move[1], want);
	free(fric);
	free(x0);
	free(x);
	grid_free(&g);
}

static void test_friction_incline(void)
{
	friction_incline(0);
}

static void test_friction_incline_deforming(void)
{
	friction_incline(1);
}

/*
 * A 30 x 30 cm sheet (31 x 31 vertices) dropped 3 cm onto the plane y = 0:
 * the vertices with x < 0.15 at 4 mm, the others at 12 mm. After 2 s each
 * half, away from the three columns at the step, rests at its own
 * thickness (0.3 mm).
 */
static void thickness_rest_height(int deforming)
{
	grid g;
	const float o[3] = {0, 0.03f, 0}, u[3] = {0.3f, 0, 0}, v[3] = {0, 0, 0.3f};
	CHECK(grid_make(&g, 31, 31, o, u, v));
	float *th = malloc(g.nv * sizeof *th), *x = malloc(3 * g.nv * sizeof *x);
	CHECK(th && x);
	for (uint32_t j = 0; j < 31; j++)
		for (uint32_t i = 0; i < 31; i++)
			th[j * 31 + i] = i < 15 ? 0.004f : 0.012f;
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	d.params.thickness = 0.004f;
	d.vertex_thickness = th;
	drape_sim *sim = NULL;
	drape_error err;
	CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
	drape_collider_desc cd;
	float sp[24];
	uint32_t st[36];
	if (deforming) {
		slab(&cd, sp, st, 0.0);
	} else {
		drape_collider_desc_default(&cd);
		cd.shape = DRAPE_SHAPE_PLANE;
	}
	CHECKF(drape_sim_add_collider(sim, &cd, NULL, &err) == DRAPE_OK, "%s", err.message);
	for (int f = 0; f < 48; f++)
		CHECK(drape_sim_step(sim, NULL, NULL) == DRAPE_OK);
	drape_sim_get_positions(sim, x);
	drape_sim_destroy(sim);
	double lo[2] = {1e9, 1e9}, hi[2] = {-1e9, -1e9};
	for (uint32_t j = 0; j < 31; j++)
		for (uint32_t i = 0; i < 31; i++) {
			if (i >= 13 && i <= 16)
				continue;
			int s = i >= 15;
			double y = x[3 * (j * 31 + i) + 1];
			lo[s] = y < lo[s] ? y : lo[s];
			hi[s] = y > hi[s] ? y : hi[s];
		}
	printf("  rest heights (%s): 4 mm half %.3f..%.3f mm, 12 mm half %.3f..%.3f mm\n",
	       deforming ? "deforming mesh" : "plane", lo[0] * 1e3, hi[0] * 1e3, lo[1] * 1e3,
	       hi[1] * 1e3);
	CHECKF(fabs(lo[0] - 0.004) < 3e-4 && fabs(hi[0] - 0.004) < 3e-4, "4 mm half %.5f..%.5f",
	       lo[0], hi[0]);
	CHECKF(fabs(lo[1] - 0.012) < 3e-4 && fabs(hi[1] - 0.012) < 3e-4, "12 mm half %.5f..%.5f",
	       lo[1], hi[1]);
	free(th);
	free(x);
	grid_free(&g);
}

static void test_thickness_rest_height(void)
{
	thickness_rest_height(0);
}

static void test_thickness_rest_height_deforming(void)
{
	thickness_rest_height(1);
}

/* Bad arrays are refused naming the field and index; nothing is made. */
static void test_bad_props_refused(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	CHECK(grid_make(&g, 4, 4, o, u, v));
	float a[48];
	for (int i = 0; i < 48; i++)
		a[i] = 1.0f;
	drape_sim_desc d;
	drape_sim *sim = NULL;
	drape_error err;

	desc_from_grid(&d, &g);
	d.stiffness_scale = a;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECKF(strstr(err.message, "stiffness_scale: needs the physical material") != NULL, "%s",
	       err.message);
	d.params.model = DRAPE_MODEL_XPBD;
	a[11] = 0.0f;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECKF(strstr(err.message, "stiffness_scale[3][2]") != NULL, "%s", err.message);
	a[11] = 1.0f;

	desc_from_grid(&d, &g);
	a[5] = NAN;
	d.vertex_thickness = a;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECKF(strstr(err.message, "vertex_thickness[5]") != NULL, "%s", err.message);
	a[5] = 2.0f;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECKF(strstr(err.message, "vertex_thickness[5]") != NULL, "%s", err.message);
	a[5] = 1.0f;

	desc_from_grid(&d, &g);
	a[7] = -0.5f;
	d.vertex_friction = a;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECKF(strstr(err.message, "vertex_friction[7]") != NULL, "%s", err.message);
	a[7] = -1.0f; /* the collider's */
	CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
	drape_sim_destroy(sim);
	grid_free(&g);
}

/* The painted strip and the incline give the same bits on 1 and 3
 * threads. */
static void test_props_deterministic(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {0.5f, 0, 0}, v[3] = {0, -1, 0};
	CHECK(grid_make(&g, 33, 65, o, u, v));
	float *scale = malloc(3 * g.nv * sizeof *scale), *fr = malloc(g.nv * sizeof *fr),
	      *th = malloc(g.nv * sizeof *th);
	float *out[2] = {malloc(3 * g.nv * sizeof(float)), malloc(3 * g.nv * sizeof(float))};
	CHECK(scale && fr && th && out[0] && out[1]);
	for (uint32_t i = 0; i < g.nv; i++) {
		for (int k = 0; k < 3; k++)
			scale[3 * i + k] = 0.5f + (float)((i + k) % 7);
		fr[i] = (i % 3) ? -1.0f : 0.9f;
		th[i] = 0.002f + 0.001f * (float)(i % 5);
	}
	uint32_t pins[2] = {0, 32};
	for (int r = 0; r < 2; r++) {
		drape_pool *pool = NULL;
		if (r == 1)
			CHECK(drape_pool_create(3, &pool, NULL) == DRAPE_OK);
		drape_sim_desc d;
		desc_from_grid(&d, &g);
		d.params.model = DRAPE_MODEL_XPBD;
		d.params.stretch_k = 500.0f;
		d.params.shear_k = 5.0f;
		d.params.bend_k = 1e-5f;
		d.pins = pins;
		d.pin_count = 2;
		d.stiffness_scale = scale;
		d.vertex_friction = fr;
		d.vertex_thickness = th;
		d.pool = pool;
		drape_sim *sim = NULL;
		CHECK(drape_sim_create(&d, &sim, NULL) == DRAPE_OK);
		drape_collider_desc cd;
		drape_collider_desc_default(&cd);
		cd.shape = DRAPE_SHAPE_SPHERE;
		cd.center[0] = 0.25f;
		cd.center[1] = -0.6f;
		cd.center[2] = -0.2f;
		cd.radius = 0.25f;
		CHECK(drape_sim_add_collider(sim, &cd, NULL, NULL) == DRAPE_OK);
		for (int f = 0; f < 12; f++)
			CHECK(drape_sim_step(sim, NULL, NULL) == DRAPE_OK);
		drape_sim_get_positions(sim, out[r]);
		drape_sim_destroy(sim);
		drape_pool_destroy(pool);
	}
	CHECK(memcmp(out[0], out[1], 3 * g.nv * sizeof(float)) == 0);
	free(scale);
	free(fr);
	free(th);
	free(out[0]);
	free(out[1]);
	grid_free(&g);
}

static const check_test tests[] = {
	CHECK_TEST(test_series_springs),
	CHECK_TEST(test_friction_incline),
	CHECK_TEST(test_friction_incline_deforming),
	CHECK_TEST(test_thickness_rest_height),
	CHECK_TEST(test_thickness_rest_height_deforming),
	CHECK_TEST(test_bad_props_refused),
	CHECK_TEST(test_props_deterministic),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
