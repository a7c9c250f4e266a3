"""Secrets in the environment: which variables hold them, and keeping their values out.

A variable is secret when its name holds PASSWORD, PASSWD, SECRET, APIKEY,
ACCESSKEY, PRIVATEKEY or CREDENTIAL anywhere (``PGPASSWORD``), or when a WORD of it (split
at ``_``, ``-``, ``.`` and camel-case humps) is one of ``SECRET_WORDS``:
``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``GH_PAT`` and ``MYSQL_PWD`` are secret;
``GIT_AUTHOR_NAME``, ``TOKENIZERS_PARALLELISM`` and ``PWD`` are not. A variable
whose value is a URL with a password in it (``postgres://u:pw@host/db``,
``jdbc:mysql://u:pw@host/db``), or carries a secret-named setting
(``https://host/feed?api_key=...``, ``Server=db;Password=...``), is secret
whatever its name, and so is one holding a credential in a provider's format
(``sk-...``, ``ghp_...``, ``AKIA...``, a JWT, a private key). A value is redacted
only when it looks like a secret (at least 8 characters, and not a plain
lowercase word), so
``TOKEN_KIND=observation`` does not turn every "observation" into
``[REDACTED]``; a multi-line value (a PEM key) is also redacted line by line.

Values are matched as they are and in the forms programs print them in: inside
JSON (once or twice encoded, with ``\\/``, HTML-safe), as a Python ``repr``, URL-encoded,
escaped for HTML. A ``Secrets`` made from this process's environment also redacts the
secrets it gains later (``Secrets.now``).
A text cut through a secret (a line limit, a head-and-tail cut) keeps no piece
of it: a word starting with a secret's first 12 characters, or ending with its
last 12, is redacted whole. Structured data is redacted value by value, never
keys, so a redacted event still parses.

Secrets that live in no environment variable (an API key pasted into the notebook
panel, kept in the kernel's memory only: ``agent/models/keys.py``) are ``hold``-ed:
every ``Secrets.from_env`` made afterwards in this process redacts them too.
"""

from __future__ import annotations

