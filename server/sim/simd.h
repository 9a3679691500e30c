/*
 * The solver's one thin wide-float layer (after Box2D v3's b2FloatW): a
 * handful of lane-wise operations on SIMD_W floats, AVX-512 (16 lanes), AVX2
 * (8), SSE2 (4) or plain C (1), chosen at build time by the Makefile's SIMD
 * knob, plus the gather and scatter of sim_vec4 records by a transpose in
 * registers.
 *
 * Every operation here is one correctly rounded IEEE operation per lane (add,
 * subtract, multiply, divide, square root) or an exact one (compare, select,
 * negate, absolute value, min/max of non-NaN values). No FMA and no
 * reciprocal estimates: a kernel written on this layer computes, lane by
 * lane, bit for bit what the same expression computes in scalar C with
 * contraction off (the build uses -std=c17, whose default is
 * -ffp-contract=off). So the avx512, avx2, sse2 and scalar builds, and the scalar
 * reference kernels in stretch.c and bend.c, give identical results in the
 * same colour order; test_sim_speed.c checks it.
 */
#ifndef DRAPE_SIM_SIMD_H
#define DRAPE_SIM_SIMD_H

#include <math.h>
#include <stdint.h>

#include "server/sim/vec.h"

/* For the kernels' group functions: inlined into their block loops, where
 * the full groups' lane count is a constant and the partial store of the
 * last group's scatter drops out. */
#define SIMD_KERNEL static inline __attribute__((always_inline))

#if defined(DRAPE_SIMD_avx512) && defined(__AVX512F__)
#include <immintrin.h>
/*
 * AVX-512 (16 lanes). The same correctly rounded operations as the other
 * widths, lane by lane (vdivps and vsqrtps, never the rcp14/rsqrt14
 * estimates); the masks live in mask registers, so a select is one blend.
 * Only AVX-512F intrinsics: the negation flips the sign bit with an integer
 * xor rather than AVX-512DQ's vxorps.
 */
