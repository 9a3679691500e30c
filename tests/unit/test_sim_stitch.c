/*
 * Stitches and rest shapes (server/sim/stitch.c, drape_sim_desc.
 * rest_positions), tested against what sewing must do physically: a seam
 * of two panels with different resolutions closes and carries the lower
 * panel's weight, panels placed apart sew together at the asked speed
 * while the total momentum stays zero, and a cloth started away from its
 * rest shape relaxes to the rest shape's edge lengths.
 */
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Two hanging panels of width W meeting along y = -H: the upper one has
 * NA vertices along the seam, the lower one NB. */
#define W 0.40f
#define H 0.20f
#define NA 40u
#define NB 57u
#define ROWS 12u

/* For the fixtures that return a value, where CHECK cannot: a broken
 * fixture ends the program. */
static void need(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL fixture: %s\n", what);
		exit(1);
	}
}

typedef struct panels {
	float *pos;
	uint32_t *tri;
	uint32_t nv, nt;
	drape_stitch *st;
	uint32_t ns;
	uint32_t *pins;
	uint32_t np;
} panels;

/* Appends a grid of nx x ROWS vertices from (0, y0) spanning W x H
 * downwards, offset by dz in z. Returns its first vertex index. */
static uint32_t add_panel(panels *p, uint32_t nx, float y0, float dz)
{
	grid g;
	const float o[3] = {-0.5f * W, y0, dz}, u[3] = {W, 0, 0}, v[3] = {0, -H, 0};
	need(grid_make(&g, nx, ROWS, o, u, v), "grid_make");
	uint32_t base = p->nv;
	memcpy(p->pos + 3 * (size_t)p->nv, g.pos, (size_t)g.nv * 3 * sizeof *g.pos);
	for (uint32_t k = 0; k < 3 * g.nt; k++)
		p->tri[3 * (size_t)p->nt + k] = g.tri[k] + base;
	p->nv += g.nv;
	p->nt += g.nt;
	grid_free(&g);
	return base;
}

/* Stitches the n vertices of row `from` (x evenly spread over W) to the
 * m-vertex row `to` at the point of equal x: a vertex-vertex stitch where
 * the point falls on a vertex, vertex-edge otherwise. */
static void stitch_row(panels *p, uint32_t from, uint32_t n, uint32_t to, uint32_t m)
{
	for (uint32_t i = 0; i < n; i++) {
		double s = (double)i / (n - 1) * (m - 1);
		uint32_t k = (uint32_t)floor(s);
		if (k >= m - 1)
			k = m - 2;
		double t = s - k;
		drape_stitch *st = &p->st[p->ns++];
		st->a = from + i;
		if (t < 1e-9 || t > 1.0 - 1e-9) {
			st->b0 = st->b1 = to + k + (t > 0.5);
			st->t = 0.0f;
		} else {
			st->b0 = to + k;
			st->b1 = to + k + 1;
			st->t = (float)t;
		}
	}
}

/* The two panels, the lower one dz away in z, stitched both ways along
 * the seam; the upper panel's top row pinned. */
static void make_panels(panels *p, float dz)
{
	memset(p, 0, sizeof *p);
	size_t nv = (size_t)(NA + NB) * ROWS, nt = 2 * (size_t)(NA + NB) * ROWS;
	p->pos = malloc(nv * 3 * sizeof *p->pos);
	p->tri = malloc(nt * 3 * sizeof *p->tri);
	p->st = malloc((NA + NB) * sizeof *p->st);
	p->pins = malloc(NA * sizeof *p->pins);
	need(p->pos && p->tri && p->st && p->pins, "out of memory");
	uint32_t a = add_panel(p, NA, 0.0f, 0.0f);
	uint32_t b = add_panel(p, NB, -H, dz);
	/* The upper panel's bottom row is its last; the lower one's top row
	 * its first. */
	stitch_row(p, a + NA * (ROWS - 1), NA, b, NB);
	stitch_row(p, b, NB, a + NA * (ROWS - 1), NA);
	for (uint32_t i = 0; i < NA; i++)
		p->pins[p->np++] = a + i;
}

static void free_panels(panels *p)
{
	free(p->pos);
	free(p->tri);
	free(p->st);
	free(p->pins);
}

static void desc_from_panels(drape_sim_desc *d, const panels *p)
{
	drape_sim_desc_default(d);
	d->positions = p->pos;
	d->vertex_count = p->nv;
	d->triangles = p->tri;
	d->triangle_count = p->nt;
	d->stitches = p->st;
	d->stitch_count = p->ns;
	d->pins = p->pins;
	d->pin_count = p->np;
	drape_error err;
	CHECK_OK(drape_material_preset("cotton", &d->params, &err));
}

