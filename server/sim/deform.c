/*
 * Deforming mesh colliders (deform.h): the animation frames, the body's
 * pose at any time, the contact against the moving triangles, and where
 * points bound to the skin are (skin.c binds them).
 *
 * The method, per substep of length dt, with r = cloth thickness + collider
 * thickness:
 *
 *  1. The body's world positions at the start (P0) and end (P1) of the
 *     substep are interpolated from the frames; a triangle tree built once
 *     is refit, when needed, to the boxes the triangles sweep from P0 to P1
 *     (bvh.h; "Kept candidates" below says when).
 *  2. For every free cloth vertex, from its start position x (where the
 *     previous substep left it, outside the body) and its predicted p, a
 *     list kept from an earlier substep or the tree gives the triangles it
 *     may meet: those within base = 2 r + 1 mm + 1.5 |p - x| plus their
 *     vertices' motion of x at the start pose, sorted by that distance. The DEFORM_NEAR nearest of
 *     any side are kept for step 3, and the DEFORM_K nearest that x is in
 *     front of (its side of their plane at P0) for step 4. A vertex the
 *     iterations later carry further than base - r from x could meet
 *     triangles left out, so it gathers again for the longer motion (its
 *     own lists only).
 *  3. The side each vertex is on is decided at the start, where it is
 *     known: x is inside the body when it lies behind the nearest feature's
 *     pseudonormal (the sum of the unit normals of the triangles tied for
 *     nearest: one for a face, two for an edge, the fan for a vertex;
 *     Baerentzen and Aanaes, "Signed distance computation using the angle
 *     weighted pseudonormal", 2005, with equal weights). An outside vertex
 *     keeps, of its candidates, the triangles whose plane it was in front
 *     of at P0; an inside one (a garment modelled into the body, or a vertex
 *     a previous substep could not free) gets one escape plane through its
 *     nearest point, along that pseudonormal.
 *  4. Each solver iteration then keeps p at distance r in front of every
 *     kept triangle's plane at P1, wherever p's projection falls within the
 *     triangle (with a margin of a quarter of r, so no seam between two
 *     triangles lets a vertex through). The side comes from the start of the
 *     substep, not from where p is now, so a vertex the body sweeps past in
 *     one substep, however far, is pushed out on the side it came from and
 *     never pulled through: this is the continuous test of a vertex against
 *     a triangle moving from P0 to P1, linearised (the plane at the end).
 *     A push of more than the relative motion possible in the substep is
 *     refused (that triangle was never in the vertex's way).
 *  5. Friction and restitution act on the motion relative to the body's
 *     surface, whose displacement over the substep at the contact is the
 *     barycentric mix of its triangle's vertex displacements P1 - P0, so a
 *     sleeve is carried by the arm; the response is collider.c's (Macklin
 *     et al. 2014, eq. 24). A vertex between two kept triangles that face
 *     each other (pinched between the thighs, in an armpit) takes friction
 *     relative to the mean of the two surfaces' motions instead, so that
 *     two surfaces sliding opposite ways cancel as Coulomb friction from
 *     both sides does, rather than the last one projected carrying it.
 *
 * Every vertex's result depends only on its own x and p and the body, so
 * the pool's split of the vertices never changes a bit.
 *
 * Kept candidates (issue 16). Step 2 searched the tree for every cloth
 * vertex in every substep, and the tree was refit every substep for it;
 * most substeps now filter a list kept from an earlier one instead.
 *
 *  - What step 2 keeps. For vertex i with start x, motion mv = |p - x| and
 *    base = 2 r + 1 mm + 1.5 mv, gather_visit keeps (of the lists' nearest)
 *    triangles t whose computed distance from x at P0 is at most
 *    lim_t = base + D_t, D_t the largest |P1 - P0| of t's vertices, so at
 *    most base + D with D = max over the body. The tree's query box is
 *    grown to base + D + the body's drift since the tree's pose (below) +
 *    DEFORM_ROUND, so the tree only saves work: the lists are what
 *    gather_visit keeps of all the body's triangles, and since the lists
 *    are sorted by (distance, index), of any superset of them, in any
 *    order.
 *  - The kept list of vertex i, gathered at its start X with the body's
 *    start pose then (Q): every triangle whose computed distance from X
 *    at Q is at most M (keep_vertex: M = base + D + DEFORM_KEEP_SLACK then,
 *    or when more than DEFORM_KEEP triangles are that near, the distance of
 *    the nearest one left out), sorted by that distance kd.
 *  - The bound. Later, with start x, moving every corner of a triangle by
 *    at most e moves each of its points by at most e (a point is a convex
 *    combination of the corners), so dist(X, t at Q) <= dist(x, t at P0)
 *    + |x - X| + max_v |P0_v - Q_v|. The tree was refit at pose B, the
 *    body's drift since is kdrift = max_v |P0_v - B_v| (begin_substep),
 *    and the list recorded kb = max_v |Q_v - B_v| when gathered, so
 *    max_v |P0_v - Q_v| <= kdrift + kb. A triangle step 2 keeps has true
 *    distance at most lim_t + rounding <= base + D + rounding, hence is
 *    within base + D + |x - X| + kdrift + kb + rounding of X at Q. So while
 *
 *        base + D + |x - X| + kdrift + kb + DEFORM_ROUND <= M   (keep_covers)
 *
 *    every triangle step 2 would keep is in the list (its computed
 *    distance from X is below M; DEFORM_ROUND = 10 um is far above the
 *    float rounding of distances for coordinates of a few metres), and
 *    filter_vertex runs gather_visit, the very same operations, on the
 *    list: the lists are the same set with the same bits, whatever thread
 *    runs it and whenever the list was gathered. A kept triangle with
 *    kd > base + D + |x - X| + kdrift + kb + DEFORM_ROUND is at least
 *    that less the drifts from x now, past lim_t, so gather_visit would
 *    refuse it: the sorted list is cut there. So the results do not depend
 *    on which substeps gathered what: a run resumed from a checkpoint gives
 *    the bits of one never stopped, and so do 1, 2 or 3 threads.
 *  - A vertex not covered (it drifted, or its iterations carried it past
 *    its safe radius further than the list covers) gathers its own list
 *    again from the tree at its x (only its own entries change, so the
 *    iterations may do it on several threads). The tree is not refit for
 *    it: its boxes hold B, and a triangle within M of x now is within
 *    M + kdrift at B, so the query grows by kdrift. When the body drifted
 *    more than half the slack since B, begin_contacts refits the tree at
 *    the current pose and gathers every list again.
 *  - While a body vertex moves more than DEFORM_KEEP_MAXDISP in a
 *    substep, no list is kept: the tree is refit every substep and
 *    searched for every vertex with the box of base alone (what the end
 *    pose needs, as before the lists), which is cheaper than lists that
 *    serve a substep or two.
 *  - test_sim_deformkeep compares every vertex's lists and projection with
 *    a collider searching the tree every substep, bit for bit, and finds
 *    them different when the drift allowed is four times the bound.
 *
 * Where the vertex goes (issue 16, the elbow bending fast and deep). The
 * DEFORM_K front-facing triangles nearest x are the ones around where the
 * vertex starts. A vertex the substep carries far (the sleeve flung down
 * the arm as the forearm snaps shut, 10 to 12 mm a substep) meets the
 * body where it ends, by a wall that was not among the nearest at its
 * start: at the inside of a bent elbow the fold's many small triangles
 * fill the list, and the forearm's wall, facing them, is left out. So a
 * vertex predicted to move more than its contact distance r (|p - x| >
 * r) also keeps, of the same triangles gather_visit accepts (front-facing
 * at the start, within lim), the DEFORM_PATH_LIST nearest its predicted
 * p at the end pose, and up to DEFORM_PATH_MAX of them not already among
 * the DEFORM_K join its planes, after them. The list is a function of the
 * same set of triangles, sorted by (distance, index), so a kept list gives
 * it bit for bit too, on any thread count. A vertex moving less than r
 * keeps exactly its former planes: slow scenes are solved as before.
 * Taking more of the nearest to x instead (24) held the elbow but put a
 * vertex of the walking suit's shoulder 2.19 mm inside the body
 * (docs/animation.md).
 */
#include "server/sim/deform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/sim/bvh.h"
#include "server/sim/pool.h"

/* Triangles kept per cloth vertex: a vertex in a crease (an armpit, the
 * inside of an elbow) meets both sides, each a fan of a few triangles. */
#define DEFORM_K 8u
/* Nearest triangles of any side kept for the inside test: a vertex's fan
 * on a body mesh. */
#define DEFORM_NEAR 8u
/* The path list ("Where the vertex goes" below): for a vertex predicted
 * to move more than its contact distance in the substep, the
 * DEFORM_PATH_LIST front-facing triangles nearest its predicted position
 * at the end pose, of which at most DEFORM_PATH_MAX not among the DEFORM_K
 * nearest to its start join its planes. */
