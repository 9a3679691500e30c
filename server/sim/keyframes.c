/*
 * Keyframed rigid motion evaluated at a frame (drape_keyframes_eval in
 * sim.h): the one definition the solver's colliders move by (collider.c)
 * and that the daemon uses to tell a viewer where a collider is at a frame
 * (server/colview.c), so the two cannot drift apart.
 *
 * Between keys the translation and the three Euler angles are interpolated
 * linearly (collider.c says why); the rotation is R = Rz Ry Rx, so X is
 * applied first (proto/euler.h, shared with a scene's "rotate"), and
 * world = R local + translate.
 */
#include "drape/sim.h"

#include "proto/euler.h"

static void from_euler(const float tr[3], const float deg[3], float r[9], float t[3])
{
	double m[9];
	proto_euler_xyz(deg, m);
	for (int i = 0; i < 9; i++)
		r[i] = (float)m[i];
	for (int i = 0; i < 3; i++)
		t[i] = tr[i];
}

void drape_keyframes_eval(const drape_keyframe *k, uint32_t n, float t, float rotation[9], float translate[3])
{
	static const float zero[3] = {0, 0, 0};
	if (n == 0 || k == NULL) {
		from_euler(zero, zero, rotation, translate);
		return;
	}
	if (!(t > k[0].frame)) {
		from_euler(k[0].translate, k[0].rotate, rotation, translate);
		return;
	}
	if (t >= k[n - 1].frame) {
		from_euler(k[n - 1].translate, k[n - 1].rotate, rotation, translate);
		return;
	}
	/* Binary search for the last key at or before t; k[0].frame < t < last. */
	uint32_t lo = 0, hi = n - 1;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (k[mid].frame <= t)
			lo = mid;
		else
			hi = mid;
	}
	double s = ((double)t - k[lo].frame) / ((double)k[hi].frame - k[lo].frame);
	float tr[3], rot[3];
	for (int i = 0; i < 3; i++) {
		tr[i] = (float)(k[lo].translate[i] + s * ((double)k[hi].translate[i] - k[lo].translate[i]));
		rot[i] = (float)(k[lo].rotate[i] + s * ((double)k[hi].rotate[i] - k[lo].rotate[i]));
	}
	from_euler(tr, rot, rotation, translate);
}
