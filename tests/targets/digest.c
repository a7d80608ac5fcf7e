/* Calls the kernels of one compiled sample with deterministic inputs and prints, per
 * call, its status and an FNV-1a digest of every output buffer; failed calls also print
 * their message.  The same program built for x86-64 and for AArch64 (run under
 * qemu-aarch64) must print the same lines: integers and float bits identical (a NaN
 * counts as one NaN, since payloads are not part of the ABI).
 *
 * Built with `-include <sample>.h -I samples/c`; the generated header's include guard
 * selects the sample's section below. */
#include "driver_common.h"

static uint64_t digest_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void report(const char *label, int32_t rc, const void *out, size_t count, size_t elem, int is_f32)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = out;
    for (size_t i = 0; i < count; i++) {
        if (is_f32) {
            float v;
            memcpy(&v, b + i * elem, sizeof v);
            if (isnan(v))
                v = NAN;
            h = digest_bytes(h, &v, sizeof v);
        } else {
            h = digest_bytes(h, b + i * elem, elem);
        }
    }
    printf("%s rc=%d digest=%016llx", label, (int)rc, (unsigned long long)h);
    if (rc != 0)
        printf(" message=%s", intent_last_error());
    printf("\n");
}

/* Float inputs with special values sprinkled in: signed zeros, infinities, tiny and huge. */
static void fill_special_f32(float *p, size_t n, float lo, float hi)
{
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-38f, -3e38f, 1.0f, 0.5f};
    drv_fill_f32(p, n, lo, hi);
    for (size_t i = 0; i < n; i += 13)
        p[i] = special[(i / 13) % (sizeof special / sizeof special[0])];
}

