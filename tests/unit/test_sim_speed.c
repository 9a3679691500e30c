/*
 * Unit tests of the fast solver path (issue 6): the worker pool, the SIMD
 * kernels and the vertex reordering.
 *
 * Determinism: a hash (FNV-1a over the bytes of positions and velocities in
 * the caller's order) after a few frames of a scene that exercises every
 * projection (stretch, shear, bending away from flat, long-range
 * attachments and the strain limit, a sphere collider, wind) must be equal for 1, 2 and 4
 * threads, and equal to the scalar reference kernels run serially in the
 * same colour order: simd.h uses only correctly rounded IEEE operations, so
 * no difference at all is allowed between the SIMD and scalar arithmetic.
 */
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "tests/unit/check.h"
#include "tests/unit/sim_fixtures.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A 100 x 100 sheet (so colours hold several pool blocks), hanging from
 * its first row over a sphere in a side wind: it swings, bends away from
 * flat, hits the sphere and its tethers engage. */
typedef struct scene {
	grid g;
	uint32_t pins[100];
	drape_sim_desc d;
} scene;

static int scene_make(scene *s)
{
	const float o[3] = {-0.5f, 0.0f, -0.5f}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	if (!grid_make(&s->g, 100, 100, o, u, v))
		return 0;
	drape_sim_desc_default(&s->d);
	s->d.positions = s->g.pos;
	s->d.vertex_count = s->g.nv;
	s->d.triangles = s->g.tri;
	s->d.triangle_count = s->g.nt;
	for (uint32_t i = 0; i < 100; i++)
		s->pins[i] = i;
	s->d.pins = s->pins;
	s->d.pin_count = 100;
	s->d.params.fps = 60.0f;
	s->d.params.substeps = 4;
	s->d.params.iterations = 5;
	s->d.params.bend = 0.5f;
	s->d.params.wind[0] = 3.0f;
	return 1;
}

/* Creates the scene's sim with flags and pool, runs `frames` frames and
 * returns the hash of the final state and of every frame's strain
 * statistics (summed over blocks on the pool), or 0 on failure. */
static uint64_t run_hash(scene *s, uint32_t flags, drape_pool *pool, int frames)
{
	s->d.pool = pool;
	drape_sim *sim = NULL;
	if (sim_create_ex(&s->d, flags, &sim, NULL) != DRAPE_OK)
		return 0;
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_SPHERE;
	c.center[1] = -0.45f;
	c.center[2] = 0.1f;
	c.radius = 0.3f;
	uint32_t idx;
	uint64_t h = 0;
	float *x = malloc((size_t)s->g.nv * 3 * sizeof *x);
	float *v = malloc((size_t)s->g.nv * 3 * sizeof *v);
	if (x && v && drape_sim_add_collider(sim, &c, &idx, NULL) == DRAPE_OK) {
		int ok = 1;
		h = 0xcbf29ce484222325ull;
		for (int f = 0; f < frames && ok; f++) {
			drape_sim_stats st;
			ok = drape_sim_step(sim, &st, NULL) == DRAPE_OK;
			h = fnv1a(h, &st.max_strain, sizeof st.max_strain);
			h = fnv1a(h, &st.mean_strain, sizeof st.mean_strain);
		}
		if (ok) {
			drape_sim_get_state(sim, x, v, NULL);
			h = fnv1a(h, x, (size_t)s->g.nv * 3 * sizeof *x);
			h = fnv1a(h, v, (size_t)s->g.nv * 3 * sizeof *v);
		} else {
			h = 0;
		}
	}
	free(x);
	free(v);
	drape_sim_destroy(sim);
	return h;
}

static void test_hash_equal_for_1_2_4_threads(void)
{
	scene s;
	CHECK(scene_make(&s));
	drape_pool *p2 = NULL, *p4 = NULL;
	CHECK_OK(drape_pool_create(2, &p2, NULL));
	CHECK_OK(drape_pool_create(4, &p4, NULL));
	CHECK(drape_pool_threads(p2) == 2 && drape_pool_threads(p4) == 4);
	uint64_t h1 = run_hash(&s, 0, NULL, 12);
	uint64_t h2 = run_hash(&s, 0, p2, 12);
	uint64_t h4 = run_hash(&s, 0, p4, 12);
	/* The workers really took part (else the test proves nothing). */
	uint64_t w2 = sim_pool_worker_blocks(p2), w4 = sim_pool_worker_blocks(p4);
	drape_pool_destroy(p2);
	drape_pool_destroy(p4);
	grid_free(&s.g);
	CHECK(h1 != 0);
	CHECKF(h1 == h2 && h1 == h4, "hash 1 thread %016llx, 2 threads %016llx, 4 threads %016llx",
	       (unsigned long long)h1, (unsigned long long)h2, (unsigned long long)h4);
	CHECKF(w2 > 0 && w4 > 0, "worker blocks: %llu (2 threads), %llu (4 threads)",
	       (unsigned long long)w2, (unsigned long long)w4);
}

