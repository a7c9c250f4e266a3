"""Compiling a large Python file in two halves at once (runtime/halves.py).

The property that matters: ``halves.compiles(text)`` is True only when ``compile(text)``
succeeds. Each way a statement's validity can depend on another in the other half is
tried with a file that fails whole, and shown to be caught by the guard made for it (with
that guard switched off, the halves would have said True). The helper process is then
killed, stopped, kept busy and handed too much, and never makes the answer wrong or the
caller wait.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter.runtime import halves, validation

STDLIB = Path(sysconfig.get_paths()["stdlib"])
LARGE = ["tarfile.py", "argparse.py", "typing.py", "dataclasses.py", "_pydecimal.py"]


def _whole_ok(text: str) -> bool:
    try:
        compile(text, "<whole>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _ask(text: str, tries: int = 40) -> bool:
    """``halves.compiles``, retried while the helper is still starting (a call that finds
    none starts one and answers False, and so do calls before it has said it is up)."""
    for _ in range(tries):
        if halves.compiles(text):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def _fresh_helper(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Texts of a few tens of thousands of characters keep the tests quick; what is proven
    # does not depend on the size (test_halves.py checks the real threshold).
    monkeypatch.setattr(halves, "SPLIT_MIN_CHARS", 20_000)
    halves._HELPER.close()
    halves._HELPER = halves._Helper()
    yield
    halves._HELPER.close()


def _filler(tag: str, functions: int = 260) -> str:
    """Plain functions, about 70 characters each, with no blank line between them: no
    place to cut."""
    return "".join(
        f"def {tag}_{k}(a, b=1):\n    total = a + b * {k}\n    return [total, {k}]\n"
        for k in range(functions)
    )


def _file(first_extra: str, second_extra: str) -> str:
    """A file of about 37,000 characters with one place to cut, in its middle:
    ``first_extra`` opens the first half, ``second_extra`` follows the function that opens
    the second."""
    marker = "\n\ndef marker():\n    pass\n"
    text = first_extra + _filler("early") + marker + second_extra + _filler("late")
    cut = halves._cut(text)
    assert cut == text.index(marker) + 2, "the cut moved"
    return text


# -- stdlib modules and seeded mutations of them ------------------------------------------


@pytest.mark.parametrize("name", LARGE)
def test_large_modules_are_proven_in_halves(name: str) -> None:
    text = (STDLIB / name).read_text()
    assert halves._cut(text) is not None
    assert _ask(text), f"{name} compiles, and its halves should show it"


def test_mutated_modules_are_never_proven_when_they_do_not_compile() -> None:
    rng = random.Random(20261203)
    texts = [(STDLIB / name).read_text() for name in LARGE[:4]]
    assert _ask(texts[0])
    proven = refused = 0
    for round_ in range(160):
        lines = texts[round_ % len(texts)].split("\n")
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(lines))
            kind = rng.randrange(6)
            if kind == 0:  # a line moved elsewhere
                lines.insert(rng.randrange(len(lines)), lines.pop(at))
            elif kind == 1:
                del lines[at]
            elif kind == 2:  # a line dedented to column 0
                lines[at] = lines[at].lstrip()
            elif kind == 3:  # a triple quote opened or closed
                lines.insert(at, '"""')
            elif kind == 4:  # a statement that needs a function or a loop around it
                lines.insert(at, rng.choice(["return 1", "break", "yield 2", "await x"]))
            else:  # a module-level global after the names it declares were used
                lines.insert(at, rng.choice(["global TarFile", "global Optional", "global re"]))
        text = "\n".join(lines)
        said = halves.compiles(text)
        if said:
            assert _whole_ok(text), f"round {round_}: halves said it compiles, it does not"
            proven += 1
        elif not _whole_ok(text):
            refused += 1
    assert proven >= 10 and refused >= 40, (proven, refused)


# -- what crosses the cut -------------------------------------------------------------------


