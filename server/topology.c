/*
 * session.topology: the mesh a session was created with (the input pose,
 * triangles and uvs, in the caller's vertex order, and its cloth objects)
 * and its frame rate, so a
 * client that did not create the session (drape attach, drape export) can
 * write complete files. Read-only, and the arrays are the session's own
 * copies, not the solver's, so it is answered while a frame is solving.
 * A tearing cloth's later meshes travel with its frames (frames.get and the
 * stream carry a frame's triangles when its mesh changed): this is the mesh
 * of its frames of topology 0, which a reader needs first.
 */
#include "server/server.h"

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
	/* And a torn cloth's newest mesh beside it (tear.h). */
	const srv_tear_gen *g = srv_tear_last(&s->tear);
	if (g != NULL) {
		t->generation = g->topology;
		t->current_vertex_count = g->vertices;
		t->origin = g->origin;
		t->current_triangles = g->tris;
	}
	t->objects = s->in_objects;
	t->object_count = s->in_object_count;
	return DRAPE_OK;
}
