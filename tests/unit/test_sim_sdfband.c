/*
 * The exact field builder (server/sim/sdfband.c) on procedural solids whose
 * distance is known in closed form: a block with a pocket narrower than a
 * voxel, made of axis-aligned cells so that the exact signed distance is a
 * minimum of point-box distances.
 *
 * - Every voxel centre within the band reads the analytic distance: to
 *   float rounding within a voxel of the surface, within 0.25 voxel beyond
 *   (the layers are breadth first: a voxel 3 layers from the pocket's floor
 *   and 5 from its edge takes the floor's triangle, 0.19 voxel too far);
 *   the voxel centres inside the pocket read outside (OpenVDB's flood fill
 *   sealed such pockets: the test fails with DRAPE_SDF_BUILDER=openvdb).
 * - The winding does not matter: the same solid wound inside out, or with
 *   every other triangle reversed, gives the identical field.
 * - A hole is capped and the result is still signed; a non-manifold edge
 *   sends the mesh to OpenVDB, and the info says so.
 * - The field is bit-identical built on one thread and on all of them,
 *   for the block (its samples) and for the MakeHuman body (every leaf's
 *   origin, values and active mask; the hash is printed, to compare
 *   builds of the builder against each other).
 * - Sampling is the unfused trilinear formula to the bit.
 */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drape/sim.h"
#include "server/sim/sdfband.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"

/* The block: cells of a rectilinear lattice, all filled but the pocket
 * cell (1, 1, 1): 2 mm wide in x (0.4 of the 5 mm voxel), 3 cm deep from
 * the top (y), 2 cm long in z, open only at the top. */
static const double XS[4] = {0, 0.0395, 0.0415, 0.08};
static const double YS[3] = {0, 0.03, 0.06};
static const double ZS[4] = {0, 0.02, 0.04, 0.06};
static const float H = 0.005f;

static int filled(int i, int j, int k)
{
	if (i < 0 || j < 0 || k < 0 || i > 2 || j > 1 || k > 2)
		return 0;
	return !(i == 1 && j == 1 && k == 1);
}

typedef struct solid {
	float v[4 * 3 * 4 * 3 + 3];
	uint32_t t[2 * 6 * 18 * 3 + 3];
	uint32_t nv, nt;
} solid;

static uint32_t vid(int i, int j, int k)
{
	return (uint32_t)((i * 3 + j) * 4 + k);
}

/* The boundary faces between filled and empty cells, two triangles each,
 * counter-clockwise seen from outside. */
static void make_block(solid *s)
{
	s->nv = 4 * 3 * 4;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++) {
				float *p = &s->v[3 * vid(i, j, k)];
				p[0] = (float)XS[i], p[1] = (float)YS[j], p[2] = (float)ZS[k];
			}
	s->nt = 0;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++) {
				if (!filled(i, j, k))
					continue;
				for (int a = 0; a < 3; a++)
					for (int side = 0; side < 2; side++) {
						int c[3] = {i, j, k}, n[3] = {i, j, k};
						n[a] += side ? 1 : -1;
						if (filled(n[0], n[1], n[2]))
							continue;
						/* The face's corners in the plane of axes b, c (cyclic after a). */
						const int b = (a + 1) % 3, cc = (a + 2) % 3;
						int f[3] = {c[0], c[1], c[2]};
						f[a] += side;
						uint32_t q[4];
						const int du[4] = {0, 1, 1, 0}, dv[4] = {0, 0, 1, 1};
						for (int m = 0; m < 4; m++) {
							int g[3] = {f[0], f[1], f[2]};
							g[b] += du[m], g[cc] += dv[m];
							q[m] = vid(g[0], g[1], g[2]);
						}
						if (!side) {
							uint32_t x = q[1];
							q[1] = q[3], q[3] = x;
						}
						uint32_t *t = &s->t[3 * s->nt];
						t[0] = q[0], t[1] = q[1], t[2] = q[2];
						t[3] = q[0], t[4] = q[2], t[5] = q[3];
						s->nt += 2;
					}
			}
}

