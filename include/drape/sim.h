/*
 * drape — the embeddable Position Based Dynamics cloth solver.
 *
 * A pure library: no network, no file I/O, no allocation inside a step. The
 * daemon drives it; tests, benchmarks and other programs can embed it.
 *
 * Units are SI (metres, seconds, kilograms). Vertex arrays are packed float32
 * xyz triples in the caller's vertex order; triangles are packed uint32
 * triples. The solver may reorder its internal arrays for speed, but every
 * array that crosses this header is in the caller's order.
 *
 * Thread-safety: one drape_sim may be used by one thread at a time. Distinct
 * sims are independent. A drape_pool may be shared by many sims stepping on
 * different threads. A drape_sdf is immutable after building and may be shared
 * by many sims (reference counted).
 */
#ifndef DRAPE_SIM_H
#define DRAPE_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "drape/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is libdrape's API; the library is built with
 * -fvisibility=hidden, so only these declarations are exported. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct drape_sim drape_sim;
typedef struct drape_pool drape_pool;
typedef struct drape_sdf drape_sdf;

/* Limits of the parameters, checked by drape_sim_params_validate(). */
#define DRAPE_SIM_MAX_FPS 1000.0f
#define DRAPE_SIM_MAX_SUBSTEPS 64
#define DRAPE_SIM_MAX_ITERATIONS 256

/*
 * Solver parameters. Always start from drape_sim_params_default() so fields
 * added later get their defaults.
 */
typedef struct drape_sim_params {
	float fps;          /* frames per second, (0, 1000]; default 24 */
	int32_t substeps;   /* substeps per frame, [1, 64]; default 4 */
	int32_t iterations; /* Gauss-Seidel sweeps per substep, [1, 256]; default 10 */
	float gravity[3];   /* m/s^2; default (0, -9.81, 0) */
	/* Fraction of velocity kept per frame, [0, 1]; applied per substep as
	 * damping^(1/substeps) so the result does not depend on the substep
	 * count. Default 0.99. */
	float damping;
	float wind[3];      /* air velocity, m/s; default 0 */
	float drag;         /* aerodynamic drag coefficient, >= 0; default 1 */
	float lift;         /* aerodynamic lift coefficient, >= 0; default 0.3 */
	float air_density;  /* kg/m^3, >= 0; default 1.2 */
	float density;      /* cloth areal density, kg/m^2, > 0; default 0.2 */
	/* Stiffness in [0, 1]: the fraction of an isolated constraint's error
	 * removed per frame, whatever substeps and iterations are. */
	float stretch;      /* default 1 */
	float shear;        /* default 0.9 */
	float bend;         /* default 0.1 */
	float thickness;    /* cloth half-thickness for collisions, m, [0, 1]; default 0.005 */
	/* Long-range attachments (Kim et al. 2012) and, with them when
	 * stretch is 1, a strain limit that keeps every edge within 1 % of its
	 * rest length at the end of each iteration: -1 on whenever there are
	 * pins (default), 0 off, 1 on. With model XPBD the tethers, their
	 * chain bounds and the strain limit allow the material's slack
	 * (docs/material.md, "Pinned cloth") instead of 0 and 1 %. */
	int32_t long_range;
	/* Self-collision (0 off, 1 on; default off), its thickness in metres
	 * (0 = use `thickness`) and the friction between cloth layers [0, 1]. */
	int32_t self_collision;
	float self_thickness;
	float self_friction;
	/* Material model: DRAPE_MODEL_PBD (the seed's dimensionless stretch,
	 * shear and bend above, k' = 1 - (1 - k)^(1/n); the default, so old
	 * callers run unchanged) or DRAPE_MODEL_XPBD (the physical material
	 * below, solved with compliance 1/k scaled by 1/dt^2, Macklin et al.
	 * 2016, so the cloth is the same at any substeps, iterations or fps).
	 * Under XPBD `density` above is the areal density that sets the weight
	 * and `damping` is replaced by damping_rate. */
	int32_t model;
	float stretch_k;      /* membrane stiffness along warp (mesh u, or isotropic), N/m */
	float stretch_k_weft; /* along weft (mesh v), N/m; 0 = same as stretch_k */
	float shear_k;        /* in-plane shear stiffness, N/m */
	float bend_k;         /* bending stiffness, N*m */
	float compress_k;     /* compression stiffness, N/m; 0 = same as stretch */
	float damping_rate;   /* velocity damping, 1/s (v *= exp(-rate * dt)) */
	/* Tearing: an edge whose strain (l - l0) / l0 at the end of a frame
	 * passes tear_strain breaks, and the vertices it separates are split
	 * (drape_sim_step, README "Tearing"). 0 (the default) is off. It must
	 * be set at drape_sim_create: set_params may change a nonzero
	 * threshold, not switch tearing on. >= 0, finite. */
	float tear_strain;
	/* How model XPBD spends the frame's substeps x iterations
	 * (docs/material.md, "Mesh-aware schedule"):
	 * DRAPE_SCHEDULE_FRAME (the default) as that many small steps, the
	 * same whatever the mesh; DRAPE_SCHEDULE_MESH as at least that many,
	 * more where the mesh is fine enough that the budget would leave the
	 * material softer than its constants (up to about 8x the budget's sweeps).
	 * Ignored under model PBD. 0 or 1. */
	int32_t schedule;
} drape_sim_params;

