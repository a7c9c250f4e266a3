"""`%grinta` in a real kernel, over real litellm calls to a local server: what a session in a
notebook gets that a terminal session does not (jupyter/controller.py ``_in_kernel``).

- the toolset is the intent tools plus ``inspect`` and ``execute``;
- the notebook hosting the kernel may be edited, except the cell running the session
  (JupyterLab sends that cell's id with the execution; jupyter_server names the notebook in
  ``$JPY_SESSION_NAME``): an edit of it is refused with CELL_PROTECTED and nothing is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat

from tests.kernels import execute, running_kernel, wait_for
from tests.openai_server import OpenAIServer, text_reply, tool_call, tool_reply

TIMEOUT = 90


def _host(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("seen = 41 + 1", execution_count=1),
        nbformat.v4.new_code_cell("%grinta --auto fix the data cell"),
        nbformat.v4.new_code_cell("data = [1, 2, 3]\ntotal = sum(data) * 2"),
    ]
    nb.cells[0].id, nb.cells[1].id, nb.cells[2].id = "setup", "agent", "data"
    nbformat.write(nb, path)


def test_the_running_cell_is_protected_and_the_kernel_tools_are_offered(tmp_path: Path) -> None:
    host = tmp_path / "host.ipynb"
    _host(host)
    before = host.read_bytes()
    server = OpenAIServer()
    server.queue(
        # The model tries to rewrite the very cell that runs the session...
        tool_reply(
            tool_call(
                "replace_string",
                {"path": "host.ipynb", "old_string": "--auto fix", "new_string": "--auto break"},
            )
        ),
        # ...then edits another cell of the same notebook, which is allowed...
        tool_reply(
            tool_call(
                "edit_symbols",
                {
                    "edits": [
                        {
                            "symbol": "host.ipynb::cell:data",
                            "action": "replace",
                            "new_source": "data = [1, 2, 3]\ntotal = sum(data)",
                        }
                    ]
                },
            )
        ),
        # ...and looks at the kernel's variables, a read that runs without asking.
        tool_reply(tool_call("inspect", {})),
        tool_reply(tool_call("finish", {"summary": "fixed the total"})),
        text_reply("done"),
    )
    with server:
        env = {
            "PATH": os.environ["PATH"],
            "GRINTA_MODEL": "openai/test-model",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": "sk-local",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "JPY_SESSION_NAME": str(host),
        }
        with running_kernel(tmp_path, env) as kc:
            execute(kc, "seen = 41 + 1\n%load_ext grinta_jupyter", "setup")
            execute(kc, f"%grinta --auto --root {tmp_path} fix the data cell", "agent")
            execute(kc, "import grinta_jupyter")
            wait_for(kc, "grinta_jupyter.current().done", TIMEOUT)
            codes = execute(
                kc,
                "import json; s = grinta_jupyter.current(); print(json.dumps([(st.call.name, "
                "st.observation.error.code if st.observation and st.observation.error else None) "
                "for st in s.steps]))",
            )
    steps = json.loads(codes.strip().splitlines()[-1])
    assert steps[:3] == [
        ["replace_string", "CELL_PROTECTED"],
        ["edit_symbols", None],
        ["inspect", None],
    ]

    tools = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert {"inspect", "execute", "read", "edit_symbols"} <= tools
    # What the model read back: the refusal, then the variables of the kernel.
    seen_by_model = json.dumps(server.requests[3].body["messages"])
    assert "CELL_PROTECTED" in seen_by_model and "seen" in seen_by_model

    after = nbformat.read(host, 4)
    assert [c.id for c in after.cells] == ["setup", "agent", "data"]
    original = nbformat.reads(before.decode(), 4)
    assert after.cells[1] == original.cells[1]  # the running cell, untouched
    assert after.cells[2].source == "data = [1, 2, 3]\ntotal = sum(data)"
    text = host.read_text()
    start = text.index('"id": "setup"')
    assert text[:start] == before.decode()[:start]  # bytes before the edited cell, unchanged


def test_the_cell_a_next_task_is_given_in_is_protected_too(tmp_path: Path) -> None:
    """``%grinta continue TASK`` shows the panel in its own cell and the session runs there
    now; only the first ``%grinta`` cell was protected, so the agent could rewrite the cell
    holding the live panel (found by a helper; fixed in controller.py ``_protect_this_cell``)."""
    host = tmp_path / "host.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%grinta --auto look around"),
        nbformat.v4.new_code_cell("%grinta continue tidy the notebook"),
        nbformat.v4.new_code_cell("data = [1, 2, 3]"),
    ]
    nb.cells[0].id, nb.cells[1].id, nb.cells[2].id = "first", "next", "data"
    nbformat.write(nb, host)
    server = OpenAIServer()
    server.queue(
        tool_reply(tool_call("finish", {"summary": "looked"})),
        text_reply("done"),
        tool_reply(
            tool_call(
                "replace_string",
                {"path": "host.ipynb", "old_string": "continue tidy", "new_string": "stop"},
            )
        ),
        tool_reply(tool_call("finish", {"summary": "tidied"})),
        text_reply("done"),
    )
    with server:
        env = {
            "PATH": os.environ["PATH"],
            "GRINTA_MODEL": "openai/test-model",
            "GRINTA_API_BASE": server.url,
            "GRINTA_API_KEY": "sk-local",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "JPY_SESSION_NAME": str(host),
        }
        with running_kernel(tmp_path, env) as kc:
            execute(kc, "%load_ext grinta_jupyter\nimport grinta_jupyter")
            execute(kc, f"%grinta --auto --root {tmp_path} look around", "first")
            wait_for(kc, "grinta_jupyter.current().done", TIMEOUT)
            execute(kc, "%grinta continue tidy the notebook", "next")
            wait_for(
                kc,
                "grinta_jupyter.current().done and len(grinta_jupyter.current().steps) > 1",
                TIMEOUT,
            )
            codes = execute(
                kc,
                "import json; s = grinta_jupyter.current(); print(json.dumps([(st.call.name, "
                "st.observation.error.code if st.observation and st.observation.error else None) "
                "for st in s.steps]))",
            )
    steps = json.loads(codes.strip().splitlines()[-1])
    assert ["replace_string", "CELL_PROTECTED"] in steps, steps
    assert nbformat.read(host, 4).cells[1].source == "%grinta continue tidy the notebook"
