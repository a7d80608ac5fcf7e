"""A deterministic generator of hostile Intent sources for the front end.

``case(index)`` is a pure function of the index (its random generator is seeded with
``f"{SEED}:{index}"``, which Python hashes the same way in every process), so any case
a run reports can be rebuilt alone: ``hostile.case(1234)``. Each case is one of the
``KINDS``, drawn in fixed proportions:

- ``mutant``: a real program (samples, KIR test programs, golden diagnostic cases) with
  1-4 token edits: deletion, duplication, swap, replacement, insertion of an Intent
  fragment or of random text, truncation, indentation changes, a line duplicated or removed;
- ``truncated``: a program cut at a random character;
- ``bytes``: a program's UTF-8 bytes with 1-8 bytes overwritten, inserted or deleted
  (so most are not UTF-8 any more): it goes through the byte decoder first;
- ``nesting``: one expression or block of a program nested 1-6000 levels deep (brackets,
  calls, subscripts, unary operators, operator chains, comparison chains, if/elif chains,
  nested blocks), around and far beyond the nesting limit;
- ``long_line``: a statement, comment, string, name or literal of 10^3-10^6 characters;
- ``literal``: a number literal built from digits, underscores, base prefixes, points and
  exponents, most of them malformed, in place of one literal of a program;
- ``whitespace``: form feeds, vertical tabs, lone carriage returns, CRLF line ends, NUL,
  U+00A0, U+2028, U+2029, U+200B, U+FEFF, tabs mixed into indentation;
- ``unicode``: letters, combining marks, wide and right-to-left characters, emoji and
  lone surrogates in names, strings, comments and between tokens;
- ``garbage``: grammar-aware token soup: statements made of the grammar's keywords,
  operators, brackets, names and literals, with line breaks and indentation, at random.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEED = "intentc-hostile-1"


def _corpus(diagnostics: bool = True) -> list[str]:
    paths = sorted(REPO.glob("samples/*.intent")) + sorted((REPO / "tests" / "kir").glob("*.intent"))
    if diagnostics:
        paths += sorted((REPO / "tests" / "diagnostics").glob("*.intent"))
    sources = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        # Check lines and comments only make the mutants longer; keep the program.
        lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        sources.append("\n".join(lines) + "\n")
    return sources


CORPUS = _corpus()
VALID = _corpus(diagnostics=False)  # programs that compile: the base of every kind but "mutant"
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9_.]*|\s+|\*\*|//|<<|>>|<=|>=|==|!=|->|.", re.S)
FRAGMENTS = [
    "(", ")", "[", "]", ":", ",", ".", "=", "+", "-", "*", "/", "//", "%", "**", "<<", "&", "~", "@", "#",
    "\\", "\"", "'", "\n", "\t", "\r", "\f", "\x00", "\ufeff", "\u2028", "é", "λ", "∑", "😀",
    "for", "in", "if", "elif", "else", "while", "break", "continue", "return", "pass", "def", "mut", "not",
    "and", "or", "True", "False", "import intent as I", "@intent.kernel", "@intent.fn",
    "0", "-1", "012", "1e999", "0x" + "f" * 40, "9" * 40, "10 ** 10 ** 10", "1 << 100000", "2.5",
    "I.parallel(x.axis(0))", "I.domain(0, N, 0)", "I.domain(0, N, -1)", "x.axis(0)", "x.axis(7)", "x[i]",
    "x[i, i]", "x[0:2]", "x[::2]", "x.shape", "len(x)", "I.sum(x)", "I.cumsum(x)", "I.argmax(x)",
    "I.reshape(x, [2, -1])", "I.transpose(x)", "I.join(x, x)", "I.indices(x.axis(0))", "I.cast(x, i8)",
    "I.where(x > 0.0, x, 0.0)", "I.exp(x)", "enumerate(x.axis(0))", "(1, 2)", "()", "f32", "i8", "index",
    "bool", "f16", "u64", "f32[N]", "f32[4]", "f32[N, M]", "-" * 300 + "x", "(" * 60 + "x" + ")" * 60,
    "\n    ", "\n        ", "\n  ", "\n\t",
]
KEYWORDS = ["def", "if", "elif", "else", "for", "in", "while", "return", "pass", "break", "continue", "import", "as",
            "not", "and", "or", "True", "False", "mut", "@intent.kernel", "@intent.fn", "I", "intent"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "~", "<", ">", "==", "!=", "<=", ">=",
             "=", "+=", "-=", "**=", ">>=", "->", ":", ",", ".", "(", ")", "[", "]", "{", "}", "@", ";", "!", "?",
             "$", "`"]
NAMES = ["x", "y", "o", "i", "j", "N", "M", "K", "f32", "i32", "index", "bool", "I.parallel", "I.domain", "I.sum",
         "x.axis", "x.shape", "len", "enumerate", "I.cast", "I.where", "I.abs", "k", "_", "__x__"]
SPECIAL_WHITESPACE = ["\f", "\v", "\r", "\r\n", "\x00", "\u00a0", "\u2028", "\u2029", "\u200b", "\ufeff", "\t",
                      "\x1b[2J", "\x85", "\u3000"]
UNICODE = ["é", "λ", "Ω", "∑", "中文", "😀", "e\u0301", "\u0301", "\u202e", "שלום", "ｘ", "𝑥", "\ud800", "\udcff",
           "ß", "ﬁ", "Å", "\u200d"]


@dataclass(frozen=True)
class Case:
    index: int
    kind: str
    text: str | None = None  # the source (None when the case is bytes)
    data: bytes | None = None  # the source's bytes, for the "bytes" kind

    def describe(self, limit: int = 300) -> str:
        shown = repr(self.text if self.text is not None else self.data)
        return f"case {self.index} ({self.kind}, {len(shown)} chars): {shown[:limit]}{'...' if len(shown) > limit else ''}"


# Kinds and their weights (per 100 cases).
KINDS = {"mutant": 34, "truncated": 6, "bytes": 8, "nesting": 10, "long_line": 3, "literal": 10, "whitespace": 10,
         "unicode": 7, "garbage": 12}
_WHEEL = [kind for kind, weight in KINDS.items() for _ in range(weight)]


def case(index: int) -> Case:
    rng = random.Random(f"{SEED}:{index}")
    kind = _WHEEL[rng.randrange(len(_WHEEL))]
    source = rng.choice(CORPUS if kind == "mutant" else VALID)
    if kind == "bytes":
        return Case(index, kind, data=_flip_bytes(rng, source))
    return Case(index, kind, text=_GENERATORS[kind](rng, source))


def _mutant(rng: random.Random, source: str) -> str:
    tokens = TOKEN.findall(source)
    for _ in range(rng.choice([1, 1, 2, 3, 4])):
        if not tokens:
            break
        where = rng.randrange(len(tokens))
        kind = rng.choice(["delete", "duplicate", "swap", "replace", "fragment", "text", "truncate", "indent",
                           "dedent", "line"])
        if kind == "delete":
            del tokens[where:where + rng.randint(1, 3)]
        elif kind == "duplicate":
            tokens[where:where] = tokens[where:where + rng.randint(1, 4)]
        elif kind == "swap":
            other = rng.randrange(len(tokens))
            tokens[where], tokens[other] = tokens[other], tokens[where]
        elif kind == "replace":
            tokens[where] = rng.choice(tokens)
        elif kind == "fragment":
            tokens.insert(where, rng.choice(FRAGMENTS))
        elif kind == "text":
            tokens.insert(where, "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x2FFF)]))
                                         for _ in range(rng.randint(1, 6))))
        elif kind == "truncate":
            tokens = tokens[:where]
        elif kind in ("indent", "dedent"):
            breaks = [k for k, t in enumerate(tokens) if "\n" in t]
            if breaks:
                k = breaks[where % len(breaks)]
                head, _, indent = tokens[k].rpartition("\n")
                width = rng.randint(1, 8)
                indent = indent + " " * width if kind == "indent" else indent[:max(0, len(indent) - width)]
                tokens[k] = f"{head}\n{indent}"
        else:
            lines = "".join(tokens).split("\n")
            k = where % len(lines)
            if rng.random() < 0.5:
                lines.insert(k, lines[k])
            else:
                del lines[k]
            tokens = TOKEN.findall("\n".join(lines))
    return "".join(tokens)


def _truncated(rng: random.Random, source: str) -> str:
    return source[:rng.randrange(len(source) + 1)]


def _flip_bytes(rng: random.Random, source: str) -> bytes:
    data = bytearray(source.encode("utf-8"))
    for _ in range(rng.randint(1, 8)):
        where = rng.randrange(len(data) + 1)
        value = rng.choice([rng.randrange(256), rng.randrange(0x80, 0x100), 0, 0xFF, 0xC0, 0xE9, 0xED])
        action = rng.random()
        if action < 0.5 and where < len(data):
            data[where] = value
        elif action < 0.8:
            data.insert(where, value)
        elif where < len(data):
            del data[where]
    return bytes(data)


_STATEMENT = re.compile(r"^( +)(\w[\w\[\], ]*) = (.+)$", re.M)


def _statement_site(rng: random.Random, source: str):
    """(prefix, indent, target, expression, suffix) of one assignment of ``source``, or None."""
    sites = list(_STATEMENT.finditer(source))
    if not sites:
        return None
    match = rng.choice(sites)
    return source[:match.start()], match.group(1), match.group(2), match.group(3), source[match.end():]


def _nesting(rng: random.Random, source: str) -> str:
    depth = rng.choice([rng.randint(1, 99), rng.randint(95, 110), rng.randint(100, 400), rng.randint(400, 6000)])
    site = _statement_site(rng, source)
    if site is None:
        return source + "(" * depth
    prefix, indent, target, expression, suffix = site
    form = rng.choice(["parens", "calls", "subscripts", "unary", "chain", "compare", "ifs", "elifs", "whiles",
                       "mixed", "unclosed"])
    if form == "parens":
        expression = "(" * depth + expression + ")" * depth
    elif form == "calls":
        expression = "I.abs(" * depth + expression + ")" * depth
    elif form == "subscripts":
        expression = "x[" * depth + "0" + "]" * depth
    elif form == "unary":
        expression = "".join(rng.choice("-+~") for _ in range(depth)) + expression
    elif form == "chain":
        op = rng.choice([" + ", " * ", " - ", " and ", " or ", " | ", " ** "])
        expression = op.join([expression] * (depth + 1))
    elif form == "compare":
        expression = " < ".join([expression] * (depth + 1))
    elif form == "mixed":
        parts = [rng.choice(["(", "I.abs(", "-", "x["]) for _ in range(depth)]
        closing = {"(": ")", "I.abs(": ")", "-": "", "x[": "]"}
        expression = "".join(parts) + expression + "".join(closing[p] for p in reversed(parts))
    elif form == "unclosed":
        expression = rng.choice(["(", "[", "I.abs("]) * depth + expression
    if form in ("ifs", "whiles"):
        head = "if True:" if form == "ifs" else "while False:"
        depth = min(depth, 300)  # the indentation alone grows as depth squared
        block = "".join(f"{indent}{' ' * (4 * k)}{head}\n" for k in range(depth))
        statement = f"{block}{indent}{' ' * (4 * depth)}{target} = {expression}"
    elif form == "elifs":
        depth = min(depth, 1000)
        statement = f"{indent}if False:\n{indent}    pass\n" + \
            "".join(f"{indent}elif False:\n{indent}    pass\n" for _ in range(depth)) + \
            f"{indent}else:\n{indent}    {target} = {expression}"
    else:
        statement = f"{indent}{target} = {expression}"
    return prefix + statement + suffix


def _long_line(rng: random.Random, source: str) -> str:
    length = rng.choice([1_000, 10_000, 60_000, 200_000, 1_000_000])
    site = _statement_site(rng, source)
    if site is None:
        return source + "x" * length
    prefix, indent, target, expression, suffix = site
    form = rng.choice(["sum", "list", "comment", "string", "name", "digits", "spaces", "call_args", "tuple"])
    if form == "sum":
        body = f"{expression}" + " + x[0]" * (length // 7)
    elif form == "list":
        body = "[" + "0, " * (length // 3) + "]"
    elif form == "comment":
        body = expression + "  # " + "c" * length
    elif form == "string":
        body = '"' + "s" * length + '"'
    elif form == "name":
        body = "n" * length
    elif form == "digits":
        body = "7" * length
    elif form == "spaces":
        body = expression + " " * length + "+ 1"
    elif form == "call_args":
        body = "I.abs(" + ", ".join(["x"] * (length // 3)) + ")"
    else:
        body = ", ".join([expression] * max(1, length // max(1, len(expression) + 2)))
    return f"{prefix}{indent}{target} = {body}{suffix}"


_LITERAL = re.compile(r"(?<![\w.])[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9]+)?(?![\w.])")


WELL_FORMED = ["1_000", "0x_ff", "0xFF_FF", "0b1010", "0b_1", "1.5e3", "1_0.0_1", "1e-3", ".5", "5.", "0", "00",
               "0.0", "1E+2", "0_0", "12_34_56"]


def _odd_literal(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return rng.choice(WELL_FORMED)
    parts = []
    if rng.random() < 0.4:
        parts.append(rng.choice(["0x", "0X", "0b", "0B", "0o", "0", "00"]))
    for _ in range(rng.randint(0, 6)):
        parts.append(rng.choice(["_", "__", "0", "1", "7", "9", "f", "F", "e", "E", ".", "e+", "e-", "1" * 30,
                                 "9" * 400, "_1", "1_", "j", "L"]))
    text = "".join(parts) or "_"
    if not text[0].isdigit() and text[0] != ".":
        text = rng.choice(["0", "1", "."]) + text
    return text


def _literal(rng: random.Random, source: str) -> str:
    sites = list(_LITERAL.finditer(source))
    literal = _odd_literal(rng)
    if not sites:
        return source + literal
    match = rng.choice(sites)
    return source[:match.start()] + literal + source[match.end():]


def _insert_at_random(rng: random.Random, source: str, pieces: list[str], count: int) -> str:
    text = source
    for _ in range(count):
        where = rng.randrange(len(text) + 1)
        text = text[:where] + rng.choice(pieces) + text[where:]
    return text


def _whitespace(rng: random.Random, source: str) -> str:
    action = rng.random()
    if action < 0.15:
        return source.replace("\n", "\r\n")
    if action < 0.3:  # special whitespace in the indentation of some lines
        lines = source.split("\n")
        for k in rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 4))):
            width = len(lines[k]) - len(lines[k].lstrip(" "))
            cut = rng.randint(0, width)
            lines[k] = lines[k][:cut] + rng.choice(["\t", "\f", " \f", "\f\t", "\v", "\u00a0", "\t "]) + lines[k][cut:]
        return "\n".join(lines)
    if action < 0.45:  # right before a token the caret will point at
        return _insert_at_random(rng, source, [p + "$" for p in SPECIAL_WHITESPACE], 1)
    return _insert_at_random(rng, source, SPECIAL_WHITESPACE, rng.randint(1, 5))


def _unicode(rng: random.Random, source: str) -> str:
    if rng.random() < 0.5:  # inside a name, a string or a comment
        names = list(re.finditer(r"[A-Za-z_]\w*", source))
        if names:
            match = rng.choice(names)
            cut = rng.randint(match.start(), match.end())
            return source[:cut] + rng.choice(UNICODE) + source[cut:]
    if rng.random() < 0.3:
        return source + "# " + "".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 20))) + "\n" + \
            '    o[0] = "' + rng.choice(UNICODE) + '"\n'
    return _insert_at_random(rng, source, UNICODE, rng.randint(1, 4))


def _garbage(rng: random.Random, source: str) -> str:
    vocabulary = KEYWORDS + OPERATORS + NAMES + ["0", "1", "2.5", "1e9", "0x_", "'s'", '"t"', "#c"]
    lines = []
    if rng.random() < 0.7:
        lines.append("import intent as I")
    if rng.random() < 0.7:
        lines += ["", rng.choice(["@intent.kernel", "@intent.fn", "@intent.kernal"]),
                  "def k(" + rng.choice(["x: f32[N], o: mut f32[N]", "x: f32[N]", "", "x"]) + ")" +
                  rng.choice([":", " -> f32[N]:", ""])]
    for _ in range(rng.randint(1, 12)):
        indent = " " * rng.choice([0, 4, 4, 4, 8, 8, 12, 2, 3])
        lines.append(indent + " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 14))))
    return "\n".join(lines) + rng.choice(["\n", "", "\n\n"])


_GENERATORS = {"mutant": _mutant, "truncated": _truncated, "nesting": _nesting, "long_line": _long_line,
               "literal": _literal, "whitespace": _whitespace, "unicode": _unicode, "garbage": _garbage}
