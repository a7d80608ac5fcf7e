/* Drives the compiled samples/mxfp8_matmul.intent through its C ABI:
 *     int32_t mxfp8_matmul(const IntentTensor *a, const IntentTensor *sa, const IntentTensor *b,
 *                          const IntentTensor *sb, IntentTensor *out);
 *     int32_t mxfp8_dequantize(const IntentTensor *a, const IntentTensor *sa, IntentTensor *out);
 * a: f8e4m3 codes [M, K] (DLPack 10, 8), sa: e8m0 [M, K/32] (14, 8), b: [K, N], sb: [N, K/32].
 * The reference decodes every code and scale in double; an f32 sum of K products is within
 * K * 2^-24 * sum |x y| of it. A NaN scale row gives a NaN row; K = 40 is refused (T4). */
#include "mxfp8_matmul.h"

#include "driver_common.h"
#include "mx_reference.h"

static void run(int64_t M, int64_t K, int64_t N, int nan_row)
{
    const int64_t G = K / 32;
    uint8_t *a = drv_alloc((size_t)(M * K), 1), *b = drv_alloc((size_t)(K * N), 1);
    uint8_t *sa = drv_alloc((size_t)(M * G), 1), *sb = drv_alloc((size_t)(N * G), 1);
    for (int64_t i = 0; i < M * K; i++)
        a[i] = (uint8_t)drv_i64(0, 255), a[i] = (a[i] & 0x7F) == 0x7F ? 0x3C : a[i];
    for (int64_t i = 0; i < K * N; i++)
        b[i] = (uint8_t)drv_i64(0, 255), b[i] = (b[i] & 0x7F) == 0x7F ? 0x38 : b[i];
    for (int64_t i = 0; i < M * G; i++)
        sa[i] = (uint8_t)drv_i64(118, 135);
    for (int64_t i = 0; i < N * G; i++)
        sb[i] = (uint8_t)drv_i64(118, 135);
    if (nan_row >= 0)
        for (int64_t g = 0; g < G; g++)
            sa[nan_row * G + g] = 0xFF;
    float *out = drv_alloc((size_t)(M * N), sizeof(float));
    DrvTensor da, dsa, db, dsb, dout;
    int32_t rc = mxfp8_matmul(drv_tensor2(&da, a, DRV_F8E4M3, M, K, NULL), drv_tensor2(&dsa, sa, DRV_E8M0, M, G, NULL),
                              drv_tensor2(&db, b, DRV_F8E4M3, K, N, NULL), drv_tensor2(&dsb, sb, DRV_E8M0, N, G, NULL),
                              drv_tensor2(&dout, out, DRV_F32, M, N, NULL));
    if (rc != 0) {
        drv_fail("mxfp8_matmul %lldx%lldx%lld returned %d (%s)", (long long)M, (long long)K, (long long)N, (int)rc,
                 intent_last_error());
        return;
    }
    long long bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0.0, scale = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double x = f8e4m3_value(a[m * K + k]) * e8m0_value(sa[m * G + k / 32]);
                double y = f8e4m3_value(b[k * N + n]) * e8m0_value(sb[n * G + k / 32]);
                sum += x * y;
                scale += x * y < 0 ? -x * y : x * y;
            }
            bad += !mx_close(out[m * N + n], sum, scale, K);
        }
    if (bad)
        drv_fail("mxfp8_matmul %lldx%lldx%lld: %lld elements off the reference", (long long)M, (long long)K,
                 (long long)N, bad);
    free(a), free(b), free(sa), free(sb), free(out);
}

int main(void)
{
    drv_seed(8);
    run(1, 32, 1, -1);
    run(37, 128, 70, -1);
    run(130, 256, 200, 5);
    run(0, 64, 3, -1);

    /* Dequantisation: one code times its block's scale, exact. */
    uint8_t q[2 * 3 * 32], sq[6];
    float deq[2 * 3 * 32];
    for (int i = 0; i < 192; i++)
        q[i] = (uint8_t)(i * 37 + 11), q[i] = (q[i] & 0x7F) == 0x7F ? 0 : q[i];
    for (int i = 0; i < 6; i++)
        sq[i] = (uint8_t)(120 + 3 * i);
    DrvTensor dq, dsq, dd;
    int64_t qshape[3] = {2, 3, 32}, sshape[2] = {2, 3};
    int32_t rc = mxfp8_dequantize(drv_tensor(&dq, q, DRV_F8E4M3, 3, qshape, NULL),
                                  drv_tensor(&dsq, sq, DRV_E8M0, 2, sshape, NULL),
                                  drv_tensor(&dd, deq, DRV_F32, 3, qshape, NULL));
    long long bad = rc != 0;
    for (int i = 0; i < 192 && !bad; i++)
        bad += !drv_same_f32(deq[i], (float)(f8e4m3_value(q[i]) * e8m0_value(sq[i / 32])));
    if (bad)
        drv_fail("mxfp8_dequantize: rc %d or values differ", (int)rc);

    /* K = 40 is not a multiple of the block size: refused before anything is written. */
    uint8_t a40[4 * 40] = {0}, b40[40 * 5] = {0}, s4[4] = {127, 127, 127, 127}, s5[5] = {127, 127, 127, 127, 127};
    float o[20], before[20];
    drv_fill_sentinel_f32(o, 20);
    memcpy(before, o, sizeof o);
    DrvTensor t1, t2, t3, t4, t5;
    rc = mxfp8_matmul(drv_tensor2(&t1, a40, DRV_F8E4M3, 4, 40, NULL), drv_tensor2(&t2, s4, DRV_E8M0, 4, 1, NULL),
                      drv_tensor2(&t3, b40, DRV_F8E4M3, 40, 5, NULL), drv_tensor2(&t4, s5, DRV_E8M0, 5, 1, NULL),
                      drv_tensor2(&t5, o, DRV_F32, 4, 5, NULL));
    drv_expect_refused("K = 40 (T4)", rc, DRV_E_SHAPE, o, before, sizeof o);
    rc = mxfp8_matmul(drv_tensor2(&t1, a40, DRV_F8E4M3, 4, 32, NULL), drv_tensor2(&t2, s4, DRV_U8, 4, 1, NULL),
                      drv_tensor2(&t3, b40, DRV_F8E4M3, 32, 5, NULL), drv_tensor2(&t4, s5, DRV_E8M0, 5, 1, NULL),
                      drv_tensor2(&t5, o, DRV_F32, 4, 5, NULL));
    drv_expect_refused("scales are u8", rc, DRV_E_DTYPE, o, before, sizeof o);
    return drv_finish("mxfp8_matmul");
}
