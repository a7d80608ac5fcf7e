/* Drives the compiled samples/collatz_steps.intent through its C ABI:
 *     int32_t collatz_steps(const IntentTensor *start, int32_t max_steps, IntentTensor *steps);
 * steps[p] = the number of Collatz steps from start[p] down to 1, capped at max_steps
 * (0 for start values <= 1).  i64 arithmetic wraps around (docs/language.md). */
#include "collatz_steps.h"

#include "driver_common.h"

static int32_t reference(int64_t n, int32_t max_steps)
{
    int32_t count = 0;
    while (count < max_steps) {
        if (n <= 1)
            break;
        n = (n % 2 == 0) ? n / 2 : (int64_t)(3u * (uint64_t)n + 1u); /* wraps */
        count++;
    }
    return count;
}

static void run_case(int64_t n, int32_t max_steps, int64_t s_start, int64_t s_steps)
{
    const int strided = s_start != 1 || s_steps != 1;
    const size_t ilen = (size_t)(n * s_start), olen = (size_t)(n * s_steps);
    int64_t *start = drv_alloc(ilen, sizeof(int64_t));
    int32_t *steps = drv_alloc(olen, sizeof(int32_t)), *want = drv_alloc(olen, sizeof(int32_t));
    for (size_t i = 0; i < ilen; i++) /* mostly small values, some large, some <= 1 */
        start[i] = (i % 11 == 3) ? drv_i64(-5, 1)
                   : (i % 7 == 1) ? drv_i64(1, 1000000000)
                                  : drv_i64(1, 100000);
    if (n > 0)
        start[0] = 27; /* 111 steps */
    if (n > 3) {       /* 3n + 1 wraps around */
        start[1] = INT64_MAX;
        start[2] = ((int64_t)1 << 62) + 1;
        start[3] = 6148914691236517205; /* (2^64 - 1) / 3: 3n + 1 wraps to 0 */
    }
    drv_fill_sentinel_i32(steps, olen);
    drv_fill_sentinel_i32(want, olen);
    for (int64_t i = 0; i < n; i++)
        want[i * s_steps] = reference(start[i * s_start], max_steps);

    DrvTensor dstart, dsteps;
    drv_tensor1(&dstart, start, DRV_I64, n, strided ? &s_start : NULL);
    drv_tensor1(&dsteps, steps, DRV_I32, n, strided ? &s_steps : NULL);
    char label[128];
    snprintf(label, sizeof label, "N=%lld max_steps=%d%s", (long long)n, (int)max_steps,
             strided ? " strided" : "");
    int32_t rc = collatz_steps(&dstart.t, max_steps, &dsteps.t);
    if (rc != 0) {
        drv_fail("%s: returned %d (%s)", label, (int)rc, intent_last_error());
    } else {
        long long bad = drv_diff_i32(steps, want, olen);
        if (bad >= 0)
            drv_fail("%s: steps buffer element %lld is %d, expected %d", label, bad,
                     (int)steps[bad], (int)want[bad]);
        else
            printf("  ok  %s\n", label);
    }
    free(start);
    free(steps);
    free(want);
}

static void bad_calls(void)
{
    enum { N = 9 };
    static int64_t start[N + 1];
    static int32_t start32[N], steps[N + 1], before[N + 1];
    const int64_t zero_stride = 0;
    DrvTensor dstart, dsteps;
    for (int i = 0; i <= N; i++)
        start[i] = 7 + i;

#define RESET()                                                                                    \
    do {                                                                                           \
        drv_tensor1(&dstart, start, DRV_I64, N, NULL);                                             \
        drv_tensor1(&dsteps, steps, DRV_I32, N, NULL);                                             \
        drv_fill_sentinel_i32(steps, N + 1);                                                       \
        memcpy(before, steps, sizeof steps);                                                       \
    } while (0)
#define REFUSED(what, code)                                                                        \
    drv_expect_refused(what, collatz_steps(&dstart.t, 100, &dsteps.t), code, steps, before,        \
                       sizeof steps)

    RESET();
    dstart.shape[0] = N + 1;
    REFUSED("start extent N+1 (S1)", DRV_E_SHAPE);
    RESET();
    drv_tensor1(&dstart, start32, DRV_I32, N, NULL);
    REFUSED("start is i32", DRV_E_DTYPE);
    RESET();
    drv_tensor1(&dsteps, start, DRV_I64, N, NULL);
    REFUSED("steps is i64", DRV_E_DTYPE);
    RESET();
    drv_tensor2(&dstart, start, DRV_I64, 1, N, NULL);
    REFUSED("start has rank 2", DRV_E_RANK);
    RESET();
    dsteps.t.data = NULL;
    REFUSED("steps data is NULL", DRV_E_NULL);
    RESET();
    drv_tensor1(&dsteps, steps, DRV_I32, N, &zero_stride);
    REFUSED("steps has a zero stride", DRV_E_STRIDE);
#undef REFUSED
#undef RESET
}

int main(void)
{
    drv_seed(5);
    static const int64_t sizes[] = {0, 1, 5, 64, 1001, 100003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        run_case(sizes[k], 1000, 1, 1);
    run_case(1001, 0, 1, 1);  /* no step allowed */
    run_case(1001, -3, 1, 1); /* negative cap: no step either */
    run_case(1001, 50, 1, 1); /* the cap bites */
    /* Strided operands (non-NULL strides). */
    run_case(333, 1000, 3, 2);
    run_case(0, 1000, 2, 2);
    bad_calls();
    return drv_finish("collatz_steps");
}
