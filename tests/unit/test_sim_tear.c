/*
 * Tearing (server/sim/tear.c), tested against what a torn sheet must be:
 * a flat sheet pulled apart by two pin groups moving apart tears along one
 * line across the pull, between the pins, into two pieces, each holding its
 * pins; every frame is a valid mesh; the mass of the created vertices is
 * conserved by the split; a threshold the strain never reaches changes
 * nothing, bit for bit; the frames are the same at 1 and 2 threads; a torn
 * mesh restored into a fresh sim continues bit-identically; and the two
 * pieces dropped on each other never cross.
 */
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A sheet W wide (x, the pull) and D deep (z) in the plane y = 0, NX x NZ
 * vertices (2 cm apart), its x = -W/2 and x = +W/2 columns pinned to two
 * far-away spheres that move apart by PULL each over PULL_FRAMES frames
 * (1.5 cm/s each side at 24 fps). */
#define W 0.60f
#define D 0.30f
#define NX 31u
#define NZ 16u
#define PULL 0.15f
#define PULL_FRAMES 240.0f
#define FRAMES 20u

static void need(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL fixture: %s\n", what);
		exit(1);
	}
}

typedef struct sheet {
	grid g;
	uint32_t pins_l[NZ], pins_r[NZ];
	drape_pool *pool;
} sheet;

/* The notch: the middle column's first NOTCH edges from the z = 0 side are
 * cut in the input mesh (its vertices there duplicated for the triangles on
 * the +x side), the single-edge-notch specimen of tear tests (ISO
 * 13937-2 trouser and ASTM D2261 tongue tests cut the fabric to start the
 * tear where it is measured). */
#define NOTCH 2u

static void sheet_make(sheet *s, uint32_t threads)
{
	const float o[3] = {-0.5f * W, 0.0f, 0.0f}, u[3] = {W, 0, 0}, v[3] = {0, 0, D};
	need(grid_make(&s->g, NX, NZ, o, u, v), "grid_make");
	/* Cut: vertices (NX/2, j < NOTCH) get a copy for the +x triangles. */
	grid *g = &s->g;
	g->pos = realloc(g->pos, ((size_t)g->nv + NOTCH) * 3 * sizeof *g->pos);
	need(g->pos != NULL, "notch");
	for (uint32_t j = 0; j < NOTCH; j++) {
		uint32_t v0 = j * NX + NX / 2, c = g->nv + j;
		memcpy(&g->pos[3 * c], &g->pos[3 * v0], 3 * sizeof *g->pos);
		for (uint32_t t = 0; t < g->nt; t++) {
			uint32_t *q = &g->tri[3 * t];
			float cx = (g->pos[3 * q[0]] + g->pos[3 * q[1]] + g->pos[3 * q[2]]) / 3.0f;
			for (int k = 0; k < 3; k++)
				if (q[k] == v0 && cx > g->pos[3 * v0])
					q[k] = c;
		}
	}
	g->nv += NOTCH;
	for (uint32_t j = 0; j < NZ; j++) {
		s->pins_l[j] = j * NX;
		s->pins_r[j] = j * NX + NX - 1;
	}
	s->pool = NULL;
	if (threads > 1)
		need(drape_pool_create(threads, &s->pool, NULL) == DRAPE_OK, "pool");
}

static void sheet_free(sheet *s)
{
	grid_free(&s->g);
	drape_pool_destroy(s->pool);
}

/* The sim of the pulled sheet with threshold `tear` (0 = off), and per-vertex
 * thickness and friction when given. */
