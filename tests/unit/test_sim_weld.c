/*
 * Welds (server/sim/weld.c): coincident vertices of two panels, joined by
 * rigid vertex-vertex stitches, are one particle, so a welded seam bends as
 * the uncut cloth does.
 *
 *  - Peirce's cantilever (the material test's, test_sim_material.c): a
 *    cotton-like strip clamped at one end droops under its weight; cut
 *    across the middle of its overhang into two panels and welded, it must
 *    droop as the uncut strip (tip within 1 %, every vertex within 0.5 mm)
 *    and give Peirce's bending length (B / w)^(1/3) within 10 %, while the
 *    old weld, a rigid stitch (SIM_CREATE_NO_WELD), folds at the cut like a
 *    hinge and misses by far. Welded vertices carry the same bits in every
 *    frame.
 *  - The same bits at any thread count, and after a restore from a state
 *    (a checkpoint) as in the run never stopped.
 *  - Pins, masses and per-vertex properties across a weld, and the
 *    refusals: tearing a welded cloth, a weld inside one triangle.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#define G 9.81

/* The cotton-like fabric of test_sim_material.c. */
#define B_COTTON 4.9e-6f
#define RHO_COTTON 0.15f

/* A strip along x, nz vertices across, clamped by its first three columns
 * (x in [-2h, 0]) and overhanging by l = 10 h; `cut` > 0 cuts it across
 * at column `cut`: the triangles beyond the column take copies of its
 * vertices (the second panel), appended after the grid's, and each copy is
 * stitched to its original, vertex to vertex (a weld). */
typedef struct strip {
	grid g;
	float *pos;
	uint32_t *tri;
	uint32_t nv, nt, nx, nz;
	drape_stitch *st;
	uint32_t ns;
	uint32_t *pins;
	uint32_t np;
} strip;

static void need(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL fixture: %s\n", what);
		exit(1);
	}
}

static void strip_make(strip *s, float l, uint32_t cut)
{
	memset(s, 0, sizeof *s);
	const float h = l / 10.0f, width = 0.01f;
	s->nx = 13;
	s->nz = 5;
	const float o[3] = {-2.0f * h, 0, 0}, u[3] = {(float)(s->nx - 1) * h, 0, 0}, v[3] = {0, 0, width};
	need(grid_make(&s->g, s->nx, s->nz, o, u, v), "grid_make");
	const uint32_t extra = cut ? s->nz : 0;
	s->nv = s->g.nv + extra;
	s->nt = s->g.nt;
	s->pos = malloc((size_t)s->nv * 3 * sizeof *s->pos);
	s->tri = malloc((size_t)s->nt * 3 * sizeof *s->tri);
	s->st = malloc((extra ? extra : 1) * sizeof *s->st);
	s->pins = malloc(3 * s->nz * sizeof *s->pins);
	need(s->pos && s->tri && s->st && s->pins, "out of memory");
	memcpy(s->pos, s->g.pos, (size_t)s->g.nv * 3 * sizeof *s->pos);
	memcpy(s->tri, s->g.tri, (size_t)s->nt * 3 * sizeof *s->tri);
	for (uint32_t j = 0; j < extra; j++) {
		uint32_t orig = j * s->nx + cut, copy = s->g.nv + j;
		memcpy(&s->pos[3 * copy], &s->pos[3 * orig], 3 * sizeof *s->pos);
		s->st[s->ns++] = (drape_stitch){copy, orig, orig, 0.0f};
	}
	if (cut)
		for (uint32_t t = 0; t < s->nt; t++) {
			uint32_t *q = &s->tri[3 * (size_t)t];
			/* A triangle beyond the cut has a vertex past the column. */
			int beyond = q[0] % s->nx > cut || q[1] % s->nx > cut || q[2] % s->nx > cut;
			for (int k = 0; beyond && k < 3; k++)
				if (q[k] % s->nx == cut)
					q[k] = s->g.nv + q[k] / s->nx;
		}
	for (uint32_t j = 0; j < s->nz; j++)
		for (uint32_t i = 0; i < 3; i++)
			s->pins[s->np++] = j * s->nx + i;
}

static void strip_free(strip *s)
{
	grid_free(&s->g);
	free(s->pos);
	free(s->tri);
	free(s->st);
	free(s->pins);
}

