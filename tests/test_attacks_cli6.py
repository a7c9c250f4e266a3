"""The ``grinta`` entry point against arguments and settings a careless user gives it.

Each test runs the real console entry in a subprocess (against the local
OpenAI-compatible test server where a model is needed) and checks that a mistake
is one line saying what to do, status 2, before any session starts or any log
is touched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter.config import Config, ConfigError
from tests.openai_server import OpenAIServer, text_reply
from tests.test_cli_hostile import grinta


def only_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    "address",
    [
        "http://user:sekret@127.0.0.1:{port}/v1",
        "http://sekret@127.0.0.1:{port}/v1",
        "https://us%40er:sek@ret@127.0.0.1:{port}/v1?token=sekret",
    ],
)
def test_an_api_base_with_credentials_is_refused_without_showing_them(address: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Config(api_base=address.format(port=8000))
    message = str(refused.value)
    assert "sekret" not in message and "ret@" not in message
    assert "user:password@" in message and "GRINTA_API_KEY" in message


def test_a_cli_api_base_with_credentials_stops_before_any_session(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.queue(text_reply("done"))
        address = server.url.replace("://", "://user:sekret@", 1)
        done = grinta(
            "run",
            "say hi",
            "--root",
            str(tmp_path),
            timeout=60,
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=address,
        )
        assert server.requests == []
    line = only_line(done.stderr)
    assert line.startswith("grinta: error: GRINTA_API_BASE: an address with a user:password@")
    assert "sekret" not in done.stderr + done.stdout
    assert server.url in line  # the address to use instead
    assert done.returncode == 2
    assert not (tmp_path / ".grinta").exists()


def test_an_api_base_without_credentials_is_still_accepted() -> None:
    """Guard: an address with a port, path and query but no user part works as before."""
    assert Config(api_base="http://127.0.0.1:8000/v1?x=1").api_base is not None


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--runs", "1000000000", "must be 1000 or less"),
        ("--jobs", "100000", "must be 256 or less"),
        ("--runs", "0", "must be 1 or more"),
    ],
)
def test_an_eval_count_out_of_range_is_one_line_not_a_wait(
    tmp_path: Path, option: str, value: str, says: str
) -> None:
    # --runs 1000000000 built every run's spec before the first one started: a silent hang.
    done = grinta(
        "eval",
        "--model",
        "scripted",
        "--tasks",
        "raft_kv/fix-failing-test",
        "--out",
        str(tmp_path / "out"),
        option,
        value,
        timeout=15,
    )
    line = only_line(done.stderr)
    assert line.startswith(f"grinta: error: argument {option}: {says}"), line
    assert done.returncode == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["demo", "scripted"])
def test_run_with_a_model_name_that_is_not_litellm_stops_before_any_session(
    tmp_path: Path, name: str
) -> None:
    # Went to litellm: a session log, seconds of import, then "UNKNOWN_MODEL".
    done = grinta("run", "fix it", "--root", str(tmp_path), "--model", name, timeout=30)
    line = only_line(done.stderr)
    assert line.startswith(f"grinta: error: --model {name}: "), line
    assert "litellm model string" in line
    assert done.returncode == 2
    assert done.stdout == ""
    assert not (tmp_path / ".grinta").exists()


def test_a_task_that_starts_with_a_dash_says_how_to_give_it(tmp_path: Path) -> None:
    done = grinta("run", "-v", "--root", str(tmp_path), timeout=30)
    line = only_line(done.stderr)
    assert 'after "--"' in line and 'grinta run -- "-' in line, line
    assert done.returncode == 2


@pytest.mark.parametrize(
    "words",
    [("-v", "is", "broken"), ("fix", "the", "parser", "--fast")],
    ids=["a flag then words", "words then a flag"],
)
def test_an_unquoted_task_read_as_flags_says_how_to_give_it(
    tmp_path: Path, words: tuple[str, ...]
) -> None:
    """`grinta run -v is broken` (the shell split the task; argparse took "is" for it and
    found "-v broken" unknown): the same hint as a task that is only a flag."""
    done = grinta("run", *words, "--root", str(tmp_path), timeout=30)
    line = only_line(done.stderr)
    assert line.startswith("grinta: error: unrecognized arguments:"), line
    assert "give the task in quotes" in line and 'grinta run -- "-' in line, line
    assert done.returncode == 2
    assert not (tmp_path / ".grinta").exists()


def test_an_unknown_flag_of_another_command_gets_no_task_hint(tmp_path: Path) -> None:
    done = grinta("demo", "--bogus", "--root", str(tmp_path / "demo"), timeout=30)
    line = only_line(done.stderr)
    assert line == "grinta: error: unrecognized arguments: --bogus (see grinta demo --help)", line
    assert done.returncode == 2


def test_a_task_after_double_dash_is_taken_as_the_task(tmp_path: Path) -> None:
    """Guard: the way the hint gives works (the no-model line comes after parsing)."""
    done = grinta("run", "--root", str(tmp_path), "--", "-v prints nothing", timeout=30)
    assert "no model is configured" in only_line(done.stderr)
    assert done.returncode == 2


@pytest.fixture(scope="module")
def ended_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The log of a demo session that finished (the demo model, approved throughout)."""
    root = tmp_path_factory.mktemp("ended") / "demo"
    done = grinta("demo", "--auto", "--root", str(root), timeout=60)
    assert done.returncode == 0, done.stderr
    (log,) = (root / ".grinta" / "sessions").glob("*.jsonl")
    return log


@pytest.mark.parametrize(("option", "value"), [("--max-steps", "3"), ("--toolset", "broad")])
def test_continue_refuses_a_flag_it_cannot_apply_and_leaves_the_log(
    ended_log: Path, option: str, value: str
) -> None:
    # --max-steps 3 with --continue was dropped silently: the next task ran under 40.
    before = ended_log.read_bytes()
    done = grinta("run", "--continue", str(ended_log), "now add a test", option, value, timeout=30)
    line = only_line(done.stderr)
    assert line.startswith(f"grinta: error: {option} cannot change a continued session"), line
    assert done.returncode == 2
    assert done.stdout == ""
    assert ended_log.read_bytes() == before
