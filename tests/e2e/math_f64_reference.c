/* Reference values for the f64 accuracy sweep (tests/e2e/math_f64_sweep.py): each math
   function in x86-64's 80-bit long double (64-bit significand, 11 bits more than f64),
   over arrays. The sweep uses these to screen millions of inputs and re-measures the worst
   ones against mpmath. */
#include <math.h>
#include <string.h>

typedef long double ld;

static ld sigmoidl(ld x) { return 1.0L / (1.0L + expl(-x)); }
static ld softplusl(ld x) { return x > 40 ? x + log1pl(expl(-x)) : log1pl(expl(x)); }
static ld rsqrtl(ld x) { return 1.0L / sqrtl(x); }
static ld cbrt_l(ld x) { return cbrtl(x); }
static ld lgamma_l(ld x) { return lgammal(x); }

typedef ld (*unary)(ld);
typedef ld (*binary)(ld, ld);

static unary find_unary(const char *name) {
    static const struct { const char *n; unary f; } t[] = {
        {"sin", sinl}, {"cos", cosl}, {"tan", tanl}, {"asin", asinl}, {"acos", acosl}, {"atan", atanl},
        {"sinh", sinhl}, {"cosh", coshl}, {"asinh", asinhl}, {"acosh", acoshl}, {"atanh", atanhl},
        {"exp2", exp2l}, {"expm1", expm1l}, {"log2", log2l}, {"log10", log10l}, {"log1p", log1pl},
        {"rsqrt", rsqrtl}, {"cbrt", cbrt_l}, {"erf", erfl}, {"erfc", erfcl}, {"lgamma", lgamma_l},
        {"sigmoid", sigmoidl}, {"softplus", softplusl}, {"exp", expl}, {"log", logl}, {"tanh", tanhl}};
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].n, name)) return t[i].f;
    return 0;
}

static binary find_binary(const char *name) {
    if (!strcmp(name, "atan2")) return atan2l;
    if (!strcmp(name, "hypot")) return hypotl;
    if (!strcmp(name, "pow")) return powl;
    return 0;
}

/* out[i] = name(x[i]) or name(x[i], y[i]); returns 0, or -1 for an unknown name */
int reference(const char *name, const double *x, const double *y, long n, ld *out) {
    unary u = find_unary(name);
    binary b = find_binary(name);
    if (!u && !b) return -1;
    for (long i = 0; i < n; i++) out[i] = u ? u(x[i]) : b(x[i], y[i]);
    return 0;
}
