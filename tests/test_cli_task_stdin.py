"""``grinta run -``: the task read from standard input (``echo TASK | grinta run -``).

Before, ``-`` was the task itself: the model was asked to do "-". Now standard input is read
to its end as the task; with ``--auto`` nothing more is needed, and without it the
questions are answered from the terminal, or, with none (a pipe in CI), the run is refused
up front with one line saying to add ``--auto``. The installed ``grinta`` in a subprocess,
real litellm against the local OpenAI-compatible server.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_cli_lasting import CORE, ENTRY, REPO, TEST, TESTS, env, events, log_of, one_line

TASK = "fix add in pkg/core.py\nso that the test passes"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text(CORE)
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(TEST)
    return root


def _run(*args: str, stdin: str, server: OpenAIServer | None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env(server),
        timeout=120,
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def test_the_task_is_read_from_standard_input(project: Path, openai_server: OpenAIServer) -> None:
    openai_server.queue(
        tool_reply(
            tool_call(
                "replace_string",
                {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return a + b"},
                id="c1",
            )
        ),
        tool_reply(tool_call("run", {"command": TESTS}, id="c2")),
        tool_reply(tool_call("finish", {"summary": "add adds"}, id="c3")),
    )
    done = _run("run", "-", "--auto", "--root", str(project), stdin=TASK, server=openai_server)
    assert done.returncode == 0, done.stderr + done.stdout
    first = openai_server.requests[0].body["messages"]
    said = [str(m["content"]) for m in first if m["role"] == "user"]
    assert any(TASK in text for text in said), said
    assert not any(text.strip() == "-" for text in said)
    started = next(e for e in events(log_of(project)) if e["type"] == "session_start")
    assert started["task"] == TASK
    assert (project / "pkg" / "core.py").read_text().endswith("return a + b\n")


def test_without_auto_and_without_a_terminal_it_is_refused_up_front(
    project: Path, openai_server: OpenAIServer
) -> None:
    done = _run("run", "-", "--root", str(project), stdin=TASK, server=openai_server)
    assert "--auto" in one_line(done)
    assert openai_server.requests == []
    assert not (project / ".grinta" / "sessions").exists()


def test_an_empty_or_too_long_task_from_standard_input_is_refused(
    project: Path, openai_server: OpenAIServer
) -> None:
    empty = _run("run", "-", "--auto", "--root", str(project), stdin=" \n", server=openai_server)
    assert "empty" in one_line(empty)
    long = _run(
        "run", "-", "--auto", "--root", str(project), stdin="x" * 50_000, server=openai_server
    )
    assert "too long" in one_line(long)
    assert openai_server.requests == []


def test_a_task_that_is_a_dash_among_words_is_a_task(project: Path) -> None:
    """Only the argument ``-`` alone reads standard input."""
    done = _run("run", "- fix it -", "--auto", "--root", str(project), stdin="", server=None)
    # No model is configured: the task itself was accepted, the model was what was missing.
    assert "model" in one_line(done).lower()
