"""DemoModel: a scripted session that fixes the failing test in the raft_kv sample.

Used when no model is configured, and it says so. It reacts to what happens
(a veto, a refused edit, a refused finish) rather than playing a fixed list,
so a person can try approve, edit and veto on it and still get a sensible run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from grinta_jupyter.agent.context import unfence
from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.samples.tasks import DEMO_FIX

NOTICE = (
    "(demo model: no model is configured, so this is a scripted session on the bundled raft_kv sample. "
    "Set GRINTA_MODEL to any litellm model string to use a real model.)"
)
TEST_COMMAND = "python -m pytest"
MAX_TURNS = 12


def _history(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool name, arguments, result) for every tool call so far, in order."""
    results = {
        m.get("tool_call_id"): unfence(str(m.get("content") or ""))
        for m in messages
        if m.get("role") == "tool"
    }
    calls = []
    for message in messages:
        for tool_call in message.get("tool_calls") or []:
            function = tool_call["function"]
            try:
                args = json.loads(function["arguments"])
            except ValueError:
                args = {}
            calls.append((function["name"], args, results.get(tool_call["id"], "")))
    return calls


def _run_tests(text: str) -> ModelReply:
    return reply(text, call("run", command=TEST_COMMAND))


def next_turn(messages: list[dict[str, Any]]) -> ModelReply:
    """The demo's next move, from what happened so far."""
    history = _history(messages)
    if not history:
        return _run_tests(f"{NOTICE}\n\nI'll start by running the test suite to see what fails.")
    tool, _args, result = history[-1]
    fixed = any(t == "replace_string" and r.startswith("replaced") for t, _, r in history)
    vetoed = "The user vetoed" in result
    if result.startswith("finish refused"):
        return _run_tests("Right, I have not verified the change yet. Running the tests.")
    if tool == "replace_string" and vetoed:
        return reply(
            "Understood, I will leave the code as it is.",
            call("finish", summary="Stopped at the user's request; no files were changed."),
        )
    if tool == "run" and vetoed:
        if fixed:
            return reply(
                "Understood.",
                call(
                    "finish",
                    summary="The fix is in place but the user chose not to "
                    "run the tests, so it is unverified.",
                ),
            )
        return reply(
            "Then I'll go straight to the code.",
            call("read", symbol="RaftNode.handle_append_entries"),
        )
    if tool == "run" and not fixed:
        failing = re.search(r"FAILED (\S+)", result)
        name = failing.group(1) if failing else "A test"
        return reply(
            f"{name} fails. The follower's consistency check lives in "
            "RaftNode.handle_append_entries; let me read it.",
            call("read", symbol="RaftNode.handle_append_entries"),
        )
    if tool == "read" and not fixed:
        return reply(
            "The follower only rejects when its entry's term is *older* than prev_log_term, but Raft "
            "requires the terms to match exactly (the Log Matching property). Fixing the comparison:",
            call("replace_string", **DEMO_FIX),
        )
    if tool == "replace_string" and not fixed:  # the edit was refused or failed
        return reply(
            "That edit did not apply; I'll stop here rather than guess.",
            call("finish", summary="Could not apply the fix: " + result.splitlines()[0][:200]),
        )
    if tool == "replace_string":
        return _run_tests("Now the suite again, to check the fix and that nothing else broke.")
    passed = re.search(r"(\d+) passed", result)
    if tool == "run" and passed and "failed" not in result:
        return reply(
            "",
            call(
                "finish",
                summary=(
                    "Fixed RaftNode.handle_append_entries: a follower now rejects AppendEntries unless its entry at "
                    f"prev_log_index has exactly prev_log_term. The suite passes ({passed.group(0)})."
                ),
            ),
        )
    return reply(
        "", call("finish", summary="The tests still fail after the change:\n" + result[-400:])
    )


class DemoModel(ScriptedModel):
    """The scripted demo on raft_kv: run tests, read, fix, re-run, finish (reacting to decisions)."""

    def __init__(self) -> None:
        turns: list[Callable[[list[dict[str, Any]]], ModelReply]] = [next_turn] * MAX_TURNS
        super().__init__(turns, name="demo")
