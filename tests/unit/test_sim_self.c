/*
 * Self-collision module (server/sim/selfcollide.c) and the preflight
 * intersection check (server/sim/preflight.c), tested on the module directly:
 * begin_substep / project / end_substep on hand-built positions, without the
 * solver step.
 */
#include "check.h"

#include "drape/sim.h"
#include "server/sim/selfcollide.h"

#include <stdint.h>
#include <time.h>

/* ---- helpers ---------------------------------------------------------------- */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Deterministic pseudo-random numbers (xorshift), so failures reproduce. */
static uint64_t rng_state = 88172645463325252ull;
static double rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static sim_vec4 V4(float x, float y, float z, float w)
{
	return (sim_vec4){x, y, z, w};
}

/* Signed distance of q to the plane of triangle abc (normal by the right-hand
 * rule a -> b -> c). */
static double plane_dist(sim_vec4 q, sim_vec4 a, sim_vec4 b, sim_vec4 c)
{
	double ab[3] = {b.x - a.x, b.y - a.y, b.z - a.z}, ac[3] = {c.x - a.x, c.y - a.y, c.z - a.z};
	double n[3] = {ab[1] * ac[2] - ab[2] * ac[1], ab[2] * ac[0] - ab[0] * ac[2],
		       ab[0] * ac[1] - ab[1] * ac[0]};
	double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
	return ((q.x - a.x) * n[0] + (q.y - a.y) * n[1] + (q.z - a.z) * n[2]) / l;
}

/* Sum over vertices of m_i * (after_i - before_i), m = 1/w; all w > 0. */
static void momentum_change(const sim_vec4 *before, const sim_vec4 *after, uint32_t n, double out[3])
{
	out[0] = out[1] = out[2] = 0.0;
	for (uint32_t i = 0; i < n; i++) {
		double m = 1.0 / after[i].w;
		out[0] += m * ((double)after[i].x - before[i].x);
		out[1] += m * ((double)after[i].y - before[i].y);
		out[2] += m * ((double)after[i].z - before[i].z);
	}
}

static int all_finite(const sim_vec4 *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!isfinite(p[i].x) || !isfinite(p[i].y) || !isfinite(p[i].z))
			return 0;
	return 1;
}

/* One substep of the module as sim.c drives it. */
static void substep(sim_self *s, const sim_vec4 *x, sim_vec4 *p, float thickness, float friction,
		    int iterations)
{
	sim_self_begin_substep(s, x, p, thickness);
	for (int it = 0; it < iterations; it++)
		sim_self_project(s, p, x, thickness, friction);
	sim_self_end_substep(s, p, x, thickness);
}

/* Intersecting triangle pairs of positions p (vec4), through drape_preflight. */
static uint64_t intersections(const sim_vec4 *p, uint32_t nv, const uint32_t *tris, uint32_t nt)
{
	float *xyz = malloc(3 * (size_t)nv * sizeof *xyz);
	for (uint32_t i = 0; i < nv; i++) {
		xyz[3 * i] = p[i].x;
		xyz[3 * i + 1] = p[i].y;
		xyz[3 * i + 2] = p[i].z;
	}
	uint64_t count = UINT64_MAX;
	drape_err rc = drape_preflight(xyz, nv, tris, nt, NULL, 0, &count, NULL);
	free(xyz);
	return rc == DRAPE_OK ? count : UINT64_MAX;
}

/* A grid of (nx+1) x (ny+1) vertices spacing h in the xy plane at height z,
 * each quad split along the same diagonal. Returns the triangle count. */
static uint32_t grid(uint32_t nx, uint32_t ny, float h, float z, float w, sim_vec4 *pos,
		     uint32_t *tris, uint32_t base)
{
	for (uint32_t j = 0; j <= ny; j++)
		for (uint32_t i = 0; i <= nx; i++)
			pos[j * (nx + 1) + i] = V4((float)i * h, (float)j * h, z, w);
	uint32_t t = 0;
	for (uint32_t j = 0; j < ny; j++)
		for (uint32_t i = 0; i < nx; i++) {
			uint32_t a = base + j * (nx + 1) + i, b = a + 1, c = a + nx + 1, d = c + 1;
			tris[3 * t] = a, tris[3 * t + 1] = b, tris[3 * t + 2] = d;
			t++;
			tris[3 * t] = a, tris[3 * t + 1] = d, tris[3 * t + 2] = c;
			t++;
		}
	return t;
}

/* ---- vertex-triangle ---------------------------------------------------------- */

/* A vertex over the triangle at x and far below it at p (it would cross in
 * one substep) ends above the triangle, at least at the thickness. */
static void test_fast_vertex_stopped(void)
{
	const uint32_t tri[3] = {0, 1, 2};
	for (int pinned = 0; pinned < 2; pinned++) {
		float wt = pinned ? 0.0f : 1.0f;
		sim_vec4 x[4] = {V4(-1, -1, 0, wt), V4(2, -1, 0, wt), V4(-1, 2, 0, wt),
				 V4(0.2f, 0.2f, 0.1f, 1)};
		sim_vec4 p[4];
		memcpy(p, x, sizeof x);
		p[3].z = -1.0f;
		sim_self *s = NULL;
		CHECK_OK(sim_self_create(tri, 1, 4, x, &s, NULL));
		substep(s, x, p, 0.01f, 0.0f, 10);
		CHECKF(sim_self_pair_count(s) >= 1, "pairs %u", sim_self_pair_count(s));
		double d = plane_dist(p[3], p[0], p[1], p[2]);
		sim_self_destroy(s);
		CHECKF(d >= 0.0099, "pinned %d: vertex ends at %.6g from the plane, want >= 0.0099",
		       pinned, d);
		if (pinned)
			for (int k = 0; k < 3; k++)
				CHECK(memcmp(&p[k], &x[k], sizeof p[k]) == 0);
	}
}

/* The guard alone (no projection, thickness 0) stops the same vertex on its
 * own side. */
static void test_guard_alone_stops_vertex(void)
{
	const uint32_t tri[3] = {0, 1, 2};
	sim_vec4 x[4] = {V4(-1, -1, 0, 1), V4(2, -1, 0, 1), V4(-1, 2, 0, 1), V4(0.2f, 0.2f, 0.1f, 1)};
	sim_vec4 p[4];
	memcpy(p, x, sizeof x);
	p[3].z = -1.0f;
	p[0].z = p[1].z = p[2].z = 0.2f; /* and the triangle moves up through it */
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tri, 1, 4, x, &s, NULL));
	sim_self_begin_substep(s, x, p, 0.0f);
	sim_self_end_substep(s, p, x, 0.0f);
	sim_self_destroy(s);
	double d = plane_dist(p[3], p[0], p[1], p[2]);
	CHECKF(d > 0.0, "vertex ends at %.6g from the plane (crossed)", d);
	CHECK(all_finite(p, 4));
}

/* A vertex touching a triangle at x that falls faster than the triangle
 * (the guard alone, thickness 0): the pair is not stopped at x, which would
 * throw its momentum away and, repeated every substep, freeze a pinch the
 * projections cannot open. It moves on with the pair's mean motion, on its
 * own side. */
static void test_guard_keeps_touching_pair_moving(void)
{
	const uint32_t tri[3] = {0, 1, 2};
	sim_vec4 x[4] = {V4(-1, -1, 0, 1), V4(2, -1, 0, 1), V4(-1, 2, 0, 1), V4(0.2f, 0.2f, 1e-7f, 1)};
	sim_vec4 p[4];
	for (int k = 0; k < 4; k++)
		p[k] = V4(x[k].x, x[k].y, x[k].z - (k == 3 ? 0.3f : 0.1f), 1);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tri, 1, 4, x, &s, NULL));
	sim_self_begin_substep(s, x, p, 0.0f);
	sim_self_end_substep(s, p, x, 0.0f);
	sim_self_destroy(s);
	double d = plane_dist(p[3], p[0], p[1], p[2]);
	CHECKF(d >= 0.0, "vertex ends at %.6g from the plane (crossed)", d);
	/* The mean motion of four equal masses is -0.15. */
	for (int k = 0; k < 4; k++)
		CHECKF(fabsf(p[k].z - x[k].z + 0.15f) < 1e-5f, "vertex %d moved %.6g, want -0.15", k,
		       (double)(p[k].z - x[k].z));
	CHECK(all_finite(p, 4));
}

