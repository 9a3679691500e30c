/* Vertex animation readers: PC2, MDD and OBJ sequences (pointcache.h). */
#include "client/pointcache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/obj.h"
#include "client/readfile.h"

void drape_anim_limits_default(drape_anim_limits *l)
{
	l->max_vertices = 16000000u;
	l->max_samples = 1000000u;
	l->max_bytes = (uint64_t)16 << 30;
}

void drape_anim_free(drape_anim *a)
{
	if (a == NULL)
		return;
	free(a->positions);
	free(a->times);
	memset(a, 0, sizeof *a);
}

static const drape_anim_limits *pc_limits(const drape_anim_limits *l, drape_anim_limits *store)
{
	if (l != NULL)
		return l;
	drape_anim_limits_default(store);
	return store;
}

static uint32_t rd_u32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t rd_u32be(const uint8_t *p)
{
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static float f32_of(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* Checks the header's counts: at least 1, within the limits. */
static drape_err pc_check_counts(const char *name, const char *vfield, const char *sfield, int64_t points,
				 int64_t samples, const drape_anim_limits *lim, drape_error *err)
{
	if (points < 1)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: %s: %lld, must be at least 1", name, vfield,
					(long long)points);
	if (samples < 1)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: %s: %lld, must be at least 1", name, sfield,
					(long long)samples);
	if ((uint64_t)points > lim->max_vertices)
		return drape_error_setf(err, DRAPE_ELIMIT, "%s: %s: %lld exceeds the limit of %u vertices", name,
					vfield, (long long)points, (unsigned)lim->max_vertices);
	if ((uint64_t)samples > lim->max_samples)
		return drape_error_setf(err, DRAPE_ELIMIT, "%s: %s: %lld exceeds the limit of %u samples", name,
					sfield, (long long)samples, (unsigned)lim->max_samples);
	/* Both below 2^31, so the product fits in 64 bits with room. */
	const uint64_t bytes = (uint64_t)points * (uint64_t)samples * 12u;
	if (bytes > lim->max_bytes)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"%s: %lld samples of %lld vertices are %llu bytes, over the limit of %llu",
					name, (long long)samples, (long long)points, (unsigned long long)bytes,
					(unsigned long long)lim->max_bytes);
	return DRAPE_OK;
}

/* Converts n float32 (little- or big-endian) into dst, refusing a
 * non-finite one with the sample, vertex and component it belongs to. */
static drape_err pc_floats(const uint8_t *src, float *dst, uint64_t n, uint32_t points, int big, const char *name,
			   drape_error *err)
{
	static const char axis[3] = {'x', 'y', 'z'};
	for (uint64_t i = 0; i < n; i++) {
		const uint32_t bits = big ? rd_u32be(src + i * 4) : rd_u32le(src + i * 4);
		const float f = f32_of(bits);
		if (!isfinite(f)) {
			const uint64_t v = i / 3;
			return drape_error_setf(err, DRAPE_ENONFINITE,
						"%s: samples[%llu].points[%llu].%c: not a finite number", name,
						(unsigned long long)(v / points), (unsigned long long)(v % points),
						axis[i % 3]);
		}
		dst[i] = f;
	}
	return DRAPE_OK;
}

