/*
 * Friction against a body, tested against Coulomb's law (issue 17: an
 * unpinned garment holds on its body by contact and friction only).
 *
 * A tube of cloth stretched over a vertical cylinder: rest radius R0, worn
 * at the contact radius Rc = R + thickness, so its hoop strain is
 * eps = Rc / R0 - 1 and its hoop tension T = k eps (k the membrane
 * stiffness of a strip free to narrow, which compliance.c calibrates; the
 * tube is free along its axis, so the hoop is such a strip). The tension
 * presses the cloth on the cylinder with p = T / Rc, so friction can hold
 * mu p per unit area against the weight rho g R0 / Rc per unit area of
 * the worn tube (its mass is rho times its rest area 2 pi R0 H):
 *
 *     it holds when mu >= mu* = rho g R0 / (k eps),
 *
 * and otherwise slides with the acceleration g (1 - mu / mu*) (kinetic
 * friction mu p). Both are independent of the tube's height. The tests
 * bracket the threshold (1.2 mu* holds, 0.8 mu* slides), check the slide's
 * rate at mu* / 2, and the free fall without friction. Measured: after
 * 1 s the tube dropped 1,563, 1,070, 579, 89 mm at 0.6, 0.7, 0.8, 0.9 mu*,
 * and 1.9, 0.9, 0.6 mm at 1.0, 1.1, 1.2 mu*.
 */
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"

#define TUBE_AROUND 32
#define TUBE_ROWS 10
#define TUBE_R 0.1f      /* cylinder radius, m */
#define TUBE_TH 0.004f   /* cloth thickness: contact at R + TUBE_TH */
#define TUBE_EPS 0.05    /* hoop strain of the worn tube */
#define TUBE_K 10.0f     /* membrane stiffness, N/m */
#define TUBE_RHO 0.2f    /* areal density, kg/m^2 */
#define TUBE_G 9.81

typedef struct tube {
	float rest[3 * TUBE_AROUND * TUBE_ROWS];
	float pos[3 * TUBE_AROUND * TUBE_ROWS];
	uint32_t tri[6 * TUBE_AROUND * (TUBE_ROWS - 1)];
	uint32_t nv, nt;
} tube;

static double contact_radius(void)
{
	return (double)TUBE_R + TUBE_TH;
}

static double rest_radius(void)
{
	return contact_radius() / (1.0 + TUBE_EPS);
}

/* mu* = rho g R0 / (k eps) (file comment). */
static double mu_star(void)
{
	return TUBE_RHO * TUBE_G * rest_radius() / (TUBE_K * TUBE_EPS);
}

/* A desc for the cloth (pos, rest, tri) in the physical model: membrane
 * stiffness k (N/m, shear k / 10, next to no bending), density rho
 * (kg/m^2), thickness th (m); the other settings the defaults. */
static void xpbd_desc(drape_sim_desc *d, float *pos, float *rest, uint32_t nv, uint32_t *tri, uint32_t nt,
		      double k, double rho, double th)
{
	drape_sim_desc_default(d);
	d->positions = pos;
	d->rest_positions = rest;
	d->vertex_count = nv;
	d->triangles = tri;
	d->triangle_count = nt;
	d->params.model = DRAPE_MODEL_XPBD;
	d->params.stretch_k = (float)k;
	d->params.shear_k = (float)(k / 10.0);
	d->params.bend_k = 1e-7f;
	d->params.density = (float)rho;
	d->params.thickness = (float)th;
}

/* Creates the sim of d around a capsule of radius r from a to b with
 * friction mu (static and kinetic) and steps it `frames` frames, the last
 * frame's statistics in *st (may be NULL). Returns the sim, or NULL after
 * printing why. */
static drape_sim *run_on_capsule(const drape_sim_desc *d, float r, const float a[3], const float b[3], double mu,
				 int frames, drape_sim_stats *st)
{
	drape_sim *sim = NULL;
	drape_error err;
	if (drape_sim_create(d, &sim, &err) != DRAPE_OK) {
		printf("  create: %s\n", err.message);
		return NULL;
	}
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_CAPSULE;
	c.radius = r;
	memcpy(c.a, a, sizeof c.a);
	memcpy(c.b, b, sizeof c.b);
	c.friction = (float)mu;
	c.static_friction = (float)mu;
	if (drape_sim_add_collider(sim, &c, NULL, &err) != DRAPE_OK) {
		printf("  collider: %s\n", err.message);
		drape_sim_destroy(sim);
		return NULL;
	}
	for (int f = 0; f < frames; f++)
		if (drape_sim_step(sim, st, &err) != DRAPE_OK) {
			printf("  step: %s\n", err.message);
			drape_sim_destroy(sim);
			return NULL;
		}
	return sim;
}