static void strip_desc(drape_sim_desc *d, const strip *s, drape_pool *pool)
{
	drape_sim_desc_default(d);
	d->positions = s->pos;
	d->vertex_count = s->nv;
	d->triangles = s->tri;
	d->triangle_count = s->nt;
	d->stitches = s->st;
	d->stitch_count = s->ns;
	d->pins = s->pins;
	d->pin_count = s->np;
	d->pool = pool;
	drape_sim_params *p = &d->params;
	drape_sim_params_default(p);
	p->model = DRAPE_MODEL_XPBD;
	p->stretch_k = 5000.0f;
	p->shear_k = 50.0f;
	p->bend_k = B_COTTON;
	p->density = RHO_COTTON;
	p->damping_rate = 6.0f;
	p->drag = 0.0f;
	p->lift = 0.0f;
	p->substeps = 16;
	p->iterations = 40;
}

/* Steps 72 frames (settled by 2 s at 6/s damping) and returns the tip
 * angle below horizontal averaged over the last second, as the material
 * test measures it; the grid vertices' final positions in `xg` (nx * nz
 * * 3). Counts the frames whose welded copies differ from their originals
 * by a single bit in *mismatch. */
static double droop(const strip *s, uint32_t flags, drape_pool *pool, float *xg, uint32_t *mismatch)
{
	drape_sim_desc d;
	strip_desc(&d, s, pool);
	drape_sim *sim = NULL;
	drape_error err;
	float *x = malloc((size_t)s->nv * 3 * sizeof *x);
	need(x != NULL, "out of memory");
	need(sim_create_ex(&d, flags, &sim, &err) == DRAPE_OK, err.message);
	double ang = 0.0;
	*mismatch = 0;
	for (int f = 0; f < 72; f++) {
		need(drape_sim_step(sim, NULL, &err) == DRAPE_OK, err.message);
		drape_sim_get_positions(sim, x);
		for (uint32_t k = 0; k < s->ns; k++)
			if (memcmp(&x[3 * s->st[k].a], &x[3 * s->st[k].b0], 3 * sizeof *x) != 0) {
				(*mismatch)++;
				break;
			}
		if (f >= 48) {
			double tx = 0, ty = 0;
			for (uint32_t j = 0; j < s->nz; j++) {
				tx += x[3 * (j * s->nx + s->nx - 1)];
				ty += x[3 * (j * s->nx + s->nx - 1) + 1];
			}
			ang += atan2(-ty / s->nz, tx / s->nz) / 24.0;
		}
	}
	memcpy(xg, x, (size_t)s->g.nv * 3 * sizeof *x);
	drape_sim_destroy(sim);
	free(x);
	return ang;
}

/* Mean tip drop (m) of the grid positions xg. */
static double tip_drop(const strip *s, const float *xg)
{
	double y = 0.0;
	for (uint32_t j = 0; j < s->nz; j++)
		y += xg[3 * (j * s->nx + s->nx - 1) + 1];
	return -y / s->nz;
}

static double max_apart(const float *a, const float *b, uint32_t n)
{
	double worst = 0.0;
	for (uint32_t i = 0; i < n; i++) {
		double d2 = 0.0;
		for (int k = 0; k < 3; k++) {
			double e = (double)a[3 * i + k] - b[3 * i + k];
			d2 += e * e;
		}
		worst = fmax(worst, sqrt(d2));
	}
	return worst;
}

static double peirce_c(double l, double theta)
{
	return l * cbrt(cos(theta / 2.0) / (8.0 * tan(theta)));
}

