"""DemoModel: a scripted session that fixes the failing test in the raft_kv sample.

Used when no model is configured, and it says so. It reacts to what happens
(a veto, a refused edit) rather than playing blindly, so a person can try
approve, edit and veto on it.
"""

from __future__ import annotations

import json
import re

from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.samples.tasks import DEMO_FIX

NOTICE = (
    "(demo model: no model is configured, so this is a scripted session on the bundled raft_kv sample. "
    "Set GRINTA_MODEL to any litellm model string to use a real model.)"
)
TEST_COMMAND = "python -m pytest"


def _last_tool_result(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "tool":
            return str(message.get("content") or "")
    return ""


def _vetoed(messages: list[dict]) -> bool:
    return "The user vetoed" in _last_tool_result(messages)


def _run_tests(messages: list[dict]) -> ModelReply:
    return reply(
        f"{NOTICE}\n\nI'll start by running the test suite to see what fails.",
        call("run", command=TEST_COMMAND),
    )


def _read_handler(messages: list[dict]) -> ModelReply:
    result = _last_tool_result(messages)
    failing = re.search(r"FAILED (\S+)", result)
    name = failing.group(1) if failing else "the failing test"
    return reply(
        f"{name} fails. The follower's consistency check lives in RaftNode.handle_append_entries; "
        "let me read it.",
        call("read", symbol="RaftNode.handle_append_entries"),
    )


def _fix(messages: list[dict]) -> ModelReply:
    if _vetoed(messages):
        return reply(
            "Understood, I will leave the code as it is.",
            call("finish", summary="Stopped at the user's request; no files were changed."),
        )
    return reply(
        "The follower only rejects when its entry's term is *older* than prev_log_term, but Raft "
        "requires the terms to match exactly (the Log Matching property). Fixing the comparison:",
        call("replace_string", **DEMO_FIX),
    )


def _rerun(messages: list[dict]) -> ModelReply:
    if _vetoed(messages):
        return reply(
            "Understood, I will not change the code.",
            call("finish", summary="The user vetoed the fix; no files were changed."),
        )
    return reply(
        "Now the suite again, to check the fix and that nothing else broke.",
        call("run", command=TEST_COMMAND),
    )


def _finish(messages: list[dict]) -> ModelReply:
    result = _last_tool_result(messages)
    if _vetoed(messages):
        return reply(
            "Understood.",
            call(
                "finish",
                summary="The user vetoed the test run; the fix is in place but unverified.",
            ),
        )
    passed = re.search(r"(\d+) passed", result)
    if passed and "failed" not in result:
        summary = (
            f"Fixed RaftNode.handle_append_entries: a follower now rejects AppendEntries unless its "
            f"entry at prev_log_index has exactly prev_log_term. The suite passes ({passed.group(0)})."
        )
    else:
        summary = (
            "Changed the prev_log_term check in RaftNode.handle_append_entries; tests still fail:\n"
            + result[-400:]
        )
    return reply("", call("finish", summary=summary))


class DemoModel(ScriptedModel):
    """The scripted demo on raft_kv: run tests, read, fix, re-run, finish."""

    def __init__(self) -> None:
        super().__init__([_run_tests, _read_handler, _fix, _rerun, _finish], name="demo")


def demo_fix_args() -> str:
    return json.dumps(DEMO_FIX)
