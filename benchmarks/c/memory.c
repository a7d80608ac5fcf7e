/* Baselines of the indexed-memory benchmarks (benchmarks/run.py): segmented sums over CSR
 * rows, CSR sparse matrix times vector, Philox4x32-10 words (four words per counter, stored
 * as four rows) and a 256-bin histogram with private per-thread bins. gcc -O3 -march=native
 * -fopenmp; the reductions vectorise through `omp simd reduction`. */
#include <stdint.h>
#include <string.h>

void segsum_c(int64_t rows, const int64_t *off, const float *v, float *out)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = off[r]; j < off[r + 1]; j++)
            acc += v[j];
        out[r] = acc;
    }
}

void spmv_c(int64_t rows, const int64_t *off, const int64_t *cols, const float *v, const float *x, float *y)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = off[r]; j < off[r + 1]; j++)
            acc += v[j] * x[cols[j]];
        y[r] = acc;
    }
}

void philox_c(int64_t counters, uint32_t seed, uint32_t *out)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < counters; i++) {
        uint32_t c0 = (uint32_t)i, c1 = (uint32_t)((uint64_t)i >> 32), c2 = 0, c3 = 0, k0 = seed, k1 = 0;
        for (int r = 0; r < 10; r++) {
            if (r) {
                k0 += 0x9E3779B9u;
                k1 += 0xBB67AE85u;
            }
            const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
            const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
            c0 = n0;
            c1 = (uint32_t)p1;
            c2 = n2;
            c3 = (uint32_t)p0;
        }
        out[i] = c0;
        out[counters + i] = c1;
        out[2 * counters + i] = c2;
        out[3 * counters + i] = c3;
    }
}

void hist256_c(int64_t n, const int64_t *values, int64_t *counts)
{
    memset(counts, 0, 256 * sizeof(int64_t));
#pragma omp parallel
    {
        int64_t mine[256] = {0};
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
            if (values[i] >= 0 && values[i] < 256)
                mine[values[i]]++;
#pragma omp critical
        for (int b = 0; b < 256; b++)
            counts[b] += mine[b];
    }
}
