/*
 * Vertex animation readers of libdrape (internal header; the drape CLI and
 * the tests use it too, hence the drape_ prefix): point caches that carry a
 * deforming collider's vertex positions per frame, in the vertex order of
 * its rest mesh.
 *
 *   PC2  (Blender's Mesh Cache modifier, 3ds Max, Houdini): a 32-byte
 *        little-endian header - char[12] "POINTCACHE2\0", int32 version = 1,
 *        int32 points, float32 start frame, float32 sample rate (frames
 *        between samples), int32 samples - then samples x points x 3 float32.
 *        Sample j is at animation frame start + j * rate.
 *   MDD  (LightWave, Blender): big-endian - int32 frames, int32 points,
 *        frames x float32 times in seconds, then frames x points x 3 float32.
 *        Sample j is at time times[j].
 *   OBJ sequence: a printf-style pattern with one integer conversion
 *        ("body_%04d.obj"); the files that match, numbered consecutively,
 *        each with the same vertex count and faces. Sample j is at frame
 *        first + j.
 *
 * Everything is validated before it is used: the header, the file size
 * against the sizes the header claims (exactly; a truncated or padded file is
 * refused), the version, counts >= 1, every number finite, MDD times strictly
 * increasing. Errors name the file and the field ("walk.pc2: header.points:
 * 0, must be at least 1"). Every allocation is bounded by the file size (or,
 * for a sequence, by the files read) and by drape_anim_limits.
 */
#ifndef DRAPE_CLIENT_POINTCACHE_H
#define DRAPE_CLIENT_POINTCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"

#define DRAPE_PC2_HEADER_SIZE 32

typedef enum drape_anim_format {
	DRAPE_ANIM_PC2 = 1,
	DRAPE_ANIM_MDD = 2,
	DRAPE_ANIM_OBJSEQ = 3
} drape_anim_format;

typedef struct drape_anim_limits {
	uint32_t max_vertices; /* default 16,000,000 */
	uint32_t max_samples;  /* default 1,000,000 */
	uint64_t max_bytes;    /* positions held, bytes; default 16 GiB */
} drape_anim_limits;

void drape_anim_limits_default(drape_anim_limits *l);

typedef struct drape_anim {
	drape_anim_format format;
	float *positions;       /* sample_count * vertex_count * 3 floats */
	uint32_t vertex_count;
	uint32_t sample_count;
	/* PC2 and OBJ sequences: sample j is at animation frame start + j * rate
	 * (a sequence has rate 1). MDD: 0 and 0, see times. */
	float start, rate;
	/* MDD: sample j is at times[j] seconds; NULL for the others. */
	float *times;
} drape_anim;

/*
 * Readers. On success *out owns its arrays (drape_anim_free); on failure *out
 * is untouched, nothing is leaked, and err names the file and the field. Only
 * regular files are read. `limits` may be NULL for the defaults. The buffer
 * variants read `len` bytes in memory; `name` stands for the file name in
 * messages (NULL gives "<buffer>").
 */
drape_err drape_pc2_read_file(const char *path, const drape_anim_limits *limits, drape_anim *out,
			      drape_error *err);
drape_err drape_pc2_read_buffer(const void *data, size_t len, const char *name, const drape_anim_limits *limits,
				drape_anim *out, drape_error *err);
drape_err drape_mdd_read_file(const char *path, const drape_anim_limits *limits, drape_anim *out,
			      drape_error *err);
drape_err drape_mdd_read_buffer(const void *data, size_t len, const char *name, const drape_anim_limits *limits,
				drape_anim *out, drape_error *err);
/* `pattern` holds exactly one conversion %d, %Nd or %0Nd (and %% for a
 * percent sign); the folder part must not contain one. */
drape_err drape_objseq_read(const char *pattern, const drape_anim_limits *limits, drape_anim *out,
			    drape_error *err);
/* By name: a pattern with a '%' conversion is an OBJ sequence, else the
 * extension .pc2 or .mdd (any case); anything else is DRAPE_EINVAL. */
drape_err drape_anim_read_file(const char *path, const drape_anim_limits *limits, drape_anim *out,
			       drape_error *err);

void drape_anim_free(drape_anim *a);

/* The animation frame (in frames of the scene's `fps`) of sample j: start +
 * j * rate, or times[j] * fps for MDD. */
double drape_anim_sample_frame(const drape_anim *a, uint32_t j, double fps);

/*
 * Resamples the animation to one pose per whole simulation frame, which is
 * what the solver takes (drape_collider_desc.frames: pose i at sim frame
 * frame_start + i). Simulation frame k is at time k / fps, the sample frames
 * are drape_anim_sample_frame; every whole k >= 0 within [first sample
 * frame, last sample frame] gets a pose, linearly interpolated between the
 * two samples around it (a sample that falls on k is copied bit for bit, so
 * a PC2 with a whole start frame and rate 1 passes through unchanged).
 * On success *frames (the caller frees it with free()) holds *count poses
 * and *first is the sim frame of the first. An animation that ends before
 * frame 0 or holds no whole frame is DRAPE_EINVAL.
 */
drape_err drape_anim_resample(const drape_anim *a, double fps, const char *name, float **frames,
			      uint32_t *count, uint32_t *first, drape_error *err);

#endif
