/*
 * The body's edges against the cloth's edges (server/sim/bodyedge.c) and
 * the edge counts of the body-through measure (server/sim/bodythrough.c),
 * against geometry: a knife-edge ridge (a thin triangular prism longer
 * than the sheet, apex edge horizontal, so neither apex vertex is ever
 * under the cloth) that a coarse sheet falls onto, and the same ridge
 * rising through a sheet hung by its corners. "Through" is decided here
 * from the cloth's own triangles (the cloth's height over points of the
 * apex line, by barycentric interpolation in the horizontal plane), not by
 * the solver's code; each contact test also runs the solver without the
 * edge contact (SIM_CREATE_NO_BODYEDGE, the vertex-face contacts still on)
 * and checks that the ridge then does come through, so the test can fail.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/bodythrough.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"
#include "tests/unit/sim_fixtures.h"

/* ---- Geometry ------------------------------------------------------------------ */

/* The ridge: apex edge along z at x = RX, y = TOP, from z = -HALF_LEN to
 * +HALF_LEN; base 1 cm either side of it, DEPTH below. */
#define RX 0.01f
#define TOP 0.0f
#define DEPTH 0.1f
#define HALF_W 0.01f
#define HALF_LEN 0.25f

typedef struct prism {
	float v[18];
	uint32_t t[24];
} prism;

/* Vertices: apex A0 (z-), A1 (z+), left base L0, L1, right base R0, R1,
 * lifted by dy; triangles wound outward. */
static void prism_mesh(prism *m, float dy)
{
	const float y0 = TOP + dy, yb = TOP - DEPTH + dy;
	const float v[18] = {RX, y0, -HALF_LEN, RX, y0, HALF_LEN,
			     RX - HALF_W, yb, -HALF_LEN, RX - HALF_W, yb, HALF_LEN,
			     RX + HALF_W, yb, -HALF_LEN, RX + HALF_W, yb, HALF_LEN};
	/* 0 A0, 1 A1, 2 L0, 3 L1, 4 R0, 5 R1. */
	const uint32_t t[24] = {0, 2, 1, 1, 2, 3,  /* left side, facing -x and up */
				0, 1, 4, 1, 5, 4,  /* right side, facing +x and up */
				2, 4, 3, 3, 4, 5,  /* bottom, facing -y */
				0, 4, 2,           /* end z-, facing -z */
				1, 3, 5};          /* end z+, facing +z */
	memcpy(m->v, v, sizeof v);
	memcpy(m->t, t, sizeof t);
}


/* ---- The measure ----------------------------------------------------------------- */

/*
 * Hand-placed: one flat cloth triangle at y = 0 and the ridge with its
 * apex 5 mm above the triangle's plane (the apex edge crosses no cloth
 * triangle, but two cloth edges pass under the crest, in through one side
 * and out through the other), 0.5 mm above (still crossing: the cloth
 * edges count at any depth), and 5 mm below (the cloth over the ridge:
 * nothing crosses). Then a cloth triangle
 * standing up across the apex edge, which the apex edge pierces.
 */
static void test_measure_edges(void)
{
	const float cloth[9] = {-0.1f, 0, -0.05f, 0.1f, 0, -0.05f, 0.0f, 0, 0.1f};
	const uint32_t ct[3] = {0, 1, 2};
	const float lift[3] = {0.005f, 0.0005f, -0.005f};
	const uint32_t want_in[3] = {2, 2, 0};
	prism m;
	prism_mesh(&m, 0.0f);
	CHECK(signed_volume(m.v, m.t, 8) > 0.0);
	for (int k = 0; k < 3; k++) {
		prism_mesh(&m, lift[k]);
		sim_body_through r;
		CHECK_OK(sim_body_through_measure(m.v, 6, m.t, 8, cloth, 3, ct, 1, 0.001f, 0.03f, &r,
						  NULL));
		/* No body vertex is over the cloth's triangle: the vertex
		 * measure is blind to the ridge. */
		CHECK(r.through == 0);
		CHECKF(r.cloth_edges_in == want_in[k] && r.edges_through == 0,
		       "apex at %g mm: %u cloth edges in, %u body edges through", 1e3 * lift[k],
		       r.cloth_edges_in, r.edges_through);
	}
	/* A vertical cloth triangle in the plane z = 0 spanning the apex: the
	 * apex edge goes through it, 5 cm of the ridge on its either side. */
	const float wall[9] = {-0.05f, -0.03f, 0.0f, 0.05f, -0.03f, 0.0f, 0.0f, 0.05f, 0.0f};
	prism_mesh(&m, 0.0f);
	sim_body_through r;
	CHECK_OK(sim_body_through_measure(m.v, 6, m.t, 8, wall, 3, ct, 1, 0.001f, 0.03f, &r, NULL));
	CHECKF(r.edges_through == 1, "%u body edges through the wall", r.edges_through);
}

