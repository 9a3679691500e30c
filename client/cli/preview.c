/*
 * drape preview: a shaded PNG of the cloth and its colliders at a frame, or
 * a contact sheet of several frames, drawn on the CPU (client/render.c).
 *
 * Where the frames come from: a folder of frame_NNNN.obj that `drape run
 * --out` wrote (--frames-dir), a session of a running draped (--session,
 * fetched with frames.get), or, with neither, the solver run in this process
 * up to the last frame needed. The scene gives the triangles (the protocol
 * carries positions only) and the colliders; frame 0 is the scene's own
 * pose.
 */
#include "client/cli/cli.h"
#include "client/cli/png.h"
#include "client/render.h"
#include "client/scene.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PV_PI 3.14159265358979323846
/* Most tiles a contact sheet may have. */
#define PV_MAX_SHEET 64u

typedef struct pv_cfg {
	uint32_t frame;       /* --frame N; UINT32_MAX = the last */
	uint32_t width, height;
	bool size_given;
	drape_render_camera cam;
	uint32_t sheet;       /* --sheet N; 0 = one image */
	bool have_session;
	uint32_t session;
	const char *frames_dir;
} pv_cfg;

/* A collider's geometry in its own space, tessellated once. */
typedef struct pv_shape {
	float *pos;
	uint32_t nv;
	uint32_t *tri;
	uint32_t nt;
	float *posed; /* pos moved to the frame being drawn */
} pv_shape;

static bool pv_parse_u32(const char *opt, const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	if (s == NULL || *s < '0' || *s > '9' || errno != 0 || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "drape preview: %s: \"%s\" is not a whole number in %u .. %u\n", opt,
			s ? s : "", lo, hi);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

static bool pv_parse_size(const char *s, pv_cfg *c)
{
	unsigned w, h;
	char tail;
	if (s == NULL || sscanf(s, "%ux%u%c", &w, &h, &tail) != 2 || w < 16 || h < 16 || w > 8192 || h > 8192) {
		fprintf(stderr, "drape preview: --size: \"%s\" is not WxH with each side in 16 .. 8192\n",
			s ? s : "");
		return false;
	}
	c->width = w, c->height = h, c->size_given = true;
	return true;
}

static bool pv_parse_camera(const char *s, pv_cfg *c)
{
	if (s != NULL && strcmp(s, "auto") == 0) {
		drape_render_camera_default(&c->cam);
		return true;
	}
	double az, el, dist = 0.0;
	char tail;
	int n = s ? sscanf(s, "%lf,%lf,%lf%c", &az, &el, &dist, &tail) : 0;
	if (n == 2 && s != NULL) {
		/* az,el with the distance left to auto: "30,20". */
		if (sscanf(s, "%lf,%lf%c", &az, &el, &tail) != 2)
			n = 0;
		dist = 0.0;
	}
	if ((n != 2 && n != 3) || !isfinite(az) || !isfinite(el) || el < -90.0 || el > 90.0 || !isfinite(dist) ||
	    dist < 0.0) {
		fprintf(stderr,
			"drape preview: --camera: \"%s\" is not az,el[,dist] (degrees, elevation in -90 .. 90, "
			"distance in metres >= 0, 0 = fit) or auto\n",
			s ? s : "");
		return false;
	}
	c->cam.azimuth_deg = az, c->cam.elevation_deg = el, c->cam.distance = dist;
	return true;
}

/* ---- Collider geometry ---------------------------------------------------- */

static bool shape_alloc(pv_shape *s, uint32_t nv, uint32_t nt)
{
	s->pos = malloc((size_t)nv * 3 * sizeof *s->pos);
	s->posed = malloc((size_t)nv * 3 * sizeof *s->posed);
	s->tri = malloc((size_t)nt * 3 * sizeof *s->tri);
	s->nv = nv, s->nt = nt;
	return s->pos && s->posed && s->tri;
}

/* A UV sphere (or, with a segment, a capsule: the two hemispheres pulled
 * apart along a -> b). */
static bool shape_sphere(pv_shape *s, const float c0[3], const float c1[3], float radius)
{
	enum { SEG = 32, RING = 16 };
	if (!shape_alloc(s, (RING + 1) * SEG, RING * SEG * 2))
		return false;
	/* A frame whose w axis runs along the capsule (any frame for a sphere). */
	double w[3] = {c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2]};
	double wl = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
	if (wl > 0.0)
		w[0] /= wl, w[1] /= wl, w[2] /= wl;
	else
		w[0] = 0.0, w[1] = 1.0, w[2] = 0.0;
	double a[3] = {fabs(w[0]) < 0.9 ? 1.0 : 0.0, fabs(w[0]) < 0.9 ? 0.0 : 1.0, 0.0};
	double u[3] = {a[1] * w[2] - a[2] * w[1], a[2] * w[0] - a[0] * w[2], a[0] * w[1] - a[1] * w[0]};
	double ul = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
	u[0] /= ul, u[1] /= ul, u[2] /= ul;
	double v[3] = {w[1] * u[2] - w[2] * u[1], w[2] * u[0] - w[0] * u[2], w[0] * u[1] - w[1] * u[0]};
	for (uint32_t r = 0; r <= RING; r++) {
		double th = PV_PI * r / RING; /* from the c1 pole (+w) to the c0 pole */
		const float *c = r <= RING / 2 ? c1 : c0;
		for (uint32_t k = 0; k < SEG; k++) {
			double ph = 2.0 * PV_PI * k / SEG;
			double d[3];
			for (int j = 0; j < 3; j++)
				d[j] = cos(th) * w[j] + sin(th) * (cos(ph) * u[j] + sin(ph) * v[j]);
			for (int j = 0; j < 3; j++)
				s->pos[(r * SEG + k) * 3 + j] = (float)(c[j] + radius * d[j]);
		}
	}
	uint32_t *t = s->tri;
	for (uint32_t r = 0; r < RING; r++)
		for (uint32_t k = 0; k < SEG; k++) {
			uint32_t a0 = r * SEG + k, a1 = r * SEG + (k + 1) % SEG, b0 = a0 + SEG, b1 = a1 + SEG;
			*t++ = a0, *t++ = b0, *t++ = b1, *t++ = a0, *t++ = b1, *t++ = a1;
		}
	return true;
}

