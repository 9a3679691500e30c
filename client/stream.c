/*
 * libdrape: the frame stream's SUB socket, shared by every drape_client of
 * the process that dials the same stream (same URL and TLS settings).
 *
 * Why shared: with nng 1.5.2 (Debian 12), closing a SUB socket whose pipe
 * is receiving at that moment can wedge nng's single, process-wide reaper
 * thread for good. The pipe's receive aio is caught between nni_aio_begin
 * (its task marked busy) and being scheduled, the pipe's stop waits for
 * that task, and the task never runs (seen in gdb: the "nng:reap2" thread
 * waits on the task of sub0_pipe.aio_recv with busy 1, prep set, a_stop set
 * and no cancel function; upstream fixed that state in 2024, after 1.7.3:
 * nanomsg/nng#1813 and pull #1824, following #1543). Every later nng_close
 * in the process then waits for that reaper, which is why many clients
 * closing at once all hung. PUB sends every session's frames to every
 * subscriber (nng filters topics on the SUB side), so a client's pipe is
 * busy whenever any session on the server runs, and unsubscribing does not
 * make it idle. The race is between a pipe's own receive and its teardown,
 * not between two closes: closing the sockets one at a time under a lock
 * still hung (11 of 15 runs of the 32-client load test, against 23 of 30
 * without the lock).
 *
 * So a process makes one SUB connection per stream and tears it down only
 * after the last client using it has left, and then only once the stream
 * has been quiet for QUIET_MS: the receiver thread subscribes to every
 * topic to see all traffic, and closes the socket itself at the first quiet
 * moment, however long that takes: a stream that never pauses keeps one
 * idle connection open, which costs bandwidth, never a hang. A client that
 * connects meanwhile takes the socket back into use. drape_close does not
 * wait for any of it; a process that exits first never closes the socket
 * at all. Closing the stream socket while another process's sessions
 * streamed hung 1 of 60 short-lived processes without this wait, and 1 of
 * 9 long-lived ones (30 clients each) when the wait gave up after 30 s.
 * A receiver thread takes every message off the socket and hands it, by its
 * topic, to the inbox of each member (client) subscribed to that session;
 * drape_next_frame reads its client's inbox. Each inbox is bounded and drops
 * its oldest message when full, as a SUB socket's queue does: the stream
 * stays lossy, and frames.c fills gaps with frames.get.
 *
 * Locks: streams_lock guards the list of streams and their member counts;
 * each stream's lock guards its members, their subscriptions and inboxes.
 * streams_lock is taken before a stream's lock, never after.
 */
#include "client/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/protocol/pubsub0/sub.h>

/* Messages queued per member; beyond this the oldest is dropped. This is
 * what each client's own SUB socket queued before the socket was shared. */
#define INBOX_CAP 256u
/* nng's queue on the shared socket, ahead of the receiver thread (nng's
 * maximum is 8192). The receiver only routes, so this rarely fills. */
#define SHARED_RECVBUF 1024
/* The receiver's longest wait in nng_recvmsg, so it notices that the last
 * member left; also the silence that counts as a quiet stream. Frames of a
 * 24 fps run come 42 ms apart, so one run's gaps are long enough. */
#define QUIET_MS 50

struct client_stream {
	client_stream *next; /* in the process-wide list */
	char *key;           /* URL and TLS identity it was dialed with */
	nng_socket sock;
	nng_tls_config *tls; /* a hold on the dialer's TLS configuration, or NULL */
	pthread_mutex_t lock;
	client_stream_member *members;
	uint32_t member_count;
	/* No member is left: the receiver closes the socket when the stream
	 * is quiet and frees s, unless a client joins first. */
	bool draining;
	size_t max_message; /* the largest any member accepts */
};

struct client_stream_member {
	client_stream_member *next; /* in its stream's member list */
	client_stream *stream;
	pthread_cond_t ready; /* signalled when the inbox gets a message */
	nng_msg *inbox[INBOX_CAP];
	uint32_t inbox_head, inbox_len;
	uint32_t *sessions; /* sessions subscribed to */
	uint32_t session_count, session_cap;
};

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static client_stream *streams;

/* ---- Routing ------------------------------------------------------------------- */

static bool member_wants(const client_stream_member *m, uint32_t session)
{
	for (uint32_t i = 0; i < m->session_count; i++)
		if (m->sessions[i] == session)
			return true;
	return false;
}

