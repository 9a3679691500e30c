/* The continuous guard of the self-collision at the end of each substep:
 * see selfcollide.c. */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- continuous guard ------------------------------------------------------- */

/*
 * Roots in (0, 1] of c[0] + c[1] t + c[2] t^2 + c[3] t^3, ascending. The
 * interval is split at the critical points so that g is monotonic on each
 * piece; a piece whose ends differ in sign holds one root, found by
 * bisection in double. A root exactly at 0 (touching at the start) is left
 * to the projection. A double root that only grazes zero inside a piece is
 * missed, which is a touch, not a crossing.
 */
static int cubic_roots01(const double c[4], double roots[3])
{
	double pts[4];
	int np = 0, nr = 0;
	pts[np++] = 0.0;
	double A = 3.0 * c[3], B = 2.0 * c[2], Cq = c[1];
	if (A != 0.0) {
		double disc = B * B - 4.0 * A * Cq;
		if (disc >= 0.0) {
			double sq = sqrt(disc);
			/* Numerically stable pair (no cancellation). */
			double qq = -0.5 * (B + (B >= 0.0 ? sq : -sq));
			double r1 = qq / A, r2 = qq != 0.0 ? Cq / qq : r1;
			if (r1 > r2) {
				double t = r1;
				r1 = r2;
				r2 = t;
			}
			if (r1 > 0.0 && r1 < 1.0)
				pts[np++] = r1;
			if (r2 > 0.0 && r2 < 1.0 && r2 != r1)
				pts[np++] = r2;
		}
	} else if (B != 0.0) {
		double r = -Cq / B;
		if (r > 0.0 && r < 1.0)
			pts[np++] = r;
	}
	pts[np++] = 1.0;
	for (int i = 0; i + 1 < np; i++) {
		double l = pts[i], h = pts[i + 1];
		double gl = ((c[3] * l + c[2]) * l + c[1]) * l + c[0];
		double gh = ((c[3] * h + c[2]) * h + c[1]) * h + c[0];
		if (gl == 0.0 && l > 0.0) {
			if (nr == 0 || roots[nr - 1] != l)
				roots[nr++] = l;
			continue;
		}
		if (gh == 0.0) {
			if (nr == 0 || roots[nr - 1] != h)
				roots[nr++] = h;
			continue;
		}
		if ((gl < 0.0) == (gh < 0.0))
			continue;
		for (int it = 0; it < 60; it++) {
			double m = 0.5 * (l + h);
			double gm = ((c[3] * m + c[2]) * m + c[1]) * m + c[0];
			if ((gm < 0.0) == (gl < 0.0)) {
				l = m;
				gl = gm;
			} else {
				h = m;
			}
		}
		roots[nr++] = h;
	}
	return nr;
}

/* Coefficients of the triple product [A + t dA, B + t dB, C + t dC]: the
 * coplanarity condition of a vertex and a triangle, or of two edges, under
 * linear motion (Provot 1997; Bridson et al. 2002). */
static void triple_cubic(const double A[3], const double dA[3], const double B[3],
			 const double dB[3], const double C[3], const double dC[3], double c[4])
{
#define TP(u, v, w)                                                                 \
	((u)[0] * ((v)[1] * (w)[2] - (v)[2] * (w)[1]) +                              \
	 (u)[1] * ((v)[2] * (w)[0] - (v)[0] * (w)[2]) +                              \
	 (u)[2] * ((v)[0] * (w)[1] - (v)[1] * (w)[0]))
	c[0] = TP(A, B, C);
	c[1] = TP(dA, B, C) + TP(A, dB, C) + TP(A, B, dC);
	c[2] = TP(dA, dB, C) + TP(dA, B, dC) + TP(A, dB, dC);
	c[3] = TP(dA, dB, dC);
#undef TP
}

/* Positions of four vertices x -> p, as offsets from vertex `o` (double). */
static void rel_motion(const sim_vec4 *x, const sim_vec4 *p, uint32_t o, uint32_t v, double r[3],
		       double dr[3])
{
	r[0] = (double)x[v].x - x[o].x;
	r[1] = (double)x[v].y - x[o].y;
	r[2] = (double)x[v].z - x[o].z;
	dr[0] = ((double)p[v].x - x[v].x) - ((double)p[o].x - x[o].x);
	dr[1] = ((double)p[v].y - x[v].y) - ((double)p[o].y - x[o].y);
	dr[2] = ((double)p[v].z - x[v].z) - ((double)p[o].z - x[o].z);
}