/* SIMD kernels against the scalar reference kernels, same colour order. */
static void test_simd_equals_scalar_reference(void)
{
	scene s;
	CHECK(scene_make(&s));
	drape_pool *p2 = NULL;
	CHECK_OK(drape_pool_create(2, &p2, NULL));
	uint64_t fast = run_hash(&s, 0, p2, 12);
	uint64_t ref = run_hash(&s, SIM_CREATE_REFERENCE, NULL, 12);
	/* The natural-order plain loop is a different Gauss-Seidel order: it
	 * must differ, or the hash would not be looking at the order at all. */
	uint64_t natural = run_hash(&s, SIM_CREATE_REFERENCE | SIM_CREATE_NATURAL, NULL, 12);
	drape_pool_destroy(p2);
	grid_free(&s.g);
	/* Printed so that builds with different SIMD widths (SIMD=avx2, sse2,
	 * scalar) can be compared with one another: they must print the same. */
	printf("  state hash %016llx (%s build)\n", (unsigned long long)fast, drape_sim_build());
	CHECK(fast != 0 && ref != 0 && natural != 0);
	CHECKF(fast == ref, "%s kernels %016llx, scalar reference %016llx", drape_sim_build(),
	       (unsigned long long)fast, (unsigned long long)ref);
	CHECK(natural != fast);
}

/* The bending kernel lane by lane against sim_bend_project on random
 * configurations, including degenerate and near-flat ones that the kernel
 * must leave untouched exactly as the scalar code does. */
static void test_bend_kernel_lanes(void)
{
	enum { R = 203 }; /* not a multiple of any SIMD width: a partial group */
	sim_vec4 *p = malloc(4 * R * sizeof *p), *q = malloc(4 * R * sizeof *q);
	sim_vec4 *orig = malloc(4 * R * sizeof *orig);
	sim_bend *b = malloc(R * sizeof *b);
	uint32_t start[SIM_MAX_COLOURS + 1] = {0, R};
	CHECK(p && q && b && orig);
	for (uint32_t r = 0; r < R; r++) {
		for (uint32_t i = 0; i < 4; i++) {
			sim_vec4 *v = &p[4 * r + i];
			*v = (sim_vec4){(float)(2 * rnd() - 1), (float)(2 * rnd() - 1),
					(float)(2 * rnd() - 1), (float)rnd()};
			b[r].v[i] = 4 * r + i;
		}
		if (r % 7 == 0) /* flat pair: wing mirrored into the plane */
			p[4 * r + 3] = (sim_vec4){p[4 * r + 2].x, p[4 * r + 2].y, p[4 * r + 2].z, 1};
		if (r % 11 == 0) /* degenerate triangle */
			p[4 * r + 2] = p[4 * r + 1];
		if (r % 13 == 0)
			p[4 * r].w = p[4 * r + 1].w = p[4 * r + 2].w = p[4 * r + 3].w = 0;
		b[r].rest = (float)(rnd() * 3.14159);
	}
	memcpy(q, p, 4 * R * sizeof *p);
	memcpy(orig, p, 4 * R * sizeof *p);
	drape_sim sim;
	memset(&sim, 0, sizeof sim);
	sim.p = q;
	sim.bend = b;
	sim.bend_count = R;
	sim.bend_col = (sim_colouring){start, 1, 0};
	sim.k_bend = 0.7f;
	sim_bend_solve(&sim);
	for (uint32_t r = 0; r < R; r++)
		sim_bend_project(p, &b[r], 0.7f);
	int moved = 0;
	for (uint32_t i = 0; i < 4 * R; i++) {
		CHECKF(memcmp(&p[i], &q[i], sizeof p[i]) == 0, "vertex %u: scalar %.9g %.9g %.9g, %s %.9g %.9g %.9g",
		       i, (double)p[i].x, (double)p[i].y, (double)p[i].z, drape_sim_build(),
		       (double)q[i].x, (double)q[i].y, (double)q[i].z);
		moved += memcmp(&p[i], &orig[i], sizeof p[i]) != 0;
	}
	/* Most records were projected, not skipped. */
	CHECKF(moved > 2 * R, "only %d of %d vertices moved", moved, 4 * R);
	free(p);
	free(q);
	free(orig);
	free(b);
}