static void test_welded_cantilever_bends_like_uncut(void)
{
	const double c = cbrt(B_COTTON / (RHO_COTTON * G));
	const float l = (float)(2.0 * c);
	strip uncut, cut;
	strip_make(&uncut, l, 0);
	/* Column 7 is x = 5 h, the middle of the overhang, where the
	 * bending moment is a quarter of the clamp's. */
	strip_make(&cut, l, 7);
	size_t bytes = (size_t)uncut.g.nv * 3 * sizeof(float);
	float *xu = malloc(bytes), *xw = malloc(bytes), *xh = malloc(bytes);
	need(xu && xw && xh, "out of memory");
	uint32_t mu, mw, mh;
	double au = droop(&uncut, 0, NULL, xu, &mu);
	double aw = droop(&cut, 0, NULL, xw, &mw);
	double ah = droop(&cut, SIM_CREATE_NO_WELD, NULL, xh, &mh);
	double du = tip_drop(&uncut, xu), dw = tip_drop(&cut, xw), dh = tip_drop(&cut, xh);
	double pw = max_apart(xu, xw, uncut.g.nv), ph = max_apart(xu, xh, uncut.g.nv);
	double cw = peirce_c(l, aw);
	printf("  cantilever, overhang %.1f mm cut at its middle: tip drop uncut %.3f mm, welded "
	       "%.3f mm (%+.3f %%), rigid stitch (hinge) %.3f mm (%+.1f %%); farthest vertex from "
	       "the uncut %.4f mm welded, %.3f mm hinge; tip angle %.2f / %.2f / %.2f deg; "
	       "welded bending length %.2f mm, theory (B/w)^(1/3) %.2f mm\n",
	       l * 1e3, du * 1e3, dw * 1e3, (dw / du - 1.0) * 100.0, dh * 1e3,
	       (dh / du - 1.0) * 100.0, pw * 1e3, ph * 1e3, au * 180 / M_PI, aw * 180 / M_PI,
	       ah * 180 / M_PI, cw * 1e3, c * 1e3);
	CHECKF(fabs(dw / du - 1.0) < 0.01, "welded tip drop %.4f mm, uncut %.4f mm", dw * 1e3,
	       du * 1e3);
	CHECKF(pw < 0.5e-3, "a welded vertex %.4f mm from the uncut strip's", pw * 1e3);
	CHECKF(fabs(cw / c - 1.0) < 0.10, "welded bending length %.3f mm, theory %.3f mm", cw * 1e3,
	       c * 1e3);
	/* The hinge: nothing bends across the cut, the outer half hangs (its
	 * tip swings in as it drops, so the angle tells, not the drop). */
	CHECKF(ah / au - 1.0 > 0.10, "hinge tip angle %.2f deg, uncut %.2f deg", ah * 180 / M_PI,
	       au * 180 / M_PI);
	CHECKF(ph > 2e-3, "hinge's farthest vertex only %.3f mm from the uncut", ph * 1e3);
	CHECKF(mw == 0, "%u frames with a welded copy off its original", mw);
	free(xu);
	free(xw);
	free(xh);
	strip_free(&uncut);
	strip_free(&cut);
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* One, three threads and the scalar reference give the same bits; so does
 * a sim created afresh and given the state of frame 6 (a checkpoint's
 * restore), at frame 12, against the run never stopped. */
static void test_weld_same_bits_threads_and_restore(void)
{
	strip s;
	strip_make(&s, 0.03f, 7);
	const size_t bytes = (size_t)s.nv * 3 * sizeof(float);
	float *x = malloc(bytes), *v = malloc(bytes), *y = malloc(bytes);
	need(x && v && y, "out of memory");
	uint64_t h[3];
	drape_error err;
	for (int k = 0; k < 3; k++) {
		drape_pool *pool = NULL;
		if (k == 1)
			CHECK_OK(drape_pool_create(3, &pool, &err));
		drape_sim_desc d;
		strip_desc(&d, &s, pool);
		drape_sim *sim = NULL;
		CHECK_OK(sim_create_ex(&d, k == 2 ? SIM_CREATE_REFERENCE : 0, &sim, &err));
		for (int f = 0; f < 12; f++) {
			CHECK_OK(drape_sim_step(sim, NULL, &err));
			if (k == 0 && f == 5)
				drape_sim_get_state(sim, x, v, NULL);
		}
		drape_sim_get_positions(sim, y);
		h[k] = fnv(y, bytes);
		drape_sim_destroy(sim);
		drape_pool_destroy(pool);
	}
	printf("  welded strip, 12 frames: hash %016llx (1 thread), %016llx (3), %016llx "
	       "(scalar reference)\n",
	       (unsigned long long)h[0], (unsigned long long)h[1], (unsigned long long)h[2]);
	CHECK(h[0] == h[1] && h[0] == h[2]);

	/* The restore: the copies' state is ignored in favour of their
	 * originals' (a weld is one particle), so spoil it on purpose. */
	drape_sim_desc d;
	strip_desc(&d, &s, NULL);
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	for (uint32_t j = 0; j < s.ns; j++)
		x[3 * s.st[j].a + 1] += 0.01f;
	CHECK_OK(drape_sim_set_state(sim, x, v, 6, &err));
	drape_sim_get_positions(sim, y);
	for (uint32_t j = 0; j < s.ns; j++)
		CHECK(memcmp(&y[3 * s.st[j].a], &y[3 * s.st[j].b0], 3 * sizeof *y) == 0);
	for (int f = 6; f < 12; f++)
		CHECK_OK(drape_sim_step(sim, NULL, &err));
	drape_sim_get_positions(sim, y);
	CHECK(fnv(y, bytes) == h[0]);
	drape_sim_destroy(sim);
	free(x);
	free(v);
	free(y);
	strip_free(&s);
}

/* The mass of a weld is its vertices' (the cloth weighs the same cut or
 * not); a pinned copy pins its original; per-vertex inverse masses add as
 * masses; the topology counts the merged vertices. */
static void test_weld_masses_and_pins(void)
{
	strip u, s;
	strip_make(&u, 0.03f, 0);
	strip_make(&s, 0.03f, 7);
	drape_error err;
	drape_sim_desc d;
	drape_sim *a = NULL, *b = NULL;
	/* A soft fabric (1 N/m), so the tethers' slack is above its 1 %
	 * floor and depends on the pin count. */
	strip_desc(&d, &u, NULL);
	d.params.stretch_k = 1.0f;
	CHECK_OK(drape_sim_create(&d, &a, &err));
	strip_desc(&d, &s, NULL);
	d.params.stretch_k = 1.0f;
	CHECK_OK(drape_sim_create(&d, &b, &err));
	double ma = 0.0, mb = 0.0;
	for (uint32_t i = 0; i < a->n; i++)
		ma += a->x[i].w > 0.0f ? 1.0 / a->x[i].w : 0.0;
	for (uint32_t i = 0; i < b->n; i++)
		mb += b->x[i].w > 0.0f ? 1.0 / b->x[i].w : 0.0;
	drape_sim_topology ta, tb;
	drape_sim_get_topology(a, &ta);
	drape_sim_get_topology(b, &tb);
	printf("  free mass uncut %.6g kg, cut and welded %.6g kg; welds %u, stitches kept %u, "
	       "edges %u / %u, bends %u / %u\n",
	       ma, mb, tb.welds, tb.stitches, ta.edges, tb.edges, ta.bends, tb.bends);
	CHECKF(fabs(mb / ma - 1.0) < 1e-5, "mass %.8g against %.8g", mb, ma);
	CHECK(tb.welds == s.nz && tb.stitches == 0 && tb.unreferenced_vertices == 0);
	/* The welded mesh has the uncut one's edges and bends exactly. */
	CHECK(tb.edges == ta.edges && tb.bends == ta.bends && tb.pinned_vertices == ta.pinned_vertices);
	/* A follower has w = 0 without being a pin: the tethers are the
	 * uncut strip's, and so is their slack (which divides by the pins). */
	CHECKF(tb.long_range == ta.long_range && sim_tether_slack(a) == sim_tether_slack(b),
	       "tethers %u / %u, slack %g / %g", ta.long_range, tb.long_range, sim_tether_slack(a),
	       sim_tether_slack(b));
	drape_sim_destroy(a);
	drape_sim_destroy(b);

	/* Pin the copies only (the second panel's side of the cut): the
	 * column holds still, both sides of it. */
	uint32_t pins[5];
	for (uint32_t j = 0; j < s.nz; j++)
		pins[j] = s.g.nv + j;
	strip_desc(&d, &s, NULL);
	d.pins = pins;
	d.pin_count = s.nz;
	CHECK_OK(drape_sim_create(&d, &b, &err));
	for (int f = 0; f < 10; f++)
		CHECK_OK(drape_sim_step(b, NULL, &err));
	float *x = malloc((size_t)s.nv * 3 * sizeof *x);
	need(x != NULL, "out of memory");
	drape_sim_get_positions(b, x);
	for (uint32_t j = 0; j < s.nz; j++) {
		uint32_t orig = j * s.nx + 7;
		CHECK(memcmp(&x[3 * orig], &s.pos[3 * orig], 3 * sizeof *x) == 0);
		CHECK(memcmp(&x[3 * (s.g.nv + j)], &s.pos[3 * orig], 3 * sizeof *x) == 0);
	}
	drape_sim_get_topology(b, &tb);
	CHECK(tb.pinned_vertices == s.nz);
	drape_sim_destroy(b);

	/* Per-vertex inverse masses: 1 kg on each side of the cut is 2 kg. */
	float *w = malloc(s.nv * sizeof *w);
	need(w != NULL, "out of memory");
	for (uint32_t i = 0; i < s.nv; i++)
		w[i] = 1.0f;
	strip_desc(&d, &s, NULL);
	d.inv_mass = w;
	d.pins = NULL;
	d.pin_count = 0;
	CHECK_OK(drape_sim_create(&d, &b, &err));
	uint32_t rep = b->weld_rep[b->rank ? b->rank[s.g.nv] : s.g.nv];
	CHECKF(b->x[rep].w == 0.5f, "welded inverse mass %g, want 0.5", (double)b->x[rep].w);
	drape_sim_destroy(b);

	/* Painted properties meet at the seam: the copies (second panel) 6 mm
	 * thick and of friction 0.4, the first panel 2 mm and 0.2: a weld
	 * keeps the larger thickness and the mean friction. */
	float *th = malloc(s.nv * sizeof *th), *fr = malloc(s.nv * sizeof *fr);
	need(th && fr, "out of memory");
	for (uint32_t i = 0; i < s.nv; i++) {
		th[i] = i >= s.g.nv ? 0.006f : 0.002f;
		fr[i] = i >= s.g.nv ? 0.4f : 0.2f;
	}
	strip_desc(&d, &s, NULL);
	d.vertex_thickness = th;
	d.vertex_friction = fr;
	CHECK_OK(drape_sim_create(&d, &b, &err));
	rep = b->weld_rep[b->rank ? b->rank[s.g.nv] : s.g.nv];
	CHECKF(b->vthick[rep] == 0.006f && fabsf(b->vfric[rep] - 0.3f) < 1e-6f,
	       "welded thickness %g friction %g", (double)b->vthick[rep], (double)b->vfric[rep]);
	/* A vertex away from the seam keeps its own. */
	uint32_t far = b->rank ? b->rank[0] : 0;
	CHECK(b->vthick[far] == 0.002f && b->vfric[far] == 0.2f);
	drape_sim_destroy(b);
	free(th);
	free(fr);
	free(w);
	free(x);
	strip_free(&u);
	strip_free(&s);
}

static int float_cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* The fabric's warp direction beside a seam comes from the triangle's own
 * uvs: the second panel's uv island moved 5 units along u (as a pattern
 * layout places panels apart) leaves every edge's warp fraction as in the
 * uncut strip, whose uvs are one island. */
