/*
 * Retained frames: memory ring plus on-disk cache (see frames.h).
 */
#include "server/frames.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server/checksum.h"
#include "server/log.h"

/* Version 1 records end with FNV-1a 64 of the rest; version 2 (written
 * since) with XXH64 of the positions seeded with XXH64 of head and stats.
 * Both are read, so a cache written before the change stays servable and a
 * reloaded session keeps its frames. */
#define SRV_FRAME_MAGIC_V1 0x31465244u /* "DRF1" */
#define SRV_FRAME_MAGIC 0x32465244u    /* "DRF2" */
/* magic, index, vertex_count, reserved, then the stats block. */
#define SRV_FRAME_HEAD 16u
#define SRV_FRAME_STATS 56u

size_t srv_frames_record_size(uint32_t vertex_count)
{
	return SRV_FRAME_HEAD + SRV_FRAME_STATS + (size_t)vertex_count * 12u + 8u;
}

drape_err srv_frames_init(srv_frames *f, uint32_t vertex_count, uint32_t ring, uint32_t retain,
			  const char *path, bool keep, drape_error *err)
{
	memset(f, 0, sizeof *f);
	f->fd = -1;
	f->vertex_count = vertex_count;
	f->retain = retain;
	f->record = srv_frames_record_size(vertex_count);
	/* The ring never needs to hold more than the retained window. */
	if (retain != 0 && ring > retain)
		ring = retain;
	f->cap = ring ? ring : 1;
	f->ring = calloc(f->cap, sizeof *f->ring);
	if (f->ring == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "frames: out of memory for %u ring slots", f->cap);
	f->disk_first = 1;
	f->ring_first = 1;
	if (path != NULL) {
		f->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | (keep ? 0 : O_TRUNC), 0600);
		if (f->fd < 0)
			f->open_errno = errno;
		if (f->fd < 0)
			srv_warn("frame cache %s: %s; frames older than the newest %u will not be kept", path,
				 strerror(errno), f->cap);
	}
	return DRAPE_OK;
}

void srv_frames_free(srv_frames *f)
{
	/* A store srv_frames_init never saw has no ring; its fd field is not
	 * a descriptor of ours, whatever it holds. */
	const bool inited = f->ring != NULL;
	if (inited)
		for (uint32_t i = 0; i < f->cap; i++)
			free(f->ring[i].positions);
	free(f->ring);
	if (inited) {
		for (uint32_t i = 0; i < f->held_count; i++)
			free(f->held[i].positions);
		free(f->held);
	}
	if (inited && f->fd >= 0)
		close(f->fd);
	memset(f, 0, sizeof *f);
	f->fd = -1;
}

static void srv_put_stats(unsigned char *p, const drape_sim_stats *s)
{
	memcpy(p + 0, &s->frame, 4);
	memcpy(p + 4, &s->nonfinite, 4);
	memcpy(p + 8, &s->contacts, 4);
	memcpy(p + 12, &s->self_pairs, 4);
	memcpy(p + 16, &s->solve_ms, 8);
	memcpy(p + 24, &s->collide_ms, 8);
	memcpy(p + 32, &s->self_ms, 8);
	memcpy(p + 40, &s->max_strain, 4);
	memcpy(p + 44, &s->mean_strain, 4);
	memcpy(p + 48, &s->projections, 8);
}

static void srv_get_stats(const unsigned char *p, drape_sim_stats *s)
{
	memset(s, 0, sizeof *s);
	memcpy(&s->frame, p + 0, 4);
	memcpy(&s->nonfinite, p + 4, 4);
	memcpy(&s->contacts, p + 8, 4);
	memcpy(&s->self_pairs, p + 12, 4);
	memcpy(&s->solve_ms, p + 16, 8);
	memcpy(&s->collide_ms, p + 24, 8);
	memcpy(&s->self_ms, p + 32, 8);
	memcpy(&s->max_strain, p + 40, 4);
	memcpy(&s->mean_strain, p + 44, 4);
	memcpy(&s->projections, p + 48, 8);
}

/* The version 2 checksum of a record's head and stats (72 bytes at head)
 * and its positions (body bytes). */
static uint64_t srv_frame_sum(const void *head, const void *positions, size_t body)
{
	return srv_xxh64(positions, body, srv_xxh64(head, SRV_FRAME_HEAD + SRV_FRAME_STATS, 0));
}

static off_t srv_frame_offset(const srv_frames *f, uint32_t index)
{
	return (off_t)(index - 1u) * (off_t)f->record;
}

