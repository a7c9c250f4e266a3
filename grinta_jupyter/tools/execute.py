"""execute: Python code run in the user's kernel namespace, off the event loop, bounded.

Staging parses the code (a syntax error is refused before anyone is asked)
and records it; nothing runs before approval. Committing runs it as plain
Python (no magics, no top-level ``await``) in the user's namespace, in a
worker thread, so the kernel's event loop and every widget keep answering.
What comes back, bounded like ``run``'s output (``Settings.run_output_chars``,
head and tail): what the code printed to stdout and stderr, the value of a
final expression (as in a notebook cell), and any exception with the last
traceback lines in the executed code (EXECUTE_FAILED).

Rich outputs: figures the code made (new matplotlib figure numbers, when
``matplotlib.pyplot`` is loaded) are saved as PNG and closed, as the inline
backend does after a cell; a final value with ``_repr_png_`` or
``_repr_html_`` adds its bundle. Each is a MIME bundle (mime -> str, images
base64, at most ``MAX_OUTPUT_CHARS`` each, ``MAX_OUTPUTS`` in all) on
``Observation.outputs``, always with a ``text/plain`` line such as
``[figure 1: image/png 640x480]``, which is all the model reads of it.

Interrupting: at the time limit, or when the session's Stop sets ``cancel``,
an ``ExecutionInterrupted`` exception is raised in the worker thread
(``PyThreadState_SetAsyncExc``). Python code stops at its next bytecode. Code
inside one C call that releases the GIL (``time.sleep``, a blocking read, a
long numpy operation) stops only when that call returns, and code that
catches ``BaseException`` and goes on is not stopped at all: after
``INTERRUPT_GRACE`` seconds the tool reports it as still running, naming both
causes, and returns; the thread ends (raising before its next Python line)
once the call returns, and what it prints meanwhile is not captured.

Limits threads cannot lift:
- One C call that holds the GIL throughout (a regular expression that
  backtracks catastrophically, ``str()`` of a huge int, sorting a huge list)
  lets no other thread run until it returns: neither the time limit nor Stop
  can end it or even report it before then, and the kernel's event loop (its
  widgets, the Stop button) waits too. Afterwards either the code goes on and
  the step reports what it did, past its time limit, or, when the waiting
  thread takes the GIL first, the time limit stops it right after that call
  (COMMAND_TIMEOUT).
- ``os._exit``, a crash in C code (a segfault) or a fatal interpreter error
  end the kernel, and the session with it; nothing here can contain them.
  ``sys.exit()`` and ``raise SystemExit`` end only the code (EXECUTE_FAILED),
  and so do IPython's ``exit()`` and ``quit()`` in a kernel: the namespace
  makes the shell's ``ask_exit`` raise SystemExit in executed code
  (``in_executed_code``; jupyter/kernel.py).

Thread switching: while any executed code's thread is alive, the interpreter's switch
interval (``sys.setswitchinterval``) is lowered to ``SWITCH_INTERVAL``. A thread that wants
the GIL from one that runs Python waits up to that interval, and the kernel's own work gives
the GIL up at every system call: at the default 5 ms, a cell whose traceback IPython formats
(tens of thousands of ``lstat`` calls) took ~20 s while executed code looped, and so did a
kernel interrupt's end of a cell. CPython has no per-thread priority or interval, so the
setting is global; it costs nothing while no two threads want the GIL, and measured nothing
beyond noise on the looping code's speed when they do. The first run saves the interval it
finds (the user's own, if they set one) and the last thread to end puts it back, unless
someone set another meanwhile (that one is kept); an interval already at or under
``SWITCH_INTERVAL`` is left alone. The count follows the threads, not the tool: an
exception, a time limit or Stop that ends the code restores it at once, and a thread the tool
gave up on (stuck) keeps it lowered until that thread ends, since while it loops the kernel
would otherwise be as slow as before; a thread blocked in a C call costs nothing meanwhile.

Output capture (tools/capture.py): while code runs, ``sys.stdout`` and
``sys.stderr`` are stand-ins that route each write by thread; only the
executing thread's writes are captured, the kernel's and other threads' go
where they went before. Threads the code starts, and writes straight to file
descriptors, are not captured. Input (``_NoInput``): the executing thread finds stdin
closed, as a ``run`` command does (``input()`` and ``getpass`` raise EOFError).
"""

from __future__ import annotations

