/*
 * The body's vertices against the cloth's faces (server/sim/bodypush.c)
 * and the measure of body vertices outside the cloth
 * (server/sim/bodythrough.c), against geometry: a sharp cone whose tip is
 * finer than the cloth's spacing, static and rising through a sheet, a
 * thin ridge, and hand-placed points for the measure. "Under the cloth" is
 * decided here from the cloth's own triangles (the height of the sheet
 * over the tip, by barycentric interpolation in the horizontal plane), not
 * by the solver's code. Each contact test also runs the solver without the
 * contact (SIM_CREATE_NO_BODYPUSH) and checks that the tip then does come
 * through, so the test can fail.
 */
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/bodythrough.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

/* ---- Geometry ------------------------------------------------------------------ */

typedef struct mesh {
	float v[3 * 64];
	uint32_t t[3 * 128];
	uint32_t nv, nt;
} mesh;

/* A cone: apex at (cx, top, cz), a ring of `seg` vertices of radius r at
 * height base, and the base's centre; triangles wound outward. */
static void cone_mesh(mesh *m, float cx, float cz, float base, float top, float r, uint32_t seg)
{
	m->nv = seg + 2;
	m->nt = 2 * seg;
	float *v = m->v;
	v[0] = cx, v[1] = top, v[2] = cz;
	for (uint32_t i = 0; i < seg; i++) {
		double a = 2.0 * M_PI * i / seg;
		v[3 * (i + 1)] = cx + r * (float)cos(a);
		v[3 * (i + 1) + 1] = base;
		v[3 * (i + 1) + 2] = cz + r * (float)sin(a);
	}
	v[3 * (seg + 1)] = cx, v[3 * (seg + 1) + 1] = base, v[3 * (seg + 1) + 2] = cz;
	for (uint32_t i = 0; i < seg; i++) {
		uint32_t a = 1 + i, b = 1 + (i + 1) % seg;
		/* Side: apex, b, a faces out (the ring runs counter-clockwise
		 * seen from below, +y up: x = cos, z = sin). */
		uint32_t *t = &m->t[6 * i];
		t[0] = 0, t[1] = b, t[2] = a;
		t[3] = seg + 1, t[4] = a, t[5] = b;
	}
}

