/*
 * session.topology: the mesh a session was created with (the input pose,
 * triangles and uvs, in the caller's vertex order) and its frame rate, so a
 * client that did not create the session (drape attach, drape export) can
 * write complete files. Read-only, and the arrays are the session's own
 * copies, not the solver's, so it is answered while a frame is solving.
 */
#include "server/server.h"

#include <stdlib.h>
#include <string.h>

drape_err srv_op_topology(srv_server *srv, srv_session *s, proto_reply *rep, drape_error *err)
{
	(void)srv;
	if (s->in_positions == NULL || s->in_triangles == NULL)
		return drape_error_setf(err, DRAPE_EINTERNAL, "session.topology: session %u holds no mesh",
					(unsigned)s->id);
	proto_topology_rep *t = &rep->u.topology;
	t->vertex_count = s->vertices;
	t->positions = s->in_positions;
	t->triangle_count = s->triangles;
	t->triangles = s->in_triangles;
	t->uvs = s->in_uvs;
	t->fps = s->params.fps;
	/* A torn cloth's mesh is its newest one: a split vertex has its
	 * origin's input position and uv (tear.h). */
	const srv_tear_gen *g = srv_tear_last(&s->tear);
	if (g != NULL) {
		float *p = realloc(s->torn_positions, (size_t)g->vertices * 12u);
		if (p != NULL)
			s->torn_positions = p;
		float *u = s->in_uvs ? realloc(s->torn_uvs, (size_t)g->vertices * 8u) : NULL;
		if (u != NULL)
			s->torn_uvs = u;
		if (p == NULL || (s->in_uvs != NULL && u == NULL))
			return drape_error_setf(err, DRAPE_ENOMEM,
						"session.topology: out of memory for %u vertices",
						(unsigned)g->vertices);
		for (uint32_t j = 0; j < g->vertices; j++) {
			memcpy(&p[3 * (size_t)j], &s->in_positions[3 * (size_t)g->origin[j]], 12);
			if (u != NULL)
				memcpy(&u[2 * (size_t)j], &s->in_uvs[2 * (size_t)g->origin[j]], 8);
		}
		t->vertex_count = g->vertices;
		t->positions = p;
		t->triangles = g->tris;
		t->uvs = u;
	}
	return DRAPE_OK;
}
