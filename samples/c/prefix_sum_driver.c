/* Drives the compiled samples/prefix_sum.intent through its C ABI:
 *     int32_t prefix_sum(const IntentTensor *x, IntentTensor *out);            f32[N] -> f32[N]
 *     int32_t exclusive_offsets(const IntentTensor *counts, IntentTensor *out); i32[N] -> i64[N]
 * prefix_sum is the inclusive running sum; the compiler may regroup it in blocks,
 * so element i is compared with the exact (double) prefix sum within
 * 1e-5 * (|x[0]| + ... + |x[i]|), and exactly when the inputs are small integers.
 * exclusive_offsets is exact: out[0] = 0, out[i] = counts[0] + ... + counts[i - 1] in
 * i64. Every result must have the same bits with 1, 2 and 3 threads. */
#include "prefix_sum.h"

#include "driver_numeric.h"

typedef struct {
    DrvTensor *a, *b;
} Args;

static int32_t call_prefix(void *ctx)
{
    Args *p = ctx;
    return prefix_sum(&p->a->t, &p->b->t);
}

static int32_t call_offsets(void *ctx)
{
    Args *p = ctx;
    return exclusive_offsets(&p->a->t, &p->b->t);
}

static void run_prefix(int64_t n, int64_t sx, int64_t so, int small_ints, int check_threads)
{
    const size_t xlen = (size_t)(n * sx), olen = (size_t)(n * so);
    float *x = drv_alloc(xlen, sizeof(float)), *out = drv_alloc(olen, sizeof(float));
    if (small_ints)
        for (size_t i = 0; i < xlen; i++)
            x[i] = (float)drv_i64(-50, 50);
    else
        drv_fill_f32(x, xlen, -100.0f, 100.0f);
    double *want = drv_alloc((size_t)n, sizeof(double)), *bound = drv_alloc((size_t)n, sizeof(double));
    double s = 0, a = 0;
    for (int64_t i = 0; i < n; i++) { /* the serial running sum, in double */
        s += x[i * sx];
        a += fabs(x[i * sx]);
        want[i] = s;
        bound[i] = small_ints ? 0.0 : 1e-5 * a;
    }
    drv_fill_sentinel_f32(out, olen);
    DrvTensor dx, dout;
    const int strided = sx != 1 || so != 1;
    drv_tensor1(&dx, x, DRV_F32, n, strided ? &sx : NULL);
    drv_tensor1(&dout, out, DRV_F32, n, strided ? &so : NULL);
    char label[128];
    snprintf(label, sizeof label, "prefix_sum N=%lld%s%s", (long long)n, strided ? " strided" : "",
             small_ints ? " (integers: exact)" : "");
    drv_check_close_f32(label, prefix_sum(&dx.t, &dout.t), out, olen, n, so, want, bound);
    if (check_threads) {
        Args p = {&dx, &dout};
        void *outs[] = {out};
        size_t bytes[] = {olen * sizeof(float)};
        drv_same_across_threads(label, call_prefix, &p, outs, bytes, 1);
    }
    free(x);
    free(out);
    free(want);
    free(bound);
}

static void run_offsets(int64_t n, int64_t sx, int64_t so, int check_threads)
{
    const size_t xlen = (size_t)(n * sx), olen = (size_t)(n * so);
    int32_t *counts = drv_alloc(xlen, sizeof(int32_t));
    int64_t *out = drv_alloc(olen, sizeof(int64_t)), *want = drv_alloc(olen, sizeof(int64_t));
    for (size_t i = 0; i < xlen; i++) /* mostly counts, some large and negative values */
        counts[i] = (int32_t)(i % 13 == 5 ? drv_i64(INT32_MIN, INT32_MAX) : drv_i64(0, 1000));
    for (size_t i = 0; i < olen; i++)
        out[i] = want[i] = -777;
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        want[i * so] = s;
        s += counts[i * sx];
    }
    DrvTensor dx, dout;
    const int strided = sx != 1 || so != 1;
    drv_tensor1(&dx, counts, DRV_I32, n, strided ? &sx : NULL);
    drv_tensor1(&dout, out, DRV_I64, n, strided ? &so : NULL);
    char label[128];
    snprintf(label, sizeof label, "exclusive_offsets N=%lld%s", (long long)n, strided ? " strided" : "");
    int32_t rc = exclusive_offsets(&dx.t, &dout.t);
    if (rc != 0) {
        drv_fail("%s: returned %d (%s)", label, (int)rc, intent_last_error());
    } else {
        size_t bad = olen;
        for (size_t i = 0; i < olen && bad == olen; i++)
            if (out[i] != want[i])
                bad = i;
        if (bad < olen)
            drv_fail("%s: out buffer element %zu is %lld, expected %lld", label, bad, (long long)out[bad],
                     (long long)want[bad]);
        else
            printf("  ok  %s\n", label);
    }
    if (check_threads) {
        Args p = {&dx, &dout};
        void *outs[] = {out};
        size_t bytes[] = {olen * sizeof(int64_t)};
        drv_same_across_threads(label, call_offsets, &p, outs, bytes, 1);
    }
    free(counts);
    free(out);
    free(want);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static float x[N + 1], out[N + 1], before[N + 1];
    static double xd[N];
    static int32_t counts[N + 1];
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
#define REFUSED(what, call, code) drv_expect_refused(what, call, code, out, before, sizeof out)

    RESET();
    dout.shape[0] = N - 1;
    REFUSED("prefix_sum out extent N-1", prefix_sum(&dx.t, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dx, xd, DRV_F64, N, NULL);
    REFUSED("prefix_sum x is f64", prefix_sum(&dx.t, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dout, out, DRV_F32, 3, 3, NULL);
    REFUSED("prefix_sum out has rank 2", prefix_sum(&dx.t, &dout.t), DRV_E_RANK);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, N, &zero_stride);
    REFUSED("prefix_sum out has a zero stride", prefix_sum(&dx.t, &dout.t), DRV_E_STRIDE);
    RESET();
    dx.t.data = NULL;
    REFUSED("prefix_sum x data is NULL", prefix_sum(&dx.t, &dout.t), DRV_E_NULL);
    RESET();
    drv_tensor1(&dx, counts, DRV_I32, N, NULL);
    REFUSED("exclusive_offsets out is f32", exclusive_offsets(&dx.t, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, counts, DRV_I64, N, NULL);
    drv_tensor1(&dout, out, DRV_I64, N / 2, NULL);
    REFUSED("exclusive_offsets counts is i64", exclusive_offsets(&dx.t, &dout.t), DRV_E_DTYPE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(23);
    static const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        run_prefix(sizes[k], 1, 1, 0, 0);
        run_offsets(sizes[k], 1, 1, 0);
    }
    run_prefix((1 << 20) + 7, 1, 1, 0, 1);
    run_prefix((1 << 20) + 7, 1, 1, 1, 1);
    run_offsets((1 << 20) + 7, 1, 1, 1);
    /* Strided operands (non-NULL strides). */
    run_prefix(3001, 3, 2, 0, 0);
    run_prefix(70001, 2, 1, 0, 1);
    run_prefix(0, 2, 2, 0, 0);
    run_offsets(3001, 2, 3, 0);
    bad_calls();
    return drv_finish("prefix_sum");
}
