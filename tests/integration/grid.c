/* The test cloth; see grid.h. */
#include "tests/integration/grid.h"

#include <stdlib.h>
#include <string.h>

void itest_grid_make(itest_grid *g, uint32_t n)
{
	g->nv = (n + 1) * (n + 1);
	g->nt = 2 * n * n;
	g->pos = malloc(g->nv * 12u);
	g->tri = malloc(g->nt * 12u);
	for (uint32_t j = 0; j <= n; j++)
		for (uint32_t i = 0; i <= n; i++) {
			float *p = g->pos + 3 * (j * (n + 1) + i);
			p[0] = (float)i / (float)n;
			p[1] = 1.0f;
			p[2] = (float)j / (float)n;
		}
	uint32_t k = 0;
	for (uint32_t j = 0; j < n; j++)
		for (uint32_t i = 0; i < n; i++) {
			uint32_t a = j * (n + 1) + i, b = a + 1, c = a + n + 1, d = c + 1;
			uint32_t t[6] = {a, c, b, b, c, d};
			memcpy(g->tri + k, t, sizeof t);
			k += 6;
		}
	g->pins[0] = 0;
	g->pins[1] = n;
}

void itest_grid_free(itest_grid *g)
{
	free(g->pos);
	free(g->tri);
}

bool itest_sheet_make(itest_sheet *s, uint32_t nx, uint32_t ny)
{
	s->nx = nx;
	s->ny = ny;
	s->nv = nx * ny;
	s->nt = 2 * (nx - 1) * (ny - 1);
	s->pos = malloc(s->nv * 12u);
	s->tri = malloc(s->nt * 12u);
	s->pins = malloc(nx * 4u);
	if (s->pos == NULL || s->tri == NULL || s->pins == NULL) {
		itest_sheet_free(s);
		return false;
	}
	for (uint32_t j = 0; j < ny; j++)
		for (uint32_t i = 0; i < nx; i++) {
			float *p = &s->pos[3 * (j * nx + i)];
			p[0] = (float)i / (float)(nx - 1) - 0.5f;
			p[1] = 1.0f + (float)j / (float)(ny - 1);
			p[2] = 0.0f;
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < ny; j++)
		for (uint32_t i = 0; i + 1 < nx; i++) {
			uint32_t a = j * nx + i, b = a + 1, c = a + nx, d = c + 1;
			uint32_t q[6] = {a, b, d, a, d, c};
			memcpy(&s->tri[3 * t], q, sizeof q);
			t += 2;
		}
	for (uint32_t i = 0; i < nx; i++)
		s->pins[i] = (ny - 1) * nx + i;
	return true;
}

void itest_sheet_desc(const itest_sheet *s, drape_session_desc *d)
{
	drape_session_desc_default(d);
	d->positions = s->pos;
	d->vertex_count = s->nv;
	d->triangles = s->tri;
	d->triangle_count = s->nt;
	d->pins = s->pins;
	d->pin_count = s->nx;
}

void itest_sheet_free(itest_sheet *s)
{
	free(s->pos);
	free(s->tri);
	free(s->pins);
	s->pos = NULL;
	s->tri = NULL;
	s->pins = NULL;
}
