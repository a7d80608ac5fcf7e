/* Drives the compiled samples/reductions.intent through its C ABI:
 *     int32_t row_sums(const IntentTensor *x, IntentTensor *out);              f32[R, C] -> f32[R]
 *     int32_t col_max(const IntentTensor *x, IntentTensor *best, IntentTensor *where);
 *     int32_t total(const IntentTensor *x, IntentTensor *out);                 f32[N] -> f32[1]
 *     int32_t half_total(const IntentTensor *x, IntentTensor *out);            f16[N] -> f32[1]
 *     int32_t int_total(const IntentTensor *x, IntentTensor *out);             i32[N] -> i64[1]
 * References are serial C loops. Float sums may be regrouped by the compiler, so
 * they are compared with a double-precision sum: |got - exact| <= 1e-5 * sum |x|
 * (exactly when every partial sum is exact, e.g. small integers). Maxima, argmax
 * (ties: the smaller index; NaN is the greatest) and integer sums are exact. Every
 * result must have the same bits with 1, 2 and 3 threads. */
#include "reductions.h"

#include "driver_numeric.h"

static const double SUM_TOL = 1e-5;

/* ---- row_sums -------------------------------------------------------------------- */

typedef struct {
    DrvTensor *a, *b, *c;
} Args;

static int32_t call_row_sums(void *ctx)
{
    Args *p = ctx;
    return row_sums(&p->a->t, &p->b->t);
}

static void run_row_sums(int64_t rows, int64_t cols, DrvLayout xl, int64_t os, int check_threads)
{
    DrvMatrix x;
    drv_matrix(&x, xl, rows, cols, 1);
    const size_t olen = (size_t)(rows * os);
    float *out = drv_alloc(olen, sizeof(float));
    double *want = drv_alloc((size_t)rows, sizeof(double)), *bound = drv_alloc((size_t)rows, sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        double s = 0, a = 0;
        for (int64_t c = 0; c < cols; c++) {
            const float v = x.buf[r * x.st[0] + c * x.st[1]];
            s += v;
            a += fabs(v);
        }
        want[r] = s;
        bound[r] = SUM_TOL * a;
    }
    drv_fill_sentinel_f32(out, olen);
    DrvTensor dout;
    drv_tensor1(&dout, out, DRV_F32, rows, os == 1 ? NULL : &os);
    char label[128];
    snprintf(label, sizeof label, "row_sums x[%lld,%lld] %s, out stride %lld", (long long)rows,
             (long long)cols, drv_layout_name[xl], (long long)os);
    drv_check_close_f32(label, row_sums(&x.d.t, &dout.t), out, olen, rows, os, want, bound);
    if (check_threads) {
        Args a = {&x.d, &dout, NULL};
        void *outs[] = {out};
        size_t bytes[] = {olen * sizeof(float)};
        drv_same_across_threads(label, call_row_sums, &a, outs, bytes, 1);
    }
    free(x.buf);
    free(out);
    free(want);
    free(bound);
}

/* ---- col_max ---------------------------------------------------------------------- */

static int32_t call_col_max(void *ctx)
{
    Args *p = ctx;
    return col_max(&p->a->t, &p->b->t, &p->c->t);
}

static void run_col_max(int64_t rows, int64_t cols, DrvLayout xl, int with_specials, int check_threads)
{
    DrvMatrix x;
    drv_matrix(&x, xl, rows, cols, 1);
    for (int64_t r = 0; r < rows; r++) /* small integers: many ties */
        for (int64_t c = 0; c < cols; c++)
            x.buf[r * x.st[0] + c * x.st[1]] = (float)drv_i64(-20, 20);
    if (with_specials && rows > 3)
        for (int64_t c = 0; c < cols; c += 3) {
            x.buf[(c % rows) * x.st[0] + c * x.st[1]] = c % 2 ? NAN : INFINITY;
            x.buf[((c + 1) % rows) * x.st[0] + c * x.st[1]] = -INFINITY;
        }
    float *best = drv_alloc((size_t)cols, sizeof(float)), *wbest = drv_alloc((size_t)cols, sizeof(float));
    int64_t *where = drv_alloc((size_t)cols, sizeof(int64_t)), *wwhere = drv_alloc((size_t)cols, sizeof(int64_t));
    for (int64_t c = 0; c < cols; c++) {
        float b = -INFINITY;
        int64_t at = INT64_MAX; /* the identity: an empty column */
        for (int64_t r = 0; r < rows; r++) {
            const float v = x.buf[r * x.st[0] + c * x.st[1]];
            if (r == 0 || (!isnan(b) && (isnan(v) || v > b))) {
                b = v;
                at = r;
            }
        }
        wbest[c] = b;
        wwhere[c] = at;
    }
    drv_fill_sentinel_f32(best, (size_t)cols);
    for (int64_t c = 0; c < cols; c++)
        where[c] = -777;
    DrvTensor db, dw;
    drv_tensor1(&db, best, DRV_F32, cols, NULL);
    drv_tensor1(&dw, where, DRV_INDEX, cols, NULL);
    char label[128];
    snprintf(label, sizeof label, "col_max x[%lld,%lld] %s%s", (long long)rows, (long long)cols,
             drv_layout_name[xl], with_specials ? " with inf/NaN" : "");
    int32_t rc = col_max(&x.d.t, &db.t, &dw.t);
    drv_check_f32(label, rc, best, wbest, (size_t)cols);
    for (int64_t c = 0; rc == 0 && c < cols; c++)
        if (where[c] != wwhere[c]) {
            drv_fail("%s: where[%lld] is %lld, expected %lld", label, (long long)c, (long long)where[c],
                     (long long)wwhere[c]);
            break;
        }
    if (check_threads) {
        Args a = {&x.d, &db, &dw};
        void *outs[] = {best, where};
        size_t bytes[] = {(size_t)cols * sizeof(float), (size_t)cols * sizeof(int64_t)};
        drv_same_across_threads(label, call_col_max, &a, outs, bytes, 2);
    }
    free(x.buf);
    free(best);
    free(wbest);
    free(where);
    free(wwhere);
}

