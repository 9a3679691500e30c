/*
 * Aerodynamic forces on the cloth, per triangle, from the air velocity
 * relative to the triangle's mean velocity. The model is the thin-plate one
 * after Keckeisen, Kimmerle, Thomaszewski, Wacker, "Modelling Effects of Wind
 * Fields in Cloth Animations" (Journal of WSCG 12, 2004): with
 * u = wind - (v_a + v_b + v_c) / 3, unit normal n, area A, air density rho
 * and u_n = u . n,
 *
 *   drag  F_D = 1/2 rho C_D A u_n |u_n| n
 *   lift  F_L = 1/2 rho C_L A (u_n / |u|) (|u|^2 n - u_n u)
 *
 * Drag pushes along the normal with the normal component of the flow. Lift
 * lies in the plane spanned by n and u, perpendicular to u (its direction is
 * ((n x u) x u) flipped to the side the flow pushes, |F_L| = 1/2 rho C_L A
 * |u|^2 |cos a| sin a for the angle a between u and n), so it vanishes both
 * for flow along the normal and for flow in the cloth's plane; it is what
 * makes a flag in a nearly in-plane wind flap instead of lying flat. Each
 * vertex takes a third of its triangle's force.
 *
 * The forces are explicit (evaluated at the start of the substep), and
 * quadratic drag on light cloth is stiff, so each triangle's impulse over the
 * substep is capped at the one that would bring its mass (areal density times
 * rest area) to the air's velocity: the cloth is never pushed faster than the
 * wind, whatever the substep. With a per-vertex inverse mass from the caller
 * the cap still uses params.density, as an estimate.
 */
#include "server/sim/internal.h"
#include "server/sim/pool.h"
#include "server/sim/simd.h"

#include <float.h>
#include <string.h>

/* Everything one triangle needs, copied out of the sim so that the
 * stores into force[] cannot make the compiler reload it. */
typedef struct wind_job {
	const sim_vec4 *x, *v;
	const uint32_t *tris;
	const float *rest_area;
	sim_vec4 *force;
	sim_v3 wind;
	float drag, lift; /* half rho C_D, half rho C_L */
	float density, inv_dt;
	const uint32_t *chunk; /* the colour's first entry of sim->wind_chunk */
} wind_job;

/* Adds triangle t's share of drag and lift to its three vertices. */
static inline void wind_triangle(const wind_job *restrict J, sim_vec4 *restrict force, uint32_t t)
{
	if (!(J->rest_area[t] > 0.0f))
		return;
	const sim_vec4 *x = J->x, *v = J->v;
	uint32_t a = J->tris[3 * t], b = J->tris[3 * t + 1], c = J->tris[3 * t + 2];
	sim_v3 xa = v3_of4(x[a]);
	sim_v3 cr = v3_cross(v3_sub(v3_of4(x[b]), xa), v3_sub(v3_of4(x[c]), xa));
	float twice = v3_len(cr);
	if (!(twice > FLT_MIN))
		return;
	sim_v3 nrm = v3_scale(cr, 1.0f / twice);
	float area = 0.5f * twice;
	sim_v3 vt = v3_scale(v3_add(v3_add(v3_of4(v[a]), v3_of4(v[b])), v3_of4(v[c])), 1.0f / 3.0f);
	sim_v3 u = v3_sub(J->wind, vt);
	float uu = v3_dot(u, u);
	if (!(uu > 0.0f))
		return;
	float ulen = sqrtf(uu);
	float un = v3_dot(u, nrm);
	sim_v3 f = v3_scale(nrm, J->drag * area * un * fabsf(un));
	sim_v3 lift_dir = v3_sub(v3_scale(nrm, uu), v3_scale(u, un));
	f = v3_add(f, v3_scale(lift_dir, J->lift * area * un / ulen));
	/* Impulse cap: |f| dt <= m |u| with m = density * rest area. */
	float fl = v3_len(f);
	float cap = J->density * J->rest_area[t] * ulen * J->inv_dt;
	if (fl > cap)
		f = v3_scale(f, cap / fl);
	f = v3_scale(f, 1.0f / 3.0f);
	force[a].x += f.x, force[a].y += f.y, force[a].z += f.z;
	force[b].x += f.x, force[b].y += f.y, force[b].z += f.z;
	force[c].x += f.x, force[c].y += f.y, force[c].z += f.z;
}

/*
 * The forces of triangles t .. t + SIMD_W - 1 (simd.h), lane by lane the
 * expressions of wind_triangle in the same order, so each lane's force has
 * the scalar bits. Only the arithmetic is wide: the triangles of a chunk
 * share vertices, so their forces are then added one triangle at a time,
 * in triangle order, exactly as wind_triangle adds them.
 */
