"""A folder swapped for a link out of the workspace while a tool reads through it.

A path is resolved (links followed, the target checked to be inside the workspace) and
then opened. Another process that swaps a folder on that path for a link to somewhere
else in between made the open follow the link: ``read`` returned a file outside the
workspace to the model (79-185 of 3,000 reads in a loop like the one below), and a
link removed while ``os.path.realpath`` followed it was an INTERNAL_ERROR. The reader
now asks the OS which file it opened (``runtime/files.py``); these tests swap a real
folder in a real thread, as fast as it can, while the tools read.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.errors import ToolFailure
from grinta_jupyter.runtime.files import read_regular

SECRET = "OUTSIDE-SECRET-7f3a"


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("inside\nVALUE = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(f"{SECRET}\nVALUE = 1\n")
    return ws, outside


@contextmanager
def swapping(target: Path, link_to: Path, hold: float = 0.0) -> Iterator[None]:
    """Swap ``target`` (a folder or a file) for a link to ``link_to`` and back, over and
    over, until the block ends; the link stays ``hold`` seconds each time."""
    stop = threading.Event()
    real = target.with_name(target.name + "_real")
    failed: list[BaseException] = []

    def flip() -> None:
        try:
            while not stop.is_set():
                os.rename(target, real)
                os.symlink(link_to, target)
                if hold:
                    time.sleep(hold)
                os.unlink(target)
                os.rename(real, target)
        except BaseException as exc:  # said below: a swapper that stopped swaps nothing
            failed.append(exc)

    thread = threading.Thread(target=flip)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    assert not failed, failed


def hammer(
    ws: Path, outside: Path, attempt: Callable[[Runtime], str], times: int, hold: float = 0.0
) -> Counter[str]:
    """``attempt`` at least ``times`` times while ``ws/d`` is swapped, and until one of them
    read the inside file (a loaded machine can starve either thread for a while)."""
    rt = Runtime(ws)
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 60
    with swapping(ws / "d", outside, hold):
        while sum(seen.values()) < times or (seen["ok"] == 0 and time.monotonic() < deadline):
            seen[attempt(rt)] += 1
    return seen


def outcome(obs) -> str:  # type: ignore[no-untyped-def]
    text = f"{obs.output or ''}{obs.error.message if obs.error else ''}"
    if SECRET in text:
        return "outside"
    return "ok" if obs.ok else str(obs.error.code)


def test_read_never_returns_a_file_outside_while_a_folder_is_swapped(swapped):
    ws, outside = swapped
    seen = hammer(ws, outside, lambda rt: outcome(rt.call("read", {"path": "d/f.txt"})), 1500)
    assert seen["outside"] == 0, seen
    assert seen["INTERNAL_ERROR"] == 0, seen
    assert seen["ok"] > 0, seen  # the inside file was read between the swaps


def test_an_edit_never_stages_a_file_outside_while_a_folder_is_swapped(swapped):
    ws, outside = swapped

    def propose(rt: Runtime) -> str:
        proposal = rt.propose(
            "replace_string",
            {"path": "d/f.txt", "old_string": "VALUE = 1", "new_string": "VALUE = 2"},
        )
        if proposal.ok and SECRET in "".join(c.diff for c in proposal.changes):
            return "outside"
        return "ok" if proposal.ok else str(proposal.error.code)

    seen = hammer(ws, outside, propose, 800)
    assert seen["outside"] == 0, seen
    assert seen["INTERNAL_ERROR"] == 0, seen
    assert seen["ok"] > 0, seen
    assert (outside / "f.txt").read_text() == f"{SECRET}\nVALUE = 1\n"


def test_search_never_finds_text_outside_while_a_folder_is_swapped(swapped):
    ws, outside = swapped
    seen = hammer(
        ws, outside, lambda rt: outcome(rt.call("search", {"query": "VALUE", "path": "d"})), 600
    )
    assert seen["outside"] == 0, seen
    assert seen["INTERNAL_ERROR"] == 0, seen


def test_listings_never_name_a_file_outside_while_a_folder_is_swapped(swapped):
    ws, outside = swapped
    (outside / "outside-only-name.txt").write_text("x\n")
    (ws / "d" / "sub").mkdir()
    (ws / "d" / "sub" / "g.txt").write_text("inside\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "outside-only-too.txt").write_text("x\n")
    for k in range(300):  # listed before "d": the swap has time to come between the two
        (ws / f"a{k:03}.txt").write_text("")

    def listed(rt: Runtime) -> str:
        for obs in (rt.call("read", {"path": "d"}), rt.call("read", {"path": "."})):
            if "outside-only" in f"{obs.output}{obs.error.message if obs.error else ''}":
                return "outside"
            if obs.error is not None and obs.error.code == "INTERNAL_ERROR":
                return "INTERNAL_ERROR"
        return "ok" if obs.ok else str(obs.error.code)

    seen = hammer(ws, outside, listed, 300, hold=0.0005)  # the walk lists "d" by name
    assert seen["outside"] == 0, seen
    assert seen["INTERNAL_ERROR"] == 0, seen
    assert seen["ok"] > 0, seen


def test_the_reader_refuses_a_file_opened_outside_the_folder_it_is_given(swapped):
    ws, outside = swapped
    (ws / "out").symlink_to(outside)
    data, _ = read_regular(ws / "out" / "f.txt", "out/f.txt", 1000)  # no folder: as before
    assert SECRET.encode() in data
    with pytest.raises(ToolFailure) as refused:
        read_regular(ws / "out" / "f.txt", "out/f.txt", 1000, within=ws.resolve())
    assert refused.value.error.code == "PATH_OUTSIDE_WORKSPACE"
    inside, _ = read_regular(ws / "d" / "f.txt", "d/f.txt", 1000, within=ws.resolve())
    assert inside.startswith(b"inside")


def test_links_inside_the_workspace_and_a_root_given_through_a_link_still_read(swapped, tmp_path):
    ws, _ = swapped
    (ws / "alias").symlink_to(ws / "d")
    (tmp_path / "ws-link").symlink_to(ws)
    for root in (ws, tmp_path / "ws-link"):
        rt = Runtime(root)
        for path in ("alias/f.txt", "d/f.txt"):
            obs = rt.call("read", {"path": path})
            assert obs.ok and "inside" in obs.output, (root, path, obs.error)
        assert rt.propose(
            "replace_string",
            {"path": "alias/f.txt", "old_string": "VALUE = 1", "new_string": "VALUE = 2"},
        ).ok
