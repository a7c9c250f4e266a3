"""More swaps of a path for a link while the tools read through it (after 5ca0bb0).

5ca0bb0 made ``read_regular(..., within=root)`` refuse a *file* opened outside the
workspace. These tests look for what is left of the same class: folder listings and
search's walk (names of an outside folder), the symbol tools, notebooks, the edit tools,
a swapped final component, a deeper folder, a root given through a link, a swap into
``.git`` (inside the root, but never to be read), the rules files, metadata in errors,
commits, and hangs. Real files, a real thread swapping as fast as it can; no mocks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.tools.base import Settings
from tests.test_attacks_read_race import swapping

SECRET = "OUTSIDE-SECRET-7f3a"
NAME = "OUTSIDE-NAME-7f3a"  # a file name only the outside folder has
MARK = "7f3a"  # in every outside content and name, in nothing inside
GIT_SECRET = "GIT-CREDENTIAL-91bc"

PY_INSIDE = "VALUE = 1\n\n\ndef inside_fn():\n    return 1\n"
PY_OUTSIDE = (
    "VALUE = 1\n\n\ndef inside_fn():\n"
    f"    return '{SECRET}'\n\n\ndef leak_7f3a():\n    return '{SECRET}'\n"
)


def notebook(source: str) -> str:
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "id": "c1",
                    "metadata": {},
                    "outputs": [],
                    "source": source,
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    d = ws / "d"
    d.mkdir(parents=True)
    (d / "f.txt").write_text("inside\nVALUE = 1\n")
    (d / "m.py").write_text(PY_INSIDE)
    (d / "n.ipynb").write_text(notebook("x = 1\n"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(f"{SECRET}\nVALUE = 1\n")
    (outside / f"{NAME}.txt").write_text(f"{SECRET}\n")
    (outside / "m.py").write_text(PY_OUTSIDE)
    (outside / "n.ipynb").write_text(notebook(f"x = '{SECRET}'\n"))
    (outside / "only-outside.txt").write_text("x\n")
    return ws, outside


_EXCHANGER = """
import ctypes, os, signal, sys
target, link, link_to = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
os.symlink(link_to, link)
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
print("ready", flush=True)
a, b = os.fsencode(target), os.fsencode(link)
while not stop:  # RENAME_EXCHANGE: ``target`` is always the folder or the link, never missing
    if libc.renameat2(-100, a, -100, b, 2) or libc.renameat2(-100, a, -100, b, 2):
        sys.exit(ctypes.get_errno())
os.unlink(link)
"""


@contextmanager
def exchanging(target: Path, link_to: Path) -> Iterator[None]:
    """``target`` atomically exchanged with a link to ``link_to`` and back, from another
    process (renameat2 RENAME_EXCHANGE): at every instant it exists, as one or the other."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _EXCHANGER, str(target), str(target) + "_link", str(link_to)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert os.path.isdir(target) and not os.path.islink(target)


def text_of(obs) -> str:  # type: ignore[no-untyped-def]
    return f"{obs.output or ''}{obs.error.render() if obs.error else ''}"


def outcome(obs, mark: str = MARK) -> str:  # type: ignore[no-untyped-def]
    if mark in text_of(obs):
        return "outside"
    return "ok" if obs.ok else str(obs.error.code)


def proposal_outcome(proposal, mark: str = MARK) -> str:  # type: ignore[no-untyped-def]
    text = "".join(c.diff for c in proposal.changes) if proposal.ok else ""
    text += proposal.error.render() if proposal.error else ""
    if mark in text:
        return "outside"
    return "ok" if proposal.ok else str(proposal.error.code)


def hammer(
    rt: Runtime,
    target: Path,
    link_to: Path,
    attempt: Callable[[Runtime], str],
    times: int,
    swap: Callable[[Path, Path], AbstractContextManager[None]] | None = None,
) -> Counter[str]:
    """``attempt`` at least ``times`` times while ``target`` is swapped (by ``swap``: a
    thread's ``swapping`` unless told), and until one of them succeeded (a loaded machine
    can starve either thread for a while)."""
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 60
    with (swap or swapping)(target, link_to):
        while sum(seen.values()) < times or (seen["ok"] == 0 and time.monotonic() < deadline):
            try:
                seen[attempt(rt)] += 1
            except Exception as exc:  # an exception out of the API is a finding too
                seen[f"raised {type(exc).__name__}"] += 1
    return seen


