/*
 * libdrape: receiving frames. Every frame comes with frames.get, which
 * carries the auth token and the session's owner token, so the daemon hands
 * a session's frames to nobody else (PROTOCOL.md section 9).
 * drape_next_frame sees every frame of a session in order exactly once:
 *
 *  - while a run goes on, it sends frames.get with wait_ms for the next
 *    frame; the daemon holds the request until that frame is stored (or the
 *    run ends), so a frame arrives one round trip after it is solved and a
 *    reader that falls behind gets the frames it missed in one reply;
 *  - a status request says whether a run is going at all, or how it ended.
 *
 * A per-session "track" keeps the cursor (the next index to return) and a
 * short queue of frames with consecutive indices from the cursor, filled by
 * frames.get replies. With use_stream false, or against a daemon that does
 * not hold requests (a reply without `live`), it polls instead: status and
 * frames.get every poll_interval_ms.
 */
#include "client/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Frames buffered per track, and their total size; beyond either, stream
 * frames are dropped (and fetched again later), so a slow reader holds
 * bounded memory. */
#define TRACK_QUEUE_CAP 64u
#define TRACK_QUEUE_BYTES (64u * 1024u * 1024u)

/* Longest wait, against a daemon that does not hold frames.get, for the
 * frame in flight at a cancel after a status says "canceled" (see
 * drape_next_frame). */
#define END_WAIT_MS 2000
/* Longest wait_ms of one held frames.get: a DRAPE_WAIT_FOREVER reader asks
 * again this often, well under nng's REQ resend time (60 s) and the
 * protocol's cap (PROTO_MAX_FRAMES_WAIT_MS). */
#define HOLD_MAX_MS 10000

void drape_frame_free(drape_frame *f)
{
	if (f == NULL)
		return;
	free(f->positions);
	free(f->triangles);
	memset(f, 0, sizeof *f);
}

void drape_frames_free(drape_frame *frames, uint32_t n)
{
	if (frames == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		free(frames[i].positions);
		free(frames[i].triangles);
	}
	free(frames);
}

/* Copies a decoded frame into caller-owned memory. */
static drape_err frame_copy(const proto_frame *src, drape_frame *dst, drape_error *err)
{
	size_t bytes = (size_t)src->vertex_count * 3 * sizeof(float);
	float *p = malloc(bytes ? bytes : 1);
	if (p == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "frame %u: out of memory",
					(unsigned)src->index);
	if (bytes)
		memcpy(p, src->positions, bytes);
	uint32_t *t = NULL;
	if (src->triangles != NULL) {
		t = malloc((size_t)src->triangle_count * 3 * sizeof *t);
		if (t == NULL) {
			free(p);
			return drape_error_setf(err, DRAPE_ENOMEM, "frame %u: out of memory",
						(unsigned)src->index);
		}
		memcpy(t, src->triangles, (size_t)src->triangle_count * 3 * sizeof *t);
	}
	dst->index = src->index;
	dst->vertex_count = src->vertex_count;
	dst->positions = p;
	dst->stats = src->stats;
	dst->topology = src->topology;
	dst->triangles = t;
	dst->triangle_count = t ? src->triangle_count : 0;
	return DRAPE_OK;
}

/* ---- Tracks ------------------------------------------------------------------ */

static client_track *track_find(drape_client *c, uint32_t id)
{
	for (uint32_t i = 0; i < c->track_count; i++)
		if (c->tracks[i].id == id)
			return &c->tracks[i];
	return NULL;
}

static void track_clear_queue(client_track *t)
{
	for (uint32_t i = 0; i < t->queue_len; i++)
		drape_frame_free(&t->queue[(t->queue_head + i) % t->queue_cap]);
	t->queue_head = 0;
	t->queue_len = 0;
}

void client_track_forget(drape_client *c, uint32_t id)
{
	client_track *t = track_find(c, id);
	if (t == NULL)
		return;
	track_clear_queue(t);
	free(t->queue);
	*t = c->tracks[--c->track_count];
}

void client_tracks_free(drape_client *c)
{
	for (uint32_t i = 0; i < c->track_count; i++) {
		track_clear_queue(&c->tracks[i]);
		free(c->tracks[i].queue);
	}
	free(c->tracks);
	c->tracks = NULL;
	c->track_count = c->track_cap = 0;
}

