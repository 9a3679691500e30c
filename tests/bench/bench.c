/*
 * make bench: the fixed scenes of issue 6, one table row each.
 *
 * Every scene runs in a forked child, so that its peak memory is its own:
 * the "peak MB" column is the child's ru_maxrss from wait4 (the whole
 * process: solver, mesh arrays, collider fields, libraries), and "sim B/v"
 * is what the sim itself holds in its arrays (sim_memory_bytes) per vertex.
 * The child sends its figures back through a pipe.
 *
 * Timing: each frame's drape_sim_step is timed on the monotonic clock; the
 * table shows the median of the timed frames after the warm-up frames.
 * "ns/proj" is that median divided by constraints x substeps x iterations,
 * where constraints counts stretch + shear + bend records (the issue's
 * 804,011 for sheet300); long-range attachments, colliders and
 * self-collision are inside the frame time but not in that count.
 *
 * The machine is shared and noisy, so the comparisons that matter (fast
 * path against the plain scalar Gauss-Seidel path, 1 against 2 threads) are
 * measured in the same run and printed as ratios.
 */
#include "drape/drape.h"
#include "drape/sim.h"
#include "client/obj.h"
#include "server/sim/internal.h"
#include "server/sim/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* See bench_ipc.inc. */
#define BENCH_IPC_TIMEOUT_STATUS 3
#define BENCH_IPC_DEADLINE_S 120

typedef struct bench_result {
	int ok;           /* 1 measured, 0 not available (note says why) */
	char note[320];
	uint32_t vertices;
	uint64_t constraints;
	uint32_t threads;
	uint32_t sweeps; /* substeps x iterations */
	double ms;        /* median frame time */
	double cpu_ms;    /* median process CPU time per frame, all threads */
	double best_ms;   /* fastest timed frame: the least disturbed by other load */
	float strain;     /* max strain at the last frame */
	float mean_strain;
	float p99_strain; /* garment rows: 99th percentile of the last frame's edges */
	double sim_bytes; /* the sim's own arrays */
	double self_ms;   /* median self-collision time per frame */
	double collide_ms; /* median collider time per frame (stats.collide_ms) */
	double upload_ms; /* walking body: its animation's upload through draped */
	double upload_mb;
	/* Hanging sheets: stretch edges over 2 % strain at the last frame,
	 * and the sheet row (0 = pinned) and column of the worst edge. */
	uint32_t over2, worst_row, worst_col;
	long maxrss_kb;   /* filled by the parent */
	long server_rss_kb; /* the daemon's, for the ipc scene */
} bench_result;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- Scenes ---------------------------------------------------------------- */

typedef struct sheet {
	float *pos;
	uint32_t *tri;
	uint32_t nv, nt, nx;
} sheet;

/* nx x nx vertices, `spacing` apart, horizontal at height y, centred on the
 * origin; vertex (i, j) is j * nx + i, row j = 0 is the first row. The
 * quad diagonals alternate so the sheet has no preferred shear. */
static int sheet_make(sheet *s, uint32_t nx, float spacing, float y)
{
	s->nx = nx;
	s->nv = nx * nx;
	s->nt = 2 * (nx - 1) * (nx - 1);
	s->pos = malloc((size_t)s->nv * 3 * sizeof *s->pos);
	s->tri = malloc((size_t)s->nt * 3 * sizeof *s->tri);
	if (!s->pos || !s->tri)
		return 0;
	float half = 0.5f * spacing * (float)(nx - 1);
	for (uint32_t j = 0; j < nx; j++)
		for (uint32_t i = 0; i < nx; i++) {
			float *q = &s->pos[3 * (size_t)(j * nx + i)];
			q[0] = (float)i * spacing - half;
			q[1] = y;
			q[2] = (float)j * spacing - half;
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < nx; j++)
		for (uint32_t i = 0; i + 1 < nx; i++) {
			uint32_t a = j * nx + i, b = a + 1, c = a + nx, d = c + 1;
			uint32_t *q = &s->tri[6 * (size_t)t++];
			if ((i + j) % 2) {
				q[0] = a, q[1] = c, q[2] = b, q[3] = b, q[4] = c, q[5] = d;
			} else {
				q[0] = a, q[1] = c, q[2] = d, q[3] = a, q[4] = d, q[5] = b;
			}
		}
	return 1;
}

static void sheet_free(sheet *s)
{
	free(s->pos);
	free(s->tri);
}

typedef enum scene_kind {
	SCENE_HANG,   /* first row pinned */
	SCENE_SPHERE, /* no pins, falls onto a sphere */
	SCENE_FOLD,   /* as SCENE_SPHERE, with self-collision */
	SCENE_TSHIRT,
	SCENE_GARMENT,        /* examples/garment.json as it is: cotton, the material's schedule */
	SCENE_GARMENT_NOSELF, /* the same without self-collision */
	SCENE_GARMENT_LARGE,  /* SCENE_GARMENT with every triangle cut in nine (bench_large.inc) */
	SCENE_IPC,
	SCENE_WALK,
} scene_kind;

