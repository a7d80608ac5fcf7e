/* SLEEF's 16-lane AVX-512 f32 functions (1.0-ulp variants, erfc 1.5, hypot 0.5) over arrays,
 * as a shared library that bench_math.py loads and times beside intentc, libmvec and NumPy.
 * Built by bench_math.py where the SLEEF package (libsleef-dev) and AVX-512 are present:
 *     gcc -O3 -mavx512f -shared -fPIC sleef_bench.c -lsleef
 * sleef_<name>(y, x, w, n): y[i] = name(x[i]) or name(x[i], w[i]); the tail (n mod 16) runs
 * on a padded vector. */
#include <immintrin.h>
#include <sleef.h>
#include <string.h>

#define UNARY(NAME, FN)                                                                          \
    void sleef_##NAME(float *restrict y, const float *restrict x, const float *restrict w, long n) \
    {                                                                                            \
        (void)w;                                                                                 \
        long i = 0;                                                                              \
        for (; i + 16 <= n; i += 16)                                                             \
            _mm512_storeu_ps(y + i, FN(_mm512_loadu_ps(x + i)));                                 \
        if (i < n) {                                                                             \
            float a[16] = {0}, r[16];                                                            \
            memcpy(a, x + i, sizeof(float) * (size_t)(n - i));                                   \
            _mm512_storeu_ps(r, FN(_mm512_loadu_ps(a)));                                         \
            memcpy(y + i, r, sizeof(float) * (size_t)(n - i));                                   \
        }                                                                                        \
    }
#define BINARY(NAME, FN)                                                                         \
    void sleef_##NAME(float *restrict y, const float *restrict x, const float *restrict w, long n) \
    {                                                                                            \
        long i = 0;                                                                              \
        for (; i + 16 <= n; i += 16)                                                             \
            _mm512_storeu_ps(y + i, FN(_mm512_loadu_ps(x + i), _mm512_loadu_ps(w + i)));         \
        if (i < n) {                                                                             \
            float a[16] = {0}, b[16] = {0}, r[16];                                               \
            memcpy(a, x + i, sizeof(float) * (size_t)(n - i));                                   \
            memcpy(b, w + i, sizeof(float) * (size_t)(n - i));                                   \
            _mm512_storeu_ps(r, FN(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));                     \
            memcpy(y + i, r, sizeof(float) * (size_t)(n - i));                                   \
        }                                                                                        \
    }

UNARY(sin, Sleef_sinf16_u10)
UNARY(cos, Sleef_cosf16_u10)
UNARY(tan, Sleef_tanf16_u10)
UNARY(asin, Sleef_asinf16_u10)
UNARY(acos, Sleef_acosf16_u10)
UNARY(atan, Sleef_atanf16_u10)
UNARY(sinh, Sleef_sinhf16_u10)
UNARY(cosh, Sleef_coshf16_u10)
UNARY(tanh, Sleef_tanhf16_u10)
UNARY(asinh, Sleef_asinhf16_u10)
UNARY(acosh, Sleef_acoshf16_u10)
UNARY(atanh, Sleef_atanhf16_u10)
UNARY(exp, Sleef_expf16_u10)
UNARY(exp2, Sleef_exp2f16_u10)
UNARY(expm1, Sleef_expm1f16_u10)
UNARY(log, Sleef_logf16_u10)
UNARY(log2, Sleef_log2f16_u10)
UNARY(log10, Sleef_log10f16_u10)
UNARY(log1p, Sleef_log1pf16_u10)
UNARY(cbrt, Sleef_cbrtf16_u10)
UNARY(erf, Sleef_erff16_u10)
UNARY(erfc, Sleef_erfcf16_u15)
UNARY(lgamma, Sleef_lgammaf16_u10)
UNARY(floor, Sleef_floorf16)
UNARY(ceil, Sleef_ceilf16)
UNARY(round, Sleef_rintf16)
UNARY(trunc, Sleef_truncf16)
BINARY(atan2, Sleef_atan2f16_u10)
BINARY(hypot, Sleef_hypotf16_u05)
BINARY(pow, Sleef_powf16_u10)
BINARY(fmod, Sleef_fmodf16)
BINARY(copysign, Sleef_copysignf16)
