/*
 * Welds: coincident vertices of different panels merged into one particle.
 *
 * A weld is a vertex-vertex stitch (b1 == b0) that is rigid (stitch_k 0)
 * and whose two ends lie within SIM_WELD_TOLERANCE of each other in the
 * start shape and in the rest shape: the seam the client's seam finder
 * welds (client/seams.c, 0.1 mm by default), or the same pair given by
 * hand. A soft stitch, an edge-point stitch and a pair that starts or rests
 * apart (panels sewn together over the first frames) stay stitches
 * (stitch.c).
 *
 * The vertices a weld joins, and the welds joined through shared vertices,
 * form a class found by union-find; its smallest internal index is the
 * representative. The triangles are rewritten to representatives before the
 * topology is built, so the two panels share the seam's edges and the
 * bending and shear records span the seam as across any interior edge: a
 * welded seam bends like uncut cloth instead of folding like a hinge. The
 * other members, followers, are in no triangle: they carry no mass of their
 * own (inverse mass 0, as their mass is the representative's, see
 * sim_weld_masses), no constraint, collision or self-collision reaches them,
 * and after every substep they take their representative's position and
 * velocity (sim_weld_sync), so frames keep the caller's vertex count and
 * order and welded vertices carry the same bits in every frame.
 *
 * The map depends on the description alone (positions, rest positions,
 * stitches and the internal order, itself a function of the positions), so
 * a session restored from a checkpoint rebuilds it bit for bit, and it is
 * built serially: the result does not depend on the thread count.
 */
#include "server/sim/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t find(uint32_t *parent, uint32_t i)
{
	uint32_t r = i;
	while (parent[r] != r)
		r = parent[r];
	while (parent[i] != r) {
		uint32_t next = parent[i];
		parent[i] = r;
		i = next;
	}
	return r;
}

static float dist2(const float *q, uint32_t a, uint32_t b)
{
	float dx = q[3 * (size_t)a] - q[3 * (size_t)b];
	float dy = q[3 * (size_t)a + 1] - q[3 * (size_t)b + 1];
	float dz = q[3 * (size_t)a + 2] - q[3 * (size_t)b + 2];
	return dx * dx + dy * dy + dz * dz;
}

int sim_weld_is_weld(const drape_sim_desc *d, uint32_t i)
{
	const drape_stitch *s = &d->stitches[i];
	if (s->b1 != s->b0 || d->stitch_k != 0.0f)
		return 0;
	const float tol2 = SIM_WELD_TOLERANCE * SIM_WELD_TOLERANCE;
	if (!(dist2(d->positions, s->a, s->b0) <= tol2))
		return 0;
	return d->rest_positions == NULL || dist2(d->rest_positions, s->a, s->b0) <= tol2;
}

drape_err sim_weld_build(drape_sim *sim, const drape_sim_desc *d,
			 uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err)
{
	sim->weld_rep = NULL;
	sim->weld_follower = NULL;
	sim->weld_count = 0;
	sim->weld_first = UINT32_MAX;
	uint32_t first = UINT32_MAX;
	for (uint32_t i = 0; i < d->stitch_count && first == UINT32_MAX; i++)
		if (sim_weld_is_weld(d, i))
			first = i;
	if (first == UINT32_MAX)
		return DRAPE_OK;
	const uint32_t n = sim->n;
	uint32_t *parent = malloc((size_t)n * sizeof *parent);
	if (parent == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "stitches: out of memory for the welds");
	for (uint32_t i = 0; i < n; i++)
		parent[i] = i;
	/* Linking the larger root under the smaller keeps every class's
	 * smallest index its root, whatever order the welds come in. */
	for (uint32_t i = first; i < d->stitch_count; i++) {
		if (!sim_weld_is_weld(d, i))
			continue;
		uint32_t ra = find(parent, internal(sim, d->stitches[i].a));
		uint32_t rb = find(parent, internal(sim, d->stitches[i].b0));
		if (ra < rb)
			parent[rb] = ra;
		else if (rb < ra)
			parent[ra] = rb;
	}
	uint32_t followers = 0;
	for (uint32_t i = 0; i < n; i++) {
		parent[i] = find(parent, i);
		followers += parent[i] != i;
	}
	/* A weld inside one triangle would collapse it: refuse the input
	 * rather than build a mesh the caller did not give. */
	for (uint32_t t = 0; t < d->triangle_count; t++) {
		const uint32_t *v = &d->triangles[3 * (size_t)t];
		uint32_t r0 = parent[internal(sim, v[0])], r1 = parent[internal(sim, v[1])],
			 r2 = parent[internal(sim, v[2])];
		if (r0 == r1 || r1 == r2 || r0 == r2) {
			free(parent);
			return drape_error_setf(err, DRAPE_EINVAL,
						"stitches: the welds join two vertices of triangles[%u] "
						"(%u, %u, %u), which would collapse it; stitch a "
						"triangle's vertices with a stitch_k > 0 or not at all",
						t, v[0], v[1], v[2]);
		}
	}
	sim->weld_follower = malloc((size_t)followers * sizeof *sim->weld_follower);
	if (sim->weld_follower == NULL) {
		free(parent);
		return drape_error_setf(err, DRAPE_ENOMEM, "stitches: out of memory for the welds");
	}
	for (uint32_t i = 0, k = 0; i < n; i++)
		if (parent[i] != i)
			sim->weld_follower[k++] = i;
	sim->weld_rep = parent;
	sim->weld_count = followers;
	sim->weld_first = first;
	return DRAPE_OK;
}