#define DRAPE_MODEL_PBD 0
#define DRAPE_MODEL_XPBD 1

#define DRAPE_SCHEDULE_FRAME 0
#define DRAPE_SCHEDULE_MESH 1

/*
 * Fabric presets from published measurements (sources in README.md):
 * sets p->model to DRAPE_MODEL_XPBD and the material fields and density of
 * the named fabric ("cotton", "denim", "silk", "wool", "jersey",
 * "polyester", "leather", ...); other fields are untouched. An unknown name
 * is DRAPE_EINVAL with a message listing the known ones.
 */
drape_err drape_material_preset(const char *name, drape_sim_params *p, drape_error *err);
/* The preset names, NULL-terminated, static. */
const char *const *drape_material_preset_names(void);

/* Fills *p with the defaults above. */
void drape_sim_params_default(drape_sim_params *p);

/* Checks every field; on failure names the field and its allowed range. */
drape_err drape_sim_params_validate(const drape_sim_params *p, drape_error *err);

/* A pool of worker threads shared by many sims. */
/* Creates a pool of `threads` workers (0 = number of cores, at most 256).
 * The calling thread of drape_sim_step takes part too, so threads = 1 means
 * no extra thread. The solver splits each colour group of constraints into
 * blocks over the pool; results are bit-identical whatever the thread count.
 * One sim's colour runs on the pool at a time: a sim stepping on another
 * thread while the pool is busy runs that colour on its own thread instead
 * of waiting (same result), so many sessions may share one pool. Idle
 * workers spin briefly, then sleep. Owned by the caller; destroy after every
 * sim using it. */
drape_err drape_pool_create(uint32_t threads, drape_pool **out, drape_error *err);
void drape_pool_destroy(drape_pool *pool);
uint32_t drape_pool_threads(const drape_pool *pool);

/* What drape_sim_create reads. Arrays are copied; the caller keeps ownership. */
/*
 * A stitch ties vertex `a` to the point (1 - t) * b0 + t * b1 of the edge
 * b0-b1, or to vertex b0 when b1 == b0 (t is then ignored). It pulls only:
 * a stitch never pushes its ends apart. Two panels joined by stitches are
 * one piece of cloth to the self-collision along the seam.
 */
typedef struct drape_stitch {
	uint32_t a, b0, b1;
	float t;
} drape_stitch;