/* Square cells at rest (the calibration of compliance.c), alternating
 * diagonals; rows downwards from y = 0. */
static void tube_make(tube *t)
{
	const double r0 = rest_radius(), rc = contact_radius();
	const double h = 2.0 * M_PI * r0 / TUBE_AROUND;
	t->nv = TUBE_AROUND * TUBE_ROWS;
	for (uint32_t j = 0; j < TUBE_ROWS; j++)
		for (uint32_t i = 0; i < TUBE_AROUND; i++) {
			double a = 2.0 * M_PI * i / TUBE_AROUND;
			uint32_t v = j * TUBE_AROUND + i;
			t->rest[3 * v] = (float)(r0 * cos(a));
			t->rest[3 * v + 1] = (float)(-h * j);
			t->rest[3 * v + 2] = (float)(r0 * sin(a));
			t->pos[3 * v] = (float)(rc * cos(a));
			t->pos[3 * v + 1] = (float)(-h * j);
			t->pos[3 * v + 2] = (float)(rc * sin(a));
		}
	t->nt = 0;
	for (uint32_t j = 0; j + 1 < TUBE_ROWS; j++)
		for (uint32_t i = 0; i < TUBE_AROUND; i++) {
			uint32_t a = j * TUBE_AROUND + i, b = j * TUBE_AROUND + (i + 1) % TUBE_AROUND;
			uint32_t c = a + TUBE_AROUND, d = b + TUBE_AROUND;
			uint32_t *q = &t->tri[3 * t->nt];
			if ((i + j) % 2 == 0) {
				q[0] = a, q[1] = b, q[2] = d, q[3] = a, q[4] = d, q[5] = c;
			} else {
				q[0] = a, q[1] = b, q[2] = c, q[3] = b, q[4] = d, q[5] = c;
			}
			t->nt += 2;
		}
}

/* Runs the tube on the cylinder with friction mu (static and kinetic) for
 * `frames` frames at 24 fps and returns the mean drop of its vertices (m),
 * or NAN on failure. */
static double tube_drop(double mu, int frames)
{
	static tube t;
	tube_make(&t);
	drape_sim_desc d;
	xpbd_desc(&d, t.pos, t.rest, t.nv, t.tri, t.nt, TUBE_K, TUBE_RHO, TUBE_TH);
	const float a[3] = {0.0f, -3.0f, 0.0f}, b[3] = {0.0f, 1.0f, 0.0f};
	drape_sim *sim = run_on_capsule(&d, TUBE_R, a, b, mu, frames, NULL);
	double drop = NAN;
	if (sim == NULL)
		return NAN;
	float *p = malloc(3 * (size_t)t.nv * sizeof *p);
	if (p == NULL)
		goto out;
	drape_sim_get_positions(sim, p);
	double sum = 0.0;
	for (uint32_t v = 0; v < t.nv; v++)
		sum += (double)t.pos[3 * v + 1] - p[3 * v + 1];
	drop = sum / t.nv;
	free(p);
out:
	drape_sim_destroy(sim);
	return drop;
}

/* The distance fallen from rest in t seconds with acceleration a under the
 * default velocity damping (v' = a - c v, c = damping_rate). */
static double damped_drop(double a, double t)
{
	drape_sim_params p;
	drape_sim_params_default(&p);
	const double c = p.damping_rate;
	return c > 0.0 ? a / c * (t - (1.0 - exp(-c * t)) / c) : 0.5 * a * t * t;
}

/* 20 % above mu* the tube stays where it was put: after two seconds its
 * mean drop is under 2 mm (free fall: 19 m). */
static void test_tube_holds_above_threshold(void)
{
	const double mu = 1.2 * mu_star();
	double drop = tube_drop(mu, 48);
	printf("  mu* %.3f, mu %.3f: drop after 2 s %.2f mm\n", mu_star(), mu, 1e3 * drop);
	CHECKF(isfinite(drop) && fabs(drop) < 0.002, "drop %.4f m at mu %.3f = 1.2 mu*", drop, mu);
}

/* 20 % below mu* it slides: more than 10 cm in one second (Coulomb:
 * 0.91 m; near the threshold the discrete grip is a little stronger). */