static bool shape_box(pv_shape *s, const float c[3], const float h[3])
{
	if (!shape_alloc(s, 8, 12))
		return false;
	for (uint32_t i = 0; i < 8; i++)
		for (int j = 0; j < 3; j++)
			s->pos[i * 3 + j] = c[j] + ((i >> j) & 1 ? h[j] : -h[j]);
	static const uint32_t faces[12][3] = {{0, 2, 3}, {0, 3, 1}, {4, 5, 7}, {4, 7, 6}, {0, 1, 5}, {0, 5, 4},
					      {2, 6, 7}, {2, 7, 3}, {0, 4, 6}, {0, 6, 2}, {1, 3, 7}, {1, 7, 5}};
	memcpy(s->tri, faces, sizeof faces);
	return true;
}

/* A plane is infinite: drawn as a square around the point of it nearest
 * the cloth's centre, twice the cloth's size across. */
static bool shape_plane(pv_shape *s, const float p[3], const float n_in[3], const drape_obj_mesh *cloth)
{
	if (!shape_alloc(s, 4, 2))
		return false;
	double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = 0; i < cloth->vertex_count; i++)
		for (int j = 0; j < 3; j++) {
			double x = cloth->positions[(size_t)i * 3 + j];
			lo[j] = x < lo[j] ? x : lo[j], hi[j] = x > hi[j] ? x : hi[j];
		}
	double n[3] = {n_in[0], n_in[1], n_in[2]};
	double nl = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
	n[0] /= nl, n[1] /= nl, n[2] /= nl;
	double c[3], size = 0.0;
	for (int j = 0; j < 3; j++) {
		c[j] = cloth->vertex_count ? 0.5 * (lo[j] + hi[j]) : p[j];
		size += cloth->vertex_count ? (hi[j] - lo[j]) * (hi[j] - lo[j]) : 1.0;
	}
	size = sqrt(size);
	double off = (c[0] - p[0]) * n[0] + (c[1] - p[1]) * n[1] + (c[2] - p[2]) * n[2];
	for (int j = 0; j < 3; j++)
		c[j] -= off * n[j];
	double a[3] = {fabs(n[0]) < 0.9 ? 1.0 : 0.0, fabs(n[0]) < 0.9 ? 0.0 : 1.0, 0.0};
	double u[3] = {a[1] * n[2] - a[2] * n[1], a[2] * n[0] - a[0] * n[2], a[0] * n[1] - a[1] * n[0]};
	double ul = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
	u[0] /= ul, u[1] /= ul, u[2] /= ul;
	double v[3] = {n[1] * u[2] - n[2] * u[1], n[2] * u[0] - n[0] * u[2], n[0] * u[1] - n[1] * u[0]};
	static const double corner[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 3; j++)
			s->pos[i * 3 + j] = (float)(c[j] + size * (corner[i][0] * u[j] + corner[i][1] * v[j]));
	static const uint32_t tri[6] = {0, 1, 2, 0, 2, 3};
	memcpy(s->tri, tri, sizeof tri);
	return true;
}

