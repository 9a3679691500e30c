/*
 * drape CLI: `drape run` (submit a scene, receive every frame) and
 * `drape attach` (receive the frames of an existing session). Both feed the
 * same frame sink, which writes OBJ files, JSON lines and the progress bar;
 * `drape run --local` feeds it from the solver in this process instead, so
 * the server's overhead can be measured against the same scene.
 */
#include "client/cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/obj.h"
#include "client/scene.h"
#include "drape/cache.h"
#include "drape/topology.h"

/* ---- The frame sink ----------------------------------------------------------- */

typedef struct sink {
	const cli_opts *o;
	const uint32_t *triangles; /* NULL: vertex-only OBJ files (attach without --scene) */
	uint32_t triangle_count;
	uint32_t vertex_count;
	uint32_t total;     /* frames expected, for the progress bar; 0 = unknown */
	uint32_t start;     /* frames before this index are solved but not written (pre-roll) */
	uint32_t skipped;   /* frames received before start */
	uint32_t written;
	uint32_t last_index;
	double start_ms;    /* when frames started to arrive (after setup) */
	double sim_ms;      /* sum of the solver's per-frame times */
	float max_strain;   /* over every frame received (the solver's per-frame maximum) */
	uint32_t split;     /* frames the solver split for the body's motion (stats.split > 1) */
	uint32_t split_max; /* the largest split */
	const float *rest;  /* the scene's rest positions, for the last frame's strain; NULL = none */
	float *last;        /* a copy of the latest frame's positions (when rest is set) */
	bool rest_is_input; /* rest is the pose the run started from (frame 0), as in run */
	bool progress;
	bool keep;          /* --state-dir: a frame file that exists stays as it is */
	uint32_t kept;      /* frames received whose file was already there */
	/* --format: the cache writer, opened at the first frame written (the
	 * PC2 start frame is that frame's index). */
	drape_cache_format format;
	drape_cache_writer *cache;
	const char *obj_source; /* the cloth's OBJ file, whose faces and UVs the OBJ frames keep */
	float fps;
	float *prev;        /* GEO: the latest frame before start, for the first frame's velocity */
	uint32_t prev_index;
	uint32_t last_expected; /* index of the run's last frame; 0 = unknown */
	double write_ms;    /* time spent writing frames to --out */
	uint32_t *torn;     /* a torn cloth's triangles (sink_mesh), owned */
	/* A scene with "cloths": one cache per cloth, in --out/<name>/. */
	cli_objcache objs;
} sink;

static void sink_init(sink *k, const cli_opts *o, const drape_obj_mesh *mesh, uint32_t total)
{
	memset(k, 0, sizeof *k);
	k->o = o;
	if (mesh != NULL) {
		k->triangles = mesh->triangles;
		k->triangle_count = mesh->triangle_count;
		k->vertex_count = mesh->vertex_count;
		k->rest = mesh->positions;
		k->last = malloc((size_t)mesh->vertex_count * 3 * sizeof *k->last);
		if (k->last == NULL)
			k->rest = NULL; /* the summary does without the last frame's strain */
	}
	k->total = total;
	k->progress = !o->quiet && isatty(STDERR_FILENO);
	k->start_ms = cli_now_ms();
	k->format = DRAPE_CACHE_OBJ;
	if (o->format != NULL)
		drape_cache_format_parse(o->format, &k->format, NULL); /* checked by cli_parse */
	k->fps = 24.0f;
}

/* What the cache writer takes from the scene a run was started from. */
static void sink_scene(sink *k, const drape_scene *sc, uint32_t last)
{
	k->fps = sc->params.fps;
	k->obj_source = sc->cloth_path;
	k->rest_is_input = true;
	k->last_expected = last;
	cli_objcache_init(&k->objs, sc->objects, sc->object_count, sc->cloth.triangles,
			  sc->cloth.triangle_count, sc->object_paths);
}

/* The cache desc for a first frame `index`. */
static void sink_cache_desc(const sink *k, uint32_t index, uint32_t vertex_count, drape_cache_desc *out)
{
	drape_cache_desc d;
	drape_cache_desc_default(&d);
	d.format = k->format;
	d.dir = k->o->out_dir;
	d.vertex_count = vertex_count;
	d.triangles = k->triangles;
	d.triangle_count = k->triangles ? k->triangle_count : 0;
	d.obj_source = k->triangles ? k->obj_source : NULL;
	d.fps = k->fps;
	/* MDD writes its frame count first: the frames still to come. */
	d.frame_count = k->last_expected >= index ? k->last_expected - index + 1 : 0;
	if (index == 1 && k->rest != NULL && k->rest_is_input)
		d.previous = k->rest;
	else if (k->prev != NULL && k->prev_index + 1 == index)
		d.previous = k->prev;
	*out = d;
}

/* Opens the cache writer for a first frame `index`; returns 0 or an exit code. */
static int sink_open_cache(sink *k, uint32_t index, uint32_t vertex_count)
{
	drape_cache_desc d;
	sink_cache_desc(k, index, vertex_count, &d);
	drape_error err;
	drape_err rc = drape_cache_open(&d, &k->cache, &err);
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape: --format %s: %s\n", drape_cache_format_name(k->format), err.message);
		return rc == DRAPE_ENOMEM ? CLI_SOFTWARE : rc == DRAPE_EIO ? CLI_IOERR : CLI_USAGE;
	}
	return 0;
}

/* Finishes the cache files; returns 0 or an exit code. */
static int sink_finish(sink *k)
{
	if (k->objs.count > 0)
		return cli_objcache_close(&k->objs, true);
	if (k->cache == NULL)
		return 0;
	drape_error err;
	drape_err rc = drape_cache_close(k->cache, &err);
	k->cache = NULL;
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape: finishing the %s cache: %s\n", drape_cache_format_name(k->format),
			err.message);
		return CLI_IOERR;
	}
	return 0;
}

static void sink_progress(const sink *k)
{
	const int width = 30;
	double el = cli_now_ms() - k->start_ms;
	double per = k->written ? el / k->written : 0.0;
	if (k->total > 0) {
		int fill = (int)((double)width * k->written / k->total);
		if (fill > width)
			fill = width;
		fprintf(stderr, "\r[%.*s%.*s] %u/%u frames  %.1f ms/frame ", fill,
			"##############################", width - fill,
			"..............................", (unsigned)k->written, (unsigned)k->total, per);
	} else {
		fprintf(stderr, "\r%u frames  %.1f ms/frame ", (unsigned)k->written, per);
	}
}

/* The cloth tore (cloth.tear_strain): the frames from here on are another
 * mesh, of `vertices` vertices and these triangles, so the cache writer
 * starts again with them (the OBJ source's faces and UVs no longer match,
 * and the run's strain summary, measured against the created mesh, is left
 * out). Returns 0 or an exit code. */