static drape_sim *sheet_sim_ex(sheet *s, float tear, int self, const float *thick, const float *fric)
{
	drape_sim_desc d;
	desc_from_grid(&d, &s->g);
	d.vertex_thickness = thick;
	d.vertex_friction = fric;
	uint32_t pins[2 * NZ];
	memcpy(pins, s->pins_l, sizeof s->pins_l);
	memcpy(pins + NZ, s->pins_r, sizeof s->pins_r);
	d.pins = pins;
	d.pin_count = 2 * NZ;
	d.params.gravity[1] = 0.0f;
	/* A cotton-like XPBD material (the solver's defaults), with the
	 * long-range tethers pins bring (long_range -1). */
	d.params.model = DRAPE_MODEL_XPBD;
	d.params.tear_strain = tear;
	d.params.self_collision = self;
	d.pool = s->pool;
	drape_sim *sim = NULL;
	need(drape_sim_create(&d, &sim, NULL) == DRAPE_OK, "create");
	for (int side = 0; side < 2; side++) {
		drape_collider_desc c;
		drape_collider_desc_default(&c);
		c.shape = DRAPE_SHAPE_SPHERE;
		c.center[1] = 10.0f;
		c.radius = 0.01f;
		drape_keyframe k[2] = {{0.0f, {0, 0, 0}, {0, 0, 0}},
				       {PULL_FRAMES, {side ? PULL : -PULL, 0, 0}, {0, 0, 0}}};
		c.keyframes = k;
		c.keyframe_count = 2;
		uint32_t idx;
		need(drape_sim_add_collider(sim, &c, &idx, NULL) == DRAPE_OK, "collider");
		need(drape_sim_attach_pins(sim, side ? s->pins_r : s->pins_l, NZ, idx, NULL) ==
			     DRAPE_OK,
		     "attach");
	}
	return sim;
}

static drape_sim *sheet_sim(sheet *s, float tear, int self)
{
	return sheet_sim_ex(s, tear, self, NULL, NULL);
}

static drape_sim *sheet_sim_props(sheet *s, float tear, const float *thick, const float *fric)
{
	return sheet_sim_ex(s, tear, 0, thick, fric);
}

/* The current mesh: triangles and origins (caller-owned copies). */
typedef struct mesh {
	uint32_t n, nt;
	uint32_t *tri, *origin;
	float *pos;
} mesh;

static void mesh_get(const drape_sim *sim, mesh *m)
{
	m->n = drape_sim_vertex_count(sim);
	m->nt = drape_sim_triangle_count(sim);
	m->tri = malloc((size_t)m->nt * 3 * sizeof *m->tri);
	m->origin = malloc((size_t)m->n * sizeof *m->origin);
	m->pos = malloc((size_t)m->n * 3 * sizeof *m->pos);
	need(m->tri && m->origin && m->pos, "mesh alloc");
	need(drape_sim_get_mesh(sim, m->tri, m->origin, NULL) == DRAPE_OK, "get_mesh");
	drape_sim_get_positions(sim, m->pos);
}

static void mesh_free(mesh *m)
{
	free(m->tri);
	free(m->origin);
	free(m->pos);
}

static int u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * Whether m is a valid mesh, with the reason in why: indices in range, three
 * distinct vertices and a nonzero area per triangle, every edge in at most
 * two triangles (manifold), every vertex in a triangle, and each vertex's
 * origin the created vertex (origin[j] == j below created).
 */
