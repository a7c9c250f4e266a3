"""A message's tokens counted once for both places it takes in a request.

``context._piece_tokens`` counts a message's text up to the ASCII punctuation it ends
with once, and only that punctuation again with each tail (``]`` as the request's last
message, ``,{"`` once another follows). That is exact only where o200k cuts its pieces
there whatever follows; these tests hold it to a whole count of the same text, on
messages a session makes and on awkward ones built to move that cut.
"""

from __future__ import annotations

import json
import random

import pytest

from grinta_jupyter.agent import context
from grinta_jupyter.tools.tokens import count_tokens

TAILS = (context._BETWEEN, context._END)


def whole(message: dict, tail: str) -> int:
    return count_tokens(json.dumps(message, separators=(",", ":"), ensure_ascii=False)[2:] + tail)


ENDINGS = [
    "plain words",
    "it'",  # a contraction's quote, then the JSON's quote
    "we'd",
    "I'LL",
    "ends with a space ",
    "ends with a tab\t",
    "new line\n",
    "digits 1234567",
    "3.14",
    "a path/to/",
    "punctuation only ...!?",
    "----------",
    "日本語の文。",  # Unicode punctuation before the JSON's: counted whole
    "漢字",
    "emoji 😀",
    "accent é",
    "combining e\u0301",
    "zero width\u200b",
    "non-breaking\u00a0",
    "line separator\u2028",
    "full-width ｙ",
    "arabic digit ٣",
    "roman ⅷ",
    "under_score_",
    "back\\slash\\",
    'quote "inside"',
    "",
]


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("role", ["user", "assistant", "tool"])
def test_each_tail_counts_as_the_whole_text(ending: str, role: str) -> None:
    message: dict = {"role": role, "content": "Some text, then " + ending}
    if role == "tool":
        message["tool_call_id"] = "call_7"
    for tail in TAILS:
        assert context._piece_tokens(message, tail) == whole(message, tail), (ending, tail)


def test_an_assistant_turn_with_tool_calls_and_no_text() -> None:
    call = {"path": "pkg/core.py", "old_string": "a - b", "new_string": "a + b"}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "replace_string", "arguments": json.dumps(call)},
            }
        ],
    }
    for tail in TAILS:
        assert context._piece_tokens(message, tail) == whole(message, tail)


def test_random_texts_count_as_a_whole_count() -> None:
    rng = random.Random(20261206)
    alphabet = list("aZ09 _-'\"\\/.,;:!?{}[]()<>\n\t`~@#$%^&*+=|") + [
        "é", "漢", "ß", "😀", "\u0301", "\u200b", "ｙ", "٣", "ⅷ", "\u00a0", "\u2028", "。",
    ]  # fmt: skip
    words = ["it's", "don't", "we'd", "'s", "'T", "  ", "\n\n", "123456", "https://x.y/z", "..."]
    for _ in range(3000):
        parts = [
            rng.choice(words) if rng.random() < 0.3 else rng.choice(alphabet)
            for _ in range(rng.randint(0, 25))
        ]
        message = {"role": rng.choice(["user", "assistant"]), "content": "".join(parts)}
        for tail in TAILS:
            assert context._piece_tokens(message, tail) == whole(message, tail), message


def test_the_second_tail_reuses_the_first_count() -> None:
    """The saving is real: a read's result, counted as the last message and then with a
    message after it, is encoded in full once (the cache of heads answers the second)."""
    text = "".join(f"{i:6}\tline {i} of a file the model read\n" for i in range(400))
    message = {"role": "tool", "tool_call_id": "call_1", "content": text}
    context._head_tokens.cache_clear()
    context._piece_tokens(message, context._END)
    context._piece_tokens(message, context._BETWEEN)
    info = context._head_tokens.cache_info()
    assert (info.misses, info.hits) == (1, 1)


def test_a_result_that_is_one_long_run_of_punctuation_counts_right() -> None:
    """200,000 dashes after one letter: the run and the tail are one piece of the count."""
    message = {"role": "tool", "tool_call_id": "c", "content": "x" + "-" * 200_000}
    for tail in TAILS:
        assert context._piece_tokens(message, tail) == whole(message, tail)
