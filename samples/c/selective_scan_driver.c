/* Drives the compiled samples/selective_scan.intent through its C ABI:
 *     int32_t selective_scan(const IntentTensor *x, const IntentTensor *delta,
 *                            const IntentTensor *a, const IntentTensor *b,
 *                            const IntentTensor *c, const IntentTensor *h0,
 *                            IntentTensor *out0, IntentTensor *out1);
 * x, delta: f32[D, T]; a, h0: f32[D, 16]; b, c: f32[16, T]; out0 = y: f32[D, T];
 * out1 = the last state: f32[D, 16].
 *     h[d, s, t] = exp(delta[d, t] a[d, s]) h[d, s, t - 1] + delta[d, t] b[s, t] x[d, t]
 *     y[d, t] = sum over s of c[s, t] h[d, s, t],   h[d, s, -1] = h0[d, s]
 * The reference is the serial loop in double. With the decay p = exp(delta a) of each
 * step, M = p M + |q| bounds |h| and S = p S + M accumulates what rounding errors
 * can build up; h is compared within 8 u (S + M) and y within 8 u sum |c| (S + M),
 * u = 2^-24 (samples/checks.py explains the bound). delta = 0 (h stays h0, y the sum
 * over s in order) and integer steps (a = 0, delta = 1, small integers) are exact
 * and so are their comparisons. Every result must have the same bits with 1, 2 and
 * 3 threads. */
#include "selective_scan.h"

#include "driver_numeric.h"

enum { S = 16 };

typedef struct {
    int64_t d, t;
    float *x, *delta, *a, *b, *c, *h0;
} Inputs;

enum { MAMBA, SLOW_DECAY, DELTA_ZERO, INTEGER_STEPS };
static const char *const kind_name[] = {"mamba", "slow decay", "delta = 0: exact", "integer steps: exact"};

static void make_inputs(Inputs *in, int64_t d, int64_t t, int kind)
{
    in->d = d;
    in->t = t;
    in->x = drv_alloc((size_t)(d * t), sizeof(float));
    in->delta = drv_alloc((size_t)(d * t), sizeof(float));
    in->a = drv_alloc((size_t)(d * S), sizeof(float));
    in->b = drv_alloc((size_t)(S * t), sizeof(float));
    in->c = drv_alloc((size_t)(S * t), sizeof(float));
    in->h0 = drv_alloc((size_t)(d * S), sizeof(float));
    const int integers = kind == INTEGER_STEPS;
    for (int64_t i = 0; i < d * t; i++) {
        in->x[i] = integers ? (float)drv_i64(-1, 1) : drv_f32(-1.0f, 1.0f);
        switch (kind) {
        case MAMBA: /* log-uniform in [1e-3, 1e-1] */
            in->delta[i] = (float)drv_exp(drv_log(1e-3) + (drv_log(1e-1) - drv_log(1e-3)) * drv_f32(0.0f, 1.0f));
            break;
        case SLOW_DECAY: in->delta[i] = drv_f32(1e-4f, 1e-3f); break;
        case DELTA_ZERO: in->delta[i] = 0.0f; break;
        default: in->delta[i] = 1.0f; break;
        }
    }
    for (int64_t i = 0; i < d * S; i++) {
        in->a[i] = kind == SLOW_DECAY ? -drv_f32(0.1f, 1.0f) : integers ? 0.0f : -drv_f32(1.0f, 16.0f);
        in->h0[i] = integers ? (float)drv_i64(-8, 8) : drv_f32(-1.0f, 1.0f);
    }
    for (int64_t i = 0; i < S * t; i++) {
        in->b[i] = integers ? (float)drv_i64(-1, 1) : drv_f32(-1.0f, 1.0f);
        in->c[i] = integers ? (float)drv_i64(-1, 1) : drv_f32(-1.0f, 1.0f);
    }
}

static void free_inputs(Inputs *in)
{
    free(in->x);
    free(in->delta);
    free(in->a);
    free(in->b);
    free(in->c);
    free(in->h0);
}

/* The serial recurrence in double, and the bounds (0 for the exact kinds). For
 * delta = 0 the expected y is the f32 sum over s in order, as the kernel adds. */
static void reference(const Inputs *in, int kind, double *y, double *ybound, double *last, double *lbound)
{
    const double u = 8.0 / 16777216.0;
    const int exact = kind == DELTA_ZERO || kind == INTEGER_STEPS;
    for (int64_t i = 0; i < in->d * in->t; i++)
        y[i] = ybound[i] = 0.0;
    float *y32 = drv_alloc((size_t)(in->d * in->t), sizeof(float));
    for (int64_t d = 0; d < in->d; d++)
        for (int s = 0; s < S; s++) {
            const double a = in->a[d * S + s];
            double h = in->h0[d * S + s], mag = fabs(h), acc = 0.0;
            for (int64_t t = 0; t < in->t; t++) {
                const double dt = in->delta[d * in->t + t];
                const double p = drv_exp(dt * a), q = dt * in->b[s * in->t + t] * in->x[d * in->t + t];
                h = p * h + q;
                mag = p * mag + fabs(q);
                acc = p * acc + mag;
                const double c = in->c[s * in->t + t];
                y[d * in->t + t] += c * h;
                ybound[d * in->t + t] += exact ? 0.0 : u * fabs(c) * (acc + mag);
                y32[d * in->t + t] = y32[d * in->t + t] + in->c[s * in->t + t] * (float)h;
            }
            last[d * S + s] = h;
            lbound[d * S + s] = exact ? 0.0 : u * (acc + mag);
        }
    if (kind == DELTA_ZERO)
        for (int64_t i = 0; i < in->d * in->t; i++)
            y[i] = y32[i];
    free(y32);
}