CROSSING = {
    # a __future__ import in the second half: only the top of a file may hold one
    "future import in the second half": ("", "from __future__ import annotations\n"),
    "future import spelled with NFKC characters": ("", "from __ｆuture__ import annotations\n"),
    # a global statement in the module's scope after its name was bound or used in the
    # other half: an assignment, an annotation, a with, a def, a use
    "global after an assignment": ("shared = 1\n", "if True:\n    global shared\n"),
    "global after an annotation": ("shared: int = 1\n", "global shared\n"),
    "global after a with": (
        "with open('f') as shared:\n    pass\n",
        "try:\n    global shared\nfinally:\n    pass\n",
    ),
    "global after a def": ("def shared():\n    pass\n", "global shared, other\n"),
    "global after a use": ("print(shared)\n", "for _ in ():\n    global shared\n"),
    # ... over a continuation, in a name NFKC-normalised
    "global over a continuation, NFKC name": (
        "ｘ = 1\n",
        "if True:\n    global \\\n        ｘ, other\n",
    ),
    # ... named in NFKC characters: only the first half's code object tells
    "annotations feature, NFKC name": (
        "from __future__ import ａnnotations\n",
        "def walrus(x: (y := 1)):\n    pass\n",
    ),
    # a relative future import: the compiler takes barry_as_FLUFL, the parser does not
    "relative barry_as_FLUFL": ("from .__future__ import barry_as_FLUFL\n", "x = 1 <> 2\n"),
    # features of the first half change what the second may hold
    "annotations feature": (
        "from __future__ import annotations\n",
        "def walrus(x: (y := 1)):\n    pass\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CROSSING))
def test_what_crosses_the_cut_is_never_proven(case: str) -> None:
    first_extra, second_extra = CROSSING[case]
    text = _file(first_extra, second_extra)
    assert not _whole_ok(text), "the case should fail as a whole file"
    assert _ask(_file("", "")), "a plain file is proven (the helper runs)"
    assert not halves.compiles(text)
    assert validation.first_error("crossing.py", text) is not None


@pytest.mark.parametrize(
    "case, guard, off",
    [
        ("global after an assignment", "_uses_of_globals", lambda text: ""),
        ("global after a with", "_uses_of_globals", lambda text: ""),
        ("global over a continuation, NFKC name", "_uses_of_globals", lambda text: ""),
    ],
)
def test_each_guard_is_what_catches_its_case(
    case: str, guard: str, off: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the guard the halves would prove a file that does not compile: the cases
    above test something."""
    text = _file(*CROSSING[case])
    assert _ask(_file("", ""))
    monkeypatch.setattr(halves, guard, off)
    assert halves.compiles(text), f"{case}: expected the unguarded halves to be fooled"


def test_the_second_half_is_compiled_with_the_first_halfs_features() -> None:
    text = _file(*CROSSING["annotations feature"])
    plain = _file("", "def walrus(x: (y := 1)):\n    pass\n")
    assert _whole_ok(plain) and _ask(plain), "without the feature the walrus is fine"
    assert not halves.compiles(text)
    fine = _file("from __future__ import annotations\n", "def f(x: 'Later') -> int:\n    pass\n")
    assert _whole_ok(fine) and halves.compiles(fine), "the feature itself is no obstacle"


@pytest.mark.parametrize(
    "first_extra, second_extra",
    [
        ("def bump():\n    global counter\n    counter = 1\n", "counter = 0\n"),
        ("counter = 0\n", "def bump():\n    global counter\n    counter = 1\n"),
        ("if True:\n    global counter\n", "counter: int = 0\n"),  # after it: fine
        ("", "class Box:\n    global counter\n"),
        ('"""The global state, as opposed to (local) state."""\n', "x = 1  # global x\n"),
    ],
)
def test_globals_that_cannot_cross_do_not_stop_the_halves(
    first_extra: str, second_extra: str
) -> None:
    text = _file(first_extra, second_extra)
    assert _whole_ok(text)
    assert _ask(text)


@pytest.mark.parametrize(
    "first_extra, second_extra, why",
    [
        ("", "", "a coding declaration"),
        ("s = '\\ud800'\n", "", "a lone surrogate"),
        ("x = 1\0\n", "", "a NUL"),
    ],
)
def test_what_the_whole_compile_must_judge_is_left_to_it(
    first_extra: str, second_extra: str, why: str
) -> None:
    text = _file(first_extra, second_extra)
    if why == "a coding declaration":
        text = "# -*- coding: latin-1 -*-\n" + text
    elif why == "a lone surrogate":
        text = text.replace("'\\ud800'", "'\ud800'")
    assert _ask(_file("", ""))
    assert not halves.compiles(text)


def test_errors_on_either_side_are_reported_by_the_whole_compile() -> None:
    assert _ask(_file("", ""))
    for first_extra, second_extra in (("def broken(:\n", ""), ("", "class Broken(\n")):
        text = _file(first_extra, second_extra)
        assert not halves.compiles(text)
        line, message = validation._python(text, "broken.py") or (0, "")
        try:
            compile(text, "broken.py", "exec", dont_inherit=True)
        except SyntaxError as exc:
            assert (line, message) == (exc.lineno, exc.msg)
        else:
            pytest.fail("expected a syntax error")


def test_a_string_across_the_cut_is_not_cut() -> None:
    text = _file('DOC = """\n', '"""\n')
    assert _whole_ok(text)
    assert not halves.compiles(text)  # its first half ends inside the string


def test_small_texts_start_no_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real threshold
    small = _filler("early", 150) + "\n\ndef marker():\n    pass\n" + _filler("late", 150)
    assert halves._cut(small) is not None and len(small) < halves.SPLIT_MIN_CHARS
    assert not halves.compiles(small)
    assert halves._HELPER._process is None
    assert _ask((STDLIB / "tarfile.py").read_text())  # over it


def test_the_features_are_guessed_from_the_import_not_from_words() -> None:
    """inspect.py names ``__future__`` and ``annotations`` without importing the feature:
    the guess must not be fooled into a mismatch (which would only cost speed)."""
    text = _file("CO_FUTURE = '__future__ annotations'\n", "")
    assert _ask(text)
    assert _ask((STDLIB / "inspect.py").read_text())


# -- the helper process ---------------------------------------------------------------------


def _helper_pid() -> int:
    assert _ask(_file("", ""))
    process = halves._HELPER._process
    assert process is not None
    return process.pid


def test_a_killed_helper_is_replaced() -> None:
    text = _file("", "")
    pid = _helper_pid()
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    assert not halves.compiles(text)  # found dead: whole compile this time
    assert _ask(text)
    assert halves._HELPER._process is not None and halves._HELPER._process.pid != pid


def test_a_stopped_helper_costs_one_wait_and_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(halves, "_PATIENCE", 0.3)
    text = _file("", "")
    pid = _helper_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert not halves.compiles(text)
        assert time.monotonic() - started < 3
        assert halves._HELPER._process is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert _ask(text)


def test_restarts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _file("", "")
    for _ in range(halves._RESTARTS):
        os.kill(_helper_pid(), signal.SIGKILL)
        time.sleep(0.1)
        assert not halves.compiles(text)
    time.sleep(0.2)
    assert not _ask(text, tries=5)
    assert halves._HELPER._process is None


def test_a_busy_helper_sends_the_next_caller_to_the_whole_compile() -> None:
    text = _file("", "")
    _helper_pid()
    assert halves._HELPER._lock.acquire()
    try:
        started = time.monotonic()
        result: list[bool] = []
        worker = threading.Thread(target=lambda: result.append(halves.compiles(text)))
        worker.start()
        worker.join(10)
        assert result == [False] and time.monotonic() - started < 2
    finally:
        halves._HELPER._lock.release()
    assert halves.compiles(text)


def test_a_half_larger_than_the_pipe_is_not_sent() -> None:
    text = _file("", "")
    _helper_pid()
    halves._HELPER._capacity = 1000
    assert not halves.compiles(text)
    assert halves._HELPER._process is not None  # still there, unused


def test_threads_asking_at_once_get_only_true_answers_for_true_texts() -> None:
    good, bad = _file("", ""), _file("late_1 = 0\n", "if True:\n    global late_1\n")
    assert not _whole_ok(bad)
    _helper_pid()
    wrong: list[str] = []

    def ask(text: str, expected: bool) -> None:
        for _ in range(15):
            if halves.compiles(text) and not expected:
                wrong.append("proved a broken text")

    threads = [threading.Thread(target=ask, args=(t, t is good)) for t in (good, bad, good, bad)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not wrong


def test_the_helper_has_a_session_of_its_own_and_leaves_with_its_pipe() -> None:
    pid = _helper_pid()
    assert os.getsid(pid) == pid != os.getsid(0)
    halves._HELPER.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the helper outlived its pipe")


def test_a_forked_child_does_not_use_its_parents_helper() -> None:
    text = _file("", "")
    parent_pid = _helper_pid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            own = halves._HELPER._process
            os.write(write, b"fresh" if own is None else b"shared")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 16)
    os.close(read)
    os.waitpid(child, 0)
    assert answer == b"fresh"
    assert halves._HELPER._process is not None and halves._HELPER._process.pid == parent_pid
    assert halves.compiles(text)


def test_a_traced_thread_is_not_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting the frames left recurses until RecursionError; under a debugger's tracer the
    error could be raised inside the tracer and switch it off. So a traced thread compiles
    whole, and its tracer keeps running."""
    text = _file("", "")
    assert _ask(text)
    calls: list[str] = []

    def tracer(frame: object, event: str, arg: object) -> object:
        calls.append(event)
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)  # type: ignore[arg-type]
    try:
        said = halves.compiles(text)
        still = sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
    assert not said and still and calls


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="keeping the helper off a CPU needs Linux and two CPUs",
)
def test_the_helper_is_kept_off_the_callers_cpu() -> None:
    """Woken by a write to its pipe, the helper would be drawn to the writer's CPU and the two
    halves would share it; each ask lets it run anywhere but where the caller is now."""
    text = _file("", "")
    allowed = os.sched_getaffinity(0)
    pid = _helper_pid()
    try:
        for cpu in sorted(allowed)[:2]:
            os.sched_setaffinity(0, {cpu})  # this thread, on that CPU only
            assert halves._current_cpu() == cpu
            assert halves.compiles(text)
            assert os.sched_getaffinity(pid) == allowed - {cpu}
    finally:
        os.sched_setaffinity(0, allowed)
    assert halves._HELPER._process is not None and halves._HELPER._process.pid == pid
