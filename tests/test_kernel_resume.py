"""Sessions that last, in real kernels, over real litellm calls to a local server.

- A kernel killed (SIGKILL) while a proposal waits: a new kernel's ``%grinta resume``
  rebuilds the session from its log, stages the proposal again against the file as it
  is now (changed meanwhile: the card says it is stale and what changed), asks again,
  and approving it commits the right bytes.
- The panel's message box, as the browser's box sends it (labextension/src/render/
  messageBox.ts): said while a proposal waits (it keeps waiting, the box decides
  nothing), read by the model at its next request; once the session has finished, the
  same box gives it its next task, and the panel follows the new updates.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

from grinta_jupyter.events.log import read_events
from tests.kernels import execute, messages, running_kernel, wait_for
from tests.openai_server import OpenAIServer, tool_call, tool_reply

FIX = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}


def model_env(server: OpenAIServer) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "GRINTA_MODEL": "openai/test-model",
        "GRINTA_API_BASE": server.url,
        "GRINTA_API_KEY": "sk-local",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def finish(call_id: str) -> Any:
    return tool_reply(tool_call("finish", {"summary": "x is 2"}, call_id))


def send_to(kc: Any, model_id: str, content: dict[str, Any]) -> None:
    data = {"method": "custom", "content": content}
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": model_id, "data": data}))


def read_json(kc: Any, code: str) -> Any:
    return json.loads(execute(kc, code).strip().splitlines()[-1])


PENDING = """
from grinta_jupyter.jupyter.controller import current_view
_v = current_view()
_c = _v.panel.cards[_v.session.pending.number]
print(json.dumps({"id": _c.model_id, "payload": _c.payload, "pending": _c.pending,
                  "box": _v.panel.box.model_id, "mode": _v.panel.box.mode}))
