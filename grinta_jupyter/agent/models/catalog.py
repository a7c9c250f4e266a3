"""Which models this machine can use: the configured one, providers with keys, local servers.

Two readers, one source:

- ``grinta models`` (``main``): what is configured (``GRINTA_MODEL``, the api
  base), which providers have a key (variable names only, never a value),
  whether each is reachable, one line per model. Local servers are asked
  (the configured api base's ``/models``, Ollama's ``/api/tags``, each with a
  short timeout); hosted providers are not called unless ``--check`` asks
  (then their free "list models" endpoint, with the key).
- the notebook panel's model picker (``jupyter/modelbar.py``): ``choices``.

The per-provider lists come from litellm's bundled model map, read as a JSON
file without importing litellm (``litellm_model._model_map``): a few recent
chat models that take tools, per provider (``featured_models``).

Every probe is synchronous and bounded (timeout, bytes read): callers in a
kernel run it in a worker thread, never on the event loop. Nothing here runs at
import or at ``%load_ext``.

Ollama is looked for at ``OLLAMA_HOST`` when set (the variable Ollama's own
client reads), else on its default port, ``http://127.0.0.1:11434``.
"""

from __future__ import annotations

import functools
import http.client
import io
import json
import re
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from grinta_jupyter.agent.models.litellm_model import (
    PROVIDER_KEYS,
    _model_map,
    clean_key,
    guess_provider,
)
from grinta_jupyter.config import ENVIRONMENT
from grinta_jupyter.runtime.display import visible
from grinta_jupyter.runtime.secrets import Secrets

if TYPE_CHECKING:
    from grinta_jupyter.agent.models.keys import HeldKeys
    from grinta_jupyter.config import Config

__all__ = [
    "DEMO",
    "ChoiceSource",
    "ProbeStatus",
    "ModelChoice",
    "ModelLine",
    "Probe",
    "ProviderKey",
    "Survey",
    "apply_choice",
    "check_provider",
    "choices",
    "environment_key",
    "featured_models",
    "main",
    "ollama_base",
    "probe_models",
    "probe_ollama",
    "provider_keys",
    "survey",
]

DEMO = "demo"
# The configuration's variables, by field (config.py names them; these are for what is shown).
_VARIABLES = {name: variable for variable, (name, _parse) in ENVIRONMENT.items()}
MODEL_VARIABLE, BASE_VARIABLE, KEY_VARIABLE = (
    _VARIABLES["model"],
    _VARIABLES["api_base"],
    _VARIABLES["api_key"],
)
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
LOCAL_TIMEOUT = 1.0  # seconds for a local server (Ollama, the api base) to answer
HOSTED_TIMEOUT = 5.0  # seconds for a hosted provider's list of models (--check)
FEATURED_PER_PROVIDER = 5
MAX_SERVER_MODELS = 50  # a local server's models listed, at most
MAX_BODY = 2_000_000  # bytes read from any answer
MAX_NAME_CHARS = 256  # of a model name a server lists; a longer one is left out

# Where a choice comes from: the configuration, a provider key, a local server, the demo,
# or a provider whose key is not set yet (one entry each, so the key field can take it).
ChoiceSource = Literal["configured", "key", "server", "ollama", "demo", "needs key"]
ProbeStatus = Literal["reachable", "unreachable", "rejected", "error"]

# Each provider's free "list models" endpoint and how it takes the key (``--check`` only).
PROVIDER_CHECKS: dict[str, tuple[str, Literal["bearer", "anthropic", "google"]]] = {
    "openai": ("https://api.openai.com/v1/models", "bearer"),
    "anthropic": ("https://api.anthropic.com/v1/models", "anthropic"),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/models", "google"),
    "mistral": ("https://api.mistral.ai/v1/models", "bearer"),
    "groq": ("https://api.groq.com/openai/v1/models", "bearer"),
    "deepseek": ("https://api.deepseek.com/models", "bearer"),
    "openrouter": ("https://openrouter.ai/api/v1/key", "bearer"),
    "xai": ("https://api.x.ai/v1/models", "bearer"),
    "together_ai": ("https://api.together.xyz/v1/models", "bearer"),
}

