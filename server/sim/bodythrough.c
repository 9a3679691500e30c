/*
 * The "body shows through" measure (bodythrough.h has the definitions).
 * The cloth's triangles go into a bounding volume hierarchy (bvh.h) built
 * for the one pose measured; each body vertex queries the box of half-width
 * `cover` around it and keeps the nearest triangle.
 */
#include "server/sim/bodythrough.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bvh.h"
#include "server/sim/deform.h"
#include "server/sim/vec.h"

static inline sim_v3 at3(const float *pos, uint32_t v)
{
	return v3(pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]);
}

typedef struct nearest_ctx {
	const float *cloth;
	const uint32_t *tris;
	sim_v3 q;
	float best;     /* squared distance of the best so far */
	uint32_t tri;   /* UINT32_MAX: none */
	float bary[3];
} nearest_ctx;

static void nearest_visit(void *vctx, uint32_t t)
{
	nearest_ctx *c = vctx;
	const uint32_t *v = &c->tris[3 * (size_t)t];
	float b[3];
	float d2 = sim_closest_on_triangle(c->q, at3(c->cloth, v[0]), at3(c->cloth, v[1]),
					   at3(c->cloth, v[2]), b);
	if (d2 < c->best || (d2 == c->best && t < c->tri)) {
		c->best = d2;
		c->tri = t;
		memcpy(c->bary, b, sizeof b);
	}
}

drape_err sim_body_through_measure(const float *body, uint32_t nbv, const uint32_t *btris,
				   uint32_t nbt, const float *cloth, uint32_t ncv,
				   const uint32_t *ctris, uint32_t nct, float tol, float cover,
				   sim_body_through *out, drape_error *err)
{
	for (size_t k = 0; k < 3 * (size_t)nbt; k++)
		if (btris[k] >= nbv)
			return drape_error_setf(err, DRAPE_ERANGE,
						"body triangles[%zu][%zu]: vertex %u >= %u", k / 3,
						k % 3, btris[k], nbv);
	for (size_t k = 0; k < 3 * (size_t)nct; k++)
		if (ctris[k] >= ncv)
			return drape_error_setf(err, DRAPE_ERANGE,
						"cloth triangles[%zu][%zu]: vertex %u >= %u", k / 3,
						k % 3, ctris[k], ncv);
	float *nrm = calloc(3 * (size_t)nbv + 1, sizeof *nrm);
	sim_bvh tree;
	memset(&tree, 0, sizeof tree);
	if (nrm == NULL || (nct > 0 && sim_bvh_build(&tree, cloth, ctris, nct) != 0)) {
		free(nrm);
		return drape_error_setf(err, DRAPE_ENOMEM, "body through: out of memory");
	}
	if (nct > 0)
		sim_bvh_refit(&tree, cloth, cloth, ctris);
	/* Area-weighted vertex normals (the unnormalised cross product is
	 * twice the area times the unit normal), and the enclosed volume whose
	 * sign says whether the winding faces out. */
	double vol = 0.0;
	for (uint32_t t = 0; t < nbt; t++) {
		const uint32_t *v = &btris[3 * (size_t)t];
		sim_v3 a = at3(body, v[0]), b = at3(body, v[1]), c = at3(body, v[2]);
		sim_v3 n = v3_cross(v3_sub(b, a), v3_sub(c, a));
		vol += (double)v3_dot(a, v3_cross(b, c));
		for (int j = 0; j < 3; j++) {
			float *q = &nrm[3 * (size_t)v[j]];
			q[0] += n.x, q[1] += n.y, q[2] += n.z;
		}
	}
	const float orient = vol < 0.0 ? -1.0f : 1.0f;
	sim_body_through r = {0, 0, 0.0f, UINT32_MAX};
	for (uint32_t i = 0; i < nbv && nct > 0; i++) {
		sim_v3 nb = v3_scale(at3(nrm, i), orient);
		float nl = v3_len(nb);
		if (!(nl > 0.0f))
			continue; /* a vertex of no triangle has no outside */
		nb = v3_scale(nb, 1.0f / nl);
		sim_v3 q = at3(body, i);
		nearest_ctx c = {cloth, ctris, q, cover * cover, UINT32_MAX, {0, 0, 0}};
		float lo[3] = {q.x - cover, q.y - cover, q.z - cover};
		float hi[3] = {q.x + cover, q.y + cover, q.z + cover};
		sim_bvh_query(&tree, lo, hi, nearest_visit, &c);
		if (c.tri == UINT32_MAX || !(c.bary[0] > 0.0f && c.bary[1] > 0.0f && c.bary[2] > 0.0f))
			continue;
		const uint32_t *v = &ctris[3 * (size_t)c.tri];
		sim_v3 a = at3(cloth, v[0]);
		sim_v3 nt = v3_cross(v3_sub(at3(cloth, v[1]), a), v3_sub(at3(cloth, v[2]), a));
		float tl = v3_len(nt);
		if (!(tl > 0.0f))
			continue;
		nt = v3_scale(nt, 1.0f / tl);
		float facing = v3_dot(nt, nb);
		if (!(fabsf(facing) >= 0.5f))
			continue;
		if (facing < 0.0f)
			nt = v3_scale(nt, -1.0f);
		float s = v3_dot(nt, v3_sub(q, a));
		r.covered++;
		if (s > tol)
			r.through++;
		if (s > r.deepest) {
			r.deepest = s;
			r.deepest_vertex = i;
		}
	}
	sim_bvh_free(&tree);
	free(nrm);
	*out = r;
	return DRAPE_OK;
}
