/* runtime_harness.c - C helpers that test_runtime.py links with the runtime and
 * drives through ctypes: task functions for intent_parallel_for, a custom
 * backend, and wrappers for the variadic intent_error. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "intent_runtime.h"

#define H_API INTENT_API

static void sleep_ms(int32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the set of threads that ran a job ------------------------------------------- */

#define MAX_SEEN 64

typedef struct {
    pthread_mutex_t lock;
    pthread_t ids[MAX_SEEN];
    int32_t count;
} ThreadSet;

static void thread_set_init(ThreadSet *set)
{
    pthread_mutex_init(&set->lock, NULL);
    set->count = 0;
}

static void thread_set_add(ThreadSet *set)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&set->lock);
    int32_t i = 0;
    while (i < set->count && !pthread_equal(set->ids[i], self))
        i++;
    if (i == set->count && set->count < MAX_SEEN)
        set->ids[set->count++] = self;
    pthread_mutex_unlock(&set->lock);
}

/* ---- errors -------------------------------------------------------------------- */

H_API int32_t h_error_str(int32_t code, const char *text)
{
    return intent_error(code, "%s", text);
}

H_API int32_t h_error_fmt(int32_t code, long long value, const char *text)
{
    return intent_error(code, "value=%lld text=%s", value, text);
}

/* Adds context to the current message, reading the buffer it writes. */
H_API int32_t h_error_wrap(int32_t code)
{
    return intent_error(code, "outer: %s", intent_last_error());
}

H_API int32_t h_error_null_format(int32_t code)
{
    return intent_error(code, NULL);
}

typedef struct {
    char seen_at_start[64];
    char seen_after_set[64];
} ThreadErrors;

static void *error_thread(void *arg)
{
    ThreadErrors *out = arg;
    strncpy(out->seen_at_start, intent_last_error(), sizeof out->seen_at_start - 1);
    intent_error(INTENT_E_BOUNDS, "set on the other thread");
    strncpy(out->seen_after_set, intent_last_error(), sizeof out->seen_after_set - 1);
    return NULL;
}

/* Sets a message on this thread, sets another on a new thread, and reports what
 * each saw: 0 when the messages stayed apart. */
H_API int32_t h_errors_are_thread_local(void)
{
    ThreadErrors seen;
    memset(&seen, 0, sizeof seen);
    intent_error(INTENT_E_SHAPE, "set on the first thread");
    pthread_t thread;
    if (pthread_create(&thread, NULL, error_thread, &seen) != 0)
        return 1;
    pthread_join(thread, NULL);
    if (strcmp(seen.seen_at_start, "") != 0)
        return 2;
    if (strcmp(seen.seen_after_set, "set on the other thread") != 0)
        return 3;
    if (strcmp(intent_last_error(), "set on the first thread") != 0)
        return 4;
    return 0;
}

/* ---- coverage ---------------------------------------------------------------------- */

typedef struct {
    int64_t n;
    _Atomic int32_t *counts;
    _Atomic int64_t bad_ranges;
    _Atomic int64_t calls;
    ThreadSet threads;
} Cover;

static int32_t cover_task(void *closure, int64_t begin, int64_t end)
{
    Cover *c = closure;
    atomic_fetch_add(&c->calls, 1);
    if (begin < 0 || end > c->n || begin >= end) {
        atomic_fetch_add(&c->bad_ranges, 1);
        return 0;
    }
    thread_set_add(&c->threads);
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add_explicit(&c->counts[i], 1, memory_order_relaxed);
    return 0;
}

/* Runs parallel_for(n) and returns how many indices were not run exactly once,
 * plus the number of empty or out-of-range sub-ranges; -1 when the call failed.
 * `threads` receives the number of distinct threads that ran tasks, `calls`
 * the number of task calls. */
H_API int64_t h_cover(int64_t n, int32_t *threads, int64_t *calls)
{
    Cover c;
    c.n = n;
    c.counts = calloc((size_t)(n > 0 ? n : 1), sizeof *c.counts);
    atomic_init(&c.bad_ranges, 0);
    atomic_init(&c.calls, 0);
    thread_set_init(&c.threads);
    int32_t status = intent_parallel_for(n, cover_task, &c);
    int64_t wrong = atomic_load(&c.bad_ranges);
    for (int64_t i = 0; i < n; i++)
        wrong += atomic_load(&c.counts[i]) != 1;
    free(c.counts);
    if (threads)
        *threads = c.threads.count;
    if (calls)
        *calls = atomic_load(&c.calls);
    return status != 0 ? -1 : wrong;
}

typedef struct {
    int32_t ms;
    ThreadSet threads;
} Sleepy;

static int32_t sleepy_task(void *closure, int64_t begin, int64_t end)
{
    Sleepy *s = closure;
    thread_set_add(&s->threads);
    for (int64_t i = begin; i < end; i++)
        sleep_ms(s->ms);
    return 0;
}

/* Each index sleeps `ms`; returns the number of distinct threads that ran tasks. */
H_API int32_t h_threads_used(int64_t n, int32_t ms)
{
    Sleepy s;
    s.ms = ms;
    thread_set_init(&s.threads);
    if (intent_parallel_for(n, sleepy_task, &s) != 0)
        return -1;
    return s.threads.count;
}

