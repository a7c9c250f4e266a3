"""Path forms a model sends that a shell, Windows or a terminal would read differently.

Each was accepted as a plain name in the root: ``~/.bashrc`` became a folder named
``~`` in the workspace while the reviewer read it as the home folder's file, and a
name with a newline or a right-to-left override printed as another file in the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.tools.base import Settings
from tests.conftest import snapshot


def refused(rt: Runtime, root: Path, tool: str, args: dict[str, object], code: str) -> str:
    """Propose ``tool``; assert it is refused with ``code`` and nothing changed; the message."""
    before = snapshot(root)
    p = rt.propose(tool, args)
    assert p.error is not None and p.error.code == code, (tool, args, p.error)
    assert snapshot(root) == before
    return p.error.message


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder beside the workspace (not holding it)."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / ".bashrc").write_text("alias ls='ls -F'\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.mark.parametrize("path", ["~/.bashrc", "$HOME/.bashrc", "${HOME}/.bashrc", "~"])
def test_home_paths_mean_the_home_folder_not_a_folder_named_tilde(rt, ws, home, path):
    for tool, args in [
        ("create", {"path": path + "/new.py", "content": "x\n"}),
        ("replace_string", {"path": path, "old_string": "ls", "new_string": "rm"}),
        ("read", {"path": path}),
    ]:
        message = refused(rt, ws.parent, tool, args, "PATH_OUTSIDE_WORKSPACE")
        assert "relative to the workspace root" in message
    assert not (ws / "~").exists()
    assert (home / ".bashrc").read_text() == "alias ls='ls -F'\n"


def test_other_users_home_is_outside_too(rt, ws):
    if os.path.expanduser("~root") == "~root":
        pytest.skip("no user named root here")
    refused(
        rt, ws.parent, "create", {"path": "~root/x.py", "content": "x\n"}, "PATH_OUTSIDE_WORKSPACE"
    )


def test_a_home_path_that_names_the_workspace_reaches_its_file(ws, monkeypatch):
    monkeypatch.setenv("HOME", str(ws.parent))
    rt = Runtime(ws)
    obs = rt.call("read", {"path": "~/ws/pkg/core.py"})
    assert obs.ok and "def add" in obs.output
    obs = rt.call(
        "replace_string",
        {"path": "$HOME/ws/pkg/core.py", "old_string": "a - b", "new_string": "b - a"},
    )
    assert obs.ok, obs.output
    assert "b - a" in (ws / "pkg" / "core.py").read_text()
    assert not (ws / "~").exists() and not (ws / "$HOME").exists()


def test_a_tilde_that_is_not_a_home_stays_a_name(rt, ws):
    """Office's lock files (``~$report.docx``) and ``~nosuchuser`` are names, as in a shell."""
    (ws / "~$report.docx").write_text("lock\n")
    obs = rt.call("read", {"path": "~$report.docx"})
    assert obs.ok and "lock" in obs.output


