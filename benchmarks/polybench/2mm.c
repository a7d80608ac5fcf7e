/* 2mm: tmp = alpha*A*B; D = beta*D + tmp*C, rows of the results in parallel. */
#include "../realworld_threads.h"

void mm2(int ni, int nj, int nk, int nl, double alpha, double beta, double *tmp,
         const double *A, const double *B, const double *C, double *D) {
    #pragma omp parallel for
    for (int i = 0; i < ni; i++) {
        for (int j = 0; j < nj; j++) tmp[(long)i * nj + j] = 0.0;
        for (int k = 0; k < nk; k++) {
            double a = alpha * A[(long)i * nk + k];
            for (int j = 0; j < nj; j++) tmp[(long)i * nj + j] += a * B[(long)k * nj + j];
        }
    }
    #pragma omp parallel for
    for (int i = 0; i < ni; i++) {
        for (int j = 0; j < nl; j++) D[(long)i * nl + j] *= beta;
        for (int k = 0; k < nj; k++) {
            double t = tmp[(long)i * nj + k];
            for (int j = 0; j < nl; j++) D[(long)i * nl + j] += t * C[(long)k * nl + j];
        }
    }
}
