"""Attacks on the model client, the catalog and the key field: servers that misbehave.

Real litellm calls go to real local servers: ``tests/openai_server.py`` where a scripted
reply says it, and a raw socket server here for what that server cannot send (a tool
call without an id, an HTML page, a trickle of bytes).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from grinta_jupyter.agent.models import catalog
from grinta_jupyter.agent.models.base import ModelError, ModelReply
from grinta_jupyter.agent.models.litellm_model import LiteLLMModel
from tests.openai_server import OpenAIServer, Reply, openai_server_fixture  # noqa: F401

# A key no other test uses: held keys are redacted process-wide.
ODD_KEY = "sk-m4attackQzxvJwbkPfy"


class RawServer:
    """Answers each request on 127.0.0.1 with ``answer(connection)``; records the heads."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.answer = answer
        self.heads: list[str] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            while len(body) < length:
                body += conn.recv(65536)
            self.heads.append(head.decode("latin-1"))
            self.answer(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()


@pytest.fixture
def raw() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    servers: list[RawServer] = []

    def make(answer: Callable[[socket.socket], None]) -> RawServer:
        servers.append(RawServer(answer))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def call_piece(index: int, call_id: str | None, name: str, arguments: str) -> bytes:
    piece: dict[str, Any] = {
        "index": index,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    if call_id is not None:
        piece["id"] = call_id
    return event({"tool_calls": [piece]})


def calls_stream(*pieces: bytes) -> Callable[[socket.socket], None]:
    body = event({"role": "assistant", "content": ""}) + b"".join(pieces)
    body += event({}, "tool_calls") + b"data: [DONE]\n\n"
    return lambda conn: conn.sendall(SSE_HEAD + body)


def complete(url: str, key: str = "k", **kwargs: Any) -> ModelReply:
    model = LiteLLMModel("openai/x", api_base=url, api_key=key, timeout=10, **kwargs)
    messages = [{"role": "user", "content": "hi"}]
    return asyncio.run(asyncio.wait_for(model.complete(messages, []), 30))


# -- tool calls as some servers send them --------------------------------------------------------


def test_tool_calls_sent_without_ids_are_kept(raw: Any) -> None:
    server = raw(
        calls_stream(
            call_piece(0, None, "read_file", '{"path": "a.py"}'),
            call_piece(1, None, "run", '{"command": "ls"}'),
        )
    )
    reply = complete(server.url)
    # Before: litellm's rebuilding dropped both, and the session heard "no tool call".
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("read_file", '{"path": "a.py"}'),
        ("run", '{"command": "ls"}'),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2 and all(c.id for c in reply.tool_calls)


def test_two_calls_at_one_index_stay_two_calls(raw: Any) -> None:
    server = raw(
        calls_stream(
            call_piece(0, "a", "read_file", '{"path": "a.py"}'),
            call_piece(0, "b", "run", '{"command": "ls"}'),
        )
    )
    reply = complete(server.url)
    # Before: one call named run with '{"path": "a.py"}{"command": "ls"}'.
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("a", "read_file", '{"path": "a.py"}'),
        ("b", "run", '{"command": "ls"}'),
    ]


def test_two_calls_with_one_id_get_ids_that_tell_them_apart(raw: Any) -> None:
    server = raw(
        calls_stream(
            call_piece(0, "same", "read_file", "{}"),
            call_piece(1, "same", "run", "{}"),
        )
    )
    reply = complete(server.url)
    assert [c.name for c in reply.tool_calls] == ["read_file", "run"]
    assert reply.tool_calls[0].id == "same"
    assert len({c.id for c in reply.tool_calls}) == 2


# -- answers that are not a model's --------------------------------------------------------------


def test_an_html_page_is_a_bad_response_not_an_empty_reply(raw: Any) -> None:
    page = b"<html><body>Sign in to the portal</body></html>"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n"
    server = raw(lambda conn: conn.sendall(head % len(page) + b"Connection: close\r\n\r\n" + page))
    with pytest.raises(ModelError) as caught:
        complete(server.url, max_retries=0)
    assert caught.value.code == "BAD_RESPONSE"
    assert "web page" in caught.value.message and "GRINTA_API_BASE" in caught.value.message


def test_retry_after_ms_nan_falls_back_to_retry_after(openai_server: OpenAIServer) -> None:
    headers = {"retry-after-ms": "nan", "Retry-After": "3600"}
    openai_server.queue(*[Reply(status=429, error_message="slow", headers=headers)] * 3)
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        complete(openai_server.url, max_retries=2, backoff=0.01)
    # Before: "nan" meant no wait, and the call was retried at once, Retry-After unread.
    assert len(openai_server.requests) == 1
    assert "3600 s" in caught.value.message
    assert time.monotonic() - started < 20


# -- keys pasted with more than the key ----------------------------------------------------------


def ok_stream(conn: socket.socket) -> None:
    conn.sendall(
        SSE_HEAD + event({"role": "assistant", "content": "hi"}, "stop") + b"data: [DONE]\n\n"
    )


@pytest.mark.parametrize("pasted", ["\ufeff" + ODD_KEY, ODD_KEY + "\u200b", f"\u2060{ODD_KEY}\n"])
def test_a_key_with_a_bom_or_zero_width_space_is_sent_without_it(raw: Any, pasted: str) -> None:
    server = raw(ok_stream)
    # Before: "NETWORK: HTTP 500: 'ascii' codec can't encode", retried, key never named.
    assert complete(server.url, key=pasted, max_retries=0).text == "hi"
    sent = {
        line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip()
        for line in server.heads[0].split("\r\n")[1:]
    }
    assert sent["authorization"] == f"Bearer {ODD_KEY}"


@pytest.mark.parametrize("pasted", ["sk-m4attack\nQzxvJwbkPfy", "sk-m4attack\u00e9QzxvJwbkPfy"])
def test_a_key_no_header_can_carry_is_refused_at_once(raw: Any, pasted: str) -> None:
    server = raw(ok_stream)
    with pytest.raises(ModelError) as caught:
        complete(server.url, key=pasted, max_retries=3, backoff=0.5)
    # Before: NETWORK "HTTP 500", retried; the key field never said the key was refused.
    assert caught.value.code == "AUTH" and not caught.value.retryable
    assert "key" in caught.value.message and server.heads == []
    assert "QzxvJwbkPfy" not in caught.value.message


def in_own_process(code: str) -> str:
    """Run ``code`` in a fresh interpreter: a held key is redacted for the rest of the
    process, and would change what later tests of this worker see."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_held_key_is_held_and_redacted_as_it_is_sent() -> None:
    out = in_own_process(
        "from grinta_jupyter.agent.models.keys import HeldKeys\n"
        "from grinta_jupyter.runtime.secrets import Secrets\n"
        "keys = HeldKeys()\n"
        f"keys.put('openai', '\\ufeff{ODD_KEY}\\u200b')\n"
        "print(keys.get('openai') == " + repr(ODD_KEY) + ")\n"
        f"print(Secrets.from_env({{}}).redact('token={ODD_KEY} end'))\n"
    )
    # Before: held with its byte order mark, so the key the provider saw was not redacted.
    assert out.splitlines() == ["True", "token=[REDACTED] end"]


def test_the_key_field_refuses_a_key_with_a_letter_no_header_carries() -> None:
    out = in_own_process(
        "from grinta_jupyter.agent.models.keys import HELD\n"
        "from grinta_jupyter.jupyter.modelbar import ModelBarWidget\n"
        "bar = ModelBarWidget(key_provider='openai')\n"
        "bar.receive({'event': 'key', 'provider': 'openai', "
        "'key': 'sk-m4attack\\u00a0QzxvJwbkPfy'})\n"
        "print(HELD.get('openai'))\n"
        "print(bar.status)\n"
        f"bar.receive({{'event': 'key', 'provider': 'openai', 'key': '\\ufeff{ODD_KEY}'}})\n"
        f"print(HELD.get('openai') == {ODD_KEY!r})\n"
    )
    lines = out.splitlines()
    # Before: held as typed; every call then failed as a retried "HTTP 500".
    assert lines[0] == "None"
    assert "not a key" in lines[1] and "ASCII" in lines[1]
    assert lines[2] == "True"


# -- grinta models and the picker against a trickling server -------------------------------------


def trickle(head: bytes) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(head)
        for _ in range(200):
            conn.sendall(b" ")
            time.sleep(0.1)

    return answer


@pytest.mark.parametrize(
    "head",
    [b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n", b"HTTP/1.0 200 OK\r\nX-A: b"],
    ids=["body", "headers"],
)
def test_a_server_trickling_bytes_cannot_hold_a_probe(raw: Any, head: bytes) -> None:
    server = raw(trickle(head))
    found: list[catalog.Probe] = []
    worker = threading.Thread(
        target=lambda: found.append(catalog.probe_models(server.url, timeout=1.0)), daemon=True
    )
    started = time.monotonic()
    worker.start()
    worker.join(8)
    # Before: each read waited at most 1 s, and a byte came every 0.1 s: it never ended.
    assert found, "the probe was still reading after 8 s"
    assert time.monotonic() - started < 4
    assert found[0].status == "unreachable" and found[0].detail == "no answer in time"
