/*
 * drape wire protocol — the one codec that draped and libdrape both link.
 *
 * proto/PROTOCOL.md is the contract; this header is its C face. Everything
 * here is plain data and pure functions over byte buffers: no sockets, no
 * threads, no global state, so every function is safe to call from any thread
 * on distinct objects.
 *
 * Ownership, in one place (each function repeats its own rule):
 *
 *  - Encoders (proto_*_encode) read a struct whose pointers belong to the
 *    caller and write a fresh heap buffer into a proto_buf. On success the
 *    caller owns out->data and frees it with proto_buf_free(); on failure
 *    *out is untouched.
 *
 *  - Decoders (proto_*_decode) read a byte buffer that stays the caller's and
 *    may be freed as soon as the decoder returns: every string and bulk array
 *    is COPIED into memory owned by the decoded struct (bulk arrays arrive as
 *    unaligned little-endian bytes inside the message, so pointing into it
 *    would be undefined behaviour on strict-alignment targets and wrong on
 *    big-endian ones). On success the caller frees the struct's memory with
 *    proto_request_free / proto_reply_free / proto_stream_free; on failure
 *    *out is untouched, nothing stays allocated, and err names the field.
 *
 *  - A struct the caller filled by hand for encoding has mem == NULL; the
 *    matching *_free() on it is a harmless no-op, so one cleanup path serves
 *    both directions.
 *
 * Validation split: the codec checks what it can see in one message — the
 * msgpack structure (proto_check), types, sizes, counts, finite numbers,
 * indices against the counts in the same message, string lengths. Checks
 * that need server state or configuration are the daemon's: parameter ranges
 * (it calls drape_sim_params_validate, the solver's single source of truth),
 * configured limits (ELIMIT), indices against an existing session's vertex or
 * collider count, the owner token.
 */
#ifndef DRAPE_PROTO_H
#define DRAPE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Constants ----------------------------------------------------------- */

/* Protocol major version. A request whose "v" differs gets EVERSION. Fields
 * added within a major version are optional, and unknown keys are ignored, so
 * old peers keep working. */
#define PROTO_VERSION 1

/* Deepest container nesting accepted by proto_check (the top-level map is
 * depth 1). The deepest legitimate message is 4 (reply > frames > frame >
 * stats); 8 leaves room for additions without letting a hostile message
 * exhaust a recursive unpacker. */
#define PROTO_MAX_DEPTH 8

/* Most msgpack objects (every value, key and container counts one) in one
 * message; proto_check refuses more with ETOOLARGE. msgpack-c spends 24 to 48
 * bytes per object, so this bounds its memory per message near 48 MiB even
 * for a message of tiny integers, while bulk data travels as bin (one object
 * per array) and never comes close. */
#define PROTO_MAX_OBJECTS (1u << 20)

/* Most entries in any one map the decoders read; unknown keys are ignored,
 * so this bounds the lookup work a hostile map can cause. */
#define PROTO_MAX_KEYS 64

/* Default largest message when the caller passes max_len = 0. The daemon
 * configures its own (and sets it as nng's receive maximum). */
#define PROTO_DEFAULT_MAX_MESSAGE (64u * 1024u * 1024u)

/* Size of the session owner token, bytes (128-bit random). */
#define PROTO_TOKEN_SIZE 16
/* Longest server auth token accepted on the wire, bytes. */
#define PROTO_MAX_AUTH 256
/* Longest session name, bytes, excluding the terminating NUL. */
#define PROTO_MAX_NAME 128
/* Longest other short string (build string, client string, URL, shape). */
#define PROTO_MAX_STRING 1024
/* Most stream URLs a hello reply may announce. */
#define PROTO_MAX_STREAM_URLS 16
/* Most intersecting pairs a preflight request may ask for. */
#define PROTO_MAX_PREFLIGHT_PAIRS 1024
/* Pairs returned when a preflight request does not say. */
#define PROTO_DEFAULT_PREFLIGHT_PAIRS 16

/* Stream frames start with this ASCII topic, "s" and the session id as 8
 * lowercase hex digits, so an nng SUB socket subscribes to one session by
 * subscribing to proto_stream_topic()'s string. No NUL follows the topic. */
#define PROTO_TOPIC_LEN 9

/* ---- Operations and session states -------------------------------------- */

