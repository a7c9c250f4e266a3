"""Any chat model litellm can reach: hosted providers, Ollama, OpenAI-compatible servers.

litellm is imported on the first ``complete`` (in a worker thread, it takes
seconds) or by ``warm`` (the Jupyter extension's background warming), never
when this module is imported, and with the bundled price map so nothing is
fetched over the network.

One call streams the answer, passes text deltas to ``on_text``, rebuilds
tool calls whose arguments arrive in pieces, retries throttling and
transient failures with exponential backoff (honouring Retry-After), and
turns every failure into a ``ModelError`` whose message names the fix and
never an API key.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import email.utils
import functools
import gc
import importlib.util
import json
import math
import os
import random
import re
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from typing import Any

from grinta_jupyter.agent.models import early
from grinta_jupyter.agent.models.base import ModelError, ModelReply, ToolCall, Usage
from grinta_jupyter.runtime.secrets import hold

__all__ = [
    "LiteLLMModel",
    "clean_key",
    "context_window",
    "guess_provider",
    "missing_key",
    "warm",
]

# Env vars holding each provider's key (the first is the one we tell users to set).
# Providers missing here are not checked up front; their auth errors still map to AUTH.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY"),
}

# Model names litellm maps to a provider without a prefix (gpt-4o-mini, o3-mini, claude-...).
_BARE_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:gpt-|chatgpt-|ft:gpt-|o\d(?:-|$))"), "openai"),
    (re.compile(r"claude-"), "anthropic"),
)

# A server asking us to wait longer than this is not worth blocking a notebook for.
MAX_RETRY_AFTER = 60.0
# A stream whose chunks are already buffered never makes ``async for`` wait: the loop is given
# back this often, so the kernel's cells, widgets and Stop go on during a long, fast reply.
_YIELD_EVERY = 0.02

# Sent to OpenAI-compatible servers that need no key; the OpenAI client insists on one.
_PLACEHOLDER_KEY = "no-key"

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6})[A-Za-z0-9_\-]+")
_LITELLM_PREFIX = re.compile(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)\s*[:-]\s*)+")
# From the first of the spaces before it only, and to the first ">" or "<": tried from each
# space of a long run (an error page's), or each "ssl:<" to the text's end, it took the
# square of the message's length.
_SSL_CONTEXT = re.compile(r"(?<!\s)\s*ssl:<[^<>]*>")


class LiteLLMModel:
    """A ``Model`` backed by ``litellm.acompletion`` with streaming."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        timeout: float = 120.0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.name = model
        self.model = model
        self.api_base = api_base
        # A key pasted with its newline or quotes was sent as is: a refused key, or a
        # retried "HTTP 500: Forbidden control character" that never named the key.
        self.api_key = clean_key(api_key)
        if self.api_key:
            # Known to every redaction of this process, not only this model's sessions': the
            # kernel's later sessions (another model), its tools' views and logs hide it too.
            hold(self.api_key)
        self.temperature = temperature
        self.max_retries = max_retries
        self.backoff = backoff
        self.timeout = timeout
        self.extra = dict(extra or {})

    def __repr__(self) -> str:
        base = f", api_base={self.api_base!r}" if self.api_base else ""
        return f"LiteLLMModel({self.model!r}{base})"

    @property
    def context_window(self) -> int | None:
        """Input tokens the model takes, from litellm's model information; None if unknown.

        Read from the price and context map litellm ships (the one it loads with
        ``LITELLM_LOCAL_MODEL_COST_MAP=True``), without importing litellm and without the
        network, so it is the same answer before and after litellm is loaded.
        """
        return context_window(self.model)

    def check_key(self) -> None:
        """Raise ``MISSING_KEY`` now when the provider's key is plainly absent.

        Cheap (litellm is not imported), so front ends call it before a session
        starts; ``complete`` checks again with litellm's own provider lookup.
        """
        error = missing_key(self.model, api_base=self.api_base, api_key=self.api_key)
        if error is not None:
            raise error

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        attempt = 0
        if self.calls_early():
            shown: list[str] = []
            try:
                reply = await self._early_attempt(messages, tools, on_text, shown)
            except early.NotServed as refused:
                # litellm sends it again, and says what went wrong as it always has; after
                # the wait a retry would make when the server asked for one or is throttled.
                if self.max_retries >= 1 and (
                    refused.status == 429 or (refused.status or 0) >= 500
                ):
                    delay = _retry_after(refused)
                    if delay is None:
                        delay = self.backoff * (1 + random.random() / 10)
                    if delay <= MAX_RETRY_AFTER:  # else litellm's request hears it and says so
                        attempt = 1
                        await asyncio.sleep(delay)
            except ModelError as failed:
                if not failed.retryable or self.max_retries < 1 or shown:
                    raise
                attempt = 1  # the attempt was made: the next is litellm's first retry
                await asyncio.sleep(self.backoff * (1 + random.random() / 10))
            else:
                _import_soon()
                return reply
        litellm = await _load_litellm()
        provider = self._check_ready(litellm)
        while True:
            streamed: list[str] = []
            try:
                request = self._request(messages, tools, provider)
                _check_sendable(request.get("api_key"), provider)
                return await self._attempt(litellm, request, on_text, streamed)
            except Exception as exc:
                error = self._to_model_error(exc, provider)
                if error is None:
                    raise
                # Once text reached the front end a retry would show it twice.
                if not error.retryable or attempt >= self.max_retries or streamed:
                    raise error from None
                delay = _retry_after(exc)
                if delay is not None and delay > MAX_RETRY_AFTER:
                    raise ModelError(
                        error.code,
                        f"{error.message} (the provider asks to wait {delay:.0f} s; "
                        "try again later)",
                        retryable=True,
                    ) from None
                if delay is None:
                    delay = self.backoff * 2**attempt * (1 + random.random() / 10)
                attempt += 1
                await asyncio.sleep(delay)

    async def _attempt(
        self,
        litellm: Any,
        request: dict[str, Any],
        on_text: Callable[[str], None] | None,
        streamed: list[str],
    ) -> ModelReply:
        stream = await litellm.acompletion(**request)
        chunks = []
        gave_back = time.monotonic()
        try:
            async for chunk in stream:
                chunks.append(chunk)
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    streamed.append(delta)
                    if on_text is not None:
                        on_text(delta)
                if time.monotonic() - gave_back > _YIELD_EVERY:
                    await asyncio.sleep(0)
                    gave_back = time.monotonic()
        finally:
            # Also on cancellation: release the HTTP connection now, not at GC.
            await stream.aclose()
        if not streamed and not _pieced_calls(chunks):
            self._check_not_a_page(stream)
        return await self._reply(litellm, chunks, request["messages"])

    async def _reply(
        self, litellm: Any, chunks: list[Any], messages: list[dict[str, Any]]
    ) -> ModelReply:
        """The reply litellm builds from a stream's chunks, with the calls they hold."""
        pieced = _pieced_calls(chunks)
        # Putting thousands of chunks back together takes seconds: off the event loop.
        built = (
            await asyncio.to_thread(litellm.stream_chunk_builder, chunks, messages=messages)
            if chunks
            else None
        )
        if built is None or not built.choices:
            raise ModelError("BAD_RESPONSE", f"{self.model} sent an empty response; try again")
        choice = built.choices[0]
        message = choice.message
        rebuilt = [
            (tc.id or "", tc.function.name or "", tc.function.arguments or "")
            for tc in message.tool_calls or []
        ]
        # litellm's own rebuilding, unless it lost calls the stream holds (see _pieced_calls).
        calls = _unique_ids(pieced if len(pieced) > len(rebuilt) else rebuilt)
        usage = getattr(built, "usage", None)
        return ModelReply(
            text=message.content or "",
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
                completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
                cost=await asyncio.to_thread(self._cost, litellm, built),
            ),
            finish_reason=choice.finish_reason,
        )

    def calls_early(self) -> bool:
        """Whether a call now goes out before litellm is loaded (``early``'s module doc)."""
        if _litellm is not None or ("litellm" in sys.modules and not _importing.is_set()):
            return False  # loaded, or imported by the user's code (its settings are theirs)
        return early.eligible(self.model, self.api_base, self.extra, _known(self.model))

    async def _early_attempt(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
        streamed: list[str],
    ) -> ModelReply:
        """One attempt sent by ``early``; its failures read as litellm's would."""
        request = self._request(messages, tools, "openai")
        _check_sendable(request.get("api_key"), "openai")
        try:
            got = await early.stream(request, on_text, streamed)
        except early.Broken as exc:
            detail = self._clean(exc.detail)
            if exc.timed_out:
                seconds = f"{self.timeout:g}"
                raise ModelError(
                    "TIMEOUT", f"{self.model} did not answer within {seconds} s", True
                ) from None
            if exc.status is not None:
                message = f"{self.model} failed with HTTP {exc.status}: {detail}"
                raise ModelError("NETWORK", message, True) from None
            where = self.api_base or "the openai API"
            raise ModelError("NETWORK", f"cannot reach {where}: {detail}", True) from None
        calls = _pieced_calls(got.chunks)
        usage = got.usage
        if usage is None:
            # litellm counts the tokens of a stream that brought no usage: its count, then.
            usage = await self._counted(got, calls, request["messages"])
        reason = got.finish_reason
        return ModelReply(
            text=got.text,
            tool_calls=_unique_ids(calls),
            usage=Usage(
                prompt_tokens=_count(_whole(usage.get("prompt_tokens"))),
                completion_tokens=_count(_whole(usage.get("completion_tokens"))),
                # A model litellm's map does not hold has no price there.
                cost=None,
            ),
            # litellm says a reply with calls ended for them, whatever the server said.
            finish_reason="tool_calls" if calls and reason == "stop" else reason,
        )

    async def _counted(
        self, got: early.Streamed, calls: list[Any], messages: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The token counts litellm gives a stream that brought none: its builder's, on the
        stream's chunks as litellm's client reads them (their fields it knows)."""
        litellm = await _load_litellm()
        known = ("id", "object", "model", "system_fingerprint")
        try:
            chunks = [
                litellm.ModelResponseStream(
                    choices=chunk.get("choices") or [],
                    **{key: chunk[key] for key in known if isinstance(chunk.get(key), str)},
                )
                for chunk in got.chunks
            ]
            built = await self._reply(litellm, chunks, messages)
        except Exception:  # chunks litellm's own client would have read otherwise
            return {}
        return {
            "prompt_tokens": built.usage.prompt_tokens,
            "completion_tokens": built.usage.completion_tokens,
        }

    def _check_not_a_page(self, stream: Any) -> None:
        """Raise ``BAD_RESPONSE`` when an empty answer was a web page: litellm reads an HTML
        page (a wrong api base, a login portal) as a reply with no text and no calls."""
        hidden = getattr(stream, "_hidden_params", None)
        headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
        kind = headers.get("llm_provider-content-type") if isinstance(headers, dict) else None
        if isinstance(kind, str) and "html" in kind.lower():
            where = self.api_base or self.model
            raise ModelError(
                "BAD_RESPONSE",
                f"{where} answered with a web page ({kind.split(';')[0].strip()}), not a "
                "model's reply; check the api base (GRINTA_API_BASE): an OpenAI-compatible "
                "server's usually ends in /v1",
            )

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], provider: str
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self.timeout,
            # We retry ourselves (with backoff and Retry-After); no hidden retries below us.
            "max_retries": 0,
            "num_retries": 0,
            # Providers that lack a parameter (stream_options, temperature) skip it.
            "drop_params": True,
        }
        if tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.api_base:
            kwargs["api_base"] = self.api_base
        env_vars = PROVIDER_KEYS.get(provider, ())
        if self.api_key:
            kwargs["api_key"] = self.api_key
        elif provider == "openai" and self.api_base and not _env_key(env_vars):
            kwargs["api_key"] = _PLACEHOLDER_KEY
        elif _env_key(env_vars) != _raw_env_key(env_vars):
            # litellm reads the provider's variable as it is; send it without the padding.
            kwargs["api_key"] = _env_key(env_vars)
        kwargs.update(self.extra)
        return kwargs

    def check_ready(self) -> None:
        """Raise the ModelError the first call would (a model string no provider serves, a
        missing key) now, before a session starts. Loads litellm (seconds, once): for a
        front end about to call the model anyway."""
        self._check_ready(_import_litellm())

    def _check_ready(self, litellm: Any) -> str:
        """Fail before any request when the model string or the key cannot work."""
        try:
            provider = str(litellm.get_llm_provider(model=self.model, api_base=self.api_base)[1])
        except Exception:
            raise ModelError(
                "UNKNOWN_MODEL",
                f"litellm cannot tell which provider serves {self.model!r}; prefix it, "
                "e.g. openai/gpt-4o-mini, anthropic/..., gemini/..., ollama_chat/qwen2.5-coder:7b",
            ) from None
        env_vars = PROVIDER_KEYS.get(provider, ())
        if env_vars and not self.api_key and not self.api_base and not _env_key(env_vars):
            raise _missing_key_error(self.model, env_vars)
        return provider

    def _cost(self, litellm: Any, built: Any) -> float | None:
        """USD for this reply, or None when litellm has no price for the model."""
        for kwargs in ({}, {"model": self.model}):
            try:
                cost = float(litellm.completion_cost(completion_response=built, **kwargs))
            except Exception:  # no price for the model (or None)
                continue
            # A price from negative token counts is negative: never a refund, nor NaN.
            return cost if math.isfinite(cost) and cost > 0 else 0.0
        return None

    def _to_model_error(self, exc: BaseException, provider: str) -> ModelError | None:
        """Map a litellm/HTTP failure to a ModelError; None for anything else (a bug)."""
        if isinstance(exc, ModelError):
            return exc
        import openai
        import pydantic
        from litellm import exceptions as llm

        detail = self._detail(exc)
        env_vars = PROVIDER_KEYS.get(provider, ())
        key_hint = (
            f"set {env_vars[0]} (or GRINTA_API_KEY) to a valid key"
            if env_vars
            else "set GRINTA_API_KEY to a valid key"
        )
        if isinstance(exc, (llm.AuthenticationError, llm.PermissionDeniedError)):
            return ModelError("AUTH", f"{self.model} rejected the key ({detail}); {key_hint}")
        if isinstance(exc, llm.RateLimitError):
            return ModelError("RATE_LIMIT", f"{self.model} is rate limited: {detail}", True)
        if isinstance(exc, llm.NotFoundError):
            return ModelError("UNKNOWN_MODEL", self._unknown(detail))
        if isinstance(exc, llm.ContextWindowExceededError):
            return ModelError(
                "CONTEXT_WINDOW", f"the conversation is too long for {self.model}: {detail}"
            )
        if isinstance(exc, openai.BadRequestError):
            if _names_unknown_model(detail):
                return ModelError("UNKNOWN_MODEL", self._unknown(detail))
            return ModelError("BAD_REQUEST", f"{self.model} rejected the request: {detail}")
        if isinstance(exc, (openai.APITimeoutError, TimeoutError, asyncio.TimeoutError)):
            seconds = f"{self.timeout:g}"
            return ModelError("TIMEOUT", f"{self.model} did not answer within {seconds} s", True)
        if _caused_by(exc, pydantic.ValidationError):  # litellm calls it a connection error
            first = detail.split(" For further information", 1)[0]
            return ModelError(
                "BAD_RESPONSE", f"{self.model} sent a response litellm cannot read: {first}"
            )
        if isinstance(exc, (openai.APIConnectionError, ConnectionError)) or _caused_by(
            exc, openai.APIConnectionError, ConnectionError
        ):
            where = self.api_base or f"the {provider} API"
            return ModelError("NETWORK", f"cannot reach {where}: {detail}", True)
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and status >= 500:
            return ModelError("NETWORK", f"{self.model} failed with HTTP {status}: {detail}", True)
        if isinstance(exc, openai.OpenAIError):
            return ModelError("BAD_RESPONSE", f"{self.model} failed: {detail}")
        return None

    def _unknown(self, detail: str) -> str:
        if self.api_base and "model" not in detail.lower():
            # A bare 404 from a server of one's own: most often its address lacks /v1.
            return (
                f"{self.api_base} has no chat endpoint for {self.model!r} ({detail}); check the "
                "api base (GRINTA_API_BASE): an OpenAI-compatible server's usually ends in /v1"
            )
        return f"unknown model {self.model!r} ({detail}); check the model name (GRINTA_MODEL)"

    def _detail(self, exc: BaseException) -> str:
        """The provider's message on one short line, with any key masked."""
        text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        # litellm prefixes "litellm.XError: XError: OpenAIException - "; keep the provider's words.
        return self._clean(_LITELLM_PREFIX.sub("", str(text)))

    def _clean(self, text: str) -> str:
        """``text`` on one short line, with any key masked."""
        text = " ".join(_SSL_CONTEXT.sub("", text).split())
        variables = [os.environ.get(v) for v in _all_key_vars()]
        for secret in (self.api_key, *variables, *map(clean_key, variables)):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
        text = _KEY_PATTERN.sub(r"\1***", text)
        return text[:300] + ("..." if len(text) > 300 else "")


# litellm once ``_import_litellm`` has imported and set it up (None before). The lock
# makes a first call wait for ``warm`` to finish rather than import beside it.
_litellm: Any = None
_setting_up = threading.RLock()
# Set while ``_import_litellm`` imports it: ``sys.modules`` then holds it half-imported.
_importing = threading.Event()
# Set when litellm's import is under way or planned (the Jupyter warming plans it, after the
# first card): an early call then starts none of its own.
_import_planned = threading.Event()
# Set once a real call has asked for litellm: a rehearsal not yet begun is then skipped,
# the call loading what it would load, without waiting for it first.
_call_waiting = threading.Event()
# The thread ``_import_soon`` started, if it did, and why its import failed, if it did.
_import_thread: threading.Thread | None = None
_import_failure: Exception | None = None

# litellm's lists of logging callbacks: a rehearsal (``warm``) would be logged as a call.
_CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "service_callback",
    "_async_input_callback",
    "_async_success_callback",
    "_async_failure_callback",
)


