"""The documents open in JupyterLab or Notebook 7, asked over a comm: the runtime's ``OpenDocuments``.

The labextension (labextension/src/documents.ts) registers the comm target
``grinta.documents`` on the kernel of every notebook it shows. For each
question the kernel opens a fresh comm on that target (so a page loaded after
the session started is asked too), and every front end connected to this
kernel answers with the documents it has open::

    kernel → front ends   comm_open {"request": "documents"}
    front end → kernel    comm_msg  {"app": ID, "root": SERVER_ROOT, "host": PATH,
                                     "documents": [{"path": PATH, "dirty": BOOL}, ...]}
    kernel → front ends   comm_msg  {"request": "reload", "paths": [PATH, ...]}   (after a write)
    kernel → front ends   comm_close

Front-end paths are relative to the Jupyter server's root. The kernel resolves
them against ``root`` (the page config's ``serverRoot``, ``~`` expanded), or,
where the page does not carry it (Notebook 7), against the notebook that
hosts this kernel: ``$JPY_SESSION_NAME`` (its absolute path, set by
jupyter_server) less ``host`` (the same notebook as the front end names it).
Files are compared by their real paths, so links and ``~`` do not matter.

Bounds: a question waits for the front ends that answered the previous one
(at least one) for at most ``timeout`` seconds; once a question got no answer
at all (no front end, or one without the extension: JupyterLab closes a comm
whose target it does not know at once), the next waits only ``probe`` seconds
until a front end answers again. No answer means nothing is open. The comm
stays open ``linger`` seconds after a question to count late answers (another
browser window), so the next question waits for them too.

Threads: the runtime asks from a worker thread (the session commits in
``asyncio.to_thread``) while the kernel's event loop runs; the comm is opened
and written on that loop (``call_soon_threadsafe``) and the answers, which the
kernel dispatches on the loop, wake the waiting thread. Asked on the loop's
own thread, where no answer could arrive while it waits, it answers "nothing
open" at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

TARGET = "grinta.documents"
MAX_DOCUMENTS = 10_000  # per answer: more is not a front end of ours


class Comm(Protocol):
    """What is used of a comm (ipykernel's, or a test's)."""

    def on_msg(self, callback: Callable[[dict[str, Any]], None]) -> None: ...
    def on_close(self, callback: Callable[[dict[str, Any]], None]) -> None: ...
    def send(self, data: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class HostCell:
    """Where the code asking runs: the notebook hosting this kernel and the cell executing.

    ``notebook`` is the absolute path jupyter_server gave the kernel when it
    started it ($JPY_SESSION_NAME; it does not follow a later rename), None
    for a kernel started otherwise. ``cell_id`` is the nbformat id of the cell
    whose execution is running (JupyterLab and Notebook 7 send it as
    ``cellId`` in the execute request's metadata), None elsewhere.
    """

    notebook: Path | None
    cell_id: str | None


def host_cell() -> HostCell:
    """The notebook and cell running the caller; call it while the cell runs (``%grinta``).

    The cell comes from the kernel's parent header, which ipykernel keeps per
    asyncio context: a task created in the cell still sees that cell.
    """
    name = os.environ.get("JPY_SESSION_NAME")
    notebook = Path(name) if name and os.path.isabs(name) else None
    return HostCell(notebook, _running_cell_id())


def _running_cell_id() -> str | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    try:
        parent = kernel.get_parent()
    except Exception:  # no request handled yet
        return None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


def kernel_documents(root: str | os.PathLike[str]) -> KernelDocuments | None:
    """The open documents of this kernel's front ends, for a workspace at ``root``.

    Call it on the kernel's thread (in a cell): it keeps the running event loop.
    None outside an ipykernel kernel or without a running loop.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return None
    if not Kernel.initialized():
        return None
    return KernelDocuments(root, loop, open_comm=_open_kernel_comm)


def _open_kernel_comm(data: dict[str, Any]) -> Comm:
    import comm

    opened: Comm = comm.create_comm(target_name=TARGET, data=data)
    return opened


@dataclass(frozen=True)
class Answer:
    """One front end's open documents, resolved to real paths on this machine."""

    app: str
    documents: dict[Path, tuple[str, bool]]  # real path -> (the front end's path, dirty)


def read_answer(data: Mapping[str, Any], session_name: str | None) -> Answer | None:
    """A front end's answer as the kernel understands it; None when it cannot be placed.

    ``session_name`` is $JPY_SESSION_NAME, used when the answer has no ``root``.
    """
    app = data.get("app")
    docs = data.get("documents")
    if not isinstance(app, str) or not isinstance(docs, list):
        return None
    base = _server_root(data.get("root"), data.get("host"), session_name)
    if base is None:
        return None
    documents: dict[Path, tuple[str, bool]] = {}
    for doc in docs[:MAX_DOCUMENTS]:
        if not isinstance(doc, dict):
            continue
        path, dirty = doc.get("path"), doc.get("dirty")
        if not isinstance(path, str) or not path or os.path.isabs(path) or "\0" in path:
            continue
        real = _real(base / path)
        _, was_dirty = documents.get(real, (path, False))
        documents[real] = (path, bool(dirty) or was_dirty)
    return Answer(app, documents)


def _server_root(root: Any, host: Any, session_name: str | None) -> Path | None:
    if isinstance(root, str) and root:
        expanded = os.path.expanduser(root)
        return Path(expanded) if os.path.isabs(expanded) else None
    if not (isinstance(host, str) and host and session_name and os.path.isabs(session_name)):
        return None
    parts = Path(host).parts
    session = Path(session_name)
    if len(session.parts) <= len(parts) or session.parts[-len(parts) :] != parts:
        return None  # the notebook was renamed since its kernel started
    return Path(*session.parts[: -len(parts)])


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@dataclass
class _Exchange:
    """One question: the comm opened for it and the answers that arrive on the loop."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False  # a front end closed the comm (it has no such target)
    comm: Comm | None = None
    ready: threading.Condition = field(default_factory=threading.Condition)

    def receive(self, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data")
        if isinstance(data, dict):
            with self.ready:
                self.answers.append(data)
                self.ready.notify_all()

    def close_received(self, _msg: dict[str, Any]) -> None:
        with self.ready:
            self.closed = True
            self.ready.notify_all()

    def wait(self, count: int, timeout: float) -> list[dict[str, Any]]:
        with self.ready:
            self.ready.wait_for(lambda: len(self.answers) >= count or self.closed, timeout)
            return list(self.answers)


class KernelDocuments:
    """``OpenDocuments`` for a workspace, answered by the front ends of this kernel."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        loop: asyncio.AbstractEventLoop,
        *,
        open_comm: Callable[[dict[str, Any]], Comm],
        timeout: float = 2.0,
        probe: float = 0.3,
        linger: float = 1.0,
    ):
        self.root = _real(Path(root))
        self._loop = loop
        self._loop_thread: int | None = None
        self._open_comm = open_comm
        self.timeout = timeout
        self.probe = probe
        self.linger = linger
        self._expected = 1  # front ends that answered the last question
        self._heard = True  # until a question goes unanswered, wait the whole timeout
        loop.call_soon_threadsafe(self._note_loop_thread)

    def unsaved(self, paths: Sequence[str]) -> list[str]:
        wanted = {self._real(p): p for p in paths}
        exchange = self._ask()
        if exchange is None:
            return []
        answers = self._collect(exchange)
        self._finish(exchange, None)
        dirty = {real for a in answers for real, (_, d) in a.documents.items() if d}
        return [path for real, path in wanted.items() if real in dirty]

    def changed(self, paths: Sequence[str]) -> None:
        wanted = {self._real(p) for p in paths}
        exchange = self._ask()
        if exchange is None:
            return
        answers = self._collect(exchange)
        reload = sorted(
            {front for a in answers for real, (front, _) in a.documents.items() if real in wanted}
        )
        self._finish(exchange, {"request": "reload", "paths": reload} if reload else None)

    # -- the exchange ---------------------------------------------------------------------

    def _real(self, path: str) -> Path:
        return _real(self.root / path)

    def _note_loop_thread(self) -> None:
        self._loop_thread = threading.get_ident()

    def _ask(self) -> _Exchange | None:
        if self._loop.is_closed() or threading.get_ident() == self._loop_thread:
            return None
        exchange = _Exchange()

        def open_on_loop() -> None:
            try:
                opened = self._open_comm({"request": "documents"})
                opened.on_msg(exchange.receive)
                opened.on_close(exchange.close_received)
            except Exception:  # no kernel to talk through: nothing is open
                exchange.close_received({})
                return
            exchange.comm = opened

        try:
            self._loop.call_soon_threadsafe(open_on_loop)
        except RuntimeError:  # the loop closed meanwhile
            return None
        return exchange

    def _collect(self, exchange: _Exchange) -> list[Answer]:
        raw = exchange.wait(self._expected, self.timeout if self._heard else self.probe)
        self._heard = bool(raw)
        session_name = os.environ.get("JPY_SESSION_NAME")
        answers = [a for a in (read_answer(d, session_name) for d in raw) if a is not None]
        if answers:
            self._expected = len({a.app for a in answers})
        return answers

    def _finish(self, exchange: _Exchange, message: dict[str, Any] | None) -> None:
        """Send ``message`` (if any) on the loop, then close the comm after ``linger``."""

        def on_loop() -> None:
            comm = exchange.comm
            if comm is None:
                return
            if message is not None:
                with contextlib.suppress(Exception):  # the front end is gone: nothing to reload
                    comm.send(message)
            self._loop.call_later(self.linger, close, comm)

        def close(comm: Comm) -> None:
            apps = {d.get("app") for d in exchange.answers if isinstance(d.get("app"), str)}
            if apps:  # late answers count: another window waits to be asked next time
                self._expected = len(apps)
            with contextlib.suppress(Exception):  # already closed by the front end
                comm.close()

        with contextlib.suppress(RuntimeError):  # the loop closed: the comm went with it
            self._loop.call_soon_threadsafe(on_loop)
