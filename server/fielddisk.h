/*
 * Mesh collider fields kept on disk, STATE/fields/<key>.vdb, so that a
 * restarted daemon reuses the fields an earlier run built instead of
 * voxelising every body again (about a second of CPU for a MakeHuman body).
 * The memory cache (fieldcache.h) is asked first; on its miss this one; on
 * this one's miss the field is built and then stored here.
 *
 * A file is written to a temporary name, fsynced and renamed, so a reader
 * sees a whole file or none. A file that does not load (truncated, damaged,
 * another version: drape_sdf_deserialize refuses it) is logged, removed and
 * rebuilt. The folder is bounded by --max-field-disk bytes: after each store
 * the files least recently used (by mtime, which a load refreshes) are
 * removed until the total fits. Thread-safe: collider ops run on worker
 * threads; concurrent stores of one key each write their own temporary file
 * and the last rename wins with identical contents.
 */
#ifndef DRAPE_SRV_FIELDDISK_H
#define DRAPE_SRV_FIELDDISK_H

#include <stdbool.h>
#include <stdint.h>

#include "drape/sim.h"
#include "server/fieldcache.h"

/* Uses STATE/fields/ under state_dir with at most budget bytes of files
 * (0 = no disk cache: load finds nothing and store writes nothing). Called
 * once at start, before any collider op. */
void srv_fielddisk_configure(const char *state_dir, uint64_t budget);

/* The field stored under key, or NULL when there is none or it does not
 * load (then the file is removed and a warning names it). On success the
 * caller owns one reference and *ms is the time taken to read and parse. */
drape_sdf *srv_fielddisk_load(srv_field_key key, double *ms);

/* Stores sdf under key and evicts the least recently used files over the
 * budget. Failures (disk full, permissions) are logged and change nothing
 * else: the field keeps working from memory. Returns true if stored. */
bool srv_fielddisk_store(srv_field_key key, const drape_sdf *sdf);

/* The file name of key (without folder): 32 hex digits and ".vdb". */
void srv_fielddisk_name(srv_field_key key, char name[40]);

#endif