#define DEFORM_PATH_LIST 12u
#define DEFORM_PATH_MAX 4u
/* Kept planes per cloth vertex. */
#define DEFORM_PLANES (DEFORM_K + DEFORM_PATH_MAX)
_Static_assert(DEFORM_PLANES <= 12u && DEFORM_PATH_LIST <= 12u && DEFORM_NEAR <= 8u,
	       "sim_deform_vertex_lists (deform.h) holds 12 planes, 12 path and 8 near triangles");
/* Cloth vertices per block of the parallel passes. */
#define DEFORM_BLOCK 256u
/* Triangles per block of the triangle geometry's pass on the pool. */
#define DEFORM_TRI_BLOCK 512u
/* Kept candidates (see "Kept candidates" above): at most this many per
 * cloth vertex, gathered this much further than the substep needs. */
#define DEFORM_KEEP 32u
#define DEFORM_KEEP_SLACK 0.012f
/* Lists are kept only while no body vertex moves more than this in a
 * substep: past it the drift bound spends the slack in a substep or two,
 * and gathering lists with the slack costs more than searching the tree
 * for what the substep needs (the walk's strides: feet and hands move 8 to
 * 11 mm a substep at 8 substeps a frame). */
#define DEFORM_KEEP_MAXDISP (DEFORM_KEEP_SLACK / 4.0f)
/* Covers the rounding of distances computed in float for coordinates of a
 * few metres (each well under a micrometre): 10 micrometres. */
#define DEFORM_ROUND 1e-5f

/* MODE_PINCH is MODE_FACES for a vertex between two body surfaces that
 * face each other (between the thighs, in an armpit): see classify_vertex. */
enum { MODE_NONE = 0, MODE_FACES = 1, MODE_ESCAPE = 2, MODE_PINCH = 3 };
/* Two kept triangles whose end normals have a dot product below this face
 * each other across the vertex (more than 120 degrees apart). */
#define DEFORM_PINCH_DOT (-0.5f)

/* Minimum and maximum of two numbers that are never NaN here. fminf and
 * fmaxf must order NaN and are library calls in the hot loops; these
 * compile to one instruction and give the same bits for numbers. */
static inline float fmin2(float a, float b) { return a < b ? a : b; }
static inline float fmax2(float a, float b) { return a > b ? a : b; }

/* A triangle's geometry in the current substep: the unit normal at the
 * start, and at the end its plane n1 . q = d1, the inward unit normals e[k]
 * of its edges (edge k is opposite vertex k) with e[k] . q = eo[k] on the
 * edge, and the height h[k] of vertex k over edge k, so that the
 * barycentric coordinate of a point in the plane is (e[k] . q - eo[k]) /
 * h[k]. ok is 0 for a triangle of zero area at either pose. */
typedef struct deform_tri {
	sim_v3 n0, n1;
	float d1;
	sim_v3 e[3];
	float eo[3], h[3];
	uint32_t ok;
} deform_tri;

/* A kept triangle's end geometry copied beside its vertex (deform_tri's
 * plane and edges), so that each iteration reads a vertex's few planes from
 * one place instead of from triangles scattered over the whole body: the
 * load of a scattered triangle's record was the projection's largest
 * cost. */
typedef struct deform_plane {
	sim_v3 n;
	float d;
	sim_v3 e[3];
	float eo[3], h[3];
	uint32_t tri;
} deform_plane;

struct sim_deform {
	uint32_t nv, nt;
	float *rest;
	/* The triangles, wound so that their normals face out of the body:
	 * flipped (flipped = 1) when the caller's enclose a negative volume. */
	uint32_t *tris;
	int flipped;
	float *frames;
	uint32_t count, cap;
	float start;
	sim_bvh bvh;

	/* The substep: world poses, each body vertex's displacement and the
	 * largest, and the end time and transform (the next substep's start
	 * pose is this one's end pose when they match). */
	float *P0, *P1;
	float *vdisp;
	float *vlo, *vhi; /* each body vertex's box over P0 and P1, 4 floats */
	float maxdisp;
	int have_end;
	float t_end;
	sim_rigid x_end;

	/* Triangle data computed on demand once per substep (stamp = epoch);
	 * todo: the triangles a substep's lists name, in the order first
	 * named, whose data the pool computes (prepare()). */
	deform_tri *td;
	uint32_t *stamp;
	uint32_t *todo;
	uint32_t epoch;

	/* Per cloth vertex (n of them): the candidate triangles (DEFORM_K
	 * each) and their start distances, how many, the mode, the largest
	 * push allowed, and for MODE_ESCAPE the plane and contact point. */
	uint32_t n;
	uint32_t *cand, *near;
	float *cdist, *ndist;
	uint8_t *nc, *nn;
	uint8_t *mode;
	float *reach, *safe;
	/* For MODE_FACES: how far p may move from x before any kept plane can
	 * be within r of it (the nearest plane's distance from x, less r and
	 * a rounding margin); the iterations skip a vertex closer than that. */
	float *clear;
	deform_plane *pl; /* MODE_FACES, MODE_PINCH: the nc kept planes, DEFORM_PLANES each */
	/* The path list (DEFORM_PATH_LIST each, pn[] of them: front-facing
	 * triangles by their distance dd from the predicted position at the
	 * end pose), and the predicted position the lists were gathered for
	 * (pp, 3 floats). */
	uint32_t *path;
	float *pdist;
	uint8_t *pn;
	float *pp;
	uint32_t *etri;
	float *eb;
	float *en;
	float *ec;

	/* Kept candidates, per cloth vertex: up to DEFORM_KEEP triangles
	 * sorted by (distance kd from X at the gather's start pose, index),
	 * how many (kn), X itself (kx, 3 floats), and the radius km within
	 * which the list holds every triangle, and kb, the body's drift
	 * from B when it was gathered. fresh: the vertex's list was gathered
	 * in this substep. B: the body's start pose P0 when the tree was last
	 * refit (the tree's boxes hold it). */
	uint32_t *keep;
	float *kd, *kx, *km, *kb;
	uint8_t *kn, *fresh;
	float *B;
	int kept;
	float kdrift;     /* this substep: max over body vertices of |P0 - B| */
	float keep_scale; /* tests only: the drift allowed, times this (1) */
	int keep_off;     /* tests only: every substep gathers from the tree */
	uint64_t n_filtered, n_fresh, n_rekeep;

	/* Per cloth vertex, borrowed from the sim (sim_deform_set_cloth;
	 * NULL: uniform): its thickness, to which the collider's own
	 * (cloth_extra) is added, and its friction (-1: the collider's). */
	const float *cloth_th, *cloth_fr;
	float cloth_extra;
};

void sim_deform_set_cloth(sim_deform *d, const float *thickness, const float *friction, float extra)
{
	d->cloth_th = thickness;
	d->cloth_fr = friction;
	d->cloth_extra = extra;
}

/* The contact distance of cloth vertex i: r, or its own thickness plus
 * the collider's. */
static inline float vertex_r(const sim_deform *d, uint32_t i, float r)
{
	return d->cloth_th != NULL ? d->cloth_th[i] + d->cloth_extra : r;
}

/* ---- Frames ------------------------------------------------------------- */

drape_err sim_deform_check_frames(uint32_t index, const float *frames, uint32_t count,
				  uint32_t have, uint32_t vertex_count, drape_error *err)
{
	if (count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "colliders[%u].frames: no frames (count 0)",
					index);
	if (frames == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "colliders[%u].frames: NULL with %u frames",
					index, count);
	if (vertex_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL,
					"colliders[%u].frames: the mesh has no vertices", index);
	uint64_t total = (uint64_t)have + count;
	if (total > DRAPE_MAX_COLLIDER_FRAMES)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"colliders[%u].frames: %llu frames in all, over the limit %u", index,
					(unsigned long long)total, (unsigned)DRAPE_MAX_COLLIDER_FRAMES);
	uint64_t bytes = total * vertex_count * 12u;
	if (bytes > DRAPE_MAX_COLLIDER_FRAME_BYTES)
		return drape_error_setf(err, DRAPE_ELIMIT,
					"colliders[%u].frames: %llu frames of %u vertices are %llu bytes, over "
					"the limit %llu",
					index, (unsigned long long)total, vertex_count,
					(unsigned long long)bytes,
					(unsigned long long)DRAPE_MAX_COLLIDER_FRAME_BYTES);
	uint64_t m = (uint64_t)count * vertex_count * 3u;
	for (uint64_t i = 0; i < m; i++)
		if (!isfinite(frames[i])) {
			uint64_t per = (uint64_t)vertex_count * 3u;
			return drape_error_setf(err, DRAPE_ENONFINITE,
						"colliders[%u].frames[%llu][%llu][%d]: %g is not finite",
						index, (unsigned long long)(have + i / per),
						(unsigned long long)(i % per / 3), (int)(i % 3),
						(double)frames[i]);
		}
	return DRAPE_OK;
}

