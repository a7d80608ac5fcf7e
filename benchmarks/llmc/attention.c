/* attention_forward: causal self-attention, one (b,t,h) per iteration; qkv is (B,T,3C)
   with q, k, v of head h at offsets h*HS, C + h*HS, 2C + h*HS. The scores of the row
   live in a scratch row of T floats per thread (llm.c keeps them in preatt/att). */
#include <math.h>
#include <stdlib.h>
#include "../realworld_threads.h"

void attention_forward(float *out, const float *inp, int B, int T, int C, int NH) {
    int C3 = C * 3, hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    #pragma omp parallel
    {
        float *att = malloc(sizeof(float) * T);
        #pragma omp for collapse(3)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int h = 0; h < NH; h++) {
                    const float *q = inp + (long)(b * T + t) * C3 + h * hs;
                    float maxval = -INFINITY;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const float *k = inp + (long)(b * T + t2) * C3 + h * hs + C;
                        float val = 0.0f;
                        for (int i = 0; i < hs; i++) val += q[i] * k[i];
                        val *= scale;
                        if (val > maxval) maxval = val;
                        att[t2] = val;
                    }
                    float expsum = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++) {
                        float e = expf(att[t2] - maxval);
                        expsum += e;
                        att[t2] = e;
                    }
                    float inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
                    float *o = out + (long)(b * T + t) * C + h * hs;
                    for (int i = 0; i < hs; i++) o[i] = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const float *v = inp + (long)(b * T + t2) * C3 + h * hs + 2 * C;
                        float a = att[t2] * inv;
                        for (int i = 0; i < hs; i++) o[i] += a * v[i];
                    }
                }
        free(att);
    }
}
