"""``grinta run --model NAME`` with a bare name (no ``provider/``): litellm is asked whether
any provider serves it before the session starts, so a typo (``gtp-4o``) is one line, status
2, and no session log, instead of a session that starts, loads litellm and ends in
``UNKNOWN_MODEL`` with a log left behind. A bare name litellm knows runs as before (here on
the local OpenAI-compatible server).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_cli_lasting import ENTRY, REPO, env, one_line


def _run(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, "run", "say hello", "--auto", "--root", str(root), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env(None, **extra),
        timeout=120,
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def test_a_bare_name_no_provider_serves_is_refused_before_the_session(tmp_path: Path) -> None:
    done = _run(tmp_path, "--model", "gtp-4o")
    line = one_line(done)
    assert "UNKNOWN_MODEL" in line and "gtp-4o" in line
    assert not (tmp_path / ".grinta").exists(), "a session log was made"


def test_a_bare_name_litellm_knows_runs(tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.queue(tool_reply(tool_call("finish", {"summary": "said hello"})))
    done = _run(
        tmp_path,
        "--model",
        "gpt-4o-mini",
        GRINTA_API_BASE=openai_server.url,
        OPENAI_API_KEY="sk-test",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(openai_server.requests) == 1
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"
