"""Attacks on the runtime's own guarantees: `run`'s limits, secrets, path safety, two writers.

Each test names the attack in its docstring: a hostile command the model proposes, a
hostile file or link in the workspace, or a careless user. Real processes and real
files; every process a test starts is killed before it ends.
"""

from __future__ import annotations

import os
import py_compile
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from importlib.util import cache_from_source
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import process
from grinta_jupyter.runtime.process import run_command
from grinta_jupyter.runtime.secrets import (
    REDACTED,
    Secrets,
    command_environment,
    is_secret_variable,
)
from tests.test_run_limits import wait_for

linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="processes are found through /proc"
)
PYTHON = sys.executable


# -- `run`: nothing outlives the command ---------------------------------------------------


def _running(pid: int) -> bool:
    """Whether any thread of process ``pid`` still runs (a zombie's first thread does not)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in threads:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_bytes()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X", b"x"):
            return True
    return False


@pytest.fixture
def beat(tmp_path: Path) -> Iterator[Path]:
    """A file a hostile process writes its pid to; whatever pid it names is killed at the end."""
    path = tmp_path / "beat"
    yield path
    if path.exists():
        pid = int(path.read_text().split()[0])
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"process {pid} outlived its command")


def hollow(beat: Path, *, daemon: bool = False) -> str:
    """Python that keeps running in a second thread after its first thread exits
    (``pthread_exit``): /proc then shows the whole process as a zombie ('Z')."""
    code = textwrap.dedent(
        f"""
        import ctypes, os, threading, time
        if {daemon}:
            if os.fork(): os._exit(0)
            os.setsid()
            if os.fork(): os._exit(0)
        def work():
            while True:
                open({str(beat)!r} + '.tmp', 'w').write(str(os.getpid()))
                os.replace({str(beat)!r} + '.tmp', {str(beat)!r})
                time.sleep(0.02)
        threading.Thread(target=work).start()
        while not os.path.exists({str(beat)!r}): time.sleep(0.01)
        ctypes.CDLL(None).pthread_exit(None)
        """
    )
    script = beat.with_suffix(".py")
    script.write_text(code)
    return f"{PYTHON} {script} >/dev/null 2>&1"


@linux
def test_a_process_whose_first_thread_exited_ends_with_the_command(tmp_path, beat):
    """Attack: a background process calls pthread_exit in its main thread and runs on in
    another; /proc shows it as a zombie, so the sweep passed over it and it outlived `run`."""
    rt = Runtime(tmp_path)
    command = f"{hollow(beat)} & while [ ! -e {beat} ]; do sleep 0.01; done; sleep 0.3"
    obs = rt.call("run", {"command": command, "timeout": 20})
    assert obs.ok, obs.output
    pid = int(beat.read_text())
    assert wait_for(lambda: not _running(pid), 1), "the hollow process outlived its command"
    assert "1 background process(es) still running at the end were killed" in obs.output


@linux
def test_a_hollow_shell_is_killed_at_the_timeout(tmp_path, beat):
    """Attack: the shell itself becomes such a process (``exec``); the timeout then killed
    nothing and the command ran on after `run` returned COMMAND_TIMEOUT."""
    rt = Runtime(tmp_path)
    started = time.monotonic()
    obs = rt.call("run", {"command": f"exec {hollow(beat)}", "timeout": 1})
    assert obs.error is not None and obs.error.code == "COMMAND_TIMEOUT"
    assert time.monotonic() - started < 1 + process.KILL_GRACE + 1
    pid = int(beat.read_text())
    assert wait_for(lambda: not _running(pid), 1), "the command outlived its timeout"


@linux
def test_the_fallback_finds_a_hollow_daemon_by_its_marker(tmp_path, beat):
    """Attack: without a subreaper the marker is the backstop, but a process whose first
    thread exited has an empty /proc/PID/environ; its marker must be read from a live thread."""
    result = run_command(
        f"{hollow(beat, daemon=True)}; while [ ! -e {beat} ]; do sleep 0.01; done",
        tmp_path,
        dict(os.environ),
        20,
        10_000,
        subreaper=False,
    )
    assert result.exit_code == 0
    pid = int(beat.read_text())
    assert wait_for(lambda: not _running(pid), 1), "the hollow daemon outlived its command"


@linux
def test_a_command_cannot_forge_the_supervisor_status(tmp_path):
    """Attack: the command writes an unfinished status line into its supervisor's status pipe
    (/proc/$PPID/fd/2); the real line was appended to it and took its ``error=2``: a command
    that ran was reported as one that could not start, its output hidden."""
    rt = Runtime(tmp_path)
    obs = rt.call(
        "run", {"command": "printf 'grinta-supervisor error=2 ' > /proc/$PPID/fd/2; echo ran"}
    )
    assert obs.ok and obs.exit_code == 0, obs.output
    assert "ran" in obs.output


def test_the_supervisor_never_runs_stale_bytecode(tmp_path):
    """Careless setup: PYTHONDONTWRITEBYTECODE=1 (or a read-only install) and a process.py
    changed since its .pyc was written. Importing it compiles the new source, but the
    supervisor was started on the stale .pyc, an older supervisor than its caller."""
    folder = tmp_path / "mod"
    folder.mkdir()
    source = folder / "process.py"
    real = Path(process.__file__).read_text()
    old = real.replace('STATUS_PREFIX = "grinta-supervisor"', 'STATUS_PREFIX = "old-supervisor"')
    assert old != real
    source.write_text(old)
    py_compile.compile(str(source), cfile=cache_from_source(str(source)), doraise=True)
    source.write_text(real)
    os.utime(source, (time.time() + 5, time.time() + 5))
    check = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(folder)!r})
        import process
        result = process.run_command("echo hi", {str(tmp_path)!r}, dict(os.environ), 20, 1000)
        print(result.exit_code, result.problem)
        """
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [PYTHON, "-c", check], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.stdout.split()[:1] == ["0"], done.stdout + done.stderr