/* The wind pass's wide arithmetic against its scalar expressions, after a
 * few frames of the swinging sheet (so the cloth moves against the air in
 * every direction), split over two threads against one. */
static void test_wind_simd_equals_scalar(void)
{
	scene s;
	CHECK(scene_make(&s));
	s.d.params.wind[1] = -4.0f; /* strong enough that some impulses are capped */
	drape_pool *p2 = NULL;
	CHECK_OK(drape_pool_create(2, &p2, NULL));
	s.d.pool = p2;
	drape_sim *sim = NULL;
	CHECK_OK(sim_create_ex(&s.d, 0, &sim, NULL));
	for (int f = 0; f < 4; f++)
		CHECK_OK(drape_sim_step(sim, NULL, NULL));
	const size_t nb = (size_t)sim->n * sizeof(sim_vec4);
	sim_vec4 *wide = malloc(nb), *ref = malloc(nb);
	CHECK(wide && ref);
	/* A long step lowers the impulse cap (|f| dt <= m |u|) below the
	 * force of the faster triangles, so both branches of it are taken. */
	const float dt = 0.5f;
	sim_wind_forces(sim, dt, wide);
	sim_wind_forces_scalar(sim, dt, ref);
	uint32_t bad = 0, pushed = 0;
	for (uint32_t i = 0; i < sim->n; i++) {
		bad += memcmp(&wide[i], &ref[i], sizeof wide[i]) != 0;
		pushed += ref[i].x != 0.0f || ref[i].y != 0.0f || ref[i].z != 0.0f;
	}
	CHECKF(bad == 0, "%u of %u vertices differ (%s build)", bad, sim->n, drape_sim_build());
	CHECKF(pushed > sim->n / 2, "only %u of %u vertices feel the wind", pushed, sim->n);
	free(wide);
	free(ref);
	drape_sim_destroy(sim);
	drape_pool_destroy(p2);
	grid_free(&s.g);
}

/* Two sims stepping on two threads share one pool: each must get the hash
 * it gets alone, whether its jobs ran on the pool or inline. */
typedef struct runner {
	scene *s;
	drape_pool *pool;
	uint64_t h;
} runner;

static void *runner_main(void *arg)
{
	runner *r = arg;
	r->h = run_hash(r->s, 0, r->pool, 8);
	return NULL;
}

static void test_shared_pool_concurrent_sims(void)
{
	scene a, b;
	CHECK(scene_make(&a) && scene_make(&b));
	b.d.params.wind[2] = -2.0f; /* a different scene */
	uint64_t ha = run_hash(&a, 0, NULL, 8), hb = run_hash(&b, 0, NULL, 8);
	drape_pool *pool = NULL;
	CHECK_OK(drape_pool_create(2, &pool, NULL));
	runner ra = {&a, pool, 0}, rb = {&b, pool, 0};
	pthread_t ta, tb;
	CHECK(pthread_create(&ta, NULL, runner_main, &ra) == 0);
	CHECK(pthread_create(&tb, NULL, runner_main, &rb) == 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	drape_pool_destroy(pool);
	grid_free(&a.g);
	grid_free(&b.g);
	CHECK(ha != 0 && hb != 0 && ha != hb);
	CHECK(ra.h == ha && rb.h == hb);
}

/* The pool's parallel-for covers every item exactly once, for block sizes
 * that do and do not divide the count, from 1 to many blocks. */
typedef struct cover {
	_Atomic uint32_t *hits;
} cover;

static void cover_fn(void *ctx, uint32_t begin, uint32_t end)
{
	cover *c = ctx;
	for (uint32_t i = begin; i < end; i++)
		atomic_fetch_add(&c->hits[i], 1);
}

static void test_pool_covers_range(void)
{
	drape_pool *pool = NULL;
	CHECK_OK(drape_pool_create(3, &pool, NULL));
	enum { N = 10007 };
	_Atomic uint32_t *hits = calloc(N, sizeof *hits);
	CHECK(hits != NULL);
	const uint32_t counts[] = {1, 7, 512, 513, 4096, N};
	const uint32_t blocks[] = {1, 3, 64, 512};
	for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
		for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
			for (uint32_t i = 0; i < N; i++)
				atomic_store(&hits[i], 0);
			cover c = {hits};
			for (int rep = 0; rep < 20; rep++)
				sim_pool_for(pool, counts[ci], blocks[bi], cover_fn, &c);
			for (uint32_t i = 0; i < N; i++)
				CHECKF(atomic_load(&hits[i]) == (i < counts[ci] ? 20u : 0u),
				       "count %u block %u: item %u hit %u times", counts[ci], blocks[bi], i,
				       atomic_load(&hits[i]));
		}
	free(hits);
	drape_pool_destroy(pool);
	drape_pool *p0 = NULL;
	CHECK_OK(drape_pool_create(0, &p0, NULL)); /* 0 = the number of cores */
	CHECK(drape_pool_threads(p0) >= 1);
	drape_pool_destroy(p0);
	CHECK(drape_pool_create(100000, &p0, NULL) == DRAPE_EINVAL);
}

