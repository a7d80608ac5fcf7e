/* Drives the compiled samples/online_softmax.intent through its C ABI:
 *     int32_t online_softmax(const IntentTensor *x, IntentTensor *out);        f32[R, C], mut f32[R, C]
 * out[r, c] = exp(x[r, c] - m) / l with (m, l) = (max of the row, sum of exp(x - m)).
 * The reference is the serial two-pass row softmax in double. The compiled code
 * folds each row in segments and uses intentc's own exp, so each element is
 * compared within max(2e-5, (C + 16) * 2^-24) * reference + 1e-30 (an f32 sum of C
 * non-negative terms is within (C - 1) * 2^-24 of the exact one, in any order, and the
 * row of +80s accumulates errors of one sign); the gaps of strided outputs must stay
 * untouched, and the result must have the same bits with 1, 2 and 3 threads.
 * (The driver is linked without -lm: exp in double comes from driver_numeric.h.) */
#include "online_softmax.h"

#include "driver_numeric.h"

typedef struct {
    DrvTensor *a, *b;
} Args;

static int32_t call_softmax(void *ctx)
{
    Args *p = ctx;
    return online_softmax(&p->a->t, &p->b->t);
}

static void run_case(int64_t rows, int64_t cols, DrvLayout xl, DrvLayout ol, float scale, int check_threads)
{
    DrvMatrix x, out;
    drv_matrix(&x, xl, rows, cols, 1);
    drv_matrix(&out, ol, rows, cols, 0);
    for (size_t i = 0; i < x.len; i++)
        x.buf[i] *= scale / 50.0f; /* drv_matrix fills [-50, 50) */
    if (rows > 2 && cols > 2) {    /* a -inf element in row 1 and a row of +80s */
        x.buf[1 * x.st[0] + 2 * x.st[1]] = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            x.buf[2 * x.st[0] + c * x.st[1]] = 80.0f + (float)(c % 5);
    }
    /* want/bound are indexed like out's buffer; the gaps keep the sentinel. */
    double *want = drv_alloc(out.len, sizeof(double)), *bound = drv_alloc(out.len, sizeof(double));
    for (size_t i = 0; i < out.len; i++) {
        want[i] = DRV_SENTINEL_F32;
        bound[i] = 0;
    }
    for (int64_t r = 0; r < rows; r++) {
        double m = -INFINITY, l = 0;
        for (int64_t c = 0; c < cols; c++)
            m = DRV_MAX(m, x.buf[r * x.st[0] + c * x.st[1]]);
        for (int64_t c = 0; c < cols; c++)
            l += drv_exp((double)x.buf[r * x.st[0] + c * x.st[1]] - m);
        for (int64_t c = 0; c < cols; c++) {
            const size_t o = (size_t)(r * out.st[0] + c * out.st[1]);
            want[o] = drv_exp((double)x.buf[r * x.st[0] + c * x.st[1]] - m) / l;
            bound[o] = DRV_MAX(2e-5, (double)(cols + 16) * 0x1p-24) * want[o] + 1e-30;
        }
    }
    char label[160];
    snprintf(label, sizeof label, "online_softmax x[%lld,%lld] %s, out %s, scale %g", (long long)rows,
             (long long)cols, drv_layout_name[xl], drv_layout_name[ol], scale);
    drv_check_close_f32(label, online_softmax(&x.d.t, &out.d.t), out.buf, out.len, (int64_t)out.len, 1,
                        want, bound);
    if (check_threads) {
        Args p = {&x.d, &out.d};
        void *outs[] = {out.buf};
        size_t bytes[] = {out.len * sizeof(float)};
        drv_same_across_threads(label, call_softmax, &p, outs, bytes, 1);
    }
    free(x.buf);
    free(out.buf);
    free(want);
    free(bound);
}

static void bad_calls(void)
{
    enum { R = 4, C = 6, BIG = (R + 1) * (C + 1) };
    static float x[BIG], out[BIG], before[BIG];
    static double xd[BIG];
    const int64_t zero_stride[2] = {C, 0};
    DrvTensor dx, dout;
    drv_fill_f32(x, BIG, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor2(&dx, x, DRV_F32, R, C, NULL);                                                  \
        drv_tensor2(&dout, out, DRV_F32, R, C, NULL);                                              \
        drv_fill_sentinel_f32(out, BIG);                                                           \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, code)                                                                        \
    drv_expect_refused(what, online_softmax(&dx.t, &dout.t), code, out, before, sizeof out)

    RESET();
    dout.shape[1] = C + 1;
    REFUSED("out [R,C+1] (S1)", DRV_E_SHAPE);
    RESET();
    dout.shape[0] = R - 1;
    REFUSED("out [R-1,C] (S1)", DRV_E_SHAPE);
    RESET();
    drv_tensor2(&dx, xd, DRV_F64, R, C, NULL);
    REFUSED("x is f64", DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, R * C, NULL);
    REFUSED("x has rank 1", DRV_E_RANK);
    RESET();
    dout.t.data = NULL;
    REFUSED("out data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor2(&dout, out, DRV_F32, R, C, zero_stride);
    REFUSED("out has a zero stride", DRV_E_STRIDE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(25);
    static const int64_t shapes[][2] = {{3, 5}, {1, 1}, {0, 7}, {7, 0}, {33, 65}, {4, 4099}, {257, 1031}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        run_case(shapes[k][0], shapes[k][1], ROW_MAJOR, ROW_MAJOR, 10.0f, 0);
    run_case(64, 129, ROW_MAJOR, ROW_MAJOR, 50.0f, 0);
    run_case(3, 100003, ROW_MAJOR, ROW_MAJOR, 5.0f, 1);
    run_case(300, 2049, ROW_MAJOR, ROW_MAJOR, 5.0f, 1);
    /* Strided operands (non-NULL strides). */
    run_case(37, 29, TRANSPOSED, PADDED, 10.0f, 0);
    run_case(19, 300, EVERY_2ND, TRANSPOSED, 10.0f, 1);
    run_case(29, 37, PADDED, EVERY_2ND, 10.0f, 0);
    run_case(0, 3, TRANSPOSED, PADDED, 10.0f, 0);
    bad_calls();
    return drv_finish("online_softmax");
}
