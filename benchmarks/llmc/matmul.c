/* matmul_forward: out[bt,o] = bias[o] + sum_i inp[bt,i] * weight[o,i], with llm.c's loop
   structure: blocks of 8 rows of bt share each weight row, 8 accumulators in registers. */
#include "../realworld_threads.h"

#define ROWS 8

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int B, int T, int C, int OC) {
    int BT = B * T;
    if (BT % ROWS != 0) {  /* the plain loop for shapes that do not tile */
        #pragma omp parallel for
        for (int bt = 0; bt < BT; bt++)
            for (int o = 0; o < OC; o++) {
                float val = bias ? bias[o] : 0.0f;
                for (int i = 0; i < C; i++) val += inp[(long)bt * C + i] * weight[(long)o * C + i];
                out[(long)bt * OC + o] = val;
            }
        return;
    }
    #pragma omp parallel for
    for (int obt = 0; obt < BT; obt += ROWS) {
        for (int o = 0; o < OC; o++) {
            float result[ROWS];
            for (int r = 0; r < ROWS; r++) result[r] = bias ? bias[o] : 0.0f;
            for (int i = 0; i < C; i++) {
                float w = weight[(long)o * C + i];
                for (int r = 0; r < ROWS; r++) result[r] += inp[(long)(obt + r) * C + i] * w;
            }
            for (int r = 0; r < ROWS; r++) out[(long)(obt + r) * OC + o] = result[r];
        }
    }
}