static void test_tube_slides_below_threshold(void)
{
	const double mu = 0.8 * mu_star();
	double drop = tube_drop(mu, 24);
	printf("  mu* %.3f, mu %.3f: drop after 1 s %.1f mm, Coulomb %.1f mm\n", mu_star(), mu, 1e3 * drop,
	       1e3 * damped_drop(TUBE_G * 0.2, 1.0));
	CHECKF(isfinite(drop) && drop > 0.1, "drop %.4f m at mu %.3f = 0.8 mu*", drop, mu);
}

/* At mu* / 2 it slides with g / 2 (kinetic friction mu p): the drop in
 * 0.5 s within 15 % of Coulomb's (measured: 8 % short). */
static void test_tube_slide_rate(void)
{
	const double mu = 0.5 * mu_star(), t = 12.0 / 24.0;
	const double expect = damped_drop(TUBE_G * (1.0 - mu / mu_star()), t);
	double drop = tube_drop(mu, 12);
	printf("  mu* %.3f, mu %.3f: drop after %.2f s %.1f mm, Coulomb %.1f mm\n", mu_star(), mu, t,
	       1e3 * drop, 1e3 * expect);
	CHECKF(isfinite(drop) && fabs(drop - expect) <= 0.15 * expect, "drop %.4f m, expected %.4f m",
	       drop, expect);
}

/* Without friction the tube falls freely whatever its grip (within 2 %). */
static void test_tube_falls_without_friction(void)
{
	const double t = 12.0 / 24.0, expect = damped_drop(TUBE_G, t);
	double drop = tube_drop(0.0, 12);
	printf("  mu 0: drop after %.2f s %.1f mm, free fall %.1f mm\n", t, 1e3 * drop, 1e3 * expect);
	CHECKF(isfinite(drop) && fabs(drop - expect) <= 0.02 * expect, "drop %.4f m, expected %.4f m", drop,
	       expect);
}

/*
 * A sheet hung over a horizontal bar, no pins: it holds by contact and
 * friction only, and its weight stretches it. Each leg hangs L below the
 * bar's tangent point, so the leg's top carries rho g L per unit width
 * whatever the friction (the leg hangs free below it); over the bar the
 * tension can only grow, at most to rho g (L + Rc) at the top, the whole
 * height of cloth below it (no friction; friction only lowers it). The
 * sheet is narrow and free at its sides, a strip free to narrow, so its
 * largest edge strain lies between rho g L / k and rho g (L + Rc) / k,
 * checked with 15 % either side. The sheet starts draped, unstretched and
 * at rest, and is measured after 1 s.
 *
 * Settings: 8 x 20 (3.19 % against 2.94 .. 3.47 %; 16 x 40: 3.31 %). At
 * the default 4 x 10 the same sheet ends at 7.67 %: the legs' sudden load
 * overshoots while the unconverged solve lets the cloth over the bar
 * stretch, and static friction then holds that stretch for good. That is
 * issue 17's open problem (unpinned cloth at the default budget, docs/
 * material.md); this test holds the physics the fix must keep.
 */
#define BAR_R 0.05f     /* bar radius, m */
#define BAR_TH 0.004f   /* cloth thickness */
#define BAR_LEG 0.3     /* each leg below the tangent point, m */
#define BAR_H 0.01      /* cell size, m */
#define BAR_COLS 21     /* across: 20 cells, 0.2 m */

typedef struct bar_sheet {
	float *rest, *pos;
	uint32_t *tri;
	uint32_t nv, nt, rows;
} bar_sheet;

static void bar_free(bar_sheet *b)
{
	free(b->rest);
	free(b->pos);
	free(b->tri);
}

/* The sheet along s (down one leg, over the bar, down the other), across
 * along z; the bar's axis is the z axis. */
