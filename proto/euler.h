/*
 * The rotation matrix of XYZ Euler angles, shared by the two sides that
 * must agree on it: a scene's "rotate" (client/scene_xform.c) and a
 * keyframe's (server/sim/keyframes.c), so that a mesh placed with "rotate"
 * and one moved by a single key of the same angles end up alike. A pure
 * function; the solver's library carries this object too (Makefile).
 */
#ifndef DRAPE_PROTO_EULER_H
#define DRAPE_PROTO_EULER_H

/*
 * r = Rz Ry Rx for the angles deg (x, y, z, in degrees): X is applied
 * first, and a point turns as p' = r p with r stored by rows. Computed in
 * double, so that long keyed spins lose nothing before a caller stores
 * the matrix in float.
 */
void proto_euler_xyz(const float deg[3], double r[9]);

#endif
