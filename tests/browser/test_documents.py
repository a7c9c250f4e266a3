"""The open document in a real JupyterLab: unsaved work is never overwritten, and a commit shows at once.

A host notebook runs a session (a scripted model, paced by the test so each
proposal is staged when the test says) that edits files of a workspace the
lab also has open in other tabs: a notebook and a Python file in the file
editor. The kernel asks the page over the comm of labextension/src/documents.ts
(grinta_jupyter/jupyter/documents.py is the kernel side):

- with unsaved changes in the open tab, the approved edit is refused with
  DOCUMENT_UNSAVED and the file on disk is untouched;
- after the tab is saved, the edit is committed and the open tab shows it at
  once, with the user's saved work kept, no unsaved changes, and no "file
  changed on disk" dialog when it is saved again;
- with real-time collaboration (jupyter-collaboration) on, the committed cell
  edit appears in the open notebook (the server loads the file into the
  shared document).

It also checks what the kernel learns of its host in a real lab: the
notebook ($JPY_SESSION_NAME) and the running cell (``cellId``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    LabServer,
    lab_page,
    open_notebook,
    open_notebook7,
    run_command,
    screenshot,
)
from tests.browser.panel import STEP_TIMEOUT_MS, pending_card, wait_for_status

pytestmark = pytest.mark.browser

HOST = "docs-host.ipynb"
WORKSPACE = "docs-ws"
TARGET = f"{WORKSPACE}/target.ipynb"
SCRIPT = f"{WORKSPACE}/util.py"
# Long enough for the server's file watcher under collaboration (1 s polls) and a slow machine.
SHOWN_TIMEOUT_MS = 20_000

HOST_CELL = """
from grinta_jupyter.jupyter.documents import host_cell
h = host_cell()
print(h.notebook, h.cell_id)
"""

# The model plays one turn each time the test calls `release()`, so every proposal is
# staged against the file as the test left it.
SESSION_CELL = f"""
import asyncio
from grinta_jupyter.agent import Session
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.jupyter.documents import kernel_documents
from grinta_jupyter.jupyter.panel import SessionPanel

class Paced(ScriptedModel):
    def __init__(self, turns):
        super().__init__(turns)
        self.turns = asyncio.Semaphore(0)

    async def complete(self, *args, **kwargs):
        await self.turns.acquire()
        return await super().complete(*args, **kwargs)

def release():
    model.turns.release()

cell = call("replace_string", path="target.ipynb", old_string="total = 1", new_string="total = 2")
script = call("replace_string", path="util.py", old_string="LIMIT = 10", new_string="LIMIT = 20")
model = Paced([reply("", c) for c in (cell, cell, script, script)] + [reply("done")])
session = Session("edit", model=model, root={WORKSPACE!r}, documents=kernel_documents({WORKSPACE!r}))
panel = SessionPanel(session)

async def drive():
    async for update in session.updates():
        panel.apply(update)

task = asyncio.ensure_future(drive())
display(panel.widget)
"""

# Prints what became of step N once it is observed: its error code, or "ok".
OUTCOME = """
async def _observed(n):
    while len(session.steps) < n or session.steps[n - 1].observation is None:
        await asyncio.sleep(0.05)
    return session.steps[n - 1].observation