import ast
import base64
import builtins
import collections
import ctypes
import dataclasses
import io
import itertools
import linecache
import sys
import threading
import time
import traceback
import types
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from grinta_jupyter.runtime import pyast
from grinta_jupyter.runtime.errors import (
    COMMAND_FAILED,
    COMMAND_TIMEOUT,
    EXECUTE_FAILED,
    INTERNAL_ERROR,
    INVALID_ARGS,
    SYNTAX_ERROR,
    ToolError,
    ToolFailure,
)
from grinta_jupyter.runtime.process import OutputBuffer
from grinta_jupyter.runtime.proposal import CommandProposal, Observation
from grinta_jupyter.runtime.secrets import Secrets
from grinta_jupyter.runtime.workspace import Workspace
from grinta_jupyter.tools.base import Args, CommandResult, Settings, ToolContext, ToolSpec
from grinta_jupyter.tools.capture import ROUTER
from grinta_jupyter.tools.run import bound_output, render_output, strip_ansi
from grinta_jupyter.tools.values import kernel_secrets, loaded_module, own_entry

if TYPE_CHECKING:
    from grinta_jupyter.tools.kernel import Namespace

INTERRUPT_GRACE = 2.0  # seconds the interrupted code has to stop before it is reported stuck
MAX_OUTPUT_CHARS = 2_000_000  # one rich output's data; a bigger one keeps only its description
MAX_OUTPUTS = 8
VALUE_ITEMS = 1_000  # items of a builtin container shown in a final value (a cell shows as many)
FIGURE_ERROR_CHARS = 300  # of why a figure could not be drawn
TRACEBACK_FRAMES = 6
_POLL = 0.05
# Seconds, the interpreter's switch interval while executed code runs (the default is 0.005).
SWITCH_INTERVAL = 0.0002


class ExecuteArgs(Args):
    code: str
    timeout: float | None = Field(default=None, gt=0, description="Seconds (default 120).")


class ExecutionInterrupted(BaseException):
    """Raised inside executed code at its time limit or on Stop (not an ``Exception``, so an
    ``except Exception`` in the code does not swallow it)."""


def spec(namespace: Namespace) -> ToolSpec[ExecuteArgs]:
    """The ``execute`` tool bound to ``namespace``."""

    def stage(args: ExecuteArgs, ctx: ToolContext) -> CommandResult:
        problem = check_code(args.code, ctx.settings)
        if problem is not None:
            raise ToolFailure(problem)
        timeout = min(args.timeout or ctx.settings.run_timeout, ctx.settings.run_max_timeout)
        first = next((line for line in args.code.splitlines() if line.strip()), "")
        return CommandResult(args.code, timeout, f"execute: {first.strip()}")

    def execute(
        proposal: CommandProposal,
        workspace: Workspace,
        settings: Settings,
        cancel: threading.Event | None = None,
    ) -> Observation:
        try:
            timeout = proposal.timeout or settings.run_timeout
            if not timeout > 0:  # a hand-made proposal: NaN or negative
                timeout = settings.run_timeout
            timeout = min(timeout, settings.run_max_timeout)
            names = namespace.namespace()
            # Secrets that live only in the kernel (``db_password``, a dict loaded from a
            # .env): the session redacts only the environment's, and ``print(db_password)``
            # would hand one to the model. Read before the code runs (it may delete or
            # rebind them after printing) and after (it may make them).
            before = kernel_secrets(names)
            observation = run_code(
                names, proposal.command or "", timeout, settings, cancel, proposal.id
            )
            return _redacted(observation, sorted({*before, *kernel_secrets(names)}))
        except Exception as exc:  # a bug of ours must not end the session
            error = ToolError(INTERNAL_ERROR, f"execute failed unexpectedly: {exc!r}")
            return Observation.failure(error, proposal.id)

    return ToolSpec(
        name="execute",
        kind="command",
        description="Run Python in the user's kernel; a last expression's value is shown.",
        args=ExecuteArgs,
        stage=stage,
        execute=execute,
    )


def _redacted(observation: Observation, secrets: list[str]) -> Observation:
    """``observation`` with ``secrets`` redacted from its text, its error's message (``raise
    ValueError(db_password)``: what a caller of ``Runtime.call`` reads) and its outputs' texts
    (a description, a value's HTML, which the event log keeps); images are base64 and stay."""
    if not secrets:
        return observation
    known = Secrets(tuple(sorted(secrets, key=len, reverse=True)))
    outputs = tuple(
        {mime: data if mime == "image/png" else known.redact(data) for mime, data in output.items()}
        for output in observation.outputs
    )
    error = observation.error
    if error is not None:
        error = dataclasses.replace(error, message=known.redact(error.message))
    return dataclasses.replace(
        observation, output=known.redact(observation.output), outputs=outputs, error=error
    )


