/* Block semantics for the GPU emulator (tests/gpu/cpu_emulation.py).
 *
 * The threads of one block run as cooperative fibers on one OS thread: each runs until
 * it reaches a synchronisation point (a block barrier, a warp-collective operation) or
 * exits, then the scheduler resumes the next runnable fiber. A barrier releases its
 * waiters once every thread it expects has arrived; a warp-collective operation
 * completes once every existing lane of its member mask waits at the same operation with
 * the same mask, and then computes every lane's result at once (warp-synchronous). When no
 * fiber can run but some have not finished, the block is divergent or deadlocked: the
 * launch stops and reports who waits where.
 *
 * Blocks of a launch run one after another, so one copy of the shared memory serves them
 * all (the caller refills it with a poison pattern before each block). Because every
 * fiber runs on the same OS thread, the kernel's atomics are atomic among them.
 *
 * Built by the test suite with the host C compiler and loaded with ctypes; the JIT'd
 * kernel IR calls the emu_* functions below.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
/* x86-64 switches fibers with a few instructions; elsewhere (or with -DEMU_UCONTEXT)
 * through ucontext, which also saves the signal mask (a system call per switch). */
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define FAST_SWITCH 1
#else
#define FAST_SWITCH 0
#endif
#if !FAST_SWITCH
#include <ucontext.h>
#endif

enum { RUNNABLE, RUNNING, WAIT_BARRIER, WAIT_WARP, DONE };
enum { ASCENDING, DESCENDING, RANDOM };

/* Warp-collective operations (the op argument of emu_warp). */
enum {
    SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_BFLY,
    VOTE_ALL, VOTE_ANY, VOTE_UNI, VOTE_BALLOT,
    MATCH_ANY, MATCH_ALL,
    REDUX_ADD, REDUX_MIN, REDUX_MAX, REDUX_UMIN, REDUX_UMAX, REDUX_AND, REDUX_OR, REDUX_XOR,
    WARP_SYNC, LDMATRIX, MMA, N_WARP_OPS
};
static const char *const WARP_OP_NAMES[N_WARP_OPS] = {
    "shfl.sync.idx", "shfl.sync.up", "shfl.sync.down", "shfl.sync.bfly",
    "vote.sync.all", "vote.sync.any", "vote.sync.uni", "vote.sync.ballot",
    "match.any.sync", "match.all.sync",
    "redux.sync.add", "redux.sync.min", "redux.sync.max", "redux.sync.umin", "redux.sync.umax",
    "redux.sync.and", "redux.sync.or", "redux.sync.xor",
    "bar.warp.sync", "ldmatrix", "mma",
};

/* Block barriers: the kind argument of emu_barrier. */
enum { BAR_SYNC, BAR_ARRIVE, BAR_RED_POPC, BAR_RED_AND, BAR_RED_OR };
static const char *const BAR_KIND_NAMES[] = {"sync", "arrive", "red.popc", "red.and", "red.or"};
#define N_BARRIERS 16
#define POISON_LANE 0xFFFFFFFFu /* what a shuffle reads from a lane that does not take part */
/* emu_counts: barrier arrivals (one per thread and barrier), warp operations completed
 * (shuffles, votes...: one per warp), ldmatrix and mma.sync (one per warp), cp.async
 * copies and their bytes (source bytes; the zero fill is not counted). */
enum { C_BARRIER, C_WARP_OP, C_LDMATRIX, C_MMA, C_CP_ASYNC, C_CP_ASYNC_BYTES, N_COUNTS };
#define MAX_ASYNC_COPIES 256 /* cp.async copies one thread may have in flight */

/* One cp.async in flight: it takes effect when a cp.async.wait.* of its thread retires
 * its group (or when the thread exits), not before, so a read of its destination that
 * no wait orders after it sees what was there before (the shared-memory poison). */
typedef struct {
    void *dst;
    const void *src;
    uint32_t size, src_size;
    int group; /* the commit group: -1 until the next cp.async.commit_group */
} AsyncCopy;

typedef struct {
    void *sp; /* saved stack pointer (x86-64 switch) */
#if !FAST_SWITCH
    ucontext_t context;
#endif
    char *stack;
    int state;
    int tid[3];
    int linear, lane, warp;
    /* where it waits */
    int barrier, bar_kind, bar_expected;
    int op;
    uint32_t mask, b, c;
    uint64_t value;
    const uint32_t *fragments[3]; /* mma: this lane's registers of A, B and C */
    uint32_t *out;                /* ldmatrix, mma: where this lane's result registers go */
    /* what the operation returned */
    uint64_t result;
    int pred;
    /* cp.async: the copies in flight and the number of groups committed */
    AsyncCopy *copies;
    int n_copies, groups;
} Fiber;

