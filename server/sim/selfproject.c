/*
 * The self-collision pushes and friction, every iteration: see
 * selfcollide.c.
 *
 * The distance a pair is kept at. With one thickness for the cloth, every
 * pair keeps it. With a thickness per vertex (selfthick.c), a
 * vertex-triangle pair keeps the mean of the vertex's own and the
 * triangle's, and an edge pair the mean of its two edges', where a
 * triangle's is the mean of its three corners' and an edge's the mean of
 * its two ends'. Each side brings its half: two layers of thickness a and b
 * rest (a + b) / 2 apart, which is a for two layers of a (the uniform
 * rule), and a 6 mm jacket keeps 3.5 mm off a 1 mm shirt
 * (test_sim_selfthick.c measures it). The mean of the corners rather than
 * their largest: it is the mean of the thickness interpolated over the
 * triangle, so where a thick panel meets a thin one the change spreads over
 * the one ring of triangles that straddle the boundary, from either side
 * alike; the largest would give the whole ring the thick value, and a
 * thin vertex next to the boundary would be held off a thin layer by the
 * thick panel's gap. The mean is cheap as well: one value per triangle
 * and per edge, worked out once, two loads per pair.
 *
 * The skip tests (sim_self_project's global one, apart_now per pair) may
 * use any distance at least the pair's: the global one uses the thickness
 * the step passes, the largest of any vertex, and apart_now the pair's own.
 */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/*
 * Side of the vertex relative to the triangle's plane at x. A vertex lying
 * exactly on the plane takes the side it comes from, judged by where it is
 * heading (the opposite of its sign at p), so that a projection never helps
 * it through. Trusted when the projection at x falls on the triangle.
 */
static inline void vt_side(sim_v3 q, sim_v3 a, sim_v3 b, sim_v3 c, sim_v3 qp, sim_v3 ap, sim_v3 bp,
		    sim_v3 cp, int32_t *side, uint32_t *trusted)
{
	sim_v3 n;
	*trusted = 0;
	if (tri_degenerate(a, b, c, &n)) {
		/* No plane at x: fall back to the side at p, untrusted. */
		sim_v3 np = v3_cross(v3_sub(bp, ap), v3_sub(cp, ap));
		*side = v3_dot(v3_sub(qp, ap), np) >= 0.0f ? 1 : -1;
		return;
	}
	float d = v3_dot(v3_sub(q, a), n);
	if (d > 0.0f) {
		*side = 1;
	} else if (d < 0.0f) {
		*side = -1;
	} else {
		sim_v3 np = v3_cross(v3_sub(bp, ap), v3_sub(cp, ap));
		*side = v3_dot(v3_sub(qp, ap), np) > 0.0f ? -1 : 1;
	}
	/* Barycentric coordinates of the projection (Ericson 3.4). */
	sim_v3 v0 = v3_sub(b, a), v1 = v3_sub(c, a), v2 = v3_sub(q, a);
	float d00 = v3_dot(v0, v0), d01 = v3_dot(v0, v1), d11 = v3_dot(v1, v1);
	float d20 = v3_dot(v2, v0), d21 = v3_dot(v2, v1);
	float den = d00 * d11 - d01 * d01;
	if (!(den > 0.0f))
		return;
	float bv = (d11 * d20 - d01 * d21) / den, bw = (d00 * d21 - d01 * d20) / den;
	float bu = 1.0f - bv - bw;
	*trusted = bu >= -SELF_TRUST_MARGIN && bv >= -SELF_TRUST_MARGIN &&
		   bw >= -SELF_TRUST_MARGIN;
}

/*
 * Side of edge pair (a0a1, b0b1) at x: the sign of the separation of their
 * lines along e_a x e_b (the same for any points on the lines). Parallel
 * lines have none (0: use the side at p). Trusted when the lines' closest
 * points fall on both segments, i.e. the edges were really crossing over one
 * another at x rather than beside each other.
 */
static inline void ee_side(sim_v3 a0, sim_v3 a1, sim_v3 b0, sim_v3 b1, sim_v3 pa0, sim_v3 pa1,
		    sim_v3 pb0, sim_v3 pb1, int32_t *side, uint32_t *trusted)
{
	sim_v3 ea = v3_sub(a1, a0), eb = v3_sub(b1, b0), r = v3_sub(a0, b0);
	sim_v3 n = v3_cross(ea, eb);
	float la = v3_dot(ea, ea), lb = v3_dot(eb, eb), nn = v3_dot(n, n);
	*side = 0;
	*trusted = 0;
	if (!(nn > SELF_PARALLEL_SINE * SELF_PARALLEL_SINE * la * lb))
		return;
	float d = v3_dot(r, n);
	if (d > 0.0f) {
		*side = 1;
	} else if (d < 0.0f) {
		*side = -1;
	} else {
		sim_v3 np = v3_cross(v3_sub(pa1, pa0), v3_sub(pb1, pb0));
		*side = v3_dot(v3_sub(pa0, pb0), np) > 0.0f ? -1 : 1;
	}
	float b = v3_dot(ea, eb), c = v3_dot(ea, r), f = v3_dot(eb, r);
	float den = la * lb - b * b;
	if (!(den > 0.0f))
		return;
	float sp = (b * f - c * lb) / den, tp = (la * f - b * c) / den;
	*trusted = sp >= -SELF_TRUST_MARGIN && sp <= 1.0f + SELF_TRUST_MARGIN &&
		   tp >= -SELF_TRUST_MARGIN && tp <= 1.0f + SELF_TRUST_MARGIN;
}

