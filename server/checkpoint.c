/*
 * Crash recovery files (see checkpoint.h).
 */
#include "server/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/checksum.h"
#include "server/log.h"
#include "server/owner.h"
#include "server/server.h"

#define SRV_FILE_MAGIC "drapeSF1"
#define SRV_KIND_SERVER 1u
#define SRV_KIND_SESSION 2u
#define SRV_KIND_STATE 3u
#define SRV_KIND_MESH 4u
/* Files larger than this are refused before they are read. */
#define SRV_FILE_MAX ((uint64_t)1 << 34)

typedef struct srv_file_head {
	char magic[8];
	uint32_t kind;
	uint32_t reserved;
	uint64_t payload_len;
} srv_file_head;

typedef struct srv_part {
	const void *data;
	size_t len;
} srv_part;

/* A torn cloth's checkpoint (topology > 0) holds its current vertex
 * count's positions and velocities, then its triangles and each vertex's
 * origin (drape_sim_get_mesh); vertices stays the created count. */
typedef struct srv_state_head {
	uint32_t id;
	uint32_t frame;
	uint32_t last_target;
	uint32_t target;
	uint32_t state;
	uint32_t vertices;
	uint32_t params_size;
	uint32_t topology; /* the mesh generation, 0 = as created */
	drape_sim_params params;
} srv_state_head;

typedef struct srv_session_head {
	uint32_t id;
	uint32_t reserved;
	uint64_t client;
	uint8_t token[PROTO_TOKEN_SIZE];
} srv_session_head;

static bool srv_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0)
			errno = EIO; /* no progress and no reason */
		if (w <= 0)
			return false;
		p += w;
		len -= (size_t)w;
	}
	return true;
}

static bool srv_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = fsync(fd) == 0;
	close(fd);
	return ok;
}

/* Fills err with EIO naming the file, the step that failed and errno's text
 * (the reason first: a long state dir must not push it out of the 255 bytes). */
static void srv_io_error(drape_error *err, const char *dir, const char *name, const char *step, int e)
{
	drape_error_setf(err, DRAPE_EIO, "cannot %s %s: %s (in %s)", step, name, strerror(e ? e : EIO), dir);
}

/* Writes dir/name atomically: temporary file, fsync, rename, fsync dir.
 * On failure the old file is untouched, the temporary one removed, and err
 * (EIO) names the file, the step and errno's text. */
static bool srv_file_write(const char *dir, const char *name, uint32_t kind, const srv_part *parts, size_t n,
			   drape_error *err)
{
	char path[4300], tmp[4310];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	srv_file_head h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, SRV_FILE_MAGIC, 8);
	h.kind = kind;
	for (size_t i = 0; i < n; i++)
		h.payload_len += parts[i].len;
	uint64_t sum = srv_fnv1a64(SRV_FNV_INIT, &h, sizeof h);
	for (size_t i = 0; i < n; i++)
		sum = srv_fnv1a64(sum, parts[i].data, parts[i].len);

	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		srv_io_error(err, dir, name, "create a temporary file for", errno);
		return false;
	}
	const char *step = "write";
	bool ok = srv_write_all(fd, &h, sizeof h);
	for (size_t i = 0; ok && i < n; i++)
		ok = srv_write_all(fd, parts[i].data, parts[i].len);
	ok = ok && srv_write_all(fd, &sum, sizeof sum);
	if (ok && fsync(fd) != 0) {
		ok = false;
		step = "fsync";
	}
	int saved = errno;
	/* close can report a deferred write error (NFS); it counts too. */
	if (close(fd) != 0 && ok) {
		ok = false;
		step = "close";
		saved = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = false;
		step = "rename into place";
		saved = errno;
	}
	if (!ok) {
		srv_io_error(err, dir, name, step, saved);
		unlink(tmp);
		return false;
	}
	if (!srv_fsync_dir(dir))
		srv_warn("checkpoint %s: cannot fsync the directory: %s", dir, strerror(errno));
	return true;
}

