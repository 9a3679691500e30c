/*
 * The self-collision's chunk-pair culling (server/sim/selfcull.c): the
 * candidate list collected with the culling must be exactly the list
 * collected without it (same pairs, same order, same bounds), and contain
 * every pair a brute-force search over all vertex-triangle and edge-edge
 * pairs finds within the reach, on smooth, crumpled and folded sheets; the
 * culling must skip chunk pairs on the smooth sheet (or it proves nothing),
 * and a bound loosened by 15 % must lose pairs (or the test could not see
 * a wrong bound).
 */
#include "check.h"

#include "drape/sim.h"
#include "server/sim/internal.h"
#include "server/sim/selfcollide_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 24
#define H 0.01f
#define NV (N * N)
#define NT (2 * (N - 1) * (N - 1))

static uint32_t g_tri[3 * NT];
static sim_vec4 g_rest[NV], g_x[NV], g_p[NV];

static uint32_t rng_state;

static float rnd(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return (float)(rng_state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static void grid(void)
{
	uint32_t t = 0;
	for (uint32_t j = 0; j < N; j++)
		for (uint32_t i = 0; i < N; i++)
			g_rest[j * N + i] = (sim_vec4){(float)i * H, 0.0f, (float)j * H, 1.0f};
	for (uint32_t j = 0; j + 1 < N; j++)
		for (uint32_t i = 0; i + 1 < N; i++) {
			uint32_t a = j * N + i, b = a + 1, c = a + N, d = c + 1;
			const uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&g_tri[3 * t], q, sizeof q);
			t += 2;
		}
}

enum { POSE_SMOOTH, POSE_CRUMPLED, POSE_FOLDED, POSE_COUNT };

/* x and p for a pose. Smooth: the sheet compressed 3 % along x and wrapped
 * on a cylinder of 25 cm, waving 2 mm over 20 cm, moving 1 mm with 0.05 mm
 * of relative motion. Crumpled: random waves of 1 cm over 4 to 8 cm and
 * 0.5 mm of noise per vertex, moving 0.3 mm at random. Folded: the sheet
 * bent back over itself 6 mm above its other half, moving 0.2 mm. */
static void pose(int kind)
{
	rng_state = 12345u + (uint32_t)kind;
	const float L = (float)(N - 1) * H;
	float ka[4], kb[4], ph[4];
	for (int m = 0; m < 4; m++) {
		ka[m] = 6.28318f / (0.04f + 0.04f * (0.5f + 0.5f * rnd()));
		kb[m] = 6.28318f / (0.04f + 0.04f * (0.5f + 0.5f * rnd()));
		ph[m] = 3.0f * rnd();
	}
	for (uint32_t v = 0; v < NV; v++) {
		const float u = g_rest[v].x, w = g_rest[v].z;
		sim_vec4 q = g_rest[v], d = {0.0f, 0.0f, 0.0f, 0.0f};
		if (kind == POSE_SMOOTH) {
			const float R = 0.25f, a = 0.97f * u / R;
			q.x = R * sinf(a);
			q.y = R * (1.0f - cosf(a)) + 0.002f * sinf(31.4f * w);
			q.z = w;
			d = (sim_vec4){0.001f, -0.001f + 0.00005f * sinf(40.0f * u), 0.0f, 0.0f};
		} else if (kind == POSE_CRUMPLED) {
			float y = 0.0f;
			for (int m = 0; m < 4; m++)
				y += 0.0025f * sinf(ka[m] * u + ph[m]) * cosf(kb[m] * w + 0.7f * ph[m]);
			q.x = u + 0.0005f * rnd();
			q.y = y + 0.0005f * rnd();
			q.z = w + 0.0005f * rnd();
			d = (sim_vec4){0.0003f * rnd(), 0.0003f * rnd(), 0.0003f * rnd(), 0.0f};
		} else {
			/* Arc length u along: flat to the middle, a half turn of
			 * radius 3 mm, flat back above. */
			const float r = 0.003f, mid = 0.5f * L, turn = 3.14159265f * r;
			if (u <= mid) {
				q.x = u, q.y = 0.0f;
			} else if (u <= mid + turn) {
				const float a = (u - mid) / r;
				q.x = mid + r * sinf(a), q.y = r - r * cosf(a);
			} else {
				q.x = mid - (u - mid - turn), q.y = 2.0f * r;
			}
			q.z = w;
			d = (sim_vec4){0.0f, (q.y > r ? -0.0002f : 0.0f), 0.0001f * rnd(), 0.0f};
		}
		g_x[v] = q;
		g_p[v] = (sim_vec4){q.x + d.x, q.y + d.y, q.z + d.z, q.w};
	}
}

typedef struct list {
	self_vt *vt;
	self_ee *ee;
	uint32_t nvt, nee;
} list;

static void take(const sim_self *s, list *l)
{
	l->nvt = s->vt_count;
	l->nee = s->ee_count;
	l->vt = malloc((size_t)l->nvt * sizeof *l->vt + 1);
	l->ee = malloc((size_t)l->nee * sizeof *l->ee + 1);
	memcpy(l->vt, s->vt, (size_t)l->nvt * sizeof *l->vt);
	memcpy(l->ee, s->ee, (size_t)l->nee * sizeof *l->ee);
}

static void drop(list *l)
{
	free(l->vt);
	free(l->ee);
}

static int same_list(const list *a, const list *b)
{
	if (a->nvt != b->nvt || a->nee != b->nee)
		return 0;
	for (uint32_t i = 0; i < a->nvt; i++)
		if (a->vt[i].v != b->vt[i].v || a->vt[i].t != b->vt[i].t ||
		    memcmp(&a->vt[i].lb, &b->vt[i].lb, sizeof(float)) != 0 ||
		    memcmp(&a->vt[i].dx, &b->vt[i].dx, sizeof(float)) != 0)
			return 0;
	for (uint32_t i = 0; i < a->nee; i++)
		if (a->ee[i].a != b->ee[i].a || a->ee[i].b != b->ee[i].b ||
		    memcmp(&a->ee[i].lb, &b->ee[i].lb, sizeof(float)) != 0)
			return 0;
	return 1;
}

static int has_vt(const list *l, uint32_t v, uint32_t t)
{
	for (uint32_t i = 0; i < l->nvt; i++)
		if (l->vt[i].v == v && l->vt[i].t == t)
			return 1;
	return 0;
}

static int has_ee(const list *l, uint32_t a, uint32_t b)
{
	for (uint32_t i = 0; i < l->nee; i++)
		if (l->ee[i].a == a && l->ee[i].b == b)
			return 1;
	return 0;
}

/* The swept box of the vertices idx[0 .. n) (x -> p), grown by g. */
static void swept(const uint32_t *idx, int n, float g, float *b)
{
	float o[6];
	swept_box(g_x[idx[0]], g_p[idx[0]], b);
	for (int k = 1; k < n; k++) {
		swept_box(g_x[idx[k]], g_p[idx[k]], o);
		box_union(b, o);
	}
	box_grow(b, g);
}

/* Pairs a search of every vertex against every triangle and every edge
 * against every edge finds within the reach (distance at x less the motion
 * bound, the search's test, for pairs whose swept boxes come within the
 * reach) that the list lacks. */
static uint32_t brute_missing(const sim_self *s, const list *l, float reach)
{
	uint32_t missing = 0;
	for (uint32_t v = 0; v < s->nv; v++)
		for (uint32_t t = 0; t < s->nt; t++) {
			const uint32_t *tv = &s->tris[3 * (size_t)t];
			if (tv[0] == v || tv[1] == v || tv[2] == v)
				continue;
			const uint32_t idx[4] = {v, tv[0], tv[1], tv[2]};
			float bv[6], bt[6];
			swept(idx, 1, reach, bv);
			swept(idx + 1, 3, 0.0f, bt);
			if (!sim_box_overlap(bv, bt))
				continue;
			float d = point_triangle_distance(v3_of4(g_x[v]), v3_of4(g_x[tv[0]]),
							  v3_of4(g_x[tv[1]]), v3_of4(g_x[tv[2]]));
			if (d - vt_motion_bound(g_x, g_p, idx) <= reach && !has_vt(l, v, t)) {
				missing++;
			}
		}
	for (uint32_t i = 0; i < s->ne; i++)
		for (uint32_t j = i + 1; j < s->ne; j++) {
			const uint32_t a0 = s->edges[2 * i], a1 = s->edges[2 * i + 1];
			const uint32_t b0 = s->edges[2 * j], b1 = s->edges[2 * j + 1];
			if (a0 == b0 || a0 == b1 || a1 == b0 || a1 == b1)
				continue;
			const uint32_t idx[4] = {a0, a1, b0, b1};
			float ba[6], bb[6];
			swept(idx, 2, reach, ba);
			swept(idx + 2, 2, 0.0f, bb);
			if (!sim_box_overlap(ba, bb))
				continue;
			float d = segment_distance(v3_of4(g_x[a0]), v3_of4(g_x[a1]), v3_of4(g_x[b0]),
						   v3_of4(g_x[b1]));
			if (d - ee_motion_bound(g_x, g_p, idx) <= reach && !has_ee(l, i, j)) {
				missing++;
			}
		}
	return missing;
}

/* Chunk pairs with a record that self_cull_skip skips (after a collect,
 * which sets the sliver flags). */
static uint32_t skipped(const sim_self *s, float reach, uint32_t *records)
{
	uint32_t k = 0;
	*records = s->cull_start[s->chunk_count];
	for (uint32_t A = 0; A < s->chunk_count; A++)
		for (uint32_t r = s->cull_start[A]; r < s->cull_start[A + 1]; r++)
			k += (uint32_t)self_cull_skip(s, g_x, g_p, A, s->cull_b[r], reach);
	return k;
}

static sim_self *make(void)
{
	grid();
	sim_self *s = NULL;
	drape_error err;
	if (sim_self_create(g_tri, NT, NV, g_rest, &s, &err) != DRAPE_OK)
		return NULL;
	return s;
}

static void test_culled_list_is_the_full_list(void)
{
	sim_self *s = make();
	CHECK(s != NULL);
	const float thick[] = {0.3f * H, 0.5f * H, 0.53f * H, 0.7f * H};
	uint32_t skips_smooth = 0;
	for (int kind = 0; kind < POSE_COUNT; kind++) {
		pose(kind);
		for (size_t k = 0; k < sizeof thick / sizeof thick[0]; k++) {
			const float reach = reach_of(thick[k]);
			list on, off;
			s->cull_on = 1;
			self_collect(s, g_x, g_p, reach);
			take(s, &on);
			uint32_t records, sk = skipped(s, reach, &records);
			s->cull_on = 0;
			self_collect(s, g_x, g_p, reach);
			take(s, &off);
			const int same = same_list(&on, &off);
			const uint32_t miss = brute_missing(s, &on, reach);
			printf("  pose %d thickness %.4f: %u vt, %u ee; %u of %u chunk pairs skipped\n",
			       kind, (double)thick[k], on.nvt, on.nee, sk, records);
			drop(&on);
			drop(&off);
			if (kind == POSE_SMOOTH && k == 1)
				skips_smooth = sk;
			CHECKF(same, "pose %d thickness %g: culled list differs from the full one", kind,
			       (double)thick[k]);
			CHECKF(miss == 0, "pose %d thickness %g: %u brute-force pairs missing", kind,
			       (double)thick[k], miss);
		}
	}
	/* The culling must work where it is meant to: most neighbour chunk
	 * pairs of a smooth sheet at the usual thickness of half an edge. */
	CHECKF(skips_smooth > 0, "no chunk pair skipped on the smooth sheet");
	sim_self_destroy(s);
}

static void test_loosened_bound_loses_pairs(void)
{
	sim_self *s = make();
	CHECK(s != NULL);
	/* The smooth sheet, compressed 3 %: at a reach of 0.69 edges its
	 * diagonal neighbours (0.707 edges at rest, about 0.686 now) are
	 * candidates, and a D0 taken 15 % too large claims they are not. */
	pose(POSE_SMOOTH);
	const float reach = reach_of(0.53f * H);
	list on, off;
	s->cull_on = 0;
	self_collect(s, g_x, g_p, reach);
	take(s, &off);
	s->cull_on = 1;
	s->cull_scale = 1.15f;
	self_collect(s, g_x, g_p, reach);
	take(s, &on);
	const int same = same_list(&on, &off);
	const uint32_t miss = brute_missing(s, &on, reach);
	drop(&on);
	drop(&off);
	sim_self_destroy(s);
	CHECK(!same);
	CHECK(miss > 0);
}

/* The end-of-substep re-collection (self_recollect_strayed) around a few
 * vertices that strayed from their prediction fits again only the chunks
 * whose fits its chunk pairs read, and zeroes the others: its list must be
 * the one the same re-collection makes without culling, and hold every
 * pair a brute-force search finds for p as it is then. The strayed
 * vertices move 0.6 edges along the sheet, towards triangles a chunk away
 * that the fit of p before the stray would still prove out of reach. */
static void test_recollected_list_is_the_full_list(void)
{
	sim_self *s = make();
	CHECK(s != NULL);
	static sim_vec4 p0[NV];
	const uint32_t strays[3] = {5 * N + 7, 12 * N + 12, 17 * N + 4};
	uint32_t checked = 0;
	for (int kind = 0; kind < POSE_COUNT; kind++) {
		pose(kind);
		memcpy(p0, g_p, sizeof p0);
		const float reach = reach_of(0.5f * H);
		list l[2];
		int partial[2];
		for (int cull = 1; cull >= 0; cull--) {
			memcpy(g_p, p0, sizeof p0);
			s->cull_on = cull;
			self_collect(s, g_x, g_p, reach);
			memcpy(s->p_pred, g_p, sizeof p0);
			for (int k = 0; k < 3; k++)
				g_p[strays[k]].z += 0.6f * H;
			partial[cull] = self_recollect_strayed(s, g_x, g_p, reach) == 0;
			take(s, &l[cull]);
		}
		const int same = same_list(&l[1], &l[0]);
		const uint32_t miss = brute_missing(s, &l[1], reach);
		printf("  pose %d, 3 vertices strayed: %u vt, %u ee in the list after\n", kind, l[1].nvt,
		       l[1].nee);
		drop(&l[0]);
		drop(&l[1]);
		CHECKF(partial[0] && partial[1], "pose %d: no partial re-collection", kind);
		CHECKF(same, "pose %d: culled re-collection differs from the full one", kind);
		CHECKF(miss == 0, "pose %d: %u brute-force pairs missing after the re-collection", kind,
		       miss);
		checked++;
	}
	CHECK(checked == POSE_COUNT);
	sim_self_destroy(s);
}

/* ---- the whole solver -------------------------------------------------------- */

/* A 0.9 m sheet (31 x 31) dropped on a sphere of 0.18 m on the ground, off
 * centre so that it folds back under itself (test_sim_selfscene's scene),
 * `frames` frames with the culling on or off on `threads` threads; the
 * positions into out (3 nv floats). Returns the chunk pairs the culling
 * skipped in the last substep (its fits and sliver flags), or -1 on
 * failure. */
#define FOLD_N 31
static long fold_run(int cull, uint32_t threads, int frames, float *out)
{
	static float pos[3 * FOLD_N * FOLD_N];
	static uint32_t tri[6 * (FOLD_N - 1) * (FOLD_N - 1)];
	uint32_t t = 0;
	for (uint32_t j = 0; j < FOLD_N; j++)
		for (uint32_t i = 0; i < FOLD_N; i++) {
			float *q = &pos[3 * (j * FOLD_N + i)];
			q[0] = -0.3f + 0.9f * (float)i / (FOLD_N - 1);
			q[1] = 0.45f;
			q[2] = -0.45f + 0.9f * (float)j / (FOLD_N - 1);
		}
	for (uint32_t j = 0; j + 1 < FOLD_N; j++)
		for (uint32_t i = 0; i + 1 < FOLD_N; i++) {
			uint32_t a = j * FOLD_N + i, b = a + 1, c = a + FOLD_N, d = c + 1;
			const uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&tri[3 * t], q, sizeof q);
			t += 2;
		}
	drape_pool *pool = NULL;
	drape_error err;
	if (threads > 1 && drape_pool_create(threads, &pool, &err) != DRAPE_OK)
		return -1;
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = FOLD_N * FOLD_N;
	d.triangles = tri;
	d.triangle_count = t;
	d.pool = pool;
	d.params.bend = 0.02f;
	d.params.self_collision = 1;
	d.params.self_thickness = 0.008f;
	d.params.self_friction = 0.2f;
	drape_sim *sim = NULL;
	long skips = -1;
	if (drape_sim_create(&d, &sim, &err) != DRAPE_OK)
		goto out;
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_SPHERE;
	c.center[0] = 0.0f, c.center[1] = 0.18f, c.center[2] = 0.0f;
	c.radius = 0.18f;
	if (drape_sim_add_collider(sim, &c, NULL, NULL) != DRAPE_OK)
		goto out;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_PLANE;
	c.normal[0] = 0.0f, c.normal[1] = 1.0f, c.normal[2] = 0.0f;
	if (drape_sim_add_collider(sim, &c, NULL, NULL) != DRAPE_OK)
		goto out;
	sim->self->cull_on = cull;
	for (int f = 0; f < frames; f++)
		if (drape_sim_step(sim, NULL, &err) != DRAPE_OK)
			goto out;
	drape_sim_get_positions(sim, out);
	const sim_self *s = sim->self;
	const float reach = reach_of(d.params.self_thickness);
	skips = 0;
	for (uint32_t A = 0; A < s->chunk_count; A++)
		for (uint32_t r = s->cull_start[A]; r < s->cull_start[A + 1]; r++)
			skips += self_cull_skip(s, sim->x, sim->x, A, s->cull_b[r], reach);
out:
	drape_sim_destroy(sim);
	drape_pool_destroy(pool);
	return skips;
}

