"""Grinta's own state folder cannot be turned against the user: no link is followed, and a
loose folder left by an older version is made owner-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from tests.conftest import drive


def tree(path: Path) -> dict[str, bytes]:
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    folder = tmp_path / "victim"
    for n in range(55):  # more than the undo records kept, so pruning would reach them
        (folder / f"proj{n:02}").mkdir(parents=True)
        (folder / f"proj{n:02}" / "data.txt").write_text(f"precious {n}\n")
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


@pytest.mark.parametrize("link", [".grinta", ".grinta/undo", ".grinta/journal"])
def test_a_state_folder_that_is_a_link_is_never_followed(ws, victim, link):
    before = tree(victim)
    target = ws / link
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(victim, target)
    rt = Runtime(ws)
    obs = rt.call("replace_string", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
    assert not obs.ok and obs.error.code in ("IO_ERROR", "PERMISSION_DENIED")
    assert "real folder" in obs.error.message
    assert (ws / "a.py").read_text() == "x = 1\n"
    assert rt.undo().error.code == "NOTHING_TO_UNDO"
    assert tree(victim) == before and sorted(os.listdir(victim)) == sorted(
        f"proj{n:02}" for n in range(55)
    )


def test_a_sessions_folder_that_is_a_link_gets_no_log(ws, victim):
    before = tree(victim)
    (ws / ".grinta").mkdir()
    os.symlink(victim, ws / ".grinta" / "sessions")
    model = ScriptedModel([reply("", call("finish", summary="x"))])
    session = drive(Session("explain", model=model, root=ws), lambda s: s.approve())
    assert session.end_reason == "log_write_failed"
    assert tree(victim) == before


def test_loose_state_folders_from_before_are_made_owner_only(ws):
    for sub in ("", "sessions", "undo"):
        (ws / ".grinta" / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(ws / ".grinta", 0o755)
    os.chmod(ws / ".grinta" / "sessions", 0o777)
    os.chmod(ws / ".grinta" / "undo", 0o755)
    Runtime(ws)  # opening alone closes the state folder to others
    assert stat.S_IMODE((ws / ".grinta").stat().st_mode) == 0o700
    model = ScriptedModel(
        [
            reply("", call("replace_string", path="a.py", old_string="x = 1", new_string="x = 2")),
            reply("", call("finish", summary="x")),
        ]
    )
    drive(Session("explain", model=model, root=ws, policy="auto"), lambda s: s.approve())
    for sub in ("sessions", "undo"):
        assert stat.S_IMODE((ws / ".grinta" / sub).stat().st_mode) == 0o700, sub


def test_creating_inside_a_link_loop_is_refused_at_propose(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    rt = Runtime(root)
    proposal = rt.propose("create", {"path": "loop1/x.py", "content": "x = 1\n"})
    assert proposal.error is not None and proposal.error.code == "SYMLINK_LOOP"
