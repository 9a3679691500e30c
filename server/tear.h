/*
 * A tearing session's meshes (params.tear_strain, server/sim/tear.c): the
 * cloth's vertex count grows when it tears, so the daemon keeps, for each
 * mesh generation its frames were solved on, the triangles (in the
 * creator's triangle order, split vertices numbered after the created
 * ones) and the vertex count, to hand a frame's mesh to whoever reads it
 * (frames.get, the stream, session.topology). Generation 0 is the created
 * mesh, which the session already holds (srv_session.in_triangles); the table holds
 * the later ones in order. Loop thread.
 */
#ifndef DRAPE_SRV_TEAR_H
#define DRAPE_SRV_TEAR_H

#include <stdbool.h>
#include <stdint.h>

typedef struct srv_tear_gen {
	uint32_t topology;    /* >= 1 */
	uint32_t first_frame; /* the first frame solved on it */
	uint32_t vertices;
	uint32_t *tris;       /* triangles * 3, owned */
	uint32_t *origin;     /* vertices: the created vertex each came from, owned */
} srv_tear_gen;

typedef struct srv_tear {
	srv_tear_gen *gen;
	uint32_t count, cap;
} srv_tear;

/* The most vertices a mesh of `vertices` and `triangles` can tear into:
 * each triangle corner its own vertex, plus the unreferenced ones. */
uint32_t srv_tear_capacity(uint32_t vertices, uint32_t triangles);

/* The extra memory a tearing session's frame buffers take (they hold
 * srv_tear_capacity vertices: the ring's frames_in_memory and two more),
 * added to srv_session_estimate at admission. */
uint64_t srv_tear_extra_bytes(uint32_t vertices, uint32_t triangles, uint64_t frames_in_memory);

void srv_tear_free(srv_tear *t);
/* Appends generation `topology` (must follow the last), taking tris and
 * origin; false when out of memory (they are then freed). */
bool srv_tear_add(srv_tear *t, uint32_t topology, uint32_t first_frame, uint32_t vertices,
		  uint32_t *tris, uint32_t *origin);
/* Generation `topology`, NULL when unknown (0 is the created mesh). */
const srv_tear_gen *srv_tear_find(const srv_tear *t, uint32_t topology);
/* The newest generation, NULL before the first tear. */
const srv_tear_gen *srv_tear_last(const srv_tear *t);
/* Forgets the generations first solved after frame `index` (a reload
 * that restarts from an older checkpoint). */
void srv_tear_truncate(srv_tear *t, uint32_t index);

#endif
