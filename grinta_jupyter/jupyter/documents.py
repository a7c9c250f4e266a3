"""The documents open in JupyterLab or Notebook 7, asked over comms: the runtime's ``OpenDocuments``.

The labextension (labextension/src/documents.ts) registers the comm targets
``grinta.documents`` and ``grinta.documents.watch`` on the kernel of every
notebook it shows, and the kernel registers ``grinta.documents.answer``. Two
ways bring a page's documents:

- Questions. For each question the kernel opens a fresh comm on
  ``grinta.documents`` (so a page loaded after the session started is asked
  too), and every page connected to this kernel answers by opening a comm of
  its own on ``grinta.documents.answer``, naming the question.
- Pushes. A page that knows this kernel listens pushes its documents on a
  comm of its own, at once and again whenever what it would answer changes (a
  document opened, closed, renamed, made dirty or saved). It knows once the
  kernel asked it anything: a question, or the watch the kernel opens when it
  starts listening (a ``KernelDocuments`` made); a page that connects later
  learns it from ``comm_info``, which lists a comm on
  ``grinta.documents.answer`` (``BEACON``, never opened to a front end) while
  the kernel listens::

    kernel → pages   comm_open grinta.documents         {"request": "documents", "question": ID}
    kernel → pages   comm_open grinta.documents.watch   {"request": "watch"}
    page → kernel    comm_open grinta.documents.answer  {"question": ID, "app": APP,
                         "root": SERVER_ROOT, "host": PATH,
                         "documents": [{"path": PATH, "dirty": BOOL}, ...]}
                     or, a push:                        {"push": true, "app": APP, "root": ...,
                                                         "host": ..., "documents": [...]}
    kernel → page    comm_msg on the page's comm        {"request": "reload", "paths": [PATH, ...]}
                                                        (after a write: that page's documents)
    kernel → both    comm_close (a push's comm: when the page pushes again, or is forgotten)

Each page answers and pushes on its own comms, so no page can silence
another: a page without the extension closes the question's comm (JupyterLab
closes a comm whose target it does not know), which ipykernel would otherwise
take as the end of every answer on it.

Why pushes: a question is opened, and its answers taken, on the kernel's event
loop, and a page's comm_open is handled there too. While a cell holds that loop
(``%grinta approve`` in ``--manual`` mode commits on a background loop while its
cell waits; any cell that runs long while a session commits), no question can
be asked. Shell messages are handled in order, so what a page pushed before the
busy cell was sent is known when the cell starts; pushes sent during it count
only after it.

Front-end paths are relative to the Jupyter server's root. The kernel resolves
them against ``root`` (the page config's ``serverRoot``, ``~`` expanded), or,
where the page does not carry it (Notebook 7), against the notebook that
hosts this kernel: ``$JPY_SESSION_NAME`` (its absolute path, set by
jupyter_server) less ``host`` (the same notebook as the front end names it).
Files are compared by their real paths, so links and ``~`` do not matter. An
answer or push that cannot be placed (no app, no list of documents, no usable
root) does not count; a path that cannot be resolved (a NUL byte, a lone
surrogate, longer than ``MAX_PATH``) is skipped, its answer kept.

Bounds: a question waits until as many pages answered as answered the
previous one (at least one; pages told apart by ``app``), for at most
``timeout`` seconds; once a question got no answer in time (no page, or none
with the extension), the next waits only ``probe`` seconds, until a page
answers again, even late. No answer means nothing is open. The question stays
open ``linger`` seconds after it is decided to count late answers (another
browser window, a busy tab), so the next question waits for them too. A
question takes at most ``MAX_ANSWERS`` answers and resolves at most
``MAX_DOCUMENTS`` paths in all; deciding what is unsaved resolves only the
documents said to be dirty. The kernel keeps the last push of at most
``MAX_ANSWERS`` pages (a page new beyond them is refused), each at most
``MAX_DOCUMENTS`` entries, resolved under the same budget as answers.

When the loop is busy: a cell that holds the loop while the session commits
says so (``loop_held``: ``--manual`` steps and decisions), and the answer
comes from the pages' last pushes at once; any other busy cell is found out by
waiting: the asker waits at most ``busy`` seconds (the question's ``timeout``)
for the loop to open the question. (A guess by time alone, a quarter of a
second, took a loaded machine's slow loop for a busy one.) Either way the
answer comes from the pages' last pushes (a page that never pushed: nothing
open, as with no answer); the question is then asked when the loop is free again, and once
it is decided (``timeout`` plus ``linger`` later) the pages that did not answer
it, and did not push since it was asked, are forgotten, so a closed tab's last
push does not refuse writes forever (every question decided forgets them so).
With the loop free, the answers decide, as before: the pushes do not count. A
write made meanwhile is told to the pages that pushed it open (the reload on
the comm of their last push) when the loop is free again: the page reloads
what is still without unsaved changes then.

Threads: the runtime asks from a worker thread (the session commits in
``asyncio.to_thread``) while the kernel's event loop runs; comms are opened,
written and answered on that loop (``call_soon_threadsafe``), which only
checks an answer's or a push's shape there; paths are resolved in the asking
thread. Asked on the loop's own thread, where no answer could arrive while it
waits, it answers at once from the last pushes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeGuard

TARGET = "grinta.documents"
ANSWER_TARGET = "grinta.documents.answer"
WATCH_TARGET = "grinta.documents.watch"
MAX_DOCUMENTS = 10_000  # paths resolved per question, and entries read per answer
MAX_ANSWERS = 16  # answers taken per question: more pages than that is not a person's desk
MAX_PATH = 4096  # characters in a root or a path; longer is not a file of ours
MAX_NAME = 256  # characters in an app or question id
# A comm the kernel keeps on ANSWER_TARGET while it listens, never opened to a front end: a
# page that connects asks comm_info whether one is there before it pushes anything.
BEACON = "grinta-documents-listening"


_held_lock = threading.Lock()
_held = 0  # cells holding the kernel's loop while a session commits (``loop_held``)


@contextlib.contextmanager
def loop_held() -> Iterator[None]:
    """Say that the caller holds the kernel's loop until the block ends (a ``--manual`` step
    waits for the session there): no question can be asked meanwhile, so a commit decides
    from the pages' last pushes at once instead of waiting ``busy`` seconds to find out."""
    global _held
    with _held_lock:
        _held += 1
    try:
        yield
    finally:
        with _held_lock:
            _held -= 1


