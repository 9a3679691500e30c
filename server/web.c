/*
 * The browser view: static files and the control protocol over WebSocket
 * (see web.h).
 */
#include "server/web.h"

#include <limits.h>
#include <nng/supplemental/http/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/log.h"
#include "server/webapi.h"

struct srv_web {
	nng_http_server *http;
	nng_listener ws;
	bool ws_open;
	bool started;
	srv_webapi *api;
};

/* The app's folder: --http-root, else www beside the draped binary (the
 * build tree), else the installed share/drape/www. out holds PATH_MAX + 32
 * bytes, so the binary's folder and either suffix fit. */
static bool web_root(const srv_config *cfg, char *out, size_t n)
{
	struct stat st;
	if (cfg->http_root != NULL) {
		snprintf(out, n, "%s", cfg->http_root);
		return stat(out, &st) == 0 && S_ISDIR(st.st_mode);
	}
	char exe[PATH_MAX - 32];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(out, n, "%s/www", exe);
			if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
				return true;
			snprintf(out, n, "%s/../share/drape/www", exe);
			if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
				return true;
		}
	}
	return false;
}

int srv_web_open(const srv_config *cfg, nng_socket control, srv_web **out, const char **why)
{
	*out = NULL;
	if (cfg->http == NULL)
		return 0;
	const char *hostport = cfg->http + strlen("tcp://");
	char http_url[600], ws_url[600], root[PATH_MAX + 32];
	snprintf(http_url, sizeof http_url, "http://%s", hostport);
	snprintf(ws_url, sizeof ws_url, "ws://%s/ws", hostport);
	if (!web_root(cfg, root, sizeof root)) {
		*why = "--http-root (the app's folder; build it with make)";
		return NNG_ENOENT;
	}
	srv_web *w = calloc(1, sizeof *w);
	if (w == NULL) {
		*why = "--http";
		return NNG_ENOMEM;
	}
	nng_url *url = NULL;
	nng_http_handler *h = NULL;
	int rv = nng_url_parse(&url, http_url);
	*why = cfg->http;
	if (rv == 0)
		rv = nng_http_server_hold(&w->http, url);
	nng_url_free(url);
	if (rv != 0) {
		free(w);
		return rv;
	}
	rv = srv_webapi_open(cfg, w->http, &w->api);
	/* The whole app is three static files. Each has its own handler: a
	 * tree handler on "/" would claim /api and /ws as well. */
	static const char *const files[][2] = {
		{"/", "index.html"}, {"/index.html", "index.html"}, {"/app.js", "app.js"}, {"/app.css", "app.css"}};
	for (size_t i = 0; rv == 0 && i < sizeof files / sizeof files[0]; i++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof path, "%s/%s", root, files[i][1]);
		rv = nng_http_handler_alloc_file(&h, files[i][0], path);
		if (rv == 0) {
			rv = nng_http_server_add_handler(w->http, h);
			if (rv != 0)
				nng_http_handler_free(h);
		}
	}
	/* The page's WebSocket is a listener of the control socket on the
	 * same host and port; nng's ws transport holds the same HTTP server
	 * and registers /ws on it. */
	if (rv == 0)
		rv = nng_listener_create(&w->ws, control, ws_url);
	if (rv == 0) {
		w->ws_open = true;
		rv = nng_listener_set_size(w->ws, NNG_OPT_RECVMAXSZ, (size_t)cfg->max_message);
	}
	if (rv == 0)
		rv = nng_listener_start(w->ws, 0);
	if (rv == 0) {
		rv = nng_http_server_start(w->http);
		w->started = rv == 0;
	}
	if (rv != 0) {
		srv_web_close(w);
		return rv;
	}
	srv_info("browser view on http://%s/ (app from %s, frames over ws://%s/ws)", hostport, root, hostport);
	*out = w;
	return 0;
}

void srv_web_close(srv_web *w)
{
	if (w == NULL)
		return;
	if (w->ws_open)
		nng_listener_close(w->ws);
	if (w->started)
		nng_http_server_stop(w->http);
	srv_webapi_close(w->api);
	if (w->http != NULL)
		nng_http_server_release(w->http);
	free(w);
}

void srv_web_frame(srv_web *w, uint32_t session, uint32_t index, const drape_sim_stats *st)
{
	if (w != NULL)
		srv_webapi_frame(w->api, session, index, st);
}

void srv_web_publish(srv_web *w, const struct srv_server *srv)
{
	if (w != NULL)
		srv_webapi_publish(w->api, srv);
}
