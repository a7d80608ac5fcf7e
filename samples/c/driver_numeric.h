/* Helpers for the drivers of the reduction, scan and region samples, on top of
 * driver_common.h: more dtypes (f16, bool, index), tolerance comparisons for
 * results the compiled code may regroup, and a check that a call gives the same
 * bits with 1, 2 and 3 threads.  Include it after driver_common.h. */
#ifndef INTENT_SAMPLE_DRIVER_NUMERIC_H
#define INTENT_SAMPLE_DRIVER_NUMERIC_H

#include "driver_common.h"

static const IntentDType DRV_F16 = {2, 16, 1};
static const IntentDType DRV_BOOL = {6, 8, 1};
static const IntentDType DRV_INDEX = {0, 64, 1}; /* `index` is int64_t at the ABI */

/* ---- binary16 ----------------------------------------------------------------- */

static inline float drv_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31;
    const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: man * 2^-24, exact in f32 */
            float v = (float)man * (1.0f / 16777216.0f);
            memcpy(&bits, &v, sizeof bits);
            bits |= sign;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A finite f16 with a random sign and mantissa and an exponent in [-4, 4]. */
static inline uint16_t drv_f16_random(void)
{
    const uint64_t r = drv_next();
    const uint16_t sign = (uint16_t)((r >> 20) & 1) << 15;
    const uint16_t exp = (uint16_t)(11 + (r >> 24) % 9); /* biased 11..19: 2^-4 .. 2^4 */
    return (uint16_t)(sign | (exp << 10) | (r & 0x3ff));
}

/* The f16 bits of a small integer |k| <= 2048 (exact). */
static inline uint16_t drv_f16_from_int(int k)
{
    if (k == 0)
        return 0;
    uint16_t sign = k < 0 ? 0x8000 : 0;
    unsigned m = (unsigned)(k < 0 ? -k : k);
    int e = 0;
    while ((m >> e) > 1)
        e++;
    /* value = 1.f * 2^e; the mantissa holds the bits below the leading one */
    const unsigned frac = (m << (10 - e)) & 0x3ff;
    return (uint16_t)(sign | ((unsigned)(e + 15) << 10) | frac);
}

/* ---- exp and log in double for the references ------------------------------------
 * The drivers are linked without -lm, so the references use these: plain range
 * reduction and series, accurate to a few ulp of double (far below any tolerance
 * used against f32 results). */

#define DRV_LN2 0.6931471805599453094
#define DRV_MAX(a, b) ((a) > (b) ? (a) : (b))

static inline double drv_pow2i(int k) /* 2^k for -1022 <= k <= 1023 */
{
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static inline double drv_exp(double x)
{
    if (isnan(x))
        return x;
    if (x > 709.78)
        return INFINITY;
    if (x < -745.2)
        return 0.0;
    const double kd = x / DRV_LN2;
    const int k = (int)(kd < 0 ? kd - 0.5 : kd + 0.5);
    const double r = (x - k * 0.693147180369123816490) - k * 1.90821492927058770002e-10; /* |r| <= 0.35 */
    double term = 1.0, sum = 1.0;
    for (int i = 1; i < 20; i++) {
        term *= r / i;
        sum += term;
    }
    if (k < -1022) /* a subnormal result: scale in two steps */
        return sum * drv_pow2i(k + 60) * drv_pow2i(-60);
    if (k > 1023)
        return sum * drv_pow2i(k - 1) * 2.0;
    return sum * drv_pow2i(k);
}

static inline double drv_log(double x)
{
    if (isnan(x) || x < 0)
        return NAN;
    if (x == 0)
        return -INFINITY;
    if (isinf(x))
        return x;
    int e = 0;
    if (x < 2.2250738585072014e-308) { /* subnormal */
        x *= 18014398509481984.0;      /* 2^54 */
        e = -54;
    }
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    e += (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e += 1;
    }
    const double s = (m - 1) / (m + 1), s2 = s * s; /* |s| <= 0.172 */
    double term = s, sum = 0;
    for (int i = 1; i < 60; i += 2) {
        sum += term / i;
        term *= s2;
    }
    return e * DRV_LN2 + 2 * sum;
}

/* ---- tolerance comparisons ----------------------------------------------------- */

/* |got - want| <= bound, or both NaN, or the same infinity. */
static inline int drv_close(double got, double want, double bound)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= bound;
}

/* Checks a call that must succeed: status 0, element k of the strided result
 * (got[k * stride]) within bound[k] of want[k], and every other element of the
 * output buffer (`len` floats, the gaps) still equal to the sentinel. */
static inline void drv_check_close_f32(const char *label, int32_t rc, const float *got, size_t len,
                                       int64_t n, int64_t stride, const double *want,
                                       const double *bound)
{
    if (rc != 0) {
        drv_fail("%s: returned %d (%s)", label, (int)rc, intent_last_error());
        return;
    }
    for (int64_t k = 0; k < n; k++)
        if (!drv_close(got[k * stride], want[k], bound[k])) {
            drv_fail("%s: element %lld is %.9g, expected %.9g (tolerance %.3g)", label, (long long)k,
                     (double)got[k * stride], want[k], bound[k]);
            return;
        }
    for (size_t i = 0; i < len; i++)
        if (stride == 0 || (int64_t)i % stride != 0 || (int64_t)i / stride >= n)
            if (!drv_same_f32(got[i], DRV_SENTINEL_F32)) {
                drv_fail("%s: gap element %zu of the output buffer was written", label, i);
                return;
            }
    printf("  ok  %s\n", label);
}

/* ---- the same bits for any thread count --------------------------------------- */

typedef int32_t (*drv_call_fn)(void *ctx);

/* Runs call(ctx) with 1, 2 and 3 threads; before each run every output buffer
 * (outs[k], bytes[k] long) is filled with the same byte pattern. The outputs of
 * the runs with 2 and 3 threads must equal those with 1 thread byte for byte.
 * Restores the default thread count. */
static inline void drv_same_across_threads(const char *label, drv_call_fn call, void *ctx, void **outs,
                                           const size_t *bytes, int nouts)
{
    unsigned char *first[8] = {0};
    int ok = 1;
    for (int threads = 1; threads <= 3 && ok; threads++) {
        for (int k = 0; k < nouts; k++)
            memset(outs[k], 0xA5, bytes[k]);
        intent_set_num_threads(threads);
        int32_t rc = call(ctx);
        if (rc != 0) {
            drv_fail("%s with %d threads: returned %d (%s)", label, threads, (int)rc,
                     intent_last_error());
            ok = 0;
            break;
        }
        for (int k = 0; k < nouts; k++) {
            if (threads == 1) {
                first[k] = drv_alloc(bytes[k], 1);
                memcpy(first[k], outs[k], bytes[k]);
            } else if (memcmp(first[k], outs[k], bytes[k]) != 0) {
                drv_fail("%s: output %d with %d threads differs from 1 thread", label, k, threads);
                ok = 0;
            }
        }
    }
    intent_set_num_threads(0);
    for (int k = 0; k < nouts; k++)
        free(first[k]);
    if (ok)
        printf("  ok  %s: same bits with 1, 2 and 3 threads\n", label);
}

#endif
