"""A call to an OpenAI-compatible server of one's own, made while litellm is still loading.

``import litellm`` takes 2-4 s on a 2-core machine and holds the interpreter's lock, so
a ``%grinta`` cell run right after ``%load_ext`` (a notebook's *Run All*) waited for it
before its first request went out. For the one case where litellm sends the request
unchanged, this module sends it itself: a model litellm knows nothing about
(``openai/<name>`` on a server given by ``api_base``: vLLM, llama.cpp, Ollama's
``/v1``, LM Studio), for which litellm picks no model-specific rules and sends the
messages, tools, temperature and stream options as they are. ``tests/test_early_call.py``
pins that the request body is the one litellm sends and that the reply is read the same.

Only a clean answer is taken: a stream of ``data:`` events with a finish reason, ending
in ``[DONE]`` or the connection's end. Anything else before the first piece of text (a status other than 200,
a web page, an error event, a refused connection, text that is not JSON) raises
``NotServed`` and litellm sends the request again, so every error the user sees, every
retry and every Retry-After is litellm's as before. A timeout is the attempt's own (a
second wait of the same length would double it); so is a failure after text has been
shown (sending again would show it twice).

httpx is what litellm's OpenAI client sends with; it imports in about 0.1 s.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Broken", "NotServed", "Streamed", "eligible", "request_body", "stream"]

# Variables litellm's OpenAI client turns into headers of its own; with one set, the
# request is litellm's to send.
_CLIENT_VARIABLES = ("OPENAI_ORGANIZATION", "OPENAI_PROJECT")
# The keys of litellm's own that are not sent as they are.
_NOT_SENT = frozenset({"timeout", "max_retries", "num_retries", "drop_params", "api_base"})
# What litellm's OpenAI chat request carries from its arguments, for an unknown model.
_SENT = frozenset({"model", "messages", "stream", "stream_options", "tools", "temperature"})
_CUT_SHORT = "Stream ended before a finish_reason was received"
# Finish reasons litellm keeps, and those it maps (the ones OpenAI-compatible servers send:
# TGI's, llama.cpp's, and Anthropic's names through proxies); it calls every other "stop".
_OPENAI_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
_FINISH_REASONS = {
    "eos": "stop",
    "eos_token": "stop",
    "stop_sequence": "stop",
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
# The loop is given back this often while buffered chunks are read (as litellm's path does).
_YIELD_EVERY = 0.02


class NotServed(Exception):
    """The server did not answer with a stream to read; litellm sends the request again.

    ``response`` is the server's answer when it gave a status other than 200 (its
    Retry-After is honoured before litellm sends again), else None.
    """

    def __init__(self, detail: str, response: Any = None) -> None:
        super().__init__(detail)
        self.response = response

    @property
    def status(self) -> int | None:
        return getattr(self.response, "status_code", None)


class Broken(Exception):
    """The stream failed after text was shown, or timed out: the attempt's own failure."""

    def __init__(self, detail: str, *, timed_out: bool = False, status: int | None = None):
        super().__init__(detail)
        self.detail = detail
        self.timed_out = timed_out
        # The status litellm gives this failure (a stream cut short: 500), if it gives one.
        self.status = status


@dataclass
class Streamed:
    """What a stream brought: its text, its chunks as sent, and how it ended."""

    text: str = ""
    chunks: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None


def eligible(model: str, api_base: str | None, extra: dict[str, Any], known: bool) -> bool:
    """Whether litellm would send this model's request as it is: ``openai/<name>`` on an
    http(s) ``api_base``, a name litellm's model map does not hold (``known``) and that
    none of its name rules take (o-series, ``gpt-5``...: any ``gpt-`` is left to it), no
    extra litellm arguments, and no OpenAI organisation or project variable."""
    prefix, slash, bare = model.strip().partition("/")
    if prefix != "openai" or not slash or not bare or known or extra:
        return False
    if "gpt-" in bare.lower() or (len(bare) > 1 and bare[0] == "o" and bare[1].isdigit()):
        return False
    if not api_base or any(os.environ.get(name) for name in _CLIENT_VARIABLES):
        return False
    if any(char.isspace() or not char.isprintable() for char in api_base):
        return False
    try:
        parts = urlsplit(api_base)
        parts.port  # noqa: B018  (raises for a port out of range)
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not (parts.query or parts.fragment or parts.username or parts.password)
    )


