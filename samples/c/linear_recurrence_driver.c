/* Drives the compiled samples/linear_recurrence.intent through its C ABI:
 *     int32_t linear_recurrence(const IntentTensor *a, const IntentTensor *b, float h0,
 *                               IntentTensor *out);                         f32[N] -> f32[N]
 *     int32_t final_state(const IntentTensor *a, const IntentTensor *b, float h0,
 *                         IntentTensor *out);                               f32[N] -> f32[1]
 * h[i] = a[i] * h[i - 1] + b[i], h[-1] = h0; final_state is h[N - 1] (h0 when N = 0).
 * The reference is the serial loop in double. The region scan composes affine maps
 * over segments of the compiler's choosing, so h[i] is compared within
 * 2e-5 * H[i], where H[i] = |a[i]| * H[i - 1] + |b[i]|, H[-1] = |h0| bounds the
 * magnitudes that meet in h[i]. With a in {0, 1} and integer b every step is exact,
 * and so is the comparison. Every result must have the same bits with 1, 2 and 3
 * threads. */
#include "linear_recurrence.h"

#include "driver_numeric.h"

typedef struct {
    DrvTensor *a, *b, *out;
    float h0;
} Args;

static int32_t call_recurrence(void *ctx)
{
    Args *p = ctx;
    return linear_recurrence(&p->a->t, &p->b->t, p->h0, &p->out->t);
}

static int32_t call_final(void *ctx)
{
    Args *p = ctx;
    return final_state(&p->a->t, &p->b->t, p->h0, &p->out->t);
}

/* kind 0: a in [0.5, 1), b in [-1, 1); 1: a in {0, 1}, b integers (exact); 2: a = 1 (a running sum). */
static void run_case(int64_t n, int64_t sa, int64_t sb, int64_t so, int kind, int check_threads)
{
    const size_t alen = (size_t)(n * sa), blen = (size_t)(n * sb), olen = (size_t)(n * so);
    float *a = drv_alloc(alen, sizeof(float)), *b = drv_alloc(blen, sizeof(float));
    float *out = drv_alloc(olen, sizeof(float));
    for (size_t i = 0; i < alen; i++)
        a[i] = kind == 0 ? drv_f32(0.5f, 1.0f) : kind == 1 ? (float)(drv_next() % 8 != 0) : 1.0f;
    for (size_t i = 0; i < blen; i++)
        b[i] = kind == 1 ? (float)drv_i64(-100, 100) : drv_f32(-1.0f, 1.0f);
    const float h0 = kind == 1 ? 7.0f : 0.25f;
    double *want = drv_alloc((size_t)n, sizeof(double)), *bound = drv_alloc((size_t)n, sizeof(double));
    double h = h0, mag = fabs(h0);
    for (int64_t i = 0; i < n; i++) {
        h = (double)a[i * sa] * h + (double)b[i * sb];
        mag = fabs(a[i * sa]) * mag + fabs(b[i * sb]);
        want[i] = h;
        bound[i] = kind == 1 ? 0.0 : 2e-5 * mag;
    }
    drv_fill_sentinel_f32(out, olen);
    const int strided = sa != 1 || sb != 1 || so != 1;
    DrvTensor da, db, dout;
    drv_tensor1(&da, a, DRV_F32, n, strided ? &sa : NULL);
    drv_tensor1(&db, b, DRV_F32, n, strided ? &sb : NULL);
    drv_tensor1(&dout, out, DRV_F32, n, strided ? &so : NULL);
    static const char *const kinds[] = {"a in [0.5, 1)", "a in {0, 1}, integer b: exact", "a = 1"};
    char label[160];
    snprintf(label, sizeof label, "linear_recurrence N=%lld, %s%s", (long long)n, kinds[kind],
             strided ? ", strided" : "");
    drv_check_close_f32(label, linear_recurrence(&da.t, &db.t, h0, &dout.t), out, olen, n, so, want, bound);

    float last = DRV_SENTINEL_F32;
    double want_last = n ? want[n - 1] : h0, bound_last = n ? bound[n - 1] : 0.0;
    DrvTensor dlast;
    drv_tensor1(&dlast, &last, DRV_F32, 1, NULL);
    char flabel[176];
    snprintf(flabel, sizeof flabel, "final_state N=%lld, %s%s", (long long)n, kinds[kind],
             strided ? ", strided" : "");
    drv_check_close_f32(flabel, final_state(&da.t, &db.t, h0, &dlast.t), &last, 1, 1, 1, &want_last,
                        &bound_last);
    if (check_threads) {
        Args p = {&da, &db, &dout, h0};
        void *outs[] = {out};
        size_t bytes[] = {olen * sizeof(float)};
        drv_same_across_threads(label, call_recurrence, &p, outs, bytes, 1);
        Args q = {&da, &db, &dlast, h0};
        void *louts[] = {&last};
        size_t lbytes[] = {sizeof last};
        drv_same_across_threads(flabel, call_final, &q, louts, lbytes, 1);
    }
    free(a);
    free(b);
    free(out);
    free(want);
    free(bound);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static float a[N + 1], b[N + 1], out[N + 1], before[N + 1];
    static double bd[N];
    const int64_t zero_stride = 0;
    DrvTensor da, db, dout;
    drv_fill_f32(a, N + 1, -1.0f, 1.0f);
    drv_fill_f32(b, N + 1, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&da, a, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&db, b, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dout, out, DRV_F32, N, NULL);                                                 \
        drv_fill_sentinel_f32(out, N + 1);                                                         \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, call, code) drv_expect_refused(what, call, code, out, before, sizeof out)

    RESET();
    db.shape[0] = N + 1;
    REFUSED("b extent N+1 (S1)", linear_recurrence(&da.t, &db.t, 0.5f, &dout.t), DRV_E_SHAPE);
    RESET();
    dout.shape[0] = N - 1;
    REFUSED("out extent N-1", linear_recurrence(&da.t, &db.t, 0.5f, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&db, bd, DRV_F64, N, NULL);
    REFUSED("b is f64", linear_recurrence(&da.t, &db.t, 0.5f, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor2(&da, a, DRV_F32, 3, 3, NULL);
    REFUSED("a has rank 2", linear_recurrence(&da.t, &db.t, 0.5f, &dout.t), DRV_E_RANK);
    RESET();
    da.t.data = NULL;
    REFUSED("a data is NULL", linear_recurrence(&da.t, &db.t, 0.5f, &dout.t), DRV_E_NULL);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, N, &zero_stride);
    REFUSED("out has a zero stride", linear_recurrence(&da.t, &db.t, 0.5f, &dout.t), DRV_E_STRIDE);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, 2, NULL);
    REFUSED("final_state out extent 2", final_state(&da.t, &db.t, 0.5f, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, 1, NULL);
    db.shape[0] = N - 1;
    REFUSED("final_state b extent N-1 (S1)", final_state(&da.t, &db.t, 0.5f, &dout.t), DRV_E_SHAPE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(26);
    static const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int kind = 0; kind < 3; kind++)
            run_case(sizes[k], 1, 1, 1, kind, 0);
    run_case((1 << 20) + 11, 1, 1, 1, 0, 1);
    run_case((1 << 20) + 11, 1, 1, 1, 1, 1);
    /* Strided operands (non-NULL strides). */
    run_case(3001, 2, 3, 2, 0, 0);
    run_case(70001, 3, 1, 2, 1, 1);
    run_case(0, 2, 2, 2, 0, 0);
    bad_calls();
    return drv_finish("linear_recurrence");
}