/* A vertex exactly on the plane at x, moving down: it takes the side it
 * comes from and ends above. */
static void test_vertex_on_plane(void)
{
	const uint32_t tri[3] = {0, 1, 2};
	sim_vec4 x[4] = {V4(-1, -1, 0, 1), V4(2, -1, 0, 1), V4(-1, 2, 0, 1), V4(0.2f, 0.2f, 0.0f, 1)};
	sim_vec4 p[4];
	memcpy(p, x, sizeof x);
	p[3].z = -0.5f;
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tri, 1, 4, x, &s, NULL));
	substep(s, x, p, 0.01f, 0.0f, 4);
	sim_self_destroy(s);
	double d = plane_dist(p[3], p[0], p[1], p[2]);
	CHECKF(d >= 0.0099, "vertex ends at %.6g", d);
	CHECK(all_finite(p, 4));
}

/* A vertex resting within the thickness is pushed to exactly the thickness;
 * with unequal masses the sum of m_i * displacement stays zero, friction
 * included, and friction (Coulomb) removes at most its coefficient times the
 * normal correction from the tangential slip. */
static void test_resting_push_conserves_momentum(void)
{
	const uint32_t tri[3] = {0, 1, 2};
	const float th = 0.01f;
	sim_vec4 x[4] = {V4(0, 0, 0, 0.5f), V4(1, 0, 0, 2.0f), V4(0, 1, 0, 1.0f),
			 V4(0.2f, 0.3f, 0.002f, 4.0f)};
	sim_vec4 p[4], before[4];
	memcpy(p, x, sizeof x);
	memcpy(before, p, sizeof p);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tri, 1, 4, x, &s, NULL));
	sim_self_begin_substep(s, x, p, th);
	sim_self_project(s, p, x, th, 0.0f);
	double d = plane_dist(p[3], p[0], p[1], p[2]);
	double mom[3];
	momentum_change(before, p, 4, mom);
	CHECK_NEAR(d, th, 1e-6);
	CHECKF(fabs(p[3].z - before[3].z) > 0.004, "vertex moved only %.3g", p[3].z - before[3].z);
	CHECKF(p[0].z < 0.0f && p[1].z < 0.0f && p[2].z < 0.0f, "triangle not pushed down");
	CHECKF(fabs(mom[0]) + fabs(mom[1]) + fabs(mom[2]) < 1e-7, "momentum change (%.3g %.3g %.3g)",
	       mom[0], mom[1], mom[2]);

	/* Friction: the vertex slides 0.05 along x this substep. */
	memcpy(p, x, sizeof x);
	p[3].x += 0.05f;
	memcpy(before, p, sizeof p);
	sim_self_begin_substep(s, x, p, th);
	sim_self_project(s, p, x, th, 0.5f);
	momentum_change(before, p, 4, mom);
	CHECKF(fabs(mom[0]) + fabs(mom[1]) + fabs(mom[2]) < 1e-7,
	       "momentum change with friction (%.3g %.3g %.3g)", mom[0], mom[1], mom[2]);
	/* Relative slip of the vertex against the touched point (0.2, 0.3) of the
	 * triangle, barycentric (0.5, 0.2, 0.3): 0.05 less 0.5 times the normal
	 * correction 0.008. */
	double slip = (p[3].x - x[3].x) -
		      (0.5 * (p[0].x - x[0].x) + 0.2 * (p[1].x - x[1].x) + 0.3 * (p[2].x - x[2].x));
	CHECK_NEAR(slip, 0.046, 2e-4);

	/* A slip smaller than that limit is removed entirely (sticking). */
	memcpy(p, x, sizeof x);
	p[3].x += 0.002f;
	sim_self_begin_substep(s, x, p, th);
	sim_self_project(s, p, x, th, 0.5f);
	slip = (p[3].x - x[3].x) -
	       (0.5 * (p[0].x - x[0].x) + 0.2 * (p[1].x - x[1].x) + 0.3 * (p[2].x - x[2].x));
	CHECK_NEAR(slip, 0.0, 1e-6);
	sim_self_destroy(s);
}

/*
 * A vertex that the iterations move towards a triangle after begin_substep
 * is still pushed out to the thickness, whether or not another part of the
 * cloth strayed far from its prediction meanwhile (a collider stopping it,
 * say). Before, one large stray anywhere disabled the projection's skip for
 * every pair; now each pair is skipped only by its own motion since x,
 * which must never hide a pair that came within the thickness.
 */
static void test_projection_after_stray(void)
{
	enum { N = 4, NV1 = (N + 1) * (N + 1), NV = 2 * NV1 };
	const float h = 0.1f, th = 0.02f;
	for (int far = 0; far < 2; far++) {
		sim_vec4 x[NV], p[NV];
		uint32_t tris[2 * 3 * 2 * N * N];
		uint32_t nt = grid(N, N, h, 0.0f, 1.0f, x, tris, 0);
		nt += grid(N, N, h, 1.2f * th, 1.0f, x + NV1, tris + 3 * nt, NV1);
		for (uint32_t i = NV1; i < NV; i++)
			x[i].x += 0.05f, x[i].y += 0.03f;
		memcpy(p, x, sizeof x);
		sim_self *s = NULL;
		CHECK_OK(sim_self_create(tris, nt, NV, x, &s, NULL));
		sim_self_begin_substep(s, x, p, th);
		/* Upper vertex (2, 2) over lower triangle (a, b, d) of quad (2, 2). */
		const uint32_t v = NV1 + 2 * (N + 1) + 2;
		const uint32_t a = 2 * (N + 1) + 2, b = a + 1, d = a + N + 2;
		p[v].z -= 0.9f * th;
		if (far)
			p[0].z -= 10.0f * th; /* a corner far from v strays */
		sim_self_project(s, p, x, th, 0.0f);
		double dist = plane_dist(p[v], p[a], p[b], p[d]);
		CHECKF(dist > 0.99 * th, "far stray %d: vertex left %.4g above the triangle (thickness %g)",
		       far, dist, (double)th);
		sim_self_destroy(s);
	}
}

/*
 * A vertex or a triangle that strays far from its prediction after the
 * candidates were collected, on sheets large enough that the end-of-substep
 * check re-collects only around the strayed vertex (recollect_strayed): the
 * pair it now crosses was never a candidate, so only that partial
 * re-collection lets the guard stop it. Case 0 moves a vertex of the upper
 * sheet down through the lower one; case 1 moves a vertex of the lower sheet
 * up through the upper one, so the strayed side is the triangle and the
 * vertex it meets lies in an unmarked chunk.
 */
static void test_partial_recollection_stops_stray(void)
{
	enum { N = 24, NV1 = (N + 1) * (N + 1), NV = 2 * NV1 };
	const float h = 0.02f, th = 0.01f;
	static sim_vec4 x[NV], p[NV];
	static uint32_t tris[2 * 3 * 2 * N * N];
	for (int up = 0; up < 2; up++) {
		uint32_t nt = grid(N, N, h, 0.0f, 1.0f, x, tris, 0);
		nt += grid(N, N, h, 0.05f, 1.0f, x + NV1, tris + 3 * nt, NV1);
		/* Shift the upper sheet by a third of a cell so its vertices sit
		 * over the lower triangles' interiors, and the other way round. */
		for (uint32_t i = NV1; i < NV; i++)
			x[i].x += h / 3.0f, x[i].y += h / 5.0f;
		memcpy(p, x, sizeof x);
		sim_self *s = NULL;
		CHECK_OK(sim_self_create(tris, nt, NV, x, &s, NULL));
		sim_self_begin_substep(s, x, p, th);
		uint32_t before = sim_self_pair_count(s);
		const uint32_t mid = (N / 2) * (N + 1) + N / 2;
		const uint32_t v = up ? mid : NV1 + mid;
		p[v].z = up ? 0.1f : -0.05f;
		sim_self_end_substep(s, p, x, th);
		uint32_t after = sim_self_pair_count(s);
		sim_self_destroy(s);
		uint64_t crossings = intersections(p, NV, tris, nt);
		CHECKF(crossings == 0, "case %d: %llu intersecting triangle pairs after the guard "
		       "(pairs %u before the stray, %u after)", up, (unsigned long long)crossings,
		       before, after);
		CHECKF(after > before, "case %d: no pair re-collected (%u before, %u after)", up,
		       before, after);
		CHECK(all_finite(p, NV));
	}
}

