/* Drives the compiled samples/csr_spmm.intent through its C ABI:
 *     int32_t csr_spmm(const IntentTensor *offsets, const IntentTensor *columns,
 *                      const IntentTensor *values, const IntentTensor *x, IntentTensor *out);
 * Row r holds values[p] at column columns[p] for offsets[r] <= p < offsets[r + 1] (i64).
 * The reference sums in double (tolerance: K * 2^-24 * sum |a x|). Offsets that do not start
 * at 0 (INTENT_E_DOMAIN) and a column outside [0, K) (INTENT_E_BOUNDS) are refused before
 * anything is written. */
#include "csr_spmm.h"

#include "driver_common.h"
#include "mx_reference.h"

static void run(int64_t R, int64_t K, int64_t N, int64_t per_row)
{
    int64_t *off = drv_alloc((size_t)R + 1, sizeof(int64_t));
    off[0] = 0;
    for (int64_t r = 0; r < R; r++)
        off[r + 1] = off[r] + (r % 7 == 3 ? 0 : drv_i64(0, per_row));
    const int64_t nnz = off[R];
    int64_t *cols = drv_alloc((size_t)nnz + 1, sizeof(int64_t));
    float *vals = drv_alloc((size_t)nnz + 1, sizeof(float)), *x = drv_alloc((size_t)(K * N), sizeof(float));
    for (int64_t p = 0; p < nnz; p++)
        cols[p] = drv_i64(0, K - 1);
    drv_fill_f32(vals, (size_t)nnz, -1.0f, 1.0f);
    drv_fill_f32(x, (size_t)(K * N), -1.0f, 1.0f);
    float *out = drv_alloc((size_t)(R * N), sizeof(float));
    DrvTensor doff, dcol, dval, dx, dout;
    int32_t rc = csr_spmm(drv_tensor1(&doff, off, DRV_I64, R + 1, NULL), drv_tensor1(&dcol, cols, DRV_I64, nnz, NULL),
                          drv_tensor1(&dval, vals, DRV_F32, nnz, NULL), drv_tensor2(&dx, x, DRV_F32, K, N, NULL),
                          drv_tensor2(&dout, out, DRV_F32, R, N, NULL));
    if (rc != 0) {
        drv_fail("csr_spmm %lldx%lldx%lld returned %d (%s)", (long long)R, (long long)K, (long long)N, (int)rc,
                 intent_last_error());
        return;
    }
    long long bad = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0.0, scale = 0.0;
            for (int64_t p = off[r]; p < off[r + 1]; p++) {
                double t = (double)vals[p] * (double)x[cols[p] * N + n];
                sum += t;
                scale += t < 0 ? -t : t;
            }
            bad += !mx_close(out[r * N + n], sum, scale, K);
        }
    if (bad)
        drv_fail("csr_spmm %lldx%lldx%lld: %lld elements off the reference", (long long)R, (long long)K,
                 (long long)N, bad);
    if (nnz > 0) {
        float *before = drv_alloc((size_t)(R * N), sizeof(float));
        memcpy(before, out, (size_t)(R * N) * sizeof(float));
        int64_t keep = cols[nnz - 1];
        cols[nnz - 1] = K;
        rc = csr_spmm(drv_tensor1(&doff, off, DRV_I64, R + 1, NULL), drv_tensor1(&dcol, cols, DRV_I64, nnz, NULL),
                      drv_tensor1(&dval, vals, DRV_F32, nnz, NULL), drv_tensor2(&dx, x, DRV_F32, K, N, NULL),
                      drv_tensor2(&dout, out, DRV_F32, R, N, NULL));
        drv_expect_refused("a column equal to K", rc, DRV_E_BOUNDS, out, before, (size_t)(R * N) * sizeof(float));
        cols[nnz - 1] = keep;
        off[0] = 1;
        rc = csr_spmm(drv_tensor1(&doff, off, DRV_I64, R + 1, NULL), drv_tensor1(&dcol, cols, DRV_I64, nnz, NULL),
                      drv_tensor1(&dval, vals, DRV_F32, nnz, NULL), drv_tensor2(&dx, x, DRV_F32, K, N, NULL),
                      drv_tensor2(&dout, out, DRV_F32, R, N, NULL));
        drv_expect_refused("offsets[0] = 1", rc, DRV_E_DOMAIN, out, before, (size_t)(R * N) * sizeof(float));
        free(before);
    }
    free(off), free(cols), free(vals), free(x), free(out);
}

int main(void)
{
    drv_seed(5);
    run(1, 1, 1, 1);
    run(40, 70, 33, 8);
    run(500, 400, 64, 16);
    run(0, 5, 3, 2);
    return drv_finish("csr_spmm");
}
