"""Builds and exercises every sample: ``python samples/demo.py [SAMPLE ...] [--out DIR]``.

For each ``samples/*.intent`` it runs ``intentc build`` (timed), compiles and
runs the sample's C driver (``samples/c/<sample>_driver.c``) against the
generated header and shared library, and runs its Python check
(``samples/checks.py``) through ``intentc.load``.  It prints a table and exits
with status 1 if anything failed.  Works from any current directory.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (beside this file)

sys.path.insert(0, str(harness.REPO))
from checks import CHECKS  # noqa: E402

BUILD_TARGET_S = 1.0  # bench/TARGETS.md: `intentc build` of one sample, cold


def _cell(step: harness.Step | None, missing: str = "[dim]skipped[/]") -> str:
    if step is None:
        return missing
    colour = "green" if step.ok else "red"
    return f"[{colour}]{escape(step.line)}[/]"


def _missing_python_needs(source: Path) -> str | None:
    """Why the sample's Python check cannot run here, or None: kernels with microscaled or
    bf16 parameters pass them as ml_dtypes arrays (``pip install ".[mx]"``)."""
    text = source.read_text(encoding="utf-8")
    if not any(name in text for name in MX_AND_BF16):
        return None
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        return "needs ml_dtypes (pip install '.[mx]')"
    return None


MX_AND_BF16 = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1", "e8m0", "bf16")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="*", help="sample names (default: all samples/*.intent)")
    parser.add_argument("--out", type=Path, default=harness.REPO / "out" / "samples",
                        help="folder for the built libraries, headers and drivers")
    args = parser.parse_args(argv)
    out_dir = args.out.resolve()

    sources = harness.sample_sources()
    if args.samples:
        unknown = set(args.samples) - {s.stem for s in sources}
        if unknown:
            parser.error(f"no such sample: {', '.join(sorted(unknown))}")
        sources = [s for s in sources if s.stem in args.samples]

    console = Console()
    console.rule("intentc samples")
    console.print(f"output folder: {out_dir}")
    table = Table(title="samples")
    table.add_column("sample", style="bold")
    table.add_column("build s", justify="right")
    table.add_column("C driver")
    table.add_column("Python check")
    failed: list[tuple[str, harness.Step]] = []

    for source in sources:
        stem = source.stem
        build = harness.build_sample(source, out_dir)
        console.print(f"{stem}: intentc build {build.seconds:.2f} s"
                      + ("" if build.ok else f"  [red]{escape(build.line)}[/]"))
        driver = check = skipped_because = None
        if build.ok:
            if harness.driver_source(stem).is_file():
                driver = harness.build_driver(stem, out_dir)
                if driver.ok:
                    driver = harness.run_driver(stem, out_dir)
                console.print(f"{stem}: C driver  {escape(driver.line)}")
            skipped_because = _missing_python_needs(source) if stem in CHECKS else None
            if skipped_because:
                console.print(f"{stem}: Python    skipped: {escape(skipped_because)}")
            elif stem in CHECKS:
                check = harness.run_check(stem, out_dir)
                console.print(f"{stem}: Python    {escape(check.line)}")
        for what, step in (("intentc build", build), ("C driver", driver), ("Python check", check)):
            if step is not None and not step.ok:
                failed.append((f"{stem}: {what}", step))

        slow = build.ok and build.seconds > BUILD_TARGET_S
        build_cell = f"{build.seconds:.2f}" if build.ok else "[red]failed[/]"
        if slow:
            build_cell = f"[yellow]{build_cell}[/]"
        table.add_row(stem, build_cell,
                      _cell(driver, "[dim]no driver[/]" if build.ok else "[dim]skipped[/]"),
                      _cell(check, f"[dim]skipped: {escape(skipped_because)}[/]" if build.ok and skipped_because
                            else "[dim]no check[/]" if build.ok else "[dim]skipped[/]"))

    console.print(table)
    for title, step in failed:
        console.rule(f"[red]{escape(title)}")
        tail = step.output.strip().splitlines()[-40:]
        console.print(escape("\n".join(tail)) if tail else "(no output)")
    if failed:
        console.print(f"[red]{len(failed)} step(s) failed[/]")
        return 1
    console.print(f"[green]all {len(sources)} samples passed[/] "
                  f"(build times over {BUILD_TARGET_S:.1f} s are shown in yellow)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