/* Pinned vertices (w = 0) never move, whichever side of the pair they are. */
static void test_pinned_never_move(void)
{
	const uint32_t tri[3] = {0, 1, 2};
	const float th = 0.01f;
	/* Triangle pinned: only the vertex moves. */
	sim_vec4 x[4] = {V4(0, 0, 0, 0), V4(1, 0, 0, 0), V4(0, 1, 0, 0), V4(0.2f, 0.3f, 0.002f, 1)};
	sim_vec4 p[4];
	memcpy(p, x, sizeof x);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tri, 1, 4, x, &s, NULL));
	substep(s, x, p, th, 0.3f, 5);
	CHECK(memcmp(p, x, 3 * sizeof *p) == 0);
	CHECK_NEAR(p[3].z, th, 1e-6);
	/* Vertex pinned: only the triangle moves, down by the missing distance. */
	for (int k = 0; k < 3; k++)
		x[k].w = 1.0f;
	x[3].w = 0.0f;
	memcpy(p, x, sizeof x);
	substep(s, x, p, th, 0.3f, 5);
	CHECK(memcmp(&p[3], &x[3], sizeof p[3]) == 0);
	CHECK_NEAR(plane_dist(p[3], p[0], p[1], p[2]), th, 1e-5);
	/* Everything pinned: no pair at all. */
	for (int k = 0; k < 4; k++)
		x[k].w = 0.0f;
	memcpy(p, x, sizeof x);
	substep(s, x, p, th, 0.3f, 5);
	CHECK(sim_self_pair_count(s) == 0);
	CHECK(memcmp(p, x, sizeof x) == 0);
	sim_self_destroy(s);
}

/* A zero-area triangle in the mesh is skipped: no NaN anywhere, and its
 * vertices are still kept away from the valid triangle. */
static void test_degenerate_triangle(void)
{
	const uint32_t tris[6] = {0, 1, 2, 3, 4, 5};
	sim_vec4 x[6] = {V4(0.1f, 0.1f, 0.001f, 1), V4(0.2f, 0.1f, 0.001f, 1),
			 V4(0.3f, 0.1f, 0.001f, 1), /* collinear: zero area */
			 V4(0, 0, 0, 1), V4(1, 0, 0, 1), V4(0, 1, 0, 1)};
	sim_vec4 p[6];
	memcpy(p, x, sizeof p);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tris, 2, 6, x, &s, NULL));
	substep(s, x, p, 0.01f, 0.2f, 3);
	sim_self_destroy(s);
	CHECK(all_finite(p, 6));
	for (int k = 0; k < 3; k++)
		CHECKF(plane_dist(p[k], p[3], p[4], p[5]) >= 0.0099, "vertex %d at %.6g", k,
		       plane_dist(p[k], p[3], p[4], p[5]));
}

/* ---- kinematic pins ------------------------------------------------------------ */

/*
 * A pinned patch (w = 0, moved this substep as a collider-attached pin is)
 * sweeps 10 cm down through a free 0.6 m sheet in one substep: its corners
 * go through the sheet's faces, the sheet's vertex (3, 3) through the
 * patch's face, and edges through edges. The pinned side cannot be moved
 * back, so the free side must be pushed ahead of it: no triangle pair
 * intersects at the end, the sheet under the patch ends below it, and the
 * patch is exactly where it was sent. Mode 0 has the projections and the
 * guard, mode 1 the guard alone (thickness 0).
 */
static void test_kinematic_patch_through_sheet(void)
{
	enum { N = 6, NS = (N + 1) * (N + 1), NV = NS + 4, NT = 2 * N * N + 2 };
	const float lo[2] = {0.25f, 0.26f}, hi[2] = {0.37f, 0.38f};
	sim_vec4 x[NV], p[NV];
	uint32_t tris[3 * NT];
	grid(N, N, 0.1f, 0.0f, 1.0f, x, tris, 0);
	for (int k = 0; k < 4; k++)
		x[NS + k] = V4(k & 1 ? hi[0] : lo[0], k & 2 ? hi[1] : lo[1], 0.05f, 0.0f);
	const uint32_t patch[6] = {NS, NS + 1, NS + 3, NS, NS + 3, NS + 2};
	memcpy(&tris[3 * (NT - 2)], patch, sizeof patch);
	CHECK(intersections(x, NV, tris, NT) == 0);
	for (int mode = 0; mode < 2; mode++) {
		const float th = mode ? 0.0f : 0.01f;
		memcpy(p, x, sizeof x);
		for (int k = 0; k < 4; k++)
			p[NS + k].z = -0.05f;
		sim_self *s = NULL;
		CHECK_OK(sim_self_create(tris, NT, NV, x, &s, NULL));
		substep(s, x, p, th, 0.0f, mode ? 0 : 10);
		sim_self_destroy(s);
		uint64_t crossed = intersections(p, NV, tris, NT);
		/* Sheet vertex (3, 3) at (0.3, 0.3) lies under the patch. */
		float under = p[3 * (N + 1) + 3].z;
		printf("  kinematic patch through a sheet, %s: %llu intersecting pairs, sheet "
		       "under the patch at z %.4f (patch at -0.05)\n",
		       mode ? "guard only" : "projections and guard", (unsigned long long)crossed,
		       under);
		CHECK(all_finite(p, NV));
		CHECKF(crossed == 0, "mode %d: %llu intersecting triangle pairs", mode,
		       (unsigned long long)crossed);
		CHECKF(under < -0.05f, "mode %d: the sheet (z %.4f) is not below the patch", mode,
		       under);
		for (int k = 0; k < 4; k++)
			CHECKF(p[NS + k].x == x[NS + k].x && p[NS + k].y == x[NS + k].y &&
				       p[NS + k].z == -0.05f && p[NS + k].w == 0.0f,
			       "mode %d: pinned vertex %d moved off its path", mode, k);
	}
}

/* ---- edge-edge ---------------------------------------------------------------- */

/*
 * Two strips crossing like a plus sign, placed so that no vertex of one lies
 * over the other: only their edges cross. Strip A (along x, at z = +0.05)
 * moves to z = -0.05 through strip B (along y, at z = 0) in one substep.
 */
static uint32_t strips(sim_vec4 *x, uint32_t *tris, float za)
{
	const float xs[4] = {-1.5f, -0.5f, 0.5f, 1.5f}, ys[2] = {-0.05f, 0.05f};
	uint32_t n = 0, t = 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			x[n++] = V4(xs[i], ys[j], za, 1); /* A: 0..7 */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			x[n++] = V4(ys[j], xs[i], 0.0f, 1); /* B: 8..15 */
	for (uint32_t base = 0; base <= 8; base += 8)
		for (uint32_t i = 0; i < 3; i++) {
			uint32_t a = base + 2 * i, b = a + 1, c = a + 2, d = a + 3;
			tris[3 * t] = a, tris[3 * t + 1] = c, tris[3 * t + 2] = d;
			t++;
			tris[3 * t] = a, tris[3 * t + 1] = d, tris[3 * t + 2] = b;
			t++;
		}
	return t;
}

static double mean_z(const sim_vec4 *p, uint32_t from, uint32_t to)
{
	double z = 0;
	for (uint32_t i = from; i < to; i++)
		z += p[i].z;
	return z / (to - from);
}

static void test_edge_edge_strips(void)
{
	sim_vec4 x[16], p[16];
	uint32_t tris[36];
	uint32_t nt = strips(x, tris, 0.05f);
	CHECK(intersections(x, 16, tris, nt) == 0);
	/* Without any response strip A would end below strip B. */
	memcpy(p, x, sizeof x);
	for (int i = 0; i < 8; i++)
		p[i].z = -0.05f;
	CHECK(mean_z(p, 2, 6) < mean_z(p, 10, 14));

	for (int mode = 0; mode < 2; mode++) {
		/* mode 0: projections only (edge-edge pushes must do it);
		 * mode 1: the guard only (thickness 0, no projection). */
		memcpy(p, x, sizeof x);
		for (int i = 0; i < 8; i++)
			p[i].z = -0.05f;
		sim_self *s = NULL;
		CHECK_OK(sim_self_create(tris, nt, 16, x, &s, NULL));
		if (mode == 0) {
			sim_self_begin_substep(s, x, p, 0.01f);
			for (int it = 0; it < 20; it++)
				sim_self_project(s, p, x, 0.01f, 0.0f);
		} else {
			sim_self_begin_substep(s, x, p, 0.0f);
			sim_self_end_substep(s, p, x, 0.0f);
		}
		uint32_t pairs = sim_self_pair_count(s);
		sim_self_destroy(s);
		uint64_t crossed = intersections(p, 16, tris, nt);
		double za = mean_z(p, 2, 6), zb = mean_z(p, 10, 14);
		printf("  strips, %s: %u candidate pairs, A centre z %.4f, B centre z %.4f, "
		       "%llu intersecting pairs\n",
		       mode ? "guard only" : "projection only", pairs, za, zb,
		       (unsigned long long)crossed);
		CHECKF(crossed == 0, "mode %d: %llu intersecting triangle pairs", mode,
		       (unsigned long long)crossed);
		CHECKF(za > zb, "mode %d: strip A (%.4f) not above strip B (%.4f)", mode, za, zb);
		if (mode == 0)
			CHECKF(za - zb > 0.009, "mode 0: separation %.4f < thickness", za - zb);
	}
}

