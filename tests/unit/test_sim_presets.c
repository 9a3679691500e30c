/*
 * Fabric presets (server/sim/material.c): names, errors, and that the
 * numbers are the published measurements converted with the right units.
 * The expected values are typed here from the sources again, independently
 * of the table in material.c, and the unit conversions are worked from
 * their definitions (1 gf = 9.80665e-3 N).
 */
#include "drape/sim.h"
#include "tests/unit/check.h"

#include <math.h>
#include <string.h>

static const char *const required[] = {"cotton", "denim", "silk", "wool", "jersey", "polyester", "leather"};

/* |a - b| <= rel * |b| */
#define CHECK_REL(a, b, rel) CHECK_NEAR((a), (b), (rel) * fabs((double)(b)))

static void test_every_name_resolves_to_a_valid_physical_material(void)
{
	const char *const *names = drape_material_preset_names();
	CHECK(names != NULL);
	size_t n = 0;
	for (; names[n] != NULL; n++) {
		drape_sim_params p;
		drape_sim_params_default(&p);
		drape_error e;
		CHECK_OK(drape_material_preset(names[n], &p, &e));
		CHECKF(p.model == DRAPE_MODEL_XPBD, "%s: model %d", names[n], (int)p.model);
		CHECKF(p.density > 0.0f && p.stretch_k > 0.0f && p.stretch_k_weft > 0.0f && p.shear_k > 0.0f &&
			       p.bend_k > 0.0f && p.damping_rate > 0.0f,
		       "%s: density %g stretch %g/%g shear %g bend %g damping %g", names[n], (double)p.density,
		       (double)p.stretch_k, (double)p.stretch_k_weft, (double)p.shear_k, (double)p.bend_k,
		       (double)p.damping_rate);
		CHECKF(drape_sim_params_validate(&p, &e) == DRAPE_OK, "%s: %s", names[n], e.message);
		/* Cloth, not sheet metal or jelly: bending lengths of garment
		 * fabrics lie between a few millimetres and about 5 cm. */
		double c = cbrt((double)p.bend_k / ((double)p.density * 9.81));
		CHECKF(c > 0.005 && c < 0.05, "%s: bending length %.4f m", names[n], c);
	}
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
		int found = 0;
		for (size_t k = 0; k < n; k++)
			found |= strcmp(names[k], required[i]) == 0;
		CHECKF(found, "preset %s missing", required[i]);
	}
}

static void test_preset_touches_only_material_fields(void)
{
	drape_sim_params p, before;
	drape_sim_params_default(&p);
	p.fps = 30.0f;
	p.substeps = 7;
	p.iterations = 3;
	p.gravity[1] = -3.0f;
	p.thickness = 0.002f;
	p.self_collision = 1;
	p.stretch = 0.5f;
	before = p;
	CHECK_OK(drape_material_preset("wool", &p, NULL));
	CHECK(p.fps == before.fps && p.substeps == before.substeps && p.iterations == before.iterations);
	CHECK(memcmp(p.gravity, before.gravity, sizeof p.gravity) == 0);
	CHECK(p.thickness == before.thickness && p.self_collision == before.self_collision);
	CHECK(p.stretch == before.stretch && p.shear == before.shear && p.bend == before.bend);
	CHECK(p.damping == before.damping && p.long_range == before.long_range);
}

static void test_unknown_name_lists_the_presets_and_changes_nothing(void)
{
	drape_sim_params p, before;
	drape_sim_params_default(&p);
	before = p;
	drape_error e;
	CHECK(drape_material_preset("velvet", &p, &e) == DRAPE_EINVAL);
	CHECK(e.code == DRAPE_EINVAL);
	CHECK(strstr(e.message, "velvet") != NULL);
	for (const char *const *n = drape_material_preset_names(); *n != NULL; n++)
		CHECKF(strstr(e.message, *n) != NULL, "'%s' not listed in: %s", *n, e.message);
	CHECK(memcmp(&p, &before, sizeof p) == 0);
	/* Names are exact: no prefix or case folding. */
	CHECK(drape_material_preset("Denim", &p, NULL) == DRAPE_EINVAL);
	CHECK(drape_material_preset("den", &p, NULL) == DRAPE_EINVAL);
	CHECK(drape_material_preset("", &p, NULL) == DRAPE_EINVAL);
	CHECK(drape_material_preset(NULL, &p, &e) == DRAPE_EINVAL);
	CHECK(memcmp(&p, &before, sizeof p) == 0);
	CHECK(drape_material_preset("denim", NULL, &e) == DRAPE_EINVAL);
}

/* Wang et al. 2011, 11oz black denim: density 0.324 kg/m^2, zero-strain
 * membrane row [205.352005, 10.234077, 1013.88629, 53.387184], bending at
 * zero curvature 64.196457e-6 (0 deg) and 96.951576e-6 N*m (90 deg). With
 * ARCSim's doubling, axis 1 (the stretch weft) is 2 * 205 N/m, axis 2
 * (warp) 2 * 1014 N/m, shear c33 / 2. */
