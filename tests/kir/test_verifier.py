"""The KIR verifier rejects invalid IR: hand-written KIR text, each case one mistake away
from a module that verifies (so the error is about that mistake)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.driver import frontend  # noqa: E402
from intentc.kir.ops import VerifyError  # noqa: E402
from intentc.kir.parser import KirSyntaxError, parse_module  # noqa: E402
from intentc.kir.printer import print_module  # noqa: E402
from intentc.kir.verifier import verify_module  # noqa: E402

VALID = """
module @m

fn @twice(%v: f32) -> (f32) {
  %two:f32 = const() {"value": 2.0}
  %r:f32 = mul(%v, %two)
  return(%r)
}

kernel @k(%x: tensor<f32[?]> ["N"], %out: tensor<f32[?]> mut ["N"], %a: f32) -> () {
  %N:index = dim(%x) {"axis": 0}
  %z:index = const() {"value": 0}
  %one:index = const() {"value": 1}
  %d:domain = domain(%z, %N, %one)
  parallel(%d) {
    ^(%i:index)
    %v:f32 = load(%x, %i)
    %w:f32 = mul(%v, %a)
    %t:f32 = call(%w) {"callee": "twice"}
    store(%out, %i, %t)
    yield()
  }
  %s0:f32 = const() {"value": 0.0}
  %s:f32 = for(%d, %s0) {
    ^(%j:index, %acc:f32)
    %e:f32 = load(%x, %j)
    %n:f32 = add(%acc, %e)
    yield(%n)
  }
  %pos:bool = cmp(%s, %s0) {"pred": "gt"}
  %m:f32 = if(%pos) {
    ^()
    yield(%s)
  } {
    ^()
    yield(%s0)
  }
  store(%out, %z, %m)
  return()
}
"""


def _mutate(old: str, new: str, count: int = 1) -> str:
    assert VALID.count(old) >= count, old
    return VALID.replace(old, new, count)


def test_the_base_module_verifies_and_round_trips():
    module = parse_module(VALID)
    verify_module(module)
    text = print_module(module)
    assert print_module(parse_module(text)) == text


# (case, KIR text, words the VerifyError message must contain)
INVALID = [
    ("use_before_def",
     _mutate('    %v:f32 = load(%x, %i)\n    %w:f32 = mul(%v, %a)\n',
             '    %w:f32 = mul(%v, %a)\n    %v:f32 = load(%x, %i)\n'),
     ["'mul'", "does not dominate"]),
    ("use_outside_its_region",
     _mutate('  %s0:f32 = const() {"value": 0.0}\n', '  %s0:f32 = add(%v, %v)\n'),
     ["'add'", "does not dominate"]),
    ("missing_terminator_in_region",
     _mutate('    store(%out, %i, %t)\n    yield()\n', '    store(%out, %i, %t)\n'),
     ["terminator"]),
    ("missing_return",
     _mutate('  store(%out, %z, %m)\n  return()\n', '  store(%out, %z, %m)\n'),
     ["return"]),
    ("terminator_not_last",
     _mutate('    yield(%n)\n', '    yield(%n)\n    %late:f32 = add(%n, %n)\n'),
     ["'yield'", "last"]),
    ("yield_type_mismatch",
     _mutate('    yield(%n)\n', '    yield(%j)\n'),
     ["'for'", "yield must pass the carries"]),
    ("if_branches_yield_different_types",
     _mutate('    yield(%s0)\n', '    yield(%z)\n'),
     ["'if'", "both branches"]),
    ("parallel_with_carries",
     _mutate('    store(%out, %i, %t)\n    yield()\n', '    store(%out, %i, %t)\n    yield(%t)\n'),
     ["'parallel'", "P2"]),
    ("parallel_with_results",
     _mutate('  parallel(%d) {', '  %bad:f32 = parallel(%d) {'),
     ["'parallel'", "P2"]),
    ("parallel_over_a_scalar",
     _mutate('  parallel(%d) {', '  parallel(%a) {'),
     ["'parallel'", "domains"]),
    ("return_inside_parallel",
     _mutate('    store(%out, %i, %t)\n    yield()\n', '    store(%out, %i, %t)\n    return()\n'),
     ["P4"]),
    ("unknown_op",
     _mutate('    %w:f32 = mul(%v, %a)\n', '    %w:f32 = frobnicate(%v, %a)\n'),
     ["unknown op 'frobnicate'"]),
    ("binary_operand_types_differ",
     _mutate('    %w:f32 = mul(%v, %a)\n', '    %w:f32 = mul(%v, %i)\n'),
     ["'mul'", "operand types differ", "f32", "index"]),
    ("float_only_op_on_integers",
     _mutate('  %N:index = dim(%x) {"axis": 0}\n',
             '  %N:index = dim(%x) {"axis": 0}\n  %q:index = div(%N, %N)\n'),
     ["'div'", "float"]),
    ("store_value_dtype",
     _mutate('    store(%out, %i, %t)\n', '    store(%out, %i, %i)\n'),
     ["'store'", "dtype"]),
    ("load_index_count",
     _mutate('    %v:f32 = load(%x, %i)\n', '    %v:f32 = load(%x, %i, %i)\n'),
     ["'load'", "indices"]),
    ("load_result_type",
     _mutate('    %v:f32 = load(%x, %i)\n', '    %v:f64 = load(%x, %i)\n'),
     ["'load'"]),
    ("if_condition_not_bool",
     _mutate('  %m:f32 = if(%pos) {', '  %m:f32 = if(%s) {'),
     ["'if'", "bool"]),
    ("cmp_result_not_bool",
     _mutate('  %pos:bool = cmp(%s, %s0) {"pred": "gt"}', '  %pos:f32 = cmp(%s, %s0) {"pred": "gt"}'),
     ["'cmp'"]),
    ("cmp_unknown_predicate",
     _mutate('{"pred": "gt"}', '{"pred": "bigger"}'),
     ["'cmp'", "predicate"]),
    ("domain_bounds_not_index",
     _mutate('  %d:domain = domain(%z, %N, %one)', '  %d:domain = domain(%z, %a, %one)'),
     ["'domain'", "index"]),
    ("dim_axis_out_of_range",
     _mutate('  %N:index = dim(%x) {"axis": 0}', '  %N:index = dim(%x) {"axis": 1}'),
     ["'dim'", "axis"]),
    ("call_of_unknown_function",
     _mutate('{"callee": "twice"}', '{"callee": "thrice"}'),
     ["@thrice"]),
    ("call_operand_type",
     _mutate('    %t:f32 = call(%w) {"callee": "twice"}', '    %t:f32 = call(%i) {"callee": "twice"}'),
     ["@twice", "index"]),
    ("return_types_differ",
     _mutate('  return(%r)\n', '  return(%two, %r)\n'),
     ["'return'"]),
    ("undeclared_attribute",
     _mutate('    %v:f32 = load(%x, %i)\n', '    %v:f32 = load(%x, %i) {"inbound": [true]}\n'),
     ["'load'", "undeclared attribute", "'inbound'"]),
    ("attribute_of_the_wrong_type",
     _mutate('    %v:f32 = load(%x, %i)\n', '    %v:f32 = load(%x, %i) {"inbounds": true}\n'),
     ["'load'", "attribute 'inbounds'", "a list, each item a bool", "True"]),
    ("attribute_item_of_the_wrong_type",
     _mutate('  %N:index = dim(%x) {"axis": 0}', '  %N:index = dim(%x) {"axis": false}'),
     ["'dim'", "attribute 'axis'", "an int"]),
    ("required_attribute_missing",
     _mutate('    %t:f32 = call(%w) {"callee": "twice"}', '    %t:f32 = call(%w)'),
     ["'call'", "needs a 'callee' attribute"]),
    ("operand_count",
     _mutate('    %w:f32 = mul(%v, %a)\n', '    %w:f32 = mul(%v, %a, %a)\n'),
     ["'mul'", "expects 2 operands, has 3"]),
    ("operand_type_of_a_declared_operand",
     _mutate('  %d:domain = domain(%z, %N, %one)\n  parallel(%d) {',
             '  %d:domain = domain(%z, %N, %one)\n  %bad:index = dom_len(%N)\n  parallel(%d) {'),
     ["'dom_len'", "operand 'domain' must be a domain", "index"]),
    ("broadcast_map_not_increasing",
     _mutate('  %s0:f32 = const() {"value": 0.0}\n',
             '  %s0:f32 = const() {"value": 0.0}\n'
             '  %bx:tensor<f32[?, ?]> = broadcast(%x, %N, %N) {"map": [2]}\n'),
     ["'broadcast'", "map"]),
]


@pytest.mark.parametrize("case, text, words", INVALID, ids=[c for c, _, _ in INVALID])
def test_invalid_kir_raises_verify_error(case, text, words):
    module = parse_module(text)  # each text is well formed; only the verifier can object
    with pytest.raises(VerifyError) as info:
        verify_module(module)
    message = str(info.value)
    for word in words:
        assert word in message, f"{case}: {word!r} not in {message!r}"


def test_undefined_value_is_a_syntax_error():
    with pytest.raises(KirSyntaxError, match="undefined value %nowhere"):
        parse_module(_mutate('    %w:f32 = mul(%v, %a)\n', '    %w:f32 = mul(%v, %nowhere)\n'))


def test_reordered_sample_kir_fails_to_verify():
    """Moving a use of a sample's KIR before its definition breaks dominance."""
    module = frontend((REPO / "samples" / "saxpy.intent").read_text(), "saxpy.intent")
    verify_module(module)
    ops = module.kernels[0].body.ops
    users = [k for k, op in enumerate(ops) if op.operands and any(
        v is r for v in op.operands for d in ops[:k] for r in d.results)]
    k = users[-1]
    definer = max(j for j in range(k) if any(r in ops[k].operands for r in ops[j].results))
    ops.insert(definer, ops.pop(k))
    with pytest.raises(VerifyError, match="does not dominate"):
        verify_module(module)
