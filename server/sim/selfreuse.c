/*
 * Candidate reuse across substeps (issue 22): a list collected once with a
 * wider reach serves the substeps that follow, each of which only filters
 * it, instead of searching the whole cloth again.
 *
 * The list: every pair self_collect keeps for the motion X -> X (no motion)
 * within the reach W = SELF_REUSE_WIDEN times the substep's reach r (at
 * most SELF_REUSE_EDGES mean edge lengths, and no list when that leaves
 * less than SELF_REUSE_MIN_WIDEN r), where X are the positions x of the
 * substep that collected it.
 *
 * Completeness. Write every later start position as x_v = X_v + a + e_v
 * and prediction as p_v = X_v + b + f_v, with a and b translations common
 * to all vertices, and let d = max |e_v|, |f_v| (drift_of, each translation
 * the centre of the box of the displacements). A substep's own collection
 * keeps a pair only when (1) their swept boxes over x -> p, one grown by r,
 * meet, and (2) when the triangle is not degenerate at x, its distance at
 * x less the motion bound M is at most r (the plane and separating-axis
 * tests before it are lower bounds of that distance, so they only drop
 * pairs (2) drops too). Distances do not change under a translation, and
 * moving every corner by at most d moves every point of a triangle or
 * segment by at most d, so the distance at x is at least the distance at X
 * less 2d; M, the largest relative motion of two corners, is
 * |(f_i - e_i) - (f_j - e_j)| <= 4d (the translations cancel). A pair kept
 * by (2) is therefore within r + 6d at X, and the list holds every pair
 * within W at X (its boxes at X, grown by W, meet). Hence, while
 * 6d <= W - r, every pair a fresh collection would keep is in the list,
 * and self_filter applies tests (1) and (2) to each, with the very
 * operations of the fresh collection: the candidates are the same set,
 * with the same bits (in the list's order, which is fixed by X, so the
 * same for any thread count). Triangles degenerate at x are kept by a
 * fresh collection on the box test alone, which no distance at X bounds:
 * a substep with one collects afresh. So do meshes with vertices in no
 * hashed triangle (they are searched on their own, see self_collect).
 *
 * Nothing here depends on the pairs' contact distances, only on the reach
 * r: with a thickness per vertex r is sized from the largest (selfthick.c),
 * and the argument holds as it stands.
 *
 * The list is dropped at every frame's first substep (sim_self_begin_frame),
 * so that a frame's result depends on the state at its start alone: a run
 * resumed from a checkpoint gives the same bits as one never stopped.
 *
 * The end-of-substep guard needs the hash over x -> p (guard_neighbourhood);
 * a substep served from the list has not built it, so the guard builds it
 * when it first needs it (hash_stale).
 */
#include "server/sim/selfcollide_impl.h"

#include <math.h>
#include <string.h>

/* Substeps collected afresh after a list that served only the substep it
 * was collected for (the cloth moves too fast for it to pay). */
#define SELF_REUSE_WAIT 4u

/* The largest distance of q from reuse_x + c, for the translation c that
 * is the centre of the box of q's displacements from reuse_x. */
static float drift_of(const sim_self *s, const sim_vec4 *restrict q)
{
	const sim_vec4 *restrict X = s->reuse_x;
	float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t v = 0; v < s->nv; v++) {
		const float d[3] = {q[v].x - X[v].x, q[v].y - X[v].y, q[v].z - X[v].z};
		for (int k = 0; k < 3; k++) {
			lo[k] = minf(lo[k], d[k]);
			hi[k] = maxf(hi[k], d[k]);
		}
	}
	const float c[3] = {0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2])};
	float m2 = 0.0f;
	for (uint32_t v = 0; v < s->nv; v++) {
		const sim_v3 e = v3(q[v].x - X[v].x - c[0], q[v].y - X[v].y - c[1], q[v].z - X[v].z - c[2]);
		m2 = maxf(m2, v3_dot(e, e));
	}
	/* NaN anywhere makes the drift NaN, which no budget passes. */
	return isfinite(lo[0] + lo[1] + lo[2] + hi[0] + hi[1] + hi[2]) ? sqrtf(m2) : NAN;
}

/* 1 when some hashed triangle is degenerate at x. */
static int any_degenerate(const sim_self *s, const sim_vec4 *restrict x)
{
	for (uint32_t i = 0; i < s->nh; i++) {
		const uint32_t *tv = &s->tris[3 * (size_t)s->chunk_tri[i]];
		sim_v3 n;
		if (tri_degenerate(v3_of4(x[tv[0]]), v3_of4(x[tv[1]]), v3_of4(x[tv[2]]), &n))
			return 1;
	}
	return 0;
}

