"""Attacks on the counted collector pause (``runtime/collector.py``) and on the parses built
under it (``runtime/pyast.py``): interrupts at its edges, generators, gc callbacks, forks,
the kernel's wrapped cell parse and a real IPython shell.

"""

from __future__ import annotations

import _thread
import ast
import contextlib
import gc
import inspect
import json
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.runtime import collector, pyast
from tests.test_ast_threads import in_a_fork
from tests.test_collector import held_in_a_thread

_REPO = Path(__file__).resolve().parent.parent
_SOURCE = "def f(x):\n    return [(a, b) for a in x for b in a]\n" * 40


@pytest.fixture
def clean() -> Iterator[None]:
    """The collector on, nothing paused, before; and put back so after (even after a leak)."""
    assert gc.isenabled()
    assert collector._pausing == {}
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        collector._pausing.clear()
        collector._full = None
        gc.set_threshold(*thresholds)
        gc.enable()


@pytest.fixture
def interrupting() -> Iterator[Callable[[float], threading.Timer]]:
    """``after(seconds)`` sends the main thread a signal whose handler raises
    ``KeyboardInterrupt`` (what SIGINT, a kernel's interrupt, does)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread only")

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, handler)
    main = threading.get_ident()
    timers: list[threading.Timer] = []

    def after(seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGUSR1))
        timers.append(timer)
        timer.start()
        return timer

    try:
        yield after
    finally:
        for timer in timers:
            timer.cancel()
            timer.join()
        signal.signal(signal.SIGUSR1, previous)


def _state() -> list[object]:
    return [gc.isenabled(), list(gc.get_threshold()), len(collector._pausing)]


def _usable() -> list[object]:
    """The state, then whether a pause still turns collection off and back on."""
    before = _state()
    with collector.paused():
        inside = gc.isenabled()
    return [before, inside, _state()]


# --- interrupts at the edges of a pause -----------------------------------------------


def test_an_interrupt_while_a_pause_waits_to_end_does_not_leave_collection_off(
    clean: None, interrupting: Callable[[float], threading.Timer]
) -> None:
    """Another thread holds the collector's lock (its own pause's bookkeeping, preempted; or
    a fork, which holds it across ``fork()``) when the kernel's pause ends; lock waits are
    interruptible, and SIGINT arrives meanwhile (the user interrupts the kernel)."""
    held, release = threading.Event(), threading.Event()

    def bookkeeping() -> None:
        with collector._LOCK:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=bookkeeping)
    with pytest.raises(KeyboardInterrupt), collector.paused():
        holder.start()
        held.wait(10)
        interrupting(0.2)
        threading.Timer(0.6, release.set).start()
    holder.join()
    with collector.paused():  # any later pause, which should end them all
        pass
    assert collector._pausing == {}, "the interrupted pause is still counted"
    assert gc.isenabled(), "automatic collection is off for the kernel's life"


def test_an_interrupt_just_after_the_first_pause_turns_collection_off(
    clean: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending signal is raised right after the C call it arrived in returns (CPython checks
    for it after every call): here, after ``gc.disable()``, before ``_pausing[me] = ...``."""
    real = gc

    class SignalDuringDisable:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def disable(self) -> None:
            real.disable()
            _thread.interrupt_main()  # SIGINT arriving while gc.disable() runs

    monkeypatch.setattr(collector, "gc", SignalDuringDisable())
    with pytest.raises(KeyboardInterrupt), collector.paused():
        pass
    monkeypatch.setattr(collector, "gc", real)
    with collector.paused():
        pass
    assert gc.isenabled(), "automatic collection is off for the kernel's life"


def test_an_interrupt_inside_a_pause_ends_it(
    clean: None, interrupting: Callable[[float], threading.Timer]
) -> None:
    """SIGINT while Python runs (or blocks) inside the pause: the pause ends on the way out."""
    with pytest.raises(KeyboardInterrupt), collector.paused(), collector.paused():
        interrupting(0.05)
        threading.Event().wait(5)  # a wait the signal interrupts
    assert collector._pausing == {}
    assert gc.isenabled()