static bool shape_make(pv_shape *s, const drape_scene *sc, uint32_t i)
{
	const drape_collider_desc *d = &sc->colliders[i];
	memset(s, 0, sizeof *s);
	switch (d->shape) {
	case DRAPE_SHAPE_PLANE:
		return shape_plane(s, d->point, d->normal, &sc->cloth);
	case DRAPE_SHAPE_SPHERE:
		return shape_sphere(s, d->center, d->center, d->radius);
	case DRAPE_SHAPE_CAPSULE:
		return shape_sphere(s, d->a, d->b, d->radius);
	case DRAPE_SHAPE_BOX:
		return shape_box(s, d->center, d->half_extents);
	case DRAPE_SHAPE_MESH:
		if (!shape_alloc(s, d->vertex_count ? d->vertex_count : 1, d->triangle_count ? d->triangle_count : 1))
			return false;
		s->nv = d->vertex_count, s->nt = d->triangle_count;
		memcpy(s->pos, d->vertices, (size_t)d->vertex_count * 3 * sizeof *s->pos);
		memcpy(s->tri, d->triangles, (size_t)d->triangle_count * 3 * sizeof *s->tri);
		return true;
	}
	return false;
}

/* Moves a collider to its pose at `frame`: a deforming mesh's animation
 * sample (the solver's: sample i is sim frame frame_start + i, the nearest
 * one outside the range; scenes resample animations to whole frames, so
 * at a whole frame this is the solver's pose), then the keyframed rigid
 * motion by the solver's own evaluation (drape_keyframes_eval). */
static void shape_pose(pv_shape *s, const drape_collider_desc *d, uint32_t frame)
{
	const float *src = s->pos;
	if (d->shape == DRAPE_SHAPE_MESH && d->frames != NULL && d->frame_count > 0) {
		double i = floor((double)frame - d->frame_start + 0.5);
		uint32_t k = i <= 0.0 ? 0 : i >= d->frame_count - 1 ? d->frame_count - 1 : (uint32_t)i;
		src = &d->frames[(size_t)k * d->vertex_count * 3];
	}
	float m[9], tr[3];
	drape_keyframes_eval(d->keyframes, d->keyframe_count, (float)frame, m, tr);
	for (uint32_t v = 0; v < s->nv; v++) {
		const float *p = &src[(size_t)v * 3];
		for (int j = 0; j < 3; j++)
			s->posed[(size_t)v * 3 + j] =
				(float)(m[j * 3] * p[0] + m[j * 3 + 1] * p[1] + m[j * 3 + 2] * p[2] + tr[j]);
	}
}

/* ---- Frames ---------------------------------------------------------------- */

/* The frames to draw: one, or the sheet's n spread evenly from first to
 * last. */
static uint32_t pick_frames(const pv_cfg *c, uint32_t first, uint32_t last, uint32_t *out)
{
	if (c->sheet == 0) {
		out[0] = c->frame == UINT32_MAX ? last : c->frame;
		return 1;
	}
	uint32_t n = c->sheet, span = last - first;
	if (n > span + 1)
		n = span + 1;
	for (uint32_t k = 0; k < n; k++)
		out[k] = n == 1 ? last : first + (uint32_t)(((uint64_t)k * span + (n - 1) / 2) / (n - 1));
	return n;
}

/* The highest N with DIR/frame_NNNN.obj, 0 when there is none; *first the
 * lowest (frames before a scene's start_frame are not written). */
