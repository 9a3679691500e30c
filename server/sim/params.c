/*
 * The solver's input definitions without the solver: the parameters'
 * defaults and their validation (sim_xpbd_validate for the physical
 * material's fields), and a collider definition's defaults. Pure C with no
 * solver state, so libdrape.so (the scene loader fills and checks
 * parameters before it sends them) links this file, material.c and error.c
 * of the solver and nothing else of it: a DCC plugin never loads the solver,
 * OpenVDB or TBB (ARCHITECTURE.md).
 */
#include "server/sim/internal.h"

#include <math.h>
#include <string.h>

void drape_sim_params_default(drape_sim_params *p)
{
	memset(p, 0, sizeof *p);
	p->fps = 24.0f;
	p->substeps = 4;
	p->iterations = 10;
	p->gravity[1] = -9.81f;
	p->damping = 0.99f;
	p->drag = 1.0f;
	p->lift = 0.3f;
	p->air_density = 1.2f;
	p->density = 0.2f;
	p->stretch = 1.0f;
	p->shear = 0.9f;
	p->bend = 0.1f;
	p->thickness = 0.005f;
	p->long_range = -1;
	p->self_collision = 0;
	p->self_thickness = 0.0f;
	p->self_friction = 0.0f;
	/* The physical material's defaults, used once model is XPBD: a plain
	 * cotton weave (the presets in material.c are measured fabrics). The
	 * stretch stiffness is the low-load slope of a KES-F tensile curve of
	 * cotton shirting (about 2 % strain at 100 N/m, so 5e3 N/m), shear a
	 * hundredth of it, bending 0.05 gf cm^2/cm = 4.9e-6 N m, and the
	 * damping rate the seed's 0.99 per frame at 24 fps (-24 ln 0.99). */
	p->model = DRAPE_MODEL_PBD;
	p->stretch_k = 5000.0f;
	p->stretch_k_weft = 0.0f;
	p->shear_k = 50.0f;
	p->bend_k = 4.9e-6f;
	p->compress_k = 0.0f;
	p->damping_rate = 0.24f;
}

/* The comparisons are written so that NaN fails them. */
static drape_err check_range(const char *name, float v, float lo, float hi, drape_error *err)
{
	if (!(v >= lo && v <= hi))
		return drape_error_setf(err, DRAPE_EINVAL, "params.%s: %g is outside [%g, %g]", name,
					(double)v, (double)lo, (double)hi);
	return DRAPE_OK;
}

static drape_err check_nonneg(const char *name, float v, drape_error *err)
{
	if (!(v >= 0.0f) || !isfinite(v))
		return drape_error_setf(err, DRAPE_EINVAL, "params.%s: %g must be finite and >= 0",
					name, (double)v);
	return DRAPE_OK;
}

