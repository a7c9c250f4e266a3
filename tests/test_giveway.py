"""A re-index already running gives way to a tool call (``code/giveway.py``).

- At its pause points (before a file is read, after its parse, after the definitions query)
  a running re-index waits while a ``foreground`` call is under way, holding no lock of the
  index: a call that reads the index meanwhile is not held up by it.
- The wait is bounded by the same ``YIELD_S`` hold as a re-index not yet started.
- A re-index parses outside the index's lock, so a newer entry merged meanwhile (a read
  that parsed the file after an outside write) is kept, never overwritten by the older one.
- A call about to read the index (``settle``) lets a paused re-index finish first instead of
  parsing the same text again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code import edits, giveway, symbols
from grinta_jupyter.tools import facade
from grinta_jupyter.tools.facade import _REINDEXER

ONE = "def first():\n    return 1\n\n\ndef second():\n    return 2\n"


class Gate:
    """Stops the re-index at its ``nth`` pause point (``reached``) until ``go`` is set, then
    lets it pause as it would (the original ``_Reindexer.pause``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, nth: int = 1) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        self.calls = 0
        self.resumed_at: float | None = None
        original = facade._Reindexer.pause

        def pause(reindexer: facade._Reindexer) -> None:
            self.calls += 1
            if self.calls == nth:
                self.reached.set()
                assert self.go.wait(30), "the test never let the re-index go on"
            original(reindexer)
            if self.calls == nth:
                self.resumed_at = time.monotonic()

        monkeypatch.setattr(facade._Reindexer, "pause", pause)


