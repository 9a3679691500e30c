/*
 * Wavefront OBJ reader and writer of libdrape (internal header; the drape CLI
 * and the tests use it too, hence the drape_obj_ prefix).
 *
 * Reading keeps what a cloth simulation needs: vertex positions, faces
 * triangulated, the `g` / `o` groups as named vertex sets, and texture
 * coordinates (`vt`) per vertex, which give a woven material its warp and
 * weft. Normals, smoothing groups, materials, polylines (`l`) and points
 * (`p`) are read over and dropped. Free-form geometry (`cstype`,
 * `curv`, `surf`, ...) and any other unknown statement is an error naming the
 * line, so a file that is not an OBJ at all is refused early instead of
 * giving an empty mesh.
 *
 * Face indices follow the OBJ specification: positive indices are 1-based
 * and refer to vertices defined above the face; negative indices count back
 * from the last vertex defined so far (-1 is the latest).
 *
 * Triangulation: triangles are kept; convex quads are split along the 0-2
 * diagonal (what most tools do), non-convex quads along the other one;
 * polygons of 5 to DRAPE_OBJ_EAR_CLIP_MAX vertices are ear-clipped in the
 * plane of their Newell normal, so a non-convex outline (an L or a U) gives
 * triangles inside the outline, where a fan would give overlapping ones.
 * Larger polygons, and polygons on which ear clipping finds no ear (self
 * intersecting or degenerate outlines), are fan-triangulated from their first
 * vertex. Every polygon of n vertices gives exactly n - 2 triangles.
 *
 * Every allocation of the reader is bounded by the input size and by
 * drape_obj_limits, so any input (a fuzzer's included) is either read or
 * refused with an error; nothing asserts on file content.
 */
#ifndef DRAPE_CLIENT_OBJ_H
#define DRAPE_CLIENT_OBJ_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"

/* Polygons with more vertices than this are fan-triangulated; ear clipping
 * is quadratic in the vertex count. */
#define DRAPE_OBJ_EAR_CLIP_MAX 256

/* Limits that refuse absurd files before they use absurd memory. */
typedef struct drape_obj_limits {
	uint32_t max_vertices;      /* default 16,000,000 */
	uint32_t max_triangles;     /* after triangulation; default 32,000,000 */
	uint32_t max_groups;        /* distinct g/o names; default 100,000 */
	uint32_t max_face_vertices; /* vertices of one polygon; default 65,536 */
	uint64_t max_bytes;         /* size of the file or buffer; default 4 GiB */
} drape_obj_limits;

/* Fills *l with the defaults above. */
void drape_obj_limits_default(drape_obj_limits *l);

/* A named vertex set: the vertices of the faces read while the group was
 * active, 0-based, sorted ascending, without duplicates. */
typedef struct drape_obj_group {
	char *name;
	uint32_t *vertices;
	uint32_t count;
} drape_obj_group;

/* A triangle mesh read from an OBJ file (or generated: the scene loader fills
 * the same struct for grid sheets). Every array is owned by the struct and
 * freed by drape_obj_free. */
typedef struct drape_obj_mesh {
	float *positions;       /* vertex_count * 3 floats */
	uint32_t vertex_count;
	uint32_t *triangles;    /* triangle_count * 3 0-based indices */
	uint32_t triangle_count;
	uint32_t face_count;    /* polygons in the file, before triangulation */
	drape_obj_group *groups;
	uint32_t group_count;   /* in order of first appearance */
	/* Per-vertex texture coordinates (vertex_count * 2 floats) when every
	 * face corner names a `vt`, else NULL. A vertex keeps the coordinate
	 * of its first face corner; uv_seam_vertices counts the vertices whose
	 * corners name different ones (UV seams), where the per-vertex value
	 * is right for the faces on one side only. Vertices in no face get
	 * (0, 0). */
	float *uvs;
	uint32_t uv_seam_vertices;
} drape_obj_mesh;

/*
 * Reads an OBJ file. `limits` may be NULL for the defaults. On success *out
 * (which the caller provides; its old content is ignored) owns the arrays and
 * is freed with drape_obj_free. On failure *out is untouched, nothing is
 * leaked, and err says why with the file name and line number, e.g.
 * "body.obj:1234: face index 9001 out of range (1..9000)". Only regular files
 * are read (a device or a pipe is refused, so a scene cannot make the reader
 * read /dev/zero forever). Thread-safe.
 */
drape_err drape_obj_read_file(const char *path, const drape_obj_limits *limits, drape_obj_mesh *out,
			      drape_error *err);

/*
 * Reads OBJ text from a buffer of `len` bytes (need not be NUL-terminated;
 * NUL bytes inside are an error). `name` is used in messages in place of a
 * file name (NULL gives "<buffer>"). Ownership as for drape_obj_read_file.
 */
drape_err drape_obj_read_buffer(const char *data, size_t len, const char *name,
				const drape_obj_limits *limits, drape_obj_mesh *out, drape_error *err);

/* Frees the arrays of *m and zeroes it; NULL and a zeroed struct are fine. */
void drape_obj_free(drape_obj_mesh *m);

/* Returns the group called `name`, or NULL. */
const drape_obj_group *drape_obj_find_group(const drape_obj_mesh *m, const char *name);

/*
 * Formats positions and triangles as OBJ text ("v x y z" lines, then
 * "f a b c" lines, 1-based) into a new buffer. Floats are written with 9
 * significant digits, which is enough for every float32 to read back bit for
 * bit (-0 is written as "-0"). Non-finite positions are refused with
 * DRAPE_ENONFINITE naming the vertex, and triangle indices >= vertex_count
 * with DRAPE_ERANGE, since either would give a file no reader accepts. On
 * success the caller owns *out (free with free()) and *out_len is its length
 * without the terminating NUL that follows it.
 */
drape_err drape_obj_format(const float *positions, uint32_t vertex_count, const uint32_t *triangles,
			   uint32_t triangle_count, char **out, size_t *out_len, drape_error *err);

/*
 * Writes the same text to `path`, through a temporary file in the same
 * folder renamed over `path` at the end, so a viewer watching the folder
 * never reads half a frame. On failure `path` is left as it was.
 */
drape_err drape_obj_write_file(const char *path, const float *positions, uint32_t vertex_count,
			       const uint32_t *triangles, uint32_t triangle_count, drape_error *err);

#endif