static void test_denim_is_the_published_measurement(void)
{
	drape_sim_params p;
	drape_sim_params_default(&p);
	CHECK_OK(drape_material_preset("denim", &p, NULL));
	CHECK_REL(p.density, 0.324, 1e-6);
	CHECK_REL(p.stretch_k, 2.0 * 1013.88629, 1e-6);
	CHECK_REL(p.stretch_k_weft, 2.0 * 205.352005, 1e-6);
	CHECK_REL(p.shear_k, 53.387184 / 2.0, 1e-6);
	CHECK_REL(p.bend_k, (64.196457e-6 + 96.951576e-6) / 2.0, 1e-6);
	/* The warp is the stiffer direction of a stretch denim. */
	CHECK(p.stretch_k > 4.0f * p.stretch_k_weft);
}

/* The knit stretches an order of magnitude more than the wovens. */
static void test_knit_is_far_more_extensible_than_wovens(void)
{
	drape_sim_params knit, woven;
	drape_sim_params_default(&knit);
	drape_sim_params_default(&woven);
	CHECK_OK(drape_material_preset("jersey", &knit, NULL));
	CHECK_OK(drape_material_preset("cotton", &woven, NULL));
	CHECK(knit.stretch_k * 10.0f < woven.stretch_k);
	CHECK(knit.stretch_k_weft * 10.0f < woven.stretch_k_weft);
	/* The knit under its own weight, hanging 1 m: the top row carries
	 * rho * g * 1 m of load, a strain of several percent; the woven well
	 * under 0.1 %. */
	double strain_knit = knit.density * 9.81 / knit.stretch_k_weft;
	double strain_woven = woven.density * 9.81 / woven.stretch_k_weft;
	CHECKF(strain_knit > 0.02 && strain_knit < 0.2, "knit %.4f", strain_knit);
	CHECKF(strain_woven < 0.001, "woven %.6f", strain_woven);
}

/* KES-F units worked from their definitions: wool suiting with EMT 6 % at
 * 500 gf/cm, B 0.10 gf*cm^2/cm, G 0.65 gf/cm/deg, W 24 mg/cm^2. */
static void test_wool_converts_kes_units(void)
{
	drape_sim_params p;
	drape_sim_params_default(&p);
	CHECK_OK(drape_material_preset("wool", &p, NULL));
	const double gf = 9.80665e-3;                                  /* N */
	CHECK_REL(p.stretch_k, 500.0 * gf / 0.01 / 0.06, 1e-6);          /* 8,172 N/m */
	CHECK_REL(p.stretch_k_weft, p.stretch_k, 1e-6);
	CHECK_REL(p.bend_k, 0.10 * gf * 0.01, 1e-6);                     /* gf*cm -> N*m */
	CHECK_REL(p.shear_k, 0.65 * gf / 0.01 / (M_PI / 180.0), 1e-6);  /* per degree -> per radian */
	CHECK_REL(p.density, 24e-6 / 1e-4, 1e-6);                       /* mg/cm^2 -> kg/m^2 */
}

/* Leather's membrane and shear stiffness come from its measured bending
 * rigidity by thin-plate theory: check the isotropic-plate identities
 * B = k t^2 / (12 (1 - nu^2)) and G = k / (2 (1 + nu)) with t = 0.8 mm,
 * nu = 0.3. */
static void test_leather_is_a_consistent_isotropic_plate(void)
{
	drape_sim_params p;
	drape_sim_params_default(&p);
	CHECK_OK(drape_material_preset("leather", &p, NULL));
	const double t = 0.8e-3, nu = 0.3;
	CHECK_REL(p.bend_k, 15.6e-6, 1e-6);
	CHECK_REL((double)p.stretch_k * t * t / (12.0 * (1.0 - nu * nu)), p.bend_k, 1e-5);
	CHECK_REL(p.shear_k, p.stretch_k / (2.0 * (1.0 + nu)), 1e-5);
	CHECK_REL(p.density, 0.64, 1e-6);
}

/* Silk is the polyester plain weave scaled to 14 momme (60.76 g/m^2):
 * membrane with the mass ratio, bending with its cube. */
static void test_silk_scales_polyester_by_thickness(void)
{
	drape_sim_params silk, poly;
	drape_sim_params_default(&silk);
	drape_sim_params_default(&poly);
	CHECK_OK(drape_material_preset("silk", &silk, NULL));
	CHECK_OK(drape_material_preset("polyester", &poly, NULL));
	const double r = 14.0 * 4.340e-3 / 0.128;
	CHECK_REL(silk.density, 14.0 * 4.340e-3, 1e-6);
	CHECK_REL(silk.stretch_k, poly.stretch_k * r, 1e-5);
	CHECK_REL(silk.shear_k, poly.shear_k * r, 1e-5);
	CHECK_REL(silk.bend_k, poly.bend_k * r * r * r, 1e-5);
}

static const check_test tests[] = {
	CHECK_TEST(test_every_name_resolves_to_a_valid_physical_material),
	CHECK_TEST(test_preset_touches_only_material_fields),
	CHECK_TEST(test_unknown_name_lists_the_presets_and_changes_nothing),
	CHECK_TEST(test_denim_is_the_published_measurement),
	CHECK_TEST(test_knit_is_far_more_extensible_than_wovens),
	CHECK_TEST(test_wool_converts_kes_units),
	CHECK_TEST(test_leather_is_a_consistent_isotropic_plate),
	CHECK_TEST(test_silk_scales_polyester_by_thickness),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
