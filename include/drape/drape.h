/*
 * libdrape — the client library of the drape cloth-simulation server.
 *
 * A program connects to a draped control URL (ipc://, tcp://), creates
 * simulation sessions from a mesh and parameters, runs them, and receives
 * the solved frames. Every call is a thin wrapper over one protocol request
 * (proto/PROTOCOL.md) except the frame receivers, which send frames.get
 * requests the daemon holds until the next frame is solved, so that a caller
 * sees every frame in order exactly once, as soon as it is solved.
 *
 * Shape (after nng): the connection is an opaque `drape_client *`; sessions
 * are small value handles (`drape_session`: the id and the owner token) that
 * the caller may copy, store and reuse in a later run of the program.
 * Definition structs are filled by a `..._default()` function first, so
 * fields added later keep old callers working.
 *
 * Errors (after libuv and nng): every function returns a drape_err (zero on
 * success, negative codes from drape/error.h) and, when given a non-NULL
 * `drape_error *`, fills it with the code and a sentence naming what failed.
 * An error the server reports is passed through with the server's code and
 * message. Output arguments are written only on success.
 *
 * Transport failures map to: connection refused or no such socket ->
 * DRAPE_EUNAVAILABLE; no reply within the request timeout ->
 * DRAPE_ETIMEDOUT; a reply that cannot be decoded -> DRAPE_EPROTO (or the
 * codec's ETRUNCATED / ETOOLARGE / ETOODEEP / EVERSION).
 *
 * Thread-safety: a drape_client may be used by one thread at a time (calls
 * on one client must not overlap); distinct clients are independent, so a
 * program that talks to the server from several threads opens one client
 * per thread, and may connect and close them on any threads at once. A
 * client has one connection to the server and no other. Functions that
 * take no client are thread-safe.
 *
 * The library links nng and msgpack-c; this header includes neither.
 */
#ifndef DRAPE_DRAPE_H
#define DRAPE_DRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is libdrape's API; the library is built with
 * -fvisibility=hidden, so only these declarations are exported. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Version of libdrape these headers describe. A binding that loads the
 * library at run time compares drape_version() (below) with what it was
 * written for: the major number changes when a struct or a function changes
 * incompatibly, the minor when something is added. */
#define DRAPE_VERSION_MAJOR 0
#define DRAPE_VERSION_MINOR 2
#define DRAPE_VERSION_PATCH 0
#define DRAPE_VERSION_STR_(x) #x
#define DRAPE_VERSION_STR(x) DRAPE_VERSION_STR_(x)
#define DRAPE_VERSION_STRING                                                         \
	DRAPE_VERSION_STR(DRAPE_VERSION_MAJOR)                                       \
	"." DRAPE_VERSION_STR(DRAPE_VERSION_MINOR) "." DRAPE_VERSION_STR(DRAPE_VERSION_PATCH)

/* Version of libdrape, for logs and the hello request's client name. */
#define DRAPE_CLIENT_VERSION DRAPE_VERSION_STRING

/* Default control URL of draped. */
#define DRAPE_DEFAULT_URL "tcp://127.0.0.1:7450"

/* Size of a session owner token in bytes (128-bit random) and of its hex
 * form including the NUL. */
#define DRAPE_TOKEN_SIZE 16
#define DRAPE_TOKEN_HEX_SIZE (2 * DRAPE_TOKEN_SIZE + 1)

/* Longest session name, bytes, excluding the NUL. */
#define DRAPE_NAME_MAX 128

/* timeout_ms value meaning "wait as long as it takes". */
#define DRAPE_WAIT_FOREVER (-1)

typedef struct drape_client drape_client;

/* ---- Version and layout --------------------------------------------------- */

/*
 * The version of the library actually loaded, "MAJOR.MINOR.PATCH" (static
 * text; the headers' DRAPE_VERSION_STRING is what a program was compiled
 * against). Thread-safe.
 */
const char *drape_version(void);

/*
 * sizeof of the public struct whose C name is `name` ("drape_client_opts",
 * "drape_status", ... every struct with a body in the public headers) as the
 * library was compiled, or 0 for a name it does not know (and for NULL). A
 * binding that declares the structs itself (ctypes, cffi's ABI mode)
 * compares each with its own size before its first call, so a layout that
 * drifted fails loudly instead of corrupting memory. Thread-safe.
 */
