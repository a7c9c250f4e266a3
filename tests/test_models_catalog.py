"""What models a machine can use (agent/models/catalog.py) and ``grinta models``.

Keys are set and unset in real environment dictionaries; local servers are
real HTTP servers on 127.0.0.1 standing in for Ollama's ``/api/tags`` and an
OpenAI-compatible ``/models`` (tests/model_servers.py). ``grinta models`` runs
as a subprocess, end to end. A key's value never reaches the output.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import catalog
from grinta_jupyter.agent.models.catalog import (
    ModelChoice,
    Probe,
    apply_choice,
    check_provider,
    choices,
    featured_models,
    ollama_base,
    probe_models,
    probe_ollama,
    provider_keys,
    survey,
)
from grinta_jupyter.agent.models.keys import HeldKeys
from grinta_jupyter.agent.models.litellm_model import PROVIDER_KEYS, _model_map
from grinta_jupyter.config import Config
from grinta_jupyter.runtime.secrets import REDACTED, Secrets, hold
from tests.model_servers import ModelServer, model_server_fixture  # noqa: F401
from tests.openai_server import OpenAIServer, error_reply

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("grinta")
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "grinta_jupyter.cli"]
KEY = "sk-catalog-test-0123456789abcdef"
ALL_KEY_VARS = {v for group in PROVIDER_KEYS.values() for v in group}


def closed_port() -> str:
    """An address where nothing listens (connections are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def env(**values: str) -> dict[str, str]:
    """The test's environment without any key, GRINTA_* or OLLAMA_HOST, plus ``values``."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ALL_KEY_VARS and not k.startswith("GRINTA_") and k != "OLLAMA_HOST"
    }
    return {**base, "OLLAMA_HOST": closed_port(), **values}


# -- the lists from litellm's map -----------------------------------------------------------------


@pytest.mark.parametrize("provider", sorted(p for p in PROVIDER_KEYS if featured_models(p)))
def test_featured_models_are_a_few_current_tool_models_of_the_provider(provider: str) -> None:
    names = featured_models(provider)
    entries = _model_map()

    assert 1 <= len(names) <= catalog.FEATURED_PER_PROVIDER
    assert len(set(names)) == len(names)
    for name in names:
        assert name.startswith(provider + "/"), name
        entry = entries.get(name) or entries.get(name.partition("/")[2])
        assert entry["litellm_provider"] == provider and entry["mode"] == "chat"
        assert entry["supports_function_calling"]
        assert not re.search(r"\d{4}-\d{2}-\d{2}|-\d{8}\b|preview|^ft:", name), name


def test_featured_models_put_the_newest_first_and_drop_the_deprecated() -> None:
    names = featured_models("openai", limit=50)
    versions = [float(re.search(r"\d+(?:\.\d+)?", n.partition("/")[2]).group()) for n in names]  # type: ignore[union-attr]
    assert versions[0] == max(versions)
    dated = [
        n
        for n in names
        if isinstance((_model_map().get(n.partition("/")[2]) or {}).get("deprecation_date"), str)
    ]
    if dated:  # the map dates some models: a day after it, they are not offered
        assert not set(dated) & set(featured_models("openai", 50, today=date(2999, 1, 1)))
    assert featured_models("no-such-provider") == []


# -- keys ---------------------------------------------------------------------------------------


def test_provider_keys_name_the_variable_set_never_the_value() -> None:
    keys = {
        k.provider: k
        for k in provider_keys(
            {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "  ", "GOOGLE_API_KEY": KEY},
            held=frozenset({"mistral"}),
        )
    }

    assert set(keys) == set(PROVIDER_KEYS)
    assert keys["openai"].found == "OPENAI_API_KEY"
    assert keys["anthropic"].found is None, "a blank key is no key"
    assert keys["gemini"].found == "GOOGLE_API_KEY", "the second variable counts too"
    assert keys["mistral"].found == "panel"
    assert KEY not in repr(keys)


@pytest.fixture(autouse=True)
def held_for_this_test() -> Iterator[None]:
    """Keys held in a test here are forgotten after it: ``hold`` is for the life of the
    process by design, and the other test files expect only their own secrets."""
    from grinta_jupyter.runtime import secrets

    with secrets._held_lock:
        kept = set(secrets._held)
    yield
    with secrets._held_lock:
        secrets._held.clear()
        secrets._held.update(kept)


def test_held_keys_are_memory_only_and_redacted_everywhere() -> None:
    held = HeldKeys()
    value = "sk-held-only-in-memory-0123456789"
    held.put("openai", value)

    assert held.get("openai") == value and held.providers() == {"openai"}
    assert value not in repr(held) and value not in os.environ.values()
    assert Secrets.from_env({}).redact(f"it was {value}!") == f"it was {REDACTED}!"
    assert held.drop("openai") and held.get("openai") is None and not held.drop("openai")
    assert REDACTED in Secrets.from_env({}).redact(value), "still redacted once dropped"
    with pytest.raises(ValueError):
        held.put("openai", "   ")
    hold("short")  # too short to tell from a word: like any secret, not redacted
    assert Secrets.from_env({}).redact("short") == "short"


# -- local servers ------------------------------------------------------------------------------


def test_ollama_answers_with_its_models(model_server: ModelServer) -> None:
    probe = probe_ollama(model_server.url)

    assert probe.ok and probe.models == ("ollama_chat/qwen2.5-coder:7b",)
    assert probe.detail == "1 model"
    assert model_server.requests[-1].path == "/api/tags"


def test_nothing_listening_is_unreachable_at_once() -> None:
    probe = probe_ollama(closed_port(), timeout=5)

    assert probe.status == "unreachable" and not probe.models
    assert "refused" in probe.detail.lower()


def test_a_slow_or_broken_server_is_said_so() -> None:
    with ModelServer(delay=2.0) as slow:
        probe = probe_ollama(slow.url, timeout=0.2)
    assert (probe.status, probe.detail) == ("unreachable", "no answer in time")
    with ModelServer(status=500) as broken:
        probe = probe_ollama(broken.url)
    assert probe.status == "error" and "HTTP 500" in probe.detail


def test_an_openai_compatible_server_lists_its_models_and_may_refuse_a_key() -> None:
    with ModelServer(openai_models=["coder", "small"], key=KEY) as server:
        ok = probe_models(server.api_base, KEY)
        refused = probe_models(server.api_base, "sk-wrong-0123456789")
        anonymous = probe_models(server.api_base, None, prefix="hosted_vllm")
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
        assert "authorization" not in server.requests[2].headers

    assert ok.ok and ok.models == ("openai/coder", "openai/small")
    assert refused.status == "rejected" and "401" in refused.detail
    assert anonymous.status == "rejected"


def test_check_provider_sends_the_key_the_way_the_provider_takes_it() -> None:
    with ModelServer(openai_models=["m"], key=KEY) as server:
        accepted = check_provider("anthropic", KEY, url=server.api_base + "/models")
        refused = check_provider("openai", "sk-not-this-one-0123", url=server.api_base + "/models")
        google = check_provider("gemini", KEY, url=server.api_base + "/models")
        seen = [r.headers for r in server.requests]

    assert accepted.ok and accepted.detail == "key accepted"
    assert seen[0]["x-api-key"] == KEY and seen[0]["anthropic-version"]
    assert refused.status == "rejected"
    assert google.ok and seen[2]["x-goog-api-key"] == KEY
    assert check_provider("unknown", KEY).status == "error"


@pytest.mark.parametrize(
    ("value", "base"),
    [
        ("", "http://127.0.0.1:11434"),
        ("127.0.0.1:9999", "http://127.0.0.1:9999"),
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("https://ollama.example:443/", "https://ollama.example:443"),
    ],
)
def test_ollama_is_looked_for_where_ollama_host_says(value: str, base: str) -> None:
    assert ollama_base({"OLLAMA_HOST": value}) == base


# -- the picker's choices -----------------------------------------------------------------------


def test_choices_without_anything_configured_are_the_demo_and_one_per_provider() -> None:
    offered = choices(Config(), {})

    assert offered[0] == ModelChoice("demo", "demo")
    rest = offered[1:]
    assert {c.source for c in rest} == {"needs key"}
    assert len({c.provider for c in rest}) == len(rest), "one per provider without a key"
    first = next(c for c in rest if c.provider == "anthropic")
    assert first.key_variable == "ANTHROPIC_API_KEY" and "paste ANTHROPIC_API_KEY" in first.label


def test_choices_list_the_configured_model_then_keys_then_local_servers() -> None:
    config = Config(model="openai/local-coder", api_base="http://127.0.0.1:1/v1")
    ollama = Probe("http://127.0.0.1:11434", "reachable", models=("ollama_chat/qwen:7b",))
    server = Probe(config.api_base or "", "reachable", models=("openai/local-coder", "openai/b"))

    offered = choices(config, {"ANTHROPIC_API_KEY": KEY}, frozenset({"xai"}), ollama, server)
    sources = [c.source for c in offered]

    assert offered[0] == ModelChoice(
        "openai/local-coder", "configured", "openai", "http://127.0.0.1:1/v1", "OPENAI_API_KEY"
    )
    assert sources.index("key") < sources.index("server") < sources.index("ollama")
    assert sources.index("ollama") < sources.index("needs key")
    keyed = {c.provider for c in offered if c.source == "key"}
    assert keyed == {"anthropic", "xai"}, "the environment's keys and the held ones"
    assert [c.name for c in offered if c.source == "server"] == ["openai/b"], "each name once"
    ollama_choice = next(c for c in offered if c.source == "ollama")
    assert (ollama_choice.api_base, ollama_choice.key_variable) == (ollama.url, None)
    assert "demo" not in [c.name for c in offered], "a model is configured"
    assert not {"anthropic", "xai"} & {c.provider for c in offered if c.source == "needs key"}
    assert len({c.name for c in offered}) == len(offered)


def test_a_server_that_did_not_answer_adds_nothing() -> None:
    down = Probe("http://127.0.0.1:11434", "unreachable", "refused")
    assert [c.source for c in choices(Config(), {}, ollama=down)][:2] == ["demo", "needs key"]


# -- what a choice does to the next session's configuration --------------------------------------


def test_the_picker_wins_over_grinta_model_and_brings_its_own_server() -> None:
    config = Config.from_env(
        {"GRINTA_MODEL": "openai/x", "GRINTA_API_BASE": "http://h/v1", "GRINTA_API_KEY": "k" * 20}
    )
    keys = HeldKeys()
    hosted = ModelChoice("anthropic/claude-x", "key", "anthropic", None, "ANTHROPIC_API_KEY")

    picked = apply_choice(config, hosted, keys)
    assert (picked.model, picked.api_base, picked.api_key) == ("anthropic/claude-x", None, None)
    assert picked.origin("model") == "the model picker"

    local = ModelChoice("ollama_chat/q", "ollama", "ollama", "http://127.0.0.1:11434")
    assert apply_choice(config, local, keys).api_base == "http://127.0.0.1:11434"
    assert apply_choice(config, ModelChoice("demo", "demo"), keys).model is None
    assert apply_choice(config, None, keys) == config
    forced = config.with_options(model="openai/forced")
    assert apply_choice(forced, hosted, keys).model == "openai/forced", "--model wins"


def test_a_held_key_wins_for_its_provider_only() -> None:
    keys = HeldKeys()
    keys.put("anthropic", KEY)
    config = Config.from_env({"GRINTA_MODEL": "anthropic/claude-x", "GRINTA_API_KEY": "g" * 20})

    assert apply_choice(config, None, keys).api_key == KEY
    assert apply_choice(config, None, keys).origin("api_key") == "the key field"
    other = Config.from_env({"GRINTA_MODEL": "openai/x"})
    assert apply_choice(other, None, keys).api_key is None
    assert apply_choice(Config(), None, keys).api_key is None, "the demo takes no key"


# -- the survey ---------------------------------------------------------------------------------


def test_survey_of_a_configured_local_server_and_ollama(model_server: ModelServer) -> None:
    environ = env(
        GRINTA_MODEL="openai/local-coder",
        GRINTA_API_BASE=model_server.api_base,
        OPENAI_API_KEY=KEY,
        OLLAMA_HOST=model_server.url,
    )
    found = survey(Config.from_env(environ), environ)
    lines = {(m.name, m.source): m for m in found.models}

    assert found.problem is None and found.server is not None and found.server.ok
    configured = lines[("openai/local-coder", "GRINTA_MODEL")]
    assert configured.ok and configured.status == f"reachable at {model_server.api_base}"
    assert lines[("openai/local-small", "GRINTA_API_BASE")].ok
    assert lines[("ollama_chat/qwen2.5-coder:7b", "ollama")].ok
    keyed = [m for m in found.models if m.source == "openai"]
    assert keyed and all(m.status == "key set in OPENAI_API_KEY, not called" for m in keyed)
    text = "\n".join(found.lines())
    assert KEY not in text and KEY not in json.dumps(found.to_json())
    assert "keys set         OPENAI_API_KEY (openai)" in text


def test_survey_says_what_keeps_the_configured_model_from_working() -> None:
    environ = env(GRINTA_MODEL="anthropic/claude-x")
    found = survey(Config.from_env(environ), environ)
    assert (
        found.problem
        == "anthropic/claude-x: MISSING_KEY: set ANTHROPIC_API_KEY (or GRINTA_API_KEY)"
    )

    environ = env(GRINTA_MODEL="openai/x", GRINTA_API_BASE=closed_port() + "/v1")
    found = survey(Config.from_env(environ), environ)
    assert found.problem is not None and "unreachable" in found.problem

    with ModelServer(ollama_models=["other:1b"]) as ollama:
        environ = env(GRINTA_MODEL="ollama_chat/qwen2.5-coder:7b", OLLAMA_HOST=ollama.url)
        found = survey(Config.from_env(environ), environ)
    assert found.problem is not None and "ollama pull qwen2.5-coder:7b" in found.problem


def test_check_calls_each_hosted_provider_once_and_says_a_refused_key() -> None:
    with ModelServer(openai_models=["m"], key="sk-the-good-key-0123456789") as server:
        environ = env(OPENAI_API_KEY=KEY, GRINTA_MODEL="openai/gpt-x")
        found = survey(
            Config.from_env(environ), environ, check=True, endpoints={"openai": server.url}
        )
        calls = len(server.requests)

    assert calls == 1, "one call per provider, not per model"
    assert found.problem == "openai/gpt-x: key rejected: set OPENAI_API_KEY to a valid key"
    assert all(not m.ok for m in found.models if m.source in ("openai", "GRINTA_MODEL"))


# -- grinta models, end to end ------------------------------------------------------------------


def grinta_models(*args: str, **values: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, "models", *args],
        capture_output=True,
        text=True,
        env=env(**values),
        cwd=REPO,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_grinta_models_lists_what_is_configured_and_reachable(model_server: ModelServer) -> None:
    done = grinta_models(
        GRINTA_MODEL="openai/local-coder",
        GRINTA_API_BASE=model_server.api_base,
        GRINTA_API_KEY=KEY,
        ANTHROPIC_API_KEY=KEY + "-anthropic",
        OLLAMA_HOST=model_server.url,
    )
    out = done.stdout

    assert done.returncode == 0, done.stderr
    assert KEY not in out and KEY not in done.stderr
    assert out.splitlines()[0] == "GRINTA_MODEL     openai/local-coder"
    assert f"GRINTA_API_BASE  {model_server.api_base}: reachable" in out
    assert "GRINTA_API_KEY   set" in out
    assert "keys set         ANTHROPIC_API_KEY (anthropic)" in out
    assert f"ollama           answers at {model_server.url} (1 model)" in out
    rows = [
        line.split()
        for line in out.splitlines()
        if line.startswith(("openai/", "ollama_chat/", "anthropic/"))
    ]
    assert ["openai/local-coder", "GRINTA_MODEL", "reachable", "at", model_server.api_base] in rows
    assert any(r[:2] == ["openai/local-small", "GRINTA_API_BASE"] for r in rows)
    assert any(r[:2] == ["ollama_chat/qwen2.5-coder:7b", "ollama"] for r in rows)
    assert sum(r[1] == "anthropic" for r in rows) == len(featured_models("anthropic"))
    assert "grinta models --check asks each one" in out
    headers = [r.headers.get("authorization") for r in model_server.requests if "models" in r.path]
    assert headers == [f"Bearer {KEY}"], "the configured key, to the configured server only"

    as_json = json.loads(grinta_models("--json", OPENAI_API_KEY=KEY).stdout)
    assert as_json["model"] is None and as_json["models"][-1]["name"] == "demo"
    assert {
        "provider": "openai",
        "variables": ["OPENAI_API_KEY"],
        "set": "OPENAI_API_KEY",
    } in as_json["keys"]
    assert KEY not in json.dumps(as_json)


def test_grinta_models_fails_with_the_fix_when_the_model_cannot_work() -> None:
    done = grinta_models(GRINTA_MODEL="openai/gpt-x")
    assert done.returncode == 1
    assert (
        "problem          openai/gpt-x: MISSING_KEY: set OPENAI_API_KEY (or GRINTA_API_KEY)"
        in done.stdout
    )

    down = closed_port() + "/v1"
    done = grinta_models(GRINTA_MODEL="openai/x", GRINTA_API_BASE=down)
    assert done.returncode == 1 and f"unreachable at {down}" in done.stdout


def test_a_rejected_key_is_one_line_naming_the_variable_to_fix(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        # Refused early (before litellm is loaded), then by litellm's own request.
        server.queue(*[error_reply(401, f"Incorrect API key provided: {KEY}")] * 2)
        done = subprocess.run(
            [*ENTRY, "run", "fix it", "--root", str(tmp_path), "--auto"],
            capture_output=True,
            text=True,
            env=env(GRINTA_MODEL="openai/x", GRINTA_API_BASE=server.url, OPENAI_API_KEY=KEY),
            cwd=REPO,
            timeout=120,
        )

    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("grinta: error: AUTH: openai/x rejected the key (")
    assert lines[0].endswith("; set OPENAI_API_KEY (or GRINTA_API_KEY) to a valid key")
    assert KEY not in done.stdout + done.stderr
