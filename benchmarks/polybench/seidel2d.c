/* seidel-2d: in-place Gauss-Seidel sweeps; every point depends on the ones before it, so
   the loop nest has no parallel loop as written (the OpenMP build is the serial code). */
#include "../realworld_threads.h"

void seidel2d(int tsteps, int n, double *A) {
    for (int t = 0; t <= tsteps - 1; t++)
        for (int i = 1; i <= n - 2; i++)
            for (int j = 1; j <= n - 2; j++)
                A[(long)i * n + j] = (A[(long)(i - 1) * n + j - 1] + A[(long)(i - 1) * n + j] + A[(long)(i - 1) * n + j + 1]
                                      + A[(long)i * n + j - 1] + A[(long)i * n + j] + A[(long)i * n + j + 1]
                                      + A[(long)(i + 1) * n + j - 1] + A[(long)(i + 1) * n + j] + A[(long)(i + 1) * n + j + 1]) / 9.0;
}