bool srv_frames_write(const srv_frames *f, uint32_t index, const drape_sim_stats *stats,
		      const float *positions, void *scratch)
{
	return srv_frames_write_mesh(f, index, stats, positions, f->vertex_count, 0, scratch);
}

bool srv_frames_write_mesh(const srv_frames *f, uint32_t index, const drape_sim_stats *stats,
			   const float *positions, uint32_t vertices, uint32_t topology, void *scratch)
{
	if (f->fd < 0) {
		errno = 0;
		return false;
	}
	/* Head and stats go through scratch; the positions are written from
	 * where they are (no 1 MB copy per frame of sheet300). */
	unsigned char *p = scratch;
	const uint32_t head[4] = { SRV_FRAME_MAGIC, index, vertices, topology };
	memcpy(p, head, sizeof head);
	srv_put_stats(p + SRV_FRAME_HEAD, stats);
	const size_t body = (size_t)vertices * 12u;
	const uint64_t h = srv_frame_sum(p, positions, body);
	unsigned char tail[8];
	memcpy(tail, &h, 8);
	struct iovec iov[3] = {
		{ p, SRV_FRAME_HEAD + SRV_FRAME_STATS },
		{ (void *)positions, body },
		{ tail, sizeof tail },
	};
	struct iovec *v = iov;
	int nv = 3;
	off_t at = srv_frame_offset(f, index);
	while (nv > 0) {
		ssize_t w = pwritev(f->fd, v, nv, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0)
			errno = EIO; /* no progress and no reason: never loop on it */
		if (w <= 0)
			return false;
		at += (off_t)w;
		/* A short write: skip what went out and go on. */
		size_t left = (size_t)w;
		while (nv > 0 && left >= v->iov_len) {
			left -= v->iov_len;
			v++;
			nv--;
		}
		if (nv > 0) {
			v->iov_base = (unsigned char *)v->iov_base + left;
			v->iov_len -= left;
		}
	}
	return true;
}

/* True when frame i is still retained once `newest` is the newest frame. */
static bool srv_frames_in_window(const srv_frames *f, uint32_t i, uint32_t newest)
{
	return i != 0 && (f->retain == 0 || newest < f->retain || i > newest - f->retain);
}

/* Frees the held frames that left the retained window (they are the oldest). */
static void srv_frames_prune_held(srv_frames *f, uint32_t newest)
{
	uint32_t k = 0;
	while (k < f->held_count && !srv_frames_in_window(f, f->held[k].index, newest))
		free(f->held[k++].positions);
	if (k > 0) {
		memmove(f->held, f->held + k, (f->held_count - k) * sizeof *f->held);
		f->held_count -= k;
	}
}

/* Moves a ring slot's frame (not on disk) to the held list; false when out
 * of memory for the list, and the frame is then lost (logged). */
static bool srv_frames_hold(srv_frames *f, srv_frame_slot *s)
{
	if (f->held_count == f->held_cap) {
		uint32_t cap = f->held_cap ? f->held_cap * 2 : 4;
		srv_frame_slot *h = realloc(f->held, cap * sizeof *h);
		if (h == NULL) {
			srv_error("frame cache: out of memory to keep frame %u, whose record could not be written; "
				  "it is lost",
				  (unsigned)s->index);
			return false;
		}
		f->held = h;
		f->held_cap = cap;
	}
	f->held[f->held_count++] = *s;
	s->positions = NULL;
	s->index = 0;
	return true;
}

void srv_frames_store(srv_frames *f, uint32_t index, const drape_sim_stats *stats, float **positions,
		      bool disk_ok)
{
	srv_frames_store_mesh(f, index, stats, positions, f->vertex_count, 0, disk_ok);
}

void srv_frames_store_mesh(srv_frames *f, uint32_t index, const drape_sim_stats *stats,
			   float **positions, uint32_t vertices, uint32_t topology, bool disk_ok)
{
	srv_frame_slot *s = &f->ring[index % f->cap];
	srv_frames_prune_held(f, index);
	/* The frame this one pushes out of the ring is dropped only when the
	 * disk has it (or there is no disk cache at all, where the ring is the
	 * whole store by design): a frame whose write failed stays served. */
	if (f->fd >= 0 && s->index != 0 && s->positions != NULL && !s->on_disk &&
	    srv_frames_in_window(f, s->index, index))
		srv_frames_hold(f, s);
	float *old = s->positions;
	s->positions = *positions;
	*positions = old;
	s->index = index;
	s->on_disk = disk_ok;
	s->stats = *stats;
	s->vertices = vertices;
	s->topology = topology;
	/* The ring holds consecutive frames ending at the newest. */
	if (f->ring_first > f->newest)
		f->ring_first = index;
	else if (index - f->ring_first >= f->cap)
		f->ring_first = index - f->cap + 1;
	f->newest = index;
	/* A failed write leaves a hole in the file, but the frame is in memory
	 * (ring or held list) for as long as it is retained, and reads look
	 * there first: the disk's range stays as it was. */
	/* Return the disk space of the frame that just left the retained
	 * window; the file keeps its size so offsets stay fixed. */
	if (f->retain != 0 && index > f->retain && f->fd >= 0) {
		const uint32_t gone = index - f->retain;
		if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, srv_frame_offset(f, gone),
			      (off_t)f->record) != 0 &&
		    errno != EOPNOTSUPP)
			srv_debug("frame cache: cannot release frame %u: %s", gone, strerror(errno));
	}
}

