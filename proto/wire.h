/*
 * Internal helpers of the codec: the decoded-memory arena, typed readers of
 * msgpack objects that name the field at fault, and packers for the value
 * types several messages share. Not installed; only the codec's own sources include it.
 */
#ifndef DRAPE_PROTO_WIRE_H
#define DRAPE_PROTO_WIRE_H

#include <msgpack.h>

#include "proto/proto.h"

/* ---- Arena of a decoded message ---- */

proto_mem *proto_mem_new(void);
/* Zeroed, max_align_t-aligned memory living as long as mem; NULL on failure. */
void *proto_mem_alloc(proto_mem *mem, size_t size);
void proto_mem_free(proto_mem *mem);

/* ---- Decoding ---- */

/*
 * State of one decode: where errors go, the prefix naming the message
 * ("session.create"), and the arena copies land in.
 */
typedef struct proto_wire_dec {
	drape_error *err;
	const char *what;
	proto_mem *mem;
} proto_wire_dec;

/* Runs proto_check and msgpack_unpack into zone; the root must be a map.
 * On failure the zone is left for the caller to destroy. */
drape_err proto_wire_unpack(const void *buf, size_t len, size_t max_len, msgpack_zone *zone,
		      msgpack_object *root, const char *what, drape_error *err);

/* Sets err to "<what>: <path>: <formatted text>" and returns code. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
drape_err proto_wire_fail(proto_wire_dec *d, drape_err code, const char *path, const char *fmt, ...);

/* Checks that o is a map of at most PROTO_MAX_KEYS entries whose keys are
 * distinct strings. */
drape_err proto_wire_map(proto_wire_dec *d, const msgpack_object *o, const char *path);
/* The value under key in a map checked by proto_wire_map; NULL if absent or nil
 * (nil means absent everywhere, so encoders may write nil for "none"). */
const msgpack_object *proto_wire_get(const msgpack_object *map, const char *key);
/* Like proto_wire_get but a missing key is an EPROTO error naming path. */
drape_err proto_wire_need(proto_wire_dec *d, const msgpack_object *map, const char *key, const char *path,
		    const msgpack_object **out);

drape_err proto_wire_u64(proto_wire_dec *d, const msgpack_object *o, const char *path, uint64_t *out);
drape_err proto_wire_u32(proto_wire_dec *d, const msgpack_object *o, const char *path, uint32_t *out);
drape_err proto_wire_i32(proto_wire_dec *d, const msgpack_object *o, const char *path, int32_t *out);
drape_err proto_wire_bool(proto_wire_dec *d, const msgpack_object *o, const char *path, bool *out);
drape_err proto_wire_f32(proto_wire_dec *d, const msgpack_object *o, const char *path, float *out);
drape_err proto_wire_f64(proto_wire_dec *d, const msgpack_object *o, const char *path, double *out);
/* An array of exactly n finite numbers. */
drape_err proto_wire_f32_array(proto_wire_dec *d, const msgpack_object *o, const char *path, float *out,
			 uint32_t n);
/* A str of at most max bytes without NUL, copied NUL-terminated into the arena. */
drape_err proto_wire_str(proto_wire_dec *d, const msgpack_object *o, const char *path, size_t max,
		   const char **out);
/* A str compared in place (no copy): points at the bytes and their length. */
drape_err proto_wire_str_ref(proto_wire_dec *d, const msgpack_object *o, const char *path, const char **p,
		       size_t *n);

/*
 * A field of a map by key (the key is also the path in errors). When the key
 * is absent (or nil): an EPROTO error if required, else DRAPE_OK with *out
 * untouched and *present (if not NULL) false.
 */
drape_err proto_wire_field_u32(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			 uint32_t *out, bool *present);
drape_err proto_wire_field_u64(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			 uint64_t *out, bool *present);
drape_err proto_wire_field_f32(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			 float *out, bool *present);
drape_err proto_wire_field_f64(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			 double *out, bool *present);
drape_err proto_wire_field_bool(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			  bool *out, bool *present);
drape_err proto_wire_field_vec3(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			  float out[3], bool *present);
drape_err proto_wire_field_str(proto_wire_dec *d, const msgpack_object *map, const char *key, bool required,
			 size_t max, const char **out);

/*
 * A bin of little-endian float32 forming tuples of `tuple` floats, copied
 * into the arena in host order. Errors: not a bin (EPROTO), length not a
 * multiple of 4 (EPROTO), float count not a multiple of tuple (EINVAL),
 * count != expect when expect is not UINT32_MAX (EINVAL), more than
 * UINT32_MAX tuples (EINVAL), a non-finite value (ENONFINITE, "path[i][j]").
 * *count receives the number of tuples.
 */
drape_err proto_wire_bin_f32(proto_wire_dec *d, const msgpack_object *o, const char *path, uint32_t tuple,
		       uint32_t expect, const float **out, uint32_t *count);