#define SIMD_W 16
#define SIMD_NAME "avx512"
typedef __m512 simd_f;
typedef __mmask16 simd_m;
static inline simd_f simd_splat(float a) { return _mm512_set1_ps(a); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm512_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm512_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm512_mul_ps(a, b); }
static inline simd_f simd_div(simd_f a, simd_f b) { return _mm512_div_ps(a, b); }
static inline simd_f simd_sqrt(simd_f a) { return _mm512_sqrt_ps(a); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm512_min_ps(a, b); }
static inline simd_f simd_max(simd_f a, simd_f b) { return _mm512_max_ps(a, b); }
static inline simd_f simd_neg(simd_f a)
{
	return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)));
}
static inline simd_f simd_abs(simd_f a) { return _mm512_abs_ps(a); }
static inline simd_m simd_gt(simd_f a, simd_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline simd_m simd_lt(simd_f a, simd_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline simd_m simd_le(simd_f a, simd_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline simd_m simd_ne(simd_f a, simd_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
static inline simd_m simd_and(simd_m a, simd_m b) { return _kand_mask16(a, b); }
static inline simd_m simd_andnot(simd_m a, simd_m b) { return _kandn_mask16(a, b); }
static inline int simd_any(simd_m m) { return m != 0; }
static inline simd_f simd_select(simd_m m, simd_f a, simd_f b) { return _mm512_mask_blend_ps(m, b, a); }

/* Records idx[j s], idx[(j + 4) s], idx[(j + 8) s], idx[(j + 12) s] in the
 * four 128-bit lanes of one register. */
static inline __m512 simd_rec4_(const sim_vec4 *p, const uint32_t *idx, uint32_t s, uint32_t j)
{
	__m512 t = _mm512_castps128_ps512(_mm_loadu_ps(&p[idx[j * s]].x));
	t = _mm512_insertf32x4(t, _mm_loadu_ps(&p[idx[(j + 4) * s]].x), 1);
	t = _mm512_insertf32x4(t, _mm_loadu_ps(&p[idx[(j + 8) * s]].x), 2);
	return _mm512_insertf32x4(t, _mm_loadu_ps(&p[idx[(j + 12) * s]].x), 3);
}

/* As the AVX2 version: a 4 x 4 transpose within each 128-bit lane, lane k
 * holding records 4k .. 4k + 3, so the lanes come out in record order. */
static inline void simd_gather_s(const sim_vec4 *p, const uint32_t *idx, uint32_t s, simd_f *x,
				 simd_f *y, simd_f *z, simd_f *w)
{
	__m512 t0 = simd_rec4_(p, idx, s, 0), t1 = simd_rec4_(p, idx, s, 1);
	__m512 t2 = simd_rec4_(p, idx, s, 2), t3 = simd_rec4_(p, idx, s, 3);
	__m512 u0 = _mm512_unpacklo_ps(t0, t1), u1 = _mm512_unpackhi_ps(t0, t1);
	__m512 u2 = _mm512_unpacklo_ps(t2, t3), u3 = _mm512_unpackhi_ps(t2, t3);
	*x = _mm512_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
	*y = _mm512_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
	*z = _mm512_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
	*w = _mm512_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

static inline void simd_scatter_s(sim_vec4 *p, const uint32_t *idx, uint32_t s, uint32_t n,
				  simd_f x, simd_f y, simd_f z, simd_f w)
{
	__m512 u0 = _mm512_unpacklo_ps(x, y), u1 = _mm512_unpackhi_ps(x, y);
	__m512 u2 = _mm512_unpacklo_ps(z, w), u3 = _mm512_unpackhi_ps(z, w);
	/* r[l] holds record 4k + l in its 128-bit lane k. */
	__m512 r[4] = {_mm512_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0)),
		       _mm512_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2)),
		       _mm512_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0)),
		       _mm512_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2))};
	if (n == SIMD_W) {
		for (uint32_t l = 0; l < 4; l++) {
			_mm_storeu_ps(&p[idx[l * s]].x, _mm512_castps512_ps128(r[l]));
			_mm_storeu_ps(&p[idx[(l + 4) * s]].x, _mm512_extractf32x4_ps(r[l], 1));
			_mm_storeu_ps(&p[idx[(l + 8) * s]].x, _mm512_extractf32x4_ps(r[l], 2));
			_mm_storeu_ps(&p[idx[(l + 12) * s]].x, _mm512_extractf32x4_ps(r[l], 3));
		}
		return;
	}
	float t[4][16];
	for (uint32_t l = 0; l < 4; l++)
		_mm512_storeu_ps(t[l], r[l]);
	for (uint32_t l = 0; l < n; l++)
		_mm_storeu_ps(&p[idx[l * s]].x, _mm_loadu_ps(&t[l % 4][4 * (l / 4)]));
}

#elif (defined(DRAPE_SIMD_avx2) || defined(DRAPE_SIMD_avx512)) && defined(__AVX2__)
#include <immintrin.h>
#define SIMD_W 8
#define SIMD_NAME "avx2"
typedef __m256 simd_f;
typedef __m256 simd_m;
static inline simd_f simd_splat(float a) { return _mm256_set1_ps(a); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm256_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm256_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm256_mul_ps(a, b); }
static inline simd_f simd_div(simd_f a, simd_f b) { return _mm256_div_ps(a, b); }
static inline simd_f simd_sqrt(simd_f a) { return _mm256_sqrt_ps(a); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm256_min_ps(a, b); }
static inline simd_f simd_max(simd_f a, simd_f b) { return _mm256_max_ps(a, b); }
static inline simd_f simd_neg(simd_f a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
static inline simd_f simd_abs(simd_f a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline simd_m simd_gt(simd_f a, simd_f b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline simd_m simd_lt(simd_f a, simd_f b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline simd_m simd_le(simd_f a, simd_f b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
static inline simd_m simd_ne(simd_f a, simd_f b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
static inline simd_m simd_and(simd_m a, simd_m b) { return _mm256_and_ps(a, b); }
static inline simd_m simd_andnot(simd_m a, simd_m b) { return _mm256_andnot_ps(a, b); }
/* Nonzero when any lane of m is set. */
static inline int simd_any(simd_m m) { return _mm256_movemask_ps(m) != 0; }
/* m ? a : b, lane by lane. */
static inline simd_f simd_select(simd_m m, simd_f a, simd_f b) { return _mm256_blendv_ps(b, a, m); }

/* Lanes of the records p[idx[0]], p[idx[s]], .. p[idx[7 s]] as four vectors
 * x, y, z, w: idx may point into an array of constraint records, s being
 * the record size in uint32 units, so the indices are read where they lie. */
static inline void simd_gather_s(const sim_vec4 *p, const uint32_t *idx, uint32_t s, simd_f *x,
				 simd_f *y, simd_f *z, simd_f *w)
{
	__m256 t0 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(&p[idx[0]].x)),
					 _mm_loadu_ps(&p[idx[4 * s]].x), 1);
	__m256 t1 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(&p[idx[s]].x)),
					 _mm_loadu_ps(&p[idx[5 * s]].x), 1);
	__m256 t2 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(&p[idx[2 * s]].x)),
					 _mm_loadu_ps(&p[idx[6 * s]].x), 1);
	__m256 t3 = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(&p[idx[3 * s]].x)),
					 _mm_loadu_ps(&p[idx[7 * s]].x), 1);
	__m256 u0 = _mm256_unpacklo_ps(t0, t1), u1 = _mm256_unpackhi_ps(t0, t1);
	__m256 u2 = _mm256_unpacklo_ps(t2, t3), u3 = _mm256_unpackhi_ps(t2, t3);
	*x = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
	*y = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
	*z = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
	*w = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

