/* Drives the compiled samples/sparse24_matmul.intent through its C ABI:
 *     int32_t sparse24_matmul(const IntentTensor *values, const IntentTensor *meta,
 *                             const IntentTensor *b, IntentTensor *out);
 * values: f32 [M, K/2], meta: u8 [M, K/4] (first kept position in bits 0-1, second in bits
 * 2-3, increasing), b: f32 [K, N]. The reference sums the kept products in double (tolerance
 * K/2 * 2^-24 * sum |x y|). Invalid metadata is refused (INTENT_E_DOMAIN) before anything is
 * written. */
#include "sparse24_matmul.h"

#include "driver_common.h"
#include "mx_reference.h"

static const int PAIRS[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

static void run(int64_t M, int64_t K, int64_t N)
{
    const int64_t Q = K / 4, H = K / 2;
    float *values = drv_alloc((size_t)(M * H), sizeof(float)), *b = drv_alloc((size_t)(K * N), sizeof(float));
    uint8_t *meta = drv_alloc((size_t)(M * Q), 1);
    drv_fill_f32(values, (size_t)(M * H), -1.0f, 1.0f);
    drv_fill_f32(b, (size_t)(K * N), -1.0f, 1.0f);
    for (int64_t i = 0; i < M * Q; i++) {
        int p = (int)drv_i64(0, 5);
        meta[i] = (uint8_t)(PAIRS[p][0] | PAIRS[p][1] << 2);
    }
    float *out = drv_alloc((size_t)(M * N), sizeof(float));
    DrvTensor dv, dm, db, dout;
    int32_t rc = sparse24_matmul(drv_tensor2(&dv, values, DRV_F32, M, H, NULL), drv_tensor2(&dm, meta, DRV_U8, M, Q, NULL),
                                 drv_tensor2(&db, b, DRV_F32, K, N, NULL), drv_tensor2(&dout, out, DRV_F32, M, N, NULL));
    if (rc != 0) {
        drv_fail("sparse24_matmul %lldx%lldx%lld returned %d (%s)", (long long)M, (long long)K, (long long)N, (int)rc,
                 intent_last_error());
        return;
    }
    long long bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0.0, scale = 0.0;
            for (int64_t t = 0; t < H; t++) {
                int64_t q = t / 2, pos = (meta[m * Q + q] >> (2 * (t % 2))) & 3;
                double p = (double)values[m * H + t] * (double)b[(4 * q + pos) * N + n];
                sum += p;
                scale += p < 0 ? -p : p;
            }
            bad += !mx_close(out[m * N + n], sum, scale, H);
        }
    if (bad)
        drv_fail("sparse24_matmul %lldx%lldx%lld: %lld elements off the reference", (long long)M, (long long)K,
                 (long long)N, bad);
    /* A group whose positions do not increase: refused, out untouched. */
    if (M > 0 && Q > 0) {
        float *before = drv_alloc((size_t)(M * N), sizeof(float));
        memcpy(before, out, (size_t)(M * N) * sizeof(float));
        meta[(M - 1) * Q] = 2 | 1 << 2;
        rc = sparse24_matmul(drv_tensor2(&dv, values, DRV_F32, M, H, NULL), drv_tensor2(&dm, meta, DRV_U8, M, Q, NULL),
                             drv_tensor2(&db, b, DRV_F32, K, N, NULL), drv_tensor2(&dout, out, DRV_F32, M, N, NULL));
        drv_expect_refused("2:4 positions 2 then 1", rc, DRV_E_DOMAIN, out, before, (size_t)(M * N) * sizeof(float));
        free(before);
    }
    free(values), free(b), free(meta), free(out);
}

int main(void)
{
    drv_seed(24);
    run(1, 4, 1);
    run(13, 64, 100);
    run(128, 512, 256);
    run(0, 8, 3);
    return drv_finish("sparse24_matmul");
}
