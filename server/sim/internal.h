/*
 * The solver's private state and the internal functions shared by its files
 * (sim.c, topology.c, stretch.c, bend.c, wind.c) and by the unit tests, which
 * link libdrape_sim.a and may call any sim_ function declared here.
 *
 * Layout (ARCHITECTURE.md, "Data layout of the solver"): positions x,
 * predicted positions p and velocities v are flat sim_vec4 arrays in the
 * caller's vertex order, with the inverse mass in the w lane of x and p. Each
 * constraint kind is a flat array of small records, first sorted by vertex
 * index and then reordered into colour groups: within one colour no two
 * records share a vertex, so a later threaded or SIMD version may project a
 * whole colour at once. Colours are always visited in the same order, so the
 * result does not depend on how a colour is split among workers.
 */
#ifndef DRAPE_SIM_INTERNAL_H
#define DRAPE_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "drape/sim.h"
#include "server/sim/bodyedge.h"
#include "server/sim/bodypush.h"
#include "server/sim/collider.h"
#include "server/sim/selfcollide.h"
#include "server/sim/vec.h"

/*
 * Colours are tracked with one 64-bit mask per vertex. A record whose
 * vertices already use colours 0..62 goes to colour 63, the overflow colour,
 * whose records may share vertices: it must be projected serially. Meshes of
 * bounded valence (every cloth mesh in practice) never reach it.
 */
#define SIM_MAX_COLOURS 64u
#define SIM_OVERFLOW_COLOUR (SIM_MAX_COLOURS - 1u)

/* Triangles per chunk of the wind pass (see wind_chunk below): enough that
 * a chunk's vertices are mostly its own, few enough that a colour holds
 * many chunks to share among threads. */
#define SIM_WIND_CHUNK 256u

/*
 * Tiles (sweep.c): the internal vertex order is a locality order (order.c),
 * so a run of SIM_TILE_VERTICES consecutive vertices is a compact patch of
 * the cloth whose positions (64 KB) stay in a core's L1 and L2 caches. A record whose
 * vertices all lie in one tile is that tile's; the others are boundary
 * records. An iteration projects each tile's records, every kind and colour
 * of it, while its positions stay in cache, tiles in parallel (no two share
 * a vertex), then the boundary records colour by colour over the whole mesh.
 */
#define SIM_TILE_VERTICES 4096u

/*
 * A mesh below SIM_TILE_VERTICES would be one tile, and so one thread's
 * work: a garment of 1,700 vertices used one core whatever the machine
 * had (issue 22). Such a mesh is cut into about SIM_SMALL_TILES tiles
 * instead, of a power of two of at least SIM_TILE_MIN_VERTICES vertices
 * (sim_tile_vertices). The size depends on the vertex count alone, never
 * on the threads, so the Gauss-Seidel order, and every result, is the same
 * for any thread count.
 */
#define SIM_SMALL_TILES 8u
#define SIM_TILE_MIN_VERTICES 128u

/*
 * The tiled layout of one constraint kind's records: the tiles' records
 * first, tile by tile, each tile's in colour runs (no two records of a run
 * share a vertex); then the boundary records, coloured over the whole mesh
 * by the kind's sim_colouring (absolute record indices).
 */
typedef struct sim_tiling {
	uint32_t *first;  /* tiles + 1 entries: tile t owns runs first[t] .. first[t + 1] - 1 */
	uint32_t *run;    /* runs + 1 entries: run r is records run[r] .. run[r + 1] - 1 */
	uint8_t *serial;  /* per run: 1 for a tile's overflow colour (records may share vertices) */
} sim_tiling;

/* A distance constraint |p[a] - p[b]| = rest: stretch edges and shear wings. */
typedef struct sim_dist {
	uint32_t a, b;
	float rest;
} sim_dist;

/*
 * A dihedral bending constraint (Müller et al. 2006, section 4.2 and the
 * appendix): v[0], v[1] the shared edge (p1, p2), v[2], v[3] the wing
 * vertices (p3, p4), rest the rest dihedral angle in [0, pi].
 */
typedef struct sim_bend {
	uint32_t v[4];
	float rest;
} sim_bend;

