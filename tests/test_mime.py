"""The MIME bundles: schema, HTML fallback markup, text, sizes."""

from __future__ import annotations

import json
import re

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.jupyter.mime import (
    SESSION_MIME,
    STEP_MIME,
    diff_rows_html,
    session_bundle,
    step_bundle,
    trace_bundle,
)
from grinta_jupyter.samples.tasks import DEMO_FIX, copy_workspace
from tests.conftest import drive


def run_session(tmp_path, turns, decide=lambda s: s.approve(), task="fix"):
    root = copy_workspace("raft_kv", tmp_path / "raft_kv")
    return drive(Session(task, model=ScriptedModel(turns), root=root), decide)


def test_step_bundle_schema_and_html_fallback(tmp_path):
    session = run_session(
        tmp_path,
        [
            reply("Fixing the <comparison> & more.", call("replace_string", **DEMO_FIX)),
            reply("", call("finish", summary="done")),
        ],
    )
    bundle = step_bundle(session.steps[0], session.id)
    payload = bundle[STEP_MIME]
    assert (
        payload["version"] == 1
        and payload["tool"] == "replace_string"
        and payload["status"] == "committed"
    )
    assert payload["decision"] == "approve" and payload["arguments"] == DEMO_FIX
    assert payload["files"] == [{"path": "raft_kv/node.py", "added": 1, "removed": 1}]
    assert payload["diff"].startswith(
        "--- a/raft_kv/node.py\n+++ b/raft_kv/node.py\n@@ -282,7 +282,7 @@"
    )
    html = bundle["text/html"]
    assert "<script" not in html.lower() and "style=" in html
    assert "Fixing the &lt;comparison&gt; &amp; more." in html
    assert "<code" in html and "replace_string</code>" in html
    assert "<details><summary>call arguments</summary>" in html
    # The diff is a table with old and new line numbers and the changed lines.
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html)
    removed = next(
        r for r in rows if "-        if self.log.term_at(request.prev_log_index) &lt; " in r
    )
    added = next(r for r in rows if "+        if self.log.term_at(request.prev_log_index) != " in r)
    assert ">285</td><td" in removed and ">285</td><td" in added
    assert "raft_kv/node.py" in rows[0]
    assert bundle["text/plain"].startswith("[grinta step 1] replace_string (committed)")


def test_refused_and_vetoed_steps_render_their_reason(tmp_path):
    session = run_session(
        tmp_path,
        [
            reply(
                "",
                call(
                    "replace_string",
                    path="raft_kv/node.py",
                    old_string="return",
                    new_string="yield",
                ),
            ),
            reply("", call("create", path="notes.txt", content="x\n")),
            reply("", call("finish", summary="ok")),
        ],
        decide=lambda s: s.veto("no <notes>"),
    )
    refused = step_bundle(session.steps[0], session.id)
    assert refused[STEP_MIME]["status"] == "refused"
    assert refused[STEP_MIME]["validation"]["code"] == "AMBIGUOUS_MATCH"
    assert "<b>AMBIGUOUS_MATCH</b>" in refused["text/html"]
    vetoed = step_bundle(session.steps[1], session.id)
    assert vetoed[STEP_MIME]["status"] == "vetoed" and vetoed[STEP_MIME]["reason"] == "no <notes>"
    assert "vetoed: no &lt;notes&gt;" in vetoed["text/html"]


def test_diff_rows_number_both_sides():
    diff = "--- a/f.py\n+++ b/f.py\n@@ -10,3 +10,3 @@\n a\n-b\n+c\n d\n"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", diff_rows_html(diff))
    # header, hunk, then (old, new, text) per line
    assert cells[2:] == ["10", "10", " a", "11", "", "-b", "", "11", "+c", "12", "12", " d"]


