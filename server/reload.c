/*
 * SIGHUP reloads (see reload.h).
 */
#include "server/reload.h"

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "server/budget.h"
#include "server/control.h"
#include "server/fieldcache.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/notify.h"
#include "server/server.h"
#include "server/tls.h"
#include "server/users.h"

static bool srv_str_differs(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* ---- auth ------------------------------------------------------------------ */

static bool srv_reload_auth_prepare(srv_server *srv, srv_config *next, char *msg, size_t msg_len)
{
	/* srv_config_finish has read and checked the token file already. */
	(void)srv;
	(void)next;
	(void)msg;
	(void)msg_len;
	return true;
}

static unsigned srv_reload_auth_commit(srv_server *srv, srv_config *next)
{
	srv_config *cur = srv->cfg;
	const bool same = cur->auth_token_len == next->auth_token_len &&
			  (cur->auth_token == NULL ? next->auth_token == NULL
						   : next->auth_token != NULL &&
							     memcmp(cur->auth_token, next->auth_token,
								    cur->auth_token_len) == 0);
	const bool file_changed = srv_str_differs(cur->auth_token_file, next->auth_token_file);
	if (same && !file_changed)
		return 0;
	char *t = cur->auth_token;
	cur->auth_token = next->auth_token;
	next->auth_token = t;
	size_t n = cur->auth_token_len;
	cur->auth_token_len = next->auth_token_len;
	next->auth_token_len = n;
	t = cur->auth_token_file;
	cur->auth_token_file = next->auth_token_file;
	next->auth_token_file = t;
	/* The token itself is never logged. */
	if (cur->auth_token == NULL)
		srv_warn("reload: auth token: none any more (requests are no longer checked)");
	else if (!same)
		srv_info("reload: auth token: new token from %s (the old one is refused from now on)",
			 cur->auth_token_file);
	else
		srv_info("reload: auth token file: now %s (same token)", cur->auth_token_file);
	return 1;
}

static void srv_reload_auth_discard(srv_server *srv, srv_config *next)
{
	(void)srv;
	(void)next;
}

/* ---- users ----------------------------------------------------------------- */

/* srv_config_finish has loaded and checked the users file into next->users
 * (a new table; a bad line fails the whole reload there). Sessions keep
 * their owner's name, not a pointer, and the request's user is looked up
 * afresh for every request, so the swap is safe between two requests. */
static bool srv_reload_users_prepare(srv_server *srv, srv_config *next, char *msg, size_t msg_len)
{
	(void)msg;
	(void)msg_len;
	if ((srv->cfg->users_file == NULL) != (next->users_file == NULL)) {
		snprintf(msg, msg_len, "--users-file cannot be %s by a reload: restart draped",
			 next->users_file == NULL ? "removed" : "added");
		return false;
	}
	return true;
}

static unsigned srv_reload_users_commit(srv_server *srv, srv_config *next)
{
	srv_config *cur = srv->cfg;
	if (next->users == NULL)
		return 0;
	struct srv_users *old = cur->users;
	cur->users = next->users;
	next->users = old; /* freed with next */
	char *t = cur->users_file;
	cur->users_file = next->users_file;
	next->users_file = t;
	srv_info("reload: users: %zu users from %s", cur->users->count, cur->users_file);
	return 1;
}

static void srv_reload_users_discard(srv_server *srv, srv_config *next)
{
	(void)srv;
	(void)next;
}

/* ---- tls ------------------------------------------------------------------- */

static bool srv_reload_tls_prepare(srv_server *srv, srv_config *next, char *msg, size_t msg_len)
{
	(void)srv;
	if (next->tls_cert == NULL)
		return true;
	/* The same checks as at start: both files read, the certificate
	 * parsed, the key matching it. */
	return srv_tls_open(next, msg, msg_len) == SRV_EXIT_OK;
}

static unsigned srv_reload_tls_commit(srv_server *srv, srv_config *next)
{
	srv_config *cur = srv->cfg;
	if (next->tls == NULL) {
		if (cur->tls != NULL)
			srv_warn("reload: TLS: the new configuration has no --tls-cert; the tls+tcp:// listeners "
				 "keep the old certificate until restart");
		return 0;
	}
	const char *bad = NULL;
	int rv = srv_control_set_tls(srv->control, next->tls, &bad);
	if (rv != 0) {
		/* Listeners set before the failure hold the new configuration
		 * (a valid one); the others keep the old. */
		srv_error("reload: TLS: %s refused the new certificate (%s); it keeps the old one", bad,
			  nng_strerror(rv));
		srv_tls_close(next);
		return 0;
	}
	struct nng_tls_config *old = cur->tls;
	cur->tls = next->tls;
	next->tls = old;
	srv_tls_close(next);
	char *t;
#define SRV_SWAP_STR(f)          \
	do {                     \
		t = cur->f;      \
		cur->f = next->f; \
		next->f = t;     \
	} while (0)
	SRV_SWAP_STR(tls_cert);
	SRV_SWAP_STR(tls_key);
	SRV_SWAP_STR(tls_ca);
#undef SRV_SWAP_STR
	srv_info("reload: TLS: certificate %s and key %s loaded%s%s; new connections use them", cur->tls_cert,
		 cur->tls_key, cur->tls_ca ? ", client CA " : "", cur->tls_ca ? cur->tls_ca : "");
	return 1;
}

static void srv_reload_tls_discard(srv_server *srv, srv_config *next)
{
	(void)srv;
	srv_tls_close(next);
}

/* ---- limits ---------------------------------------------------------------- */

/* The limits read only on the loop, at the time of a request: changing them
 * between two requests is safe. */
static const struct {
	const char *name;
	size_t offset;
} srv_reload_limits[] = {
	{ "max_sessions", offsetof(srv_config, max_sessions) },
	{ "max_sessions_per_client", offsetof(srv_config, max_sessions_per_client) },
	{ "max_vertices", offsetof(srv_config, max_vertices) },
	{ "max_triangles", offsetof(srv_config, max_triangles) },
	{ "max_colliders", offsetof(srv_config, max_colliders) },
	{ "max_frames_per_get", offsetof(srv_config, max_frames_per_get) },
	{ "max_session_memory", offsetof(srv_config, max_session_memory) },
	{ "max_memory", offsetof(srv_config, max_memory) },
	{ "idle_timeout", offsetof(srv_config, idle_timeout_s) },
	{ "orphan_timeout", offsetof(srv_config, orphan_timeout_s) },
	{ "max_connections", offsetof(srv_config, max_connections) },
	{ "max_connections_per_peer", offsetof(srv_config, max_connections_per_peer) },
};

/* Read by worker threads or fixed at start: these wait for a restart. */
static const struct {
	const char *name;
	size_t offset;
	int kind; /* 0 u64, 1 u32 */
} srv_reload_fixed[] = {
	{ "threads", offsetof(srv_config, threads), 1 },
	{ "pool_threads", offsetof(srv_config, pool_threads), 1 },
	{ "ipc_mode", offsetof(srv_config, ipc_mode), 1 },
	{ "max_message", offsetof(srv_config, max_message), 0 },
	{ "max_voxels", offsetof(srv_config, max_voxels), 0 },
	{ "max_field_disk", offsetof(srv_config, max_field_disk), 0 },
	{ "max_anim_frames", offsetof(srv_config, max_anim_frames), 0 },
	{ "max_anim_bytes", offsetof(srv_config, max_anim_bytes), 0 },
	{ "max_frames_retained", offsetof(srv_config, max_frames_retained), 0 },
	{ "frames_in_memory", offsetof(srv_config, frames_in_memory), 0 },
	{ "checkpoint_every", offsetof(srv_config, checkpoint_every), 0 },
};

static bool srv_reload_limits_prepare(srv_server *srv, srv_config *next, char *msg, size_t msg_len)
{
	(void)srv;
	(void)next;
	(void)msg;
	(void)msg_len;
	return true;
}

static bool srv_urls_differ(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return true;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return true;
	return false;
}

static unsigned srv_reload_limits_commit(srv_server *srv, srv_config *next)
{
	srv_config *cur = srv->cfg;
	unsigned changed = 0;
	for (size_t i = 0; i < sizeof srv_reload_limits / sizeof srv_reload_limits[0]; i++) {
		uint64_t *c = (uint64_t *)(void *)((char *)cur + srv_reload_limits[i].offset);
		const uint64_t *n = (const uint64_t *)(const void *)((const char *)next + srv_reload_limits[i].offset);
		if (*c == *n)
			continue;
		srv_info("reload: %s %llu -> %llu", srv_reload_limits[i].name, (unsigned long long)*c,
			 (unsigned long long)*n);
		*c = *n;
		changed++;
	}
	if (changed > 0) {
		srv_control_set_conn_limits(srv->control, cur->max_connections, cur->max_connections_per_peer);
		srv_fieldcache_set_budget(srv_budget_fieldcache_bytes(cur));
	}
	for (size_t i = 0; i < sizeof srv_reload_fixed / sizeof srv_reload_fixed[0]; i++) {
		const char *c = (const char *)cur + srv_reload_fixed[i].offset;
		const char *n = (const char *)next + srv_reload_fixed[i].offset;
		const bool differs = srv_reload_fixed[i].kind == 0 ? *(const uint64_t *)(const void *)c !=
									     *(const uint64_t *)(const void *)n
								   : *(const uint32_t *)(const void *)c !=
									     *(const uint32_t *)(const void *)n;
		if (differs)
			srv_warn("reload: %s changed in the configuration; it takes effect at restart",
				 srv_reload_fixed[i].name);
	}
	if (srv_urls_differ(cur->listen, cur->listen_count, next->listen, next->listen_count))
		srv_warn("reload: listen URLs changed in the configuration; they take effect at restart");
	if (srv_urls_differ(cur->stream, cur->stream_count, next->stream, next->stream_count))
		srv_warn("reload: stream URLs changed in the configuration; they take effect at restart");
	if (srv_str_differs(cur->state_dir, next->state_dir))
		srv_warn("reload: state_dir changed in the configuration; it takes effect at restart");
	if (srv_str_differs(cur->metrics, next->metrics))
		srv_warn("reload: metrics changed in the configuration; it takes effect at restart");
	return changed;
}

static void srv_reload_limits_discard(srv_server *srv, srv_config *next)
{
	(void)srv;
	(void)next;
}

/* ---- logging --------------------------------------------------------------- */

static bool srv_reload_log_prepare(srv_server *srv, srv_config *next, char *msg, size_t msg_len)
{
	(void)srv;
	(void)next;
	(void)msg;
	(void)msg_len;
	return true;
}

static unsigned srv_reload_log_commit(srv_server *srv, srv_config *next)
{
	srv_config *cur = srv->cfg;
	unsigned changed = 0;
	if (cur->verbose != next->verbose) {
		srv_info("reload: verbose %s -> %s", cur->verbose ? "on" : "off", next->verbose ? "on" : "off");
		cur->verbose = next->verbose;
		srv_log_set_verbose(cur->verbose);
		changed++;
	}
	if (srv_str_differs(cur->log_format, next->log_format)) {
		srv_log_format f = SRV_LOG_TEXT;
		if (next->log_format != NULL)
			srv_log_format_parse(next->log_format, &f);
		srv_info("reload: log_format %s -> %s", cur->log_format ? cur->log_format : "text",
			 next->log_format ? next->log_format : "text");
		srv_log_set_format(f);
		char *t = cur->log_format;
		cur->log_format = next->log_format;
		next->log_format = t;
		changed++;
	}
	if (srv_str_differs(cur->log_file, next->log_file)) {
		int e = srv_log_open(next->log_file);
		if (e != 0) {
			srv_error("reload: log_file %s: %s; logging stays where it was", next->log_file, strerror(e));
		} else {
			srv_info("reload: log_file %s -> %s", cur->log_file ? cur->log_file : "(stderr)",
				 next->log_file ? next->log_file : "(stderr)");
			char *t = cur->log_file;
			cur->log_file = next->log_file;
			next->log_file = t;
			changed++;
		}
	}
	return changed;
}

static void srv_reload_log_discard(srv_server *srv, srv_config *next)
{
	(void)srv;
	(void)next;
}

/* Every part a reload replaces, in the order they commit. */
static const srv_reload_part srv_reload_parts[] = {
	{ "auth", srv_reload_auth_prepare, srv_reload_auth_commit, srv_reload_auth_discard },
	{ "users", srv_reload_users_prepare, srv_reload_users_commit, srv_reload_users_discard },
	{ "tls", srv_reload_tls_prepare, srv_reload_tls_commit, srv_reload_tls_discard },
	{ "limits", srv_reload_limits_prepare, srv_reload_limits_commit, srv_reload_limits_discard },
	{ "logging", srv_reload_log_prepare, srv_reload_log_commit, srv_reload_log_discard },
};
#define SRV_RELOAD_NPARTS (sizeof srv_reload_parts / sizeof srv_reload_parts[0])

bool srv_reload(srv_server *srv, double *ms_out)
{
	const uint64_t t0 = uv_hrtime();
	srv_notify("RELOADING=1\nSTATUS=reloading the configuration");
	srv_info("SIGHUP: reloading the configuration%s%s", srv->cfg->config_file ? " from " : "",
		 srv->cfg->config_file ? srv->cfg->config_file : "");
	srv_config next;
	char msg[1024];
	msg[0] = '\0';
	srv_config_default(&next);
	bool ok = srv->argv != NULL;
	if (!ok)
		snprintf(msg, sizeof msg, "the command line is not known");
	if (ok)
		ok = srv_config_parse(&next, srv->argc, srv->argv, msg, sizeof msg) == SRV_CONFIG_OK;
	if (ok)
		ok = srv_config_finish(&next, msg, sizeof msg) == SRV_CONFIG_OK;
	size_t prepared = 0;
	for (; ok && prepared < SRV_RELOAD_NPARTS; prepared++) {
		const srv_reload_part *p = &srv_reload_parts[prepared];
		char why[900];
		why[0] = '\0';
		if (!p->prepare(srv, &next, why, sizeof why)) {
			snprintf(msg, sizeof msg, "%s: %s", p->name, why);
			ok = false;
			break;
		}
	}
	unsigned changed = 0;
	if (ok) {
		for (size_t i = 0; i < SRV_RELOAD_NPARTS; i++)
			changed += srv_reload_parts[i].commit(srv, &next);
	} else {
		for (size_t i = 0; i < prepared; i++)
			srv_reload_parts[i].discard(srv, &next);
	}
	srv_config_free(&next);
	const double ms = (double)(uv_hrtime() - t0) / 1e6;
	if (ms_out != NULL)
		*ms_out = ms;
	srv_metrics_reload(ok, ms / 1000.0);
	if (ok) {
		srv_info("reload done in %.3f ms: %u setting%s changed; every session and connection kept", ms,
			 changed, changed == 1 ? "" : "s");
		srv_notify("READY=1\nSTATUS=configuration reloaded");
	} else {
		srv_error("reload failed, keeping the old settings: %s", msg);
		srv_notify("READY=1\nSTATUS=reload failed, old settings kept");
	}
	return ok;
}
