/*
 * The self-collision's candidate reuse across substeps (server/sim/
 * selfreuse.c): a list collected with a wider reach serves later substeps,
 * each filtering it, and must give exactly the candidates a fresh search of
 * the whole cloth gives, for as long as it is used. Tested on the module
 * directly with hand-made motions of two cloth layers.
 */
#include "check.h"

#include "drape/sim.h"
#include "server/sim/internal.h"
#include "server/sim/selfcollide_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two n x n sheets of spacing h, the second `gap` above the first. */
typedef struct layers {
	uint32_t n, nv, nt;
	sim_vec4 *rest;
	uint32_t *tri;
} layers;

static int layers_make(layers *L, uint32_t n, float h, float gap)
{
	L->n = n;
	L->nv = 2 * n * n;
	L->nt = 2 * 2 * (n - 1) * (n - 1);
	L->rest = malloc((size_t)L->nv * sizeof *L->rest);
	L->tri = malloc((size_t)L->nt * 3 * sizeof *L->tri);
	if (L->rest == NULL || L->tri == NULL)
		return 0;
	uint32_t t = 0;
	for (uint32_t k = 0; k < 2; k++) {
		const uint32_t o = k * n * n;
		for (uint32_t j = 0; j < n; j++)
			for (uint32_t i = 0; i < n; i++)
				L->rest[o + j * n + i] = (sim_vec4){(float)i * h, (float)k * gap,
								    (float)j * h, 1.0f};
		for (uint32_t j = 0; j + 1 < n; j++)
			for (uint32_t i = 0; i + 1 < n; i++) {
				uint32_t a = o + j * n + i, b = a + 1, c = a + n, d = c + 1;
				uint32_t q[6] = {a, b, d, a, d, c};
				for (int m = 0; m < 6; m++)
					L->tri[3 * t + (uint32_t)(m / 3) * 3 + (uint32_t)(m % 3)] = q[m];
				t += 2;
			}
	}
	return 1;
}

static void layers_free(layers *L)
{
	free(L->rest);
	free(L->tri);
}

/* The positions at time k. Wave: the whole cloth carried 3 cm per step (a
 * common translation, which the list's budget ignores) and the top layer
 * waving towards and away from the bottom one, more and more. Approach:
 * the top layer, 0.7 mm farther above the bottom one at k = 0 than the
 * width of a list for a 3 mm thickness, comes down 0.2 mm per step, so the
 * pairs enter the reach from just outside the first list, the motion its
 * budget is tightest for: a budget four times the proven one misses them. */
static void pose(const layers *L, int approach, float k, sim_vec4 *out)
{
	for (uint32_t v = 0; v < L->nv; v++) {
		sim_vec4 q = L->rest[v];
		const int top = v >= L->n * L->n;
		if (approach) {
			const float gap0 = SELF_REUSE_WIDEN * reach_of(0.003f) + 0.0007f;
			out[v] = (sim_vec4){q.x, top ? gap0 - 0.0002f * k : q.y, q.z, q.w};
			continue;
		}
		float wave = top ? 0.0003f * k * sinf(9.0f * q.x + 0.5f * k) * cosf(7.0f * q.z)
				 : 0.0002f * k * cosf(11.0f * q.z - 0.5f * k);
		out[v] = (sim_vec4){q.x + 0.03f * k, q.y + wave, q.z - 0.01f * k, q.w};
	}
}

static int vt_cmp(const void *a, const void *b)
{
	const self_vt *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return (x->t > y->t) - (x->t < y->t);
}

static int ee_cmp(const void *a, const void *b)
{
	const self_ee *x = a, *y = b;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return (x->b > y->b) - (x->b < y->b);
}

/* Every substep's candidates from sim_self_begin_substep (served from the
 * kept list whenever it covers the substep) against a fresh collection over
 * the same motion: the same pairs, with the same distance and bound. */
