"""resolve_model: argument, then GRINTA_MODEL, then None (the demo model)."""

from __future__ import annotations

import pytest

from grinta_jupyter.agent.models import LiteLLMModel, ScriptedModel, resolve_model


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GRINTA_MODEL", "GRINTA_API_BASE", "GRINTA_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_nothing_configured_means_the_demo_model() -> None:
    assert resolve_model() is None and resolve_model(None) is None


def test_a_model_instance_is_returned_as_is() -> None:
    model = ScriptedModel([])

    assert resolve_model(model) is model
    with pytest.raises(TypeError):
        resolve_model(model, temperature=0.5)


def test_a_string_becomes_a_litellm_model_with_kwargs() -> None:
    model = resolve_model("anthropic/claude-sonnet-4-5", temperature=None, max_retries=5)

    assert isinstance(model, LiteLLMModel)
    assert (model.name, model.temperature, model.max_retries) == (
        "anthropic/claude-sonnet-4-5",
        None,
        5,
    )


def test_environment_supplies_model_base_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRINTA_MODEL", "ollama_chat/qwen2.5-coder:7b")
    monkeypatch.setenv("GRINTA_API_BASE", "http://localhost:11434")
    monkeypatch.setenv("GRINTA_API_KEY", "secret")

    model = resolve_model()

    assert isinstance(model, LiteLLMModel)
    assert (model.name, model.api_base, model.api_key) == (
        "ollama_chat/qwen2.5-coder:7b",
        "http://localhost:11434",
        "secret",
    )
    assert "secret" not in repr(model)


def test_argument_and_kwargs_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRINTA_MODEL", "ollama_chat/qwen2.5-coder:7b")
    monkeypatch.setenv("GRINTA_API_BASE", "http://localhost:11434")

    model = resolve_model("openai/gpt-4o-mini", api_base="http://127.0.0.1:8000/v1")

    assert isinstance(model, LiteLLMModel)
    assert (model.name, model.api_base) == ("openai/gpt-4o-mini", "http://127.0.0.1:8000/v1")


def test_blank_environment_value_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRINTA_MODEL", "  ")

    assert resolve_model() is None
