"""Parsing: concrete syntax (grammar/intent.lark) to a typed AST with spans."""
from intentc.parse.parser import parse_source, parse_file

__all__ = ["parse_source", "parse_file"]