/* Reads and checks a file written by srv_file_write; returns its payload
 * (caller frees) or NULL with the reason in why. */
static uint8_t *srv_file_read(const char *path, uint32_t kind, size_t *len, char *why, size_t why_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_len, "%s", strerror(errno));
		return NULL;
	}
	struct stat st;
	srv_file_head h;
	uint8_t *buf = NULL;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < sizeof h + 8 || (uint64_t)st.st_size > SRV_FILE_MAX) {
		snprintf(why, why_len, "size %lld is impossible", (long long)st.st_size);
		goto fail;
	}
	buf = malloc((size_t)st.st_size);
	if (buf == NULL) {
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got != (size_t)st.st_size) {
		snprintf(why, why_len, "short read");
		goto fail;
	}
	memcpy(&h, buf, sizeof h);
	if (memcmp(h.magic, SRV_FILE_MAGIC, 8) != 0 || h.kind != kind) {
		snprintf(why, why_len, "not a drape state file of the expected kind");
		goto fail;
	}
	if (h.payload_len != (uint64_t)st.st_size - sizeof h - 8) {
		snprintf(why, why_len, "truncated (header says %llu payload bytes, file holds %llu)",
			 (unsigned long long)h.payload_len, (unsigned long long)((uint64_t)st.st_size - sizeof h - 8));
		goto fail;
	}
	uint64_t want;
	memcpy(&want, buf + sizeof h + h.payload_len, 8);
	if (srv_fnv1a64(SRV_FNV_INIT, buf, sizeof h + h.payload_len) != want) {
		snprintf(why, why_len, "checksum mismatch");
		goto fail;
	}
	close(fd);
	memmove(buf, buf + sizeof h, h.payload_len);
	*len = h.payload_len;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

static int srv_mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
		return ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
			return errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) != 0 && errno != EEXIST)
		return errno;
	struct stat st;
	if (stat(tmp, &st) != 0)
		return errno;
	if (!S_ISDIR(st.st_mode))
		return ENOTDIR;
	if (access(tmp, W_OK | X_OK) != 0)
		return errno;
	return 0;
}

int srv_ckpt_prepare(srv_server *srv)
{
	int e = srv_mkdir_p(srv->cfg->state_dir, 0700);
	if (e != 0)
		return e;
	snprintf(srv->sessions_dir, sizeof srv->sessions_dir, "%s/sessions", srv->cfg->state_dir);
	e = srv_mkdir_p(srv->sessions_dir, 0700);
	if (e != 0)
		srv->sessions_dir[0] = '\0';
	return e;
}

/* server.bin reserves ids in blocks of this many: a create rewrites it
 * (two fsyncs on the loop) once every block, not every time. A restart
 * then starts at the block's end, skipping the ids not given out. */
#define SRV_ID_BLOCK 64u

bool srv_ckpt_save_next_id(srv_server *srv, drape_error *err)
{
	srv_sessions *t = &srv->sessions;
	if (t->next_id <= t->saved_id)
		return true;
	const uint32_t bound = t->next_id > UINT32_MAX - SRV_ID_BLOCK ? UINT32_MAX : t->next_id + SRV_ID_BLOCK - 1;
	const srv_part part = { &bound, sizeof bound };
	if (!srv_file_write(srv->cfg->state_dir, "server.bin", SRV_KIND_SERVER, &part, 1, err))
		return false;
	t->saved_id = bound;
	return true;
}

void srv_ckpt_failed(srv_session *s, const drape_error *e)
{
	/* The first failure is what a restart would lose first (later ones
	 * usually follow from the same full disk): it stays until the
	 * session is wholly on disk again. Every one is logged. */
	if (!s->has_storage_error) {
		s->has_storage_error = true;
		s->storage_error = *e;
	}
	srv_warn("session %u: %s", (unsigned)s->id, e->message);
}

/* A checkpoint of s landed: the session is durable again unless a frame or
 * a collider op is still missing from its files. */