def call(tool: str, args: dict) -> Callable[[Runtime], str]:  # type: ignore[type-arg]
    return lambda rt: outcome(rt.call(tool, args))


def assert_held(seen: Counter[str]) -> None:
    assert seen["outside"] == 0, seen
    assert seen["INTERNAL_ERROR"] == 0, seen
    assert not any(k.startswith("raised") for k in seen), seen


# -- names of an outside folder --------------------------------------------------------


def test_a_folder_listing_never_names_files_outside(swapped):
    ws, outside = swapped
    seen = hammer(Runtime(ws), ws / "d", outside, call("read", {"path": "d"}), 1000)
    assert_held(seen)
    assert seen["ok"] > 0, seen


def test_a_listing_of_the_root_never_names_files_outside(swapped):
    ws, outside = swapped
    seen = hammer(Runtime(ws), ws / "d", outside, call("read", {"path": "."}), 1000)
    assert_held(seen)


def test_search_in_a_folder_never_shows_text_or_names_outside(swapped):
    ws, outside = swapped
    seen = hammer(
        Runtime(ws),
        ws / "d",
        outside,
        call("search", {"query": "7f3[a]", "regex": True, "path": "d"}),
        800,
    )
    assert_held(seen)


def test_search_of_the_whole_workspace_never_shows_text_or_names_outside(swapped):
    ws, outside = swapped
    seen = hammer(
        Runtime(ws), ws / "d", outside, call("search", {"query": "7f3[a]", "regex": True}), 800
    )
    assert_held(seen)


# -- other shapes of the swap ----------------------------------------------------------


def test_the_file_itself_swapped_for_a_link_out_is_never_read(swapped):
    ws, outside = swapped
    seen = hammer(
        Runtime(ws), ws / "d" / "f.txt", outside / "f.txt", call("read", {"path": "d/f.txt"}), 1500
    )
    assert_held(seen)
    assert seen["ok"] > 0, seen


def test_a_deeper_folder_swapped_is_never_read_through(swapped):
    ws, outside = swapped
    deep = ws / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("inside\n")
    out_b = outside / "b"
    (out_b / "c").mkdir(parents=True)
    (out_b / "c" / "f.txt").write_text(f"{SECRET}\n")
    seen = hammer(Runtime(ws), ws / "a" / "b", out_b, call("read", {"path": "a/b/c/f.txt"}), 1500)
    assert_held(seen)
    assert seen["ok"] > 0, seen


def test_a_root_given_through_a_link_still_refuses_a_swapped_folder(swapped, tmp_path):
    ws, outside = swapped
    (tmp_path / "ws-link").symlink_to(ws)
    rt = Runtime(tmp_path / "ws-link")

    def both(rt: Runtime) -> str:
        first = outcome(rt.call("read", {"path": "d/f.txt"}))
        absolute = outcome(rt.call("read", {"path": str(tmp_path / "ws-link" / "d" / "f.txt")}))
        return "outside" if "outside" in (first, absolute) else first

    seen = hammer(rt, ws / "d", outside, both, 800)
    assert_held(seen)
    assert seen["ok"] > 0, seen


# -- a swap into git's or grinta's own state (inside the root, never to be read) -------


@pytest.fixture
def with_git(swapped):
    ws, _ = swapped
    git = ws / ".git"
    git.mkdir()
    (git / "config").write_text(f'[remote "origin"]\n\turl = https://x:{GIT_SECRET}@h/r\n')
    (ws / "d" / "config").write_text("inside config\n")
    return ws, git


def test_read_never_returns_gits_state_through_a_folder_swapped_into_git(with_git):
    ws, git = with_git
    seen = hammer(
        Runtime(ws),
        ws / "d",
        git,
        lambda rt: outcome(rt.call("read", {"path": "d/config"}), GIT_SECRET),
        1500,
    )
    assert_held(seen)


def test_search_never_shows_gits_state_through_a_folder_swapped_into_git(with_git):
    ws, git = with_git
    seen = hammer(
        Runtime(ws),
        ws / "d",
        git,
        lambda rt: outcome(rt.call("search", {"query": "url", "path": "d"}), GIT_SECRET),
        800,
    )
    assert_held(seen)


# -- symbols, outlines, notebooks ------------------------------------------------------


