/*
 * The preview rasteriser (see render.h for the camera and coverage rules).
 *
 * Two passes: every triangle is scan-converted into a depth buffer that also
 * keeps, per pixel, the interpolated normal and the material of the nearest
 * surface; then each covered pixel is shaded once. Shading after the depth
 * test means overdraw costs a few stores, not a lighting computation, which
 * keeps a million-vertex frame well under a second on one core.
 */
#include "client/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RENDER_PI 3.14159265358979323846
/* Sub-pixel precision of the snapped screen coordinates: 1/256 pixel. */
#define RENDER_SUB 256

enum { MAT_NONE = 0, MAT_FRONT, MAT_BACK, MAT_COLLIDER };

static const float mat_color[4][3] = {
	{0, 0, 0},
	{214.0f, 110.0f, 72.0f},  /* cloth, front: terracotta */
	{222.0f, 190.0f, 120.0f}, /* cloth, back: sand */
	{150.0f, 160.0f, 175.0f}, /* colliders: blue grey */
};

void drape_render_camera_default(drape_render_camera *c)
{
	c->azimuth_deg = 35.0;
	c->elevation_deg = 20.0;
	c->distance = 0.0;
}

static void v_cross(const double a[3], const double b[3], double out[3])
{
	out[0] = a[1] * b[2] - a[2] * b[1];
	out[1] = a[2] * b[0] - a[0] * b[2];
	out[2] = a[0] * b[1] - a[1] * b[0];
}

static bool v_normalize(double v[3])
{
	double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
	if (!(l > 0.0))
		return false;
	v[0] /= l, v[1] /= l, v[2] /= l;
	return true;
}

drape_err drape_render_view_make(const drape_render_camera *cam, const drape_render_mesh *meshes,
				 uint32_t mesh_count, uint32_t width, uint32_t height, drape_render_view *out,
				 drape_error *err)
{
	if (width == 0 || height == 0 || width > DRAPE_RENDER_MAX_SIDE || height > DRAPE_RENDER_MAX_SIDE)
		return drape_error_setf(err, DRAPE_EINVAL, "size: %ux%u is outside 1x1 .. %ux%u", width, height,
					DRAPE_RENDER_MAX_SIDE, DRAPE_RENDER_MAX_SIDE);
	if (!isfinite(cam->azimuth_deg) || !isfinite(cam->elevation_deg) || cam->elevation_deg < -90.0 ||
	    cam->elevation_deg > 90.0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"camera: azimuth %g, elevation %g: elevation must be within -90 .. 90",
					cam->azimuth_deg, cam->elevation_deg);
	if (!(cam->distance >= 0.0) && !isnan(cam->distance))
		return drape_error_setf(err, DRAPE_EINVAL, "camera: distance %g is negative", cam->distance);
	if (isinf(cam->distance))
		return drape_error_setf(err, DRAPE_EINVAL, "camera: distance is not finite");
	double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	uint64_t counted = 0;
	for (uint32_t m = 0; m < mesh_count; m++) {
		const float *p = meshes[m].positions;
		for (uint32_t v = 0; v < meshes[m].vertex_count; v++)
			for (int k = 0; k < 3; k++) {
				float x = p[(size_t)v * 3 + k];
				if (!isfinite(x))
					return drape_error_setf(err, DRAPE_ENONFINITE,
								"positions: mesh %u vertex %u coordinate %d is "
								"not finite",
								m, v, k);
				if (x < lo[k])
					lo[k] = x;
				if (x > hi[k])
					hi[k] = x;
			}
		counted += meshes[m].vertex_count;
	}
	if (counted == 0)
		lo[0] = lo[1] = lo[2] = hi[0] = hi[1] = hi[2] = 0.0;
	double target[3], r2 = 0.0;
	for (int k = 0; k < 3; k++) {
		target[k] = 0.5 * (lo[k] + hi[k]);
		r2 += 0.25 * (hi[k] - lo[k]) * (hi[k] - lo[k]);
	}
	double radius = sqrt(r2) > 0.0 ? sqrt(r2) : 1.0;
	double half_v = 0.5 * DRAPE_RENDER_FOV_DEG * RENDER_PI / 180.0;
	double half_h = atan(tan(half_v) * (double)width / (double)height);
	double half = half_v < half_h ? half_v : half_h;
	double dist = cam->distance > 0.0 ? cam->distance : radius / sin(half) * 1.05;

	double az = cam->azimuth_deg * RENDER_PI / 180.0, el = cam->elevation_deg * RENDER_PI / 180.0;
	drape_render_view v;
	v.back[0] = cos(el) * sin(az);
	v.back[1] = sin(el);
	v.back[2] = cos(el) * cos(az);
	for (int k = 0; k < 3; k++)
		v.eye[k] = target[k] + dist * v.back[k];
	double world_up[3] = {0.0, 1.0, 0.0};
	if (fabs(cos(el)) < 1e-9) {
		world_up[1] = 0.0;
		world_up[2] = el > 0.0 ? -1.0 : 1.0;
	}
	v_cross(world_up, v.back, v.right);
	if (!v_normalize(v.right))
		return drape_error_setf(err, DRAPE_EINVAL, "camera: no right direction");
	v_cross(v.back, v.right, v.up);
	v.focal = 0.5 * (double)height / tan(half_v);
	v.width = width;
	v.height = height;
	*out = v;
	return DRAPE_OK;
}

