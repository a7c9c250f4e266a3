"""The CLI for sessions that last, end to end: the installed ``grinta`` in a subprocess, the
real litellm client against the local OpenAI-compatible server, real files.

run (rules files shown, ``m TEXT`` at the prompt), run --continue, resume after the process
was killed at the prompt, replay of the continued session on a rebuilt workspace, clean; and
every way a log or a workspace can be wrong, each one line, status 2, the log untouched.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, tool_call, tool_reply

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("grinta")
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "grinta_jupyter.cli"]
DROPPED = (
    "OPENAI_API_KEY",
    "GRINTA_API_KEY",
    "GRINTA_API_BASE",
    "GRINTA_MODEL",
    "GRINTA_ROOT",
    "VISUAL",
    "EDITOR",
    "GRINTA_DEBUG",
)
CORE = "def add(a, b):\n    return a - b\n"
TEST = "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
FIX = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return a + b"}
TESTS = "python -m pytest -q tests"


def env(server: OpenAIServer | None = None, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in DROPPED}
    if server is not None:
        base |= {
            "GRINTA_MODEL": "openai/test",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": "sk-test",
        }
    return base | extra


def grinta(
    *args: str, answers: str = "", server: OpenAIServer | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, *args],
        input=answers,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env(server),
        timeout=timeout,
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, (done.returncode, done.stderr)
    assert lines[0].startswith("grinta: error: "), lines[0]
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text(CORE)
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(TEST)
    (root / "AGENTS.md").write_text("Keep changes small. Run the tests before you finish.\n")
    return root


def log_of(root: Path) -> Path:
    (log,) = (root / ".grinta" / "sessions").glob("*.jsonl")
    return log


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def user_texts(messages: list[dict]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "user"]


def fixed_session(project: Path, server: OpenAIServer) -> Path:
    """``grinta run`` on ``project``: read the test, fix (said to the model first), test, finish."""
    server.queue(
        tool_reply(tool_call("read", {"path": "tests/test_core.py"}, id="c1"), text="Looking."),
        tool_reply(tool_call("replace_string", FIX, id="c2")),
        tool_reply(tool_call("run", {"command": TESTS}, id="c3")),
        tool_reply(tool_call("finish", {"summary": "add adds"}, id="c4")),
    )
    done = grinta(
        "run",
        "fix add",
        "--root",
        str(project),
        answers="m keep the fix to one line\ny\ny\n",
        server=server,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rules: AGENTS.md" in done.stdout
    assert "said: the model reads it at its next turn" in done.stdout
    return log_of(project)


# -- run, continue, replay, clean ----------------------------------------------------------------


def test_say_continue_replay_and_clean_through_the_real_client(project, tmp_path):
    with OpenAIServer() as server:
        log = fixed_session(project, server)
        # The words said at the prompt reached the next request, after the tool result.
        third = server.requests[2].body["messages"]
        assert third[-1] == {"role": "user", "content": "keep the fix to one line"}
        assert (project / "pkg" / "core.py").read_text() == CORE.replace("a - b", "a + b")
        assert "Keep changes small" in server.requests[0].body["messages"][0]["content"]

        server.queue(
            tool_reply(tool_call("create", {"path": "pkg/mul.py", "content": "MUL = 1\n"})),
            tool_reply(tool_call("run", {"command": TESTS})),
            tool_reply(tool_call("finish", {"summary": "added mul"})),
        )
        done = grinta(
            "run", "--continue", str(log), "add a mul module", answers="y\ny\n", server=server
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"task 2: add a mul module\nworkspace: {project}\nlog: {log}" in done.stdout
        assert "rules: AGENTS.md" in done.stdout
        first_of_task_2 = server.requests[4].body["messages"]
        said = user_texts(first_of_task_2)
        assert said[0] == "fix add" and any("add a mul module" in t for t in said[1:])
        assert "keep the fix to one line" in said, "the context is carried over"
        assert server.pending == 0

    assert log_of(project) == log, "the same session, the same log"
    kinds = [e["type"] for e in events(log)]
    assert kinds.count("task_start") == 1 and kinds.count("session_end") == 2
    assert (project / "pkg" / "mul.py").read_text() == "MUL = 1\n"

    # The project moves on; the replay rebuilds what the session found.
    shutil.rmtree(project / "tests")
    done = grinta("replay", str(log))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "branch 0, 2 task(s)" in done.stdout
    assert "replayed 7 steps: every proposal identical" in done.stdout

    # Clean: the one session goes, and its blobs with it (aged: a young blob is spared).
    blobs = [p for p in (project / ".grinta" / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 2  # tests/test_core.py and pkg/core.py (pkg/mul.py did not exist)
    then = time.time() - 3600
    for blob in blobs:
        os.utime(blob, (then, then))
    done = grinta("clean", "--root", str(project), "--keep", "1")
    assert done.returncode == 0 and "deleted 0 session log(s)" in done.stdout
    done = grinta("clean", "--root", str(project), "--keep", "0", "--dry-run")
    assert f"would delete {log}" in done.stdout and log.exists()
    done = grinta("clean", "--root", str(project), "--keep", "0")
    assert done.returncode == 0, done.stderr
    assert "deleted 1 session log(s) and 2 snapshot blob(s)" in done.stdout
    assert not log.exists()
    assert not [p for p in (project / ".grinta" / "blobs").rglob("*") if p.is_file()]


# -- resume after the process died at the prompt ----------------------------------------------


def killed_at_the_prompt(project: Path, server: OpenAIServer) -> Path:
    """``grinta run`` killed (SIGKILL) while it asks about the fix: a log whose task never ended."""
    server.queue(tool_reply(tool_call("replace_string", FIX, id="c1")))
    child = subprocess.Popen(
        [*ENTRY, "run", "fix add", "--root", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(server),
        cwd=REPO,
    )
    assert child.stdout is not None
    seen = b""
    deadline = time.monotonic() + 90
    while b"approve?" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([child.stdout], [], [], 1)
        if ready:
            chunk = os.read(child.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    assert b"approve?" in seen, seen
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    return log_of(project)


def test_resume_after_a_kill_restages_against_todays_files_and_goes_on(project):
    with OpenAIServer() as server:
        log = killed_at_the_prompt(project, server)
        assert (project / "pkg" / "core.py").read_text() == CORE, "nothing was committed"
        # Someone edits the file meanwhile: the proposal is stale, and says so.
        (project / "pkg" / "core.py").write_text(CORE + "# edited meanwhile\n")
        server.queue(
            tool_reply(tool_call("run", {"command": TESTS})),
            tool_reply(tool_call("finish", {"summary": "add adds"})),
        )
        # Without LOG: the workspace's most recent session whose task did not end.
        done = grinta("resume", "--root", str(project), answers="y\ny\n", server=server)

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"log: {log}" in done.stdout and "rules: AGENTS.md" in done.stdout
    assert "resumed after step 0; 1 call(s) staged again" in done.stdout
    assert "staged again on resume, and the files changed since" in done.stdout
    assert (project / "pkg" / "core.py").read_text() == (
        CORE.replace("a - b", "a + b") + "# edited meanwhile\n"
    )
    kinds = [e["type"] for e in events(log)]
    assert kinds.count("resume") == 1 and kinds[-1] == "session_end"
    assert next(e for e in events(log) if e["type"] == "tool_proposed" and e["restaged"])["stale"]

    done = grinta("resume", str(log))
    assert "its task ended (finished); give it a next task: grinta run --continue" in one_line(done)


# -- the prompt ------------------------------------------------------------------------------------


def test_saying_at_the_prompt_never_decides(project):
    with OpenAIServer() as server:
        server.queue(tool_reply(tool_call("replace_string", FIX, id="c1")))
        done = grinta(
            "run",
            "fix add",
            "--root",
            str(project),
            answers="say\n  \nmhello\nsay\nfirst words\nM second words\nm\n",
            server=server,
        )
    assert done.stdout.count("nothing was said") == 1
    assert done.stdout.count("said: the model reads it") == 2
    assert "m TEXT to tell the model something first" in done.stdout  # "mhello" is unclear
    said = [e["text"] for e in events(log_of(project)) if e["type"] == "user_message"]
    assert said == ["first words", "second words"]
    decisions = [e["decision"] for e in events(log_of(project)) if e["type"] == "user_decision"]
    assert decisions == ["veto"], "the end of input at the message prompt vetoes, never approves"
    assert (project / "pkg" / "core.py").read_text() == CORE


# -- what is refused ------------------------------------------------------------------------------


@pytest.fixture
def bad_logs(tmp_path: Path) -> dict[str, Path]:
    made = {"folder": tmp_path / "folder.jsonl", "fifo": tmp_path / "fifo.jsonl"}
    made["folder"].mkdir()
    os.mkfifo(made["fifo"])
    made["missing"] = tmp_path / "missing.jsonl"
    made["garbage"] = tmp_path / "garbage.jsonl"
    made["garbage"].write_text("not json\nat all\n")
    return made


@pytest.mark.parametrize("command", ["resume", "continue", "replay"])
def test_a_log_that_is_not_one_is_one_line_naming_it(bad_logs, command):
    for name, path in bad_logs.items():
        if command == "continue":
            args = ["run", "--continue", str(path), "next"]
        else:
            args = [command, str(path)]
        done = grinta(*args, timeout=60)
        assert str(path) in one_line(done), name


def test_logs_in_the_wrong_state_or_place_are_refused_untouched(project, tmp_path):
    with OpenAIServer() as server:
        finished = fixed_session(project, server)
    before = finished.read_bytes()

    # No model configured: say which one the session used.
    done = grinta("run", "--continue", str(finished), "more")
    assert "this session used 'openai/test': pass --model" in one_line(done)

    with OpenAIServer() as server:
        # A log copied into another workspace: which workspace is meant is not guessed.
        other = tmp_path / "other"
        (other / ".grinta" / "sessions").mkdir(parents=True)
        copied = other / ".grinta" / "sessions" / finished.name
        shutil.copy(finished, copied)
        done = grinta("run", "--continue", str(copied), "more", server=server)
        line = one_line(done)
        assert f"lies in the workspace {other}" in line and f"ran in {project}" in line
        # A log outside any workspace: it does not choose where the session writes.
        loose = tmp_path / "loose.jsonl"
        shutil.copy(finished, loose)
        done = grinta("run", "--continue", str(loose), "more", server=server)
        line = one_line(done)
        assert "is not in a workspace's sessions folder" in line and "pass --root" in line
        # --root to a folder that is not there.
        done = grinta("run", "--continue", str(loose), "more", "--root", str(tmp_path / "gone"))
        assert "does not exist" in one_line(done)
        # Resuming what ended; continuing what did not; a branch that is not there.
        assert "its task ended" in one_line(grinta("resume", str(finished), server=server))
        assert "no branch 2: it was never rewound" in one_line(
            grinta("replay", str(finished), "--branch", "2")
        )
        assert server.requests == [], "nothing reached the model"
    assert finished.read_bytes() == before, "the log is untouched"


def test_continuing_an_unfinished_session_and_resuming_nothing_are_refused(project, tmp_path):
    with OpenAIServer() as server:
        log = killed_at_the_prompt(project, server)
        before = log.read_bytes()
        done = grinta("run", "--continue", str(log), "more", server=server)
        assert f"its task has not ended; go on with it first (grinta resume {log})" in one_line(
            done
        )
        assert log.read_bytes() == before
        empty = tmp_path / "empty"
        empty.mkdir()
        assert "no session of" in one_line(grinta("resume", "--root", str(empty), server=server))


def test_a_tampered_snapshot_is_refused_by_replay(project):
    with OpenAIServer() as server:
        log = fixed_session(project, server)
    snap = next(e for e in events(log) if e["type"] == "snapshot" and e["path"] == "pkg/core.py")
    blob = project / ".grinta" / "blobs" / snap["sha256"][:2] / snap["sha256"][2:]
    blob.write_bytes(blob.read_bytes().replace(b"a - b", b"a * b"))
    line = one_line(grinta("replay", str(log)))
    assert "pkg/core.py (its snapshot" in line and "is damaged" in line


def test_clean_refuses_a_symlinked_state_folder(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".grinta").mkdir()
    (project / ".grinta" / "blobs").symlink_to(outside)
    line = one_line(grinta("clean", "--root", str(project), "--keep", "0"))
    assert "symbolic link" in line


def test_replay_of_a_rewound_session_takes_a_branch(project):
    from grinta_jupyter.agent.models import ScriptedModel, call, reply
    from grinta_jupyter.agent.session import Session
    from tests.conftest import drive

    model = ScriptedModel(
        [
            reply("", call("read", path="tests/test_core.py")),
            reply("", call("replace_string", **FIX)),
            reply("", call("create", path="pkg/mul.py", content="MUL = 1\n")),
            reply("", call("run", command=TESTS)),
            reply("", call("finish", summary="fixed, and mul")),
            reply("", call("run", command=TESTS)),  # after the rewind to step 2
            reply("", call("finish", summary="fixed")),
        ]
    )
    session = drive(Session("fix add", model=model, root=project), lambda s: s.approve())
    session.rewind(2)
    drive(session, lambda s: s.approve())
    assert session.summary == "fixed"

    latest = grinta("replay", str(session.log_path))
    assert latest.returncode == 0, latest.stdout + latest.stderr
    assert "branch 1, 1 task(s)" in latest.stdout
    assert "replayed 4 steps: every proposal identical" in latest.stdout
    first = grinta("replay", str(session.log_path), "--branch", "0")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "replayed 5 steps: every proposal identical" in first.stdout
    assert "has no branch 4 (its branches: 0, 1)" in one_line(
        grinta("replay", str(session.log_path), "--branch", "4")
    )
    assert "--branch: must be 0 or more" in one_line(
        grinta("replay", str(session.log_path), "--branch", "-1")
    )
