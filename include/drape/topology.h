/*
 * drape — a session's mesh, fetched from the daemon (session.topology), for
 * a client that did not create the session: `drape attach` and `drape
 * export` write complete OBJ, GEO, PC2 and MDD files from it.
 */
#ifndef DRAPE_TOPOLOGY_H
#define DRAPE_TOPOLOGY_H

#include "drape/drape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A session's mesh as it was created, in the creator's vertex order. Every
 * array is owned by the struct and freed by drape_topology_free. */
typedef struct drape_topology {
	uint32_t vertex_count;
	float *positions;       /* vertex_count * 3: the input pose (frame 0) */
	uint32_t triangle_count;
	uint32_t *triangles;    /* triangle_count * 3, each index < vertex_count */
	float *uvs;             /* vertex_count * 2, or NULL when the session has none */
	float fps;              /* the session's frames per second */
	/* A tearing cloth's newest mesh (params.tear_strain): its generation
	 * (0 when it never tore; then the rest is 0 / NULL), its vertex
	 * count, each vertex's created vertex (origin, current_vertex_count
	 * entries) and its triangles (triangle_count * 3, each <
	 * current_vertex_count). The arrays above stay the created mesh,
	 * which frames of generation 0 use. */
	uint32_t generation;
	uint32_t current_vertex_count;
	uint32_t *origin;
	uint32_t *current_triangles;
	/* The session's cloth objects (drape_session_desc.objects), names
	 * owned; NULL (0) for a session of one cloth. */
	drape_object_desc *objects;
	uint32_t object_count;
} drape_topology;

/*
 * Fetches session s's mesh. Needs the owner token (s.token), like frames:
 * a session's data is its owner's. On success *out owns its arrays
 * (drape_topology_free); on failure *out is untouched and err says why
 * (ENOTFOUND, EPERM, ...). Same threading rule as the other calls on c.
 */
drape_err drape_session_topology(drape_client *c, drape_session s, drape_topology *out, drape_error *err);

/* Frees the arrays of *t and zeroes it; NULL and a zeroed struct are fine. */
void drape_topology_free(drape_topology *t);

#ifdef __cplusplus
}
#endif

#endif