drape_err drape_pc2_read_buffer(const void *data, size_t len, const char *name, const drape_anim_limits *limits,
				drape_anim *out, drape_error *err)
{
	drape_anim_limits ls;
	const drape_anim_limits *lim = pc_limits(limits, &ls);
	const uint8_t *b = data;
	if (name == NULL)
		name = "<buffer>";
	if (len < DRAPE_PC2_HEADER_SIZE)
		return drape_error_setf(err, DRAPE_ETRUNCATED, "%s: header: %zu bytes, a PC2 header is %d", name, len,
					DRAPE_PC2_HEADER_SIZE);
	if (memcmp(b, "POINTCACHE2\0", 12) != 0)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: header.signature: not \"POINTCACHE2\" (not a PC2 file)",
					name);
	const int32_t version = (int32_t)rd_u32le(b + 12);
	const int32_t points = (int32_t)rd_u32le(b + 16);
	const float start = f32_of(rd_u32le(b + 20));
	const float rate = f32_of(rd_u32le(b + 24));
	const int32_t samples = (int32_t)rd_u32le(b + 28);
	if (version != 1)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: header.version: %d, only version 1 is known", name,
					(int)version);
	drape_err rc = pc_check_counts(name, "header.points", "header.samples", points, samples, lim, err);
	if (rc != DRAPE_OK)
		return rc;
	if (!isfinite(start))
		return drape_error_setf(err, DRAPE_ENONFINITE, "%s: header.start_frame: not a finite number", name);
	if (!isfinite(rate) || !(rate > 0.0f))
		return drape_error_setf(err, DRAPE_EINVAL, "%s: header.sample_rate: %g, must be a finite number > 0",
					name, (double)rate);
	const uint64_t n = (uint64_t)points * (uint64_t)samples * 3u;
	const uint64_t want = DRAPE_PC2_HEADER_SIZE + n * 4u;
	if ((uint64_t)len != want)
		return drape_error_setf(err, (uint64_t)len < want ? DRAPE_ETRUNCATED : DRAPE_EINVAL,
					"%s: size: %zu bytes, the header's %d samples of %d points need %llu", name,
					len, (int)samples, (int)points, (unsigned long long)want);
	float *pos = malloc((size_t)n * sizeof *pos);
	if (pos == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", name);
	rc = pc_floats(b + DRAPE_PC2_HEADER_SIZE, pos, n, (uint32_t)points, 0, name, err);
	if (rc != DRAPE_OK) {
		free(pos);
		return rc;
	}
	memset(out, 0, sizeof *out);
	out->format = DRAPE_ANIM_PC2;
	out->positions = pos;
	out->vertex_count = (uint32_t)points;
	out->sample_count = (uint32_t)samples;
	out->start = start;
	out->rate = rate;
	return DRAPE_OK;
}

drape_err drape_mdd_read_buffer(const void *data, size_t len, const char *name, const drape_anim_limits *limits,
				drape_anim *out, drape_error *err)
{
	drape_anim_limits ls;
	const drape_anim_limits *lim = pc_limits(limits, &ls);
	const uint8_t *b = data;
	if (name == NULL)
		name = "<buffer>";
	if (len < 8)
		return drape_error_setf(err, DRAPE_ETRUNCATED, "%s: header: %zu bytes, an MDD header is 8", name, len);
	const int32_t frames = (int32_t)rd_u32be(b);
	const int32_t points = (int32_t)rd_u32be(b + 4);
	drape_err rc = pc_check_counts(name, "header.points", "header.frames", points, frames, lim, err);
	if (rc != DRAPE_OK)
		return rc;
	const uint64_t n = (uint64_t)points * (uint64_t)frames * 3u;
	const uint64_t want = 8u + (uint64_t)frames * 4u + n * 4u;
	if ((uint64_t)len != want)
		return drape_error_setf(err, (uint64_t)len < want ? DRAPE_ETRUNCATED : DRAPE_EINVAL,
					"%s: size: %zu bytes, the header's %d frames of %d points need %llu", name,
					len, (int)frames, (int)points, (unsigned long long)want);
	float *times = malloc((size_t)frames * sizeof *times);
	float *pos = malloc((size_t)n * sizeof *pos);
	if (times == NULL || pos == NULL) {
		free(times);
		free(pos);
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", name);
	}
	for (int32_t i = 0; i < frames; i++) {
		times[i] = f32_of(rd_u32be(b + 8 + (size_t)i * 4));
		if (!isfinite(times[i])) {
			rc = drape_error_setf(err, DRAPE_ENONFINITE, "%s: times[%d]: not a finite number", name, (int)i);
			break;
		}
		if (i > 0 && !(times[i] > times[i - 1])) {
			rc = drape_error_setf(err, DRAPE_EINVAL,
					      "%s: times[%d]: %g s is not after times[%d] = %g s (times must increase)",
					      name, (int)i, (double)times[i], (int)i - 1, (double)times[i - 1]);
			break;
		}
	}
	if (rc == DRAPE_OK)
		rc = pc_floats(b + 8 + (size_t)frames * 4, pos, n, (uint32_t)points, 1, name, err);
	if (rc != DRAPE_OK) {
		free(times);
		free(pos);
		return rc;
	}
	memset(out, 0, sizeof *out);
	out->format = DRAPE_ANIM_MDD;
	out->positions = pos;
	out->times = times;
	out->vertex_count = (uint32_t)points;
	out->sample_count = (uint32_t)frames;
	return DRAPE_OK;
}