typedef struct drape_sim_desc {
	const float *positions;     /* vertex_count * 3 floats */
	uint32_t vertex_count;
	const uint32_t *triangles;  /* triangle_count * 3 indices */
	uint32_t triangle_count;
	/* Optional per-vertex inverse mass (1/kg, >= 0, 0 = pinned). When NULL
	 * the mass comes from params.density and the triangle areas. */
	const float *inv_mass;
	/* Optional list of pinned vertex indices (inverse mass forced to 0). */
	const uint32_t *pins;
	uint32_t pin_count;
	/* Optional texture coordinates, vertex_count * 2 floats: the warp (u)
	 * and weft (v) directions of an anisotropic XPBD material. */
	const float *uvs;
	drape_sim_params params;
	/* Optional rest shape, vertex_count * 3 floats: the rest lengths,
	 * angles, areas (so the masses) and the long-range distances come
	 * from it instead of from `positions`, which stay the start shape (a
	 * garment posed or draped, its flat pattern as the rest). NULL: the
	 * start shape is the rest. */
	const float *rest_positions;
	/* Optional stitches (drape_stitch): zero-length ties between a vertex
	 * and a vertex or a point on an edge, of their own stiffness. */
	const drape_stitch *stitches;
	uint32_t stitch_count;
	/* A stitch's stiffness in N/m (XPBD compliance 1/k); 0 makes every
	 * stitch rigid (a weld). */
	float stitch_k;
	/* Speed in m/s at which a stitch whose two ends start apart closes
	 * the gap (sewing panels placed around a body); 0 closes it at once,
	 * as far as the stiffness allows. Default 0.5. */
	float sew_speed;
	/* Optional per-pin stiffness in N/m, pin_count floats (>= 0): a pin
	 * with stiffness k > 0 is soft, pulling its vertex towards its start
	 * position (XPBD compliance 1/k; a hanging mass m settles m g / k
	 * below it) instead of holding it; 0, or NULL for all, is a hard pin.
	 * A soft-pinned vertex keeps its mass and cannot be attached to a
	 * collider (drape_sim_attach_pins). */
	const float *pin_stiffness;
	/* Optional per-vertex rest scale, vertex_count floats > 0: an edge's
	 * rest length (stretch, shear, and so the tethers and the strain
	 * limit) is multiplied by the mean of its two vertices' scales (0.8
	 * shrinks a cuff by 20 %); bending rest angles, areas and masses are
	 * unchanged. NULL: 1 everywhere. */
	const float *rest_scale;
	/* Optional worker pool; NULL steps on the calling thread only.
	 * drape_sim_set_pool changes it later. */
	drape_pool *pool;
	/* Optional per-vertex stiffness scales, vertex_count * 3 floats in
	 * (0, DRAPE_SIM_MAX_STIFFNESS_SCALE]: each vertex's factor on the
	 * material's stretch (and compression), shear and bending stiffness,
	 * model DRAPE_MODEL_XPBD only (the seed's PBD stiffness is one number
	 * for the cloth). A constraint's stiffness is the material's times
	 * the harmonic mean of its vertices' factors of its kind (two for an
	 * edge or a shear wing pair, four for a bending pair), so an edge
	 * between a stiff and a soft vertex is its two halves in series, as
	 * springs in series add their compliances. A collar at (4, 4, 4) is
	 * four times as stiff as the shirt; a second cloth of another fabric
	 * is the ratios of its constants to the session's. NULL: 1. */
	const float *stiffness_scale;
	/* Optional per-vertex collision thickness in metres, vertex_count
	 * floats in [0, 1]: replaces params.thickness for that vertex against
	 * every collider (a hem resting higher than the shirt) and, unless
	 * params.self_thickness is set, in the self-collision and between
	 * cloth objects, where a vertex and a triangle (two edges) are kept
	 * apart by the mean of the two sides' thickness, a triangle's being
	 * its corners' mean (a 6 mm jacket rests 3.5 mm off a 1 mm shirt).
	 * NULL: params.thickness everywhere. */
	const float *vertex_thickness;
	/* Optional per-vertex friction against colliders, vertex_count floats:
	 * a value in [0, DRAPE_SIM_MAX_FRICTION] replaces both the collider's
	 * friction and static_friction for that vertex's contacts (Coulomb:
	 * cloth rests on a slope of angle theta when tan theta < mu), for
	 * every collider; -1 keeps the collider's. NULL: the colliders'
	 * everywhere. */
	const float *vertex_friction;
	/* Optional cloth objects (drape_sim_object): consecutive vertex
	 * ranges covering all vertices in order, a triangle never joining
	 * two. Cloths of one session meet each other through the
	 * self-collision (params.self_collision), with its guarantee that no
	 * two layers cross, when their layers let them (drape_sim_object).
	 * NULL (object_count 0): one object. */
	const struct drape_sim_object *objects;
	uint32_t object_count;
} drape_sim_desc;