static double signed_volume(const mesh *m)
{
	double s = 0.0;
	for (uint32_t i = 0; i < m->nt; i++) {
		const float *a = &m->v[3 * m->t[3 * i]], *b = &m->v[3 * m->t[3 * i + 1]];
		const float *c = &m->v[3 * m->t[3 * i + 2]];
		s += (double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
		     (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
		     (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0]);
	}
	return s / 6.0;
}

/* ---- The measure ----------------------------------------------------------------- */

/*
 * One flat cloth triangle over the xz plane at y = 0 (about 20 cm across)
 * and a cone body whose apex sits under the triangle, on it, and 5 mm
 * above it: the apex is counted through only when more than tol above;
 * moved beyond the triangle's edge it is not covered; and the answer does
 * not depend on how the cloth triangle or the body is wound.
 */
static void test_measure(void)
{
	const float cloth[9] = {-0.1f, 0, -0.1f, 0.1f, 0, -0.1f, 0, 0, 0.1f};
	const uint32_t ct[3] = {0, 1, 2}, ctr[3] = {0, 2, 1};
	const float tips[4] = {-0.004f, 0.0005f, 0.005f, 0.0015f};
	const uint32_t want[4] = {0, 0, 1, 1};
	for (int k = 0; k < 4; k++)
		for (int flip = 0; flip < 2; flip++) {
			mesh m;
			cone_mesh(&m, 0.0f, 0.0f, tips[k] - 0.05f, tips[k], 0.01f, 12);
			if (flip)
				for (uint32_t t = 0; t < m.nt; t++) {
					uint32_t s = m.t[3 * t + 1];
					m.t[3 * t + 1] = m.t[3 * t + 2];
					m.t[3 * t + 2] = s;
				}
			CHECK((signed_volume(&m) > 0) == !flip);
			sim_body_through r;
			drape_error err;
			CHECK_OK(sim_body_through_measure(m.v, m.nv, m.t, m.nt, cloth, 3, flip ? ctr : ct, 1,
							  0.001f, 0.03f, &r, &err));
			/* Only the apex faces the cloth: the ring's normals are
			 * nearly horizontal, more than 60 degrees from the
			 * cloth's; the base faces away but is not under... */
			CHECKF(r.through == want[k], "tip %g mm, flip %d: %u through, want %u",
			       1e3 * tips[k], flip, r.through, want[k]);
			if (want[k])
				CHECK(r.deepest_vertex == 0 && fabsf(r.deepest - tips[k]) < 1e-6f);
		}
	/* The apex 5 mm above, but beyond the triangle's edge z = 0.1 + ... */
	mesh m;
	cone_mesh(&m, 0.0f, 0.15f, -0.045f, 0.005f, 0.01f, 12);
	sim_body_through r;
	CHECK_OK(sim_body_through_measure(m.v, m.nv, m.t, m.nt, cloth, 3, ct, 1, 0.001f, 0.03f, &r,
					  NULL));
	CHECK(r.through == 0 && r.covered == 0);
	/* Out of range indices name the array. */
	const uint32_t bad[3] = {0, 1, 3};
	drape_error err;
	CHECK(sim_body_through_measure(m.v, m.nv, m.t, m.nt, cloth, 3, bad, 1, 0.001f, 0.03f, &r,
				       &err) == DRAPE_ERANGE);
	CHECK(strstr(err.message, "cloth triangles[0][2]") != NULL);
}

/* ---- The contact ----------------------------------------------------------------- */

/* 4 x 4 vertices over 30 cm, its centre at (ox, y, oz). */
static int sheet(grid *g, float ox, float y, float oz)
{
	const float o[3] = {ox - 0.15f, y, oz - 0.15f}, u[3] = {0.3f, 0, 0}, w[3] = {0, 0, 0.3f};
	return grid_make(g, 4, 4, o, u, w);
}

typedef struct spike_result {
	int ok;
	uint32_t through_frames; /* frames with the tip over the cloth by > 1 mm */
	uint32_t uncovered;      /* frames with no triangle over the tip */
	uint32_t measured;       /* frames where the measure counts a body vertex through */
	double worst;            /* the tip's largest height over the cloth, m */
	char msg[300];
} spike_result;

/*
 * The sheet falls from 3 cm over a cone 10 cm tall whose tip (2.5 mm
 * across at 1 mm below the apex) sits inside one of its triangles, onto a
 * ground plane at the cone's base; or, `rising`, the sheet is pinned at
 * its four corners at y = 0 and the cone, a deforming collider, rises
 * from 8 cm below to 8 cm above it over 24 frames. Every frame: the
 * cloth's height over the tip, and the measure.
 */
static void spike(int rising, uint32_t flags, drape_pool *pool, uint64_t *hash, spike_result *r)
{
	memset(r, 0, sizeof *r);
	grid g;
	/* The tip at (0, 0): inside a triangle of the middle quad, away
	 * from its diagonal and edges. */
	if (!sheet(&g, 0.02f, rising ? 0.0f : 0.03f, 0.035f)) {
		snprintf(r->msg, sizeof r->msg, "grid");
		return;
	}
	drape_sim_desc sd;
	desc_from_grid(&sd, &g);
	const uint32_t pins[4] = {0, 3, 12, 15};
	if (rising) {
		/* Hung by its corners, without the tethers and the 1 % strain
		 * limit that pins switch on: the tent the spike raises
		 * stretches the sheet by 5 %, which they would forbid. */
		sd.pins = pins;
		sd.pin_count = 4;
		sd.params.long_range = 0;
	}
	sd.params.thickness = 0.003f;
	sd.pool = pool;
	drape_sim *sim = NULL;
	drape_error err;
	const uint32_t frames = rising ? 36 : 48;
	float *anim = NULL;
	float *x = malloc((size_t)g.nv * 12);
	if (sim_create_ex(&sd, flags, &sim, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "create: %s", err.message);
		goto out;
	}
	mesh m;
	const float base = -0.1f, top = 0.0f;
	cone_mesh(&m, 0.0f, 0.0f, base, top, 0.0125f, 16);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = m.nv;
	cd.triangles = m.t;
	cd.triangle_count = m.nt;
	cd.friction = 0.5f;
	cd.static_friction = 0.5f;
	if (rising) {
		/* Frame k of the animation at sim frame k: the cone 8 cm under
		 * the sheet at 0, 8 cm over it at 24, then held. */
		const uint32_t nf = 25;
		anim = malloc((size_t)nf * m.nv * 12);
		for (uint32_t f = 0; f < nf; f++)
			for (uint32_t i = 0; i < m.nv; i++) {
				anim[3 * ((size_t)f * m.nv + i)] = m.v[3 * i];
				anim[3 * ((size_t)f * m.nv + i) + 1] = m.v[3 * i + 1] - 0.08f + 0.16f * (float)f / 24.0f;
				anim[3 * ((size_t)f * m.nv + i) + 2] = m.v[3 * i + 2];
			}
		cd.frames = anim;
		cd.frame_count = nf;
	} else {
		cd.voxel_size = 0.001f;
	}
	if (drape_sim_add_collider(sim, &cd, NULL, &err) != DRAPE_OK) {
		snprintf(r->msg, sizeof r->msg, "cone: %s", err.message);
		goto out;
	}
	if (!rising) {
		drape_collider_desc gd;
		drape_collider_desc_default(&gd);
		gd.shape = DRAPE_SHAPE_PLANE;
		gd.point[1] = base;
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
		/* The body where the solver has it at frame f. */
		mesh b = m;
		float lift = rising ? -0.08f + 0.16f * (float)(f < 24 ? f : 24) / 24.0f : 0.0f;
		for (uint32_t i = 0; i < b.nv; i++)
			b.v[3 * i + 1] += lift;
		double y;
		if (!cloth_height(x, g.tri, g.nt, 0.0, 0.0, &y)) {
			r->uncovered++;
			continue;
		}
		double over = b.v[1] - y;
		if (over > r->worst)
			r->worst = over;
		if (over > 0.001)
			r->through_frames++;
		sim_body_through bt;
		if (sim_body_through_measure(b.v, b.nv, b.t, b.nt, x, g.nv, g.tri, g.nt, 0.001f, 0.03f,
					     &bt, &err) != DRAPE_OK) {
			snprintf(r->msg, sizeof r->msg, "measure: %s", err.message);
			goto out;
		}
		if (bt.through > 0)
			r->measured++;
	}
	if (hash != NULL) {
		/* FNV-1a over the positions and velocities. */
		float *v = malloc((size_t)g.nv * 12);
		drape_sim_get_state(sim, x, v, NULL);
		uint64_t h = 1469598103934665603ull;
		const unsigned char *bx = (const unsigned char *)x, *bvv = (const unsigned char *)v;
		for (size_t i = 0; i < (size_t)g.nv * 12; i++)
			h = ((h ^ bx[i]) * 1099511628211ull ^ bvv[i]) * 1099511628211ull;
		free(v);
		*hash = h;
	}
	r->ok = 1;
out:
	free(anim);
	free(x);
	drape_sim_destroy(sim);
	grid_free(&g);
}

static void check_spike(int rising)
{
	spike_result with, without;
	spike(rising, SIM_CREATE_NO_BODYPUSH, NULL, NULL, &without);
	CHECKF(without.ok, "%s", without.msg);
	spike(rising, 0, NULL, NULL, &with);
	CHECKF(with.ok, "%s", with.msg);
	printf("  %s: without the contact the tip is through in %u frames (up to %.1f mm), the "
	       "measure %u; with it %u frames, up to %.2f mm over, the measure %u, uncovered %u\n",
	       rising ? "rising spike" : "falling sheet", without.through_frames, 1e3 * without.worst,
	       without.measured, with.through_frames, 1e3 * with.worst, with.measured, with.uncovered);
	/* Without the contact the tip does come through (the test can fail). */
	CHECK(without.through_frames > 0 && without.worst > 0.01);
	CHECK(with.uncovered == 0);
	CHECKF(with.through_frames == 0 && with.measured == 0,
	       "the tip through in %u frames (up to %.2f mm), measured in %u", with.through_frames,
	       1e3 * with.worst, with.measured);
}

static void test_spike_static(void)
{
	check_spike(0);
}

static void test_spike_rising(void)
{
	check_spike(1);
}

/*
 * The push's direction is the face's normal, which the iterations turn:
 * a face kept because it faced the body vertex (within 60 degrees of the
 * body's normal) may be edge-on to it a few iterations later. Pushed
 * along its normal by what it lacks it then slides along the body by up
 * to its reach, and the stretch pulls it back: on the walk's right armpit
 * (5 mm faces over the arm's inner side, frame 55) the faces swung by 6
 * mm a substep and an edge ended the frame at 105 % strain. Here one free
 * 2 cm triangle starts flat 1 mm over a cone's apex (the body's normal
 * +y), so the pair is kept; then its predicted position is the same face
 * turned about z through its centre by an angle, still 2 to 3 mm short of
 * the contact distance over the apex. Turned by 30 degrees it still faces
 * the apex and is pushed out (up); turned by 75 degrees it is edge-on
 * and must not move at all (before the fix it moved by 2.7 mm, nearly
 * all of it sideways, along -x).
 */
static void turned_face(float angle, float moved[3], float up[3], uint32_t *pairs)
{
	const float c = 0.01f, y0 = 0.001f;
	/* Counter-clockwise seen from +y: its normal is -y; the side comes
	 * from the body, not from the winding. */
	const float tri[9] = {-c, y0, -0.5f * c, c, y0, -0.5f * c, 0.0f, y0, c};
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
	mesh m;
	cone_mesh(&m, 0.0f, 0.0f, -0.1f, 0.0f, 0.0125f, 16);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = m.v;
	cd.vertex_count = m.nv;
	cd.triangles = m.t;
	cd.triangle_count = m.nt;
	cd.friction = 0.0f;
	cd.static_friction = 0.0f;
	CHECK_OK(drape_sim_add_collider(sim, &cd, NULL, &err));
	sim_colliders_begin_substep(&sim->colliders, 0.0f, 0.125f);
	const float ca = cosf(angle), sa = sinf(angle);
	for (int k = 0; k < 3; k++) {
		sim->x[k].x = sim->p[k].x = tri[3 * k];
		sim->x[k].y = sim->p[k].y = tri[3 * k + 1];
		sim->x[k].z = sim->p[k].z = tri[3 * k + 2];
	}
	sim_bodypush_begin(sim->bodypush, &sim->colliders, sim->tris, sim->ntri, sim->x, sim->p,
			   sd.params.thickness, 1, NULL);
	*pairs = sim_bodypush_pair_count(sim->bodypush);
	/* Turned about the z axis through (0, y0, 0). */
	sim_vec4 before[3];
	for (int k = 0; k < 3; k++) {
		float dx = tri[3 * k], dy = tri[3 * k + 1] - y0;
		sim->p[k].x = ca * dx - sa * dy;
		sim->p[k].y = y0 + sa * dx + ca * dy;
		before[k] = sim->p[k];
	}
	sim_bodypush_project(sim->bodypush, sim->p, sim->x, sim->n, NULL);
	for (int k = 0; k < 3; k++) {
		float d[3] = {sim->p[k].x - before[k].x, sim->p[k].y - before[k].y,
			      sim->p[k].z - before[k].z};
		moved[k] = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
		up[k] = d[1];
	}
	drape_sim_destroy(sim);
}

static void test_turned_face(void)
{
	float moved[3], up[3];
	uint32_t pairs;
	/* Still facing the apex: pushed out, upwards. */
	turned_face((float)(M_PI / 6.0), moved, up, &pairs);
	CHECKF(pairs == 1, "%u pairs kept for the flat face over the apex", pairs);
	CHECKF(fmaxf(moved[0], fmaxf(moved[1], moved[2])) > 1e-3f && up[0] + up[1] + up[2] > 0.0f,
	       "the face turned by 30 degrees was not pushed out: moved %.3g %.3g %.3g m",
	       moved[0], moved[1], moved[2]);
	/* Edge-on: left alone. */
	turned_face((float)(75.0 * M_PI / 180.0), moved, up, &pairs);
	CHECKF(pairs == 1, "%u pairs kept for the flat face over the apex", pairs);
	CHECKF(moved[0] == 0.0f && moved[1] == 0.0f && moved[2] == 0.0f,
	       "the face turned edge-on (75 degrees) was pushed along the body: moved %.3g %.3g "
	       "%.3g m", moved[0], moved[1], moved[2]);
}

/* The contact is serial in a fixed order: the same bits with 1 and 3
 * threads, for the static and the deforming cone, and the same as the
 * scalar reference path. */
static void test_threads(void)
{
	drape_pool *pool = NULL;
	drape_error err;
	CHECK_OK(drape_pool_create(3, &pool, &err));
	for (int rising = 0; rising < 2; rising++) {
		uint64_t h[3];
		spike_result r;
		spike(rising, 0, NULL, &h[0], &r);
		CHECKF(r.ok, "%s", r.msg);
		spike(rising, 0, pool, &h[1], &r);
		CHECKF(r.ok, "%s", r.msg);
		spike(rising, SIM_CREATE_REFERENCE, NULL, &h[2], &r);
		CHECKF(r.ok, "%s", r.msg);
		CHECKF(h[0] == h[1] && h[0] == h[2], "%s: %016llx %016llx %016llx",
		       rising ? "rising" : "static", (unsigned long long)h[0],
		       (unsigned long long)h[1], (unsigned long long)h[2]);
	}
	drape_pool_destroy(pool);
}

/* ---- A collider replaced by another of the same size ------------------------------ */

/* A UV sphere of radius r at c, `rings` - 1 rings of `seg` vertices, wound
 * outward; `turned` relabels its vertices in reverse order and turns it a
 * quarter about x, so that vertex i and triangle t are elsewhere than in
 * the unturned sphere while the counts are the same. Heap arrays (the
 * cone's fixed ones are too small for a body whose arrays a reuse can
 * meet). */
static void ball(float **v, uint32_t **t, uint32_t *nv, uint32_t *nt, float r, const float c[3],
		 uint32_t seg, uint32_t rings, int turned)
{
	*nv = 2 + (rings - 1) * seg;
	*nt = 2 * seg * (rings - 1);
	float *V = malloc((size_t)*nv * 12);
	uint32_t *T = malloc((size_t)*nt * 12), k = 0;
	const uint32_t n = *nv;
#define LABEL(i) (turned ? n - 1 - (i) : (i))
#define PUT(i, X, Y, Z)                                                                 \
	do {                                                                            \
		float x_ = (X), y_ = (Y), z_ = (Z);                                     \
		float *o_ = &V[3 * (size_t)LABEL(i)];                                   \
		o_[0] = c[0] + x_;                                                      \
		o_[1] = c[1] + (turned ? -z_ : y_);                                     \
		o_[2] = c[2] + (turned ? y_ : z_);                                      \
	} while (0)
	PUT(0, 0.0f, r, 0.0f);
	for (uint32_t i = 1; i < rings; i++)
		for (uint32_t s = 0; s < seg; s++) {
			double th = M_PI * i / rings, ph = 2 * M_PI * s / seg;
			PUT(1 + (i - 1) * seg + s, (float)(r * sin(th) * cos(ph)), (float)(r * cos(th)),
			    (float)(-r * sin(th) * sin(ph)));
		}
	PUT(n - 1, 0.0f, -r, 0.0f);
#define RING(i, s) LABEL(1 + ((i) - 1) * seg + ((s) % seg))
	for (uint32_t s = 0; s < seg; s++)
		T[k++] = LABEL(0), T[k++] = RING(1, s), T[k++] = RING(1, s + 1);
	for (uint32_t i = 1; i + 1 < rings; i++)
		for (uint32_t s = 0; s < seg; s++) {
			T[k++] = RING(i, s), T[k++] = RING(i + 1, s), T[k++] = RING(i + 1, s + 1);
			T[k++] = RING(i, s), T[k++] = RING(i + 1, s + 1), T[k++] = RING(i, s + 1);
		}
	for (uint32_t s = 0; s < seg; s++)
		T[k++] = LABEL(n - 1), T[k++] = RING(rings - 1, s + 1), T[k++] = RING(rings - 1, s);
#undef RING
#undef PUT
#undef LABEL
	*v = V;
	*t = T;
}

static int add_ball(drape_sim *sim, float r, const float c[3], int turned, drape_error *err)
{
	float *v;
	uint32_t *t, nv, nt;
	ball(&v, &t, &nv, &nt, r, c, 96, 48, turned);
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = v;
	cd.vertex_count = nv;
	cd.triangles = t;
	cd.triangle_count = nt;
	cd.friction = 0.3f;
	cd.static_friction = 0.3f;
	cd.voxel_size = 0.01f;
	drape_err rc = drape_sim_add_collider(sim, &cd, NULL, err);
	free(v);
	free(t);
	return rc == DRAPE_OK;
}

/*
 * The body contacts keep, per collider slot, what they measured of a body
 * (its normals, hollows and falls; its corners by vertex; its edges) for as
 * long as the body is the same. A sheet falls onto a ball, 4,514 vertices:
 * in one sim the slot first holds the same ball far to the side for a frame
 * (the contacts measure it, the sheet falls freely) and is then emptied and
 * given the ball relabelled and turned (the same counts, other triangles);
 * the other sim falls its first frame with no collider and then gets the
 * turned ball. From there both must be the same to the bit: nothing of the
 * first ball may be taken for the second, whether or not the allocator
 * hands the second the first one's addresses (with glibc it does here:
 * the test prints it).
 */
static void test_replaced_collider(void)
{
	const float far[3] = {5.0f, 0.0f, 0.0f}, here[3] = {0.0f, 0.0f, 0.0f};
	drape_sim *sim[2] = {NULL, NULL};
	grid g;
	const float o[3] = {-0.3f, 0.31f, -0.3f}, u[3] = {0.6f, 0, 0}, w[3] = {0, 0, 0.6f};
	CHECK(grid_make(&g, 24, 24, o, u, w));
	drape_sim_desc sd;
	desc_from_grid(&sd, &g);
	sd.params.thickness = 0.003f;
	drape_error err;
	float *x[2] = {malloc((size_t)g.nv * 12), malloc((size_t)g.nv * 12)};
	for (int k = 0; k < 2; k++)
		CHECK_OK(drape_sim_create(&sd, &sim[k], &err));
	CHECKF(add_ball(sim[0], 0.3f, far, 0, &err), "%s", err.message);
	for (int k = 0; k < 2; k++)
		CHECK_OK(drape_sim_step(sim[k], NULL, &err));
	sim_body_view before, after;
	CHECK(sim_colliders_body(&sim[0]->colliders, 0, &before));
	const void *old_tris = before.tris, *old_q0 = before.q0;
	CHECK_OK(drape_sim_remove_collider(sim[0], 0, &err));
	for (int k = 0; k < 2; k++)
		CHECKF(add_ball(sim[k], 0.3f, here, 1, &err), "%s", err.message);
	uint32_t differ = 0, pairs = 0;
	for (uint32_t f = 2; f <= 12; f++) {
		for (int k = 0; k < 2; k++) {
			CHECK_OK(drape_sim_step(sim[k], NULL, &err));
			drape_sim_get_positions(sim[k], x[k]);
		}
		if (f == 2) {
			CHECK(sim_colliders_body(&sim[0]->colliders, 0, &after));
			printf("  the turned ball %s the first's triangle array and %s its start poses\n",
			       after.tris == old_tris ? "reuses" : "does not reuse",
			       after.q0 == old_q0 ? "reuses" : "does not reuse");
			/* What the caches are keyed by instead: new for the
			 * new collider (with a counter per collider, both
			 * balls' first poses were version 1). */
			CHECKF(after.mesh != before.mesh && after.version != before.version,
			       "mesh stamps %llu, %llu; versions %llu, %llu",
			       (unsigned long long)before.mesh, (unsigned long long)after.mesh,
			       (unsigned long long)before.version, (unsigned long long)after.version);
		}
		pairs += sim_bodypush_pair_count(sim[1]->bodypush);
		if (memcmp(x[0], x[1], (size_t)g.nv * 12) != 0 && differ == 0)
			differ = f;
	}
	/* The sheet lies on the ball: the contacts had pairs to differ by. */
	CHECK(pairs > 0);
	CHECKF(differ == 0, "the sim whose slot held another ball differs from frame %u", differ);
	double y;
	drape_sim_get_positions(sim[1], x[1]);
	CHECK(cloth_height(x[1], g.tri, g.nt, 0.0, 0.0, &y));
	printf("  %u face pairs over frames 2 to 12; the sheet's centre at %.2f mm over the ball\n",
	       pairs, 1e3 * (y - 0.3));
	for (int k = 0; k < 2; k++) {
		drape_sim_destroy(sim[k]);
		free(x[k]);
	}
	grid_free(&g);
}

static const check_test tests[] = {
	CHECK_TEST(test_measure),
	CHECK_TEST(test_spike_static),
	CHECK_TEST(test_spike_rising),
	CHECK_TEST(test_turned_face),
	CHECK_TEST(test_threads),
	CHECK_TEST(test_replaced_collider),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
