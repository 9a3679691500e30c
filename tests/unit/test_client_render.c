/*
 * The preview rasteriser (client/render.c) against geometry: the pixels it
 * covers are compared with the projected outline computed here, on its own,
 * from the camera model render.h documents (exact polygon area by the
 * shoelace formula and an exact count of the pixel centres inside);
 * occlusion, the two cloth sides, bad input, and the time a million-vertex
 * frame takes (printed, not asserted: speed is for make bench).
 */
#include "client/render.h"
#include "tests/unit/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define PI_D 3.14159265358979323846

/* An n x n grid spanning the square with corners c, c + u, c + v, c + u + v. */
static void grid(uint32_t n, const double c[3], const double u[3], const double v[3], float *pos, uint32_t *tri)
{
	for (uint32_t j = 0; j < n; j++)
		for (uint32_t i = 0; i < n; i++)
			for (int k = 0; k < 3; k++)
				pos[((size_t)j * n + i) * 3 + k] =
					(float)(c[k] + u[k] * i / (n - 1) + v[k] * j / (n - 1));
	uint32_t *t = tri;
	for (uint32_t j = 0; j + 1 < n; j++)
		for (uint32_t i = 0; i + 1 < n; i++) {
			uint32_t a = j * n + i, b = a + 1, d = a + n, e = d + 1;
			*t++ = a, *t++ = b, *t++ = e, *t++ = a, *t++ = e, *t++ = d;
		}
}

/* The documented camera, computed here independently of render.c. */
typedef struct cam_ref {
	double eye[3], right[3], up[3], back[3], f;
	uint32_t w, h;
} cam_ref;

static void cam_ref_make(double az_deg, double el_deg, double dist, const double target[3], uint32_t w,
			 uint32_t h, cam_ref *c)
{
	double az = az_deg * PI_D / 180, el = el_deg * PI_D / 180;
	c->back[0] = cos(el) * sin(az), c->back[1] = sin(el), c->back[2] = cos(el) * cos(az);
	for (int k = 0; k < 3; k++)
		c->eye[k] = target[k] + dist * c->back[k];
	/* right = Y x back, normalised; up = back x right. */
	double r[3] = {c->back[2], 0.0, -c->back[0]};
	double l = sqrt(r[0] * r[0] + r[2] * r[2]);
	c->right[0] = r[0] / l, c->right[1] = 0.0, c->right[2] = r[2] / l;
	c->up[0] = c->back[1] * c->right[2] - c->back[2] * c->right[1];
	c->up[1] = c->back[2] * c->right[0] - c->back[0] * c->right[2];
	c->up[2] = c->back[0] * c->right[1] - c->back[1] * c->right[0];
	c->f = 0.5 * h / tan(0.5 * DRAPE_RENDER_FOV_DEG * PI_D / 180);
	c->w = w, c->h = h;
}

static void cam_ref_project(const cam_ref *c, const double p[3], double out[2])
{
	double d[3] = {p[0] - c->eye[0], p[1] - c->eye[1], p[2] - c->eye[2]};
	double x = d[0] * c->right[0] + d[1] * c->right[1] + d[2] * c->right[2];
	double y = d[0] * c->up[0] + d[1] * c->up[1] + d[2] * c->up[2];
	double z = -(d[0] * c->back[0] + d[1] * c->back[1] + d[2] * c->back[2]);
	out[0] = c->w / 2.0 + c->f * x / z;
	out[1] = c->h / 2.0 - c->f * y / z;
}

static bool is_bg(const uint8_t *p)
{
	return p[0] == DRAPE_RENDER_BG_R && p[1] == DRAPE_RENDER_BG_G && p[2] == DRAPE_RENDER_BG_B;
}

static uint64_t count_covered(const uint8_t *rgb, uint32_t w, uint32_t h)
{
	uint64_t n = 0;
	for (size_t i = 0; i < (size_t)w * h; i++)
		n += !is_bg(&rgb[i * 3]);
	return n;
}

/* A tilted square seen from an oblique camera: its outline is a general
 * quadrilateral (perspective), and the triangles inside must cover exactly
 * the pixel centres inside it, once. */
