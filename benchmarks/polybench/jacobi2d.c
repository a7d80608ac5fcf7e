/* jacobi-2d: tsteps rounds of two 5-point averages, A -> B -> A, rows in parallel. */
#include "../realworld_threads.h"

void jacobi2d(int tsteps, int n, double *A, double *B) {
    for (int t = 0; t < tsteps; t++) {
        #pragma omp parallel for
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                B[(long)i * n + j] = 0.2 * (A[(long)i * n + j] + A[(long)i * n + j - 1] + A[(long)i * n + j + 1]
                                            + A[(long)(i + 1) * n + j] + A[(long)(i - 1) * n + j]);
        #pragma omp parallel for
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                A[(long)i * n + j] = 0.2 * (B[(long)i * n + j] + B[(long)i * n + j - 1] + B[(long)i * n + j + 1]
                                            + B[(long)(i + 1) * n + j] + B[(long)(i - 1) * n + j]);
    }
}