/* ---- pairs sharing a vertex --------------------------------------------------- */

/* With a thickness so large that every box overlaps, the candidates are
 * exactly the pairs that share no vertex (counted by brute force here), each
 * once. */
static void test_shared_vertex_pairs_skipped(void)
{
	sim_vec4 x[16];
	uint32_t tris[3 * 18];
	uint32_t nt = grid(3, 3, 0.1f, 0.0f, 1.0f, x, tris, 0);
	/* Brute force: vertex-triangle pairs with v not in t. */
	uint32_t want = 0;
	for (uint32_t v = 0; v < 16; v++)
		for (uint32_t t = 0; t < nt; t++)
			want += tris[3 * t] != v && tris[3 * t + 1] != v && tris[3 * t + 2] != v;
	/* Unique edges, then disjoint edge pairs. */
	uint32_t edges[2 * 64], ne = 0;
	for (uint32_t t = 0; t < nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t a = tris[3 * t + k], b = tris[3 * t + (k + 1) % 3];
			uint32_t lo = a < b ? a : b, hi = a < b ? b : a, dup = 0;
			for (uint32_t e = 0; e < ne; e++)
				dup |= edges[2 * e] == lo && edges[2 * e + 1] == hi;
			if (!dup)
				edges[2 * ne] = lo, edges[2 * ne + 1] = hi, ne++;
		}
	for (uint32_t i = 0; i < ne; i++)
		for (uint32_t j = i + 1; j < ne; j++)
			want += edges[2 * i] != edges[2 * j] && edges[2 * i] != edges[2 * j + 1] &&
				edges[2 * i + 1] != edges[2 * j] && edges[2 * i + 1] != edges[2 * j + 1];
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tris, nt, 16, x, &s, NULL));
	sim_self_begin_substep(s, x, x, 10.0f);
	uint32_t got = sim_self_pair_count(s);
	sim_self_destroy(s);
	CHECKF(got == want, "candidate pairs %u, want %u (all pairs sharing no vertex)", got, want);
}

/* A flat sheet and the same sheet folded at a right angle: neighbouring
 * triangles (which share vertices) produce no push, so nothing moves. With a
 * thickness above 0.71 edge lengths, pairs across a quad's diagonal are
 * closer than the thickness at rest: they are exempt, so the flat sheet does
 * not inflate either. (Across a right-angle crease such a thickness also
 * reaches pairs two rings apart, which are pushed: thickness should stay
 * below the edge length.) */
static void test_folded_sheet_no_push(void)
{
	enum { N = 8, NV = (N + 1) * (N + 1) };
	sim_vec4 x0[NV], x[NV], p[NV];
	uint32_t tris[3 * 2 * N * N];
	uint32_t nt = grid(N, N, 0.1f, 0.0f, 1.0f, x0, tris, 0);
	const float th[2] = {0.03f, 0.12f};
	for (int k = 0; k < 2; k++)
		for (int fold = 0; fold < 2 - k; fold++) {
			memcpy(x, x0, sizeof x);
			if (fold)
				for (uint32_t i = 0; i < NV; i++)
					if (x[i].x > 0.45f) {
						/* Rotate the far half up about x = 0.4. */
						float d = x[i].x - 0.4f;
						x[i].x = 0.4f;
						x[i].z = d;
					}
			memcpy(p, x, sizeof x);
			sim_self *s = NULL;
			CHECK_OK(sim_self_create(tris, nt, NV, x, &s, NULL));
			substep(s, x, p, th[k], 0.5f, 10);
			uint32_t pairs = sim_self_pair_count(s);
			sim_self_destroy(s);
			CHECKF(memcmp(p, x, sizeof x) == 0, "thickness %g, fold %d: a vertex moved",
			       (double)th[k], fold);
			if (k == 1)
				CHECKF(pairs > 0, "thickness %g: no pairs to exempt", (double)th[k]);
		}
}

/* ---- broad phase: candidates per vertex --------------------------------------- */

static void test_candidates_per_vertex(void)
{
	enum { N = 63, NV = (N + 1) * (N + 1), NT = 2 * N * N };
	sim_vec4 *x = malloc(NV * sizeof *x), *p = malloc(NV * sizeof *p);
	uint32_t *tris = malloc(3 * NT * sizeof *tris);
	const float h = 0.01f, th = 0.004f;
	grid(N, N, h, 0.0f, 1.0f, x, tris, 0);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tris, NT, NV, x, &s, NULL));
	/* Flat and falling by 1 mm this substep. */
	memcpy(p, x, NV * sizeof *x);
	for (uint32_t i = 0; i < NV; i++)
		p[i].z -= 0.001f;
	sim_self_begin_substep(s, x, p, th);
	double flat = (double)sim_self_pair_count(s) / NV;
	/* Folded in half over itself, the layers 5 mm apart: resting just
	 * outside the thickness, inside the search reach. */
	for (uint32_t i = 0; i < NV; i++)
		if (x[i].x > 0.315f) {
			x[i].x = 0.63f - x[i].x;
			x[i].z = 0.005f;
		}
	memcpy(p, x, NV * sizeof *x);
	for (uint32_t i = 0; i < NV; i++)
		p[i].z -= 0.001f;
	sim_self_begin_substep(s, x, p, th);
	double folded = (double)sim_self_pair_count(s) / NV;
	sim_self_destroy(s);
	free(x);
	free(p);
	free(tris);
	printf("  64x64 sheet: candidate pairs per vertex %.3f flat, %.3f folded in two layers\n",
	       flat, folded);
	CHECKF(flat < 1.0, "flat sheet: %.3f candidate pairs per vertex", flat);
	CHECKF(folded < 40.0, "folded sheet: %.3f candidate pairs per vertex", folded);
}

/* ---- a crumpled random sheet -------------------------------------------------- */

/* A sheet crumpled by random waves and noise, moving randomly; unequal
 * masses, no pins. */
static void crumpled(uint32_t n, float h, sim_vec4 *x, sim_vec4 *p, uint32_t *tris)
{
	uint32_t nv1 = n + 1;
	grid(n, n, h, 0.0f, 1.0f, x, tris, 0);
	double kx[4], ky[4], ph[4];
	for (int k = 0; k < 4; k++) {
		kx[k] = 2.0 + 10.0 * rnd();
		ky[k] = 2.0 + 10.0 * rnd();
		ph[k] = 6.283 * rnd();
	}
	double side = n * h;
	for (uint32_t i = 0; i < nv1 * nv1; i++) {
		double u = x[i].x / side, v = x[i].y / side, z = 0;
		for (int k = 0; k < 4; k++)
			z += 0.04 * side * sin(kx[k] * u + ky[k] * v + ph[k]);
		x[i].x += (float)((rnd() - 0.5) * 0.5 * h);
		x[i].y += (float)((rnd() - 0.5) * 0.5 * h);
		x[i].z = (float)(z + (rnd() - 0.5) * 0.5 * h);
		x[i].w = (float)(0.5 + rnd());
		p[i] = x[i];
		p[i].x += (float)((rnd() - 0.5) * 0.2 * h);
		p[i].y += (float)((rnd() - 0.5) * 0.2 * h);
		p[i].z += (float)((rnd() - 0.5) * 0.2 * h);
	}
}

/* On a crumpled sheet with many contacts the projections conserve linear
 * momentum in aggregate and never produce NaN. */