typedef enum proto_op {
	PROTO_OP_NONE = 0,
	PROTO_OP_HELLO,              /* "hello" */
	PROTO_OP_SESSION_CREATE,     /* "session.create" */
	PROTO_OP_SESSION_UPDATE,     /* "session.update" */
	PROTO_OP_SESSION_RUN,        /* "session.run" */
	PROTO_OP_SESSION_CANCEL,     /* "session.cancel" */
	PROTO_OP_SESSION_STATUS,     /* "session.status" */
	PROTO_OP_SESSION_LIST,       /* "session.list" */
	PROTO_OP_SESSION_DELETE,     /* "session.delete" */
	PROTO_OP_SESSION_RESUME,     /* "session.resume" */
	PROTO_OP_FRAMES_GET,         /* "frames.get" */
	PROTO_OP_SERVER_STATS,       /* "server.stats" */
	PROTO_OP_COLLIDER_ADD,       /* "collider.add" */
	PROTO_OP_COLLIDER_TRANSFORM, /* "collider.transform" */
	PROTO_OP_COLLIDER_UPDATE,    /* "collider.update" */
	PROTO_OP_COLLIDER_REMOVE,    /* "collider.remove" */
	PROTO_OP_PINS_ATTACH,        /* "pins.attach" */
	PROTO_OP_PREFLIGHT,          /* "preflight" */
	PROTO_OP_COLLIDER_FRAMES,    /* "collider.frames" */
	PROTO_OP_SESSION_TOPOLOGY,   /* "session.topology" */
	PROTO_OP_SESSION_COLLIDERS,  /* "session.colliders" */
	PROTO_OP_COUNT_
} proto_op;

/* Wire name of an op ("session.create"); NULL for PROTO_OP_NONE or unknown. */
const char *proto_op_name(proto_op op);
/* Op for a wire name; PROTO_OP_NONE if unknown. len bytes, no NUL needed. */
proto_op proto_op_from_name(const char *name, size_t len);
/* True for ops that act on one session and so require "session". */
bool proto_op_needs_session(proto_op op);
/* True for ops that require the session's owner "token"; the daemon
 * enforces it (EPERM): every op that changes a session, and frames.get,
 * since a session's frames are its owner's. Only session.status (state and
 * counters, no positions) is answered without it. */
bool proto_op_needs_token(proto_op op);

typedef enum proto_state {
	PROTO_STATE_IDLE = 0, /* "idle": created or updated, not running */
	PROTO_STATE_QUEUED,   /* "queued": runnable, waiting for a worker */
	PROTO_STATE_RUNNING,  /* "running" */
	PROTO_STATE_DONE,     /* "done": the requested frames are solved */
	PROTO_STATE_CANCELED, /* "canceled" */
	PROTO_STATE_FAILED,   /* "failed": see the status' error */
	PROTO_STATE_COUNT_
} proto_state;

/* Wire name of a state; NULL if out of range. */
const char *proto_state_name(proto_state s);
/* State for a wire name; returns false (and leaves *out) if unknown. */
bool proto_state_from_name(const char *name, size_t len, proto_state *out);

/* ---- Text (utf8.c) ------------------------------------------------------- */

/* Length (1 to 4) of the well-formed UTF-8 sequence at p (n bytes
 * available), 0 when p starts an ill-formed one or n is 0. */
size_t proto_utf8_seq(const unsigned char *p, size_t n);
/* Offset of the first byte of s (n bytes) that is not part of a
 * well-formed UTF-8 sequence; n when all of s is valid UTF-8. */
size_t proto_utf8_check(const char *s, size_t n);
/* Copies s (n bytes) into out (cap bytes, always NUL-terminated when cap >
 * 0), writing each byte of an ill-formed sequence as the text \xNN, so the
 * result is valid UTF-8. Stops before a sequence or escape that would not
 * fit, never in the middle of one. Returns the bytes written before the
 * NUL. */
size_t proto_utf8_escape(const char *s, size_t n, char *out, size_t cap);

/* ---- Buffers ------------------------------------------------------------- */

/* Bytes produced by an encoder. data is heap memory owned by whoever holds
 * the proto_buf after a successful encode. */
typedef struct proto_buf {
	uint8_t *data;
	size_t len;
} proto_buf;

/* Frees b->data and zeroes *b. Safe on a zeroed proto_buf and on NULL. */
void proto_buf_free(proto_buf *b);

/* Memory owned by a decoded message (opaque; every decoded pointer lives in
 * it). NULL in structs filled by hand. */
typedef struct proto_mem proto_mem;

/* ---- Pre-validation ------------------------------------------------------ */

/*
 * Walks the raw msgpack bytes of one message without recursion and without
 * allocating, before msgpack-c sees them (msgpack-c reserves memory for the
 * element count a container claims, so a five-byte message claiming 2^32
 * elements would ask for gigabytes). Checks, in order of discovery:
 *
 *   len > max_len (0 = PROTO_DEFAULT_MAX_MESSAGE), or more than
 *     PROTO_MAX_OBJECTS objects                                  -> ETOOLARGE
 *   an array/map claiming more elements than bytes remain
 *     (each element needs at least one byte), a str/bin/ext
 *     longer than the bytes remaining, or the buffer ending
 *     inside an object; an empty buffer                         -> ETRUNCATED
 *   containers nested deeper than PROTO_MAX_DEPTH                -> ETOODEEP
 *   the reserved type byte 0xc1, or bytes left over after
 *     the one top-level object                                    -> EPROTO
 *
 * Returns DRAPE_OK if the buffer is exactly one well-formed msgpack object.
 * The message names the byte offset. buf may be NULL only when len is 0.
 */
