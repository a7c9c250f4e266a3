"""Hostile text on every card surface: each diff line shows by its role, every character escaped.

Real proposals are made through ``Runtime`` on a temp workspace (removed ``-- SQL``
comments, added ``++`` and ``--- a/`` lines, a file name holding a newline,
content with ``\\r``, ESC, backspace, U+202E, U+2028) and run through
``step_payload``, ``step_html`` and ``step_text``, a whole session's bundles and the
live panel. The HTML is read with ``html.parser``: a row's role is its ``<tr>``
class, its text is what a reader sees.

Three fixtures are shared with the labextension's tests (labextension/test/fixtures):
``visible-cases.json``, the escaping rule both ``visible`` implementations follow,
``row-cases.json``, which whitespace or letters of a diff row both cards draw visibly,
and ``hostile-diffs.json``, diffs this runtime makes and the rows both diff parsers
must read from them. To accept an intended change to those diffs:
GRINTA_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_render_hostile.py
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.session import Session
from grinta_jupyter.agent.step import Step
from grinta_jupyter.jupyter.mime import (
    MAX_DIFF_CHARS,
    SESSION_MIME,
    diff_rows_html,
    diff_text_lines,
    session_bundle,
    step_bundle,
    step_html,
    step_payload,
    step_text,
    trace_bundle,
)
from grinta_jupyter.runtime.diffs import DiffFile, parse_unified
from grinta_jupyter.runtime.display import row_spaces, visible, visible_parts
from grinta_jupyter.runtime.secrets import Secrets

FIXTURES = Path(__file__).resolve().parents[1] / "labextension" / "test" / "fixtures"

# Written out, not computed with ``visible``: the test states the spelling a reader sees.
HOSTILE = "A\rB\x1b[2Kc\x08d\u202eE\u2028F\u200bG"
SHOWN = "A\\rB\\x1b[2Kc\\bd\\u202eE\\u2028F\\u200bG"
ESCAPES = ["\\r", "\\x1b", "\\b", "\\u202e", "\\u2028", "\\u200b"]
# A name that would fake a file header, a hunk and a row if it were shown raw.
NEWLINE_NAME = "evil\n+++ b/fake.py\n@@ -1 +1 @@\n+owned.txt"
# Characters that must never reach text/html or text/plain (newline and tab may).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")

SQL_BEFORE = "-- SQL comment\nSELECT 1;\n-- other\n--- a/q.txt\n"
SQL_AFTER = "++ x\nSELECT 2;\n+++ b/q.txt\n"
LOOKALIKE = "--- a/evil\n+++ b/evil\n@@ -1 +1 @@\n-x\n+y\n\\ No newline at end of file\n"

# name -> (files in the workspace, tool, arguments): the diffs shared with the labextension.
DIFF_CASES: dict[str, tuple[dict[str, str], str, dict[str, Any]]] = {
    "removed lines that look like headers": (
        {"q.txt": SQL_BEFORE},
        "replace_string",
        {"path": "q.txt", "old_string": SQL_BEFORE, "new_string": SQL_AFTER},
    ),
    "added lines that look like a diff": ({}, "create", {"path": "evil.txt", "content": LOOKALIKE}),
    "a file name holding a newline": ({}, "create", {"path": NEWLINE_NAME, "content": "x = 1\n"}),
    "control characters in content and name": (
        {},
        "create",
        {"path": "notes\u202e\x1b[2K.txt", "content": f"{HOSTILE}\n\x1b]0;title\x07\n"},
    ),
    "a carriage return ending the last line": (
        {"w.txt": "a\nb"},
        "replace_string",
        {"path": "w.txt", "old_string": "b", "new_string": "b\r"},
    ),
    "two files, the first ending in a removed -- line": (
        {"one.txt": "keep\n-- drop\n", "two.txt": "--- a/two\n"},
        "multiedit",
        {
            "edits": [
                {"path": "one.txt", "old_string": "-- drop\n", "new_string": ""},
                {"path": "two.txt", "old_string": "--- a/two\n", "new_string": "+++ b/two\n"},
            ]
        },
    ),
}


# -- reading the HTML ----------------------------------------------------------------


@dataclass
class Row:
    classes: list[str]
    cells: list[str] = field(default_factory=list)
    escapes: list[str] = field(default_factory=list)


class Card(HTMLParser):
    """A card's HTML as a reader meets it: its table rows, its escapes, its text."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.rows: list[Row] = []
        self.escapes: list[str] = []
        self.text = ""
        self._row: Row | None = None
        self._spans: list[bool] = []  # per open span: is it an escape?
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "tr":
            self._row = Row(classes)
            self.rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row.cells.append("")
        elif tag == "span":
            self._spans.append("grinta-escape" in classes)
            if self._spans[-1]:
                self.escapes.append("")
                if self._row is not None:
                    self._row.escapes.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None
        elif tag == "span" and self._spans:
            self._spans.pop()

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._row is not None and self._row.cells:
            self._row.cells[-1] += data
        if self._spans and self._spans[-1]:
            self.escapes[-1] += data
            if self._row is not None:
                self._row.escapes[-1] += data

    def role(self, role: str) -> list[str]:
        """The shown text (marker and line) of every diff row of ``role``."""
        return [r.cells[2] for r in self.rows if f"grinta-diff-{role}" in r.classes]

    def headers(self) -> list[str]:
        return [r.cells[0] for r in self.rows if "grinta-diff-file" in r.classes]

    def hunks(self) -> list[str]:
        return [r.cells[0] for r in self.rows if "grinta-diff-hunk" in r.classes]


