"""Syntax validation before commit, the same for every tool.

An edit is refused when it introduces a parse error the file did not have.
A file that was already broken may still be edited, as long as the edit does
not add errors (counted with tree-sitter where a grammar exists), and, for
JSON, does not break it for a more lenient reader that read it (Python's
``json.loads`` reads the NaN that makes a file invalid JSON).

Python is checked with ``compile()``; JSON, TOML and YAML with their own
parsers; every other language with a tree-sitter grammar by its ERROR and
MISSING nodes. Results are cached by text, so a tool that checks its result
while staging (``edit_symbols``) and the runtime's check before commit parse
it once; in a Python file of 1,000 lines or more, an edit of a file known to
compile compiles only the definitions it touched (top-level ones, or the
members of one top-level class) once its layout is known (``runtime/regions.py``
says how, and why the answer is the whole file's); a whole-file compile of a large
text is made in two halves at once, one in a helper process (``runtime/halves.py``);
a huge one (``ASIDE_MIN_CHARS``) in a process of its own, so that no compile holds the
interpreter's lock, and with it the kernel's event loop, for seconds.

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

import contextlib
import enum
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePosixPath
from typing import Any

from grinta_jupyter.runtime import grammars, halves, pyast, regions
from grinta_jupyter.runtime.errors import SYNTAX_ERROR, ToolError
from grinta_jupyter.runtime.recent import Recent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]  # 3.10 backport

# (line, message) of the first error, or None when the text parses.
FirstError = tuple[int, str] | None


# From this size (a compile of 0.2-0.5 s on the VM of docs/speed.md) a Python text is
# compiled in a process of its own: ``compile`` is one C call that holds the interpreter's
# lock throughout, and in a kernel that stops its event loop (the Stop button, every widget).
ASIDE_MIN_CHARS = 500_000
ASIDE_TIMEOUT_S = 120.0  # an 8 MB file compiles in about 5 s
# Run with ``python -I -S -W ignore``. Its stdin: the path, a line saying whether to compile
# the bytes that follow (a text declaring a coding, read by it as Python reads the file) or
# their UTF-8 text (as ``_python`` compiles any other), a line with the frames the compile
# may use, then the source. Its answer: one line of JSON, null or [line, message].
_ASIDE = """
import json, sys
path = sys.stdin.buffer.readline().decode("utf-8", "surrogateescape")[:-1]
as_bytes = sys.stdin.buffer.readline() == b"bytes\\n"
budget = int(sys.stdin.buffer.readline())
source = sys.stdin.buffer.read()
def headroom(depth=0):
    try:
        return headroom(depth + 1)
    except RecursionError:
        return depth
# No deeper than the calling thread could (the compiler allows three levels of nesting per
# frame left): too deep for it, the text is as deep for this one (RecursionError, no answer).
sys.setrecursionlimit(sys.getrecursionlimit() - headroom() + budget)
try:
    compile(source if as_bytes else source.decode("utf-8"), path, "exec", dont_inherit=True)
    answer = None
except SyntaxError as exc:
    answer = [exc.lineno or 1, exc.msg]
except ValueError as exc:
    answer = [1, str(exc)]
