"""``grinta acp`` ending while litellm's background import runs (``_end_without_litellm``),
and a call that needs litellm waiting for that import (``_load_litellm``), attacked: what
the fast exit could skip (the symbol index's save, a command's children), an import that
fails or fails slowly, a cancel during the wait, two sessions waiting, the client's reading
end closed first, and the CLI with a hosted-style model. Real parts only: the agent
subprocess, the ACP SDK's client, tests/openai_server.py; litellm's import is slowed (or
broken) by a ``sitecustomize`` on ``PYTHONPATH``, as in tests/test_attacks_acp_exit.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from acp import text_block

from grinta_jupyter.code import index_store
from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_acp import TASK, WAIT, Editor, grinta_acp, until, workspace
from tests.test_acp_attacks import log_events
from tests.test_attacks_acp_exit import (
    SLEEP,
    assert_no_orphans,
    finish,
    last_end,
    load_and_prompt,
    planned_import,
)
from tests.test_cli_lasting import ENTRY, REPO, env

QUICK = 20.0  # seconds the agent gets to exit once the client left (the import takes 60)
HOSTED = "openai/gpt-4o-mini"  # a name litellm knows: its calls wait for litellm


async def leave_quickly(process: Any, *, stdout: bool = False) -> int:
    """The client closes its ends; the agent's exit status, which must come within QUICK s."""
    if stdout:
        process._transport.get_pipe_transport(1).close()
    process.stdin.close()
    started = time.monotonic()
    try:
        code = await asyncio.wait_for(process.wait(), QUICK)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise AssertionError(
            f"the agent did not exit within {QUICK:.0f} s of the client leaving"
        ) from None
    print(f"agent exit took {time.monotonic() - started:.2f} s")
    return code


def errors(root: Path, sid: str) -> list[dict[str, Any]]:
    return [e for e in log_events(root, sid) if e["type"] == "error"]


# -- what the fast exit must still do -------------------------------------------------------


