/*
 * The demo's garment scene end to end in process: examples/garment.json
 * loaded with the client's scene reader (the MakeHuman T-shirt and trousers
 * on the body they were modelled on), solved for the scene's frames with the
 * scene's parameters, and checked against an independent field of the body.
 * Run from the project root (tests/run.sh does), or give the scene's path as
 * DRAPE_GARMENT_SCENE.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/scene.h"
#include "drape/sim.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"

/* The first frames in which vertices may still be inside the body: the
 * suit's mesh starts with a few vertices up to 1 cm inside
 * (tests/data/meshes/SOURCES.md), and the collider pushes them out only as
 * fast as stretch, bend and self-collision let it. */
#define GARMENT_SETTLE_FRAMES 3

/* Under AddressSanitizer, where the case's purpose is memory safety, the
 * scene is solved for its first GARMENT_FRAMES frames (the first second,
 * half the scene's 48): the same scene, field and checks, each frame
 * checked as in the plain pass, which solves them all
 * (docs/testsuite.md). */
#ifndef GARMENT_SANITIZED
#if defined(__SANITIZE_ADDRESS__)
#define GARMENT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GARMENT_SANITIZED 1
#endif
#endif
#endif
#ifndef GARMENT_SANITIZED
#define GARMENT_SANITIZED 0
#endif
#ifndef GARMENT_FRAMES
#define GARMENT_FRAMES (GARMENT_SANITIZED ? 24u : UINT32_MAX)
#endif

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Minimum field distance over the points, the number below -depth, and
 * the number not finite. */
static void depth_stats(const drape_sdf *sdf, const float *xyz, uint32_t n, float *dist, float depth,
			float *min_out, uint32_t *deep_out, uint32_t *nan_out)
{
	uint32_t nan = 0, deep = 0;
	for (uint32_t i = 0; i < 3 * n; i++)
		nan += !isfinite(xyz[i]);
	drape_sdf_sample(sdf, xyz, n, dist, NULL);
	float mn = INFINITY;
	for (uint32_t i = 0; i < n; i++) {
		mn = fminf(mn, dist[i]);
		deep += dist[i] < -depth;
	}
	*min_out = mn;
	*deep_out = deep;
	*nan_out = nan;
}

