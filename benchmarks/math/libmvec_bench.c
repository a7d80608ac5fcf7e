/* glibc's vector math (libmvec) on f32 arrays, as a shared library that bench_math.py loads
 * and times beside intentc and NumPy (interleaved, on the same inputs). Built by
 * bench_math.py with
 *     gcc -O3 -march=native -ffast-math -shared -fPIC libmvec_bench.c -lmvec -lm
 * so that every loop calls the _ZGV... vector variants (bench_math.py checks the library's
 * undefined symbols). mvec_<name>(y, x, w, n): y[i] = name(x[i]) or name(x[i], w[i]). */
#include <math.h>

#define UNARY(NAME, EXPR, LO, HI)                                                   \
    void mvec_##NAME(float *restrict y, const float *restrict x, const float *restrict w, long n) \
    {                                                                               \
        (void)w;                                                                    \
        for (long i = 0; i < n; i++) {                                              \
            float v = x[i];                                                         \
            y[i] = EXPR;                                                            \
        }                                                                           \
    }
#define BINARY(NAME, EXPR)                                                          \
    void mvec_##NAME(float *restrict y, const float *restrict x, const float *restrict w, long n) \
    {                                                                               \
        for (long i = 0; i < n; i++) {                                              \
            float v = x[i], u = w[i];                                               \
            y[i] = EXPR;                                                            \
        }                                                                           \
    }

UNARY(sin, sinf(v), -100, 100)
UNARY(cos, cosf(v), -100, 100)
UNARY(tan, tanf(v), -100, 100)
UNARY(asin, asinf(v), -1, 1)
UNARY(acos, acosf(v), -1, 1)
UNARY(atan, atanf(v), -100, 100)
UNARY(sinh, sinhf(v), -80, 80)
UNARY(cosh, coshf(v), -80, 80)
UNARY(asinh, asinhf(v), -100, 100)
UNARY(acosh, acoshf(v), 1, 100)
UNARY(atanh, atanhf(v), -1, 1)
UNARY(exp2, exp2f(v), -100, 100)
UNARY(expm1, expm1f(v), -80, 80)
UNARY(log2, log2f(v), 0, 100)
UNARY(log10, log10f(v), 0, 100)
UNARY(log1p, log1pf(v), -1, 100)
UNARY(cbrt, cbrtf(v), -100, 100)
UNARY(erf, erff(v), -5, 5)
UNARY(erfc, erfcf(v), -5, 10)
UNARY(exp, expf(v), -80, 80)
UNARY(log, logf(v), 0, 100)
UNARY(tanh, tanhf(v), -10, 10)
BINARY(atan2, atan2f(v, u))
BINARY(hypot, hypotf(v, u))
BINARY(pow, powf(v < 0 ? -v : v, u))
