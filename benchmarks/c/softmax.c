/* Baseline for the softmax benchmark: row softmax, OpenMP threads over rows, each
 * exponential computed once (stored, summed, then scaled). Built twice: with exact
 * expf (-O3 -march=native) and with -ffast-math (vectorised approximate expf). */
#include <math.h>
#include <stdint.h>

void softmax_c(int64_t rows, int64_t cols, const float *restrict x, float *restrict out)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t c = 0; c < cols; c++)
            m = fmaxf(m, xr[c]);
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < cols; c++) {
            float e = expf(xr[c] - m);
            o[c] = e;
            s += e;
        }
        float inv = 1.0f / s;
#pragma omp simd
        for (int64_t c = 0; c < cols; c++)
            o[c] *= inv;
    }
}