_o = await asyncio.wait_for(_observed({n}), 30)
print(getattr(_o.error.code, "value", _o.error.code) if _o.error else "ok")
"""

EXECUTE_JS = """
async ([path, code]) => {
  const widgets = [...window.jupyterapp.shell.widgets('main')];
  const panel = widgets.find(w => w.node.dataset.grintaPath === path);
  const future = panel.sessionContext.session.kernel.requestExecute({ code, stop_on_error: true });
  let out = '';
  let error = null;
  future.onIOPub = msg => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') error = msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  if (error) throw new Error(error);
  return out;
}
"""

# The document open at `path` (as open_notebook or open_file named it).
DOCUMENT_JS = """
path => [...window.jupyterapp.shell.widgets('main')].find(w => w.node.dataset.grintaPath === path)
"""

# Save the document open at `path`; "dialog" if a dialog (such as "File Changed") stops it.
SAVE_JS = f"""
async path => {{
  const widget = ({DOCUMENT_JS})(path);
  const dialog = new Promise(resolve => {{
    const timer = setInterval(() => {{
      if (document.querySelector('.jp-Dialog')) {{ clearInterval(timer); resolve('dialog'); }}
    }}, 50);
    widget.context.save().then(() => {{ clearInterval(timer); resolve('saved'); }});
  }});
  return await dialog;
}}
"""


def _notebook(cells: list[tuple[str, str, str]]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "id": cid, "metadata": {}, "source": src}
                | ({"outputs": [], "execution_count": None} if kind == "code" else {})
                for cid, kind, src in cells
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )


def _text(source: str | list[str]) -> str:
    """A cell's source as nbformat allows it on disk: a string, or a list of lines."""
    return source if isinstance(source, str) else "".join(source)


def _workspace(root: Path) -> None:
    (root / WORKSPACE).mkdir(exist_ok=True)
    (root / TARGET).write_text(
        _notebook(
            [
                ("totals", "code", "total = 1\n"),
                ("notes", "code", "note = 'mine'\n"),
            ]
        )
    )
    (root / SCRIPT).write_text("LIMIT = 10\n")
    (root / HOST).write_text(
        _notebook([("where", "code", HOST_CELL.strip()), ("session", "code", SESSION_CELL.strip())])
    )


def _open_file(page: Any, path: str) -> None:
    page.evaluate(
        """async path => {
          const widget = await window.jupyterapp.commands.execute(
            'docmanager:open', {path, factory: 'Editor'});
          widget.node.dataset.grintaPath = path;
          await widget.context.ready;
        }""",
        path,
    )


def _activate(page: Any, path: str) -> None:
    page.evaluate(f"path => window.jupyterapp.shell.activateById(({DOCUMENT_JS})(path).id)", path)


def _execute(page: Any, code: str, host: str = HOST) -> str:
    return str(page.evaluate(EXECUTE_JS, [host, code]))


def _outcome(page: Any, step: int, host: str = HOST) -> str:
    return _execute(page, OUTCOME.format(n=step), host).strip()


def _source(page: Any, path: str, cell: int | None = None) -> str:
    """The text the open tab shows: a notebook cell's source, or a file's."""
    return str(
        page.evaluate(
            f"""([path, cell]) => {{
              const model = ({DOCUMENT_JS})(path).context.model;
              return cell === null ? model.sharedModel.getSource()
                : model.sharedModel.cells[cell].getSource();
            }}""",
            [path, cell],
        )
    )


def _type(page: Any, path: str, cell: int | None, text: str) -> None:
    """What typing does to the open document: new content, not saved."""
    page.evaluate(
        f"""([path, cell, text]) => {{
          const model = ({DOCUMENT_JS})(path).context.model;
          (cell === null ? model.sharedModel : model.sharedModel.cells[cell]).setSource(text);
        }}""",
        [path, cell, text],
    )


def _dirty(page: Any, path: str) -> bool:
    return bool(page.evaluate(f"path => ({DOCUMENT_JS})(path).context.model.dirty", path))


