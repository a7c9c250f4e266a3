"""A whole session through real litellm calls against a local OpenAI-compatible server."""

from __future__ import annotations

import asyncio

from grinta_jupyter.agent import ModelText
from grinta_jupyter.agent.context import unfence
from grinta_jupyter.agent.models import LiteLLMModel, resolve_model
from grinta_jupyter.agent.session import Session
from grinta_jupyter.events.metrics import summarize
from grinta_jupyter.samples.tasks import DEMO_FIX, copy_workspace, get_task
from tests.openai_server import error_reply, tool_call, tool_reply


def test_session_over_litellm_with_split_chunks_rate_limit_and_malformed_json(
    openai_server, tmp_path
):
    root = copy_workspace("raft_kv", tmp_path / "raft_kv")
    openai_server.queue(
        tool_reply(
            tool_call("run", {"command": "python -m pytest"}),
            text="Running the tests first.",
            chunk_size=2,
        ),
        error_reply(429, "slow down", retry_after="0"),
        tool_reply(
            tool_call("replace_string", '{"path": "raft_kv/node.py", "old_string": '), chunk_size=4
        ),
        tool_reply(tool_call("replace_string", DEMO_FIX), chunk_size=5),
        tool_reply(tool_call("run", {"command": "python -m pytest"})),
        tool_reply(tool_call("finish", {"summary": "Fixed the prev_log_term check; 44 passed."})),
    )
    model = LiteLLMModel(
        "openai/test-model", api_base=openai_server.url, api_key="sk-local-test-key", backoff=0.01
    )
    session = Session("fix the failing test", model=model, root=root, policy="auto")

    async def watch() -> list[str]:
        return [u.text async for u in session.updates() if isinstance(u, ModelText)]

    streamed = asyncio.run(watch())

    assert session.end_reason == "finished", [e for e in session.log.events if e.type == "error"]
    assert get_task("raft_kv/fix-failing-test").check(root).passed
    assert "".join(streamed).startswith("Running the tests first.")
    # The malformed call came back to the model as a structured error, not a crash.
    bodies = [r.body for r in openai_server.requests]
    tool_messages = [m for m in bodies[3]["messages"] if m["role"] == "tool"]
    assert unfence(tool_messages[-1]["content"]).startswith("ERROR INVALID_ARGS")
    # The 429 was retried: one more HTTP request than model turns.
    assert len(bodies) == 6  # 5 model turns + the rate-limited attempt
    assert bodies[1]["messages"] == bodies[2]["messages"]
    # Every request offered the toolset's schemas.
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == [
        s["function"]["name"] for s in session.runtime.tool_schemas()
    ]
    metrics = summarize(session.log_path)
    assert metrics["prompt_tokens"] > 0 and metrics["validation_failures"] == {"INVALID_ARGS": 1}
    assert "sk-local-test-key" not in session.log_path.read_text()


def test_model_choice_argument_then_env_then_demo(monkeypatch):
    from grinta_jupyter.agent import make_model

    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    assert make_model().name == "demo"
    monkeypatch.setenv("GRINTA_MODEL", "ollama_chat/qwen2.5-coder:7b")
    assert make_model().name == "ollama_chat/qwen2.5-coder:7b"
    assert make_model("openai/gpt-4o-mini").name == "openai/gpt-4o-mini"
    assert isinstance(resolve_model("openai/x"), LiteLLMModel)


def test_the_demo_models_own_name_chooses_the_demo_model(monkeypatch):
    """``demo`` is the name the demo model shows; given as GRINTA_MODEL or --model it went to
    litellm as a model string, and the session failed with UNKNOWN_MODEL after it started."""
    from grinta_jupyter.agent import make_model
    from grinta_jupyter.agent.models import DemoModel, configured_model
    from grinta_jupyter.config import Config

    assert resolve_model(" demo ") is None
    monkeypatch.setenv("GRINTA_MODEL", "demo")
    assert isinstance(make_model(), DemoModel)
    assert isinstance(configured_model(Config.from_env({"GRINTA_MODEL": "demo"})), DemoModel)
    assert isinstance(resolve_model("demo-coder"), LiteLLMModel)  # only the name itself