/* ---- total, half_total, int_total --------------------------------------------------- */

static int32_t call_total(void *ctx)
{
    Args *p = ctx;
    return total(&p->a->t, &p->b->t);
}

static int32_t call_half_total(void *ctx)
{
    Args *p = ctx;
    return half_total(&p->a->t, &p->b->t);
}

static void run_total(int64_t n, int64_t sx, int small_ints, int check_threads)
{
    float *x = drv_alloc((size_t)(n * sx), sizeof(float));
    if (small_ints)
        for (int64_t i = 0; i < n * sx; i++)
            x[i] = (float)drv_i64(-100, 100);
    else
        drv_fill_f32(x, (size_t)(n * sx), -100.0f, 100.0f);
    double s = 0, a = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i * sx];
        a += fabs(x[i * sx]);
    }
    double bound = small_ints ? 0.0 : SUM_TOL * a;
    float out = DRV_SENTINEL_F32;
    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_F32, n, sx == 1 ? NULL : &sx);
    drv_tensor1(&dout, &out, DRV_F32, 1, NULL);
    char label[128];
    snprintf(label, sizeof label, "total N=%lld%s%s", (long long)n, sx == 1 ? "" : " strided",
             small_ints ? " (integers: exact)" : "");
    drv_check_close_f32(label, total(&dx.t, &dout.t), &out, 1, 1, 1, &s, &bound);
    if (check_threads) {
        Args p = {&dx, &dout, NULL};
        void *outs[] = {&out};
        size_t bytes[] = {sizeof out};
        drv_same_across_threads(label, call_total, &p, outs, bytes, 1);
    }
    free(x);
}

static void run_half_total(int64_t n, int64_t sx, int small_ints, int check_threads)
{
    uint16_t *x = drv_alloc((size_t)(n * sx), sizeof(uint16_t));
    for (int64_t i = 0; i < n * sx; i++)
        x[i] = small_ints ? drv_f16_from_int((int)drv_i64(-8, 8)) : drv_f16_random();
    double s = 0, a = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = drv_f16_to_f32(x[i * sx]);
        s += v;
        a += fabs(v);
    }
    double bound = small_ints ? 0.0 : SUM_TOL * a;
    float out = DRV_SENTINEL_F32;
    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_F16, n, sx == 1 ? NULL : &sx);
    drv_tensor1(&dout, &out, DRV_F32, 1, NULL);
    char label[128];
    snprintf(label, sizeof label, "half_total N=%lld%s%s", (long long)n, sx == 1 ? "" : " strided",
             small_ints ? " (integers: exact)" : "");
    drv_check_close_f32(label, half_total(&dx.t, &dout.t), &out, 1, 1, 1, &s, &bound);
    if (check_threads) {
        Args p = {&dx, &dout, NULL};
        void *outs[] = {&out};
        size_t bytes[] = {sizeof out};
        drv_same_across_threads(label, call_half_total, &p, outs, bytes, 1);
    }
    free(x);
}

