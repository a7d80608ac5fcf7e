/* Baselines for the stencil3 benchmark: out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3 for
 * 1 <= i < n - 1, the ends untouched (as samples/stencil3.intent). Built with
 * gcc -O3 -march=native -fopenmp -shared -fPIC: stencil3_c is the plain serial loop
 * (the -O3 baseline of bench/TARGETS.md), stencil3_omp the same loop with
 * `omp parallel for simd`. */
#include <stdint.h>

void stencil3_c(int64_t n, const float *restrict x, float *restrict out)
{
    for (int64_t i = 1; i < n - 1; i++)
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0f;
}

void stencil3_omp(int64_t n, const float *restrict x, float *restrict out)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 1; i < n - 1; i++)
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0f;
}
