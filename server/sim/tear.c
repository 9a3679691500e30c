/*
 * Tearing: edges strained past params.tear_strain break, and the mesh is
 * cut along them by vertex splitting.
 *
 * When. The test runs at the end of each frame, on the committed positions,
 * not after every substep: a frame is the unit a client receives, so the
 * mesh a frame carries is the mesh its positions were solved on, and the
 * rebuild (below) runs at most once per frame. A crack therefore advances
 * at most one ring of vertices per frame from where it can open (see below);
 * at 24 fps and 4 substeps that is a crack speed of one edge per 1/24 s.
 *
 * What breaks. An edge (a stretch record) whose strain (l - l0) / l0 passes
 * the threshold. Records are visited serially in their fixed order, so the
 * decision does not depend on the thread count.
 *
 * How the mesh is cut (vertex splitting, as in O'Brien and Hodgins,
 * "Graphical modeling and animation of brittle fracture", SIGGRAPH 1999,
 * restricted to existing edges, and Müller et al.'s "Position Based
 * Dynamics" cloth tearing demos): around each vertex v that ends a broken
 * edge, the triangles of its fan are joined across every edge (v, u) that
 * is not broken; when that leaves k > 1 groups, v keeps the group of its
 * lowest triangle and each other group gets a new vertex (the next free
 * index) at v's position with v's velocity, so the triangles on the two
 * sides of the crack no longer share it. A broken edge inside the cloth
 * whose two ends have no other broken edge separates nothing (the fan
 * around each end stays joined through the rest of the ring): it stays
 * whole until the crack reaches it from the boundary or from a second
 * broken edge, which is how a crack grows from a notch or an edge.
 *
 * Mass. Each vertex of the created mesh keeps its total mass: its copies
 * share it in proportion to the rest area of their fans (a third of each
 * triangle), computed from the created mesh's masses and the current
 * triangles alone, in double, so that a restored torn mesh gets the same
 * bits (drape_sim_set_mesh). A vertex never split keeps its inverse mass
 * exactly. A pinned vertex's copies are pinned.
 *
 * Rebuild. Everything that depends on the topology (stretch, shear and
 * bending records and their colours and tiles, the XPBD factors, the
 * tethers, the wind chunks, the locality order, the self-collision's rest
 * neighbourhoods) is rebuilt by creating a new sim from the torn mesh, with
 * the rest shape, uvs and rest scale of each copy's origin, and moving the
 * running state into it: positions, velocities, frame counter, colliders,
 * attached pins (a copy of an attached pin is attached the same way),
 * stitches and soft pins (kept on the vertex that kept its index). The
 * locality order comes from the rest shape, so a restore builds the same
 * order and the same colours as the live run. Cost: one drape_sim_create of
 * the mesh, on the frames that split (stats.tear_ms).
 */
#include "server/sim/bodypush.h"
#include "server/sim/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct sim_tear {
	uint32_t n0, ntri;
	float *rest0;   /* n0 * 3: the created rest shape, caller's order */
	float *uv0;     /* n0 * 2, or NULL */
	float *scale0;  /* n0, or NULL */
	/* The created per-vertex properties (vertexprops.c), or NULL: a copy
	 * takes its origin's. */
	float *stiff0;  /* n0 * 3 */
	float *thick0;  /* n0 */
	float *fric0;   /* n0 */
	float *w0;      /* n0: inverse masses after create (0 = pinned) */
	uint32_t *tri0; /* ntri * 3: the created triangles */
	uint32_t n;     /* vertices now */
	uint32_t *tris; /* ntri * 3: the triangles now */
	uint32_t *origin; /* n: created vertex each vertex came from */
	uint32_t generation;
} sim_tear;

static inline uint32_t caller_of(const drape_sim *sim, uint32_t i)
{
	return sim->order ? sim->order[i] : i;
}

static inline uint32_t internal_of(const drape_sim *sim, uint32_t j)
{
	return sim->rank ? sim->rank[j] : j;
}

static double tear_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void sim_tear_free(drape_sim *sim)
{
	sim_tear *t = sim->tear;
	if (t == NULL)
		return;
	free(t->rest0);
	free(t->uv0);
	free(t->scale0);
	free(t->stiff0);
	free(t->thick0);
	free(t->fric0);
	free(t->w0);
	free(t->tri0);
	free(t->tris);
	free(t->origin);
	free(t);
	sim->tear = NULL;
}

