/* Baselines for the inclusive prefix sum benchmark (f32).
 * prefix_sum_two_pass: the classic two-pass OpenMP scan — each thread sums its
 * contiguous chunk (vectorised), the chunk totals are scanned serially, then each
 * thread rescans its chunk starting from its offset. prefix_sum_serial: one loop.
 * Built with gcc -O3 -march=native -fopenmp -shared -fPIC. */
#include <omp.h>
#include <stdint.h>

void prefix_sum_serial(int64_t n, const float *restrict x, float *restrict out)
{
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        out[i] = s;
    }
}

void prefix_sum_two_pass(int64_t n, const float *restrict x, float *restrict out)
{
    float offsets[257] = {0.0f};
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads() < 256 ? omp_get_num_threads() : 256;
        const int64_t b = t < nt ? n * t / nt : n, e = t < nt ? n * (t + 1) / nt : n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t i = b; i < e; i++)
            s += x[i];
        if (t < nt)
            offsets[t + 1] = s;
#pragma omp barrier
#pragma omp single
        for (int k = 1; k <= nt; k++)
            offsets[k] += offsets[k - 1];
        /* the implicit barrier of `single` publishes the offsets */
        float run = t < nt ? offsets[t] : 0.0f;
        for (int64_t i = b; i < e; i++) {
            run += x[i];
            out[i] = run;
        }
    }
}
