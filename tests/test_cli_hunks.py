"""Choosing hunk by hunk at the CLI prompt, through the real ``grinta`` entry point.

A local OpenAI-compatible server plays the model; stdin is piped. Only the
hunks answered ``y`` reach the disk, the model is told which were left out
and why, and a choice that does not validate decides nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_cli_hostile import events, grinta

LONG = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12))


def multiedit(*pairs: tuple[str, str]) -> tuple[str, str, str]:
    edits = [{"path": "long.py", "old_string": a, "new_string": b} for a, b in pairs]
    return tool_call("multiedit", {"edits": edits})


def run_with(tmp_path: Path, answers: str, *calls: tuple[str, str, str]) -> tuple[str, Path, list]:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    (root / "long.py").write_text(LONG)
    with OpenAIServer() as server:
        server.queue(
            *(tool_reply(c) for c in calls),
            tool_reply(tool_call("finish", {"summary": "done"})),
        )
        done = grinta(
            "run",
            "change returns",
            "--root",
            str(root),
            answers=answers,
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
        )
        requests = list(server.requests)
    return done.stdout, root, requests


def test_only_the_hunks_answered_yes_are_written_and_the_model_hears_why(tmp_path):
    out, root, requests = run_with(
        tmp_path,
        "h\nn\ny\nf1 stays\n",
        multiedit(("return 1\n", "return 100\n"), ("return 10\n", "return 1000\n")),
    )
    assert "[h]unk by hunk" in out
    assert "--- hunk 1 of 2 in long.py" in out and "--- hunk 2 of 2 in long.py" in out
    assert "- return 1" in out.replace("    ", " ") or "-     return 1" in out
    text = (root / "long.py").read_text()
    assert "return 1000\n" in text and "    return 1\n" in text and "return 100\n" not in text
    decision = next(e for e in events(root) if e["type"] == "user_decision")
    assert (decision["decision"], decision["hunks"], decision["reason"]) == (
        "approve_hunks",
        [1],
        "f1 stays",
    )
    told = json.dumps(requests[1].body)
    assert "1 of 2 hunks" in told and "f1 stays" in told


def test_a_choice_that_breaks_the_syntax_decides_nothing_and_asks_again(tmp_path):
    # The two hunks open and close a string: either one alone does not parse.
    out, root, _ = run_with(
        tmp_path,
        "h\ny\nn\n\nv\nno thanks\n",
        multiedit(("return 1\n", 'return """\n'), ("return 10\n", 'return """\n')),
    )
    assert "do not validate on their own (SYNTAX_ERROR" in out
    assert (root / "long.py").read_text() == LONG
    kinds = [e["decision"] for e in events(root) if e["type"] == "user_decision"]
    assert kinds == ["veto"]


def test_every_hunk_yes_is_an_approval_and_none_is_a_veto(tmp_path):
    pairs = (("return 1\n", "return 100\n"), ("return 10\n", "return 1000\n"))
    _, root, _ = run_with(tmp_path / "a", "h\ny\ny\n", multiedit(*pairs))
    assert "return 100\n" in (root / "long.py").read_text()
    assert [e["decision"] for e in events(root) if e["type"] == "user_decision"] == ["approve"]
    _, root, _ = run_with(tmp_path / "b", "h\nn\nn\nneither\n", multiedit(*pairs))
    assert (root / "long.py").read_text() == LONG
    vetoes = [(e["decision"], e["reason"]) for e in events(root) if e["type"] == "user_decision"]
    assert vetoes == [("veto", "neither")]


def test_a_single_hunk_write_does_not_offer_hunks(tmp_path):
    out, root, _ = run_with(tmp_path, "h\ny\n", multiedit(("return 1\n", "return 100\n")))
    assert "[h]unk by hunk" not in out and "answer y or Enter" in out
    assert "return 100\n" in (root / "long.py").read_text()