drape_err proto_check(const void *buf, size_t len, size_t max_len, drape_error *err);

/* ---- Shared value types --------------------------------------------------- */

/* Bits of proto_params.mask: which drape_sim_params fields a message carries.
 * The wire key is the C field name. */
enum {
	PROTO_PARAM_FPS = 1u << 0,
	PROTO_PARAM_SUBSTEPS = 1u << 1,
	PROTO_PARAM_ITERATIONS = 1u << 2,
	PROTO_PARAM_GRAVITY = 1u << 3,
	PROTO_PARAM_DAMPING = 1u << 4,
	PROTO_PARAM_WIND = 1u << 5,
	PROTO_PARAM_DRAG = 1u << 6,
	PROTO_PARAM_LIFT = 1u << 7,
	PROTO_PARAM_AIR_DENSITY = 1u << 8,
	PROTO_PARAM_DENSITY = 1u << 9,
	PROTO_PARAM_STRETCH = 1u << 10,
	PROTO_PARAM_SHEAR = 1u << 11,
	PROTO_PARAM_BEND = 1u << 12,
	PROTO_PARAM_THICKNESS = 1u << 13,
	PROTO_PARAM_LONG_RANGE = 1u << 14,
	PROTO_PARAM_SELF_COLLISION = 1u << 15,
	PROTO_PARAM_SELF_THICKNESS = 1u << 16,
	PROTO_PARAM_SELF_FRICTION = 1u << 17,
	/* The physical material (sim.h): model, then its constants. */
	PROTO_PARAM_MODEL = 1u << 18,
	PROTO_PARAM_STRETCH_K = 1u << 19,
	PROTO_PARAM_STRETCH_K_WEFT = 1u << 20,
	PROTO_PARAM_SHEAR_K = 1u << 21,
	PROTO_PARAM_BEND_K = 1u << 22,
	PROTO_PARAM_COMPRESS_K = 1u << 23,
	PROTO_PARAM_DAMPING_RATE = 1u << 24,
	PROTO_PARAM_TEAR_STRAIN = 1u << 25,
	PROTO_PARAM_SCHEDULE = 1u << 26,
	PROTO_PARAMS_ALL = (1u << 27) - 1u
};

/*
 * Parameters as they travel: values plus which of them were sent. The codec
 * cannot fill defaults itself (they live in the solver, which proto does not
 * link), so the receiver merges: for session.create the daemon starts from
 * drape_sim_params_default(), for session.update from the session's current
 * parameters, and calls proto_params_apply(). Fields whose bit is clear hold
 * unspecified values. The encoder writes exactly the fields in mask.
 */
typedef struct proto_params {
	drape_sim_params values;
	uint32_t mask;
} proto_params;

/* Copies into *dst the fields of src->values whose bit is set in src->mask. */
void proto_params_apply(drape_sim_params *dst, const proto_params *src);

/* A triangle mesh in host order. Decoded: vertex_count * 3 floats and
 * triangle_count * 3 indices, every float finite, every index < vertex_count,
 * vertex_count >= 1, triangle_count >= 1. */
typedef struct proto_mesh {
	const float *positions;
	uint32_t vertex_count;
	const uint32_t *triangles;
	uint32_t triangle_count;
} proto_mesh;

/* One solved frame. Decoded: vertex_count * 3 finite floats. index is
 * 1-based: frame i is the state after i steps, as in drape_sim_stats.frame.
 * A tearing cloth (params.tear_strain) changes mesh: topology is the mesh's
 * generation (0 = as created; absent on the wire when 0), and a frame
 * whose mesh is not the one the receiver holds from the frame before it
 * carries its triangles (triangle_count * 3 indices, each < vertex_count;
 * NULL otherwise). PROTOCOL.md, "Torn meshes". */
typedef struct proto_frame {
	uint32_t index;
	uint32_t vertex_count;
	const float *positions;
	drape_sim_stats stats;
	uint32_t topology;
	const uint32_t *triangles;
	uint32_t triangle_count;
} proto_frame;

/* Server limits as announced by hello. 0 means "no limit" for every field
 * except max_message, which is always set. */
