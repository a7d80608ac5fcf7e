"""The physical program of every sample and benchmark kernel, compared up to renaming.

A guard for refactors of the lowering whose output may rename variables but must not
change anything else (``tools/artifact_digests.py`` compares the artifacts' bytes, and
variable names reach those through the order of an outlined task's captured variables):

    python tools/physical_snapshots.py record DIR   # before: DIR/<source>.<options>.phys
    python tools/physical_snapshots.py check DIR    # after: identical, equal up to renaming, or different

Each source under samples/ and benchmarks/kernels/ is lowered (front end, every pass) under
each lowering option: plain, --sanitize=bounds, unique, laws, and both point orders of the
order sanitizer. Two programs are *equal up to renaming* when a one-to-one renaming of each
kernel's variables and buffers (parameters and message strings are kept) makes their texts
equal. Exit status 1 when any program differs otherwise.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from intentc.driver import frontend, read_source  # noqa: E402
from intentc.lower import program as P  # noqa: E402
from intentc.lower.physical_text import parse_program  # noqa: E402
from intentc.lower.pipeline import lower  # noqa: E402

OPTIONS = {"plain": {}, "bounds": {"sanitize": frozenset({"bounds"})},
           "unique": {"sanitize": frozenset({"unique"})}, "laws": {"sanitize": frozenset({"laws"})},
           "increasing": {"point_order": "increasing"}, "decreasing": {"point_order": "decreasing"}}
_STRING = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
_NAME = re.compile(r"[A-Za-z_]\w*")


def sources() -> list[Path]:
    return sorted(REPO.glob("samples/*.intent")) + sorted(REPO.glob("benchmarks/kernels/*.intent"))


def snapshot(path: Path, options: dict) -> str:
    rel = str(path.relative_to(REPO))
    try:
        return P.format_program(lower(frontend(read_source(rel), rel), **options))
    except Exception as exc:  # a refusal is part of the snapshot
        return f"error {type(exc).__name__}: {exc}\n"


def _local_names(kernel: P.Kernel) -> set[str]:
    names = set()
    for s in P.walk_stmts(kernel.body):
        names.update(v.name for v in P.stmt_defines(s))
        if isinstance(s, P.Alloc):
            names.add(s.tensor.name)
    return names


def canonical(text: str) -> str:
    """``text`` with each kernel's variables and buffers renamed in order of appearance."""
    if text.startswith("error "):
        return text
    kernels = {k.name: k for k in parse_program(text).kernels}
    chunks = re.split(r"(?m)^(?=kernel )", text)
    out = [chunks[0]]
    for chunk in chunks[1:]:
        local = _local_names(kernels[re.match(r"kernel ([\w.]+)\(", chunk).group(1)])
        mapping: dict[str, str] = {}

        def rename(match: re.Match) -> str:
            name = match.group(0)
            if name not in local:
                return name
            return mapping.setdefault(name, f"%{len(mapping)}")

        out.append("".join(part if _STRING.fullmatch(part) else _NAME.sub(rename, part)
                           for part in _STRING.split(chunk)))
    return "".join(out)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "check"):
        print(__doc__)
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    counts = {"identical": 0, "renamed": 0, "different": 0}
    for path in sources():
        for name, options in OPTIONS.items():
            file = folder / f"{path.parent.name}.{path.stem}.{name}.phys"
            text = snapshot(path, options)
            if argv[0] == "record":
                file.write_text(text, encoding="utf-8")
                continue
            before = file.read_text(encoding="utf-8")
            if before == text:
                counts["identical"] += 1
            elif canonical(before) == canonical(text):
                counts["renamed"] += 1
            else:
                counts["different"] += 1
                print(f"different: {path.relative_to(REPO)} ({name})")
    if argv[0] == "record":
        print(f"recorded {len(sources()) * len(OPTIONS)} programs in {folder}")
        return 0
    print(f"{counts['identical']} identical, {counts['renamed']} equal up to renaming, "
          f"{counts['different']} different")
    return 1 if counts["different"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
