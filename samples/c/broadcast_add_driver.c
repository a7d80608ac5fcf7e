/* Drives the compiled samples/broadcast_add.intent through its C ABI:
 *     int32_t broadcast_add(const IntentTensor *x, const IntentTensor *b, IntentTensor *out);
 *     int32_t add_row_bias(const IntentTensor *x, const IntentTensor *bias, float scale,
 *                          IntentTensor *out);
 * `b` may be [M, N], [1, N], [M, 1] or [1, 1] (size-one broadcasting, S2/S3). */
#include "broadcast_add.h"

#include "driver_common.h"

static void run_broadcast(int64_t m, int64_t n, int64_t p, int64_t q, DrvLayout xl,
                          DrvLayout bl, DrvLayout ol)
{
    DrvMatrix x, b, out;
    drv_matrix(&x, xl, m, n, 1);
    drv_matrix(&b, bl, p, q, 1);
    drv_matrix(&out, ol, m, n, 0);
    float *want = drv_matrix_copy(&out);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            want[i * out.st[0] + j * out.st[1]] =
                x.buf[i * x.st[0] + j * x.st[1]] +
                b.buf[(p == 1 ? 0 : i) * b.st[0] + (q == 1 ? 0 : j) * b.st[1]];

    char label[160];
    snprintf(label, sizeof label, "broadcast_add x[%lld,%lld] %s, b[%lld,%lld] %s, out %s",
             (long long)m, (long long)n, drv_layout_name[xl], (long long)p, (long long)q,
             drv_layout_name[bl], drv_layout_name[ol]);
    int32_t rc = broadcast_add(&x.d.t, &b.d.t, &out.d.t);
    drv_check_f32(label, rc, out.buf, want, out.len);
    free(x.buf);
    free(b.buf);
    free(out.buf);
    free(want);
}

static void run_row_bias(int64_t m, int64_t n, DrvLayout xl, int bias_stride, DrvLayout ol)
{
    DrvMatrix x, out;
    drv_matrix(&x, xl, m, n, 1);
    drv_matrix(&out, ol, m, n, 0);
    const int64_t bs = bias_stride;
    float *bias = drv_alloc((size_t)(n * bs), sizeof(float));
    drv_fill_f32(bias, (size_t)(n * bs), -50.0f, 50.0f);
    DrvTensor dbias;
    drv_tensor1(&dbias, bias, DRV_F32, n, bs == 1 ? NULL : &bs);
    const float scale = drv_f32(-3.0f, 3.0f);

    float *want = drv_matrix_copy(&out);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float t = x.buf[i * x.st[0] + j * x.st[1]] + bias[j * bs];
            want[i * out.st[0] + j * out.st[1]] = t * scale;
        }

    char label[160];
    snprintf(label, sizeof label, "add_row_bias x[%lld,%lld] %s, bias stride %d, out %s",
             (long long)m, (long long)n, drv_layout_name[xl], bias_stride, drv_layout_name[ol]);
    int32_t rc = add_row_bias(&x.d.t, &dbias.t, scale, &out.d.t);
    drv_check_f32(label, rc, out.buf, want, out.len);
    free(x.buf);
    free(bias);
    free(out.buf);
    free(want);
}

