/*
 * Scene files of libdrape (internal header; the drape CLI and the tests use
 * it too, hence the drape_scene_ prefix). client/SCENE.md documents the
 * format.
 *
 * A scene is one JSON object: solver parameters, the cloth (an OBJ mesh or a
 * generated grid sheet) with its pins, and colliders. Loading is strict:
 * every unknown key is an error naming it (a typo such as "strech" must not
 * silently leave the default in place), and every wrong type or value is an
 * error naming its JSON path, e.g.
 * "scene.json: cloth.pins.indices[3]: 5000 is out of range (mesh has 4096
 * vertices)".
 *
 * Every allocation is bounded by the input size and the drape_obj_limits
 * given (grid resolution and meshes count against max_vertices and
 * max_triangles), and mesh paths must name regular files, so any scene text
 * is either loaded or refused with an error.
 */
#ifndef DRAPE_CLIENT_SCENE_H
#define DRAPE_CLIENT_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "client/obj.h"
#include "client/pointcache.h"
#include "client/seams.h"
#include "drape/drape.h"
#include "drape/error.h"
#include "drape/scene.h"
#include "drape/sim.h"

/* Default of "frames" when the scene does not give it. */
#define DRAPE_SCENE_DEFAULT_FRAMES 48u
/* Largest "frames" accepted (about 11.5 hours at 24 fps). */
#define DRAPE_SCENE_MAX_FRAMES 1000000u
/* Most colliders one scene may list. */
#define DRAPE_SCENE_MAX_COLLIDERS 1024u

/* Value of pin_attach[] for a pin that stays where it is. */
#define DRAPE_SCENE_NO_ATTACH (-1)

/* A deforming collider's animation as the scene read it. The poses the
 * solver gets are in the collider's desc (frames, frame_count, frame_start:
 * one pose per simulation frame, scaled and translated like the mesh). */
typedef struct drape_scene_anim {
	char *path;               /* resolved file (or sequence pattern); NULL = not animated */
	drape_anim_format format;
	float *frames;            /* owned; the desc's frames point here */
	uint32_t samples;         /* samples in the file */
	double first_frame;       /* animation frame of the first and of the last sample */
	double last_frame;
} drape_scene_anim;

typedef struct drape_scene {
	/* drape_sim_params_default() with every key of the scene applied;
	 * validated with drape_sim_params_validate(). */
	drape_sim_params params;
	uint32_t frames;
	/* "start_frame": the first frame written; frames before it are solved
	 * but not written (pre-roll). 1 unless the scene says. */
	uint32_t start_frame;

	/* The cloth: positions after scale, rotate and translate, triangles, and the OBJ
	 * groups (or, for a grid, the groups "top", "bottom", "left", "right"
	 * and "corners"). cloth.uvs holds the per-vertex texture coordinates
	 * that orient a material's warp and weft (the OBJ's vt, or the grid's
	 * own in metres), NULL when the OBJ has none. cloth_path is the
	 * resolved mesh path, NULL for a grid. */
	drape_obj_mesh cloth;
	char *cloth_path;

	/* The cloth's material: a preset name (static storage), "custom" for
	 * constants given in full, NULL without "material" (the pbd model).
	 * params holds the values either way. */
	const char *material;

	/* Pinned vertices, sorted ascending without duplicates; pin_attach[i] is
	 * the collider index pins[i] follows, or DRAPE_SCENE_NO_ATTACH (always
	 * for a soft pin). */
	uint32_t *pins;
	int32_t *pin_attach;
	uint32_t pin_count;
	/* Each pin's stiffness in N/m ("stiffness" of its pins entry; 0 a
	 * hard pin), pin_count floats; NULL when every pin is hard. */
	float *pin_stiffness;

	/* Colliders in file order, ready for drape_sim_add_collider: mesh
	 * colliders point at collider_meshes[i] (positions after their own scale
	 * and translate), keyframes at storage owned by the scene. For a shape
	 * collider collider_meshes[i] is empty. The pointers stay valid until
	 * drape_scene_free. */
	drape_collider_desc *colliders;
	drape_obj_mesh *collider_meshes;
	drape_scene_anim *collider_anims; /* collider_count entries */
	uint32_t collider_count;

	/* The garment (client/SCENE.md, "Garments"): the stitches given and
	 * found (explicit first, then the seams'), their stiffness (N/m, 0
	 * rigid) and sewing speed (m/s), the rest shape from "rest_mesh"
	 * (cloth.vertex_count * 3 floats after the cloth's scale and
	 * translate; NULL without), and what the seam search found. */
	drape_stitch *stitches;
	uint32_t stitch_count;
	uint32_t explicit_stitches;
	float stitch_k, sew_speed;
	float *rest_positions;
	/* "mass_scale" (client/scene_props.c): per cloth vertex, the factor on
	 * its areal-density mass (1 outside the groups named); NULL without. */
	float *mass_scale;
	/* "rest_scale": per cloth vertex, its rest scale (drape_sim_desc.
	 * rest_scale; 1 outside the groups named); NULL without. */
	float *rest_scale;
	/* Per cloth vertex (scene_props.c; drape_sim_desc's fields of these
	 * names): "stiffness_scale" by group and the ratios of the cloths'
	 * materials (vertex_count * 3: stretch, shear, bend), "thickness" by
	 * group or per cloth, "friction" by group or per cloth (-1: the
	 * collider's). NULL without. */
	float *stiffness_scale;
	float *vertex_thickness;
	float *vertex_friction;
	int has_seams;
	drape_seams_report seams;
	/* "cloths" (scene_cloths.c): the cloths, concatenated into `cloth` in
	 * order; objects[i].name is owned by the scene, object_paths[i] is
	 * cloth i's resolved OBJ path (NULL for a grid), and its triangles are
	 * object_tris[2 i] .. + object_tris[2 i + 1]. 0 objects for "cloth". */
	drape_object_desc *objects;
	drape_sim_object *object_ranges; /* the same ranges, as the solver takes them */
	char **object_paths;
	uint32_t *object_tris;
	uint32_t object_count;
} drape_scene;