/* 1 when some vertex of a[0..na) is joined by a mesh edge to some vertex of
 * b[0..nb). */
static inline int neighbours(const sim_self *s, const uint32_t *a, int na, const uint32_t *b, int nb)
{
	for (int i = 0; i < na; i++)
		for (uint32_t k = s->adj_start[a[i]]; k < s->adj_start[a[i] + 1]; k++)
			for (int j = 0; j < nb; j++)
				if (s->adj[k] == b[j])
					return 1;
	return 0;
}

/* ---- projection ------------------------------------------------------------- */

/*
 * Friction between layers, Coulomb's law as in Macklin et al., "Unified
 * Particle Physics for Real-Time Applications" (SIGGRAPH 2014), eq. 24: the
 * relative tangential displacement since x of the vertex (weight 1) and the
 * points it touches (weights -wt[k]) is reduced by at most `friction` times
 * the normal correction `depth` of this projection, and never reversed. The
 * correction uses the same weighting as the push, so linear momentum is
 * conserved as well. (Removing a fixed fraction of the slip every iteration
 * instead, whatever the normal force, made layers stick together at any
 * friction above zero.)
 */
static inline void apply_friction(sim_vec4 *restrict p, const sim_vec4 *restrict x,
				  const uint32_t *idx, const float *wt, int count, sim_v3 g,
				  float W, float friction, float depth)
{
	sim_v3 rel = v3(0.0f, 0.0f, 0.0f);
	for (int k = 0; k < count; k++) {
		sim_v3 d = v3_sub(v3_of4(p[idx[k]]), v3_of4(x[idx[k]]));
		rel = v3_add(rel, v3_scale(d, wt[k]));
	}
	sim_v3 tan = v3_sub(rel, v3_scale(g, v3_dot(rel, g)));
	float tl = v3_len(tan), limit = friction * depth;
	if (!(tl > 0.0f))
		return;
	float keep = tl <= limit ? 1.0f : limit / tl;
	sim_v3 mu = v3_scale(tan, -keep / W);
	for (int k = 0; k < count; k++) {
		float f = p[idx[k]].w * wt[k];
		p[idx[k]].x += f * mu.x;
		p[idx[k]].y += f * mu.y;
		p[idx[k]].z += f * mu.z;
	}
}

/* Applies p_k += w_k * wt_k * lambda * g to `count` vertices. */
static inline void apply_push(sim_vec4 *restrict p, const uint32_t *idx, const float *wt,
			      int count, sim_v3 g, float lambda)
{
	for (int k = 0; k < count; k++) {
		float f = p[idx[k]].w * wt[k] * lambda;
		p[idx[k]].x += f * g.x;
		p[idx[k]].y += f * g.y;
		p[idx[k]].z += f * g.z;
	}
}

/*
 * 1 when the pair is provably farther apart than the thickness all along
 * x -> p as p is now: its distance at x less its motion bound over that path
 * (see vt_motion_bound), with a relative margin for rounding. Then it is not
 * in contact and has not crossed, and its projection would do nothing. This
 * is the per-pair form of sim_self_project's skip: the iterations move
 * whole regions of the cloth away from the prediction together (a collider
 * stops the part that lands on it), which the global stray counts against
 * every pair but the relative motion of a pair's own vertices does not.
 */
static inline int apart_now(const sim_vec4 *restrict x, const sim_vec4 *restrict p,
			    const uint32_t idx[4], int ee, float dx, float thickness)
{
	return dx > (thickness + bound_now(x, p, idx, ee)) * 1.001f + 1e-7f;
}

/*
 * Works out a candidate's rest_close and, unless it is a rest neighbour,
 * its side and trust at x, with p as predicted at begin_substep (p_pred,
 * what collect saw), so they are what collect would have recorded.
 * Returns rest_close.
 */
