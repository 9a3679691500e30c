/*
 * Mesh collider fields shared across sessions. Building a body's distance
 * field takes about a second; on a studio box many artists drape garments on
 * the same bodies, so a field is built once per (mesh, settings) and every
 * session whose collider.add asks for the same gets the same immutable,
 * reference-counted drape_sdf.
 *
 * Thread-safe: collider ops run on worker threads (jobs.c), so the cache is
 * guarded by one mutex. Two sessions missing the same key at once may both
 * build; the second insert keeps the first field and drops its own.
 */
#ifndef DRAPE_SRV_FIELDCACHE_H
#define DRAPE_SRV_FIELDCACHE_H

#include <stdint.h>

#include "drape/sim.h"

/* Identity of a field: two independent 64-bit hashes of the mesh bytes and
 * every setting that shapes the field. */
typedef struct srv_field_key {
	uint64_t h1, h2;
} srv_field_key;

/* Key of the field sim would build for desc d (a mesh collider). */
srv_field_key srv_field_key_of(const drape_sim *sim, const drape_collider_desc *d);

/* Returns a new reference to the cached field for key, or NULL. */
drape_sdf *srv_fieldcache_get(srv_field_key key);

/* Caches sdf under key (the cache takes its own reference) and evicts the
 * least recently used fields while the cached bytes exceed the budget. If the
 * key is already cached, returns a new reference to that field instead and
 * leaves sdf to the caller; otherwise returns sdf with a new reference. */
drape_sdf *srv_fieldcache_put(srv_field_key key, drape_sdf *sdf);

/* Bytes of grid memory the cache may hold (default 1 GiB); 0 disables it. */
void srv_fieldcache_set_budget(uint64_t bytes);

/* Counts since start, for logs and tests. */
void srv_fieldcache_counts(uint64_t *hits, uint64_t *misses, uint32_t *entries, uint64_t *bytes);

/* Drops every cached reference (fields still used by sessions live on). */
void srv_fieldcache_clear(void);

#endif
