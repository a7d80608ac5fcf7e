/* tensor.c - validation of tensor arguments (intent_check_tensor) and of how they
 * share memory (intent_check_aliasing).
 *
 * Generated kernels check every tensor parameter before touching memory, so a
 * refused call writes nothing. Messages spell dtypes the way Intent source does
 * (f32, u8, bf16, bool) because that is what the kernel author wrote. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

/* The descriptor must stay a DLTensor: generated code and Python cast between them. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(IntentDevice) == 8, "IntentDevice must match DLDevice");
_Static_assert(sizeof(IntentDType) == 4, "IntentDType must match DLDataType");
_Static_assert(offsetof(IntentTensor, device) == 8, "IntentTensor must match DLTensor");
_Static_assert(offsetof(IntentTensor, ndim) == 16, "IntentTensor must match DLTensor");
_Static_assert(offsetof(IntentTensor, dtype) == 20, "IntentTensor must match DLTensor");
_Static_assert(offsetof(IntentTensor, shape) == 24, "IntentTensor must match DLTensor");
_Static_assert(offsetof(IntentTensor, strides) == 32, "IntentTensor must match DLTensor");
_Static_assert(offsetof(IntentTensor, byte_offset) == 40, "IntentTensor must match DLTensor");
_Static_assert(sizeof(IntentTensor) == 48, "IntentTensor must match DLTensor");
#endif

/* Writes the Intent spelling of a dtype: i32, u8, f16, bf16, bool; lanes other
 * than 1 (never valid here) are shown as a suffix, e.g. f32x4. */
static void dtype_name(char *buf, size_t cap, unsigned code, unsigned bits, unsigned lanes)
{
    int len;
    switch (code) {
    case INTENT_DTYPE_INT: len = snprintf(buf, cap, "i%u", bits); break;
    case INTENT_DTYPE_UINT: len = snprintf(buf, cap, "u%u", bits); break;
    case INTENT_DTYPE_FLOAT: len = snprintf(buf, cap, "f%u", bits); break;
    case INTENT_DTYPE_BFLOAT: len = snprintf(buf, cap, "bf%u", bits); break;
    case INTENT_DTYPE_BOOL:
        len = bits == 8 ? snprintf(buf, cap, "bool") : snprintf(buf, cap, "bool%u", bits);
        break;
    case INTENT_DTYPE_F8E4M3: len = snprintf(buf, cap, bits == 8 ? "f8e4m3" : "f8e4m3/%u", bits); break;
    case INTENT_DTYPE_F8E5M2: len = snprintf(buf, cap, bits == 8 ? "f8e5m2" : "f8e5m2/%u", bits); break;
    case INTENT_DTYPE_E8M0: len = snprintf(buf, cap, bits == 8 ? "e8m0" : "e8m0/%u", bits); break;
    case INTENT_DTYPE_F6E2M3: len = snprintf(buf, cap, bits == 6 ? "f6e2m3" : "f6e2m3/%u", bits); break;
    case INTENT_DTYPE_F6E3M2: len = snprintf(buf, cap, bits == 6 ? "f6e3m2" : "f6e3m2/%u", bits); break;
    case INTENT_DTYPE_F4E2M1: len = snprintf(buf, cap, bits == 4 ? "f4e2m1" : "f4e2m1/%u", bits); break;
    default: len = snprintf(buf, cap, "<dtype code %u, %u bits>", code, bits); break;
    }
    if (lanes != 1 && len >= 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, "x%u", lanes);
}

/* DLPack's names for device types, so a message says "cuda" rather than "2". */
static const char *device_name(int32_t type)
{
    switch (type) {
    case 1: return "cpu";
    case 2: return "cuda";
    case 3: return "cuda_host";
    case 4: return "opencl";
    case 7: return "vulkan";
    case 8: return "metal";
    case 9: return "vpi";
    case 10: return "rocm";
    case 11: return "rocm_host";
    case 12: return "ext_dev";
    case 13: return "cuda_managed";
    case 14: return "oneapi";
    case 15: return "webgpu";
    case 16: return "hexagon";
    case 17: return "maia";
    default: return "unknown";
    }
}