sys.stdout.write(json.dumps(answer))
"""


class _Unanswered(Exception):
    """The process of its own gave no answer (it could not start, died, or took too long)."""


def _compile_aside(text: str, path: str, as_bytes: bool) -> FirstError:
    """What ``compile`` says of ``text`` (of its UTF-8 bytes, with ``as_bytes``) in a fresh
    interpreter, with this one's optimization level and limit on the digits of an integer
    literal. Raises ``_Unanswered`` when that interpreter gives no answer, UnicodeError for
    a text UTF-8 cannot encode.

    It compiles as the calling thread would, with no more frames left than ``_python`` has
    here (counted as ``runtime/halves.py`` counts them; unknown under a tracer or a profiler,
    then the text is compiled here)."""
    if not sys.executable:  # None or "" where Python cannot tell its own path
        raise _Unanswered("no interpreter to start")
    # ``_python``, one frame up, compiles with this one's headroom and one more frame.
    headroom = halves.frames_left()
    if not headroom:
        raise _Unanswered("under a tracer or a profiler: the frames left are unknown")
    command = [
        sys.executable,
        "-I",
        "-S",
        "-W",
        "ignore",  # invalid escape sequences etc. are not our business (as ``pyast.quietly``)
        # Optimized (-O, PYTHONOPTIMIZE), ``compile`` skips an assert's code and the errors
        # only code generation finds in it: the child is optimized as this interpreter is.
        *["-O"] * sys.flags.optimize,
        "-X",
        f"int_max_str_digits={sys.get_int_max_str_digits()}",
        "-c",
        _ASIDE,
    ]
    head = path.replace("\n", " ") + ("\nbytes\n" if as_bytes else "\ntext\n") + f"{headroom + 1}\n"
    stdin = head.encode("utf-8", "surrogateescape") + text.encode("utf-8")
    try:
        done = subprocess.run(
            command,
            input=stdin,
            capture_output=True,
            timeout=ASIDE_TIMEOUT_S,
            check=False,
            start_new_session=True,  # deaf to the kernel's Ctrl-C, as the halves helper is
        )
        answer = json.loads(done.stdout) if done.returncode == 0 else False
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise _Unanswered(repr(exc)) from exc
    if answer is None:
        return None
    if isinstance(answer, list) and len(answer) == 2:
        line, message = answer
        if isinstance(line, int) and isinstance(message, str):
            return line, message
    raise _Unanswered(f"exit status {done.returncode}: {done.stderr[-200:]!r}")


def _python(text: str, path: str, flags: int = 0) -> FirstError:
    # ``compile`` of a str ignores a coding declaration; Python reads the file by it. Files are
    # written as UTF-8, so those bytes are what to compile when the text declares a coding.
    declares = regions.declares_coding(text)
    if not flags and len(text) >= ASIDE_MIN_CHARS:
        with contextlib.suppress(_Unanswered, UnicodeError):  # else compiled here, as below
            return _compile_aside(text, path, as_bytes=declares)
    source: str | bytes = text
    try:
        if declares:
            source = text.encode("utf-8")
        elif not flags and halves.compiles(text):  # two halves at once, here and in a helper
            return None
        with pyast.quietly():  # invalid escape sequences etc. are not our business
            compile(source, path, "exec", flags, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except ValueError as exc:  # e.g. source with NUL bytes; text UTF-8 cannot encode
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
# For blanking: a string left open runs to its line's end and a comment left open to the
# text's end, each found once (searched again from each quote or "/*" inside, they took the
# square of the text's length); both are kept as they are, where the JSON error is.
_OPEN_JSON_STRING = _JSON_STRING + "?"
_JSON_COMMENTS = re.compile(rf"{_OPEN_JSON_STRING}|//[^\n]*|/\*(?:.*?\*/|.*)", re.DOTALL)
_JSON_TRAILING_COMMAS = re.compile(rf"{_OPEN_JSON_STRING}|,(?=\s*[}}\]])")


def without_comments(text: str) -> str:
    """``text`` with // and /* */ comments and trailing commas blanked; lines stay in place."""

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        if token.startswith('"') or (token.startswith("/*") and not token[2:].endswith("*/")):
            return token
        return re.sub(r"[^\n]", " ", token)

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


# First errors by (language, fingerprint of path and text): the digest, not the text, so
# that the cache stays small however large the files (256 texts of 8 MB would be 2 GB).
_ERRORS: Recent[tuple[str, bytes], FirstError] = Recent(256)


class _Unchecked(enum.Enum):
    """What ``_ERRORS`` answers for a text not checked yet (None means "no error")."""

    TEXT = 0


def first_error(path: str, text: str, language: str | None = None) -> FirstError:
    """The first syntax error in ``text`` read as ``language`` (default: that of ``path``).

    Results are cached by text, so the check a tool makes while staging and the
    runtime's check before commit parse a text only once.
    """
    language = language or language_of(path)
    if language is None:
        return None
    key = (language, regions.fingerprint(path, text))
    known = _ERRORS.get(key, _Unchecked.TEXT)
    if known is not _Unchecked.TEXT:
        return known
    error = _first_error(language, path, text)
    _ERRORS.put(key, error)
    return error