def _loop_is_held() -> bool:
    with _held_lock:
        return _held > 0


class Comm(Protocol):
    """What is used of a comm (ipykernel's, or a test's)."""

    def send(self, data: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


# Called with a page's comm and its comm_open message, on the kernel's loop.
AnswerReceiver = Callable[[Comm, dict[str, Any]], None]


@dataclass(frozen=True)
class HostCell:
    """Where the code asking runs: the notebook hosting this kernel and the cell executing.

    ``notebook`` is the absolute path jupyter_server gave the kernel when it
    started it ($JPY_SESSION_NAME; it does not follow a later rename), None
    for a kernel started otherwise. ``cell_id`` is the nbformat id of the cell
    whose execution is running (JupyterLab and Notebook 7 send it as
    ``cellId`` in the execute request's metadata), None elsewhere. ``code`` is
    the source that cell is executing: a notebook saved before nbformat 4.5 has
    no cell ids on disk (the front end makes some up in memory), so the cell is
    known there by its source only.
    """

    notebook: Path | None
    cell_id: str | None
    code: str | None = None


def host_cell() -> HostCell:
    """The notebook and cell running the caller; call it while the cell runs (``%grinta``).

    The cell comes from the kernel's parent header, which ipykernel keeps per
    asyncio context: a task created in the cell still sees that cell.
    """
    name = os.environ.get("JPY_SESSION_NAME")
    notebook = Path(name) if name and os.path.isabs(name) else None
    parent = _running_request()
    metadata = parent.get("metadata")
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    content = parent.get("content")
    code = content.get("code") if isinstance(content, dict) else None
    return HostCell(
        notebook,
        cell_id if isinstance(cell_id, str) and cell_id else None,
        code if isinstance(code, str) else None,
    )


def _running_request() -> dict[str, Any]:
    """The kernel's parent header: the execute request being handled ({} outside one)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return {}
    try:
        parent = kernel.get_parent()
    except Exception:  # no request handled yet
        return {}
    return parent if isinstance(parent, dict) else {}


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
    return KernelDocuments(root, loop, open_comm=_open_kernel_comm, listen=_listen_on_kernel)


def _open_kernel_comm(data: dict[str, Any]) -> Comm:
    import comm

    target = WATCH_TARGET if data.get("request") == "watch" else TARGET
    opened: Comm = comm.create_comm(target_name=target, data=data)
    return opened


def _listen_on_kernel(receive: AnswerReceiver) -> None:
    import comm

    manager = comm.get_comm_manager()
    if manager.targets.get(ANSWER_TARGET) != receive:
        manager.register_target(ANSWER_TARGET, receive)
    if BEACON not in manager.comms:  # a front end may have closed it: it is told again
        beacon = comm.create_comm(target_name=ANSWER_TARGET, comm_id=BEACON, primary=False)
        manager.register_comm(beacon)


@dataclass(frozen=True)
class Answer:
    """One front end's open documents, resolved to real paths on this machine."""

    app: str
    documents: dict[Path, tuple[str, bool]]  # real path -> (the front end's path, dirty)


@dataclass(frozen=True)
class _Placed:
    """An answer the kernel can place: its page, where its paths start, its entries unread."""

    app: str
    base: Path
    entries: list[Any]
    comm: Comm | None = None  # the page's own comm, for the reload


def read_answer(data: Mapping[str, Any], session_name: str | None) -> Answer | None:
    """A front end's answer as the kernel understands it; None when it cannot be placed.

    ``session_name`` is $JPY_SESSION_NAME, used when the answer has no ``root``.
    Entries that cannot be resolved are skipped.
    """
    placed = _place(data, session_name)
    if placed is None:
        return None
    documents, _ = _resolve(placed, MAX_DOCUMENTS, dirty_only=False)
    return Answer(placed.app, documents)


def _place(data: Mapping[str, Any], session_name: str | None) -> _Placed | None:
    """Cheap enough for the kernel's loop: no file system access."""
    app = data.get("app")
    docs = data.get("documents")
    if not (isinstance(app, str) and 0 < len(app) <= MAX_NAME) or not isinstance(docs, list):
        return None
    base = _server_root(data.get("root"), data.get("host"), session_name)
    return None if base is None else _Placed(app, base, docs[:MAX_DOCUMENTS])


def _resolve(
    placed: _Placed, budget: int, *, dirty_only: bool
) -> tuple[dict[Path, tuple[str, bool]], int]:
    """The documents of an answer by real path, resolving at most ``budget`` paths; and how many."""
    documents: dict[Path, tuple[str, bool]] = {}
    used = 0
    for doc in placed.entries[:MAX_DOCUMENTS]:
        if used >= budget:
            break
        if not isinstance(doc, dict):
            continue
        path, dirty = doc.get("path"), bool(doc.get("dirty"))
        if dirty_only and not dirty:
            continue
        if not _usable(path) or os.path.isabs(path):
            continue
        used += 1
        try:
            real = _real(placed.base / path)
        except (ValueError, OSError):  # what _usable could not foresee: skip it, keep the rest
            continue
        _, was_dirty = documents.get(real, (path, False))
        documents[real] = (path, dirty or was_dirty)
    return documents, used


def _usable(text: object) -> TypeGuard[str]:
    """A string the file system can take: no NUL, not too long, encodable (no lone surrogate)."""
    if not isinstance(text, str) or not 0 < len(text) <= MAX_PATH or "\0" in text:
        return False
    try:
        os.fsencode(text)
    except UnicodeError:
        return False
    return True


def _server_root(root: Any, host: Any, session_name: str | None) -> Path | None:
    if isinstance(root, str) and root:
        if not _usable(root):
            return None
        expanded = os.path.expanduser(root)
        return Path(expanded) if os.path.isabs(expanded) else None
    if not (_usable(host) and session_name and os.path.isabs(session_name)):
        return None
    parts = Path(host).parts
    session = Path(session_name)
    if len(session.parts) <= len(parts) or session.parts[-len(parts) :] != parts:
        return None  # the notebook was renamed since its kernel started
    return Path(*session.parts[: -len(parts)])


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _close(comm: Comm) -> None:
    with contextlib.suppress(Exception):  # already closed by the front end, or the kernel is gone
        comm.close()


@dataclass
class _Exchange:
    """One question: its comm, and the answers the pages' own comms bring (taken on the loop)."""

    question: str = field(default_factory=lambda: uuid.uuid4().hex)
    answers: list[_Placed] = field(default_factory=list)
    unasked: bool = False  # the question could not be asked: no answer will come
    opened: bool = False  # the loop came to open it
    late: bool = False  # the asker stopped waiting for the loop: it decided from the pushes
    pushes: int = 0  # pushes kept when it was opened: a page that pushed since is there
    comm: Comm | None = None
    ready: threading.Condition = field(default_factory=threading.Condition)

    def take(self, answer: _Placed) -> bool:
        """Count ``answer``; False when the question has all the answers it takes."""
        with self.ready:
            if len(self.answers) >= MAX_ANSWERS:
                return False
            self.answers.append(answer)
            self.ready.notify_all()
            return True

    def give_up(self) -> None:
        with self.ready:
            self.unasked = True
            self.ready.notify_all()

    def open(self) -> bool:
        """On the loop, as it opens the question: whether the asker still waits for it."""
        with self.ready:
            self.opened = True
            self.ready.notify_all()
            return not self.late

    def wait_opened(self, timeout: float) -> bool:
        """Whether the loop opened the question within ``timeout`` seconds; if not, the asker
        stops waiting for it (``late``), and it is asked only to learn which pages are there."""
        with self.ready:
            if not self.ready.wait_for(lambda: self.opened, timeout):
                self.late = True
            return self.opened

    def wait(self, pages: int, timeout: float) -> list[_Placed]:
        """The answers once ``pages`` distinct pages answered, or after ``timeout`` seconds."""

        def enough() -> bool:
            if self.unasked or len(self.answers) >= MAX_ANSWERS:
                return True
            return len({a.app for a in self.answers}) >= pages

        with self.ready:
            self.ready.wait_for(enough, timeout)
            return list(self.answers)

    def taken(self) -> list[_Placed]:
        with self.ready:
            return list(self.answers)


class _Pushed:
    """The last push of each page, by app: taken on the loop, read in the asking thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pages: dict[str, _Placed] = {}
        self.when: dict[str, int] = {}  # app -> the number of the push kept
        self.count = 0  # pushes kept so far

    def take(self, push: _Placed) -> bool:
        """Keep ``push`` as its page's documents (closing the comm of the page's previous one);
        False when as many other pages pushed as are kept."""
        with self.lock:
            previous = self.pages.get(push.app)
            if previous is None and len(self.pages) >= MAX_ANSWERS:
                return False
            self.count += 1
            self.pages[push.app] = push
            self.when[push.app] = self.count
        if previous is not None and previous.comm is not None and previous.comm is not push.comm:
            _close(previous.comm)
        return True

    def last(self) -> list[_Placed]:
        with self.lock:
            return list(self.pages.values())

    def comm(self, app: str) -> Comm | None:
        """The comm of ``app``'s last push (the reload goes on it)."""
        with self.lock:
            push = self.pages.get(app)
            return None if push is None else push.comm

    def forget(self, answered: set[str], before: int) -> None:
        """Forget the pages whose last push came before push number ``before`` + 1 and that did
        not answer the question asked then: gone (a page pushing since is there)."""
        with self.lock:
            gone = [app for app in self.pages if app not in answered and self.when[app] <= before]
            pushes = [self.pages.pop(app) for app in gone]
            for app in gone:
                del self.when[app]
        for push in pushes:
            if push.comm is not None:
                _close(push.comm)


