/*
 * libFuzzer target for the OBJ reader (client/obj.c).
 *
 * The input is OBJ text read with small limits, so the fuzzer spends its
 * time in the parser rather than in large allocations. A mesh that reads is
 * formatted with drape_obj_format and read again: the counts must match and
 * the positions must come back bit for bit (the writer promises 9
 * significant digits, enough for every float32), the triangles unchanged.
 * Any violation calls abort().
 */
#include "client/obj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_obj: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static void limits_small(drape_obj_limits *l)
{
	drape_obj_limits_default(l);
	l->max_vertices = 4096;
	l->max_triangles = 8192;
	l->max_groups = 64;
	l->max_face_vertices = 512;
	l->max_bytes = 1u << 20;
}

/* Every index in range, every position finite: what the reader promises. */
static void check_mesh(const drape_obj_mesh *m, const drape_obj_limits *l)
{
	if (m->vertex_count > l->max_vertices || m->triangle_count > l->max_triangles ||
	    m->group_count > l->max_groups)
		fail("a mesh over its limits was accepted", NULL);
	if ((m->vertex_count > 0 && m->positions == NULL) || (m->triangle_count > 0 && m->triangles == NULL))
		fail("NULL array with a non-zero count", NULL);
	for (uint64_t i = 0; i < (uint64_t)m->triangle_count * 3; i++)
		if (m->triangles[i] >= m->vertex_count)
			fail("triangle index out of range", NULL);
	for (uint32_t g = 0; g < m->group_count; g++) {
		const drape_obj_group *gr = &m->groups[g];
		if (gr->name == NULL)
			fail("group without a name", NULL);
		for (uint32_t i = 0; i < gr->count; i++) {
			if (gr->vertices[i] >= m->vertex_count)
				fail("group vertex out of range", gr->name);
			if (i > 0 && gr->vertices[i] <= gr->vertices[i - 1])
				fail("group vertices not sorted and unique", gr->name);
		}
		if (drape_obj_find_group(m, gr->name) == NULL)
			fail("drape_obj_find_group misses a group", gr->name);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	drape_obj_limits lim;
	limits_small(&lim);
	drape_obj_mesh m;
	drape_error err;
	if (drape_obj_read_buffer((const char *)data, size, "fuzz.obj", &lim, &m, &err) != DRAPE_OK) {
		if (err.message[0] == '\0')
			fail("refused without a message", NULL);
		return 0;
	}
	check_mesh(&m, &lim);

	char *text = NULL;
	size_t len = 0;
	drape_err fe = drape_obj_format(m.positions, m.vertex_count, m.triangles, m.triangle_count, &text, &len, &err);
	if (fe != DRAPE_OK) {
		/* Formatting refuses only what the reader never accepts. */
		fail("an accepted mesh does not format", err.message);
	}
	drape_obj_limits lim2;
	drape_obj_limits_default(&lim2);
	drape_obj_mesh m2;
	if (drape_obj_read_buffer(text, len, "formatted.obj", &lim2, &m2, &err) != DRAPE_OK)
		fail("formatted text does not read back", err.message);
	if (m2.vertex_count != m.vertex_count || m2.triangle_count != m.triangle_count)
		fail("counts differ after format and read", NULL);
	if (m.vertex_count > 0 &&
	    memcmp(m.positions, m2.positions, (size_t)m.vertex_count * 3 * sizeof(float)) != 0)
		fail("positions not bit-identical after format and read", NULL);
	if (m.triangle_count > 0 &&
	    memcmp(m.triangles, m2.triangles, (size_t)m.triangle_count * 3 * sizeof(uint32_t)) != 0)
		fail("triangles differ after format and read", NULL);
	free(text);
	drape_obj_free(&m2);
	drape_obj_free(&m);
	if (m.positions != NULL || m.vertex_count != 0)
		fail("drape_obj_free does not zero", NULL);
	return 0;
}
