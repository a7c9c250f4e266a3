"""The panel header's model picker and key field, and the choice they make for the next session.

    bar = model_bar(running="demo")  # the widget (in every panel's header, and %grinta models)
    config = configured(config)      # controller: the picker's model and the key field's key
    report_error(code, message, model)  # a model error: every bar shows it, with the fix

The kernel keeps two things, in memory only: the model picked for the next
session (``_choice``) and the keys typed into the field (``agent/models/keys.HELD``,
which also makes every key a redacted secret). Every live bar shows the same
state and is redrawn when it changes.

Choosing applies to the next session (``%grinta TASK``), never to the running
one: a session's log, budget, context window and replay are its model's, and a
switch halfway would make them lie. ``--model`` still wins over the picker.

What the page receives (traits, synced; the notebook may save them, so none
ever holds a key):

- ``choices``: ``[{name, label, source, provider, key_variable}]``
  (``catalog.choices``: GRINTA_MODEL, the models of providers with a key, the
  configured api base's and a local Ollama's, the demo, one model per provider
  still without a key);
- ``chosen``: the model the next session uses; ``running``: the one of the
  session this panel shows ("" for none);
- ``key_provider``, ``key_variable``: whose key the field takes ("" when the
  chosen model takes none); ``key_state``: ``env`` (its variable is set),
  ``panel`` (typed here, held), ``missing``, ``optional`` (a local server),
  ``rejected`` (the provider refused the last one), ``none``;
- ``status``: the kernel's word on the last action; ``problem``: the model
  error that ended a session or stopped one starting, with its fix;
- ``searching``: local servers are still being asked;
- ``answered``: how many of the page's messages the kernel acted on, raised in
  the same message as the ``status`` it set: the page's "sending..." gives way
  to the kernel's word even when that word is the one it already showed.

What the page sends (custom messages, never a trait):
``{"event": "choose", "model": name}``, ``{"event": "key", "provider": p,
"key": k}``, ``{"event": "forget", "provider": p}``. A key for a provider
other than the field's current one (the choice changed meanwhile) is refused
and said so: it is never filed under the wrong provider.

Local servers (Ollama's ``/api/tags``, the api base's ``/models``) are asked in
a worker thread when a bar is made, never on the kernel's event loop and never
at ``%load_ext``; the answer is kept for ``PROBE_TTL`` seconds.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from grinta_jupyter.agent.blocking import running_loop
from grinta_jupyter.agent.models import catalog
from grinta_jupyter.agent.models.catalog import ModelChoice, Probe
from grinta_jupyter.agent.models.keys import HELD
from grinta_jupyter.agent.models.litellm_model import PROVIDER_KEYS, clean_key, guess_provider
from grinta_jupyter.config import Config, ConfigError
from grinta_jupyter.runtime.display import visible
from grinta_jupyter.runtime.secrets import Secrets

STATIC = Path(__file__).parent / "static"
PROBE_TTL = 15.0  # seconds a local server's answer is reused by the next bar
MAX_KEY_CHARS = 4_000
MAX_ECHO_CHARS = 200  # of a model or provider name the page sent, echoed in the status
KEY_ERRORS = ("MISSING_KEY", "AUTH")

# The kernel's state: the choice for the next session, the providers whose held key was
# refused, the last model problem, the live bars, the local servers' last answers.
_choice: ModelChoice | None = None
_rejected: set[str] = set()
_problem = ""
_bars: weakref.WeakSet[ModelBarWidget] = weakref.WeakSet()
_probed: tuple[float, tuple[str, str | None], Probe | None, Probe | None] | None = None
_lock = threading.Lock()


class ModelBarWidget(anywidget.AnyWidget):
    """The model picker and the key field, drawn by the labextension's TypeScript."""

    _esm = STATIC / "card.js"
    _css = STATIC / "card.css"
    kind = traitlets.Unicode("models").tag(sync=True)
    key = traitlets.Unicode().tag(sync=True)  # names the bar to the page (not an API key)
    choices = traitlets.List(traitlets.Dict()).tag(sync=True)
    chosen = traitlets.Unicode("").tag(sync=True)
    running = traitlets.Unicode("").tag(sync=True)
    key_provider = traitlets.Unicode("").tag(sync=True)
    key_variable = traitlets.Unicode("").tag(sync=True)
    key_state = traitlets.Unicode("none").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    problem = traitlets.Unicode("").tag(sync=True)
    searching = traitlets.Bool(False).tag(sync=True)
    answered = traitlets.Int(0).tag(sync=True)

    def __init__(self, running: str = "", **kwargs: Any) -> None:
        super().__init__(**{"key": uuid.uuid4().hex, "running": running, **kwargs})
        self._offered: list[ModelChoice] = []
        self.on_msg(self._received)
        self.add_class("grinta-panel-models")

    def __repr__(self) -> str:  # the saved notebook's text for this output: no state in it
        return "grinta model picker (it needs the running kernel: %grinta models)"

    def receive(self, content: object) -> None:
        """Act on a message from the page, as if it came from the browser (tests)."""
        if not isinstance(content, dict):
            return
        event = content.get("event")
        with self.hold_sync():
            if event == "choose" and isinstance(content.get("model"), str):
                self._choose(content["model"])
            elif event == "key" and isinstance(content.get("key"), str):
                self._key(str(content.get("provider") or ""), content["key"])
            elif event == "forget":
                self._forget(str(content.get("provider") or ""))
            else:
                return
            self.answered += 1

    def _received(self, _widget: object, content: object, _buffers: Sequence[object]) -> None:
        self.receive(content)

    # -- what the person does -----------------------------------------------------------------

    def _choose(self, name: str) -> None:
        global _choice, _problem
        choice = next((c for c in self._offered if c.name == name), None)
        if choice is None:
            self.status = visible(
                f"{_named(name)} is not offered here; nothing changed", keep_newlines=False
            )
            return
        with _lock:
            _choice = choice
            _problem = ""
        if choice.source != "demo":
            from grinta_jupyter import want_model

            want_model()  # litellm, skipped by a demo kernel's warming, loads meanwhile
        running = f"; this session keeps {self.running}" if self.running else ""
        need = (
            f"; type a key for {choice.provider} in the key field first"
            if choice.source == "needs key" and not HELD.get(choice.provider)
            else ""
        )
        _refresh(
            self,
            f"the next session uses {choice.name} (start it with %grinta TASK){running}{need}",
        )

    def _key(self, provider: str, key: str) -> None:
        global _problem
        if not provider or provider != self.key_provider:
            self.status = "the model changed meanwhile: that key was not kept; type it again"
            return
        key = clean_key(key) or ""
        if not key or len(key) > MAX_KEY_CHARS or any(c in key for c in "\r\n\0"):
            self.status = "that is not a key (empty, several lines, or too long): nothing kept"
            return
        if not (key.isascii() and key.isprintable()):
            # No HTTP header can carry it: every call would fail as a retried "HTTP 500".
            self.status = (
                "that is not a key: it holds a character that is not ASCII or a control "
                "character (pasted with other text?): nothing kept"
            )
            return
        HELD.put(provider, key)
        with _lock:
            _rejected.discard(provider)
            _problem = ""
        _refresh(self, f"key for {provider} received: the next session uses it")

    def _forget(self, provider: str) -> None:
        if provider and HELD.drop(provider):
            _refresh(self, f"the key for {provider} was forgotten")
        else:
            self.status = visible(
                f"no key for {_named(provider) or 'that provider'} is held here: nothing to forget",
                keep_newlines=False,
            )

    # -- what the bar shows -------------------------------------------------------------------

    def draw(
        self, offered: list[ModelChoice], chosen: ModelChoice, environ: dict[str, str]
    ) -> None:
        """Show ``offered`` with ``chosen`` selected, and the key field for its provider."""
        self._offered = offered
        provider, variable, state = _key_field(chosen, environ)
        with self.hold_sync():
            self.choices = [c.to_json() for c in offered]
            self.chosen = chosen.name
            self.key_provider = provider
            self.key_variable = variable
            self.key_state = state
            self.problem = _redacted(_problem)