/* Limits of the per-vertex properties and objects above. */
#define DRAPE_SIM_MAX_STIFFNESS_SCALE 1.0e6f
#define DRAPE_SIM_MAX_FRICTION 10.0f
#define DRAPE_SIM_MAX_OBJECTS 256u

/*
 * One cloth object of a sim holding several (a shirt and a jacket): its
 * vertices first_vertex .. first_vertex + vertex_count - 1. Two objects
 * collide (self-collision pairs between them) when each one's layer
 * shares a bit with the other's collides_with (the rule of Box2D's
 * category and mask bits); a vertex never stops colliding with its own
 * object. Layer 1 and collides_with 0xffffffff meet every other object;
 * layer 0 meets none.
 */
typedef struct drape_sim_object {
	uint32_t first_vertex, vertex_count;
	uint32_t layer;
	uint32_t collides_with;
} drape_sim_object;

void drape_sim_desc_default(drape_sim_desc *d);

/* Counts found while building the topology; reported, never fatal. */
typedef struct drape_sim_topology {
	uint32_t vertices;
	uint32_t triangles;
	uint32_t edges;                 /* unique undirected edges = stretch constraints */
	uint32_t bends;                 /* interior edges with exactly two triangles */
	uint32_t boundary_edges;        /* edges with one triangle */
	uint32_t nonmanifold_edges;     /* edges with more than two triangles */
	uint32_t zero_area_triangles;   /* kept out of bending and wind */
	uint32_t degenerate_edges;      /* zero rest length; skipped */
	uint32_t unreferenced_vertices; /* in no triangle; they fall freely */
	uint32_t pinned_vertices;
	uint32_t long_range;            /* long-range attachment records */
	uint32_t colours;               /* colour groups over all constraint kinds */
	uint32_t stitches;              /* stitches kept (desc.stitches less the welds) */
	uint32_t welds;                 /* vertices merged into another by a weld */
} drape_sim_topology;

/* Per-frame figures filled by drape_sim_step. */
typedef struct drape_sim_stats {
	uint32_t frame;            /* index of the frame just solved, 1-based */
	double solve_ms;           /* wall time of the step */
	double collide_ms;         /* of which obstacle collisions */
	double self_ms;            /* of which self-collision */
	float max_strain;          /* max over edges of |l - l0| / l0 */
	float mean_strain;
	uint32_t nonfinite;        /* vertices with NaN/Inf (step refused if > 0) */
	uint32_t contacts;         /* obstacle contacts in the last substep */
	uint32_t self_pairs;       /* self-collision candidate pairs, last substep */
	uint64_t projections;      /* constraint projections done this frame */
	/* Tearing (params.tear_strain): edges past the threshold this frame,
	 * vertices added by splitting, the topology generation after the
	 * frame (0 = the mesh as created, +1 per frame that split) and the
	 * wall time of the split and rebuild. */
	uint32_t torn_edges;
	uint32_t split_vertices;
	uint32_t topology;
	double tear_ms;
	/* Substeps chosen from the body's motion (sim.c): the frame was
	 * solved in `substeps` substeps, `split` times the schedule's (1
	 * unless a collider's surface turned more than 4 degrees a
	 * substep, at most 8), and the largest turn of a collider's surface
	 * over the frame in radians. */
	uint32_t split;
	uint32_t substeps;
	float body_turn;
} drape_sim_stats;

/*
 * Builds a solver from *desc. Everything is validated first; on failure
 * nothing is allocated, *out is untouched, and err names the field and index
 * at fault (e.g. "triangles[5][1]"). On success the caller owns *out and
 * frees it with drape_sim_destroy.
 */
drape_err drape_sim_create(const drape_sim_desc *desc, drape_sim **out, drape_error *err);

/* Makes the following steps use `pool` (NULL: the calling thread only), for
 * a caller that decides per frame whether a sim gets the pool, such as a
 * daemon that gives it to a session solving alone and not to sessions
 * solving side by side. Results do not depend on it. Not while the sim is
 * stepping; the sim does not own the pool. */
