/*
 * Fixtures shared by the solver unit tests: a deterministic random
 * generator, rectangular grid meshes and the kinetic energy of a sim.
 */
#ifndef DRAPE_TEST_SIM_FIXTURES_H
#define DRAPE_TEST_SIM_FIXTURES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "drape/sim.h"
#include "server/sim/internal.h"

/* A deterministic generator so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static inline double rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct grid {
	float *pos;
	uint32_t *tri;
	uint32_t nv, nt;
	uint32_t nx, ny;
} grid;

/* nx * ny vertices at o + i/(nx-1) u + j/(ny-1) v, vertex (i, j) at index
 * j * nx + i; the diagonal alternates so the mesh has no preferred shear. */
static inline int grid_make(grid *g, uint32_t nx, uint32_t ny, const float o[3], const float u[3],
		     const float v[3])
{
	g->nx = nx;
	g->ny = ny;
	g->nv = nx * ny;
	g->nt = 2 * (nx - 1) * (ny - 1);
	g->pos = malloc((size_t)g->nv * 3 * sizeof *g->pos);
	g->tri = malloc((size_t)g->nt * 3 * sizeof *g->tri);
	if (g->pos == NULL || g->tri == NULL)
		return 0;
	for (uint32_t j = 0; j < ny; j++)
		for (uint32_t i = 0; i < nx; i++) {
			float a = (float)i / (float)(nx - 1), b = (float)j / (float)(ny - 1);
			for (int k = 0; k < 3; k++)
				g->pos[3 * (j * nx + i) + k] = o[k] + a * u[k] + b * v[k];
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < ny; j++)
		for (uint32_t i = 0; i + 1 < nx; i++) {
			uint32_t a = j * nx + i, b = a + 1, c = a + nx, d = c + 1;
			uint32_t *q = &g->tri[6 * t++];
			if ((i + j) % 2) {
				q[0] = a, q[1] = b, q[2] = d, q[3] = a, q[4] = d, q[5] = c;
			} else {
				q[0] = a, q[1] = b, q[2] = c, q[3] = b, q[4] = d, q[5] = c;
			}
		}
	return 1;
}

static inline void grid_free(grid *g)
{
	free(g->pos);
	free(g->tri);
}

static inline void desc_from_grid(drape_sim_desc *d, const grid *g)
{
	drape_sim_desc_default(d);
	d->positions = g->pos;
	d->vertex_count = g->nv;
	d->triangles = g->tri;
	d->triangle_count = g->nt;
}

/* Kinetic energy from the solver's own masses (w lane of x). */
static inline double kinetic_energy(const drape_sim *sim)
{
	double e = 0.0;
	for (uint32_t i = 0; i < sim->n; i++) {
		if (sim->x[i].w == 0.0f)
			continue;
		const sim_vec4 *v = &sim->v[i];
		e += 0.5 / sim->x[i].w * ((double)v->x * v->x + (double)v->y * v->y + (double)v->z * v->z);
	}
	return e;
}

/* The height of the cloth over the horizontal point (px, pz): the first
 * triangle (in the xz projection) holding it, interpolated; 0 when none
 * holds it (the cloth does not cover the point). */
static inline int cloth_height(const float *x, const uint32_t *tri, uint32_t nt, double px, double pz,
			double *y)
{
	for (uint32_t t = 0; t < nt; t++) {
		const float *a = &x[3 * tri[3 * t]], *b = &x[3 * tri[3 * t + 1]], *c = &x[3 * tri[3 * t + 2]];
		double d = ((double)b[2] - c[2]) * ((double)a[0] - c[0]) +
			   ((double)c[0] - b[0]) * ((double)a[2] - c[2]);
		if (fabs(d) < 1e-12)
			continue;
		double l0 = (((double)b[2] - c[2]) * (px - c[0]) + ((double)c[0] - b[0]) * (pz - c[2])) / d;
		double l1 = (((double)c[2] - a[2]) * (px - c[0]) + ((double)a[0] - c[0]) * (pz - c[2])) / d;
		double l2 = 1.0 - l0 - l1;
		if (l0 >= 0 && l1 >= 0 && l2 >= 0) {
			*y = l0 * a[1] + l1 * b[1] + l2 * c[1];
			return 1;
		}
	}
	return 0;
}

#endif