typedef struct {
    DrvTensor *x, *delta, *a, *b, *c, *h0, *y, *last;
} Args;

static int32_t call(void *ctx)
{
    Args *p = ctx;
    return selective_scan(&p->x->t, &p->delta->t, &p->a->t, &p->b->t, &p->c->t, &p->h0->t, &p->y->t, &p->last->t);
}

/* One case; `strided`: x and b transposed in memory, y and last every other element. */
static void run_case(int64_t d, int64_t t, int kind, int strided, int check_threads)
{
    Inputs in;
    make_inputs(&in, d, t, kind);
    double *want = drv_alloc((size_t)(d * t), sizeof(double)), *bound = drv_alloc((size_t)(d * t), sizeof(double));
    double *want_last = drv_alloc((size_t)(d * S), sizeof(double));
    double *bound_last = drv_alloc((size_t)(d * S), sizeof(double));
    reference(&in, kind, want, bound, want_last, bound_last);

    DrvTensor dx, ddelta, da, db, dc, dh0, dy, dlast;
    float *xt = NULL, *bt = NULL;
    const int64_t step = strided ? 2 : 1;
    const size_t ylen = (size_t)(d * t * step), llen = (size_t)(d * S * step);
    float *y = drv_alloc(ylen, sizeof(float)), *last = drv_alloc(llen, sizeof(float));
    drv_fill_sentinel_f32(y, ylen);
    drv_fill_sentinel_f32(last, llen);
    if (strided) {
        xt = drv_alloc((size_t)(d * t), sizeof(float));
        bt = drv_alloc((size_t)(S * t), sizeof(float));
        for (int64_t i = 0; i < d; i++)
            for (int64_t k = 0; k < t; k++)
                xt[k * d + i] = in.x[i * t + k];
        for (int64_t s = 0; s < S; s++)
            for (int64_t k = 0; k < t; k++)
                bt[k * S + s] = in.b[s * t + k];
        const int64_t xs[2] = {1, d}, bs[2] = {1, S}, ys[2] = {2 * t, 2}, ls[2] = {2 * S, 2};
        drv_tensor2(&dx, xt, DRV_F32, d, t, xs);
        drv_tensor2(&db, bt, DRV_F32, S, t, bs);
        drv_tensor2(&dy, y, DRV_F32, d, t, ys);
        drv_tensor2(&dlast, last, DRV_F32, d, S, ls);
    } else {
        drv_tensor2(&dx, in.x, DRV_F32, d, t, NULL);
        drv_tensor2(&db, in.b, DRV_F32, S, t, NULL);
        drv_tensor2(&dy, y, DRV_F32, d, t, NULL);
        drv_tensor2(&dlast, last, DRV_F32, d, S, NULL);
    }
    drv_tensor2(&ddelta, in.delta, DRV_F32, d, t, NULL);
    drv_tensor2(&da, in.a, DRV_F32, d, S, NULL);
    drv_tensor2(&dc, in.c, DRV_F32, S, t, NULL);
    drv_tensor2(&dh0, in.h0, DRV_F32, d, S, NULL);

    char label[160], llabel[176];
    snprintf(label, sizeof label, "selective_scan D=%lld T=%lld, %s%s", (long long)d, (long long)t,
             kind_name[kind], strided ? ", strided" : "");
    snprintf(llabel, sizeof llabel, "%s: last state", label);
    Args args = {&dx, &ddelta, &da, &db, &dc, &dh0, &dy, &dlast};
    const int32_t rc = call(&args);
    /* Row-major [D, T] with every `step`-th element: one flat stride over D * T. */
    drv_check_close_f32(label, rc, y, ylen, d * t, step, want, bound);
    drv_check_close_f32(llabel, rc, last, llen, d * S, step, want_last, bound_last);
    if (check_threads) {
        void *outs[] = {y, last};
        size_t bytes[] = {ylen * sizeof(float), llen * sizeof(float)};
        drv_same_across_threads(label, call, &args, outs, bytes, 2);
    }
    free(want);
    free(bound);
    free(want_last);
    free(bound_last);
    free(y);
    free(last);
    free(xt);
    free(bt);
    free_inputs(&in);
}

