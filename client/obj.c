/* Wavefront OBJ reading and writing; see obj.h for the accepted dialect. */
#include "client/obj.h"
#include "client/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* More names than this on one `g` line are refused: each name multiplies the
 * memory the face's vertices take in the group lists. */
#define OBJ_MAX_NAMES_PER_LINE 32
#define OBJ_MAX_NAME_LEN 1024

void drape_obj_limits_default(drape_obj_limits *l)
{
	l->max_vertices = 16000000u;
	l->max_triangles = 32000000u;
	l->max_groups = 100000u;
	l->max_face_vertices = 65536u;
	l->max_bytes = 4ull << 30;
}

/* ---- Number parsing -------------------------------------------------------
 *
 * strtod follows LC_NUMERIC, so a host application (a DCC plugin) running in
 * a German locale would read "1.5" as 1. The reader parses through a private
 * "C" locale object instead, created once. */

static locale_t obj_c_locale;
static pthread_once_t obj_c_locale_once = PTHREAD_ONCE_INIT;

static void obj_make_c_locale(void)
{
	obj_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static double obj_strtod(const char *s, char **end)
{
	pthread_once(&obj_c_locale_once, obj_make_c_locale);
	if (obj_c_locale != (locale_t)0)
		return strtod_l(s, end, obj_c_locale);
	return strtod(s, end);
}

/* ---- Reader state --------------------------------------------------------- */

typedef struct obj_group_build {
	char *name;
	uint32_t *v;
	size_t n, cap;
} obj_group_build;

typedef struct obj_reader {
	const char *name;
	drape_obj_limits lim;
	drape_error *err;
	unsigned long lineno;

	float *pos;
	size_t nv, cap_v;
	uint32_t *tri;
	size_t nt, cap_t;
	uint32_t faces;

	float *vt;               /* `vt` lines: (u, v) pairs */
	size_t nvt, cap_vt;
	float *vuv;              /* per vertex: the (u, v) of its first face corner */
	unsigned char *vuv_state; /* per vertex: 0 none yet, 1 set, 2 set and on a seam */
	size_t nvuv, cap_vuv, cap_vuv_state;
	size_t uv_corners;       /* face corners that named a texture coordinate */
	size_t corners;          /* all face corners */
	uint32_t uv_seams;       /* vertices whose corners name different coordinates */

	obj_group_build *groups;
	size_t ngroups, cap_groups;
	uint32_t *slots; /* open-addressing hash of group indices + 1; 0 = empty */
	size_t nslots;
	uint32_t active[OBJ_MAX_NAMES_PER_LINE + 1];
	uint32_t nactive_g;      /* groups from the last `g` line */
	int64_t active_o;        /* group of the last `o` line, -1 if none */

	uint32_t *poly;          /* the current face's resolved indices */
	size_t cap_poly;
	int64_t *poly_vt;        /* the current face's texture indices, 0-based; -1 = none */
	size_t cap_poly_vt;
	float *ear_xy;           /* ear clipping scratch: 2D coordinates */
	int32_t *ear_next;
	size_t cap_ear, cap_next;

	char *line;              /* the current logical line, NUL-terminated */
	size_t cap_line;
} obj_reader;

static drape_err obj_fail(obj_reader *r, drape_err code, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static drape_err obj_fail(obj_reader *r, drape_err code, const char *fmt, ...)
{
	char msg[DRAPE_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->lineno > 0)
		return drape_error_setf(r->err, code, "%s:%lu: %s", r->name, r->lineno, msg);
	return drape_error_setf(r->err, code, "%s: %s", r->name, msg);
}

/* Grows *p (of element size `size`) to hold at least `need` elements,
 * doubling, so appends stay amortised O(1). */
static int obj_grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return -1;
	void *np = realloc(*p, ncap * size);
	if (np == NULL)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

static void obj_reader_free(obj_reader *r)
{
	free(r->pos);
	free(r->tri);
	free(r->vt);
	free(r->vuv);
	free(r->vuv_state);
	free(r->poly_vt);
	for (size_t i = 0; i < r->ngroups; i++) {
		free(r->groups[i].name);
		free(r->groups[i].v);
	}
	free(r->groups);
	free(r->slots);
	free(r->poly);
	free(r->ear_xy);
	free(r->ear_next);
	free(r->line);
}

/* ---- Tokens ---------------------------------------------------------------- */

static int obj_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Returns the next token of *s (advancing past it) with its length in *len,
 * or NULL at the end of the line. The scratch line is NUL-terminated and its
 * comment already cut, so a token ends at whitespace or NUL. */
static const char *obj_token(const char **s, size_t *len)
{
	const char *p = *s;
	while (obj_is_space(*p))
		p++;
	if (*p == '\0') {
		*s = p;
		return NULL;
	}
	const char *t = p;
	while (*p != '\0' && !obj_is_space(*p))
		p++;
	*len = (size_t)(p - t);
	*s = p;
	return t;
}

static int obj_tok_eq(const char *t, size_t len, const char *kw)
{
	return strlen(kw) == len && memcmp(t, kw, len) == 0;
}

static const double obj_exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
					 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
					 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * Clinger's fast path: a decimal with at most 2^53 as its digits and a power
 * of ten up to 10^22 (both exact doubles) is correctly rounded to double by
 * one multiplication or division. Rounding that double to float gives the
 * correctly rounded float unless the double sits exactly on a midpoint
 * between two floats (every midpoint is a double, so otherwise the double and
 * the exact value lie on the same side of it). Anything else returns 0 and
 * goes through strtod. About five times faster than strtod on mesh data.
 */
static int obj_fast_float(const char *t, size_t len, float *out)
{
	const char *p = t, *end = t + len;
	int neg = 0;
	if (p < end && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	uint64_t m = 0;
	int digits = 0, e10 = 0, any = 0;
	for (; p < end && *p >= '0' && *p <= '9'; p++, any = 1) {
		if (digits < 19) {
			m = m * 10 + (uint64_t)(*p - '0');
			digits += m != 0;
		} else {
			return 0;
		}
	}
	if (p < end && *p == '.') {
		p++;
		for (; p < end && *p >= '0' && *p <= '9'; p++, any = 1) {
			if (digits >= 19)
				return 0;
			m = m * 10 + (uint64_t)(*p - '0');
			digits += m != 0;
			if (--e10 < -400)
				return 0; /* a long run of zeros: strtod copes */
		}
	}
	if (!any)
		return 0;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		int eneg = 0, ex = 0, edig = 0;
		if (p < end && (*p == '-' || *p == '+'))
			eneg = *p++ == '-';
		for (; p < end && *p >= '0' && *p <= '9'; p++, edig++)
			if (ex < 1000)
				ex = ex * 10 + (*p - '0');
		if (edig == 0)
			return 0;
		e10 += eneg ? -ex : ex;
	}
	if (p != end || m > (1ull << 53) || e10 < -22 || e10 > 22)
		return 0;
	double d = e10 >= 0 ? (double)m * obj_exact_pow10[e10] : (double)m / obj_exact_pow10[-e10];
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	if (d != 0.0 && (bits & 0x1fffffffull) == 0x10000000ull)
		return 0; /* a float midpoint: let strtod decide */
	float f = (float)d;
	if (!isfinite(f))
		return 0;
	*out = neg ? -f : f;
	return 1;
}

/* Parses a float token in full. Rejects trailing garbage and values that are
 * not finite as float32. */
static drape_err obj_parse_coord(obj_reader *r, const char *t, size_t len, float *out)
{
	if (obj_fast_float(t, len, out))
		return DRAPE_OK;
	char *end;
	double d = obj_strtod(t, &end);
	if (end != t + len || len == 0)
		return obj_fail(r, DRAPE_EPARSE, "'%.*s' is not a number", (int)(len > 40 ? 40 : len), t);
	float f = (float)d;
	if (!isfinite(d) || !isfinite(f))
		return obj_fail(r, DRAPE_ENONFINITE, "vertex coordinate '%.*s' is not a finite float",
				(int)(len > 40 ? 40 : len), t);
	*out = f;
	return DRAPE_OK;
}

/* ---- Groups ------------------------------------------------------------------ */

static uint64_t obj_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static drape_err obj_rehash(obj_reader *r)
{
	size_t n = r->nslots ? r->nslots * 2 : 64;
	uint32_t *slots = calloc(n, sizeof *slots);
	if (slots == NULL)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for groups");
	for (size_t i = 0; i < r->ngroups; i++) {
		const char *nm = r->groups[i].name;
		size_t k = (size_t)obj_hash(nm, strlen(nm)) & (n - 1);
		while (slots[k] != 0)
			k = (k + 1) & (n - 1);
		slots[k] = (uint32_t)i + 1;
	}
	free(r->slots);
	r->slots = slots;
	r->nslots = n;
	return DRAPE_OK;
}

/* Finds or creates the group called t[0..len); its index goes to *idx. */
static drape_err obj_group_get(obj_reader *r, const char *t, size_t len, uint32_t *idx)
{
	if (len > OBJ_MAX_NAME_LEN)
		return obj_fail(r, DRAPE_ELIMIT, "group name longer than %d bytes", OBJ_MAX_NAME_LEN);
	if (r->nslots == 0 || (r->ngroups + 1) * 2 > r->nslots) {
		drape_err e = obj_rehash(r);
		if (e != DRAPE_OK)
			return e;
	}
	size_t k = (size_t)obj_hash(t, len) & (r->nslots - 1);
	while (r->slots[k] != 0) {
		const char *nm = r->groups[r->slots[k] - 1].name;
		if (strlen(nm) == len && memcmp(nm, t, len) == 0) {
			*idx = r->slots[k] - 1;
			return DRAPE_OK;
		}
		k = (k + 1) & (r->nslots - 1);
	}
	if (r->ngroups >= r->lim.max_groups)
		return obj_fail(r, DRAPE_ELIMIT, "more than %u groups (limit)", r->lim.max_groups);
	if (obj_grow((void **)&r->groups, &r->cap_groups, r->ngroups + 1, sizeof *r->groups) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for groups");
	char *nm = malloc(len + 1);
	if (nm == NULL)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for groups");
	memcpy(nm, t, len);
	nm[len] = '\0';
	obj_group_build *g = &r->groups[r->ngroups];
	memset(g, 0, sizeof *g);
	g->name = nm;
	r->slots[k] = (uint32_t)r->ngroups + 1;
	*idx = (uint32_t)r->ngroups++;
	return DRAPE_OK;
}

static drape_err obj_group_add(obj_reader *r, uint32_t gi, const uint32_t *v, size_t n)
{
	obj_group_build *g = &r->groups[gi];
	if (obj_grow((void **)&g->v, &g->cap, g->n + n, sizeof *g->v) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for group '%s'", g->name);
	memcpy(g->v + g->n, v, n * sizeof *v);
	g->n += n;
	return DRAPE_OK;
}

/* ---- Triangulation ------------------------------------------------------------ */

/* Appends one triangle; the caller has reserved room for the face's n - 2. */
static void obj_emit(obj_reader *r, uint32_t a, uint32_t b, uint32_t c)
{
	r->tri[r->nt * 3 + 0] = a;
	r->tri[r->nt * 3 + 1] = b;
	r->tri[r->nt * 3 + 2] = c;
	r->nt++;
}

static const float *obj_p(const obj_reader *r, uint32_t v)
{
	return r->pos + (size_t)v * 3;
}

/* Newell's normal of the polygon: robust for non-planar and non-convex
 * outlines, and zero only when the outline encloses no area. */
static void obj_newell(const obj_reader *r, const uint32_t *v, size_t n, double N[3])
{
	N[0] = N[1] = N[2] = 0.0;
	for (size_t i = 0; i < n; i++) {
		const float *a = obj_p(r, v[i]);
		const float *b = obj_p(r, v[(i + 1) % n]);
		N[0] += ((double)a[1] - b[1]) * ((double)a[2] + b[2]);
		N[1] += ((double)a[2] - b[2]) * ((double)a[0] + b[0]);
		N[2] += ((double)a[0] - b[0]) * ((double)a[1] + b[1]);
	}
}

/* Twice the area of triangle (a, b, c) projected on N, signed. */
static double obj_area_along(const obj_reader *r, uint32_t a, uint32_t b, uint32_t c, const double N[3])
{
	const float *pa = obj_p(r, a), *pb = obj_p(r, b), *pc = obj_p(r, c);
	double u[3] = {(double)pb[0] - pa[0], (double)pb[1] - pa[1], (double)pb[2] - pa[2]};
	double w[3] = {(double)pc[0] - pa[0], (double)pc[1] - pa[1], (double)pc[2] - pa[2]};
	double x[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
	return x[0] * N[0] + x[1] * N[1] + x[2] * N[2];
}

static void obj_fan(obj_reader *r, const uint32_t *v, size_t n)
{
	for (size_t i = 1; i + 1 < n; i++)
		obj_emit(r, v[0], v[i], v[i + 1]);
}

static double obj_cross2(const float *a, const float *b, const float *c)
{
	return ((double)b[0] - a[0]) * ((double)c[1] - a[1]) - ((double)b[1] - a[1]) * ((double)c[0] - a[0]);
}

/* Ear clipping (Eberly, "Triangulation by Ear Clipping") in the plane of the
 * Newell normal. O(n^2) for n <= DRAPE_OBJ_EAR_CLIP_MAX. If no ear is found
 * (a self-intersecting or degenerate outline) the rest is fanned, so the
 * count is always n - 2. */
static drape_err obj_ear_clip(obj_reader *r, const uint32_t *v, size_t n, const double N[3])
{
	if (obj_grow((void **)&r->ear_xy, &r->cap_ear, n * 2, sizeof *r->ear_xy) != 0 ||
	    obj_grow((void **)&r->ear_next, &r->cap_next, n, sizeof *r->ear_next) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory triangulating a face");
	int32_t *nx = r->ear_next;

	/* Drop the axis of N's largest component; swapping the two kept axes when
	 * that component is negative makes the outline counter-clockwise in 2D. */
	int ax = 0;
	if (fabs(N[1]) > fabs(N[ax]))
		ax = 1;
	if (fabs(N[2]) > fabs(N[ax]))
		ax = 2;
	int i0 = (ax + 1) % 3, i1 = (ax + 2) % 3;
	if (N[ax] < 0) {
		int t = i0;
		i0 = i1;
		i1 = t;
	}
	float *xy = r->ear_xy;
	for (size_t i = 0; i < n; i++) {
		const float *p = obj_p(r, v[i]);
		xy[2 * i] = p[i0];
		xy[2 * i + 1] = p[i1];
		nx[i] = (int32_t)((i + 1) % n);
	}

	size_t m = n;
	int32_t prev = (int32_t)n - 1, cur = 0;
	size_t misses = 0;
	/* Plain ear clipping is cubic in the worst case (every ear found only
	 * after a full lap); a budget of point tests keeps a crafted file from
	 * taking minutes. Real polygons use a small fraction of it. */
	size_t budget = 8 * n * n + 64;
	while (m > 3) {
		int32_t next = nx[cur];
		const float *a = xy + 2 * prev, *b = xy + 2 * cur, *c = xy + 2 * next;
		int ear = obj_cross2(a, b, c) > 0.0;
		for (int32_t k = nx[next]; ear && k != prev; k = nx[k]) {
			if (budget > 0)
				budget--;
			const float *p = xy + 2 * k;
			/* A vertex on the ear's border blocks it too, except a copy of
			 * one of its corners (outlines that touch themselves). */
			if ((p[0] == a[0] && p[1] == a[1]) || (p[0] == b[0] && p[1] == b[1]) ||
			    (p[0] == c[0] && p[1] == c[1]))
				continue;
			if (obj_cross2(a, b, p) >= 0.0 && obj_cross2(b, c, p) >= 0.0 &&
			    obj_cross2(c, a, p) >= 0.0)
				ear = 0;
		}
		if (ear) {
			obj_emit(r, v[prev], v[cur], v[next]);
			nx[prev] = next;
			cur = next;
			m--;
			misses = 0;
			continue;
		}
		if (++misses > m || budget == 0) {
			/* No ear left (or no budget): fan what remains, in outline
			 * order. */
			int32_t s = cur;
			for (int32_t k = nx[s]; nx[k] != s; k = nx[k])
				obj_emit(r, v[s], v[k], v[nx[k]]);
			return DRAPE_OK;
		}
		prev = cur;
		cur = next;
	}
	obj_emit(r, v[prev], v[cur], v[nx[cur]]);
	return DRAPE_OK;
}

static drape_err obj_triangulate(obj_reader *r, const uint32_t *v, size_t n)
{
	if (n == 3) {
		obj_emit(r, v[0], v[1], v[2]);
		return DRAPE_OK;
	}
	double N[3];
	obj_newell(r, v, n, N);
	if (N[0] == 0.0 && N[1] == 0.0 && N[2] == 0.0) {
		obj_fan(r, v, n);
		return DRAPE_OK;
	}
	if (n == 4) {
		/* The 0-2 diagonal is inside the quad unless vertex 1 or 3 is
		 * reflex; then the 1-3 diagonal is. */
		if (obj_area_along(r, v[0], v[1], v[2], N) > 0.0 && obj_area_along(r, v[0], v[2], v[3], N) > 0.0) {
			obj_emit(r, v[0], v[1], v[2]);
			obj_emit(r, v[0], v[2], v[3]);
		} else {
			obj_emit(r, v[0], v[1], v[3]);
			obj_emit(r, v[1], v[2], v[3]);
		}
		return DRAPE_OK;
	}
	if (n > DRAPE_OBJ_EAR_CLIP_MAX) {
		obj_fan(r, v, n);
		return DRAPE_OK;
	}
	return obj_ear_clip(r, v, n, N);
}

/* ---- Statements ------------------------------------------------------------------ */

static drape_err obj_vertex(obj_reader *r, const char *s)
{
	float xyz[3];
	int n = 0;
	const char *t;
	size_t len;
	while ((t = obj_token(&s, &len)) != NULL) {
		float f = 0.0f;
		drape_err e = obj_parse_coord(r, t, len, &f);
		if (e != DRAPE_OK)
			return e;
		/* A fourth number is the weight w, numbers 4-6 a vertex colour
		 * (a common extension): checked to be numbers, then dropped. */
		if (n < 3)
			xyz[n] = f;
		n++;
	}
	if (n < 3)
		return obj_fail(r, DRAPE_EPARSE, "vertex has %d coordinates (3 needed)", n);
	if (r->nv >= r->lim.max_vertices)
		return obj_fail(r, DRAPE_ELIMIT, "more than %u vertices (limit)", r->lim.max_vertices);
	if (obj_grow((void **)&r->pos, &r->cap_v, (r->nv + 1) * 3, sizeof *r->pos) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for vertices");
	memcpy(r->pos + r->nv * 3, xyz, sizeof xyz);
	r->nv++;
	return DRAPE_OK;
}

/* `vt u [v [w]]`: the texture coordinate (u, v); v defaults to 0 and w is
 * checked to be a number, then dropped. They count against max_vertices. */
static drape_err obj_texcoord(obj_reader *r, const char *s)
{
	float uv[2] = {0.0f, 0.0f};
	int n = 0;
	const char *t;
	size_t len;
	while ((t = obj_token(&s, &len)) != NULL) {
		float f = 0.0f;
		drape_err e = obj_parse_coord(r, t, len, &f);
		if (e != DRAPE_OK)
			return e;
		if (n < 2)
			uv[n] = f;
		n++;
	}
	if (n < 1 || n > 3)
		return obj_fail(r, DRAPE_EPARSE, "texture coordinate has %d numbers (1 to 3 expected)", n);
	if (r->nvt >= r->lim.max_vertices)
		return obj_fail(r, DRAPE_ELIMIT, "more than %u texture coordinates (limit)", r->lim.max_vertices);
	if (obj_grow((void **)&r->vt, &r->cap_vt, (r->nvt + 1) * 2, sizeof *r->vt) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for texture coordinates");
	memcpy(r->vt + r->nvt * 2, uv, sizeof uv);
	r->nvt++;
	return DRAPE_OK;
}

/* Gives vertex v the texture coordinate vt (0-based) of one of its face
 * corners: the first one it gets is kept; a different one later means the
 * vertex lies on a UV seam, which is counted. */
static drape_err obj_vertex_uv(obj_reader *r, uint32_t v, int64_t vt)
{
	if (r->nvuv < r->nv) {
		if (obj_grow((void **)&r->vuv, &r->cap_vuv, r->nv * 2, sizeof *r->vuv) != 0 ||
		    obj_grow((void **)&r->vuv_state, &r->cap_vuv_state, r->nv, 1) != 0)
			return obj_fail(r, DRAPE_ENOMEM, "out of memory for texture coordinates");
		memset(r->vuv_state + r->nvuv, 0, r->nv - r->nvuv);
		r->nvuv = r->nv;
	}
	float *dst = r->vuv + (size_t)v * 2;
	const float *src = r->vt + (size_t)vt * 2;
	if (r->vuv_state[v] == 0) {
		dst[0] = src[0];
		dst[1] = src[1];
		r->vuv_state[v] = 1;
	} else if (r->vuv_state[v] == 1 && (dst[0] != src[0] || dst[1] != src[1])) {
		r->vuv_state[v] = 2;
		r->uv_seams++;
	}
	return DRAPE_OK;
}

/* Parses an optionally signed decimal integer at *p, advancing it. Values are
 * clamped at +-1e12 so that overflow cannot happen and the message still
 * shows that the index is far out of range. Returns 0 if no digit. */
static int obj_parse_int(const char **p, int64_t *out)
{
	const char *s = *p;
	int neg = 0;
	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (*s < '0' || *s > '9')
		return 0;
	int64_t v = 0;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s - '0');
		if (v > 1000000000000ll)
			v = 1000000000000ll;
		s++;
	}
	*out = neg ? -v : v;
	*p = s;
	return 1;
}

static drape_err obj_face(obj_reader *r, const char *s)
{
	size_t n = 0;
	const char *t;
	size_t len;
	while ((t = obj_token(&s, &len)) != NULL) {
		const char *p = t, *end = t + len;
		int64_t idx, other, tex = 0;
		if (!obj_parse_int(&p, &idx))
			return obj_fail(r, DRAPE_EPARSE, "face vertex '%.*s' is not v, v/vt, v//vn or v/vt/vn",
					(int)(len > 40 ? 40 : len), t);
		/* The texture index is kept; the normal index is checked for
		 * syntax only. */
		for (int part = 0; part < 2 && p < end; part++) {
			if (*p != '/')
				break;
			p++;
			if (p < end && *p != '/') {
				if (!obj_parse_int(&p, &other))
					break;
				if (part == 0)
					tex = other;
			}
		}
		if (p != end)
			return obj_fail(r, DRAPE_EPARSE, "face vertex '%.*s' is not v, v/vt, v//vn or v/vt/vn",
					(int)(len > 40 ? 40 : len), t);
		int64_t nv = (int64_t)r->nv;
		int64_t z;
		if (idx > 0) {
			if (idx > nv)
				return nv == 0 ? obj_fail(r, DRAPE_ERANGE,
							  "face index %lld out of range (no vertex defined above the face)",
							  (long long)idx)
					       : obj_fail(r, DRAPE_ERANGE, "face index %lld out of range (1..%lld)",
							  (long long)idx, (long long)nv);
			z = idx - 1;
		} else if (idx < 0) {
			if (-idx > nv)
				return nv == 0 ? obj_fail(r, DRAPE_ERANGE,
							  "face index %lld out of range (no vertex defined above the face)",
							  (long long)idx)
					       : obj_fail(r, DRAPE_ERANGE, "face index %lld out of range (-1..-%lld)",
							  (long long)idx, (long long)nv);
			z = nv + idx;
		} else {
			return obj_fail(r, DRAPE_ERANGE, "face index 0 is not valid (OBJ indices start at 1)");
		}
		if (n >= r->lim.max_face_vertices)
			return obj_fail(r, DRAPE_ELIMIT, "face has more than %u vertices (limit)",
					r->lim.max_face_vertices);
		int64_t zt = -1;
		const int64_t nvt = (int64_t)r->nvt;
		if (tex > 0 && tex <= nvt)
			zt = tex - 1;
		else if (tex < 0 && -tex <= nvt)
			zt = nvt + tex;
		else if (tex != 0)
			return obj_fail(r, DRAPE_ERANGE, "texture index %lld out of range (%s%lld)", (long long)tex,
					tex > 0 ? "1.." : "-1..-", (long long)nvt);
		if (obj_grow((void **)&r->poly, &r->cap_poly, n + 1, sizeof *r->poly) != 0 ||
		    obj_grow((void **)&r->poly_vt, &r->cap_poly_vt, n + 1, sizeof *r->poly_vt) != 0)
			return obj_fail(r, DRAPE_ENOMEM, "out of memory for a face");
		r->poly_vt[n] = zt;
		r->poly[n++] = (uint32_t)z;
	}
	if (n < 3)
		return obj_fail(r, DRAPE_EPARSE, "face has %zu vertices (at least 3 needed)", n);
	if (r->nt + (n - 2) > r->lim.max_triangles)
		return obj_fail(r, DRAPE_ELIMIT, "more than %u triangles (limit)", r->lim.max_triangles);
	if (obj_grow((void **)&r->tri, &r->cap_t, (r->nt + n - 2) * 3, sizeof *r->tri) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for triangles");
	drape_err e = obj_triangulate(r, r->poly, n);
	if (e != DRAPE_OK)
		return e;
	r->faces++;
	r->corners += n;
	for (size_t k = 0; k < n; k++) {
		if (r->poly_vt[k] < 0)
			continue;
		r->uv_corners++;
		if ((e = obj_vertex_uv(r, r->poly[k], r->poly_vt[k])) != DRAPE_OK)
			return e;
	}
	for (uint32_t i = 0; i < r->nactive_g; i++)
		if ((e = obj_group_add(r, r->active[i], r->poly, n)) != DRAPE_OK)
			return e;
	if (r->active_o >= 0)
		if ((e = obj_group_add(r, (uint32_t)r->active_o, r->poly, n)) != DRAPE_OK)
			return e;
	return DRAPE_OK;
}

/* `g a b c` makes the named groups current (none for a bare `g`); `o name`
 * starts an object, which also ends the groups of the previous object. */
static drape_err obj_groups(obj_reader *r, const char *s, int is_object)
{
	const char *t;
	size_t len;
	uint32_t n = 0, idx = 0;
	if (is_object) {
		r->nactive_g = 0;
		r->active_o = -1;
	}
	while ((t = obj_token(&s, &len)) != NULL) {
		if (n >= (is_object ? 1u : (uint32_t)OBJ_MAX_NAMES_PER_LINE))
			return obj_fail(r, DRAPE_ELIMIT, is_object ? "object statement with more than one name"
								   : "group statement with more than %d names",
					OBJ_MAX_NAMES_PER_LINE);
		drape_err e = obj_group_get(r, t, len, &idx);
		if (e != DRAPE_OK)
			return e;
		if (is_object)
			r->active_o = idx;
		else
			r->active[n] = idx;
		n++;
	}
	if (!is_object)
		r->nactive_g = n;
	return DRAPE_OK;
}

static const char *const obj_ignored[] = {
	"vn", "vp", "s", "mtllib", "usemtl", "l", "p", "maplib", "usemap", "lod",
	"shadow_obj", "trace_obj", "bevel", "c_interp", "d_interp", "mg",
};

static const char *const obj_freeform[] = {
	"cstype", "deg", "bmat", "step", "curv", "curv2", "surf", "parm", "trim", "hole", "scrv", "sp", "end", "con",
};

static drape_err obj_statement(obj_reader *r, const char *s)
{
	const char *t;
	size_t len;
	if ((t = obj_token(&s, &len)) == NULL)
		return DRAPE_OK;
	if (obj_tok_eq(t, len, "v"))
		return obj_vertex(r, s);
	if (obj_tok_eq(t, len, "f"))
		return obj_face(r, s);
	if (obj_tok_eq(t, len, "vt"))
		return obj_texcoord(r, s);
	if (obj_tok_eq(t, len, "g"))
		return obj_groups(r, s, 0);
	if (obj_tok_eq(t, len, "o"))
		return obj_groups(r, s, 1);
	for (size_t i = 0; i < sizeof obj_ignored / sizeof obj_ignored[0]; i++)
		if (obj_tok_eq(t, len, obj_ignored[i]))
			return DRAPE_OK;
	for (size_t i = 0; i < sizeof obj_freeform / sizeof obj_freeform[0]; i++)
		if (obj_tok_eq(t, len, obj_freeform[i]))
			return obj_fail(r, DRAPE_EPARSE, "free-form geometry ('%.*s') is not supported", (int)len, t);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] < 0x20 || (unsigned char)t[i] >= 0x7f)
			return obj_fail(r, DRAPE_EPARSE, "unknown statement (binary data; not an OBJ file?)");
	return obj_fail(r, DRAPE_EPARSE, "unknown statement '%.*s'", (int)(len > 40 ? 40 : len), t);
}

/* Appends data[0..len) to the logical line. */
static drape_err obj_line_append(obj_reader *r, size_t *used, const char *data, size_t len)
{
	if (obj_grow((void **)&r->line, &r->cap_line, *used + len + 2, 1) != 0)
		return obj_fail(r, DRAPE_ENOMEM, "out of memory for a line");
	memcpy(r->line + *used, data, len);
	*used += len;
	return DRAPE_OK;
}

static drape_err obj_parse(obj_reader *r, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	unsigned long physical = 0;
	size_t used = 0;
	int continuing = 0;
	drape_err e;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		physical++;
		if (!continuing)
			r->lineno = physical;
		if (memchr(p, '\0', (size_t)(le - p)) != NULL)
			return obj_fail(r, DRAPE_EPARSE, "NUL byte in the text (not an OBJ file?)");
		const char *ce = le;
		if (ce > p && ce[-1] == '\r')
			ce--;
		/* A backslash ending the line joins it with the next one. */
		int cont = ce > p && ce[-1] == '\\';
		if (cont)
			ce--;
		if ((e = obj_line_append(r, &used, p, (size_t)(ce - p))) != DRAPE_OK)
			return e;
		p = nl ? nl + 1 : end;
		if (cont && p < end) {
			r->line[used++] = ' ';
			continuing = 1;
			continue;
		}
		r->line[used] = '\0';
		char *hash = memchr(r->line, '#', used);
		if (hash != NULL)
			*hash = '\0';
		if ((e = obj_statement(r, r->line)) != DRAPE_OK)
			return e;
		used = 0;
		continuing = 0;
	}
	return DRAPE_OK;
}

static int obj_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Moves the reader's arrays into *out, sorting and deduplicating groups. */
static drape_err obj_finish(obj_reader *r, drape_obj_mesh *out)
{
	drape_obj_mesh m;
	memset(&m, 0, sizeof m);
	r->lineno = 0;
	if (r->ngroups > 0) {
		m.groups = calloc(r->ngroups, sizeof *m.groups);
		if (m.groups == NULL)
			return obj_fail(r, DRAPE_ENOMEM, "out of memory for groups");
	}
	for (size_t i = 0; i < r->ngroups; i++) {
		obj_group_build *g = &r->groups[i];
		size_t k = 0;
		if (g->n > 0) {
			qsort(g->v, g->n, sizeof *g->v, obj_cmp_u32);
			for (size_t j = 0; j < g->n; j++)
				if (k == 0 || g->v[j] != g->v[k - 1])
					g->v[k++] = g->v[j];
			uint32_t *shrunk = realloc(g->v, k * sizeof *g->v);
			if (shrunk != NULL)
				g->v = shrunk;
		}
		m.groups[i].name = g->name;
		m.groups[i].vertices = g->v;
		m.groups[i].count = (uint32_t)k;
		g->name = NULL;
		g->v = NULL;
	}
	m.group_count = (uint32_t)r->ngroups;
	/* Per-vertex texture coordinates only when every face corner named
	 * one; vertices in no face get (0, 0). */
	if (r->corners > 0 && r->uv_corners == r->corners) {
		m.uvs = calloc(r->nv * 2 > 0 ? r->nv * 2 : 1, sizeof *m.uvs);
		if (m.uvs == NULL) {
			for (size_t i = 0; i < r->ngroups; i++) {
				free(m.groups[i].name);
				free(m.groups[i].vertices);
			}
			free(m.groups);
			return obj_fail(r, DRAPE_ENOMEM, "out of memory for texture coordinates");
		}
		for (size_t v = 0; v < r->nvuv; v++)
			if (r->vuv_state[v] != 0)
				memcpy(m.uvs + v * 2, r->vuv + v * 2, 2 * sizeof *m.uvs);
		m.uv_seam_vertices = r->uv_seams;
	}
	m.positions = r->pos;
	m.vertex_count = (uint32_t)r->nv;
	m.triangles = r->tri;
	m.triangle_count = (uint32_t)r->nt;
	m.face_count = r->faces;
	r->pos = NULL;
	r->tri = NULL;
	*out = m;
	return DRAPE_OK;
}

drape_err drape_obj_read_buffer(const char *data, size_t len, const char *name,
				const drape_obj_limits *limits, drape_obj_mesh *out, drape_error *err)
{
	obj_reader r;
	memset(&r, 0, sizeof r);
	r.name = name ? name : "<buffer>";
	r.err = err;
	r.active_o = -1;
	if (limits)
		r.lim = *limits;
	else
		drape_obj_limits_default(&r.lim);
	if (out == NULL || (data == NULL && len > 0))
		return drape_error_setf(err, DRAPE_EINVAL, "%s: no buffer or no output given", r.name);
	if ((uint64_t)len > r.lim.max_bytes)
		return drape_error_setf(err, DRAPE_ELIMIT, "%s: %zu bytes is over the limit of %llu", r.name, len,
					(unsigned long long)r.lim.max_bytes);
	drape_err e = len ? obj_parse(&r, data, len) : DRAPE_OK;
	if (e == DRAPE_OK)
		e = obj_finish(&r, out);
	obj_reader_free(&r);
	if (e == DRAPE_OK)
		drape_error_clear(err);
	return e;
}

drape_err drape_obj_read_file(const char *path, const drape_obj_limits *limits, drape_obj_mesh *out,
			      drape_error *err)
{
	drape_obj_limits lim;
	if (limits)
		lim = *limits;
	else
		drape_obj_limits_default(&lim);
	if (path == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "no path or no output given");
	char *buf;
	size_t got;
	drape_err rc = readfile_whole(path, lim.max_bytes, "OBJ", &buf, &got, err);
	if (rc != DRAPE_OK)
		return rc;
	/* Messages name the file as the user gave it. */
	drape_err e = drape_obj_read_buffer(buf, got, path, &lim, out, err);
	free(buf);
	return e;
}

void drape_obj_free(drape_obj_mesh *m)
{
	if (m == NULL)
		return;
	free(m->positions);
	free(m->triangles);
	free(m->uvs);
	for (uint32_t i = 0; i < m->group_count; i++) {
		free(m->groups[i].name);
		free(m->groups[i].vertices);
	}
	free(m->groups);
	memset(m, 0, sizeof *m);
}

const drape_obj_group *drape_obj_find_group(const drape_obj_mesh *m, const char *name)
{
	for (uint32_t i = 0; i < m->group_count; i++)
		if (strcmp(m->groups[i].name, name) == 0)
			return &m->groups[i];
	return NULL;
}

/* ---- Writer ------------------------------------------------------------------------ */

static char *obj_put_u64(char *o, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		*o++ = tmp[--n];
	return o;
}

/* 10^(e+1) for e = -5..7: the bounds of the decimal exponent search. */
static const double obj_dec_bounds[] = {1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2,
					1e3,  1e4,  1e5,  1e6,  1e7, 1e8};
static const double obj_pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
				   1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
static const uint64_t obj_pow10u[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
				      10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
				      100000000000ull, 1000000000000ull, 10000000000000ull,
				      100000000000000ull, 1000000000000000ull};

/*
 * Writes f with 9 significant digits, which identifies every float32 (its
 * relative spacing is at least 2^-24 > 1e-8), so strtof reads back the same
 * bits. For magnitudes in [1e-5, 1e9) the digits come from one double
 * multiplication and an integer conversion, about ten times faster than
 * printf("%.9g"); the double product's error (2^-53 relative) is far below
 * the half unit of the 9th digit, so the result still identifies the float.
 * Other magnitudes, rare in a mesh, go through snprintf.
 */
static char *obj_put_float(char *o, float f)
{
	if (signbit(f)) {
		*o++ = '-';
		f = -f;
	}
	if (f == 0.0f) {
		*o++ = '0';
		return o;
	}
	double d = f;
	if (!(d >= 1e-5 && d < 1e9))
		return o + snprintf(o, 32, "%.9g", d);
	/* Decimal exponent e with 10^e <= d < 10^(e+1). */
	int e = -5;
	while (e < 8 && d >= obj_dec_bounds[e + 5])
		e++;
	int dec = 8 - e; /* decimals that make 9 significant digits: 0..13 */
	uint64_t m = (uint64_t)(d * obj_pow10[dec] + 0.5);
	uint64_t P = obj_pow10u[dec];
	o = obj_put_u64(o, m / P);
	uint64_t frac = m % P;
	if (frac != 0) {
		while (frac % 10 == 0) {
			frac /= 10;
			dec--;
		}
		*o++ = '.';
		char *s = o;
		for (int i = dec - 1; i >= 0; i--) {
			s[i] = (char)('0' + frac % 10);
			frac /= 10;
		}
		o += dec;
	}
	return o;
}

drape_err drape_obj_format(const float *positions, uint32_t vertex_count, const uint32_t *triangles,
			   uint32_t triangle_count, char **out, size_t *out_len, drape_error *err)
{
	if (out == NULL || out_len == NULL || (vertex_count && positions == NULL) ||
	    (triangle_count && triangles == NULL))
		return drape_error_setf(err, DRAPE_EINVAL, "obj: missing positions, triangles or output");
	for (uint64_t i = 0; i < vertex_count * 3ull; i++)
		if (!isfinite(positions[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE, "positions[%llu][%llu] is not finite",
						(unsigned long long)(i / 3), (unsigned long long)(i % 3));
	for (uint64_t i = 0; i < triangle_count * 3ull; i++)
		if (triangles[i] >= vertex_count)
			return drape_error_setf(err, DRAPE_ERANGE, "triangles[%llu][%llu]: %u >= vertex count %u",
						(unsigned long long)(i / 3), (unsigned long long)(i % 3), triangles[i],
						vertex_count);
	/* Worst cases: a float is at most 16 characters ("-1.23456789e-38"),
	 * an index at most 10. */
	size_t cap = 96 + (size_t)vertex_count * (2 + 3 * 17) + (size_t)triangle_count * (2 + 3 * 11);
	char *buf = malloc(cap);
	if (buf == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "obj: out of memory for %zu bytes", cap);
	char *o = buf;
	o += snprintf(o, 96, "# drape: %u vertices, %u triangles\n", vertex_count, triangle_count);
	for (uint32_t i = 0; i < vertex_count; i++) {
		const float *p = positions + (size_t)i * 3;
		*o++ = 'v';
		*o++ = ' ';
		o = obj_put_float(o, p[0]);
		*o++ = ' ';
		o = obj_put_float(o, p[1]);
		*o++ = ' ';
		o = obj_put_float(o, p[2]);
		*o++ = '\n';
	}
	for (uint32_t i = 0; i < triangle_count; i++) {
		const uint32_t *t = triangles + (size_t)i * 3;
		*o++ = 'f';
		*o++ = ' ';
		o = obj_put_u64(o, (uint64_t)t[0] + 1);
		*o++ = ' ';
		o = obj_put_u64(o, (uint64_t)t[1] + 1);
		*o++ = ' ';
		o = obj_put_u64(o, (uint64_t)t[2] + 1);
		*o++ = '\n';
	}
	*o = '\0';
	*out = buf;
	*out_len = (size_t)(o - buf);
	return DRAPE_OK;
}

drape_err drape_obj_write_file(const char *path, const float *positions, uint32_t vertex_count,
			       const uint32_t *triangles, uint32_t triangle_count, drape_error *err)
{
	if (path == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "obj: no path given");
	char *text;
	size_t len;
	drape_err e = drape_obj_format(positions, vertex_count, triangles, triangle_count, &text, &len, err);
	if (e != DRAPE_OK)
		return e;
	/* A unique name beside the target (same file system, so rename is
	 * atomic), created with O_EXCL so two writers never share it; its mode
	 * follows the umask like any output file. */
	static atomic_uint counter;
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 48);
	if (tmp == NULL) {
		free(text);
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
	}
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		snprintf(tmp, plen + 48, "%s.tmp.%ld.%u", path, (long)getpid(),
			 atomic_fetch_add(&counter, 1u));
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int en = errno;
		free(text);
		free(tmp);
		return drape_error_setf(err, DRAPE_EIO, "%s: cannot create a temporary file: %s", path,
					strerror(en));
	}
	size_t done = 0;
	int en = 0;
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			en = n < 0 ? errno : EIO;
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) != 0 && en == 0)
		en = errno;
	if (en == 0 && rename(tmp, path) != 0)
		en = errno;
	if (en != 0)
		unlink(tmp);
	free(tmp);
	free(text);
	if (en != 0)
		return drape_error_setf(err, DRAPE_EIO, "%s: write failed: %s", path, strerror(en));
	return DRAPE_OK;
}