static int sink_finish(sink *k);
static int sink_mesh(sink *k, const uint32_t *tris, uint32_t triangle_count, uint32_t vertices)
{
	/* attach and export of a torn session reach here without run's
	 * check (tear_check_format): a point cache of one vertex count would
	 * be rewritten from the tear on. */
	if (k->o->out_dir != NULL && k->format != DRAPE_CACHE_OBJ) {
		if (k->progress)
			fputc('\n', stderr);
		fprintf(stderr, "drape: the cloth tore (its vertex count changes to %u), which --format %s "
				"cannot hold; write OBJ frames (--format obj)\n",
			(unsigned)vertices, drape_cache_format_name(k->format));
		return CLI_USAGE;
	}
	int x = sink_finish(k);
	if (x != 0)
		return x;
	uint32_t *t = realloc(k->torn, (size_t)triangle_count * 3 * sizeof *t);
	if (t == NULL) {
		fprintf(stderr, "drape: out of memory\n");
		return CLI_SOFTWARE;
	}
	memcpy(t, tris, (size_t)triangle_count * 3 * sizeof *t);
	k->torn = t;
	k->triangles = t;
	k->triangle_count = triangle_count;
	k->vertex_count = vertices;
	k->obj_source = NULL;
	k->rest = NULL;
	free(k->last);
	k->last = NULL;
	return 0;
}

/* Writes one frame; returns 0 or an exit code. */
static int sink_frame(sink *k, uint32_t index, const float *positions, uint32_t vertex_count,
		      const drape_sim_stats *st)
{
	if (k->vertex_count != 0 && vertex_count != k->vertex_count) {
		fprintf(stderr, "drape: frame %u has %u vertices, the mesh has %u\n", (unsigned)index,
			(unsigned)vertex_count, (unsigned)k->vertex_count);
		return CLI_PROTOCOL;
	}
	if (index < k->start) {
		k->skipped++;
		if (k->format == DRAPE_CACHE_GEO && k->o->out_dir != NULL) {
			if (k->prev == NULL)
				k->prev = malloc((size_t)vertex_count * 3 * sizeof *k->prev);
			if (k->prev != NULL) {
				memcpy(k->prev, positions, (size_t)vertex_count * 3 * sizeof *k->prev);
				k->prev_index = index;
			}
		}
		return 0;
	}
	if (k->o->out_dir != NULL && k->objs.count > 0) {
		/* Several cloths: one cache each, in a folder named after it. */
		double w0 = cli_now_ms();
		drape_cache_desc d;
		sink_cache_desc(k, index, vertex_count, &d);
		int x = cli_objcache_write(&k->objs, &d, index, positions,
					   k->objs.cache == NULL ? d.previous : NULL);
		k->write_ms += cli_now_ms() - w0;
		if (x != 0)
			return x;
	} else if (k->o->out_dir != NULL) {
		char path[4096];
		snprintf(path, sizeof path, "%s/frame_%04u.obj", k->o->out_dir, (unsigned)index);
		struct stat sb;
		if (k->keep && k->format == DRAPE_CACHE_OBJ && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
			/* Written by an earlier attempt of this batch run: frames
			 * already handed to the farm never change. */
			k->kept++;
			k->last_index = index;
			return 0;
		}
		int x;
		double w0 = cli_now_ms();
		if (k->cache == NULL && (x = sink_open_cache(k, index, vertex_count)) != 0)
			return x;
		drape_error err;
		drape_err rc = drape_cache_write_frame(k->cache, index, positions, &err);
		k->write_ms += cli_now_ms() - w0;
		if (rc != DRAPE_OK) {
			if (k->progress)
				fputc('\n', stderr);
			fprintf(stderr, "drape: cannot write frame %u to %s: %s\n", (unsigned)index, k->o->out_dir,
				err.message);
			return rc == DRAPE_ENONFINITE || rc == DRAPE_ERANGE ? CLI_DATAERR : CLI_IOERR;
		}
	}
	if (k->last != NULL && index >= k->last_index)
		memcpy(k->last, positions, (size_t)vertex_count * 3 * sizeof *k->last);
	k->written++;
	k->last_index = index;
	k->sim_ms += st->solve_ms;
	if (st->max_strain > k->max_strain)
		k->max_strain = st->max_strain;
	if (st->split > 1) {
		k->split++;
		k->split_max = st->split > k->split_max ? st->split : k->split_max;
	}
	if (k->o->json) {
		printf("{\"frame\":%u,\"sim_ms\":%.3f,\"max_strain\":%.6g,\"mean_strain\":%.6g,"
		       "\"contacts\":%u",
		       (unsigned)index, st->solve_ms, (double)st->max_strain, (double)st->mean_strain,
		       (unsigned)st->contacts);
		/* A tearing cloth's frames (cloth.tear_strain): its mesh
		 * generation, and what the frame's tear split and cost. */
		if (st->topology != 0 || st->torn_edges != 0)
			printf(",\"topology\":%u,\"torn_edges\":%u,\"split_vertices\":%u,"
			       "\"tear_ms\":%.3f",
			       (unsigned)st->topology, (unsigned)st->torn_edges,
			       (unsigned)st->split_vertices, st->tear_ms);
		/* A frame split into more substeps for the body's motion
		 * (a fast-turning collider; sim.c). */
		if (st->split > 1)
			printf(",\"split\":%u,\"substeps\":%u,\"body_turn_deg\":%.3g", (unsigned)st->split,
			       (unsigned)st->substeps, (double)st->body_turn * 57.29577951308232);
		printf("}\n");
		if (fflush(stdout) != 0)
			return CLI_IOERR;
	}
	if (k->progress)
		sink_progress(k);
	return 0;
}

/* Prints the summary: a JSON object with --json, else one line on stderr. */
static void sink_summary(const sink *k, uint32_t session, double total_ms, const char *how)
{
	if (k->progress)
		fputc('\n', stderr);
	double loop = cli_now_ms() - k->start_ms;
	double per = k->written ? loop / k->written : 0.0;
	double sim = k->written ? k->sim_ms / k->written : 0.0;
	/* The last frame's edge strain against the rest mesh: what the cloth
	 * looks like at the end, where the run's maximum may come from one
	 * violent frame. -1 when unknown (no mesh, no frame). */
	float last_max = -1.0f, last_p99 = -1.0f;
	if (k->rest != NULL && k->written > 0 &&
	    cli_edge_strain(k->rest, k->last, k->vertex_count, k->triangles, k->triangle_count, &last_max,
			    &last_p99) != 0)
		last_max = last_p99 = -1.0f;
	if (k->o->json) {
		printf("{\"summary\":{\"session\":%u,\"mode\":\"%s\",\"frames\":%u,\"last_frame\":%u,"
		       "\"vertices\":%u,\"triangles\":%u,\"wall_ms\":%.1f,\"frames_ms\":%.1f,"
		       "\"ms_per_frame\":%.3f,\"sim_ms_per_frame\":%.3f,\"max_strain\":%.6g,"
		       "\"last_max_strain\":%.6g,\"last_p99_strain\":%.6g,\"write_ms_per_frame\":%.3f}}\n",
		       (unsigned)session, how, (unsigned)k->written, (unsigned)k->last_index,
		       (unsigned)k->vertex_count, (unsigned)k->triangle_count, total_ms, loop, per, sim,
		       (double)k->max_strain, (double)last_max, (double)last_p99,
		       k->written ? k->write_ms / k->written : 0.0);
		fflush(stdout);
	} else if (!k->o->quiet) {
		if (k->split > 0)
			fprintf(stderr,
				"drape: %u frames split into up to %u times the substeps: a collider turned "
				"more than 4 degrees a substep\n",
				(unsigned)k->split, (unsigned)k->split_max);
		char last[96] = "";
		if (last_max >= 0.0f)
			snprintf(last, sizeof last, "; last frame: max %.4g, 99th percentile %.4g",
				 (double)last_max, (double)last_p99);
		fprintf(stderr,
			"drape: %u frames of %u vertices (%s) in %.2f s wall, %.2f ms/frame "
			"(solver %.2f ms/frame), max strain %.4g over the run%s%s%s\n",
			(unsigned)k->written, (unsigned)k->vertex_count, how, total_ms / 1000.0, per, sim,
			(double)k->max_strain, last, k->o->out_dir ? ", written to " : "",
			k->o->out_dir ? k->o->out_dir : "");
	}
}

