/*
 * SIGHUP: the configuration read again, and what can change at run time
 * applied without dropping a session or a connection.
 *
 * A reload parses the command line draped was started with again, and so
 * re-reads the config file (--config or the default file), the token file,
 * the TLS certificate and key; srv_config_finish and srv_tls_open check
 * them exactly as at start. It is all or nothing: every part prepares first
 * (reads its files, builds what it needs) and only when every part
 * succeeded does each commit, swapping its fields into the live
 * configuration on the loop and logging what changed. A reload that fails
 * logs why and leaves every setting as it was.
 *
 * Parts (reload.c's table; a new kind of setting adds a row):
 *   auth    the token file (--auth-token-file), compared in constant time
 *           from the next request on;
 *   tls     --tls-cert / --tls-key / --tls-ca, presented from the next
 *           handshake on (open connections keep their session);
 *   limits  max-sessions, max-sessions-per-client, max-vertices,
 *           max-triangles, max-colliders, max-frames-per-get,
 *           max-session-memory, max-memory, idle-timeout, orphan-timeout,
 *           max-connections, max-connections-per-peer: checked from the
 *           next request on (sessions over a lowered limit keep running);
 *   logging --verbose, --log-format and --log-file.
 * Other settings (listen and stream URLs, state directory, threads,
 * max-message, ...) take effect at restart; a reload that sees them changed
 * says so in the log and keeps the running values.
 */
#ifndef DRAPE_SRV_RELOAD_H
#define DRAPE_SRV_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "server/config.h"

struct srv_server;

/*
 * One part of the configuration a reload replaces. prepare reads what it
 * needs into next (or into its own state) and may fail with a one-line
 * reason in msg; commit moves it into srv->cfg (so srv_config_free(next)
 * frees the old values) and logs each change; it returns how many settings
 * changed. discard undoes prepare when another part failed. Loop thread.
 */
typedef struct srv_reload_part {
	const char *name;
	bool (*prepare)(struct srv_server *srv, srv_config *next, char *msg, size_t msg_len);
	unsigned (*commit)(struct srv_server *srv, srv_config *next);
	void (*discard)(struct srv_server *srv, srv_config *next);
} srv_reload_part;

/*
 * Loop: reloads (see above). Returns true when the new settings are in use;
 * false when they were refused (the reason is logged, nothing changed).
 * *ms_out (may be NULL) gets the time the reload took.
 */
bool srv_reload(struct srv_server *srv, double *ms_out);

#endif
