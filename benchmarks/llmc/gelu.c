/* gelu_forward: the tanh approximation, element-wise. */
#include <math.h>
#include "../realworld_threads.h"

#define GELU_SCALING_FACTOR 0.7978845608028654f  /* sqrt(2 / pi) */

void gelu_forward(float *out, const float *inp, long N) {
    #pragma omp parallel for simd
    for (long i = 0; i < N; i++) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
    }
}
