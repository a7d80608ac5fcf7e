/* Baseline for the log-sum-exp benchmark: one pass over x, an online fold per thread over
 * blocks of 1024 values (block max, block sum of exp(x - block max), merged into the
 * running (max, sum) by rescaling), the threads' pairs merged the same way. Built twice:
 * with exact expf (-O3 -march=native) and with -ffast-math. */
#include <math.h>
#include <stdint.h>

#define BLOCK 1024

static void merge(float *m, double *s, float bm, double bs)
{
    if (bm == -INFINITY)
        return;
    if (bm > *m) {
        *s = *s * exp((double)(*m - bm)) + bs;
        *m = bm;
    } else {
        *s += bs * exp((double)(bm - *m));
    }
}

float logsumexp_c(int64_t n, const float *restrict x)
{
    float m = -INFINITY;
    double s = 0.0;
#pragma omp parallel
    {
        float tm = -INFINITY;
        double ts = 0.0;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < n; b += BLOCK) {
            int64_t e = b + BLOCK < n ? b + BLOCK : n;
            float bm = -INFINITY;
#pragma omp simd reduction(max : bm)
            for (int64_t i = b; i < e; i++)
                bm = fmaxf(bm, x[i]);
            float bs = 0.0f;
#pragma omp simd reduction(+ : bs)
            for (int64_t i = b; i < e; i++)
                bs += expf(x[i] - bm);
            merge(&tm, &ts, bm, bs);
        }
#pragma omp critical
        merge(&m, &s, tm, ts);
    }
    return m + logf((float)s);
}