typedef struct scene {
	const char *name;
	scene_kind kind;
	uint32_t nx;       /* sheet vertices per side */
	uint32_t threads;  /* pool size; 1 = no pool */
	uint32_t flags;    /* SIM_CREATE_* */
	int long_range;    /* params.long_range */
	int warmup, timed; /* frames */
	float bend;        /* params.bend; 0 keeps the default */
} scene;

static uint32_t g_cores = 2;

/* Steps `sim` warmup + timed frames; fills ms (median of timed), strain and
 * self_ms. Returns 0 if a step failed. */
static int run_frames(drape_sim *sim, const scene *sc, bench_result *r, int want_self)
{
	int total = sc->warmup + sc->timed;
	double *t = malloc((size_t)(sc->timed > 0 ? sc->timed : 1) * sizeof *t);
	double *ts = malloc((size_t)(sc->timed > 0 ? sc->timed : 1) * sizeof *ts);
	double *tc = malloc((size_t)(sc->timed > 0 ? sc->timed : 1) * sizeof *tc);
	double *tk = malloc((size_t)(sc->timed > 0 ? sc->timed : 1) * sizeof *tk);
	uint64_t pairs = 0;
	drape_sim_stats st;
	memset(&st, 0, sizeof st);
	for (int f = 0; f < total; f++) {
		drape_error err;
		double t0 = now_ms(), c0 = cpu_ms();
		if (drape_sim_step(sim, &st, &err) != DRAPE_OK) {
			snprintf(r->note, sizeof r->note, "step %d: %s", f, err.message);
			free(t);
			free(ts);
			free(tc);
			free(tk);
			return 0;
		}
		double dt = now_ms() - t0, dc = cpu_ms() - c0;
		pairs += st.self_pairs;
		if (f >= sc->warmup) {
			t[f - sc->warmup] = dt;
			ts[f - sc->warmup] = st.self_ms;
			tc[f - sc->warmup] = dc;
			tk[f - sc->warmup] = st.collide_ms;
		}
	}
	r->ms = median(t, sc->timed);
	r->best_ms = t[0]; /* median() sorted t */
	r->self_ms = median(ts, sc->timed);
	r->cpu_ms = median(tc, sc->timed);
	r->collide_ms = median(tk, sc->timed);
	free(tc);
	free(tk);
	r->strain = st.max_strain;
	r->mean_strain = st.mean_strain;
	free(t);
	free(ts);
	if (want_self && pairs == 0 && r->self_ms == 0.0) {
		/* self_collision = 1 was accepted but the step never reported a
		 * candidate pair nor any time in it: not wired yet. */
		snprintf(r->note, sizeof r->note, "n/a (self-collision not wired)");
		return 0;
	}
	return 1;
}

static void fill_counts(const drape_sim *sim, bench_result *r)
{
	drape_sim_topology tp;
	drape_sim_get_topology(sim, &tp);
	r->vertices = tp.vertices;
	r->constraints = (uint64_t)sim->stretch_count + sim->shear_count + sim->bend_count;
	r->sim_bytes = (double)sim_memory_bytes(sim);
}

/* Where the strain of a hanging sheet is (for the long-range line): edges
 * over 2 % and the grid cell of the worst one (its upper, then left end). */
static void sheet_strain_where(const drape_sim *sim, uint32_t nx, bench_result *r)
{
	float worst = -1.0f;
	r->over2 = 0;
	for (uint32_t e = 0; e < sim->stretch_count; e++) {
		const sim_dist *c = &sim->stretch[e];
		float l = v3_len(v3_sub(v3_of4(sim->x[c->a]), v3_of4(sim->x[c->b])));
		float s = fabsf(l - c->rest) / c->rest;
		r->over2 += s > 0.02f;
		if (s > worst) {
			uint32_t a = sim->order ? sim->order[c->a] : c->a;
			uint32_t b = sim->order ? sim->order[c->b] : c->b;
			uint32_t lo = a < b ? a : b;
			worst = s;
			r->worst_row = lo / nx;
			r->worst_col = lo % nx;
		}
	}
}

/* BENCH_BODYKEEP=0 searches the body-feature candidates afresh every
 * substep instead of keeping them across a frame's substeps (bodykeep.c):
 * the same bits, for A/B timings in one session. */
static uint32_t keep_flags(uint32_t flags)
{
	const char *k = getenv("BENCH_BODYKEEP");
	return k != NULL && strcmp(k, "0") == 0 ? flags | SIM_CREATE_BODYPUSH_FRESH : flags;
}

/* BENCH_SHEET_NX=n builds the sheet scenes n x n instead of their own size,
 * and BENCH_FRAMES=w,t runs w warm-up and t timed frames: for counting a
 * row's instructions under callgrind in a few minutes. */
