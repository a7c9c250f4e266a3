"""Mutation operators: one realistic bug, as one minimal rewrite of a Python source text.

``find_mutations(source, path)`` lists every place in ``source`` where one of
the operators below applies, inside a function body (never at module or class
level, never in a docstring). Each ``Mutation`` is a single replacement of one
character range of the text, ``source[start:end]`` -> ``replacement``, so the
bug's diff is as small as the bug: nothing else in the file moves, comments and
formatting stay. Sites are found with ``ast`` (which nodes), located with
``tokenize`` (where an operator token is, which ``ast`` does not say).

Operators (``Operator``):

- ``comparison``: a comparison flipped at its boundary or negated
  (``<`` -> ``<=``, ``==`` -> ``!=``, ``is`` -> ``is not``, ``in`` -> ``not in``).
- ``off_by_one``: an integer literal in arithmetic, a comparison, an index, a
  slice or a ``range`` call, one more or one less.
- ``operator``: a wrong arithmetic, bitwise or boolean operator
  (``+`` <-> ``-``, ``/`` <-> ``//``, ``and`` <-> ``or``, ``+=`` <-> ``-=``, ...).
- ``dropped_branch``: an ``if`` guard without ``else``, or a plain ``else``
  branch, deleted (whole lines).
- ``dropped_return``: a ``return`` that ends a block of several statements,
  deleted (the code falls through).
- ``swapped_arguments``: the first two positional arguments of a call swapped.

Whether a mutation makes a realistic task (the tests notice it) is for the
builder to find out by running the tests; this module only finds and applies.
A source that does not parse has no sites.
"""

from __future__ import annotations

import ast
import bisect
import io
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from grinta_jupyter.runtime import pyast

Operator = Literal[
    "comparison",
    "off_by_one",
    "operator",
    "dropped_branch",
    "dropped_return",
    "swapped_arguments",
]
OPERATORS: tuple[Operator, ...] = get_args(Operator)

# Boundary shifts and negations: the bugs people write, not arbitrary swaps.
_COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<=",
    ast.LtE: "<",
    ast.Gt: ">=",
    ast.GtE: ">",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.In: "not in",
    ast.NotIn: "in",
}
_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "-",
    ast.Sub: "+",
    ast.Div: "//",
    ast.FloorDiv: "/",
    ast.LShift: ">>",
    ast.RShift: "<<",
    ast.BitOr: "&",
    ast.BitAnd: "|",
}
_BOOLEAN: dict[type[ast.boolop], str] = {ast.And: "or", ast.Or: "and"}
# Calls whose arguments are not in an order a person could get wrong in a plausible way.
_UNSWAPPABLE = {
    "isinstance",
    "issubclass",
    "getattr",
    "setattr",
    "hasattr",
    "delattr",
    "super",
    "print",
    "format",
    "type",
    "cast",
    "max",  # commutative: swapping changes nothing
    "min",
}
_MAX_BLOCK_LINES = 4  # a dropped branch is a short one: a guard, not half a function


@dataclass(frozen=True)
class Mutation:
    """One bug: ``source[start:end]`` (``original``) replaced by ``replacement``."""

    path: str  # relative to the package root, with forward slashes
    start: int  # character offsets into the source text
    end: int
    original: str
    replacement: str
    operator: Operator
    function: str  # qualified name of the enclosing function, e.g. "Version.compare"
    line: int  # 1-based line of ``start``

    def apply(self, source: str) -> str:
        """``source`` with the bug in; raises ValueError if ``source`` is not the text it was found in."""
        if source[self.start : self.end] != self.original:
            raise ValueError(f"{self.path}:{self.line} no longer holds {self.original!r}")
        return source[: self.start] + self.replacement + source[self.end :]

    def revert(self, mutated: str) -> str:
        """The original text back from ``mutated`` (the reference fix)."""
        end = self.start + len(self.replacement)
        if mutated[self.start : end] != self.replacement:
            raise ValueError(f"{self.path}:{self.line} does not hold this mutation")
        return mutated[: self.start] + self.original + mutated[end:]


def find_mutations(source: str, path: str) -> list[Mutation]:
    """Every mutation site in the function bodies of ``source``, in source order."""
    if "\r" in source:  # offsets below assume "\n" line ends; such files are rare enough to skip
        return []
    try:
        tree = pyast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return []
    finder = _Finder(source, path, tokens)
    finder.visit(tree)
    return sorted(finder.found, key=lambda m: (m.start, m.end, m.replacement))


