/* The shared mesh-field cache (fieldcache.h): a small LRU list under a mutex. */
#include "server/fieldcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/checksum.h"

/* A second, independent FNV-1a start value, so a key is 128 bits. */
#define FIELD_FNV_INIT2 0x84222325cbf29ce4ull

typedef struct field_entry {
	srv_field_key key;
	drape_sdf *sdf;
	uint64_t bytes;
	uint64_t last_use;
} field_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static field_entry *g_entries;
static uint32_t g_count, g_cap;
static uint64_t g_bytes, g_clock, g_hits, g_misses;
static uint64_t g_budget = 1ull << 30;

static uint64_t hash2(uint64_t h, const void *p, size_t n, uint64_t *h2)
{
	*h2 = srv_fnv1a64(*h2, p, n);
	return srv_fnv1a64(h, p, n);
}

srv_field_key srv_field_key_of(const drape_sim *sim, const drape_collider_desc *d)
{
	uint64_t a = SRV_FNV_INIT, b = FIELD_FNV_INIT2;
	float voxel = drape_sim_collider_voxel_size(sim, d);
	uint32_t counts[2] = {d->vertex_count, d->triangle_count};
	a = hash2(a, counts, sizeof counts, &b);
	a = hash2(a, d->vertices, (size_t)d->vertex_count * 3 * sizeof(float), &b);
	a = hash2(a, d->triangles, (size_t)d->triangle_count * 3 * sizeof(uint32_t), &b);
	a = hash2(a, &voxel, sizeof voxel, &b);
	a = hash2(a, &d->thickness, sizeof d->thickness, &b);
	a = hash2(a, &d->max_voxels, sizeof d->max_voxels, &b);
	return (srv_field_key){a, b};
}

static int find(srv_field_key key)
{
	for (uint32_t i = 0; i < g_count; i++)
		if (g_entries[i].key.h1 == key.h1 && g_entries[i].key.h2 == key.h2)
			return (int)i;
	return -1;
}

static void remove_at(uint32_t i)
{
	g_bytes -= g_entries[i].bytes;
	drape_sdf_release(g_entries[i].sdf);
	g_entries[i] = g_entries[--g_count];
}

/* Evicts least recently used entries until the budget holds. Called with
 * the lock held. */
static void evict(void)
{
	while (g_count > 0 && g_bytes > g_budget) {
		uint32_t oldest = 0;
		for (uint32_t i = 1; i < g_count; i++)
			if (g_entries[i].last_use < g_entries[oldest].last_use)
				oldest = i;
		remove_at(oldest);
	}
}

drape_sdf *srv_fieldcache_get(srv_field_key key)
{
	drape_sdf *sdf = NULL;
	pthread_mutex_lock(&g_lock);
	int i = find(key);
	if (i >= 0) {
		sdf = g_entries[i].sdf;
		drape_sdf_retain(sdf);
		g_entries[i].last_use = ++g_clock;
		g_hits++;
	} else {
		g_misses++;
	}
	pthread_mutex_unlock(&g_lock);
	return sdf;
}

drape_sdf *srv_fieldcache_put(srv_field_key key, drape_sdf *sdf)
{
	drape_sdf_info info;
	drape_sdf_get_info(sdf, &info);
	pthread_mutex_lock(&g_lock);
	int i = find(key);
	drape_sdf *out = sdf;
	if (i >= 0) {
		out = g_entries[i].sdf;
		g_entries[i].last_use = ++g_clock;
	} else if (g_budget > 0 && info.bytes <= g_budget) {
		if (g_count == g_cap) {
			uint32_t cap = g_cap ? 2 * g_cap : 16;
			field_entry *e = realloc(g_entries, cap * sizeof *e);
			if (e == NULL)
				goto done; /* not cached: the caller's field still works */
			g_entries = e;
			g_cap = cap;
		}
		drape_sdf_retain(sdf);
		g_entries[g_count++] = (field_entry){key, sdf, info.bytes, ++g_clock};
		g_bytes += info.bytes;
		evict();
	}
done:
	drape_sdf_retain(out);
	pthread_mutex_unlock(&g_lock);
	return out;
}

void srv_fieldcache_set_budget(uint64_t bytes)
{
	pthread_mutex_lock(&g_lock);
	g_budget = bytes;
	evict();
	pthread_mutex_unlock(&g_lock);
}

void srv_fieldcache_counts(uint64_t *hits, uint64_t *misses, uint32_t *entries, uint64_t *bytes)
{
	pthread_mutex_lock(&g_lock);
	if (hits)
		*hits = g_hits;
	if (misses)
		*misses = g_misses;
	if (entries)
		*entries = g_count;
	if (bytes)
		*bytes = g_bytes;
	pthread_mutex_unlock(&g_lock);
}

void srv_fieldcache_clear(void)
{
	pthread_mutex_lock(&g_lock);
	while (g_count > 0)
		remove_at(g_count - 1);
	free(g_entries);
	g_entries = NULL;
	g_cap = 0;
	g_bytes = 0;
	pthread_mutex_unlock(&g_lock);
}