static inline sim_v3 at_time(const sim_vec4 *x, const sim_vec4 *p, uint32_t v, float t)
{
	return lerp3(v3_of4(x[v]), v3_of4(p[v]), t);
}

/*
 * The times in (0, 1] at which vt_toi and ee_toi test a pair, into t[16]:
 * the roots of the triple-product cubic of the three relative motions
 * (rel_motion from v[0] to v[1], v[2] to v[3] and v[4] to v[5]); or, when
 * the motion stays within one plane and the cubic is rounding noise
 * against scale (the pair's size cubed), 16 even samples of the path.
 * Returns how many.
 */
static int coplanar_times(const sim_vec4 *x, const sim_vec4 *p, const uint32_t v[6], double scale,
			  double t[16])
{
	double A[3], dA[3], B[3], dB[3], C[3], dC[3], co[4];
	rel_motion(x, p, v[0], v[1], A, dA);
	rel_motion(x, p, v[2], v[3], B, dB);
	rel_motion(x, p, v[4], v[5], C, dC);
	triple_cubic(A, dA, B, dB, C, dC, co);
	if (fabs(co[0]) + fabs(co[1]) + fabs(co[2]) + fabs(co[3]) <= 1e-12 * scale) {
		for (int k = 0; k < 16; k++)
			t[k] = (k + 1) / 16.0;
		return 16;
	}
	return cubic_roots01(co, t);
}

/*
 * Earliest time in (0, 1] at which vertex idx[0] touches triangle
 * idx[1..3] while all four move linearly from x to p, or -1. Touching means
 * coplanar (a root of the triple-product cubic) and within a small tolerance
 * of the triangle.
 */
static double vt_toi(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	sim_v3 q = v3_of4(x[idx[0]]), a = v3_of4(x[idx[1]]), b = v3_of4(x[idx[2]]),
	       c = v3_of4(x[idx[3]]);
	sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), bc = v3_sub(c, b);
	float L = sqrtf(maxf(v3_dot(ab, ab), maxf(v3_dot(ac, ac), v3_dot(bc, bc))));
	float tol = SELF_GUARD_TOL * L;
	/* Conservative filter (vt_motion_bound). The distance to the plane at
	 * x is a lower bound of the distance to the triangle and far cheaper:
	 * a vertex resting over a triangle at the thickness, the common case,
	 * is cleared by it alone. */
	float M = vt_motion_bound(x, p, idx);
	sim_v3 n0;
	if (!tri_degenerate(a, b, c, &n0)) {
		float plane = fabsf(v3_dot(v3_sub(q, a), n0)) / v3_len(n0);
		if (plane > M + tol || point_triangle_distance(q, a, b, c) > M + tol)
			return -1.0;
	}
	/* Triangle edges and the vertex, from the triangle's first vertex. */
	const uint32_t motions[6] = {idx[1], idx[2], idx[1], idx[3], idx[1], idx[0]};
	double samples[16];
	int nr = coplanar_times(x, p, motions, (double)(L + M) * (L + M) * (L + M), samples);
	for (int k = 0; k < nr; k++) {
		float t = (float)samples[k];
		sim_v3 qt = at_time(x, p, idx[0], t), at = at_time(x, p, idx[1], t),
		       bt = at_time(x, p, idx[2], t), ct = at_time(x, p, idx[3], t);
		sim_v3 nt;
		if (tri_degenerate(at, bt, ct, &nt))
			continue;
		if (point_triangle_distance(qt, at, bt, ct) <= tol)
			return samples[k];
	}
	/* Touching at p without a root: the coplanarity cubic is rounding
	 * noise at t = 1 when the pair ends in one plane (two layers pressed
	 * onto the ground at the same height), and a vertex left on a face
	 * intersects it as much as one that went through. */
	if (nr == 0 || samples[nr - 1] != 1.0) {
		sim_v3 ap = v3_of4(p[idx[1]]), bp = v3_of4(p[idx[2]]), cp = v3_of4(p[idx[3]]);
		sim_v3 np;
		if (!tri_degenerate(ap, bp, cp, &np) &&
		    point_triangle_distance(v3_of4(p[idx[0]]), ap, bp, cp) <= tol)
			return 1.0;
	}
	return -1.0;
}