/* A pinned vertex that follows a collider's rigid motion: its position at
 * t = 0 (rest) is carried by the collider's transform every substep. On a
 * mesh collider it is also bound to the rest pose's skin (skinned = 1),
 * which it follows once the collider deforms (deform.h). */
typedef struct sim_attach {
	uint32_t vertex;
	uint32_t collider;
	float rest[3];
	uint32_t skinned;
	sim_skin skin;
} sim_attach;

/* Colour groups of one constraint kind: colour c spans records
 * [start[c], start[c + 1]). start has colours + 1 entries. */
typedef struct sim_colouring {
	uint32_t *start;
	uint32_t colours;
	int overflow; /* nonzero when the last colour is the serial overflow colour */
} sim_colouring;

/*
 * The physical material's per-record data (compliance.c, xpbd.c), each
 * array parallel to its kind's records (same index, same tiled order):
 * geo_* the rest geometry's factor that turns the fabric's constant into the
 * record's stiffness k_e (compliance.c derives each), stretch_warp the
 * fraction of a stretch edge along the warp (mesh u); kt_* = k_e dt^2 for
 * the current params and substep, kc the stretch edges' compression
 * stiffness times dt^2; lambda_* the XPBD multipliers, reset every substep.
 * bend_rest the signed rest angle of each bending record (bend.c).
 * geo, warp and bend_rest are built at create from the rest shape; the kt, kc and
 * lambda arrays are allocated when the model is first XPBD (at create or
 * set_params, never inside a step).
 */
typedef struct sim_xpbd {
	float *stretch_geo, *stretch_warp, *shear_geo, *bend_geo, *bend_rest;
	float *stretch_kt, *stretch_kc, *stretch_lambda;
	float *shear_kt, *shear_lambda;
	float *bend_kt, *bend_lambda;
	/* The substep length the kt were derived for, and the number of
	 * substeps per frame the step takes (compliance.c, the strategy). */
	double dt;
	uint32_t steps;
	uint32_t iterations;
	/* The mesh-aware schedule's stiffness number at the frame schedule's
	 * step (0 when that schedule is off). */
	double number;
	/* The long-range attachments with their slack (tether.c): the seed's
	 * records, rest times 1 + tether_slack; NULL without pins. */
	sim_dist *lra;
	double tether_slack;
	/* The chain bounds (tether.c): vertex, ancestor 2^j edges up its
	 * shortest path to a pin, geodesic distance; coarse levels first. */
	sim_dist *chain;
	uint32_t chain_count;
} sim_xpbd;

/* A stitch (stitch.c): vertex a tied to (1 - t) b0 + t b1, which started
 * d0 away; lambda is its XPBD multiplier over the substep. */
typedef struct sim_stitch {
	uint32_t a, b0, b1;
	float t, d0, lambda;
} sim_stitch;

/* A soft pin (softpin.c): vertex v pulled towards the fixed point q with
 * stiffness k (N/m); lambda is its XPBD multiplier over the substep. */
typedef struct sim_softpin {
	uint32_t v;
	sim_v3 q;
	float k, lambda;
} sim_softpin;

struct drape_sim {
	drape_sim_params params;
	uint32_t n;     /* vertices */
	uint32_t ntri;  /* triangles */
	uint32_t frame; /* frames solved so far */

	/* Hot state, caller's vertex order. x.w and p.w hold the inverse mass;
	 * v.w is unused (kept at 0). x keeps the start-of-substep positions
	 * until the velocity update, so collision response can use it. */
	sim_vec4 *x;
	sim_vec4 *p;
	sim_vec4 *v;
	/* Start-of-frame copies, restored when a step produces NaN or Inf. */
	sim_vec4 *x_save;
	sim_vec4 *v_save;
	/* Per block of SIM_STRAIN_BLOCK stretch edges, the frame's maximum
	 * strain and strain sum (sim.c, strain()). */
	double *strain_part;
	/* Per-substep external force scratch (wind), newtons; allocated at
	 * create so a step never allocates. */
	sim_vec4 *force;

