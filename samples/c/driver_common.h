/* Helpers shared by the sample drivers: a deterministic generator, tensor
 * descriptors over the driver's own buffers, bitwise float comparison, and
 * the bookkeeping behind the final `PASS <sample>` / `FAIL <sample>: reason`
 * line.  Include it after the generated header (which brings IntentTensor and
 * intent_last_error()). */
#ifndef INTENT_SAMPLE_DRIVER_COMMON_H
#define INTENT_SAMPLE_DRIVER_COMMON_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- outcome ------------------------------------------------------------ */

static int drv_failures = 0;
static char drv_first_reason[512];

/* Records a failure; the first one becomes the reason on the FAIL line. */
static inline void drv_fail(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (drv_failures == 0)
        snprintf(drv_first_reason, sizeof drv_first_reason, "%s", buf);
    drv_failures++;
    fprintf(stderr, "  failure: %s\n", buf);
}

/* Prints the one result line and returns the process exit status. */
static inline int drv_finish(const char *sample)
{
    if (drv_failures == 0) {
        printf("PASS %s\n", sample);
        return 0;
    }
    printf("FAIL %s: %s", sample, drv_first_reason);
    if (drv_failures > 1)
        printf(" (and %d more)", drv_failures - 1);
    printf("\n");
    return 1;
}

/* ---- deterministic pseudo-random inputs (splitmix64) --------------------- */

static uint64_t drv_rng_state = 0x9E3779B97F4A7C15ull;

static inline void drv_seed(uint64_t seed) { drv_rng_state = seed * 0x9E3779B97F4A7C15ull + 1; }

