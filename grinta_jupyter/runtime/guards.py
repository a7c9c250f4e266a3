"""Content guards: refuse payloads that would corrupt a file in tell-tale ways.

They look only at the lines an edit adds, so they apply identically to every
tool and never trip on what a file already contained.

- CONTENT_SERIALIZED: code that arrived JSON-escaped, e.g. ``def f():\\n    pass``
  on one line. An escape sequence (``\\n``, ``\\t``, ``\\"``) outside any
  string literal is the tell; ``print("a\\nb")`` has its ``\\n`` inside quotes
  and passes.
- PLACEHOLDER: elisions such as ``# ... rest of the code unchanged ...`` that
  would replace real code with a comment.
"""

from __future__ import annotations

import re

from grinta_jupyter.runtime.errors import CONTENT_SERIALIZED, PLACEHOLDER, ToolError

_ESCAPE_AFTER_BACKSLASH = frozenset('nrt"')

_COMMENT = re.compile(r"^\s*(?:#+|//+|/\*+|<!--|--|;+|\*|%+)?\s*")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_NOUN = (
    r"(?:code|file|function|class|method|methods|functions|implementation|module|body|content"
    r"|logic|lines|imports|tests|fields|definitions|cases)"
)
_ELIDED = re.compile(
    rf"\b(?:(?:rest|remainder) of (?:the )?(?:\w+ )?{_NOUN}|(?:existing|remaining|previous|other|original"
    rf"|unchanged|same) {_NOUN}|{_NOUN} (?:remains?|unchanged|omitted|as before)|omitted for brevity"
    r"|same as (?:before|above))\b",
    re.IGNORECASE,
)
_ELIDED_CLAIM = re.compile(
    r"\b(?:unchanged|omitted|as before|goes here|remains? the same|here)\b", re.I
)


def is_placeholder_line(line: str) -> bool:
    """True for a line that stands in for elided code, e.g. ``# ... existing code ...``."""
    body = _COMMENT.sub("", line, count=1).strip().strip("[]()").strip()
    if not body or len(body) > 80 or not _ELIDED.search(body):
        return False
    if _ELLIPSIS.search(body):
        return True
    # Without an ellipsis, only a short comment that claims the code is elsewhere.
    return bool(_COMMENT.match(line).group().strip()) and bool(_ELIDED_CLAIM.search(body))


def escapes_outside_strings(text: str) -> int:
    """Count backslash escapes (\\n, \\r, \\t, \\") that stand outside string literals."""
    count = 0
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is None:
            if ch == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPE_AFTER_BACKSLASH:
                count += 1
                i += 2
                continue
            if ch in "\"'`":
                quote = ch
        elif ch == "\\":
            i += 2
            continue
        elif ch == quote or ch == "\n":
            quote = None  # strings do not span lines here; a stray quote cannot hide the rest
        i += 1
    return count


def check_serialized(added: str) -> ToolError | None:
    """CONTENT_SERIALIZED when ``added`` looks like JSON-escaped code."""
    escapes = escapes_outside_strings(added)
    real_newlines = added.count("\n")
    if escapes >= 2 and escapes > real_newlines:
        return ToolError(
            CONTENT_SERIALIZED,
            f"the new text contains {escapes} literal escape sequences (like \\n) outside string "
            "literals, which looks like JSON-escaped code; send real newlines and quotes",
        )
    return None


def check_placeholder(added_lines: list[tuple[int, str]], old_text: str) -> ToolError | None:
    """PLACEHOLDER when an added line is an elision marker the file did not already hold."""
    for line_no, line in added_lines:
        if is_placeholder_line(line) and line.strip() not in old_text:
            return ToolError(
                PLACEHOLDER,
                f"the edit adds a placeholder at line {line_no} ({line.strip()[:60]!r}); "
                "write out the full code instead of eliding it",
                line=line_no,
            )
    return None