static int mesh_valid(const mesh *m, uint32_t created, char *why, size_t len)
{
	uint8_t *used = calloc(m->n, 1);
	uint64_t *e = malloc((size_t)m->nt * 3 * sizeof *e);
	need(used && e, "valid alloc");
	int ok = 1;
	for (uint32_t t = 0; t < m->nt && ok; t++) {
		const uint32_t *v = &m->tri[3 * t];
		for (int k = 0; k < 3; k++) {
			if (v[k] >= m->n) {
				snprintf(why, len, "triangle %u: index %u >= %u", t, v[k], m->n);
				ok = 0;
				break;
			}
			used[v[k]] = 1;
			uint32_t a = v[k], b = v[(k + 1) % 3];
			e[3 * t + k] = a < b ? ((uint64_t)a << 32) | b : ((uint64_t)b << 32) | a;
		}
		if (!ok)
			break;
		if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2]) {
			snprintf(why, len, "triangle %u repeats a vertex", t);
			ok = 0;
			break;
		}
		const float *a = &m->pos[3 * v[0]], *b = &m->pos[3 * v[1]], *c = &m->pos[3 * v[2]];
		double ux = b[0] - a[0], uy = b[1] - a[1], uz = b[2] - a[2];
		double wx = c[0] - a[0], wy = c[1] - a[1], wz = c[2] - a[2];
		double cx = uy * wz - uz * wy, cy = uz * wx - ux * wz, cz = ux * wy - uy * wx;
		if (!(sqrt(cx * cx + cy * cy + cz * cz) > 1e-10)) {
			snprintf(why, len, "triangle %u is degenerate", t);
			ok = 0;
		}
	}
	if (ok) {
		qsort(e, (size_t)m->nt * 3, sizeof *e, u64cmp);
		for (size_t k = 0; k + 2 < (size_t)m->nt * 3; k++)
			if (e[k] == e[k + 2]) {
				snprintf(why, len, "edge (%u, %u) in more than two triangles",
					 (uint32_t)(e[k] >> 32), (uint32_t)e[k]);
				ok = 0;
				break;
			}
	}
	for (uint32_t j = 0; j < m->n && ok; j++) {
		if (!used[j]) {
			snprintf(why, len, "vertex %u is in no triangle", j);
			ok = 0;
		} else if (j < created ? m->origin[j] != j : m->origin[j] >= created) {
			snprintf(why, len, "vertex %u: origin %u", j, m->origin[j]);
			ok = 0;
		}
	}
	free(used);
	free(e);
	return ok;
}

static uint32_t uf_root(uint32_t *p, uint32_t i)
{
	while (p[i] != i)
		i = p[i] = p[p[i]];
	return i;
}

/* Connected pieces of m (vertices joined by triangles); piece[j] is the
 * root of vertex j's piece. Returns the count. */
static uint32_t pieces(const mesh *m, uint32_t *piece)
{
	for (uint32_t j = 0; j < m->n; j++)
		piece[j] = j;
	for (uint32_t t = 0; t < m->nt; t++)
		for (int k = 1; k < 3; k++) {
			uint32_t a = uf_root(piece, m->tri[3 * t]), b = uf_root(piece, m->tri[3 * t + k]);
			if (a != b)
				piece[a > b ? a : b] = a < b ? a : b;
		}
	uint32_t count = 0;
	for (uint32_t j = 0; j < m->n; j++) {
		piece[j] = uf_root(piece, j);
		count += piece[j] == j;
	}
	return count;
}

/* Total mass of the free vertices (from the solver's inverse masses). */
static double free_mass(const drape_sim *sim)
{
	double m = 0.0;
	for (uint32_t i = 0; i < sim->n; i++)
		if (sim->x[i].w > 0.0f)
			m += 1.0 / (double)sim->x[i].w;
	return m;
}

static uint32_t pinned(const drape_sim *sim)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < sim->n; i++)
		k += sim->x[i].w == 0.0f;
	return k;
}

#define TEAR 0.10f