"""


def test_resume_after_the_kernel_is_killed_while_a_proposal_waits(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    server = OpenAIServer()
    server.queue(
        tool_reply(tool_call("replace_string", FIX, "c1"), text="Changing x."),
        # After the resumed proposal is approved: the guard sends back the first two
        # finishes (an edit and no test run), the third is accepted.
        finish("c2"),
        finish("c3"),
        finish("c4"),
    )
    with server:
        env = model_env(server)
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=env)
        try:
            execute(kc, "import json, grinta_jupyter\n%load_ext grinta_jupyter")
            execute(kc, f"%grinta --root {ws} change x to 2 in a.py")
            execute(kc, "session = grinta_jupyter.current()")
            wait_for(kc, "session.waiting")
            log = Path(execute(kc, "print(session.log_path)").strip())
            session_id = execute(kc, "print(session.id)").strip()
            os.kill(km.provisioner.pid, signal.SIGKILL)  # no goodbye: a crash
            deadline = time.monotonic() + 30
            while km.is_alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not km.is_alive()
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        assert (ws / "a.py").read_text() == "x = 1\n", "nothing was committed"
        # Meanwhile someone edits the file: the proposal staged before is stale now.
        (ws / "a.py").write_text("x = 1\n# a note\n")

        with running_kernel(tmp_path, env) as kc:
            execute(kc, "import json, grinta_jupyter\n%load_ext grinta_jupyter")
            out = execute(kc, f"%grinta resume --root {ws}")
            assert f"resumed session {session_id} from {log}: 0 steps done; 1 call" in out
            execute(kc, "session = grinta_jupyter.current()")
            wait_for(kc, "session.waiting")
            card = read_json(kc, PENDING)
            payload = card["payload"]
            assert card["pending"] and payload["tool"] == "replace_string"
            assert payload["restaged"] and "a.py changed since" in payload["stale"]
            assert "+# a note" not in payload["diff"] and "+x = 2" in payload["diff"]
            assert (ws / "a.py").read_text() == "x = 1\n# a note\n", (
                "asked, never committed blindly"
            )
            trace = read_json(
                kc,
                "from grinta_jupyter.jupyter.mime import trace_bundle, SESSION_MIME\n"
                "print(json.dumps(trace_bundle(session)[SESSION_MIME]))",
            )
            assert [m["kind"] for m in trace["marks"]] == ["resumed"]
            assert trace["steps"][-1]["stale"] == payload["stale"]

            send_to(kc, card["id"], {"event": "approve"})
            wait_for(kc, "session.done")
            assert (ws / "a.py").read_text() == "x = 2\n# a note\n"
            assert execute(kc, "print(session.id, session.end_reason)").split() == [
                session_id,
                "finished",
            ]
    events = read_events(log)
    kinds = [e.type for e in events]
    assert kinds.count("session_start") == 1 and kinds.count("resume") == 1
    (proposed,) = [e for e in events if e.type == "tool_proposed" and e.restaged]
    assert proposed.stale and proposed.call_id == "c1"
    commits = [e for e in events if e.type == "commit"]
    assert [(c.ok, c.paths) for c in commits] == [(True, ["a.py"])]


def test_the_message_box_says_while_a_proposal_waits_and_continues_once_ended(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    server = OpenAIServer()
    server.queue(
        tool_reply(tool_call("read", {"path": "a.py"}, "r1")),
        tool_reply(tool_call("run", {"command": "true"}, "c1")),
        tool_reply(tool_call("finish", {"summary": "a.py sets x to 1"}, "f1")),
        tool_reply(tool_call("finish", {"summary": "nothing else to say"}, "f2")),
    )
    with server, running_kernel(tmp_path, model_env(server)) as kc:
        execute(kc, "import json, grinta_jupyter\n%load_ext grinta_jupyter")
        execute(kc, f"%grinta --root {ws} tell me what a.py holds")
        execute(kc, "session = grinta_jupyter.current()")
        wait_for(kc, "session.waiting")
        card = read_json(kc, PENDING)
        assert card["payload"]["tool"] == "run" and card["mode"] == "say"

        # Enter in the box while the run waits: said, and the run still waits.
        send_to(kc, card["box"], {"event": "say", "text": "  the answer is in a comment  "})
        wait_for(kc, "any(e.type == 'user_message' for e in session.log.events)")
        assert execute(kc, "print(session.waiting, session.pending.call.id)").split() == [
            "True",
            "c1",
        ]
        assert len(server.requests) == 2
        status = execute(kc, "print(current_view().panel.box.status)").strip()
        assert status == (
            "sent: the model reads it at its next turn (the step above still waits for you)"
        )
        wait_for(kc, "[m.payload['kind'] for m in current_view().panel.marks] == ['said']")
        # Nothing the box sends is a decision: not even a message that looks like one.
        send_to(kc, card["box"], {"event": "approve"})
        send_to(kc, card["box"], {"event": "say", "text": "   "})
        assert execute(kc, "print(session.waiting)").strip() == "True"

        send_to(kc, card["id"], {"event": "approve"})
        wait_for(kc, "session.done")
        third = server.requests[2].body["messages"]
        assert [m["role"] for m in third[-2:]] == ["tool", "user"]
        assert third[-1]["content"].endswith("the answer is in a comment")

        # The session has ended: the same box now gives it its next task.
        assert execute(kc, "print(current_view().panel.box.mode)").strip() == "continue"
        send_to(kc, card["box"], {"event": "say", "text": "one more thing"})
        wait_for(kc, "current_view().panel.box.draft == 'one more thing'")
        assert "ended before this arrived" in execute(kc, "print(current_view().panel.box.status)")
        send_to(kc, card["box"], {"event": "continue", "text": "anything else in a.py?"})
        wait_for(kc, "len(session.tasks) == 2 and session.done")
        fourth = server.requests[3].body["messages"]
        assert "anything else in a.py?" in fourth[-1]["content"]
        marks = read_json(
            kc, "print(json.dumps([m.payload['kind'] for m in current_view().panel.marks]))"
        )
        assert marks == ["said", "ended", "task"]
        # The cell's display followed the second task to its end: the trace, with its marks.
        kinds = [m["msg_type"] for m in messages(kc, "%grinta log")]
        assert "display_data" in kinds