static uint32_t sheet_nx(const scene *sc)
{
	const char *e = getenv("BENCH_SHEET_NX");
	long n = e != NULL ? strtol(e, NULL, 10) : 0;
	return n >= 2 && n <= 4000 ? (uint32_t)n : sc->nx;
}

static void run_sheet(const scene *sc, bench_result *r)
{
	sheet s;
	float y = sc->kind == SCENE_HANG ? 0.0f : 0.55f;
	if (!sheet_make(&s, sheet_nx(sc), 0.01f, y)) {
		snprintf(r->note, sizeof r->note, "out of memory");
		return;
	}
	drape_pool *pool = NULL;
	drape_error err;
	if (sc->threads > 1 && drape_pool_create(sc->threads, &pool, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "pool: %s", err.message);
		sheet_free(&s);
		return;
	}
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = s.pos;
	d.vertex_count = s.nv;
	d.triangles = s.tri;
	d.triangle_count = s.nt;
	d.pool = pool;
	d.params.fps = 60.0f;
	d.params.substeps = 4;
	d.params.iterations = 5;
	d.params.long_range = sc->long_range;
	if (sc->bend > 0.0f)
		d.params.bend = sc->bend;
	uint32_t *pins = NULL;
	if (sc->kind == SCENE_HANG) {
		pins = malloc(s.nx * sizeof *pins);
		for (uint32_t i = 0; i < s.nx; i++)
			pins[i] = i;
		d.pins = pins;
		d.pin_count = s.nx;
	}
	if (sc->kind == SCENE_FOLD)
		d.params.self_collision = 1;
	drape_sim *sim = NULL;
	if (sim_create_ex(&d, keep_flags(sc->flags), &sim, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "create: %s", err.message);
		goto out;
	}
	if (sc->kind != SCENE_HANG) {
		drape_collider_desc c;
		drape_collider_desc_default(&c);
		c.shape = DRAPE_SHAPE_SPHERE;
		c.radius = 0.5f;
		uint32_t idx;
		if (drape_sim_add_collider(sim, &c, &idx, &err) != DRAPE_OK) {
			snprintf(r->note, sizeof r->note, "collider: %s", err.message);
			goto out;
		}
	}
	fill_counts(sim, r);
	r->threads = sc->threads;
	r->sweeps = 4 * 5;
	r->ok = run_frames(sim, sc, r, sc->kind == SCENE_FOLD);
	if (r->ok && sc->kind == SCENE_HANG)
		sheet_strain_where(sim, s.nx, r);
out:
	drape_sim_destroy(sim);
	drape_pool_destroy(pool);
	free(pins);
	sheet_free(&s);
}

static const char *mesh_dir(void)
{
	const char *d = getenv("DRAPE_MESHES");
	return d ? d : "tests/data/meshes";
}

#include "tests/bench/bench_large.inc"

static int strain_cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* The 99th percentile of the stretch edges' strain |l - l0| / l0 at the
 * sim's current positions (the measure of stats.max_strain and
 * mean_strain), for the garment rows' strain line; 0 when out of memory. */
static float edge_strain_p99(const drape_sim *sim)
{
	const uint32_t n = sim->stretch_count;
	float *s = malloc((n ? n : 1) * sizeof *s);
	if (s == NULL || n == 0) {
		free(s);
		return 0.0f;
	}
	for (uint32_t i = 0; i < n; i++) {
		const sim_dist *c = &sim->stretch[i];
		float l = v3_len(v3_sub(v3_of4(sim->x[c->a]), v3_of4(sim->x[c->b])));
		s[i] = fabsf(l - c->rest) / c->rest;
	}
	qsort(s, n, sizeof *s, strain_cmp);
	float p = s[(size_t)(0.99 * (double)(n - 1))];
	free(s);
	return p;
}