def forget() -> None:
    """Drop every cached answer (tests start from cold caches)."""
    _ERRORS.clear()
    regions.forget()
    grammars.forget()


def _first_error(language: str, path: str, text: str) -> FirstError:
    parser = PARSERS.get(language)
    if parser is not None:
        return parser(text, path)
    lines = grammars.syntax_errors(language, text.encode("utf-8"))
    return (lines[0], "syntax error") if lines else None


@contextlib.contextmanager
def compiling_ahead(changes: Iterable[tuple[str, str | None, str]]) -> Iterator[None]:
    """Start now the whole-file compile ``check_syntax`` will need for the first of
    ``changes`` (path, old text or None, new text) that needs one: a Python text large
    enough to be compiled in two halves, not answered yet, that the region check cannot
    prove. Its helper half (``runtime/halves.py``) then compiles while the caller does
    other work inside the block (the diff, the content guards) before ``check_syntax``.
    The answers are the same with or without it."""
    for path, old_text, new_text in changes:
        if (
            language_of(path) != "python"
            or not halves.SPLIT_MIN_CHARS <= len(new_text) < ASIDE_MIN_CHARS
            or (old_text is not None and regions.region_ok(path, old_text, new_text))
        ):
            continue
        known = _ERRORS.get(("python", regions.fingerprint(path, new_text)), _Unchecked.TEXT)
        if known is not _Unchecked.TEXT:
            continue
        with halves.ahead(new_text):
            yield
        return
    yield


def compiles(path: str, text: str) -> bool:
    """Whether ``path`` is a Python file and ``text`` compiles (as the region path or the
    whole-file check found: after ``check_syntax`` of the same text, nothing compiles again)."""
    if language_of(path) != "python":
        return False
    return regions.proven(path, text) or first_error(path, text, "python") is None


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
    definitions the edit touched (``regions.region_ok``).
    """
    language = language or language_of(path)
    if (
        old_text is not None
        and language == "python"
        and regions.region_ok(path, old_text, new_text)
    ):
        return None
    new_error = first_error(path, new_text, language)
    if new_error is None:
        return None
    if old_text is None:
        return new_error
    old_error = _old_error(path, old_text, language)
    if old_error is None:
        return new_error
    broken_for_a_reader = _breaks_a_reader(language, old_text, new_text)
    if broken_for_a_reader is not None:
        return broken_for_a_reader
    if error_count(path, new_text, language) <= error_count(path, old_text, language):
        return None  # already broken, and not worse
    return new_error


def _lenient_json(text: str) -> object:
    return json.loads(text)  # NaN, Infinity and repeated keys, as Python's json reads them


def _commented_json(text: str) -> object:
    return json.loads(without_comments(text))  # comments and trailing commas too


# Readers more lenient than the check, by language: a file one of them reads is not broken
# for it, and an edit that breaks it there adds an error whatever tree-sitter counts (it
# sees a NaN as two errors, and a trailing comma after it as none more).
_LENIENT_READERS: dict[str, tuple[Callable[[str], object], ...]] = {
    "json": (_lenient_json, _commented_json),
}


def _breaks_a_reader(language: str | None, old_text: str, new_text: str) -> FirstError:
    """The error a lenient reader of ``language`` finds in ``new_text`` when it read
    ``old_text`` (a JSON file with a NaN in it, as Python writes them), else None."""
    for read in _LENIENT_READERS.get(language or "", ()):
        try:
            read(old_text)
        except (ValueError, RecursionError):
            continue
        try:
            read(new_text)
        except json.JSONDecodeError as exc:
            return exc.lineno, exc.msg
        except (ValueError, RecursionError) as exc:
            return 1, str(exc) or type(exc).__name__
    return None


def _old_error(path: str, old_text: str, language: str | None = None) -> FirstError:
    """``first_error`` of the text an edit started from, without compiling a Python text the
    region path already saw compile."""
    language = language or language_of(path)
    if language == "python" and regions.proven(path, old_text):
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
    what = f"adds errors to {path}" if old_broken else f"makes {path} invalid"
    return ToolError(
        SYNTAX_ERROR,
        f"the edit {what} ({kind}): line {line}: {message}; nothing was written",
        line=line,
    )