/* The track of session s, made on first use; its token is the one of the
 * latest handle the caller passed. */
static drape_err track_get(drape_client *c, drape_session s, client_track **out, drape_error *err)
{
	const uint32_t id = s.id;
	client_track *t = track_find(c, id);
	if (t == NULL) {
		if (c->track_count == c->track_cap) {
			uint32_t cap = c->track_cap ? 2 * c->track_cap : 4;
			client_track *n = realloc(c->tracks, cap * sizeof *n);
			if (n == NULL)
				return drape_error_setf(err, DRAPE_ENOMEM, "frames: out of memory");
			c->tracks = n;
			c->track_cap = cap;
		}
		drape_frame *q = calloc(TRACK_QUEUE_CAP, sizeof *q);
		if (q == NULL)
			return drape_error_setf(err, DRAPE_ENOMEM, "frames: out of memory");
		t = &c->tracks[c->track_count++];
		memset(t, 0, sizeof *t);
		t->id = id;
		t->cursor = 1;
		t->need_status = true;
		t->polling = !c->opts.use_stream;
		t->queue = q;
		t->queue_cap = TRACK_QUEUE_CAP;
	}
	memcpy(t->token, s.token, sizeof t->token);
	*out = t;
	return DRAPE_OK;
}

static size_t track_bytes(const client_track *t)
{
	return (size_t)t->queue_len * t->vertex_bytes;
}

/* Appends a frame (ownership passes to the track) if it is the next index
 * and there is room; otherwise frees it. */
static void track_push(client_track *t, drape_frame *f)
{
	size_t fb = (size_t)f->vertex_count * 3 * sizeof(float);
	if (f->index == t->cursor + t->queue_len && t->queue_len < t->queue_cap &&
	    (t->queue_len == 0 || track_bytes(t) + fb <= TRACK_QUEUE_BYTES)) {
		t->queue[(t->queue_head + t->queue_len) % t->queue_cap] = *f;
		t->queue_len++;
		t->vertex_bytes = fb;
		memset(f, 0, sizeof *f);
		return;
	}
	drape_frame_free(f);
}

drape_err drape_frames_seek(drape_client *c, drape_session s, uint32_t next, drape_error *err)
{
	if (next == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "frames.seek: frame indices start at 1");
	client_track *t;
	drape_err rc = track_get(c, s, &t, err);
	if (rc != DRAPE_OK)
		return rc;
	track_clear_queue(t);
	t->cursor = next;
	return DRAPE_OK;
}

/* ---- frames.get ----------------------------------------------------------------- */

/* Sends one frames.get for session id with its owner token (all zero:
 * none sent), which the daemon may hold up to wait_ms, and hands the
 * decoded reply to the caller (who frees it). */
