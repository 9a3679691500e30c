/*
 * A small CPU rasteriser for preview images (internal header of libdrape;
 * the drape CLI's `preview` command uses it, hence the drape_render_
 * prefix). Pure C: no I/O, no allocation beyond the depth buffer, no
 * dependency.
 *
 * What it draws: triangle meshes into an RGB8 image with a depth buffer,
 * shaded by two directional lights fixed to the camera (a key light from the
 * upper left and a fill from the right) plus ambient, with smooth
 * (area-weighted) vertex normals. Cloth is two-sided: the side facing away
 * from its triangles' winding is lit with its normal flipped and drawn in
 * its own back colour, so a fold shows which side is which. Colliders are
 * drawn in their own colour.
 *
 * The camera (what the preview's --camera az,el,dist means):
 *   target  the centre of the bounding box of every mesh drawn;
 *   eye     target + dist * (cos(el) sin(az), sin(el), cos(el) cos(az)),
 *           az and el in degrees: az turns about +Y from +Z towards +X, el
 *           lifts above the horizontal plane;
 *   up      world +Y (world -Z when looking straight down, +Z straight up);
 *   lens    a pinhole with a vertical field of view of
 *           DRAPE_RENDER_FOV_DEG; focal length in pixels
 *           f = (height / 2) / tan(fov / 2), square pixels, principal point
 *           at the image centre. A camera-space point (x right, y up, z
 *           towards the viewer) lands at pixel coordinates
 *           (width / 2 + f x / -z, height / 2 - f y / -z), with (0, 0) the
 *           top-left corner of the top-left pixel.
 *   auto    dist = 0 (or NaN) picks the distance at which the bounding
 *           sphere of everything drawn fills the narrower field of view
 *           with a 5 % margin.
 *
 * Coverage: a pixel belongs to a triangle when its centre (x + 0.5, y + 0.5)
 * lies inside the projected triangle; a centre exactly on an edge counts for
 * the triangle on whose top or left side it lies (the usual top-left rule),
 * so triangles sharing an edge cover each pixel once, with neither gaps nor
 * double coverage. A triangle with a vertex closer to the eye than
 * DRAPE_RENDER_NEAR (or behind it), or that reaches further than
 * DRAPE_RENDER_GUARD pixels outside the image, is not drawn: projected
 * coordinates are snapped to 1/256 pixel and the edge tests are exact
 * integer arithmetic, which needs them bounded.
 */
#ifndef DRAPE_CLIENT_RENDER_H
#define DRAPE_CLIENT_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "drape/error.h"

#define DRAPE_RENDER_FOV_DEG 40.0
#define DRAPE_RENDER_NEAR 1e-3
#define DRAPE_RENDER_GUARD 4000000.0
/* Largest image side accepted. */
#define DRAPE_RENDER_MAX_SIDE 16384u

/* The colour of the background (never produced by shading, whose every
 * channel is at least the ambient share of a material colour). */
#define DRAPE_RENDER_BG_R 38
#define DRAPE_RENDER_BG_G 42
#define DRAPE_RENDER_BG_B 48

typedef enum drape_render_kind {
	DRAPE_RENDER_CLOTH = 0,   /* two-sided: front and back colours */
	DRAPE_RENDER_COLLIDER = 1 /* one colour, lit on whichever side shows */
} drape_render_kind;

/* One mesh to draw. Arrays are borrowed for the duration of the call. */
typedef struct drape_render_mesh {
	const float *positions; /* vertex_count * 3 */
	uint32_t vertex_count;
	const uint32_t *triangles; /* triangle_count * 3, each < vertex_count */
	uint32_t triangle_count;
	drape_render_kind kind;
} drape_render_mesh;

typedef struct drape_render_camera {
	double azimuth_deg;   /* default 35 */
	double elevation_deg; /* default 20 */
	double distance;      /* 0 = auto (default) */
} drape_render_camera;

void drape_render_camera_default(drape_render_camera *c);

/* A camera resolved for an image: what drape_render_draw uses, and what a
 * contact sheet fixes once so that every tile is seen from the same place. */
typedef struct drape_render_view {
	double eye[3];
	double right[3], up[3], back[3]; /* camera axes in world space */
	double focal;                    /* pixels */
	uint32_t width, height;
} drape_render_view;

/*
 * Resolves `cam` for a width x height image looking at the bounding box of
 * `meshes` (non-finite positions are refused). Fails with DRAPE_EINVAL
 * naming the field at fault (size, camera, positions) and leaves *out
 * untouched.
 */
drape_err drape_render_view_make(const drape_render_camera *cam, const drape_render_mesh *meshes,
				 uint32_t mesh_count, uint32_t width, uint32_t height, drape_render_view *out,
				 drape_error *err);

/*
 * Draws `meshes` as seen from `view` into rgb (width * height * 3 bytes, row
 * major from the top), which is first filled with the background colour.
 * Fails with DRAPE_EINVAL (a triangle index out of range, named) or
 * DRAPE_ENOMEM (the depth and normal buffers), leaving rgb untouched.
 */
drape_err drape_render_draw(const drape_render_view *view, const drape_render_mesh *meshes, uint32_t mesh_count,
			    uint8_t *rgb, drape_error *err);

/* Draws `text` (digits, space, '/', '-', '.'; anything else as a space) in
 * a 5x7 pixel font scaled by `scale`, top-left at (x, y), clipped to the
 * image. */
void drape_render_text(uint8_t *rgb, uint32_t width, uint32_t height, int x, int y, int scale, const char *text,
		       const uint8_t color[3]);

#endif
