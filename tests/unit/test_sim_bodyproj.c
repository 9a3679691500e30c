/*
 * The body contacts' projections on the pool (server/sim/bodysched.c,
 * issues 16 and 22): the schedule is the tiles' pairs, tile by tile in
 * list order, then the pairs across tiles in list order; and the demo
 * garment (examples/garment.json's meshes and settings) stepped on no
 * pool, a pool of 2 and a pool of 3 threads gives the same positions and
 * velocities, byte for byte, after every frame, with the projections'
 * groups run on the workers.
 *
 * Run from the repository root (tests/run.sh does); the garment's meshes
 * are read from tests/data/meshes. DRAPE_BODYPROJ_FRAMES sets the
 * garment's frames (default 3).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drape/sim.h"
#include "server/sim/bodysched.h"
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "tests/unit/check.h"
#include "tests/unit/deform_geometry.h"

/* A pair record as the contacts store theirs: the element index at an
 * offset that is not 0. */
typedef struct rec {
	float pad;
	uint32_t elem;
} rec;

/*
 * A synthetic list: 3000 faces of random vertices mostly near one another
 * (as a cloth's faces are in the locality order) over 1000 vertices, 5000
 * pairs of random faces. The schedule must hold every pair once; each
 * group's pairs must lie in one tile, a tile no other group has, in list
 * order, the groups in tile order; the rest must cross tiles, in list
 * order.
 */
static void test_schedule(void)
{
	enum { NV = 1000, NF = 3000, NP = 5000 };
	static uint32_t f[3 * NF];
	static rec r[NP];
	static uint8_t seen[NP];
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (uint32_t k = 0; k < NF; k++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t base = (uint32_t)(s >> 33) % (NV - 40);
		for (int j = 0; j < 3; j++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			f[3 * k + j] = base + (uint32_t)(s >> 33) % 40;
		}
	}
	for (uint32_t k = 0; k < NP; k++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		r[k].elem = (uint32_t)(s >> 33) % NF;
		r[k].pad = (float)k;
	}
	sim_bodysched S = {0};
	CHECK(sim_bodysched_build(&S, f, 3, r, sizeof *r, offsetof(rec, elem), NP, NV));
	const uint32_t tv = sim_tile_vertices(NV);
	CHECK(S.count == NP && S.groups > 1 && S.first[0] == 0);
	memset(seen, 0, sizeof seen);
	uint32_t prev_tile = 0, in_tiles = 0;
	for (uint32_t g = 0; g < S.groups; g++) {
		CHECK(S.first[g] < S.first[g + 1]);
		const uint32_t t = f[3 * r[S.order[S.first[g]]].elem] / tv;
		CHECKF(g == 0 || t > prev_tile, "group %u: tile %u after %u", g, t, prev_tile);
		prev_tile = t;
		for (uint32_t k = S.first[g]; k < S.first[g + 1]; k++) {
			const uint32_t i = S.order[k], *v = &f[3 * r[i].elem];
			CHECK(i < NP && !seen[i]);
			seen[i] = 1;
			CHECKF(v[0] / tv == t && v[1] / tv == t && v[2] / tv == t, "pair %u not in tile %u", i, t);
			CHECK(k == S.first[g] || S.order[k - 1] < i);
			in_tiles++;
		}
	}
	for (uint32_t k = S.first[S.groups]; k < S.count; k++) {
		const uint32_t i = S.order[k], *v = &f[3 * r[i].elem];
		CHECK(i < NP && !seen[i]);
		seen[i] = 1;
		CHECK(v[0] / tv != v[1] / tv || v[0] / tv != v[2] / tv);
		CHECK(k == S.first[S.groups] || S.order[k - 1] < i);
	}
	/* Every pair that lies in a tile is in a group. */
	uint32_t inside = 0;
	for (uint32_t i = 0; i < NP; i++) {
		const uint32_t *v = &f[3 * r[i].elem];
		inside += v[0] / tv == v[1] / tv && v[0] / tv == v[2] / tv;
		CHECK(seen[i]);
	}
	printf("  %u pairs over %u vertices (tiles of %u): %u groups, %u pairs in them, %u across\n",
	       NP, NV, tv, S.groups, in_tiles, NP - in_tiles);
	CHECK(inside == in_tiles && in_tiles > 0 && in_tiles < NP);
	sim_bodysched_free(&S);
}

/* The garment as examples/garment.json runs it (cotton, 8 substeps of 20
 * iterations, self collision, the body still), on pool. */