static void run_int_total(int64_t n, int64_t sx)
{
    int32_t *x = drv_alloc((size_t)(n * sx), sizeof(int32_t));
    for (int64_t i = 0; i < n * sx; i++)
        x[i] = (int32_t)drv_i64(INT32_MIN, INT32_MAX);
    int64_t want = 0;
    for (int64_t i = 0; i < n; i++)
        want += x[i * sx];
    int64_t out = -777;
    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_I32, n, sx == 1 ? NULL : &sx);
    drv_tensor1(&dout, &out, DRV_I64, 1, NULL);
    char label[128];
    snprintf(label, sizeof label, "int_total N=%lld%s", (long long)n, sx == 1 ? "" : " strided");
    int32_t rc = int_total(&dx.t, &dout.t);
    if (rc != 0)
        drv_fail("%s: returned %d (%s)", label, (int)rc, intent_last_error());
    else if (out != want)
        drv_fail("%s: %lld, expected %lld", label, (long long)out, (long long)want);
    else
        printf("  ok  %s\n", label);
    free(x);
}

/* ---- bad calls ---------------------------------------------------------------------- */

static void bad_calls(void)
{
    enum { R = 4, C = 6, BIG = (R + 1) * (C + 1) };
    static float x[BIG], out[BIG], before[BIG];
    static double xd[BIG];
    static int64_t where[BIG];
    static int32_t xi[BIG];
    const int64_t zero_stride = 0;
    DrvTensor dx, dout, dw;
    drv_fill_f32(x, BIG, -1.0f, 1.0f);

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor2(&dx, x, DRV_F32, R, C, NULL);                                                  \
        drv_tensor1(&dout, out, DRV_F32, R, NULL);                                                 \
        drv_tensor1(&dw, where, DRV_INDEX, C, NULL);                                               \
        drv_fill_sentinel_f32(out, BIG);                                                           \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, call, code) drv_expect_refused(what, call, code, out, before, sizeof out)

    RESET();
    dout.shape[0] = R + 1;
    REFUSED("row_sums out extent R+1 (S1)", row_sums(&dx.t, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor2(&dx, xd, DRV_F64, R, C, NULL);
    REFUSED("row_sums x is f64", row_sums(&dx.t, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, R, NULL);
    REFUSED("row_sums x has rank 1", row_sums(&dx.t, &dout.t), DRV_E_RANK);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, R, &zero_stride);
    REFUSED("row_sums out has a zero stride", row_sums(&dx.t, &dout.t), DRV_E_STRIDE);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, C, NULL);
    dw.shape[0] = C - 1;
    REFUSED("col_max where extent C-1 (S1)", col_max(&dx.t, &dout.t, &dw.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, C, NULL);
    drv_tensor1(&dw, where, DRV_I32, C, NULL);
    REFUSED("col_max where is i32", col_max(&dx.t, &dout.t, &dw.t), DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, C, NULL);
    dw.t.data = NULL;
    REFUSED("col_max where data is NULL", col_max(&dx.t, &dout.t, &dw.t), DRV_E_NULL);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, C, NULL);
    drv_tensor1(&dout, out, DRV_F32, 2, NULL);
    REFUSED("total out extent 2, not 1", total(&dx.t, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, C, NULL);
    drv_tensor1(&dout, out, DRV_F32, 1, NULL);
    REFUSED("half_total x is f32", half_total(&dx.t, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, xi, DRV_I32, C, NULL);
    drv_tensor1(&dout, out, DRV_F32, 1, NULL);
    REFUSED("int_total out is f32", int_total(&dx.t, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dx, x, DRV_F32, C, NULL);
    REFUSED("total out descriptor is NULL", total(&dx.t, NULL), DRV_E_NULL);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(22);
    static const int64_t shapes[][2] = {{3, 5}, {1, 1}, {0, 7}, {7, 0}, {33, 65}, {513, 257}, {2, 100003}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        run_row_sums(shapes[k][0], shapes[k][1], ROW_MAJOR, 1, 0);
        run_col_max(shapes[k][0], shapes[k][1], ROW_MAJOR, 0, 0);
    }
    run_row_sums(37, 29, TRANSPOSED, 2, 0);
    run_row_sums(19, 300, EVERY_2ND, 3, 0);
    run_row_sums(0, 3, PADDED, 2, 0);
    run_row_sums(300, 4099, ROW_MAJOR, 1, 1);
    run_col_max(37, 29, TRANSPOSED, 1, 0);
    run_col_max(19, 300, PADDED, 1, 0);
    run_col_max(1001, 300, EVERY_2ND, 1, 1);

    static const int64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        run_total(sizes[k], 1, 0, 0);
        run_half_total(sizes[k], 1, 0, 0);
        run_int_total(sizes[k], 1);
    }
    run_total((1 << 20) + 5, 1, 0, 1);
    run_total((1 << 20) + 5, 1, 1, 1);
    run_total(30001, 3, 0, 0);
    run_half_total((1 << 20) + 5, 1, 0, 1);
    run_half_total((1 << 20) + 5, 1, 1, 1);
    run_half_total(30001, 2, 0, 0);
    run_int_total((1 << 20) + 5, 1);
    run_int_total(30001, 5);
    bad_calls();
    return drv_finish("reductions");
}
