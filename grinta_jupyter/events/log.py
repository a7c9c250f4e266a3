"""The JSONL event log: one event per line, flushed per event, secrets redacted.

The log file and its folders are created readable by the owner only (0600 and
0700, whatever the umask: ``runtime/private.py``): a log holds file contents
and command output. A failed write (disk full, the folder removed) never
raises into the session: the log keeps events in memory, stops writing, and
says why in ``error``; the session then ends with reason ``log_write_failed``.

While a session has its log open, it holds an exclusive advisory lock on it
(``flock``): a second process (or a second session object) cannot append to a
log that a live session writes (``LogBusy``). The lock goes with the process,
so a killed kernel's log can be resumed at once. Resuming takes the lock
before it reads the log (``claim``) and keeps it, so nothing is appended
between what it read and what it writes. A closed log is opened again
(``reopen``: a next task, a rewind or an undo after the end) only if the file
is still the one it closed, as it left it; one deleted meanwhile is written
again whole from memory.

``emit`` may be called from any thread: sequence numbers are given under a
lock, so every event has its own, in the order of the lines. A text the log's
encoding cannot hold (a lone surrogate from a broken stream) is written with
JSON escapes, read back exactly.

A log is read back with ``read_events``, or, for a path a person gave, with
``read_log``: a path that is missing, not a file, unreadable, empty, or not a
grinta session log raises ``LogError`` with one line saying which, for front
ends to show as is. A last line without its newline was torn by a crash and is
not an event (resume cuts it); any other line that is not an event is refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from grinta_jupyter.events.models import SCHEMA_VERSION, Event, SessionStart, parse_event
from grinta_jupyter.runtime import private
from grinta_jupyter.runtime.secrets import REDACTED, Secrets, redact, secret_values

__all__ = [
    "REDACTED",
    "EventLog",
    "LogBusy",
    "LogError",
    "held_elsewhere",
    "read_events",
    "read_log",
    "redact",
    "secret_values",
]

# The logs of this process (``held_elsewhere`` tells its own sessions from another's).
_OPEN: weakref.WeakSet[EventLog] = weakref.WeakSet()
_BAD_LINE = re.compile(r":(\d+): not a grinta event")  # the message of _iter_file
_FIRST_LINE_BYTES = 4_000_000  # read of a log's first line: a task, settings, rules names


class EventLog:
    """Appends events to ``path`` and keeps them in ``events`` (front ends read the
    session's update stream, not the log)."""

    def __init__(
        self,
        path: Path | None,
        session: str,
        secrets: Secrets | None = None,
        earlier: list[Event] | None = None,
        claimed: IO[str] | None = None,
    ):
        """``earlier``: the events already in the file at ``path`` (a resumed session's),
        which the new ones follow: their sequence numbers and times go on from them;
        ``claimed``: the file, already open and locked (``claim``)."""
        self.path = path
        self.session = session
        self.events: list[Event] = list(earlier or ())
        self.error: str | None = None  # why the file stopped being written, if it did
        self.branch = 0  # stamped on every event (a rewind starts a new branch)
        last_t = self.events[-1].t if self.events else 0.0
        if not math.isfinite(last_t):  # a hand-edited clock: every new line would carry it
            last_t = 0.0
        self._started = time.monotonic() - last_t
        self._secrets = secrets if secrets is not None else Secrets.from_env()
        self._file: IO[str] | None = claimed
        self._lock = threading.RLock()  # seq numbers, the list and the file move together
        self._written = len(self.events)  # how many of ``events`` the file holds
        # The file as this log left it when it closed it (device, inode, size): a reopen
        # appends only to that very file.
        self._left: tuple[int, int, int] | None = None
        _OPEN.add(self)
        if claimed is None:
            self._open_first()

    def _open_first(self) -> None:
        if self.path is None:
            return
        try:
            self._file = claim(self.path)
        except OSError as exc:
            self.error = f"cannot open the event log {self.path}: {exc.strerror or exc}"

    def reopen(self) -> None:
        """Open the file again, once closed, for a session that goes on; the events logged
        meanwhile (in memory only) are written first.

        Raises ``LogError``, nothing written, when a write failed before (``error``: what
        cannot be recorded is not done), when it cannot be opened, or when the file is no
        longer the one this log closed (replaced, appended to by another session object, a
        symlink now): appending would make a log that cannot be resumed. A log that was
        deleted is written again whole from memory. ``LogBusy`` when another live session
        holds it."""
        with self._lock:
            if self.error is not None:  # what cannot be recorded is not done
                raise LogError(f"nothing was done: {self.error}")
            if self.path is None or self._file is not None:
                return
            try:
                handle = claim(self.path)
            except LogBusy:
                raise
            except OSError as exc:
                raise LogError(
                    f"cannot open the event log {self.path} again: {exc.strerror or exc}"
                ) from None
            found = os.fstat(handle.fileno())
            if found.st_size == 0:
                self._written = 0  # deleted (or emptied) meanwhile: written again whole
            elif self._left != (found.st_dev, found.st_ino, found.st_size):
                handle.close()
                raise LogError(
                    f"the event log {self.path} was replaced or written by someone else since "
                    "this session closed it: resume it from its log instead (Session.resume, "
                    "%grinta resume)"
                )
            self._file = handle
            for event in self.events[self._written :]:
                self._write(self._redacted(event.model_dump(mode="json")))
                if self._file is None:
                    return
            self._written = len(self.events)

    @property
    def is_open(self) -> bool:
        return self._file is not None

    def emit(self, event: Event, step: int = 0) -> Event:
        with self._lock:
            return self._emit(event, step)

    def _emit(self, event: Event, step: int) -> Event:
        event.seq = len(self.events) + 1
        event.ts = time.time()
        event.t = round(time.monotonic() - self._started, 4)
        event.session = self.session
        event.step = step
        event.branch = self.branch
        data = event.model_dump(mode="json")
        redacted = self._redacted(data)
        if redacted != data:
            # If it no longer parses, the event stays in memory as it was; the file gets the
            # redacted line either way.
            with contextlib.suppress(ValueError):
                event = parse_event(redacted)
        self.events.append(event)
        if self._file is not None:
            self._write(redacted)
            if self._file is not None:
                self._written = len(self.events)
        return event

    def _redacted(self, data: dict[str, Any]) -> dict[str, Any]:
        """An event's line: string values redacted (never keys or the event type, so the
        line still parses)."""
        secrets = self._secrets.now()  # once per event: it reads the whole environment
        return {k: v if k == "type" else secrets.redact_data(v) for k, v in data.items()}

    def _write(self, line: dict[str, Any]) -> None:
        assert self._file is not None
        try:
            try:
                self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
            except UnicodeEncodeError:  # a lone surrogate: escaped, read back the same
                self._file.write(json.dumps(line) + "\n")
            self._file.flush()
        except OSError as exc:
            self.error = f"writing the event log {self.path} failed: {exc.strerror or exc}"
            self._close_quietly()

    def close(self) -> None:
        with self._lock:
            self._close_quietly()

    def _close_quietly(self) -> None:
        if self._file is not None:
            try:
                self._file.flush()
                found = os.fstat(self._file.fileno())
                self._left = (found.st_dev, found.st_ino, found.st_size)
            except OSError:
                self._left = None
            try:
                self._file.close()
            except OSError as exc:  # the buffered tail could not be written
                self.error = self.error or f"closing the event log {self.path} failed: {exc}"
            self._file = None


LOCK_WAIT = 0.5  # seconds to wait for the lock: another process may be probing it (clean)


def claim(path: Path) -> IO[str]:
    """``path`` opened for appending (created 0600 in folders created 0700) and locked.

    Raises ``LogBusy`` when a live session holds it, OSError when it cannot be opened.
    """
    private.make_dirs(path.parent)
    fd = private.open_file(path, os.O_WRONLY | os.O_APPEND)
    handle = os.fdopen(fd, "a", encoding="utf-8")
    try:
        locked = private.lock(fd, LOCK_WAIT)
    except OSError:  # a file system without locks: go on unlocked
        return handle
    if not locked:
        handle.close()
        raise LogBusy(
            f"{path} is the log of a session that is still running (in this or another "
            "process); stop that session first"
        )
    return handle


def held_elsewhere(path: Path) -> bool:
    """Whether a live session of another process (another kernel) holds the log at ``path``
    now. One this process holds is not (its front end says it runs here). The probe takes
    the lock for an instant only; a session claiming it meanwhile waits ``LOCK_WAIT``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        found = os.fstat(fd)
        for log in list(_OPEN):
            handle = log._file
            with contextlib.suppress(OSError, ValueError):  # closed meanwhile
                if handle is not None:
                    mine = os.fstat(handle.fileno())
                    if (mine.st_dev, mine.st_ino) == (found.st_dev, found.st_ino):
                        return False
        return not private.lock(fd, 0)
    except OSError:  # a file system without locks: nobody can hold it
        return False
    finally:
        os.close(fd)  # closing it lets the probe's lock go


def read_events(source: str | os.PathLike[str] | Iterable[Event | dict[str, Any]]) -> list[Event]:
    """Events from a JSONL log path, or from an iterable of events or dicts."""
    if isinstance(source, (str, os.PathLike)):
        return list(_iter_file(Path(source)))
    return [e if isinstance(e, Event) else parse_event(e) for e in source]


class LogError(ValueError):
    """A session log that cannot be used: the message says what is wrong with which path."""


class LogBusy(LogError):
    """The log belongs to a session that is still running: it cannot be resumed or appended."""


def read_log(path: str | os.PathLike[str]) -> list[Event]:
    """The events of the session log at ``path``; ``LogError`` when it is not one."""
    where = os.fspath(path)
    try:
        mode = os.stat(where).st_mode
    except FileNotFoundError:
        raise LogError(f"no such session log: {where}") from None
    except OSError as exc:
        raise LogError(f"cannot read {where}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise LogError(f"{where} is a folder; a session log is a .jsonl file in .grinta/sessions/")
    if not stat.S_ISREG(mode):  # a FIFO or a device would block or never end
        raise LogError(f"{where} is not a regular file, so not a session log")
    try:
        events = read_events(where)
    except UnicodeDecodeError:
        raise LogError(f"{where} is not a grinta session log (it is not UTF-8 text)") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
        _refuse_newer(where)  # its new events are not "not grinta events"
        line = _BAD_LINE.search(str(exc))
        at = f": line {line.group(1)} is not a grinta event" if line else ""
        raise LogError(f"{where} is not a grinta session log{at}") from None
    except OSError as exc:
        raise LogError(f"cannot read {where}: {exc.strerror or exc}") from None
    if not events:
        raise LogError(f"{where} holds no grinta events (an empty or unfinished log)")
    if not any(isinstance(e, SessionStart) for e in events):
        raise LogError(f"{where} is not a grinta session log: it has no session_start event")
    _refuse_newer(where)
    return events


def _refuse_newer(where: str) -> None:
    """``LogError`` when the log's first event says a newer grinta wrote it: its events may
    mean what this version cannot tell, so resuming or replaying it would rebuild another
    session (or refuse one of its lines as no grinta event, which misleads)."""
    try:
        with open(where, "rb") as handle:
            first = b""
            for _ in range(3):  # blank lines before it are tolerated, as when reading
                first = handle.readline(_FIRST_LINE_BYTES).strip()
                if first:
                    break
        data = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return
    if not isinstance(data, dict) or data.get("type") != "session_start":
        return
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise LogError(
            f"{where} was written by a newer grinta (log format {version}; this one reads "
            f"format {SCHEMA_VERSION}): upgrade grinta-jupyter to resume or replay it"
        )


def _iter_file(path: Path) -> Iterator[Event]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            # Every line is written with its newline in one go: a last line without one is
            # torn by a crash (perhaps inside a character), never an event, even when it
            # parses; resume cuts exactly that line (``session._drop_torn_tail``). A whole
            # line that does not parse (a newer version's event, a hand edit) is refused.
            if not raw.endswith(b"\n"):
                return
            line = raw.decode("utf-8").strip()
            if not line:
                continue
            try:
                yield parse_event(json.loads(line))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a grinta event: {exc}") from None
