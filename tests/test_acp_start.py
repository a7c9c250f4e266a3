"""``grinta acp`` starts the counting helper first, as ``grinta run`` does.

A session counts every request's tokens before sending it (the log records them), and
loading o200k in the agent's process held the interpreter's lock for 0.6-0.8 s before the
first prompt's first request. The agent starts the counting helper
(``runtime/counting.py``) before its own imports: the first request goes out without
tiktoken loaded in the agent's process, and the counts logged are the encoding's.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from acp import text_block

from grinta_jupyter.agent.context import count_request_tokens
from grinta_jupyter.events import models as ev
from grinta_jupyter.events.log import read_log
from tests.openai_server import OpenAIServer, stall_reply, tool_call, tool_reply
from tests.test_acp import WAIT, Editor, grinta_acp, until, workspace


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps")
def test_the_first_request_goes_out_before_the_agent_loads_the_encoding(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen: dict[str, object] = {}

    async def scenario(server: OpenAIServer) -> None:
        async with grinta_acp(Editor(), tmp_path, server) as (conn, process):
            sid = (await conn.new_session(cwd=str(root))).session_id
            prompt = asyncio.ensure_future(
                conn.prompt(session_id=sid, prompt=[text_block("explain pkg/core.py")])
            )
            await until(lambda: server.requests, "the first request")
            # While the first reply stalls: tiktoken's extension is not in the agent.
            seen["mapped"] = "_tiktoken" in Path(f"/proc/{process.pid}/maps").read_text()
            helpers = subprocess.run(
                ["pgrep", "-P", str(process.pid), "-f", "o200k_base"],
                capture_output=True,
                text=True,
                check=False,
            )
            seen["helper"] = helpers.stdout.strip()
            await conn.cancel(session_id=sid)
            await asyncio.wait_for(prompt, WAIT)

    with OpenAIServer() as server:
        server.queue(stall_reply(30))
        asyncio.run(scenario(server))
    assert seen["mapped"] is False, "the encoding was loaded in the agent's process"
    assert seen["helper"], "no counting helper beside the agent"


def test_the_counts_of_an_acp_session_are_the_encoding_s(tmp_path: Path) -> None:
    """Each request's logged count is what this process's encoding counts for the request
    the server received."""
    root = workspace(tmp_path)

    async def scenario(server: OpenAIServer) -> str:
        async with grinta_acp(Editor(), tmp_path, server) as (conn, _):
            sid = (await conn.new_session(cwd=str(root))).session_id
            reply = await asyncio.wait_for(
                conn.prompt(session_id=sid, prompt=[text_block("explain pkg/core.py")]), WAIT
            )
            return reply.stop_reason

    with OpenAIServer() as server:
        server.queue(
            tool_reply(
                tool_call("read", {"path": "pkg/core.py"}), text="Reading caf\u00e9 \U0001f600"
            ),
            tool_reply(tool_call("finish", {"summary": "It adds two numbers."})),
        )
        assert asyncio.run(scenario(server)) == "end_turn"
        received = [r.body for r in server.requests]
    logs = sorted((root / ".grinta" / "sessions").glob("*.jsonl"))
    assert len(logs) == 1, logs
    logged = [e.tokens for e in read_log(logs[0]) if isinstance(e, ev.ModelRequest)]
    assert len(logged) == len(received) >= 2
    expected = [count_request_tokens(body["messages"], body.get("tools", [])) for body in received]
    assert logged == expected
