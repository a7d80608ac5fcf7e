/* Baseline for the histogram benchmark: counts of x in `bins` equal bins of [lo, hi]
 * (hi in the last bin, NaN and values outside not counted), one private histogram per
 * OpenMP thread, summed at the end. Built with gcc -O3 -march=native -fopenmp -shared -fPIC. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void histogram_c(int64_t n, const float *restrict x, int64_t bins, float lo, float hi, int64_t *restrict out)
{
    const int threads = omp_get_max_threads();
    int64_t *priv = calloc((size_t)threads * (size_t)bins, sizeof(int64_t));
    const float scale = (float)bins / (hi - lo);
#pragma omp parallel
    {
        int64_t *restrict h = priv + (int64_t)omp_get_thread_num() * bins;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            const float v = x[i];
            if (v >= lo && v <= hi) {
                int64_t b = (int64_t)((v - lo) * scale);
                h[b < bins ? b : bins - 1]++;
            }
        }
    }
    memset(out, 0, (size_t)bins * sizeof(int64_t));
    for (int t = 0; t < threads; t++)
        for (int64_t b = 0; b < bins; b++)
            out[b] += priv[(int64_t)t * bins + b];
    free(priv);
}