static void test_crumpled_momentum(void)
{
	enum { N = 40, NV = (N + 1) * (N + 1), NT = 2 * N * N };
	sim_vec4 *x = malloc(NV * sizeof *x), *p = malloc(NV * sizeof *p),
		 *before = malloc(NV * sizeof *p);
	uint32_t *tris = malloc(3 * NT * sizeof *tris);
	const float h = 0.01f;
	crumpled(N, h, x, p, tris);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tris, NT, NV, x, &s, NULL));
	memcpy(before, p, NV * sizeof *p);
	sim_self_begin_substep(s, x, p, 0.4f * h);
	for (int it = 0; it < 10; it++)
		sim_self_project(s, p, x, 0.4f * h, 0.3f);
	double mom[3], moved = 0, mass = 0;
	momentum_change(before, p, NV, mom);
	for (uint32_t i = 0; i < NV; i++) {
		moved += fabs(p[i].x - before[i].x) + fabs(p[i].y - before[i].y) +
			 fabs(p[i].z - before[i].z);
		mass += 1.0 / p[i].w;
	}
	int finite = all_finite(p, NV);
	uint32_t pairs = sim_self_pair_count(s);
	sim_self_end_substep(s, p, x, 0.4f * h);
	finite &= all_finite(p, NV);
	sim_self_destroy(s);
	free(x);
	free(p);
	free(before);
	free(tris);
	printf("  crumpled 41x41: %u pairs, total |displacement| %.4g m, momentum change "
	       "(%.2g %.2g %.2g) kg m (total mass %.0f kg)\n",
	       pairs, moved, mom[0], mom[1], mom[2], mass);
	CHECK(finite);
	CHECKF(moved > 1e-3, "no contact was resolved (moved %.3g)", moved);
	CHECKF(fabs(mom[0]) + fabs(mom[1]) + fabs(mom[2]) < 1e-5 * moved * 2.0,
	       "momentum change (%.3g %.3g %.3g)", mom[0], mom[1], mom[2]);
}

/* Begin + 10 projections and the guard on a crumpled 256 x 256 sheet; a
 * speed figure printed, not asserted (ARCHITECTURE.md: speed is measured in
 * make bench). The result must still be finite. */
static void test_speed_crumpled_256(void)
{
	enum { N = 255, NV = (N + 1) * (N + 1), NT = 2 * N * N };
	sim_vec4 *x = malloc(NV * sizeof *x), *p = malloc(NV * sizeof *p);
	uint32_t *tris = malloc(3 * NT * sizeof *tris);
	const float h = 1.0f / N, th = 0.4f * h;
	crumpled(N, h, x, p, tris);
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(tris, NT, NV, x, &s, NULL));
	/* A first substep warms the buffers to their grown size. */
	sim_vec4 *p0 = malloc(NV * sizeof *p);
	memcpy(p0, p, NV * sizeof *p);
	sim_self_begin_substep(s, x, p, th);
	double t0 = now_ns();
	sim_self_begin_substep(s, x, p, th);
	double t1 = now_ns();
	for (int it = 0; it < 10; it++)
		sim_self_project(s, p, x, th, 0.2f);
	double t2 = now_ns();
	sim_self_end_substep(s, p, x, th);
	double t3 = now_ns();
	uint32_t pairs = sim_self_pair_count(s);
	int finite = all_finite(p, NV);
	sim_self_destroy(s);
	free(x);
	free(p);
	free(p0);
	free(tris);
	printf("  256x256 crumpled: %.2f candidate pairs per vertex; begin %.0f ns/vertex, "
	       "10 x project %.0f ns/vertex, begin + 10 x project %.0f ns/vertex, end (guard) "
	       "%.0f ns/vertex\n",
	       (double)pairs / NV, (t1 - t0) / NV, (t2 - t1) / NV, (t2 - t0) / NV, (t3 - t2) / NV);
	CHECK(finite);
	CHECK(pairs > 0);
}

/* ---- scenes with a minimal PBD loop ------------------------------------------ */

/*
 * A minimal Position Based Dynamics loop written here so the module can be
 * exercised in motion before the solver step calls it: gravity, stretch
 * constraints on the mesh edges, a ground plane and an optional sphere, then
 * self-collision in the order sim.c will use (selfcollide.h). After every
 * frame the positions must have no intersecting triangle pairs.
 */
typedef struct scene {
	uint32_t nv, nt, ne;
	sim_vec4 *x, *p, *v;
	uint32_t *tris;
	uint32_t *edges; /* 2 per edge */
	float *rest;
	float sphere[4]; /* centre, radius; radius 0 = none */
	int ground;
	float kin[3];    /* velocity of the kinematic (w = 0) vertices marked in kin_mask */
	uint8_t *kin_mask;
	double self_ns;  /* time spent in the module */
	uint64_t substeps;
} scene;

static void scene_edges(scene *sc)
{
	sc->edges = malloc(6 * (size_t)sc->nt * sizeof *sc->edges);
	sc->rest = malloc(3 * (size_t)sc->nt * sizeof *sc->rest);
	sc->ne = 0;
	/* Grid meshes here: an edge (a, b) with a < b appears in at most two
	 * triangles; keep it from the first triangle that has it, found by a
	 * linear scan of that triangle's neighbours in index order. */
	for (uint32_t t = 0; t < sc->nt; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t a = sc->tris[3 * t + k], b = sc->tris[3 * t + (k + 1) % 3];
			uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
			int dup = 0;
			for (uint32_t e = sc->ne > 64 ? sc->ne - 64 : 0; e < sc->ne && !dup; e++)
				dup = sc->edges[2 * e] == lo && sc->edges[2 * e + 1] == hi;
			for (uint32_t u = 0; u < t && !dup; u++) {
				const uint32_t *tu = &sc->tris[3 * u];
				int has_lo = tu[0] == lo || tu[1] == lo || tu[2] == lo;
				int has_hi = tu[0] == hi || tu[1] == hi || tu[2] == hi;
				dup = has_lo && has_hi;
			}
			if (dup)
				continue;
			sc->edges[2 * sc->ne] = lo;
			sc->edges[2 * sc->ne + 1] = hi;
			sim_vec4 d = {sc->x[lo].x - sc->x[hi].x, sc->x[lo].y - sc->x[hi].y,
				      sc->x[lo].z - sc->x[hi].z, 0};
			sc->rest[sc->ne] = sqrtf(d.x * d.x + d.y * d.y + d.z * d.z);
			sc->ne++;
		}
}

static void scene_free(scene *sc)
{
	free(sc->x);
	free(sc->p);
	free(sc->v);
	free(sc->tris);
	free(sc->edges);
	free(sc->rest);
	free(sc->kin_mask);
}

/* Runs `frames` frames; returns the first frame (1-based) with an
 * intersection or a vertex below the ground, else 0. */