async def _load_litellm() -> Any:
    """litellm, imported offline and quietly, never on the event loop.

    While another thread imports it (``warm``), ``sys.modules`` already holds the
    half-imported module, and importing it here would block the loop until that
    import ends: only an import ``_import_litellm`` finished counts.
    """
    if _litellm is None:
        _call_waiting.set()
        # Imported by ``_import_soon``'s thread unless the warming imports it, and waited for
        # here, not in a worker thread: a call cancelled meanwhile leaves no worker that the
        # loop's end (``asyncio.run``: a ``grinta acp`` whose client left) would wait for.
        _import_soon(again=True)
        while importing_soon():
            await asyncio.sleep(0.02)
        failure = _import_failure
        if _litellm is None and failure is not None:
            raise failure  # a broken install, said where litellm is needed
        if _litellm is None:
            return await asyncio.to_thread(_import_litellm)  # the warming's import
    return _litellm


def _import_litellm() -> Any:
    global _litellm
    with _setting_up:
        if _litellm is None:
            # Without this litellm downloads its model price map at import.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            _importing.set()
            try:
                import litellm
            finally:
                _importing.clear()

            litellm.suppress_debug_info = True
            _litellm = litellm
    return _litellm


def plan_import() -> None:
    """Say that litellm will be imported soon (``warm``): early calls leave it to that."""
    _import_planned.set()


