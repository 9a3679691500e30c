/*
 * The solver's vertex order: a Morton (Z-order) curve over the rest
 * positions, so that vertices near each other in space sit near each other in
 * memory. The constraint records are built after renumbering, sorted by
 * vertex index within each colour (topology.c), so a colour sweep walks the
 * position array forwards and its gathers mostly hit lines already in cache.
 */
#ifndef DRAPE_SIM_ORDER_H
#define DRAPE_SIM_ORDER_H

#include <stdint.h>

#include "drape/error.h"

/*
 * Fills order (internal index -> caller's index) and rank (caller's index ->
 * internal index), n entries each, from n xyz rest positions (finite, already
 * validated). Ties (equal cells) keep the caller's order, so the result is
 * deterministic. Returns DRAPE_ENOMEM if its scratch cannot be allocated.
 */
drape_err sim_order_build(const float *xyz, uint32_t n, uint32_t *order, uint32_t *rank);

#endif