static void test_sheet_tears_along_a_line(void)
{
	sheet s;
	sheet_make(&s, 1);
	drape_sim *sim = sheet_sim(&s, TEAR, 0);
	const uint32_t n0 = s.g.nv;
	const double m0 = free_mass(sim);
	const uint32_t pins0 = pinned(sim);
	uint32_t first_tear = 0, generation = 0, added = 0;
	char why[256];
	for (uint32_t f = 1; f <= FRAMES; f++) {
		drape_sim_stats st;
		CHECK_OK(drape_sim_step(sim, &st, NULL));
		mesh m;
		mesh_get(sim, &m);
		int ok = mesh_valid(&m, n0, why, sizeof why);
		mesh_free(&m);
		CHECKF(ok, "frame %u: %s", f, why);
		CHECKF(st.topology >= generation && st.topology == drape_sim_topology_generation(sim),
		       "frame %u: generation %u after %u", f, st.topology, generation);
		if (st.split_vertices > 0) {
			CHECKF(st.topology == generation + 1, "frame %u split without a new generation",
			       f);
			if (first_tear == 0)
				first_tear = f;
		}
		generation = st.topology;
		added += st.split_vertices;
		CHECKF(drape_sim_vertex_count(sim) == n0 + added, "frame %u: %u vertices, %u + %u split",
		       f, drape_sim_vertex_count(sim), n0, added);
		/* The created vertices' mass, split among copies, is conserved. */
		CHECKF(fabs(free_mass(sim) - m0) <= 1e-6 * m0, "frame %u: mass %.9g, created %.9g", f,
		       free_mass(sim), m0);
		CHECK(pinned(sim) >= pins0);
	}
	CHECKF(first_tear > 0, "the sheet never tore in %u frames", FRAMES);
	mesh m;
	mesh_get(sim, &m);
	uint32_t *piece = malloc((size_t)m.n * sizeof *piece);
	uint32_t count = pieces(&m, piece);
	/* Two pieces, each holding one pin group whole. */
	uint32_t pl = piece[s.pins_l[0]], pr = piece[s.pins_r[0]];
	int ok = count == 2 && pl != pr;
	for (uint32_t j = 0; j < NZ && ok; j++)
		ok = piece[s.pins_l[j]] == pl && piece[s.pins_r[j]] == pr;
	/* The crack: the created vertices that were split lie on one line
	 * across the pull (a band one grid spacing wide in x at rest),
	 * running from the notch's tip to the far side, between the pins. */
	float xmin = INFINITY, xmax = -INFINITY, zmin = INFINITY, zmax = -INFINITY;
	for (uint32_t j = n0; j < m.n; j++) {
		const float *r = &s.g.pos[3 * m.origin[j]];
		xmin = fminf(xmin, r[0]);
		xmax = fmaxf(xmax, r[0]);
		zmin = fminf(zmin, r[2]);
		zmax = fmaxf(zmax, r[2]);
	}
	const float h = W / (float)(NX - 1);
	printf("  torn at frame %u, %u pieces, %u vertices added, crack x in [%.3f, %.3f] z in "
	       "[%.3f, %.3f]\n",
	       first_tear, count, m.n - n0, (double)xmin, (double)xmax, (double)zmin, (double)zmax);
	free(piece);
	mesh_free(&m);
	drape_sim_destroy(sim);
	sheet_free(&s);
	CHECKF(ok, "%u pieces; the pin groups are not one per piece", count);
	CHECKF(xmax - xmin <= 1.01f * h, "crack spans x [%g, %g], wider than one spacing %g",
	       (double)xmin, (double)xmax, (double)h);
	CHECKF(xmin > -0.5f * W + h && xmax < 0.5f * W - h, "crack at x [%g, %g] not between the pins",
	       (double)xmin, (double)xmax);
	CHECKF(zmin <= (float)NOTCH * D / (float)(NZ - 1) + 1e-6f && zmax >= D - 1e-6f,
	       "crack z [%g, %g] does not run from the notch across the sheet", (double)zmin,
	       (double)zmax);
}

/* A threshold above any strain the pull reaches never tears, and the run is
 * bit-identical to one without tearing. */
