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
