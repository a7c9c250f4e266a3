"""A real kernel, no browser: the session runs in the background and widget
messages press Approve, Edit and Veto exactly as a browser would send them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

from grinta_jupyter.events.log import read_events
from grinta_jupyter.samples.tasks import DEMO_FIX

TIMEOUT = 60


@pytest.fixture
def kernel(tmp_path):
    km, kc = start_new_kernel(
        kernel_name="python3",
        cwd=str(tmp_path),
        env={"GRINTA_MODEL": "", "PATH": __import__("os").environ["PATH"]},
    )
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc, code: str) -> str:
    """Run ``code``; return its stdout (raises on an error in the kernel)."""
    msg_id = kc.execute(code)
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream":
            out.append(msg["content"]["text"])
        elif kind == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)


def wait_for(kc, expression: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # A cell that awaits lets the session's background task run.
        if (
            execute(
                kc, f"import asyncio; await asyncio.sleep(0.2); print(bool({expression}))"
            ).strip()
            == "True"
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {expression}")


def send_to_widget(kc, model_id: str, data: dict) -> None:
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": model_id, "data": data}))


def press(kc, model_id: str, action: str) -> None:
    send_to_widget(
        kc, model_id, {"method": "custom", "content": {"event": "action", "action": action}}
    )


def click(kc, model_id: str) -> None:
    send_to_widget(kc, model_id, {"method": "custom", "content": {"event": "click"}})


def set_value(kc, model_id: str, value: str) -> None:
    send_to_widget(
        kc, model_id, {"method": "update", "state": {"value": value}, "buffer_paths": []}
    )


def card_ids(kc) -> dict:
    return json.loads(
        execute(
            kc,
            """
from grinta_jupyter.jupyter.controller import current_view
_v = current_view()
_c = _v.panel.cards[_v.session.pending.number]
print(json.dumps({"step": _c.step.number, "tool": _c.step.call.name, "actions": _c.actions.model_id,
                  "args": _c.args_editor.model_id, "text": _c.text_editor.model_id,
                  "revalidate": _c.revalidate.model_id, "reason": _c.reason.model_id,
                  "send_veto": _c.send_veto.model_id}))
""",
        )
        .strip()
        .splitlines()[-1]
    )


def test_approve_edit_and_veto_through_widget_messages(kernel, tmp_path: Path):
    kc = kernel
    execute(kc, "import json, grinta_jupyter\n%load_ext grinta_jupyter")
    execute(kc, "session = %grinta fix the failing test in raft_kv")
    node = tmp_path / "raft_kv" / "raft_kv" / "node.py"
    original = node.read_text()

    wait_for(kc, "session.waiting")
    ids = card_ids(kc)
    assert ids["tool"] == "run"
    press(kc, ids["actions"], "approve")

    # The read runs by itself; the fix waits. Edit it in the widget: add a comment to the new text.
    wait_for(kc, "session.waiting and session.pending.call.name == 'replace_string'")
    assert node.read_text() == original
    ids = card_ids(kc)
    press(kc, ids["actions"], "edit")
    wait_for(kc, "session.pending is not None")
    set_value(kc, ids["text"], DEMO_FIX["new_string"] + "  # terms must match")
    click(kc, ids["revalidate"])
    wait_for(kc, "session.pending.edits == 1")
    assert node.read_text() == original, "an edit re-stages; it does not write"
    assert "# terms must match" in execute(kc, "print(session.pending.proposal.diff)")
    press(kc, ids["actions"], "approve")
    wait_for(kc, "session.waiting and session.pending.number == 4")
    assert "!= request.prev_log_term:  # terms must match" in node.read_text()

    # Veto the test run with a reason typed into the card.
    ids = card_ids(kc)
    press(kc, ids["actions"], "veto")
    set_value(kc, ids["reason"], "run only the replication tests")
    click(kc, ids["send_veto"])
    wait_for(kc, "len(session.steps) >= 5")

    log = Path(execute(kc, "print(session.log_path)").strip())
    events = read_events(log)
    decisions = [(e.step, e.decision, e.reason) for e in events if e.type == "user_decision"]
    assert decisions[:2] == [(1, "approve", None), (2, "auto", None)]
    assert (3, "edit", None) in decisions and (3, "approve", None) in decisions
    assert (4, "veto", "run only the replication tests") in decisions
    commits = [e for e in events if e.type == "commit"]
    assert len(commits) == 1 and commits[0].ok and commits[0].step == 3
    execute(kc, "session.stop()")
