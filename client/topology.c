/*
 * drape_session_topology: a session's mesh from the daemon (include/drape/topology.h).
 */
#include "drape/topology.h"

#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

drape_err drape_session_topology(drape_client *c, drape_session s, drape_topology *out, drape_error *err)
{
	if (c == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "session.topology: no client or no output");
	proto_request req;
	proto_reply rep;
	proto_request_init(&req, PROTO_OP_SESSION_TOPOLOGY);
	req.has_session = true;
	req.session = s.id;
	req.has_token = true;
	memcpy(req.token, s.token, PROTO_TOKEN_SIZE);
	drape_err rc = client_call(c, &req, &rep, err);
	if (rc != DRAPE_OK)
		return rc;
	/* The decoder checked sizes, index ranges and finiteness. */
	const proto_topology_rep *t = &rep.u.topology;
	drape_topology r;
	memset(&r, 0, sizeof r);
	r.vertex_count = t->vertex_count;
	r.triangle_count = t->triangle_count;
	r.fps = t->fps;
	r.positions = malloc((size_t)t->vertex_count * 12u);
	r.triangles = malloc((size_t)t->triangle_count * 12u);
	if (t->uvs != NULL)
		r.uvs = malloc((size_t)t->vertex_count * 8u);
	int names_ok = 1;
	if (t->object_count > 0 && (r.objects = calloc(t->object_count, sizeof *r.objects)) != NULL) {
		r.object_count = t->object_count;
		for (uint32_t i = 0; i < t->object_count; i++) {
			r.objects[i].range = t->objects[i].range;
			names_ok &= (r.objects[i].name = strdup(t->objects[i].name)) != NULL;
		}
	}
	if (r.positions == NULL || r.triangles == NULL || (t->uvs != NULL && r.uvs == NULL) ||
	    (t->object_count > 0 && r.objects == NULL) || !names_ok) {
		drape_topology_free(&r);
		proto_reply_free(&rep);
		return drape_error_setf(err, DRAPE_ENOMEM, "session.topology: out of memory for %u vertices",
					(unsigned)t->vertex_count);
	}
	memcpy(r.positions, t->positions, (size_t)t->vertex_count * 12u);
	memcpy(r.triangles, t->triangles, (size_t)t->triangle_count * 12u);
	if (t->uvs != NULL)
		memcpy(r.uvs, t->uvs, (size_t)t->vertex_count * 8u);
	if (t->generation != 0) {
		r.origin = malloc((size_t)t->current_vertex_count * 4u);
		r.current_triangles = malloc((size_t)t->triangle_count * 12u);
		if (r.origin == NULL || r.current_triangles == NULL) {
			drape_topology_free(&r);
			proto_reply_free(&rep);
			return drape_error_setf(err, DRAPE_ENOMEM,
						"session.topology: out of memory for %u vertices",
						(unsigned)t->current_vertex_count);
		}
		memcpy(r.origin, t->origin, (size_t)t->current_vertex_count * 4u);
		memcpy(r.current_triangles, t->current_triangles, (size_t)t->triangle_count * 12u);
		r.generation = t->generation;
		r.current_vertex_count = t->current_vertex_count;
	}
	proto_reply_free(&rep);
	*out = r;
	return DRAPE_OK;
}

void drape_topology_free(drape_topology *t)
{
	if (t == NULL)
		return;
	free(t->positions);
	free(t->triangles);
	free(t->uvs);
	free(t->origin);
	free(t->current_triangles);
	for (uint32_t i = 0; t->objects != NULL && i < t->object_count; i++)
		free((char *)t->objects[i].name);
	free(t->objects);
	memset(t, 0, sizeof *t);
}
