/*
 * Cache writers of libdrape: a run's frames as OBJ sequences, PC2, MDD or
 * Houdini JSON geometry (include/drape/cache.h describes the formats).
 *
 * PC2 and MDD are written from the frame's float buffer: PC2 is
 * little-endian, so on a little-endian host the positions go to the file as
 * they are; MDD is big-endian and is byte-swapped through a fixed scratch
 * buffer. The text formats (OBJ, GEO) build each frame in memory and write
 * it through a temporary file renamed over the frame's name.
 */
#include "drape/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/objtemplate.h"
#include "client/obj.h"

#define PC2_HEADER 32u
/* Floats byte-swapped per write for MDD (and PC2 on a big-endian host). */
#define SWAP_FLOATS 16384u

struct drape_cache_writer {
	drape_cache_format format;
	char *dir;
	char *path;              /* PC2/MDD: the file */
	int fd;                  /* PC2/MDD: open file; -1 otherwise */
	uint32_t vertex_count;
	const uint32_t *triangles;
	uint32_t triangle_count;
	float fps;
	uint32_t frame_count;    /* MDD: frames declared in the header */
	uint32_t written;
	uint32_t first, last;    /* indices of the first and last frame written */
	float *previous;         /* GEO: the last frame's positions (velocities) */
	bool have_previous;
	cache_obj_template *tmpl; /* OBJ with a source */
	unsigned char *scratch;  /* SWAP_FLOATS * 4 bytes */
};

static const char *const format_names[] = {NULL, "obj", "pc2", "mdd", "geo"};

const char *drape_cache_format_name(drape_cache_format f)
{
	if ((int)f < 1 || (int)f > 4)
		return NULL;
	return format_names[f];
}

drape_err drape_cache_format_parse(const char *name, drape_cache_format *out, drape_error *err)
{
	for (int i = 1; i <= 4; i++)
		if (name != NULL && strcmp(name, format_names[i]) == 0) {
			*out = (drape_cache_format)i;
			return DRAPE_OK;
		}
	return drape_error_setf(err, DRAPE_EINVAL, "format: \"%s\" is not one of obj, pc2, mdd, geo",
				name ? name : "");
}

void drape_cache_desc_default(drape_cache_desc *d)
{
	memset(d, 0, sizeof *d);
	d->format = DRAPE_CACHE_OBJ;
	d->fps = 24.0f;
}

uint32_t drape_cache_frames_written(const drape_cache_writer *w)
{
	return w ? w->written : 0;
}

/* ---- Byte order ------------------------------------------------------------ */

static bool host_little_endian(void)
{
	const uint16_t one = 1;
	unsigned char b;
	memcpy(&b, &one, 1);
	return b == 1;
}

static void put_u32(unsigned char *p, uint32_t v, bool big)
{
	for (int i = 0; i < 4; i++)
		p[big ? 3 - i : i] = (unsigned char)(v >> (8 * i));
}

static void put_f32(unsigned char *p, float f, bool big)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	put_u32(p, v, big);
}

/* ---- Files ------------------------------------------------------------------- */

static drape_err pwrite_all(int fd, const void *buf, size_t len, uint64_t off, const char *path,
			    drape_error *err)
{
	const unsigned char *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return drape_error_setf(err, DRAPE_EIO, "%s: write failed: %s", path,
						n < 0 ? strerror(errno) : "no progress");
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return DRAPE_OK;
}

/* Writes buf to path through a temporary file beside it, renamed over path. */
static drape_err write_whole(const char *path, const char *buf, size_t len, drape_error *err)
{
	static atomic_uint counter;
	size_t plen = strlen(path) + 48;
	char *tmp = malloc(plen);
	if (tmp == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		snprintf(tmp, plen, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1u));
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int en = errno;
		free(tmp);
		return drape_error_setf(err, DRAPE_EIO, "%s: cannot create a temporary file: %s", path,
					strerror(en));
	}
	drape_err e = pwrite_all(fd, buf, len, 0, path, err);
	if (close(fd) != 0 && e == DRAPE_OK)
		e = drape_error_setf(err, DRAPE_EIO, "%s: write failed: %s", path, strerror(errno));
	if (e == DRAPE_OK && rename(tmp, path) != 0)
		e = drape_error_setf(err, DRAPE_EIO, "%s: cannot rename into place: %s", path,
				     strerror(errno));
	if (e != DRAPE_OK)
		unlink(tmp);
	free(tmp);
	return e;
}