static double box_dist(const double p[3], const double lo[3], const double hi[3])
{
	double s = 0;
	for (int k = 0; k < 3; k++) {
		double d = fmax(fmax(lo[k] - p[k], p[k] - hi[k]), 0);
		s += d * d;
	}
	return sqrt(s);
}

/* The exact signed distance: outside, to the nearest filled cell; inside,
 * to the complement (the pocket cell or the outside of the whole box). */
static double exact(const double p[3], int *inside)
{
	const double blo[3] = {XS[0], YS[0], ZS[0]}, bhi[3] = {XS[3], YS[2], ZS[3]};
	double out = INFINITY;
	int in = 0;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++) {
				if (!filled(i, j, k))
					continue;
				const double lo[3] = {XS[i], YS[j], ZS[k]}, hi[3] = {XS[i + 1], YS[j + 1], ZS[k + 1]};
				double d = box_dist(p, lo, hi);
				out = fmin(out, d);
				in |= d == 0;
			}
	*inside = in;
	if (!in)
		return out;
	const double plo[3] = {XS[1], YS[1], ZS[1]}, phi[3] = {XS[2], YS[2], ZS[2]};
	double d = box_dist(p, plo, phi);
	for (int k = 0; k < 3; k++)
		d = fmin(d, fmin(p[k] - blo[k], bhi[k] - p[k]));
	return -d;
}

static drape_sdf *build(const solid *s, drape_sdf_info *info)
{
	drape_sdf *f = NULL;
	drape_error err;
	if (drape_sdf_build(s->v, s->nv, s->t, s->nt, H, 0, 0, &f, &err) != DRAPE_OK) {
		printf("  build: %s\n", err.message);
		return NULL;
	}
	drape_sdf_get_info(f, info);
	return f;
}

/* The field at every voxel centre of the block's box grown by the band. */
static uint32_t grid_points(const drape_sdf_info *info, float *out, uint32_t cap)
{
	const int b = (int)lroundf(info->band / H) + 1;
	uint32_t n = 0;
	for (int i = -b; i <= (int)lround(XS[3] / H) + b; i++)
		for (int j = -b; j <= (int)lround(YS[2] / H) + b; j++)
			for (int k = -b; k <= (int)lround(ZS[3] / H) + b; k++) {
				if (n == cap)
					return n;
				out[3 * n] = (float)i * H, out[3 * n + 1] = (float)j * H, out[3 * n + 2] = (float)k * H;
				n++;
			}
	return n;
}

enum { CAP = 40000 };
static float g_pts[3 * CAP];

static void test_block_matches_closed_form(void)
{
	solid s;
	make_block(&s);
	drape_sdf_info info;
	drape_sdf *f = build(&s, &info);
	CHECK(f != NULL);
	uint32_t n = grid_points(&info, g_pts, CAP);
	CHECK(n < CAP);
	float *d = malloc(sizeof(float) * n);
	CHECK(d != NULL);
	drape_sdf_sample(f, g_pts, n, d, NULL);
	int shell = 0, outer = 0, pocket = 0, fail = 0;
	double worst_shell = 0, worst_outer = 0;
	for (uint32_t i = 0; i < n && !fail; i++) {
		const double p[3] = {g_pts[3 * i], g_pts[3 * i + 1], g_pts[3 * i + 2]};
		int in;
		const double want = exact(p, &in);
		if (want >= info.band)
			continue;
		/* The pocket's voxel centres (x = 4 cm, between its walls). */
		if (p[0] > XS[1] && p[0] < XS[2] && p[1] > YS[1] + 1e-4 && p[2] > ZS[1] + 1e-4 && p[2] < ZS[2] - 1e-4) {
			CHECKF(d[i] > 0 && fabs(d[i] - want) <= 1e-6,
			       "pocket voxel centre (%g %g %g): field %g, exact %g", p[0], p[1], p[2], (double)d[i], want);
			pocket++;
		}
		const double off = fabs(d[i] - want);
		if (fabs(want) <= H) {
			CHECKF(off <= 1e-6, "voxel centre (%g %g %g): field %g, exact %g", p[0], p[1], p[2],
			       (double)d[i], want);
			worst_shell = fmax(worst_shell, off), shell++;
		} else {
			CHECKF(off <= 0.25 * H, "voxel centre (%g %g %g): field %g, exact %g", p[0], p[1], p[2],
			       (double)d[i], want);
			worst_outer = fmax(worst_outer, off), outer++;
		}
	}
	printf("  %s: %d voxel centres within a voxel of the surface, worst %.3g um; %d farther, worst %.3g um; "
	       "%d in the pocket read outside\n",
	       info.builder, shell, worst_shell * 1e6, outer, worst_outer * 1e6, pocket);
	CHECK(pocket >= 15 && shell > 1000 && outer > 1000);
	free(d);
	drape_sdf_release(f);
}