# -- secrets: credentials that hide in values --------------------------------------------

TOKEN = "Zx81kQ9vLm2pR7tYw4"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FEED_URL", f"https://api.example.com/v1/feed?format=json&api_key={TOKEN}"),
        ("WEBHOOK", f"https://hooks.example.com/in?token={TOKEN}"),
        ("S3_LINK", f"https://b.s3.amazonaws.com/o?X-Amz-Signature={TOKEN}&X-Amz-Expires=60"),
        ("DB_URL", f"jdbc:postgresql://bob:{TOKEN}@db:5432/app"),
        ("ConnectionStrings__Default", f"Server=db;User Id=bob;Password={TOKEN};"),
        ("CI_JOB_JWT", f"eyJhbGciOiJIUzI1NiJ9.{TOKEN}"),
    ],
)
def test_credentials_inside_values_are_secret(name, value):
    """Attack (an accidental leak): a token in a URL's query, a JDBC URL's password, a
    connection string's Password=, a CI job's JWT, in variables with innocent names. They
    reached every command's environment and were not redacted."""
    assert is_secret_variable(name, value)
    assert name not in command_environment({name: value, "HOME": "/home/u"})
    secrets = Secrets.from_env({name: value})
    printed = f"GET /v1/feed?api_key={TOKEN} 200\nconnecting with {value}\n"
    assert TOKEN not in secrets.redact(printed)
    assert REDACTED in secrets.redact(printed)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PIP_INDEX_URL", "https://pypi.org/simple?page=2&sort=name"),
        ("LS_COLORS", "rs=0:di=01;34:ln=01;36:*.key=01;31:*.pem=01;31"),
        ("JAVA_TOOL_OPTIONS", "-Dfile.encoding=UTF-8"),
        ("SEARCH_URL", "https://example.com/?q=token&key=short"),
    ],
)
def test_ordinary_settings_in_values_stay(name, value):
    """Careless over-reach: settings whose names or values are not secret keep the variable
    in the command's environment."""
    assert not is_secret_variable(name, value)
    assert command_environment({name: value}) == {name: value}