/* ---- The contact ----------------------------------------------------------------- */

typedef struct ridge_result {
	int ok;
	uint32_t through_frames; /* frames with the apex over the cloth by > 1 mm somewhere */
	uint32_t uncovered;      /* frames with a sample of the apex the cloth does not cover */
	uint32_t measured;       /* frames where the measure counts an edge crossing */
	double worst;            /* the apex's largest height over the cloth, m */
	double rest_lo, rest_hi; /* the cloth's height over the apex at the last frame, min and max */
	uint64_t hash;
	char msg[300];
} ridge_result;

/*
 * The 4 x 4 sheet (30 cm, its columns at x = -15, -5, 5, 15 cm, so the
 * apex at x = 1 cm passes between two columns and no cloth vertex is ever
 * over it) falls from 3 cm over the ridge onto a ground at the ridge's
 * base, 48 frames; or, `rising`, is hung by its corners at y = 0 while the
 * ridge, a deforming collider, rises from 8 cm below to 4 cm above it over
 * 24 frames and then holds, 36 frames. Every frame the cloth's height over
 * 29 points of the apex line within the sheet (z = -14 .. 14 cm), and the
 * measure.
 */
static void ridge(int rising, uint32_t flags, drape_pool *pool, ridge_result *r)
{
	memset(r, 0, sizeof *r);
	grid g;
	const float o[3] = {-0.15f, rising ? 0.0f : 0.03f, -0.15f}, u[3] = {0.3f, 0, 0},
		    w[3] = {0, 0, 0.3f};
	if (!grid_make(&g, 4, 4, o, u, w)) {
		snprintf(r->msg, sizeof r->msg, "grid");
		return;
	}
	drape_sim_desc sd;
	desc_from_grid(&sd, &g);
	const uint32_t pins[4] = {0, 3, 12, 15};
	if (rising) {
		/* Without the tethers and strain limit pins switch on: the
		 * tent the ridge raises stretches the sheet. */
		sd.pins = pins;
		sd.pin_count = 4;
		sd.params.long_range = 0;
	}
	sd.params.thickness = 0.003f;
	sd.pool = pool;
	drape_sim *sim = NULL;
	drape_error err;
	const uint32_t frames = rising ? 36 : 48;
	const float rise0 = -0.08f, rise1 = 0.04f;
	float *anim = NULL;
	float *x = malloc((size_t)g.nv * 12);
	if (sim_create_ex(&sd, flags, &sim, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "create: %s", err.message);
		goto out;
	}
	prism m;
	prism_mesh(&m, 0.0f);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = 6;
	cd.triangles = m.t;
	cd.triangle_count = 8;
	cd.friction = 0.5f;
	cd.static_friction = 0.5f;
	if (rising) {
		/* Frame k of the animation at sim frame k. */
		const uint32_t nf = 25;
		anim = malloc((size_t)nf * 6 * 12);
		for (uint32_t f = 0; f < nf; f++) {
			prism a;
			prism_mesh(&a, rise0 + (rise1 - rise0) * (float)f / 24.0f);
			memcpy(&anim[(size_t)f * 18], a.v, sizeof a.v);
		}
		cd.frames = anim;
		cd.frame_count = nf;
	} else {
		cd.voxel_size = 0.002f;
	}
	if (drape_sim_add_collider(sim, &cd, NULL, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "ridge: %s", err.message);
		goto out;
	}
	if (!rising) {
		drape_collider_desc gd;
		drape_collider_desc_default(&gd);
		gd.shape = DRAPE_SHAPE_PLANE;
		gd.point[1] = TOP - DEPTH;
		gd.normal[1] = 1.0f;
		gd.friction = 0.5f;
		if (drape_sim_add_collider(sim, &gd, NULL, &err) != DRAPE_OK) {
			snprintf(r->msg, sizeof r->msg, "ground: %s", err.message);
			goto out;
		}
	}
	for (uint32_t f = 1; f <= frames; f++) {
		if (drape_sim_step(sim, NULL, &err) != DRAPE_OK) {
			snprintf(r->msg, sizeof r->msg, "frame %u: %s", f, err.message);
			goto out;
		}
		drape_sim_get_positions(sim, x);
		/* The ridge where the solver has it at frame f. */
		float dy = rising ? rise0 + (rise1 - rise0) * (float)(f < 24 ? f : 24) / 24.0f : 0.0f;
		prism b;
		prism_mesh(&b, dy);
		int through = 0, uncovered = 0;
		double lo = INFINITY, hi = -INFINITY;
		for (int k = -14; k <= 14; k++) {
			double y;
			if (!cloth_height(x, g.tri, g.nt, RX, 0.01 * k, &y)) {
				uncovered = 1;
				continue;
			}
			double over = (TOP + dy) - y;
			if (over > r->worst)
				r->worst = over;
			through |= over > 0.001;
			lo = fmin(lo, -over);
			hi = fmax(hi, -over);
		}
		r->through_frames += (uint32_t)through;
		r->uncovered += (uint32_t)uncovered;
		r->rest_lo = lo, r->rest_hi = hi;
		sim_body_through bt;
		if (sim_body_through_measure(b.v, 6, b.t, 8, x, g.nv, g.tri, g.nt, 0.001f, 0.03f, &bt,
					     &err) != DRAPE_OK) {
			snprintf(r->msg, sizeof r->msg, "measure: %s", err.message);
			goto out;
		}
		if (bt.edges_through > 0 || bt.cloth_edges_in > 0)
			r->measured++;
	}
	/* FNV-1a over the positions and velocities. */
	float *v = malloc((size_t)g.nv * 12);
	drape_sim_get_state(sim, x, v, NULL);
	uint64_t h = 1469598103934665603ull;
	const unsigned char *bx = (const unsigned char *)x, *bvv = (const unsigned char *)v;
	for (size_t i = 0; i < (size_t)g.nv * 12; i++)
		h = ((h ^ bx[i]) * 1099511628211ull ^ bvv[i]) * 1099511628211ull;
	free(v);
	r->hash = h;
	r->ok = 1;
out:
	free(anim);
	free(x);
	drape_sim_destroy(sim);
	grid_free(&g);
}

