/*
 * The browser view (draped --http tcp://HOST:PORT): nng's HTTP server
 * serves the single-page app from server/www (built into BUILD/www) and a
 * WebSocket at /ws that is one more listener of the control socket, so the
 * page speaks the ordinary control protocol (REQ/REP over ws, subprotocol
 * rep.sp.nanomsg.org) and every request goes through the same decoding,
 * auth token and owner token checks as any other client's. Nothing here
 * touches session state: the loop threading rules hold by construction.
 */
#ifndef DRAPE_SRV_WEB_H
#define DRAPE_SRV_WEB_H

#include <nng/nng.h>

#include "drape/sim.h"
#include "server/config.h"

typedef struct srv_web srv_web;

/* Starts serving cfg->http (NULL: nothing, *out = NULL, returns 0). On
 * failure returns an nng error, *why names what failed, nothing is left
 * open. The HTTP server is held by URL, so another part of draped holding
 * the same URL (the metrics endpoint) shares its listener. */
int srv_web_open(const srv_config *cfg, nng_socket control, srv_web **out, const char **why);

/* Stops the WebSocket listener and releases the HTTP server. NULL is fine. */
void srv_web_close(srv_web *w);

/* Loop thread; NULL w is fine. A frame landed (for the JSON API's
 * per-frame history), and the cron's publication of the API's snapshot
 * (webapi.h). */
struct srv_server;
void srv_web_frame(srv_web *w, uint32_t session, uint32_t index, const drape_sim_stats *st);
void srv_web_publish(srv_web *w, const struct srv_server *srv);

#endif
