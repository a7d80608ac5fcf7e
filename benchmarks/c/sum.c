/* Baseline for the full f32 sum benchmark: an OpenMP reduction over SIMD lanes
 * (`omp parallel for simd reduction(+ : s)`, f32 partial sums per lane and thread).
 * Built with gcc -O3 -march=native -fopenmp -shared -fPIC. */
#include <stdint.h>

float sum_c(int64_t n, const float *restrict x)
{
    float s = 0.0f;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}
