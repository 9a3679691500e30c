/*
 * The min and max that the body contacts (bodypush.c, bodyedge.c) build
 * their boxes with every substep: fminf and fmaxf as libm computes them on
 * x86-64 (the other operand when one is NaN, the second when they compare
 * equal), inline. libm's are out-of-line calls, one per coordinate of every
 * box. The boxes, and so the hash and the pairs, are the same bits.
 */
#ifndef DRAPE_SIM_BOX_H
#define DRAPE_SIM_BOX_H

static inline float sim_box_min(float a, float b)
{
	return (a < b || b != b) ? a : b;
}

static inline float sim_box_max(float a, float b)
{
	return (a > b || b != b) ? a : b;
}

#endif