def _import_soon(*, again: bool = False) -> None:
    """Import litellm in the background when nothing else will (the CLI, a script, the ACP
    agent), after an early call or for a call that needs it: the calls after the first
    seconds are then litellm's, as they are in a kernel. Not a daemon: a process that ends
    meanwhile waits for the import rather than stop it half-done (``grinta acp``, whose
    client may leave during it, ends without it: ``importing_soon``). ``again``: also when
    an import it started failed (a call that needs litellm tries once more; an early call
    does not, or a broken install would be imported again beside every call)."""
    global _import_thread, _import_failure
    if _litellm is not None or _importing.is_set() or importing_soon():
        return
    if _import_planned.is_set() and not (again and _import_failure is not None):
        return
    _import_planned.set()
    _import_failure = None
    _import_thread = threading.Thread(target=_import_quietly, name="grinta-litellm")
    _import_thread.start()


def importing_soon() -> bool:
    """Whether the background import ``_import_soon`` started is still under way."""
    return _import_thread is not None and _import_thread.is_alive()


def end_without_import(status: int) -> None:
    """End the process now with ``status``, if all that keeps it is the background import.

    After an early first call (a local server's), litellm is imported in a thread the
    interpreter waits for at exit (``importing_soon``): a command whose work is done (a
    short ``grinta run``, an ACP client that left in the first seconds) lingered 4-11 s
    more, for an import nothing will use. The caller has closed what it opened; the exit
    handlers (the symbol index's save, the helpers' end, logging's flush) run as they
    would, then leaks are collected (a ``ResourceWarning`` is still said), and the process
    ends without finalising the interpreter under the import. Returns when no import runs.
    """
    if not importing_soon():
        return
    atexit._run_exitfuncs()  # first: the index's save finds what a collection would drop
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed or broken: nothing left to say there
            stream.flush()
    os._exit(status)


