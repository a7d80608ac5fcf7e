/* Drives the compiled samples/ragged_csr.intent through its C ABI:
 *     int32_t csr_row_sums(const IntentTensor *values, const IntentTensor *offsets, IntentTensor *sums);
 *     int32_t segment_max(const IntentTensor *values, const IntentTensor *offsets, IntentTensor *maxima);
 *     int32_t spmv_csr(values, cols, offsets, x, y);
 * Row r holds values[offsets[r]:offsets[r+1]] (empty rows included). Sums are compared with a
 * double-precision reference within a relative bound (I.sum may regroup, T1); maxima exactly
 * (-inf for an empty row). Offsets that decrease or run past the values are refused with
 * INTENT_E_BOUNDS before anything is written (G2). */
#include "ragged_csr.h"

#include "driver_common.h"

static void make_offsets(int64_t *off, int64_t rows, int64_t max_len)
{
    off[0] = 0;
    for (int64_t r = 0; r < rows; r++)
        off[r + 1] = off[r] + (r % 5 == 3 ? 0 : drv_i64(0, max_len)); /* every 5th row empty */
}

static int close_enough(float got, double want, double scale)
{
    return fabs((double)got - want) <= 1e-5 * scale + 1e-6;
}

static void run_case(int64_t rows, int64_t max_len, int64_t ncols)
{
    int64_t *off = drv_alloc((size_t)rows + 1, sizeof(int64_t));
    make_offsets(off, rows, max_len);
    const int64_t nnz = off[rows];
    float *values = drv_alloc((size_t)nnz, sizeof(float)), *x = drv_alloc((size_t)ncols, sizeof(float));
    int64_t *cols = drv_alloc((size_t)nnz, sizeof(int64_t));
    drv_fill_f32(values, (size_t)nnz, -10.0f, 10.0f);
    drv_fill_f32(x, (size_t)ncols, -1.0f, 1.0f);
    for (int64_t j = 0; j < nnz; j++)
        cols[j] = drv_i64(0, ncols - 1);
    float *sums = drv_alloc((size_t)rows, sizeof(float)), *maxima = drv_alloc((size_t)rows, sizeof(float));
    float *y = drv_alloc((size_t)rows, sizeof(float));
    DrvTensor dv, doff, dsums, dmax, dcols, dx, dy;
    drv_tensor1(&dv, values, DRV_F32, nnz, NULL);
    drv_tensor1(&doff, off, DRV_I64, rows + 1, NULL);
    drv_tensor1(&dsums, sums, DRV_F32, rows, NULL);
    drv_tensor1(&dmax, maxima, DRV_F32, rows, NULL);
    drv_tensor1(&dcols, cols, DRV_I64, nnz, NULL);
    drv_tensor1(&dx, x, DRV_F32, ncols, NULL);
    drv_tensor1(&dy, y, DRV_F32, rows, NULL);
    char label[96];
    snprintf(label, sizeof label, "rows=%lld nnz=%lld", (long long)rows, (long long)nnz);
    int32_t rc1 = csr_row_sums(&dv.t, &doff.t, &dsums.t);
    int32_t rc2 = segment_max(&dv.t, &doff.t, &dmax.t);
    int32_t rc3 = spmv_csr(&dv.t, &dcols.t, &doff.t, &dx.t, &dy.t);
    if (rc1 || rc2 || rc3) {
        drv_fail("%s: returned %d %d %d (%s)", label, (int)rc1, (int)rc2, (int)rc3, intent_last_error());
    } else {
        int bad = 0;
        for (int64_t r = 0; r < rows && !bad; r++) {
            double s = 0.0, scale = 0.0, dot = 0.0, dscale = 0.0;
            float m = -INFINITY;
            for (int64_t j = off[r]; j < off[r + 1]; j++) {
                s += values[j];
                scale += fabs(values[j]);
                m = values[j] > m ? values[j] : m;
                dot += (double)values[j] * x[cols[j]];
                dscale += fabs((double)values[j] * x[cols[j]]);
            }
            if (!close_enough(sums[r], s, scale)) {
                drv_fail("%s: sums[%lld] = %.9g, expected %.9g", label, (long long)r, (double)sums[r], s);
                bad = 1;
            } else if (!drv_same_f32(maxima[r], m)) {
                drv_fail("%s: maxima[%lld] = %.9g, expected %.9g", label, (long long)r, (double)maxima[r], (double)m);
                bad = 1;
            } else if (!close_enough(y[r], dot, dscale)) {
                drv_fail("%s: y[%lld] = %.9g, expected %.9g", label, (long long)r, (double)y[r], dot);
                bad = 1;
            }
        }
        if (!bad)
            printf("  ok  %s\n", label);
    }
    free(off);
    free(values);
    free(x);
    free(cols);
    free(sums);
    free(maxima);
    free(y);
}

/* Offsets that are no ragged relation: refused before anything is written. */
static void bad_offsets(void)
{
    enum { R = 6, NNZ = 20 };
    static float values[NNZ], sums[R], before[R];
    static int64_t off[R + 1];
    DrvTensor dv, doff, dsums;
    drv_fill_f32(values, NNZ, -1.0f, 1.0f);
    const int64_t cases[3][R + 1] = {
        {0, 3, 7, 5, 9, 12, 20},   /* segment 2 runs backwards */
        {0, 3, 7, 9, 12, 15, 21},  /* segment 5 ends past the 20 values */
        {-1, 3, 7, 9, 12, 15, 20}, /* segment 0 begins before 0 */
    };
    const char *what[3] = {"decreasing offsets (G2)", "offsets past the values (G2)", "negative offset (G2)"};
    for (int k = 0; k < 3; k++) {
        memcpy(off, cases[k], sizeof off);
        drv_fill_sentinel_f32(sums, R);
        memcpy(before, sums, sizeof sums);
        drv_tensor1(&dv, values, DRV_F32, NNZ, NULL);
        drv_tensor1(&doff, off, DRV_I64, R + 1, NULL);
        drv_tensor1(&dsums, sums, DRV_F32, R, NULL);
        drv_expect_refused(what[k], csr_row_sums(&dv.t, &doff.t, &dsums.t), -6, sums, before, sizeof sums);
        if (!strstr(intent_last_error(), "segment"))
            drv_fail("%s: the message does not name the segment: %s", what[k], intent_last_error());
    }
    /* Too few offsets for the rows: the read of offsets[R] is out of range. */
    drv_fill_sentinel_f32(sums, R);
    memcpy(before, sums, sizeof sums);
    drv_tensor1(&doff, off, DRV_I64, R, NULL);
    drv_expect_refused("offsets shorter than rows + 1", csr_row_sums(&dv.t, &doff.t, &dsums.t), -6, sums, before,
                       sizeof sums);
}

int main(void)
{
    drv_seed(17);
    run_case(0, 4, 3);
    run_case(1, 4, 3);
    run_case(7, 9, 5);
    run_case(1000, 40, 300);
    run_case(20000, 300, 5000);
    bad_offsets();
    return drv_finish("ragged_csr");
}
