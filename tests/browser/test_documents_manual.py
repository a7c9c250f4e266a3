"""Open documents in a ``--manual`` session, in a real JupyterLab: ``%grinta approve`` holds the kernel.

A host notebook runs ``%grinta --manual`` (a local OpenAI-compatible model server proposes an
edit of a Python file the lab also has open in the file editor). ``%grinta approve`` holds the
kernel's main thread and loop while the session commits on a background loop, so the kernel
cannot ask the page which documents are open: it decides from what the page pushed before the
cell (labextension/src/documents.ts, grinta_jupyter/jupyter/documents.py):

- typed in, not saved: the approved edit is refused with DOCUMENT_UNSAVED, and the file on
  disk is unchanged byte for byte;
- saved: the next approved edit is written, and the open editor shows it once the cell is
  done (the reload is sent when the kernel's loop is free), with no unsaved changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LabServer, open_notebook, wait_for_app
from tests.browser.test_documents import (
    DOCUMENT_JS,
    EXECUTE_JS,
    _activate,
    _dirty,
    _open_file,
)
from tests.openai_server import OpenAIServer, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.browser

HOST = "manual-host.ipynb"
WORKSPACE = "manual-ws"
SCRIPT = f"{WORKSPACE}/util.py"
SHOWN_TIMEOUT_MS = 20_000

SAVE_JS = f"async path => {{ await ({DOCUMENT_JS})(path).context.save(); }}"

OUTCOME = """
_o = grinta_jupyter.current().steps[{n} - 1].observation
print(_o.error.code if _o.error else ("ok" if _o is not None and _o.ok else "none"))
"""


@pytest.fixture
def model() -> Iterator[OpenAIServer]:
    with OpenAIServer() as started:
        yield started


def _execute(page: Any, code: str, host: str = HOST) -> str:
    return str(page.evaluate(EXECUTE_JS, [host, code]))


def _host(root: Path, host: str = HOST, workspace: str = WORKSPACE) -> None:
    (root / workspace).mkdir(exist_ok=True)
    (root / workspace / "util.py").write_text("LIMIT = 10\n")
    nb = {
        "cells": [],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / host).write_text(json.dumps(nb))


def _type_in_editor(page: Any, path: str, text: str) -> None:
    editor = page.locator(f'[data-grinta-path="{path}"] .jp-FileEditor .cm-content')
    _activate(page, path)
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)


def _start_manual(page: Any, model: OpenAIServer, host: str, workspace: str) -> None:
    """Open ``host``, start a ``--manual`` session on ``workspace`` in its kernel."""
    open_notebook(page, host)
    page.wait_for_function(
        f"() => ({DOCUMENT_JS})({host!r}).sessionContext.kernelDisplayStatus === 'idle'",
        timeout=60_000,
    )
    _execute(
        page,
        "import os, grinta_jupyter\n"
        "os.environ.update(GRINTA_MODEL='openai/test-model', GRINTA_API_KEY='sk-local', "
        f"GRINTA_API_BASE={model.url!r}, LITELLM_LOCAL_MODEL_COST_MAP='True')\n"
        "%load_ext grinta_jupyter",
        host,
    )
    _execute(page, f"%grinta --manual --root {workspace} raise the limit", host)


def _shut_down(page: Any) -> None:
    page.evaluate(
        """() => Promise.all([...window.jupyterapp.shell.widgets('main')]
          .filter(w => w.sessionContext && w.sessionContext.session)
          .map(w => w.sessionContext.shutdown()))"""
    )
    page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")


def test_manual_approve_never_overwrites_unsaved_work_and_reloads_after_the_cell(
    page: Any, lab_server: LabServer, model: OpenAIServer
) -> None:
    root = lab_server.root
    _host(root)
    edit = {"path": "util.py", "old_string": "LIMIT = 10", "new_string": "LIMIT = 20"}
    model.queue(
        tool_reply(tool_call("replace_string", edit, "c1")),
        tool_reply(tool_call("replace_string", edit, "c2")),
        text_reply("done"),
    )
    _open_file(page, SCRIPT)
    try:
        _start_manual(page, model, HOST, WORKSPACE)
        _execute(page, "%grinta step")  # step 1 is proposed

        # Unsaved work in the open editor, then the user approves: refused, nothing written.
        _type_in_editor(page, SCRIPT, "# typed\n")
        assert _dirty(page, SCRIPT)
        before = (root / SCRIPT).read_bytes()
        _execute(page, "%grinta approve")
        assert (root / SCRIPT).read_bytes() == before, "the unsaved work was overwritten"
        assert _execute(page, OUTCOME.format(n=1)).strip() == "DOCUMENT_UNSAVED"
        assert _dirty(page, SCRIPT)

        # Saved: the model's next proposal is approved and written; the editor shows it once
        # the approve cell is done, the user's work kept, nothing unsaved.
        page.evaluate(SAVE_JS, SCRIPT)
        assert (root / SCRIPT).read_text() == "LIMIT = 10\n# typed\n"
        _execute(page, "%grinta step")  # step 2 is proposed
        _execute(page, "%grinta approve")
        assert _execute(page, OUTCOME.format(n=2)).strip() == "ok"
        assert (root / SCRIPT).read_text() == "LIMIT = 20\n# typed\n"
        page.wait_for_function(
            f"""() => ({DOCUMENT_JS})({SCRIPT!r}).context.model.sharedModel.getSource()
                === 'LIMIT = 20\\n# typed\\n'""",
            timeout=SHOWN_TIMEOUT_MS,
        )
        assert not _dirty(page, SCRIPT)
    finally:
        _shut_down(page)


def test_a_page_loaded_after_the_manual_session_started_protects_unsaved_work(
    page: Any, lab_server: LabServer, model: OpenAIServer
) -> None:
    """The page reloaded after ``%grinta --manual`` never saw the session start: on connecting
    to the kernel it learns from comm_info that the kernel listens, and pushes."""
    host, workspace = "manual-host-reloaded.ipynb", "manual-ws-reloaded"
    script = f"{workspace}/util.py"
    root = lab_server.root
    _host(root, host, workspace)
    edit = {"path": "util.py", "old_string": "LIMIT = 10", "new_string": "LIMIT = 20"}
    model.queue(tool_reply(tool_call("replace_string", edit, "c1")), text_reply("done"))
    try:
        _start_manual(page, model, host, workspace)
        _execute(page, "%grinta step", host)
        page.reload()
        wait_for_app(page)
        open_notebook(page, host)  # the restored tab, now named for the helpers
        page.wait_for_function(
            f"() => ({DOCUMENT_JS})({host!r}).sessionContext.kernelDisplayStatus === 'idle'",
            timeout=60_000,
        )
        _open_file(page, script)
        _type_in_editor(page, script, "# typed\n")
        assert _dirty(page, script)
        before = (root / script).read_bytes()
        _execute(page, "%grinta approve", host)
        assert (root / script).read_bytes() == before, "the unsaved work was overwritten"
        assert _execute(page, OUTCOME.format(n=1), host).strip() == "DOCUMENT_UNSAVED"
    finally:
        _shut_down(page)


FORGET = """
from grinta_jupyter.jupyter import documents as _d
_d._QUESTIONS.pushed.forget(set(), _d._QUESTIONS.pushed.count)
print(len(_d._QUESTIONS.pushed.last()))
"""
HELD_UNSAVED = """
import json, threading
from grinta_jupyter.jupyter import documents as _d
_found = {}
_t = threading.Thread(target=lambda: _found.update(u=_docs.unsaved(["util.py"])))
with _d.loop_held():
    _t.start()
    _t.join()