def _import_quietly() -> None:
    global _import_failure
    try:
        _import_litellm()
    except Exception as exc:  # a broken install: said by the call that needs litellm
        _import_failure = exc


def warm() -> bool:
    """Import litellm and load what its first call loads; call it from a background thread.

    litellm's first completion spends seconds on lazy imports and a token
    encoding. A rehearsal with a canned answer (``mock_response``: nothing is
    sent anywhere, on an event loop of this thread's own) loads them ahead. It is
    skipped when litellm has logging callbacks, which would record it as a call,
    and when a real call already waits for litellm: the call loads the same, and
    sooner than after a rehearsal. A first real call waits for the import and a
    rehearsal under way (``_setting_up``): two threads importing litellm's lazily
    imported modules at once could see them half-initialised. Returns whether it
    rehearsed.
    """
    # What ``early`` sends with (litellm imports it too): ready before a first call asks.
    importlib.import_module("httpx")
    with _setting_up:
        litellm = _import_litellm()
        if _call_waiting.is_set() or any(getattr(litellm, n, None) for n in _CALLBACK_LISTS):
            return False
        asyncio.run(_rehearse(litellm))
        return True


async def _rehearse(litellm: Any) -> None:
    model = LiteLLMModel("openai/grinta-warming", api_key=_PLACEHOLDER_KEY)
    request = model._request([{"role": "user", "content": "warming"}], [], "openai")
    stream = await litellm.acompletion(**request, mock_response="ready")
    try:
        chunks = [chunk async for chunk in stream]
    finally:
        await stream.aclose()
    litellm.stream_chunk_builder(chunks, messages=request["messages"])


