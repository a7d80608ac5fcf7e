/* AdamW step t (llm.c's gpt2_update): params, m, v updated in place. */
#include <math.h>
#include "../realworld_threads.h"

void adamw(float *params, const float *grads, float *m_memory, float *v_memory, long N,
           float lr, float beta1, float beta2, float eps, float weight_decay, int t) {
    float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
    #pragma omp parallel for simd
    for (long i = 0; i < N; i++) {
        float param = params[i], grad = grads[i];
        float m = beta1 * m_memory[i] + (1.0f - beta1) * grad;
        float v = beta2 * v_memory[i] + (1.0f - beta2) * grad * grad;
        float m_hat = m / c1;
        float v_hat = v / c2;
        m_memory[i] = m;
        v_memory[i] = v;
        params[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * param);
    }
}