/* ---- failures ------------------------------------------------------------------------ */

typedef struct {
    const int64_t *bad;      /* sorted */
    const int32_t *delay_ms; /* per bad index: how long it waits before failing, or NULL */
    int32_t nbad;
    int32_t set_message;
} Failing;

/* Position of i in f->bad, or -1. */
static int32_t bad_position(const Failing *f, int64_t i)
{
    int32_t lo = 0, hi = f->nbad;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (f->bad[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->nbad && f->bad[lo] == i ? lo : -1;
}

static int32_t failing_task(void *closure, int64_t begin, int64_t end)
{
    const Failing *f = closure;
    for (int64_t i = begin; i < end; i++) {
        int32_t at = bad_position(f, i);
        if (at < 0)
            continue;
        if (f->delay_ms && f->delay_ms[at] > 0)
            sleep_ms(f->delay_ms[at]);
        int32_t status = (int32_t)(-100 - i);
        if (f->set_message)
            return intent_error(status, "bad index %lld", (long long)i);
        return status;
    }
    return 0;
}

/* Fails at the indices in `bad` (sorted), after waiting delay_ms[j] for bad[j],
 * with status -100-i and message "bad index i" (or no message); returns
 * parallel_for's status. */
H_API int32_t h_fail(int64_t n, const int64_t *bad, const int32_t *delay_ms, int32_t nbad,
                     int32_t set_message)
{
    Failing f = {bad, delay_ms, nbad, set_message};
    return intent_parallel_for(n, failing_task, &f);
}

/* ---- nesting -------------------------------------------------------------------------- */

typedef struct {
    int64_t m;
    int64_t fail_at; /* outer index whose inner loop fails, or -1 */
    _Atomic int64_t violations;
    _Atomic int64_t inner_calls;
} Nested;

typedef struct {
    Nested *outer;
    int64_t i;
    pthread_t thread;
    int64_t calls;
} Inner;

static int32_t inner_task(void *closure, int64_t begin, int64_t end)
{
    Inner *in = closure;
    in->calls++;
    atomic_fetch_add(&in->outer->inner_calls, 1);
    /* An inline run: the whole range in one call, on the outer task's thread. */
    if (begin != 0 || end != in->outer->m || !pthread_equal(in->thread, pthread_self()))
        atomic_fetch_add(&in->outer->violations, 1);
    if (in->i == in->outer->fail_at)
        return intent_error(INTENT_E_DOMAIN, "inner failure at outer index %lld",
                            (long long)in->i);
    return 0;
}

static int32_t outer_task(void *closure, int64_t begin, int64_t end)
{
    Nested *nest = closure;
    for (int64_t i = begin; i < end; i++) {
        Inner in = {nest, i, pthread_self(), 0};
        int32_t status = intent_parallel_for(nest->m, inner_task, &in);
        if (in.calls != 1)
            atomic_fetch_add(&nest->violations, 1);
        if (status != 0)
            return status;
    }
    return 0;
}

/* Runs parallel_for(n) whose tasks each run parallel_for(m); returns the status,
 * and in *violations the inner calls that did not run inline. */
H_API int32_t h_nested(int64_t n, int64_t m, int64_t fail_at, int64_t *violations,
                       int64_t *inner_calls)
{
    Nested nest;
    nest.m = m;
    nest.fail_at = fail_at;
    atomic_init(&nest.violations, 0);
    atomic_init(&nest.inner_calls, 0);
    int32_t status = intent_parallel_for(n, outer_task, &nest);
    *violations = atomic_load(&nest.violations);
    *inner_calls = atomic_load(&nest.inner_calls);
    return status;
}

/* ---- a custom backend ------------------------------------------------------------------ */

static _Atomic int64_t backend_calls;
static _Atomic int64_t backend_last_n;

static int32_t serial_backend(int64_t n, intent_task_fn fn, void *closure)
{
    atomic_fetch_add(&backend_calls, 1);
    atomic_store(&backend_last_n, n);
    /* Two halves, to show that the backend decides the split. */
    int64_t half = n / 2;
    int32_t status = half > 0 ? fn(closure, 0, half) : 0;
    return status != 0 ? status : fn(closure, half, n);
}

H_API void h_use_serial_backend(int32_t on)
{
    intent_set_parallel_backend(on ? serial_backend : NULL);
}

H_API int64_t h_backend_calls(void)
{
    return atomic_load(&backend_calls);
}

H_API int64_t h_backend_last_n(void)
{
    return atomic_load(&backend_last_n);
}

/* ---- overhead -------------------------------------------------------------------------- */

static int32_t empty_task(void *closure, int64_t begin, int64_t end)
{
    (void)closure;
    (void)begin;
    (void)end;
    return 0;
}

/* Mean nanoseconds per parallel_for(n) of an empty task over `iters` calls. */
H_API double h_overhead_ns(int32_t iters, int64_t n)
{
    intent_parallel_for(n, empty_task, NULL); /* creates the pool */
    int64_t start = now_ns();
    for (int32_t i = 0; i < iters; i++)
        intent_parallel_for(n, empty_task, NULL);
    return (double)(now_ns() - start) / iters;
}
