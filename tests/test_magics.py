"""%grinta through IPython's own shell: parsing and every subcommand."""

from __future__ import annotations

import json

import pytest

import grinta_jupyter
from grinta_jupyter.jupyter.magics import MagicUsageError, parse_start, split_command
from grinta_jupyter.samples.tasks import DEMO_FIX
from tests.conftest import grinta_shell


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    yield from grinta_shell()


def magic(ip, line):
    """Run ``%grinta line``; the session it started, if it started one (the magic returns None)."""
    before = grinta_jupyter.current()
    assert ip.run_line_magic("grinta", line) is None, "a %grinta line never echoes Out[n]"
    after = grinta_jupyter.current()
    return after if after is not before else None


def test_parse_options_and_subcommands():
    task, config = parse_start(
        '--model openai/x --root "my dir" --auto --max-steps 7 --toolset intent fix it now', {}
    )
    assert task == "fix it now"
    assert (config.model, config.root, config.auto, config.max_steps, config.toolset) == (
        "openai/x",
        "my dir",
        True,
        7,
        "intent",
    )
    assert config.origin("root") == "--root" and config.policy == "auto"
    assert parse_start("fix the failing test", {})[1].manual is False
    assert split_command("approve") == ("approve", "")
    assert split_command("veto that is wrong") == ("veto", "that is wrong")
    assert split_command('edit {"a": 1}') == ("edit", '{"a": 1}')
    assert split_command("-- step through the parser") == (None, "step through the parser")
    assert split_command("fix the bug") == (None, "fix the bug")


def test_options_win_over_the_environment_and_bad_values_name_their_source():
    env = {"GRINTA_MODEL": "openai/from-env", "GRINTA_MAX_STEPS": "9", "GRINTA_ROOT": "/env"}
    task, config = parse_start("--max-steps 3 fix it", env)
    assert (task, config.model, config.max_steps, config.root) == (
        "fix it",
        "openai/from-env",
        3,
        "/env",
    )
    assert config.origin("model") == "GRINTA_MODEL" and config.origin("max_steps") == "--max-steps"

    with pytest.raises(MagicUsageError) as bad_env:
        parse_start("fix it", {"GRINTA_MAX_STEPS": "lots"})
    assert "GRINTA_MAX_STEPS=lots" in str(bad_env.value) and not bad_env.value.usage
    with pytest.raises(MagicUsageError) as bad_option:
        parse_start("--root '' fix it", {})
    assert str(bad_option.value) == "--root is empty; give a folder" and bad_option.value.usage


def test_the_cell_magic_takes_options_on_its_line_and_the_task_in_its_body(ip, capsys):
    ip.run_cell_magic("grinta", "--manual fix", "the failing test\n")
    assert "the task goes in the cell" in capsys.readouterr().out
    assert grinta_jupyter.current() is None


def test_a_whole_session_stepped_with_magics(ip, tmp_path, capsys):
    session = magic(ip, "fix the failing test in raft_kv")
    assert session is grinta_jupyter.current()
    root = tmp_path / "raft_kv"
    assert session.root == root and (root / "raft_kv" / "node.py").exists()
    out = capsys.readouterr().out
    assert "demo model on a copy of the raft_kv sample" in out and "manual mode" in out

    magic(ip, "step")  # the first proposal: run the tests
    assert session.waiting and session.pending.proposal.tool == "run"
    magic(ip, "status")
    assert "step 1 waits for you: run" in capsys.readouterr().out
    magic(ip, "approve")
    assert session.steps[0].observation.exit_code == 1
    magic(ip, "step")  # the read runs without asking
    assert session.steps[1].proposal.tool == "read" and session.steps[1].observation.ok
    magic(ip, "step")
    assert session.pending.proposal.tool == "replace_string"

    edited = {**DEMO_FIX, "new_string": DEMO_FIX["new_string"] + "  # log matching"}
    capsys.readouterr()
    magic(ip, "edit " + json.dumps(edited))
    out = capsys.readouterr().out
    assert (
        # text/plain marks each added row "+ " by its role (docs/mime-schema.md)
        "+         if self.log.term_at(request.prev_log_index) != request.prev_log_term:  # log matching"
        in out
    )
    assert "# log matching" not in (root / "raft_kv/node.py").read_text(), "edit only stages"
    magic(ip, "edit {not json")
    assert "edit takes JSON arguments" in capsys.readouterr().out
    magic(ip, "approve")
    assert "# log matching" in (root / "raft_kv/node.py").read_text()

    magic(ip, "step")
    magic(ip, "veto not yet")
    assert session.steps[3].decision == "veto" and session.steps[3].reason == "not yet"
    magic(ip, "step")  # the demo finishes; the guard sends it back (no run after the edit)
    magic(ip, "step")
    assert session.pending.proposal.tool == "run"
    magic(ip, "approve")
    magic(ip, "step")
    assert session.done and session.end_reason == "finished"

    capsys.readouterr()
    magic(ip, "metrics")
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert rows["premature_finishes"] == ["1", "finishes"] and rows["vetoes"] == ["1", "decisions"]
    assert rows["duration"][1] == "seconds" and rows["cost"] == ["unknown", "dollars"]
    magic(ip, "log")
    out = capsys.readouterr().out
    assert out.count("[grinta step") == len(session.steps) and "[grinta session" in out