def test_session_and_trace_bundles(tmp_path):
    session = run_session(
        tmp_path,
        [
            reply("", call("read", path="raft_kv/log.py")),
            reply("", call("finish", summary="read it")),
        ],
        task="read the log module",  # a finish without a change is right for this task
    )
    summary = session_bundle(session)[SESSION_MIME]
    assert summary["end_reason"] == "finished" and summary["metrics"]["steps"] == 2
    trace = trace_bundle(session)
    assert [s["tool"] for s in trace[SESSION_MIME]["steps"]] == ["read", "finish"]
    assert (
        trace["text/html"].count('class="grinta-step"') == 2
        and 'class="grinta-session"' in trace["text/html"]
    )


def test_an_ordinary_step_stays_small_and_huge_outputs_are_cut(tmp_path):
    big = "x = 1\n" * 20_000
    session = run_session(
        tmp_path,
        [
            reply("", call("create", path="big.py", content=big)),
            reply("", call("run", command="python -m pytest")),
            reply("", call("finish", summary="done")),
        ],
    )
    for step in session.steps:
        size = len(json.dumps(step_bundle(step, session.id)))
        assert size < 50_000, (step.call.name, size)
    created = step_bundle(session.steps[0], session.id)[STEP_MIME]
    assert created["diff_truncated"] is True
    ordinary = len(json.dumps(step_bundle(session.steps[1], session.id)))
    assert ordinary < 20_000


def test_secrets_are_redacted_from_bundles(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", "tok-0123456789-secret")
    session = run_session(
        tmp_path,
        [
            reply("", call("run", command="echo $SERVICE_TOKEN")),
            reply("", call("finish", summary="tok-0123456789-secret")),
        ],
    )
    for step in session.steps:
        assert "tok-0123456789-secret" not in json.dumps(step_bundle(step, session.id))
    assert "tok-0123456789-secret" not in json.dumps(session_bundle(session))


def test_long_diffs_are_cut_with_a_note():
    diff = "--- a/f\n+++ b/f\n@@ -1,200 +1,200 @@\n" + "".join(
        f"-a{i}\n+b{i}\n" for i in range(200)
    )
    html = diff_rows_html(diff, max_lines=50)
    assert html.count("<tr") == 50 and "353 more diff lines" in html  # file, hunk, 47 lines, note


def test_a_session_ended_by_a_model_error_says_why_on_its_card(tmp_path, monkeypatch):
    from grinta_jupyter.agent.models import LiteLLMModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRINTA_API_KEY", raising=False)
    root = copy_workspace("raft_kv", tmp_path / "raft_kv")
    session = drive(
        Session("fix", model=LiteLLMModel("openai/gpt-4o-mini"), root=root), lambda s: None
    )
    assert session.end_reason == "error"
    bundle = session_bundle(session)
    assert bundle[SESSION_MIME]["error"].startswith("MISSING_KEY: ")
    assert "OPENAI_API_KEY" in bundle["text/html"] and "Error: MISSING_KEY" in bundle["text/html"]
    assert "error: MISSING_KEY" in bundle["text/plain"]


def test_a_write_approved_in_part_says_why_the_other_hunks_were_declined(tmp_path):
    from grinta_jupyter.agent import ApproveHunks

    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("a = 1\n" + "\n" * 8 + "b = 1\n")
    edits = [
        {"path": "calc.py", "old_string": "a = 1", "new_string": "a = 2"},
        {"path": "calc.py", "old_string": "b = 1", "new_string": "b = 2"},
    ]
    turns = [reply("", call("multiedit", edits=edits)), reply("", call("finish", summary="x"))]
    session = drive(
        Session("t", model=ScriptedModel(turns), root=root),
        lambda s: s.decide(ApproveHunks([0], "b stays")),
    )
    bundle = step_bundle(session.steps[0], session.id)
    payload = bundle[STEP_MIME]
    assert (payload["decision"], payload["reason"]) == ("approve_hunks", "b stays")
    assert payload["status"] == "committed" and "+b = 2" not in payload["diff"]
    assert "hunks declined: b stays" in bundle["text/html"]
    assert "hunks declined: b stays" in bundle["text/plain"]
    assert "vetoed" not in bundle["text/plain"]
