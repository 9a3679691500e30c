/*
 * Several cloths in one scene (client/SCENE.md, "Several cloths"): the
 * "cloths" array beside the single "cloth". Each entry is read as a whole
 * cloth (its mesh, material, pins, garment keys and per-group properties,
 * scn_cloth), then the cloths are joined into one mesh, vertices and
 * triangles in order, with an object per cloth (drape_sim_desc.objects):
 * one solver mesh, so that cloth against cloth is the self-collision with
 * its guarantee that no two layers cross, and the layers say which cloths
 * meet.
 *
 * The session has one set of parameters, the first cloth's. What differs
 * between the cloths becomes per-vertex values: another material's
 * stiffness is the ratios of its stretch, shear and bending constants to
 * the first cloth's (stiffness_scale; its weft and compression follow its
 * stretch ratio), its density a mass scale, its thickness the vertices'
 * thickness. What cannot be per vertex must agree: the model, the pbd
 * model's stiffness, the material's damping, the stitches' stiffness and
 * sewing speed; a cloth that differs is refused naming its key.
 */
#include "client/scene_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One cloth as read, before the join. */
typedef struct part {
	drape_scene s; /* only the per-cloth fields are set */
	char *name;
	uint32_t layer, mask;
	int has_stitch_keys;
} part;

static void part_free(part *p)
{
	scn_free_cloth_parts(&p->s);
	free(p->name);
}

/* A name that is also a file name: 1 to 64 of [A-Za-z0-9_.-], not "." or
 * "..". */
