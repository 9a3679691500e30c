/*
 * The server memory budget (--max-memory): what every session, every build
 * in progress and the shared collider-field cache hold together, estimated
 * the way --max-session-memory estimates one session. A request that would
 * take the total past the budget is refused with DRAPE_ENOMEM before any
 * work starts, instead of the kernel's OOM killer taking the daemon and
 * every artist's session with it. Loop thread only.
 *
 * What counts (bytes):
 *   - each session's admission estimate (srv_session_estimate: solver,
 *     constraints, frame ring), from create until it is freed;
 *   - while a session runs or waits to, its run buffers (the stream message
 *     and two checkpoint snapshots in flight): SRV_BUDGET_RUN_BYTES_PER_VERTEX;
 *   - a create in progress: its estimate, reserved at admission;
 *   - a collider.add of a mesh or a collider.update in progress: the largest
 *     field --max-voxels allows, reserved until the build lands;
 *   - the field cache's grids (fieldcache.h), whose own budget is the
 *     smaller of 1 GiB and an eighth of --max-memory.
 * Not counted: requests being received (bounded by max-connections x
 * max-message, conns.h) and fields that left the cache while a session
 * still uses them.
 */
#ifndef DRAPE_SRV_BUDGET_H
#define DRAPE_SRV_BUDGET_H

#include <stdint.h>

#include "server/server.h"

/* Stream message (12 bytes a vertex) plus two checkpoint snapshots of
 * positions and velocities (24 bytes a vertex each) held while a frame is
 * written. */
#define SRV_BUDGET_RUN_BYTES_PER_VERTEX 60u
/* An OpenVDB float grid holds 4 bytes a voxel in its leaves plus masks and
 * the upper tree; 5 bounds it for the dense-ish fields a body gives. */
#define SRV_BUDGET_FIELD_BYTES_PER_VOXEL 5u

/* Bytes in use by the measure above. */
uint64_t srv_budget_used(const srv_server *srv);

/* Checks that `more` bytes fit: DRAPE_OK, or DRAPE_ENOMEM naming op, the
 * budget and what is left. A budget of 0 admits everything. */
drape_err srv_budget_check(const srv_server *srv, const char *op, uint64_t more, drape_error *err);

/* What a run of s adds while it runs. */
uint64_t srv_budget_run_bytes(const srv_session *s);

/* What a mesh collider build may hold at most, reserved while it runs. */
uint64_t srv_budget_field_bytes(const srv_config *cfg);

/* The field cache's share of a budget: min(1 GiB, max_memory / 8); 1 GiB
 * without a budget. */
uint64_t srv_budget_fieldcache_bytes(const srv_config *cfg);

#endif