static inline void wind_group(const wind_job *restrict J, sim_vec4 *restrict force, uint32_t t)
{
	const simd_f zero = simd_splat(0.0f);
	const uint32_t *tri = &J->tris[3 * (size_t)t];
	simd_v3 xa, xb, xc, va, vb, vc;
	simd_f w;
	simd_gather_s(J->x, tri, 3, &xa.x, &xa.y, &xa.z, &w);
	simd_gather_s(J->x, tri + 1, 3, &xb.x, &xb.y, &xb.z, &w);
	simd_gather_s(J->x, tri + 2, 3, &xc.x, &xc.y, &xc.z, &w);
	simd_gather_s(J->v, tri, 3, &va.x, &va.y, &va.z, &w);
	simd_gather_s(J->v, tri + 1, 3, &vb.x, &vb.y, &vb.z, &w);
	simd_gather_s(J->v, tri + 2, 3, &vc.x, &vc.y, &vc.z, &w);
	simd_f rest = simd_load(&J->rest_area[t]);
	simd_v3 cr = simd_v3_cross(simd_v3_sub(xb, xa), simd_v3_sub(xc, xa));
	simd_f twice = simd_sqrt(simd_v3_dot(cr, cr));
	simd_v3 nrm = simd_v3_scale(cr, simd_div(simd_splat(1.0f), twice));
	simd_f area = simd_mul(simd_splat(0.5f), twice);
	simd_v3 vt = simd_v3_scale(simd_v3_add(simd_v3_add(va, vb), vc), simd_splat(1.0f / 3.0f));
	simd_v3 u = simd_v3_sub((simd_v3){simd_splat(J->wind.x), simd_splat(J->wind.y), simd_splat(J->wind.z)},
				vt);
	simd_f uu = simd_v3_dot(u, u);
	simd_m ok = simd_and(simd_and(simd_gt(rest, zero), simd_gt(twice, simd_splat(FLT_MIN))),
			     simd_gt(uu, zero));
	simd_f ulen = simd_sqrt(uu);
	simd_f un = simd_v3_dot(u, nrm);
	simd_v3 f = simd_v3_scale(nrm, simd_mul(simd_mul(simd_mul(simd_splat(J->drag), area), un), simd_abs(un)));
	simd_v3 lift_dir = simd_v3_sub(simd_v3_scale(nrm, uu), simd_v3_scale(u, un));
	f = simd_v3_add(f, simd_v3_scale(lift_dir, simd_div(simd_mul(simd_mul(simd_splat(J->lift), area), un),
							     ulen)));
	simd_f fl = simd_sqrt(simd_v3_dot(f, f));
	simd_f cap = simd_mul(simd_mul(simd_mul(simd_splat(J->density), rest), ulen), simd_splat(J->inv_dt));
	simd_f scale = simd_select(simd_gt(fl, cap), simd_div(cap, fl), simd_splat(1.0f));
	simd_m capped = simd_gt(fl, cap);
	f = (simd_v3){simd_select(capped, simd_mul(f.x, scale), f.x), simd_select(capped, simd_mul(f.y, scale), f.y),
		      simd_select(capped, simd_mul(f.z, scale), f.z)};
	f = simd_v3_scale(f, simd_splat(1.0f / 3.0f));
	/* Each lane's force as one (x, y, z, 0) record, +0 for a lane the
	 * scalar code skips: a sum of forces starts at +0 and never becomes
	 * -0, so adding +0 leaves it exactly as skipping does, and the w sum
	 * stays +0. A record is added with one four-wide operation. */
	static const uint32_t lanes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
	sim_vec4 fq[SIMD_W];
	simd_scatter(fq, lanes, SIMD_W, simd_select(ok, f.x, zero), simd_select(ok, f.y, zero),
		     simd_select(ok, f.z, zero), zero);
	for (uint32_t l = 0; l < SIMD_W; l++)
		for (int j = 0; j < 3; j++) {
			sim_vec4 *q = &force[tri[3 * l + (uint32_t)j]];
			q->x += fq[l].x, q->y += fq[l].y, q->z += fq[l].z, q->w += fq[l].w;
		}
}

/* Chunks [begin, end) of the job's colour, one after the other. */
static void wind_block(void *ctx, uint32_t begin, uint32_t end)
{
	const wind_job *J = ctx;
	sim_vec4 *force = J->force;
	uint32_t i = J->chunk[begin], e = J->chunk[end];
	for (; i + SIMD_W <= e; i += SIMD_W)
		wind_group(J, force, i);
	for (; i < e; i++)
		wind_triangle(J, force, i);
}

/* Fills *job for sim; returns 0 when there is no air to push the cloth. */
static int wind_setup(const drape_sim *sim, float dt, sim_vec4 *force, wind_job *job)
{
	const drape_sim_params *P = &sim->params;
	memset(force, 0, (size_t)sim->n * sizeof *force);
	const float half_rho = 0.5f * P->air_density;
	if (!(half_rho > 0.0f) || !(P->drag > 0.0f || P->lift > 0.0f))
		return 0;
	*job = (wind_job){sim->x,
			sim->v,
			sim->tris,
			sim->tri_rest_area,
			force,
			v3(P->wind[0], P->wind[1], P->wind[2]),
			half_rho * P->drag,
			half_rho * P->lift,
			P->density,
			1.0f / dt,
			NULL};
	return 1;
}

void sim_wind_forces_scalar(const drape_sim *sim, float dt, sim_vec4 *restrict force)
{
	wind_job job;
	if (!wind_setup(sim, dt, force, &job))
		return;
	for (uint32_t i = 0; i < sim->wind_chunk[sim->wind_chunks]; i++)
		wind_triangle(&job, force, i);
}

void sim_wind_forces(const drape_sim *sim, float dt, sim_vec4 *restrict force)
{
	wind_job job;
	if (!wind_setup(sim, dt, force, &job))
		return;
	/* Within a colour no two chunks share a vertex, so the threads of
	 * one colour add to disjoint vertices; chunks and colours go in a
	 * fixed order, so every vertex sums its triangles in the same order
	 * whatever the thread count. The overflow colour, if any, is serial. */
	const sim_colouring *col = &sim->wind_col;
	const uint32_t threads = drape_pool_threads(sim->pool);
	for (uint32_t g = 0; g < col->colours; g++) {
		uint32_t b = col->start[g], e = col->start[g + 1];
		job.chunk = sim->wind_chunk + b;
		if (col->overflow && g + 1 == col->colours)
			wind_block(&job, 0, e - b);
		else
			sim_pool_for(sim->pool, e - b, (e - b + threads - 1) / threads, wind_block, &job);
	}
}