def test_read_symbol_and_outline_never_show_a_file_outside(swapped):
    ws, outside = swapped
    rt = Runtime(ws)
    assert rt.call("read", {"symbol": "d/m.py::inside_fn"}).ok  # index built before the swaps

    def attempt(rt: Runtime) -> str:
        results = [
            outcome(rt.call("read", {"symbol": "d/m.py::inside_fn"})),
            outcome(rt.call("read", {"path": "d/m.py", "outline": True})),
            outcome(rt.call("read", {"symbol": "inside_fn"})),
        ]
        return "outside" if "outside" in results else results[0]

    seen = hammer(rt, ws / "d", outside, attempt, 500)
    assert_held(seen)
    # Afterwards the index holds nothing of the outside file.
    assert not rt.call("read", {"symbol": "leak_7f3a"}).ok
    assert "d/m.py" not in text_of(rt.call("search", {"query": "leak_7f3a"}))
    assert MARK not in text_of(rt.call("read", {"path": "d/m.py", "outline": True}))


def test_a_notebook_read_never_shows_cells_outside(swapped):
    ws, outside = swapped

    def attempt(rt: Runtime) -> str:
        a = outcome(rt.call("read", {"path": "d/n.ipynb"}))
        b = outcome(rt.call("read", {"path": "d/n.ipynb", "outline": True}))
        return "outside" if "outside" in (a, b) else a

    seen = hammer(Runtime(ws), ws / "d", outside, attempt, 600)
    assert_held(seen)
    assert seen["ok"] > 0, seen


# -- edit tools' staging -----------------------------------------------------------------


def test_edit_symbols_create_into_and_multiedit_never_stage_a_file_outside(swapped):
    ws, outside = swapped
    rt = Runtime(ws)
    assert rt.call("read", {"symbol": "d/m.py::inside_fn"}).ok

    def attempt(rt: Runtime) -> str:
        results = [
            proposal_outcome(
                rt.propose(
                    "edit_symbols",
                    {
                        "edits": [
                            {
                                "symbol": "d/m.py::inside_fn",
                                "action": "replace",
                                "new_source": "def inside_fn():\n    return 2\n",
                            }
                        ]
                    },
                )
            ),
            proposal_outcome(
                rt.propose(
                    "create",
                    {"path": "d/m.py", "into": "*", "content": "def added():\n    return 3\n"},
                )
            ),
            proposal_outcome(
                rt.propose(
                    "multiedit",
                    {
                        "edits": [
                            {"path": "d/f.txt", "old_string": "VALUE = 1", "new_string": "V = 2"},
                            {"path": "d/m.py", "old_string": "VALUE = 1", "new_string": "V = 2"},
                        ]
                    },
                )
            ),
        ]
        return "outside" if "outside" in results else results[0]

    seen = hammer(rt, ws / "d", outside, attempt, 300)
    assert_held(seen)
    assert (outside / "m.py").read_text() == PY_OUTSIDE


# -- metadata of an outside file in errors ----------------------------------------------


def test_an_outside_files_size_never_shows_in_an_error(swapped):
    ws, outside = swapped
    (outside / "f.txt").write_text(f"{SECRET}\n" + "x" * 5000)  # over the limit below; inside not
    rt = Runtime(ws, settings=Settings(max_file_bytes=1000))
    seen = hammer(rt, ws / "d", outside, call("read", {"path": "d/f.txt"}), 1500)
    assert_held(seen)
    assert seen["FILE_TOO_LARGE"] == 0, seen  # "5.0 KB, over the 1.0 KB limit": outside's size


def test_create_never_reports_an_outside_file_as_existing(swapped):
    ws, outside = swapped
    rt = Runtime(ws)
    seen = hammer(
        rt,
        ws / "d",
        outside,
        lambda rt: proposal_outcome(
            rt.propose("create", {"path": "d/only-outside.txt", "content": "new\n"})
        ),
        1500,
    )
    assert_held(seen)
    assert seen["FILE_EXISTS"] == 0, seen  # only the outside folder has that file


# -- commits ---------------------------------------------------------------------------


