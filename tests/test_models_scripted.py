"""ScriptedModel: the deterministic model the session tests run against."""

from __future__ import annotations

import asyncio
import json

import pytest

from grinta_jupyter.agent.models import (
    Model,
    ModelError,
    ModelReply,
    ScriptedModel,
    ToolCall,
    Usage,
    call,
    raw_call,
    reply,
)

MESSAGES = [{"role": "user", "content": "fix the bug"}]
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


def complete(model: ScriptedModel, messages=MESSAGES, on_text=None) -> ModelReply:
    return asyncio.run(model.complete(messages, TOOLS, on_text))


def test_plays_turns_in_order_and_records_requests() -> None:
    model = ScriptedModel([reply("first"), reply("second")])

    assert isinstance(model, Model) and model.name == "scripted"
    assert [complete(model).text, complete(model).text] == ["first", "second"]
    assert model.requests == [{"messages": MESSAGES, "tools": TOOLS}] * 2
    assert model.remaining == 0


def test_requests_are_copies() -> None:
    model = ScriptedModel([reply("ok")])
    messages = [{"role": "user", "content": "before"}]

    complete(model, messages)
    messages[0]["content"] = "after"

    assert model.requests[0]["messages"][0]["content"] == "before"


def test_callable_turn_sees_the_messages() -> None:
    model = ScriptedModel([lambda messages: reply(f"you said: {messages[-1]['content']}")])

    assert complete(model).text == "you said: fix the bug"


def test_tool_calls_get_stable_unique_ids() -> None:
    model = ScriptedModel(
        [
            reply("", call("read", path="a.py"), call("read", path="b.py")),
            reply("", call("finish", summary="done")),
            reply("", ToolCall("mine", "finish", "{}")),
        ]
    )

    ids = [[tc.id for tc in complete(model).tool_calls] for _ in range(3)]

    assert ids == [["call_0_0", "call_0_1"], ["call_1_0"], ["mine"]]


def test_call_encodes_arguments_as_json_and_raw_call_keeps_text() -> None:
    assert json.loads(call("replace_string", path="a.py", old_string="x").arguments) == {
        "path": "a.py",
        "old_string": "x",
    }
    model = ScriptedModel([reply("", raw_call("create", '{"path": "a.py", "content": '))])

    assert complete(model).tool_calls[0].arguments == '{"path": "a.py", "content": '


def test_reply_sets_finish_reason() -> None:
    assert reply("hi").finish_reason == "stop"
    assert reply("", call("finish", summary="s")).finish_reason == "tool_calls"
    assert reply("x", finish_reason="length").finish_reason == "length"


def test_text_is_streamed_in_a_few_chunks() -> None:
    text = "I will read the file and then fix the failing assertion."
    deltas: list[str] = []

    result = complete(ScriptedModel([reply(text)]), on_text=deltas.append)

    assert result.text == text and "".join(deltas) == text and 2 <= len(deltas) <= 4


def test_script_turns_are_not_mutated() -> None:
    turn = ModelReply("t", [call("read", path="a.py")], Usage(3, 4))
    model = ScriptedModel([turn])

    result = complete(model)

    assert turn.tool_calls[0].id == "" and result.tool_calls[0].id == "call_0_0"
    assert result.usage == Usage(3, 4) and result.usage is not turn.usage


def test_exhausted_script_raises_bad_response() -> None:
    model = ScriptedModel([reply("only")], name="two-step")
    complete(model)

    with pytest.raises(ModelError) as info:
        complete(model)

    assert (info.value.code, info.value.retryable) == ("BAD_RESPONSE", False)
    assert "script exhausted" in info.value.message


def test_model_error_rejects_unknown_codes() -> None:
    with pytest.raises(ValueError):
        ModelError("OOPS", "typo in a code")