class _Questions:
    """The questions open in this kernel, by id, touched only on the kernel's loop; and the
    pages' last pushes."""

    def __init__(self) -> None:
        self.open: dict[str, _Exchange] = {}
        self.pushed = _Pushed()
        # The question asked only to learn which pages are there (``_Exchange.late``): while
        # it is open, another would learn the same (a busy cell's commits ask one each).
        self.probing: str | None = None

    def receive(self, comm: Comm, msg: dict[str, Any]) -> None:
        """A page opened its answer comm (the target callback of ``ANSWER_TARGET``)."""
        content = msg.get("content")
        data = content.get("data") if isinstance(content, dict) else None
        if not isinstance(data, dict):
            _close(comm)
            return
        session_name = os.environ.get("JPY_SESSION_NAME")
        question = data.get("question")
        if question is None and data.get("push") is True:
            placed = _place(data, session_name)
            if placed is None or not self.pushed.take(replace(placed, comm=comm)):
                _close(comm)  # kept open otherwise: the reload of a write goes on it
            return
        exchange = self.open.get(question) if isinstance(question, str) else None
        placed = _place(data, session_name) if exchange else None
        if exchange is None or placed is None or not exchange.take(replace(placed, comm=comm)):
            _close(comm)  # not an answer to anything open: nothing will be sent on it


