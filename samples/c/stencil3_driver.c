/* Drives the compiled samples/stencil3.intent through its C ABI:
 *     int32_t stencil3(const IntentTensor *x, IntentTensor *out);
 * out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3 for 1 <= i < N - 1; out[0] and out[N - 1]
 * keep their contents. Pointwise IEEE arithmetic: compared bit for bit with the
 * serial C loop below. N < 2 is refused with INTENT_E_BOUNDS (the subregion
 * [1, N - 1) is not within [0, N)) and writes nothing. */
#include "stencil3.h"

#include "driver_numeric.h"

static void reference(const float *x, int64_t sx, float *out, int64_t so, int64_t n)
{
    for (int64_t i = 1; i < n - 1; i++)
        out[i * so] = (x[(i - 1) * sx] + x[i * sx] + x[(i + 1) * sx]) / 3.0f;
}

typedef struct {
    DrvTensor *dx, *dout;
} Call;

static int32_t call_stencil(void *ctx)
{
    Call *c = ctx;
    return stencil3(&c->dx->t, &c->dout->t);
}

static void run_case(int64_t n, int64_t sx, int64_t so, int check_threads)
{
    const int strided = sx != 1 || so != 1;
    const size_t xlen = (size_t)(n * sx), olen = (size_t)(n * so);
    float *x = drv_alloc(xlen, sizeof(float)), *out = drv_alloc(olen, sizeof(float));
    float *want = drv_alloc(olen, sizeof(float));
    drv_fill_f32(x, xlen, -100.0f, 100.0f);
    drv_fill_sentinel_f32(out, olen);
    drv_fill_sentinel_f32(want, olen);
    reference(x, sx, want, so, n);

    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_F32, n, strided ? &sx : NULL);
    drv_tensor1(&dout, out, DRV_F32, n, strided ? &so : NULL);
    char label[128];
    snprintf(label, sizeof label, "stencil3 N=%lld%s", (long long)n, strided ? " strided" : "");
    drv_check_f32(label, stencil3(&dx.t, &dout.t), out, want, olen);
    if (check_threads) {
        Call c = {&dx, &dout};
        void *outs[] = {out};
        size_t bytes[] = {olen * sizeof(float)};
        drv_same_across_threads(label, call_stencil, &c, outs, bytes, 1);
    }
    free(x);
    free(out);
    free(want);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static float x[N + 1], out[N + 1], before[N + 1];
    static double xd[N];
    const int64_t zero_stride = 0;
    DrvTensor dx, dout;
    drv_fill_f32(x, N + 1, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&dx, x, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dout, out, DRV_F32, N, NULL);                                                 \
        drv_fill_sentinel_f32(out, N + 1);                                                         \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, code)                                                                        \
    drv_expect_refused(what, stencil3(&dx.t, &dout.t), code, out, before, sizeof out)

    RESET();
    dout.shape[0] = N + 1;
    REFUSED("out extent N+1 (S1)", DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dx, xd, DRV_F64, N, NULL);
    REFUSED("x is f64", DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dx, x, DRV_F32, 3, 3, NULL);
    REFUSED("x has rank 2", DRV_E_RANK);
    RESET();
    dx.t.data = NULL;
    REFUSED("x data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, N, &zero_stride);
    REFUSED("out has a zero stride", DRV_E_STRIDE);
    /* The subregion [1, N - 1) must lie within [0, N) (D4, D5): never clamped. */
    RESET();
    dx.shape[0] = dout.shape[0] = 1;
    REFUSED("N = 1: subregion [1, 0)", -6);
    RESET();
    dx.shape[0] = dout.shape[0] = 0;
    REFUSED("N = 0: subregion [1, -1)", -6);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(21);
    static const int64_t sizes[] = {2, 3, 4, 5, 17, 64, 1000, 4099, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        run_case(sizes[k], 1, 1, 0);
    run_case((1 << 20) + 3, 1, 1, 1);
    /* Strided operands (non-NULL strides). */
    run_case(333, 3, 2, 0);
    run_case(2, 2, 3, 0);
    run_case(70001, 2, 1, 1);
    bad_calls();
    return drv_finish("stencil3");
}