size_t sim_tear_bytes(const drape_sim *sim)
{
	const sim_tear *t = sim->tear;
	if (t == NULL)
		return 0;
	size_t b = sizeof *t + (size_t)t->n0 * (3 + 1) * sizeof(float);
	b += t->uv0 ? (size_t)t->n0 * 2 * sizeof(float) : 0;
	b += t->scale0 ? (size_t)t->n0 * sizeof(float) : 0;
	b += (t->stiff0 ? 3u : 0u) * (size_t)t->n0 * sizeof(float);
	b += ((t->thick0 ? 1u : 0u) + (t->fric0 ? 1u : 0u)) * (size_t)t->n0 * sizeof(float);
	b += (size_t)t->ntri * 6 * sizeof(uint32_t) + (size_t)t->n * sizeof(uint32_t);
	return b;
}

drape_err sim_tear_init(drape_sim *sim, const drape_sim_desc *d, drape_error *err)
{
	const uint32_t n = d->vertex_count, nt = d->triangle_count;
	/* A copy is numbered after every created vertex, which would put it
	 * outside its object's range of consecutive vertices. */
	if (d->object_count > 1)
		return drape_error_setf(err, DRAPE_EINVAL,
					"params.tear_strain: a session of %u cloth objects cannot tear (a torn "
					"vertex's copy is numbered after every object); tear a cloth in a "
					"session of its own",
					(unsigned)d->object_count);
	sim_tear *t = calloc(1, sizeof *t);
	if (t == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "tear_strain: out of memory");
	t->n0 = t->n = n;
	t->ntri = nt;
	t->rest0 = malloc((size_t)n * 3 * sizeof *t->rest0);
	t->w0 = malloc((size_t)n * sizeof *t->w0);
	t->tri0 = malloc((size_t)nt * 3 * sizeof *t->tri0);
	t->tris = malloc((size_t)nt * 3 * sizeof *t->tris);
	t->origin = malloc((size_t)n * sizeof *t->origin);
	t->uv0 = d->uvs ? malloc((size_t)n * 2 * sizeof *t->uv0) : NULL;
	t->scale0 = d->rest_scale ? malloc((size_t)n * sizeof *t->scale0) : NULL;
	t->stiff0 = d->stiffness_scale ? malloc((size_t)n * 3 * sizeof *t->stiff0) : NULL;
	t->thick0 = d->vertex_thickness ? malloc((size_t)n * sizeof *t->thick0) : NULL;
	t->fric0 = d->vertex_friction ? malloc((size_t)n * sizeof *t->fric0) : NULL;
	sim->tear = t;
	if (!t->rest0 || !t->w0 || !t->tri0 || !t->tris || !t->origin || (d->uvs && !t->uv0) ||
	    (d->rest_scale && !t->scale0) || (d->stiffness_scale && !t->stiff0) ||
	    (d->vertex_thickness && !t->thick0) || (d->vertex_friction && !t->fric0)) {
		sim_tear_free(sim);
		return drape_error_setf(err, DRAPE_ENOMEM,
					"tear_strain: out of memory for the mesh copy (%u vertices)", n);
	}
	const float *rest = d->rest_positions ? d->rest_positions : d->positions;
	memcpy(t->rest0, rest, (size_t)n * 3 * sizeof *t->rest0);
	if (t->uv0)
		memcpy(t->uv0, d->uvs, (size_t)n * 2 * sizeof *t->uv0);
	if (t->scale0)
		memcpy(t->scale0, d->rest_scale, (size_t)n * sizeof *t->scale0);
	if (t->stiff0)
		memcpy(t->stiff0, d->stiffness_scale, (size_t)n * 3 * sizeof *t->stiff0);
	if (t->thick0)
		memcpy(t->thick0, d->vertex_thickness, (size_t)n * sizeof *t->thick0);
	if (t->fric0)
		memcpy(t->fric0, d->vertex_friction, (size_t)n * sizeof *t->fric0);
	memcpy(t->tri0, d->triangles, (size_t)nt * 3 * sizeof *t->tri0);
	memcpy(t->tris, d->triangles, (size_t)nt * 3 * sizeof *t->tris);
	for (uint32_t j = 0; j < n; j++) {
		t->origin[j] = j;
		t->w0[j] = sim->x[internal_of(sim, j)].w;
	}
	return DRAPE_OK;
}