typedef struct proto_limits {
	uint64_t max_message;             /* bytes, largest request accepted */
	uint64_t max_vertices;            /* per session */
	uint64_t max_triangles;           /* per session */
	uint64_t max_colliders;           /* per session */
	uint64_t max_voxels;              /* per collider field */
	uint64_t max_keyframes;           /* per collider */
	uint64_t max_sessions;            /* in all */
	uint64_t max_sessions_per_client; /* per auth identity / client id */
	uint64_t max_frames_retained;     /* per session, in memory and cache */
	uint64_t max_frames_per_get;      /* frames in one frames.get reply */
	uint64_t max_session_memory;      /* bytes, estimated at admission */
	uint64_t idle_timeout_s;          /* seconds before an idle session expires */
	uint64_t max_memory;              /* bytes, the server's memory budget (all sessions) */
	uint64_t max_connections;         /* control connections at once */
	uint64_t max_connections_per_peer; /* control connections from one IP address or uid */
	uint64_t max_anim_frames;         /* animation frames per deforming collider */
	uint64_t max_anim_bytes;          /* their bytes (frames * vertices * 12) per collider */
} proto_limits;

/* ---- Requests ------------------------------------------------------------ */

/* Bits of proto_collider_add.mask for the optional response fields; a clear
 * bit means "use the solver default" (the daemon starts from
 * drape_collider_desc_default and calls proto_collider_apply). */
enum {
	PROTO_COLLIDER_FRICTION = 1u << 0,
	PROTO_COLLIDER_STATIC_FRICTION = 1u << 1,
	PROTO_COLLIDER_RESTITUTION = 1u << 2,
	PROTO_COLLIDER_THICKNESS = 1u << 3,
	PROTO_COLLIDER_VOXEL_SIZE = 1u << 4,
	PROTO_COLLIDER_ALL = (1u << 5) - 1u
};

typedef struct proto_hello_req {
	/* Wire key "client_name" (the header's "client" is the numeric client
	 * id): optional free text for logs ("libdrape 0.1"); NULL if absent. */
	const char *client;
} proto_hello_req;

/* One cloth object of a session holding several ("objects" in
 * session.create): its name (a client writes its frames to a cache named
 * after it) and its vertex range and collision layers
 * (drape_sim_object). */
typedef struct proto_object {
	const char *name; /* 1 .. PROTO_MAX_NAME bytes of UTF-8 */
	drape_sim_object range;
} proto_object;

typedef struct proto_create_req {
	proto_mesh mesh;
	const float *inv_mass; /* optional, vertex_count finite floats >= 0; NULL if absent */
	const uint32_t *pins;  /* optional, pin_count indices < vertex_count; NULL if absent */
	uint32_t pin_count;
	/* optional "pin_stiffness": pin_count finite floats >= 0 (N/m), each
	 * pin's stiffness, 0 a hard pin (drape_sim_desc.pin_stiffness); only
	 * with "pins"; NULL if absent */
	const float *pin_stiffness;
	/* optional "uvs": vertex_count * 2 finite floats, each vertex's (u, v)
	 * texture coordinate, the warp and weft of an anisotropic material
	 * (drape_sim_desc.uvs); NULL if absent */
	const float *uvs;
	/* optional "rest_positions": vertex_count * 3 finite floats, the rest
	 * shape (drape_sim_desc.rest_positions); NULL if absent */
	const float *rest_positions;
	/* optional "rest_scale": vertex_count finite floats > 0, each vertex's
	 * rest scale (drape_sim_desc.rest_scale); NULL if absent */
	const float *rest_scale;
	/* optional "stiffness_scale" (vertex_count * 3 floats in (0, 1e6]:
	 * stretch, shear, bend), "vertex_thickness" (vertex_count floats, m,
	 * [0, 1]) and "vertex_friction" (vertex_count floats in [0, 10], or -1
	 * for the collider's): drape_sim_desc's fields of the same names;
	 * NULL if absent */
	const float *stiffness_scale;
	const float *vertex_thickness;
	const float *vertex_friction;
	/* optional "objects": object_count (1 .. DRAPE_SIM_MAX_OBJECTS)
	 * cloth objects, consecutive vertex ranges covering the mesh in
	 * order, names unique; NULL (0) if absent */
	const proto_object *objects;
	uint32_t object_count;
	/* optional "stitch_v" (stitch_count * 3 vertex indices a, b0, b1) and
	 * "stitch_t" (stitch_count floats): drape_sim_desc.stitches; both or
	 * neither. "stitch_k" (N/m, >= 0) and "sew_speed" (m/s, >= 0) are
	 * optional, has_* say whether they came. */
	const uint32_t *stitch_v;
	const float *stitch_t;
	uint32_t stitch_count;
	float stitch_k, sew_speed;
	bool has_stitch_k, has_sew_speed;
	proto_params params;   /* "params" map; absent map = mask 0 */
	const char *name;      /* optional, <= PROTO_MAX_NAME bytes, no NUL; NULL if absent */
} proto_create_req;

typedef struct proto_update_req {
	proto_params params; /* mask says which fields change */
} proto_update_req;

typedef struct proto_run_req {
	uint32_t frames; /* frames to solve from the current frame; 0 = until cancelled */
} proto_run_req;

