"""Attack cases against the give-way of a running re-index (``code/giveway.py``,
``_Reindexer.pause``/``settle``, ``SymbolIndex._refresh_paths``), by a helper. Three found a
bug: a paused re-index merged a text a read had already seen replaced by the entry's own
bytes (a revert), since that read only stamped the entry anew; a fork inside a call is
covered in tests/test_giveway.py."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code import edits, giveway, symbols
from grinta_jupyter.code.index import SymbolIndex
from grinta_jupyter.tools import facade
from grinta_jupyter.tools.facade import _REINDEXER
from tests.test_giveway import (
    ONE,
    _in_thread,
    _rename,
    built_workspace,
    paused_after_a_rename,
)

REINDEX_THREAD = "grinta-index-refresh"


class BeforeMerge:
    """Stops the re-index thread after its parse (``SymbolIndex._run``, outside the lock) and
    before its merge, until ``go`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        original = SymbolIndex._run

        def run(index: SymbolIndex, jobs: list) -> list:  # type: ignore[type-arg]
            results = original(index, jobs)
            if threading.current_thread().name == REINDEX_THREAD and not self.reached.is_set():
                self.reached.set()
                assert self.go.wait(30), "never let go"
            return results

        monkeypatch.setattr(SymbolIndex, "_run", run)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Runtime, Path]]:
    yield from built_workspace(tmp_path)


def _whole(rt: Runtime, path: str) -> list[str]:
    return [s.qualname for s in rt.symbols.symbols() if s.path == path]


def _assert_index_equals_disk(rt: Runtime, root: Path) -> None:
    index = rt.symbols
    on_disk = {
        p: symbols.extract_symbols(p, (root / p).read_bytes())
        for p in index.paths()  # (a full refresh: a whole-workspace read)
    }
    listed = sorted(p.name for p in root.iterdir() if p.suffix in (".py", ".ipynb"))
    assert sorted(on_disk) == listed
    for p, expected in on_disk.items():
        assert [s for s in index.symbols() if s.path == p] == expected, p


# --- stale entries -------------------------------------------------------------------


def test_a_revert_read_while_the_reindex_waits_is_not_overwritten(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-index parsed the committed text; meanwhile the file is reverted (git checkout)
    and a whole-workspace read sees it: same digest as the entry before, so that read only
    updates the old entry's stamp IN PLACE (same object). The re-index's identity check
    then passes, and it merges the committed (now gone) text; the whole-workspace answer
    keeps it, as the watch has no event left for the file."""
    rt, root = workspace
    gate = BeforeMerge(monkeypatch)
    _rename(rt, "first", "renamed")
    assert gate.reached.wait(30)
    (root / "mod.py").write_text(ONE)  # reverted from outside
    assert _whole(rt, "mod.py") == ["first", "second"]
    gate.go.set()
    _REINDEXER.wait()
    assert _whole(rt, "mod.py") == ["first", "second"]
    assert rt.symbols.symbols() == symbols.extract_symbols("mod.py", ONE.encode())


def test_a_revert_seen_by_a_search_while_the_reindex_waits(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same as above, at the pause point after the definitions query, seen via search."""
    rt, root = workspace
    gate = paused_after_a_rename(rt, monkeypatch, nth=3)
    (root / "mod.py").write_text(ONE)
    assert [s.qualname for s in rt.symbols.search("first")] == ["first"]
    gate.go.set()
    _REINDEXER.wait()
    assert [s.qualname for s in rt.symbols.search("renamed")] == []
    assert [s.qualname for s in rt.symbols.search("first")][:1] == ["first"]


def test_a_new_file_deleted_while_the_reindex_waits_is_not_served(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    gate = BeforeMerge(monkeypatch)
    assert rt.call("create", {"path": "new.py", "content": "def fresh():\n    pass\n"}).ok
    assert gate.reached.wait(30)
    (root / "new.py").unlink()
    assert rt.symbols.paths() == ["mod.py"]
    gate.go.set()
    _REINDEXER.wait()
    assert rt.symbols.paths() == ["mod.py"]
    assert [s.qualname for s in rt.symbols.symbols()] == ["first", "second"]
    assert rt.symbols.resolve("fresh").matches == []
    assert rt.symbols.outline("new.py") == []


def test_a_file_deleted_before_its_read_while_paused(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    gate = paused_after_a_rename(rt, monkeypatch, nth=1)  # before the file is read
    (root / "mod.py").unlink()
    gate.go.set()
    _REINDEXER.wait()
    assert rt.symbols.paths() == []
    assert rt.symbols.symbols() == []


def test_an_outside_write_between_stat_and_read_ends_equal_to_disk(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    gate = paused_after_a_rename(rt, monkeypatch, nth=1)
    (root / "mod.py").write_text(ONE.replace("first", "outside"))
    gate.go.set()
    _REINDEXER.wait()
    _assert_index_equals_disk(rt, root)


def test_a_notebook_written_while_its_reindex_waits(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace

    def notebook(name: str) -> str:
        return json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "id": "a",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                        "source": [f"def {name}():\n", "    pass\n"],
                    },
                    {
                        "cell_type": "code",
                        "id": "b",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                        "source": ["class K:\n", "    pass\n"],
                    },
                ],
                "metadata": {
                    "kernelspec": {
                        "name": "python3",
                        "language": "python",
                        "display_name": "Python 3",
                    },
                    "language_info": {"name": "python"},
                },
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        )

    (root / "nb.ipynb").write_text(notebook("cellfn"))
    assert [s.qualname for s in rt.symbols.outline("nb.ipynb")] == ["cellfn", "K"]
    gate = BeforeMerge(monkeypatch)
    call = {"path": "nb.ipynb", "old_string": "def cellfn(", "new_string": "def renamed("}
    observation = rt.call("replace_string", call)
    assert observation.ok, observation.error  # a notebook takes a plain text edit
    assert gate.reached.wait(30)
    (root / "nb.ipynb").write_text(notebook("cellfn"))  # reverted
    assert [s.qualname for s in rt.symbols.symbols() if s.path == "nb.ipynb"] == ["cellfn", "K"]
    gate.go.set()
    _REINDEXER.wait()
    assert [s.qualname for s in rt.symbols.symbols() if s.path == "nb.ipynb"] == ["cellfn", "K"]


def test_refresh_counts_a_parse(workspace: tuple[Runtime, Path]) -> None:
    rt, root = workspace
    (root / "mod.py").write_text(ONE.replace("first", "other"))
    assert rt.symbols.refresh(["mod.py"]) == 1
    assert rt.symbols.refresh(["mod.py"]) in (0, 1)  # racy: may parse again
    os.utime(root / "mod.py", ns=(10**18, 10**18))  # touched, same text
    assert rt.symbols.refresh(["mod.py"]) == 0
    assert [s.qualname for s in rt.symbols.outline("mod.py")] == ["other", "second"]


# --- locks at pause points --------------------------------------------------------------


def test_no_pause_point_is_reached_holding_a_lock(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    index = rt.symbols
    held: list[str] = []
    seen: list[int] = []
    original = facade._Reindexer.pause

    def pause(reindexer: facade._Reindexer) -> None:
        seen.append(1)
        if index._lock._is_owned():  # type: ignore[attr-defined]
            held.append("index")
        if edits._LAST_TREE._lock.locked():
            held.append("tree cache")
        if reindexer._changed._is_owned():  # type: ignore[attr-defined]
            held.append("reindexer")
        original(reindexer)

    monkeypatch.setattr(facade._Reindexer, "pause", pause)
    (root / "other.py").write_text("class A:\n    def m(self):\n        pass\n")
    assert index.outline("other.py")
    _rename(rt, "first", "renamed")
    assert rt.call("create", {"path": "new.py", "content": "def fresh():\n    pass\n"}).ok
    call = {"path": "other.py", "old_string": "def m(", "new_string": "def n("}
    assert rt.call("replace_string", call).ok
    # A whole-workspace read and a search in between, from this thread.
    rt.symbols.symbols()
    rt.symbols.search("fresh")
    rt.symbols.resolve("renamed")
    _REINDEXER.wait()
    assert seen, "no pause point reached"
    assert held == []
    _assert_index_equals_disk(rt, root)


# --- settle / foreground bookkeeping ----------------------------------------------------


def test_nested_foreground_and_settle_leave_no_hold(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    gate = paused_after_a_rename(rt, monkeypatch, nth=1)
    with _REINDEXER.foreground(), _REINDEXER.foreground():
        gate.go.set()
        started = time.monotonic()
        _REINDEXER.settle()
        assert time.monotonic() - started < 2
        _REINDEXER.settle()  # nothing left
        assert _REINDEXER._busy == 2
    assert _REINDEXER._busy == 0
    assert getattr(_REINDEXER._mine, "depth", 0) == 0


def test_settle_in_a_thread_without_foreground_is_bounded(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    monkeypatch.setattr(facade._Reindexer, "YIELD_S", 0.3)
    gate = paused_after_a_rename(rt, monkeypatch, nth=1)
    with _REINDEXER.foreground():  # another thread's call holds the job
        gate.go.set()
        done: list[float] = []

        def settle() -> None:
            t = time.monotonic()
            _REINDEXER.settle()
            done.append(time.monotonic() - t)

        other = threading.Thread(target=settle, daemon=True)
        other.start()
        other.join(5)
        assert done and done[0] < 1.5
        assert _REINDEXER._busy == 1
    _REINDEXER.wait()
    assert _REINDEXER._busy == 0


def test_a_job_that_fails_while_paused_ends_and_leaves_no_hook() -> None:
    hooks: list[object] = []
    paused = threading.Event()

    def failing() -> None:
        giveway.pause()
        paused.set()
        raise RuntimeError("boom")

    def probe() -> None:
        hooks.append(getattr(giveway._local, "hook", None))

    with _REINDEXER.foreground():
        _REINDEXER.submit(failing)
    _REINDEXER.submit(probe, soon=True)
    waiter = threading.Thread(target=_REINDEXER.wait, daemon=True)
    waiter.start()
    waiter.join(5)
    assert not waiter.is_alive(), "wait hung after a failing job"
    assert paused.is_set()
    assert hooks == [None]


def test_a_job_submitting_from_the_reindex_thread_and_settling_does_not_hang() -> None:
    order: list[str] = []

    def inner() -> None:
        order.append("inner")

    def outer() -> None:
        with _REINDEXER.foreground():  # a job making a tool call of its own
            _REINDEXER.submit(inner)
            _REINDEXER.settle()  # its own thread: returns
            giveway.pause()  # waits on its own hold, at most YIELD_S
        order.append("outer")

    _REINDEXER.submit(outer)
    waiter = threading.Thread(target=_REINDEXER.wait, daemon=True)
    waiter.start()
    waiter.join(5)
    assert not waiter.is_alive()
    assert order == ["outer", "inner"]
    assert _REINDEXER._busy == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_fork_while_a_job_is_paused_leaves_the_child_able_to_reindex(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    gate = paused_after_a_rename(rt, monkeypatch, nth=1)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            done = threading.Event()
            _REINDEXER.submit(done.set)
            t = threading.Thread(target=_REINDEXER.wait, daemon=True)
            t.start()
            t.join(5)
            code = 0 if done.is_set() and not t.is_alive() else 2
        finally:
            os._exit(code)
    os.close(write)
    os.close(read)
    gate.go.set()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    _REINDEXER.wait()
    _assert_index_equals_disk(rt, root)


# --- two runtimes, two threads ------------------------------------------------------------


def test_two_runtimes_in_two_threads_end_equal_to_disk(tmp_path: Path) -> None:
    runtimes = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        (root / "mod.py").write_text(ONE)
        rt = Runtime(root)
        assert rt.call("read", {"path": "mod.py", "outline": True}).ok
        runtimes.append((rt, root))
    _REINDEXER.wait()
    errors: list[BaseException] = []

    def work(rt: Runtime, tag: str) -> None:
        try:
            name = "first"
            for i in range(15):
                new = f"{tag}{i}"
                _rename(rt, name, new)
                name = new
                assert rt.call("read", {"path": "mod.py", "outline": True}).ok
                assert [s.qualname for s in rt.symbols.outline("mod.py")] == [new, "second"]
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(rt, tag), daemon=True)
        for (rt, _), tag in zip(runtimes, ("a", "b"), strict=True)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "hung"
    assert not errors, errors
    assert time.monotonic() - started < 30
    _REINDEXER.wait()
    for rt, root in runtimes:
        _assert_index_equals_disk(rt, root)
    assert _REINDEXER._busy == 0


def test_a_reader_is_not_held_by_a_paused_reindex_of_another_file(
    workspace: tuple[Runtime, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, root = workspace
    monkeypatch.setattr(facade._Reindexer, "YIELD_S", 5.0)
    gate = paused_after_a_rename(rt, monkeypatch, nth=2)
    with _REINDEXER.foreground():
        gate.go.set()
        time.sleep(0.05)
        started = time.monotonic()
        reader, answers = _in_thread(lambda: (rt.symbols.symbols(), rt.symbols.search("sec")))
        reader.join(10)
        assert answers
        assert time.monotonic() - started < 1.0, "a reader waited on the paused re-index"
    _REINDEXER.wait()
    _assert_index_equals_disk(rt, root)
