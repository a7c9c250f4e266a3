"""Editing a call whose arguments hold a secret: every view shows them redacted, so what a
person copies back holds ``[REDACTED]``. Before stop 32 such an edit wrote the mark over the
secret, and the diff, redacted too, showed that line unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime.secrets import Secrets
from tests.conftest import drive

KEY = "Zq8vT3xL9pW2kR7m"
OLD = f'key = "{KEY}"\nmode = 1\n'


def session_on(ws: Path, monkeypatch) -> Session:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    (ws / "config.py").write_text(OLD)
    model = ScriptedModel(
        [
            reply(
                "",
                call(
                    "replace_string",
                    path="config.py",
                    old_string=OLD,
                    new_string=OLD.replace("1", "2"),
                ),
            ),
            reply("", call("finish", summary="done")),
        ]
    )
    return Session("set the mode", model=model, root=ws, policy="ask")


def shown(session: Session) -> dict[str, str]:
    """The pending call's arguments as every view shows them: redacted."""
    assert session.pending is not None
    secrets = Secrets.from_env()
    return json.loads(secrets.redact(session.pending.call.arguments))


def test_an_argument_left_as_shown_keeps_its_secret(ws: Path, monkeypatch):
    session = session_on(ws, monkeypatch)
    edits: list[object] = []

    def decide(s: Session) -> None:
        if not edits:
            args = shown(s)
            assert KEY not in json.dumps(args) and "[REDACTED]" in args["old_string"]
            args["new_string"] = f'key = "{KEY}"\nmode = 3\n'  # typed whole, the key too
            edits.append(s.edit(args))
        else:
            s.approve()

    drive(session, decide)
    proposal = edits[0]
    assert getattr(proposal, "ok", False), getattr(proposal, "error", None)
    assert (ws / "config.py").read_text() == f'key = "{KEY}"\nmode = 3\n'


def test_an_edit_writing_the_mark_over_a_secret_is_refused(ws: Path, monkeypatch):
    session = session_on(ws, monkeypatch)
    edits: list[object] = []

    def decide(s: Session) -> None:
        if not edits:
            args = shown(s)
            args["new_string"] = args["old_string"].replace("1", "3")  # copied from the view
            edits.append(s.edit(args))
        else:
            s.veto("no")

    drive(session, decide)
    error = getattr(edits[0], "error", None)
    assert error is not None and error.code == "INVALID_ARGS" and "[REDACTED]" in error.message
    assert (ws / "config.py").read_text() == OLD


def test_a_mark_the_call_already_held_is_text_like_any_other(ws: Path, monkeypatch):
    # No secret in the call: "[REDACTED]" typed by the person is what they mean.
    (ws / "log.py").write_text("MASK = 'x'\n")
    model = ScriptedModel(
        [
            reply("", call("replace_string", path="log.py", old_string="'x'", new_string="'y'")),
            reply("", call("finish", summary="done")),
        ]
    )
    session = Session("mask", model=model, root=ws, policy="ask")
    edits: list[object] = []

    def decide(s: Session) -> None:
        if not edits:
            edits.append(
                s.edit({"path": "log.py", "old_string": "'x'", "new_string": "'[REDACTED]'"})
            )
        else:
            s.approve()

    drive(session, decide)
    assert (ws / "log.py").read_text() == "MASK = '[REDACTED]'\n"
