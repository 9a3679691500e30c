/*
 * Crash recovery: each session's inputs and solver state in the state
 * directory, and their reload on start.
 *
 *   <state-dir>/server.bin               next session id (ids are never reused)
 *   <state-dir>/sessions/<id>/session.bin  id, owner token, client id and the
 *                                        original session.create request bytes
 *   <state-dir>/sessions/<id>/state.bin    parameters, run target, state, frame,
 *                                        positions and velocities
 *   <state-dir>/sessions/<id>/ops.bin      collider ops in order, appended as
 *                                        records {len, request bytes, FNV-1a 64}
 *   <state-dir>/sessions/<id>/frames.bin   frame cache (frames.h)
 *
 * Every file is written to a temporary name, fsync'ed, renamed over the old
 * one, and the directory fsync'ed, so a crash leaves the old or the new file
 * and never a mix; each ends with an FNV-1a 64 checksum of the rest, so a
 * torn or corrupted file is reported and skipped instead of loaded.
 *
 * state.bin is written every --checkpoint-every frames (by that frame's
 * output stage, right after its record in frames.bin), when a run ends, on
 * parameter updates, run and cancel (after the frames in flight), and on
 * shutdown. A reloaded session restores the checkpoint, then re-solves the
 * frames its cache holds beyond it (the solver is deterministic, so it ends
 * bit-identical to where the daemon stopped), and an interrupted run is
 * continued with session.resume.
 *
 * A write the state dir refuses (a full disk, an I/O error) is never
 * silent: session.create fails with EIO and leaves nothing behind; any later
 * failure is kept in the session's storage_error (session.status), logged
 * with the file and errno's text, and a run it happens in fails with EIO
 * (scheduler.c). storage_error clears once a checkpoint lands with every
 * retained frame and every collider op on disk.
 *
 * Loop thread only, except srv_ckpt_snapshot and srv_ckpt_write_snapshot
 * as marked. Files are host-endian: the state dir belongs to one host.
 */
#ifndef DRAPE_SRV_CHECKPOINT_H
#define DRAPE_SRV_CHECKPOINT_H

#include <stddef.h>

#include "server/session.h"

struct srv_server;

/* Creates <state-dir> and <state-dir>/sessions (0700); 0 or errno. */
int srv_ckpt_prepare(struct srv_server *srv);
/* Writes session.bin from the create request bytes and a first state.bin,
 * for a session nobody else sees yet (a create's worker calls it). On
 * failure returns EIO with err naming the file, the step and errno's text;
 * the caller fails the create and removes the directory. */
drape_err srv_ckpt_save_session(struct srv_server *srv, srv_session *s, const void *create, size_t len,
				drape_error *err);
/* Makes sure server.bin holds an id beyond every one given out, so that a
 * restart never reuses one (the loader also starts after the highest id on
 * disk). It reserves ids in blocks and is written only when the block is
 * used up. false with err filled when the state dir refuses it. Loop only. */
bool srv_ckpt_save_next_id(struct srv_server *srv, drape_error *err);
/* Writes state.bin now when the session is quiet; while its sim is held by
 * a worker or a frame's output is in flight it only sets s->ckpt_want, and
 * the scheduler writes it after the frames in flight (never ahead of the
 * frames on disk, never overtaken by an older checkpoint). Returns EIO (or
 * ENOMEM) when the write failed, with err (may be NULL) filled and the
 * failure recorded in the session (srv_ckpt_landed); OK when written or
 * deferred. */
drape_err srv_ckpt_save_state(struct srv_server *srv, srv_session *s, drape_error *err);
/* Records the outcome of a checkpoint of s written elsewhere (the output
 * stage): a failure sets storage_error and ckpt_failed, a success clears
 * them when nothing else of the session is missing from disk. */
void srv_ckpt_landed(srv_session *s, bool ok, const drape_error *e);
/* Records a failed write of s's files (e: EIO, naming the file) in its
 * storage_error, unless an earlier failure is still there, and logs it. */
void srv_ckpt_failed(srv_session *s, const drape_error *e);
/* A copy of the sim's state with the given run fields, taken by whoever
 * holds the sim (the solving worker, or the loop when the sim is idle), to
 * be written later by the frame's output stage after the frame's record, so
 * state.bin never claims a frame that is not on disk. NULL on out of
 * memory (logged; that checkpoint is skipped). */
srv_ckpt_snap *srv_ckpt_snapshot(const srv_session *s, uint32_t state, uint32_t target, uint32_t last_target,
				 const drape_sim_params *params);
void srv_ckpt_snap_free(srv_ckpt_snap *snap);
/* Writes a snapshot as state.bin (when the session has a directory) and
 * frees it; NULL is a no-op. Returns EIO with err filled when the write
 * failed (the caller records it on the loop, srv_ckpt_landed). Any thread,
 * one writer per session at a time: it touches only the snapshot and
 * immutable session fields. */
drape_err srv_ckpt_write_snapshot(const srv_session *s, srv_ckpt_snap *snap, drape_error *err);
/* Writes a torn mesh (generation `topology`, first solved at frame
 * `first_frame`, tear.h) as mesh_<topology>.bin, before any frame record
 * solved on it, so a reload can serve and resume it. Any thread, like
 * srv_ckpt_write_snapshot; OK without a directory. */
drape_err srv_ckpt_save_mesh(const srv_session *s, uint32_t topology, uint32_t first_frame,
			     uint32_t vertices, const uint32_t *tris, const uint32_t *origin,
			     drape_error *err);
drape_err srv_ckpt_save_params(struct srv_server *srv, srv_session *s, drape_error *err);
drape_err srv_ckpt_save_run(struct srv_server *srv, srv_session *s, drape_error *err);
/* Appends a successful collider op's request bytes to ops.bin (one
 * checksummed record each, fsync'ed) and checkpoints the state right after,
 * so on reload every op is applied, in order, before the checkpoint. The op
 * has taken effect already: a failed append marks the session ops_lost and
 * sets its storage_error (a restart would lose the op). */
void srv_ckpt_append_op(struct srv_server *srv, srv_session *s, const void *raw, size_t len);
/* Removes the session's directory. */
void srv_ckpt_remove_session(struct srv_server *srv, srv_session *s);
/* Loads every session of the state dir; bad ones are logged and skipped.
 * Returns the number loaded. */
size_t srv_ckpt_load_all(struct srv_server *srv);

#endif
