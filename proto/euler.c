/* The rotation matrix of XYZ Euler angles (euler.h). */
#include "proto/euler.h"

#include <math.h>

void proto_euler_xyz(const float deg[3], double r[9])
{
	const double k = 0.017453292519943295; /* pi / 180 */
	double cx = cos(deg[0] * k), sx = sin(deg[0] * k);
	double cy = cos(deg[1] * k), sy = sin(deg[1] * k);
	double cz = cos(deg[2] * k), sz = sin(deg[2] * k);
	r[0] = cz * cy, r[1] = cz * sy * sx - sz * cx, r[2] = cz * sy * cx + sz * sx;
	r[3] = sz * cy, r[4] = sz * sy * sx + cz * cx, r[5] = sz * sy * cx - cz * sx;
	r[6] = -sy, r[7] = cy * sx, r[8] = cy * cx;
}