typedef struct proto_frames_get_req {
	uint32_t first; /* first frame index wanted, >= 1 */
	uint32_t count; /* frames wanted, >= 1; the reply may hold fewer */
	/* Optional: how long the daemon may hold the request while frame
	 * `first` is not solved yet, milliseconds (0 = answer at once). The
	 * daemon answers as soon as that frame is stored or the run ends,
	 * and caps the wait at PROTO_MAX_FRAMES_WAIT_MS. */
	uint32_t wait_ms;
	/* Optional ("mesh": true): the reply also carries the session's
	 * triangles, so a viewer that has only the tokens (the browser view)
	 * can draw the cloth. */
	bool mesh;
} proto_frames_get_req;

/* session.colliders: every collider of the session placed at simulation
 * frame `frame` (0 = the input pose, at most the frames solved); with
 * "mesh", each mesh collider's own vertices and triangles too (a viewer
 * asks for them once, then per frame without). */
typedef struct proto_colliders_req {
	uint32_t frame;
	bool mesh;
} proto_colliders_req;

/* Longest wait a frames.get may ask for: well under nng's REQ resend time
 * (60 s), so a held request is never sent twice. */
#define PROTO_MAX_FRAMES_WAIT_MS 30000u

/*
 * collider.add. desc follows drape_collider_desc: the shape's fields, for a
 * mesh vertices/triangles (and voxel_size if its mask bit is set), the
 * response fields whose mask bits are set, and keyframes; a deforming mesh
 * also frames/frame_count/frame_start ("frames": bin<f32> holding
 * frame_count whole poses of vertex_count * 3 floats; "frame_start": num).
 * Decoded: desc.sdf is NULL and desc.max_voxels 0 (the daemon sets its
 * configured cap); every float finite; mesh indices < vertex_count; frames
 * only on a mesh, at least one, a whole number of poses. Encoded: the fields
 * the shape uses, the optional fields in mask, keyframes if keyframe_count >
 * 0, frames and frame_start if frame_count > 0.
 */
typedef struct proto_collider_add_req {
	drape_collider_desc desc;
	uint32_t mask;
} proto_collider_add_req;

/* Copies src->desc's shape, geometry, mesh and keyframe pointers and the
 * optional fields whose bits are set in src->mask into *dst. The pointers
 * still point into src's memory, which must outlive *dst's use. */
void proto_collider_apply(drape_collider_desc *dst, const proto_collider_add_req *src);

typedef struct proto_collider_transform_req {
	uint32_t index;
	const drape_keyframe *keyframes; /* keyframe_count <= DRAPE_MAX_KEYFRAMES; 0 = identity */
	uint32_t keyframe_count;
} proto_collider_transform_req;

typedef struct proto_collider_update_req {
	uint32_t index;
	const float *vertices; /* vertex_count * 3 finite floats */
	uint32_t vertex_count;
} proto_collider_update_req;

/* collider.frames: appends poses to a deforming mesh collider. The codec
 * checks a non-empty bin of finite float triples; the daemon checks that
 * they make whole poses of the collider's vertex count. */
typedef struct proto_collider_frames_req {
	uint32_t index;
	const float *frames; /* point_count * 3 floats */
	uint32_t point_count; /* poses * vertex_count, >= 1 */
} proto_collider_frames_req;

typedef struct proto_collider_remove_req {
	uint32_t index;
} proto_collider_remove_req;

typedef struct proto_pins_attach_req {
	const uint32_t *vertices; /* count >= 1 vertex indices (checked by the daemon) */
	uint32_t count;
	uint32_t collider; /* collider index */
} proto_pins_attach_req;

/* session.list: optional "all" (admins: every user's sessions). */
typedef struct proto_list_req {
	bool all;
} proto_list_req;

typedef struct proto_preflight_req {
	proto_mesh mesh;
	uint32_t max_pairs; /* pairs to return, <= PROTO_MAX_PREFLIGHT_PAIRS */
} proto_preflight_req;

/*
 * One request. The header fields are common; `u` holds the op's body
 * (session.cancel/status/list/delete/resume and server.stats have none).
 */
typedef struct proto_request {
	uint32_t v;       /* decoded: the version sent (== PROTO_VERSION); encode writes PROTO_VERSION */
	uint64_t id;      /* client-chosen request id, echoed in the reply */
	bool has_client;  /* optional "client": random 64-bit id of the client instance, */
	uint64_t client;  /* the key (with id) of the daemon's replay cache */
	proto_op op;
	const uint8_t *auth; /* optional server auth token; NULL if absent */
	size_t auth_len;     /* <= PROTO_MAX_AUTH */
	bool has_token;      /* session owner token */
	uint8_t token[PROTO_TOKEN_SIZE];
	bool has_session; /* required when proto_op_needs_session(op) */
	uint32_t session;
	union {
		proto_hello_req hello;
		proto_create_req create;
		proto_update_req update;
		proto_run_req run;
		proto_frames_get_req frames_get;
		proto_collider_add_req collider_add;
		proto_collider_transform_req collider_transform;
		proto_collider_update_req collider_update;
		proto_collider_remove_req collider_remove;
		proto_pins_attach_req pins_attach;
		proto_preflight_req preflight;
		proto_collider_frames_req collider_frames;
		proto_list_req list;
		proto_colliders_req colliders;
	} u;
	proto_mem *mem; /* owned memory of a decoded request; NULL when filled by hand */
} proto_request;

