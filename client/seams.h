/*
 * Automatic seams: finds where the open edges of a garment's panels meet
 * and returns the stitches that join them (scene key "seams").
 */
#ifndef DRAPE_CLIENT_SEAMS_H
#define DRAPE_CLIENT_SEAMS_H

#include <stdint.h>

#include "drape/error.h"
#include "drape/sim.h"

typedef struct drape_seams_report {
	uint32_t boundary_vertices; /* vertices on an open edge */
	uint32_t panels;            /* connected pieces of the mesh */
	uint32_t welds;             /* coincident vertex pairs (vertex-vertex stitches) */
	uint32_t edge_stitches;     /* vertices stitched to a point of an edge */
	uint32_t seams;             /* runs of joined open edges, one per side of a seam */
} drape_seams_report;

/*
 * For every vertex on an open (boundary) edge, the nearest point within
 * `distance` metres on another open edge that is across a seam: of another
 * panel, or of the same panel but farther than three times `distance` from
 * the vertex along the cloth's edges, and not within two edges of it (a
 * cut that closes on itself, as a sleeve's tube or a dart). A vertex within
 * `weld` metres of the found edge's nearer end is welded to that vertex (a
 * vertex-vertex stitch, kept once per pair); otherwise the vertex is stitched to the
 * point on the edge, so seams whose sides have different resolutions close
 * without remeshing. *out (malloc'd, caller frees; NULL when none) and
 * *count receive the stitches; report may be NULL.
 */
drape_err drape_seams_find(const float *positions, uint32_t vertex_count, const uint32_t *triangles,
			   uint32_t triangle_count, float distance, float weld, drape_stitch **out,
			   uint32_t *count, drape_seams_report *report, drape_error *err);

#endif
