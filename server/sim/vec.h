/*
 * Small vector helpers shared by the solver files. Positions, predicted
 * positions and velocities are arrays of sim_vec4 records (x, y, z, w); in
 * positions the w lane holds the inverse mass, so one 16-byte load brings a
 * vertex and its weight.
 */
#ifndef DRAPE_SIM_VEC_H
#define DRAPE_SIM_VEC_H

#include <math.h>

typedef struct sim_vec4 {
	float x, y, z, w;
} sim_vec4;

typedef struct sim_v3 {
	float x, y, z;
} sim_v3;

static inline sim_v3 v3(float x, float y, float z) { return (sim_v3){x, y, z}; }
static inline sim_v3 v3_of4(sim_vec4 a) { return (sim_v3){a.x, a.y, a.z}; }
static inline sim_v3 v3_add(sim_v3 a, sim_v3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline sim_v3 v3_sub(sim_v3 a, sim_v3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline sim_v3 v3_scale(sim_v3 a, float s) { return v3(a.x * s, a.y * s, a.z * s); }
static inline float v3_dot(sim_v3 a, sim_v3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline sim_v3 v3_cross(sim_v3 a, sim_v3 b)
{
	return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline float v3_len(sim_v3 a) { return sqrtf(v3_dot(a, a)); }

#endif
