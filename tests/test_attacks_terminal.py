"""The terminal review against answers that look like one thing and are another.

The real ``grinta`` entry in a subprocess with stdin piped, against the offline
demo model or the local OpenAI-compatible server, then the session log and the
files on disk. Piped answers are read one line per question: an answer the
prompt does not understand is asked again, and the NEXT line of the pipe then
answers the same question, so a "no" that is not understood can end up approved
by the "y" meant for the next step. Every way of writing a word the prompt shows
must therefore be understood as that word, and nothing else may be.
"""

from __future__ import annotations

import pytest

from grinta_jupyter.samples.tasks import DEMO_FIX
from grinta_jupyter.terminal import HINT
from tests.conftest import snapshot
from tests.openai_server import OpenAIServer, tool_call, tool_reply
from tests.test_cli_hostile import NODE, decisions, demo, events, grinta, pristine

# -- words written with what a person cannot see -------------------------------------------


@pytest.mark.parametrize(
    "no",
    [
        "\ufeffn",  # a file of answers saved with a byte-order mark
        "\ufeffno",
        "n\u200b",  # a zero-width space pasted along
        "\u200eno",  # a left-to-right mark
        "\uff4e",  # full-width n (an input method in full-width mode)
        "\uff2e\uff2f",  # full-width NO
    ],
)
def test_a_no_written_with_invisible_or_full_width_characters_vetoes(tmp_path, no):
    # Before: the first answer was asked again, its reason answered that question too, and
    # the "y" meant for the next step approved the step the person had said no to.
    done, root = demo(tmp_path, f"{no}\nnot the tests\ny\n")

    assert decisions(root)[:2] == [("veto", "not the tests"), ("approve", None)]
    assert HINT not in done.stdout


@pytest.mark.parametrize("yes", ["\ufeffy", "\uff59", "\uff39\uff25\uff33", "\ufeffyes"])
def test_a_yes_with_a_byte_order_mark_or_full_width_approves(tmp_path, yes):
    done, root = demo(tmp_path, f"n\n\n{yes}\n")

    assert decisions(root)[:2] == [("veto", "vetoed by the user"), ("approve", None)]
    assert DEMO_FIX["new_string"] in (root / NODE).read_text()


@pytest.mark.parametrize(
    "lookalike",
    [
        "\u0443",  # Cyrillic u, drawn as a "y"
        "\u0443\u0435\u0455",  # Cyrillic "yes"
        "\u04af",  # Cyrillic straight u
        "\ufeff",  # only a byte-order mark: not the Enter that approves
        "\u200b",  # only a zero-width space
        "\x1b[A",  # an arrow key on a terminal that does not edit lines
        "ye",
        "yess",
        "y es",
        "q",
        "quit",
        "2",
    ],
)
def test_a_lookalike_or_a_near_miss_never_approves(tmp_path, lookalike):
    done, root = demo(tmp_path, f"{lookalike}\nv\n\n")

    assert done.stdout.count(HINT) == 1
    assert decisions(root)[0] == ("veto", "vetoed by the user")
    assert snapshot(root) == pristine(tmp_path)


# -- the words the prompt shows ------------------------------------------------------------


def test_message_as_the_prompt_spells_it_tells_the_model_and_never_decides(tmp_path):
    # The prompt says "[m]essage"; before, "message TEXT" was not understood.
    done, root = demo(tmp_path, "message run only the failing test\nMESSAGE\nthen stop\nv\n\n")

    assert HINT not in done.stdout
    said = [e["text"] for e in events(root) if e["type"] == "user_message"]
    assert said == ["run only the failing test", "then stop"]
    assert decisions(root)[0] == ("veto", "vetoed by the user")
    assert snapshot(root) == pristine(tmp_path)


LONG = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12))


def test_hunk_as_the_prompt_spells_it_chooses_hunk_by_hunk(tmp_path):
    # The prompt says "[h]unk by hunk"; before, "hunk" was not understood.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "long.py").write_text(LONG)
    edits = [
        {"path": "long.py", "old_string": "return 1\n", "new_string": "return 100\n"},
        {"path": "long.py", "old_string": "return 10\n", "new_string": "return 1000\n"},
    ]
    with OpenAIServer() as server:
        server.queue(
            tool_reply(tool_call("multiedit", {"edits": edits})),
            tool_reply(tool_call("finish", {"summary": "done"})),
        )
        done = grinta(
            *("run", "change returns", "--root", str(root)),
            answers="hunk\n\uff4e\nY\nf1 stays\n",
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
        )

    assert "--- hunk 2 of 2 in long.py" in done.stdout
    decision = next(e for e in events(root) if e["type"] == "user_decision")
    assert (decision["decision"], decision["hunks"], decision["reason"]) == (
        "approve_hunks",
        [1],
        "f1 stays",
    )
    text = (root / "long.py").read_text()
    assert "return 1000\n" in text and "    return 1\n" in text


# -- what is printed before the question ---------------------------------------------------


def test_a_ten_thousand_line_write_shows_every_row_before_it_is_approved(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    content = "".join(f"row_{i} = {i}  # \u00e9\n" for i in range(10_000))
    create = tool_call("create", {"path": "big.py", "content": content})
    with OpenAIServer() as server:
        server.queue(tool_reply(create, chunk_size=1 << 20))  # then the model has no reply
        done = grinta(
            *("run", "make big.py", "--root", str(root)),
            answers="y\n",
            GRINTA_MODEL="openai/test",
            GRINTA_API_BASE=server.url,
            GRINTA_API_KEY="sk-test",
        )

    before, asked, _ = done.stdout.partition("approve?")
    assert asked, done.stdout[-2000:]
    shown = [line for line in before.splitlines() if line.startswith("    + row_")]
    assert shown == [f"    + row_{i} = {i}  # \u00e9" for i in range(10_000)], (
        "none cut, none paged"
    )
    assert "\x1b[" not in done.stdout, "no colour when stdout is not a terminal"
    assert (root / "big.py").read_text() == content