typedef struct {
    int expected, all; /* all: every thread of the block */
    int arrived, kind, popc; /* arrived 0: the barrier is idle */
} Barrier;

/* Indices into the special-register array the kernel IR reads (cpu_emulation.py SREGS). */
enum { R_TID, R_NTID = 3, R_CTAID = 6, R_NCTAID = 9, R_LANEID = 12, R_WARPID, R_NWARPID, N_SREGS };

static struct {
    void (*entry)(void *);
    void *args;
    int32_t *sregs;
    Fiber *fibers;
    int nthreads, nwarps;
    Fiber *current;
    void *scheduler_sp;
#if !FAST_SWITCH
    ucontext_t scheduler_context;
#endif
    Barrier barriers[N_BARRIERS];
    /* the runnable fibers: ASCENDING and DESCENDING take the lowest or highest numbered
     * (none is below `low` or above `high`), RANDOM any of `pool` */
    int schedule, runnable, low, high, pool_size;
    Fiber **pool;
    uint64_t random_state;
    int exit_releases, exited; /* exit_releases: PTX's exit, which releases a barrier for all threads */
    int failed;
    char *error;
    size_t error_len;
    uint64_t clock;
    uint64_t counts[N_COUNTS]; /* what the launch did, summed over its blocks (emu_counts) */
} B;

static char *stack_pool[1024];
static size_t stack_pool_bytes;

/* ---- context switch ---------------------------------------------------------------------- */

#if FAST_SWITCH
/* Saves the callee-saved registers and the stack pointer in *save, then continues on the
 * stack `next` (as saved by an earlier switch, or laid out by fiber_stack_init). */
void emu_switch(void **save, void *next);
__asm__(
    ".text\n"
    ".globl emu_switch\n"
    ".type emu_switch,@function\n"
    "emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_switch, .-emu_switch\n");
#endif

static void fiber_main(void);
static void try_release(int id);

static void to_scheduler(Fiber *f) {
#if FAST_SWITCH
    emu_switch(&f->sp, B.scheduler_sp);
#else
    swapcontext(&f->context, &B.scheduler_context);
#endif
}

static void resume(Fiber *f) {
    int32_t *r = B.sregs;
    for (int d = 0; d < 3; d++) r[R_TID + d] = f->tid[d];
    r[R_LANEID] = f->lane;
    r[R_WARPID] = f->warp;
    B.current = f;
#if FAST_SWITCH
    emu_switch(&B.scheduler_sp, f->sp);
#else
    swapcontext(&B.scheduler_context, &f->context);
#endif
}

static void fiber_stack_init(Fiber *f) {
#if FAST_SWITCH
    uint64_t *top = (uint64_t *)(f->stack + stack_pool_bytes);
    uint32_t control[2];
    __asm__ volatile("stmxcsr %0\n fnstcw %1" : "=m"(control[0]), "=m"(control[1]));
    *--top = 0;                       /* fiber_main's return address: it never returns */
    *--top = (uint64_t)fiber_main;    /* where emu_switch's ret goes */
    for (int i = 0; i < 6; i++) *--top = 0;  /* rbp rbx r12 r13 r14 r15 */
    *--top = (uint64_t)control[0] | ((uint64_t)control[1] << 32);
    f->sp = top;
#else
    getcontext(&f->context);
    f->context.uc_stack.ss_sp = f->stack;
    f->context.uc_stack.ss_size = stack_pool_bytes;
    f->context.uc_link = NULL;
    makecontext(&f->context, fiber_main, 0);
#endif
}

static void complete_copies(Fiber *f, int keep_groups);

static void fiber_main(void) {
    Fiber *f = B.current;
    B.entry(B.args);
    complete_copies(f, -1); /* a thread's copies land by the time it is gone */
    f->state = DONE;
    B.exited++;
    if (B.exit_releases)
        for (int id = 0; id < N_BARRIERS; id++) try_release(id);
    to_scheduler(f);
    abort(); /* a finished fiber is never resumed */
}

