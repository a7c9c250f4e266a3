"""Compiling a large Python file in two halves at once: one here, one in a helper process.

A whole-file ``compile()`` of a 3,000-line module takes 20-30 ms on a slow machine, and a
new file (``create``) or an edit the region check cannot prove (``runtime/regions.py``)
needs one before anything is written. ``compiles`` cuts the text where a top-level
``def``, ``class`` or decorator follows a blank line, sends the second half to a helper
process and compiles the first half here meanwhile. It answers True only when that proves
the whole text compiles; anything else (an error in a half, a cut it cannot trust, no
helper) answers False, and the caller compiles the whole text as before, which also gives
the exact error to report.

Why two halves that compile make a whole that compiles, and what is kept out:

- The second half starts at column 0 with a statement's first character, after a blank
  line. The first half compiled on its own, so at its end no string, bracket or line
  continuation is open, and the tokenizer reads the second half inside the whole file
  exactly as it reads it alone (the indentation it was at only closes there).
- A module is a sequence of statements, and each statement lies in one half (a block
  that ran past the cut would leave the first half unfinished). What one statement's
  validity can depend on in another is: the ``__future__`` imports, which must come first
  and change how the rest is read; and a ``global`` statement in the module's scope, which
  makes a use, an assignment or an annotation of its names *before* it an error (after it,
  or in a function, they are fine). So the second half may not mention ``__future__`` in
  any spelling; it is compiled with the features the first half's text names, and the
  answer stands only when the first half's own code object reports exactly those (so a
  ``barry_as_FLUFL`` import, which the compiler notes and the parser ignores, sends the
  check to the whole file); and it is compiled with a use of every name that follows a
  ``global`` in it put in front: if the module's scope declares one of them global, that
  use comes before the declaration and the second half fails, as the whole file would
  have if the first half used the name.
- A text declaring a coding (``compile`` reads such a file's bytes by it), holding a
  character UTF-8 cannot encode, or with no cut near its middle is compiled whole.

A large file is often a few large classes, so the cut may also fall inside a class: before a
``def``, ``class`` or decorator at the indentation of the body of an undecorated class at
column 0, after a blank line. The helper then compiles the second half under a
``class <the same name>:`` line, and the first half is compiled with one statement appended
at the cut's indentation, storing a name the text does not hold (``_PROBE``). That the first
half so compiles shows that the cut line's indentation closes exactly to a level of the
block it continues (the same characters: tabs are compared as the tokenizer does). The class
body that stores the name must be among the module's constants, under that name, with its
code starting on the class line found at column 0 and its first instruction after that
line on the first indented line after it that is not a comment (``_in_class``): then the
class is in no block of the module, and the cut is at its body's own level, not in a block
of the body (that body line, the first the tokenizer does not skip, is indented by spaces
and tabs only, as the cut is: a form feed would reset the tokenizer's column). So the second half, up to where it leaves the class,
continues that body as it continues the one it is compiled under: the same kind of scope (a
class in the module's), the same name (private names are mangled by it), the same depth of
blocks, indentation and nesting. What a class body's statement in one half can do to one in
the other is what a ``global`` statement does. One in the second half after its name was
used or bound in the first: the wrapper's body starts with a use of each name the second
half's ``global`` statements may declare, as the module's level does. One in the first half,
whose name the second annotates (an error): the wrapper's body first declares global every
name any ``global`` of the first half may declare, from anywhere in it (the class line
found in the text may not be the class's own, and a declaration too many only ever makes
the helper fail). A wrong guess (the cut in a method's nested function or in a block of the
body, a class in a block or decorated, a ``class`` line inside a string, a header continued
over lines) only fails to prove, and so does a line after the class that returns to an
indentation the shorter wrapper does not have. ``tests/test_halves_classes.py`` and three
attacks (``tests/test_attack_halves_classes*.py``) hold it to that.

``ahead(text)`` sends the second half before the caller needs the answer: a write proposal
(``tools/facade.py``, through ``validation.compiling_ahead``) starts it before making the
diff and running the content guards, which then run beside the helper's compile, and cuts
nearer the start (``_SHARE_AHEAD``), since this thread has that work to do first.

The helper compiles as the calling thread would: with no more frames left than it has
(the compiler allows three levels of nesting per frame left; the frames are counted by
recursing until RecursionError, which is not done under a tracer or profiler, since it
would switch a debugger's off: then the text is compiled whole) and with this process's
limit on the digits of an integer literal.

The helper is a plain ``python -I -S -W ignore``, started on first use (that first compile
is made here, whole, not waiting for it), in a session of its own and deaf to Ctrl-C. Its
first bytes say which Python it is (another one is never asked); then it reads a half from
a pipe and answers one byte. A second half never exceeds what the pipe holds, so sending
one never blocks; an answer that does not come within ``_PATIENCE`` seconds, or an
exception (Ctrl-C) while one is due, kills the helper, so that no later caller reads that
answer as its own; a helper that died is started again at most ``_RESTARTS`` times. One
caller at a time uses it; another thread meanwhile compiles whole. A forked child starts a
helper of its own. The helper exits when this process closes its pipe (at exit, or when
it dies). Each ask keeps the helper off the CPU the caller runs on (Linux): woken by the
pipe, it would otherwise be drawn to that CPU and share it with the first half.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import keyword
import os
import re
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from types import CodeType
from typing import NamedTuple

from grinta_jupyter.runtime import pyast, regions
from grinta_jupyter.runtime.pipes import capacity as _capacity
from grinta_jupyter.runtime.pipes import readable as _readable

# Below it (about 1,000 lines) the helper's round trip costs what the half saves, on the VM
# of docs/speed.md (60,000 before the helper was kept off the caller's CPU).
SPLIT_MIN_CHARS = 36_000
_SHARE = 0.5  # where the cut is sought: the first half is compiled here
# Under ``ahead`` this thread first does other work (for a 3,000-line ``create``, its diff
# and content guards: about a sixth of the whole compile) while the helper compiles.
_SHARE_AHEAD = 0.44
# Frames the helper is allowed fewer than ``_prepare`` has: the compile it stands for is the
# whole one ``compiles``'s caller would make, as deep as ``_prepare`` plus this. Under
# ``ahead`` that compile runs deeper than where the half was sent, by at most
# ``_AHEAD_FRAMES`` more (fewer frames only ever make the helper answer "not proven").
_FRAMES_BELOW = 1
_AHEAD_FRAMES = 40
_PATIENCE = 5.0  # seconds to wait for the helper's answer
_RESTARTS = 3
_MIN_HEADROOM = 100  # frames left below which the helper is not asked
_MAX_HEADROOM = 4_000  # frames the helper is allowed at most (3x as many levels of nesting)
_HEAD_WIDTHS = (8, 4, 4, 4)  # a half's size, its compile flags, frames and digits allowed

_CUT = re.compile(r"\n\r?\n(?=(?:def|class|async[ \t]+def)[ \t]|@)")
# The same inside a block: the indentation is group 1 (the second half then starts inside a
# module-level class's body: ``_inside``).
_INNER_CUT = re.compile(r"\n\r?\n([ \t]+)(?=(?:def|class|async[ \t]+def)[ \t]|@)")
# A class statement at column 0 up to its name (not one with type parameters, whose body is
# another scope's child, nor a name beyond ASCII, which the compiler would normalize).
_CLASS_HEAD = re.compile(r"class[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*[(:]")
# A line starting at column 0 with anything but a comment or the bracket closing a header.
_TOP_LINE = re.compile(r"\n[^ \t\r\n#)]")
# An indented line the tokenizer does not skip (not blank, not a comment), its indentation
# as the tokenizer reads it: spaces, tabs and form feeds. A form feed sets the column back to
# 0, so such a line is never taken to be indented as the cut is (the texts differ): it is
# not skipped either, since it may start a statement that goes on over the next lines.
_BODY_LINE = re.compile(r"\n([ \t\x0c]+)[^ \t\x0c\r\n#]")
# A name stored by the statement appended to a first half that ends inside a class body: the
# class's code object holding it shows which class that body is (``_in_class``).
_PROBE = "__grinta_half__"
_OPTIMIZED = 0x1  # CO_OPTIMIZED: a function's code object, never a class body's
_INNER_TRIES = 8  # candidates inside classes looked at on each side of the target
# The rest of a global statement's logical line: it holds no brackets, strings or comments,
# and may go on over backslash continuations.
_GLOBAL_TAIL = re.compile(r"(?:[^\n\r;#\\]|\\(?:\r\n|\r|\n))*")
# The usual spelling of the one feature that changes what is valid (a guess: the first half's
# own code object checks it).
_IMPORTS_ANNOTATIONS = re.compile(
    r"^from[ \t]+__future__[ \t]+import[ \t][^\n#]*\bannotations\b", re.MULTILINE
)
_NAME = re.compile(r"[A-Za-z0-9_\x80-\U0010ffff]+")  # the characters a NAME token may hold

_ANNOTATIONS = 0x1000000  # CO_FUTURE_ANNOTATIONS
_FUTURE_MASK = 0x1FE0010  # every __future__ compiler flag


def compiles(text: str) -> bool:
    """True when ``text`` was proven to compile in two halves at once; False means "not
    proven" (compile it whole to know, and to get its first error). Inside ``ahead`` of an
    equal text, the half sent then is the one answered."""
    started: _Started | None = getattr(_AHEAD, "started", None)
    if started is not None and started.text == text:
        _AHEAD.started = None
        return started.finish()
    prepared = _prepare(text, _SHARE, _FRAMES_BELOW)
    if prepared is None:
        return False
    with _HELPER.asking(prepared.head, prepared.payload) as ask:
        return ask is not None and _Started(text, prepared, ask).finish()


@contextlib.contextmanager
def ahead(text: str) -> Iterator[None]:
    """Send ``text``'s second half to the helper now, so that it compiles while this thread
    does other work (a diff, the content guards) before ``compiles(text)``, which then
    compiles only the first half here and reads the answer. The first half is smaller than
    ``compiles`` makes it alone (``_SHARE_AHEAD``). The helper stays this thread's until the
    block ends (another thread's compiles meanwhile are whole); an answer nobody asked for
    is read on the way out. Nothing is sent where ``compiles`` would not send it."""
    prepared = _prepare(text, _SHARE_AHEAD, _FRAMES_BELOW + _AHEAD_FRAMES)
    if prepared is None:
        yield
        return
    with _HELPER.asking(prepared.head, prepared.payload) as ask:
        if ask is not None:
            _AHEAD.started = _Started(text, prepared, ask, ahead=True)
        try:
            yield
        except Exception:
            # Not an interrupt: the answer comes within a compile's time, and reading it
            # keeps the helper (killing it would count against its restarts).
            if ask is not None and ask.pending:
                ask.ok()
            raise
        finally:
            _AHEAD.started = None


class _Place(NamedTuple):
    """Where a text is cut: the second half starts at ``at``; ``inside`` names the
    module-level class whose body it continues there, at ``indent`` (None and "" at the
    module's level)."""

    at: int
    inside: str | None = None
    indent: str = ""
    lines: tuple[int, int] = (0, 0)  # the class line's number, and its body's first line's


class _Prepared:
    """A text cut in two: the first half to compile here, the head and payload to send."""

    __slots__ = ("budget", "digits", "first", "flags", "head", "inside", "lines", "payload")

    def __init__(
        self,
        first: str,
        flags: int,
        head: bytes,
        payload: bytes,
        budget: int,
        digits: int,
        inside: str | None,
        lines: tuple[int, int],
    ) -> None:
        self.first, self.flags, self.head, self.payload = first, flags, head, payload
        self.budget, self.digits = budget, digits  # the frames and digits the helper allows
        self.inside = inside  # the class the cut is inside (``first`` then ends with a probe)
        self.lines = lines  # that class's line, and its body's first line (``_in_class``)


class _Started:
    """A text whose second half the helper was sent (``ask``), its first still to compile."""

    def __init__(self, text: str, prepared: _Prepared, ask: _Ask, ahead: bool = False) -> None:
        self.text, self._prepared, self._ask, self._ahead = text, prepared, ask, ahead

    def finish(self) -> bool:
        """Compile the first half here, then take the helper's answer. Sent ahead, the half
        proves nothing when the helper was allowed more than a whole compile here would be
        now: more frames (called deeper than ``ahead``, or the recursion limit lowered
        since) or more digits (the limit lowered since, by any thread)."""
        prepared = self._prepared
        if self._ahead and (
            sys.get_int_max_str_digits() != prepared.digits
            or frames_left() - _FRAMES_BELOW < prepared.budget
        ):
            return False
        try:
            with pyast.quietly():
                code = compile(prepared.first, "<first half>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        if prepared.inside is not None and not _in_class(code, prepared.inside, *prepared.lines):
            return False
        # The features the whole file has are the first half's: the second was compiled
        # with the ones guessed from its text, so a wrong guess proves nothing.
        return code.co_flags & _FUTURE_MASK == prepared.flags and self._ask.ok()


def _in_class(code: CodeType, name: str, head_line: int, body_line: int) -> bool:
    """Whether the probe ending a first half (``code`` is its code) is a statement of the body
    of a class called ``name`` in the module's scope, at that body's own level (not in a
    block of it), the class at column 0 (not in a block of the module).

    The class whose body stores the probe is found among the module's constants. Its code
    starting on ``head_line``, where the text has ``class <name>`` at column 0, shows that
    line is its own (a compound statement's first token starts its logical line, so nothing
    but indentation precedes it on its line: at column 0, the class is in no block). Its
    first instruction after that line being on ``body_line``, the first indented line after
    it that is not a comment, shows that line starts the body's first statement, so the
    body's level is that line's indentation, which the text showed is the cut's. The probe
    compiled at that indentation inside the class: at the body's level."""
    for const in code.co_consts:
        if (
            isinstance(const, CodeType)
            and const.co_name == name
            and not const.co_flags & _OPTIMIZED
            and _PROBE in const.co_names
        ):
            body = (line for _, _, line in const.co_lines() if line and line != head_line)
            return const.co_firstlineno == head_line and next(body, None) == body_line
    return False


def _prepare(text: str, share: float, frames_below: int) -> _Prepared | None:
    """``text`` cut near ``share`` and ready to send, or None where it is not split (too
    small, a coding declared, no cut, ``__future__`` in the second half, a character UTF-8
    cannot encode, too few frames left). The helper may use ``frames_below`` frames fewer
    than this thread has now: the whole compile it stands for runs that much deeper."""
    if len(text) < SPLIT_MIN_CHARS or regions.declares_coding(text):
        return None
    place = _place(text, share)
    if place is None:
        return None
    first, second = text[: place.at], text[place.at :]
    if _mentions(second, "__future__"):
        return None
    if place.inside is not None and _mentions(text, _PROBE):
        return None  # a class of the text could store it: the probe would prove nothing
    if place.inside is not None and "\r" in first and first.count("\r") != first.count("\r\n"):
        return None  # a lone CR ends a line for the compiler: the lines would not match
    # (the pattern scans 50 kB in 0.3 ms; the name, which it needs, in 0.03)
    flags = _ANNOTATIONS if "__future__" in first and _IMPORTS_ANNOTATIONS.search(first) else 0
    uses = _uses_of_globals(second)
    if place.inside is not None:
        # The second half continues a class body: compiled under that class's line, whose
        # body first declares global every name the first half may (the class's part of it
        # may hold any of them, wherever its line is: then an annotation of such a name
        # fails as it does whole), then uses what the second half may declare global; the
        # first half ends with the probe.
        declared = _uses_of_globals(first).split("\n")[:-1]
        lines = [f"global {name}" for name in declared] + uses.split("\n")[:-1]
        body = "".join(f"{place.indent}{line}\n" for line in lines)
        uses = f"{uses}class {place.inside}:\n{body}"
        first += f"{place.indent}{_PROBE} = 0\n"
    try:
        payload = (uses + second).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the whole compile says where
        return None
    headroom, digits = frames_left(), sys.get_int_max_str_digits()
    if headroom - frames_below < _MIN_HEADROOM or digits >= 1 << 31:
        return None
    # The helper compiles as the compiling thread would: no deeper (the compiler's nesting
    # budget is three times the frames left), and with this process's limit on the digits
    # of an integer literal.
    head = _head(len(payload), flags, headroom - frames_below, digits)
    return _Prepared(
        first, flags, head, payload, headroom - frames_below, digits, place.inside, place.lines
    )


def _head(size: int, flags: int, budget: int, digits: int) -> bytes:
    return b"".join(
        value.to_bytes(width, "little")
        for value, width in zip((size, flags, budget, digits), _HEAD_WIDTHS, strict=True)
    )


def frames_left(depth: int = 0) -> int:
    """How many more frames this thread can enter before RecursionError, up to
    ``_MAX_HEADROOM`` (about 0.3 ms for a thousand); 0 under a tracer or a profiler (the
    RecursionError could be raised inside it, which switches it off)."""
    if not depth and (sys.gettrace() is not None or sys.getprofile() is not None):
        return 0
    if depth >= _MAX_HEADROOM:
        return depth
    try:
        return frames_left(depth + 1)
    except RecursionError:
        return depth


def _cut(text: str, share: float = _SHARE) -> int | None:
    """Where the second half starts: the cut nearest ``share`` of the text, else None."""
    place = _place(text, share)
    return None if place is None else place.at


def _place(text: str, share: float = _SHARE) -> _Place | None:
    """The cut nearest ``share`` of the text, at the module's level or inside a class
    (``_inside``), within its middle half; None when there is none."""
    target, low, high = int(len(text) * share), len(text) // 4, len(text) * 3 // 4
    window = max(0, target - len(text) // 4)
    places: list[_Place] = []
    after = _CUT.search(text, target)
    earlier = list(_CUT.finditer(text, window, target))
    places.extend(_Place(m.end()) for m in (after, earlier[-1] if earlier else None) if m)
    # The nearest inside a class on each side, of the first few there (a candidate that is
    # not is passed over).
    for matches in (
        _INNER_CUT.finditer(text, target, high),
        reversed(list(_INNER_CUT.finditer(text, window, target))),
    ):
        for match in itertools.islice(matches, _INNER_TRIES):
            found = _inside(text, match.start(1), match.group(1))
            if found is not None:
                head, body = found
                lines = (text.count("\n", 0, head.start()) + 1, text.count("\n", 0, body) + 1)
                places.append(_Place(match.start(1), head.group(1), match.group(1), lines))
                break
    return min(
        (place for place in places if low <= place.at <= high),
        key=lambda place: abs(place.at - target),
        default=None,
    )


def _inside(text: str, at: int, indent: str) -> tuple[re.Match[str], int] | None:
    """The class statement at column 0 (its name is group 1) whose body the line at ``at``,
    indented by ``indent``, seems to continue, and where that body's first line starts: the
    last class line before it, not decorated, with no line at column 0 between them and a
    first body line indented alike. A guess: the first half's compile checks it
    (``_in_class``)."""
    start = text.rfind("\nclass", 0, at) + 1
    head = _CLASS_HEAD.match(text, start)
    if head is None or text.startswith(("@", ")"), text.rfind("\n", 0, max(0, start - 1)) + 1):
        return None  # a decorated class's code starts at its first decorator's line
    body = _BODY_LINE.search(text, head.end(), at)
    if body is None or body.group(1) != indent:
        return None
    return (head, body.start() + 1) if _TOP_LINE.search(text, head.end(), at) is None else None


def _mentions(text: str, name: str) -> bool:
    """Whether ``text`` may hold the name ``name`` (the compiler reads names NFKC-normalized)."""
    if name in text:
        return True
    return not text.isascii() and name in unicodedata.normalize("NFKC", text)


def _uses_of_globals(text: str) -> str:
    """A use of every name that may follow a ``global`` in ``text``, one per line."""
    names: dict[str, None] = {}
    start = text.find("global")
    while start >= 0:
        end = start + len("global")
        if _is_word(text, start - 1) or _is_word(text, end):
            start = text.find("global", end)
            continue  # part of a longer name
        tail = _GLOBAL_TAIL.match(text, end)
        assert tail is not None  # the pattern matches the empty string
        for name in _NAME.findall(tail.group()):
            if not unicodedata.normalize("NFKC", name).isidentifier():
                continue  # a number, or prose in a string: not a name
            if keyword.iskeyword(name):
                continue  # not a name either: a statement cannot declare it
            names[name] = None
        # A ``global`` inside that tail ends where it does: it adds no name.
        start = text.find("global", tail.end())
    return "".join(f"{name}\n" for name in names)


def _is_word(text: str, at: int) -> bool:
    """Whether ``text[at]`` exists and may be part of a NAME token."""
    return 0 <= at < len(text) and _NAME.fullmatch(text[at]) is not None


_CHILD = r"""
import signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
source, answer = sys.stdin.buffer, sys.stdout.buffer
answer.write(sys.hexversion.to_bytes(4, "little"))
answer.flush()
def headroom(depth=0):
    try:
        return headroom(depth + 1)
    except RecursionError:
        return depth
while True:
    head = source.read(20)
    if len(head) < 20:
        break
    size, flags, budget, digits = (
        int.from_bytes(head[a:b], "little") for a, b in ((0, 8), (8, 12), (12, 16), (16, 20))
    )
    data = source.read(size)
    if len(data) < size:
        break
    ok = False
    try:
        sys.set_int_max_str_digits(digits)
        sys.setrecursionlimit(sys.getrecursionlimit() - headroom() + budget)
        compile(data.decode("utf-8"), "<second half>", "exec", flags, dont_inherit=True)
        ok = True
    except Exception:
        pass
    answer.write(b"1" if ok else b"0")
    answer.flush()
"""


class _Ask:
    """A half sent to the helper, whose answer is pending until ``ok()`` reads it."""

    def __init__(self, helper: _Helper, process: subprocess.Popen[bytes]) -> None:
        self._helper, self._process = helper, process
        self.pending = True  # from before its first byte is written
        self._answer = False

    def ok(self) -> bool:
        if self.pending:
            try:
                self._answer = self._helper.answer(self._process)
            except BaseException:  # interrupted while waiting: the answer must never be read
                self._helper.stop()
                raise
            finally:
                self.pending = False
        return self._answer


class _Helper:
    """The helper process, started on first use, shared by the process's threads."""

    def __init__(self) -> None:
        self._pid = os.getpid()  # a forked child's copy of this helper is not its own
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._checked = False  # its first bytes said it runs this very Python
        self._capacity = 0  # what the pipe to the helper holds
        self._starts = 0
        self._away_from: int | None = None  # the CPU the helper was last kept off
        self._cpus: set[int] = set()  # the CPUs it may run on (see ``_start``)

    @contextlib.contextmanager
    def asking(self, head: bytes, payload: bytes) -> Iterator[_Ask | None]:
        """Send a half; yields its ``_Ask``, or None (helper busy, not started or not up
        yet, gone, or the half too large for its pipe): then compile whole. On the way out
        the answer is read if nobody did; an exception with the answer still to come stops
        the helper, so that no later caller reads it as its own."""
        if not self._lock.acquire(blocking=False):
            yield None
            return
        ask: _Ask | None = None
        try:
            process = self._ready(len(head) + len(payload))
            if process is not None:
                self._keep_off_this_cpu(process)
                ask = _Ask(self, process)
                if not self._write(process, head + payload):
                    ask = None
            yield ask
            if ask is not None:
                ask.ok()
        except BaseException:
            if ask is not None and ask.pending:
                self.stop()
            raise
        finally:
            self._lock.release()

    def answer(self, process: subprocess.Popen[bytes]) -> bool:
        """The helper's answer to the half it was sent (False on silence or death; False,
        unread, in a forked child: the answer is its parent's)."""
        if os.getpid() != self._pid:
            return False
        assert process.stdout is not None
        fd = process.stdout.fileno()
        try:
            byte = os.read(fd, 1) if _readable(fd, _PATIENCE) else b""
        except OSError:
            byte = b""
        if byte not in (b"0", b"1"):
            self.stop()  # silent or dead: a late answer must not reach the next caller
            return False
        return byte == b"1"

    def _ready(self, size: int) -> subprocess.Popen[bytes] | None:
        """The live helper when it can take ``size`` bytes now; None while there is none
        (after starting one for next time), while it has not said which Python it runs,
        or when it runs another (never asked again)."""
        process = self._process
        if process is None or process.poll() is not None:
            self.stop()
            if self._starts < _RESTARTS and sys.executable:
                self._starts += 1
                self._start()
            return None  # a fresh helper is used from a later call on
        if not self._checked:
            assert process.stdout is not None
            fd = process.stdout.fileno()
            if not _readable(fd, 0):
                return None  # still starting
            if os.read(fd, 4) != sys.hexversion.to_bytes(4, "little"):
                self.stop()
                self._starts = _RESTARTS  # another interpreter, or one that died: not again
                return None
            self._checked = True
        return process if size <= self._capacity else None

    def _keep_off_this_cpu(self, process: subprocess.Popen[bytes]) -> None:
        """Let the helper run on every CPU it may use but the one this thread is on.

        Waking a process by writing to its pipe draws it to the writer's CPU (Linux favours
        that for a reader that will answer at once), so both halves would share one CPU until
        the scheduler moves one away: a first-half compile took 19-25 ms instead of 16 on
        the 2-CPU VM of docs/speed.md. Nothing happens where the calls are missing (not
        Linux) or only one CPU is allowed; the thread may move later, which costs only time.
        """
        here = _current_cpu()
        others = self._cpus - {here}
        if here is None or here == self._away_from or not others:
            return
        try:
            os.sched_setaffinity(process.pid, others)
        except OSError:
            return
        self._away_from = here

    def _write(self, process: subprocess.Popen[bytes], data: bytes) -> bool:
        """Send ``data`` (it fits in the pipe: this never blocks); False when the helper
        is gone."""
        assert process.stdin is not None
        try:
            process.stdin.write(data)
            process.stdin.flush()
        except OSError:
            self.stop()
            return False
        return True

    def _start(self) -> None:
        env = {key: os.environ[key] for key in ("PATH", "LD_LIBRARY_PATH") if key in os.environ}
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-W", "ignore", "-c", _CHILD],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            return
        assert process.stdin is not None
        self._capacity = _capacity(process.stdin.fileno())
        self._process, self._checked, self._away_from = process, False, None
        try:  # the starting thread's CPUs, and the main thread's if that one was pinned
            self._cpus = os.sched_getaffinity(process.pid) | os.sched_getaffinity(os.getpid())
        except (AttributeError, OSError):  # not Linux: it is never kept off a CPU
            self._cpus = set()

    def stop(self) -> None:
        """Kill the helper (a later call starts another, within ``_RESTARTS``); in a forked
        child, only forget it (it is the parent's)."""
        process, self._process = self._process, None
        if os.getpid() != self._pid:
            return
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            process.wait(timeout=1)

    def close(self) -> None:
        """Stop the helper (at exit), even if a thread is stuck holding it."""
        locked = self._lock.acquire(timeout=1)
        try:
            self.stop()
        finally:
            if locked:
                self._lock.release()


def _current_cpu() -> int | None:
    """The CPU the calling thread runs on (Linux's ``/proc/thread-self/stat``, field 39,
    about 20 us), or None where that cannot be read."""
    try:
        with open("/proc/thread-self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        return int(fields[36])  # the fields after the command's name start at field 3
    except (OSError, ValueError, IndexError):
        return None


_HELPER = _Helper()
_AHEAD = threading.local()  # ``started``: this thread's text sent by ``ahead``


@atexit.register
def _close() -> None:
    _HELPER.close()  # this process's own: a forked child's is not its parent's


def _forget_after_fork() -> None:
    """A forked child must not share its parent's helper (the two would read each other's
    answers): it starts its own when it needs one."""
    global _HELPER, _AHEAD
    _HELPER = _Helper()
    _AHEAD = threading.local()  # a half the parent sent ahead is the parent's


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