static int reuse_ok(const sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p,
		    float reach)
{
	const float budget = SELF_REUSE_SAFETY * (s->reuse_wide - reach) / 6.0f;
	return drift_of(s, x) <= budget && drift_of(s, p) <= budget;
}

/* Collects the list at X = reuse_x (already this substep's x) within
 * W = reuse_wide, keeping the substep's own candidate arrays apart. Out of
 * memory, self_collect drops the pairs that do not fit, as it does for a
 * substep's own collection. */
static void reuse_collect(sim_self *s, float reach)
{
	const float wide = s->reuse_wide;
	self_collect(s, s->reuse_x, s->reuse_x, wide);
	/* The collection filled vt and ee: they become the list, and the
	 * list's old arrays the substep's. */
	self_vt *vt = s->vt;
	uint32_t vt_cap = s->vt_cap;
	self_ee *ee = s->ee;
	uint32_t ee_cap = s->ee_cap;
	s->vt = s->reuse_vt;
	s->vt_cap = s->reuse_vt_cap;
	s->ee = s->reuse_ee;
	s->ee_cap = s->reuse_ee_cap;
	s->reuse_vt = vt;
	s->reuse_vt_cap = vt_cap;
	s->reuse_vt_count = s->vt_count;
	s->reuse_ee = ee;
	s->reuse_ee_cap = ee_cap;
	s->reuse_ee_count = s->ee_count;
	s->vt_count = s->ee_count = 0;
	s->reuse_reach = reach;
	s->reuse_served = 0;
	s->reuse_builds++;
}

int self_reuse_begin(sim_self *s, const sim_vec4 *restrict x, const sim_vec4 *restrict p, float reach)
{
	if (!(reach > 0.0f) || s->orphan_count > 0 || s->reuse_x == NULL) {
		s->reuse_reach = 0.0f;
		return 0;
	}
	/* A mesh whose flat neighbours sit within the list's width keeps no
	 * list at this reach (the bench's fold: 1 cm edges, 5 mm thickness).
	 * The width depends on the reach and the rest edges alone, and the
	 * reach is the same in every substep of a frame, so no list exists in
	 * this frame either (sim_self_begin_frame drops it): skip the
	 * degeneracy check and the copy of x below, which found nothing to do
	 * and cost 1.4 % of the fold's CPU time. */
	const float wide = minf(SELF_REUSE_WIDEN * reach, SELF_REUSE_EDGES * s->base_cell);
	if (!(wide >= SELF_REUSE_MIN_WIDEN * reach)) {
		s->reuse_wide = wide;
		s->reuse_reach = 0.0f;
		return 0;
	}
	if (any_degenerate(s, x)) {
		s->reuse_reach = 0.0f;
		return 0;
	}
	if (!(s->reuse_reach == reach && reuse_ok(s, x, p, reach))) {
		/* The list (if any) no longer covers this substep. */
		if (s->reuse_reach > 0.0f && s->reuse_served < 2)
			s->reuse_wait = SELF_REUSE_WAIT;
		s->reuse_reach = 0.0f;
		if (s->reuse_wait > 0) {
			s->reuse_wait--;
			return 0;
		}
		/* A list collected at x must also cover this substep's p. */
		memcpy(s->reuse_x, x, (size_t)s->nv * sizeof *x);
		s->reuse_wide = wide;
		if (!reuse_ok(s, x, p, reach))
			return 0;
		reuse_collect(s, reach);
	}
	self_filter(s, x, p, reach, s->reuse_vt, s->reuse_vt_count, s->reuse_ee, s->reuse_ee_count);
	s->reuse_served++;
	s->reuse_hits++;
	s->hash_stale = 1;
	return 1;
}

void sim_self_begin_frame(sim_self *s)
{
	s->reuse_reach = 0.0f;
	s->reuse_wait = 0;
	/* A frame's untangling starts from a check of the whole mesh, so that
	 * it depends on the frame's start state alone (selftangle.c). */
	s->tangle_full = 1;
}

void sim_self_reuse_counts(const sim_self *s, uint64_t *hits, uint64_t *builds, uint64_t *fresh)
{
	*hits = s->reuse_hits;
	*builds = s->reuse_builds;
	*fresh = s->fresh_collects;
}