class _Text:
    """Offsets in the text from ``ast`` positions (UTF-8 byte columns) and ``tokenize`` ones (characters)."""

    def __init__(self, source: str):
        self.source = source
        self.lines = source.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def at_bytes(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def at_chars(self, row: int, col: int) -> int:
        return self.starts[row - 1] + col

    def start(self, node: ast.AST) -> int:
        return self.at_bytes(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.at_bytes(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def whole_lines(self, first: int, last: int) -> tuple[int, int]:
        """The range of lines ``first``..``last`` (1-based), with the final line end."""
        end = self.starts[last] if last < len(self.starts) else len(self.source)
        return self.starts[first - 1], end


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    kind: int
    string: str


class _Finder(ast.NodeVisitor):
    def __init__(self, source: str, path: str, tokens: list[tokenize.TokenInfo]):
        self.text = _Text(source)
        self.path = path
        self.tokens = [
            _Token(self.text.at_chars(*t.start), self.text.at_chars(*t.end), t.type, t.string)
            for t in tokens
            if t.type in (tokenize.OP, tokenize.NAME)
        ]
        self.token_starts = [t.start for t in self.tokens]
        self.scope: list[str] = []  # enclosing class and function names
        self.in_function = 0
        self.found: list[Mutation] = []

    # -- scopes: only code inside a function body is mutated ---------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        for statement in node.body:
            self.visit(statement)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.in_function += 1
        body = node.body
        if body and _is_docstring(body[0]):
            body = body[1:]
        self._block(body)  # a docstring is not a statement whose loss means anything
        for statement in body:
            self.visit(statement)
        self.in_function -= 1
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 - ast.NodeVisitor's naming

    def generic_visit(self, node: ast.AST) -> None:
        if self.in_function:
            self._sites(node)
        super().generic_visit(node)

    # -- the operators ------------------------------------------------------------------------

    def _sites(self, node: ast.AST) -> None:
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                span = self._between(operands[i], operands[i + 1])
                if span:
                    self._add(*span, _COMPARISONS[type(op)], "comparison")
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if isinstance(node.op, (ast.Add, ast.Sub)) and (
                _textual(node.left) or _textual(node.right)
            ):
                return  # "a" - b fails loudly at once: not a realistic bug
            span = self._between(node.left, node.right)
            if span:
                self._add(*span, _BINARY[type(node.op)], "operator")
        elif isinstance(node, ast.BoolOp):
            for left, right in zip(node.values, node.values[1:], strict=False):
                span = self._between(left, right)
                if span:
                    self._add(*span, _BOOLEAN[type(node.op)], "operator")
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            if _textual(node.value):
                return
            span = self._between(node.target, node.value)
            if span:
                self._add(*span, "-=" if isinstance(node.op, ast.Add) else "+=", "operator")
        elif isinstance(node, ast.Call):
            self._call(node)
        if isinstance(node, (ast.BinOp, ast.Compare, ast.Subscript, ast.Slice, ast.Call)):
            self._literals(node)
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            for block in _blocks(node):
                self._block(block)
        if isinstance(node, ast.If) and node.orelse:
            self._drop_else(node)

    def _literals(self, node: ast.AST) -> None:
        """Off by one: integer literals that count, index or bound."""
        if isinstance(node, ast.BinOp):
            candidates = [node.left, node.right]
        elif isinstance(node, ast.Compare):
            candidates = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            candidates = [node.slice]
        elif isinstance(node, ast.Slice):
            candidates = [n for n in (node.lower, node.upper, node.step) if n is not None]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
        ):
            candidates = list(node.args)
        else:
            return
        for literal in candidates:
            if not (isinstance(literal, ast.Constant) and type(literal.value) is int):
                continue
            start, end = self.text.start(literal), self.text.end(literal)
            written = self.text.source[start:end]
            if not written.isdigit() or len(written) > 6:
                continue  # hex, underscores, huge numbers: not how off-by-one bugs look
            value = int(written)
            for changed in (value + 1, value - 1):
                if changed >= 0:
                    self._add(start, end, str(changed), "off_by_one")

    def _call(self, node: ast.Call) -> None:
        name = (
            node.func.id
            if isinstance(node.func, ast.Name)
            else node.func.attr
            if isinstance(node.func, ast.Attribute)
            else ""
        )
        args = node.args
        if name in _UNSWAPPABLE or len(args) < 2 or any(isinstance(a, ast.Starred) for a in args):
            return
        first, second = args[0], args[1]
        a0, a1 = self.text.start(first), self.text.end(first)
        b0, b1 = self.text.start(second), self.text.end(second)
        left, right = self.text.source[a0:a1], self.text.source[b0:b1]
        if left == right or "\n" in left or "\n" in right or a1 > b0:
            return
        between = self.text.source[a1:b0]
        self._add(a0, b1, right + between + left, "swapped_arguments")

    def _block(self, statements: list[ast.stmt]) -> None:
        """Dropped branch (an ``if`` guard, an ``else``) and dropped return, in one block."""
        if len(statements) < 2:
            return  # deleting the only statement of a block leaves no valid code
        for statement in statements:
            if isinstance(statement, ast.Return) and statement.value is not None:
                if statement is statements[-1]:
                    self._drop_lines(statement, "dropped_return")
            elif (
                isinstance(statement, ast.If)
                and not statement.orelse
                and not self._is_elif(statement)
            ):
                self._drop_lines(statement, "dropped_branch")

    def _drop_else(self, node: ast.If) -> None:
        first = node.orelse[0]
        if isinstance(first, ast.If) and self._is_elif(first):
            return
        last = node.orelse[-1]
        end_line = last.end_lineno or last.lineno
        else_line = self.text.line_of(self.text.start(first))
        # The ``else:`` keyword sits on its own line just above the branch (not "else: x" inline).
        keyword = else_line - 1
        if keyword < 1 or self.text.lines[keyword - 1].strip() != "else:":
            return
        if end_line - keyword + 1 > _MAX_BLOCK_LINES or not self._ends_its_line(last):
            return
        start, end = self.text.whole_lines(keyword, end_line)
        self._add(start, end, "", "dropped_branch")

    def _drop_lines(self, node: ast.stmt, operator: Operator) -> None:
        first, last = node.lineno, node.end_lineno or node.lineno
        if last - first + 1 > _MAX_BLOCK_LINES:
            return
        prefix = self.text.lines[first - 1][: node.col_offset]
        if prefix.strip() or not self._ends_its_line(node):
            return  # shares a line with other code (``x = 1; return x``)
        start, end = self.text.whole_lines(first, last)
        self._add(start, end, "", operator)

    def _ends_its_line(self, node: ast.stmt) -> bool:
        end = self.text.end(node)
        newline = self.text.source.find("\n", end)
        rest = self.text.source[end:] if newline < 0 else self.text.source[end:newline]
        return not rest.strip() or rest.strip().startswith("#")

    def _is_elif(self, node: ast.If) -> bool:
        return self.text.source.startswith("elif", self.text.start(node))

    # -- helpers ------------------------------------------------------------------------------

    def _between(self, left: ast.AST, right: ast.AST) -> tuple[int, int] | None:
        """The operator tokens between two operands (parentheses excluded)."""
        lo, hi = self.text.end(left), self.text.start(right)
        i = bisect.bisect_left(self.token_starts, lo)
        found = []
        while i < len(self.tokens) and self.tokens[i].start < hi:
            token = self.tokens[i]
            if token.string not in ("(", ")"):
                found.append(token)
            i += 1
        if not found or found[-1].end > hi:
            return None
        return found[0].start, found[-1].end

    def _add(self, start: int, end: int, replacement: str, operator: Operator) -> None:
        original = self.text.source[start:end]
        if original == replacement:
            return
        self.found.append(
            Mutation(
                path=self.path,
                start=start,
                end=end,
                original=original,
                replacement=replacement,
                operator=operator,
                function=".".join(self.scope),
                line=self.text.line_of(start),
            )
        )


def _blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if block:
            yield block
    for handler in getattr(node, "handlers", ()):
        yield handler.body


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _textual(node: ast.expr) -> bool:
    """A string, or a sum with a string in it: ``+`` there is concatenation, not arithmetic."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _textual(node.left) or _textual(node.right)
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )
