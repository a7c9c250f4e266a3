"""search: text or regex over the workspace, plus definitions whose name matches.

Respects .gitignore and never looks in .git or .grinta (a ``path`` there is
PATH_FORBIDDEN). Results are bounded, in rows (``Settings.search_max_results``)
and in characters (``Settings.read_max_chars``, whatever the paths' length),
and say how many were left out and why; every path they name is quoted as
diffs quote it. Plain text may span lines (a row is the line it starts on); a
regex is matched line by line. In a notebook only cell sources are matched (never its JSON), and a hit is
located by cell: ``nb.ipynb::cell:<id>:<line in the cell>: text``.
Matching is smart-case: a query without capital letters ignores case. Lines
are the lines ``read`` numbers: split at "\n" only, without a CRLF's "\r" (so
``$`` matches at a Windows line's end), and a final newline starts no line.

Bounded in time and memory whatever the query or the files:

- every match (a regex or plain text) runs on the ``regex`` module under its
  ``timeout=`` and without holding the GIL; the whole search stops after
  ``Settings.search_timeout`` seconds with the error SEARCH_TIMEOUT, whose
  candidates are the matches found before it stopped. The deadline is checked
  before each folder is listed (a tree of empty folders yields no file to
  check at) and before each line; a staging no longer wanted
  (``ToolContext.cancel``: the session stopped or rewound) stops at the same
  checks. A match still running after ``FIRST_TRY`` seconds (catastrophic
  backtracking, such as ``(a|aa)+$`` on a long run of a's) goes on in a
  worker thread while the caller watches the deadline and the cancel, so a
  Stop returns within ``WATCH`` seconds; that thread ends by itself within
  ``MAX_MATCH_SECONDS``, and a single match that needs longer is the error
  SEARCH_TIMEOUT saying the regex is too slow (never "no matches");
- a regex whose counted repeats would expand past ``MAX_REGEX_UNITS`` when
  compiled (``(?:x{1000}){1000}``: the regex module unrolls them, hundreds of
  MB) is refused before it is compiled; with full case folding on (``(?f)``,
  ``(?V1)``) each unit counts ``FULLCASE_UNIT_COST`` times, since a folded
  class such as ``[\\p{L}]`` compiles to about 27 KB. A compiled pattern is
  not kept in the regex module's cache (500 of them would be gigabytes);
- plain text is a literal pattern (no backtracking), and a file without a hit
  is rejected by one pass over its text. It runs on the same engine as a regex
  (the stdlib's ``re`` took the product of the query's and the text's length
  to look for ``aaa...ab`` ignoring case: 24 s holding the GIL for a
  2,000-character query over 2 MB of a's), so case folding is the same on
  both paths;
- files are read by the safe reader: FIFOs, sockets and devices are never
  opened, files over ``Settings.search_max_file_bytes`` are not read, and
  every file passed over (too large, binary, unreadable, not a regular file)
  is named in the result, never silently dropped.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

import regex
from pydantic import Field

from grinta_jupyter.runtime.diffs import quote_path
from grinta_jupyter.runtime.errors import (
    FILE_TOO_LARGE,
    INVALID_ARGS,
    SEARCH_TIMEOUT,
    Candidate,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.files import FileRefused, read_regular
from grinta_jupyter.runtime.notebook import Notebook, is_notebook
from grinta_jupyter.runtime.secrets import process_secrets
from grinta_jupyter.runtime.textfile import split_lines
from grinta_jupyter.runtime.workspace import Skipped, skipped_note
from grinta_jupyter.tools.base import Args, ReadResult, ToolContext, ToolSpec

# The stdlib's regex parser, only to measure a pattern before compiling it.
if sys.version_info >= (3, 11):
    from re import _parser as _sre_parse  # type: ignore[attr-defined]  # private, untyped
else:
    import sre_parse as _sre_parse

MAX_DEFINITIONS = 10
MAX_QUERY_CHARS = 2_000
MAX_SKIPS_NAMED = 5
# A match's first try; past it, it runs on in a thread watched every WATCH seconds, for at
# most MAX_MATCH_SECONDS (a line that needs longer is a regex too slow to use).
FIRST_TRY = 0.05
WATCH = 0.02
MAX_MATCH_SECONDS = 2.0
MAX_REGEX_UNITS = 100_000  # compiled, about 250 bytes each
FULLCASE_UNIT_COST = 100  # a fully case-folded class: up to about 27 KB compiled
# An inline flag group turning on full case folding: "f", or version 1 (folds fully with "i").
_FULLCASE_FLAG = re.compile(r"\(\?[a-zA-Z01-]*(?:f|V1)")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.]*$")
_SNIFF = 8192  # a NUL byte in the first this many bytes marks a binary file


class SearchArgs(Args):
    query: str = Field(description="Text, or a regex if regex is true.")
    regex: bool = False
    path: str | None = Field(default=None, description="Limit to this folder or file.")


class _Expired(Exception):
    """The search's time ran out, or its staging was cancelled (at ``where``); ``slow``: a
    single match ran past ``MAX_MATCH_SECONDS`` with time left."""

    def __init__(self, where: str, slow: bool = False):
        super().__init__(where)
        self.where = where
        self.slow = slow


class _Clock:
    """When the search must stop: past its deadline, or once its staging is cancelled."""

    def __init__(self, seconds: float, cancel: threading.Event):
        self.deadline = time.monotonic() + seconds
        self.cancel = cancel

    def remaining(self) -> float:
        return 0.0 if self.cancel.is_set() else self.deadline - time.monotonic()

    def check(self, where: str) -> None:
        if self.remaining() <= 0:
            raise _Expired(where)

    def entering(self, folder: str) -> None:
        self.check(f"while walking the files, at {quote_path(folder)}/")


def stage(args: SearchArgs, ctx: ToolContext) -> ReadResult:
    return ReadResult(_search(args, ctx))


def _search(args: SearchArgs, ctx: ToolContext) -> str:
    if not args.query:
        raise fail(INVALID_ARGS, "query is empty")
    if len(args.query) > MAX_QUERY_CHARS:
        raise fail(INVALID_ARGS, f"query is over {MAX_QUERY_CHARS} characters; search a part")
    pattern = _compile(args.query, args.regex)
    under = ctx.resolve_readable(args.path).rel if args.path else ""
    settings = ctx.settings
    clock = _Clock(settings.search_timeout, ctx.cancel)
    definitions = _definitions(args, ctx, under)

    shown = _Rows(settings.search_max_results)
    total = files_with_hits = skips = 0
    skipped: list[Skipped] = []
    try:
        for item in ctx.workspace.walk(under, entering=clock.entering):
            clock.check(f"while walking the files, before {_name(item)}")
            text = _text(item, ctx) if isinstance(item, str) else item
            if isinstance(text, Skipped):
                skips += 1
                if len(skipped) < MAX_SKIPS_NAMED:
                    skipped.append(text)
                continue
            hits = sum(
                _scan(label, part, pattern, not args.regex, clock, shown)
                for label, part in _parts(_name(item), text)
            )
            total += hits
            files_with_hits += bool(hits)
    except _Expired as expired:
        if ctx.cancel.is_set():
            raise fail(
                SEARCH_TIMEOUT,
                f"search cancelled {expired.where}: the session no longer waits for it",
            ) from None
        if expired.slow:
            raise _too_slow(expired.where, shown) from None
        raise _timeout(args, settings.search_timeout, expired.where, shown) from None
    budget = _Budget(settings.read_max_chars)
    skip_line = f"skipped {_skip_note(skipped, skips, budget)}" if skips else ""
    if not shown and not definitions:
        where = f" in {quote_path(under)}" if under else ""
        note = _NO_LINE_BREAKS if args.regex and _LINE_BREAK.search(args.query) else ""
        return "\n".join(filter(None, [f"no matches for {args.query!r}{where}{note}", skip_line]))
    sections = []
    if definitions:
        kept = budget.take(definitions)
        left_out = (
            f" ({len(definitions) - len(kept)} not shown: {budget.why})" if budget.why else ""
        )
        sections.append(f"definitions{left_out}:\n" + "\n".join(kept))
    if shown:
        # A name holding a newline would forge rows: such names are quoted, as diffs quote them.
        rows = budget.take(f"{quote_path(rel)}:{number}: {line}" for rel, number, line in shown)
        head = f"{total} matching line{'s' if total != 1 else ''} in {files_with_hits} file{'s' if files_with_hits != 1 else ''}"
        if total > len(rows):
            why = f": {budget.why}" if len(rows) < len(shown) else ""
            head += f" ({total - len(rows)} not shown{why}; narrow the query or path)"
        sections.append(head + ":\n" + "\n".join(rows))
    if skip_line:
        sections.append(skip_line)
    return "\n\n".join(sections)


# A regex is matched line by line, so one that names a line break never matches.
_LINE_BREAK = re.compile(r"\n|\\n|\r|\\r")
_NO_LINE_BREAKS = (
    " (a regex is matched one line at a time, so a line break in it never matches: "
    "search for one of its lines, or search the plain text, which may span lines)"
)


class _Budget:
    """What is left of ``Settings.read_max_chars`` for a search's rows: the result is read
    whole by the model, and one path can be 4,096 bytes (24 KB once quoted), so 50 rows
    could be over a megabyte. ``HEADS`` is kept for the section heads and notes."""

    HEADS = 600

    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.left = max(chars - self.HEADS, 0)
        self.why = ""

    def take(self, rows: Iterable[str]) -> list[str]:
        """The first ``rows`` that fit; past the first that does not, none."""
        kept: list[str] = []
        for row in rows:
            if len(row) + 1 > self.left:
                self.why = f"the rows would pass the {self.chars:,}-character limit of a result"
                break
            kept.append(row)
            self.left -= len(row) + 1
        return kept


def _skip_note(skipped: list[Skipped], count: int, budget: _Budget) -> str:
    """The files passed over, quoted as rows quote them, naming as many as fit a quarter of
    the budget (the rows come first)."""
    named = [Skipped(quote_path(item.rel), item.reason) for item in skipped]
    note = skipped_note(named, count)
    while named and len(note) > budget.left // 4:
        named.pop()
        note = skipped_note(named, count)
    if not named:
        note = f"{count} file{'s' if count != 1 else ''} (their names are too long to list)"
    budget.left -= len(note)
    return note


def _compile(query: str, is_regex: bool) -> regex.Pattern[str]:
    """Smart-case: any capital letter makes the query case-sensitive."""
    ignore_case = not any(c.isupper() for c in query)
    flags = regex.IGNORECASE if ignore_case else 0
    if not is_regex:  # a literal cannot backtrack, and this engine finds it in linear time
        # Its line breaks match a Windows file's too (a line is compared without its "\r").
        lines = query.replace("\r\n", "\n").split("\n")
        literal = r"\r?\n".join(regex.escape(line) for line in lines)
        return regex.compile(literal, flags, cache_pattern=False)
    units = _expanded_size(query)
    if _FULLCASE_FLAG.search(query):
        units *= FULLCASE_UNIT_COST
    if units > MAX_REGEX_UNITS:
        raise fail(
            INVALID_ARGS,
            f"the regex repeats too much (about {units:,} steps once its counted repeats are "
            f"unrolled; the limit is {MAX_REGEX_UNITS:,}); use smaller counts such as {{2,5}}",
        )
    try:
        # Not cached: the module keeps up to 500 patterns, each up to MAX_REGEX_UNITS.
        return regex.compile(query, flags, cache_pattern=False)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise fail(INVALID_ARGS, f"invalid regex: {exc}") from None


def _expanded_size(query: str) -> int:
    """About how many steps ``query`` compiles to, nested counted repeats multiplied out.

    The stdlib parser reads the syntax both engines share; a pattern it cannot
    read (regex-only syntax) is measured crudely: every count multiplied.
    """
    try:
        return _weight(_sre_parse.parse(query))
    except (re.error, RecursionError, OverflowError, ValueError, TypeError):
        product = 1
        for low, comma, high in re.findall(r"\{(\d*)(,?)(\d*)\}", query):
            count = int(high or low or 1) if comma and high else int(low or 1)
            product *= max(count, 1)
        return product


def _weight(items: Any) -> int:
    total = 0
    for op, av in items:
        name = getattr(op, "name", str(op))  # the opcode constants are named ints
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            count = max(low, 1) if high == _sre_parse.MAXREPEAT else max(high, 1)
            total += count * _weight(sub)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP", "ASSERT", "ASSERT_NOT"):
            total += _weight(av if name == "ATOMIC_GROUP" else av[-1])
        elif name == "BRANCH":
            total += sum(_weight(branch) for branch in av[1])
        elif name == "GROUPREF_EXISTS":
            total += sum(_weight(branch) for branch in av[1:] if branch is not None)
        else:
            total += 1
    return total


def _text(rel: str, ctx: ToolContext) -> str | Skipped:
    """The file's text, or why it is skipped. A notebook is held to the limit of a file to
    read or edit, not of a file to search: its outputs (images, tables) make most of its
    size, and search looks only at its cells' sources."""
    limit = ctx.settings.search_max_file_bytes
    if is_notebook(rel):
        limit = max(limit, ctx.settings.max_file_bytes)
    try:
        data, _ = read_regular(ctx.workspace.root / rel, rel, limit, within=ctx.workspace.root)
    except FileRefused as refused:
        which = " for search" if refused.error.code == FILE_TOO_LARGE else ""
        return Skipped(rel, refused.reason + which)
    if b"\x00" in data[:_SNIFF]:
        return Skipped(rel, "binary")
    return data.decode("utf-8", errors="replace")


