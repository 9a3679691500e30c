/*
 * The source OBJ of a cloth as a template for its frames (objtemplate.h).
 */
#include "client/objtemplate.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest source read: the OBJ reader's own default limit. */
#define TEMPLATE_MAX_BYTES (4ull << 30)

struct cache_obj_template {
	uint32_t vertex_count;
	char *text;            /* the kept statements, faces rewritten */
	size_t text_len;
	uint32_t *face_start;  /* face_count + 1 offsets into corners */
	uint32_t face_count;
	uint32_t *corners;     /* 0-based vertex index per face corner */
};

typedef struct growbuf {
	char *p;
	size_t len, cap;
} growbuf;

static bool grow_put(growbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL)
			return false;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static bool grow_u32(uint32_t **a, uint32_t *len, uint32_t *cap, uint32_t v)
{
	if (*len == *cap) {
		if (*cap > UINT32_MAX / 2)
			return false;
		uint32_t nc = *cap ? *cap * 2 : 1024;
		uint32_t *p = realloc(*a, (size_t)nc * sizeof *p);
		if (p == NULL)
			return false;
		*a = p;
		*cap = nc;
	}
	(*a)[(*len)++] = v;
	return true;
}

void cache_obj_template_free(cache_obj_template *t)
{
	if (t == NULL)
		return;
	free(t->text);
	free(t->face_start);
	free(t->corners);
	free(t);
}

/* Parses an OBJ index (1-based, or negative counting back from `count`
 * items defined so far) into a 1-based absolute index; false if malformed
 * or out of 1..count. */
static bool parse_index(const char *s, size_t n, uint32_t count, uint32_t *out)
{
	if (n == 0 || n > 11)
		return false;
	char buf[16];
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	if (v < 0)
		v = (long long)count + v + 1;
	if (v < 1 || v > (long long)count)
		return false;
	*out = (uint32_t)v;
	return true;
}

