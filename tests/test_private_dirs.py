"""grinta's state folders are made owner-only, and nothing else is.

Before stop 32 a workspace lying under a folder named ``.grinta`` (``~/.grinta/projects/ws``)
was made owner-only by its first commit, with every folder between: ``make_dirs`` took the
first ``.grinta`` of the path for the state folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime import private
from tests.conftest import drive


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_workspace_under_a_folder_named_grinta_keeps_its_modes(tmp_path: Path) -> None:
    ws = tmp_path / ".grinta" / "projects" / "ws"
    ws.mkdir(parents=True)
    for folder in (tmp_path / ".grinta", tmp_path / ".grinta" / "projects", ws):
        folder.chmod(0o755)
    (ws / "a.py").write_text("x = 1\n")
    model = ScriptedModel([reply("", call("finish", summary="nothing to do"))])
    drive(Session("look", model=model, root=ws, policy="auto"), lambda s: s.approve())
    assert (ws / ".grinta" / "sessions").is_dir()  # the session's log was written
    private.make_dirs(ws / ".grinta" / "snapshots" / "x")
    assert mode(ws) == mode(ws.parent) == mode(ws.parent.parent) == 0o755
    assert mode(ws / ".grinta") == 0o700  # grinta's own folder is owner-only


def test_the_state_folder_and_below_are_tightened(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".grinta"
    (state / "old").mkdir(parents=True)
    (tmp_path / "ws").chmod(0o755)
    state.chmod(0o755)
    (state / "old").chmod(0o755)
    private.make_dirs(state / "old" / "new")
    assert mode(state) == mode(state / "old") == mode(state / "old" / "new") == 0o700
    assert mode(tmp_path / "ws") == 0o755
