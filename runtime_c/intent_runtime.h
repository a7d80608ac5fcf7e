/* intent_runtime.h - the C runtime that every compiled Intent module links.
 *
 * Declares the tensor descriptor and status codes of docs/abi.md (ABI version 1)
 * and the few services generated kernels call: argument checks, per-thread error
 * messages, a thread pool and aligned allocation.
 *
 * Every artifact built by intentc (.so, .a, .o) carries its own copy of the runtime;
 * the functions below have default visibility and weak definitions, the helpers stay
 * hidden, and all copies in a process share one state: a program or Python process that
 * holds several intentc libraries has one last error per thread and one thread pool
 * (docs/abi.md, "Many libraries in one program"). */
#ifndef INTENT_RUNTIME_H
#define INTENT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INTENT_ABI_VERSION 1

#ifndef INTENT_API
#if defined(__GNUC__) || defined(__clang__)
#define INTENT_API __attribute__((visibility("default")))
#else
#define INTENT_API
#endif
#endif

/* Lets the compiler check the printf formats that generated code passes. */
#if defined(__GNUC__) || defined(__clang__)
#define INTENT_PRINTF_FORMAT(fmt_index, first_arg) \
    __attribute__((format(printf, fmt_index, first_arg)))
#else
#define INTENT_PRINTF_FORMAT(fmt_index, first_arg)
#endif

/* ---- tensors (layout-compatible with DLPack's DLTensor) ---------------------- */

/* DLPack type codes (DLDataTypeCode). */
#define INTENT_DTYPE_INT 0
#define INTENT_DTYPE_UINT 1
#define INTENT_DTYPE_FLOAT 2
#define INTENT_DTYPE_BFLOAT 4
#define INTENT_DTYPE_BOOL 6
/* OCP Microscaling types (DLPack 1.1 codes). f8 and e8m0: one code per byte; f6: one code
 * per byte in the low six bits; f4e2m1: packed two per byte, element 2j in the low nibble
 * of byte j (element offsets from the strides, in elements). */
#define INTENT_DTYPE_F8E4M3 10
#define INTENT_DTYPE_F8E5M2 12
#define INTENT_DTYPE_E8M0 14
#define INTENT_DTYPE_F6E2M3 15
#define INTENT_DTYPE_F6E3M2 16
#define INTENT_DTYPE_F4E2M1 17

/* DLPack device type of the host CPU (kDLCPU). */
#define INTENT_DEVICE_CPU 1

typedef struct IntentDevice {
    int32_t device_type; /* must be INTENT_DEVICE_CPU */
    int32_t device_id;
} IntentDevice; /* DLDevice */

typedef struct IntentDType {
    uint8_t code;   /* INTENT_DTYPE_* */
    uint8_t bits;
    uint16_t lanes; /* always 1 */
} IntentDType; /* DLDataType */

typedef struct IntentTensor {
    void *data;           /* base pointer */
    IntentDevice device;  /* must be {INTENT_DEVICE_CPU, 0} */
    int32_t ndim;
    IntentDType dtype;
    int64_t *shape;       /* ndim extents */
    int64_t *strides;     /* ndim strides in elements; NULL = row-major */
    uint64_t byte_offset; /* added to data before the first element */
} IntentTensor; /* DLTensor */

/* ---- status codes ------------------------------------------------------------- */

typedef enum IntentStatus {
    INTENT_OK = 0,
    INTENT_E_NULL = -1,     /* null descriptor, or null data with a non-zero element count */
    INTENT_E_DTYPE = -2,    /* wrong dtype (code, bits or lanes) */
    INTENT_E_RANK = -3,     /* wrong number of dimensions */
    INTENT_E_SHAPE = -4,    /* extent mismatch (named, literal, broadcast) */
    INTENT_E_STRIDE = -5,   /* invalid stride, e.g. zero stride on a written axis */
    INTENT_E_BOUNDS = -6,   /* index or subregion out of range */
    INTENT_E_DOMAIN = -7,   /* invalid domain, e.g. step <= 0 */
    INTENT_E_ALLOC = -8,    /* out of memory */
    INTENT_E_DEVICE = -9,   /* a tensor not on the CPU */
    INTENT_E_INTERNAL = -10, /* internal runtime failure */
    INTENT_E_SANITIZER = -11, /* a sanitizer found a violation (e.g. --sanitize=order) */
    INTENT_E_ALIAS = -12     /* written tensors that overlap each other or themselves */
} IntentStatus;

/* ---- errors ------------------------------------------------------------------- */

/* Message of the last failure on the calling thread, whichever intentc library in the
 * process set it; "" when there was none.
 * The pointer stays valid for the thread's lifetime; the text changes with the
 * next failure on that thread. */
INTENT_API const char *intent_last_error(void);

/* Formats a message (printf syntax) into the calling thread's error buffer,
 * truncating it if it does not fit, and returns `code`. */
INTENT_API int32_t intent_error(int32_t code, const char *fmt, ...) INTENT_PRINTF_FORMAT(2, 3);

/* Empties the calling thread's error message. */
INTENT_API void intent_clear_error(void);

/* ---- argument checks ---------------------------------------------------------- */

