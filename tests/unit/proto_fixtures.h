/*
 * Fixtures shared by the codec tests (test_proto_codec.c, round trips, and
 * test_proto_malformed.c, hostile input): a 3 x 3 sheet, an owner token,
 * a full parameter set, a request header and animation poses.
 */
#ifndef DRAPE_TEST_PROTO_FIXTURES_H
#define DRAPE_TEST_PROTO_FIXTURES_H

#include <string.h>

#include "proto/proto.h"

/* A 3x3-vertex sheet: 9 vertices, 8 triangles. */
static const __attribute__((unused)) float sheet_pos[27] = {
	0, 0, 0,   0.5f, 0, 0,   1, 0, 0,
	0, 0.5f, 0, 0.5f, 0.5f, 0, 1, 0.5f, 0,
	0, 1, 0,   0.5f, 1, 0,   1, 1, 0.25f,
};
static const __attribute__((unused)) uint32_t sheet_tri[24] = {
	0, 1, 4, 0, 4, 3, 1, 2, 5, 1, 5, 4, 3, 4, 7, 3, 7, 6, 4, 5, 8, 4, 8, 7,
};
static const __attribute__((unused)) uint8_t token16[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static inline void fill_params(proto_params *p)
{
	memset(p, 0, sizeof *p);
	drape_sim_params *v = &p->values;
	v->fps = 30;
	v->substeps = 5;
	v->iterations = 12;
	v->gravity[0] = 0.5f;
	v->gravity[1] = -9.81f;
	v->gravity[2] = 0.25f;
	v->damping = 0.98f;
	v->wind[0] = 3;
	v->wind[1] = 0;
	v->wind[2] = -1;
	v->drag = 1.5f;
	v->lift = 0.25f;
	v->air_density = 1.2f;
	v->density = 0.3f;
	v->stretch = 1;
	v->shear = 0.75f;
	v->bend = 0.125f;
	v->thickness = 0.004f;
	v->long_range = -1;
	v->self_collision = 1;
	v->self_thickness = 0.003f;
	v->self_friction = 0.2f;
	v->model = DRAPE_MODEL_XPBD;
	v->stretch_k = 4070.5f;
	v->stretch_k_weft = 410.75f;
	v->shear_k = 26.5f;
	v->bend_k = 8.0625e-5f;
	v->compress_k = 12.5f;
	v->damping_rate = 0.24f;
	v->schedule = DRAPE_SCHEDULE_MESH;
	p->mask = PROTO_PARAMS_ALL;
}

static inline proto_request base_request(proto_op op)
{
	proto_request r;
	proto_request_init(&r, op);
	r.id = 0x1122334455667788ull;
	r.has_client = true;
	r.client = 42;
	if (proto_op_needs_session(op)) {
		r.has_session = true;
		r.session = 7;
	}
	if (proto_op_needs_token(op)) {
		r.has_token = true;
		memcpy(r.token, token16, 16);
	}
	return r;
}

/* Poses of the 9-vertex sheet: pose p moves every vertex by p * 0.25 in y. */
/* Two poses of the 9-vertex sheet: pose p moves every vertex by p * 0.25 in y. */
static void anim_poses(float *out, uint32_t poses)
{
	for (uint32_t p = 0; p < poses; p++)
		for (uint32_t i = 0; i < 27; i++)
			out[p * 27 + i] = sheet_pos[i] + (i % 3 == 1 ? 0.25f * (float)p : 0.0f);
}

#endif