void sim_weld_free(drape_sim *sim)
{
	free(sim->weld_rep);
	free(sim->weld_follower);
	sim->weld_rep = NULL;
	sim->weld_follower = NULL;
	sim->weld_count = 0;
}

size_t sim_weld_bytes(const drape_sim *sim)
{
	return sim->weld_rep ? ((size_t)sim->n + sim->weld_count) * sizeof(uint32_t) : 0;
}

/*
 * A class's mass is the sum of its members' (the cloth's mass is kept), on
 * the representative: with per-vertex inverse masses, 1 / sum(1 / w_i), 0
 * (pinned) when any member is pinned; with masses from the area, the
 * rewritten triangles have already given the representative both panels'
 * share. Followers then get w = 0.
 */
void sim_weld_masses(drape_sim *sim, const float *inv_mass,
		     uint32_t (*caller)(const drape_sim *, uint32_t))
{
	if (sim->weld_rep == NULL)
		return;
	if (inv_mass != NULL) {
		/* The representative comes before its followers (it is the
		 * smallest index), so its own mass starts each class's sum. */
		for (uint32_t k = 0; k < sim->weld_count; k++) {
			uint32_t f = sim->weld_follower[k], r = sim->weld_rep[f];
			float wr = sim->x[r].w, wf = inv_mass[caller(sim, f)];
			if (wr == 0.0f || wf == 0.0f)
				sim->x[r].w = 0.0f;
			else
				sim->x[r].w = (float)(1.0 / (1.0 / (double)wr + 1.0 / (double)wf));
		}
	}
	for (uint32_t k = 0; k < sim->weld_count; k++)
		sim->x[sim->weld_follower[k]].w = 0.0f;
}

/* Followers take their representative's position and velocity (x, p and
 * v); w stays 0. Each follower reads a representative, never a follower, so
 * the order does not matter. */
void sim_weld_sync(drape_sim *sim)
{
	for (uint32_t k = 0; k < sim->weld_count; k++) {
		uint32_t f = sim->weld_follower[k], r = sim->weld_rep[f];
		sim->x[f] = (sim_vec4){sim->x[r].x, sim->x[r].y, sim->x[r].z, 0.0f};
		sim->p[f] = sim->x[f];
		sim->v[f] = sim->v[r];
	}
}

/*
 * Per-vertex properties of a class, combined and written back to every
 * member's slot of a copy of the caller's array (`tuple` floats per vertex):
 * SIM_WELD_MEAN the arithmetic mean (rest scale, friction),
 * SIM_WELD_HARMONIC the harmonic mean (stiffness scales: the members' halves
 * of the seam edges in series, as vertexprops.c combines a record's
 * vertices), SIM_WELD_MAX the largest (thickness: the seam keeps every
 * panel's clearance). A value of -1 ("the collider's", thickness and
 * friction) is left out unless every member has it. Returns NULL when src
 * is NULL or there are no welds (use src), and sets *oom when out of
 * memory.
 */