def test_an_interrupt_while_the_kernels_cell_parse_waits_for_grintas_build(
    clean: None, interrupting: Callable[[float], threading.Timer]
) -> None:
    """The kernel's wrapped ``ast_parse`` waits for ``_BUILDING`` (grinta is building a tree)
    and the user interrupts: the interrupt reaches the kernel, nothing stays held or paused."""
    from IPython.core.compilerop import CachingCompiler

    shell = types.SimpleNamespace(compile=CachingCompiler())
    pyast.share_with_the_kernel(shell)
    building, release = threading.Event(), threading.Event()

    def grinta_builds() -> None:
        with pyast._BUILDING, collector.paused():
            building.set()
            release.wait(10)

    grinta = threading.Thread(target=grinta_builds)
    grinta.start()
    building.wait(10)
    started = time.monotonic()
    try:
        interrupting(0.2)
        with pytest.raises(KeyboardInterrupt):
            shell.compile.ast_parse("x = 1")
        assert time.monotonic() - started < 5, "the lock wait was not interrupted"
        assert not gc.isenabled(), "grinta's build is still paused"
    finally:
        release.set()
        grinta.join()
    assert collector._pausing == {}
    assert gc.isenabled()
    acquired: list[bool] = []

    def take_and_let_go() -> None:
        if pyast._BUILDING.acquire(timeout=5):
            pyast._BUILDING.release()
            acquired.append(True)

    other = threading.Thread(target=take_and_let_go)
    other.start()
    other.join()
    assert acquired == [True], "the interrupted parse left _BUILDING held"
    assert ast.dump(shell.compile.ast_parse("x = 1")) == ast.dump(ast.parse("x = 1"))


# --- pauses that end elsewhere, or are never ended by hand --------------------------------


def test_a_pause_held_by_an_abandoned_generator_ends_when_it_is_dropped(clean: None) -> None:
    def records() -> Iterator[int]:
        with collector.paused():
            yield from range(10)

    reader = records()
    assert next(reader) == 0
    assert not gc.isenabled()
    del reader  # never exhausted, never closed by hand: GeneratorExit ends the pause
    assert collector._pausing == {}
    assert gc.isenabled()


def test_a_pause_begun_in_one_thread_and_ended_in_another_is_the_first_threads(
    clean: None,
) -> None:
    pause = collector.paused()
    opened: list[int] = []

    def begin() -> None:
        pause.__enter__()
        opened.append(threading.get_ident())

    beginner = threading.Thread(target=begin)
    beginner.start()
    beginner.join()
    assert list(collector._pausing.values()) == opened and not gc.isenabled()
    with collector.paused():  # the ender's own pause, nested across them
        pause.__exit__(None, None, None)
        assert not gc.isenabled(), "the ender's own pause is still open"
        assert list(collector._pausing.values()) == [threading.get_ident()]
    assert collector._pausing == {}
    assert gc.isenabled()


def test_pauses_ending_in_another_order_than_they_began(clean: None) -> None:
    """Three threads' pauses, begun 1, 2, 3 and ended 2, 3, 1: on till the last ends."""
    go = [threading.Event() for _ in range(3)]
    inside = [threading.Event() for _ in range(3)]
    seen: list[bool] = []

    def hold(index: int) -> None:
        with collector.paused():
            inside[index].set()
            go[index].wait(10)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(3)]
    for index, thread in enumerate(threads):
        thread.start()
        inside[index].wait(10)
    for index in (1, 2, 0):
        seen.append(gc.isenabled())
        go[index].set()
        threads[index].join()
    assert seen == [False, False, False]
    assert gc.isenabled()