INTENT_RUNTIME_EXPORT int32_t intent_check_tensor(const IntentTensor *t, const char *kernel, const char *param,
                            int32_t ndim, uint8_t code, uint8_t bits, int32_t writable,
                            void **data, int64_t *shape, int64_t *strides)
{
    if (!kernel)
        kernel = "kernel";
    if (!param)
        param = "?";

    if (!t)
        return intent_error(INTENT_E_NULL, "%s: parameter '%s' is a null tensor descriptor",
                            kernel, param);
    if (t->device.device_type != INTENT_DEVICE_CPU)
        return intent_error(INTENT_E_DEVICE,
                            "%s: parameter '%s' is on device %s:%d (device type %d) but the "
                            "kernel runs on the CPU",
                            kernel, param, device_name(t->device.device_type),
                            (int)t->device.device_id, (int)t->device.device_type);
    if (t->device.device_id != 0) /* docs/abi.md: the device is {1, 0}, the host */
        return intent_error(INTENT_E_DEVICE,
                            "%s: parameter '%s' is on device cpu:%d but the kernel runs on cpu:0",
                            kernel, param, (int)t->device.device_id);
    if (ndim < 0)
        return intent_error(INTENT_E_INTERNAL, "%s: parameter '%s' is declared with %d dimensions",
                            kernel, param, (int)ndim);
    if (t->ndim != ndim)
        return intent_error(INTENT_E_RANK,
                            "%s: parameter '%s' has %d dimension%s but the kernel expects %d",
                            kernel, param, (int)t->ndim, t->ndim == 1 ? "" : "s", (int)ndim);
    if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
        char have[48], want[48];
        dtype_name(have, sizeof have, t->dtype.code, t->dtype.bits, t->dtype.lanes);
        dtype_name(want, sizeof want, code, bits, 1);
        return intent_error(INTENT_E_DTYPE,
                            "%s: parameter '%s' has dtype %s but the kernel expects %s", kernel,
                            param, have, want);
    }
    if (ndim > 0 && !t->shape)
        return intent_error(INTENT_E_NULL, "%s: parameter '%s' has a null shape pointer", kernel,
                            param);

    /* Element count. A zero extent makes the count 0 even when the other extents'
     * product would not fit, so look for one before multiplying. */
    int has_zero = 0;
    for (int32_t i = 0; i < ndim; i++) {
        if (t->shape[i] < 0)
            return intent_error(INTENT_E_SHAPE,
                                "%s: parameter '%s' has a negative extent %lld on axis %d", kernel,
                                param, (long long)t->shape[i], (int)i);
        if (t->shape[i] == 0)
            has_zero = 1;
    }
    int64_t count = has_zero ? 0 : 1;
    for (int32_t i = 0; i < ndim && count; i++) {
        if (__builtin_mul_overflow(count, t->shape[i], &count))
            return intent_error(INTENT_E_SHAPE,
                                "%s: parameter '%s' has more elements than int64 can count",
                                kernel, param);
    }

    if (count > 0 && !t->data)
        return intent_error(INTENT_E_NULL,
                            "%s: parameter '%s' has a null data pointer but %lld element%s",
                            kernel, param, (long long)count, count == 1 ? "" : "s");

    /* Two indices of a written tensor must not share an element, or the result
     * would depend on the order of the writes. Compact strides are never 0 here. */
    if (writable && count > 0 && t->strides) {
        for (int32_t i = 0; i < ndim; i++)
            if (t->strides[i] == 0 && t->shape[i] > 1)
                return intent_error(INTENT_E_STRIDE,
                                    "%s: parameter '%s' is written but has stride 0 on axis %d "
                                    "(extent %lld), so its elements alias each other",
                                    kernel, param, (int)i, (long long)t->shape[i]);
    }

    /* Every element's byte address must be computable in 64 bits: the extents' spans
     * times the strides, times the element size, added to the base, never wrap. A
     * layout that passes is addressed by generated code without overflow. */
    if (count > 0) {
        int64_t low = 0, high = 0; /* element offsets of the lowest and highest element */
        int overflow = 0;
        for (int32_t i = 0; i < ndim && !overflow; i++) {
            int64_t stride = t->strides ? t->strides[i] : 0, reach;
            if (!t->strides || t->shape[i] <= 1)
                continue; /* compact strides: covered by the element count below */
            overflow |= __builtin_mul_overflow(stride, t->shape[i] - 1, &reach);
            if (!overflow)
                overflow |= reach < 0 ? __builtin_add_overflow(low, reach, &low)
                                      : __builtin_add_overflow(high, reach, &high);
        }
        if (!t->strides)
            high = count - 1;
        int64_t unit = bits >= 8 ? bits / 8 : 1, first, last;
        uintptr_t base = (uintptr_t)t->data, start, end;
        if (bits == 4) { /* packed sub-byte elements: element e lives in byte e >> 1 */
            first = low >> 1;
            last = (high >> 1) + 1;
        } else {
            overflow = overflow || __builtin_mul_overflow(low, unit, &first) ||
                       __builtin_mul_overflow(high, unit, &last) ||
                       __builtin_add_overflow(last, unit, &last); /* one past the last byte */
        }
        overflow = overflow || t->byte_offset > (uint64_t)INT64_MAX ||
                   __builtin_add_overflow(base, (uintptr_t)t->byte_offset, &base) ||
                   (first < 0 ? __builtin_sub_overflow(base, (uintptr_t)(-(first + 1)) + 1, &start)
                              : __builtin_add_overflow(base, (uintptr_t)first, &start)) ||
                   __builtin_add_overflow(base, (uintptr_t)last, &end);
        (void)start;
        (void)end;
        if (overflow)
            return intent_error(INTENT_E_SHAPE,
                                "%s: parameter '%s' has extents and strides whose byte offsets do "
                                "not fit in 64 bits",
                                kernel, param);
    }

    /* All checks passed: only now write the outputs. */
    if (data)
        *data = t->data ? (void *)((char *)t->data + t->byte_offset) : NULL;
    if (shape)
        for (int32_t i = 0; i < ndim; i++)
            shape[i] = t->shape[i];
    if (strides) {
        if (t->strides) {
            for (int32_t i = 0; i < ndim; i++)
                strides[i] = t->strides[i];
        } else {
            /* Row-major compact strides. Extents of 0 count as 1 (the tensor is
             * empty, nothing is addressed) and the product saturates, so even a
             * shape like [0, 2^40, 2^40] yields defined values. */
            int64_t step = 1;
            for (int32_t i = ndim - 1; i >= 0; i--) {
                strides[i] = step;
                int64_t extent = t->shape[i] > 1 ? t->shape[i] : 1;
                if (__builtin_mul_overflow(step, extent, &step))
                    step = INT64_MAX;
            }
        }
    }
    return INTENT_OK;
}