/* The session a stream message is about, from its topic ("s" and 8 hex
 * digits); false for a message too short or not in that form. */
static bool topic_session(const nng_msg *msg, uint32_t *session)
{
	if (nng_msg_len(msg) < PROTO_TOPIC_LEN)
		return false;
	const char *t = nng_msg_body((nng_msg *)msg);
	if (t[0] != 's')
		return false;
	uint32_t v = 0;
	for (int i = 1; i < PROTO_TOPIC_LEN; i++) {
		char ch = t[i];
		int d = ch >= '0' && ch <= '9'   ? ch - '0'
			: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
						 : -1;
		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*session = v;
	return true;
}

/* Queues msg (ownership passes) in m's inbox, dropping the oldest message
 * when it is full. Called with the stream's lock held. */
static void inbox_push(client_stream_member *m, nng_msg *msg)
{
	if (m->inbox_len == INBOX_CAP) {
		nng_msg_free(m->inbox[m->inbox_head]);
		m->inbox_head = (m->inbox_head + 1) % INBOX_CAP;
		m->inbox_len--;
	}
	m->inbox[(m->inbox_head + m->inbox_len) % INBOX_CAP] = msg;
	m->inbox_len++;
	pthread_cond_signal(&m->ready);
}

/* Hands msg to every member subscribed to its session: the last one gets
 * msg itself, the others a copy. */
static void route(client_stream *s, nng_msg *msg)
{
	uint32_t session;
	if (!topic_session(msg, &session)) {
		nng_msg_free(msg);
		return;
	}
	pthread_mutex_lock(&s->lock);
	client_stream_member *last = NULL;
	for (client_stream_member *m = s->members; m != NULL; m = m->next) {
		if (!member_wants(m, session))
			continue;
		if (last != NULL) {
			nng_msg *copy;
			/* Out of memory only costs this member the frame, which
			 * it then fetches like any other gap. */
			if (nng_msg_dup(&copy, msg) == 0)
				inbox_push(last, copy);
		}
		last = m;
	}
	if (last != NULL)
		inbox_push(last, msg);
	else
		nng_msg_free(msg);
	pthread_mutex_unlock(&s->lock);
}

static void stream_free(client_stream *s);

/* Takes s out of the list if it still has no member (true); a client
 * joining from now on dials a new socket. */
static bool stream_retire(client_stream *s)
{
	pthread_mutex_lock(&streams_lock);
	pthread_mutex_lock(&s->lock);
	bool retire = s->draining;
	if (retire) {
		client_stream **q = &streams;
		while (*q != s)
			q = &(*q)->next;
		*q = s->next;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&streams_lock);
	return retire;
}

/* The receiver thread: routes messages while the stream has members; once
 * the last has left, drops them and closes the socket at the first
 * QUIET_MS without one (see the top of the file), then frees the stream. */
static void *receiver_main(void *arg)
{
	client_stream *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		bool draining = s->draining;
		pthread_mutex_unlock(&s->lock);
		nng_msg *msg;
		int rv = nng_recvmsg(s->sock, &msg, 0);
		if (rv == 0) {
			if (draining)
				nng_msg_free(msg);
			else
				route(s, msg);
		}
		/* A wait that began after draining started and saw nothing
		 * means the pipe is idle: its teardown cannot meet a receive. */
		if (draining && rv == NNG_ETIMEDOUT && stream_retire(s))
			break;
		if (rv == NNG_ECLOSED) {
			/* Closed under us (nng_closeall by the host program):
			 * members fall back to polling; wait for them to leave
			 * without spinning. */
			struct timespec ts = {0, QUIET_MS * 1000000L};
			nanosleep(&ts, NULL);
			if (draining && stream_retire(s))
				break;
		}
	}
	stream_free(s);
	return NULL;
}

/* ---- Opening and closing ----------------------------------------------------------- */

static char *stream_key(const char *url, const char *tls_id)
{
	size_t n = strlen(url) + 1 + (tls_id != NULL ? strlen(tls_id) : 0) + 1;
	char *k = malloc(n);
	if (k != NULL) {
		strcpy(k, url);
		strcat(k, "\n");
		if (tls_id != NULL)
			strcat(k, tls_id);
	}
	return k;
}