/* Validates tensor parameter `param` of `kernel`: non-null descriptor, device
 * {INTENT_DEVICE_CPU, 0}, `ndim` dimensions, dtype (`code`, `bits`, 1 lane), non-null
 * shape, extents >= 0 whose product fits in int64, non-null data when there are
 * elements, every element's byte address computable without overflowing 64 bits
 * (INTENT_E_SHAPE) and, if `writable`, no zero stride on an axis whose extent exceeds 1.
 * On success stores the first element's address in *data, the extents in
 * shape[0..ndim) and the strides in elements in strides[0..ndim) (row-major
 * compact strides when t->strides is NULL), and returns INTENT_OK. On failure
 * returns the status code, sets the message and writes nothing. */
INTENT_API int32_t intent_check_tensor(const IntentTensor *t, const char *kernel, const char *param,
                                       int32_t ndim, uint8_t code, uint8_t bits, int32_t writable,
                                       void **data, int64_t *shape, int64_t *strides);

/* One tensor argument after intent_check_tensor accepted it: what
 * intent_check_aliasing reads (and, for a copied input, rewrites). */
typedef struct IntentArgView {
    const char *name;      /* the parameter's name, for messages */
    void *data;            /* the first element's address */
    const int64_t *shape;  /* ndim extents */
    int64_t *strides;      /* ndim strides in elements */
    int32_t ndim;
    int32_t bits;          /* bits of storage per element: 4 (f4e2m1, packed) or a multiple of 8 */
    int32_t written;       /* mut parameter or returned tensor */
    int32_t copy;          /* set by intent_check_aliasing: the view now points at a copy */
} IntentArgView;

/* The aliasing rule of docs/abi.md, over a kernel's `count` checked tensor arguments:
 * - a written view whose strides make two of its indices address one element, or two
 *   written views whose byte ranges overlap: INTENT_E_ALIAS naming both, nothing
 *   allocated or written;
 * - a read-only view whose byte range overlaps a written one's is copied (one
 *   allocation, stored in *scratch, to be released with intent_free when the kernel
 *   returns) and its data and strides are pointed at the copy, so that every input is
 *   read as it was before any output is written.
 * Without overlap the cost is a comparison of address ranges and *scratch is NULL. */
INTENT_API int32_t intent_check_aliasing(const char *kernel, int32_t count, IntentArgView *views,
                                         void **scratch);

/* ---- parallelism ---------------------------------------------------------------- */

/* Runs the indices [begin, end); returns 0 or a status (after intent_error). */
typedef int32_t (*intent_task_fn)(void *closure, int64_t begin, int64_t end);

/* Runs fn over [0, n) split into contiguous, non-empty sub-ranges on the thread
 * pool; the calling thread takes part. Which thread runs which index, and how
 * the range is split, is unspecified. Returns 0, or the status of the failing
 * sub-range with the smallest begin, whose message (or, if the task left none,
 * a generic one) becomes the calling thread's last error; a successful call
 * leaves that message as it was. Sub-ranges that start after a failing one may
 * be skipped. n <= 0 returns 0 without calling fn; n == 1, one thread, a call
 * from inside a task, and a call made while another application thread's job
 * occupies the pool all run fn(closure, 0, n) inline on the calling thread.
 * With a backend installed (intent_set_parallel_backend), every call with
 * n > 0 goes to it instead. */
INTENT_API int32_t intent_parallel_for(int64_t n, intent_task_fn fn, void *closure);

/* Threads a parallel_for uses: the last intent_set_num_threads(n > 0), else the
 * INTENT_NUM_THREADS environment variable when it is a positive integer (read
 * once), else the number of CPUs this process may run on. */
INTENT_API int32_t intent_get_num_threads(void);

/* Sets the thread count for later parallel_for calls; n <= 0 restores the default. */
INTENT_API void intent_set_num_threads(int32_t n);

/* A replacement for the built-in pool (like Halide's do_par_for): it must run
 * fn over all of [0, n) and return 0 or a failing status. */
typedef int32_t (*intent_parallel_backend)(int64_t n, intent_task_fn fn, void *closure);

/* Installs `backend` for later parallel_for calls; NULL restores the built-in pool. */
INTENT_API void intent_set_parallel_backend(intent_parallel_backend backend);

/* ---- memory ----------------------------------------------------------------------- */

/* 64-byte aligned memory; 0 bytes gives a valid, unique pointer. Returns NULL (and
 * sets an INTENT_E_ALLOC message) when out of memory. Release with intent_free. */
INTENT_API void *intent_alloc(size_t bytes);

/* Releases memory from intent_alloc; NULL is ignored. */
INTENT_API void intent_free(void *p);

/* ---- identification ---------------------------------------------------------------- */

/* "intent-runtime 1" */
INTENT_API const char *intent_runtime_version(void);

/* ---- sanitizers ------------------------------------------------------------------ */

/* Copies of tensors' elements, used by kernels built with --sanitize=order to run their
 * body in two orders of points and compare what they wrote. */
typedef struct IntentSnapshot IntentSnapshot;
INTENT_API IntentSnapshot *intent_snapshot(int32_t count, IntentTensor *const *tensors);
INTENT_API void intent_snapshot_restore(const IntentSnapshot *s, int32_t count, IntentTensor *const *tensors);
/* 0 when every element is unchanged, else INTENT_E_SANITIZER with a message naming the
 * parameter (from `names`), the element's coordinates and both values. */
INTENT_API int32_t intent_snapshot_compare(const IntentSnapshot *s, int32_t count, IntentTensor *const *tensors,
                                           const char *kernel, const char *const *names);
INTENT_API void intent_snapshot_free(IntentSnapshot *s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* INTENT_RUNTIME_H */
