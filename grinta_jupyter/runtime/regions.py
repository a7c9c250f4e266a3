"""Checking a large Python file by compiling only the part an edit touched, soundly.

A whole-file ``compile()`` of a 3,000-line module costs 10-20 ms, and an edit changes a
few lines. ``region_ok`` compiles just the statements around the change, and answers
True only when that proves the whole new file compiles.

The proof rests on the file's *layout*, taken from the compiler's own syntax tree of a
text known to compile: the lines where its module-level statements start (at column 0,
nothing of an earlier statement on that line), and for each top-level class the lines
where its members start, its body's indentation and its last line. Where a statement
starts so, the tokenizer is at rest (no open string, bracket or line continuation) and,
in a class, at the body's indentation. So when the changed lines lie between two such
starts:

- at module level, the new text between them compiles on its own: the file before them
  is unchanged statements, the file after them unchanged statements starting at column 0;
- in a class body, the new text between two member starts compiles as the body of a
  class of the same name (names are mangled as in the file), its first statement at the
  body's indentation, followed (when members follow) by a ``pass`` at that indentation
  standing for them; without code (a member deleted) it is blank lines and comments, and
  the class keeps a member.

What a region cannot see is kept out: it is compiled with the file's ``__future__``
features, never starts before the last future import (only the top of a file may hold
them) and may not add one; a ``global`` or ``nonlocal`` statement in the module's scope or
the class's (they make statements before them, or annotations anywhere, errors) sends the
check to the whole file; a line after one ending with a backslash is never taken for a
statement start, nor a region ending with one trusted (it would join the next line); a
region that ends a class while members follow is not trusted (the members would become the
body of its last block); blank lines are spaces and tabs only, and comments are compiled
too (a NUL in one is an error); a text holding a character ``str.splitlines`` breaks lines
at and Python does not (a form feed, U+2028, ...) is never cut.

A layout is learnt with ``ast`` (about 30 ms for 3,000 lines): ``learn`` does that after
a commit, in the runtime's background thread; a region that was proven gives the new
text's layout at once, from the old layout and the region's own tree. Without a layout,
``region_ok`` says False and the caller compiles the whole file.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import re
from dataclasses import dataclass, replace

from grinta_jupyter.runtime import pyast
from grinta_jupyter.runtime.diffs import common_affixes, line_opcodes
from grinta_jupyter.runtime.recent import Recent

__all__ = [
    "REGION_MAX_LEARN_LINES",
    "REGION_MIN_LINES",
    "declares_coding",
    "fingerprint",
    "forget",
    "known",
    "learn",
    "proven",
    "region_ok",
]

# Below this many lines compiling the whole file is fast enough.
REGION_MIN_LINES = 1_000
# Above this many, ``learn`` does not parse the file: its tree would hold the GIL (and memory)
# for longer than the whole-file compile it saves each edit (0.2-0.5 s here at this size).
REGION_MAX_LEARN_LINES = 50_000
# Changes at least this many unchanged lines apart are checked one at a time (``_in_steps``)
# when their one region would exceed ``_STEP_REGION`` lines, up to ``_MAX_STEPS`` of them
# (each step costs a few passes over the whole text; more cost a whole compile).
_STEP_GAP = 20
_STEP_REGION = 200
_MAX_STEPS = 5
# Characters ``str.splitlines`` ends a line at and Python's tokenizer does not.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_KEEP = 64  # layouts kept (a session edits a few large files)
# A coding declaration (PEP 263), matched against each of a file's first two lines, which end
# where Python's end: at "\r\n", "\r" or "\n".
_CODING = re.compile(r"[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
_LINE_END = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class _Class:
    """A top-level class whose members start on lines of their own."""

    name: str
    indent: str  # the body's indentation
    starts: tuple[int, ...]  # lines where members start (decorators included), ascending
    end: int  # the line after its last line

    def shifted(self, by: int) -> _Class:
        return replace(self, starts=tuple(s + by for s in self.starts), end=self.end + by)


@dataclass(frozen=True)
class Layout:
    """Where the statements of a Python text known to compile start (0-based lines)."""

    starts: tuple[int, ...]  # module-level statements, ascending
    classes: dict[int, _Class]  # by the class statement's start line
    flags: int  # compiler flags of its ``__future__`` imports
    future_end: int  # the line after its last ``__future__`` import (0: none)
    declares: bool  # a global or nonlocal statement in the module's scope


# Keyed by fingerprints, not texts.
_LAYOUTS: Recent[bytes, Layout] = Recent(_KEEP)
_LAST: tuple[str, str | None, bytes] = ("", None, b"")  # fingerprint's last (path, text, digest)
_ANSWERS: Recent[tuple[bytes, bytes], bool] = Recent(_KEEP)  # region_ok's, by (old, new)
# Texts a region proved to compile although no layout was kept for them (a class's last
# member deleted): asking whether they compile must not compile them whole.
_PROVEN: Recent[bytes, None] = Recent(_KEEP)


def fingerprint(path: str, text: str) -> bytes:
    """A 16-byte digest of ``path`` and ``text`` (cache keys that do not keep the text).

    The last one is kept with its text: one check asks for the same text's several times
    (0.2 ms each for 100 kB)."""
    global _LAST
    last_path, last_text, last_digest = _LAST
    if text is last_text and path == last_path:
        return last_digest
    digest = hashlib.blake2b(
        f"{path}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()
    _LAST = (path, text, digest)
    return digest


def known(path: str, text: str) -> bool:
    """Whether ``text`` (of ``path``) is known to compile, with its layout."""
    return _layout_at(fingerprint(path, text)) is not None


def proven(path: str, text: str) -> bool:
    """Whether ``text`` (of ``path``) is known to compile: its layout is known, or a region
    proved it."""
    key = fingerprint(path, text)
    return key in _PROVEN or key in _LAYOUTS


def forget() -> None:
    """Drop every layout and answer (tests start from cold caches)."""
    _LAYOUTS.clear()
    _ANSWERS.clear()
    _PROVEN.clear()


def _layout_of(path: str, text: str) -> Layout | None:
    """The layout of ``text`` (of ``path``), when known."""
    return _layout_at(fingerprint(path, text))


def _layout_at(key: bytes) -> Layout | None:
    return _LAYOUTS.get(key, None)


def _cuttable(text: str, lines: list[str]) -> bool:
    """Large, no line break ``splitlines`` and Python disagree on, and no coding declaration
    (Python reads such a file's bytes by it: ``validation`` compiles those, whole)."""
    return (
        len(lines) >= REGION_MIN_LINES
        and not any(c in text for c in _OTHER_BREAKS)
        and not declares_coding(text)
    )


def declares_coding(text: str) -> bool:
    """Whether ``text``'s first two lines hold a coding declaration (PEP 263)."""
    start = 0
    for _ in range(2):
        found = _LINE_END.search(text, start)
        end = len(text) if found is None else found.start()
        if _CODING.match(text, start, end):
            return True
        if found is None:
            return False
        start = found.end()
    return False


def learn(path: str, text: str) -> None:
    """Learn the layout of ``text`` if it is a large Python text that compiles (else
    nothing): the next edit of it can then be checked by its region."""
    lines = text.splitlines(keepends=True)
    if not _cuttable(text, lines) or len(lines) > REGION_MAX_LEARN_LINES or known(path, text):
        return
    try:
        with pyast.quietly():
            tree = pyast.parse(text, path)
            compile(tree, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    flags = _future_flags(tree)
    if flags is None:
        return
    future_end = max(
        (node.end_lineno or 0 for node in tree.body if _is_future_import(node)), default=0
    )
    starts, classes = _layout(tree.body, lines, 0)
    _LAYOUTS.put(
        fingerprint(path, text), Layout(starts, classes, flags, future_end, _declares(tree.body))
    )


def region_ok(path: str, old_text: str, new_text: str) -> bool:
    """True when ``new_text`` compiles, proven from the parts of it an edit of ``old_text``
    (whose layout is known) changed; False when that cannot be proven (the caller then
    compiles the whole file). A proven text's layout is kept for its next edit.

    Answers are kept (a tool checks while staging; the runtime again before commit)."""
    key = (fingerprint(path, old_text), fingerprint(path, new_text))
    answer = _ANSWERS.get(key, None)
    if answer is None:
        answer = _region_ok(path, old_text, new_text, key[0], key[1], steps=True)
        _ANSWERS.put(key, answer)
        if answer and key[1] not in _LAYOUTS:
            _PROVEN.put(key[1], None)
    return answer


def _region_ok(
    path: str, old_text: str, new_text: str, old_key: bytes, new_key: bytes, steps: bool
) -> bool:
    """``region_ok``; with ``steps``, changes far apart whose one region would be too large
    are checked one at a time (``_in_steps``)."""
    layout = _layout_at(old_key)
    if layout is None or layout.declares:
        return False
    new_lines = new_text.splitlines(keepends=True)
    if not _cuttable(new_text, new_lines):
        return False
    old_lines = old_text.splitlines(keepends=True)
    prefix, suffix = common_affixes(old_lines, new_lines)
    first, old_end = prefix, len(old_lines) - suffix  # old lines first:old_end changed
    delta = len(new_lines) - len(old_lines)
    split = _STEP_REGION if steps else len(new_lines)  # a region size worth trying steps at
    for _ in range(2):
        found = _enclosing_class(layout, old_lines, first, old_end)
        if found is not None:
            start, cls, limit = found
            answer = _class_region(
                path, new_key, layout, start, cls, limit, new_lines, first, old_end, delta, split
            )
        else:
            answer = _module_region(
                path, new_key, layout, old_lines, new_lines, first, old_end, split
            )
        if answer is not None:
            return answer
        # The region would be larger than ``split`` lines (too large for one at all when
        # ``split`` is the whole file): changes far apart are checked one at a time.
        if split < len(new_lines):
            answer = _in_steps(path, old_text, old_key, old_lines, new_lines, first, old_end)
            if answer is not None:
                return answer
            split = len(new_lines)  # one change: its one region it is
    return False


def _in_steps(
    path: str,
    old_text: str,
    old_key: bytes,
    old_lines: list[str],
    new_lines: list[str],
    first: int,
    old_end: int,
) -> bool | None:
    """Changes far apart (a multiedit's, say), proven one at a time from the top: step k is
    the new text up to the end of change k followed by the old text after it. Each step is
    proven to compile from the step before it (and gets its layout from it), so the last
    step, the new text, compiles; a step that cannot be proven makes the answer False.
    None: there is one change (or more than ``_MAX_STEPS``), not a case for steps."""
    new_end = len(new_lines) - (len(old_lines) - old_end)
    changes: list[list[int]] = []  # [old end, new end] of each change, relative to ``first``
    for tag, i1, i2, _j1, j2 in line_opcodes(old_lines[first:old_end], new_lines[first:new_end]):
        if tag == "equal":
            continue
        if changes and i1 - changes[-1][0] < _STEP_GAP:
            changes[-1] = [i2, j2]
        else:
            changes.append([i2, j2])
    if not 2 <= len(changes) <= _MAX_STEPS:
        return None
    before, before_key = old_text, old_key
    for i2, j2 in changes:
        after = "".join(new_lines[: first + j2] + old_lines[first + i2 :])
        after_key = fingerprint(path, after)
        if not _region_ok(path, before, after, before_key, after_key, steps=False):
            return False
        before, before_key = after, after_key
    return True


def _module_region(
    path: str,
    new_key: bytes,
    layout: Layout,
    old_lines: list[str],
    new_lines: list[str],
    first: int,
    old_end: int,
    split: int,
) -> bool | None:
    """``region_ok`` for a change between module-level statements (None: the region would
    be larger than ``split`` lines, or too large)."""
    delta = len(new_lines) - len(old_lines)
    at = bisect.bisect_right(layout.starts, first) - 1
    a = layout.starts[at] if at >= 0 else 0
    after = bisect.bisect_left(layout.starts, old_end)
    b = layout.starts[after] if after < len(layout.starts) else len(old_lines)
    if a < layout.future_end:
        return False  # at or before the future imports, which only the top of a file may hold
    region = new_lines[a : b + delta]
    if len(region) > split or _too_large(region, new_lines):
        return None
    if _continued(region):
        return False
    tree = _compiled("".join(region), path, layout.flags)
    if tree is None or _declares(tree.body) or any(map(_is_future_import, tree.body)):
        return False
    body = tree.body
    starts, classes = _layout(body, new_lines, a)
    _LAYOUTS.put(
        new_key,
        Layout(
            (
                *(s for s in layout.starts if s < a),
                *starts,
                *(s + delta for s in layout.starts if s >= b),
            ),
            {
                **{k: c for k, c in layout.classes.items() if k < a},
                **classes,
                **{k + delta: c.shifted(delta) for k, c in layout.classes.items() if k >= b},
            },
            layout.flags,
            layout.future_end,
            False,
        ),
    )
    return True


def _class_region(
    path: str,
    new_key: bytes,
    layout: Layout,
    start: int,
    cls: _Class,
    limit: int,
    new_lines: list[str],
    first: int,
    old_end: int,
    delta: int,
    split: int,
) -> bool | None:
    """``region_ok`` for a change inside the body of the class starting at line ``start``
    (a region of it ends at a member's start or at ``limit``; None: it would be larger than
    ``split`` lines, or too large)."""
    at = bisect.bisect_right(cls.starts, first) - 1
    a = cls.starts[at]
    after = bisect.bisect_left(cls.starts, old_end)
    b = cls.starts[after] if after < len(cls.starts) else limit
    region = new_lines[a : b + delta]
    if len(region) > split or _too_large(region, new_lines):
        return None
    if _continued(region):
        return False
    others = a > cls.starts[0] or b < cls.end  # members the class keeps outside the region
    code = _code_line(region)
    members: list[ast.stmt] = []
    if code is None:  # blank lines and comments (which must compile too: a NUL does not)
        if not others or _compiled("".join(region), path, layout.flags) is None:
            return False  # the class would be left without a body
    else:
        rest_of_line = code[len(cls.indent) :]
        if (
            not code.startswith(cls.indent)
            or rest_of_line[:1].isspace()
            or rest_of_line[:1] == "\\"
        ):
            # Not at the body's indentation; or a backslash there, whose line CPython measures
            # as if its tabs were spaces (the wrapper would take it for the body's indentation).
            return False
        footer = cls.indent + "pass\n" if b < cls.end else ""
        text = f"class {cls.name}:\n" + "".join(region) + footer
        tree = _compiled(text, path, layout.flags)
        if tree is None:
            return False
        (wrapper, *rest) = tree.body
        if not isinstance(wrapper, ast.ClassDef) or _declares(wrapper.body):
            return False
        if rest:  # the region ends the class: valid when no member follows it (no layout)
            return not footer and not _declares(rest)
        members = wrapper.body[:-1] if footer else wrapper.body
    if b < cls.end:
        end = cls.end + delta
    elif members:
        assert members[-1].end_lineno is not None
        end = members[-1].end_lineno + a - 1  # wrapper line 2 is line a
    else:
        return True  # the class's last member went: where it now ends is for ``learn``
    region_starts = _starts(members, new_lines, a - 1, cls.indent)
    edited = _Class(
        cls.name,
        cls.indent,
        (
            *(s for s in cls.starts if s < a),
            *region_starts,
            *(s + delta for s in cls.starts if s >= b),
        ),
        end,
    )
    classes = {
        k if k < start else k + delta: c if k < start else c.shifted(delta)
        for k, c in layout.classes.items()
        if k != start
    }
    # As ``learn`` would: a class keeps its layout while its first member starts its line.
    if (
        a > cls.starts[0]
        or not members
        or _start(members[0], new_lines, a - 1, cls.indent) is not None
    ):
        classes[start] = edited
    _LAYOUTS.put(
        new_key,
        Layout(
            tuple(s if s <= start else s + delta for s in layout.starts),
            classes,
            layout.flags,
            layout.future_end,
            False,
        ),
    )
    return True


def _enclosing_class(
    layout: Layout, old_lines: list[str], first: int, old_end: int
) -> tuple[int, _Class, int] | None:
    """The class whose body holds old lines ``first:old_end``, with its start line and where
    a region of it may end; None when there is none. Below its last line, up to the next
    module-level statement, blank lines and comments count as its end too (a member added
    after the last one lands there)."""
    starts = sorted(layout.classes)
    at = bisect.bisect_right(starts, first) - 1
    if at < 0:
        return None
    cls = layout.classes[starts[at]]
    if not (cls.starts and cls.starts[0] <= first):
        return None
    if old_end <= cls.end:
        return starts[at], cls, cls.end
    after = bisect.bisect_left(layout.starts, old_end)
    limit = layout.starts[after] if after < len(layout.starts) else len(old_lines)
    if _code_line(old_lines[cls.end : limit]) is None:
        return starts[at], cls, limit
    return None


def _compiled(text: str, path: str, flags: int) -> ast.Module | None:
    """The syntax tree of ``text`` when it compiles (with ``flags``), else None."""
    try:
        with pyast.quietly():
            tree = pyast.parse(text, path, flags)
            compile(tree, path, "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree


def _code_line(lines: list[str]) -> str | None:
    """The first line of ``lines`` that is neither blank nor a comment (blank for Python:
    spaces and tabs, not the other characters ``str.strip`` strips)."""
    for line in lines:
        stripped = line.strip(" \t\r\n")
        if stripped and not stripped.startswith("#"):
            return line
    return None


def _continued(lines: list[str]) -> bool:
    """Whether the last of ``lines`` ends with a backslash (it may join the next line)."""
    return bool(lines) and lines[-1].rstrip("\r\n").endswith("\\")


def _too_large(region: list[str], lines: list[str]) -> bool:
    """Whether the region's syntax tree and code would cost more than compiling the whole
    text (about 2.5 times a compile of the same lines): two edits far apart, say."""
    return len(region) * 3 > len(lines)


def _is_future_import(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def _layout(
    body: list[ast.stmt], lines: list[str], offset: int
) -> tuple[tuple[int, ...], dict[int, _Class]]:
    """The module-level starts and classes of ``body``, whose line 1 is ``lines[offset]``."""
    starts = _starts(body, lines, offset, "")
    classes = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            start = _start(node, lines, offset, "")
            cls = _members(node, lines, offset)
            if start is not None and cls is not None and not _declares(node.body):
                classes[start] = cls
    return starts, classes


def _members(node: ast.ClassDef, lines: list[str], offset: int) -> _Class | None:
    first = node.body[0]
    line = lines[first.lineno - 1 + offset]
    indent = line[: first.col_offset]
    if first.lineno <= node.lineno or not indent or indent.strip(" \t"):
        return None  # a body on the header's line
    if _start(first, lines, offset, indent) is None:
        return None  # its first line continues the header's (a backslash)
    assert node.end_lineno is not None
    return _Class(
        node.name, indent, _starts(node.body, lines, offset, indent), node.end_lineno + offset
    )


def _starts(body: list[ast.stmt], lines: list[str], offset: int, indent: str) -> tuple[int, ...]:
    """Lines where statements of ``body`` start at ``indent`` with the line to themselves."""
    starts = []
    previous_end = -1
    for node in body:
        line = _start(node, lines, offset, indent)
        if line is not None and line > previous_end:
            starts.append(line)
        assert node.end_lineno is not None
        previous_end = node.end_lineno - 1 + offset
    return tuple(starts)


def _start(node: ast.stmt, lines: list[str], offset: int, indent: str) -> int | None:
    """The line ``node`` starts on (its first decorator's), when it starts that line right
    after ``indent``; else None."""
    decorators = getattr(node, "decorator_list", None)
    if decorators:  # the "@" is on the decorator's line unless a backslash moved it
        line = decorators[0].lineno - 1 + offset
        starts = lines[line].startswith(indent + "@")
    else:
        line = node.lineno - 1 + offset
        starts = node.col_offset == len(indent) and lines[line].startswith(indent)
    # A line after one ending with a backslash continues that line's statement.
    return line if starts and not (line > 0 and _continued(lines[line - 1 : line])) else None


def _declares(body: list[ast.stmt]) -> bool:
    """Whether a global or nonlocal statement is in the scope of ``body`` (not counting the
    functions and classes it defines, which have scopes of their own)."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


def _future_flags(tree: ast.Module) -> int | None:
    """The compiler flags of the module's ``__future__`` imports (None: one is unknown)."""
    import __future__

    flags = 0
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            if statement.level:
                # ``from .__future__ import``: the compiler takes it for a future import,
                # the parser does not (it gives no ``<>``); no flags stand for that.
                return None
            for alias in statement.names:
                flag = getattr(getattr(__future__, alias.name, None), "compiler_flag", None)
                if not isinstance(flag, int):
                    return None
                flags |= flag
    return flags
