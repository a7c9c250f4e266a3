"""Showing untrusted text to a person: control characters made visible, never interpreted.

Proposed content, paths, arguments and command output reach a terminal or a
card. A carriage return, an ANSI escape or a bidirectional override in them
could rewrite what the reviewer sees (erase the line above, recolour a line,
reorder characters), and an invisible character could make two different
texts look the same. ``visible`` replaces every such character with a
backslash escape (``\\r``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``); tab and,
where asked, newline are kept. ``visible_parts`` gives the same text as runs
of literal text and escapes, so a card can style the escapes apart from text
that merely looks like one.

Both the CLI and every card use it. The labextension has the same rule in
TypeScript (labextension/src/visible.ts); both are tested against the cases
in labextension/test/fixtures/visible-cases.json.
"""

from __future__ import annotations

import re
import unicodedata

_NAMED = {"\r": "\\r", "\x00": "\\0", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b", "\x07": "\\a"}
# C0 controls but tab and newline, DEL and C1 controls; bidirectional controls; line and
# paragraph separators; the characters Unicode says render as nothing (zero-width spaces
# and joiners, soft hyphen, fillers, tags, the byte-order mark, variation selectors except
# the emoji and text presentation selectors U+FE0E and U+FE0F); and lone surrogates, which
# no UTF-8 text can hold.
_UNSAFE_CLASS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ud800-\udfff\ufe00-\ufe0d\ufeff\uffa0"
    "\ufff0-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]+")
_UNSAFE_OR_NEWLINE = re.compile(f"[{_UNSAFE_CLASS}\n]+")


def escape_char(char: str) -> str:
    """The visible form of one unsafe character (``\\r``, ``\\x1b``, ``\\u202e``...)."""
    if char == "\n":
        return "\\n"
    named = _NAMED.get(char)
    if named:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escape_run(match: re.Match[str]) -> str:
    return "".join(escape_char(char) for char in match.group())


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control character shown as an escape (tab kept; newline if asked)."""
    pattern = _UNSAFE if keep_newlines else _UNSAFE_OR_NEWLINE
    return pattern.sub(_escape_run, text)


def visible_parts(text: str, *, keep_newlines: bool = True) -> list[tuple[str, bool]]:
    """``visible(text)`` as runs ``(text, is_escape)``: literal text, and escapes to style apart."""
    pattern = _UNSAFE if keep_newlines else _UNSAFE_OR_NEWLINE
    parts: list[tuple[str, bool]] = []
    end = 0
    for match in pattern.finditer(text):
        if match.start() > end:
            parts.append((text[end : match.start()], False))
        parts.append((_escape_run(match), True))
        end = match.end()
    if end < len(text):
        parts.append((text[end:], False))
    return parts


# What the carets of ``escape_marks`` say, after them on their line.
ESCAPE_MARKS_NOTE = "characters shown escaped, not typed text"


def escape_marks(text: str) -> str:
    """Carets under the escapes of ``visible(text, keep_newlines=False)``, "" when it has none.

    For surfaces that cannot style an escape (a terminal without colour, ``text/plain``):
    printed under the line, they tell a carriage return shown as ``\\r`` from a backslash
    and an ``r`` typed in the text (Python reads a lone carriage return as a line break).
    """
    parts = visible_parts(text, keep_newlines=False)
    if not any(escaped for _, escaped in parts):
        return ""
    return "".join(
        "^" * len(part) if escaped else "".join(map(_blank, part)) for part, escaped in parts
    ).rstrip()


def _blank(char: str) -> str:
    """What goes under ``char`` so the next caret lands under the next column: a tab, or as
    many spaces as a terminal gives it (two for a wide character, none for a combining one)."""
    if char == "\t":
        return char
    if unicodedata.combining(char):
        return ""
    return "  " if unicodedata.east_asian_width(char) in ("W", "F") else " "


def has_unsafe(text: str) -> bool:
    """True when ``visible`` would change ``text`` (newlines aside)."""
    return _UNSAFE.search(text) is not None