static void free_cloth(sim_deform *d)
{
	free(d->cand);
	free(d->cdist);
	free(d->near);
	free(d->ndist);
	free(d->nc);
	free(d->nn);
	free(d->mode);
	free(d->reach);
	free(d->safe);
	free(d->clear);
	free(d->pl);
	d->pl = NULL;
	free(d->etri);
	free(d->eb);
	free(d->en);
	free(d->ec);
	free(d->keep);
	free(d->kd);
	free(d->kx);
	free(d->km);
	free(d->kb);
	free(d->kn);
	free(d->fresh);
	free(d->path);
	free(d->pdist);
	free(d->pn);
	free(d->pp);
	d->path = NULL;
	d->pdist = d->pp = NULL;
	d->pn = NULL;
	d->cand = d->near = d->etri = d->keep = NULL;
	d->cdist = d->ndist = d->reach = d->safe = d->clear = d->eb = d->en = d->ec = NULL;
	d->kd = d->kx = d->km = d->kb = NULL;
	d->nc = d->nn = d->mode = d->kn = d->fresh = NULL;
	d->kept = 0;
	d->n = 0;
}

void sim_deform_free(sim_deform *d)
{
	if (d == NULL)
		return;
	free(d->rest);
	free(d->tris);
	free(d->frames);
	free(d->P0);
	free(d->P1);
	free(d->vdisp);
	free(d->vlo);
	free(d->vhi);
	free(d->td);
	free(d->stamp);
	free(d->todo);
	free(d->B);
	sim_bvh_free(&d->bvh);
	free_cloth(d);
	free(d);
}

sim_deform *sim_deform_create(const float *rest, uint32_t nv, const uint32_t *tris, uint32_t nt,
			      const float *frames, uint32_t count, float frame_start)
{
	sim_deform *d = calloc(1, sizeof *d);
	if (d == NULL)
		return NULL;
	d->keep_scale = 1.0f;
	size_t pb = (size_t)nv * 3 * sizeof(float), fb = (size_t)count * pb;
	d->nv = nv;
	d->nt = nt;
	d->start = frame_start;
	d->rest = malloc(pb);
	d->tris = malloc((size_t)nt * 3 * sizeof *d->tris);
	d->frames = malloc(fb);
	d->P0 = malloc(pb);
	d->P1 = malloc(pb);
	d->vdisp = calloc(nv, sizeof *d->vdisp);
	d->vlo = calloc((size_t)nv * 4, sizeof(float));
	d->vhi = calloc((size_t)nv * 4, sizeof(float));
	d->td = calloc(nt, sizeof *d->td);
	d->stamp = calloc(nt, sizeof *d->stamp);
	d->todo = malloc((size_t)nt * sizeof *d->todo + 1);
	d->B = malloc(pb);
	if (d->rest == NULL || d->tris == NULL || d->frames == NULL || d->P0 == NULL ||
	    d->P1 == NULL || d->vdisp == NULL || d->vlo == NULL || d->vhi == NULL || d->td == NULL ||
	    d->stamp == NULL || d->todo == NULL || d->B == NULL)
		goto fail;
	memcpy(d->rest, rest, pb);
	memcpy(d->tris, tris, (size_t)nt * 3 * sizeof *d->tris);
	/* Which side is outside comes from the winding: a closed mesh whose
	 * triangles enclose a negative signed volume (divergence theorem) is
	 * wound inward, and is turned around here so that callers need not
	 * care. Summed in double in a fixed order. */
	double vol = 0.0;
	for (uint32_t t = 0; t < nt; t++) {
		const float *a = &rest[3 * (size_t)tris[3 * t]], *b = &rest[3 * (size_t)tris[3 * t + 1]];
		const float *c = &rest[3 * (size_t)tris[3 * t + 2]];
		vol += (double)a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
		       (double)a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
		       (double)a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0]);
	}
	if (vol < 0.0) {
		d->flipped = 1;
		for (uint32_t t = 0; t < nt; t++) {
			uint32_t k = d->tris[3 * t + 1];
			d->tris[3 * t + 1] = d->tris[3 * t + 2];
			d->tris[3 * t + 2] = k;
		}
	}
	memcpy(d->frames, frames, fb);
	d->count = d->cap = count;
	memcpy(d->P0, rest, pb);
	memcpy(d->P1, rest, pb);
	if (sim_bvh_build(&d->bvh, rest, d->tris, nt) != 0)
		goto fail;
	return d;
fail:
	sim_deform_free(d);
	return NULL;
}

drape_err sim_deform_append(sim_deform *d, const float *frames, uint32_t count, drape_error *err)
{
	size_t per = (size_t)d->nv * 3;
	if (d->count + count > d->cap) {
		/* Exactly what the frames need, so that the memory held is what
		 * sim_deform_bytes counts (the server's estimate). A client
		 * streaming a frame at a time does not pay a copy per frame:
		 * poses of a body are blocks large enough for glibc to map them,
		 * and realloc moves a mapping (mremap) instead of its bytes. */
		size_t cap = (size_t)d->count + count;
		float *f = realloc(d->frames, cap * per * sizeof(float));
		if (f == NULL)
			return drape_error_setf(err, DRAPE_ENOMEM, "colliders.frames: out of memory");
		d->frames = f;
		d->cap = (uint32_t)cap;
	}
	memcpy(d->frames + (size_t)d->count * per, frames, (size_t)count * per * sizeof(float));
	d->count += count;
	/* The end pose cached for the next substep may have held the old last
	 * frame; evaluate afresh. */
	d->have_end = 0;
	return DRAPE_OK;
}

uint32_t sim_deform_frame_count(const sim_deform *d)
{
	return d->count;
}

void sim_deform_pose(const sim_deform *d, float t, float *out)
{
	size_t per = (size_t)d->nv * 3;
	double f = (double)t - (double)d->start;
	if (!(f > 0.0) || d->count == 1) {
		memcpy(out, d->frames, per * sizeof(float));
		return;
	}
	if (f >= (double)(d->count - 1)) {
		memcpy(out, d->frames + (size_t)(d->count - 1) * per, per * sizeof(float));
		return;
	}
	double fl = floor(f);
	size_t i = (size_t)fl;
	float s = (float)(f - fl);
	const float *a = d->frames + i * per, *b = a + per;
	for (size_t k = 0; k < per; k++)
		out[k] = a[k] + s * (b[k] - a[k]);
}

/* ---- The substep ---------------------------------------------------------- */

static void to_world(const sim_rigid *x, float *pos, uint32_t nv)
{
	const float *r = x->r;
	for (uint32_t i = 0; i < nv; i++) {
		float *q = &pos[3 * (size_t)i];
		float a = q[0], b = q[1], c = q[2];
		q[0] = r[0] * a + r[1] * b + r[2] * c + x->t.x;
		q[1] = r[3] * a + r[4] * b + r[5] * c + x->t.y;
		q[2] = r[6] * a + r[7] * b + r[8] * c + x->t.z;
	}
}

void sim_deform_begin_substep(sim_deform *d, float t0, float t1, const sim_rigid *x0,
			      const sim_rigid *x1)
{
	if (d->have_end && d->t_end == t0 && memcmp(&d->x_end, x0, sizeof *x0) == 0) {
		float *tmp = d->P0;
		d->P0 = d->P1;
		d->P1 = tmp;
	} else {
		sim_deform_pose(d, t0, d->P0);
		to_world(x0, d->P0, d->nv);
	}
	sim_deform_pose(d, t1, d->P1);
	to_world(x1, d->P1, d->nv);
	d->have_end = 1;
	d->t_end = t1;
	d->x_end = *x1;
	/* Each vertex's motion over the substep and the largest, and while
	 * lists are kept, the body's drift since the tree's pose B (the
	 * largest |P0 - B|, "Kept candidates"), in the same pass. */
	float mx = 0.0f, m2 = 0.0f;
	const int kept = d->kept;
	for (uint32_t i = 0; i < d->nv; i++) {
		const float *a = &d->P0[3 * (size_t)i], *b = &d->P1[3 * (size_t)i];
		float l = v3_len(v3(b[0] - a[0], b[1] - a[1], b[2] - a[2]));
		d->vdisp[i] = l;
		mx = l > mx ? l : mx;
		if (kept) {
			const float *c = &d->B[3 * (size_t)i];
			sim_v3 e = v3(a[0] - c[0], a[1] - c[1], a[2] - c[2]);
			m2 = fmax2(m2, v3_dot(e, e));
		}
	}
	d->maxdisp = mx;
	/* NaN never passes a budget. */
	d->kdrift = m2 == m2 ? sqrtf(m2) : INFINITY;
	/* A new epoch invalidates every triangle's cached geometry; on wrap,
	 * clear the stamps so no stale one matches. */
	if (++d->epoch == 0) {
		memset(d->stamp, 0, (size_t)d->nt * sizeof *d->stamp);
		d->epoch = 1;
	}
}