size_t drape_abi_struct_size(const char *name);

/* ---- Connecting ----------------------------------------------------------- */

typedef struct drape_client_opts {
	/* Longest wait for one reply, milliseconds; default 10000. A request
	 * that gets no reply in time fails with DRAPE_ETIMEDOUT. */
	int32_t request_timeout_ms;
	/* How often drape_next_frame asks the server when it polls (use_stream
	 * false, or a server that does not hold frames.get), and how long it
	 * pauses when the server holds as many requests as it may; default
	 * 200. Lower is more responsive, higher sends fewer requests. */
	int32_t poll_interval_ms;
	/* The server's auth token (draped --auth-token-file), sent with every
	 * request; NULL when the server needs none. Copied by drape_connect. */
	const char *auth_token;
	/* Free text identifying the program in the server's logs; NULL gives
	 * "libdrape " DRAPE_VERSION_STRING. Copied by drape_connect. */
	const char *client_name;
	/* Largest reply or stream message accepted, bytes; default 256 MiB. */
	uint64_t max_message;
	/* Receive each frame as soon as it is solved (default true):
	 * drape_next_frame sends frames.get requests the server holds until
	 * the next frame exists. When false it polls instead, every
	 * poll_interval_ms. (The name is from when frames came on a PUB
	 * stream; libdrape no longer uses one.) */
	bool use_stream;
	/* TLS, used when the URL is tls+tcp:// (or wss://) and ignored for
	 * other URLs; each is a file name that drape_connect reads (the names
	 * are not kept). tls_ca_file holds the PEM CA certificate(s) the
	 * server's certificate must be signed by (for a self-signed server,
	 * its own certificate); there is no system store, so a TLS connection
	 * without it fails. */
	const char *tls_ca_file;
	/* Name the server's certificate must carry (subjectAltName DNS entry
	 * or common name); NULL = the host part of the URL. When that host is
	 * an IP address and no name is given here, no name is checked, only
	 * that tls_ca_file signed the certificate (nng's TLS engine cannot
	 * match IP address entries), so use a CA that signs only your
	 * servers, or a DNS name. */
	const char *tls_server_name;
	/* Client certificate and its PEM private key (not encrypted), for a
	 * server started with --tls-ca; both or neither. */
	const char *tls_cert_file;
	const char *tls_key_file;
	/* Longest wait for a request that builds something on the server
	 * (session.create, collider.add and collider.update, which voxelise a
	 * mesh, preflight, session.resume), milliseconds; default 300000. A
	 * million-vertex mesh takes far longer to create than a status takes
	 * to answer, so these get their own bound. */
	int32_t build_timeout_ms;
	/* How long drape_next_frame (and drape_frames_each) keep following a
	 * session while the server does not answer, as across a daemon
	 * restart, milliseconds; default 120000 (0 in a zeroed struct gives
	 * the default), negative = give up at the first failure. Meanwhile
	 * the client reconnects with back-off (50 ms growing to 1 s), says
	 * hello again once the server is back, and continues from the frame
	 * after the last one it returned; frames solved meanwhile are fetched
	 * from the server's retained frames, so none is lost. */
	int32_t reconnect_timeout_ms;
} drape_client_opts;

/* Fills *opts with the defaults above. Thread-safe. */
void drape_client_opts_default(drape_client_opts *opts);

/*
 * Connects to the control URL `url` (NULL or "": $DRAPE_SERVER when set,
 * else DRAPE_DEFAULT_URL) and says
 * hello, so a server that is down or speaks another protocol version is
 * reported here and not at the first real request. opts may be NULL for the
 * defaults. On success the caller owns *out and closes it with drape_close;
 * on failure *out is untouched and nothing stays allocated. A connection
 * refused (or an ipc path with no server) gives DRAPE_EUNAVAILABLE.
 * If the server restarts later, the client reconnects by itself.
 */
drape_err drape_connect(const char *url, const drape_client_opts *opts, drape_client **out,
			drape_error *err);

