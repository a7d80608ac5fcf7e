/* lu: PolyBench's in-place LU without pivoting, i, j, k loops; row i depends on all rows
   before it (the OpenMP build is the serial code). */
#include "../realworld_threads.h"

void lu(int n, double *A) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            for (int k = 0; k < j; k++) A[(long)i * n + j] -= A[(long)i * n + k] * A[(long)k * n + j];
            A[(long)i * n + j] /= A[(long)j * n + j];
        }
        for (int j = i; j < n; j++)
            for (int k = 0; k < i; k++) A[(long)i * n + j] -= A[(long)i * n + k] * A[(long)k * n + j];
    }
}
