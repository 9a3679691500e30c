/*
 * The casual suit on the MakeHuman body walking (tests/data/anim/walk.pc2,
 * all 96 frames): no cloth vertex deeper than a tenth of the thickness
 * inside the body at any frame, measured against that frame's own
 * triangles by ray parity (deform_geometry.h), never against the solver's
 * field; and, with DRAPE_DEFORM_TIMING=1, the static body against the
 * walking one in ms per frame.
 *
 * Run from the repository root (tests/run.sh does): the body, its walk and
 * the suit are read from tests/data/.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "drape/sim.h"
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "server/sim/bodythrough.h"
#include "sim_fixtures.h"
#include "deform_geometry.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEFORM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEFORM_SANITIZED 1
#endif
#endif
#ifndef DEFORM_SANITIZED
#define DEFORM_SANITIZED 0
#endif

/* Under callgrind with --instr-atstart=no the untimed frames before the
 * timed ones run uninstrumented (several times faster); the timed frames'
 * counts are the same as with instrumentation from the start
 * (--toggle-collect=timed_step collects only them either way). */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#endif

/* ---- The walking body ----------------------------------------------------------- */

/* A minimal OBJ reader: v lines and f lines (polygons as fans, v/vt/vn
 * indices take the first number). */
static int read_obj(const char *path, mesh *m, double scale)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	size_t cv = 1024, ct = 1024;
	m->v = malloc(cv * 12);
	m->t = malloc(ct * 12);
	m->nv = m->nt = 0;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		if (line[0] == 'v' && line[1] == ' ') {
			if (m->nv == cv)
				m->v = realloc(m->v, (cv *= 2) * 12);
			double a, b, c;
			if (sscanf(line + 2, "%lf %lf %lf", &a, &b, &c) != 3)
				return fclose(f), 0;
			m->v[3 * m->nv] = (float)(a * scale);
			m->v[3 * m->nv + 1] = (float)(b * scale);
			m->v[3 * m->nv + 2] = (float)(c * scale);
			m->nv++;
		} else if (line[0] == 'f' && line[1] == ' ') {
			uint32_t idx[16], k = 0;
			char *s = line + 2;
			while (k < 16) {
				while (*s == ' ' || *s == '\t')
					s++;
				if (*s < '0' || *s > '9')
					break;
				idx[k++] = (uint32_t)strtoul(s, &s, 10) - 1;
				while (*s && *s != ' ' && *s != '\t' && *s != '\n')
					s++;
			}
			for (uint32_t j = 1; j + 1 < k; j++) {
				if (m->nt == ct)
					m->t = realloc(m->t, (ct *= 2) * 12);
				m->t[3 * m->nt] = idx[0];
				m->t[3 * m->nt + 1] = idx[j];
				m->t[3 * m->nt + 2] = idx[j + 1];
				m->nt++;
			}
		}
	}
	fclose(f);
	return 1;
}

/* A PC2 point cache: 32-byte little-endian header ("POINTCACHE2\0", int32
 * version 1, int32 points, float32 start, float32 rate, int32 samples),
 * then samples x points x 3 float32. Returns the frames or NULL. */
static float *read_pc2(const char *path, uint32_t points, uint32_t *samples)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	unsigned char h[32];
	float *out = NULL;
	if (fread(h, 1, 32, f) == 32 && memcmp(h, "POINTCACHE2\0", 12) == 0) {
		int32_t ver, pts, smp;
		memcpy(&ver, h + 12, 4);
		memcpy(&pts, h + 16, 4);
		memcpy(&smp, h + 28, 4);
		if (ver == 1 && pts == (int32_t)points && smp > 0) {
			size_t n = (size_t)smp * points * 3;
			out = malloc(n * sizeof *out);
			if (fread(out, sizeof *out, n, f) != n) {
				free(out);
				out = NULL;
			} else {
				*samples = (uint32_t)smp;
			}
		}
	}
	fclose(f);
	return out;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* This thread's CPU time: on a shared machine the wall time of a frame
 * includes waiting for a core. */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct walk_scene {
	mesh body, suit;
	float *anim;
	uint32_t frames;
} walk_scene;

