/* The server memory budget (budget.h). */
#include "server/budget.h"

#include "server/fieldcache.h"

uint64_t srv_budget_run_bytes(const srv_session *s)
{
	return (uint64_t)s->vertices * SRV_BUDGET_RUN_BYTES_PER_VERTEX;
}

uint64_t srv_budget_field_bytes(const srv_config *cfg)
{
	const uint64_t voxels = cfg->max_voxels ? cfg->max_voxels : DRAPE_SDF_DEFAULT_MAX_VOXELS;
	return voxels * SRV_BUDGET_FIELD_BYTES_PER_VOXEL;
}

uint64_t srv_budget_fieldcache_bytes(const srv_config *cfg)
{
	const uint64_t gib = 1ull << 30;
	if (cfg->max_memory == 0)
		return gib;
	return cfg->max_memory / 8u < gib ? cfg->max_memory / 8u : gib;
}

uint64_t srv_budget_used(const srv_server *srv)
{
	uint64_t used = srv->reserved;
	/* Deleted sessions whose last frame is still in flight hold their
	 * memory until it lands, so they count too. */
	for (size_t i = 0; i < srv->sessions.count; i++) {
		const srv_session *s = srv->sessions.items[i];
		used += s->memory;
		if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED)
			used += srv_budget_run_bytes(s);
	}
	uint64_t cached = 0;
	srv_fieldcache_counts(NULL, NULL, NULL, &cached);
	return used + cached;
}

drape_err srv_budget_check(const srv_server *srv, const char *op, uint64_t more, drape_error *err)
{
	const uint64_t budget = srv->cfg->max_memory;
	if (budget == 0)
		return DRAPE_OK;
	const uint64_t used = srv_budget_used(srv);
	if (used <= budget && more <= budget - used)
		return DRAPE_OK;
	return drape_error_setf(err, DRAPE_ENOMEM,
				"%s: needs about %llu bytes, but the server memory budget max_memory = %llu "
				"has %llu left (%llu in use by sessions, builds and cached collider fields); "
				"delete sessions or retry later",
				op, (unsigned long long)more, (unsigned long long)budget,
				(unsigned long long)(used < budget ? budget - used : 0), (unsigned long long)used);
}