	/* Triangles (copy of the input) and their rest areas; a rest area of 0
	 * marks a zero-area triangle, kept out of bending and wind. */
	uint32_t *tris;
	float *tri_rest_area;
	/* The wind pass's order (topology.c): tris and tri_rest_area are
	 * permuted so that chunk k is triangles [wind_chunk[k],
	 * wind_chunk[k+1]), and wind_col groups the chunks into colours whose
	 * chunks share no vertex, so that the pass adds each triangle's force
	 * to its vertices on several threads, a chunk per thread at a time,
	 * without two threads adding to one vertex (wind.c). Triangles the
	 * chunks do not cover have no rest area. */
	uint32_t *wind_chunk;
	uint32_t wind_chunks;
	sim_colouring wind_col;

	/* Each kind's records in their tiled layout (sim_tiling above): *_col
	 * colours the boundary records, or every record when there are no
	 * tiles (tiles = 0 with SIM_CREATE_NATURAL). */
	uint32_t tiles;
	uint32_t tile_vertices; /* sim_tile_vertices(n) */
	sim_dist *stretch;
	uint32_t stretch_count;
	sim_colouring stretch_col;
	sim_tiling stretch_tiles;
	sim_dist *shear;
	uint32_t shear_count;
	sim_colouring shear_col;
	sim_tiling shear_tiles;
	sim_bend *bend;
	uint32_t bend_count;
	sim_colouring bend_col;
	sim_tiling bend_tiles;
	/* Long-range attachments (a = free vertex, b = its nearest pinned
	 * vertex along the mesh, rest = that geodesic distance), sorted by a.
	 * Each record writes only its own free vertex (pins have w = 0), so
	 * the whole array is one colour. Built whenever there are pins and
	 * projected when params.long_range asks for it. */
	sim_dist *lra;
	uint32_t lra_count;

	/* Per-projection stiffness k' = 1 - (1 - k)^(1/(substeps*iterations))
	 * and per-substep velocity factor damping^(1/substeps), derived from
	 * params whenever they change. */
	float k_stretch, k_shear, k_bend;
	float damping_substep;

	/* Speed (pool.c, order.c, simd.h). The worker pool is the caller's
	 * (drape_sim_desc.pool, may be NULL) and shared with other sims.
	 * flags are the SIM_CREATE_* bits the sim was built with. Vertices
	 * are stored in a locality order (order.c): internal vertex i is the
	 * caller's vertex order[i], and the caller's vertex j is internal
	 * vertex rank[j]. Every public function takes and returns the
	 * caller's order; x, p, v, tris, the constraint records and
	 * attach[].vertex are internal. Both are NULL when the order is the
	 * caller's (SIM_CREATE_NATURAL). */
	drape_pool *pool;
	uint32_t flags;
	uint32_t *order;
	uint32_t *rank;

	drape_sim_topology topo;

	/* Obstacles, and the pins that follow them (sorted by vertex). */
	sim_collider_set colliders;
	sim_attach *attach;
	uint32_t attach_count;

	/* The XPBD material (model DRAPE_MODEL_XPBD), see sim_xpbd. */
	sim_xpbd xpbd;

	/* Self-collision state, made when params.self_collision is first
	 * switched on (at create or set_params, never inside a step). */
	sim_self *self;

	/* Stitches (stitch.c), in internal vertex numbers. */
	sim_stitch *stitch;
	uint32_t stitch_count;
	float stitch_k, sew_speed;

	/* Soft pins (softpin.c), in internal vertex numbers. */
	sim_softpin *softpin;
	uint32_t softpin_count;

	/* The body's vertices against the cloth's triangles (bodypush.c);
	 * NULL with SIM_CREATE_NO_BODYPUSH. */
	sim_bodypush *bodypush;
	/* The body's edges against the cloth's edges (bodyedge.c); NULL with
	 * SIM_CREATE_NO_BODYPUSH or SIM_CREATE_NO_BODYEDGE. */
	sim_bodyedge *bodyedge;

	/* Tearing (tear.c): what a rebuild of the torn mesh needs, made at
	 * create when params.tear_strain > 0, else NULL. */
	struct sim_tear *tear;
	/* Per-vertex properties (vertexprops.c), internal order, NULL when
	 * not given: collision thickness and friction against colliders;
	 * the smallest stiffness scale (1 without), for the tethers. */
	float *vthick, *vfric;
	float stiffness_min;

	/* Cloth objects (objects.c), NULL with fewer than two: each internal
	 * vertex's object, and obj_pass[a * obj_count + b] = 1 when objects a
	 * and b collide. */
	uint32_t *obj;
	uint8_t *obj_pass;
	uint32_t obj_count;

