"""Names that a compiled kernel exports to C: what a kernel or parameter may be called.

A kernel's name is a C function in every artifact (an ELF symbol, and a declaration in the
generated header); its parameters' names are C identifiers in that declaration. A name is
refused, with the reason and a rename, when it would

- be a C or C++ keyword, or a macro of the headers a program includes with the generated
  one (``NULL``, ``INT32_MAX``, ``errno``, ``linux`` under GNU dialects, ...): the header
  would not compile;
- be a type name the header uses (``int32_t``, ``IntentTensor``, ...), or belong to the
  runtime (``intent_*``, ``INTENT_*``, ``Intent*``): the header would not compile, or the
  kernel would replace a runtime function;
- (kernels) be a C library, POSIX or libm function or object, or a symbol the linker or the
  C start-up code defines (``strlen``, ``malloc``, ``exp``, ``main``, ``end``): the kernel
  would replace the library's function for the whole program, the runtime's own calls
  included, or the link would fail;
- (kernels) be reserved to the C implementation: a leading underscore; (parameters) a
  leading underscore followed by a capital letter or a second underscore.

The lists are fixed, not read from the machine, so a program is accepted or refused the
same way everywhere.
"""
from __future__ import annotations

import re

from intentc.diagnostics import error
from intentc.parse import ast

