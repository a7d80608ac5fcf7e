/* thread_pool.c - intent_parallel_for and the persistent worker pool behind it.
 *
 * Design, and why:
 * - Workers are created on first use and kept: creating threads per call would
 *   cost tens of microseconds, far more than a small parallel loop.
 * - One job runs at a time (job_lock). A second application thread that finds
 *   the pool busy runs its loop inline instead of waiting: its CPU would
 *   otherwise sit idle, and the cores are busy with the other job anyway.
 * - The range [0, n) is cut into contiguous chunks, a few per participant. Each
 *   participant owns a block of consecutive chunks and takes them in order, so
 *   with even work every thread streams through one contiguous block (as an
 *   OpenMP static schedule would, and with the same cache affinity from call to
 *   call). A participant that runs out of chunks takes the remaining ones of the
 *   other blocks, so a late-waking or slower thread does not hold back the call.
 * - Idle workers poll for a new job for up to a millisecond, then sleep on a
 *   condition variable: calls that follow each other closely cost well under a
 *   microsecond of overhead, and an idle process burns no CPU. The polling time
 *   adapts: after a sleep longer than that (jobs are rare) a worker sleeps at
 *   once, since polling then only wastes a CPU and, on virtual CPUs, delays the
 *   wake-up of the thread that has work. A caller that had to wake sleeping
 *   workers blocks rather than polls while it waits for them, for the same
 *   reason. When the pool has more threads than CPUs nobody polls.
 * - A failing chunk records its status and message in the job; the failure with
 *   the smallest begin wins and is copied to the calling thread, since messages
 *   are thread-local. Chunks that start after a known failure are skipped: they
 *   cannot change the outcome.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, pthread_setname_np */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "intent_runtime.h"
#include "runtime_internal.h"

#define MAX_THREADS 512       /* caller included */
#define CHUNKS_PER_THREAD 4   /* enough to rebalance, few enough to keep blocks long */
#ifndef INTENT_POOL_SPIN_NS
#define INTENT_POOL_SPIN_NS 1000000 /* longest an idle thread polls before sleeping */
#endif
#define CACHE_LINE 64

/* ---- thread count ------------------------------------------------------------- */

/* The process's shared state (process_state.c), or NULL when it could not be allocated. */
static IntentProcessState *state(void)
{
    return intent_process_state();
}

INTENT_RUNTIME_EXPORT int32_t intent_get_num_threads(void)
{
    IntentProcessState *s = state();
    if (!s)
        return 1;
    int32_t requested = atomic_load_explicit(&s->requested_threads, memory_order_relaxed);
    return requested > 0 ? requested : s->default_threads;
}

INTENT_RUNTIME_EXPORT void intent_set_num_threads(int32_t n)
{
    if (n < 0)
        n = 0;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    IntentProcessState *s = state();
    if (s)
        atomic_store_explicit(&s->requested_threads, n, memory_order_relaxed);
}

/* ---- replaceable backend -------------------------------------------------------- */

INTENT_RUNTIME_EXPORT void intent_set_parallel_backend(intent_parallel_backend backend)
{
    IntentProcessState *s = state();
    if (s)
        atomic_store_explicit(&s->backend, backend, memory_order_release);
}

/* ---- the pool ---------------------------------------------------------------------- */

/* A participant's block of chunks: [next, end). */
typedef struct {
    _Alignas(CACHE_LINE) _Atomic int64_t next;
    int64_t end;
} Slot;

typedef struct {
    /* Read-only while the job runs. Chunk k covers [k*q + min(k, r), ...) with
     * q + 1 indices when k < r and q otherwise. */
    intent_task_fn fn;
    void *closure;
    int64_t q, r;
    int32_t nslots;

    _Alignas(CACHE_LINE) _Atomic int32_t pending;  /* workers still working on it */
    _Alignas(CACHE_LINE) _Atomic int64_t failed;   /* smallest failing chunk, or INT64_MAX */
    pthread_mutex_t failure_lock;                  /* guards the two fields below */
    int32_t failure_status;
    char failure_message[INTENT_ERROR_CAPACITY];

    Slot slots[MAX_THREADS];
} Job;

struct IntentPool {
    pthread_mutex_t job_lock;    /* held by the thread whose job the pool runs */
    pthread_mutex_t sleep_lock;  /* with `wake` and `done`, for sleeping threads */
    pthread_cond_t wake;         /* a new job was published (or shutdown) */
    pthread_cond_t done;         /* the last worker finished the job */
    _Atomic uint64_t word;       /* (generation << 32) | participants of the current job */
    _Atomic int32_t sleepers;    /* workers blocked on `wake` */
    _Atomic int32_t caller_sleeping;
    _Atomic int32_t shutdown;
    _Atomic int64_t spin_ns;
    int32_t nworkers;            /* workers 1..nworkers exist; the caller is participant 0 */
    const void *owner;           /* the runtime copy whose code the workers run */
    int atfork_registered;
    pthread_t threads[MAX_THREADS];
    uint64_t start_word[MAX_THREADS];
    Job job;
};