static inline sim_v3 vat(const float *pos, uint32_t v)
{
	return v3(pos[3 * (size_t)v], pos[3 * (size_t)v + 1], pos[3 * (size_t)v + 2]);
}

float sim_deform_motion(sim_deform *d, float t0, float t1, const sim_rigid *x0, const sim_rigid *x1)
{
	/* Each vertex's normal at both poses, the sum of its triangles'
	 * area-weighted normals (the surface's, which a sliver triangle whose
	 * own normal swings under a small motion hardly moves), in the tree's
	 * box scratch (vlo at t0, vhi at t1), which refit_tree writes afresh
	 * before it reads it. */
	float *n0 = d->vlo, *n1 = d->vhi;
	memset(n0, 0, (size_t)d->nv * 4 * sizeof *n0);
	memset(n1, 0, (size_t)d->nv * 4 * sizeof *n1);
	/* The poses in the substep's buffers, whose next substep then
	 * computes its start pose afresh (the same bits as the end pose it
	 * would have reused: the same functions of the same time). */
	float *P0 = d->P0, *P1 = d->P1;
	sim_deform_pose(d, t0, P0);
	to_world(x0, P0, d->nv);
	sim_deform_pose(d, t1, P1);
	to_world(x1, P1, d->nv);
	d->have_end = 0;
	for (uint32_t t = 0; t < d->nt; t++) {
		const uint32_t *c = &d->tris[3 * (size_t)t];
		sim_v3 a0 = vat(P0, c[0]), a1 = vat(P1, c[0]);
		sim_v3 f0 = v3_cross(v3_sub(vat(P0, c[1]), a0), v3_sub(vat(P0, c[2]), a0));
		sim_v3 f1 = v3_cross(v3_sub(vat(P1, c[1]), a1), v3_sub(vat(P1, c[2]), a1));
		for (int k = 0; k < 3; k++) {
			float *p = &n0[4 * (size_t)c[k]], *q = &n1[4 * (size_t)c[k]];
			p[0] += f0.x, p[1] += f0.y, p[2] += f0.z;
			q[0] += f1.x, q[1] += f1.y, q[2] += f1.z;
		}
	}
	/* The smallest cosine of a vertex normal's turn; a vertex without a
	 * normal at either end (no triangles, or a fan that cancels) is
	 * skipped. */
	double cmin = 1.0;
	for (uint32_t v = 0; v < d->nv; v++) {
		const float *p = &n0[4 * (size_t)v], *q = &n1[4 * (size_t)v];
		double pp = (double)p[0] * p[0] + (double)p[1] * p[1] + (double)p[2] * p[2];
		double qq = (double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2];
		double l = sqrt(pp * qq);
		if (l > 0.0 && l < INFINITY) {
			double cs = ((double)p[0] * q[0] + (double)p[1] * q[1] + (double)p[2] * q[2]) / l;
			cmin = cs < cmin ? cs : cmin;
		}
	}
	return (float)acos(cmin < -1.0 ? -1.0 : cmin);
}

/* Refits the tree to the boxes the triangles sweep in this substep, and
 * makes this substep's start pose B, from which later substeps measure
 * the body's drift (kdrift): between refits, the boxes hold every
 * triangle's B pose, and a query grown by kdrift holds its pose now. */
static void refit_tree(sim_deform *d)
{
	for (uint32_t i = 0; i < d->nv; i++) {
		const float *a = &d->P0[3 * (size_t)i], *b = &d->P1[3 * (size_t)i];
		for (int k = 0; k < 3; k++) {
			d->vlo[4 * (size_t)i + k] = fmin2(a[k], b[k]);
			d->vhi[4 * (size_t)i + k] = fmax2(a[k], b[k]);
		}
	}
	sim_bvh_refit_boxes(&d->bvh, d->vlo, d->vhi, d->tris);
	memcpy(d->B, d->P0, (size_t)d->nv * 3 * sizeof *d->B);
	d->kdrift = 0.0f;
}

void sim_deform_view(const sim_deform *d, uint32_t *nv, uint32_t *nt, const uint32_t **tris,
		     const float **p0, const float **p1)
{
	*nv = d->nv;
	*nt = d->nt;
	*tris = d->tris;
	*p0 = d->P0;
	*p1 = d->P1;
}

/* Phase 1: for each cloth vertex, the nearest triangles overall (list A,
 * DEFORM_NEAR of them, for the inside test) and the nearest it is in front
 * of at the start (list B, DEFORM_K, the ones it is kept out of). Both are
 * sorted by (distance, triangle index), so the kept sets do not depend on
 * the order the tree visits in. */
typedef struct gather_one {
	const sim_deform *d;
	sim_v3 q, p;
	int far; /* p is further than r from q: keep the path list */
	float base;
	uint32_t *near, *cand, *path;
	float *ndist, *cdist, *pdist;
	uint32_t kn, kc, kp;
} gather_one;

/* Inserts (dist, t) into a sorted list of at most cap entries. */
static void list_insert(uint32_t *id, float *dist, uint32_t *count, uint32_t cap, uint32_t t,
			float dd)
{
	uint32_t k = *count;
	if (k == cap && !(dd < dist[k - 1] || (dd == dist[k - 1] && t < id[k - 1])))
		return;
	uint32_t at = k < cap ? k : cap - 1;
	while (at > 0 && (dd < dist[at - 1] || (dd == dist[at - 1] && t < id[at - 1]))) {
		dist[at] = dist[at - 1];
		id[at] = id[at - 1];
		at--;
	}
	dist[at] = dd;
	id[at] = t;
	if (k < cap)
		*count = k + 1;
}

static void gather_visit(void *ctx, uint32_t t)
{
	gather_one *g = ctx;
	const sim_deform *d = g->d;
	const uint32_t *v = &d->tris[3 * (size_t)t];
	float lim = g->base + fmax2(d->vdisp[v[0]], fmax2(d->vdisp[v[1]], d->vdisp[v[2]]));
	float bary[3];
	sim_v3 a = vat(d->P0, v[0]), b = vat(d->P0, v[1]), c = vat(d->P0, v[2]);
	/* The tree's leaves hold several triangles and their sweep, so many
	 * it lets through are further than lim from q at the start: their
	 * own box tells, before the plane and the closest point. */
	{
		const sim_v3 q = g->q;
		float lx = fmin2(a.x, fmin2(b.x, c.x)) - q.x, hx = q.x - fmax2(a.x, fmax2(b.x, c.x));
		float ly = fmin2(a.y, fmin2(b.y, c.y)) - q.y, hy = q.y - fmax2(a.y, fmax2(b.y, c.y));
		float lz = fmin2(a.z, fmin2(b.z, c.z)) - q.z, hz = q.z - fmax2(a.z, fmax2(b.z, c.z));
		float ex = fmax2(fmax2(lx, hx), 0.0f), ey = fmax2(fmax2(ly, hy), 0.0f);
		float ez = fmax2(fmax2(lz, hz), 0.0f);
		if (ex * ex + ey * ey + ez * ez > lim * lim)
			return;
	}
	/* Most triangles the boxes let through are further than lim from
	 * their plane already: reject them before the closest point. */
	sim_v3 nrm = v3_cross(v3_sub(b, a), v3_sub(c, a));
	float side = v3_dot(v3_sub(g->q, a), nrm);
	if (side * side > lim * lim * v3_dot(nrm, nrm))
		return;
	float d2 = sim_closest_on_triangle(g->q, a, b, c, bary);
	if (!(d2 <= lim * lim))
		return;
	float dist = sqrtf(d2);
	list_insert(g->near, g->ndist, &g->kn, DEFORM_NEAR, t, dist);
	/* In front of the plane at the start: the sign of (q - a) . normal,
	 * the normal left unnormalised. */
	if (side >= 0.0f) {
		list_insert(g->cand, g->cdist, &g->kc, DEFORM_K, t, dist);
		if (g->far) {
			float bp[3];
			float dp = sim_closest_on_triangle(g->p, vat(d->P1, v[0]), vat(d->P1, v[1]),
							   vat(d->P1, v[2]), bp);
			list_insert(g->path, g->pdist, &g->kp, DEFORM_PATH_LIST, t, sqrtf(dp));
		}
	}
}

/* The start of vertex i's gather for a motion of up to `mv` from x: its
 * reach (the largest push allowed) and safe radius (how far it may move in
 * the iterations before the lists must be gathered again), and the
 * visitor. Returns base. */