static void srv_ckpt_written(srv_session *s)
{
	s->ckpt_failed = false;
	if (s->has_storage_error && !s->ops_lost && srv_frames_unsaved(&s->frames) == 0) {
		s->has_storage_error = false;
		srv_info("session %u: its state directory is up to date again", (unsigned)s->id);
	}
}

void srv_ckpt_landed(srv_session *s, bool ok, const drape_error *e)
{
	if (ok) {
		srv_ckpt_written(s);
	} else {
		s->ckpt_failed = true;
		srv_ckpt_failed(s, e);
	}
}

struct srv_ckpt_snap {
	size_t bytes; /* of buf */
	srv_state_head head;
	float buf[]; /* positions, then velocities: vertices * 3 floats each;
		      * a torn mesh's triangles and origins after them */
};

srv_ckpt_snap *srv_ckpt_snapshot(const srv_session *s, uint32_t state, uint32_t target, uint32_t last_target,
				 const drape_sim_params *params)
{
	const uint32_t nv = drape_sim_vertex_count(s->sim);
	const uint32_t topology = drape_sim_topology_generation(s->sim);
	const size_t n = (size_t)nv * 3u;
	const size_t mesh = topology ? ((size_t)s->triangles * 3u + nv) * sizeof(uint32_t) : 0;
	srv_ckpt_snap *snap = malloc(sizeof *snap + n * 2u * sizeof(float) + mesh);
	if (snap == NULL) {
		srv_warn("session %u: out of memory for its checkpoint", (unsigned)s->id);
		return NULL;
	}
	srv_state_head *h = &snap->head;
	memset(h, 0, sizeof *h);
	h->id = s->id;
	h->last_target = last_target;
	h->target = target;
	h->state = state;
	h->vertices = s->vertices;
	h->params_size = (uint32_t)sizeof h->params;
	h->params = *params;
	h->topology = topology;
	snap->bytes = n * 2u * sizeof(float) + mesh;
	drape_sim_get_state(s->sim, snap->buf, snap->buf + n, &h->frame);
	if (topology) {
		uint32_t *t = (uint32_t *)(void *)(snap->buf + 2u * n);
		drape_sim_get_mesh(s->sim, t, t + (size_t)s->triangles * 3u, NULL);
	}
	return snap;
}

void srv_ckpt_snap_free(srv_ckpt_snap *snap)
{
	free(snap);
}

drape_err srv_ckpt_save_mesh(const srv_session *s, uint32_t topology, uint32_t first_frame,
			     uint32_t vertices, const uint32_t *tris, const uint32_t *origin,
			     drape_error *err)
{
	if (s->dir == NULL)
		return DRAPE_OK;
	char name[64];
	snprintf(name, sizeof name, "mesh_%u.bin", (unsigned)topology);
	const uint32_t head[4] = { topology, first_frame, vertices, s->triangles };
	const srv_part parts[3] = { { head, sizeof head },
				    { tris, (size_t)s->triangles * 12u },
				    { origin, (size_t)vertices * 4u } };
	drape_error e;
	if (!srv_file_write(s->dir, name, SRV_KIND_MESH, parts, 3, &e))
		return drape_error_setf(err, DRAPE_EIO, "torn mesh %u: %s", (unsigned)topology, e.message);
	return DRAPE_OK;
}

/* Loads the torn meshes mesh_1.bin, mesh_2.bin, ... of a reloaded session
 * into s->tear, stopping at the first missing or bad one. */
