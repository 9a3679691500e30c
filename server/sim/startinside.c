/*
 * Cloth that starts inside a collider: each inside patch leaves it on one
 * side (internal.h, sim_start_inside).
 *
 * The vertex contact (collider.c) pushes a point that is inside a field out
 * along the field's gradient, to the nearest surface. For a point a few
 * millimetres inside that is right. For a patch of cloth placed deep
 * through a limb it is not: DiffCloth's T-shirt at "scale": 0.08 on
 * GarmentCode's body has the level underside of each sleeve cutting
 * lengthwise through the sloping upper arm, up to 33 mm deep (the arm is
 * about 40 mm in radius), and the nearest surface of the vertices in front
 * of the arm's axis is its front, of those behind it its back. Pushed
 * apart around the arm, the edges between them span it: the arm is then
 * through the cloth, the body-feature contacts (bodypush.c, bodyedge.c)
 * hold the cloth on both of its sides, and those edges stay stretched by
 * 120 to 240 % for the whole run while the shirt hangs from them instead
 * of its shoulders (docs/garments.md has the figures).
 *
 * A patch of cloth is one surface, and it can only come out of a body
 * whole on one side. So before the first substep's solve, on the input
 * pose:
 *
 *  1. every free cloth vertex is sampled in every field collider (not the
 *     deforming ones, whose contact is not a field's); a vertex is inside
 *     when its distance is below 0 (the collider's surface, grown by its
 *     own thickness), and takes the collider where it is deepest;
 *  2. inside vertices joined by a cloth edge, in one collider, form a
 *     patch (union-find over the triangles' edges);
 *  3. a patch that is nearly flat (the length of the sum of its
 *     triangles' area-weighted normals at least STARTIN_FLAT of the sum of
 *     their areas) leaves along that mean normal N, towards the side the
 *     field's gradients of its vertices point to on the whole (the sign
 *     of N . sum of gradients): the side of the body the patch is less
 *     deep on. A patch with no such side (a closed sleeve inside an arm,
 *     its normals around the arm cancel; gradients that cancel along N)
 *     is left to the vertex contact, as before;
 *  4. each vertex of such a patch moves along that direction until it is
 *     the cloth's thickness outside, found by sphere tracing in the field
 *     (a step of the distance never crosses the surface), and is left
 *     where it was when that is more than STARTIN_REACH away: a body
 *     through the patch along its normal (an arm through a side panel) is
 *     not something a move can undo, and is drape check's to report.
 *
 * The moved vertices keep their velocity (zero at rest) and the move is
 * made to the start positions and the predictions alike, so it adds no
 * motion: the cloth's stretch pulls the patch's edges back to length in
 * the frame's solve. A start with no vertex inside is never touched, so
 * its frames are bit-identical to before.
 */
#include <math.h>
#include <stdlib.h>

#include "server/sim/internal.h"
#include "server/sim/vec.h"

/* The flatness a patch needs to have one side: |sum of area-weighted
 * normals| over the sum of areas. A patch bent by up to about 60 degrees
 * either way from its mean plane keeps 0.5. */
#define STARTIN_FLAT 0.5f
/* How far a vertex may move to get out, m: more than the depth a garment
 * starts inside a limb or torso by placement, less than a body part. */
#define STARTIN_REACH 0.1f
#define STARTIN_MIN_STEP 0.0005f
#define STARTIN_STEPS 64

