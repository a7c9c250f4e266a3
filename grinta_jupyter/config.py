"""One configuration object, filled once: environment, then flags or magic options.

    config = Config.from_env(os.environ)              # every GRINTA_* variable is read here
    config = config.with_options(model=..., root=...)  # CLI flags / %grinta options; None = not given
    Session(task, model=model, **config.session_options())

Every default is written once, as a field default of ``Config``; the session's
budgets (``agent.guards.Limits``) take theirs from here. ``model`` None means no
model is configured: every front end then uses the demo model (``DemoModel``).
A bad value raises ``ConfigError`` naming the variable or option it came from.

This module imports nothing from the package at import time, so any layer may
read it (the model resolution in ``agent/models`` does).
"""

from __future__ import annotations

import argparse
import math
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from grinta_jupyter.agent.guards import Limits
    from grinta_jupyter.tools.base import Settings

# Where a value came from when it was not the default: "--root", "GRINTA_ROOT", ...
Origin = str
DEFAULT: Origin = "default"


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names where it came from."""


# -- value parsers (argparse shows an ArgumentTypeError's message as is) -----------------------


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--max-steps``, ``--runs``, ``GRINTA_MAX_STEPS``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0 (dollars, seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return value


_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def flag(text: str) -> bool:
    """``1``, ``true``, ``yes``, ``on`` or their opposites (``GRINTA_DEBUG=1``)."""
    value = text.strip().lower()
    if value in _ON or value in _OFF:
        return value in _ON
    # GRINTA_DEBUG=false once meant on, as did any word but 0.
    raise argparse.ArgumentTypeError(f"expected 1 or 0 (true/false, yes/no, on/off), got {text!r}")


def _text(text: str) -> str:
    return text


def _is_http_address(text: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(text.strip())
    except ValueError:  # "http://[::1" and the like
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def _has_credentials(address: str) -> bool:
    """Whether an http(s) ``address`` carries a ``user:password@`` (or ``user@``) part."""
    return "@" in urllib.parse.urlsplit(address.strip()).netloc


def _without_credentials(address: str) -> str:
    """``address`` without its ``user:password@`` part, query or fragment: safe to show."""
    parts = urllib.parse.urlsplit(address.strip())
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=host, query="", fragment=""))


def _has_gap(text: str) -> bool:
    """Whether ``text`` holds a space, a line break or another character that prints nothing."""
    return any(c.isspace() or not c.isprintable() for c in text)


# Who writes the text that stands for condensed turns (agent/condense.py): grinta's
# deterministic digest, or the model itself.
CondenseMethod = Literal["digest", "model"]
CONDENSE_METHODS: tuple[CondenseMethod, ...] = ("digest", "model")


def condense_method(text: str) -> CondenseMethod:
    """``digest`` or ``model`` (``--condense``, ``GRINTA_CONDENSE``)."""
    value = text.strip().lower()
    for method in CONDENSE_METHODS:
        if value == method:
            return method
    raise argparse.ArgumentTypeError(f"expected digest or model, got {text!r}")


# Environment variable -> (field, parser). A blank value counts as unset.
ENVIRONMENT: dict[str, tuple[str, Callable[[str], Any]]] = {
    "GRINTA_MODEL": ("model", _text),
    "GRINTA_API_BASE": ("api_base", _text),
    "GRINTA_API_KEY": ("api_key", _text),
    "GRINTA_ROOT": ("root", _text),
    "GRINTA_LOG_DIR": ("log_dir", _text),
    "GRINTA_MAX_STEPS": ("max_steps", positive_int),
    "GRINTA_MAX_TOKENS": ("max_tokens", positive_int),
    "GRINTA_MAX_COST": ("max_cost", positive_float),
    "GRINTA_MAX_WALL_TIME": ("max_wall_time", positive_float),
    "GRINTA_CONTEXT_BUDGET": ("context_budget", positive_int),
    "GRINTA_CONDENSE": ("condense", condense_method),
    "GRINTA_DEBUG": ("debug", flag),
    "GRINTA_CACHE": ("cache", _text),
}


class SessionOptions(TypedDict):
    """The ``Session`` keyword arguments a configuration decides (all but the model)."""

    root: Path
    toolset: str
    policy: Literal["ask", "auto"]
    limits: Limits
    settings: Settings
    log_dir: Path | None


@dataclass(frozen=True)
class Config:
    """Everything a front end lets a person choose about a session, with its default."""

    model: str | None = None  # a litellm model string; None: the demo model
    api_base: str | None = None  # a local or proxy server for the model
    api_key: str | None = field(default=None, repr=False)
    root: str | None = None  # the workspace; None: the current folder
    toolset: str = "intent"
    auto: bool = False  # approve every step without asking
    manual: bool = False  # notebooks: advance only when asked (%grinta step)
    max_steps: int | None = 40
    max_tokens: int | None = None
    max_cost: float | None = None  # dollars
    max_wall_time: float | None = None  # seconds
    # Tokens each model request stays under; None: 60% of the model's context window as
    # litellm knows it, else 32,000 (agent/condense.py, docs/session.md "Bounded context").
    context_budget: int | None = None
    condense: CondenseMethod = "digest"  # who writes condensations: grinta's digest or the model
    log_dir: str | None = None  # None: <root>/.grinta/sessions
    debug: bool = False  # the CLI shows tracebacks of internal errors
    # Where `grinta tasks build` keeps source distributions; None: $XDG_CACHE_HOME/grinta
    cache: str | None = None
    origins: tuple[tuple[str, Origin], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, what in (
            ("root", "folder"),
            ("log_dir", "folder"),
            ("toolset", "toolset"),
            ("model", "model, or leave it out for the demo model"),  # '' ran the demo unsaid
            ("api_base", "server address, or leave it out"),
        ):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ConfigError(f"{self.origin(name)} is empty; give a {what}")
        for name, what in (
            ("model", "a model string"),
            ("api_base", "a server address"),
            ("api_key", "a key"),
        ):
            value = getattr(self, name)
            if value is not None and _has_gap(value.strip()):
                # A pasted line break or space inside reached litellm, which failed with a
                # retried HTTP 500 after the session had started; a line break in the model
                # string also split the terminal's "model:" line in two. Neither a key nor
                # an address's user:password@ part is ever shown.
                shown = value.strip()
                if name == "api_base":
                    shown = shown.rpartition("@")[2]
                raise ConfigError(
                    f"{self.origin(name)}: {what} has no spaces or line breaks inside, got "
                    + ("one that has" if name == "api_key" else repr(shown))
                )
        for name in ("root", "log_dir", "cache"):
            value = getattr(self, name)
            if value is not None and value.startswith("~"):
                try:
                    Path(value).expanduser()
                except RuntimeError:  # "~nobody/x": was an internal error where it was used
                    user = value[1:].partition("/")[0] or "you"
                    raise ConfigError(
                        f"{self.origin(name)} {value}: no home folder for {user} to expand ~ to"
                    ) from None
        if self.api_base is not None and not _is_http_address(self.api_base):
            # litellm took "localhost:8000/v1" as a path and failed with a retried HTTP 500.
            shown = self.api_base.strip().rpartition("@")[2]  # never a user:password@ part
            raise ConfigError(
                f"{self.origin('api_base')}: expected an http:// or https:// address "
                f"(http://127.0.0.1:8000/v1), got {shown!r}"
            )
        if self.api_base is not None and _has_credentials(self.api_base):
            # The model client sends its own Authorization header, and httpx refuses to combine
            # it with a URL's user:password@: every request failed as a retried "HTTP 500"
            # after the session had started (and `grinta models` called it unreachable).
            raise ConfigError(
                f"{self.origin('api_base')}: an address with a user:password@ part cannot be "
                "used (the model client sends its own Authorization header); give the address "
                "without it, e.g. "
                f"{_without_credentials(self.api_base)!r}, and the key as GRINTA_API_KEY"
            )
        for name in ("max_steps", "max_tokens", "context_budget"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{self.origin(name)}: must be 1 or more, got {value!r}")
        for name in ("max_cost", "max_wall_time"):
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, (int, float)) and math.isfinite(value) and value > 0
            ):
                raise ConfigError(f"{self.origin(name)}: must be a number above 0, got {value!r}")
        if self.condense not in CONDENSE_METHODS:
            raise ConfigError(
                f"{self.origin('condense')}: must be digest or model, got {self.condense!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Config:
        """The configuration the ``GRINTA_*`` variables in ``environ`` describe."""
        values: dict[str, Any] = {}
        origins: list[tuple[str, Origin]] = []
        for variable, (name, parse) in ENVIRONMENT.items():
            text = environ.get(variable, "").strip()
            if not text:
                continue
            try:
                values[name] = parse(text)
            except argparse.ArgumentTypeError as exc:
                raise ConfigError(f"{variable}={text}: {exc}") from None
            origins.append((name, variable))
        return cls(**values, origins=tuple(origins))

    def with_options(self, **options: Any) -> Config:
        """This configuration with the given flags or magic options; a None option is not given.

        Option names are field names (``max_steps`` for ``--max-steps``); an
        unknown name is a programming error (TypeError).
        """
        known = {f.name for f in fields(self)} - {"origins"}
        unknown = set(options) - known
        if unknown:
            raise TypeError(f"unknown configuration option(s): {', '.join(sorted(unknown))}")
        given = {name: value for name, value in options.items() if value is not None}
        origins = dict(self.origins) | {name: "--" + name.replace("_", "-") for name in given}
        return replace(self, **given, origins=tuple(origins.items()))

    def origin(self, name: str) -> Origin:
        """Where ``name``'s value came from: ``--root``, ``GRINTA_ROOT``, or ``default``."""
        return dict(self.origins).get(name, DEFAULT)

    @property
    def policy(self) -> Literal["ask", "auto"]:
        return "auto" if self.auto else "ask"

    @property
    def workspace(self) -> Path:
        """The workspace folder: ``root``, else the current folder."""
        return Path(self.root).expanduser() if self.root else Path(".")

    def limits(self) -> Limits:
        """The session budgets; every other guard threshold keeps its ``Limits`` default."""
        from grinta_jupyter.agent.guards import Limits

        return Limits(
            max_steps=self.max_steps,
            max_tokens=self.max_tokens,
            max_cost=self.max_cost,
            max_wall_time=self.max_wall_time,
            context_budget=self.context_budget,
            condense=self.condense,
        )

    def kept_options(self, which: str, instead: str) -> str | None:
        """Why an option given here cannot apply to a ``which`` ("continued", "resumed")
        session, else None: it keeps the toolset and limits it started with (they are in its
        log), so ``--max-steps 3`` would have bounded nothing. ``instead`` ends the advice."""
        for option in ("toolset", "max_steps"):
            if self.origin(option).startswith("--"):
                return (
                    f"{self.origin(option)} cannot change a {which} session: it keeps the "
                    f"toolset and limits it started with; leave it out, or start a new "
                    f"session{instead}"
                )
        return None

    def kept_limits(self, kept: Limits) -> list[str]:
        """A note for each limit the environment sets (``GRINTA_MAX_STEPS``...) that a
        resumed or continued session does not take: it keeps the limits it started with
        (``kept``, from its log). Not refused like the options: the environment is set for
        every session, not for this one."""
        notes = []
        limits = {item.name for item in fields(kept)}
        for variable, (name, _) in ENVIRONMENT.items():
            if name not in limits or self.origin(name) != variable:
                continue  # not a limit, or not set by the environment
            wanted, was = getattr(self, name), getattr(kept, name)
            if wanted != was:
                notes.append(
                    f"note: {variable}={wanted} does not apply: this session keeps the "
                    f"{name.replace('_', ' ')} it started with "
                    f"({'no limit' if was is None else was}); start a new session to use it"
                )
        return notes

    def settings(self) -> Settings:
        """Tool settings. Notebooks are edited as cells, validated before every commit; in a
        kernel the cell running the session is protected (docs/notebook.md)."""
        from grinta_jupyter.tools.base import Settings

        return Settings()

    def session_options(self, root: Path | None = None) -> SessionOptions:
        """Keyword arguments for ``Session(task, model=..., **options)``.

        ``root`` overrides the configured workspace (the demo's copy of a sample).
        """
        return SessionOptions(
            root=root if root is not None else self.workspace,
            toolset=self.toolset,
            policy=self.policy,
            limits=self.limits(),
            settings=self.settings(),
            log_dir=Path(self.log_dir).expanduser() if self.log_dir else None,
        )