static void test_threshold_above_strain_never_tears(void)
{
	sheet s;
	sheet_make(&s, 1);
	drape_sim *a = sheet_sim(&s, 0.0f, 0), *b = sheet_sim(&s, 10.0f, 0);
	const uint32_t n = s.g.nv;
	float *pa = malloc((size_t)n * 3 * sizeof *pa), *pb = malloc((size_t)n * 3 * sizeof *pb);
	float smax = 0.0f;
	int same = 1;
	uint32_t gen = 0, nb = n;
	for (uint32_t f = 1; f <= FRAMES; f++) {
		drape_sim_stats sa, sb;
		CHECK_OK(drape_sim_step(a, &sa, NULL));
		CHECK_OK(drape_sim_step(b, &sb, NULL));
		smax = fmaxf(smax, sb.max_strain);
		gen += sb.topology;
		nb = drape_sim_vertex_count(b);
		drape_sim_get_positions(a, pa);
		drape_sim_get_positions(b, pb);
		same = same && memcmp(pa, pb, (size_t)n * 3 * sizeof *pa) == 0;
	}
	free(pa);
	free(pb);
	drape_sim_destroy(a);
	drape_sim_destroy(b);
	sheet_free(&s);
	/* The pull must strain the sheet past the tearing test's threshold,
	 * or this test would prove nothing. */
	CHECKF(smax > TEAR, "max strain %g never passed %g", (double)smax, (double)TEAR);
	CHECKF(nb == n && gen == 0, "torn below its threshold: %u vertices, generation sum %u", nb,
	       gen);
	CHECK(same);
}

/* Runs the tearing sheet at `threads` and returns every frame's positions
 * and final triangles concatenated (caller frees), with *bytes. */
static unsigned char *tear_run(uint32_t threads, size_t *bytes)
{
	sheet s;
	sheet_make(&s, threads);
	drape_sim *sim = sheet_sim(&s, TEAR, 1);
	size_t cap = 1 << 20, len = 0;
	unsigned char *buf = malloc(cap);
	for (uint32_t f = 1; f <= FRAMES; f++) {
		need(drape_sim_step(sim, NULL, NULL) == DRAPE_OK, "step");
		mesh m;
		mesh_get(sim, &m);
		size_t add = (size_t)m.n * 12 + (size_t)m.nt * 12 + 4;
		while (len + add > cap)
			buf = realloc(buf, cap *= 2);
		memcpy(buf + len, &m.n, 4);
		memcpy(buf + len + 4, m.pos, (size_t)m.n * 12);
		memcpy(buf + len + 4 + (size_t)m.n * 12, m.tri, (size_t)m.nt * 12);
		len += add;
		mesh_free(&m);
	}
	drape_sim_destroy(sim);
	sheet_free(&s);
	*bytes = len;
	return buf;
}

static void test_same_frames_at_one_and_two_threads(void)
{
	size_t l1, l2;
	unsigned char *a = tear_run(1, &l1), *b = tear_run(2, &l2);
	int same = l1 == l2 && memcmp(a, b, l1) == 0;
	free(a);
	free(b);
	CHECK(same);
}

/* A checkpoint of a torn sim (state and mesh) restored into a fresh sim
 * built from the same inputs continues bit-identically. */
