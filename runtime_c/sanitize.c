/* The order sanitizer (intentc build --sanitize=order).
 *
 * A sanitized kernel runs its body twice, once with the points of every I.parallel loop in
 * increasing order and once in decreasing order, from the same inputs. P1 says no order of
 * points is observable, so the written tensors must come out identical, bit for bit; a
 * difference is reported with the parameter, the element's coordinates and both values.
 * These helpers snapshot, restore and compare the written tensors between the two runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

struct IntentSnapshot {
    int32_t count;
    unsigned char **packed; /* one contiguous copy per tensor (NULL when the tensor was unusable) */
    int64_t *elements;
};

/* Element count of a descriptor that is safe to walk, or -1. */
static int64_t walkable(const IntentTensor *t)
{
    if (t == NULL || t->data == NULL || t->ndim < 0 || (t->ndim > 0 && t->shape == NULL))
        return -1;
    int64_t n = 1;
    for (int32_t k = 0; k < t->ndim; k++) {
        if (t->shape[k] < 0)
            return -1;
        n *= t->shape[k];
    }
    return n;
}

static size_t item_bytes(const IntentTensor *t)
{
    size_t bytes = (size_t)(t->dtype.bits / 8) * (t->dtype.lanes ? t->dtype.lanes : 1);
    return bytes ? bytes : 1;
}

/* Byte offset of the element with row-major ordinal `ordinal`. */
static int64_t element_offset(const IntentTensor *t, int64_t ordinal)
{
    int64_t offset = 0, stride = 1;
    for (int32_t k = t->ndim - 1; k >= 0; k--) {
        int64_t index = ordinal % t->shape[k];
        ordinal /= t->shape[k];
        int64_t s = t->strides ? t->strides[k] : stride;
        offset += index * s;
        stride *= t->shape[k];
    }
    return offset * (int64_t)item_bytes(t) + (int64_t)t->byte_offset;
}

static void copy_elements(const IntentTensor *t, unsigned char *packed, int64_t n, int to_packed)
{
    size_t bytes = item_bytes(t);
    for (int64_t e = 0; e < n; e++) {
        unsigned char *element = (unsigned char *)t->data + element_offset(t, e);
        if (to_packed)
            memcpy(packed + (size_t)e * bytes, element, bytes);
        else
            memcpy(element, packed + (size_t)e * bytes, bytes);
    }
}

INTENT_RUNTIME_EXPORT IntentSnapshot *intent_snapshot(int32_t count, IntentTensor *const *tensors)
{
    IntentSnapshot *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->count = count;
    s->packed = calloc((size_t)(count > 0 ? count : 1), sizeof *s->packed);
    s->elements = calloc((size_t)(count > 0 ? count : 1), sizeof *s->elements);
    if (s->packed == NULL || s->elements == NULL) {
        intent_snapshot_free(s);
        return NULL;
    }
    for (int32_t k = 0; k < count; k++) {
        int64_t n = walkable(tensors[k]);
        s->elements[k] = n;
        if (n < 0)
            continue; /* the kernel's own argument checks will refuse this call */
        s->packed[k] = malloc((size_t)n * item_bytes(tensors[k]) + 1);
        if (s->packed[k] == NULL) {
            intent_snapshot_free(s);
            return NULL;
        }
        copy_elements(tensors[k], s->packed[k], n, 1);
    }
    return s;
}

INTENT_RUNTIME_EXPORT void intent_snapshot_restore(const IntentSnapshot *s, int32_t count, IntentTensor *const *tensors)
{
    for (int32_t k = 0; k < count && k < s->count; k++)
        if (s->packed[k] != NULL && walkable(tensors[k]) == s->elements[k])
            copy_elements(tensors[k], s->packed[k], s->elements[k], 0);
}

static void coordinates(const IntentTensor *t, int64_t ordinal, char *buf, size_t cap)
{
    int64_t index[64];
    int32_t ndim = t->ndim < 64 ? t->ndim : 64;
    for (int32_t k = ndim - 1; k >= 0; k--) {
        index[k] = ordinal % t->shape[k];
        ordinal /= t->shape[k];
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t k = 0; k < ndim && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, k ? ", %lld" : "%lld", (long long)index[k]);
}

static void show_bytes(const unsigned char *bytes, size_t n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = n; i > 0 && used + 3 < cap; i--) /* little-endian: print most significant first */
        used += (size_t)snprintf(buf + used, cap - used, "%02x", bytes[i - 1]);
}

INTENT_RUNTIME_EXPORT int32_t intent_snapshot_compare(const IntentSnapshot *s, int32_t count, IntentTensor *const *tensors,
                                const char *kernel, const char *const *names)
{
    for (int32_t k = 0; k < count && k < s->count; k++) {
        if (s->packed[k] == NULL || walkable(tensors[k]) != s->elements[k])
            continue;
        size_t bytes = item_bytes(tensors[k]);
        for (int64_t e = 0; e < s->elements[k]; e++) {
            const unsigned char *now = (const unsigned char *)tensors[k]->data + element_offset(tensors[k], e);
            const unsigned char *before = s->packed[k] + (size_t)e * bytes;
            if (memcmp(now, before, bytes) == 0)
                continue;
            char where[256], first[40], second[40];
            coordinates(tensors[k], e, where, sizeof where);
            show_bytes(before, bytes, first, sizeof first);
            show_bytes(now, bytes, second, sizeof second);
            return intent_error(INTENT_E_SANITIZER,
                                "%s: order sanitizer: '%s'[%s] is 0x%s when the points of I.parallel run in "
                                "increasing order but 0x%s in decreasing order; the result depends on the order "
                                "of points, which P1 forbids (a race, P3, or an order-dependent update)",
                                kernel, names[k], where, first, second);
        }
    }
    return 0;
}

INTENT_RUNTIME_EXPORT void intent_snapshot_free(IntentSnapshot *s)
{
    if (s == NULL)
        return;
    for (int32_t k = 0; s->packed != NULL && k < s->count; k++)
        free(s->packed[k]);
    free(s->packed);
    free(s->elements);
    free(s);
}