static void reused_equal_fresh(int approach)
{
	layers L;
	CHECK(layers_make(&L, 24, 0.02f, 0.004f));
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(L.tri, L.nt, L.nv, L.rest, &s, NULL));
	sim_vec4 *x = malloc((size_t)L.nv * sizeof *x), *p = malloc((size_t)L.nv * sizeof *p);
	self_vt *vt = malloc(sizeof *vt * 65536);
	self_ee *ee = malloc(sizeof *ee * 65536);
	CHECK(x != NULL && p != NULL && vt != NULL && ee != NULL);
	const float thickness = 0.003f, reach = reach_of(thickness);
	/* 2 cm edges: the list's full width, SELF_REUSE_WIDEN reaches, is
	 * under SELF_REUSE_EDGES of them. */
	CHECK(SELF_REUSE_WIDEN * reach <= SELF_REUSE_EDGES * 0.02f);
	uint32_t mismatches = 0, steps = 0, busy = 0;
	for (int k = 0; k < 60; k++) {
		/* Frames of 20 substeps: the list is dropped at each frame's
		 * start, as the step does. */
		if (k % (approach ? 60 : 20) == 0)
			sim_self_begin_frame(s);
		const float step = approach ? 1.0f : 0.25f;
		pose(&L, approach, step * (float)k, x);
		pose(&L, approach, step * (float)(k + 1), p);
		sim_self_begin_substep(s, x, p, thickness);
		uint32_t nvt = s->vt_count, nee = s->ee_count;
		CHECK(nvt <= 65536 && nee <= 65536);
		/* A list with no pairs may have no array at all. */
		if (nvt > 0)
			memcpy(vt, s->vt, nvt * sizeof *vt);
		if (nee > 0)
			memcpy(ee, s->ee, nee * sizeof *ee);
		self_collect(s, x, p, reach);
		steps++;
		busy += nvt + nee > 0;
		if (nvt != s->vt_count || nee != s->ee_count) {
			mismatches++;
			printf("  substep %d: kept list %u + %u pairs, fresh %u + %u\n", k, nvt, nee,
			       s->vt_count, s->ee_count);
			continue;
		}
		if (nvt > 0) {
			qsort(vt, nvt, sizeof *vt, vt_cmp);
			qsort(s->vt, nvt, sizeof *vt, vt_cmp);
		}
		if (nee > 0) {
			qsort(ee, nee, sizeof *ee, ee_cmp);
			qsort(s->ee, nee, sizeof *ee, ee_cmp);
		}
		int same = 1;
		for (uint32_t i = 0; i < nvt; i++)
			same &= vt[i].v == s->vt[i].v && vt[i].t == s->vt[i].t &&
				vt[i].lb == s->vt[i].lb && vt[i].dx == s->vt[i].dx;
		for (uint32_t i = 0; i < nee; i++)
			same &= ee[i].a == s->ee[i].a && ee[i].b == s->ee[i].b &&
				ee[i].lb == s->ee[i].lb && ee[i].dx == s->ee[i].dx;
		mismatches += !same;
	}
	uint64_t hits, builds, fresh;
	sim_self_reuse_counts(s, &hits, &builds, &fresh);
	printf("  %s: %u substeps (%u with candidates): %llu served from a kept list, %llu lists, %llu "
	       "collected afresh\n",
	       approach ? "approach" : "wave", steps, busy, (unsigned long long)hits, (unsigned long long)builds,
	       (unsigned long long)fresh);
	CHECKF(mismatches == 0, "%u substeps whose kept-list candidates differ from a fresh search",
	       mismatches);
	/* The comparison means something only if the list served most
	 * substeps, was collected more than once per frame (it ran out), and
	 * there were candidates to find. */
	CHECK(hits >= steps / 2 && builds > 3 && busy >= steps / 4);
	free(x);
	free(p);
	free(vt);
	free(ee);
	sim_self_destroy(s);
	layers_free(&L);
}

static void test_reused_candidates_equal_fresh(void)
{
	reused_equal_fresh(0);
	reused_equal_fresh(1);
}

/* A substep whose motion is larger than the list's budget (a layer flung
 * through the other) is collected afresh, and still finds the pairs. */
static void test_fast_motion_collects_afresh(void)
{
	layers L;
	CHECK(layers_make(&L, 12, 0.01f, 0.004f));
	sim_self *s = NULL;
	CHECK_OK(sim_self_create(L.tri, L.nt, L.nv, L.rest, &s, NULL));
	sim_vec4 *x = malloc((size_t)L.nv * sizeof *x), *p = malloc((size_t)L.nv * sizeof *p);
	CHECK(x != NULL && p != NULL);
	memcpy(x, L.rest, (size_t)L.nv * sizeof *x);
	memcpy(p, L.rest, (size_t)L.nv * sizeof *p);
	/* The top layer drops 8 mm through the bottom one: a relative motion
	 * far beyond the budget (a sixth of the reach). */
	for (uint32_t v = L.n * L.n; v < L.nv; v++)
		p[v].y -= 0.008f;
	sim_self_begin_frame(s);
	sim_self_begin_substep(s, x, p, 0.003f);
	uint64_t hits, builds, fresh;
	sim_self_reuse_counts(s, &hits, &builds, &fresh);
	CHECK(hits == 0 && builds == 0 && fresh == 1);
	/* Every top vertex inside the bottom sheet meets its triangles. */
	CHECKF(s->vt_count > 0, "%u vertex-triangle pairs", s->vt_count);
	free(x);
	free(p);
	sim_self_destroy(s);
	layers_free(&L);
}

