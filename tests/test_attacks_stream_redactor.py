"""Attacks on ``StreamRedactor``: inputs where streaming gives out a piece of a secret that
redacting the whole text at once (``Secrets.redact``) hides, or where what it does per piece
grows faster than the text.

The measure of a leak: the joined stream holds no whole secret, and no 6 characters running
in a printed form of a secret (raw, JSON, repr, URL-encoded) that the whole text redacted
does not hold too. Growth is checked with texts big enough that work growing faster than
the text would take minutes: each must finish within a bound far above what it takes.
"""

from __future__ import annotations

import base64
import json
import random
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from grinta_jupyter.runtime.secrets import (
    HELD_WORD,
    PARTIAL,
    REDACTED,
    Secrets,
    StreamRedactor,
    _printed_forms,
)
from tests.test_stream_redactor import LONG, SHORT, _streamed, thinking_line

# A secret whose last 12 characters begin with its last character ("7"): written whole and
# then its last 11 characters again, the text ends with its last 12 once more, overlapping it.
OVERLAP = "sk-live-x7Qm2Lp9Vr4T7Kd3Wn8Bz5H7"
# Every 3 characters a "+": its URL-encoded form ("ab%2Bcd%2B...") holds no 4 characters
# running in the raw value.
PLUSSED = "ab+cd+ef+gh+ij+kl+mn+op+qr"


def _leaks(secrets: Secrets, given: str, whole: str) -> list[str]:
    """Whole secrets, and 6-character stretches of their printed forms, in ``given`` and
    not in ``whole``."""
    found = [value for value in secrets.values if value in given]
    for value in secrets.values:
        for form in sorted(_printed_forms(value)):
            found += [
                form[i : i + 6]
                for i in range(len(form) - 5)
                if form[i : i + 6] in given and form[i : i + 6] not in whole
            ]
    return found


def _check(secrets: Secrets, pieces: list[str]) -> tuple[str, str]:
    text = "".join(pieces)
    given = "".join(_streamed(secrets, pieces))
    whole = secrets.redact(text)
    assert not _leaks(secrets, given, whole), (pieces, given, whole)
    return given, whole