# Model prefixes litellm's map files under another provider's name.
_MAP_PROVIDERS = {"ollama_chat": "ollama"}


def context_window(model: str) -> int | None:
    """``model``'s input token limit in litellm's bundled map (``max_input_tokens``, else
    ``max_tokens``); None when the map has no entry for it (an ``openai/...`` model on a
    local server, say).

    Looked up as ``litellm.get_model_info`` finds a name: the whole string, then without
    its provider prefix when the entry is that provider's (``openai/gpt-4o`` -> ``gpt-4o``).
    """
    entries = _model_map()
    name = model.strip()
    prefix, slash, bare = name.partition("/")
    candidates: list[tuple[str, str | None]] = [(name, None)]
    if slash:
        mapped = _MAP_PROVIDERS.get(prefix, prefix)
        candidates += [(f"{mapped}/{bare}", None), (bare, mapped)]
    for key, provider in candidates:
        entry = entries.get(key)
        if not isinstance(entry, dict):
            continue
        if provider is not None and entry.get("litellm_provider") != provider:
            continue
        for field in ("max_input_tokens", "max_tokens"):
            value = entry.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _known(model: str) -> bool:
    """Whether litellm's bundled map holds ``model`` under any name litellm looks it up by."""
    entries = _model_map()
    name = model.strip()
    _, _, bare = name.partition("/")
    return any(key in entries for key in (name, bare, f"openai/{bare}") if key)


