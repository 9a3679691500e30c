/*
 * The "body shows through" measure (issue 19): how many vertices of a body
 * mesh stand on the outer side of the cloth where the cloth covers them.
 * Used by the tests, the benchmark and the closing figures; nothing in the
 * step calls it.
 *
 * For each body vertex b, with its outward normal nb (the area-weighted
 * mean of its triangles' normals; outward is decided by the sign of the
 * body's enclosed volume, so an inward-wound mesh is measured the same):
 *
 *   - its nearest cloth triangle T is the one whose closest point is
 *     nearest b, among those within `cover` of b (ties to the lower index);
 *   - the cloth covers b when that closest point lies inside T (b projects
 *     into the triangle, not onto an edge or corner: past the cloth's
 *     border nothing covers the body) and T faces the body, |nT . nb| >=
 *     1/2 (within 60 degrees; a fold seen edge-on has no outer side);
 *   - T's outer side is the side nb points to: nT is oriented so that
 *     nT . nb > 0, and b's height over T is s = nT . (b - T's plane);
 *   - b shows through when the cloth covers it and s > tol.
 *
 * Between vertices the two surfaces can still cross: a thin ridge of the
 * body (a shin, a finger, a knife edge) whose vertices both lie beyond the
 * cloth's span cuts a cloth face with no vertex of either inside the
 * other's triangles. Where two triangle meshes intersect, every piece of
 * the intersection curve starts and ends where an edge of one crosses a
 * face of the other, so two more counts see every such crossing:
 *
 *   - edges_through: body edges (each once) that cross the interior of a
 *     cloth triangle, with the edge's end on the triangle's outer side
 *     (the side the edge's outward normal, the mean of its faces' unit
 *     normals, points to; the farther end when the triangle is seen within
 *     6 degrees of edge-on) more than tol beyond its plane;
 *   - cloth_edges_in: cloth edges (each once) that cross the interior of a
 *     body triangle, by any amount: the cloth keeps its thickness off the
 *     body, so a crossing at all is the body through the cloth, and the
 *     distance of the edge's inner end behind the face's plane says
 *     nothing of how far (under a knife edge it is the blade's width). A
 *     ridge that went through the cloth shows here: the cloth's edges pass
 *     under its apex, in through one side and out through the other. So
 *     does a cloth vertex inside the body.
 */
#ifndef DRAPE_SIM_BODYTHROUGH_H
#define DRAPE_SIM_BODYTHROUGH_H

#include <stdint.h>

#include "drape/error.h"

typedef struct sim_body_through {
	uint32_t covered;  /* body vertices the cloth covers */
	uint32_t through;  /* of those, more than tol on the cloth's outer side */
	float deepest;     /* the largest height s over the cloth of a covered vertex, or 0 */
	uint32_t deepest_vertex; /* its body vertex (UINT32_MAX when no covered vertex is outside) */
	uint32_t deepest_tri;    /* the cloth triangle it is over (UINT32_MAX with it) */
	uint32_t edges_through;  /* body edges through a cloth triangle by more than tol */
	uint32_t cloth_edges_in; /* cloth edges through a body triangle */
} sim_body_through;

/*
 * Measures body (nbv vertices xyz, nbt triangles) against cloth (ncv
 * vertices xyz, nct triangles), both in the same world frame. tol and
 * cover in metres (issue 19's test: tol 1 mm; cover a few cloth
 * spacings). Allocates its own scratch; DRAPE_ENOMEM (or DRAPE_ERANGE for
 * an index out of range, naming the array) leaves *out untouched.
 */
drape_err sim_body_through_measure(const float *body, uint32_t nbv, const uint32_t *btris,
				   uint32_t nbt, const float *cloth, uint32_t ncv,
				   const uint32_t *ctris, uint32_t nct, float tol, float cover,
				   sim_body_through *out, drape_error *err);

#endif