static void test_restore_torn_mesh_continues_identically(void)
{
	sheet s;
	sheet_make(&s, 1);
	drape_sim *a = sheet_sim(&s, TEAR, 0);
	uint32_t f = 0;
	while (drape_sim_topology_generation(a) < 2 && f < FRAMES) {
		CHECK_OK(drape_sim_step(a, NULL, NULL));
		f++;
	}
	CHECKF(drape_sim_topology_generation(a) >= 2, "no second tear by frame %u", f);
	mesh m;
	mesh_get(a, &m);
	float *vel = malloc((size_t)m.n * 12);
	uint32_t frame;
	drape_sim_get_state(a, m.pos, vel, &frame);
	drape_sim *b = sheet_sim(&s, TEAR, 0);
	/* Bad meshes are refused naming the field, and change nothing. */
	drape_error e;
	m.tri[0] = m.n;
	CHECK(drape_sim_set_mesh(b, m.n, m.tri, m.origin, 7, &e) == DRAPE_EINVAL);
	CHECKF(strstr(e.message, "triangles[0][0]") != NULL, "%s", e.message);
	m.tri[0] = 0;
	CHECK(drape_sim_set_mesh(b, 3, m.tri, m.origin, 7, &e) == DRAPE_ERANGE);
	CHECKF(strstr(e.message, "vertex_count") != NULL, "%s", e.message);
	CHECK(drape_sim_vertex_count(b) == s.g.nv);
	need(drape_sim_get_mesh(a, m.tri, NULL, NULL) == DRAPE_OK, "get_mesh");
	CHECK_OK(drape_sim_set_mesh(b, m.n, m.tri, m.origin, drape_sim_topology_generation(a), &e));
	CHECK_OK(drape_sim_set_state(b, m.pos, vel, frame, &e));
	CHECK(drape_sim_vertex_count(b) == m.n);
	int same = 1;
	for (uint32_t k = 0; k < 5 && same; k++) {
		drape_sim_stats sa, sb;
		CHECK_OK(drape_sim_step(a, &sa, NULL));
		CHECK_OK(drape_sim_step(b, &sb, NULL));
		mesh ma, mb;
		mesh_get(a, &ma);
		mesh_get(b, &mb);
		same = ma.n == mb.n && sa.topology == sb.topology &&
		       memcmp(ma.pos, mb.pos, (size_t)ma.n * 12) == 0 &&
		       memcmp(ma.tri, mb.tri, (size_t)ma.nt * 12) == 0;
		mesh_free(&ma);
		mesh_free(&mb);
	}
	free(vel);
	mesh_free(&m);
	drape_sim_destroy(a);
	drape_sim_destroy(b);
	sheet_free(&s);
	CHECK(same);
}

/* Bad thresholds are refused naming the field; tearing cannot be switched
 * on after create. */
static void test_bad_values_refused(void)
{
	drape_sim_params p;
	drape_sim_params_default(&p);
	drape_error e;
	const float bad[] = {-0.1f, NAN, INFINITY};
	for (int i = 0; i < 3; i++) {
		p.tear_strain = bad[i];
		CHECK(drape_sim_params_validate(&p, &e) == DRAPE_EINVAL);
		CHECKF(strstr(e.message, "params.tear_strain") != NULL, "%s", e.message);
	}
	sheet s;
	sheet_make(&s, 1);
	drape_sim *sim = sheet_sim(&s, 0.0f, 0);
	drape_sim_get_params(sim, &p);
	p.tear_strain = 0.2f;
	CHECK(drape_sim_set_params(sim, &p, &e) == DRAPE_EINVAL);
	CHECKF(strstr(e.message, "params.tear_strain") != NULL, "%s", e.message);
	CHECK(drape_sim_get_mesh(sim, NULL, NULL, &e) == DRAPE_ESTATE);
	drape_sim_get_params(sim, &p);
	CHECK(p.tear_strain == 0.0f);
	drape_sim_destroy(sim);
	sheet_free(&s);
}

/*
 * The torn pieces keep colliding: once torn, the pins let go of their
 * colliders (they stay pinned where they are) and the left piece is lifted
 * 1.5 cm and moved over the right one; with gravity both settle on a
 * ground plane, the left piece lying on the right. With self-collision no
 * two triangles intersect at any frame (drape_preflight, exact); without
 * it they do, so the count can fail.
 */