static void srv_ckpt_load_meshes(srv_session *s, const char *dir)
{
	char path[4400], why[256];
	for (uint32_t g = 1;; g++) {
		snprintf(path, sizeof path, "%s/mesh_%u.bin", dir, (unsigned)g);
		if (access(path, F_OK) != 0)
			return;
		size_t len = 0;
		uint8_t *m = srv_file_read(path, SRV_KIND_MESH, &len, why, sizeof why);
		uint32_t head[4];
		if (m != NULL && len >= sizeof head)
			memcpy(head, m, sizeof head);
		if (m == NULL || len < sizeof head || head[0] != g || head[3] != s->triangles ||
		    head[2] < s->vertices || head[2] > s->cap_vertices ||
		    len != sizeof head + (size_t)head[3] * 12u + (size_t)head[2] * 4u) {
			srv_warn("session %u: torn mesh %s unusable (%s); frames solved on it are not served",
				 (unsigned)s->id, path, m == NULL ? why : "its contents do not match");
			free(m);
			return;
		}
		uint32_t *tris = malloc((size_t)head[3] * 12u), *origin = malloc((size_t)head[2] * 4u);
		if (tris == NULL || origin == NULL) {
			free(tris);
			free(origin);
			free(m);
			return;
		}
		memcpy(tris, m + sizeof head, (size_t)head[3] * 12u);
		memcpy(origin, m + sizeof head + (size_t)head[3] * 12u, (size_t)head[2] * 4u);
		free(m);
		if (!srv_tear_add(&s->tear, g, head[1], head[2], tris, origin))
			return;
	}
}

drape_err srv_ckpt_write_snapshot(const srv_session *s, srv_ckpt_snap *snap, drape_error *err)
{
	if (snap == NULL)
		return DRAPE_OK;
	drape_err rc = DRAPE_OK;
	if (s->dir != NULL) {
		const srv_part parts[2] = { { &snap->head, sizeof snap->head }, { snap->buf, snap->bytes } };
		drape_error e;
		if (!srv_file_write(s->dir, "state.bin", SRV_KIND_STATE, parts, 2, &e)) {
			drape_error_setf(err, DRAPE_EIO, "checkpoint of frame %u: %s", (unsigned)snap->head.frame,
					 e.message);
			rc = DRAPE_EIO;
		}
	}
	free(snap);
	return rc;
}

drape_err srv_ckpt_save_state(srv_server *srv, srv_session *s, drape_error *err)
{
	(void)srv;
	if (s->dir == NULL || s->deleted)
		return DRAPE_OK;
	/* The sim belongs to a worker, or a frame's output (which may write
	 * state.bin itself) is in flight: writing now could race that write or
	 * be overtaken by an older checkpoint, and could get ahead of the
	 * frames on disk. The scheduler writes it once they have landed, or
	 * hands it to the next frame's output (srv_sched_settle). */
	if (s->busy || s->writing) {
		s->ckpt_want = true;
		return DRAPE_OK;
	}
	s->ckpt_want = false;
	drape_error e;
	drape_error_clear(&e);
	/* Frames that only memory holds (their write failed) go to disk first:
	 * state.bin never claims a frame whose record is missing, or a reload
	 * would lose the frames between (the output stage's scratch is free,
	 * since no output is in flight). */
	uint32_t frame = 0;
	const int fe = srv_frames_flush(&s->frames, s->work_record, &frame);
	srv_ckpt_snap *snap = NULL;
	if (fe != 0) {
		drape_error_setf(&e, DRAPE_EIO,
				 "frame %u is kept only in memory: cannot write its record to frames.bin: %s (in %s)",
				 (unsigned)frame, strerror(fe), s->dir);
		srv_ckpt_landed(s, false, &e);
	} else if ((snap = srv_ckpt_snapshot(s, (uint32_t)s->state, s->target, s->last_target, &s->params)) ==
		   NULL) {
		drape_error_setf(&e, DRAPE_ENOMEM, "checkpoint of frame %u: out of memory for its copy",
				 (unsigned)s->frames_done);
		srv_ckpt_landed(s, false, &e);
	} else {
		srv_ckpt_landed(s, srv_ckpt_write_snapshot(s, snap, &e) == DRAPE_OK, &e);
	}
	if (s->ckpt_failed && err != NULL)
		*err = e;
	return s->ckpt_failed ? e.code : DRAPE_OK;
}

drape_err srv_ckpt_save_params(srv_server *srv, srv_session *s, drape_error *err)
{
	return srv_ckpt_save_state(srv, s, err);
}

drape_err srv_ckpt_save_run(srv_server *srv, srv_session *s, drape_error *err)
{
	return srv_ckpt_save_state(srv, s, err);
}