static void test_silhouette_matches_projected_outline(void)
{
	enum { N = 41, W = 400, H = 300 };
	static float pos[N * N * 3];
	static uint32_t tri[(N - 1) * (N - 1) * 6];
	double c[3] = {-0.5, 0.2, -0.4}, u[3] = {1.0, 0.1, 0.2}, v[3] = {0.1, 0.6, 0.7};
	grid(N, c, u, v, pos, tri);
	drape_render_mesh m = {pos, N * N, tri, (N - 1) * (N - 1) * 2, DRAPE_RENDER_CLOTH};
	drape_render_camera cam = {30.0, 25.0, 1.6};
	drape_render_view view;
	drape_error err;
	CHECK(drape_render_view_make(&cam, &m, 1, W, H, &view, &err) == DRAPE_OK);
	static uint8_t rgb[W * H * 3];
	CHECK(drape_render_draw(&view, &m, 1, rgb, &err) == DRAPE_OK);

	/* The target is the centre of the bounding box of the vertices. */
	double lo[3] = {1e9, 1e9, 1e9}, hi[3] = {-1e9, -1e9, -1e9};
	for (int i = 0; i < N * N; i++)
		for (int k = 0; k < 3; k++)
			lo[k] = fmin(lo[k], pos[i * 3 + k]), hi[k] = fmax(hi[k], pos[i * 3 + k]);
	double target[3] = {(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2};
	cam_ref ref;
	cam_ref_make(30.0, 25.0, 1.6, target, W, H, &ref);
	double corner[4][3], q[4][2];
	for (int k = 0; k < 3; k++) {
		corner[0][k] = c[k], corner[1][k] = c[k] + u[k];
		corner[2][k] = c[k] + u[k] + v[k], corner[3][k] = c[k] + v[k];
	}
	for (int i = 0; i < 4; i++)
		cam_ref_project(&ref, corner[i], q[i]);
	double area = 0.0, perimeter = 0.0;
	for (int i = 0; i < 4; i++) {
		const double *a = q[i], *b = q[(i + 1) % 4];
		area += a[0] * b[1] - b[0] * a[1];
		perimeter += hypot(b[0] - a[0], b[1] - a[1]);
	}
	area = fabs(area) / 2.0;
	/* Pixel centres inside the convex quadrilateral (same-sign test). */
	uint64_t inside = 0, mismatched = 0;
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++) {
			double px = x + 0.5, py = y + 0.5;
			int pos_n = 0, neg_n = 0;
			for (int i = 0; i < 4; i++) {
				const double *a = q[i], *b = q[(i + 1) % 4];
				double e = (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]);
				pos_n += e > 0, neg_n += e < 0;
			}
			bool in = pos_n == 4 || neg_n == 4;
			inside += in;
			mismatched += in != !is_bg(&rgb[((size_t)y * W + x) * 3]);
		}
	uint64_t covered = count_covered(rgb, W, H);
	printf("  silhouette: %llu pixels covered, %llu centres inside the projected outline, area %.1f px^2, "
	       "perimeter %.1f px, %llu pixels differ\n",
	       (unsigned long long)covered, (unsigned long long)inside, area, perimeter,
	       (unsigned long long)mismatched);
	CHECKF(area > 10000.0, "the square should fill a good part of the image (area %.1f)", area);
	/* Pixel count against exact area: at most the pixels the outline
	 * crosses can go either way. */
	CHECKF(fabs((double)covered - area) <= perimeter, "covered %llu against area %.1f (perimeter %.1f)",
	       (unsigned long long)covered, area, perimeter);
	/* Pixel for pixel: only centres within 1/256 pixel of the outline (the
	 * snapping of projected vertices) may differ; a handful at most. */
	CHECKF(mismatched <= 4, "%llu pixels differ from the exact coverage", (unsigned long long)mismatched);
}

/* A collider square in front of part of the cloth hides it whatever the
 * order the meshes are drawn in; the cloth's two sides have their colours. */
static void test_depth_and_sides(void)
{
	enum { N = 9, W = 200, H = 200 };
	static float cloth[N * N * 3], wall[N * N * 3];
	static uint32_t tri[(N - 1) * (N - 1) * 6];
	/* Cloth in the plane z = 0, facing +z (counter-clockwise seen from +z);
	 * a smaller collider square at z = 0.3 over its left half. */
	double c0[3] = {-1, -1, 0}, u0[3] = {2, 0, 0}, v0[3] = {0, 2, 0};
	double c1[3] = {-1, -0.5, 0.3}, u1[3] = {0.8, 0, 0}, v1[3] = {0, 1, 0};
	grid(N, c0, u0, v0, cloth, tri);
	grid(N, c1, u1, v1, wall, tri);
	drape_render_mesh ms[2] = {{cloth, N * N, tri, (N - 1) * (N - 1) * 2, DRAPE_RENDER_CLOTH},
				   {wall, N * N, tri, (N - 1) * (N - 1) * 2, DRAPE_RENDER_COLLIDER}};
	drape_render_mesh rev[2] = {ms[1], ms[0]};
	static uint8_t a[W * H * 3], b[W * H * 3];
	drape_render_camera front = {0.0, 0.0, 4.0};
	drape_render_view view;
	drape_error err;
	CHECK(drape_render_view_make(&front, ms, 1, W, H, &view, &err) == DRAPE_OK);
	CHECK(drape_render_draw(&view, ms, 2, a, &err) == DRAPE_OK);
	CHECK(drape_render_draw(&view, rev, 2, b, &err) == DRAPE_OK);
	CHECK(memcmp(a, b, sizeof a) == 0);
	/* The collider's centre, (-0.6, 0, 0.3), and a cloth point (0.5, 0, 0). */
	cam_ref ref;
	double target[3] = {0, 0, 0}, pc[3] = {-0.6, 0, 0.3}, pf[3] = {0.5, 0, 0}, q[2];
	cam_ref_make(0.0, 0.0, 4.0, target, W, H, &ref);
	cam_ref_project(&ref, pc, q);
	const uint8_t *col = &a[((size_t)q[1] * W + (size_t)q[0]) * 3];
	CHECKF(col[2] > col[0], "collider pixel (%u %u %u) should be blue grey", col[0], col[1], col[2]);
	cam_ref_project(&ref, pf, q);
	const uint8_t *fr = &a[((size_t)q[1] * W + (size_t)q[0]) * 3];
	CHECKF(fr[0] > fr[1] * 3 / 2 && fr[0] > fr[2], "cloth front pixel (%u %u %u) should be terracotta", fr[0],
	       fr[1], fr[2]);
	/* From behind (azimuth 180) the same point shows the back colour. */
	drape_render_camera behind = {180.0, 0.0, 4.0};
	CHECK(drape_render_view_make(&behind, ms, 1, W, H, &view, &err) == DRAPE_OK);
	CHECK(drape_render_draw(&view, ms, 1, a, &err) == DRAPE_OK);
	cam_ref_make(180.0, 0.0, 4.0, target, W, H, &ref);
	cam_ref_project(&ref, pf, q);
	const uint8_t *bk = &a[((size_t)q[1] * W + (size_t)q[0]) * 3];
	CHECKF(bk[1] * 10 > bk[0] * 7, "cloth back pixel (%u %u %u) should be sand", bk[0], bk[1], bk[2]);
}