	/* Welds (weld.c), NULL and 0 without: weld_rep[i] the representative
	 * of internal vertex i (i itself unless i is a follower), the
	 * followers in increasing order, and the first stitch that is a weld
	 * (for errors). */
	uint32_t *weld_rep;
	uint32_t *weld_follower;
	uint32_t weld_count;
	uint32_t weld_first;
};

/* ---- sim.c ---------------------------------------------------------------- */

/*
 * Internal creation switches, never part of the public API: the benchmark
 * and the tests use them to run the plain solver beside the fast one.
 * SIM_CREATE_REFERENCE projects with the scalar kernels serially (in the same
 * colour order as the fast path, so results are bit-identical to it);
 * SIM_CREATE_NATURAL keeps the caller's vertex order and leaves each
 * constraint kind uncoloured, one serial sweep over the records sorted by
 * vertex: with both bits, the plain Gauss-Seidel loop in natural order.
 */
#define SIM_CREATE_REFERENCE 1u
#define SIM_CREATE_NATURAL 2u
/* Under XPBD, take params.substeps substeps of params.iterations
 * iterations each, instead of the default schedule (compliance.c,
 * sim_xpbd_schedule); for the measurements that chose the default. */
#define SIM_CREATE_XPBD_ITERATE 4u
/* Leaves out the body-feature contact (bodypush.c): the solver as it was
 * before issue 19, for the measurements and tests that compare with it. */
#define SIM_CREATE_NO_BODYPUSH 8u
/* Keeps every weld a rigid stitch (weld.c): the solver as it was before
 * welds merged vertices, for the tests that compare with that hinge. */
#define SIM_CREATE_NO_WELD 16u
/* Leaves out only the body's edges against the cloth's edges (bodyedge.c),
 * for the tests and figures that compare with the vertex-face contacts
 * alone. */
#define SIM_CREATE_NO_BODYEDGE 32u
/* Searches the body-feature candidates afresh every substep instead of
 * keeping them across a frame's substeps (bodykeep.c): the reference the
 * kept list gives the same bits as. */
#define SIM_CREATE_BODYPUSH_FRESH 1024u
/* The body edge contact searches every substep for still bodies too,
 * instead of keeping their candidate lists (bodyedge.c): the same bits,
 * for the tests and figures that compare the two. */
#define SIM_CREATE_NO_EDGEKEEP 256u
/* Under XPBD, the mesh-aware schedule (compliance.c) whatever
 * params.schedule says: for the bench and the tests that compare the two
 * schedules on the same parameters. */
#define SIM_CREATE_XPBD_MESH 64u
/* SIM_CREATE_NO_STARTIN leaves a cloth that starts inside a collider to
 * the vertex contact alone, each vertex pushed to its nearest surface
 * (the behaviour before startinside.c; for its tests' A/B). */
#define SIM_CREATE_NO_STARTIN 2048u

drape_err sim_create_ex(const drape_sim_desc *desc, uint32_t flags, drape_sim **out,
			drape_error *err);

/* Bytes the sim holds in its own arrays (vertex state, triangles, constraint
 * records, colours, orders), excluding colliders and self-collision. */
size_t sim_memory_bytes(const drape_sim *sim);

/* k' such that n projections of an isolated constraint remove the fraction k
 * of its error: 1 - (1 - k')^n = k. Computed in double. */
float sim_stiffness(float k, uint32_t n);

/* Tells the self-collision which vertices the stitches join (sim.c). */
drape_err sim_join_stitches(drape_sim *sim, drape_error *err);

/* ---- tear.c --------------------------------------------------------------- */

/*
 * Keeps the created mesh's rest shape, uvs, rest scale, masses and
 * triangles (caller's order) for the rebuilds of a torn mesh; called at the
 * end of create when params.tear_strain > 0, with sim->x still holding the
 * rest shape and the masses. 
 */
drape_err sim_tear_init(drape_sim *sim, const drape_sim_desc *desc, drape_error *err);
void sim_tear_free(drape_sim *sim);
size_t sim_tear_bytes(const drape_sim *sim);
/*
 * At the end of a frame: finds the stretch edges past params.tear_strain
 * (serially, in record order), splits the vertices they separate and
 * rebuilds the sim on the new mesh, keeping positions, velocities,
 * colliders, pins, stitches and the frame counter. Fills the stats' tear
 * fields. On failure (memory) the sim is unchanged.
 */
