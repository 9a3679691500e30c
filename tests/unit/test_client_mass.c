/*
 * "mass_scale" per group (client/scene_props.c), tested against statics: a
 * sheet hanging from its top row carries, in its top row of cells, the
 * weight of everything below the pinned row. Scaling the hem's (bottom
 * row's) mass by s adds (s - 1) times the hem's weight, so the stretch of
 * those top edges grows by 1 + (s - 1) m_hem / (M - m_top), which for a
 * grid of ny rows (end rows carrying half a cell row each) is
 * 1 + (s - 1) / (2 (ny - 1) - 1). Also: the masses follow the solver's own
 * rule where no group is scaled, and an unknown group or a bad factor is
 * refused naming the key.
 */
#include "client/scene.h"
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NY 11
#define HEM 11.0

static char dir[64];

static drape_err load(const char *json, drape_scene *sc, drape_error *err)
{
	char path[128];
	snprintf(path, sizeof path, "%s/scene.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return DRAPE_EIO;
	fputs(json, f);
	fclose(f);
	return drape_scene_read(path, NULL, sc, err);
}

#define SCENE(extra)                                                                              \
	"{\"fps\": 24, \"long_range\": false, \"cloth\": {"                                        \
	"\"mesh\": {\"grid\": {\"size\": [0.5, 0.5], \"resolution\": [11, 11], "                  \
	"\"center\": [0, 1, 0], \"normal\": [0, 0, 1]}}, "                                         \
	"\"material\": {\"stretch\": 200, \"shear\": 5, \"bend\": 1e-5, \"density\": 0.3, "        \
	"\"damping\": 5}, \"pins\": {\"group\": \"top\"}" extra "}}"

/* Mean strain of the vertical edges between the top row and the row
 * below after the sheet has come to rest. */
static void top_strain(const char *json, double *out)
{
	drape_scene sc;
	drape_error err;
	*out = 0.0;
	CHECKF(load(json, &sc, &err) == DRAPE_OK, "%s", err.message);
	float *w = NULL;
	CHECK_OK(drape_scene_inv_mass(&sc, &w, &err));
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = sc.cloth.positions;
	d.vertex_count = sc.cloth.vertex_count;
	d.triangles = sc.cloth.triangles;
	d.triangle_count = sc.cloth.triangle_count;
	d.pins = sc.pins;
	d.pin_count = sc.pin_count;
	d.inv_mass = w;
	d.params = sc.params;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	free(w);
	const uint32_t n = sc.cloth.vertex_count;
	float *x = malloc((size_t)n * 3 * sizeof *x), *prev = calloc((size_t)n * 3, sizeof *x);
	/* At rest: no vertex moves more than 1e-7 m in a frame (or 40 s). */
	for (int f = 0; f < 24 * 40; f++) {
		CHECK_OK(drape_sim_step(sim, NULL, &err));
		drape_sim_get_positions(sim, x);
		double moved = 0.0;
		for (uint32_t i = 0; i < 3 * n; i++)
			moved = fmax(moved, fabs((double)x[i] - prev[i]));
		memcpy(prev, x, (size_t)n * 3 * sizeof *x);
		if (f > 24 && moved < 1e-7)
			break;
	}
	const float *r = sc.cloth.positions;
	const float dy = 0.5f / (NY - 1);
	double sum = 0.0;
	uint32_t edges = 0;
	for (uint32_t i = 0; i < sc.pin_count; i++) {
		uint32_t a = sc.pins[i];
		for (uint32_t b = 0; b < n; b++) {
			if (fabsf(r[3 * b] - r[3 * a]) > 1e-6f || fabsf(r[3 * a + 1] - dy - r[3 * b + 1]) > 1e-6f)
				continue;
			double l = 0.0;
			for (int k = 0; k < 3; k++)
				l += ((double)x[3 * a + k] - x[3 * b + k]) * ((double)x[3 * a + k] - x[3 * b + k]);
			sum += sqrt(l) / dy - 1.0;
			edges++;
		}
	}
	CHECK(edges == 11);
	*out = sum / edges;
	free(x);
	free(prev);
	drape_sim_destroy(sim);
	drape_scene_free(&sc);
}

static void test_heavy_hem_stretches_the_top_by_the_load_ratio(void)
{
	double plain = 0.0, heavy = 0.0;
	top_strain(SCENE(""), &plain);
	top_strain(SCENE(", \"mass_scale\": {\"bottom\": 11}"), &heavy);
	double want = 1.0 + (HEM - 1.0) / (2.0 * (NY - 1) - 1.0);
	printf("top-row strain %.6f plain, %.6f with the hem x%g: ratio %.4f, statics %.4f\n",
	       plain, heavy, HEM, heavy / plain, want);
	CHECK(plain > 1e-4);
	CHECKF(fabs(heavy / plain - want) < 0.03 * want, "ratio %g, want %g", heavy / plain, want);
}

/* Without mass_scale the scene sends nothing (the solver's masses); with a
 * factor of 1 everywhere the masses it computes are the solver's. */
static void test_masses_follow_the_solver_rule(void)
{
	drape_scene sc;
	drape_error err;
	float *w = NULL;
	CHECK_OK(load(SCENE(""), &sc, &err));
	CHECK_OK(drape_scene_inv_mass(&sc, &w, &err));
	CHECK(w == NULL);
	drape_scene_free(&sc);
	CHECK_OK(load(SCENE(", \"mass_scale\": {\"left\": 1}"), &sc, &err));
	CHECK_OK(drape_scene_inv_mass(&sc, &w, &err));
	CHECK(w != NULL);
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = sc.cloth.positions;
	d.vertex_count = sc.cloth.vertex_count;
	d.triangles = sc.cloth.triangles;
	d.triangle_count = sc.cloth.triangle_count;
	d.params = sc.params;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	/* Total: density x area = 0.3 x 0.25 kg, both ways. */
	double total = 0.0, solver = 0.0;
	for (uint32_t i = 0; i < sc.cloth.vertex_count; i++)
		total += 1.0 / w[i];
	for (uint32_t i = 0; i < sim->n; i++)
		solver += 1.0 / sim->x[i].w;
	CHECK_NEAR(total, 0.075, 1e-6);
	CHECK_NEAR(solver, 0.075, 1e-6);
	free(w);
	drape_sim_destroy(sim);
	drape_scene_free(&sc);
}

static void test_bad_mass_scale_refused(void)
{
	drape_scene sc;
	drape_error err;
	CHECK(load(SCENE(", \"mass_scale\": {\"hem\": 3}"), &sc, &err) == DRAPE_ENOTFOUND);
	CHECKF(strstr(err.message, "cloth.mass_scale.hem: no group 'hem'") != NULL, "%s", err.message);
	CHECK(load(SCENE(", \"mass_scale\": {\"bottom\": 0}"), &sc, &err) == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "cloth.mass_scale.bottom") != NULL, "%s", err.message);
	CHECK(load(SCENE(", \"mass_scale\": {\"bottom\": \"heavy\"}"), &sc, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "cloth.mass_scale.bottom") != NULL, "%s", err.message);
	CHECK(load(SCENE(", \"mass_scale\": [3]"), &sc, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "cloth.mass_scale") != NULL, "%s", err.message);
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "/tmp/drape-mass-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	static const check_test tests[] = {
		CHECK_TEST(test_heavy_hem_stretches_the_top_by_the_load_ratio),
		CHECK_TEST(test_masses_follow_the_solver_rule),
		CHECK_TEST(test_bad_mass_scale_refused),
	};
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	char path[128];
	snprintf(path, sizeof path, "%s/scene.json", dir);
	unlink(path);
	rmdir(dir);
	return rc;
}