/* Per-vertex screen data: snapped pixel coordinates and 1 / depth. */
typedef struct screen_vertex {
	int64_t x, y;   /* pixel * RENDER_SUB */
	float inv_z;    /* 1 / distance along the view axis; 0 = not drawable */
} screen_vertex;

/* The scan conversion of one triangle into the depth/normal buffers. */
typedef struct raster {
	uint32_t w, h;
	float *depth;    /* 1 / z of the nearest surface, 0 = none */
	float *normal;   /* 3 per pixel, world space, not normalised */
	uint8_t *mat;
} raster;

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static bool top_left(int64_t dx, int64_t dy)
{
	/* Screen y grows downwards and triangles are oriented so that the
	 * edge function is positive inside: a top edge runs in +x, a left
	 * edge in -y. */
	return dy < 0 || (dy == 0 && dx > 0);
}

static void raster_triangle(raster *r, const screen_vertex *s0, const screen_vertex *s1, const screen_vertex *s2,
			    const float *n0, const float *n1, const float *n2, bool flip, uint8_t mat)
{
	int64_t area = (s1->x - s0->x) * (s2->y - s0->y) - (s1->y - s0->y) * (s2->x - s0->x);
	if (area == 0)
		return;
	if (area < 0) {
		const screen_vertex *ts = s1;
		s1 = s2, s2 = ts;
		const float *tn = n1;
		n1 = n2, n2 = tn;
		area = -area;
	}
	int64_t minx = s0->x < s1->x ? s0->x : s1->x, maxx = s0->x > s1->x ? s0->x : s1->x;
	int64_t miny = s0->y < s1->y ? s0->y : s1->y, maxy = s0->y > s1->y ? s0->y : s1->y;
	minx = s2->x < minx ? s2->x : minx, maxx = s2->x > maxx ? s2->x : maxx;
	miny = s2->y < miny ? s2->y : miny, maxy = s2->y > maxy ? s2->y : maxy;
	/* Pixel x has its centre at x * SUB + SUB / 2: the first centre at or
	 * after min, the last at or before max. */
	int64_t x0 = -floor_div(-(minx - RENDER_SUB / 2), RENDER_SUB);
	int64_t x1 = floor_div(maxx - RENDER_SUB / 2, RENDER_SUB);
	int64_t y0 = -floor_div(-(miny - RENDER_SUB / 2), RENDER_SUB);
	int64_t y1 = floor_div(maxy - RENDER_SUB / 2, RENDER_SUB);
	x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
	x1 = x1 >= (int64_t)r->w ? (int64_t)r->w - 1 : x1;
	y1 = y1 >= (int64_t)r->h ? (int64_t)r->h - 1 : y1;
	if (x0 > x1 || y0 > y1)
		return;
	/* Edge e_i is opposite vertex i: E(p) = (b - a) x (p - a). */
	const screen_vertex *ea[3] = {s1, s2, s0}, *eb[3] = {s2, s0, s1};
	int64_t dx[3], dy[3], bias[3], row[3];
	int64_t px = x0 * RENDER_SUB + RENDER_SUB / 2, py = y0 * RENDER_SUB + RENDER_SUB / 2;
	for (int e = 0; e < 3; e++) {
		dx[e] = eb[e]->x - ea[e]->x;
		dy[e] = eb[e]->y - ea[e]->y;
		bias[e] = top_left(dx[e], dy[e]) ? 0 : -1;
		row[e] = dx[e] * (py - ea[e]->y) - dy[e] * (px - ea[e]->x);
	}
	double inv_area = 1.0 / (double)area;
	float z0 = s0->inv_z, z1 = s1->inv_z, z2 = s2->inv_z;
	for (int64_t y = y0; y <= y1; y++) {
		int64_t e0 = row[0], e1 = row[1], e2 = row[2];
		for (int64_t x = x0; x <= x1; x++) {
			if (e0 + bias[0] >= 0 && e1 + bias[1] >= 0 && e2 + bias[2] >= 0) {
				float b0 = (float)((double)e0 * inv_area), b1 = (float)((double)e1 * inv_area);
				float b2 = 1.0f - b0 - b1;
				float iz = b0 * z0 + b1 * z1 + b2 * z2;
				size_t i = (size_t)y * r->w + (size_t)x;
				if (iz > r->depth[i]) {
					r->depth[i] = iz;
					/* Perspective-correct weights: attribute / z is
					 * linear on screen. */
					float w0 = b0 * z0, w1 = b1 * z1, w2 = b2 * z2;
					float sgn = flip ? -1.0f : 1.0f;
					for (int k = 0; k < 3; k++)
						r->normal[i * 3 + k] = sgn * (w0 * n0[k] + w1 * n1[k] + w2 * n2[k]);
					r->mat[i] = mat;
				}
			}
			e0 -= dy[0] * RENDER_SUB, e1 -= dy[1] * RENDER_SUB, e2 -= dy[2] * RENDER_SUB;
		}
		row[0] += dx[0] * RENDER_SUB, row[1] += dx[1] * RENDER_SUB, row[2] += dx[2] * RENDER_SUB;
	}
}

