/*
 * Placing a scene's meshes (client/SCENE.md, "Placing a mesh"): "scale",
 * "rotate" and "translate" of the cloth and of mesh colliders, applied to
 * the cloth, its rest mesh, collider meshes and every animation pose.
 */
#include "client/scene.h"
#include "client/scene_internal.h"
#include "proto/euler.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

/* Places every vertex, p' = R (p * scale) + translate, and checks the
 * result is still finite (a large scale can overflow a float). Without a
 * rotation the arithmetic is the float p * scale + translate of old. */
drape_err scn_transform(scn *c, drape_obj_mesh *m, const scn_xform *x)
{
	for (uint64_t i = 0; i < (uint64_t)m->vertex_count; i++) {
		float *p = m->positions + i * 3;
		if (x->rotated) {
			double q[3] = {(double)(p[0] * x->scale[0]), (double)(p[1] * x->scale[1]),
				       (double)(p[2] * x->scale[2])};
			for (int k = 0; k < 3; k++)
				p[k] = (float)(x->rotate[3 * k] * q[0] + x->rotate[3 * k + 1] * q[1] +
					       x->rotate[3 * k + 2] * q[2]) +
				       x->translate[k];
		} else {
			for (int k = 0; k < 3; k++)
				p[k] = p[k] * x->scale[k] + x->translate[k];
		}
		for (int k = 0; k < 3; k++)
			if (!isfinite(p[k]))
				return scn_fail(c, DRAPE_ENONFINITE,
						"vertex %llu is not finite after scale, rotate and translate",
						(unsigned long long)i);
	}
	return DRAPE_OK;
}

drape_err scn_xform_read(scn *c, const cJSON *obj, scn_xform *x)
{
	memset(x, 0, sizeof *x);
	x->scale[0] = x->scale[1] = x->scale[2] = 1.0f;
	float deg[3] = {0, 0, 0};
	SCN_FIELD(c, obj, "scale", scn_scale(c, v_, x->scale));
	SCN_FIELD(c, obj, "rotate", scn_vec(c, v_, 3, deg));
	SCN_FIELD(c, obj, "translate", scn_vec(c, v_, 3, x->translate));
	x->rotated = deg[0] != 0.0f || deg[1] != 0.0f || deg[2] != 0.0f;
	proto_euler_xyz(deg, x->rotate);
	return DRAPE_OK;
}