# -- making steps --------------------------------------------------------------------


def make_step(
    root: Path,
    tool: str,
    args: dict[str, Any],
    files: dict[str, str] | None = None,
    sent: str | None = None,
    **step: Any,
) -> Step:
    """A proposal made through the Runtime on ``root``, as the step a card shows.

    ``sent`` is the arguments' text as the model sent it (by default ``args`` as JSON).
    """
    root.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (root / name).write_bytes(text.encode())
    proposal = Runtime(root).propose(tool, args)
    return Step(1, ToolCall("call-1", tool, sent or json.dumps(args)), proposal, **step)


def surfaces(step: Step, secrets: Secrets | None = None) -> tuple[dict[str, Any], Card, str]:
    payload = step_payload(step, "s1", secrets)
    return payload, Card(step_html(payload)), step_text(payload)


TEXT_ROLES = {"- ": "del", "+ ": "add", "  ": "context"}


def text_rows(text: str) -> list[tuple[str, str]]:
    """The (role, text) rows a reader finds in text/plain: marked lines after a hunk header."""
    rows, in_hunk = [], False
    for line in text.split("\n"):
        if line.startswith("@@ "):
            in_hunk = True
        elif in_hunk and line[:2] in TEXT_ROLES:
            rows.append((TEXT_ROLES[line[:2]], line[2:]))
        elif not line.startswith("\\ "):
            in_hunk = False
    return rows


def diff_rows(diff: str) -> list[tuple[str, str]]:
    """The (role, text) rows of a unified diff, read by its hunk counts."""
    return [(r.role, r.text) for f in parse_unified(diff) for h in f.hunks for r in h.rows]


def file_headers(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith(("--- ", "+++ "))]


def assert_no_raw_controls(*outputs: str) -> None:
    for output in outputs:
        assert not RAW.search(output), repr(RAW.findall(output))


# -- roles -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["q.txt", "q.sql"])  # q.sql: refused (not valid SQL), same diff
def test_removed_lines_that_look_like_file_headers_stay_removed_rows(tmp_path, name):
    args = {"path": name, "old_string": SQL_BEFORE, "new_string": SQL_AFTER}
    step = make_step(tmp_path / "ws", "replace_string", args, {name: SQL_BEFORE})
    payload, card, text = surfaces(step)
    assert payload["status"] == ("refused" if name == "q.sql" else "pending")
    removed, added = SQL_BEFORE.splitlines(), SQL_AFTER.splitlines()
    assert card.role("del") == ["-" + line for line in removed]
    assert card.role("add") == ["+" + line for line in added]
    assert card.headers() == [name] and card.hunks() == ["@@ -1,4 +1,3 @@"]
    expected = [("del", line) for line in removed] + [("add", line) for line in added]
    assert text_rows(text) == expected
    assert file_headers(text) == [f"--- a/{name}", f"+++ b/{name}"]
    assert "- -- SQL comment" in text.split("\n") and "+ ++ x" in text.split("\n")
    assert diff_rows(payload["diff"]) == expected