static void test_garment_drape(void)
{
	const char *path = getenv("DRAPE_GARMENT_SCENE");
	if (path == NULL)
		path = "examples/garment.json";
	drape_scene sc;
	drape_error err;
	drape_error_clear(&err);
	CHECKF(drape_scene_read(path, NULL, &sc, &err) == DRAPE_OK, "%s", err.message);
	const drape_collider_desc *body = NULL;
	const drape_obj_mesh *body_mesh = NULL;
	for (uint32_t i = 0; i < sc.collider_count; i++)
		if (sc.colliders[i].shape == DRAPE_SHAPE_MESH && body == NULL) {
			body = &sc.colliders[i];
			body_mesh = &sc.collider_meshes[i];
		}
	if (body == NULL) {
		drape_scene_free(&sc);
		CHECK(!"the garment scene has no mesh collider");
	}

	/* The body's field at the scene's voxel size, with a band wide enough
	 * (3 cm) to measure any depth that matters here. It is built once and
	 * handed to the sim as the collider's field: a second build of the
	 * same mesh would double the test's slowest part (seconds under
	 * AddressSanitizer) and check nothing the collider tests do not. */
	drape_sdf *check = NULL;
	drape_err rc = drape_sdf_build(body_mesh->positions, body_mesh->vertex_count, body_mesh->triangles,
				       body_mesh->triangle_count, body->voxel_size, 0.03f, 0, &check, &err);
	if (rc != DRAPE_OK) {
		drape_scene_free(&sc);
		CHECKF(0, "drape_sdf_build: %s", err.message);
	}
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = sc.cloth.positions;
	d.vertex_count = sc.cloth.vertex_count;
	d.triangles = sc.cloth.triangles;
	d.triangle_count = sc.cloth.triangle_count;
	d.pins = sc.pins;
	d.pin_count = sc.pin_count;
	d.uvs = sc.cloth.uvs;
	d.params = sc.params;
	drape_sim *sim = NULL;
	int ok = drape_sim_create(&d, &sim, &err) == DRAPE_OK;
	for (uint32_t i = 0; ok && i < sc.collider_count; i++) {
		drape_collider_desc cd = sc.colliders[i];
		if (&sc.colliders[i] == body)
			cd.sdf = check;
		ok = drape_sim_add_collider(sim, &cd, NULL, &err) == DRAPE_OK;
	}
	for (uint32_t i = 0; ok && i < sc.pin_count; i++)
		if (sc.pin_attach[i] != DRAPE_SCENE_NO_ATTACH)
			ok = drape_sim_attach_pins(sim, &sc.pins[i], 1, (uint32_t)sc.pin_attach[i], &err) ==
			     DRAPE_OK;
	if (!ok) {
		drape_sim_destroy(sim);
		drape_sdf_release(check);
		drape_scene_free(&sc);
		CHECKF(0, "building the sim: %s", err.message);
	}

	drape_sdf_info info;
	drape_sdf_get_info(check, &info);

	const uint32_t n = sc.cloth.vertex_count;
	const float th = sc.params.thickness;
	float *xyz = malloc((size_t)n * 3 * sizeof *xyz), *dist = malloc((size_t)n * sizeof *dist);
	float mn0 = 0, late_min = INFINITY, all_min = INFINITY, mn = 0;
	uint32_t deep0 = 0, nan0 = 0, late_nan = 0, all_deep = 0, deep = 0, nan = 0;
	int late_frame = 0, all_frame = 0, frames = 0;
	double solve_ms = 0, sample_ms = 0;
	ok = xyz != NULL && dist != NULL;
	if (ok) {
		drape_sim_get_positions(sim, xyz);
		depth_stats(check, xyz, n, dist, th, &mn0, &deep0, &nan0);
		/* SOURCES.md counts 7 vertices inside, all under 1 cm deep. */
		uint32_t inside = 0;
		for (uint32_t i = 0; i < n; i++)
			inside += dist[i] < 0;
		printf("  start: %u cloth vertices, %u inside the body (deepest %.2f mm), %u deeper than "
		       "thickness %.1f mm\n",
		       n, inside, -mn0 * 1e3, deep0, th * 1e3);
	}
	const uint32_t want = sc.frames < GARMENT_FRAMES ? sc.frames : GARMENT_FRAMES;
	for (uint32_t f = 1; ok && f <= want; f++) {
		drape_sim_stats st;
		ok = drape_sim_step(sim, &st, &err) == DRAPE_OK;
		if (!ok)
			break;
		frames++;
		solve_ms += st.solve_ms;
		drape_sim_get_positions(sim, xyz);
		double t = now_ms();
		depth_stats(check, xyz, n, dist, th, &mn, &deep, &nan);
		sample_ms += now_ms() - t;
		if (f <= GARMENT_SETTLE_FRAMES || f % 12 == 0)
			printf("  frame %2u: nearest vertex %.2f mm from the body (negative inside), %u "
			       "deeper than thickness, %.1f ms\n",
			       f, mn * 1e3, deep, st.solve_ms);
		if (mn < all_min)
			all_min = mn, all_frame = (int)f;
		all_deep += deep;
		if (f > GARMENT_SETTLE_FRAMES) {
			if (mn < late_min)
				late_min = mn, late_frame = (int)f;
			late_nan += nan;
		}
	}
	printf("  %d frames at %g fps (%d substeps, %d iterations, self-collision %s): %.1f ms per frame; "
	       "body field (voxel %.4g m, %llu voxels, %.1f MB) built in %.0f ms; "
	       "sampling %.3f us per point\n",
	       frames, (double)sc.params.fps, sc.params.substeps, sc.params.iterations,
	       sc.params.self_collision ? "on" : "off", frames ? solve_ms / frames : 0.0,
	       (double)info.voxel_size, (unsigned long long)info.voxels, info.bytes / 1e6, info.build_ms,
	       frames ? sample_ms * 1e3 / ((double)frames * n) : 0.0);
	printf("  all frames: nearest %.2f mm (frame %d), %u vertex-frames deeper than thickness; after "
	       "frame %d: nearest %.2f mm (frame %d), %u not finite\n",
	       all_min * 1e3, all_frame, all_deep, GARMENT_SETTLE_FRAMES, late_min * 1e3, late_frame,
	       late_nan);
	free(xyz);
	free(dist);
	drape_sdf_release(check);
	drape_sim_destroy(sim);
	drape_scene_free(&sc);
	CHECKF(ok && (uint32_t)frames == want, "stopped after %d of %u frames: %s", frames, want,
	       err.message);
	CHECK(nan0 == 0);
	CHECKF(late_nan == 0, "%u vertex-frames not finite", late_nan);
	/* The bound, at every frame: the suit starts at most 0.73 mm
	 * inside, less than the thickness, so even the first frames must hold. */
	CHECKF(all_deep == 0 && all_min >= -th,
	       "a cloth vertex was %.2f mm inside the body at frame %d (thickness %.1f mm)",
	       -all_min * 1e3, all_frame, th * 1e3);
	/* Stronger, once the start's 7 slightly buried vertices are out: none
	 * inside at all. Self-collision is projected after the obstacles and may
	 * push a vertex back toward the body, but by less than the thickness
	 * the obstacle projection leaves. */
	CHECKF(late_min >= 0, "a cloth vertex was %.2f mm inside the body at frame %d", -late_min * 1e3,
	       late_frame);
}