def in_executed_code() -> bool:
    """Whether the calling thread is running code for ``execute``: the kernel's hooks use it to
    act on that code alone (``exit()`` in it ends the code, not the kernel: jupyter/kernel.py)."""
    return ROUTER.capturing()


def check_code(code: str, settings: Settings) -> ToolError | None:
    """Why ``code`` cannot run (INVALID_ARGS, SYNTAX_ERROR), or None. Runs nothing."""
    if not code.strip():
        return ToolError(INVALID_ARGS, "code is empty")
    if len(code) > settings.run_max_command_chars:
        return ToolError(
            INVALID_ARGS,
            f"code is {len(code)} characters, over the limit of {settings.run_max_command_chars}; "
            "write it to a module and import it",
        )
    try:
        pyast.parse(code, "<execute>")
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        return ToolError(
            SYNTAX_ERROR,
            f"{where}{exc.msg} (plain Python: no %magics or !commands); nothing ran",
            line=exc.lineno,
        )
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return ToolError(INVALID_ARGS, f"code cannot be parsed: {exc!r}")
    return None


def run_code(
    namespace: dict[str, Any],
    code: str,
    timeout: float,
    settings: Settings,
    cancel: threading.Event | None = None,
    proposal_id: int | None = None,
    grace: float = INTERRUPT_GRACE,
) -> Observation:
    """Run ``code`` in ``namespace`` in a worker thread and wait for it (at most ``timeout``
    seconds, or until ``cancel`` is set, plus ``grace``); never raises for what the code does."""
    problem = check_code(code, settings)  # again: a proposal may be made by hand
    if problem is not None:
        return Observation.failure(problem, proposal_id)
    run = _Run(code, namespace, settings.run_capture_bytes)
    started = time.monotonic()
    ROUTER.install()
    NO_INPUT.install()
    try:
        thread = threading.Thread(target=_work, args=(run,), name="grinta-execute", daemon=True)
        thread.start()
        why = _wait(run, thread, timeout, cancel, grace)
    finally:
        NO_INPUT.uninstall()
        ROUTER.uninstall()
    return run.observation(why, timeout, time.monotonic() - started, settings, proposal_id)


def _work(run: _Run) -> None:
    """The worker thread: ``run``, under a short switch interval for as long as the thread
    lives (an interrupt cannot land outside ``run.work``: see ``_Run``)."""
    SWITCHING.enter()
    try:
        run.work()
    finally:
        SWITCHING.leave()


class _SwitchInterval:
    """``sys.setswitchinterval(SWITCH_INTERVAL)`` while at least one run is entered; the
    interval found by the first is put back after the last, unless it was changed meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs = 0
        self._saved = 0.0
        self._lowered: float | None = None  # the value set, None when nothing was changed

    def enter(self) -> None:
        with self._lock:
            if self.runs == 0:
                self._saved = sys.getswitchinterval()
                self._lowered = None
                if self._saved > SWITCH_INTERVAL:
                    _set_switch_interval(SWITCH_INTERVAL)
                    self._lowered = sys.getswitchinterval()  # as kept
            self.runs += 1

    def leave(self) -> None:
        with self._lock:
            self.runs -= 1
            if self.runs == 0 and self._lowered is not None:
                if sys.getswitchinterval() == self._lowered:  # else someone chose another one
                    _set_switch_interval(self._saved)
                self._lowered = None


SWITCHING = _SwitchInterval()


_NO_INPUT = "code run by the agent gets no input: its stdin is closed"


class _NoInput:
    """While any execution runs, an executing thread that asks for input finds stdin closed,
    as a ``run`` command does: ``input()`` and ``getpass.getpass()`` write their prompt to the
    captured output and raise EOFError, and ``sys.stdin`` reads as empty.

    Without this, ``input()`` in a kernel sent the front end an input request under whatever
    cell was running (a box the user might type a password into, thinking their cell asked)
    and waited to the time limit; outside one (``grinta replay`` in a terminal) it read the
    terminal, and ``getpass`` opened ``/dev/tty``: a read no interrupt ends, left waiting
    for the user's next line after the step gave up on it.

    Every other thread gets the functions and stream that were replaced. Each is put back
    after the last run unless someone replaced it meanwhile (ipykernel swaps ``input`` and
    ``getpass`` at each cell and puts back what it found, which may be these: they stay,
    answering as the originals everywhere but in executing threads).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs = 0
        self.input: Any = builtins.input
        self.getpass: Any = None
        self.stdin: Any = None

    def install(self) -> None:
        import getpass  # imported here: a session that never executes code never needs it

        with self._lock:
            self._runs += 1
            if self._runs > 1:
                return
            if builtins.input is not closed_input:
                self.input, builtins.input = builtins.input, closed_input
            if getpass.getpass is not closed_getpass:
                self.getpass, getpass.getpass = getpass.getpass, closed_getpass
            if sys.stdin is not None and not isinstance(sys.stdin, _ClosedStdin):
                self.stdin = sys.stdin
                sys.stdin = _ClosedStdin(sys.stdin)

    def uninstall(self) -> None:
        import getpass

        with self._lock:
            self._runs -= 1
            if self._runs:
                return
            if builtins.input is closed_input:
                builtins.input = self.input
            if getpass.getpass is closed_getpass:
                getpass.getpass = self.getpass
            if isinstance(sys.stdin, _ClosedStdin):
                sys.stdin = sys.stdin.original