def built_workspace(tmp_path: Path) -> Iterator[tuple[Runtime, Path]]:
    """A Runtime on a folder holding mod.py (``ONE``), its index built, no job left."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "mod.py").write_text(ONE)
    rt = Runtime(root)
    assert rt.call("read", {"path": "mod.py", "outline": True}).ok  # the index is built
    _REINDEXER.wait()
    yield rt, root
    _REINDEXER.wait()


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Runtime, Path]]:
    yield from built_workspace(tmp_path)


def _names(rt: Runtime) -> list[str]:
    return [s.qualname for s in rt.symbols.symbols("mod.py")]


def _rename(rt: Runtime, old: str, new: str, path: str = "mod.py") -> None:
    call = {"path": path, "old_string": f"def {old}(", "new_string": f"def {new}("}
    assert rt.call("replace_string", call).ok


def paused_after_a_rename(rt: Runtime, monkeypatch: pytest.MonkeyPatch, nth: int = 1) -> Gate:
    """Commit ``first`` -> ``renamed`` in mod.py; its re-index is stopped at its ``nth`` pause
    point (the gate's ``go`` lets it on)."""
    gate = Gate(monkeypatch, nth)
    _rename(rt, "first", "renamed")
    assert gate.reached.wait(30), "the re-index reached no pause point"
    return gate


def _in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    return thread, done


def test_a_running_reindex_waits_at_its_pause_point_while_a_call_is_under_way(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    gate = paused_after_a_rename(rt, monkeypatch)
    with _REINDEXER.foreground():
        gate.go.set()
        time.sleep(0.2)
        assert gate.resumed_at is None, "the re-index went on during the call"
        # It holds no lock of the index: a read of the index meanwhile is not held up
        # (it parses the file itself, as every read brings itself up to date).
        reader, names = _in_thread(lambda: _names(rt))
        reader.join(10)
        assert names == [["renamed", "second"]]
        assert gate.resumed_at is None
        left = time.monotonic()
    _REINDEXER.wait()
    assert gate.resumed_at is not None and gate.resumed_at >= left
    assert _names(rt) == ["renamed", "second"]


def test_a_call_that_lasts_holds_a_running_reindex_only_yield_s(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    monkeypatch.setattr(facade._Reindexer, "YIELD_S", 0.3)
    gate = paused_after_a_rename(rt, monkeypatch)
    with _REINDEXER.foreground():
        entered = time.monotonic()
        gate.go.set()
        waiter, done = _in_thread(_REINDEXER.wait)
        waiter.join(10)  # the whole re-index ends, though the call is still under way
        assert done == [None], "the re-index was held past YIELD_S"
        assert gate.resumed_at is not None and gate.resumed_at - entered >= 0.25
    assert _names(rt) == ["renamed", "second"]


def test_an_entry_parsed_while_the_reindex_waited_is_not_overwritten_by_its_older_one(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    # The third pause point: after the definitions query of the committed text. The re-index
    # has read and parsed it (with "renamed") and not yet merged what it found.
    gate = paused_after_a_rename(rt, monkeypatch, nth=3)
    # A write from outside, then a read of the whole workspace that parses it and merges
    # its entry (and takes the tree watch's events of it).
    (root / "mod.py").write_text(ONE.replace("first", "outside"))
    assert [s.qualname for s in rt.symbols.symbols()] == ["outside", "second"]
    gate.go.set()
    _REINDEXER.wait()
    # A question about the whole workspace looks only at what the tree watch saw since the
    # read: nothing. It must not get the re-index's older entry.
    assert [s.qualname for s in rt.symbols.symbols()] == ["outside", "second"]
    assert _names(rt) == ["outside", "second"]
    assert rt.symbols.symbols("mod.py") == symbols.extract_symbols(
        "mod.py", (root / "mod.py").read_bytes()
    )


def test_a_call_about_to_read_the_index_lets_a_paused_reindex_finish_first(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    monkeypatch.setattr(facade._Reindexer, "YIELD_S", 5.0)
    gate = paused_after_a_rename(rt, monkeypatch)
    with _REINDEXER.foreground():
        gate.go.set()
        time.sleep(0.1)
        assert gate.resumed_at is None  # paused: this thread's call is under way
        started = time.monotonic()
        _REINDEXER.settle()
        # Not the 5 s hold: this thread's own call stopped holding it while it settled.
        assert time.monotonic() - started < 2.5
        assert gate.resumed_at is not None
    assert _names(rt) == ["renamed", "second"]


def test_an_edit_of_symbols_right_after_a_commit_takes_the_reindexs_location(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    located: list[str] = []
    original = symbols.locate_nodes

    def counted(path: str, source: bytes, *args: object, **kwargs: object) -> object:
        located.append(threading.current_thread().name)
        return original(path, source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(symbols, "locate_nodes", counted)
    monkeypatch.setattr(edits, "locate_nodes", counted)
    gate = paused_after_a_rename(rt, monkeypatch)
    located.clear()
    edit = {
        "symbol": "mod.py::second",
        "action": "replace",
        "new_source": "def second():\n    return 3\n",
    }
    proposal_thread, proposals = _in_thread(lambda: rt.propose("edit_symbols", {"edits": [edit]}))
    time.sleep(0.1)
    gate.go.set()
    proposal_thread.join(30)
    assert proposals and proposals[0].ok, proposals  # type: ignore[attr-defined]
    # The text was located once, by the re-index; the edit took that location.
    assert located == ["grinta-index-refresh"], located


def test_pause_does_nothing_outside_a_pausing_block() -> None:
    calls: list[int] = []
    giveway.pause()
    with giveway.pausing(lambda: calls.append(1)):
        giveway.pause()
        other = threading.Thread(target=giveway.pause)
        other.start()
        other.join()
    giveway.pause()
    assert calls == [1]


def test_a_child_forked_inside_a_call_leaves_it_and_runs_its_own_jobs() -> None:
    pid = None
    try:
        with _REINDEXER.foreground():
            pid = os.fork()
    except BaseException:
        if pid == 0:
            os._exit(2)  # leaving the call failed in the child
        raise
    if pid == 0:
        try:
            ran: list[int] = []
            _REINDEXER.submit(lambda: ran.append(1))
            _REINDEXER.settle()
            _REINDEXER.wait()
            os._exit(0 if ran == [1] else 3)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