# Map entries that are not a model to pick by hand: dated snapshots, fine-tunes, previews,
# audio/search/realtime variants, moving aliases.
_NOT_FEATURED = re.compile(
    r"^ft:|\d{4}-\d{2}-\d{2}|-\d{4,8}(?:-|$)|preview|audio|realtime|search|computer-use|"
    r"vision|exp|beta|robotics|safeguard|latest|-fim|embed|tts|transcribe|image|customtools",
    re.IGNORECASE,
)
# Version numbers in a model's name; a size (``70B``, ``a4b``) is not one.
_VERSION = re.compile(r"\d+(?:\.\d+)?(?![\d.]*[bB](?![A-Za-z]))")


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    """One model a person can pick: its litellm name and where its server and key come from.

    ``api_base`` is the server it goes to (None: the provider's own); ``key_variable`` the
    variable its key is read from (None: it needs none).
    """

    name: str
    source: ChoiceSource
    provider: str | None = None
    api_base: str | None = None
    key_variable: str | None = None

    @property
    def label(self) -> str:
        if self.source == "configured":
            return f"{self.name} ({MODEL_VARIABLE})"
        if self.source == "ollama":
            return f"{self.name} (local Ollama)"
        if self.source == "server":
            return f"{self.name} ({BASE_VARIABLE})"
        if self.source == "demo":
            return "demo (scripted, no model configured)"
        if self.source == "needs key":
            return f"{self.name} (paste {self.key_variable})"
        return self.name

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


@dataclass(frozen=True)
class ProviderKey:
    """A provider that takes a key: the variables it is read from, and which one is set."""

    provider: str
    variables: tuple[str, ...]
    found: str | None = None  # the variable set (a name, never the value); "panel" if held

    @property
    def is_set(self) -> bool:
        return self.found is not None


@dataclass(frozen=True)
class Probe:
    """What asking a server gave: ``reachable`` (with the models it lists, if it lists
    any), ``unreachable``, ``rejected`` (401/403: the key), or ``error`` (another answer)."""

    url: str
    status: ProbeStatus
    detail: str = ""
    models: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "reachable"

    def line(self) -> str:
        return f"{self.status} at {self.url}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class ModelLine:
    """One line of ``grinta models``: a model, where it comes from, and what is known of it."""

    name: str
    source: str
    status: str
    ok: bool


@dataclass(frozen=True)
class Survey:
    """Everything ``grinta models`` reports."""

    model: str | None
    api_base: str | None
    api_key_set: bool  # GRINTA_API_KEY
    keys: list[ProviderKey]
    ollama: Probe
    server: Probe | None
    models: list[ModelLine]
    problem: str | None = None  # why the configured model cannot work, if it cannot
    checked: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "api_base": self.api_base,
            "api_key_set": self.api_key_set,
            "keys": [
                {"provider": k.provider, "variables": list(k.variables), "set": k.found}
                for k in self.keys
            ],
            "ollama": asdict(self.ollama),
            "server": asdict(self.server) if self.server else None,
            "models": [asdict(m) for m in self.models],
            "problem": self.problem,
            "checked": self.checked,
        }

    def lines(self) -> list[str]:
        """The report as text lines (untrusted names made visible)."""
        out = [
            f"{MODEL_VARIABLE:<17}{self.model or '(not set: the demo model)'}",
            f"{BASE_VARIABLE:<17}{self.api_base or '(not set)'}"
            + (f": {self.server.status}" if self.server else ""),
            f"{KEY_VARIABLE:<17}{'set' if self.api_key_set else '(not set)'}",
        ]
        have = [f"{k.found} ({k.provider})" for k in self.keys if k.is_set]
        missing = [k.provider for k in self.keys if not k.is_set]
        out.append(f"keys set         {', '.join(have) if have else '(none)'}")
        if missing:
            out.append(f"no key           {', '.join(missing)}")
        ollama = "answers" if self.ollama.ok else "not answering"
        detail = f" ({self.ollama.detail})" if self.ollama.detail else ""
        out.append(f"ollama           {ollama} at {self.ollama.url}{detail}")
        if self.problem:
            out.append(f"problem          {self.problem}")
        out.append("")
        width = max((len(m.name) for m in self.models), default=10) + 2
        source_width = max((len(m.source) for m in self.models), default=6) + 2
        for m in self.models:
            out.append(f"{m.name:<{width}}{m.source:<{source_width}}{m.status}")
        if not self.checked and any(m.status.endswith("not called") for m in self.models):
            out.append("")
            out.append("hosted providers were not called: grinta models --check asks each one")
        return [visible(line, keep_newlines=False) for line in out]


