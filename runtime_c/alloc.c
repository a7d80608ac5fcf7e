/* alloc.c - aligned scratch memory for generated kernels.
 *
 * 64 bytes is a cache line on current x86 and Arm cores and the width of an
 * AVX-512 register, so vector loads from these buffers never split a line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign under -std=c11 */
#endif
#include <stdlib.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

#define INTENT_ALLOC_ALIGN 64

INTENT_RUNTIME_EXPORT void *intent_alloc(size_t bytes)
{
    /* malloc(0) may return NULL, which callers would take for a failure. */
    size_t size = bytes ? bytes : INTENT_ALLOC_ALIGN;
    void *p = NULL;
    if (posix_memalign(&p, INTENT_ALLOC_ALIGN, size) != 0) {
        intent_error(INTENT_E_ALLOC, "out of memory: could not allocate %zu bytes", bytes);
        return NULL;
    }
    return p;
}

INTENT_RUNTIME_EXPORT void intent_free(void *p)
{
    free(p);
}
