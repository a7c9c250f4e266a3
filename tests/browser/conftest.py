"""A real JupyterLab in a real (headless) Chromium, for tests of what users see.

Fixtures:

- ``lab_server`` (package): a ``jupyter lab`` on 127.0.0.1 with its config,
  runtime, settings, workspaces and IPython folders in a temp dir, so the
  developer's own setup never leaks in. ``LabServer.url``, ``.token``,
  ``.root`` (the folder it serves: write notebooks there).
- ``notebook7_server`` (package): the same for ``jupyter notebook`` (Notebook 7).
- ``rtc_lab_server`` (package): a lab with real-time collaboration
  (jupyter-collaboration) on; the other two keep it off where it is installed.
- ``page``: a Playwright page logged in to that lab, with the app started.
  Uncaught page errors fail the test. ``rtc_page``: the same for ``rtc_lab_server``.
- ``notebook7_page``: a Playwright page for ``notebook7_server``, blank: open
  a notebook with ``open_notebook7(page, server, path)``. Uncaught page errors
  fail the test, except one known Notebook 7 start-up race (see below).

Helpers: ``open_notebook(page, path)``, ``wait_for_idle(page)``,
``wait_for_kernel(page)``, ``screenshot(page, name)``,
``run_command(page, command, args)``, ``set_theme(page, name)``,
``wait_for_app(page)``. Those that take only a page work in Notebook 7 too
(both expose ``window.jupyterapp`` with the same commands and shell API), except
``open_notebook`` and ``wait_for_app``.

Chromium comes from Debian (``apt-get install -y chromium``, see
``.ci/browser-setup``); nothing is downloaded at run time. Without Chromium or
the ``playwright`` package the suite skips with the reason, unless
``GRINTA_REQUIRE_BROWSER=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 900}
LAB_START_TIMEOUT_S = 60.0

# Settings for the test lab: no news pop-up and no update check (both would
# reach for the network); every notebook cell kept in the DOM so locators and
# screenshots do not depend on what is scrolled into view.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def chromium_path() -> str | None:
    """The Chromium binary to drive: $GRINTA_CHROMIUM, else the one on PATH."""
    return os.environ.get("GRINTA_CHROMIUM") or shutil.which("chromium")


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not chromium_path():
        return "Chromium is not installed (apt-get install -y chromium, or .ci/browser-setup)"
    return None


def _require_browser() -> None:
    reason = _missing()
    if reason is None:
        return
    if os.environ.get("GRINTA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required but {reason}")
    pytest.skip(reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: runs JupyterLab in a real Chromium")


@dataclass(frozen=True)
class LabServer:
    """A running Jupyter server (JupyterLab or Notebook 7) and where it serves from."""

    url: str
    token: str
    root: Path
    log: Path
    home: str = "/lab"  # the app's main page, which carries its page config

    def api(self, path: str) -> Any:
        """GET a server API path (``/api/status``...) and decode its JSON."""
        req = urllib.request.Request(
            self.url + path, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def page_config(self) -> Any:
        """The page config the app embeds in its main page (its extensions, settings...)."""
        req = urllib.request.Request(
            self.url + self.home, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            page = resp.read().decode()
        start = page.index(">", page.index('id="jupyter-config-data"')) + 1
        return json.loads(page[start : page.index("</script>", start)])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _without_rtc() -> list[str]:
    """Options that keep real-time collaboration off where jupyter-collaboration is installed.

    Its server extension stays loaded, but the page config's ``disableRTC``
    makes the front end open documents from disk as it does without it; only
    ``rtc_lab_server`` turns it on.
    """
    try:
        import jupyter_server_ydoc  # noqa: F401
    except ImportError:
        return []
    return ["--YDocExtension.disable_rtc=True"]


@pytest.fixture(scope="package")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    # `expose_app_in_browser` gives tests `window.jupyterapp` to run JupyterLab commands.
    options = ["--LabApp.expose_app_in_browser=True", *_without_rtc()]
    with _serve(tmp_path_factory.mktemp("lab"), "jupyterlab", options, home="/lab") as server:
        yield server


@pytest.fixture(scope="package")
def notebook7_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """``jupyter notebook`` (Notebook 7) set up like ``lab_server``; it serves /tree, /notebooks/..."""
    options = ["--JupyterNotebookApp.expose_app_in_browser=True", *_without_rtc()]
    with _serve(tmp_path_factory.mktemp("notebook7"), "notebook", options, home="/tree") as server:
        yield server


@pytest.fixture(scope="package")
def rtc_lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """``lab_server`` with real-time collaboration (jupyter-collaboration) on; skips without it."""
    pytest.importorskip("jupyter_server_ydoc", reason="jupyter-collaboration is not installed")
    options = ["--LabApp.expose_app_in_browser=True"]
    with _serve(tmp_path_factory.mktemp("rtc-lab"), "jupyterlab", options, home="/lab") as server:
        yield server


@contextmanager
def _serve(
    base: Path,
    module: str,
    options: list[str],
    *,
    home: str,
    env: dict[str, str] | None = None,
    stop_wait: float = 10,
) -> Iterator[LabServer]:
    """Run ``python -m MODULE OPTIONS...`` on 127.0.0.1 with its Jupyter folders under ``base``.

    ``env``: variables for the server on top of the test's own, whose GRINTA_* settings are
    dropped (a kernel started by the server runs grinta's demo model unless ``env`` says)."""
    _require_browser()
    root = base / "root"
    root.mkdir()
    dirs = {
        "JUPYTER_CONFIG_DIR": base / "config",
        "JUPYTER_RUNTIME_DIR": base / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": base / "settings",
        "JUPYTERLAB_WORKSPACES_DIR": base / "workspaces",
        "IPYTHONDIR": base / "ipython",
    }
    for path in dirs.values():
        path.mkdir()
    for plugin, values in LAB_SETTINGS.items():
        target = dirs["JUPYTERLAB_SETTINGS_DIR"] / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    # Kernels started by the server run grinta's demo model on a copy in its root.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GRINTA_")}
    server_env = {
        **inherited,
        **{k: str(v) for k, v in dirs.items()},
        # Jupyter AI's MCP server (FastMCP, installed for its browser test) would check for
        # its own updates over the network at start.
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
        **(env or {}),
    }

    port = _free_port()
    token = secrets.token_hex(16)
    log = base / "server.log"
    cmd = [
        sys.executable,
        "-m",
        module,
        "--no-browser",
        "--allow-root",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root}",
        # Jupyter AI (installed for its browser test) starts an MCP server in every Lab, on
        # port 3001 unless told: two Labs at once would fight over it.
        f"--MCPExtensionApp.mcp_port={_free_port()}",
        *options,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=server_env, stdout=out, stderr=subprocess.STDOUT)
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log, home)
    try:
        _wait_for_status(server, proc)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=stop_wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_status(server: LabServer, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + LAB_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the Jupyter server exited ({proc.returncode}):\n{_tail(server.log)}"
            )
        try:
            server.api("/api/status")
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the Jupyter server did not answer /api/status:\n{_tail(server.log)}")


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# Package scope, not session: Playwright's sync API keeps an asyncio loop
# running in this thread while it is open, which would break every later test
# that calls asyncio.run().
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@contextmanager
def lab_page(
    browser: Any, server: LabServer, tolerated: Callable[[Any], bool] | None = None
) -> Iterator[Any]:
    """A page showing JupyterLab on ``server``, in a workspace of its own (so the documents
    an earlier test left open are not restored)."""
    with _new_page(browser, tolerated) as page:
        # JupyterLab's file browser, restoring its folder in a new workspace on a loaded
        # machine, may fail on an empty path and put "Directory not found" over the page
        # (CI at c4007c8: it took a test's Approve click). Not grinta's: its extension opens
        # no folder. Dismissed whenever it shows, and the test goes on.
        page.add_locator_handler(
            page.get_by_role("dialog", name=re.compile(r"^Directory not found")),
            lambda dialog: dialog.get_by_role("button").last.click(),
        )
        workspace = f"test-{secrets.token_hex(4)}"
        page.goto(f"{server.url}/lab/workspaces/{workspace}?token={server.token}")
        wait_for_app(page)
        yield page