# -- what litellm's map offers --------------------------------------------------------------------


def featured_models(
    provider: str, limit: int = FEATURED_PER_PROVIDER, today: date | None = None
) -> list[str]:
    """A few current chat models of ``provider`` that take tools, as litellm names.

    From litellm's bundled map: chat models with function calling, not deprecated
    by ``today``, without dated snapshots, fine-tunes, previews and moving aliases;
    the highest version numbers first, the shorter name first among equals.
    """
    return list(_featured(provider, today or date.today())[:limit])


@functools.cache
def _featured(provider: str, today: date) -> tuple[str, ...]:
    """Every model ``featured_models`` may offer, best first (the map is walked once per day)."""
    found: set[str] = set()
    for key, entry in _model_map().items():
        if not isinstance(entry, dict) or entry.get("litellm_provider") != provider:
            continue
        if entry.get("mode") != "chat" or not entry.get("supports_function_calling"):
            continue
        if _deprecated(entry.get("deprecation_date"), today):
            continue
        name = _qualified(provider, key)
        if _NOT_FEATURED.search(name.partition("/")[2]):
            continue
        found.add(name)
    return tuple(sorted(found, key=_rank))


def _qualified(provider: str, key: str) -> str:
    """``gpt-4o`` -> ``openai/gpt-4o``; ``gemini/gemini-2.5-pro`` stays as it is."""
    return key if key.startswith(provider + "/") else f"{provider}/{key}"


def _deprecated(value: object, today: date) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return date.fromisoformat(value) <= today
    except ValueError:
        return False


def _rank(name: str) -> tuple[tuple[float, ...], int, str]:
    """Newest first: version parts compared as numbers (``5-5`` after ``5``, before ``6``),
    a name without one last; then the shorter name (the flagship before its variants)."""
    bare = name.partition("/")[2]
    parts = [float(n) for n in _VERSION.findall(bare)][:4]
    numbers = tuple(-n for n in parts + [0.0] * (4 - len(parts)))
    return numbers, len(bare), bare


# -- keys ----------------------------------------------------------------------------------------


def provider_keys(
    environ: Mapping[str, str], held: frozenset[str] = frozenset()
) -> list[ProviderKey]:
    """Each provider that takes a key, with the variable that holds one (names only).

    A provider in ``held`` has a key kept in the kernel's memory (``found`` is
    ``"panel"``); it wins over the environment, as it does for a session.
    """
    keys = []
    for provider, variables in PROVIDER_KEYS.items():
        found = "panel" if provider in held else _set_variable(variables, environ)
        keys.append(ProviderKey(provider, variables, found))
    return keys


def _set_variable(variables: tuple[str, ...], environ: Mapping[str, str]) -> str | None:
    # A blank value is no key: every request with it would fail.
    return next((v for v in variables if clean_key(environ.get(v))), None)


def environment_key(provider: str | None, environ: Mapping[str, str]) -> str | None:
    """The key ``provider``'s own variable holds in ``environ``, as a request sends it."""
    variable = _set_variable(PROVIDER_KEYS.get(provider or "", ()), environ)
    return clean_key(environ[variable]) if variable else None


# -- local and hosted servers ---------------------------------------------------------------------


