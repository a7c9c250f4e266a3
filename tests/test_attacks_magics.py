"""A careless user's ``%grinta`` lines, through IPython's own shell (the demo model, offline)."""

from __future__ import annotations

import pytest

import grinta_jupyter
from grinta_jupyter.jupyter.magics import MagicUsageError, edit_arguments, parse_start
from tests.conftest import grinta_shell


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRINTA_MODEL", raising=False)
    yield from grinta_shell()


def magic(ip, line):
    assert ip.run_line_magic("grinta", line) is None, "a %grinta line never echoes Out[n]"


def test_the_task_is_the_rest_of_the_line_as_typed(ip, capsys):
    """Apostrophes, quotes and backslashes in a task reach the model as typed (a shell split
    paired the apostrophes of "don't" and "lexer's" and ate the backslashes)."""
    task = r"""fix the failing test in raft_kv; don't touch the lexer's \d+ regex or "C:\temp" """
    magic(ip, "--manual " + task)
    session = grinta_jupyter.current()
    assert session is not None, capsys.readouterr().out
    assert session.task == task.strip()


def test_an_apostrophe_in_the_task_leaves_the_quoted_options_alone():
    task, config = parse_start("--root \"it's here\" --max-steps 3 fix the parser's bug", {})
    assert (task, config.root, config.max_steps) == ("fix the parser's bug", "it's here", 3)


def test_an_option_inside_the_task_is_refused_not_taken(ip, capsys):
    """Options go before or after the task, as the first release took them. One between
    task words (``fix the --auto flag parsing``) was refused as an unknown option
    ``flag parsing``, or, at the line's end after an apostrophe, silently turned on: now it
    is refused saying how to write such a task (after ``--``), and nothing starts."""
    magic(ip, "--manual fix the --auto flag parsing")
    out = capsys.readouterr().out
    assert "an option splits the task" in out and "-- fix the --manual flag" in out
    assert grinta_jupyter.current() is None
    magic(ip, "--manual -- fix the failing test in raft_kv, then the --auto flag --max-steps 2")
    session = grinta_jupyter.current()
    assert session is not None, capsys.readouterr().out
    assert session.task == "fix the failing test in raft_kv, then the --auto flag --max-steps 2"
    assert session.policy == "ask"
    assert parse_start("-- fix the -v flag", {})[0] == "fix the -v flag"
    assert parse_start("--auto -- --manual is broken", {})[0] == "--manual is broken"
    task, config = parse_start("fix the parser's bug --auto --max-steps 3", {})
    assert (task, config.auto, config.max_steps) == ("fix the parser's bug", True, 3)
    with pytest.raises(MagicUsageError, match="unknown option --bogus"):
        parse_start("--bogus fix it", {})


def test_a_subcommand_followed_by_a_tab_is_the_subcommand(ip, capsys):
    """``say<TAB>TEXT`` is ``say``: it must not start a new session, which stops the running one."""
    magic(ip, "--manual fix the failing test in raft_kv")
    running = grinta_jupyter.current()
    capsys.readouterr()
    magic(ip, "say\tuse pathlib")
    assert capsys.readouterr().out.startswith("said: the model reads it at its next turn")
    assert grinta_jupyter.current() is running and not running.done
    magic(ip, "status\t")
    assert capsys.readouterr().out.startswith(f"session {running.id}: ")


def test_resume_takes_a_quoted_log_path_with_spaces(ip, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "my notebooks"
    folder.mkdir()
    monkeypatch.chdir(folder)
    magic(ip, "--manual fix the failing test in raft_kv")
    session = grinta_jupyter.current()
    magic(ip, "stop")
    capsys.readouterr()
    magic(ip, f"resume '{session.log_path}' extra")
    assert capsys.readouterr().out.startswith("%grinta: resume takes one log")
    magic(ip, f"resume '{session.log_path}'")
    out = capsys.readouterr().out
    assert out.startswith(f"resumed session {session.id} from {session.log_path}"), out
    assert grinta_jupyter.current() is not session and grinta_jupyter.current().id == session.id


def test_a_capitalised_subcommand_alone_does_not_replace_the_running_session(ip, capsys):
    """``%grinta Stop`` started a new session on the task "Stop", stopping the running one
    (and, under the demo, copying its sample afresh over the running session's files)."""
    magic(ip, "--manual fix the failing test in raft_kv")
    running = grinta_jupyter.current()
    capsys.readouterr()
    magic(ip, "Stop")
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        first
        == "%grinta: subcommands are lowercase: %grinta stop (for the task 'Stop', write %grinta -- Stop)"
    )
    assert grinta_jupyter.current() is running and not running.done
    magic(ip, "-- Stop")
    assert grinta_jupyter.current() is not running and grinta_jupyter.current().task == "Stop"


@pytest.mark.parametrize("number", ["1_0", "+1", "\u0661", "-1", "1.0"])
def test_rewind_takes_plain_digits_only(ip, capsys, number):
    """Attack: ``int()`` read ``1_0`` as step 10, ``+1`` and an Arabic-Indic one as step 1:
    a typo rewound to a step the user did not name, undoing its commits."""
    magic(ip, "--manual fix the failing test in raft_kv")
    session = grinta_jupyter.current()
    capsys.readouterr()
    magic(ip, f"rewind {number}")
    out = capsys.readouterr().out
    assert f"rewind takes a step number, e.g. %grinta rewind 3 (got {number!r})" in out
    assert session.branch == 0 and not session.done


def test_an_empty_model_option_is_refused_not_the_demo(ip, capsys):
    """Attack: ``--model ''`` ran the demo model without a word, even with GRINTA_MODEL set."""
    with pytest.raises(MagicUsageError, match="--model is empty; give a model"):
        parse_start("--model '' fix it", {"GRINTA_MODEL": "openai/gpt-4o-mini"})
    assert parse_start("fix it", {"GRINTA_MODEL": ""})[1].model is None  # unset: the demo


def test_edit_with_words_says_how_to_give_such_a_task():
    with pytest.raises(MagicUsageError, match="write %grinta -- edit"):
        edit_arguments("the README")
    with pytest.raises(MagicUsageError) as broken:
        edit_arguments('{"path": ')
    assert "-- edit" not in str(broken.value)