drape_err sim_tear_frame(drape_sim *sim, drape_sim_stats *stats, drape_error *err);
/* The self-collision's joins of a tearing sim: its stitches' and its split
 * vertices' (tear.c); sim_join_stitches defers to it when sim->tear. */
drape_err sim_tear_joins(drape_sim *sim, drape_error *err);

/* ---- stretch.c ------------------------------------------------------------ */

/* Projects one distance constraint with stiffness k (already k'), splitting
 * the correction by inverse masses (Müller 2006, section 3.3). */
void sim_dist_project(sim_vec4 *restrict p, const sim_dist *c, float k);

/* Projects every record colour by colour, in the fixed colour order. */
void sim_dist_project_all(sim_vec4 *restrict p, const sim_dist *c, const sim_colouring *col,
			  float k);

/*
 * The fast sweeps the step calls: every colour in the fixed colour order,
 * each split into blocks over sim->pool, each block projected SIMD_W records
 * at a time (simd.h); the overflow colour serially. With SIM_CREATE_REFERENCE
 * they fall back to the scalar *_project_all loops. Bit-identical either way.
 */
void sim_dist_solve(const drape_sim *sim, const sim_dist *c, const sim_colouring *col, float k);
/* Records c[0 .. count - 1] of one colour run, as the sweeps do, or
 * serially with the scalar code when `scalar`. */
void sim_dist_range(sim_vec4 *restrict p, const sim_dist *c, uint32_t count, float k, int scalar);
void sim_lra_solve(const drape_sim *sim);
void sim_bend_solve(const drape_sim *sim);

/* Long-range attachment (Kim, Chentanez, Müller, "Long Range Attachments",
 * SCA 2012): the unilateral |p[a] - p[b]| <= rest, moving only p[a]. */
void sim_lra_project_all(sim_vec4 *restrict p, const sim_dist *c, uint32_t count);

/* ---- strainlimit.c -------------------------------------------------------- */

/* The longest an edge may be after the strain-limit pass, as a fraction of
 * its rest length over 1 (Provot 1995 used 10 %; cloth that should not look
 * like rubber wants about 1 %). */
#define SIM_STRAIN_LIMIT 0.01f

/*
 * The strain-limit pass over the stretch edges: each edge longer than
 * smax = 1 + SIM_STRAIN_LIMIT times its rest length is shortened to exactly
 * that, split by inverse masses; shorter edges are untouched. The _solve
 * form runs in colour order over sim->pool with SIMD (scalar and serial with
 * SIM_CREATE_REFERENCE); the scalar loop gives the same bits.
 */
void sim_strain_limit_solve(const drape_sim *sim);
/* The pass's smax: 1 + SIM_STRAIN_LIMIT for PBD, 1 + the tethers' slack
 * (tether.c) for the physical material. */
float sim_strain_limit_bound(const drape_sim *sim);
void sim_strain_limit_project_all(sim_vec4 *restrict p, const sim_dist *c,
				  const sim_colouring *col, float smax);

/* The same pass over records c[0 .. count - 1] of one colour run (serially
 * with the scalar expressions when `scalar`); sweep.c calls it per tile. */
void sim_strain_limit_range(sim_vec4 *restrict p, const sim_dist *c, uint32_t count, float smax,
			    int scalar);

/* ---- topology.c ----------------------------------------------------------- */

/* Vertices per tile for a mesh of n vertices (SIM_TILE_VERTICES, or less
 * for a small mesh: see SIM_SMALL_TILES). */
uint32_t sim_tile_vertices(uint32_t n);

/* ---- sweep.c -------------------------------------------------------------- */

/* The kinds an iteration projects. */
#define SIM_SWEEP_BEND 1u
#define SIM_SWEEP_SHEAR 2u
#define SIM_SWEEP_STRETCH 4u
#define SIM_SWEEP_LRA 8u
#define SIM_SWEEP_LIMIT 16u

/*
 * One iteration of the kinds in `kinds` (SIM_SWEEP_* bits): bend, shear and
 * stretch over every tile's colour runs, tiles split over sim->pool, then
 * over the boundary records colour by colour; then the attachments, and the
 * strain limit, tiles then boundary. The result does not depend on the
 * thread count, and SIM_CREATE_REFERENCE gives the same bits with the
 * scalar kernels.
 */
void sim_sweep(const drape_sim *sim, unsigned kinds);

/* ---- bend.c --------------------------------------------------------------- */

/*
 * Gradient of the dihedral angle phi = acos(n1 . n2) with respect to p1..p4
 * (Müller 2006, appendix: grad_i phi = q_i / sqrt(1 - d^2)). Writes grad[4]
 * and *phi. Returns 0 and leaves grad untouched when the gradient is
 * undefined: a zero-length normal (degenerate triangle) or a flat or fully
 * folded pair, where both q_i and sqrt(1 - d^2) vanish.
 */
int sim_bend_gradient(const sim_v3 p[4], sim_v3 grad[4], float *phi);

/* Projects one bending constraint with stiffness k (already k'). */
void sim_bend_project(sim_vec4 *restrict p, const sim_bend *c, float k);

void sim_bend_project_all(sim_vec4 *restrict p, const sim_bend *c, const sim_colouring *col,
			  float k);

/* Records c[0 .. count - 1] of one colour run: SIMD groups, or the scalar
 * sim_bend_project one by one when `scalar` (same bits either way). */
void sim_bend_range(sim_vec4 *restrict p, const sim_bend *c, uint32_t count, float k, int scalar);

/* Rest dihedral angle of four points, in [0, pi]; pi for a flat pair, and
 * pi also when a triangle is degenerate (the angle is then undefined). */
float sim_bend_rest_angle(sim_v3 p1, sim_v3 p2, sim_v3 p3, sim_v3 p4);

/* ---- compliance.c and xpbd.c: the physical material (XPBD) --------------- */

/* Builds xpbd's rest-geometry factors from sim->x (still the rest pose) and
 * the optional per-vertex uvs (caller's order); DRAPE_ENOMEM on failure. */
drape_err sim_xpbd_build(drape_sim *sim, const float *uvs, drape_error *err);
/* The fraction of an edge along the warp from the uv difference of its
 * ends (du, dv): du^2 / (du^2 + dv^2), or SIM_WARP_NONE when the uvs do
 * not separate its ends, as on a mesh without uvs: such an edge takes the
 * fabric's warp stiffness as it is (isotropic cloth, no grain). */
#define SIM_WARP_NONE (-1.0f)
float sim_warp_fraction(double du, double dv);
/* Allocates the kt, kc and lambda arrays if the model is XPBD and they do
 * not exist yet, then derives kt and kc from sim->params. */
drape_err sim_xpbd_derive(drape_sim *sim, drape_error *err);
/* The records' stiffness for steps of dt seconds (what derive sets for
 * xpbd.dt; the step sets it for shorter steps in a frame it splits, and
 * back, to the same bits). */
void sim_xpbd_rates(drape_sim *sim, double dt);
void sim_xpbd_free(sim_xpbd *X);
/* The XPBD schedule: substeps per frame and iterations per substep for
 * sim->params (compliance.c says why); `number` is the stiffness number
 * at the frame schedule's step, used only by the mesh-aware schedule
 * (0 gives the frame schedule). */
void sim_xpbd_schedule(const drape_sim *sim, double number, uint32_t *steps, uint32_t *iterations);
/* Whether the mesh-aware schedule is on: model XPBD, and params.schedule
 * DRAPE_SCHEDULE_MESH or SIM_CREATE_XPBD_MESH. */
int sim_xpbd_mesh_schedule(const drape_sim *sim);
/* The stiffness number of the mesh at a step dt: a high percentile (95th)
 * over the stretch edges with a free end of k_e dt^2 (w_a + w_b), the
 * edge's stiffness against its vertices' inertia over the step. */
drape_err sim_xpbd_stiffness_number(const drape_sim *sim, double dt, double *out, drape_error *err);
/* Sets every lambda to 0 (the start of a substep). */
void sim_xpbd_reset(const drape_sim *sim);

/* Stitches (stitch.c). validate checks desc's stitch fields; build turns
 * them into internal numbers (`internal` maps a caller's vertex) with their
 * start distances taken from sim->x; project runs once per iteration with
 * `time` the simulated seconds since create at the end of the substep. */
