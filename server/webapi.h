/*
 * The browser view's JSON API, beside its page (web.c), on the same HTTP
 * server:
 *
 *   GET /api/box       {"server", "protocol", "sessions", "running", "queued",
 *                       "threads", "memory", "max_memory", "frames_solved",
 *                       "load": [1, 5, 15 min]}
 *   GET /api/sessions  {"sessions": [{"id", "name", "owner_client", "state",
 *                       "queue_position", "frames_done", "frames_target",
 *                       "progress", "vertices", "triangles",
 *                       "history": {"frame": [..], "max_strain": [..],
 *                       "mean_strain": [..], "contacts": [..],
 *                       "self_pairs": [..], "stored_ms": [..]}}]}
 *
 * stored_ms is the wall clock (Unix time in ms, fractional) when the loop
 * stored each frame, for measuring how long a frame takes from solved to
 * shown on the same machine.
 *
 * Both need "Authorization: Bearer TOKEN" with the daemon's auth token
 * (401 otherwise) and show what session.list and session.status show any
 * token holder: ids, states, counters and per-frame statistics, never
 * positions. With --users-file TOKEN is a user's token: /api/sessions
 * lists only that user's sessions (an admin's, every one), each with
 * "owner", its user's name; /api/box is the whole box's counts. Snapshots are at most one cron tick (250 ms) old.
 */
#ifndef DRAPE_SRV_WEBAPI_H
#define DRAPE_SRV_WEBAPI_H

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <stdint.h>

#include "drape/sim.h"
#include "server/config.h"

struct srv_server;
typedef struct srv_webapi srv_webapi;

/* Registers the handlers on http. Returns an nng error on failure. */
int srv_webapi_open(const srv_config *cfg, nng_http_server *http, srv_webapi **out);
/* Frees the snapshots and histories; the (empty) struct stays for handlers
 * an HTTP server shared with another part of draped may still call. */
void srv_webapi_close(srv_webapi *a);

/* Loop thread: a frame of `session` landed with these stats. */
void srv_webapi_frame(srv_webapi *a, uint32_t session, uint32_t index, const drape_sim_stats *st);
/* Loop thread: writes and publishes the JSON texts. */
void srv_webapi_publish(srv_webapi *a, const struct srv_server *srv);

#endif
