/*
 * libdrape: a pool of draped boxes behind one name. drape_connect given a
 * comma-separated list of control URLs (or $DRAPE_SERVER holding one) asks
 * every box for server.stats and connects to the least-loaded one that
 * answers, so the sessions the client creates are placed there. The rule,
 * in order:
 *
 *   1. fewest (queued + running) sessions per solver thread: a running
 *      session has one frame in flight and a queued one waits for a worker,
 *      so this is the frames each thread has to get through before a new
 *      run's first frame;
 *   2. most free memory (the box's max_memory minus what its sessions hold;
 *      with no budget, least memory held), so idle sessions spread evenly;
 *   3. fewest sessions; 4. the earlier box in the list.
 *
 * A box that is down, or answers with an error, is skipped with one line
 * on stderr naming it; only when none answers does the connect fail.
 */
#include "client/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Boxes in one list, at most. */
#define POOL_MAX 64

typedef struct pool_box {
	drape_client *c;
	drape_server_stats st;
} pool_box;

bool client_url_is_pool(const char *url)
{
	return url != NULL && strchr(url, ',') != NULL;
}

/* True when box a is a better place for a new session than box b. */
static bool pool_better(const pool_box *a, const pool_box *b)
{
	/* Load per thread compared as cross products, exactly, in integers:
	 * (qa + ra) / ta < (qb + rb) / tb. */
	uint64_t ta = a->st.threads ? a->st.threads : 1, tb = b->st.threads ? b->st.threads : 1;
	uint64_t la = (a->st.queued + a->st.running) * tb, lb = (b->st.queued + b->st.running) * ta;
	if (la != lb)
		return la < lb;
	uint64_t ma = a->c->info.limits.max_memory, mb = b->c->info.limits.max_memory;
	uint64_t fa = ma ? (ma > a->st.memory ? ma - a->st.memory : 0) : UINT64_MAX - a->st.memory;
	uint64_t fb = mb ? (mb > b->st.memory ? mb - b->st.memory : 0) : UINT64_MAX - b->st.memory;
	if (fa != fb)
		return fa > fb;
	return a->st.sessions < b->st.sessions;
}

drape_err client_pool_connect(const char *urls, const drape_client_opts *opts, drape_client **out,
			      drape_error *err)
{
	size_t len = strlen(urls);
	char *list = malloc(len + 1);
	if (list == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "connect: out of memory");
	memcpy(list, urls, len + 1);
	pool_box best = {0};
	drape_err last = DRAPE_EUNAVAILABLE;
	drape_error last_err;
	drape_error_clear(&last_err);
	uint32_t n = 0, tried = 0;
	char *save = NULL;
	for (char *u = strtok_r(list, ",", &save); u != NULL; u = strtok_r(NULL, ",", &save)) {
		while (*u == ' ')
			u++;
		size_t ul = strlen(u);
		while (ul > 0 && u[ul - 1] == ' ')
			u[--ul] = '\0';
		if (ul == 0)
			continue;
		if (++n > POOL_MAX) {
			drape_close(best.c);
			free(list);
			return drape_error_setf(err, DRAPE_EINVAL, "url: more than %d servers in the list",
						POOL_MAX);
		}
		tried++;
		pool_box b = {0};
		drape_error e;
		drape_error_clear(&e);
		drape_err rc = drape_connect(u, opts, &b.c, &e);
		if (rc == DRAPE_OK && (rc = drape_server_stats_get(b.c, &b.st, &e)) != DRAPE_OK) {
			drape_close(b.c);
			b.c = NULL;
		}
		if (rc != DRAPE_OK) {
			/* A malformed URL is the caller's mistake, not a box that
			 * is down: report it rather than skip it. */
			if (rc == DRAPE_EINVAL) {
				drape_close(best.c);
				if (err != NULL)
					*err = e;
				free(list);
				return rc;
			}
			fprintf(stderr, "libdrape: pool: skipping %s: %s\n", u, e.message);
			last = rc;
			last_err = e;
			continue;
		}
		if (best.c == NULL || pool_better(&b, &best)) {
			drape_close(best.c);
			best = b;
		} else {
			drape_close(b.c);
		}
	}
	free(list);
	if (tried == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "url: \"%s\" lists no server", urls);
	if (best.c == NULL) {
		if (err != NULL) {
			*err = last_err;
			snprintf(err->message, sizeof err->message,
				 "no server of the pool answered (%u tried; last: %.160s)", (unsigned)tried,
				 last_err.message);
			err->code = last;
		}
		return last;
	}
	*out = best.c;
	return DRAPE_OK;
}

const char *drape_client_url(const drape_client *c)
{
	return c->url;
}
