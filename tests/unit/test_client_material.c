/*
 * Scene files with a physical material (client/SCENE.md, "material" and
 * "model" in "cloth"): presets by name, presets with overrides, constants
 * given in full, the model switch, old scenes unchanged, and every error
 * naming its JSON path and the valid values.
 */
#include "client/scene.h"
#include "drape/sim.h"
#include "tests/unit/check.h"

#include <string.h>

#define GRID "\"mesh\": {\"grid\": {\"size\": [1, 1], \"resolution\": [4, 3]}}"

/* Loads `json` into *s; returns the code and leaves the message in *err. */
static drape_err load(const char *json, drape_scene *s, drape_error *err)
{
	memset(s, 0, sizeof *s);
	return drape_scene_read_string(json, strlen(json), NULL, "t.json", NULL, s, err);
}

static void test_preset_by_name(void)
{
	drape_scene s;
	drape_error err;
	CHECK_OK(load("{\"cloth\": {" GRID ", \"material\": \"denim\"}}", &s, &err));
	drape_sim_params want;
	drape_sim_params_default(&want);
	CHECK_OK(drape_material_preset("denim", &want, NULL));
	CHECK(s.params.model == DRAPE_MODEL_XPBD);
	CHECK(s.params.stretch_k == want.stretch_k && s.params.stretch_k_weft == want.stretch_k_weft);
	CHECK(s.params.shear_k == want.shear_k && s.params.bend_k == want.bend_k);
	CHECK(s.params.density == want.density && s.params.damping_rate == want.damping_rate);
	CHECK(s.material != NULL && strcmp(s.material, "denim") == 0);
	/* A grid carries UVs in metres along its u and v axes. */
	CHECK(s.cloth.uvs != NULL);
	CHECK(s.cloth.uvs[0] == 0.0f && s.cloth.uvs[1] == 0.0f);
	CHECK(s.cloth.uvs[2 * 11] == 1.0f && s.cloth.uvs[2 * 11 + 1] == 1.0f);
	CHECK_NEAR(s.cloth.uvs[2 * 1], 1.0 / 3.0, 1e-6);
	drape_scene_free(&s);
}

static void test_preset_with_overrides(void)
{
	drape_scene s;
	drape_error err;
	CHECK_OK(load("{\"cloth\": {" GRID ", \"material\": {\"preset\": \"denim\", \"bend\": 2e-5, "
		      "\"density\": 0.4, \"damping\": 1.5}}}",
		      &s, &err));
	drape_sim_params want;
	drape_sim_params_default(&want);
	CHECK_OK(drape_material_preset("denim", &want, NULL));
	CHECK(s.params.model == DRAPE_MODEL_XPBD);
	CHECK(s.params.bend_k == 2e-5f && s.params.density == 0.4f && s.params.damping_rate == 1.5f);
	CHECK(s.params.stretch_k == want.stretch_k && s.params.shear_k == want.shear_k);
	CHECK(strcmp(s.material, "denim") == 0);
	drape_scene_free(&s);
}

static void test_constants_in_full(void)
{
	drape_scene s;
	drape_error err;
	CHECK_OK(load("{\"cloth\": {" GRID ", \"material\": {\"stretch\": 5000, \"stretch_weft\": 2500, "
		      "\"shear\": 40, \"bend\": 1e-5, \"compression\": 100, \"density\": 0.15}}}",
		      &s, &err));
	CHECK(s.params.model == DRAPE_MODEL_XPBD);
	CHECK(s.params.stretch_k == 5000.0f && s.params.stretch_k_weft == 2500.0f);
	CHECK(s.params.shear_k == 40.0f && s.params.bend_k == 1e-5f && s.params.compress_k == 100.0f);
	CHECK(s.params.density == 0.15f && s.params.damping_rate > 0.0f);
	CHECK(strcmp(s.material, "custom") == 0);
	drape_scene_free(&s);
}

/* A scene without a material is the pbd model with exactly the values it
 * had before materials existed. */
static void test_old_scene_unchanged(void)
{
	drape_scene s;
	drape_error err;
	CHECK_OK(load("{\"damping\": 0.95, \"cloth\": {" GRID ", \"stretch\": 0.8, \"density\": 0.3}}", &s, &err));
	drape_sim_params want;
	drape_sim_params_default(&want);
	want.damping = 0.95f;
	want.stretch = 0.8f;
	want.density = 0.3f;
	CHECK(memcmp(&s.params, &want, sizeof want) == 0);
	CHECK(s.params.model == DRAPE_MODEL_PBD && s.material == NULL);
	drape_scene_free(&s);
}

/* "model": "pbd" next to a material keeps the pbd model (for comparison),
 * with the material's density. */
