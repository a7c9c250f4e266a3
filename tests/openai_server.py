"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests.

Real litellm calls go to this server instead of the network. Queue the
answers, point the client at ``server.url``, then assert on what the server
received::

    def test_something(openai_server):
        openai_server.queue(text_reply("Hello"), error_reply(429, retry_after="1"))
        model = LiteLLMModel("openai/x", api_base=openai_server.url, api_key="k")
        ...
        assert openai_server.requests[0].body["messages"] == [...]

Each request to ``/v1/chat/completions`` takes the next ``Reply`` off the
queue and answers it as plain JSON or, when the request asks for
``stream=true``, as server-sent events with text and tool-call arguments
split into ``chunk_size`` pieces. An empty queue answers 400 so a test that
sends one request too many fails loudly instead of hanging.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = [
    "OpenAIServer",
    "RawServer",
    "RecordedRequest",
    "Reply",
    "error_reply",
    "openai_server_fixture",
    "stall_reply",
    "text_reply",
    "tool_call",
    "tool_reply",
]


@dataclass
class Reply:
    """One scripted answer. Build it with the ``*_reply`` helpers below."""

    text: str = ""
    # (id, name, raw arguments text): the text is sent as is, valid JSON or not.
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int = 7
    # False: no usage chunk even when the request asks for one (as some servers do).
    send_usage: bool = True
    chunk_size: int = 3
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = ""
    # Seconds to hang. Streaming: after the headers and the first chunk, so the
    # client is inside the stream. With ``stall_before_headers``: before any byte.
    stall: float = 0.0
    stall_before_headers: bool = False
    # Seconds to wait before answering at all (then the reply goes as scripted).
    delay: float = 0.0
    # Streaming: hang up after this many chunks, with no finish_reason and no [DONE].
    drop_after: int | None = None


def text_reply(text: str, **kwargs: Any) -> Reply:
    """An assistant message with only text."""
    return Reply(text=text, **kwargs)


def tool_call(
    name: str, arguments: dict[str, Any] | str, id: str | None = None
) -> tuple[str, str, str]:
    """A tool call for ``tool_reply``; a ``str`` argument is sent raw (e.g. malformed JSON)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return (id or f"call_{name}", name, raw)


def tool_reply(*calls: tuple[str, str, str], text: str = "", **kwargs: Any) -> Reply:
    """An assistant message with tool calls (and optional text before them)."""
    return Reply(text=text, tool_calls=list(calls), **kwargs)


def error_reply(
    status: int, message: str = "scripted error", retry_after: str | None = None
) -> Reply:
    """An HTTP error in the OpenAI error format, with an optional Retry-After header."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(status=status, error_message=message, headers=headers)


def stall_reply(seconds: float = 30.0, *, before_headers: bool = False) -> Reply:
    """A reply that hangs, for cancellation and timeout tests."""
    return Reply(text="never finished", stall=seconds, stall_before_headers=before_headers)


@dataclass
class RecordedRequest:
    """What the server received: path, headers (lower-cased names) and JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float


class OpenAIServer:
    """A ThreadingHTTPServer answering scripted replies; use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        # One entry per stalled reply whose client went away before the stall ended:
        # proof that a cancelled call closed its HTTP connection.
        self.disconnects: list[float] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The ``api_base`` to give a client (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        """Append replies; each request consumes one, in order."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies no request has consumed yet."""
        with self._lock:
            return len(self._replies)

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            return self._replies.popleft() if self._replies else None


def _make_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, a streamed body ends when we close.
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            body = json.loads(raw or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = RecordedRequest(self.path, headers, body, time.monotonic())
            if not self.path.rstrip("/").endswith("/chat/completions"):
                server.requests.append(request)
                self._send_json(404, _error_body(f"no route {self.path}", "not_found_error"))
                return
            reply = server._next(request)
            if reply is None:
                msg = "openai_server: no scripted reply left for this request"
                self._send_json(400, _error_body(msg, "invalid_request_error"))
                return
            try:
                self._answer(reply, body)
            except (BrokenPipeError, ConnectionResetError):
                server.disconnects.append(time.monotonic())

        def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
            model = body.get("model", "scripted")
            if reply.delay:
                time.sleep(reply.delay)
            if reply.stall and reply.stall_before_headers:
                self._stall(reply.stall)
                return
            if reply.status != 200:
                error_type = "rate_limit_error" if reply.status == 429 else "api_error"
                if reply.status == 401:
                    error_type = "authentication_error"
                self._send_json(
                    reply.status, _error_body(reply.error_message, error_type), reply.headers
                )
                return
            if not body.get("stream"):
                self._send_json(200, _completion(reply, model), reply.headers)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            asked = bool((body.get("stream_options") or {}).get("include_usage"))
            include_usage = asked and reply.send_usage
            for n, chunk in enumerate(_chunks(reply, model, include_usage)):
                if n == reply.drop_after:
                    return
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
                if n == 0 and reply.stall:
                    self._stall(reply.stall)
                    return
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _stall(self, seconds: float) -> None:
            """Hang until the time is up, the server stops, or the client hangs up."""
            deadline = time.monotonic() + seconds
            conn: socket.socket = self.connection
            while time.monotonic() < deadline and not server._stopping.is_set():
                readable, _, _ = select.select([conn], [], [], 0.02)
                if readable:
                    try:
                        gone = conn.recv(1, socket.MSG_PEEK) == b""
                    except OSError:
                        gone = True
                    if gone:
                        server.disconnects.append(time.monotonic())
                        return

        def _send_json(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
            for id_, name, args in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(reply),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _chunks(reply: Reply, model: str, include_usage: bool) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        for piece in _pieces(reply.text, reply.chunk_size):
            yield chunk({"content": piece})
    for index, (id_, name, args) in enumerate(reply.tool_calls):
        head = {"index": index, "id": id_, "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        for piece in _pieces(args, reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        yield {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": _usage(reply),
        }


class RawServer:
    """A server answering every POST with ``pieces`` as they are, under ``kind``: for streams
    the scripted server would never send (hostile, malformed, a web page, a redirect).

    Each piece is written and flushed on its own, ``gap`` seconds apart. After ``times``
    answers it says 400; with ``location`` it redirects (307) there instead. ``requests``
    holds each request's path and headers. Use as a context manager: it gives the api base.
    """

    def __init__(
        self,
        pieces: list[bytes],
        kind: str = "text/event-stream",
        *,
        gap: float = 0.0,
        times: int | None = None,
        location: str = "",
    ) -> None:
        outer = self
        self.requests: list[dict[str, str]] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append({"path": self.path, **self.headers})
                if location:
                    self.send_response(307)
                    self.send_header("Location", location)
                    self.end_headers()
                    return
                served = times is None or len(outer.requests) <= times
                self.send_response(200 if served else 400)
                self.send_header("Content-Type", kind)
                self.end_headers()
                try:
                    for piece in pieces:
                        self.wfile.write(piece)
                        self.wfile.flush()
                        if gap:
                            time.sleep(gap)
                except OSError:  # the client hung up
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(name="openai_server")
def openai_server_fixture() -> Iterator[OpenAIServer]:
    """A started ``OpenAIServer``; stopped (and stalled replies released) after the test.

    litellm is loaded first: a test's calls then go through it whatever ran before in the
    process, as every call does once a kernel's first seconds are over. The calls made
    before it loads (agent/models/early.py) are tests/test_early_call.py's.
    """
    from grinta_jupyter.agent.models.litellm_model import _import_litellm

    _import_litellm()
    with OpenAIServer() as server:
        yield server