/* A block that outlasts the poster's spin (a worker preempted mid-block, as
 * in draped when the output stage takes its core) puts the poster to sleep
 * until the last block is done; every job still returns only when all its
 * items are covered, whichever thread holds the slow block. */
typedef struct slow_cover {
	_Atomic uint32_t *hits;
	uint32_t slow_block, block;
} slow_cover;

static void slow_cover_fn(void *ctx, uint32_t begin, uint32_t end)
{
	slow_cover *c = ctx;
	if (begin / c->block == c->slow_block) {
		struct timespec ts = {0, 1000000}; /* 1 ms, past the spin */
		nanosleep(&ts, NULL);
	}
	for (uint32_t i = begin; i < end; i++)
		atomic_fetch_add(&c->hits[i], 1);
}

static void test_pool_poster_sleeps_for_a_slow_block(void)
{
	drape_pool *pool = NULL;
	CHECK_OK(drape_pool_create(2, &pool, NULL));
	enum { N = 4096, B = 256 };
	_Atomic uint32_t *hits = calloc(N, sizeof *hits);
	CHECK(hits != NULL);
	for (int rep = 0; rep < 40; rep++) {
		for (uint32_t i = 0; i < N; i++)
			atomic_store(&hits[i], 0);
		/* The slow block moves, so that sometimes the worker and
		 * sometimes the poster holds it at the end. */
		slow_cover c = {hits, (uint32_t)(rep * 7) % (N / B), B};
		sim_pool_for(pool, N, B, slow_cover_fn, &c);
		uint32_t bad = 0;
		for (uint32_t i = 0; i < N; i++)
			bad += atomic_load(&hits[i]) != 1u;
		CHECKF(bad == 0, "rep %d: %u items not hit exactly once when the job returned", rep, bad);
	}
	free(hits);
	drape_pool_destroy(pool);
}

/* The internal vertex order is not the caller's, yet every public array is:
 * positions read back exactly as given, pins stay where they were given,
 * and set_state/get_state round-trip in the caller's order. */
static void test_public_arrays_in_caller_order(void)
{
	scene s;
	CHECK(scene_make(&s));
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&s.d, &sim, NULL));
	int permuted = 0;
	for (uint32_t i = 0; i < s.g.nv && sim->order; i++)
		permuted |= sim->order[i] != i;
	CHECK(permuted); /* else this test would not test the mapping */
	const size_t nb = (size_t)s.g.nv * 3 * sizeof(float);
	float *x = malloc(nb), *v = malloc(nb), *y = malloc(nb);
	CHECK(x && v && y);
	drape_sim_get_positions(sim, x);
	CHECK(memcmp(x, s.g.pos, nb) == 0);
	for (int f = 0; f < 3; f++)
		CHECK_OK(drape_sim_step(sim, NULL, NULL));
	drape_sim_get_positions(sim, x);
	for (uint32_t i = 0; i < 100; i++)
		CHECK(memcmp(&x[3 * i], &s.g.pos[3 * i], 3 * sizeof(float)) == 0);
	CHECK(x[3 * 9999 + 1] < -0.01f); /* the far row has fallen */
	for (size_t i = 0; i < (size_t)s.g.nv * 3; i++) {
		y[i] = (float)(i % 1000) * 1e-3f;
		v[i] = (float)(i % 7) * 0.25f;
	}
	CHECK_OK(drape_sim_set_state(sim, y, v, 5, NULL));
	float *y2 = malloc(nb), *v2 = malloc(nb);
	CHECK(y2 && v2);
	uint32_t frame = 0;
	drape_sim_get_state(sim, y2, v2, &frame);
	CHECK(frame == 5 && memcmp(y, y2, nb) == 0);
	/* Pinned vertices (the first row) read back with zero velocity. */
	for (size_t i = 0; i < (size_t)s.g.nv * 3; i++)
		CHECK(v2[i] == (i < 300 ? 0.0f : v[i]));
	free(x);
	free(v);
	free(y);
	free(y2);
	free(v2);
	drape_sim_destroy(sim);
	grid_free(&s.g);
}

