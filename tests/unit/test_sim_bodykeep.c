/*
 * The body-feature candidates kept across substeps (server/sim/bodykeep.c)
 * against the fresh search they replace (SIM_CREATE_BODYPUSH_FRESH, or a
 * margin of 0): two contacts are driven with the very same cloth and body,
 * substep by substep, and their pair lists must be equal pair by pair,
 * byte for byte and in the same order, over a still body, a body moving
 * rigidly and a deforming one, under a cloth that slides and waves. A
 * drift budget four times the proven one must lose pairs, so the
 * comparison can fail. A body moving further in a substep than the
 * bound allows gets no list, and one within it still does (test_outrun).
 * Then whole runs, the deforming spikes and the demo
 * garment (examples/garment.json's meshes), must give the same bits with
 * the list kept or not, on 1, 2 and 3 threads. And the parallel search
 * (the body's vertices and ridges in fixed chunks on the pool) must give
 * the same pair lists on 1, 2 and 3 threads, substep by substep.
 *
 * Run from the repository root (tests/run.sh does); the garment's meshes
 * are read from tests/data/meshes. DRAPE_BODYKEEP_FRAMES sets the
 * garment's frames (default 3).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/bodykeep.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"
#include "tests/unit/sim_fixtures.h"

/* ---- A bed of spikes ------------------------------------------------------------ */

#define SPIKES 3 /* per side */
#define CONE_SEG 8

typedef struct bed {
	float v[3 * SPIKES * SPIKES * (CONE_SEG + 2)];
	uint32_t t[3 * SPIKES * SPIKES * 2 * CONE_SEG];
	uint32_t nv, nt;
} bed;

/* SPIKES x SPIKES cones 10 cm apart about the origin, apexes at y = top +
 * a few millimetres each (so the cloth meets them at different times), a
 * ring of radius r at top - 0.1, triangles wound outward. */
static void bed_make(bed *m, float top, float r)
{
	m->nv = m->nt = 0;
	for (int gz = 0; gz < SPIKES; gz++)
		for (int gx = 0; gx < SPIKES; gx++) {
			const float cx = 0.1f * (float)(gx - 1), cz = 0.1f * (float)(gz - 1);
			const float apex = top + 0.002f * (float)((gx + 2 * gz) % 3);
			const uint32_t o = m->nv;
			float *v = &m->v[3 * o];
			v[0] = cx, v[1] = apex, v[2] = cz;
			for (uint32_t i = 0; i < CONE_SEG; i++) {
				double a = 2.0 * M_PI * i / CONE_SEG;
				v[3 * (i + 1)] = cx + r * (float)cos(a);
				v[3 * (i + 1) + 1] = top - 0.1f;
				v[3 * (i + 1) + 2] = cz + r * (float)sin(a);
			}
			v[3 * (CONE_SEG + 1)] = cx, v[3 * (CONE_SEG + 1) + 1] = top - 0.1f;
			v[3 * (CONE_SEG + 1) + 2] = cz;
			for (uint32_t i = 0; i < CONE_SEG; i++) {
				uint32_t a = o + 1 + i, b = o + 1 + (i + 1) % CONE_SEG;
				uint32_t *t = &m->t[3 * m->nt];
				t[0] = o, t[1] = b, t[2] = a;
				t[3] = o + CONE_SEG + 1, t[4] = a, t[5] = b;
				m->nt += 2;
			}
			m->nv += CONE_SEG + 2;
		}
}

/* ---- Kept against fresh, pair by pair ---------------------------------------------- */

enum { STILL, RIGID, DEFORMING };
static const char *const kind_name[] = {"still", "rigid", "deforming"};

/* The deforming bed's run along x, metres a frame (0: it only sways). */
static float bed_run = 0.0f;

#define FRAMES 12
#define SUBSTEPS 8

typedef struct compare_result {
	int ok;
	uint32_t substeps, with_pairs, mismatched, first_bad_frame;
	uint64_t pairs, collected, kept;
	char msg[300];
} compare_result;

/* The cloth at (fractional) frame t: the grid sliding along x by `slide`
 * per frame and along z by half that, and waving by 2 mm. */
