/*
 * Settling and convergence of a hanging sheet (issue 2, test 4): a 1 m sheet
 * of 32 x 32 vertices, starting horizontal, pinned along its top edge, stretch
 * k = 1, 240 frames at 24 fps. Prints the figures quoted in the notes.
 *
 * Bending is off (bend = 0, so its sweep is skipped): it plays no part in how
 * the stretch constraints converge under gravity and would be four fifths of
 * the run time. With the default bend = 0.1 the same runs measured plain
 * Gauss-Seidel max strain 17.27 %, 9.76 %, 5.22 % at 4x10, 4x20, 4x40, two
 * corners 78.6 %, and 0.031 % with the long-range attachments.
 *
 * Two solver configurations are measured. The default one projects the
 * long-range attachments (params.long_range = -1, on because there are pins;
 * Kim et al. 2012), which hold every vertex within its rest distance of the
 * pins. Plain Gauss-Seidel (long_range = 0) shows how the iterations alone
 * converge; with the attachments on, the strain is at rounding level and can
 * no longer show that.
 */
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

typedef struct sheet_result {
	float max_strain;
	float mean_strain;
	double ke;
} sheet_result;

static int run_sheet(int32_t iterations, int corners, int32_t long_range, float stretch,
		     sheet_result *r)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	if (!grid_make(&g, 32, 32, o, u, v)) {
		grid_free(&g);
		return 0;
	}
	drape_sim_desc d;
	desc_from_grid(&d, &g);
	uint32_t pins[32];
	uint32_t np = 0;
	if (corners) {
		pins[np++] = 0;
		pins[np++] = 31;
	} else {
		for (uint32_t i = 0; i < 32; i++)
			pins[np++] = i;
	}
	d.pins = pins;
	d.pin_count = np;
	d.params.fps = 24.0f;
	d.params.substeps = 4;
	d.params.iterations = iterations;
	d.params.stretch = stretch;
	d.params.bend = 0.0f;
	d.params.long_range = long_range;
	drape_sim *sim = NULL;
	int ok = drape_sim_create(&d, &sim, NULL) == DRAPE_OK;
	drape_sim_stats st = {0};
	for (int f = 0; ok && f < 240; f++)
		ok = drape_sim_step(sim, &st, NULL) == DRAPE_OK;
	if (ok) {
		r->max_strain = st.max_strain;
		r->mean_strain = st.mean_strain;
		r->ke = kinetic_energy(sim);
	}
	drape_sim_destroy(sim);
	grid_free(&g);
	return ok;
}

/*
 * The kinetic energy bound. The sheet weighs 0.2 kg (density 0.2 kg/m^2) and
 * releases m g L / 2 = 0.98 J as it swings down from horizontal. Velocity
 * damping alone (0.99 per frame) would still leave up to 0.99^240 = 9 % of
 * that (0.088 J) after 240 frames; air drag and the constraints must take the
 * rest. The bound, 2e-4 J, is an RMS vertex speed of 4.5 cm/s: a sheet still
 * swinging visibly, or jittering because the solver injects energy, exceeds
 * it, while a settled sheet (measured 3e-5 to 4e-5 J) is well below.
 */
#define SHEET_KE_BOUND 2e-4

static void print_result(const char *what, int32_t iterations, const sheet_result *r)
{
	printf("  %-35s 4x%-2d: max strain %7.4f %%, mean %7.4f %%, KE %.2e J\n", what, iterations,
	       100.0 * r->max_strain, 100.0 * r->mean_strain, r->ke);
}

/* Default solver: settles, and the strain stays under issue 6's 2 % at
 * 4 x 20 (plain Gauss-Seidel leaves 10 % here; measured 0.035 %). */
static void test_sheet_default(void)
{
	sheet_result r;
	CHECK(run_sheet(20, 0, -1, 1.0f, &r));
	print_result("top edge, long-range on (default)", 20, &r);
	printf("  KE bound %.1e J\n", SHEET_KE_BOUND);
	CHECKF(r.ke < SHEET_KE_BOUND, "KE %.3g J >= %.1e J", r.ke, SHEET_KE_BOUND);
	CHECKF(r.max_strain < 0.02f, "4x20 max strain %.4f >= 2 %%", (double)r.max_strain);
}

/* A stretch stiffness below 1 asks for cloth that stretches: the tethers
 * still bound it, but the 1 % edge strain limit that comes with them for
 * inextensible cloth stays off, so the soft sheet hangs longer. */
static void test_soft_sheet_not_strain_limited(void)
{
	sheet_result r;
	CHECK(run_sheet(20, 0, -1, 0.2f, &r));
	print_result("top edge, long-range on, stretch 0.2", 20, &r);
	CHECKF(r.max_strain > 0.011f, "max strain %.4f %%: the soft sheet was held to 1 %%",
	       100.0 * r.max_strain);
}

/* Plain Gauss-Seidel: settles at every count and the strain falls as the
 * iterations rise. */
static void test_sheet_plain_gauss_seidel(void)
{
	const int32_t iters[3] = {10, 20, 40};
	sheet_result r[3];
	for (int i = 0; i < 3; i++) {
		CHECKF(run_sheet(iters[i], 0, 0, 1.0f, &r[i]), "4x%d run failed", iters[i]);
		print_result("top edge, plain Gauss-Seidel", iters[i], &r[i]);
	}
	for (int i = 0; i < 3; i++)
		CHECKF(r[i].ke < SHEET_KE_BOUND, "4x%d: KE %.3g J >= %.1e J", iters[i], r[i].ke,
		       SHEET_KE_BOUND);
	CHECKF(r[0].max_strain > r[1].max_strain && r[1].max_strain > r[2].max_strain,
	       "max strain does not fall with iterations: %.5f %.5f %.5f", (double)r[0].max_strain,
	       (double)r[1].max_strain, (double)r[2].max_strain);
	CHECKF(r[0].mean_strain > r[1].mean_strain && r[1].mean_strain > r[2].mean_strain,
	       "mean strain does not fall with iterations: %.5f %.5f %.5f",
	       (double)r[0].mean_strain, (double)r[1].mean_strain, (double)r[2].mean_strain);
}

/* Two top corners pinned: reported, not hidden. Plain Gauss-Seidel
 * concentrates the strain at the corners; only finiteness is asserted. (With
 * the long-range attachments on, the same run measured 14.7 % max, 0.85 %
 * mean strain; it is left out here to keep the suite short.) */
static void test_sheet_corners(void)
{
	sheet_result plain;
	CHECK(run_sheet(20, 1, 0, 1.0f, &plain));
	print_result("two corners, plain Gauss-Seidel", 20, &plain);
	CHECK(isfinite(plain.max_strain) && isfinite(plain.ke));
}

static const check_test tests[] = {
	CHECK_TEST(test_sheet_default),
	CHECK_TEST(test_soft_sheet_not_strain_limited),
	CHECK_TEST(test_sheet_plain_gauss_seidel),
	CHECK_TEST(test_sheet_corners),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