/* Zeroes *req and sets v = PROTO_VERSION and op; a starting point for
 * encoding (preflight.max_pairs gets PROTO_DEFAULT_PREFLIGHT_PAIRS). */
void proto_request_init(proto_request *req, proto_op op);

/*
 * What could be read of a request's header even when the request is bad, so
 * the daemon can echo id and op in its error reply and key its replay cache.
 */
typedef struct proto_header {
	bool has_v;
	uint32_t v;
	bool has_id;
	uint64_t id;
	bool has_client;
	uint64_t client;
	proto_op op; /* PROTO_OP_NONE if absent or unknown */
} proto_header;

/*
 * Reads only the header ("v", "id", "client", "op") of a request, after
 * proto_check; nothing is copied. Cheap enough to consult the replay cache
 * before a full decode. Fills *head as far as it could read, on success and
 * on failure (head may not be NULL); returns the proto_check error or EPROTO
 * if the message is not a map.
 */
drape_err proto_request_peek(const void *buf, size_t len, size_t max_len, proto_header *head,
			     drape_error *err);

/*
 * Decodes and validates one request (runs proto_check first with max_len;
 * 0 = default). On success fills *out (caller frees with
 * proto_request_free). On failure *out is untouched, nothing stays allocated
 * and err names the field ("session.create: triangles[5][1]: vertex index 9
 * >= vertex count 4"). head, if not NULL, is filled as by proto_request_peek
 * on success and on failure. buf stays the caller's.
 */
drape_err proto_request_decode(const void *buf, size_t len, size_t max_len, proto_request *out,
			       proto_header *head, drape_error *err);

/* Frees the memory of a decoded request and zeroes *req. No-op for NULL or
 * a request filled by hand (mem == NULL; the caller's arrays are not freed). */
void proto_request_free(proto_request *req);

/*
 * Encodes *req (its pointers are read, never kept). Checks only what would
 * make an undecodable message (NULL arrays with non-zero counts, an unknown
 * op, an over-long string); content is validated by the receiver. On success
 * the caller owns *out (proto_buf_free); on failure *out is untouched.
 */
drape_err proto_request_encode(const proto_request *req, proto_buf *out, drape_error *err);

/* ---- Replies ------------------------------------------------------------- */

typedef struct proto_hello_rep {
	uint32_t version;             /* the server's PROTO_VERSION */
	const char *server;           /* build string, e.g. "draped 0.1.0 (avx2)" */
	const char *const *stream_urls; /* PUB socket URL per listener, <= PROTO_MAX_STREAM_URLS */
	uint32_t stream_url_count;
	bool auth_required;           /* requests other than hello need "auth" */
	proto_limits limits;
} proto_hello_rep;

typedef struct proto_create_rep {
	uint32_t session;
	uint8_t token[PROTO_TOKEN_SIZE];
	drape_sim_topology topology;
	uint64_t intersections; /* preflight count of intersecting triangle pairs */
} proto_create_rep;

/* session.run and session.resume: what was started. */
typedef struct proto_run_rep {
	proto_state state;      /* queued or running */
	uint32_t frames_done;   /* frames solved before this run */
	uint32_t frames_target; /* frame index the run stops at; 0 = until cancelled */
	uint32_t queue_position; /* 0 when running, else 1-based place in the queue */
} proto_run_rep;

/* session.cancel: the state after the cancel took effect or was requested. */
typedef struct proto_cancel_rep {
	proto_state state;
	uint32_t frames_done;
} proto_cancel_rep;

typedef struct proto_status_rep {
	proto_state state;
	const char *name;        /* NULL if the session has none */
	uint32_t queue_position; /* 1-based when queued, else 0 */
	uint32_t frames_done;    /* highest frame index solved (0 = none) */
	uint32_t frames_target;  /* 0 = until cancelled or not running */
	uint32_t frames_first;   /* oldest frame still retrievable by frames.get (0 = none) */
	uint32_t vertices;
	uint32_t triangles;
	uint32_t colliders;
	bool has_error;          /* last error (state failed, or a failed resume) */
	drape_error error;
	uint32_t error_frame;    /* frame at which it happened, 0 if none */
	bool has_stats;          /* stats of the last solved frame */
	drape_sim_stats stats;
	bool has_storage_error;  /* a write of the session's files failed and */
	drape_error storage_error; /* is not made good yet: which and why */
} proto_status_rep;

