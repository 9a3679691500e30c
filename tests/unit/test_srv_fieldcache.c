/* The daemon's shared mesh-field cache: keys, hits, sharing and eviction. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "drape/sim.h"
#include "server/fieldcache.h"

/* A closed octahedron of radius r centred at the origin. */
static const uint32_t octa_tris[] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4,
				     2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5};
static void octa(float r, float v[18])
{
	const float p[18] = {1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1, 0, 0, -1};
	for (int i = 0; i < 18; i++)
		v[i] = r * p[i];
}

static drape_sim *small_sim(void)
{
	static const float pos[9] = {0, 2, 0, 1, 2, 0, 0, 2, 1};
	static const uint32_t tri[3] = {0, 1, 2};
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = 3;
	d.triangles = tri;
	d.triangle_count = 1;
	drape_sim *sim = NULL;
	return drape_sim_create(&d, &sim, NULL) == DRAPE_OK ? sim : NULL;
}

static drape_collider_desc mesh_desc(const float *v)
{
	drape_collider_desc d;
	drape_collider_desc_default(&d);
	d.shape = DRAPE_SHAPE_MESH;
	d.vertices = v;
	d.vertex_count = 6;
	d.triangles = octa_tris;
	d.triangle_count = 8;
	d.voxel_size = 0.05f;
	return d;
}

static void test_same_mesh_same_key_other_mesh_other_key(void)
{
	drape_sim *sim = small_sim();
	CHECK(sim != NULL);
	float a[18], b[18];
	octa(0.5f, a);
	octa(0.5f, b);
	drape_collider_desc da = mesh_desc(a), db = mesh_desc(b);
	srv_field_key ka = srv_field_key_of(sim, &da), kb = srv_field_key_of(sim, &db);
	CHECK(ka.h1 == kb.h1 && ka.h2 == kb.h2);
	b[4] += 1e-6f; /* one vertex moved a micrometre */
	kb = srv_field_key_of(sim, &db);
	CHECK(ka.h1 != kb.h1 && ka.h2 != kb.h2);
	db = mesh_desc(a);
	db.voxel_size = 0.04f;
	kb = srv_field_key_of(sim, &db);
	CHECK(ka.h1 != kb.h1);
	db = mesh_desc(a);
	db.thickness = 0.01f; /* a thicker collider has a wider band */
	kb = srv_field_key_of(sim, &db);
	CHECK(ka.h1 != kb.h1);
	drape_sim_destroy(sim);
}

static void test_hit_shares_one_field(void)
{
	srv_fieldcache_clear();
	srv_fieldcache_set_budget(1ull << 30);
	drape_sim *sim = small_sim();
	CHECK(sim != NULL);
	float v[18];
	octa(0.5f, v);
	drape_collider_desc d = mesh_desc(v);
	srv_field_key k = srv_field_key_of(sim, &d);
	uint64_t hits0, misses0;
	srv_fieldcache_counts(&hits0, &misses0, NULL, NULL);
	CHECK(srv_fieldcache_get(k) == NULL);
	drape_sdf *built = NULL;
	CHECK_OK(drape_sim_build_collider_sdf(sim, &d, &built, NULL));
	drape_sdf *cached = srv_fieldcache_put(k, built);
	CHECK(cached == built);
	drape_sdf *again = srv_fieldcache_get(k);
	CHECK(again == built);
	/* A second build of the same key keeps the first field. */
	drape_sdf *other = NULL;
	CHECK_OK(drape_sim_build_collider_sdf(sim, &d, &other, NULL));
	drape_sdf *kept = srv_fieldcache_put(k, other);
	CHECK(kept == built);
	uint64_t hits, misses;
	uint32_t entries;
	srv_fieldcache_counts(&hits, &misses, &entries, NULL);
	CHECK(hits == hits0 + 1 && misses == misses0 + 1 && entries == 1);
	/* Sessions keep their references after the cache lets go. */
	srv_fieldcache_clear();
	float p[3] = {0, 0, 0}, dist;
	drape_sdf_sample(again, p, 1, &dist, NULL);
	CHECK(dist < 0);
	drape_sdf_release(other);
	drape_sdf_release(kept);
	drape_sdf_release(again);
	drape_sdf_release(cached);
	drape_sdf_release(built);
	drape_sim_destroy(sim);
}

static void test_budget_evicts_least_recently_used(void)
{
	srv_fieldcache_clear();
	drape_sim *sim = small_sim();
	CHECK(sim != NULL);
	float v[3][18];
	srv_field_key k[3];
	drape_sdf *f[3];
	uint64_t one = 0;
	for (int i = 0; i < 3; i++) {
		octa(0.4f + 0.1f * (float)i, v[i]);
		drape_collider_desc d = mesh_desc(v[i]);
		k[i] = srv_field_key_of(sim, &d);
		CHECK_OK(drape_sim_build_collider_sdf(sim, &d, &f[i], NULL));
		drape_sdf_info info;
		drape_sdf_get_info(f[i], &info);
		one = info.bytes > one ? info.bytes : one;
	}
	/* Room for two of the three. */
	srv_fieldcache_set_budget(2 * one + one / 2);
	for (int i = 0; i < 2; i++)
		drape_sdf_release(srv_fieldcache_put(k[i], f[i]));
	drape_sdf *touch = srv_fieldcache_get(k[0]); /* 0 is now newer than 1 */
	CHECK(touch == f[0]);
	drape_sdf_release(touch);
	drape_sdf_release(srv_fieldcache_put(k[2], f[2]));
	drape_sdf *g0 = srv_fieldcache_get(k[0]), *g1 = srv_fieldcache_get(k[1]),
		  *g2 = srv_fieldcache_get(k[2]);
	CHECK(g0 == f[0] && g1 == NULL && g2 == f[2]);
	drape_sdf_release(g0);
	drape_sdf_release(g2);
	/* Budget 0 turns the cache off. */
	srv_fieldcache_set_budget(0);
	uint32_t entries;
	srv_fieldcache_counts(NULL, NULL, &entries, NULL);
	CHECK(entries == 0);
	srv_fieldcache_set_budget(1ull << 30);
	for (int i = 0; i < 3; i++)
		drape_sdf_release(f[i]);
	drape_sim_destroy(sim);
}

int main(int argc, char **argv)
{
	static const check_test tests[] = {
		CHECK_TEST(test_same_mesh_same_key_other_mesh_other_key),
		CHECK_TEST(test_hit_shares_one_field),
		CHECK_TEST(test_budget_evicts_least_recently_used),
	};
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