/* Two 24 x 24 layers of 2 cm edges, 6 mm apart, falling onto a sphere
 * under the cotton preset's schedule with self-collision: its sim. */
static drape_sim *layered_sim(const layers *L, float *pos)
{
	for (uint32_t v = 0; v < L->nv; v++) {
		pos[3 * v] = L->rest[v].x - 0.23f;
		pos[3 * v + 1] = L->rest[v].y;
		pos[3 * v + 2] = L->rest[v].z - 0.23f;
	}
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = L->nv;
	d.triangles = L->tri;
	d.triangle_count = L->nt;
	if (drape_material_preset("cotton", &d.params, NULL) != DRAPE_OK)
		return NULL;
	d.params.fps = 24.0f;
	d.params.thickness = 0.003f;
	d.params.self_collision = 1;
	drape_sim *sim = NULL;
	if (drape_sim_create(&d, &sim, NULL) != DRAPE_OK)
		return NULL;
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_SPHERE;
	c.center[1] = -0.21f;
	c.radius = 0.2f;
	if (drape_sim_add_collider(sim, &c, NULL, NULL) != DRAPE_OK) {
		drape_sim_destroy(sim);
		return NULL;
	}
	return sim;
}

/* A run resumed from a frame's state (what a checkpoint holds) gives the
 * same bits as one never stopped: the kept list is dropped at every frame
 * start, so no frame depends on the list an earlier frame left. */
static void test_resume_gives_same_bits(void)
{
	layers L;
	CHECK(layers_make(&L, 24, 0.02f, 0.006f));
	float *pos = malloc((size_t)L.nv * 3 * sizeof *pos);
	float *xa = malloc((size_t)L.nv * 3 * sizeof *xa), *va = malloc((size_t)L.nv * 3 * sizeof *va);
	float *xb = malloc((size_t)L.nv * 3 * sizeof *xb), *vb = malloc((size_t)L.nv * 3 * sizeof *vb);
	CHECK(pos != NULL && xa != NULL && va != NULL && xb != NULL && vb != NULL);
	drape_sim *a = layered_sim(&L, pos), *b = layered_sim(&L, pos);
	CHECK(a != NULL && b != NULL);
	for (int f = 0; f < 6; f++)
		CHECK_OK(drape_sim_step(a, NULL, NULL));
	/* b runs 3 frames, is "restarted" (a new sim given its state), and
	 * runs 3 more. */
	for (int f = 0; f < 3; f++)
		CHECK_OK(drape_sim_step(b, NULL, NULL));
	uint32_t frame = 0;
	drape_sim_get_state(b, xb, vb, &frame);
	drape_sim_destroy(b);
	b = layered_sim(&L, pos);
	CHECK(b != NULL);
	CHECK_OK(drape_sim_set_state(b, xb, vb, frame, NULL));
	for (int f = 0; f < 3; f++)
		CHECK_OK(drape_sim_step(b, NULL, NULL));
	drape_sim_get_state(a, xa, va, NULL);
	drape_sim_get_state(b, xb, vb, NULL);
	uint64_t hits, builds, fresh;
	sim_self_reuse_counts(a->self, &hits, &builds, &fresh);
	printf("  6 frames: %llu substeps served from a kept list, %llu lists, %llu afresh\n",
	       (unsigned long long)hits, (unsigned long long)builds, (unsigned long long)fresh);
	CHECK(hits > builds);
	CHECK(memcmp(xa, xb, (size_t)L.nv * 3 * sizeof *xa) == 0);
	CHECK(memcmp(va, vb, (size_t)L.nv * 3 * sizeof *va) == 0);
	drape_sim_destroy(a);
	drape_sim_destroy(b);
	free(pos);
	free(xa);
	free(va);
	free(xb);
	free(vb);
	layers_free(&L);
}

static const check_test tests[] = {
	CHECK_TEST(test_resume_gives_same_bits),
	CHECK_TEST(test_reused_candidates_equal_fresh),
	CHECK_TEST(test_fast_motion_collects_afresh),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