def test_undo_stop_and_errors(ip, tmp_path, capsys):
    magic(ip, "status")
    assert "no session yet" in capsys.readouterr().out
    session = magic(ip, "--auto --manual fix the failing test in raft_kv")
    for _ in range(3):
        magic(ip, "step")
    assert "!= request.prev_log_term" in (tmp_path / "raft_kv/raft_kv/node.py").read_text()
    capsys.readouterr()
    magic(ip, "undo")
    assert "undid replace_string raft_kv/node.py" in capsys.readouterr().out
    assert "< request.prev_log_term" in (tmp_path / "raft_kv/raft_kv/node.py").read_text()
    magic(ip, "approve")
    assert "nothing is waiting for a decision" in capsys.readouterr().out
    magic(ip, "stop")
    assert session.done and session.end_reason == "stopped by the user"
    magic(ip, "--bogus x")
    assert "unknown option" in capsys.readouterr().out


def test_cell_magic_takes_the_cell_as_the_task(ip):
    ip.run_cell_magic("grinta", "--manual", "fix the failing test\nin raft_kv\n")
    assert grinta_jupyter.current().task == "fix the failing test\nin raft_kv"


def test_notebooks_are_validated_not_write_protected(ip, tmp_path):
    session = magic(ip, "--manual fix the failing test in raft_kv")
    (session.root / "analysis.ipynb").write_text("{}")
    # A file that is no notebook is never rewritten as one, and a new notebook must be valid.
    p = session.runtime.propose(
        "replace_string", {"path": "analysis.ipynb", "old_string": "{}", "new_string": "[]"}
    )
    assert p.error.code == "NOTEBOOK_INVALID"
    p = session.runtime.propose("create", {"path": "new.ipynb", "content": "{}"})
    assert p.error.code == "NOTEBOOK_INVALID"
    with pytest.raises(MagicUsageError, match="allow-notebooks is gone"):
        parse_start("--allow-notebooks fix it", {})


def test_demo_model_refuses_another_root(ip, tmp_path, capsys):
    magic(ip, f"--root {tmp_path} fix my code")
    assert "demo model only plays its scripted session" in capsys.readouterr().out
    assert grinta_jupyter.current() is None


def test_a_task_too_long_is_one_line_and_leaves_the_running_session_alone(ip, tmp_path, capsys):
    """A first task is bounded as a next task and a message are; refused before anything:
    the running session goes on, no new one starts, no sample is copied."""
    running = magic(ip, "fix the failing test in raft_kv")
    assert running is not None
    capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert magic(ip, "fix this:\n" + "x" * 25_000) is None
    out = capsys.readouterr().out
    assert "too long" in out and "put the text in a file" in out, out
    assert "Traceback" not in out
    assert grinta_jupyter.current() is running and not running.done
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_demo_in_a_folder_it_cannot_write_says_what_to_do(ip, monkeypatch, capsys):
    """A read-only checkout (or any folder the kernel cannot write): the demo's copy of its
    sample goes next to the notebook, so it cannot start there; the line said only "Read-only
    file system" / "Permission denied", not where nor what to do."""
    monkeypatch.chdir("/sys")  # not writable, even by root
    magic(ip, "fix the failing test in raft_kv")
    out = capsys.readouterr()
    text = out.out + out.err
    assert "cannot copy the demo's sample into the current folder (/sys)" in text, text
    assert "a folder you can write to" in text
    assert grinta_jupyter.current() is None