/*
 * A pool: `url` (or $DRAPE_SERVER) may list several control URLs separated
 * by commas. drape_connect then asks each for server.stats and connects to
 * the least-loaded box that answers (fewest queued + running sessions per
 * solver thread, then most free memory, then fewest sessions), so every
 * session this client creates lives there; a box that is down is skipped
 * with a line on stderr. DRAPE_EUNAVAILABLE when none answers, DRAPE_EINVAL
 * for a malformed URL in the list. drape_client_url says which box it is:
 * keep it with the session handle to reach the session again.
 */

/* The control URL the client is connected to (for a pool, the chosen box).
 * Owned by c, valid until drape_close(c). */
const char *drape_client_url(const drape_client *c);

/* Closes the client's control socket and frees the client and every frame
 * it still buffers. Sessions stay on the server. NULL is fine. Clients may
 * be closed on several threads at once. */
void drape_close(drape_client *c);

/* Server limits as announced by hello; 0 means "no limit" except for
 * max_message. */
typedef struct drape_server_limits {
	uint64_t max_message;
	uint64_t max_vertices;
	uint64_t max_triangles;
	uint64_t max_colliders;
	uint64_t max_voxels;
	uint64_t max_keyframes;
	uint64_t max_sessions;
	uint64_t max_sessions_per_client;
	uint64_t max_frames_retained;
	uint64_t max_frames_per_get;
	uint64_t max_session_memory;
	uint64_t idle_timeout_s;
	uint64_t max_memory;               /* the server's memory budget, bytes */
	uint64_t max_connections;          /* control connections at once */
	uint64_t max_connections_per_peer; /* from one IP address (tcp) or user id (ipc) */
	uint64_t max_anim_frames; /* animation frames per deforming collider */
	uint64_t max_anim_bytes;  /* their bytes (frames * vertices * 12) per collider */
} drape_server_limits;

/* What the server said at hello. */
typedef struct drape_server_info {
	uint32_t version;              /* the server's protocol version */
	char server[256];              /* build string, e.g. "draped 0.1.0 (avx2)" */
	char stream_url[1024];         /* a --stream PUB URL the server announced, for
					* raw subscribers ("" if none; libdrape does not use it) */
	bool auth_required;
	drape_server_limits limits;
} drape_server_info;

/* Copies the hello reply received by drape_connect into *out. No request is
 * sent. Same thread rule as every client call. */
void drape_server_info_get(const drape_client *c, drape_server_info *out);

/* Sends hello again (a liveness check) and refreshes what
 * drape_server_info_get returns. */
drape_err drape_ping(drape_client *c, drape_error *err);

/* ---- Sessions --------------------------------------------------------------- */

/*
 * A session handle: its id and the owner token session.create returned.
 * drape_session_status needs only the id; reading frames and every request
 * that changes the session need the token, which the server checks
 * (DRAPE_EPERM). A token of all zero bytes means "not known" and is not
 * sent. A handle is
 * plain data: save it (drape_token_format) and a later run of the program
 * can reattach to the session.
 */
typedef struct drape_session {
	uint32_t id;
	uint8_t token[DRAPE_TOKEN_SIZE];
} drape_session;

/* Writes the token as 32 lowercase hex digits and a NUL. Thread-safe. */
void drape_token_format(const uint8_t token[DRAPE_TOKEN_SIZE], char out[DRAPE_TOKEN_HEX_SIZE]);
/* Parses 32 hex digits (either case; nothing else) into token. Returns
 * DRAPE_EINVAL and leaves token untouched otherwise. Thread-safe. */
drape_err drape_token_parse(const char *hex, uint8_t token[DRAPE_TOKEN_SIZE]);

/*
 * Parameters travel field by field: a field holding the "unset" marker
 * (NaN for floats, INT32_MIN for integers, all three NaN for vectors) is not
 * sent, and the server uses its default (for session.create) or keeps the
 * session's value (for session.update). drape_params_unset marks every field
 * unset; drape_sim_params_default (sim.h, in the solver library) sets every
 * field, and such a struct is sent whole. Thread-safe.
 */