# C (C89 to C23) and C++ (to C++20) keywords and alternative tokens.
C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
_Alignas _Alignof _Atomic _BitInt _Bool _Complex _Decimal32 _Decimal64 _Decimal128 _Generic _Imaginary
_Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false nullptr static_assert
thread_local true typeof typeof_unqual
""".split())

CXX_KEYWORDS = frozenset("""
and and_eq asm bitand bitor catch char8_t char16_t char32_t class co_await co_return co_yield compl concept
const_cast consteval constinit decltype delete dynamic_cast explicit export friend mutable namespace new
noexcept not not_eq operator or or_eq private protected public reflexpr reinterpret_cast requires static_cast
template this throw try typeid typename using virtual wchar_t xor xor_eq
""".split())

# Object-like and function-like macros of the standard headers a C or C++ program commonly
# includes beside the generated header, and the GNU dialects' predefined system names.
MACROS = frozenset("""
NULL offsetof EOF BUFSIZ FILENAME_MAX FOPEN_MAX L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END _IOFBF _IOLBF
_IONBF stdin stdout stderr errno assert static_assert noreturn alignas alignof bool true false complex
imaginary I EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX MB_LEN_MAX CHAR_BIT CHAR_MIN CHAR_MAX SCHAR_MIN
SCHAR_MAX UCHAR_MAX SHRT_MIN SHRT_MAX USHRT_MAX INT_MIN INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX
LLONG_MIN LLONG_MAX ULLONG_MAX SIZE_MAX PTRDIFF_MIN PTRDIFF_MAX SIG_ATOMIC_MIN SIG_ATOMIC_MAX WCHAR_MIN
WCHAR_MAX WINT_MIN WINT_MAX WEOF FLT_MAX FLT_MIN FLT_EPSILON FLT_DIG FLT_RADIX FLT_ROUNDS DBL_MAX DBL_MIN
DBL_EPSILON DBL_DIG LDBL_MAX LDBL_MIN LDBL_EPSILON INFINITY NAN HUGE_VAL HUGE_VALF HUGE_VALL FP_NAN
FP_INFINITE FP_ZERO FP_SUBNORMAL FP_NORMAL FP_ILOGB0 FP_ILOGBNAN MATH_ERRNO MATH_ERREXCEPT math_errhandling
M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2 M_SQRT1_2
isnan isinf isfinite isnormal signbit fpclassify isgreater isgreaterequal isless islessequal islessgreater
isunordered va_start va_arg va_end va_copy va_list setjmp longjmp CLOCKS_PER_SEC TIME_UTC
EDOM ERANGE EILSEQ EINVAL ENOMEM EAGAIN EINTR EBADF EEXIST ENOENT EPERM EACCES EBUSY ENOSPC EPIPE ETIMEDOUT
SIGABRT SIGFPE SIGILL SIGINT SIGSEGV SIGTERM SIGKILL SIGHUP SIGPIPE SIGALRM SIGUSR1 SIGUSR2 SIGCHLD SIG_DFL
SIG_IGN SIG_ERR LC_ALL LC_COLLATE LC_CTYPE LC_MONETARY LC_NUMERIC LC_TIME
PTHREAD_MUTEX_INITIALIZER PTHREAD_COND_INITIALIZER PTHREAD_ONCE_INIT memory_order_relaxed
memory_order_acquire memory_order_release memory_order_acq_rel memory_order_seq_cst ATOMIC_VAR_INIT
linux unix i386 __linux__ __unix__ __GNUC__ __clang__ __cplusplus __STDC__ __STDC_VERSION__ __FILE__
__LINE__ __func__ __DATE__ __TIME__ __x86_64__ __aarch64__
""".split())

# Matches <stdint.h>'s limit and constant macros (INT8_MIN, UINT_LEAST16_MAX, INTMAX_C, ...).
_STDINT_MACRO = re.compile(r"U?INT(8|16|32|64|PTR|MAX|_LEAST(8|16|32|64)|_FAST(8|16|32|64))?_(MIN|MAX|C|WIDTH)")

# Type names the generated header and intent_runtime.h use, and the other standard typedefs.
TYPE_NAMES = frozenset("""
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t intmax_t uintmax_t
size_t ssize_t ptrdiff_t max_align_t wchar_t wint_t nullptr_t float_t double_t off_t time_t clock_t FILE
div_t ldiv_t lldiv_t fpos_t jmp_buf sig_atomic_t pthread_t pthread_mutex_t pthread_cond_t pthread_key_t
pthread_once_t
""".split())

# The runtime's own names: every intent_* function, INTENT_* macro and Intent* type belongs to it.
_RUNTIME_NAME = re.compile(r"(intent_|INTENT_|Intent[A-Z]).*|intent|INTENT")

# Functions and objects of the C library (C11 to C23), POSIX, libm and libpthread that
# a kernel symbol of the same name would replace for the whole program.
LIBC_SYMBOLS = frozenset("""
abort abs acos acosf acosh acoshf acoshl acosl aligned_alloc asctime asin asinf asinh asinhf asinhl asinl
at_quick_exit atan atan2 atan2f atan2l atanf atanh atanhf atanhl atanl atexit atof atoi atol atoll bsearch
btowc c16rtomb c32rtomb calloc cbrt cbrtf cbrtl ceil ceilf ceill clearerr clock copysign copysignf
copysignl cos cosf cosh coshf coshl cosl ctime difftime div erf erfc erfcf erfcl erff erfl exit exp exp2
exp2f exp2l expf expl expm1 expm1f expm1l fabs fabsf fabsl fclose fdim fdimf fdiml feclearexcept
fegetenv fegetexceptflag fegetround feholdexcept feof feraiseexcept ferror fesetenv fesetexceptflag
fesetround fetestexcept feupdateenv fflush fgetc fgetpos fgets fgetwc fgetws floor floorf floorl fma fmaf
fmal fmax fmaxf fmaxl fmin fminf fminl fmod fmodf fmodl fopen fprintf fputc fputs fputwc fputws fread
free freopen frexp frexpf frexpl fscanf fseek fsetpos ftell fwide fwprintf fwrite fwscanf getc getchar
getenv gets getwc getwchar gmtime hypot hypotf hypotl ilogb ilogbf ilogbl imaxabs imaxdiv isalnum isalpha
isblank iscntrl isdigit isgraph islower isprint ispunct isspace isupper iswalnum iswalpha iswblank
iswcntrl iswctype iswdigit iswgraph iswlower iswprint iswpunct iswspace iswupper iswxdigit isxdigit labs
ldexp ldexpf ldexpl ldiv lgamma lgammaf lgammal llabs lldiv llrint llrintf llrintl llround llroundf
llroundl localeconv localtime log log10 log10f log10l log1p log1pf log1pl log2 log2f log2l logb logbf
logbl logf logl lrint lrintf lrintl lround lroundf lroundl malloc mblen mbrlen mbrtoc16 mbrtoc32 mbrtowc
mbsinit mbsrtowcs mbstowcs mbtowc memchr memcmp memcpy memmove memset mktime modf modff modfl nan nanf
nanl nearbyint nearbyintf nearbyintl nextafter nextafterf nextafterl nexttoward nexttowardf nexttowardl
perror pow powf powl printf putc putchar puts putwc putwchar qsort quick_exit raise rand realloc remainder
remainderf remainderl remove remquo remquof remquol rename rewind rint rintf rintl round roundf roundl
scalbln scalblnf scalblnl scalbn scalbnf scalbnl scanf setbuf setlocale setvbuf signal sin sinf sinh
sinhf sinhl sinl snprintf sprintf sqrt sqrtf sqrtl srand sscanf strcat strchr strcmp strcoll strcpy
strcspn strerror strftime strlen strncat strncmp strncpy strpbrk strrchr strspn strstr strtod strtof
strtoimax strtok strtol strtold strtoll strtoul strtoull strtoumax strxfrm swprintf swscanf system tan
tanf tanh tanhf tanhl tanl tgamma tgammaf tgammal time timespec_get tmpfile tmpnam tolower toupper
towctrans towlower towupper trunc truncf truncl ungetc ungetwc vfprintf vfscanf vfwprintf vfwscanf
vprintf vscanf vsnprintf vsprintf vsscanf vswprintf vswscanf vwprintf vwscanf wcrtomb wcscat wcschr
wcscmp wcscoll wcscpy wcscspn wcsftime wcslen wcsncat wcsncmp wcsncpy wcspbrk wcsrchr wcsrtombs wcsspn
wcsstr wcstod wcstof wcstoimax wcstok wcstol wcstold wcstoll wcstombs wcstoul wcstoull wcstoumax wcsxfrm
wctob wctomb wctrans wctype wmemchr wmemcmp wmemcpy wmemmove wmemset wprintf wscanf
memccpy strdup strndup strnlen strtok_r strerror_r strsignal stpcpy stpncpy strcasecmp strncasecmp
index rindex bzero bcopy bcmp ffs memmem memrchr mempcpy rawmemchr strchrnul strsep explicit_bzero
posix_memalign memalign valloc pvalloc reallocarray malloc_usable_size
open close read write lseek pread pwrite dup dup2 pipe fork vfork execv execve execvp execl execlp wait
waitpid kill getpid getppid getuid geteuid getgid getegid setuid setgid sleep usleep nanosleep alarm pause
access chdir fchdir getcwd mkdir rmdir unlink link symlink readlink chmod fchmod chown stat fstat lstat
truncate ftruncate fsync fdatasync sync isatty ttyname sysconf pathconf fpathconf getopt optarg optind
opterr optopt environ getpagesize gethostname mmap munmap mprotect msync madvise mlock munlock shm_open
shm_unlink dlopen dlsym dlclose dlerror dladdr dl_iterate_phdr fcntl ioctl poll select socket bind
listen accept connect send recv sendto recvfrom shutdown getsockopt setsockopt socketpair getaddrinfo
freeaddrinfo setenv unsetenv putenv clearenv mkstemp mkdtemp tmpnam_r realpath basename dirname fnmatch
glob globfree opendir readdir closedir rewinddir fdopen fileno popen pclose getline getdelim dprintf
vdprintf asprintf vasprintf sigaction sigemptyset sigfillset sigaddset sigdelset sigismember sigprocmask
sigsuspend sigwait clock_gettime clock_settime clock_getres gettimeofday localtime_r gmtime_r ctime_r
asctime_r timegm strptime tzset random srandom drand48 erand48 lrand48 nrand48 mrand48 jrand48 srand48
rand_r ldexp10 exp10 exp10f sincos sincosf j0 j1 jn y0 y1 yn gamma lgamma_r finite isinff isnanf
significand drem scalb
pthread_create pthread_join pthread_detach pthread_exit pthread_self pthread_equal pthread_once
pthread_mutex_init pthread_mutex_destroy pthread_mutex_lock pthread_mutex_trylock pthread_mutex_unlock
pthread_cond_init pthread_cond_destroy pthread_cond_wait pthread_cond_timedwait pthread_cond_signal
pthread_cond_broadcast pthread_key_create pthread_key_delete pthread_getspecific pthread_setspecific
pthread_atfork pthread_sigmask pthread_setname_np pthread_getname_np pthread_attr_init pthread_kill
sched_yield sched_getaffinity sched_setaffinity
thrd_create thrd_join thrd_exit thrd_yield mtx_init mtx_lock mtx_unlock call_once tss_create tss_get
tss_set
main etext edata end
""".split())


def _reason(name: str, kind: str) -> str | None:
    """Why ``name`` cannot be a ``kind`` ("kernel" or "parameter") name in C, or None."""
    if name in C_KEYWORDS:
        return "is a C keyword"
    if name in CXX_KEYWORDS:
        return "is a C++ keyword"
    if _RUNTIME_NAME.fullmatch(name):
        return "belongs to the intentc runtime (intent_*, INTENT_* and Intent* are its names)"
    if name in TYPE_NAMES:
        return "is a C type name"
    if name in MACROS or _STDINT_MACRO.fullmatch(name):
        return "is a macro of the C headers a program includes"
    if kind == "kernel":
        if name.startswith("_"):
            return "begins with an underscore, which C reserves for its implementation at file scope"
        if name in LIBC_SYMBOLS:
            return ("is a function or object of the C library, POSIX or libm, or a symbol the linker defines; "
                    "a kernel of that name would replace it for the whole program")
    elif re.match(r"_[A-Z_]", name):
        return "begins with an underscore and a capital letter or a second underscore, which C reserves"
    return None


def check_exported_names(fn: ast.FunctionDef) -> None:
    """Refuse a kernel whose name, or one of whose parameters' names, C cannot take."""
    reason = _reason(fn.name, "kernel")
    if reason:
        raise error(f"kernel '{fn.name}' cannot be exported to C: the name {reason}", fn.name_span,
                    hint=f"rename the kernel, e.g. to '{_renamed(fn.name, 'k')}' (docs/abi.md, \"Names\")")
    for param in fn.params:
        reason = _reason(param.name, "parameter")
        if reason:
            raise error(f"parameter '{param.name}' of kernel '{fn.name}' cannot appear in the C header: the name "
                        f"{reason}", param.span,
                        hint=f"rename the parameter, e.g. to '{_renamed(param.name, 'p')}' (docs/abi.md, \"Names\")")


def _renamed(name: str, lead: str) -> str:
    """A suggestion that passes the checks: ``lead`` ("k" or "p") and an underscore before the
    name, without its leading underscores or the runtime's prefix."""
    stem = name.lstrip("_")
    if stem.lower().startswith("intent"):
        stem = stem[len("intent"):].lstrip("_")
    suggestion = f"{lead}_{stem or 'renamed'}"
    return suggestion if _reason(suggestion, "kernel") is None else f"{lead}_renamed"
