/*
 * A session's retained frames: the newest few in a memory ring, every one in
 * an on-disk cache of fixed-size records (sessions/<id>/frames.bin; frame i
 * at offset (i - 1) * record size, since a session's vertex count never
 * changes), so frames.get serves any retained frame by index.
 *
 * Threads: srv_frames_write runs on the worker that solved the frame (it
 * writes only that frame's record, which no one reads until the loop has
 * stored the frame); everything else runs on the loop.
 *
 * Records are in host byte order: the cache is private to this daemon and
 * its host. Each ends with a checksum of the rest (XXH64 in version 2
 * records, FNV-1a 64 in version 1 ones, which are still read), so a record
 * torn by a crash is detected and never served.
 */
#ifndef DRAPE_SRV_FRAMES_H
#define DRAPE_SRV_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"

typedef struct srv_frame_slot {
	uint32_t index; /* 0 = empty */
	bool on_disk;   /* its record was written to the cache file */
	drape_sim_stats stats;
	float *positions; /* vertices * 3 (a buffer of the store's vertex_count * 3) */
	uint32_t vertices; /* this frame's vertex count (a torn mesh has more) */
	uint32_t topology; /* its mesh's generation (0 = as created) */
} srv_frame_slot;

typedef struct srv_frames {
	/* Vertices a record and a buffer hold: the mesh's, or for a tearing
	 * session the most its mesh can tear into (srv_tear_capacity). A
	 * frame's own count is in its record's head, which is followed by
	 * that many positions and the checksum, so a record of a smaller
	 * frame leaves a hole (no disk space) before the next. */
	uint32_t vertex_count;
	uint32_t cap;         /* ring slots */
	srv_frame_slot *ring; /* slot of frame i is ring[i % cap] */
	uint32_t newest;      /* highest frame stored, 0 = none */
	uint32_t ring_first;  /* oldest frame held in the ring (newest + 1 = none) */
	uint32_t retain;      /* frames retrievable, newest first; 0 = all */
	int fd;               /* frames.bin, -1 when the disk cache is unusable */
	int open_errno;       /* why fd is -1 when a path was given, else 0 */
	uint32_t disk_first;  /* every frame from disk_first to newest is on disk,
			       * except those whose write failed (in memory) */
	size_t record;        /* bytes per record */
	/* Frames whose record could not be written (a full disk) and that left
	 * the ring: kept in memory, ascending, until they leave the retained
	 * window or srv_frames_flush writes them, so a frame the daemon
	 * announced is never lost to a failed write. Only with a cache file. */
	srv_frame_slot *held;
	uint32_t held_count, held_cap;
} srv_frames;

/* Bytes of one record for vertex_count vertices. */
size_t srv_frames_record_size(uint32_t vertex_count);

/*
 * Prepares the store. path may be NULL (memory only). When keep is true an
 * existing cache file is kept (a reloaded session); its frames up to
 * `newest` are trusted only after srv_frames_verify. Returns ENOMEM when the
 * ring cannot be allocated; a cache file that cannot be opened is logged and
 * the store keeps working from memory.
 */
drape_err srv_frames_init(srv_frames *f, uint32_t vertex_count, uint32_t ring, uint32_t retain,
			  const char *path, bool keep, drape_error *err);
void srv_frames_free(srv_frames *f);

/* srv_frames_write, srv_frames_store and srv_frames_read for a frame of
 * `vertices` (<= vertex_count) vertices of mesh generation `topology`, a
 * torn mesh's (server/tear.h); the plain forms are for vertex_count and 0. */
bool srv_frames_write_mesh(const srv_frames *f, uint32_t index, const drape_sim_stats *stats,
			   const float *positions, uint32_t vertices, uint32_t topology, void *scratch);
void srv_frames_store_mesh(srv_frames *f, uint32_t index, const drape_sim_stats *stats,
			   float **positions, uint32_t vertices, uint32_t topology, bool disk_ok);
drape_err srv_frames_read_mesh(const srv_frames *f, uint32_t index, float *positions,
			       drape_sim_stats *stats, uint32_t *vertices, uint32_t *topology,
			       void *scratch, drape_error *err);

/* Worker side: writes frame `index`'s record from positions and stats,
 * using scratch (srv_frames_record_size bytes). Returns false on an I/O
 * error with errno set (ENOSPC on a full disk), or without a cache file
 * with errno 0. A frame whose write failed stays in memory (srv_frames_store). */
bool srv_frames_write(const srv_frames *f, uint32_t index, const drape_sim_stats *stats,
		      const float *positions, void *scratch);

/*
 * Loop side: records frame `index` (must be newest + 1) as solved. The
 * positions buffer is swapped with the ring slot's old one, so *positions
 * comes back holding a buffer to reuse (or NULL) and nothing is copied.
 * disk_ok says whether srv_frames_write succeeded. A frame pushed out of
 * the ring whose record is not on disk moves to the held list instead of
 * being dropped (then *positions comes back NULL).
 */
void srv_frames_store(srv_frames *f, uint32_t index, const drape_sim_stats *stats, float **positions,
		      bool disk_ok);

/* Oldest frame index frames.get can still return (0 when none). */
uint32_t srv_frames_first(const srv_frames *f);

/*
 * Copies frame `index` (srv_frames_first <= index <= newest) into positions
 * (vertex_count * 3 floats) and *stats, from memory or from disk (record
 * scratch of srv_frames_record_size bytes). Returns ERANGE when the frame is
 * not retained, EIO when its record is unreadable or fails its checksum.
 */
drape_err srv_frames_read(const srv_frames *f, uint32_t index, float *positions, drape_sim_stats *stats,
			  void *scratch, drape_error *err);

/* Forgets every frame after `index` (used when a reloaded session restarts
 * from an older checkpoint than its cache). */
void srv_frames_truncate(srv_frames *f, uint32_t index);

/*
 * For a reloaded cache: finds the highest n <= limit such that records
 * 1..n are present with valid checksums, sets newest to n and returns it.
 */
uint32_t srv_frames_verify(srv_frames *f, uint32_t limit, void *scratch);

/* Retained frames whose record is not on disk (0 without a cache file,
 * where the ring is all there is by design). */
uint32_t srv_frames_unsaved(const srv_frames *f);

/*
 * Loop side: writes the records of the retained frames that are only in
 * memory (their write failed before), oldest first, using scratch. Returns
 * 0 when every one is on disk now, else the errno of the first failure
 * (*failed, if not NULL, is that frame). Frames written leave the held list.
 */
int srv_frames_flush(srv_frames *f, void *scratch, uint32_t *failed);

/* Bytes of memory held by the ring and the held frames. */
size_t srv_frames_memory(const srv_frames *f);

#endif