def ollama_base(environ: Mapping[str, str]) -> str:
    """Where Ollama answers: ``OLLAMA_HOST`` (``host:port`` or a URL), else its default port."""
    host = environ.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return OLLAMA_DEFAULT
    if "://" not in host:
        host = "http://" + host
    scheme, _, rest = host.partition("://")
    if ":" not in rest.rsplit("]", 1)[-1]:
        rest += ":11434"
    return f"{scheme}://{rest}"


def probe_ollama(base: str = OLLAMA_DEFAULT, timeout: float = LOCAL_TIMEOUT) -> Probe:
    """Ollama's ``/api/tags``: reachable with its models (``ollama_chat/NAME``), or why not."""
    status, data, detail = _get_json(base.rstrip("/") + "/api/tags", {}, timeout)
    probe = _probe(base, status, detail)
    if not probe.ok:
        return probe
    listed = data.get("models") if isinstance(data, dict) else None
    names = (
        [m.get("name") for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
    )
    return _listed(probe, "ollama_chat", names)


def probe_models(
    api_base: str,
    api_key: str | None = None,
    timeout: float = LOCAL_TIMEOUT,
    prefix: str = "openai",
) -> Probe:
    """An OpenAI-compatible server's ``/models``: reachable with ``PREFIX/ID`` names, or why not."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    status, data, detail = _get_json(api_base.rstrip("/") + "/models", headers, timeout)
    probe = _probe(api_base, status, detail)
    if not probe.ok:
        return probe
    listed = data.get("data") if isinstance(data, dict) else None
    ids = [m.get("id") for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
    return _listed(probe, prefix, ids)


def _listed(probe: Probe, prefix: str, names: list[Any]) -> Probe:
    """``probe`` with the ``PREFIX/NAME`` of each listed name a session can use.

    A server's list is its text: a name with a space, a line break, a control or
    bidirectional character, or thousands of characters is no model string a session
    takes (the picked model failed every ``%grinta TASK`` with a traceback until another
    was picked), and could pass for another model in the picker. Such names are left out,
    and the detail says how many.
    """
    usable = [n for n in names if isinstance(n, str) and _usable_name(n)]
    models = tuple(f"{prefix}/{n}" for n in usable)
    detail = f"{len(models)} model{'' if len(models) == 1 else 's'}"
    unusable = sum(1 for n in names if isinstance(n, str) and n.strip()) - len(usable)
    if unusable:
        detail += f"; {unusable} with a name no model string can hold left out"
    return replace(probe, models=models[:MAX_SERVER_MODELS], detail=detail)


def _usable_name(name: str) -> bool:
    """Whether a listed name can be a model string: short, printable, no whitespace."""
    return (
        0 < len(name) <= MAX_NAME_CHARS
        and name.isprintable()
        and not any(c.isspace() for c in name)
    )


def check_provider(
    provider: str, key: str, timeout: float = HOSTED_TIMEOUT, url: str | None = None
) -> Probe:
    """Ask ``provider``'s list of models with ``key`` (free; ``--check`` only).

    ``url`` replaces the provider's endpoint (a test's local server).
    """
    endpoint, style = PROVIDER_CHECKS.get(provider, ("", "bearer"))
    endpoint = url or endpoint
    if not endpoint:
        return Probe(provider, "error", "grinta does not know how to check this provider")
    if style == "anthropic":
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    elif style == "google":
        headers = {"x-goog-api-key": key}
    else:
        headers = {"Authorization": f"Bearer {key}"}
    status, _data, detail = _get_json(endpoint, headers, timeout)
    probe = _probe(endpoint, status, detail)
    return replace(probe, detail="key accepted") if probe.ok else probe


def _probe(url: str, status: int | None, detail: str) -> Probe:
    if status is None:
        return Probe(url, "unreachable", detail)
    if status in (401, 403):
        return Probe(url, "rejected", f"HTTP {status}: the key was refused")
    if status != 200:
        return Probe(url, "error", f"HTTP {status}" + (f": {detail}" if detail else ""))
    return Probe(url, "reachable")


def _get_json(url: str, headers: dict[str, str], timeout: float) -> tuple[int | None, Any, str]:
    """GET ``url``: (HTTP status or None when nothing answered, the JSON body or None, why)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", **headers})
    # ``timeout`` bounds each read only: a server trickling its headers or body a byte at a
    # time held ``grinta models`` (and the picker's "looking for local servers") for days.
    deadline = time.monotonic() + timeout
    handlers: list[urllib.request.BaseHandler] = [
        _DeadlineHTTPHandler(deadline),
        _DeadlineHTTPSHandler(deadline),
        _SameServerRedirects(),
    ]
    if _is_local(url):  # a proxy from the environment must not stand between us and localhost
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_BODY + 1)
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code, None, _reason(exc.reason)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return None, None, _reason(reason)
    if len(body) > MAX_BODY:
        return status, None, "answer too large"
    try:
        return status, json.loads(body), ""
    except ValueError:
        return status, None, "not JSON"