/* A collider's edge list is built when it is added (and by the remove
 * that shifts it), for a static and a deforming mesh alike, so that the
 * step does not allocate it. */
/*
 * The push's normal is the two edges' common normal as the iterations
 * have moved the cloth edge: a cloth edge kept because it crossed over
 * the crest (its normal within 60 degrees of the ridge's) may have turned
 * to run down one of the ridge's sides a few iterations later, where
 * pushed along that normal it would slide along the body (as bodypush.c's
 * turned faces did in the walk's armpit). One free cloth triangle lies
 * flat 1 mm over the knife ridge's apex, two of its edges crossing it;
 * then its predicted position is the same triangle turned about the
 * apex's direction through the crossing point, still 2 to 3 mm short of
 * the contact distance. Turned by 30 degrees it is pushed up, off the
 * crest; by 75 degrees it must not move.
 */
static void turned_edge(float angle, float moved[3], float up[3], uint32_t *pairs)
{
	const float y0 = 0.001f;
	const float tri[9] = {RX - 0.02f, y0, 0.0f, RX + 0.02f, y0, 0.0f, RX + 0.02f, y0, 0.04f};
	const uint32_t t[3] = {0, 1, 2};
	drape_sim_desc sd;
	drape_sim_desc_default(&sd);
	sd.positions = tri;
	sd.vertex_count = 3;
	sd.triangles = t;
	sd.triangle_count = 1;
	sd.params.thickness = 0.003f;
	drape_sim *sim = NULL;
	drape_error err;
	CHECK_OK(sim_create_ex(&sd, SIM_CREATE_NATURAL, &sim, &err));
	prism m;
	prism_mesh(&m, 0.0f);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = 6;
	cd.triangles = m.t;
	cd.triangle_count = 8;
	cd.friction = 0.0f;
	cd.static_friction = 0.0f;
	cd.voxel_size = 0.002f;
	CHECK_OK(drape_sim_add_collider(sim, &cd, NULL, &err));
	sim_colliders_begin_substep(&sim->colliders, 0.0f, 0.125f);
	for (int k = 0; k < 3; k++) {
		sim->x[k].x = sim->p[k].x = tri[3 * k];
		sim->x[k].y = sim->p[k].y = tri[3 * k + 1];
		sim->x[k].z = sim->p[k].z = tri[3 * k + 2];
	}
	sim_bodyedge_begin(sim->bodyedge, &sim->colliders, sim->x, sim->p, sd.params.thickness, 1,
			   NULL);
	*pairs = sim_bodyedge_pair_count(sim->bodyedge);
	const float ca = cosf(angle), sa = sinf(angle);
	sim_vec4 before[3];
	for (int k = 0; k < 3; k++) {
		float dx = tri[3 * k] - RX, dy = tri[3 * k + 1] - y0;
		sim->p[k].x = RX + ca * dx - sa * dy;
		sim->p[k].y = y0 + sa * dx + ca * dy;
		before[k] = sim->p[k];
	}
	sim_bodyedge_project(sim->bodyedge, sim->p, sim->x, sim->n, NULL);
	for (int k = 0; k < 3; k++) {
		float d[3] = {sim->p[k].x - before[k].x, sim->p[k].y - before[k].y,
			      sim->p[k].z - before[k].z};
		moved[k] = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
		up[k] = d[1];
	}
	drape_sim_destroy(sim);
}