void drape_sim_set_pool(drape_sim *sim, drape_pool *pool);
void drape_sim_destroy(drape_sim *sim);

/* Replaces the parameters between frames. Validated first; on failure the
 * sim keeps its old parameters. */
drape_err drape_sim_set_params(drape_sim *sim, const drape_sim_params *p, drape_error *err);
void drape_sim_get_params(const drape_sim *sim, drape_sim_params *p);
/* The schedule the next frame takes: steps (substeps) per frame and
 * iterations per step. params.substeps x params.iterations under model
 * PBD; under XPBD what params.schedule chose from them (README, "The
 * physical material"). Either pointer may be NULL. */
void drape_sim_get_schedule(const drape_sim *sim, uint32_t *steps, uint32_t *iterations);

/*
 * Advances one frame (substeps x iterations). If any vertex becomes NaN or
 * Inf the step is refused with DRAPE_ENONFINITE, the state stays that of the
 * previous frame, and stats->nonfinite says how many vertices were bad.
 * stats may be NULL.
 */
drape_err drape_sim_step(drape_sim *sim, drape_sim_stats *stats, drape_error *err);

uint32_t drape_sim_vertex_count(const drape_sim *sim);
uint32_t drape_sim_triangle_count(const drape_sim *sim);
/* Number of frames solved so far (0 after create). */
uint32_t drape_sim_frame(const drape_sim *sim);
void drape_sim_get_topology(const drape_sim *sim, drape_sim_topology *t);

/* Copies current positions (vertex_count * 3 floats, caller's order). */
void drape_sim_get_positions(const drape_sim *sim, float *xyz);

/*
 * Solver state for checkpoints: positions and velocities (vertex_count * 3
 * floats each, caller's order) and the frame counter. Restoring a saved state
 * into a sim built from the same inputs continues bit-identically.
 */
void drape_sim_get_state(const drape_sim *sim, float *xyz, float *vel, uint32_t *frame);
drape_err drape_sim_set_state(drape_sim *sim, const float *xyz, const float *vel, uint32_t frame,
			      drape_error *err);

/* ---- Tearing -------------------------------------------------------------- */

/*
 * With params.tear_strain > 0 the mesh may change at the end of a frame:
 * vertices are split (never merged or removed), so the vertex count grows,
 * the triangle count and order stay, and every vertex keeps its index; a
 * split-off copy gets the next free index. origin[j] is the vertex of the
 * created mesh vertex j came from (origin[j] == j for those). The
 * generation counts the frames whose end split something (0 = as created).
 */
uint32_t drape_sim_topology_generation(const drape_sim *sim);
/* Copies the current triangles (drape_sim_triangle_count * 3, caller's
 * order; may be NULL) and the origin of each of the drape_sim_vertex_count
 * vertices (may be NULL). DRAPE_ESTATE for a sim created without
 * tear_strain, which keeps no caller-ordered copy of its triangles. */
drape_err drape_sim_get_mesh(const drape_sim *sim, uint32_t *triangles, uint32_t *origin,
			     drape_error *err);
/*
 * Restores a torn mesh (a checkpoint's drape_sim_get_mesh) into a sim made
 * by drape_sim_create from the same inputs and not yet torn, then call
 * drape_sim_set_state with vertex_count vertices: the run continues
 * bit-identically. Checked first (the triangles must be a split of the
 * created ones: triangles[k] < vertex_count and origin[triangles[k]] the
 * created triangle's vertex; origin[j] == j below the created count); on
 * failure the sim is unchanged and err names the field.
 */
drape_err drape_sim_set_mesh(drape_sim *sim, uint32_t vertex_count, const uint32_t *triangles,
			     const uint32_t *origin, uint32_t generation, drape_error *err);

/* ---- Colliders ------------------------------------------------------------ */

typedef enum drape_shape {
	DRAPE_SHAPE_PLANE = 1,   /* point, normal */
	DRAPE_SHAPE_SPHERE = 2,  /* center, radius */
	DRAPE_SHAPE_BOX = 3,     /* center, half_extents (axis aligned in its own space) */
	DRAPE_SHAPE_CAPSULE = 4, /* a, b, radius */
	DRAPE_SHAPE_MESH = 5     /* sdf, or vertices + triangles + voxel_size */
} drape_shape;

