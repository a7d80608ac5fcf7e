/* Drives the compiled samples/segmented_cumprod_with_resets.intent through its C ABI:
 *     int32_t segmented_cumprod_with_resets(const IntentTensor *reset, const IntentTensor *x,
 *                                           IntentTensor *out);   bool[N], f32[N] -> f32[N]
 * out[i] = x[j] * ... * x[i] with j the last index <= i where reset[j] (0 if none).
 * The reference is the serial loop in double; the scan may regroup the products, so
 * out[i] is compared within 1e-5 * (i - j + 1) * |reference| — relative error grows
 * with the length of the product. With factors that are powers of two every product
 * is exact, and so is the comparison. Every result must have the same bits with 1, 2
 * and 3 threads. */
#include "segmented_cumprod_with_resets.h"

#include "driver_numeric.h"

typedef struct {
    DrvTensor *f, *x, *out;
} Args;

static int32_t call_cumprod(void *ctx)
{
    Args *p = ctx;
    return segmented_cumprod_with_resets(&p->f->t, &p->x->t, &p->out->t);
}

/* kind 0: factors in [0.99, 1.01); 1: factors in {0.5, 1, 2} (exact while the runs between
 * resets are short enough to stay within the f32 range); 2: no resets at all, factors near 1;
 * 3: every element resets (out = x). `every`: about one reset in `every` elements. */
static void run_case(int64_t n, int64_t sf, int64_t sx, int64_t so, int kind, int every, int check_threads)
{
    const size_t flen = (size_t)(n * sf), xlen = (size_t)(n * sx), olen = (size_t)(n * so);
    uint8_t *f = drv_alloc(flen, 1);
    float *x = drv_alloc(xlen, sizeof(float)), *out = drv_alloc(olen, sizeof(float));
    for (size_t i = 0; i < flen; i++)
        f[i] = kind == 3 ? 1 : kind == 2 ? 0 : (drv_next() % (uint64_t)every == 0);
    static const float pow2[] = {0.5f, 1.0f, 2.0f};
    for (size_t i = 0; i < xlen; i++)
        x[i] = kind == 1 ? pow2[drv_next() % 3] : drv_f32(kind == 2 ? 0.9999f : 0.99f, kind == 2 ? 1.0001f : 1.01f);
    double *want = drv_alloc((size_t)n, sizeof(double)), *bound = drv_alloc((size_t)n, sizeof(double));
    double p = 1.0;
    int64_t len = 0;
    for (int64_t i = 0; i < n; i++) {
        if (f[i * sf]) {
            p = x[i * sx];
            len = 1;
        } else {
            p *= x[i * sx];
            len++;
        }
        want[i] = p;
        bound[i] = kind == 1 ? 0.0 : 1e-5 * (double)len * fabs(p);
    }
    drv_fill_sentinel_f32(out, olen);
    const int strided = sf != 1 || sx != 1 || so != 1;
    DrvTensor df, dx, dout;
    drv_tensor1(&df, f, DRV_BOOL, n, strided ? &sf : NULL);
    drv_tensor1(&dx, x, DRV_F32, n, strided ? &sx : NULL);
    drv_tensor1(&dout, out, DRV_F32, n, strided ? &so : NULL);
    static const char *const kinds[] = {"factors near 1", "powers of two: exact", "no reset",
                                        "all reset"};
    char label[160];
    snprintf(label, sizeof label, "segmented_cumprod_with_resets N=%lld, %s, 1 reset in %d%s",
             (long long)n, kinds[kind], every, strided ? ", strided" : "");
    drv_check_close_f32(label, segmented_cumprod_with_resets(&df.t, &dx.t, &dout.t), out, olen, n, so, want,
                        bound);
    if (check_threads) {
        Args a = {&df, &dx, &dout};
        void *outs[] = {out};
        size_t bytes[] = {olen * sizeof(float)};
        drv_same_across_threads(label, call_cumprod, &a, outs, bytes, 1);
    }
    free(f);
    free(x);
    free(out);
    free(want);
    free(bound);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static uint8_t f[N + 1];
    static float x[N + 1], out[N + 1], before[N + 1];
    static int32_t fi[N + 1];
    const int64_t zero_stride = 0;
    DrvTensor df, dx, dout;
    drv_fill_f32(x, N + 1, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&df, f, DRV_BOOL, N, NULL);                                                    \
        drv_tensor1(&dx, x, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dout, out, DRV_F32, N, NULL);                                                 \
        drv_fill_sentinel_f32(out, N + 1);                                                         \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, code)                                                                        \
    drv_expect_refused(what, segmented_cumprod_with_resets(&df.t, &dx.t, &dout.t), code, out, before, \
                       sizeof out)

    RESET();
    df.shape[0] = N - 1;
    REFUSED("reset extent N-1 (S1)", DRV_E_SHAPE);
    RESET();
    drv_tensor1(&df, fi, DRV_I32, N, NULL);
    REFUSED("reset is i32, not bool", DRV_E_DTYPE);
    RESET();
    drv_tensor1(&df, f, (IntentDType){1, 8, 1}, N, NULL);
    REFUSED("reset is u8, not bool", DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dx, x, DRV_F32, 3, 3, NULL);
    REFUSED("x has rank 2", DRV_E_RANK);
    RESET();
    df.t.data = NULL;
    REFUSED("reset data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, N, &zero_stride);
    REFUSED("out has a zero stride", DRV_E_STRIDE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(28);
    static const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        run_case(sizes[k], 1, 1, 1, 0, 50, 0);
        run_case(sizes[k], 1, 1, 1, 1, 20, 0);
        run_case(sizes[k], 1, 1, 1, 3, 1, 0);
    }
    run_case(1000, 1, 1, 1, 2, 1, 0);
    run_case(100003, 1, 1, 1, 2, 1, 0);
    run_case((1 << 20) + 17, 1, 1, 1, 0, 1000, 1);
    run_case((1 << 20) + 17, 1, 1, 1, 1, 20, 1);
    /* Strided operands (non-NULL strides). */
    run_case(3001, 2, 3, 2, 0, 30, 0);
    run_case(70001, 3, 1, 2, 1, 10, 1);
    run_case(0, 2, 2, 2, 0, 10, 0);
    bad_calls();
    return drv_finish("segmented_cumprod_with_resets");
}