/* Writes n floats at off in the given byte order: straight from the buffer
 * when it is the host's, else swapped through the scratch buffer. */
static drape_err write_floats(drape_cache_writer *w, const float *f, size_t n, uint64_t off, bool big,
			      drape_error *err)
{
	if (big == !host_little_endian())
		return pwrite_all(w->fd, f, n * 4, off, w->path, err);
	while (n > 0) {
		size_t k = n < SWAP_FLOATS ? n : SWAP_FLOATS;
		for (size_t i = 0; i < k; i++)
			put_f32(w->scratch + 4 * i, f[i], big);
		drape_err e = pwrite_all(w->fd, w->scratch, k * 4, off, w->path, err);
		if (e != DRAPE_OK)
			return e;
		f += k;
		n -= k;
		off += (uint64_t)k * 4;
	}
	return DRAPE_OK;
}

/* ---- Growing text buffer ---------------------------------------------------- */

typedef struct text {
	char *p;
	size_t len, cap;
	bool oom;
} text;

static void text_reserve(text *t, size_t more)
{
	if (t->oom || t->len + more + 1 <= t->cap)
		return;
	size_t cap = t->cap ? t->cap : 4096;
	while (cap < t->len + more + 1)
		cap *= 2;
	char *p = realloc(t->p, cap);
	if (p == NULL) {
		t->oom = true;
		return;
	}
	t->p = p;
	t->cap = cap;
}

