"""What the session caches between turns gives what computing everything again gives.

The schemas a runtime offers, the request a context renders (messages, masking,
digest, token count) and the ModelRequest events a whole session records are
compared with the plain computations (``Toolset.schemas``, ``digest``,
``count_request_tokens``) turn after turn; speed itself is benchmarks/bench_session.py's.
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.context import (
    MASK_NOTE,
    Context,
    count_request_tokens,
    digest,
)
from grinta_jupyter.agent.guards import Limits, StuckDetector
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.events import models as ev
from grinta_jupyter.tools import broad_toolset, intent_toolset
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset
from grinta_jupyter.tools.tokens import count_tokens

# -- tool schemas ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "toolset",
    [intent_toolset, broad_toolset, lambda: kernel_toolset(DictNamespace({"x": 1}))],
    ids=["intent", "broad", "kernel"],
)
def test_cached_schemas_are_the_toolsets_own(tmp_path, toolset):
    runtime = Runtime(tmp_path, toolset())
    expected = runtime.toolset.schemas()
    assert runtime.tool_schemas() == expected
    assert runtime.tool_schemas() == expected  # served from the cache


def test_a_caller_changing_the_schemas_changes_nothing_served_later(tmp_path):
    runtime = Runtime(tmp_path)
    first = runtime.tool_schemas()
    first[0]["function"]["description"] = "tampered"
    first.pop()
    assert runtime.tool_schemas() == runtime.toolset.schemas()


def test_schemas_follow_a_replaced_toolset_or_tool(tmp_path):
    runtime = Runtime(tmp_path)
    runtime.tool_schemas()
    runtime.toolset = broad_toolset()
    assert runtime.tool_schemas() == broad_toolset().schemas()

    runtime.toolset = intent_toolset()
    runtime.tool_schemas()
    read = runtime.toolset.tools["read"]
    runtime.toolset.tools["read"] = dataclasses.replace(read, description="Read a file.")
    assert runtime.tool_schemas()[0]["function"]["description"] == "Read a file."

    del runtime.toolset.tools["search"]
    names = [s["function"]["name"] for s in runtime.tool_schemas()]
    assert "search" not in names and names == list(runtime.toolset.tools)


# -- the rendered request -----------------------------------------------------------------

# Contents chosen to sit on the edges of the per-message token pieces: JSON punctuation
# at the ends, special-token names, non-ASCII, escapes, digits, spaces, nothing at all.
AWKWARD = [
    "",
    "plain words",
    '"},{"role":"user"',
    "ends with punctuation },{",
    "<|endoftext|> and <|im_start|>",
    "naïve café 東京 🚀 \u2028",
    "line\nbreaks\r\n\ttabs \\ backslash",
    "12345678901234567890",
    "   ",
    "trailing space ",
    "{",
    "'s 've 're",
]


def reference_messages(context: Context) -> tuple[list[dict[str, Any]], int]:
    """The request as rendered before the renderer kept anything between turns."""
    tool_indexes = [i for i, m in enumerate(context.history) if m["role"] == "tool"]
    masked = set(tool_indexes[: max(0, len(tool_indexes) - context.keep_observations)])
    rendered = [
        {"role": "system", "content": context.system},
        {"role": "user", "content": context.task},
    ]
    for i, message in enumerate(context.history):
        if i in masked:
            summary = context.summaries.get(message["tool_call_id"], "")
            message = {**message, "content": MASK_NOTE.format(summary=summary)}
        rendered.append(message)
    return rendered, len(masked)


def assert_request_is_the_reference(context: Context) -> None:
    request = context.request()
    messages, masked = reference_messages(context)
    assert request.messages == messages
    assert request.masked == masked
    assert request.digest == digest(messages)
    assert request.tokens + count_tokens("[]") == count_request_tokens(messages, [])


def grow(context: Context, rng: random.Random, turns: int, start: int = 0) -> None:
    """Add ``turns`` model turns of random shapes, checking the request after each."""
    for turn in range(start, start + turns):
        text = rng.choice(AWKWARD)
        calls = [
            {"id": f"c{turn}_{n}", "name": "read", "arguments": json.dumps({"path": text})}
            for n in range(rng.choice([0, 1, 1, 2]))
        ]
        context.add_assistant(text, calls)
        for c in calls:
            output = rng.choice(AWKWARD) * rng.randint(1, 3)
            notes = ["[guard] a note"] if rng.random() < 0.2 else []
            context.add_tool_result(
                c["id"], "read", output, f"read {text}", notes=notes, data=rng.random() < 0.8
            )
        if not calls:
            context.add_user(rng.choice(AWKWARD))
        assert_request_is_the_reference(context)


@pytest.mark.parametrize("keep", [5, 1, 0, 3, -1])
def test_the_request_matches_a_full_rendering_turn_after_turn(keep):
    context = Context.start("/w", "fix <|endoftext|> 東京 },{", keep)
    assert_request_is_the_reference(context)  # the task alone: it is the last message
    grow(context, random.Random(keep), 60)


def test_the_request_is_rendered_anew_when_the_history_is_rewritten():
    context = Context.start("/w", "task", 2)
    rng = random.Random(7)
    grow(context, rng, 30)
    del context.history[10:]  # a rewind
    assert_request_is_the_reference(context)
    grow(context, rng, 10, start=100)
    del context.history[-6:]  # a rewind, then new turns past where the old ones were folded
    assert_request_is_the_reference(context)
    grow(context, rng, 10, start=200)
    context.keep_observations = 4
    assert_request_is_the_reference(context)
    context.task = "another task"
    assert_request_is_the_reference(context)
    context.history.clear()
    assert_request_is_the_reference(context)


def test_a_call_id_used_twice_masks_both_results_with_the_latest_summary():
    context = Context.start("/w", "task", 1)
    for turn, call_id in enumerate(["same", "other", "third", "same", "fifth"]):
        context.add_assistant("", [{"id": call_id, "name": "read", "arguments": "{}"}])
        context.add_tool_result(call_id, "read", f"output {turn}", f"summary {turn}")
        assert_request_is_the_reference(context)


def test_messages_a_model_changes_do_not_change_the_next_request():
    context = Context.start("/w", "task", 1)
    grow(context, random.Random(3), 20)
    context.request().messages.clear()
    assert_request_is_the_reference(context)


def test_special_token_names_are_counted_as_text():
    """A file holding ``<|endoftext|>`` is text to the model (counting it once raised)."""
    assert count_tokens("<|endoftext|>") > 1


# -- whole sessions -----------------------------------------------------------------------


def test_every_request_event_records_the_request_the_model_got(tmp_path):
    """The ModelRequest events: the digest and tokens of what the model was sent."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("VALUE = 1  # <|endoftext|> },{\n")
    cycle = [
        reply("Look.", call("read", path="a.py")),
        reply("", call("replace_string", path="a.py", old_string="VALUE = 1", new_string="VALUE = 2")),
        reply("Find.", call("search", query="VALUE")),
        reply("", call("replace_string", path="a.py", old_string="VALUE = 2", new_string="VALUE = 1")),
        reply("Hm."),
    ]  # fmt: skip
    model = ScriptedModel([cycle[i % len(cycle)] for i in range(40)])
    limits = Limits(max_steps=None, max_model_turns_without_tool=3)
    session = Session(
        "toggle", model=model, root=root, policy="auto", limits=limits, keep_observations=3
    )
    session.run_sync()
    requests = [e for e in session.log.events if isinstance(e, ev.ModelRequest)]
    assert len(requests) == len(model.requests) > 30
    for event, sent in zip(requests, model.requests, strict=True):
        assert event.messages == len(sent["messages"])
        assert event.digest == digest(sent["messages"])
        assert event.tokens == count_request_tokens(sent["messages"], sent["tools"])
    assert requests[-1].masked > 20
    assert all(step.observation and step.observation.ok for step in session.steps)


# -- the stuck detector ---------------------------------------------------------------------


def test_a_repeat_after_a_long_history_is_still_seen(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    runtime = Runtime(tmp_path)
    detector = StuckDetector(Limits())
    for n in range(40):
        proposal = runtime.propose("search", {"query": f"x{n}"})
        assert detector.observe(proposal, runtime.commit(proposal)) is None
    firings = []
    for _ in range(3):
        proposal = runtime.propose("read", {"path": "a.py"})
        firings.append(detector.observe(proposal, runtime.commit(proposal)))
    assert firings[:2] == [None, None]
    assert firings[2] is not None and firings[2].guard == "stuck_repeat"
