/* runtime_internal.h - declarations shared between the runtime's own sources.
 * Nothing here is part of the ABI: every symbol is hidden so that several
 * libraries carrying the runtime can be loaded into one process. */
#ifndef INTENT_RUNTIME_INTERNAL_H
#define INTENT_RUNTIME_INTERNAL_H

#include <stdint.h>

#include "intent_runtime.h"

#if defined(__GNUC__) || defined(__clang__)
#define INTENT_HIDDEN __attribute__((visibility("hidden")))
#else
#define INTENT_HIDDEN
#endif

/* Size of each thread's error buffer, terminating NUL included. */
#define INTENT_ERROR_CAPACITY 1024

/* Counts the messages set on the calling thread so far; a task runner compares
 * it before and after a task to tell whether the task left a message. */
INTENT_HIDDEN uint64_t intent__error_serial(void);

#endif