drape_err sim_stitch_validate(const drape_sim_desc *d, drape_error *err);
drape_err sim_stitch_build(drape_sim *sim, const drape_sim_desc *d,
			   uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err);
void sim_stitch_free(drape_sim *sim);
void sim_stitch_reset(drape_sim *sim);
void sim_stitch_project(drape_sim *sim, float dt, float time);
size_t sim_stitch_bytes(const drape_sim *sim);

/* Soft pins (softpin.c). validate checks desc.pin_stiffness; is_soft says
 * whether desc's pin i is soft (its vertex keeps its mass); build takes
 * the targets from sim->x (the start shape); project runs once per
 * iteration. */
drape_err sim_softpin_validate(const drape_sim_desc *d, drape_error *err);
int sim_softpin_is_soft(const drape_sim_desc *d, uint32_t i);
drape_err sim_softpin_build(drape_sim *sim, const drape_sim_desc *d,
			    uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err);
void sim_softpin_free(drape_sim *sim);
void sim_softpin_reset(drape_sim *sim);
void sim_softpin_project(drape_sim *sim, float dt);
size_t sim_softpin_bytes(const drape_sim *sim);

/* Welds (weld.c): a rigid vertex-vertex stitch whose ends are within
 * SIM_WELD_TOLERANCE metres in the start and the rest shape merges them.
 * is_weld says whether desc's stitch i is one; build makes sim->weld_*
 * (`internal` maps a caller's vertex) before the triangles are copied;
 * masses moves the followers' masses to their representatives (after the
 * masses, before the pins); sync copies the representatives' x, p and v to
 * the followers; combine merges a per-vertex array over each class
 * (SIM_WELD_MEAN, _HARMONIC or _MAX; NULL means use src); warp retakes the
 * fabric direction of the stretch edges beside a seam from the uvs. */
#define SIM_WELD_TOLERANCE 1e-4f
#define SIM_WELD_MEAN 0
#define SIM_WELD_HARMONIC 1
#define SIM_WELD_MAX 2
int sim_weld_is_weld(const drape_sim_desc *d, uint32_t i);
/* 1 when internal vertex i is a weld's follower: w = 0 without being a pin
 * (the tethers and the pin counts leave it out). */
static inline int sim_weld_follower(const drape_sim *sim, uint32_t i)
{
	return sim->weld_rep != NULL && sim->weld_rep[i] != i;
}
drape_err sim_weld_build(drape_sim *sim, const drape_sim_desc *d,
			 uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err);
void sim_weld_free(drape_sim *sim);
size_t sim_weld_bytes(const drape_sim *sim);
void sim_weld_masses(drape_sim *sim, const float *inv_mass,
		     uint32_t (*caller)(const drape_sim *, uint32_t));
void sim_weld_sync(drape_sim *sim);

/* Cloth that starts inside a collider (startinside.c): on the input pose,
 * after the first substep's colliders are posed, moves each nearly flat
 * patch of inside vertices out of its collider on one side, x and p by
 * the same amount; thickness is the cloth's (per-vertex ones are read
 * from the sim). Returns the vertices moved. */
uint32_t sim_start_inside(drape_sim *sim, float thickness);
float *sim_weld_combine(const drape_sim *sim, const float *src, uint32_t tuple, int how,
			uint32_t (*caller)(const drape_sim *, uint32_t), int *oom);
drape_err sim_weld_warp(drape_sim *sim, const drape_sim_desc *d,
			uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err);

/* Rest scale (restscale.c): validate checks desc.rest_scale; apply scales
 * the stretch and shear rest lengths (after sim_xpbd_build, before the
 * tethers); `caller` maps an internal vertex to the caller's. */
drape_err sim_rest_scale_validate(const drape_sim_desc *d, drape_error *err);
void sim_rest_scale_apply(drape_sim *sim, const float *scale,
			  uint32_t (*caller)(const drape_sim *, uint32_t));
/* Per-vertex properties (vertexprops.c): validate checks desc's
 * stiffness_scale, vertex_thickness and vertex_friction; the stiffness
 * scale multiplies the XPBD geometric factors (after sim_xpbd_build and
 * before sim_xpbd_derive); build copies thickness and friction in
 * internal order for the colliders. */