static void test_turned_edge(void)
{
	float moved[3], up[3];
	uint32_t pairs;
	turned_edge((float)(M_PI / 6.0), moved, up, &pairs);
	CHECKF(pairs == 2, "%u pairs kept for the two cloth edges over the crest", pairs);
	CHECKF(fmaxf(moved[0], fmaxf(moved[1], moved[2])) > 1e-3f && up[0] + up[1] + up[2] > 0.0f,
	       "the edges turned by 30 degrees were not pushed off the crest: moved %.3g %.3g %.3g m",
	       moved[0], moved[1], moved[2]);
	turned_edge((float)(75.0 * M_PI / 180.0), moved, up, &pairs);
	CHECKF(pairs == 2, "%u pairs kept for the two cloth edges over the crest", pairs);
	CHECKF(moved[0] == 0.0f && moved[1] == 0.0f && moved[2] == 0.0f,
	       "the edges turned down the ridge's side (75 degrees) were pushed along it: moved %.3g "
	       "%.3g %.3g m", moved[0], moved[1], moved[2]);
}

static void test_edges_built_at_add(void)
{
	grid g;
	const float o[3] = {-0.15f, 0.03f, -0.15f}, u[3] = {0.3f, 0, 0}, w[3] = {0, 0, 0.3f};
	CHECK(grid_make(&g, 4, 4, o, u, w));
	drape_sim_desc sd;
	desc_from_grid(&sd, &g);
	drape_sim *sim = NULL;
	drape_error err;
	CHECK(sim_create_ex(&sd, 0, &sim, &err) == DRAPE_OK);
	prism m;
	prism_mesh(&m, 0.0f);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = 6;
	cd.triangles = m.t;
	cd.triangle_count = 8;
	cd.voxel_size = 0.002f;
	size_t b0 = sim_bodyedge_bytes(sim->bodyedge);
	CHECK(drape_sim_add_collider(sim, &cd, NULL, &err) == DRAPE_OK);
	size_t b1 = sim_bodyedge_bytes(sim->bodyedge);
	cd.frames = m.v;
	cd.frame_count = 1;
	CHECK(drape_sim_add_collider(sim, &cd, NULL, &err) == DRAPE_OK);
	size_t b2 = sim_bodyedge_bytes(sim->bodyedge);
	printf("  edge contact bytes: %zu, %zu after the static ridge, %zu after the deforming one\n", b0,
	       b1, b2);
	/* Each ridge: 12 edges of 2 faces, their face normals and ridge list. */
	CHECK(b1 >= b0 + 12 * (6 * sizeof(uint32_t) + sizeof(uint32_t)) + 8 * 3 * sizeof(float));
	CHECK(b2 >= b1 + 12 * (6 * sizeof(uint32_t) + sizeof(uint32_t)) + 8 * 3 * sizeof(float));
	CHECK(drape_sim_remove_collider(sim, 0, &err) == DRAPE_OK);
	CHECK(drape_sim_step(sim, NULL, &err) == DRAPE_OK);
	drape_sim_destroy(sim);
	grid_free(&g);
}

