/*
 * session.topology: the mesh a session was created with (the input pose,
 * triangles and uvs, in the caller's vertex order, and its cloth objects)
 * and its frame rate, so a
 * client that did not create the session (drape attach, drape export) can
 * write complete files. Read-only, and the arrays are the session's own
 * copies, not the solver's, so it is answered while a frame is solving.
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
	t->objects = s->in_objects;
	t->object_count = s->in_object_count;
	return DRAPE_OK;
}