drape_err srv_ckpt_save_session(srv_server *srv, srv_session *s, const void *create, size_t len, drape_error *err)
{
	if (s->dir == NULL)
		return drape_error_setf(err, DRAPE_EIO, "session %u has no directory in the state dir",
					(unsigned)s->id);
	srv_session_head h;
	memset(&h, 0, sizeof h);
	h.id = s->id;
	h.client = s->client;
	memcpy(h.token, s->token, PROTO_TOKEN_SIZE);
	const srv_part parts[2] = { { &h, sizeof h }, { create, len } };
	/* Inputs, then the first checkpoint (without it a reload would start
	 * over at frame 0). Any failure fails the create. */
	if (!srv_file_write(s->dir, "session.bin", SRV_KIND_SESSION, parts, 2, err))
		return DRAPE_EIO;
	return srv_ckpt_save_state(srv, s, err);
}

void srv_ckpt_remove_session(srv_server *srv, srv_session *s)
{
	if (s->dir == NULL)
		return;
	static const char *const names[] = { "session.bin", "state.bin", "ops.bin", "frames.bin",
					     "session.bin.tmp", "state.bin.tmp", "owner", "owner.tmp" };
	char path[4300];
	/* session.bin goes first: without it a half-removed directory is not
	 * loaded again. */
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", s->dir, names[i]);
		if (unlink(path) != 0 && errno != ENOENT)
			srv_warn("session %u: cannot remove %s: %s", (unsigned)s->id, path, strerror(errno));
	}
	if (rmdir(s->dir) != 0 && errno != ENOENT)
		srv_warn("session %u: cannot remove %s: %s", (unsigned)s->id, s->dir, strerror(errno));
}

void srv_ckpt_append_op(srv_server *srv, srv_session *s, const void *raw, size_t len)
{
	if (s->dir == NULL)
		return;
	char path[4300];
	snprintf(path, sizeof path, "%s/ops.bin", s->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	const uint32_t n = (uint32_t)len;
	uint64_t sum = srv_fnv1a64(SRV_FNV_INIT, &n, sizeof n);
	sum = srv_fnv1a64(sum, raw, len);
	struct stat st;
	const off_t was = fd >= 0 && fstat(fd, &st) == 0 ? st.st_size : -1;
	bool ok = fd >= 0 && srv_write_all(fd, &n, sizeof n) && srv_write_all(fd, raw, len) &&
		  srv_write_all(fd, &sum, sizeof sum) && fsync(fd) == 0;
	const int e = errno;
	if (!ok) {
		/* A torn record would stop the replay of later ops anyway; cut it
		 * off so a later op cannot land after a hole. */
		if (fd >= 0 && was >= 0 && ftruncate(fd, was) != 0)
			srv_debug("session %u: cannot cut ops.bin back: %s", (unsigned)s->id, strerror(errno));
		drape_error err;
		drape_error_setf(&err, DRAPE_EIO, "collider op not recorded, a restart loses it: cannot %s ops.bin: %s (in %s)",
				 fd >= 0 ? "append to" : "open", strerror(e ? e : EIO), s->dir);
		s->ops_lost = true;
		srv_ckpt_failed(s, &err);
	}
	if (fd >= 0)
		close(fd);
	srv_ckpt_save_state(srv, s, NULL);
}

/* Applies the recorded collider ops of a reloaded session, in order; stops
 * at the first torn or failing record. Returns false if one failed. */
static bool srv_ckpt_replay_ops(srv_server *srv, srv_session *s, const char *dir)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/ops.bin", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	struct stat st;
	uint8_t *buf = NULL;
	size_t size = 0;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < SRV_FILE_MAX &&
	    (buf = malloc((size_t)st.st_size)) != NULL) {
		while (size < (size_t)st.st_size) {
			ssize_t r = read(fd, buf + size, (size_t)st.st_size - size);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			size += (size_t)r;
		}
	}
	close(fd);
	bool ok = true;
	size_t off = 0;
	uint32_t applied = 0;
	while (off < size) {
		uint32_t n;
		uint64_t want;
		if (size - off < sizeof n + sizeof want) {
			srv_warn("session %u: %s ends in a torn record; later ops are skipped", (unsigned)s->id, path);
			break;
		}
		memcpy(&n, buf + off, sizeof n);
		if (n > size - off - sizeof n - sizeof want) {
			srv_warn("session %u: %s ends in a torn record; later ops are skipped", (unsigned)s->id, path);
			break;
		}
		memcpy(&want, buf + off + sizeof n + n, sizeof want);
		if (srv_fnv1a64(SRV_FNV_INIT, buf + off, sizeof n + n) != want) {
			srv_warn("session %u: %s: record %u fails its checksum; it and later ops are skipped",
				 (unsigned)s->id, path, (unsigned)applied + 1);
			ok = false;
			break;
		}
		proto_request req;
		proto_reply rep;
		drape_error err;
		drape_err rc = proto_request_decode(buf + off + sizeof n, n, 0, &req, NULL, &err);
		if (rc == DRAPE_OK) {
			proto_reply_init(&rep, req.op, req.id);
			rc = srv_collider_apply(srv->cfg, s, &req, &rep, &err);
			if (rc == DRAPE_OK)
				srv_colview_record(s, &req);
			proto_request_free(&req);
		}
		if (rc != DRAPE_OK) {
			srv_warn("session %u: recorded collider op %u cannot be applied: %s", (unsigned)s->id,
				 (unsigned)applied + 1, err.message);
			ok = false;
			break;
		}
		applied++;
		off += sizeof n + n + sizeof want;
	}
	s->colliders = s->work_colliders;
	/* The solver side (work_memory) plus the loop's own copy of the
	 * colliders, which srv_colview_record keeps up to date. */
	s->memory = s->work_memory + s->colview.bytes;
	free(buf);
	return ok;
}