static void check_ridge(int rising)
{
	ridge_result with, without;
	ridge(rising, SIM_CREATE_NO_BODYEDGE, NULL, &without);
	CHECKF(without.ok, "%s", without.msg);
	ridge(rising, 0, NULL, &with);
	CHECKF(with.ok, "%s", with.msg);
	printf("  %s: without the edge contact the apex is through in %u frames (up to %.1f mm), "
	       "the measure %u; with it %u frames, up to %.2f mm over, the measure %u, uncovered "
	       "%u; the cloth %.2f to %.2f mm over the apex at the end\n",
	       rising ? "rising ridge" : "falling sheet", without.through_frames,
	       1e3 * without.worst, without.measured, with.through_frames, 1e3 * with.worst,
	       with.measured, with.uncovered, 1e3 * with.rest_lo, 1e3 * with.rest_hi);
	/* Without the edge contact the ridge does come through (the test can
	 * fail), and the measure sees it. */
	CHECK(without.through_frames > 0 && without.worst > 0.01 && without.measured > 0);
	CHECK(with.uncovered == 0);
	CHECKF(with.through_frames == 0 && with.measured == 0,
	       "the apex through in %u frames (up to %.2f mm), measured in %u", with.through_frames,
	       1e3 * with.worst, with.measured);
	/* Resting on the crest: where the cloth is lowest over the apex it is
	 * at the contact distance (the cloth's 3 mm thickness, within 1 mm),
	 * and nowhere along the crest is it more than one more thickness
	 * above (the coarse sheet's rows sag onto the crest unevenly; a sheet
	 * that slid off or hangs above the crest fails). */
	CHECKF(with.rest_lo >= 0.002 && with.rest_lo <= 0.004 && with.rest_hi <= 0.006,
	       "the cloth %.2f to %.2f mm over the apex", 1e3 * with.rest_lo, 1e3 * with.rest_hi);
}

static void test_ridge_static(void)
{
	check_ridge(0);
}

static void test_ridge_rising(void)
{
	check_ridge(1);
}

/* The contact is serial in a fixed order: the same bits with 1, 2 and 3
 * threads, for the static and the deforming ridge, and the same as the
 * scalar reference path. */
static void test_threads(void)
{
	drape_pool *pool[2] = {NULL, NULL};
	drape_error err;
	CHECK_OK(drape_pool_create(2, &pool[0], &err));
	CHECK_OK(drape_pool_create(3, &pool[1], &err));
	for (int rising = 0; rising < 2; rising++) {
		ridge_result r[4];
		ridge(rising, 0, NULL, &r[0]);
		ridge(rising, 0, pool[0], &r[1]);
		ridge(rising, 0, pool[1], &r[2]);
		ridge(rising, SIM_CREATE_REFERENCE, NULL, &r[3]);
		for (int k = 0; k < 4; k++)
			CHECKF(r[k].ok, "%s", r[k].msg);
		CHECKF(r[0].hash == r[1].hash && r[0].hash == r[2].hash && r[0].hash == r[3].hash,
		       "%s: %016llx %016llx %016llx %016llx", rising ? "rising" : "static",
		       (unsigned long long)r[0].hash, (unsigned long long)r[1].hash,
		       (unsigned long long)r[2].hash, (unsigned long long)r[3].hash);
	}
	drape_pool_destroy(pool[0]);
	drape_pool_destroy(pool[1]);
}

/* ---- Kept candidate lists (bodyedge.c, "Kept candidates") ---------------------- */

/* A sheet of nx x nx vertices over 30 cm square, draped over the static
 * knife ridge and a second one across it (the prism turned a quarter turn,
 * 1 cm lower), for sim_bodyedge fed by hand: sliding across the ridges at
 * a speed that grows through each step of 8 substeps and waving, so the
 * cloth edges come in and out of the ridges' boxes and the kept lists'
 * bound fails within steps. */
typedef struct keep_scene {
	grid g;
	drape_sim *sim;
	sim_vec4 *x, *p;
	float *base; /* the sheet's internal positions at create */
} keep_scene;

