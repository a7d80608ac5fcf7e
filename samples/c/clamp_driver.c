/* Drives the compiled samples/clamp.intent through its C ABI:
 *     int32_t clamp(const IntentTensor *x, float lo, float hi, IntentTensor *out);
 * out[i] = lo if x[i] < lo, else hi if x[i] > hi, else x[i] (so NaN passes through). */
#include "clamp.h"

#include "driver_common.h"

static float reference(float v, float lo, float hi)
{
    if (v < lo)
        return lo;
    else if (v > hi)
        return hi;
    else
        return v;
}

static void run_case(int64_t n, float lo, float hi, int64_t sx, int64_t so, int specials)
{
    const int strided = sx != 1 || so != 1;
    const size_t xlen = (size_t)(n * sx), olen = (size_t)(n * so);
    float *x = drv_alloc(xlen, sizeof(float)), *out = drv_alloc(olen, sizeof(float));
    float *want = drv_alloc(olen, sizeof(float));
    drv_fill_f32(x, xlen, -10.0f, 10.0f);
    if (specials) { /* infinities, NaN, signed zeros and the bounds themselves */
        const float extra[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, lo, hi};
        for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++)
            if (n > 0)
                x[(size_t)((int64_t)(drv_next() % (uint64_t)n) * sx)] = extra[k];
    }
    drv_fill_sentinel_f32(out, olen);
    drv_fill_sentinel_f32(want, olen);
    for (int64_t i = 0; i < n; i++)
        want[i * so] = reference(x[i * sx], lo, hi);

    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_F32, n, strided ? &sx : NULL);
    drv_tensor1(&dout, out, DRV_F32, n, strided ? &so : NULL);
    char label[128];
    snprintf(label, sizeof label, "N=%lld lo=%g hi=%g%s%s", (long long)n, (double)lo, (double)hi,
             strided ? " strided" : "", specials ? " inf/nan" : "");
    drv_check_f32(label, clamp(&dx.t, lo, hi, &dout.t), out, want, olen);
    free(x);
    free(out);
    free(want);
}

static void bad_calls(void)
{
    enum { N = 21 };
    static float x[N + 1], out[N + 1], before[N + 1];
    static int32_t xi[N];
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
#define REFUSED(what, code) \
    drv_expect_refused(what, clamp(&dx.t, -0.5f, 0.5f, &dout.t), code, out, before, sizeof out)

    RESET();
    dout.shape[0] = N + 1;
    REFUSED("out extent N+1 (S1)", DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dx, xi, DRV_I32, N, NULL);
    REFUSED("x is i32", DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dout, out, DRV_F32, N, 1, NULL);
    REFUSED("out has rank 2", DRV_E_RANK);
    RESET();
    dx.t.data = NULL;
    REFUSED("x data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, N, &zero_stride);
    REFUSED("out has a zero stride", DRV_E_STRIDE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(4);
    static const int64_t sizes[] = {0, 1, 2, 7, 31, 1000, 4099, 65537, (1 << 20) + 1};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        run_case(sizes[k], -2.5f, 3.0f, 1, 1, 0);
    run_case(4099, -2.5f, 3.0f, 1, 1, 1);
    run_case(100, 5.0f, -5.0f, 1, 1, 1); /* lo > hi: the first branch wins */
    run_case(100, 1.0f, 1.0f, 1, 1, 0);
    run_case(1000, 0.0f, 1.0f, 1, 1, 1); /* -0.0 is not < 0.0: it passes through */
    run_case(100, NAN, 1.0f, 1, 1, 1);   /* comparisons with NaN are false */
    run_case(100, -1.0f, NAN, 1, 1, 1);
    /* Strided operands (non-NULL strides). */
    run_case(513, -1.0f, 1.0f, 3, 2, 1);
    run_case(0, -1.0f, 1.0f, 2, 2, 0);
    bad_calls();
    return drv_finish("clamp");
}
