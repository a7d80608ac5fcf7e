/* softmax_forward: probs[bt,:] = softmax(logits[bt,:]) over V entries per row. */
#include <math.h>
#include "../realworld_threads.h"

void softmax_forward(float *probs, const float *logits, int B, int T, int V) {
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *x = logits + (long)(b * T + t) * V;
            float *p = probs + (long)(b * T + t) * V;
            float maxval = -10000.0f;
            for (int i = 0; i < V; i++) if (x[i] > maxval) maxval = x[i];
            float sum = 0.0f;
            for (int i = 0; i < V; i++) { p[i] = expf(x[i] - maxval); sum += p[i]; }
            for (int i = 0; i < V; i++) p[i] /= sum;
        }
}
