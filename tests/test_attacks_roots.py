"""Attacks on the workspace root and its state folder ``.grinta`` (docs/guarantees.md,
*The workspace root*): the file system root, a ``.grinta`` that is no writable folder, a
``~`` with no home behind it, and the demo's copy replaced under a live session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acp import RequestError

import grinta_jupyter
from grinta_jupyter.acp.agent import _workspace
from grinta_jupyter.cli import main
from grinta_jupyter.runtime.workspace import Workspace
from tests.conftest import grinta_shell


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    monkeypatch.delenv("GRINTA_ROOT", raising=False)
    yield from grinta_shell()


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


@pytest.mark.parametrize("given", ["/", "//", "/tmp/..", "LINK/"])
def test_grinta_run_refuses_the_file_system_root_in_one_line(given, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    (tmp_path / "up").symlink_to("/")
    given = given.replace("LINK", str(tmp_path / "up"))
    # No model either: the root is what is wrong first, and nothing starts.
    assert main(["run", "fix it", "--root", given]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is the file system root" in err[0], err


def test_grinta_root_and_the_current_folder_at_slash_are_refused_too(capsys, monkeypatch):
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    monkeypatch.setenv("GRINTA_ROOT", "/")
    assert main(["run", "fix it"]) == 2
    assert "GRINTA_ROOT=/ is the file system root" in capsys.readouterr().err
    monkeypatch.delenv("GRINTA_ROOT")
    monkeypatch.chdir("/")
    assert main(["run", "fix it"]) == 2
    assert "the current folder is the file system root (/)" in capsys.readouterr().err


def test_the_api_refuses_the_file_system_root():
    with pytest.raises(OSError, match="file system root"):
        Workspace("/")


@pytest.mark.parametrize("kind", ["file", "link", "sessions-file"])
def test_a_grinta_that_is_no_folder_is_refused_before_a_session_starts(kind, tmp_path, capsys):
    root = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "file":
        (root / ".grinta").write_text("mine\n")
    elif kind == "link":
        (root / ".grinta").symlink_to(elsewhere)
    else:
        (root / ".grinta").mkdir()
        (root / ".grinta" / "sessions").write_text("mine\n")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    status = main(["run", "fix it", "--root", str(root), "--model", "scripted"])
    out, err = capsys.readouterr()
    assert status == 2, out + err
    assert len(err.strip().splitlines()) == 1 and ".grinta" in err
    assert ("a symbolic link" if kind == "link" else "is a file") in err
    assert "recover" not in out + err and "log:" not in out  # no session, no recovery note
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert list(elsewhere.iterdir()) == []


def test_a_tilde_with_no_such_user_is_a_user_error_not_an_internal_one(capsys):
    assert main(["run", "fix it", "--root", "~no_such_user_grinta/x", "--model", "scripted"]) == 2
    assert "no home folder for no_such_user_grinta" in capsys.readouterr().err


def test_an_acp_client_naming_the_file_system_root_or_a_broken_grinta_is_refused(tmp_path):
    with pytest.raises(RequestError, match="file system root"):
        _workspace("/")
    root = _project(tmp_path)
    (root / ".grinta").write_text("")
    with pytest.raises(RequestError, match=r"\.grinta is a file"):
        _workspace(str(root))
    assert _workspace(str(tmp_path)) == tmp_path.resolve()


def test_the_magic_refuses_a_grinta_file_with_its_one_line(ip, tmp_path, capsys):
    root = _project(tmp_path)
    (root / ".grinta").write_text("mine\n")
    ip.run_line_magic("grinta", f"--model scripted --root {root} fix it")
    out = capsys.readouterr().out
    assert grinta_jupyter.current() is None, out
    assert out.startswith("%grinta: ") and ".grinta is a file" in out, out
    assert (root / ".grinta").read_text() == "mine\n"


def test_a_second_demo_leaves_the_copy_a_live_session_works_in(ip, tmp_path, capsys):
    ip.run_line_magic("grinta", "--manual fix the failing test in raft_kv")
    first = grinta_jupyter.current()
    assert first is not None and first.root == tmp_path / "raft_kv"
    ip.run_line_magic("grinta", "step")  # its first step waits for a decision
    log = first.log_path
    node = first.root / "raft_kv" / "node.py"
    inode = os.stat(node).st_ino
    ip.run_line_magic("grinta", "--manual fix the failing test in raft_kv")
    second = grinta_jupyter.current()
    assert second is not first and second.root != first.root
    # The first session's log and files were not deleted under it; it was stopped and says so.
    assert log.is_file() and os.stat(node).st_ino == inode
    assert first.done and '"session_end"' in log.read_text()
    # Once it has ended, its copy is the demo's to replace again.
    second.stop()
    ip.run_line_magic("grinta", "--manual fix the failing test in raft_kv")
    assert grinta_jupyter.current().root == tmp_path / "raft_kv"


@pytest.mark.parametrize(
    "inside", [".grinta", ".grinta/undo", ".grinta/sessions/x", ".grinta/index"]
)
def test_a_root_inside_a_workspaces_state_is_refused(inside, tmp_path, capsys):
    """A session rooted in another's .grinta could edit its undo records and logs."""
    root = _project(tmp_path)
    target = root / inside
    target.mkdir(parents=True)
    (target / "record.json").write_text("{}\n")
    status = main(["run", "fix it", "--root", str(target), "--model", "scripted"])
    out, err = capsys.readouterr()
    assert status == 2, out + err
    assert len(err.strip().splitlines()) == 1 and "where a session keeps its logs" in err
    assert sorted(p.name for p in target.iterdir()) == ["record.json"]
    assert (target / "record.json").read_text() == "{}\n"


def test_a_project_under_a_folder_only_named_grinta_is_a_workspace(tmp_path, capsys):
    """~/.grinta/projects/ws is documented as a place for a project (docs/guarantees.md)."""
    project = tmp_path / ".grinta" / "projects" / "ws"
    project.mkdir(parents=True)
    from grinta_jupyter.runtime.workspace import root_problem

    assert root_problem(project, "--root") is None