static drape_err check_vec(const char *name, const float v[3], drape_error *err)
{
	for (int i = 0; i < 3; i++)
		if (!isfinite(v[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE, "params.%s[%d]: %g is not finite",
						name, i, (double)v[i]);
	return DRAPE_OK;
}

drape_err drape_sim_params_validate(const drape_sim_params *p, drape_error *err)
{
	drape_err rc;
	if (p == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "params: NULL");
	if (!(p->fps > 0.0f && p->fps <= DRAPE_SIM_MAX_FPS))
		return drape_error_setf(err, DRAPE_EINVAL, "params.fps: %g is outside (0, %g]",
					(double)p->fps, (double)DRAPE_SIM_MAX_FPS);
	if (p->substeps < 1 || p->substeps > DRAPE_SIM_MAX_SUBSTEPS)
		return drape_error_setf(err, DRAPE_EINVAL, "params.substeps: %d is outside [1, %d]",
					(int)p->substeps, DRAPE_SIM_MAX_SUBSTEPS);
	if (p->iterations < 1 || p->iterations > DRAPE_SIM_MAX_ITERATIONS)
		return drape_error_setf(err, DRAPE_EINVAL, "params.iterations: %d is outside [1, %d]",
					(int)p->iterations, DRAPE_SIM_MAX_ITERATIONS);
	if ((rc = check_vec("gravity", p->gravity, err)) || (rc = check_vec("wind", p->wind, err)) ||
	    (rc = check_range("damping", p->damping, 0.0f, 1.0f, err)) ||
	    (rc = check_nonneg("drag", p->drag, err)) || (rc = check_nonneg("lift", p->lift, err)) ||
	    (rc = check_nonneg("air_density", p->air_density, err)) ||
	    (rc = check_range("stretch", p->stretch, 0.0f, 1.0f, err)) ||
	    (rc = check_range("shear", p->shear, 0.0f, 1.0f, err)) ||
	    (rc = check_range("bend", p->bend, 0.0f, 1.0f, err)) ||
	    (rc = check_range("thickness", p->thickness, 0.0f, 1.0f, err)) ||
	    (rc = check_range("self_thickness", p->self_thickness, 0.0f, 1.0f, err)) ||
	    (rc = check_range("self_friction", p->self_friction, 0.0f, 1.0f, err)) ||
	    (rc = check_nonneg("tear_strain", p->tear_strain, err)))
		return rc;
	if (!(p->density > 0.0f) || !isfinite(p->density))
		return drape_error_setf(err, DRAPE_EINVAL, "params.density: %g must be finite and > 0",
					(double)p->density);
	if (p->long_range < -1 || p->long_range > 1)
		return drape_error_setf(err, DRAPE_EINVAL, "params.long_range: %d is not -1, 0 or 1",
					(int)p->long_range);
	if (p->self_collision != 0 && p->self_collision != 1)
		return drape_error_setf(err, DRAPE_EINVAL, "params.self_collision: %d is not 0 or 1",
					(int)p->self_collision);
	if (p->schedule != DRAPE_SCHEDULE_FRAME && p->schedule != DRAPE_SCHEDULE_MESH)
		return drape_error_setf(err, DRAPE_EINVAL,
					"params.schedule: %d is not %d (frame) or %d (mesh)",
					(int)p->schedule, DRAPE_SCHEDULE_FRAME, DRAPE_SCHEDULE_MESH);
	return sim_xpbd_validate(p, err);
}

/* Upper bounds of the material fields: far beyond any fabric (woven
 * cotton is about 1e4 N/m and 1e-5 N m), low enough that no product with
 * dt^2 overflows a float. */
#define SIM_XPBD_MAX_K 1e9f
#define SIM_XPBD_MAX_BEND 10.0f
#define SIM_XPBD_MAX_DAMPING 1000.0f

static drape_err check_k(const char *name, float v, float hi, const char *unit, drape_error *err)
{
	if (!(v >= 0.0f && v <= hi))
		return drape_error_setf(err, DRAPE_EINVAL, "params.%s: %g %s is outside [0, %g]", name,
					(double)v, unit, (double)hi);
	return DRAPE_OK;
}

drape_err sim_xpbd_validate(const drape_sim_params *p, drape_error *err)
{
	drape_err rc;
	if (p->model != DRAPE_MODEL_PBD && p->model != DRAPE_MODEL_XPBD)
		return drape_error_setf(err, DRAPE_EINVAL,
					"params.model: %d is not %d (pbd) or %d (xpbd)", (int)p->model,
					DRAPE_MODEL_PBD, DRAPE_MODEL_XPBD);
	if ((rc = check_k("stretch_k", p->stretch_k, SIM_XPBD_MAX_K, "N/m", err)) ||
	    (rc = check_k("stretch_k_weft", p->stretch_k_weft, SIM_XPBD_MAX_K, "N/m", err)) ||
	    (rc = check_k("shear_k", p->shear_k, SIM_XPBD_MAX_K, "N/m", err)) ||
	    (rc = check_k("bend_k", p->bend_k, SIM_XPBD_MAX_BEND, "N*m", err)) ||
	    (rc = check_k("compress_k", p->compress_k, SIM_XPBD_MAX_K, "N/m", err)) ||
	    (rc = check_k("damping_rate", p->damping_rate, SIM_XPBD_MAX_DAMPING, "1/s", err)))
		return rc;
	/* A membrane with no stretch stiffness is no cloth: every edge would
	 * be free, and the weft, shear and bending alone cannot hold it. */
	if (p->model == DRAPE_MODEL_XPBD && !(p->stretch_k > 0.0f))
		return drape_error_setf(err, DRAPE_EINVAL,
					"params.stretch_k: %g N/m must be > 0 with model xpbd",
					(double)p->stretch_k);
	return DRAPE_OK;
}

void drape_collider_desc_default(drape_collider_desc *d)
{
	memset(d, 0, sizeof *d);
	d->normal[1] = 1.0f;
	d->friction = 0.3f;
	d->static_friction = 0.5f;
	d->restitution = 0.0f;
	d->thickness = 0.0f;
}
