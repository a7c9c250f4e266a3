"""Attacks on the notebook front end: a session replaced or stopped, a resume that fails.

IPython's own shell with grinta loaded, real litellm against the local OpenAI-compatible
server (tests/openai_server.py); manual mode, since that shell runs no event loop.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import grinta_jupyter
from grinta_jupyter.jupyter import controller
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


def edit(call_id: str, old: str, new: str):
    return tool_reply(
        tool_call("replace_string", {"path": "a.py", "old_string": old, "new_string": new}, call_id)
    )


def waiting_view(ip, openai_server: OpenAIServer, root: Path, new: str):
    """A manual session in ``root`` whose step 1 (a.py's x = 1 -> x = ``new``) waits."""
    openai_server.queue(edit("c1", "x = 1", f"x = {new}"))
    magic(ip, f"--manual --root {root} change x")
    magic(ip, "step")
    view = controller.current_view()
    assert view is not None and view.panel is not None
    assert view.session.pending is not None and view.panel.cards[1].pending
    return view


def shows_no_wait(view) -> bool:
    panel = view.panel
    return (
        not any(card.pending for card in panel.cards.values())
        and panel.state != "waiting for you"
        and panel.stop_button.disabled
    )


def test_a_resume_that_cannot_be_done_leaves_the_running_session_running(
    ip, ws, tmp_path, openai_server, capsys
):
    """Attack: a session waits in ws; %grinta resume LOG names a log whose workspace is gone.
    It was refused, but only after the running session had been stopped ("replaced by a
    resumed session") for a session that never came."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.py").write_text("x = 1\n")
    gone = waiting_view(ip, openai_server, other, "5").session
    log = tmp_path / "gone.jsonl"
    shutil.copy(gone.log_path, log)
    view = waiting_view(ip, openai_server, ws, "2")
    shutil.rmtree(other)
    capsys.readouterr()

    magic(ip, f"resume --manual {log}")
    out = capsys.readouterr().out
    assert out.startswith(f"%grinta: cannot resume {log}"), out
    assert grinta_jupyter.current() is view.session
    assert not view.session.done and view.session.pending is not None, view.session.end_reason
    magic(ip, "approve 1")
    assert (ws / "a.py").read_text() == "x = 2\n"


def test_stop_in_manual_mode_takes_the_approve_bar_off_the_panel(ip, ws, openai_server, capsys):
    """Attack: %grinta stop while step 1 waits, in manual mode. The session ended, but its
    panel went on showing step 1 waiting for you, its Approve bar and an enabled Stop."""
    view = waiting_view(ip, openai_server, ws, "2")
    magic(ip, "stop")
    assert view.session.done
    assert shows_no_wait(view)
    assert view.panel.summary.children, "the panel shows how the session ended"


def test_the_panels_stop_button_in_manual_mode_takes_the_approve_bar_off(ip, ws, openai_server):
    view = waiting_view(ip, openai_server, ws, "2")
    view.panel.stop_button.click()
    assert view.session.done
    assert shows_no_wait(view)


def test_a_replaced_manual_session_offers_no_approve_on_its_old_cards(
    ip, ws, openai_server, capsys
):
    """Attack: a second %grinta while the first session's step 1 waits (manual mode). The
    first was stopped, yet its panel still offered Approve on a card nothing would commit."""
    old = waiting_view(ip, openai_server, ws, "2")
    new = waiting_view(ip, openai_server, ws, "3")
    assert old.session.done and old.session.end_reason == "replaced by a new session"
    assert shows_no_wait(old)
    old.panel.cards[1].receive({"event": "approve"})
    assert (ws / "a.py").read_text() == "x = 1\n"
    assert new.session.pending is not None and new.session.pending.number == 1
