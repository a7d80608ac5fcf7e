"""Python-style INDENT/DEDENT tokens for Lark, and the statement-length limit.

Indentation counts a space as 1 and a tab as 8; a form feed resets the count, as in
Python (a page break at the start of a line is not indentation).
Inside brackets line breaks are not statements' ends. A statement (a logical line) longer
than ``MAX_STATEMENT_TOKENS`` tokens stops the lexer at once with ``StatementTooLong``:
parsing is linear but slow per token, and no real statement comes near the limit, so a
megabyte-long line is refused in a fraction of a second instead of being parsed first.
"""
from __future__ import annotations

from lark import Token
from lark.indenter import DedentError, Indenter

MAX_STATEMENT_TOKENS = 10_000


class StatementTooLong(Exception):
    """The token at which a statement passed ``MAX_STATEMENT_TOKENS``."""

    def __init__(self, token: Token):
        super().__init__(token)
        self.token = token


class IntentIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token: Token):
        if self.paren_level > 0:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1].rsplit("\f", 1)[-1]  # a form feed resets the count
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
            if indent != self.indent_level[-1]:
                raise DedentError(f"Unexpected dedent to column {indent}. Expected dedent to {self.indent_level[-1]}")

    def _process(self, stream):
        token = None
        count = 0
        for token in stream:
            if token.type == self.NL_type:
                if self.paren_level == 0:
                    count = 0
                yield from self.handle_NL(token)
            else:
                count += 1
                if count > MAX_STATEMENT_TOKENS:
                    raise StatementTooLong(token)
                yield token
            if token.type in self.OPEN_PAREN_types:
                self.paren_level += 1
            elif token.type in self.CLOSE_PAREN_types:
                # An unmatched bracket is the parser's syntax error, not an assertion here.
                self.paren_level = max(0, self.paren_level - 1)
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, "", token) if token else Token(self.DEDENT_type, "", 0, 0, 0,
                                                                                        0, 0, 0)