/* Every colour is sorted by its first vertex, so a sweep walks p forwards,
 * and no colour (of constraints or of wind triangles) shares a vertex. */
static void test_colours_walk_forwards(void)
{
	scene s;
	CHECK(scene_make(&s));
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&s.d, &sim, NULL));
	const sim_colouring *col = &sim->stretch_col;
	CHECK(col->colours > 1 && !col->overflow);
	for (uint32_t g = 0; g < col->colours; g++)
		for (uint32_t i = col->start[g] + 1; i < col->start[g + 1]; i++)
			CHECK(sim->stretch[i - 1].a <= sim->stretch[i].a);
	/* Within a colour no two records share a vertex. */
	uint32_t *seen = calloc(sim->n, sizeof *seen);
	CHECK(seen != NULL);
	for (uint32_t g = 0; g < sim->bend_col.colours; g++)
		for (uint32_t i = sim->bend_col.start[g]; i < sim->bend_col.start[g + 1]; i++)
			for (int k = 0; k < 4; k++) {
				CHECK(seen[sim->bend[i].v[k]] != g + 1);
				seen[sim->bend[i].v[k]] = g + 1;
			}
	/* The wind's chunk colours: every triangle with a rest area in one
	 * chunk, and no two chunks of a colour sharing a vertex (wind.c adds
	 * to the vertices of one colour's chunks from several threads). */
	const sim_colouring *wc = &sim->wind_col;
	CHECK(wc->colours > 1 && !wc->overflow && wc->start[wc->colours] == sim->wind_chunks);
	uint32_t with_area = 0;
	for (uint32_t t = 0; t < sim->ntri; t++)
		with_area += sim->tri_rest_area[t] > 0.0f;
	CHECK(sim->wind_chunk[0] == 0 && sim->wind_chunk[sim->wind_chunks] == with_area);
	memset(seen, 0, sim->n * sizeof *seen);
	/* seen[v] = the last chunk (+1) that touched v, and its colour. */
	uint32_t *seen_colour = calloc(sim->n, sizeof *seen_colour);
	CHECK(seen_colour != NULL);
	for (uint32_t g = 0; g < wc->colours; g++)
		for (uint32_t k = wc->start[g]; k < wc->start[g + 1]; k++)
			for (uint32_t t = sim->wind_chunk[k]; t < sim->wind_chunk[k + 1]; t++) {
				CHECK(sim->tri_rest_area[t] > 0.0f);
				for (int j = 0; j < 3; j++) {
					uint32_t v = sim->tris[3 * t + j];
					/* Another chunk of the same colour has it. */
					CHECK(!(seen_colour[v] == g + 1 && seen[v] != k + 1));
					seen[v] = k + 1;
					seen_colour[v] = g + 1;
				}
			}
	free(seen_colour);
	free(seen);
	drape_sim_destroy(sim);
	grid_free(&s.g);
}

/* Checks one kind's tiled layout: every record is in exactly one place (a
 * tile's colour run or a boundary colour), a tile's records have all their
 * vertices in that tile, boundary records span two tiles or more, and no
 * two records of a run or of a boundary colour share a vertex. *boundary is
 * the number of boundary records. */