/* Screen positions of a mesh's vertices and its area-weighted normals. */
static void mesh_prepare(const drape_render_view *v, const drape_render_mesh *m, screen_vertex *sv, float *nrm)
{
	double cx = 0.5 * (double)v->width, cy = 0.5 * (double)v->height;
	for (uint32_t i = 0; i < m->vertex_count; i++) {
		const float *p = &m->positions[(size_t)i * 3];
		double d[3] = {p[0] - v->eye[0], p[1] - v->eye[1], p[2] - v->eye[2]};
		double xc = d[0] * v->right[0] + d[1] * v->right[1] + d[2] * v->right[2];
		double yc = d[0] * v->up[0] + d[1] * v->up[1] + d[2] * v->up[2];
		double depth = -(d[0] * v->back[0] + d[1] * v->back[1] + d[2] * v->back[2]);
		sv[i].inv_z = 0.0f;
		sv[i].x = sv[i].y = 0;
		if (!(depth >= DRAPE_RENDER_NEAR))
			continue;
		double sx = cx + v->focal * xc / depth, sy = cy - v->focal * yc / depth;
		if (fabs(sx) > DRAPE_RENDER_GUARD || fabs(sy) > DRAPE_RENDER_GUARD)
			continue;
		sv[i].x = (int64_t)llround(sx * RENDER_SUB);
		sv[i].y = (int64_t)llround(sy * RENDER_SUB);
		sv[i].inv_z = (float)(1.0 / depth);
	}
	memset(nrm, 0, (size_t)m->vertex_count * 3 * sizeof *nrm);
	for (uint32_t t = 0; t < m->triangle_count; t++) {
		const uint32_t *tri = &m->triangles[(size_t)t * 3];
		const float *a = &m->positions[(size_t)tri[0] * 3], *b = &m->positions[(size_t)tri[1] * 3],
			    *c = &m->positions[(size_t)tri[2] * 3];
		float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
		float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
			      e1[0] * e2[1] - e1[1] * e2[0]};
		for (int k = 0; k < 3; k++)
			for (int j = 0; j < 3; j++)
				nrm[(size_t)tri[k] * 3 + j] += n[j];
	}
}