static void test_model_switch(void)
{
	drape_scene s;
	drape_error err;
	CHECK_OK(load("{\"cloth\": {" GRID ", \"material\": \"silk\", \"model\": \"pbd\"}}", &s, &err));
	CHECK(s.params.model == DRAPE_MODEL_PBD);
	CHECK(s.params.density < 0.1f);
	drape_scene_free(&s);
	CHECK_OK(load("{\"cloth\": {" GRID ", \"material\": \"silk\", \"model\": \"xpbd\"}}", &s, &err));
	CHECK(s.params.model == DRAPE_MODEL_XPBD);
	drape_scene_free(&s);
}

typedef struct bad {
	const char *json;
	drape_err code;
	const char *message; /* the whole message after "t.json: " */
} bad;

static void test_errors_name_the_key(void)
{
	static const bad cases[] = {
		{"{\"cloth\": {" GRID ", \"material\": \"velvet\"}}", DRAPE_EINVAL,
		 "cloth.material: unknown preset \"velvet\" (known: cotton, denim, jersey, polyester, silk, "
		 "wool, leather)"},
		{"{\"cloth\": {" GRID ", \"material\": {\"preset\": \"Denim\"}}}", DRAPE_EINVAL,
		 "cloth.material.preset: unknown preset \"Denim\" (known: cotton, denim, jersey, polyester, "
		 "silk, wool, leather)"},
		{"{\"cloth\": {" GRID ", \"material\": 3}}", DRAPE_EINVAL,
		 "cloth.material: must be a preset name or an object, not a number"},
		{"{\"cloth\": {" GRID ", \"material\": {\"preset\": 1}}}", DRAPE_EINVAL,
		 "cloth.material.preset: must be a preset name (a string), not a number"},
		{"{\"cloth\": {" GRID ", \"material\": {\"strech\": 1}}}", DRAPE_EINVAL,
		 "cloth.material.strech: unknown key (did you mean \"stretch\"? expected one of: preset, stretch, stretch_weft, shear, "
		 "bend, compression, density, damping)"},
		{"{\"cloth\": {" GRID ", \"material\": {\"stretch\": 5000, \"shear\": 40, \"bend\": 1e-5}}}",
		 DRAPE_EINVAL,
		 "cloth.material: needs \"density\" (without \"preset\", give stretch, shear, bend and density)"},
		{"{\"cloth\": {" GRID ", \"material\": {\"preset\": \"denim\", \"stretch\": -5}}}", DRAPE_ERANGE,
		 "cloth.material.stretch: -5 must be > 0"},
		{"{\"cloth\": {" GRID ", \"material\": {\"preset\": \"denim\", \"shear\": 0}}}", DRAPE_ERANGE,
		 "cloth.material.shear: 0 must be > 0"},
		{"{\"cloth\": {" GRID ", \"material\": {\"preset\": \"denim\", \"bend\": \"stiff\"}}}", DRAPE_EINVAL,
		 "cloth.material.bend: must be a number, not a string"},
		{"{\"cloth\": {" GRID ", \"material\": {\"preset\": \"denim\", \"damping\": -1}}}", DRAPE_ERANGE,
		 "cloth.material.damping: -1 must be >= 0"},
		{"{\"cloth\": {" GRID ", \"model\": \"fem\"}}", DRAPE_EINVAL,
		 "cloth.model: unknown model \"fem\" (expected one of: pbd, xpbd)"},
		{"{\"cloth\": {" GRID ", \"model\": 1}}", DRAPE_EINVAL,
		 "cloth.model: must be \"pbd\" or \"xpbd\", not a number"},
		{"{\"cloth\": {" GRID ", \"model\": \"xpbd\"}}", DRAPE_EINVAL,
		 "cloth.model: \"xpbd\" needs \"material\" (a preset name or the physical constants)"},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"bend\": 0.5}}", DRAPE_EINVAL,
		 "cloth.bend: the [0, 1] stiffness of the pbd model cannot be combined with \"material\"; give "
		 "\"material\": {\"bend\": ...} in N*m instead"},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"density\": 0.5}}", DRAPE_EINVAL,
		 "cloth.density: give the density inside \"material\" (kg/m^2), e.g. {\"preset\": \"denim\", "
		 "\"density\": 0.4}"},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"schedule\": \"fine\"}}", DRAPE_EINVAL,
		 "cloth.schedule: unknown schedule \"fine\" (expected one of: frame, mesh)"},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"schedule\": 1}}", DRAPE_EINVAL,
		 "cloth.schedule: must be \"frame\" or \"mesh\", not a number"},
		{"{\"cloth\": {" GRID ", \"schedule\": \"mesh\"}}", DRAPE_EINVAL,
		 "cloth.schedule: applies to the xpbd model only (a cloth with \"material\"); the pbd model "
		 "takes substeps x iterations as given"},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"model\": \"pbd\", \"schedule\": "
		 "\"mesh\"}}", DRAPE_EINVAL,
		 "cloth.schedule: applies to the xpbd model only (a cloth with \"material\"); the pbd model "
		 "takes substeps x iterations as given"},
		{"{\"damping\": 0.9, \"cloth\": {" GRID ", \"material\": \"denim\"}}", DRAPE_EINVAL,
		 "damping: the pbd model's fraction per frame; with a material give \"material\": {\"damping\": "
		 "rate in 1/s}"},
	};
	for (size_t i = 0; i < CHECK_COUNT(cases); i++) {
		drape_scene s;
		drape_error err;
		memset(&s, 0x5a, sizeof s);
		drape_err rc = drape_scene_read_string(cases[i].json, strlen(cases[i].json), NULL, "t.json", NULL,
						       &s, &err);
		char want[400];
		snprintf(want, sizeof want, "t.json: %s", cases[i].message);
		CHECKF(rc == cases[i].code && strcmp(err.message, want) == 0, "case %zu: %d %.200s | want %d %.200s",
		       i, (int)rc, err.message, (int)cases[i].code, want);
		unsigned char probe[sizeof s];
		memset(probe, 0x5a, sizeof probe);
		CHECKF(memcmp(&s, probe, sizeof s) == 0, "case %zu: output touched on failure", i);
	}
	/* Past the solver's own range (its limit is the solver's to set): the
	 * message is the solver's, at the key's path. */
	static const char huge[] = "{\"cloth\": {" GRID ", \"material\": {\"preset\": \"silk\", \"bend\": 1e20}}}";
	drape_scene s;
	drape_error err;
	CHECK(load(huge, &s, &err) == DRAPE_EINVAL);
	CHECKF(strncmp(err.message, "t.json: cloth.material.bend: 1e+20 ", 35) == 0, "%s", err.message);
}

