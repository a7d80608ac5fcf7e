/* gemm: C = alpha*A*B + beta*C, PolyBench's i, k, j loop order. */
#include "../realworld_threads.h"

void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
          const double *B) {
    #pragma omp parallel for
    for (int i = 0; i < ni; i++) {
        for (int j = 0; j < nj; j++) C[(long)i * nj + j] *= beta;
        for (int k = 0; k < nk; k++) {
            double a = alpha * A[(long)i * nk + k];
            for (int j = 0; j < nj; j++) C[(long)i * nj + j] += a * B[(long)k * nj + j];
        }
    }
}
