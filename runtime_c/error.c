/* error.c - the per-thread error message behind intent_last_error().
 *
 * Kernels report a failure by returning a status and leaving a message; the
 * buffer is thread-local so concurrent calls from several application threads
 * never see each other's messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

static _Thread_local char tls_message[INTENT_ERROR_CAPACITY];

const char *intent_last_error(void)
{
    return tls_message;
}

int32_t intent_error(int32_t code, const char *fmt, ...)
{
    /* Format into a scratch buffer first: callers may pass intent_last_error()
     * itself as an argument (to add context to a message), and vsnprintf must
     * not read the buffer it is writing. */
    char scratch[INTENT_ERROR_CAPACITY];
    scratch[0] = '\0';
    if (fmt) {
        va_list args;
        va_start(args, fmt);
        int len = vsnprintf(scratch, sizeof scratch, fmt, args);
        va_end(args);
        if (len < 0) /* an encoding error: keep whatever was produced */
            scratch[sizeof scratch - 1] = '\0';
    }
    memcpy(tls_message, scratch, strlen(scratch) + 1);
    return code;
}

void intent_clear_error(void)
{
    tls_message[0] = '\0';
}

/* Identifies the runtime in diagnostics; here because this file is in every build. */
const char *intent_runtime_version(void)
{
    return "intent-runtime 1";
}
