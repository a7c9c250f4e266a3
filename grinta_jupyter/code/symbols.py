"""Definitions in a source file: what the model can address as ``path::Qualified.name``.

``extract_symbols`` parses one file with its offline tree-sitter grammar, runs a
definitions query written for that language (``code/queries.py``) and turns each
match into a :class:`Symbol`: name, qualified name, kind, and the exact span an
edit would replace.

Span conventions, shared by every language:

- A symbol's span starts at its first decorator, attribute or attached comment.
  A comment is attached when it sits directly above the definition (no blank
  line between) at the same column. ``start_byte`` is the offset of that first
  token itself (after the line's indentation), not of the line.
- The span ends at the definition's last byte (a trailing ``;`` that belongs to
  a C/C++ type definition or a JavaScript/TypeScript class member included);
  ``end_byte`` is exclusive and never covers the final newline.
- ``def_line`` is the line of the definition keyword or name, after the
  decorators and comments; ``signature`` is that line, stripped.
- Qualified names join enclosing classes, modules, namespaces, impl types and
  functions with ``.`` (a Go method is ``Receiver.Method``, a C++ out-of-line
  ``Foo::bar`` is ``Foo.bar``).

No tree outlives a call: the index keeps symbols, never syntax trees.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

from grinta_jupyter.code import giveway, queries
from grinta_jupyter.runtime.grammars import grammar, language_for, parser_for
from grinta_jupyter.runtime.notebook import is_notebook

if TYPE_CHECKING:
    import tree_sitter

KINDS = frozenset(
    {
        "function",
        "method",
        "class",
        "interface",
        "type",
        "enum",
        "struct",
        "trait",
        "module",
        "constant",
        "namespace",
    }
)

SYMBOL_LANGUAGES: frozenset[str] = frozenset(queries.SPECS)

# Longest signature kept (bytes); longer lines are cut, starting at the definition.
SIGNATURE_MAX = 240


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition in one file (lines 1-based and inclusive; bytes into the UTF-8 source)."""

    name: str
    qualname: str
    kind: str
    path: str
    language: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    def_line: int
    signature: str
    # In a notebook: the key of the code cell holding the definition (its id, or its
    # position in a notebook without ids); lines and bytes then count within that cell.
    cell: str = ""

    @property
    def address(self) -> str:
        """The address the model uses for this symbol: ``path::Qualified.name``."""
        return f"{self.path}::{self.qualname}"

    @property
    def location(self) -> str:
        """Where the symbol's lines count from: its file, or in a notebook its cell."""
        return f"{self.path}::cell:{self.cell}" if self.cell else self.path

    @property
    def container(self) -> str:
        """Qualified name of the enclosing symbol ('' at top level)."""
        return self.qualname.rpartition(".")[0]


def extract_symbols(path: str, source: bytes, language: str | None = None) -> list[Symbol]:
    """Every definition in ``source`` in source order ([] for languages without symbol support).

    A notebook's definitions are those of its Python code cells, each counted within its cell.
    """
    if language is None and is_notebook(path):
        return notebook_symbols(path, source)
    return [symbol for symbol, _ in locate_nodes(path, source, language)[1]]


def notebook_symbols(path: str, source: bytes) -> list[Symbol]:
    """The definitions in a notebook's code cells ([] for a file that is no notebook)."""
    from grinta_jupyter.runtime.errors import ToolFailure
    from grinta_jupyter.runtime.notebook import Notebook

    try:
        notebook = Notebook.parse(source.decode("utf-8-sig"), path)
    except (ToolFailure, UnicodeDecodeError, RecursionError):
        return []
    found: list[Symbol] = []
    if not notebook.is_python:
        return found  # an R or Julia notebook's cells are not Python
    for cell in notebook.cells:
        if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
            continue  # a cell magic (%%bash, %%html, ...) is not Python
        for symbol in extract_symbols(path, cell.source.encode("utf-8"), "python"):
            found.append(replace(symbol, cell=cell.key))
    return found