/*
 * examples/tshirt.json: DiffCloth's T-shirt (units not stated) placed with
 * scale, rotate and translate on GarmentCode's mean body (README, Scene
 * files). The shirt's sleeves are modelled level and the body's arms hang
 * in an A-pose, so the start has a few hundred vertices inside the arms
 * and shoulders, up to 4 cm deep; the first frames must bring every one of
 * them out on the outer side without tangling the cloth or tearing it. The
 * measures are the test's own: inside by ray parity over the body's
 * triangles with the exact distance to them (deform_geometry.h), the
 * intersecting pairs of drape_preflight, and the edge strain against the
 * placed mesh, the rest shape of a cloth without a rest_mesh.
 */
#ifndef TSHIRT_FRAMES
#define TSHIRT_FRAMES 4u
#endif

/* Largest and 99th percentile (nearest rank) edge strain |l / l0 - 1| over
 * the triangles' edges (interior ones counted twice, which moves neither). */
static void edge_strain(const float *rest, const float *x, const uint32_t *tri, uint32_t nt, double *max_out,
			double *p99_out)
{
	double *s = malloc((size_t)nt * 3 * sizeof *s + 1);
	size_t m = 0;
	for (uint32_t t = 0; s != NULL && t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t a = tri[3 * (size_t)t + k], b = tri[3 * (size_t)t + (k + 1) % 3];
			double l0 = 0, l = 0;
			for (int j = 0; j < 3; j++) {
				double d0 = (double)rest[3 * (size_t)a + j] - rest[3 * (size_t)b + j];
				double d = (double)x[3 * (size_t)a + j] - x[3 * (size_t)b + j];
				l0 += d0 * d0, l += d * d;
			}
			if (l0 > 0)
				s[m++] = fabs(sqrt(l / l0) - 1.0);
		}
	double mx = 0;
	for (size_t i = 0; i < m; i++)
		mx = s[i] > mx ? s[i] : mx;
	/* The 99th percentile by counting: the smallest value with 99 % at or below. */
	double lo = 0, hi = mx;
	for (int it = 0; it < 60 && m > 0; it++) {
		double mid = 0.5 * (lo + hi);
		size_t below = 0;
		for (size_t i = 0; i < m; i++)
			below += s[i] <= mid;
		if ((double)below >= 0.99 * (double)m)
			hi = mid;
		else
			lo = mid;
	}
	free(s);
	*max_out = mx;
	*p99_out = hi;
}

/* The worst of the frames a tshirt_run measured. */
typedef struct tshirt_worst {
	uint32_t start_inside, frames;
	double thickness, start_deep, deep, max, p99, cpu;
	uint64_t pairs;
	/* At the last frame: the cloth's highest point over each shoulder
	 * (0.1 to 0.2 m either side of the body's middle) less the body's,
	 * m, and the cloth's mean x. */
	double top_left, top_right, mean_x;
} tshirt_worst;

static double top_over(const float *xyz, uint32_t n, double lo, double hi)
{
	double top = -INFINITY;
	for (uint32_t i = 0; i < n; i++)
		if (xyz[3 * (size_t)i] > lo && xyz[3 * (size_t)i] < hi && xyz[3 * (size_t)i + 1] > top)
			top = xyz[3 * (size_t)i + 1];
	return top;
}

/*
 * Runs examples/tshirt.json for `frames` frames with the cloth scaled by
 * `grow` about the scene's translate and lifted by `lift` (1 and 0: the
 * scene as it is), measuring each frame as test_tshirt_drape describes;
 * the strain's max counts from frame max_from, its p99 from p99_from.
 */
