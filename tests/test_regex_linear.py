"""Regular expressions over untrusted text take time linear in it.

Each test feeds one real function a text on which its regular expression backtracks in
the square of the length (``re`` tries each start position, and from each one scans the
same long run again). The sizes are chosen so that the current code takes minutes (about
100 s or more, extrapolated from timings at 4x smaller sizes); the check allows 10 s.

The call runs in a child process, not in a thread of the test: ``re`` holds the
interpreter's lock for the whole of one search, so a thread's ``join(timeout)`` would
only return once the search is over (measured: ``join(2)`` returned after 9 s, the
thread finished), and the test would pass after waiting the whole time. The child is
killed when it is still running at the limit.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IMPORT_SECONDS = 120  # the child's imports and building its input (not timed)
SECONDS = 10  # the call itself: linear code takes well under a second


def finishes(setup: str, call: str) -> None:
    """Run ``setup`` then ``call`` in a child interpreter; fail when ``call`` takes more
    than ``SECONDS`` (the child is then killed)."""
    code = "\n".join(
        [
            textwrap.dedent(setup),
            "print('ready', flush=True)",
            textwrap.dedent(call),
            "print('done', flush=True)",
        ]
    )
    with tempfile.TemporaryFile(mode="w+") as errors:
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert child.stdout is not None
            for line in child.stdout:
                lines.put(line.strip())
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        try:
            ready = lines.get(timeout=IMPORT_SECONDS)
            if ready != "ready":
                child.wait()
                errors.seek(0)
                pytest.fail(f"the child failed before the call:\n{errors.read()}")
            try:
                done = lines.get(timeout=SECONDS)
            except queue.Empty:
                pytest.fail(f"still running after {SECONDS} s: time super-linear in the text")
            if done != "done":
                child.wait()
                errors.seek(0)
                pytest.fail(f"the call failed:\n{errors.read()}")
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()


def test_a_notebook_holding_a_long_run_of_backslashes_parses_at_once() -> None:
    """A notebook file in the workspace (or a cell the model wrote) holds a long run of
    backslashes: read/edit/search of it -> ``Notebook.parse`` (runtime/notebook.py) ->
    ``layout_of`` (runtime/notebook_json.py) -> ``_ESCAPE.finditer(text)``, whose
    ``(\\\\+)u`` is tried at each backslash of the run and scans the rest of it.
    Measured: 20,000 characters 0.87 s, 80,000 13 s; here 300,000."""
    finishes(
        """
        import json
        from grinta_jupyter.runtime.notebook import Notebook
        cell = {"cell_type": "code", "execution_count": None, "id": "abc", "metadata": {},
                "outputs": [], "source": ["\\\\" * 150_000]}
        text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                           "nbformat_minor": 5}, indent=1)
        """,
        "Notebook.parse(text, 'big.ipynb')",
    )


def test_jsonc_with_an_unterminated_string_of_escaped_quotes_is_checked_at_once() -> None:
    """The model writes a tsconfig.json whose string is never closed and holds many
    ``\\"``: the syntax check before commit, ``check_syntax`` -> ``first_error`` ->
    ``_json`` -> ``without_comments`` (runtime/validation.py) -> ``_JSON_COMMENTS.sub``:
    the string alternative ``"(?:\\\\.|[^"\\\\\\n])*"`` restarts at each quote and scans
    to the end of the line. Measured: 20,000 characters 1.4 s, 80,000 23 s; here 240,000."""
    finishes(
        """
        from grinta_jupyter.runtime.validation import check_syntax
        text = '{"a": "' + '\\\\"' * 120_000 + "\\n"
        """,
        "check_syntax('tsconfig.json', None, text)",
    )


def test_jsonc_with_unclosed_block_comments_is_checked_at_once() -> None:
    """The model writes a tsconfig.json with many ``/*`` and no ``*/``: ``check_syntax``
    -> ``without_comments`` -> ``_JSON_COMMENTS.sub``, whose ``/\\*.*?\\*/`` (re.DOTALL)
    scans to the end of the text from each ``/*``. Measured: 20,000 characters 0.33 s,
    80,000 5.2 s; here 390,000."""
    finishes(
        """
        from grinta_jupyter.runtime.validation import check_syntax
        text = "{}\\n" + "/* " * 130_000
        """,
        "check_syntax('tsconfig.json', None, text)",
    )


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ("make test", "'\\n' * 120_000"),  # every runner's summary: ^\s* patterns
        ("npx jest", "'\\n' * 240_000"),  # ^\s*Tests:? ...
        ("pytest -q", "'.' * 200_000 + '\\n'"),  # ^[.sxX]*\.[.sxX]*\s*\[100%\]$
        ("pytest -q", "'F' * 200_000 + '\\n'"),  # ^[.sxXFE]*[FE][.sxXFE]*\s*\[\s*\d+%\]$
    ],
    ids=["any-blank-lines", "jest-blank-lines", "pytest-dots", "pytest-failures"],
)
def test_test_output_is_judged_at_once(command: str, output: str) -> None:
    """A test command prints many blank lines, or one long line of progress dots or F's:
    ``Guards.observe`` (agent/guards.py) and the condenser's ``_test_outcome``
    (agent/condense.py) -> ``judge`` -> ``judge_output`` (agent/testruns.py). Under
    re.MULTILINE ``^\\s*`` matches at every line start and its ``\\s`` runs on over the
    following blank lines; ``[.sxX]*\\.[.sxX]*`` splits one run of dots at every point.
    Measured: "make test" over 10,000 blank lines 2.2 s, 40,000 34 s; "pytest -q" over
    10,000 dots 0.39 s, 40,000 6.4 s. (``run`` keeps 12,000 characters of output by default,
    ``Settings.run_output_chars``: there about 1.8 s per judgement.)"""
    finishes(
        f"""
        from grinta_jupyter.agent.testruns import judge
        output = {output}
        """,
        f"judge({command!r}, output, 0)",
    )


def test_a_provider_error_with_a_long_run_of_spaces_is_described_at_once() -> None:
    """The model's server answers an error whose body (an HTML page) holds a long run of
    white space: ``LiteLLMModel`` -> ``_to_model_error`` -> ``_detail``
    (agent/models/litellm_model.py) -> ``_SSL_CONTEXT.sub``, whose leading ``\\s*`` is
    tried at each white-space character and scans the rest of the run; the message is cut
    to 300 characters only after. Measured: 20,000 characters 0.36 s, 80,000 5.0 s; here
    320,000."""
    finishes(
        """
        import openai
        from litellm import exceptions
        from grinta_jupyter.agent.models.litellm_model import LiteLLMModel
        model = LiteLLMModel("gpt-4o-mini", api_key="sk-test-123456789")
        error = RuntimeError("<html>bad gateway" + " " * 320_000 + "</html>")
        """,
        "model._to_model_error(error, 'openai')",
    )


def test_appending_to_a_file_with_a_long_blank_line_is_at_once() -> None:
    """A workspace file holds a line of spaces only: an edit that adds a top-level
    definition, ``append_to`` (code/edits.py) -> ``_Text.unit`` -> ``_indent_unit`` ->
    ``_MARGIN.findall``: ``^([ \\t]*)(?=[^\\n]*\\S)`` gives back one space at a time, and
    each time the look-ahead rescans the rest of the line. Measured: 20,000 spaces 1.2 s,
    80,000 18 s; here 200,000."""
    finishes(
        """
        from grinta_jupyter.code.edits import append_to
        source = "def f():\\n    pass\\n" + " " * 200_000 + "\\n"
        """,
        "append_to(source, None, 'def g():\\n    return 1\\n', 'python')",
    )


@pytest.mark.parametrize(
    "command",
    [
        "'\\n' * 400_000",  # ^\s*cat ...: \s runs on over the blank lines after each line start
        "'cat > a <<EOF\\n' * 45_000",  # (.*?)\n\5 (re.DOTALL): each header scans to the end
    ],
    ids=["blank-lines", "unterminated-heredocs"],
)
def test_a_shell_write_is_read_at_once(command: str) -> None:
    """The broad toolset's ``shell_write``: the model's command -> ``stage``
    (tools/broad/heredoc.py) -> ``_HEREDOC.findall``. Many blank lines: under
    re.MULTILINE the leading ``^\\s*`` runs from every line start over all the blank lines
    after it (10,000 characters 0.08 s, 40,000 1.3 s; here 400,000). Many heredoc headers
    and no terminator: from each header the body ``(.*?)\\n\\5`` scans to the end of the
    command (40,000 characters 0.48 s; here 630,000)."""
    finishes(
        f"""
        from grinta_jupyter.runtime.errors import ToolFailure
        from grinta_jupyter.tools.broad.heredoc import ShellWriteArgs, stage
        args = ShellWriteArgs(command={command})
        """,
        """
        try:
            stage(args, None)
        except ToolFailure:
            pass
        """,
    )


def test_an_xml_edit_of_many_unclosed_blocks_is_read_at_once() -> None:
    """The broad toolset's ``xml_edit``: the model's block repeats ``<edit path="a"><old>``
    and never closes it -> ``stage`` (tools/broad/xml_edit.py) -> ``_BLOCK.findall``:
    from each ``<edit``, ``(.*?)</old>`` (re.DOTALL) scans to the end of the text.
    Measured: 10,000 characters 0.018 s, 40,000 0.31 s; here 800,000."""
    finishes(
        """
        from grinta_jupyter.runtime.errors import ToolFailure
        from grinta_jupyter.tools.broad.xml_edit import XmlEditArgs, stage
        args = XmlEditArgs(block='<edit path="a"><old>' * 40_000)
        """,
        """
        try:
            stage(args, None)
        except ToolFailure:
            pass
        """,
    )


def test_an_environment_value_with_a_long_run_of_spaces_is_read_at_once() -> None:
    """Code the model runs in the kernel sets an environment variable to a long text with
    a run of spaces in it: every ``Secrets.from_env`` (a session, the event log, each
    card) and every ``run`` (``command_environment``) -> ``is_secret_variable`` ->
    ``_secret_settings`` (runtime/secrets.py) -> ``_SETTING.findall``: the lazy
    ``[\\w .-]*?`` and the ``\\s*`` after it share the spaces, every split of the run is
    tried. Measured: 10,000 spaces 0.074 s, 40,000 1.2 s; here 320,000."""
    finishes(
        """
        from grinta_jupyter.runtime.secrets import Secrets
        environ = {"SOME_SETTING": "a" + " " * 320_000 + "b"}
        """,
        "Secrets.from_env(environ)",
    )


@pytest.mark.parametrize(
    ("runner", "line", "passed"),
    [
        ("jest", "\r  Tests:  1 failed, 3 passed, 4 total", False),
        ("mocha", "\r\f  3 passing (12ms)", True),
        ("tox", "\r  congratulations :)", True),
    ],
)
def test_a_summary_after_a_carriage_return_is_still_read(
    runner: str, line: str, passed: bool
) -> None:
    """A runner that redraws its progress line starts the summary with a carriage return:
    the margins that replaced ``\\s*`` (linear) still take any white space but a newline."""
    from grinta_jupyter.agent.testruns import judge_output

    verdict = judge_output(runner, f"progress\n{line}\n")
    assert verdict.passed is passed, verdict
