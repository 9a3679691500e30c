/* Scene files (JSON through cJSON); client/SCENE.md documents the format. */
#include "client/scene.h"
#include "client/scene_internal.h"
#include "client/readfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

drape_err scn_fail(scn *c, drape_err code, const char *fmt, ...)
{
	char msg[DRAPE_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->plen > 0)
		return drape_error_setf(c->err, code, "%s: %s: %s", c->name, c->path, msg);
	return drape_error_setf(c->err, code, "%s: %s", c->name, msg);
}

/* ---- JSON path ---------------------------------------------------------------- */

size_t scn_push_key(scn *c, const char *key)
{
	size_t old = c->plen;
	int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "%s%s", c->plen ? "." : "", key);
	if (n > 0)
		c->plen = strlen(c->path);
	return old;
}

size_t scn_push_index(scn *c, size_t i)
{
	size_t old = c->plen;
	int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);
	if (n > 0)
		c->plen = strlen(c->path);
	return old;
}

void scn_pop(scn *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

/* ---- Typed getters: each names the path of the value it reads ---------------- */

static const char *scn_type_name(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	return "invalid";
}

drape_err scn_want_object(scn *c, const cJSON *v)
{
	if (!cJSON_IsObject(v))
		return scn_fail(c, DRAPE_EINVAL, "must be an object, not %s", scn_type_name(v));
	return DRAPE_OK;
}

/* A finite number that also fits a float. */
drape_err scn_number(scn *c, const cJSON *v, double *out)
{
	if (!cJSON_IsNumber(v))
		return scn_fail(c, DRAPE_EINVAL, "must be a number, not %s", scn_type_name(v));
	double d = v->valuedouble;
	if (!isfinite(d) || !isfinite((float)d))
		return scn_fail(c, DRAPE_ENONFINITE, "%g is not a finite float", d);
	*out = d;
	return DRAPE_OK;
}

drape_err scn_integer(scn *c, const cJSON *v, double lo, double hi, int64_t *out)
{
	double d = 0;
	drape_err e = scn_number(c, v, &d);
	if (e != DRAPE_OK)
		return e;
	if (d != floor(d))
		return scn_fail(c, DRAPE_EINVAL, "%g must be an integer", d);
	if (d < lo || d > hi)
		return scn_fail(c, DRAPE_ERANGE, "%.0f is out of range [%.0f, %.0f]", d, lo, hi);
	*out = (int64_t)d;
	return DRAPE_OK;
}

/* A float in [lo, hi] (lo excluded when lo_open). */
drape_err scn_float_in(scn *c, const cJSON *v, double lo, double hi, int lo_open, float *out)
{
	double d = 0;
	drape_err e = scn_number(c, v, &d);
	if (e != DRAPE_OK)
		return e;
	if (lo_open ? !(d > lo) : !(d >= lo))
		return scn_fail(c, DRAPE_ERANGE, "%g must be %s %g", d, lo_open ? ">" : ">=", lo);
	if (d > hi)
		return scn_fail(c, DRAPE_ERANGE, "%g must be <= %g", d, hi);
	*out = (float)d;
	return DRAPE_OK;
}

/* An array of exactly n finite numbers. */
drape_err scn_vec(scn *c, const cJSON *v, int n, float *out)
{
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
		return scn_fail(c, DRAPE_EINVAL, "must be an array of %d numbers", n);
	float tmp[4];
	int i = 0;
	for (const cJSON *it = v->child; it != NULL; it = it->next, i++) {
		double d = 0;
		size_t old = scn_push_index(c, (size_t)i);
		drape_err e = scn_number(c, it, &d);
		if (e != DRAPE_OK)
			return e;
		scn_pop(c, old);
		tmp[i] = (float)d;
	}
	memcpy(out, tmp, (size_t)n * sizeof *out);
	return DRAPE_OK;
}

/* Checks the parameters with the solver's own validation (the single source
 * of truth for their ranges) right after `key` was set, so the message names
 * the scene's JSON path rather than the struct field. */
static drape_err scn_check_params(scn *c)
{
	drape_error e;
	drape_error_clear(&e);
	drape_err rc = drape_sim_params_validate(&c->s.params, &e);
	if (rc == DRAPE_OK)
		return DRAPE_OK;
	/* The solver's message starts with "params.field: "; the path replaces it. */
	const char *msg = e.message;
	if (strncmp(msg, "params.", 7) == 0) {
		const char *colon = strstr(msg, ": ");
		if (colon != NULL)
			msg = colon + 2;
	}
	return scn_fail(c, rc, "%s", msg);
}

static drape_err scn_param_float(scn *c, const cJSON *v, float *dst)
{
	double d = 0;
	drape_err e = scn_number(c, v, &d);
	if (e != DRAPE_OK)
		return e;
	*dst = (float)d;
	return scn_check_params(c);
}

static drape_err scn_param_int(scn *c, const cJSON *v, int32_t *dst)
{
	int64_t i;
	drape_err e = scn_integer(c, v, -2147483648.0, 2147483647.0, &i);
	if (e != DRAPE_OK)
		return e;
	*dst = (int32_t)i;
	return scn_check_params(c);
}

static drape_err scn_param_vec3(scn *c, const cJSON *v, float *dst)
{
	drape_err e = scn_vec(c, v, 3, dst);
	if (e != DRAPE_OK)
		return e;
	return scn_check_params(c);
}

/* ---- Files ----------------------------------------------------------------------- */

/* Joins a relative path to the base folder; absolute paths are kept. */
static char *scn_resolve(const char *base, const char *rel)
{
	size_t rl = strlen(rel);
	if (rel[0] == '/' || base == NULL || base[0] == '\0') {
		char *p = malloc(rl + 1);
		if (p)
			memcpy(p, rel, rl + 1);
		return p;
	}
	size_t bl = strlen(base);
	char *p = malloc(bl + rl + 2);
	if (p == NULL)
		return NULL;
	memcpy(p, base, bl);
	p[bl] = '/';
	memcpy(p + bl + 1, rel, rl + 1);
	return p;
}

/* Loads the OBJ named by the string `v` into *m within what is left of the
 * scene's vertex and triangle budget. */
drape_err scn_load_mesh(scn *c, const cJSON *v, drape_obj_mesh *m, char **resolved)
{
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
		return scn_fail(c, DRAPE_EINVAL, "must be a non-empty string (a path to an OBJ file)");
	char *path = scn_resolve(c->base_dir, v->valuestring);
	if (path == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	drape_obj_limits lim = c->lim;
	lim.max_vertices = (uint32_t)c->budget_vertices;
	lim.max_triangles = (uint32_t)c->budget_triangles;
	drape_error oe;
	drape_error_clear(&oe);
	drape_err e = drape_obj_read_file(path, &lim, m, &oe);
	if (e != DRAPE_OK) {
		scn_fail(c, e, "%s", oe.message);
		free(path);
		return e;
	}
	if (m->triangle_count == 0) {
		e = scn_fail(c, DRAPE_EINVAL, "%s has no faces", path);
		drape_obj_free(m);
		free(path);
		return e;
	}
	c->budget_vertices -= m->vertex_count;
	c->budget_triangles -= m->triangle_count;
	if (resolved)
		*resolved = path;
	else
		free(path);
	return DRAPE_OK;
}

/* "scale": a number or [sx, sy, sz], every factor > 0 (a mirroring scale
 * would turn meshes inside out). */
drape_err scn_scale(scn *c, const cJSON *v, float out[3])
{
	if (cJSON_IsNumber(v)) {
		float s;
		drape_err e = scn_float_in(c, v, 0.0, 1e30, 1, &s);
		if (e != DRAPE_OK)
			return e;
		out[0] = out[1] = out[2] = s;
		return DRAPE_OK;
	}
	float s[3];
	if (!cJSON_IsArray(v))
		return scn_fail(c, DRAPE_EINVAL, "must be a number or an array of 3 numbers, not %s",
				scn_type_name(v));
	drape_err e = scn_vec(c, v, 3, s);
	if (e != DRAPE_OK)
		return e;
	for (int i = 0; i < 3; i++) {
		if (!(s[i] > 0.0f)) {
			scn_push_index(c, (size_t)i);
			return scn_fail(c, DRAPE_ERANGE, "%g must be > 0", (double)s[i]);
		}
	}
	memcpy(out, s, sizeof s);
	return DRAPE_OK;
}

/* ---- Grid ------------------------------------------------------------------------- */

static void scn_cross(const double a[3], const double b[3], double o[3])
{
	o[0] = a[1] * b[2] - a[2] * b[1];
	o[1] = a[2] * b[0] - a[0] * b[2];
	o[2] = a[0] * b[1] - a[1] * b[0];
}

static int scn_add_group(drape_obj_mesh *m, const char *name, uint32_t *v, uint32_t n)
{
	drape_obj_group *g = &m->groups[m->group_count];
	size_t len = strlen(name);
	g->name = malloc(len + 1);
	if (g->name == NULL) {
		free(v);
		return -1;
	}
	memcpy(g->name, name, len + 1);
	g->vertices = v;
	g->count = n;
	m->group_count++;
	return 0;
}

static int scn_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

drape_err drape_scene_make_grid(float size_u, float size_v, uint32_t nx, uint32_t ny, const float center[3],
				const float normal[3], const drape_obj_limits *limits, drape_obj_mesh *mesh,
				drape_error *err)
{
	drape_obj_limits lim;
	if (limits)
		lim = *limits;
	else
		drape_obj_limits_default(&lim);
	if (!(size_u > 0.0f && size_v > 0.0f && isfinite(size_u) && isfinite(size_v)))
		return drape_error_setf(err, DRAPE_EINVAL, "grid size %g x %g must be finite and > 0",
					(double)size_u, (double)size_v);
	if (nx < 2 || ny < 2)
		return drape_error_setf(err, DRAPE_EINVAL, "grid resolution %u x %u must be at least 2 x 2", nx, ny);
	uint64_t nv = (uint64_t)nx * ny, nt = 2ull * (nx - 1) * (ny - 1);
	if (nv > lim.max_vertices || nt > lim.max_triangles)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"grid resolution %u x %u gives %llu vertices and %llu triangles, over the "
					"limits %u and %u",
					nx, ny, (unsigned long long)nv, (unsigned long long)nt, lim.max_vertices,
					lim.max_triangles);
	double n[3] = {normal[0], normal[1], normal[2]};
	double nl = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
	if (!(nl > 1e-12) || !isfinite(nl) || !isfinite(center[0]) || !isfinite(center[1]) ||
	    !isfinite(center[2]))
		return drape_error_setf(err, DRAPE_EINVAL, "grid normal must be finite and non-zero, center finite");
	for (int k = 0; k < 3; k++)
		n[k] /= nl;
	/* v is world up projected on the plane, so a hanging flag's "top" is up;
	 * for a horizontal sheet up is the normal itself and -Z is used. */
	double up[3] = {0.0, 1.0, 0.0};
	if (fabs(n[1]) > 0.999) {
		up[1] = 0.0;
		up[2] = -1.0;
	}
	double d = up[0] * n[0] + up[1] * n[1] + up[2] * n[2];
	double va[3] = {up[0] - d * n[0], up[1] - d * n[1], up[2] - d * n[2]};
	double vl = sqrt(va[0] * va[0] + va[1] * va[1] + va[2] * va[2]);
	for (int k = 0; k < 3; k++)
		va[k] /= vl;
	double ua[3];
	scn_cross(va, n, ua);

	drape_obj_mesh m;
	memset(&m, 0, sizeof m);
	m.positions = malloc((size_t)nv * 3 * sizeof *m.positions);
	m.triangles = malloc((size_t)nt * 3 * sizeof *m.triangles);
	m.groups = calloc(5, sizeof *m.groups);
	m.uvs = malloc((size_t)nv * 2 * sizeof *m.uvs);
	uint32_t *top = malloc(nx * sizeof *top), *bottom = malloc(nx * sizeof *bottom);
	uint32_t *left = malloc(ny * sizeof *left), *right = malloc(ny * sizeof *right);
	uint32_t *corners = malloc(4 * sizeof *corners);
	if (!m.positions || !m.triangles || !m.groups || !m.uvs || !top || !bottom || !left || !right || !corners) {
		free(top);
		free(bottom);
		free(left);
		free(right);
		free(corners);
		drape_obj_free(&m);
		return drape_error_setf(err, DRAPE_ENOMEM, "grid: out of memory for %llu vertices",
					(unsigned long long)nv);
	}
	m.vertex_count = (uint32_t)nv;
	m.triangle_count = (uint32_t)nt;
	m.face_count = (uint32_t)nt;
	for (uint32_t j = 0; j < ny; j++) {
		double sv = ((double)j / (ny - 1) - 0.5) * size_v;
		for (uint32_t i = 0; i < nx; i++) {
			double su = ((double)i / (nx - 1) - 0.5) * size_u;
			float *p = m.positions + ((size_t)j * nx + i) * 3;
			/* Texture coordinates in metres along u and v, so a woven
			 * material's warp runs along u and its weft along v. */
			m.uvs[((size_t)j * nx + i) * 2] = (float)(su + 0.5 * size_u);
			m.uvs[((size_t)j * nx + i) * 2 + 1] = (float)(sv + 0.5 * size_v);
			for (int k = 0; k < 3; k++)
				p[k] = (float)(center[k] + su * ua[k] + sv * va[k]);
		}
	}
	/* Alternating diagonals (a chequerboard of cell splits) keep the sheet
	 * free of the shear bias that one diagonal direction everywhere gives. */
	uint32_t *t = m.triangles;
	for (uint32_t j = 0; j + 1 < ny; j++) {
		for (uint32_t i = 0; i + 1 < nx; i++) {
			uint32_t a = j * nx + i, b = a + 1, cc = a + nx + 1, dd = a + nx;
			if (((i + j) & 1u) == 0) {
				*t++ = a, *t++ = b, *t++ = cc;
				*t++ = a, *t++ = cc, *t++ = dd;
			} else {
				*t++ = a, *t++ = b, *t++ = dd;
				*t++ = b, *t++ = cc, *t++ = dd;
			}
		}
	}
	for (uint32_t i = 0; i < nx; i++) {
		bottom[i] = i;
		top[i] = (ny - 1) * nx + i;
	}
	for (uint32_t j = 0; j < ny; j++) {
		left[j] = j * nx;
		right[j] = j * nx + nx - 1;
	}
	corners[0] = 0;
	corners[1] = nx - 1;
	corners[2] = (ny - 1) * nx;
	corners[3] = ny * nx - 1;
	qsort(corners, 4, sizeof *corners, scn_cmp_u32);
	if (scn_add_group(&m, "top", top, nx) || scn_add_group(&m, "bottom", bottom, nx) ||
	    scn_add_group(&m, "left", left, ny) || scn_add_group(&m, "right", right, ny) ||
	    scn_add_group(&m, "corners", corners, 4)) {
		/* scn_add_group freed its list; free the ones not yet handed over. */
		for (uint32_t g = m.group_count + 1; g < 5; g++)
			free(g == 1 ? bottom : g == 2 ? left : g == 3 ? right : corners);
		drape_obj_free(&m);
		return drape_error_setf(err, DRAPE_ENOMEM, "grid: out of memory");
	}
	*mesh = m;
	return DRAPE_OK;
}

static drape_err scn_grid(scn *c, const cJSON *g)
{
	static const char *const keys[] = {"size", "resolution", "center", "normal", NULL};
	drape_err e;
	if ((e = scn_want_object(c, g)) || (e = scn_keys(c, g, keys)))
		return e;
	float size[2], center[3] = {0, 0, 0}, normal[3] = {0, 0, 1};
	int64_t res[2];
	const cJSON *sz = scn_get(g, "size"), *rs = scn_get(g, "resolution");
	if (sz == NULL || rs == NULL)
		return scn_fail(c, DRAPE_EINVAL, "needs \"size\": [w, h] and \"resolution\": [nx, ny]");
	size_t old = scn_push_key(c, "size");
	if ((e = scn_vec(c, sz, 2, size)) != DRAPE_OK)
		return e;
	for (int i = 0; i < 2; i++) {
		if (!(size[i] > 0.0f)) {
			scn_push_index(c, (size_t)i);
			return scn_fail(c, DRAPE_ERANGE, "%g must be > 0", (double)size[i]);
		}
	}
	scn_pop(c, old);
	old = scn_push_key(c, "resolution");
	if (!cJSON_IsArray(rs) || cJSON_GetArraySize(rs) != 2)
		return scn_fail(c, DRAPE_EINVAL, "must be an array of 2 integers");
	for (int i = 0; i < 2; i++) {
		size_t o2 = scn_push_index(c, (size_t)i);
		if ((e = scn_integer(c, cJSON_GetArrayItem(rs, i), 2, 1e9, &res[i])) != DRAPE_OK)
			return e;
		scn_pop(c, o2);
	}
	scn_pop(c, old);
	SCN_FIELD(c, g, "center", scn_vec(c, v_, 3, center));
	SCN_FIELD(c, g, "normal", scn_vec(c, v_, 3, normal));
	if (normal[0] == 0.0f && normal[1] == 0.0f && normal[2] == 0.0f) {
		old = scn_push_key(c, "normal");
		return scn_fail(c, DRAPE_EINVAL, "must not be zero");
	}
	drape_obj_limits lim = c->lim;
	lim.max_vertices = (uint32_t)c->budget_vertices;
	lim.max_triangles = (uint32_t)c->budget_triangles;
	drape_error ge;
	drape_error_clear(&ge);
	e = drape_scene_make_grid(size[0], size[1], (uint32_t)res[0], (uint32_t)res[1], center, normal, &lim,
				  &c->s.cloth, &ge);
	if (e != DRAPE_OK)
		return scn_fail(c, e, "%s", ge.message);
	c->budget_vertices -= c->s.cloth.vertex_count;
	c->budget_triangles -= c->s.cloth.triangle_count;
	return DRAPE_OK;
}

/* ---- Pins --------------------------------------------------------------------------- */

static drape_err scn_pin(scn *c, uint32_t v, int32_t attach, float k)
{
	if (c->pin_mark[v] != -2 && c->pin_mark[v] != attach)
		return scn_fail(c, DRAPE_EINVAL, "vertex %u is already pinned with a different attach", v);
	if (c->pin_mark[v] != -2 && c->pin_k[v] != k)
		return scn_fail(c, DRAPE_EINVAL,
				"vertex %u is already pinned with a different stiffness (%g, not %g N/m)",
				v, (double)c->pin_k[v], (double)k);
	c->pin_mark[v] = attach;
	c->pin_k[v] = k;
	return DRAPE_OK;
}

static drape_err scn_pin_entry(scn *c, const cJSON *p)
{
	static const char *const keys[] = {"indices", "box", "group", "attach", "stiffness", NULL};
	drape_err e;
	if ((e = scn_want_object(c, p)) || (e = scn_keys(c, p, keys)))
		return e;
	const cJSON *idx = scn_get(p, "indices"), *box = scn_get(p, "box"), *grp = scn_get(p, "group");
	if ((idx != NULL) + (box != NULL) + (grp != NULL) != 1)
		return scn_fail(c, DRAPE_EINVAL, "needs exactly one of \"indices\", \"box\" and \"group\"");
	int32_t attach = DRAPE_SCENE_NO_ATTACH;
	const cJSON *at = scn_get(p, "attach");
	if (at != NULL) {
		size_t old = scn_push_key(c, "attach");
		int64_t a;
		if (c->s.collider_count == 0)
			return scn_fail(c, DRAPE_ERANGE, "the scene has no colliders to attach to");
		if ((e = scn_integer(c, at, 0, (double)c->s.collider_count - 1, &a)) != DRAPE_OK)
			return e;
		attach = (int32_t)a;
		scn_pop(c, old);
	}
	/* "stiffness": a soft pin pulling towards its start with k N/m
	 * (0, the default, holds it); it cannot also follow a collider. */
	float stiff = 0.0f;
	SCN_FIELD(c, p, "stiffness", scn_float_in(c, v_, 0.0, 1e12, 0, &stiff));
	if (stiff > 0.0f && at != NULL) {
		scn_push_key(c, "stiffness");
		return scn_fail(c, DRAPE_EINVAL,
				"a soft pin cannot follow a collider (\"attach\"): give one or the other");
	}
	const drape_obj_mesh *m = &c->s.cloth;
	if (idx != NULL) {
		size_t old = scn_push_key(c, "indices");
		if (!cJSON_IsArray(idx))
			return scn_fail(c, DRAPE_EINVAL, "must be an array of vertex indices, not %s",
					scn_type_name(idx));
		size_t i = 0;
		for (const cJSON *it = idx->child; it != NULL; it = it->next, i++) {
			size_t o2 = scn_push_index(c, i);
			if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || it->valuedouble < 0)
				return scn_fail(c, DRAPE_EINVAL, "must be a vertex index (an integer >= 0)");
			if (!(it->valuedouble < (double)m->vertex_count))
				return scn_fail(c, DRAPE_ERANGE, "%.0f is out of range (mesh has %u vertices)",
						it->valuedouble, m->vertex_count);
			if ((e = scn_pin(c, (uint32_t)it->valuedouble, attach, stiff)) != DRAPE_OK)
				return e;
			scn_pop(c, o2);
		}
		scn_pop(c, old);
	} else if (box != NULL) {
		static const char *const bkeys[] = {"min", "max", NULL};
		size_t old = scn_push_key(c, "box");
		float lo[3], hi[3];
		if ((e = scn_want_object(c, box)) || (e = scn_keys(c, box, bkeys)))
			return e;
		if (scn_get(box, "min") == NULL || scn_get(box, "max") == NULL)
			return scn_fail(c, DRAPE_EINVAL, "needs \"min\" and \"max\"");
		SCN_FIELD(c, box, "min", scn_vec(c, v_, 3, lo));
		SCN_FIELD(c, box, "max", scn_vec(c, v_, 3, hi));
		for (int k = 0; k < 3; k++)
			if (!(lo[k] <= hi[k]))
				return scn_fail(c, DRAPE_EINVAL, "min[%d] = %g is above max[%d] = %g", k, (double)lo[k],
						k, (double)hi[k]);
		uint32_t hits = 0;
		for (uint32_t v = 0; v < m->vertex_count; v++) {
			const float *q = m->positions + (size_t)v * 3;
			if (q[0] >= lo[0] && q[0] <= hi[0] && q[1] >= lo[1] && q[1] <= hi[1] && q[2] >= lo[2] &&
			    q[2] <= hi[2]) {
				if ((e = scn_pin(c, v, attach, stiff)) != DRAPE_OK)
					return e;
				hits++;
			}
		}
		/* An empty box is almost always a mistake (wrong units or axis). */
		if (hits == 0)
			return scn_fail(c, DRAPE_EINVAL, "selects no vertex of the cloth (after scale, rotate and translate)");
		scn_pop(c, old);
	} else {
		size_t old = scn_push_key(c, "group");
		if (!cJSON_IsString(grp))
			return scn_fail(c, DRAPE_EINVAL, "must be a group name (a string), not %s", scn_type_name(grp));
		const drape_obj_group *g = drape_obj_find_group(m, grp->valuestring);
		if (g == NULL) {
			char list[120];
			size_t n = 0;
			list[0] = '\0';
			for (uint32_t i = 0; i < m->group_count && n + 1 < sizeof list; i++) {
				int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", m->groups[i].name);
				if (w < 0)
					break;
				n += (size_t)w;
			}
			return scn_fail(c, DRAPE_ENOTFOUND, "no group '%.40s' in the cloth mesh (%s%s)",
					grp->valuestring, m->group_count ? "groups: " : "it has no groups", list);
		}
		for (uint32_t i = 0; i < g->count; i++)
			if ((e = scn_pin(c, g->vertices[i], attach, stiff)) != DRAPE_OK)
				return e;
		scn_pop(c, old);
	}
	return DRAPE_OK;
}

static drape_err scn_pins(scn *c, const cJSON *p)
{
	uint32_t nv = c->s.cloth.vertex_count;
	drape_err e;
	c->pin_mark = malloc((size_t)nv * sizeof *c->pin_mark);
	c->pin_k = calloc((size_t)nv, sizeof *c->pin_k);
	if (c->pin_mark == NULL || c->pin_k == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	for (uint32_t v = 0; v < nv; v++)
		c->pin_mark[v] = -2;
	if (cJSON_IsArray(p)) {
		size_t i = 0;
		for (const cJSON *it = p->child; it != NULL; it = it->next, i++) {
			size_t old = scn_push_index(c, i);
			if ((e = scn_pin_entry(c, it)) != DRAPE_OK)
				return e;
			scn_pop(c, old);
		}
	} else if (cJSON_IsObject(p)) {
		if ((e = scn_pin_entry(c, p)) != DRAPE_OK)
			return e;
	} else {
		return scn_fail(c, DRAPE_EINVAL, "must be an object or an array of objects, not %s", scn_type_name(p));
	}
	uint32_t n = 0, soft = 0;
	for (uint32_t v = 0; v < nv; v++) {
		n += c->pin_mark[v] != -2;
		soft += c->pin_mark[v] != -2 && c->pin_k[v] > 0.0f;
	}
	if (n > 0) {
		c->s.pins = malloc((size_t)n * sizeof *c->s.pins);
		c->s.pin_attach = malloc((size_t)n * sizeof *c->s.pin_attach);
		if (soft > 0)
			c->s.pin_stiffness = malloc((size_t)n * sizeof *c->s.pin_stiffness);
		if (c->s.pins == NULL || c->s.pin_attach == NULL ||
		    (soft > 0 && c->s.pin_stiffness == NULL))
			return scn_fail(c, DRAPE_ENOMEM, "out of memory");
		n = 0;
		for (uint32_t v = 0; v < nv; v++) {
			if (c->pin_mark[v] != -2) {
				c->s.pins[n] = v;
				c->s.pin_attach[n] = c->pin_mark[v];
				if (c->s.pin_stiffness != NULL)
					c->s.pin_stiffness[n] = c->pin_k[v];
				n++;
			}
		}
	}
	c->s.pin_count = n;
	return DRAPE_OK;
}

/* ---- Cloth ---------------------------------------------------------------------------- */

/* ---- Material ------------------------------------------------------------------------- */

/* The damping of a material given in full, 1/s: the presets' value, which
 * matches the pbd model's default of 0.99 per frame at 24 fps. */
#define SCN_MATERIAL_DAMPING 0.24f

/* A preset by name into the parameters; an unknown name lists the presets. */
static drape_err scn_preset(scn *c, const cJSON *v)
{
	if (!cJSON_IsString(v))
		return scn_fail(c, DRAPE_EINVAL, "must be a preset name (a string), not %s", scn_type_name(v));
	drape_error pe;
	drape_error_clear(&pe);
	drape_err e = drape_material_preset(v->valuestring, &c->s.params, &pe);
	if (e != DRAPE_OK) {
		/* The solver's message starts with "material: "; the path replaces it. */
		const char *msg = strncmp(pe.message, "material: ", 10) == 0 ? pe.message + 10 : pe.message;
		return scn_fail(c, e, "%s", msg);
	}
	for (const char *const *n = drape_material_preset_names(); *n != NULL; n++)
		if (strcmp(*n, v->valuestring) == 0)
			c->s.material = *n;
	return DRAPE_OK;
}

/* A physical constant of the material: finite, > 0 (or >= 0 when zero_ok),
 * then within the solver's range, reported at this key's path. */
static drape_err scn_material_value(scn *c, const cJSON *v, int zero_ok, float *dst)
{
	drape_err e = scn_float_in(c, v, 0.0, 1e30, !zero_ok, dst);
	if (e != DRAPE_OK)
		return e;
	return scn_check_params(c);
}

/*
 * cloth.material: a preset name ("denim"), or an object with an optional
 * "preset" whose values the other keys replace, or the constants given in
 * full (stretch, shear, bend and density required without a preset).
 */
static drape_err scn_material(scn *c, const cJSON *m)
{
	drape_sim_params *p = &c->s.params;
	if (cJSON_IsString(m))
		return scn_preset(c, m);
	static const char *const keys[] = {"preset", "stretch",	"stretch_weft", "shear", "bend",
					   "compression", "density", "damping", NULL};
	drape_err e;
	if (!cJSON_IsObject(m))
		return scn_fail(c, DRAPE_EINVAL, "must be a preset name or an object, not %s", scn_type_name(m));
	if ((e = scn_keys(c, m, keys)) != DRAPE_OK)
		return e;
	if (scn_get(m, "preset") != NULL) {
		SCN_FIELD(c, m, "preset", scn_preset(c, v_));
	} else {
		static const char *const need[] = {"stretch", "shear", "bend", "density"};
		for (int i = 0; i < 4; i++)
			if (scn_get(m, need[i]) == NULL)
				return scn_fail(c, DRAPE_EINVAL,
						"needs \"%s\" (without \"preset\", give stretch, shear, bend and "
						"density)",
						need[i]);
		p->model = DRAPE_MODEL_XPBD;
		p->stretch_k_weft = 0.0f;
		p->compress_k = 0.0f;
		p->damping_rate = SCN_MATERIAL_DAMPING;
		c->s.material = "custom";
	}
	SCN_FIELD(c, m, "stretch", scn_material_value(c, v_, 0, &p->stretch_k));
	SCN_FIELD(c, m, "stretch_weft", scn_material_value(c, v_, 1, &p->stretch_k_weft));
	SCN_FIELD(c, m, "shear", scn_material_value(c, v_, 0, &p->shear_k));
	SCN_FIELD(c, m, "bend", scn_material_value(c, v_, 1, &p->bend_k));
	SCN_FIELD(c, m, "compression", scn_material_value(c, v_, 1, &p->compress_k));
	SCN_FIELD(c, m, "density", scn_material_value(c, v_, 0, &p->density));
	SCN_FIELD(c, m, "damping", scn_material_value(c, v_, 1, &p->damping_rate));
	return scn_check_params(c);
}

/* cloth.model: "pbd" or "xpbd". */
static drape_err scn_model(scn *c, const cJSON *v, int32_t *model)
{
	if (cJSON_IsString(v) && strcmp(v->valuestring, "pbd") == 0)
		*model = DRAPE_MODEL_PBD;
	else if (cJSON_IsString(v) && strcmp(v->valuestring, "xpbd") == 0)
		*model = DRAPE_MODEL_XPBD;
	else if (cJSON_IsString(v))
		return scn_fail(c, DRAPE_EINVAL, "unknown model \"%.64s\" (expected one of: pbd, xpbd)",
				v->valuestring);
	else
		return scn_fail(c, DRAPE_EINVAL, "must be \"pbd\" or \"xpbd\", not %s", scn_type_name(v));
	return DRAPE_OK;
}

/* cloth.schedule: "frame" or "mesh" (sim.h, params.schedule). */
static drape_err scn_schedule(scn *c, const cJSON *v, int32_t *schedule)
{
	if (cJSON_IsString(v) && strcmp(v->valuestring, "frame") == 0)
		*schedule = DRAPE_SCHEDULE_FRAME;
	else if (cJSON_IsString(v) && strcmp(v->valuestring, "mesh") == 0)
		*schedule = DRAPE_SCHEDULE_MESH;
	else if (cJSON_IsString(v))
		return scn_fail(c, DRAPE_EINVAL,
				"unknown schedule \"%.64s\" (expected one of: frame, mesh)", v->valuestring);
	else
		return scn_fail(c, DRAPE_EINVAL, "must be \"frame\" or \"mesh\", not %s",
				scn_type_name(v));
	return DRAPE_OK;
}

drape_err scn_cloth(scn *c, const cJSON *cl)
{
	static const char *const keys[] = {"mesh",      "scale",     "translate", "stretch",
					   "shear",     "bend",      "thickness", "density",
					   "pins",      "material",  "model",     "stitches",
					   "seams",     "rest_mesh", "stitch_stiffness", "sew_speed",
					   "mass_scale", "rest_scale", "stiffness_scale", "friction", "materials",
					   "tear_strain", "schedule", "rotate", "uvs", NULL};
	/* An entry of "cloths" also has its name and collision layers
	 * (scene_cloths.c reads them). */
	static const char *const entry_keys[] = {
		"mesh",	     "scale",	   "translate",	"stretch",	   "shear",	"bend",
		"thickness", "density",	   "pins",	"material",	   "model",	"stitches",
		"seams",     "rest_mesh",  "stitch_stiffness", "sew_speed", "mass_scale", "rest_scale",
		"stiffness_scale", "friction", "materials", "tear_strain", "schedule", "name", "layer", "collides_with", "rotate", "uvs", NULL};
	drape_err e;
	if ((e = scn_want_object(c, cl)) || (e = scn_keys(c, cl, c->in_cloths ? entry_keys : keys)))
		return e;
	drape_sim_params *p = &c->s.params;
	const cJSON *mat = scn_get(cl, "material");
	int32_t model = mat != NULL ? DRAPE_MODEL_XPBD : DRAPE_MODEL_PBD;
	SCN_FIELD(c, cl, "model", scn_model(c, v_, &model));
	if (mat == NULL && model == DRAPE_MODEL_XPBD) {
		scn_push_key(c, "model");
		return scn_fail(c, DRAPE_EINVAL,
				"\"xpbd\" needs \"material\" (a preset name or the physical constants)");
	}
	if (mat != NULL) {
		/* The pbd model's dimensionless stiffness, and a density outside
		 * the material, would silently mean something else next to a
		 * physical material: the material holds them. */
		static const char *const pbd_keys[] = {"stretch", "shear", "bend", "density"};
		for (int i = 0; i < 4; i++) {
			if (scn_get(cl, pbd_keys[i]) == NULL)
				continue;
			scn_push_key(c, pbd_keys[i]);
			if (i == 3)
				return scn_fail(c, DRAPE_EINVAL,
						"give the density inside \"material\" (kg/m^2), e.g. "
						"{\"preset\": \"denim\", \"density\": 0.4}");
			return scn_fail(c, DRAPE_EINVAL,
					"the [0, 1] stiffness of the pbd model cannot be combined with "
					"\"material\"; give \"material\": {\"%s\": ...} in %s instead",
					pbd_keys[i], i == 2 ? "N*m" : "N/m");
		}
		SCN_FIELD(c, cl, "material", scn_material(c, v_));
		p->model = model;
	}
	/* The schedule chooses how XPBD spends the budget; the pbd model
	 * takes substeps x iterations as given, so the key would do nothing
	 * there: refused rather than silently ignored. */
	if (scn_get(cl, "schedule") != NULL && p->model != DRAPE_MODEL_XPBD) {
		scn_push_key(c, "schedule");
		return scn_fail(c, DRAPE_EINVAL,
				"applies to the xpbd model only (a cloth with \"material\"); the pbd "
				"model takes substeps x iterations as given");
	}
	SCN_FIELD(c, cl, "schedule", scn_schedule(c, v_, &p->schedule));
	SCN_FIELD(c, cl, "stretch", scn_param_float(c, v_, &p->stretch));
	SCN_FIELD(c, cl, "shear", scn_param_float(c, v_, &p->shear));
	SCN_FIELD(c, cl, "bend", scn_param_float(c, v_, &p->bend));
	/* "thickness" as an object of groups is read with the mesh's groups
	 * (scene_props.c). */
	const cJSON *thick = scn_get(cl, "thickness");
	if (thick == NULL || !cJSON_IsObject(thick))
		SCN_FIELD(c, cl, "thickness", scn_param_float(c, v_, &p->thickness));
	SCN_FIELD(c, cl, "density", scn_param_float(c, v_, &p->density));
	SCN_FIELD(c, cl, "tear_strain", scn_param_float(c, v_, &p->tear_strain));
	scn_xform xf;
	if ((e = scn_xform_read(c, cl, &xf)) != DRAPE_OK)
		return e;

	const cJSON *mesh = scn_get(cl, "mesh");
	if (mesh == NULL)
		return scn_fail(c, DRAPE_EINVAL, "needs \"mesh\": a path to an OBJ file or {\"grid\": {...}}");
	size_t old = scn_push_key(c, "mesh");
	if (cJSON_IsObject(mesh)) {
		static const char *const mkeys[] = {"grid", NULL};
		if ((e = scn_keys(c, mesh, mkeys)) != DRAPE_OK)
			return e;
		const cJSON *g = scn_get(mesh, "grid");
		if (g == NULL)
			return scn_fail(c, DRAPE_EINVAL, "needs \"grid\" (or give a path to an OBJ file)");
		size_t o2 = scn_push_key(c, "grid");
		if ((e = scn_grid(c, g)) != DRAPE_OK)
			return e;
		scn_pop(c, o2);
	} else if ((e = scn_load_mesh(c, mesh, &c->s.cloth, &c->s.cloth_path)) != DRAPE_OK) {
		return e;
	}
	if ((e = scn_transform(c, &c->s.cloth, &xf)) != DRAPE_OK)
		return e;
	scn_pop(c, old);

	/* "uvs": false drops the mesh's texture coordinates, so the material's
	 * warp stiffness acts in every direction: for meshes whose UVs are
	 * not the fabric's grain (a face per island, a packed atlas). */
	const cJSON *uv = scn_get(cl, "uvs");
	if (uv != NULL) {
		old = scn_push_key(c, "uvs");
		if (!cJSON_IsBool(uv))
			return scn_fail(c, DRAPE_EINVAL,
					"must be true (the mesh's texture coordinates orient the warp and weft) "
					"or false (ignore them), not %s",
					scn_type_name(uv));
		scn_pop(c, old);
		if (cJSON_IsFalse(uv)) {
			free(c->s.cloth.uvs);
			c->s.cloth.uvs = NULL;
			c->s.cloth.uv_seam_vertices = 0;
		}
	}

	const cJSON *pins = scn_get(cl, "pins");
	if (pins != NULL) {
		old = scn_push_key(c, "pins");
		if ((e = scn_pins(c, pins)) != DRAPE_OK)
			return e;
		scn_pop(c, old);
	}
	if ((e = scn_garment(c, cl, &xf)) != DRAPE_OK)
		return e;
	return scn_props(c, cl);
}

/* ---- Colliders -------------------------------------------------------------------------- */

static drape_err scn_keyframes(scn *c, const cJSON *k, drape_collider_desc *d, drape_keyframe **store)
{
	if (!cJSON_IsArray(k))
		return scn_fail(c, DRAPE_EINVAL, "must be an array of {\"frame\", \"translate\", \"rotate\"}");
	int n = cJSON_GetArraySize(k);
	if (n <= 0)
		return DRAPE_OK;
	if ((uint32_t)n > DRAPE_MAX_KEYFRAMES)
		return scn_fail(c, DRAPE_ELIMIT, "%d keyframes, over the limit %d", n, DRAPE_MAX_KEYFRAMES);
	drape_keyframe *keys = calloc((size_t)n, sizeof *keys);
	if (keys == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	*store = keys;
	static const char *const kkeys[] = {"frame", "translate", "rotate", NULL};
	int i = 0;
	drape_err e;
	for (const cJSON *it = k->child; it != NULL; it = it->next, i++) {
		size_t old = scn_push_index(c, (size_t)i);
		if ((e = scn_want_object(c, it)) || (e = scn_keys(c, it, kkeys)))
			return e;
		if (scn_get(it, "frame") == NULL)
			return scn_fail(c, DRAPE_EINVAL, "needs \"frame\"");
		double f = 0.0;
		SCN_FIELD(c, it, "frame", scn_number(c, v_, &f));
		keys[i].frame = (float)f;
		if (i > 0 && !(keys[i].frame > keys[i - 1].frame))
			return scn_fail(c, DRAPE_EINVAL, "frame %g is not after the previous keyframe's %g",
					(double)keys[i].frame, (double)keys[i - 1].frame);
		SCN_FIELD(c, it, "translate", scn_vec(c, v_, 3, keys[i].translate));
		SCN_FIELD(c, it, "rotate", scn_vec(c, v_, 3, keys[i].rotate));
		scn_pop(c, old);
	}
	d->keyframes = keys;
	d->keyframe_count = (uint32_t)n;
	return DRAPE_OK;
}

static drape_err scn_shape(scn *c, const cJSON *sh, drape_collider_desc *d, const char *kind)
{
	drape_err e;
	if ((e = scn_want_object(c, sh)) != DRAPE_OK)
		return e;
	if (strcmp(kind, "plane") == 0) {
		static const char *const k[] = {"point", "normal", NULL};
		if ((e = scn_keys(c, sh, k)) != DRAPE_OK)
			return e;
		if (!scn_get(sh, "point") || !scn_get(sh, "normal"))
			return scn_fail(c, DRAPE_EINVAL, "needs \"point\" and \"normal\"");
		d->shape = DRAPE_SHAPE_PLANE;
		SCN_FIELD(c, sh, "point", scn_vec(c, v_, 3, d->point));
		SCN_FIELD(c, sh, "normal", scn_vec(c, v_, 3, d->normal));
		double l = sqrt((double)d->normal[0] * d->normal[0] + (double)d->normal[1] * d->normal[1] +
				(double)d->normal[2] * d->normal[2]);
		if (!(l > 1e-12)) {
			scn_push_key(c, "normal");
			return scn_fail(c, DRAPE_EINVAL, "must not be zero");
		}
		for (int i = 0; i < 3; i++)
			d->normal[i] = (float)(d->normal[i] / l);
	} else if (strcmp(kind, "sphere") == 0) {
		static const char *const k[] = {"center", "radius", NULL};
		if ((e = scn_keys(c, sh, k)) != DRAPE_OK)
			return e;
		if (!scn_get(sh, "center") || !scn_get(sh, "radius"))
			return scn_fail(c, DRAPE_EINVAL, "needs \"center\" and \"radius\"");
		d->shape = DRAPE_SHAPE_SPHERE;
		SCN_FIELD(c, sh, "center", scn_vec(c, v_, 3, d->center));
		SCN_FIELD(c, sh, "radius", scn_float_in(c, v_, 0.0, 1e30, 1, &d->radius));
	} else if (strcmp(kind, "box") == 0) {
		static const char *const k[] = {"center", "half_extents", "min", "max", NULL};
		if ((e = scn_keys(c, sh, k)) != DRAPE_OK)
			return e;
		int ch = scn_get(sh, "center") && scn_get(sh, "half_extents");
		int mm = scn_get(sh, "min") && scn_get(sh, "max");
		int any_ch = scn_get(sh, "center") || scn_get(sh, "half_extents");
		int any_mm = scn_get(sh, "min") || scn_get(sh, "max");
		if (!((ch && !any_mm) || (mm && !any_ch)))
			return scn_fail(c, DRAPE_EINVAL, "needs either \"center\" and \"half_extents\" or \"min\" and \"max\"");
		d->shape = DRAPE_SHAPE_BOX;
		if (ch) {
			SCN_FIELD(c, sh, "center", scn_vec(c, v_, 3, d->center));
			SCN_FIELD(c, sh, "half_extents", scn_vec(c, v_, 3, d->half_extents));
			for (int i = 0; i < 3; i++)
				if (!(d->half_extents[i] > 0.0f)) {
					scn_push_key(c, "half_extents");
					scn_push_index(c, (size_t)i);
					return scn_fail(c, DRAPE_ERANGE, "%g must be > 0", (double)d->half_extents[i]);
				}
		} else {
			float lo[3], hi[3];
			SCN_FIELD(c, sh, "min", scn_vec(c, v_, 3, lo));
			SCN_FIELD(c, sh, "max", scn_vec(c, v_, 3, hi));
			for (int i = 0; i < 3; i++) {
				if (!(lo[i] < hi[i]))
					return scn_fail(c, DRAPE_EINVAL, "min[%d] = %g must be below max[%d] = %g", i,
							(double)lo[i], i, (double)hi[i]);
				d->center[i] = (float)(0.5 * ((double)lo[i] + hi[i]));
				d->half_extents[i] = (float)(0.5 * ((double)hi[i] - lo[i]));
			}
		}
	} else {
		static const char *const k[] = {"a", "b", "radius", NULL};
		if ((e = scn_keys(c, sh, k)) != DRAPE_OK)
			return e;
		if (!scn_get(sh, "a") || !scn_get(sh, "b") || !scn_get(sh, "radius"))
			return scn_fail(c, DRAPE_EINVAL, "needs \"a\", \"b\" and \"radius\"");
		d->shape = DRAPE_SHAPE_CAPSULE;
		SCN_FIELD(c, sh, "a", scn_vec(c, v_, 3, d->a));
		SCN_FIELD(c, sh, "b", scn_vec(c, v_, 3, d->b));
		SCN_FIELD(c, sh, "radius", scn_float_in(c, v_, 0.0, 1e30, 1, &d->radius));
	}
	return DRAPE_OK;
}

/* "animation": a PC2 or MDD file or an OBJ sequence pattern of the mesh's
 * vertices, resampled to one pose per simulation frame at the scene's fps
 * (pointcache.h), then placed like the mesh. */
static drape_err scn_animation(scn *c, const cJSON *v, uint32_t idx, const scn_xform *x)
{
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
		return scn_fail(c, DRAPE_EINVAL, "must be a non-empty string (a .pc2 or .mdd file, or an OBJ "
						 "sequence such as \"body_%%04d.obj\")");
	drape_collider_desc *d = &c->s.colliders[idx];
	drape_scene_anim *sa = &c->s.collider_anims[idx];
	char *path = scn_resolve(c->base_dir, v->valuestring);
	if (path == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	sa->path = path;
	drape_anim_limits lim;
	drape_anim_limits_default(&lim);
	lim.max_vertices = c->lim.max_vertices;
	drape_anim a;
	drape_error ae;
	drape_error_clear(&ae);
	drape_err e = drape_anim_read_file(path, &lim, &a, &ae);
	if (e != DRAPE_OK)
		return scn_fail(c, e, "%s", ae.message);
	if (a.vertex_count != d->vertex_count) {
		e = scn_fail(c, DRAPE_EINVAL, "%s has %u vertices per frame, the collider's mesh has %u (an animation "
					      "moves the mesh's own vertices, in its order)",
			     path, (unsigned)a.vertex_count, (unsigned)d->vertex_count);
		drape_anim_free(&a);
		return e;
	}
	const double fps = c->s.params.fps;
	sa->format = a.format;
	sa->samples = a.sample_count;
	sa->first_frame = drape_anim_sample_frame(&a, 0, fps);
	sa->last_frame = drape_anim_sample_frame(&a, a.sample_count - 1, fps);
	uint32_t count = 0, first = 0;
	e = drape_anim_resample(&a, fps, path, &sa->frames, &count, &first, &ae);
	drape_anim_free(&a);
	if (e != DRAPE_OK)
		return scn_fail(c, e, "%s", ae.message);
	drape_obj_mesh poses = { 0 };
	poses.positions = sa->frames;
	/* Every pose in one go: scn_transform walks vertex_count vertices. */
	const uint64_t all = (uint64_t)count * d->vertex_count;
	if (all > UINT32_MAX)
		return scn_fail(c, DRAPE_ELIMIT, "%s: %u frames of %u vertices are too many", path, (unsigned)count,
				(unsigned)d->vertex_count);
	poses.vertex_count = (uint32_t)all;
	if ((e = scn_transform(c, &poses, x)) != DRAPE_OK)
		return e;
	d->frames = sa->frames;
	d->frame_count = count;
	d->frame_start = (float)first;
	return DRAPE_OK;
}

static drape_err scn_collider(scn *c, const cJSON *o, uint32_t idx)
{
	static const char *const keys[] = {"mesh",	 "plane",	"sphere",      "box",
					   "capsule",	 "scale",	"translate",   "voxel_size",
					   "max_voxels", "friction",	"static_friction", "restitution",
					   "thickness",	 "keyframes",	"animation",   "rotate", NULL};
	static const char *const kinds[] = {"mesh", "plane", "sphere", "box", "capsule"};
	drape_err e;
	if ((e = scn_want_object(c, o)) || (e = scn_keys(c, o, keys)))
		return e;
	drape_collider_desc *d = &c->s.colliders[idx];
	drape_collider_desc_default(d);
	const char *kind = NULL;
	for (int i = 0; i < 5; i++) {
		if (scn_get(o, kinds[i]) == NULL)
			continue;
		if (kind != NULL)
			return scn_fail(c, DRAPE_EINVAL, "has both \"%s\" and \"%s\" (one shape per collider)", kind,
					kinds[i]);
		kind = kinds[i];
	}
	if (kind == NULL)
		return scn_fail(c, DRAPE_EINVAL, "needs one of \"mesh\", \"plane\", \"sphere\", \"box\", \"capsule\"");
	int is_mesh = strcmp(kind, "mesh") == 0;
	static const char *const mesh_only[] = {"scale", "rotate", "translate", "voxel_size", "max_voxels", "animation"};
	for (int i = 0; i < 6; i++) {
		if (!is_mesh && scn_get(o, mesh_only[i]) != NULL) {
			scn_push_key(c, mesh_only[i]);
			return scn_fail(c, DRAPE_EINVAL, "only mesh colliders take this key (shapes give their own "
							 "center and size)");
		}
	}
	SCN_FIELD(c, o, "friction", scn_float_in(c, v_, 0.0, SCN_MAX_FRICTION, 0, &d->friction));
	SCN_FIELD(c, o, "static_friction", scn_float_in(c, v_, 0.0, SCN_MAX_FRICTION, 0, &d->static_friction));
	SCN_FIELD(c, o, "restitution", scn_float_in(c, v_, 0.0, 1.0, 0, &d->restitution));
	SCN_FIELD(c, o, "thickness", scn_float_in(c, v_, 0.0, SCN_MAX_COLLIDER_THICKNESS, 0, &d->thickness));
	SCN_FIELD(c, o, "keyframes", scn_keyframes(c, v_, d, &c->keys[idx]));
	if (is_mesh) {
		scn_xform xf;
		int64_t mv;
		if ((e = scn_xform_read(c, o, &xf)) != DRAPE_OK)
			return e;
		SCN_FIELD(c, o, "voxel_size", scn_float_in(c, v_, 0.0, 1e30, 0, &d->voxel_size));
		SCN_FIELD(c, o, "max_voxels", scn_integer(c, v_, 1, 9007199254740992.0, &mv));
		if (scn_get(o, "max_voxels") != NULL)
			d->max_voxels = (uint64_t)mv;
		drape_obj_mesh *m = &c->s.collider_meshes[idx];
		size_t old = scn_push_key(c, "mesh");
		if ((e = scn_load_mesh(c, scn_get(o, "mesh"), m, NULL)) != DRAPE_OK)
			return e;
		if ((e = scn_transform(c, m, &xf)) != DRAPE_OK)
			return e;
		scn_pop(c, old);
		d->shape = DRAPE_SHAPE_MESH;
		d->vertices = m->positions;
		d->vertex_count = m->vertex_count;
		d->triangles = m->triangles;
		d->triangle_count = m->triangle_count;
		if (scn_get(o, "animation") != NULL && d->keyframe_count > 0) {
			scn_push_key(c, "keyframes");
			return scn_fail(c, DRAPE_EINVAL, "a collider with an \"animation\" takes its motion from it, "
							 "not from keyframes");
		}
		SCN_FIELD(c, o, "animation", scn_animation(c, v_, idx, &xf));
	} else {
		size_t old = scn_push_key(c, kind);
		if ((e = scn_shape(c, scn_get(o, kind), d, kind)) != DRAPE_OK)
			return e;
		scn_pop(c, old);
	}
	return DRAPE_OK;
}

static drape_err scn_colliders(scn *c, const cJSON *a)
{
	if (!cJSON_IsArray(a))
		return scn_fail(c, DRAPE_EINVAL, "must be an array of colliders, not %s", scn_type_name(a));
	int n = cJSON_GetArraySize(a);
	if (n <= 0)
		return DRAPE_OK;
	if ((uint32_t)n > DRAPE_SCENE_MAX_COLLIDERS)
		return scn_fail(c, DRAPE_ELIMIT, "%d colliders, over the limit %u", n, DRAPE_SCENE_MAX_COLLIDERS);
	c->s.colliders = calloc((size_t)n, sizeof *c->s.colliders);
	c->s.collider_meshes = calloc((size_t)n, sizeof *c->s.collider_meshes);
	c->s.collider_anims = calloc((size_t)n, sizeof *c->s.collider_anims);
	c->keys = calloc((size_t)n, sizeof *c->keys);
	if (!c->s.colliders || !c->s.collider_meshes || !c->s.collider_anims || !c->keys)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	c->s.collider_count = (uint32_t)n;
	uint32_t i = 0;
	for (const cJSON *it = a->child; it != NULL; it = it->next, i++) {
		size_t old = scn_push_index(c, i);
		drape_err e = scn_collider(c, it, i);
		if (e != DRAPE_OK)
			return e;
		scn_pop(c, old);
	}
	return DRAPE_OK;
}

/* ---- Top level ------------------------------------------------------------------------ */

static drape_err scn_wind(scn *c, const cJSON *w)
{
	static const char *const keys[] = {"velocity", "drag", "lift", "air_density", NULL};
	drape_err e;
	if ((e = scn_want_object(c, w)) || (e = scn_keys(c, w, keys)))
		return e;
	drape_sim_params *p = &c->s.params;
	SCN_FIELD(c, w, "velocity", scn_param_vec3(c, v_, p->wind));
	SCN_FIELD(c, w, "drag", scn_param_float(c, v_, &p->drag));
	SCN_FIELD(c, w, "lift", scn_param_float(c, v_, &p->lift));
	SCN_FIELD(c, w, "air_density", scn_param_float(c, v_, &p->air_density));
	return DRAPE_OK;
}

static drape_err scn_bool(scn *c, const cJSON *v, int32_t *dst)
{
	if (!cJSON_IsBool(v))
		return scn_fail(c, DRAPE_EINVAL, "must be true or false, not %s", scn_type_name(v));
	*dst = cJSON_IsTrue(v) ? 1 : 0;
	return DRAPE_OK;
}

static drape_err scn_self(scn *c, const cJSON *s)
{
	drape_sim_params *p = &c->s.params;
	if (cJSON_IsBool(s))
		return scn_bool(c, s, &p->self_collision);
	static const char *const keys[] = {"enabled", "thickness", "friction", NULL};
	drape_err e;
	if ((e = scn_want_object(c, s)) || (e = scn_keys(c, s, keys)))
		return e;
	/* A block without "enabled" means the user wants it on. */
	p->self_collision = 1;
	SCN_FIELD(c, s, "enabled", scn_bool(c, v_, &p->self_collision));
	SCN_FIELD(c, s, "thickness", scn_param_float(c, v_, &p->self_thickness));
	SCN_FIELD(c, s, "friction", scn_param_float(c, v_, &p->self_friction));
	return DRAPE_OK;
}

static drape_err scn_long_range(scn *c, const cJSON *v)
{
	if (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0) {
		c->s.params.long_range = -1;
		return DRAPE_OK;
	}
	if (!cJSON_IsBool(v))
		return scn_fail(c, DRAPE_EINVAL, "must be true, false or \"auto\"");
	c->s.params.long_range = cJSON_IsTrue(v) ? 1 : 0;
	return DRAPE_OK;
}

static drape_err scn_root(scn *c, const cJSON *root)
{
	static const char *const keys[] = {"fps",	"frames",  "substeps",       "iterations", "gravity",
					   "damping",	"wind",	   "cloth",	     "self_collision",
					   "long_range", "colliders", "start_frame", "cloths", NULL};
	drape_err e;
	if (!cJSON_IsObject(root))
		return scn_fail(c, DRAPE_EINVAL, "the scene must be a JSON object, not %s", scn_type_name(root));
	if ((e = scn_keys(c, root, keys)) != DRAPE_OK)
		return e;
	drape_sim_params *p = &c->s.params;
	int64_t frames;
	SCN_FIELD(c, root, "fps", scn_param_float(c, v_, &p->fps));
	SCN_FIELD(c, root, "frames", scn_integer(c, v_, 1, DRAPE_SCENE_MAX_FRAMES, &frames));
	if (scn_get(root, "frames") != NULL)
		c->s.frames = (uint32_t)frames;
	SCN_FIELD(c, root, "substeps", scn_param_int(c, v_, &p->substeps));
	SCN_FIELD(c, root, "iterations", scn_param_int(c, v_, &p->iterations));
	SCN_FIELD(c, root, "gravity", scn_param_vec3(c, v_, p->gravity));
	SCN_FIELD(c, root, "damping", scn_param_float(c, v_, &p->damping));
	SCN_FIELD(c, root, "wind", scn_wind(c, v_));
	SCN_FIELD(c, root, "self_collision", scn_self(c, v_));
	SCN_FIELD(c, root, "long_range", scn_long_range(c, v_));
	/* Colliders before the cloth, so that pins can check "attach". */
	SCN_FIELD(c, root, "colliders", scn_colliders(c, v_));
	/* Without "frames", a scene with animated colliders runs to the last
	 * animation frame. */
	if (scn_get(root, "frames") == NULL) {
		uint32_t last = 0;
		for (uint32_t i = 0; i < c->s.collider_count; i++) {
			const drape_collider_desc *d = &c->s.colliders[i];
			if (d->frame_count > 0 && (uint32_t)d->frame_start + d->frame_count - 1 > last)
				last = (uint32_t)d->frame_start + d->frame_count - 1;
		}
		if (last > 0)
			c->s.frames = last;
	}
	int64_t start;
	SCN_FIELD(c, root, "start_frame", scn_integer(c, v_, 1, DRAPE_SCENE_MAX_FRAMES, &start));
	if (scn_get(root, "start_frame") != NULL) {
		if ((uint64_t)start > c->s.frames) {
			scn_push_key(c, "start_frame");
			return scn_fail(c, DRAPE_ERANGE, "%lld is after the last frame %u (\"frames\")", (long long)start,
					(unsigned)c->s.frames);
		}
		c->s.start_frame = (uint32_t)start;
	}
	const cJSON *cl = scn_get(root, "cloth"), *cls = scn_get(root, "cloths");
	if (cl != NULL && cls != NULL) {
		scn_push_key(c, "cloths");
		return scn_fail(c, DRAPE_EINVAL,
				"give either \"cloth\" (one) or \"cloths\" (several), not both");
	}
	if (cl == NULL && cls == NULL)
		return scn_fail(c, DRAPE_EINVAL, "the scene needs \"cloth\" (or \"cloths\")");
	SCN_FIELD(c, root, "cloth", scn_cloth(c, v_));
	SCN_FIELD(c, root, "cloths", scn_cloths(c, v_, root));
	if (p->model == DRAPE_MODEL_XPBD && scn_get(root, "damping") != NULL) {
		scn_push_key(c, "damping");
		return scn_fail(c, DRAPE_EINVAL,
				"the pbd model's fraction per frame; with a material give "
				"\"material\": {\"damping\": rate in 1/s}");
	}
	return scn_check_params(c);
}

void scn_free_cloth_parts(drape_scene *s)
{
	drape_obj_free(&s->cloth);
	free(s->cloth_path);
	free(s->pins);
	free(s->pin_attach);
	free(s->pin_stiffness);
	free(s->mass_scale);
	free(s->rest_scale);
	free(s->stiffness_scale);
	free(s->vertex_thickness);
	free(s->vertex_friction);
	free(s->stitches);
	free(s->rest_positions);
	s->cloth_path = NULL;
	s->pins = NULL;
	s->pin_attach = NULL;
	s->pin_stiffness = NULL;
	s->pin_count = 0;
	s->mass_scale = s->rest_scale = s->stiffness_scale = NULL;
	s->vertex_thickness = s->vertex_friction = NULL;
	s->stitches = NULL;
	s->stitch_count = s->explicit_stitches = 0;
	s->rest_positions = NULL;
	s->has_seams = 0;
	memset(&s->seams, 0, sizeof s->seams);
}

void drape_scene_free(drape_scene *s)
{
	if (s == NULL)
		return;
	scn_free_cloth_parts(s);
	for (uint32_t i = 0; i < s->object_count; i++) {
		if (s->objects)
			free((char *)s->objects[i].name);
		if (s->object_paths)
			free(s->object_paths[i]);
	}
	free(s->objects);
	free(s->object_ranges);
	free(s->object_paths);
	free(s->object_tris);
	for (uint32_t i = 0; i < s->collider_count; i++) {
		if (s->collider_meshes)
			drape_obj_free(&s->collider_meshes[i]);
		/* The scene allocated every keyframe array it points to. */
		if (s->colliders)
			free((void *)s->colliders[i].keyframes);
		if (s->collider_anims) {
			free(s->collider_anims[i].path);
			free(s->collider_anims[i].frames);
		}
	}
	free(s->colliders);
	free(s->collider_meshes);
	free(s->collider_anims);
	memset(s, 0, sizeof *s);
}

/* Line and column of byte `off` of the text, for JSON syntax errors. */
static void scn_line_col(const char *json, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (json[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

drape_err drape_scene_read_string(const char *json, size_t len, const char *base_dir, const char *name,
				  const drape_obj_limits *limits, drape_scene *out, drape_error *err)
{
	scn c;
	memset(&c, 0, sizeof c);
	c.name = name ? name : "scene";
	c.base_dir = base_dir;
	c.err = err;
	if (limits)
		c.lim = *limits;
	else
		drape_obj_limits_default(&c.lim);
	c.budget_vertices = c.lim.max_vertices;
	c.budget_triangles = c.lim.max_triangles;
	if (json == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: no text or no output given", c.name);
	if (len > SCN_MAX_JSON_BYTES)
		return drape_error_setf(err, DRAPE_ELIMIT, "%s: %zu bytes is over the scene size limit of %u", c.name,
					len, SCN_MAX_JSON_BYTES);
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	if (root == NULL) {
		unsigned line, col;
		size_t off = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
		scn_line_col(json, off, &line, &col);
		return drape_error_setf(err, DRAPE_EPARSE, "%s:%u:%u: JSON syntax error", c.name, line, col);
	}
	/* Only whitespace may follow the value. */
	for (const char *q = end; q != NULL && q < json + len; q++) {
		if (*q != ' ' && *q != '\t' && *q != '\r' && *q != '\n') {
			unsigned line, col;
			scn_line_col(json, (size_t)(q - json), &line, &col);
			cJSON_Delete(root);
			return drape_error_setf(err, DRAPE_EPARSE, "%s:%u:%u: text after the JSON object", c.name,
						line, col);
		}
	}
	drape_sim_params_default(&c.s.params);
	c.s.frames = DRAPE_SCENE_DEFAULT_FRAMES;
	c.s.start_frame = 1;
	drape_err e = scn_root(&c, root);
	cJSON_Delete(root);
	free(c.pin_mark);
	free(c.pin_k);
	if (c.keys != NULL) {
		/* Keyframe arrays not yet attached to a desc are freed here; attached
		 * ones are freed with the scene. */
		for (uint32_t i = 0; i < c.s.collider_count; i++)
			if (c.keys[i] != NULL && c.s.colliders[i].keyframes != c.keys[i])
				free(c.keys[i]);
		free(c.keys);
	}
	if (e != DRAPE_OK) {
		drape_scene_free(&c.s);
		return e;
	}
	*out = c.s;
	drape_error_clear(err);
	return DRAPE_OK;
}

drape_err drape_scene_read(const char *path, const drape_obj_limits *limits, drape_scene *out, drape_error *err)
{
	if (path == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "scene: no path or no output given");
	char *buf;
	size_t got;
	drape_err rc = readfile_whole(path, SCN_MAX_JSON_BYTES, "scene size", &buf, &got, err);
	if (rc != DRAPE_OK)
		return rc;
	/* Mesh paths are relative to the scene file's folder. */
	char *dir;
	const char *slash = strrchr(path, '/');
	if (slash == NULL) {
		dir = strdup(".");
	} else if (slash == path) {
		dir = strdup("/");
	} else {
		dir = strndup(path, (size_t)(slash - path));
	}
	if (dir == NULL) {
		free(buf);
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: out of memory", path);
	}
	drape_err e = drape_scene_read_string(buf, got, dir, path, limits, out, err);
	free(dir);
	free(buf);
	return e;
}