/* Earliest time in (0, 1] at which edges idx[0..1] and idx[2..3] touch. */
static double ee_toi(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	sim_v3 a0 = v3_of4(x[idx[0]]), a1 = v3_of4(x[idx[1]]), b0 = v3_of4(x[idx[2]]),
	       b1 = v3_of4(x[idx[3]]);
	sim_v3 ea = v3_sub(a1, a0), eb = v3_sub(b1, b0);
	float la2 = v3_dot(ea, ea), lb2 = v3_dot(eb, eb);
	float L = sqrtf(maxf(la2, lb2));
	float tol = SELF_GUARD_TOL * L;
	float M = ee_motion_bound(x, p, idx);
	/* The lines' separation at x bounds the segments' from below (cheap),
	 * as in vt_toi. */
	sim_v3 nl = v3_cross(ea, eb);
	float nl2 = v3_dot(nl, nl);
	if (nl2 > 0.0f && fabsf(v3_dot(v3_sub(a0, b0), nl)) / sqrtf(nl2) > M + tol)
		return -1.0;
	if (segment_distance(a0, a1, b0, b1) > M + tol)
		return -1.0;
	/* The two edges and the offset between their first vertices. */
	const uint32_t motions[6] = {idx[0], idx[1], idx[2], idx[3], idx[0], idx[2]};
	double samples[16];
	int nr = coplanar_times(x, p, motions, (double)(L + M) * (L + M) * (L + M), samples);
	for (int k = 0; k < nr; k++) {
		float t = (float)samples[k];
		sim_v3 pa0 = at_time(x, p, idx[0], t), pa1 = at_time(x, p, idx[1], t),
		       pb0 = at_time(x, p, idx[2], t), pb1 = at_time(x, p, idx[3], t);
		if (segment_distance(pa0, pa1, pb0, pb1) <= tol)
			return samples[k];
	}
	/* Touching at p without a root, as in vt_toi. */
	if ((nr == 0 || samples[nr - 1] != 1.0) &&
	    segment_distance(v3_of4(p[idx[0]]), v3_of4(p[idx[1]]), v3_of4(p[idx[2]]),
			     v3_of4(p[idx[3]])) <= tol)
		return 1.0;
	return -1.0;
}

/* 1 when a vertex of the pair moved and all are finite. A NaN or Inf is left
 * as it is, for the step's own non-finite check to report. */
static inline int pair_moved(const sim_vec4 *x, const sim_vec4 *p, const uint32_t idx[4])
{
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		const sim_vec4 *a = &x[idx[k]], *b = &p[idx[k]];
		if (!isfinite(b->x) || !isfinite(b->y) || !isfinite(b->z))
			return 0;
		moved |= a->x != b->x || a->y != b->y || a->z != b->z;
	}
	return moved;
}

/* A vertex the guard cannot move back: pinned (w = 0, possibly animated by
 * a collider) or already carried along by one in this guard (see carry). */
static inline int immovable(const sim_self *s, const sim_vec4 *p, uint32_t v)
{
	return p[v].w == 0.0f || s->carried[v];
}

/* Moves the free vertices of a crossing pair back along their path to
 * fraction tau; returns how many actually moved. */
static int revert(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		  const uint32_t idx[4], float tau)
{
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		uint32_t v = idx[k];
		if (immovable(s, p, v))
			continue;
		sim_v3 np = at_time(x, p, v, tau);
		if (np.x != p[v].x || np.y != p[v].y || np.z != p[v].z) {
			p[v].x = np.x;
			p[v].y = np.y;
			p[v].z = np.z;
			s->dirty_next[v] = 1;
			moved++;
		}
	}
	return moved;
}

