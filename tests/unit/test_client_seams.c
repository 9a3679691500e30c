/*
 * Automatic seams (client/seams.c): the seams a garment's geometry says it
 * has are found and only those, and the stitches found close them in the
 * solver.
 */
#include "client/seams.h"
#include "drape/sim.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two panels meeting along y = 0, na and nb vertices along the seam, 8 rows
 * each, the lower one dz away in z. */
static void two_panels(uint32_t na, uint32_t nb, float dz, grid *out)
{
	grid a, b;
	const float oa[3] = {0, 0.2f, 0}, ob[3] = {0, 0, dz}, u[3] = {0.4f, 0, 0},
		    v[3] = {0, -0.2f, 0};
	if (!grid_make(&a, na, 8, oa, u, v) || !grid_make(&b, nb, 8, ob, u, v))
		exit(1);
	out->nv = a.nv + b.nv;
	out->nt = a.nt + b.nt;
	out->pos = malloc((size_t)out->nv * 3 * sizeof *out->pos);
	out->tri = malloc((size_t)out->nt * 3 * sizeof *out->tri);
	if (out->pos == NULL || out->tri == NULL)
		exit(1);
	memcpy(out->pos, a.pos, (size_t)a.nv * 3 * sizeof *a.pos);
	memcpy(out->pos + 3 * (size_t)a.nv, b.pos, (size_t)b.nv * 3 * sizeof *b.pos);
	memcpy(out->tri, a.tri, (size_t)a.nt * 3 * sizeof *a.tri);
	for (uint32_t k = 0; k < 3 * b.nt; k++)
		out->tri[3 * (size_t)a.nt + k] = b.tri[k] + a.nv;
	grid_free(&a);
	grid_free(&b);
}

/* Coincident seam of 40 against 57 vertices: the two shared corners weld,
 * the 38 + 55 others are stitched to the other side's edges, and the seam
 * has two sides. Nothing else is joined: the open rims are farther than
 * the distance from any other panel. */
static void test_two_panels_one_seam(void)
{
	grid g;
	two_panels(40, 57, 0.0f, &g);
	drape_stitch *st = NULL;
	uint32_t n = 0;
	drape_seams_report rep;
	drape_error err;
	CHECK_OK(drape_seams_find(g.pos, g.nv, g.tri, g.nt, 1e-3f, 1e-5f, &st, &n, &rep, &err));
	printf("  40/57 seam: %u panels, %u open-edge vertices, %u welds, %u edge stitches, %u "
	       "seam sides\n",
	       rep.panels, rep.boundary_vertices, rep.welds, rep.edge_stitches, rep.seams);
	CHECK(rep.panels == 2);
	CHECK(rep.welds == 2);
	CHECK(rep.edge_stitches == 38 + 55);
	CHECK(rep.seams == 2);
	CHECK(n == rep.welds + rep.edge_stitches);
	/* Every stitch joins the two panels, at the seam line y = 0. */
	for (uint32_t i = 0; i < n; i++) {
		CHECK((st[i].a < 320) != (st[i].b0 < 320));
		CHECK(fabsf(g.pos[3 * st[i].a + 1]) < 1e-6f);
	}
	free(st);

	/* Placed 5 cm apart, a distance of 1 mm finds nothing, 5.05 cm finds
	 * the same seam, as edge stitches only: nothing coincides. (The side
	 * rims' nearest other-panel points are 5.8 cm away.) */
	grid h;
	two_panels(40, 57, 0.05f, &h);
	CHECK_OK(drape_seams_find(h.pos, h.nv, h.tri, h.nt, 1e-3f, 1e-5f, &st, &n, &rep, &err));
	CHECK(n == 0 && st == NULL && rep.seams == 0);
	CHECK_OK(drape_seams_find(h.pos, h.nv, h.tri, h.nt, 0.0505f, 1e-5f, &st, &n, &rep, &err));
	printf("  5 cm apart: %u welds, %u edge stitches, %u seam sides\n", rep.welds, rep.edge_stitches, rep.seams);
	CHECK(rep.seams == 2);
	CHECK(rep.welds == 0);
	CHECK(n == 40 + 57);
	free(st);
	grid_free(&g);
	grid_free(&h);
}

/* A sleeve: one panel rolled into a tube whose cut edges coincide. The
 * cut is found on the same panel (its two sides are far apart on the
 * mesh), welded along its 10 rows, and the stitched tube then hangs
 * closed under gravity. */
