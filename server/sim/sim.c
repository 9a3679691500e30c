/*
 * The solver's public entry points: parameters, creation with full input
 * validation, the step (ARCHITECTURE.md, "The solver, in one paragraph"),
 * and state access.
 */
#include "server/sim/deform.h"
#include "server/sim/internal.h"
#include "server/sim/order.h"
#include "server/sim/pool.h"
#include "server/sim/simd.h"
#include "server/sim/topology.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Half-edge ids are triangle * 3 + j in a uint32. */
#define SIM_MAX_TRIANGLES (UINT32_MAX / 3u)

/* Stretch edges per block of the frame's strain statistics (strain()). */
#define SIM_STRAIN_BLOCK 16384u

static uint32_t sim_strain_blocks(const drape_sim *sim)
{
	return (sim->stretch_count + SIM_STRAIN_BLOCK - 1) / SIM_STRAIN_BLOCK;
}

void drape_sim_desc_default(drape_sim_desc *d)
{
	memset(d, 0, sizeof *d);
	drape_sim_params_default(&d->params);
	d->sew_speed = 0.5f;
}

const char *drape_sim_build(void)
{
	return SIMD_NAME;
}

float sim_stiffness(float k, uint32_t n)
{
	if (k >= 1.0f)
		return 1.0f;
	if (k <= 0.0f || n == 0)
		return 0.0f;
	return (float)(1.0 - pow(1.0 - (double)k, 1.0 / (double)n));
}

/* Derives the per-projection stiffness and per-substep damping (PBD), or
 * the XPBD records' stiffness and the damping over its substep, a rate per
 * second so that it does not depend on the frame rate or the substeps. */
static void pbd_rates(drape_sim *sim, uint32_t split)
{
	const drape_sim_params *P = &sim->params;
	uint32_t n = (uint32_t)P->substeps * split * (uint32_t)P->iterations;
	sim->k_stretch = sim_stiffness(P->stretch, n);
	sim->k_shear = sim_stiffness(P->shear, n);
	sim->k_bend = sim_stiffness(P->bend, n);
	sim->damping_substep = (float)pow((double)P->damping, 1.0 / ((double)P->substeps * split));
}

/* The XPBD damping over a step of dt seconds: a rate per second. */
static float xpbd_damping(const drape_sim *sim, double dt)
{
	return (float)exp(-(double)sim->params.damping_rate * dt);
}

static drape_err derive(drape_sim *sim, drape_error *err)
{
	const drape_sim_params *P = &sim->params;
	pbd_rates(sim, 1);
	if (P->model != DRAPE_MODEL_XPBD)
		return DRAPE_OK;
	drape_err rc = sim_xpbd_derive(sim, err);
	if (rc == DRAPE_OK)
		sim->damping_substep = xpbd_damping(sim, sim->xpbd.dt);
	return rc;
}

/*
 * Substeps chosen from the body's motion (docs/animation.md,
 * faster motions): the contact against a moving body is linearised over a
 * substep (deform.c: the side from the start, the plane at the end; the
 * candidates from the start), which holds while the body's surface turns
 * little in a substep. Before a frame, the step measures how far the
 * colliders' surfaces turn over it (sim_colliders_motion) and, when a
 * substep of the schedule would turn them by more than SIM_SPLIT_TURN, takes
 * `split` times the substeps (each of the schedule's iterations) for this
 * frame only, with each substep's stiffness and damping derived for the
 * shorter step as derive() does (PBD: the same stiffness over the frame's
 * projections; XPBD: the compliance over the shorter dt), so the cloth is
 * the same material. The split depends only on the colliders' poses, so it
 * is the same on any thread count and after a resume, and a frame whose
 * body turns less than the bound is solved exactly as without it. A turn
 * past SIM_SPLIT_MAX splits takes SIM_SPLIT_MAX (a body that teleports or
 * spins cannot make a frame take without bound; contact there may then miss,
 * as before); stats->split says what a frame took.
 */
#ifndef SIM_SPLIT_TURN
#define SIM_SPLIT_TURN (4.0 * M_PI / 180.0)
#endif
#define SIM_SPLIT_MAX 8u

static uint32_t motion_split(const drape_sim *sim, uint32_t steps, float *turn_out)
{
	*turn_out = 0.0f;
	if (sim->colliders.count == 0)
		return 1;
	const float turn = sim_colliders_motion(&sim->colliders, (float)sim->frame, (float)sim->frame + 1.0f);
	*turn_out = turn;
	double want = ceil((double)turn / ((double)steps * SIM_SPLIT_TURN));
	if (!(want > 1.0))
		return 1;
	return want > (double)SIM_SPLIT_MAX ? SIM_SPLIT_MAX : (uint32_t)want;
}

/* The stiffness and damping for substeps `split` times shorter than the
 * schedule's (1: what derive() set, to the same bits). */
static void split_rates(drape_sim *sim, uint32_t split)
{
	if (sim->params.model != DRAPE_MODEL_XPBD) {
		pbd_rates(sim, split);
		return;
	}
	const double dt = sim->xpbd.dt / (double)split; /* exact for split 1 */
	sim_xpbd_rates(sim, dt);
	sim->damping_substep = xpbd_damping(sim, dt);
}

static drape_err validate_desc(const drape_sim_desc *d, drape_error *err)
{
	if (d == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "desc: NULL");
	drape_err rc = drape_sim_params_validate(&d->params, err);
	if (rc != DRAPE_OK)
		return rc;
	if (d->vertex_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "vertex_count: 0; a mesh needs vertices");
	if (d->positions == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "positions: NULL with vertex_count %u",
					d->vertex_count);
	if (d->triangle_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"triangle_count: 0; need at least one triangle");
	if (d->triangle_count > SIM_MAX_TRIANGLES)
		return drape_error_setf(err, DRAPE_ELIMIT, "triangle_count: %u > maximum %u",
					d->triangle_count, SIM_MAX_TRIANGLES);
	if (d->triangles == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "triangles: NULL with triangle_count %u",
					d->triangle_count);
	if (d->pin_count > 0 && d->pins == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "pins: NULL with pin_count %u",
					d->pin_count);
	for (uint32_t i = 0; i < d->vertex_count; i++)
		for (int j = 0; j < 3; j++)
			if (!isfinite(d->positions[3 * (size_t)i + j]))
				return drape_error_setf(err, DRAPE_ENONFINITE,
							"positions[%u][%d]: %g is not finite", i, j,
							(double)d->positions[3 * (size_t)i + j]);
	for (uint32_t t = 0; t < d->triangle_count; t++) {
		const uint32_t *v = &d->triangles[3 * (size_t)t];
		for (int j = 0; j < 3; j++)
			if (v[j] >= d->vertex_count)
				return drape_error_setf(err, DRAPE_ERANGE,
							"triangles[%u][%d]: vertex %u >= vertex_count %u",
							t, j, v[j], d->vertex_count);
		if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2])
			return drape_error_setf(err, DRAPE_EINVAL,
						"triangles[%u]: vertex repeated in (%u, %u, %u)", t,
						v[0], v[1], v[2]);
	}
	if (d->inv_mass != NULL)
		for (uint32_t i = 0; i < d->vertex_count; i++)
			if (!(d->inv_mass[i] >= 0.0f) || !isfinite(d->inv_mass[i]))
				return drape_error_setf(err, DRAPE_EINVAL,
							"inv_mass[%u]: %g must be finite and >= 0", i,
							(double)d->inv_mass[i]);
	if (d->uvs != NULL)
		for (uint32_t i = 0; i < d->vertex_count; i++)
			for (int j = 0; j < 2; j++)
				if (!isfinite(d->uvs[2 * (size_t)i + j]))
					return drape_error_setf(err, DRAPE_ENONFINITE,
								"uvs[%u][%d]: %g is not finite", i, j,
								(double)d->uvs[2 * (size_t)i + j]);
	for (uint32_t i = 0; i < d->pin_count; i++)
		if (d->pins[i] >= d->vertex_count)
			return drape_error_setf(err, DRAPE_ERANGE, "pins[%u]: vertex %u >= vertex_count %u",
						i, d->pins[i], d->vertex_count);
	if (d->rest_positions != NULL)
		for (uint32_t i = 0; i < d->vertex_count; i++)
			for (int j = 0; j < 3; j++)
				if (!isfinite(d->rest_positions[3 * (size_t)i + j]))
					return drape_error_setf(
						err, DRAPE_ENONFINITE,
						"rest_positions[%u][%d]: %g is not finite", i, j,
						(double)d->rest_positions[3 * (size_t)i + j]);
	rc = sim_stitch_validate(d, err);
	if (rc == DRAPE_OK)
		rc = sim_rest_scale_validate(d, err);
	if (rc == DRAPE_OK)
		rc = sim_vertex_props_validate(d, err);
	if (rc == DRAPE_OK)
		rc = sim_objects_validate(d, err);
	return rc != DRAPE_OK ? rc : sim_softpin_validate(d, err);
}

