/*
 * Several cloths in one scene (client/scene_cloths.c) and the properties
 * per group (client/scene_props.c):
 *
 *  - two grid cloths join into one mesh with an object each (names,
 *    ranges, layers), self-collision switched on, pins renumbered;
 *  - cloths of different fabrics: the per-vertex stiffness ratios are the
 *    presets' constants over the first cloth's, the mass scale the
 *    densities' ratio, the thickness each cloth's own;
 *  - "stiffness_scale", "thickness" and "friction" by group;
 *  - bad input refused naming the key: an empty array, "cloth" and
 *    "cloths" together, vertices over the limit, names repeated or not
 *    file names, layers out of range, a cloth without a material beside
 *    one with, a pbd stiffness that differs.
 */
#include "client/scene.h"
#include "drape/sim.h"
#include "tests/unit/check.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static drape_err load_lim(const char *json, const drape_obj_limits *lim, drape_scene *sc,
			  drape_error *err)
{
	char path[128];
	snprintf(path, sizeof path, "%s/scene.json", dir);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return DRAPE_EIO;
	fputs(json, f);
	fclose(f);
	return drape_scene_read(path, lim, sc, err);
}

static drape_err load(const char *json, drape_scene *sc, drape_error *err)
{
	return load_lim(json, NULL, sc, err);
}

/* A grid cloth 11 x 11 at height y, with `extra` keys. */
#define GRID(y, extra)                                                                             \
	"{\"mesh\": {\"grid\": {\"size\": [0.5, 0.5], \"resolution\": [11, 11], \"center\": [0, " y \
	", 0], \"normal\": [0, 1, 0]}}" extra "}"

static void test_two_cloths_join(void)
{
	drape_scene sc;
	drape_error err;
	CHECKF(load("{\"cloths\": [" GRID("1", ", \"name\": \"shirt\", \"pins\": {\"group\": \"top\"}")
		    ", " GRID("1.02", ", \"name\": \"jacket\", \"layer\": 1, \"collides_with\": [0, 1], "
				      "\"pins\": {\"group\": \"top\"}") "]}",
		    &sc, &err) == DRAPE_OK,
	       "%s", err.message);
	CHECK(sc.cloth.vertex_count == 242 && sc.cloth.triangle_count == 400);
	CHECK(sc.object_count == 2);
	CHECK(strcmp(sc.objects[0].name, "shirt") == 0 && strcmp(sc.objects[1].name, "jacket") == 0);
	CHECK(sc.objects[0].range.first_vertex == 0 && sc.objects[0].range.vertex_count == 121);
	CHECK(sc.objects[1].range.first_vertex == 121 && sc.objects[1].range.vertex_count == 121);
	CHECK(sc.objects[0].range.layer == 1u && sc.objects[0].range.collides_with == 0xffffffffu);
	CHECK(sc.objects[1].range.layer == 2u && sc.objects[1].range.collides_with == 3u);
	CHECK(sc.object_ranges[1].first_vertex == 121);
	CHECK(sc.object_tris[0] == 0 && sc.object_tris[1] == 200 && sc.object_tris[2] == 200 &&
	      sc.object_tris[3] == 200);
	CHECK(sc.params.self_collision == 1);
	/* 11 pins each, the second cloth's after its first vertex, ascending. */
	CHECK(sc.pin_count == 22);
	for (uint32_t i = 0; i < 22; i++)
		CHECK((i < 11) == (sc.pins[i] < 121) && (i == 0 || sc.pins[i] > sc.pins[i - 1]));
	/* Triangles of the second cloth use its own vertices. */
	for (uint32_t t = 200; t < 400; t++)
		for (int k = 0; k < 3; k++)
			CHECK(sc.cloth.triangles[3 * t + k] >= 121 && sc.cloth.triangles[3 * t + k] < 242);
	CHECK(fabsf(sc.cloth.positions[3 * 121 + 1] - 1.02f) < 1e-6f);
	/* Same pbd cloth twice: nothing per vertex. */
	CHECK(sc.stiffness_scale == NULL && sc.vertex_thickness == NULL && sc.mass_scale == NULL);
	/* The solver takes it. */
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = sc.cloth.positions;
	d.vertex_count = sc.cloth.vertex_count;
	d.triangles = sc.cloth.triangles;
	d.triangle_count = sc.cloth.triangle_count;
	d.objects = sc.object_ranges;
	d.object_count = sc.object_count;
	d.params = sc.params;
	drape_sim *sim = NULL;
	CHECKF(drape_sim_create(&d, &sim, &err) == DRAPE_OK, "%s", err.message);
	drape_sim_destroy(sim);
	drape_scene_free(&sc);
	/* Self-collision stays off when the scene says so. */
	CHECKF(load("{\"self_collision\": false, \"cloths\": [" GRID("1", "") ", " GRID("1.1", "") "]}",
		    &sc, &err) == DRAPE_OK,
	       "%s", err.message);
	CHECK(sc.params.self_collision == 0);
	CHECK(strcmp(sc.objects[0].name, "cloth0") == 0 && strcmp(sc.objects[1].name, "cloth1") == 0);
	drape_scene_free(&sc);
}

