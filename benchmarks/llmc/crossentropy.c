/* crossentropy_forward: losses[bt] = -log(probs[bt, targets[bt]]). */
#include <math.h>
#include "../realworld_threads.h"

void crossentropy_forward(float *losses, const float *probs, const int *targets,
                          int B, int T, int V) {
    #pragma omp parallel for
    for (int bt = 0; bt < B * T; bt++)
        losses[bt] = -logf(probs[(long)bt * V + targets[bt]]);
}