@functools.cache
def _model_map() -> dict[str, Any]:
    """litellm's bundled model map (about 30 ms to load, once); empty when it is missing."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is None or spec.origin is None:
        return {}
    path = os.path.join(os.path.dirname(spec.origin), "model_prices_and_context_window_backup.json")
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def guess_provider(model: str) -> str | None:
    """The provider serving ``model``, from its prefix or a well-known bare name; None if unsure.

    A stand-in for ``litellm.get_llm_provider`` that needs no import:
    ``openai/x`` -> openai, ``gpt-4o-mini`` -> openai, ``claude-...`` -> anthropic.
    """
    name = model.strip()
    prefix, slash, _ = name.partition("/")
    if slash:
        return prefix
    return next((provider for pattern, provider in _BARE_NAMES if pattern.match(name)), None)


def missing_key(
    model: str, *, api_base: str | None = None, api_key: str | None = None
) -> ModelError | None:
    """``MISSING_KEY`` when ``model``'s provider needs a key and none is set, else None.

    An ``api_base`` (a local or proxy server) or an ``api_key`` skips the check:
    whoever set them knows what the server needs.
    """
    env_vars = PROVIDER_KEYS.get(guess_provider(model) or "", ())
    if not env_vars or clean_key(api_key) or api_base or _env_key(env_vars):
        return None
    return _missing_key_error(model, env_vars)


def _missing_key_error(model: str, env_vars: tuple[str, ...]) -> ModelError:
    return ModelError(
        "MISSING_KEY",
        f"no API key for {model}: set {env_vars[0]} (or GRINTA_API_KEY, or pass api_key=)",
    )


def clean_key(key: str | None) -> str | None:
    """``key`` without surrounding whitespace, invisible characters and quotes (as pasted
    from a file, a shell line or a web page); None when nothing is left.

    A key file saved with a byte order mark, or a key copied with a zero-width space,
    carries a character no HTTP header can: every request failed as a retried "HTTP 500"
    that never named the key.
    """
    if key is None:
        return None
    text = _strip_invisible(key)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = _strip_invisible(text[1:-1])
    return text or None


def _strip_invisible(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _invisible(text[start]):
        start += 1
    while end > start and _invisible(text[end - 1]):
        end -= 1
    return text[start:end]


def _invisible(char: str) -> bool:
    # Whitespace, and format characters (Cf: the byte order mark, zero-width spaces and joiners).
    return char.isspace() or unicodedata.category(char) == "Cf"


def _check_sendable(key: object, provider: str) -> None:
    """Refuse, as a rejected key, one that no HTTP header can carry: the HTTP client refused
    it as a retried "HTTP 500" (a line break: "header injection"; a letter that is not
    ASCII: "'ascii' codec can't encode") that said nothing of the key."""
    if not isinstance(key, str) or (key.isascii() and key.isprintable()):
        return
    env_vars = PROVIDER_KEYS.get(provider, ())
    where = f"{env_vars[0]} (or GRINTA_API_KEY)" if env_vars else "the variable GRINTA_API_KEY"
    raise ModelError(
        "AUTH",
        "the API key cannot be sent: it holds a line break, a control character or a "
        "character that is not ASCII (a key pasted with other text, or typed with a "
        f"look-alike letter); set {where} to the key alone",
    )


def _raw_env_key(env_vars: tuple[str, ...]) -> str | None:
    # A blank value (OPENAI_API_KEY=, or ="") is no key: every request with it would fail.
    return next((os.environ[v] for v in env_vars if clean_key(os.environ.get(v))), None)


def _env_key(env_vars: tuple[str, ...]) -> str | None:
    """The provider's key from its first variable that holds one, cleaned (``clean_key``)."""
    return clean_key(_raw_env_key(env_vars))