static int settle_vt(const sim_self *s, self_vt *r, const sim_vec4 *restrict x,
		     const uint32_t *tv, float h)
{
	/* Hashed triangles are not degenerate at rest, so the distance is
	 * defined. */
	r->rest_close = point_triangle_distance(s->x0[r->v], s->x0[tv[0]], s->x0[tv[1]],
						s->x0[tv[2]]) < h &&
			neighbours(s, &r->v, 1, tv, 3);
	if (r->rest_close)
		return 1;
	const sim_vec4 *q = s->p_pred;
	uint32_t trusted;
	vt_side(v3_of4(x[r->v]), v3_of4(x[tv[0]]), v3_of4(x[tv[1]]), v3_of4(x[tv[2]]),
		v3_of4(q[r->v]), v3_of4(q[tv[0]]), v3_of4(q[tv[1]]), v3_of4(q[tv[2]]), &r->side,
		&trusted);
	r->trusted = (uint16_t)trusted;
	return 0;
}

static int settle_ee(const sim_self *s, self_ee *r, const sim_vec4 *restrict x,
		     const uint32_t idx[4], float h)
{
	r->rest_close = segment_distance(s->x0[idx[0]], s->x0[idx[1]], s->x0[idx[2]],
					 s->x0[idx[3]]) < h &&
			neighbours(s, &idx[0], 2, &idx[2], 2);
	if (r->rest_close)
		return 1;
	const sim_vec4 *q = s->p_pred;
	uint32_t trusted;
	ee_side(v3_of4(x[idx[0]]), v3_of4(x[idx[1]]), v3_of4(x[idx[2]]), v3_of4(x[idx[3]]),
		v3_of4(q[idx[0]]), v3_of4(q[idx[1]]), v3_of4(q[idx[2]]), v3_of4(q[idx[3]]), &r->side,
		&trusted);
	r->trusted = (uint16_t)trusted;
	return 0;
}

static void project_vt(const sim_self *s, self_vt *r, sim_vec4 *restrict p,
		       const sim_vec4 *restrict x, float thickness, float friction)
{
	if (r->rest_close == 1)
		return;
	const uint32_t *tv = &s->tris[3 * (size_t)r->t];
	uint32_t idx[4] = {r->v, tv[0], tv[1], tv[2]};
	/* The pair's own distance (the substep's thickness when uniform). */
	thickness = self_vt_h(s, r->v, r->t, thickness);
	if (apart_now(x, p, idx, 0, r->dx, thickness))
		return;
	if (r->rest_close == SELF_REST_UNKNOWN &&
	    settle_vt(s, r, x, tv, s->vh_on ? thickness : s->thickness))
		return;
	sim_v3 q = v3_of4(p[idx[0]]), a = v3_of4(p[idx[1]]), b = v3_of4(p[idx[2]]),
	       c = v3_of4(p[idx[3]]);
	sim_v3 n;
	if (tri_degenerate(a, b, c, &n))
		return;
	/* The signed plane distance first: it decides the face case alone,
	 * and outside the face the distance to the closest point is at least
	 * its magnitude, so a pair out of reach of the plane is done without
	 * the closest-point computation (most pairs in most iterations). */
	float inv = 1.0f / v3_len(n);
	float d = v3_dot(v3_sub(q, a), n) * inv * (float)r->side;
	if (d >= thickness || (!r->trusted && d < -thickness))
		return;
	float bary[3];
	int inside = closest_on_triangle(q, a, b, c, bary);
	sim_v3 g;
	float C;
	if (inside) {
		/* Face region: a one-sided constraint on the side recorded at x.
		 * An untrusted side (the vertex was beside the triangle at x)
		 * only acts within the thickness of the plane, because deeper on
		 * the other side it has gone round the edge, not through; both
		 * were tested above. */
		g = v3_scale(n, inv * (float)r->side);
		C = d - thickness;
	} else {
		/* Edge or vertex region: keep the distance to the closest point,
		 * along the direction to it. */
		sim_v3 cp = v3_add(v3_add(v3_scale(a, bary[0]), v3_scale(b, bary[1])),
				   v3_scale(c, bary[2]));
		sim_v3 dv = v3_sub(q, cp);
		float dist = v3_len(dv);
		if (dist >= thickness || !(dist > 1e-12f))
			return;
		g = v3_scale(dv, 1.0f / dist);
		C = dist - thickness;
	}
	float wt[4] = {1.0f, -bary[0], -bary[1], -bary[2]};
	float W = p[idx[0]].w + bary[0] * bary[0] * p[idx[1]].w + bary[1] * bary[1] * p[idx[2]].w +
		  bary[2] * bary[2] * p[idx[3]].w;
	if (!(W > 0.0f))
		return;
	apply_push(p, idx, wt, 4, g, -C / W);
	if (friction > 0.0f)
		apply_friction(p, x, idx, wt, 4, g, W, friction, -C);
}

