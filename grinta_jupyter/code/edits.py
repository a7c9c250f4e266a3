"""Symbol-level edits as pure functions on a file's text: replace, delete, insert, append.

Every function takes the current text and a :class:`Symbol` (usually from the
index), finds that symbol again in the text (so a stale symbol is noticed, not
trusted), splices whole lines, and returns the new text. Nothing is written.

- The text the model sends is re-indented to the target's depth (``reindent``)
  and written with the file's newline style (``\\r\\n`` files stay ``\\r\\n``).
- A symbol's span includes its decorators and attached comments, so a replace
  or delete takes them along; a replacement should carry its own.
- Blank lines between definitions keep the file's convention.
- Every language is located with tree-sitter. Python adds the interpreter's
  own parser where it decides: the new text must parse as statements, and the
  result is checked like any write (``runtime.validation``: ``compile()``, only
  the touched definitions of a large file, cached so the runtime's own check
  before commit costs nothing more). Where tree-sitter had to recover from a
  parse error, ``ast`` confirms the definition by qualified name (and order,
  for overloads). Other languages refuse a result with more tree-sitter syntax
  errors than the original.
- Cost: one tree-sitter parse of the file, one parse of the new text, one
  compile of the result (or of its touched region); no libcst. The tree of
  the last result is kept (one tree, for exactly that text), so the next edit
  of the same file, the usual case, re-parses only what changed.

Failures the model can fix raise :class:`SymbolEditError` with a stable code.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from grinta_jupyter.code import giveway
from grinta_jupyter.code.queries import SPECS, declared_names
from grinta_jupyter.code.symbols import Symbol, locate_nodes
from grinta_jupyter.runtime import pyast
from grinta_jupyter.runtime.errors import ErrorCode
from grinta_jupyter.runtime.grammars import language_for, parser_for, syntax_errors
from grinta_jupyter.runtime.notebook import is_notebook
from grinta_jupyter.runtime.validation import added_error

if TYPE_CHECKING:
    import tree_sitter

_Located = list[tuple[Symbol, "tree_sitter.Node"]]


class SymbolEditError(Exception):
    """An edit that cannot be made as asked; ``code`` is stable, ``message`` is for the model."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# --- public API -------------------------------------------------------------------


def replace_symbol(source: str, symbol: Symbol, new_source: str) -> str:
    """``source`` with ``symbol`` (decorators and attached comments included) replaced."""
    text = _Text(source, symbol.language, symbol.path)
    target = _locate(text, symbol)
    new = _model_text(new_source, symbol.language)
    others = _declared_with(text, target)
    missing = [name for name in others if not _mentions(new, name)]
    if missing:
        raise SymbolEditError(
            ErrorCode.INVALID_ARGS,
            f"{symbol.qualname} is declared in one statement with {', '.join(missing)} "
            f"(line {target.symbol.def_line}); a replace rewrites the whole statement, so "
            "new_source must declare them too (as read shows it), or they would be deleted",
        )
    region = text.widened(text.region(target), new)
    old = text.source[region.start : region.end]
    body = reindent(new, region.indent, lambda: text.unit, like=old)
    if not region.full_start:
        body = body[len(region.indent) :]
    ends_line = region.full_end and text.source[: region.end].endswith("\n")
    replacement = text.newline_join(body) + (text.newline if ends_line else "")
    result = text.source[: region.start] + replacement + text.source[region.end :]
    return _validated(text, result)


def delete_symbol(source: str, symbol: Symbol) -> str:
    """``source`` without ``symbol`` and one of the blank-line runs around it."""
    text = _Text(source, symbol.language, symbol.path)
    target = _locate(text, symbol)
    others = _declared_with(text, target)
    if others:
        raise SymbolEditError(
            ErrorCode.NOT_SUPPORTED,
            f"{symbol.qualname} is declared in one statement with {', '.join(others)} "
            f"(line {target.symbol.def_line}); deleting it would delete them too: replace "
            f"{symbol.qualname} with the statement written without it",
        )
    region = text.region(target, trailing_comment=True)
    if not (region.full_start and region.full_end):
        end = region.end
        while end < len(text.source) and text.source[end] in " \t":
            end += 1
        return _validated(text, text.source[: region.start] + text.source[end:])
    start, end = region.start, region.end
    before = text.blank_run_before(start)
    after = text.blank_run_after(end)
    if after == end < len(text.source) and text.comment_before(before):
        pass  # the blank lines keep the comment above off the definition below
    elif before < start and not text.opens_block_before(before):
        start = before  # drop the run that separated it from the previous definition
    elif after > end:
        end = after
    elif before < start:
        start = before
    result = text.source[:start] + text.source[end:]
    if symbol.language == "python":
        # Checked on broken files too: their compile error hides an emptied block.
        if not _alone_in_block(target) and text.breaks(result) is None:
            return text.remember(result)
        # The definition was the only statement of its block: keep the block valid.
        result = (
            text.source[: region.start]
            + region.indent
            + "pass"
            + text.newline
            + text.source[region.end :]
        )
    return _validated(text, result)


