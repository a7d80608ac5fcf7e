/* Drives the compiled samples/running_max_with_argmax.intent through its C ABI:
 *     int32_t running_max_with_argmax(const IntentTensor *x, IntentTensor *out0,
 *                                     IntentTensor *out1);     f32[N] -> (f32[N], index[N])
 * out0[i] = max(x[0..i]), out1[i] = the first position where it occurs; NaN counts as
 * the greatest value (the first NaN wins and stays). Max and positions need no
 * rounding: compared exactly with the serial loop below, and the results must have
 * the same bits with 1, 2 and 3 threads. */
#include "running_max_with_argmax.h"

#include "driver_numeric.h"

typedef struct {
    DrvTensor *x, *v, *k;
} Args;

static int32_t call_running(void *ctx)
{
    Args *p = ctx;
    return running_max_with_argmax(&p->x->t, &p->v->t, &p->k->t);
}

static void reference(const float *x, int64_t sx, int64_t n, float *v, int64_t *k, int64_t so)
{
    float best = -INFINITY;
    int64_t at = -1;
    for (int64_t i = 0; i < n; i++) {
        const float xi = x[i * sx];
        if (at < 0 || (!isnan(best) && (isnan(xi) || xi > best))) {
            best = xi;
            at = i;
        }
        v[i * so] = best;
        k[i * so] = at;
    }
}

/* kind 0: small integers (many ties); 1: uniform floats; 2: small integers, some NaN and
 * infinities; 3: decreasing (the maximum stays at 0). */
static void run_case(int64_t n, int64_t sx, int64_t so, int kind, int check_threads)
{
    const size_t xlen = (size_t)(n * sx), olen = (size_t)(n * so);
    float *x = drv_alloc(xlen, sizeof(float));
    for (size_t i = 0; i < xlen; i++) {
        x[i] = kind == 1 ? drv_f32(-1e6f, 1e6f) : kind == 3 ? -(float)i : (float)drv_i64(-1000, 1000);
        if (kind == 2 && i % 97 == 13)
            x[i] = (i / 97) % 3 == 0 ? INFINITY : -INFINITY;
    }
    if (kind == 2 && n > 10)
        x[(size_t)(n * 2 / 3) * (size_t)sx] = NAN;
    float *v = drv_alloc(olen, sizeof(float)), *wv = drv_alloc(olen, sizeof(float));
    int64_t *k = drv_alloc(olen, sizeof(int64_t)), *wk = drv_alloc(olen, sizeof(int64_t));
    drv_fill_sentinel_f32(v, olen);
    drv_fill_sentinel_f32(wv, olen);
    for (size_t i = 0; i < olen; i++)
        k[i] = wk[i] = -777;
    reference(x, sx, n, wv, wk, so);

    const int strided = sx != 1 || so != 1;
    DrvTensor dx, dv, dk;
    drv_tensor1(&dx, x, DRV_F32, n, strided ? &sx : NULL);
    drv_tensor1(&dv, v, DRV_F32, n, strided ? &so : NULL);
    drv_tensor1(&dk, k, DRV_INDEX, n, strided ? &so : NULL);
    static const char *const kinds[] = {"integers", "uniform", "with inf and NaN", "decreasing"};
    char label[128];
    snprintf(label, sizeof label, "running_max_with_argmax N=%lld %s%s", (long long)n, kinds[kind],
             strided ? " strided" : "");
    int32_t rc = running_max_with_argmax(&dx.t, &dv.t, &dk.t);
    drv_check_f32(label, rc, v, wv, olen);
    for (size_t i = 0; rc == 0 && i < olen; i++)
        if (k[i] != wk[i]) {
            drv_fail("%s: positions buffer element %zu is %lld, expected %lld", label, i, (long long)k[i],
                     (long long)wk[i]);
            break;
        }
    if (check_threads) {
        Args p = {&dx, &dv, &dk};
        void *outs[] = {v, k};
        size_t bytes[] = {olen * sizeof(float), olen * sizeof(int64_t)};
        drv_same_across_threads(label, call_running, &p, outs, bytes, 2);
    }
    free(x);
    free(v);
    free(wv);
    free(k);
    free(wk);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static float x[N + 1], v[N + 1], before[N + 1];
    static int64_t k[N + 1];
    static int32_t k32[N + 1];
    const int64_t zero_stride = 0;
    DrvTensor dx, dv, dk;
    drv_fill_f32(x, N + 1, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&dx, x, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dv, v, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dk, k, DRV_INDEX, N, NULL);                                                   \
        drv_fill_sentinel_f32(v, N + 1);                                                           \
        memcpy(before, v, sizeof v);                                                               \
    } while (0)
#define REFUSED(what, code)                                                                        \
    drv_expect_refused(what, running_max_with_argmax(&dx.t, &dv.t, &dk.t), code, v, before, sizeof v)

    RESET();
    dk.shape[0] = N + 1;
    REFUSED("out1 extent N+1", DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dk, k32, DRV_I32, N, NULL);
    REFUSED("out1 is i32, not index", DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, k, DRV_I64, N, NULL);
    REFUSED("x is i64", DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dx, x, DRV_F32, 3, 3, NULL);
    REFUSED("x has rank 2", DRV_E_RANK);
    RESET();
    dk.t.data = NULL;
    REFUSED("out1 data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor1(&dk, k, DRV_INDEX, N, &zero_stride);
    REFUSED("out1 has a zero stride", DRV_E_STRIDE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(27);
    static const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int kind = 0; kind < 4; kind++)
            run_case(sizes[k], 1, 1, kind, 0);
    run_case((1 << 20) + 13, 1, 1, 0, 1);
    run_case((1 << 20) + 13, 1, 1, 2, 1);
    /* Strided operands (non-NULL strides). */
    run_case(3001, 3, 2, 2, 0);
    run_case(70001, 2, 3, 1, 1);
    run_case(0, 2, 2, 0, 0);
    bad_calls();
    return drv_finish("running_max_with_argmax");
}