def _settled(path: Path, quiet: float = 2.5, timeout: float = 60.0) -> None:
    """Wait until ``path`` has not changed on disk for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    stamp = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        st = path.stat()
        now = (st.st_mtime_ns, st.st_size, st.st_ino)
        if now != stamp:
            stamp, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.1)
    raise AssertionError(f"{path} kept changing for {timeout:.0f} s")


def _wait_for_source(page: Any, path: str, cell: int | None, text: str) -> None:
    page.wait_for_function(
        f"""([path, cell, text]) => {{
          const model = ({DOCUMENT_JS})(path).context.model;
          const shared = cell === null ? model.sharedModel : model.sharedModel.cells[cell];
          return shared !== undefined && shared.getSource() === text;
        }}""",
        arg=[path, cell, text],
        timeout=SHOWN_TIMEOUT_MS,
    )


def _start(page: Any, server: LabServer) -> Any:
    """Open the host (running its cells) and the workspace's notebook; return the session panel."""
    _workspace(server.root)
    open_notebook(page, TARGET)
    host = open_notebook(page, HOST)
    page.wait_for_function(
        f"() => ({DOCUMENT_JS})({HOST!r}).sessionContext.kernelDisplayStatus === 'idle'",
        timeout=60_000,
    )
    run_command(page, "notebook:run-all-cells")
    panel = host.locator(".jp-Cell").nth(1).locator(".grinta-panel")
    panel.wait_for(timeout=STEP_TIMEOUT_MS)
    return panel


def _close(page: Any) -> None:
    page.evaluate(
        """() => Promise.all([...window.jupyterapp.shell.widgets('main')]
          .filter(w => w.sessionContext && w.sessionContext.session)
          .map(w => w.sessionContext.shutdown()))"""
    )
    run_command(page, "application:close-all")


def test_unsaved_documents_refuse_the_commit_saved_ones_show_it(
    page: Any, lab_server: LabServer
) -> None:
    panel = _start(page, lab_server)
    try:
        # The kernel knows its notebook and the cell that runs (JupyterLab sends cellId).
        where = _execute(page, "print(h.notebook, h.cell_id)").split()
        assert where == [str(lab_server.root / HOST), "where"]

        # Unsaved work in the open notebook: the approved cell edit is refused, nothing written.
        _type(page, TARGET, 1, "note = 'typed, not saved'\n")
        assert _dirty(page, TARGET)
        before = (lab_server.root / TARGET).read_bytes()
        _execute(page, "release()")
        card = pending_card(page, panel, "replace_string")
        assert "#%% cell totals (code)" in card.locator(".grinta-diff-cell").first.inner_text()
        screenshot(page, "documents-cell-diff", card)
        card.locator("button.grinta-approve").click()
        assert _outcome(page, 1) == "DOCUMENT_UNSAVED"
        assert (lab_server.root / TARGET).read_bytes() == before
        assert _source(page, TARGET, 1) == "note = 'typed, not saved'\n"

        # Saved: the same edit is committed and the open tab shows it, the user's work kept.
        assert page.evaluate(SAVE_JS, TARGET) == "saved"
        _execute(page, "release()")
        card = pending_card(page, panel, "replace_string")
        card.locator("button.grinta-approve").click()
        wait_for_status(card, "committed")
        on_disk = json.loads((lab_server.root / TARGET).read_text())
        assert [_text(c["source"]) for c in on_disk["cells"]] == [
            "total = 2\n",
            "note = 'typed, not saved'\n",
        ]
        _wait_for_source(page, TARGET, 0, "total = 2\n")
        assert _source(page, TARGET, 1) == "note = 'typed, not saved'\n"
        assert not _dirty(page, TARGET)
        # The tab knows the file as it is now: saving again raises no "file changed" dialog.
        assert page.evaluate(SAVE_JS, TARGET) == "saved"

        # The same in the file editor.
        _open_file(page, SCRIPT)
        editor = page.locator(f'[data-grinta-path="{SCRIPT}"] .jp-FileEditor .cm-content')
        editor.click()
        page.keyboard.press("Control+End")
        page.keyboard.type("# typed\n")
        assert _dirty(page, SCRIPT)
        _activate(page, HOST)
        _execute(page, "release()")
        card = pending_card(page, panel, "replace_string")
        card.locator("button.grinta-approve").click()
        assert _outcome(page, 3) == "DOCUMENT_UNSAVED"
        assert (lab_server.root / SCRIPT).read_text() == "LIMIT = 10\n"
        assert page.evaluate(SAVE_JS, SCRIPT) == "saved"
        _execute(page, "release()")
        card = pending_card(page, panel, "replace_string")
        card.locator("button.grinta-approve").click()
        wait_for_status(card, "committed")
        assert (lab_server.root / SCRIPT).read_text() == "LIMIT = 20\n# typed\n"
        _wait_for_source(page, SCRIPT, None, "LIMIT = 20\n# typed\n")
        assert not _dirty(page, SCRIPT)
        assert page.evaluate(SAVE_JS, SCRIPT) == "saved"
        assert page.locator(".jp-Dialog").count() == 0
    finally:
        _close(page)