static void test_tube_closes_on_itself(void)
{
	const uint32_t nx = 25, ny = 10;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, -0.3f, 0};
	grid g;
	CHECK(grid_make(&g, nx, ny, o, u, v));
	const float r = 0.1f;
	for (uint32_t j = 0; j < ny; j++)
		for (uint32_t i = 0; i < nx; i++) {
			float *p = &g.pos[3 * (j * nx + i)];
			/* Column nx - 1 lands on column 0. */
			double a = 2.0 * M_PI * i / (nx - 1);
			p[0] = (float)(r * cos(a));
			p[2] = (float)(r * sin(a));
		}
	drape_stitch *st = NULL;
	uint32_t n = 0;
	drape_seams_report rep;
	drape_error err;
	CHECK_OK(drape_seams_find(g.pos, g.nv, g.tri, g.nt, 1e-3f, 1e-4f, &st, &n, &rep, &err));
	printf("  tube: %u panel, %u welds, %u edge stitches, %u seam sides\n", rep.panels, rep.welds,
	       rep.edge_stitches, rep.seams);
	CHECK(rep.panels == 1);
	CHECK(rep.welds == ny);
	CHECK(rep.edge_stitches == 0);
	CHECK(rep.seams == 2);

	/* The solver keeps the welded cut shut while the tube hangs from
	 * its top ring. */
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[25];
	for (uint32_t i = 0; i < nx; i++)
		pins[i] = i;
	d.pins = pins;
	d.pin_count = nx;
	d.stitches = st;
	d.stitch_count = n;
	CHECK_OK(drape_material_preset("cotton", &d.params, &err));
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	for (int f = 0; f < 24; f++)
		CHECK_OK(drape_sim_step(sim, NULL, &err));
	float *x = malloc((size_t)g.nv * 3 * sizeof *x);
	drape_sim_get_positions(sim, x);
	double worst = 0.0;
	for (uint32_t j = 0; j < ny; j++) {
		const float *p0 = &x[3 * (j * nx)], *p1 = &x[3 * (j * nx + nx - 1)];
		worst = fmax(worst, sqrt(pow(p0[0] - p1[0], 2) + pow(p0[1] - p1[1], 2) +
					 pow(p0[2] - p1[2], 2)));
	}
	printf("  tube after 24 frames: cut open by at most %.4f mm\n", worst * 1e3);
	CHECKF(worst < 0.5e-3, "%.4f mm", worst * 1e3);
	drape_sim_destroy(sim);
	free(x);
	free(st);
	grid_free(&g);
}

/* The skirt: two panels, half a cylinder each (radius 0.22 m,
 * 0.4 m long), placed 5 cm apart around a capsule body (radius 0.15 m),
 * held at the middle of their waistbands. "seams" finds the two side seams
 * on the start shape, the stitches sew them shut at 0.5 m/s (the 5 cm gap
 * in 0.1 s, 2.4 frames), and the skirt drapes around the body: from frame
 * 4 on no triangle pair crosses (sewn pairs along the seams aside), no
 * vertex is inside the body, and after 24 frames the seams are closed
 * within 0.5 mm. */
static uint32_t skirt_panel(float *pos, uint32_t *tri, uint32_t base, uint32_t nu, uint32_t nv,
			    double a0, double z_off)
{
	const double R = 0.22, L = 0.4;
	for (uint32_t j = 0; j < nv; j++)
		for (uint32_t i = 0; i < nu; i++) {
			double a = a0 + M_PI * i / (nu - 1);
			float *p = &pos[3 * (base + j * nu + i)];
			p[0] = (float)(R * cos(a));
			p[1] = (float)(1.0 - L * j / (nv - 1));
			p[2] = (float)(R * sin(a) + z_off);
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < nv; j++)
		for (uint32_t i = 0; i + 1 < nu; i++) {
			uint32_t a = base + j * nu + i, b = a + 1, c = a + nu, d = c + 1;
			uint32_t *q = &tri[6 * t++];
			q[0] = a, q[1] = c, q[2] = b, q[3] = b, q[4] = c, q[5] = d;
		}
	return t * 2;
}

static int inside_seam_pair(const drape_stitch *st, uint32_t n, const uint32_t *tri,
			    drape_tri_pair pr)
{
	const uint32_t *ta = &tri[3 * (size_t)pr.a], *tb = &tri[3 * (size_t)pr.b];
	for (uint32_t s = 0; s < n; s++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 3; k++) {
				uint32_t u = ta[j], v = tb[k];
				if ((u == st[s].a && (v == st[s].b0 || v == st[s].b1)) ||
				    (v == st[s].a && (u == st[s].b0 || u == st[s].b1)))
					return 1;
			}
	return 0;
}

