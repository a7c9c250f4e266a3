"""Sessions that last, through ``%grinta`` in IPython's own shell: say, continue, rewind, resume.

The model is real litellm talking to the local OpenAI-compatible server (tests/openai_server.py),
so what the magics do is checked where it matters: in the request bodies the server received.
IPython's shell runs no event loop, so the session is stepped (manual mode, ``%grinta step``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import grinta_jupyter
from grinta_jupyter.events.log import read_events
from grinta_jupyter.jupyter.magics import split_command
from grinta_jupyter.jupyter.mime import SESSION_MIME, trace_bundle
from tests.conftest import served_grinta_shell
from tests.openai_server import OpenAIServer, tool_call, tool_reply


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "b.py").write_text("y = 2\n")
    return root


@pytest.fixture
def ip(tmp_path, monkeypatch, openai_server: OpenAIServer):
    monkeypatch.chdir(tmp_path)
    yield from served_grinta_shell(monkeypatch, openai_server.url)


def magic(ip, line: str) -> None:
    assert ip.run_line_magic("grinta", line) is None, "a %grinta line never echoes Out[n]"


def edit(call_id: str, old: str, new: str, path: str = "a.py"):
    return tool_reply(
        tool_call("replace_string", {"path": path, "old_string": old, "new_string": new}, call_id)
    )


def read(call_id: str, path: str):
    return tool_reply(tool_call("read", {"path": path}, call_id))


def finish(call_id: str, summary: str):
    return tool_reply(tool_call("finish", {"summary": summary}, call_id))


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


def test_the_new_words_are_subcommands():
    assert split_command("say use pathlib") == ("say", "use pathlib")
    assert split_command("continue add a test") == ("continue", "add a test")
    assert split_command("rewind 3") == ("rewind", "3")
    assert split_command("resume") == ("resume", "")
    assert split_command("-- continue the refactor") == (None, "continue the refactor")


def test_say_reaches_the_next_request_and_the_pending_proposal_waits_on(
    ip, ws, openai_server, capsys
):
    openai_server.queue(edit("c1", "x = 1", "x = 2"), read("c2", "a.py"))
    magic(ip, f"--root {ws} change x to 2 in a.py")
    session = grinta_jupyter.current()
    magic(ip, "step")
    step = session.pending
    assert session.waiting and step.call.name == "replace_string"
    capsys.readouterr()

    magic(ip, "say")
    assert lines(capsys)[0].startswith("%grinta: say takes what to tell the model")
    magic(ip, "say keep the trailing newline, and use 2 not 2.0")
    assert lines(capsys) == [
        "said: the model reads it at its next turn (the pending step still waits for you)"
    ]
    assert session.waiting and session.pending is step, "saying decides nothing"
    assert len(openai_server.requests) == 1, "nothing is sent before the model's next turn"
    view = grinta_jupyter.jupyter.controller.current_view()
    said = [m.payload for m in view.panel.marks]
    assert [(m["kind"], m["text"], m["at"]) for m in said] == [
        ("said", "keep the trailing newline, and use 2 not 2.0", 1)
    ]

    magic(ip, "continue something else")
    (hint,) = lines(capsys)
    assert hint == (
        "%grinta: the session is still working on its task: tell it something with "
        "%grinta say TEXT, or end it with %grinta stop before giving it a next task"
    )
    assert session.tasks == ["change x to 2 in a.py"] and session.waiting

    magic(ip, "approve")
    assert (ws / "a.py").read_text() == "x = 2\n"
    magic(ip, "step")  # the model's next turn: the read (it runs without asking)
    second = openai_server.requests[1].body
    roles = [m["role"] for m in second["messages"]]
    # After the edit's result, the user's words: where the API wants them.
    assert roles[-2:] == ["tool", "user"]
    assert "keep the trailing newline, and use 2 not 2.0" in second["messages"][-1]["content"]
    events = read_events(session.log_path)
    (message,) = [e for e in events if e.type == "user_message" and e.source == "user"]
    assert message.text == "keep the trailing newline, and use 2 not 2.0"
    trace = trace_bundle(session)[SESSION_MIME]
    assert [(m["kind"], m["at"]) for m in trace["marks"]] == [("said", 1)]

    magic(ip, "stop")
    capsys.readouterr()
    magic(ip, "say one more thing")
    assert lines(capsys) == [
        "%grinta: the session has ended: give it a next task with %grinta continue TASK"
    ]


def test_continue_gives_a_finished_session_its_next_task(ip, ws, openai_server, capsys):
    openai_server.queue(
        read("c1", "a.py"),
        finish("c2", "a.py sets x to 1"),
        read("c3", "b.py"),
        finish("c4", "b.py sets y to 2"),
    )
    (ws / "AGENTS.md").write_text("Answer in one sentence.\n")
    magic(ip, f"--root {ws} what does a.py hold?")
    assert "grinta: rules files loaded: AGENTS.md" in lines(capsys)
    session = grinta_jupyter.current()
    view = grinta_jupyter.jupyter.controller.current_view()
    assert "rules: AGENTS.md" in view.panel.header.value
    for _ in range(3):
        magic(ip, "step")
    assert session.done and session.end_reason == "finished"
    system = openai_server.requests[0].body["messages"][0]
    assert system["role"] == "system" and "Answer in one sentence." in system["content"]
    first_id, log = session.id, session.log_path
    capsys.readouterr()

    magic(ip, "continue")
    assert lines(capsys)[0].startswith("%grinta: continue takes the next task")
    magic(ip, "continue and what does b.py hold?")
    assert grinta_jupyter.current() is session and not session.done
    assert session.tasks == ["what does a.py hold?", "and what does b.py hold?"]
    for _ in range(3):
        magic(ip, "step")
    assert session.done and session.summary == "b.py sets y to 2"

    third = openai_server.requests[2].body
    assert "and what does b.py hold?" in user_texts(third)[-1]
    # The context was carried over: the first task's read and finish are in the request.
    assert any("x = 1" in str(m.get("content")) for m in third["messages"])
    assert session.id == first_id and session.log_path == log
    events = read_events(log)
    assert [(e.type, getattr(e, "number", None)) for e in events if e.type == "task_start"] == [
        ("task_start", 2)
    ]
    assert [e.reason for e in events if e.type == "session_end"] == ["finished", "finished"]

    trace = trace_bundle(session)[SESSION_MIME]
    assert trace["tasks"] == session.tasks
    assert [(m["kind"], m["title"], m["at"]) for m in trace["marks"]] == [
        ("ended", "Task 1 ended", 2),
        ("task", "Task 2", 2),
    ]
    assert trace["marks"][0]["text"] == "finished: a.py sets x to 1"
    assert trace["rules"] == [{"path": "AGENTS.md", "chars": 23, "truncated": False}]
    assert [m.payload for m in view.panel.marks] == trace["marks"]
    assert [c.payload for c in view.panel.cards.values()] == trace["steps"]


def test_rewind_undoes_the_later_commits_or_refuses_and_changes_nothing(
    ip, ws, openai_server, capsys
):
    openai_server.queue(
        edit("c1", "x = 1", "x = 2"),
        edit("c2", "x = 2", "x = 3"),
        edit("c3", "y = 2", "y = 5", path="b.py"),
    )
    magic(ip, f"--root {ws} change x in a.py")
    session = grinta_jupyter.current()
    for _ in range(2):
        magic(ip, "step")
        magic(ip, "approve")
    assert (ws / "a.py").read_text() == "x = 3\n"
    capsys.readouterr()

    magic(ip, "rewind two")
    assert (
        lines(capsys)[0] == "%grinta: rewind takes a step number, e.g. %grinta rewind 3 (got 'two')"
    )
    magic(ip, "rewind 7")
    (refused,) = lines(capsys)
    assert refused.startswith("%grinta: not rewound: there is no step 7")

    (ws / "a.py").write_text("x = 9\n")  # someone edits the file outside the session
    magic(ip, "rewind 1")
    (refused,) = lines(capsys)
    assert refused.startswith("%grinta: not rewound: "), refused
    assert (ws / "a.py").read_text() == "x = 9\n", "a refused rewind changes nothing"
    assert session.branch == 0 and len(session.steps) == 2

    (ws / "a.py").write_text("x = 3\n")
    magic(ip, "rewind 1")
    out = lines(capsys)
    assert out[0] == (
        "rewound to step 1: 1 commit undone; the session goes on from there as branch 1"
    )
    assert (ws / "a.py").read_text() == "x = 2\n"
    assert session.branch == 1 and len(session.steps) == 1 and not session.done

    magic(ip, "step")  # the model goes on from step 1
    assert session.pending.call.id == "c3" and session.pending.number == 2
    third = openai_server.requests[2].body
    assert not any("x = 3" in json.dumps(m) for m in third["messages"]), "step 2 is gone"

    view = grinta_jupyter.jupyter.controller.current_view()
    trace = trace_bundle(session)[SESSION_MIME]
    assert [(s["step"], s["branch"], s["rewound"]) for s in trace["steps"]] == [
        (1, 0, False),
        (2, 0, True),
        (2, 1, False),
    ]
    assert [(m["kind"], m["title"], m["at"]) for m in trace["marks"]] == [
        ("rewind", "Rewound to step 1", 2)
    ]
    assert [c.payload["rewound"] for c in view.panel.rewound] == [True]
    assert view.panel.cards[2].payload == trace["steps"][2]
    assert "branch 1" in view.panel.header.value
    magic(ip, "stop")


def test_resume_names_what_is_missing_in_one_line(ip, ws, capsys, monkeypatch):
    magic(ip, f"resume --root {ws}")
    (line,) = lines(capsys)
    assert line == (
        f"%grinta: no unfinished session in {ws}/.grinta/sessions: name one, %grinta resume LOG"
    )
    magic(ip, "resume nowhere.jsonl")
    (line,) = lines(capsys)
    assert line.startswith("%grinta: no session log nowhere.jsonl")
    magic(ip, "say hello")
    (line,) = lines(capsys)
    assert line.startswith("%grinta: no session yet: start one with %grinta TASK")


@pytest.mark.parametrize("option", ["--max-steps 3", "--toolset intent"])
def test_resume_refuses_what_it_would_not_apply(ip, ws, capsys, option):
    """A resumed session keeps the toolset and limits of its log: the options were dropped
    without a word (``%grinta resume --max-steps 3`` bounded nothing). Refused before any
    log is looked for, and nothing is resumed."""
    magic(ip, f"resume {option} --root {ws}")
    (line,) = lines(capsys)
    assert line == (
        f"%grinta: {option.split()[0]} cannot change a resumed session: it keeps the toolset "
        "and limits it started with; leave it out, or start a new session"
    )
    assert grinta_jupyter.current() is None


def test_resume_names_the_environments_limits_it_does_not_take(ip, tmp_path, capsys, monkeypatch):
    """The same limits from the environment are not refused (it is set for every session),
    but named, as ``grinta resume`` names them (tests/test_cli_kept_settings.py)."""
    from tests.test_cli_kept_settings import killed_at_the_prompt

    log = killed_at_the_prompt(tmp_path)
    monkeypatch.setenv("GRINTA_MAX_WALL_TIME", "60")
    monkeypatch.setenv("GRINTA_MAX_STEPS", "40")  # the log's own: nothing to say
    magic(ip, f"resume {log}")
    out = lines(capsys)
    assert out[0].startswith("resumed session ")
    assert [line for line in out if line.startswith("note: ")] == [
        "note: GRINTA_MAX_WALL_TIME=60.0 does not apply: this session keeps the max wall time "
        "it started with (no limit); start a new session to use it",
    ]
    session = grinta_jupyter.current()
    assert session is not None and session.limits.max_wall_time is None
    magic(ip, "stop")
