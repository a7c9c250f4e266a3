"""A model's streamed text never gives out a piece of a secret, however it is cut or paced.

Each piece of a stream redacted alone lets a secret cut across two pieces through, one
harmless half at a time; the reader joins them. ``StreamRedactor`` keeps back the end of
the text that could be part of a secret still being written. Here: directly, with every cut
of texts made of secrets and pieces of them; and in each place the stream is shown (the
notebook panel's thinking line, the ACP editor with the model pausing mid-secret, the
terminal).
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from acp import text_block

from grinta_jupyter.agent import ModelText, ModelTurn, Session
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.jupyter.panel import SessionPanel
from grinta_jupyter.runtime.secrets import HELD_WORD, REDACTED, Secrets, StreamRedactor
from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_acp import TASK, WAIT, Editor, grinta_acp, workspace
from tests.test_attacks_today2 import PacedModel, chunks, paced  # noqa: F401 (a fixture)
from tests.test_cli_hostile import grinta

SHORT = "Zq8vP2xW9kL4mN7r"  # 16 characters: too short for the partial rules
LONG = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"  # 36: a word with 12 of its ends is one
SPACED = "correct horse 9 battery"  # a pass phrase with spaces in it


def _streamed(secrets: Secrets, pieces: list[str]) -> list[str]:
    stream = StreamRedactor(secrets)
    out = [stream.feed(piece) for piece in pieces]
    return [*out, stream.end()]


def _cuts(text: str, rng: random.Random) -> list[str]:
    points = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 8))))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@pytest.mark.parametrize("secret", [SHORT, LONG, SPACED])
def test_every_cut_in_two_gives_what_the_whole_text_redacted_gives(secret: str) -> None:
    secrets = Secrets((secret,))
    text = f'The key is {secret}, and {secret!r} in JSON is "{secret}".'
    whole = secrets.redact(text)
    assert secret not in whole
    for cut in range(len(text) + 1):
        out = _streamed(secrets, [text[:cut], text[cut:]])
        assert "".join(out) == whole, cut
        assert not any(secret[:4] in piece for piece in out), (cut, out)


def test_a_secret_fed_one_character_at_a_time_is_given_out_only_redacted() -> None:
    secrets = Secrets((SHORT, LONG))
    text = f"first {SHORT} then {LONG}\nend"
    out = _streamed(secrets, list(text))
    assert "".join(out) == secrets.redact(text) == f"first {REDACTED} then {REDACTED}\nend"
    given = "".join(out)
    for secret in (SHORT, LONG):  # not even its first characters went out before it ended
        assert secret[:3] not in given


def test_random_texts_cut_at_random_give_out_no_more_of_a_secret_than_the_whole_does() -> None:
    """Texts of secrets, their pieces from either end, their printed forms and ordinary
    words, cut at random. Joined, the output holds no secret, and no stretch of a long
    secret that the whole text redacted hides (a word ending with its last characters is
    redacted whole, a piece of it before them too). Most often it is the same text."""
    rng = random.Random(1305)
    secrets = Secrets(tuple(sorted((SHORT, LONG, SPACED), key=len, reverse=True)))
    words = ["the", "key", " ", "\n", "=", '"', "sk-", "Zq8", "horse", "A1b2C3", ":", "/", "\\"]
    same = 0
    for _ in range(3_000):
        parts = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            secret = rng.choice((SHORT, LONG, SPACED))
            if kind < 0.3:
                parts.append(rng.choice((secret, repr(secret), json.dumps(secret))))
            elif kind < 0.45:
                parts.append(secret[: rng.randint(1, len(secret) - 1)])
            elif kind < 0.55:
                parts.append(secret[rng.randint(1, len(secret) - 1) :])
            else:
                parts.append(rng.choice(words))
        text = "".join(parts)
        if len(text) < 2:
            continue
        given = "".join(_streamed(secrets, _cuts(text, rng)))
        whole = secrets.redact(text)
        same += given == whole
        assert not any(secret in given for secret in (SHORT, LONG, SPACED)), (text, given)
        for start in range(len(LONG) - 5):
            stretch = LONG[start : start + 6]
            assert stretch not in given or stretch in whole, (text, given, whole)
    assert same > 2_700, same


def test_without_secrets_the_text_goes_out_as_it_comes() -> None:
    stream = StreamRedactor(Secrets(()))
    assert stream.feed("Zq8v") == "Zq8v" and stream.held == ""


def test_the_end_kept_back_is_a_piece_of_a_secret_and_no_more() -> None:
    stream = StreamRedactor(Secrets((SHORT,)))
    assert stream.feed("Reading a.py now.") == "Reading a.py now."
    assert stream.feed(" Token: Zq8v") == " Token: "
    assert stream.held == "Zq8v"
    assert stream.feed("P2") == ""  # still the start of it
    assert stream.feed("zz") == "Zq8vP2zz"  # not the secret after all: given out at once
    assert stream.end() == ""


def test_a_word_that_runs_on_after_a_secret_is_not_held_for_ever() -> None:
    """A word starting with a long secret's first characters is redacted whole however long
    it runs; streamed one character at a time, it is not kept back whole (each piece would
    search all of it again): what is held stays bounded, and no piece of the secret goes out."""
    secrets = Secrets((LONG,))
    stream = StreamRedactor(secrets)
    given = []
    most = 0
    for piece in [" ", *LONG[:20], *("x" * 20_000), *LONG[-14:], " end"]:
        given.append(stream.feed(piece))
        most = max(most, len(stream.held))
    given.append(stream.end())
    out = "".join(given)
    assert most <= HELD_WORD + 2 * len(LONG) + 1, most
    assert out.startswith(" " + REDACTED) and out.endswith(" end")
    assert not any(LONG[i : i + 6] in out for i in range(len(LONG) - 5)), out[:80]


# -- where the stream is shown ---------------------------------------------------------------


def thinking_line(root: Path, secrets: Secrets, pieces: list[str]) -> list[str]:
    """Every value a session panel's thinking line takes while the model streams ``pieces``
    (the session's secrets being ``secrets``)."""
    (root / "a.py").write_text("x = 1\n")
    model = ScriptedModel([reply("", call("read", path="a.py"))])
    session = Session("read a.py", model=model, root=root)
    session.secrets = secrets
    panel = SessionPanel(session)
    shown: list[str] = []
    panel.thinking.observe(lambda change: shown.append(change["new"]), "value")
    panel.apply(ModelTurn(1))
    for piece in pieces:
        panel.apply(ModelText(piece))
    return shown


def test_the_panel_never_shows_the_start_of_a_secret_being_streamed(tmp_path: Path) -> None:
    shown = thinking_line(tmp_path, Secrets((SHORT,)), ["The token is ", *SHORT, " ok"])
    assert not any(SHORT[:3] in value for value in shown), shown
    assert f"The token is {REDACTED} o" in shown[-1]  # "k" occurs in the secret: kept


def test_an_acp_editor_gets_no_piece_of_a_secret_the_model_pauses_inside(
    paced: PacedModel,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Attack: the model writes the first half of a secret, thinks for a second (a slow
    provider), then writes the rest. Sent when due, the first half would reach the editor
    alone, redacted alone (it matches nothing), and the second after it."""
    root = workspace(tmp_path)
    half = len(SHORT) // 2
    paced.replies.append(
        paced.text((0.0, "The token is "), (0.0, SHORT[:half]), (1.0, SHORT[half:]), (0.0, "."))
        + paced.finish("Said.")
    )
    editor = Editor()

    async def scenario() -> str:
        variables = {**paced.variables(), "MY_SERVICE_TOKEN": SHORT}
        async with grinta_acp(editor, tmp_path, None, **variables) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            answer = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            return answer.stop_reason

    assert asyncio.run(scenario()) == "end_turn"
    shown = editor.text()
    assert len(chunks(editor)) > 1, "the pause made several sends"
    assert SHORT[:3] not in shown and SHORT[half:] not in shown, shown
    assert f"The token is {REDACTED}." in shown


def test_the_terminal_prints_a_streamed_secret_redacted(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with OpenAIServer() as server:  # its text goes out in pieces of 3 characters
        server.queue(tool_reply(tool_call("finish", {"summary": "ok"}), text=f"Use {LONG} now"))
        done = grinta(
            "run",
            "say it",
            "--root",
            str(tmp_path / "ws"),
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
            MY_SERVICE_TOKEN=LONG,
        )
    assert LONG[:6] not in done.stdout and LONG[-6:] not in done.stdout, done.stdout
    assert f"Use {REDACTED} now" in done.stdout