static uint32_t scene_run(scene *sc, sim_self *s, uint32_t frames, float th, float friction,
			  uint64_t *worst, float *min_y)
{
	const int substeps = 4, iterations = 10;
	const float dt = 1.0f / (60.0f * substeps);
	*worst = 0;
	*min_y = INFINITY;
	for (uint32_t f = 1; f <= frames; f++) {
		for (int st = 0; st < substeps; st++) {
			for (uint32_t i = 0; i < sc->nv; i++) {
				sim_vec4 *v = &sc->v[i];
				if (sc->x[i].w > 0.0f)
					v->y -= 9.81f * dt;
				else if (sc->kin_mask && sc->kin_mask[i])
					v->x = sc->kin[0], v->y = sc->kin[1], v->z = sc->kin[2];
				else
					v->x = v->y = v->z = 0.0f;
				sc->p[i] = sc->x[i];
				sc->p[i].x += dt * v->x;
				sc->p[i].y += dt * v->y;
				sc->p[i].z += dt * v->z;
			}
			double t0 = now_ns();
			sim_self_begin_substep(s, sc->x, sc->p, th);
			sc->self_ns += now_ns() - t0;
			for (int it = 0; it < iterations; it++) {
				for (uint32_t e = 0; e < sc->ne; e++) {
					sim_vec4 *a = &sc->p[sc->edges[2 * e]], *b = &sc->p[sc->edges[2 * e + 1]];
					float W = a->w + b->w;
					if (W <= 0.0f)
						continue;
					float dx = a->x - b->x, dy = a->y - b->y, dz = a->z - b->z;
					float l = sqrtf(dx * dx + dy * dy + dz * dz);
					if (l < 1e-9f)
						continue;
					float c = (l - sc->rest[e]) / (l * W);
					a->x -= a->w * c * dx, a->y -= a->w * c * dy, a->z -= a->w * c * dz;
					b->x += b->w * c * dx, b->y += b->w * c * dy, b->z += b->w * c * dz;
				}
				for (uint32_t i = 0; i < sc->nv; i++) {
					sim_vec4 *q = &sc->p[i];
					if (q->w == 0.0f)
						continue;
					if (sc->ground && q->y < 0.5f * th) {
						/* Ground with full friction: undo the
						 * tangential slide. */
						q->y = 0.5f * th;
						q->x = sc->x[i].x + 0.5f * (q->x - sc->x[i].x);
						q->z = sc->x[i].z + 0.5f * (q->z - sc->x[i].z);
					}
					if (sc->sphere[3] > 0.0f) {
						float dx = q->x - sc->sphere[0], dy = q->y - sc->sphere[1],
						      dz = q->z - sc->sphere[2];
						float d = sqrtf(dx * dx + dy * dy + dz * dz), r = sc->sphere[3] + 0.5f * th;
						if (d < r && d > 1e-9f) {
							q->x = sc->sphere[0] + dx * r / d;
							q->y = sc->sphere[1] + dy * r / d;
							q->z = sc->sphere[2] + dz * r / d;
						}
					}
				}
				t0 = now_ns();
				sim_self_project(s, sc->p, sc->x, th, friction);
				sc->self_ns += now_ns() - t0;
			}
			t0 = now_ns();
			sim_self_end_substep(s, sc->p, sc->x, th);
			sc->self_ns += now_ns() - t0;
			sc->substeps++;
			for (uint32_t i = 0; i < sc->nv; i++) {
				sc->v[i].x = (sc->p[i].x - sc->x[i].x) / dt;
				sc->v[i].y = (sc->p[i].y - sc->x[i].y) / dt;
				sc->v[i].z = (sc->p[i].z - sc->x[i].z) / dt;
				sc->x[i] = sc->p[i];
				sc->v[i].x *= 0.999f, sc->v[i].y *= 0.999f, sc->v[i].z *= 0.999f;
			}
		}
		uint64_t c = intersections(sc->x, sc->nv, sc->tris, sc->nt);
		for (uint32_t i = 0; i < sc->nv; i++)
			*min_y = sc->x[i].y < *min_y ? sc->x[i].y : *min_y;
		*worst = c > *worst ? c : *worst;
		if (c != 0 || !all_finite(sc->x, sc->nv) || (sc->ground && *min_y < 0.0f))
			return f;
	}
	return 0;
}

/* A grid in the xz plane (y up) at height y, quads split alternately so the
 * sheet has no preferred fold direction. */
static void scene_sheet(scene *sc, uint32_t nx, uint32_t nz, float h, float y, uint32_t base)
{
	for (uint32_t j = 0; j <= nz; j++)
		for (uint32_t i = 0; i <= nx; i++)
			sc->x[base + j * (nx + 1) + i] = V4((float)i * h, y, (float)j * h, 1.0f);
	uint32_t t = sc->nt;
	for (uint32_t j = 0; j < nz; j++)
		for (uint32_t i = 0; i < nx; i++) {
			uint32_t a = base + j * (nx + 1) + i, b = a + 1, c = a + nx + 1, d = c + 1;
			if ((i + j) & 1) {
				sc->tris[3 * t] = a, sc->tris[3 * t + 1] = b, sc->tris[3 * t + 2] = d;
				t++;
				sc->tris[3 * t] = a, sc->tris[3 * t + 1] = d, sc->tris[3 * t + 2] = c;
				t++;
			} else {
				sc->tris[3 * t] = a, sc->tris[3 * t + 1] = b, sc->tris[3 * t + 2] = c;
				t++;
				sc->tris[3 * t] = b, sc->tris[3 * t + 1] = d, sc->tris[3 * t + 2] = c;
				t++;
			}
		}
	sc->nt = t;
}

static void scene_alloc(scene *sc, uint32_t nv, uint32_t nt)
{
	memset(sc, 0, sizeof *sc);
	sc->nv = nv;
	sc->x = calloc(nv, sizeof *sc->x);
	sc->p = calloc(nv, sizeof *sc->p);
	sc->v = calloc(nv, sizeof *sc->v);
	sc->tris = calloc(3 * (size_t)nt, sizeof *sc->tris);
}

/* A sheet dropped onto a sphere folds over itself. */
static void test_scene_sheet_on_sphere(void)
{
	enum { N = 24 };
	const float h = 0.04f, th = 0.012f;
	scene sc;
	scene_alloc(&sc, (N + 1) * (N + 1), 2 * N * N);
	scene_sheet(&sc, N, N, h, 0.45f, 0);
	scene_edges(&sc);
	/* Off-centre so it slides and folds. */
	sc.sphere[0] = 0.38f, sc.sphere[1] = 0.0f, sc.sphere[2] = 0.45f, sc.sphere[3] = 0.3f;
	sc.ground = 1;
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(sc.tris, sc.nt, sc.nv, sc.x, &s, NULL));
	uint64_t worst;
	float min_y;
	uint32_t bad = scene_run(&sc, s, 90, th, 0.2f, &worst, &min_y);
	printf("  sheet on sphere: %u vertices, 90 frames, first bad frame %u, lowest y %.4f, "
	       "pairs in last substep %u, self-collision %.0f ns per vertex per substep\n",
	       sc.nv, bad, min_y, sim_self_pair_count(s), sc.self_ns / (double)sc.substeps / sc.nv);
	sim_self_destroy(s);
	scene_free(&sc);
	CHECKF(bad == 0, "intersection or vertex below ground at frame %u (%llu pairs)", bad,
	       (unsigned long long)worst);
}

/* A long strip dropped end-first onto the ground heaps in several layers. */
static void test_scene_heap_on_ground(void)
{
	enum { NX = 4, NZ = 60 };
	const float h = 0.025f, th = 0.008f;
	scene sc;
	scene_alloc(&sc, (NX + 1) * (NZ + 1), 2 * NX * NZ);
	scene_sheet(&sc, NX, NZ, h, 0.0f, 0);
	/* Stand it up: z becomes height, slightly tilted so it buckles. */
	for (uint32_t i = 0; i < sc.nv; i++) {
		float z = sc.x[i].z;
		sc.x[i].y = 0.05f + z;
		sc.x[i].z = 0.05f * z;
	}
	scene_edges(&sc);
	sc.ground = 1;
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(sc.tris, sc.nt, sc.nv, sc.x, &s, NULL));
	uint64_t worst;
	float min_y;
	uint32_t bad = scene_run(&sc, s, 70, th, 0.3f, &worst, &min_y);
	float top = 0.0f;
	for (uint32_t i = 0; i < sc.nv; i++)
		top = sc.x[i].y > top ? sc.x[i].y : top;
	printf("  heap: %u vertices, 70 frames, first bad frame %u, lowest y %.4f, heap "
	       "height %.3f m, pairs in last substep %u, self-collision %.0f ns per vertex per "
	       "substep\n",
	       sc.nv, bad, min_y, top, sim_self_pair_count(s),
	       sc.self_ns / (double)sc.substeps / sc.nv);
	sim_self_destroy(s);
	scene_free(&sc);
	CHECKF(bad == 0, "intersection or vertex below ground at frame %u (%llu pairs)", bad,
	       (unsigned long long)worst);
	CHECKF(top < 0.5f, "the strip did not fall into a heap (top %.3f m)", top);
}

/* Two stacked sheets on the ground, the top one dragged sideways at speed
 * by its pinned edge. */