/* Re-solves frames the cache holds beyond the checkpoint, at most this many
 * (beyond it the extra frames are dropped instead of delaying the start). */
#define SRV_MAX_REPLAY 1000

/* The params sizes earlier releases wrote, each a prefix of today's
 * drape_sim_params (fields are only ever appended): before `schedule`, and
 * before `tear_strain`. A checkpoint written by one of them loads with the
 * newer fields at their defaults (tearing off, the frame schedule), which
 * is what that release solved with, so a daemon upgraded across the change
 * keeps its sessions' state instead of re-solving them from frame 0. */
static const uint32_t srv_params_sizes_before[] = {
	(uint32_t)offsetof(drape_sim_params, schedule),
	(uint32_t)offsetof(drape_sim_params, tear_strain),
};

/* Reads a state.bin head (today's, or one with an earlier params layout)
 * into h, the params completed with defaults; returns the head's size in
 * the file, or 0 if it is none of the known layouts. */
static size_t srv_ckpt_read_head(const uint8_t *st, size_t len, srv_state_head *h)
{
	const size_t fixed = offsetof(srv_state_head, params);
	memset(h, 0, sizeof *h);
	if (len < fixed)
		return 0;
	memcpy(h, st, fixed);
	bool known = h->params_size == sizeof h->params;
	for (size_t i = 0; i < sizeof srv_params_sizes_before / sizeof srv_params_sizes_before[0]; i++)
		known = known || h->params_size == srv_params_sizes_before[i];
	if (!known || len < fixed + h->params_size)
		return 0;
	drape_sim_params_default(&h->params);
	memcpy(&h->params, st + fixed, h->params_size);
	return fixed + h->params_size;
}