/* Rest area of triangle k of tris over the rest shape rest0 (via origin). */
static double rest_area(const sim_tear *t, const uint32_t *tris, const uint32_t *origin, uint32_t k)
{
	const float *a = &t->rest0[3 * (size_t)origin[tris[3 * (size_t)k]]];
	const float *b = &t->rest0[3 * (size_t)origin[tris[3 * (size_t)k + 1]]];
	const float *c = &t->rest0[3 * (size_t)origin[tris[3 * (size_t)k + 2]]];
	double u[3], v[3];
	for (int i = 0; i < 3; i++) {
		u[i] = (double)b[i] - (double)a[i];
		v[i] = (double)c[i] - (double)a[i];
	}
	double x = u[1] * v[2] - u[2] * v[1], y = u[2] * v[0] - u[0] * v[2],
	       z = u[0] * v[1] - u[1] * v[0];
	return 0.5 * sqrt(x * x + y * y + z * z);
}

/*
 * Inverse masses of a torn mesh (file comment, "Mass"): w[j] from the
 * created masses w0 and the share of its origin's fan area that j's fan
 * holds. scratch: 2 * n0 doubles and n0 uint32.
 */
static void split_masses(const sim_tear *t, uint32_t n, const uint32_t *tris,
			 const uint32_t *origin, float *w, double *area, double *total,
			 uint32_t *copies)
{
	memset(area, 0, (size_t)n * sizeof *area);
	memset(total, 0, (size_t)t->n0 * sizeof *total);
	memset(copies, 0, (size_t)t->n0 * sizeof *copies);
	for (uint32_t k = 0; k < t->ntri; k++) {
		double a3 = rest_area(t, tris, origin, k) / 3.0;
		for (int c = 0; c < 3; c++)
			area[tris[3 * (size_t)k + c]] += a3;
	}
	for (uint32_t j = 0; j < n; j++) {
		total[origin[j]] += area[j];
		copies[origin[j]]++;
	}
	/* A copy whose fan has no area (only zero-area triangles) would get
	 * no mass: the copies of such an origin share its mass equally. */
	uint32_t *flat = copies; /* high bit marks "split equally" */
	for (uint32_t j = 0; j < n; j++)
		if (!(area[j] > 0.0))
			flat[origin[j]] |= 0x80000000u;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t o = origin[j], count = copies[o] & 0x7fffffffu;
		float w0 = t->w0[o];
		if (count <= 1 || w0 == 0.0f) {
			w[j] = w0;
			continue;
		}
		double share = (copies[o] & 0x80000000u) ? 1.0 / count : area[j] / total[o];
		w[j] = (float)((double)w0 / share);
	}
}

/*
 * The self-collision's joins of a torn mesh: the stitches' (sim.c) and the
 * split vertices, each copy with its origin and with the origin's other
 * copies. At the split the two lips of the crack coincide, every vertex on
 * one side touching the triangles on the other that shared it a moment
 * ago: as at a seam, such a pair is neither pushed apart nor guarded (the
 * material separates the lips), while the rest of the pieces collide as
 * before. Without this the self-collision spends seconds per frame
 * fighting pairs at distance 0 (figures in the issue note).
 */
static drape_err tear_joins(drape_sim *ns, uint32_t n, const sim_tear *t, const uint32_t *origin,
			    drape_error *err)
{
	if (ns->self == NULL)
		return DRAPE_OK;
	/* Copies grouped by origin: first[o] .. the copies' list. */
	uint32_t *cnt = calloc((size_t)t->n0 + 1, sizeof *cnt);
	uint32_t *list = malloc(((size_t)n - t->n0 + 1) * sizeof *list);
	uint64_t pairs = 4ull * ns->stitch_count;
	if (cnt == NULL || list == NULL) {
		free(cnt);
		free(list);
		return drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for the joins");
	}
	for (uint32_t j = t->n0; j < n; j++)
		cnt[origin[j] + 1]++;
	for (uint32_t o = 0; o < t->n0; o++) {
		uint64_t k = cnt[o + 1];
		pairs += k + k * (k > 0 ? k - 1 : 0) / 2;
		cnt[o + 1] += cnt[o];
	}
	for (uint32_t j = t->n0; j < n; j++)
		list[cnt[origin[j]]++] = j;
	/* cnt[o] now ends o's copies; they start where o - 1's end. */
	uint32_t *pv = pairs > 0 ? malloc(2 * (size_t)pairs * sizeof *pv) : NULL;
	if (pairs > 0 && pv == NULL) {
		free(cnt);
		free(list);
		return drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for the joins");
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < ns->stitch_count; i++) {
		const sim_stitch *s = &ns->stitch[i];
		pv[2 * k] = s->a;
		pv[2 * k++ + 1] = s->b0;
		if (s->b1 != s->b0) {
			pv[2 * k] = s->a;
			pv[2 * k++ + 1] = s->b1;
		}
	}
	for (uint32_t o = 0; o < t->n0; o++) {
		uint32_t b = o ? cnt[o - 1] : 0, e = cnt[o];
		for (uint32_t x = b; x < e; x++) {
			pv[2 * k] = internal_of(ns, o);
			pv[2 * k++ + 1] = internal_of(ns, list[x]);
			for (uint32_t y = x + 1; y < e; y++) {
				pv[2 * k] = internal_of(ns, list[x]);
				pv[2 * k++ + 1] = internal_of(ns, list[y]);
			}
		}
	}
	drape_err rc = sim_self_set_joins(ns->self, pv, k, err);
	free(pv);
	free(cnt);
	free(list);
	return rc;
}

