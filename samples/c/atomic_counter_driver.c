/* Drives the compiled samples/atomic_counter.intent through its C ABI:
 *     int32_t claim_slots(const IntentTensor *flags, IntentTensor *taken, IntentTensor *count);
 *     int32_t bucket_stats(keys, weights, counts, totals, first);
 * Every flagged point claims a distinct slot with an atomic add, so the first k slots are
 * taken (k = number of flags) and no other; bucket counts and totals are atomic sums and
 * first[b] the smallest point with key b (an atomic min): all independent of the schedule. */
#include "atomic_counter.h"

#include "driver_common.h"

static const IntentDType DRV_BOOL = {6, 8, 1};

static void run_case(int64_t n)
{
    char label[64];
    snprintf(label, sizeof label, "N=%lld", (long long)n);
    uint8_t *flags = drv_alloc((size_t)n, 1), *taken = drv_alloc((size_t)n, 1);
    int64_t *keys = drv_alloc((size_t)n, sizeof(int64_t)), *weights = drv_alloc((size_t)n, sizeof(int64_t));
    int64_t k = 0, count = -1;
    for (int64_t i = 0; i < n; i++) {
        flags[i] = (drv_next() % 3) == 0;
        k += flags[i];
        keys[i] = drv_i64(-4, 20);
        weights[i] = drv_i64(-1000, 1000);
    }
    DrvTensor df, dt, dc, dk, dw, dcounts, dtotals, dfirst;
    drv_tensor1(&df, flags, DRV_BOOL, n, NULL);
    drv_tensor1(&dt, taken, DRV_BOOL, n, NULL);
    drv_tensor1(&dc, &count, DRV_I64, 1, NULL);
    int32_t rc = claim_slots(&df.t, &dt.t, &dc.t);
    if (rc != 0) {
        drv_fail("%s: claim_slots returned %d (%s)", label, (int)rc, intent_last_error());
    } else {
        int ok = count == k;
        for (int64_t i = 0; i < n; i++)
            ok &= taken[i] == (i < k);
        if (!ok)
            drv_fail("%s: claim_slots: count %lld (expected %lld) or the taken slots are wrong", label,
                     (long long)count, (long long)k);
    }
    int64_t counts[16], totals[16], first[16], want_counts[16] = {0}, want_totals[16] = {0}, want_first[16];
    for (int b = 0; b < 16; b++) {
        counts[b] = totals[b] = 0;
        first[b] = want_first[b] = INT64_MAX;
    }
    for (int64_t i = 0; i < n; i++)
        if (keys[i] >= 0 && keys[i] < 16) {
            want_counts[keys[i]]++;
            want_totals[keys[i]] += weights[i];
            if (i < want_first[keys[i]])
                want_first[keys[i]] = i;
        }
    drv_tensor1(&dk, keys, DRV_I64, n, NULL);
    drv_tensor1(&dw, weights, DRV_I64, n, NULL);
    drv_tensor1(&dcounts, counts, DRV_I64, 16, NULL);
    drv_tensor1(&dtotals, totals, DRV_I64, 16, NULL);
    drv_tensor1(&dfirst, first, DRV_I64, 16, NULL);
    rc = bucket_stats(&dk.t, &dw.t, &dcounts.t, &dtotals.t, &dfirst.t);
    if (rc != 0) {
        drv_fail("%s: bucket_stats returned %d (%s)", label, (int)rc, intent_last_error());
    } else if (memcmp(counts, want_counts, sizeof counts) || memcmp(totals, want_totals, sizeof totals) ||
               memcmp(first, want_first, sizeof first)) {
        drv_fail("%s: bucket_stats differs from the serial reference", label);
    } else {
        printf("  ok  %s (%lld claims)\n", label, (long long)k);
    }
    free(flags);
    free(taken);
    free(keys);
    free(weights);
}

int main(void)
{
    drv_seed(31);
    static const int64_t sizes[] = {0, 1, 17, 1000, 300001};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        run_case(sizes[k]);
    static uint8_t flags[5], taken[6], before[6];
    int64_t count = 0;
    DrvTensor df, dt, dc;
    drv_tensor1(&df, flags, DRV_BOOL, 5, NULL);
    drv_tensor1(&dt, taken, DRV_BOOL, 6, NULL);
    drv_tensor1(&dc, &count, DRV_I64, 1, NULL);
    memcpy(before, taken, sizeof taken);
    drv_expect_refused("taken extent N+1 (S1)", claim_slots(&df.t, &dt.t, &dc.t), DRV_E_SHAPE, taken, before,
                       sizeof taken);
    return drv_finish("atomic_counter");
}
