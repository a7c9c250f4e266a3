"""Secrets in forms and lifetimes the first attacks did not try: escaped for HTML, in JSON
made HTML-safe (Go, ``docker inspect``), percent-encoded in lowercase, and added to the
environment after a session started (docs/guarantees.md, "Secrets stay secret")."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime.secrets import REDACTED, Secrets, StreamRedactor
from tests.conftest import drive

# Characters HTML and HTML-safe JSON escape: & < > ' "
PASSWORD = "Tr0ub&dor<3>'x\"-Zq8Wm"


def markupsafe_escape(value: str) -> str:
    """How Jinja (markupsafe) escapes text for HTML."""
    for char, entity in [("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("'", "&#39;")]:
        value = value.replace(char, entity)
    return value.replace('"', "&#34;")


def secrets_of(value: str) -> Secrets:
    return Secrets.from_env({"DB_PASSWORD": value})


@pytest.mark.parametrize(
    "printed",
    [
        html.escape(PASSWORD),  # a DataFrame's text/html, a report page
        html.escape(PASSWORD, quote=False),
        str(markupsafe_escape(PASSWORD)),  # Jinja's templates: &#39; and &#34;
        json.dumps(PASSWORD)  # Go's encoding/json, docker inspect: HTML-safe JSON
        .replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e"),
    ],
)
def test_a_secret_escaped_for_html_is_redacted(printed: str) -> None:
    out = secrets_of(PASSWORD).redact(f"<td>{printed}</td>")
    assert out == f"<td>{REDACTED}</td>" or (REDACTED in out and "Zq8Wm" not in out), out
    assert "Tr0ub" not in out


def test_a_secret_percent_encoded_in_lowercase_is_redacted() -> None:
    secret = "p@ss:w/rd-Zq8Wm"
    out = secrets_of(secret).redact("https://u:p%40ss%3aw%2frd-Zq8Wm@db.example/app")
    assert out == f"https://u:{REDACTED}@db.example/app"


def test_an_html_escaped_secret_split_across_stream_pieces_never_shows() -> None:
    printed = html.escape(PASSWORD)
    text = f"the cell shows <td>{printed}</td> in its table"
    secrets = secrets_of(PASSWORD)
    for size in range(1, 9):
        stream = StreamRedactor(secrets)
        out = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size))
        out += stream.end()
        assert out == secrets.redact(text), size
        assert "Tr0ub" not in out and "Zq8Wm" not in out


def test_ordinary_html_around_no_secret_is_kept() -> None:
    text = "<p>Fish &amp; chips &lt;3</p>"
    assert secrets_of(PASSWORD).redact(text) == text


def test_a_secret_set_after_the_session_started_reaches_neither_model_nor_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    late = "Late-Zq8Wm3Lp0Xk-token"
    (root / "settings.ini").write_text(f"[svc]\ntoken = {late}\nregion = eu\n")
    model = ScriptedModel(
        [
            reply("", call("read", path="settings.ini")),
            reply("", call("finish", summary="done")),
        ]
    )
    monkeypatch.delenv("SERVICE_TOKEN", raising=False)
    session = Session("look at the settings", model=model, root=root, policy="auto")
    # The user exports a key in the kernel after the session was made, before it runs.
    monkeypatch.setenv("SERVICE_TOKEN", late)
    drive(session, lambda s: s.approve())
    sent = json.dumps(model.requests, ensure_ascii=False)
    log = session.log_path.read_text()
    for where, text in [("model", sent), ("log", log)]:
        assert late not in text and "Zq8Wm3Lp0Xk" not in text, where
    assert "region = eu" in sent  # the rest of the file is shown


def test_a_key_changed_or_held_after_the_secrets_were_read_is_redacted_old_and_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from grinta_jupyter.runtime import secrets as process

    old, new, kept = "Old-Zq8Wm3Lp0Xk-key", "New-Wm3Lp0Xk9Qa-key", "Held-Lp0Xk9QaZ7-key"
    monkeypatch.setenv("ROTATED_API_KEY", old)
    secrets = Secrets.from_env()
    monkeypatch.setenv("ROTATED_API_KEY", new)  # rotated in the kernel
    monkeypatch.setattr(process, "_held", set())  # this test's held keys only
    process.hold(kept)  # a key pasted in the panel later
    text = f"{old} {new} {kept}"
    assert secrets.redact(text) == f"{REDACTED} {REDACTED} {REDACTED}"
    assert secrets.redact_data({"k": [text]}) == {"k": [f"{REDACTED} {REDACTED} {REDACTED}"]}
    stream = StreamRedactor(secrets)
    assert "".join(stream.feed(c) for c in text) + stream.end() == secrets.redact(text)


def test_a_stream_never_splits_a_word_redacted_whole_where_a_secret_ends_it() -> None:
    # A long key's head runs into a password, and the word ends where the password's
    # quote ends it: redacted whole, the word is hidden from the key's head to its end.
    key = "sk-proj-Abc123XyZ987LongSecretValue0000"
    secrets = Secrets((PASSWORD, key))
    text = f"{key[:24]}{PASSWORD[:-3]}\n"
    whole = secrets.redact(text)
    assert "Tr0ub" not in whole
    for size in range(1, 9):
        stream = StreamRedactor(secrets)
        out = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size))
        assert out + stream.end() == whole, size