/*
 * A pair still crossing with its free vertices back at x was crossed by its
 * immovable side: a pinned vertex carried by its collider through the cloth
 * (or a vertex carried by one). Moving back cannot help, so the free
 * vertices are carried instead: each goes to x plus the mean motion of the
 * pair's moving immovable vertices. With one driver, or drivers that move
 * together, the pair's relative motion is then zero and it stays as it was
 * at x, apart. The carried vertices become immovable for the rest of the
 * guard, so a layer they are pushed into is carried in turn (a hand pushed
 * through a stack of cloth takes every layer with it). Returns how many
 * vertices moved.
 */
static int carry(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		 const uint32_t idx[4])
{
	sim_v3 d = v3(0.0f, 0.0f, 0.0f);
	int drivers = 0;
	for (int k = 0; k < 4; k++) {
		uint32_t v = idx[k];
		if (!immovable(s, p, v))
			continue;
		sim_v3 dv = v3_sub(v3_of4(p[v]), v3_of4(x[v]));
		if (dv.x != 0.0f || dv.y != 0.0f || dv.z != 0.0f) {
			d = v3_add(d, dv);
			drivers++;
		}
	}
	if (drivers == 0)
		return 0;
	d = v3_scale(d, 1.0f / (float)drivers);
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		uint32_t v = idx[k];
		if (immovable(s, p, v))
			continue;
		sim_v3 np = v3_add(v3_of4(x[v]), d);
		moved += np.x != p[v].x || np.y != p[v].y || np.z != p[v].z;
		p[v].x = np.x;
		p[v].y = np.y;
		p[v].z = np.z;
		s->carried[v] = 1;
		s->dirty_next[v] = 1;
	}
	return moved;
}

/*
 * Moves a crossing pair as one body: every vertex goes to x plus the pair's
 * mass-weighted mean motion, so the pair keeps its momentum and, moving
 * rigidly from its intersection-free state at x, cannot cross itself. This
 * is the rigid impact zone of Provot 1997 and Bridson, Fedkiw, Anderson
 * 2002 reduced to one pair (translation only); other pairs it disturbs are
 * checked again in the next round. Stopping the pair at x instead (revert)
 * throws its momentum away, and a pinch the projections cannot open is then
 * stopped again every substep while the cloth around it moves on: on a large
 * hanging sheet a crumpled corner froze that way and its edges stretched to
 * five times their length. Returns how many vertices moved (0: the pair
 * moves as one already), or -1 for a pair with an immovable vertex, which is
 * left to revert and carry.
 */
static int zone_move(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		     const uint32_t idx[4])
{
	sim_v3 d = v3(0.0f, 0.0f, 0.0f);
	float mass = 0.0f;
	for (int k = 0; k < 4; k++) {
		const uint32_t v = idx[k];
		if (immovable(s, p, v))
			return -1;
		const float m = 1.0f / p[v].w;
		d = v3_add(d, v3_scale(v3_sub(v3_of4(p[v]), v3_of4(x[v])), m));
		mass += m;
	}
	d = v3_scale(d, 1.0f / mass);
	int moved = 0;
	for (int k = 0; k < 4; k++) {
		const uint32_t v = idx[k];
		sim_v3 np = v3_add(v3_of4(x[v]), d);
		if (np.x != p[v].x || np.y != p[v].y || np.z != p[v].z) {
			p[v].x = np.x;
			p[v].y = np.y;
			p[v].z = np.z;
			s->dirty_next[v] = 1;
			moved++;
		}
	}
	return moved;
}

/*
 * Stops a pair found crossing at time toi: its free vertices go back to
 * fraction backoff of toi. When that moves nothing (a vertex that moved less
 * than a float step, so that the fraction rounds to p), the pair goes back
 * to x instead, and when the free vertices are at x already, the crossing is
 * the immovable side's and they are carried (carry). A crossing that moves
 * no vertex would end the guard's rounds with the crossing left in place.
 * A negative backoff asks for a zone move first (zone_move).
 */