void drape_sim_destroy(drape_sim *sim)
{
	if (sim == NULL)
		return;
	free(sim->x);
	free(sim->p);
	free(sim->v);
	free(sim->x_save);
	free(sim->v_save);
	free(sim->strain_part);
	free(sim->force);
	free(sim->tris);
	free(sim->tri_rest_area);
	sim_stitch_free(sim);
	sim_softpin_free(sim);
	sim_vertex_props_free(sim);
	sim_objects_free(sim);
	sim_weld_free(sim);
	free(sim->wind_chunk);
	free(sim->wind_col.start);
	free(sim->stretch);
	free(sim->shear);
	free(sim->bend);
	free(sim->lra);
	free(sim->stretch_col.start);
	free(sim->shear_col.start);
	free(sim->bend_col.start);
	const sim_tiling *tl[3] = {&sim->stretch_tiles, &sim->shear_tiles, &sim->bend_tiles};
	for (int k = 0; k < 3; k++) {
		free(tl[k]->first);
		free(tl[k]->run);
		free(tl[k]->serial);
	}
	sim_colliders_free(&sim->colliders);
	sim_bodypush_free(sim->bodypush);
	sim_bodyedge_free(sim->bodyedge);
	sim_self_destroy(sim->self);
	free(sim->attach);
	free(sim->order);
	free(sim->rank);
	sim_xpbd_free(&sim->xpbd);
	sim_tear_free(sim);
	free(sim);
}

/*
 * Inverse masses when the caller gives none: a vertex carries a third of the
 * area of each triangle around it (Müller 2006 leaves masses to the user;
 * this lumped-area rule is the usual choice for cloth). A vertex with no area
 * (unreferenced, or only in zero-area triangles) gets the mean mass of the
 * others, so it falls like the cloth instead of being infinitely light.
 */
static void area_masses(drape_sim *sim)
{
	const uint32_t n = sim->n;
	for (uint32_t i = 0; i < n; i++)
		sim->x[i].w = 0.0f;
	for (uint32_t t = 0; t < sim->ntri; t++) {
		float m = sim->params.density * sim->tri_rest_area[t] / 3.0f;
		for (int j = 0; j < 3; j++)
			sim->x[sim->tris[3 * t + j]].w += m;
	}
	double total = 0.0;
	uint32_t with_mass = 0;
	for (uint32_t i = 0; i < n; i++)
		if (sim->x[i].w > 0.0f) {
			total += sim->x[i].w;
			with_mass++;
		}
	/* With no area at all, fall back to one square centimetre of cloth. */
	float fallback = with_mass ? (float)(total / with_mass) : sim->params.density * 1e-4f;
	for (uint32_t i = 0; i < n; i++) {
		float m = sim->x[i].w > 0.0f ? sim->x[i].w : fallback;
		sim->x[i].w = 1.0f / m;
	}
}

drape_err drape_sim_create(const drape_sim_desc *desc, drape_sim **out, drape_error *err)
{
	return sim_create_ex(desc, 0, out, err);
}

void drape_sim_set_pool(drape_sim *sim, drape_pool *pool)
{
	sim->pool = pool;
	/* Self-collision collects its candidates on the same pool: it must
	 * never keep one the caller has taken back (and may destroy). */
	if (sim->self != NULL)
		sim_self_set_pool(sim->self, pool);
}

/* The caller's index of internal vertex i, and the internal index of the
 * caller's vertex j (see internal.h, "Speed"). */
static inline uint32_t caller_of(const drape_sim *sim, uint32_t i)
{
	return sim->order ? sim->order[i] : i;
}

static inline uint32_t internal_of(const drape_sim *sim, uint32_t j)
{
	return sim->rank ? sim->rank[j] : j;
}

/* The internal vertex that moves for the caller's vertex j: its weld's
 * representative (weld.c), or its own internal vertex. */
static uint32_t welded_of(const drape_sim *sim, uint32_t j)
{
	uint32_t i = internal_of(sim, j);
	return sim->weld_rep ? sim->weld_rep[i] : i;
}

/* Tells the self-collision which vertices the stitches join (a with b0,
 * and with b1 for an edge point), so that a seam is not pushed open. */
drape_err sim_join_stitches(drape_sim *sim, drape_error *err)
{
	if (sim->tear != NULL)
		return sim_tear_joins(sim, err);
	if (sim->self == NULL || sim->stitch_count == 0)
		return DRAPE_OK;
	uint32_t *pairs = malloc(4 * (size_t)sim->stitch_count * sizeof *pairs);
	if (pairs == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "stitches: out of memory for the joins");
	uint32_t k = 0;
	for (uint32_t i = 0; i < sim->stitch_count; i++) {
		const sim_stitch *s = &sim->stitch[i];
		pairs[2 * k] = s->a;
		pairs[2 * k++ + 1] = s->b0;
		if (s->b1 != s->b0) {
			pairs[2 * k] = s->a;
			pairs[2 * k++ + 1] = s->b1;
		}
	}
	drape_err rc = sim_self_set_joins(sim->self, pairs, k, err);
	free(pairs);
	return rc;
}