float *sim_weld_combine(const drape_sim *sim, const float *src, uint32_t tuple, int how,
			uint32_t (*caller)(const drape_sim *, uint32_t), int *oom)
{
	*oom = 0;
	if (src == NULL || sim->weld_rep == NULL)
		return NULL;
	const uint32_t n = sim->n;
	float *out = malloc((size_t)n * tuple * sizeof *out);
	double *acc = calloc((size_t)n * tuple, sizeof *acc);
	uint32_t *cnt = calloc((size_t)n * tuple, sizeof *cnt);
	if (out == NULL || acc == NULL || cnt == NULL) {
		free(out);
		free(acc);
		free(cnt);
		*oom = 1;
		return NULL;
	}
	memcpy(out, src, (size_t)n * tuple * sizeof *out);
	/* Internal order, so each class is summed in the same order. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = sim->weld_rep[i];
		for (uint32_t k = 0; k < tuple; k++) {
			float s = src[(size_t)caller(sim, i) * tuple + k];
			size_t at = (size_t)r * tuple + k;
			if (s == -1.0f)
				continue;
			if (how == SIM_WELD_MAX)
				acc[at] = cnt[at] == 0 || s > acc[at] ? s : acc[at];
			else
				acc[at] += how == SIM_WELD_HARMONIC ? 1.0 / (double)s : (double)s;
			cnt[at]++;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = sim->weld_rep[i];
		for (uint32_t k = 0; k < tuple; k++) {
			size_t at = (size_t)r * tuple + k;
			if (cnt[at] == 0)
				continue; /* every member -1 (or a single vertex): as given */
			double c = how == SIM_WELD_MAX	     ? acc[at]
				   : how == SIM_WELD_HARMONIC ? cnt[at] / acc[at]
							      : acc[at] / cnt[at];
			out[(size_t)caller(sim, i) * tuple + k] = (float)c;
		}
	}
	free(acc);
	free(cnt);
	return out;
}

/*
 * The fabric direction of the stretch edges beside a seam. compliance.c
 * takes an edge's warp fraction from its vertices' uvs; an edge from a
 * representative into a follower's panel would mix the two panels' uv
 * islands. Each triangle's edges are looked up among the stretch records
 * and, where an end is a weld's, the fraction is taken again from the uvs
 * of the triangle's own (caller's) vertices; a seam edge shared by both
 * panels takes the first triangle's.
 */
typedef struct weld_key {
	uint64_t key;
	uint32_t index;
} weld_key;

static int weld_key_cmp(const void *pa, const void *pb)
{
	const weld_key *a = pa, *b = pb;
	return (a->key > b->key) - (a->key < b->key);
}

static uint64_t edge_key(uint32_t a, uint32_t b)
{
	return a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
}

drape_err sim_weld_warp(drape_sim *sim, const drape_sim_desc *d,
			uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err)
{
	if (sim->weld_rep == NULL || d->uvs == NULL || sim->xpbd.stretch_warp == NULL)
		return DRAPE_OK;
	const uint32_t ns = sim->stretch_count;
	weld_key *kv = malloc((ns ? ns : 1) * sizeof *kv);
	uint8_t *done = calloc(ns ? ns : 1, 1);
	uint8_t *welded = calloc(sim->n, 1);
	if (kv == NULL || done == NULL || welded == NULL) {
		free(kv);
		free(done);
		free(welded);
		return drape_error_setf(err, DRAPE_ENOMEM, "uvs: out of memory for the welds");
	}
	for (uint32_t k = 0; k < sim->weld_count; k++)
		welded[sim->weld_rep[sim->weld_follower[k]]] = 1;
	for (uint32_t i = 0; i < ns; i++)
		kv[i] = (weld_key){edge_key(sim->stretch[i].a, sim->stretch[i].b), i};
	qsort(kv, ns, sizeof *kv, weld_key_cmp);
	for (uint32_t t = 0; t < d->triangle_count; t++) {
		const uint32_t *v = &d->triangles[3 * (size_t)t];
		for (int j = 0; j < 3; j++) {
			uint32_t ca = v[j], cb = v[(j + 1) % 3];
			uint32_t a = sim->weld_rep[internal(sim, ca)], b = sim->weld_rep[internal(sim, cb)];
			if (!welded[a] && !welded[b])
				continue;
			weld_key q = {edge_key(a, b), 0};
			const weld_key *hit = bsearch(&q, kv, ns, sizeof *kv, weld_key_cmp);
			if (hit == NULL || done[hit->index])
				continue;
			done[hit->index] = 1;
			sim->xpbd.stretch_warp[hit->index] =
				sim_warp_fraction((double)d->uvs[2 * (size_t)ca] - d->uvs[2 * (size_t)cb],
						  (double)d->uvs[2 * (size_t)ca + 1] - d->uvs[2 * (size_t)cb + 1]);
		}
	}
	free(kv);
	free(done);
	free(welded);
	return DRAPE_OK;
}