NO_INPUT = _NoInput()


def closed_input(prompt: object = "") -> str:
    """``input()`` with stdin closed in an executing thread (its prompt shown, then EOFError);
    the replaced ``input`` anywhere else."""
    if not ROUTER.capturing():
        answer: str = NO_INPUT.input(prompt)
        return answer
    sys.stdout.write(str(prompt))
    raise EOFError(f"EOF when reading a line ({_NO_INPUT})")


def closed_getpass(prompt: str = "Password: ", stream: Any = None) -> str:
    """``getpass.getpass`` as ``closed_input`` is ``input()``."""
    if not ROUTER.capturing():
        answer: str = NO_INPUT.getpass(prompt, stream)
        return answer
    sys.stdout.write(prompt)
    raise EOFError(f"getpass ({_NO_INPUT})")


class _EmptyInput(io.StringIO):
    """A stdin at its end: reads give ``''`` (``b''`` from ``buffer``); no file descriptor."""

    @property
    def buffer(self) -> io.BytesIO:
        return io.BytesIO()


class _ClosedStdin:
    """A stand-in for ``sys.stdin``: empty in an executing thread, ``original`` elsewhere."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def _stream(self) -> Any:
        return _EmptyInput() if ROUTER.capturing() else self.original

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream(), name)

    def __iter__(self) -> Any:
        return iter(self._stream())

    def __next__(self) -> str:
        line: str = next(self._stream())
        return line


def _set_switch_interval(seconds: float) -> None:
    """``sys.setswitchinterval(seconds)``, exactly: CPython keeps whole microseconds,
    truncated, and ``getswitchinterval()`` read back (6999 µs as 0.006999) would otherwise be
    set 1 µs lower (6998)."""
    sys.setswitchinterval((round(seconds * 1e6) + 0.5) / 1e6)


def _wait(
    run: _Run,
    thread: threading.Thread,
    timeout: float,
    cancel: threading.Event | None,
    grace: float,
) -> str | None:
    """Wait for the worker; interrupt it once at the deadline or on cancel. The reason it was
    interrupted ("timeout", "cancel"), with " stuck" when it did not stop within ``grace``."""
    deadline = time.monotonic() + timeout
    why: str | None = None
    give_up = 0.0
    while True:
        thread.join(_POLL)
        if not thread.is_alive():
            return why
        now = time.monotonic()
        if why is None:
            if cancel is not None and cancel.is_set():
                why = "cancel"
            elif now >= deadline:
                why = "timeout"
            if why is not None:
                run.interrupt(thread.ident)
                give_up = now + grace
        elif now >= give_up:
            return why + " stuck"


_code_numbers = itertools.count(1)
_sources: deque[str] = deque()  # linecache entries of executed code, oldest first
_KEEP_SOURCES = 100


@dataclass
class _Run:
    """One execution: the worker fills it in; the waiter interrupts it and reads it.

    Interruption is a handshake, so the one asynchronous exception lands in the
    code or is taken back, never in the bookkeeping after it: the waiter sets
    ``sent`` and then raises only if ``started and not finished``; the worker
    sets ``started`` then checks ``sent`` (and raises itself), and at the end
    sets ``finished`` then, if ``sent``, waits for ``send_done`` and takes
    anything still pending (``_take_pending``). Each side writes its flag before reading the
    other's, so at least one of them sees the other.
    """

    code: str
    namespace: dict[str, Any]
    capture_bytes: int
    stdout: OutputBuffer = field(init=False)
    stderr: OutputBuffer = field(init=False)
    filename: str = ""
    value: str | None = None
    error: ToolError | None = None
    trace: str = ""
    outputs: list[dict[str, str]] = field(default_factory=list)
    dropped: int = 0
    interrupted: bool = False
    started: bool = False
    finished: bool = False
    sent: bool = False
    send_done: bool = False

    def __post_init__(self) -> None:
        self.stdout = OutputBuffer(self.capture_bytes)
        self.stderr = OutputBuffer(self.capture_bytes)
        self.filename = f"<execute {next(_code_numbers)}>"

    # -- in the worker thread ----------------------------------------------------------------

    def work(self) -> None:
        ident = threading.get_ident()
        try:
            try:
                self.started = True
                if self.sent:
                    raise ExecutionInterrupted
                ROUTER.capture(ident, self.stdout, self.stderr)
                self._run()
            except ExecutionInterrupted:
                self.interrupted = True
        except ExecutionInterrupted:  # landed in the handler above
            self.interrupted = True
        self._settle(ident)
        ROUTER.release(ident)

    def _run(self) -> None:
        before = _figure_numbers()
        try:
            tree = pyast.parse(self.code, self.filename)
            last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            body = ast.Module(tree.body[:-1] if last else tree.body, type_ignores=[])
            _remember_source(self.filename, self.code)
            exec(compile(body, self.filename, "exec"), self.namespace)
            if last is not None:
                value = eval(
                    compile(ast.Expression(last.value), self.filename, "eval"), self.namespace
                )
                if value is not None:
                    self.value = _value_repr(value)
                    self._add(_value_outputs(value))
        except ExecutionInterrupted:
            raise
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the code is contained
            self.error, self.trace = _describe(exc, self.filename)
        self._add(_new_figures(before))

    def _add(self, outputs: list[dict[str, str]]) -> None:
        room = MAX_OUTPUTS - len(self.outputs)
        self.outputs.extend(outputs[:room])
        self.dropped += max(len(outputs) - room, 0)

    def _settle(self, ident: int) -> None:
        while True:
            try:
                self.finished = True
                if self.sent:
                    while not self.send_done:
                        time.sleep(0.001)
                    _take_pending(ident)
                return
            except ExecutionInterrupted:
                self.interrupted = True

    # -- in the waiting thread ---------------------------------------------------------------

    def interrupt(self, ident: int | None) -> None:
        self.sent = True
        if ident is not None and self.started and not self.finished:
            _set_async_exc(ident, ExecutionInterrupted)
        self.send_done = True

    def observation(
        self,
        why: str | None,
        timeout: float,
        elapsed: float,
        settings: Settings,
        proposal_id: int | None,
    ) -> Observation:
        limit = settings.run_output_chars
        sections = []
        for label, buffer in (("stdout", self.stdout), ("stderr", self.stderr)):
            text = render_output(buffer, limit // 2).rstrip("\n")
            if text:
                sections.append(f"[{label}]\n{text}")
        if self.value is not None:  # a repr is the code's text: no terminal codes either
            sections.append(f"[value]\n{bound_output(strip_ansi(self.value), limit // 3)}")
        sections.extend(output["text/plain"] for output in self.outputs)
        if self.dropped:
            sections.append(f"[... {self.dropped} more outputs not kept]")
        error = self.error
        if why is not None and (self.interrupted or why.endswith("stuck")):
            error = _interruption(why, timeout)
        if error is None:
            head = f"ok ({elapsed:.1f}s)"
        else:
            head = error.render() + (
                f"\n{self.trace}" if self.trace and error is self.error else ""
            )
        text = bound_output("\n".join([head, *sections]), limit)
        return Observation(error is None, text, error, proposal_id, outputs=tuple(self.outputs))


def _value_repr(value: Any) -> str:
    """``repr(value)``, builtin containers built here with ``VALUE_ITEMS`` items in all, at
    any depth (the rest as ``... N more``): a builtin container's repr is one C call, which
    holds the interpreter (neither the time limit nor Stop can end it, and the kernel waits)
    and builds the whole text first: ``[[0] * 10**6] * 1000`` costs 8 MB to hold and
    a minute and gigabytes to write out.

    The same goes for the values whose repr is made for them and writes their fields or
    items with the builtin repr: a namedtuple, a dataclass, a subclass of list, tuple or
    dict that keeps the builtin repr, a defaultdict, an OrderedDict. They are written here as
    their repr writes them, their fields from the same budget (``_made``). Any other repr is
    the user's code, and runs as such."""
    return _shown(value, [VALUE_ITEMS], set(), 0)