drape_err sim_tear_joins(drape_sim *sim, drape_error *err)
{
	return tear_joins(sim, sim->tear->n, sim->tear, sim->tear->origin, err);
}

/* Sorts the attachments by vertex for the step (sim.c keeps them so). */
static int attach_vertex_cmp(const void *pa, const void *pb)
{
	const sim_attach *a = pa, *b = pb;
	return (a->vertex > b->vertex) - (a->vertex < b->vertex);
}

/*
 * Replaces sim by one built on the mesh (n, tris, origin) with positions
 * xyz and velocities vel (caller's order). tris and origin are taken over
 * on success (they become sim->tear's); on failure sim is unchanged and the
 * caller frees them.
 */
static drape_err rebuild(drape_sim *sim, uint32_t n, uint32_t *tris, uint32_t *origin,
			 const float *xyz, const float *vel, uint32_t generation, drape_error *err)
{
	sim_tear *t = sim->tear;
	float *pos = malloc((size_t)n * 3 * sizeof *pos);
	float *w = malloc((size_t)n * sizeof *w);
	float *uv = t->uv0 ? malloc((size_t)n * 2 * sizeof *uv) : NULL;
	float *sc = t->scale0 ? malloc((size_t)n * sizeof *sc) : NULL;
	float *stiff = t->stiff0 ? malloc((size_t)n * 3 * sizeof *stiff) : NULL;
	float *thick = t->thick0 ? malloc((size_t)n * sizeof *thick) : NULL;
	float *fric = t->fric0 ? malloc((size_t)n * sizeof *fric) : NULL;
	double *area = malloc(((size_t)n + 2 * (size_t)t->n0) * sizeof *area);
	uint32_t *copies = malloc((size_t)t->n0 * sizeof *copies);
	int32_t *by_origin = malloc((size_t)t->n0 * sizeof *by_origin);
	drape_sim *ns = NULL;
	drape_err rc = DRAPE_OK;
	if (!pos || !w || (t->uv0 && !uv) || (t->scale0 && !sc) || (t->stiff0 && !stiff) ||
	    (t->thick0 && !thick) || (t->fric0 && !fric) || !area || !copies || !by_origin) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory rebuilding %u vertices",
				      n);
		goto out;
	}
	for (uint32_t j = 0; j < n; j++) {
		uint32_t o = origin[j];
		memcpy(&pos[3 * (size_t)j], &t->rest0[3 * (size_t)o], 3 * sizeof *pos);
		if (uv)
			memcpy(&uv[2 * (size_t)j], &t->uv0[2 * (size_t)o], 2 * sizeof *uv);
		if (sc)
			sc[j] = t->scale0[o];
		if (stiff)
			memcpy(&stiff[3 * (size_t)j], &t->stiff0[3 * (size_t)o], 3 * sizeof *stiff);
		if (thick)
			thick[j] = t->thick0[o];
		if (fric)
			fric[j] = t->fric0[o];
	}
	split_masses(t, n, tris, origin, w, area, area + n, copies);

	drape_sim_desc d;
	drape_sim_desc_default(&d);
	d.positions = pos;
	d.vertex_count = n;
	d.triangles = tris;
	d.triangle_count = t->ntri;
	d.inv_mass = w;
	d.uvs = uv;
	d.rest_scale = sc;
	d.stiffness_scale = stiff;
	d.vertex_thickness = thick;
	d.vertex_friction = fric;
	d.params = sim->params;
	/* The new sim must not make its own copy of the created mesh: it
	 * takes this one's below. */
	d.params.tear_strain = 0.0f;
	d.stitch_k = sim->stitch_k;
	d.sew_speed = sim->sew_speed;
	d.pool = sim->pool;
	if ((rc = sim_create_ex(&d, sim->flags, &ns, err)) != DRAPE_OK)
		goto out;
	ns->params.tear_strain = sim->params.tear_strain;

	/* Running state, in the new numbering. */
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = internal_of(ns, j);
		const float *q = &xyz[3 * (size_t)j], *u = &vel[3 * (size_t)j];
		float wi = ns->x[i].w;
		ns->x[i] = (sim_vec4){q[0], q[1], q[2], wi};
		ns->p[i] = ns->x[i];
		ns->v[i] = wi == 0.0f ? (sim_vec4){0.0f, 0.0f, 0.0f, 0.0f}
				      : (sim_vec4){u[0], u[1], u[2], 0.0f};
	}
	ns->frame = sim->frame;

	/* Stitches and soft pins stay on the vertex that kept its index. */
	if (sim->stitch_count > 0) {
		ns->stitch = malloc((size_t)sim->stitch_count * sizeof *ns->stitch);
		if (ns->stitch == NULL) {
			rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for the stitches");
			goto out;
		}
		for (uint32_t k = 0; k < sim->stitch_count; k++) {
			sim_stitch s = sim->stitch[k];
			s.a = internal_of(ns, caller_of(sim, s.a));
			s.b0 = internal_of(ns, caller_of(sim, s.b0));
			s.b1 = internal_of(ns, caller_of(sim, s.b1));
			ns->stitch[k] = s;
		}
		ns->stitch_count = sim->stitch_count;
		ns->topo.stitches = sim->topo.stitches;
	}
	if (sim->softpin_count > 0) {
		ns->softpin = malloc((size_t)sim->softpin_count * sizeof *ns->softpin);
		if (ns->softpin == NULL) {
			rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for the soft pins");
			goto out;
		}
		for (uint32_t k = 0; k < sim->softpin_count; k++) {
			sim_softpin s = sim->softpin[k];
			s.v = internal_of(ns, caller_of(sim, s.v));
			ns->softpin[k] = s;
		}
		ns->softpin_count = sim->softpin_count;
	}
	if ((rc = tear_joins(ns, n, t, origin, err)) != DRAPE_OK)
		goto out;

	/* Attached pins: every copy of an attached vertex is attached alike. */
	for (uint32_t o = 0; o < t->n0; o++)
		by_origin[o] = -1;
	for (uint32_t a = 0; a < sim->attach_count; a++)
		by_origin[t->origin[caller_of(sim, sim->attach[a].vertex)]] = (int32_t)a;
	uint32_t na = 0;
	for (uint32_t j = 0; j < n; j++)
		na += by_origin[origin[j]] >= 0;
	if (na > 0) {
		ns->attach = malloc((size_t)na * sizeof *ns->attach);
		if (ns->attach == NULL) {
			rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for the pins");
			goto out;
		}
		for (uint32_t j = 0; j < n; j++)
			if (by_origin[origin[j]] >= 0) {
				sim_attach at = sim->attach[by_origin[origin[j]]];
				at.vertex = internal_of(ns, j);
				ns->attach[ns->attach_count++] = at;
			}
		qsort(ns->attach, ns->attach_count, sizeof *ns->attach, attach_vertex_cmp);
	}

	/* Colliders move over, their per-vertex scratch sized for n first so
	 * that nothing can fail after the swap. */
	if (sim_colliders_set_cloth_n(&sim->colliders, n) != 0) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for collider scratch");
		goto out;
	}
	if (ns->bodypush != NULL && (rc = sim_bodypush_reserve(ns->bodypush, &sim->colliders, err)) != DRAPE_OK)
		goto out;
	if (ns->bodyedge != NULL && (rc = sim_bodyedge_reserve(ns->bodyedge, &sim->colliders, err)) != DRAPE_OK)
		goto out;
	sim_collider_set cs = ns->colliders;
	ns->colliders = sim->colliders;
	sim->colliders = cs;

	ns->tear = t;
	sim->tear = NULL;
	t->n = n;
	free(t->tris);
	free(t->origin);
	t->tris = tris;
	t->origin = origin;
	t->generation = generation;

	drape_sim old = *sim;
	*sim = *ns;
	*ns = old;
	/* The colliders came from the old sim: they read the new one's
	 * per-vertex thickness and friction (the old arrays go with ns). */
	sim->colliders.cloth_thickness = sim->vthick;
	sim->colliders.cloth_friction = sim->vfric;
	drape_sim_set_pool(sim, sim->pool);