def _all_key_vars() -> list[str]:
    # GRINTA_API_KEY reaches a model as its api_key (agent/models/__init__.py), masked above.
    return [v for group in PROVIDER_KEYS.values() for v in group]


def _names_unknown_model(detail: str) -> bool:
    text = detail.lower()
    if "llm provider not provided" in text:
        return True
    return "model" in text and any(
        phrase in text
        for phrase in ("not found", "does not exist", "unknown model", "invalid model", "no such")
    )


def _caused_by(exc: BaseException, *kinds: type[BaseException]) -> bool:
    """Whether an exception of ``kinds`` raised ``exc`` (litellm wraps what went wrong: a
    connection failure may come as a 500, a response it could not parse as a connection
    error)."""
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, kinds):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _pieced_calls(chunks: list[Any]) -> list[tuple[str, str, str]]:
    """The tool calls of a stream as (id, name, arguments), put back together from their
    pieces: a piece names its call by ``index``, and the first brings the id and the name.

    litellm's own rebuilding dropped every call that came without an id (some local
    servers send none) and merged two calls sent at one index with different ids (as some
    OpenAI-compatible endpoints do) into one call of both calls' arguments; the reply takes
    these calls when they are more than litellm's. A new id at an index starts a new call;
    a piece with no id (or the same one) goes on with the call at its index.
    """
    calls: list[list[str]] = []
    at_index: dict[object, int] = {}
    for chunk in chunks:
        choices = _field(chunk, "choices") or []
        delta = _field(choices[0], "delta") if choices else None
        for piece in _field(delta, "tool_calls") or []:
            index = _field(piece, "index")
            call_id = str(_field(piece, "id") or "")
            function = _field(piece, "function")
            name = str(_field(function, "name") or "")
            arguments = str(_field(function, "arguments") or "")
            at = at_index.get(index)
            if at is None or (call_id and calls[at][0] not in ("", call_id)):
                calls.append([call_id, name, arguments])
                at_index[index] = len(calls) - 1
                continue
            call = calls[at]
            call[0] = call[0] or call_id
            call[1] = name or call[1]  # a name sent again replaces it, as litellm reads it
            call[2] += arguments
    return [(call_id, name, arguments) for call_id, name, arguments in calls]