/* The same for uint32, each value < bound (ERANGE naming "what_bound"). */
drape_err proto_wire_bin_u32(proto_wire_dec *d, const msgpack_object *o, const char *path, uint32_t tuple,
		       uint64_t bound, const char *bound_name, const uint32_t **out,
		       uint32_t *count);

/* Shared value types. */
drape_err proto_wire_read_params(proto_wire_dec *d, const msgpack_object *o, const char *path,
			   proto_params *out);
drape_err proto_wire_read_stats(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  drape_sim_stats *out);
drape_err proto_wire_read_topology(proto_wire_dec *d, const msgpack_object *o, const char *path,
			     drape_sim_topology *out);
drape_err proto_wire_read_mesh(proto_wire_dec *d, const msgpack_object *map, proto_mesh *out);
/* "objects" (request.c): cloth objects over vertex_count vertices. */
drape_err proto_wire_read_objects(proto_wire_dec *d, const msgpack_object *v, uint32_t vertex_count,
				  const proto_object **out, uint32_t *count);
drape_err proto_wire_read_frame(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  proto_frame *out);
drape_err proto_wire_read_keyframes(proto_wire_dec *d, const msgpack_object *o, const char *path,
			      const drape_keyframe **out, uint32_t *count);
drape_err proto_wire_read_error(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  drape_error *out);
drape_err proto_wire_read_state(proto_wire_dec *d, const msgpack_object *o, const char *path,
			  proto_state *out);

/* ---- Encoding ---- */

/*
 * A packer writing into a msgpack_sbuffer that remembers the first failure
 * (a write that could not grow the buffer, or an argument the encoder
 * refused), so encoders pack straight through and check once at the end.
 */
typedef struct proto_wire_enc {
	msgpack_sbuffer sb;
	msgpack_packer pk;
	drape_err rc;
	drape_error *err;
	const char *what;
} proto_wire_enc;

void proto_wire_enc_init(proto_wire_enc *e, const char *what, drape_error *err);
/* Records the first failure as "<what>: <path>: <text>"; later ones are
 * dropped so the message names the original cause. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void proto_wire_enc_fail(proto_wire_enc *e, drape_err code, const char *path, const char *fmt, ...);
/* Hands the bytes to *out when nothing failed, else frees them and returns
 * the recorded code. Always leaves e empty. */
drape_err proto_wire_enc_finish(proto_wire_enc *e, proto_buf *out);

/*
 * Maps are written with a map32 header whose count is patched when the map
 * ends, so optional fields need no separate counting pass that could drift
 * from the packing code. (A map32 header for a small map is valid msgpack;
 * it costs four bytes.) proto_wire_kv packs a key and counts it.
 */
size_t proto_wire_map_begin(proto_wire_enc *e);
/* Raw bytes outside msgpack (the stream topic). */
void proto_wire_raw(proto_wire_enc *e, const void *p, size_t n);
void proto_wire_map_end(proto_wire_enc *e, size_t at, uint32_t n);
void proto_wire_kv(proto_wire_enc *e, uint32_t *n, const char *key);

void proto_wire_pack_str(proto_wire_enc *e, const char *path, const char *s, size_t max);
void proto_wire_pack_bytes(proto_wire_enc *e, const char *path, const uint8_t *p, size_t n, size_t max);
void proto_wire_pack_u64(proto_wire_enc *e, uint64_t v);
void proto_wire_pack_i64(proto_wire_enc *e, int64_t v);
void proto_wire_pack_f32(proto_wire_enc *e, float v);
void proto_wire_pack_f64(proto_wire_enc *e, double v);
void proto_wire_pack_bool(proto_wire_enc *e, bool v);
void proto_wire_pack_nil(proto_wire_enc *e);
void proto_wire_pack_array(proto_wire_enc *e, uint32_t n);
void proto_wire_pack_f32_array(proto_wire_enc *e, const float *v, uint32_t n);
/* bins of little-endian values: n values (not tuples); NULL with n > 0 or a
 * bin over 4 GiB - 1 records EINVAL naming path. */
void proto_wire_pack_bin_f32(proto_wire_enc *e, const char *path, const float *v, uint64_t n);
void proto_wire_pack_bin_u32(proto_wire_enc *e, const char *path, const uint32_t *v, uint64_t n);

void proto_wire_pack_params(proto_wire_enc *e, const proto_params *p);
void proto_wire_pack_objects(proto_wire_enc *e, const proto_object *objects, uint32_t count);
void proto_wire_pack_stats(proto_wire_enc *e, const drape_sim_stats *s);
void proto_wire_pack_topology(proto_wire_enc *e, const drape_sim_topology *t);
void proto_wire_pack_frame(proto_wire_enc *e, const char *path, const proto_frame *f);
void proto_wire_pack_keyframes(proto_wire_enc *e, const char *path, const drape_keyframe *k, uint32_t n);
void proto_wire_pack_error(proto_wire_enc *e, const drape_error *er);
void proto_wire_pack_state(proto_wire_enc *e, const char *path, proto_state s);

#endif