static void cloth_at(const grid *g, float t, float slide, sim_vec4 *out)
{
	for (uint32_t i = 0; i < g->nv; i++) {
		const float *q = &g->pos[3 * i];
		out[i].x = q[0] + slide * t;
		out[i].y = q[1] + 0.002f * sinf(0.7f * t + 20.0f * q[0] + 13.0f * q[2]);
		out[i].z = q[2] + 0.5f * slide * t;
	}
}

static int same_pairs(const sim_bodypush *a, const sim_bodypush *b)
{
	uint32_t n = sim_bodypush_pair_count(a);
	if (n != sim_bodypush_pair_count(b))
		return 0;
	for (uint32_t k = 0; k < n; k++) {
		size_t sa, sb;
		uint32_t ta, tb;
		const void *ra = sim_bodypush_pair_record(a, k, &sa, &ta);
		const void *rb = sim_bodypush_pair_record(b, k, &sb, &tb);
		if (ra == NULL || rb == NULL || sa != sb || ta != tb || memcmp(ra, rb, sa) != 0)
			return 0;
	}
	return 1;
}

/*
 * A 16 x 16 sheet over 40 cm, 3 mm over the highest apexes, moved by
 * cloth_at (slide m per frame) over the bed, still, moving rigidly (keys:
 * 2 mm a frame along z and a quarter degree about y) or deforming (its frames:
 * scaled in height by up to 8 % and swaying). Two contacts see the same
 * substeps: `keep` with the given margin and budget, `fresh` searching
 * every substep.
 */
static void compare(int kind, float margin, float budget, float slide, compare_result *r)
{
	memset(r, 0, sizeof *r);
	r->first_bad_frame = UINT32_MAX;
	grid g;
	const float top = 0.0f, o[3] = {-0.2f, top + 0.007f, -0.2f}, u[3] = {0.4f, 0, 0},
		    w[3] = {0, 0, 0.4f};
	sim_bodypush *keep = NULL, *fresh = NULL;
	drape_sim *sim = NULL;
	float *anim = NULL;
	sim_vec4 *x = NULL, *p = NULL;
	if (!grid_make(&g, 16, 16, o, u, w)) {
		snprintf(r->msg, sizeof r->msg, "grid");
		return;
	}
	drape_sim_desc sd;
	desc_from_grid(&sd, &g);
	sd.params.thickness = 0.003f;
	drape_error err;
	if (sim_create_ex(&sd, SIM_CREATE_NATURAL, &sim, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "create: %s", err.message);
		goto out;
	}
	static bed m;
	bed_make(&m, top, 0.0125f);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = m.nv;
	cd.triangles = m.t;
	cd.triangle_count = m.nt;
	drape_keyframe keys[2] = {{0.0f, {0, 0, 0}, {0, 0, 0}},
				  {(float)FRAMES, {0, 0, 0.002f * FRAMES}, {0, 3.0f, 0}}};
	if (kind == DEFORMING) {
		const uint32_t nf = FRAMES + 1;
		anim = malloc((size_t)nf * m.nv * 12);
		if (anim == NULL) {
			snprintf(r->msg, sizeof r->msg, "out of memory");
			goto out;
		}
		for (uint32_t f = 0; f < nf; f++)
			for (uint32_t i = 0; i < m.nv; i++) {
				float *a = &anim[3 * ((size_t)f * m.nv + i)];
				const float *q = &m.v[3 * i];
				float s = 1.0f + 0.08f * sinf(0.5f * (float)f + 3.0f * q[0]);
				a[0] = q[0] + 0.003f * (float)f * (q[1] - top + 0.1f) +
				       bed_run * (float)f;
				a[1] = top - 0.1f + s * (q[1] - top + 0.1f);
				a[2] = q[2];
			}
		cd.frames = anim;
		cd.frame_count = nf;
	} else {
		cd.voxel_size = 0.004f;
		if (kind == RIGID) {
			cd.keyframes = keys;
			cd.keyframe_count = 2;
		}
	}
	if (drape_sim_add_collider(sim, &cd, NULL, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "bed: %s", err.message);
		goto out;
	}
	keep = sim_bodypush_create(sim->ntri);
	fresh = sim_bodypush_create(sim->ntri);
	x = malloc((size_t)g.nv * sizeof *x);
	p = malloc((size_t)g.nv * sizeof *p);
	if (keep == NULL || fresh == NULL || x == NULL || p == NULL ||
	    sim_bodypush_reserve(keep, &sim->colliders, &err) != DRAPE_OK ||
	    sim_bodypush_reserve(fresh, &sim->colliders, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "out of memory");
		goto out;
	}
	sim_bodypush_set_keep(keep, margin, budget);
	sim_bodypush_set_keep(fresh, 0.0f, 0.0f);
	for (uint32_t i = 0; i < g.nv; i++)
		x[i].w = p[i].w = 1.0f;
	for (uint32_t f = 0; f < FRAMES; f++)
		for (uint32_t s = 0; s < SUBSTEPS; s++) {
			float t0 = (float)f + (float)s / SUBSTEPS, t1 = (float)f + (float)(s + 1) / SUBSTEPS;
			sim_colliders_begin_substep(&sim->colliders, t0, t1);
			cloth_at(&g, t0, slide, x);
			cloth_at(&g, t1, slide, p);
			sim_bodypush_begin(keep, &sim->colliders, sim->tris, sim->ntri, x, p,
					   sd.params.thickness, s == 0, NULL);
			sim_bodypush_begin(fresh, &sim->colliders, sim->tris, sim->ntri, x, p,
					   sd.params.thickness, s == 0, NULL);
			r->substeps++;
			uint32_t n = sim_bodypush_pair_count(fresh);
			r->pairs += n;
			r->with_pairs += n > 0;
			if (!same_pairs(keep, fresh)) {
				r->mismatched++;
				if (f < r->first_bad_frame)
					r->first_bad_frame = f;
			}
		}
	uint64_t c0, k0;
	sim_bodypush_keep_counts(fresh, &c0, &k0);
	sim_bodypush_keep_counts(keep, &r->collected, &r->kept);
	if (c0 != 0 || k0 != 0) {
		snprintf(r->msg, sizeof r->msg, "the fresh contact kept a list (%llu, %llu)",
			 (unsigned long long)c0, (unsigned long long)k0);
		goto out;
	}
	r->ok = 1;
out:
	free(x);
	free(p);
	free(anim);
	sim_bodypush_free(keep);
	sim_bodypush_free(fresh);
	drape_sim_destroy(sim);
	grid_free(&g);
}

