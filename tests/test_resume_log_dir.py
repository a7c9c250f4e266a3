"""Resuming a session whose log went to ``GRINTA_LOG_DIR``, and ``%grinta resume <id>`` of
a demo session.

``GRINTA_LOG_DIR`` sends a session's log out of its workspace's ``.grinta/sessions``. Resume
found only logs there, so a session killed with its log elsewhere could not be resumed
without naming the log and ``--root``. Now: ``grinta resume`` without a log also looks in
the configured log folder, among the sessions that ran in the workspace; a log lying in
that folder names its own workspace, as one in ``.grinta/sessions`` does; a log anywhere
else still needs ``--root``. The real console entry, the demo model, SIGKILL at the prompt.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from grinta_jupyter.config import Config
from grinta_jupyter.jupyter import controller
from grinta_jupyter.jupyter.magics import MagicUsageError
from tests.test_cli_hostile import ENTRY, REPO, cli_env, grinta


def killed_at_the_prompt(root: Path, **env: str) -> None:
    """A demo session in ``root``, killed (SIGKILL) while it asks about a step."""
    child = subprocess.Popen(
        [*ENTRY, "demo", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(**env),
        cwd=REPO,
    )
    assert child.stdout is not None
    seen = b""
    deadline = time.monotonic() + 60
    while b"approve?" not in seen and time.monotonic() < deadline:
        if select.select([child.stdout], [], [], 1)[0]:
            chunk = os.read(child.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    assert b"approve?" in seen, seen
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(workspace, log folder, log): a demo killed at the prompt, its log in the log folder."""
    base = tmp_path_factory.mktemp("logdir")
    root, logs = base / "demo", base / "logs"
    killed_at_the_prompt(root, GRINTA_LOG_DIR=str(logs))
    assert not list((root / ".grinta" / "sessions").glob("*.jsonl"))
    (log,) = logs.glob("*.jsonl")
    return root, logs, log


def _copy(tmp_path: Path, elsewhere: tuple[Path, Path, Path]) -> tuple[Path, Path]:
    """A copy of the workspace and its log folder (each test resumes its own), the log's
    workspace rewritten to the copy's."""
    import shutil

    root, logs, log = elsewhere
    new_root, new_logs = tmp_path / "demo", tmp_path / "logs"
    shutil.copytree(root, new_root, symlinks=True)
    new_logs.mkdir()
    lines = log.read_text().splitlines()
    start = json.loads(lines[0])
    start["root"] = str(new_root)
    (new_logs / log.name).write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    return new_root, new_logs / log.name


def test_resume_without_a_log_finds_one_in_the_log_folder(
    tmp_path: Path, elsewhere: tuple[Path, Path, Path]
) -> None:
    root, log = _copy(tmp_path, elsewhere)
    done = grinta(
        "resume", "--root", str(root), "--auto", timeout=120, GRINTA_LOG_DIR=str(log.parent)
    )
    assert done.returncode == 0, done.stderr
    assert f"log: {log}" in done.stdout
    assert '"type": "resume"' in log.read_text()


def test_a_log_in_the_log_folder_names_its_workspace(
    tmp_path: Path, elsewhere: tuple[Path, Path, Path]
) -> None:
    root, log = _copy(tmp_path, elsewhere)
    done = grinta("resume", str(log), "--auto", timeout=120, GRINTA_LOG_DIR=str(log.parent))
    assert done.returncode == 0, done.stderr
    assert f"workspace: {root}" in done.stdout


def test_the_same_log_elsewhere_still_needs_root(
    tmp_path: Path, elsewhere: tuple[Path, Path, Path]
) -> None:
    """Without GRINTA_LOG_DIR naming its folder, a log out of its workspace does not choose
    where the session writes."""
    _, log = _copy(tmp_path, elsewhere)
    done = grinta("resume", str(log), "--auto", timeout=60)
    assert done.returncode == 2
    assert "pass --root" in done.stderr


def test_another_workspaces_session_in_the_log_folder_is_not_taken(
    tmp_path: Path, elsewhere: tuple[Path, Path, Path]
) -> None:
    _, log = _copy(tmp_path, elsewhere)
    other = tmp_path / "other"
    other.mkdir()
    done = grinta(
        "resume", "--root", str(other), "--auto", timeout=60, GRINTA_LOG_DIR=str(log.parent)
    )
    assert done.returncode == 2
    assert "has a task that did not end" in done.stderr
    assert '"type": "resume"' not in log.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the log to another user")
def test_another_users_log_in_the_log_folder_chooses_nothing(
    tmp_path: Path, elsewhere: tuple[Path, Path, Path]
) -> None:
    """A log folder may be shared: a log another user left there, naming this workspace,
    is neither found by resume nor lets its named workspace be taken without --root."""
    root, log = _copy(tmp_path, elsewhere)
    os.chown(log, 54321, 54321)
    env = {"GRINTA_LOG_DIR": str(log.parent)}
    found = grinta("resume", "--root", str(root), "--auto", timeout=60, **env)
    assert found.returncode == 2 and "has a task that did not end" in found.stderr
    named = grinta("resume", str(log), "--auto", timeout=60, **env)
    assert named.returncode == 2 and "pass --root" in named.stderr
    assert '"type": "resume"' not in log.read_text()


# -- %grinta resume LOG: which log it means (the kernel's lookup, without a kernel) ---------


def _demo_copy(folder: Path, session: str) -> Path:
    """A demo copy of the sample in ``folder`` holding the log of ``session``."""
    sessions = folder / ".grinta" / "sessions"
    sessions.mkdir(parents=True)
    (folder / controller.DEMO_MARKER).write_text("")
    log = sessions / f"{session}.jsonl"
    log.write_text("{}\n")
    return log


def test_magic_resume_finds_a_demo_sessions_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``%grinta resume <id>`` of a session the demo ran in its copy (./raft_kv) finds it, as
    ``%grinta resume`` alone does."""
    monkeypatch.chdir(tmp_path)
    log = _demo_copy(tmp_path / "raft_kv", "20261207-065858-1f18ea")
    config = Config()
    assert controller._log_to_resume("20261207-065858-1f18ea", config) == log
    assert controller._log_to_resume("20261207-065858-1f18ea.jsonl", config) == log


def test_magic_resume_finds_an_id_in_the_log_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "s1.jsonl").write_text("{}\n")
    assert controller._log_to_resume("s1", Config(log_dir=str(logs))) == logs / "s1.jsonl"
    with pytest.raises(MagicUsageError, match="no session log s1"):
        controller._log_to_resume("s1", Config())


def test_magic_resume_of_an_unknown_id_names_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _demo_copy(tmp_path / "raft_kv", "other")
    with pytest.raises(MagicUsageError) as raised:
        controller._log_to_resume("nope", Config())
    message = str(raised.value)
    assert "no session log nope" in message and str(tmp_path / "raft_kv") in message
