/* Reference decoding of the OCP Microscaling codes the MX sample drivers use, written
 * from the format definitions (docs/language.md, "Microscaling types"): exact in double. */
#ifndef INTENT_SAMPLE_MX_REFERENCE_H
#define INTENT_SAMPLE_MX_REFERENCE_H

#include <stdint.h>

static const IntentDType DRV_F8E4M3 = {10, 8, 1};
static const IntentDType DRV_E8M0 = {14, 8, 1};
static const IntentDType DRV_F4E2M1 = {17, 4, 1};
static const IntentDType DRV_U8 = {1, 8, 1};
enum { DRV_E_DOMAIN = -7, DRV_E_BOUNDS = -6 };

/* 2^e for -200 <= e <= 200, without libm. */
static inline double mx_pow2(int e)
{
    double r = 1.0;
    for (; e > 0; e--)
        r *= 2.0;
    for (; e < 0; e++)
        r *= 0.5;
    return r;
}

/* A sign-exponent-mantissa code with `ebits`, `mbits` and `bias` (no specials). */
static inline double mx_value(unsigned code, int ebits, int mbits, int bias)
{
    unsigned e = (code >> mbits) & ((1u << ebits) - 1), m = code & ((1u << mbits) - 1);
    double mag = e == 0 ? (double)m * mx_pow2(1 - bias - mbits)
                        : (double)((1u << mbits) + m) * mx_pow2((int)e - bias - mbits);
    return (code >> (ebits + mbits)) & 1 ? -mag : mag;
}

static inline double f8e4m3_value(uint8_t c) { return (c & 0x7F) == 0x7F ? NAN : mx_value(c, 4, 3, 7); }
static inline double f4e2m1_value(uint8_t c) { return mx_value(c & 0xF, 2, 1, 1); }
static inline double e8m0_value(uint8_t c) { return c == 0xFF ? NAN : mx_pow2((int)c - 127); }

/* Element i of a packed f4e2m1 buffer: the low nibble of byte i/2 for even i. */
static inline uint8_t f4_get(const uint8_t *p, int64_t i) { return (p[i >> 1] >> ((i & 1) * 4)) & 0xF; }
static inline void f4_set(uint8_t *p, int64_t i, uint8_t code)
{
    int shift = (int)(i & 1) * 4;
    p[i >> 1] = (uint8_t)((p[i >> 1] & ~(0xF << shift)) | ((code & 0xF) << shift));
}

/* |got - want| within the bound of an f32 sum of `terms` products (want, scale in double). */
static inline int mx_close(float got, double want, double scale, int64_t terms)
{
    if (want != want)
        return got != got;
    double d = (double)got - want;
    return (d < 0 ? -d : d) <= (double)terms * 0x1p-24 * scale + 1e-30;
}

#endif