static int ensure_stacks(int n, size_t bytes) {
    if (stack_pool_bytes != bytes) {
        for (int i = 0; i < 1024; i++) {
            if (stack_pool[i]) munmap(stack_pool[i], stack_pool_bytes + 4096);
            stack_pool[i] = NULL;
        }
        stack_pool_bytes = bytes;
    }
    for (int i = 0; i < n; i++) {
        if (stack_pool[i]) continue;
        char *base = mmap(NULL, bytes + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
        if (base == MAP_FAILED) return -1;
        mprotect(base, 4096, PROT_NONE); /* a stack overflow faults instead of corrupting */
        stack_pool[i] = base + 4096;
    }
    return 0;
}

/* ---- errors ------------------------------------------------------------------------------- */

static void fail(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *format, ...) {
    if (B.failed) return;
    B.failed = 1;
    va_list ap;
    va_start(ap, format);
    vsnprintf(B.error, B.error_len, format, ap);
    va_end(ap);
}

/* Appends to the error message. */
static void append(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void append(const char *format, ...) {
    size_t used = strlen(B.error);
    if (used + 1 >= B.error_len) return;
    va_list ap;
    va_start(ap, format);
    vsnprintf(B.error + used, B.error_len - used, format, ap);
    va_end(ap);
}

/* A fiber that finds an error stops here: the scheduler ends the block. */
static void fail_here(Fiber *f) {
    f->state = WAIT_BARRIER;
    to_scheduler(f);
    abort();
}

static void describe(const Fiber *f, char *out, size_t n) {
    switch (f->state) {
    case DONE: snprintf(out, n, "exited"); break;
    case RUNNABLE: case RUNNING: snprintf(out, n, "runnable"); break;
    case WAIT_BARRIER:
        snprintf(out, n, "wait at barrier %d (%s, expects %d threads)", f->barrier, BAR_KIND_NAMES[f->bar_kind],
                 f->bar_expected);
        break;
    case WAIT_WARP:
        snprintf(out, n, "wait at %s with member mask 0x%08x in warp %d", WARP_OP_NAMES[f->op], f->mask, f->warp);
        break;
    }
}

static int same_place(const Fiber *f, const Fiber *g) {
    if (f->state != g->state) return 0;
    if (f->state == WAIT_BARRIER) return f->barrier == g->barrier && f->bar_kind == g->bar_kind;
    return f->op == g->op && f->mask == g->mask;
}

/* Nothing can run but not every thread has finished: say who waits where, grouping
 * consecutive threads in the same state. */
static void report_stall(void) {
    /* divergence: a thread left, or threads wait at different places; deadlock: all wait at one */
    int divergent = 0;
    const Fiber *first = NULL;
    for (int i = 0; i < B.nthreads; i++) {
        const Fiber *f = &B.fibers[i];
        if (f->state == DONE) divergent = 1;
        else if (!first) first = f;
        else if (!same_place(first, f)) divergent = 1;
    }
    fail("%s in block (%d, %d, %d) of %d threads:", divergent ? "barrier divergence" : "deadlock",
         B.sregs[R_CTAID], B.sregs[R_CTAID + 1], B.sregs[R_CTAID + 2], B.nthreads);
    char here[160], next[160];
    for (int i = 0; i < B.nthreads;) {
        describe(&B.fibers[i], here, sizeof here);
        int j = i + 1;
        for (; j < B.nthreads; j++) {
            describe(&B.fibers[j], next, sizeof next);
            if (strcmp(here, next) != 0) break;
        }
        if (j - i == 1) append(" thread %d %s;", i, here);
        else append(" threads %d-%d %s;", i, j - 1, here);
        i = j;
    }
    append(" (threads numbered x + y*ntid.x + z*ntid.x*ntid.y)");
}

/* ---- scheduling -------------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void wake(Fiber *f) {
    f->state = RUNNABLE;
    B.runnable++;
    if (f->linear < B.low) B.low = f->linear;
    if (f->linear > B.high) B.high = f->linear;
    if (B.schedule == RANDOM) B.pool[B.pool_size++] = f;
}

/* The next fiber to run, chosen by the schedule, or NULL when none can run. */
static Fiber *take_next(void) {
    if (B.runnable == 0) return NULL;
    Fiber *f;
    if (B.schedule == ASCENDING) {
        while (B.fibers[B.low].state != RUNNABLE) B.low++;
        f = &B.fibers[B.low];
    } else if (B.schedule == DESCENDING) {
        while (B.fibers[B.high].state != RUNNABLE) B.high--;
        f = &B.fibers[B.high];
    } else {
        int k = (int)(next_random(&B.random_state) % (uint64_t)B.pool_size);
        f = B.pool[k];
        B.pool[k] = B.pool[--B.pool_size];
    }
    B.runnable--;
    f->state = RUNNING;
    return f;
}

/* ---- block barriers ----------------------------------------------------------------------- */

/* Releases barrier `id` if every thread it waits for has arrived. */
static void try_release(int id) {
    Barrier *bar = &B.barriers[id];
    if (bar->arrived == 0) return;
    int needed = bar->all && B.exit_releases ? B.nthreads - B.exited : bar->expected;
    if (bar->arrived < needed) return;
    uint32_t result = bar->kind == BAR_RED_POPC ? (uint32_t)bar->popc
                    : bar->kind == BAR_RED_AND ? bar->popc == bar->arrived
                    : bar->kind == BAR_RED_OR ? bar->popc > 0 : 0;
    for (int i = 0; i < B.nthreads; i++) {
        Fiber *g = &B.fibers[i];
        if (g->state == WAIT_BARRIER && g->barrier == id) {
            g->result = result;
            wake(g);
        }
    }
    memset(bar, 0, sizeof *bar);
}

/* bar.sync / barrier.sync / bar.arrive / bar.red: `expected` < 0 means every thread of the block. */
uint32_t emu_barrier(int32_t id, int32_t expected, int32_t kind, int32_t pred) {
    Fiber *f = B.current;
    B.counts[C_BARRIER]++;
    if (id < 0 || id >= N_BARRIERS) { fail("barrier id %d is not in 0..15 (thread %d)", id, f->linear); fail_here(f); }
    int all = expected < 0;
    if (all) expected = B.nthreads;
    else if (expected % 32 != 0 || expected > ((B.nthreads + 31) / 32) * 32 || expected == 0) {
        fail("barrier %d: a thread count of %d is not a positive multiple of 32 within the block's %d threads "
             "(thread %d)", id, expected, B.nthreads, f->linear);
        fail_here(f);
    }
    Barrier *bar = &B.barriers[id];
    int sync_kind = kind == BAR_ARRIVE ? BAR_SYNC : kind;
    if (bar->arrived > 0 && (bar->expected != expected || bar->kind != sync_kind)) {
        fail("barrier divergence: thread %d reaches barrier %d (%s, expects %d threads) while %d threads wait there "
             "(%s, expects %d)", f->linear, id, BAR_KIND_NAMES[kind], expected, bar->arrived,
             BAR_KIND_NAMES[bar->kind], bar->expected);
        fail_here(f);
    }
    bar->expected = expected;
    bar->all = all;
    bar->kind = sync_kind;
    bar->arrived++;
    bar->popc += pred != 0;
    f->barrier = id;
    f->bar_kind = kind;
    f->bar_expected = expected;
    f->state = WAIT_BARRIER;
    try_release(id);
    if (kind == BAR_ARRIVE && f->state != RUNNABLE) wake(f);
    to_scheduler(f); /* every barrier is a scheduling point, even for the last to arrive */
    return (uint32_t)f->result;
}

/* ---- warp-collective operations ----------------------------------------------------------- */

static uint32_t existing_lanes(int warp) {
    int n = B.nthreads - 32 * warp;
    return n >= 32 ? 0xFFFFFFFFu : (1u << n) - 1;
}

/* The source lane of a shuffle, as the PTX ISA defines shfl.sync; *in_range is its predicate. */
static int shuffle_source(int op, int lane, uint32_t b, uint32_t c, int *in_range) {
    int bval = b & 31, cval = c & 31, segmask = (c >> 8) & 31;
    int max_lane = (lane & segmask) | (cval & ~segmask), min_lane = lane & segmask, j;
    switch (op) {
    case SHFL_UP: j = lane - bval; *in_range = j >= max_lane; break;
    case SHFL_DOWN: j = lane + bval; *in_range = j <= max_lane; break;
    case SHFL_BFLY: j = lane ^ bval; *in_range = j <= max_lane; break;
    default: j = min_lane | (bval & ~segmask); *in_range = j <= max_lane; break;
    }
    return *in_range ? j : lane;
}

static void complete_ldmatrix(Fiber **lanes);
static void complete_mma(Fiber **lanes);

static void complete_warp_op(Fiber **lanes, uint32_t members, int op) {
    B.counts[op == LDMATRIX ? C_LDMATRIX : op == MMA ? C_MMA : C_WARP_OP]++;
    if (op == LDMATRIX) complete_ldmatrix(lanes);
    if (op == MMA) complete_mma(lanes);
    uint64_t acc = 0;
    int64_t sacc = 0;
    int first = 1, all = 1, any = 0, uniform = 1;
    uint32_t ballot = 0;
    uint64_t first_value = 0;
    for (int l = 0; l < 32; l++) {
        if (!(members >> l & 1)) continue;
        Fiber *g = lanes[l];
        uint64_t v = g->value;
        uint32_t v32 = (uint32_t)v;
        if (first) { first_value = v; acc = v32; sacc = (int32_t)v32; }
        else {
            switch (op) {
            case REDUX_ADD: acc += v32; break;
            case REDUX_MIN: if ((int32_t)v32 < sacc) sacc = (int32_t)v32; break;
            case REDUX_MAX: if ((int32_t)v32 > sacc) sacc = (int32_t)v32; break;
            case REDUX_UMIN: if (v32 < acc) acc = v32; break;
            case REDUX_UMAX: if (v32 > acc) acc = v32; break;
            case REDUX_AND: acc &= v32; break;
            case REDUX_OR: acc |= v32; break;
            case REDUX_XOR: acc ^= v32; break;
            }
            if (v != first_value) uniform = 0;
        }
        first = 0;
        all &= v != 0;
        any |= v != 0;
        if (v != 0) ballot |= 1u << l;
    }
    for (int l = 0; l < 32; l++) {
        if (!(members >> l & 1)) continue;
        Fiber *g = lanes[l];
        uint64_t result = 0;
        int pred = 1;
        switch (op) {
        case SHFL_IDX: case SHFL_UP: case SHFL_DOWN: case SHFL_BFLY: {
            int j = shuffle_source(op, l, g->b, g->c, &pred);
            result = members >> j & 1 ? (uint32_t)lanes[j]->value : POISON_LANE;
            break;
        }
        case VOTE_ALL: result = all; break;
        case VOTE_ANY: result = any; break;
        case VOTE_UNI: result = all || !any; break;
        case VOTE_BALLOT: result = ballot; break;
        case MATCH_ANY:
            for (int k = 0; k < 32; k++)
                if (members >> k & 1 && lanes[k]->value == g->value) result |= 1u << k;
            break;
        case MATCH_ALL: result = uniform ? members : 0; pred = uniform; break;
        case REDUX_MIN: case REDUX_MAX: result = (uint32_t)(int32_t)sacc; break;
        case WARP_SYNC: case LDMATRIX: case MMA: break;
        default: result = (uint32_t)acc; break;
        }
        g->result = result;
        g->pred = pred;
        wake(g);
    }
}

/* One lane's part in a warp-collective operation; returns its result once every member has
 * arrived. *pred (when not NULL) gets the operation's predicate (shfl's in-range flag,
 * match.all's "all equal"). */
/* The current fiber arrives at a warp-collective operation; returns once every member
 * has arrived and the operation has completed. */
static void warp_collective(int op, uint32_t mask, uint64_t value, uint32_t b, uint32_t c) {
    Fiber *f = B.current;
    uint32_t members = mask & existing_lanes(f->warp);
    if (!(mask >> f->lane & 1)) {
        fail("%s: thread %d (lane %d of warp %d) is not in its own member mask 0x%08x", WARP_OP_NAMES[op],
             f->linear, f->lane, f->warp, mask);
        fail_here(f);
    }
    if ((op == LDMATRIX || op == MMA) && members != 0xFFFFFFFFu) {
        fail("%s needs a whole warp; warp %d of the block has %d threads", WARP_OP_NAMES[op], f->warp,
             __builtin_popcount(members));
        fail_here(f);
    }
    f->op = op;
    f->mask = mask;
    f->value = value;
    f->b = b;
    f->c = c;
    f->state = WAIT_WARP;
    Fiber *lanes[32] = {0};
    int ready = 1;
    for (int l = 0; l < 32 && ready; l++) {
        if (!(members >> l & 1)) continue;
        Fiber *g = &B.fibers[32 * f->warp + l];
        lanes[l] = g;
        /* shuffles take a source lane or offset per lane; ldmatrix and mma a shape for the warp */
        ready = g->state == WAIT_WARP && g->op == op && g->mask == mask &&
                (op < LDMATRIX || (g->b == b && g->c == c));
    }
    if (ready) complete_warp_op(lanes, members, op);
    to_scheduler(f);
}

/* One lane's part in a warp-collective operation; returns its result once every member has
 * arrived. *pred (when not NULL) gets the operation's predicate (shfl's in-range flag,
 * match.all's "all equal"). */
uint64_t emu_warp(int32_t op, uint32_t mask, uint64_t value, uint32_t b, uint32_t c, int32_t *pred) {
    warp_collective(op, mask, value, b, c);
    if (pred) *pred = B.current->pred;
    return B.current->result;
}

/* ldmatrix.sync.aligned.m8n8.x{count}{.trans}.b16: lanes 8j..8j+7 give the addresses of the
 * 8 rows (16 bytes each) of matrix j; lane l receives, in register j, the two 16-bit
 * elements of matrix j at row l/4, columns 2(l%4) and 2(l%4)+1 (transposed: rows 2(l%4)
 * and 2(l%4)+1 of column l/4). */
void emu_ldmatrix(int32_t count, int32_t trans, const void *row, uint32_t *out) {
    B.current->out = out;
    warp_collective(LDMATRIX, 0xFFFFFFFFu, (uint64_t)(uintptr_t)row, (uint32_t)count, (uint32_t)trans);
}

static void complete_ldmatrix(Fiber **lanes) {
    int count = (int)lanes[0]->b, trans = (int)lanes[0]->c;
    for (int l = 0; l < 32; l++) {
        for (int j = 0; j < count; j++) {
            uint16_t half[2];
            for (int e = 0; e < 2; e++) {
                int r = trans ? 2 * (l % 4) + e : l / 4, col = trans ? l / 4 : 2 * (l % 4) + e;
                const uint16_t *row = (const uint16_t *)(uintptr_t)lanes[8 * j + r]->value;
                half[e] = row[col];
            }
            lanes[l]->out[j] = (uint32_t)half[0] | (uint32_t)half[1] << 16;
        }
    }
}

/* ---- mma.sync ------------------------------------------------------------------------------ */

enum { MMA_M16N8K16_F16, MMA_M16N8K16_BF16, MMA_M16N8K32_S8, MMA_M16N8K32_U8 };

static double half_to_double(uint16_t h) {
    int exponent = h >> 10 & 31, mantissa = h & 1023;
    double sign = h >> 15 ? -1.0 : 1.0;
    if (exponent == 31) return mantissa ? __builtin_nan("") : sign * __builtin_inf();
    if (exponent == 0) return sign * mantissa * 0x1p-24;
    return sign * (1024 + mantissa) * __builtin_ldexp(1.0, exponent - 25);
}

static double bf16_to_double(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Element (row, k) of A and (k, col) of B, by the PTX ISA's fragment layouts for .row.col:
 * lane = 4 * group + t. m16n8k16 (two 16-bit elements a register): A register r of a lane
 * holds row group + 8(r%2), columns 2t + 8(r/2) and +1; B register r holds rows 2t + 8r
 * and +1 of column group. m16n8k32 (four 8-bit elements a register): A register r holds
 * row group + 8(r%2), columns 4t + 16(r/2) .. +3; B register r rows 4t + 16r .. +3 of
 * column group. C and D: register r holds row group + 8(r/2), column 2t + r%2. */
static double mma_a(Fiber **lanes, int shape, int row, int k) {
    if (shape <= MMA_M16N8K16_BF16) {
        int lane = 4 * (row % 8) + (k % 8) / 2, r = (row / 8) + 2 * (k / 8);
        uint16_t h = (uint16_t)(lanes[lane]->fragments[0][r] >> (16 * (k % 2)));
        return shape == MMA_M16N8K16_F16 ? half_to_double(h) : bf16_to_double(h);
    }
    int lane = 4 * (row % 8) + (k % 16) / 4, r = (row / 8) + 2 * (k / 16);
    uint8_t byte = (uint8_t)(lanes[lane]->fragments[0][r] >> (8 * (k % 4)));
    return shape == MMA_M16N8K32_S8 ? (double)(int8_t)byte : (double)byte;
}

static double mma_b(Fiber **lanes, int shape, int k, int col) {
    if (shape <= MMA_M16N8K16_BF16) {
        int lane = 4 * col + (k % 8) / 2, r = k / 8;
        uint16_t h = (uint16_t)(lanes[lane]->fragments[1][r] >> (16 * (k % 2)));
        return shape == MMA_M16N8K16_F16 ? half_to_double(h) : bf16_to_double(h);
    }
    int lane = 4 * col + (k % 16) / 4, r = k / 16;
    uint8_t byte = (uint8_t)(lanes[lane]->fragments[1][r] >> (8 * (k % 4)));
    return shape == MMA_M16N8K32_S8 ? (double)(int8_t)byte : (double)byte;
}

/* D = A B + C for the whole warp. Floats: the products and their sum in double, rounded
 * once to f32 (the GPU's rounding inside an mma is not specified bit for bit); integers:
 * exact, wrapping at 32 bits. */
static void complete_mma(Fiber **lanes) {
    int shape = (int)lanes[0]->b, depth = shape <= MMA_M16N8K16_BF16 ? 16 : 32;
    for (int row = 0; row < 16; row++)
        for (int col = 0; col < 8; col++) {
            int lane = 4 * (row % 8) + col / 2, r = 2 * (row / 8) + col % 2;
            uint32_t c = lanes[lane]->fragments[2][r], d;
            if (shape <= MMA_M16N8K16_BF16) {
                float accumulator;
                memcpy(&accumulator, &c, sizeof accumulator);
                double sum = accumulator;
                for (int k = 0; k < depth; k++) sum += mma_a(lanes, shape, row, k) * mma_b(lanes, shape, k, col);
                float result = (float)sum;
                memcpy(&d, &result, sizeof d);
            } else {
                int64_t sum = (int32_t)c;
                for (int k = 0; k < depth; k++)
                    sum += (int64_t)mma_a(lanes, shape, row, k) * (int64_t)mma_b(lanes, shape, k, col);
                d = (uint32_t)sum;
            }
            lanes[lane]->out[r] = d;
        }
}

/* mma.sync.aligned (row.col): a, b, c: this lane's registers; d: where its result goes. */
void emu_mma(int32_t shape, const uint32_t *a, const uint32_t *b, const uint32_t *c, uint32_t *d) {
    Fiber *f = B.current;
    f->fragments[0] = a;
    f->fragments[1] = b;
    f->fragments[2] = c;
    f->out = d;
    warp_collective(MMA, 0xFFFFFFFFu, 0, (uint32_t)shape, 0);
}

/* ---- cp.async ------------------------------------------------------------------------------ */

/* cp.async.{ca,cg}.shared.global: queued in the thread's current (uncommitted) group.
 * src_size < size: the bytes past src_size are zero (the .s form, for edges). */
void emu_cp_async(void *dst, const void *src, uint32_t size, uint32_t src_size) {
    Fiber *f = B.current;
    if (!f->copies) f->copies = calloc(MAX_ASYNC_COPIES, sizeof(AsyncCopy));
    if (!f->copies || f->n_copies == MAX_ASYNC_COPIES) {
        fail("thread %d has more than %d cp.async copies in flight", f->linear, MAX_ASYNC_COPIES);
        fail_here(f);
        return;
    }
    f->copies[f->n_copies++] = (AsyncCopy){dst, src, size, src_size < size ? src_size : size, -1};
    B.counts[C_CP_ASYNC]++;
    B.counts[C_CP_ASYNC_BYTES] += src_size < size ? src_size : size;
}

/* The counts of the last launch (N_COUNTS values). */
void emu_counts(uint64_t *out) { memcpy(out, B.counts, sizeof B.counts); }

void emu_cp_async_commit(void) {
    Fiber *f = B.current;
    for (int i = 0; i < f->n_copies; i++)
        if (f->copies[i].group < 0) f->copies[i].group = f->groups;
    f->groups++;
}

/* Completes the thread's copies, in issue order, except those of its newest `keep_groups`
 * committed groups (cp.async.wait_group N); keep_groups < 0: every copy, committed or not
 * (cp.async.wait_all). */
static void complete_copies(Fiber *f, int keep_groups) {
    int kept = 0;
    for (int i = 0; i < f->n_copies; i++) {
        AsyncCopy c = f->copies[i];
        int done = keep_groups < 0 || (c.group >= 0 && c.group < f->groups - keep_groups);
        if (keep_groups == 0 && c.group < 0) done = 0; /* wait_group 0: uncommitted copies stay */
        if (done) {
            memset(c.dst, 0, c.size);
            memmove(c.dst, c.src, c.src_size);
        } else {
            f->copies[kept++] = c;
        }
    }
    f->n_copies = kept;
}

void emu_cp_async_wait(int32_t keep_groups) { complete_copies(B.current, keep_groups); }

/* The lanes of the warp that have not exited (activemask: every such lane counts as converged). */
uint32_t emu_activemask(void) {
    Fiber *f = B.current;
    uint32_t mask = 0;
    for (int l = 0; l < 32 && 32 * f->warp + l < B.nthreads; l++)
        if (B.fibers[32 * f->warp + l].state != DONE) mask |= 1u << l;
    return mask;
}

/* A monotonic counter for clock/clock64/globaltimer. */
uint64_t emu_clock(void) { return ++B.clock; }

/* A kernel's trap: the launch fails. */
void emu_trap(void) {
    fail("the kernel trapped (thread %d)", B.current->linear);
    fail_here(B.current);
}

/* ---- launches ----------------------------------------------------------------------------- */

/* Runs one block; returns 0, or -1 with the error message written. */
static int run_block(uint64_t seed) {
    memset(B.barriers, 0, sizeof B.barriers);
    int ntid[3] = {B.sregs[R_NTID], B.sregs[R_NTID + 1], B.sregs[R_NTID + 2]};
    B.runnable = B.pool_size = B.exited = 0;
    B.low = B.nthreads;
    B.high = -1;
    B.random_state = seed;
    for (int i = 0; i < B.nthreads; i++) {
        Fiber *f = &B.fibers[i];
        memset(f, 0, sizeof *f);
        f->stack = stack_pool[i];
        f->tid[0] = i % ntid[0];
        f->tid[1] = i / ntid[0] % ntid[1];
        f->tid[2] = i / (ntid[0] * ntid[1]);
        f->linear = i;
        f->lane = i % 32;
        f->warp = i / 32;
        fiber_stack_init(f);
        wake(f);
    }
    for (Fiber *f; (f = take_next()) != NULL;) {
        resume(f);
        if (B.failed) return -1;
    }
    for (int i = 0; i < B.nthreads; i++) free(B.fibers[i].copies);
    for (int i = 0; i < B.nthreads; i++)
        if (B.fibers[i].state != DONE) { report_stall(); return -1; }
    return 0;
}

/* Runs a whole launch. shared/shared_bytes: the memory refilled with `fill` before each
 * block (static shared arrays and the dynamic shared region). Returns 0 or -1 (error). */
int emu_launch(void (*entry)(void *), void *args, const int32_t *grid, const int32_t *block, int32_t *sregs,
               void *const *shared, const uint64_t *shared_bytes, int32_t n_shared, int32_t fill,
               int32_t schedule, uint64_t seed, int32_t exit_releases, uint64_t stack_bytes, char *error,
               uint64_t error_len) {
    int nthreads = block[0] * block[1] * block[2];
    memset(&B, 0, sizeof B);
    B.error = error;
    B.error_len = error_len;
    error[0] = 0;
    if (nthreads < 1 || nthreads > 1024) { fail("a block of %d threads (at most 1024)", nthreads); return -1; }
    if (ensure_stacks(nthreads, stack_bytes) != 0) { fail("could not map fiber stacks"); return -1; }
    Fiber *fibers = calloc((size_t)nthreads, sizeof(Fiber));
    Fiber **pool = calloc((size_t)nthreads, sizeof(Fiber *));
    if (!fibers || !pool) { free(fibers); free(pool); fail("out of memory"); return -1; }
    B.schedule = schedule;
    B.exit_releases = exit_releases;
    B.pool = pool;
    B.entry = entry;
    B.args = args;
    B.sregs = sregs;
    B.fibers = fibers;
    B.nthreads = nthreads;
    B.nwarps = (nthreads + 31) / 32;
    for (int d = 0; d < 3; d++) { sregs[R_NTID + d] = block[d]; sregs[R_NCTAID + d] = grid[d]; }
    sregs[R_NWARPID] = B.nwarps;
    int status = 0;
    for (int z = 0; z < grid[2] && status == 0; z++)
        for (int y = 0; y < grid[1] && status == 0; y++)
            for (int x = 0; x < grid[0] && status == 0; x++) {
                sregs[R_CTAID] = x; sregs[R_CTAID + 1] = y; sregs[R_CTAID + 2] = z;
                for (int s = 0; s < n_shared; s++) memset(shared[s], fill, shared_bytes[s]);
                uint64_t block_seed = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(1 + x + grid[0] * (y + grid[1] * z)));
                status = run_block(block_seed);
            }
    free(fibers);
    free(pool);
    return status;
}