drape_err sim_create_ex(const drape_sim_desc *desc, uint32_t flags, drape_sim **out,
			drape_error *err)
{
	if (out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "out: NULL");
	drape_err rc = validate_desc(desc, err);
	if (rc != DRAPE_OK)
		return rc;

	const uint32_t n = desc->vertex_count, nt = desc->triangle_count;
	drape_sim *sim = calloc(1, sizeof *sim);
	if (sim == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "sim: out of memory");
	sim_colliders_init(&sim->colliders);
	sim->colliders.cloth_n = n;
	sim->params = desc->params;
	sim->n = n;
	sim->ntri = nt;
	sim->pool = desc->pool;
	sim->flags = flags;
	size_t vb = (size_t)n * sizeof(sim_vec4);
	sim->x = malloc(vb);
	sim->p = malloc(vb);
	sim->v = calloc(n, sizeof(sim_vec4));
	sim->x_save = malloc(vb);
	sim->v_save = malloc(vb);
	sim->force = calloc(n, sizeof(sim_vec4));
	sim->tris = malloc((size_t)nt * 3 * sizeof *sim->tris);
	sim->tri_rest_area = malloc((size_t)nt * sizeof *sim->tri_rest_area);
	if (!sim->x || !sim->p || !sim->v || !sim->x_save || !sim->v_save || !sim->force ||
	    !sim->tris || !sim->tri_rest_area) {
		drape_sim_destroy(sim);
		return drape_error_setf(err, DRAPE_ENOMEM, "sim: cannot allocate %u vertices", n);
	}
	/* Renumber the vertices along a space-filling curve before any
	 * record is built, so that every record and colour is in the new
	 * numbering and sorted by it. */
	if (!(flags & SIM_CREATE_NATURAL)) {
		sim->order = malloc((size_t)n * sizeof *sim->order);
		sim->rank = malloc((size_t)n * sizeof *sim->rank);
		if (sim->order == NULL || sim->rank == NULL ||
		    sim_order_build(desc->positions, n, sim->order, sim->rank) != DRAPE_OK) {
			drape_sim_destroy(sim);
			return drape_error_setf(err, DRAPE_ENOMEM, "sim: cannot order %u vertices", n);
		}
	}
	/* Everything measured at rest (lengths, angles, areas and masses,
	 * long-range distances, the self-collision's rest neighbourhoods) is
	 * built from the rest shape; the start shape replaces it below. */
	const float *rest = desc->rest_positions ? desc->rest_positions : desc->positions;
	for (uint32_t i = 0; i < n; i++) {
		const float *q = &rest[3 * (size_t)caller_of(sim, i)];
		sim->x[i] = (sim_vec4){q[0], q[1], q[2], 0.0f};
	}
	/* Welded vertices are one particle: the triangles name each weld's
	 * representative, so the topology joins the panels (weld.c). */
	if (!(flags & SIM_CREATE_NO_WELD) && (rc = sim_weld_build(sim, desc, internal_of, err)) != DRAPE_OK) {
		drape_sim_destroy(sim);
		return rc;
	}
	if (sim->weld_count > 0 && desc->params.tear_strain > 0.0f) {
		const drape_stitch *w = &desc->stitches[sim->weld_first];
		drape_sim_destroy(sim);
		return drape_error_setf(err, DRAPE_EINVAL,
					"params.tear_strain: a cloth with welded seams cannot tear "
					"(stitches[%u] welds vertices %u and %u); give the stitches a "
					"stitch_k > 0 or tear the panels unwelded",
					(uint32_t)(w - desc->stitches), w->a, w->b0);
	}
	for (size_t k = 0; k < (size_t)nt * 3; k++)
		sim->tris[k] = welded_of(sim, desc->triangles[k]);

	/* A weld class's per-vertex properties, combined (weld.c says how). */
	int oom[4];
	float *c_rest = sim_weld_combine(sim, desc->rest_scale, 1, SIM_WELD_MEAN, caller_of, &oom[0]);
	float *c_stiff = sim_weld_combine(sim, desc->stiffness_scale, 3, SIM_WELD_HARMONIC, caller_of,
					  &oom[1]);
	float *c_thick = sim_weld_combine(sim, desc->vertex_thickness, 1, SIM_WELD_MAX, caller_of,
					  &oom[2]);
	float *c_fric = sim_weld_combine(sim, desc->vertex_friction, 1, SIM_WELD_MEAN, caller_of,
					 &oom[3]);
	drape_sim_desc wd = *desc;
	wd.rest_scale = c_rest ? c_rest : desc->rest_scale;
	wd.stiffness_scale = c_stiff ? c_stiff : desc->stiffness_scale;
	wd.vertex_thickness = c_thick ? c_thick : desc->vertex_thickness;
	wd.vertex_friction = c_fric ? c_fric : desc->vertex_friction;
	if (oom[0] || oom[1] || oom[2] || oom[3])
		rc = drape_error_setf(err, DRAPE_ENOMEM, "stitches: out of memory for the welds");
	if (rc == DRAPE_OK)
		rc = sim_topology_build(sim, err);
	if (rc == DRAPE_OK)
		rc = sim_xpbd_build(sim, desc->uvs, err);
	if (rc == DRAPE_OK)
		rc = sim_weld_warp(sim, desc, internal_of, err);
	if (rc == DRAPE_OK) {
		sim_rest_scale_apply(sim, wd.rest_scale, caller_of);
		sim_stiffness_scale_apply(sim, wd.stiffness_scale, caller_of);
		rc = sim_vertex_props_build(sim, &wd, caller_of, err);
	}
	free(c_rest);
	free(c_stiff);
	free(c_thick);
	free(c_fric);
	if (rc == DRAPE_OK)
		rc = sim_objects_build(sim, desc, internal_of, err);
	if (rc != DRAPE_OK) {
		drape_sim_destroy(sim);
		return rc;
	}
	/* Followers are in no triangle; the topology counted them as
	 * unreferenced. */
	sim->topo.unreferenced_vertices -= sim->weld_count;
	sim->topo.welds = sim->weld_count;
	if (desc->inv_mass != NULL)
		for (uint32_t i = 0; i < n; i++)
			sim->x[i].w = desc->inv_mass[caller_of(sim, i)];
	else
		area_masses(sim);
	sim_weld_masses(sim, desc->inv_mass, caller_of);
	/* A pinned follower pins its representative. */
	for (uint32_t i = 0; i < desc->pin_count; i++)
		if (!sim_softpin_is_soft(desc, i))
			sim->x[welded_of(sim, desc->pins[i])].w = 0.0f;
	for (uint32_t i = 0; i < n; i++) {
		int follower = sim->weld_rep != NULL && sim->weld_rep[i] != i;
		sim->topo.pinned_vertices += sim->x[i].w == 0.0f && !follower;
		sim->p[i] = sim->x[i];
	}
	rc = sim_lra_build(sim, err);
	if (rc != DRAPE_OK) {
		drape_sim_destroy(sim);
		return rc;
	}
	sim->strain_part = malloc(2 * (size_t)sim_strain_blocks(sim) * sizeof *sim->strain_part + 1);
	if (sim->strain_part == NULL) {
		drape_sim_destroy(sim);
		return drape_error_setf(err, DRAPE_ENOMEM, "sim: out of memory for the strain sums");
	}
	if ((rc = derive(sim, err)) != DRAPE_OK) {
		drape_sim_destroy(sim);
		return rc;
	}
	if (!(flags & SIM_CREATE_NO_BODYPUSH) && (sim->bodypush = sim_bodypush_create(nt)) == NULL) {
		drape_sim_destroy(sim);
		return drape_error_setf(err, DRAPE_ENOMEM, "sim: out of memory for the body contact");
	}
	if (sim->bodypush != NULL && (flags & SIM_CREATE_BODYPUSH_FRESH))
		sim_bodypush_set_keep(sim->bodypush, 0.0f, 0.0f);
	if (!(flags & (SIM_CREATE_NO_BODYPUSH | SIM_CREATE_NO_BODYEDGE)) &&
	    (sim->bodyedge = sim_bodyedge_create(sim->tris, nt)) == NULL) {
		drape_sim_destroy(sim);
		return drape_error_setf(err, DRAPE_ENOMEM, "sim: out of memory for the body edge contact");
	}
	if (sim->bodyedge != NULL && (flags & SIM_CREATE_NO_EDGEKEEP))
		sim_bodyedge_set_keep(sim->bodyedge, 0, 0.0f);
	if (sim->params.self_collision &&
	    (rc = sim_self_create(sim->tris, sim->ntri, sim->n, sim->x, &sim->self, err)) != DRAPE_OK) {
		drape_sim_destroy(sim);
		return rc;
	}
	if (sim->self != NULL) {
		sim_self_set_objects(sim->self, sim->obj, sim->obj_pass, sim->obj_count);
		sim_self_drop_orphans(sim->self, sim->weld_follower, sim->weld_count);
		if ((rc = sim_self_set_thickness(sim->self, sim->vthick, err)) != DRAPE_OK) {
			drape_sim_destroy(sim);
			return rc;
		}
	}
	if (desc->rest_positions != NULL)
		for (uint32_t i = 0; i < n; i++) {
			const float *q = &desc->positions[3 * (size_t)caller_of(sim, i)];
			sim->x[i] = (sim_vec4){q[0], q[1], q[2], sim->x[i].w};
			sim->p[i] = sim->x[i];
		}
	/* Welded vertices start where their representative does, to the bit. */
	sim_weld_sync(sim);
	if ((rc = sim_stitch_build(sim, desc, welded_of, err)) != DRAPE_OK ||
	    (rc = sim_join_stitches(sim, err)) != DRAPE_OK ||
	    (rc = sim_softpin_build(sim, desc, welded_of, err)) != DRAPE_OK ||
	    (sim->params.tear_strain > 0.0f && (rc = sim_tear_init(sim, desc, err)) != DRAPE_OK)) {
		drape_sim_destroy(sim);
		return rc;
	}
	drape_sim_set_pool(sim, sim->pool);
	*out = sim;
	drape_error_clear(err);
	return DRAPE_OK;
}

/*
 * Masses were fixed at create (from params.density when no inv_mass was
 * given); a later density change only moves the wind impulse cap, so that
 * changing parameters between frames never teleports momentum.
 */
drape_err drape_sim_set_params(drape_sim *sim, const drape_sim_params *p, drape_error *err)
{
	drape_err rc = drape_sim_params_validate(p, err);
	if (rc != DRAPE_OK)
		return rc;
	/* Tearing keeps a copy of the created mesh (tear.c), made at create. */
	if (p->tear_strain > 0.0f && sim->tear == NULL)
		return drape_error_setf(err, DRAPE_EINVAL,
					"params.tear_strain: %g: tearing can only be switched on when "
					"the sim is created", (double)p->tear_strain);
	/* The self-collision buffers are sized for the mesh once, the first
	 * time it is switched on; x's rest pose is no longer at hand, so the
	 * hash cell size comes from the current positions. */
	if (p->self_collision && sim->self == NULL) {
		if ((rc = sim_self_create(sim->tris, sim->ntri, sim->n, sim->x, &sim->self, err)) !=
		    DRAPE_OK)
			return rc;
		sim_self_set_objects(sim->self, sim->obj, sim->obj_pass, sim->obj_count);
		sim_self_drop_orphans(sim->self, sim->weld_follower, sim->weld_count);
		if ((rc = sim_self_set_thickness(sim->self, sim->vthick, err)) != DRAPE_OK ||
		    (rc = sim_join_stitches(sim, err)) != DRAPE_OK) {
			sim_self_destroy(sim->self);
			sim->self = NULL;
			return rc;
		}
		drape_sim_set_pool(sim, sim->pool);
	}
	const drape_sim_params old = sim->params;
	sim->params = *p;
	if ((rc = derive(sim, err)) != DRAPE_OK) {
		/* Only the first switch to XPBD allocates, and that failed
		 * before anything was derived: the old parameters stand. */
		sim->params = old;
		derive(sim, NULL);
		return rc;
	}
	return DRAPE_OK;
}

void drape_sim_get_params(const drape_sim *sim, drape_sim_params *p)
{
	*p = sim->params;
}