static void check_equal(int kind, float margin, float slide)
{
	compare_result r;
	compare(kind, margin, 0.5f, slide, &r);
	CHECKF(r.ok, "%s", r.msg);
	printf("  %s body, margin %.0f mm, cloth sliding %.1f mm a frame: %u substeps, %u with "
	       "pairs (%llu pairs), %llu collections, %llu kept, %u differ\n",
	       kind_name[kind], 1e3 * margin, 1e3 * slide, r.substeps, r.with_pairs,
	       (unsigned long long)r.pairs, (unsigned long long)r.collected,
	       (unsigned long long)r.kept, r.mismatched);
	CHECKF(r.mismatched == 0, "%s body: %u of %u substeps differ, the first in frame %u",
	       kind_name[kind], r.mismatched, r.substeps, r.first_bad_frame);
	/* Not vacuous: pairs were found, lists were kept, and the drift made
	 * some collections within frames (more than one a frame). */
	CHECK(r.with_pairs > r.substeps / 2);
	CHECK(r.kept > r.substeps / 4);
	CHECK(r.collected > FRAMES);
}

static void test_still(void)
{
	check_equal(STILL, SIM_BODYKEEP_MARGIN, 0.012f);
	check_equal(STILL, 0.002f, 0.004f);
}

static void test_rigid(void)
{
	check_equal(RIGID, SIM_BODYKEEP_MARGIN, 0.012f);
	check_equal(RIGID, 0.002f, 0.004f);
}

static void test_deforming(void)
{
	check_equal(DEFORMING, SIM_BODYKEEP_MARGIN, 0.012f);
	check_equal(DEFORMING, 0.002f, 0.004f);
}

/* A drift budget four times the proof's (the whole margin twice over)
 * keeps lists that miss pairs, where the proof's loses none over the same
 * motion: the comparison above can fail. */