def test_what_user_code_does_to_the_collector_inside_a_pause_is_kept(clean: None) -> None:
    """A kernel that had collection off and turns it on while grinta pauses keeps it on;
    thresholds a user sets during the warming's pause are not put back."""
    gc.disable()
    with held_in_a_thread(collector.paused):
        gc.enable()  # the user's cell, while grinta's thread pauses
    assert gc.isenabled()
    with held_in_a_thread(collector.full_passes_paused):
        gc.set_threshold(500, 7, 7)
    assert gc.get_threshold() == (500, 7, 7)
    gc.freeze()  # frozen objects do not upset a pause either
    try:
        assert _usable() == [[True, [500, 7, 7], 0], False, [True, [500, 7, 7], 0]]
    finally:
        gc.unfreeze()


# --- the kernel's wrapped cell parse --------------------------------------------------------


def _kernel_compiler() -> Any:
    from IPython.core.compilerop import CachingCompiler

    return CachingCompiler()


def test_the_wrapped_cell_parse_takes_the_arguments_ipython_passes(clean: None) -> None:
    bare = _kernel_compiler()
    shell = types.SimpleNamespace(compile=_kernel_compiler())
    pyast.share_with_the_kernel(shell)
    wrapped = shell.compile.ast_parse
    assert wrapped.grinta_shared and wrapped.__name__ == "ast_parse"
    assert inspect.signature(wrapped) == inspect.signature(bare.ast_parse)
    for args, kwargs in [
        (("x = 1",), {}),
        (("x = 1", "<cell>"), {}),
        (("x = 1",), {"filename": "<cell>"}),
        ((), {"source": "1 + 1", "filename": "<c>", "symbol": "eval"}),
        (("x = 1\n", "<c>", "single"), {}),
    ]:
        assert ast.dump(wrapped(*args, **kwargs)) == ast.dump(bare.ast_parse(*args, **kwargs))
    with pytest.raises(TypeError):
        wrapped("x", "<c>", "exec", "surplus")
    # the compiler's flags (IPython's autoawait) still reach the parse
    with shell.compile.extra_flags(ast.PyCF_ALLOW_TOP_LEVEL_AWAIT):
        assert isinstance(wrapped("await x").body[0].value, ast.Await)  # type: ignore[attr-defined]
    assert collector._pausing == {} and gc.isenabled()


@pytest.mark.parametrize(
    "source",
    ["x = 1 +", "def f(:\n", "if x:\n  y\n    z\n", "b'\\x'", "x = 1\0", "(" * 300 + ")" * 300],
)
def test_a_bad_cell_raises_what_the_unwrapped_parse_raises(clean: None, source: str) -> None:
    bare = _kernel_compiler()
    shell = types.SimpleNamespace(compile=_kernel_compiler())
    pyast.share_with_the_kernel(shell)
    with pytest.raises(Exception) as expected:
        bare.ast_parse(source, "<cell-1>")
    with pytest.raises(type(expected.value)) as caught:
        shell.compile.ast_parse(source, "<cell-1>")
    assert str(caught.value) == str(expected.value)
    assert getattr(caught.value, "lineno", None) == getattr(expected.value, "lineno", None)
    assert collector._pausing == {} and gc.isenabled()
    assert pyast.parse("x = 1").body  # _BUILDING was let go


class _SlottedCompiler:
    __slots__ = ()

    def ast_parse(self, source: str) -> ast.Module:
        return ast.parse(source)


@pytest.mark.parametrize(
    "shell",
    [
        types.SimpleNamespace(),
        types.SimpleNamespace(compile=None),
        types.SimpleNamespace(compile=types.SimpleNamespace()),
        types.SimpleNamespace(compile=_SlottedCompiler()),
    ],
    ids=["no compile", "compile None", "no ast_parse", "read-only ast_parse"],
)
def test_a_shell_that_cannot_be_wrapped_is_left_as_it_is(shell: Any) -> None:
    before = dict(vars(shell))
    pyast.share_with_the_kernel(shell)
    pyast.share_with_the_kernel(shell)
    assert vars(shell) == before
    if isinstance(shell.__dict__.get("compile"), _SlottedCompiler):
        assert shell.compile.ast_parse("x = 1").body


