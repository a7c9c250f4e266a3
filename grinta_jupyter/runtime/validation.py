"""Syntax validation before commit, the same for every tool.

An edit is refused when it introduces a parse error the file did not have.
A file that was already broken may still be edited, as long as the edit does
not add errors (counted with tree-sitter where a grammar exists).

Python is checked with ``compile()``; JSON, TOML and YAML with their own
parsers; every other language with a tree-sitter grammar by its ERROR and
MISSING nodes. Results are cached by text, so a tool that checks its result
while staging (``edit_symbols``) and the runtime's check before commit parse
it once; in a Python file of 1,000 lines or more, an edit of a file known to
compile compiles only the definitions it touched (top-level ones, or the
members of one top-level class), with the file's ``__future__`` features
(``_python_region_ok`` says when that is trusted).

JSON is strict: ``NaN``, ``Infinity`` and ``-Infinity`` (which Python's
``json.loads`` accepts) are errors, and so is a key repeated in one object
(readers silently keep only the last). Files that are JSON with comments by
convention (``*.jsonc``, ``tsconfig*.json``, ``.vscode/*.json``, ...) may hold
comments and trailing commas. Any other ``.json`` file that already held
comments counts as already broken, so it stays editable as long as an edit
adds no error tree-sitter can see. Suffixes are matched ignoring case
(``A.JSON`` is JSON).
"""

from __future__ import annotations
import __future__

import ast
import hashlib
import json
import re
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from grinta_jupyter.runtime import grammars
from grinta_jupyter.runtime.diffs import common_affixes
from grinta_jupyter.runtime.errors import SYNTAX_ERROR, ToolError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]  # 3.10 backport

# (line, message) of the first error, or None when the text parses.
FirstError = tuple[int, str] | None