static srv_session *srv_ckpt_load_one(srv_server *srv, uint32_t id, const char *dir)
{
	char path[4400], why[256];
	size_t len = 0;
	snprintf(path, sizeof path, "%s/session.bin", dir);
	uint8_t *sess = srv_file_read(path, SRV_KIND_SESSION, &len, why, sizeof why);
	if (sess == NULL) {
		srv_warn("state: skipping %s: %s", path, why);
		return NULL;
	}
	srv_session_head sh;
	proto_request req;
	drape_error err;
	if (len < sizeof sh) {
		srv_warn("state: skipping %s: too short", path);
		free(sess);
		return NULL;
	}
	memcpy(&sh, sess, sizeof sh);
	if (sh.id != id ||
	    proto_request_decode(sess + sizeof sh, len - sizeof sh, 0, &req, NULL, &err) != DRAPE_OK ||
	    req.op != PROTO_OP_SESSION_CREATE) {
		srv_warn("state: skipping %s: its id or create request is invalid", path);
		free(sess);
		return NULL;
	}
	free(sess);

	/* The checkpoint, if any is usable. */
	snprintf(path, sizeof path, "%s/state.bin", dir);
	uint8_t *st = srv_file_read(path, SRV_KIND_STATE, &len, why, sizeof why);
	srv_state_head h;
	size_t n = (size_t)req.u.create.mesh.vertex_count * 3u;
	const size_t ntri = req.u.create.mesh.triangle_count;
	size_t hs = sizeof h; /* the head's size in this file */
	if (st != NULL) {
		hs = srv_ckpt_read_head(st, len, &h);
		/* A torn cloth's: positions and velocities of its current
		 * vertices (28 bytes each with the origin), and the triangles. */
		size_t nv = n / 3u;
		if (hs != 0 && len >= hs && h.topology != 0 && len >= hs + ntri * 12u)
			nv = (len - hs - ntri * 12u) / 28u;
		const size_t want = hs + nv * 24u + (h.topology ? ntri * 12u + nv * 4u : 0u);
		if (hs != 0 && len == want)
			n = nv * 3u;
		if (hs == 0 || len != want || h.id != id || h.vertices != req.u.create.mesh.vertex_count ||
		    h.state >= PROTO_STATE_COUNT_ || drape_sim_params_validate(&h.params, NULL) != DRAPE_OK) {
			snprintf(why, sizeof why, "its contents do not match the session");
			free(st);
			st = NULL;
		}
	}
	if (st == NULL) {
		srv_warn("session %u: checkpoint %.4000s unusable (%.200s); the session restarts from frame 0",
			 (unsigned)id, path, why);
		memset(&h, 0, sizeof h);
		drape_sim_params_default(&h.params);
		proto_params_apply(&h.params, &req.u.create.params);
		h.state = PROTO_STATE_IDLE;
	}

	srv_session *s = srv_session_build(srv, id, &req.u.create, &h.params, true, &err);
	proto_request_free(&req);
	if (s == NULL) {
		srv_warn("state: skipping session %u: %s", (unsigned)id, err.message);
		free(st);
		return NULL;
	}
	s->client = sh.client;
	memcpy(s->token, sh.token, PROTO_TOKEN_SIZE);
	if (!srv_ckpt_replay_ops(srv, s, dir))
		srv_warn("session %u: loaded without some of its collider ops; its frames may differ from "
			 "before the restart",
			 (unsigned)id);
	srv_ckpt_load_meshes(s, dir);
	if (st != NULL) {
		const float *pos = (const float *)(void *)(st + hs);
		const uint32_t *mesh = (const uint32_t *)(void *)(pos + 2u * n);
		if ((h.topology != 0 &&
		     drape_sim_set_mesh(s->sim, (uint32_t)(n / 3u), mesh, mesh + ntri * 3u, h.topology,
					&err) != DRAPE_OK) ||
		    drape_sim_set_state(s->sim, pos, pos + n, h.frame, &err) != DRAPE_OK) {
			srv_warn("state: skipping session %u: its checkpoint is refused: %s", (unsigned)id,
				 err.message);
			free(st);
			srv_session_free(s);
			return NULL;
		}
		free(st);
	}
	s->frames_done = h.frame;
	s->last_target = h.last_target;
	s->target = h.target;
	s->state = (proto_state)h.state;
	if (s->state == PROTO_STATE_RUNNING || s->state == PROTO_STATE_QUEUED) {
		/* Canceled until the server is up; then srv_resume_interrupted
		 * continues it, unless --no-resume-interrupted. */
		s->state = PROTO_STATE_CANCELED;
		s->interrupted = true;
	}
	srv_owner_load(dir, s);

	/* The frame cache: trust only checksummed records, then bring the
	 * solver up to the newest one by re-solving (deterministically). */
	struct stat fst;
	uint32_t records = 0;
	if (s->frames.fd >= 0 && fstat(s->frames.fd, &fst) == 0)
		/* Rounded up: a torn mesh's last record may be shorter. */
		records = (uint32_t)(((uint64_t)fst.st_size + s->frames.record - 1) / s->frames.record >
					     UINT32_MAX
					     ? UINT32_MAX
					     : ((uint64_t)fst.st_size + s->frames.record - 1) / s->frames.record);
	uint32_t good = srv_frames_verify(&s->frames, records, s->work_record);
	if (good > h.frame + SRV_MAX_REPLAY)
		good = h.frame + SRV_MAX_REPLAY;
	uint32_t frame = h.frame;
	while (frame < good) {
		drape_sim_stats stats;
		if (drape_sim_step(s->sim, &stats, &err) != DRAPE_OK)
			break;
		frame = stats.frame;
	}
	if (frame <= good) {
		/* Consistent (or re-solving stopped early): the cache is cut
		 * back to the solver's frame. */
		srv_frames_truncate(&s->frames, frame);
	} else {
		/* The cache ends before the checkpoint (its tail was lost): the
		 * frames between are gone, newer ones follow the checkpoint. */
		srv_frames_truncate(&s->frames, good);
		s->frames.newest = frame;
		s->frames.disk_first = frame + 1;
		s->frames.ring_first = frame + 1;
	}
	s->frames_done = frame;
	srv_tear_truncate(&s->tear, frame);
	if (s->frames_done > 0) {
		float *tmp = malloc((size_t)s->cap_vertices * 12u);
		if (tmp != NULL &&
		    srv_frames_read(&s->frames, s->frames_done, tmp, &s->stats, s->work_record, NULL) == DRAPE_OK)
			s->has_stats = true;
		free(tmp);
	}
	return s;
}