static uint32_t uf_find(uint32_t *parent, uint32_t i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

/* Sphere-traces from `from` along unit d until the field of collider ci
 * is at least r; returns 1 and the point, or 0 beyond STARTIN_REACH. */
static int trace_out(const drape_sim *sim, uint32_t ci, sim_v3 from, sim_v3 d, float r, sim_v3 *out)
{
	float t = 0.0f;
	for (int k = 0; k < STARTIN_STEPS && t <= STARTIN_REACH; k++) {
		sim_v3 q = v3_add(from, v3_scale(d, t));
		float w[3] = {q.x, q.y, q.z}, dist, g[3];
		sim_colliders_sample_start(&sim->colliders, ci, w, 1, &dist, g);
		if (!isfinite(dist))
			return 0;
		if (dist >= r) {
			*out = q;
			return 1;
		}
		float step = dist < 0.0f ? -dist : r - dist;
		t += step > STARTIN_MIN_STEP ? step : STARTIN_MIN_STEP;
	}
	return 0;
}

uint32_t sim_start_inside(drape_sim *sim, float thickness)
{
	const uint32_t n = sim->n, nc = sim->colliders.count;
	if (nc == 0 || n == 0)
		return 0;
	float *xyz = malloc((size_t)n * 3 * sizeof *xyz), *dist = malloc((size_t)n * sizeof *dist);
	float *grad = malloc((size_t)n * 3 * sizeof *grad), *best = malloc((size_t)n * sizeof *best);
	float *bgrad = malloc((size_t)n * 3 * sizeof *bgrad);
	uint32_t *coll = malloc((size_t)n * sizeof *coll), *parent = malloc((size_t)n * sizeof *parent);
	/* Per patch root: sum of normals (3), sum of areas, sum of gradients (3). */
	float *acc = calloc((size_t)n * 7, sizeof *acc);
	uint32_t moved = 0, inside = 0;
	if (!xyz || !dist || !grad || !best || !bgrad || !coll || !parent || !acc)
		goto done;
	for (uint32_t i = 0; i < n; i++) {
		xyz[3 * i] = sim->x[i].x;
		xyz[3 * i + 1] = sim->x[i].y;
		xyz[3 * i + 2] = sim->x[i].z;
		best[i] = 0.0f;
		coll[i] = UINT32_MAX;
		parent[i] = i;
	}
	for (uint32_t c = 0; c < nc; c++) {
		if (!sim_colliders_sample_start(&sim->colliders, c, xyz, n, dist, grad))
			continue;
		for (uint32_t i = 0; i < n; i++)
			if (sim->x[i].w > 0.0f && dist[i] < best[i]) {
				best[i] = dist[i];
				coll[i] = c;
				for (int k = 0; k < 3; k++)
					bgrad[3 * i + k] = grad[3 * i + k];
			}
	}
	for (uint32_t i = 0; i < n; i++)
		inside += coll[i] != UINT32_MAX;
	if (inside == 0)
		goto done;
	const uint32_t *tri = sim->tris;
	for (uint32_t t = 0; t < sim->ntri; t++)
		for (int k = 0; k < 3; k++) {
			uint32_t a = tri[3 * t + k], b = tri[3 * t + (k + 1) % 3];
			if (coll[a] == UINT32_MAX || coll[a] != coll[b])
				continue;
			uint32_t ra = uf_find(parent, a), rb = uf_find(parent, b);
			if (ra != rb)
				parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
		}
	/* Each triangle's area-weighted normal counts once for each of its
	 * inside vertices, so a patch's triangles weigh by how much of them
	 * is in it. */
	for (uint32_t t = 0; t < sim->ntri; t++) {
		sim_v3 p0 = v3_of4(sim->x[tri[3 * t]]), p1 = v3_of4(sim->x[tri[3 * t + 1]]),
		       p2 = v3_of4(sim->x[tri[3 * t + 2]]);
		sim_v3 nrm = v3_cross(v3_sub(p1, p0), v3_sub(p2, p0));
		float area = v3_len(nrm);
		for (int k = 0; k < 3; k++) {
			uint32_t v = tri[3 * t + k];
			if (coll[v] == UINT32_MAX)
				continue;
			float *a = &acc[7 * (size_t)uf_find(parent, v)];
			a[0] += nrm.x, a[1] += nrm.y, a[2] += nrm.z, a[3] += area;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (coll[i] != UINT32_MAX) {
			float *a = &acc[7 * (size_t)uf_find(parent, i)];
			a[4] += bgrad[3 * i], a[5] += bgrad[3 * i + 1], a[6] += bgrad[3 * i + 2];
		}
	for (uint32_t i = 0; i < n; i++) {
		if (coll[i] == UINT32_MAX)
			continue;
		const float *a = &acc[7 * (size_t)uf_find(parent, i)];
		sim_v3 N = v3(a[0], a[1], a[2]), G = v3(a[4], a[5], a[6]);
		float nl = v3_len(N);
		if (!(nl >= STARTIN_FLAT * a[3]) || !(nl > 0.0f))
			continue;
		N = v3_scale(N, 1.0f / nl);
		float side = v3_dot(N, G);
		if (side == 0.0f)
			continue;
		sim_v3 d = side > 0.0f ? N : v3_scale(N, -1.0f), out;
		float r = sim->vthick != NULL && sim->vthick[i] >= 0.0f ? sim->vthick[i] : thickness;
		if (!trace_out(sim, coll[i], v3_of4(sim->x[i]), d, r, &out))
			continue;
		sim_v3 delta = v3_sub(out, v3_of4(sim->x[i]));
		sim->x[i].x = out.x, sim->x[i].y = out.y, sim->x[i].z = out.z;
		sim->p[i].x += delta.x, sim->p[i].y += delta.y, sim->p[i].z += delta.z;
		moved++;
	}
done:
	free(xyz);
	free(dist);
	free(grad);
	free(best);
	free(bgrad);
	free(coll);
	free(parent);
	free(acc);
	return moved;
}
