"""Helpers of the target tests: the AArch64 tools of this machine, an ELF reader, builds.

CI (`.ci/run`) installs `qemu-user`, `gcc-aarch64-linux-gnu` and
`libc6-dev-arm64-cross` with apt, and `pip install .[test]` brings `ziglang`. On a
machine without them, a test that needs one is skipped and says which package to
install.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE_SOURCES = sorted((REPO / "samples").glob("*.intent"))
SAMPLES = [s.stem for s in SAMPLE_SOURCES]
DRIVERS = REPO / "samples" / "c"
DIGEST = Path(__file__).resolve().parent / "digest.c"

TRIPLE = "aarch64-linux-gnu"
CROSS_GCC = shutil.which(f"{TRIPLE}-gcc")
HAS_ZIG = importlib.util.find_spec("ziglang") is not None
QEMU = shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")
SYSROOT = next((p for p in (Path("/usr") / TRIPLE,) if (p / "lib" / "ld-linux-aarch64.so.1").exists()), None)
HOST_IS_X86_64 = platform.machine() in ("x86_64", "AMD64")

EM_X86_64, EM_AARCH64 = 62, 183
ET_REL, ET_DYN = 1, 3
CI_NOTE = ".ci/run installs it"


def require_toolchain(which: str | None = None) -> None:
    """Skip unless an AArch64 C toolchain (``which``: gcc or zig, None: either) is here."""
    if which in (None, "gcc") and CROSS_GCC:
        return
    if which in (None, "zig") and HAS_ZIG:
        return
    wanted = {"gcc": f"{TRIPLE}-gcc (apt-get install gcc-{TRIPLE})", "zig": "ziglang (pip install ziglang)"}
    if which is None:
        reason = f"no AArch64 C toolchain: neither {wanted['gcc']} nor {wanted['zig']} is installed"
    else:
        reason = f"{wanted[which]} is not installed"
    pytest.skip(f"{reason}; {CI_NOTE}")


def require_qemu() -> None:
    if QEMU is None:
        pytest.skip(f"qemu-aarch64 is not installed (apt-get install qemu-user); {CI_NOTE}")
    if SYSROOT is None:
        pytest.skip(f"no AArch64 glibc for qemu-aarch64 -L (apt-get install libc6-arm64-cross, which "
                    f"libc6-dev-arm64-cross brings); {CI_NOTE}")


def cross_cc(which: str | None = None) -> list[str]:
    """A C compiler command for AArch64 executables (gcc unless ``which`` says zig)."""
    require_toolchain(which)
    if which != "zig" and CROSS_GCC:
        return [CROSS_GCC]
    return [sys.executable, "-m", "ziglang", "cc", "-target", TRIPLE]


def run_cmd(cmd: list, cwd: Path | None = None, env: dict | None = None, timeout: float = 120) -> str:
    """Runs ``cmd``; fails the test with its output unless it exits 0. Returns stdout."""
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, errors="replace")
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def run_aarch64(exe: Path, threads: int = 4) -> str:
    """Runs an AArch64 executable under qemu-aarch64 with the AArch64 glibc."""
    require_qemu()
    env = dict(os.environ, INTENT_NUM_THREADS=str(threads))
    return run_cmd([QEMU, "-L", SYSROOT, exe], env=env)


def intentc_env(**extra: str) -> dict:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def intentc_cli(*args, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intentc", *map(str, args)], cwd=cwd or REPO,
                          env=env or intentc_env(), capture_output=True, text=True, timeout=300)


# ---- a small ELF reader (64-bit little-endian: x86-64 and AArch64) -------------------------
@dataclass
class Elf:
    type: int
    machine: int
    defined: set = field(default_factory=set)  # names of defined symbols (.symtab and .dynsym)
    sections: set = field(default_factory=set)


def parse_elf(data: bytes) -> Elf:
    assert data[:4] == b"\x7fELF", "not an ELF file"
    assert data[4] == 2 and data[5] == 1, "not a 64-bit little-endian ELF file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + k * e_shentsize) for k in range(e_shnum)]
    elf = Elf(e_type, e_machine)

    def string(table: int, offset: int) -> str:
        start = headers[table][4] + offset
        return data[start:data.index(b"\0", start)].decode()

    for name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in headers:
        elf.sections.add(string(e_shstrndx, name))
        if kind in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            for k in range(size // entsize):
                st_name, _st_info, _other, st_shndx = struct.unpack_from("<IBBH", data, offset + k * entsize)
                if st_name and st_shndx != 0:
                    elf.defined.add(string(link, st_name))
    return elf


def archive_members(data: bytes) -> dict[str, bytes]:
    """The object files of a System V / GNU ``ar`` archive, by name."""
    assert data[:8] == b"!<arch>\n", "not an ar archive"
    members, pos, long_names = {}, 8, b""
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name, size = header[:16].decode().strip(), int(header[48:58].decode())
        body = data[pos + 60:pos + 60 + size]
        if name == "//":
            long_names = body
        elif name.startswith("/") and name[1:].isdigit():
            start = int(name[1:])
            members[long_names[start:long_names.index(b"/\n", start)].decode()] = body
        elif name not in ("/", "/SYM64/"):
            members[name.rstrip("/")] = body
        pos += 60 + size + (size & 1)
    return members


def build(source: Path, output: Path, target: str = TRIPLE, *, header: bool | None = None,
          depfile: Path | None = None) -> list[Path]:
    """``intentc build`` in this process (the CLI is exercised by tests of its own)."""
    from intentc.driver import build as build_files

    return build_files(source, output, target, "native", header, depfile)
