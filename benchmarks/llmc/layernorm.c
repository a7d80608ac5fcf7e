/* layernorm_forward / layernorm_backward over the C channels of each of the B*T rows.
   The backward pass sets dweight and dbias (equal to adding into zeroed gradients). */
#include <math.h>
#include "../realworld_threads.h"

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, int B, int T, int C) {
    const float eps = 1e-5f;
    #pragma omp parallel for
    for (int bt = 0; bt < B * T; bt++) {
        const float *x = inp + (long)bt * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) m += x[i];
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) { float d = x[i] - m; v += d * d; }
        v = v / C;
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + (long)bt * C;
        for (int i = 0; i < C; i++) o[i] = (s * (x[i] - m)) * weight[i] + bias[i];
        mean[bt] = m;
        rstd[bt] = s;
    }
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int B, int T, int C) {
    /* dinp: rows are independent. */
    #pragma omp parallel for
    for (int bt = 0; bt < B * T; bt++) {
        const float *dout_bt = dout + (long)bt * C;
        const float *inp_bt = inp + (long)bt * C;
        float *dinp_bt = dinp + (long)bt * C;
        float mean_bt = mean[bt], rstd_bt = rstd[bt];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
            float dnorm_i = weight[i] * dout_bt[i];
            dnorm_mean += dnorm_i;
            dnorm_norm_mean += dnorm_i * norm_bti;
        }
        dnorm_mean = dnorm_mean / C;
        dnorm_norm_mean = dnorm_norm_mean / C;
        for (int i = 0; i < C; i++) {
            float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
            float dnorm_i = weight[i] * dout_bt[i];
            dinp_bt[i] = (dnorm_i - dnorm_mean - norm_bti * dnorm_norm_mean) * rstd_bt;
        }
    }
    /* dweight, dbias: sums over all rows, split over blocks of channels so that the
       threads never write the same gradient. */
    #pragma omp parallel for
    for (int c0 = 0; c0 < C; c0 += 64) {
        int c1 = c0 + 64 < C ? c0 + 64 : C;
        for (int i = c0; i < c1; i++) { dweight[i] = 0.0f; dbias[i] = 0.0f; }
        for (int bt = 0; bt < B * T; bt++) {
            const float *dout_bt = dout + (long)bt * C;
            const float *inp_bt = inp + (long)bt * C;
            float mean_bt = mean[bt], rstd_bt = rstd[bt];
            for (int i = c0; i < c1; i++) {
                float norm_bti = (inp_bt[i] - mean_bt) * rstd_bt;
                dbias[i] += dout_bt[i];
                dweight[i] += norm_bti * dout_bt[i];
            }
        }
    }
}
