"""Attacks on the limits of code the agent runs: input it waits for, terminal codes in what it
hands back, and output written in one piece.

- ``input()``, ``getpass`` and ``sys.stdin`` in executed code found an open stdin: a terminal's
  (``grinta replay``), or the front end's (an input box under the cell running meanwhile), and
  waited to the time limit; a read no interrupt ends then stayed behind for the next line.
- A final value's repr and an exception's message reached the model with raw terminal codes
  (a clipboard write, a window title, a screen clear), which ``run`` strips.
- One write of a long text (``print`` of 400 MB) was copied twice over into the buffer that
  keeps its head and tail: the kernel's peak memory rose by twice the text.
"""

from __future__ import annotations

import os
import random
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter.runtime.process import OutputBuffer
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.execute import run_code
from tests.kernels import running_kernel

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def open_stdin(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """``sys.stdin`` on a pipe nobody writes to, as a terminal nobody types in; yields the
    write end. Afterwards lines are written, so a read left waiting ends."""
    read_end, write_end = os.pipe()
    stream = open(read_end, encoding="utf-8")  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdin", stream)
    try:
        yield write_end
    finally:
        os.write(write_end, b"line\n" * 10)
        os.close(write_end)
        time.sleep(0.1)  # a reader left behind takes its line and ends
        stream.close()


@pytest.mark.parametrize(
    "code",
    [
        "answer = input('name? ')",
        "import sys\nanswer = sys.stdin.readline()\nassert answer, 'stdin is empty'",
        "import sys\nfor line in sys.stdin:\n    pass\nprint('read to the end')",
    ],
)
def test_executed_code_that_reads_input_finds_stdin_closed(open_stdin: int, code: str) -> None:
    """Attack: executed code asks for input while the kernel's stdin is open (a terminal). It
    blocked to the time limit, reported as still running, and its read took the next line."""
    started = time.monotonic()
    observation = run_code({}, code, 1.5, Settings(), grace=0.2)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, observation.output
    assert "did not stop" not in observation.output
    assert (
        "EOFError" in observation.output
        or "stdin is empty" in observation.output
        or ("read to the end" in observation.output)
    )
    assert sys.stdin is not None and not type(sys.stdin).__name__.startswith("_")  # put back


def test_input_in_executed_code_sends_no_input_request_to_the_front_end(tmp_path: Path) -> None:
    """Attack: executed code calls ``input()`` and ``getpass()`` while a cell that allows
    input runs. The front end was sent an input request (a box under that cell a user may
    type a password into) and the code waited to its time limit."""
    cell = (
        "from grinta_jupyter.tools.execute import run_code\n"
        "from grinta_jupyter.tools.base import Settings\n"
        "for code in ('input(\"name? \")', 'import getpass; getpass.getpass()'):\n"
        "    print(run_code(get_ipython().user_ns, code, 2, Settings()).output)\n"
    )
    env = {"PYTHONPATH": str(ROOT)}
    with running_kernel(tmp_path, env) as kc:
        printed, asked = _run_cell(kc, cell)  # input allowed, as JupyterLab sends every cell
    assert asked == []
    assert printed.count("EXECUTE_FAILED: EOFError") == 2, printed
    assert "timed out" not in printed


@pytest.mark.parametrize(
    "code",
    [
        'class Shown:\n    def __repr__(self):\n        return "\\x1b]52;c;aGk=\\x07\\x1b[2Jvalue"\n'
        "Shown()",
        'raise ValueError("\\x1b]0;title\\x07\\x1b[2J\\x9b2Jboom")',
    ],
)
def test_terminal_codes_in_a_value_or_an_exception_do_not_reach_the_model(code: str) -> None:
    """Attack: a repr or an exception message with a clipboard write (OSC 52), a window
    title and a screen clear, in their escape and one-character forms: they reached the model
    and the error message raw, where ``run``'s output is stripped of them."""
    observation = run_code({}, code, 10, Settings())
    texts = [observation.output]
    if observation.error is not None:
        texts.append(observation.error.message)
    for text in texts:
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, text
    assert "value" in observation.output or "boom" in observation.output


def test_one_long_write_costs_memory_in_proportion_to_the_limit_not_the_write() -> None:
    """Attack: ``print`` of one long text in executed code, fed to the buffer in one piece.
    The piece was copied twice (its rest past the head, then into the tail before the tail
    was trimmed): 40 MB raised the peak by 80 MB."""
    chunk = b"x" * 40_000_000
    buffer = OutputBuffer(2_000_000)
    tracemalloc.start()
    try:
        buffer.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000, peak
    assert buffer.total == len(chunk) and len(buffer.head) + len(buffer.tail) == 2_000_000


def test_the_buffer_keeps_the_same_head_and_tail_however_the_output_is_cut() -> None:
    """Guard (passes before and after): the head and tail kept do not depend on how the output
    was cut into writes, long or short, nor on the limit."""
    rng = random.Random(7)
    data = bytes(rng.randrange(256) for _ in range(20_000))
    for limit in (0, 1, 2, 3, 300, 3_001, 30_000):
        for _ in range(20):
            buffer, at = OutputBuffer(limit), 0
            while at < len(data):
                size = rng.choice((1, 7, 500, 5_000, 30_000))
                buffer.feed(data[at : at + size])
                at += size
            head_limit = limit // 3
            tail_limit = limit - head_limit
            assert buffer.head == data[:head_limit]
            assert buffer.tail == (data[head_limit:][-tail_limit:] if tail_limit else b"")
            assert buffer.omitted == len(data) - len(buffer.head) - len(buffer.tail)


def _run_cell(kc, code: str, seconds: float = 30) -> tuple[str, list[dict]]:  # type: ignore[no-untyped-def]
    """Run ``code`` as JupyterLab does (input allowed); what it printed, and the input
    requests the kernel sent meanwhile."""
    content = {
        "code": code,
        "silent": False,
        "store_history": False,
        "user_expressions": {},
        "allow_stdin": True,
        "stop_on_error": True,
    }
    request = kc.session.msg("execute_request", content)
    kc.shell_channel.send(request)
    printed, asked = "", []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        while kc.stdin_channel.msg_ready():
            asked.append(kc.get_stdin_msg(timeout=1)["content"])
        try:
            msg = kc.get_iopub_msg(timeout=0.1)
        except Exception:  # queue.Empty: nothing yet
            continue
        if msg["parent_header"].get("msg_id") != request["header"]["msg_id"]:
            continue
        if msg["msg_type"] == "stream":
            printed += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while kc.stdin_channel.msg_ready():
        asked.append(kc.get_stdin_msg(timeout=1)["content"])
    return printed, asked


def test_a_cell_started_while_executed_code_runs_hands_it_no_input(tmp_path: Path) -> None:
    """Attack: the agent's code waits, then calls ``input()`` and ``getpass()``; meanwhile the
    user runs a cell (ipykernel makes its own ``input`` and ``getpass`` the builtins for that
    cell). The code reached ipykernel's: the front end was sent an input request under the
    user's cell, and the code waited to its time limit."""
    start = (
        "import threading, time\n"
        "from grinta_jupyter.jupyter.kernel import current_namespace\n"
        "from grinta_jupyter.tools.execute import run_code\n"
        "from grinta_jupyter.tools.base import Settings\n"
        "_out = []\n"
        "_code = 'import time, getpass\\ntime.sleep(1.5)\\n"
        'try:\\n    input("name? ")\\nexcept EOFError as e:\\n    print("EOF1", e)\\n'
        "getpass.getpass()'\n"
        "_t = threading.Thread(target=lambda: _out.append("
        "run_code(current_namespace().namespace(), _code, 20, Settings()).output))\n"
        "_t.start()\n"
    )
    env = {"PYTHONPATH": str(ROOT)}
    with running_kernel(tmp_path, env) as kc:
        _run_cell(kc, start)
        _, asked = _run_cell(kc, "time.sleep(4)")  # the user's cell, while the code asks
        printed, more = _run_cell(kc, "_t.join(20); print(_out[0])")
    assert asked == [] and more == []
    assert "EOF1" in printed and "EXECUTE_FAILED: EOFError" in printed, printed
    assert "timed out" not in printed
