"""A key given to the model in code is a secret of the whole kernel, not of one session.

``LiteLLMModel(..., api_key=...)`` is how docs/guarantees.md tells a user to keep a key out
of the commands' environment. The session that uses that model redacts it; a later session
in the same kernel (another model, or the demo) must too: the key is still in the notebook
the user typed it in, and a command or a read of that notebook would show it to the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import LiteLLMModel
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime import secrets

KEY = "sk-given-in-code-7f3a9c2e41b8d605"


@pytest.fixture(autouse=True)
def held_for_this_test() -> Iterator[None]:
    """``hold`` lasts the process's life by design; other tests in this worker expect only
    their own secrets."""
    with secrets._held_lock:
        kept = set(secrets._held)
    yield
    with secrets._held_lock:
        secrets._held.clear()
        secrets._held.update(kept)


def test_a_key_given_in_code_is_redacted_by_a_later_session_with_another_model(
    tmp_path: Path,
) -> None:
    (tmp_path / "setup.py.txt").write_text(f'model = LiteLLMModel("openai/x", api_key="{KEY}")\n')
    LiteLLMModel("openai/gpt-4o-mini", api_key=f"  {KEY}\n")  # pasted with its blanks
    model = ScriptedModel(
        [
            reply("", call("read", path="setup.py.txt")),
            reply("", call("run", command="cat setup.py.txt")),
            reply("Done.", call("finish", summary="read the setup")),
        ]
    )
    session = Session("show me the setup", model=model, root=tmp_path, policy="auto")
    session.run_sync()
    assert session.end_reason == "finished"
    sent = repr(model.requests)
    assert KEY not in sent and sent.count(secrets.REDACTED) >= 2
    assert KEY not in session.log_path.read_text()


def test_the_warming_placeholder_and_no_key_hold_nothing() -> None:
    before = secrets.held()
    LiteLLMModel("openai/x", api_base="http://127.0.0.1:1/v1")
    LiteLLMModel("openai/x", api_key="   ")
    assert secrets.held() == before
