"""Attacks on what ``run`` shows of a command's output: a cut that falls inside a character
of a secret, the text a command leaves in its supervisor's status pipe before killing it,
and terminal controls in their one-character (C1) forms.

Every command here ends by itself at once; none leaves a process behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.secrets import Secrets
from grinta_jupyter.tools.base import Settings

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the supervisor's pipe is found through /proc"
)
KEY = "sk-proj-Abc123XyZ987LongSecretValue0000"
# Accented letters are two bytes in UTF-8: a cut on bytes can fall inside one.
PASSWORD = "Pässwörter-Größe-ÄÖÜ-geheim"


def pieces(text: str, secret: str, size: int = 4) -> list[str]:
    """The runs of ``size`` characters of ``secret`` found in ``text``."""
    return sorted(
        {
            secret[i : i + size]
            for i in range(len(secret) - size + 1)
            if secret[i : i + size] in text
        }
    )


def seen_by_model(text: str) -> str:
    """What the session gives the model of a tool's output (agent/context.py)."""
    return Secrets.from_env().redact(text)


def test_a_cut_inside_a_character_of_a_secret_keeps_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: a password with accented letters printed across the kept head's end and the
    kept tail's start, at every byte. A cut inside a letter left a replacement character at
    the edge, which no secret holds, so the edge check found nothing: ``Pässw`` and
    ``-geheim`` were shown."""
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)
    rt = Runtime(tmp_path, settings=Settings(run_capture_bytes=9_000, run_output_chars=12_000))
    head, tail = 3_000, 6_000
    secret = PASSWORD.encode()
    leaks = {}
    for shift in range(1, len(secret)):
        data = (
            (b"ab " * 1_000)[: head - shift]
            + secret
            + b"ab " * 40_000
            + secret
            + (b"ab " * 2_000)[: tail - shift]
        )
        (tmp_path / "out.bin").write_bytes(data)
        shown = seen_by_model(rt.call("run", {"command": "cat out.bin"}).output)
        assert "middle omitted" in shown
        if pieces(shown, PASSWORD):
            leaks[shift] = pieces(shown, PASSWORD)
    assert leaks == {}


def test_a_killed_supervisors_pipe_reaches_the_model_clean_and_cut_safely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: the command writes a key, then terminal codes (a clipboard write, a title)
    into its supervisor's status pipe and kills it. The error quoted the pipe's last 1,000
    characters raw: the codes reached the model, and the cut kept the key's last 10
    characters, too few to be recognised."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    codes = r"\033]52;c;aGVsbG8=\007\033]0;pwned\007\233" + "2J"
    kept = 10  # of the key's characters inside the last 1,000 of the pipe
    filler = "x" * (1_000 - kept - len("\x1b]52;c;aGVsbG8=\x07\x1b]0;pwned\x07\x9b2J"))
    command = f"printf '\\n{KEY}{filler}{codes}' > /proc/$PPID/fd/2; kill -9 $PPID"
    obs = Runtime(tmp_path).call("run", {"command": command, "timeout": 10})
    assert obs.error is not None and obs.error.code == "COMMAND_FAILED"
    shown = seen_by_model(obs.output)
    assert "supervisor was killed" in shown and "xxxxxxxx" in shown
    assert "\x1b" not in shown and "\x9b" not in shown and "\x07" not in shown
    assert pieces(shown, KEY) == []


def test_one_character_terminal_controls_do_not_reach_the_model(tmp_path: Path) -> None:
    """Attack: the C1 forms of CSI and OSC (U+009B, U+009D, UTF-8 encoded), which terminals
    obey like ``ESC [`` and ``ESC ]``: a screen clear, a title and a clipboard write reached
    the model's text."""
    command = r"printf 'a\302\2332Jb\302\2350;title\007c\302\23552;c;aGk=\302\234d\302\205e'"
    obs = Runtime(tmp_path).call("run", {"command": command})
    assert obs.ok, obs.output
    assert obs.output.endswith("\nabcde")
