"""The JSON text of a notebook, read and written in place.

Two halves of one contract: edits to a notebook splice its original JSON text
rather than re-serialising it, so untouched bytes stay as they were.

- A tiny position-keeping scanner (``object_members``, ``array_items``,
  ``value_at``) finds where each member and item sits in the text; the values
  themselves are parsed by ``json``. Malformed text raises ValueError (the
  caller turns it into NOTEBOOK_INVALID).
- ``Layout`` is how the file is written (indentation unit, separators, ASCII
  escapes, newline), read once by ``layout_of``; ``dumps`` writes a new value
  in that style, so new JSON looks like the old.

Nothing here knows about cells or nbformat (that is ``runtime/notebook.py``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# -- where values sit in the text ------------------------------------------------------

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def skip_ws(text: str, at: int) -> int:
    """The offset of the first non-whitespace character at or after ``at``."""
    found = _WS.match(text, at)
    return found.end() if found else at


def object_members(text: str, at: int) -> list[tuple[str, tuple[int, int]]]:
    """The members of the object starting at ``at``: (key, value span) in order."""
    if at >= len(text) or text[at] != "{":
        raise ValueError(f"expected an object at offset {at}")
    members: list[tuple[str, tuple[int, int]]] = []
    at = skip_ws(text, at + 1)
    if at < len(text) and text[at] == "}":
        return members
    while True:
        key, at = _DECODER.raw_decode(text, at)
        if not isinstance(key, str):
            raise ValueError(f"expected a key at offset {at}")
        at = skip_ws(text, at)
        if at >= len(text) or text[at] != ":":
            raise ValueError(f"expected ':' at offset {at}")
        start = skip_ws(text, at + 1)
        _, end = _DECODER.raw_decode(text, start)
        members.append((key, (start, end)))
        at = skip_ws(text, end)
        if at < len(text) and text[at] == ",":
            at = skip_ws(text, at + 1)
            continue
        if at < len(text) and text[at] == "}":
            return members
        raise ValueError(f"expected ',' or '}}' at offset {at}")


def array_items(text: str, at: int) -> list[tuple[int, int]]:
    """Spans of the items of the array starting at ``at``."""
    if text[at] != "[":
        raise ValueError(f"expected an array at offset {at}")
    items: list[tuple[int, int]] = []
    at = skip_ws(text, at + 1)
    if at < len(text) and text[at] == "]":
        return items
    while True:
        _, end = _DECODER.raw_decode(text, at)
        items.append((at, end))
        at = skip_ws(text, end)
        if at < len(text) and text[at] == ",":
            at = skip_ws(text, at + 1)
            continue
        if at < len(text) and text[at] == "]":
            return items
        raise ValueError(f"expected ',' or ']' at offset {at}")


def value_at(text: str, span: tuple[int, int] | None) -> Any:
    """The JSON value at ``span`` (None for a missing member)."""
    if span is None:
        return None
    return json.loads(text[span[0] : span[1]])


# -- the file's style, read and written ------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How the file is written, so new JSON looks like the old."""

    unit: str | None  # one indentation step; None for JSON on one line
    ensure_ascii: bool
    item_separator: str  # between members on one line ("," or ", ")
    key_separator: str  # ": " or ":"
    newline: str = "\n"  # "\r\n" for a notebook written with CRLF


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a JSON string
# A \u escape past ASCII's controls, with the run of backslashes before it: only an odd
# run escapes (in `\\u00e9` the backslash is escaped and the "u" is plain text). Only from
# the run's first backslash: tried from each one, a long run took the square of its length.
_ESCAPE = re.compile(r"(?<!\\)(\\+)u(?!00[0-7])[0-9a-fA-F]{4}")


def layout_of(text: str) -> Layout:
    """The layout ``text`` is written in (guessed from its first indented key)."""
    match = re.search(r"\{\r?\n([ \t]+)\"", text)
    unit = match.group(1) if match else None
    non_ascii = not text.isascii()
    escapes = any(len(found.group(1)) % 2 for found in _ESCAPE.finditer(text))
    # On one line, separators are read between values, never inside a string (a source
    # holding `": `); an indented file's are json's own.
    bare = _STRING.sub('""', text) if unit is None else text
    return Layout(
        unit=unit,
        ensure_ascii=escapes and not non_ascii,
        item_separator=", " if unit is None and '", "' in bare else ",",
        key_separator=": " if '": ' in bare else ":",
        newline="\r\n" if "\r\n" in text else "\n",
    )


_INDENT = re.compile(r"[ \t]*")
# How far back from a value its line's start is looked for. A value of an indented file
# sits a short key after its line's indentation; in JSON on one line there is no line start
# to find, and searching the whole text back for each edited cell made an edit of every
# cell of a one-line notebook quadratic (25 s for 40,000 cells).
_LINE_LOOKBACK = 1024


def line_indent(text: str, at: int) -> str:
    """The whitespace that starts the line holding offset ``at``; "" when that line starts
    more than ``_LINE_LOOKBACK`` characters before it (no indented layout writes one so)."""
    floor = max(0, at - _LINE_LOOKBACK)
    newline = text.rfind("\n", floor, at)
    if newline < 0 and floor > 0:
        return ""
    indent = _INDENT.match(text, newline + 1, at)
    return indent.group(0) if indent else ""


def dumps(value: Any, layout: Layout, indent: str) -> str:
    """``value`` as JSON in the file's style, continuation lines indented by ``indent``."""
    if layout.unit is None:
        return json.dumps(
            value,
            ensure_ascii=_ascii(value, layout),
            separators=(layout.item_separator, layout.key_separator),
            sort_keys=False,
        )
    dumped = json.dumps(value, indent=layout.unit, ensure_ascii=_ascii(value, layout))
    return dumped.replace("\n", layout.newline + indent)


def _ascii(value: Any, layout: Layout) -> bool:
    """Escape non-ASCII as the file does; always for a lone surrogate (no UTF-8 for it)."""
    if layout.ensure_ascii:
        return True
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


__all__ = [
    "Layout",
    "array_items",
    "dumps",
    "layout_of",
    "line_indent",
    "object_members",
    "skip_ws",
    "value_at",
]
