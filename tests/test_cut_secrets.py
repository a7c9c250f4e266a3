"""A cut through a secret keeps no piece of it: the read tool's long-line cut, the head and
tail a command's output keeps, a snippet's line cut, an error message's cut. Redacting only
what a cut kept would leave the secret's first or last few characters (up to 11 of a long
key; most of a short password), since a word is hidden only with 12 of them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.errors import MAX_MESSAGE_CHARS, ToolError
from grinta_jupyter.runtime.secrets import REDACTED, cut_end, cut_start
from grinta_jupyter.tools.base import Settings

KEY = "sk-proj-Abc123XyZ987LongSecretValue0000"
PASSWORD = "Hunter2-Xq9!zz"  # under 24 characters: no partial rule at all


def pieces(text: str, secret: str, size: int = 4) -> list[str]:
    return sorted(
        {
            secret[i : i + size]
            for i in range(len(secret) - size + 1)
            if secret[i : i + size] in text
        }
    )


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)
    # Output kept as a head and a tail past 30,000 bytes (2 MB as shipped): the same code.
    return Runtime(tmp_path, settings=Settings(run_capture_bytes=30_000))


def words(count: int) -> str:
    """``count`` characters of ordinary words (a secret inside one long word is hidden with
    the whole word, which no cut can halve)."""
    return ("ab " * (count // 3 + 1))[:count]


@pytest.mark.parametrize("secret", [KEY, PASSWORD])
def test_a_long_line_cut_through_a_secret_keeps_none_of_it(rt: Runtime, secret: str) -> None:
    limit = rt.settings.max_line_chars
    for shift in range(1, len(secret), 3):
        (rt.root / "f.txt").write_text(words(limit - shift) + secret + words(200) + "\n")
        shown = rt.call("read", {"path": "f.txt"}).output
        assert "more chars]" in shown
        assert pieces(shown, secret) == [], shift


@pytest.mark.parametrize("secret", [KEY, PASSWORD])
@pytest.mark.parametrize("where", ["captured", "shown"])
def test_a_commands_kept_head_and_tail_keep_none_of_a_secret_cut_through(
    rt: Runtime, secret: str, where: str
) -> None:
    """Past the capture, output is kept as a head and a tail as it comes (their edges cut
    through whatever was printed there); of those, a head and a tail are shown."""
    if where == "captured":  # less is captured than could be shown: its edges are shown
        rt = Runtime(rt.root, settings=Settings(run_capture_bytes=9_000, run_output_chars=12_000))
        size = rt.settings.run_capture_bytes
    else:  # more is captured than is shown: the edges of what is shown are cuts too
        size = rt.settings.run_output_chars
    head, tail = size // 3, size - size // 3
    script = rt.root / "say.py"
    for shift in (1, 5, len(secret) // 2, len(secret) - 2):
        # Through the head's end, then the tail's start, 100,000 bytes between.
        text = words(head - shift) + secret + words(100_000) + secret + words(tail - shift)
        script.write_text(f"import sys\nsys.stdout.write({text!r})\n")
        shown = rt.call("run", {"command": f"{sys.executable} say.py"}).output
        assert "middle omitted" in shown
        assert pieces(shown, secret) == [], shift


def test_an_output_cut_in_one_piece_is_redacted_before_the_cut(rt: Runtime) -> None:
    limit = rt.settings.run_output_chars
    script = rt.root / "say.py"
    script.write_text(f"print({words(limit // 3 - 5)!r} + {KEY!r} + {words(limit)!r})\n")
    shown = rt.call("run", {"command": f"{sys.executable} say.py"}).output
    assert "characters omitted" in shown and pieces(shown, KEY) == []


def test_a_snippet_and_an_error_message_cut_through_a_secret_keep_none_of_it(
    rt: Runtime,
) -> None:
    line = "v = '" + words(190) + KEY + "'\n"
    (rt.root / "c.py").write_text(line * 2)
    refused = rt.propose(
        "replace_string", {"path": "c.py", "old_string": "v = '", "new_string": "w = '"}
    )
    assert refused.error is not None and refused.error.code == "AMBIGUOUS_MATCH"
    assert pieces(refused.error.render(), KEY) == []
    message = "y" * (MAX_MESSAGE_CHARS - 6) + KEY + " and more"
    assert pieces(ToolError("INVALID_ARGS", message).message, KEY) == []  # type: ignore[arg-type]


def test_the_edges_of_a_cut_hide_what_could_be_a_secret_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert cut_end("ordinary text then sk-proj-Ab") == "ordinary text then " + REDACTED
    assert cut_start("Value0000 and ordinary text") == REDACTED + " and ordinary text"
    assert cut_end("ordinary text") == "ordinary text"
    assert cut_start("text goes on") == "text goes on"
    assert cut_end(f"whole {KEY} ends") == f"whole {REDACTED} ends"