static drape_err scn_object_name(scn *c, const cJSON *v, char **out)
{
	if (!cJSON_IsString(v))
		return scn_fail(c, DRAPE_EINVAL, "must be a string (the cloth's cache is named after it)");
	const char *s = v->valuestring;
	size_t n = strlen(s);
	int ok = n >= 1 && n <= 64 && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		     (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.';
	if (!ok)
		return scn_fail(c, DRAPE_EINVAL,
				"\"%.64s\" is not a name: 1 to 64 letters, digits, '_', '-' or '.' (it "
				"names the cloth's cache folder)",
				s);
	if ((*out = strdup(s)) == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	return DRAPE_OK;
}

/* "layer": a layer number 0..31; "collides_with": an array of them. */
static drape_err scn_layer(scn *c, const cJSON *v, uint32_t *bits)
{
	int64_t l;
	drape_err e = scn_integer(c, v, 0, 31, &l);
	if (e == DRAPE_OK)
		*bits = 1u << l;
	return e;
}

static drape_err scn_layers(scn *c, const cJSON *v, uint32_t *bits)
{
	if (!cJSON_IsArray(v))
		return scn_fail(c, DRAPE_EINVAL, "must be an array of layer numbers 0..31");
	uint32_t m = 0;
	size_t i = 0;
	for (const cJSON *it = v->child; it != NULL; it = it->next, i++) {
		size_t old = scn_push_index(c, i);
		uint32_t b;
		drape_err e = scn_layer(c, it, &b);
		if (e != DRAPE_OK)
			return e;
		m |= b;
		scn_pop(c, old);
	}
	*bits = m;
	return DRAPE_OK;
}

/* Moves the per-cloth fields of c->s into p and clears them in c->s. */
static void take_cloth(scn *c, part *p)
{
	drape_scene *s = &c->s, *d = &p->s;
	d->cloth = s->cloth;
	d->cloth_path = s->cloth_path;
	d->pins = s->pins;
	d->pin_attach = s->pin_attach;
	d->pin_stiffness = s->pin_stiffness;
	d->pin_count = s->pin_count;
	d->stitches = s->stitches;
	d->stitch_count = s->stitch_count;
	d->explicit_stitches = s->explicit_stitches;
	d->stitch_k = s->stitch_k;
	d->sew_speed = s->sew_speed;
	d->rest_positions = s->rest_positions;
	d->mass_scale = s->mass_scale;
	d->rest_scale = s->rest_scale;
	d->stiffness_scale = s->stiffness_scale;
	d->vertex_thickness = s->vertex_thickness;
	d->vertex_friction = s->vertex_friction;
	d->has_seams = s->has_seams;
	d->seams = s->seams;
	d->params = s->params;
	d->material = s->material;
	memset(&s->cloth, 0, sizeof s->cloth);
	s->cloth_path = NULL;
	s->pins = NULL;
	s->pin_attach = NULL;
	s->pin_stiffness = NULL;
	s->pin_count = 0;
	s->stitches = NULL;
	s->stitch_count = s->explicit_stitches = 0;
	s->rest_positions = NULL;
	s->mass_scale = s->rest_scale = s->stiffness_scale = NULL;
	s->vertex_thickness = s->vertex_friction = NULL;
	s->has_seams = 0;
	memset(&s->seams, 0, sizeof s->seams);
}

/* Fails at cloths[i].key with a message. */
static drape_err part_fail(scn *c, size_t base, uint32_t i, const char *key, const char *msg)
{
	scn_pop(c, base);
	scn_push_index(c, i);
	scn_push_key(c, key);
	return scn_fail(c, DRAPE_EINVAL, "%s", msg);
}

/* The ratio of a material constant to the first cloth's, or -1 when it
 * cannot be one (the first's is 0 and this one's is not). */
static double ratio(float k, float k0)
{
	if (k0 > 0.0f)
		return (double)k / (double)k0;
	return k == 0.0f ? 1.0 : -1.0;
}

/* Checks that cloth i can share the session's parameters with cloth 0. */
static drape_err part_check(scn *c, size_t base, const part *P, uint32_t i)
{
	const drape_sim_params *a = &P[0].s.params, *b = &P[i].s.params;
	if (a->model != b->model)
		return part_fail(c, base, i, "material",
				 "every cloth needs a material, or none does (one session has one "
				 "model); cloths[0] differs");
	if (b->model == DRAPE_MODEL_PBD) {
		static const char *const keys[] = {"stretch", "shear", "bend"};
		const float va[3] = {a->stretch, a->shear, a->bend}, vb[3] = {b->stretch, b->shear, b->bend};
		for (int k = 0; k < 3; k++)
			if (va[k] != vb[k])
				return part_fail(c, base, i, keys[k],
						 "differs from cloths[0]'s: the pbd model's stiffness is one "
						 "number per session; give the cloths materials instead");
	} else {
		if (ratio(b->stretch_k, a->stretch_k) < 0.0 || ratio(b->shear_k, a->shear_k) < 0.0 ||
		    ratio(b->bend_k, a->bend_k) < 0.0)
			return part_fail(c, base, i, "material",
					 "has a shear or bending stiffness where cloths[0]'s is 0; list "
					 "the cloth with it first");
		if (a->damping_rate != b->damping_rate)
			return part_fail(c, base, i, "material",
					 "damping differs from cloths[0]'s: one session has one damping "
					 "rate");
		if (a->schedule != b->schedule)
			return part_fail(c, base, i, "schedule",
					 "differs from cloths[0]'s: one session has one schedule");
	}
	if (P[i].has_stitch_keys && P[0].has_stitch_keys &&
	    (P[i].s.stitch_k != P[0].s.stitch_k || P[i].s.sew_speed != P[0].s.sew_speed))
		return part_fail(c, base, i, "stitch_stiffness",
				 "stitch_stiffness and sew_speed are one per session; cloths[0] differs");
	return DRAPE_OK;
}

/* A per-vertex array of the joined mesh: `tuple` floats a vertex, each
 * cloth's own values when it has them, else `fill(part, k)`. */
typedef float (*fill_fn)(const part *p, const part *p0, int k);

static float fill_one(const part *p, const part *p0, int k)
{
	(void)p, (void)p0, (void)k;
	return 1.0f;
}

static float fill_minus_one(const part *p, const part *p0, int k)
{
	(void)p, (void)p0, (void)k;
	return -1.0f;
}

static float fill_thickness(const part *p, const part *p0, int k)
{
	(void)p0, (void)k;
	return p->s.params.thickness;
}

/* The stiffness ratios of p's material to p0's, per kind. */
static float fill_stiffness(const part *p, const part *p0, int k)
{
	const drape_sim_params *a = &p0->s.params, *b = &p->s.params;
	return (float)(k == 0 ? ratio(b->stretch_k, a->stretch_k)
			      : k == 1 ? ratio(b->shear_k, a->shear_k) : ratio(b->bend_k, a->bend_k));
}

static float fill_density(const part *p, const part *p0, int k)
{
	(void)k;
	return (float)((double)p->s.params.density / (double)p0->s.params.density);
}

/* Joins the per-vertex arrays at offset `field` of each part's scene
 * (NULL where absent). own_times: the part's own values are multiplied by
 * the fill instead of replacing it (the stiffness ratios, the density). */
static int join_vertex(const part *P, uint32_t n, size_t field, uint32_t tuple, fill_fn fill,
		       int own_times, uint32_t total, float **out)
{
	float *r = malloc((size_t)total * tuple * sizeof *r + 1);
	if (r == NULL)
		return 0;
	size_t at = 0;
	for (uint32_t i = 0; i < n; i++) {
		const float *own = *(float *const *)((const char *)&P[i].s + field);
		for (uint32_t v = 0; v < P[i].s.cloth.vertex_count; v++)
			for (uint32_t k = 0; k < tuple; k++, at++) {
				float f = fill(&P[i], &P[0], (int)k);
				r[at] = own == NULL ? f : own_times ? own[(size_t)v * tuple + k] * f
							   : own[(size_t)v * tuple + k];
			}
	}
	*out = r;
	return 1;
}

/* Whether any part has the array at `field`, or `differs` says the
 * fill is not the same for every part. */
static int any_own(const part *P, uint32_t n, size_t field)
{
	for (uint32_t i = 0; i < n; i++)
		if (*(float *const *)((const char *)&P[i].s + field) != NULL)
			return 1;
	return 0;
}

static int fills_differ(const part *P, uint32_t n, uint32_t tuple, fill_fn fill)
{
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t k = 0; k < tuple; k++)
			if (fill(&P[i], &P[0], (int)k) != fill(&P[0], &P[0], (int)k))
				return 1;
	return 0;
}

/* Joins the parts into c->s (which holds no cloth yet). */
static drape_err join(scn *c, part *P, uint32_t n, int self_given)
{
	drape_scene *s = &c->s;
	uint64_t nv = 0, nt = 0, np = 0, ns = 0;
	int uvs = 0, rest = 0, soft = 0;
	for (uint32_t i = 0; i < n; i++) {
		nv += P[i].s.cloth.vertex_count;
		nt += P[i].s.cloth.triangle_count;
		np += P[i].s.pin_count;
		ns += P[i].s.stitch_count;
		uvs |= P[i].s.cloth.uvs != NULL;
		rest |= P[i].s.rest_positions != NULL;
		soft |= P[i].s.pin_stiffness != NULL;
	}
	drape_obj_mesh *m = &s->cloth;
	m->positions = malloc(3 * nv * sizeof *m->positions + 1);
	m->triangles = malloc(3 * nt * sizeof *m->triangles + 1);
	m->uvs = uvs ? calloc(2 * nv + 1, sizeof *m->uvs) : NULL;
	s->rest_positions = rest ? malloc(3 * nv * sizeof *s->rest_positions + 1) : NULL;
	s->pins = malloc(np * sizeof *s->pins + 1);
	s->pin_attach = malloc(np * sizeof *s->pin_attach + 1);
	s->pin_stiffness = soft ? calloc(np + 1, sizeof *s->pin_stiffness) : NULL;
	s->stitches = malloc(ns * sizeof *s->stitches + 1);
	s->objects = calloc(n, sizeof *s->objects);
	s->object_ranges = calloc(n, sizeof *s->object_ranges);
	s->object_paths = calloc(n, sizeof *s->object_paths);
	s->object_tris = malloc(2 * (size_t)n * sizeof *s->object_tris);
	if (!m->positions || !m->triangles || (uvs && !m->uvs) || (rest && !s->rest_positions) ||
	    !s->pins || !s->pin_attach || (soft && !s->pin_stiffness) || !s->stitches || !s->objects || !s->object_ranges ||
	    !s->object_paths || !s->object_tris)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory joining the cloths");
	s->object_count = n;
	uint32_t v0 = 0, t0 = 0, p0 = 0, s0 = 0;
	for (uint32_t i = 0; i < n; i++) {
		const drape_scene *q = &P[i].s;
		const drape_obj_mesh *qm = &q->cloth;
		memcpy(m->positions + 3 * (size_t)v0, qm->positions, 3 * (size_t)qm->vertex_count * sizeof(float));
		for (size_t k = 0; k < 3 * (size_t)qm->triangle_count; k++)
			m->triangles[3 * (size_t)t0 + k] = qm->triangles[k] + v0;
		/* A cloth without uvs keeps the calloc's zeros: an edge whose
		 * ends share their uvs takes the warp stiffness, as a mesh
		 * without uvs does (sim_warp_fraction). */
		if (uvs && qm->uvs != NULL)
			memcpy(m->uvs + 2 * (size_t)v0, qm->uvs, 2 * (size_t)qm->vertex_count * sizeof(float));
		if (rest)
			memcpy(s->rest_positions + 3 * (size_t)v0,
			       q->rest_positions ? q->rest_positions : qm->positions,
			       3 * (size_t)qm->vertex_count * sizeof(float));
		for (uint32_t k = 0; k < q->pin_count; k++) {
			s->pins[p0 + k] = q->pins[k] + v0;
			s->pin_attach[p0 + k] = q->pin_attach[k];
			if (soft && q->pin_stiffness)
				s->pin_stiffness[p0 + k] = q->pin_stiffness[k];
		}
		for (uint32_t k = 0; k < q->stitch_count; k++) {
			drape_stitch st = q->stitches[k];
			st.a += v0, st.b0 += v0, st.b1 += v0;
			s->stitches[s0 + k] = st;
		}
		s->objects[i].name = P[i].name;
		P[i].name = NULL;
		s->objects[i].range = (drape_sim_object){v0, qm->vertex_count, P[i].layer, P[i].mask};
		s->object_ranges[i] = s->objects[i].range;
		s->object_paths[i] = q->cloth_path;
		P[i].s.cloth_path = NULL;
		s->object_tris[2 * i] = t0;
		s->object_tris[2 * i + 1] = qm->triangle_count;
		m->face_count += qm->face_count;
		m->uv_seam_vertices += qm->uv_seam_vertices;
		s->explicit_stitches += q->explicit_stitches;
		s->has_seams |= q->has_seams;
		s->seams.boundary_vertices += q->seams.boundary_vertices;
		s->seams.panels += q->seams.panels;
		s->seams.welds += q->seams.welds;
		s->seams.edge_stitches += q->seams.edge_stitches;
		s->seams.seams += q->seams.seams;
		v0 += qm->vertex_count;
		t0 += qm->triangle_count;
		p0 += q->pin_count;
		s0 += q->stitch_count;
	}
	m->vertex_count = v0;
	m->triangle_count = t0;
	s->pin_count = p0;
	s->stitch_count = s0;
	s->params = P[0].s.params;
	s->material = P[0].s.material;
	s->stitch_k = P[0].s.stitch_k;
	s->sew_speed = P[0].s.sew_speed;
	for (uint32_t i = 0; i < n; i++)
		if (P[i].has_stitch_keys) {
			s->stitch_k = P[i].s.stitch_k;
			s->sew_speed = P[i].s.sew_speed;
		}
	const uint32_t V = v0;
	int ok = 1;
	if (any_own(P, n, offsetof(drape_scene, rest_scale)))
		ok &= join_vertex(P, n, offsetof(drape_scene, rest_scale), 1, fill_one, 0, V, &s->rest_scale);
	if (any_own(P, n, offsetof(drape_scene, mass_scale)) || fills_differ(P, n, 1, fill_density))
		ok &= join_vertex(P, n, offsetof(drape_scene, mass_scale), 1, fill_density, 1, V,
				  &s->mass_scale);
	if (s->params.model == DRAPE_MODEL_XPBD &&
	    (any_own(P, n, offsetof(drape_scene, stiffness_scale)) || fills_differ(P, n, 3, fill_stiffness)))
		ok &= join_vertex(P, n, offsetof(drape_scene, stiffness_scale), 3, fill_stiffness, 1, V,
				  &s->stiffness_scale);
	if (any_own(P, n, offsetof(drape_scene, vertex_thickness)) || fills_differ(P, n, 1, fill_thickness))
		ok &= join_vertex(P, n, offsetof(drape_scene, vertex_thickness), 1, fill_thickness, 0, V,
				  &s->vertex_thickness);
	if (any_own(P, n, offsetof(drape_scene, vertex_friction)))
		ok &= join_vertex(P, n, offsetof(drape_scene, vertex_friction), 1, fill_minus_one, 0, V,
				  &s->vertex_friction);
	if (!ok)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory joining the cloths");
	/* Cloth against cloth is the self-collision: on unless the scene
	 * says otherwise. */
	if (!self_given && n > 1)
		s->params.self_collision = 1;
	if (n == 1) {
		s->cloth_path = s->object_paths[0] ? strdup(s->object_paths[0]) : NULL;
		if (s->object_paths[0] && s->cloth_path == NULL)
			return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	}
	return DRAPE_OK;
}

drape_err scn_cloths(scn *c, const cJSON *a, const cJSON *root)
{
	if (!cJSON_IsArray(a))
		return scn_fail(c, DRAPE_EINVAL, "must be an array of cloths (objects like \"cloth\")");
	const int n = cJSON_GetArraySize(a);
	if (n == 0)
		return scn_fail(c, DRAPE_EINVAL, "is empty: list at least one cloth");
	if ((uint32_t)n > DRAPE_SIM_MAX_OBJECTS)
		return scn_fail(c, DRAPE_ELIMIT, "%d cloths; at most %u", n, DRAPE_SIM_MAX_OBJECTS);
	part *P = calloc((size_t)n, sizeof *P);
	if (P == NULL)
		return scn_fail(c, DRAPE_ENOMEM, "out of memory");
	const drape_sim_params base = c->s.params;
	const size_t top = c->plen;
	drape_err e = DRAPE_OK;
	uint32_t i = 0;
	for (const cJSON *it = a->child; it != NULL && e == DRAPE_OK; it = it->next, i++) {
		size_t old = scn_push_index(c, i);
		/* Each cloth starts from the scene's parameters and its own
		 * pins. */
		c->s.params = base;
		c->s.material = NULL;
		c->s.stitch_k = 0.0f;
		c->s.sew_speed = 0.5f;
		free(c->pin_mark);
		free(c->pin_k);
		c->pin_mark = NULL;
		c->pin_k = NULL;
		c->in_cloths = 1;
		e = scn_cloth(c, it);
		c->in_cloths = 0;
		P[i].layer = 1u;
		P[i].mask = 0xffffffffu;
		P[i].has_stitch_keys = cJSON_IsObject(it) && (scn_get(it, "stitch_stiffness") != NULL ||
							      scn_get(it, "sew_speed") != NULL);
		if (e == DRAPE_OK) {
			take_cloth(c, &P[i]);
			const cJSON *nm = scn_get(it, "name");
			if (nm != NULL) {
				size_t o2 = scn_push_key(c, "name");
				e = scn_object_name(c, nm, &P[i].name);
				scn_pop(c, o2);
			} else {
				char def[32];
				snprintf(def, sizeof def, "cloth%u", (unsigned)i);
				if ((P[i].name = strdup(def)) == NULL)
					e = scn_fail(c, DRAPE_ENOMEM, "out of memory");
			}
			for (uint32_t j = 0; e == DRAPE_OK && j < i; j++)
				if (strcmp(P[j].name, P[i].name) == 0) {
					scn_push_key(c, "name");
					e = scn_fail(c, DRAPE_EINVAL, "\"%s\" is also cloths[%u]'s name",
						     P[i].name, (unsigned)j);
				}
			if (e == DRAPE_OK && scn_get(it, "layer") != NULL) {
				size_t o2 = scn_push_key(c, "layer");
				e = scn_layer(c, scn_get(it, "layer"), &P[i].layer);
				scn_pop(c, o2);
			}
			if (e == DRAPE_OK && scn_get(it, "collides_with") != NULL) {
				size_t o2 = scn_push_key(c, "collides_with");
				e = scn_layers(c, scn_get(it, "collides_with"), &P[i].mask);
				scn_pop(c, o2);
			}
		}
		if (e == DRAPE_OK)
			scn_pop(c, old);
	}
	for (uint32_t k = 1; e == DRAPE_OK && k < (uint32_t)n; k++)
		e = part_check(c, top, P, k);
	if (e == DRAPE_OK)
		e = join(c, P, (uint32_t)n, scn_get(root, "self_collision") != NULL);
	for (uint32_t k = 0; k < (uint32_t)n; k++)
		part_free(&P[k]);
	free(P);
	return e;
}