@pytest.fixture
def page(browser: Any, lab_server: LabServer) -> Iterator[Any]:
    with lab_page(browser, lab_server) as page:
        yield page


@pytest.fixture
def rtc_page(browser: Any, rtc_lab_server: LabServer) -> Iterator[Any]:
    """``page`` for ``rtc_lab_server``."""
    with lab_page(browser, rtc_lab_server) as page:
        yield page


@pytest.fixture
def notebook7_page(browser: Any, notebook7_server: LabServer) -> Iterator[Any]:
    with _new_page(browser, tolerated=_notebook7_startup_race) as page:
        yield page


def _notebook7_startup_race(error: Any) -> bool:
    """Notebook 7.6's own start-up race, not ours: jupyter/notebook#7862 (open).

    Its bundled shortcuts plugin reads its settings' schema when another
    plugin's settings change, which may happen before its own have loaded. It
    happens with every federated extension disabled, and changes nothing we test.
    """
    return "reading 'schema')" in error.message and "/static/notebook/notebook_core." in (
        error.stack or ""
    )


def _subshell_cancelled(error: Any) -> bool:
    """JupyterLab 4.6's own, with ipykernel 7: it asks the kernel for a subshell for a comm
    target (``requestCreateSubshell`` in its comm handling), and when the kernel connection
    is disposed before the reply (the test's page closing) the pending request's future is
    cancelled and its rejection left unhandled. Not our code (the labextension asks for no
    subshell); seen once in CI, at a page's teardown, the test's assertions held."""
    message = str(getattr(error, "message", error)).removeprefix("Error: ")  # both forms seen
    return message == "Canceled future for create_subshell_request message before replies were done"