/* A rigid transform at a frame: translation, then XYZ Euler rotation in
 * degrees (applied X, then Y, then Z) about the collider's own origin. */
typedef struct drape_keyframe {
	float frame;
	float translate[3];
	float rotate[3];
} drape_keyframe;

#define DRAPE_MAX_KEYFRAMES 100000

/* The rigid transform keys[0 .. count) give at (fractional) frame t, as
 * the solver moves a collider by it: world = rotation * local + translate,
 * rotation row-major. Linear between keys (translation and angles), the
 * nearest key before the first or after the last, identity for count 0.
 * The keys must be in increasing frame order (drape_sim_add_collider
 * checks it). */
void drape_keyframes_eval(const drape_keyframe *keys, uint32_t count, float t, float rotation[9],
			  float translate[3]);

typedef struct drape_collider_desc {
	drape_shape shape;
	float point[3], normal[3];   /* plane */
	float center[3];             /* sphere, box */
	float radius;                /* sphere, capsule */
	float half_extents[3];       /* box */
	float a[3], b[3];            /* capsule segment ends */
	/* Mesh: either a prebuilt field (retained by the sim) or a triangle mesh
	 * from which one is built with voxel_size (0 = automatic). */
	drape_sdf *sdf;
	const float *vertices;
	uint32_t vertex_count;
	const uint32_t *triangles;
	uint32_t triangle_count;
	float voxel_size;
	uint64_t max_voxels;         /* cap on the field's voxel count; 0 = default */
	/* Contact response. friction is the dynamic coefficient, static_friction
	 * the sticking limit (tangential motion below static_friction times the
	 * normal push is removed entirely). restitution in [0, 1]. thickness is
	 * an extra offset added to the cloth thickness. */
	float friction;              /* default 0.3 */
	float static_friction;       /* default 0.5 */
	float restitution;           /* default 0 */
	float thickness;             /* default 0 */
	const drape_keyframe *keyframes; /* copied; NULL = identity */
	uint32_t keyframe_count;
	/* Deforming mesh: vertex positions per animation frame (frame_count *
	 * vertex_count * 3 floats, same topology as `vertices`, copied; NULL =
	 * not deforming). Animation frame i is the body at sim frame
	 * frame_start + i; between frames the positions are interpolated
	 * linearly per substep, and before the first or after the last frame
	 * the nearest one holds. `vertices` is the rest pose (skin-bound pins
	 * bind there). A deforming collider is solved against its moving
	 * triangles, not a field. */
	const float *frames;
	uint32_t frame_count;
	float frame_start;
} drape_collider_desc;

void drape_collider_desc_default(drape_collider_desc *d);

/*
 * Adds a collider; on success *index is its index (dense, in order added).
 * A mesh collider without a prebuilt field gets one built as
 * drape_sim_build_collider_sdf() would.
 */
drape_err drape_sim_add_collider(drape_sim *sim, const drape_collider_desc *d, uint32_t *index,
				 drape_error *err);
/*
 * Builds the field a mesh collider description gets from this sim, without
 * adding it: voxel_size 0 becomes twice the cloth thickness, bounded to
 * [diagonal / 1024, diagonal / 128] of the mesh's bounding box (then coarsened
 * until the field fits max_voxels), and the exterior band is the collider's
 * thickness plus 2 cm. A server can build once, cache by mesh and settings,
 * and pass the same field (desc.sdf) to many sessions. On success the caller
 * owns one reference to *out.
 */
drape_err drape_sim_build_collider_sdf(const drape_sim *sim, const drape_collider_desc *d,
				       drape_sdf **out, drape_error *err);
/* The voxel size drape_sim_build_collider_sdf would use for d (d->voxel_size
 * when set); 0 when the mesh is empty or not finite. */
float drape_sim_collider_voxel_size(const drape_sim *sim, const drape_collider_desc *d);

