/*
 * A simulation session and the session table. Loop thread only, except the
 * fields marked "worker" which the solving work item owns while busy.
 */
#ifndef DRAPE_SRV_SESSION_H
#define DRAPE_SRV_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "drape/sim.h"
#include "proto/proto.h"
#include "server/colview.h"
#include "server/frames.h"
#include "server/tear.h"

struct srv_server;
typedef struct srv_ckpt_snap srv_ckpt_snap; /* checkpoint.c */

/* What the daemon keeps of each collider to check ops on it. */
typedef struct srv_collider_info {
	drape_shape shape;
	uint32_t vertex_count;   /* mesh colliders */
	uint32_t triangle_count; /* mesh colliders */
	uint32_t frames;         /* animation frames held; 0 = not deforming */
} srv_collider_info;

typedef struct srv_session {
	uint32_t id;
	char *name; /* NULL if none */
	uint8_t token[PROTO_TOKEN_SIZE];
	uint64_t client; /* client id that created it (0 when it sent none) */
	drape_sim *sim;
	drape_sim_params params;
	drape_sim_topology topology;
	uint32_t vertices, triangles, colliders;
	/* Estimate, bytes: memory_base (srv_session_estimate: the cloth, its
	 * constraints and frame ring) plus what its deforming colliders hold
	 * (poses, tree, scratch: srv_session_collider_bytes). Loop-owned; a
	 * collider job leaves the new figure in work_memory. */
	size_t memory;
	size_t memory_base;

	proto_state state;
	uint32_t frames_done;
	uint32_t target;       /* frame index the run stops at; 0 = until cancelled */
	uint32_t last_target;  /* target of the last run, kept for session.resume */
	bool started;          /* has solved a frame in the current run */
	bool in_queue;         /* in the server's run queue */
	struct srv_session *qnext;
	bool busy;             /* a work item holds sim; the loop must not touch it */
	bool writing;          /* frame frames_done + 1 is in the output stage */
	bool pending;          /* (only while writing) frame frames_done + 2 is
				* solved and waits in the work fields for the
				* output stage; the session solves no further */
	bool ckpt_want;        /* a checkpoint was asked for while busy or writing */
	bool fail_pending;     /* the solve after the frame being written failed
				* (work_rc, work_err, fail_status); the run fails
				* when that frame has landed */
	int fail_status;       /* libuv status of the failed solve */
	struct srv_job *parked; /* a collider op waiting for the frame in flight */
	/* Per collider, in index order, what collider.frames needs to check
	 * an append before the solver sees it (colliders.c). Owned like the
	 * sim: touched only by whoever holds it (a collider job's worker, or
	 * the loop while reloading). */
	struct srv_collider_info *cinfo;
	uint32_t cinfo_count, cinfo_cap;
	/* The colliders as a viewer sees them (colview.h): the loop's own
	 * copy, answered by session.colliders while a frame solves. */
	srv_colview colview;
	uint64_t intersections; /* preflight count of the input mesh */
	uint32_t released;      /* vertices the self-collision releases to untangle them */
	/* The mesh as created, for session.topology (topology.c) and
	 * frames.get with "mesh" (the browser view draws the cloth with its
	 * triangles): the input pose, the triangles (triangles * 3, caller's
	 * order), and the uvs (NULL when it came without). */
	float *in_positions;
	uint32_t *in_triangles;
	float *in_uvs;
	/* The cloth objects as created (names owned), for session.topology;
	 * NULL (0) for one cloth. */
	proto_object *in_objects;
	uint32_t in_object_count;
	bool deleted;          /* deleted while busy; freed when the frame lands */
	bool end_pending;      /* canceled while busy: the end message goes out
				* once the frame or job in flight lands */
	uint64_t last_active_ms;
	uint64_t queued_ns; /* uv_hrtime when it last entered the run queue (metrics.h) */
	/* Orphans (srv_sessions_pipe_closed): the nng pipe of the connection
	 * its owner last used (the create, then any request with the token);
	 * 0 = none known (reloaded from the state dir). orphan_since_ms is
	 * when that connection closed, 0 while it is open. */
	uint32_t pipe;
	uint64_t orphan_since_ms;

	bool has_error;
	drape_error error;
	uint32_t error_frame;
	bool has_stats;
	drape_sim_stats stats;

	srv_frames frames;
	/* Tearing (params.tear_strain, tear.h): the vertices a frame buffer
	 * holds (vertices, or srv_tear_capacity for a tearing session), and
	 * the meshes of the generations after the created one. */
	uint32_t cap_vertices;
	srv_tear tear;
	char *dir;             /* sessions/<id> in the state dir; NULL = none */
	/* Durability (checkpoint.h): the first write of its files that failed
	 * since it was last wholly on disk, shown by session.status until
	 * everything is on disk again. */
	bool has_storage_error;
	drape_error storage_error;
	bool ckpt_failed;      /* the last checkpoint failed: state.bin is older */
	bool ops_lost;         /* a collider op is missing from ops.bin */

	/* Who owns it (issue 20): the user that created it ("" without
	 * --users-file), the peer it was created from, and when (Unix
	 * seconds); kept in sessions/<id>/owner (owner.h). */
	char owner[33];
	char host[64];
	/* ", user NAME, from HOST" (or "" without --users-file and host), the
	 * tail of the session's log lines, so an administrator can grep them
	 * by user or peer (srv_session_who). */
	char who[112];
	uint64_t created_unix;
	bool interrupted;      /* reloaded from a run the daemon's stop cut short (resume.h) */

	/* Worker: the frame being solved. */
	uv_work_t work;
	struct srv_server *server;
	float *work_positions;  /* cap_vertices * 3, handed to the output stage */
	/* The frame's vertex count and mesh generation, and when it tore the
	 * new mesh (triangles * 3, origin per vertex; owned, else NULL). */
	uint32_t work_n, work_topology;
	uint32_t *work_tris, *work_origin;
	drape_sim_stats work_stats;
	drape_err work_rc;
	drape_error work_err;
	uint32_t work_target, work_last_target; /* run fields for the worker's checkpoint */
	drape_sim_params work_params;
	drape_pool *work_pool;   /* the pool this frame may use (srv_sched_kick), or NULL */
	uint32_t work_colliders; /* collider count after a collider job */
	size_t work_memory;      /* memory estimate after a collider job */
	srv_ckpt_snap *work_ckpt; /* checkpoint due with this frame, or NULL */

	/* Output stage (worker while writing): frame frames_done + 1 is
	 * written to the cache, checkpointed when due and encoded, while the
	 * solve of the next frame goes on (scheduler.c). */
	uv_work_t out_work;
	float *out_positions;   /* cap_vertices * 3, swapped into the ring */
	uint32_t out_n, out_topology;
	uint32_t *out_tris, *out_origin; /* the new mesh when the frame tore, else NULL */
	void *work_record;      /* srv_frames_record_size bytes, the output stage's */
	drape_sim_stats out_stats;
	bool out_disk_ok;
	int out_disk_errno;     /* why the record was not written (0: no cache) */
	srv_ckpt_snap *out_ckpt; /* written after the frame's record, or NULL */
	bool out_ckpt_done;     /* out_ckpt was written (or its write failed) */
	drape_err out_ckpt_rc;  /* and how: out_ckpt_err says why it failed */
	drape_error out_ckpt_err;
	struct srv_stream_msg *out_msg; /* stream message, published by the loop */
} srv_session;

