/*
 * `drape check`: the cloth's pieces (connected by triangles, stitches and
 * welds) and those with no pinned vertex. Hair cards, a production mesh of
 * helper shells or panels not yet sewn arrive as many pieces; a user who
 * pins some ("the cards near the scalp") expects the rest to hang from
 * them, and a piece with no pin falls away instead (MakeHuman's bob hair
 * pinned by a box at the crown: 6 of its 22 cards fell to the floor).
 */
#include "client/cli/cli.h"

#include <stdlib.h>

#include "client/unionfind.h"

drape_err cli_check_pieces(const drape_scene *sc, uint32_t *pieces, uint32_t *unpinned, drape_error *err)
{
	const drape_obj_mesh *m = &sc->cloth;
	const uint32_t n = m->vertex_count;
	uint32_t *p = malloc((size_t)n * sizeof *p + 1);
	uint8_t *used = calloc((size_t)n + 1, 1);
	uint8_t *held = calloc((size_t)n + 1, 1);
	if (p == NULL || used == NULL || held == NULL) {
		free(p);
		free(used);
		free(held);
		return drape_error_setf(err, DRAPE_ENOMEM, "check: out of memory for %u vertices", (unsigned)n);
	}
	for (uint32_t i = 0; i < n; i++)
		p[i] = i;
	for (uint32_t t = 0; t < m->triangle_count; t++) {
		const uint32_t *tv = &m->triangles[3 * (size_t)t];
		used[tv[0]] = used[tv[1]] = used[tv[2]] = 1;
		uf_union(p, tv[0], tv[1]);
		uf_union(p, tv[0], tv[2]);
	}
	for (uint32_t i = 0; i < sc->stitch_count; i++) {
		uf_union(p, sc->stitches[i].a, sc->stitches[i].b0);
		uf_union(p, sc->stitches[i].a, sc->stitches[i].b1);
	}
	for (uint32_t i = 0; i < sc->pin_count; i++)
		held[uf_find(p, sc->pins[i])] = 1;
	uint32_t count = 0, free_pieces = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!used[i] || uf_find(p, i) != i)
			continue;
		count++;
		free_pieces += !held[i];
	}
	free(p);
	free(used);
	free(held);
	*pieces = count;
	*unpinned = free_pieces;
	return DRAPE_OK;
}