static uint64_t drop_pieces(int self, float *gap_out)
{
	sheet s;
	sheet_make(&s, 1);
	drape_sim *sim = sheet_sim(&s, TEAR, self);
	uint32_t f = 0;
	mesh m;
	for (;;) {
		need(drape_sim_step(sim, NULL, NULL) == DRAPE_OK, "step");
		f++;
		mesh_get(sim, &m);
		uint32_t *piece = malloc((size_t)m.n * sizeof *piece);
		uint32_t count = pieces(&m, piece);
		free(piece);
		if (count == 2 || f > 2 * FRAMES)
			break;
		mesh_free(&m);
	}
	need(f <= 2 * FRAMES, "sheet torn in two");
	need(drape_sim_remove_collider(sim, 1, NULL) == DRAPE_OK, "remove");
	need(drape_sim_remove_collider(sim, 0, NULL) == DRAPE_OK, "remove");
	uint32_t *piece = malloc((size_t)m.n * sizeof *piece);
	pieces(&m, piece);
	const uint32_t left = piece[s.pins_l[0]];
	/* Left piece over the right one: its x range shifted by W/2, lifted. */
	float *vel = calloc((size_t)m.n * 3, sizeof *vel);
	for (uint32_t j = 0; j < m.n; j++) {
		m.pos[3 * j + 1] = 0.0f;
		if (piece[j] == left) {
			m.pos[3 * j] += 0.5f * W;
			m.pos[3 * j + 1] = 0.015f;
		}
	}
	need(drape_sim_set_state(sim, m.pos, vel, drape_sim_frame(sim), NULL) == DRAPE_OK, "state");
	drape_sim_params p;
	drape_sim_get_params(sim, &p);
	p.gravity[1] = -9.81f;
	need(drape_sim_set_params(sim, &p, NULL) == DRAPE_OK, "params");
	drape_collider_desc g;
	drape_collider_desc_default(&g);
	g.shape = DRAPE_SHAPE_PLANE;
	g.point[1] = -0.02f;
	uint32_t idx;
	need(drape_sim_add_collider(sim, &g, &idx, NULL) == DRAPE_OK, "ground");
	uint64_t worst = 0;
	for (uint32_t k = 0; k < 24; k++) {
		need(drape_sim_step(sim, NULL, NULL) == DRAPE_OK, "drop step");
		drape_sim_get_positions(sim, m.pos);
		uint64_t count = 0;
		need(drape_preflight(m.pos, m.n, m.tri, m.nt, NULL, 0, &count, NULL) == DRAPE_OK,
		     "preflight");
		worst = count > worst ? count : worst;
	}
	/* How far the left piece's free vertices sit above the right piece's
	 * (mean heights): near the cloth thickness when they lie on it. */
	double yl = 0, yr = 0;
	uint32_t cl = 0, cr = 0;
	for (uint32_t j = 0; j < m.n; j++) {
		float x = m.pos[3 * j];
		if (x < 0.05f || x > 0.25f)
			continue;
		if (piece[j] == left)
			yl += m.pos[3 * j + 1], cl++;
		else
			yr += m.pos[3 * j + 1], cr++;
	}
	*gap_out = (float)((cl ? yl / cl : 1.0) - (cr ? yr / cr : 0.0));
	free(vel);
	free(piece);
	mesh_free(&m);
	drape_sim_destroy(sim);
	sheet_free(&s);
	return worst;
}

static void test_torn_pieces_keep_colliding(void)
{
	float gap_self, gap_none;
	uint64_t with = drop_pieces(1, &gap_self), without = drop_pieces(0, &gap_none);
	printf("  intersecting pairs: %llu with self-collision (gap %.4f m), %llu without (gap "
	       "%.4f m)\n",
	       (unsigned long long)with, (double)gap_self, (unsigned long long)without,
	       (double)gap_none);
	CHECKF(without > 0, "the pieces never met without self-collision: the drop proves nothing");
	CHECKF(with == 0, "%llu intersecting triangle pairs between the pieces",
	       (unsigned long long)with);
	CHECKF(gap_self > 0.0f && gap_self < 0.015f, "left piece %.4f m above the right: not lying on it",
	       (double)gap_self);
}

/*
 * Per-vertex properties survive a tear: every vertex, copies included,
 * keeps its created vertex's thickness and friction, and the colliders read
 * the rebuilt sim's arrays (not the freed ones). A session of several cloth
 * objects is refused: a copy would fall outside its object's range.
 */
