/* Drives the compiled samples/gather_scatter.intent through its C ABI:
 *     int32_t gather_masked(const IntentTensor *x, const IntentTensor *idx, IntentTensor *out);
 *     int32_t gather_rows(const IntentTensor *table, const IntentTensor *rows, IntentTensor *out);
 *     int32_t stream_compact(x, flags, out, count);
 * Out-of-range indices are masked lanes: they read nothing and give the fill (M3). The
 * compacted output holds the flagged values in order and leaves the rest untouched. */
#include "gather_scatter.h"

#include "driver_common.h"

static const IntentDType DRV_BOOL = {6, 8, 1};

static void run_case(int64_t n, int64_t r, int64_t c)
{
    char label[96];
    snprintf(label, sizeof label, "N=%lld R=%lld C=%lld", (long long)n, (long long)r, (long long)c);
    float *x = drv_alloc((size_t)n, sizeof(float)), *out = drv_alloc((size_t)n, sizeof(float));
    float *want = drv_alloc((size_t)n, sizeof(float));
    int64_t *idx = drv_alloc((size_t)n, sizeof(int64_t)), *rows = drv_alloc((size_t)n, sizeof(int64_t));
    uint8_t *flags = drv_alloc((size_t)n, 1);
    float *table = drv_alloc((size_t)(r * c), sizeof(float));
    float *tout = drv_alloc((size_t)(n * c), sizeof(float)), *twant = drv_alloc((size_t)(n * c), sizeof(float));
    drv_fill_f32(x, (size_t)n, -50.0f, 50.0f);
    drv_fill_f32(table, (size_t)(r * c), -50.0f, 50.0f);
    for (int64_t i = 0; i < n; i++) {
        idx[i] = i % 7 == 0 ? INT64_MIN + i : drv_i64(-3, n + 3); /* some lanes out of range */
        rows[i] = drv_i64(-2, r + 1);
        flags[i] = (uint8_t)(drv_next() & 1);
    }
    DrvTensor dx, didx, dout, dtab, drows, dtout, dflags, dcount;
    drv_tensor1(&dx, x, DRV_F32, n, NULL);
    drv_tensor1(&didx, idx, DRV_I64, n, NULL);
    drv_tensor1(&dout, out, DRV_F32, n, NULL);
    int32_t rc = gather_masked(&dx.t, &didx.t, &dout.t);
    for (int64_t i = 0; i < n; i++)
        want[i] = idx[i] >= 0 && idx[i] < n ? x[idx[i]] : 0.0f;
    drv_check_f32("gather_masked", rc, out, want, (size_t)n);

    drv_tensor2(&dtab, table, DRV_F32, r, c, NULL);
    drv_tensor1(&drows, rows, DRV_I64, n, NULL);
    drv_tensor2(&dtout, tout, DRV_F32, n, c, NULL);
    rc = gather_rows(&dtab.t, &drows.t, &dtout.t);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < c; k++)
            twant[i * c + k] = rows[i] >= 0 && rows[i] < r ? table[rows[i] * c + k] : -1.0f;
    drv_check_f32("gather_rows", rc, tout, twant, (size_t)(n * c));

    int64_t count = -5, kept = 0;
    drv_fill_sentinel_f32(out, (size_t)n);
    drv_fill_sentinel_f32(want, (size_t)n);
    for (int64_t i = 0; i < n; i++)
        if (flags[i])
            want[kept++] = x[i];
    drv_tensor1(&dflags, flags, DRV_BOOL, n, NULL);
    drv_tensor1(&dcount, &count, DRV_I64, 1, NULL);
    rc = stream_compact(&dx.t, &dflags.t, &dout.t, &dcount.t);
    drv_check_f32("stream_compact", rc, out, want, (size_t)n);
    if (rc == 0 && count != kept)
        drv_fail("%s: stream_compact count %lld, expected %lld", label, (long long)count, (long long)kept);
    printf("  (%s)\n", label);
    free(x);
    free(out);
    free(want);
    free(idx);
    free(rows);
    free(flags);
    free(table);
    free(tout);
    free(twant);
}

static void bad_calls(void)
{
    enum { N = 8 };
    static float x[N], out[N], before[N];
    static int64_t idx[N + 1];
    DrvTensor dx, didx, dout;
    drv_fill_f32(x, N, -1.0f, 1.0f);
    drv_fill_sentinel_f32(out, N);
    memcpy(before, out, sizeof out);
    drv_tensor1(&dx, x, DRV_F32, N, NULL);
    drv_tensor1(&didx, idx, DRV_I64, N + 1, NULL);
    drv_tensor1(&dout, out, DRV_F32, N, NULL);
    drv_expect_refused("idx extent N+1 (S1)", gather_masked(&dx.t, &didx.t, &dout.t), DRV_E_SHAPE, out, before,
                       sizeof out);
    drv_tensor1(&didx, idx, DRV_F32, N, NULL);
    drv_expect_refused("idx is f32", gather_masked(&dx.t, &didx.t, &dout.t), DRV_E_DTYPE, out, before, sizeof out);
}

int main(void)
{
    drv_seed(23);
    run_case(0, 0, 3);
    run_case(1, 1, 1);
    run_case(17, 5, 3);
    run_case(1000, 37, 9);
    run_case(100003, 500, 4);
    bad_calls();
    return drv_finish("gather_scatter");
}