def test_a_token_in_a_url_does_not_reach_commands(tmp_path, monkeypatch):
    """Attack: `run` prints the environment; a feed URL carrying its api_key was in it."""
    monkeypatch.setenv("FEED_URL", f"https://api.example.com/feed?api_key={TOKEN}")
    obs = Runtime(tmp_path).call("run", {"command": 'env; echo "[$FEED_URL]"'})
    assert obs.ok and "[]" in obs.output
    assert TOKEN not in obs.output


# -- paths ----------------------------------------------------------------------------------


def test_a_workspace_opened_through_a_link_takes_absolute_paths_through_it(tmp_path):
    """Careless user: the workspace is opened as ``~/proj``, a link to ``/data/proj``. An
    absolute path through that link (the one the user typed) was refused as outside the
    workspace; it is inside, and a `..` out of it still is not."""
    real = tmp_path / "data" / "proj"
    real.mkdir(parents=True)
    (real / "a.py").write_text("x = 1\n")
    (tmp_path / "outside.py").write_text("y = 1\n")
    link = tmp_path / "proj"
    link.symlink_to(real)
    rt = Runtime(link)
    read = rt.call("read", {"path": f"{link}/a.py"})
    assert read.ok and "x = 1" in read.output
    edit = rt.call(
        "replace_string", {"path": f"{link}/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert edit.ok, edit.error
    assert (real / "a.py").read_text() == "x = 2\n"
    escape = rt.propose("read", {"path": f"{link}/../outside.py"})
    assert escape.error is not None and escape.error.code == "PATH_OUTSIDE_WORKSPACE"
    git = rt.propose("create", {"path": f"{link}/.git/hooks/pre-commit", "content": "x\n"})
    assert git.error is not None and git.error.code == "PATH_FORBIDDEN"


def test_a_link_planted_where_a_new_file_goes_is_not_written_through(tmp_path):
    """Attack (TOCTOU): between propose and commit of a create, a `run` command puts a link
    to a file outside at the target path."""
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    outside.write_text("keep\n")
    rt = Runtime(ws)
    p = rt.propose("create", {"path": "new.txt", "content": "hello\n"})
    assert rt.call("run", {"command": f"ln -s {outside} new.txt"}).ok
    obs = rt.commit(p)
    assert obs.error is not None and obs.error.code == "STALE_FILE"
    assert outside.read_text() == "keep\n" and (ws / "new.txt").is_symlink()


def test_a_folder_swapped_for_a_link_by_a_command_is_not_written_through(tmp_path):
    """Attack (TOCTOU): a staged edit's folder is swapped by a `run` command for a link to a
    folder outside holding the same bytes, so the hash check alone would pass."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (ws / "sub" / "a.py").write_text("x = 1\n")
    (outside / "a.py").write_text("x = 1\n")
    rt = Runtime(ws)
    p = rt.propose(
        "replace_string", {"path": "sub/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert p.ok
    assert rt.call("run", {"command": f"mv sub sub.old && ln -s {outside} sub"}).ok
    obs = rt.commit(p)
    assert obs.error is not None and obs.error.code == "STALE_FILE"
    assert (outside / "a.py").read_text() == "x = 1\n"
    assert sorted(os.listdir(outside)) == ["a.py"]


def test_a_hard_link_to_a_file_outside_is_replaced_not_written_through(tmp_path):
    """Attack: a command hard-links a file from outside into the workspace (same bytes, same
    inode); an edit of the link must replace the link and leave the outside file alone."""
    ws, outside = tmp_path / "ws", tmp_path / "rc"
    ws.mkdir()
    outside.write_text("alias ls=ls\n")
    rt = Runtime(ws)
    assert rt.call("run", {"command": f"ln {outside} rc"}).ok
    obs = rt.call("replace_string", {"path": "rc", "old_string": "ls=ls", "new_string": "ls=rm"})
    assert obs.ok, obs.error
    assert outside.read_text() == "alias ls=ls\n"
    assert (ws / "rc").read_text() == "alias ls=rm\n"
    assert rt.undo().ok and (ws / "rc").read_text() == "alias ls=ls\n"


# -- two writers on one folder --------------------------------------------------------------


def _pair(ws: Path) -> tuple[str, str]:
    return (ws / "a.txt").read_text(), (ws / "b.txt").read_text()


def _both(old: str, new: str) -> dict[str, object]:
    return {
        "edits": [
            {"path": "a.txt", "old_string": old, "new_string": new},
            {"path": "b.txt", "old_string": old, "new_string": new},
        ]
    }


def test_two_runtimes_committing_at_once_never_interleave(tmp_path):
    """Race: two Runtimes on one folder commit two-file edits staged against the same bytes at
    the same moment, many times; one wins each round, the other is STALE_FILE, and the two
    files always end equal (all of one commit, never half of each)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("v0\n")
    runtimes = [Runtime(ws), Runtime(ws)]
    for round_ in range(15):
        current = _pair(ws)[0].strip()
        proposals = [
            rt.propose("multiedit", _both(current, f"r{round_}-{i}"))
            for i, rt in enumerate(runtimes)
        ]
        gate = threading.Barrier(2)
        results: list[object] = [None, None]

        def go(i: int, proposals=proposals, gate=gate, results=results) -> None:
            gate.wait()
            results[i] = runtimes[i].commit(proposals[i])

        threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        codes = sorted("ok" if r.ok else r.error.code for r in results)  # type: ignore[attr-defined]
        assert codes == ["STALE_FILE", "ok"], codes
        a, b = _pair(ws)
        assert a == b and a.startswith(f"r{round_}-")


CHILD = """
import sys
from grinta_jupyter import Runtime
rt = Runtime(sys.argv[1])
i = 0
while True:
    i += 1
    current = open(sys.argv[1] + "/a.txt").read().strip()
    edits = [{"path": p, "old_string": current, "new_string": f"v{i:07d}"} for p in ("a.txt", "b.txt")]
    obs = rt.commit(rt.propose("multiedit", {"edits": edits}))
    assert obs.ok, obs.error
    print(i, flush=True)
"""


@linux
def test_a_writer_killed_mid_commit_leaves_all_old_or_all_new(tmp_path):
    """Fault: a process committing two-file edits in a loop is killed (SIGKILL) at a random
    moment; the next Runtime recovers, and both files hold the same version."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("v0000000\n")
    for _ in range(3):
        child = subprocess.Popen(
            [PYTHON, "-c", CHILD, str(ws)],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).parent.parent,
        )
        try:
            assert child.stdout is not None
            for _ in range(3):  # it commits
                assert child.stdout.readline()
            time.sleep(random.uniform(0, 0.05))
        finally:
            child.kill()
            child.wait()
            if child.stdout is not None:
                child.stdout.close()
        Runtime(ws)  # recovers
        a, b = _pair(ws)
        assert a == b, (a, b)
        assert os.listdir(ws / ".grinta" / "journal") == []
        assert sorted(os.listdir(ws)) == [".grinta", "a.txt", "b.txt"]


def test_undo_after_a_kill_restores_the_version_before(tmp_path):
    """Fault then careless undo: after recovery the last commit is undone byte for byte in
    both files, whichever side of the decision the kill landed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("v0000000\n")
    child = subprocess.Popen(
        [PYTHON, "-c", CHILD, str(ws)], stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent
    )
    try:
        assert child.stdout is not None
        for _ in range(2):
            assert child.stdout.readline()
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    rt = Runtime(ws)
    now = _pair(ws)
    assert now[0] == now[1]
    assert rt.undo().ok
    a, b = _pair(ws)
    assert a == b and a < now[0]
