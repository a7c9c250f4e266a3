"""Attacks on configuration and model selection: where a key goes, and what a careless
setting gives.

Real litellm calls against the scripted OpenAI-compatible server on 127.0.0.1
(tests/openai_server.py), and one stdlib server answering 404 the way a real
server does for an address without ``/v1``. Nothing reaches the network.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from grinta_jupyter.agent.models import LiteLLMModel, ModelError, configured_model
from grinta_jupyter.agent.models.catalog import ModelChoice, apply_choice
from grinta_jupyter.agent.models.keys import HeldKeys
from grinta_jupyter.config import Config, ConfigError
from tests.openai_server import (
    OpenAIServer,
    openai_server_fixture,  # noqa: F401  (provides the `openai_server` fixture)
    text_reply,
)
from tests.test_models_litellm import _no_keys_in_env  # noqa: F401  (autouse: no key, no GRINTA_*)

# litellm trips pydantic's deprecation warnings on every stream; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*")

SERVER_KEY = "proxy-virtual-key-0123456789"
MESSAGES = [{"role": "user", "content": "hi"}]


def complete(model: Any) -> str:
    assert isinstance(model, LiteLLMModel)
    model.max_retries = 0
    model.timeout = 10.0
    return asyncio.run(model.complete(MESSAGES, [])).text


def sent_key(server: OpenAIServer) -> str:
    return server.requests[-1].headers.get("authorization", "")


# -- a model the configured server lists goes there with that server's key ----------------------


def test_a_model_the_api_base_lists_keeps_grinta_api_key(openai_server: OpenAIServer) -> None:
    # The picker lists the models GRINTA_API_BASE serves (asked with GRINTA_API_KEY): picking
    # one sent it to that same server without the key, a placeholder instead (a 401 from
    # any proxy that needs one).
    config = Config.from_env(
        {
            "GRINTA_MODEL": "openai/first",
            "GRINTA_API_BASE": openai_server.url,
            "GRINTA_API_KEY": SERVER_KEY,
        }
    )
    listed = ModelChoice("openai/second", "server", "openai", openai_server.url, "OPENAI_API_KEY")

    picked = apply_choice(config, listed, HeldKeys())
    assert (picked.model, picked.api_key) == ("openai/second", SERVER_KEY)
    assert picked.origin("api_key") == "GRINTA_API_KEY"

    openai_server.queue(text_reply("second"))
    assert complete(configured_model(picked)) == "second"
    assert sent_key(openai_server) == f"Bearer {SERVER_KEY}"


def test_a_hosted_or_ollama_model_picked_still_drops_grinta_api_key() -> None:
    config = Config.from_env(
        {
            "GRINTA_MODEL": "openai/first",
            "GRINTA_API_BASE": "http://h/v1",
            "GRINTA_API_KEY": "g" * 20,
        }
    )
    hosted = ModelChoice("openai/gpt-x", "key", "openai", None, "OPENAI_API_KEY")
    ollama = ModelChoice("ollama_chat/q", "ollama", "ollama", "http://127.0.0.1:11434")
    elsewhere = ModelChoice("openai/y", "server", "openai", "http://other/v1", "OPENAI_API_KEY")

    for choice in (hosted, ollama, elsewhere):
        assert apply_choice(config, choice, HeldKeys()).api_key is None, choice


# -- the api base: a bad one is one line naming where it came from --------------------------------


@pytest.mark.parametrize(
    "value",
    ["localhost:8000/v1", "127.0.0.1:11434", "ftp://h/v1", "http://", "htp://h", "http://[::1"],
)
def test_an_api_base_that_is_not_an_http_address_is_a_config_error(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_env({"GRINTA_API_BASE": value})
    message = str(info.value)
    assert message.startswith("GRINTA_API_BASE") and "http://" in message
    assert "\n" not in message

    with pytest.raises(ConfigError, match=r"^--api-base"):
        Config().with_options(api_base=value)


def test_an_api_base_with_credentials_is_not_echoed_in_its_error() -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_env({"GRINTA_API_BASE": "user:hunter2secret@proxy:8000"})
    assert "hunter2secret" not in str(info.value)


@pytest.mark.parametrize(
    "value", ["http://127.0.0.1:8000/v1", "https://proxy.example/v1", "HTTP://localhost:11434"]
)
def test_http_addresses_are_accepted(value: str) -> None:
    assert Config.from_env({"GRINTA_API_BASE": value}).api_base == value


def test_an_empty_api_base_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^--api-base is empty"):
        Config().with_options(api_base="  ")


# -- a key pasted with whitespace or quotes --------------------------------------------------------


@pytest.mark.parametrize("pasted", [f" {SERVER_KEY}\n", f'"{SERVER_KEY}"', f"'{SERVER_KEY}' "])
def test_a_key_pasted_with_whitespace_or_quotes_is_sent_clean(
    openai_server: OpenAIServer, pasted: str
) -> None:
    openai_server.queue(text_reply("ok"))
    model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key=pasted)

    assert complete(model) == "ok"
    assert sent_key(openai_server) == f"Bearer {SERVER_KEY}"


@pytest.mark.parametrize("pasted", [f"{SERVER_KEY}\n", f"  {SERVER_KEY}  ", f'"{SERVER_KEY}"'])
def test_a_provider_variable_with_whitespace_or_quotes_is_sent_clean(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, pasted: str
) -> None:
    # OPENAI_API_KEY="sk-...\n" (a key file read with its newline) was a retried NETWORK
    # error "HTTP 500: Forbidden control character"; with spaces, a refused key.
    monkeypatch.setenv("OPENAI_API_KEY", pasted)
    openai_server.queue(text_reply("ok"))
    model = LiteLLMModel("openai/x", api_base=openai_server.url)

    assert complete(model) == "ok"
    assert sent_key(openai_server) == f"Bearer {SERVER_KEY}"


def test_a_key_of_only_quotes_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", '""')
    with pytest.raises(ModelError) as info:
        configured_model(Config(model="openai/gpt-4o-mini"), require_key=True)
    assert info.value.code == "MISSING_KEY"


# -- an api base without /v1 -----------------------------------------------------------------------


class _NotFound(BaseHTTPRequestHandler):
    """What vLLM, llama.cpp and most servers answer to a path they do not serve."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"detail": "Not Found"}).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def not_found_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_api_base_without_v1_is_named_as_the_thing_to_fix(not_found_server: str) -> None:
    model = LiteLLMModel("openai/qwen", api_base=not_found_server, api_key="k")
    with pytest.raises(ModelError) as info:
        complete(model)

    error = info.value
    assert (error.code, error.retryable) == ("UNKNOWN_MODEL", False)
    assert not_found_server in error.message and "/v1" in error.message
    assert "\n" not in error.message


# -- a flag variable ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "on"),
    [
        ("1", True),
        ("true", True),
        ("YES", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("No", False),
        ("off", False),
    ],
)
def test_a_flag_variable_means_what_it_says(text: str, on: bool) -> None:
    assert Config.from_env({"GRINTA_DEBUG": text}).debug is on


def test_a_flag_variable_that_is_not_a_flag_is_a_config_error() -> None:
    # GRINTA_DEBUG=false turned debugging on (anything but 0 did), silently.
    with pytest.raises(ConfigError, match=r"^GRINTA_DEBUG=maybe: expected 1 or 0"):
        Config.from_env({"GRINTA_DEBUG": "maybe"})
