"""Every path resolves inside the workspace; protected folders refuse writes."""

from __future__ import annotations

import os

import pytest

from tests.conftest import snapshot


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "pkg/../../outside.txt", "/etc/passwd", "..", "pkg/../../../tmp/x"],
)
def test_escapes_are_refused(rt, ws, path):
    before = snapshot(ws.parent)
    for tool, args in [
        ("read", {"path": path}),
        ("create", {"path": path, "content": "x"}),
        ("replace_string", {"path": path, "old_string": "a", "new_string": "b"}),
    ]:
        p = rt.propose(tool, args)
        assert not p.ok and p.error.code == "PATH_OUTSIDE_WORKSPACE", (tool, path, p.error)
    assert snapshot(ws.parent) == before


def test_absolute_path_inside_root_is_accepted(rt, ws):
    obs = rt.call("read", {"path": str(ws / "pkg" / "core.py")})
    assert obs.ok and "def add" in obs.output


def test_symlink_leading_outside_is_refused(rt, ws, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    os.symlink(secret, ws / "link.txt")
    os.symlink(tmp_path, ws / "linkdir")
    for path in ["link.txt", "linkdir/secret.txt"]:
        assert rt.propose("read", {"path": path}).error.code == "PATH_OUTSIDE_WORKSPACE"
        p = rt.propose("replace_string", {"path": path, "old_string": "top", "new_string": "no"})
        assert p.error.code == "PATH_OUTSIDE_WORKSPACE"
    assert secret.read_text() == "top secret\n"


def test_symlink_inside_the_workspace_edits_its_target(rt, ws):
    os.symlink(ws / "pkg" / "core.py", ws / "alias.py")
    obs = rt.call(
        "replace_string", {"path": "alias.py", "old_string": "a - b", "new_string": "b - a"}
    )
    assert obs.ok, obs.output
    assert (ws / "alias.py").is_symlink()
    assert "b - a" in (ws / "pkg" / "core.py").read_text()


def test_nul_byte_in_path_is_refused(rt):
    assert rt.propose("read", {"path": "pkg/core.py\x00.txt"}).error.code == "PATH_FORBIDDEN"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".GIT/config",
        ".Git/hooks/pre-commit",
        ".grinta/x",
        ".GRINTA/undo/x",
        "sub/../.git/HEAD",
    ],
)
def test_writes_into_protected_folders_are_refused(rt, ws, path):
    (ws / ".git").mkdir(exist_ok=True)
    (ws / ".git" / "config").write_text("[core]\n")
    before = snapshot(ws)
    p = rt.propose("create", {"path": path, "content": "x"})
    assert p.error.code == "PATH_FORBIDDEN", p.error
    p = rt.propose(
        "replace_string", {"path": ".git/config", "old_string": "core", "new_string": "x"}
    )
    assert p.error.code == "PATH_FORBIDDEN"
    assert snapshot(ws) == before


def test_symlink_into_git_folder_is_refused_for_writes(rt, ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    os.symlink(ws / ".git" / "config", ws / "innocent.txt")
    p = rt.propose(
        "replace_string", {"path": "innocent.txt", "old_string": "core", "new_string": "x"}
    )
    assert p.error.code == "PATH_FORBIDDEN"


def test_backslash_paths_are_read_as_separators(rt):
    assert rt.call("read", {"path": "pkg\\core.py"}).ok
    assert (
        rt.propose("read", {"path": "..\\..\\etc\\passwd"}).error.code == "PATH_OUTSIDE_WORKSPACE"
    )