static void test_loose_budget(void)
{
	for (int kind = STILL; kind <= DEFORMING; kind++) {
		uint32_t differ = 0, substeps = 0;
		for (int k = 1; k <= 3; k++) {
			compare_result r;
			compare(kind, 0.002f, 2.0f, 0.008f * (float)k, &r);
			CHECKF(r.ok, "%s", r.msg);
			differ += r.mismatched;
			substeps += r.substeps;
			/* The proven budget over the same motion loses none. */
			compare(kind, 0.002f, 0.5f, 0.008f * (float)k, &r);
			CHECKF(r.ok && r.mismatched == 0, "%s body, sliding %d mm: %u differ %s",
			       kind_name[kind], 8 * k, r.mismatched, r.msg);
		}
		printf("  %s body, budget 4x, cloth sliding 8 to 24 mm a frame: %u of %u substeps "
		       "differ\n",
		       kind_name[kind], differ, substeps);
		CHECKF(differ > 0, "%s body: a 4x budget lost no pair", kind_name[kind]);
	}
}

/* A body that outruns the drift bound in one substep (sim_bodykeep_outrun:
 * 6 mm a substep along x against the 5 mm the budget allows, as the
 * walk's feet in its strides) gets no list at all, not even at a frame's
 * start, and the pairs are still the fresh search's; one at 3 mm a
 * substep still gets lists that serve substeps. */
static void test_outrun(void)
{
	const float runs[2] = {0.048f, 0.024f}; /* 6 and 3 mm a substep */
	for (int k = 0; k < 2; k++) {
		compare_result r;
		bed_run = runs[k];
		compare(DEFORMING, SIM_BODYKEEP_MARGIN, 0.5f, 0.0f, &r);
		bed_run = 0.0f;
		CHECKF(r.ok, "%s", r.msg);
		printf("  deforming body running %.0f mm a substep: %u substeps, %u with pairs "
		       "(%llu pairs), %llu collections, %llu kept, %u differ\n",
		       1e3 * runs[k] / SUBSTEPS, r.substeps, r.with_pairs,
		       (unsigned long long)r.pairs, (unsigned long long)r.collected,
		       (unsigned long long)r.kept, r.mismatched);
		CHECK(r.mismatched == 0);
		CHECK(r.with_pairs > r.substeps / 2);
		if (k == 0)
			CHECKF(r.collected == 0 && r.kept == 0,
			       "a body outrunning the bound got %llu lists",
			       (unsigned long long)r.collected);
		else
			CHECKF(r.collected > 0 && r.kept > 0,
			       "a body within the bound got %llu lists, %llu kept",
			       (unsigned long long)r.collected, (unsigned long long)r.kept);
	}
}

/* ---- Whole runs: the same bits ------------------------------------------------------ */

typedef struct run_result {
	int ok;
	uint64_t hash, collected, kept;
	uint32_t pairs;
	char msg[300];
} run_result;

/* Steps `sim` `frames` frames and hashes its state. */
static void run_frames(drape_sim *sim, uint32_t nv, uint32_t frames, run_result *r)
{
	drape_error err;
	for (uint32_t f = 0; f < frames; f++)
		if (drape_sim_step(sim, NULL, &err) != DRAPE_OK) {
			snprintf(r->msg, sizeof r->msg, "frame %u: %s", f + 1, err.message);
			return;
		}
	r->hash = state_hash(sim);
	r->pairs = sim_bodypush_pair_count(sim->bodypush);
	sim_bodypush_keep_counts(sim->bodypush, &r->collected, &r->kept);
	r->ok = r->hash != 0;
}

/* The bed rising through a sheet hung by its corners, deforming (its
 * frames), with the solver's own steps. */
