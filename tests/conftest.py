"""Shared fixtures: a temporary workspace and a runtime on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(
        "import os\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    (root / "README.md").write_text("# demo\n")
    return root


@pytest.fixture
def rt(ws: Path) -> Runtime:
    return Runtime(ws)


@pytest.fixture
def steps_taken(monkeypatch: pytest.MonkeyPatch) -> list[bool | None]:
    """The answers ``regions._in_steps`` gave (None: not a case for steps)."""
    from grinta_jupyter.runtime import regions

    answers: list[bool | None] = []
    real = regions._in_steps

    def counted(*args: Any) -> bool | None:
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(regions, "_in_steps", counted)
    return answers


def drive(session, decide):  # type: ignore[no-untyped-def]
    """Step ``session`` to the end, answering every pending proposal with ``decide(session)``."""
    import asyncio

    from grinta_jupyter.agent import NeedsDecision

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                decide(session)

    asyncio.run(go())
    return session


def until_decision(session):  # type: ignore[no-untyped-def]
    """Drive ``session`` until a proposal waits for a decision (or the session ends)."""
    import asyncio

    from grinta_jupyter.agent import NeedsDecision

    async def go() -> None:
        async for update in session.updates():
            if isinstance(update, NeedsDecision):
                return

    asyncio.run(go())
    return session


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file's bytes under ``root``, except grinta's own state folder."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".grinta" not in p.relative_to(root).parts
    }


from tests.openai_server import openai_server_fixture  # noqa: E402,F401  (the `openai_server` fixture)


def served_grinta_shell(monkeypatch: pytest.MonkeyPatch, url: str):  # type: ignore[no-untyped-def]
    """``grinta_shell`` with the model a local OpenAI-compatible server at ``url``, for the
    ``ip`` fixtures of tests that drive real sessions: ``yield from served_grinta_shell(...)``
    (after ``monkeypatch.chdir`` where the demo's copy must not land in the checkout)."""
    monkeypatch.setenv("GRINTA_MODEL", "openai/test-model")
    monkeypatch.setenv("GRINTA_API_BASE", url)
    monkeypatch.setenv("GRINTA_API_KEY", "sk-local-test")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    yield from grinta_shell()


def grinta_shell():  # type: ignore[no-untyped-def]
    """IPython's test shell with grinta loaded and no session yet; at the end, the session a
    test left running is stopped and forgotten. For an ``ip`` fixture, after its own
    environment: ``yield from grinta_shell()``."""
    from IPython.testing import globalipapp

    import grinta_jupyter
    from grinta_jupyter.jupyter import controller

    controller._current = None
    globalipapp.start_ipython()  # once per process; later calls return None
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "grinta_jupyter")
    yield shell
    session = grinta_jupyter.current()
    if session is not None and not session.done:
        session.stop()
    controller._current = None
