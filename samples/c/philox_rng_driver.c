/* Drives the compiled samples/philox_rng.intent through its C ABI:
 *     int32_t philox_counters(const IntentTensor *key, const IntentTensor *counters, IntentTensor *out);
 *     int32_t philox_words(uint32_t seed, IntentTensor *out);   uniform_f32(seed, out);
 *     int32_t monte_carlo_pi(uint32_t seed, int64_t n, IntentTensor *hits);
 *     int32_t dropout_mask(const IntentTensor *x, float p, uint32_t seed, IntentTensor *out);
 * The Random123 known-answer vectors of Philox4x32-10 bit for bit, then every word, float and
 * count against this file's own Philox (which passes the same vectors). */
#include "philox_rng.h"

#include "driver_common.h"

static const IntentDType DRV_U32 = {1, 32, 1};

static void philox(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4])
{
    uint32_t k0 = key[0], k1 = key[1], c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static const uint32_t KAT[3][10] = { /* counter[4], key[2], output[4] */
    {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
    {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
     0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
    {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
     0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u},
};

static void known_answers(void)
{
    uint32_t key[2], ctr[4 * 3], out[4 * 3], mine[4];
    for (int v = 0; v < 3; v++) {
        philox(&KAT[v][4], KAT[v], mine);
        if (memcmp(mine, &KAT[v][6], sizeof mine))
            drv_fail("the driver's own Philox misses known-answer vector %d", v);
    }
    for (int v = 0; v < 3; v++) { /* one call per key; the three counters side by side */
        key[0] = KAT[v][4];
        key[1] = KAT[v][5];
        for (int w = 0; w < 4; w++)
            for (int c = 0; c < 3; c++)
                ctr[w * 3 + c] = KAT[v][w];
        DrvTensor dk, dc, dout;
        drv_tensor1(&dk, key, DRV_U32, 2, NULL);
        drv_tensor2(&dc, ctr, DRV_U32, 4, 3, NULL);
        drv_tensor2(&dout, out, DRV_U32, 4, 3, NULL);
        int32_t rc = philox_counters(&dk.t, &dc.t, &dout.t);
        int ok = rc == 0;
        for (int w = 0; w < 4 && ok; w++)
            for (int c = 0; c < 3; c++)
                ok &= out[w * 3 + c] == KAT[v][6 + w];
        if (!ok)
            drv_fail("known-answer vector %d: rc %d, words %08x %08x %08x %08x", v, (int)rc, out[0], out[3], out[6],
                     out[9]);
        else
            printf("  ok  known-answer vector %d: %08x %08x %08x %08x\n", v, out[0], out[3], out[6], out[9]);
    }
}

static void streams(int64_t n, uint32_t seed)
{
    char label[64];
    snprintf(label, sizeof label, "N=%lld seed=%u", (long long)n, seed);
    uint32_t *words = drv_alloc((size_t)(4 * n), sizeof(uint32_t));
    float *floats = drv_alloc((size_t)(4 * n), sizeof(float));
    DrvTensor dw, df;
    drv_tensor2(&dw, words, DRV_U32, 4, n, NULL);
    drv_tensor2(&df, floats, DRV_F32, 4, n, NULL);
    int32_t rc1 = philox_words(seed, &dw.t), rc2 = uniform_f32(seed, &df.t);
    int bad = rc1 || rc2;
    for (int64_t i = 0; i < n && !bad; i++) {
        uint32_t key[2] = {seed, 0}, ctr[4] = {(uint32_t)i, (uint32_t)((uint64_t)i >> 32), 0, 0}, w[4];
        philox(key, ctr, w);
        uint32_t key1[2] = {seed, 1}, ctr1[4] = {(uint32_t)i, 0, 0, 0}, u[4];
        philox(key1, ctr1, u);
        for (int k = 0; k < 4; k++) {
            bad |= words[k * n + i] != w[k];
            bad |= !drv_same_f32(floats[k * n + i], (float)(u[k] >> 8) * (1.0f / 16777216.0f));
        }
        if (bad)
            drv_fail("%s: point %lld differs (rc %d %d)", label, (long long)i, (int)rc1, (int)rc2);
    }
    /* Monte Carlo pi from the first two floats of key (seed, 2). */
    int64_t hits = 0, want = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t key[2] = {seed, 2}, ctr[4] = {(uint32_t)i, 0, 0, 0}, u[4];
        philox(key, ctr, u);
        const float x = (float)(u[0] >> 8) * (1.0f / 16777216.0f), y = (float)(u[1] >> 8) * (1.0f / 16777216.0f);
        want += x * x + y * y < 1.0f;
    }
    DrvTensor dh;
    drv_tensor1(&dh, &hits, DRV_I64, 1, NULL);
    int32_t rc = monte_carlo_pi(seed, n, &dh.t);
    if (rc != 0 || hits != want)
        drv_fail("%s: monte_carlo_pi: rc %d, %lld hits, expected %lld", label, (int)rc, (long long)hits,
                 (long long)want);
    /* Dropout: keep x / (1 - p) where the first float of key (seed, 3) is >= p. */
    float *x = drv_alloc((size_t)n, sizeof(float)), *out = drv_alloc((size_t)n, sizeof(float));
    float *expect = drv_alloc((size_t)n, sizeof(float));
    drv_fill_f32(x, (size_t)n, -5.0f, 5.0f);
    const float p = 0.25f;
    for (int64_t i = 0; i < n; i++) {
        uint32_t key[2] = {seed, 3}, ctr[4] = {(uint32_t)i, 0, 0, 0}, u[4];
        philox(key, ctr, u);
        expect[i] = (float)(u[0] >> 8) * (1.0f / 16777216.0f) >= p ? x[i] / (1.0f - p) : 0.0f;
    }
    DrvTensor dx, dout;
    drv_tensor1(&dx, x, DRV_F32, n, NULL);
    drv_tensor1(&dout, out, DRV_F32, n, NULL);
    drv_check_f32("dropout_mask", dropout_mask(&dx.t, p, seed, &dout.t), out, expect, (size_t)n);
    if (!bad)
        printf("  ok  %s (pi ~ %.4f)\n", label, n ? 4.0 * (double)hits / (double)n : 0.0);
    free(words);
    free(floats);
    free(x);
    free(out);
    free(expect);
}

int main(void)
{
    drv_seed(37);
    known_answers();
    streams(0, 1);
    streams(1, 2);
    streams(1000, 42);
    streams(1 << 20, 0xdeadbeefu);
    static uint32_t out[4 * 5], before[4 * 5];
    DrvTensor dout;
    drv_tensor2(&dout, out, DRV_U32, 3, 5, NULL);
    memcpy(before, out, sizeof out);
    drv_expect_refused("out has 3 rows, not 4", philox_words(7, &dout.t), DRV_E_SHAPE, out, before, sizeof out);
    return drv_finish("philox_rng");
}
