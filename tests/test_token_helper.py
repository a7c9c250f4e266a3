"""The counting helper: a process that counts tokens until this one has loaded the encoding.

A kernel's warming starts it first thing, so the encoding's load (0.5-0.7 s of the
interpreter's lock) is made on the other processor while grinta's modules import, and a
session's first request is counted without waiting for it (tools/tokens.py). These tests
run it for real: its counts must be this process's exactly, anything wrong with it must
fall back to counting here, and it must never outlive its use or hang a caller.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grinta_jupyter.runtime import counting
from grinta_jupyter.tools import tokens

TEXTS = [
    "",
    "hello world",
    "a\ud800b",  # a lone surrogate: counted as this process counts it
    "\udfff",
    "<|endoftext|> and <|endofprompt|>",  # special tokens' names are plain text
    "déjà vu 東京 🙂 \u200d\r\n\t",
    "def f(x):\n    return x + 1\n" * 300,
    "x" * 100_000,
]


def run(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter (the helper is a process's own, started once)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def helper(monkeypatch):
    """A fresh helper for this process, stopped afterwards (the module's own is restored)."""
    tokens._encoding()  # loaded here first (a first load stops the module's helper)
    fresh = counting._Helper()
    monkeypatch.setattr(counting, "HELPER", fresh)
    monkeypatch.setattr(tokens, "_loaded", None)
    fresh.start()
    yield fresh
    fresh.close()


def test_the_helpers_counts_are_this_processs_counts(helper):
    here = tokens._encoding()  # the fixture's load; ``_loaded`` is patched back to None
    for text in TEXTS:
        assert helper.count(text) == len(here.encode_ordinary(text)), repr(text[:40])
    assert helper._process is not None and helper._process.poll() is None


@pytest.fixture(scope="module")
def shared():
    tokens._encoding()
    helper = counting._Helper()
    helper.start()
    yield helper
    helper.close()


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300))
def test_any_text_counts_the_same_in_the_helper(shared, text):
    here = tokens._encoding()
    assert shared.count(text) == len(here.encode_ordinary(text))


def test_counts_go_to_the_helper_until_the_encoding_is_loaded_here_then_it_ends():
    ran = run(
        """
        import os, sys
        os.environ["TIKTOKEN_CACHE_DIR"] = "/the-users-own"
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        counts = [tokens.count_tokens("hello world"), tokens.count_tokens("a\\ud800b")]
        process = counting.HELPER._process
        print(counts, "tiktoken" in sys.modules, process.poll())
        tokens.load()
        process.wait(5)
        print(counting.HELPER._process, tokens.count_tokens("hello world"), process.returncode)
        tokens.start_helper()  # loaded here: no helper again
        print(counting.HELPER._process, os.environ["TIKTOKEN_CACHE_DIR"])
        """
    )
    assert ran.returncode == 0, ran.stderr
    first, second, third = ran.stdout.splitlines()
    # Counted by the helper: this process has not even imported tiktoken.
    assert first == "[2, 3] False None"
    assert second.startswith("None 2 ")  # the helper was stopped, the count made here
    assert third == "None /the-users-own"


def test_a_helper_that_dies_is_not_asked_again_and_the_count_is_made_here(helper):
    assert helper.count("warm up") == 2
    helper._process.kill()
    helper._process.wait(5)
    assert helper.count("hello world") is None  # not a wrong number: no answer
    assert helper._process is None
    helper.start()  # tried once: never started again
    assert helper._process is None
    assert tokens.count_tokens("hello world") == 2


def test_a_stalled_helper_is_given_up_within_its_patience(helper, monkeypatch):
    assert helper.count("warm up") == 2
    monkeypatch.setattr(counting, "_PATIENCE", 0.5)
    process = helper._process
    os.kill(process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert helper.count("hello world") is None
        assert time.monotonic() - started < 3
        assert helper._process is None
        assert process.wait(5) is not None  # killed, not left stopped
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)