/* session.topology: the mesh a session was created with, so a client that
 * did not create it (drape attach, drape export) can write whole files.
 * Decoded: vertex_count >= 1 positions (finite), triangle_count >= 1
 * triangles with every index < vertex_count, uvs NULL or vertex_count
 * finite pairs, fps finite and > 0. */
typedef struct proto_topology_rep {
	uint32_t vertex_count;
	const float *positions;    /* vertex_count * 3: the input pose (frame 0) */
	uint32_t triangle_count;
	const uint32_t *triangles; /* triangle_count * 3 */
	const float *uvs;          /* vertex_count * 2, or NULL when the session has none */
	float fps;                 /* the session's frames per second */
	/* A torn cloth's newest mesh (PROTOCOL.md, "Torn meshes"); generation
	 * 0 (absent) when it never tore, and then the rest is NULL / 0:
	 * current_vertex_count origins (each < vertex_count: the created
	 * vertex each came from) and triangle_count current triangles (each
	 * < current_vertex_count). */
	uint32_t generation;
	uint32_t current_vertex_count;
	const uint32_t *origin;
	const uint32_t *current_triangles;
	/* "objects": the session's cloth objects as created (names, ranges,
	 * layers); NULL (0) for a session of one cloth */
	const proto_object *objects;
	uint32_t object_count;
} proto_topology_rep;

typedef struct proto_session_info {
	uint32_t id;
	const char *name; /* NULL if none */
	proto_state state;
	uint32_t frames_done;
	uint32_t vertices;
	/* Optional (absent from older daemons: NULL / 0). */
	const char *owner;      /* the user that created it, under --users-file */
	const char *host;       /* the peer it was created from */
	uint64_t created;       /* Unix seconds */
	uint32_t frames_target; /* the run's target, 0 = until canceled or none */
	uint64_t memory;        /* bytes held in memory (estimate plus retained frames) */
	uint64_t disk;          /* bytes of retained frames on disk */
} proto_session_info;

typedef struct proto_list_rep {
	const proto_session_info *sessions;
	uint32_t count;
} proto_list_rep;

typedef struct proto_frames_get_rep {
	uint32_t session;
	const proto_frame *frames; /* consecutive indices from the request's first */
	uint32_t count;            /* may be fewer than asked (message size, limit, not yet solved) */
	uint32_t frames_done;      /* highest frame solved at the time of the reply */
	/* More frames may come without a new session.run: a run is queued or
	 * going, or its last frame or end is still in flight. has_live is
	 * false for a reply from a daemon that predates the field. */
	bool live;
	bool has_live;
	/* The session's triangles (triangle_count * 3 indices) when the
	 * request asked for "mesh"; NULL otherwise. Borrowed. */
	const uint32_t *triangles;
	uint32_t triangle_count;
} proto_frames_get_rep;

typedef struct proto_server_stats_rep {
	uint64_t sessions;
	uint64_t queued;
	uint64_t running;
	uint64_t memory;        /* bytes held by sessions */
	uint64_t frames_solved;
	uint64_t frames_served; /* published plus fetched */
	uint64_t requests;
	uint64_t clients;       /* distinct client ids seen in the replay cache */
	uint32_t threads;       /* solver workers */
	double uptime_s;
} proto_server_stats_rep;

typedef struct proto_collider_add_rep {
	uint32_t index;
} proto_collider_add_rep;

typedef struct proto_collider_frames_rep {
	uint32_t frame_count; /* "frames": poses the collider holds after the append */
} proto_collider_frames_rep;

/*
 * One collider of a session.colliders reply, placed at the asked frame:
 * world = rotation * p + translate for every point p of its shape, whose
 * fields are in the collider's own space as collider.add gave them (a
 * plane's point and normal, a sphere's or box's center, radius,
 * half_extents, a capsule's a and b). rotation (row-major) and translate
 * are its keyframed rigid motion evaluated at the frame as the solver
 * evaluates it (identity without keyframes). A mesh has vertex_count and
 * triangle_count; vertices (its own-space points, as last set by
 * collider.add or collider.update) and triangles only when the request
 * asked for "mesh". A deforming mesh (frame_count > 0 poses from
 * frame_start) also has positions: its pose at the frame, own space,
 * vertex_count * 3 floats. Decoded: shape known, every float finite,
 * array lengths as the counts say, triangle indices < vertex_count.
 */
typedef struct proto_collider_view {
	uint32_t index;
	drape_shape shape;
	float point[3], normal[3]; /* plane */
	float center[3];           /* sphere, box */
	float radius;              /* sphere, capsule */
	float half_extents[3];     /* box */
	float a[3], b[3];          /* capsule */
	float rotation[9], translate[3];
	uint32_t vertex_count, triangle_count; /* mesh */
	const float *vertices;     /* NULL unless asked for */
	const uint32_t *triangles; /* NULL unless asked for */
	uint32_t frame_count;      /* poses held; 0 = not deforming */
	float frame_start;
	const float *positions;    /* deforming: the pose at the frame; else NULL */
} proto_collider_view;

