/*
 * A scene read by client/scene.c built as a session on a server:
 * drape_scene_submit (the CLI's `drape run` and drape_scene_load share it)
 * and drape_scene_load, the public one-call form (include/drape/scene.h).
 */
#include "client/scene.h"
#include "drape/scene.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s != NULL ? s + 1 : path;
}

/* Attaches every pin that follows a collider: one pins.attach per collider
 * with all of its pins, as the CLI always sent them. */
static drape_err attach_pins(drape_client *c, drape_session s, const drape_scene *sc, drape_error *err)
{
	if (sc->pin_count == 0 || sc->pin_attach == NULL)
		return DRAPE_OK;
	uint32_t *v = malloc(sc->pin_count * sizeof *v);
	if (v == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "pins.attach: out of memory for %u pins",
					(unsigned)sc->pin_count);
	drape_err rc = DRAPE_OK;
	for (uint32_t ci = 0; ci < sc->collider_count && rc == DRAPE_OK; ci++) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < sc->pin_count; i++)
			if (sc->pin_attach[i] == (int32_t)ci)
				v[n++] = sc->pins[i];
		if (n == 0)
			continue;
		drape_error e;
		rc = drape_pins_attach(c, s, v, n, ci, &e);
		if (rc != DRAPE_OK)
			drape_error_setf(err, rc, "pins.attach (collider %u): %s", (unsigned)ci, e.message);
	}
	free(v);
	return rc;
}

drape_err drape_scene_submit(drape_client *c, const drape_scene *sc, const char *name, drape_session *out,
			     drape_scene_info *info, drape_error *err)
{
	if (c == NULL || sc == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "drape_scene_submit: %s is NULL",
					c == NULL ? "client" : sc == NULL ? "scene" : "out");
	drape_session_desc d;
	drape_session_desc_default(&d);
	d.positions = sc->cloth.positions;
	d.vertex_count = sc->cloth.vertex_count;
	d.triangles = sc->cloth.triangles;
	d.triangle_count = sc->cloth.triangle_count;
	d.pins = sc->pins;
	d.pin_stiffness = sc->pin_stiffness;
	d.pin_count = sc->pin_count;
	d.uvs = sc->cloth.uvs;
	d.rest_positions = sc->rest_positions;
	d.rest_scale = sc->rest_scale;
	d.stiffness_scale = sc->stiffness_scale;
	d.vertex_thickness = sc->vertex_thickness;
	d.vertex_friction = sc->vertex_friction;
	d.objects = sc->objects;
	d.object_count = sc->object_count;
	d.stitches = sc->stitches;
	d.stitch_count = sc->stitch_count;
	d.stitch_k = sc->stitch_k;
	d.sew_speed = sc->sew_speed;
	d.params = sc->params;
	/* A scene that scales masses per group sends them ("mass_scale"). */
	float *inv_mass = NULL;
	drape_err mrc = drape_scene_inv_mass(sc, &inv_mass, err);
	if (mrc != DRAPE_OK)
		return mrc;
	d.inv_mass = inv_mass;
	char nm[DRAPE_NAME_MAX + 1];
	if (name != NULL) {
		snprintf(nm, sizeof nm, "%s", name);
		d.name = nm;
	}
	drape_session s;
	drape_create_info ci;
	drape_error e;
	drape_err rc = drape_session_create(c, &d, &s, &ci, &e);
	free(inv_mass);
	if (rc != DRAPE_OK)
		return drape_error_setf(err, rc, "session.create: %s", e.message);
	for (uint32_t i = 0; i < sc->collider_count && rc == DRAPE_OK; i++) {
		rc = drape_collider_add(c, s, &sc->colliders[i], NULL, &e);
		if (rc != DRAPE_OK)
			drape_error_setf(err, rc, "colliders[%u]: %s", (unsigned)i, e.message);
	}
	if (rc == DRAPE_OK)
		rc = attach_pins(c, s, sc, err);
	if (rc != DRAPE_OK) {
		/* Leave nothing behind: the caller never saw this session. */
		drape_session_delete(c, s, NULL);
		return rc;
	}
	*out = s;
	if (info != NULL) {
		memset(info, 0, sizeof *info);
		info->vertex_count = sc->cloth.vertex_count;
		info->triangle_count = sc->cloth.triangle_count;
		info->frames = sc->frames;
		info->start_frame = sc->start_frame;
		info->collider_count = sc->collider_count;
		info->pin_count = sc->pin_count;
		info->fps = sc->params.fps;
		info->intersections = ci.intersections;
	}
	drape_error_clear(err);
	return DRAPE_OK;
}

drape_err drape_scene_load(drape_client *c, const char *path, const char *name, drape_session *out,
			   drape_scene_info *info, drape_error *err)
{
	if (c == NULL || path == NULL || out == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "drape_scene_load: %s is NULL",
					c == NULL ? "client" : path == NULL ? "path" : "out");
	/* Meshes are bounded by what the server accepts, so a scene too big
	 * for it is refused here, before megabytes are read and sent. */
	drape_server_info si;
	drape_server_info_get(c, &si);
	drape_obj_limits lim;
	drape_obj_limits_default(&lim);
	if (si.limits.max_vertices != 0 && si.limits.max_vertices < lim.max_vertices)
		lim.max_vertices = (uint32_t)si.limits.max_vertices;
	if (si.limits.max_triangles != 0 && si.limits.max_triangles < lim.max_triangles)
		lim.max_triangles = (uint32_t)si.limits.max_triangles;
	drape_scene sc;
	drape_err rc = drape_scene_read(path, &lim, &sc, err);
	if (rc != DRAPE_OK)
		return rc;
	rc = drape_scene_submit(c, &sc, name != NULL ? name : base_name(path), out, info, err);
	drape_scene_free(&sc);
	return rc;
}