static int tshirt_run(double grow, double lift, uint32_t frames, uint32_t max_from, uint32_t p99_from,
		      tshirt_worst *w, drape_error *err)
{
	/* The scene's placement: p = R (v * scale) + translate, so scaling
	 * about translate scales the mesh's own size. */
	static const double translate[3] = {0, 0.66, 0.045};
	memset(w, 0, sizeof *w);
	drape_scene sc;
	if (drape_scene_read("examples/tshirt.json", NULL, &sc, err) != DRAPE_OK)
		return 0;
	if (sc.collider_count != 1 || sc.colliders[0].shape != DRAPE_SHAPE_MESH) {
		drape_scene_free(&sc);
		return 0;
	}
	const drape_collider_desc *body = &sc.colliders[0];
	const uint32_t n = sc.cloth.vertex_count;
	w->thickness = sc.params.thickness;
	for (uint32_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			float *c = &sc.cloth.positions[3 * (size_t)i + k];
			*c = (float)((*c - translate[k]) * grow + translate[k] + (k == 1 ? lift : 0.0));
		}
	float *rest = malloc((size_t)n * 3 * sizeof *rest), *xyz = malloc((size_t)n * 3 * sizeof *xyz);
	drape_tri_pair pair;
	uint64_t pairs = 0;
	uint32_t inside = 0;
	double deep = 0;
	drape_sim *sim = NULL;
	int ok = rest != NULL && xyz != NULL;
	if (ok) {
		memcpy(rest, sc.cloth.positions, (size_t)n * 3 * sizeof *rest);
		w->start_deep = deepest_inside(rest, n, body->vertices, body->triangles, body->vertex_count,
					       body->triangle_count, &w->start_inside);
		printf("  start (size x %.4g, lifted %+.3f m): %u of %u cloth vertices inside the body (deepest "
		       "%.1f mm)\n",
		       grow, lift, w->start_inside, n, w->start_deep * 1e3);
		drape_sim_desc d;
		drape_sim_desc_default(&d);
		d.positions = sc.cloth.positions;
		d.vertex_count = n;
		d.triangles = sc.cloth.triangles;
		d.triangle_count = sc.cloth.triangle_count;
		d.uvs = sc.cloth.uvs;
		d.params = sc.params;
		ok = drape_sim_create(&d, &sim, err) == DRAPE_OK && drape_sim_add_collider(sim, body, NULL, err) == DRAPE_OK;
	}
	for (uint32_t f = 1; ok && f <= frames; f++) {
		drape_sim_stats st;
		double t0 = (double)clock() / CLOCKS_PER_SEC;
		ok = drape_sim_step(sim, &st, err) == DRAPE_OK;
		w->cpu += (double)clock() / CLOCKS_PER_SEC - t0;
		if (!ok)
			break;
		w->frames++;
		drape_sim_get_positions(sim, xyz);
		deep = deepest_inside(xyz, n, body->vertices, body->triangles, body->vertex_count,
				      body->triangle_count, &inside);
		ok = drape_preflight(xyz, n, sc.cloth.triangles, sc.cloth.triangle_count, &pair, 1, &pairs, err) ==
		     DRAPE_OK;
		double mx = 0, p99 = 0;
		edge_strain(rest, xyz, sc.cloth.triangles, sc.cloth.triangle_count, &mx, &p99);
		printf("  frame %u: %u inside (deepest %.3f mm), %llu intersecting pairs, edge strain max %.3f "
		       "p99 %.4f\n",
		       f, inside, deep * 1e3, (unsigned long long)pairs, mx, p99);
		w->deep = deep > w->deep ? deep : w->deep;
		w->pairs = pairs > w->pairs ? pairs : w->pairs;
		if (f >= max_from)
			w->max = mx > w->max ? mx : w->max;
		if (f >= p99_from)
			w->p99 = p99 > w->p99 ? p99 : w->p99;
	}
	if (ok) {
		const float *bv = body->vertices;
		const uint32_t nb = body->vertex_count;
		w->top_left = top_over(xyz, n, 0.1, 0.2) - top_over(bv, nb, 0.1, 0.2);
		w->top_right = top_over(xyz, n, -0.2, -0.1) - top_over(bv, nb, -0.2, -0.1);
		for (uint32_t i = 0; i < n; i++)
			w->mean_x += xyz[3 * (size_t)i] / n;
		printf("  %u frames, %.0f ms CPU per frame (the process's clock, every thread); the cloth's top "
		       "%+.1f mm over the body's left shoulder, %+.1f mm over its right; mean x %+.1f mm\n",
		       w->frames, w->frames ? w->cpu * 1e3 / w->frames : 0.0, w->top_left * 1e3,
		       w->top_right * 1e3, w->mean_x * 1e3);
	}
	drape_sim_destroy(sim);
	drape_scene_free(&sc);
	free(rest);
	free(xyz);
	return ok && w->frames == frames;
}

