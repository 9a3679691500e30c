/*
 * Exact signed distance (negative inside) and its unit gradient for the
 * analytic collider shapes, evaluated in the collider's own space. They cost
 * no voxelisation and are the reference the OpenVDB fields are tested against.
 *
 * Every function writes a unit gradient even where the distance is not
 * differentiable (a sphere's centre, a box's medial planes, a capsule's axis),
 * so a point found there can always be pushed out in some definite direction.
 */
#ifndef DRAPE_SIM_SHAPES_H
#define DRAPE_SIM_SHAPES_H

#include "server/sim/vec.h"

/* Half-space below the plane through `point` with unit `normal`. */
float sim_shape_plane(sim_v3 q, sim_v3 point, sim_v3 normal, sim_v3 *grad);
float sim_shape_sphere(sim_v3 q, sim_v3 center, float radius, sim_v3 *grad);
/* Axis-aligned box; exact inside as well as outside. */
float sim_shape_box(sim_v3 q, sim_v3 center, sim_v3 half_extents, sim_v3 *grad);
/* Points within `radius` of the segment ab (a == b gives a sphere). */
float sim_shape_capsule(sim_v3 q, sim_v3 a, sim_v3 b, float radius, sim_v3 *grad);

#endif