/*
 * The per-vertex inverse masses to create the session with: NULL (*out)
 * when the scene scales no mass (the solver then takes them from the
 * density), else cloth.vertex_count floats from params.density, the rest
 * shape's triangle areas (the solver's rule) and mass_scale, which the
 * caller frees.
 */
drape_err drape_scene_inv_mass(const drape_scene *sc, float **out, drape_error *err);

/* The sizes past which drape_scene_size_note suspects the units, metres. */
#define DRAPE_UNITS_MAX_CLOTH 4.0
#define DRAPE_UNITS_MIN_CLOTH 0.02
#define DRAPE_UNITS_MAX_BODY 3.0
#define DRAPE_UNITS_MIN_BODY 0.5 /* a collider this tall, or taller, sizes the cloth */

/*
 * Whether the scene's sizes suggest a mesh in the wrong units: a cloth (or
 * each of "cloths") over DRAPE_UNITS_MAX_CLOTH or under
 * DRAPE_UNITS_MIN_CLOTH across, a mesh collider over DRAPE_UNITS_MAX_BODY
 * tall (Y). Writes one line naming each suspect, its size and the scale
 * that would fix decimetres or centimetres (and, for a cloth, the factor
 * on its scale that makes it as large as the tallest mesh collider from
 * DRAPE_UNITS_MIN_BODY to DRAPE_UNITS_MAX_BODY tall) into buf (n bytes, always
 * terminated when n > 0) and returns its length; 0 when the sizes look
 * like metres. `drape check` and `drape run` print it as a warning.
 */
size_t drape_scene_size_note(const drape_scene *s, char *buf, size_t n);

/*
 * Reads a scene file (drape_scene_load in drape/scene.h reads with it).
 * Relative mesh paths are resolved against the folder of `path`. `limits`
 * (NULL = defaults) bounds every mesh and the grid. On success *out
 * (provided by the caller; old content ignored) owns everything and is
 * freed with drape_scene_free. On failure *out is untouched, nothing
 * is leaked and err names the file and the JSON path at fault. Safe to call
 * from several threads at once, with one caveat from cJSON 1.7: its parser
 * records the last syntax error in a global, which concurrent parses
 * overwrite (harmless here: the loader never reads it, but ThreadSanitizer
 * reports it).
 */
drape_err drape_scene_read(const char *path, const drape_obj_limits *limits, drape_scene *out,
			   drape_error *err);

/*
 * Loads a scene from `len` bytes of JSON text. Relative mesh paths are
 * resolved against `base_dir` (NULL = the current directory). `name` is used
 * in messages in place of a file name (NULL gives "scene"). Ownership as for
 * drape_scene_read.
 */
drape_err drape_scene_read_string(const char *json, size_t len, const char *base_dir, const char *name,
				  const drape_obj_limits *limits, drape_scene *out, drape_error *err);

/* Frees everything *s owns and zeroes it; NULL and a zeroed struct are fine. */
void drape_scene_free(drape_scene *s);

/*
 * Builds a scene that was read as a new session on c (what drape_scene_load
 * does after reading; the CLI calls it directly as it keeps the scene's
 * mesh for the files it writes): session.create with the cloth, pins and
 * parameters, name (NULL = none), then every collider and the pins that
 * follow one. On success *out is the handle and *info (may be NULL) as
 * drape_scene_load fills it. On failure the session, if it was created, is
 * deleted again, and err's message names the request ("session.create: ",
 * "colliders[2]: ", "pins.attach (collider 0): ") and the server's reason.
 */
drape_err drape_scene_submit(drape_client *c, const drape_scene *sc, const char *name, drape_session *out,
			     drape_scene_info *info, drape_error *err);

/*
 * Fills *mesh with a flat sheet of nx * ny vertices spanning size_u x size_v
 * metres around `center`, facing `normal` (unit length not needed, must not
 * be zero), triangulated with alternating diagonals (2 (nx-1)(ny-1)
 * triangles, counter-clockwise seen from the normal side). The sheet's u axis
 * (size_u, nx) and v axis (size_v, ny) are chosen so that v points as close
 * to world +Y as the plane allows (to -Z for a sheet facing +-Y), u = v x n.
 * Vertex (i, j) has index j * nx + i, i along u, j along v. Groups: "bottom"
 * (j = 0), "top" (j = ny - 1), "left" (i = 0), "right" (i = nx - 1),
 * "corners". Ownership as for drape_obj_read_file.
 */
drape_err drape_scene_make_grid(float size_u, float size_v, uint32_t nx, uint32_t ny, const float center[3],
				const float normal[3], const drape_obj_limits *limits, drape_obj_mesh *mesh,
				drape_error *err);

#endif