@contextmanager
def _new_page(browser: Any, tolerated: Callable[[Any], bool] | None = None) -> Iterator[Any]:
    """A page in a fresh browser context; uncaught errors in it fail the test (but
    JupyterLab's own ``_subshell_cancelled``)."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []

    def on_error(error: Any) -> None:
        if _subshell_cancelled(error):
            return
        if tolerated is None or not tolerated(error):
            errors.append(str(error))

    page.on("pageerror", on_error)
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def wait_for_app(page: Any) -> None:
    """Wait until JupyterLab has started and restored its layout (after a load or reload)."""
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=30_000)
    page.evaluate("() => window.jupyterapp.restored")
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=30_000)


def run_command(page: Any, command: str, args: dict[str, Any] | None = None) -> None:
    """Run a JupyterLab command (``apputils:change-theme``...) and wait for it to finish."""
    page.evaluate(
        "async ([id, args]) => { await window.jupyterapp.commands.execute(id, args); }",
        [command, args or {}],
    )


def open_notebook(page: Any, path: str, *, kernel: bool = True) -> Any:
    """Open ``path`` (relative to the lab root); return the notebook panel's locator.

    With ``kernel=False`` a "Select Kernel" dialog (JupyterLab shows one for a
    notebook whose kernel is not installed) is answered with "No Kernel".
    """
    page.evaluate(
        """async path => {
          const app = window.jupyterapp;
          const widget = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
          widget.node.dataset.grintaPath = path;
          await widget.context.ready;
          await widget.revealed;
        }""",
        path,
    )
    if not kernel:
        _answer_kernel_dialog(page)
    panel = page.locator(f'.jp-NotebookPanel[data-grinta-path="{path}"]')
    panel.wait_for(state="visible", timeout=30_000)
    return panel


def _answer_kernel_dialog(page: Any, timeout_s: float = 5.0) -> None:
    button = page.locator(".jp-Dialog").get_by_role("button", name="No Kernel")
    try:
        button.wait_for(state="visible", timeout=timeout_s * 1000)
    except Exception:  # noqa: BLE001  (no dialog: nothing to answer)
        return
    button.click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def open_notebook7(page: Any, server: LabServer, path: str) -> Any:
    """Load Notebook 7's page for ``path`` (relative to the server root); return its panel.

    Returns once the app has started and the notebook's kernel is idle.
    """
    page.goto(f"{server.url}/notebooks/{path}?token={server.token}")
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=30_000)
    page.evaluate("() => window.jupyterapp.restored")
    panel = page.locator(".jp-NotebookPanel")
    panel.wait_for(state="visible", timeout=30_000)
    wait_for_kernel(page)
    return panel


def set_theme(page: Any, theme: str) -> None:
    """Switch JupyterLab's theme ("JupyterLab Light", "JupyterLab Dark") and wait for it.

    The choice is saved in the lab's settings and so outlives the page:
    switch back when the test is done.
    """
    run_command(page, "apputils:change-theme", {"theme": theme})
    page.wait_for_selector(f'body[data-jp-theme-name="{theme}"]', state="attached")
    page.wait_for_selector("#jupyterlab-splash", state="detached")


def wait_for_idle(page: Any, timeout_s: float = 60.0) -> None:
    """Wait until the current notebook's kernel is idle, or it has none."""
    page.wait_for_function(
        """() => {
          const widget = window.jupyterapp.shell.currentWidget;
          const ctx = widget && widget.sessionContext;
          if (!ctx) return true;
          if (ctx.hasNoKernel) return true;
          return ctx.kernelDisplayStatus === 'idle';
        }""",
        timeout=timeout_s * 1000,
    )


def wait_for_kernel(page: Any, timeout_s: float = 60.0) -> None:
    """Wait until the current notebook has a kernel and it is idle."""
    page.wait_for_function(
        """() => {
          const ctx = window.jupyterapp.shell.currentWidget.sessionContext;
          return !!(ctx.session && ctx.session.kernel) && ctx.kernelDisplayStatus === 'idle';
        }""",
        timeout=timeout_s * 1000,
    )


def screenshot(page: Any, name: str, target: Any = None) -> Path:
    """Save a PNG of the page, or of the ``target`` locator, to artifacts/screenshots/.

    A target taller than the window is shot with the window stretched to fit,
    since JupyterLab scrolls inside its own panels and would cut it off.
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if target is None:
        page.screenshot(path=str(path))
        return path
    box = target.bounding_box()
    tall = box is not None and box["height"] + 200 > VIEWPORT["height"]
    if tall:
        page.set_viewport_size({"width": VIEWPORT["width"], "height": int(box["height"]) + 200})
    try:
        target.screenshot(path=str(path))
    finally:
        if tall:
            page.set_viewport_size(VIEWPORT)
    return path
