"""Showing untrusted text to a person: control characters made visible, never interpreted.

Proposed content, paths, arguments and command output reach a terminal or a
card. A carriage return, an ANSI escape or a bidirectional override in them
could rewrite what the reviewer sees (erase the line above, recolour a line,
reorder characters). ``visible`` replaces every such character with a
backslash escape (``\\r``, ``\\x1b``, ``\\u202e``); tab and, where asked,
newline are kept. Both the CLI and every card use it (the labextension has
the same rule in TypeScript: labextension/src/visible.ts).
"""

from __future__ import annotations

import re

_NAMED = {"\r": "\\r", "\x00": "\\0", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b", "\x07": "\\a"}
# C0 controls but tab and newline, DEL, C1 controls, bidirectional controls, zero-width
# characters that can hide text, line and paragraph separators, and the byte-order mark.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)
_UNSAFE_OR_NEWLINE = re.compile(_UNSAFE.pattern[:-1] + "\n]")


def escape_char(char: str) -> str:
    """The visible form of one unsafe character."""
    named = _NAMED.get(char)
    if named:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control character shown as an escape (tab kept; newline if asked)."""
    pattern = _UNSAFE if keep_newlines else _UNSAFE_OR_NEWLINE
    return pattern.sub(lambda m: "\\n" if m.group() == "\n" else escape_char(m.group()), text)


def has_unsafe(text: str) -> bool:
    """True when ``visible`` would change ``text`` (newlines aside)."""
    return _UNSAFE.search(text) is not None
