/* Drives the compiled samples/mxfp4_matmul.intent through its C ABI:
 *     int32_t mxfp4_matmul(const IntentTensor *a, const IntentTensor *sa, const IntentTensor *b,
 *                          const IntentTensor *sb, IntentTensor *out);
 *     int32_t to_fp4(const IntentTensor *x, IntentTensor *out);
 * f4e2m1 tensors (DLPack 17, 4) are packed two per byte: element i of the row-major order is
 * the low nibble of byte i/2 when i is even. a: [M, G, 32], sa: e8m0 [M, G], b: [G, 32, N],
 * sb: [N, G]. The reference decodes in double (tolerance: K * 2^-24 * sum |x y|); to_fp4
 * rounds to nearest even and saturates at +-6. */
#include "mxfp4_matmul.h"

#include "driver_common.h"
#include "mx_reference.h"

static void run(int64_t M, int64_t G, int64_t N)
{
    const int64_t K = G * 32;
    uint8_t *a = drv_alloc((size_t)(M * K + 1) / 2 + 1, 1), *b = drv_alloc((size_t)(K * N + 1) / 2 + 1, 1);
    uint8_t *sa = drv_alloc((size_t)(M * G), 1), *sb = drv_alloc((size_t)(N * G), 1);
    for (int64_t i = 0; i < M * K; i++)
        f4_set(a, i, (uint8_t)drv_i64(0, 15));
    for (int64_t i = 0; i < K * N; i++)
        f4_set(b, i, (uint8_t)drv_i64(0, 15));
    for (int64_t i = 0; i < M * G; i++)
        sa[i] = (uint8_t)drv_i64(120, 134);
    for (int64_t i = 0; i < N * G; i++)
        sb[i] = (uint8_t)drv_i64(120, 134);
    float *out = drv_alloc((size_t)(M * N), sizeof(float));
    DrvTensor da, dsa, db, dsb, dout;
    int64_t ashape[3] = {M, G, 32}, bshape[3] = {G, 32, N};
    int32_t rc = mxfp4_matmul(drv_tensor(&da, a, DRV_F4E2M1, 3, ashape, NULL), drv_tensor2(&dsa, sa, DRV_E8M0, M, G, NULL),
                              drv_tensor(&db, b, DRV_F4E2M1, 3, bshape, NULL), drv_tensor2(&dsb, sb, DRV_E8M0, N, G, NULL),
                              drv_tensor2(&dout, out, DRV_F32, M, N, NULL));
    if (rc != 0) {
        drv_fail("mxfp4_matmul %lldx%lldx%lld returned %d (%s)", (long long)M, (long long)G, (long long)N, (int)rc,
                 intent_last_error());
        return;
    }
    long long bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0.0, scale = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double x = f4e2m1_value(f4_get(a, m * K + k)) * e8m0_value(sa[m * G + k / 32]);
                double y = f4e2m1_value(f4_get(b, k * N + n)) * e8m0_value(sb[n * G + k / 32]);
                sum += x * y;
                scale += x * y < 0 ? -x * y : x * y;
            }
            bad += !mx_close(out[m * N + n], sum, scale, K);
        }
    if (bad)
        drv_fail("mxfp4_matmul %lldx%lldx%lld: %lld elements off the reference", (long long)M, (long long)G,
                 (long long)N, bad);
    free(a), free(b), free(sa), free(sb), free(out);
}

int main(void)
{
    drv_seed(4);
    run(1, 1, 1);
    run(33, 2, 97);
    run(128, 8, 128);
    run(0, 2, 5);

    /* Quantisation: round to nearest even, ties to the even code, saturating at +-6. */
    static const float x[14] = {0.0f, -0.0f, 0.25f, 0.26f, 0.75f, 1.25f, 2.5f, 3.5f, 5.0f, 6.5f, 1e9f, -1e9f, -2.9f,
                                0.5f};
    static const uint8_t want[14] = {0x0, 0x8, 0x0, 0x1, 0x2, 0x2, 0x4, 0x6, 0x6, 0x7, 0x7, 0xF, 0xD, 0x1};
    uint8_t packed[7];
    memset(packed, 0xAA, sizeof packed);
    DrvTensor dx, dq;
    int32_t rc = to_fp4(drv_tensor2(&dx, (void *)x, DRV_F32, 2, 7, NULL), drv_tensor2(&dq, packed, DRV_F4E2M1, 2, 7, NULL));
    if (rc != 0)
        drv_fail("to_fp4 returned %d (%s)", (int)rc, intent_last_error());
    for (int i = 0; i < 14 && rc == 0; i++)
        if (f4_get(packed, i) != want[i])
            drv_fail("to_fp4(%g) = code %u, expected %u", (double)x[i], f4_get(packed, i), want[i]);

    /* Blocks of 16 elements in b do not match a's 32: refused before anything is written. */
    uint8_t a1[16] = {0}, b1[8 * 3] = {0}, s1[2] = {127, 127}, s3[3] = {127, 127, 127};
    float o[6], before[6];
    drv_fill_sentinel_f32(o, 6);
    memcpy(before, o, sizeof o);
    DrvTensor t1, t2, t3, t4, t5;
    int64_t as[3] = {1, 1, 32}, bs[3] = {1, 16, 3};
    rc = mxfp4_matmul(drv_tensor(&t1, a1, DRV_F4E2M1, 3, as, NULL), drv_tensor2(&t2, s1, DRV_E8M0, 1, 1, NULL),
                      drv_tensor(&t3, b1, DRV_F4E2M1, 3, bs, NULL), drv_tensor2(&t4, s3, DRV_E8M0, 3, 1, NULL),
                      drv_tensor2(&t5, o, DRV_F32, 1, 3, NULL));
    drv_expect_refused("blocks of 16 in b", rc, DRV_E_SHAPE, o, before, sizeof o);
    return drv_finish("mxfp4_matmul");
}
