/*
 * Whole-file reads for the client's file readers (OBJ meshes, scenes,
 * point caches), which must refuse the same things the same way: anything
 * but a regular file (a FIFO or a device named by a scene is refused, and
 * its open does not hang) and a file over the reader's size limit, both
 * before anything is allocated.
 */
#ifndef DRAPE_CLIENT_READFILE_H
#define DRAPE_CLIENT_READFILE_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"

/*
 * Reads the regular file at path, of at most max bytes, into a new buffer
 * (*data, the caller's to free) of *len bytes followed by a '\0' that *len
 * does not count. A file that shrinks while it is read gives what was
 * read. Errors name the path, and `kind` ("OBJ", "scene", ...) in the
 * size limit's; on failure *data and *len are untouched.
 */
drape_err readfile_whole(const char *path, uint64_t max, const char *kind, char **data, size_t *len,
			 drape_error *err);

#endif