static float gather_setup(sim_deform *d, uint32_t i, sim_v3 q, float mv, float r, gather_one *g)
{
	/* r to touch, 2 r + 1 mm of margin, twice the motion (the constraints
	 * may carry a vertex further than its prediction). A triangle left out
	 * is further than base from x at the end of the substep, so it cannot
	 * come within r of a point within base - r of x. */
	float base = 2.0f * r + 1e-3f + 1.5f * mv;
	d->reach[i] = base + d->maxdisp;
	d->safe[i] = base - r;
	sim_v3 p = v3(d->pp[3 * (size_t)i], d->pp[3 * (size_t)i + 1], d->pp[3 * (size_t)i + 2]);
	*g = (gather_one){d,
			  q,
			  p,
			  mv > r,
			  base,
			  &d->near[(size_t)i * DEFORM_NEAR],
			  &d->cand[(size_t)i * DEFORM_K],
			  &d->path[(size_t)i * DEFORM_PATH_LIST],
			  &d->ndist[(size_t)i * DEFORM_NEAR],
			  &d->cdist[(size_t)i * DEFORM_K],
			  &d->pdist[(size_t)i * DEFORM_PATH_LIST],
			  0,
			  0,
			  0};
	return base;
}

/* Gathers vertex i's lists from the tree: every triangle gather_visit
 * accepts, whose distance from x at the start pose is at most base plus
 * the motion of its vertices, hence at most base + maxdisp. The query box
 * is grown by that, the body's drift since the tree's pose B and the
 * rounding, so the tree only saves work and never decides which triangles
 * are kept: the lists are those gather_visit would keep of all the body's
 * triangles (which is what lets a kept list give the same bits). */
static void gather_vertex(sim_deform *d, uint32_t i, sim_v3 q, float mv, float r)
{
	gather_one g;
	float base = gather_setup(d, i, q, mv, r, &g);
	/* Without kept lists (a fast body), the tree refit in this substep
	 * holds the end pose, and a vertex within base - r of x meets only
	 * triangles within base of x there: the box need not grow. The lists
	 * are then those of the triangles the tree lets through, which is
	 * still a function of x, p and the poses alone. */
	float ext = d->kept || d->keep_off ? base + d->maxdisp + d->kdrift + DEFORM_ROUND : base;
	float lo[3] = {q.x - ext, q.y - ext, q.z - ext}, hi[3] = {q.x + ext, q.y + ext, q.z + ext};
	sim_bvh_query(&d->bvh, lo, hi, gather_visit, &g);
	d->nn[i] = (uint8_t)g.kn;
	d->nc[i] = (uint8_t)g.kc;
	d->pn[i] = (uint8_t)g.kp;
}

/* ---- Kept candidates ---------------------------------------------------------- */

/* Whether vertex i's kept list holds every triangle a gather for a
 * motion of mv from q would keep (see "Kept candidates" above): with base
 * and the body's motion in this substep, the vertex's drift from X and
 * the body's drift from B must fit in the list's radius. keep_scale > 1
 * (tests only) allows more drift than is proven. */
static int keep_covers(const sim_deform *d, uint32_t i, sim_v3 q, float mv, float r)
{
	if (d->keep_off || !d->kept)
		return 0;
	float base = 2.0f * r + 1e-3f + 1.5f * mv;
	sim_v3 X = v3(d->kx[3 * (size_t)i], d->kx[3 * (size_t)i + 1], d->kx[3 * (size_t)i + 2]);
	float drift = v3_len(v3_sub(q, X)) + d->kdrift + d->kb[i];
	return base + d->maxdisp + DEFORM_ROUND + drift / d->keep_scale <= d->km[i];
}

typedef struct keep_one {
	const sim_deform *d;
	sim_v3 q;
	float m;
	uint32_t *id;
	float *dist;
	uint32_t k;
} keep_one;

/* A triangle within m of q at the start pose joins the kept list, which
 * keeps the DEFORM_KEEP + 1 nearest. */
static void keep_visit(void *ctx, uint32_t t)
{
	keep_one *g = ctx;
	const sim_deform *d = g->d;
	const uint32_t *v = &d->tris[3 * (size_t)t];
	sim_v3 a = vat(d->P0, v[0]), b = vat(d->P0, v[1]), c = vat(d->P0, v[2]);
	const sim_v3 q = g->q;
	float lx = fmin2(a.x, fmin2(b.x, c.x)) - q.x, hx = q.x - fmax2(a.x, fmax2(b.x, c.x));
	float ly = fmin2(a.y, fmin2(b.y, c.y)) - q.y, hy = q.y - fmax2(a.y, fmax2(b.y, c.y));
	float lz = fmin2(a.z, fmin2(b.z, c.z)) - q.z, hz = q.z - fmax2(a.z, fmax2(b.z, c.z));
	float ex = fmax2(fmax2(lx, hx), 0.0f), ey = fmax2(fmax2(ly, hy), 0.0f);
	float ez = fmax2(fmax2(lz, hz), 0.0f);
	if (ex * ex + ey * ey + ez * ez > g->m * g->m)
		return;
	float bary[3];
	float d2 = sim_closest_on_triangle(q, a, b, c, bary);
	if (!(d2 <= g->m * g->m))
		return;
	list_insert(g->id, g->dist, &g->k, DEFORM_KEEP + 1u, t, sqrtf(d2));
}

/* Gathers vertex i's kept list at its start position q: the triangles
 * within M of q at the start pose, M = what this substep needs plus
 * DEFORM_KEEP_SLACK. When more than DEFORM_KEEP are, the nearest are kept
 * and M shrinks to the distance of the first one left out (every triangle
 * nearer than that is in the list). kd and keep have DEFORM_KEEP + 1
 * entries per vertex, the last one scratch. The tree holds the pose B:
 * the query is grown by the body's drift since. Only vertex i's entries
 * change, so the iterations may call it on several threads. */
static void keep_vertex(sim_deform *d, uint32_t i, sim_v3 q, float mv, float r)
{
	float m = 2.0f * r + 1e-3f + 1.5f * mv + d->maxdisp + DEFORM_KEEP_SLACK;
	keep_one g = {d, q, m, &d->keep[(size_t)i * (DEFORM_KEEP + 1u)],
		      &d->kd[(size_t)i * (DEFORM_KEEP + 1u)], 0};
	float ext = m + d->kdrift + DEFORM_ROUND;
	float lo[3] = {q.x - ext, q.y - ext, q.z - ext}, hi[3] = {q.x + ext, q.y + ext, q.z + ext};
	sim_bvh_query(&d->bvh, lo, hi, keep_visit, &g);
	if (g.k > DEFORM_KEEP) {
		m = g.dist[DEFORM_KEEP];
		g.k = DEFORM_KEEP;
	}
	d->kn[i] = (uint8_t)g.k;
	d->km[i] = m;
	d->kb[i] = d->kdrift;
	d->kx[3 * (size_t)i] = q.x;
	d->kx[3 * (size_t)i + 1] = q.y;
	d->kx[3 * (size_t)i + 2] = q.z;
}

/* Vertex i's lists from its kept list (keep_covers holds): gather_visit on
 * the kept triangles, in the list's order. One whose distance kd from X at
 * B is past base + maxdisp + the drifts cannot be within base + maxdisp
 * of q now (its distance shrank by at most the drifts), so gather_visit
 * would refuse it, and as the list is sorted by kd, the rest too. */
static void filter_vertex(sim_deform *d, uint32_t i, sim_v3 q, float mv, float r)
{
	gather_one g;
	float base = gather_setup(d, i, q, mv, r, &g);
	sim_v3 X = v3(d->kx[3 * (size_t)i], d->kx[3 * (size_t)i + 1], d->kx[3 * (size_t)i + 2]);
	float far = base + d->maxdisp + v3_len(v3_sub(q, X)) + d->kdrift + d->kb[i] + DEFORM_ROUND;
	const uint32_t *keep = &d->keep[(size_t)i * (DEFORM_KEEP + 1u)];
	const float *kd = &d->kd[(size_t)i * (DEFORM_KEEP + 1u)];
	for (uint32_t j = 0; j < d->kn[i] && kd[j] <= far; j++)
		gather_visit(&g, keep[j]);
	d->nn[i] = (uint8_t)g.kn;
	d->nc[i] = (uint8_t)g.kc;
	d->pn[i] = (uint8_t)g.kp;
}

/* Vertex i's lists for a motion of mv from q, from its kept list when that
 * covers it; else its kept list is gathered again here, and serves when it
 * covers (it does unless the list overflowed), or the tree gives them.
 * Returns 1 when the kept list was gathered again. */
static int lists_vertex(sim_deform *d, uint32_t i, sim_v3 q, float mv, float r)
{
	if (d->keep_off || !d->kept) {
		gather_vertex(d, i, q, mv, r);
		return 1;
	}
	if (keep_covers(d, i, q, mv, r)) {
		filter_vertex(d, i, q, mv, r);
		return 0;
	}
	keep_vertex(d, i, q, mv, r);
	if (keep_covers(d, i, q, mv, r))
		filter_vertex(d, i, q, mv, r);
	else
		gather_vertex(d, i, q, mv, r);
	return 1;
}

typedef struct gather_ctx {
	sim_deform *d;
	const sim_vec4 *x, *p;
	float r;
	int rekeep;
} gather_ctx;

