"""Attacks on four changes: a huge Python text compiled in a process of its own
(``validation._compile_aside``), the model's text held back from the panel
(``NotebookSession._hold_text``), the trace redrawn before the panel applies an update, and
resume recognising a write approved in part (``Session._landed_hunks``, agent/partial.py).

Real files, real subprocesses, real Session and Runtime objects. A test that passes is a
promise that holds; an ``xfail(strict=True)`` is a bug found and not fixed here."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent import (
    ModelText,
    ModelTurn,
    NeedsDecision,
    Session,
    SessionEnded,
    UserSaid,
)
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.updates import ApproveHunks
from grinta_jupyter.events import models as ev
from grinta_jupyter.jupyter.controller import TEXT_EVERY_S, NotebookSession
from grinta_jupyter.runtime import validation
from grinta_jupyter.runtime.validation import ASIDE_MIN_CHARS, first_error
from tests.conftest import snapshot, until_decision

REPO = Path(__file__).parent.parent

# -- 1. a huge Python text compiled in a process of its own ----------------------------------


def _module(defs: int) -> str:
    return "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(defs))


BIG = _module(16_000)  # about 590,000 characters: past ASIDE_MIN_CHARS, a compile of ~0.3 s
BROKEN = BIG + "def broken(:\n    pass\n"


@pytest.fixture(autouse=True)
def _cold() -> None:
    validation.forget()


@pytest.fixture
def no_halves(monkeypatch: pytest.MonkeyPatch) -> None:
    """No two-halves compile here (runtime/halves.py): a test that points ``sys.executable``
    elsewhere must not make the halves helper a program that is not this Python (it would
    then be off for every later test of this process)."""
    from grinta_jupyter.runtime import halves

    monkeypatch.setattr(halves, "SPLIT_MIN_CHARS", 10**12)


def _here(text: str | bytes, path: str = "big.py") -> tuple[int, str] | None:
    """What ``compile`` in this process says (bytes: as Python reads a file)."""
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except ValueError as exc:
        return 1, str(exc)
    return None


def _asides() -> list[int]:
    """The pids of this process's running children that are a compile aside."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # (not the halves helper, which lives on: its -c text names the limit too)
        mine = int(fields[1]) == os.getpid() and fields[0] != "Z"
        if mine and b"-X\0int_max_str_digits=" in cmdline:
            found.append(int(entry.name))
    return found


def _asides_gone(within_s: float = 10.0) -> bool:
    """Whether every compile aside ends within ``within_s`` (a killed process takes a moment
    to die on a busy machine)."""
    until = time.monotonic() + within_s
    while _asides():
        if time.monotonic() > until:
            return False
        time.sleep(0.01)
    return True


def _wait_for_aside(deadline_s: float = 10.0) -> int:
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        pids = _asides()
        if pids:
            return pids[0]
        time.sleep(0.002)
    raise AssertionError("no compile aside started")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\ufeff" + BIG, id="bom"),
        pytest.param(BIG + "\f\nx = 1\n\f  y = 2\n", id="form-feeds"),
        pytest.param(BIG.replace("\n", "\r") + "def g(:\r", id="cr-line-ends"),
        pytest.param(BIG.replace("\n", "\r\n") + "x = (1,\r\n", id="crlf"),
        pytest.param(BIG + "x = 1\0\n", id="nul"),
        pytest.param(BIG + "x = 1\u2028y = 2\n", id="line-separator"),
        pytest.param(BIG + "x = '\\d'\n", id="invalid-escape-warning"),
        pytest.param(BIG + "x = " + "(" * 250 + ")" * 250 + "\n", id="nested-parens"),
        pytest.param(BIG + "f'{x!z}'\n", id="f-string"),
        pytest.param(BIG + "x = '\ud800'\n", id="lone-surrogate"),
        pytest.param("# coding: nosuch\n" + BIG, id="unknown-coding"),
        pytest.param("# coding: utf-16\n" + BIG, id="utf-16-coding"),
        pytest.param("#!/bin/python\n# coding: ascii\r" + BIG + "s = 'é'\n", id="coding-cr"),
        pytest.param("# coding: latin-1\n" + BIG + "s = '\0'\n", id="coding-nul"),
    ],
)
def test_odd_huge_texts_get_the_answer_compile_gives(text: str) -> None:
    """Attack: BOM, form feeds, CR and CRLF line ends, NUL, U+2028, a lone surrogate, odd
    codings: the answer is the one ``_python`` gives (compile here of the text, or of its
    UTF-8 bytes when it declares a coding)."""
    assert len(text) >= ASIDE_MIN_CHARS
    declares = validation.regions.declares_coding(text)
    try:
        reference = _here(text.encode("utf-8") if declares else text)
    except UnicodeEncodeError as exc:
        reference = 1, str(exc)
    assert first_error("big.py", text, "python") == reference