static drape_err frames_get_raw(drape_client *c, uint32_t id, const uint8_t token[PROTO_TOKEN_SIZE],
				uint32_t first, uint32_t count, uint32_t wait_ms, proto_reply *rep,
				drape_error *err)
{
	if (first == 0 || count == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"frames.get: first (%u) and count (%u) must be >= 1",
					(unsigned)first, (unsigned)count);
	proto_request req;
	proto_request_init(&req, PROTO_OP_FRAMES_GET);
	req.has_session = true;
	req.session = id;
	static const uint8_t zero[PROTO_TOKEN_SIZE];
	if (memcmp(token, zero, sizeof zero) != 0) {
		req.has_token = true;
		memcpy(req.token, token, PROTO_TOKEN_SIZE);
	}
	req.u.frames_get.first = first;
	req.u.frames_get.count = count;
	req.u.frames_get.wait_ms = wait_ms;
	drape_err rc = client_call(c, &req, rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_frames_get_rep *g = &rep->u.frames_get;
	if (g->count > 0 && g->frames[0].index != first) {
		uint32_t got = g->frames[0].index;
		proto_reply_free(rep);
		return drape_error_setf(err, DRAPE_EPROTO,
					"frames.get: asked from frame %u, the reply starts at %u",
					(unsigned)first, (unsigned)got);
	}
	if (g->count > count) {
		proto_reply_free(rep);
		return drape_error_setf(err, DRAPE_EPROTO, "frames.get: asked for %u frames, got %u",
					(unsigned)count, (unsigned)g->count);
	}
	return DRAPE_OK;
}

drape_err drape_frames_get(drape_client *c, drape_session s, uint32_t first, uint32_t count,
			   drape_frame **frames, uint32_t *n, uint32_t *frames_done, drape_error *err)
{
	proto_reply rep;
	drape_err rc = frames_get_raw(c, s.id, s.token, first, count, 0, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_frames_get_rep *g = &rep.u.frames_get;
	drape_frame *f = NULL;
	if (g->count > 0) {
		f = calloc(g->count, sizeof *f);
		if (f == NULL) {
			proto_reply_free(&rep);
			return drape_error_setf(err, DRAPE_ENOMEM, "frames.get: out of memory");
		}
		for (uint32_t i = 0; i < g->count; i++) {
			rc = frame_copy(&g->frames[i], &f[i], err);
			if (rc != DRAPE_OK) {
				drape_frames_free(f, i);
				proto_reply_free(&rep);
				return rc;
			}
		}
	}
	*frames = f;
	*n = g->count;
	if (frames_done != NULL)
		*frames_done = g->frames_done;
	proto_reply_free(&rep);
	return DRAPE_OK;
}

/* Fetches frames from the end of the track's queue into it, up to
 * known_done or, when the daemon holds the request (wait_ms > 0), as many
 * as it has once the next one is solved; *got is how many arrived, *live
 * the reply's `live` (true when the reply has none: an older daemon). */
static drape_err track_fetch(drape_client *c, client_track *t, uint32_t wait_ms, uint32_t *got, bool *live,
			     bool *has_live, drape_error *err)
{
	uint32_t first = t->cursor + t->queue_len;
	uint32_t want = t->known_done >= first ? t->known_done - first + 1 : TRACK_QUEUE_CAP;
	uint32_t room = t->queue_cap - t->queue_len;
	if (want > room)
		want = room;
	if (t->vertex_bytes > 0 && want > TRACK_QUEUE_BYTES / t->vertex_bytes)
		want = (uint32_t)(TRACK_QUEUE_BYTES / t->vertex_bytes);
	uint64_t lim = c->info.limits.max_frames_per_get;
	if (lim > 0 && want > lim)
		want = (uint32_t)lim;
	if (want == 0)
		want = 1;
	proto_reply rep;
	drape_err rc = frames_get_raw(c, t->id, t->token, first, want, wait_ms, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	const proto_frames_get_rep *g = &rep.u.frames_get;
	if (g->frames_done > t->known_done)
		t->known_done = g->frames_done;
	*live = g->has_live ? g->live : true;
	*has_live = g->has_live;
	*got = 0;
	for (uint32_t i = 0; i < g->count; i++) {
		drape_frame f;
		rc = frame_copy(&g->frames[i], &f, err);
		if (rc != DRAPE_OK)
			break;
		uint32_t before = t->queue_len;
		track_push(t, &f);
		if (t->queue_len == before)
			break;
		(*got)++;
	}
	proto_reply_free(&rep);
	return rc;
}

/* ---- drape_next_frame --------------------------------------------------------------- */

static void sleep_ms(int64_t ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static bool state_active(drape_state s)
{
	return s == DRAPE_STATE_QUEUED || s == DRAPE_STATE_RUNNING;
}

/* The code drape_next_frame returns when a run is over and every frame of it
 * was delivered. */
static drape_err end_code(uint32_t id, const drape_status *st, drape_error *err)
{
	switch (st->state) {
	case DRAPE_STATE_CANCELED:
		return drape_error_setf(err, DRAPE_ECANCELED, "session %u: run canceled after frame %u",
					(unsigned)id, (unsigned)st->frames_done);
	case DRAPE_STATE_FAILED: {
		drape_err code = st->has_error && st->error.code != DRAPE_OK ? st->error.code
									      : DRAPE_EINTERNAL;
		return drape_error_setf(err, code, "session %u: run failed at frame %u: %s",
					(unsigned)id, (unsigned)st->error_frame,
					st->has_error ? st->error.message : "no reason given");
	}
	default:
		return drape_error_setf(err, DRAPE_EDONE, "session %u: run finished at frame %u",
					(unsigned)id, (unsigned)st->frames_done);
	}
}

/* Failures a daemon restart causes: no reply in time (the REQ socket
 * resends to the restarted daemon once it has redialled, so this means the
 * daemon is down longer than a request's timeout), or no server to reach. */
static bool client_unreachable(drape_err rc)
{
	return rc == DRAPE_ETIMEDOUT || rc == DRAPE_EUNAVAILABLE;
}

/*
 * After such a failure while following a session: waits with back-off
 * (50 ms doubling to 1 s), says hello again, and returns true to try once
 * more; false when the server has been unreachable for reconnect_timeout_ms
 * (err then says so) or the caller's deadline is reached.
 */
static bool follow_reconnect(drape_client *c, int64_t deadline, drape_error *err)
{
	const int32_t limit = c->opts.reconnect_timeout_ms;
	if (limit < 0)
		return false;
	int64_t now = client_now_ms();
	if (c->lost_since_ms == 0) {
		c->lost_since_ms = now;
		c->lost_tries = 0;
	}
	const int64_t give_up = c->lost_since_ms + limit;
	if (now >= give_up) {
		if (err != NULL) {
			char why[sizeof err->message];
			snprintf(why, sizeof why, "%s", err->message);
			snprintf(err->message, sizeof err->message,
				 "%.150s (the server has not answered for %lld ms, reconnect_timeout_ms)", why,
				 (long long)(now - c->lost_since_ms));
		}
		return false;
	}
	if (now >= deadline)
		return false;
	int64_t pause = (int64_t)50 << (c->lost_tries < 5 ? c->lost_tries : 5);
	if (pause > 1000)
		pause = 1000;
	if (pause > give_up - now)
		pause = give_up - now;
	if (pause > deadline - now)
		pause = deadline - now;
	sleep_ms(pause);
	c->lost_tries++;
	/* A restarted daemon may have other limits or build: ask again. A
	 * failure here is found again by the next request. */
	drape_error e;
	client_hello(c, &e);
	return true;
}

drape_err drape_next_frame(drape_client *c, drape_session s, drape_frame *out, int32_t timeout_ms,
			   drape_error *err)
{
	client_track *t;
	drape_err rc = track_get(c, s, &t, err);
	if (rc != DRAPE_OK)
		return rc;
	const int64_t start = client_now_ms();
	const int64_t deadline = timeout_ms < 0 ? INT64_MAX : start + timeout_ms;
	int64_t poll_at = start + c->opts.poll_interval_ms;
	/* Whether the run has ended is only believed from a status taken during
	 * this call: a status from an earlier call may predate a new run. */
	bool have_status = false;
	int64_t end_wait_until = 0;
	drape_status st;
	/* After an end was reported, a new run may have started since: ask at
	 * once. While a run goes on, held frames.get requests are all a
	 * reader sends: one per reply, which brings every frame solved since
	 * the last. */
	if (t->ended) {
		t->need_status = true;
		t->ended = false;
	}

	for (;;) {
		if (t->queue_len > 0) {
			*out = t->queue[t->queue_head];
			memset(&t->queue[t->queue_head], 0, sizeof t->queue[0]);
			t->queue_head = (t->queue_head + 1) % t->queue_cap;
			t->queue_len--;
			t->cursor++;
			return DRAPE_OK;
		}
		if (t->need_status) {
			rc = drape_session_status(c, s, &st, err);
			if (rc != DRAPE_OK && client_unreachable(rc) && follow_reconnect(c, deadline, err))
				continue;
			if (rc != DRAPE_OK)
				return rc;
			t->need_status = false;
			have_status = true;
			poll_at = client_now_ms() + c->opts.poll_interval_ms;
			if (st.frames_done > t->known_done)
				t->known_done = st.frames_done;
			if (state_active(st.state))
				t->saw_active = true;
			if (st.frames_done >= t->cursor && st.frames_first > t->cursor) {
				uint32_t from = t->cursor;
				t->cursor = st.frames_first;
				return drape_error_setf(
					err, DRAPE_ERANGE,
					"session %u: frames %u..%u are no longer retained by the server; "
					"continuing from frame %u",
					(unsigned)s.id, (unsigned)from, (unsigned)(t->cursor - 1),
					(unsigned)t->cursor);
			}
		}
		if (t->known_done >= t->cursor) {
			uint32_t got = 0;
			bool live, has_live;
			rc = track_fetch(c, t, 0, &got, &live, &has_live, err);
			if (rc != DRAPE_OK && client_unreachable(rc) && follow_reconnect(c, deadline, err)) {
				t->need_status = true;
				continue;
			}
			if (rc != DRAPE_OK)
				return rc;
			if (got > 0)
				continue;
			/* The server has fewer frames than it said (retention moved
			 * on, or a new run restarted the count): ask it again after
			 * waiting, instead of spinning. */
			t->known_done = t->cursor - 1;
			t->need_status = true;
		} else if (have_status && !state_active(st.state) && st.frames_done < t->cursor &&
			   !t->need_status) {
			/* A session may report "canceled" while the frame that was in
			 * flight at the cancel is still being solved; it lands a
			 * moment later. So a cancel of a run this client saw going
			 * is final once a held frames.get said no frame is coming
			 * (live false), or, against a daemon that does not hold
			 * requests, after a bounded wait. */
			if (st.state == DRAPE_STATE_CANCELED && !t->end_seen && t->saw_active) {
				int64_t now = client_now_ms();
				if (end_wait_until == 0)
					end_wait_until = now + END_WAIT_MS;
				if (!t->polling || now < end_wait_until)
					goto wait;
			}
			t->ended = true;
			t->end_seen = false;
			t->saw_active = false;
			return end_code(s.id, &st, err);
		}

	wait:;
		int64_t now = client_now_ms();
		if (now >= deadline)
			return drape_error_setf(err, DRAPE_ETIMEDOUT,
						"session %u: no frame %u within %d ms", (unsigned)s.id,
						(unsigned)t->cursor, (int)timeout_ms);
		if (t->polling) {
			/* Polling: status (then frames.get) every poll interval. */
			if (now >= poll_at) {
				t->need_status = true;
				continue;
			}
			sleep_ms(poll_at - now < deadline - now ? poll_at - now : deadline - now);
			continue;
		}
		int64_t hold = deadline - now;
		if (hold > HOLD_MAX_MS)
			hold = HOLD_MAX_MS;
		uint32_t got = 0;
		bool live, has_live;
		rc = track_fetch(c, t, (uint32_t)hold, &got, &live, &has_live, err);
		if (rc == DRAPE_ENOTFOUND) {
			/* Retention moved past the cursor, or the session is gone:
			 * the status says which (ERANGE or ENOTFOUND). */
			t->need_status = true;
			continue;
		}
		if (rc != DRAPE_OK && client_unreachable(rc) && follow_reconnect(c, deadline, err)) {
			t->need_status = true;
			continue;
		}
		if (rc != DRAPE_OK)
			return rc;
		if (got > 0) {
			t->saw_active = true;
			continue;
		}
		if (!has_live) {
			/* A daemon that answers at once and says nothing of the
			 * run: poll it from now on. */
			t->polling = true;
			poll_at = client_now_ms() + c->opts.poll_interval_ms;
			continue;
		}
		if (!live) {
			/* No frame is coming: the run ended (how, the status says). */
			t->end_seen = true;
			t->need_status = true;
			continue;
		}
		/* The wait ran out; or, if the reply came early, the daemon holds
		 * as many requests as it may: ask again after a poll interval
		 * rather than at once. */
		int64_t after = client_now_ms();
		if (after - now + 5 < hold) {
			int64_t pause = c->opts.poll_interval_ms;
			if (pause > deadline - after)
				pause = deadline - after;
			if (pause > 0)
				sleep_ms(pause);
		}
	}
}

drape_err drape_frames_each(drape_client *c, drape_session s, drape_frame_fn fn, void *user,
			    int32_t timeout_ms, drape_error *err)
{
	for (;;) {
		drape_frame f;
		drape_err rc = drape_next_frame(c, s, &f, timeout_ms, err);
		if (rc != DRAPE_OK)
			return rc;
		int stop = fn(&f, user);
		drape_frame_free(&f);
		if (stop)
			return DRAPE_OK;
	}
}