static void bad_calls(void)
{
    enum { M = 3, N = 5, BIG = (M + 1) * (N + 1) };
    static float x[BIG], b[BIG], out[BIG], before[BIG];
    static double xd[BIG];
    static int32_t bi[BIG];
    const int64_t zero_col_stride[2] = {N, 0};
    DrvTensor dx, db, dout;
    drv_fill_f32(x, BIG, -1.0f, 1.0f);
    drv_fill_f32(b, BIG, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor2(&dx, x, DRV_F32, M, N, NULL);                                                  \
        drv_tensor2(&db, b, DRV_F32, M, N, NULL);                                                  \
        drv_tensor2(&dout, out, DRV_F32, M, N, NULL);                                              \
        drv_fill_sentinel_f32(out, BIG);                                                           \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, call, code) drv_expect_refused(what, call, code, out, before, sizeof out)

    /* broadcast_add */
    RESET();
    db.shape[0] = 2;
    REFUSED("b [2,N] against x [3,N] (S3)", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_SHAPE);
    RESET();
    db.shape[1] = N - 1;
    REFUSED("b [M,N-1] (S3)", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_SHAPE);
    RESET();
    dout.shape[1] = N + 1;
    REFUSED("out [M,N+1]", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&db, b, DRV_F32, N, NULL);
    REFUSED("b has rank 1", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_RANK);
    RESET();
    drv_tensor2(&dx, xd, DRV_F64, M, N, NULL);
    REFUSED("x is f64", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_DTYPE);
    /* S2: 0 broadcasts with 1 only. */
    RESET();
    dx.shape[0] = 1;
    dout.shape[0] = 1;
    db.shape[0] = 0;
    REFUSED("x [1,N] + b [0,N] (result M=0, not 1)", broadcast_add(&dx.t, &db.t, &dout.t),
            DRV_E_SHAPE);
    RESET();
    dx.shape[0] = 0;
    dout.shape[0] = 0;
    db.shape[0] = 2;
    REFUSED("x [0,N] + b [2,N] (S2)", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_SHAPE);
    RESET();
    db.t.data = NULL;
    REFUSED("b data is NULL", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_NULL);
    RESET();
    REFUSED("out descriptor is NULL", broadcast_add(&dx.t, &db.t, NULL), DRV_E_NULL);
    RESET();
    drv_tensor2(&dout, out, DRV_F32, M, N, zero_col_stride);
    REFUSED("out has a zero stride", broadcast_add(&dx.t, &db.t, &dout.t), DRV_E_STRIDE);

    /* add_row_bias */
    RESET();
    drv_tensor1(&db, b, DRV_F32, N + 1, NULL);
    REFUSED("bias extent N+1 (S1)", add_row_bias(&dx.t, &db.t, 2.0f, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&db, b, DRV_F32, N, NULL);
    dout.shape[0] = M + 1;
    REFUSED("out [M+1,N]", add_row_bias(&dx.t, &db.t, 2.0f, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor2(&db, b, DRV_F32, 1, N, NULL);
    REFUSED("bias has rank 2", add_row_bias(&dx.t, &db.t, 2.0f, &dout.t), DRV_E_RANK);
    RESET();
    drv_tensor1(&db, bi, DRV_I32, N, NULL);
    REFUSED("bias is i32", add_row_bias(&dx.t, &db.t, 2.0f, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor1(&db, b, DRV_F32, N, NULL);
    dx.t.data = NULL;
    REFUSED("x data is NULL", add_row_bias(&dx.t, &db.t, 2.0f, &dout.t), DRV_E_NULL);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(2);
    static const int64_t sizes[][2] = {{3, 5}, {1, 1}, {17, 33}, {64, 129}, {0, 4}, {4, 0},
                                       {257, 1031}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int64_t m = sizes[k][0], n = sizes[k][1];
        run_broadcast(m, n, m, n, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR); /* b [M, N] */
        run_broadcast(m, n, 1, n, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR); /* b [1, N] */
        run_broadcast(m, n, m, 1, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR); /* b [M, 1] */
        run_broadcast(m, n, 1, 1, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR); /* b [1, 1] */
        run_row_bias(m, n, ROW_MAJOR, 1, ROW_MAJOR);
    }
    /* Strided operands (non-NULL strides). */
    run_broadcast(19, 23, 19, 23, TRANSPOSED, EVERY_2ND, PADDED);
    run_broadcast(19, 23, 1, 23, PADDED, EVERY_2ND, EVERY_2ND);
    run_broadcast(19, 23, 19, 1, EVERY_2ND, TRANSPOSED, TRANSPOSED);
    run_broadcast(0, 23, 1, 23, TRANSPOSED, PADDED, PADDED);
    run_row_bias(19, 23, TRANSPOSED, 3, PADDED);
    run_row_bias(31, 7, EVERY_2ND, 2, EVERY_2ND);
    bad_calls();
    return drv_finish("broadcast_add");
}
