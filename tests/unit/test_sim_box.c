/*
 * The body contacts' inline box min and max (server/sim/box.h) are libm's
 * fminf and fmaxf bit for bit, NaN and signed zeros included, so the boxes
 * built with them, and the hash and pairs that follow, are unchanged.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "server/sim/box.h"

/* Through a volatile pointer, so the compiler cannot fold libm's calls. */
static float call_min(float (*volatile f)(float, float), float a, float b)
{
	return f(a, b);
}

static void test_minmax(void)
{
	const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, -1e-45f, INFINITY, -INFINITY, NAN, 3.5f};
	const int n = (int)(sizeof v / sizeof v[0]);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float a = sim_box_min(v[i], v[j]), b = call_min(fminf, v[i], v[j]);
			float c = sim_box_max(v[i], v[j]), d = call_min(fmaxf, v[i], v[j]);
			CHECKF((isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0, "min(%g, %g): %g, libm %g",
			       v[i], v[j], a, b);
			CHECKF((isnan(c) && isnan(d)) || memcmp(&c, &d, 4) == 0, "max(%g, %g): %g, libm %g",
			       v[i], v[j], c, d);
		}
}

static const check_test tests[] = {
	CHECK_TEST(test_minmax),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