/* Headers plus the largest positions block the limits allow. */
static uint64_t pc_max_file(const drape_anim_limits *lim)
{
	return lim->max_bytes + (uint64_t)lim->max_samples * 4u + 64u;
}

drape_err drape_pc2_read_file(const char *path, const drape_anim_limits *limits, drape_anim *out,
			      drape_error *err)
{
	drape_anim_limits ls;
	const drape_anim_limits *lim = pc_limits(limits, &ls);
	char *buf;
	size_t len;
	drape_err rc = readfile_whole(path, pc_max_file(lim), "point cache", &buf, &len, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = drape_pc2_read_buffer((const uint8_t *)buf, len, path, lim, out, err);
	free(buf);
	return rc;
}

drape_err drape_mdd_read_file(const char *path, const drape_anim_limits *limits, drape_anim *out,
			      drape_error *err)
{
	drape_anim_limits ls;
	const drape_anim_limits *lim = pc_limits(limits, &ls);
	char *buf;
	size_t len;
	drape_err rc = readfile_whole(path, pc_max_file(lim), "point cache", &buf, &len, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = drape_mdd_read_buffer((const uint8_t *)buf, len, path, lim, out, err);
	free(buf);
	return rc;
}

/* ---- OBJ sequences ---------------------------------------------------------------- */

/* The parts of a pattern: dir, the file name before and after the one
 * conversion (with %% made %), and the conversion's width (0 = any). */
typedef struct pc_pattern {
	char dir[4096];
	char pre[512], post[512];
	int width;
	int zero;
} pc_pattern;

static drape_err pc_parse_pattern(const char *pattern, pc_pattern *p, drape_error *err)
{
	memset(p, 0, sizeof *p);
	const char *slash = strrchr(pattern, '/');
	const char *file = slash ? slash + 1 : pattern;
	if (slash != NULL) {
		size_t dl = (size_t)(slash - pattern);
		if (dl == 0)
			dl = 1; /* "/body_%d.obj" */
		if (dl >= sizeof p->dir)
			return drape_error_setf(err, DRAPE_EINVAL, "%s: the folder name is too long", pattern);
		memcpy(p->dir, pattern, dl);
		p->dir[dl] = '\0';
		if (memchr(pattern, '%', dl) != NULL)
			return drape_error_setf(err, DRAPE_EINVAL,
						"%s: the folder part may not hold a %% conversion, only the file name",
						pattern);
	} else {
		strcpy(p->dir, ".");
	}
	int convs = 0;
	size_t pl = 0, ql = 0;
	for (const char *s = file; *s; s++) {
		char ch = *s;
		if (ch == '%') {
			s++;
			if (*s == '%') {
				ch = '%';
			} else {
				if (*s == '0') {
					p->zero = 1;
					s++;
				}
				int w = 0;
				while (isdigit((unsigned char)*s) && w < 100)
					w = w * 10 + (*s++ - '0');
				if (*s != 'd' && *s != 'i' && *s != 'u')
					return drape_error_setf(err, DRAPE_EINVAL,
								"%s: only %%d, %%Nd or %%0Nd conversions are allowed "
								"in a sequence pattern",
								pattern);
				if (w > 12)
					return drape_error_setf(err, DRAPE_EINVAL, "%s: frame number width %d is over 12",
								pattern, w);
				p->width = w;
				convs++;
				continue;
			}
		}
		char *dst = convs == 0 ? p->pre : p->post;
		size_t *l = convs == 0 ? &pl : &ql;
		if (*l + 1 >= sizeof p->pre)
			return drape_error_setf(err, DRAPE_EINVAL, "%s: the file name is too long", pattern);
		dst[(*l)++] = ch;
		dst[*l] = '\0';
	}
	if (convs != 1)
		return drape_error_setf(err, DRAPE_EINVAL,
					"%s: a sequence pattern needs exactly one frame number conversion such as "
					"%%04d, found %d",
					pattern, convs);
	return DRAPE_OK;
}

/* The frame number of a directory entry matching the pattern, or -1. */
static long long pc_match(const pc_pattern *p, const char *name)
{
	size_t nl = strlen(name), pl = strlen(p->pre), ql = strlen(p->post);
	if (nl <= pl + ql || strncmp(name, p->pre, pl) != 0 || strcmp(name + nl - ql, p->post) != 0)
		return -1;
	const char *d = name + pl;
	size_t dl = nl - pl - ql;
	if (dl > 12)
		return -1;
	long long v = 0;
	for (size_t i = 0; i < dl; i++) {
		if (!isdigit((unsigned char)d[i]))
			return -1;
		v = v * 10 + (d[i] - '0');
	}
	/* The name must be what the pattern prints for v, so "body_01.obj"
	 * does not join a %04d sequence. */
	char buf[32];
	if (p->zero)
		snprintf(buf, sizeof buf, "%0*lld", p->width, v);
	else
		snprintf(buf, sizeof buf, "%*lld", p->width, v);
	if (strlen(buf) != dl || memcmp(buf, d, dl) != 0)
		return -1;
	return v;
}

static int pc_cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* Room for dir, '/', pre, a number, post and the NUL. */
#define PC_PATH_MAX (sizeof(((pc_pattern *)0)->dir) + 2 * sizeof(((pc_pattern *)0)->pre) + 32)

static void pc_file_name(const pc_pattern *p, long long v, char *out, size_t n)
{
	if (p->zero)
		snprintf(out, n, "%s/%s%0*lld%s", p->dir, p->pre, p->width, v, p->post);
	else
		snprintf(out, n, "%s/%s%*lld%s", p->dir, p->pre, p->width, v, p->post);
}

drape_err drape_objseq_read(const char *pattern, const drape_anim_limits *limits, drape_anim *out,
			    drape_error *err)
{
	drape_anim_limits ls;
	const drape_anim_limits *lim = pc_limits(limits, &ls);
	pc_pattern *p = malloc(sizeof *p);
	if (p == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", pattern);
	drape_err rc = pc_parse_pattern(pattern, p, err);
	if (rc != DRAPE_OK) {
		free(p);
		return rc;
	}
	DIR *dir = opendir(p->dir);
	if (dir == NULL) {
		rc = drape_error_setf(err, errno == ENOENT ? DRAPE_ENOTFOUND : DRAPE_EIO, "%s: cannot open folder %s: %s",
				      pattern, p->dir, strerror(errno));
		free(p);
		return rc;
	}
	long long *nums = NULL;
	size_t count = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		long long v = pc_match(p, de->d_name);
		if (v < 0)
			continue;
		if (count >= lim->max_samples) {
			rc = drape_error_setf(err, DRAPE_ELIMIT, "%s: more than %u files match", pattern,
					      (unsigned)lim->max_samples);
			break;
		}
		if (count == cap) {
			size_t nc = cap ? cap * 2 : 64;
			long long *nn = realloc(nums, nc * sizeof *nn);
			if (nn == NULL) {
				rc = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", pattern);
				break;
			}
			nums = nn;
			cap = nc;
		}
		nums[count++] = v;
	}
	closedir(dir);
	if (rc == DRAPE_OK && count == 0)
		rc = drape_error_setf(err, DRAPE_ENOTFOUND, "%s: no file matches the pattern", pattern);
	if (rc == DRAPE_OK) {
		qsort(nums, count, sizeof *nums, pc_cmp_ll);
		for (size_t i = 1; i < count && rc == DRAPE_OK; i++) {
			if (nums[i] != nums[i - 1] + 1) {
				char missing[PC_PATH_MAX];
				pc_file_name(p, nums[i - 1] + 1, missing, sizeof missing);
				rc = drape_error_setf(err, DRAPE_EINVAL,
						      "%s: frames must be numbered consecutively: %s is missing "
						      "(the sequence has %lld and %lld)",
						      pattern, missing, nums[i - 1], nums[i]);
			}
		}
	}
	if (rc == DRAPE_OK && (nums[0] > 16777216 || nums[count - 1] > 16777216))
		rc = drape_error_setf(err, DRAPE_ERANGE, "%s: frame number %lld is too large", pattern,
				      nums[count - 1]);
	float *pos = NULL;
	drape_obj_mesh first;
	memset(&first, 0, sizeof first);
	drape_obj_limits ol;
	drape_obj_limits_default(&ol);
	ol.max_vertices = lim->max_vertices;
	for (size_t i = 0; i < count && rc == DRAPE_OK; i++) {
		char path[PC_PATH_MAX];
		pc_file_name(p, nums[i], path, sizeof path);
		drape_obj_mesh m;
		rc = drape_obj_read_file(path, &ol, &m, err);
		if (rc != DRAPE_OK)
			break;
		if (i == 0) {
			const uint64_t bytes = (uint64_t)m.vertex_count * count * 12u;
			if (bytes > lim->max_bytes) {
				rc = drape_error_setf(err, DRAPE_ELIMIT,
						      "%s: %zu frames of %u vertices are %llu bytes, over the limit of %llu",
						      pattern, count, (unsigned)m.vertex_count, (unsigned long long)bytes,
						      (unsigned long long)lim->max_bytes);
			} else if (m.vertex_count == 0) {
				rc = drape_error_setf(err, DRAPE_EINVAL, "%s: vertices: none", path);
			} else if ((pos = malloc((size_t)bytes)) == NULL) {
				rc = drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", pattern);
			}
			if (rc != DRAPE_OK) {
				drape_obj_free(&m);
				break;
			}
			first = m;
		} else if (m.vertex_count != first.vertex_count) {
			rc = drape_error_setf(err, DRAPE_EINVAL, "%s: vertices: %u, the sequence's first file has %u", path,
					      (unsigned)m.vertex_count, (unsigned)first.vertex_count);
		} else if (m.triangle_count != first.triangle_count ||
			   memcmp(m.triangles, first.triangles, (size_t)m.triangle_count * 3 * sizeof *m.triangles) != 0) {
			rc = drape_error_setf(err, DRAPE_EINVAL,
					      "%s: faces: not the faces of the sequence's first file (a deforming "
					      "mesh keeps its topology)",
					      path);
		}
		if (rc == DRAPE_OK)
			memcpy(pos + i * (size_t)first.vertex_count * 3, m.positions,
			       (size_t)first.vertex_count * 3 * sizeof *pos);
		if (i > 0)
			drape_obj_free(&m);
	}
	if (rc == DRAPE_OK) {
		memset(out, 0, sizeof *out);
		out->format = DRAPE_ANIM_OBJSEQ;
		out->positions = pos;
		out->vertex_count = first.vertex_count;
		out->sample_count = (uint32_t)count;
		out->start = (float)nums[0];
		out->rate = 1.0f;
		pos = NULL;
	}
	drape_obj_free(&first);
	free(pos);
	free(nums);
	free(p);
	return rc;
}

/* ---- By name, and resampling ------------------------------------------------------ */

static int pc_ends_with(const char *s, const char *ext)
{
	size_t n = strlen(s), e = strlen(ext);
	return n >= e && strcasecmp(s + n - e, ext) == 0;
}

drape_err drape_anim_read_file(const char *path, const drape_anim_limits *limits, drape_anim *out,
			       drape_error *err)
{
	const char *file = strrchr(path, '/');
	file = file ? file + 1 : path;
	for (const char *s = strchr(file, '%'); s != NULL; s = strchr(s + 2, '%')) {
		if (s[1] != '%')
			return drape_objseq_read(path, limits, out, err);
	}
	if (pc_ends_with(path, ".pc2"))
		return drape_pc2_read_file(path, limits, out, err);
	if (pc_ends_with(path, ".mdd"))
		return drape_mdd_read_file(path, limits, out, err);
	return drape_error_setf(err, DRAPE_EINVAL,
				"%s: not a known animation (a .pc2 or .mdd file, or an OBJ sequence pattern such as "
				"body_%%04d.obj)",
				path);
}

double drape_anim_sample_frame(const drape_anim *a, uint32_t j, double fps)
{
	if (a->times != NULL)
		return (double)a->times[j] * fps;
	return (double)a->start + (double)j * (double)a->rate;
}

drape_err drape_anim_resample(const drape_anim *a, double fps, const char *name, float **frames,
			      uint32_t *count, uint32_t *first, drape_error *err)
{
	if (name == NULL)
		name = "animation";
	if (!(fps > 0.0) || !isfinite(fps))
		return drape_error_setf(err, DRAPE_EINVAL, "%s: fps %g must be > 0", name, fps);
	const double f0 = drape_anim_sample_frame(a, 0, fps);
	const double f1 = drape_anim_sample_frame(a, a->sample_count - 1, fps);
	if (f1 < 0.0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"%s: the animation ends at frame %g, before the simulation starts (frame 0)", name,
					f1);
	const double k0d = ceil(f0 < 0.0 ? 0.0 : f0), k1d = floor(f1);
	if (k1d < k0d)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: the animation (frames %g to %g) holds no whole frame",
					name, f0, f1);
	if (k1d > 16777216.0)
		return drape_error_setf(err, DRAPE_ERANGE, "%s: the animation ends at frame %g, past 16777216", name,
					f1);
	const uint32_t k0 = (uint32_t)k0d, n = (uint32_t)(k1d - k0d) + 1u;
	const size_t per = (size_t)a->vertex_count * 3;
	float *out = malloc((size_t)n * per * sizeof *out);
	if (out == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", name);
	uint32_t j = 0;
	for (uint32_t i = 0; i < n; i++) {
		const double k = (double)(k0 + i);
		while (j + 1 < a->sample_count && drape_anim_sample_frame(a, j + 1, fps) <= k)
			j++;
		float *dst = out + (size_t)i * per;
		const float *p0 = a->positions + (size_t)j * per;
		const double fj = drape_anim_sample_frame(a, j, fps);
		if (fj == k || j + 1 >= a->sample_count) {
			memcpy(dst, p0, per * sizeof *dst);
			continue;
		}
		const float *p1 = p0 + per;
		const double fn = drape_anim_sample_frame(a, j + 1, fps);
		const float t = (float)((k - fj) / (fn - fj));
		for (size_t q = 0; q < per; q++)
			dst[q] = p0[q] + t * (p1[q] - p0[q]);
	}
	*frames = out;
	*count = n;
	*first = k0;
	return DRAPE_OK;
}
