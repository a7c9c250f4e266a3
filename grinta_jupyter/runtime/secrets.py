"""Secrets in the environment: which variables hold them, and keeping their values out.

A variable is secret when a WORD of its name (split at ``_``, ``-``, ``.`` and
camel-case humps) is one of ``SECRET_WORDS``: ``OPENAI_API_KEY`` and
``GITHUB_TOKEN`` are secret, ``GIT_AUTHOR_NAME`` and ``TOKENIZERS_PARALLELISM``
are not. Its value is redacted only when it looks like a secret (at least 8
characters, and not a plain lowercase word), so ``TOKEN_KIND=observation`` does
not turn every "observation" into ``[REDACTED]``.

Values are matched as they are and as they appear inside JSON text (quotes and
backslashes escaped), so a value holding ``"`` or ``\\`` is caught in both.
Redaction of structured data replaces string values only, never keys, so a
redacted event still parses.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 8
SECRET_WORDS = frozenset(
    {
        "KEY",
        "KEYS",
        "APIKEY",
        "ACCESSKEY",
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "COOKIE",
        "PRIVATE",
        "SIGNATURE",
    }
)
# Secret-sounding names whose values are addresses of local helpers, not secrets.
NOT_SECRET = frozenset({"SSH_AUTH_SOCK", "GPG_AGENT_INFO"})
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|[^A-Za-z]|$)|[A-Z]?[a-z]+|\d+")
_PLAIN_WORD = re.compile(r"[a-z]+")


def is_secret_name(name: str) -> bool:
    """True when a word of ``name`` says it holds a secret (``AUTH`` only as a whole word)."""
    if name.upper() in NOT_SECRET:
        return False
    return any(word.upper() in SECRET_WORDS for word in _WORDS.findall(name))


def looks_secret(value: str) -> bool:
    """Long enough, and not a plain lowercase word (``observation``), to be worth hiding."""
    value = value.strip()
    return len(value) >= MIN_SECRET_LEN and not _PLAIN_WORD.fullmatch(value)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {v.strip() for k, v in env.items() if is_secret_name(k) and looks_secret(v)}
    return sorted(values, key=len, reverse=True)


@dataclass(frozen=True)
class Secrets:
    """A fixed set of secret values, and the redaction of text and data that may hold them."""

    values: tuple[str, ...] = ()

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, extra: Iterable[str | None] = ()
    ) -> Secrets:
        found = set(secret_values(environ))
        found.update(v for v in extra if v and looks_secret(v))
        return cls(tuple(sorted(found, key=len, reverse=True)))

    def redact(self, text: str) -> str:
        """``text`` with every secret, raw or JSON-escaped, replaced by ``[REDACTED]``."""
        if not self.values or not text:
            return text
        return _pattern(self.values).sub(REDACTED, text)

    def redact_data(self, data: Any) -> Any:
        """A copy of JSON-like ``data`` with string values redacted (keys are kept)."""
        if not self.values:
            return data
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, dict):
            return {key: self.redact_data(value) for key, value in data.items()}
        if isinstance(data, (list, tuple)):
            return [self.redact_data(value) for value in data]
        return data


@lru_cache(maxsize=32)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    forms: set[str] = set()
    for value in values:
        forms.add(value)
        forms.add(json.dumps(value)[1:-1])  # as it appears inside a JSON string
        forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(re.escape(form) for form in ordered))


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with the environment's secrets (or the given ones) redacted."""
    if secrets is None:
        return Secrets.from_env().redact(text)
    return Secrets(tuple(sorted(set(secrets), key=len, reverse=True))).redact(text)


def command_environment(
    environ: Mapping[str, str] | None = None, passthrough: Iterable[str] = ()
) -> dict[str, str]:
    """The environment for commands: every secret variable removed, except those named."""
    env = os.environ if environ is None else environ
    keep = set(passthrough)
    return {k: v for k, v in env.items() if k in keep or not is_secret_name(k)}
