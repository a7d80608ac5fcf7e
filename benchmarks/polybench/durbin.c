/* durbin: the Levinson-Durbin recursion; step k needs step k - 1 (serial; the OpenMP
   build is the serial code). */
#include "../realworld_threads.h"

void durbin(int n, const double *r, double *y, double *z) {
    double alpha, beta, sum;
    y[0] = -r[0];
    beta = 1.0;
    alpha = -r[0];
    for (int k = 1; k < n; k++) {
        beta = (1 - alpha * alpha) * beta;
        sum = 0.0;
        for (int i = 0; i < k; i++) sum += r[k - i - 1] * y[i];
        alpha = -(r[k] + sum) / beta;
        for (int i = 0; i < k; i++) z[i] = y[i] + alpha * y[k - i - 1];
        for (int i = 0; i < k; i++) y[i] = z[i];
        y[k] = alpha;
    }
}