def insert_symbol(
    source: str, anchor: Symbol, new_source: str, where: Literal["before", "after"]
) -> str:
    """``source`` with ``new_source`` added as a sibling just before or after ``anchor``."""
    if where not in ("before", "after"):
        raise SymbolEditError(
            ErrorCode.INVALID_ARGS, f"where must be 'before' or 'after', not {where!r}"
        )
    text = _Text(source, anchor.language, anchor.path)
    target = _locate(text, anchor)
    new = _model_text(new_source, anchor.language)
    region = text.region(target)
    lines = text.newline_join(reindent(new, region.indent, lambda: text.unit)) + text.newline
    gap = _gap(text, target, new)
    # Inserts take whole lines: before the anchor's first line or after its last.
    if where == "before":
        at = text.line_start(region.start)
        inserted = lines + text.newline * gap
    else:
        at = region.end if region.full_end else text.line_end(region.end)
        prefix = "" if text.source[:at].endswith("\n") else text.newline
        inserted = prefix + text.newline * gap + lines
    return _validated(text, text.source[:at] + inserted + text.source[at:])


def append_to(source: str, container: Symbol | None, new_source: str, language: str) -> str:
    """``source`` with ``new_source`` added at the end of ``container``'s body (None: the file)."""
    text = _Text(source, language, container.path if container else "")
    new = _model_text(new_source, language)
    if container is None:
        return _validated(text, _append_to_file(text, new))
    target = _locate(text, container)
    if language == "python":
        return _validated(text, _append_python(text, target, new))
    # A method for a Go or Rust type goes next to its methods; a Rust trait or module
    # takes a new function in its body.
    if (
        language in ("go", "rust")
        and container.kind not in ("trait", "module")
        and _is_function(new, language)
    ):
        return _validated(text, _append_method(text, target, new, language))
    assert target.node is not None
    return _validated(text, _append_into(text, target.node, target, new))


def reindent(
    new_source: str, indent: str, unit: str | Callable[[], str] | None = None, like: str = ""
) -> str:
    """``new_source`` moved to depth ``indent``: dedented first, relative indentation kept.

    Leading whitespace follows the target: with a tab ``indent`` (or ``unit``)
    each space indentation level of the new text becomes a tab; with a space
    target, tabs become ``unit`` (default four spaces), unless ``like`` (the
    definition being replaced) is indented the new text's way too: a file may
    mix both, and a definition re-sent as it is keeps its own. Whitespace-only lines
    keep what lies beyond the common margin (so a definition re-sent as it is
    comes back byte for byte). Returns text with ``\\n`` newlines and no
    trailing newline. ``unit`` may be a function giving it, called only when
    the result depends on it (a top-level target, or tab-indented text for a
    space-indented one): measuring a large file's unit costs milliseconds.
    """
    lines = new_source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    fixed = unit

    def unit_of() -> str | None:
        return fixed() if callable(fixed) else fixed

    to_tabs = "\t" in indent or (not indent and unit_of() == "\t")
    to_spaces = (bool(indent) and not to_tabs) or (not indent and unit_of() not in (None, "\t"))
    # Convert only text indented the other way throughout; mixed text is left
    # as it is (it was most likely copied from the file, as is GNU style's
    # tabs-then-spaces margin).
    if (
        to_spaces
        and not any(
            line.startswith(" ") or "\t " in _leading(line) for line in lines if line.strip()
        )
        and not re.search(r"^\t", like, re.MULTILINE)
    ):
        known = unit_of()
        space_unit = known if known and "\t" not in known else "    "
        lines = [_tabs_to_spaces(line, space_unit) for line in lines]
    margins = [_leading(line) for line in lines if line.strip()]
    common = margins[0] if margins else ""
    # The first line sets the depth. Lines at column 0 inside an indented definition
    # (C preprocessor lines, string contents) stay at column 0, lines left of the
    # first one keep their offset from it; margins of tabs and spaces sharing no
    # prefix (GNU style) move by columns; other text is dedented by its common margin.
    pinned = bool(common) and all(m.startswith(common) or common.startswith(m) for m in margins)
    if not pinned and any("\t" in m for m in margins) and any(m[:1] == " " for m in margins):
        return _reindent_columns(lines, indent)
    if not pinned:
        common = min(margins, key=len) if margins else ""
        for margin in margins:
            while not margin.startswith(common):
                common = common[:-1]
    # None marks an empty line (it stays empty); whitespace-only lines are kept.
    body: list[str | None] = []
    flush: set[int] = set()  # lines placed already (column 0, or left of the first line)
    for i, line in enumerate(lines):
        if line.strip() and not line.startswith(common):
            flush.add(i)
            margin = _leading(line)
            if margin:  # left of the first line (a ragged `};`): keep its offset
                line = (
                    indent[: max(0, len(indent) - len(common) + len(margin))] + line[len(margin) :]
                )
            body.append(line)
        elif line.strip() or (line and line.startswith(common)):
            body.append(line[len(common) :])
        else:
            body.append(None)
    margins = [_leading(line) for i, line in enumerate(body) if line and i not in flush]
    if (
        to_tabs
        and not any("\t" in margin for margin in margins)
        and not any("\t " in _leading(line) for line in lines)  # GNU style, as above
        and not re.search(r"^  ", like, re.MULTILINE)
    ):
        step = _smallest_step(margins)
        body = [
            line if line is None or i in flush else _spaces_to_tabs(line, step)
            for i, line in enumerate(body)
        ]
    return "\n".join(
        "" if line is None else line if i in flush else indent + line for i, line in enumerate(body)
    )