/* Opens the socket and starts its receiver. The dial is non-blocking, so
 * a stream URL that cannot be reached yet only means frames come by
 * polling until the dialer gets through. NULL on any failure. */
static client_stream *stream_create(const char *url, nng_tls_config *tls, const char *key)
{
	client_stream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->key = malloc(strlen(key) + 1);
	if (s->key == NULL || nng_sub0_open(&s->sock) != 0) {
		free(s->key);
		free(s);
		return NULL;
	}
	strcpy(s->key, key);
	/* A deeper queue than nng's default lets the stream absorb a burst
	 * while the receiver thread catches up. */
	nng_socket_set_int(s->sock, NNG_OPT_RECVBUF, SHARED_RECVBUF);
	nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO, QUIET_MS);
	nng_socket_set_ms(s->sock, NNG_OPT_RECONNMINT, 50);
	nng_socket_set_ms(s->sock, NNG_OPT_RECONNMAXT, 1000);
	/* A TLS stream is verified like the control connection (the server
	 * uses the same certificate for both); without a TLS configuration
	 * nng's default would trust nothing, so frames come by polling. */
	nng_dialer d;
	int rv = nng_dialer_create(&d, s->sock, url);
	if (rv == 0 && client_url_is_tls(url))
		rv = tls != NULL ? nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, tls) : NNG_EINVAL;
	if (rv == 0)
		rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK);
	if (rv == 0 && pthread_mutex_init(&s->lock, NULL) != 0)
		rv = NNG_ENOMEM;
	if (rv == 0 && tls != NULL && client_url_is_tls(url)) {
		nng_tls_config_hold(tls);
		s->tls = tls;
	}
	/* The receiver frees the stream when it is done, so nobody joins it. */
	pthread_t receiver;
	pthread_attr_t attr;
	if (rv == 0 && pthread_attr_init(&attr) != 0) {
		pthread_mutex_destroy(&s->lock);
		rv = NNG_ENOMEM;
	} else if (rv == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&receiver, &attr, receiver_main, s) != 0) {
			pthread_mutex_destroy(&s->lock);
			rv = NNG_ENOMEM;
		}
		pthread_attr_destroy(&attr);
	}
	if (rv != 0) {
		/* The dialer has only just started, so there is next to no
		 * traffic for this close to meet. */
		nng_close(s->sock);
		if (s->tls != NULL)
			nng_tls_config_free(s->tls);
		free(s->key);
		free(s);
		return NULL;
	}
	return s;
}

/* Closes the socket and frees s; the receiver's last act. */
static void stream_free(client_stream *s)
{
	nng_close(s->sock);
	pthread_mutex_destroy(&s->lock);
	if (s->tls != NULL)
		nng_tls_config_free(s->tls);
	free(s->key);
	free(s);
}

static client_stream_member *member_new(void)
{
	client_stream_member *m = calloc(1, sizeof *m);
	if (m == NULL)
		return NULL;
	/* Waits are timed against CLOCK_MONOTONIC, like client_now_ms, so a
	 * change of the wall clock neither shortens nor stretches them. */
	pthread_condattr_t ca;
	bool ok = pthread_condattr_init(&ca) == 0;
	if (ok) {
		ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
		     pthread_cond_init(&m->ready, &ca) == 0;
		pthread_condattr_destroy(&ca);
	}
	if (!ok) {
		free(m);
		return NULL;
	}
	return m;
}

client_stream_member *client_stream_join(const char *url, nng_tls_config *tls, const char *tls_id,
					 size_t max_message)
{
	char *key = stream_key(url, tls_id);
	client_stream_member *m = key != NULL ? member_new() : NULL;
	if (m == NULL) {
		free(key);
		return NULL;
	}
	pthread_mutex_lock(&streams_lock);
	client_stream *s = streams;
	while (s != NULL && strcmp(s->key, key) != 0)
		s = s->next;
	if (s == NULL) {
		s = stream_create(url, tls, key);
		if (s != NULL) {
			s->next = streams;
			streams = s;
		}
	}
	free(key);
	if (s == NULL) {
		pthread_mutex_unlock(&streams_lock);
		pthread_cond_destroy(&m->ready);
		free(m);
		return NULL;
	}
	pthread_mutex_lock(&s->lock);
	if (s->draining) {
		/* The last client left moments ago and the receiver has not
		 * closed the socket yet: take it back into use. */
		nng_socket_set(s->sock, NNG_OPT_SUB_UNSUBSCRIBE, "", 0);
		s->draining = false;
	}
	m->stream = s;
	m->next = s->members;
	s->members = m;
	s->member_count++;
	if (max_message > s->max_message) {
		s->max_message = max_message;
		nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, max_message);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&streams_lock);
	return m;
}