static void run_tshirt(const scene *sc, bench_result *r)
{
	char shirt_path[512], body_path[512];
	snprintf(shirt_path, sizeof shirt_path, "%s/mh_male_casualsuit04.obj", mesh_dir());
	snprintf(body_path, sizeof body_path, "%s/mh_proxy_male_generic.obj", mesh_dir());
	drape_obj_mesh shirt, body;
	drape_error err;
	if (drape_obj_read_file(shirt_path, NULL, &shirt, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "n/a (%s)", err.message);
		return;
	}
	if (drape_obj_read_file(body_path, NULL, &body, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "n/a (%s)", err.message);
		drape_obj_free(&shirt);
		return;
	}
	for (uint32_t i = 0; i < 3 * shirt.vertex_count; i++)
		shirt.positions[i] *= 0.1f;
	for (uint32_t i = 0; i < 3 * body.vertex_count; i++)
		body.positions[i] *= 0.1f;
	if (sc->kind == SCENE_GARMENT_LARGE && !subdivide_in_three(&shirt)) {
		snprintf(r->note, sizeof r->note, "out of memory subdividing the garment");
		goto out_mesh;
	}
	drape_pool *pool = NULL;
	if (sc->threads > 1 && drape_pool_create(sc->threads, &pool, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "pool: %s", err.message);
		goto out_mesh;
	}
	/* examples/garment.json: 24 fps, 8 x 20, thickness 3 mm. The garment
	 * rows take it as it is today, with its material (cotton) and so the
	 * material's own schedule; the tshirt row keeps the pbd 8 x 20 it had
	 * before the presets. */
	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = shirt.positions;
	d.vertex_count = shirt.vertex_count;
	d.triangles = shirt.triangles;
	d.triangle_count = shirt.triangle_count;
	d.uvs = shirt.uvs;
	d.pool = pool;
	const int garment = sc->kind == SCENE_GARMENT || sc->kind == SCENE_GARMENT_NOSELF ||
			    sc->kind == SCENE_GARMENT_LARGE;

	if (garment && drape_material_preset("cotton", &d.params, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "preset: %s", err.message);
		goto out_mesh_pool;
	}
	d.params.fps = 24.0f;
	if (!garment) {
		d.params.substeps = 8;
		d.params.iterations = 20;
	}
	/* BENCH_GARMENT15K_SETTINGS=SxI runs the large garment at S substeps
	 * x I iterations instead of the preset's (its strain at a converged
	 * budget, docs/limits.md, "The large garment"); a trailing 'i' spends them as
	 * iterations of S steps rather than the material's small steps, a
	 * trailing 'm' with the mesh-aware schedule (params.schedule mesh).
	 * BENCH_MATERIAL_MESH=1 gives every garment row (the cotton material)
	 * the mesh-aware schedule at its own budget. */
	uint32_t flags = keep_flags(sc->flags);
	const char *mm = getenv("BENCH_MATERIAL_MESH");
	if (garment && mm != NULL && strcmp(mm, "1") == 0)
		flags |= SIM_CREATE_XPBD_MESH;
	const char *big = getenv("BENCH_GARMENT15K_SETTINGS");
	if (sc->kind == SCENE_GARMENT_LARGE && big != NULL) {
		int S = 0, I = 0;
		char it = 0;
		if (sscanf(big, "%dx%d%c", &S, &I, &it) < 2 || S < 1 || I < 1 ||
		    (it && it != 'i' && it != 'm')) {
			snprintf(r->note, sizeof r->note,
				 "BENCH_GARMENT15K_SETTINGS: '%s' is not SxI, SxIi or SxIm (e.g. 16x40)", big);
			goto out_mesh_pool;
		}
		d.params.substeps = S;
		d.params.iterations = I;
		if (it == 'i')
			flags |= SIM_CREATE_XPBD_ITERATE;
		if (it == 'm')
			flags |= SIM_CREATE_XPBD_MESH;
	}
	d.params.thickness = 0.003f;
	/* BENCH_GARMENT_NOSELF=1: every garment row without self-collision
	 * (what the large garment's strain is without it). */
	const char *ns = getenv("BENCH_GARMENT_NOSELF");
	d.params.self_collision = sc->kind != SCENE_GARMENT_NOSELF && !(ns != NULL && strcmp(ns, "1") == 0);
	d.params.self_thickness = 0.003f;
	d.params.self_friction = 0.2f;
	drape_sim *sim = NULL;
	if (sim_create_ex(&d, flags, &sim, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "create: %s", err.message);
		goto out;
	}
	drape_collider_desc c;
	drape_collider_desc_default(&c);
	c.shape = DRAPE_SHAPE_MESH;
	c.vertices = body.positions;
	c.vertex_count = body.vertex_count;
	c.triangles = body.triangles;
	c.triangle_count = body.triangle_count;
	c.voxel_size = 0.005f;
	c.friction = 0.5f;
	c.static_friction = 0.7f;
	uint32_t idx;
	if (drape_sim_add_collider(sim, &c, &idx, &err) != DRAPE_OK) {
		snprintf(r->note, sizeof r->note, "collider: %s", err.message);
		goto out;
	}
	fill_counts(sim, r);
	r->threads = sc->threads;
	r->sweeps = garment ? (int)(sim->xpbd.steps * sim->xpbd.iterations) : 8 * 20;
	r->ok = run_frames(sim, sc, r, 0);
	if (r->ok && garment)
		r->p99_strain = edge_strain_p99(sim);
out:
	drape_sim_destroy(sim);
out_mesh_pool:
	drape_pool_destroy(pool);
out_mesh:
	drape_obj_free(&shirt);
	drape_obj_free(&body);
}

static void run_ipc(const scene *sc, bench_result *r);
static void run_walk(const scene *sc, bench_result *r);

/* ---- Children ----------------------------------------------------------------- */

typedef struct child {
	pid_t pid;
	int fd;
} child;