static void test_bad_input_changes_nothing(void)
{
	float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
	uint32_t tri[3] = {0, 1, 3};
	drape_render_mesh m = {pos, 3, tri, 1, DRAPE_RENDER_CLOTH};
	drape_render_camera cam;
	drape_render_camera_default(&cam);
	drape_render_view view;
	drape_error err;
	CHECK(drape_render_view_make(&cam, &m, 1, 0, 10, &view, &err) == DRAPE_EINVAL);
	CHECK(strstr(err.message, "size") != NULL);
	cam.elevation_deg = 91.0;
	CHECK(drape_render_view_make(&cam, &m, 1, 10, 10, &view, &err) == DRAPE_EINVAL);
	CHECK(strstr(err.message, "camera") != NULL);
	drape_render_camera_default(&cam);
	CHECK(drape_render_view_make(&cam, &m, 1, 10, 10, &view, &err) == DRAPE_OK);
	uint8_t rgb[10 * 10 * 3];
	memset(rgb, 0x77, sizeof rgb);
	CHECK(drape_render_draw(&view, &m, 1, rgb, &err) == DRAPE_EINVAL);
	CHECK(strstr(err.message, "triangles") != NULL);
	for (size_t i = 0; i < sizeof rgb; i++)
		CHECK(rgb[i] == 0x77);
	pos[4] = NAN;
	CHECK(drape_render_view_make(&cam, &m, 1, 10, 10, &view, &err) == DRAPE_ENONFINITE);
	CHECK(strstr(err.message, "positions") != NULL);
}

/* A 1000 x 1000 vertex cloth, rippled so that it shades, at 1024 x 768. */
static void test_million_vertices(void)
{
	enum { N = 1000, W = 1024, H = 768 };
	float *pos = malloc((size_t)N * N * 3 * sizeof *pos);
	uint32_t *tri = malloc((size_t)(N - 1) * (N - 1) * 6 * sizeof *tri);
	uint8_t *rgb = malloc((size_t)W * H * 3);
	CHECK(pos && tri && rgb);
	double c[3] = {-1, -1, 0}, u[3] = {2, 0, 0}, v[3] = {0, 2, 0};
	grid(N, c, u, v, pos, tri);
	for (size_t i = 0; i < (size_t)N * N; i++)
		pos[i * 3 + 2] = 0.05f * sinf(pos[i * 3] * 12.0f) * cosf(pos[i * 3 + 1] * 9.0f);
	drape_render_mesh m = {pos, N * N, tri, (N - 1) * (N - 1) * 2, DRAPE_RENDER_CLOTH};
	drape_render_camera cam;
	drape_render_camera_default(&cam);
	drape_render_view view;
	drape_error err;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(drape_render_view_make(&cam, &m, 1, W, H, &view, &err) == DRAPE_OK);
	CHECK(drape_render_draw(&view, &m, 1, rgb, &err) == DRAPE_OK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	uint64_t covered = count_covered(rgb, W, H);
	printf("  1,000,000 vertices, 1,996,002 triangles at %dx%d: %.1f ms, %llu pixels covered\n", W, H, ms,
	       (unsigned long long)covered);
	CHECK(covered > (uint64_t)W * H / 10);
	free(pos), free(tri), free(rgb);
}

static const check_test tests[] = {
	CHECK_TEST(test_silhouette_matches_projected_outline),
	CHECK_TEST(test_depth_and_sides),
	CHECK_TEST(test_bad_input_changes_nothing),
	CHECK_TEST(test_million_vertices),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