def _within(run: Callable[[], None], seconds: float = 30.0) -> None:
    """``run`` finishes within ``seconds`` (in a thread, so a runaway one is not waited for)."""
    done: list[bool] = []
    worker = threading.Thread(target=lambda: done.append(run() is None), daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, f"still running after {seconds} s"


def _feed_all(secrets: Secrets, pieces: list[str]) -> None:
    stream = StreamRedactor(secrets)
    for piece in pieces:
        stream.feed(piece)
    stream.end()


# -- leaks: FAIL now -----------------------------------------------------------------------


def test_a_piece_of_a_short_secret_in_a_word_ending_with_a_long_ones_end() -> None:
    """Attack: 10 characters of a short secret, then the last 12 of a long one, in one word,
    one character at a time. Whole, the word is redacted (it ends with the long secret's
    last 12); streamed, the short secret's piece goes out as soon as the long one's first
    character comes (the word is held only for 4 characters of a long secret)."""
    secrets = Secrets((LONG, SHORT))
    text = " " + SHORT[:10] + LONG[-PARTIAL:] + " end"
    assert secrets.redact(text) == f" {REDACTED} end"
    _check(secrets, list(text))


def test_the_url_encoded_start_of_a_secret_in_a_word_ending_with_its_raw_end() -> None:
    """Attack: the URL-encoded first 20 characters of a secret, then its raw last 12, in one
    word. Whole, the word is redacted; streamed, the encoded piece goes out, since the word is
    held only for 4 characters running in the raw value, which the encoded form never has."""
    secrets = Secrets((PLUSSED,))
    encoded = urllib.parse.quote(PLUSSED, safe="")
    text = " " + encoded[:20] + PLUSSED[-PARTIAL:] + " end"
    assert secrets.redact(text) == f" {REDACTED} end"
    _check(secrets, list(text))


def test_a_piece_of_a_secret_in_a_word_longer_than_held_word() -> None:
    """Attack: 17 characters from the middle of a long secret, 5,000 ordinary characters,
    then its last 12, all one word. Whole, the word is redacted; streamed, the word is past
    ``HELD_WORD`` when the filler comes, so the piece goes out with it."""
    secrets = Secrets((LONG,))
    pieces = [" ", LONG[3:20], "#" * (HELD_WORD + 904), LONG[-PARTIAL:], " end"]
    assert secrets.redact("".join(pieces)) == f" {REDACTED} end"
    _check(secrets, pieces)


# -- growth: FAIL now ----------------------------------------------------------------------


def test_a_private_key_streamed_a_character_at_a_time_does_not_hang() -> None:
    """Attack: the model writes back a PEM private key that is in the environment, one
    character at a time. The held end grows to the whole key, and each piece finds it again
    in the forms from one character up: cubic in the key."""
    rng = random.Random(7)

    def pem(size: int) -> str:
        body = base64.b64encode(rng.randbytes(size)).decode()
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----"

    key = pem(9_600)  # 13,000 characters: the per-piece search from one character up took
    # the cube of that (11 s for 3,300; some 10 minutes for this one)
    _within(lambda: _feed_all(Secrets.from_env({"SSH_PRIVATE_KEY": key}), list(f"H:\n{key}\n.")))


def test_a_secret_variable_that_is_not_utf8_does_not_break_the_stream() -> None:
    """Attack: a secret variable with a byte that is not UTF-8 (``os.environ`` gives it as a
    lone surrogate). Its URL-encoded form cannot be made, so every piece raises
    ``UnicodeEncodeError`` (``_printed_forms``; ``Secrets.redact`` raises too)."""
    secrets = Secrets.from_env({"MY_SERVICE_TOKEN": "abc\udcffdefghijk"})
    stream = StreamRedactor(secrets)
    assert stream.feed("hello ") + stream.end() == "hello "


# -- attacks that hold: pass ---------------------------------------------------------------


def test_a_word_start_given_out_before_the_secret_changes_where_its_redaction_ends() -> None:
    """Attack: ``token=`` goes out before the secret comes, then the secret and its last 11
    characters again. Whole, the word ends with the secret's last 12 and is redacted from
    ``token=`` on; the held text, starting at the secret, must hide its last 11 too (redaction by
    one expression matched the secret whole first and gave them out)."""
    secrets = Secrets((OVERLAP,))
    assert OVERLAP[-PARTIAL] == OVERLAP[-1]
    pieces = ["token=", OVERLAP + OVERLAP[-11:], " ok"]
    assert secrets.redact("".join(pieces)) == f"{REDACTED} ok"
    _check(secrets, pieces)


def test_the_panel_hides_the_end_of_a_secret_after_token_equals(tmp_path: Path) -> None:
    """The ``token=`` attack through the notebook panel: the thinking line never shows the
    secret's last 11 characters, which redacting the model's whole text hides."""
    secrets = Secrets((OVERLAP,))
    pieces = ["The token=", OVERLAP + OVERLAP[-11:], " is set."]
    shown = thinking_line(tmp_path, secrets, pieces)
    assert OVERLAP[-11:] not in secrets.redact("".join(pieces))
    assert not any(OVERLAP[-11:] in value for value in shown), shown[-1]


ODD = [
    "x.y*z+(q)?[1]{2}^$|token9",  # every regex metacharacter
    "pa/ss\\wo'rd\"XY12345678901",  # JSON and repr escapes, and a "/" for "\\/"
    "héllo-wörld-ünïcode-секрет-1234",  # non-ASCII: \\u escapes, %C3%A9
    "ab\x00cd\x1bef\u202eghij\u0301kl",  # NUL, an escape, right-to-left override, combining
    "correct horse battery staple 42",  # spaces inside, long enough for the partial rules
    "tab\tand\nnewline\r0123456789",  # whitespace escapes
    "\U0001f511-emoji-key-\U0001f512-987654",  # characters outside the BMP
]


@pytest.mark.parametrize("secret", ODD)
def test_every_printed_form_cut_anywhere_is_redacted_as_the_whole(secret: str) -> None:
    """Each printed form of a secret with special characters (regex, escapes, unicode,
    whitespace), cut in two at every point, including inside escape sequences, and one
    character at a time: no more of it goes out than the whole redaction shows."""
    secrets = Secrets((secret,))
    forms = sorted(_printed_forms(secret))
    text = "Said: " + " and ".join(forms) + f" in {json.dumps({'k': secret})}."
    for cut in range(len(text) + 1):
        given, whole = _check(secrets, [text[:cut], text[cut:]])
        assert given == whole, cut
    _check(secrets, list(text))


def test_secrets_that_are_prefixes_suffixes_and_overlaps_of_each_other() -> None:
    """Secrets nested in one another (a prefix, a suffix, a middle), written overlapping and
    repeated, cut at random: no secret and no stretch the whole hides goes out."""
    base = "Qw7Er9Ty1Ui3Op5As7Df9Gh2Jk4Lz"
    secrets = Secrets(tuple(sorted({base, base[:10], base[-10:], base[8:20]}, key=len)[::-1]))
    rng = random.Random(41)
    parts = [base, base[:10], base[-10:], base[8:20], base[:17], base[13:], " ", "=", "x"]
    for _ in range(1_500):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))
        if len(text) < 2:
            continue
        points = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 6))))
        _check(
            secrets, [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        )


def test_multi_line_secret_lines_streamed_across_pieces() -> None:
    """A PEM-like multi-line value: the whole value and each of its lines are secrets. Its
    lines written apart, in JSON (``\\n`` split between pieces), one character at a time."""
    pem = (
        "-----BEGIN KEY-----\nMIIBVgIBADANBgkqhkiG9w0B\nq7BFUpkGp3XQmvbHRE9XZbDG\n-----END KEY-----"
    )
    secrets = Secrets.from_env({"SSH_KEY": pem})
    lines = pem.splitlines()
    text = f"line {lines[1]} and {lines[2]!r}; json {json.dumps(pem)}; raw\n{pem}\n"
    given, whole = _check(secrets, list(text))
    assert given == whole
    assert lines[1][:6] not in given and lines[2][-6:] not in given


def test_empty_pieces_a_second_end_and_feeding_after_end() -> None:
    """Empty pieces between the characters of a secret give nothing out; ``end`` twice gives
    the held text once; feeding after ``end`` starts afresh."""
    stream = StreamRedactor(Secrets((SHORT,)))
    out = [stream.feed(piece) for piece in ["key ", "", SHORT[:5], "", "", SHORT[5:], ""]]
    assert "".join(out) == "key " and stream.held == SHORT
    assert stream.end() == REDACTED and stream.end() == "" and stream.held == ""
    assert stream.feed(SHORT[:4]) == "" and stream.feed(SHORT[4:] + " ") == f"{REDACTED} "


def test_one_huge_piece_that_is_one_word_does_not_hang() -> None:
    """Attack: one 1 MB piece that is a single word (a base64 blob), where the suffix rule
    ``[^\\s"'\\\\]*`` + a secret's last 12 could scan to the word's end from every position:
    it goes out at once, and as the whole redaction gives."""
    secrets = Secrets((LONG, SHORT))
    rng = random.Random(3)
    blob = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(1_000_000))

    _within(lambda: _feed_all(secrets, [blob + " done"]))
    assert "".join(_streamed(secrets, [blob])) == secrets.redact(blob) == blob