static void test_weld_keeps_each_panels_uvs(void)
{
	strip u, s;
	strip_make(&u, 0.03f, 0);
	strip_make(&s, 0.03f, 7);
	float *uvu = malloc(u.nv * 2 * sizeof *uvu), *uvs = malloc(s.nv * 2 * sizeof *uvs);
	need(uvu && uvs, "out of memory");
	for (uint32_t i = 0; i < u.nv; i++) {
		uvu[2 * i] = u.pos[3 * i] * 40.0f;
		uvu[2 * i + 1] = u.pos[3 * i + 2] * 40.0f;
	}
	for (uint32_t i = 0; i < s.nv; i++) {
		/* The second panel: the copies and every grid vertex past the cut. */
		int second = i >= s.g.nv || i % s.nx > 7;
		uvs[2 * i] = s.pos[3 * i] * 40.0f + (second ? 5.0f : 0.0f);
		uvs[2 * i + 1] = s.pos[3 * i + 2] * 40.0f;
	}
	drape_error err;
	drape_sim_desc d;
	drape_sim *a = NULL, *b = NULL;
	strip_desc(&d, &u, NULL);
	d.uvs = uvu;
	CHECK_OK(drape_sim_create(&d, &a, &err));
	strip_desc(&d, &s, NULL);
	d.uvs = uvs;
	CHECK_OK(drape_sim_create(&d, &b, &err));
	CHECK(a->stretch_count == b->stretch_count);
	uint32_t n = a->stretch_count;
	float *wa = malloc(n * sizeof *wa), *wb = malloc(n * sizeof *wb);
	need(wa && wb, "out of memory");
	memcpy(wa, a->xpbd.stretch_warp, n * sizeof *wa);
	memcpy(wb, b->xpbd.stretch_warp, n * sizeof *wb);
	qsort(wa, n, sizeof *wa, float_cmp);
	qsort(wb, n, sizeof *wb, float_cmp);
	double worst = 0.0;
	for (uint32_t i = 0; i < n; i++)
		worst = fmax(worst, fabs((double)wa[i] - wb[i]));
	printf("  warp fractions of %u edges, welded against uncut: largest difference %.2g\n", n,
	       worst);
	CHECK(worst < 1e-4);
	drape_sim_destroy(a);
	drape_sim_destroy(b);
	free(wa);
	free(wb);
	free(uvu);
	free(uvs);
	strip_free(&u);
	strip_free(&s);
}