def test_another_variable_is_refused_and_never_expanded(rt, ws, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-4f9a2e")
    for path in ["$DEPLOY_TOKEN/x.py", "${DEPLOY_TOKEN}/x.py", "$PWD"]:
        message = refused(rt, ws, "create", {"path": path, "content": "x\n"}, "INVALID_ARGS")
        assert "tok-4f9a2e" not in message and "relative to the workspace root" in message
    # A `$` inside a name is a name: Java's inner classes.
    assert rt.call("create", {"path": "Outer$Inner.class", "content": "x\n"}).ok


@pytest.mark.parametrize("path", ["C:\\Users\\me\\x.py", "C:/x.py", "d:\\x.py", "C:"])
def test_windows_drive_paths_are_refused(rt, ws, path):
    message = refused(rt, ws, "create", {"path": path, "content": "x\n"}, "PATH_OUTSIDE_WORKSPACE")
    assert "Windows drive" in message
    assert not any(name.endswith(":") for name in os.listdir(ws))


def test_a_file_url_is_refused(rt, ws):
    url = f"file://{ws}/pkg/new.py"
    message = refused(rt, ws, "create", {"path": url, "content": "x\n"}, "INVALID_ARGS")
    assert "URL" in message
    assert not (ws / "file:").exists()


def test_an_existing_file_with_a_newline_can_still_be_read(rt, ws):
    """Guard (passes before and after): a name holding a newline is a file like any other."""
    (ws / "odd\nname.txt").write_text("found\n")
    obs = rt.call("read", {"path": "odd\nname.txt"})
    assert obs.ok and "found" in obs.output


@pytest.mark.parametrize("path", [".git./config", ".git /config", ".GIT./hooks/x", ".grinta./x"])
def test_state_folders_with_trailing_dots_or_spaces_are_refused(rt, ws, path):
    """Windows shares, SMB and exFAT mounts drop a name's trailing dots and spaces."""
    (ws / ".git").mkdir()
    refused(rt, ws, "create", {"path": path, "content": "x\n"}, "PATH_FORBIDDEN")


def test_a_protected_name_matches_in_either_unicode_form(ws):
    """macOS stores ``café`` typed composed or decomposed as one file."""
    (ws / "café.py").write_text("x = 1\n")
    rt = Runtime(ws, settings=Settings(protected=("café.py",)))
    decomposed = "cafe\u0301.py"
    refused(rt, ws, "create", {"path": decomposed, "content": "x\n"}, "PATH_FORBIDDEN")


def test_links_out_say_what_to_do(rt, ws, tmp_path):
    """A chain (a -> b -> outside), /proc/self/root and /dev/fd all resolve outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.py").write_text("secret = 1\n")
    os.symlink(outside, ws / "b")
    os.symlink("b", ws / "a")
    os.symlink("/proc/self/root", ws / "proc")
    os.symlink("/dev/fd/0", ws / "fd0")
    for path in ["a/s.py", "proc/etc", "fd0"]:
        args = {"path": path + "/n.py", "content": "x"}
        message = refused(rt, tmp_path, "create", args, "PATH_OUTSIDE_WORKSPACE")
        assert "give a path whose target is inside the workspace" in message
    assert (outside / "s.py").read_text() == "secret = 1\n"


def test_lexical_escapes_say_what_to_do(rt, ws):
    for path in ["../x.py", "pkg/../../x.py", "/etc/x.py", "//x.py", "..\\x.py"]:
        message = refused(
            rt, ws.parent, "create", {"path": path, "content": "x"}, "PATH_OUTSIDE_WORKSPACE"
        )
        assert "relative to the workspace root" in message


def test_odd_but_plain_names_stay_inside(rt, ws):
    """Guards (pass before and after): these are names in the root, not escapes."""
    for path in ["%2e%2e/x.py", "pkg/./y.py", "pkg/../z.py"]:
        assert rt.call("create", {"path": path, "content": "x\n"}).ok, path
    assert (ws / "%2e%2e" / "x.py").exists() and (ws / "pkg" / "y.py").exists()
    assert (ws / "z.py").exists()
    refused(rt, ws, "create", {"path": "a" * 300 + ".py", "content": "x"}, "PATH_TOO_LONG")
    refused(rt, ws, "create", {"path": "a/" * 2500 + "x.py", "content": "x"}, "PATH_TOO_LONG")


def test_a_doubled_leading_slash_is_the_same_absolute_path(rt, ws):
    """``os.path.normpath`` keeps a leading ``//``: ``//<root>/a.py`` was called outside."""
    obs = rt.call("read", {"path": "/" + str(ws / "pkg" / "core.py")})
    assert obs.ok and "def add" in obs.output
    refused(rt, ws.parent, "create", {"path": "//x.py", "content": "x"}, "PATH_OUTSIDE_WORKSPACE")