/* Largest distance between a stitch's two ends at positions x. */
static double seam_gap(const panels *p, const float *x)
{
	double worst = 0.0;
	for (uint32_t i = 0; i < p->ns; i++) {
		const drape_stitch *s = &p->st[i];
		double t = s->b1 == s->b0 ? 0.0 : s->t, d2 = 0.0;
		for (int k = 0; k < 3; k++) {
			double q = (1 - t) * x[3 * s->b0 + k] + t * x[3 * s->b1 + k];
			double e = x[3 * s->a + k] - q;
			d2 += e * e;
		}
		worst = fmax(worst, sqrt(d2));
	}
	return worst;
}

/* 1 when triangles s and t hold a vertex each that a stitch joins. */
static int stitched_pair(const panels *p, uint32_t s, uint32_t t)
{
	const uint32_t *a = &p->tri[3 * (size_t)s], *b = &p->tri[3 * (size_t)t];
	for (uint32_t i = 0; i < p->ns; i++) {
		const drape_stitch *st = &p->st[i];
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 3; k++) {
				uint32_t u = a[j], v = b[k];
				if ((u == st->a && (v == st->b0 || v == st->b1)) ||
				    (v == st->a && (u == st->b0 || u == st->b1)))
					return 1;
			}
	}
	return 0;
}

/* Intersecting triangle pairs other than those touching along the seam. */
static uint64_t crossings(const panels *p, const float *x)
{
	enum { MAXP = 4096 };
	drape_tri_pair *pairs = malloc(MAXP * sizeof *pairs);
	uint64_t count = 0, off_seam = 0;
	drape_error err;
	need(pairs != NULL, "out of memory");
	need(drape_preflight(x, p->nv, p->tri, p->nt, pairs, MAXP, &count, &err) == DRAPE_OK,
	     "drape_preflight");
	need(count <= MAXP, "more intersecting pairs than the test records");
	for (uint64_t i = 0; i < count && i < MAXP; i++)
		off_seam += !stitched_pair(p, pairs[i].a, pairs[i].b);
	free(pairs);
	return off_seam;
}

/* The seam: 40 against 57 vertices, closed within 0.5 mm along its
 * whole length after 24 frames while carrying the lower panel, with no
 * triangle pair crossing, with self-collision off and on. Without the
 * stitches the lower panel falls away (the control). */
static void test_seam_of_different_resolutions_holds(void)
{
	for (int self = 0; self < 2; self++) {
		panels p;
		make_panels(&p, 0.0f);
		drape_sim_desc d;
		desc_from_panels(&d, &p);
		d.params.self_collision = self;
		drape_sim *sim = NULL;
		drape_error err;
		CHECK_OK(drape_sim_create(&d, &sim, &err));
		drape_sim_topology topo;
		drape_sim_get_topology(sim, &topo);
		/* The seam's two ends coincide: stitched both ways, they are
		 * two welds (two vertices merged into their partners); the
		 * other NA + NB - 4 stitches stay stitches. */
		CHECKF(topo.welds == 2 && topo.stitches == NA + NB - 4, "welds %u stitches %u", topo.welds, topo.stitches);
		float *x = malloc((size_t)p.nv * 3 * sizeof *x);
		double worst = 0.0;
		for (int f = 0; f < 24; f++) {
			CHECK_OK(drape_sim_step(sim, NULL, &err));
			drape_sim_get_positions(sim, x);
			worst = fmax(worst, seam_gap(&p, x));
		}
		uint64_t cross = crossings(&p, x);
		printf("  seam %u/%u, self-collision %s: worst gap over 24 frames %.3f mm, %llu "
		       "crossing pairs\n",
		       NA, NB, self ? "on" : "off", worst * 1e3, (unsigned long long)cross);
		CHECKF(worst < 0.5e-3, "gap %.3f mm", worst * 1e3);
		CHECK(cross == 0);
		drape_sim_destroy(sim);

		/* The control: the same panels unstitched part. */
		d.stitch_count = 0;
		CHECK_OK(drape_sim_create(&d, &sim, &err));
		for (int f = 0; f < 24; f++)
			CHECK_OK(drape_sim_step(sim, NULL, &err));
		drape_sim_get_positions(sim, x);
		double apart = seam_gap(&p, x);
		CHECKF(apart > 0.05, "unstitched gap %.3f m", apart);
		drape_sim_destroy(sim);
		free(x);
		free_panels(&p);
	}
}

