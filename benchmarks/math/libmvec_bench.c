/* Times glibc's vector math (libmvec) on f32 arrays: each function over N inputs, best of
 * REPEATS, in nanoseconds per element. Built by bench_math.py with
 *     gcc -O3 -march=native -ffast-math libmvec_bench.c -lmvec -lm
 * so that every loop calls the _ZGV... vector variants (bench_math.py checks the binary).
 *
 *     libmvec_bench N REPEATS   ->  lines "name ns_per_element" */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define UNARY(NAME, EXPR, LO, HI)                                                   \
    static void run_##NAME(float *restrict y, const float *restrict x, long n)     \
    {                                                                               \
        for (long i = 0; i < n; i++) {                                              \
            float v = x[i];                                                         \
            y[i] = EXPR;                                                            \
        }                                                                           \
    }
#define BINARY(NAME, EXPR)                                                          \
    static void run_##NAME(float *restrict y, const float *restrict x, const float *restrict w, long n) \
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

typedef struct {
    const char *name;
    void (*unary)(float *restrict, const float *restrict, long);
    void (*binary)(float *restrict, const float *restrict, const float *restrict, long);
    float lo, hi;
} Case;

#define U(NAME, LO, HI) {#NAME, run_##NAME, NULL, LO, HI}
#define B(NAME, LO, HI) {#NAME, NULL, run_##NAME, LO, HI}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : (1L << 24);
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    const Case cases[] = {
        U(sin, -100, 100), U(cos, -100, 100), U(tan, -100, 100), U(asin, -1, 1), U(acos, -1, 1),
        U(atan, -100, 100), U(sinh, -80, 80), U(cosh, -80, 80), U(asinh, -100, 100), U(acosh, 1, 100),
        U(atanh, -1, 1), U(exp2, -100, 100), U(expm1, -80, 80), U(log2, 0, 100), U(log10, 0, 100),
        U(log1p, -1, 100), U(cbrt, -100, 100), U(erf, -5, 5), U(erfc, -5, 10), U(exp, -80, 80),
        U(log, 0, 100), U(tanh, -10, 10), B(atan2, -100, 100), B(hypot, -100, 100), B(pow, -8, 8),
    };
    float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        unsigned s = 12345;
        for (long i = 0; i < n; i++) {
            s = s * 1103515245u + 12345u;
            x[i] = cases[c].lo + (cases[c].hi - cases[c].lo) * (float)(s >> 8) / 16777216.0f;
            s = s * 1103515245u + 12345u;
            w[i] = -8.0f + 16.0f * (float)(s >> 8) / 16777216.0f;
        }
        double best = 1e30;
        for (int r = 0; r < repeats; r++) {
            double t = now();
            if (cases[c].unary)
                cases[c].unary(y, x, n);
            else
                cases[c].binary(y, x, w, n);
            t = now() - t;
            if (t < best)
                best = t;
        }
        volatile float sink = y[n / 2];
        (void)sink;
        printf("%s %.4f\n", cases[c].name, 1e9 * best / (double)n);
    }
    return 0;
}