static void project_ee(const sim_self *s, self_ee *r, sim_vec4 *restrict p,
		       const sim_vec4 *restrict x, float thickness, float friction)
{
	if (r->rest_close == 1)
		return;
	uint32_t idx[4] = {s->edges[2 * (size_t)r->a], s->edges[2 * (size_t)r->a + 1],
			   s->edges[2 * (size_t)r->b], s->edges[2 * (size_t)r->b + 1]};
	thickness = self_ee_h(s, r->a, r->b, thickness);
	if (apart_now(x, p, idx, 1, r->dx, thickness))
		return;
	if (r->rest_close == SELF_REST_UNKNOWN &&
	    settle_ee(s, r, x, idx, s->vh_on ? thickness : s->thickness))
		return;
	sim_v3 a0 = v3_of4(p[idx[0]]), a1 = v3_of4(p[idx[1]]), b0 = v3_of4(p[idx[2]]),
	       b1 = v3_of4(p[idx[3]]);
	sim_v3 ea = v3_sub(a1, a0), eb = v3_sub(b1, b0);
	sim_v3 n = v3_cross(ea, eb);
	float nn = v3_dot(n, n);
	if (!(nn > SELF_PARALLEL_SINE * SELF_PARALLEL_SINE * v3_dot(ea, ea) * v3_dot(eb, eb)))
		return;
	/* The lines' separation first (cheap); the closest points only for
	 * pairs it leaves in reach. */
	float inv = 1.0f / sqrtf(nn);
	float d0 = v3_dot(v3_sub(a0, b0), n) * inv;
	int32_t side = r->side ? r->side : (d0 >= 0.0f ? 1 : -1);
	float d = d0 * (float)side;
	if (d >= thickness || (!r->trusted && d < -thickness))
		return;
	float sp, tp;
	closest_segments(a0, a1, b0, b1, &sp, &tp);
	/* Only edges crossing over one another (closest points inside both
	 * segments); an endpoint contact is a vertex near a triangle's edge,
	 * which the vertex-triangle pairs already keep apart. */
	if (!(sp > 0.0f && sp < 1.0f && tp > 0.0f && tp < 1.0f))
		return;
	sim_v3 g = v3_scale(n, inv * (float)side);
	float wt[4] = {1.0f - sp, sp, -(1.0f - tp), -tp};
	float W = wt[0] * wt[0] * p[idx[0]].w + wt[1] * wt[1] * p[idx[1]].w +
		  wt[2] * wt[2] * p[idx[2]].w + wt[3] * wt[3] * p[idx[3]].w;
	if (!(W > 0.0f))
		return;
	apply_push(p, idx, wt, 4, g, (thickness - d) / W);
	if (friction > 0.0f)
		apply_friction(p, x, idx, wt, 4, g, W, friction, thickness - d);
}

/*
 * The largest distance of any vertex from the prediction p_pred that the
 * pairs' lower bounds were computed for (begin_substep), or INFINITY when a
 * position is not finite (then no pair is skipped).
 */
static float stray_since_begin(const sim_self *s, const sim_vec4 *restrict p)
{
	const sim_vec4 *restrict q = s->p_pred;
	float m2 = 0.0f;
	uint32_t bad = 0;
	for (uint32_t v = 0; v < s->nv; v++) {
		float dx = p[v].x - q[v].x, dy = p[v].y - q[v].y, dz = p[v].z - q[v].z;
		float d2 = dx * dx + dy * dy + dz * dz;
		bad |= (uint32_t)!(d2 <= INFINITY);
		m2 = d2 > m2 ? d2 : m2;
	}
	return bad ? INFINITY : sqrtf(m2);
}

void sim_self_project(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x, float thickness,
		      float friction)
{
	if (!(thickness >= 0.0f))
		thickness = 0.0f;
	if (!(friction > 0.0f))
		friction = 0.0f;
	if (friction > 1.0f)
		friction = 1.0f;
	/*
	 * A pair whose distance stayed above lb on the predicted motion x ->
	 * p_pred is now at least lb - 2 stray apart (each side moved at most
	 * `stray` since), and cannot have crossed on the way: it is skipped
	 * when that exceeds the thickness, with a relative margin for the
	 * rounding of lb. Most candidates are the cloth's own neighbours,
	 * further apart than the thickness, so most are skipped.
	 */
	const float skip = (thickness + 2.0f * stray_since_begin(s, p)) * 1.001f + 1e-7f;
	self_vt *vt = s->vt;
	for (uint32_t i = 0, n = s->vt_count; i < n; i++)
		if (!(vt[i].lb > skip))
			project_vt(s, &vt[i], p, x, thickness, friction);
	self_ee *ee = s->ee;
	for (uint32_t i = 0, n = s->ee_count; i < n; i++)
		if (!(ee[i].lb > skip))
			project_ee(s, &ee[i], p, x, thickness, friction);
}

