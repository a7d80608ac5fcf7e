/* process_state.c - the one state that every runtime copy in a process shares.
 *
 * Each artifact intentc builds (.so, .o, .a) carries the runtime, so a program that links
 * several, or a Python process that loads several, holds several copies. They must agree:
 * intent_last_error() is the calling thread's last error whichever library set it, and
 * there is one thread pool per process. The copies meet at one pointer,
 * `intent_runtime_process_state_v1`, published with ELF's STB_GNU_UNIQUE binding: the
 * dynamic loader binds every reference to it, from every library and the program, to one
 * definition, even for libraries loaded with RTLD_LOCAL (Python's ctypes); in a static
 * link its COMDAT group keeps one definition. The first copy that needs the state
 * allocates it and publishes it with a compare-and-swap; it is never freed.
 *
 * Only data is shared (and libc's `free`, the destructor of per-thread states): no copy
 * calls code of another through the state, so a copy being older or newer does not
 * matter as long as the layout matches (the symbol's name carries the layout). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

#define MAX_THREADS 512 /* thread_pool.c's limit, caller included */

#if defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
/* A pointer-sized, zero-initialised STB_GNU_UNIQUE object in its own COMDAT group. */
__asm__(".pushsection .bss.intent_runtime_process_state_v1,\"awG\",%nobits,"
        "intent_runtime_process_state_v1,comdat\n"
        ".globl intent_runtime_process_state_v1\n"
        ".type intent_runtime_process_state_v1, %gnu_unique_object\n"
        ".size intent_runtime_process_state_v1, 8\n"
        ".balign 8\n"
        "intent_runtime_process_state_v1:\n"
        ".zero 8\n"
        ".popsection\n");
extern _Atomic(IntentProcessState *) intent_runtime_process_state_v1
    __attribute__((visibility("default")));
#define PUBLISHED intent_runtime_process_state_v1
#else
static _Atomic(IntentProcessState *) published_state; /* no ELF: one state per copy */
#define PUBLISHED published_state
#endif

static void read_config(IntentProcessState *s)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef CPU_COUNT
    /* A process confined by taskset or a container's cpuset gets no more
     * threads than the CPUs it may actually use. */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        cpus = CPU_COUNT(&set);
#endif
    if (cpus < 1)
        cpus = 1;
    if (cpus > MAX_THREADS)
        cpus = MAX_THREADS;
    s->cpu_count = (int32_t)cpus;
    s->default_threads = s->cpu_count;

    const char *env = getenv("INTENT_NUM_THREADS");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        long value = strtol(env, &end, 10);
        while (end && (*end == ' ' || *end == '\t' || *end == '\n'))
            end++;
        if (errno == 0 && end && *end == '\0' && value > 0)
            s->default_threads = value > MAX_THREADS ? MAX_THREADS : (int32_t)value;
    }
}

static IntentProcessState *create_state(void)
{
    IntentProcessState *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->layout = INTENT_PROCESS_STATE_LAYOUT;
    if (pthread_key_create(&s->thread_key, free) != 0) {
        free(s);
        return NULL;
    }
    read_config(s);
    s->pool = intent_pool_create(); /* NULL: every parallel_for runs inline */
    return s;
}

static void destroy_state(IntentProcessState *s)
{
    pthread_key_delete(s->thread_key);
    if (s->pool)
        intent_pool_destroy(s->pool);
    free(s);
}

INTENT_RUNTIME_INTERNAL IntentProcessState *intent_process_state(void)
{
    IntentProcessState *s = atomic_load_explicit(&PUBLISHED, memory_order_acquire);
    if (s)
        return s;
    IntentProcessState *mine = create_state();
    if (!mine)
        return NULL;
    IntentProcessState *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(&PUBLISHED, &expected, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    destroy_state(mine); /* another copy (or thread) published first */
    return expected;
}

INTENT_RUNTIME_INTERNAL IntentThreadState *intent_thread_state_if_any(void)
{
    IntentProcessState *s = intent_process_state();
    if (!s || s->layout != INTENT_PROCESS_STATE_LAYOUT)
        return NULL;
    return pthread_getspecific(s->thread_key);
}

INTENT_RUNTIME_INTERNAL IntentThreadState *intent_thread_state(void)
{
    IntentProcessState *s = intent_process_state();
    if (!s || s->layout != INTENT_PROCESS_STATE_LAYOUT)
        return NULL;
    IntentThreadState *t = pthread_getspecific(s->thread_key);
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (t && pthread_setspecific(s->thread_key, t) != 0) {
        free(t);
        t = NULL;
    }
    return t;
}