uint32_t srv_frames_first(const srv_frames *f)
{
	if (f->newest == 0)
		return 0;
	uint32_t first = 1;
	if (f->retain != 0 && f->newest > f->retain)
		first = f->newest - f->retain + 1;
	/* Without a usable disk cache only the ring is left. */
	uint32_t disk = f->fd >= 0 ? f->disk_first : f->newest + 1;
	uint32_t avail = disk < f->ring_first ? disk : f->ring_first;
	if (f->held_count > 0 && f->held[0].index < avail)
		avail = f->held[0].index;
	return first > avail ? first : avail;
}

/* The head's vertex count: the store's, or fewer for a torn mesh's frame
 * (version 2 records; version 1 ones always hold the store's). */
static bool srv_record_head_ok(const srv_frames *f, const unsigned char *p, uint32_t index)
{
	uint32_t head[4];
	memcpy(head, p, sizeof head);
	if (head[1] != index)
		return false;
	if (head[0] == SRV_FRAME_MAGIC_V1)
		return head[2] == f->vertex_count;
	return head[0] == SRV_FRAME_MAGIC && head[2] >= 1 && head[2] <= f->vertex_count;
}

static bool srv_record_ok(const srv_frames *f, const unsigned char *p, uint32_t index)
{
	uint32_t head[4];
	memcpy(head, p, sizeof head);
	if (!srv_record_head_ok(f, p, index))
		return false;
	const size_t n = srv_frames_record_size(head[2]) - 8u;
	uint64_t want;
	memcpy(&want, p + n, 8);
	if (head[0] == SRV_FRAME_MAGIC)
		return srv_frame_sum(p, p + SRV_FRAME_HEAD + SRV_FRAME_STATS, n - SRV_FRAME_HEAD - SRV_FRAME_STATS) ==
		       want;
	if (head[0] == SRV_FRAME_MAGIC_V1)
		return srv_fnv1a64(SRV_FNV_INIT, p, n) == want;
	return false;
}