/* Centre of mass of the solver's state (masses from the w lane). */
static void centre_of_mass(const drape_sim *sim, double out[3])
{
	double M = 0.0;
	out[0] = out[1] = out[2] = 0.0;
	for (uint32_t i = 0; i < sim->n; i++) {
		double m = 1.0 / sim->x[i].w;
		M += m;
		out[0] += m * sim->x[i].x;
		out[1] += m * sim->x[i].y;
		out[2] += m * sim->x[i].z;
	}
	for (int k = 0; k < 3; k++)
		out[k] /= M;
}

/* Panels placed 5 cm apart sew themselves shut at sew_speed: after one
 * frame the gap is still at least most of what the schedule leaves
 * (5 cm - 0.5 m/s * 1/24 s = 2.9 cm), after 24 frames it is closed within
 * 0.5 mm. With no gravity and no pins nothing outside acts on the cloth,
 * so its centre of mass stays where it was: the two panels meet in the
 * middle, each moving 25 mm. (The stitch corrections are weighted by the
 * inverse masses and sum to zero; a one-sided pull would move the centre
 * by about 12 mm. The XPBD material's own rounding drifts a free sheet by
 * about 0.15 mm a second, so the bound is 1 mm.) */
static void test_panels_sew_together(void)
{
	panels p;
	make_panels(&p, 0.05f);
	drape_sim_desc d;
	desc_from_panels(&d, &p);
	d.pin_count = 0;
	d.params.gravity[0] = d.params.gravity[1] = d.params.gravity[2] = 0.0f;
	CHECK(d.sew_speed == 0.5f);
	drape_sim *sim = NULL;
	drape_error err;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	float *x = malloc((size_t)p.nv * 3 * sizeof *x);
	double gap1 = 0.0, c0[3], c1[3];
	centre_of_mass(sim, c0);
	for (int f = 0; f < 24; f++) {
		CHECK_OK(drape_sim_step(sim, NULL, &err));
		drape_sim_get_positions(sim, x);
		if (f == 0)
			gap1 = seam_gap(&p, x);
	}
	centre_of_mass(sim, c1);
	double moved = sqrt(pow(c1[0] - c0[0], 2) + pow(c1[1] - c0[1], 2) + pow(c1[2] - c0[2], 2));
	double gap = seam_gap(&p, x);
	double schedule = 0.05 - 0.5 / 24.0;
	printf("  sewing from 5 cm: gap %.1f mm after frame 1 (schedule %.1f mm), %.3f mm after 24; "
	       "centre of mass moved %.3f mm\n",
	       gap1 * 1e3, schedule * 1e3, gap * 1e3, moved * 1e3);
	CHECKF(gap1 > 0.5 * schedule, "closed too fast: %.1f mm", gap1 * 1e3);
	CHECKF(gap < 0.5e-3, "gap %.3f mm", gap * 1e3);
	CHECKF(moved < 1e-3, "centre of mass moved %.3f mm", moved * 1e3);
	CHECK(crossings(&p, x) == 0);
	drape_sim_destroy(sim);
	free(x);
	free_panels(&p);
}

/* A sheet started 10 % larger than its rest shape (the pattern), floating
 * without gravity, relaxes to the rest shape's edge lengths: the elastic
 * energy's minimum. Built without the rest shape, the same start is at
 * rest and keeps its 10 %. */
static void test_rest_shape_is_the_pattern(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {0.5f, 0, 0}, v[3] = {0, 0, 0.5f};
	CHECK(grid_make(&g, 21, 21, o, u, v));
	float *start = malloc((size_t)g.nv * 3 * sizeof *start);
	float *x = malloc((size_t)g.nv * 3 * sizeof *x);
	for (uint32_t i = 0; i < 3 * g.nv; i++)
		start[i] = 1.1f * g.pos[i];
	for (int with_rest = 1; with_rest >= 0; with_rest--) {
		drape_sim_desc d;
		desc_from_grid(&d, &g);
		d.positions = start;
		d.rest_positions = with_rest ? g.pos : NULL;
		drape_error err;
		CHECK_OK(drape_material_preset("cotton", &d.params, &err));
		d.params.gravity[1] = 0.0f;
		drape_sim *sim = NULL;
		CHECK_OK(drape_sim_create(&d, &sim, &err));
		for (int f = 0; f < 48; f++)
			CHECK_OK(drape_sim_step(sim, NULL, &err));
		drape_sim_get_positions(sim, x);
		/* Mean |l / l_pattern - 1| over the grid's horizontal edges. */
		double sum = 0.0;
		uint32_t n = 0;
		for (uint32_t j = 0; j < g.ny; j++)
			for (uint32_t i = 0; i + 1 < g.nx; i++, n++) {
				uint32_t a = j * g.nx + i, b = a + 1;
				double l = 0.0, l0 = 0.0;
				for (int k = 0; k < 3; k++) {
					l += pow(x[3 * b + k] - x[3 * a + k], 2);
					l0 += pow(g.pos[3 * b + k] - g.pos[3 * a + k], 2);
				}
				sum += fabs(sqrt(l / l0) - 1.0);
			}
		double dev = sum / n;
		printf("  started 10 %% over the pattern, %s rest shape: mean edge strain against "
		       "the pattern %.3f %%\n",
		       with_rest ? "with the" : "without a", dev * 100.0);
		if (with_rest)
			CHECKF(dev < 0.005, "%.4f", dev);
		else
			CHECKF(fabs(dev - 0.1) < 0.005, "%.4f", dev);
		drape_sim_destroy(sim);
	}
	free(start);
	free(x);
	grid_free(&g);
}