static void test_scene_stacked_pulled_apart(void)
{
	enum { N = 16, NV1 = (N + 1) * (N + 1) };
	const float h = 0.03f, th = 0.01f;
	scene sc;
	scene_alloc(&sc, 2 * NV1, 4 * N * N);
	scene_sheet(&sc, N, N, h, 0.5f * th, 0);
	scene_sheet(&sc, N, N, h, 0.5f * th + 1.2f * th, NV1);
	/* Offset the top sheet by a third of a cell so its vertices are not
	 * exactly above the lower ones. */
	for (uint32_t i = NV1; i < 2 * NV1; i++)
		sc.x[i].x += h / 3.0f;
	scene_edges(&sc);
	sc.ground = 1;
	sc.kin_mask = calloc(sc.nv, 1);
	for (uint32_t j = 0; j <= N; j++) {
		uint32_t i = NV1 + j * (N + 1) + N; /* top sheet, edge x = max */
		sc.x[i].w = 0.0f;
		sc.kin_mask[i] = 1;
	}
	sc.kin[0] = 2.0f; /* m/s sideways */
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(sc.tris, sc.nt, sc.nv, sc.x, &s, NULL));
	uint64_t worst;
	float min_y;
	uint32_t bad = scene_run(&sc, s, 40, th, 0.3f, &worst, &min_y);
	float cx = 0.0f;
	for (uint32_t i = NV1; i < 2 * NV1; i++)
		cx += sc.x[i].x / NV1;
	printf("  stacked sheets: %u vertices, 40 frames, first bad frame %u, lowest y %.4f, top "
	       "sheet centre moved to x %.3f\n",
	       sc.nv, bad, min_y, cx);
	sim_self_destroy(s);
	scene_free(&sc);
	CHECKF(bad == 0, "intersection or vertex below ground at frame %u (%llu pairs)", bad,
	       (unsigned long long)worst);
	CHECKF(cx > 0.8f, "top sheet was not pulled (centre x %.3f)", cx);
}

/* ---- preflight ------------------------------------------------------------------ */

/* A mesh built to have known intersections. */
static void test_preflight_known(void)
{
	const float P[] = {
		/* 0-3 quad A in the plane y = x, z in [0, 1] */
		-1, -1, 0, 1, 1, 0, 1, 1, 1, -1, -1, 1,
		/* 4-7 quad B in the plane y = -x, z in [0.2, 1.2]: crosses A like an X */
		-1, 1, 0.2f, 1, -1, 0.2f, 1, -1, 1.2f, -1, 1, 1.2f,
		/* 8-10 horizontal triangle at z = 5; 11-13 a vertical one piercing it */
		10, 0, 5, 12, 0, 5, 10, 2, 5, 10.5f, 0.5f, 4, 11, 0.5f, 6, 10.2f, 0.5f, 6,
		/* 14-16, 17-19 parallel triangles 0.1 apart: separated */
		20, 0, 0, 21, 0, 0, 20, 1, 0, 20, 0, 0.1f, 21, 0, 0.1f, 20, 1, 0.1f,
		/* 20-22, 23-24 two triangles sharing vertex 20 and crossing elsewhere */
		30, 0, 0, 31, 0, 0, 30, 1, 0, 30.5f, 0.2f, -0.5f, 30.5f, 0.2f, 0.5f,
		/* 25-27, 28-30 coplanar overlapping triangles at z = 40 */
		40, 0, 40, 41, 0, 40, 40, 1, 40, 40.2f, 0.2f, 40, 41.2f, 0.2f, 40, 40.2f, 1.2f, 40,
		/* 31-33 flat triangle, 34-36 a triangle touching its face with one
		 * vertex (exactly on the plane), from above */
		50, 0, 0, 52, 0, 0, 50, 2, 0, 50.5f, 0.5f, 0, 51, 0.5f, 1, 50.5f, 1, 1,
		/* 37-39, 40-42 coplanar but apart */
		60, 0, 0, 61, 0, 0, 60, 1, 0, 62, 0, 0, 63, 0, 0, 62, 1, 0,
	};
	const uint32_t T[] = {
		0,  1,  2,  /* 0: A lower */
		0,  2,  3,  /* 1: A upper */
		4,  5,  6,  /* 2: B lower */
		4,  6,  7,  /* 3: B upper */
		8,  9,  10, /* 4 */
		11, 12, 13, /* 5: pierces 4 */
		14, 15, 16, /* 6 */
		17, 18, 19, /* 7 */
		20, 21, 22, /* 8 */
		20, 23, 24, /* 9: shares vertex 20 with 8, also crosses it: skipped */
		25, 26, 27, /* 10 */
		28, 29, 30, /* 11: coplanar overlap with 10 */
		31, 32, 33, /* 12 */
		34, 35, 36, /* 13: touches 12 with a vertex */
		37, 38, 39, /* 14 */
		40, 41, 42, /* 15 */
	};
	const uint32_t nv = sizeof P / sizeof P[0] / 3, nt = sizeof T / sizeof T[0] / 3;
	/* Along the z axis A lower covers [0, 0.5], A upper [0.5, 1], B lower
	 * [0.2, 0.7], B upper [0.7, 1.2]: A lower meets B lower, A upper meets
	 * both B triangles. */
	const drape_tri_pair want[] = {{0, 2}, {1, 2}, {1, 3}, {4, 5}, {10, 11}, {12, 13}};
	const uint32_t nwant = sizeof want / sizeof want[0];
	drape_tri_pair got[16];
	uint64_t count = 0;
	drape_error err;
	CHECK_OK(drape_preflight(P, nv, T, nt, got, 16, &count, &err));
	printf("  known mesh: %llu intersecting pairs:", (unsigned long long)count);
	for (uint32_t i = 0; i < count && i < 16; i++)
		printf(" (%u,%u)", got[i].a, got[i].b);
	printf("\n");
	CHECKF(count == nwant, "count %llu, want %u", (unsigned long long)count, nwant);
	for (uint32_t i = 0; i < nwant; i++)
		CHECKF(got[i].a == want[i].a && got[i].b == want[i].b, "pair %u is (%u, %u), want (%u, %u)",
		       i, got[i].a, got[i].b, want[i].a, want[i].b);
	/* Fewer slots: the count stays, the first pairs in (a, b) order fill. */
	drape_tri_pair two[3] = {{99, 99}, {99, 99}, {99, 99}};
	CHECK_OK(drape_preflight(P, nv, T, nt, two, 2, &count, NULL));
	CHECK(count == nwant);
	CHECK(two[0].a == 0 && two[0].b == 2 && two[1].a == 1 && two[1].b == 2);
	CHECK(two[2].a == 99);
	/* No pair array at all. */
	CHECK_OK(drape_preflight(P, nv, T, nt, NULL, 0, &count, NULL));
	CHECK(count == nwant);
}

static void test_preflight_validation(void)
{
	const float P[] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
	const uint32_t T[] = {0, 1, 2};
	const uint32_t bad_index[] = {0, 1, 3};
	const uint32_t repeated[] = {0, 1, 1};
	const float nan_pos[] = {0, 0, 0, 1, NAN, 0, 0, 1, 0};
	uint64_t count = 77;
	drape_error err;
	CHECK(drape_preflight(P, 3, bad_index, 1, NULL, 0, &count, &err) == DRAPE_ERANGE);
	CHECKF(strstr(err.message, "triangles[0][2]") != NULL, "message: %s", err.message);
	CHECK(drape_preflight(P, 3, repeated, 1, NULL, 0, &count, &err) == DRAPE_EINVAL);
	CHECK(drape_preflight(nan_pos, 3, T, 1, NULL, 0, &count, &err) == DRAPE_ENONFINITE);
	CHECKF(strstr(err.message, "positions[1][1]") != NULL, "message: %s", err.message);
	CHECK(drape_preflight(P, 3, T, 0, NULL, 0, &count, &err) == DRAPE_EINVAL);
	CHECK(drape_preflight(P, 0, T, 1, NULL, 0, &count, &err) == DRAPE_EINVAL);
	CHECK(drape_preflight(NULL, 3, T, 1, NULL, 0, &count, &err) == DRAPE_EINVAL);
	CHECK(drape_preflight(P, 3, NULL, 1, NULL, 0, &count, &err) == DRAPE_EINVAL);
	CHECK(drape_preflight(P, 3, T, 1, NULL, 4, &count, &err) == DRAPE_EINVAL);
	CHECK(drape_preflight(P, 3, T, 1, NULL, 0, NULL, &err) == DRAPE_EINVAL);
	CHECK(count == 77); /* untouched on failure */
	CHECK_OK(drape_preflight(P, 3, T, 1, NULL, 0, &count, &err));
	CHECK(count == 0);
}

