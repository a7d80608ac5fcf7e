/* atax: y = A^T (A x). PolyBench's loop: per row i, tmp_i = A[i,:] x, then y += tmp_i A[i,:].
   The OpenMP form computes tmp in parallel over rows, then y in parallel over columns. */
#include "../realworld_threads.h"

void atax(int m, int n, const double *A, const double *x, double *y, double *tmp) {
#ifdef _OPENMP
    #pragma omp parallel for
    for (int i = 0; i < m; i++) {
        double t = 0.0;
        for (int j = 0; j < n; j++) t += A[(long)i * n + j] * x[j];
        tmp[i] = t;
    }
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int j0 = (int)((long)n * id / nt), j1 = (int)((long)n * (id + 1) / nt);
        for (int j = j0; j < j1; j++) y[j] = 0.0;
        for (int i = 0; i < m; i++) {
            double t = tmp[i];
            for (int j = j0; j < j1; j++) y[j] += A[(long)i * n + j] * t;
        }
    }
#else
    for (int j = 0; j < n; j++) y[j] = 0.0;
    for (int i = 0; i < m; i++) {
        double t = 0.0;
        for (int j = 0; j < n; j++) t += A[(long)i * n + j] * x[j];
        tmp[i] = t;
        for (int j = 0; j < n; j++) y[j] += A[(long)i * n + j] * t;
    }
#endif
}
