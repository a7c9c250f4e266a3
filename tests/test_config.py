"""Config: the environment read in one place, flags over it, every default written once."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import grinta_jupyter
from grinta_jupyter.agent.guards import Limits
from grinta_jupyter.agent.models import DemoModel, LiteLLMModel, ScriptedModel, configured_model
from grinta_jupyter.agent.session import Session
from grinta_jupyter.cli import main
from grinta_jupyter.config import ENVIRONMENT, Config, ConfigError
from grinta_jupyter.experiment.runner import RunSpec

PACKAGE = Path(grinta_jupyter.__file__).parent
# GRINTA_* strings that are not configuration: the marker the run tool puts in a command's
# environment to find its process tree, and a heredoc delimiter the offline solver writes.
NOT_CONFIGURATION = {
    "GRINTA_COMMAND": "runtime/process.py",
    "GRINTA_EOF": "experiment/solver.py",
    "GRINTA_TEST_RUN": "samples/contained.py",  # marks a check's processes, set for them only
}


def test_every_variable_is_read_and_parsed() -> None:
    config = Config.from_env(
        {
            "GRINTA_MODEL": " openai/gpt-4o-mini ",
            "GRINTA_API_BASE": "http://127.0.0.1:8000/v1",
            "GRINTA_API_KEY": "sk-secret",
            "GRINTA_ROOT": "~/work",
            "GRINTA_LOG_DIR": "/tmp/logs",
            "GRINTA_MAX_STEPS": "12",
            "GRINTA_MAX_TOKENS": "50000",
            "GRINTA_MAX_COST": "0.5",
            "GRINTA_MAX_WALL_TIME": "60",
            "GRINTA_DEBUG": "1",
            "UNRELATED": "x",
        }
    )
    assert (config.model, config.api_base, config.api_key) == (
        "openai/gpt-4o-mini",
        "http://127.0.0.1:8000/v1",
        "sk-secret",
    )
    assert config.workspace == Path("~/work").expanduser() and config.log_dir == "/tmp/logs"
    assert (config.max_steps, config.max_tokens, config.max_cost, config.max_wall_time) == (
        12,
        50000,
        0.5,
        60.0,
    )
    assert config.debug and config.origin("max_cost") == "GRINTA_MAX_COST"
    assert "sk-secret" not in repr(config)


def test_blank_or_missing_variables_leave_the_defaults() -> None:
    config = Config.from_env({"GRINTA_MODEL": "  ", "GRINTA_DEBUG": "0", "GRINTA_MAX_STEPS": ""})
    assert config == Config() and config.origin("model") == "default"
    assert config.model is None and not config.debug


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("GRINTA_MAX_STEPS", "0", "must be 1 or more"),
        ("GRINTA_MAX_STEPS", "many", "expected a whole number"),
        ("GRINTA_MAX_TOKENS", "1.5", "expected a whole number"),
        ("GRINTA_MAX_COST", "nan", "must be a number above 0"),
        ("GRINTA_MAX_COST", "-1", "must be a number above 0"),
        ("GRINTA_MAX_WALL_TIME", "soon", "expected a number"),
    ],
)
def test_a_bad_value_is_an_error_naming_the_variable(variable: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as error:
        Config.from_env({variable: value})
    assert str(error.value).startswith(f"{variable}={value}: ") and says in str(error.value)


def test_flags_win_over_the_environment_and_none_is_not_given() -> None:
    env = Config.from_env({"GRINTA_MODEL": "openai/a", "GRINTA_MAX_STEPS": "9"})
    config = env.with_options(model="openai/b", max_steps=None, auto=None, root="here")

    assert (config.model, config.max_steps, config.auto, config.root) == (
        "openai/b",
        9,
        False,
        "here",
    )
    assert config.origin("model") == "--model" and config.origin("max_steps") == "GRINTA_MAX_STEPS"
    assert env.model == "openai/a", "a Config never changes"
    with pytest.raises(TypeError):
        env.with_options(max_step=3)
    with pytest.raises(ConfigError, match=r"^--max-steps: must be 1 or more"):
        env.with_options(max_steps=0)
    with pytest.raises(ConfigError, match=r"^--root is empty; give a folder$"):
        env.with_options(root=" ")


def test_each_default_is_written_once() -> None:
    config, limits, spec = Config(), Limits(), RunSpec("t", "intent", "scripted", 0)
    for budget in ("max_steps", "max_tokens", "max_cost", "max_wall_time"):
        assert getattr(config, budget) == getattr(limits, budget), budget
    assert (spec.max_steps, spec.max_tokens, spec.max_cost) == (
        config.max_steps,
        config.max_tokens,
        config.max_cost,
    )
    assert all(
        name in {f.name for f in dataclasses.fields(Config)} for name, _ in ENVIRONMENT.values()
    )


def test_no_module_but_config_names_a_grinta_variable() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith("GRINTA_")
                and node.value.isidentifier()
                and rel != "config.py"
                and NOT_CONFIGURATION.get(node.value) != rel
            ):
                found.append(f"{rel}: {node.value}")
    assert found == []
    assert set(ENVIRONMENT) >= {"GRINTA_MODEL", "GRINTA_ROOT", "GRINTA_API_KEY", "GRINTA_DEBUG"}


def test_session_options_build_a_session(tmp_path: Path) -> None:
    config = Config(max_steps=3, auto=True, log_dir=str(tmp_path / "logs"))
    session = Session("t", model=ScriptedModel([]), **config.session_options(tmp_path))

    assert session.root == tmp_path.resolve() and session.policy == "auto"
    assert session.limits == Limits(max_steps=3)
    assert session.log_path == tmp_path / "logs" / f"{session.id}.jsonl"
    # Notebooks are no longer write-protected: they are validated as notebooks instead.
    create = {"path": "a.ipynb", "content": "{}"}
    assert session.runtime.propose("create", create).error.code == "NOTEBOOK_INVALID"
    assert config.session_options(tmp_path)["settings"].protected == ()


def test_no_model_configured_means_the_demo_model_everywhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    assert isinstance(configured_model(Config()), DemoModel)
    assert isinstance(
        configured_model(Config(model="ollama_chat/q", api_base="http://127.0.0.1:1")),
        LiteLLMModel,
    )
    assert main(["run", "fix it", "--root", str(tmp_path)]) == 2
    assert "demo model only plays its scripted session" in capsys.readouterr().err
    assert main(["eval", "--tasks", "raft_kv/fix-failing-test", "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert "Set GRINTA_MODEL" in err and "--model scripted" in err
    assert not (tmp_path / "e").exists()


def test_a_bad_variable_stops_the_cli_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRINTA_MAX_STEPS", "0")
    assert main(["run", "fix it", "--root", str(tmp_path), "--model", "openai/x"]) == 2
    assert (
        capsys.readouterr().err == "grinta: error: GRINTA_MAX_STEPS=0: must be 1 or more, got 0\n"
    )
    monkeypatch.setenv("GRINTA_MAX_STEPS", "2")
    monkeypatch.setenv("GRINTA_ROOT", str(tmp_path / "nope"))
    assert main(["run", "fix it", "--model", "openai/x"]) == 2
    assert f"GRINTA_ROOT {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
