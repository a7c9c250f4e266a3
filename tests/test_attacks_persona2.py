"""The Jupyter AI persona and the model bar's catalog, attacked (second round).

Real parts only: Jupyter AI's persona manager on a real chat document with a real
``grinta acp`` and litellm talking to tests/openai_server.py; real HTTP servers on
127.0.0.1 standing in for an api base, a provider and Ollama (tests/model_servers.py).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent.models import catalog
from grinta_jupyter.agent.models.keys import HeldKeys
from grinta_jupyter.config import Config
from tests.model_servers import ModelServer
from tests.openai_server import OpenAIServer, tool_call, tool_reply

KEY = "sk-attack-key-0123456789abcdef"


# -- a server that redirects ---------------------------------------------------------------------


class Redirector:
    """Answers every GET with ``status`` and ``Location: target + path``."""

    def __init__(self, target: str, status: int = 302) -> None:
        self.target = target
        self.status = status
        self.seen: list[dict[str, str]] = []
        redirector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                redirector.seen.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(redirector.status)
                self.send_header("Location", redirector.target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def elsewhere() -> Iterator[ModelServer]:
    """Another server (another port: another origin) that records what reaches it."""
    with ModelServer(openai_models=["stolen"]) as server:
        yield server


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_server_never_carries_the_key(
    elsewhere: ModelServer, status: int
) -> None:
    """Attack: the api base (or a provider's check endpoint) answers with a redirect to
    another host. urllib copied the Authorization header there: the picker's probe sent
    GRINTA_API_KEY, or a key typed in the panel, and ``grinta models --check`` a provider's
    key, to whatever host the redirect named. Nothing must reach it."""
    redirector = Redirector(elsewhere.url, status)
    try:
        probe = catalog.probe_models(redirector.url + "/v1", KEY)
        check = catalog.check_provider("openai", KEY, url=redirector.url + "/v1/models")
        survey = catalog.survey(
            Config(model="openai/local", api_base=redirector.url + "/v1", api_key=KEY),
            {"OLLAMA_HOST": redirector.url},
        )
    finally:
        redirector.close()
    assert elsewhere.requests == []  # nothing at all was sent to the other host
    assert [seen.get("authorization") for seen in redirector.seen[:2]] == [f"Bearer {KEY}"] * 2
    for found in (probe, check, survey.server):
        assert found is not None and found.status == "error"
        assert f"HTTP {status}" in found.detail and "another server" in found.detail
        assert elsewhere.url.removeprefix("http://") in found.detail
    assert survey.problem is not None and "another server" in survey.problem


def test_a_redirect_within_the_same_server_is_still_followed() -> None:
    """Guard: a server that moved its list to another path of its own is followed, with
    its key (passes before and after the fix)."""
    seen_after: list[str] = []

    class Moved(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.startswith("/old"):
                self.send_response(302)
                self.send_header("Location", "/v1/models")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            seen_after.append(self.headers.get("Authorization", ""))
            body = b'{"data": [{"id": "local-coder"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Moved)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        probe = catalog.probe_models(f"http://127.0.0.1:{httpd.server_address[1]}/old", KEY)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert probe.ok and probe.models == ("openai/local-coder",)
    assert seen_after == [f"Bearer {KEY}"]


# -- names a server lists -----------------------------------------------------------------------

HOSTILE_NAMES = [
    "my model",  # a space: no model string holds one
    "coder\nGRINTA_MODEL",  # a line break
    "gpt-4o\u202e",  # a bidirectional override: passes for another name in the picker
    "tab\tname",
    "x" * 5_000,  # thousands of characters, in every redraw of every bar
]


def test_a_listed_name_no_session_can_use_is_not_offered() -> None:
    """Attack: an api base or Ollama lists model names with spaces, line breaks, control or
    bidirectional characters, or of thousands of characters. Offered in the picker, such a
    name was picked, and every ``%grinta TASK`` then failed with a ConfigError traceback
    ("a model string has no spaces...") until another model was picked."""
    with ModelServer(
        ollama_models=["qwen2.5-coder:7b", *HOSTILE_NAMES],
        openai_models=["local-coder", *HOSTILE_NAMES],
    ) as server:
        listed = catalog.probe_models(server.api_base)
        ollama = catalog.probe_ollama(server.url)
    assert listed.models == ("openai/local-coder",)
    assert ollama.models == ("ollama_chat/qwen2.5-coder:7b",)
    assert "5 with a name no model string can hold left out" in listed.detail
    config = Config(model="openai/local", api_base=server.api_base)
    offered = catalog.choices(config, {}, frozenset(), ollama, listed)
    assert not any(c.name.endswith(tuple(HOSTILE_NAMES)) for c in offered)
    for choice in offered:  # whatever is picked, the next session's configuration holds
        picked = catalog.apply_choice(config, choice, HeldKeys())
        assert picked.model in (None, choice.name)


# -- the mode picked with a message sent while grinta works ----------------------------------------


def test_a_mode_picked_with_a_message_sent_while_grinta_works_applies(
    openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: grinta's write waits in *Ask before changes*; the person switches the picker
    to *Ask before every step* and sends a message. Jupyter AI carries the picked mode on
    the message, but a message sent while grinta works went straight to the agent and its
    mode was dropped: the next step (a read) ran unasked. It must ask."""
    pytest.importorskip("jupyter_ai_acp_client", reason="Jupyter AI is not installed")
    from jupyter_ai_acp_client.base_acp_persona import MODE_CONTROL_ID
    from jupyter_ai_persona_manager import PersonaManager
    from jupyterlab_chat.models import NewMessage
    from jupyterlab_chat.ychat import YChat

    from grinta_jupyter.jupyter_ai.persona import GrintaPersona
    from tests.test_jupyter_ai import (
        CORE,
        FIX,
        FIXED,
        GRINTA_ID,
        WAIT,
        answer,
        pending_tool_call,
        send,
        until,
    )

    for name in [n for n in os.environ if n.startswith("GRINTA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GRINTA_MODEL", "openai/test")
    monkeypatch.setenv("GRINTA_API_BASE", openai_server.url)
    monkeypatch.setenv("GRINTA_API_KEY", "sk-test-key-for-jupyter-ai")
    project = tmp_path / "root" / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    core = project / "pkg" / "core.py"
    core.write_text(CORE)
    openai_server.queue(
        tool_reply(tool_call("replace_string", FIX, id="call_fix")),
        tool_reply(tool_call("read", {"path": "pkg/core.py"}, id="call_read")),
        tool_reply(tool_call("finish", {"summary": "Checked."})),
    )

    async def scenario() -> list[str]:
        ychat = YChat()
        ychat.initial_path = "project/fix.chat"
        manager = PersonaManager(
            chat=ychat, root_dir=str(project.parent), event_loop=asyncio.get_running_loop()
        )
        persona = manager.personas[GRINTA_ID]
        assert isinstance(persona, GrintaPersona)
        asked: list[str] = []
        try:
            turn = asyncio.ensure_future(send(ychat, persona, "@Grinta fix add"))
            fix = await until(lambda: pending_tool_call(ychat), "the fix to ask")
            said = ychat.get_message(
                ychat.add_message(NewMessage(body="@Grinta ask me before each step", sender="u"))
            )
            assert said is not None
            carrying = replace(said, metadata={"settings": {MODE_CONTROL_ID: "review"}})
            message = asyncio.ensure_future(persona.on_message(carrying))  # ends with the task
            for _ in range(100):  # the mode applies before the message is sent on
                if persona.get_settings().get(MODE_CONTROL_ID) == "review":
                    break
                await asyncio.sleep(0.05)
            await answer(persona, fix, "approve")
            seen = {fix["tool_call_id"]}
            while not turn.done():
                await asyncio.wait([turn], timeout=0.05)
                waiting = next(
                    (
                        c
                        for c in _calls(ychat)
                        if c.get("permission_status") == "pending" and c["tool_call_id"] not in seen
                    ),
                    None,
                )
                if waiting is not None:
                    seen.add(waiting["tool_call_id"])
                    asked.append(str(waiting.get("kind")))
                    await answer(persona, waiting, "approve")
            await asyncio.wait_for(asyncio.gather(turn, message), WAIT)
        finally:
            await manager.shutdown_personas()
        return asked

    asked = asyncio.run(scenario())
    assert core.read_text() == FIXED
    assert "read" in asked  # the read waited for a click, as the picked mode says


def _calls(ychat: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for message in ychat.get_messages():
        calls.extend((getattr(message, "metadata", None) or {}).get("tool_calls", []))
    return calls


# -- the picker's probe of the api base, with the key a session would send -------------------------

PICKER = """
import time
from grinta_jupyter.jupyter import modelbar
bar = modelbar.model_bar()
deadline = time.monotonic() + 10
while bar.searching and time.monotonic() < deadline:
    time.sleep(0.02)
print(sorted(c["name"] for c in bar.choices if c["source"] == "server"))
"""


@pytest.mark.parametrize(
    "keys",
    [
        {"GRINTA_API_KEY": f'"{KEY}"'},  # quoted, as a .env line has it
        {"GRINTA_API_KEY": f"{KEY}\n"},  # a key file's newline (a guard: Config strips it)
        {"OPENAI_API_KEY": KEY},  # the provider's variable only: litellm sends it there
    ],
    ids=["quoted", "newline", "provider-variable"],
)
def test_the_picker_lists_the_api_base_models_with_the_key_a_session_sends(
    keys: dict[str, str],
) -> None:
    """Attack: the api base wants a key, given as a session takes it (quoted, or only in
    OPENAI_API_KEY). Sessions worked, but the picker's probe sent the raw, quoted
    GRINTA_API_KEY (refused) or no key at all: the server's models never showed in the
    picker. (A key file's newline is a guard: the configuration strips it already.)"""
    with ModelServer(openai_models=["local-coder", "local-small"], key=KEY) as server:
        environ = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("GRINTA_") and not name.endswith("_API_KEY")
        }
        environ |= {
            "GRINTA_MODEL": "openai/local-coder",
            "GRINTA_API_BASE": server.api_base,
            "OLLAMA_HOST": "http://127.0.0.1:9",  # nothing listens: answered at once
            **keys,
        }
        done = subprocess.run(
            [sys.executable, "-c", PICKER],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=environ,
        )
        sent = [seen.headers.get("authorization") for seen in server.requests]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["['openai/local-small']"]
    assert sent == [f"Bearer {KEY}"]