def _reindent_columns(lines: list[str], indent: str) -> str:
    """GNU-style text (two-space levels, a tab for every eight columns) moved by columns:
    its margins share no prefix, so the first line's column sets the shift."""
    first = next(_leading(line) for line in lines if line.strip())
    shift = _columns(indent) - _columns(first)
    if shift == 0:
        return "\n".join(lines)  # in place: every margin stays as written
    out: list[str] = []
    for line in lines:
        margin = _leading(line)
        if not line.strip() or (first and not margin):  # blank, or `#if` at column 0
            out.append(line if line.strip() else "")
            continue
        column = max(0, _columns(margin) + shift)
        tabs = "\t" * (column // 8) + " " * (column % 8)
        out.append((tabs if "\t" in margin + indent else " " * column) + line[len(margin) :])
    return "\n".join(out)


def _columns(margin: str) -> int:
    return len(margin.expandtabs(8))


# --- appending ----------------------------------------------------------------------


def _append_to_file(text: _Text, new: str) -> str:
    body = text.newline_join(reindent(new, "", lambda: text.unit)) + text.newline
    head = text.source.rstrip(" \t\r\n")
    if not head:
        return body
    gap = 2 if text.language == "python" else 1
    return head + text.newline * (gap + 1) + body


def _append_python(text: _Text, target: _Target, new: str) -> str:
    node = target.node
    assert node is not None
    block = node.child_by_field_name("body")
    if block is None or not block.named_children:
        raise SymbolEditError(ErrorCode.NOT_SUPPORTED, f"{target.symbol.qualname} has no body")
    first = block.named_children[0]
    member_indent = text.indent_of(text.char(first.start_byte))
    if text.line_start(text.char(first.start_byte)) == text.line_start(
        text.char(node.start_byte)
    ):  # `class A: pass` on one line
        raise SymbolEditError(
            ErrorCode.NOT_SUPPORTED,
            f"{target.symbol.qualname} is a one-line class; replace it instead",
        )
    end = text.line_end(text.char(target.symbol.end_byte))
    members = [s for s in target.siblings if s.container == target.symbol.qualname]
    gap = _gap(text, _Target(members[-1], None, target.siblings, []), new) if members else 1
    body = text.newline_join(reindent(new, member_indent, lambda: text.unit)) + text.newline
    prefix = "" if text.source[:end].endswith("\n") else text.newline
    return text.source[:end] + prefix + text.newline * gap + body + text.source[end:]


def _append_into(text: _Text, node: tree_sitter.Node, target: _Target, new: str) -> str:
    """Add ``new`` before the token closing ``node``'s body (``}`` or ``end``)."""
    closer = _closer(node, text.language)
    if closer is None:
        raise SymbolEditError(
            ErrorCode.NOT_SUPPORTED,
            f"{target.symbol.qualname} ({target.symbol.kind}) has no body to append to; "
            "insert after one of its members instead",
        )
    members = _direct_members(target.siblings, node.start_byte, closer.start_byte, target.symbol)
    close_at = text.char(closer.start_byte)
    close_line = text.line_start(close_at)
    owner_indent = text.indent_of(text.char(node.start_byte))
    if target.symbol.start_byte <= node.start_byte:
        owner_indent = text.indent_of(text.char(target.symbol.start_byte))
    member_indent = _member_indent(text, node, closer)
    if member_indent is None:
        member_indent = owner_indent + text.unit
    body = text.newline_join(reindent(new, member_indent, lambda: text.unit)) + text.newline
    if text.source[close_line:close_at].strip():
        # `class A {}` on one line: open it up.
        inserted = text.newline + body + owner_indent
        return text.source[:close_at] + inserted + text.source[close_at:]
    # Blank lines above the closing line stay there, below the new member.
    close_line = text.blank_run_before(close_line)
    if members:
        gap = _gap(text, _Target(members[-1], None, target.siblings, []), new)
    elif _has_body_content(closer):
        gap = 1 if "\n" in new.strip() else 0
    else:
        gap = 0
    return text.source[:close_line] + text.newline * gap + body + text.source[close_line:]


def _direct_members(siblings: list[Symbol], start: int, end: int, owner: Symbol) -> list[Symbol]:
    """Symbols inside [start, end) that are not nested in another one."""
    members: list[Symbol] = []
    for symbol in siblings:
        if symbol == owner or not (start <= symbol.start_byte and symbol.end_byte <= end):
            continue
        if members and symbol.start_byte < members[-1].end_byte:
            continue
        members.append(symbol)
    return members


def _is_function(new: str, language: str) -> bool:
    code = reindent(new, "")
    lines = [line for line in code.split("\n") if line.strip()]
    pattern = r"(pub(\([^)]*\))?\s+)?((const|async|unsafe|extern\s+\S+)\s+)*fn\b"
    if language == "go":
        pattern = r"func\b"
    for line in lines:
        if line.lstrip().startswith(("//", "#[", "/*", "*")):
            continue
        return re.match(pattern, line.lstrip()) is not None
    return False


def _append_method(text: _Text, target: _Target, new: str, language: str) -> str:
    """Go/Rust: a method for a type goes next to its other methods, not into the struct."""
    owner = target.symbol
    methods = [
        (s, node)
        for s, node in target.located
        if s.container == owner.qualname and s.kind == "method"
    ]
    if language == "rust":
        # Inherent impls only: a trait impl cannot take new methods.
        impls = [impl for _, n in methods if (impl := _impl_of(n)) is not None]
        impls = [impl for impl in impls if impl.child_by_field_name("trait") is None]
        if impls:
            impl = impls[-1]
            return _append_into(
                text, impl, _Target(owner, impl, target.siblings, target.located), new
            )
        if target.node is not None and target.node.child_by_field_name("type_parameters"):
            raise SymbolEditError(
                ErrorCode.NOT_SUPPORTED,
                f"{owner.qualname} is generic and has no impl block yet; insert one after it",
            )
        new = f"impl {owner.name} {{\n{reindent(new, text.unit)}\n}}"
        anchor = _Target(owner, target.node, target.siblings, target.located)
    else:
        anchor_symbol, anchor_node = methods[-1] if methods else (owner, target.node)
        anchor = _Target(anchor_symbol, anchor_node, target.siblings, target.located)
        top = _top_level(anchor_node)
        if top is not None and top.end_byte > anchor_symbol.end_byte:  # inside `type ( ... )`
            end = text.line_end(text.char(top.end_byte - 1))
            body = text.newline_join(reindent(new, "", lambda: text.unit)) + text.newline
            return text.source[:end] + text.newline + body + text.source[end:]
    region = text.region(anchor)
    lines = text.newline_join(reindent(new, region.indent, lambda: text.unit)) + text.newline
    prefix = "" if text.source[: region.end].endswith("\n") else text.newline
    return text.source[: region.end] + prefix + text.newline + lines + text.source[region.end :]


def _impl_of(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    while node is not None and node.type != "impl_item":
        node = node.parent
    return node


def _top_level(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    while node is not None and node.parent is not None and node.parent.parent is not None:
        node = node.parent
    return node


# --- the text being edited ------------------------------------------------------------


_LONE_CR = re.compile(r"\r(?!\n)")


@dataclass
class _Region:
    start: int  # str index
    end: int
    indent: str
    full_start: bool  # only indentation before the symbol on its first line
    full_end: bool  # the region ends after the end line's newline


@dataclass
class _Target:
    symbol: Symbol  # found again in the current text
    node: tree_sitter.Node | None
    siblings: list[Symbol]  # every symbol of the current text
    located: list[tuple[Symbol, tree_sitter.Node]]  # the same, with definition nodes


class _Text:
    """The file's text plus what edits need: newline style, indent unit, offset conversion."""

    def __init__(self, source: str, language: str, path: str) -> None:
        # Python and JavaScript end a line at a lone CR (classic Mac files); tree-sitter,
        # the index and these edits count lines by LF, so every definition of such a file
        # sits on "line 1" and an insert after one would land after the last.
        lone_cr = _LONE_CR.search(source) if "\r" in source else None
        if lone_cr is not None:
            line = source.count("\n", 0, lone_cr.start()) + 1
            raise SymbolEditError(
                ErrorCode.NOT_SUPPORTED,
                f"{path or 'the file'} ends a line with a lone CR (\\r without \\n, line "
                f"{line}), which symbol edits do not handle; edit it with replace_string",
            )
        self.source = source
        self.language = language
        self.path = path
        self.encoded = source.encode("utf-8", "surrogatepass")
        self.ascii = len(self.encoded) == len(source)
        crlf = source.count("\r\n")
        self.newline = "\r\n" if crlf and crlf * 2 >= source.count("\n") else "\n"
        # The text parsed by tree-sitter (None: not parsed yet).
        self.tree: tree_sitter.Tree | None = None

    @property
    def clean(self) -> bool:
        """Whether tree-sitter parsed the text without error."""
        return self.tree is not None and not self.tree.root_node.has_error

    def remember(self, result: str) -> str:
        """``result``, its tree kept for the next edit of this file."""
        if self.tree is not None:
            _LAST_TREE.keep(self.path, self.language, self.encoded, self.tree, result)
        return result

    @cached_property
    def unit(self) -> str:
        """The file's indentation step (only edits that add text need it)."""
        return _indent_unit(self.source, self.language)

    def breaks(self, result: str) -> str | None:
        """Python: the syntax error ``result`` adds to this text (None when it adds none)."""
        error = added_error(self.path, self.source, result, "python")
        return None if error is None else f"line {error[0]}: {error[1]}"

    def char(self, byte: int) -> int:
        """str index of a UTF-8 byte offset."""
        if self.ascii:
            return byte
        return len(self.encoded[:byte].decode("utf-8", "surrogatepass"))

    def newline_join(self, text: str) -> str:
        return text.replace("\n", self.newline) if self.newline != "\n" else text

    def line_start(self, index: int) -> int:
        return self.source.rfind("\n", 0, index) + 1

    def line_end(self, index: int) -> int:
        """Index just after the newline ending the line that holds ``index``."""
        end = self.source.find("\n", index)
        return len(self.source) if end < 0 else end + 1

    def indent_of(self, index: int) -> str:
        start = self.line_start(index)
        return _leading(self.source[start:index]) if index > start else ""

    def region(self, target: _Target, *, trailing_comment: bool = False) -> _Region:
        """Where ``target`` sits: whole lines when nothing else shares them.

        A comment after the definition on its last line stays in the file
        (``}  // namespace x``) unless ``trailing_comment`` (a delete) takes it.
        """
        symbol = target.symbol
        start = self.char(symbol.start_byte)
        end = self.char(symbol.end_byte)
        line_start = self.line_start(start)
        full_start = not self.source[line_start:start].strip()
        indent = _leading(self.source[line_start:start])
        rest_end = self.source.find("\n", end)
        rest = self.source[end : len(self.source) if rest_end < 0 else rest_end].strip()
        full_end = not rest or (trailing_comment and _is_line_comment(rest, self.language))
        return _Region(
            start=line_start if full_start else start,
            end=self.line_end(end) if full_end else end,
            indent=indent,
            full_start=full_start,
            full_end=full_end,
        )

    def widened(self, region: _Region, new: str) -> _Region:
        """``region`` grown to whole lines where ``new`` repeats what shares them.

        ``read`` shows whole lines, so a model re-sending a definition brings the
        ``typedef`` or macro before it and the ``}  // namespace a`` after it along:
        those replace the file's copies instead of doubling them.
        """
        start, end, full_start, full_end = region.start, region.end, True, True
        # Only words (`typedef`, a macro, `static inline`) before it and a comment after it
        # are taken along: a bracket or a separator sharing the line belongs to the code
        # around the definition (`class A { m() {} }`: the new `m` ends in `}` too).
        if not region.full_start:
            line_start = self.line_start(start)
            before = self.source[line_start:start].strip()
            full_start = _WORDS_BEFORE.fullmatch(before) is not None and new.lstrip().startswith(
                before
            )
            start = line_start if full_start else start
        if not region.full_end:
            line_end = self.line_end(end)
            after = self.source[end:line_end].strip()
            full_end = _is_line_comment(after, self.language) and new.rstrip().endswith(after)
            end = line_end if full_end else end
        return _Region(start, end, region.indent, full_start, full_end)

    def blank_run_before(self, index: int) -> int:
        """Start of the blank lines directly above the line starting at ``index``."""
        while index > 0:
            previous = self.line_start(index - 1)
            if self.source[previous:index].strip():
                break
            index = previous
        return index

    def blank_run_after(self, index: int) -> int:
        """End of the blank lines starting at ``index`` (a line start)."""
        while index < len(self.source):
            end = self.line_end(index)
            if self.source[index:end].strip():
                break
            index = end
        return index

    def opens_block_before(self, index: int) -> bool:
        """Whether the line above ``index`` opens a block (the symbol is first in its body)."""
        if index == 0:
            return True
        previous = self.source[self.line_start(index - 1) : index].rstrip()
        return previous.endswith((":", "{", "(", "[")) or bool(
            re.match(r"\s*(class|module)\b", previous)
        )

    def comment_before(self, index: int) -> bool:
        """Whether the line above ``index`` is (the end of) a comment."""
        if index == 0:
            return False
        previous = self.source[self.line_start(index - 1) : index].strip()
        return _is_line_comment(previous, self.language) or previous.endswith("*/")

    def blank_lines_above(self, index: int) -> int:
        return self.source.count("\n", self.blank_run_before(index), index)


def _locate(text: _Text, symbol: Symbol) -> _Target:
    """Find ``symbol`` again in the current text; refuse when it is gone or ambiguous."""
    ready = _LAST_TREE.take(symbol.path, symbol.language, text.encoded)
    if ready is not None:  # located after the last commit, off the model's path
        text.tree, located = ready
    else:
        known = _LAST_TREE.get(symbol.path, symbol.language, text.encoded)
        text.tree, located = locate_nodes(symbol.path, text.encoded, symbol.language, known)
    fresh = [s for s, _ in located]
    same = [(s, node) for s, node in located if s.qualname == symbol.qualname]
    exact = [(s, n) for s, n in same if s.def_line == symbol.def_line and s.kind == symbol.kind]
    if not exact and len(same) == 1:
        exact = same
    if len(exact) != 1:
        if not same:
            problem = "is not in the file any more"
        else:
            lines = ", ".join(str(s.def_line) for s, _ in same)
            problem = f"moved: it is now defined on lines {lines}; resolve it again"
        raise SymbolEditError(ErrorCode.SYMBOL_NOT_FOUND, f"{symbol.qualname} {problem}")
    found, node = exact[0]
    if symbol.language == "python" and not text.clean:
        _check_python_location(text, found, len(same))
        _check_python_extent(text, found, node)
    return _Target(found, node, fresh, located)


def _declared_with(text: _Text, target: _Target) -> list[str]:
    """The other names the statement holding ``target`` declares (``const a = 1, b = 2;``):
    its span is that whole statement, so replacing or deleting its text changes them too."""
    if target.node is None:
        return []
    names = declared_names(target.node, text.encoded) or []
    return [name for name in names if name != target.symbol.name]


def _mentions(text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``text`` as a whole identifier."""
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text) is not None


def _alone_in_block(target: _Target) -> bool:
    """Whether the definition is the only statement of its block (comments aside), so that
    deleting it would leave the block empty."""
    node = target.node
    if node is None:
        return False
    if node.parent is not None and node.parent.type == "decorated_definition":
        node = node.parent
    block = node.parent
    return (
        block is not None
        and block.type == "block"
        and all(c.id == node.id or c.type == "comment" for c in block.named_children)
    )


def _model_text(new_source: str, language: str) -> str:
    if not new_source.strip():
        raise SymbolEditError(
            ErrorCode.INVALID_ARGS, "new_source is empty; use delete to remove a symbol"
        )
    if language == "python":
        _check_python_statements(new_source)
    return new_source


def _validated(text: _Text, result: str) -> str:
    if text.language == "python":
        error = text.breaks(result)
        if error is not None:
            raise SymbolEditError(
                ErrorCode.SYNTAX_ERROR, f"the edited file would not parse: {error}"
            )
        return text.remember(result)
    before = [] if text.clean else syntax_errors(text.language, text.encoded)
    after = syntax_errors(text.language, result.encode("utf-8", "surrogatepass"))
    if len(after) > len(before):
        new_lines = sorted(set(after) - set(before)) or after
        raise SymbolEditError(
            ErrorCode.SYNTAX_ERROR,
            f"the edited file would have syntax errors on line(s) {', '.join(map(str, new_lines[:5]))}",
        )
    return text.remember(result)


class _TreeCache:
    """The tree of the last edit's result: one tree, served only for exactly that text.

    A model edits a file, the edit is committed, and the next edit starts from
    that very text; re-parsing it incrementally from the previous tree costs a
    millisecond where a fresh parse of a large file costs tens. That parse waits
    until someone asks for the tree (the symbol index re-reading the committed
    file, in its thread, or the next edit): a proposal does not pay for it, nor a
    vetoed one at all. Served trees are copies (a tree may be read by one thread
    at a time), and a kept tree is never edited in place (``_reparse`` edits a copy),
    so no parse runs under the lock: a commit or a proposal never waits for one.

    Any commit, not only a symbol edit's, names its text (``committed``): a file
    written by ``replace_string`` is then parsed in full once, by the index's
    re-read, and from there on each commit of it costs an incremental parse.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (path, language, text, its tree: None until parsed from ``_pending``)
        self._last: tuple[str, str, bytes, tree_sitter.Tree | None] | None = None
        # The previous text's tree and that text, which the next parse starts from.
        self._pending: tuple[tree_sitter.Tree, bytes] | None = None
        # That text's symbols, located on a tree of their own by ``locate`` (the symbol
        # index re-reading the file after the commit): handed to the next edit, once.
        self._located: tuple[str, str, bytes, tree_sitter.Tree, _Located] | None = None

    def get(self, path: str, language: str, source: bytes) -> tree_sitter.Tree | None:
        with self._lock:
            last, pending = self._last, self._pending
        if last is None or last[:3] != (path, language, source):
            return None
        tree = last[3]
        if tree is None:  # parsed outside the lock: two callers at once may both parse
            if pending is None:
                tree = parser_for(language).parse(source)
            else:
                tree = _reparse(language, *pending, source)
            with self._lock:
                if self._last is last:  # else a newer text replaced it meanwhile
                    self._last, self._pending = (path, language, source, tree), None
        return tree.copy()

    def locate(self, path: str, language: str, source: bytes) -> list[Symbol] | None:
        """The symbols of ``source`` when it is the kept text (else None), kept for ``take``."""
        tree = self.get(path, language, source)
        if tree is None:
            return None
        giveway.pause()
        located_tree, located = locate_nodes(path, source, language, tree)
        if located_tree is None:
            return None
        with self._lock:
            last = self._last
            if last is not None and last[:3] == (path, language, source):
                self._located = (path, language, source, located_tree, located)
        return [symbol for symbol, _ in located]

    def take(
        self, path: str, language: str, source: bytes
    ) -> tuple[tree_sitter.Tree, _Located] | None:
        """What ``locate`` found in ``source`` (its tree and nodes, for one caller), or None."""
        with self._lock:
            found = self._located
            if found is None or found[:3] != (path, language, source):
                return None
            self._located = None
            return found[3], found[4]

    def keep(
        self, path: str, language: str, old: bytes, tree: tree_sitter.Tree, result: str
    ) -> None:
        """Keep ``result`` (an edit of ``old``, whose tree is ``tree``) for the next edit."""
        new = result.encode("utf-8", "surrogatepass")
        with self._lock:
            self._last = (path, language, new, None)
            self._pending = (tree.copy(), old)
            self._located = None

    def committed(self, path: str, language: str, before: bytes | None, after: bytes) -> None:
        """``after`` replaced ``before`` (None: a new file) on disk: keep it as the text whose
        tree the next caller wants, parsed from the tree kept for ``before`` if there is one
        (incrementally: the edits between the two texts make one changed range), else in
        full, once."""
        with self._lock:
            last = self._last
            if last is not None and last[:3] == (path, language, after):
                return  # a symbol edit kept its result when it was staged
            if last is not None and last[:3] == (path, language, before):
                if last[3] is not None:
                    self._pending = (last[3], last[2])
                # else ``_pending`` (an earlier text's tree) stays what the parse starts from
            else:
                self._pending = None
            self._last = (path, language, after, None)
            self._located = None


def _reparse(language: str, tree: tree_sitter.Tree, old: bytes, new: bytes) -> tree_sitter.Tree:
    """The tree of ``new``, parsed incrementally from ``tree`` (that of ``old``).

    Only between texts without syntax errors: tree-sitter's recovery from an error depends
    on the trees it reuses, and for some grammars (JavaScript, TypeScript, Ruby: their
    external scanners) an incremental parse of a broken text found other definitions than
    a fresh parse of it. Where either text has an error, ``new`` is parsed afresh."""
    if tree.root_node.has_error:
        return parser_for(language).parse(new)
    start, old_end, new_end = _changed_bytes(old, new)
    tree = tree.copy()  # the kept tree stays the tree of ``old``: another caller may use it
    tree.edit(
        start,
        old_end,
        new_end,
        _point(old, start),
        _point(old, old_end),
        _point(new, new_end),
    )
    parser = parser_for(language)
    reparsed = parser.parse(new, tree)
    return parser.parse(new) if reparsed.root_node.has_error else reparsed


_LAST_TREE = _TreeCache()


def kept_tree(path: str, language: str, source: bytes) -> tree_sitter.Tree | None:
    """A copy of the tree of the last edit's result, when ``source`` is exactly that text.

    The symbol index may re-read a file it just saw committed from it (``locate_nodes``
    takes a tree) instead of parsing the whole file again.
    """
    return _LAST_TREE.get(path, language, source)


def committed(path: str, before: bytes | None, after: bytes) -> None:
    """A commit wrote ``after`` over ``before`` (None: created it): the next parse of it (the
    index's re-read, the next symbol edit) starts from the last one's tree where it can."""
    language = language_for(path)
    if language in SPECS and not is_notebook(path):
        _LAST_TREE.committed(path, language, before, after)


def result_symbols(path: str, language: str, source: bytes) -> list[Symbol] | None:
    """The symbols of the last edit's result, when ``source`` is exactly that text, else None.

    They are located on the kept tree (no parse), and kept for the next edit of that
    text, which then needs no location of its own: the symbol index calls this when it
    re-reads a file just committed, in its thread, during the model's next turn.
    """
    return _LAST_TREE.locate(path, language, source)


def _changed_bytes(old: bytes, new: bytes) -> tuple[int, int, int]:
    """(start, old end, new end) of the one range where ``old`` and ``new`` differ."""
    limit = min(len(old), len(new))
    low, high = 0, limit  # the common prefix's length, by bisection (slices compare in C)
    while low < high:
        middle = (low + high + 1) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle - 1
    start = low
    low, high = 0, limit - start  # the common suffix, not overlapping the prefix
    while low < high:
        middle = (low + high + 1) // 2
        if old[len(old) - middle :] == new[len(new) - middle :]:
            low = middle
        else:
            high = middle - 1
    return start, len(old) - low, len(new) - low


def _point(source: bytes, offset: int) -> tuple[int, int]:
    """tree-sitter's (row, byte column) of ``offset``."""
    return source.count(b"\n", 0, offset), offset - (source.rfind(b"\n", 0, offset) + 1)


def _gap(text: _Text, target: _Target, new: str) -> int:
    """Blank lines to put between ``target`` and a new sibling, following the file."""
    symbol = target.symbol
    start = text.line_start(text.char(symbol.start_byte))
    siblings = [s for s in target.siblings if s.container == symbol.container]
    index = siblings.index(symbol) if symbol in siblings else -1
    measured: int | None = None
    if index > 0 and not text.opens_block_before(text.blank_run_before(start)):
        measured = text.blank_lines_above(start)
    elif 0 <= index < len(siblings) - 1:
        following = siblings[index + 1]
        measured = text.blank_lines_above(text.line_start(text.char(following.start_byte)))
    default = 2 if text.language == "python" and not symbol.container else 1
    # The file's spacing counts when it was measured between definitions shaped
    # like the new one: one-liners (constants) may sit tight, blocks may not.
    new_multi_line = "\n" in new.strip()
    anchor_multi_line = symbol.end_line > symbol.start_line
    if measured is None or new_multi_line != anchor_multi_line:
        return default if new_multi_line else min(default, 1 if measured is None else measured)
    return measured


# --- finding bodies in the tree ---------------------------------------------------------


def _closer(node: tree_sitter.Node | None, language: str) -> tree_sitter.Node | None:
    """The token that closes a container's body (``}`` or Ruby's ``end``)."""
    if node is None:
        return None
    if language == "ruby":
        last = node.children[-1] if node.children else None
        return last if last is not None and last.type == "end" else None
    body = node.child_by_field_name("body")
    if body is None and language == "go":
        kind = node.child_by_field_name("type")
        body = kind
        if kind is not None and kind.type == "struct_type":
            body = next((c for c in kind.children if c.type == "field_declaration_list"), None)
    if body is None:
        return None
    last = body.children[-1] if body.children else None
    return last if last is not None and last.type == "}" else None


def _member_indent(text: _Text, node: tree_sitter.Node, closer: tree_sitter.Node) -> str | None:
    """Indentation of the first member of a body that spans several lines."""
    opener_line = text.line_start(text.char(node.start_byte))
    body = closer.parent
    for child in body.children if body is not None else ():
        if not child.is_named or child.start_byte >= closer.start_byte:
            continue
        if child.type == "access_specifier" or child.type.startswith("preproc"):
            continue  # C++ ` public:` and `#if` lines are no members
        index = text.char(child.start_byte)
        start = text.line_start(index)
        if start != opener_line and not text.source[start:index].strip():
            return text.source[start:index]
    return None


def _has_body_content(closer: tree_sitter.Node) -> bool:
    body = closer.parent
    return body is not None and any(
        child.is_named and child.start_byte < closer.start_byte for child in body.children
    )


# --- Python through the interpreter's parser ------------------------------------------


def _parse_python(source: str) -> ast.Module:
    """``source`` parsed by the interpreter; warnings (invalid escapes) are not ours to show."""
    with pyast.quietly():
        return pyast.parse(source)


def _check_python_statements(new_source: str) -> None:
    code = reindent(new_source, "") + "\n"
    try:
        module = _parse_python(code)
    except SyntaxError as error:
        raise SymbolEditError(
            ErrorCode.SYNTAX_ERROR,
            f"new_source does not parse as Python (line {error.lineno}): {error.msg}",
        ) from None
    except (ValueError, RecursionError, MemoryError) as error:  # NUL bytes, deep nesting
        raise SymbolEditError(
            ErrorCode.SYNTAX_ERROR, f"new_source does not parse as Python: {error}"
        ) from None
    if not module.body:
        raise SymbolEditError(ErrorCode.INVALID_ARGS, "new_source holds no statement")


def _check_python_location(text: _Text, symbol: Symbol, count: int) -> None:
    """Confirm with ``ast`` that ``symbol`` is a def/class of that qualified name.

    Called only where tree-sitter recovered from a parse error: on text it
    parses cleanly its definitions agree with ``ast`` (tests/code/
    test_code_python_agreement.py), so a clean parse needs no second opinion.
    Definitions sharing a qualified name (overloads, redefinitions) are told
    apart by their order in the file, which both parsers share.
    """
    try:
        module = _parse_python(text.source)
        if symbol.kind == "constant":
            found = sum(
                isinstance(line, (ast.Assign, ast.AnnAssign))
                and _assigns_name(line, symbol.qualname)
                for line in module.body
            )
        else:
            found = _count_definitions(module, (), symbol.qualname)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # Python cannot read the file; the tree-sitter location stands
    if found != count:
        raise SymbolEditError(
            ErrorCode.SYMBOL_NOT_FOUND,
            f"{symbol.qualname}: Python finds {found} definition(s) where tree-sitter "
            f"finds {count}; read the file and edit it with replace_string",
        )


_DEFINITION_START = re.compile(r"(?:async[ \t]+def|def|class)[ \t]|@")


def _check_python_extent(text: _Text, symbol: Symbol, node: tree_sitter.Node | None) -> None:
    """Refuse a definition whose span a syntax error inside it ran on into the next one.

    Recovering from an unclosed bracket, tree-sitter may end ``def f`` after the
    ``def g`` below it (or take ``g`` into its error node): replacing or deleting
    ``f`` would then take ``g`` along. Python ends a block where the indentation
    does, so a ``def``, ``class`` or decorator inside the span, indented no deeper
    than the definition itself, shows the span is wrong.
    """
    if node is None or not node.has_error:
        return
    start = text.line_start(text.char(symbol.start_byte))
    lines = text.source[start : text.char(symbol.end_byte)].split("\n")
    own = lines[symbol.def_line - symbol.start_line]
    depth = len(_leading(own).expandtabs(8))
    for offset, line in enumerate(lines[symbol.def_line - symbol.start_line + 1 :], 1):
        margin = _leading(line)
        if _DEFINITION_START.match(line, len(margin)) and len(margin.expandtabs(8)) <= depth:
            at = symbol.def_line + offset
            raise SymbolEditError(
                ErrorCode.SYNTAX_ERROR,
                f"{symbol.qualname} has a syntax error that runs it on into line {at} "
                f"({line.strip()[:60]!r}), so where it ends is not known; fix the error "
                "with replace_string first",
            )


def _count_definitions(node: ast.AST, parts: tuple[str, ...], qualname: str) -> int:
    """How many def/class statements under ``node`` have qualified name ``qualname``."""
    count = 0
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = (*parts, child.name)
            count += ".".join(inner) == qualname
            count += _count_definitions(child, inner, qualname)
        else:
            count += _count_definitions(child, parts, qualname)
    return count


def _assigns_name(statement: ast.Assign | ast.AnnAssign, name: str) -> bool:
    first = statement.target if isinstance(statement, ast.AnnAssign) else statement.targets[0]
    return isinstance(first, ast.Name) and first.id == name


# --- indentation ------------------------------------------------------------------


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _tabs_to_spaces(line: str, unit: str) -> str:
    margin = _leading(line)
    return margin.replace("\t", unit) + line[len(margin) :] if "\t" in margin else line


def _smallest_step(margins: list[str]) -> int:
    """The new text's indentation step (one-space margins are alignment, e.g. ``/** * */``)."""
    widths = sorted({len(m) for m in margins if len(m) >= 2})
    return widths[0] if widths else 4


def _spaces_to_tabs(line: str, step: int) -> str:
    margin = _leading(line)
    if not margin:
        return line
    width = len(margin)
    return "\t" * (width // step) + " " * (width % step) + line[len(margin) :]


_DEFAULT_UNITS = {"go": "\t", "ruby": "  ", "javascript": "  ", "typescript": "  ", "tsx": "  "}


# The indentation unit is measured on the first lines, by the margins of non-blank lines.
_UNIT_LINES = 2000
# The whole margin, or none: a shorter one tried after each failed longer one took the
# square of a blank line's length.
_MARGIN = re.compile(r"^([ \t]*)(?![ \t])(?=[^\n]*\S)", re.MULTILINE)


def _indent_unit(source: str, language: str) -> str:
    """The file's indentation step: a tab, or the most common space step between lines."""
    tabs = spaces = 0
    steps: dict[int, int] = {}
    previous = 0
    head = "\n".join(source.split("\n", _UNIT_LINES)[:_UNIT_LINES])
    for margin in _MARGIN.findall(head):
        if margin.startswith("\t"):
            tabs += 1
            continue
        if margin == " ":
            continue  # alignment (the ` * ` of a block comment), not a level
        if margin:
            spaces += 1
        width = len(margin)
        if width > previous:
            steps[width - previous] = steps.get(width - previous, 0) + 1
        previous = width
    if tabs > spaces:
        return "\t"
    if steps:
        return " " * max(steps, key=lambda step: (steps[step], -step))
    return _DEFAULT_UNITS.get(language, "    ")


_WORDS_BEFORE = re.compile(r"[\w*&<>:, ]+")  # `typedef`, `EXPORT_API`, `template <class T>`


def _is_line_comment(text: str, language: str) -> bool:
    markers = ("#",) if language in ("python", "ruby") else ("//", "/*")
    return text.startswith(markers)