static void spikes_run(uint32_t flags, drape_pool *pool, run_result *r)
{
	memset(r, 0, sizeof *r);
	grid g;
	const float o[3] = {-0.2f, 0.0f, -0.2f}, u[3] = {0.4f, 0, 0}, w[3] = {0, 0, 0.4f};
	if (!grid_make(&g, 16, 16, o, u, w)) {
		snprintf(r->msg, sizeof r->msg, "grid");
		return;
	}
	drape_sim_desc sd;
	desc_from_grid(&sd, &g);
	const uint32_t pins[4] = {0, 15, 240, 255};
	sd.pins = pins;
	sd.pin_count = 4;
	sd.params.long_range = 0;
	sd.params.thickness = 0.003f;
	sd.pool = pool;
	static bed m;
	bed_make(&m, -0.04f, 0.0125f);
	const uint32_t nf = 25;
	float *anim = malloc((size_t)nf * m.nv * 12);
	drape_sim *sim = NULL;
	drape_error err;
	if (anim == NULL || sim_create_ex(&sd, flags, &sim, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "create");
		goto out;
	}
	for (uint32_t f = 0; f < nf; f++)
		for (uint32_t i = 0; i < m.nv; i++) {
			float *a = &anim[3 * ((size_t)f * m.nv + i)];
			a[0] = m.v[3 * i] + 0.001f * (float)f;
			a[1] = m.v[3 * i + 1] + 0.004f * (float)f;
			a[2] = m.v[3 * i + 2];
		}
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = m.nv;
	cd.triangles = m.t;
	cd.triangle_count = m.nt;
	cd.frames = anim;
	cd.frame_count = nf;
	cd.friction = 0.5f;
	cd.static_friction = 0.5f;
	if (drape_sim_add_collider(sim, &cd, NULL, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "bed: %s", err.message);
		goto out;
	}
	run_frames(sim, g.nv, 20, r);
out:
	drape_sim_destroy(sim);
	free(anim);
	grid_free(&g);
}

/* examples/garment.json as the bench's garment rows run it: cotton, self
 * collision, 3 mm, the body still. */
static void garment_run(const mesh *shirt, const mesh *body, uint32_t frames, uint32_t flags,
			drape_pool *pool, run_result *r)
{
	memset(r, 0, sizeof *r);
	drape_sim_desc d;
	drape_error err;
	if (garment_desc(&d, shirt, pool, &err) != 0) {
		snprintf(r->msg, sizeof r->msg, "preset: %s", err.message);
		return;
	}
	drape_sim *sim = NULL;
	if (sim_create_ex(&d, flags, &sim, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "create: %s", err.message);
		return;
	}
	drape_collider_desc c;
	garment_body(&c, body);
	if (drape_sim_add_collider(sim, &c, NULL, &err) != DRAPE_OK)
		snprintf(r->msg, sizeof r->msg, "collider: %s", err.message);
	else
		run_frames(sim, shirt->nv, frames, r);
	drape_sim_destroy(sim);
}

static void check_same_bits(const char *what, const run_result *r)
{
	/* r[0..1] kept on 1 and 2 threads, r[2..3] fresh. */
	for (int k = 0; k < 4; k++)
		CHECKF(r[k].ok, "%s run %d: %s", what, k, r[k].msg);
	printf("  %s: %016llx %016llx (kept: %llu collections, %llu substeps kept, %u pairs at "
	       "the end) %016llx %016llx (fresh)\n",
	       what, (unsigned long long)r[0].hash, (unsigned long long)r[1].hash,
	       (unsigned long long)r[0].collected, (unsigned long long)r[0].kept, r[0].pairs,
	       (unsigned long long)r[2].hash, (unsigned long long)r[3].hash);
	CHECKF(r[0].hash == r[2].hash && r[1].hash == r[3].hash && r[0].hash == r[1].hash,
	       "%s: kept and fresh differ", what);
	/* Not vacuous: the list was kept, and the contact had pairs. */
	CHECK(r[0].kept > 0 && r[2].kept == 0 && r[0].pairs > 0);
}

static void test_spikes_bits(void)
{
	drape_pool *pool = NULL;
	drape_error err;
	CHECK_OK(drape_pool_create(2, &pool, &err));
	run_result r[4];
	spikes_run(0, NULL, &r[0]);
	spikes_run(0, pool, &r[1]);
	spikes_run(SIM_CREATE_BODYPUSH_FRESH, NULL, &r[2]);
	spikes_run(SIM_CREATE_BODYPUSH_FRESH, pool, &r[3]);
	drape_pool_destroy(pool);
	check_same_bits("deforming spikes, 20 frames", r);
	/* And on 3 threads. */
	run_result r3;
	CHECK_OK(drape_pool_create(3, &pool, &err));
	spikes_run(0, pool, &r3);
	drape_pool_destroy(pool);
	CHECKF(r3.ok && r3.hash == r[0].hash, "spikes on 3 threads: %016llx", (unsigned long long)r3.hash);
}