static int keep_scene_make(keep_scene *k, uint32_t nx, float side, uint32_t flags)
{
	memset(k, 0, sizeof *k);
	const float o[3] = {-0.5f * side, 0.0f, -0.5f * side}, u[3] = {side, 0, 0},
		    w[3] = {0, 0, side};
	if (!grid_make(&k->g, nx, nx, o, u, w))
		return 0;
	drape_sim_desc sd;
	desc_from_grid(&sd, &k->g);
	sd.params.thickness = 0.003f;
	drape_error err;
	if (sim_create_ex(&sd, flags, &k->sim, &err) != DRAPE_OK)
		return 0;
	prism m[2];
	prism_mesh(&m[0], 0.0f);
	prism_mesh(&m[1], -0.01f);
	for (int i = 0; i < 6; i++) {
		float t = m[1].v[3 * i];
		m[1].v[3 * i] = m[1].v[3 * i + 2];
		m[1].v[3 * i + 2] = t;
	}
	for (int c = 0; c < 2; c++) {
		drape_collider_desc cd;
		drape_collider_desc_default(&cd);
		cd.shape = DRAPE_SHAPE_MESH;
		cd.vertices = m[c].v;
		cd.vertex_count = 6;
		cd.triangles = m[c].t;
		cd.triangle_count = 8;
		cd.voxel_size = 0.004f;
		if (drape_sim_add_collider(k->sim, &cd, NULL, &err) != DRAPE_OK)
			return 0;
	}
	uint32_t n = k->sim->n;
	k->x = malloc((size_t)n * sizeof *k->x);
	k->p = malloc((size_t)n * sizeof *k->p);
	k->base = malloc((size_t)n * 3 * sizeof *k->base);
	if (k->x == NULL || k->p == NULL || k->base == NULL)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		k->base[3 * i] = k->sim->x[i].x;
		k->base[3 * i + 1] = k->sim->x[i].y;
		k->base[3 * i + 2] = k->sim->x[i].z;
	}
	return 1;
}

static void keep_scene_free(keep_scene *k)
{
	free(k->x);
	free(k->p);
	free(k->base);
	drape_sim_destroy(k->sim);
	grid_free(&k->g);
}

/* The sheet at substep time t (substeps, 8 to a step): slid along x by a
 * distance that grows with the square of the time into each step (the
 * motion per substep from 0.5 to 7.5 mm), waving 3 mm about 2 mm over the
 * upper ridge's apex. */
static void keep_pose(const keep_scene *k, double t, sim_vec4 *out)
{
	double step = floor(t / 8.0), in = t - 8.0 * step;
	double slide = 0.004 * step + 0.0005 * in * in;
	slide = fmod(slide, 0.06) - 0.03;
	for (uint32_t i = 0; i < k->sim->n; i++) {
		double px = k->base[3 * i], pz = k->base[3 * i + 2];
		double y = TOP + 0.002 + 0.003 * sin(40.0 * px + 0.3 * t) * cos(25.0 * pz - 0.2 * t);
		out[i].x = (float)(px + slide);
		out[i].y = (float)y;
		out[i].z = (float)pz;
		out[i].w = 1.0f;
	}
}

/*
 * Kept lists against the search, pair by pair: three sim_bodyedge over the
 * same cloth and colliders, one searching every substep, one keeping its
 * lists, one keeping them under a loosened bound (a cloth edge's box may
 * leave its widened box by 5 cm before they are dropped). Over 240
 * substeps the kept pairs are the search's, byte for byte (edge, ridge,
 * normal, reach, in the same order), the lists serve most substeps, and
 * the bound fails within steps (more collections than steps); the loosened
 * bound misses pairs the search finds.
 */
static void keep_static(uint32_t nx, float side)
{
	keep_scene k;
	CHECK(keep_scene_make(&k, nx, side, 0));
	sim_bodyedge *be[3];
	for (int i = 0; i < 3; i++)
		CHECK((be[i] = sim_bodyedge_create(k.sim->tris, k.sim->ntri)) != NULL);
	sim_bodyedge_set_keep(be[0], 0, 0.0f);
	sim_bodyedge_set_keep(be[2], 1, 0.05f);
	const uint32_t substeps = 240;
	uint32_t differ = 0, lost = 0, pairs = 0, multi = 0, first_differ = UINT32_MAX;
	for (uint32_t s = 0; s < substeps; s++) {
		sim_colliders_begin_substep(&k.sim->colliders, (float)s / 8.0f, (float)(s + 1) / 8.0f);
		keep_pose(&k, s, k.x);
		keep_pose(&k, s + 1, k.p);
		size_t nb[3];
		const void *d[3];
		for (int i = 0; i < 3; i++) {
			sim_bodyedge_begin(be[i], &k.sim->colliders, k.x, k.p, 0.003f, s % 8 == 0, NULL);
			d[i] = sim_bodyedge_pair_data(be[i], &nb[i]);
		}
		uint32_t n0 = sim_bodyedge_pair_count(be[0]);
		pairs += n0;
		multi += n0 > 1;
		if (nb[1] != nb[0] || memcmp(d[1], d[0], nb[0]) != 0) {
			differ++;
			if (first_differ == UINT32_MAX)
				first_differ = s;
		}
		lost += sim_bodyedge_pair_count(be[2]) < n0;
	}
	uint32_t uses = sim_bodyedge_kept_uses(be[1], 0), coll = sim_bodyedge_collections(be[1]);
	printf("  %u x %u sheet, %u substeps: %u pairs (%u substeps with more than one), kept "
	       "lists served %u substeps of the upper ridge from %u collections (%u steps); %u "
	       "substeps differ; the loosened bound lost pairs in %u substeps\n",
	       nx, nx, substeps, pairs, multi, uses, coll, substeps / 8, differ, lost);
	CHECKF(differ == 0, "kept pairs differ from the search's in %u substeps, the first %u",
	       differ, first_differ);
	CHECK(pairs > 2 * substeps && multi > substeps / 2);
	CHECK(uses == substeps && sim_bodyedge_kept_uses(be[0], 0) == 0);
	CHECK(coll > substeps / 8 && coll < substeps / 2);
	CHECK(lost > 0);
	for (int i = 0; i < 3; i++)
		sim_bodyedge_free(be[i]);
	keep_scene_free(&k);
}

