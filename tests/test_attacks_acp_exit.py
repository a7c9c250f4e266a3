"""``grinta acp`` attacked at its shutdown: the client leaving at awkward moments (stdin
closed while the model streams, while a permission waits, while a command or a commit
runs, right after ``session/new``, with several sessions in several states; its reading
end closed first; the client killed with SIGKILL). Each time: the agent exits within
``EXIT`` s with status 0, its stderr is clean (``grinta_acp`` checks it), no file is
half-written, no command it started is left running, and a new agent can ``session/load``
the session and prompt it. Real parts only: the agent subprocess, the ACP SDK's own
client, and tests/openai_server.py for the model (helpers from tests/test_acp.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import text_block

from tests.conftest import snapshot
from tests.openai_server import OpenAIServer, Reply, stall_reply, tool_call, tool_reply
from tests.test_acp import (
    CORE,
    FIX,
    FIXED,
    LEFT_OPEN,
    REPO,
    TASK,
    WAIT,
    Editor,
    grinta_acp,
    until,
    workspace,
)
from tests.test_acp_attacks import Scripted, log_events

EXIT = 40.0  # seconds the agent gets to exit once the client left
SLEEP = "echo $$ > started.pid; (sleep 300 & echo $! > child.pid; wait)"


def gone(pid: int) -> bool:
    """Whether ``pid`` runs no more (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True
    return False


def assert_no_orphans(root: Path) -> None:
    pids = [
        int((root / name).read_text())
        for name in ("started.pid", "child.pid")
        if (root / name).exists()
    ]
    assert pids, "the command never started"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(gone(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if not gone(p)]
    for pid in left:  # do not leave them to the next test
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"commands the agent started still run: {left}"


async def leave(process: Any, *, stdin: bool = True, stdout: bool = False) -> int:
    """The client closes its ends (its reading end, the agent's stdout, first); the agent's
    exit status, which must come within ``EXIT`` s."""
    if stdout:
        process._transport.get_pipe_transport(1).close()
    if stdin:
        process.stdin.close()
    started = time.monotonic()
    try:
        return await asyncio.wait_for(process.wait(), EXIT)
    except TimeoutError:
        raise AssertionError(
            f"the agent did not exit within {EXIT:.0f} s of the client leaving"
        ) from None
    finally:
        print(f"agent exit took {time.monotonic() - started:.2f} s")


def load_and_prompt(
    tmp_path: Path, server: OpenAIServer, root: Path, sid: str, editor: Editor | None = None
) -> str:
    """A new agent loads ``sid`` (its log was freed) and a prompt to it ends its turn."""
    editor = editor or Editor("approve")

    async def go() -> str:
        async with grinta_acp(editor, tmp_path, server) as (conn, _):
            await asyncio.wait_for(conn.load_session(cwd=str(root), session_id=sid), WAIT)
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("go on")]), WAIT
            )
            return done.stop_reason

    return asyncio.run(go())


def prompt_then_leave(
    editor: Editor,
    tmp_path: Path,
    server: OpenAIServer,
    root: Path,
    ready: Callable[[], Awaitable[object]],
    started: Callable[[Any], None] | None = None,
    variables: dict[str, str] | None = None,
    **how: bool,
) -> tuple[str, int]:
    """A session on ``root`` is given the task; once ``ready()`` is done (what the agent must
    be doing then), the client leaves (``leave(process, **how)``). The session's id and the
    agent's exit status. ``started`` gets the agent's process first; ``variables`` are added
    to its environment."""

    async def scenario() -> tuple[str, int]:
        async with grinta_acp(editor, tmp_path, server, **(variables or {})) as (conn, process):
            if started is not None:
                started(process)
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await ready()
            code = await leave(process, **how)
            with contextlib.suppress(Exception):
                await turn
            return sid, code

    return asyncio.run(scenario())


def finish(server: OpenAIServer, n: int = 1) -> None:
    server.queue(*[tool_reply(tool_call("finish", {"summary": "Done."})) for _ in range(n)])


def last_end(root: Path, sid: str) -> dict[str, Any]:
    return [e for e in log_events(root, sid) if e["type"] == "session_end"][-1]


# -- stdin closed at awkward moments --------------------------------------------------------