static void check_tiling(const drape_sim *sim, const void *records, size_t size, uint32_t count,
			 uint32_t arity, const sim_tiling *tl, const sim_colouring *col,
			 uint32_t *seen, uint32_t *boundary)
{
	const unsigned char *rec = records;
	const uint32_t T = sim->tile_vertices;
	uint32_t mark = 0;
	memset(seen, 0, sim->n * sizeof *seen);
	CHECK(tl->first[0] == 0 && tl->run[0] == 0);
	for (uint32_t t = 0; t < sim->tiles; t++)
		for (uint32_t r = tl->first[t]; r < tl->first[t + 1]; r++) {
			CHECK(tl->run[r] <= tl->run[r + 1]);
			mark++;
			for (uint32_t i = tl->run[r]; i < tl->run[r + 1]; i++) {
				const uint32_t *v = (const uint32_t *)(const void *)(rec + i * size);
				for (uint32_t j = 0; j < arity; j++) {
					CHECK(v[j] / T == t);
					CHECK(tl->serial[r] || seen[v[j]] != mark);
					seen[v[j]] = mark;
				}
			}
		}
	uint32_t interior = tl->run[tl->first[sim->tiles]];
	CHECK(col->start[0] == interior && col->start[col->colours] == count);
	for (uint32_t g = 0; g < col->colours; g++) {
		mark++;
		for (uint32_t i = col->start[g]; i < col->start[g + 1]; i++) {
			const uint32_t *v = (const uint32_t *)(const void *)(rec + i * size);
			int spans = 0;
			for (uint32_t j = 0; j < arity; j++) {
				spans |= v[j] / T != v[0] / T;
				CHECK(seen[v[j]] != mark);
				seen[v[j]] = mark;
			}
			CHECK(spans);
		}
	}
	*boundary = count - interior;
}

/* The tiles of a sheet big enough for several: a partition of every kind's
 * records, most of them inside a tile. */
static void test_tiles_partition_records(void)
{
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	CHECK(grid_make(&g, 150, 150, o, u, v));
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = g.pos;
	d.vertex_count = g.nv;
	d.triangles = g.tri;
	d.triangle_count = g.nt;
	uint32_t pins[150];
	for (uint32_t i = 0; i < 150; i++)
		pins[i] = i;
	d.pins = pins;
	d.pin_count = 150;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, NULL));
	CHECK(sim->tile_vertices == SIM_TILE_VERTICES);
	CHECK(sim->tiles == (g.nv + SIM_TILE_VERTICES - 1) / SIM_TILE_VERTICES && sim->tiles > 2);
	uint32_t *seen = calloc(sim->n, sizeof *seen);
	CHECK(seen != NULL);
	uint32_t bs = 0, bb = 0, bh = 0;
	check_tiling(sim, sim->stretch, sizeof *sim->stretch, sim->stretch_count, 2,
		     &sim->stretch_tiles, &sim->stretch_col, seen, &bs);
	check_tiling(sim, sim->bend, sizeof *sim->bend, sim->bend_count, 4, &sim->bend_tiles,
		     &sim->bend_col, seen, &bb);
	check_tiling(sim, sim->shear, sizeof *sim->shear, sim->shear_count, 2, &sim->shear_tiles,
		     &sim->shear_col, seen, &bh);
	/* The locality order makes tiles compact patches: their boundaries
	 * hold a small share of the records. */
	printf("  %u tiles; boundary records: stretch %.1f %%, bend %.1f %%, shear %.1f %%\n",
	       sim->tiles, 100.0 * bs / sim->stretch_count, 100.0 * bb / sim->bend_count,
	       100.0 * bh / sim->shear_count);
	CHECK(bs > 0 && bs < sim->stretch_count / 10);
	CHECK(bb > 0 && bb < sim->bend_count / 5);
	free(seen);
	drape_sim_destroy(sim);
	grid_free(&g);
}

/* A mesh under SIM_TILE_VERTICES is cut into several tiles (issue 22: a
 * garment was one tile, one thread's work), of a size that depends on the
 * vertex count alone; the tiles still partition the records. */