# Exact builtin containers by the id of their type: opening and closing text.
_FORMS: dict[int, tuple[str, str]] = {
    id(list): ("[", "]"),
    id(tuple): ("(", ")"),
    id(dict): ("{", "}"),
    id(set): ("{", "}"),
    id(frozenset): ("frozenset({", "})"),
    id(collections.deque): ("deque([", "])"),
}
_VALUE_DEPTH = 100  # containers deeper than this are elided (the interpreter's stack is not)
# The code objects of the reprs the standard library makes: every namedtuple's ``__repr__``
# shares one, and so does every dataclass's (the wrapper that guards against recursion).
_NAMEDTUPLE_REPR = vars(collections.namedtuple("_Probe", "a"))["__repr__"].__code__
_DATACLASS_REPR = vars(dataclasses.make_dataclass("_Probe", ["a"]))["__repr__"].__code__
# Subclasses that keep the builtin repr: the items it writes, read by the builtin itself.
_BUILTIN_REPRS = ((list, list.__iter__), (tuple, tuple.__iter__), (dict, dict.items))
# The commonest items, whose repr is the builtin's: no need to look for a made one.
_SCALAR_IDS = frozenset(map(id, (int, float, str, bytes, bool, complex, type(None))))
_PAIRS_IN_BRACES = sys.version_info >= (3, 12)  # OrderedDict({...}) rather than ([(k, v)])