def locate_nodes(
    path: str,
    source: bytes,
    language: str | None = None,
    tree: tree_sitter.Tree | None = None,
) -> tuple[tree_sitter.Tree | None, list[tuple[Symbol, tree_sitter.Node]]]:
    """Like ``extract_symbols``, with each symbol's definition node (for edits).

    ``tree``, when given, is ``source`` already parsed (by the caller's contract).
    The tree is returned so the caller decides how long the nodes live.
    """
    language = language or language_for(path)
    if language not in queries.SPECS:
        return None, []
    spec = queries.SPECS[language]
    if tree is None:
        tree = parser_for(language).parse(source)
        giveway.pause()
    entries = _collect(spec, source, tree.root_node)
    giveway.pause()
    return tree, _build(path, language, spec, source, tree.root_node, entries)


@cache
def _compiled(language: str) -> tree_sitter.Query:
    import tree_sitter

    query: tree_sitter.Query = tree_sitter.Query(grammar(language), queries.SPECS[language].query)
    return query


@dataclass(slots=True)
class _Entry:
    kind: str  # a symbol kind, or "scope" for a container that is no symbol (Rust impl)
    name: str
    prefix: tuple[str, ...]  # qualifiers written at the definition (Go receiver, C++ Foo::)
    core: tree_sitter.Node  # the definition node the query matched
    span: tree_sitter.Node  # the node covering the whole definition
    start: int  # span bytes, before comments are attached
    end: int
    end_point: tuple[int, int]  # (row, column) of ``end``
    parts: tuple[str, ...] = ()  # qualified name parts, filled while nesting


def _collect(spec: queries.Spec, source: bytes, root: tree_sitter.Node) -> list[_Entry]:
    import tree_sitter

    entries: list[_Entry] = []
    for _, captures in tree_sitter.QueryCursor(_compiled(spec.language)).matches(root):
        definition = next((c for c in captures if c.startswith("definition.")), None)
        if definition is None:
            continue
        kind = definition[len("definition.") :]
        core = captures[definition][0]
        for prefix, name, kind_override in spec.names(kind, core, captures, source):
            if not name:
                continue
            span = _span_node(spec, core)
            last = span
            if spec.eat_semicolon:
                following = span.next_sibling
                if following is not None and (
                    following.type == ";"
                    # JavaScript: `function f() {};` ends in an empty statement.
                    or (
                        following.type == "empty_statement"
                        and following.start_point[0] == span.end_point[0]
                    )
                ):
                    last = following
            entries.append(
                _Entry(
                    kind_override or kind,
                    name,
                    prefix,
                    core,
                    span,
                    span.start_byte,
                    last.end_byte,
                    (last.end_point[0], last.end_point[1]),
                )
            )
    return entries


def _span_node(spec: queries.Spec, core: tree_sitter.Node) -> tree_sitter.Node:
    """The node whose text is the whole definition (decorators, ``export``, ``template<>``)."""
    node = core
    while True:
        parent = node.parent
        if parent is None or not spec.wraps(parent, node):
            return node
        node = parent