def test_stdin_closed_while_the_model_streams_a_reply(openai_server, tmp_path):
    root = workspace(tmp_path)
    before = snapshot(root)
    openai_server.queue(stall_reply(300.0))  # the first chunk, then a long pause
    editor = Editor("approve")

    sid, code = prompt_then_leave(
        editor,
        tmp_path,
        openai_server,
        root,
        lambda: until(lambda: len(openai_server.requests) == 1, "the model call"),
    )
    assert code == 0
    assert snapshot(root) == before
    assert openai_server.disconnects, "the model call was not cut"
    assert last_end(root, sid)["reason"] == "the ACP client went away"
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


def test_stdin_closed_while_a_permission_waits_then_the_write_is_asked_again(
    openai_server, tmp_path
):
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX), text="One edit."))
    editor = Editor("approve")
    editor.hold = asyncio.Event()  # never set: the user never answers

    sid, code = prompt_then_leave(
        editor, tmp_path, openai_server, root, lambda: asyncio.wait_for(editor.asked.wait(), WAIT)
    )
    assert code == 0
    assert (root / "pkg" / "core.py").read_text() == CORE
    finish(openai_server)
    again = Editor("approve")
    assert load_and_prompt(tmp_path, openai_server, root, sid, again) == "end_turn"
    assert (root / "pkg" / "core.py").read_text() in (CORE, FIXED)


def test_stdin_closed_while_a_command_and_its_child_run(openai_server, tmp_path):
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("run", {"command": SLEEP})))
    editor = Editor("approve")

    sid, code = prompt_then_leave(
        editor,
        tmp_path,
        openai_server,
        root,
        lambda: until(lambda: (root / "child.pid").exists(), "the command to start"),
    )
    assert code == 0
    assert_no_orphans(root)
    assert len([e for e in log_events(root, sid) if e["type"] == "observation"]) == 1
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


def test_stdin_closed_the_moment_a_big_write_is_approved(openai_server, tmp_path):
    """The approval and the end of stdin arrive together: the commit runs or not, but the
    file is all old or all new."""
    root = workspace(tmp_path)
    big = "".join(f"LINE_{i:07d} = {i}\n" for i in range(20_000))  # ~400 kB of Python
    new = root / "pkg" / "big.py"
    openai_server.queue(
        tool_reply(tool_call("create", {"path": "pkg/big.py", "content": big}), chunk_size=100_000)
    )

    class LeavesAsItApproves(Editor):
        process: Any = None

        async def request_permission(self, options, session_id, tool_call, **kwargs):  # type: ignore[no-untyped-def]
            self.permissions.append((tool_call, options))
            self.asked.set()
            asyncio.get_running_loop().call_soon(self.process.stdin.close)
            return await super().request_permission(options, session_id, tool_call, **kwargs)

    editor = LeavesAsItApproves("approve")

    sid, code = prompt_then_leave(
        editor,
        tmp_path,
        openai_server,
        root,
        lambda: asyncio.wait_for(editor.asked.wait(), WAIT),
        started=lambda process: setattr(editor, "process", process),
    )
    assert code == 0
    now = new.read_text() if new.exists() else None
    assert now in (None, big), f"half-written: {len(now or '')} chars"
    print("committed" if now == big else "not committed")
    assert not [
        p
        for p in (root / "pkg").iterdir()
        if p.name not in ("__init__.py", "core.py", "big.py", "__pycache__")
    ], "a temporary file was left"
    finish(openai_server, 2)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


def test_stdin_closed_right_after_session_new_and_right_after_a_first_prompt(
    openai_server, tmp_path
):
    root = workspace(tmp_path)
    openai_server.queue(stall_reply(300.0))

    async def scenario() -> list[int]:
        codes = []
        async with grinta_acp(Editor(), tmp_path, openai_server) as (conn, process):
            await conn.new_session(cwd=str(root))
            codes.append(await leave(process))
        async with grinta_acp(Editor(), tmp_path, openai_server) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await asyncio.sleep(0)  # sent; stdin closes at once, the session is starting
            codes.append(await leave(process))
            with contextlib.suppress(Exception):
                await turn
        return codes

    assert asyncio.run(scenario()) == [0, 0]
    logs = sorted((root / ".grinta" / "sessions").glob("*.jsonl"))
    assert len(logs) <= 1
    if logs:  # the prompt got as far as starting the session: it loads and goes on
        finish(openai_server)
        assert load_and_prompt(tmp_path, openai_server, root, logs[0].stem) == "end_turn"


