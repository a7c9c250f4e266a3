"""LiteLLMModel against a scripted OpenAI-compatible server: real litellm, no network."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import LiteLLMModel, ModelError, ToolCall
from grinta_jupyter.agent.models.litellm_model import PROVIDER_KEYS
from tests.openai_server import (
    OpenAIServer,
    error_reply,
    openai_server_fixture,  # noqa: F401  (provides the `openai_server` fixture)
    stall_reply,
    text_reply,
    tool_call,
    tool_reply,
)

# litellm trips pydantic's deprecation warnings on every stream; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*")

KEY = "sk-test-0123456789abcdef"
MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Read a.py"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


@pytest.fixture(autouse=True)
def _no_keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in {v for group in PROVIDER_KEYS.values() for v in group}:
        monkeypatch.delenv(name, raising=False)
    for name in ("GRINTA_MODEL", "GRINTA_API_BASE", "GRINTA_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def local(server: OpenAIServer, model: str = "openai/x", **kwargs) -> LiteLLMModel:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff", 0.001)
    kwargs.setdefault("timeout", 10.0)
    return LiteLLMModel(model, api_base=server.url, **kwargs)


def complete(model: LiteLLMModel, on_text=None, tools=TOOLS):
    return asyncio.run(model.complete(MESSAGES, tools, on_text))


def test_streams_text_and_rebuilds_split_tool_calls(openai_server: OpenAIServer) -> None:
    args = {"path": "src/pkg/module.py", "start_line": 10, "end_line": 40}
    openai_server.queue(
        tool_reply(
            tool_call("read", args, id="call_a"),
            tool_call("search", {"query": "def main"}, id="call_b"),
            text="Let me read the module first.",
            chunk_size=2,
        )
    )
    deltas: list[str] = []

    reply = complete(local(openai_server), on_text=deltas.append)

    assert reply.text == "Let me read the module first."
    assert len(deltas) > 5 and "".join(deltas) == reply.text
    assert reply.tool_calls == [
        ToolCall("call_a", "read", json.dumps(args)),
        ToolCall("call_b", "search", json.dumps({"query": "def main"})),
    ]
    assert reply.finish_reason == "tool_calls"
    body = openai_server.requests[0].body
    assert body["messages"] == MESSAGES
    assert body["tools"] == TOOLS
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.0
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_plain_text_reply_without_tools(openai_server: OpenAIServer) -> None:
    openai_server.queue(text_reply("All done."))

    reply = complete(local(openai_server, temperature=None), tools=[])

    assert (reply.text, reply.tool_calls, reply.finish_reason) == ("All done.", [], "stop")
    body = openai_server.requests[0].body
    assert "tools" not in body and "temperature" not in body


def test_malformed_tool_call_json_comes_through_raw(openai_server: OpenAIServer) -> None:
    broken = '{"path": "a.py", "content": "unterminated'
    openai_server.queue(tool_reply(tool_call("create", broken, id="call_x")))

    reply = complete(local(openai_server))

    assert reply.tool_calls == [ToolCall("call_x", "create", broken)]


def test_usage_and_cost_from_the_stream(openai_server: OpenAIServer) -> None:
    openai_server.queue(
        text_reply("priced", prompt_tokens=1000, completion_tokens=200),
        text_reply("unpriced", prompt_tokens=1000, completion_tokens=200),
    )

    priced = complete(local(openai_server, "openai/gpt-4o-mini"))
    unpriced = complete(local(openai_server, "openai/my-local-model"))

    assert (priced.usage.prompt_tokens, priced.usage.completion_tokens) == (1000, 200)
    assert priced.usage.cost is not None and 0 < priced.usage.cost < 0.01
    assert (unpriced.usage.prompt_tokens, unpriced.usage.completion_tokens) == (1000, 200)
    assert unpriced.usage.cost is None


def test_usage_is_counted_when_the_server_sends_none(openai_server: OpenAIServer) -> None:
    openai_server.queue(text_reply("some words to count here", send_usage=False))

    reply = complete(local(openai_server))

    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def test_rate_limit_is_retried_after_the_retry_after_delay(openai_server: OpenAIServer) -> None:
    openai_server.queue(error_reply(429, "slow down", retry_after="0.4"), text_reply("ok"))

    reply = complete(local(openai_server))

    assert reply.text == "ok"
    first, second = openai_server.requests
    assert second.received_at - first.received_at >= 0.4


def test_rate_limit_without_retry_after_uses_backoff(openai_server: OpenAIServer) -> None:
    openai_server.queue(error_reply(429), error_reply(429), text_reply("ok"))

    reply = complete(local(openai_server, backoff=0.05))

    assert reply.text == "ok"
    times = [r.received_at for r in openai_server.requests]
    # 0.05 s then 0.1 s: exponential, and far below the default 1 s because the test asked
    assert 0.05 <= times[1] - times[0] < 2
    assert 0.1 <= times[2] - times[1] < 2


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retried(openai_server: OpenAIServer, status: int) -> None:
    openai_server.queue(error_reply(status), text_reply("recovered"))

    assert complete(local(openai_server)).text == "recovered"
    assert len(openai_server.requests) == 2


def test_retries_give_up_after_max_retries(openai_server: OpenAIServer) -> None:
    openai_server.queue(*[error_reply(500, "boom")] * 3)

    with pytest.raises(ModelError) as info:
        complete(local(openai_server, max_retries=2))

    assert (info.value.code, info.value.retryable) == ("NETWORK", True)
    assert "500" in info.value.message
    assert len(openai_server.requests) == 3


def test_a_stream_broken_off_before_any_text_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.queue(
        tool_reply(tool_call("read", {"path": "a.py"}), drop_after=3), text_reply("second try")
    )

    assert complete(local(openai_server)).text == "second try"
    assert len(openai_server.requests) == 2


def test_a_stream_broken_off_after_text_is_not_retried(openai_server: OpenAIServer) -> None:
    # The front end already showed the text; a retry would show a different answer after it.
    openai_server.queue(text_reply("partial answer", drop_after=3), text_reply("second try"))
    deltas: list[str] = []

    with pytest.raises(ModelError) as info:
        complete(local(openai_server), on_text=deltas.append)

    assert (info.value.code, info.value.retryable) == ("NETWORK", True)
    assert deltas and len(openai_server.requests) == 1


def test_a_very_long_retry_after_fails_at_once(openai_server: OpenAIServer) -> None:
    openai_server.queue(error_reply(429, "daily quota", retry_after="3600"), text_reply("late"))

    model = local(openai_server)

    with pytest.raises(ModelError) as info:
        # Were the cap broken this would sleep an hour; fail in seconds instead.
        asyncio.run(asyncio.wait_for(model.complete(MESSAGES, TOOLS), 10))

    assert info.value.code == "RATE_LIMIT" and "3600" in info.value.message
    assert len(openai_server.requests) == 1


def test_auth_failure_is_not_retried_and_hides_the_key(openai_server: OpenAIServer) -> None:
    openai_server.queue(error_reply(401, f"Incorrect API key provided: {KEY}"), text_reply("no"))

    with pytest.raises(ModelError) as info:
        complete(local(openai_server))

    error = info.value
    assert (error.code, error.retryable) == ("AUTH", False)
    assert "Incorrect API key" in error.message
    assert KEY not in error.message and KEY not in str(error) and "\n" not in error.message
    assert len(openai_server.requests) == 1


def test_unknown_model_names_the_model_string(openai_server: OpenAIServer) -> None:
    openai_server.queue(error_reply(404, "The model `gpt-9` does not exist"))

    with pytest.raises(ModelError) as info:
        complete(local(openai_server, "openai/gpt-9"))

    assert info.value.code == "UNKNOWN_MODEL" and "openai/gpt-9" in info.value.message
    assert len(openai_server.requests) == 1


def test_other_bad_requests_are_not_retried(openai_server: OpenAIServer) -> None:
    openai_server.queue(error_reply(400, "messages[2].role is invalid"), text_reply("no"))

    with pytest.raises(ModelError) as info:
        complete(local(openai_server))

    assert (info.value.code, info.value.retryable) == ("BAD_REQUEST", False)
    assert "messages[2].role" in info.value.message


def test_model_string_without_a_provider_fails_before_any_request() -> None:
    with pytest.raises(ModelError) as info:
        asyncio.run(LiteLLMModel("no-such-model-xyz").complete(MESSAGES, TOOLS))

    assert info.value.code == "UNKNOWN_MODEL" and "no-such-model-xyz" in info.value.message


def test_missing_key_is_reported_before_any_request() -> None:
    with pytest.raises(ModelError) as info:
        asyncio.run(LiteLLMModel("openai/gpt-4o-mini").complete(MESSAGES, TOOLS))

    assert (info.value.code, info.value.retryable) == ("MISSING_KEY", False)
    assert "OPENAI_API_KEY" in info.value.message


def test_key_from_the_environment_is_used(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    openai_server.queue(text_reply("hi"))

    assert complete(local(openai_server, api_key=None)).text == "hi"
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_local_compatible_server_needs_no_key(openai_server: OpenAIServer) -> None:
    openai_server.queue(text_reply("local"))

    assert complete(local(openai_server, api_key=None)).text == "local"


def test_cancelling_a_stalled_stream_returns_at_once_and_closes_it(
    openai_server: OpenAIServer,
) -> None:
    openai_server.queue(stall_reply(30), stall_reply(30, before_headers=True))
    model = local(openai_server, timeout=60.0)

    async def cancel_while_stalled() -> float:
        task = asyncio.create_task(model.complete(MESSAGES, TOOLS))
        while not openai_server.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    for n in (1, 2):  # inside the stream, then before the response headers
        assert asyncio.run(cancel_while_stalled()) < 0.5
        deadline = time.monotonic() + 2
        while len(openai_server.disconnects) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(openai_server.disconnects) == n, "the HTTP connection was left open"


def test_a_stalled_stream_times_out(openai_server: OpenAIServer) -> None:
    openai_server.queue(stall_reply(30))

    with pytest.raises(ModelError) as info:
        complete(local(openai_server, timeout=0.3, max_retries=0))

    assert (info.value.code, info.value.retryable) == ("TIMEOUT", True)
    assert time.monotonic() - openai_server.requests[0].received_at < 5  # the stall is 30 s


def test_unreachable_server_is_a_network_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the call: nothing listens
    model = LiteLLMModel(
        "openai/x", api_base=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=1, backoff=0
    )

    with pytest.raises(ModelError) as info:
        asyncio.run(model.complete(MESSAGES, TOOLS))

    assert (info.value.code, info.value.retryable) == ("NETWORK", True)
    assert f"127.0.0.1:{port}" in info.value.message


def test_importing_the_package_does_not_import_litellm() -> None:
    code = (
        "import sys, grinta_jupyter.agent.models as m\n"
        "m.resolve_model('openai/gpt-4o-mini')\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('litellm', 'openai')))\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_negative_usage_counts_nothing(openai_server: OpenAIServer) -> None:
    """A server reporting negative tokens must not lower the session's totals (its budgets
    are checked against them)."""
    openai_server.queue(text_reply("hi", prompt_tokens=-500, completion_tokens=-7))

    reply = complete(local(openai_server))

    assert reply.text == "hi"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (0, 0)


@pytest.mark.parametrize("counts", [("many", "few"), (2.5, 1.5)])
def test_usage_litellm_cannot_read_is_a_bad_response_not_a_network_error(
    openai_server: OpenAIServer, counts: tuple[object, object]
) -> None:
    prompt, completion = counts
    for _ in range(2):
        openai_server.queue(
            text_reply("hi", prompt_tokens=prompt, completion_tokens=completion)  # type: ignore[arg-type]
        )

    with pytest.raises(ModelError) as raised:
        complete(local(openai_server, max_retries=1))

    # The server was reached: saying it cannot be reached (and retrying) would mislead.
    assert raised.value.code == "BAD_RESPONSE" and not raised.value.retryable
    assert "cannot reach" not in raised.value.message
    assert "validation errors for Usage" in raised.value.message
    assert openai_server.pending == 1  # asked once, not retried