/* The same field whatever the winding: all reversed, or every other triangle. */
static void test_winding_does_not_matter(void)
{
	solid s, r, m;
	make_block(&s);
	r = s, m = s;
	for (uint32_t t = 0; t < s.nt; t++) {
		uint32_t *a = &r.t[3 * t], x = a[1];
		a[1] = a[2], a[2] = x;
		if (t % 2) {
			a = &m.t[3 * t], x = a[1];
			a[1] = a[2], a[2] = x;
		}
	}
	drape_sdf_info i1, i2, i3;
	drape_sdf *f1 = build(&s, &i1), *f2 = build(&r, &i2), *f3 = build(&m, &i3);
	CHECK(f1 != NULL && f2 != NULL && f3 != NULL);
	CHECKF(strstr(i1.builder, " 0 triangles reoriented") != NULL, "%s", i1.builder);
	char want[64];
	snprintf(want, sizeof want, " %u triangles reoriented", s.nt);
	CHECKF(strstr(i2.builder, want) != NULL, "%s", i2.builder);
	snprintf(want, sizeof want, " %u triangles reoriented", s.nt / 2);
	CHECKF(strstr(i3.builder, want) != NULL, "%s", i3.builder);
	uint32_t n = grid_points(&i1, g_pts, CAP);
	float *d1 = malloc(sizeof(float) * n * 3);
	CHECK(d1 != NULL);
	drape_sdf_sample(f1, g_pts, n, d1, NULL);
	drape_sdf_sample(f2, g_pts, n, d1 + n, NULL);
	drape_sdf_sample(f3, g_pts, n, d1 + 2 * n, NULL);
	CHECK(memcmp(d1, d1 + n, sizeof(float) * n) == 0);
	CHECK(memcmp(d1, d1 + 2 * n, sizeof(float) * n) == 0);
	free(d1);
	drape_sdf_release(f1);
	drape_sdf_release(f2);
	drape_sdf_release(f3);
}

/* A hole is capped (sdf_vdb.cc) and oriented with the rest; a fin on an
 * edge makes it non-manifold and OpenVDB builds the field. */
static void test_open_and_non_manifold(void)
{
	solid s;
	make_block(&s);
	/* Open: the first quad (two triangles) removed. */
	solid o = s;
	memmove(o.t, o.t + 6, sizeof(uint32_t) * 3 * (o.nt - 2));
	o.nt -= 2;
	drape_sdf_info info;
	drape_sdf *f = build(&o, &info);
	CHECK(f != NULL);
	CHECKF(strncmp(info.builder, "band", 4) == 0, "open block: %s", info.builder);
	const float c[3] = {0.01f, 0.01f, 0.01f};
	float d;
	drape_sdf_sample(f, c, 1, &d, NULL);
	CHECKF(fabs(d + 0.01) <= 1e-6, "inside the capped block: %g, want -0.01", (double)d);
	drape_sdf_release(f);
	/* Non-manifold: a fin on the block's first edge. */
	solid nm = s;
	nm.v[3 * nm.nv] = -0.03f, nm.v[3 * nm.nv + 1] = -0.03f, nm.v[3 * nm.nv + 2] = 0.0f;
	uint32_t *t = &nm.t[3 * nm.nt];
	t[0] = s.t[0], t[1] = s.t[1], t[2] = nm.nv;
	nm.nv++, nm.nt++;
	f = build(&nm, &info);
	CHECK(f != NULL);
	CHECKF(strncmp(info.builder, "openvdb: the edge", 17) == 0, "non-manifold: %s", info.builder);
	drape_sdf_sample(f, c, 1, &d, NULL);
	CHECKF(d < 0, "inside the block (OpenVDB): %g", (double)d);
	drape_sdf_release(f);
}