/* ---- aliasing --------------------------------------------------------------------- */

/* The bytes [lo, hi) a checked view addresses; lo == hi when it has no element. */
typedef struct ByteRange {
    uintptr_t lo, hi;
} ByteRange;

static int64_t view_count(const IntentArgView *v)
{
    int64_t count = 1;
    for (int32_t i = 0; i < v->ndim; i++)
        count *= v->shape[i]; /* fits: intent_check_tensor counted it */
    return count;
}

static ByteRange view_range(const IntentArgView *v)
{
    ByteRange r = {(uintptr_t)v->data, (uintptr_t)v->data};
    if (view_count(v) == 0)
        return r;
    int64_t low = 0, high = 0;
    for (int32_t i = 0; i < v->ndim; i++) {
        int64_t reach = v->strides[i] * (v->shape[i] - 1); /* fits: intent_check_tensor */
        if (reach < 0)
            low += reach;
        else
            high += reach;
    }
    if (v->bits == 4) { /* element e is a nibble of byte e >> 1 */
        r.lo += (uintptr_t)(low >> 1);
        r.hi += (uintptr_t)(high >> 1) + 1;
    } else {
        int64_t unit = v->bits / 8;
        r.lo += (uintptr_t)(low * unit);
        r.hi += (uintptr_t)(high * unit + unit);
    }
    return r;
}

