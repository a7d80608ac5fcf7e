/* Drives the compiled samples/saxpy.intent through its C ABI:
 *     int32_t saxpy(float a, const IntentTensor *x, const IntentTensor *y, IntentTensor *out);
 * and compares every result with a plain C loop, bit for bit. */
#include "saxpy.h"

#include "driver_common.h"

typedef struct {
    int64_t n;
    int64_t sx, sy, so; /* element strides, used when `strided` is set */
    uint64_t x_offset;  /* elements skipped through byte_offset on x */
    int strided;
    int null_data; /* pass NULL data pointers (only legal when n == 0) */
} Case;

/* out = a * x + y, one rounding per operation (the volatile keeps the C
 * compiler from fusing the multiply and the add). */
static void reference(float a, const float *x, int64_t sx, const float *y, int64_t sy, float *out,
                      int64_t so, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        volatile float ax = a * x[i * sx];
        out[i * so] = ax + y[i * sy];
    }
}

static void run_case(const Case *c)
{
    const int64_t n = c->n;
    const int64_t sx = c->strided ? c->sx : 1, sy = c->strided ? c->sy : 1,
                  so = c->strided ? c->so : 1;
    const size_t xlen = (size_t)(n * sx) + c->x_offset, ylen = (size_t)(n * sy),
                 olen = (size_t)(n * so);
    float *x = drv_alloc(xlen, sizeof(float)), *y = drv_alloc(ylen, sizeof(float));
    float *out = drv_alloc(olen, sizeof(float)), *want = drv_alloc(olen, sizeof(float));
    const float a = drv_f32(-4.0f, 4.0f);
    drv_fill_f32(x, xlen, -100.0f, 100.0f);
    drv_fill_f32(y, ylen, -100.0f, 100.0f);
    drv_fill_sentinel_f32(out, olen);
    drv_fill_sentinel_f32(want, olen);
    reference(a, x + c->x_offset, sx, y, sy, want, so, n);

    DrvTensor dx, dy, dout;
    drv_tensor1(&dx, c->null_data ? NULL : x, DRV_F32, n, c->strided ? &sx : NULL);
    drv_tensor1(&dy, c->null_data ? NULL : y, DRV_F32, n, c->strided ? &sy : NULL);
    drv_tensor1(&dout, c->null_data ? NULL : out, DRV_F32, n, c->strided ? &so : NULL);
    dx.t.byte_offset = c->x_offset * sizeof(float);

    char label[128];
    snprintf(label, sizeof label, "N=%lld%s%s%s", (long long)n, c->strided ? " strided" : "",
             c->x_offset ? " byte_offset" : "", c->null_data ? " null-data" : "");
    drv_check_f32(label, saxpy(a, &dx.t, &dy.t, &dout.t), out, want, olen);
    free(x);
    free(y);
    free(out);
    free(want);
}

static void bad_calls(void)
{
    enum { N = 33 };
    static float x[N + 1], y[N + 1], out[N + 1], before[N + 1];
    static double xd[N];
    const int64_t one_n[2] = {1, N};
    const int64_t zero_stride = 0;
    DrvTensor dx, dy, dout;
    drv_fill_f32(x, N + 1, -1.0f, 1.0f);
    drv_fill_f32(y, N + 1, -1.0f, 1.0f);
    for (int i = 0; i < N; i++)
        xd[i] = x[i];

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&dx, x, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dy, y, DRV_F32, N, NULL);                                                     \
        drv_tensor1(&dout, out, DRV_F32, N, NULL);                                                 \
        drv_fill_sentinel_f32(out, N + 1);                                                         \
        memcpy(before, out, sizeof out);                                                           \
    } while (0)
#define REFUSED(what, call, code) drv_expect_refused(what, call, code, out, before, sizeof out)

    RESET();
    dy.shape[0] = N + 1;
    REFUSED("y extent N+1 (S1)", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_SHAPE);
    RESET();
    dout.shape[0] = N - 1;
    REFUSED("out extent N-1", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dx, xd, DRV_F64, N, NULL);
    REFUSED("x is f64", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_DTYPE);
    RESET();
    drv_tensor(&dx, x, DRV_F32, 2, one_n, NULL);
    REFUSED("x has rank 2", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_RANK);
    RESET();
    dy.t.data = NULL;
    REFUSED("y data is NULL", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_NULL);
    RESET();
    REFUSED("x descriptor is NULL", saxpy(2.0f, NULL, &dy.t, &dout.t), DRV_E_NULL);
    RESET();
    drv_tensor1(&dout, out, DRV_F32, N, &zero_stride);
    REFUSED("out has a zero stride", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_STRIDE);
    RESET();
    dx.t.device.device_type = 2; /* CUDA */
    REFUSED("x is not on the CPU", saxpy(2.0f, &dx.t, &dy.t, &dout.t), DRV_E_DEVICE);

    /* The failures above leave nothing behind: a good call still works. */
    RESET();
    int32_t rc = saxpy(2.0f, &dx.t, &dy.t, &dout.t);
    if (rc != 0)
        drv_fail("good call after the bad ones returned %d (%s)", (int)rc, intent_last_error());
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(1);
    static const Case cases[] = {
        {.n = 0},
        {.n = 0, .null_data = 1},
        {.n = 1},
        {.n = 7},
        {.n = 64},
        {.n = 1000},
        {.n = 4097},
        {.n = 100003},
        {.n = (1 << 20) + 3},
        {.n = 1001, .strided = 1, .sx = 2, .sy = 3, .so = 2},
        {.n = 17, .strided = 1, .sx = 1, .sy = 1, .so = 1, .x_offset = 5},
        {.n = 0, .strided = 1, .sx = 4, .sy = 4, .so = 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    bad_calls();
    return drv_finish("saxpy");
}