/* The trilinear value and gradient of drape_sdf_sample from the eight
 * corner values v[a][b][e] and the fractions f. Unfused, every product is
 * rounded before its sum (this file builds with -ffp-contract=off); fused,
 * each a + b * c is one fmaf, as a compiler's contraction would make it. */
#define LERP(a, b, c) (fused ? fmaf((b), (c), (a)) : (a) + (b) * (c))
static void trilinear(float v[2][2][2], const float f[3], float inv, int fused, float *d, float g[3])
{
	float x00 = LERP(v[0][0][0], v[1][0][0] - v[0][0][0], f[0]);
	float x01 = LERP(v[0][0][1], v[1][0][1] - v[0][0][1], f[0]);
	float x10 = LERP(v[0][1][0], v[1][1][0] - v[0][1][0], f[0]);
	float x11 = LERP(v[0][1][1], v[1][1][1] - v[0][1][1], f[0]);
	float y0 = LERP(x00, x10 - x00, f[1]);
	float y1 = LERP(x01, x11 - x01, f[1]);
	*d = LERP(y0, y1 - y0, f[2]);
	float dx00 = v[1][0][0] - v[0][0][0], dx01 = v[1][0][1] - v[0][0][1];
	float dx10 = v[1][1][0] - v[0][1][0], dx11 = v[1][1][1] - v[0][1][1];
	float dxy0 = LERP(dx00, dx10 - dx00, f[1]);
	float dxy1 = LERP(dx01, dx11 - dx01, f[1]);
	g[0] = LERP(dxy0, dxy1 - dxy0, f[2]) * inv;
	g[1] = LERP(x10 - x00, (x11 - x01) - (x10 - x00), f[2]) * inv;
	g[2] = (y1 - y0) * inv;
}
#undef LERP

/*
 * Sampling is exactly the unfused trilinear formula: at a voxel size of
 * 2^-8 m every lattice point p = c / 256 maps to u = c exactly, so the
 * field there reads the voxel's own value, and between lattice points the
 * sample must equal the formula above to the bit. A compiler-made FMA
 * (a * b + c rounded once) changes the last bits of most samples, and the
 * solver's results would then depend on how the C++ file was compiled.
 */
