"""The panel's key field in a real kernel: the key reaches the model and nothing else.

A key typed in the model bar arrives as the browser sends it (a custom comm
message, labextension/src/render/modelBar.ts). The session then talks to the
local OpenAI-compatible server with it, runs a command, and ends; the key must
be in the request's Authorization header and nowhere else: not in the event
log or any file, not in any message the kernel sent (outputs and widget
states: what a saved notebook holds), not in the kernel's environment nor the
command's. A key the provider refuses (401) is shown at once with its fix, and
forgotten; a missing key is shown before the session starts, with the field.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.runtime.secrets import REDACTED
from tests.kernels import TIMEOUT, running_kernel
from tests.openai_server import OpenAIServer, error_reply, tool_call, tool_reply

KEY = "sk-typed-in-the-panel-0123456789abcdef"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
HELD = "__import__('grinta_jupyter.agent.models.keys', fromlist=['HELD']).HELD"


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class Recorder:
    """Runs code in a kernel as a front end does, and keeps every iopub message it sees,
    whichever cell it belongs to (a background session's displays included)."""

    def __init__(self, kc: Any) -> None:
        self.kc = kc
        self.seen: list[dict[str, Any]] = []

    def run(self, code: str) -> list[dict[str, Any]]:
        """The messages of ``code``'s own cell, up to idle (every message is kept)."""
        request = self.kc.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        self.kc.shell_channel.send(request)
        mine: list[dict[str, Any]] = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            self.seen.append(msg)
            if msg["parent_header"].get("msg_id") != request["header"]["msg_id"]:
                continue
            if msg["msg_type"] == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return mine
            mine.append(msg)

    def text(self, code: str) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.run(code)
            if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
        )

    def wait_for(self, expression: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            check = f"import asyncio; await asyncio.sleep(0.2); print(bool({expression}))"
            if self.text(check).strip() == "True":
                return
        raise AssertionError(f"timed out waiting for {expression}")

    def send_to_widget(self, model_id: str, content: dict[str, Any]) -> None:
        data = {"method": "custom", "content": content}
        self.kc.shell_channel.send(
            self.kc.session.msg("comm_msg", {"comm_id": model_id, "data": data})
        )


def widget_states(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each widget's state as the front end holds it: comm_open's, then every update."""
    states: dict[str, dict[str, Any]] = {}
    for m in messages:
        content = m["content"]
        if m["msg_type"] == "comm_open":
            states[content["comm_id"]] = dict(content["data"].get("state", {}))
        elif m["msg_type"] == "comm_msg" and content["data"].get("method") == "update":
            states.setdefault(content["comm_id"], {}).update(content["data"].get("state", {}))
    return states


def model_bars(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in widget_states(messages).values() if s.get("kind") == "models"]


def shown_widget(messages: list[dict[str, Any]]) -> str:
    views = [
        m
        for m in messages
        if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]
    ]
    assert views, [m["msg_type"] for m in messages]
    return str(views[-1]["content"]["data"][WIDGET_VIEW]["model_id"])


def saved_notebook(messages: list[dict[str, Any]]) -> str:
    """What a front end would save: the cells' outputs (displays, their updates, text) and
    the widget states (JupyterLab's "save widget state")."""
    outputs = [
        m["content"]
        for m in messages
        if m["msg_type"] in ("display_data", "update_display_data", "stream", "execute_result")
    ]
    notebook = {
        "cells": [{"cell_type": "code", "source": "", "outputs": outputs, "metadata": {}}],
        "metadata": {
            "widgets": {"application/vnd.jupyter.widget-state+json": widget_states(messages)}
        },
    }
    return json.dumps(notebook)


def kernel_env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    return {
        "GRINTA_MODEL": "openai/x",
        "GRINTA_API_BASE": server.url,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OLLAMA_HOST": closed_port(),  # no local Ollama for these kernels
        **extra,
    }


def type_key(rec: Recorder, provider: str) -> dict[str, Any]:
    """Show the model bar (%grinta models), type KEY in its field; the bar's state after."""
    bar = shown_widget(rec.run("%grinta models"))
    rec.send_to_widget(bar, {"event": "key", "provider": provider, "key": KEY})
    rec.wait_for(f"{HELD}.get({provider!r}) is not None")
    return model_bars(rec.seen)[-1]


def test_a_key_typed_in_the_panel_reaches_the_model_and_nothing_else(tmp_path: Path) -> None:
    work = tmp_path / "ws"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    with OpenAIServer() as server:
        server.queue(
            tool_reply(tool_call("run", {"command": "env; echo ran"})),
            tool_reply(tool_call("finish", {"summary": "listed the environment"})),
            tool_reply(tool_call("finish", {"summary": "listed the environment"})),
        )
        with running_kernel(work, kernel_env(server)) as kc:
            rec = Recorder(kc)
            rec.run("%load_ext grinta_jupyter")
            bar = type_key(rec, "openai")
            assert (bar["key_provider"], bar["key_state"]) == ("openai", "panel")
            assert bar["status"] == "key for openai received: the next session uses it"
            in_env = f"any({HELD}.get('openai') in v for v in __import__('os').environ.values())"
            assert rec.text(f"print({in_env})").strip() == "False"

            rec.run("%grinta --auto show the environment")
            rec.wait_for("__import__('grinta_jupyter').current().done")
            states = f"""
import json, warnings
from ipywidgets import Widget
_k = {HELD}.get('openai')
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # Widget.widgets: all live widgets
    _all = list(Widget.widgets.values())
print(any(_k in json.dumps(w.get_state(), default=str) for w in _all),
      {in_env}, __import__('grinta_jupyter').current().end_reason)
"""
            assert rec.text(states).split() == ["False", "False", "finished"]
        requests = list(server.requests)

    assert requests[0].headers["authorization"] == f"Bearer {KEY}", "the key reached the model"
    tool_results = [
        str(m.get("content")) for m in requests[1].body["messages"] if m.get("role") == "tool"
    ]
    env_output = "\n".join(tool_results)
    assert "ran" in env_output and "PATH=" in env_output, env_output
    assert "OPENAI_API_KEY" not in env_output and REDACTED not in env_output, (
        "the command's environment has no key, not even a redacted one"
    )
    for request in requests:
        assert KEY not in json.dumps(request.body)
    every_file = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in every_file), "the session was logged"
    for path in every_file:
        assert KEY.encode() not in path.read_bytes(), path
    for message in rec.seen:
        assert KEY not in json.dumps(message, default=str), message["msg_type"]
    assert KEY not in saved_notebook(rec.seen)
    assert "grinta model picker" in saved_notebook(rec.seen), "the bar's text fallback"


def test_a_refused_key_is_shown_at_once_with_the_fix_and_forgotten(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        # Refused early (before litellm is loaded), then by litellm's own request.
        server.queue(*[error_reply(401, f"Incorrect API key provided: {KEY}")] * 2)
        with running_kernel(tmp_path, kernel_env(server)) as kc:
            rec = Recorder(kc)
            rec.run("%load_ext grinta_jupyter")
            type_key(rec, "openai")
            rec.run("%grinta --manual fix it")
            shown = rec.run("%grinta step")  # the first model call, in this cell
            held = rec.text(f"print({HELD}.get('openai') is None)").strip()

    assert held == "True", "a refused key is forgotten"
    bars = model_bars(shown)
    assert bars, "a model bar under the trace, with its key field"
    problem = bars[-1]["problem"]
    assert problem.startswith("AUTH: openai/x rejected the key (")
    assert "the key typed in the key field for openai was refused and forgotten" in problem
    assert bars[-1]["key_state"] == "rejected"
    assert KEY not in problem and KEY not in json.dumps(rec.seen, default=str)
    trace = [
        m["content"]["data"]["application/vnd.grinta.session+json"]
        for m in shown
        if m["msg_type"] in ("display_data", "update_display_data")
        and "application/vnd.grinta.session+json" in m["content"]["data"]
    ]
    assert trace and trace[-1]["error"].startswith("AUTH: "), "the saved trace says it too"


def test_a_missing_key_is_said_before_the_session_with_the_field_to_fix_it(tmp_path: Path) -> None:
    env = {"GRINTA_MODEL": "anthropic/claude-x", "OLLAMA_HOST": closed_port()}
    with running_kernel(tmp_path, env) as kc:
        rec = Recorder(kc)
        rec.run("%load_ext grinta_jupyter")
        shown = rec.run("%grinta fix it")
        line = "".join(m["content"]["text"] for m in shown if m["msg_type"] == "stream")
        bar = model_bars(shown)[-1]
        rec.send_to_widget(
            shown_widget(shown), {"event": "key", "provider": "anthropic", "key": KEY}
        )
        rec.wait_for(f"{HELD}.get('anthropic') is not None")
        check = f"""
import os
from grinta_jupyter.config import Config
from grinta_jupyter.jupyter import modelbar
from grinta_jupyter.agent.models import configured_model
_m = configured_model(modelbar.configured(Config.from_env(os.environ)), require_key=True)
print(_m.name, _m.api_key == {HELD}.get('anthropic'), 'ANTHROPIC_API_KEY' in os.environ)
"""
        ready = rec.text(check).split()
        sessions = list(tmp_path.rglob("*.jsonl"))

    assert line.startswith(
        "%grinta: MISSING_KEY: no API key for anthropic/claude-x: set ANTHROPIC_API_KEY"
    )
    assert "or type a key in the key field" in line and len(line.strip().splitlines()) == 1
    assert (bar["chosen"], bar["key_provider"], bar["key_state"]) == (
        "anthropic/claude-x",
        "anthropic",
        "missing",
    )
    assert bar["problem"].startswith("MISSING_KEY: ")
    assert ready == ["anthropic/claude-x", "True", "False"], "the next session has the key"
    assert not sessions, "no session started without a key"
    assert KEY not in json.dumps(rec.seen, default=str)


@pytest.mark.parametrize(
    "content",
    [
        {"event": "key", "provider": "anthropic", "key": KEY},  # not the field's provider
        {"event": "key", "provider": "openai", "key": "two\nlines"},
        {"event": "key", "provider": "openai", "key": "   "},
        {"event": "choose", "model": "openai/not-offered"},
    ],
)
def test_a_message_that_does_not_fit_changes_nothing(
    tmp_path: Path, content: dict[str, Any]
) -> None:
    with OpenAIServer() as server, running_kernel(tmp_path, kernel_env(server)) as kc:
        rec = Recorder(kc)
        rec.run("%load_ext grinta_jupyter")
        bar = shown_widget(rec.run("%grinta models"))
        rec.send_to_widget(bar, content)
        out = rec.text(
            "from grinta_jupyter.jupyter import modelbar\n"
            f"print(sorted({HELD}.providers()), modelbar.chosen_name())"
        )
    assert out.split() == ["[]", "None"]
    status = model_bars(rec.seen)[-1]["status"]
    assert status and ("not kept" in status or "nothing" in status), status
    assert os.environ.get("GRINTA_MODEL") != "openai/not-offered"


def test_every_message_is_answered_even_with_the_same_word(tmp_path: Path) -> None:
    """The page shows "sending the key..." until the kernel answers; the same key typed
    twice, or the same refusal twice, leaves ``status`` as it was, so the answer is a
    counter raised in the same update as the status (once per message acted on)."""
    with OpenAIServer() as server, running_kernel(tmp_path, kernel_env(server)) as kc:
        rec = Recorder(kc)
        rec.run("%load_ext grinta_jupyter")
        bar = shown_widget(rec.run("%grinta models"))
        sent = [
            {"event": "key", "provider": "openai", "key": KEY},
            {"event": "key", "provider": "openai", "key": KEY},
            {"event": "key", "provider": "openai", "key": "two\nlines"},
            {"event": "key", "provider": "openai", "key": "two\nlines"},
            {"event": "forget", "provider": "anthropic"},  # none held
            {"event": "nonsense"},  # not acted on: no answer
        ]
        for content in sent:
            rec.send_to_widget(bar, content)
        rec.wait_for(f"{HELD}.get('openai') is not None")
        rec.text("import asyncio; await asyncio.sleep(0.5)")
    # What the page holds after each answer: the bar's state, every update merged in.
    held: dict[str, Any] = {}
    answers: list[tuple[int, str]] = []
    for m in rec.seen:
        if m["msg_type"] != "comm_msg" or m["content"]["comm_id"] != bar:
            continue
        update = m["content"]["data"].get("state", {})
        held.update(update)
        if "answered" in update:
            answers.append((held["answered"], str(held.get("status"))))
    assert [n for n, _ in answers] == [1, 2, 3, 4, 5], answers
    words = [w for _, w in answers]
    assert words[0] == words[1] == "key for openai received: the next session uses it"
    assert words[2] == words[3] and "nothing kept" in words[2], words
    assert "nothing to forget" in words[4], words[4]