@pytest.mark.parametrize("path", ["a\nb.py", "a\rb.py", "\udcffx.py", "\ud800.py", "é/ü.py"])
def test_odd_paths_change_nothing(path: str) -> None:
    """Attack: a path holding a newline, a CR, an undecodable byte (surrogateescape), a lone
    surrogate UTF-8 cannot encode at all, non-ASCII: same answer as here."""
    assert first_error(path, BROKEN, "python") == _here(BROKEN, path)


def test_no_interpreter_path_at_all_compiles_here(
    no_halves: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: ``sys.executable`` is None (an embedded interpreter that cannot tell its own
    path; the docs allow None or ""). It raised TypeError out of the syntax check: fixed in
    runtime/validation.py (no interpreter to start: compiled here, as runtime/halves.py
    does)."""
    monkeypatch.setattr(sys, "executable", None)
    assert first_error("big.py", BROKEN, "python") == _here(BROKEN)
    validation.forget()
    assert first_error("big.py", BIG, "python") is None


@pytest.mark.parametrize("program", ["", "/bin/echo", "/bin/cat", "/bin/true", "/bin/false", "/"])
def test_an_executable_that_is_not_python_gives_no_wrong_answer(
    no_halves: None, monkeypatch: pytest.MonkeyPatch, program: str
) -> None:
    """Attack: ``sys.executable`` names something that is not Python (or nothing, or a
    folder): its output is never taken for an answer."""
    monkeypatch.setattr(sys, "executable", program)
    assert first_error("big.py", BROKEN, "python") == _here(BROKEN)
    validation.forget()
    assert first_error("big.py", BIG, "python") is None


def test_a_program_that_answers_like_the_child_but_is_not_python(
    no_halves: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Attack: a wrapper that exits 0 and prints a well-formed answer without compiling
    (``sys.executable`` pointing at a shim). Documented: such a program is believed; the
    aside does not check which interpreter answered (runtime/halves.py's helper does)."""
    shim = tmp_path / "python3"
    shim.write_text("#!/bin/sh\ncat >/dev/null\necho null\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "executable", str(shim))
    assert first_error("big.py", BROKEN, "python") is None  # believed: see the report


def test_a_hanging_child_is_killed_and_the_text_compiled_here(
    no_halves: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Attack: the interpreter started never answers (stands for a child stuck): after the
    timeout it is killed, and the answer is found here."""
    shim = tmp_path / "python3"
    pidfile = tmp_path / "pid"
    shim.write_text(f"#!/bin/sh\necho $$ > '{pidfile}'\nexec sleep 300\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "executable", str(shim))
    monkeypatch.setattr(validation, "ASIDE_TIMEOUT_S", 1.0)
    started = time.monotonic()
    assert first_error("big.py", BROKEN, "python") == _here(BROKEN)
    assert time.monotonic() - started < 30
    pid = int(pidfile.read_text())
    until = time.monotonic() + 10
    while time.monotonic() < until:  # killed: gone, or a zombie waiting to be reaped
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.01)
    else:
        raise AssertionError(f"the hanging child {pid} still runs")


def test_a_child_killed_midway_gives_the_answer_found_here() -> None:
    """Attack: the compile aside is killed (the OOM killer, a user's kill -9) while it
    compiles: the check is made here instead, with the right answer, and nothing is left."""
    text = BIG + BIG.replace("def f", "def g") + "x = (1,\n"
    killed: list[int] = []

    def kill() -> None:
        pid = _wait_for_aside()
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        assert first_error("big.py", text, "python") == _here(text)
    finally:
        killer.join()
    assert killed
    assert _asides_gone()


def test_a_ctrl_c_during_the_check_ends_the_child_and_caches_nothing() -> None:
    """Attack: SIGINT (the kernel's Ctrl-C) arrives while the aside compiles: the
    KeyboardInterrupt reaches the caller, the child does not outlive it, no answer is
    cached, and the next check answers right."""
    text = BIG + BIG.replace("def f", "def g") + "def broken(:\n"

    def interrupt() -> None:
        _wait_for_aside()
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = threading.Thread(target=interrupt)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            first_error("big.py", text, "python")
            time.sleep(5)  # the signal came after the check: fail below, not hang
    finally:
        sender.join()
        signal.signal(signal.SIGINT, previous)
    assert _asides_gone()
    assert first_error("big.py", text, "python") == _here(text)


def test_python_environment_variables_and_the_cwd_change_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Attack: a kernel started with PYTHONWARNINGS=error, PYTHONSTARTUP, PYTHONPATH to a
    folder holding ``json.py`` and ``warnings.py`` that print noise, and that folder as the
    working directory (a notebook folder with a ``json.py``): -I ignores them all."""
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    for name in ("json", "warnings", "sitecustomize", "usercustomize"):
        (noisy / f"{name}.py").write_text("import sys\nprint('[1, \"noise\"]')\nsys.exit(0)\n")
    (noisy / "startup.py").write_text("print('[1, \"startup\"]')\n")
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    monkeypatch.setenv("PYTHONSTARTUP", str(noisy / "startup.py"))
    monkeypatch.setenv("PYTHONPATH", str(noisy))
    monkeypatch.setenv("PYTHONINTMAXSTRDIGITS", "640")
    monkeypatch.chdir(noisy)
    text = BIG + "x = '\\d'\ny = " + "7" * 1_000 + "\n"
    assert first_error("big.py", text, "python") == _here(text) is None
    validation.forget()
    assert first_error("big.py", BROKEN, "python") == _here(BROKEN)


def test_many_threads_checking_huge_files_at_once_each_get_their_own_answer() -> None:
    """Attack: eight threads check eight different huge texts at once (each broken at a
    different place, or not): each gets its own text's answer."""
    texts = [BIG + "\n" * k + ("def broken(:\n" if k % 2 else "x = 1\n") for k in range(8)]
    answers: dict[int, Any] = {}

    def check(k: int) -> None:
        answers[k] = first_error(f"big{k}.py", texts[k], "python")

    threads = [threading.Thread(target=check, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {k: _here(texts[k], f"big{k}.py") for k in range(8)}


def test_nesting_past_the_child_s_limit_is_compiled_here() -> None:
    """Attack: a kernel that raised its recursion limit; a text nested deeper than a fresh
    interpreter's default allows (RecursionError there, the child exits 1) still compiles
    here: the answer is this interpreter's (found here, after the child gave none)."""
    text = BIG + "x = " + "not " * 5_000 + "1\n"
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(20_000)
        assert first_error("big.py", text, "python") == _here(text) is None
    finally:
        sys.setrecursionlimit(before)


def _at_depth(frames: int, work: Any) -> Any:
    return work() if frames == 0 else _at_depth(frames - 1, work)


def test_a_text_too_deep_for_this_thread_gets_the_same_answer_as_here() -> None:
    """Attack: a thread deep in its stack (a kernel's callback under many frames) checks a
    huge text nested deeper than the compiler allows there but not at a fresh interpreter's
    top level. Compiled here, ``first_error`` raises RecursionError (as it does for a small
    text); the aside answered None, "compiles", for the same text, and the answer depended
    on the text's size. Fixed in runtime/validation.py: the child gets this thread's
    headroom, as the halves helper does."""
    nest = "x = " + "not " * 1_500 + "1\n"

    def check(text: str) -> Any:
        validation.forget()
        try:
            return first_error("big.py", text, "python")
        except RecursionError:
            return "RecursionError"

    small, huge = _at_depth(700, lambda: (check(nest), check(BIG + nest)))
    assert small == "RecursionError"
    assert huge == small
    assert check(BIG + nest) is None  # at this depth it compiles


def test_at_the_edge_of_this_thread_s_nesting_budget_both_ways_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack: nesting at the edge of what this thread allows (the deepest that compiles,
    and a few more and fewer): the aside answers as the check made here does."""

    def check(text: str, aside: bool) -> Any:
        validation.forget()
        monkeypatch.setattr(validation, "ASIDE_MIN_CHARS", 500_000 if aside else 10**12)
        try:
            return first_error("big.py", text, "python")
        except RecursionError:
            return "RecursionError"

    def nest(n: int) -> str:
        return "x = " + "not " * n + "1\n"

    def edge() -> tuple[int, list[Any], list[Any]]:
        low, high = 10, 3_000
        while high - low > 1:  # the deepest nesting a small text may have here
            mid = (low + high) // 2
            low, high = (mid, high) if check(nest(mid), False) is None else (low, mid)
        got: list[Any] = []
        ref: list[Any] = []
        for n in range(low - 2, low + 3):  # no comprehension: it would be a frame deeper
            got.append(check(BIG + nest(n), True))
            ref.append(check(BIG + nest(n), False))
        return low, got, ref

    low, got, ref = _at_depth(300, edge)
    assert "RecursionError" in ref and None in ref, (low, ref)
    assert got == ref, (low, got, ref)


# -- 2. the model's text held back from the panel, and 3. the redraw before the panel ----------

CHUNKS = 2_000


class _Chatty(ScriptedModel):
    """Streams ``CHUNKS`` pieces of text, then answers as its script says (an empty script:
    a model error, after the text)."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        for n in range(CHUNKS):
            if n % 50 == 0:
                await asyncio.sleep(0)
            if on_text is not None:
                on_text(f"<{n}>")
        return await super().complete(messages, tools, None)


def _thinking_at(view: NotebookSession, kinds: tuple[type, ...]) -> list[tuple[str, str]]:
    """(update, what the thinking line said just before the panel applied it), for each
    update of ``kinds``; the panel's own ``apply`` runs unchanged."""
    assert view.panel is not None
    panel = view.panel
    seen: list[tuple[str, str]] = []
    real = panel.apply

    def apply(update: Any) -> None:
        if isinstance(update, kinds):
            seen.append((type(update).__name__, panel.thinking.value))
        real(update)

    panel.apply = apply  # type: ignore[method-assign]
    return seen


def test_a_session_that_ends_mid_stream_shows_all_its_text_before_the_end(tmp_path: Path) -> None:
    """Attack: the model streams its text and then fails (a model error ends the session):
    the last chunk is on the panel before the panel shows the end."""
    (tmp_path / "a.py").write_text("x = 1\n")
    session = Session("change x", model=_Chatty([]), root=tmp_path)
    view = NotebookSession(session, manual=False)
    seen = _thinking_at(view, (SessionEnded,))

    async def go() -> None:
        view.loop = asyncio.get_running_loop()
        async for update in session.updates():
            view.apply(update)

    asyncio.run(go())
    assert session.end_reason == "error"
    assert [kind for kind, _ in seen] == ["SessionEnded"]
    assert f"&lt;{CHUNKS - 1}&gt;" in seen[0][1], seen[0][1][-200:]


def test_text_held_when_the_view_is_retired_is_shown_once_and_touches_no_other_view(
    tmp_path: Path,
) -> None:
    """Attack: text is held (a flush timer pending) when a new session's view replaces this
    one (``retire``); the timer fires after. The held text reaches the old panel once, the
    new view's panel is untouched, and nothing raises on the loop."""
    (tmp_path / "a.py").write_text("x = 1\n")
    old = NotebookSession(Session("one", model=ScriptedModel([]), root=tmp_path), manual=False)
    new = NotebookSession(Session("two", model=ScriptedModel([]), root=tmp_path), manual=False)
    assert old.panel is not None and new.panel is not None
    shown_old: list[str] = []
    shown_new: list[str] = []
    old.panel.thinking.observe(lambda c: shown_old.append(c["new"]), "value")
    new.panel.thinking.observe(lambda c: shown_new.append(c["new"]), "value")
    errors: list[Any] = []

    async def go() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        old.loop = new.loop = loop
        old.apply(ModelTurn(1))
        old.apply(ModelText("shown "))
        old.apply(ModelText("held"))
        assert old._text_flush is not None
        old.retire()
        new.apply(ModelTurn(1))
        await asyncio.sleep(TEXT_EVERY_S * 3)

    asyncio.run(go())
    assert errors == []
    assert [v for v in shown_old if "held" in v] == [shown_old[-1]]
    assert not any("held" in v or "shown" in v for v in shown_new)


def test_an_update_from_another_thread_shows_the_held_text_first_and_once(tmp_path: Path) -> None:
    """Attack: text held with a timer pending on the view's loop; an update comes from
    another thread (a comm message handled on a subshell's thread) before the timer fires.
    The text is shown before that update, once; the late timer shows nothing."""
    (tmp_path / "a.py").write_text("x = 1\n")
    view = NotebookSession(Session("one", model=ScriptedModel([]), root=tmp_path), manual=False)
    seen = _thinking_at(view, (UserSaid,))
    assert view.panel is not None
    shown: list[str] = []
    view.panel.thinking.observe(lambda c: shown.append(c["new"]), "value")

    async def go() -> None:
        view.loop = asyncio.get_running_loop()
        view.apply(ModelTurn(1))
        view.apply(ModelText("a"))
        view.apply(ModelText("b"))  # held: a timer
        other = threading.Thread(target=view.apply, args=(UserSaid("hello"),))
        other.start()
        other.join()
        count = len(shown)
        await asyncio.sleep(TEXT_EVERY_S * 3)
        assert len(shown) == count, shown[count:]

    asyncio.run(go())
    assert seen and "ab" in seen[0][1]
    assert len([v for v in shown if "ab" in v]) == 1


def test_text_held_when_the_loop_closes_is_shown_by_the_next_update(tmp_path: Path) -> None:
    """Attack: the view's loop closes with a flush pending (the kernel's loop replaced); the
    session's end then arrives from a plain thread: the text is shown before it, and
    cancelling the dead loop's timer raises nothing."""
    (tmp_path / "a.py").write_text("x = 1\n")
    session = Session("one", model=ScriptedModel([]), root=tmp_path)
    view = NotebookSession(session, manual=False)
    seen = _thinking_at(view, (UserSaid,))

    async def go() -> None:
        view.loop = asyncio.get_running_loop()
        view.apply(ModelTurn(1))
        view.apply(ModelText("a"))
        view.apply(ModelText("b"))

    asyncio.run(go())  # the loop is closed, the timer never ran
    assert view.loop is not None and view.loop.is_closed()
    view.apply(UserSaid("hello"))
    assert seen and "ab" in seen[0][1]


def test_each_redraw_happens_while_the_panel_shows_no_card_waiting_for_that_step(
    tmp_path: Path,
) -> None:
    """Attack on the redraw's order with a real panel: when the display is redrawn for a
    step that now waits, the panel's card for it is not yet pending (so the old view, about
    to go, never draws an Approve button)."""
    (tmp_path / "a.py").write_text("x = 1\n")
    model = ScriptedModel(
        [
            reply("", call("replace_string", path="a.py", old_string="1", new_string="2")),
            reply("", call("replace_string", path="a.py", old_string="2", new_string="3")),
            reply("", call("finish", summary="x is 3")),
        ]
    )
    session = Session("change x", model=model, root=tmp_path)
    view = NotebookSession(session, manual=False)
    assert view.panel is not None
    panel = view.panel
    at_redraw: list[tuple[int, bool]] = []

    class Display:
        def update(self, bundle: dict[str, Any], raw: bool = False) -> None:
            pending = session.pending
            if pending is not None:
                card = panel.cards.get(pending.number)
                at_redraw.append((pending.number, card is not None and _pending_card(card)))

    view.trace = Display()

    async def go() -> None:
        async for update in session.updates():
            view.apply(update)
            if isinstance(update, NeedsDecision):
                assert _pending_card(panel.cards[update.step.number])
                session.approve()

    asyncio.run(go())
    assert [number for number, _ in at_redraw] == [1, 2]
    assert not any(pending for _, pending in at_redraw), at_redraw
    assert (tmp_path / "a.py").read_text() == "x = 3\n"


def _pending_card(card: Any) -> bool:
    return bool(getattr(card, "pending", False))


# -- 4. resume and a write approved in part (ApproveHunks) -------------------------------------

FAR = (
    "def add(a, b):\n    return a + b\n"
    + "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(10))
    + "\n\ndef sub(a, b):\n    return a - b\n"
)


def _edits(path: str) -> list[dict[str, str]]:
    return [
        {"path": path, "old_string": "return a + b", "new_string": "return b + a"},
        {"path": path, "old_string": "return a - b", "new_string": "return -(b - a)"},
    ]


def _waiting(root: Path, edits: list[dict[str, str]], tool: str = "multiedit") -> Session:
    model = ScriptedModel([reply("", call(tool, edits=edits))])
    return until_decision(Session("two", model=model, root=root))


def _drive_commit(session: Session) -> None:
    async def commit_only() -> None:
        async for update in session.updates():
            if not isinstance(update, NeedsDecision):
                return

    asyncio.run(commit_only())


def _cut_after_last(log: Path, kind: str) -> None:
    """Cut the log after its last event of ``kind``: what a crash then leaves."""
    lines = log.read_text().splitlines(keepends=True)
    kept = max(i for i, line in enumerate(lines) if json.loads(line)["type"] == kind)
    log.write_text("".join(lines[: kept + 1]))


def _landed_then_crashed(session: Session, hunks: list[int]) -> Path:
    """ApproveHunks(``hunks``), the commit lands, the process dies before logging it."""
    session.decide(ApproveHunks(hunks, "only some"))
    _drive_commit(session)
    session.log.close()
    assert session.log_path is not None
    _cut_after_last(session.log_path, "user_decision")
    return session.log_path


class _Killed(BaseException):
    """The process dying at this point."""


def _dies_before_commit(session: Session, hunks: list[int]) -> Path:
    """ApproveHunks(``hunks``) logged, then the process dies before anything is written."""
    session.decide(ApproveHunks(hunks, "only some"))

    def commit(proposal: Any, **kwargs: Any) -> Any:
        raise _Killed

    session.runtime.commit = commit  # type: ignore[method-assign]
    with pytest.raises(_Killed):
        _drive_commit(session)
    session.log.close()
    assert session.log_path is not None
    return session.log_path


@pytest.mark.parametrize(
    "name",
    [
        "pkg/my file.py",
        "pkg/é.py",
        'pkg/q"uote.py',
        "pkg/tab\tname.py",
        "pkg/new\nline.py",
        "pkg/a, b.py",
        "a/b/c.py",
    ],
)
@pytest.mark.parametrize("ends", ["lf", "crlf", "no-final-newline"])
def test_a_partial_commit_of_an_oddly_named_or_ended_file_is_recovered_and_rewound(
    ws: Path, name: str, ends: str
) -> None:
    """Attack: a file whose name the diff quotes (space, non-ASCII, a quote, a tab, a
    newline, a comma, an "a/" folder), with CRLF line ends or none at its end;
    ApproveHunks([1]) (the hunk at the end of the file), killed once the commit landed.
    Resume recognises it, its diff holds the accepted hunk only, and a rewind to 0 restores
    the bytes."""
    text = FAR.replace("\n", "\r\n") if ends == "crlf" else FAR
    if ends == "no-final-newline":
        text = text.rstrip("\n")
    (ws / name).parent.mkdir(parents=True, exist_ok=True)
    (ws / name).write_bytes(text.encode("utf-8"))
    before = snapshot(ws)
    log = _landed_then_crashed(_waiting(ws, _edits(name)), [1])
    assert "-(b - a)" in (ws / name).read_text() and "b + a" not in (ws / name).read_text()
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert resumed.queue == [], "recognised as landed"
    step = resumed.steps[-1]
    assert "-(b - a)" in step.proposal.diff and "b + a" not in step.proposal.diff
    assert step.observation is not None and "hunk 1 in" in step.observation.output
    commits = [e for e in resumed.log.events if isinstance(e, ev.Committed)]
    assert len(commits) == 1 and commits[0].commit_id and commits[0].paths == [name]
    resumed.rewind(0)
    assert snapshot(ws) == before
    resumed.log.close()


def test_two_partial_approvals_of_one_call_across_resumes_the_last_one_counts(ws: Path) -> None:
    """Attack: ApproveHunks([0]) decided, killed before its commit; resumed, the write waits
    (stale); a person now approves hunk 2 only, that commit lands, killed again before it
    is logged. The second resume recognises the second decision's commit (hunk 2, not
    hunk 1), and a rewind to 0 restores the file."""
    far = ws / "pkg" / "far.py"
    far.write_text(FAR)
    before = snapshot(ws)
    log = _dies_before_commit(_waiting(ws, _edits("pkg/far.py")), [0])
    assert snapshot(ws) == before
    once = until_decision(Session.resume(log, model=ScriptedModel([])))
    assert once.pending is not None and once.pending.stale
    log = _landed_then_crashed(once, [1])
    assert "-(b - a)" in far.read_text() and "return a + b" in far.read_text()
    twice = Session.resume(log, model=ScriptedModel([]))
    assert twice.queue == []
    step = twice.steps[-1]
    assert "-(b - a)" in step.proposal.diff and "b + a" not in step.proposal.diff
    assert step.observation is not None and "hunk 1 in pkg/far.py" in step.observation.output
    assert sum(isinstance(e, ev.Committed) and e.ok for e in twice.log.events) == 1
    twice.rewind(0)
    assert snapshot(ws) == before
    twice.log.close()


def _forge_hunks(log: Path, hunks: list[int] | None) -> None:
    """Edit the log's last ``user_decision`` to name ``hunks`` (a hand-edited log)."""
    lines = log.read_text().splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if json.loads(line)["type"] == "user_decision")
    event = json.loads(lines[at])
    event["hunks"] = hunks
    lines[at] = json.dumps(event) + "\n"
    log.write_text("".join(lines))


@pytest.mark.parametrize("forged", [[7], [0, 0], [-1], None, []])
def test_a_forged_hunk_list_never_names_a_commit_a_rewind_cannot_undo(
    ws: Path, forged: list[int] | None
) -> None:
    """Attack: the log's decision is edited to name hunks out of range, twice, negative, or
    none (the commit of hunk 1 landed). Resume must not crash; whatever it records, a rewind to
    0 restores the file or refuses: it never reports success with the hunk in place."""
    far = ws / "pkg" / "far.py"
    far.write_text(FAR)
    before = snapshot(ws)
    log = _landed_then_crashed(_waiting(ws, _edits("pkg/far.py")), [0])
    _forge_hunks(log, forged)
    resumed = Session.resume(log, model=ScriptedModel([]))
    try:
        resumed.rewind(0)
    except Exception:
        assert "return b + a" in far.read_text()  # refused: said so, nothing claimed
    else:
        assert snapshot(ws) == before
    resumed.log.close()


@pytest.mark.parametrize("hunks", [[0], None], ids=["in-part", "whole"])
def test_another_session_s_commit_of_the_same_bytes_is_not_taken_for_this_one(
    ws: Path, hunks: list[int] | None
) -> None:
    """Attack: session A approves a write (hunk 1 of two, or all of a one-edit write) and
    dies before its commit. Then session B, in the same folder, makes exactly that change
    (same tool, same file) and commits it. Resumed, A must not take B's commit for its own
    (its own did not land): a rewind of A to 0 must leave B's work in place."""
    far = ws / "pkg" / "far.py"
    far.write_text(FAR)
    edits = _edits("pkg/far.py") if hunks is not None else _edits("pkg/far.py")[:1]
    session = _waiting(ws, edits)
    if hunks is not None:
        log = _dies_before_commit(session, hunks)
    else:
        session.approve()

        def commit(proposal: Any, **kwargs: Any) -> Any:
            raise _Killed

        session.runtime.commit = commit  # type: ignore[method-assign]
        with pytest.raises(_Killed):
            _drive_commit(session)
        session.log.close()
        assert session.log_path is not None
        log = session.log_path
    other = _waiting(ws, _edits("pkg/far.py")[:1])
    other.approve()
    _drive_commit(other)
    other.log.close()
    assert "return b + a" in far.read_text()
    resumed = Session.resume(log, model=ScriptedModel([]))
    try:
        resumed.rewind(0)
    except Exception:
        pass  # refused: B's work stays
    finally:
        resumed.log.close()
    assert "return b + a" in far.read_text(), "A's rewind undid B's commit"


def test_the_clock_stepped_back_during_a_partial_commit(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: the wall clock steps back 30 s (NTP) between the decision and its commit,
    which lands; the process dies before logging it. The commit then looks older than the
    decision. Whatever resume makes of it, a rewind to 0 must restore the file or refuse:
    never report success while the approved hunk stays."""
    far = ws / "pkg" / "far.py"
    far.write_text(FAR)
    before = snapshot(ws)
    session = _waiting(ws, _edits("pkg/far.py"))
    real_commit = session.runtime.commit
    real_time = time.time

    def commit(proposal: Any, **kwargs: Any) -> Any:
        with monkeypatch.context() as clock:
            clock.setattr(time, "time", lambda: real_time() - 30)
            return real_commit(proposal, **kwargs)

    session.runtime.commit = commit  # type: ignore[method-assign]
    log = _landed_then_crashed(session, [0])
    assert "return b + a" in far.read_text()
    resumed = Session.resume(log, model=ScriptedModel([]))
    recognised = resumed.queue == []
    try:
        resumed.rewind(0)
    except Exception as exc:
        assert not recognised and "return b + a" in far.read_text(), exc
    else:
        assert snapshot(ws) == before, f"rewound with the hunk in place ({recognised=})"
    resumed.log.close()


def test_under_a_tracer_the_huge_check_is_made_here_and_the_tracer_stays() -> None:
    """Attack: a debugger's tracer on the checking thread. The frames left cannot be counted
    without a RecursionError inside the tracer, which would switch it off: the text is
    compiled here (as runtime/halves.py does), with the same answer, the tracer still set."""
    calls: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        calls.append(event)
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        answer = first_error("big.py", BROKEN, "python")
        still = sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
    assert still
    assert answer == _here(BROKEN)
    assert calls


@pytest.mark.parametrize("forged", [None, []], ids=["no-hunks", "empty-hunks"])
def test_a_partial_decision_whose_hunks_are_lost_never_commits_the_whole_write(
    ws: Path, forged: list[int] | None
) -> None:
    """Attack: a log whose ``approve_hunks`` decision lost its hunk list (hand-edited, or
    written by another tool), the commit not landed. Resumed under policy="auto", the write
    must not be committed whole: the user approved only part of it."""
    far = ws / "pkg" / "far.py"
    far.write_text(FAR)
    before = snapshot(ws)
    log = _dies_before_commit(_waiting(ws, _edits("pkg/far.py")), [0])
    _forge_hunks(log, forged)
    later = ScriptedModel([reply("", call("finish", summary="x"))] * 3)
    resumed = until_decision(Session.resume(log, model=later, policy="auto"))
    try:
        assert snapshot(ws) == before
        assert resumed.pending is not None and resumed.pending.stale
    finally:
        resumed.log.close()


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param("x = " + "-" * 20_000 + "1\n", id="parser-memory-error"),
        pytest.param("x = " + "not " * 5_000 + "1\n", id="compiler-recursion-error"),
    ],
)
def test_a_text_that_makes_the_child_crash_gets_what_the_check_here_gets(tail: str) -> None:
    """Attack: a text whose compile raises MemoryError or RecursionError (the child exits
    with a traceback, status 1): the check falls back to here and raises what it raised
    before the aside existed; nothing is cached."""
    text = BIG + tail
    with pytest.raises((MemoryError, RecursionError)) as here:
        compile(text, "big.py", "exec", dont_inherit=True)
    with pytest.raises(type(here.value)):
        first_error("big.py", text, "python")
    with pytest.raises(type(here.value)):
        first_error("big.py", text, "python")


def test_no_digit_limit_here_means_none_there() -> None:
    """Attack: this interpreter's digit limit switched off (0): a 10,000-digit literal
    compiles there too."""
    text = BIG + "x = " + "7" * 10_000 + "\n"
    before = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)
        assert first_error("big.py", text, "python") is None
    finally:
        sys.set_int_max_str_digits(before)
    validation.forget()
    assert first_error("big.py", text, "python") == _here(text) is not None


def test_two_calls_of_one_reply_approved_in_part_the_second_landed_unlogged(ws: Path) -> None:
    """Attack: one reply, two writes (two files, two hunks each); hunk 1 of the first approved
    and committed (logged), hunk 2 of the second approved and committed, then the process
    dies before that commit is logged. Resume records the second once, by its own commit
    (not the first's), and a rewind to 0 restores both files."""
    (ws / "pkg" / "one.py").write_text(FAR)
    (ws / "pkg" / "two.py").write_text(FAR)
    before = snapshot(ws)
    model = ScriptedModel(
        [
            reply(
                "",
                call("multiedit", edits=_edits("pkg/one.py")),
                call("multiedit", edits=_edits("pkg/two.py")),
            )
        ]
    )
    session = until_decision(Session("two", model=model, root=ws))
    session.decide(ApproveHunks([0], "first only"))
    until_decision(session)
    assert session.pending is not None and session.pending.number == 2
    log = _landed_then_crashed(session, [1])
    assert "-(b - a)" in (ws / "pkg" / "two.py").read_text()
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert resumed.queue == []
    commits = [e for e in resumed.log.events if isinstance(e, ev.Committed) and e.ok]
    assert [c.paths for c in commits] == [["pkg/one.py"], ["pkg/two.py"]]
    assert len({c.commit_id for c in commits}) == 2 and all(c.commit_id for c in commits)
    resumed.rewind(0)
    assert snapshot(ws) == before
    resumed.log.close()


OPTIMIZED_KERNEL = """
import sys
from grinta_jupyter.runtime import validation
BIG = "".join(f"def f{i}(x):\\n    return x + {i}\\n\\n\\n" for i in range(16_000))
text = sys.argv[1] + BIG + "assert [x async for x in y]\\n"
assert len(text) >= validation.ASIDE_MIN_CHARS and sys.flags.optimize
try:
    compile(text, "big.py", "exec", dont_inherit=True)
    here = None
except SyntaxError as exc:
    here = [exc.lineno or 1, exc.msg]
got = validation.first_error("big.py", text, "python")
print(repr((here, list(got) if got else None)))
"""


@pytest.mark.parametrize("head", ["", "# coding: utf-8\n"], ids=["text", "declares-coding"])
@pytest.mark.parametrize("optimize", ["-O", "-OO"])
def test_a_kernel_run_with_optimizations_gets_its_own_answer(
    tmp_path: Path, optimize: str, head: str
) -> None:
    """Attack: a kernel started with ``python -O`` (or PYTHONOPTIMIZE, which -I makes the
    child ignore). Optimized, ``compile`` skips the code of an ``assert``, and with it the
    errors only code generation finds (an async comprehension outside an async function):
    here the text compiles. The child, not optimized, called it a syntax error, so an edit
    of a huge file was refused that the same edit of a small one is not. Fixed in
    runtime/validation.py: the child is given this interpreter's optimization level."""
    script = tmp_path / "kernel.py"
    script.write_text(OPTIMIZED_KERNEL)
    done = subprocess.run(
        [sys.executable, optimize, str(script), head],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    here, got = eval(done.stdout)
    assert here is None
    assert got == here


def test_a_partial_commit_to_a_notebook_is_recovered_and_rewound(ws: Path) -> None:
    """Attack: a notebook (its diff is of the cells' text, not of the file's JSON), two
    hunks in two cells; ApproveHunks([0]), killed once the commit landed. Resume recognises
    it by the notebook file's bytes, and a rewind to 0 restores them."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("a = 1 + 1"),
        *[nbformat.v4.new_markdown_cell(f"m{i}") for i in range(8)],
        nbformat.v4.new_code_cell("b = 2 - 2"),
    ]
    nbformat.write(notebook, str(ws / "n.ipynb"))
    before = snapshot(ws)
    edits = [
        {"path": "n.ipynb", "old_string": "1 + 1", "new_string": "1 + 2"},
        {"path": "n.ipynb", "old_string": "2 - 2", "new_string": "2 - 3"},
    ]
    log = _landed_then_crashed(_waiting(ws, edits), [0])
    text = (ws / "n.ipynb").read_text()
    assert "1 + 2" in text and "2 - 3" not in text
    resumed = Session.resume(log, model=ScriptedModel([]))
    assert resumed.queue == []
    assert "1 + 2" in resumed.steps[-1].proposal.diff
    assert "2 - 3" not in resumed.steps[-1].proposal.diff
    resumed.rewind(0)
    assert snapshot(ws) == before
    resumed.log.close()