/* Identifies this runtime copy as the one whose code the workers run. */
static const char this_copy = 0;

INTENT_RUNTIME_INTERNAL IntentPool *intent_pool_create(void)
{
    void *memory = NULL;
    if (posix_memalign(&memory, CACHE_LINE, sizeof(IntentPool)) != 0)
        return NULL;
    IntentPool *pool = memset(memory, 0, sizeof(IntentPool));
    pthread_mutex_init(&pool->job_lock, NULL);
    pthread_mutex_init(&pool->sleep_lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    pthread_mutex_init(&pool->job.failure_lock, NULL);
    return pool;
}

INTENT_RUNTIME_INTERNAL void intent_pool_destroy(IntentPool *pool)
{
    /* Only a pool that never ran (the loser of the race to publish the state). */
    pthread_mutex_destroy(&pool->job_lock);
    pthread_mutex_destroy(&pool->sleep_lock);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->job.failure_lock);
    free(pool);
}

static IntentPool *the_pool(void)
{
    IntentProcessState *s = state();
    return s ? s->pool : NULL;
}

/* Set on pool threads and on a caller while it runs chunks: a parallel_for made
 * from inside a task then runs inline instead of waiting on the pool it is in. The
 * flag is per thread in the process state, so a task of one library that calls a
 * kernel of another sees it too; this copy's own flag serves a thread without one. */
static _Thread_local int fallback_in_task;

