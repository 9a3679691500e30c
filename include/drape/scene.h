/*
 * libdrape — scene files (client/SCENE.md) turned into sessions.
 *
 * drape_scene_load does what `drape run SCENE.json` does before it runs:
 * reads the scene and every mesh and animation it names, creates the
 * session with the scene's cloth, pins and parameters, adds its colliders
 * in file order (deforming ones whole, however long) and attaches the pins
 * that follow a collider. A plugin calls it, then drape_session_run with
 * info.frames, and reads the frames with drape_next_frame until
 * DRAPE_EDONE.
 *
 * Same rules as drape.h: returns a drape_err, fills a non-NULL drape_error
 * with a message naming the file and the JSON path (or the request) at
 * fault, writes output arguments only on success; same thread rule as every
 * client call.
 */
#ifndef DRAPE_SCENE_H
#define DRAPE_SCENE_H

#include <stdint.h>

#include "drape/drape.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* What drape_scene_load made, for the caller's run and its output. */
typedef struct drape_scene_info {
	uint32_t vertex_count;   /* the cloth's vertices (frames carry as many) */
	uint32_t triangle_count; /* the cloth's triangles */
	uint32_t frames;         /* the scene's "frames": pass to drape_session_run */
	uint32_t start_frame;    /* first frame the scene wants written (pre-roll before it); 1 if none */
	uint32_t collider_count; /* colliders added, indices 0 .. collider_count-1 */
	uint32_t pin_count;      /* pinned vertices */
	float fps;               /* the scene's frame rate */
	uint64_t intersections;  /* intersecting triangle pairs session.create found in the cloth */
} drape_scene_info;

/*
 * Reads the scene file `path` (relative mesh paths are resolved against its
 * folder) and builds it as a new session on c, named `name` (NULL = the
 * file's base name). On success *out is the session's handle with its
 * owner token and *info (may be NULL) what was built; nothing runs yet. On
 * failure *out and *info are untouched and the server holds nothing of it:
 * a scene that does not read is refused before any request (DRAPE_EPARSE,
 * DRAPE_EINVAL, ...: the message names the file and the key, e.g.
 * "scene.json: cloth.pins.indices[3]: 5000 is out of range"), and a session
 * whose collider or pins the server refuses is deleted again, the message
 * naming the part ("colliders[2]: ...").
 */
drape_err drape_scene_load(drape_client *c, const char *path, const char *name, drape_session *out,
			   drape_scene_info *info, drape_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