/* Removes a collider; the indices of later colliders shift down by one. */
drape_err drape_sim_remove_collider(drape_sim *sim, uint32_t index, drape_error *err);
drape_err drape_sim_set_keyframes(drape_sim *sim, uint32_t index, const drape_keyframe *keys,
				  uint32_t count, drape_error *err);
/* Replaces a mesh collider's vertex positions (same count); rebuilds its field. */
drape_err drape_sim_update_collider_mesh(drape_sim *sim, uint32_t index, const float *vertices,
					 uint32_t vertex_count, drape_error *err);
/* Replaces a mesh collider's field with a prebuilt one (retained). */
drape_err drape_sim_set_collider_sdf(drape_sim *sim, uint32_t index, drape_sdf *sdf,
				     drape_error *err);
uint32_t drape_sim_collider_count(const drape_sim *sim);
/* Appends animation frames to a deforming mesh collider (a client streams
 * them ahead of the solve): `count` frames of its vertex_count * 3 floats.
 * A mesh collider added without frames becomes deforming with its first
 * appended frame. */
drape_err drape_sim_append_collider_frames(drape_sim *sim, uint32_t index, const float *frames,
					   uint32_t count, drape_error *err);
/* Makes the given pinned vertices follow collider `index`: a rigid one's
 * transform, or a deforming one's skin (each vertex bound to the nearest
 * point of the rest pose by barycentric coordinates). */
drape_err drape_sim_attach_pins(drape_sim *sim, const uint32_t *vertices, uint32_t count,
				uint32_t index, drape_error *err);

/* Limits on a deforming collider's animation, checked before anything is
 * allocated: frames in total (added plus appended) and their bytes
 * (frames * vertex_count * 12). */
#define DRAPE_MAX_COLLIDER_FRAMES 100000u
#define DRAPE_MAX_COLLIDER_FRAME_BYTES (2ull << 30)

/* Bytes the solver holds for a deforming mesh collider of vertex_count
 * vertices, triangle_count triangles and frame_count poses against a cloth
 * of cloth_vertices vertices: the poses themselves (frame_count *
 * vertex_count * 12), the triangle tree refit every substep and the
 * contact scratch. draped counts it in a session's memory estimate. */
uint64_t drape_sim_deform_bytes(uint32_t vertex_count, uint32_t triangle_count, uint32_t frame_count,
				uint32_t cloth_vertices);

/* How the solver treats a collider, for logs: an analytic shape, a mesh
 * sampled through its signed distance field (static or rigidly keyframed),
 * or a deforming mesh solved against its moving triangles. */
typedef enum drape_collider_kind {
	DRAPE_COLLIDER_NONE = 0, /* no such collider */
	DRAPE_COLLIDER_SHAPE = 1,
	DRAPE_COLLIDER_FIELD = 2,
	DRAPE_COLLIDER_SURFACE = 3
} drape_collider_kind;

drape_collider_kind drape_sim_collider_kind(const drape_sim *sim, uint32_t index);
/* "shape", "field", "surface" ("none" for anything else); static. */
const char *drape_collider_kind_name(drape_collider_kind kind);
/* Animation frames a deforming collider holds (0 for any other collider). */
uint32_t drape_sim_collider_frame_count(const drape_sim *sim, uint32_t index);

/* ---- Signed distance fields (OpenVDB behind a C interface) ---------------- */

#define DRAPE_SDF_DEFAULT_MAX_VOXELS 64000000ull

typedef struct drape_sdf_info {
	float voxel_size;
	float band;          /* width of the exterior band, metres (the interior is filled) */
	uint64_t voxels;     /* active voxels */
	float bbox_min[3], bbox_max[3];
	double build_ms;
	uint64_t bytes;      /* memory held by the grid */
	/* Where build_ms went, by OpenVDB's stages (all 0 for a field read back
	 * from bytes): voxelising the triangles' neighbourhood; classifying
	 * inside and outside (sign of the voxels the surface crosses, removal
	 * of self-intersection artefacts, the sign flood fill); growing the band
	 * to its width and filling the interior; renormalising the values. The
	 * rest of build_ms is our own (checks, capping holes). threads is how
	 * many threads OpenVDB's TBB could use for the build. */
	double voxelize_ms, sign_ms, expand_ms, renormalize_ms;
	uint32_t threads;
	/* Which builder made the field: "band (...)" for the exact builder,
	 * whose stages map as voxelize_ms = exact distances near the triangles,
	 * sign_ms = welding, orienting and pseudo-normals, expand_ms = the
	 * layers out to the band and through the interior, renormalize_ms =
	 * copying into the sparse grid; or "openvdb: <why>" when the mesh went
	 * to OpenVDB (open after capping, non-manifold, non-orientable, too
	 * large a grid, or DRAPE_SDF_BUILDER=openvdb in the environment). */
	char builder[160];
} drape_sdf_info;

