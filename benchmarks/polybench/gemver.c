/* gemver: A += u1 v1^T + u2 v2^T; x += beta A^T y + z; w += alpha A x (PolyBench's four
   loop nests; the A^T y nest walks A by columns). */
#include "../realworld_threads.h"

void gemver(int n, double alpha, double beta, double *A, const double *u1, const double *v1,
            const double *u2, const double *v2, double *w, double *x, const double *y,
            const double *z) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) A[(long)i * n + j] += u1[i] * v1[j] + u2[i] * v2[j];
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) x[i] = x[i] + beta * A[(long)j * n + i] * y[j];
    #pragma omp parallel for
    for (int i = 0; i < n; i++) x[i] = x[i] + z[i];
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) w[i] = w[i] + alpha * A[(long)i * n + j] * x[j];
}
