/*
 * libFuzzer target for the point-cache readers (client/pointcache.c): every
 * input goes through the PC2 and the MDD reader, with small limits so the
 * fuzzer spends its time in the validation rather than in allocations. What
 * is accepted must hold what the readers promise: counts of at least 1
 * within the limits, a size that matches the header exactly, every number
 * finite, MDD times increasing; and resampling it to simulation frames must
 * either succeed with finite poses or refuse with a message. Any violation
 * calls abort().
 */
#include "client/pointcache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_pc2: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static void check_anim(const drape_anim *a, const drape_anim_limits *l, size_t size)
{
	if (a->vertex_count < 1 || a->sample_count < 1 || a->vertex_count > l->max_vertices ||
	    a->sample_count > l->max_samples)
		fail("counts outside [1, limit] accepted", NULL);
	const uint64_t n = (uint64_t)a->vertex_count * a->sample_count * 3;
	const uint64_t want = a->format == DRAPE_ANIM_PC2 ? DRAPE_PC2_HEADER_SIZE + n * 4
							  : 8 + (uint64_t)a->sample_count * 4 + n * 4;
	if (want != size)
		fail("the size does not match the header", NULL);
	for (uint64_t i = 0; i < n; i++)
		if (!isfinite(a->positions[i]))
			fail("a non-finite position accepted", NULL);
	if (a->format == DRAPE_ANIM_MDD) {
		for (uint32_t j = 0; j < a->sample_count; j++)
			if (!isfinite(a->times[j]) || (j > 0 && !(a->times[j] > a->times[j - 1])))
				fail("MDD times not finite and increasing", NULL);
	} else if (!isfinite(a->start) || !(a->rate > 0.0f) || !isfinite(a->rate)) {
		fail("PC2 start or rate not usable", NULL);
	}
	float *frames = NULL;
	uint32_t count = 0, first = 0;
	drape_error err;
	drape_error_clear(&err);
	if (drape_anim_resample(a, 24.0, "fuzz", &frames, &count, &first, &err) == DRAPE_OK) {
		for (uint64_t i = 0; i < (uint64_t)count * a->vertex_count * 3; i++)
			if (!isfinite(frames[i]))
				fail("resampling made a non-finite pose", NULL);
		free(frames);
	} else if (err.message[0] == '\0') {
		fail("resampling refused without a message", NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	drape_anim_limits lim;
	drape_anim_limits_default(&lim);
	lim.max_vertices = 4096;
	lim.max_samples = 256;
	lim.max_bytes = 1u << 20;
	for (int k = 0; k < 2; k++) {
		drape_anim a;
		drape_error err;
		drape_error_clear(&err);
		drape_err rc = k == 0 ? drape_pc2_read_buffer(data, size, "fuzz.pc2", &lim, &a, &err)
				      : drape_mdd_read_buffer(data, size, "fuzz.mdd", &lim, &a, &err);
		if (rc != DRAPE_OK) {
			if (err.message[0] == '\0')
				fail("refused without a message", NULL);
			continue;
		}
		check_anim(&a, &lim, size);
		drape_anim_free(&a);
	}
	return 0;
}