@dataclass
class _Form:
    """How a value's repr writes it: ``opening``, its ``count`` items (``kind``: "items",
    "pairs" written ``k: v``, or "fields" written ``name=v``), ``closing``."""

    opening: str
    closing: str
    count: int
    items: Iterable[Any]
    kind: str = "items"


def _shown(value: Any, budget: list[int], open_ids: set[int], depth: int) -> str:
    """``value``'s repr, its builtin containers taking their items from ``budget``;
    ``open_ids`` are the containers being written (one met again is shown as repr does)."""
    form = _form(value)
    if form is None:
        array = _object_array(value, budget, open_ids, depth)
        return repr(value) if array is None else array
    if id(value) in open_ids or depth >= _VALUE_DEPTH:
        exact = id(type(value)) in _FORMS
        return form.opening[-1] + "..." + form.closing[0] if exact else "..."
    open_ids.add(id(value))
    try:
        parts = []
        for item in form.items:
            if budget[0] <= 0 and form.kind != "fields":  # a class's fields are all named
                break
            budget[0] -= 1
            if form.kind == "items":
                parts.append(_shown(item, budget, open_ids, depth + 1))
                continue
            key, item = item
            key_text = key if form.kind == "fields" else _shown(key, budget, open_ids, depth + 1)
            joint = "=" if form.kind == "fields" else ": "
            parts.append(f"{key_text}{joint}{_shown(item, budget, open_ids, depth + 1)}")
    finally:
        open_ids.discard(id(value))
    if form.count > len(parts):
        parts.append(f"... {form.count - len(parts)} more")
    trailing = "," if form.opening == "(" and form.count == 1 else ""
    return form.opening + ", ".join(parts) + trailing + form.closing


