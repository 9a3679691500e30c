/*
 * Held frames.get requests (see waiters.h).
 *
 * The held requests are one list in arrival order; there are at most
 * SRV_WAITERS_MAX, so a wake or a timer tick walks all of them. One timer
 * is armed for the earliest deadline.
 */
#include "server/waiters.h"

#include <stdlib.h>
#include <string.h>

#include "server/log.h"

typedef struct srv_waiter {
	struct srv_waiter *next;
	uint32_t session;
	proto_header head;
	proto_frames_get_req get;
	void *reply_to;
	uint64_t deadline_ms;
} srv_waiter;

bool srv_session_live(const srv_session *s)
{
	return s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED || s->writing ||
	       s->end_pending;
}

/* Sends the reply to w: the frames from w->get.first that s holds now
 * (none, when it has not got there), or an error. s is NULL for a session
 * that is gone. */
static void srv_waiter_answer(srv_server *srv, srv_session *s, srv_waiter *w)
{
	proto_request req;
	proto_reply rep;
	drape_error err;
	drape_err rc;
	proto_frame *frames = NULL;
	float *buf = NULL;
	memset(&req, 0, sizeof req);
	drape_error_clear(&err);
	req.op = PROTO_OP_FRAMES_GET;
	req.has_session = true;
	req.session = w->session;
	req.u.frames_get = w->get;
	proto_reply_init(&rep, PROTO_OP_FRAMES_GET, w->head.id);
	if (s == NULL || s->deleted) {
		rc = drape_error_setf(&err, DRAPE_ENOTFOUND, "session %u: deleted while frames.get waited",
				      (unsigned)w->session);
	} else {
		rc = srv_op_frames_get(srv, s, &req, &rep, &frames, &buf, &err);
		rep.u.frames_get.live = srv_session_live(s);
	}
	srv_reply_key k = { false, 0, 0, 0 };
	proto_buf out = { NULL, 0 };
	srv_reply_finish(srv, &w->head, &rep, rc, &err, &k, &out);
	free(frames);
	free(buf);
	srv_control_reply(w->reply_to, &out);
}

static void srv_waiters_tick(uv_timer_t *t);

/* Re-arms the timer for the earliest deadline, or stops it. */
static void srv_waiters_arm(srv_server *srv)
{
	if (!srv->wait_timer_ready)
		return;
	uint64_t first = UINT64_MAX;
	for (const srv_waiter *w = srv->waiters; w != NULL; w = w->next)
		if (w->deadline_ms < first)
			first = w->deadline_ms;
	if (first == UINT64_MAX) {
		uv_timer_stop(&srv->wait_timer);
		return;
	}
	const uint64_t now = srv_now_ms(srv);
	uv_timer_start(&srv->wait_timer, srv_waiters_tick, first > now ? first - now : 0, 0);
}

/* Answers and frees every waiter for which pick(w, arg) is true, as a
 * session that is gone when `gone`. A reply is sent only after the waiter
 * left the list, so nothing the reply path does can meet a half-updated
 * list. */
static void srv_waiters_answer_if(srv_server *srv, bool (*pick)(const srv_waiter *, const void *), const void *arg,
				  bool gone)
{
	srv_waiter **pp = &srv->waiters;
	srv_waiter *done = NULL, **tail = &done;
	while (*pp != NULL) {
		srv_waiter *w = *pp;
		if (pick(w, arg)) {
			*pp = w->next;
			w->next = NULL;
			*tail = w;
			tail = &w->next;
			srv->waiter_count--;
		} else {
			pp = &w->next;
		}
	}
	while (done != NULL) {
		srv_waiter *w = done;
		done = w->next;
		srv_waiter_answer(srv, gone ? NULL : srv_sessions_find(&srv->sessions, w->session), w);
		free(w);
	}
}

static bool srv_waiter_due(const srv_waiter *w, const void *arg)
{
	return w->deadline_ms <= *(const uint64_t *)arg;
}

static void srv_waiters_tick(uv_timer_t *t)
{
	srv_server *srv = t->data;
	const uint64_t now = srv_now_ms(srv);
	srv_waiters_answer_if(srv, srv_waiter_due, &now, false);
	srv_waiters_arm(srv);
}

int srv_waiters_init(srv_server *srv)
{
	int rv = uv_timer_init(&srv->loop, &srv->wait_timer);
	if (rv == 0) {
		srv->wait_timer.data = srv;
		srv->wait_timer_ready = true;
	}
	return rv;
}

bool srv_waiters_park(srv_server *srv, const srv_session *s, const proto_header *head,
		      const proto_frames_get_req *g, void *reply_to)
{
	if (srv->waiter_count >= SRV_WAITERS_MAX || !srv->wait_timer_ready)
		return false;
	srv_waiter *w = malloc(sizeof *w);
	if (w == NULL)
		return false;
	w->session = s->id;
	w->head = *head;
	w->get = *g;
	w->reply_to = reply_to;
	/* The loop's cached time may be older than the request: refresh it,
	 * so a wait never ends before its wait_ms. */
	uv_update_time(&srv->loop);
	w->deadline_ms = srv_now_ms(srv) + g->wait_ms;
	/* Appended, so that waiters are answered in arrival order. */
	srv_waiter **pp = &srv->waiters;
	while (*pp != NULL)
		pp = &(*pp)->next;
	w->next = NULL;
	*pp = w;
	srv->waiter_count++;
	srv_waiters_arm(srv);
	return true;
}

typedef struct srv_wake_arg {
	const srv_session *s;
} srv_wake_arg;

static bool srv_waiter_ready(const srv_waiter *w, const void *arg)
{
	const srv_session *s = ((const srv_wake_arg *)arg)->s;
	if (w->session != s->id)
		return false;
	return s->deleted || w->get.first <= s->frames_done || !srv_session_live(s);
}

void srv_waiters_wake(srv_server *srv, srv_session *s)
{
	if (srv->waiters == NULL)
		return;
	srv_wake_arg a = { s };
	const uint32_t before = srv->waiter_count;
	srv_waiters_answer_if(srv, srv_waiter_ready, &a, false);
	if (srv->waiter_count != before)
		srv_waiters_arm(srv);
}

static bool srv_waiter_of(const srv_waiter *w, const void *arg)
{
	return w->session == *(const uint32_t *)arg;
}

void srv_waiters_drop_session(srv_server *srv, uint32_t id)
{
	if (srv->waiters == NULL)
		return;
	srv_waiters_answer_if(srv, srv_waiter_of, &id, true);
	srv_waiters_arm(srv);
}

static bool srv_waiter_any(const srv_waiter *w, const void *arg)
{
	(void)w;
	(void)arg;
	return true;
}

void srv_waiters_close(srv_server *srv)
{
	srv_waiters_answer_if(srv, srv_waiter_any, NULL, false);
	if (srv->wait_timer_ready) {
		srv->wait_timer_ready = false;
		uv_timer_stop(&srv->wait_timer);
		uv_close((uv_handle_t *)&srv->wait_timer, NULL);
	}
}

void srv_waiters_free(srv_server *srv)
{
	while (srv->waiters != NULL) {
		srv_waiter *w = srv->waiters;
		srv->waiters = w->next;
		free(w);
	}
	srv->waiter_count = 0;
}