void drape_params_unset(drape_sim_params *p);

/* What session.create reads. The arrays are read during the call only. */
typedef struct drape_session_desc {
	const float *positions;    /* vertex_count * 3 floats */
	uint32_t vertex_count;
	const uint32_t *triangles; /* triangle_count * 3 indices */
	uint32_t triangle_count;
	const float *inv_mass;     /* optional, vertex_count floats >= 0; NULL = from density */
	const uint32_t *pins;      /* optional pinned vertex indices */
	uint32_t pin_count;
	drape_sim_params params;   /* unset fields take the server's defaults */
	const char *name;          /* optional, <= DRAPE_NAME_MAX bytes */
	/* optional, vertex_count * 2 finite floats: per-vertex texture
	 * coordinates whose u and v give the warp and weft directions of an
	 * anisotropic material (drape_sim_desc.uvs); NULL = none */
	const float *uvs;
	/* optional rest shape, vertex_count * 3 floats (drape_sim_desc.
	 * rest_positions); NULL = the start shape is the rest */
	const float *rest_positions;
	/* optional stitches (drape_stitch), with their stiffness in N/m (0:
	 * rigid, the default) and the speed in m/s at which a gap closes
	 * (default 0.5); see drape_sim_desc */
	const drape_stitch *stitches;
	uint32_t stitch_count;
	float stitch_k;
	float sew_speed;
	/* optional, pin_count floats >= 0: each pin's stiffness in N/m, 0 a
	 * hard pin (drape_sim_desc.pin_stiffness); NULL = all hard */
	const float *pin_stiffness;
	/* optional, vertex_count floats > 0: each vertex's rest scale
	 * (drape_sim_desc.rest_scale); NULL = 1 everywhere */
	const float *rest_scale;
	/* optional: drape_sim_desc's stiffness_scale (vertex_count * 3
	 * floats, model xpbd), vertex_thickness and vertex_friction
	 * (vertex_count floats each); NULL = none */
	const float *stiffness_scale;
	const float *vertex_thickness;
	const float *vertex_friction;
	/* optional cloth objects (several cloths in one session): consecutive
	 * vertex ranges covering the mesh, each named (unique, <=
	 * DRAPE_NAME_MAX bytes) so that a client can write each to its own
	 * cache; see drape_sim_object for the layers. NULL = one cloth */
	const struct drape_object_desc *objects;
	uint32_t object_count;
} drape_session_desc;

/* One cloth object of drape_session_desc.objects. */
typedef struct drape_object_desc {
	const char *name;
	drape_sim_object range;
} drape_object_desc;

/* Zeroes *d, marks every parameter unset (drape_params_unset) and sets
 * the stitch defaults (rigid, sewn at 0.5 m/s). */
void drape_session_desc_default(drape_session_desc *d);

/* What session.create reports besides the handle. */
typedef struct drape_create_info {
	drape_sim_topology topology;
	uint64_t intersections; /* intersecting triangle pairs found at creation */
} drape_create_info;

/*
 * Creates a session. On success *out is the new handle (with its owner
 * token) and *info, when not NULL, the server's topology report. The server
 * validates everything; its message names the field at fault.
 */
drape_err drape_session_create(drape_client *c, const drape_session_desc *d, drape_session *out,
			       drape_create_info *info, drape_error *err);

/* Session states, as the server reports them. */
typedef enum drape_state {
	DRAPE_STATE_IDLE = 0, /* created or updated, not running */
	DRAPE_STATE_QUEUED,   /* runnable, waiting for a worker */
	DRAPE_STATE_RUNNING,
	DRAPE_STATE_DONE,     /* the requested frames are solved */
	DRAPE_STATE_CANCELED,
	DRAPE_STATE_FAILED    /* see drape_status.error */
} drape_state;

/* "idle", "queued", ...; "unknown" out of range. Thread-safe. */
const char *drape_state_name(drape_state s);

/* What session.run and session.resume started. */
typedef struct drape_run_info {
	drape_state state;       /* queued or running */
	uint32_t frames_done;    /* frames solved before this run */
	uint32_t frames_target;  /* frame index the run stops at; 0 = until cancelled */
	uint32_t queue_position; /* 0 when running */
} drape_run_info;

