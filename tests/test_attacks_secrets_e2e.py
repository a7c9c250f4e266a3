"""Secrets against real sessions: what the model is sent, the log on disk, the commands'
environment and the cards, with the secret planted in files, names, output, errors and the
user's own words (docs/guarantees.md, "Secrets stay secret")."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models import LiteLLMModel, ScriptedModel, call, raw_call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.jupyter.mime import trace_bundle
from grinta_jupyter.runtime.secrets import REDACTED, command_environment, is_secret_name
from grinta_jupyter.tools.run import command_env
from tests.conftest import drive
from tests.openai_server import OpenAIServer, error_reply, text_reply, tool_call, tool_reply

_SCRIPT = Path(sys.executable).with_name("grinta")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "grinta_jupyter.cli"]
KEY = "sk-proj-Abc123XyZ987LongSecretValue0000"  # 38 characters: the partial rules apply
# Quotes, a backslash and non-ASCII: its printed forms differ from it.
PASSWORD = "p@ss'w\"rd\\Ünï-2024"


def pieces(text: str, secret: str, size: int = 8) -> list[str]:
    """Every ``size`` characters running in ``secret`` that ``text`` holds."""
    return sorted(
        {secret[i : i + size] for i in range(len(secret) - size + 1)} & _grams(text, size)
    )


def _grams(text: str, size: int) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def sent(model: ScriptedModel) -> str:
    return json.dumps(model.requests, ensure_ascii=False)


def everything(session: Session, model: ScriptedModel) -> str:
    """What the model was sent, the log file, and the cards, as one text to search."""
    cards = json.dumps(trace_bundle(session), ensure_ascii=False)
    return "\n".join([sent(model), session.log_path.read_text(), cards])


def no_piece_anywhere(session: Session, model: ScriptedModel, secret: str = KEY) -> None:
    for where, text in [
        ("model", sent(model)),
        ("log", session.log_path.read_text()),
        ("cards", json.dumps(trace_bundle(session), ensure_ascii=False)),
    ]:
        assert pieces(text, secret) == [], where


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = tmp_path / "ws"
    root.mkdir()
    return root


def run_session(root: Path, turns: list, task: str = "look around", **kwargs) -> tuple:
    model = ScriptedModel([*turns, reply("", call("finish", summary="done"))])
    session = Session(task, model=model, root=root, policy="auto", **kwargs)
    drive(session, lambda s: s.approve())
    return session, model


# -- files, commands and errors holding the key ----------------------------------------------


def test_the_key_in_files_output_errors_diffs_and_names_reaches_no_one(ws):
    (ws / ".env").write_text(f"OPENAI_API_KEY={KEY}\nDEBUG=1\n")
    (ws / "config.py").write_text(f"KEY = '{KEY}'\n\n\ndef f():\n    return KEY\n")
    (ws / f"cache_{KEY}").mkdir()
    (ws / f"cache_{KEY}" / "a.py").write_text("x = 1\n")
    (ws / "test_key.py").write_text(f"def test_key():\n    assert '{KEY}' == 'nope'\n")
    turns = [
        reply("", call("read", path=".env")),
        reply("", call("search", query="OPENAI")),
        reply("", call("search", query="return")),  # the key on a context line
        reply("", call("read", path=f"cache_{KEY}/a.py")),
        reply(
            "",
            call(
                "run",
                command=(
                    "echo ENV-START; env; printenv OPENAI_API_KEY; echo ENV-END; cat .env >&2; ls -R; "
                    "python -c 'import os; print(os.environ)'; "
                    "python -m pytest -q -p no:cacheprovider test_key.py 2>&1 | tail -20"
                ),
            ),
        ),
        # A diff whose context line holds the key.
        reply(
            "",
            call(
                "replace_string",
                path="config.py",
                old_string="return KEY",
                new_string="return KEY.strip()",
            ),
        ),
        # The key quoted back in a validation error, and in a not-found's candidates.
        reply(
            "",
            call(
                "replace_string",
                path="config.py",
                old_string="def f():",
                new_string=f"x = '{KEY}' +",
            ),
        ),
        reply(
            "",
            call(
                "replace_string",
                path="config.py",
                old_string=f"KEY = '{KEY[:20]}'",
                new_string="KEY = ''",
            ),
        ),
        # The model's own arguments echoed in an error: a key as an argument's name, a tool's.
        reply("", raw_call("read", json.dumps({"path": ".env", KEY: 1}))),
        reply("", raw_call(f"tool_{KEY}", "{}")),
        reply("", call("run", command="python -m pytest -q -p no:cacheprovider")),
    ]
    session, model = run_session(ws, turns)
    no_piece_anywhere(session, model)
    text = everything(session, model)
    assert REDACTED in text
    assert "DEBUG=1" in text  # the rest of the file is shown
    run = next(e.output for e in session.log.events if e.type == "observation" and e.tool == "run")
    env = run.split("ENV-START")[1].split("ENV-END")[0]  # the command's environment
    assert "PATH=" in env and "OPENAI_API_KEY" not in env and REDACTED not in env


def test_commands_get_no_secret_variable_whatever_its_spelling(ws, monkeypatch):
    names = [
        "GRINTA_API_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESSKEY",  # ACCESSKEY: secret by the documented rule
        "S3ACCESSKEY",
        "MinioSecretKey",
        "db.password",
        "YOUTUBE_COOKIES",  # plurals: KEYS, TOKENS, COOKIES...
        "RELEASE_SIGNATURES",
        "GPG_PASSPHRASES",
        "CI_JOB_JWTS",
    ]
    for i, name in enumerate(names):
        monkeypatch.setenv(name, f"Value-{i}-Zq8Wm3Lp0Xk")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:Pw-Zq8Wm3Lp0Xk@db/app")
    env = command_env()
    assert not set(names) & set(env)
    assert "DATABASE_URL" not in env and "OPENAI_API_KEY" not in env
    assert not set(names) & set(command_environment())
    session, _ = run_session(ws, [reply("", call("run", command="env"))])
    shown = next(e for e in session.log.events if e.type == "observation" and e.tool == "run")
    assert "Zq8Wm3Lp0Xk" not in json.dumps(shown.model_dump())
    assert all(n.split("=")[0] not in shown.output for n in names if "." not in n)


@pytest.mark.parametrize(
    "name",
    [
        "AWS_ACCESSKEY",
        "ACCESSKEY",
        "aws_accesskey_id",
        "YOUTUBE_COOKIES",
        "SIGNATURES",
        "JWTS",
        "SENTRY_DSN",
        "SLACK_WEBHOOK_URL",
        "discordWebhook",
    ],
)
def test_the_documented_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "ACCESS_LOG",
        "KEYBOARD",
        "MONKEY",
        "AUTHOR",
        "PASSENGER",
        "BYPASS",
        "TOKENIZERS",
        "DSNLOOKUP",
    ],
)
def test_names_that_only_look_close_stay_ordinary(name):
    assert not is_secret_name(name)


# -- the user's own words --------------------------------------------------------------------


def test_the_key_in_the_task_said_and_next_task_never_reaches_the_model(ws):
    (ws / "a.py").write_text("x = 1\n")
    model = ScriptedModel(
        [
            reply("", call("read", path="a.py")),
            reply("", call("finish", summary="done")),
            reply("", call("finish", summary="done again")),
        ]
    )
    session = Session(f"call the api with {KEY} please", model=model, root=ws, policy="auto")
    session.say(f"the key is {KEY}, remember it")
    drive(session, lambda s: s.approve())
    session.continue_task(f"now rotate {KEY}")
    drive(session, lambda s: s.approve())
    assert len(model.requests) == 3
    assert pieces(sent(model), KEY) == []
    assert f"call the api with {REDACTED} please" in sent(model)
    assert pieces(session.log_path.read_text(), KEY) == []
    # A resumed session reads the same task as the live one did.
    session.log.close()
    again = Session.resume(session.log_path, model=ScriptedModel([]))
    assert again.context.task == session.context.task


def test_the_key_in_the_task_stays_out_of_the_summary_request(ws):
    for i in range(8):
        (ws / f"big{i}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(300)))
    summaries = []
    reads = iter(range(8))

    def turn(messages):  # the condensation's own requests get a summary, the others a call
        if messages[0]["content"].startswith("You summarise"):
            summaries.append(messages)
            return reply("read the big files; nothing else")
        i = next(reads, None)
        return reply("", call("read", path=f"big{i}.txt") if i is not None else call("finish"))

    model = ScriptedModel([turn] * 40)
    session = Session(
        f"use {KEY} to read the big files",
        model=model,
        root=ws,
        policy="auto",
        limits=Limits(context_budget=6_000, condense="model"),
    )
    drive(session, lambda s: s.approve())
    assert summaries, "the context was condensed by the model"
    assert f"The task: use {REDACTED} to read" in json.dumps(summaries)
    assert pieces(sent(model), KEY) == []
    assert pieces(session.log_path.read_text(), KEY) == []


# -- printed forms ---------------------------------------------------------------------------


def test_a_password_in_a_notebooks_saved_outputs_is_hidden_when_the_file_is_printed(
    tmp_path, monkeypatch
):
    # A notebook stores an execute_result's text/plain, a repr, as JSON: the repr of a
    # password with quotes and a backslash, JSON-escaped again.
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)
    root = tmp_path / "nb"
    root.mkdir()
    cell = {
        "cell_type": "code",
        "id": "c1",
        "metadata": {},
        "execution_count": 1,
        "source": ["import os\n", "os.environ['DB_PASSWORD']"],
        "outputs": [
            {
                "output_type": "execute_result",
                "execution_count": 1,
                "metadata": {},
                "data": {"text/plain": [repr(PASSWORD)]},
            },
            {"output_type": "stream", "name": "stdout", "text": [PASSWORD + "\n"]},
        ],
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "a.ipynb").write_text(json.dumps(notebook, indent=1))
    (root / "b.ipynb").write_text(json.dumps(notebook, indent=1, ensure_ascii=False))
    session, model = run_session(
        root,
        [
            reply("", call("read", path="a.ipynb")),
            reply("", call("run", command="cat a.ipynb b.ipynb")),
        ],
    )
    tool_texts = [
        m["content"] for r in model.requests for m in r["messages"] if m["role"] == "tool"
    ]
    logged = [e.output for e in session.log.events if e.type == "observation"]
    forms = [PASSWORD, repr(PASSWORD)[1:-1], json.dumps(repr(PASSWORD)[1:-1])[1:-1]]
    forms.append(json.dumps(repr(PASSWORD)[1:-1], ensure_ascii=False)[1:-1])
    for text in [*tool_texts, *logged]:
        assert not [form for form in forms if form in text]
        assert "p@ss" not in text
    cat = next(e.output for e in session.log.events if e.type == "observation" and e.tool == "run")
    assert cat.count(REDACTED) == 4  # two files, each with the repr and the printed line


@pytest.mark.parametrize(
    "secret",
    [
        "a.b*c+d?(e)[f]{g}|h^$\\i",  # regular-expression characters
        "Ünïcødé-Schlüssel-✓-0123456789",
        "\U0001f511emoji-key-0123456789-abcdef",
    ],
)
def test_odd_secrets_are_found_raw_and_printed_by_a_command(tmp_path, monkeypatch, secret):
    monkeypatch.setenv("SERVICE_TOKEN", secret)
    root = tmp_path / "w"
    root.mkdir()
    (root / "s.txt").write_text(secret + "\n", encoding="utf-8")
    script = "import json,sys; s=open('s.txt',encoding='utf-8').read().strip(); " + (
        "print(s); print(repr(s)); print(json.dumps(s)); print(json.dumps({'k': s}, ensure_ascii=False))"
    )
    session, model = run_session(
        root,
        [
            reply("", call("read", path="s.txt")),
            reply("", call("run", command=f'python -c "{script}" 2>&1; python -c "{script}" >&2')),
        ],
    )
    for text in [sent(model), session.log_path.read_text()]:
        assert secret not in text and json.dumps(secret)[1:-1] not in text
        assert pieces(text, secret, 12) == []


def test_a_common_word_or_a_short_value_does_not_redact_ordinary_text(ws, monkeypatch):
    monkeypatch.setenv("TOKEN_KIND", "observation")
    monkeypatch.setenv("SHORT_KEY", "Ab1-x")
    (ws / "notes.txt").write_text("an observation about Ab1-x\n")
    session, model = run_session(ws, [reply("", call("read", path="notes.txt"))])
    assert "an observation about Ab1-x" in sent(model)
    assert "an observation about Ab1-x" in session.log_path.read_text()


# -- a real model over HTTP --------------------------------------------------------------------


def test_over_litellm_the_code_given_key_is_kept_out_of_bodies_log_and_errors(
    openai_server, tmp_path, monkeypatch
):
    code_key = "sk-code-Q7w8E9r0T1y2U3i4O5p6-zz"  # given in code, in no variable
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "Zx9" * 12)
    root = tmp_path / "w"
    root.mkdir()
    (root / "k.txt").write_text(f"{code_key}\nghp_{'Zx9' * 12}\n")
    openai_server.queue(
        tool_reply(tool_call("read", {"path": "k.txt"})),
        tool_reply(tool_call("run", {"command": "cat k.txt; env | grep -i -e ghp -e token"})),
        error_reply(400, f"bad request from key {code_key}"),
    )
    model = LiteLLMModel(
        "openai/test-model", api_base=openai_server.url, api_key=code_key, backoff=0.01
    )
    session = Session("look", model=model, root=root, policy="auto")

    async def watch() -> None:
        async for _ in session.updates():
            pass

    asyncio.run(watch())
    bodies = json.dumps([r.body for r in openai_server.requests])
    assert len(openai_server.requests) == 3
    for secret in (code_key, "ghp_" + "Zx9" * 12):
        for name, where in [
            ("bodies", bodies),
            ("log", session.log_path.read_text()),
            ("cards", json.dumps(trace_bundle(session))),
        ]:
            assert pieces(where, secret) == [], name
    assert REDACTED in bodies
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {code_key}"


def test_a_reply_streaming_the_key_is_redacted_in_the_log_and_the_next_request(ws, openai_server):
    openai_server.queue(
        text_reply(f"I found the key {KEY} in the file.", chunk_size=2),
        tool_reply(tool_call("finish", {"summary": f"key is {KEY}"})),
    )
    model = LiteLLMModel(
        "openai/test-model", api_base=openai_server.url, api_key="sk-x", backoff=0.01
    )
    session = Session("look", model=model, root=ws, policy="auto")

    async def watch() -> None:
        async for _ in session.updates():
            pass

    asyncio.run(watch())
    later = json.dumps([r.body for r in openai_server.requests[1:]])
    assert pieces(later, KEY) == [] and pieces(session.log_path.read_text(), KEY) == []
    assert os.environ["OPENAI_API_KEY"] == KEY


# -- the terminal front end ------------------------------------------------------------------


def test_the_terminal_front_end_shows_no_key(ws: Path) -> None:
    """Attack: ``grinta run`` printed outputs, diffs and arguments raw: a key in ``.env``
    appeared three times on the terminal (the read, ``cat .env``, a diff's context line),
    while the model, the log and the cards saw it redacted."""
    (ws / ".env").write_text(f"GITHUB_TOKEN={KEY}\n")
    (ws / "c.py").write_text(f"def f():\n    T = '{KEY}'\n    return 1\n")
    edit = {"path": "c.py", "old_string": "return 1", "new_string": "return 2"}
    with OpenAIServer() as server:
        server.queue(
            tool_reply(tool_call("read", {"path": ".env"}, id="c1")),
            tool_reply(tool_call("run", {"command": "cat .env"}, id="c2")),
            tool_reply(tool_call("replace_string", edit, id="c3")),
        )  # then the server has no reply left: the session ends on that error
        environment = {k: v for k, v in os.environ.items() if not k.startswith("GRINTA_")}
        environment |= {
            "GRINTA_MODEL": "openai/test",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": "sk-test",
            "GITHUB_TOKEN": KEY,
        }
        done = subprocess.run(
            [*CLI, "run", "look around", "--root", str(ws)],
            input="y\ny\ny\ny\n",
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
        )
    assert (ws / "c.py").read_text().endswith("return 2\n"), done.stdout + done.stderr
    shown = done.stdout + done.stderr
    assert "cat .env" in shown and f"T = '{REDACTED}'" in shown, shown
    assert pieces(shown, KEY) == []
