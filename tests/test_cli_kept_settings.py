"""A continued session keeps the limits it started with; the environment's are named, not
dropped in silence.

``--max-steps`` with ``--continue`` is refused (tests/test_attacks_cli6.py); the same limit
from ``GRINTA_MAX_STEPS`` used to be dropped without a word, so a user who set it for the
next task believed it bounded that task. The real console entry, on the log of a finished
demo session (the demo model, approved throughout).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_hostile import grinta
from tests.test_resume_log_dir import killed_at_the_prompt as kill_a_demo_at_the_prompt


def demo_log(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    done = grinta("demo", "--auto", "--root", str(root), timeout=60)
    assert done.returncode == 0, done.stderr
    (log,) = (root / ".grinta" / "sessions").glob("*.jsonl")
    return log


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("note: ")]


def test_limits_from_the_environment_a_continued_session_does_not_take_are_named(
    tmp_path: Path,
) -> None:
    log = demo_log(tmp_path)
    start = json.loads(log.read_text().splitlines()[0])
    assert start["settings"]["max_steps"] == 40 and start["settings"]["max_cost"] is None
    done = grinta(
        "run", "--continue", str(log), "now add a test", "--auto",
        timeout=60,
        GRINTA_MAX_STEPS="3",
        GRINTA_MAX_COST="2.5",
        GRINTA_CONDENSE=start["settings"]["condense"],  # the same as kept: nothing to say
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert notes(done.stderr) == [
        "note: GRINTA_MAX_STEPS=3 does not apply: this session keeps the max steps it started "
        "with (40); start a new session to use it",
        "note: GRINTA_MAX_COST=2.5 does not apply: this session keeps the max cost it started "
        "with (no limit); start a new session to use it",
    ]
    # And it did keep them: more steps than the environment's 3 ran in the next task.
    events = [json.loads(line) for line in log.read_text().splitlines()]
    second = [e for e in events if e["type"] == "task_start"]
    assert second, "the next task started"
    steps = {e["step"] for e in events[events.index(second[-1]) :] if "step" in e}
    assert len(steps) > 3, steps


def test_no_note_when_the_environment_sets_no_limit(tmp_path: Path) -> None:
    done = grinta("run", "--continue", str(demo_log(tmp_path)), "now add a test", "--auto")
    assert done.returncode == 0, done.stderr
    assert notes(done.stderr) == []


def killed_at_the_prompt(tmp_path: Path) -> Path:
    """The log of a demo session killed (SIGKILL) while it asked about a step: unfinished."""
    root = tmp_path / "demo"
    kill_a_demo_at_the_prompt(root)
    (log,) = (root / ".grinta" / "sessions").glob("*.jsonl")
    return log


def test_a_resumed_session_names_them_too(tmp_path: Path) -> None:
    """``grinta resume`` of a demo session killed while it asked about a step."""
    log = killed_at_the_prompt(tmp_path)
    done = grinta("resume", str(log), "--auto", timeout=60, GRINTA_MAX_WALL_TIME="60")
    assert done.returncode == 0, done.stderr
    assert notes(done.stderr) == [
        "note: GRINTA_MAX_WALL_TIME=60.0 does not apply: this session keeps the max wall time "
        "it started with (no limit); start a new session to use it",
    ]