drape_err drape_render_draw(const drape_render_view *view, const drape_render_mesh *meshes, uint32_t mesh_count,
			    uint8_t *rgb, drape_error *err)
{
	uint32_t max_v = 0;
	for (uint32_t m = 0; m < mesh_count; m++) {
		const drape_render_mesh *mm = &meshes[m];
		for (uint64_t i = 0; i < (uint64_t)mm->triangle_count * 3; i++)
			if (mm->triangles[i] >= mm->vertex_count)
				return drape_error_setf(err, DRAPE_EINVAL,
							"triangles: mesh %u triangle %llu index %u is out of range "
							"(%u vertices)",
							m, (unsigned long long)(i / 3), mm->triangles[i],
							mm->vertex_count);
		if (mm->vertex_count > max_v)
			max_v = mm->vertex_count;
	}
	size_t npix = (size_t)view->width * view->height;
	raster r = {view->width, view->height, calloc(npix, sizeof(float)), malloc(npix * 3 * sizeof(float)),
		    calloc(npix, 1)};
	screen_vertex *sv = malloc((size_t)(max_v ? max_v : 1) * sizeof *sv);
	float *nrm = malloc((size_t)(max_v ? max_v : 1) * 3 * sizeof *nrm);
	if (r.depth == NULL || r.normal == NULL || r.mat == NULL || sv == NULL || nrm == NULL) {
		free(r.depth), free(r.normal), free(r.mat), free(sv), free(nrm);
		return drape_error_setf(err, DRAPE_ENOMEM, "render: no memory for a %ux%u image of %u vertices",
					view->width, view->height, max_v);
	}
	for (uint32_t m = 0; m < mesh_count; m++) {
		const drape_render_mesh *mm = &meshes[m];
		mesh_prepare(view, mm, sv, nrm);
		for (uint32_t t = 0; t < mm->triangle_count; t++) {
			const uint32_t *tri = &mm->triangles[(size_t)t * 3];
			const screen_vertex *a = &sv[tri[0]], *b = &sv[tri[1]], *c = &sv[tri[2]];
			if (a->inv_z == 0.0f || b->inv_z == 0.0f || c->inv_z == 0.0f)
				continue;
			/* Which side faces the eye: the sign of the face normal
			 * against the direction to the eye. */
			const float *pa = &mm->positions[(size_t)tri[0] * 3], *pb = &mm->positions[(size_t)tri[1] * 3],
				    *pc = &mm->positions[(size_t)tri[2] * 3];
			double e1[3] = {pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
			double e2[3] = {pc[0] - pa[0], pc[1] - pa[1], pc[2] - pa[2]};
			double fn[3];
			v_cross(e1, e2, fn);
			double to_eye = fn[0] * (view->eye[0] - pa[0]) + fn[1] * (view->eye[1] - pa[1]) +
					fn[2] * (view->eye[2] - pa[2]);
			bool back = to_eye < 0.0;
			uint8_t mat = mm->kind == DRAPE_RENDER_CLOTH ? (back ? MAT_BACK : MAT_FRONT) : MAT_COLLIDER;
			raster_triangle(&r, a, b, c, &nrm[(size_t)tri[0] * 3], &nrm[(size_t)tri[1] * 3],
					&nrm[(size_t)tri[2] * 3], back, mat);
		}
	}
	/* Two lights fixed to the camera, so every view is lit: a key from the
	 * upper left in front, a fill from the right. */
	double key_c[3] = {-0.5, 0.7, 0.6}, fill_c[3] = {0.8, -0.1, 0.4};
	v_normalize(key_c), v_normalize(fill_c);
	float key[3], fill[3];
	for (int k = 0; k < 3; k++) {
		key[k] = (float)(key_c[0] * view->right[k] + key_c[1] * view->up[k] + key_c[2] * view->back[k]);
		fill[k] = (float)(fill_c[0] * view->right[k] + fill_c[1] * view->up[k] + fill_c[2] * view->back[k]);
	}
	for (size_t i = 0; i < npix; i++) {
		uint8_t *px = &rgb[i * 3];
		if (r.mat[i] == MAT_NONE) {
			px[0] = DRAPE_RENDER_BG_R, px[1] = DRAPE_RENDER_BG_G, px[2] = DRAPE_RENDER_BG_B;
			continue;
		}
		float *n = &r.normal[i * 3];
		float l = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
		float s = 0.18f;
		if (l > 0.0f) {
			float dk = (n[0] * key[0] + n[1] * key[1] + n[2] * key[2]) / l;
			float df = (n[0] * fill[0] + n[1] * fill[1] + n[2] * fill[2]) / l;
			s += 0.72f * (dk > 0.0f ? dk : 0.0f) + 0.25f * (df > 0.0f ? df : 0.0f);
		}
		for (int k = 0; k < 3; k++) {
			float c = mat_color[r.mat[i]][k] * s;
			px[k] = (uint8_t)(c >= 255.0f ? 255 : (int)(c + 0.5f));
		}
	}
	free(r.depth), free(r.normal), free(r.mat), free(sv), free(nrm);
	return DRAPE_OK;
}

/* 5x7 glyphs, one byte per row, bit 4 the leftmost column. */
static const uint8_t *glyph(char ch)
{
	static const uint8_t digits[10][7] = {
		{0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},
		{0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},
		{0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},
		{0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
		{0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},
	};
	static const uint8_t slash[7] = {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10};
	static const uint8_t dash[7] = {0, 0, 0, 0x1F, 0, 0, 0};
	static const uint8_t dot[7] = {0, 0, 0, 0, 0, 0x0C, 0x0C};
	if (ch >= '0' && ch <= '9')
		return digits[ch - '0'];
	if (ch == '/')
		return slash;
	if (ch == '-')
		return dash;
	if (ch == '.')
		return dot;
	return NULL;
}

void drape_render_text(uint8_t *rgb, uint32_t width, uint32_t height, int x, int y, int scale, const char *text,
		       const uint8_t color[3])
{
	for (; *text != '\0'; text++, x += 6 * scale) {
		const uint8_t *g = glyph(*text);
		if (g == NULL)
			continue;
		for (int gy = 0; gy < 7 * scale; gy++)
			for (int gx = 0; gx < 5 * scale; gx++) {
				if (!(g[gy / scale] & (0x10 >> (gx / scale))))
					continue;
				long px = (long)x + gx, py = (long)y + gy;
				if (px < 0 || py < 0 || px >= (long)width || py >= (long)height)
					continue;
				uint8_t *p = &rgb[((size_t)py * width + (size_t)px) * 3];
				p[0] = color[0], p[1] = color[1], p[2] = color[2];
			}
	}
}
