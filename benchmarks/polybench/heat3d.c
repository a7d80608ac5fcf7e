/* heat-3d: tsteps rounds of a 7-point heat step, A -> B -> A, planes in parallel. */
#include "../realworld_threads.h"

#define AT(X, i, j, k) X[((long)(i) * n + (j)) * n + (k)]

static void step(int n, double *B, const double *A) {
    #pragma omp parallel for
    for (int i = 1; i < n - 1; i++)
        for (int j = 1; j < n - 1; j++)
            for (int k = 1; k < n - 1; k++)
                AT(B, i, j, k) = 0.125 * (AT(A, i + 1, j, k) - 2.0 * AT(A, i, j, k) + AT(A, i - 1, j, k))
                               + 0.125 * (AT(A, i, j + 1, k) - 2.0 * AT(A, i, j, k) + AT(A, i, j - 1, k))
                               + 0.125 * (AT(A, i, j, k + 1) - 2.0 * AT(A, i, j, k) + AT(A, i, j, k - 1))
                               + AT(A, i, j, k);
}

void heat3d(int tsteps, int n, double *A, double *B) {
    for (int t = 1; t <= tsteps; t++) {
        step(n, B, A);
        step(n, A, B);
    }
}
