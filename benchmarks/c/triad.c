/* Baseline for the triad benchmark: a = b + s * c, OpenMP threads + SIMD.
 * Built with gcc -O3 -march=native -fopenmp -shared -fPIC. */
#include <stdint.h>

void triad_c(int64_t n, const float *restrict b, const float *restrict c, float s,
             float *restrict a)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}
