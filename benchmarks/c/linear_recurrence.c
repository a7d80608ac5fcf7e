/* Baseline for the linear recurrence benchmark: h = a[i] * h + b[i], out[i] = h, one
 * serial loop (there is no parallel C peer). Built with gcc -O3 -march=native, where gcc
 * contracts a[i] * h + b[i] into a fused multiply-add by default, and again with
 * -ffp-contract=off (separate multiply and add, as the Intent program's IEEE rules).
 * linear_recurrence_f64 is the float64 reference the results are checked against. */
#include <stdint.h>

void linear_recurrence_c(int64_t n, const float *restrict a, const float *restrict b, float h,
                         float *restrict out)
{
    for (int64_t i = 0; i < n; i++) {
        h = a[i] * h + b[i];
        out[i] = h;
    }
}

void linear_recurrence_f64(int64_t n, const float *restrict a, const float *restrict b, double h,
                           float *restrict out)
{
    for (int64_t i = 0; i < n; i++) {
        h = (double)a[i] * h + (double)b[i];
        out[i] = (float)h;
    }
}
