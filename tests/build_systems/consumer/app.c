/* A C program that calls the Intent kernel saxpy (out = a * x + y) and checks the result. */
#include <stdio.h>

#include "saxpy.h"

int main(void)
{
    enum { N = 1000 };
    static float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(3 * i - 7);
    }
    int64_t n = N;
    const IntentDType f32 = {INTENT_DTYPE_FLOAT, 32, 1};
    IntentTensor tx = {.data = x, .device = {INTENT_DEVICE_CPU, 0}, .ndim = 1, .dtype = f32, .shape = &n};
    IntentTensor ty = tx, tout = tx;
    ty.data = y;
    tout.data = out;
    int32_t rc = saxpy(2.0f, &tx, &ty, &tout);
    if (rc != 0) {
        printf("FAIL saxpy: status %d: %s\n", (int)rc, intent_last_error());
        return 1;
    }
    for (int i = 0; i < N; i++) {
        if (out[i] != 2.0f * x[i] + y[i]) { /* exact: small integers */
            printf("FAIL saxpy: out[%d] = %g, expected %g\n", i, (double)out[i], (double)(2.0f * x[i] + y[i]));
            return 1;
        }
    }
    int64_t wrong = N - 1;
    ty.shape = &wrong;
    if (saxpy(2.0f, &tx, &ty, &tout) >= 0) {
        printf("FAIL saxpy: a shape mismatch was accepted\n");
        return 1;
    }
    printf("PASS saxpy\n");
    return 0;
}