static void sink_free(sink *k)
{
	cli_objcache_close(&k->objs, false);
	if (k->cache != NULL)
		drape_cache_close(k->cache, NULL);
	k->cache = NULL;
	free(k->prev);
	k->prev = NULL;
	free(k->last);
	k->last = NULL;
	k->rest = NULL;
	free(k->torn);
	k->torn = NULL;
}

/* mkdir -p for --out. */
static int make_out_dir(const char *dir)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
		fprintf(stderr, "drape: --out: path too long\n");
		return CLI_USAGE;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			goto fail;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		goto fail;
	struct stat sb;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "drape: cannot create --out folder %s: %s\n", buf, strerror(errno));
	return CLI_IOERR;
}

/* The first frame in 1..last whose DIR/frame_NNNN.obj does not exist (the
 * name sink_frame writes), or last + 1 when every one is there. Frame files
 * are written whole (temporary file, rename), so one that exists is
 * complete. */
static uint32_t first_missing_frame(const char *dir, uint32_t last, const char *format)
{
	char path[4096];
	/* PC2 and MDD are one file for the run: it is written again whole. */
	if (format != NULL && strcmp(format, "obj") != 0 && strcmp(format, "geo") != 0)
		return 1;
	for (uint32_t i = 1; i <= last; i++) {
		snprintf(path, sizeof path, "%s/frame_%04u.%s", dir, (unsigned)i, format ? format : "obj");
		struct stat sb;
		if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
			return i;
	}
	return last + 1;
}

/* Loads the scene named by path; returns 0 or an exit code. */
static int load_scene(const char *path, const cli_opts *o, drape_scene *scene)
{
	struct stat sb;
	if (stat(path, &sb) != 0) {
		fprintf(stderr, "drape: %s: %s\n", path, strerror(errno));
		return CLI_NOINPUT;
	}
	drape_error err;
	drape_err rc = cli_scene_load_set(path, o->sets, o->nsets, scene, &err);
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape: %s\n", err.message[0] ? err.message : drape_strerror(rc));
		if (rc == DRAPE_ENOMEM)
			return CLI_SOFTWARE;
		/* A file the scene names (a mesh) that does not exist is missing
		 * input, as the scene itself would be: EX_NOINPUT, which a farm
		 * does not retry. Any other problem is bad input data. */
		if (rc == DRAPE_ENOTFOUND && strstr(err.message, ": cannot open: ") != NULL)
			return CLI_NOINPUT;
		return CLI_DATAERR;
	}
	return 0;
}

/* ---- Receiving from a server ---------------------------------------------------- */

/*
 * Receives frames of s until the run ends. Returns 0 when it ended normally
 * (done, or canceled when accept_cancel), else an exit code; *end is the
 * code that ended it. embed_pid (> 0) is checked while waiting so a crashed
 * embedded server is reported at once.
 */
/* How long a client waits for a server that stopped answering (a
 * restart), as libdrape's default reconnect_timeout_ms. */
#define CLI_RECONNECT_MS 120000.0

