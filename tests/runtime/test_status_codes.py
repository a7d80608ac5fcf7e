"""The one table of status codes (intentc/base/status.py) is the C runtime's IntentStatus
enum (runtime_c/intent_runtime.h), and every Python side raises the one KernelError."""
from __future__ import annotations

import re
from pathlib import Path

import intentc
from intentc import loader, ptx_loader
from intentc.base import status
from intentc.codegen import abi

HEADER = Path(__file__).resolve().parents[2] / "runtime_c" / "intent_runtime.h"


def header_enum(text: str) -> list[tuple[str, int]]:
    body = re.search(r"typedef enum IntentStatus \{(.*?)\} IntentStatus;", text, re.S)
    assert body, "no IntentStatus enum in the header"
    code = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    return [(name, int(value)) for name, value in re.findall(r"(INTENT_\w+)\s*=\s*(-?\d+)", code)]


def test_table_is_the_runtime_enum():
    enum = header_enum(HEADER.read_text(encoding="utf-8"))
    assert len(enum) >= 12
    assert [(s.name, s.code) for s in status.STATUSES] == enum


def test_header_parser_sees_a_difference():
    text = HEADER.read_text(encoding="utf-8").replace("INTENT_E_SANITIZER = -11", "INTENT_E_SANITIZER = -12")
    assert [(s.name, s.code) for s in status.STATUSES] != header_enum(text)


def test_one_table_everywhere():
    assert abi.STATUS == status.CODE
    assert all(status.NAME[code] == name for name, code in status.CODE.items())
    assert intentc.KernelError is loader.KernelError is ptx_loader.KernelError is status.KernelError


def test_kernel_error_names_its_status():
    error = intentc.KernelError(-11, "order sanitizer: differs")
    assert (error.code, error.status, str(error)) == (-11, "INTENT_E_SANITIZER", "order sanitizer: differs")
    assert intentc.KernelError(-100, "a helper's own code").status == "-100"