/* Frees the queued messages of session (every one if all is true).
 * Called with the stream's lock held. */
static void inbox_drop(client_stream_member *m, bool all, uint32_t session)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < m->inbox_len; i++) {
		nng_msg *msg = m->inbox[(m->inbox_head + i) % INBOX_CAP];
		uint32_t id;
		if (all || (topic_session(msg, &id) && id == session))
			nng_msg_free(msg);
		else
			m->inbox[(m->inbox_head + kept++) % INBOX_CAP] = msg;
	}
	m->inbox_len = kept;
}

/* Whether another member of s is subscribed to session. */
static bool others_want(const client_stream *s, const client_stream_member *m, uint32_t session)
{
	for (const client_stream_member *o = s->members; o != NULL; o = o->next)
		if (o != m && member_wants(o, session))
			return true;
	return false;
}

/* The socket's subscription to a session is shared by its members: it is
 * added with the first member that wants the session and dropped with the
 * last. Called with the stream's lock held. */
static void socket_subscription(client_stream *s, uint32_t session, bool on)
{
	char topic[PROTO_TOPIC_LEN + 1];
	proto_stream_topic(session, topic);
	nng_socket_set(s->sock, on ? NNG_OPT_SUB_SUBSCRIBE : NNG_OPT_SUB_UNSUBSCRIBE, topic,
		       PROTO_TOPIC_LEN);
}

bool client_stream_subscribe(client_stream_member *m, uint32_t session, bool on)
{
	client_stream *s = m->stream;
	bool ok = true;
	pthread_mutex_lock(&s->lock);
	bool had = member_wants(m, session);
	if (on && !had) {
		if (m->session_count == m->session_cap) {
			uint32_t cap = m->session_cap ? 2 * m->session_cap : 4;
			uint32_t *n = realloc(m->sessions, cap * sizeof *n);
			if (n == NULL) {
				ok = false;
				goto out;
			}
			m->sessions = n;
			m->session_cap = cap;
		}
		if (!others_want(s, m, session))
			socket_subscription(s, session, true);
		m->sessions[m->session_count++] = session;
	} else if (!on && had) {
		for (uint32_t i = 0; i < m->session_count; i++)
			if (m->sessions[i] == session) {
				m->sessions[i] = m->sessions[--m->session_count];
				break;
			}
		if (!others_want(s, m, session))
			socket_subscription(s, session, false);
		/* Messages already queued belong to a subscription that is
		 * over; a session created later under the same id must not
		 * see them. */
		inbox_drop(m, false, session);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return ok;
}

nng_msg *client_stream_recv(client_stream_member *m, int32_t wait_ms)
{
	client_stream *s = m->stream;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (m->inbox_len == 0 && wait_ms > 0 &&
	       pthread_cond_timedwait(&m->ready, &s->lock, &until) == 0)
		;
	nng_msg *msg = NULL;
	if (m->inbox_len > 0) {
		msg = m->inbox[m->inbox_head];
		m->inbox_head = (m->inbox_head + 1) % INBOX_CAP;
		m->inbox_len--;
	}
	pthread_mutex_unlock(&s->lock);
	return msg;
}

void client_stream_leave(client_stream_member *m)
{
	if (m == NULL)
		return;
	client_stream *s = m->stream;
	pthread_mutex_lock(&streams_lock);
	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < m->session_count; i++)
		if (!others_want(s, m, m->sessions[i]))
			socket_subscription(s, m->sessions[i], false);
	inbox_drop(m, true, 0);
	client_stream_member **p = &s->members;
	while (*p != m)
		p = &(*p)->next;
	*p = m->next;
	if (--s->member_count == 0) {
		/* Subscribing to every topic lets the receiver see all
		 * traffic, and so know when the pipe is quiet. */
		nng_socket_set(s->sock, NNG_OPT_SUB_SUBSCRIBE, "", 0);
		s->draining = true;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&streams_lock);
	pthread_cond_destroy(&m->ready);
	free(m->sessions);
	free(m);
}