static void test_preflight_flat_grid(void)
{
	enum { N = 100, NV = (N + 1) * (N + 1), NT = 2 * N * N };
	sim_vec4 *x = malloc(NV * sizeof *x);
	uint32_t *tris = malloc(3 * NT * sizeof *tris);
	grid(N, N, 0.01f, 0.0f, 1.0f, x, tris, 0);
	uint64_t c = intersections(x, NV, tris, NT);
	/* The same grid crumpled by smooth waves (a height field cannot
	 * intersect itself). */
	for (uint32_t i = 0; i < NV; i++)
		x[i].z = 0.1f * sinf(7.0f * x[i].x) * cosf(5.0f * x[i].y);
	uint64_t c2 = intersections(x, NV, tris, NT);
	free(x);
	free(tris);
	CHECKF(c == 0, "flat grid: %llu intersecting pairs", (unsigned long long)c);
	CHECKF(c2 == 0, "wavy grid: %llu intersecting pairs", (unsigned long long)c2);
}

/* Reference: two triangles in general position intersect iff an edge of one
 * crosses the other. Signed volumes in double; random input has no exact
 * degeneracies. */
static double orient3(const double *a, const double *b, const double *c, const double *d)
{
	double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
	double ac[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
	double ad[3] = {d[0] - a[0], d[1] - a[1], d[2] - a[2]};
	return ab[0] * (ac[1] * ad[2] - ac[2] * ad[1]) - ab[1] * (ac[0] * ad[2] - ac[2] * ad[0]) +
	       ab[2] * (ac[0] * ad[1] - ac[1] * ad[0]);
}

static int seg_tri(const double *p, const double *q, const double *a, const double *b,
		   const double *c)
{
	double s1 = orient3(a, b, c, p), s2 = orient3(a, b, c, q);
	if ((s1 > 0) == (s2 > 0))
		return 0;
	double o1 = orient3(p, q, a, b), o2 = orient3(p, q, b, c), o3 = orient3(p, q, c, a);
	return (o1 > 0 && o2 > 0 && o3 > 0) || (o1 < 0 && o2 < 0 && o3 < 0);
}

static int ref_tri_tri(double U[3][3], double V[3][3])
{
	for (int k = 0; k < 3; k++)
		if (seg_tri(U[k], U[(k + 1) % 3], V[0], V[1], V[2]) ||
		    seg_tri(V[k], V[(k + 1) % 3], U[0], U[1], U[2]))
			return 1;
	return 0;
}

static void test_preflight_random_vs_reference(void)
{
	enum { NT = 600, NV = 3 * NT };
	float *P = malloc(3 * NV * sizeof *P);
	uint32_t *T = malloc(3 * NT * sizeof *T);
	for (uint32_t t = 0; t < NT; t++) {
		double c[3] = {rnd(), rnd(), rnd()};
		for (int k = 0; k < 3; k++) {
			for (int j = 0; j < 3; j++)
				P[9 * t + 3 * k + j] = (float)(c[j] + (rnd() - 0.5) * 0.12);
			T[3 * t + k] = 3 * t + k;
		}
	}
	uint64_t want = 0;
	drape_tri_pair first[64];
	uint32_t nfirst = 0;
	for (uint32_t a = 0; a < NT; a++)
		for (uint32_t b = a + 1; b < NT; b++) {
			double U[3][3], V[3][3];
			for (int k = 0; k < 3; k++)
				for (int j = 0; j < 3; j++) {
					U[k][j] = P[9 * a + 3 * k + j];
					V[k][j] = P[9 * b + 3 * k + j];
				}
			if (ref_tri_tri(U, V)) {
				if (nfirst < 64)
					first[nfirst++] = (drape_tri_pair){a, b};
				want++;
			}
		}
	drape_tri_pair got[64];
	uint64_t count = 0;
	CHECK_OK(drape_preflight(P, NV, T, NT, got, 64, &count, NULL));
	free(P);
	free(T);
	printf("  random soup of %d triangles: %llu intersecting pairs (reference %llu)\n", NT,
	       (unsigned long long)count, (unsigned long long)want);
	CHECK(want > 10);
	CHECKF(count == want, "preflight %llu, reference %llu", (unsigned long long)count,
	       (unsigned long long)want);
	for (uint32_t i = 0; i < nfirst; i++)
		CHECKF(got[i].a == first[i].a && got[i].b == first[i].b,
		       "pair %u: (%u, %u), reference (%u, %u)", i, got[i].a, got[i].b, first[i].a,
		       first[i].b);
}

/* Reads 'v' and 'f' lines of an OBJ (polygons fanned into triangles;
 * texture and normal indices ignored). Returns 0 if the file is absent. */
static int read_obj(const char *path, float **pos, uint32_t *nv, uint32_t **tris, uint32_t *nt)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	size_t vcap = 1024, tcap = 1024, vn = 0, tn = 0;
	float *P = malloc(3 * vcap * sizeof *P);
	uint32_t *T = malloc(3 * tcap * sizeof *T);
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		if (line[0] == 'v' && line[1] == ' ') {
			if (vn == vcap)
				P = realloc(P, 3 * (vcap *= 2) * sizeof *P);
			if (sscanf(line + 2, "%f %f %f", &P[3 * vn], &P[3 * vn + 1], &P[3 * vn + 2]) == 3)
				vn++;
		} else if (line[0] == 'f' && line[1] == ' ') {
			long idx[64];
			int n = 0;
			char *s = line + 2;
			while (n < 64) {
				char *end;
				long v = strtol(s, &end, 10);
				if (end == s)
					break;
				idx[n++] = v < 0 ? (long)vn + v : v - 1;
				s = end;
				while (*s && *s != ' ' && *s != '\t' && *s != '\n')
					s++;
			}
			for (int k = 1; k + 1 < n; k++) {
				if (tn == tcap)
					T = realloc(T, 3 * (tcap *= 2) * sizeof *T);
				T[3 * tn] = (uint32_t)idx[0];
				T[3 * tn + 1] = (uint32_t)idx[k];
				T[3 * tn + 2] = (uint32_t)idx[k + 1];
				tn++;
			}
		}
	}
	fclose(f);
	*pos = P;
	*tris = T;
	*nv = (uint32_t)vn;
	*nt = (uint32_t)tn;
	return 1;
}

static void test_preflight_garment(void)
{
	const char *path = "tests/data/meshes/mh_male_casualsuit04.obj";
	float *P;
	uint32_t *T, nv, nt;
	if (!read_obj(path, &P, &nv, &T, &nt)) {
		printf("  note: %s absent, garment preflight skipped\n", path);
		return;
	}
	drape_tri_pair pairs[8];
	uint64_t count = UINT64_MAX;
	drape_error err;
	double t0 = now_ns();
	drape_err rc = drape_preflight(P, nv, T, nt, pairs, 8, &count, &err);
	double t1 = now_ns();
	free(P);
	free(T);
	CHECKF(rc == DRAPE_OK, "preflight: %s", err.message);
	printf("  garment %s: %u vertices, %u triangles, %llu intersecting pairs (%.1f ms)",
	       path, nv, nt, (unsigned long long)count, (t1 - t0) / 1e6);
	for (uint64_t i = 0; i < count && i < 8; i++)
		printf(" (%u,%u)", pairs[i].a, pairs[i].b);
	printf("\n");
	CHECKF(count == 0, "garment has %llu intersecting pairs", (unsigned long long)count);
}

static const check_test tests[] = {
	CHECK_TEST(test_fast_vertex_stopped),
	CHECK_TEST(test_guard_alone_stops_vertex),
	CHECK_TEST(test_guard_keeps_touching_pair_moving),
	CHECK_TEST(test_vertex_on_plane),
	CHECK_TEST(test_resting_push_conserves_momentum),
	CHECK_TEST(test_projection_after_stray),
	CHECK_TEST(test_partial_recollection_stops_stray),
	CHECK_TEST(test_pinned_never_move),
	CHECK_TEST(test_degenerate_triangle),
	CHECK_TEST(test_kinematic_patch_through_sheet),
	CHECK_TEST(test_edge_edge_strips),
	CHECK_TEST(test_shared_vertex_pairs_skipped),
	CHECK_TEST(test_folded_sheet_no_push),
	CHECK_TEST(test_candidates_per_vertex),
	CHECK_TEST(test_crumpled_momentum),
	CHECK_TEST(test_speed_crumpled_256),
	CHECK_TEST(test_scene_sheet_on_sphere),
	CHECK_TEST(test_scene_heap_on_ground),
	CHECK_TEST(test_scene_stacked_pulled_apart),
	CHECK_TEST(test_preflight_known),
	CHECK_TEST(test_preflight_validation),
	CHECK_TEST(test_preflight_flat_grid),
	CHECK_TEST(test_preflight_random_vs_reference),
	CHECK_TEST(test_preflight_garment),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