static void test_cloths_of_different_fabrics(void)
{
	drape_scene sc;
	drape_error err;
	CHECKF(load("{\"cloths\": [" GRID("1", ", \"material\": \"cotton\", \"thickness\": 0.003")
		    ", " GRID("1.02", ", \"material\": \"denim\", \"thickness\": 0.006") "]}",
		    &sc, &err) == DRAPE_OK,
	       "%s", err.message);
	drape_sim_params a, b;
	drape_sim_params_default(&a);
	drape_sim_params_default(&b);
	CHECK_OK(drape_material_preset("cotton", &a, &err));
	CHECK_OK(drape_material_preset("denim", &b, &err));
	CHECK(sc.params.model == DRAPE_MODEL_XPBD && sc.params.stretch_k == a.stretch_k);
	CHECK(sc.stiffness_scale != NULL && sc.vertex_thickness != NULL && sc.mass_scale != NULL);
	const float want[3] = {b.stretch_k / a.stretch_k, b.shear_k / a.shear_k, b.bend_k / a.bend_k};
	for (int k = 0; k < 3; k++) {
		CHECK(sc.stiffness_scale[3 * 5 + k] == 1.0f);
		CHECK_NEAR(sc.stiffness_scale[3 * 130 + k], want[k], 1e-6 * want[k]);
	}
	CHECK_NEAR(sc.mass_scale[130], b.density / a.density, 1e-6);
	CHECK(sc.mass_scale[5] == 1.0f);
	CHECK(sc.vertex_thickness[5] == 0.003f && sc.vertex_thickness[130] == 0.006f);
	printf("  cotton then denim: stiffness ratios %.3g %.3g %.3g, density ratio %.3g\n",
	       (double)want[0], (double)want[1], (double)want[2], (double)(b.density / a.density));
	drape_scene_free(&sc);
}

static void test_props_by_group(void)
{
	drape_scene sc;
	drape_error err;
	CHECKF(load("{\"cloth\": " GRID("1", ", \"material\": \"cotton\", \"stiffness_scale\": "
						"{\"top\": 4}, \"thickness\": {\"bottom\": 0.012}, "
						"\"friction\": {\"left\": 0.8}") "}",
		    &sc, &err) == DRAPE_OK,
	       "%s", err.message);
	/* Grid rows: j = 0 is "bottom", j = 10 "top"; i = 0 "left". */
	const uint32_t top = 10 * 11 + 5, bottom = 5, left = 5 * 11, mid = 5 * 11 + 5;
	for (int k = 0; k < 3; k++)
		CHECK(sc.stiffness_scale[3 * top + k] == 4.0f && sc.stiffness_scale[3 * mid + k] == 1.0f);
	CHECK(sc.vertex_thickness[bottom] == 0.012f && sc.vertex_thickness[mid] == sc.params.thickness);
	CHECK(sc.vertex_friction[left] == 0.8f && sc.vertex_friction[mid] == -1.0f);
	drape_scene_free(&sc);
	/* A group of another fabric: the preset's ratios to the cloth's. */
	CHECKF(load("{\"cloth\": " GRID("1", ", \"material\": \"cotton\", \"materials\": "
						"{\"top\": \"denim\"}, \"stiffness_scale\": {\"top\": 2}") "}",
		    &sc, &err) == DRAPE_OK,
	       "%s", err.message);
	drape_sim_params a, b;
	drape_sim_params_default(&a);
	drape_sim_params_default(&b);
	CHECK_OK(drape_material_preset("cotton", &a, &err));
	CHECK_OK(drape_material_preset("denim", &b, &err));
	CHECK_NEAR(sc.stiffness_scale[3 * top], 2.0 * b.stretch_k / a.stretch_k, 1e-5);
	CHECK_NEAR(sc.stiffness_scale[3 * top + 2], 2.0 * b.bend_k / a.bend_k, 1e-5);
	CHECK(sc.stiffness_scale[3 * mid] == 1.0f && sc.mass_scale[mid] == 1.0f);
	CHECK_NEAR(sc.mass_scale[top], b.density / a.density, 1e-6);
	drape_scene_free(&sc);
	CHECK(load("{\"cloth\": " GRID("1", ", \"materials\": {\"top\": \"denim\"}") "}", &sc, &err) ==
	      DRAPE_EINVAL);
	CHECKF(strstr(err.message, "cloth.materials: needs a \"material\"") != NULL, "%s", err.message);
	CHECK(load("{\"cloth\": " GRID("1", ", \"material\": \"cotton\", \"materials\": {\"top\": \"tweed\"}") "}",
		   &sc, &err) != DRAPE_OK);
	CHECKF(strstr(err.message, "cloth.materials.top") != NULL, "%s", err.message);
	CHECKF(load("{\"cloth\": " GRID("1", ", \"friction\": 0.4") "}", &sc, &err) == DRAPE_OK, "%s",
	       err.message);
	CHECK(sc.vertex_friction != NULL && sc.vertex_friction[7] == 0.4f);
	CHECK(sc.vertex_thickness == NULL);
	drape_scene_free(&sc);
	/* Refused, naming the key: a pbd cloth's stiffness scale, a group
	 * that is not there, a friction out of range. */
	CHECK(load("{\"cloth\": " GRID("1", ", \"stiffness_scale\": {\"top\": 4}") "}", &sc, &err) ==
	      DRAPE_EINVAL);
	CHECKF(strstr(err.message, "cloth.stiffness_scale: needs a \"material\"") != NULL, "%s",
	       err.message);
	CHECK(load("{\"cloth\": " GRID("1", ", \"thickness\": {\"hem\": 0.01}") "}", &sc, &err) ==
	      DRAPE_ENOTFOUND);
	CHECKF(strstr(err.message, "cloth.thickness.hem") != NULL, "%s", err.message);
	CHECKF(load("{\"cloth\": " GRID("1", ", \"friction\": {\"top\": 0}") "}", &sc, &err) == DRAPE_OK,
	       "a frictionless group: %s", err.message);
	CHECK(sc.vertex_friction[top] == 0.0f && sc.vertex_friction[mid] == -1.0f);
	drape_scene_free(&sc);
	CHECK(load("{\"cloth\": " GRID("1", ", \"friction\": {\"top\": -0.5}") "}", &sc, &err) != DRAPE_OK);
	CHECKF(strstr(err.message, "cloth.friction.top") != NULL, "%s", err.message);
	CHECK(load("{\"cloth\": " GRID("1", ", \"friction\": 11") "}", &sc, &err) != DRAPE_OK);
	CHECKF(strstr(err.message, "cloth.friction") != NULL, "%s", err.message);
}

