"""Attacks on the notebook front end: magic lines a careless user types, and an undo the log
cannot take.

IPython's own shell with grinta loaded, real litellm against the local OpenAI-compatible
server (tests/openai_server.py); manual mode, since that shell runs no event loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.models import ScriptedModel
from grinta_jupyter.jupyter import controller
from grinta_jupyter.jupyter.magics import parse_start
from tests.conftest import served_grinta_shell
from tests.openai_server import OpenAIServer, tool_call, tool_reply


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


@pytest.fixture
def ip(tmp_path, monkeypatch, openai_server: OpenAIServer):
    monkeypatch.chdir(tmp_path)
    yield from served_grinta_shell(monkeypatch, openai_server.url)


def magic(ip, line: str) -> None:
    ip.run_line_magic("grinta", line)


def waiting_view(ip, openai_server: OpenAIServer, root: Path):
    """A manual session in ``root`` whose step 1 (a.py's x = 1 -> x = 2) waits."""
    openai_server.queue(
        tool_reply(
            tool_call(
                "replace_string", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
            )
        )
    )
    magic(ip, f"--manual --root {root} change x")
    magic(ip, "step")
    view = controller.current_view()
    assert view is not None and view.session.waiting
    return view


@pytest.mark.parametrize(
    "line",
    [
        "--root {root} resume",  # meant: %grinta resume --root ROOT
        "--manual step",
        "--auto approve",
        "--root {root} Stop",
    ],
)
def test_options_before_a_subcommand_word_start_no_session(ip, ws, openai_server, capsys, line):
    """Attack: `%grinta --root proj resume` (resume's options put first) was taken as the task
    "resume": the waiting session was stopped ("replaced by a new session") and a new one
    asked the model to "resume"; `%grinta --auto approve` started an auto session the same
    way."""
    view = waiting_view(ip, openai_server, ws)
    asked = len(openai_server.requests)
    capsys.readouterr()

    magic(ip, line.format(root=ws))

    out = capsys.readouterr().out
    assert "nothing was started" in out and "goes after --" in out
    assert controller.current_view() is view
    assert view.session.waiting and not view.session.done
    assert len(openai_server.requests) == asked


def test_a_task_that_starts_with_a_subcommand_word_after_dashes_or_quoted_is_taken():
    """Guard: the ways the docs give for such a task still start it."""
    assert parse_start("--auto -- stop the server crashing", {})[0] == "stop the server crashing"
    assert parse_start('--auto "stop the server crashing"', {})[0] == "stop the server crashing"
    assert parse_start("--manual fix the step counter", {})[0] == "fix the step counter"


@pytest.mark.parametrize("line", ["explain --a", "--au fix the parser", "fix it --man"])
def test_an_abbreviated_option_is_refused_not_taken(ip, capsys, line):
    """Attack: argparse took `--a` for `--auto` (and `--man` for `--manual`): `%grinta explain
    --a` started a session that approved every write without asking."""
    magic(ip, line)

    assert "unknown option" in capsys.readouterr().out
    assert controller.current() is None


def test_undo_the_log_cannot_take_is_one_line_and_restores_nothing(ip, ws, openai_server, capsys):
    """Attack: the session ended here and was resumed elsewhere (another kernel holds its log
    now); `%grinta undo` here raised LogBusy as a traceback out of the magic instead of the
    one-line refusal every other refused command gives."""
    view = waiting_view(ip, openai_server, ws)
    magic(ip, "approve")
    assert (ws / "a.py").read_text() == "x = 2\n"
    magic(ip, "stop")
    assert view.session.done and view.session.log_path is not None
    elsewhere = Session.resume(view.session.log_path, model=ScriptedModel([]), root=ws)
    try:
        capsys.readouterr()
        magic(ip, "undo")  # raised before
        out = capsys.readouterr().out
    finally:
        elsewhere.stop()
    assert out.startswith("%grinta: not undone:")
    assert len(out.strip().splitlines()) == 1
    assert (ws / "a.py").read_text() == "x = 2\n"