/* Forks a child that runs the scene; finish_scene collects its figures. */
static child start_scene(const scene *sc, bench_result *r)
{
	memset(r, 0, sizeof *r);
	child ch = {-1, -1};
	pid_t pid;
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(r->note, sizeof r->note, "pipe: %s", strerror(errno));
		return ch;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		bench_result c;
		memset(&c, 0, sizeof c);
		if (sc->kind == SCENE_TSHIRT || sc->kind == SCENE_GARMENT ||
		    sc->kind == SCENE_GARMENT_NOSELF || sc->kind == SCENE_GARMENT_LARGE)
			run_tshirt(sc, &c);
		else if (sc->kind == SCENE_IPC)
			run_ipc(sc, &c);
		else if (sc->kind == SCENE_WALK)
			run_walk(sc, &c);
		else
			run_sheet(sc, &c);
		ssize_t w = write(fd[1], &c, sizeof c);
		_exit(w == (ssize_t)sizeof c ? 0 : 1);
	}
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		snprintf(r->note, sizeof r->note, "fork: %s", strerror(errno));
		return ch;
	}
	ch.pid = pid;
	ch.fd = fd[0];
	return ch;
}

static void finish_scene(child ch, bench_result *r)
{
	if (ch.pid < 0)
		return;
	pid_t pid = ch.pid;
	ssize_t got = read(ch.fd, r, sizeof *r);
	close(ch.fd);
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	wait4(pid, &status, 0, &ru);
	if (got != (ssize_t)sizeof *r) {
		memset(r, 0, sizeof *r);
		if (WIFEXITED(status) && WEXITSTATUS(status) == BENCH_IPC_TIMEOUT_STATUS)
			snprintf(r->note, sizeof r->note,
				 "n/a (through draped: no result within %d s; daemon stopped)",
				 BENCH_IPC_DEADLINE_S);
		else
			snprintf(r->note, sizeof r->note, "child failed (status %d)", status);
		return;
	}
	r->maxrss_kb = r->server_rss_kb ? r->server_rss_kb : ru.ru_maxrss;
}

static void run_scene(const scene *sc, bench_result *r)
{
	finish_scene(start_scene(sc, r), r);
}

static void print_header(void)
{
	printf("%-34s %8s %9s %3s %9s %8s %9s %8s %8s %7s\n", "scene", "vertices", "constr", "thr",
	       "ms/frame", "ns/proj", "cpu ms/f", "strain%", "peak MB", "sim B/v");
}

/* The median frame over constraints x sweeps (the file comment). */
static double ns_per_proj(const bench_result *r)
{
	return r->ms * 1e6 / ((double)r->constraints * (double)r->sweeps);
}

/* The same for the fastest timed frame: on a shared box, the frame least
 * slowed by other load, so the closest to the quiet-machine figure. */
static double best_ns_per_proj(const bench_result *r)
{
	return r->best_ms * 1e6 / ((double)r->constraints * (double)r->sweeps);
}

static void print_row(const scene *sc, const bench_result *r)
{
	if (!r->ok) {
		printf("%-34s %s\n", sc->name, r->note[0] ? r->note : "n/a");
		return;
	}
	double ns = ns_per_proj(r);
	if (r->server_rss_kb) {
		printf("%-34s %8u %9llu %3u %9.2f %8.2f %9s %8.3f %8.1f %7s\n", sc->name, r->vertices,
		       (unsigned long long)r->constraints, r->threads, r->ms, ns, "-", 100.0 * r->strain,
		       (double)r->maxrss_kb / 1024.0, "-");
		printf("%-34s (draped's own step: median %.2f ms per frame; peak MB is the daemon's)\n",
		       "", r->cpu_ms);
		return;
	}
	printf("%-34s %8u %9llu %3u %9.2f %8.2f %9.2f %8.3f %8.1f %7.0f\n", sc->name, r->vertices,
	       (unsigned long long)r->constraints, r->threads, r->ms, ns, r->cpu_ms, 100.0 * r->strain,
	       (double)r->maxrss_kb / 1024.0, r->sim_bytes / r->vertices);
}

/* ---- Through draped over ipc ------------------------------------------------------ */

#include "tests/bench/bench_ipc.inc"
#include "tests/bench/bench_walk.inc"

/* Whether name contains one of the comma-separated words of list, or is
 * one written "=name". */
static int name_matches(const char *name, const char *list)
{
	while (*list) {
		size_t n = strcspn(list, ",");
		if (*list == '=') {
			if (n - 1 == strlen(name) && strncmp(name, list + 1, n - 1) == 0)
				return 1;
		} else {
			for (const char *p = name; n > 0 && *p; p++)
				if (strncmp(p, list, n) == 0)
					return 1;
		}
		list += n + (list[n] == ',');
	}
	return 0;
}

#include "tests/bench/bench_material.inc"
#include "tests/bench/bench_render.inc"
#include "tests/bench/bench_fielddisk.inc"
#include "tests/bench/bench_sessions.inc"