static uint32_t dir_last_frame(const char *dir, uint32_t *first)
{
	DIR *d = opendir(dir);
	*first = 0;
	if (d == NULL)
		return 0;
	uint32_t best = 0, low = UINT32_MAX;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned n;
		char tail[8];
		if (sscanf(e->d_name, "frame_%u.%7s", &n, tail) != 2 || strcmp(tail, "obj") != 0 || n == 0)
			continue;
		best = n > best ? n : best;
		low = n < low ? n : low;
	}
	closedir(d);
	*first = best > 0 ? low : 0;
	return best;
}

static int frames_from_dir(const char *dir, const drape_scene *sc, const uint32_t *which, uint32_t n,
			   float **pos)
{
	for (uint32_t k = 0; k < n; k++) {
		if (which[k] == 0) {
			memcpy(pos[k], sc->cloth.positions, (size_t)sc->cloth.vertex_count * 3 * sizeof(float));
			continue;
		}
		char path[4096];
		snprintf(path, sizeof path, "%s/frame_%04u.obj", dir, which[k]);
		drape_obj_mesh m;
		drape_error err;
		drape_err rc = drape_obj_read_file(path, NULL, &m, &err);
		if (rc != DRAPE_OK)
			return cli_fail("reading a frame", rc, &err);
		if (m.vertex_count != sc->cloth.vertex_count) {
			fprintf(stderr, "drape preview: %s: %u vertices, the scene's cloth has %u\n", path,
				m.vertex_count, sc->cloth.vertex_count);
			drape_obj_free(&m);
			return CLI_DATAERR;
		}
		memcpy(pos[k], m.positions, (size_t)m.vertex_count * 3 * sizeof(float));
		drape_obj_free(&m);
	}
	return 0;
}

static int frames_from_solver(const drape_scene *sc, const uint32_t *which, uint32_t n, float **pos)
{
	drape_sim_desc d;
	drape_sim *sim;
	drape_error err;
	float *inv_mass = NULL;
	drape_err rc = cli_scene_sim_desc(sc, &d, &inv_mass, &err);
	if (rc == DRAPE_OK)
		rc = drape_sim_create(&d, &sim, &err);
	free(inv_mass);
	if (rc != DRAPE_OK)
		return cli_fail("creating the solver", rc, &err);
	int x = 0;
	for (uint32_t i = 0; i < sc->collider_count && x == 0; i++) {
		rc = drape_sim_add_collider(sim, &sc->colliders[i], NULL, &err);
		if (rc != DRAPE_OK)
			x = cli_fail("adding a collider", rc, &err);
	}
	for (uint32_t i = 0; i < sc->pin_count && x == 0 && sc->pin_attach; i++) {
		if (sc->pin_attach[i] == DRAPE_SCENE_NO_ATTACH)
			continue;
		rc = drape_sim_attach_pins(sim, &sc->pins[i], 1, (uint32_t)sc->pin_attach[i], &err);
		if (rc != DRAPE_OK)
			x = cli_fail("attaching pins", rc, &err);
	}
	uint32_t last = 0;
	for (uint32_t k = 0; k < n; k++)
		last = which[k] > last ? which[k] : last;
	for (uint32_t f = 0; f <= last && x == 0; f++) {
		if (f > 0) {
			if (cli_interrupted) {
				x = CLI_INTERRUPTED;
				break;
			}
			rc = drape_sim_step(sim, NULL, &err);
			if (rc != DRAPE_OK) {
				x = cli_fail("solving", rc, &err);
				break;
			}
		}
		for (uint32_t k = 0; k < n; k++)
			if (which[k] == f)
				drape_sim_get_positions(sim, pos[k]);
	}
	drape_sim_destroy(sim);
	return x;
}

