"""Attacks on "nothing a file or the model does freezes the kernel", in a real kernel.

One kernel serves the module; each test starts a session through ``%grinta`` against
a local model server (litellm's real calls), makes it do something hostile (read a
FIFO, search with a catastrophic regex, run code that never ends, stall mid-stream),
and checks that the kernel answers a simple cell within ``ANSWER_S`` while it happens,
and that Stop (``%grinta stop``, the panel's button, a kernel interrupt) ends the
session with its reason. Broken promises are ``xfail(strict=True)`` with the bug in
the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

from tests.kernels import execute, wait_for
from tests.openai_server import (
    OpenAIServer,
    Reply,
    stall_reply,
    text_reply,
    tool_call,
    tool_reply,
)

ANSWER_S = 2.0  # a simple cell answers within this, whatever the session does
STOPPED = "stopped by the user"

# A task that measures how long the kernel's event loop goes without turning, less the time
# CPython's garbage collector held the interpreter meanwhile: a full pass over litellm's half
# million objects takes 0.25-0.35 s whatever grinta does (docs/guarantees.md), and up to
# 0.55 s on a loaded CI machine (at 7003190), which is not what these tests are about.
PROBE = """
import asyncio, gc, time
_gaps = [0.0]
_collecting = [0.0, 0.0]  # seconds collected so far; when the pass under way started
def _collector(phase, info):
    if phase == "start":
        _collecting[1] = time.monotonic()
    else:
        _collecting[0] += time.monotonic() - _collecting[1]
gc.callbacks.append(_collector)
async def _probe():
    last, collected = time.monotonic(), _collecting[0]
    while True:
        await asyncio.sleep(0.01)
        now = time.monotonic()
        _gaps.append(now - last - (_collecting[0] - collected))
        last, collected = now, _collecting[0]