static void test_tshirt_drape(void)
{
	drape_error err;
	drape_error_clear(&err);
	tshirt_worst w;
	/* Frame 1 is the push out of the arms (p99 0.11 when written), so
	 * the p99 is taken from frame 2 on. */
	int ok = tshirt_run(1.0, 0.0, TSHIRT_FRAMES, 1, 2, &w, &err);
	/* The case is the placement's: a start that is already clear tests
	 * nothing here (the count was 248, up to 36.9 mm deep, when written). */
	CHECKF(w.start_inside > 100 && w.start_deep > 0.02, "the start has %u vertices inside, %.1f mm deep",
	       w.start_inside, w.start_deep * 1e3);
	CHECKF(ok, "stopped after %u frames: %s", w.frames, err.message);
	const double th = w.thickness;
	CHECKF(w.deep <= 0.1 * th, "a cloth vertex %.3f mm inside the body (bar 0.1 x thickness = %.2f mm)",
	       w.deep * 1e3, 0.1 * th * 1e3);
	CHECKF(w.pairs == 0, "%llu intersecting pairs", (unsigned long long)w.pairs);
	/* Cotton under its own weight stretches by well under 0.1 %; pushing
	 * 4 cm deep vertices out of the arms strains the edges around them,
	 * but a blow-up or a cloth caught on the wrong side of an arm strains
	 * them by whole multiples (the shirt at scale 0.08 reached 3.6). */
	CHECKF(w.max < 0.4 && w.p99 < 0.08, "edge strain max %.3f p99 %.4f", w.max, w.p99);
}

/*
 * The same shirt looser: "scale": 0.08 instead of 0.065 (a user's scene),
 * lowered 13 cm so its shoulders are 8 cm over the body's rather than
 * 19: 29 vertices start inside, the underside of each level sleeve cut
 * lengthwise through the sloping upper arm, up to 33 mm deep. Each
 * vertex pushed to its nearest surface put the arm between the front and
 * back halves of that cut, and the edges across stayed stretched by 2.2
 * from frame 1 to 48 (docs/garments.md). A real shirt a size larger still
 * hangs from the shoulders, its cotton stretched by a fraction of a
 * percent under its weight; the sleeves' start inside the arms is a
 * placement's, let go over the first frames, so the bars count from frame
 * TSHIRT_LOOSE_SETTLE: strain max under 0.4 and p99 under 0.08 (the
 * scene's own at 0.065), no vertex inside, no crossing, and the cloth's
 * top over each shoulder within TSHIRT_SHOULDER of the body's with the
 * cloth centred on it.
 */
#ifndef TSHIRT_LOOSE_FRAMES
#define TSHIRT_LOOSE_FRAMES 12u
#endif
#define TSHIRT_LOOSE_SETTLE 4u
#define TSHIRT_SHOULDER 0.03

static void test_tshirt_loose(void)
{
	drape_error err;
	drape_error_clear(&err);
	tshirt_worst w;
	int ok = tshirt_run(0.08 / 0.065, -0.13, TSHIRT_LOOSE_FRAMES, TSHIRT_LOOSE_SETTLE, TSHIRT_LOOSE_SETTLE,
			    &w, &err);
	CHECKF(w.start_inside > 10 && w.start_deep > 0.02, "the start has %u vertices inside, %.1f mm deep",
	       w.start_inside, w.start_deep * 1e3);
	CHECKF(ok, "stopped after %u frames: %s", w.frames, err.message);
	CHECKF(w.deep <= 0.1 * w.thickness, "a cloth vertex %.3f mm inside the body", w.deep * 1e3);
	CHECKF(w.pairs == 0, "%llu intersecting pairs", (unsigned long long)w.pairs);
	CHECKF(w.max < 0.4 && w.p99 < 0.08, "edge strain from frame %u: max %.3f p99 %.4f", TSHIRT_LOOSE_SETTLE,
	       w.max, w.p99);
	CHECKF(fabs(w.top_left) < TSHIRT_SHOULDER && fabs(w.top_right) < TSHIRT_SHOULDER &&
		       fabs(w.mean_x) < 0.02,
	       "the cloth's top %+.1f / %+.1f mm over the body's shoulders, mean x %+.1f mm", w.top_left * 1e3,
	       w.top_right * 1e3, w.mean_x * 1e3);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_garment_drape),
		CHECK_TEST(test_tshirt_drape),
		CHECK_TEST(test_tshirt_loose),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