/* Writes lanes 0..n-1 back to p[idx[lane s]]; the records of one colour
 * share no vertex, so the order of the stores does not matter. */
static inline void simd_scatter_s(sim_vec4 *p, const uint32_t *idx, uint32_t s, uint32_t n,
				  simd_f x, simd_f y, simd_f z, simd_f w)
{
	__m256 u0 = _mm256_unpacklo_ps(x, y), u1 = _mm256_unpackhi_ps(x, y);
	__m256 u2 = _mm256_unpacklo_ps(z, w), u3 = _mm256_unpackhi_ps(z, w);
	__m256 r[4] = {_mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0)),
		       _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2)),
		       _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0)),
		       _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2))};
	if (n == SIMD_W) {
		for (uint32_t l = 0; l < 4; l++) {
			_mm_storeu_ps(&p[idx[l * s]].x, _mm256_castps256_ps128(r[l]));
			_mm_storeu_ps(&p[idx[(l + 4) * s]].x, _mm256_extractf128_ps(r[l], 1));
		}
		return;
	}
	for (uint32_t l = 0; l < n; l++)
		_mm_storeu_ps(&p[idx[l * s]].x,
			      l < 4 ? _mm256_castps256_ps128(r[l]) : _mm256_extractf128_ps(r[l - 4], 1));
}

#elif (defined(DRAPE_SIMD_avx512) || defined(DRAPE_SIMD_avx2) || defined(DRAPE_SIMD_sse2)) && \
	defined(__SSE2__)
#include <emmintrin.h>
#define SIMD_W 4
#define SIMD_NAME "sse2"
typedef __m128 simd_f;
typedef __m128 simd_m;
static inline simd_f simd_splat(float a) { return _mm_set1_ps(a); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm_mul_ps(a, b); }
static inline simd_f simd_div(simd_f a, simd_f b) { return _mm_div_ps(a, b); }
static inline simd_f simd_sqrt(simd_f a) { return _mm_sqrt_ps(a); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm_min_ps(a, b); }
static inline simd_f simd_max(simd_f a, simd_f b) { return _mm_max_ps(a, b); }
static inline simd_f simd_neg(simd_f a) { return _mm_xor_ps(a, _mm_set1_ps(-0.0f)); }
static inline simd_f simd_abs(simd_f a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
static inline simd_m simd_gt(simd_f a, simd_f b) { return _mm_cmpgt_ps(a, b); }
static inline simd_m simd_lt(simd_f a, simd_f b) { return _mm_cmplt_ps(a, b); }
static inline simd_m simd_le(simd_f a, simd_f b) { return _mm_cmple_ps(a, b); }
static inline simd_m simd_ne(simd_f a, simd_f b) { return _mm_cmpneq_ps(a, b); }
static inline simd_m simd_and(simd_m a, simd_m b) { return _mm_and_ps(a, b); }
static inline simd_m simd_andnot(simd_m a, simd_m b) { return _mm_andnot_ps(a, b); }
static inline int simd_any(simd_m m) { return _mm_movemask_ps(m) != 0; }
static inline simd_f simd_select(simd_m m, simd_f a, simd_f b)
{
	return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b));
}