static int frames_from_session(const cli_opts *o, const pv_cfg *c, const drape_scene *sc, uint32_t *which,
			       uint32_t *n, float **pos)
{
	const char *url = o->server ? o->server : DRAPE_DEFAULT_URL;
	bool have_token;
	drape_session s = cli_session_handle(url, c->session, o, &have_token);
	drape_client *cl = NULL;
	drape_error err;
	if (!have_token) {
		fprintf(stderr,
			"drape preview: no owner token for session %u (the server gives a session's frames "
			"to its owner only): pass --owner-token HEX\n",
			c->session);
		return CLI_NOPERM;
	}
	drape_err rc = cli_connect(url, o, &cl, &err);
	if (rc != DRAPE_OK)
		return cli_fail(url, rc, &err);
	drape_status st;
	rc = drape_session_status(cl, s, &st, &err);
	int x = 0;
	if (rc != DRAPE_OK) {
		x = cli_fail("session status", rc, &err);
		goto out;
	}
	*n = pick_frames(c, 0, st.frames_done, which);
	for (uint32_t k = 0; k < *n && x == 0; k++) {
		if (which[k] == 0) {
			memcpy(pos[k], sc->cloth.positions, (size_t)sc->cloth.vertex_count * 3 * sizeof(float));
			continue;
		}
		drape_frame *fr = NULL;
		uint32_t got = 0;
		rc = drape_frames_get(cl, s, which[k], 1, &fr, &got, NULL, &err);
		if (rc != DRAPE_OK) {
			x = cli_fail("fetching a frame", rc, &err);
			break;
		}
		if (got < 1 || fr[0].index != which[k]) {
			fprintf(stderr, "drape preview: --frame: session %u does not hold frame %u (it holds %u "
					"to %u)\n",
				c->session, which[k], st.frames_first, st.frames_done);
			x = CLI_DATAERR;
		} else if (fr[0].vertex_count != sc->cloth.vertex_count) {
			fprintf(stderr, "drape preview: --scene: the cloth has %u vertices, session %u has %u\n",
				sc->cloth.vertex_count, c->session, fr[0].vertex_count);
			x = CLI_DATAERR;
		} else {
			memcpy(pos[k], fr[0].positions, (size_t)fr[0].vertex_count * 3 * sizeof(float));
		}
		drape_frames_free(fr, got);
	}
out:
	drape_close(cl);
	return x;
}

/* ---- The image -------------------------------------------------------------- */

