/*
 * One cache per cloth of a session of several (client/SCENE.md, "Several
 * cloths"): `drape run --out DIR` (and attach, export) writes each cloth's
 * vertices, in its own numbering and with its own triangles (or its OBJ
 * file's faces and UVs), to DIR/<name>/, in the format of --format, so a
 * DCC loads the shirt and the jacket as two objects. The session solves
 * them as one mesh whose object ranges the scene, session.create and
 * session.topology carry.
 */
#include "client/cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_objcache_init(cli_objcache *w, const drape_object_desc *objects, uint32_t count,
		       const uint32_t *triangles, uint32_t triangle_count, char *const *paths)
{
	memset(w, 0, sizeof *w);
	w->objects = objects;
	w->count = objects != NULL ? count : 0;
	w->triangles = triangles;
	w->triangle_count = triangles != NULL ? triangle_count : 0;
	w->paths = paths;
}

/* Opens object j's writer for first frame `index`: its folder, its
 * triangles renumbered from its first vertex. */
static int open_one(cli_objcache *w, uint32_t j, const drape_cache_desc *base, const float *previous)
{
	const drape_object_desc *o = &w->objects[j];
	char dir[4096];
	if (snprintf(dir, sizeof dir, "%s/%s", base->dir, o->name) >= (int)sizeof dir) {
		fprintf(stderr, "drape: --out: path too long for cloth %s\n", o->name);
		return CLI_USAGE;
	}
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "drape: cannot create %s: %s\n", dir, strerror(errno));
		return CLI_IOERR;
	}
	const uint32_t first = o->range.first_vertex, end = first + o->range.vertex_count;
	if (w->tri[j] == NULL) {
		uint32_t nt = 0;
		for (uint32_t t = 0; t < w->triangle_count; t++)
			nt += w->triangles[3 * (size_t)t] >= first && w->triangles[3 * (size_t)t] < end;
		w->tri[j] = malloc(3 * (size_t)nt * sizeof *w->tri[j] + 1);
		if (w->tri[j] == NULL) {
			fprintf(stderr, "drape: out of memory for cloth %s\n", o->name);
			return CLI_SOFTWARE;
		}
		nt = 0;
		for (uint32_t t = 0; t < w->triangle_count; t++) {
			const uint32_t *v = &w->triangles[3 * (size_t)t];
			if (v[0] < first || v[0] >= end)
				continue;
			for (int k = 0; k < 3; k++)
				w->tri[j][3 * (size_t)nt + k] = v[k] - first;
			nt++;
		}
		w->tri_count[j] = nt;
	}
	drape_cache_desc d = *base;
	d.dir = dir;
	d.name = o->name;
	d.vertex_count = o->range.vertex_count;
	d.triangles = w->triangle_count > 0 ? w->tri[j] : NULL;
	d.triangle_count = w->triangle_count > 0 ? w->tri_count[j] : 0;
	d.obj_source = w->paths != NULL ? w->paths[j] : NULL;
	d.previous = previous ? previous + 3 * (size_t)first : NULL;
	drape_error err;
	drape_err rc = drape_cache_open(&d, &w->cache[j], &err);
	if (rc != DRAPE_OK) {
		fprintf(stderr, "drape: --format %s, cloth %s: %s\n", drape_cache_format_name(d.format),
			o->name, err.message);
		return rc == DRAPE_ENOMEM ? CLI_SOFTWARE : rc == DRAPE_EIO ? CLI_IOERR : CLI_USAGE;
	}
	return 0;
}

int cli_objcache_write(cli_objcache *w, const drape_cache_desc *base, uint32_t index,
		       const float *positions, const float *previous)
{
	if (w->cache == NULL) {
		w->cache = calloc(w->count, sizeof *w->cache);
		w->tri = calloc(w->count, sizeof *w->tri);
		w->tri_count = calloc(w->count, sizeof *w->tri_count);
		if (w->cache == NULL || w->tri == NULL || w->tri_count == NULL) {
			fprintf(stderr, "drape: out of memory for %u caches\n", (unsigned)w->count);
			return CLI_SOFTWARE;
		}
	}
	for (uint32_t j = 0; j < w->count; j++) {
		int x;
		if (w->cache[j] == NULL && (x = open_one(w, j, base, previous)) != 0)
			return x;
		drape_error err;
		const uint32_t first = w->objects[j].range.first_vertex;
		drape_err rc = drape_cache_write_frame(w->cache[j], index, positions + 3 * (size_t)first, &err);
		if (rc != DRAPE_OK) {
			fprintf(stderr, "drape: cannot write frame %u of cloth %s to %s: %s\n",
				(unsigned)index, w->objects[j].name, base->dir, err.message);
			return rc == DRAPE_ENONFINITE || rc == DRAPE_ERANGE ? CLI_DATAERR : CLI_IOERR;
		}
	}
	return 0;
}

int cli_objcache_close(cli_objcache *w, bool report)
{
	int x = 0;
	for (uint32_t j = 0; w->cache != NULL && j < w->count; j++) {
		if (w->cache[j] == NULL)
			continue;
		drape_error err;
		if (drape_cache_close(w->cache[j], &err) != DRAPE_OK && report && x == 0) {
			fprintf(stderr, "drape: finishing the cache of cloth %s: %s\n",
				w->objects[j].name, err.message);
			x = CLI_IOERR;
		}
		w->cache[j] = NULL;
	}
	for (uint32_t j = 0; w->tri != NULL && j < w->count; j++)
		free(w->tri[j]);
	free(w->cache);
	free(w->tri);
	free(w->tri_count);
	w->cache = NULL;
	w->tri = NULL;
	w->tri_count = NULL;
	return x;
}