static void bad_calls(void)
{
    enum { D = 3, T = 9 };
    static float x[D * (T + 1)], delta[D * (T + 1)], a[(D + 1) * 2 * S], b[(S + 1) * T], c[(S + 1) * T];
    static float h0[(D + 1) * 2 * S], before[D * T + D * S];
    static double xd[D * T];
    DrvTensor dx, ddelta, da, db, dc, dh0, dy, dlast;
    drv_fill_f32(x, sizeof x / sizeof x[0], -1.0f, 1.0f);
    drv_fill_f32(delta, sizeof delta / sizeof delta[0], 1e-3f, 1e-1f);
    drv_fill_f32(a, sizeof a / sizeof a[0], -16.0f, -1.0f);
    drv_fill_f32(b, sizeof b / sizeof b[0], -1.0f, 1.0f);
    drv_fill_f32(c, sizeof c / sizeof c[0], -1.0f, 1.0f);
    drv_fill_f32(h0, sizeof h0 / sizeof h0[0], -1.0f, 1.0f);
    /* y and last side by side in `outs`, so one comparison covers both. */
    static float outs[D * T + D * S];

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor2(&dx, x, DRV_F32, D, T, NULL);                                                  \
        drv_tensor2(&ddelta, delta, DRV_F32, D, T, NULL);                                          \
        drv_tensor2(&da, a, DRV_F32, D, S, NULL);                                                  \
        drv_tensor2(&db, b, DRV_F32, S, T, NULL);                                                  \
        drv_tensor2(&dc, c, DRV_F32, S, T, NULL);                                                  \
        drv_tensor2(&dh0, h0, DRV_F32, D, S, NULL);                                                \
        drv_tensor2(&dy, outs, DRV_F32, D, T, NULL);                                               \
        drv_tensor2(&dlast, outs + D * T, DRV_F32, D, S, NULL);                                    \
        drv_fill_sentinel_f32(outs, D * T + D * S);                                                \
        memcpy(before, outs, sizeof outs);                                                         \
    } while (0)
#define CALL() selective_scan(&dx.t, &ddelta.t, &da.t, &db.t, &dc.t, &dh0.t, &dy.t, &dlast.t)
#define REFUSED(what, code) drv_expect_refused(what, CALL(), code, outs, before, sizeof outs)

    RESET();
    drv_tensor2(&dx, xd, DRV_F64, D, T, NULL);
    REFUSED("x is f64", DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dlast, xd, DRV_F64, D, S, NULL);
    REFUSED("out1 (last) is f64", DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, D * T, NULL);
    REFUSED("x has rank 1", DRV_E_RANK);
    RESET();
    ddelta.shape[1] = T + 1;
    REFUSED("delta extent T+1 (S1)", DRV_E_SHAPE);
    RESET();
    da.shape[1] = 8;
    REFUSED("a has 8 states", DRV_E_SHAPE);
    RESET();
    db.shape[0] = S - 1;
    REFUSED("b has 15 states", DRV_E_SHAPE);
    RESET();
    dc.shape[0] = S + 1;
    REFUSED("c has 17 states", DRV_E_SHAPE);
    RESET();
    dh0.shape[1] = 2 * S;
    REFUSED("h0 has 32 states", DRV_E_SHAPE);
    RESET();
    dh0.shape[0] = D + 1;
    REFUSED("h0 extent D+1 (S1)", DRV_E_SHAPE);
    RESET();
    dy.shape[1] = T - 1;
    REFUSED("out0 (y) extent T-1", DRV_E_SHAPE);
    RESET();
    dlast.shape[1] = S - 1;
    REFUSED("out1 (last) has 15 states", DRV_E_SHAPE);
    RESET();
    dc.t.data = NULL;
    REFUSED("c data is NULL", DRV_E_NULL);
    RESET();
    {
        const int64_t zero[2] = {0, 0};
        drv_tensor2(&dy, outs, DRV_F32, D, T, zero);
        REFUSED("out0 has zero strides", DRV_E_STRIDE);
    }
#undef REFUSED
#undef CALL
#undef RESET
}

int main(void)
{
    drv_seed(29);
    static const int64_t shapes[][2] = {{1, 0}, {3, 0}, {0, 5}, {1, 1}, {4, 1}, {1, 7}, {5, 37}, {8, 100}, {64, 257}, {2, 4097}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int kind = MAMBA; kind <= INTEGER_STEPS; kind++)
            run_case(shapes[k][0], shapes[k][1], kind, 0, 0);
    run_case(2, (1 << 16) + 3, MAMBA, 0, 1);
    run_case(2, (1 << 16) + 3, SLOW_DECAY, 0, 0);
    run_case(3, (1 << 16) + 3, INTEGER_STEPS, 0, 1);
    /* Strided operands and results (non-NULL strides). */
    run_case(7, 3001, MAMBA, 1, 1);
    run_case(3, 0, MAMBA, 1, 0);
    bad_calls();
    return drv_finish("selective_scan");
}