static int bar_make(bar_sheet *b)
{
	const double rc = (double)BAR_R + BAR_TH, arc = M_PI * rc;
	const double len = 2.0 * BAR_LEG + arc;
	b->rows = (uint32_t)lround(len / BAR_H) + 1;
	b->nv = b->rows * BAR_COLS;
	b->nt = 2 * (b->rows - 1) * (BAR_COLS - 1);
	b->rest = malloc(3 * (size_t)b->nv * sizeof *b->rest);
	b->pos = malloc(3 * (size_t)b->nv * sizeof *b->pos);
	b->tri = malloc(3 * (size_t)b->nt * sizeof *b->tri);
	if (!b->rest || !b->pos || !b->tri)
		return 0;
	const double h = len / (b->rows - 1);
	for (uint32_t j = 0; j < b->rows; j++) {
		double s = h * j - 0.5 * len, x, y;
		if (fabs(s) <= 0.5 * arc) {
			double phi = s / rc;
			x = rc * sin(phi);
			y = rc * cos(phi);
		} else {
			x = s > 0 ? rc : -rc;
			y = -(fabs(s) - 0.5 * arc);
		}
		for (uint32_t i = 0; i < BAR_COLS; i++) {
			uint32_t v = j * BAR_COLS + i;
			double z = BAR_H * i - 0.5 * BAR_H * (BAR_COLS - 1);
			b->rest[3 * v] = (float)(h * j);
			b->rest[3 * v + 1] = 0.0f;
			b->rest[3 * v + 2] = (float)z;
			b->pos[3 * v] = (float)x;
			b->pos[3 * v + 1] = (float)y;
			b->pos[3 * v + 2] = (float)z;
		}
	}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < b->rows; j++)
		for (uint32_t i = 0; i + 1 < BAR_COLS; i++) {
			uint32_t a = j * BAR_COLS + i, c = a + 1, d = a + BAR_COLS, e = d + 1;
			uint32_t *q = &b->tri[3 * t];
			if ((i + j) % 2 == 0) {
				q[0] = a, q[1] = c, q[2] = e, q[3] = a, q[4] = e, q[5] = d;
			} else {
				q[0] = a, q[1] = c, q[2] = d, q[3] = c, q[4] = e, q[5] = d;
			}
			t += 2;
		}
	return 1;
}

/* The largest edge strain after 1 s of the sheet in stiffness k, or NAN. */
static double bar_strain(double k, double rho)
{
	bar_sheet b;
	memset(&b, 0, sizeof b);
	double out = NAN;
	drape_sim *sim = NULL;
	if (!bar_make(&b))
		goto out;
	drape_sim_desc d;
	xpbd_desc(&d, b.pos, b.rest, b.nv, b.tri, b.nt, k, rho, BAR_TH);
	d.params.substeps = 8;
	d.params.iterations = 20;
	const float a[3] = {0.0f, 0.0f, -1.0f}, e[3] = {0.0f, 0.0f, 1.0f};
	drape_sim_stats st;
	sim = run_on_capsule(&d, BAR_R, a, e, 0.5, 24, &st);
	if (sim != NULL)
		out = st.max_strain;
out:
	drape_sim_destroy(sim);
	bar_free(&b);
	return out;
}

static void test_sheet_over_bar_strain(void)
{
	const double k = 20.0, rho = 0.2, g = 9.81, rc = (double)BAR_R + BAR_TH;
	const double lo = rho * g * BAR_LEG / k, hi = rho * g * (BAR_LEG + rc) / k;
	double e = bar_strain(k, rho);
	printf("  k %.0f N/m: max strain %.2f %%, statics %.2f .. %.2f %%\n", k, 100.0 * e, 100.0 * lo,
	       100.0 * hi);
	CHECKF(isfinite(e) && e >= 0.85 * lo && e <= 1.15 * hi, "max strain %.4f outside [%.4f, %.4f]", e,
	       0.85 * lo, 1.15 * hi);
}

#define BAND_NA 64u   /* vertices along the arc */
#define BAND_NW 6u    /* across */
#define BAND_R 0.1    /* cylinder, m */
#define BAND_TH 0.004 /* cloth thickness: contact at R + TH */
#define BAND_EPS0 0.05
#define BAND_K 20.0   /* membrane stiffness, N/m */
#define BAND_RHO 0.2  /* kg/m^2 */

/* A band of cloth over the top half of a horizontal cylinder of radius R
 * (contact radius Rc), put on stretched by 5 % along its length, its ends
 * free, no gravity. Only its own tension T (per unit width) presses it on
 * the cylinder, p = T / Rc, so static friction holds at most mu T / Rc per
 * unit length against the tension's change along the band:
 * |dT/ds| <= mu T / Rc (the capstan equation). With T = 0 at the free
 * ends, Gronwall's inequality gives T = 0 everywhere: no friction can keep
 * any of the stretch, and the band must relax completely (the solve's own
 * residual aside). A friction that froze the unconverged solve (issues
 * 17, 19: docs/limits.md, "The walk's strain") would keep it.
 *
 * The largest tensile strain of the edges along the band after `frames`
 * frames (24 fps, 4 x 5), NAN on failure. */