static void test_skirt_sews_itself_around_a_body(void)
{
	enum { NU = 24, NV = 16 };
	const uint32_t nv = 2 * NU * NV, nt = 2 * 2 * (NU - 1) * (NV - 1);
	float *pos = malloc((size_t)nv * 3 * sizeof *pos);
	uint32_t *tri = malloc((size_t)nt * 3 * sizeof *tri);
	CHECK(pos && tri);
	/* Front half (angles 0..pi, z > 0) moved +2.5 cm, back half
	 * (pi..2 pi) moved -2.5 cm: the side seams start 5 cm apart. */
	uint32_t t0 = skirt_panel(pos, tri, 0, NU, NV, 0.0, 0.025);
	skirt_panel(pos, tri + 3 * (size_t)t0, NU * NV, NU, NV, M_PI, -0.025);
	drape_stitch *st = NULL;
	uint32_t n = 0;
	drape_seams_report rep;
	drape_error err;
	CHECK_OK(drape_seams_find(pos, nv, tri, nt, 0.06f, 1e-4f, &st, &n, &rep, &err));
	printf("  skirt: %u panels, %u welds, %u edge stitches, %u seam sides\n", rep.panels,
	       rep.welds, rep.edge_stitches, rep.seams);
	CHECK(rep.panels == 2 && rep.seams == 4 && rep.welds == 0);
	CHECK(n == 4 * NV);

	/* Held at the middle third of each waistband. */
	uint32_t pins[2 * NU], np = 0;
	for (uint32_t i = NU / 3; i < 2 * NU / 3; i++) {
		pins[np++] = i;
		pins[np++] = NU * NV + i;
	}
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = nv;
	d.triangles = tri;
	d.triangle_count = nt;
	d.pins = pins;
	d.pin_count = np;
	d.stitches = st;
	d.stitch_count = n;
	CHECK_OK(drape_material_preset("cotton", &d.params, &err));
	d.params.self_collision = 1;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	drape_collider_desc body;
	drape_collider_desc_default(&body);
	body.shape = DRAPE_SHAPE_CAPSULE;
	body.a[1] = 0.2f;
	body.b[1] = 1.2f;
	body.radius = 0.15f;
	uint32_t index;
	CHECK_OK(drape_sim_add_collider(sim, &body, &index, &err));
	float *x = malloc((size_t)nv * 3 * sizeof *x);
	drape_tri_pair pairs[256];
	uint64_t worst_cross = 0;
	double deepest = 0.0, gap = 0.0;
	for (int f = 1; f <= 24; f++) {
		CHECK_OK(drape_sim_step(sim, NULL, &err));
		drape_sim_get_positions(sim, x);
		if (f < 4)
			continue;
		uint64_t count = 0, cross = 0;
		CHECK_OK(drape_preflight(x, nv, tri, nt, pairs, 256, &count, &err));
		CHECK(count <= 256);
		for (uint64_t i = 0; i < count && i < 256; i++)
			cross += !inside_seam_pair(st, n, tri, pairs[i]);
		if (cross > worst_cross)
			worst_cross = cross;
		for (uint32_t v = 0; v < nv; v++) {
			const float *p = &x[3 * v];
			double y = p[1] < 0.2f ? 0.2 : (p[1] > 1.2f ? 1.2 : p[1]);
			double r = sqrt(p[0] * p[0] + (p[1] - y) * (p[1] - y) + p[2] * p[2]);
			if (0.15 - r > deepest)
				deepest = 0.15 - r;
		}
	}
	for (uint32_t s = 0; s < n; s++) {
		double tt = st[s].b1 == st[s].b0 ? 0.0 : st[s].t, e2 = 0.0;
		for (int k = 0; k < 3; k++) {
			double q = (1 - tt) * x[3 * st[s].b0 + k] + tt * x[3 * st[s].b1 + k];
			e2 += pow(x[3 * st[s].a + k] - q, 2);
		}
		gap = fmax(gap, sqrt(e2));
	}
	printf("  skirt after 24 frames: seams open by %.3f mm; frames 4-24: worst %llu crossing "
	       "pairs, deepest vertex %.2f mm inside the body\n",
	       gap * 1e3, (unsigned long long)worst_cross, deepest * 1e3);
	CHECKF(gap < 0.5e-3, "%.3f mm", gap * 1e3);
	CHECK(worst_cross == 0);
	CHECKF(deepest <= 1e-4, "%.3f mm", deepest * 1e3);
	drape_sim_destroy(sim);
	free(x);
	free(st);
	free(pos);
	free(tri);
}

/* A single flat panel has no seam: its rim is never stitched to itself. */
static void test_flat_panel_has_no_seam(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	CHECK(grid_make(&g, 30, 30, o, u, v));
	drape_stitch *st = NULL;
	uint32_t n = 7;
	drape_seams_report rep;
	drape_error err;
	/* Just under an edge (1/29 m): farther rim edges are out of reach. */
	CHECK_OK(drape_seams_find(g.pos, g.nv, g.tri, g.nt, 0.03f, 1e-5f, &st, &n, &rep, &err));
	CHECK(n == 0 && st == NULL && rep.seams == 0 && rep.panels == 1);
	CHECK(rep.boundary_vertices == 4 * 29);
	CHECK(drape_seams_find(g.pos, g.nv, g.tri, g.nt, 0.0f, 1e-5f, &st, &n, &rep, &err) ==
	      DRAPE_EINVAL);
	CHECK(strstr(err.message, "seams.distance") != NULL);
	CHECK(drape_seams_find(g.pos, g.nv, g.tri, g.nt, 0.01f, -1.0f, &st, &n, &rep, &err) ==
	      DRAPE_EINVAL);
	CHECK(strstr(err.message, "seams.weld") != NULL);
	grid_free(&g);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_two_panels_one_seam),
		CHECK_TEST(test_tube_closes_on_itself),
		CHECK_TEST(test_skirt_sews_itself_around_a_body),
		CHECK_TEST(test_flat_panel_has_no_seam),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