/* The fine sheet makes long runs of pairs sharing vertices on each ridge,
 * whose order the kept lists must reproduce. On the small coarse one (8 cm,
 * 85 cloth edges, a hash of 170 slots, the ridge 50 cm long over about 25
 * cells) cells of the ridge's box before an edge's own share slots with the
 * edge's cells, so the search's walk meets it early: ordered as if it did
 * not, the kept pairs differ in 85 of the 240 substeps (tried). */
static void test_keep_static(void)
{
	keep_static(25, 0.3f);
	keep_static(6, 0.3f);
	keep_static(6, 0.08f);
}

/*
 * A sheet falling on the static knife ridge (a field collider; the solver
 * steps it), beside a deforming copy of it 20 cm away rising through the
 * sheet's other half, or not (beside = 0). FNV-1a over the final
 * positions and velocities; *uses the substeps the static ridge's kept
 * lists served, *moving_uses the deforming one's. resume: stop after
 * that many frames, save the state, and continue in a new sim restored
 * from it (0: one run).
 */
typedef struct keep_run {
	uint64_t hash;
	uint32_t uses, moving_uses, pairs;
	int ok;
} keep_run;

static drape_sim *keep_sim(const grid *g, uint32_t flags, drape_pool *pool, int beside)
{
	drape_sim_desc sd;
	desc_from_grid(&sd, g);
	sd.params.thickness = 0.003f;
	sd.pool = pool;
	drape_sim *sim = NULL;
	drape_error err;
	if (sim_create_ex(&sd, flags, &sim, &err) != DRAPE_OK)
		return NULL;
	prism m;
	prism_mesh(&m, 0.0f);
	for (int i = 0; i < 6; i++)
		m.v[3 * i] -= 0.1f;
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = 6;
	cd.triangles = m.t;
	cd.triangle_count = 8;
	cd.friction = 0.5f;
	cd.static_friction = 0.5f;
	cd.voxel_size = 0.002f;
	if (drape_sim_add_collider(sim, &cd, NULL, &err) != DRAPE_OK) {
		drape_sim_destroy(sim);
		return NULL;
	}
	if (beside) {
		static float anim[25 * 18];
		for (uint32_t f = 0; f < 25; f++) {
			prism a;
			prism_mesh(&a, -0.08f + 0.12f * (float)f / 24.0f);
			for (int i = 0; i < 6; i++)
				a.v[3 * i] += 0.1f;
			memcpy(&anim[(size_t)f * 18], a.v, sizeof a.v);
		}
		drape_collider_desc dd = cd;
		dd.voxel_size = 0.0f;
		dd.frames = anim;
		dd.frame_count = 25;
		if (drape_sim_add_collider(sim, &dd, NULL, &err) != DRAPE_OK) {
			drape_sim_destroy(sim);
			return NULL;
		}
	}
	return sim;
}