def test_the_symbol_index_a_session_changed_is_saved_when_the_agent_ends_under_the_import(
    openai_server, tmp_path
):
    """A session resolves a symbol (the index is built and stored), edits the file to add
    one, resolves it (the index changes, too soon after its save to be saved again), and
    finishes; the client leaves while litellm's import (a minute) runs. The exit handlers
    the fast exit runs must save that change: the store is fresh for the next agent."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "60")
    add_sub = {
        "path": "pkg/core.py",
        "old_string": "return a - b",
        "new_string": "return a + b\n\n\ndef sub(a, b):\n    return a - b",
    }
    openai_server.queue(
        tool_reply(tool_call("read", {"symbol": "add"})),
        tool_reply(tool_call("replace_string", add_sub)),
        tool_reply(tool_call("read", {"symbol": "sub"})),
    )
    finish(openai_server, 3)  # a finish its guard refuses (no test run) is asked again

    async def scenario() -> tuple[str, str, int]:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server, **variables) as (
            conn,
            process,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            await until(mark.exists, "litellm's import to start")
            assert not Path(f"{mark}.done").exists()
            return sid, done.stop_reason, await leave_quickly(process)

    sid, stop, code = asyncio.run(scenario())
    assert (stop, code) == ("end_turn", 0)
    assert len(openai_server.requests) >= 4
    assert "def sub(a, b)" in (root / "pkg" / "core.py").read_text()
    assert last_end(root, sid)["reason"] == "finished"
    folder = root / index_store.STORE_DIR
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")], "a temp file left"
    stored, status = index_store.load(root, index_store.fingerprint())
    assert stored is not None, status
    assert stored.settle()
    assert "sub" in stored.names, "the index's last change was not saved at exit"
    st = os.stat(root / "pkg" / "core.py")
    at = stored.paths.index("pkg/core.py")
    assert stored.stamps[at] == (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def test_a_command_and_its_child_end_when_the_client_leaves_during_the_import(
    openai_server, tmp_path
):
    """The first call (sent without litellm) starts a command with a child; the client
    leaves while it runs and litellm's import (a minute) is under way: the agent exits at
    once, and the command and its child are gone."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "60")
    openai_server.queue(tool_reply(tool_call("run", {"command": SLEEP})))

    async def scenario() -> tuple[str, int]:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server, **variables) as (
            conn,
            process,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            await conn.set_session_mode(session_id=sid, mode_id="auto")
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(lambda: (root / "child.pid").exists(), "the command to start")
            await until(mark.exists, "litellm's import to start")
            code = await leave_quickly(process)
            with contextlib.suppress(Exception):
                await turn
            return sid, code

    sid, code = asyncio.run(scenario())
    assert code == 0
    assert_no_orphans(root)
    assert last_end(root, sid)["reason"] == "the ACP client went away"
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


# -- the import fails --------------------------------------------------------------------------


def test_a_broken_litellm_ends_the_turn_with_a_model_error_and_the_agent_exits(
    openai_server, tmp_path
):
    """litellm cannot be imported (a broken install): a hosted model's call, which needs
    it, must end the turn (not wait forever) with an error event in the log that names
    the problem, send nothing, and the agent exit cleanly when the client leaves."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "1:fail", GRINTA_MODEL=HOSTED)
    editor = Editor("approve")

    async def scenario() -> tuple[str, str, int]:
        # A broken install is an internal error: its traceback on stderr is the diagnosis.
        async with grinta_acp(
            editor, tmp_path, openai_server, stderr_must_not_hold=(), **variables
        ) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            done = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            return sid, done.stop_reason, await leave_quickly(process)

    sid, stop, code = asyncio.run(scenario())
    assert (stop, code) == ("end_turn", 0)
    assert mark.exists()
    assert not openai_server.requests
    found = errors(root, sid)
    assert found, "no error event in the session's log"
    assert "litellm" in found[-1]["message"], found[-1]
    assert last_end(root, sid)["reason"] == "error"
    assert "litellm" in editor.text(), editor.text()


def test_a_failed_import_is_said_at_once_and_the_next_prompt_retries_it_cancellably(
    openai_server, tmp_path
):
    """litellm's import fails after 2 s in the background thread: the waiting call says so
    at once (it does not import again in a worker the loop's end would wait for). The next
    prompt tries the import again (a minute here); a client that leaves during that try
    sees the agent exit at once."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "2:fail,60:fail", GRINTA_MODEL=HOSTED)

    async def scenario() -> tuple[str, str, int]:
        async with grinta_acp(
            Editor("approve"), tmp_path, openai_server, stderr_must_not_hold=(), **variables
        ) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            first = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block(TASK)]), WAIT
            )
            assert not Path(f"{mark}.2").exists(), "the failed import was tried again at once"
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go on")]))
            await until(Path(f"{mark}.2").exists, "litellm's second import to start")
            code = await leave_quickly(process)
            with contextlib.suppress(Exception):
                await turn
            return sid, first.stop_reason, code

    sid, first, code = asyncio.run(scenario())
    assert (first, code) == ("end_turn", 0)
    assert not openai_server.requests
    assert "litellm is broken here (attempt 1)" in errors(root, sid)[0]["message"]


# -- waiting for the import ---------------------------------------------------------------------