static void test_vertex_props_follow_the_tear(void)
{
	sheet s;
	sheet_make(&s, 1);
	float *th = malloc((size_t)s.g.nv * sizeof *th), *fr = malloc((size_t)s.g.nv * sizeof *fr);
	CHECK(th != NULL && fr != NULL);
	for (uint32_t j = 0; j < s.g.nv; j++) {
		/* Left and right of the crack differ, so a copy taking the
		 * wrong vertex's value shows. */
		th[j] = s.g.pos[3 * j] < 0.0f ? 0.002f : 0.003f;
		fr[j] = s.g.pos[3 * j] < 0.0f ? 0.25f : 0.75f;
	}
	/* Two cloths of one triangle each. */
	static const float two_pos[18] = {0, 1, 0, 0.1f, 1, 0, 0, 1, 0.1f, 0, 1.1f, 0, 0.1f, 1.1f, 0, 0, 1.1f, 0.1f};
	static const uint32_t two_tri[6] = {0, 1, 2, 3, 4, 5};
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = two_pos;
	d.vertex_count = 6;
	d.triangles = two_tri;
	d.triangle_count = 2;
	drape_sim_object ob[2] = {{0, 3, 1, 1}, {3, 3, 1, 1}};
	d.objects = ob;
	d.object_count = 2;
	d.params.tear_strain = TEAR;
	d.params.model = DRAPE_MODEL_XPBD;
	drape_sim *sim = NULL;
	drape_error e;
	drape_err rc = drape_sim_create(&d, &sim, &e);
	CHECKF(rc == DRAPE_EINVAL && strstr(e.message, "params.tear_strain") != NULL, "%s: %s",
	       drape_err_name(rc), e.message);
	if (rc == DRAPE_OK)
		drape_sim_destroy(sim);

	/* The pulled sheet of the line test, with the arrays. */
	sim = sheet_sim_props(&s, TEAR, th, fr);
	uint32_t torn = 0;
	for (uint32_t f = 1; f <= FRAMES && torn == 0; f++) {
		drape_sim_stats st;
		CHECK_OK(drape_sim_step(sim, &st, NULL));
		torn = st.split_vertices;
	}
	CHECKF(torn > 0, "the sheet never tore in %u frames", FRAMES);
	mesh m;
	mesh_get(sim, &m);
	int ok = sim->vthick != NULL && sim->vfric != NULL && sim->colliders.cloth_thickness == sim->vthick &&
		 sim->colliders.cloth_friction == sim->vfric && m.n > s.g.nv;
	for (uint32_t j = 0; j < m.n && ok; j++) {
		uint32_t i = sim->rank ? sim->rank[j] : j;
		ok = sim->vthick[i] == th[m.origin[j]] && sim->vfric[i] == fr[m.origin[j]];
		if (!ok)
			printf("  vertex %u (from %u): thickness %g friction %g\n", j, m.origin[j],
			       (double)sim->vthick[i], (double)sim->vfric[i]);
	}
	/* A few more frames on the rebuilt sim: its colliders read its arrays. */
	for (int f = 0; f < 3; f++)
		CHECK_OK(drape_sim_step(sim, NULL, NULL));
	CHECKF(ok, "per-vertex properties lost or misplaced after the tear (%u vertices)", m.n);
	mesh_free(&m);
	drape_sim_destroy(sim);
	sheet_free(&s);
	free(th);
	free(fr);
}

static const check_test tests[] = {
	CHECK_TEST(test_sheet_tears_along_a_line),
	CHECK_TEST(test_threshold_above_strain_never_tears),
	CHECK_TEST(test_same_frames_at_one_and_two_threads),
	CHECK_TEST(test_restore_torn_mesh_continues_identically),
	CHECK_TEST(test_bad_values_refused),
	CHECK_TEST(test_torn_pieces_keep_colliding),
	CHECK_TEST(test_vertex_props_follow_the_tear),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