def _unique_ids(calls: list[tuple[str, str, str]]) -> list[ToolCall]:
    """``calls`` as ToolCalls, each with an id of its own: a call without one gets
    ``call_N``, and a repeated one a suffix (the results of two calls of one id could not
    be told apart)."""
    result: list[ToolCall] = []
    seen: set[str] = set()
    for n, (given, name, arguments) in enumerate(calls):
        base = given or f"call_{n}"
        call_id, suffix = base, n
        while call_id in seen:
            call_id, suffix = f"{base}_{suffix}", suffix + 1
        seen.add(call_id)
        result.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return result


def _field(value: object, name: str) -> Any:
    """An attribute of a litellm object, or a key of a plain dict (either may come)."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _whole(value: object) -> object:
    """A count as pydantic reads one into litellm's usage: ``True`` is 1 and ``5.0`` is 5."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _count(value: object) -> int:
    """A token count from the provider's usage: a negative or non-integer one counts 0 (a
    negative count would lower the session's totals and let it run past its budgets)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms or Retry-After), if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "litellm_response_headers", None)
    if not headers:
        return None
    try:
        millis = headers.get("retry-after-ms")
        # "nan" read as no wait at all, and the Retry-After beside it was never read.
        if millis is not None and math.isfinite(float(millis)):
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