static void test_small_mesh_has_tiles(void)
{
	CHECK(sim_tile_vertices(100000) == SIM_TILE_VERTICES);
	CHECK(sim_tile_vertices(SIM_TILE_VERTICES) == SIM_TILE_VERTICES);
	CHECK(sim_tile_vertices(10) == SIM_TILE_MIN_VERTICES);
	grid g;
	const float o[3] = {0, 0, 0}, u[3] = {1, 0, 0}, v[3] = {0, 0, 1};
	CHECK(grid_make(&g, 41, 41, o, u, v));
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = g.pos;
	d.vertex_count = g.nv;
	d.triangles = g.tri;
	d.triangle_count = g.nt;
	drape_sim *sim = NULL;
	CHECK_OK(drape_sim_create(&d, &sim, NULL));
	printf("  %u vertices: %u tiles of %u\n", sim->n, sim->tiles, sim->tile_vertices);
	CHECK(sim->tile_vertices < SIM_TILE_VERTICES && sim->tiles >= SIM_SMALL_TILES - 1);
	uint32_t *seen = calloc(sim->n, sizeof *seen);
	CHECK(seen != NULL);
	uint32_t bs = 0, bb = 0, bh = 0;
	check_tiling(sim, sim->stretch, sizeof *sim->stretch, sim->stretch_count, 2,
		     &sim->stretch_tiles, &sim->stretch_col, seen, &bs);
	check_tiling(sim, sim->bend, sizeof *sim->bend, sim->bend_count, 4, &sim->bend_tiles,
		     &sim->bend_col, seen, &bb);
	check_tiling(sim, sim->shear, sizeof *sim->shear, sim->shear_count, 2, &sim->shear_tiles,
		     &sim->shear_col, seen, &bh);
	CHECK(bs > 0 && bs < sim->stretch_count / 2);
	free(seen);
	drape_sim_destroy(sim);
	grid_free(&g);
}

/* Reads the demo garment's OBJ (v and f lines; faces fan-triangulated),
 * scaled to metres. Returns 0 when the file is absent. */
static int read_garment(float **pos, uint32_t *nv, uint32_t **tri, uint32_t *nt)
{
	FILE *f = fopen("tests/data/meshes/mh_male_casualsuit04.obj", "r");
	if (f == NULL)
		return 0;
	size_t vc = 0, tc = 0, vcap = 4096, tcap = 8192;
	float *P = malloc(vcap * 3 * sizeof *P);
	uint32_t *T = malloc(tcap * 3 * sizeof *T);
	char line[512];
	while (P != NULL && T != NULL && fgets(line, sizeof line, f)) {
		if (line[0] == 'v' && line[1] == ' ') {
			if (vc == vcap) {
				vcap *= 2;
				float *n = realloc(P, vcap * 3 * sizeof *P);
				if (n == NULL)
					break;
				P = n;
			}
			float a, b, c;
			if (sscanf(line + 2, "%f %f %f", &a, &b, &c) == 3) {
				P[3 * vc] = 0.1f * a, P[3 * vc + 1] = 0.1f * b, P[3 * vc + 2] = 0.1f * c;
				vc++;
			}
		} else if (line[0] == 'f' && line[1] == ' ') {
			uint32_t idx[16];
			int k = 0;
			char *q = line + 2;
			while (k < 16) {
				char *e;
				long i = strtol(q, &e, 10);
				if (e == q)
					break;
				idx[k++] = (uint32_t)(i - 1);
				while (*e && *e != ' ' && *e != '\t' && *e != '\n')
					e++;
				q = e;
			}
			for (int j = 1; j + 1 < k; j++) {
				if (tc == tcap) {
					tcap *= 2;
					uint32_t *n = realloc(T, tcap * 3 * sizeof *T);
					if (n == NULL)
						break;
					T = n;
				}
				T[3 * tc] = idx[0], T[3 * tc + 1] = idx[j], T[3 * tc + 2] = idx[j + 1];
				tc++;
			}
		}
	}
	fclose(f);
	if (P == NULL || T == NULL || vc == 0 || tc == 0) {
		free(P);
		free(T);
		return 0;
	}
	*pos = P, *nv = (uint32_t)vc, *tri = T, *nt = (uint32_t)tc;
	return 1;
}

/* The demo garment under the cotton preset's schedule (40 substeps of one
 * iteration), with self-collision and a capsule where the body's torso
 * is: a hash of 3 frames. */