void drape_sim_get_schedule(const drape_sim *sim, uint32_t *steps, uint32_t *iterations)
{
	const int xpbd = sim->params.model == DRAPE_MODEL_XPBD;
	if (steps != NULL)
		*steps = xpbd ? sim->xpbd.steps : (uint32_t)sim->params.substeps;
	if (iterations != NULL)
		*iterations = xpbd ? sim->xpbd.iterations : (uint32_t)sim->params.iterations;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Prediction (Müller 2006, algorithm 1, lines 5-7): external acceleration
 * is gravity for every free vertex plus w times the wind force. */
typedef struct step_job {
	drape_sim *sim;
	float dt;
} step_job;

/* Vertices per pool block for the per-vertex passes (independent per
 * vertex, so any split gives the same bits). */
#define SIM_VERTEX_BLOCK 4096u

static void predict_range(void *ctx, uint32_t begin, uint32_t end)
{
	const step_job *J = ctx;
	drape_sim *sim = J->sim;
	const float dt = J->dt;
	const sim_vec4 *restrict x = sim->x, *restrict f = sim->force;
	sim_vec4 *restrict v = sim->v, *restrict p = sim->p;
	const float gx = sim->params.gravity[0], gy = sim->params.gravity[1],
		    gz = sim->params.gravity[2];
	const float damp = sim->damping_substep;
	for (uint32_t i = begin; i < end; i++) {
		float w = x[i].w;
		if (w == 0.0f) {
			v[i] = (sim_vec4){0.0f, 0.0f, 0.0f, 0.0f};
			p[i] = x[i];
			continue;
		}
		float vx = (v[i].x + dt * (gx + w * f[i].x)) * damp;
		float vy = (v[i].y + dt * (gy + w * f[i].y)) * damp;
		float vz = (v[i].z + dt * (gz + w * f[i].z)) * damp;
		v[i] = (sim_vec4){vx, vy, vz, 0.0f};
		p[i] = (sim_vec4){x[i].x + dt * vx, x[i].y + dt * vy, x[i].z + dt * vz, w};
	}
}

static void predict(drape_sim *sim, float dt)
{
	step_job job = {sim, dt};
	sim_pool_for(sim->pool, sim->n, SIM_VERTEX_BLOCK, predict_range, &job);
}

/* Velocity update and commit (algorithm 1, lines 12-15). Pinned vertices are
 * left exactly as they are, so they stay bit-identical whatever rounding the
 * projections did to their copies in p. */
static void commit_range(void *ctx, uint32_t begin, uint32_t end)
{
	const step_job *J = ctx;
	const float inv_dt = 1.0f / J->dt;
	sim_vec4 *restrict x = J->sim->x, *restrict v = J->sim->v;
	const sim_vec4 *restrict p = J->sim->p;
	for (uint32_t i = begin; i < end; i++) {
		if (x[i].w == 0.0f)
			continue;
		v[i] = (sim_vec4){(p[i].x - x[i].x) * inv_dt, (p[i].y - x[i].y) * inv_dt,
				  (p[i].z - x[i].z) * inv_dt, 0.0f};
		x[i] = p[i];
	}
}

static void commit(drape_sim *sim, float dt)
{
	step_job job = {sim, dt};
	sim_pool_for(sim->pool, sim->n, SIM_VERTEX_BLOCK, commit_range, &job);
}

/* The start-of-frame copies, block by block on the pool. */
static void save_range(void *ctx, uint32_t begin, uint32_t end)
{
	drape_sim *sim = ctx;
	memcpy(sim->x_save + begin, sim->x + begin, (size_t)(end - begin) * sizeof *sim->x);
	memcpy(sim->v_save + begin, sim->v + begin, (size_t)(end - begin) * sizeof *sim->v);
}

/* The end-of-frame check and statistics also go to the pool: in draped they
 * sit between two frames of a session. The strain's sum is taken over fixed
 * blocks of SIM_STRAIN_BLOCK edges (whatever blocks the pool hands out), and
 * the blocks' sums are added in order, so the mean has the same bits for any
 * thread count; the count and the maximum do not depend on the order. */
typedef struct check_job {
	const drape_sim *sim;
	_Atomic uint32_t bad;
} check_job;

static void nonfinite_range(void *ctx, uint32_t begin, uint32_t end)
{
	check_job *J = ctx;
	uint32_t bad = 0;
	for (uint32_t i = begin; i < end; i++) {
		const sim_vec4 *x = &J->sim->x[i], *v = &J->sim->v[i];
		bad += !(isfinite(x->x) && isfinite(x->y) && isfinite(x->z) && isfinite(v->x) &&
			 isfinite(v->y) && isfinite(v->z));
	}
	if (bad)
		atomic_fetch_add(&J->bad, bad);
}

static uint32_t count_nonfinite(const drape_sim *sim)
{
	check_job job = {sim, 0};
	sim_pool_for(sim->pool, sim->n, SIM_VERTEX_BLOCK, nonfinite_range, &job);
	return atomic_load(&job.bad);
}

static void strain_range(void *ctx, uint32_t begin, uint32_t end)
{
	const drape_sim *sim = ctx;
	for (uint32_t b0 = begin; b0 < end; b0 += SIM_STRAIN_BLOCK) {
		uint32_t b1 = end - b0 > SIM_STRAIN_BLOCK ? b0 + SIM_STRAIN_BLOCK : end;
		float mx = 0.0f;
		double sum = 0.0;
		for (uint32_t i = b0; i < b1; i++) {
			const sim_dist *c = &sim->stretch[i];
			float l = v3_len(v3_sub(v3_of4(sim->x[c->a]), v3_of4(sim->x[c->b])));
			float st = fabsf(l - c->rest) / c->rest;
			mx = st > mx ? st : mx;
			sum += st;
		}
		sim->strain_part[2 * (b0 / SIM_STRAIN_BLOCK)] = mx;
		sim->strain_part[2 * (b0 / SIM_STRAIN_BLOCK) + 1] = sum;
	}
}

static void strain(const drape_sim *sim, float *max_out, float *mean_out)
{
	sim_pool_for(sim->pool, sim->stretch_count, SIM_STRAIN_BLOCK, strain_range, (void *)sim);
	float mx = 0.0f;
	double sum = 0.0;
	for (uint32_t k = 0; k < sim_strain_blocks(sim); k++) {
		mx = (float)sim->strain_part[2 * k] > mx ? (float)sim->strain_part[2 * k] : mx;
		sum += sim->strain_part[2 * k + 1];
	}
	*max_out = mx;
	*mean_out = sim->stretch_count ? (float)(sum / sim->stretch_count) : 0.0f;
}

/* Places every attached pin where its collider carries it at the end of the
 * substep, so the constraints of this substep pull the cloth along. */
static void move_attached(drape_sim *sim)
{
	for (uint32_t a = 0; a < sim->attach_count; a++) {
		const sim_attach *at = &sim->attach[a];
		float q[3];
		sim_colliders_follow(&sim->colliders, at->collider, at->rest,
				     at->skinned ? &at->skin : NULL, q);
		sim->p[at->vertex] = (sim_vec4){q[0], q[1], q[2], 0.0f};
	}
}

drape_err drape_sim_step(drape_sim *sim, drape_sim_stats *stats, drape_error *err)
{
	double t0 = now_ms();
	const drape_sim_params *P = &sim->params;
	const uint32_t n = sim->n;
	const int xpbd = P->model == DRAPE_MODEL_XPBD;
	/* XPBD's schedule (compliance.c) may split the frame into more
	 * substeps than params.substeps; PBD takes what it is given. */
	const int32_t steps = xpbd ? (int32_t)sim->xpbd.steps : P->substeps;
	float turn;
	const uint32_t split = motion_split(sim, (uint32_t)steps, &turn);
	const int32_t substeps = steps * (int32_t)split;
	if (split > 1)
		split_rates(sim, split);
	const int32_t iterations = xpbd ? (int32_t)sim->xpbd.iterations : P->iterations;
	const float dt = (float)(1.0 / ((double)P->fps * (double)substeps));
	/* long_range -1 means on whenever there are pins; lra_count is 0
	 * without pins. Under XPBD the tethers carry the slack of tether.c,
	 * beyond any strain the material reaches, so they leave its elastic
	 * stretch alone. */
	const int lra = P->long_range != 0 && sim->lra_count > 0;
	/* The 1 % strain limit comes with the tethers, for cloth asked to be
	 * inextensible: a stretch stiffness below 1 asks for cloth that
	 * stretches, which the limit would overrule. The physical material's
	 * limit is its tethers' slack (tether.c). */
	const int limit = lra && (xpbd || P->stretch >= 1.0f);
	/* A kind with stiffness 0 would only add zero corrections, so its
	 * sweep is skipped. */
	const int has_bend = xpbd ? P->bend_k > 0.0f : sim->k_bend > 0.0f;
	const int has_shear = xpbd ? P->shear_k > 0.0f : sim->k_shear > 0.0f;
	const int has_stretch = xpbd ? 1 : sim->k_stretch > 0.0f;
	const unsigned kinds = (has_bend ? SIM_SWEEP_BEND : 0u) | (has_shear ? SIM_SWEEP_SHEAR : 0u) |
			       (has_stretch ? SIM_SWEEP_STRETCH : 0u) | (lra ? SIM_SWEEP_LRA : 0u) |
			       (limit ? SIM_SWEEP_LIMIT : 0u);
	double collide_ms = 0.0, self_ms = 0.0;
	uint32_t contacts = 0;
	/* Self-collision keeps its own thickness when one is set; else each
	 * vertex's own when the cloth has them (selfthick.c: every pair
	 * then keeps the mean of its sides', and sth, what sizes the search,
	 * is the largest), else the cloth's. */
	const int selfc = P->self_collision && sim->self != NULL;
	float vmax = 0.0f;
	const int per_vertex = selfc && !(P->self_thickness > 0.0f) &&
			       sim_self_vertex_thickness(sim->self, &vmax);
	const float sth = P->self_thickness > 0.0f ? P->self_thickness
						   : (per_vertex ? vmax : P->thickness);
	if (selfc)
		sim_self_use_vertex_thickness(sim->self, per_vertex);
	sim_pool_for(sim->pool, n, SIM_VERTEX_BLOCK, save_range, sim);
	if (selfc)
		sim_self_begin_frame(sim->self);

	for (int32_t s = 0; s < substeps; s++) {
		sim_wind_forces(sim, dt, sim->force);
		predict(sim, dt);
		/* XPBD's multipliers start from 0 every substep (Macklin et
		 * al. 2016, algorithm 1). */
		if (xpbd)
			sim_xpbd_reset(sim);
		sim_stitch_reset(sim);
		sim_softpin_reset(sim);
		const float t_end = (float)(((double)sim->frame + (double)(s + 1) / substeps) /
					    (double)P->fps);
		if (sim->colliders.count > 0) {
			double tc = now_ms();
			float f0 = (float)sim->frame, S = (float)substeps;
			sim_colliders_begin_substep(&sim->colliders, f0 + (float)s / S,
						    f0 + (float)(s + 1) / S);
			move_attached(sim);
			/* The input pose's inside patches leave on one side each,
			 * before any contact pushes them (startinside.c). */
			if (sim->frame == 0 && s == 0 && !(sim->flags & SIM_CREATE_NO_STARTIN))
				sim_start_inside(sim, P->thickness);
			sim_colliders_begin_contacts(&sim->colliders, sim->x, sim->p, n, P->thickness,
						     sim->pool);
			if (sim->bodypush != NULL)
				sim_bodypush_begin(sim->bodypush, &sim->colliders, sim->tris, sim->ntri,
						   sim->x, sim->p, P->thickness, s == 0, sim->pool);
			if (sim->bodyedge != NULL)
				sim_bodyedge_begin(sim->bodyedge, &sim->colliders, sim->x, sim->p,
						   P->thickness, s == 0, sim->pool);
			collide_ms += now_ms() - tc;
		}
		if (selfc) {
			double tc = now_ms();
			sim_self_begin_substep(sim->self, sim->x, sim->p, sth);
			self_ms += now_ms() - tc;
		}
		for (int32_t it = 0; it < iterations; it++) {
			/* Order of increasing strictness (ARCHITECTURE.md), with
			 * stretch after bend and shear: their wing-distance and
			 * dihedral corrections lengthen edges, and the edges'
			 * length is what must hold at the end of the sweep. Then
			 * the long-range tethers (the global bound on stretching)
			 * and the strain limit (the local one: the tethers pull
			 * a vertex towards its pin, which at a bend in the cloth
			 * lengthens the edge below it; strainlimit.c has the
			 * figures). sim_sweep keeps that order within each tile
			 * and then on the tiles' boundaries (sweep.c). */
			sim_sweep(sim, kinds);
			if (sim->stitch_count > 0)
				sim_stitch_project(sim, dt, t_end);
			if (sim->softpin_count > 0)
				sim_softpin_project(sim, dt);
			/* Self-collision before obstacles: the obstacles are the
			 * strictest constraint, so no self push is left to shove a
			 * bottom layer into the ground. */
			if (selfc) {
				double tc = now_ms();
				sim_self_project(sim->self, sim->p, sim->x, sth, P->self_friction);
				self_ms += now_ms() - tc;
			}
			if (sim->colliders.count > 0) {
				double tc = now_ms();
				/* The body's features against the cloth's faces first
				 * (bodypush.c), then the body's ridges against
				 * the cloth's edges (bodyedge.c), then the cloth's
				 * vertices against the body: where they disagree (cloth
				 * pinched in a closing crease) the vertex contact has
				 * the last word and no cloth vertex ends inside. The
				 * edge pass follows the face pass because a face push
				 * moves whole triangles by what a vertex lacks, and the
				 * edge pass then corrects the edges those moves left
				 * under a crest. Each pass runs the tiles' pairs on
				 * the pool, then the pairs across tiles (bodysched.h). */
				uint32_t c = 0;
				if (sim->bodypush != NULL)
					c = sim_bodypush_project(sim->bodypush, sim->p, sim->x, n,
								 sim->pool);
				if (sim->bodyedge != NULL)
					c += sim_bodyedge_project(sim->bodyedge, sim->p, sim->x, n,
								  sim->pool);
				c += sim_colliders_project_pool(&sim->colliders, sim->p, sim->x, n,
								P->thickness, sim->pool);
				/* The first iteration pushes most contacts out, so
				 * the most found in any iteration of the last
				 * substep is the figure reported. */
				if (it == 0 || c > contacts)
					contacts = c;
				collide_ms += now_ms() - tc;
			}
		}
		if (selfc) {
			/* The swept guard needs x at the start of the substep. */
			double tc = now_ms();
			sim_self_end_substep(sim->self, sim->p, sim->x, sth);
			self_ms += now_ms() - tc;
		}
		commit(sim, dt);
		/* commit() leaves w = 0 vertices alone; attached pins moved. */
		for (uint32_t a = 0; a < sim->attach_count; a++)
			sim->x[sim->attach[a].vertex] = sim->p[sim->attach[a].vertex];
		/* Welded vertices move with their representative (weld.c). */
		sim_weld_sync(sim);
	}

	if (split > 1)
		split_rates(sim, 1);

	uint32_t bad = count_nonfinite(sim);
	if (bad) {
		memcpy(sim->x, sim->x_save, (size_t)n * sizeof *sim->x);
		memcpy(sim->v, sim->v_save, (size_t)n * sizeof *sim->v);
		if (stats != NULL) {
			memset(stats, 0, sizeof *stats);
			stats->frame = sim->frame;
			stats->nonfinite = bad;
			stats->solve_ms = now_ms() - t0;
		}
		return drape_error_setf(err, DRAPE_ENONFINITE,
					"step: %u vertices became NaN or Inf in frame %u; state kept",
					bad, sim->frame + 1);
	}
	/* Edges past the tear threshold split the mesh (tear.c); the frame's
	 * positions are the torn mesh's. Without tearing this does nothing. */
	drape_sim_stats tear_stats;
	if (sim->tear != NULL) {
		drape_err trc = sim_tear_frame(sim, &tear_stats, err);
		if (trc != DRAPE_OK) {
			memcpy(sim->x, sim->x_save, (size_t)n * sizeof *sim->x);
			memcpy(sim->v, sim->v_save, (size_t)n * sizeof *sim->v);
			if (stats != NULL) {
				memset(stats, 0, sizeof *stats);
				stats->frame = sim->frame;
				stats->solve_ms = now_ms() - t0;
			}
			return trc;
		}
	}
	sim->frame++;
	if (stats != NULL) {
		memset(stats, 0, sizeof *stats);
		if (sim->tear != NULL) {
			stats->torn_edges = tear_stats.torn_edges;
			stats->split_vertices = tear_stats.split_vertices;
			stats->topology = tear_stats.topology;
			stats->tear_ms = tear_stats.tear_ms;
		}
		stats->frame = sim->frame;
		strain(sim, &stats->max_strain, &stats->mean_strain);
		stats->projections =
			(uint64_t)substeps * (uint64_t)iterations *
			((has_stretch ? (uint64_t)sim->stretch_count : 0) +
			 (has_shear ? (uint64_t)sim->shear_count : 0) +
			 (has_bend ? (uint64_t)sim->bend_count : 0) +
			 (lra ? (uint64_t)sim->lra_count : 0) + (limit ? (uint64_t)sim->stretch_count : 0));
		stats->collide_ms = collide_ms;
		stats->contacts = contacts;
		stats->self_ms = self_ms;
		stats->self_pairs = selfc ? sim_self_pair_count(sim->self) : 0;
		stats->split = split;
		stats->substeps = (uint32_t)substeps;
		stats->body_turn = turn;
		stats->solve_ms = now_ms() - t0;
	}
	return DRAPE_OK;
}

uint32_t drape_sim_vertex_count(const drape_sim *sim)
{
	return sim->n;
}

uint32_t drape_sim_triangle_count(const drape_sim *sim)
{
	return sim->ntri;
}

uint32_t drape_sim_frame(const drape_sim *sim)
{
	return sim->frame;
}

void drape_sim_get_topology(const drape_sim *sim, drape_sim_topology *t)
{
	*t = sim->topo;
}

/* Copies a vec4 array out as xyz in the caller's order. Walking the
 * caller's order keeps the 12-byte stores sequential (the scattered side is
 * the loads, which overlap); the vertex blocks go to the pool, since this
 * runs between two of draped's frames, on the session's critical path. */
typedef struct copy_out_job {
	const drape_sim *sim;
	const sim_vec4 *src;
	float *xyz;
} copy_out_job;

static void copy_out_range(void *ctx, uint32_t begin, uint32_t end)
{
	const copy_out_job *J = ctx;
	const sim_vec4 *restrict src = J->src;
	float *restrict q = J->xyz + 3 * (size_t)begin;
	for (uint32_t j = begin; j < end; j++, q += 3) {
		const sim_vec4 a = src[internal_of(J->sim, j)];
		q[0] = a.x;
		q[1] = a.y;
		q[2] = a.z;
	}
}

static void copy_out(const drape_sim *sim, const sim_vec4 *src, float *xyz)
{
	copy_out_job job = {sim, src, xyz};
	sim_pool_for(sim->pool, sim->n, SIM_VERTEX_BLOCK, copy_out_range, &job);
}

void drape_sim_get_positions(const drape_sim *sim, float *xyz)
{
	copy_out(sim, sim->x, xyz);
}

void drape_sim_get_state(const drape_sim *sim, float *xyz, float *vel, uint32_t *frame)
{
	if (xyz != NULL)
		copy_out(sim, sim->x, xyz);
	if (vel != NULL)
		copy_out(sim, sim->v, vel);
	if (frame != NULL)
		*frame = sim->frame;
}

drape_err drape_sim_set_state(drape_sim *sim, const float *xyz, const float *vel, uint32_t frame,
			      drape_error *err)
{
	if (xyz == NULL || vel == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: NULL", xyz == NULL ? "xyz" : "vel");
	for (size_t i = 0; i < 3 * (size_t)sim->n; i++) {
		if (!isfinite(xyz[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE, "xyz[%zu][%zu]: %g is not finite",
						i / 3, i % 3, (double)xyz[i]);
		if (!isfinite(vel[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE, "vel[%zu][%zu]: %g is not finite",
						i / 3, i % 3, (double)vel[i]);
	}
	for (uint32_t i = 0; i < sim->n; i++) {
		size_t j = 3 * (size_t)caller_of(sim, i);
		sim->x[i].x = xyz[j];
		sim->x[i].y = xyz[j + 1];
		sim->x[i].z = xyz[j + 2];
		/* A pinned vertex has no velocity (predict() zeroes it anyway). */
		float w = sim->x[i].w;
		sim->v[i] = w == 0.0f ? (sim_vec4){0.0f, 0.0f, 0.0f, 0.0f}
				      : (sim_vec4){vel[j], vel[j + 1], vel[j + 2], 0.0f};
	}
	/* A weld is one particle: its followers take the representative's
	 * state, whatever the caller gave them. */
	sim_weld_sync(sim);
	sim->frame = frame;
	return DRAPE_OK;
}

size_t sim_memory_bytes(const drape_sim *sim)
{
	size_t b = sizeof *sim;
	b += 6 * (size_t)sim->n * sizeof(sim_vec4); /* x, p, v, x_save, v_save, force */
	b += 2 * (size_t)sim_strain_blocks(sim) * sizeof *sim->strain_part;
	b += (size_t)sim->ntri * (3 * sizeof *sim->tris + sizeof *sim->tri_rest_area);
	b += ((size_t)sim->wind_chunks + 1) * sizeof *sim->wind_chunk;
	b += ((size_t)sim->stretch_count + sim->shear_count + sim->lra_count) * sizeof(sim_dist);
	b += (size_t)sim->bend_count * sizeof(sim_bend);
	b += 4 * (SIM_MAX_COLOURS + 1) * sizeof(uint32_t);
	/* The tilings: first, run and serial per kind. */
	const sim_tiling *tl[3] = {&sim->stretch_tiles, &sim->shear_tiles, &sim->bend_tiles};
	for (int k = 0; k < 3; k++)
		if (tl[k]->first != NULL) {
			size_t runs = tl[k]->first[sim->tiles];
			b += ((size_t)sim->tiles + 1 + runs + 1) * sizeof(uint32_t) + runs;
		}
	b += (sim->order ? 2 * (size_t)sim->n * sizeof(uint32_t) : 0);
	b += (size_t)sim->attach_count * sizeof(sim_attach);
	b += sim_xpbd_bytes(sim);
	b += sim_stitch_bytes(sim);
	b += sim_softpin_bytes(sim);
	b += sim_bodypush_bytes(sim->bodypush);
	b += sim_bodyedge_bytes(sim->bodyedge);
	b += sim_tear_bytes(sim);
	b += sim_vertex_props_bytes(sim);
	b += sim_objects_bytes(sim);
	b += sim_weld_bytes(sim);
	return b;
}

/* ---- Colliders: thin wrappers over collider.h ------------------------------ */

float drape_sim_collider_voxel_size(const drape_sim *sim, const drape_collider_desc *d)
{
	if (d->voxel_size != 0.0f)
		return d->voxel_size;
	if (d->shape != DRAPE_SHAPE_MESH || d->vertices == NULL || d->vertex_count == 0)
		return 0.0f;
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = 0; i < d->vertex_count; i++)
		for (int k = 0; k < 3; k++) {
			float c = d->vertices[3 * (size_t)i + k];
			lo[k] = c < lo[k] ? c : lo[k];
			hi[k] = c > hi[k] ? c : hi[k];
		}
	double dx = (double)hi[0] - lo[0], dy = (double)hi[1] - lo[1], dz = (double)hi[2] - lo[2];
	double diag = sqrt(dx * dx + dy * dy + dz * dz);
	if (!(diag > 0.0) || !isfinite(diag))
		return 0.0f;
	/* Two voxels across the cloth's thickness keep the trilinear surface
	 * within a fraction of it; the bounds keep a tiny thickness from asking
	 * for a billion voxels and a thick one from blurring the shape. */
	double v = 2.0 * (double)sim->params.thickness;
	v = fmax(v, diag / 1024.0);
	v = fmin(v, diag / 128.0);
	/* Coarsen until the field fits the voxel cap, by the same bound the
	 * builder checks (sdf_vdb.cc): the dense box grown by the band. */
	double cap = d->max_voxels ? (double)d->max_voxels : (double)DRAPE_SDF_DEFAULT_MAX_VOXELS;
	double ext[3] = {dx, dy, dz};
	for (int guard = 0; guard < 200; guard++) {
		double bw = fmax(3.0, ceil(sim_collider_band(d) / v - 1e-6)), n = 1.0;
		for (int k = 0; k < 3; k++)
			n *= floor(ext[k] / v) + 2.0 * bw + 2.0;
		if (n <= cap)
			break;
		v *= 1.25;
	}
	return (float)v;
}

/* The voxel size left at 0 means "choose"; choose here, where the cloth
 * thickness is known, and let the field builder coarsen it under the cap. */
static drape_collider_desc with_voxel_size(const drape_sim *sim, const drape_collider_desc *d)
{
	drape_collider_desc c = *d;
	if (c.shape == DRAPE_SHAPE_MESH && c.sdf == NULL && c.voxel_size == 0.0f)
		c.voxel_size = drape_sim_collider_voxel_size(sim, d);
	return c;
}

drape_err drape_sim_build_collider_sdf(const drape_sim *sim, const drape_collider_desc *d,
				       drape_sdf **out, drape_error *err)
{
	drape_collider_desc c = with_voxel_size(sim, d);
	return sim_collider_build_sdf(&c, out, err);
}

drape_err drape_sim_add_collider(drape_sim *sim, const drape_collider_desc *d, uint32_t *index,
				 drape_error *err)
{
	drape_collider_desc c = with_voxel_size(sim, d);
	uint32_t at;
	drape_err rc = sim_colliders_add(&sim->colliders, &c, &at, err);
	if (rc != DRAPE_OK)
		return rc;
	/* The body contact's scratch grows with the largest body, here and
	 * never inside a step; without it the collider is not kept. */
	if ((sim->bodypush != NULL &&
	     (rc = sim_bodypush_reserve(sim->bodypush, &sim->colliders, err)) != DRAPE_OK) ||
	    (sim->bodyedge != NULL &&
	     (rc = sim_bodyedge_reserve(sim->bodyedge, &sim->colliders, err)) != DRAPE_OK)) {
		sim_colliders_remove(&sim->colliders, at, NULL);
		return rc;
	}
	if (index != NULL)
		*index = at;
	return DRAPE_OK;
}

/*
 * Pins attached to the removed collider stay pinned where they are; pins of
 * later colliders follow the shifted indices.
 */
drape_err drape_sim_remove_collider(drape_sim *sim, uint32_t index, drape_error *err)
{
	drape_err rc = sim_colliders_remove(&sim->colliders, index, err);
	if (rc != DRAPE_OK)
		return rc;
	uint32_t kept = 0;
	for (uint32_t a = 0; a < sim->attach_count; a++) {
		sim_attach at = sim->attach[a];
		if (at.collider == index)
			continue;
		if (at.collider > index)
			at.collider--;
		sim->attach[kept++] = at;
	}
	sim->attach_count = kept;
	/* The later colliders moved down a slot: their edge lists follow
	 * now rather than inside the next step (out of memory here leaves
	 * that to the step, which then builds them). */
	if (sim->bodyedge != NULL)
		sim_bodyedge_reserve(sim->bodyedge, &sim->colliders, NULL);
	return DRAPE_OK;
}

drape_err drape_sim_set_keyframes(drape_sim *sim, uint32_t index, const drape_keyframe *keys,
				  uint32_t count, drape_error *err)
{
	return sim_colliders_set_keyframes(&sim->colliders, index, keys, count, err);
}

drape_err drape_sim_update_collider_mesh(drape_sim *sim, uint32_t index, const float *vertices,
					 uint32_t vertex_count, drape_error *err)
{
	return sim_colliders_update_mesh(&sim->colliders, index, vertices, vertex_count, err);
}

drape_err drape_sim_set_collider_sdf(drape_sim *sim, uint32_t index, drape_sdf *sdf,
				     drape_error *err)
{
	return sim_colliders_set_sdf(&sim->colliders, index, sdf, err);
}

uint32_t drape_sim_collider_count(const drape_sim *sim)
{
	return sim->colliders.count;
}

/* Orders attachments by vertex, newest first among equal vertices (seq is
 * the order they were given in, higher = newer), so a dedupe pass that keeps
 * the first of each vertex keeps the newest attachment. */
typedef struct attach_sort {
	sim_attach at;
	uint32_t seq;
} attach_sort;

static int attach_cmp(const void *pa, const void *pb)
{
	const attach_sort *a = pa, *b = pb;
	if (a->at.vertex != b->at.vertex)
		return (a->at.vertex > b->at.vertex) - (a->at.vertex < b->at.vertex);
	return (a->seq < b->seq) - (a->seq > b->seq);
}

/*
 * The rest position of an attached pin is its position at t = 0, which is
 * where it is now only before the first frame; attaching later would need the
 * inverse of the collider's current transform, and a pipeline attaches pins
 * when it builds the scene, so later attachment is refused.
 */
drape_err drape_sim_attach_pins(drape_sim *sim, const uint32_t *vertices, uint32_t count,
				uint32_t index, drape_error *err)
{
	if (index >= sim->colliders.count)
		return drape_error_setf(err, DRAPE_ERANGE, "pins.attach.collider: %u >= collider count %u",
					index, sim->colliders.count);
	if (sim->frame != 0)
		return drape_error_setf(err, DRAPE_ESTATE,
					"pins.attach: pins can only be attached before the first frame "
					"(the session is at frame %u)", sim->frame);
	if (count == 0 || vertices == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "pins.attach.vertices: empty");
	for (uint32_t i = 0; i < count; i++) {
		if (vertices[i] >= sim->n)
			return drape_error_setf(err, DRAPE_ERANGE,
						"pins.attach.vertices[%u]: %u >= vertex count %u", i,
						vertices[i], sim->n);
		if (sim->x[welded_of(sim, vertices[i])].w != 0.0f)
			return drape_error_setf(err, DRAPE_EINVAL,
						"pins.attach.vertices[%u]: vertex %u is not pinned", i,
						vertices[i]);
	}
	/* Earlier attachments of the same vertices are replaced: sort old and
	 * new together in O(m log m) and keep the newest of each vertex. */
	size_t total = (size_t)sim->attach_count + count;
	attach_sort *tmp = malloc(total * sizeof *tmp);
	sim_attach *all = malloc(total * sizeof *all);
	if (tmp == NULL || all == NULL) {
		free(tmp);
		free(all);
		return drape_error_setf(err, DRAPE_ENOMEM, "pins.attach: out of memory");
	}
	for (uint32_t a = 0; a < sim->attach_count; a++)
		tmp[a] = (attach_sort){sim->attach[a], a};
	/* attach[].vertex is internal (the step indexes p with it). */
	for (uint32_t i = 0; i < count; i++) {
		/* A welded vertex attaches its weld's representative. */
		uint32_t vi = welded_of(sim, vertices[i]);
		const sim_vec4 *x = &sim->x[vi];
		sim_attach at = {vi, index, {x->x, x->y, x->z}, 0, {0, {0, 0, 0}, {0, 0, 0}}};
		/* Bound to the skin too, so the pin follows if the collider
		 * deforms now or later (sim_colliders_append_frames). */
		at.skinned = (uint32_t)sim_colliders_bind_skin(&sim->colliders, index, at.rest, &at.skin);
		tmp[sim->attach_count + i] = (attach_sort){at, sim->attach_count + i};
	}
	qsort(tmp, total, sizeof *tmp, attach_cmp);
	uint32_t m = 0;
	for (size_t k = 0; k < total; k++)
		if (m == 0 || all[m - 1].vertex != tmp[k].at.vertex)
			all[m++] = tmp[k].at;
	free(tmp);
	free(sim->attach);
	sim->attach = all;
	sim->attach_count = m;
	return DRAPE_OK;
}

drape_err drape_sim_append_collider_frames(drape_sim *sim, uint32_t index, const float *frames,
					   uint32_t count, drape_error *err)
{
	return sim_colliders_append_frames(&sim->colliders, index, frames, count, err);
}

drape_collider_kind drape_sim_collider_kind(const drape_sim *sim, uint32_t index)
{
	return sim_colliders_kind(&sim->colliders, index);
}

const char *drape_collider_kind_name(drape_collider_kind kind)
{
	switch (kind) {
	case DRAPE_COLLIDER_SHAPE:
		return "shape";
	case DRAPE_COLLIDER_FIELD:
		return "field";
	case DRAPE_COLLIDER_SURFACE:
		return "surface";
	default:
		return "none";
	}
}

uint32_t drape_sim_collider_frame_count(const drape_sim *sim, uint32_t index)
{
	return sim_colliders_frame_count(&sim->colliders, index);
}

uint64_t drape_sim_deform_bytes(uint32_t vertex_count, uint32_t triangle_count, uint32_t frame_count,
				uint32_t cloth_vertices)
{
	return sim_deform_bytes(vertex_count, triangle_count, frame_count, cloth_vertices);
}

void drape_sim_tangle(drape_sim *sim, uint64_t *pairs, uint32_t *released)
{
	uint64_t p = 0;
	uint32_t r = 0;
	if (sim != NULL && sim->self != NULL) {
		sim_self_tangle_check(sim->self, sim->x);
		sim_self_tangle_counts(sim->self, &p, &r, NULL, NULL);
	}
	if (pairs != NULL)
		*pairs = p;
	if (released != NULL)
		*released = r;
}