class _SameServerRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the server asked (or from http to https on its host).

    urllib sends every header of a request on to wherever a redirect points, so a server
    (or whoever answers at its address) redirecting to another host got the key meant for
    it: ``GRINTA_API_KEY`` or a key typed in the panel from the picker's probe, a
    provider's key from ``grinta models --check``. A redirect elsewhere is an error
    naming where it pointed; nothing is sent there.
    """

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not _same_server(req.full_url, newurl):
            where = urllib.parse.urlparse(newurl).netloc.rpartition("@")[2] or newurl
            raise urllib.error.HTTPError(
                req.full_url,
                code,
                f"redirected to another server ({where[:100]}); not followed, nothing sent there",
                headers,
                fp,
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _same_server(url: str, target: str) -> bool:
    """Whether ``target`` is on the server of ``url``: same scheme, host and port, or the
    same host reached over https instead of http."""
    old, new = urllib.parse.urlparse(url), urllib.parse.urlparse(target)
    try:
        same = (old.scheme, old.hostname, old.port) == (new.scheme, new.hostname, new.port)
    except ValueError:  # a port that is not a number
        return False
    upgrade = old.scheme == "http" and new.scheme == "https" and old.hostname == new.hostname
    return bool(new.hostname) and (same or upgrade)


class _DeadlineReader(io.RawIOBase):
    """A socket's incoming bytes that stop at ``deadline`` (each read waits what is left)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        # The socket's own reader: it keeps the socket open after urllib closes the
        # connection, until the answer has been read.
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(left)
        return self._raw.readinto(buffer) or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """A connected socket whose reader (what ``http.client`` reads the answer from) keeps
    to a deadline; everything else is the socket's own."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def makefile(self, *_args: Any, **_kwargs: Any) -> io.BufferedReader:
        # http.client asks for one reader ("rb") per answer, and for nothing else.
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _deadline_connection(base: type[http.client.HTTPConnection], deadline: float) -> Any:
    def connection(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
        conn = base(*args, **kwargs)
        connect = conn.connect

        def connect_by_deadline() -> None:
            connect()
            conn.sock = _DeadlineSocket(conn.sock, deadline)

        conn.connect = connect_by_deadline  # type: ignore[method-assign]
        return conn

    return connection


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_deadline_connection(http.client.HTTPConnection, self._deadline), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = _deadline_connection(http.client.HTTPSConnection, self._deadline)
        return self.do_open(connection, req, context=getattr(self, "_context", None))


def _reason(reason: object) -> str:
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return "no answer in time"
    text = getattr(reason, "strerror", None) or str(reason)
    return " ".join(str(text).split())[:200]


def _is_local(url: str) -> bool:
    host = urllib.parse.urlparse(url).hostname or ""
    return host in ("localhost", "0.0.0.0", "::1") or host.startswith("127.")


# -- the panel's choices --------------------------------------------------------------------------


def choices(
    config: Config,
    environ: Mapping[str, str],
    held: frozenset[str] = frozenset(),
    ollama: Probe | None = None,
    server: Probe | None = None,
) -> list[ModelChoice]:
    """What the model picker offers, in order, each name once.

    1. ``GRINTA_MODEL`` (``config.model``), when set;
    2. a few models of each provider with a key (in ``environ`` or ``held``);
    3. the models the configured api base lists (``server``), and a local
       Ollama's (``ollama``): probes the caller made, or None (not asked yet);
    4. the demo model, when no model is configured (what a session uses then);
    5. one model of each provider without a key, so the key field can take one.
    """
    picked: dict[str, ModelChoice] = {}

    def add(choice: ModelChoice) -> None:
        picked.setdefault(choice.name, choice)

    if config.model:
        provider = guess_provider(config.model)
        add(
            ModelChoice(
                config.model,
                "configured",
                provider,
                config.api_base,
                _first(PROVIDER_KEYS.get(provider or "", ())),
            )
        )
    keys = provider_keys(environ, held)
    for key in keys:
        if key.is_set:
            for name in featured_models(key.provider):
                add(ModelChoice(name, "key", key.provider, None, key.variables[0]))
    if server is not None and server.ok and config.api_base:
        provider = guess_provider(config.model or "") or "openai"
        variable = _first(PROVIDER_KEYS.get(provider, ()))
        for name in server.models:
            add(ModelChoice(name, "server", provider, config.api_base, variable))
    if ollama is not None and ollama.ok:
        for name in ollama.models:
            add(ModelChoice(name, "ollama", "ollama", ollama.url, None))
    if not config.model:
        add(ModelChoice(DEMO, "demo"))
    for key in keys:
        if not key.is_set:
            featured = featured_models(key.provider, 1)
            if featured:
                add(ModelChoice(featured[0], "needs key", key.provider, None, key.variables[0]))
    return list(picked.values())


def _first(values: tuple[str, ...]) -> str | None:
    return values[0] if values else None


def apply_choice(config: Config, choice: ModelChoice | None, keys: HeldKeys) -> Config:
    """``config`` with the picker's ``choice`` and the key field's key, for the next session.

    ``--model`` wins over the picker, which wins over ``GRINTA_MODEL``. A choice brings
    its own server (``GRINTA_API_BASE`` and ``GRINTA_API_KEY`` belong to
    ``GRINTA_MODEL``, not to a hosted model picked instead); a model that server
    lists goes to it with its key. A key held for the model's provider wins over the
    environment's: it is the one typed last.
    """
    if choice is not None and config.origin("model") != "--model":
        if choice.source == "demo":
            config = _with(config, "the model picker", model=None, api_base=None, api_key=None)
        elif choice.source != "configured":
            picked: dict[str, Any] = {"model": choice.name, "api_base": choice.api_base}
            if not (choice.source == "server" and choice.api_base == config.api_base):
                picked["api_key"] = None  # the same server keeps its key (and its origin)
            config = _with(config, "the model picker", **picked)
    provider = guess_provider(config.model or "")
    key = keys.get(provider)
    if config.model and key:
        config = _with(config, "the key field", api_key=key)
    return config


def _with(config: Config, origin: str, **values: Any) -> Config:
    origins = dict(config.origins) | {name: origin for name in values}
    return replace(config, **values, origins=tuple(origins.items()))


# -- grinta models --------------------------------------------------------------------------------


class _Hosted:
    """What is said of a hosted provider's models: "key set", or, with ``check``, what its
    list of models answered (asked once per provider)."""

    def __init__(self, check: bool, endpoints: Mapping[str, str] | None) -> None:
        self.check = check
        self.endpoints = dict(endpoints or {})
        self.probes: dict[str, Probe] = {}

    def status(self, provider: str, key: str, variable: str) -> tuple[str, bool]:
        if not self.check:
            return f"key set in {variable}, not called", True
        if provider not in self.probes:
            url = self.endpoints.get(provider)
            self.probes[provider] = check_provider(provider, key, url=url)
        probe = self.probes[provider]
        if probe.ok:
            return f"key accepted ({variable})", True
        if probe.status == "rejected":
            return f"key rejected: set {variable} to a valid key", False
        return probe.line(), False


def survey(
    config: Config,
    environ: Mapping[str, str],
    *,
    check: bool = False,
    endpoints: Mapping[str, str] | None = None,
) -> Survey:
    """What ``grinta models`` reports. ``check`` calls each hosted provider that has a key;
    ``endpoints`` (provider -> URL) replaces their check endpoints (tests)."""
    keys = provider_keys(environ)
    provider = guess_provider(config.model) if config.model else None
    ollama = probe_ollama(ollama_base(environ))
    server = None
    if config.api_base:
        server_key = clean_key(config.api_key) or environment_key(provider, environ)
        server = probe_models(config.api_base, server_key, prefix=provider or "openai")
    hosted = _Hosted(check, endpoints)
    lines: list[ModelLine] = []
    problem = None
    if config.model:
        status, ok = _configured_status(config, environ, provider, ollama, server, hosted)
        lines.append(ModelLine(config.model, MODEL_VARIABLE, status, ok))
        if not ok:
            problem = f"{config.model}: {status}"
    for key in keys:
        if key.found is None:
            continue
        secret = clean_key(environ[key.found]) or ""
        for name in featured_models(key.provider):
            status, ok = hosted.status(key.provider, secret, key.found)
            lines.append(ModelLine(name, key.provider, status, ok))
    if server is not None and server.ok:
        for name in server.models:
            lines.append(ModelLine(name, BASE_VARIABLE, f"listed by {server.url}", True))
    for name in ollama.models:
        lines.append(ModelLine(name, "ollama", f"listed by {ollama.url}", True))
    if not config.model:
        lines.append(ModelLine(DEMO, "built in", "scripted; no key, no network", True))
    unique: dict[tuple[str, str], ModelLine] = {}
    for line in lines:
        unique.setdefault((line.name, line.source), line)
    return Survey(
        model=config.model,
        api_base=config.api_base,
        api_key_set=bool(config.api_key),
        keys=keys,
        ollama=ollama,
        server=server,
        models=list(unique.values()),
        problem=problem,
        checked=check,
    )


def _configured_status(
    config: Config,
    environ: Mapping[str, str],
    provider: str | None,
    ollama: Probe,
    server: Probe | None,
    hosted: _Hosted,
) -> tuple[str, bool]:
    """What is known of ``GRINTA_MODEL``: its server answers (and lists it), or its key is set."""
    name = config.model or ""
    bare = name.partition("/")[2] or name
    if server is not None:
        if not server.ok:
            return server.line(), False
        listed = not server.models or bare in {m.partition("/")[2] for m in server.models}
        note = "" if listed else " (it does not list this model)"
        return f"reachable at {server.url}{note}", True
    if provider in ("ollama", "ollama_chat"):
        if not ollama.ok:
            return ollama.line(), False
        if f"ollama_chat/{bare}" not in ollama.models:
            return f"reachable at {ollama.url}, but not pulled: ollama pull {bare}", False
        return f"reachable at {ollama.url}", True
    variables = PROVIDER_KEYS.get(provider or "", ())
    if not variables:
        return "not checked (grinta does not know this provider's key)", True
    if clean_key(config.api_key):
        return hosted.status(provider or "", clean_key(config.api_key) or "", KEY_VARIABLE)
    variable = _set_variable(variables, environ)
    if variable is None:
        return f"MISSING_KEY: set {variables[0]} (or GRINTA_API_KEY)", False
    return hosted.status(provider or "", clean_key(environ[variable]) or "", variable)


def main(
    config: Config,
    environ: Mapping[str, str],
    *,
    check: bool = False,
    as_json: bool = False,
    out: Any = None,
) -> int:
    """``grinta models [--check] [--json]``: print the survey; 1 when the configured model
    cannot work as far as grinta can tell (no key, its server not answering, a key refused)."""
    out = out or sys.stdout
    found = survey(config, environ, check=check)
    secrets = Secrets.from_env(environ, extra=[config.api_key])
    if as_json:
        text = json.dumps(secrets.redact_data(found.to_json()), indent=2)
    else:
        text = "\n".join(secrets.redact(line) for line in found.lines())
    print(text, file=out)
    return 1 if found.problem else 0