static void keep_run_scene(uint32_t flags, drape_pool *pool, int beside, uint32_t resume,
			   keep_run *r)
{
	memset(r, 0, sizeof *r);
	grid g;
	const float o[3] = {-0.15f, 0.02f, -0.15f}, u[3] = {0.3f, 0, 0}, w[3] = {0, 0, 0.3f};
	if (!grid_make(&g, 21, 21, o, u, w))
		return;
	const uint32_t frames = 30;
	drape_error err;
	float *x = malloc((size_t)g.nv * 12), *v = malloc((size_t)g.nv * 12);
	drape_sim *sim = keep_sim(&g, flags, pool, beside);
	if (sim == NULL || x == NULL || v == NULL)
		goto out;
	for (uint32_t f = 1; f <= frames; f++) {
		if (drape_sim_step(sim, NULL, &err) != DRAPE_OK)
			goto out;
		if (sim->bodyedge != NULL)
			r->pairs += sim_bodyedge_pair_count(sim->bodyedge);
		if (f == resume) {
			uint32_t frame;
			drape_sim_get_state(sim, x, v, &frame);
			r->uses += sim_bodyedge_kept_uses(sim->bodyedge, 0);
			drape_sim_destroy(sim);
			if ((sim = keep_sim(&g, flags, pool, beside)) == NULL ||
			    drape_sim_set_state(sim, x, v, frame, &err) != DRAPE_OK)
				goto out;
		}
	}
	r->uses += sim_bodyedge_kept_uses(sim->bodyedge, 0);
	r->moving_uses = sim_bodyedge_kept_uses(sim->bodyedge, 1);
	drape_sim_get_state(sim, x, v, NULL);
	uint64_t h = 1469598103934665603ull;
	const unsigned char *bx = (const unsigned char *)x, *bvv = (const unsigned char *)v;
	for (size_t i = 0; i < (size_t)g.nv * 12; i++)
		h = ((h ^ bx[i]) * 1099511628211ull ^ bvv[i]) * 1099511628211ull;
	r->hash = h;
	r->ok = 1;
out:
	free(x);
	free(v);
	drape_sim_destroy(sim);
	grid_free(&g);
}

/* Beside a deforming body (the rising ridge) the static one keeps its
 * lists and the deforming one never has any: every substep of the
 * deforming one is searched; and the frames are the same bits as with
 * every body searched. */
static void test_keep_beside_deforming(void)
{
	keep_run on, off;
	keep_run_scene(0, NULL, 1, 0, &on);
	keep_run_scene(SIM_CREATE_NO_EDGEKEEP, NULL, 1, 0, &off);
	CHECK(on.ok && off.ok);
	printf("  static ridge served by kept lists in %u substeps, the deforming one in %u; "
	       "%u pairs at the frames' last substeps\n",
	       on.uses, on.moving_uses, on.pairs);
	CHECK(on.uses > 0 && on.moving_uses == 0 && off.uses == 0);
	CHECK(on.pairs > 0 && on.pairs == off.pairs);
	CHECKF(on.hash == off.hash, "keep %016llx, search %016llx", (unsigned long long)on.hash,
	       (unsigned long long)off.hash);
}

/* The solver's frames with kept lists are the search's bits, on 1 and 2
 * threads, and a run stopped after 11 frames and resumed from its saved
 * state in a new sim gives the same bits as one that was not stopped. */
static void test_keep_solver_and_resume(void)
{
	drape_pool *pool = NULL;
	drape_error err;
	CHECK_OK(drape_pool_create(2, &pool, &err));
	keep_run r[5];
	keep_run_scene(SIM_CREATE_NO_EDGEKEEP, NULL, 0, 0, &r[0]);
	keep_run_scene(0, NULL, 0, 0, &r[1]);
	keep_run_scene(0, pool, 0, 0, &r[2]);
	keep_run_scene(SIM_CREATE_NO_EDGEKEEP, pool, 0, 0, &r[3]);
	keep_run_scene(0, NULL, 0, 11, &r[4]);
	for (int i = 0; i < 5; i++)
		CHECK(r[i].ok);
	printf("  kept lists served %u substeps, %u pairs at the frames' last substeps\n", r[1].uses,
	       r[1].pairs);
	CHECK(r[1].uses > 0 && r[0].uses == 0 && r[1].pairs > 0);
	for (int i = 1; i < 5; i++)
		CHECKF(r[i].hash == r[0].hash, "run %d: %016llx, search on 1 thread %016llx", i,
		       (unsigned long long)r[i].hash, (unsigned long long)r[0].hash);
	drape_pool_destroy(pool);
}

static const check_test tests[] = {
	CHECK_TEST(test_measure_edges),
	CHECK_TEST(test_edges_built_at_add),
	CHECK_TEST(test_ridge_static),
	CHECK_TEST(test_ridge_rising),
	CHECK_TEST(test_turned_edge),
	CHECK_TEST(test_threads),
	CHECK_TEST(test_keep_static),
	CHECK_TEST(test_keep_beside_deforming),
	CHECK_TEST(test_keep_solver_and_resume),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
