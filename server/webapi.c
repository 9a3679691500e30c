/*
 * The browser view's JSON API (see webapi.h): GET /api/box and GET
 * /api/sessions, answered from a snapshot the loop publishes.
 *
 * Threading: the HTTP handlers run on nng's threads and must not touch
 * session state, so the loop writes the JSON text at every cron tick
 * (srv_webapi_publish), with a copy of the users table (a reload swaps the
 * live one), and swaps the snapshot in under a mutex; a handler takes a
 * reference to the current one under the same mutex. The per-frame history is recorded by
 * the loop as each frame lands (srv_webapi_frame).
 */
#include "server/webapi.h"

#include <cjson/cJSON.h>
#include <nng/supplemental/http/http.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server.h"
#include "server/session.h"
#include "server/users.h"

/* Frames of history kept per session (the newest). */
#define WEBAPI_HISTORY 4096u

typedef struct webapi_hist {
	uint32_t session;
	uint32_t n;
	uint32_t frame[WEBAPI_HISTORY];
	float max_strain[WEBAPI_HISTORY];
	float mean_strain[WEBAPI_HISTORY];
	uint32_t contacts[WEBAPI_HISTORY];
	uint32_t self_pairs[WEBAPI_HISTORY];
	double stored_ms[WEBAPI_HISTORY]; /* wall clock (Unix ms) when the loop stored it */
} webapi_hist;

/* What the loop publishes at a tick, read-only once published; a handler
 * holds a reference while it answers (refs under srv_webapi.mu). */
typedef struct webapi_snap {
	unsigned refs;
	char *box;      /* GET /api/box */
	size_t n;
	char **owner;   /* per session: its owner user ("" without users) */
	char **item;    /* per session: its JSON object */
	srv_users *users; /* a copy of the users table (NULL without --users-file) */
} webapi_snap;

struct srv_webapi {
	const srv_config *cfg;
	bool users_mode; /* --users-file: the bearer token is a user token */
	pthread_mutex_t mu;
	webapi_snap *snap; /* the newest (mu) */
	/* Loop only. */
	webapi_hist **hist;
	size_t hist_count, hist_cap;
};

/* ---- HTTP side (nng threads) ---------------------------------------------- */