def test_a_text_larger_than_the_pipe_holds_is_counted_here(helper):
    assert helper.count("warm up") == 2
    big = "word " * (helper._capacity // 5 + 10)
    assert helper.count(big) is None  # a write that could block is never made
    assert tokens.count_tokens(big) == len(tokens._encoding().encode_ordinary(big))


def test_a_helper_that_cannot_start_falls_back_at_once():
    # A Python with no tiktoken on its path: the helper dies at its import, and the count
    # is made here without waiting out the helper's patience.
    ran = run(
        """
        import sys, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        counting._CHILD = "import sys; sys.exit(3)"
        tokens.start_helper()
        started = time.monotonic()
        print(tokens.count_tokens("hello world"), time.monotonic() - started < 5,
              counting.HELPER._process)
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2 True None"


def test_an_interrupt_during_a_count_stops_the_helper_and_no_answer_is_read_later():
    # The helper stalled mid-answer, then Ctrl-C: the late answer must never be taken as a
    # later text's count.
    ran = run(
        """
        import os, signal, threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        assert tokens.count_tokens("warm up") == 2
        process = counting.HELPER._process
        os.kill(process.pid, signal.SIGSTOP)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            tokens.count_tokens("x " * 1000)
        except KeyboardInterrupt:
            print("interrupted")
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
        print(counting.HELPER._process, process.wait(5) is not None,
              tokens.count_tokens("hello world"))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["interrupted", "None True 2"]


def test_a_forked_child_counts_by_itself_and_leaves_the_parents_helper_alone():
    ran = run(
        """
        import os
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        assert tokens.count_tokens("warm up") == 2
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            tokens.start_helper()  # a child never starts or asks one
            ok = counting.HELPER._process is None and tokens.count_tokens("hello world") == 2
            os.write(write, b"1" if ok else b"0")
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        print(os.read(read, 1).decode(), counting.HELPER._process.poll(),
              tokens.count_tokens("hello there world"))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "1 None 3"


def test_the_helper_ends_with_its_process():
    ran = run(
        """
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        assert tokens.count_tokens("warm up") == 2
        print(counting.HELPER._process.pid)
        import os
        os._exit(0)  # no atexit: the helper must end when its input closes
        """
    )
    pid = int(ran.stdout.strip())
    for _ in range(100):
        if not _running(pid):
            return
        time.sleep(0.05)
    pytest.fail(f"the helper {pid} outlived its process")


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (an orphan's zombie, not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_helper_is_given_none_of_the_users_environment():
    ran = run(
        """
        import os
        os.environ["OPENAI_API_KEY"] = "sk-secret"
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        assert tokens.count_tokens("warm up") == 2
        with open(f"/proc/{counting.HELPER._process.pid}/environ", "rb") as env:
            print(b"sk-secret" in env.read())
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "False"


def _one_pass_reader(fallbacks: list[str] | None = None):
    """The helper's reader of rank files (``counting._RANKS``), with tiktoken's own as its
    ``original`` (each file handed to it noted in ``fallbacks``)."""
    from tiktoken.load import load_tiktoken_bpe

    def original(location, expected_hash=None):  # noqa: ANN001, ANN202
        if fallbacks is not None:
            fallbacks.append(location)
        return load_tiktoken_bpe(location, expected_hash)

    space = {"original": original}
    exec(counting._RANKS, space)
    return space["ranks"], load_tiktoken_bpe


def test_the_helpers_one_pass_parse_reads_every_rank_file_as_tiktoken_does(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))  # its copies go here
    fallbacks: list[str] = []
    ranks, tiktokens = _one_pass_reader(fallbacks)
    files = [
        f
        for f in counting.litellm_folder().iterdir()
        if f.is_file() and not f.suffix and len(f.name) == 40  # the encodings' cached files
    ]
    assert len(files) >= 2, files  # o200k_base and cl100k_base at least
    for file in files:
        assert ranks(str(file)) == tiktokens(str(file)), file.name
    assert fallbacks == []  # every one was read in one pass


@pytest.mark.parametrize(
    "contents",
    [
        b"YQ== 0\nYg== 1\n",
        b"YQ== 0\nYg== 1",  # no final newline
        b"YQ== 0\n\nYg== 1\n",  # a blank line: tiktoken skips it
        b"YQ== 0 Yg==\n1\n",  # three fields, then one: as many as two lines of two
        b"YQ== 0 7\nYg==\n",
        b"YQ==\t0\nYg== 1\n",  # a tab parts the fields: tiktoken splits on it too
        b" YQ== 0\nYg== 1\n",
        b"YQ== 0\r\nYg== 1\r\n",
        b"YQ== 0\nYg== x\n",  # a rank that is no number
        b"Y!== 0\n",  # a token that is no base64
        b"",
    ],
)
def test_the_one_pass_parse_agrees_with_tiktoken_on_odd_files(tmp_path, monkeypatch, contents):
    # The file's hash given, as tiktoken's own encodings give theirs: the check passes and the
    # parse is the one-pass one wherever the file allows it.
    import hashlib

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    ranks, tiktokens = _one_pass_reader()
    path = tmp_path / "ranks.tiktoken"
    path.write_bytes(contents)
    pinned = hashlib.sha256(contents).hexdigest()

    def outcome(reader):  # noqa: ANN001, ANN202
        try:
            return reader(str(path), pinned)
        except ValueError:  # binascii.Error is one: tiktoken wraps the same failures in it
            return ValueError

    assert outcome(ranks) == outcome(tiktokens)