static int receive(drape_client *c, drape_session s, sink *k, pid_t embed_pid, bool accept_cancel)
{
	double last = cli_now_ms();
	bool lost = false;
	for (;;) {
		if (cli_interrupted)
			return CLI_INTERRUPTED;
		drape_frame f;
		drape_error err;
		drape_err rc = drape_next_frame(c, s, &f, 250, &err);
		if (rc == DRAPE_OK) {
			int x = f.triangles != NULL
					? sink_mesh(k, f.triangles, f.triangle_count, f.vertex_count)
					: 0;
			if (x == 0)
				x = sink_frame(k, f.index, f.positions, f.vertex_count, &f.stats);
			drape_frame_free(&f);
			if (x != 0)
				return x;
			last = cli_now_ms();
			lost = false;
			continue;
		}
		if (rc == DRAPE_EDONE)
			return 0;
		if (rc == DRAPE_ECANCELED) {
			if (k->progress)
				fputc('\n', stderr);
			fprintf(stderr, "drape: %s\n", err.message);
			return accept_cancel ? 0 : CLI_FAILED;
		}
		if (rc == DRAPE_ERANGE) {
			if (k->progress)
				fputc('\n', stderr);
			fprintf(stderr, "drape: warning: %s\n", err.message);
			continue;
		}
		if (rc == DRAPE_ETIMEDOUT) {
			int status;
			if (embed_pid > 0 && waitpid(embed_pid, &status, WNOHANG) == embed_pid) {
				if (k->progress)
					fputc('\n', stderr);
				fprintf(stderr, "drape: the embedded server exited during the run\n");
				return CLI_UNAVAILABLE;
			}
			/* A frame wait timing out is normal for slow frames; a
			 * server that stopped answering is not. */
			if (cli_now_ms() - last > 2000) {
				drape_status st;
				drape_err r2 = drape_session_status(c, s, &st, &err);
				/* A daemon restarting (crash, upgrade) is waited for,
				 * as libdrape does (reconnect_timeout_ms): the run
				 * resumes by itself and no frame is lost. */
				if ((r2 == DRAPE_ETIMEDOUT || r2 == DRAPE_EUNAVAILABLE) &&
				    cli_now_ms() - last < CLI_RECONNECT_MS) {
					if (!lost)
						fprintf(stderr, "%sdrape: the server does not answer; waiting for it "
								"to come back\n", k->progress ? "\n" : "");
					lost = true;
					continue;
				}
				if (r2 != DRAPE_OK) {
					if (k->progress)
						fputc('\n', stderr);
					return cli_fail("waiting for frames", r2, &err);
				}
				last = cli_now_ms();
				lost = false;
			}
			continue;
		}
		if (k->progress)
			fputc('\n', stderr);
		return cli_fail("receiving frames", rc, &err);
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* `drape run --material NAME`: the preset replaces the scene's material
 * (and makes the cloth a physical one if it was not). Returns 0 or an exit
 * code. */
static int override_material(drape_scene *sc, const char *name)
{
	drape_error err;
	if (drape_material_preset(name, &sc->params, &err) != DRAPE_OK) {
		fprintf(stderr, "drape run: --%s\n", err.message);
		return CLI_USAGE;
	}
	for (const char *const *n = drape_material_preset_names(); *n != NULL; n++)
		if (strcmp(*n, name) == 0)
			sc->material = *n;
	return 0;
}

/*
 * A tearing cloth (cloth.tear_strain) gains vertices when it tears: its
 * frames change mesh, which per-frame OBJ files carry and the single-file
 * point caches (PC2, MDD: one vertex count for the whole file) cannot, nor
 * GEO's velocities from the previous frame. Returns 0 or an exit code.
 */
static int tear_check_format(const drape_scene *sc, const cli_opts *o)
{
	if (!(sc->params.tear_strain > 0.0f) || o->out_dir == NULL || o->format == NULL ||
	    strcmp(o->format, "obj") == 0)
		return 0;
	fprintf(stderr, "drape run: cloth.tear_strain: a tearing cloth changes its vertex count, which "
			"--format %s cannot hold; its frames are written as OBJ (--format obj)\n",
		o->format);
	return CLI_USAGE;
}

/* The cloth starts with `pairs` intersecting triangle pairs: what the run
 * will do with them. */
static void cli_warn_tangled(uint64_t pairs, int self_collision)
{
	fprintf(stderr, "drape: warning: the cloth starts with %llu intersecting triangle pairs%s\n",
		(unsigned long long)pairs,
		self_collision ? ": self-collision releases them until they separate"
			       : " (self-collision is off: they pass through each other)");
}

/* `drape run --local`: the same scene through the solver in this process. */
static int run_local(const drape_scene *sc, uint32_t frames, uint32_t start, const cli_opts *o, double t0)
{
	drape_sim_desc d;
	drape_sim *sim;
	drape_error err;
	float *inv_mass = NULL;
	int tx = tear_check_format(sc, o);
	if (tx != 0)
		return tx;
	drape_err rc = cli_scene_sim_desc(sc, &d, &inv_mass, &err);
	if (rc != DRAPE_OK)
		return cli_fail("cloth.mass_scale", rc, &err);
	/* The same threads as the embedded server by default (one per core,
	 * as draped's --pool-threads): a lone session there also splits each
	 * frame over the pool. The pool changes the time, never the result. */
	drape_pool *pool = NULL;
	rc = drape_pool_create(o->threads, &pool, &err);
	if (rc != DRAPE_OK) {
		free(inv_mass);
		return cli_fail("creating the solver's threads", rc, &err);
	}
	d.pool = pool;
	if (!o->quiet && !o->json)
		fprintf(stderr, "drape: solving in this process on %u thread%s\n",
			(unsigned)drape_pool_threads(pool), drape_pool_threads(pool) == 1 ? "" : "s");
	rc = drape_sim_create(&d, &sim, &err);
	free(inv_mass);
	if (rc != DRAPE_OK) {
		drape_pool_destroy(pool);
		return cli_fail("creating the solver", rc, &err);
	}
	if (!o->quiet && !o->json) {
		char sched[96];
		cli_schedule_text(sim, sched, sizeof sched);
		fprintf(stderr, "drape: schedule: %s\n", sched);
	}
	int x = 0;
	for (uint32_t i = 0; i < sc->collider_count && x == 0; i++) {
		rc = drape_sim_add_collider(sim, &sc->colliders[i], NULL, &err);
		if (rc != DRAPE_OK)
			x = cli_fail("adding a collider", rc, &err);
	}
	for (uint32_t ci = 0; ci < sc->collider_count && x == 0 && sc->pin_attach; ci++) {
		for (uint32_t i = 0; i < sc->pin_count && x == 0; i++) {
			if (sc->pin_attach[i] != (int32_t)ci)
				continue;
			rc = drape_sim_attach_pins(sim, &sc->pins[i], 1, ci, &err);
			if (rc != DRAPE_OK)
				x = cli_fail("attaching pins", rc, &err);
		}
	}
	/* The warning a run through a server gives from its create reply. */
	uint64_t tangled = 0;
	if (x == 0 && drape_preflight(sc->cloth.positions, sc->cloth.vertex_count, sc->cloth.triangles,
				      sc->cloth.triangle_count, NULL, 0, &tangled, NULL) == DRAPE_OK &&
	    tangled > 0)
		cli_warn_tangled(tangled, sc->params.self_collision);
	uint32_t *torn_tris = NULL;
	uint32_t pos_cap = sc->cloth.vertex_count;
	float *pos = malloc((size_t)pos_cap * 3 * sizeof *pos);
	if (pos == NULL && x == 0) {
		fprintf(stderr, "drape: out of memory\n");
		x = CLI_SOFTWARE;
	}
	sink k;
	sink_init(&k, o, &sc->cloth, frames - start + 1);
	k.start = start;
	sink_scene(&k, sc, frames);
	for (uint32_t f = 1; f <= frames && x == 0; f++) {
		if (cli_interrupted) {
			x = CLI_INTERRUPTED;
			break;
		}
		drape_sim_stats st;
		rc = drape_sim_step(sim, &st, &err);
		if (rc != DRAPE_OK) {
			x = cli_fail("solving", rc, &err);
			break;
		}
		/* A tear adds vertices (cloth.tear_strain). */
		const uint32_t n = drape_sim_vertex_count(sim);
		if (n > pos_cap) {
			float *grown = realloc(pos, (size_t)n * 3 * sizeof *pos);
			if (grown == NULL) {
				fprintf(stderr, "drape: out of memory\n");
				x = CLI_SOFTWARE;
				break;
			}
			pos = grown;
			pos_cap = n;
		}
		if (st.split_vertices > 0) {
			uint32_t nt = drape_sim_triangle_count(sim);
			uint32_t *t = realloc(torn_tris, (size_t)nt * 3 * sizeof *t);
			if (t == NULL) {
				fprintf(stderr, "drape: out of memory\n");
				x = CLI_SOFTWARE;
				break;
			}
			torn_tris = t;
			if (drape_sim_get_mesh(sim, t, NULL, &err) != DRAPE_OK) {
				x = cli_fail("reading the torn mesh", DRAPE_ESTATE, &err);
				break;
			}
			if ((x = sink_mesh(&k, t, nt, n)) != 0)
				break;
		}
		drape_sim_get_positions(sim, pos);
		x = sink_frame(&k, st.frame, pos, n, &st);
	}
	if (x == 0)
		x = sink_finish(&k);
	if (x == 0)
		sink_summary(&k, 0, cli_now_ms() - t0, "in process");
	sink_free(&k);
	free(pos);
	free(torn_tris);
	drape_sim_destroy(sim);
	drape_pool_destroy(pool);
	return x;
}

/* The exit code of a batch run (--state-dir) for what ended it: SIGTERM is
 * 143 with the run checkpointed, and a server that went away is a
 * retryable failure (EX_TEMPFAIL) rather than EX_UNAVAILABLE, so a farm
 * retries the task, which then continues from the checkpoint. */
static int batch_exit(int x)
{
	if (x == CLI_INTERRUPTED && cli_interrupted == SIGTERM)
		return CLI_TERMINATED;
	if (x == CLI_UNAVAILABLE)
		return CLI_TEMPFAIL;
	return x;
}

/* One JSON line for a farm's log parser (--json). */
static void batch_event(const cli_opts *o, const char *event, uint32_t session, uint32_t frames_done,
			uint32_t next)
{
	if (!o->json)
		return;
	printf("{\"event\":\"%s\",\"session\":%u,\"frames_done\":%u,\"next_frame\":%u}\n", event,
	       (unsigned)session, (unsigned)frames_done, (unsigned)next);
	fflush(stdout);
}

/*
 * --state-dir with a session the folder already names: continue it. The
 * daemon reloaded it from its checkpoint (canceled by the interruption, or
 * done), or on a shared server it may still be running. Frames are received
 * from the first one the frames folder lacks. Returns 0 when there is
 * nothing to continue from (the server no longer has the session: the run
 * starts over, keeping the frames written), 1 when *s is continuing, or an
 * exit code.
 */
static int batch_continue(drape_client *c, const cli_batch *b, const drape_scene *sc, const cli_opts *o,
			  uint32_t frames, drape_session *s, uint32_t *next)
{
	drape_status st;
	drape_error err;
	drape_err rc = drape_session_status(c, b->session, &st, &err);
	if (rc == DRAPE_ENOTFOUND) {
		fprintf(stderr, "drape: session %u of --state-dir is gone from the server (%s); starting over, "
				"keeping the frames written\n",
			(unsigned)b->session.id, err.message);
		return 0;
	}
	if (rc != DRAPE_OK)
		return cli_fail("session.status", rc, &err);
	if (st.vertices != sc->cloth.vertex_count) {
		fprintf(stderr, "drape run: --state-dir holds session %u of %u vertices, the scene has %u: "
				"another scene's folder? (remove it to start over)\n",
			(unsigned)b->session.id, (unsigned)st.vertices, (unsigned)sc->cloth.vertex_count);
		return CLI_DATAERR;
	}
	*s = b->session;
	uint32_t done = st.frames_done;
	if (st.state == DRAPE_STATE_FAILED) {
		fprintf(stderr, "drape: session %u failed: %s\n", (unsigned)s->id, st.error.message);
		return CLI_DATAERR;
	}
	if (st.state == DRAPE_STATE_CANCELED || st.state == DRAPE_STATE_IDLE) {
		drape_run_info info;
		rc = drape_session_resume(c, *s, &info, &err);
		if (rc != DRAPE_OK)
			return cli_fail("session.resume", rc, &err);
		done = info.frames_done;
	}
	*next = first_missing_frame(o->out_dir, frames, NULL);
	if (*next > done + 1)
		*next = done + 1;
	if (!o->quiet)
		fprintf(stderr,
			"drape: resuming session %u: %u of %u frames solved before (checkpoint), %u written; "
			"receiving from frame %u\n",
			(unsigned)s->id, (unsigned)done, (unsigned)frames, (unsigned)(*next - 1), (unsigned)*next);
	batch_event(o, "resume", s->id, done, *next);
	if ((rc = drape_frames_seek(c, *s, *next, &err)) != DRAPE_OK)
		return cli_fail("seek", rc, &err);
	return 1;
}

int cli_cmd_run(int argc, char **argv)
{
	static const char *const allowed[] = {"--server", "--out",   "--frames",   "--json",
					      "--token-file", "--local", "--quiet", "--timeout",
					      "--material", "--state-dir", "--set", "--format", "--rm",
					      "--threads", NULL};
	cli_opts o;
	if (!cli_parse(argc, argv, 2, allowed, 1, "run", &o))
		return CLI_USAGE;
	if (o.help) {
		cli_usage("run", false);
		return CLI_OK;
	}
	if (o.nargs != 1) {
		fprintf(stderr, "drape run: expected one SCENE.json\n");
		cli_usage("run", true);
		return CLI_USAGE;
	}
	if (o.local && o.server && !o.server_from_env) {
		fprintf(stderr, "drape run: --local and --server exclude each other\n");
		return CLI_USAGE;
	}
	/* A running draped was started with its own --threads and
	 * --pool-threads, shared by every session on it; a client cannot
	 * change them, so saying it can would be a lie. */
	if (o.threads != 0 && o.server != NULL) {
		fprintf(stderr, "drape run: --threads applies to the embedded server and --local; the "
				"server %s uses its own (draped --threads/--pool-threads)%s\n",
			o.server, o.server_from_env ? " (from $DRAPE_SERVER)" : "");
		return CLI_USAGE;
	}
	if (o.local && o.state_dir) {
		fprintf(stderr, "drape run: --state-dir needs a server (the embedded one, or --server); "
				"--local keeps no checkpoints\n");
		return CLI_USAGE;
	}
	/* A batch run keeps the frame files an earlier attempt wrote, one file
	 * per frame; a single-file cache would be rewritten from frame 1. */
	if (o.state_dir && o.format != NULL && strcmp(o.format, "obj") != 0) {
		fprintf(stderr, "drape run: --state-dir writes OBJ frames (an earlier attempt's files are "
				"kept); --format %s is not available with it yet\n",
			o.format);
		return CLI_USAGE;
	}
	const double t0 = cli_now_ms();
	drape_scene sc;
	int x = load_scene(o.args[0], &o, &sc);
	if (x != 0)
		return x;
	if (o.material != NULL && (x = override_material(&sc, o.material)) != 0) {
		drape_scene_free(&sc);
		return x;
	}
	/* A mesh in the wrong units is valid input, so it would run unnoticed. */
	char units[1024];
	if (drape_scene_size_note(&sc, units, sizeof units) > 0)
		fprintf(stderr, "drape: warning: %s\n", units);
	/* Pinned pieces next to unpinned ones: the user meant to hang them all. */
	uint32_t pieces = 0, unpinned = 0;
	drape_error perr;
	if (sc.pin_count > 0 && cli_check_pieces(&sc, &pieces, &unpinned, &perr) == DRAPE_OK && unpinned > 0)
		fprintf(stderr,
			"drape: warning: %u of the cloth's %u pieces have no pinned vertex: they fall unless a "
			"collider holds them\n",
			unpinned, pieces);
	uint32_t frames = o.frames ? o.frames : sc.frames;
	if (sc.start_frame > frames) {
		fprintf(stderr, "drape run: --frames %u ends before the scene's start_frame %u\n", (unsigned)frames,
			(unsigned)sc.start_frame);
		drape_scene_free(&sc);
		return CLI_USAGE;
	}
	cli_batch b;
	memset(&b, 0, sizeof b);
	b.lock_fd = -1;
	bool found = false;
	char frames_dir[4200];
	if (o.state_dir != NULL) {
		if ((x = cli_batch_open(o.state_dir, &b, &found)) != 0) {
			cli_batch_close(&b);
			drape_scene_free(&sc);
			return x;
		}
		const char *server = o.server ? o.server : "";
		if (found && (strcmp(b.server, server) != 0 || b.frames != frames)) {
			fprintf(stderr,
				"drape run: --state-dir %s is a run of %u frames on %s; this one is %u frames on %s "
				"(the same --server and --frames continue it; another folder starts a new run)\n",
				o.state_dir, (unsigned)b.frames, b.server[0] ? b.server : "the embedded server",
				(unsigned)frames, server[0] ? server : "the embedded server");
			cli_batch_close(&b);
			drape_scene_free(&sc);
			return CLI_USAGE;
		}
		if (o.out_dir == NULL) {
			snprintf(frames_dir, sizeof frames_dir, "%s/frames", o.state_dir);
			o.out_dir = frames_dir;
		}
	}
	if (o.out_dir != NULL && (x = make_out_dir(o.out_dir)) != 0) {
		cli_batch_close(&b);
		drape_scene_free(&sc);
		return x;
	}
	if ((x = tear_check_format(&sc, &o)) != 0) {
		cli_batch_close(&b);
		drape_scene_free(&sc);
		return x;
	}
	cli_signals_install();
	if (o.local) {
		x = run_local(&sc, frames, sc.start_frame, &o, t0);
		drape_scene_free(&sc);
		return x;
	}

	cli_embed emb = {.pid = -1};
	const char *url = o.server;
	if (found && b.url[0] != '\0')
		url = b.url; /* the box of the pool that holds the session */
	if (url == NULL) {
		x = cli_embed_start(&emb, &o);
		if (x != 0) {
			cli_batch_close(&b);
			drape_scene_free(&sc);
			return o.state_dir ? batch_exit(x) : x;
		}
		url = emb.url;
	}
	drape_client *c = NULL;
	drape_error err;
	drape_err rc = cli_connect(url, &o, &c, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("connect", rc, &err);
		goto out;
	}
	/* On a pool, the client is connected to the box chosen for the new
	 * session: the token and the batch record name that box. */
	const char *box = drape_client_url(c);
	if (o.server != NULL && cli_url_is_pool(o.server) && !found && !o.quiet)
		fprintf(stderr, "drape: pool %s: placed on %s\n", o.server, box);

	drape_session s;
	uint32_t next = 1;
	bool continuing = false;
	if (found) {
		x = batch_continue(c, &b, &sc, &o, frames, &s, &next);
		if (x < 0 || x > 1)
			goto out;
		continuing = x == 1;
		x = 0;
	}
	if (!continuing) {
		/* The session with its colliders and pins, as drape_scene_load
		 * builds it (the scene is kept: its mesh goes into the files
		 * written). */
		drape_scene_info info;
		rc = drape_scene_submit(c, &sc, base_name(o.args[0]), &s, &info, &err);
		if (rc != DRAPE_OK) {
			cli_fail("scene", rc, &err);
			x = cli_create_exit_code(rc, &err);
			goto out;
		}
		char hex[DRAPE_TOKEN_HEX_SIZE];
		drape_token_format(s.token, hex);
		/* Session and token go to stderr so that stdout stays pure JSON lines
		 * with --json. The token is saved only for a shared server: an embedded
		 * one dies with this command. */
		if (o.server != NULL) {
			fprintf(stderr, "drape: session %u on %s, owner token %s\n", (unsigned)s.id, box, hex);
			cli_token_save(box, s);
			if (cli_url_is_pool(o.server))
				cli_pool_remember(o.server, box, s);
		}
		/* The first JSON line names the session, so a plugin can attach,
		 * export or cancel it. */
		if (o.json) {
			printf("{\"session\":%u,\"owner_token\":\"%s\",\"server\":", (unsigned)s.id, hex);
			if (o.server != NULL)
				cli_json_str(stdout, box);
			else
				fputs("null", stdout);
			printf(",\"vertices\":%u,\"triangles\":%u,\"frames\":%u}\n", (unsigned)sc.cloth.vertex_count,
			       (unsigned)sc.cloth.triangle_count, (unsigned)frames);
			fflush(stdout);
		}
		if (info.intersections > 0)
			cli_warn_tangled(info.intersections, sc.params.self_collision);
		if (o.state_dir != NULL) {
			snprintf(b.server, sizeof b.server, "%s", o.server ? o.server : "");
			snprintf(b.url, sizeof b.url, "%s", o.server ? box : "");
			b.session = s;
			b.frames = frames;
			if ((x = cli_batch_save(o.state_dir, &b)) != 0)
				goto out;
			batch_event(&o, "start", s.id, 0, 1);
		}
		rc = drape_session_run(c, s, frames, NULL, &err);
		if (rc != DRAPE_OK) {
			x = cli_fail("session.run", rc, &err);
			goto out;
		}
	}
	sink k;
	sink_init(&k, &o, &sc.cloth, frames - (next > sc.start_frame ? next : sc.start_frame) + 1);
	k.start = sc.start_frame;
	k.keep = o.state_dir != NULL;
	sink_scene(&k, &sc, frames);
	x = receive(c, s, &k, emb.pid, false);
	if (x == CLI_INTERRUPTED && o.state_dir != NULL) {
		/* A farm's preemption: keep the session. The embedded daemon
		 * checkpoints it when stopped below; a shared server keeps
		 * running it. The next run with this --state-dir continues. */
		fprintf(stderr, "\ndrape: %s; session %u kept in %s, run again with the same --state-dir to "
				"continue\n",
			cli_interrupted == SIGTERM ? "terminated" : "interrupted", (unsigned)s.id, o.state_dir);
		batch_event(&o, "checkpoint", s.id, k.last_index, k.last_index + 1);
	} else if (x == CLI_INTERRUPTED) {
		fprintf(stderr, "\ndrape: interrupted; canceling session %u\n", (unsigned)s.id);
		drape_session_cancel(c, s, NULL, NULL, NULL);
	} else if (x == 0) {
		if (!continuing && k.written + k.skipped + k.kept != frames)
			fprintf(stderr, "drape: warning: received %u of %u frames\n",
				(unsigned)(k.written + k.skipped + k.kept), (unsigned)frames);
		x = sink_finish(&k);
		if (x == 0 && o.state_dir != NULL && first_missing_frame(o.out_dir, frames, NULL) <= frames) {
			fprintf(stderr, "drape: the run ended with frame %u missing from %s\n",
				(unsigned)first_missing_frame(o.out_dir, frames, NULL), o.out_dir);
			x = CLI_TEMPFAIL;
		} else if (x == 0) {
			sink_summary(&k, s.id, cli_now_ms() - t0,
				     continuing ? "resumed" : o.server ? "server" : "embedded server");
			/* --rm: the frames are written, so the session has served
			 * its purpose; deleting it frees the server at once instead
			 * of at the idle timeout. */
			if (o.rm && o.server != NULL) {
				rc = drape_session_delete(c, s, &err);
				if (rc != DRAPE_OK)
					x = cli_fail("session.delete (--rm)", rc, &err);
				else
					cli_token_remove(box, s.id);
			}
		}
	}
	sink_free(&k);
out:
	drape_close(c);
	cli_embed_stop(&emb);
	cli_batch_close(&b);
	drape_scene_free(&sc);
	return o.state_dir ? batch_exit(x) : x;
}

/*
 * The mesh behind a session's frames for attach and export: the --scene's
 * cloth when given (its OBJ's faces and UVs go into OBJ frames), else the
 * session's own, fetched with session.topology. Returns 0 or an exit code;
 * *mesh points into *sc or *topo.
 */
static int frames_mesh(drape_client *c, drape_session s, const char *cmd, const char *scene_path,
		       const drape_scene *sc, drape_topology *topo, drape_obj_mesh *view,
		       const drape_obj_mesh **mesh, float *fps, bool *have_topo)
{
	*have_topo = false;
	if (scene_path != NULL) {
		*mesh = &sc->cloth;
		*fps = sc->params.fps;
		return 0;
	}
	drape_error err;
	drape_err rc = drape_session_topology(c, s, topo, &err);
	if (rc == DRAPE_EPROTO && strstr(err.message, "session.topology") != NULL) {
		/* A daemon from before session.topology: vertices only. */
		fprintf(stderr, "drape %s: note: this server does not send the session's triangles; "
				"without --scene the files hold vertices only\n", cmd);
		*mesh = NULL;
		*fps = 24.0f;
		return 0;
	}
	if (rc != DRAPE_OK)
		return cli_fail("session.topology", rc, &err);
	memset(view, 0, sizeof *view);
	view->positions = topo->positions;
	view->vertex_count = topo->vertex_count;
	view->triangles = topo->triangles;
	view->triangle_count = topo->triangle_count;
	view->uvs = topo->uvs;
	*mesh = view;
	*fps = topo->fps;
	*have_topo = true;
	return 0;
}

/* attach (follow a session to the end of its run) and export (write the
 * frames of a finished session): the same reception, different rules. */
static int attach_or_export(int argc, char **argv, bool export)
{
	static const char *const allowed[] = {"--server", "--out",   "--json",    "--token-file",
					      "--from",   "--quiet", "--timeout", "--scene",
					      "--owner-token", "--format", NULL};
	const char *cmd = export ? "export" : "attach";
	cli_opts o;
	if (!cli_parse(argc, argv, 2, allowed, 1, cmd, &o))
		return CLI_USAGE;
	if (o.help) {
		cli_usage(cmd, false);
		return CLI_OK;
	}
	const char *scene_path = o.scene;
	uint32_t id;
	if (o.nargs != 1 || !cli_parse_id(o.args[0], &id)) {
		fprintf(stderr, "drape %s: expected a session ID\n", cmd);
		cli_usage(cmd, true);
		return CLI_USAGE;
	}
	if (export && o.out_dir == NULL) {
		fprintf(stderr, "drape export: --out DIR is required (where the frames go)\n");
		return CLI_USAGE;
	}
	const double t0 = cli_now_ms();
	drape_scene sc;
	memset(&sc, 0, sizeof sc);
	drape_topology topo;
	memset(&topo, 0, sizeof topo);
	int x;
	if (scene_path != NULL && (x = load_scene(scene_path, &o, &sc)) != 0)
		return x;
	if (o.out_dir != NULL && (x = make_out_dir(o.out_dir)) != 0) {
		drape_scene_free(&sc);
		return x;
	}
	cli_signals_install();
	char box[1024];
	const char *url = cli_session_url(&o, id, box, sizeof box);
	if (url == NULL) {
		drape_scene_free(&sc);
		return CLI_USAGE;
	}
	/* Frames are the owner's: the server hands them only to a client
	 * with the session's owner token. */
	bool have_token;
	drape_session s = cli_session_handle(url, id, &o, &have_token);
	drape_client *c = NULL;
	drape_error err;
	if (!have_token) {
		fprintf(stderr,
			"drape %s: no owner token for session %u on %s: pass --owner-token HEX "
			"(drape run prints it and saves it under ~/.cache/drape/tokens)\n",
			cmd, (unsigned)id, url);
		x = CLI_NOPERM;
		goto out;
	}
	drape_err rc = cli_connect(url, &o, &c, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("connect", rc, &err);
		goto out;
	}
	drape_status st;
	rc = drape_session_status(c, s, &st, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("session.status", rc, &err);
		goto out;
	}
	if (scene_path != NULL && sc.cloth.vertex_count != st.vertices) {
		fprintf(stderr, "drape %s: --scene %s has %u vertices, session %u has %u\n", cmd,
			scene_path, (unsigned)sc.cloth.vertex_count, (unsigned)id, (unsigned)st.vertices);
		x = CLI_DATAERR;
		goto out;
	}
	if (export && (st.state == DRAPE_STATE_RUNNING || st.state == DRAPE_STATE_QUEUED)) {
		fprintf(stderr, "drape export: session %u is %s (frame %u of %u); export writes a finished "
				"run: wait for it, or follow it with drape attach %u\n",
			(unsigned)id, drape_state_name(st.state), (unsigned)st.frames_done,
			(unsigned)st.frames_target, (unsigned)id);
		x = CLI_TEMPFAIL;
		goto out;
	}
	if (export && st.frames_done == 0) {
		fprintf(stderr, "drape export: session %u has no solved frame to write\n", (unsigned)id);
		x = CLI_DATAERR;
		goto out;
	}
	drape_obj_mesh view;
	const drape_obj_mesh *mesh = NULL;
	float fps = 24.0f;
	bool have_topo = false;
	if ((x = frames_mesh(c, s, cmd, scene_path, &sc, &topo, &view, &mesh, &fps, &have_topo)) != 0)
		goto out;
	/* Export writes what is retained: from --from, else from the oldest
	 * frame the session still holds. */
	uint32_t from = o.from;
	if (export && from == 0 && st.frames_first > 1)
		from = st.frames_first;
	if (from > 0 && (rc = drape_frames_seek(c, s, from, &err)) != DRAPE_OK) {
		x = cli_fail("seek", rc, &err);
		goto out;
	}
	uint32_t last = export || st.frames_target == 0 ? st.frames_done : st.frames_target;
	sink k;
	sink_init(&k, &o, mesh, last);
	k.vertex_count = st.vertices;
	k.fps = fps;
	k.obj_source = scene_path != NULL ? sc.cloth_path : NULL;
	k.rest_is_input = mesh != NULL;
	k.last_expected = last;
	/* A session of several cloths: one cache each. */
	if (scene_path != NULL)
		cli_objcache_init(&k.objs, sc.objects, sc.object_count, sc.cloth.triangles,
				  sc.cloth.triangle_count, sc.object_paths);
	else if (have_topo)
		cli_objcache_init(&k.objs, topo.objects, topo.object_count, topo.triangles,
				  topo.triangle_count, NULL);
	x = receive(c, s, &k, -1, true);
	if (x == 0)
		x = sink_finish(&k);
	if (x == 0)
		sink_summary(&k, id, cli_now_ms() - t0, export ? "exported" : "attached");
	sink_free(&k);
out:
	drape_close(c);
	drape_topology_free(&topo);
	drape_scene_free(&sc);
	return x;
}

int cli_cmd_attach(int argc, char **argv)
{
	return attach_or_export(argc, argv, false);
}

int cli_cmd_export(int argc, char **argv)
{
	return attach_or_export(argc, argv, true);
}

int cli_cmd_resume(int argc, char **argv)
{
	static const char *const allowed[] = {"--server", "--out",   "--json",        "--token-file",
					      "--from",   "--quiet", "--timeout",     "--scene",
					      "--owner-token", "--format", NULL};
	cli_opts o;
	if (!cli_parse(argc, argv, 2, allowed, 1, "resume", &o))
		return CLI_USAGE;
	if (o.help) {
		cli_usage("resume", false);
		return CLI_OK;
	}
	uint32_t id;
	if (o.nargs != 1 || !cli_parse_id(o.args[0], &id)) {
		fprintf(stderr, "drape resume: expected a session ID\n");
		cli_usage("resume", true);
		return CLI_USAGE;
	}
	const double t0 = cli_now_ms();
	drape_topology topo;
	memset(&topo, 0, sizeof topo);
	drape_scene sc;
	memset(&sc, 0, sizeof sc);
	int x;
	if (o.scene != NULL && (x = load_scene(o.scene, &o, &sc)) != 0)
		return x;
	if (o.out_dir != NULL && (x = make_out_dir(o.out_dir)) != 0) {
		drape_scene_free(&sc);
		return x;
	}
	cli_signals_install();
	char box[1024];
	const char *url = cli_session_url(&o, id, box, sizeof box);
	if (url == NULL) {
		drape_scene_free(&sc);
		return CLI_USAGE;
	}
	bool have_token;
	drape_session s = cli_session_handle(url, id, &o, &have_token);
	drape_client *c = NULL;
	drape_error err;
	drape_err rc = cli_connect(url, &o, &c, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("connect", rc, &err);
		goto out;
	}
	drape_status st;
	rc = drape_session_status(c, s, &st, &err);
	if (rc != DRAPE_OK) {
		x = cli_fail("session.status", rc, &err);
		goto out;
	}
	if (o.scene != NULL && sc.cloth.vertex_count != st.vertices) {
		fprintf(stderr, "drape resume: --scene %s has %u vertices, session %u has %u\n", o.scene,
			(unsigned)sc.cloth.vertex_count, (unsigned)id, (unsigned)st.vertices);
		x = CLI_DATAERR;
		goto out;
	}
	drape_run_info info;
	rc = drape_session_resume(c, s, &info, &err);
	if (rc == DRAPE_ESTATE) {
		/* A restarted draped resumes interrupted runs by itself
		 * (--resume-interrupted): one already going is followed like
		 * one resumed here. */
		drape_status now;
		drape_error e2;
		if (drape_session_status(c, s, &now, &e2) == DRAPE_OK &&
		    (now.state == DRAPE_STATE_RUNNING || now.state == DRAPE_STATE_QUEUED)) {
			info.state = now.state;
			info.frames_done = now.frames_done;
			info.frames_target = now.frames_target;
			info.queue_position = now.queue_position;
			rc = DRAPE_OK;
		}
	}
	if (rc != DRAPE_OK) {
		x = cli_fail("session.resume", rc, &err);
		if (rc == DRAPE_EPERM && !have_token)
			fprintf(stderr,
				"drape: no owner token for session %u on %s: pass --owner-token HEX "
				"(drape run prints it and saves it under ~/.cache/drape/tokens)\n",
				(unsigned)id, url);
		goto out;
	}
	if (!o.quiet)
		fprintf(stderr, "drape: session %u resumed at frame %u of %u (%s%s)\n", (unsigned)id,
			(unsigned)info.frames_done, (unsigned)info.frames_target,
			drape_state_name(info.state),
			info.state == DRAPE_STATE_QUEUED ? ", waiting for a worker" : "");
	/* Frames solved before the crash were not all delivered: the newest
	 * ones were in the daemon's frame cache but had not reached the client
	 * when it died. With --out the folder says what the client has, so
	 * reception starts at the first frame missing from it (the cache
	 * serves the retained ones; the rest are solved now); without --out
	 * only the new frames are received. --from overrides both. */
	uint32_t next = info.frames_done + 1;
	if (o.from > 0)
		next = o.from;
	else if (o.out_dir != NULL)
		next = first_missing_frame(o.out_dir, info.frames_done, o.format);
	if (next <= info.frames_done && !o.quiet)
		fprintf(stderr, "drape: %s lacks frames solved before the interruption; fetching from frame %u\n",
			o.out_dir != NULL && o.from == 0 ? o.out_dir : "--from", (unsigned)next);
	if ((rc = drape_frames_seek(c, s, next, &err)) != DRAPE_OK) {
		x = cli_fail("seek", rc, &err);
		goto out;
	}
	drape_obj_mesh view;
	const drape_obj_mesh *mesh = NULL;
	float fps = 24.0f;
	bool have_topo = false;
	if ((x = frames_mesh(c, s, "resume", o.scene, &sc, &topo, &view, &mesh, &fps, &have_topo)) != 0)
		goto out;
	sink k;
	sink_init(&k, &o, mesh, info.frames_target >= next ? info.frames_target - next + 1 : 0);
	k.vertex_count = st.vertices;
	k.fps = fps;
	k.obj_source = o.scene != NULL ? sc.cloth_path : NULL;
	k.rest_is_input = mesh != NULL;
	k.last_expected = info.frames_target;
	if (o.scene != NULL)
		cli_objcache_init(&k.objs, sc.objects, sc.object_count, sc.cloth.triangles,
				  sc.cloth.triangle_count, sc.object_paths);
	else if (have_topo)
		cli_objcache_init(&k.objs, topo.objects, topo.object_count, topo.triangles,
				  topo.triangle_count, NULL);
	x = receive(c, s, &k, -1, false);
	if (x == CLI_INTERRUPTED) {
		/* Unlike `run`, the session was not started by this command's
		 * creation: leave it running, as attach would. */
		fprintf(stderr, "\ndrape: interrupted; session %u keeps running (drape cancel %u)\n",
			(unsigned)id, (unsigned)id);
	} else if (x == 0 && (x = sink_finish(&k)) == 0) {
		sink_summary(&k, id, cli_now_ms() - t0, "resumed");
	}
	sink_free(&k);
out:
	drape_close(c);
	drape_topology_free(&topo);
	drape_scene_free(&sc);
	return x;
}