static void reply(nng_aio *aio, uint16_t status, const char *body)
{
	nng_http_res *res;
	if (nng_http_res_alloc(&res) != 0) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	nng_http_res_set_status(res, status);
	nng_http_res_set_header(res, "Content-Type", "application/json");
	nng_http_res_set_header(res, "Cache-Control", "no-store");
	if (nng_http_res_copy_data(res, body, strlen(body)) != 0) {
		nng_http_res_free(res);
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

static void snap_free(webapi_snap *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->owner[i]), free(s->item[i]);
	free(s->owner), free(s->item);
	free(s->box);
	srv_users_free(s->users);
	free(s);
}

static void snap_release(srv_webapi *a, webapi_snap *s)
{
	pthread_mutex_lock(&a->mu);
	const bool last = --s->refs == 0;
	pthread_mutex_unlock(&a->mu);
	if (last)
		snap_free(s);
}

/* The token as every client sends it, here in "Authorization: Bearer
 * TOKEN": the daemon's auth token (constant-time compare by the config's
 * check), or with --users-file a user's token, checked against the
 * snapshot's copy of the users table. *user is the user (NULL without
 * --users-file). */
static bool authorized(const srv_webapi *a, const webapi_snap *s, nng_http_req *req, const srv_user **user)
{
	const char *h = nng_http_req_get_header(req, "Authorization");
	const char *t = h != NULL && strncmp(h, "Bearer ", 7) == 0 ? h + 7 : NULL;
	*user = NULL;
	if (a->users_mode) {
		if (t == NULL)
			return false;
		*user = srv_users_auth(s->users, (const uint8_t *)t, strlen(t));
		return *user != NULL;
	}
	return t != NULL ? srv_config_auth_ok(a->cfg, (const uint8_t *)t, strlen(t))
			 : srv_config_auth_ok(a->cfg, NULL, 0);
}

/* {"sessions":[...]} of the items owned by `owner` (every item for NULL). */
static char *sessions_text(const webapi_snap *s, const char *owner)
{
	size_t len = 16;
	for (size_t i = 0; i < s->n; i++)
		len += strlen(s->item[i]) + 1;
	char *out = malloc(len);
	if (out == NULL)
		return NULL;
	size_t at = (size_t)snprintf(out, len, "{\"sessions\":[");
	bool first = true;
	for (size_t i = 0; i < s->n; i++) {
		if (owner != NULL && strcmp(s->owner[i], owner) != 0)
			continue;
		if (!first)
			out[at++] = ',';
		first = false;
		const size_t k = strlen(s->item[i]);
		memcpy(out + at, s->item[i], k);
		at += k;
	}
	memcpy(out + at, "]}", 3);
	return out;
}

static void serve(nng_aio *aio, bool box)
{
	nng_http_req *req = nng_aio_get_input(aio, 0);
	nng_http_handler *h = nng_aio_get_input(aio, 1);
	srv_webapi *a = nng_http_handler_get_data(h);
	pthread_mutex_lock(&a->mu);
	webapi_snap *s = a->snap;
	if (s != NULL)
		s->refs++;
	pthread_mutex_unlock(&a->mu);
	if (s == NULL) {
		reply(aio, 503, "{\"error\":{\"code\":\"EUNAVAILABLE\",\"message\":\"not published yet\"}}");
		return;
	}
	const srv_user *user;
	if (!authorized(a, s, req, &user)) {
		snap_release(a, s);
		reply(aio, 401, "{\"error\":{\"code\":\"EPERM\",\"message\":\"auth: missing or wrong "
				"(send Authorization: Bearer TOKEN)\"}}");
		return;
	}
	/* A user sees the sessions they own; an administrator, every one. */
	char *text = box ? strdup(s->box)
			 : sessions_text(s, user != NULL && user->role != SRV_ROLE_ADMIN ? user->name : NULL);
	snap_release(a, s);
	if (text == NULL) {
		reply(aio, 500, "{\"error\":{\"code\":\"ENOMEM\",\"message\":\"out of memory\"}}");
		return;
	}
	reply(aio, 200, text);
	free(text);
}

static void on_box(nng_aio *aio)
{
	serve(aio, true);
}

static void on_sessions(nng_aio *aio)
{
	serve(aio, false);
}

int srv_webapi_open(const srv_config *cfg, nng_http_server *http, srv_webapi **out)
{
	srv_webapi *a = calloc(1, sizeof *a);
	if (a == NULL)
		return NNG_ENOMEM;
	a->cfg = cfg;
	a->users_mode = cfg->users_file != NULL;
	pthread_mutex_init(&a->mu, NULL);
	static const struct {
		const char *path;
		void (*cb)(nng_aio *);
	} routes[] = {{"/api/box", on_box}, {"/api/sessions", on_sessions}};
	for (size_t i = 0; i < 2; i++) {
		nng_http_handler *h;
		int rv = nng_http_handler_alloc(&h, routes[i].path, routes[i].cb);
		if (rv == 0)
			rv = nng_http_handler_set_data(h, a, NULL);
		if (rv == 0) {
			rv = nng_http_server_add_handler(http, h);
			if (rv != 0)
				nng_http_handler_free(h);
		} else if (h != NULL) {
			nng_http_handler_free(h);
		}
		if (rv != 0) {
			/* Handlers already added keep a pointer to a: it stays
			 * allocated (one small leak on a failed start, which
			 * then exits). */
			return rv;
		}
	}
	*out = a;
	return 0;
}

void srv_webapi_close(srv_webapi *a)
{
	/* The handlers live as long as the HTTP server, which another part of
	 * draped may still hold (metrics): a stays, emptied, until exit. */
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	webapi_snap *s = a->snap;
	a->snap = NULL;
	pthread_mutex_unlock(&a->mu);
	if (s != NULL)
		snap_release(a, s);
	for (size_t i = 0; i < a->hist_count; i++)
		free(a->hist[i]);
	free(a->hist);
	a->hist = NULL;
	a->hist_count = a->hist_cap = 0;
}

/* ---- Loop side ---------------------------------------------------------------- */

static webapi_hist *hist_find(srv_webapi *a, uint32_t session, bool create)
{
	for (size_t i = 0; i < a->hist_count; i++)
		if (a->hist[i]->session == session)
			return a->hist[i];
	if (!create)
		return NULL;
	if (a->hist_count == a->hist_cap) {
		size_t cap = a->hist_cap ? a->hist_cap * 2 : 8;
		webapi_hist **p = realloc(a->hist, cap * sizeof *p);
		if (p == NULL)
			return NULL;
		a->hist = p;
		a->hist_cap = cap;
	}
	webapi_hist *h = calloc(1, sizeof *h);
	if (h == NULL)
		return NULL;
	h->session = session;
	a->hist[a->hist_count++] = h;
	return h;
}

void srv_webapi_frame(srv_webapi *a, uint32_t session, uint32_t index, const drape_sim_stats *st)
{
	if (a == NULL)
		return;
	webapi_hist *h = hist_find(a, session, true);
	if (h == NULL)
		return; /* no memory: the plot misses a frame, nothing else */
	if (h->n > 0 && index <= h->frame[h->n - 1])
		h->n = 0; /* a new run from an earlier frame (resume): start again */
	if (h->n == WEBAPI_HISTORY) {
		const size_t keep = WEBAPI_HISTORY - 1;
		memmove(h->frame, h->frame + 1, keep * sizeof h->frame[0]);
		memmove(h->max_strain, h->max_strain + 1, keep * sizeof h->max_strain[0]);
		memmove(h->mean_strain, h->mean_strain + 1, keep * sizeof h->mean_strain[0]);
		memmove(h->contacts, h->contacts + 1, keep * sizeof h->contacts[0]);
		memmove(h->self_pairs, h->self_pairs + 1, keep * sizeof h->self_pairs[0]);
		memmove(h->stored_ms, h->stored_ms + 1, keep * sizeof h->stored_ms[0]);
		h->n = (uint32_t)keep;
	}
	h->frame[h->n] = index;
	h->max_strain[h->n] = st->max_strain;
	h->mean_strain[h->n] = st->mean_strain;
	h->contacts[h->n] = st->contacts;
	h->self_pairs[h->n] = st->self_pairs;
	/* The wall clock, not a monotonic one: a page on the same machine
	 * compares it with its own Date.now() to measure solve-to-drawn. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->stored_ms[h->n] = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	h->n++;
}

static cJSON *num_array_u32(const uint32_t *v, uint32_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (uint32_t i = 0; arr != NULL && i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
	return arr;
}

static cJSON *num_array_f64(const double *v, uint32_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (uint32_t i = 0; arr != NULL && i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
	return arr;
}

static cJSON *num_array_f32(const float *v, uint32_t n)
{
	cJSON *arr = cJSON_CreateArray();
	/* JSON has no NaN: a frame that went wrong reads as null. */
	for (uint32_t i = 0; arr != NULL && i < n; i++)
		cJSON_AddItemToArray(arr, v[i] == v[i] ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull());
	return arr;
}

void srv_webapi_publish(srv_webapi *a, const srv_server *srv)
{
	if (a == NULL)
		return;
	webapi_snap *snap = calloc(1, sizeof *snap);
	cJSON *box = cJSON_CreateObject();
	const size_t cap = srv->sessions.count ? srv->sessions.count : 1;
	if (snap != NULL) {
		snap->refs = 1;
		snap->owner = calloc(cap, sizeof *snap->owner);
		snap->item = calloc(cap, sizeof *snap->item);
		if (srv->cfg->users != NULL)
			snap->users = srv_users_copy(srv->cfg->users);
	}
	if (snap == NULL || box == NULL || snap->owner == NULL || snap->item == NULL ||
	    (srv->cfg->users != NULL && snap->users == NULL)) {
		snap_free(snap), cJSON_Delete(box);
		return; /* no memory: the previous snapshot stays */
	}
	uint32_t running = 0, queued = 0, live = 0;
	uint64_t memory = 0;
	for (size_t i = 0; i < srv->sessions.count; i++) {
		const srv_session *s = srv->sessions.items[i];
		if (s->deleted)
			continue;
		live++;
		running += s->state == PROTO_STATE_RUNNING;
		queued += s->state == PROTO_STATE_QUEUED;
		memory += s->memory;
		cJSON *o = cJSON_CreateObject();
		if (o == NULL)
			continue;
		cJSON_AddNumberToObject(o, "id", s->id);
		if (s->name != NULL)
			cJSON_AddStringToObject(o, "name", s->name);
		char owner[17];
		snprintf(owner, sizeof owner, "%016llx", (unsigned long long)s->client);
		/* Who created it: the creating client's id (there are no user
		 * names on this daemon; the owner token is never shown). */
		cJSON_AddStringToObject(o, "owner_client", owner);
		/* With --users-file: the user that owns it. */
		if (s->owner[0] != '\0')
			cJSON_AddStringToObject(o, "owner", s->owner);
		cJSON_AddStringToObject(o, "state", proto_state_name(s->state));
		cJSON_AddNumberToObject(o, "queue_position", srv_sched_position(srv, s));
		cJSON_AddNumberToObject(o, "frames_done", s->frames_done);
		cJSON_AddNumberToObject(o, "frames_target", s->target);
		if (s->target > 0)
			cJSON_AddNumberToObject(o, "progress", (double)s->frames_done / s->target);
		else
			cJSON_AddNullToObject(o, "progress");
		cJSON_AddNumberToObject(o, "vertices", s->vertices);
		cJSON_AddNumberToObject(o, "triangles", s->triangles);
		const webapi_hist *h = hist_find(a, s->id, false);
		cJSON *hs = cJSON_CreateObject();
		if (hs != NULL) {
			uint32_t n = h ? h->n : 0;
			static const uint32_t none[1] = {0};
			static const float nonef[1] = {0};
			static const double noned[1] = {0};
			cJSON_AddItemToObject(hs, "frame", num_array_u32(h ? h->frame : none, n));
			cJSON_AddItemToObject(hs, "max_strain", num_array_f32(h ? h->max_strain : nonef, n));
			cJSON_AddItemToObject(hs, "mean_strain", num_array_f32(h ? h->mean_strain : nonef, n));
			cJSON_AddItemToObject(hs, "contacts", num_array_u32(h ? h->contacts : none, n));
			cJSON_AddItemToObject(hs, "self_pairs", num_array_u32(h ? h->self_pairs : none, n));
			cJSON_AddItemToObject(hs, "stored_ms", num_array_f64(h ? h->stored_ms : noned, n));
			cJSON_AddItemToObject(o, "history", hs);
		}
		char *text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		char *who = strdup(s->owner);
		if (text == NULL || who == NULL) {
			free(text), free(who);
			continue;
		}
		snap->item[snap->n] = text;
		snap->owner[snap->n] = who;
		snap->n++;
	}
	/* Histories of sessions that are gone. */
	for (size_t i = a->hist_count; i-- > 0;) {
		bool found = false;
		for (size_t k = 0; k < srv->sessions.count && !found; k++)
			found = srv->sessions.items[k]->id == a->hist[i]->session && !srv->sessions.items[k]->deleted;
		if (!found) {
			free(a->hist[i]);
			a->hist[i] = a->hist[--a->hist_count];
		}
	}
	cJSON_AddStringToObject(box, "server", srv->build);
	cJSON_AddNumberToObject(box, "protocol", PROTO_VERSION);
	cJSON_AddNumberToObject(box, "sessions", live);
	cJSON_AddNumberToObject(box, "running", running);
	cJSON_AddNumberToObject(box, "queued", queued);
	cJSON_AddNumberToObject(box, "threads", srv->cfg->threads);
	cJSON_AddNumberToObject(box, "memory", (double)memory);
	cJSON_AddNumberToObject(box, "max_memory", (double)srv->cfg->max_memory);
	cJSON_AddNumberToObject(box, "frames_solved", (double)srv->counters.frames_solved);
	double load[3];
	if (getloadavg(load, 3) == 3) {
		cJSON *l = cJSON_CreateArray();
		for (int i = 0; l != NULL && i < 3; i++)
			cJSON_AddItemToArray(l, cJSON_CreateNumber(load[i]));
		cJSON_AddItemToObject(box, "load", l);
	}
	snap->box = cJSON_PrintUnformatted(box);
	cJSON_Delete(box);
	if (snap->box == NULL) {
		snap_free(snap);
		return;
	}
	pthread_mutex_lock(&a->mu);
	webapi_snap *old = a->snap;
	a->snap = snap;
	pthread_mutex_unlock(&a->mu);
	if (old != NULL)
		snap_release(a, old);
}