static inline uint64_t drv_next(void)
{
    uint64_t z = (drv_rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A float in [lo, hi) with 24 random mantissa bits. */
static inline float drv_f32(float lo, float hi)
{
    float u = (float)(drv_next() >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

/* An integer in [lo, hi]. */
static inline int64_t drv_i64(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(drv_next() % (uint64_t)(hi - lo + 1));
}

static inline void drv_fill_f32(float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = drv_f32(lo, hi);
}

/* ---- buffers --------------------------------------------------------------- */

/* Never returns NULL (a zero count still gets a real allocation). */
static inline void *drv_alloc(size_t count, size_t elem)
{
    void *p = calloc(count ? count : 1, elem);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static const float DRV_SENTINEL_F32 = -12345.5f;
static const int32_t DRV_SENTINEL_I32 = -777;

static inline void drv_fill_sentinel_f32(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = DRV_SENTINEL_F32;
}

static inline void drv_fill_sentinel_i32(int32_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = DRV_SENTINEL_I32;
}

/* Exact comparison: same bits, or both NaN. */
static inline int drv_same_f32(float a, float b)
{
    if (isnan(a) && isnan(b))
        return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Compares two float buffers element by element; returns the first differing
 * index or -1. */
static inline long long drv_diff_f32(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!drv_same_f32(got[i], want[i]))
            return (long long)i;
    return -1;
}

static inline long long drv_diff_i32(const int32_t *got, const int32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return (long long)i;
    return -1;
}

/* ---- descriptors ------------------------------------------------------------- */

#define DRV_MAX_RANK 4

static const IntentDType DRV_F32 = {2, 32, 1};
static const IntentDType DRV_F64 = {2, 64, 1};
static const IntentDType DRV_I32 = {0, 32, 1};
static const IntentDType DRV_I64 = {0, 64, 1};

/* A descriptor together with the storage its shape/strides point to.  Always
 * handle it by pointer: copying it would leave the copy pointing at the
 * original's arrays. */
typedef struct {
    IntentTensor t;
    int64_t shape[DRV_MAX_RANK];
    int64_t strides[DRV_MAX_RANK];
} DrvTensor;

/* Fills `d` to describe `data` with the given rank, extents and (optionally,
 * in elements) strides; `strides == NULL` means row-major. */
static inline IntentTensor *drv_tensor(DrvTensor *d, void *data, IntentDType dtype, int ndim,
                                const int64_t *shape, const int64_t *strides)
{
    memset(d, 0, sizeof *d);
    d->t.data = data;
    d->t.device.device_type = 1; /* CPU */
    d->t.device.device_id = 0;
    d->t.ndim = ndim;
    d->t.dtype = dtype;
    for (int k = 0; k < ndim && k < DRV_MAX_RANK; k++)
        d->shape[k] = shape[k];
    d->t.shape = d->shape;
    if (strides) {
        for (int k = 0; k < ndim && k < DRV_MAX_RANK; k++)
            d->strides[k] = strides[k];
        d->t.strides = d->strides;
    } else {
        d->t.strides = NULL;
    }
    d->t.byte_offset = 0;
    return &d->t;
}

static inline IntentTensor *drv_tensor1(DrvTensor *d, void *data, IntentDType dtype, int64_t n,
                                 const int64_t *stride)
{
    return drv_tensor(d, data, dtype, 1, &n, stride);
}

static inline IntentTensor *drv_tensor2(DrvTensor *d, void *data, IntentDType dtype, int64_t m,
                                 int64_t n, const int64_t *strides)
{
    int64_t shape[2] = {m, n};
    return drv_tensor(d, data, dtype, 2, shape, strides);
}

/* ---- results ------------------------------------------------------------------ */

/* Checks a call that must succeed: status 0 and a whole output buffer (the
 * elements the kernel writes and the gaps between them) equal to `want`. */
static inline void drv_check_f32(const char *label, int32_t rc, const float *got,
                                 const float *want, size_t len)
{
    if (rc != 0) {
        drv_fail("%s: returned %d (%s)", label, (int)rc, intent_last_error());
        return;
    }
    long long bad = drv_diff_f32(got, want, len);
    if (bad >= 0)
        drv_fail("%s: out buffer element %lld is %.9g, expected %.9g", label, bad,
                 (double)got[bad], (double)want[bad]);
    else
        printf("  ok  %s\n", label);
}

/* ---- 2-D f32 operands in several layouts ------------------------------------- */

/* How a rows x cols operand sits in its buffer. */
typedef enum {
    ROW_MAJOR,  /* strides = NULL */
    TRANSPOSED, /* column-major: strides {1, rows} */
    PADDED,     /* rows of cols + 3 elements: strides {cols + 3, 1} */
    EVERY_2ND,  /* every second element of padded rows: strides {2 * cols + 1, 2} */
} DrvLayout;

static const char *const drv_layout_name[] = {"row-major", "transposed", "padded", "every-2nd"};

typedef struct {
    float *buf;
    size_t len;    /* elements in buf */
    int64_t st[2]; /* element strides, also for ROW_MAJOR */
    DrvTensor d;
} DrvMatrix;

/* Allocates the buffer of a rows x cols operand laid out as `layout`, fills it
 * with random values (or the sentinel when `random` is 0) and describes it. */
static inline void drv_matrix(DrvMatrix *o, DrvLayout layout, int64_t rows, int64_t cols,
                              int random)
{
    switch (layout) {
    case ROW_MAJOR: o->st[0] = cols; o->st[1] = 1; break;
    case TRANSPOSED: o->st[0] = 1; o->st[1] = rows; break;
    case PADDED: o->st[0] = cols + 3; o->st[1] = 1; break;
    case EVERY_2ND: o->st[0] = 2 * cols + 1; o->st[1] = 2; break;
    }
    o->len = (rows == 0 || cols == 0)
                 ? 0
                 : (size_t)((rows - 1) * o->st[0] + (cols - 1) * o->st[1] + 1);
    o->buf = drv_alloc(o->len, sizeof(float));
    if (random)
        drv_fill_f32(o->buf, o->len, -50.0f, 50.0f);
    else
        drv_fill_sentinel_f32(o->buf, o->len);
    drv_tensor2(&o->d, o->buf, DRV_F32, rows, cols, layout == ROW_MAJOR ? NULL : o->st);
}

/* A copy of the matrix's buffer, to hold the expected result. */
static inline float *drv_matrix_copy(const DrvMatrix *o)
{
    float *p = drv_alloc(o->len, sizeof(float));
    memcpy(p, o->buf, o->len * sizeof(float));
    return p;
}

/* Status codes of docs/abi.md, under names of the drivers' own. */
enum {
    DRV_E_NULL = -1,
    DRV_E_DTYPE = -2,
    DRV_E_RANK = -3,
    DRV_E_SHAPE = -4,
    DRV_E_STRIDE = -5,
    DRV_E_DEVICE = -9
};

/* ---- calls that must be refused ---------------------------------------------- */

/* Checks the outcome of a call that the runtime must refuse: a negative code
 * (the documented one, `want`), a message, and an output buffer (`out`,
 * `bytes` long) equal to its copy taken before the call (`before`). */
static inline void drv_expect_refused(const char *what, int32_t rc, int32_t want, const void *out,
                               const void *before, size_t bytes)
{
    const char *msg = intent_last_error();
    printf("  bad call: %-32s -> rc=%d, message: %s\n", what, (int)rc,
           msg ? msg : "(null)");
    if (rc >= 0) {
        drv_fail("bad call '%s' returned %d instead of a negative code", what, (int)rc);
        return;
    }
    if (rc != want)
        drv_fail("bad call '%s' returned %d, the ABI code for it is %d", what, (int)rc,
                 (int)want);
    if (!msg || !msg[0])
        drv_fail("bad call '%s': intent_last_error() gave no message", what);
    if (bytes && memcmp(out, before, bytes) != 0)
        drv_fail("bad call '%s' wrote into the output buffer", what);
}

#endif