static int walk_load(walk_scene *w)
{
	memset(w, 0, sizeof *w);
	if (!read_obj("tests/data/anim/body_rest_m.obj", &w->body, 1.0) ||
	    !read_obj("tests/data/meshes/mh_male_casualsuit04.obj", &w->suit, 0.1))
		return 0;
	w->anim = read_pc2("tests/data/anim/walk.pc2", w->body.nv, &w->frames);
	return w->anim != NULL;
}

static void walk_free(walk_scene *w)
{
	mesh_free(&w->body);
	mesh_free(&w->suit);
	free(w->anim);
}

/* examples/garment.json's cloth and collider, without self-collision. The
 * PC2 starts at frame 1 = sim frame 0 (the input pose, the rest pose). */
static drape_err walk_sim(const walk_scene *w, int animated, drape_sim **out, drape_error *err)
{
	drape_sim_desc sd;
	drape_sim_desc_default(&sd);
	sd.positions = w->suit.v;
	sd.vertex_count = w->suit.nv;
	sd.triangles = w->suit.t;
	sd.triangle_count = w->suit.nt;
	sd.params.fps = 24;
	sd.params.substeps = 8;
	sd.params.iterations = 20;
	sd.params.stretch = 1.0f;
	sd.params.shear = 0.9f;
	sd.params.bend = 0.1f;
	sd.params.thickness = 0.003f;
	sd.params.density = 0.2f;
	drape_err rc = drape_sim_create(&sd, out, err);
	if (rc != DRAPE_OK || animated < 0)
		return rc;
	drape_collider_desc cd;
	drape_collider_desc_default(&cd);
	cd.shape = DRAPE_SHAPE_MESH;
	cd.vertices = w->body.v;
	cd.vertex_count = w->body.nv;
	cd.triangles = w->body.t;
	cd.triangle_count = w->body.nt;
	cd.friction = 0.5f;
	cd.static_friction = 0.7f;
	cd.voxel_size = 0.005f;
	if (animated) {
		cd.frames = w->anim;
		cd.frame_count = w->frames;
	}
	return drape_sim_add_collider(*out, &cd, NULL, err);
}

/*
 * The casual suit on the walking body, every frame of walk.pc2: no NaN,
 * and no cloth vertex deeper than a tenth of the cloth thickness inside the
 * body's triangles of that frame (ray parity, then the distance to the
 * nearest triangle). Strain statistics are printed. Under the sanitizers
 * (about ten times slower) it stops after frame 60, the arms lowered and
 * the first stride begun.
 */
static void test_walk(void)
{
	walk_scene w;
	CHECKF(walk_load(&w), "cannot read tests/data/anim/ or the suit");
	CHECK(w.body.nv == 13652 && w.frames == 96);
	drape_sim *sim = NULL;
	drape_error err;
	CHECKF(walk_sim(&w, 1, &sim, &err) == DRAPE_OK, "%s", err.message);
	const uint32_t n = w.suit.nv, last = DEFORM_SANITIZED ? 60 : w.frames;
	float *x = malloc((size_t)n * 12);
	double deep = 0, ms = 0, cms = 0, smax = 0, smean = 0;
	uint32_t deep_frame = 0, inside_frames = 0;
	const float thickness = 0.003f;
	for (uint32_t f = 1; f < last; f++) {
		drape_sim_stats st;
		CHECKF(drape_sim_step(sim, &st, &err) == DRAPE_OK, "frame %u: %s", f, err.message);
		ms += st.solve_ms;
		cms += st.collide_ms;
		smax = st.max_strain > smax ? st.max_strain : smax;
		smean += st.mean_strain;
		drape_sim_get_positions(sim, x);
		CHECKF(all_finite(x, n), "frame %u: not finite", f);
		uint32_t inside;
		double d = deepest_inside(x, n, &w.anim[(size_t)f * w.body.nv * 3], w.body.t, w.body.nv,
					  w.body.nt, &inside);
		if (inside)
			inside_frames++;
		if (d > deep)
			deep = d, deep_frame = f + 1;
		CHECKF(d <= 0.1 * thickness, "PC2 frame %u: %u vertices inside the body, deepest %.3g m > %.3g",
		       f + 1, inside, d, 0.1 * thickness);
	}
	printf("  walk: %u frames, %.1f ms/frame (%.1f ms colliders, %.0f %%), deepest %.3g m (PC2 frame "
	       "%u), frames with a vertex inside %u; strain max %.4f, mean of means %.5f\n",
	       last - 1, ms / (last - 1), cms / (last - 1), 100.0 * cms / ms, deep, deep_frame,
	       inside_frames, smax, smean / (last - 1));
	free(x);
	drape_sim_destroy(sim);
	walk_free(&w);
}