_probe_task = asyncio.ensure_future(_probe())
"""
RESTART = "_gaps[:] = [0.0]; _probe_task.cancel(); _probe_task = asyncio.ensure_future(_probe())"


class Kernel:
    """A kernel with grinta loaded, its manager (to interrupt it) and a workspace."""

    def __init__(self, km: Any, kc: Any, root: Path):
        self.km, self.kc, self.root = km, kc, root

    def answers(self, within: float = ANSWER_S) -> float:
        """Run ``1+1``; how long it took (asserted under ``within``)."""
        started = time.monotonic()
        assert execute(self.kc, "print(1+1)", timeout=within + 30).strip() == "2"
        took = time.monotonic() - started
        assert took < within, f"the kernel took {took:.1f} s to answer 1+1"
        return took

    def start(
        self, server: OpenAIServer, *replies: Reply, options: str = "--auto", then: str = ""
    ) -> None:
        """A session on ``self.root`` whose model is ``server`` answering ``replies``;
        ``then`` runs in the ``%grinta`` cell, after the magic and before the session's
        work starts on the loop (the cell holds the loop until it ends)."""
        server.queue(*replies)
        execute(self.kc, f"import os; os.environ['GRINTA_API_BASE'] = {server.url!r}")
        execute(self.kc, f"%grinta {options} --root {self.root} attack\n{then}")
        execute(self.kc, "session = grinta_jupyter.current()")

    def value(self, expression: str) -> str:
        return execute(self.kc, f"print({expression})").strip()

    def stopped(self, within: float = 5.0) -> None:
        """After a Stop: the session ends, says why, and the kernel answers."""
        wait_for(self.kc, "session.done", timeout=within)
        assert self.value("session.end_reason") == STOPPED
        self.answers()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    home = tmp_path_factory.mktemp("freeze")
    root = home / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    env = {
        "PATH": os.environ["PATH"],
        "GRINTA_MODEL": "openai/test-model",
        "GRINTA_API_KEY": "sk-local",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(home), env=env)
    try:
        execute(kc, "import grinta_jupyter\n%load_ext grinta_jupyter")
        execute(kc, "from grinta_jupyter.jupyter.controller import current_view")
        yield Kernel(km, kc, root)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as started:
        yield started


def observed(kernel: Kernel, number: int) -> str:
    return kernel.value(f"session.steps[{number - 1}].observation.output[:300]")


def test_hostile_files_are_refused_without_blocking(kernel: Kernel, server: OpenAIServer) -> None:
    """Attack: read a FIFO, /dev/zero through a symlink, a 2 GB sparse file and a symlink
    loop, then search a tree holding all of them: each is refused or skipped by name, at
    once, and the kernel answers throughout."""
    root = kernel.root
    os.mkfifo(root / "pipe.txt")
    os.symlink("/dev/zero", root / "zero.txt")
    with open(root / "sparse.bin", "wb") as sparse:
        sparse.truncate(2 * 1024**3)
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    try:
        calls = [
            tool_call("read", {"path": "pipe.txt"}, "c1"),
            tool_call("read", {"path": "zero.txt"}, "c2"),
            tool_call("read", {"path": "sparse.bin"}, "c3"),
            tool_call("read", {"path": "loop1"}, "c4"),
            tool_call("search", {"query": "x"}, "c5"),
        ]
        kernel.start(server, tool_reply(*calls), stall_reply(60))
        wait_for(kernel.kc, "len(session.steps) == 5 and session.steps[4].observation", 30)
        kernel.answers()
        assert observed(kernel, 1).startswith("ERROR NOT_A_REGULAR_FILE")
        assert observed(kernel, 2).startswith("ERROR PATH_OUTSIDE_WORKSPACE")
        assert observed(kernel, 3).startswith("ERROR FILE_TOO_LARGE")
        assert observed(kernel, 4).startswith("ERROR SYMLINK_LOOP")
        search = observed(kernel, 5)
        assert "a.py:1: x = 1" in search
        for name in ("pipe.txt", "zero.txt", "sparse.bin", "loop1", "loop2"):
            assert name in search, search
        execute(kernel.kc, "%grinta stop")
        kernel.stopped()
    finally:
        for name in ("pipe.txt", "zero.txt", "sparse.bin", "loop1", "loop2"):
            (root / name).unlink()


def test_stop_while_a_catastrophic_regex_search_is_staged(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: ``(a|aa)+$`` over a 1.9 MB line that ends in ``b`` backtracks for ever (the
    search's own limit is 10 s). Stop ends the session while it is staged, at once."""
    line = kernel.root / "aaa.txt"
    line.write_text("a" * 1_900_000 + "b\n")
    try:
        call = tool_call("search", {"query": "(a|aa)+$", "regex": True}, "c1")
        kernel.start(server, tool_reply(call), stall_reply(60))
        wait_for(kernel.kc, "bool(session.queue)", 30)  # a call leaves the queue once staged
        kernel.answers()
        started = time.monotonic()
        execute(kernel.kc, "%grinta stop")
        kernel.stopped()
        assert time.monotonic() - started < 5
        assert kernel.value("len(session.steps)") == "0", "nothing of that search is shown"
    finally:
        line.unlink()


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("while True:\n    pass", "stopped before it finished"),
        ("import time\ntime.sleep(1e9)", "cannot be interrupted"),
    ],
    ids=["python-loop", "sleep"],
)
def test_stop_ends_executed_code_that_never_returns(
    kernel: Kernel, server: OpenAIServer, code: str, said: str
) -> None:
    """Attack: the ``execute`` tool runs an endless loop, or ``time.sleep(1e9)`` (a C call no
    interrupt reaches), in the user's kernel. Cells still run; Stop ends the session within
    the interrupt's grace, and the step says what became of the code."""
    call = tool_call("execute", {"code": code, "timeout": 600}, "c1")
    kernel.start(server, tool_reply(call), stall_reply(60))
    wait_for(kernel.kc, "session.state.value == 'committed'", 30)
    kernel.answers()
    execute(kernel.kc, "%grinta stop")
    kernel.stopped()
    output = observed(kernel, 1)
    assert output.startswith("ERROR COMMAND_FAILED") and said in output, output


