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
  a C/C++ type definition included); ``end_byte`` is exclusive and never covers
  the final newline.
- ``def_line`` is the line of the definition keyword or name, after the
  decorators and comments; ``signature`` is that line, stripped.
- Qualified names join enclosing classes, modules, namespaces, impl types and
  functions with ``.`` (a Go method is ``Receiver.Method``, a C++ out-of-line
  ``Foo::bar`` is ``Foo.bar``).

No tree outlives a call: the index keeps symbols, never syntax trees.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from grinta_jupyter.code import queries
from grinta_jupyter.runtime.grammars import grammar, language_for, parser_for

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

    @property
    def address(self) -> str:
        """The address the model uses for this symbol: ``path::Qualified.name``."""
        return f"{self.path}::{self.qualname}"

    @property
    def container(self) -> str:
        """Qualified name of the enclosing symbol ('' at top level)."""
        return self.qualname.rpartition(".")[0]


def extract_symbols(path: str, source: bytes, language: str | None = None) -> list[Symbol]:
    """Every definition in ``source`` in source order ([] for languages without symbol support)."""
    language = language or language_for(path)
    if language not in queries.SPECS:
        return []
    spec = queries.SPECS[language]
    tree = parser_for(language).parse(source)
    entries = _collect(spec, source, tree.root_node)
    return _build(path, language, spec, source, tree.root_node, entries)


@cache
def _compiled(language: str) -> tree_sitter.Query:
    import tree_sitter

    return tree_sitter.Query(grammar(language), queries.SPECS[language].query)


@dataclass(slots=True)
class _Entry:
    kind: str  # a symbol kind, or "scope" for a container that is no symbol (Rust impl)
    name: str
    prefix: tuple[str, ...]  # qualifiers written at the definition (Go receiver, C++ Foo::)
    core: tree_sitter.Node  # the definition node the query matched
    start: int  # span, before comments are attached
    end: int
    parts: tuple[str, ...] = ()  # qualified name parts, filled while nesting


def _collect(spec: queries.Spec, source: bytes, root: tree_sitter.Node) -> list[_Entry]:
    import tree_sitter

    entries: list[_Entry] = []
    for _, captures in tree_sitter.QueryCursor(_compiled(spec.language)).matches(root):
        for capture, nodes in captures.items():
            if capture.startswith("definition."):
                kind = capture[len("definition.") :]
                break
        else:
            continue
        core = nodes[0]
        for prefix, name, kind_override in spec.names(kind, core, captures, source):
            if not name:
                continue
            span = _span_node(spec, core)
            end = span.end_byte
            if spec.eat_semicolon:
                following = span.next_sibling
                if following is not None and following.type == ";":
                    end = following.end_byte
            entries.append(
                _Entry(kind_override or kind, name, prefix, core, span.start_byte, end)
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
) -> list[Symbol]:
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
        kept.append(entry)
    kept = spec.postprocess(kept)

    symbols: list[Symbol] = []
    for entry in kept:
        start = _attach_above(spec, source, root, entry)
        end = entry.end
        while end > start and source[end - 1] in b" \t\r\n":
            end -= 1
        start_line = source.count(b"\n", 0, start) + 1
        def_byte = _def_start(spec, entry.core)
        def_line = start_line + source.count(b"\n", start, def_byte)
        end_line = def_line + source.count(b"\n", def_byte, end)
        line_start = source.rfind(b"\n", 0, def_byte) + 1
        line_end = source.find(b"\n", def_byte)
        if line_end < 0:
            line_end = len(source)
        signature = source[line_start:line_end].decode("utf-8", "replace").strip()
        symbols.append(
            Symbol(
                name=entry.name,
                qualname=".".join(entry.parts),
                kind=entry.kind,
                path=path,
                language=language,
                start_line=start_line,
                end_line=end_line,
                start_byte=start,
                end_byte=end,
                def_line=def_line,
                signature=signature,
            )
        )
    return symbols


def _attach_above(
    spec: queries.Spec, source: bytes, root: tree_sitter.Node, entry: _Entry
) -> int:
    """Start of the span once decorators and comments directly above are included."""
    start = entry.start
    span = _span_node(spec, entry.core)
    # Decorators/attributes that are siblings, possibly on the same line.
    sibling = span.prev_named_sibling
    while (
        sibling is not None
        and sibling.type in spec.leading_siblings
        and not source[sibling.end_byte : start].strip()
    ):
        start = sibling.start_byte
        sibling = sibling.prev_named_sibling
    line_start = source.rfind(b"\n", 0, start) + 1
    if source[line_start:start].strip():
        return start  # the definition is not the first thing on its line
    column = start - line_start
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
        node_line_start = source.rfind(b"\n", 0, node_start) + 1
        node_end = node.end_byte
        while node_end > node_start and source[node_end - 1] in b" \t\r\n":
            node_end -= 1
        if (
            node_start - node_line_start != column
            or source[node_line_start:node_start].strip()
            or node_end <= prev_start
            or node_end > prev_end
            or source[node_end:prev_end].strip()
        ):
            break
        start = node_start
        line_start = node_line_start
    return start


def _def_start(spec: queries.Spec, core: tree_sitter.Node) -> int:
    """Byte where the definition itself begins, after decorators, annotations and comments."""
    for child in core.children:
        if child.type in spec.attached or child.type in spec.leading_siblings:
            continue
        if child.type == "modifiers":  # Java: annotations live inside the modifiers
            for token in child.children:
                if token.type not in ("marker_annotation", "annotation") and (
                    token.type not in spec.attached
                ):
                    return token.start_byte
            continue
        return child.start_byte
    return core.start_byte