static void gather_range(void *vctx, uint32_t begin, uint32_t end)
{
	gather_ctx *c = vctx;
	sim_deform *d = c->d;
	for (uint32_t i = begin; i < end; i++) {
		d->nc[i] = 0;
		d->nn[i] = 0;
		d->pn[i] = 0;
		d->mode[i] = MODE_NONE;
		d->fresh[i] = 0;
		if (!(c->x[i].w > 0.0f)) {
			d->kn[i] = 0;
			d->km[i] = -1.0f;
			continue;
		}
		sim_v3 q = v3_of4(c->x[i]);
		float mv = v3_len(v3_sub(v3_of4(c->p[i]), q)), r = vertex_r(d, i, c->r);
		d->pp[3 * (size_t)i] = c->p[i].x;
		d->pp[3 * (size_t)i + 1] = c->p[i].y;
		d->pp[3 * (size_t)i + 2] = c->p[i].z;
		if (c->rekeep)
			keep_vertex(d, i, q, mv, r);
		d->fresh[i] = (uint8_t)(lists_vertex(d, i, q, mv, r) | c->rekeep);
	}
}

static sim_v3 unit(sim_v3 a, float *len)
{
	float l = v3_len(a);
	*len = l;
	return l > 0.0f ? v3_scale(a, 1.0f / l) : v3(0, 0, 0);
}

/* Phase 2: the start normal and end geometry of triangle t. */
static void tri_compute(const sim_deform *d, uint32_t t, deform_tri *T)
{
	const uint32_t *v = &d->tris[3 * (size_t)t];
	sim_v3 a0 = vat(d->P0, v[0]), b0 = vat(d->P0, v[1]), c0 = vat(d->P0, v[2]);
	sim_v3 a = vat(d->P1, v[0]), b = vat(d->P1, v[1]), c = vat(d->P1, v[2]);
	float l0, l1;
	T->n0 = unit(v3_cross(v3_sub(b0, a0), v3_sub(c0, a0)), &l0);
	T->n1 = unit(v3_cross(v3_sub(b, a), v3_sub(c, a)), &l1);
	T->ok = l0 > 0.0f && l1 > 0.0f;
	if (!T->ok)
		return;
	T->d1 = v3_dot(T->n1, a);
	const sim_v3 P[3] = {a, b, c};
	for (int k = 0; k < 3; k++) {
		sim_v3 p = P[(k + 1) % 3], q = P[(k + 2) % 3];
		float le;
		sim_v3 e = unit(v3_cross(T->n1, v3_sub(q, p)), &le);
		T->e[k] = e;
		T->eo[k] = v3_dot(e, p);
		T->h[k] = v3_dot(e, P[k]) - T->eo[k];
		if (!(le > 0.0f) || !(T->h[k] > 0.0f))
			T->ok = 0;
	}
}

/* Triangle t's geometry: the substep's cached copy, or when it is not
 * cached (a vertex gathering again inside the iterations, which may run on
 * several threads and so never writes the cache) computed into *tmp. The
 * two are the same bits. */
static const deform_tri *tri_get(const sim_deform *d, uint32_t t, deform_tri *tmp)
{
	if (d->stamp[t] == d->epoch)
		return &d->td[t];
	tri_compute(d, t, tmp);
	return tmp;
}

/* The cached geometry of every triangle the cloth vertices' lists name:
 * marked serially (each once, stamped with the substep's epoch), then
 * computed in blocks on the pool, each triangle into its own record with
 * tri_compute's arithmetic wherever it runs, so the cache holds the bits
 * the serial loop wrote. */
static void prepare_range(void *vctx, uint32_t begin, uint32_t end)
{
	sim_deform *d = vctx;
	for (uint32_t k = begin; k < end; k++)
		tri_compute(d, d->todo[k], &d->td[d->todo[k]]);
}

static void prepare(sim_deform *d, uint32_t n, drape_pool *pool)
{
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *lists[3] = {&d->near[(size_t)i * DEFORM_NEAR], &d->cand[(size_t)i * DEFORM_K],
					    &d->path[(size_t)i * DEFORM_PATH_LIST]};
		const uint32_t counts[3] = {d->nn[i], d->nc[i], d->pn[i]};
		for (int l = 0; l < 3; l++)
			for (uint32_t j = 0; j < counts[l]; j++) {
				uint32_t t = lists[l][j];
				if (d->stamp[t] != d->epoch) {
					d->stamp[t] = d->epoch;
					d->todo[m++] = t;
				}
			}
	}
	sim_pool_for(pool, m, DEFORM_TRI_BLOCK, prepare_range, d);
}

/* The body surface's displacement over the substep at barycentric b of
 * triangle t. */
static sim_v3 surface_motion(const sim_deform *d, uint32_t t, const float b[3])
{
	const uint32_t *v = &d->tris[3 * (size_t)t];
	sim_v3 m = v3(0, 0, 0);
	for (int k = 0; k < 3; k++)
		m = v3_add(m, v3_scale(v3_sub(vat(d->P1, v[k]), vat(d->P0, v[k])), b[k]));
	return m;
}

/* Triangle t's end plane and edges, kept beside its vertex. */
static inline deform_plane plane_of(const deform_tri *T, uint32_t t)
{
	return (deform_plane){T->n1,
			      T->d1,
			      {T->e[0], T->e[1], T->e[2]},
			      {T->eo[0], T->eo[1], T->eo[2]},
			      {T->h[0], T->h[1], T->h[2]},
			      t};
}

/* Phase 3: inside or outside at the start. Inside, the escape plane
 * through the nearest point along the pseudonormal of the nearest feature
 * (the triangles tied with the nearest within rounding share its closest
 * point); outside, the front-facing list B as gathered. */
static void classify_vertex(sim_deform *d, uint32_t i, sim_v3 x, float r)
{
	uint32_t k = d->nn[i];
	d->mode[i] = MODE_NONE;
	if (k == 0)
		return;
	const uint32_t *near = &d->near[(size_t)i * DEFORM_NEAR];
	const float *nd = &d->ndist[(size_t)i * DEFORM_NEAR];
	float tie = nd[0] * 1e-3f + 1e-7f;
	sim_v3 n0 = v3(0, 0, 0), n1 = v3(0, 0, 0);
	deform_tri tmp;
	for (uint32_t j = 0; j < k && nd[j] <= nd[0] + tie; j++) {
		const deform_tri *T = tri_get(d, near[j], &tmp);
		if (T->ok) {
			n0 = v3_add(n0, T->n0);
			n1 = v3_add(n1, T->n1);
		}
	}
	const uint32_t *v = &d->tris[3 * (size_t)near[0]];
	float b[3];
	sim_closest_on_triangle(x, vat(d->P0, v[0]), vat(d->P0, v[1]), vat(d->P0, v[2]), b);
	sim_v3 c0 = v3_add(v3_add(v3_scale(vat(d->P0, v[0]), b[0]), v3_scale(vat(d->P0, v[1]), b[1])),
			   v3_scale(vat(d->P0, v[2]), b[2]));
	float ln;
	sim_v3 en = unit(n1, &ln);
	if (nd[0] > 0.0f && v3_dot(v3_sub(x, c0), n0) < 0.0f && ln > 0.0f) {
		d->mode[i] = MODE_ESCAPE;
		d->etri[i] = near[0];
		memcpy(&d->eb[3 * (size_t)i], b, sizeof b);
		sim_v3 c1 = v3_add(v3_add(v3_scale(vat(d->P1, v[0]), b[0]), v3_scale(vat(d->P1, v[1]), b[1])),
				   v3_scale(vat(d->P1, v[2]), b[2]));
		d->en[3 * (size_t)i] = en.x;
		d->en[3 * (size_t)i + 1] = en.y;
		d->en[3 * (size_t)i + 2] = en.z;
		d->ec[3 * (size_t)i] = c1.x;
		d->ec[3 * (size_t)i + 1] = c1.y;
		d->ec[3 * (size_t)i + 2] = c1.z;
		return;
	}
	/* Of the front-facing triangles, those whose end plane x is already
	 * further from than r plus the safe radius cannot be reached before
	 * the lists are gathered again: they are dropped, keeping the order. */
	uint32_t *cand = &d->cand[(size_t)i * DEFORM_K];
	uint32_t m = 0;
	const float far = r + d->safe[i];
	float nearest = far;
	deform_plane *pl = &d->pl[(size_t)i * DEFORM_PLANES];
	/* Where the vertex goes ("Where the vertex goes"): of the
	 * triangles nearest its predicted position, those not among the
	 * DEFORM_K nearest to x, DEFORM_PATH_MAX at most, in the path list's
	 * order. */
	uint32_t extra[DEFORM_PATH_MAX];
	uint32_t ne = 0;
	const uint32_t *path = &d->path[(size_t)i * DEFORM_PATH_LIST];
	for (uint32_t j = 0; j < d->pn[i] && ne < DEFORM_PATH_MAX; j++) {
		uint32_t c2 = 0;
		while (c2 < d->nc[i] && cand[c2] != path[j])
			c2++;
		if (c2 == d->nc[i])
			extra[ne++] = path[j];
	}
	for (uint32_t j = 0; j < d->nc[i]; j++) {
		const deform_tri *T = tri_get(d, cand[j], &tmp);
		float s = v3_dot(T->n1, x) - T->d1;
		if (T->ok && s < far) {
			pl[m] = plane_of(T, cand[j]);
			cand[m++] = cand[j];
			nearest = fmin2(nearest, s);
		}
	}
	for (uint32_t j = 0; j < ne; j++) {
		const deform_tri *T = tri_get(d, extra[j], &tmp);
		float s = v3_dot(T->n1, x) - T->d1;
		if (T->ok && s < far) {
			pl[m++] = plane_of(T, extra[j]);
			nearest = fmin2(nearest, s);
		}
	}
	/* A plane at distance s from x is at least s - |p - x| from p (unit
	 * normal), so it cannot be within r of p while |p - x| < s - r. The
	 * margin covers the rounding of the dot products (coordinates of a
	 * few metres in float: well under a micrometre). */
	d->clear[i] = nearest - r - 1e-5f;
	d->nc[i] = (uint8_t)m;
	d->mode[i] = m > 0 ? MODE_FACES : MODE_NONE;
	/* A vertex with kept planes facing each other is pinched between two
	 * body parts. Each part's friction carried it with that part's own
	 * motion in turn, so the last projection won: a cloth pinched between
	 * surfaces sliding opposite ways went with one of them. Coulomb
	 * friction from two sides pressing equally cancels where their motions
	 * differ, and holds where they agree, so a pinched vertex's friction
	 * acts relative to the mean motion of the two surfaces at its nearest
	 * points (kept in ec, unused outside MODE_ESCAPE). */
	for (uint32_t j = 0; j < m && d->mode[i] == MODE_FACES; j++) {
		sim_v3 na = pl[j].n;
		for (uint32_t k2 = j + 1; k2 < m; k2++) {
			if (!(v3_dot(na, pl[k2].n) < DEFORM_PINCH_DOT))
				continue;
			sim_v3 mm = v3(0, 0, 0);
			const uint32_t pair[2] = {pl[j].tri, pl[k2].tri};
			for (int s2 = 0; s2 < 2; s2++) {
				const uint32_t *tv = &d->tris[3 * (size_t)pair[s2]];
				float bb[3];
				sim_closest_on_triangle(x, vat(d->P0, tv[0]), vat(d->P0, tv[1]), vat(d->P0, tv[2]), bb);
				mm = v3_add(mm, surface_motion(d, pair[s2], bb));
			}
			mm = v3_scale(mm, 0.5f);
			d->ec[3 * (size_t)i] = mm.x;
			d->ec[3 * (size_t)i + 1] = mm.y;
			d->ec[3 * (size_t)i + 2] = mm.z;
			d->mode[i] = MODE_PINCH;
			break;
		}
	}
}