print(json.dumps(_found["u"]))
"""


def test_a_page_the_kernel_forgot_while_it_is_there_pushes_again(
    page: Any, lab_server: LabServer
) -> None:
    """The kernel forgets a page that answers a question too late (a throttled background
    tab) and closes the comm of its last push. The page is there: it pushes again, so its
    unsaved file is still refused by a commit made while a cell holds the kernel."""
    host, workspace = "forgot-host.ipynb", "forgot-ws"
    script = f"{workspace}/util.py"
    root = lab_server.root
    _host(root, host, workspace)
    try:
        open_notebook(page, host)
        page.wait_for_function(
            f"() => ({DOCUMENT_JS})({host!r}).sessionContext.kernelDisplayStatus === 'idle'",
            timeout=60_000,
        )
        _execute(
            page,
            "from grinta_jupyter.jupyter.documents import kernel_documents\n"
            f"_docs = kernel_documents({str(root / workspace)!r})",
            host,
        )
        _open_file(page, script)
        _type_in_editor(page, script, "# typed\n")
        assert _dirty(page, script)
        assert json.loads(_execute(page, HELD_UNSAVED, host)) == ["util.py"]
        assert _execute(page, FORGET, host).strip() == "0"
        page.wait_for_function(
            f"""async () => {{
              const out = await ({EXECUTE_JS})([{host!r},
                'from grinta_jupyter.jupyter import documents as _d\\n'
                + 'print(len(_d._QUESTIONS.pushed.last()))']);
              return out.trim() === '1';
            }}""",
            timeout=SHOWN_TIMEOUT_MS,
            polling=500,
        )
        assert json.loads(_execute(page, HELD_UNSAVED, host)) == ["util.py"]
    finally:
        _shut_down(page)