static void test_sampling_is_the_unfused_trilinear(void)
{
	solid s;
	make_block(&s);
	const float vx = 1.0f / 256.0f, inv = 256.0f;
	drape_sdf *f = NULL;
	drape_error err;
	CHECKF(drape_sdf_build(s.v, s.nv, s.t, s.nt, vx, 0, 0, &f, &err) == DRAPE_OK, "%s", err.message);
	drape_sdf_info info;
	drape_sdf_get_info(f, &info);
	CHECK(info.voxel_size == vx);
	uint32_t tested = 0, fused_differs = 0;
	for (int n = 0; n < 20000; n++) {
		/* Points through the block's box grown by 2 cm, off the lattice. */
		float p[3], u[3], fr[3];
		int c[3];
		const float lo[3] = {-0.02f, -0.02f, -0.02f}, ext[3] = {0.12f, 0.10f, 0.10f};
		for (int k = 0; k < 3; k++) {
			p[k] = lo[k] + ext[k] * (float)((n * 7919 + k * 104729) % 20011) / 20011.0f;
			u[k] = p[k] * inv;
			c[k] = (int)floorf(u[k]);
			fr[k] = u[k] - (float)c[k];
		}
		float v[2][2][2];
		int ok = 1;
		for (int a = 0; a < 2; a++)
			for (int b = 0; b < 2; b++)
				for (int e = 0; e < 2; e++) {
					const float q[3] = {(float)(c[0] + a) * vx, (float)(c[1] + b) * vx, (float)(c[2] + e) * vx};
					drape_sdf_sample(f, q, 1, &v[a][b][e], NULL);
					/* A corner beyond the band reads +band; skip the stencil. */
					ok = ok && v[a][b][e] < info.band * (1.0f - 1e-5f);
				}
		if (!ok)
			continue;
		float d, g[3], want, wg[3];
		drape_sdf_sample(f, p, 1, &d, g);
		trilinear(v, fr, inv, 0, &want, wg);
		if (want >= info.band * (1.0f - 1e-5f))
			continue;
		CHECKF(memcmp(&d, &want, sizeof d) == 0 && memcmp(g, wg, sizeof g) == 0,
		       "at (%.9g, %.9g, %.9g): sampled %.9g (%.9g %.9g %.9g), the formula %.9g (%.9g %.9g %.9g)",
		       (double)p[0], (double)p[1], (double)p[2], (double)d, (double)g[0], (double)g[1], (double)g[2],
		       (double)want, (double)wg[0], (double)wg[1], (double)wg[2]);
		/* The same stencil fused: how often contraction would show (the
		 * test can tell the two apart). */
		float fd, fg[3];
		trilinear(v, fr, inv, 1, &fd, fg);
		fused_differs += memcmp(&fd, &d, sizeof d) != 0 || memcmp(fg, g, sizeof g) != 0;
		tested++;
	}
	drape_sdf_release(f);
	printf("  %u stencils inside the band bit-identical to the unfused formula (the fused formula differs on %u)\n",
	       tested, fused_differs);
	CHECK(tested > 2000);
	CHECK(fused_differs > tested / 100);
}

/* Runs the work named `what` ("block" or "body", child_work below) in a
 * new process on the CPUs it is given (one, or all: TBB takes its thread
 * count from the affinity when it starts, so it must be a new process)
 * and copies its n results back into r; -1 when the child fails. The
 * child execs this program again (main's "--child"): a child that only
 * forks inherits whatever lock another thread of the parent held at the
 * fork, and under AddressSanitizer one such child hung for good in the
 * allocator, freeing a field's tree (a fresh suite run, session 34). */