static int stop_pair(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		     const uint32_t idx[4], double toi, float backoff)
{
	if (backoff < 0.0f) {
		/* A pair whose vertices are all movable either moves as one
		 * now, or already does (nothing to move: its test found it
		 * touching, not crossing), and is left so. */
		int zm = zone_move(s, p, x, idx);
		if (zm >= 0)
			return zm;
		backoff = 0.0f;
	}
	int moved = revert(s, p, x, idx, (float)(backoff * toi));
	if (moved == 0 && backoff > 0.0f)
		moved = revert(s, p, x, idx, 0.0f);
	if (moved == 0)
		moved = carry(s, p, x, idx);
	return moved;
}

/* Swept tests of one vertex-triangle or edge-edge pair; a crossing pair is
 * stopped (stop_pair). Returns the number of vertices moved. */
static int guard_vt(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		    const uint32_t idx[4], float backoff)
{
	if (self_joined(s, idx, 0) || self_masked(s, idx[0], idx[1]) || self_released(s, idx))
		return 0;
	if (!pair_moved(x, p, idx))
		return 0;
	double toi = vt_toi(x, p, idx);
	return toi >= 0.0 ? stop_pair(s, p, x, idx, toi, backoff) : 0;
}

static int guard_ee(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
		    const uint32_t idx[4], float backoff)
{
	if (self_joined(s, idx, 1) || self_masked(s, idx[0], idx[2]) || self_released(s, idx))
		return 0;
	if (!pair_moved(x, p, idx))
		return 0;
	double toi = ee_toi(x, p, idx);
	return toi >= 0.0 ? stop_pair(s, p, x, idx, toi, backoff) : 0;
}

static inline int tri_has(const uint32_t *tv, uint32_t v)
{
	return tv[0] == v || tv[1] == v || tv[2] == v;
}

static int guard_vertex_triangle(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
				 uint32_t v, uint32_t t, float backoff)
{
	const uint32_t *tb = &s->tris[3 * (size_t)t];
	const uint32_t idx[4] = {v, tb[0], tb[1], tb[2]};
	return guard_vt(s, p, x, idx, backoff);
}

/* Every vertex-triangle and edge-edge pair between triangles a and b. */
static int guard_triangle_pair(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			       uint32_t a, uint32_t b, float backoff)
{
	const uint32_t *ta = &s->tris[3 * (size_t)a], *tb = &s->tris[3 * (size_t)b];
	int changed = 0;
	for (int k = 0; k < 3; k++) {
		if (!tri_has(tb, ta[k])) {
			const uint32_t idx[4] = {ta[k], tb[0], tb[1], tb[2]};
			changed += guard_vt(s, p, x, idx, backoff);
		}
		if (!tri_has(ta, tb[k])) {
			const uint32_t idx[4] = {tb[k], ta[0], ta[1], ta[2]};
			changed += guard_vt(s, p, x, idx, backoff);
		}
	}
	for (int k = 0; k < 3; k++)
		for (int m = 0; m < 3; m++) {
			const uint32_t idx[4] = {ta[k], ta[(k + 1) % 3], tb[m], tb[(m + 1) % 3]};
			if (idx[0] == idx[2] || idx[0] == idx[3] || idx[1] == idx[2] || idx[1] == idx[3])
				continue;
			changed += guard_ee(s, p, x, idx, backoff);
		}
	return changed;
}

/*
 * The candidate pairs were culled by the relative motion of their two sides
 * (vt_motion_bound): a cloth falling as a whole has none. Once the guard
 * moves some vertices back and leaves their neighbours moving, that motion
 * is no longer common, and pairs that were never candidates can cross (a
 * falling layer through a vertex the guard stopped). So around every vertex
 * moved in the previous round, every triangle that has it is tested against
 * every triangle the hash finds near its current swept box, without the
 * relative-motion cull. The hash is still valid: its boxes enclose every
 * vertex's segment x -> p grown by the reach, and moving back stays on that
 * segment. (Carried vertices leave it; sim_self_end_substep keeps them in
 * the dirty set, so they search from their own side.)
 */
