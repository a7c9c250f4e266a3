"""The CLI and the magics against careless answers, hostile text and broken inputs.

Every CLI test runs the real console entry in a subprocess with stdin piped
(or on a real pseudo-terminal), against the offline demo model or the local
OpenAI-compatible test server, and then checks the files on disk.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grinta_jupyter
from grinta_jupyter.agent.models.litellm_model import guess_provider, missing_key
from grinta_jupyter.jupyter.magics import USAGE
from grinta_jupyter.runtime.diffs import unified_diff
from grinta_jupyter.samples.tasks import DEMO_FIX, copy_workspace
from grinta_jupyter.terminal import HINT, diff_lines
from tests.conftest import grinta_shell, snapshot
from tests.openai_server import OpenAIServer, error_reply, stall_reply, tool_call, tool_reply

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("grinta")
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "grinta_jupyter.cli"]
NODE = "raft_kv/node.py"
HOSTILE = "\x1b[2K\r\x1b]0;title\x07"
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\x9b")
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GRINTA_API_KEY", "GRINTA_API_BASE")


def cli_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*KEY_VARS, "GRINTA_MODEL", "VISUAL", "EDITOR", "GRINTA_DEBUG", "NO_COLOR")
    }
    return {**env, **extra}


def grinta(
    *args: str, answers: str = "", cwd: Path = REPO, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, *args],
        input=answers,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(**env),
        timeout=timeout,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def demo(tmp_path: Path, answers: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path / "demo"
    return grinta("demo", "--root", str(root), answers=answers), root


def events(root: Path) -> list[dict]:
    (log,) = (root / ".grinta" / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def decisions(root: Path) -> list[tuple[str, str | None]]:
    return [
        (e["decision"], e.get("reason"))
        for e in events(root)
        if e["type"] == "user_decision" and e["decision"] != "auto"
    ]


def pristine(tmp_path: Path) -> dict[str, bytes]:
    return snapshot(copy_workspace("raft_kv", tmp_path / "pristine"))


def only_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# -- the approve prompt ------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["n", "no", "v", "veto", "  NO  ", "Veto", "no\r"])
def test_every_veto_word_vetoes_and_asks_for_a_reason(tmp_path, word):
    done, root = demo(tmp_path, f"{word}\nnot the tests\n{word}\nleave it\n")

    assert decisions(root) == [("veto", "not the tests"), ("veto", "leave it")]
    assert snapshot(root) == pristine(tmp_path), "a veto leaves every byte as it was"
    assert done.returncode == 0  # the demo accepts the vetoes and finishes


@pytest.mark.parametrize("word", ["", "y", "Y", "yes", "  YES  ", "yes\r"])
def test_only_an_explicit_yes_approves(tmp_path, word):
    done, root = demo(tmp_path, f"n\n\n{word}\n")

    assert decisions(root)[:2] == [("veto", "vetoed by the user"), ("approve", None)]
    assert DEMO_FIX["new_string"] in (root / NODE).read_text()


def test_anything_else_asks_again_and_never_approves(tmp_path):
    answers = "nope\nyy\napprove?\nq\nY E S\nok\nv\n\n"
    done, root = demo(tmp_path, answers)

    assert done.stdout.count(HINT) == 6
    assert decisions(root)[0] == ("veto", "vetoed by the user")
    assert snapshot(root) == pristine(tmp_path)


def test_an_answer_that_is_not_text_asks_again(tmp_path):
    root = tmp_path / "demo"
    done = subprocess.run(
        [*ENTRY, "demo", "--root", str(root)],
        input=b"\xff\xfe\x00\nn\n\n",
        capture_output=True,
        env=cli_env(),
        cwd=REPO,
        timeout=120,
    )

    assert b"Traceback" not in done.stderr and done.stdout.count(HINT.encode()) == 1
    assert decisions(root)[0] == ("veto", "vetoed by the user")


def test_end_of_input_vetoes_and_stops_the_session(tmp_path):
    done, root = demo(tmp_path, "")

    assert decisions(root) == [("veto", "no answer: standard input closed")]
    log = events(root)
    assert [e["tool"] for e in log if e["type"] == "tool_proposed"] == ["run"], "no further turn"
    assert log[-1]["type"] == "session_end" and "standard input closed" in log[-1]["reason"]
    assert done.returncode == 1 and "standard input closed" in done.stdout
    assert snapshot(root) == pristine(tmp_path)


def test_end_of_input_at_the_reason_still_vetoes_and_stops(tmp_path):
    done, root = demo(tmp_path, "n")

    assert decisions(root) == [("veto", "vetoed by the user")]
    assert events(root)[-1]["type"] == "session_end" and done.returncode == 1


@pytest.mark.parametrize("closed", ["<&-", ">&-", "2>&-"])
def test_a_closed_standard_stream_never_approves_or_crashes(tmp_path, closed):
    root = tmp_path / "demo"
    done = subprocess.run(
        ["sh", "-c", f'exec "$@" {closed}', "sh", *ENTRY, "demo", "--root", str(root)],
        input="" if closed != "<&-" else None,
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=REPO,
        timeout=120,
    )

    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    assert decisions(root) == [("veto", "no answer: standard input closed")]
    assert snapshot(root) == pristine(tmp_path)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_at_the_prompt_stops_cleanly(tmp_path, signum):
    """SIGTERM (a `kill`, a job's timeout) as Ctrl-C: before, it killed the process at once
    and the log ended mid-step, with no reason."""
    root = tmp_path / "demo"
    child = subprocess.Popen(
        [*ENTRY, "demo", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=REPO,
    )
    seen = b""
    deadline = time.monotonic() + 60
    while b"approve?" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([child.stdout], [], [], 1)
        if ready:
            seen += os.read(child.stdout.fileno(), 65536)  # type: ignore[union-attr]
    assert b"approve?" in seen
    child.send_signal(signum)
    out, err = child.communicate(timeout=30)

    assert child.returncode == 130
    assert "Traceback" not in err.decode() and "interrupted" in err.decode()
    assert events(root)[-1]["reason"] == "interrupted by the user"
    assert snapshot(root) == pristine(tmp_path)


# -- editing --------------------------------------------------------------------------------


def test_an_edit_at_the_prompt_shows_hostile_text_escaped_and_never_raw(tmp_path):
    # The same tool on another file: a README line that rewrites the terminal.
    edited = {"path": "README.md", "old_string": "# raft_kv", "new_string": "# raft_kv" + HOSTILE}
    answers = "n\n\ne\n" + json.dumps(edited, indent=2) + "\n\ny\n"
    done, root = demo(tmp_path, answers)

    assert not any(c in done.stdout for c in RAW_CONTROLS), "only escapes reach the terminal"
    assert "+ # raft_kv\\x1b[2K\\r\\x1b]0;title\\a" in done.stdout
    assert decisions(root)[1:3] == [("edit", None), ("approve", None)]
    written = (root / "README.md").read_bytes()
    assert written.startswith(b"# raft_kv" + HOSTILE.encode()), "the person's edit was written"


def test_invalid_edits_say_why_and_keep_the_proposal(tmp_path):
    answers = (
        "n\n\n"
        "e\n{bad\n\n"  # not JSON
        "e\n[1, 2]\n\n"  # not an object
        'edit\n"text"\n\n'  # not an object either
        "e\n\n"  # nothing typed: keep
        "e\n" + json.dumps(DEMO_FIX) + "\n\n"  # the same arguments: keep
        "v\nno edits\n"
    )
    done, root = demo(tmp_path, answers)

    assert "not valid JSON" in done.stdout
    assert done.stdout.count("must be a JSON object") == 2
    assert done.stdout.count("the proposal is unchanged") == 5
    assert decisions(root) == [("veto", "vetoed by the user"), ("veto", "no edits")]
    assert snapshot(root) == pristine(tmp_path)


def test_an_edit_that_does_not_validate_waits_for_another_decision(tmp_path):
    broken = {**DEMO_FIX, "old_string": "no such text anywhere"}
    done, root = demo(tmp_path, "n\n\ne\n" + json.dumps(broken) + "\n\nv\n\n")

    assert "does not validate" in done.stdout
    assert [d for d, _ in decisions(root)] == ["veto", "edit", "veto"]
    assert snapshot(root) == pristine(tmp_path)


EDITOR = """\
import json, pathlib, sys
calls = pathlib.Path(sys.argv[1])
count = int(calls.read_text() or 0) + 1 if calls.exists() else 1
calls.write_text(str(count))
target = pathlib.Path(sys.argv[2])
if count == 1:
    sys.exit(3)  # a failing editor: the proposal stays
if count == 2:
    sys.exit(0)  # saved unchanged: the proposal stays
args = json.loads(target.read_text())
args["new_string"] += "  # edited in the editor"
target.write_text(json.dumps(args))
"""


def test_the_editor_edits_a_temp_file_and_only_a_real_change_counts(tmp_path):
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    calls = tmp_path / "editor calls"  # a space: $EDITOR is split as a shell would
    temp = tmp_path / "tmp"
    temp.mkdir()
    root = tmp_path / "demo"
    out = run_on_a_terminal(
        [*ENTRY, "demo", "--root", str(root)],
        # veto the run; edit three times (fails, unchanged, changed); approve; then Ctrl-D
        "n\n\ne\ne\ne\ny\n\x04",
        cli_env(
            EDITOR=" ".join(shlex.quote(str(p)) for p in (sys.executable, script, calls)),
            TMPDIR=str(temp),
        ),
    )

    assert calls.read_text() == "3"
    assert "the editor exited with status 3" in out
    assert out.count("the proposal is unchanged") == 2
    assert "# edited in the editor" in (root / NODE).read_text()
    assert "\x1b[32m+ " in out, "a terminal gets a coloured diff"
    assert list(temp.iterdir()) == [], "the temp file is removed"


def run_on_a_terminal(argv: list[str], typed: str, env: dict[str, str]) -> str:
    """Run ``argv`` with a pseudo-terminal as stdin and stdout; type ``typed``; return the screen."""
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        argv, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=REPO
    )
    os.close(follower)
    os.write(leader, typed.encode())
    output = b""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        elif child.poll() is not None:
            break
    child.wait(timeout=30)
    os.close(leader)
    text = output.decode(errors="replace")
    assert "Traceback" not in text, text
    return text


# -- what reaches the terminal ---------------------------------------------------------------


def test_diff_rows_are_marked_by_their_role_and_escaped():
    old = "-- a comment\nkeep\n"
    new = "keep\n+++ not a header " + HOSTILE + "\n"
    diff = unified_diff("we\x1bird.txt", old, new).text
    lines = diff_lines(diff)

    # Marked "- " / "+ " by role, so no row reads as a "--- a/" or "+++ b/" header.
    assert "- -- a comment" in lines
    assert "+ +++ not a header \\x1b[2K\\r\\x1b]0;title\\a" in lines
    assert sum(line.startswith(("--- ", "+++ ")) for line in lines) == 2  # the one real header
    assert not any(c in "\n".join(lines) for c in RAW_CONTROLS)
    assert "\x1b[32m" in "\n".join(diff_lines(diff, color=True))


def test_model_text_arguments_and_diffs_from_a_real_model_are_escaped(tmp_path):
    (tmp_path / "ws").mkdir()
    with OpenAIServer() as server:
        server.queue(
            tool_reply(
                tool_call("create", {"path": "note.txt", "content": "hi " + HOSTILE + "\n"}),
                text="Thinking " + HOSTILE,
            ),
            tool_reply(tool_call("read", '{"path": "x' + HOSTILE + '"}')),
            # Refused early (before litellm is loaded), then by litellm's own request.
            error_reply(401, "bad key " + HOSTILE),
            error_reply(401, "bad key " + HOSTILE),
        )
        done = grinta(
            "run",
            "make a note",
            "--root",
            str(tmp_path / "ws"),
            answers="v\nno\n",
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
        )

    assert not any(c in done.stdout + done.stderr for c in RAW_CONTROLS)
    assert "Thinking \\x1b[2K\\r" in done.stdout and "+ hi \\x1b[2K\\r" in done.stdout
    assert '"x\\x1b[2K\\r' in done.stdout  # the raw arguments in the step header
    assert not (tmp_path / "ws" / "note.txt").exists()
    # The session's ending error, not only "session ended: error".
    assert "session ended: error" in done.stdout
    assert only_line(done.stderr).startswith("grinta: error: AUTH: ")
    assert done.returncode == 1


def test_ctrl_c_while_the_model_thinks_stops_cleanly(tmp_path):
    (tmp_path / "ws").mkdir()
    with OpenAIServer() as server:
        server.queue(stall_reply(60))
        child = subprocess.Popen(
            [*ENTRY, "run", "anything", "--root", str(tmp_path / "ws")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(GRINTA_MODEL="openai/test", GRINTA_API_BASE=server.url, GRINTA_API_KEY="k"),
            cwd=REPO,
        )
        deadline = time.monotonic() + 90
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, "the model call started"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)

    assert child.returncode == 130 and "Traceback" not in err and "interrupted" in err
    assert "session ended: interrupted by the user" in out


# -- errors: one line, a status, no traceback ------------------------------------------------


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    files = {
        "garbage": "garbage\nmore garbage\n",
        "empty": "",
        "other": '{"name": "a"}\n{"name": "b"}\n',
        "array": "[1, 2]\n[3]\n",
        "nested": "[" * 100_000 + "\n" + "x\n",
        "no start": '{"type": "undo", "ok": true}\n{"type": "undo", "ok": false}\n',
    }
    made = {}
    for name, text in files.items():
        made[name] = tmp_path / f"{name}.jsonl"
        made[name].write_text(text)
    made["binary"] = tmp_path / "binary.jsonl"
    made["binary"].write_bytes(bytes(range(256)) * 8)
    made["folder"] = tmp_path / "folder"
    made["folder"].mkdir()
    made["fifo"] = tmp_path / "fifo.jsonl"
    os.mkfifo(made["fifo"])
    made["missing"] = tmp_path / "missing.jsonl"
    return made


@pytest.mark.parametrize("command", ["replay", "metrics"])
def test_a_log_that_is_not_one_is_one_line_and_status_2(logs, command):
    for name, path in logs.items():
        done = grinta(command, str(path), timeout=30)
        line = only_line(done.stderr)
        assert done.returncode == 2 and line.startswith("grinta: error: "), (name, line)
        assert str(path) in line, (name, line)


def demo_log(tmp_path: Path) -> Path:
    done, root = demo(tmp_path, "n\n\nn\n\n")
    (log,) = (root / ".grinta" / "sessions").glob("*.jsonl")
    return log


def test_replaying_a_log_not_from_a_sample_asks_for_the_root(tmp_path):
    """Not from a sample and without the snapshots of its files (docs/session.md): nothing
    says what the workspace held, so replay asks for it."""
    lines = demo_log(tmp_path).read_text().splitlines()
    start = json.loads(lines[0])
    start["sample"] = None
    log = tmp_path / "mine.jsonl"
    kept = [line for line in lines[1:] if json.loads(line)["type"] != "snapshot"]
    log.write_text("\n".join([json.dumps(start), *kept]) + "\n")

    done = grinta("replay", str(log))
    assert done.returncode == 2
    assert "pass --root with the workspace in its starting state" in only_line(done.stderr)

    fresh = copy_workspace("raft_kv", tmp_path / "fresh")
    done = grinta("replay", str(log), "--root", str(fresh))
    assert done.returncode == 0 and "every proposal identical" in done.stdout


def test_a_log_from_an_unknown_sample_or_toolset_is_refused(tmp_path):
    lines = demo_log(tmp_path).read_text().splitlines()
    for field, value in (("sample", "../../etc"), ("toolset", "bogus")):
        start = {**json.loads(lines[0]), field: value}
        log = tmp_path / f"{field}.jsonl"
        log.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
        done = grinta("replay", str(log))
        assert done.returncode == 2 and repr(value) in only_line(done.stderr)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--root", "/does/not/exist", "x"],
        ["run", "--root", str(REPO / "README.md"), "x"],
        ["run", "--root", "", "x"],
        ["run", "--toolset", "bogus", "--root", ".", "x"],
        ["run", "--max-steps", "0", "x"],
        ["run", "--max-steps", "-1", "x"],
        ["run", "--max-steps", "many", "x"],
        ["run", "   ", "--root", "."],
        ["run"],
        [],
        ["frobnicate"],
        ["eval", "--tasks", "no_such_task"],
        ["eval", "--toolsets", "intent,bogus"],
        ["eval", "--runs", "0"],
        ["eval", "--max-cost", "nan"],
        ["eval", "--out", str(REPO / "README.md")],
        ["replay", "x.jsonl", "--root", "/does/not/exist"],
        ["demo", "--root", str(REPO)],
        ["demo", "--root", str(REPO / "README.md")],
    ],
)
def test_a_usage_mistake_is_one_line_and_status_2(args):
    done = grinta(*args, timeout=30)

    assert done.returncode == 2, done
    assert only_line(done.stderr).startswith("grinta: error: ")


def test_a_run_without_a_model_says_how_to_get_one(tmp_path):
    done = grinta("run", "fix it", "--root", str(tmp_path))
    assert done.returncode == 2 and "Set GRINTA_MODEL" in only_line(done.stderr)


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("gpt-4o-mini", "OPENAI_API_KEY"),
        ("o3-mini", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    ],
)
def test_a_missing_key_is_said_at_once_before_any_session(tmp_path, model, variable):
    done = grinta("run", "fix it", "--root", str(tmp_path), "--model", model, OPENAI_API_KEY="")
    line = only_line(done.stderr)

    assert done.returncode == 2 and "MISSING_KEY" in line and f"set {variable}" in line
    assert not (tmp_path / ".grinta").exists(), "no session started"
    done = grinta("demo", "--model", model, "--root", str(tmp_path / "d"))
    assert done.returncode == 2 and "MISSING_KEY" in only_line(done.stderr)
    assert not (tmp_path / "d").exists(), "nothing was copied"


def test_the_key_check_is_cheap_and_skipped_for_local_servers(monkeypatch):
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    assert guess_provider("openai/gpt-4o-mini") == "openai"
    assert guess_provider("openrouter/anthropic/claude-3") == "openrouter"
    assert guess_provider("gpt-4.1") == guess_provider("o1") == "openai"
    assert guess_provider("claude-opus-4-1") == "anthropic"
    assert guess_provider("qwen2.5-coder") is None and guess_provider("omega-7") is None
    assert missing_key("openai/gpt-4o-mini").code == "MISSING_KEY"  # type: ignore[union-attr]
    assert missing_key("openai/x", api_base="http://127.0.0.1:1/v1") is None
    assert missing_key("openai/x", api_key="k") is None
    assert missing_key("ollama_chat/qwen2.5-coder:7b") is None
    monkeypatch.setenv("OPENAI_API_KEY", "  ")
    assert missing_key("gpt-4o-mini") is not None, "a blank key is no key"
    code = (
        "import sys\n"
        "from grinta_jupyter.agent import make_model\n"
        "from grinta_jupyter.agent.models import ModelError\n"
        "try:\n"
        "    make_model('openai/gpt-4o-mini', require_key=True)\n"
        "except ModelError as exc:\n"
        "    print(exc.code, 'litellm' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=REPO
    )
    assert out.stdout.split() == ["MISSING_KEY", "False"]


def test_an_unexpected_failure_is_one_line_and_debug_shows_the_traceback(tmp_path):
    """A bug (here put in: the eval's runner fails with ZeroDivisionError) is one line that
    says it is internal; GRINTA_DEBUG=1 shows its traceback."""
    faulty = (
        "import sys\n"
        "from grinta_jupyter import cli\n"
        "from grinta_jupyter.experiment import suite\n"
        "suite.run_suite = lambda *args, **kwargs: 1 / 0\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    args = ["eval", "--tasks", "raft_kv/fix-failing-test", "--toolsets", "intent"]
    args += ["--model", "scripted", "--runs", "1", "--out", str(tmp_path / "eval")]
    command = [sys.executable, "-c", faulty, *args]

    done = subprocess.run(command, capture_output=True, text=True, env=cli_env(), cwd=REPO)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("grinta: internal error: ZeroDivisionError"), last
    assert "GRINTA_DEBUG=1" in done.stderr
    debug = subprocess.run(
        command, capture_output=True, text=True, env=cli_env(GRINTA_DEBUG="1"), cwd=REPO
    )
    assert "Traceback" in debug.stderr and "ZeroDivisionError" in debug.stderr


# -- %grinta ------------------------------------------------------------------------------------


@pytest.fixture
def ip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("GRINTA_MODEL", "GRINTA_ROOT", *KEY_VARS):
        monkeypatch.delenv(name, raising=False)
    yield from grinta_shell()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--bogus x", "unknown option --bogus"),
        ("--max-steps x task", "--max-steps"),
        ("--max-steps 0 task", "must be 1 or more"),
        ("--model", "expected one argument"),
        ("--toolset nope task", "unknown toolset 'nope'"),
        ("", "give a task"),
        ("--auto", "give a task"),
        ("edit {bad json", "no session yet"),
        ("approve", "no session yet"),
        ("--root /does/not/exist --model openai/x fix", "MISSING_KEY"),
    ],
)
def test_magic_mistakes_are_two_short_lines(ip, capsys, line, says):
    assert ip.run_line_magic("grinta", line) is None
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()

    assert lines[0].startswith("%grinta: ") and says in lines[0], out.out
    assert lines[1:] in ([USAGE], []) and len(lines) <= 2
    assert "Options:" not in out.out and out.err == ""
    assert grinta_jupyter.current() is None


def test_an_empty_cell_is_not_a_task(ip, capsys):
    ip.run_cell_magic("grinta", "--manual", "  \n\n")

    assert capsys.readouterr().out.splitlines() == [
        "%grinta: the cell is empty; write the task in it",
        USAGE,
    ]
    assert grinta_jupyter.current() is None


def test_magic_mistakes_with_a_session(ip, capsys, tmp_path):
    assert ip.run_line_magic("grinta", "--manual fix the failing test in raft_kv") is None
    session = grinta_jupyter.current()
    capsys.readouterr()
    for line, says in [
        ("approve", "nothing is waiting for a decision"),
        ("approve now", "approve takes nothing after it"),
        ("step", None),
        ("edit {bad json", "edit takes JSON arguments"),
        ("edit [1, 2]", "edit takes a JSON object"),
        ("edit", "edit takes JSON arguments"),
    ]:
        ip.run_line_magic("grinta", line)
        out = capsys.readouterr().out.strip().splitlines()
        if says is not None:
            assert out == [out[0], USAGE] and says in out[0], out
    assert session.waiting and snapshot(session.root) == pristine(tmp_path)


def test_a_magic_with_a_model_and_no_key_says_so_in_one_line(ip, capsys, tmp_path):
    assert ip.run_line_magic("grinta", "--model openai/gpt-4o-mini fix it") is None
    out = capsys.readouterr().out.strip().splitlines()

    assert len(out) == 1 and "MISSING_KEY" in out[0] and "set OPENAI_API_KEY" in out[0]
    assert grinta_jupyter.current() is None and not (tmp_path / ".grinta").exists()


def test_a_magic_with_a_local_server_needs_no_key(ip, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GRINTA_API_BASE", "http://127.0.0.1:9/v1")
    assert (
        ip.run_line_magic("grinta", f"--manual --model openai/x --root {tmp_path} fix it") is None
    )
    session = grinta_jupyter.current()

    assert session is not None and session.model.name == "openai/x"
    assert "MISSING_KEY" not in capsys.readouterr().out


def test_a_magic_root_that_is_missing_or_a_file(ip, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GRINTA_API_BASE", "http://127.0.0.1:9/v1")
    (tmp_path / "file.txt").write_text("x")
    for root, says in (
        (tmp_path / "nope", "does not exist"),
        (tmp_path / "file.txt", "not a folder"),
    ):
        ip.run_line_magic("grinta", f"--model openai/x --root {root} fix it")
        out = capsys.readouterr().out.strip().splitlines()
        assert says in out[0] and out[1] == USAGE
    monkeypatch.setenv("GRINTA_ROOT", str(tmp_path / "nope"))
    ip.run_line_magic("grinta", "--model openai/x fix it")
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"%grinta: GRINTA_ROOT={tmp_path / 'nope'} does not exist"]
    assert grinta_jupyter.current() is None


def test_a_task_too_long_is_one_line_and_starts_no_session(tmp_path):
    """A first task is bounded as a next task is: refused before a session or its log exists."""
    with OpenAIServer() as server:
        done = grinta(
            "run",
            "fix " + "x" * 25_000,
            "--root",
            str(tmp_path),
            "--model",
            "openai/x",
            GRINTA_API_BASE=server.url,
        )
        assert not server.requests
    line = only_line(done.stderr)
    assert done.returncode == 2 and "too long" in line and "put the text in a file" in line
    assert not (tmp_path / ".grinta").exists(), "no session started"