def test_added_lines_that_look_like_a_diff_stay_added_rows(tmp_path):
    step = make_step(tmp_path / "ws", "create", {"path": "evil.txt", "content": LOOKALIKE})
    _, card, text = surfaces(step)
    assert card.role("add") == ["+" + line for line in LOOKALIKE.splitlines()]
    assert card.role("del") == [] and card.role("context") == []
    assert card.headers() == ["evil.txt (new file)"]
    assert card.hunks() == ["@@ -0,0 +1,6 @@"]
    assert text_rows(text) == [("add", line) for line in LOOKALIKE.splitlines()]
    assert file_headers(text) == ["--- /dev/null", "+++ b/evil.txt"]
    assert sum(line.startswith("@@") for line in text.split("\n")) == 1


def test_a_file_name_holding_a_newline_is_one_escaped_name(tmp_path):
    step = make_step(tmp_path / "ws", "create", {"path": NEWLINE_NAME, "content": "x = 1\n"})
    payload, card, text = surfaces(step)
    shown = NEWLINE_NAME.replace("\n", "\\n")
    assert card.headers() == [f"{shown} (new file)"]
    header = next(r for r in card.rows if "grinta-diff-file" in r.classes)
    assert header.escapes == ["\\n"] * 3
    assert card.hunks() == ["@@ -0,0 +1 @@"] and card.role("add") == ["+x = 1"]
    assert [r for r in card.rows if r.classes and r.classes[0] == "grinta-diff-row"] == [
        Row(["grinta-diff-row", "grinta-diff-add"], ["", "1", "+x = 1"])
    ]
    # text/plain: one header pair, the name on one line; a diff reader finds one row.
    assert "+++ b/" + shown in text.split("\n")
    assert sum(line.startswith(("+++ ", "--- ", "@@")) for line in text.split("\n")) == 3
    assert text_rows(text) == [("add", "x = 1")]
    assert payload["files"][0]["path"] == NEWLINE_NAME  # the payload keeps the real name


# -- escaping --------------------------------------------------------------------------


def test_control_characters_are_escaped_on_every_surface(tmp_path):
    root = tmp_path / "ws"
    name = "notes\u202e\x1b[2K.txt"
    content = f"{HOSTILE}\n\x1b]0;title\x07\n"
    step = make_step(
        root,
        "create",
        {"path": name, "content": content},
        text=f"I will write {HOSTILE}",
        decision="veto",
        reason=f"no {HOSTILE}",
    )
    payload, card, text = surfaces(step)
    html = step_html(payload)
    assert_no_raw_controls(html, text)
    assert card.role("add") == ["+" + SHOWN, "+\\x1b]0;title\\a"]
    assert card.headers() == ["notes\\u202e\\x1b[2K.txt (new file)"]
    assert set(ESCAPES) <= set(card.escapes)
    # Each escape is a styled span: no escape spelling is left as plain text in a row.
    added = next(r for r in card.rows if "grinta-diff-add" in r.classes)
    assert added.escapes == ESCAPES
    assert f"I will write {SHOWN}" in card.text and f"vetoed: no {SHOWN}" in card.text
    assert "+ " + SHOWN in text.split("\n") and f"vetoed: no {SHOWN}" in text
    assert "notes\\u202e\\x1b[2K.txt" in text.split("\n")[0]  # the summary names the file
    # The payload is data: it keeps the text as it is, for the labextension to escape.
    assert payload["text"] == f"I will write {HOSTILE}" and HOSTILE in payload["diff"]


