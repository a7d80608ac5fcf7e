/* Baselines for the selective scan benchmark (samples/selective_scan.intent), channels
 * first: x, delta, y [D][T]; a, h0, last [D][16]; b, c [16][T].
 *     h[s] = expf(delta[d][t] a[d][s]) h[s] + delta[d][t] b[s][t] x[d][t]
 *     y[d][t] = sum over s of c[s][t] h[s]
 * selective_scan_serial is the loop a C programmer writes: per channel, the 16 states
 * in a small array, one step at a time (gcc -O3 -march=native: the C library's expf,
 * fused multiply-adds where gcc contracts them). selective_scan_omp is the same loop
 * with the channels split over OpenMP threads. selective_scan_f64 is the float64
 * reference the results are checked against. */
#include <math.h>
#include <stdint.h>

enum { S = 16 };

static void channel(int64_t t_len, const float *restrict x, const float *restrict delta, const float *restrict a,
                    const float *restrict b, const float *restrict c, const float *restrict h0, float *restrict y,
                    float *restrict last)
{
    float h[S];
    for (int s = 0; s < S; s++)
        h[s] = h0[s];
    for (int64_t t = 0; t < t_len; t++) {
        const float dt = delta[t], dx = dt * x[t];
        float acc = 0.0f;
        for (int s = 0; s < S; s++) {
            h[s] = expf(dt * a[s]) * h[s] + dx * b[s * t_len + t];
            acc += c[s * t_len + t] * h[s];
        }
        y[t] = acc;
    }
    for (int s = 0; s < S; s++)
        last[s] = h[s];
}

void selective_scan_serial(int64_t d_len, int64_t t_len, const float *x, const float *delta, const float *a,
                           const float *b, const float *c, const float *h0, float *y, float *last)
{
    for (int64_t d = 0; d < d_len; d++)
        channel(t_len, x + d * t_len, delta + d * t_len, a + d * S, b, c, h0 + d * S, y + d * t_len, last + d * S);
}

void selective_scan_omp(int64_t d_len, int64_t t_len, const float *x, const float *delta, const float *a,
                        const float *b, const float *c, const float *h0, float *y, float *last)
{
#pragma omp parallel for schedule(static)
    for (int64_t d = 0; d < d_len; d++)
        channel(t_len, x + d * t_len, delta + d * t_len, a + d * S, b, c, h0 + d * S, y + d * t_len, last + d * S);
}

void selective_scan_f64(int64_t d_len, int64_t t_len, const float *x, const float *delta, const float *a,
                        const float *b, const float *c, const float *h0, float *y, float *last)
{
    for (int64_t d = 0; d < d_len; d++) {
        double h[S];
        for (int s = 0; s < S; s++)
            h[s] = h0[d * S + s];
        for (int64_t t = 0; t < t_len; t++) {
            const double dt = delta[d * t_len + t];
            double acc = 0.0;
            for (int s = 0; s < S; s++) {
                h[s] = exp(dt * a[d * S + s]) * h[s] + dt * b[s * t_len + t] * x[d * t_len + t];
                acc += c[s * t_len + t] * h[s];
            }
            y[d * t_len + t] = (float)acc;
        }
        for (int s = 0; s < S; s++)
            last[d * S + s] = (float)h[s];
    }
}
