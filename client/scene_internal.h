/*
 * The scene parser's shared context, for the files that read parts of a
 * scene (scene.c, scene_garment.c). Not installed: everything outside the
 * parser goes through client/scene.h.
 */
#ifndef DRAPE_CLIENT_SCENE_INTERNAL_H
#define DRAPE_CLIENT_SCENE_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "client/scene.h"

/* Scene files are small; this refuses a mistaken path to a huge file before
 * cJSON builds a tree several times its size. */
#define SCN_MAX_JSON_BYTES (64u << 20)
#define SCN_MAX_PATH 400

/* The mirror of the solver's collider limits (server/sim/collider.c), so a
 * scene fails at load time, with the JSON path, rather than at submission. */
#define SCN_MAX_FRICTION 10.0
#define SCN_MAX_COLLIDER_THICKNESS 1.0

typedef struct scn {
	const char *name;
	const char *base_dir;
	drape_obj_limits lim;
	uint64_t budget_vertices;  /* left for the meshes still to load */
	uint64_t budget_triangles;
	drape_error *err;
	char path[SCN_MAX_PATH];   /* JSON path of the value being read */
	size_t plen;
	drape_scene s;             /* what is being built; freed on failure */
	drape_keyframe **keys;     /* per collider, owned until moved into s */
	int32_t *pin_mark;         /* per cloth vertex: -2 free, else attach */
	float *pin_k;              /* per cloth vertex: its pin's stiffness, N/m (0 hard) */
	int in_cloths;             /* reading an entry of "cloths" (its name and layers too) */
} scn;

drape_err scn_fail(scn *c, drape_err code, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

/* The JSON path of the value being read: push a key or an index, pop back
 * to what push returned. */
size_t scn_push_key(scn *c, const char *key);
size_t scn_push_index(scn *c, size_t i);
void scn_pop(scn *c, size_t old);

/* Typed getters; each failure names the path. scn_keys refuses unknown and
 * repeated keys (NULL-terminated list). */
drape_err scn_keys(scn *c, const cJSON *obj, const char *const *keys);
drape_err scn_want_object(scn *c, const cJSON *v);
drape_err scn_number(scn *c, const cJSON *v, double *out);
drape_err scn_integer(scn *c, const cJSON *v, double lo, double hi, int64_t *out);
drape_err scn_float_in(scn *c, const cJSON *v, double lo, double hi, int lo_open, float *out);
drape_err scn_vec(scn *c, const cJSON *v, int n, float *out);
drape_err scn_scale(scn *c, const cJSON *v, float out[3]);

/* A mesh's placement in the scene: p' = R (p * scale) + translate, with R
 * from "rotate" (XYZ Euler degrees, X applied first, as keyframes). */
typedef struct scn_xform {
	float scale[3];
	double rotate[9];
	int rotated;
	float translate[3];
} scn_xform;

/* Reads "scale", "rotate" and "translate" of obj (absent ones stay the
 * identity). */
drape_err scn_xform_read(scn *c, const cJSON *obj, scn_xform *x);

/* Meshes: load an OBJ named by the string v within the scene's budget,
 * and place it by x. */
drape_err scn_load_mesh(scn *c, const cJSON *v, drape_obj_mesh *m, char **resolved);
drape_err scn_transform(scn *c, drape_obj_mesh *m, const scn_xform *x);

static inline const cJSON *scn_get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* Reads obj[key] with `fn`-style handling: absent keys leave *out alone. The
 * macros below keep the push/read/pop pattern in one place. */
#define SCN_FIELD(c, obj, key, call)                                    \
	do {                                                            \
		const cJSON *v_ = scn_get((obj), (key));               \
		if (v_ != NULL) {                                       \
			size_t old_ = scn_push_key((c), (key));         \
			drape_err e_ = (call);                          \
			if (e_ != DRAPE_OK)                             \
				return e_;                              \
			scn_pop((c), old_);                             \
		}                                                       \
	} while (0)

/* The cloth's garment keys ("stitches", "seams", "rest_mesh",
 * "stitch_stiffness", "sew_speed"), read after its mesh is loaded and
 * transformed (scene_garment.c). */
drape_err scn_garment(scn *c, const cJSON *cl, const scn_xform *x);
/* The cloth's per-group properties (scene_props.c): "mass_scale",
 * "rest_scale", "stiffness_scale", and "thickness" and "friction" when
 * they are objects of groups (or "friction" a number). */
drape_err scn_props(scn *c, const cJSON *cl);
/* "cloths" (scene_cloths.c): reads every cloth with scn_cloth and joins
 * them into one mesh with its objects. */
drape_err scn_cloths(scn *c, const cJSON *a, const cJSON *root);
drape_err scn_cloth(scn *c, const cJSON *cl);
/* Frees the per-cloth parts of s (mesh, pins, garment, properties). */
void scn_free_cloth_parts(drape_scene *s);

#endif
