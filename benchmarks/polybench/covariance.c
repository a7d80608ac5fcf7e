/* covariance: mean of each of the m variables over n observations, centre the data in
   place, then the upper triangle of cov = data^T data / (n - 1), mirrored (PolyBench's
   loops; the triangle's rows in parallel, dynamically scheduled since they shrink). */
#include "../realworld_threads.h"

void covariance(int m, int n, double *data, double *cov, double *mean) {
    double float_n = (double)n;
    #pragma omp parallel for
    for (int j = 0; j < m; j++) {
        mean[j] = 0.0;
        for (int i = 0; i < n; i++) mean[j] += data[(long)i * m + j];
        mean[j] /= float_n;
    }
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) data[(long)i * m + j] -= mean[j];
    #pragma omp parallel for schedule(dynamic, 8)
    for (int i = 0; i < m; i++)
        for (int j = i; j < m; j++) {
            double s = 0.0;
            for (int k = 0; k < n; k++) s += data[(long)k * m + i] * data[(long)k * m + j];
            s /= (float_n - 1.0);
            cov[(long)i * m + j] = s;
            cov[(long)j * m + i] = s;
        }
}
