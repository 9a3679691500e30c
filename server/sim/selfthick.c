/*
 * Thickness per vertex in the self-collision and between cloth objects: a
 * 6 mm jacket over a 1 mm shirt, a quilted panel in a thin garment.
 *
 * The values are the cloth's per-vertex collision thickness
 * (drape_sim_desc.vertex_thickness, in internal order). What is kept here
 * is what the projection reads per pair: each vertex's own value, the mean
 * of each triangle's three corners and the mean of each edge's two ends
 * (why the mean and not the largest: selfproject.c). The largest value is
 * what the step passes as "the thickness": the reach of the candidate
 * search, the hash cells, the kept list's drift budget and the guard's
 * stray test are all sized from it, and every pair's distance is at most
 * that, so their completeness arguments (selfcollide_impl.h,
 * SELF_REACH_FACTOR; selfreuse.c) hold for every pair unchanged.
 *
 * Every vertex at one value is not stored at all: the step then passes
 * that value and the projection reads it as before, to the bit.
 */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <stdlib.h>

drape_err sim_self_set_thickness(sim_self *s, const float *h, drape_error *err)
{
	if (h == NULL || s->nv == 0) {
		free(s->vh);
		free(s->th);
		free(s->eh);
		s->vh = s->th = s->eh = NULL;
		s->vh_given = 0;
		s->vh_max = 0.0f;
		s->vh_on = 0;
		return DRAPE_OK;
	}
	float hi = h[0];
	int uniform = 1;
	for (uint32_t v = 1; v < s->nv; v++) {
		uniform &= h[v] == h[0];
		hi = h[v] > hi ? h[v] : hi;
	}
	float *vh = NULL, *th = NULL, *eh = NULL;
	if (!uniform) {
		vh = malloc((size_t)s->nv * sizeof *vh);
		th = malloc(((size_t)s->nt + 1) * sizeof *th);
		eh = malloc(((size_t)s->ne + 1) * sizeof *eh);
		if (vh == NULL || th == NULL || eh == NULL) {
			free(vh);
			free(th);
			free(eh);
			return drape_error_setf(err, DRAPE_ENOMEM,
						"self-collision: out of memory for the thickness per vertex");
		}
		for (uint32_t v = 0; v < s->nv; v++)
			vh[v] = h[v];
		/* In double, rounded once: the mean of three equal values is that
		 * value, and the order of the corners does not matter. */
		for (uint32_t t = 0; t < s->nt; t++) {
			const uint32_t *tv = &s->tris[3 * (size_t)t];
			th[t] = (float)(((double)h[tv[0]] + (double)h[tv[1]] + (double)h[tv[2]]) / 3.0);
		}
		for (uint32_t e = 0; e < s->ne; e++)
			eh[e] = (float)(0.5 * ((double)h[s->edges[2 * (size_t)e]] +
					       (double)h[s->edges[2 * (size_t)e + 1]]));
	}
	free(s->vh);
	free(s->th);
	free(s->eh);
	s->vh = vh, s->th = th, s->eh = eh;
	s->vh_given = 1;
	s->vh_max = hi;
	s->vh_on = vh != NULL;
	return DRAPE_OK;
}

int sim_self_vertex_thickness(const sim_self *s, float *max)
{
	*max = s->vh_max;
	return s->vh_given;
}

void sim_self_use_vertex_thickness(sim_self *s, int on)
{
	s->vh_on = on && s->vh != NULL;
}