def _form(value: Any) -> _Form | None:
    """How ``value``'s repr writes it, when that repr writes builtin reprs of its items or
    fields: an exact builtin container, or a repr the standard library made (see
    ``_value_repr``); None for any other value, or an empty builtin (its repr is short)."""
    cls = type(value)
    exact = _FORMS.get(id(cls))
    if exact is not None:
        if not value:
            return None
        opening, closing = exact
        if cls is collections.deque and value.maxlen is not None:
            closing = f"], maxlen={value.maxlen})"
        pairs = cls is dict
        return _Form(
            opening,
            closing,
            len(value),
            value.items() if pairs else value,
            "pairs" if pairs else "items",
        )
    if id(cls) in _SCALAR_IDS:
        return None
    if cls is collections.defaultdict:
        factory = repr(value.default_factory)
        return _Form(f"defaultdict({factory}, {{", "})", len(value), value.items(), "pairs")
    if cls is collections.OrderedDict:
        if not value:
            return None
        if _PAIRS_IN_BRACES:
            return _Form("OrderedDict({", "})", len(value), value.items(), "pairs")
        return _Form("OrderedDict([", "])", len(value), value.items())
    owner, method = _repr_of(cls)
    for base, read in _BUILTIN_REPRS:
        if owner is base and cls is not base:
            opening, closing = _FORMS[id(base)]
            count = vars(base)["__len__"](value)
            return _Form(opening, closing, count, read(value), "pairs" if base is dict else "items")
    if owner is None or type(method) is not types.FunctionType:
        return None
    name = vars(type)["__name__"].__get__(cls, type)
    if method.__code__ is _NAMEDTUPLE_REPR and issubclass(cls, tuple):
        fields = own_entry(owner, "_fields")
        if type(fields) is not tuple or len(fields) != tuple.__len__(value):
            return None  # the namedtuple's own repr fails: let it say why
        return _Form(
            f"{name}(", ")", len(fields), zip(fields, tuple.__iter__(value), strict=True), "fields"
        )
    if method.__code__ is _DATACLASS_REPR and dataclasses.is_dataclass(owner):
        qualname = vars(type)["__qualname__"].__get__(cls, type)
        names = [f.name for f in dataclasses.fields(owner) if f.repr]
        fields_read = ((n, getattr(value, n)) for n in names)  # as its repr reads them
        return _Form(f"{qualname}(", ")", len(names), fields_read, "fields")
    return None


def _object_array(value: Any, budget: list[int], open_ids: set[int], depth: int) -> str | None:
    """A numpy array of objects (exactly ``ndarray``), as its repr writes it, its elements from
    ``budget``: numpy summarises a big array, but writes each element shown by its whole repr
    (a list of a million items as seven megabytes, in one C call). None for anything else."""
    numpy = loaded_module("numpy")
    if numpy is None or type(value) is not numpy.get("ndarray") or value.dtype.kind != "O":
        return None
    if value.size == 0 or id(value) in open_ids:
        return None if value.size == 0 else "array(...)"

    def element(item: Any) -> str:
        shown = _shown(item, budget, open_ids, depth + 1)
        return f"list({shown})" if type(item) is list else shown  # as numpy writes a list

    open_ids.add(id(value))
    try:
        text = numpy["array2string"](
            value, separator=", ", prefix="array(", formatter={"object": element}
        )
    finally:
        open_ids.discard(id(value))
    summarised = value.size > numpy["get_printoptions"]()["threshold"]
    shape = f", shape={value.shape}" if summarised else ""  # what numpy 2.2 and later add
    return f"array({text}{shape}, dtype=object)"


def _repr_of(cls: type) -> tuple[type | None, Any]:
    """The first class of ``cls``'s MRO whose own namespace defines ``__repr__``, and that
    entry (read without a lookup: ``values.own_entry``)."""
    for klass in vars(type)["__mro__"].__get__(cls, type):
        method = own_entry(klass, "__repr__")
        if method is not None:
            return klass, method
    return None, None


def _interruption(why: str, timeout: float) -> ToolError:
    stuck = why.endswith("stuck")
    what = (
        f"execute timed out after {timeout:g}s"
        if why.startswith("timeout")
        else "execute was stopped"
    )
    if stuck:
        return ToolError(
            COMMAND_TIMEOUT if why.startswith("timeout") else COMMAND_FAILED,
            f"{what} but did not stop: it is inside a call that cannot be interrupted "
            "(time.sleep, a blocking read, one long C operation) and stops when that returns, "
            "or it caught the interrupt (except BaseException) and went on; its later output "
            "is not captured",
        )
    if why.startswith("timeout"):
        return ToolError(COMMAND_TIMEOUT, f"{what} and was interrupted")
    return ToolError(COMMAND_FAILED, f"{what} before it finished (Stop)")


class _Pending(BaseException):
    """Put in place of an interrupt that may still be pending, and raised at once."""


# Loop turns in which a pending asynchronous exception is raised (at the first, in practice).
_TAKE_SPINS = 10_000