/* Whether distinct indices of the view always address distinct elements. The axes of
 * extent > 1, by increasing |stride|, must each step past everything the smaller ones
 * reach (a mixed-radix layout). That is sufficient, and necessary for every layout a
 * slice, transpose or reversal of a compact array gives; rarer injective layouts (such
 * as strides {3, 2} with extents {2, 3}) are refused too. On failure *axis is the axis
 * whose stride falls within the span of the smaller ones. */
static int injective(const IntentArgView *v, int32_t *axis, int64_t *span_out)
{
    int32_t order[64];
    int32_t n = 0;
    if (v->ndim > 64)
        return 0;
    for (int32_t i = 0; i < v->ndim; i++) {
        if (v->shape[i] <= 1)
            continue;
        int64_t key = llabs(v->strides[i]);
        int32_t j = n++;
        while (j > 0 && llabs(v->strides[order[j - 1]]) > key) { /* stable: ties keep axis order */
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int64_t span = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = order[k];
        int64_t stride = llabs(v->strides[i]);
        if (stride <= span) {
            *axis = i;
            *span_out = span;
            return 0;
        }
        span += stride * (v->shape[i] - 1);
    }
    return 1;
}

/* Copies the elements of `v` into `dst` (row-major over the axes whose stride is not 0;
 * a zero-stride axis stays one in the copy) and points the view at the copy. */
static void copy_view(IntentArgView *v, unsigned char *dst)
{
    int32_t ndim = v->ndim;
    int64_t strides[64], index[64];
    int64_t step = 1;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        strides[i] = v->strides[i] == 0 || v->shape[i] <= 1 ? 0 : step;
        step *= strides[i] ? v->shape[i] : 1;
        index[i] = 0;
    }
    int64_t unit = v->bits == 4 ? 1 : v->bits / 8;
    if (v->bits == 4)
        memset(dst, 0, (size_t)((step + 1) / 2));
    const unsigned char *src = v->data;
    for (int64_t e = 0; e < step; e++) {
        /* offsets (in elements) of the current index in the source and in the copy */
        int64_t from = 0, to = 0;
        for (int32_t i = 0; i < ndim; i++) {
            from += index[i] * v->strides[i];
            to += index[i] * strides[i];
        }
        if (v->bits == 4) {
            unsigned code = (src[from >> 1] >> ((from & 1) * 4)) & 0xF;
            dst[to >> 1] |= (unsigned char)(code << ((to & 1) * 4));
        } else {
            memcpy(dst + to * unit, src + from * unit, (size_t)unit);
        }
        for (int32_t i = ndim - 1; i >= 0; i--) { /* next index over the copied axes */
            if (strides[i] == 0)
                continue;
            if (++index[i] < v->shape[i])
                break;
            index[i] = 0;
        }
    }
    v->data = dst;
    for (int32_t i = 0; i < ndim; i++)
        v->strides[i] = strides[i];
}

static int64_t copy_bytes(const IntentArgView *v)
{
    int64_t count = 1;
    for (int32_t i = 0; i < v->ndim; i++)
        if (v->strides[i] != 0)
            count *= v->shape[i];
    int64_t bytes = v->bits == 4 ? (count + 1) / 2 : count * (v->bits / 8);
    return (bytes + 63) & ~(int64_t)63; /* each copy starts on a cache line */
}