typedef struct proto_colliders_rep {
	uint32_t session;
	uint32_t frame;
	const proto_collider_view *colliders; /* in index order */
	uint32_t count;
} proto_colliders_rep;

typedef struct proto_preflight_rep {
	uint64_t count;               /* intersecting pairs in all */
	const drape_tri_pair *pairs;  /* the first pair_count of them */
	uint32_t pair_count;
} proto_preflight_rep;

/*
 * One reply. When ok is false, error holds the code (sent by its symbolic
 * name) and the message, and `u` is unused. session.update/delete,
 * collider.transform/update/remove and pins.attach have no result fields.
 */
typedef struct proto_reply {
	uint32_t v;
	bool has_id;   /* false only in an error reply to a request whose id was unreadable */
	uint64_t id;
	proto_op op;   /* echo of the request's op; PROTO_OP_NONE if unreadable */
	bool ok;
	drape_error error;
	union {
		proto_hello_rep hello;
		proto_create_rep create;
		proto_run_rep run;     /* session.run and session.resume */
		proto_cancel_rep cancel;
		proto_status_rep status;
		proto_list_rep list;
		proto_frames_get_rep frames_get;
		proto_server_stats_rep server_stats;
		proto_collider_add_rep collider_add;
		proto_preflight_rep preflight;
		proto_collider_frames_rep collider_frames;
		proto_topology_rep topology;
		proto_colliders_rep colliders;
	} u;
	proto_mem *mem;
} proto_reply;

/* Zeroes *rep and sets v, ok = true, op, and id (has_id = true). */
void proto_reply_init(proto_reply *rep, proto_op op, uint64_t id);

/*
 * Fills *rep as an error reply answering the request described by head
 * (may be NULL when nothing was readable): ok = false, error = *e. A
 * convenience for the daemon's every failure path.
 */
void proto_reply_init_error(proto_reply *rep, const proto_header *head, const drape_error *e);

/* Encodes *rep (pointers read, never kept). Ownership as proto_request_encode. */
drape_err proto_reply_encode(const proto_reply *rep, proto_buf *out, drape_error *err);

/*
 * Decodes a reply to a request of op `expect` (the client knows what it
 * asked; replies echo "op" and a mismatch is EPROTO). A well-formed error
 * reply decodes successfully with ok = false: the call's own return value
 * reports only whether the reply could be read. Ownership as
 * proto_request_decode; free with proto_reply_free.
 */
drape_err proto_reply_decode(const void *buf, size_t len, size_t max_len, proto_op expect,
			     proto_reply *out, drape_error *err);

/* Frees a decoded reply's memory and zeroes *rep. No-op for NULL or mem == NULL. */
void proto_reply_free(proto_reply *rep);

/* ---- Stream messages (PUB/SUB) -------------------------------------------- */

typedef enum proto_stream_kind {
	PROTO_STREAM_FRAME = 1, /* "frame": one solved frame */
	PROTO_STREAM_END = 2    /* "end": a run stopped (done, canceled or failed) */
} proto_stream_kind;

/*
 * One message on the stream socket: PROTO_TOPIC_LEN bytes of topic, then one
 * msgpack map. For FRAME, frame is set; for END, state, frames_done and (when
 * state is failed) error are set.
 */
typedef struct proto_stream_msg {
	proto_stream_kind kind;
	uint32_t session;
	proto_frame frame;
	proto_state state;
	uint32_t frames_done;
	bool has_error;
	drape_error error;
	proto_mem *mem;
} proto_stream_msg;

/* Writes the topic of a session's stream ("s0000002a" for 42) and a NUL into
 * out, which holds PROTO_TOPIC_LEN + 1 bytes. Subscribe with the first
 * PROTO_TOPIC_LEN bytes. */
void proto_stream_topic(uint32_t session, char out[PROTO_TOPIC_LEN + 1]);

/* Encodes topic + map. Ownership as proto_request_encode. */
drape_err proto_stream_encode(const proto_stream_msg *m, proto_buf *out, drape_error *err);

/* Decodes topic + map (the topic must match "session"). Ownership as
 * proto_request_decode; free with proto_stream_free. */
drape_err proto_stream_decode(const void *buf, size_t len, size_t max_len, proto_stream_msg *out,
			      drape_error *err);

/* Frees a decoded stream message's memory and zeroes *m. */
void proto_stream_free(proto_stream_msg *m);

/* An upper bound, in bytes, of one encoded frame of vertex_count vertices
 * (inside a frames.get reply or a stream message, topic included), so the
 * daemon can fit a frames.get reply under the client's message limit and
 * estimate retained-frame memory. */
size_t proto_frame_encoded_size(uint32_t vertex_count);

#ifdef __cplusplus
}
#endif
#endif