def model_bar(running: str = "") -> ModelBarWidget:
    """A bar for a panel (``running``: its session's model) or for ``%grinta models``.

    It shows what is known at once, and asks the local servers in a worker thread
    (unless they answered in the last ``PROBE_TTL`` seconds).
    """
    bar = ModelBarWidget(running=running)
    _bars.add(bar)
    environ = dict(os.environ)
    config = _environment_config(environ)
    where = (catalog.ollama_base(environ), config.api_base if config else None)
    cached = _probed if _probed is not None and _probed[1] == where else None
    fresh = cached is not None and time.monotonic() - cached[0] < PROBE_TTL
    _draw(bar, cached[2] if cached else None, cached[3] if cached else None)
    if not fresh:
        bar.searching = True
        _probe_in_background(where)
    return bar


def configured(config: Config) -> Config:
    """``config`` with the picker's choice and the key field's key (``catalog.apply_choice``)."""
    with _lock:
        choice = _choice
    return catalog.apply_choice(config, choice, HELD)


def chosen_name() -> str | None:
    """The model picked for the next session, if one was picked."""
    with _lock:
        return _choice.name if _choice is not None else None


def report_error(code: str, message: str, model: str | None, used_key: str | None = None) -> str:
    """A model error that ended a session or kept one from starting: every bar shows it with
    its fix, and it comes back as one line. ``used_key``: the key the session sent; when it
    is the one typed in the key field and the provider refused it, it is forgotten."""
    global _problem
    provider = guess_provider(model or "") or ""
    line = f"{code}: {message}"
    if code == "AUTH" and provider and used_key and used_key == HELD.get(provider):
        HELD.drop(provider)
        with _lock:
            _rejected.add(provider)
        line += (
            f"; the key typed in the key field for {provider} was refused and forgotten: "
            "type a valid one, then start a new session"
        )
    elif code in KEY_ERRORS:
        line += "; or type a key in the key field, then start a new session (%grinta TASK)"
    with _lock:
        _problem = line
    _refresh(None, "")
    return _redacted(line)