def _build(
    path: str,
    language: str,
    spec: queries.Spec,
    source: bytes,
    root: tree_sitter.Node,
    entries: list[_Entry],
) -> list[tuple[Symbol, tree_sitter.Node]]:
    entries.sort(key=lambda e: (e.start, -e.end))
    stack: list[_Entry] = []
    kept: list[_Entry] = []
    for entry in entries:
        while stack and (
            stack[-1].end <= entry.start
            or (stack[-1].start == entry.start and stack[-1].end == entry.end)
        ):
            stack.pop()
        parent = stack[-1] if stack else None
        parent_parts = parent.parts if parent else ()
        entry.parts = (*parent_parts, *entry.prefix, entry.name)
        parent_kind = parent.kind if parent else None
        if entry.kind == "function" and (
            parent_kind in spec.method_containers or spec.is_method(entry, parent_kind)
        ):
            entry.kind = "method"
        stack.append(entry)
        if entry.kind == "scope":
            continue
        if entry.kind == "constant" and parent_kind in ("function", "method"):
            continue
        if kept and (kept[-1].start, kept[-1].end, kept[-1].kind, kept[-1].parts) == (
            entry.start,
            entry.end,
            entry.kind,
            entry.parts,
        ):
            continue  # one definition named twice: C's `typedef struct s {...} s;`
        kept.append(entry)
    kept = spec.postprocess(kept)

    # Line numbers come from node points: counting newlines per symbol would be
    # quadratic on minified files.
    symbols: list[tuple[Symbol, tree_sitter.Node]] = []
    for entry in kept:
        start, start_row = _attach_above(spec, source, root, entry)
        end = entry.end
        end_row = entry.end_point[0]
        while end > start and source[end - 1] in b" \t\r\n":
            end -= 1
            if source[end] == 10:  # b"\n"
                end_row -= 1
        definition = _def_node(spec, entry.core)
        def_byte = definition.start_byte
        def_row, def_column = definition.start_point
        line_start = def_byte - def_column
        if def_column > SIGNATURE_MAX // 2:  # minified code: start at the definition
            line_start = def_byte
        line_end = source.find(b"\n", def_byte, line_start + SIGNATURE_MAX)
        if line_end < 0:
            line_end = min(len(source), line_start + SIGNATURE_MAX)
        signature = source[line_start:line_end].decode("utf-8", "replace")
        # A byte order mark opens the file's first line but is no part of what it says (and
        # strip() keeps it: it is not whitespace).
        signature = signature.removeprefix("\ufeff").strip()
        symbols.append(
            (
                Symbol(
                    name=entry.name,
                    qualname=".".join(entry.parts),
                    kind=entry.kind,
                    path=path,
                    language=language,
                    start_line=start_row + 1,
                    end_line=end_row + 1,
                    start_byte=start,
                    end_byte=end,
                    def_line=def_row + 1,
                    signature=signature,
                ),
                entry.core,
            )
        )
    return symbols


# A definition further right than this is not the first thing on its line.
_MAX_INDENT = 256


def _attach_above(
    spec: queries.Spec, source: bytes, root: tree_sitter.Node, entry: _Entry
) -> tuple[int, int]:
    """(byte, row) where the span starts once decorators and comments above are included."""
    span = entry.span
    start = entry.start
    row, column = span.start_point
    # Decorators/attributes that are siblings, possibly on the same line.
    sibling = span.prev_named_sibling
    while (
        sibling is not None
        and sibling.type in spec.leading_siblings
        and not source[sibling.end_byte : start].strip()
    ):
        start = sibling.start_byte
        row, column = sibling.start_point
        sibling = sibling.prev_named_sibling
    line_start = start - column
    if column > _MAX_INDENT or source[line_start:start].strip():
        return start, row  # the definition is not the first thing on its line
    while line_start > 0:
        prev_end = line_start - 1  # the '\n' ending the previous line
        prev_start = source.rfind(b"\n", 0, prev_end) + 1
        line = source[prev_start:prev_end]
        text = line.lstrip(b" \t")
        if not text.strip():
            break  # a blank line detaches whatever is above it
        first = prev_start + len(line) - len(text)
        node = root.descendant_for_byte_range(first, first + 1)
        # Climb from the first token to the comment or attribute it belongs to.
        while node is not None and node.type not in spec.attached and node.start_byte == first:
            node = node.parent
        if node is None or node.type not in spec.attached:
            break
        node_start = node.start_byte
        node_row, node_column = node.start_point
        node_line_start = node_start - node_column
        node_end = node.end_byte
        while node_end > node_start and source[node_end - 1] in b" \t\r\n":
            node_end -= 1
        if (
            node_column != column
            or source[node_line_start:node_start].strip()
            or node_end <= prev_start
            or node_end > prev_end
            or source[node_end:prev_end].strip()
        ):
            break
        start, row = node_start, node_row
        line_start = node_line_start
    return start, row


def _def_node(spec: queries.Spec, core: tree_sitter.Node) -> tree_sitter.Node:
    """The first token of the definition itself, after decorators, annotations and comments."""
    for child in core.children:
        if child.type in spec.attached or child.type in spec.leading_siblings:
            continue
        if child.type == "modifiers":  # Java: annotations live inside the modifiers
            for token in child.children:
                if token.type not in ("marker_annotation", "annotation") and (
                    token.type not in spec.attached
                ):
                    return token
            continue
        return child
    return core