static int draw(const pv_cfg *c, const cli_opts *o, const drape_scene *sc, const uint32_t *which, uint32_t n,
		float **pos)
{
	uint32_t nc = sc->collider_count;
	pv_shape *shapes = calloc(nc ? nc : 1, sizeof *shapes);
	drape_render_mesh *meshes = calloc((size_t)n * (1 + nc), sizeof *meshes);
	uint32_t cols = n == 1 ? 1 : (uint32_t)ceil(sqrt((double)n));
	uint32_t rows = (n + cols - 1) / cols;
	uint32_t tw = c->width, th = c->height;
	uint32_t iw = tw * cols, ih = th * rows;
	uint8_t *img = malloc((size_t)iw * ih * 3);
	uint8_t *tile = malloc((size_t)tw * th * 3);
	float **posed = calloc((size_t)n * (nc ? nc : 1), sizeof *posed);
	int x = 0;
	drape_error err;
	if (shapes == NULL || meshes == NULL || img == NULL || tile == NULL || posed == NULL) {
		fprintf(stderr, "drape preview: out of memory for a %ux%u image\n", iw, ih);
		x = CLI_SOFTWARE;
		goto out;
	}
	for (uint32_t i = 0; i < nc && x == 0; i++)
		if (!shape_make(&shapes[i], sc, i)) {
			fprintf(stderr, "drape preview: out of memory for collider %u\n", i);
			x = CLI_SOFTWARE;
		}
	/* Every frame's cloth and posed colliders, so one camera can frame the
	 * whole sheet. */
	for (uint32_t k = 0; k < n && x == 0; k++) {
		drape_render_mesh *m = &meshes[k * (1 + nc)];
		m[0] = (drape_render_mesh){pos[k], sc->cloth.vertex_count, sc->cloth.triangles,
					   sc->cloth.triangle_count, DRAPE_RENDER_CLOTH};
		for (uint32_t i = 0; i < nc && x == 0; i++) {
			shape_pose(&shapes[i], &sc->colliders[i], which[k]);
			posed[k * nc + i] = malloc((size_t)shapes[i].nv * 3 * sizeof(float) + 1);
			if (posed[k * nc + i] == NULL) {
				x = CLI_SOFTWARE;
				break;
			}
			memcpy(posed[k * nc + i], shapes[i].posed, (size_t)shapes[i].nv * 3 * sizeof(float));
			m[1 + i] = (drape_render_mesh){posed[k * nc + i], shapes[i].nv, shapes[i].tri, shapes[i].nt,
						       DRAPE_RENDER_COLLIDER};
		}
	}
	if (x != 0)
		goto out;
	/* The camera frames the cloth; colliders such as a floor plane or a
	 * large body would otherwise shrink it to a speck. */
	drape_render_mesh *cloths = malloc((size_t)n * sizeof *cloths);
	drape_render_view view;
	drape_err rc = DRAPE_ENOMEM;
	if (cloths != NULL) {
		for (uint32_t k = 0; k < n; k++)
			cloths[k] = meshes[k * (1 + nc)];
		rc = drape_render_view_make(&c->cam, cloths, n, tw, th, &view, &err);
		free(cloths);
	} else {
		drape_error_setf(&err, DRAPE_ENOMEM, "out of memory");
	}
	if (rc != DRAPE_OK) {
		x = cli_fail("preview", rc, &err);
		goto out;
	}
	double t0 = cli_now_ms();
	for (uint32_t k = 0; k < n && x == 0; k++) {
		rc = drape_render_draw(&view, &meshes[k * (1 + nc)], 1 + nc, tile, &err);
		if (rc != DRAPE_OK) {
			x = cli_fail("preview", rc, &err);
			break;
		}
		if (n > 1) {
			char label[16];
			snprintf(label, sizeof label, "%u", which[k]);
			static const uint8_t white[3] = {235, 235, 235};
			int scale = th >= 200 ? 2 : 1;
			drape_render_text(tile, tw, th, 4 * scale, 4 * scale, scale, label, white);
		}
		uint32_t cx = (k % cols) * tw, cy = (k / cols) * th;
		for (uint32_t y = 0; y < th; y++)
			memcpy(&img[(((size_t)cy + y) * iw + cx) * 3], &tile[(size_t)y * tw * 3], (size_t)tw * 3);
	}
	double render_ms = cli_now_ms() - t0;
	if (x != 0)
		goto out;
	/* Tiles a short sheet leaves empty are background. */
	for (uint32_t k = n; k < cols * rows; k++) {
		uint32_t cx = (k % cols) * tw, cy = (k / cols) * th;
		for (uint32_t y = 0; y < th; y++)
			for (uint32_t xx = 0; xx < tw; xx++) {
				uint8_t *p = &img[(((size_t)cy + y) * iw + cx + xx) * 3];
				p[0] = DRAPE_RENDER_BG_R, p[1] = DRAPE_RENDER_BG_G, p[2] = DRAPE_RENDER_BG_B;
			}
	}
	const char *out_path = o->out_dir ? o->out_dir : (n > 1 ? "sheet.png" : "preview.png");
	rc = cli_png_write(out_path, img, iw, ih, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("writing the image", rc, &err);
		goto out;
	}
	if (o->json) {
		printf("{\"out\":");
		cli_json_str(stdout, out_path);
		printf(",\"width\":%u,\"height\":%u,\"frames\":[", iw, ih);
		for (uint32_t k = 0; k < n; k++)
			printf("%s%u", k ? "," : "", which[k]);
		printf("],\"vertices\":%u,\"render_ms\":%.2f}\n", sc->cloth.vertex_count, render_ms);
	} else if (!o->quiet) {
		printf("%s\n", out_path);
		fprintf(stderr, "drape preview: %ux%u, %u frame%s, %u vertices, drawn in %.1f ms\n", iw, ih, n,
			n == 1 ? "" : "s", sc->cloth.vertex_count, render_ms);
	}
out:
	if (posed != NULL)
		for (size_t i = 0; i < (size_t)n * nc; i++)
			free(posed[i]);
	for (uint32_t i = 0; shapes != NULL && i < nc; i++)
		free(shapes[i].pos), free(shapes[i].posed), free(shapes[i].tri);
	free(posed), free(shapes), free(meshes), free(img), free(tile);
	return x;
}