def test_several_sessions_loaded_cancelled_streaming_asking_and_running(openai_server, tmp_path):
    """One connection: a session loaded and idle, one whose turn was cancelled, one whose
    model streams, one waiting for a permission, one running a command. All end, the
    agent exits, and each can be loaded and prompted by a new agent."""
    roots = {
        name: workspace(tmp_path / name)
        for name in ("loaded", "cancelled", "streaming", "asking", "running")
    }
    # The session to load: its agent died while a write waited.
    from tests.test_acp import died_while_a_write_waited

    openai_server.queue(tool_reply(tool_call("replace_string", FIX), text="One edit."))
    loaded_sid, _ = died_while_a_write_waited(tmp_path, openai_server, roots["loaded"])
    never = asyncio.Event()
    editor = Scripted(never)

    async def scenario() -> tuple[dict[str, str], int]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, process):
            sids = {"loaded": loaded_sid}
            await conn.load_session(cwd=str(roots["loaded"]), session_id=loaded_sid)
            for name in ("cancelled", "streaming", "asking", "running"):
                sids[name] = (await conn.new_session(cwd=str(roots[name]))).session_id
            turns = []

            def prompt(name: str) -> None:
                turns.append(
                    asyncio.ensure_future(
                        conn.prompt(session_id=sids[name], prompt=[text_block(TASK)])
                    )
                )

            openai_server.queue(stall_reply(300.0))
            prompt("cancelled")
            await until(lambda: len(openai_server.requests) == 2, "the first model call")
            await conn.cancel(session_id=sids["cancelled"])
            assert (await asyncio.wait_for(turns[0], WAIT)).stop_reason == "cancelled"
            openai_server.queue(tool_reply(tool_call("replace_string", FIX)))
            prompt("asking")
            await asyncio.wait_for(editor.asked.wait(), WAIT)
            await conn.set_session_mode(session_id=sids["running"], mode_id="auto")
            openai_server.queue(tool_reply(tool_call("run", {"command": SLEEP})))
            prompt("running")
            await until(lambda: (roots["running"] / "child.pid").exists(), "the command")
            openai_server.queue(stall_reply(300.0))
            prompt("streaming")
            await until(lambda: len(openai_server.requests) == 5, "the streaming call")
            code = await leave(process)
            for turn in turns:
                with contextlib.suppress(Exception):
                    await turn
            return sids, code

    sids, code = asyncio.run(scenario())
    assert code == 0
    assert_no_orphans(roots["running"])
    for name in ("loaded", "cancelled", "streaming", "asking"):
        assert (roots[name] / "pkg" / "core.py").read_text() == CORE, name
    for name, sid in sids.items():
        # "loaded" re-asks its waiting write, "asking" too: approve it, then finish.
        finish(openai_server, 2)
        assert load_and_prompt(tmp_path, openai_server, roots[name], sid) == "end_turn", name
        with openai_server._lock:
            openai_server._replies.clear()


# -- the client's reading end closed first ---------------------------------------------------


# Was a hole: the agent never learnt that the client stopped reading. The SDK's stdout writer
# (acp/stdio.py ``_WritePipeProtocol``) ignored ``connection_lost``: asyncio's pipe transport
# saw the reader gone and then dropped every write, ``drain`` never raised, so ``_drive``'s
# ``except ConnectionError`` never ran. The turn went on for nobody: the model was called
# again after its whole reply was "sent" into the closed pipe (acp/agent.py ``_Writing``).
def test_stdout_closed_first_then_stdin_while_the_model_streams(openai_server, tmp_path):
    """The client stops reading (closes the agent's stdout) and only later closes stdin:
    the agent's writes fail with a broken pipe; the turn must stop there (no further model
    call), and the agent exit cleanly once stdin closes."""
    root = workspace(tmp_path)
    openai_server.queue(Reply(text="word " * 2000, chunk_size=5, delay=1.0))
    editor = Editor("approve")

    async def scenario() -> tuple[str, int, int]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            log = root / ".grinta" / "sessions" / f"{sid}.jsonl"
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(lambda: len(openai_server.requests) == 1, "the model call")
            process._transport.get_pipe_transport(1).close()
            # The reply comes a second later: the agent's first write of it meets the
            # closed pipe.
            await until(
                lambda: log.exists() and "session_end" in log.read_text(), "the session's end"
            )
            calls = len(openai_server.requests)
            code = await leave(process)
            with contextlib.suppress(Exception):
                await turn
            return sid, code, calls

    sid, code, calls = asyncio.run(scenario())
    assert code == 0
    assert (calls, last_end(root, sid)["reason"]) == (1, "the ACP client went away")
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