static drape_sim *garment_sim(const mesh *shirt, const mesh *body, drape_pool *pool)
{
	drape_sim_desc d;
	drape_error err;
	if (garment_desc(&d, shirt, pool, &err) != 0)
		return NULL;
	d.params.substeps = 8;
	d.params.iterations = 20;
	drape_sim *sim = NULL;
	if (drape_sim_create(&d, &sim, &err) != DRAPE_OK)
		return NULL;
	drape_collider_desc c;
	garment_body(&c, body);
	if (drape_sim_add_collider(sim, &c, NULL, &err) != DRAPE_OK) {
		drape_sim_destroy(sim);
		return NULL;
	}
	return sim;
}

/*
 * The garment on no pool, 2 and 3 threads: after every frame the same
 * positions and velocities, byte for byte. Not vacuous: both contacts had
 * pairs, every frame's last substep split its face and edge pairs into
 * two groups or more (the pool jobs) and left some across tiles (the
 * serial rest), and the pools' workers ran blocks.
 */
static void test_garment_threads(void)
{
	mesh shirt, body;
	CHECK(mesh_read_obj("tests/data/meshes/mh_male_casualsuit04.obj", 0.1f, &shirt) == 0);
	if (mesh_read_obj("tests/data/meshes/mh_proxy_male_generic.obj", 0.1f, &body) != 0) {
		mesh_free(&shirt);
		CHECK(!"tests/data/meshes/mh_proxy_male_generic.obj");
	}
	const char *env = getenv("DRAPE_BODYPROJ_FRAMES");
	const uint32_t frames = env != NULL && atoi(env) > 0 ? (uint32_t)atoi(env) : 3;
	drape_pool *pool[3] = {NULL, NULL, NULL};
	drape_sim *sim[3] = {NULL, NULL, NULL};
	drape_error err;
	CHECK_OK(drape_pool_create(2, &pool[1], &err));
	CHECK_OK(drape_pool_create(3, &pool[2], &err));
	for (int k = 0; k < 3; k++)
		CHECKF((sim[k] = garment_sim(&shirt, &body, pool[k])) != NULL, "garment %d", k);
	const uint32_t n = sim[0]->n;
	uint32_t differ = 0, first_bad = 0;
	uint64_t face = 0, edge = 0, groups = 0, across = 0;
	for (uint32_t f = 1; f <= frames; f++) {
		for (int k = 0; k < 3; k++)
			CHECKF(drape_sim_step(sim[k], NULL, &err) == DRAPE_OK, "frame %u: %s", f,
			       err.message);
		for (int k = 1; k < 3; k++) {
			int bad = memcmp(sim[k]->x, sim[0]->x, (size_t)n * sizeof *sim[0]->x) != 0 ||
				  memcmp(sim[k]->v, sim[0]->v, (size_t)n * sizeof *sim[0]->v) != 0;
			differ += bad;
			if (bad && first_bad == 0)
				first_bad = f;
		}
		const sim_bodysched *sp = sim_bodypush_sched(sim[0]->bodypush);
		const sim_bodysched *se = sim_bodyedge_sched(sim[0]->bodyedge);
		face += sim_bodypush_pair_count(sim[0]->bodypush);
		edge += sim_bodyedge_pair_count(sim[0]->bodyedge);
		groups += sp->groups < se->groups ? sp->groups : se->groups;
		across += sp->count - sp->first[sp->groups];
	}
	const uint64_t wb2 = sim_pool_worker_blocks(pool[1]), wb3 = sim_pool_worker_blocks(pool[2]);
	printf("  garment, %u frames on no pool, 2 and 3 threads: %llu face and %llu edge pairs at the "
	       "frames' last substeps (the fewer groups of the two %llu, %llu face pairs across "
	       "tiles); %u differ (first at frame %u); worker blocks %llu (2), %llu (3)\n",
	       frames, (unsigned long long)face, (unsigned long long)edge, (unsigned long long)groups,
	       (unsigned long long)across, differ, first_bad, (unsigned long long)wb2,
	       (unsigned long long)wb3);
	for (int k = 0; k < 3; k++) {
		drape_sim_destroy(sim[k]);
		drape_pool_destroy(pool[k]);
	}
	mesh_free(&shirt);
	mesh_free(&body);
	CHECK(differ == 0);
	CHECK(face > 0 && edge > 0 && groups >= 2 * frames && across > 0 && wb2 > 0 && wb3 > 0);
}

static const check_test tests[] = {
	CHECK_TEST(test_schedule),
	CHECK_TEST(test_garment_threads),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