static double band_strain(double mu, int frames)
{
	enum { NV = BAND_NA * BAND_NW, NT = 2 * (BAND_NA - 1) * (BAND_NW - 1) };
	static float rest[3 * NV], pos[3 * NV], out[3 * NV];
	static uint32_t tri[3 * NT];
	const double rc = BAND_R + BAND_TH, r0 = rc / (1.0 + BAND_EPS0);
	const double da = M_PI / (BAND_NA - 1), h0 = 2.0 * r0 * sin(0.5 * da);
	for (uint32_t j = 0; j < BAND_NW; j++)
		for (uint32_t i = 0; i < BAND_NA; i++) {
			uint32_t v = j * BAND_NA + i;
			double a = da * i;
			rest[3 * v] = (float)(r0 * cos(a));
			rest[3 * v + 1] = (float)(r0 * sin(a));
			rest[3 * v + 2] = (float)(h0 * j);
			pos[3 * v] = (float)(rc * cos(a));
			pos[3 * v + 1] = (float)(rc * sin(a));
			pos[3 * v + 2] = (float)(h0 * j);
		}
	uint32_t nt = 0;
	for (uint32_t j = 0; j + 1 < BAND_NW; j++)
		for (uint32_t i = 0; i + 1 < BAND_NA; i++) {
			uint32_t a = j * BAND_NA + i, b = a + 1, c = a + BAND_NA, d = c + 1;
			uint32_t *q = &tri[3 * nt];
			if ((i + j) % 2 == 0) {
				q[0] = a, q[1] = d, q[2] = b, q[3] = a, q[4] = c, q[5] = d;
			} else {
				q[0] = a, q[1] = c, q[2] = b, q[3] = b, q[4] = c, q[5] = d;
			}
			nt += 2;
		}
	drape_sim_desc d;
	xpbd_desc(&d, pos, rest, NV, tri, nt, BAND_K, BAND_RHO, BAND_TH);
	d.params.substeps = 4;
	d.params.iterations = 5;
	d.params.gravity[0] = d.params.gravity[1] = d.params.gravity[2] = 0.0f;
	const float a[3] = {0.0f, 0.0f, -1.0f}, b[3] = {0.0f, 0.0f, 1.0f};
	drape_sim *sim = run_on_capsule(&d, (float)BAND_R, a, b, mu, frames, NULL);
	if (sim == NULL)
		return NAN;
	drape_sim_get_positions(sim, out);
	double e = 0.0;
	for (uint32_t j = 0; j < BAND_NW; j++)
		for (uint32_t i = 0; i + 1 < BAND_NA; i++) {
			const float *p = &out[3 * (j * BAND_NA + i)], *q = p + 3;
			double l = sqrt((double)(q[0] - p[0]) * (q[0] - p[0]) + (double)(q[1] - p[1]) * (q[1] - p[1]) +
					(double)(q[2] - p[2]) * (q[2] - p[2]));
			e = fmax(e, l / h0 - 1.0);
		}
	drape_sim_destroy(sim);
	return e;
}

/* At mu 0.5 (the cylinder's default static friction) the band keeps
 * under a tenth of its 5 % after 2 s (measured: 0.208 %; 0.128 % without
 * friction, the solve's own residual). */
static void test_band_relaxes_on_cylinder(void)
{
	double mu05 = band_strain(0.5, 48), none = band_strain(0.0, 48);
	printf("  band over a cylinder, 2 s: residual strain %.3f %% at mu 0.5, %.3f %% at mu 0 "
	       "(Coulomb: 0)\n",
	       100.0 * mu05, 100.0 * none);
	CHECKF(isfinite(mu05) && mu05 < 0.1 * BAND_EPS0, "mu 0.5: residual strain %.5f", mu05);
	CHECKF(isfinite(none) && none < 0.1 * BAND_EPS0, "mu 0: residual strain %.5f", none);
}

static const check_test tests[] = {
	CHECK_TEST(test_tube_holds_above_threshold),
	CHECK_TEST(test_tube_slides_below_threshold),
	CHECK_TEST(test_tube_slide_rate),
	CHECK_TEST(test_tube_falls_without_friction),
	CHECK_TEST(test_sheet_over_bar_strain),
	CHECK_TEST(test_band_relaxes_on_cylinder),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
