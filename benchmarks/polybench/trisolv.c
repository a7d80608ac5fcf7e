/* trisolv: forward substitution, x[i] = (b[i] - L[i, :i] x[:i]) / L[i][i]; each x[i]
   needs the ones before it (the OpenMP build is the serial code). */
#include "../realworld_threads.h"

void trisolv(int n, const double *L, double *x, const double *b) {
    for (int i = 0; i < n; i++) {
        x[i] = b[i];
        for (int j = 0; j < i; j++) x[i] -= L[(long)i * n + j] * x[j];
        x[i] = x[i] / L[(long)i * n + i];
    }
}