int cli_cmd_preview(int argc, char **argv)
{
	static const char *const allowed[] = {"--server", "--token-file", "--owner-token", "--out", "--scene",
					      "--json", "--quiet", "--timeout", NULL};
	pv_cfg c = {.frame = UINT32_MAX, .width = 640, .height = 480};
	drape_render_camera_default(&c.cam);
	char **rest = malloc((size_t)argc * sizeof *rest);
	if (rest == NULL)
		return CLI_SOFTWARE;
	int nrest = 0;
	for (int i = 0; i < argc; i++) {
		static const char *const own[] = {"--frame", "--size", "--camera", "--sheet", "--session",
						  "--frames-dir"};
		int which = -1;
		size_t n = 0;
		for (int k = 0; k < 6 && i >= 2; k++) {
			n = strlen(own[k]);
			if (strncmp(argv[i], own[k], n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '=')) {
				which = k;
				break;
			}
		}
		if (which < 0) {
			rest[nrest++] = argv[i];
			continue;
		}
		const char *val = argv[i][n] == '=' ? argv[i] + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
		bool ok = true;
		switch (which) {
		case 0:
			ok = pv_parse_u32("--frame", val, 0, DRAPE_SCENE_MAX_FRAMES, &c.frame);
			break;
		case 1:
			ok = pv_parse_size(val, &c);
			break;
		case 2:
			ok = pv_parse_camera(val, &c);
			break;
		case 3:
			ok = pv_parse_u32("--sheet", val, 2, PV_MAX_SHEET, &c.sheet);
			break;
		case 4:
			ok = pv_parse_u32("--session", val, 0, UINT32_MAX, &c.session);
			c.have_session = ok;
			break;
		case 5:
			c.frames_dir = val;
			ok = val != NULL;
			if (!ok)
				fprintf(stderr, "drape preview: --frames-dir needs a value\n");
			break;
		}
		if (!ok) {
			free(rest);
			return CLI_USAGE;
		}
	}
	cli_opts o;
	bool parsed = cli_parse(nrest, rest, 2, allowed, 1, "preview", &o);
	free(rest);
	if (!parsed)
		return CLI_USAGE;
	if (o.help) {
		cli_usage("preview", false);
		return CLI_OK;
	}
	const char *scene_path = o.nargs == 1 ? o.args[0] : o.scene;
	if (o.nargs == 1 && o.scene != NULL) {
		fprintf(stderr, "drape preview: give the scene once (SCENE.json or --scene)\n");
		return CLI_USAGE;
	}
	if (scene_path == NULL) {
		fprintf(stderr, "drape preview: a scene is needed for the triangles and colliders "
				"(SCENE.json, or --scene with --session)\n");
		return CLI_USAGE;
	}
	if (c.have_session && c.frames_dir != NULL) {
		fprintf(stderr, "drape preview: --session and --frames-dir exclude each other\n");
		return CLI_USAGE;
	}
	if (c.sheet > 0 && c.frame != UINT32_MAX) {
		fprintf(stderr, "drape preview: --sheet and --frame exclude each other\n");
		return CLI_USAGE;
	}
	if (c.sheet > 0 && !c.size_given)
		c.width = 320, c.height = 240;
	cli_signals_install();
	drape_scene sc;
	drape_error err;
	drape_err rc = drape_scene_read(scene_path, NULL, &sc, &err);
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape preview: %s\n", err.message);
		return rc == DRAPE_EIO ? CLI_NOINPUT : CLI_DATAERR;
	}
	uint32_t which[PV_MAX_SHEET];
	float *pos[PV_MAX_SHEET] = {0};
	uint32_t n = 0;
	int x = 0;
	size_t bytes = (size_t)sc.cloth.vertex_count * 3 * sizeof(float) + 1;
	for (uint32_t k = 0; k < PV_MAX_SHEET && x == 0; k++)
		if (k < (c.sheet ? c.sheet : 1) && (pos[k] = malloc(bytes)) == NULL)
			x = CLI_SOFTWARE;
	if (x != 0) {
		fprintf(stderr, "drape preview: out of memory\n");
	} else if (c.have_session) {
		x = frames_from_session(&o, &c, &sc, which, &n, pos);
	} else if (c.frames_dir != NULL) {
		uint32_t first, last = dir_last_frame(c.frames_dir, &first);
		n = pick_frames(&c, first, last, which);
		if (last == 0 && (c.frame == UINT32_MAX || c.frame > 0)) {
			fprintf(stderr, "drape preview: --frames-dir: %s holds no frame_NNNN.obj\n", c.frames_dir);
			x = CLI_NOINPUT;
		} else {
			x = frames_from_dir(c.frames_dir, &sc, which, n, pos);
		}
	} else {
		n = pick_frames(&c, 0, sc.frames, which);
		x = frames_from_solver(&sc, which, n, pos);
	}
	if (x == 0)
		x = draw(&c, &o, &sc, which, n, pos);
	for (uint32_t k = 0; k < PV_MAX_SHEET; k++)
		free(pos[k]);
	drape_scene_free(&sc);
	return x;
}