def clear_problem() -> None:
    """A session started: an earlier session's model problem is old news."""
    global _problem
    with _lock:
        had = bool(_problem)
        _problem = ""
    if had:
        _refresh(None, "")


# -- internals --------------------------------------------------------------------------------


def _environment_config(environ: dict[str, str]) -> Config | None:
    try:
        return Config.from_env(environ)
    except ConfigError:
        return None  # the magic reports it when a session starts


def _draw(bar: ModelBarWidget, ollama: Probe | None, server: Probe | None) -> None:
    environ = dict(os.environ)
    config = _environment_config(environ) or Config()
    offered = catalog.choices(config, environ, HELD.providers(), ollama, server)
    with _lock:
        choice = _choice
    chosen = next((c for c in offered if choice is not None and c.name == choice.name), None)
    if chosen is None and choice is not None:
        offered = [*offered, choice]  # picked when a server answered that no longer does
        chosen = choice
    if chosen is None:
        default = config.model or catalog.DEMO
        chosen = next((c for c in offered if c.name == default), offered[0])
    bar.draw(offered, chosen, environ)


def _refresh(source: ModelBarWidget | None, status: str) -> None:
    """Redraw every live bar; ``status`` goes on the one that was acted on, in the same
    message as its redraw (the page never shows the new choice beside the old status)."""
    cached = _probed
    for bar in list(_bars):
        with bar.hold_sync():
            _draw(bar, cached[2] if cached else None, cached[3] if cached else None)
            if bar is source:
                bar.status = _redacted(status)
    if source is not None and source not in _bars:
        source.status = _redacted(status)


def _key_field(chosen: ModelChoice, environ: dict[str, str]) -> tuple[str, str, str]:
    """(provider, variable, state) of the key field for ``chosen``."""
    provider = chosen.provider or ""
    if chosen.source in ("demo", "ollama") or not provider:
        return "", "", "none"
    variables = PROVIDER_KEYS.get(provider, ())
    variable = variables[0] if variables else catalog.KEY_VARIABLE
    with _lock:
        rejected = provider in _rejected
    if HELD.get(provider):
        return provider, variable, "panel"
    if rejected:
        return provider, variable, "rejected"
    config = _environment_config(environ)
    if chosen.source == "configured" and config is not None and config.api_key:
        return provider, catalog.KEY_VARIABLE, "env"
    found = next((v for v in variables if environ.get(v, "").strip()), None)
    if found:
        return provider, found, "env"
    if chosen.api_base or not variables:
        return provider, variable, "optional"
    return provider, variable, "missing"


def _probe_in_background(where: tuple[str, str | None]) -> None:
    """Ask the local servers in a worker thread; redraw the bars with their answers."""
    ollama_url, api_base = where
    loop = running_loop()

    def probe() -> tuple[Probe, Probe | None]:
        try:
            ollama = catalog.probe_ollama(ollama_url)
        except Exception as exc:  # a bug here must not leave the bars searching forever
            ollama = Probe(ollama_url, "error", repr(exc)[:200])
        if not api_base:
            return ollama, None
        environ = dict(os.environ)
        config = _environment_config(environ)
        provider = guess_provider((config.model if config else None) or "") or "openai"
        # The key a session sends there (catalog.apply_choice, then litellm): the one typed
        # in the field, else GRINTA_API_KEY, else the provider's variable; cleaned as a
        # request cleans it. The raw GRINTA_API_KEY (quoted, with a newline) was refused,
        # and a key only in OPENAI_API_KEY never sent: the server's models were missing.
        key = (
            HELD.get(provider)
            or clean_key(config.api_key if config else None)
            or catalog.environment_key(provider, environ)
        )
        try:
            return ollama, catalog.probe_models(api_base, key, prefix=provider)
        except Exception as exc:
            return ollama, Probe(api_base, "error", repr(exc)[:200])

    def done(ollama: Probe, server: Probe | None) -> None:
        global _probed
        _probed = (time.monotonic(), where, ollama, server)
        for bar in list(_bars):
            _draw(bar, ollama, server)
            bar.searching = False

    if loop is None:
        threading.Thread(target=lambda: done(*probe()), name="grinta-models", daemon=True).start()
        return
    future = loop.run_in_executor(None, probe)
    future.add_done_callback(lambda f: done(*f.result()))


def _named(name: str) -> str:
    """A name the page sent, as the status may echo it: a page can send megabytes."""
    return name if len(name) <= MAX_ECHO_CHARS else name[:MAX_ECHO_CHARS] + "…"


def _redacted(text: str) -> str:
    return visible(Secrets.from_env().redact(text), keep_newlines=False) if text else ""