static int guard_neighbourhood(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			       float backoff)
{
	if (++s->mark == 0) {
		memset(s->tri_mark, 0, (size_t)s->nt * sizeof *s->tri_mark);
		s->mark = 1;
	}
	const uint32_t mark = s->mark;
	const sim_hash *h = &s->hash;
	int changed = 0;
	for (uint32_t v = 0; v < s->nv; v++) {
		if (!s->dirty[v])
			continue;
		int hashed = 0;
		for (uint32_t k = s->vtri_start[v]; k < s->vtri_start[v + 1]; k++) {
			uint32_t a = s->vtri[k];
			if (s->tri_skip[a])
				continue;
			hashed = 1;
			if (s->tri_mark[a] == mark)
				continue;
			s->tri_mark[a] = mark;
			const uint32_t *ta = &s->tris[3 * (size_t)a];
			float ab[6], o[6];
			swept_box(x[ta[0]], p[ta[0]], ab);
			swept_box(x[ta[1]], p[ta[1]], o);
			box_union(ab, o);
			swept_box(x[ta[2]], p[ta[2]], o);
			box_union(ab, o);
			uint32_t stamp = next_stamp(s);
			SELF_FOR_TRIANGLES(s, h, ab, {
				if (s->tri_stamp[t_] != stamp && t_ != a && !s->tri_skip[t_]) {
					s->tri_stamp[t_] = stamp;
					if (sim_box_overlap(ab, &s->tri_box[6 * (size_t)t_]))
						changed += guard_triangle_pair(s, p, x, a, t_, backoff);
				}
			});
		}
		if (hashed)
			continue;
		/* A vertex of zero-area triangles only: against the triangles
		 * near its own path. */
		float vb[6];
		swept_box(x[v], p[v], vb);
		uint32_t stamp = next_stamp(s);
		SELF_FOR_TRIANGLES(s, h, vb, {
			if (s->tri_stamp[t_] != stamp && !s->tri_skip[t_] &&
			    !tri_has(&s->tris[3 * (size_t)t_], v)) {
				s->tri_stamp[t_] = stamp;
				changed += guard_vertex_triangle(s, p, x, v, t_, backoff);
			}
		});
	}
	return changed;
}

/* The last resort when the rounds do not settle: every free vertex goes
 * back to x, where nothing intersected. Crossings can then remain only with
 * immovable vertices, and each further round carries at least one more
 * vertex along, so the rounds end. */
static void revert_all(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x)
{
	for (uint32_t v = 0; v < s->nv; v++) {
		if (immovable(s, p, v))
			continue;
		if (p[v].x != x[v].x || p[v].y != x[v].y || p[v].z != x[v].z) {
			p[v].x = x[v].x;
			p[v].y = x[v].y;
			p[v].z = x[v].z;
			s->dirty_next[v] = 1;
		}
	}
}

/*
 * The guard. Every candidate pair that moved gets a swept test on the
 * straight paths x -> p. In the first SELF_GUARD_ZONE_ROUNDS rounds a pair
 * that touches (or ends touching) and has no immovable vertex is moved as
 * one body with its mean motion (zone_move), or left alone when it already
 * moves as one. Later, or with an immovable vertex, it has its free vertices
 * moved back to x + tau (p - x), tau = 0.8 toi in the next two rounds and
 * tau = 0 (the start positions, which were intersection-free) after that. A pair that still crosses with its free
 * vertices at x was crossed by a moving pinned vertex, and they are carried
 * along with it instead (carry). Moved vertices are re-verified in the next
 * round. Once tau is 0 every round that finds a crossing returns at least
 * one more vertex to x or carries one, so the loop ends; if it has not
 * settled after SELF_GUARD_MAX_ROUNDS, every free vertex goes back to x at
 * once. Only a crossing made by pinned vertices alone (two animated pins
 * through each other) cannot be undone here and is left.
 *
 * Momentum: a zone move keeps the pair's momentum (an inelastic collision
 * of the pair, as in the rigid impact zones of Provot 1997 / Bridson et al.
 * 2002, per pair and without rotation); a move back is an inelastic stop of
 * the involved vertices for the rest of the substep (their velocity after
 * v = (p - x) / dt is scaled by tau). Both act only where the projections
 * failed, which the tests show is rare.
 *
 * A candidate pair whose distance at x, recorded at collection (dx),
 * exceeds its motion bound over x -> p plus the contact tolerance is
 * cleared before the swept test: that is the test vt_toi and ee_toi begin
 * with, on the same numbers, so only the distance computation is saved.
 *
 * Candidate pairs were found for the motion x -> p as predicted at begin;
 * the iterations have since moved p. A pair left out (boxes more than the
 * reach apart, or farther apart at x than its motion plus the reach) can
 * touch only if some vertex strayed half the reach from its prediction, so
 * in that case the pairs are collected again over x -> p first (outside the
 * iteration loop, so the no-allocation rule of project is kept).
 */
