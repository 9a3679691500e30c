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
		CHECK_TEST(test_flat_panel_has_no_seam),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