/* The frames are the same to the bit with and without the culling, on one,
 * two and three threads: the culling only skips chunk pairs that hold no
 * candidate. */
static void test_fold_frames_bit_identical(void)
{
	enum { FRAMES = 30, FOLD_NV = FOLD_N * FOLD_N };
	static float ref[3 * FOLD_NV], got[3 * FOLD_NV];
	/* The culling applies while the sheet falls flat (in its last substep
	 * of frame 3); then it has something to get wrong. */
	long early = fold_run(1, 1, 3, got);
	printf("  fold on sphere: %ld chunk pairs skipped in the last substep of frame 3\n", early);
	CHECKF(early > 0, "the culling never applies on the falling sheet");
	long sk = fold_run(0, 1, FRAMES, ref);
	CHECK(sk >= 0);
	const int cull[4] = {1, 1, 1, 0};
	const uint32_t threads[4] = {1, 2, 3, 2};
	for (int k = 0; k < 4; k++) {
		long skc = fold_run(cull[k], threads[k], FRAMES, got);
		CHECK(skc >= 0);
		CHECKF(memcmp(ref, got, sizeof ref) == 0,
		       "culling %d, %u threads: positions differ from the unculled run", cull[k],
		       threads[k]);
	}
}

static const check_test tests[] = {
	CHECK_TEST(test_fold_frames_bit_identical),
	CHECK_TEST(test_culled_list_is_the_full_list),
	CHECK_TEST(test_loosened_bound_loses_pairs),
	CHECK_TEST(test_recollected_list_is_the_full_list),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
