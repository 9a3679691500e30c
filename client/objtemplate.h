/*
 * An OBJ file as a template for the frames of a cloth read from it (internal
 * to libdrape, used by the OBJ cache writer in cachewrite.c).
 *
 * The template keeps every statement of the source except its `v`, `vn`,
 * `l` and `p` lines: faces as they were written (quads and n-gons are not
 * triangulated), `vt` lines, groups, objects, materials, smoothing groups,
 * comments. Face corners are rewritten with absolute indices, the position
 * index as it was, the texture index as it was, and the normal index equal
 * to the position index. A frame is then `v` lines with the frame's
 * positions, `vn` lines with one normal per vertex computed from them (the
 * area-weighted Newell normals of the faces around the vertex), and the
 * template's text.
 */
#ifndef DRAPE_CLIENT_OBJTEMPLATE_H
#define DRAPE_CLIENT_OBJTEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"

typedef struct cache_obj_template cache_obj_template;

/* Reads path, which must hold exactly vertex_count `v` lines. On failure
 * *out is untouched and err names the file and line. */
drape_err cache_obj_template_load(const char *path, uint32_t vertex_count, cache_obj_template **out,
				  drape_error *err);

/* Formats one frame (vertex_count * 3 finite floats) into a new buffer the
 * caller frees with free(); *len is its length. */
drape_err cache_obj_template_format(const cache_obj_template *t, const float *positions, char **out,
				    size_t *len, drape_error *err);

void cache_obj_template_free(cache_obj_template *t);

#endif
