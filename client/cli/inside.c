/*
 * `drape check`: cloth vertices that start inside a mesh collider. The
 * solver pushes such a vertex out along the field's gradient, which for a
 * vertex deep inside (a sleeve modelled on a T-pose body, worn on an
 * A-pose one; hair cards through the scalp) is often out the wrong side,
 * so the run starts with huge strain and cloth through the body: the user
 * wants to hear of it before the run. The field is the solver's own
 * (drape_sdf_build with the collider's voxel_size), sampled at frame 0:
 * the first pose of an animation, the keyframes' transform at frame 0.
 */
#include "client/cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "client/scene.h"

drape_err cli_check_inside(const drape_scene *sc, cli_inside *out, drape_error *err)
{
	memset(out, 0, sizeof *out);
	out->collider = -1;
	const uint32_t n = sc->cloth.vertex_count;
	float *local = malloc((size_t)n * 3 * sizeof *local + 1);
	float *dist = malloc((size_t)n * sizeof *dist + 1);
	if (local == NULL || dist == NULL) {
		free(local);
		free(dist);
		return drape_error_setf(err, DRAPE_ENOMEM, "check: out of memory for %u vertices", (unsigned)n);
	}
	drape_err rc = DRAPE_OK;
	for (uint32_t c = 0; c < sc->collider_count && rc == DRAPE_OK; c++) {
		const drape_collider_desc *d = &sc->colliders[c];
		if (d->shape != DRAPE_SHAPE_MESH || d->vertices == NULL)
			continue;
		/* The pose at frame 0: an animation holds its first pose before
		 * it starts; keyframes move the mesh rigidly, so the cloth is
		 * taken into the mesh's own space instead (p = R^T (x - t)). */
		const float *verts = d->frame_count > 0 ? d->frames : d->vertices;
		float r[9], t[3];
		drape_keyframes_eval(d->keyframes, d->keyframe_count, 0.0f, r, t);
		for (uint32_t i = 0; i < n; i++) {
			const float *x = &sc->cloth.positions[3 * (size_t)i];
			float q[3] = {x[0] - t[0], x[1] - t[1], x[2] - t[2]};
			for (int k = 0; k < 3; k++)
				local[3 * (size_t)i + k] = r[k] * q[0] + r[3 + k] * q[1] + r[6 + k] * q[2];
		}
		drape_sdf *sdf = NULL;
		rc = drape_sdf_build(verts, d->vertex_count, d->triangles, d->triangle_count, d->voxel_size, 0.0f,
				     d->max_voxels, &sdf, err);
		if (rc != DRAPE_OK)
			break;
		drape_sdf_sample(sdf, local, n, dist, NULL);
		drape_sdf_release(sdf);
		uint32_t inside = 0, at = 0;
		float deepest = 0.0f;
		for (uint32_t i = 0; i < n; i++)
			if (dist[i] < 0.0f) {
				inside++;
				if (-dist[i] > deepest)
					deepest = -dist[i], at = i;
			}
		out->vertices += inside;
		if (inside > 0 && deepest > out->deepest) {
			out->deepest = deepest;
			out->collider = (int32_t)c;
			out->vertex = at;
			memcpy(out->at, &sc->cloth.positions[3 * (size_t)at], sizeof out->at);
		}
	}
	free(local);
	free(dist);
	return rc;
}