static inline void simd_gather_s(const sim_vec4 *p, const uint32_t *idx, uint32_t s, simd_f *x,
				 simd_f *y, simd_f *z, simd_f *w)
{
	__m128 r0 = _mm_loadu_ps(&p[idx[0]].x), r1 = _mm_loadu_ps(&p[idx[s]].x);
	__m128 r2 = _mm_loadu_ps(&p[idx[2 * s]].x), r3 = _mm_loadu_ps(&p[idx[3 * s]].x);
	_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
	*x = r0, *y = r1, *z = r2, *w = r3;
}

static inline void simd_scatter_s(sim_vec4 *p, const uint32_t *idx, uint32_t s, uint32_t n,
				  simd_f x, simd_f y, simd_f z, simd_f w)
{
	_MM_TRANSPOSE4_PS(x, y, z, w);
	__m128 r[4] = {x, y, z, w};
	for (uint32_t l = 0; l < n; l++)
		_mm_storeu_ps(&p[idx[l * s]].x, r[l]);
}

#else
#define SIMD_W 1
#define SIMD_NAME "scalar"
typedef float simd_f;
typedef int simd_m;
static inline simd_f simd_splat(float a) { return a; }
static inline simd_f simd_add(simd_f a, simd_f b) { return a + b; }
static inline simd_f simd_sub(simd_f a, simd_f b) { return a - b; }
static inline simd_f simd_mul(simd_f a, simd_f b) { return a * b; }
static inline simd_f simd_div(simd_f a, simd_f b) { return a / b; }
static inline simd_f simd_sqrt(simd_f a) { return sqrtf(a); }
static inline simd_f simd_min(simd_f a, simd_f b) { return b < a ? b : a; }
static inline simd_f simd_max(simd_f a, simd_f b) { return b > a ? b : a; }
static inline simd_f simd_neg(simd_f a) { return -a; }
static inline simd_f simd_abs(simd_f a) { return fabsf(a); }
static inline simd_m simd_gt(simd_f a, simd_f b) { return a > b; }
static inline simd_m simd_lt(simd_f a, simd_f b) { return a < b; }
static inline simd_m simd_le(simd_f a, simd_f b) { return a <= b; }
static inline simd_m simd_ne(simd_f a, simd_f b) { return a != b; }
static inline simd_m simd_and(simd_m a, simd_m b) { return a && b; }
static inline simd_m simd_andnot(simd_m a, simd_m b) { return !a && b; }
static inline int simd_any(simd_m m) { return m != 0; }
static inline simd_f simd_select(simd_m m, simd_f a, simd_f b) { return m ? a : b; }

static inline void simd_gather_s(const sim_vec4 *p, const uint32_t *idx, uint32_t s, simd_f *x,
				 simd_f *y, simd_f *z, simd_f *w)
{
	(void)s;
	sim_vec4 r = p[idx[0]];
	*x = r.x, *y = r.y, *z = r.z, *w = r.w;
}

static inline void simd_scatter_s(sim_vec4 *p, const uint32_t *idx, uint32_t s, uint32_t n,
				  simd_f x, simd_f y, simd_f z, simd_f w)
{
	(void)s;
	if (n)
		p[idx[0]] = (sim_vec4){x, y, z, w};
}
#endif

/* The gather and scatter of SIMD_W consecutive indices idx[0..SIMD_W-1]. */
static inline void simd_gather(const sim_vec4 *p, const uint32_t *idx, simd_f *x, simd_f *y,
			       simd_f *z, simd_f *w)
{
	simd_gather_s(p, idx, 1, x, y, z, w);
}

static inline void simd_scatter(sim_vec4 *p, const uint32_t *idx, uint32_t n, simd_f x, simd_f y,
				simd_f z, simd_f w)
{
	simd_scatter_s(p, idx, 1, n, x, y, z, w);
}