static void classify_range(void *vctx, uint32_t begin, uint32_t end)
{
	gather_ctx *c = vctx;
	for (uint32_t i = begin; i < end; i++)
		classify_vertex(c->d, i, v3_of4(c->x[i]), vertex_r(c->d, i, c->r));
}

int sim_deform_reserve(sim_deform *d, uint32_t n)
{
	if (d->n == n && d->cand != NULL)
		return 0;
	free_cloth(d);
	size_t m = n ? n : 1;
	d->cand = malloc(m * DEFORM_K * sizeof *d->cand);
	d->cdist = malloc(m * DEFORM_K * sizeof *d->cdist);
	d->near = malloc(m * DEFORM_NEAR * sizeof *d->near);
	d->ndist = malloc(m * DEFORM_NEAR * sizeof *d->ndist);
	d->nc = calloc(m, 1);
	d->nn = calloc(m, 1);
	d->mode = calloc(m, 1);
	d->reach = calloc(m, sizeof *d->reach);
	d->safe = calloc(m, sizeof *d->safe);
	d->clear = calloc(m, sizeof *d->clear);
	d->pl = malloc(m * DEFORM_PLANES * sizeof *d->pl);
	d->path = malloc(m * DEFORM_PATH_LIST * sizeof *d->path);
	d->pdist = malloc(m * DEFORM_PATH_LIST * sizeof *d->pdist);
	d->pn = calloc(m, 1);
	d->pp = calloc(m * 3, sizeof *d->pp);
	d->etri = calloc(m, sizeof *d->etri);
	d->eb = calloc(m * 3, sizeof *d->eb);
	d->en = calloc(m * 3, sizeof *d->en);
	d->ec = calloc(m * 3, sizeof *d->ec);
	d->keep = malloc(m * (DEFORM_KEEP + 1u) * sizeof *d->keep);
	d->kd = malloc(m * (DEFORM_KEEP + 1u) * sizeof *d->kd);
	d->kx = calloc(m * 3, sizeof *d->kx);
	d->km = calloc(m, sizeof *d->km);
	d->kb = calloc(m, sizeof *d->kb);
	d->kn = calloc(m, 1);
	d->fresh = calloc(m, 1);
	if (d->cand == NULL || d->cdist == NULL || d->near == NULL || d->ndist == NULL ||
	    d->nc == NULL || d->nn == NULL || d->mode == NULL || d->reach == NULL ||
	    d->safe == NULL || d->clear == NULL || d->pl == NULL || d->etri == NULL || d->eb == NULL || d->en == NULL || d->ec == NULL ||
	    d->keep == NULL || d->kd == NULL || d->kx == NULL || d->km == NULL || d->kb == NULL || d->kn == NULL || d->fresh == NULL ||
	    d->path == NULL || d->pdist == NULL || d->pn == NULL || d->pp == NULL) {
		free_cloth(d);
		return -1;
	}
	d->n = n;
	d->kept = 0;
	return 0;
}

uint64_t sim_deform_bytes(uint32_t nv, uint32_t nt, uint32_t frames, uint32_t cloth_n)
{
	/* What sim_deform_create, sim_deform_append and sim_deform_reserve
	 * allocate: the frames; the rest pose, the two world poses and the
	 * displacements per body vertex; per triangle its indices, its cached
	 * geometry, stamp and place in the todo list, and the tree (at most
	 * 2 nt nodes, bvh.c, and its leaf order); per cloth vertex the lists
	 * of reserve(). */
	const uint64_t per_body = 12u + 24u + sizeof(float) + 32u + 12u;
	const uint64_t per_tri = 12u + sizeof(deform_tri) + 2u * sizeof(uint32_t) +
				 2u * sizeof(sim_bvh_node) + sizeof(uint32_t);
	const uint64_t per_cloth = DEFORM_K * (sizeof(uint32_t) + sizeof(float)) +
				   DEFORM_NEAR * (sizeof(uint32_t) + sizeof(float)) + DEFORM_PLANES * sizeof(deform_plane) +
				   DEFORM_PATH_LIST * (sizeof(uint32_t) + sizeof(float)) + 1u + 3u * sizeof(float) +
				   3u + 3u * sizeof(float) +
				   sizeof(uint32_t) + 9u * sizeof(float) +
				   (DEFORM_KEEP + 1u) * (sizeof(uint32_t) + sizeof(float)) + 5u * sizeof(float) + 2u;
	return (uint64_t)frames * nv * 12u + (uint64_t)nv * per_body + (uint64_t)nt * per_tri +
	       (uint64_t)(cloth_n ? cloth_n : 1) * per_cloth + sizeof(sim_deform);
}

void sim_deform_begin_contacts(sim_deform *d, const sim_vec4 *x, const sim_vec4 *p, uint32_t n,
			       float r, drape_pool *pool)
{
	/* The scratch is sized when the collider is added to a sim; a caller
	 * that drives the set directly gets it here, once. Without it there is
	 * no contact (d->n stays 0 and project() does nothing). */
	if (d->n != n && sim_deform_reserve(d, n) != 0)
		return;
	/* The body's drift since the tree's pose B (begin_substep). */
	const float drift = d->kdrift;
	/* Refit the tree and gather every list again when there are none, or
	 * when the body drifted past half the slack since the tree's pose
	 * (every list would need gathering again, and the queries grow by the
	 * drift); while the body moves faster than DEFORM_KEEP_MAXDISP, keep
	 * none and search the tree, refit, for every vertex. Which substeps do
	 * what changes no result: a vertex's lists are a fresh gather's,
	 * whichever way they were found. */
	gather_ctx c = {d, x, p, r, 0};
	const int keep = !d->keep_off && d->maxdisp <= DEFORM_KEEP_MAXDISP;
	if (!keep || !d->kept || !(drift <= 0.5f * DEFORM_KEEP_SLACK * d->keep_scale)) {
		refit_tree(d);
		d->kept = keep;
		c.rekeep = d->kept;
		d->n_rekeep++;
	}
	sim_pool_for(pool, n, DEFORM_BLOCK, gather_range, &c);
	uint32_t fresh = 0, active = 0;
	for (uint32_t i = 0; i < n; i++) {
		fresh += d->fresh[i];
		active += x[i].w > 0.0f;
	}
	d->n_fresh += fresh;
	d->n_filtered += active - fresh;
	prepare(d, n, pool);
	sim_pool_for(pool, n, DEFORM_BLOCK, classify_range, &c);
}