# Was a hole (same cause): with stdin still open, the write the model proposed was asked of
# the closed pipe and waited forever, its session's log locked, so another agent (the
# editor restarted it) could not load the session while this one lived.
def test_stdout_closed_with_stdin_open_ends_the_agent_and_frees_the_log(openai_server, tmp_path):
    """The client stops reading while the model thinks and keeps stdin open (a hung editor):
    the agent ends the turn as when the client goes away and exits by itself; another agent
    then loads the session and finishes it."""
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("replace_string", FIX), delay=1.0))
    editor = Editor("approve")

    sid, code = prompt_then_leave(
        editor,
        tmp_path,
        openai_server,
        root,
        lambda: until(lambda: len(openai_server.requests) == 1, "the model call"),
        stdin=False,  # it exits on its own
        stdout=True,
    )
    assert code == 0
    assert last_end(root, sid)["reason"] == "the ACP client went away"
    assert (root / "pkg" / "core.py").read_text() == CORE
    finish(openai_server, 2)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


def test_stdout_closed_while_stdin_stays_open_frees_the_log_and_ends_the_command(
    openai_server, tmp_path
):
    """The client stops reading while a command runs and keeps stdin open (a hung editor):
    once the agent's next write fails, the command is ended and the session's log freed,
    so another agent can load it while this one still lives."""
    root = workspace(tmp_path)
    openai_server.queue(tool_reply(tool_call("run", {"command": SLEEP})))
    editor = Editor("approve")

    async def scenario() -> tuple[str, int]:
        async with grinta_acp(editor, tmp_path, openai_server) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            log = root / ".grinta" / "sessions" / f"{sid}.jsonl"
            await conn.set_session_mode(session_id=sid, mode_id="auto")
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(lambda: (root / "child.pid").exists(), "the command")
            process._transport.get_pipe_transport(1).close()
            # Nothing is written while the command sleeps: a cancel makes the agent answer.
            await conn.cancel(session_id=sid)
            await until(lambda: "session_end" in log.read_text(), "the session's end")
            finish(openai_server)
            second = await asyncio.to_thread(load_and_prompt, tmp_path, openai_server, root, sid)
            assert second == "end_turn"
            code = await leave(process)
            with contextlib.suppress(Exception):
                await turn
            return sid, code

    sid, code = asyncio.run(scenario())
    assert code == 0
    assert_no_orphans(root)


# -- the client killed: both pipes close at once --------------------------------------------

CLIENT = """
import json, os, subprocess, sys
grinta, root, out, err = sys.argv[1:5]
agent = subprocess.Popen([grinta, "acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=open(err, "wb"), cwd=os.environ["REPO"])  # noqa: SIM115
with open(os.path.join(out, "agent.pid"), "w") as f:
    f.write(str(agent.pid))
n = 0
def send(method, params):
    global n
    n += 1
    line = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
    agent.stdin.write((json.dumps(line) + "\\n").encode())
    agent.stdin.flush()
    return n
def call(method, params):
    i = send(method, params)
    while True:
        msg = json.loads(agent.stdout.readline())
        if msg.get("id") == i and "method" not in msg:
            return msg["result"]
call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
sid = call("session/new", {"cwd": root, "mcpServers": []})["sessionId"]
with open(os.path.join(out, "sid"), "w") as f:
    f.write(sid)
call("session/set_mode", {"sessionId": sid, "modeId": "auto"})
send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
while agent.stdout.readline():
    pass
"""


def test_a_client_killed_with_sigkill_while_a_command_runs(openai_server, tmp_path):
    root = workspace(tmp_path)
    out = tmp_path / "client"
    out.mkdir()
    script = out / "client.py"
    script.write_text(textwrap.dedent(CLIENT))
    err = tmp_path / "killed-client-agent.stderr"
    openai_server.queue(tool_reply(tool_call("run", {"command": SLEEP})))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GRINTA_") and k not in ("OPENAI_API_KEY", "VISUAL", "EDITOR")
    }
    env |= {
        "GRINTA_MODEL": "openai/test",
        "GRINTA_API_BASE": openai_server.url,
        "GRINTA_API_KEY": "sk-test-key-for-acp",
        "PYTHONWARNINGS": "always::ResourceWarning",
        "REPO": str(REPO),
    }
    grinta = str(Path(sys.executable).with_name("grinta"))
    client = subprocess.Popen(
        [sys.executable, "-W", "ignore", str(script), grinta, str(root), str(out), str(err)],
        env=env,
    )
    agent_pid = None
    try:
        deadline = time.monotonic() + WAIT
        while not (root / "child.pid").exists():
            assert client.poll() is None, "the client script failed"
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)
        agent_pid = int((out / "agent.pid").read_text())
        client.kill()  # SIGKILL: both of the agent's pipes close at once
        client.wait()
        left = time.monotonic()
        while not gone(agent_pid) and time.monotonic() - left < EXIT:
            time.sleep(0.05)
        print(f"agent exit took {time.monotonic() - left:.2f} s")
        assert gone(agent_pid), f"the agent still runs {EXIT:.0f} s after its client was killed"
    finally:
        if client.poll() is None:
            client.kill()
        if agent_pid is not None and not gone(agent_pid):
            os.kill(agent_pid, signal.SIGKILL)
    text = err.read_text()
    assert not any(mark in text for mark in ("Traceback", *LEFT_OPEN)), text
    assert_no_orphans(root)
    sid = (out / "sid").read_text()
    assert last_end(root, sid)["reason"] == "the ACP client went away"
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


