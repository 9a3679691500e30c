/*
 * TLS for draped's tls+tcp:// listeners: one nng TLS configuration built
 * from --tls-cert, --tls-key and --tls-ca, shared by the control and the
 * stream listeners (nng keeps its own reference on each listener).
 */
#ifndef DRAPE_SRV_TLS_H
#define DRAPE_SRV_TLS_H

#include <stddef.h>

#include "server/config.h"

/*
 * Builds c->tls when c->tls_cert is set (nothing to do otherwise) and
 * returns SRV_EXIT_OK; on failure returns SRV_EXIT_NOINPUT (a file cannot
 * be read) or SRV_EXIT_UNAVAILABLE (a file is not a usable certificate or
 * key) with a one-line message naming the option and file in msg, and
 * c->tls stays NULL. Call after srv_config_finish, before srv_server_init.
 */
int srv_tls_open(srv_config *c, char *msg, size_t msg_len);

/* Drops the configuration's reference (listeners may hold theirs until
 * their sockets close). NULL c->tls is fine. */
void srv_tls_close(srv_config *c);

#endif