void sim_self_end_substep(sim_self *s, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			  float thickness)
{
	const uint32_t nv = s->nv;
	const float reach = reach_of(thickness);
	float stray = 0.0f;
	for (uint32_t v = 0; v < nv; v++)
		stray = maxf(stray, motion(s->p_pred, p, v));
	/* A dropped pair could cross only if some vertex strayed half the reach
	 * from its prediction (see SELF_REACH_FACTOR). A crossing needs no
	 * contact distance, so with a thickness per vertex the reach of the
	 * largest (what the step passes) serves every pair. */
	if (reach > 0.0f ? stray >= 0.5f * reach : stray > 0.0f) {
		s->thickness = reach / SELF_REACH_FACTOR;
		if (!(reach > 0.0f) || self_recollect_strayed(s, x, p, reach) != 0)
			self_collect(s, x, p, reach);
	}

	/* Served from the kept list, the substep has no hash yet: it is built
	 * over x -> p as it is now, the segments the guard moves back along,
	 * when a round first needs it. */
	if (s->hash_stale)
		memcpy(s->p_end, p, (size_t)nv * sizeof *p);

	memset(s->dirty, 1, nv);
	memset(s->carried, 0, nv);
	for (int round = 0;; round++) {
		memset(s->dirty_next, 0, nv);
		int changed = 0;
		/* -1 asks stop_pair for a zone move (see the comment above). */
		float backoff = round < SELF_GUARD_ZONE_ROUNDS ? -1.0f
				: round < SELF_GUARD_ZONE_ROUNDS + SELF_GUARD_PARTIAL_ROUNDS
				? (float)SELF_GUARD_BACKOFF
				: 0.0f;
		for (uint32_t i = 0; i < s->vt_count; i++) {
			const self_vt *r = &s->vt[i];
			const uint32_t *tv = &s->tris[3 * (size_t)r->t];
			uint32_t idx[4] = {r->v, tv[0], tv[1], tv[2]};
			if (!(s->dirty[idx[0]] | s->dirty[idx[1]] | s->dirty[idx[2]] |
			      s->dirty[idx[3]]))
				continue;
			if (r->dx > vt_motion_bound(x, p, idx) + r->tol)
				continue;
			changed += guard_vt(s, p, x, idx, backoff);
		}
		for (uint32_t i = 0; i < s->ee_count; i++) {
			const self_ee *r = &s->ee[i];
			uint32_t idx[4] = {s->edges[2 * (size_t)r->a], s->edges[2 * (size_t)r->a + 1],
					   s->edges[2 * (size_t)r->b], s->edges[2 * (size_t)r->b + 1]};
			if (!(s->dirty[idx[0]] | s->dirty[idx[1]] | s->dirty[idx[2]] |
			      s->dirty[idx[3]]))
				continue;
			if (r->dx > ee_motion_bound(x, p, idx) + r->tol)
				continue;
			changed += guard_ee(s, p, x, idx, backoff);
		}
		/* Round 0's dirty set is every vertex: nothing has been moved
		 * back yet, so the candidates are complete. */
		if (round > 0) {
			if (s->hash_stale)
				self_boxes_and_hash(s, x, s->p_end, reach, SELF_FITS_NONE);
			changed += guard_neighbourhood(s, p, x, backoff);
		}
		if (!changed)
			break;
		if (round + 1 == SELF_GUARD_MAX_ROUNDS)
			revert_all(s, p, x);
		/* Carried vertices have left the boxes the hash was built from,
		 * so a triangle that moves back later may not find theirs: they
		 * search from their own side in every round instead. */
		for (uint32_t v = 0; v < nv; v++)
			s->dirty_next[v] |= s->carried[v];
		uint8_t *t = s->dirty;
		s->dirty = s->dirty_next;
		s->dirty_next = t;
	}
}