def _parts(rel: str, text: str) -> list[tuple[str, str]]:
    """What to match in a file: a notebook's cell sources, each labelled with its cell
    address (so hits read ``nb.ipynb::cell:<id>:3: ...``); any other file whole. A
    notebook that does not parse is searched as the text it is."""
    if is_notebook(rel):
        try:
            notebook = Notebook.parse(text, rel)
        except ToolFailure:
            return [(rel, text)]
        return [(f"{rel}::cell:{cell.key}", cell.source) for cell in notebook.cells]
    return [(rel, text)]


class _Rows(list[tuple[str, int, str]]):
    """The matching lines shown, (path, line number, text), at most ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        # This process's secrets, taken once: per row, reading the environment again to see
        # whether they changed cost more than the search (1.3 of 1.6 ms for 50 rows).
        self.secrets = process_secrets()

    def add(self, rel: str, number: int, line: str) -> None:
        if len(self) < self.limit:
            # Redacted before the cut: a secret cut through would keep its first characters.
            self.append((rel, number, self.secrets.redact(line.strip())[:200]))


def _scan(
    rel: str,
    text: str,
    pattern: regex.Pattern[str],
    literal: bool,
    clock: _Clock,
    shown: _Rows,
) -> int:
    """Count ``rel``'s matching lines, adding the first to ``shown``; _Expired when the
    ``clock`` says stop.

    Lines are the lines ``read`` numbers: a CRLF line's "\r" is no part of it (``;$``
    found nothing in a Windows file), and a final newline starts no line (``^$`` hit one
    past the end). Plain text is looked for in the whole text, once per line an occurrence
    starts on (so text holding line breaks is found too); a regex is matched line by line
    (``a\\s+b``, ``^`` and lookarounds would otherwise read across lines).
    """
    if literal and "\r" not in pattern.pattern:  # a lone "\r" is looked for within lines
        return _scan_literal(rel, text, pattern, clock, shown)
    hits = 0
    for number, line in enumerate(split_lines(text), 1):
        if _match(pattern, line, 0, clock, f"matching {rel} line {number}") is not None:
            hits += 1
            shown.add(rel, number, line)
    return hits


def _scan_literal(
    rel: str,
    text: str,
    pattern: regex.Pattern[str],
    clock: _Clock,
    shown: _Rows,
) -> int:
    """``_scan`` for plain text: one pass over the text per hit line. An occurrence spanning
    lines is shown by its first line, and the next is looked for from the line after."""
    hits = 0
    number, counted = 1, 0  # the line number at offset ``counted``
    at = 0
    while True:
        found = _match(pattern, text, at, clock, f"in {rel} after line {number}")
        if found is None:
            return hits
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.start())
        end = len(text) if end < 0 else end
        number += text.count("\n", counted, start)
        counted = start
        hits += 1
        if len(shown) < shown.limit:
            line = text[start:end]
            shown.add(rel, number, line[:-1] if line.endswith("\r") else line)
        at = end + 1
        if at >= len(text):
            return hits


def _match(
    pattern: regex.Pattern[str], text: str, pos: int, clock: _Clock, where: str
) -> regex.Match[str] | None:
    """``pattern``'s first match in ``text`` from ``pos``; _Expired when the ``clock`` says
    stop, or (``slow``) when the match alone runs past ``MAX_MATCH_SECONDS``.

    The regex module checks its timeout itself but knows nothing of the cancel: a match
    given the whole deadline kept Stop waiting for it. A match not done at ``FIRST_TRY``
    runs on in a thread (``concurrent=True`` releases the GIL) while this one watches.
    """
    remaining = clock.remaining()
    if remaining <= 0:
        raise _Expired(where)
    try:
        return pattern.search(text, pos, timeout=min(remaining, FIRST_TRY), concurrent=True)
    except TimeoutError:
        pass
    budget = min(clock.remaining(), MAX_MATCH_SECONDS)
    if budget <= 0:
        raise _Expired(where)
    result: list[regex.Match[str] | None] = []
    done = threading.Event()

    def match() -> None:
        try:
            result.append(pattern.search(text, pos, timeout=budget, concurrent=True))
        except TimeoutError:
            pass
        finally:
            done.set()

    # A daemon: left behind by a Stop, it ends within ``budget`` and holds nothing else.
    threading.Thread(target=match, name="grinta-search-match", daemon=True).start()
    while not done.wait(WATCH):
        if clock.remaining() <= 0:
            raise _Expired(where)
    if result:
        return result[0]
    raise _Expired(where, slow=clock.remaining() > 0)


def _timeout(
    args: SearchArgs, seconds: float, where: str, shown: list[tuple[str, int, str]]
) -> ToolFailure:
    advice = (
        "simplify the regex (nested quantifiers such as (a+)+ backtrack without end), "
        if args.regex
        else ""
    )
    found = _found_before(shown)
    return fail(
        SEARCH_TIMEOUT,
        f"search stopped after {seconds:g} s {where}{found}: results are incomplete; "
        f"{advice}narrow the path, or use run with grep",
        [Candidate(rel, number, line) for rel, number, line in shown],
    )


def _too_slow(where: str, shown: list[tuple[str, int, str]]) -> ToolFailure:
    found = _found_before(shown)
    return fail(
        SEARCH_TIMEOUT,
        f"the regex is too slow: {where} alone took over {MAX_MATCH_SECONDS:g} s, so the "
        f"search stopped there{found}. It backtracks without end (nested quantifiers such "
        "as (a+)+ or (a|aa)+ try every way to split a long run): simplify it, anchor it, "
        "or use run with grep",
        [Candidate(rel, number, line) for rel, number, line in shown],
    )


def _found_before(shown: list[tuple[str, int, str]]) -> str:
    if not shown:
        return ""
    if len(shown) == 1:
        return "; the matching line found before is listed"
    return f"; the {len(shown)} matching lines found before are listed"


def _name(item: str | Skipped) -> str:
    return item if isinstance(item, str) else item.rel


def _definitions(args: SearchArgs, ctx: ToolContext, under: str) -> list[str]:
    if args.regex or not _IDENTIFIER.match(args.query):
        return []
    try:
        symbols = ctx.symbols.search(args.query, limit=MAX_DEFINITIONS * 4)
    except RuntimeError:  # a runtime without a symbol index
        return []
    rows = [
        f"{quote_path(s.location)}:{s.def_line}: {s.kind} {s.qualname}"
        for s in symbols
        if not under or s.path == under or s.path.startswith(under.rstrip("/") + "/")
    ]
    return rows[:MAX_DEFINITIONS]


SPEC = ToolSpec(
    name="search",
    kind="read",
    description="Search file contents and definition names.",
    args=SearchArgs,
    stage=stage,
)