static int *in_task_flag(void)
{
    IntentThreadState *t = intent_thread_state();
    return t ? &t->in_task : &fallback_in_task;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Called on the thread whose task failed: its message is thread-local. */
static void record_failure(Job *job, int64_t chunk, int32_t status, int64_t begin, int64_t end)
{
    pthread_mutex_lock(&job->failure_lock);
    if (chunk < atomic_load_explicit(&job->failed, memory_order_relaxed)) {
        job->failure_status = status;
        const char *msg = intent_last_error();
        if (msg[0]) {
            size_t len = strnlen(msg, sizeof job->failure_message - 1);
            memcpy(job->failure_message, msg, len);
            job->failure_message[len] = '\0';
        } else {
            snprintf(job->failure_message, sizeof job->failure_message,
                     "parallel task over [%lld, %lld) failed with status %d", (long long)begin,
                     (long long)end, (int)status);
        }
        atomic_store_explicit(&job->failed, chunk, memory_order_relaxed);
    }
    pthread_mutex_unlock(&job->failure_lock);
}

/* Runs chunks, first from participant `self`'s own block, then from the others'. */
static void run_chunks(Job *job, int32_t self)
{
    const int32_t nslots = job->nslots;
    for (int32_t i = 0; i < nslots; i++) {
        int32_t s = self + i < nslots ? self + i : self + i - nslots;
        Slot *slot = &job->slots[s];
        for (;;) {
            int64_t k = atomic_fetch_add_explicit(&slot->next, 1, memory_order_relaxed);
            if (k >= slot->end)
                break;
            /* Later chunks of this block cannot beat a failure that comes before. */
            if (k > atomic_load_explicit(&job->failed, memory_order_relaxed))
                break;
            int64_t begin = k * job->q + (k < job->r ? k : job->r);
            int64_t end = begin + job->q + (k < job->r);
            /* Start from an empty message, so that a task failing without one is
             * not blamed with an older message. */
            intent_clear_error();
            int32_t status = job->fn(job->closure, begin, end);
            if (status != 0)
                record_failure(job, k, status, begin, end);
        }
    }
}

/* Polls `done(arg)` for up to `budget` ns; returns whether it became true. */
static int spin_until(int (*done)(const void *), const void *arg, int64_t budget)
{
    if (budget <= 0)
        return 0;
    int64_t deadline = now_ns() + budget;
    for (uint32_t i = 1;; i++) {
        if (done(arg))
            return 1;
        if ((i & 63) == 0 && now_ns() >= deadline)
            return 0;
        cpu_relax();
    }
}

typedef struct {
    IntentPool *pool;
    uint64_t seen;
} Watch;

static int job_published(const void *arg)
{
    const Watch *w = arg;
    return atomic_load_explicit(&w->pool->word, memory_order_acquire) != w->seen ||
           atomic_load_explicit(&w->pool->shutdown, memory_order_relaxed);
}

/* Waits for a job word different from `seen` (or for shutdown) and returns it.
 *
 * *budget is how long to poll first. It adapts to the rate of jobs: polling
 * only pays when the next job comes soon, and a polling thread can delay the
 * wake-up of others (notably on virtual CPUs), so after a long idle period the
 * worker sleeps at once; a short sleep shows jobs are frequent again. */
static uint64_t wait_for_job(IntentPool *pool, uint64_t seen, int64_t *budget)
{
    const int64_t cap = atomic_load_explicit(&pool->spin_ns, memory_order_relaxed);
    int64_t start = now_ns();
    Watch watch = {pool, seen};
    if (spin_until(job_published, &watch, *budget < cap ? *budget : cap)) {
        *budget = cap;
        return atomic_load_explicit(&pool->word, memory_order_acquire);
    }
    /* Announce the sleep before the last look at `word`; the publisher stores
     * `word` before reading `sleepers`, so one of the two sees the other. */
    pthread_mutex_lock(&pool->sleep_lock);
    atomic_fetch_add(&pool->sleepers, 1);
    uint64_t word;
    while ((word = atomic_load(&pool->word)) == seen && !atomic_load(&pool->shutdown))
        pthread_cond_wait(&pool->wake, &pool->sleep_lock);
    atomic_fetch_sub(&pool->sleepers, 1);
    pthread_mutex_unlock(&pool->sleep_lock);
    *budget = now_ns() - start < cap ? cap : 0;
    return word;
}

static void *worker_main(void *arg)
{
    const int32_t id = (int32_t)(intptr_t)arg;
    IntentPool *pool = the_pool();
    uint64_t seen = pool->start_word[id];
    int64_t budget = 0; /* a new worker starts with a job at hand */
    *in_task_flag() = 1;
    for (;;) {
        uint64_t word = wait_for_job(pool, seen, &budget);
        if (atomic_load(&pool->shutdown))
            break;
        seen = word;
        if (id >= (int32_t)(word & 0xffffffffu))
            continue; /* not a participant of this job */
        run_chunks(&pool->job, id);
        /* The decrement is this worker's last access to the job: the caller may
         * publish the next one as soon as `pending` reaches 0. */
        if (atomic_fetch_sub(&pool->job.pending, 1) == 1 && atomic_load(&pool->caller_sleeping)) {
            pthread_mutex_lock(&pool->sleep_lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->sleep_lock);
        }
    }
    return NULL;
}

static void after_fork_in_child(void)
{
    /* Only the forking thread survives: forget the workers, and reset locks that
     * another thread may have held at the time of the fork. */
    IntentPool *pool = the_pool();
    if (!pool)
        return;
    pool->nworkers = 0;
    pool->owner = NULL;
    pthread_mutex_init(&pool->job_lock, NULL);
    pthread_mutex_init(&pool->sleep_lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    pthread_mutex_init(&pool->job.failure_lock, NULL);
    atomic_store(&pool->sleepers, 0);
    atomic_store(&pool->caller_sleeping, 0);
    atomic_store(&pool->shutdown, 0);
}

/* Makes sure `want` workers exist; returns how many can take part (fewer if
 * the system refuses more threads). Called with job_lock held. */
static int32_t ensure_workers(IntentPool *pool, int32_t want)
{
    if (want > MAX_THREADS - 1)
        want = MAX_THREADS - 1;
    if (pool->nworkers >= want)
        return want;
    if (!pool->atfork_registered) { /* once per process: the pool is the process's */
        pthread_atfork(NULL, NULL, after_fork_in_child);
        pool->atfork_registered = 1;
    }
    if (pool->nworkers == 0)
        pool->owner = &this_copy;
    /* Workers block all signals so that signals meant for the process reach
     * the application's own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    uint64_t word = atomic_load(&pool->word);
    while (pool->nworkers < want) {
        int32_t id = pool->nworkers + 1;
        pool->start_word[id] = word; /* so a late-starting worker cannot miss the next job */
        if (pthread_create(&pool->threads[id], NULL, worker_main, (void *)(intptr_t)id) != 0)
            break;
#ifdef __GLIBC__
        pthread_setname_np(pool->threads[id], "intent-worker");
#endif
        pool->nworkers = id;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return pool->nworkers < want ? pool->nworkers : want;
}

static int workers_done(const void *job)
{
    return atomic_load_explicit(&((const Job *)job)->pending, memory_order_acquire) == 0;
}

/* Waits until every worker of the job has finished, polling for up to `budget` ns. */
static void wait_for_workers(IntentPool *pool, Job *job, int64_t budget)
{
    if (workers_done(job) || spin_until(workers_done, job, budget))
        return;
    pthread_mutex_lock(&pool->sleep_lock);
    atomic_store(&pool->caller_sleeping, 1);
    while (atomic_load(&job->pending) != 0)
        pthread_cond_wait(&pool->done, &pool->sleep_lock);
    atomic_store(&pool->caller_sleeping, 0);
    pthread_mutex_unlock(&pool->sleep_lock);
}

INTENT_RUNTIME_EXPORT int32_t intent_parallel_for(int64_t n, intent_task_fn fn, void *closure)
{
    if (n <= 0)
        return INTENT_OK;
    if (!fn)
        return intent_error(INTENT_E_INTERNAL, "intent_parallel_for: null task function");
    IntentProcessState *s = state();
    IntentPool *pool = s ? s->pool : NULL;
    if (!pool)
        return fn(closure, 0, n); /* no shared state (out of memory): inline */
    intent_parallel_backend backend = atomic_load_explicit(&s->backend, memory_order_acquire);
    if (backend)
        return backend(n, fn, closure);
    int *in_task = in_task_flag();
    if (*in_task)
        return fn(closure, 0, n); /* nested: this thread is already one of the pool's */
    int32_t threads = intent_get_num_threads();
    if (n == 1 || threads <= 1)
        return fn(closure, 0, n);
    if (pthread_mutex_trylock(&pool->job_lock) != 0)
        return fn(closure, 0, n); /* another application thread's job is running */

    int32_t participants = (int64_t)threads < n ? threads : (int32_t)n;
    participants = ensure_workers(pool, participants - 1) + 1;
    if (participants <= 1) {
        pthread_mutex_unlock(&pool->job_lock);
        return fn(closure, 0, n);
    }

    Job *job = &pool->job;
    int64_t nchunks = (int64_t)participants * CHUNKS_PER_THREAD;
    if (nchunks > n)
        nchunks = n;
    job->fn = fn;
    job->closure = closure;
    job->q = n / nchunks;
    job->r = n % nchunks;
    job->nslots = participants;
    for (int32_t k = 0; k < participants; k++) {
        atomic_store_explicit(&job->slots[k].next, nchunks * k / participants, memory_order_relaxed);
        job->slots[k].end = nchunks * (k + 1) / participants;
    }
    atomic_store_explicit(&job->failed, INT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&job->pending, participants - 1, memory_order_relaxed);
    atomic_store_explicit(&pool->spin_ns, pool->nworkers + 1 > s->cpu_count ? 0 : INTENT_POOL_SPIN_NS,
                          memory_order_relaxed);

    /* Publish (the store releases the fields above), then wake sleepers if any. */
    uint64_t generation = (atomic_load_explicit(&pool->word, memory_order_relaxed) >> 32) + 1;
    atomic_store(&pool->word, (generation << 32) | (uint64_t)participants);
    int woke_sleepers = atomic_load(&pool->sleepers) > 0;
    if (woke_sleepers) {
        pthread_mutex_lock(&pool->sleep_lock);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->sleep_lock);
    }

    /* run_chunks clears this thread's message; a successful call must leave
     * the caller's last error as it was. */
    char saved[INTENT_ERROR_CAPACITY];
    const char *message = intent_last_error();
    size_t saved_len = strnlen(message, sizeof saved - 1);
    memcpy(saved, message, saved_len);
    saved[saved_len] = '\0';

    *in_task = 1;
    run_chunks(job, 0);
    *in_task = 0;
    /* Workers that had to be woken take a while; polling for them would only
     * compete with their wake-up for a CPU. */
    wait_for_workers(pool, job, woke_sleepers ? 0 : atomic_load(&pool->spin_ns));

    int32_t status = INTENT_OK;
    if (atomic_load_explicit(&job->failed, memory_order_relaxed) != INT64_MAX)
        status = intent_error(job->failure_status, "%s", job->failure_message);
    else if (strcmp(intent_last_error(), saved) != 0)
        intent_error(INTENT_OK, "%s", saved);
    pthread_mutex_unlock(&pool->job_lock);
    return status;
}

/* Stops the workers when the process exits (or, for a library that can be unloaded, at
 * dlclose), so no thread is left running code that is no longer mapped. Only the copy
 * whose code the workers run stops them; a later parallel_for starts new ones. */
__attribute__((destructor)) static void stop_workers(void)
{
    IntentPool *pool = the_pool();
    if (!pool || pool->nworkers == 0 || pool->owner != &this_copy)
        return;
    if (pthread_mutex_trylock(&pool->job_lock) != 0)
        return; /* a job is running (exit from inside a task): leave the threads be */
    atomic_store(&pool->shutdown, 1);
    pthread_mutex_lock(&pool->sleep_lock);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->sleep_lock);
    for (int32_t id = 1; id <= pool->nworkers; id++)
        pthread_join(pool->threads[id], NULL);
    pool->nworkers = 0;
    pool->owner = NULL;
    atomic_store(&pool->shutdown, 0);
    pthread_mutex_unlock(&pool->job_lock);
}