drape_err sim_vertex_props_validate(const drape_sim_desc *d, drape_error *err);
void sim_stiffness_scale_apply(drape_sim *sim, const float *scale,
			       uint32_t (*caller)(const drape_sim *, uint32_t));
drape_err sim_vertex_props_build(drape_sim *sim, const drape_sim_desc *d,
				 uint32_t (*caller)(const drape_sim *, uint32_t), drape_error *err);
void sim_vertex_props_free(drape_sim *sim);
size_t sim_vertex_props_bytes(const drape_sim *sim);

/* Cloth objects (objects.c): validate checks desc.objects against the
 * vertices and triangles; build fills sim->obj and obj_pass (nothing for
 * fewer than two objects). */
drape_err sim_objects_validate(const drape_sim_desc *d, drape_error *err);
drape_err sim_objects_build(drape_sim *sim, const drape_sim_desc *d,
			    uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err);
void sim_objects_free(drape_sim *sim);
size_t sim_objects_bytes(const drape_sim *sim);

/* Bytes held by the XPBD arrays. */
size_t sim_xpbd_bytes(const drape_sim *sim);

/* ---- tether.c: long-range attachments of the physical material ------------ */

/* The tethers' allowed strain: SIM_TETHER_SAFETY times the static strain
 * bound (M g + wind) / (k_min n_pins h) of the cloth hanging from its
 * pins, at least 1 %. */
double sim_tether_slack(const drape_sim *sim);
/* Fills xpbd.lra from sim->lra for the current params and masses, and
 * on its first call builds xpbd.chain (sim_tether_build). */
drape_err sim_tether_derive(drape_sim *sim, drape_error *err);
/* Builds xpbd.chain from the tethers (after sim_lra_build). */
drape_err sim_tether_build(drape_sim *sim, drape_error *err);
/* Projects the chain bounds at 1 + the tethers' slack, serially. */
void sim_tether_chain_solve(const drape_sim *sim);
/* Checks the material fields of params (the XPBD ones always, so a bad
 * value is caught before a switch of model); names the field at fault. */
drape_err sim_xpbd_validate(const drape_sim_params *p, drape_error *err);

/* The XPBD distance projection of records c[0 .. count - 1] (one colour
 * run): kt for tension, kc for compression, lambda in and out; SIMD groups,
 * or the scalar expressions one by one when `scalar` (same bits). */
void sim_xdist_range(sim_vec4 *restrict p, const sim_dist *c, const float *kt, const float *kc,
		     float *lam, uint32_t count, int scalar);
/* Every record of a kind colour by colour over sim->pool (the scalar
 * range in order with SIM_CREATE_REFERENCE). */
void sim_xdist_solve(const drape_sim *sim, const sim_dist *c, const sim_colouring *col,
		     const float *kt, const float *kc, float *lam);
/* The bending records the same way (bend.c holds the kernel). */
void sim_bend_xrange(sim_vec4 *restrict p, const sim_bend *c, const float *rest, const float *kt,
		     float *lam, uint32_t count, int scalar);
/* The signed dihedral angle sgn(V) (pi - phi) of four rest points, 0 when
 * flat: the XPBD bending constraint's rest value (bend.c). */
float sim_bend_signed_rest(sim_v3 p1, sim_v3 p2, sim_v3 p3, sim_v3 p4);
void sim_xbend_solve(const drape_sim *sim);

/* ---- wind.c --------------------------------------------------------------- */

/*
 * Aerodynamic drag and lift of every non-degenerate triangle from the
 * relative air velocity, accumulated into force[] (newtons, force[i].w
 * unused), which is cleared first. dt bounds the impulse (see wind.c).
 * Triangles are visited chunk by chunk, colour by colour, each colour's
 * chunks split over sim->pool: the sums are the same whatever the thread
 * count.
 */
void sim_wind_forces(const drape_sim *sim, float dt, sim_vec4 *restrict force);

/* The same forces one triangle at a time with the scalar expressions,
 * serially in chunk order: what the wide arithmetic of sim_wind_forces must
 * reproduce bit for bit (test_sim_speed.c). */
void sim_wind_forces_scalar(const drape_sim *sim, float dt, sim_vec4 *restrict force);

#endif