def test_refusals_candidates_and_command_output_are_escaped(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "h.py").write_text(f"x = '{HOSTILE}'\ny = 1\n")
    runtime = Runtime(root)
    # A candidate snippet shows the file's own hostile line.
    args = {"path": "h.py", "old_string": "y = 1\n", "new_string": "y = (\n"}
    refused = runtime.propose("replace_string", args)
    assert refused.error is not None
    step = Step(1, ToolCall("c1", "replace_string", json.dumps(args)), refused)
    payload, card, text = surfaces(step)
    assert payload["validation"]["candidates"], "the syntax error shows the staged lines"
    assert_no_raw_controls(step_html(payload), text)
    assert SHOWN in card.text
    # A command's output, and arguments that are not JSON.
    command = "printf 'ok\\rEVIL\\b\\n'; printf '\\342\\200\\256 tail'"
    proposal = runtime.propose("run", {"command": command})
    run = Step(1, ToolCall("c2", "run", json.dumps({"command": command})), proposal)
    run.observation = runtime.commit(proposal)
    assert "\r" in run.observation.output and "\u202e" in run.observation.output
    payload, card, text = surfaces(run)
    assert_no_raw_controls(step_html(payload), text)
    assert "ok\\rEVIL\\b" in card.text and "\\u202e tail" in card.text
    assert "ok\\rEVIL\\b" in text and all(line.startswith("| ") for line in text.split("\n")[1:]), (
        "output is marked off: column 0 is for step headers and diff lines"
    )
    raw = Step(1, ToolCall("c3", "run", f"not json {HOSTILE}"), runtime.propose("run", "x"))
    payload, card, text = surfaces(raw)
    assert_no_raw_controls(step_html(payload), text)
    assert f"not json {SHOWN}" in card.text


def test_a_whole_session_and_the_live_panel_show_escapes(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "q.txt").write_text(SQL_BEFORE)
    turns = [
        reply(
            f"Editing {HOSTILE}",
            call("replace_string", path="q.txt", old_string=SQL_BEFORE, new_string=SQL_AFTER),
        ),
        reply("", call("create", path=NEWLINE_NAME, content=f"{HOSTILE}\n")),
        reply("", call("finish", summary=f"done {HOSTILE}")),
    ]
    from grinta_jupyter.agent import ModelText, NeedsDecision
    from grinta_jupyter.jupyter.panel import SessionPanel

    session = Session(f"fix {HOSTILE}", model=ScriptedModel(turns), root=root)
    panel = SessionPanel(session)  # the live panel draws each card as the session runs

    async def go() -> None:  # the controller's loop: every update to the panel
        async for update in session.updates():
            panel.apply(update)
            if isinstance(update, NeedsDecision):
                panel.cards[update.step.number].receive({"event": "approve"})

    asyncio.run(go())
    trace = trace_bundle(session)
    summary = session_bundle(session)
    assert_no_raw_controls(
        trace["text/html"], trace["text/plain"], summary["text/html"], summary["text/plain"]
    )
    for step in session.steps:
        bundle = step_bundle(step, session.id)
        assert_no_raw_controls(bundle["text/html"], bundle["text/plain"])
    card = Card(trace["text/html"])
    assert card.role("del") == ["-" + line for line in SQL_BEFORE.splitlines()]
    assert card.role("add") == ["+" + line for line in SQL_AFTER.splitlines()] + ["+" + SHOWN]
    assert card.headers() == ["q.txt", NEWLINE_NAME.replace("\n", "\\n") + " (new file)"]
    assert f"Task: fix {SHOWN}" in Card(summary["text/html"]).text

    # The live cards carry the saved trace's payloads (the same TypeScript card draws both,
    # and escapes there: labextension/test/hostile.test.ts); the panel's own HTML escapes here.
    assert [c.payload for c in panel.cards.values()] == trace[SESSION_MIME]["steps"]
    assert_no_raw_controls(panel.header.value)
    panel.apply(ModelText(f"thinking {HOSTILE}"))
    assert_no_raw_controls(panel.thinking.value)
    assert f"thinking {SHOWN}" in Card(panel.thinking.value).text


