"""Proposals are typed, immutable values; tools return what they staged instead of
writing it into the context; the runtime, not the proposal, records commits."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import Field

from grinta_jupyter import Runtime
from grinta_jupyter.runtime.proposal import (
    CommandProposal,
    FileChange,
    FinishProposal,
    Observation,
    Proposal,
    ReadProposal,
    WriteProposal,
)
from grinta_jupyter.tools import intent_toolset, read, run
from grinta_jupyter.tools.base import (
    Args,
    CommandResult,
    ReadResult,
    ToolContext,
    Toolset,
    ToolSpec,
)

SOURCE = """\
class Store:
    def get(self, key):
        return self.data[key]


class Cache:
    def get(self, key):
        return None
"""

COMMON = [
    *("tool", "args", "kind", "ok", "error", "changes", "output", "summary", "resolutions"),
    *("command", "timeout", "id", "diff", "paths", "needs_approval"),
]


@pytest.fixture
def rt(ws):
    (ws / "store.py").write_text(SOURCE)
    return Runtime(ws)


def _all_kinds(rt: Runtime) -> dict[str, Proposal]:
    return {
        "read": rt.propose("read", {"path": "store.py"}),
        "write": rt.propose(
            "replace_string", {"path": "store.py", "old_string": "None", "new_string": "0"}
        ),
        "command": rt.propose("run", {"command": "echo hi", "timeout": 5}),
        "finish": rt.propose("finish", {"summary": "done\nverified by tests"}),
    }


def test_each_kind_has_its_own_type_and_answers_every_attribute(rt):
    proposals = _all_kinds(rt)
    types = {"read": ReadProposal, "write": WriteProposal, "command": CommandProposal}
    types["finish"] = FinishProposal
    for kind, p in proposals.items():
        assert type(p) is types[kind] and p.kind == kind and p.ok, p.error
        for name in COMMON:
            getattr(p, name)
        assert p.needs_approval == (kind in ("write", "command"))
    read_p, write_p = proposals["read"], proposals["write"]
    command_p, finish_p = proposals["command"], proposals["finish"]
    assert read_p.output.startswith("store.py (lines 1-8 of 8)") and read_p.changes == ()
    assert read_p.diff == "" and read_p.paths == [] and read_p.command is None
    assert write_p.output is None and write_p.command is None and write_p.timeout is None
    assert write_p.paths == ["store.py"] and "+        return 0" in write_p.diff
    assert isinstance(write_p.changes, tuple) and isinstance(write_p.changes[0], FileChange)
    assert command_p.command == "echo hi" and command_p.timeout == 5 and command_p.changes == ()
    assert command_p.summary == "run: echo hi" and command_p.output is None
    assert finish_p.output == "done\nverified by tests" and finish_p.summary == "done"


def test_proposals_changes_and_observations_are_immutable(rt):
    for p in _all_kinds(rt).values():
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.error = None  # type: ignore[misc]
        assert not hasattr(p, "state")  # the runtime records commits, not the proposal
    write_p = rt.propose(
        "replace_string", {"path": "store.py", "old_string": "None", "new_string": "0"}
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        write_p.changes[0].new_bytes = b"something else"  # type: ignore[misc]
    with pytest.raises(AttributeError):  # a tuple: nothing can be slipped in after review
        write_p.changes.append(write_p.changes[0])  # type: ignore[attr-defined]
    obs = rt.commit(write_p)
    with pytest.raises(dataclasses.FrozenInstanceError):
        obs.ok = False  # type: ignore[misc]


def test_refusals_keep_their_kind_and_carry_their_error(rt):
    unknown = rt.propose("raed", {"path": "store.py"})
    assert type(unknown) is ReadProposal and unknown.error.code == "UNKNOWN_TOOL"
    missing = rt.propose(
        "replace_string", {"path": "store.py", "old_string": "zz", "new_string": "y"}
    )
    assert type(missing) is WriteProposal and missing.error.code == "NOT_FOUND"
    assert missing.changes == () and missing.summary == missing.error.message
    bad_syntax = rt.propose(
        "replace_string", {"path": "store.py", "old_string": "None", "new_string": "None)"}
    )
    assert bad_syntax.error.code == "SYNTAX_ERROR"
    assert bad_syntax.paths == ["store.py"]  # what was refused stays visible to the reviewer
    empty = rt.propose("run", {"command": "  "})
    assert type(empty) is CommandProposal and empty.command is None


def test_proposals_compare_by_identity(rt):
    args = {"path": "store.py"}
    first, second = rt.propose("read", args), rt.propose("read", args)
    assert first != second and first.id != second.id
    assert len({first, second, first}) == 2


@pytest.mark.parametrize("kind", ["read", "write", "command", "finish"])
def test_a_proposal_is_committed_at_most_once(rt, kind):
    p = _all_kinds(rt)[kind]
    assert rt.commit(p).ok
    again = rt.commit(p)
    assert not again.ok and again.error.code == "ALREADY_COMMITTED"
    assert again.proposal_id == p.id


def test_a_failed_commit_leaves_the_proposal_committable(rt, ws):
    p = rt.propose("replace_string", {"path": "store.py", "old_string": "None", "new_string": "0"})
    (ws / "store.py").write_text(SOURCE + "\n# edited by the user\n")
    assert rt.commit(p).error.code == "STALE_FILE"
    (ws / "store.py").write_text(SOURCE)  # the user undoes their edit: the bytes match again
    assert rt.commit(p).ok


def test_resolutions_come_back_even_when_staging_fails(rt):
    p = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "Store.get",
                    "action": "replace",
                    "new_source": "def get(self, key):\n    return 1",
                },
                {"symbol": "get", "action": "delete"},
            ]
        },
    )
    assert p.error.code == "AMBIGUOUS_SYMBOL" and p.error.message.startswith("edit 2 of 2 (get)")
    assert [r.target for r in p.resolutions] == ["Store.get", "get"]
    assert p.resolutions[0].chosen == "store.py:2 method Store.get"
    assert p.resolutions[1].chosen is None and len(p.resolutions[1].candidates) == 2
    ok = rt.propose("read", {"symbol": "Store.get"})
    assert ok.ok and [r.chosen for r in ok.resolutions] == ["store.py:2 method Store.get"]


def test_stage_functions_return_their_result_and_leave_only_staged_files(rt):
    ctx = ToolContext(rt.workspace, rt.settings, lambda: rt.symbols)
    result = read.stage(read.ReadArgs(symbol="Store.get"), ctx)
    assert isinstance(result, ReadResult) and "def get(self, key):" in result.output
    assert result.resolutions[0].target == "Store.get"
    command = run.stage(run.RunArgs(command="true", timeout=1e9), ctx)
    assert command == CommandResult("true", rt.settings.run_max_timeout, "run: true")
    assert set(vars(ctx)) == {"workspace", "settings", "_symbols", "staged", "cancel"}
    assert ctx.staged == {}


class _NoteArgs(Args):
    text: str = Field(description="A note.")


def test_a_tool_returning_the_wrong_kind_of_result_is_an_internal_error(rt, ws):
    def stage(args: _NoteArgs, ctx: ToolContext) -> ReadResult:
        return ReadResult(args.text)

    liar = ToolSpec(name="note", kind="write", description="d", args=_NoteArgs, stage=stage)
    tools = Toolset.of("test", [*intent_toolset().tools.values(), liar])
    p = Runtime(ws, toolset=tools).propose("note", {"text": "hello"})
    assert type(p) is WriteProposal and p.error.code == "INTERNAL_ERROR"
    assert "note is a write tool but staged a ReadResult" in p.error.message


def test_observation_failure_is_a_value(rt):
    p = rt.propose("raed", {})
    obs = Observation.failure(p.error, p.id)
    assert not obs.ok and obs.output.startswith("ERROR UNKNOWN_TOOL") and obs.proposal_id == p.id