def test_many_words_held_whole_do_not_hang() -> None:
    """Attack: words each holding 4 characters of a long secret (so held whole) followed by
    600 ordinary characters, 400 of them one character at a time: each piece costs what it
    adds, not the held word again."""
    secrets = Secrets((LONG,))
    word = [" ", *LONG[4:10], *("x" * 600)]

    _within(lambda: _feed_all(secrets, word * 400))


def test_a_hundred_thousand_one_character_pieces_do_not_hang() -> None:
    """100,000 one-character pieces of text full of pieces of secrets (each short, none long
    enough to be held whole) go out at once."""
    secrets = Secrets((LONG, SHORT))
    text = ("Use sk- and A1b2 or Zq8v then 9kL4 ok. " * 3_000)[:100_000]

    _within(lambda: _feed_all(secrets, list(text)))


def test_what_is_held_stays_bounded_over_a_long_word_of_secret_prefixes() -> None:
    """A 40,000-character word made of a long secret's first 12 characters over and over,
    in 7-character pieces: what is held never passes ``HELD_WORD`` and twice the secret,
    and no 6 characters of the secret go out."""
    secrets = Secrets((LONG,))
    word = (LONG[:PARTIAL] * 4_000)[:40_000]
    stream = StreamRedactor(secrets)
    given, most = [], 0
    for i in range(0, len(word), 7):
        given.append(stream.feed(word[i : i + 7]))
        most = max(most, len(stream.held))
    given.append(stream.end())
    out = "".join(given)
    assert most <= HELD_WORD + 2 * len(LONG) + 1, most
    assert not any(LONG[i : i + 6] in out for i in range(len(LONG) - 5))
