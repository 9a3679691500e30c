/*
 * Topology of the cloth mesh: unique edges, bend and shear records, and the
 * greedy colouring of constraint records (see internal.h for the layout).
 */
#ifndef DRAPE_SIM_TOPOLOGY_H
#define DRAPE_SIM_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "server/sim/internal.h"

/*
 * Builds the constraint arrays of sim from sim->x (rest positions) and
 * sim->tris: unique edges by sorting (min, max) keys, bend and shear records
 * for edges with exactly two triangles, colouring, rest areas and counts in
 * sim->topo. Inputs must already be validated. Returns DRAPE_ENOMEM on
 * allocation failure (the caller frees sim).
 */
drape_err sim_topology_build(drape_sim *sim, drape_error *err);

/*
 * Greedy colouring of `count` records of `size` bytes whose first `arity`
 * fields are uint32 vertex indices < vertex_count: each record gets the
 * smallest colour none of its vertices has yet, in array order; then the
 * records are stably reordered by colour. Fills col (allocating col->start).
 * mask is scratch of vertex_count entries.
 */
drape_err sim_colour_records(void *records, size_t size, uint32_t count, uint32_t arity,
			     uint64_t *mask, uint32_t vertex_count, sim_colouring *col);

/*
 * Builds sim->lra from the stretch edges and the pinned vertices (w == 0 in
 * sim->x): a multi-source Dijkstra over the edge graph gives every free
 * vertex its nearest pin and the rest distance along the mesh. Vertices that
 * no pin reaches get no record.
 */
drape_err sim_lra_build(drape_sim *sim, drape_error *err);

#endif