static uint64_t garment_hash(const float *pos, uint32_t nv, const uint32_t *tri, uint32_t nt,
			     drape_pool *pool, uint32_t *tiles)
{
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = nv;
	d.triangles = tri;
	d.triangle_count = nt;
	d.pool = pool;
	if (drape_material_preset("cotton", &d.params, NULL) != DRAPE_OK)
		return 0;
	d.params.fps = 24.0f;
	d.params.thickness = 0.003f;
	d.params.self_collision = 1;
	d.params.self_thickness = 0.003f;
	d.params.self_friction = 0.2f;
	drape_sim *sim = NULL;
	if (drape_sim_create(&d, &sim, NULL) != DRAPE_OK)
		return 0;
	*tiles = sim->tiles;
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_CAPSULE;
	c.a[1] = 0.9f;
	c.b[1] = 1.4f;
	c.radius = 0.13f;
	c.friction = 0.5f;
	uint64_t h = 0;
	float *x = malloc((size_t)nv * 3 * sizeof *x), *v = malloc((size_t)nv * 3 * sizeof *v);
	if (x != NULL && v != NULL && drape_sim_add_collider(sim, &c, NULL, NULL) == DRAPE_OK) {
		h = 0xcbf29ce484222325ull;
		for (int f = 0; f < 3 && h != 0; f++) {
			drape_sim_stats st;
			if (drape_sim_step(sim, &st, NULL) != DRAPE_OK)
				h = 0;
			h = fnv1a(h, &st.max_strain, sizeof st.max_strain);
		}
		if (h != 0) {
			drape_sim_get_state(sim, x, v, NULL);
			h = fnv1a(h, x, (size_t)nv * 3 * sizeof *x);
			h = fnv1a(h, v, (size_t)nv * 3 * sizeof *v);
		}
	}
	free(x);
	free(v);
	drape_sim_destroy(sim);
	return h;
}

/* The parallel path inside a small mesh (issue 22): the demo garment
 * (1,696 vertices, under one SIM_TILE_VERTICES tile) is cut into tiles that
 * the pool's threads sweep at once, and its frames must have the same bits
 * on 1, 2 and 3 threads. */
static void test_garment_same_for_1_2_3_threads(void)
{
	float *pos;
	uint32_t *tri, nv, nt;
	if (!read_garment(&pos, &nv, &tri, &nt)) {
		printf("  note: tests/data/meshes/mh_male_casualsuit04.obj absent, skipped\n");
		return;
	}
	drape_pool *p2 = NULL, *p3 = NULL;
	CHECK_OK(drape_pool_create(2, &p2, NULL));
	CHECK_OK(drape_pool_create(3, &p3, NULL));
	uint32_t t1 = 0, t2 = 0, t3 = 0;
	uint64_t h1 = garment_hash(pos, nv, tri, nt, NULL, &t1);
	uint64_t h2 = garment_hash(pos, nv, tri, nt, p2, &t2);
	uint64_t h3 = garment_hash(pos, nv, tri, nt, p3, &t3);
	uint64_t w2 = sim_pool_worker_blocks(p2), w3 = sim_pool_worker_blocks(p3);
	drape_pool_destroy(p2);
	drape_pool_destroy(p3);
	free(pos);
	free(tri);
	printf("  garment %u vertices, %u tiles: hash %016llx\n", nv, t1, (unsigned long long)h1);
	CHECK(nv < SIM_TILE_VERTICES && t1 > 1 && t1 == t2 && t1 == t3);
	CHECK(h1 != 0);
	CHECKF(h1 == h2 && h1 == h3, "hash 1 thread %016llx, 2 threads %016llx, 3 threads %016llx",
	       (unsigned long long)h1, (unsigned long long)h2, (unsigned long long)h3);
	/* The workers really took part (else the test proves nothing). */
	CHECKF(w2 > 0 && w3 > 0, "worker blocks: %llu (2 threads), %llu (3 threads)",
	       (unsigned long long)w2, (unsigned long long)w3);
}

static const check_test tests[] = {
	CHECK_TEST(test_small_mesh_has_tiles),
	CHECK_TEST(test_garment_same_for_1_2_3_threads),
	CHECK_TEST(test_tiles_partition_records),
	CHECK_TEST(test_pool_covers_range),
	CHECK_TEST(test_pool_poster_sleeps_for_a_slow_block),
	CHECK_TEST(test_bend_kernel_lanes),
	CHECK_TEST(test_hash_equal_for_1_2_4_threads),
	CHECK_TEST(test_simd_equals_scalar_reference),
	CHECK_TEST(test_wind_simd_equals_scalar),
	CHECK_TEST(test_shared_pool_concurrent_sims),
	CHECK_TEST(test_public_arrays_in_caller_order),
	CHECK_TEST(test_colours_walk_forwards),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
