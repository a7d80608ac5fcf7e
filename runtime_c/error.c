/* error.c - the per-thread error message behind intent_last_error().
 *
 * Kernels report a failure by returning a status and leaving a message. The message
 * is per thread, so concurrent calls from several application threads never see each
 * other's messages, and per process (process_state.c), so a program or a Python
 * process that holds several intentc libraries reads, through any library's
 * intent_last_error(), the message whichever library left. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

/* Where messages go on a thread whose shared state could not be allocated. */
static _Thread_local char fallback_message[INTENT_ERROR_CAPACITY];

static char *message_buffer(void)
{
    IntentThreadState *t = intent_thread_state();
    return t ? t->message : fallback_message;
}

INTENT_RUNTIME_EXPORT const char *intent_last_error(void)
{
    IntentThreadState *t = intent_thread_state_if_any();
    if (t)
        return t->message;
    return fallback_message; /* "" unless the state could not be allocated */
}

INTENT_RUNTIME_EXPORT int32_t intent_error(int32_t code, const char *fmt, ...)
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
    memcpy(message_buffer(), scratch, strlen(scratch) + 1);
    return code;
}

INTENT_RUNTIME_EXPORT void intent_clear_error(void)
{
    IntentThreadState *t = intent_thread_state_if_any();
    if (t)
        t->message[0] = '\0';
    fallback_message[0] = '\0';
}

/* Identifies the runtime in diagnostics; here because this file is in every build. */
INTENT_RUNTIME_EXPORT const char *intent_runtime_version(void)
{
    return "intent-runtime 1";
}