/* The stride, in uint32 units, between one record's vertex index and the
 * next record's: SIMD_REC(r, .v[2]) gives the two arguments idx and s of
 * simd_gather_s and simd_scatter_s for field .v[2] of records r[0..]. */
#define SIMD_REC(r, field) (&(r)[0] field), ((uint32_t)(sizeof *(r) / sizeof(uint32_t)))

/*
 * SIMD_IDX(r, .a) is a compound-literal array of r[0].a .. r[SIMD_W-1].a
 * (SIMD_FLT the same for a float field, as a wide float): after inlining the
 * compiler keeps it in registers, so a gather reads its indices straight
 * from the constraint records instead of through a copy on the stack.
 */
#if SIMD_W == 16
#define SIMD_LANES_T(type, r, field)                                                             \
	((const type[16]){(r)[0] field, (r)[1] field, (r)[2] field, (r)[3] field, (r)[4] field,  \
			  (r)[5] field, (r)[6] field, (r)[7] field, (r)[8] field, (r)[9] field,  \
			  (r)[10] field, (r)[11] field, (r)[12] field, (r)[13] field,            \
			  (r)[14] field, (r)[15] field})
static inline simd_f simd_load(const float *f) { return _mm512_loadu_ps(f); }
static inline void simd_store(float *f, simd_f a) { _mm512_storeu_ps(f, a); }
#elif SIMD_W == 8
#define SIMD_LANES_T(type, r, field)                                                            \
	((const type[8]){(r)[0] field, (r)[1] field, (r)[2] field, (r)[3] field, (r)[4] field, \
			 (r)[5] field, (r)[6] field, (r)[7] field})
static inline simd_f simd_load(const float *f) { return _mm256_loadu_ps(f); }
static inline void simd_store(float *f, simd_f a) { _mm256_storeu_ps(f, a); }
#elif SIMD_W == 4
#define SIMD_LANES_T(type, r, field) ((const type[4]){(r)[0] field, (r)[1] field, (r)[2] field, (r)[3] field})
static inline simd_f simd_load(const float *f) { return _mm_loadu_ps(f); }
static inline void simd_store(float *f, simd_f a) { _mm_storeu_ps(f, a); }
#else
#define SIMD_LANES_T(type, r, field) ((const type[1]){(r)[0] field})
static inline simd_f simd_load(const float *f) { return f[0]; }
static inline void simd_store(float *f, simd_f a) { f[0] = a; }
#endif
#define SIMD_IDX(r, field) SIMD_LANES_T(uint32_t, r, field)
#define SIMD_FLT(r, field) simd_load(SIMD_LANES_T(float, r, field))

/* Three-lane vectors of wide floats, for the kernels' geometry. */
typedef struct simd_v3 {
	simd_f x, y, z;
} simd_v3;

static inline simd_v3 simd_v3_sub(simd_v3 a, simd_v3 b)
{
	return (simd_v3){simd_sub(a.x, b.x), simd_sub(a.y, b.y), simd_sub(a.z, b.z)};
}
static inline simd_v3 simd_v3_add(simd_v3 a, simd_v3 b)
{
	return (simd_v3){simd_add(a.x, b.x), simd_add(a.y, b.y), simd_add(a.z, b.z)};
}
static inline simd_v3 simd_v3_scale(simd_v3 a, simd_f s)
{
	return (simd_v3){simd_mul(a.x, s), simd_mul(a.y, s), simd_mul(a.z, s)};
}
/* Same association as v3_dot: (x x + y y) + z z. */
static inline simd_f simd_v3_dot(simd_v3 a, simd_v3 b)
{
	return simd_add(simd_add(simd_mul(a.x, b.x), simd_mul(a.y, b.y)), simd_mul(a.z, b.z));
}
/* Same expressions as v3_cross. */
static inline simd_v3 simd_v3_cross(simd_v3 a, simd_v3 b)
{
	return (simd_v3){simd_sub(simd_mul(a.y, b.z), simd_mul(a.z, b.y)),
			 simd_sub(simd_mul(a.z, b.x), simd_mul(a.x, b.z)),
			 simd_sub(simd_mul(a.x, b.y), simd_mul(a.y, b.x))};
}

#endif