out:
	drape_sim_destroy(ns);
	free(pos);
	free(w);
	free(uv);
	free(sc);
	free(stiff);
	free(thick);
	free(fric);
	free(area);
	free(copies);
	free(by_origin);
	return rc;
}

static int pair_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
	return (a > b) - (a < b);
}

static inline uint64_t pair_key(uint32_t a, uint32_t b)
{
	return a < b ? ((uint64_t)a << 32) | b : ((uint64_t)b << 32) | a;
}

static int is_torn(const uint64_t *torn, uint32_t count, uint32_t a, uint32_t b)
{
	uint64_t k = pair_key(a, b);
	uint32_t lo = 0, hi = count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (torn[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < count && torn[lo] == k;
}

static uint32_t uf_find(uint32_t *parent, uint32_t i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

/*
 * Splits the vertices the torn edges separate (file comment): fills
 * out_tris (a copy of tris with split corners renumbered) and parent[k],
 * the vertex new vertex n + k was split from; returns the new vertex count.
 * Decisions read only tris, so the order vertices are visited in does not
 * change the result. Returns 0 on allocation failure.
 */
static uint32_t split_vertices(uint32_t n, uint32_t ntri, const uint32_t *tris,
			       const uint64_t *torn, uint32_t ntorn, uint32_t *out_tris,
			       uint32_t *parent)
{
	uint32_t *start = calloc((size_t)n + 1, sizeof *start);
	uint32_t *corner = malloc((size_t)ntri * 3 * sizeof *corner);
	uint8_t *mark = calloc(n, 1);
	uint32_t *uf = NULL, *label = NULL;
	uint32_t result = 0;
	if (!start || !corner || !mark)
		goto out;
	for (size_t k = 0; k < (size_t)ntri * 3; k++)
		start[tris[k] + 1]++;
	uint32_t maxfan = 0;
	for (uint32_t v = 0; v < n; v++) {
		maxfan = start[v + 1] > maxfan ? start[v + 1] : maxfan;
		start[v + 1] += start[v];
	}
	{
		uint32_t *fill = malloc((size_t)n * sizeof *fill);
		if (fill == NULL)
			goto out;
		memcpy(fill, start, (size_t)n * sizeof *fill);
		for (uint32_t k = 0; k < ntri * 3u; k++)
			corner[fill[tris[k]]++] = k;
		free(fill);
	}
	uf = malloc(((size_t)maxfan + 1) * sizeof *uf);
	label = malloc(((size_t)maxfan + 1) * sizeof *label);
	if (!uf || !label)
		goto out;
	for (uint32_t e = 0; e < ntorn; e++) {
		mark[torn[e] >> 32] = 1;
		mark[torn[e] & 0xffffffffu] = 1;
	}
	memcpy(out_tris, tris, (size_t)ntri * 3 * sizeof *out_tris);
	uint32_t nn = n;
	for (uint32_t v = 0; v < n; v++) {
		if (!mark[v])
			continue;
		const uint32_t *fan = &corner[start[v]];
		uint32_t k = start[v + 1] - start[v];
		for (uint32_t i = 0; i < k; i++)
			uf[i] = i;
		/* Two triangles of the fan are joined across a shared edge
		 * (v, u) that is not torn. */
		for (uint32_t i = 0; i < k; i++) {
			uint32_t ti = fan[i] / 3, ci = fan[i] % 3;
			uint32_t ai = tris[3 * ti + (ci + 1) % 3], bi = tris[3 * ti + (ci + 2) % 3];
			for (uint32_t j = i + 1; j < k; j++) {
				uint32_t tj = fan[j] / 3, cj = fan[j] % 3;
				uint32_t aj = tris[3 * tj + (cj + 1) % 3], bj = tris[3 * tj + (cj + 2) % 3];
				const uint32_t us[2] = {ai, bi};
				for (int q = 0; q < 2; q++) {
					uint32_t u = us[q];
					if ((u == aj || u == bj) && !is_torn(torn, ntorn, v, u)) {
						uint32_t ri = uf_find(uf, i), rj = uf_find(uf, j);
						if (ri != rj)
							uf[ri > rj ? ri : rj] = ri < rj ? ri : rj;
					}
				}
			}
		}
		/* Groups in the order of their first (lowest) triangle; the
		 * first keeps v. */
		uint32_t groups = 0;
		for (uint32_t i = 0; i < k; i++)
			label[i] = UINT32_MAX;
		for (uint32_t i = 0; i < k; i++) {
			uint32_t r = uf_find(uf, i);
			if (label[r] == UINT32_MAX) {
				label[r] = groups == 0 ? v : nn + groups - 1;
				groups++;
			}
			out_tris[fan[i]] = label[r];
		}
		for (uint32_t g = 1; g < groups; g++)
			parent[nn - n + g - 1] = v;
		if (groups > 1)
			nn += groups - 1;
	}
	result = nn;
out:
	free(start);
	free(corner);
	free(mark);
	free(uf);
	free(label);
	return result;
}

drape_err sim_tear_frame(drape_sim *sim, drape_sim_stats *stats, drape_error *err)
{
	sim_tear *t = sim->tear;
	const float thr = sim->params.tear_strain;
	if (stats != NULL) {
		stats->torn_edges = 0;
		stats->split_vertices = 0;
		stats->tear_ms = 0.0;
		stats->topology = t ? t->generation : 0;
	}
	if (t == NULL || !(thr > 0.0f))
		return DRAPE_OK;
	double t0 = tear_now_ms();
	/* Serially, in record order: the same edges at any thread count. */
	uint32_t ntorn = 0;
	for (uint32_t e = 0; e < sim->stretch_count; e++) {
		const sim_dist *c = &sim->stretch[e];
		float l = v3_len(v3_sub(v3_of4(sim->x[c->a]), v3_of4(sim->x[c->b])));
		ntorn += (l - c->rest) / c->rest > thr;
	}
	if (stats != NULL)
		stats->torn_edges = ntorn;
	if (ntorn == 0)
		return DRAPE_OK;
	const uint32_t n = t->n, ntri = t->ntri;
	uint64_t *torn = malloc((size_t)ntorn * sizeof *torn);
	uint32_t *tris = malloc((size_t)ntri * 3 * sizeof *tris);
	uint32_t *parent = malloc((size_t)ntri * 3 * sizeof *parent);
	uint32_t *origin = NULL;
	float *xyz = NULL, *vel = NULL;
	drape_err rc = DRAPE_OK;
	if (!torn || !tris || !parent) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for %u torn edges", ntorn);
		goto fail;
	}
	uint32_t k = 0;
	for (uint32_t e = 0; e < sim->stretch_count; e++) {
		const sim_dist *c = &sim->stretch[e];
		float l = v3_len(v3_sub(v3_of4(sim->x[c->a]), v3_of4(sim->x[c->b])));
		if ((l - c->rest) / c->rest > thr)
			torn[k++] = pair_key(caller_of(sim, c->a), caller_of(sim, c->b));
	}
	qsort(torn, ntorn, sizeof *torn, pair_cmp);
	uint32_t nn = split_vertices(n, ntri, t->tris, torn, ntorn, tris, parent);
	if (nn == 0) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory splitting vertices");
		goto fail;
	}
	if (nn == n) {
		/* Broken edges inside the cloth that separate nothing yet. */
		free(torn);
		free(tris);
		free(parent);
		if (stats != NULL)
			stats->tear_ms = tear_now_ms() - t0;
		return DRAPE_OK;
	}
	origin = malloc((size_t)nn * sizeof *origin);
	xyz = malloc((size_t)nn * 3 * sizeof *xyz);
	vel = malloc((size_t)nn * 3 * sizeof *vel);
	if (!origin || !xyz || !vel) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "tear: out of memory for %u vertices", nn);
		goto fail;
	}
	drape_sim_get_state(sim, xyz, vel, NULL);
	memcpy(origin, t->origin, (size_t)n * sizeof *origin);
	for (uint32_t j = n; j < nn; j++) {
		uint32_t p = parent[j - n];
		origin[j] = t->origin[p];
		memcpy(&xyz[3 * (size_t)j], &xyz[3 * (size_t)p], 3 * sizeof *xyz);
		memcpy(&vel[3 * (size_t)j], &vel[3 * (size_t)p], 3 * sizeof *vel);
	}
	if ((rc = rebuild(sim, nn, tris, origin, xyz, vel, t->generation + 1, err)) != DRAPE_OK)
		goto fail;
	free(torn);
	free(parent);
	free(xyz);
	free(vel);
	if (stats != NULL) {
		stats->split_vertices = nn - n;
		stats->topology = sim->tear->generation;
		stats->tear_ms = tear_now_ms() - t0;
	}
	return DRAPE_OK;