/* ---- Projection ----------------------------------------------------------- */


/* Push along the unit normal n by depth, then friction and restitution
 * relative to xc, the start position carried by the surface (collider.c's
 * response, the same three steps). */
static sim_v3 respond(sim_v3 p, sim_v3 xc, sim_v3 n, float depth, const sim_contact_params *cp)
{
	sim_v3 np = v3_add(p, v3_scale(n, depth));
	sim_v3 rel = v3_sub(np, xc);
	sim_v3 tan = v3_sub(rel, v3_scale(n, v3_dot(rel, n)));
	float tl = v3_len(tan);
	if (tl < cp->static_friction * depth)
		np = v3_sub(np, tan);
	else if (tl > 0.0f)
		np = v3_sub(np, v3_scale(tan, fmin2(cp->friction * depth / tl, 1.0f)));
	if (cp->restitution > 0.0f) {
		float approach = -v3_dot(v3_sub(p, xc), n);
		float out_n = v3_dot(v3_sub(np, xc), n);
		float want = cp->restitution * approach;
		if (approach > 0.0f && out_n < want)
			np = v3_add(np, v3_scale(n, want - out_n));
	}
	return np;
}

uint32_t sim_deform_project(sim_deform *d, sim_vec4 *restrict p, const sim_vec4 *restrict x,
			    uint32_t begin, uint32_t end, float r, const sim_contact_params *cp)
{
	uint32_t contacts = 0;
	if (d->n == 0)
		return 0;
	if (end > d->n)
		end = d->n;
	const float r_all = r;
	for (uint32_t i = begin; i < end; i++) {
		if (!(x[i].w > 0.0f))
			continue;
		/* The vertex's own thickness and friction (vertexprops.c). */
		r = vertex_r(d, i, r_all);
		const float tol = 0.25f * r;
		sim_contact_params cpv = *cp;
		if (d->cloth_fr != NULL && d->cloth_fr[i] >= 0.0f)
			cpv.friction = cpv.static_friction = d->cloth_fr[i];
		sim_v3 q = v3_of4(p[i]), x0 = v3_of4(x[i]);
		/* The iterations carried the vertex beyond what its lists cover:
		 * gather them again for the longer motion. Only this vertex's
		 * own lists change, and the triangles' cached geometry is a
		 * function of the poses alone, so the result is the same
		 * whoever computes it. */
		float mv = v3_len(v3_sub(q, x0));
		if (mv > d->safe[i]) {
			d->pp[3 * (size_t)i] = q.x;
			d->pp[3 * (size_t)i + 1] = q.y;
			d->pp[3 * (size_t)i + 2] = q.z;
			lists_vertex(d, i, x0, mv, r);
			classify_vertex(d, i, x0, r);
		}
		uint8_t mode = d->mode[i];
		if (mode == MODE_NONE || (mode != MODE_ESCAPE && mv < d->clear[i]))
			continue;
		int hit = 0;
		if (mode == MODE_ESCAPE) {
			sim_v3 n = v3(d->en[3 * (size_t)i], d->en[3 * (size_t)i + 1], d->en[3 * (size_t)i + 2]);
			sim_v3 c = v3(d->ec[3 * (size_t)i], d->ec[3 * (size_t)i + 1], d->ec[3 * (size_t)i + 2]);
			float s = v3_dot(v3_sub(q, c), n);
			if (s < r) {
				sim_v3 xc = v3_add(x0, surface_motion(d, d->etri[i], &d->eb[3 * (size_t)i]));
				q = respond(q, xc, n, r - s, &cpv);
				hit = 1;
			}
		} else {
			const deform_plane *pl = &d->pl[(size_t)i * DEFORM_PLANES];
			for (uint32_t j = 0; j < d->nc[i]; j++) {
				const deform_plane *T = &pl[j];
				float s = v3_dot(T->n, q) - T->d;
				if (!(s < r) || !(s > -d->reach[i]))
					continue;
				float e0 = v3_dot(T->e[0], q) - T->eo[0];
				float e1 = v3_dot(T->e[1], q) - T->eo[1];
				float e2 = v3_dot(T->e[2], q) - T->eo[2];
				if (e0 < -tol || e1 < -tol || e2 < -tol)
					continue;
				float b[3] = {fmin2(fmax2(e0 / T->h[0], 0.0f), 1.0f),
					      fmin2(fmax2(e1 / T->h[1], 0.0f), 1.0f),
					      fmin2(fmax2(e2 / T->h[2], 0.0f), 1.0f)};
				float sum = b[0] + b[1] + b[2];
				if (sum > 0.0f) {
					b[0] /= sum;
					b[1] /= sum;
					b[2] /= sum;
				} else {
					b[0] = 1.0f;
				}
				sim_v3 xc = v3_add(x0, surface_motion(d, T->tri, b));
				if (mode == MODE_PINCH)
					xc = v3_add(x0, v3(d->ec[3 * (size_t)i], d->ec[3 * (size_t)i + 1],
							   d->ec[3 * (size_t)i + 2]));
				q = respond(q, xc, T->n, r - s, &cpv);
				hit = 1;
			}
		}
		if (hit) {
			p[i].x = q.x;
			p[i].y = q.y;
			p[i].z = q.z;
			contacts++;
		}
	}
	return contacts;
}

void sim_deform_keep_stats(const sim_deform *d, uint64_t *filtered, uint64_t *fresh, uint64_t *gathers)
{
	*filtered = d->n_filtered;
	*fresh = d->n_fresh;
	*gathers = d->n_rekeep;
}

void sim_deform_keep_test(sim_deform *d, int off, float scale)
{
	d->keep_off = off;
	d->keep_scale = scale > 0.0f ? scale : 1.0f;
	d->kept = 0;
}

void sim_deform_lists(const sim_deform *d, uint32_t i, sim_deform_vertex_lists *out)
{
	memset(out, 0, sizeof *out);
	if (i >= d->n)
		return;
	out->nn = d->nn[i];
	out->nc = d->nc[i];
	out->mode = d->mode[i];
	memcpy(out->near, &d->near[(size_t)i * DEFORM_NEAR], out->nn * sizeof(uint32_t));
	memcpy(out->ndist, &d->ndist[(size_t)i * DEFORM_NEAR], out->nn * sizeof(float));
	/* With planes (MODE_FACES, MODE_PINCH), the planes' triangles: the
	 * kept front-facing ones, then the path list's; else the front-facing
	 * list as gathered. */
	for (uint32_t j = 0; j < out->nc; j++)
		out->cand[j] = d->mode[i] == MODE_FACES || d->mode[i] == MODE_PINCH
				       ? d->pl[(size_t)i * DEFORM_PLANES + j].tri
				       : d->cand[(size_t)i * DEFORM_K + j];
	out->np = d->pn[i];
	memcpy(out->path, &d->path[(size_t)i * DEFORM_PATH_LIST], out->np * sizeof(uint32_t));
	memcpy(out->pdist, &d->pdist[(size_t)i * DEFORM_PATH_LIST], out->np * sizeof(float));
	out->reach = d->reach[i];
	out->safe = d->safe[i];
	out->clear = d->clear[i];
}

/* ---- Skin ------------------------------------------------------------------- */

void sim_deform_bind(const sim_deform *d, const float local[3], sim_skin *out)
{
	sim_skin_bind(d->rest, d->tris, d->nt, local, out);
}

void sim_deform_skin_point(const sim_deform *d, const sim_skin *s, float out[3])
{
	/* The binding is in the caller's winding (sim_skin_bind). */
	const uint32_t *t = &d->tris[3 * (size_t)s->tri];
	uint32_t v[3] = {t[0], d->flipped ? t[2] : t[1], d->flipped ? t[1] : t[2]};
	sim_v3 a = vat(d->P1, v[0]), b = vat(d->P1, v[1]), c = vat(d->P1, v[2]), f[3];
	sim_v3 w = v3_add(v3_add(v3_scale(a, s->b[0]), v3_scale(b, s->b[1])), v3_scale(c, s->b[2]));
	if (sim_skin_frame(a, b, c, f))
		w = v3_add(w, v3_add(v3_add(v3_scale(f[0], s->off[0]), v3_scale(f[1], s->off[1])),
				     v3_scale(f[2], s->off[2])));
	out[0] = w.x;
	out[1] = w.y;
	out[2] = w.z;
}