def test_the_panels_stop_button_ends_a_stream_that_stalls(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: the model server sends the first chunk, then nothing for a minute. The
    panel's Stop button (its click, as the browser sends it) ends the session and closes
    the connection."""
    kernel.start(server, stall_reply(60))
    deadline = time.monotonic() + 30
    while not server.requests:
        assert time.monotonic() < deadline, "the model was never asked"
        time.sleep(0.05)
    time.sleep(0.5)  # inside the stream
    kernel.answers()
    button = kernel.value("current_view().panel.stop_button.model_id")
    click = {"method": "custom", "content": {"event": "click"}}
    kernel.kc.shell_channel.send(
        kernel.kc.session.msg("comm_msg", {"comm_id": button, "data": click})
    )
    kernel.stopped()
    deadline = time.monotonic() + 5
    while not server.disconnects:
        assert time.monotonic() < deadline, "the stalled request was never closed"
        time.sleep(0.05)


def test_a_kernel_interrupt_ends_a_manual_step_that_waits_on_a_stalled_model(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: in manual mode ``%grinta step`` waits in its cell for a model that stalls.
    The kernel's interrupt ends the cell at once, with one line that says what to do (not
    IPython's traceback of grinta's frames, whose formatting took seconds while the warming
    imported litellm); the cell queued after it is dropped, as after any interrupt;
    ``%grinta stop`` then ends the session."""
    kernel.start(server, stall_reply(60), options="--manual")
    request = kernel.kc.execute("%grinta step")
    queued = kernel.kc.execute("print('queued')")
    deadline = time.monotonic() + 30
    while not server.requests:
        assert time.monotonic() < deadline, "the model was never asked"
        time.sleep(0.05)
    time.sleep(0.5)
    started = time.monotonic()
    kernel.km.interrupt_kernel()
    errors = []
    while True:
        message = kernel.kc.get_iopub_msg(timeout=10)
        if message["parent_header"].get("msg_id") != request:
            continue
        if message["msg_type"] == "error":
            errors.append(message["content"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    assert time.monotonic() - started < ANSWER_S
    assert [e["ename"] for e in errors] == ["Interrupted"]
    assert errors[0]["traceback"] == [
        "KeyboardInterrupt: %grinta was interrupted; %grinta status says where the session stands"
    ]
    replies = {}
    while len(replies) < 2:  # earlier cells' replies may still be unread: skipped
        reply = kernel.kc.get_shell_msg(timeout=10)
        if reply["parent_header"].get("msg_id") in (request, queued):
            replies[reply["parent_header"]["msg_id"]] = reply["content"]["status"]
    assert replies == {request: "error", queued: "aborted"}
    kernel.answers()
    execute(kernel.kc, "%grinta stop")
    kernel.stopped()


def stream_long_reply(kernel: Kernel, server: OpenAIServer) -> tuple[float, int, int]:
    """A fast provider streams 50,000 characters in 10-character pieces (5,000 chunks, as a
    long create comes). The longest the kernel's loop stood still meanwhile, and the widget
    messages (count, bytes) the kernel sent its front end while the reply came in."""
    text = ("lorem ipsum dolor sit amet " * 2_000)[:50_000]
    execute(kernel.kc, PROBE)
    try:
        # Measured from the end of the %grinta cell: while it runs, the cell holds the loop,
        # as any cell does (right after %load_ext it waits for grinta's imports).
        kernel.start(server, text_reply(text, chunk_size=10), stall_reply(60), then=RESTART)
        count = size = 0
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:  # the long reply is taken in; the next turn is asked
            assert time.monotonic() < deadline, "the long reply was never taken in"
            with contextlib.suppress(queue.Empty):  # read as a front end does, all along
                message = kernel.kc.get_iopub_msg(timeout=0.1)
                if message["msg_type"] == "comm_msg":
                    count += 1
                    size += len(json.dumps(message["content"]))
        gap = float(kernel.value("max(_gaps)"))
        execute(kernel.kc, "%grinta stop")
        kernel.stopped()
    finally:
        execute(kernel.kc, "_probe_task.cancel(); gc.callbacks.remove(_collector)")
    return gap, count, size


def test_a_long_reply_streamed_fast_does_not_freeze_the_loop(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: 5,000 chunks as fast as the network brings them. The loop keeps turning
    (grinta gives it back every 20 ms; the collector's full passes aside)."""
    gap, _, _ = stream_long_reply(kernel, server)
    # 0.11-0.2 s on an idle machine; up to 0.73 s measured on a slow VM whose other core ran
    # the rest of the suite (the loop's thread waiting for a processor, whatever grinta does),
    # so the bound is 1 s: a reply that holds the loop for a second or more fails. It no
    # longer tells apart a reader that never gives the loop back between chunks itself
    # (``_YIELD_EVERY`` unbounded in both clients: 0.11 s here on 7 December, against 0.5 s
    # when this test was written).
    assert gap < 1.0, f"the kernel's event loop stood still for {gap:.2f} s"


def test_a_long_reply_streamed_fast_does_not_flood_the_front_end(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: 5,000 chunks as fast as the network brings them. The panel shows the text as
    it comes without sending the front end a message per chunk."""
    _, count, size = stream_long_reply(kernel, server)
    assert count < 500 and size < 2_000_000, f"{count} widget messages, {size:,} bytes"


def test_a_failing_cell_answers_while_executed_code_spins(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: the ``execute`` tool runs ``while True: pass``; the user runs a cell that
    fails. Its traceback comes back within a few seconds."""
    call = tool_call("execute", {"code": "while True:\n    pass", "timeout": 600}, "c1")
    kernel.start(server, tool_reply(call), stall_reply(60))
    wait_for(kernel.kc, "session.state.value == 'committed'", 30)
    kernel.answers()
    started = time.monotonic()
    request = kernel.kc.execute("1/0")
    took = None
    try:
        while took is None and time.monotonic() - started < 5:
            with contextlib.suppress(queue.Empty):
                message = kernel.kc.get_iopub_msg(timeout=0.2)
                if (
                    message["parent_header"].get("msg_id") == request
                    and message["msg_type"] == "error"
                ):
                    took = time.monotonic() - started
        while took is not None:  # its end: a cell sent before it would be aborted (stop_on_error)
            message = kernel.kc.get_iopub_msg(timeout=30)
            if (
                message["parent_header"].get("msg_id") == request
                and message["msg_type"] == "status"
                and message["content"]["execution_state"] == "idle"
            ):
                break
    finally:
        execute(kernel.kc, "%grinta stop", timeout=60)
        kernel.stopped(within=30)
    assert took is not None, "the failing cell did not answer within 5 s"


def test_short_blocking_calls_in_a_cell_answer_while_executed_code_spins(
    kernel: Kernel, server: OpenAIServer
) -> None:
    """Attack: the ``execute`` tool runs ``while True: pass``; the user's cell makes 1,000
    blocking calls of 0.1 ms. Each gives up the GIL and must get it back from the spinning
    thread (at the default 5 ms switch interval, ~5 s in all); the cell answers within
    ``ANSWER_S``. (The failing cell above convoys the same way, but only when its ``lstat``
    calls are slow, as with a cold file system cache.)"""
    call = tool_call("execute", {"code": "while True:\n    pass", "timeout": 600}, "c1")
    kernel.start(server, tool_reply(call), stall_reply(60))
    wait_for(kernel.kc, "session.state.value == 'committed'", 30)
    try:
        started = time.monotonic()
        execute(kernel.kc, "import time\nfor _ in range(1000):\n    time.sleep(1e-4)")
        took = time.monotonic() - started
    finally:
        execute(kernel.kc, "%grinta stop", timeout=60)
        kernel.stopped(within=30)
    assert took < ANSWER_S, f"1,000 calls of 0.1 ms took {took:.1f} s"


# The switch interval while executed code runs: each case runs in a child process, whose
# interval no other test's thread (a stuck one lives on) has lowered.
SWITCH_CHILD = """
import sys, threading, time
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.execute import SWITCH_INTERVAL, run_code

sys.setswitchinterval(SWITCH_INTERVAL)
OURS = sys.getswitchinterval()  # as CPython keeps it
sys.setswitchinterval(0.007)  # the user's own, not the default
USER = sys.getswitchinterval()  # 0.006999: kept in whole microseconds, truncated

def seen(space):
    return space.get("inside")

INSIDE = "import sys\\ninside = sys.getswitchinterval()\\n"
"""


def switch_child(case: str) -> None:
    """Run ``case`` after ``SWITCH_CHILD`` in a child process; it asserts what it checks."""
    code = SWITCH_CHILD + textwrap.dedent(case) + "\nprint('done')\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr


def test_executed_code_runs_under_a_short_switch_interval_then_the_users_is_back() -> None:
    """A run lowers the interval while its code runs, and puts back the user's own, not the
    default; after a run that raises too. An interval already under ours is left alone."""
    switch_child(
        """
        space = {}
        assert run_code(space, INSIDE + "1", 30, Settings()).ok
        assert seen(space) == OURS, seen(space)
        assert sys.getswitchinterval() == USER, sys.getswitchinterval()
        space = {}
        observation = run_code(space, INSIDE + "raise ValueError('no')", 30, Settings())
        assert observation.error.code == "EXECUTE_FAILED", observation
        assert seen(space) == OURS and sys.getswitchinterval() == USER
        sys.setswitchinterval(0.00005)
        low = sys.getswitchinterval()
        space = {}
        assert run_code(space, INSIDE + "1", 30, Settings()).ok
        assert seen(space) == sys.getswitchinterval() == low, seen(space)
        """
    )


def test_the_interval_is_back_after_a_time_limit_or_a_stop() -> None:
    """Code that loops is interrupted at its time limit, or by Stop: the interval is back
    when the tool returns."""
    switch_child(
        """
        space = {}
        observation = run_code(space, INSIDE + "while True:\\n    pass", 0.3, Settings())
        assert observation.error.code == "COMMAND_TIMEOUT", observation
        assert seen(space) == OURS and sys.getswitchinterval() == USER
        space, cancel = {}, threading.Event()
        threading.Timer(0.3, cancel.set).start()
        code = INSIDE + "while True:\\n    pass"
        observation = run_code(space, code, 30, Settings(), cancel=cancel)
        assert observation.error.code == "COMMAND_FAILED", observation
        assert seen(space) == OURS and sys.getswitchinterval() == USER
        """
    )


def test_a_stuck_run_keeps_the_interval_short_until_its_thread_ends() -> None:
    """The tool gives up on code inside ``time.sleep``; its thread lives on (and would loop,
    once the call returns, if it caught the interrupt), so the interval stays short until
    the thread ends, then is back."""
    switch_child(
        """
        space = {}
        code = INSIDE + "import time\\ntime.sleep(1.5)"
        observation = run_code(space, code, 0.2, Settings(), grace=0.1)
        assert "did not stop" in observation.output, observation
        assert seen(space) == OURS
        assert sys.getswitchinterval() == OURS, "lowered while the thread lives"
        deadline = time.monotonic() + 10
        while any(t.name == "grinta-execute" for t in threading.enumerate()):
            assert time.monotonic() < deadline, "the stuck thread never ended"
            time.sleep(0.05)
        assert sys.getswitchinterval() == USER, sys.getswitchinterval()
        """
    )


def test_two_concurrent_runs_restore_the_interval_after_the_last() -> None:
    """Two runs overlap: the first to end leaves the interval short for the other, the last
    puts the user's back."""
    switch_child(
        """
        long, short = {}, {}
        worker = threading.Thread(
            target=run_code, args=(long, INSIDE + "import time\\ntime.sleep(1.0)", 30, Settings())
        )
        worker.start()
        time.sleep(0.3)
        assert run_code(short, INSIDE + "1", 30, Settings()).ok
        assert seen(long) == seen(short) == OURS, (seen(long), seen(short))
        assert sys.getswitchinterval() == OURS, "the longer run still runs"
        worker.join()
        assert sys.getswitchinterval() == USER, sys.getswitchinterval()
        """
    )


def test_an_interval_set_while_code_runs_is_kept() -> None:
    """The code (or the user, in a cell) sets its own interval while it runs: that one is
    kept, not overwritten when the run ends."""
    switch_child(
        """
        space = {}
        code = INSIDE + "sys.setswitchinterval(0.02)\\nchosen = sys.getswitchinterval()"
        assert run_code(space, code, 30, Settings()).ok
        assert seen(space) == OURS
        assert sys.getswitchinterval() == space["chosen"], sys.getswitchinterval()
        """
    )