def _python(text: str, path: str, flags: int = 0) -> FirstError:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our business
            compile(text, path, "exec", flags, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except ValueError as exc:  # e.g. source with NUL bytes
        return 1, str(exc)
    return None


class _NotStrictJson(ValueError):
    """Valid to ``json.loads`` but not JSON: a NaN or Infinity, or a repeated key."""

    def __init__(self, message: str, line: int = 1):
        super().__init__(message)
        self.message, self.line = message, line


def _json(text: str, path: str) -> FirstError:
    if not text.strip():
        return None
    source = without_comments(text) if allows_comments(path) else text

    def refuse_constant(name: str) -> Any:
        raise _NotStrictJson(
            f"{name} is not valid JSON (JSON has no NaN or Infinity; use null, a number or a "
            "string)",
            _line_of_constant(source, name),
        )

    def refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _NotStrictJson(
                    f"duplicate key {json.dumps(key)[:60]} in one object (JSON readers keep "
                    "only the last one)",
                    _line_of_duplicate(source, key),
                )
            seen.add(key)
        return dict(pairs)

    try:
        json.loads(source, parse_constant=refuse_constant, object_pairs_hook=refuse_duplicates)
    except json.JSONDecodeError as exc:
        return exc.lineno, exc.msg
    except _NotStrictJson as exc:
        return exc.line, exc.message
    except RecursionError:
        return 1, "nested too deeply to parse"
    return None


_JSONC_NAMES = re.compile(
    r"^(?:tsconfig.*|jsconfig.*|\.eslintrc|deno|turbo|devcontainer|\.devcontainer|tslint"
    r"|api-extractor|\.babelrc|babel\.config|\.swcrc|biome)\.json$"
)


def allows_comments(path: str) -> bool:
    """True for JSON files that are JSON with comments by convention (tsconfig.json, .jsonc)."""
    parts = PurePosixPath(path.replace("\\", "/").lower()).parts
    if not parts:
        return False
    name = parts[-1]
    return (
        name.endswith(".jsonc")
        or bool(_JSONC_NAMES.match(name))
        or (name.endswith(".json") and any(p in (".vscode", ".devcontainer") for p in parts[:-1]))
    )


_JSON_STRING = r'"(?:\\.|[^"\\\n])*"'
_JSON_COMMENTS = re.compile(rf"{_JSON_STRING}|//[^\n]*|/\*.*?\*/", re.DOTALL)
_JSON_TRAILING_COMMAS = re.compile(rf"{_JSON_STRING}|,(?=\s*[}}\]])")


def without_comments(text: str) -> str:
    """``text`` with // and /* */ comments and trailing commas blanked; lines stay in place."""

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        return token if token.startswith('"') else re.sub(r"[^\n]", " ", token)

    return _JSON_TRAILING_COMMAS.sub(blank, _JSON_COMMENTS.sub(blank, text))


def _line_of_constant(source: str, name: str) -> int:
    """The line of the first ``name`` (NaN, Infinity) standing outside a string."""
    for match in re.finditer(rf"{_JSON_STRING}|(?<![\w.]){re.escape(name)}(?!\w)", source):
        if not match.group().startswith('"'):
            return source.count("\n", 0, match.start()) + 1
    return 1


def _line_of_duplicate(source: str, key: str) -> int:
    """The line where ``key`` first repeats within one object (found with tree-sitter)."""
    try:
        tree = grammars.parser_for("json").parse(source.encode("utf-8"))
    except Exception:  # no JSON grammar: the message still names the key
        return 1
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "object":
            seen: set[str] = set()
            for pair in node.named_children:
                key_node = pair.child_by_field_name("key") if pair.type == "pair" else None
                if key_node is None or key_node.text is None:
                    continue
                try:
                    name = json.loads(key_node.text.decode("utf-8"))
                except ValueError:
                    continue
                if name == key and name in seen:
                    return key_node.start_point[0] + 1
                seen.add(name)
        stack.extend(reversed(node.named_children))
    return 1


def _toml(text: str, path: str) -> FirstError:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:
            line = _line_from_message(str(exc))
        return line, str(exc).split(" (at line")[0]
    return None


def _yaml(text: str, path: str) -> FirstError:
    import yaml

    try:
        for _ in yaml.safe_load_all(text):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        return (mark.line + 1 if mark else 1), str(exc.problem or exc)
    except yaml.YAMLError as exc:
        return 1, str(exc)
    return None


# Below this many lines compiling the whole file is fast enough.
REGION_MIN_LINES = 1_000
_TOP_LEVEL_START = ("def ", "class ", "async def ", "@")
_FUTURE_LINES = 100  # __future__ imports open a file
_CLASS_HEADER = re.compile(r"class[ \t]+([^\W\d]\w*)[^'\"#]*:\s*$")


@lru_cache(maxsize=16)  # a tool checks while staging; the runtime again before commit
def _python_region_ok(path: str, old_text: str, new_text: str) -> bool:
    """Fast path for large Python files: compile only the definitions an edit touched.

    The region runs from the last column-0 ``def``/``class``/decorator line
    before the change to the next one after it. In a top-level class whose
    header is one line, it narrows to the class body: from the last definition
    at the body's indentation before the change to the next one (or the next
    column-0 one) after it, compiled under a ``class`` line of the same name,
    so names are mangled as in the file. A region is trusted only when the
    same region of the old text also compiles on its own (so its edges are
    real statement boundaries, not lines inside a string) and the whole old
    file compiled; both are compiled with the file's ``__future__`` features.
    A ``global`` or ``nonlocal`` statement that could share a module or class
    body with the region (they make statements of that body before them, or
    annotated anywhere, errors), a ``__future__`` import not read for certain,
    or any other doubt falls back to compiling the whole file.
    """
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    if len(new_lines) < REGION_MIN_LINES:
        return False
    if (
        _fingerprint(path, old_text) not in _KNOWN_VALID
        and first_error(path, old_text, "python") is not None
    ):
        return False
    flags = _future_flags(new_text, new_lines)
    if flags is None:
        return False
    prefix, suffix = common_affixes(old_lines, new_lines)
    first = min(prefix, len(new_lines) - 1)  # an edit may cut the end of the file
    changed_end = len(new_lines) - suffix
    delta = len(old_lines) - len(new_lines)  # old line = new line + delta, from changed_end on
    # The region starts where a definition starts in the old text and in the new one (they
    # differ from ``first`` on), decorators included.
    start = first
    while start > 0 and not _starts_both(old_lines, new_lines, start, ""):
        start -= 1
    while start > 0 and new_lines[start - 1].startswith("@"):
        start -= 1
    new_end = _next_member(new_lines, start, max(changed_end, start), len(new_lines), "")
    if _blank(old_lines, start, new_end + delta):
        # Nothing of the old text in the region (an insertion between definitions) would leave
        # its edges unproven: take in the next definition, or else the one before.
        if new_end < len(new_lines):
            new_end = _next_member(new_lines, new_end, new_end, len(new_lines), "")
        else:
            start = _previous_member(new_lines, start, 0, "")
    if not (_starts_line(new_lines, start) and _starts_line(new_lines, new_end)):
        return False  # an edge after a form feed or a U+2028 that splitlines cut at
    header = footer = ""
    inner = _class_body_region(old_lines, new_lines, start, first, changed_end, new_end)
    if inner is not None:
        header, start, cut_end = inner
        if cut_end < new_end:
            # The file goes on with a definition at the body's indentation: so must the region
            # (an edit that ends the class early leaves that definition unexpectedly indented).
            line = new_lines[cut_end]
            footer = line[: len(line) - len(line.lstrip(" \t"))] + "pass\n"
        new_end = cut_end
        shared_from = 0  # the class body holds statements before the region
    else:
        shared_from = sum(map(len, new_lines[:start]))  # module statements: a class is whole
    if _declares(new_text, shared_from):
        return False
    old_end = new_end + delta
    if "__future__" in "".join(new_lines[start:new_end]):
        return False  # future imports are only legal at the top of the whole file
    ok = all(
        _python(header + "".join(lines[start:end]) + footer, path, flags) is None
        for lines, end in ((old_lines, old_end), (new_lines, new_end))
    )
    if ok:  # the next edit of this file starts from a text known to compile
        _KNOWN_VALID[_fingerprint(path, new_text)] = None
        while len(_KNOWN_VALID) > 256:
            _KNOWN_VALID.popitem(last=False)
    return ok


def _class_body_region(
    old_lines: list[str], lines: list[str], start: int, first: int, changed_end: int, end: int
) -> tuple[str, int, int] | None:
    """(a ``class`` line, start, end) of the part of a class body an edit touched, or None.

    ``start:end`` is the top-level region of the edit, whose lines ``first:changed_end``
    changed (``old_lines`` before it). It is cut only when it is a class with a one-line
    header (no string or comment on it) and no line between that header and the cut starts
    at column 0. The cut starts where a member starts in the old text and in the new one; it
    ends before the next member after the change (never between a decorator and its
    ``def``); when the old text has nothing but blank lines in it, it takes in the next
    member, or else the one before, so the old region still proves its edges.
    """
    head = start
    while head < first and lines[head].startswith("@"):
        head += 1
    name = _CLASS_HEADER.match(lines[head]) if head < first else None
    line = lines[head]
    if name is None or line.count("(") != line.count(")") or line.count("[") != line.count("]"):
        return None
    body = head + 1  # the first statement of the body sets its indentation
    while body < first and (not lines[body].strip() or lines[body].lstrip().startswith("#")):
        body += 1
    indent = lines[body][: len(lines[body]) - len(lines[body].lstrip(" \t"))]
    if body >= first or not indent:
        return None
    cut = first
    while cut >= body and not _starts_both(old_lines, lines, cut, indent):
        cut -= 1
    while cut - 1 >= body and lines[cut - 1].startswith(indent + "@"):
        cut -= 1
    if cut < body:
        return None  # no definition to start from
    cut_end = _next_member(lines, cut, max(changed_end, cut), end, indent)
    delta = len(old_lines) - len(lines)
    if _blank(old_lines, cut, cut_end + delta):
        if cut_end < end:
            cut_end = _next_member(lines, cut_end, cut_end, end, indent)
        else:
            cut = _previous_member(lines, cut, body, indent)
    if any(line[:1] not in ("", " ", "\t", "\n", "\r") for line in lines[head + 1 : cut]):
        return None  # the class may have ended before the cut
    if not (_starts_line(lines, cut) and _starts_line(lines, cut_end)):
        return None
    return f"class {name.group(1)}:\n", cut, cut_end


def _next_member(lines: list[str], at: int, after: int, limit: int, indent: str) -> int:
    """The first line from ``after`` on that starts a definition at ``indent`` (or ``limit``),
    past the decorators and the ``def`` or ``class`` line of the one starting at ``at``."""
    own = at
    while own < limit and lines[own].startswith(indent + "@"):
        own += 1
    end = max(after, own + 1 if own < limit and _member_starts(lines[own], indent) else own)
    while end < limit and not _member_starts(lines[end], indent):
        end += 1
    return min(end, limit)


def _previous_member(lines: list[str], at: int, floor: int, indent: str) -> int:
    """The first line (decorators included) of the definition at ``indent`` before line
    ``at``, or ``at`` when there is none from ``floor`` on."""
    i = at - 1
    while i >= floor and not _member_starts(lines[i], indent):
        i -= 1
    while i - 1 >= floor and lines[i - 1].startswith(indent + "@"):
        i -= 1
    return i if i >= floor else at


def _starts_both(old_lines: list[str], new_lines: list[str], i: int, indent: str) -> bool:
    """Line ``i`` starts a definition at ``indent`` in the new text and in the old one (or
    the old text ends before it)."""
    return _member_starts(new_lines[i], indent) and (
        i >= len(old_lines) or _member_starts(old_lines[i], indent)
    )


def _blank(lines: list[str], start: int, end: int) -> bool:
    return all(not line.strip() for line in lines[start:end])


def _starts_line(lines: list[str], index: int) -> bool:
    """True when line ``index`` starts a line for Python too: the one before it ends with a
    newline (``splitlines`` also cuts at form feeds, U+2028 and others, which Python does not)."""
    return index == 0 or index >= len(lines) or lines[index - 1].endswith(("\n", "\r"))


def _member_starts(line: str, indent: str) -> bool:
    """True when ``line`` starts a definition (or its decorator) at exactly ``indent``."""
    return line.startswith(indent) and line.startswith(_TOP_LEVEL_START, len(indent))


def _declares(text: str, start: int) -> bool:
    """True when ``text[start:]`` may hold a global or nonlocal statement: the keyword opens
    a line or follows a ``;`` or a ``:`` (in a string or comment too: a doubt is enough)."""
    for keyword in ("global", "nonlocal"):
        at = text.find(keyword, start)  # str.find: a regex with \b would scan ten times slower
        while at >= 0:
            end = at + len(keyword)
            before = at
            while before > 0 and text[before - 1] in " \t\f":
                before -= 1
            opens = before == 0 or text[before - 1] in "\n\r;:"
            if opens and not ("a" + text[end : end + 1]).isidentifier():
                return True
            at = text.find(keyword, end)
    return False


def _future_flags(text: str, lines: list[str]) -> int | None:
    """The compiler flags of the file's ``__future__`` imports (None: not known for certain).

    Every mention of ``__future__`` must lie in the first lines, and those lines must parse
    on their own: the imports are read from their syntax tree, so one quoted in a docstring
    is not taken for real.
    """
    if "__future__" not in text:
        return 0
    mentions = [i for i, line in enumerate(lines[:_FUTURE_LINES]) if "__future__" in line]
    if not mentions or text.count("__future__") != sum(
        lines[i].count("__future__") for i in mentions
    ):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse("".join(lines[: mentions[-1] + 1]))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    flags = 0
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            for alias in statement.names:
                flag = getattr(getattr(__future__, alias.name, None), "compiler_flag", None)
                if not isinstance(flag, int):
                    return None
                flags |= flag
    return flags


_KNOWN_VALID: OrderedDict[bytes, None] = OrderedDict()


def _fingerprint(path: str, text: str) -> bytes:
    return hashlib.blake2b(f"{path}\0{text}".encode(), digest_size=16).digest()


def _line_from_message(message: str) -> int:
    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else 1


PARSERS: dict[str, Callable[[str, str], FirstError]] = {
    "python": _python,
    "json": _json,
    "toml": _toml,
    "yaml": _yaml,
}


def language_of(path: str) -> str | None:
    """The language ``path`` is validated as (by suffix or name, ignoring case), or None."""
    if path.lower().endswith(".jsonc"):
        return "json"
    return grammars.language_for(path)


def first_error(path: str, text: str, language: str | None = None) -> FirstError:
    """The first syntax error in ``text`` read as ``language`` (default: that of ``path``).

    Results are cached by text, so the check a tool makes while staging and the
    runtime's check before commit parse a text only once.
    """
    return _first_error(language or language_of(path), path, text)


@lru_cache(maxsize=256)
def _first_error(language: str | None, path: str, text: str) -> FirstError:
    if language is None:
        return None
    parser = PARSERS.get(language)
    if parser is not None:
        return parser(text, path)
    lines = grammars.syntax_errors(language, text.encode("utf-8"))
    return (lines[0], "syntax error") if lines else None


def compiles(path: str, text: str) -> bool:
    """Whether ``path`` is a Python file and ``text`` compiles (as the region path or the
    whole-file check found: after ``check_syntax`` of the same text, nothing compiles again)."""
    if language_of(path) != "python":
        return False
    return _fingerprint(path, text) in _KNOWN_VALID or first_error(path, text, "python") is None


def error_count(path: str, text: str, language: str | None = None) -> int:
    """How many error regions tree-sitter finds (0 when there is no grammar)."""
    language = language or language_of(path)
    if language is None:
        return 0
    try:
        return len(grammars.syntax_errors(language, text.encode("utf-8")))
    except Exception:  # a grammar the pack lacks: count by the first-error parser only
        return 1 if first_error(path, text, language) else 0


def added_error(
    path: str, old_text: str | None, new_text: str, language: str | None = None
) -> FirstError:
    """The first error of ``new_text`` when it breaks a file ``old_text`` left intact, else None.

    ``language`` overrides the one ``path`` implies (a Python definition inside a
    notebook cell is checked as Python). Large Python files compile only the
    definitions the edit touched (``_python_region_ok``).
    """
    language = language or language_of(path)
    if (
        old_text is not None
        and language == "python"
        and _python_region_ok(path, old_text, new_text)
    ):
        return None
    new_error = first_error(path, new_text, language)
    if new_error is None:
        return None
    if old_text is None:
        return new_error
    old_error = _old_error(path, old_text, language)
    if old_error is not None and error_count(path, new_text, language) <= error_count(
        path, old_text or "", language
    ):
        return None  # already broken, and not worse
    return new_error


def _old_error(path: str, old_text: str, language: str | None = None) -> FirstError:
    """``first_error`` of the text an edit started from, without compiling a Python text the
    region path already saw compile."""
    language = language or language_of(path)
    if language == "python" and _fingerprint(path, old_text) in _KNOWN_VALID:
        return None
    return first_error(path, old_text, language)


def check_syntax(path: str, old_text: str | None, new_text: str) -> ToolError | None:
    """SYNTAX_ERROR when ``new_text`` breaks a file that ``old_text`` left intact."""
    new_error = added_error(path, old_text, new_text)
    if new_error is None:
        return None
    line, message = new_error
    old_broken = old_text is not None and _old_error(path, old_text) is not None
    kind = PurePosixPath(path).suffix or "file"
    verb = "adds errors to" if old_broken else "makes"
    return ToolError(
        SYNTAX_ERROR,
        f"the edit {verb} {path} invalid ({kind}): line {line}: {message}; nothing was written",
        line=line,
    )
