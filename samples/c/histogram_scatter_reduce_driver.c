/* Drives the compiled samples/histogram_scatter_reduce.intent through its C ABI:
 *     int32_t histogram256(const IntentTensor *values, const IntentTensor *weights,
 *                          IntentTensor *counts, IntentTensor *sums);
 * counts[b] += number of values equal to b, sums[b] += their weights (values outside [0, 256)
 * count nowhere). Counts are exact. The float sums are compared bit for bit with the grouping
 * docs/language.md defines for scatter_reduce: blocks of max(4096, ceil(n / 1024)) lanes, each
 * summed in order from 0, the block totals added to the old sums in block order. */
#include "histogram_scatter_reduce.h"

#include "driver_common.h"

enum { BINS = 256 };

static void reference(int64_t n, const int64_t *v, const float *w, int64_t *counts, float *sums)
{
    int64_t block = (n + 1023) / 1024;
    block = block < 4096 ? 4096 : block;
    const int64_t blocks = n ? (n + block - 1) / block : 0;
    float *part = drv_alloc((size_t)(blocks * BINS), sizeof(float));
    for (int64_t b = 0; b < blocks; b++)
        for (int64_t i = b * block; i < n && i < (b + 1) * block; i++)
            if (v[i] >= 0 && v[i] < BINS) {
                counts[v[i]]++;
                part[b * BINS + v[i]] += w[i];
            }
    for (int j = 0; j < BINS; j++)
        for (int64_t b = 0; b < blocks; b++)
            sums[j] += part[b * BINS + j];
    free(part);
}

static void run_case(int64_t n)
{
    int64_t *v = drv_alloc((size_t)n, sizeof(int64_t));
    float *w = drv_alloc((size_t)n, sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        v[i] = i % 11 == 5 ? drv_i64(-100, -1) : i % 13 == 7 ? drv_i64(256, 1000) : drv_i64(0, 255);
        w[i] = drv_f32(-1.0f, 1.0f);
    }
    int64_t counts[BINS], want_counts[BINS];
    float sums[BINS], want_sums[BINS];
    for (int j = 0; j < BINS; j++) {
        counts[j] = want_counts[j] = j; /* the histograms add to what is there */
        sums[j] = want_sums[j] = 0.5f * (float)j;
    }
    reference(n, v, w, want_counts, want_sums);
    DrvTensor dv, dw, dc, ds;
    drv_tensor1(&dv, v, DRV_I64, n, NULL);
    drv_tensor1(&dw, w, DRV_F32, n, NULL);
    drv_tensor1(&dc, counts, DRV_I64, BINS, NULL);
    drv_tensor1(&ds, sums, DRV_F32, BINS, NULL);
    char label[64];
    snprintf(label, sizeof label, "N=%lld", (long long)n);
    int32_t rc = histogram256(&dv.t, &dw.t, &dc.t, &ds.t);
    if (rc != 0) {
        drv_fail("%s: returned %d (%s)", label, (int)rc, intent_last_error());
    } else {
        for (int j = 0; j < BINS; j++)
            if (counts[j] != want_counts[j]) {
                drv_fail("%s: counts[%d] = %lld, expected %lld", label, j, (long long)counts[j],
                         (long long)want_counts[j]);
                break;
            }
        drv_check_f32(label, 0, sums, want_sums, BINS);
    }
    free(v);
    free(w);
}

int main(void)
{
    drv_seed(29);
    static const int64_t sizes[] = {0, 1, 100, 4097, 100003, 5000000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        run_case(sizes[k]);
    /* A bad call: 255 bins instead of 256 (a literal extent, S1). */
    static int64_t v[4], counts[BINS];
    static float w[4], sums[BINS], before[BINS];
    DrvTensor dv, dw, dc, ds;
    drv_tensor1(&dv, v, DRV_I64, 4, NULL);
    drv_tensor1(&dw, w, DRV_F32, 4, NULL);
    drv_tensor1(&dc, counts, DRV_I64, BINS - 1, NULL);
    drv_tensor1(&ds, sums, DRV_F32, BINS, NULL);
    memcpy(before, sums, sizeof sums);
    drv_expect_refused("counts has 255 bins", histogram256(&dv.t, &dw.t, &dc.t, &ds.t), DRV_E_SHAPE, sums, before,
                       sizeof sums);
    return drv_finish("histogram_scatter_reduce");
}