static void test_garment_bits(void)
{
	mesh shirt, body;
	CHECK(mesh_read_obj("tests/data/meshes/mh_male_casualsuit04.obj", 0.1f, &shirt) == 0);
	if (mesh_read_obj("tests/data/meshes/mh_proxy_male_generic.obj", 0.1f, &body) != 0) {
		mesh_free(&shirt);
		CHECK(!"tests/data/meshes/mh_proxy_male_generic.obj");
	}
	const char *env = getenv("DRAPE_BODYKEEP_FRAMES");
	uint32_t frames = env != NULL && atoi(env) > 0 ? (uint32_t)atoi(env) : 3;
	drape_pool *pool = NULL;
	drape_error err;
	run_result r[4], r3;
	memset(r, 0, sizeof r);
	memset(&r3, 0, sizeof r3);
	if (drape_pool_create(2, &pool, &err) == DRAPE_OK) {
		garment_run(&shirt, &body, frames, 0, NULL, &r[0]);
		garment_run(&shirt, &body, frames, 0, pool, &r[1]);
		garment_run(&shirt, &body, frames, SIM_CREATE_BODYPUSH_FRESH, NULL, &r[2]);
		garment_run(&shirt, &body, frames, SIM_CREATE_BODYPUSH_FRESH, pool, &r[3]);
		drape_pool_destroy(pool);
	}
	/* The body's vertices and ridges are searched in chunks on the pool:
	 * 3 threads too. */
	if (drape_pool_create(3, &pool, &err) == DRAPE_OK) {
		garment_run(&shirt, &body, frames, 0, pool, &r3);
		drape_pool_destroy(pool);
	}
	mesh_free(&shirt);
	mesh_free(&body);
	char what[64];
	snprintf(what, sizeof what, "garment, %u frames", frames);
	check_same_bits(what, r);
	CHECKF(r3.ok && r3.hash == r[0].hash, "garment on 3 threads: %016llx %s",
	       (unsigned long long)r3.hash, r3.msg);
}

/* ---- The parallel search: the same lists at any thread count ------------------------ */

/*
 * The garment's cloth over its body (13,652 vertices: 27 chunks of
 * SIM_BODY_CHUNK, and the body's ridges several chunks of bodyedge.c's),
 * after a frame of the solver: three face contacts and three edge
 * contacts searched on no pool, a pool of 2 and a pool of 3 threads must
 * give the same pair lists, byte for byte and in order, every substep,
 * kept lists and fresh. The cloth drifts down and sideways between
 * substeps so lists are collected again within the frame.
 */
static void test_threads_lists(void)
{
	mesh shirt, body;
	CHECK(mesh_read_obj("tests/data/meshes/mh_male_casualsuit04.obj", 0.1f, &shirt) == 0);
	if (mesh_read_obj("tests/data/meshes/mh_proxy_male_generic.obj", 0.1f, &body) != 0) {
		mesh_free(&shirt);
		CHECK(!"tests/data/meshes/mh_proxy_male_generic.obj");
	}
	CHECK(body.nv > 8 * SIM_BODY_CHUNK);
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	drape_error err;
	CHECK_OK(drape_material_preset("cotton", &d.params, &err));
	d.positions = shirt.v;
	d.vertex_count = shirt.nv;
	d.triangles = shirt.t;
	d.triangle_count = shirt.nt;
	d.params.fps = 24.0f;
	d.params.thickness = 0.003f;
	drape_sim *sim = NULL;
	CHECK_OK(sim_create_ex(&d, 0, &sim, &err));
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_MESH;
	c.vertices = body.v;
	c.vertex_count = body.nv;
	c.triangles = body.t;
	c.triangle_count = body.nt;
	c.voxel_size = 0.005f;
	c.friction = 0.5f;
	c.static_friction = 0.7f;
	CHECK_OK(drape_sim_add_collider(sim, &c, NULL, &err));
	CHECK_OK(drape_sim_step(sim, NULL, &err));
	drape_pool *pool[3] = {NULL, NULL, NULL};
	CHECK_OK(drape_pool_create(2, &pool[1], &err));
	CHECK_OK(drape_pool_create(3, &pool[2], &err));
	sim_bodypush *bp[3];
	sim_bodyedge *be[3];
	for (int k = 0; k < 3; k++) {
		bp[k] = sim_bodypush_create(sim->ntri);
		be[k] = sim_bodyedge_create(sim->tris, sim->ntri);
		CHECK(bp[k] != NULL && be[k] != NULL);
		CHECK_OK(sim_bodypush_reserve(bp[k], &sim->colliders, &err));
		CHECK_OK(sim_bodyedge_reserve(be[k], &sim->colliders, &err));
	}
	const uint32_t n = sim->n;
	sim_vec4 *x = malloc((size_t)n * sizeof *x), *p = malloc((size_t)n * sizeof *p);
	CHECK(x != NULL && p != NULL);
	uint32_t substeps = 0, differ_p = 0, differ_e = 0;
	uint64_t pairs_p = 0, pairs_e = 0;
	for (int fresh = 0; fresh < 2; fresh++) {
		for (int k = 0; k < 3; k++) {
			sim_bodypush_set_keep(bp[k], fresh ? 0.0f : SIM_BODYKEEP_MARGIN, 0.5f);
			sim_bodyedge_set_keep(be[k], !fresh, 0.0f);
		}
		for (uint32_t s = 0; s < 16; s++) {
			/* 1.5 mm a substep down and along x, with a wave. */
			for (uint32_t i = 0; i < n; i++) {
				const sim_vec4 *q = &sim->x[i];
				float t = (float)s, w = 0.001f * sinf(0.5f * t + 30.0f * q->x);
				x[i] = *q;
				x[i].x += 0.0015f * t, x[i].y -= 0.0015f * t + w;
				p[i] = x[i];
				p[i].x += 0.0015f, p[i].y -= 0.0015f;
			}
			sim_colliders_begin_substep(&sim->colliders, 1.0f + (float)s / 8.0f,
						    1.0f + (float)(s + 1) / 8.0f);
			for (int k = 0; k < 3; k++) {
				sim_bodypush_begin(bp[k], &sim->colliders, sim->tris, sim->ntri, x, p,
						   0.003f, s % 8 == 0, pool[k]);
				sim_bodyedge_begin(be[k], &sim->colliders, x, p, 0.003f, s % 8 == 0,
						   pool[k]);
			}
			substeps++;
			pairs_p += sim_bodypush_pair_count(bp[0]);
			pairs_e += sim_bodyedge_pair_count(be[0]);
			for (int k = 1; k < 3; k++) {
				differ_p += !same_pairs(bp[0], bp[k]);
				size_t s0, s1;
				const void *e0 = sim_bodyedge_pair_data(be[0], &s0);
				const void *e1 = sim_bodyedge_pair_data(be[k], &s1);
				differ_e += s0 != s1 || (s0 > 0 && memcmp(e0, e1, s0) != 0);
			}
		}
	}
	uint64_t collected, kept;
	sim_bodypush_keep_counts(bp[2], &collected, &kept);
	printf("  garment, %u substeps on 1, 2 and 3 threads: %llu face pairs (%llu collections, "
	       "%llu kept), %llu edge pairs (%u collections); %u face and %u edge lists differ\n",
	       substeps, (unsigned long long)pairs_p, (unsigned long long)collected,
	       (unsigned long long)kept, (unsigned long long)pairs_e,
	       sim_bodyedge_collections(be[2]), differ_p, differ_e);
	for (int k = 0; k < 3; k++) {
		sim_bodypush_free(bp[k]);
		sim_bodyedge_free(be[k]);
		drape_pool_destroy(pool[k]);
	}
	free(x);
	free(p);
	drape_sim_destroy(sim);
	mesh_free(&shirt);
	mesh_free(&body);
	CHECK(differ_p == 0 && differ_e == 0);
	/* Not vacuous: both contacts had pairs, kept lists served and were
	 * collected again within a frame. */
	CHECK(pairs_p > 0 && pairs_e > 0 && kept > 0 && collected > 2);
}

static const check_test tests[] = {
	CHECK_TEST(test_still),
	CHECK_TEST(test_rigid),
	CHECK_TEST(test_deforming),
	CHECK_TEST(test_loose_budget),
	CHECK_TEST(test_outrun),
	CHECK_TEST(test_spikes_bits),
	CHECK_TEST(test_garment_bits),
	CHECK_TEST(test_threads_lists),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
