/* Drives the compiled samples/row_scale.intent through its C ABI:
 *     int32_t row_scale(const IntentTensor *x, const IntentTensor *s, IntentTensor *out);
 * out[r, c] = x[r, c] * s[r], with `out` a `mut` parameter. */
#include "row_scale.h"

#include "driver_common.h"

static void run_case(int64_t rows, int64_t cols, DrvLayout xl, int s_stride, DrvLayout ol)
{
    DrvMatrix x, out;
    drv_matrix(&x, xl, rows, cols, 1);
    drv_matrix(&out, ol, rows, cols, 0);
    const int64_t ss = s_stride;
    float *s = drv_alloc((size_t)(rows * ss), sizeof(float));
    drv_fill_f32(s, (size_t)(rows * ss), -4.0f, 4.0f);
    DrvTensor ds;
    drv_tensor1(&ds, s, DRV_F32, rows, ss == 1 ? NULL : &ss);

    float *want = drv_matrix_copy(&out);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            want[r * out.st[0] + c * out.st[1]] = x.buf[r * x.st[0] + c * x.st[1]] * s[r * ss];

    char label[160];
    snprintf(label, sizeof label, "x[%lld,%lld] %s, s stride %d, out %s", (long long)rows,
             (long long)cols, drv_layout_name[xl], s_stride, drv_layout_name[ol]);
    drv_check_f32(label, row_scale(&x.d.t, &ds.t, &out.d.t), out.buf, want, out.len);
    free(x.buf);
    free(s);
    free(out.buf);
    free(want);
}

static void bad_calls(void)
{
    enum { R = 4, C = 6, BIG = (R + 1) * (C + 1) };
    static float x[BIG], s[BIG], out[BIG], before[BIG];
    static double sd[BIG];
    const int64_t zero_row_stride[2] = {0, 1};
    DrvTensor dx, ds, dout;
    drv_fill_f32(x, BIG, -1.0f, 1.0f);
    drv_fill_f32(s, BIG, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor2(&dx, x, DRV_F32, R, C, NULL);                                                  \
        drv_tensor1(&ds, s, DRV_F32, R, NULL);                                                     \
        drv_tensor2(&dout, out, DRV_F32, R, C, NULL);                                              \
        drv_fill_sentinel_f32(out, BIG);                                                           \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, code) \
    drv_expect_refused(what, row_scale(&dx.t, &ds.t, &dout.t), code, out, before, sizeof out)

    RESET();
    ds.shape[0] = R + 1;
    REFUSED("s extent R+1 (S1)", DRV_E_SHAPE);
    RESET();
    dout.shape[1] = C + 1;
    REFUSED("out [R,C+1] (S1)", DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, R * C, NULL);
    REFUSED("x has rank 1", DRV_E_RANK);
    RESET();
    drv_tensor1(&ds, sd, DRV_F64, R, NULL);
    REFUSED("s is f64", DRV_E_DTYPE);
    RESET();
    dout.t.data = NULL;
    REFUSED("out data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor2(&dout, out, DRV_F32, R, C, zero_row_stride);
    REFUSED("out has a zero stride", DRV_E_STRIDE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(3);
    static const int64_t sizes[][2] = {{3, 5}, {1, 1}, {0, 7}, {7, 0}, {33, 65}, {513, 257},
                                       {1000, 1001}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        run_case(sizes[k][0], sizes[k][1], ROW_MAJOR, 1, ROW_MAJOR);
    /* Strided operands (non-NULL strides). */
    run_case(37, 29, TRANSPOSED, 2, PADDED);
    run_case(37, 29, EVERY_2ND, 1, TRANSPOSED);
    run_case(5, 300, PADDED, 3, EVERY_2ND);
    run_case(0, 3, TRANSPOSED, 2, PADDED);
    bad_calls();
    return drv_finish("row_scale");
}