def request_body(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON body litellm sends for ``request`` (``LiteLLMModel._request``'s arguments)."""
    unknown = set(request) - _SENT - _NOT_SENT - {"api_key"}
    if unknown:
        raise NotServed(f"arguments only litellm sends: {sorted(unknown)}")
    body = {key: value for key, value in request.items() if key in _SENT}
    body["model"] = str(request["model"]).strip().partition("/")[2]
    return body


async def stream(
    request: dict[str, Any],
    on_text: Callable[[str], None] | None,
    streamed: list[str],
) -> Streamed:
    """Send ``request`` to its ``api_base`` and read the streamed answer.

    Text pieces go to ``on_text`` and ``streamed`` as they come. Raises ``NotServed``
    when litellm should send it instead, ``Broken`` for the attempt's own failure.
    """
    httpx = await asyncio.to_thread(importlib.import_module, "httpx")
    body = request_body(request)
    key = request.get("api_key") or os.environ.get("OPENAI_API_KEY")
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = str(request["api_base"]).rstrip("/") + "/chat/completions"
    timeout = float(request.get("timeout") or 600.0)
    if not math.isfinite(timeout) or timeout <= 0:
        raise NotServed("no usable timeout")
    data = json.dumps(body).encode()
    result = Streamed()
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client,
            client.stream("POST", url, content=data, headers=headers) as response,
        ):
            kind = response.headers.get("content-type", "")
            if response.status_code != 200:
                raise NotServed(f"HTTP {response.status_code}", response)
            if "text/event-stream" not in kind.lower():
                raise NotServed(f"not a stream: {kind}")
            await _read(response, result, on_text, streamed)
            if result.finish_reason is None:
                # litellm's words for it; the request may well succeed sent again.
                _refuse(streamed, _CUT_SHORT, status=500)
    except (NotServed, Broken):
        raise
    except httpx.TimeoutException as exc:
        raise Broken(str(exc) or type(exc).__name__, timed_out=True) from None
    except Exception as exc:  # the connection, the address, the transport: whatever failed
        if not streamed:
            raise NotServed(str(exc)) from None
        raise Broken(str(exc) or type(exc).__name__) from None
    result.text = "".join(streamed)
    return result


async def _read(
    response: Any,
    result: Streamed,
    on_text: Callable[[str], None] | None,
    streamed: list[str],
) -> None:
    gave_back = time.monotonic()
    async for data in _events(response):
        if time.monotonic() - gave_back > _YIELD_EVERY:
            await asyncio.sleep(0)
            gave_back = time.monotonic()
        if data.startswith("[DONE]"):
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            _refuse(streamed, f"a stream event that is not JSON: {data!r}")
            return
        if not isinstance(chunk, dict) or chunk.get("error"):
            _refuse(streamed, f"an error in the stream: {data}")
            return
        choices = chunk.get("choices")
        if choices is not None and not isinstance(choices, list):
            _refuse(streamed, f"choices that are not a list: {data!r}")
            return
        choice = choices[0] if choices else {}
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or (delta is not None and not isinstance(delta, dict)):
            _refuse(streamed, f"a choice that cannot be read: {data!r}")
            return
        if not _readable_calls((delta or {}).get("tool_calls")):
            _refuse(streamed, f"tool calls that cannot be read: {data}")
            return
        result.chunks.append(chunk)
        if isinstance(chunk.get("usage"), dict):
            result.usage = chunk["usage"]
        if choice.get("finish_reason") is not None:
            result.finish_reason = _finish_reason(choice["finish_reason"])
        content = (delta or {}).get("content")
        if isinstance(content, str) and content:
            streamed.append(content)
            if on_text is not None:
                on_text(content)


async def _events(response: Any) -> Any:
    """The data of each server-sent event, as OpenAI's client reads them: ``data:`` lines
    joined by line breaks until a blank line; comments and other fields skipped; an event
    with fields but no data gives "" (not JSON: refused, as litellm fails on it); an event
    the stream ends in before its blank line is dropped."""
    lines: list[str] = []
    fields = False
    async for line in response.aiter_lines():
        if not line:
            if fields:
                yield "\n".join(lines)
            lines, fields = [], False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            lines.append(value)
        if name in ("data", "event", "id", "retry"):
            fields = True


def _finish_reason(reason: object) -> str:
    """A stream's finish reason as litellm gives it back: OpenAI's five as they are, the
    other providers' names for them mapped, anything else ``stop``."""
    if not isinstance(reason, str):
        return "stop"
    return reason if reason in _OPENAI_REASONS else _FINISH_REASONS.get(reason, "stop")


def _readable_calls(pieces: object) -> bool:
    """Whether a delta's tool calls have the shape OpenAI's stream gives them."""
    if pieces is None:
        return True
    if not isinstance(pieces, list):
        return False
    for piece in pieces:
        if not isinstance(piece, dict):
            return False
        function = piece.get("function")
        if function is not None and not isinstance(function, dict):
            return False
        texts = [piece.get("id"), *((function or {}).get(k) for k in ("name", "arguments"))]
        if any(text is not None and not isinstance(text, str) for text in texts):
            return False
        index = piece.get("index")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            return False
    return True


def _refuse(streamed: list[str], detail: str, status: int | None = None) -> None:
    if not streamed:
        raise NotServed(detail)
    raise Broken(detail, status=status)