def _take_pending(ident: int) -> None:
    """Leave nothing pending for the calling thread ``ident``, and nothing signalled.

    Clearing with ``PyThreadState_SetAsyncExc(ident, NULL)`` signals the interpreter as if an
    exception were pending, and on CPython 3.11 only a thread that raises one takes that
    signal back: none would, and from then on every call made under a tracer or a profiler
    (a debugger, ``%prun``, coverage) spins for ever on its first instruction, hanging the
    kernel. So the pending interrupt, if any, is replaced by ``_Pending``, which this thread
    raises at its next loop turn and catches here, taking the signal back as any raised
    asynchronous exception does.
    """
    try:
        _set_async_exc(ident, _Pending)
        for _ in range(_TAKE_SPINS):
            pass
    except _Pending:
        return
    _set_async_exc(ident, None)  # never seen raised in that many turns: clear it, at least


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> int:
    """Raise ``exc`` in thread ``ident`` at its next bytecode (None clears a pending one)."""
    target = ctypes.py_object(exc) if exc is not None else None
    count: int = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), target)
    return count


def _remember_source(filename: str, code: str) -> None:
    """Put the code in linecache, so tracebacks (and later ones into functions it defined)
    show its lines; the oldest entries go past ``_KEEP_SOURCES``."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    _sources.append(filename)
    while len(_sources) > _KEEP_SOURCES:
        linecache.cache.pop(_sources.popleft(), None)


def _describe(exc: BaseException, filename: str) -> tuple[ToolError, str]:
    """EXECUTE_FAILED with ``Type: message``, and the last traceback lines from the executed code."""
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if f.filename == filename), len(frames))
    ours = [f for f in frames[first:] if f.filename == filename]
    line = f" (line {ours[-1].lineno})" if ours else ""
    # The message is the code's text (a library's coloured error, ``raise ValueError(text)``
    # of what a file held): terminal codes in it must not reach the model, as in ``run``.
    only = strip_ansi("".join(traceback.format_exception_only(type(exc), exc)).strip())
    shown = frames[first:][-TRACEBACK_FRAMES:]
    trace = strip_ansi("".join(traceback.format_list(shown)).rstrip("\n"))
    if trace:
        trace = "Traceback (most recent call last):\n" + trace
    return ToolError(EXECUTE_FAILED, f"{only}{line}"), trace


# -- rich outputs ----------------------------------------------------------------------------


def _figure_numbers() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _new_figures(before: set[int]) -> list[dict[str, str]]:
    """Each figure made since ``before`` as a PNG bundle (one that cannot be drawn as a line
    saying so, as a notebook shows its error under the cell); the figure is then closed."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    outputs = []
    for number in sorted(set(pyplot.get_fignums()) - before):
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png")
        except Exception as exc:  # the code's figure cannot be drawn (bad mathtext): say so
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:FIGURE_ERROR_CHARS]
            outputs.append({"text/plain": f"[figure {number}: not drawn: {why}]"})
            continue
        finally:
            pyplot.close(figure)
        outputs.append(_png(buffer.getvalue(), f"figure {number}"))
    return outputs


def _value_outputs(value: Any) -> list[dict[str, str]]:
    """The final value's PNG and HTML representations, if it has them (not for classes)."""
    if isinstance(value, type):
        return []
    outputs = []
    png = _call(value, "_repr_png_")
    if isinstance(png, str):
        try:
            png = base64.b64decode(png)
        except ValueError:  # not base64: a broken representation, not the code's failure
            png = None
    if isinstance(png, bytes):
        outputs.append(_png(png, "value"))
    html = _call(value, "_repr_html_")
    if isinstance(html, str):
        outputs.append(
            _bounded(
                {"text/html": html, "text/plain": f"[value: text/html, {len(html)} characters]"}
            )
        )
    return outputs


def _call(value: Any, method: str) -> Any:
    """``value.method()``, its first element when it returns (data, metadata), or None."""
    function = getattr(value, method, None)
    if not callable(function):
        return None
    try:
        result = function()
    except Exception:  # a broken representation is not the code's failure
        return None
    return result[0] if isinstance(result, tuple) and result else result


def _png(data: bytes, label: str) -> dict[str, str]:
    size = _png_size(data)
    shape = f" {size[0]}x{size[1]}" if size else ""
    encoded = base64.b64encode(data).decode("ascii")
    return _bounded({"image/png": encoded, "text/plain": f"[{label}: image/png{shape}]"})


def _png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's IHDR chunk."""
    if len(data) < 24 or not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _bounded(bundle: dict[str, str]) -> dict[str, str]:
    """The bundle without any data over ``MAX_OUTPUT_CHARS`` (its description says so)."""
    kept = {mime: data for mime, data in bundle.items() if len(data) <= MAX_OUTPUT_CHARS}
    if len(kept) < len(bundle):
        note = bundle["text/plain"].rstrip("]") + ", too large to keep]"
        kept["text/plain"] = note
    return kept
