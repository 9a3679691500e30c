/*
 * drape — writers of the caches DCCs read (part of libdrape; no network).
 *
 * A cache writer takes a run's frames one at a time, in increasing frame
 * order, and writes them in one of four formats:
 *
 *   DRAPE_CACHE_OBJ  one Wavefront OBJ per frame, DIR/frame_NNNN.obj. With a
 *                    source OBJ (drape_cache_desc.obj_source) every
 *                    statement of the source but its `v` and `vn` lines is
 *                    kept: faces as they were (quads, n-gons), `vt` and the
 *                    faces' vt indices, groups, objects, materials,
 *                    smoothing groups; `v` lines carry the frame's
 *                    positions and `vn` one normal per vertex computed from
 *                    them (the faces' vn index is the vertex index). Without
 *                    one, the triangles as today.
 *   DRAPE_CACHE_PC2  one file for the whole run, DIR/NAME.pc2: 32-byte
 *                    little-endian header "POINTCACHE2\0", int32 version 1,
 *                    int32 points, float32 start frame, float32 sample rate
 *                    (1), int32 samples; then samples x points x float32
 *                    xyz. The sample count in the header is rewritten after
 *                    each frame, so a file cut short by a crash still says
 *                    how many whole frames it holds.
 *   DRAPE_CACHE_MDD  one file, DIR/NAME.mdd, big-endian: int32 frames, int32
 *                    points, frames x float32 time (seconds: frame / fps),
 *                    then frames x points x float32 xyz. The frame count
 *                    comes first, so it must be known when the file is
 *                    opened (drape_cache_desc.frame_count); a run that ends
 *                    early is compacted to the frames written on close.
 *   DRAPE_CACHE_GEO  Houdini's ASCII JSON geometry, one file per frame,
 *                    DIR/frame_NNNN.geo: point attributes P (positions) and
 *                    v (velocity, units per second: (p_k - p_k-1) * fps,
 *                    for motion blur) and the triangles as one Polygon_run.
 *
 * Positions are float32, three per vertex, in the caller's vertex order.
 * Binary formats are written from the frame's buffer without text. Files
 * written per frame go through a temporary file renamed over the name, so a
 * viewer watching the folder never reads half a frame.
 */
#ifndef DRAPE_CACHE_H
#define DRAPE_CACHE_H

#include <stdint.h>

#include "drape/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum drape_cache_format {
	DRAPE_CACHE_OBJ = 1,
	DRAPE_CACHE_PC2 = 2,
	DRAPE_CACHE_MDD = 3,
	DRAPE_CACHE_GEO = 4
} drape_cache_format;

/* Parses "obj", "pc2", "mdd" or "geo" (exact, lowercase). Unknown names are
 * DRAPE_EINVAL with a message listing the valid ones; *out is untouched. */
drape_err drape_cache_format_parse(const char *name, drape_cache_format *out, drape_error *err);
/* "obj", "pc2", "mdd", "geo"; NULL for an unknown value. */
const char *drape_cache_format_name(drape_cache_format f);

typedef struct drape_cache_desc {
	drape_cache_format format;
	const char *dir;          /* existing folder the files go to */
	const char *name;         /* PC2/MDD file name without extension; NULL = "cloth" */
	uint32_t vertex_count;    /* >= 1 */
	/* Triangles (0-based, triangle_count * 3) for OBJ without a source and
	 * GEO; NULL/0 writes points only. Borrowed until drape_cache_close. */
	const uint32_t *triangles;
	uint32_t triangle_count;
	/* OBJ: path of the OBJ the cloth was read from, whose vertices are the
	 * cloth's in order (it is read at open and must have vertex_count `v`
	 * lines); NULL = write the triangles. */
	const char *obj_source;
	float fps;                /* frames per second, > 0: MDD times, GEO velocities */
	uint32_t frame_count;     /* MDD: frames the run will write (>= 1); others: ignored */
	/* GEO: positions of the frame before the first one written (the rest
	 * pose for frame 1), so the first frame has a velocity; NULL = the
	 * first frame's v is zero. Copied at open. */
	const float *previous;
} drape_cache_desc;

/* Fills *d with: format OBJ, name NULL, fps 24, everything else 0/NULL. */
void drape_cache_desc_default(drape_cache_desc *d);

typedef struct drape_cache_writer drape_cache_writer;

/*
 * Opens a writer (and, for PC2/MDD, creates the file with its header). On
 * success the caller owns *out and closes it with drape_cache_close. On
 * failure *out is untouched, no file is left behind, and err names the
 * field or the file at fault.
 */
drape_err drape_cache_open(const drape_cache_desc *d, drape_cache_writer **out, drape_error *err);

/*
 * Writes frame `index` (1-based, as drape_frame.index) from positions
 * (vertex_count * 3 floats, borrowed for the call). Indices must increase by
 * one from the first frame written (the PC2 start frame); a gap, a repeat
 * or, for MDD, more frames than frame_count is DRAPE_EINVAL and writes
 * nothing. A non-finite position is DRAPE_ENONFINITE naming the vertex (PC2
 * and MDD check too, as a DCC would choke on it) and writes nothing.
 */
drape_err drape_cache_write_frame(drape_cache_writer *w, uint32_t index, const float *positions,
				  drape_error *err);

/* Frames written so far. */
uint32_t drape_cache_frames_written(const drape_cache_writer *w);

/*
 * Finishes the files (MDD: compacts to the frames written) and frees w
 * (NULL is fine). Returns the first error of finishing; w is freed either
 * way.
 */
drape_err drape_cache_close(drape_cache_writer *w, drape_error *err);

#ifdef __cplusplus
}
#endif

#endif