def test_a_commit_never_writes_outside_while_a_folder_is_swapped(swapped):
    ws, outside = swapped
    rt = Runtime(ws)
    seen: Counter[str] = Counter()
    for i in range(120):
        old, new = ("VALUE = 1", "VALUE = 2") if i % 2 == 0 else ("VALUE = 2", "VALUE = 1")
        proposal = rt.propose(  # staged from the inside file, then committed during swaps
            "replace_string", {"path": "d/f.txt", "old_string": old, "new_string": new}
        )
        if not proposal.ok:
            proposal = rt.propose(
                "replace_string", {"path": "d/f.txt", "old_string": new, "new_string": old}
            )
        assert proposal.ok, proposal.error
        with swapping(ws / "d", outside):
            time.sleep(0.0005 * (i % 5))
            obs = rt.commit(proposal)
        seen["committed" if obs.ok else f"commit {obs.error.code}"] += 1
    assert (outside / "f.txt").read_text() == f"{SECRET}\nVALUE = 1\n", seen
    assert sorted(p.name for p in outside.iterdir()) == sorted(
        ["f.txt", f"{NAME}.txt", "m.py", "n.ipynb", "only-outside.txt"]
    ), seen
    assert not any("INTERNAL_ERROR" in k for k in seen), seen
    # STALE_FILE (the folder read through the link at commit time) is a refusal, not a leak.
    assert set(seen) <= {"committed", "commit STALE_FILE", "commit FILE_NOT_FOUND"}, seen


# -- hangs -----------------------------------------------------------------------------


def test_a_fifo_swapped_in_outside_never_hangs_a_read_or_search(swapped):
    ws, outside = swapped
    (outside / "f.txt").unlink()
    os.mkfifo(outside / "f.txt")
    rt = Runtime(ws)
    seen: Counter[str] = Counter()
    slowest = [0.0]

    def loop() -> None:
        def attempt(rt: Runtime) -> str:
            start = time.monotonic()
            a = outcome(rt.call("read", {"path": "d/f.txt"}))
            b = outcome(rt.call("search", {"query": "inside", "path": "d"}))
            slowest[0] = max(slowest[0], time.monotonic() - start)
            return "outside" if "outside" in (a, b) else a

        seen.update(hammer(rt, ws / "d", outside, attempt, 400))

    worker = threading.Thread(target=loop, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), f"hung; so far {seen}"
    assert_held(seen)
    assert slowest[0] < 5, (slowest, seen)


# -- the rules files (read into the system prompt) --------------------------------------


@pytest.mark.parametrize("swap", ["thread", "process"])
def test_rules_in_dot_grinta_are_never_read_from_a_folder_swapped_in(tmp_path, swap):
    ws = tmp_path / "ws"
    (ws / ".grinta").mkdir(parents=True)
    (ws / ".grinta" / "rules.md").write_text("inside rules\n")
    assert rules_read_while_swapped(tmp_path, ws, ws / ".grinta", swap)["outside"] == 0


@pytest.mark.parametrize("swap", ["thread", "process"])
def test_a_rules_link_into_a_folder_swapped_out_is_never_read_outside(tmp_path, swap):
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "rules.md").write_text("inside rules\n")
    (ws / "AGENTS.md").symlink_to(ws / "docs" / "rules.md")
    assert rules_read_while_swapped(tmp_path, ws, ws / "docs", swap)["outside"] == 0


def rules_read_while_swapped(tmp_path: Path, ws: Path, target: Path, swap: str) -> Counter[str]:
    """The rules ``load_rules`` finds, 1,500 times, while ``target`` is swapped for a link
    to a folder whose ``rules.md`` holds the secret (by a thread, or a process's
    exchanges)."""
    from grinta_jupyter.agent.rules import load_rules

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "rules.md").write_text(f"{SECRET}\n")
    seen: Counter[str] = Counter()
    with (swapping if swap == "thread" else exchanging)(target, outside):
        for _ in range(1500):
            text = load_rules(ws).text
            seen["outside" if MARK in text else "ok" if "inside rules" in text else "none"] += 1
    return seen


# -- the same, swapped from another process (in parallel, not interleaved by the GIL) ---


def test_a_folder_listing_never_names_files_outside_exchanged_by_a_process(swapped):
    ws, outside = swapped
    seen = hammer(Runtime(ws), ws / "d", outside, call("read", {"path": "d"}), 1000, exchanging)
    assert_held(seen)


def test_a_root_listing_never_names_files_outside_exchanged_by_a_process(swapped):
    ws, outside = swapped
    seen = hammer(Runtime(ws), ws / "d", outside, call("read", {"path": "."}), 1000, exchanging)
    assert_held(seen)


def test_read_and_search_never_show_outside_exchanged_by_a_process(swapped):
    ws, outside = swapped

    def attempt(rt: Runtime) -> str:
        a = outcome(rt.call("read", {"path": "d/f.txt"}))
        b = outcome(rt.call("search", {"query": "7f3[a]", "regex": True, "path": "d"}))
        return "outside" if "outside" in (a, b) else a

    seen = hammer(Runtime(ws), ws / "d", outside, attempt, 800, exchanging)
    assert_held(seen)
