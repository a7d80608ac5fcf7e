/* runtime_internal.h - what the runtime's own sources share; not part of the ABI.
 *
 * Every artifact carries its own copy of the runtime (docs/abi.md, "Many libraries in one
 * program"). The copies agree through one process-wide state (process_state.c): the
 * per-thread error messages and the thread pool live there, whichever copy created them. */
#ifndef INTENT_RUNTIME_INTERNAL_H
#define INTENT_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "intent_runtime.h"

/* Size of each thread's error buffer, terminating NUL included. */
#define INTENT_ERROR_CAPACITY 1024

/* The definition of a public runtime function. Weak: two relocatable objects (or an
 * archive and an object) built by intentc each hold a copy, and the linker keeps one
 * instead of reporting a duplicate; any copy will do, since they share one state. */
#if defined(__GNUC__) || defined(__clang__)
#define INTENT_RUNTIME_EXPORT __attribute__((weak))
#define INTENT_RUNTIME_INTERNAL __attribute__((weak, visibility("hidden")))
#define INTENT_RUNTIME_HIDDEN __attribute__((visibility("hidden")))
#else
#define INTENT_RUNTIME_HIDDEN
#define INTENT_RUNTIME_EXPORT
#define INTENT_RUNTIME_INTERNAL
#endif
/* Functions the runtime's sources share are declared INTENT_RUNTIME_HIDDEN (no library
 * exports them) and defined INTENT_RUNTIME_INTERNAL (also weak, so that two objects that
 * each carry the runtime link together). Only definitions are weak: a weak reference
 * would not pull its member out of an archive. */

/* What the runtime keeps per application thread (one per thread per process). */
typedef struct IntentThreadState {
    int in_task; /* the thread runs a chunk of a parallel_for: a nested one runs inline */
    char message[INTENT_ERROR_CAPACITY];
} IntentThreadState;

typedef struct IntentPool IntentPool; /* thread_pool.c */

/* The state every runtime copy in a process shares. Its layout is fixed for a given
 * INTENT_PROCESS_STATE_LAYOUT; a change of layout must also change that number and the
 * name of the symbol that publishes the state (process_state.c). */
#define INTENT_PROCESS_STATE_LAYOUT 1

typedef struct IntentProcessState {
    uint32_t layout;            /* INTENT_PROCESS_STATE_LAYOUT */
    pthread_key_t thread_key;   /* -> IntentThreadState, freed when its thread exits */
    int32_t cpu_count;          /* CPUs this process may run on */
    int32_t default_threads;    /* INTENT_NUM_THREADS, else cpu_count */
    _Atomic int32_t requested_threads;              /* intent_set_num_threads; 0 = default */
    _Atomic(intent_parallel_backend) backend;       /* intent_set_parallel_backend */
    IntentPool *pool;                               /* the one worker pool of the process */
} IntentProcessState;

/* The process's shared state, created by the first runtime copy that asks for it. */
INTENT_RUNTIME_HIDDEN IntentProcessState *intent_process_state(void);

/* The calling thread's state, created on first use; NULL only when out of memory. */
INTENT_RUNTIME_HIDDEN IntentThreadState *intent_thread_state(void);

/* The calling thread's state if it has one, else NULL (creates nothing). */
INTENT_RUNTIME_HIDDEN IntentThreadState *intent_thread_state_if_any(void);

/* The pool's part of creating the state (thread_pool.c): NULL when out of memory. */
INTENT_RUNTIME_HIDDEN IntentPool *intent_pool_create(void);
INTENT_RUNTIME_HIDDEN void intent_pool_destroy(IntentPool *pool);

#endif