typedef struct srv_sessions {
	srv_session **items; /* not sorted; the table is small (max-sessions) */
	size_t count, cap;
	uint32_t next_id;    /* ids are never reused while the state dir lives */
	uint32_t saved_id;   /* server.bin's: every id below it may have been given out */
} srv_sessions;

void srv_sessions_init(srv_sessions *t);
/* Frees every session (their sims must not be busy). */
void srv_sessions_free(srv_sessions *t);
bool srv_sessions_add(srv_sessions *t, srv_session *s);
/* Finds a live (not deleted) session. */
srv_session *srv_sessions_find(const srv_sessions *t, uint32_t id);
/* Removes s from the table (does not free it). */
void srv_sessions_remove(srv_sessions *t, srv_session *s);
size_t srv_sessions_count_client(const srv_sessions *t, uint64_t client);
/* Sessions of user `owner`, and the vertices they hold together. */
size_t srv_sessions_count_owner(const srv_sessions *t, const char *owner, uint64_t *vertices);

/*
 * Builds a session from create-request inputs and merged parameters: the
 * solver, its directory under the state dir (when there is one) and its
 * frame store (keep_cache keeps an existing frames.bin, for a reload). On
 * failure returns NULL with err filled.
 */
srv_session *srv_session_build(struct srv_server *srv, uint32_t id, const proto_create_req *c,
			       const drape_sim_params *p, bool keep_cache, drape_error *err);

/* Frees a session's memory (sim, frames, buffers); the caller has removed
 * it from the table and it is not busy. Does not touch the state dir. */
void srv_session_free(srv_session *s);

/* Constant-time comparison of a request's token with the session's. */
/* Refreshes s->who from owner and host (after they are set or loaded). */
void srv_session_who(srv_session *s);

bool srv_session_token_ok(const srv_session *s, const uint8_t token[PROTO_TOKEN_SIZE]);

/*
 * Orphans. A session is orphaned when the connection its owner last used
 * has closed; one that has never run (idle, no frame solved) and stays
 * orphaned for --orphan-timeout is deleted: its creator went away before
 * running it, or never even got the reply with its token. Loop thread.
 */
/* The connection with nng pipe id `pipe` has closed: marks its sessions. */
void srv_sessions_pipe_closed(struct srv_server *srv, uint32_t pipe);
/* The owner spoke (a request with the token) on `pipe`: the session is
 * its again and no longer orphaned. */
void srv_session_adopt(struct srv_server *srv, srv_session *s, uint32_t pipe);
/* Deletes the never-run sessions orphaned for the timeout (cron). */
void srv_sessions_reclaim_orphans(struct srv_server *srv, uint64_t now_ms);

/* Rough memory a session of this size will hold, checked at admission. */
size_t srv_session_estimate(uint32_t vertices, uint32_t triangles, uint64_t frames_in_memory);

#endif