def test_the_visible_rule_matches_the_shared_cases():
    cases = json.loads((FIXTURES / "visible-cases.json").read_text(encoding="ascii"))
    assert len(cases) >= 20
    for case in cases:
        keep = case["keep_newlines"]
        assert visible(case["text"], keep_newlines=keep) == case["visible"], case["name"]
        assert [list(p) for p in visible_parts(case["text"], keep_newlines=keep)] == case["parts"]


def test_the_row_rule_matches_the_shared_cases():
    # labextension/test/diffView.test.ts reads the same cases: a row one card draws as a
    # whitespace-only change and the other as an ordinary one would read apart.
    cases = json.loads((FIXTURES / "row-cases.json").read_text(encoding="ascii"))
    assert len(cases) >= 15
    for case in cases:
        rows = [(role, text) for role, text in case["rows"]]
        assert row_spaces(rows) == case["spaces"], case["name"]


def test_hostile_text_cannot_swell_the_saved_html(tmp_path):
    content = ("a\x1b" * 100 + "\n") * 200  # 20,000 escapes, none next to another
    step = make_step(tmp_path / "ws", "create", {"path": "esc.txt", "content": content})
    bundle = step_bundle(step, "s1")
    html = bundle["text/html"]
    assert len(html) < 80_000, len(html)
    assert_no_raw_controls(html, bundle["text/plain"])
    card = Card(html)
    first = next(r for r in card.rows if "grinta-diff-add" in r.classes)
    assert first.cells[2] == "+" + "a\\x1b" * 100  # every escape shown; the first ones styled
    assert 0 < len(first.escapes) <= 100
    assert "more diff lines" in card.text


# -- truncation ------------------------------------------------------------------------


@pytest.mark.parametrize("at_line_end", [False, True])
def test_a_cut_diff_keeps_the_role_of_its_last_line(tmp_path, at_line_end):
    # Long added lines that look like a header, so the cut lands inside the first 80 rows.
    head = "--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,100 @@\n"
    line = "--- " + "y" * 195  # the row is "+" + line + "\n": 201 characters
    rows_before_cut = (MAX_DIFF_CHARS - len(head)) // 201 - 1
    first = "x" * (MAX_DIFF_CHARS - len(head) - 201 * rows_before_cut - 2)
    if not at_line_end:
        first = first[:-100]
    content = "\n".join([first] + [line] * 99) + "\n"
    step = make_step(tmp_path / "ws", "create", {"path": "big.txt", "content": content})
    assert step.proposal.diff.startswith(head)
    payload, card, text = surfaces(step)
    assert payload["diff_truncated"] is True and len(payload["diff"]) == MAX_DIFF_CHARS
    assert payload["diff"].endswith("\n") is at_line_end
    rows = diff_rows(payload["diff"])
    assert {role for role, _ in rows} == {"add"}
    whole = rows_before_cut + 1
    assert len(rows) == (whole if at_line_end else whole + 1)
    if not at_line_end:  # the partial line is still an added line, cut short
        assert line.startswith(rows[-1][1]) and len(rows[-1][1]) < len(line)
    assert card.role("add") == ["+" + text for _, text in rows]
    assert card.role("context") == [] and card.role("note") == []
    assert "cut short" in card.text
    assert text.splitlines()[-1].startswith("... the diff was cut short")
    assert [r for r in text_rows(text) if r[0] != "add"] == []


def test_a_diff_cut_anywhere_keeps_the_role_of_every_line_it_still_shows():
    for case in json.loads((FIXTURES / "hostile-diffs.json").read_text(encoding="ascii")):
        diff = case["diff"]
        whole_html = _html_rows(diff)
        whole_text = text_rows("\n".join(diff_text_lines(diff)))
        for cut in range(len(diff) + 1):
            for rows, whole in (
                (_html_rows(diff[:cut]), whole_html),
                (text_rows("\n".join(diff_text_lines(diff[:cut]))), whole_text),
            ):
                where = f"{case['name']}, cut at {cut}"
                assert len(rows) <= len(whole), where
                for i, (row, full) in enumerate(zip(rows, whole, strict=False)):
                    assert row[0] == full[0], where
                    last = i == len(rows) - 1
                    assert full[1].startswith(row[1]) if last else row[1] == full[1], where