static void expect_refused(const char *json, const drape_obj_limits *lim, const char *what)
{
	drape_scene sc;
	drape_error err;
	memset(&sc, 0xab, sizeof sc);
	drape_err rc = load_lim(json, lim, &sc, &err);
	CHECKF(rc != DRAPE_OK, "accepted: %s", json);
	CHECKF(strstr(err.message, what) != NULL, "want \"%s\" in: %s", what, err.message);
	const unsigned char *b = (const unsigned char *)&sc;
	for (size_t i = 0; i < sizeof sc; i++)
		CHECKF(b[i] == 0xab, "output touched on a refused scene");
}

static void test_bad_cloths_refused(void)
{
	expect_refused("{\"cloths\": []}", NULL, "cloths: is empty");
	expect_refused("{\"cloths\": {}}", NULL, "cloths: must be an array");
	expect_refused("{\"cloth\": " GRID("1", "") ", \"cloths\": [" GRID("1", "") "]}", NULL,
		       "cloths: give either \"cloth\" (one) or \"cloths\" (several), not both");
	drape_obj_limits lim;
	drape_obj_limits_default(&lim);
	lim.max_vertices = 200; /* one grid of 121 fits, two do not */
	expect_refused("{\"cloths\": [" GRID("1", "") ", " GRID("1.1", "") "]}", &lim, "cloths[1].mesh");
	expect_refused("{\"cloths\": [" GRID("1", ", \"name\": \"a\"") ", " GRID("1.1", ", \"name\": \"a\"") "]}",
		       NULL, "cloths[1].name: \"a\" is also cloths[0]'s name");
	expect_refused("{\"cloths\": [" GRID("1", ", \"name\": \"../x\"") "]}", NULL, "cloths[0].name");
	expect_refused("{\"cloths\": [" GRID("1", ", \"layer\": 32") "]}", NULL, "cloths[0].layer");
	expect_refused("{\"cloths\": [" GRID("1", ", \"collides_with\": [1, -1]") "]}", NULL,
		       "cloths[0].collides_with[1]");
	expect_refused("{\"cloths\": [" GRID("1", ", \"material\": \"denim\"") ", " GRID("1.1", "") "]}",
		       NULL, "cloths[1].material: every cloth needs a material, or none does");
	expect_refused("{\"cloths\": [" GRID("1", "") ", " GRID("1.1", ", \"stretch\": 0.5") "]}", NULL,
		       "cloths[1].stretch: differs from cloths[0]'s");
	expect_refused("{\"cloths\": [" GRID("1", ", \"nmae\": \"x\"") "]}", NULL, "cloths[0]");
	/* "name" belongs to an entry of "cloths" only. */
	expect_refused("{\"cloth\": " GRID("1", ", \"name\": \"x\"") "}", NULL, "cloth");
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "/tmp/drape-cloths-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	static const check_test tests[] = {
		CHECK_TEST(test_two_cloths_join),
		CHECK_TEST(test_cloths_of_different_fabrics),
		CHECK_TEST(test_props_by_group),
		CHECK_TEST(test_bad_cloths_refused),
	};
	int rc = check_main(argc, argv, tests, CHECK_COUNT(tests));
	char path[128];
	snprintf(path, sizeof path, "%s/scene.json", dir);
	unlink(path);
	rmdir(dir);
	return rc;
}