def test_two_shells_on_one_compiler_and_many_loads_wrap_it_once(clean: None) -> None:
    compiler = _kernel_compiler()
    first, second = (types.SimpleNamespace(compile=compiler) for _ in range(2))
    for _ in range(3):
        pyast.share_with_the_kernel(first)
        pyast.share_with_the_kernel(second)
    wrapped = compiler.ast_parse
    assert wrapped.grinta_shared
    assert not getattr(wrapped.__wrapped__, "grinta_shared", False)
    assert wrapped.__wrapped__.__func__ is type(compiler).ast_parse
    inside: list[list[int]] = []
    original = type(compiler).ast_parse

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        inside.append(list(collector._pausing.values()))
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(compiler), "ast_parse", spy)
        fresh = types.SimpleNamespace(compile=type(compiler)())
        pyast.share_with_the_kernel(fresh)
        assert fresh.compile.ast_parse("x = 1").body
    # the parse ran paused exactly once, not once per load
    assert inside == [[threading.get_ident()]]


def test_the_wrapped_cell_parse_waits_for_a_tree_grinta_builds(clean: None) -> None:
    shell = types.SimpleNamespace(compile=_kernel_compiler())
    pyast.share_with_the_kernel(shell)
    building, parsed_at, released_at = threading.Event(), [], []

    def grinta_builds() -> None:
        with pyast._BUILDING:
            building.set()
            time.sleep(0.3)
            released_at.append(time.monotonic())

    grinta = threading.Thread(target=grinta_builds)
    grinta.start()
    building.wait(10)
    shell.compile.ast_parse("x = 1")
    parsed_at.append(time.monotonic())
    grinta.join()
    assert parsed_at[0] >= released_at[0]


# --- a real IPython shell ---------------------------------------------------------------


def _python(script: str, *args: str, timeout: float = 90) -> str:
    """The last line ``script`` prints, run in a fresh interpreter at the repository."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=_REPO,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(_REPO), "GRINTA_MODEL": ""},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


_CELLS = r"""
import gc, json, sys, warnings
from IPython.core.interactiveshell import InteractiveShell
from grinta_jupyter.runtime import collector

shell = InteractiveShell.instance()
if sys.argv[1] == "loaded":
    shell.run_line_magic("load_ext", "grinta_jupyter")
    assert shell.compile.ast_parse.grinta_shared
cells = [
    "x = 1 +",
    "def f(:\n    pass",
    "if True:\n  a = 1\n    b = 2",
    "b'\\x'",
    "import asyncio\nawait asyncio.sleep(0)\ny = 5",
    "async def g():\n    return 7\nz = await g()",
    "%%capture captured\nprint('hidden')\nw = 3",
    "%time t = 2 + 2",
    "%timeit -n1 -r1 u = 1",
    "1/0",
    "pattern = '\\d'",
    "x = 40 + 2\nx",
    "for i in range(3):\n    pass\nelse:\n    i",
]
report = []
for cell in cells:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        ran = shell.run_cell(cell, store_history=True)
    error = ran.error_before_exec or ran.error_in_exec
    report.append([
        ran.success, type(error).__name__, str(error), repr(ran.result),
        sorted({type(w.message).__name__ for w in shown}),
    ])
names = {k: repr(shell.user_ns.get(k)) for k in ("x", "y", "z", "w", "t", "u", "i", "pattern")}
print(json.dumps([report, names, shell.user_ns["captured"].stdout, gc.isenabled(),
                  collector._pausing == {}]))
"""


def test_cells_run_in_a_real_shell_exactly_as_without_the_extension() -> None:
    bare, loaded = (json.loads(_python(_CELLS, mode)) for mode in ("bare", "loaded"))
    assert loaded == bare
    report, names, captured, enabled, unpaused = loaded
    assert [row[1] for row in report[:4]] == ["SyntaxError", "SyntaxError", "IndentationError"] + [
        "SyntaxError"
    ]
    assert names["y"] == "5" and names["z"] == "7" and names["w"] == "3"
    assert captured == "hidden\n"
    assert report[11][3] == "42"
    assert enabled and unpaused


_RUN_WAITS = """
import json, sys, tempfile, threading, time
from IPython.core.interactiveshell import InteractiveShell
from grinta_jupyter.runtime import pyast

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "grinta_jupyter")
script = tempfile.NamedTemporaryFile("w", suffix=".ipy", delete=False)
script.write("import time\\nSTAMP = time.monotonic()\\n")
script.close()
building, released_at = threading.Event(), []