int main(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	g_cores = cores < 1 ? 1u : (uint32_t)cores;
	/* BENCH_THREADS=n: the rows that use every core use n threads (1 for
	 * instruction counts under callgrind, which serialises threads). */
	const char *bt = getenv("BENCH_THREADS");
	if (bt != NULL && atoi(bt) >= 1)
		g_cores = (uint32_t)atoi(bt);
	uint32_t T = g_cores;
	double t_start = now_ms();
	printf("drape bench: solver build %s, %u cores, sheet = 1 cm spacing, 60 fps, 4 substeps x 5 "
	       "iterations\n",
	       drape_sim_build(), g_cores);

	/* The rows, in table order; the ratios below name them. */
	enum {
		R_100,
		R_100_PLAIN,
		R_100_1,
		R_300,
		R_300_1,
		R_300_PLAIN,
		R_SPHERE,
		R_FOLD,
		R_TSHIRT,
		R_GARMENT,
		R_GARMENT_1,
		R_GARMENT_NOKEEP,
		R_GARMENT_NOKEEP_1,
		R_GARMENT_NOSELF,
		R_GARMENT_NOSELF_1,
		R_GARMENT_LARGE,
		R_IPC,
		R_WALK,
	};
	const scene scenes[] = {
		{"sheet100", SCENE_HANG, 100, T, 0, -1, 5, 30, 0.0f},
		{"sheet100 plain GS, natural order", SCENE_HANG, 100, 1,
		 SIM_CREATE_REFERENCE | SIM_CREATE_NATURAL, -1, 5, 30, 0.0f},
		{"sheet100 1 thread", SCENE_HANG, 100, 1, 0, -1, 5, 30, 0.0f},
		{"sheet300", SCENE_HANG, 300, T, 0, -1, 3, 21, 0.0f},
		{"sheet300 1 thread", SCENE_HANG, 300, 1, 0, -1, 3, 21, 0.0f},
		/* Half a second a frame: few frames, for the same-run ratio. */
		{"sheet300 plain GS, natural order", SCENE_HANG, 300, 1,
		 SIM_CREATE_REFERENCE | SIM_CREATE_NATURAL, -1, 2, 7, 0.0f},
		{"sheet300 on sphere", SCENE_SPHERE, 300, T, 0, -1, 10, 7, 0.0f},
		{"sheet300 fold on sphere + self", SCENE_FOLD, 300, T, 0, -1, 10, 7, 0.0f},
		{"tshirt on body (garment.json)", SCENE_TSHIRT, 0, T, 0, -1, 3, 6, 0.0f},
		/* Issue 22's garment: examples/garment.json as the demo runs it. */
		{"garment cotton on body", SCENE_GARMENT, 0, T, 0, -1, 3, 15, 0.0f},
		{"garment cotton on body 1 thread", SCENE_GARMENT, 0, 1, 0, -1, 3, 15, 0.0f},
		/* The same searching the body's edges afresh every substep
		 * (bodyedge.c, "Kept candidates"): the same bits, for the A/B. */
		{"garment cotton on body, no edge keep", SCENE_GARMENT, 0, T, SIM_CREATE_NO_EDGEKEEP, -1,
		 3, 15, 0.0f},
		{"garment cotton on body, no edge keep 1 thread", SCENE_GARMENT, 0, 1,
		 SIM_CREATE_NO_EDGEKEEP, -1, 3, 15, 0.0f},
		{"garment cotton on body, no self", SCENE_GARMENT_NOSELF, 0, T, 0, -1, 3, 15, 0.0f},
		{"garment cotton on body, no self 1 thread", SCENE_GARMENT_NOSELF, 0, 1, 0, -1, 3, 15,
		 0.0f},
		/* Issue 22's large garment: the same cut to about 15,000 vertices. */
		{"garment15k cotton on body", SCENE_GARMENT_LARGE, 0, T, 0, -1, 1, 5, 0.0f},
		{"sheet300 through draped (ipc)", SCENE_IPC, 300, T, 0, -1, 3, 21, 0.0f},
		/* Frames 1-48 are the rest pose and the arms lowering; the
		 * timed ones are walking. */
		{"tshirt on walking body (walk.json)", SCENE_WALK, 0, T, 0, -1, 50, 10, 0.0f},
	};
	enum { N = sizeof scenes / sizeof scenes[0] };
	_Static_assert(N == R_WALK + 1, "one row name per scene");
	bench_result res[N];
	print_header();
	/* BENCH_ONLY=word[,word...] runs only the scenes whose names contain
	 * one of the words, or are exactly a word written "=name" (for
	 * working on one scene; make bench runs everything). */
	const char *only = getenv("BENCH_ONLY");
	const char *frames = getenv("BENCH_FRAMES");
	int fw = -1, ft = -1;
	if (frames != NULL && (sscanf(frames, "%d,%d", &fw, &ft) != 2 || fw < 0 || ft < 1))
		fw = ft = -1;
	for (int i = 0; i < N; i++) {
		if (only && !name_matches(scenes[i].name, only)) {
			memset(&res[i], 0, sizeof res[i]);
			continue;
		}
		scene sc = scenes[i];
		if (fw >= 0)
			sc.warmup = fw, sc.timed = ft;
		run_scene(&sc, &res[i]);
		print_row(&scenes[i], &res[i]);
		/* The garment rows' last-frame strain in full, and the sweeps
		 * their schedule took (BENCH_MATERIAL_MESH). */
		if (res[i].ok && res[i].p99_strain > 0.0f)
			printf("  %-38s edge strain at the last frame max %.1f %%, p99 %.2f %%, mean %.3f %%; "
			       "%u sweeps a frame\n",
			       scenes[i].name, 100.0 * res[i].strain, 100.0 * res[i].p99_strain,
			       100.0 * res[i].mean_strain, res[i].sweeps);
	}
	if (!only || name_matches("preview render", only))
		bench_render();
	if (!only || name_matches("body field", only))
		bench_fielddisk();
	if (!only || name_matches("sessions", only))
		bench_sessions();

	printf("\n");
	if (res[R_100].ok && res[R_100_PLAIN].ok && res[R_100_1].ok)
		printf("speed-up over plain scalar Gauss-Seidel in natural order, sheet100: %.2fx (1 "
		       "thread), %.2fx (%u threads)\n",
		       res[R_100_PLAIN].ms / res[R_100_1].ms, res[R_100_PLAIN].ms / res[R_100].ms, T);
	/* The same on sheet300, the sheet of the ns-per-projection target,
	 * where the ratio is lower than on sheet100 (the plain loop costs
	 * less per projection there): that target read against a yardstick
	 * run on the same machine minutes apart. */
	if (res[R_300_1].ok && res[R_300_PLAIN].ok)
		printf("speed-up over plain scalar Gauss-Seidel in natural order, sheet300: %.2fx (1 "
		       "thread; %.2f against %.2f ns per projection; fastest frames %.2f against %.2f, "
		       "%.2fx)\n",
		       res[R_300_PLAIN].ms / res[R_300_1].ms, ns_per_proj(&res[R_300_1]),
		       ns_per_proj(&res[R_300_PLAIN]), best_ns_per_proj(&res[R_300_1]),
		       best_ns_per_proj(&res[R_300_PLAIN]), res[R_300_PLAIN].best_ms / res[R_300_1].best_ms);
	if (res[R_300].ok && res[R_300_1].ok)
		printf("sheet300: %u threads are %.2fx the speed of 1 thread (median frames; %.2fx "
		       "fastest frame against fastest frame)\n",
		       T, res[R_300_1].ms / res[R_300].ms, res[R_300_1].best_ms / res[R_300].best_ms);
	if (res[R_SPHERE].ok && res[R_FOLD].ok)
		printf("sheet300 on sphere: self-collision costs %.2fx the frame time without it (target "
		       "<= 1.5x: %s)\n",
		       res[R_FOLD].ms / res[R_SPHERE].ms,
		       res[R_FOLD].ms <= 1.5 * res[R_SPHERE].ms ? "met" : "NOT met");
	/* Issue 22's garment targets, and where its frame goes (the step's own
	 * timers: obstacle collisions, self-collision, the rest). */
	if (res[R_GARMENT].ok && res[R_GARMENT_1].ok)
		printf("garment cotton on body: %.2f ms per frame on %u threads (target <= 10: %s), %.2fx "
		       "the speed of 1 thread (%.2f ms; target >= 1.6x: %s)\n",
		       res[R_GARMENT].ms, T, res[R_GARMENT].ms <= 10.0 ? "met" : "NOT met",
		       res[R_GARMENT_1].ms / res[R_GARMENT].ms, res[R_GARMENT_1].ms,
		       res[R_GARMENT_1].ms >= 1.6 * res[R_GARMENT].ms ? "met" : "NOT met");
	for (int i = R_GARMENT; i <= R_GARMENT_NOSELF_1; i++)
		if (res[i].ok)
			printf("  %-40s collisions %6.2f ms, self-collision %6.2f ms, the rest %6.2f ms "
			       "(medians)\n",
			       scenes[i].name, res[i].collide_ms, res[i].self_ms,
			       res[i].ms - res[i].collide_ms - res[i].self_ms);
	if (res[R_GARMENT].ok && res[R_GARMENT_NOSELF].ok)
		printf("garment cotton on body: self-collision costs %.2fx the frame time without it (%u "
		       "threads; %.2fx on 1)\n",
		       res[R_GARMENT].ms / res[R_GARMENT_NOSELF].ms, T,
		       res[R_GARMENT_NOSELF_1].ok && res[R_GARMENT_1].ok
			       ? res[R_GARMENT_1].ms / res[R_GARMENT_NOSELF_1].ms
			       : 0.0);
	if (res[R_GARMENT_LARGE].ok)
		printf("garment15k cotton on body: %u vertices, %.0f ms per frame on %u threads (target <= "
		       "1000: %s); collisions %.0f ms, self-collision %.0f ms; edge strain at the last "
		       "frame max %.1f %%, p99 %.2f %%, mean %.3f %%\n",
		       res[R_GARMENT_LARGE].vertices, res[R_GARMENT_LARGE].ms, T,
		       res[R_GARMENT_LARGE].ms <= 1000.0 ? "met" : "NOT met", res[R_GARMENT_LARGE].collide_ms,
		       res[R_GARMENT_LARGE].self_ms, 100.0 * res[R_GARMENT_LARGE].strain,
		       100.0 * res[R_GARMENT_LARGE].p99_strain, 100.0 * res[R_GARMENT_LARGE].mean_strain);
	/* Two ratios: against the in-process row, run a minute apart and so
	 * exposed to the machine's swings, and against draped's own step in
	 * the same frames, which isolates what the transport adds (encode,
	 * publish, receive, decode). */
	if (res[R_TSHIRT].ok && res[R_WALK].ok)
		printf("tshirt: walking body %.2f ms/frame against static body %.2f ms/frame: %.2fx (CPU time "
		       "per frame %.2f against %.2f ms: %.2fx); the collider's own work %.1f %% of the frame "
		       "walking, %.1f %% static\n",
		       res[R_WALK].ms, res[R_TSHIRT].ms, res[R_WALK].ms / res[R_TSHIRT].ms, res[R_WALK].cpu_ms,
		       res[R_TSHIRT].cpu_ms, res[R_WALK].cpu_ms / res[R_TSHIRT].cpu_ms,
		       100.0 * res[R_WALK].collide_ms / res[R_WALK].ms,
		       100.0 * res[R_TSHIRT].collide_ms / res[R_TSHIRT].ms);
	if (res[R_WALK].ok && res[R_WALK].upload_ms > 0)
		printf("walking body: its animation (%.1f MB) uploaded through draped in parts of at most "
		       "4 MiB in %.0f ms (%.0f MB/s)\n",
		       res[R_WALK].upload_mb, res[R_WALK].upload_ms, res[R_WALK].upload_mb / (res[R_WALK].upload_ms / 1e3));
	if (res[R_300].ok && res[R_IPC].ok)
		printf("sheet300 through draped (one session, draped's shared pool of %u threads): %.2fx "
		       "the in-process %u-thread frame time; %.3fx draped's own step\n",
		       T, res[R_IPC].ms / res[R_300].ms, T, res[R_IPC].ms / res[R_IPC].cpu_ms);

	bench_material(only);

	/* Long-range attachments: the strain left at frame 180 of the hanging
	 * sheet300, with (default) and without, and with them and a stiffer
	 * bend (1.0 against the default 0.1), whose corners do not fold over
	 * while the sheet swings down (docs/limits.md, free edges). The runs are
	 * independent and each single-threaded, so they run at once: the
	 * results do not depend on threads, and 540 frames fit the budget. */
	const scene lra[] = {
		{"sheet300 LRA on, frame 180", SCENE_HANG, 300, 1, 0, -1, 179, 1, 0.0f},
		{"sheet300 LRA off, frame 180", SCENE_HANG, 300, 1, 0, 0, 179, 1, 0.0f},
		{"sheet300 LRA on, bend 1, frame 180", SCENE_HANG, 300, 1, 0, -1, 179, 1, 1.0f},
	};
	enum { NL = sizeof lra / sizeof lra[0] };
	static const char *const lra_what[NL] = {"with", "without", "with and bend 1.0"};
	bench_result lr[NL];
	if (only && !name_matches("LRA", only))
		return 0;
	child lc[NL];
	for (int i = 0; i < NL; i++)
		lc[i] = start_scene(&lra[i], &lr[i]);
	for (int i = 0; i < NL; i++)
		finish_scene(lc[i], &lr[i]);
	printf("long-range attachments (Kim et al. 2012), sheet300 at frame 180, max strain:\n");
	for (int i = 0; i < NL; i++) {
		if (lr[i].ok)
			printf("  %-18s %8.3f %% (mean %.3f %%, %u edges over 2 %%, worst at row %u col "
			       "%u)\n",
			       lra_what[i], 100.0 * lr[i].strain, 100.0 * lr[i].mean_strain, lr[i].over2,
			       lr[i].worst_row, lr[i].worst_col);
		else
			printf("  %-18s n/a (%s)\n", lra_what[i], lr[i].note);
	}
	printf("peak MB = the scene's forked child's ru_maxrss (whole process); sim B/v = the sim's "
	       "own arrays per vertex\n");
	printf("bench took %.1f s\n", (now_ms() - t_start) / 1e3);
	return 0;
}
