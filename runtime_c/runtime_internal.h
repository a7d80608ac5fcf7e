/* runtime_internal.h - constants shared between the runtime's own sources;
 * not part of the ABI. */
#ifndef INTENT_RUNTIME_INTERNAL_H
#define INTENT_RUNTIME_INTERNAL_H

#include "intent_runtime.h"

/* Size of each thread's error buffer, terminating NUL included. */
#define INTENT_ERROR_CAPACITY 1024

#endif
