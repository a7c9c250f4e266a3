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

Diff rows in the terminal and in a card's text and HTML also escape the whitespace a
change may be all about (``row_spaces``, ``row_parts``: trailing spaces, a tab turned into
spaces, a no-break space), which the labextension draws boxed or shaded instead.

Both the CLI and every card use it. The labextension has the same rule in
TypeScript (labextension/src/visible.ts); both are tested against the cases
in labextension/test/fixtures/visible-cases.json.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

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
    return parts_marks(visible_parts(text, keep_newlines=False))


def parts_marks(parts: Sequence[tuple[str, bool]]) -> str:
    """Carets under the escaped runs of ``parts`` (``visible_parts``, ``row_parts``), "" when
    none is escaped."""
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


# Spaces that are not U+0020 but look like it (no-break, en, em, thin, ideographic...). The
# cards box them in diff rows (labextension/src/render/diffView.ts); a terminal escapes them.
_ODD_SPACE = "\xa0\u1680\u2000-\u200a\u202f\u205f\u2800\u3000"  # U+2800: a blank braille cell
# Whitespace dropped to compare two rows: named, not ``\s``, which in Python also takes the
# separators U+001C-U+001F and U+0085 that JavaScript's does not (diffView.ts lists the same).
_SQUEEZE = re.compile(f"[\\t\\n\\v\\f\\r \\u2028\\u2029{_ODD_SPACE}\\ufeff]+")
# What a diff row shows escaped (``row_parts``): always the unsafe characters and the odd
# spaces; tabs in a whitespace-only change; spaces and tabs too where they end the row; and
# everything past ASCII in a row that only draws like its counterpart.
_ROW_ODD = re.compile(f"[{_UNSAFE_CLASS}\n{_ODD_SPACE}]+")
_ROW_TABS = re.compile(f"[{_UNSAFE_CLASS}\n{_ODD_SPACE}\t]+")
_ROW_END = re.compile(f"[{_UNSAFE_CLASS}\n{_ODD_SPACE} \t]+")
_NON_ASCII = re.compile(f"[{_UNSAFE_CLASS}\n{_ODD_SPACE}\t\x80-\U0010ffff]+")

RowSpaces = Literal["all", "letters", "trailing", "odd"]


def row_spaces(rows: Sequence[tuple[str, str]]) -> list[RowSpaces]:
    """What of each ``(role, text)`` row of a hunk to escape besides its control characters
    (``row_parts``), for the terminal and the card's text and HTML, as the labextension
    marks it (labextension/src/render/diffView.ts).

    ``all`` for an added or removed row whose change is whitespace only (its text, its
    whitespace dropped, is that of a row of the other side): its tabs too; ``letters`` for
    one that differs from a row of the other side, whitespace aside, only in how a letter is
    encoded (equal under NFKC once variation selectors are dropped: ``é`` as one character
    or as ``e`` and a combining accent, a full-width or ligature letter, ``a\ufe0fb``):
    every character past ASCII; ``trailing`` for the other
    added and removed rows: the spaces and tabs ending them; ``odd`` for the rest: only the
    spaces that are not U+0020. Otherwise a tab turned into spaces, a space added at a
    line's end or a no-break space for a space reads as the same line removed and added again.
    """
    squeezed = [_SQUEEZE.sub("", text) if role in ("add", "del") else "" for role, text in rows]
    changed = _on_both_sides(rows, squeezed)
    alike: set[int] = set()
    if not all(key.isascii() for key in squeezed):  # NFKC leaves ASCII as it is
        normal = [key if key.isascii() else _drawn(key) for key in squeezed]
        alike = _on_both_sides(rows, normal) - changed
    return [
        "all"
        if i in changed
        else "letters"
        if i in alike
        else "trailing"
        if role in ("add", "del")
        else "odd"
        for i, (role, _) in enumerate(rows)
    ]


# Variation selectors choose how the character before them is drawn (text or emoji); after
# most characters they draw nothing at all.
_SELECTORS = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]+")


def _drawn(text: str) -> str:
    """What ``text`` draws like, as far as ``row_spaces`` tells: NFKC, variation selectors
    dropped (``a\ufe0fb`` draws as ``ab``)."""
    return _SELECTORS.sub("", unicodedata.normalize("NFKC", text))


def _on_both_sides(rows: Sequence[tuple[str, str]], keys: Sequence[str]) -> set[int]:
    """Indexes of the added and removed rows whose key is the key of a row of the other side."""
    dels = {k for (role, _), k in zip(rows, keys, strict=True) if role == "del"}
    adds = {k for (role, _), k in zip(rows, keys, strict=True) if role == "add"}
    return {
        i
        for i, ((role, _), k) in enumerate(zip(rows, keys, strict=True))
        if (role == "del" and k in adds) or (role == "add" and k in dels)
    }


def row_parts(text: str, spaces: RowSpaces) -> list[tuple[str, bool]]:
    """A diff row's text as ``visible_parts`` gives it (one line), with the whitespace its
    change may be all about escaped too, so the row reads exactly as it will be written.

    Spaces that are not U+0020 are always escaped (``key:\\xa0value`` is no YAML mapping);
    ``trailing`` (an added or removed row) also escapes the spaces and tabs that end it, and
    ``all`` (a whitespace-only change, ``row_spaces``) its tabs as well, so a tab turned
    into spaces, or a space added at the end, does not read as the same line. Other spaces
    stay as they are: in a fixed-width font a count of spaces shows (a block indented
    further, the commonest whitespace-only change, stays readable). ``letters`` (a row that
    only draws like its counterpart, ``row_spaces``) escapes every character past ASCII
    too, so ``caf\\xe9`` and ``cafe\\u0301`` read apart.
    """
    if text.isascii() and text.isprintable() and not text.endswith(" "):
        return [(text, False)] if text else []  # most rows: nothing to escape (no tab either)
    end = len(text) if spaces == "odd" else len(text.rstrip(" \t"))
    pattern = {"all": _ROW_TABS, "letters": _NON_ASCII}.get(spaces, _ROW_ODD)
    parts: list[tuple[str, bool]] = []
    for piece, trailing in ((text[:end], False), (text[end:], True)):
        at = 0
        for match in (_ROW_END if trailing else pattern).finditer(piece):
            if match.start() > at:
                parts.append((piece[at : match.start()], False))
            shown = "".join("\\t" if c == "\t" else escape_char(c) for c in match.group())
            if parts and parts[-1][1]:  # the trailing run goes on an escape before it
                parts[-1] = (parts[-1][0] + shown, True)
            else:
                parts.append((shown, True))
            at = match.end()
        if at < len(piece):
            parts.append((piece[at:], False))
    return parts


def has_unsafe(text: str) -> bool:
    """True when ``visible`` would change ``text`` (newlines aside)."""
    return _UNSAFE.search(text) is not None
