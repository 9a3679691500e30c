/*
 * The deforming collider's kept candidate lists (server/sim/deform.c,
 * "Kept candidates"): a list gathered with a wider radius serves later
 * substeps, each filtering it, and must give exactly the lists a gather
 * from the refit tree gives, for as long as it is used. Tested on the
 * module directly: a breathing sphere mesh rises through points above it
 * that wobble, and every substep every point's lists (nearest triangles,
 * front-facing candidates, their distances, mode, reach, safe and clear
 * radii) and its projected position are compared bit for bit with a
 * collider that gathers from the tree every substep, with the keeping
 * collider on 1, 2 and 3 threads. Allowing four times
 * the proven drift must break it, or the test could not fail.
 */
#include "check.h"

#include "drape/sim.h"
#include "server/sim/deform.h"
#include "server/sim/vec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST 20u  /* sphere stacks */
#define SL 28u  /* sphere slices */
#define NF 5u   /* animation frames */
#define SUB 8u  /* substeps per frame */
#define G 24u   /* points per side of the grid above the sphere */

typedef struct body {
	float *rest, *frames;
	uint32_t *tris;
	uint32_t nv, nt;
} body;

/* A UV sphere of radius 0.2 at the origin, and NF frames of it rising
 * 2 mm a substep while its surface ripples (a non-rigid motion: the
 * vertices do not all move alike). */
static int body_make(body *b)
{
	b->nv = 2 + (ST - 1) * SL;
	b->nt = 2 * SL + 2 * SL * (ST - 2);
	b->rest = malloc((size_t)b->nv * 12);
	b->frames = malloc((size_t)NF * b->nv * 12);
	b->tris = malloc((size_t)b->nt * 12);
	if (b->rest == NULL || b->frames == NULL || b->tris == NULL)
		return 0;
	const float pi = 3.14159265f;
	for (uint32_t f = 0; f <= NF; f++) {
		float *out = f == 0 ? b->rest : &b->frames[(size_t)(f - 1) * b->nv * 3];
		const float k = f == 0 ? 0.0f : (float)(f - 1);
		const float cy = 0.002f * SUB * k;
		uint32_t v = 0;
		for (uint32_t i = 0; i <= ST; i++) {
			const float th = pi * (float)i / (float)ST;
			const uint32_t ring = (i == 0 || i == ST) ? 1 : SL;
			for (uint32_t j = 0; j < ring; j++) {
				const float ph = 2.0f * pi * (float)j / (float)SL;
				const float rad = 0.2f * (1.0f + 0.01f * k * sinf(3.0f * th + 2.0f * ph + k));
				out[3 * v] = rad * sinf(th) * cosf(ph);
				out[3 * v + 1] = rad * cosf(th) + cy;
				out[3 * v + 2] = rad * sinf(th) * sinf(ph);
				v++;
			}
		}
	}
	uint32_t t = 0;
	const uint32_t last = b->nv - 1;
	for (uint32_t j = 0; j < SL; j++) {
		uint32_t a = 1 + j, c = 1 + (j + 1) % SL;
		b->tris[3 * t] = 0, b->tris[3 * t + 1] = c, b->tris[3 * t + 2] = a, t++;
		uint32_t o = 1 + (ST - 2) * SL;
		a = o + j, c = o + (j + 1) % SL;
		b->tris[3 * t] = last, b->tris[3 * t + 1] = a, b->tris[3 * t + 2] = c, t++;
	}
	for (uint32_t i = 0; i + 2 < ST; i++)
		for (uint32_t j = 0; j < SL; j++) {
			uint32_t a = 1 + i * SL + j, c = 1 + i * SL + (j + 1) % SL;
			uint32_t a2 = a + SL, c2 = c + SL;
			b->tris[3 * t] = a, b->tris[3 * t + 1] = c, b->tris[3 * t + 2] = c2, t++;
			b->tris[3 * t] = a, b->tris[3 * t + 1] = c2, b->tris[3 * t + 2] = a2, t++;
		}
	return t == b->nt;
}

static void body_free(body *b)
{
	free(b->rest);
	free(b->frames);
	free(b->tris);
}

/* Point v at substep s: a grid over the sphere's top, each point at its
 * own height 2 to 62 mm above it, wobbling a little; p falls 0.5 mm
 * below x. Point 7 is pinned (w = 0). */
static void points(uint32_t s, sim_vec4 *x, sim_vec4 *p)
{
	for (uint32_t v = 0; v < G * G; v++) {
		const float u = ((float)(v % G) + 0.5f) / G - 0.5f, w = ((float)(v / G) + 0.5f) / G - 0.5f;
		const float h = 0.002f + 0.06f * (float)((v * 37u) % 101u) / 100.0f;
		const float y = sqrtf(0.04f - 0.04f * (u * u + w * w)) + h;
		const float wob = 0.0015f * sinf(0.7f * (float)s + (float)v);
		x[v] = (sim_vec4){0.2f * u + 0.5f * wob, y + wob, 0.2f * w, v == 7 ? 0.0f : 1.0f};
		p[v] = (sim_vec4){x[v].x, x[v].y - 0.0005f, x[v].z, x[v].w};
	}
}

static int same_bits(const void *a, const void *b, size_t n)
{
	return memcmp(a, b, n) == 0;
}

