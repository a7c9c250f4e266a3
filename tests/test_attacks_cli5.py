"""The ``grinta`` entry point against settings and standard streams a careless user gives it.

Each test runs the real console entry in a subprocess (against the local
OpenAI-compatible test server where a model is needed) and checks that a bad
setting is one line naming it, status 2, before any session starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, text_reply
from tests.test_cli_hostile import ENTRY, REPO, cli_env, grinta


def only_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("GRINTA_MODEL", "openai/test\nsession ended: finished"),
        ("--model", "openai/te st"),
        ("GRINTA_API_KEY", "sk-te\nst-secret"),
    ],
)
def test_a_model_or_key_with_a_break_inside_is_one_line_before_any_session(
    tmp_path: Path, option: str, value: str
) -> None:
    env = {"GRINTA_MODEL": "openai/test", "GRINTA_API_KEY": "sk-test"}
    flags: tuple[str, ...] = ()
    if option.startswith("--"):
        flags = (option, value)
    else:
        env[option] = value
    with OpenAIServer() as server:
        server.queue(text_reply("done"))
        done = grinta(
            "run",
            "say hi",
            "--root",
            str(tmp_path),
            *flags,
            answers="y\n",
            timeout=60,
            GRINTA_API_BASE=server.url,
            **env,
        )
        assert server.requests == []
    line = only_line(done.stderr)
    assert line.startswith(f"grinta: error: {option}: ") and "no spaces or line breaks" in line
    assert "secret" not in line  # a key is never shown
    assert done.returncode == 2
    assert done.stdout == ""
    assert not (tmp_path / ".grinta").exists()


def test_an_api_base_with_a_line_break_is_one_line_not_an_internal_error() -> None:
    done = grinta(
        "models",
        timeout=60,
        GRINTA_API_BASE="http://user:pw@127.0.0.1:9/v1\nx",
    )
    line = only_line(done.stderr)
    assert line.startswith("grinta: error: GRINTA_API_BASE: "), line
    assert "pw" not in line
    assert done.returncode == 2


@pytest.mark.parametrize("kind", ["file", "under a file"])
def test_a_log_dir_that_cannot_hold_logs_stops_before_the_demo_starts(
    tmp_path: Path, kind: str
) -> None:
    blocker = tmp_path / "logs"
    blocker.write_text("not a folder\n")
    log_dir = blocker if kind == "file" else blocker / "sessions"
    done = grinta(
        "demo", "--root", str(tmp_path / "demo"), answers="y\n" * 8, GRINTA_LOG_DIR=str(log_dir)
    )
    assert only_line(done.stderr).startswith(f"grinta: error: GRINTA_LOG_DIR {log_dir}")
    assert done.returncode == 2
    assert "session ended" not in done.stdout and "grinta metrics" not in done.stdout
    assert not (tmp_path / "demo").exists()  # nothing copied
    assert blocker.read_text() == "not a folder\n"


@pytest.mark.parametrize("command", ["grinta acp", "python -m grinta_jupyter.acp"])
@pytest.mark.parametrize(
    ("stream", "says"),
    [
        ("null input", "standard input is a device"),
        ("closed input", "standard input is closed"),
        ("closed output", "standard output is closed"),
    ],
)
def test_acp_without_a_client_on_its_pipes_is_one_line_never_a_hang(
    stream: str, says: str, command: str
) -> None:
    """`grinta acp </dev/null` printed asyncio's traceback and then waited forever (and
    `python -m grinta_jupyter.acp`, the same agent, did after the CLI had learnt it)."""

    def close_if_asked() -> None:  # in the child, before grinta starts
        if stream == "closed input":
            os.close(0)
        if stream == "closed output":
            os.close(1)

    done = subprocess.run(
        [*ENTRY, "acp"]
        if command == "grinta acp"
        else [sys.executable, "-m", "grinta_jupyter.acp"],
        stdin=subprocess.DEVNULL if stream != "closed output" else subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=close_if_asked,
        cwd=REPO,
        env=cli_env(),
        text=True,
        timeout=30,
    )
    assert "Traceback" not in done.stderr, done.stderr
    line = only_line(done.stderr)
    assert line.startswith(f"grinta acp: {says}"), line
    assert done.returncode == 2