_QUESTIONS = _Questions()


class KernelDocuments:
    """``OpenDocuments`` for a workspace, answered by the front ends of this kernel."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        loop: asyncio.AbstractEventLoop,
        *,
        open_comm: Callable[[dict[str, Any]], Comm],
        listen: Callable[[AnswerReceiver], None],
        timeout: float = 2.0,
        probe: float = 0.3,
        linger: float = 1.0,
        busy: float = 2.0,
    ):
        self.root = _real(Path(root))
        self._loop = loop
        self._loop_thread: int | None = None
        self._open_comm = open_comm
        self._listen = listen
        self.timeout = timeout
        self.probe = probe
        self.linger = linger
        self.busy = busy
        self._expected = 1  # pages that answered the last question
        self._heard = True  # until a question goes unanswered, wait the whole timeout
        loop.call_soon_threadsafe(self._start_listening)

    def unsaved(self, paths: Sequence[str]) -> list[str]:
        wanted = {self._real(p): p for p in paths}
        answers = self._documents()
        dirty: set[Path] = set()
        budget = MAX_DOCUMENTS
        for answer in answers:
            documents, used = _resolve(answer, budget, dirty_only=True)
            budget -= used
            dirty.update(documents)
        return [path for real, path in wanted.items() if real in dirty]

    def changed(self, paths: Sequence[str]) -> None:
        wanted = {self._real(p) for p in paths}
        exchange = None if self._on_loop() else self._ask()
        if exchange is not None and exchange.wait_opened(self._busy_wait()):
            answers = self._collect(exchange)
        else:  # the loop is busy (or this is it): the pages that pushed are told when it is free
            answers, exchange = _QUESTIONS.pushed.last(), None
        reloads: list[tuple[Comm, list[str]]] = []
        pushed: list[tuple[str, list[str]]] = []
        budget = MAX_DOCUMENTS
        for answer in answers:
            documents, used = _resolve(answer, budget, dirty_only=False)
            budget -= used
            front = sorted({f for real, (f, _) in documents.items() if real in wanted})
            if front and answer.comm is not None:
                reloads.append((answer.comm, front))
                pushed.append((answer.app, front))
        if exchange is not None:
            self._finish(exchange, reloads)
        elif pushed:
            with contextlib.suppress(RuntimeError):  # the loop closed: the comms went with it
                self._loop.call_soon_threadsafe(_send_pushed_reloads, pushed)

    # -- the exchange ---------------------------------------------------------------------

    def _real(self, path: str) -> Path:
        return _real(self.root / path)

    def _start_listening(self) -> None:
        """On the loop: take pushes from now on, and tell the pages already there to push."""
        self._loop_thread = threading.get_ident()
        try:
            self._listen(_QUESTIONS.receive)
            watch = self._open_comm({"request": "watch"})
        except Exception:  # no kernel to talk through: the questions will say nothing is open
            return
        # Closed once a page without the extension closed it too (no warning for a comm gone).
        self._loop.call_later(self.linger, _close, watch)

    def _busy_wait(self) -> float:
        """How long to wait for the loop to open a question: not at all while a cell says it
        holds the loop (``loop_held``)."""
        return 0.0 if _loop_is_held() else self.busy

    def _on_loop(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def _documents(self) -> list[_Placed]:
        """What the pages have open: their answers to a question, or, when the loop cannot ask
        one in time, their last pushes."""
        if self._loop.is_closed():
            return []
        exchange = None if self._on_loop() else self._ask()
        if exchange is None or not exchange.wait_opened(self._busy_wait()):
            return _QUESTIONS.pushed.last()
        answers = self._collect(exchange)
        self._finish(exchange, [])
        return answers

    def _ask(self) -> _Exchange | None:
        if self._loop.is_closed():
            return None
        exchange = _Exchange()

        def open_on_loop() -> None:
            waited = exchange.open()
            if not waited and _QUESTIONS.probing in _QUESTIONS.open:
                exchange.give_up()
                return
            exchange.pushes = _QUESTIONS.pushed.count
            _QUESTIONS.open[exchange.question] = exchange
            try:
                self._listen(_QUESTIONS.receive)
                exchange.comm = self._open_comm(
                    {"request": "documents", "question": exchange.question}
                )
            except Exception:  # no kernel to talk through: nothing is open
                _QUESTIONS.open.pop(exchange.question, None)
                exchange.give_up()
                return
            if not waited:  # asked only to learn which pages are still there
                _QUESTIONS.probing = exchange.question
                self._loop.call_later(self.timeout + self.linger, self._end, exchange)

        try:
            self._loop.call_soon_threadsafe(open_on_loop)
        except RuntimeError:  # the loop closed meanwhile
            return None
        return exchange

    def _collect(self, exchange: _Exchange) -> list[_Placed]:
        answers = exchange.wait(self._expected, self.timeout if self._heard else self.probe)
        self._heard = bool(answers)
        if answers:
            self._expected = len({a.app for a in answers})
        return answers

    def _finish(self, exchange: _Exchange, reloads: list[tuple[Comm, list[str]]]) -> None:
        """Send the reloads and close the answers' comms, on the loop; end the question after
        ``linger`` seconds, counting the answers that came late."""

        def on_loop() -> None:
            _send_reloads(reloads)
            for answer in exchange.taken():
                if answer.comm is not None:
                    _close(answer.comm)
            self._loop.call_later(self.linger, self._end, exchange)

        with contextlib.suppress(RuntimeError):  # the loop closed: the comms went with it
            self._loop.call_soon_threadsafe(on_loop)

    def _end(self, exchange: _Exchange) -> None:
        """On the loop: the question is over. The pages that answered it, even late, are the
        pages there: the next question waits for them, and the others' pushes are forgotten."""
        _QUESTIONS.open.pop(exchange.question, None)
        answers = exchange.taken()
        if answers:  # late answers count: that page waits to be asked next time
            self._expected = len({a.app for a in answers})
            self._heard = True
        _QUESTIONS.pushed.forget({a.app for a in answers}, exchange.pushes)
        for answer in answers:
            if answer.comm is not None:
                _close(answer.comm)
        if exchange.comm is not None:
            _close(exchange.comm)


def _send_pushed_reloads(reloads: list[tuple[str, list[str]]]) -> None:
    """On the loop: each page's reload on the comm of its last push (it may have pushed again)."""
    for app, paths in reloads:
        comm = _QUESTIONS.pushed.comm(app)
        if comm is not None:
            _send_reloads([(comm, paths)])


def _send_reloads(reloads: list[tuple[Comm, list[str]]]) -> None:
    for comm, paths in reloads:
        with contextlib.suppress(Exception):  # the page is gone: nothing to reload
            comm.send({"request": "reload", "paths": paths})
