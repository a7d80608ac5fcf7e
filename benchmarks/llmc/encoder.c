/* encoder_forward: out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]; one (b,t) row per iteration. */
#include "../realworld_threads.h"

void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                     int B, int T, int C) {
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *out_bt = out + (long)(b * T + t) * C;
            const float *wte_ix = wte + (long)inp[b * T + t] * C;
            const float *wpe_t = wpe + (long)t * C;
            for (int i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
        }
    }
}