size_t srv_ckpt_load_all(srv_server *srv)
{
	char why[256];
	char path[4300];
	size_t len = 0;
	uint32_t next = 1;
	snprintf(path, sizeof path, "%s/server.bin", srv->cfg->state_dir);
	uint8_t *sb = srv_file_read(path, SRV_KIND_SERVER, &len, why, sizeof why);
	if (sb != NULL && len == sizeof next)
		memcpy(&next, sb, sizeof next);
	else if (access(path, F_OK) == 0)
		srv_warn("state: %s unusable (%s); session ids restart after the highest loaded", path, why);
	free(sb);

	if (srv->sessions_dir[0] == '\0')
		return 0;
	DIR *d = opendir(srv->sessions_dir);
	if (d == NULL)
		return 0;
	size_t loaded = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end = NULL;
		unsigned long id = strtoul(e->d_name, &end, 10);
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end != '\0' || id >= UINT32_MAX)
			continue;
		char dir[4300];
		snprintf(dir, sizeof dir, "%.4000s/%.255s", srv->sessions_dir, e->d_name);
		if (id >= next)
			next = (uint32_t)id + 1;
		srv_session *s = srv_ckpt_load_one(srv, (uint32_t)id, dir);
		if (s == NULL)
			continue;
		if (!srv_sessions_add(&srv->sessions, s)) {
			srv_session_free(s);
			continue;
		}
		/* Idle time counts from the restart, not from the loop clock's
		 * arbitrary origin. */
		s->last_active_ms = srv_now_ms(srv);
		loaded++;
		srv_info("session %u reloaded: %u vertices, frame %u, %s", (unsigned)s->id, (unsigned)s->vertices,
			 (unsigned)s->frames_done, proto_state_name(s->state));
	}
	closedir(d);
	srv->sessions.next_id = next;
	/* The first create writes server.bin again: it may hold less than
	 * the highest id on disk. */
	srv->sessions.saved_id = 0;
	return loaded;
}