fail:
	free(torn);
	free(tris);
	free(parent);
	free(origin);
	free(xyz);
	free(vel);
	return rc;
}

/* ---- Public ---------------------------------------------------------------- */

uint32_t drape_sim_topology_generation(const drape_sim *sim)
{
	return sim->tear ? sim->tear->generation : 0;
}

drape_err drape_sim_get_mesh(const drape_sim *sim, uint32_t *triangles, uint32_t *origin,
			     drape_error *err)
{
	const sim_tear *t = sim->tear;
	if (t == NULL)
		return drape_error_setf(err, DRAPE_ESTATE,
					"mesh: only a sim created with params.tear_strain > 0 keeps "
					"its mesh (the others' is the one they were created with)");
	if (triangles != NULL)
		memcpy(triangles, t->tris, (size_t)t->ntri * 3 * sizeof *triangles);
	if (origin != NULL)
		memcpy(origin, t->origin, (size_t)t->n * sizeof *origin);
	return DRAPE_OK;
}

drape_err drape_sim_set_mesh(drape_sim *sim, uint32_t vertex_count, const uint32_t *triangles,
			     const uint32_t *origin, uint32_t generation, drape_error *err)
{
	sim_tear *t = sim->tear;
	if (t == NULL)
		return drape_error_setf(err, DRAPE_ESTATE,
					"mesh: the sim was created without params.tear_strain");
	if (t->generation != 0 || t->n != t->n0)
		return drape_error_setf(err, DRAPE_ESTATE, "mesh: the sim is already torn");
	if (triangles == NULL || origin == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: NULL",
					triangles == NULL ? "triangles" : "origin");
	/* Splitting gives each triangle corner at most its own vertex. */
	if (vertex_count < t->n0 || (uint64_t)vertex_count > (uint64_t)t->n0 + 3ull * t->ntri)
		return drape_error_setf(err, DRAPE_ERANGE,
					"vertex_count: %u is outside [%u, %llu] for this mesh",
					vertex_count, t->n0,
					(unsigned long long)t->n0 + 3ull * t->ntri);
	for (uint32_t j = 0; j < vertex_count; j++)
		if (j < t->n0 ? origin[j] != j : origin[j] >= t->n0)
			return drape_error_setf(err, DRAPE_EINVAL,
						"origin[%u]: %u is not a vertex this one can come from",
						j, origin[j]);
	for (size_t k = 0; k < (size_t)t->ntri * 3; k++)
		if (triangles[k] >= vertex_count || origin[triangles[k]] != t->tri0[k])
			return drape_error_setf(err, DRAPE_EINVAL,
						"triangles[%zu][%zu]: %u is not a split of vertex %u",
						k / 3, k % 3, triangles[k], t->tri0[k]);
	uint32_t *tris = malloc((size_t)t->ntri * 3 * sizeof *tris);
	uint32_t *org = malloc((size_t)vertex_count * sizeof *org);
	float *xyz = malloc((size_t)vertex_count * 3 * sizeof *xyz);
	float *vel = malloc((size_t)vertex_count * 3 * sizeof *vel);
	drape_err rc = DRAPE_OK;
	if (!tris || !org || !xyz || !vel) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "mesh: out of memory for %u vertices",
				      vertex_count);
		goto fail;
	}
	memcpy(tris, triangles, (size_t)t->ntri * 3 * sizeof *tris);
	memcpy(org, origin, (size_t)vertex_count * sizeof *org);
	drape_sim_get_state(sim, xyz, vel, NULL);
	for (uint32_t j = t->n0; j < vertex_count; j++) {
		memcpy(&xyz[3 * (size_t)j], &xyz[3 * (size_t)org[j]], 3 * sizeof *xyz);
		memcpy(&vel[3 * (size_t)j], &vel[3 * (size_t)org[j]], 3 * sizeof *vel);
	}
	if ((rc = rebuild(sim, vertex_count, tris, org, xyz, vel, generation, err)) != DRAPE_OK)
		goto fail;
	free(xyz);
	free(vel);
	return DRAPE_OK;
fail:
	free(tris);
	free(org);
	free(xyz);
	free(vel);
	return rc;
}