static char *read_source(const char *path, size_t *len, drape_error *err, drape_err *e)
{
	struct stat sb;
	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		*e = drape_error_setf(err, DRAPE_EIO, "%s: not a readable regular file", path);
		return NULL;
	}
	if ((unsigned long long)sb.st_size > TEMPLATE_MAX_BYTES) {
		*e = drape_error_setf(err, DRAPE_ELIMIT, "%s: larger than 4 GiB", path);
		return NULL;
	}
	FILE *f = fopen(path, "rb");
	char *buf = f ? malloc((size_t)sb.st_size + 1) : NULL;
	size_t n = buf ? fread(buf, 1, (size_t)sb.st_size, f) : 0;
	if (f != NULL)
		fclose(f);
	if (buf == NULL || n != (size_t)sb.st_size) {
		free(buf);
		*e = drape_error_setf(err, f ? DRAPE_EIO : DRAPE_EIO, "%s: cannot read: %s", path,
				      f ? "short read" : strerror(errno));
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

drape_err cache_obj_template_load(const char *path, uint32_t vertex_count, cache_obj_template **out,
				  drape_error *err)
{
	drape_err e = DRAPE_OK;
	size_t len;
	char *src = read_source(path, &len, err, &e);
	if (src == NULL)
		return e;
	cache_obj_template *t = calloc(1, sizeof *t);
	growbuf g = {0};
	uint32_t corner_len = 0, corner_cap = 0, face_len = 0, face_cap = 0;
	uint32_t v_seen = 0, vt_seen = 0;
	if (t == NULL) {
		e = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
		goto done;
	}
	size_t line_no = 0;
	for (size_t pos = 0; pos < len && e == DRAPE_OK;) {
		size_t eol = pos;
		while (eol < len && src[eol] != '\n')
			eol++;
		size_t next = eol < len ? eol + 1 : eol;
		size_t end = eol;
		if (end > pos && src[end - 1] == '\r')
			end--;
		line_no++;
		const char *l = src + pos;
		size_t n = end - pos;
		size_t k = 0;
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		size_t kw = k;
		while (k < n && l[k] != ' ' && l[k] != '\t')
			k++;
		size_t kwlen = k - kw;
		if (n > 0 && l[n - 1] == '\\') {
			e = drape_error_setf(err, DRAPE_EPARSE, "%s:%zu: continued lines are not supported",
					     path, line_no);
			break;
		}
#define KW(s) (kwlen == sizeof(s) - 1 && memcmp(l + kw, s, kwlen) == 0)
		if (KW("v")) {
			v_seen++;
		} else if (KW("vn") || KW("l") || KW("p")) {
			/* Normals are recomputed; polylines and points are
			 * not part of the cloth. */
		} else if (KW("f")) {
			if (!grow_u32(&t->face_start, &face_len, &face_cap, corner_len)) {
				e = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
				break;
			}
			bool ok = grow_put(&g, "f", 1);
			uint32_t corners = 0;
			while (ok && e == DRAPE_OK) {
				while (k < n && (l[k] == ' ' || l[k] == '\t'))
					k++;
				if (k >= n)
					break;
				size_t a = k;
				while (k < n && l[k] != ' ' && l[k] != '\t')
					k++;
				const char *c = l + a;
				size_t cn = k - a;
				const char *s1 = memchr(c, '/', cn);
				size_t vn = s1 ? (size_t)(s1 - c) : cn;
				uint32_t vi, ti = 0;
				if (!parse_index(c, vn, v_seen, &vi)) {
					e = drape_error_setf(err, DRAPE_EPARSE, "%s:%zu: face vertex '%.*s' has no "
							     "position index in 1..%u", path, line_no,
							     (int)(cn > 40 ? 40 : cn), c, v_seen);
					break;
				}
				if (s1 != NULL) {
					const char *tt = s1 + 1;
					const char *s2 = memchr(tt, '/', (size_t)(c + cn - tt));
					size_t tn = s2 ? (size_t)(s2 - tt) : (size_t)(c + cn - tt);
					if (tn > 0 && !parse_index(tt, tn, vt_seen, &ti)) {
						e = drape_error_setf(err, DRAPE_EPARSE,
								     "%s:%zu: face vertex '%.*s': texture index "
								     "not in 1..%u", path, line_no,
								     (int)(cn > 40 ? 40 : cn), c, vt_seen);
						break;
					}
				}
				char num[40];
				int m = ti ? snprintf(num, sizeof num, " %u/%u/%u", vi, ti, vi)
					   : snprintf(num, sizeof num, " %u//%u", vi, vi);
				ok = grow_put(&g, num, (size_t)m) &&
				     grow_u32(&t->corners, &corner_len, &corner_cap, vi - 1);
				corners++;
			}
			if (e == DRAPE_OK && corners < 3)
				e = drape_error_setf(err, DRAPE_EPARSE, "%s:%zu: a face needs at least 3 vertices",
						     path, line_no);
			if (e == DRAPE_OK && !(ok && grow_put(&g, "\n", 1)))
				e = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
		} else {
			if (KW("vt"))
				vt_seen++;
			if (n > 0 && !(grow_put(&g, l, n) && grow_put(&g, "\n", 1)))
				e = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
		}
#undef KW
		pos = next;
	}
	if (e == DRAPE_OK && v_seen != vertex_count)
		e = drape_error_setf(err, DRAPE_EINVAL, "%s: has %u vertices, the cloth has %u", path, v_seen,
				     vertex_count);
	if (e == DRAPE_OK && !grow_u32(&t->face_start, &face_len, &face_cap, corner_len))
		e = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
	if (e == DRAPE_OK && g.p == NULL && !grow_put(&g, "", 0))
		e = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
done:
	free(src);
	if (e != DRAPE_OK) {
		free(g.p);
		cache_obj_template_free(t);
		return e;
	}
	t->vertex_count = vertex_count;
	t->text = g.p;
	t->text_len = g.len;
	t->face_count = face_len - 1;
	*out = t;
	return DRAPE_OK;
}

drape_err cache_obj_template_format(const cache_obj_template *t, const float *p, char **out, size_t *len,
				    drape_error *err)
{
	size_t n = t->vertex_count;
	float *nrm = calloc(n * 3, sizeof *nrm);
	/* A "v" or "vn" line is at most 3 x 16 characters plus 5. */
	size_t cap = n * 2 * 56 + t->text_len + 64;
	char *buf = malloc(cap);
	if (nrm == NULL || buf == NULL) {
		free(nrm);
		free(buf);
		return drape_error_setf(err, DRAPE_ENOMEM, "obj: out of memory for %zu vertices", n);
	}
	/* Newell's normal of each face (twice its area along its normal, for
	 * any planar or near-planar polygon), added to each of its vertices. */
	for (uint32_t f = 0; f < t->face_count; f++) {
		uint32_t a = t->face_start[f], b = t->face_start[f + 1];
		float nx = 0.0f, ny = 0.0f, nz = 0.0f;
		for (uint32_t i = a; i < b; i++) {
			const float *c = p + 3 * (size_t)t->corners[i];
			const float *d = p + 3 * (size_t)t->corners[i + 1 < b ? i + 1 : a];
			nx += (c[1] - d[1]) * (c[2] + d[2]);
			ny += (c[2] - d[2]) * (c[0] + d[0]);
			nz += (c[0] - d[0]) * (c[1] + d[1]);
		}
		for (uint32_t i = a; i < b; i++) {
			float *m = nrm + 3 * (size_t)t->corners[i];
			m[0] += nx;
			m[1] += ny;
			m[2] += nz;
		}
	}
	size_t o = 0;
	o += (size_t)snprintf(buf + o, cap - o, "# drape: positions and normals of one frame\n");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, cap - o, "v %.9g %.9g %.9g\n", (double)p[3 * i],
				      (double)p[3 * i + 1], (double)p[3 * i + 2]);
	for (size_t i = 0; i < n; i++) {
		float *m = nrm + 3 * i;
		float l = sqrtf(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
		if (l > 0.0f && isfinite(l)) {
			m[0] /= l;
			m[1] /= l;
			m[2] /= l;
		} else {
			/* A vertex in no face, or only in degenerate ones. */
			m[0] = 0.0f;
			m[1] = 0.0f;
			m[2] = 1.0f;
		}
		o += (size_t)snprintf(buf + o, cap - o, "vn %.6g %.6g %.6g\n", (double)m[0], (double)m[1],
				      (double)m[2]);
	}
	memcpy(buf + o, t->text, t->text_len);
	o += t->text_len;
	buf[o] = '\0';
	free(nrm);
	*out = buf;
	*len = o;
	return DRAPE_OK;
}
