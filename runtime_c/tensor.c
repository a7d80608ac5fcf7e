/* tensor.c - validation of tensor arguments (intent_check_tensor).
 *
 * Generated kernels check every tensor parameter before touching memory, so a
 * refused call writes nothing. Messages spell dtypes the way Intent source does
 * (f32, u8, bf16, bool) because that is what the kernel author wrote. */
#include <stddef.h>
#include <stdio.h>

#include "intent_runtime.h"

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

int32_t intent_check_tensor(const IntentTensor *t, const char *kernel, const char *param,
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