/*
 * Timing only, run when DRAPE_DEFORM_TIMING is set: ms per frame of the
 * suit on the static body (field) and the walking body (surface), same
 * process, same settings, frames 2..n. Nothing asserted: speed is reported,
 * never tested.
 */
/* The timed frames' step, apart so that a profile can collect these
 * alone (valgrind --tool=callgrind --toggle-collect=timed_step). */
__attribute__((noinline)) static drape_err timed_step(drape_sim *sim, drape_sim_stats *st,
						      drape_error *err)
{
	return drape_sim_step(sim, st, err);
}

static void test_walk_timing(void)
{
	if (getenv("DRAPE_DEFORM_TIMING") == NULL) {
		printf("  (set DRAPE_DEFORM_TIMING=1 to time static against walking)\n");
		return;
	}
	walk_scene w;
	CHECK(walk_load(&w));
	/* DRAPE_DEFORM_TIMING_FRAMES=n times the first n frames only (under
	 * callgrind, where all 96 take an hour). */
	const char *fe = getenv("DRAPE_DEFORM_TIMING_FRAMES");
	if (fe != NULL && atoi(fe) > 1 && (uint32_t)atoi(fe) < w.frames)
		w.frames = (uint32_t)atoi(fe);
	double ms[3] = {0, 0, 0}, cms[3] = {0, 0, 0}, cpu[3] = {0, 0, 0};
	uint32_t nf = 1;
	float smax[3] = {0, 0, 0};
	/* Run 2 is the cloth without any collider (falling freely): the
	 * solver's own work, so that a run's CPU minus it is its collider's
	 * work, without the waits a loaded machine adds to wall times. */
	/* DRAPE_DEFORM_TIMING_ONLY=static, walking or none runs that one
	 * alone (a profile of one body). */
	const char *only = getenv("DRAPE_DEFORM_TIMING_ONLY");
	const char *names[3] = {"static", "walking", "none"};
	for (int run = 0; run < 3; run++) {
		if (only != NULL && strcmp(only, names[run]) != 0)
			continue;
		int animated = run == 2 ? -1 : run;
		drape_sim *sim = NULL;
		drape_error err;
		double t0 = now_s();
		CHECKF(walk_sim(&w, animated, &sim, &err) == DRAPE_OK, "%s", err.message);
		/* DRAPE_DEFORM_TIMING_FROM=k steps frames 1 .. k-1 untimed
		 * (frames 1-48 are the rest pose and the arms lowering; the
		 * bench times walking frames from 51). */
		const char *fr = getenv("DRAPE_DEFORM_TIMING_FROM");
		uint32_t from = fr != NULL && atoi(fr) > 1 ? (uint32_t)atoi(fr) : 1;
		if (from >= w.frames)
			from = 1;
		for (uint32_t f = 1; f < from; f++)
			CHECK_OK(drape_sim_step(sim, NULL, &err));
		double setup = now_s() - t0, c0 = cpu_s();
		CALLGRIND_START_INSTRUMENTATION;
		for (uint32_t f = from; f < w.frames; f++) {
			drape_sim_stats st;
			CHECK_OK(timed_step(sim, &st, &err));
			ms[run] += st.solve_ms;
			cms[run] += st.collide_ms;
			smax[run] = st.max_strain > smax[run] ? st.max_strain : smax[run];
		}
		cpu[run] = (cpu_s() - c0) * 1e3;
		nf = w.frames - from;
		/* The final positions' bits (FNV-1a), so that a change meant to
		 * keep the results can be checked against the build before it. */
		float *xf = malloc((size_t)w.suit.nv * 12);
		CHECK(xf != NULL);
		drape_sim_get_positions(sim, xf);
		uint64_t hash = 0xcbf29ce484222325ull;
		const unsigned char *bytes = (const unsigned char *)xf;
		for (size_t i = 0; i < (size_t)w.suit.nv * 12; i++)
			hash = (hash ^ bytes[i]) * 0x100000001b3ull;
		free(xf);
		printf("  %s: positions hash %016llx after frame %u\n", names[run],
		       (unsigned long long)hash, w.frames - 1);
		printf("  %s: setup %.2f s, %.2f ms/frame wall (%.2f ms CPU), colliders %.2f ms/frame (%.1f "
		       "%%), max strain %.3f\n",
		       run == 2 ? "no collider      " : run ? "walking (surface)" : "static (field)   ", setup,
		       ms[run] / nf, cpu[run] / nf, cms[run] / nf,
		       100.0 * cms[run] / ms[run], smax[run]);
		drape_sim_destroy(sim);
	}
	if (only == NULL)
		printf("  walking / static = %.2f wall, %.2f CPU; collider share of the CPU (run minus no "
	       "collider): static %.0f %%, walking %.0f %%\n",
	       ms[1] / ms[0], cpu[1] / cpu[0], 100.0 * (cpu[0] - cpu[2]) / cpu[0],
	       100.0 * (cpu[1] - cpu[2]) / cpu[1]);
	walk_free(&w);
}


