"""Semantic analysis: names, types, shapes and legality; builds KIR from the AST."""
from intentc.sema.to_kir import build_module

__all__ = ["build_module"]