/* Bad stitches and rest shapes are refused naming the field, and nothing
 * is built. */
static void test_bad_stitches_refused(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	CHECK(grid_make(&g, 4, 4, o, u, v));
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	drape_stitch st = {0, 5, 6, 0.5f};
	d.stitches = &st;
	d.stitch_count = 1;
	drape_sim *sim = NULL;
	drape_error err;
	struct {
		drape_stitch s;
		const char *field;
	} bad[] = {
		{{16, 5, 6, 0.5f}, "stitches[0].a"},
		{{0, 99, 6, 0.5f}, "stitches[0].b0"},
		{{0, 5, 16, 0.5f}, "stitches[0].b1"},
		{{5, 5, 6, 0.5f}, "stitches[0]: vertex 5 is stitched to itself"},
		{{0, 5, 6, 1.5f}, "stitches[0].t"},
		{{0, 5, 6, NAN}, "stitches[0].t"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		st = bad[i].s;
		CHECK(drape_sim_create(&d, &sim, &err) != DRAPE_OK);
		CHECKF(strstr(err.message, bad[i].field) != NULL, "%s", err.message);
		CHECK(sim == NULL);
	}
	st = (drape_stitch){0, 5, 6, 0.5f};
	d.stitch_k = -1.0f;
	CHECK(drape_sim_create(&d, &sim, &err) != DRAPE_OK);
	CHECK(strstr(err.message, "stitch_k") != NULL);
	d.stitch_k = 0.0f;
	d.sew_speed = INFINITY;
	CHECK(drape_sim_create(&d, &sim, &err) != DRAPE_OK);
	CHECK(strstr(err.message, "sew_speed") != NULL);
	d.sew_speed = 0.5f;
	float *rest = malloc((size_t)g.nv * 3 * sizeof *rest);
	memcpy(rest, g.pos, (size_t)g.nv * 3 * sizeof *rest);
	rest[3 * 7 + 1] = NAN;
	d.rest_positions = rest;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_ENONFINITE);
	CHECKF(strstr(err.message, "rest_positions[7][1]") != NULL, "%s", err.message);
	d.rest_positions = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	drape_sim_destroy(sim);
	free(rest);
	grid_free(&g);
}

/* Stitched panels give the same bits on 1 and 3 threads. */
static void test_stitches_same_on_any_thread_count(void)
{
	panels p;
	make_panels(&p, 0.03f);
	drape_sim_desc d;
	desc_from_panels(&d, &p);
	d.params.self_collision = 1;
	float *xs[2];
	drape_error err;
	for (int k = 0; k < 2; k++) {
		drape_pool *pool = NULL;
		CHECK_OK(drape_pool_create(k ? 3 : 1, &pool, &err));
		d.pool = pool;
		drape_sim *sim = NULL;
		CHECK_OK(drape_sim_create(&d, &sim, &err));
		for (int f = 0; f < 6; f++)
			CHECK_OK(drape_sim_step(sim, NULL, &err));
		xs[k] = malloc((size_t)p.nv * 3 * sizeof *xs[k]);
		drape_sim_get_positions(sim, xs[k]);
		drape_sim_destroy(sim);
		drape_pool_destroy(pool);
	}
	CHECK(memcmp(xs[0], xs[1], (size_t)p.nv * 3 * sizeof *xs[0]) == 0);
	free(xs[0]);
	free(xs[1]);
	free_panels(&p);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_seam_of_different_resolutions_holds),
		CHECK_TEST(test_panels_sew_together),
		CHECK_TEST(test_rest_shape_is_the_pattern),
		CHECK_TEST(test_bad_stitches_refused),
		CHECK_TEST(test_stitches_same_on_any_thread_count),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
