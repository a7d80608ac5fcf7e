"""Intent programs shared by the region-operation tests (test_regions.py,
test_laws_sanitizer.py): lawful helpers of a linear recurrence (affine maps) and of a
running maximum with its position, with a kernel each."""

AFFINE_AND_RUNNING_MAX = """
@intent.fn
def affine(a: (f32, f32), b: (f32, f32)) -> (f32, f32):
    return (a[0] * b[0], a[1] * b[0] + b[1])

@intent.fn
def affine_summary(a: f32[S], b: f32[S]) -> (f32, f32):
    return I.reduce((a, b), combine=affine, identity=(1.0, 0.0), ordered=True)

@intent.fn
def affine_apply(s: (f32, f32), h: f32) -> f32:
    return s[0] * h + s[1]

@intent.fn
def affine_emit(a: f32[S], b: f32[S], h: f32) -> f32[S]:
    p, q = I.scan((a, b), combine=affine, identity=(1.0, 0.0), init=(1.0, h))
    return q

@intent.kernel
def linear_recurrence(a: f32[N], b: f32[N], h0: f32, last: mut f32[1]) -> f32[N]:
    h, final = I.region_scan(a.axis(0), (a, b), summarize=affine_summary, combine=affine, identity=(1.0, 0.0),
                             apply=affine_apply, emit=affine_emit, init=h0)
    last[0] = final
    return h

@intent.fn
def best(a: (i64, index), b: (i64, index)) -> (i64, index):
    take = b[0] > a[0]
    return (I.where(take, b[0], a[0]), I.where(take, b[1], a[1]))

@intent.fn
def best_summary(x: i64[S], at: index[S]) -> (i64, index):
    return I.reduce((x, at), combine=best, identity=(-9223372036854775808, -1), ordered=True)

@intent.fn
def best_apply(s: (i64, index), st: (i64, index)) -> (i64, index):
    return best(st, s)

@intent.fn
def best_emit(x: i64[S], at: index[S], st: (i64, index)) -> (i64[S], index[S]):
    return I.scan((x, at), combine=best, identity=(-9223372036854775808, -1), init=st)

@intent.kernel
def running_max(x: i64[N]) -> (i64[N], index[N]):
    at = I.indices(x.axis(0))
    m, i, fm, fi = I.region_scan(x.axis(0), (x, at), summarize=best_summary, combine=best,
                                 identity=(-9223372036854775808, -1), apply=best_apply, emit=best_emit,
                                 init=(-9223372036854775808, -1))
    return (m, i)
"""