def _html_rows(diff: str) -> list[tuple[str, str]]:
    roles = ("context", "add", "del", "note")
    return [
        (next(r for r in roles if f"grinta-diff-{r}" in row.classes), row.cells[2][1:])
        for row in Card(diff_rows_html(diff)).rows
        if "grinta-diff-row" in row.classes
    ]


# -- secrets ---------------------------------------------------------------------------

SECRET = 'tok"0123\\4567-secret'  # a quote and a backslash: JSON escapes both


def test_secrets_with_quotes_and_backslashes_are_redacted_before_any_cut(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", SECRET)
    pad = "p" * (MAX_DIFF_CHARS - len("--- /dev/null\n+++ b/s.txt\n@@ -0,0 +1 @@\n+") - 5)
    args = {"path": "s.txt", "content": pad + SECRET + "\n"}
    sent = json.dumps({**args, SECRET: SECRET})  # the model's text: a secret as a key too
    step = make_step(tmp_path / "ws", "create", args, sent=sent, text=f"the key is {SECRET}")
    bundle = step_bundle(step, "s1")
    dumped = json.dumps(bundle) + json.dumps(bundle, ensure_ascii=False)
    assert "tok" not in dumped.replace("[REDACTED]", "")
    payload = bundle["application/vnd.grinta.step+json"]
    assert payload["text"] == "the key is [REDACTED]"
    assert "[REDACTED]" in payload["arguments"]  # a key is redacted too
    # The cut falls inside the secret: no piece of it is left behind.
    assert payload["diff_truncated"] and not payload["diff"].endswith(SECRET[:5])
    json.loads(json.dumps(payload))
    # The session's own secrets (its model's key) reach the cards even when not in the env.
    monkeypatch.delenv("SERVICE_TOKEN")
    secrets = Secrets.from_env(extra=[SECRET])
    payload, card, text = surfaces(step, secrets)
    assert SECRET not in json.dumps(payload, ensure_ascii=False) + card.text + text


# -- the diffs shared with the labextension ----------------------------------------------


def _entry(name: str, diff: str) -> dict[str, Any]:
    return {"name": name, "diff": diff, "files": [_file(f) for f in parse_unified(diff)]}


def _file(f: DiffFile) -> dict[str, Any]:
    return {
        "old_path": f.old_path,
        "new_path": f.new_path,
        "notes": f.notes,
        "hunks": [
            {"header": h.header, "rows": [[r.role, r.old_line, r.new_line, r.text] for r in h.rows]}
            for h in f.hunks
        ],
    }


def test_the_shared_hostile_diffs_are_what_the_runtime_makes(tmp_path):
    made = []
    for number, (name, (files, tool, args)) in enumerate(DIFF_CASES.items()):
        step = make_step(tmp_path / f"ws{number}", tool, args, files)
        assert step.proposal.diff, name
        made.append(_entry(name, step.proposal.diff))
    path = FIXTURES / "hostile-diffs.json"
    if os.environ.get("GRINTA_UPDATE_SNAPSHOTS"):
        path.write_text("[\n" + ",\n".join(json.dumps(e) for e in made) + "\n]\n", encoding="ascii")
    stored = json.loads(path.read_text(encoding="ascii"))
    assert stored == made, "the runtime's diffs changed; review, then update the fixture"
    # What both parsers must find, stated apart from the parser.
    by_name = {case["name"]: case for case in stored}
    two = by_name["two files, the first ending in a removed -- line"]["files"]
    assert [
        (f["old_path"], [r[:1] + r[3:] for h in f["hunks"] for r in h["rows"]]) for f in two
    ] == [
        ("one.txt", [["context", "keep"], ["del", "-- drop"]]),
        ("two.txt", [["del", "--- a/two"], ["add", "+++ b/two"]]),
    ]
    cr = by_name["a carriage return ending the last line"]["files"][0]["hunks"][0]["rows"]
    assert ["add", None, 2, "b\r"] in cr
    newline = by_name["a file name holding a newline"]["files"]
    assert [f["new_path"] for f in newline] == [NEWLINE_NAME]
