/* Drives the compiled samples/logsumexp.intent through its C ABI:
 *     int32_t logsumexp(const IntentTensor *x, IntentTensor *out);             f32[N] -> f32[1]
 * The reference is the serial two-pass formula in double: m = max x,
 * m + log(sum exp(x - m)). The compiled region fold segments the axis and rescales
 * partial sums with intentc's own exp, so it is compared within
 * 1e-5 * max(1, |reference|); no elements or only -inf give -inf exactly. The
 * result must have the same bits with 1, 2 and 3 threads. (The driver is linked
 * without -lm: exp and log in double come from driver_numeric.h.) */
#include "logsumexp.h"

#include "driver_numeric.h"

typedef struct {
    DrvTensor *a, *b;
} Args;

static int32_t call_lse(void *ctx)
{
    Args *p = ctx;
    return logsumexp(&p->a->t, &p->b->t);
}

static double reference(const float *x, int64_t n, int64_t sx)
{
    double m = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i * sx] > m)
            m = x[i * sx];
    if (m == -INFINITY)
        return -INFINITY;
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += drv_exp((double)x[i * sx] - m);
    return m + drv_log(s);
}

/* kind 0: uniform in [lo, hi]; 1: also some -inf; 2: only -inf. */
static void run_case(int64_t n, int64_t sx, float lo, float hi, int kind, int check_threads)
{
    const size_t xlen = (size_t)(n * sx);
    float *x = drv_alloc(xlen, sizeof(float));
    drv_fill_f32(x, xlen, lo, hi);
    for (size_t i = 0; i < xlen; i++)
        if (kind == 2 || (kind == 1 && i % 7 == 3))
            x[i] = -INFINITY;
    double want = reference(x, n, sx);
    double bound = 1e-5 * DRV_MAX(1.0, fabs(want));
    float out = DRV_SENTINEL_F32;
    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_F32, n, sx == 1 ? NULL : &sx);
    drv_tensor1(&dout, &out, DRV_F32, 1, NULL);
    char label[128];
    snprintf(label, sizeof label, "logsumexp N=%lld in [%g, %g]%s%s", (long long)n, lo, hi,
             kind == 1 ? " with -inf" : kind == 2 ? " all -inf" : "", sx == 1 ? "" : " strided");
    drv_check_close_f32(label, logsumexp(&dx.t, &dout.t), &out, 1, 1, 1, &want, &bound);
    if (check_threads) {
        Args p = {&dx, &dout};
        void *outs[] = {&out};
        size_t bytes[] = {sizeof out};
        drv_same_across_threads(label, call_lse, &p, outs, bytes, 1);
    }
    free(x);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static float x[N + 1], out[4], before[4];
    static double xd[N];
    DrvTensor dx, dout;
    drv_fill_f32(x, N + 1, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&dx, x, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dout, out, DRV_F32, 1, NULL);                                                 \
        drv_fill_sentinel_f32(out, 4);                                                             \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, code)                                                                        \
    drv_expect_refused(what, logsumexp(&dx.t, &dout.t), code, out, before, sizeof out)

    RESET();
    dout.shape[0] = 2;
    REFUSED("out extent 2, not 1", DRV_E_SHAPE);
    RESET();
    dout.shape[0] = 0;
    REFUSED("out extent 0, not 1", DRV_E_SHAPE);
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
    dout.t.data = NULL;
    REFUSED("out data is NULL", DRV_E_NULL);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(24);
    static const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        run_case(sizes[k], 1, -10.0f, 10.0f, 0, 0);
        run_case(sizes[k], 1, -1.0f, 1.0f, 1, 0);
    }
    run_case(1000, 1, 0.0f, 0.0f, 2, 0);         /* only -inf */
    run_case(100003, 1, 70.0f, 90.0f, 0, 0);     /* exp(x) alone would overflow f32 */
    run_case(100003, 1, -200.0f, -150.0f, 0, 0); /* ... or underflow */
    run_case((1 << 20) + 9, 1, -30.0f, 30.0f, 1, 1);
    run_case(30001, 3, -5.0f, 5.0f, 0, 1); /* strided */
    run_case(0, 2, -5.0f, 5.0f, 0, 0);
    bad_calls();
    return drv_finish("logsumexp");
}
