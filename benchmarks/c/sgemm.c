/* Baseline for the sgemm benchmark: C = A B (row-major f32), OpenMP threads over rows,
 * the ikj loop order with a SIMD inner loop (what a C programmer writes without BLAS).
 * Built with gcc -O3 -march=native -fopenmp -shared -fPIC. */
#include <stdint.h>

void sgemm_c(int64_t m, int64_t n, int64_t k, const float *restrict a, const float *restrict b,
             float *restrict c)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; i++) {
        float *restrict row = c + i * n;
        for (int64_t j = 0; j < n; j++)
            row[j] = 0.0f;
        for (int64_t p = 0; p < k; p++) {
            const float av = a[i * k + p];
            const float *restrict bp = b + p * n;
#pragma omp simd
            for (int64_t j = 0; j < n; j++)
                row[j] += av * bp[j];
        }
    }
}