def test_with_collaboration_a_committed_cell_edit_appears(
    rtc_page: Any, rtc_lab_server: LabServer
) -> None:
    page = rtc_page
    assert not rtc_lab_server.page_config().get("disableRTC"), "collaboration is on"
    panel = _start(page, rtc_lab_server)
    try:
        assert page.evaluate(f"path => ({DOCUMENT_JS})(path).context.model.collaborative", TARGET)
        # The collaborative room saves the notebook it just opened (its kernel's metadata,
        # its own layout) about a second after the kernel answers. An edit staged before that
        # save is refused at commit as stale, which is right, but not what this test is about.
        page.wait_for_function(
            f"() => ({DOCUMENT_JS})({TARGET!r}).sessionContext.kernelDisplayStatus === 'idle'",
            timeout=60_000,
        )
        _settled(rtc_lab_server.root / TARGET)
        _execute(page, "release()")
        card = pending_card(page, panel, "replace_string")
        card.locator("button.grinta-approve").click()
        wait_for_status(card, "committed")
        _wait_for_source(page, TARGET, 0, "total = 2\n")
        assert _source(page, TARGET, 1) == "note = 'mine'\n"
        screenshot(page, "documents-collaboration")
    finally:
        _close(page)


def test_notebook7_refuses_then_shows_an_edit_of_the_host_notebook(
    notebook7_page: Any, notebook7_server: LabServer
) -> None:
    """Notebook 7 shows one document a page, so the session edits its own notebook's other cell.

    Its page carries no server root: the kernel places the page's paths by
    its own notebook ($JPY_SESSION_NAME).
    """
    page = notebook7_page
    host = "docs-host7.ipynb"
    # The session cell must not hold the string it replaces, or the edit would be ambiguous.
    session = (
        SESSION_CELL.replace(repr(WORKSPACE), "'.'")
        .replace("target.ipynb", host)
        .replace('old_string="total = 1"', 'old_string="total = " + "1"')
    )
    (notebook7_server.root / host).write_text(
        _notebook(
            [
                ("where", "code", HOST_CELL.strip()),
                ("session", "code", session.strip()),
                ("totals", "code", "total = 1\n"),
            ]
        )
    )
    notebook = open_notebook7(page, notebook7_server, host)
    assert "serverRoot" not in notebook7_server.page_config()
    assert page.evaluate(
        "id => window.jupyterapp.isPluginActivated(id)", "grinta-jupyter-labextension:documents"
    )
    page.evaluate(
        "path => { window.jupyterapp.shell.currentWidget.node.dataset.grintaPath = path; }", host
    )
    run_command(page, "notebook:run-all-cells")
    panel = notebook.locator(".jp-Cell").nth(1).locator(".grinta-panel")
    panel.wait_for(timeout=STEP_TIMEOUT_MS)
    try:
        where = _execute(page, "print(h.notebook, h.cell_id)", host).split()
        assert where == [str(notebook7_server.root / host), "where"]
        # Running the cells left the notebook with unsaved outputs.
        page.wait_for_function(
            f"path => ({DOCUMENT_JS})(path).context.model.dirty", arg=host, timeout=10_000
        )
        _execute(page, "release()", host)
        card = pending_card(page, panel, "replace_string")
        card.locator("button.grinta-approve").click()
        assert _outcome(page, 1, host) == "DOCUMENT_UNSAVED"

        assert page.evaluate(SAVE_JS, host) == "saved"
        _execute(page, "release()", host)
        card = pending_card(page, panel, "replace_string")
        card.locator("button.grinta-approve").click()
        assert _outcome(page, 2, host) == "ok"
        on_disk = json.loads((notebook7_server.root / host).read_text())
        assert _text(on_disk["cells"][2]["source"]) == "total = 2\n"
        _wait_for_source(page, host, 2, "total = 2\n")
        # Reloaded, the notebook is still trusted: the live panel is still drawn, not text.
        panel.wait_for(timeout=STEP_TIMEOUT_MS)
        assert page.evaluate(
            f"path => ({DOCUMENT_JS})(path).context.model.cells.get(1).trusted", host
        )
        assert page.evaluate(SAVE_JS, host) == "saved"
        screenshot(page, "documents-notebook7")
    finally:
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")


