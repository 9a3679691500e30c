/*
 * libFuzzer target for the scene loader (client/scene.c).
 *
 * The input is scene JSON loaded with tests/data/scenes as its base folder,
 * so mesh paths such as "../obj/sheet.obj" resolve to real files and the
 * OBJ reader runs behind the loader. Limits are tight so that a grid or a
 * mesh the fuzzer asks for stays small. The environment variable
 * DRAPE_FUZZ_SCENE_DIR overrides the base folder (the default is relative
 * to the repository root, where make runs). A loaded scene must keep the
 * promises of client/scene.h: validated parameters, sorted unique pins in
 * range, attachments naming existing colliders, sizes within the limits.
 */
#include "client/scene.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *base_dir(void)
{
	const char *d = getenv("DRAPE_FUZZ_SCENE_DIR");
	return d != NULL && d[0] != '\0' ? d : "tests/data/scenes";
}

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_scene: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static void check_scene(const drape_scene *s, const drape_obj_limits *l)
{
	drape_error err;
	if (drape_sim_params_validate(&s->params, &err) != DRAPE_OK)
		fail("loaded parameters do not validate", err.message);
	if (s->frames == 0 || s->frames > DRAPE_SCENE_MAX_FRAMES)
		fail("frames out of range", NULL);
	const drape_obj_mesh *c = &s->cloth;
	if (c->vertex_count == 0 || c->vertex_count > l->max_vertices || c->triangle_count > l->max_triangles)
		fail("cloth size outside the limits", NULL);
	for (uint64_t i = 0; i < (uint64_t)c->triangle_count * 3; i++)
		if (c->triangles[i] >= c->vertex_count)
			fail("cloth triangle index out of range", NULL);
	for (uint32_t i = 0; i < s->pin_count; i++) {
		if (s->pins[i] >= c->vertex_count)
			fail("pin out of range", NULL);
		if (i > 0 && s->pins[i] <= s->pins[i - 1])
			fail("pins not sorted and unique", NULL);
		if (s->pin_attach[i] != DRAPE_SCENE_NO_ATTACH &&
		    (s->pin_attach[i] < 0 || (uint32_t)s->pin_attach[i] >= s->collider_count))
			fail("pin attached to a missing collider", NULL);
	}
	if (s->collider_count > DRAPE_SCENE_MAX_COLLIDERS)
		fail("too many colliders accepted", NULL);
	for (uint32_t i = 0; i < s->collider_count; i++) {
		const drape_collider_desc *d = &s->colliders[i];
		if (d->shape < DRAPE_SHAPE_PLANE || d->shape > DRAPE_SHAPE_MESH)
			fail("collider with an unknown shape", NULL);
		if (d->shape == DRAPE_SHAPE_MESH) {
			for (uint64_t k = 0; k < (uint64_t)d->triangle_count * 3; k++)
				if (d->triangles[k] >= d->vertex_count)
					fail("collider triangle index out of range", NULL);
		}
		if (d->keyframe_count > 0 && d->keyframes == NULL)
			fail("collider keyframes NULL with a count", NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	drape_obj_limits lim;
	drape_obj_limits_default(&lim);
	lim.max_vertices = 20000;
	lim.max_triangles = 40000;
	lim.max_groups = 64;
	lim.max_face_vertices = 512;
	lim.max_bytes = 512u << 10;

	drape_scene s;
	drape_error err;
	if (drape_scene_read_string((const char *)data, size, base_dir(), "fuzz.json", &lim, &s, &err) != DRAPE_OK) {
		if (err.message[0] == '\0')
			fail("refused without a message", NULL);
		return 0;
	}
	check_scene(&s, &lim);
	drape_scene_free(&s);
	if (s.cloth.positions != NULL || s.pins != NULL || s.colliders != NULL)
		fail("drape_scene_free does not zero", NULL);
	return 0;
}