#if defined(INTENT_MODULE_SAXPY_H)
static void run(void)
{
    static const int64_t sizes[] = {0, 1, 7, 33, 1000, 4099};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int strided = 0; strided < 2; strided++) {
            const int64_t n = sizes[k], s = strided ? 3 : 1;
            float *x = drv_alloc((size_t)(n * s), 4), *y = drv_alloc((size_t)n, 4);
            float *out = drv_alloc((size_t)n, 4);
            fill_special_f32(x, (size_t)(n * s), -1e3f, 1e3f);
            drv_fill_f32(y, (size_t)n, -1e3f, 1e3f);
            DrvTensor dx, dy, dout;
            drv_tensor1(&dx, x, DRV_F32, n, strided ? &s : NULL);
            drv_tensor1(&dy, y, DRV_F32, n, NULL);
            drv_tensor1(&dout, out, DRV_F32, n, NULL);
            char label[64];
            snprintf(label, sizeof label, "saxpy n=%lld stride=%lld", (long long)n, (long long)s);
            report(label, saxpy(drv_f32(-4.0f, 4.0f), &dx.t, &dy.t, &dout.t), out, (size_t)n, 4, 1);
            free(x);
            free(y);
            free(out);
        }
    }
    float x[4] = {0}, y[5] = {0}, out[4] = {0};
    DrvTensor dx, dy, dout;
    drv_tensor1(&dx, x, DRV_F32, 4, NULL);
    drv_tensor1(&dy, y, DRV_F32, 5, NULL);
    drv_tensor1(&dout, out, DRV_F32, 4, NULL);
    report("saxpy mismatched N", saxpy(1.0f, &dx.t, &dy.t, &dout.t), out, 4, 4, 1);
}
#elif defined(INTENT_MODULE_BROADCAST_ADD_H)
static void run(void)
{
    static const int64_t shapes[][2] = {{0, 5}, {1, 1}, {3, 17}, {64, 65}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int64_t m = shapes[k][0], n = shapes[k][1];
        const int64_t bshapes[][2] = {{m, n}, {1, n}, {m, 1}, {1, 1}, {m + 1, n}};
        float *x = drv_alloc((size_t)(m * n), 4), *b = drv_alloc((size_t)((m + 1) * n), 4);
        float *out = drv_alloc((size_t)(m * n), 4);
        fill_special_f32(x, (size_t)(m * n), -50.0f, 50.0f);
        drv_fill_f32(b, (size_t)((m + 1) * n), -50.0f, 50.0f);
        for (size_t j = 0; j < sizeof bshapes / sizeof bshapes[0]; j++) {
            DrvTensor dx, db, dout;
            drv_tensor2(&dx, x, DRV_F32, m, n, NULL);
            drv_tensor2(&db, b, DRV_F32, bshapes[j][0], bshapes[j][1], NULL);
            drv_tensor2(&dout, out, DRV_F32, m, n, NULL);
            char label[96];
            snprintf(label, sizeof label, "broadcast_add %lldx%lld + %lldx%lld", (long long)m, (long long)n,
                     (long long)bshapes[j][0], (long long)bshapes[j][1]);
            report(label, broadcast_add(&dx.t, &db.t, &dout.t), out, (size_t)(m * n), 4, 1);
        }
        DrvTensor dx, dbias, dout;
        drv_tensor2(&dx, x, DRV_F32, m, n, NULL);
        drv_tensor1(&dbias, b, DRV_F32, n, NULL);
        drv_tensor2(&dout, out, DRV_F32, m, n, NULL);
        char label[96];
        snprintf(label, sizeof label, "add_row_bias %lldx%lld", (long long)m, (long long)n);
        report(label, add_row_bias(&dx.t, &dbias.t, -1.5f, &dout.t), out, (size_t)(m * n), 4, 1);
        free(x);
        free(b);
        free(out);
    }
}
#elif defined(INTENT_MODULE_ROW_SCALE_H)
static void run(void)
{
    static const int64_t shapes[][2] = {{0, 3}, {1, 1}, {5, 31}, {100, 67}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        for (int transposed = 0; transposed < 2; transposed++) {
            const int64_t r = shapes[k][0], c = shapes[k][1];
            const int64_t st[2] = {1, r};
            float *x = drv_alloc((size_t)(r * c), 4), *s = drv_alloc((size_t)r, 4);
            float *out = drv_alloc((size_t)(r * c), 4);
            fill_special_f32(x, (size_t)(r * c), -10.0f, 10.0f);
            drv_fill_f32(s, (size_t)r, -3.0f, 3.0f);
            DrvTensor dx, ds, dout;
            drv_tensor2(&dx, x, DRV_F32, r, c, transposed ? st : NULL);
            drv_tensor1(&ds, s, DRV_F32, r, NULL);
            drv_tensor2(&dout, out, DRV_F32, r, c, NULL);
            char label[96];
            snprintf(label, sizeof label, "row_scale %lldx%lld%s", (long long)r, (long long)c,
                     transposed ? " transposed" : "");
            report(label, row_scale(&dx.t, &ds.t, &dout.t), out, (size_t)(r * c), 4, 1);
            free(x);
            free(s);
            free(out);
        }
    }
}
#elif defined(INTENT_MODULE_CLAMP_H)
static void run(void)
{
    static const int64_t sizes[] = {0, 1, 9, 1000, 5001};
    static const float bounds[][2] = {{-1.0f, 1.0f}, {0.0f, 0.0f}, {5.0f, -5.0f}, {-INFINITY, 0.25f}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (size_t j = 0; j < sizeof bounds / sizeof bounds[0]; j++) {
            const int64_t n = sizes[k];
            float *x = drv_alloc((size_t)n, 4), *out = drv_alloc((size_t)n, 4);
            fill_special_f32(x, (size_t)n, -4.0f, 4.0f);
            DrvTensor dx, dout;
            drv_tensor1(&dx, x, DRV_F32, n, NULL);
            drv_tensor1(&dout, out, DRV_F32, n, NULL);
            char label[96];
            snprintf(label, sizeof label, "clamp n=%lld [%g, %g]", (long long)n, (double)bounds[j][0],
                     (double)bounds[j][1]);
            report(label, clamp(&dx.t, bounds[j][0], bounds[j][1], &dout.t), out, (size_t)n, 4, 1);
            free(x);
            free(out);
        }
    }
}
#elif defined(INTENT_MODULE_COLLATZ_STEPS_H)
static void run(void)
{
    static const int64_t sizes[] = {0, 1, 64, 3001};
    static const int32_t caps[] = {0, 1, 200, 1000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (size_t j = 0; j < sizeof caps / sizeof caps[0]; j++) {
            const int64_t n = sizes[k];
            int64_t *start = drv_alloc((size_t)n, 8);
            int32_t *steps = drv_alloc((size_t)n, 4);
            for (int64_t i = 0; i < n; i++)
                start[i] = (i % 7 == 3) ? drv_i64(-5, 1) : drv_i64(1, 1000000);
            if (n > 4) { /* 3n + 1 wraps around */
                start[1] = INT64_MAX;
                start[2] = ((int64_t)1 << 62) + 1;
                start[3] = 6148914691236517205;
                start[4] = INT64_MIN;
            }
            DrvTensor dstart, dsteps;
            drv_tensor1(&dstart, start, DRV_I64, n, NULL);
            drv_tensor1(&dsteps, steps, DRV_I32, n, NULL);
            char label[96];
            snprintf(label, sizeof label, "collatz_steps n=%lld cap=%d", (long long)n, (int)caps[j]);
            report(label, collatz_steps(&dstart.t, caps[j], &dsteps.t), steps, (size_t)n, 4, 0);
            free(start);
            free(steps);
        }
    }
    int64_t start[3] = {1, 2, 3};
    int32_t steps[3] = {0};
    DrvTensor dstart, dsteps;
    drv_tensor1(&dstart, start, DRV_I32, 3, NULL); /* wrong dtype */
    drv_tensor1(&dsteps, steps, DRV_I32, 3, NULL);
    report("collatz_steps wrong dtype", collatz_steps(&dstart.t, 10, &dsteps.t), steps, 3, 4, 0);
}
#elif defined(INTENT_MODULE_SELECTIVE_SCAN_H)
static void run(void)
{
    /* Decaying steps (delta in [1e-3, 0.1], a in [-16, -1]): the region scans compose
     * maps over segments, the exps are intentc's own, y adds the 16 states in order. */
    static const int64_t shapes[][2] = {{1, 0}, {1, 1}, {3, 7}, {5, 100}, {2, 4099}, {16, 257}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int64_t d = shapes[k][0], t = shapes[k][1];
        float *x = drv_alloc((size_t)(d * t), 4), *delta = drv_alloc((size_t)(d * t), 4);
        float *a = drv_alloc((size_t)(d * 16), 4), *h0 = drv_alloc((size_t)(d * 16), 4);
        float *b = drv_alloc((size_t)(16 * t), 4), *c = drv_alloc((size_t)(16 * t), 4);
        float *y = drv_alloc((size_t)(d * t), 4), *last = drv_alloc((size_t)(d * 16), 4);
        drv_fill_f32(x, (size_t)(d * t), -1.0f, 1.0f);
        drv_fill_f32(delta, (size_t)(d * t), 1e-3f, 0.1f);
        drv_fill_f32(a, (size_t)(d * 16), -16.0f, -1.0f);
        drv_fill_f32(h0, (size_t)(d * 16), -1.0f, 1.0f);
        drv_fill_f32(b, (size_t)(16 * t), -1.0f, 1.0f);
        drv_fill_f32(c, (size_t)(16 * t), -1.0f, 1.0f);
        DrvTensor dx, ddelta, da, db, dc, dh0, dy, dlast;
        drv_tensor2(&dx, x, DRV_F32, d, t, NULL);
        drv_tensor2(&ddelta, delta, DRV_F32, d, t, NULL);
        drv_tensor2(&da, a, DRV_F32, d, 16, NULL);
        drv_tensor2(&db, b, DRV_F32, 16, t, NULL);
        drv_tensor2(&dc, c, DRV_F32, 16, t, NULL);
        drv_tensor2(&dh0, h0, DRV_F32, d, 16, NULL);
        drv_tensor2(&dy, y, DRV_F32, d, t, NULL);
        drv_tensor2(&dlast, last, DRV_F32, d, 16, NULL);
        const int32_t rc = selective_scan(&dx.t, &ddelta.t, &da.t, &db.t, &dc.t, &dh0.t, &dy.t, &dlast.t);
        char label[96];
        snprintf(label, sizeof label, "selective_scan D=%lld T=%lld y", (long long)d, (long long)t);
        report(label, rc, y, (size_t)(d * t), 4, 1);
        snprintf(label, sizeof label, "selective_scan D=%lld T=%lld last", (long long)d, (long long)t);
        report(label, rc, last, (size_t)(d * 16), 4, 1);
        if (k == sizeof shapes / sizeof shapes[0] - 1) { /* b with 15 states */
            db.shape[0] = 15;
            report("selective_scan b has 15 states", selective_scan(&dx.t, &ddelta.t, &da.t, &db.t, &dc.t, &dh0.t,
                                                                    &dy.t, &dlast.t), last, (size_t)(d * 16), 4, 1);
        }
        free(x);
        free(delta);
        free(a);
        free(h0);
        free(b);
        free(c);
        free(y);
        free(last);
    }
}
#else
#error "tests/targets/digest.c has no section for this sample"
#endif

int main(void)
{
    drv_seed(20261130);
    run();
    return 0;
}