def grinta_builds():
    with pyast._BUILDING:
        building.set()
        time.sleep(0.4)
        released_at.append(time.monotonic())

grinta = threading.Thread(target=grinta_builds)
grinta.start()
building.wait(10)
if sys.argv[1] == "cell":
    shell.run_cell("import time\\nSTAMP = time.monotonic()")
else:
    shell.run_line_magic("run", script.name)
grinta.join()
print(json.dumps(shell.user_ns["STAMP"] >= released_at[0]))
"""


@pytest.mark.parametrize(
    "how",
    [
        "cell",
        "%run file.ipy",
    ],
)
def test_every_cell_the_kernel_parses_waits_for_a_tree_grinta_builds(how: str) -> None:
    """A cell parsed beside one of grinta's builds would be the one to fail (gh-106905):
    every cell the kernel parses has to wait for the build, also the cells of ``%run``."""
    assert json.loads(_python(_RUN_WAITS, how)) is True


# --- fork -----------------------------------------------------------------------------


def test_a_fork_as_the_warming_begins_its_pause_leaves_the_child_full_passes(
    clean: None,
) -> None:
    """The warming thread is switched out between ``gc.set_threshold`` and ``_full = ...``
    (a thread switch may fall between any two bytecodes; a tracer picks this one) and the
    kernel forks (``multiprocessing``). Both steps are one under the collector's lock, which
    the fork waits for: the tracer lets the warming go on after a second."""
    before = _state()
    code = collector.full_passes_paused.__wrapped__.__code__  # type: ignore[attr-defined]
    lines, first = inspect.getsourcelines(code)
    target = first + next(i for i, line in enumerate(lines) if line.strip().startswith("_full ="))
    switched, forked = threading.Event(), threading.Event()

    def tracer(frame: types.FrameType, event: str, arg: object) -> Any:
        if frame.f_code is not code:
            return None
        if event == "line" and frame.f_lineno == target and not switched.is_set():
            switched.set()
            forked.wait(1)
        return tracer

    def warm() -> None:
        sys.settrace(tracer)
        try:
            with collector.full_passes_paused():
                pass
        finally:
            sys.settrace(None)

    warming = threading.Thread(target=warm)
    warming.start()
    assert switched.wait(10)
    try:
        in_child = in_a_fork(_state)
    finally:
        forked.set()
        warming.join()
    assert _state() == before
    assert in_child == before, "the child keeps the warming's threshold for life"


def test_a_fork_while_a_thread_waits_for_the_collectors_lock(clean: None) -> None:
    before = _state()
    held, release = threading.Event(), threading.Event()

    def bookkeeping() -> None:
        with collector._LOCK:
            held.set()
            release.wait(10)

    waiting_done = threading.Event()

    def waiting_pause() -> None:
        with collector.paused():
            waiting_done.wait(10)

    holder = threading.Thread(target=bookkeeping)
    holder.start()
    held.wait(10)
    waiter = threading.Thread(target=waiting_pause)
    waiter.start()  # blocks on the lock
    threading.Timer(0.3, release.set).start()
    try:
        in_child = in_a_fork(_usable)  # the fork waits for the lock too
    finally:
        waiting_done.set()
        holder.join()
        waiter.join()
    assert in_child == [before, False, before]
    assert _state() == before


def test_a_grandchild_forked_from_a_thread_of_the_child(clean: None) -> None:
    """The parent: a thread paused, another in the warming's pause. The child: a thread of
    its own paused, and a grandchild forked from that thread inside its pause."""
    before = _state()

    def child() -> object:
        mine = _state()
        answers: list[object] = []

        def fork_inside_a_pause() -> None:
            with collector.paused():
                answers.append(in_a_fork(lambda: [_state(), _usable()]))
            answers.append(_state())

        with held_in_a_thread(collector.paused):
            forking = threading.Thread(target=fork_inside_a_pause)
            forking.start()
            forking.join()
            answers.append(_state())
        return [mine, *answers, _state()]

    with held_in_a_thread(collector.paused), held_in_a_thread(collector.full_passes_paused):
        in_child = in_a_fork(child)
        assert not gc.isenabled() and gc.get_threshold()[2] > 1_000_000
    one = [False, before[1], 1]  # one pause open (the child's own threads' only)
    assert in_child == [
        before,  # the child: none of the parent's threads' pauses kept
        [one, [one, False, one]],  # the grandchild: only the forking thread's pause
        one,  # the forking thread's pause over, the child's holder's still open
        one,
        before,
    ]
    assert _state() == before


def test_forks_while_many_threads_pause_and_parse(clean: None) -> None:
    before = _state()
    interval = sys.getswitchinterval()
    stop = threading.Event()
    failures: list[str] = []

    def pause() -> None:
        while not stop.is_set():
            with collector.paused(), collector.paused():
                [[] for _ in range(20)]

    def parse() -> None:
        while not stop.is_set():
            try:
                pyast.parse(_SOURCE)
            except BaseException as error:  # noqa: BLE001
                failures.append(repr(error))

    threads = [threading.Thread(target=f) for f in (pause, pause, pause, parse, parse)]
    sys.setswitchinterval(1e-5)
    for thread in threads:
        thread.start()
    try:
        answers = [in_a_fork(lambda: [_usable(), len(pyast.parse(_SOURCE).body)]) for _ in range(6)]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        sys.setswitchinterval(interval)
    assert answers == [[[before, False, before], len(ast.parse(_SOURCE).body)]] * 6
    assert failures == []
    assert _state() == before


# --- a storm ------------------------------------------------------------------------------


class _Litter:
    def __del__(self) -> None:
        for _ in range(100):
            pass


def test_a_storm_of_pauses_and_parses_never_fails_grintas_parses(clean: None) -> None:
    """Ten threads with a switch every microsecond: pauses nested and crossing, grinta's
    parses (some inside ``quietly``), the warming's pause, and foreign ``ast.parse`` calls
    with cyclic garbage whose finalizers run bytecode. Grinta's parses never fail, the
    collector never runs inside a pause, and everything is as it was at the end."""
    before = _state()
    interval = sys.getswitchinterval()
    deadline = time.monotonic() + 2.5
    ours: list[str] = []
    ran_inside: list[str] = []
    foreign_parses: list[int] = []
    wanted = ast.dump(ast.parse(_SOURCE))

    def litter() -> None:
        for _ in range(20):
            item = _Litter()
            item.me = item  # type: ignore[attr-defined]

    def pauser() -> None:
        while time.monotonic() < deadline:
            with collector.paused():
                litter()
                if gc.isenabled():
                    ran_inside.append("pause")
                with collector.paused():
                    litter()

    def grinta(quiet: bool) -> None:
        while time.monotonic() < deadline:
            litter()
            try:
                with pyast.quietly() if quiet else contextlib.nullcontext():
                    tree = pyast.parse(_SOURCE)
                if ast.dump(tree) != wanted:
                    ours.append("wrong tree")
            except BaseException as error:  # noqa: BLE001
                ours.append(repr(error))

    def foreign() -> None:
        while time.monotonic() < deadline:
            litter()
            with contextlib.suppress(SystemError):  # CPython's own bug: not grinta's
                ast.parse(_SOURCE)
            foreign_parses.append(1)

    def warming() -> None:
        while time.monotonic() < deadline:
            with collector.full_passes_paused():
                litter()

    targets: list[Callable[[], None]] = [pauser] * 4 + [foreign] * 2 + [warming]
    targets += [lambda: grinta(False), lambda: grinta(False), lambda: grinta(True)]
    threads = [threading.Thread(target=target) for target in targets]
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert foreign_parses, "no foreign parse ran"
    assert ours == []
    assert ran_inside == []
    assert _state() == before