/* Reads bytes [from, to) of frame index's record into p + from. */
static bool srv_record_pread(const srv_frames *f, uint32_t index, unsigned char *p, size_t from,
			     size_t to)
{
	size_t done = from;
	while (done < to) {
		ssize_t r = pread(f->fd, p + done, to - done, srv_frame_offset(f, index) + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

/* The head first: a torn mesh's frame is shorter than the record. */
static bool srv_record_read(const srv_frames *f, uint32_t index, unsigned char *p)
{
	const size_t head = SRV_FRAME_HEAD + SRV_FRAME_STATS;
	if (!srv_record_pread(f, index, p, 0, head) || !srv_record_head_ok(f, p, index))
		return false;
	uint32_t n;
	memcpy(&n, p + 8, 4);
	return srv_record_pread(f, index, p, head, srv_frames_record_size(n)) &&
	       srv_record_ok(f, p, index);
}

drape_err srv_frames_read(const srv_frames *f, uint32_t index, float *positions, drape_sim_stats *stats,
			  void *scratch, drape_error *err)
{
	uint32_t n, topology;
	return srv_frames_read_mesh(f, index, positions, stats, &n, &topology, scratch, err);
}

drape_err srv_frames_read_mesh(const srv_frames *f, uint32_t index, float *positions,
			       drape_sim_stats *stats, uint32_t *vertices, uint32_t *topology,
			       void *scratch, drape_error *err)
{
	const uint32_t first = srv_frames_first(f);
	if (index == 0 || first == 0 || index < first || index > f->newest)
		return drape_error_setf(err, DRAPE_ERANGE, "frame %u is not retained (frames %u to %u are)",
					(unsigned)index, (unsigned)first, (unsigned)f->newest);
	const srv_frame_slot *s = &f->ring[index % f->cap];
	for (uint32_t i = 0; !(s->index == index && s->positions != NULL) && i < f->held_count; i++)
		s = &f->held[i];
	if (s->index == index && s->positions != NULL) {
		memcpy(positions, s->positions, (size_t)s->vertices * 12u);
		*stats = s->stats;
		*vertices = s->vertices;
		*topology = s->topology;
		return DRAPE_OK;
	}
	unsigned char *p = scratch;
	if (f->fd < 0 || !srv_record_read(f, index, p))
		return drape_error_setf(err, DRAPE_EIO, "frame %u: the on-disk cache record is unreadable",
					(unsigned)index);
	uint32_t head[4];
	memcpy(head, p, sizeof head);
	srv_get_stats(p + SRV_FRAME_HEAD, stats);
	memcpy(positions, p + SRV_FRAME_HEAD + SRV_FRAME_STATS, (size_t)head[2] * 12u);
	*vertices = head[2];
	*topology = head[0] == SRV_FRAME_MAGIC ? head[3] : 0;
	return DRAPE_OK;
}

void srv_frames_truncate(srv_frames *f, uint32_t index)
{
	for (uint32_t i = 0; i < f->cap; i++)
		if (f->ring[i].index > index)
			f->ring[i].index = 0;
	while (f->held_count > 0 && f->held[f->held_count - 1].index > index)
		free(f->held[--f->held_count].positions);
	if (f->newest > index)
		f->newest = index;
	if (f->ring_first > index + 1)
		f->ring_first = index + 1;
	if (f->disk_first > index + 1)
		f->disk_first = index + 1;
	if (f->fd >= 0 && ftruncate(f->fd, (off_t)index * (off_t)f->record) != 0)
		srv_warn("frame cache: cannot truncate to %u frames: %s", (unsigned)index, strerror(errno));
}

uint32_t srv_frames_verify(srv_frames *f, uint32_t limit, void *scratch)
{
	f->newest = 0;
	f->disk_first = 1;
	f->ring_first = 1;
	if (f->fd < 0 || limit == 0)
		return 0;
	/* Only the retained window needs checking; frames before it were
	 * released and are never served. */
	uint32_t start = 1;
	if (f->retain != 0 && limit > f->retain)
		start = limit - f->retain + 1;
	uint32_t good = start - 1;
	for (uint32_t i = start; i <= limit; i++) {
		if (!srv_record_read(f, i, scratch))
			break;
		good = i;
	}
	f->newest = good;
	f->disk_first = start;
	f->ring_first = good + 1;
	return good;
}

uint32_t srv_frames_unsaved(const srv_frames *f)
{
	if (f->fd < 0)
		return 0;
	uint32_t n = f->held_count;
	for (uint32_t i = 0; i < f->cap; i++) {
		const srv_frame_slot *s = &f->ring[i];
		if (s->index != 0 && s->positions != NULL && !s->on_disk && srv_frames_in_window(f, s->index, f->newest))
			n++;
	}
	return n;
}

int srv_frames_flush(srv_frames *f, void *scratch, uint32_t *failed)
{
	if (f->fd < 0)
		return 0;
	/* Held frames are older than any in the ring. */
	while (f->held_count > 0) {
		srv_frame_slot *s = &f->held[0];
		if (!srv_frames_write_mesh(f, s->index, &s->stats, s->positions, s->vertices, s->topology,
					   scratch)) {
			if (failed != NULL)
				*failed = s->index;
			return errno ? errno : EIO;
		}
		free(s->positions);
		memmove(f->held, f->held + 1, (f->held_count - 1) * sizeof *f->held);
		f->held_count--;
	}
	for (uint32_t k = f->ring_first; k <= f->newest; k++) {
		srv_frame_slot *s = &f->ring[k % f->cap];
		if (s->index != k || s->positions == NULL || s->on_disk || !srv_frames_in_window(f, k, f->newest))
			continue;
		if (!srv_frames_write_mesh(f, k, &s->stats, s->positions, s->vertices, s->topology,
					   scratch)) {
			if (failed != NULL)
				*failed = k;
			return errno ? errno : EIO;
		}
		s->on_disk = true;
	}
	return 0;
}

size_t srv_frames_memory(const srv_frames *f)
{
	size_t n = (size_t)f->cap * sizeof *f->ring + (size_t)f->held_cap * sizeof *f->held;
	for (uint32_t i = 0; i < f->cap; i++)
		if (f->ring[i].positions != NULL)
			n += (size_t)f->vertex_count * 12u;
	n += (size_t)f->held_count * f->vertex_count * 12u;
	return n;
}