/* Runs the reference (from the tree every substep) and a collider
 * keeping its lists with the drift budget times `scale` over all
 * substeps; returns the number of (point, substep) whose lists or
 * projection differ, and the keeping collider's counters. */
static uint32_t compare_run(const body *b, float scale, drape_pool *pool, uint64_t *filtered,
			    uint64_t *fresh, uint64_t *gathers)
{
	sim_deform *ref = sim_deform_create(b->rest, b->nv, b->tris, b->nt, b->frames, NF, 0.0f);
	sim_deform *kp = sim_deform_create(b->rest, b->nv, b->tris, b->nt, b->frames, NF, 0.0f);
	const uint32_t n = G * G;
	sim_vec4 *x = malloc(n * sizeof *x), *p = malloc(n * sizeof *p);
	sim_vec4 *pr = malloc(n * sizeof *pr), *pk = malloc(n * sizeof *pk);
	uint32_t bad = UINT32_MAX;
	if (ref == NULL || kp == NULL || x == NULL || p == NULL || pr == NULL || pk == NULL)
		goto out;
	bad = 0;
	sim_deform_keep_test(ref, 1, 1.0f);
	sim_deform_keep_test(kp, 0, scale);
	const sim_rigid id = {{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}};
	const sim_contact_params cp = {0.5f, 0.7f, 0.0f};
	const float r = 0.004f;
	for (uint32_t s = 0; s < (NF - 1) * SUB; s++) {
		const float t0 = (float)s / SUB, t1 = (float)(s + 1) / SUB;
		points(s, x, p);
		sim_deform_begin_substep(ref, t0, t1, &id, &id);
		sim_deform_begin_substep(kp, t0, t1, &id, &id);
		sim_deform_begin_contacts(ref, x, p, n, r, NULL);
		sim_deform_begin_contacts(kp, x, p, n, r, pool);
		memcpy(pr, p, n * sizeof *p);
		memcpy(pk, p, n * sizeof *p);
		for (uint32_t it = 0; it < 4; it++) {
			sim_deform_project(ref, pr, x, 0, n, r, &cp);
			sim_deform_project(kp, pk, x, 0, n, r, &cp);
		}
		for (uint32_t v = 0; v < n; v++) {
			sim_deform_vertex_lists a, c;
			sim_deform_lists(ref, v, &a);
			sim_deform_lists(kp, v, &c);
			if (!same_bits(&a, &c, sizeof a) || !same_bits(&pr[v], &pk[v], sizeof pr[v]))
				bad++;
		}
	}
	sim_deform_keep_stats(kp, filtered, fresh, gathers);
out:
	sim_deform_free(ref);
	sim_deform_free(kp);
	free(x);
	free(p);
	free(pr);
	free(pk);
	return bad;
}

/* Within the proven budget the kept lists are the tree's, point for
 * point and bit for bit, and they served most substeps. */
static void test_keep_exact(void)
{
	body b;
	CHECK(body_make(&b));
	uint64_t filtered = 0, fresh = 0, gathers = 0;
	uint32_t bad = compare_run(&b, 1.0f, NULL, &filtered, &fresh, &gathers);
	/* The same with the keeping collider's passes split over 2 and 3
	 * threads. */
	uint32_t bad_t[2] = {0, 0};
	for (uint32_t t = 2; t <= 3; t++) {
		drape_pool *pool = NULL;
		drape_error err;
		CHECK(drape_pool_create(t, &pool, &err) == DRAPE_OK);
		uint64_t f2, g2, k2;
		bad_t[t - 2] = compare_run(&b, 1.0f, pool, &f2, &g2, &k2);
		drape_pool_destroy(pool);
	}
	body_free(&b);
	CHECKF(bad_t[0] == 0 && bad_t[1] == 0, "%u and %u point-substeps differ on 2 and 3 threads",
	       bad_t[0], bad_t[1]);
	printf("  kept lists: %llu point-substeps filtered, %llu gathered, %llu refits over %u "
	       "substeps; %u differ\n",
	       (unsigned long long)filtered, (unsigned long long)fresh, (unsigned long long)gathers,
	       (NF - 1) * SUB, bad);
	CHECKF(bad == 0, "%u point-substeps differ from the tree's lists", bad);
	/* The lists must have done the work: most point-substeps served from
	 * them without a search, and the tree refit and every list gathered
	 * again as the body rose (more than once, in under half the
	 * substeps). */
	CHECKF(filtered > fresh, "filtered %llu, gathered %llu", (unsigned long long)filtered,
	       (unsigned long long)fresh);
	CHECKF(gathers > 1 && gathers < (NF - 1) * SUB / 2, "%llu refits", (unsigned long long)gathers);
}

/* Four times the proven drift lets lists serve after triangles they never
 * held came within reach: some point's lists differ. */
static void test_keep_loose_breaks(void)
{
	body b;
	CHECK(body_make(&b));
	uint64_t filtered = 0, fresh = 0, gathers = 0;
	uint32_t bad = compare_run(&b, 4.0f, NULL, &filtered, &fresh, &gathers);
	body_free(&b);
	printf("  4x the budget: %u point-substeps differ (%llu gathers)\n", bad,
	       (unsigned long long)gathers);
	CHECK(bad != UINT32_MAX);
	CHECKF(bad > 0, "no difference at 4x the budget: the test cannot fail");
}

static const check_test tests[] = {
	CHECK_TEST(test_keep_exact),
	CHECK_TEST(test_keep_loose_breaks),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
