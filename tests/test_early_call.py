"""Calls made before litellm is loaded (agent/models/early.py), against a real local server.

The claim under test: for a model litellm knows nothing about on a server of one's own,
the request that goes out early is the one litellm sends, its answer is read as litellm
reads it, and anything but a clean stream ends as litellm would end it (litellm sends
the request again). Each side is the real thing: litellm's own request (the
``openai_server`` fixture loads litellm) beside the early one, and fresh interpreters
(subprocesses, a kernel) where litellm is not loaded at all.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter.agent.models import LiteLLMModel, early
from grinta_jupyter.agent.models.base import ModelError
from grinta_jupyter.agent.models.litellm_model import _known
from grinta_jupyter.tools import intent_toolset
from tests.kernels import execute, running_kernel, wait_for
from tests.openai_server import (
    OpenAIServer,
    RawServer,
    Reply,
    error_reply,
    stall_reply,
    text_reply,
    tool_call,
    tool_reply,
)

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-local-early-test"

# A conversation as a session sends it: system, task, a call with text, its result, a call
# without text, a result with characters JSON escapes, and the toolset's schemas.
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are grinta.\nWork in /tmp/w."},
    {"role": "user", "content": "fix the failing test — «naïve» 日本"},
    {
        "role": "assistant",
        "content": "Running the tests.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "run", "arguments": '{"command": "pytest -q"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "run", "content": "1 failed\n\x1b[0m"},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_2", "name": "read", "content": 'x = "\\u00e9"\t\n'},
]


def _model(server: OpenAIServer, **kwargs: Any) -> LiteLLMModel:
    options: dict[str, Any] = {"api_base": server.url, "api_key": KEY, "backoff": 0.01}
    return LiteLLMModel("openai/test-model", **{**options, **kwargs})


def _early(model: LiteLLMModel, tools: list[dict[str, Any]], texts: list[str]) -> Any:
    return asyncio.run(model._early_attempt(MESSAGES, tools, texts.append, []))


@pytest.mark.parametrize("temperature", [0.0, None, 0.7])
def test_the_early_request_is_the_one_litellm_sends(openai_server, temperature):
    tools = intent_toolset().schemas()
    openai_server.queue(text_reply("a"), text_reply("a"))
    model = _model(openai_server, temperature=temperature)
    asyncio.run(model.complete(MESSAGES, tools))  # litellm is loaded: litellm sends it
    _early(model, tools, [])
    sent_by_litellm, sent_early = openai_server.requests
    # Two senders really (litellm's OpenAI client and httpx), one request.
    assert sent_by_litellm.headers["user-agent"].startswith("AsyncOpenAI/")
    assert sent_early.headers["user-agent"].startswith("python-httpx/")
    assert sent_early.path == sent_by_litellm.path == "/v1/chat/completions"
    assert sent_early.body == sent_by_litellm.body
    assert sent_early.headers["authorization"] == f"Bearer {KEY}"
    assert sent_early.headers["content-type"] == "application/json"


REPLIES = {
    "text": text_reply("Hello — «there» 日本", chunk_size=2),
    "calls": tool_reply(
        tool_call("read", {"path": "a.py"}),
        tool_call("run", {"command": "ls"}),
        text="Let me look.",
        chunk_size=4,
    ),
    "calls without ids": tool_reply(("", "read", '{"path": "a.py"}'), ("", "run", "{}")),
    "malformed arguments": tool_reply(tool_call("read", '{"path": "a.')),
    "no usage": tool_reply(tool_call("read", {"path": "a.py"}), text="x", send_usage=False),
    "cut by length": text_reply("hi", finish_reason="length"),
    "empty": text_reply(""),
    "cut short after text": text_reply("a partial answer", drop_after=3),
}


@pytest.mark.parametrize("name", list(REPLIES))
def test_the_answer_is_read_as_litellm_reads_it(openai_server, name):
    reply = REPLIES[name]
    openai_server.queue(reply, reply)
    model = _model(openai_server, max_retries=0)

    def outcome(call: Any) -> Any:
        texts: list[str] = []
        try:
            return call(texts), texts
        except ModelError as exc:
            return (exc.code, exc.message, exc.retryable), texts

    litellm_side = outcome(lambda t: asyncio.run(model.complete(MESSAGES, [], t.append)))
    early_side = outcome(lambda t: _early(model, [], t))
    assert early_side == litellm_side
    assert [r.headers["user-agent"][:6] for r in openai_server.requests] == ["AsyncO", "python"]


def test_a_stream_cut_before_any_text_is_left_to_litellm(openai_server):
    openai_server.queue(text_reply("never seen", drop_after=1))
    with pytest.raises(early.NotServed):
        _early(_model(openai_server), [], [])


@pytest.mark.parametrize(
    "events",
    [
        [b"data: {not json}\n\n"],
        [b'data: {"error": {"message": "overloaded", "code": 503}}\n\n'],
        [b'data: {"choices": [{"delta": {"tool_calls": "read"}}]}\n\n'],
        [b'data: {"choices": [{"delta": {"tool_calls": [{"index": true}]}}]}\n\n'],
        [b'data: {"choices": [{"delta": {"tool_calls": [{"function": {"name": 3}}]}}]}\n\n'],
        [b'data: ["a list"]\n\n'],
    ],
)
def test_a_stream_that_cannot_be_read_before_text_is_left_to_litellm(events):
    with RawServer(events) as url:
        model = LiteLLMModel("openai/test-model", api_base=url, api_key=KEY)
        with pytest.raises(early.NotServed):
            _early(model, [], [])


def test_a_stream_that_breaks_after_text_fails_the_attempt_and_keeps_the_text():
    first = b'data: {"choices": [{"delta": {"content": "half"}, "finish_reason": null}]}\n\n'
    with RawServer([first, b"data: {broken\n\n"]) as url:
        model = LiteLLMModel("openai/test-model", api_base=url, api_key=KEY)
        texts: list[str] = []
        with pytest.raises(ModelError) as caught:
            _early(model, [], texts)
    assert texts == ["half"]
    assert caught.value.code == "NETWORK" and "not JSON" in caught.value.message


def test_a_web_page_or_a_status_is_left_to_litellm(openai_server):
    openai_server.queue(error_reply(401, "no such key"), error_reply(500, "boom"))
    model = _model(openai_server)
    for status in (401, 500):
        with pytest.raises(early.NotServed) as caught:
            _early(model, [], [])
        assert caught.value.status == status
    with RawServer([b"<html>login</html>"], "text/html") as url:
        page = LiteLLMModel("openai/test-model", api_base=url, api_key=KEY)
        with pytest.raises(early.NotServed) as caught:
            _early(page, [], [])
        assert caught.value.status is None


def test_a_timeout_is_the_attempts_own_and_says_what_litellm_says(openai_server):
    openai_server.queue(stall_reply(5, before_headers=True))
    model = _model(openai_server, timeout=0.5, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        _early(model, [], [])
    assert time.monotonic() - started < 4
    assert caught.value.code == "TIMEOUT" and caught.value.retryable
    assert caught.value.message == "openai/test-model did not answer within 0.5 s"


def test_stop_closes_the_early_connection(openai_server):
    openai_server.queue(stall_reply(30))
    model = _model(openai_server)

    async def stop_it() -> None:
        task = asyncio.ensure_future(model._early_attempt(MESSAGES, [], None, []))
        while not openai_server.requests:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # inside the stream: the first chunk has come
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_it())
    deadline = time.monotonic() + 5
    while not openai_server.disconnects and time.monotonic() < deadline:
        time.sleep(0.02)
    assert openai_server.disconnects


def test_a_redirect_is_not_followed_with_the_key(openai_server):
    with (
        OpenAIServer() as elsewhere,
        RawServer([], location=elsewhere.url + "/chat/completions") as url,
    ):
        model = LiteLLMModel("openai/test-model", api_base=url, api_key=KEY)
        with pytest.raises(early.NotServed) as caught:
            _early(model, [], [])
        assert caught.value.status == 307
        assert elsewhere.requests == []


@pytest.mark.parametrize(
    ("model", "api_base", "extra", "goes"),
    [
        ("openai/test-model", "http://127.0.0.1:8000/v1", {}, True),
        ("openai/qwen2.5-coder:7b", "https://llm.internal/v1", {}, True),
        ("openai/test-model", None, {}, False),  # OpenAI itself: its models are litellm's
        ("openai/gpt-4o-mini", "http://127.0.0.1:8000/v1", {}, False),  # in litellm's map
        ("openai/my-gpt-5-proxy", "http://127.0.0.1:8000/v1", {}, False),  # a name rule
        ("openai/o3-local", "http://127.0.0.1:8000/v1", {}, False),  # the o-series rule
        ("hosted_vllm/test-model", "http://127.0.0.1:8000/v1", {}, False),
        ("ollama_chat/qwen2.5-coder", "http://127.0.0.1:11434", {}, False),
        ("test-model", "http://127.0.0.1:8000/v1", {}, False),
        ("openai/", "http://127.0.0.1:8000/v1", {}, False),
        ("openai/test-model", "http://127.0.0.1:8000/v1", {"top_p": 0.5}, False),
        ("openai/test-model", "http://u:p@127.0.0.1:8000/v1", {}, False),
        ("openai/test-model", "http://127.0.0.1:8000/v1?key=1", {}, False),
        ("openai/test-model", "unix:///tmp/sock", {}, False),
        ("openai/test-model", "http://[::1/v1", {}, False),
    ],
)
def test_which_models_go_early(model, api_base, extra, goes):
    assert early.eligible(model, api_base, extra, _known(model)) is goes


def test_an_openai_organisation_leaves_the_call_to_litellm(monkeypatch):
    url = "http://127.0.0.1:8000/v1"
    assert early.eligible("openai/test-model", url, {}, False)
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-1")
    assert not early.eligible("openai/test-model", url, {}, False)


def test_arguments_only_litellm_knows_are_refused():
    with pytest.raises(early.NotServed):
        early.request_body({"model": "openai/x", "messages": [], "seed": 3})


# -- in a fresh interpreter: litellm is not loaded --------------------------------------------

FRESH = """
    import asyncio, json, sys, threading
    from grinta_jupyter.agent.models import LiteLLMModel
    from grinta_jupyter.agent.models.base import ModelError
    model = LiteLLMModel("openai/test-model", api_base=sys.argv[1], api_key="{key}",
                         backoff=0.01, timeout=float(sys.argv[2]), max_retries=int(sys.argv[3]))
    out = []
    for _ in range(int(sys.argv[4])):
        early = model.calls_early()
        loaded = []  # whether litellm was loaded while the answer streamed
        def shown(text):
            loaded.append("litellm" in sys.modules)
        try:
            reply = asyncio.run(model.complete([{{"role": "user", "content": "hi"}}], [], shown))
            got = [reply.text, [c.name for c in reply.tool_calls], reply.usage.prompt_tokens]
        except ModelError as exc:
            got = [exc.code, exc.message]
        out.append([early, got, loaded[:1], "litellm" in sys.modules])
        # What an early call started in the background: the next call is litellm's.
        for thread in threading.enumerate():
            if thread.name == "grinta-litellm":
                thread.join()
    print(json.dumps(out))
    """


def _fresh(url: str, timeout: float = 30, retries: int = 3, calls: int = 1) -> list[Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FRESH.format(key=KEY))]
        + [url, str(timeout), str(retries), str(calls)],
        capture_output=True,
        text=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "1"},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_in_a_fresh_interpreter_the_first_call_does_not_wait_for_litellm():
    with OpenAIServer() as server:
        server.queue(
            tool_reply(tool_call("read", {"path": "a.py"}), text="Reading."),
            text_reply("done"),
        )
        results = _fresh(server.url, calls=2)
    # The first call went out and streamed with litellm not even imported; it started
    # litellm's import, and the next call, once it was over, was litellm's.
    assert results == [
        [True, ["Reading.", ["read"], 11], [False], True],
        [False, ["done", [], 11], [True], True],
    ]
    agents = [r.headers["user-agent"][:12] for r in server.requests]
    assert agents == ["python-httpx", "AsyncOpenAI/"]


def test_in_a_fresh_interpreter_an_early_timeout_is_not_waited_twice():
    with OpenAIServer() as server:
        server.queue(stall_reply(5, before_headers=True))
        results = _fresh(server.url, timeout=0.5, retries=0)
    assert results == [
        [True, ["TIMEOUT", "openai/test-model did not answer within 0.5 s"], [], False]
    ]
    assert len(server.requests) == 1


def test_a_refused_early_call_ends_with_litellms_own_error():
    with OpenAIServer() as server:
        server.queue(error_reply(401, "no such key"), error_reply(401, "no such key"))
        [(went_early, got, _, loaded)] = _fresh(server.url)
    assert went_early and loaded  # litellm was loaded to send it again
    assert got[0] == "AUTH" and "no such key" in got[1] and KEY not in got[1]
    agents = [r.headers["user-agent"][:6] for r in server.requests]
    assert agents == ["python", "AsyncO"]
    assert server.requests[0].body == server.requests[1].body


def test_a_throttled_early_call_waits_as_asked_before_litellm_sends_it_again():
    with OpenAIServer() as server:
        server.queue(error_reply(429, "slow down", retry_after="1"), text_reply("ok"))
        [(_, got, _, _)] = _fresh(server.url)
        first, second = server.requests
    assert got == ["ok", [], 11]
    assert second.received_at - first.received_at >= 0.95
    assert second.headers["user-agent"].startswith("AsyncOpenAI/")


def test_a_web_page_from_the_api_base_gets_litellms_explanation():
    with RawServer([b"<html>sign in</html>"], "text/html", times=2) as url:
        [(_, got, _, loaded)] = _fresh(url)
    assert loaded and got[0] == "BAD_RESPONSE" and "web page" in got[1]


# -- in a kernel: the warming leaves litellm's import until the first card -------------------


def test_run_all_shows_the_first_card_before_litellm_is_imported(tmp_path):
    (tmp_path / "README.md").write_text("# hello\n")
    with OpenAIServer() as server:
        server.queue(
            Reply(tool_calls=[tool_call("read", {"path": "README.md"})], delay=1.5),
            tool_reply(tool_call("finish", {"summary": "read it"})),
        )
        env = {
            "GRINTA_MODEL": "openai/test-model",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        with running_kernel(tmp_path, env) as kc:
            # Run All: both cells at once, the second queued behind the first.
            kc.execute("%load_ext grinta_jupyter")
            execute(kc, "%grinta read the README")
            execute(kc, "import grinta_jupyter")
            deadline = time.monotonic() + 120
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.requests, "the session sent no request"
            # The warming's imports were over before the request went out: unheld, it
            # would be importing litellm by now. The request was counted by the counting
            # helper: the kernel loads the token encoding only after the card, too.
            time.sleep(0.5)
            assert execute(kc, "import sys; print('litellm' in sys.modules)").strip() == "False"
            assert execute(kc, "print('tiktoken' in sys.modules)").strip() == "False"
            wait_for(kc, "grinta_jupyter.current().steps")
            # The card is shown: the warming goes on and imports litellm.
            wait_for(kc, "grinta_jupyter._warmed.is_set()")
            assert execute(kc, "print(sorted(grinta_jupyter._warming_times))").strip() == (
                "['imports', 'model', 'tokens']"
            )
    assert server.requests[0].headers["user-agent"].startswith("python-httpx/")


def test_a_first_call_through_litellm_is_not_slowed_by_the_encodings_load(tmp_path):
    # A model litellm knows: the first call waits for litellm's import, and goes out through
    # it. The warming then leaves the token encoding's load (the interpreter's lock for over
    # half a second) until the first card is shown: the counting helper counted the request.
    (tmp_path / "README.md").write_text("# hello\n")
    with OpenAIServer() as server:
        server.queue(
            Reply(tool_calls=[tool_call("read", {"path": "README.md"})], delay=2.5),
            tool_reply(tool_call("finish", {"summary": "read it"})),
        )
        env = {
            "GRINTA_MODEL": "openai/gpt-4o-mini",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        with running_kernel(tmp_path, env) as kc:
            kc.execute("%load_ext grinta_jupyter")
            execute(kc, "%grinta read the README")
            execute(kc, "import grinta_jupyter, sys\nfrom grinta_jupyter.tools import tokens")
            deadline = time.monotonic() + 120
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.requests, "the session sent no request"
            time.sleep(1.2)  # the encoding's load takes 0.5-0.8 s: it would be over by now
            loaded = execute(kc, "print('litellm' in sys.modules, tokens._loaded is None)")
            assert loaded.strip() == "True True"
            wait_for(kc, "grinta_jupyter.current().steps")
            wait_for(kc, "grinta_jupyter._warmed.is_set()")
            assert execute(kc, "print(tokens._loaded is not None)").strip() == "True"
    assert not server.requests[0].headers["user-agent"].startswith("python-httpx/")


def test_the_raw_server_says_what_it_is_told():
    # The helper above answers as the tests say: a stream read whole by a client.
    import urllib.request

    with (
        RawServer([b"data: one\n\n"]) as url,
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}")) as answer,
    ):
        assert answer.read() == b"data: one\n\n"
        assert answer.headers["Content-Type"] == "text/event-stream"