/* Solves `frames` more frames (0 = until cancelled). info may be NULL. The
 * frames arrive through drape_next_frame. Needs the owner token. */
drape_err drape_session_run(drape_client *c, drape_session s, uint32_t frames, drape_run_info *info,
			    drape_error *err);

/* Continues a run the daemon interrupted (a restart on the same state
 * directory). info may be NULL. Needs the owner token. */
drape_err drape_session_resume(drape_client *c, drape_session s, drape_run_info *info,
			       drape_error *err);

/* Stops a run; the server finishes the frame in flight. *state and
 * *frames_done (each may be NULL) receive what the reply says: the state
 * after the cancel took effect or was requested, and the frames solved.
 * Needs the owner token. */
drape_err drape_session_cancel(drape_client *c, drape_session s, drape_state *state,
			       uint32_t *frames_done, drape_error *err);

/* Changes parameters between runs: only the fields of *p that are set are
 * sent (start from drape_params_unset). Needs the owner token. */
drape_err drape_session_update(drape_client *c, drape_session s, const drape_sim_params *p,
			       drape_error *err);

/* Deletes the session and its frames; this client's buffered frames of it
 * are dropped too. Needs the owner token. */
drape_err drape_session_delete(drape_client *c, drape_session s, drape_error *err);

typedef struct drape_status {
	drape_state state;
	char name[DRAPE_NAME_MAX + 1]; /* "" if none */
	uint32_t queue_position;       /* 1-based when queued, else 0 */
	uint32_t frames_done;          /* highest frame index solved, 0 = none */
	uint32_t frames_target;        /* 0 = until cancelled, or not running */
	uint32_t frames_first;         /* oldest frame still retrievable, 0 = none */
	uint32_t vertices, triangles, colliders;
	bool has_error;                /* the run failed: error and error_frame say why */
	drape_error error;
	uint32_t error_frame;
	bool has_stats;                /* stats of the last solved frame */
	drape_sim_stats stats;
	/* The server's state directory refused a write of this session's
	 * files (a full disk): storage_error (EIO) names the first such file
	 * and the reason. A restart of the server would lose what it names; it clears
	 * once everything is on disk again (see PROTOCOL.md, session.status). */
	bool has_storage_error;
	drape_error storage_error;
} drape_status;

/* Fills *out with the session's status. Needs only the id. */
drape_err drape_session_status(drape_client *c, drape_session s, drape_status *out, drape_error *err);

typedef struct drape_session_entry {
	uint32_t id;
	char name[DRAPE_NAME_MAX + 1];
	drape_state state;
	uint32_t frames_done;
	uint32_t vertices;
	/* Who and how much (empty / 0 from a server that does not say). */
	char owner[DRAPE_NAME_MAX + 1]; /* the user that created it (draped --users-file) */
	char host[DRAPE_NAME_MAX + 1];  /* the peer it was created from */
	uint64_t created;               /* Unix seconds */
	uint32_t frames_target;         /* the run's target, 0 = until canceled or none */
	uint64_t memory;                /* bytes it holds in memory */
	uint64_t disk;                  /* bytes of its retained frames on disk */
} drape_session_entry;

/* Lists the server's sessions. On success the caller owns *out (count
 * entries; NULL when count is 0) and frees it with free(). */
drape_err drape_session_list(drape_client *c, drape_session_entry **out, uint32_t *count,
			     drape_error *err);
/* As drape_session_list; with all true, every user's sessions, which only
 * an admin of a draped with --users-file may ask for (DRAPE_EPERM
 * otherwise). Without all, a user sees only their own sessions. */
drape_err drape_session_list_all(drape_client *c, bool all, drape_session_entry **out, uint32_t *count,
				 drape_error *err);

typedef struct drape_server_stats {
	uint64_t sessions, queued, running;
	uint64_t memory;        /* bytes held by sessions */
	uint64_t frames_solved;
	uint64_t frames_served; /* published plus fetched */
	uint64_t requests;
	uint64_t clients;
	uint32_t threads;
	double uptime_s;
} drape_server_stats;