# A second connection to the host's kernel that handles comms but has no grinta extension:
# it closes each question's comm at once, as a page without the extension does.
SILENT_JS = f"""
path => {{
  const kernel = ({DOCUMENT_JS})(path).sessionContext.session.kernel;
  const silent = window.jupyterapp.serviceManager.kernels.connectTo({{
    model: kernel.model, handleComms: true
  }});
  window.grintaSilent = {{ connection: silent, closed: 0 }};
  silent.registerCommTarget('grinta.documents', comm => {{
    window.grintaSilent.closed += 1;
    comm.close();
  }});
}}
"""


def _second_connection_race(error: Any) -> bool:
    """JupyterLab's own, with the test's second kernel connection (``connectTo``): it may
    ask the kernel for subshells, which ipykernel here does not offer, and leaves the
    rejection unhandled. Seen once in CI, not in our code; the test's assertions hold."""
    return str(getattr(error, "message", error)) == "Kernel subshells are not supported"


@pytest.fixture
def plain_window_page(browser: Any, lab_server: LabServer) -> Iterator[Any]:
    """``page``, tolerating only the second connection's subshell rejection."""
    with lab_page(browser, lab_server, tolerated=_second_connection_race) as page:
        yield page


def test_a_window_without_the_extension_does_not_hide_unsaved_work(
    plain_window_page: Any, lab_server: LabServer
) -> None:
    """Each page answers on a comm of its own, so one that closes the question silences no one."""
    page = plain_window_page
    host = "docs-plain.ipynb"
    _workspace(lab_server.root)
    (lab_server.root / host).write_text(_notebook([("only", "code", "x = 1\n")]))
    open_notebook(page, host)
    page.wait_for_function(
        f"() => ({DOCUMENT_JS})({host!r}).sessionContext.kernelDisplayStatus === 'idle'",
        timeout=60_000,
    )
    try:
        _execute(
            page,
            "import asyncio, json\nfrom grinta_jupyter.jupyter.documents import kernel_documents\n"
            f"docs = kernel_documents({WORKSPACE!r})",
            host,
        )
        _open_file(page, SCRIPT)
        page.locator(f'[data-grinta-path="{SCRIPT}"] .jp-FileEditor .cm-content').click()
        page.keyboard.press("Control+End")
        page.keyboard.type("# typed\n")
        assert _dirty(page, SCRIPT)
        page.evaluate(SILENT_JS, host)
        # connectTo returns before its socket is open: a question asked before then never
        # reaches the silent page (seen once in CI under load).
        page.wait_for_function(
            "() => window.grintaSilent.connection.connectionStatus === 'connected'",
            timeout=30_000,
        )
        ask = (
            "print(json.dumps(await asyncio.to_thread(docs.unsaved, ['util.py', 'target.ipynb'])))"
        )
        assert json.loads(_execute(page, ask, host)) == ["util.py"]
        assert page.evaluate("() => window.grintaSilent.closed") >= 1, "the silent page was asked"
    finally:
        page.evaluate("() => window.grintaSilent && window.grintaSilent.connection.dispose()")
        _close(page)