/* What is not a weld stays a stitch; what cannot be welded is refused with
 * the field named and nothing made. */
static void test_weld_refusals_and_non_welds(void)
{
	strip s;
	strip_make(&s, 0.03f, 7);
	drape_error err;
	drape_sim_desc d;
	drape_sim *sim = NULL;
	drape_sim_topology t;

	/* A soft stitch gives: it is not merged. */
	strip_desc(&d, &s, NULL);
	d.stitch_k = 100.0f;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	drape_sim_get_topology(sim, &t);
	CHECK(t.welds == 0 && t.stitches == s.nz);
	drape_sim_destroy(sim);

	/* Ends 1 mm apart (panels to sew) are not a weld either. */
	float *rest = malloc((size_t)s.nv * 3 * sizeof *rest);
	need(rest != NULL, "out of memory");
	memcpy(rest, s.pos, (size_t)s.nv * 3 * sizeof *rest);
	for (uint32_t j = 0; j < s.nz; j++)
		rest[3 * (s.g.nv + j)] += 1e-3f;
	strip_desc(&d, &s, NULL);
	d.rest_positions = rest;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	drape_sim_get_topology(sim, &t);
	CHECK(t.welds == 0 && t.stitches == s.nz);
	drape_sim_destroy(sim);
	free(rest);

	/* Tearing splits vertices a weld has merged: refused, named. */
	strip_desc(&d, &s, NULL);
	d.params.tear_strain = 0.2f;
	sim = NULL;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECK(strstr(err.message, "params.tear_strain") != NULL &&
	      strstr(err.message, "stitches[0]") != NULL);
	/* Without welds (a soft seam) the same cloth may tear. */
	d.stitch_k = 100.0f;
	CHECK_OK(drape_sim_create(&d, &sim, &err));
	drape_sim_destroy(sim);

	/* Welding two vertices of one triangle would collapse it. */
	drape_stitch bad = {0, 1, 1, 0.0f};
	float *pos = malloc((size_t)s.nv * 3 * sizeof *pos);
	need(pos != NULL, "out of memory");
	memcpy(pos, s.pos, (size_t)s.nv * 3 * sizeof *pos);
	memcpy(&pos[3], &pos[0], 3 * sizeof *pos);
	strip_desc(&d, &s, NULL);
	d.positions = pos;
	d.stitches = &bad;
	d.stitch_count = 1;
	sim = NULL;
	CHECK(drape_sim_create(&d, &sim, &err) == DRAPE_EINVAL && sim == NULL);
	CHECK(strstr(err.message, "stitches") != NULL && strstr(err.message, "triangles[") != NULL);
	free(pos);
	strip_free(&s);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_welded_cantilever_bends_like_uncut),
		CHECK_TEST(test_weld_same_bits_threads_and_restore),
		CHECK_TEST(test_weld_masses_and_pins),
		CHECK_TEST(test_weld_keeps_each_panels_uvs),
		CHECK_TEST(test_weld_refusals_and_non_welds),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