/* cloth.schedule: absent is the frame schedule (old scenes unchanged),
 * "mesh" and "frame" reach params.schedule, which the solver's
 * validation accepts. */
static void test_schedule_key(void)
{
	static const struct {
		const char *json;
		int32_t want;
	} cases[] = {
		{"{\"cloth\": {" GRID ", \"material\": \"denim\"}}", DRAPE_SCHEDULE_FRAME},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"schedule\": \"frame\"}}",
		 DRAPE_SCHEDULE_FRAME},
		{"{\"cloth\": {" GRID ", \"material\": \"denim\", \"schedule\": \"mesh\"}}",
		 DRAPE_SCHEDULE_MESH},
		{"{\"cloths\": [{" GRID ", \"material\": \"denim\", \"schedule\": \"mesh\"}]}",
		 DRAPE_SCHEDULE_MESH},
	};
	for (size_t i = 0; i < CHECK_COUNT(cases); i++) {
		drape_scene s;
		drape_error err;
		CHECKF(load(cases[i].json, &s, &err) == DRAPE_OK, "case %zu: %s", i, err.message);
		CHECKF(s.params.schedule == cases[i].want, "case %zu: schedule %d", i, (int)s.params.schedule);
		CHECK(drape_sim_params_validate(&s.params, &err) == DRAPE_OK);
		drape_scene_free(&s);
	}
	/* Two cloths of one session share one schedule. */
	static const char two[] = "{\"cloths\": [{" GRID ", \"name\": \"a\", \"material\": \"denim\", "
				  "\"schedule\": \"mesh\"}, {" GRID ", \"name\": \"b\", \"material\": "
				  "\"denim\", \"translate\": [0, 0, 1]}]}";
	drape_scene s;
	drape_error err;
	CHECK(load(two, &s, &err) == DRAPE_EINVAL);
	CHECKF(strstr(err.message, "cloths[1].schedule: differs from cloths[0]'s") != NULL, "%s",
	       err.message);
}

/* The example scenes that name a material load as the physical model. */
static void test_examples_use_presets(void)
{
	static const char *const files[] = {"examples/flag.json", "examples/garment.json"};
	for (size_t i = 0; i < CHECK_COUNT(files); i++) {
		drape_scene s;
		drape_error err;
		memset(&s, 0, sizeof s);
		CHECKF(drape_scene_read(files[i], NULL, &s, &err) == DRAPE_OK, "%s", err.message);
		CHECKF(s.params.model == DRAPE_MODEL_XPBD && s.material != NULL, "%s: model %d", files[i],
		       (int)s.params.model);
		CHECKF(s.cloth.uvs != NULL, "%s: no UVs", files[i]);
		drape_scene_free(&s);
	}
}

static const check_test tests[] = {
	CHECK_TEST(test_preset_by_name),
	CHECK_TEST(test_preset_with_overrides),
	CHECK_TEST(test_constants_in_full),
	CHECK_TEST(test_old_scene_unchanged),
	CHECK_TEST(test_model_switch),
	CHECK_TEST(test_errors_name_the_key),
	CHECK_TEST(test_examples_use_presets),
	CHECK_TEST(test_schedule_key),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