def test_a_cancel_while_the_first_call_waits_for_the_import_then_a_new_prompt_works(
    openai_server, tmp_path
):
    """session/cancel while a hosted model's first call waits for litellm (6 s here): the
    turn ends "cancelled" at once, before the import ends; a new prompt on the same
    connection waits for the import and then calls the server, and the session finishes."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "6", GRINTA_MODEL=HOSTED)
    done_mark = Path(f"{mark}.done")

    async def scenario() -> tuple[str, float, bool, str, int]:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server, **variables) as (
            conn,
            process,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(mark.exists, "litellm's import to start")
            await asyncio.sleep(0.3)
            asked = time.monotonic()
            await conn.cancel(session_id=sid)
            first = (await asyncio.wait_for(turn, WAIT)).stop_reason
            took = time.monotonic() - asked
            imported_by_then = done_mark.exists()
            finish(openai_server)
            again = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("go on")]), WAIT
            )
            return first, took, imported_by_then, again.stop_reason, await leave_quickly(process)

    first, took, imported_by_then, again, code = asyncio.run(scenario())
    assert first == "cancelled"
    assert not imported_by_then, f"the cancel waited for the import ({took:.2f} s)"
    assert (again, code) == ("end_turn", 0)
    assert done_mark.exists()
    assert len(openai_server.requests) == 1
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"


def test_two_sessions_waiting_for_the_import_when_the_client_leaves(openai_server, tmp_path):
    """Two sessions on one connection, each with a hosted model's first call waiting for
    litellm (a minute): the client leaves; the agent exits at once, both sessions end as
    left by the client, nothing was sent, and each loads and goes on in a new agent."""
    roots = [workspace(tmp_path / name) for name in ("one", "two")]
    variables, mark = planned_import(tmp_path, "60", GRINTA_MODEL=HOSTED)

    async def scenario() -> tuple[list[str], int]:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server, **variables) as (
            conn,
            process,
        ):
            sids = [(await conn.new_session(cwd=str(r))).session_id for r in roots]
            turns = [
                asyncio.ensure_future(conn.prompt(session_id=s, prompt=[text_block(TASK)]))
                for s in sids
            ]
            await until(mark.exists, "litellm's import to start")
            for root, sid in zip(roots, sids, strict=True):
                log = root / ".grinta" / "sessions" / f"{sid}.jsonl"
                await until(log.exists, "both sessions to start")
            await asyncio.sleep(0.5)
            code = await leave_quickly(process)
            for turn in turns:
                with contextlib.suppress(Exception):
                    await turn
            return sids, code

    sids, code = asyncio.run(scenario())
    assert code == 0
    assert not openai_server.requests
    assert not Path(f"{mark}.2").exists(), "litellm was imported twice"
    for root, sid in zip(roots, sids, strict=True):
        assert last_end(root, sid)["reason"] == "the ACP client went away"
        finish(openai_server)
        assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


def test_stdout_closed_first_while_a_call_waits_for_the_import(openai_server, tmp_path):
    """The client stops reading (closes the agent's stdout), then closes stdin, while a
    hosted model's first call waits for litellm (a minute): the agent exits at once."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "60", GRINTA_MODEL=HOSTED)

    async def scenario() -> tuple[str, int]:
        async with grinta_acp(Editor("approve"), tmp_path, openai_server, **variables) as (
            conn,
            process,
        ):
            sid = (await conn.new_session(cwd=str(root))).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
            await until(mark.exists, "litellm's import to start")
            code = await leave_quickly(process, stdout=True)
            turn.cancel()
            with contextlib.suppress(BaseException):
                await turn
            return sid, code

    sid, code = asyncio.run(scenario())
    assert code == 0
    assert not openai_server.requests
    assert last_end(root, sid)["reason"] == "the ACP client went away"
    finish(openai_server)
    assert load_and_prompt(tmp_path, openai_server, root, sid) == "end_turn"


# -- the CLI ------------------------------------------------------------------------------------


def test_the_cli_with_a_hosted_style_model_waits_for_litellm_then_calls_the_server(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """``grinta run`` with ``openai/gpt-4o-mini`` on the local server: its first call waits
    for litellm's import (3 s here) and then goes to the server; the run finishes, status 0."""
    root = workspace(tmp_path)
    variables, mark = planned_import(tmp_path, "3")
    finish(openai_server)
    started = time.monotonic()
    done = subprocess.run(
        [*ENTRY, "run", "say hello", "--auto", "--root", str(root), "--model", HOSTED],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env(None, GRINTA_API_BASE=openai_server.url, GRINTA_API_KEY="sk-test-key", **variables),
        timeout=120,
    )
    took = time.monotonic() - started
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 0, done.stderr + done.stdout
    assert mark.exists() and Path(f"{mark}.done").exists()
    assert not Path(f"{mark}.2").exists(), "litellm was imported twice"
    assert len(openai_server.requests) == 1
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"
    assert took < 60, f"the run took {took:.1f} s"
