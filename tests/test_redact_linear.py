"""Redaction takes time linear in the text, and hides at least what its rules always hid.

The partial rules ("a word that ends with a long secret's last 12 characters is redacted
whole") were one regular expression alternative, any word characters then the secret's
end, tried at each position: on a long word (a minified line, a data blob a model writes)
that is the square of its length. With any long secret in the environment (an API key),
a 40,000-character line took 7 s to redact, on the thread that shows the card, holding the
interpreter's lock; 400,000, minutes. Here: the old expression is the oracle of what must
be hidden, on texts small enough for it; big texts must redact at once.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from grinta_jupyter.runtime.secrets import PARTIAL, Secrets, _forms, _spans
from tests.test_regex_linear import finishes

LONG = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
OTHER = "AKIA" + "Q7R8S9T0U1V2W3X4Y5Z6"  # sorts before the partials of LONG
SHORT = "Zq8vP2xW9kL4mN7r"
SPACED = "pass 'phrase' with\\ 1 space ok"


def old_pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    """The expression redaction used before: whole printed forms, then the partial rules."""
    partial: set[str] = set()
    for value in values:
        if len(value) >= 2 * PARTIAL:
            partial.add(re.escape(value[:PARTIAL]) + r"[^\s\"'\\]*")
            partial.add(r"[^\s\"'\\]*" + re.escape(value[-PARTIAL:]))
    whole = [re.escape(form) for form in _forms(values)]
    return re.compile("|".join(whole + sorted(partial)))


def hidden(spans: list[tuple[int, int]]) -> set[int]:
    return {i for start, end in spans for i in range(start, end)}


def test_random_texts_hide_all_the_old_expression_hid() -> None:
    rng = random.Random(4242)
    values = tuple(sorted((LONG, OTHER, SHORT, SPACED), key=len, reverse=True))
    secrets = Secrets(values)
    old = old_pattern(values)
    pieces = [" ", "\n", '"', "'", "\\", "=", "x", "yy", "/", "sk-", "A1b2", "%20"]
    same = 0
    for _ in range(4_000):
        parts = []
        for _ in range(rng.randint(1, 7)):
            secret = rng.choice(values)
            kind = rng.random()
            if kind < 0.3:
                parts.append(rng.choice(_forms((secret,))))
            elif kind < 0.45:
                parts.append(secret[: rng.randint(1, len(secret))])
            elif kind < 0.6:
                parts.append(secret[rng.randint(0, len(secret) - 1) :])
            else:
                parts.append(rng.choice(pieces))
        text = "".join(parts)
        before = [m.span() for m in old.finditer(text)]
        now = _spans(text, values)
        assert hidden(before) <= hidden(now), (text, before, now)
        if " ".join(parts) != text:  # words apart: the same text, secret for secret
            spaced = " ".join(parts)
            same += 1
            assert old.sub("[REDACTED]", spaced) == secrets.redact(spaced), spaced
    assert same > 1_000


@pytest.mark.parametrize("after", ["!", ".", ",", ")", ";", "...", "!?"])
def test_what_follows_a_long_secret_in_its_word_stays(after: str) -> None:
    """A secret written whole, then punctuation in the same word: the punctuation is no
    part of it (its first characters start a redacted run to the word's end only where
    the secret is not written whole)."""
    secrets = Secrets((LONG,))
    assert secrets.redact(f"it was {LONG}{after} ok") == f"it was [REDACTED]{after} ok"
    assert secrets.redact(f"cut {LONG[:20]}{after} ok") == "cut [REDACTED] ok"


@pytest.mark.parametrize(
    "text",
    [
        '"x" * 1_000_000',  # one long word
        '("y" + LONG[-PARTIAL:]) * 60_000',  # a word with 60,000 ends of the secret in it
        '(LONG[:PARTIAL] + "z") * 60_000',  # ... and of its starts
        '"a" * 300_000 + " " + "b" * 300_000',
    ],
    ids=["word", "ends", "starts", "two-words"],
)
def test_a_text_of_long_words_is_redacted_at_once(text: str) -> None:
    """A bound, not a speed goal: the old expression took about half an hour on the first
    (one search holding the interpreter's lock: timed in a child process)."""
    finishes(
        f"""
        from grinta_jupyter.runtime.secrets import PARTIAL, Secrets
        LONG, OTHER, SHORT = {LONG!r}, {OTHER!r}, {SHORT!r}
        secrets = Secrets((LONG, OTHER, SHORT))
        text = {text}
        """,
        """
        out = secrets.redact(text)
        assert LONG[-PARTIAL:] not in out and LONG[:PARTIAL] not in out
        """,
    )


def test_a_long_line_in_a_proposal_shows_its_card_at_once(tmp_path: Path) -> None:
    """The model writes a 300,000-character line (a data blob) with an API key in the
    environment: the card is redacted and shown, not held for minutes (7 s for 40,000
    characters before)."""
    finishes(
        f"""
        import asyncio, os
        from pathlib import Path
        os.environ["MY_SERVICE_API_KEY"] = {LONG!r}
        from grinta_jupyter.agent import NeedsDecision, Session
        from grinta_jupyter.agent.models import ScriptedModel, call, reply
        blob = "x" * 300_000 + {LONG!r} + "\\n"
        model = ScriptedModel([reply("", call("create", path="blob.txt", content=blob))])
        session = Session("write the blob", model=model, root=Path({str(tmp_path)!r}))

        async def card():
            async for update in session.updates():
                if isinstance(update, NeedsDecision):
                    session.stop("seen")
                    return
            raise AssertionError("no card")
        """,
        "asyncio.run(card())",
    )
    logged = "".join(path.read_text() for path in (tmp_path / ".grinta").rglob("*.jsonl"))
    assert "[REDACTED]" in logged, "the proposal was logged, redacted"
    assert LONG not in logged and LONG[-PARTIAL:] not in logged