# -- the client leaves while litellm is still being imported ----------------------------------

# ``SLOW_IMPORT_PLAN``: one ``seconds[:fail]`` per attempt to import litellm, the last one
# repeated. Each attempt touches ``<mark>.<n>`` (and ``<mark>``) as it starts and
# ``<mark>.done`` when it imported litellm.
PLANNED_IMPORT = """
import importlib.machinery, os, sys, time

PLAN = os.environ["SLOW_IMPORT_PLAN"].split(",")
MARK = os.environ["SLOW_IMPORT_MARK"]
ATTEMPTS = [0]

# litellm's own loader's exec_module, run as the plan says (its loader is kept, so
# importlib.resources still finds litellm's data files).
def planned(exec_module):

    def run(module):
        ATTEMPTS[0] += 1
        n = ATTEMPTS[0]
        step = PLAN[min(n, len(PLAN)) - 1]
        seconds, _, fail = step.partition(":")
        open(MARK, "w").close()
        open(f"{MARK}.{n}", "w").close()
        time.sleep(float(seconds))
        if fail:
            raise ImportError(f"litellm is broken here (attempt {n})", name="litellm")
        exec_module(module)
        open(f"{MARK}.done", "w").close()

    return run

class PlannedLitellm:
    def find_spec(self, name, path=None, target=None):
        if name != "litellm":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader.exec_module = planned(spec.loader.exec_module)
        return spec

sys.meta_path.insert(0, PlannedLitellm())
"""


def planned_import(tmp_path: Path, plan: str, **more: str) -> tuple[dict[str, str], Path]:
    """The agent's environment for litellm's import to go as ``plan`` says, and its mark."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(PLANNED_IMPORT)
    mark = tmp_path / "importing"
    variables = {"PYTHONPATH": str(site), "SLOW_IMPORT_MARK": str(mark), "SLOW_IMPORT_PLAN": plan}
    return variables | more, mark


def test_a_client_leaving_while_litellm_is_imported_does_not_wait_for_the_import(
    openai_server, tmp_path
):
    """A first call to a local server is sent without litellm, which a thread then imports
    for the calls after it; a client that leaves meanwhile ends the agent at once (with its
    exit handlers run), not when the import ends: this one takes a minute."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "60")
    finish(openai_server)

    async def scenario() -> tuple[str, str, int]:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server, **variables) as (
            conn,
            process,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("what does pkg/core.py do?")]),
                WAIT,
            )
            await until(mark.exists, "litellm's import to start")
            return sid, done.stop_reason, await leave(process)

    sid, stop, code = asyncio.run(scenario())
    assert (stop, code) == ("end_turn", 0)
    assert last_end(root, sid)["reason"] == "finished"
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


def test_a_client_leaving_while_a_turn_waits_for_litellm_does_not_wait_for_the_import(
    openai_server, tmp_path
):
    """A model that litellm must call (a ``gpt-`` name) waits for litellm's import (a minute
    here) before its first call: a client that leaves then ends the turn and the agent at
    once, and the session loads and goes on in the next agent."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "60", GRINTA_MODEL="openai/gpt-4o-mini")

    sid, code = prompt_then_leave(
        Editor("approve"),
        tmp_path,
        openai_server,
        root,
        lambda: until(mark.exists, "litellm's import to start"),
        variables=variables,
    )
    assert code == 0
    assert not openai_server.requests
    assert last_end(root, sid)["reason"] == "the ACP client went away"
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"