import bisect
import html
import itertools
import json
import os
import re
import threading
import urllib.parse
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 8
SECRET_WORDS = frozenset(
    {
        "KEY",
        "KEYS",
        "TOKEN",
        "TOKENS",
        "PASS",
        "PWD",
        "PAT",
        "PASSPHRASE",
        "PASSPHRASES",
        "CREDS",
        "AUTH",
        "COOKIE",
        "COOKIES",
        "PRIVATE",
        "SIGNATURE",
        "SIGNATURES",
        "JWT",
        "JWTS",
        "DSN",  # SENTRY_DSN: a URL whose user part is the key
        "DSNS",
        "WEBHOOK",  # SLACK_WEBHOOK_URL: a URL whose path is the credential
        "WEBHOOKS",
    }
)
# Strong enough to count anywhere in a name, not only as a word.
SECRET_PARTS = (
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "APIKEY",
    "ACCESSKEY",
    "PRIVATEKEY",
    "CREDENTIAL",
)
# Secret-sounding names whose values are addresses of local helpers or folders, not secrets.
NOT_SECRET = frozenset({"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "PWD", "OLDPWD"})
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|[^A-Za-z]|$)|[A-Z]?[a-z]+|\d+")
_PLAIN_WORD = re.compile(r"[a-z]+")
_URL_PASSWORD = re.compile(
    r"^[A-Za-z][A-Za-z0-9+.-]*(?::[A-Za-z][A-Za-z0-9+.-]*)*://[^/:@\s]*:([^@\s]+)@"
)
# A setting inside a value: a URL's query (?token=...&...) or a connection string (a=b;c=d).
# The name runs greedily, its spaces included (the caller strips them): a lazy name and the
# spaces before "=" competing for a long run of spaces took the square of its length.
_SETTING = re.compile(r"(?:^|[?&;])\s*([A-Za-z][\w .-]*)[^\S ]*=\s*([^;&#\s]+)")
# Credentials whose format says what they are, whatever the variable holding them is called
# (a key copied to ``FOO``, a header in ``CURL_OPTS``): providers' documented prefixes with
# enough characters after them that ordinary text does not take that shape.
_TOKEN_CHAR = r"A-Za-z0-9_\-"
_CREDENTIAL = re.compile(
    rf"(?<![{_TOKEN_CHAR}])(?:"
    + "|".join(
        (
            rf"sk-[{_TOKEN_CHAR}]{{20,}}",  # OpenAI, Anthropic, OpenRouter, DeepSeek
            r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
            r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
            r"github_pat_[A-Za-z0-9_]{30,}",
            rf"glpat-[{_TOKEN_CHAR}]{{20,}}",  # GitLab
            r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key id
            rf"AIza[{_TOKEN_CHAR}]{{35}}",  # Google
            r"xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
            r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
            r"gsk_[A-Za-z0-9]{40,}",  # Groq
            r"r8_[A-Za-z0-9]{30,}",  # Replicate
            r"npm_[A-Za-z0-9]{36,}",
            rf"pypi-[{_TOKEN_CHAR}]{{50,}}",
            rf"eyJ[{_TOKEN_CHAR}]{{10,}}\.eyJ[{_TOKEN_CHAR}]{{10,}}\.[{_TOKEN_CHAR}]{{10,}}",  # JWT
        )
    )
    + rf")(?![{_TOKEN_CHAR}])"
)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
PARTIAL = 12  # a word holding this many leading or trailing characters of a secret is one
# A streamed word holding this many characters of such a secret waits to be given out whole,
# up to this long (``StreamRedactor``).
STRETCH = 4
HELD_WORD = 4096


def is_secret_name(name: str) -> bool:
    """True when the name says it holds a secret (``AUTH`` only as a whole word)."""
    upper = name.upper()
    if upper in NOT_SECRET:
        return False
    if any(part in upper.replace("_", "").replace("-", "") for part in SECRET_PARTS):
        return True
    return any(word.upper() in SECRET_WORDS for word in _WORDS.findall(name))


def is_secret_variable(name: str, value: str) -> bool:
    """A secret name, or a value that is a URL carrying a password, carries a secret-named
    setting, holds a credential in a provider's format or a private key."""
    return (
        is_secret_name(name)
        or _URL_PASSWORD.match(value.strip()) is not None
        or bool(_secret_settings(value))
        or bool(credentials(value))
        or _PRIVATE_KEY.search(value) is not None
    )


def credentials(text: str) -> list[str]:
    """The credentials in ``text`` whose format names their provider (``sk-...``,
    ``ghp_...``, ``AKIA...``, a JWT)."""
    return _CREDENTIAL.findall(text) if len(text) <= _CREDENTIAL_SCAN else []


_CREDENTIAL_SCAN = 1 << 20  # an environment value past a megabyte is not scanned


def _secret_settings(value: str) -> list[str]:
    """The values of secret-named settings in ``value`` (``?api_key=...``, ``Password=...;``)
    that look like secrets, also URL-decoded."""
    found = []
    for key, setting in _SETTING.findall(value.strip()):
        if is_secret_name(key.strip()) and looks_secret(setting):
            found += [setting, urllib.parse.unquote_plus(setting)]
    return found


def looks_secret(value: str) -> bool:
    """Long enough, and not a plain lowercase word (``observation``), to be worth hiding."""
    value = value.strip()
    return len(value) >= MIN_SECRET_LEN and not _PLAIN_WORD.fullmatch(value)


def _values_of(value: str) -> set[str]:
    """The strings to redact for one secret value: itself, its password, its long lines."""
    found = {value.strip()} if looks_secret(value) else set()
    url = _URL_PASSWORD.match(value.strip())
    if url and looks_secret(url.group(1)):
        found.add(url.group(1))
    found.update(setting for setting in _secret_settings(value) if looks_secret(setting))
    found.update(credentials(value))
    if "\n" in value.strip():
        found.update(line.strip() for line in value.splitlines() if looks_secret(line))
    return found


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret environment variables, longest first."""
    env = os.environ if environ is None else environ
    values: set[str] = set()
    for name, value in env.items():
        if is_secret_variable(name, value):
            values |= _values_of(value)
    return sorted(values, key=len, reverse=True)


# Values held in memory only (no environment variable names them), redacted everywhere.
_held: set[str] = set()
_held_lock = threading.Lock()


def hold(value: str) -> None:
    """Redact ``value`` in every ``Secrets.from_env`` this process makes from now on.

    For secrets that are in no environment variable (a key kept in the kernel's
    memory). Held for the life of the process: text shown while it was in use
    must stay redacted after it is replaced. Like any secret, a value too short
    to tell apart from ordinary text (``looks_secret``) is not redacted.
    """
    found = _values_of(value)
    with _held_lock:
        _held.update(found)


def held() -> tuple[str, ...]:
    """The values ``hold`` was given (normalised), for ``Secrets.from_env``."""
    with _held_lock:
        return tuple(_held)


def before_cut(text: str) -> str:
    """``text`` with this process's secrets redacted (the environment's and those ``hold``
    was given): for a text about to be cut to a limit. Redacted after the cut, a secret cut
    through would keep its first or last few characters (fewer than ``PARTIAL`` are not
    recognised); redacted before, the cut falls in ordinary text or a marker."""
    return _known().redact(text) if text else text


def cut_end(text: str) -> str:
    """``text`` whose end a cut made (the kept head of an output read in pieces): redacted,
    and its last characters, when at least ``STRETCH`` of them could begin a secret (they
    occur in one of its printed forms), replaced by ``REDACTED``."""
    secrets = _known()
    text = secrets.redact(text)
    if not secrets.values:
        return text
    forms = _forms(secrets.values)
    size = _secret_tail(text, forms, min(len(text), len(forms[0])))
    return text[: len(text) - size] + REDACTED if size >= STRETCH else text


def cut_start(text: str) -> str:
    """``text`` whose start a cut made (the kept tail of an output): redacted, and its first
    characters, when at least ``STRETCH`` of them could end a secret, replaced by ``REDACTED``."""
    secrets = _known()
    text = secrets.redact(text)
    if not secrets.values:
        return text
    forms = _forms(secrets.values)
    reversed_forms = tuple(form[::-1] for form in forms)
    size = _secret_tail(text[::-1], reversed_forms, min(len(text), len(forms[0])))
    return REDACTED + text[size:] if size >= STRETCH else text


_known_lock = threading.Lock()
_known_cache: tuple[tuple[Any, ...], Secrets] | None = None


def process_secrets() -> Secrets:
    """The secrets of this process now (the environment's and those ``hold`` was given), as
    ``before_cut`` uses them: for a caller that redacts many short texts at once (telling
    whether they changed reads the whole environment)."""
    return _known()


def _known() -> Secrets:
    """The secrets of this process now, computed again only when the environment or the
    values ``hold`` was given have changed."""
    global _known_cache
    # CPython keeps the environment as bytes in ``_data``: reading it whole costs about 1 us,
    # decoding every name and value through ``os.environ`` about 25 (per short text redacted).
    raw = getattr(os.environ, "_data", None)
    key = (tuple(raw.items() if isinstance(raw, dict) else os.environ.items()), held())
    with _known_lock:
        if _known_cache is None or _known_cache[0] != key:
            _known_cache = (key, Secrets.from_env())
        return _known_cache[1]


@dataclass(frozen=True)
class Secrets:
    """A fixed set of secret values, and the redaction of text and data that may hold them."""

    values: tuple[str, ...] = ()
    # Made from this process's environment: also redacts the secrets the environment (or
    # ``hold``) gains later (a key exported in the kernel while a session runs).
    follows_process: bool = field(default=False, compare=False)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, extra: Iterable[str | None] = ()
    ) -> Secrets:
        found = set(secret_values(environ)) | set(held())
        for value in extra:
            if value:
                found |= _values_of(value)
        return cls(tuple(sorted(found, key=len, reverse=True)), follows_process=environ is None)

    def now(self) -> Secrets:
        """These secrets, and, when made from this process's environment, those it holds now:
        the values a session knew when it started stay redacted after they are changed or
        removed, and those added since are redacted too."""
        if not self.follows_process:
            return self
        return _joined(self.values, _known().values)

    def redact(self, text: str) -> str:
        """``text`` with every secret, raw or JSON-escaped, replaced by ``[REDACTED]``."""
        if self.follows_process:
            return self.now()._redact(text)
        return self._redact(text)

    def _redact(self, text: str) -> str:
        if not self.values or not text:
            return text
        spans = _spans(text, self.values)
        if not spans:
            return text
        out, at = [], 0
        for start, end in spans:
            out += [text[at:start], REDACTED]
            at = end
        out.append(text[at:])
        return "".join(out)

    def redact_diff(self, diff: str) -> str:
        """A unified ``diff`` redacted row by row, each row keeping its first character: a
        secret that starts with a row's marker (``-``, ``+``, a space) and fills the row must
        not take the marker with it, or a reader would take that row, and the rest of its
        hunk, for notes."""
        secrets = self.now()
        if not secrets.values:
            return diff
        rows = []
        for row in diff.split("\n"):
            redacted = secrets._redact(row)
            rows.append(redacted if redacted[:1] == row[:1] else row[:1] + redacted)
        return "\n".join(rows)

    def redact_data(self, data: Any) -> Any:
        """A copy of JSON-like ``data`` with string values redacted (keys are kept)."""
        return self.now()._redact_data(data)

    def _redact_data(self, data: Any) -> Any:
        if not self.values:
            return data
        if isinstance(data, str):
            return self._redact(data)
        if isinstance(data, dict):
            return {key: self._redact_data(value) for key, value in data.items()}
        if isinstance(data, (list, tuple)):
            return [self._redact_data(value) for value in data]
        return data


@lru_cache(maxsize=32)
def _joined(values: tuple[str, ...], known: tuple[str, ...]) -> Secrets:
    """The secrets of both sets, longest first (the same object for the same sets, so what
    is compiled for them is reused)."""
    return Secrets(tuple(sorted(set(values) | set(known), key=len, reverse=True)))


class StreamRedactor:
    """Text that arrives in pieces (a model's streamed reply), given out redacted as it comes,
    and never a piece of a secret that redacting the whole text would hide.

    Each piece redacted alone would let a secret cut across two pieces through, one harmless
    half at a time. So the end of the text that could be the beginning, or any other part,
    of a secret still being written (the longest end of it found inside a secret, in any of
    its printed forms) is kept back until the text goes on past it, or ends (``end``); and
    a cut never falls inside a secret written whole. A secret is thus given out only whole,
    where ``redact`` finds it, however long the stream pauses inside it. What is kept back
    is short: as much of a secret as the text ends with (often a character or two of
    ordinary text that happens to occur in one).

    With a secret long enough for the partial rules (a word that ends with its last
    characters is redacted whole), a word that holds ``STRETCH`` characters running in any
    secret is kept back whole until it ends: a piece of a secret in it must not go out
    before the end that hides it. Past ``HELD_WORD`` characters such a word is hidden
    whole, up to its end, rather than held on.

    Each piece costs time in proportion to its length and to the longest secret, not to the
    text before it.
    """

    def __init__(self, secrets: Secrets) -> None:
        self.secrets = secrets.now()  # one set for the whole stream: what is held follows it
        self._held = ""
        self._tail = 0  # how many of the text's last characters are found inside a secret
        self._word = 0  # where in ``_held`` the word the text ends with starts (0: before it)
        self._hot = False  # that word holds STRETCH characters running in a secret
        self._hiding = False  # that word outgrew HELD_WORD: hidden up to its end

    def feed(self, piece: str) -> str:
        """The text that can be given out now that ``piece`` came, redacted ("" if none)."""
        values = self.secrets.values
        if not values:
            return piece
        if self._hiding:
            after = _SEPARATOR.search(piece)
            if after is None:
                return ""
            piece, self._hiding = piece[after.start() :], False
        text = self._held + piece
        forms = _forms(values)
        tail = _secret_tail(text, forms, self._tail + len(piece))
        cut = len(text) - tail
        word, hot = self._word, self._hot
        last = deque(_SEPARATOR.finditer(piece), maxlen=1)  # the piece's last separator
        if last:
            word, hot = len(self._held) + last[0].end(), False
        stretches = _stretches(values)
        if stretches and cut < word:  # the cut falls in a word that ended in this text
            cut = _before_hot_word(text, cut, stretches)
        if stretches and not hot:
            start = max(word, len(self._held) - STRETCH + 1)
            stop = len(text) - STRETCH + 1
            hot = any(text[i : i + STRETCH] in stretches for i in range(start, stop))
        whole_word = hot and word < cut
        cut = _not_through(text, word if whole_word else cut, values)
        if whole_word and len(text) - cut > HELD_WORD:  # hidden whole rather than held on
            self._held, self._tail, self._word, self._hot = "", 0, 0, False
            self._hiding = True
            return self.secrets.redact(text[:cut]) + REDACTED
        self._held, self._tail = text[cut:], tail
        self._word, self._hot = max(0, word - cut), hot
        return self.secrets.redact(text[:cut])

    def end(self) -> str:
        """The text kept back, redacted: the stream ended, nothing can complete it now."""
        text = self._held
        self._held, self._tail, self._word, self._hot, self._hiding = "", 0, 0, False, False
        return self.secrets.redact(text)

    @property
    def held(self) -> str:
        """The text kept back (not redacted: never show it)."""
        return self._held


def _before_hot_word(text: str, cut: int, stretches: frozenset[str]) -> int:
    """``cut``, or the start of the word it falls inside when that word holds ``STRETCH``
    characters running in a secret. Redacted whole, such a word is hidden from a long
    secret's first characters to its end: cut through, its two halves are redacted apart,
    and the half after the cut (a password that followed a key, ``sk-...Tr0ub&dor``) went
    out as it was. Costs the word's length, at most the text kept back and the piece."""
    if not 0 < cut < len(text) or _SEPARATOR.match(text, cut - 1) or _SEPARATOR.match(text, cut):
        return cut
    start = cut
    while start > 0 and not _SEPARATOR.match(text, start - 1):
        start -= 1
    after = _SEPARATOR.search(text, cut)
    end = after.start() if after else len(text)
    if any(text[i : i + STRETCH] in stretches for i in range(start, end - STRETCH + 1)):
        return start
    return cut


def _secret_tail(text: str, forms: tuple[str, ...], most: int) -> int:
    """How many of ``text``'s last characters are found together inside one of ``forms``
    (longest first); at most ``most``: the end found before the last piece came, and that
    piece (a longer end would have been found then)."""

    def inside(size: int) -> bool:
        end = text[len(text) - size :]
        for form in forms:
            if len(form) < size:
                return False
            if end in form:
                return True
        return False

    low, high = 0, min(len(text), most, len(forms[0]))
    if high == 0 or inside(high):  # a secret being written goes on: found at once
        return high
    while high - low > 1:  # inside(low) and not inside(high): a longer end is never inside
        middle = (low + high) // 2
        if inside(middle):
            low = middle
        else:
            high = middle
    return low


def _not_through(text: str, cut: int, values: tuple[str, ...]) -> int:
    """``cut``, or where a printed form of a secret that it falls inside starts (a form
    through the cut holds the two characters around it, ``_pairs``)."""
    pairs = _pairs(values)
    while 0 < cut < len(text):
        moved = cut
        for form, at in pairs.get(text[cut - 1 : cut + 1], ()):
            start = cut - 1 - at
            if start < moved and text.startswith(form, start) and start + len(form) > cut:
                moved = start
        if moved == cut:
            break
        cut = moved
    return cut


@lru_cache(maxsize=32)
def _pairs(values: tuple[str, ...]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each two characters running in a printed form of ``values``: the forms, and where."""
    found: dict[str, list[tuple[str, int]]] = {}
    for form in _forms(values):
        for at in range(len(form) - 1):
            found.setdefault(form[at : at + 2], []).append((form, at))
    return {pair: tuple(places) for pair, places in found.items()}


@lru_cache(maxsize=32)
def _stretches(values: tuple[str, ...]) -> frozenset[str]:
    """Every ``STRETCH`` characters running in a printed form of ``values``, when one of them
    is long enough for the partial rules (none otherwise: no word is redacted whole)."""
    if not _long(values):
        return frozenset()
    return frozenset(
        form[i : i + STRETCH] for form in _forms(values) for i in range(len(form) - STRETCH + 1)
    )


@lru_cache(maxsize=32)
def _forms(values: tuple[str, ...]) -> tuple[str, ...]:
    """Every printed form of ``values``, longest first."""
    forms: set[str] = set()
    for value in values:
        forms.update(_printed_forms(value))
    return tuple(sorted((form for form in forms if form), key=len, reverse=True))


@dataclass(frozen=True)
class _Finders:
    """Where secrets start in a text: each is a zero-width search, so that occurrences that
    overlap are all found, and each position is tried once: a text is searched in linear
    time. (One pattern "any word characters, then a secret's end", tried at each position of
    a long word, took the square of its length: 7 s for a line of 40,000 characters.)"""

    whole: re.Pattern[str]  # group 1: the longest printed form starting here
    heads: re.Pattern[str] | None  # a long secret's first PARTIAL characters start here
    tails: re.Pattern[str] | None  # ... its last PARTIAL characters


def _long(values: tuple[str, ...]) -> list[str]:
    """The secrets long enough for the partial rules (twice ``PARTIAL``)."""
    return [value for value in values if len(value) >= 2 * PARTIAL]


@lru_cache(maxsize=32)
def _finders(values: tuple[str, ...]) -> _Finders:
    long = _long(values)

    def starts(literals: Iterable[str]) -> re.Pattern[str] | None:
        found = sorted(set(literals), key=len, reverse=True)
        return re.compile("(?=(?:" + "|".join(map(re.escape, found)) + "))") if found else None

    whole = "(?=(" + "|".join(re.escape(form) for form in _forms(values)) + "))"
    return _Finders(
        re.compile(whole),
        starts(value[:PARTIAL] for value in long),
        starts(value[-PARTIAL:] for value in long),
    )


_SEPARATOR = re.compile(r"[\s\"'\\]")  # what ends a word, for the partial rules


def _spans(text: str, values: tuple[str, ...]) -> list[tuple[int, int]]:
    """The stretches of ``text`` to redact, in order, those that overlap joined: every
    printed form of a secret; from a long secret's first ``PARTIAL`` characters to the end
    of their word; from the start of a word to the end of a long secret's last ``PARTIAL``
    characters in it (words end at white space, quotes and backslashes)."""
    finders = _finders(values)
    spans = [(m.start(), m.start() + len(m.group(1))) for m in finders.whole.finditer(text)]
    heads = [] if finders.heads is None else [m.start() for m in finders.heads.finditer(text)]
    tails = [] if finders.tails is None else [m.start() for m in finders.tails.finditer(text)]
    if heads and spans:  # a start inside a secret written whole is part of it, not a word's
        starts = [start for start, _ in spans]
        reach = list(itertools.accumulate((end for _, end in spans), max))

        def inside(at: int) -> bool:
            last = bisect.bisect_right(starts, at) - 1
            return last >= 0 and reach[last] > at

        heads = [at for at in heads if not inside(at)]
    if heads or tails:
        ends = [m.start() for m in _SEPARATOR.finditer(text)]  # each word ends at one of these
        for at in heads:
            after = bisect.bisect_left(ends, at + PARTIAL)
            spans.append((at, ends[after] if after < len(ends) else len(text)))
        for at in tails:
            before = bisect.bisect_left(ends, at)
            spans.append((ends[before - 1] + 1 if before else 0, at + PARTIAL))
    if not spans:
        return []
    spans.sort()
    joined = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = joined[-1]
        if start < last_end:
            joined[-1] = (last_start, max(last_end, end))
        else:
            joined.append((start, end))
    return joined


def _printed_forms(value: str) -> set[str]:
    """How ``value`` looks when a program prints it: JSON (also HTML-safe, as Go writes it:
    ``docker inspect``), Python repr (also inside JSON: a notebook's saved ``text/plain``
    output), URL-encoded (also in lowercase), escaped for HTML (a table's ``text/html``)."""
    as_json = json.dumps(value)[1:-1]
    as_repr = repr(value)[1:-1]
    return {
        value,
        as_json,
        _html_safe_json(as_json),
        html.escape(value),
        html.escape(value, quote=False),
        _html_escaped_numerically(value),
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(as_json)[1:-1],  # JSON inside JSON
        as_json.replace("/", "\\/"),
        as_repr,
        json.dumps(as_repr)[1:-1],
        json.dumps(as_repr, ensure_ascii=False)[1:-1],
        value.replace("\\", "\\\\").replace("'", "\\'"),
        value.replace("\\", "\\\\").replace('"', '\\"'),
        *_url_encoded(value),
    }


def _html_safe_json(as_json: str) -> str:
    """JSON as Go's ``encoding/json`` (and Rails) write it: ``&``, ``<``, ``>`` escaped."""
    return as_json.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _html_escaped_numerically(value: str) -> str:
    """``value`` escaped for HTML as Jinja (markupsafe) does it: quotes as ``&#39;``,
    ``&#34;``."""
    escaped = html.escape(value, quote=False)
    return escaped.replace("'", "&#39;").replace('"', "&#34;")


_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _url_encoded(value: str) -> tuple[str, ...]:
    """``value`` URL-encoded (``%20`` and ``+`` for spaces). A byte of the environment that is
    not UTF-8 comes as a lone surrogate (``os.environ``): encoded as that byte, as a program
    given it prints it (any other lone surrogate as UTF-8 would write it)."""
    for errors in ("strict", "surrogateescape", "surrogatepass"):
        try:
            value.encode("utf-8", errors)
            break
        except UnicodeEncodeError:
            continue
    encoded = (
        urllib.parse.quote(value, safe="", errors=errors),
        urllib.parse.quote_plus(value, safe="", errors=errors),
    )
    # Hex digits in either case mean the same byte (RFC 3986); some encoders write ``%3a``.
    return *encoded, *(_PERCENT.sub(lambda m: m.group().lower(), form) for form in encoded)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with the environment's secrets (or the given ones) redacted."""
    if secrets is None:
        return Secrets.from_env().redact(text)
    return Secrets(tuple(sorted(set(secrets), key=len, reverse=True))).redact(text)


def command_environment(
    environ: Mapping[str, str] | None = None, passthrough: Iterable[str] = ()
) -> dict[str, str]:
    """The environment for commands: every secret variable removed, except those named, and
    every variable holding a secret's value under another name (``FOO=$OPENAI_API_KEY``,
    a header with a token in it), whichever secret it copies: a named one or a key kept in
    memory (``hold``)."""
    env = os.environ if environ is None else environ
    keep = set(passthrough)
    out = {k: v for k, v in env.items() if k in keep or not is_secret_variable(k, v)}
    # A path under a secret name (``SSL_KEY_DIR=/etc/ssl``) is not a credential: withholding
    # every variable naming a path under it would take ``SSL_CERT_FILE`` from commands.
    withheld = {
        found
        for k, v in env.items()
        if k not in out
        for found in _values_of(v)
        if not found.startswith(("/", "~", "."))
    }
    withheld |= set(held())
    return {
        k: v for k, v in out.items() if k in keep or not any(secret in v for secret in withheld)
    }
