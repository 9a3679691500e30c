/*
 * The size check of a read scene (drape_scene_size_note in scene.h): a
 * mesh in decimetres or centimetres loads without complaint, since every
 * number in it is valid, and then simulates a 9 m dress on a 17 m body,
 * which looks plausible in a viewer that frames the result. Scenes are in
 * metres, so the sizes tell: nothing worn or hung in a studio is over
 * DRAPE_UNITS_MAX_CLOTH across, and no body is over DRAPE_UNITS_MAX_BODY
 * tall. The note is a warning, not an error: a sail or a stage curtain may
 * be that large.
 */
#include "client/scene.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* Largest extent of points [first, first + count) of xyz, and its Y extent. */
static void units_extent(const float *xyz, uint32_t first, uint32_t count, double *largest, double *height)
{
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = first; i < first + count; i++)
		for (int k = 0; k < 3; k++) {
			float v = xyz[3 * (size_t)i + k];
			lo[k] = v < lo[k] ? v : lo[k];
			hi[k] = v > hi[k] ? v : hi[k];
		}
	*largest = 0.0;
	for (int k = 0; k < 3; k++)
		if (hi[k] >= lo[k] && (double)hi[k] - lo[k] > *largest)
			*largest = (double)hi[k] - lo[k];
	*height = hi[1] >= lo[1] ? (double)hi[1] - lo[1] : 0.0;
}

/* The Y extent of colliders[i] when it is a mesh (1), else 0. */
static int units_collider_height(const drape_scene *s, uint32_t i, double *height)
{
	const drape_collider_desc *d = &s->colliders[i];
	if (d->shape != DRAPE_SHAPE_MESH || d->vertices == NULL)
		return 0;
	double largest;
	units_extent(d->vertices, 0, d->vertex_count, &largest, height);
	return 1;
}

/* Appends to buf (at *used of n), "; " between notes; truncates safely. */
static void units_add(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
	if (*used + 1 >= n)
		return;
	if (*used > 0)
		*used += (size_t)snprintf(buf + *used, n - *used, "; ");
	if (*used + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *used, n - *used, fmt, ap);
	va_end(ap);
	if (k > 0)
		*used += (size_t)k;
	if (*used >= n)
		*used = n - 1;
}

size_t drape_scene_size_note(const drape_scene *s, char *buf, size_t n)
{
	size_t used = 0;
	if (n > 0)
		buf[0] = '\0';
	/* A mesh of unstated units (DiffCloth's T-shirt, 11.4 across) is in
	 * neither decimetres nor centimetres: the one size the scene does tell
	 * is the body's. The tallest mesh collider of a plausible height in
	 * metres bounds the cloth's scale: a garment is no larger than the
	 * body it is worn on. */
	int body = -1;
	double body_height = 0.0;
	for (uint32_t i = 0; i < s->collider_count; i++) {
		double height;
		if (units_collider_height(s, i, &height) && height >= DRAPE_UNITS_MIN_BODY && height <= DRAPE_UNITS_MAX_BODY && height > body_height)
			body = (int)i, body_height = height;
	}
	const uint32_t pieces = s->object_count > 0 ? s->object_count : 1;
	for (uint32_t i = 0; i < pieces; i++) {
		uint32_t first = 0, count = s->cloth.vertex_count;
		if (s->object_count > 0) {
			first = s->object_ranges[i].first_vertex;
			count = s->object_ranges[i].vertex_count;
		}
		double largest, height;
		units_extent(s->cloth.positions, first, count, &largest, &height);
		char who[80];
		if (s->object_count > 0)
			snprintf(who, sizeof who, "cloth \"%.64s\"", s->objects[i].name);
		else
			snprintf(who, sizeof who, "the cloth");
		char fit[160] = "";
		if (body >= 0 && (largest > DRAPE_UNITS_MAX_CLOTH || largest < DRAPE_UNITS_MIN_CLOTH))
			snprintf(fit, sizeof fit,
				 "; in units not stated, it is as large as colliders[%d] (%.3g m tall) "
				 "with its \"scale\" times %.3g, and a garment worn on it smaller",
				 body, body_height, body_height / largest);
		if (largest > DRAPE_UNITS_MAX_CLOTH)
			units_add(buf, n, &used,
				  "%s is %.3g m across: scenes are in metres (a mesh in decimetres needs "
				  "\"scale\": 0.1, in centimetres 0.01%s)",
				  who, largest, fit);
		else if (largest < DRAPE_UNITS_MIN_CLOTH)
			units_add(buf, n, &used,
				  "%s is %.3g m across: scenes are in metres (a mesh in millimetres needs "
				  "\"scale\": 0.001%s)",
				  who, largest, fit);
	}
	for (uint32_t i = 0; i < s->collider_count; i++) {
		double height;
		if (units_collider_height(s, i, &height) && height > DRAPE_UNITS_MAX_BODY)
			units_add(buf, n, &used,
				  "colliders[%u] is %.3g m tall: scenes are in metres, Y up (a body in "
				  "decimetres needs \"scale\": 0.1, in centimetres 0.01)",
				  (unsigned)i, height);
	}
	return used;
}