/*
 * Builds a signed distance field (negative inside) from a closed or nearly
 * closed triangle mesh: a narrow band outside, the whole interior filled.
 * voxel_size 0 picks one from the mesh size. band is the exterior band's
 * width in metres (at least 3 voxels). The voxel
 * count implied by the bounding box is checked against max_voxels (0 =
 * DRAPE_SDF_DEFAULT_MAX_VOXELS) before anything is built. On success the
 * caller owns one reference to *out.
 */
drape_err drape_sdf_build(const float *vertices, uint32_t vertex_count, const uint32_t *triangles,
			  uint32_t triangle_count, float voxel_size, float band, uint64_t max_voxels,
			  drape_sdf **out, drape_error *err);
void drape_sdf_retain(drape_sdf *sdf);
void drape_sdf_release(drape_sdf *sdf);
void drape_sdf_get_info(const drape_sdf *sdf, drape_sdf_info *info);
/*
 * Samples distance and gradient at n points (xyz triples, the field's own
 * space). grad may be NULL. Points outside the narrow band return +band and a
 * zero gradient when outside the mesh (free space). Thread-safe.
 */
void drape_sdf_sample(const drape_sdf *sdf, const float *points, uint32_t n, float *dist, float *grad);
/*
 * A field as bytes, for a caller that keeps fields between runs (draped's
 * disk cache of STATE/fields/). The solver does no file I/O: the caller
 * writes and reads the bytes. The format is a small header (magic, version,
 * the info above, the payload's length and 64-bit checksum) followed by the
 * grid in OpenVDB's own stream format, lossless: a field read back samples
 * bit-identically to the one written. Meant for the machine that wrote it
 * (native byte order). On success *data is malloc'd and owned by the caller
 * (free it); on failure *data and *size are untouched.
 */
drape_err drape_sdf_serialize(const drape_sdf *sdf, void **data, size_t *size, drape_error *err);
/*
 * Rebuilds a field from drape_sdf_serialize's bytes. Bytes that are not such a
 * field (another magic or version, truncated, corrupt payload, or a grid that
 * does not match its header) give DRAPE_ESDF with a message saying which, and
 * leave *out untouched. On success the caller owns one reference to *out.
 */
drape_err drape_sdf_deserialize(const void *data, size_t size, drape_sdf **out, drape_error *err);

/* ---- Preflight: intersecting triangle pairs -------------------------------- */

typedef struct drape_tri_pair {
	uint32_t a, b;
} drape_tri_pair;

/*
 * Counts pairs of triangles (not sharing a vertex) that intersect, with an
 * exact triangle-triangle test. Fills up to max_pairs of them into pairs
 * (may be NULL). Input validated as for drape_sim_create.
 */
drape_err drape_preflight(const float *positions, uint32_t vertex_count, const uint32_t *triangles,
			  uint32_t triangle_count, drape_tri_pair *pairs, uint32_t max_pairs,
			  uint64_t *count, drape_error *err);

/*
 * Untangling (docs/untangle.md): the intersecting triangle pairs the
 * self-collision found in the cloth at its first check and the vertices it
 * released around them, which are neither kept apart nor guarded until
 * their region no longer intersects. Checks now when no step has yet. Both
 * 0 without self-collision or when nothing intersects. Either pointer may
 * be NULL.
 */
void drape_sim_tangle(drape_sim *sim, uint64_t *pairs, uint32_t *released);

/* The solver's build: "scalar", "sse2" or "avx2", for logs and hello. */
const char *drape_sim_build(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
