/* Baseline for the saxpy benchmark: out = a * x + y, OpenMP threads + SIMD.
 * Built with gcc -O3 -march=native -fopenmp -shared -fPIC. */
#include <stdint.h>

void saxpy_c(int64_t n, float a, const float *restrict x, const float *restrict y,
             float *restrict out)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        out[i] = a * x[i] + y[i];
}