static int in_child(int one_cpu, const char *what, uint64_t *r, size_t n)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(fd[0]);
		if (one_cpu) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET((int)(sched_getcpu() < 0 ? 0 : sched_getcpu()), &set);
			sched_setaffinity(0, sizeof set, &set);
		}
		char fds[16];
		snprintf(fds, sizeof fds, "%d", fd[1]);
		execl("/proc/self/exe", "test_sim_sdfband", "--child", what, fds, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	memset(r, 0, n * sizeof *r);
	ssize_t got = read(fd[0], r, n * sizeof *r);
	close(fd[0]);
	int status;
	waitpid(pid, &status, 0);
	if (got != (ssize_t)(n * sizeof *r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return 0;
}

/* The block at 1 mm: r[0] a hash of its samples, r[1] the thread count. */
static void block_field(uint64_t *r)
{
	solid s;
	make_block(&s);
	drape_sdf *f = NULL;
	drape_error err;
	if (drape_sdf_build(s.v, s.nv, s.t, s.nt, 0.001f, 0, 0, &f, &err) != DRAPE_OK)
		return;
	drape_sdf_info info;
	drape_sdf_get_info(f, &info);
	r[1] = info.threads;
	r[0] = 0xcbf29ce484222325ull;
	/* Distance and gradient at every voxel centre and between. */
	for (int i = -5; i <= 85; i++)
		for (int j = -5; j <= 65; j++)
			for (int k = -5; k <= 65; k++) {
				const float p[3] = {(float)i * 0.001f + 0.0002f, (float)j * 0.001f,
						    (float)k * 0.001f - 0.0003f};
				float v[4];
				drape_sdf_sample(f, p, 1, v, v + 1);
				const unsigned char *c = (const unsigned char *)v;
				for (size_t m = 0; m < sizeof v; m++)
					r[0] = (r[0] ^ c[m]) * 0x100000001b3ull;
			}
	drape_sdf_release(f);
}

/* The MakeHuman body's field as the bench builds it (scale 0.1, 5 mm
 * voxels): r[0] the hash of its voxels (sim_sdf_voxel_hash; 0 unless our
 * band builder made it), r[1] the thread count, r[2] its leaf count. */
static void body_field(uint64_t *r)
{
	mesh m;
	if (mesh_read_obj("tests/data/meshes/mh_proxy_male_generic.obj", 0.1f, &m) != 0)
		return;
	drape_sdf *f = NULL;
	drape_error err;
	if (drape_sdf_build(m.v, m.nv, m.t, m.nt, 0.005f, 0, 0, &f, &err) == DRAPE_OK) {
		drape_sdf_info info;
		drape_sdf_get_info(f, &info);
		r[0] = sim_sdf_voxel_hash(f, &r[2]);
		r[1] = info.threads;
		if (strncmp(info.builder, "band", 4) != 0)
			r[0] = 0;
		drape_sdf_release(f);
	}
	mesh_free(&m);
}

static void test_body_voxels_same_on_any_thread_count(void)
{
	uint64_t one[3], all[3];
	CHECK(in_child(1, "body", one, 3) == 0);
	CHECK(in_child(0, "body", all, 3) == 0);
	printf("  body voxels: %u thread(s) %016llx (%llu leaves); %u threads %016llx (%llu leaves)\n",
	       (unsigned)one[1], (unsigned long long)one[0], (unsigned long long)one[2], (unsigned)all[1],
	       (unsigned long long)all[0], (unsigned long long)all[2]);
	CHECK(one[1] == 1);
	CHECK(one[0] != 0 && one[0] == all[0] && one[2] == all[2]);
	/* The dense builder's voxels (main at c52e710, before the bricks):
	 * the bricked grid changed where voxels are stored, not their bits.
	 * A change meant to alter the voxels updates this and says so. */
	CHECK(one[0] == 0xec8c1d59de8e1f23ull && one[2] == 2518);
}

static void test_same_field_on_any_thread_count(void)
{
	uint64_t one[2], all[2];
	CHECK(in_child(1, "block", one, 2) == 0);
	CHECK(in_child(0, "block", all, 2) == 0);
	printf("  %u thread(s): %016llx; %u threads: %016llx\n", (unsigned)one[1],
	       (unsigned long long)one[0], (unsigned)all[1], (unsigned long long)all[0]);
	CHECK(one[1] == 1);
	CHECK(one[0] != 0 && one[0] == all[0]);
}

/* The child of in_child(): `--child WHAT FD` runs the work and writes its
 * results to FD; exit status 0 when all were written. */
static int child_work(const char *what, const char *fd_text)
{
	uint64_t r[3] = {0, 0, 0};
	size_t n;
	if (strcmp(what, "block") == 0) {
		block_field(r);
		n = 2;
	} else if (strcmp(what, "body") == 0) {
		body_field(r);
		n = 3;
	} else {
		return 2;
	}
	int fd = atoi(fd_text);
	ssize_t w = write(fd, r, n * sizeof *r);
	return w == (ssize_t)(n * sizeof *r) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--child") == 0)
		return child_work(argv[2], argv[3]);
	static const check_test tests[] = {
		CHECK_TEST(test_same_field_on_any_thread_count),
		CHECK_TEST(test_body_voxels_same_on_any_thread_count),
		CHECK_TEST(test_block_matches_closed_form),
		CHECK_TEST(test_winding_does_not_matter),
		CHECK_TEST(test_open_and_non_manifold),
		CHECK_TEST(test_sampling_is_the_unfused_trilinear),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