drape_err drape_server_stats_get(drape_client *c, drape_server_stats *out, drape_error *err);

/* ---- Colliders and pins (need the owner token) ---------------------------- */

/*
 * Marks the optional response fields of a collider (friction,
 * static_friction, restitution, thickness, voxel_size) unset (NaN) so the
 * server uses its defaults, and zeroes the rest. A desc filled by
 * drape_collider_desc_default (sim.h) is sent whole instead. desc.sdf is not
 * sent (a field cannot cross the wire; send the mesh). Thread-safe.
 */
void drape_collider_desc_unset(drape_collider_desc *d);

/*
 * Adds a collider; *index (may be NULL) is its index in the session.
 *
 * A deforming mesh (d->frames, frame_count, frame_start; see sim.h) is sent
 * whole when it fits the server's max_message (from hello), else as a
 * collider.add carrying the first poses that fit, followed by collider.frames
 * requests of as many poses as fit each, in order, so an animation of any
 * length within the server's max_anim_frames and max_anim_bytes goes through
 * (a 100-frame animation of a 14k-vertex body is 16 MB). Those two limits are
 * checked here before anything is sent (DRAPE_ELIMIT). If a later part is
 * refused, the collider is removed again so the session is as it was, and
 * the error names the part ("collider.frames (frames 41 to 60 of 96): ...").
 * The caller's arrays are only read, never kept.
 */
drape_err drape_collider_add(drape_client *c, drape_session s, const drape_collider_desc *d,
			     uint32_t *index, drape_error *err);
/*
 * Appends `count` poses of `vertex_count` vertices each (count *
 * vertex_count * 3 floats) to mesh collider `index`, which then deforms
 * (sim.h, drape_sim_append_collider_frames). Split into as many
 * collider.frames requests as max_message needs; a part refused stops the
 * append there (the parts before it stay: *total, which may be NULL,
 * receives the poses the collider holds after the last part accepted).
 */
drape_err drape_collider_append_frames(drape_client *c, drape_session s, uint32_t index, const float *frames,
				       uint32_t count, uint32_t vertex_count, uint32_t *total, drape_error *err);
/* Replaces a collider's keyframes (count 0 = identity transform). */
drape_err drape_collider_transform(drape_client *c, drape_session s, uint32_t index,
				   const drape_keyframe *keys, uint32_t count, drape_error *err);
/* Replaces a mesh collider's vertex positions (same count). */
drape_err drape_collider_update(drape_client *c, drape_session s, uint32_t index,
				const float *vertices, uint32_t vertex_count, drape_error *err);
/* Removes a collider; later indices shift down by one. */
drape_err drape_collider_remove(drape_client *c, drape_session s, uint32_t index, drape_error *err);
/* Makes pinned vertices follow collider `collider`'s transform. */
drape_err drape_pins_attach(drape_client *c, drape_session s, const uint32_t *vertices,
			    uint32_t count, uint32_t collider, drape_error *err);

/*
 * Asks the server for the intersecting triangle pairs of a mesh (the
 * preflight op; drape_preflight in sim.h does the same in process). Fills
 * up to max_pairs pairs into `pairs` (may be NULL when max_pairs is 0) and
 * the total into *count; *pair_count (may be NULL) receives how many were
 * written.
 */
drape_err drape_server_preflight(drape_client *c, const float *positions, uint32_t vertex_count,
				 const uint32_t *triangles, uint32_t triangle_count,
				 drape_tri_pair *pairs, uint32_t max_pairs, uint32_t *pair_count,
				 uint64_t *count, drape_error *err);

/* ---- Frames --------------------------------------------------------------- */

/* One solved frame. positions (vertex_count * 3 floats, the order of the
 * session's mesh) is heap memory owned by whoever holds the struct, freed by
 * drape_frame_free. index is 1-based: frame i is the state after i steps.
 *
 * A tearing cloth (params.tear_strain) changes mesh between frames: its
 * vertex count grows (split vertices get the next indices; the others keep
 * theirs) and topology counts the changes (0 = the mesh as created). When
 * triangles is not NULL it is this frame's mesh (triangle_count * 3
 * indices, each < vertex_count; heap memory freed with the frame): a frame
 * carries it whenever its mesh may differ from the one of the frame
 * delivered before it (always on the first frame of a frames.get reply with
 * topology > 0). A frame with triangles NULL has the mesh of the frame
 * before it, or the session's created mesh when topology is 0. */