/* The bits of n float4 records' xyz (FNV-1a). */
static uint64_t walk_state_hash(const sim_vec4 *v, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < n; i++) {
		const float c[3] = {v[i].x, v[i].y, v[i].z};
		const unsigned char *b = (const unsigned char *)c;
		for (size_t k = 0; k < sizeof c; k++)
			h = (h ^ b[k]) * 0x100000001b3ull;
	}
	return h;
}

/*
 * The moving body's per-substep work on the pool (issue 16, 22): the
 * walk stepped on no pool and on a pool of 3 threads must give the same
 * positions and velocities, bit for bit, after every frame, and the same
 * body-face and body-edge pair lists (every record's bytes, in order) at
 * every frame's last substep. Through frame 53: the body standing, the
 * arms lowering and the first stride (from frame 49), where no kept list
 * serves and every substep searches. The pool must have run blocks on its
 * workers (not everything inline). The work is cut into chunks that never
 * depend on the thread count, so a pool of 2 runs the same chunks as one
 * of 3 on fewer workers; it was dropped to save a third of the test's
 * time (docs/testsuite.md), and the test still fails when 3 threads sum
 * a vertex's triangles in reverse order.
 */
static void test_walk_threads(void)
{
	walk_scene w;
	CHECKF(walk_load(&w), "cannot read tests/data/anim/ or the suit");
	drape_sim *sim[2] = {NULL, NULL};
	drape_pool *pool[2] = {NULL, NULL};
	drape_error err;
	CHECK_OK(drape_pool_create(3, &pool[1], &err));
	for (int k = 0; k < 2; k++) {
		CHECKF(walk_sim(&w, 1, &sim[k], &err) == DRAPE_OK, "%s", err.message);
		drape_sim_set_pool(sim[k], pool[k]);
	}
	const uint32_t last = DEFORM_SANITIZED ? 12 : 54;
	uint32_t differ_x = 0, differ_v = 0, differ_p = 0, differ_e = 0, first_bad = 0;
	uint64_t pairs_p = 0, pairs_e = 0;
	for (uint32_t f = 1; f < last; f++) {
		for (int k = 0; k < 2; k++)
			CHECKF(drape_sim_step(sim[k], NULL, &err) == DRAPE_OK, "frame %u: %s", f, err.message);
		const uint32_t n = sim[0]->n;
		const uint64_t hx = walk_state_hash(sim[0]->x, n), hv = walk_state_hash(sim[0]->v, n);
		pairs_p += sim_bodypush_pair_count(sim[0]->bodypush);
		pairs_e += sim_bodyedge_pair_count(sim[0]->bodyedge);
		for (int k = 1; k < 2; k++) {
			uint32_t bad = 0;
			bad += walk_state_hash(sim[k]->x, n) != hx, differ_x += walk_state_hash(sim[k]->x, n) != hx;
			bad += walk_state_hash(sim[k]->v, n) != hv, differ_v += walk_state_hash(sim[k]->v, n) != hv;
			const sim_bodypush *a = sim[0]->bodypush, *b = sim[k]->bodypush;
			uint32_t np = sim_bodypush_pair_count(a), same = np == sim_bodypush_pair_count(b);
			for (uint32_t j = 0; same && j < np; j++) {
				size_t sa, sb;
				uint32_t ta, tb;
				const void *ra = sim_bodypush_pair_record(a, j, &sa, &ta);
				const void *rb = sim_bodypush_pair_record(b, j, &sb, &tb);
				same = ra != NULL && rb != NULL && sa == sb && ta == tb && memcmp(ra, rb, sa) == 0;
			}
			differ_p += !same, bad += !same;
			size_t s0, s1;
			const void *e0 = sim_bodyedge_pair_data(sim[0]->bodyedge, &s0);
			const void *e1 = sim_bodyedge_pair_data(sim[k]->bodyedge, &s1);
			same = s0 == s1 && (s0 == 0 || memcmp(e0, e1, s0) == 0);
			differ_e += !same, bad += !same;
			if (bad && first_bad == 0)
				first_bad = f;
		}
	}
	const uint64_t wb3 = sim_pool_worker_blocks(pool[1]);
	printf("  walk, frames 1-%u on 1 and 3 threads: %llu face and %llu edge pairs at the last "
	       "substeps; differing: %u positions, %u velocities, %u face lists, %u edge lists (first "
	       "at frame %u); worker blocks %llu\n",
	       last - 1, (unsigned long long)pairs_p, (unsigned long long)pairs_e, differ_x, differ_v,
	       differ_p, differ_e, first_bad, (unsigned long long)wb3);
	for (int k = 0; k < 2; k++) {
		drape_sim_destroy(sim[k]);
		drape_pool_destroy(pool[k]);
	}
	walk_free(&w);
	CHECK(differ_x == 0 && differ_v == 0 && differ_p == 0 && differ_e == 0);
	/* Not vacuous: both contacts had pairs, and the workers took part. */
	CHECK(pairs_p > 0 && pairs_e > 0 && wb3 > 0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * A measure only, run when DRAPE_WALK_MEASURE names a `drape run --out`
 * folder (frame_NNNN.obj is PC2 sample NNNN, counted from 1: a cache
 * starting at frame 1 keeps its frame numbers, docs/animation.md, "Faster
 * motions and deeper bends") and
 * DRAPE_WALK_PC2 the body's point cache that run used (tests/probe/
 * fastwalk.py makes faster walks). Per frame: the deepest cloth vertex
 * inside that sample's body triangles (ray parity, as test_walk), whether
 * any coordinate is not finite, and the body-through measure
 * (bodythrough.h: body vertices covered by the cloth but on its outer side
 * by more than 1 mm, body edges through cloth triangles, cloth edges
 * through body triangles): cloth carried to the far side of a limb leaves
 * the limb showing through it. Nothing asserted.
 */
static void test_walk_measure(void)
{
	const char *dir = getenv("DRAPE_WALK_MEASURE"), *pc2 = getenv("DRAPE_WALK_PC2");
	if (dir == NULL || pc2 == NULL) {
		printf("  (DRAPE_WALK_MEASURE=DIR DRAPE_WALK_PC2=FILE not set: skipped)\n");
		return;
	}
	mesh body;
	CHECK(read_obj("tests/data/anim/body_rest_m.obj", &body, 1.0));
	uint32_t samples = 0;
	float *anim = read_pc2(pc2, body.nv, &samples);
	CHECKF(anim != NULL, "cannot read %s", pc2);
	mesh rest;
	CHECK(read_obj("tests/data/meshes/mh_male_casualsuit04.obj", &rest, 0.1));
	const float thickness = 0.003f;
	double worst = 0, run_smax = 0;
	uint32_t worst_frame = 0, bad_frames = 0, through_frames = 0, frames = 0;
	double *strain = malloc((size_t)rest.nt * 3 * sizeof *strain);
	for (uint32_t f = 1; f <= samples; f++) {
		char path[400];
		snprintf(path, sizeof path, "%s/frame_%04u.obj", dir, f);
		mesh c;
		if (!read_obj(path, &c, 1.0))
			break;
		CHECKF(c.nv == rest.nv && c.nt == rest.nt, "frame %u: not the suit's topology", f);
		frames++;
		/* Edge strain |l - l0| / l0 over every triangle's edges (an inner
		 * edge counts twice, which leaves max and p99 as good as exact). */
		uint32_t ne = 0;
		for (uint32_t t = 0; t < c.nt; t++)
			for (int k = 0; k < 3; k++) {
				uint32_t a = c.t[3 * t + k], b = c.t[3 * t + (k + 1) % 3];
				double q0[3], q1[3], r0[3], r1[3];
				vget(c.v, a, q0), vget(c.v, b, q1), vget(rest.v, a, r0), vget(rest.v, b, r1);
				double l = sqrt((q0[0] - q1[0]) * (q0[0] - q1[0]) + (q0[1] - q1[1]) * (q0[1] - q1[1]) + (q0[2] - q1[2]) * (q0[2] - q1[2]));
				double l0 = sqrt((r0[0] - r1[0]) * (r0[0] - r1[0]) + (r0[1] - r1[1]) * (r0[1] - r1[1]) + (r0[2] - r1[2]) * (r0[2] - r1[2]));
				strain[ne++] = l0 > 0 ? fabs(l - l0) / l0 : 0;
			}
		qsort(strain, ne, sizeof *strain, cmp_double);
		double smax = ne ? strain[ne - 1] : 0, sp99 = ne ? strain[(size_t)(0.99 * (ne - 1))] : 0;
		run_smax = smax > run_smax ? smax : run_smax;
		const float *bv = &anim[(size_t)(f - 1) * body.nv * 3];
		int finite = all_finite(c.v, c.nv);
		uint32_t inside = 0;
		double d = finite ? deepest_inside(c.v, c.nv, bv, body.t, body.nv, body.nt, &inside) : INFINITY;
		sim_body_through bt = {0};
		if (finite)
			sim_body_through_measure(bv, body.nv, body.t, body.nt, c.v, c.nv, c.t, c.nt, 0.001f,
						 0.03f, &bt, NULL);
		if (d > worst)
			worst = d, worst_frame = f;
		if (getenv("DRAPE_WALK_WHERE") != NULL && inside > 0) {
			/* Where: the deepest inside vertex and how fast the body
			 * near it moved over the frame. */
			parity_grid g;
			grid_build(&g, bv, body.t, body.nv, body.nt, 0.01);
			double dd = 0, q[3], bq[3];
			uint32_t iv = 0;
			for (uint32_t i = 0; i < c.nv; i++) {
				vget(c.v, i, q);
				if (!grid_inside(&g, q))
					continue;
				double di = mesh_dist(bv, body.t, body.nt, q);
				if (di >= dd)
					dd = di, iv = i;
			}
			parity_free(&g);
			vget(c.v, iv, q);
			uint32_t nb = 0;
			double nd = INFINITY;
			for (uint32_t b = 0; b < body.nv; b++) {
				vget(bv, b, bq);
				double e = (bq[0] - q[0]) * (bq[0] - q[0]) + (bq[1] - q[1]) * (bq[1] - q[1]) + (bq[2] - q[2]) * (bq[2] - q[2]);
				if (e < nd)
					nd = e, nb = b;
			}
			double p0[3], p1[3];
			vget(&anim[(size_t)(f > 1 ? f - 2 : 0) * body.nv * 3], nb, p0);
			vget(bv, nb, p1);
			{
				/* The nearest triangles and the side of each
				 * that the vertex is on (+ in front). */
				double bestd[3] = {INFINITY, INFINITY, INFINITY}, side[3] = {0, 0, 0};
				uint32_t bt3[3] = {0, 0, 0};
				for (uint32_t t = 0; t < body.nt; t++) {
					double A[3], B[3], C[3], nr[3], ba[3], e1[3], e2[3], nn[3];
					vget(bv, body.t[3 * t], A), vget(bv, body.t[3 * t + 1], B), vget(bv, body.t[3 * t + 2], C);
					double di = tri_dist(q, A, B, C, nr, ba);
					for (int k = 0; k < 3; k++)
						e1[k] = B[k] - A[k], e2[k] = C[k] - A[k];
					cross3(e1, e2, nn);
					double sd = (q[0] - nr[0]) * nn[0] + (q[1] - nr[1]) * nn[1] + (q[2] - nr[2]) * nn[2];
					for (int k = 0; k < 3; k++)
						if (di < bestd[k]) {
							for (int m = 2; m > k; m--)
								bestd[m] = bestd[m - 1], side[m] = side[m - 1], bt3[m] = bt3[m - 1];
							bestd[k] = di, side[k] = sd, bt3[k] = t;
							break;
						}
				}
				for (int k = 0; k < 3; k++)
					printf("      near tri %u (%u %u %u) %.2f mm, %s\n", bt3[k], body.t[3 * bt3[k]],
					       body.t[3 * bt3[k] + 1], body.t[3 * bt3[k] + 2], 1e3 * bestd[k],
					       side[k] > 0 ? "in front" : "behind");
			}
			printf("    deepest: cloth vertex %u at (%.3f %.3f %.3f), %.2f mm; nearest body vertex %u moved "
			       "%.1f mm over the frame\n",
			       iv, q[0], q[1], q[2], 1e3 * dd, nb,
			       1e3 * sqrt((p1[0] - p0[0]) * (p1[0] - p0[0]) + (p1[1] - p0[1]) * (p1[1] - p0[1]) + (p1[2] - p0[2]) * (p1[2] - p0[2])));
		}
		bad_frames += d > 0.1 * thickness;
		through_frames += bt.through > 0 || bt.edges_through > 0 || bt.cloth_edges_in > 0;
		printf("  frame %3u: %s inside %4u deepest %6.2f mm; body through: %u vertices "
		       "(%.1f mm), %u body edges, %u cloth edges; strain max %.1f %% p99 %.1f %%\n",
		       f, finite ? "finite" : "NaN", inside, 1e3 * d, bt.through, 1e3 * bt.deepest,
		       bt.edges_through, bt.cloth_edges_in, 100 * smax, 100 * sp99);
		mesh_free(&c);
	}
	printf("  %s: %u frames, deepest %.2f mm (frame %u), %u frames deeper than %.1f mm, %u frames "
	       "with the body through, largest strain %.1f %%\n",
	       dir, frames, 1e3 * worst, worst_frame, bad_frames, 1e3 * 0.1 * thickness, through_frames,
	       100 * run_smax);
	free(strain);
	mesh_free(&rest);
	free(anim);
	mesh_free(&body);
}

static const check_test tests[] = {
	CHECK_TEST(test_walk),
	CHECK_TEST(test_walk_threads),
	CHECK_TEST(test_walk_timing),
	CHECK_TEST(test_walk_measure),
};

int main(int argc, char **argv)
{
	return check_main(argc, argv, tests, CHECK_COUNT(tests));
}