static void text_put(text *t, const char *s, size_t n)
{
	text_reserve(t, n);
	if (t->oom)
		return;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void text_str(text *t, const char *s)
{
	text_put(t, s, strlen(s));
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void text_printf(text *t, const char *fmt, ...)
{
	text_reserve(t, 128);
	if (t->oom)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->oom = true;
		return;
	}
	if ((size_t)n >= t->cap - t->len) {
		text_reserve(t, (size_t)n);
		if (t->oom)
			return;
		va_start(ap, fmt);
		vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
	}
	t->len += (size_t)n;
}

/* ---- Open and close --------------------------------------------------------- */

static drape_err check_positions(const float *p, uint32_t n, drape_error *err)
{
	for (size_t i = 0; i < (size_t)n * 3; i++)
		if (!isfinite(p[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE, "positions[%zu]: not a finite number",
						i / 3);
	return DRAPE_OK;
}

static void writer_free(drape_cache_writer *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w->dir);
	free(w->path);
	free(w->previous);
	free(w->scratch);
	cache_obj_template_free(w->tmpl);
	free(w);
}

static drape_err open_binary(drape_cache_writer *w, const char *name, drape_error *err)
{
	const char *ext = w->format == DRAPE_CACHE_PC2 ? "pc2" : "mdd";
	size_t n = strlen(w->dir) + strlen(name) + 8;
	w->path = malloc(n);
	w->scratch = malloc((size_t)SWAP_FLOATS * 4);
	if (w->path == NULL || w->scratch == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "cache: out of memory");
	snprintf(w->path, n, "%s/%s.%s", w->dir, name, ext);
	w->fd = open(w->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (w->fd < 0)
		return drape_error_setf(err, DRAPE_EIO, "%s: cannot create: %s", w->path, strerror(errno));
	unsigned char h[PC2_HEADER];
	memset(h, 0, sizeof h);
	drape_err e;
	if (w->format == DRAPE_CACHE_PC2) {
		/* The start frame is set by the first frame written; until then
		 * the file is a valid cache of no samples. */
		memcpy(h, "POINTCACHE2", 12);
		put_u32(h + 12, 1, false);
		put_u32(h + 16, w->vertex_count, false);
		put_f32(h + 20, 0.0f, false);
		put_f32(h + 24, 1.0f, false);
		put_u32(h + 28, 0, false);
		e = pwrite_all(w->fd, h, PC2_HEADER, 0, w->path, err);
	} else {
		put_u32(h, w->frame_count, true);
		put_u32(h + 4, w->vertex_count, true);
		e = pwrite_all(w->fd, h, 8, 0, w->path, err);
	}
	if (e != DRAPE_OK) {
		unlink(w->path);
		return e;
	}
	return DRAPE_OK;
}

drape_err drape_cache_open(const drape_cache_desc *d, drape_cache_writer **out, drape_error *err)
{
	if (d == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "cache: no description given");
	if (drape_cache_format_name(d->format) == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "format: unknown value %d", (int)d->format);
	if (d->dir == NULL || d->dir[0] == '\0')
		return drape_error_setf(err, DRAPE_EINVAL, "dir: no folder given");
	if (d->vertex_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "vertex_count: 0, must be at least 1");
	if (d->vertex_count > UINT32_MAX / 3)
		return drape_error_setf(err, DRAPE_ELIMIT, "vertex_count: %u is too many", d->vertex_count);
	if (!(d->fps > 0.0f) || !isfinite(d->fps))
		return drape_error_setf(err, DRAPE_EINVAL, "fps: %g, must be a finite number > 0", (double)d->fps);
	if (d->triangle_count > 0 && d->triangles == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "triangles: NULL with triangle_count %u",
					d->triangle_count);
	for (size_t i = 0; i < (size_t)d->triangle_count * 3; i++)
		if (d->triangles[i] >= d->vertex_count)
			return drape_error_setf(err, DRAPE_ERANGE, "triangles[%zu][%zu]: %u >= vertex_count %u",
						i / 3, i % 3, d->triangles[i], d->vertex_count);
	if (d->format == DRAPE_CACHE_MDD && d->frame_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"frame_count: 0; MDD stores the frame count first, so it must be known");
	const char *name = d->name ? d->name : "cloth";
	if (strchr(name, '/') != NULL || name[0] == '\0')
		return drape_error_setf(err, DRAPE_EINVAL, "name: \"%s\" must be a file name without '/'", name);
	struct stat sb;
	if (stat(d->dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return drape_error_setf(err, DRAPE_EIO, "dir: %s is not a folder", d->dir);

	drape_cache_writer *w = calloc(1, sizeof *w);
	if (w == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "cache: out of memory");
	w->fd = -1;
	w->format = d->format;
	w->vertex_count = d->vertex_count;
	w->triangles = d->triangles;
	w->triangle_count = d->triangle_count;
	w->fps = d->fps;
	w->frame_count = d->frame_count;
	w->dir = strdup(d->dir);
	drape_err e = DRAPE_OK;
	if (w->dir == NULL)
		e = drape_error_setf(err, DRAPE_ENOMEM, "cache: out of memory");
	else if (d->format == DRAPE_CACHE_PC2 || d->format == DRAPE_CACHE_MDD)
		e = open_binary(w, name, err);
	else if (d->format == DRAPE_CACHE_GEO) {
		w->previous = malloc((size_t)d->vertex_count * 3 * sizeof(float));
		if (w->previous == NULL)
			e = drape_error_setf(err, DRAPE_ENOMEM, "cache: out of memory");
		else if (d->previous != NULL) {
			e = check_positions(d->previous, d->vertex_count, err);
			memcpy(w->previous, d->previous, (size_t)d->vertex_count * 3 * sizeof(float));
			w->have_previous = true;
		}
	} else if (d->format == DRAPE_CACHE_OBJ && d->obj_source != NULL) {
		e = cache_obj_template_load(d->obj_source, d->vertex_count, &w->tmpl, err);
	}
	if (e != DRAPE_OK) {
		writer_free(w);
		return e;
	}
	*out = w;
	return DRAPE_OK;
}

drape_err drape_cache_close(drape_cache_writer *w, drape_error *err)
{
	if (w == NULL)
		return DRAPE_OK;
	drape_err e = DRAPE_OK;
	if (w->format == DRAPE_CACHE_MDD && w->written < w->frame_count) {
		/* The header and the times were written for frame_count frames:
		 * rewrite them for the frames written and move the positions up
		 * by the unused times. */
		uint64_t fb = (uint64_t)w->vertex_count * 12;
		uint64_t from = 8 + 4 * (uint64_t)w->frame_count, to = 8 + 4 * (uint64_t)w->written;
		unsigned char *buf = malloc((size_t)(fb < (1u << 20) ? fb : (1u << 20)));
		if (buf == NULL)
			e = drape_error_setf(err, DRAPE_ENOMEM, "cache: out of memory");
		uint64_t total = fb * w->written, done = 0;
		size_t chunk = (size_t)(fb < (1u << 20) ? fb : (1u << 20));
		while (e == DRAPE_OK && done < total) {
			size_t k = (size_t)(total - done < chunk ? total - done : chunk);
			ssize_t n = pread(w->fd, buf, k, (off_t)(from + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n != (ssize_t)k) {
				e = drape_error_setf(err, DRAPE_EIO, "%s: read back failed", w->path);
				break;
			}
			e = pwrite_all(w->fd, buf, k, to + done, w->path, err);
			done += k;
		}
		free(buf);
		unsigned char h[4];
		put_u32(h, w->written, true);
		if (e == DRAPE_OK)
			e = pwrite_all(w->fd, h, 4, 0, w->path, err);
		if (e == DRAPE_OK && ftruncate(w->fd, (off_t)(to + total)) != 0)
			e = drape_error_setf(err, DRAPE_EIO, "%s: truncate failed: %s", w->path, strerror(errno));
	}
	if (w->fd >= 0) {
		if (close(w->fd) != 0 && e == DRAPE_OK)
			e = drape_error_setf(err, DRAPE_EIO, "%s: close failed: %s", w->path, strerror(errno));
		w->fd = -1;
	}
	writer_free(w);
	return e;
}

/* ---- Frames ----------------------------------------------------------------- */

static drape_err write_pc2(drape_cache_writer *w, uint32_t index, const float *p, drape_error *err)
{
	uint64_t fb = (uint64_t)w->vertex_count * 12;
	drape_err e = DRAPE_OK;
	if (w->written == 0) {
		unsigned char s[4];
		put_f32(s, (float)index, false);
		e = pwrite_all(w->fd, s, 4, 20, w->path, err);
	}
	if (e == DRAPE_OK)
		e = write_floats(w, p, (size_t)w->vertex_count * 3, PC2_HEADER + fb * w->written, false, err);
	/* The sample count last: the header never counts a frame whose
	 * positions are not all in the file. */
	unsigned char c[4];
	put_u32(c, w->written + 1, false);
	if (e == DRAPE_OK)
		e = pwrite_all(w->fd, c, 4, 28, w->path, err);
	return e;
}

static drape_err write_mdd(drape_cache_writer *w, uint32_t index, const float *p, drape_error *err)
{
	uint64_t fb = (uint64_t)w->vertex_count * 12;
	/* Frame k is at k / fps seconds; the header's times follow the
	 * frames written (the slots after them are overwritten or dropped). */
	unsigned char t[4];
	put_f32(t, (float)index / w->fps, true);
	drape_err e = pwrite_all(w->fd, t, 4, 8 + 4 * (uint64_t)w->written, w->path, err);
	if (e == DRAPE_OK)
		e = write_floats(w, p, (size_t)w->vertex_count * 3,
				 8 + 4 * (uint64_t)w->frame_count + fb * w->written, true, err);
	return e;
}

static void geo_tuples(text *t, const float *a, const float *b, uint32_t n, float fps)
{
	for (uint32_t i = 0; i < n; i++) {
		float x = a[3 * i], y = a[3 * i + 1], z = a[3 * i + 2];
		if (b != NULL) {
			x = (x - b[3 * i]) * fps;
			y = (y - b[3 * i + 1]) * fps;
			z = (z - b[3 * i + 2]) * fps;
		} else if (fps == 0.0f) {
			x = y = z = 0.0f;
		}
		text_printf(t, "%s[%.9g,%.9g,%.9g]", i ? "," : "", (double)x, (double)y, (double)z);
	}
}

static void geo_attribute(text *t, const char *name, const char *type, const float *a, const float *b,
			  uint32_t n, float fps)
{
	text_printf(t,
		    "[[\"scope\",\"public\",\"type\",\"numeric\",\"name\",\"%s\",\"options\",{\"type\":{"
		    "\"type\":\"string\",\"value\":\"%s\"}}],\n"
		    "[\"size\",3,\"storage\",\"fpreal32\",\"defaults\",[\"size\",1,\"storage\",\"fpreal64\","
		    "\"values\",[0]],\n\"values\",[\"size\",3,\"storage\",\"fpreal32\",\"tuples\",[",
		    name, type);
	geo_tuples(t, a, b, n, fps);
	text_str(t, "]]]]");
}

/* Houdini's JSON geometry: a flat array of key, value pairs; topology maps
 * each vertex (triangle corner) to a point; P and v are point attributes;
 * the triangles are one run of polygons of 3 vertices. */
static drape_err write_geo(drape_cache_writer *w, uint32_t index, const float *p, drape_error *err)
{
	text t = {0};
	uint32_t n = w->vertex_count, tc = w->triangle_count;
	text_printf(&t,
		    "[\"fileversion\",\"18.5.0\",\"hasindex\",false,\"pointcount\",%u,\"vertexcount\",%u,"
		    "\"primitivecount\",%u,\n\"info\",{\"software\":\"drape\",\"frame\":%u},\n"
		    "\"topology\",[\"pointref\",[\"indices\",[",
		    n, tc * 3, tc, index);
	for (size_t i = 0; i < (size_t)tc * 3; i++)
		text_printf(&t, "%s%u", i ? "," : "", w->triangles[i]);
	text_str(&t, "]]],\n\"attributes\",[\"pointattributes\",[\n");
	geo_attribute(&t, "P", "point", p, NULL, n, 1.0f);
	text_str(&t, ",\n");
	geo_attribute(&t, "v", "vector", p, w->have_previous ? w->previous : NULL, n,
		      w->have_previous ? w->fps : 0.0f);
	text_str(&t, "\n]],\n\"primitives\",[");
	if (tc > 0)
		text_printf(&t,
			    "[[\"type\",\"Polygon_run\"],[\"startvertex\",0,\"nprimitives\",%u,"
			    "\"nvertices_rle\",[3,%u]]]",
			    tc, tc);
	text_str(&t, "]\n]\n");
	drape_err e;
	if (t.oom) {
		e = drape_error_setf(err, DRAPE_ENOMEM, "geo: out of memory for frame %u", index);
	} else {
		char path[4096];
		snprintf(path, sizeof path, "%s/frame_%04u.geo", w->dir, index);
		e = write_whole(path, t.p, t.len, err);
	}
	free(t.p);
	if (e == DRAPE_OK) {
		memcpy(w->previous, p, (size_t)n * 3 * sizeof(float));
		w->have_previous = true;
	}
	return e;
}

static drape_err write_obj(drape_cache_writer *w, uint32_t index, const float *p, drape_error *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/frame_%04u.obj", w->dir, index);
	if (w->tmpl == NULL)
		return drape_obj_write_file(path, p, w->vertex_count, w->triangles, w->triangle_count, err);
	char *buf;
	size_t len;
	drape_err e = cache_obj_template_format(w->tmpl, p, &buf, &len, err);
	if (e != DRAPE_OK)
		return e;
	e = write_whole(path, buf, len, err);
	free(buf);
	return e;
}

drape_err drape_cache_write_frame(drape_cache_writer *w, uint32_t index, const float *positions,
				  drape_error *err)
{
	if (w == NULL || positions == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "cache: no writer or no positions");
	if (index == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "index: 0; frames are numbered from 1");
	if (w->written > 0 && index != w->last + 1)
		return drape_error_setf(err, DRAPE_EINVAL, "index: frame %u after frame %u; frames must follow "
					"each other", index, w->last);
	if (w->format == DRAPE_CACHE_MDD && w->written >= w->frame_count)
		return drape_error_setf(err, DRAPE_EINVAL, "index: frame %u is past the %u frames declared",
					index, w->frame_count);
	drape_err e = check_positions(positions, w->vertex_count, err);
	if (e != DRAPE_OK)
		return e;
	switch (w->format) {
	case DRAPE_CACHE_PC2:
		e = write_pc2(w, index, positions, err);
		break;
	case DRAPE_CACHE_MDD:
		e = write_mdd(w, index, positions, err);
		break;
	case DRAPE_CACHE_GEO:
		e = write_geo(w, index, positions, err);
		break;
	default:
		e = write_obj(w, index, positions, err);
		break;
	}
	if (e != DRAPE_OK)
		return e;
	if (w->written == 0)
		w->first = index;
	w->written++;
	w->last = index;
	return DRAPE_OK;
}