typedef struct drape_frame {
	uint32_t index;
	uint32_t vertex_count;
	float *positions;
	drape_sim_stats stats;
	uint32_t topology;
	uint32_t *triangles;
	uint32_t triangle_count;
} drape_frame;

/* Frees f->positions and f->triangles and zeroes *f. NULL and a zeroed
 * frame are fine. */
void drape_frame_free(drape_frame *f);

/*
 * Fetches retained frames first .. first+count-1 with frames.get. The server
 * may return fewer than asked (reply size, retention, not yet solved): the
 * frames returned are consecutive from `first`; ask again for the rest.
 * On success the caller owns *frames (*n of them, NULL when *n is 0) and
 * frees them with drape_frames_free; *frames_done (may be NULL) is the
 * highest frame solved at the time of the reply. Does not move the cursor of
 * drape_next_frame. Needs the owner token (DRAPE_EPERM without it).
 */
drape_err drape_frames_get(drape_client *c, drape_session s, uint32_t first, uint32_t count,
			   drape_frame **frames, uint32_t *n, uint32_t *frames_done, drape_error *err);

/* Frees an array from drape_frames_get (each frame and the array). */
void drape_frames_free(drape_frame *frames, uint32_t n);

/*
 * Sets the index of the next frame drape_next_frame returns for session s
 * (>= 1). By default a client starts at frame 1, the session's first; a
 * program that reattaches after receiving frames 1..k seeks to k + 1. Frames
 * this client buffered for s are dropped. Needs no request.
 */
drape_err drape_frames_seek(drape_client *c, drape_session s, uint32_t next, drape_error *err);

/*
 * Returns the next frame of session s in order, each exactly once, waiting
 * up to timeout_ms (DRAPE_WAIT_FOREVER = no limit). Needs the owner token.
 * Frames come with frames.get: the frames the server already holds from the
 * cursor on (a slow reader, a reconnect, a call made after the run started
 * get the backlog), else a request the server holds until the next frame is
 * solved, so nothing is lost and nothing is polled for.
 *
 * On success the caller owns *out (drape_frame_free). When every solved
 * frame has been returned and no run is in progress it returns:
 *   DRAPE_EDONE     the run finished (state done, or idle: nothing to run;
 *                   libdrape before 0.2 returned DRAPE_ECLOSED here);
 *   DRAPE_ECANCELED the run was cancelled;
 *   another code    the run failed: the server's code, and err's message
 *                   names the frame and the server's reason.
 * A run this client saw going that is then cancelled ends only once the
 * server says no frame is coming (the frame in flight at the cancel may land
 * after the status already says "canceled"); against a server that does not
 * hold frames.get, 2 s after the status said so.
 * DRAPE_ETIMEDOUT when timeout_ms passed without a frame (call again);
 * DRAPE_ERANGE when frames from the cursor on are no longer retained by the
 * server (the message says which): the cursor then moves to the oldest
 * retained frame, so the next call continues from there.
 * On any failure *out is untouched.
 */
drape_err drape_next_frame(drape_client *c, drape_session s, drape_frame *out, int32_t timeout_ms,
			   drape_error *err);

/*
 * Callback variant of drape_next_frame: calls fn for every frame in order
 * until the run ends, fn returns non-zero, or a call fails. The frame passed
 * to fn belongs to the library and is valid only during the call (copy what
 * you keep). timeout_ms bounds the wait for each frame. Returns what ended
 * the loop: the end code of drape_next_frame (DRAPE_EDONE for a finished
 * run), DRAPE_OK if fn stopped it, or the failure. fn is called on the
 * calling thread and must not use the same client.
 */
typedef int (*drape_frame_fn)(const drape_frame *frame, void *user);
drape_err drape_frames_each(drape_client *c, drape_session s, drape_frame_fn fn, void *user,
			    int32_t timeout_ms, drape_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