static int64_t gcd64(int64_t a, int64_t b)
{
    a = llabs(a);
    b = llabs(b);
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Whether two views whose byte ranges overlap still share no element: every element of
 * either starts at its base plus a multiple of g, the gcd of both views' byte strides
 * over their axes of extent > 1, so two elements can share a byte only if their starts
 * differ by r = (base_a - base_b) mod g plus a multiple of g. With r >= the size of b's
 * element and g - r >= the size of a's, none do: interleaved views such as buf[::2] and
 * buf[1::2] are disjoint. (Packed 4-bit views are left to the byte ranges.) */
static int interleaved_disjoint(const IntentArgView *a, const IntentArgView *b)
{
    if (a->bits == 4 || b->bits == 4)
        return 0;
    int64_t size_a = a->bits / 8, size_b = b->bits / 8, g = 0;
    for (int32_t i = 0; i < a->ndim; i++)
        if (a->shape[i] > 1)
            g = gcd64(g, a->strides[i] * size_a);
    for (int32_t i = 0; i < b->ndim; i++)
        if (b->shape[i] > 1)
            g = gcd64(g, b->strides[i] * size_b);
    if (g == 0)
        return 0; /* one element each: their byte ranges decide */
    int64_t r = (int64_t)((uintptr_t)a->data - (uintptr_t)b->data) % g;
    if (r < 0)
        r += g;
    return r >= size_b && g - r >= size_a;
}

INTENT_RUNTIME_EXPORT int32_t intent_check_aliasing(const char *kernel, int32_t count, IntentArgView *views, void **scratch)
{
    if (!kernel)
        kernel = "kernel";
    if (scratch)
        *scratch = NULL;
    ByteRange ranges[count > 0 ? count : 1];
    for (int32_t k = 0; k < count; k++)
        ranges[k] = view_range(&views[k]);

    /* Refusals first, so that a refused call has allocated and written nothing; one pass
     * over the pairs also marks the read-only views that overlap a written one. */
    int copies = 0;
    for (int32_t k = 0; k < count; k++)
        views[k].copy = 0;
    for (int32_t k = 0; k < count; k++) {
        IntentArgView *v = &views[k];
        if (ranges[k].lo == ranges[k].hi)
            continue;
        if (v->written && v->ndim > 1) { /* rank 0 and 1: distinct by the zero-stride check */
            int32_t axis = 0;
            int64_t span = 0;
            if (v->ndim > 64)
                return intent_error(INTENT_E_ALIAS, "%s: parameter '%s' is written and has more than 64 "
                                    "dimensions, too many to prove that its elements do not overlap",
                                    kernel, v->name);
            if (!injective(v, &axis, &span))
                return intent_error(INTENT_E_ALIAS,
                                    "%s: parameter '%s' overlaps itself: it is written but its stride "
                                    "%lld on axis %d (extent %lld) falls within the span %lld of its "
                                    "smaller strides, so two of its indices address one element",
                                    kernel, v->name, (long long)v->strides[axis], (int)axis,
                                    (long long)v->shape[axis], (long long)span);
        }
        for (int32_t j = 0; j < k; j++) {
            IntentArgView *w = &views[j];
            if (!(v->written || w->written) || ranges[j].lo == ranges[j].hi ||
                !(ranges[j].lo < ranges[k].hi && ranges[k].lo < ranges[j].hi) || interleaved_disjoint(v, w))
                continue;
            if (v->written && w->written)
                return intent_error(INTENT_E_ALIAS,
                                    "%s: parameters '%s' and '%s' overlap in memory and both are "
                                    "written, so the result would depend on the order of the writes",
                                    kernel, w->name, v->name);
            (v->written ? w : v)->copy = 1; /* the read-only one of the two */
            copies = 1;
        }
    }
    if (!copies)
        return INTENT_OK;

    /* A read-only tensor that overlaps a written one is read from a copy: every input is
     * read as it was before any output is written. */
    int64_t total = 0;
    for (int32_t k = 0; k < count; k++) {
        if (views[k].copy && (views[k].ndim > 64 || __builtin_add_overflow(total, copy_bytes(&views[k]), &total)))
            return intent_error(INTENT_E_ALLOC, "%s: parameter '%s' overlaps a written tensor and is too large "
                                "to copy", kernel, views[k].name);
    }
    unsigned char *buffer = intent_alloc((size_t)total);
    if (!buffer)
        return intent_error(INTENT_E_ALLOC, "%s: out of memory for copies of inputs that overlap outputs "
                            "(%lld bytes)", kernel, (long long)total);
    unsigned char *next = buffer;
    for (int32_t k = 0; k < count; k++) {
        if (views[k].copy) {
            int64_t bytes = copy_bytes(&views[k]);
            copy_view(&views[k], next);
            next += bytes;
        }
    }
    if (scratch)
        *scratch = buffer;
    return INTENT_OK;
}
