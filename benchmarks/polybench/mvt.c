/* mvt: x1 += A y1; x2 += A^T y2, PolyBench's two loop nests (the second walks A by
   columns), each parallel over its output. */
#include "../realworld_threads.h"

void mvt(int n, const double *A, const double *y1, const double *y2, double *x1, double *x2) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) x1[i] += A[(long)i * n + j] * y1[j];
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) x2[i] += A[(long)j * n + i] * y2[j];
}
