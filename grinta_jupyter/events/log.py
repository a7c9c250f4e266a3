"""The JSONL event log: one event per line, flushed per event, secrets redacted.

The log file and its folders are created readable by the owner only (0600 and
0700, whatever the umask): a log holds file contents and command output. A
failed write (disk full, the folder removed) never raises into the session:
the log keeps events in memory, stops writing, and says why in ``error``; the
session then ends with reason ``log_write_failed``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from grinta_jupyter.events.models import Event, parse_event
from grinta_jupyter.runtime.secrets import REDACTED, Secrets, redact, secret_values

__all__ = ["REDACTED", "EventLog", "read_events", "redact", "secret_values"]

_FILE_MODE = 0o600
_DIR_MODE = 0o700


class EventLog:
    """Appends events to ``path`` and to in-memory listeners (the notebook, tests)."""

    def __init__(self, path: Path | None, session: str, secrets: Secrets | None = None):
        self.path = path
        self.session = session
        self.events: list[Event] = []
        self.listeners: list[Callable[[Event], None]] = []
        self.error: str | None = None  # why the file stopped being written, if it did
        self._started = time.monotonic()
        self._secrets = secrets if secrets is not None else Secrets.from_env()
        self._file: IO[str] | None = None
        if path is not None:
            try:
                self._file = _open_private(path)
            except OSError as exc:
                self.error = f"cannot create the event log {path}: {exc.strerror or exc}"

    def emit(self, event: Event, step: int = 0) -> Event:
        event.seq = len(self.events) + 1
        event.ts = time.time()
        event.t = round(time.monotonic() - self._started, 4)
        event.session = self.session
        event.step = step
        data = event.model_dump(mode="json")
        # Redact string values, never keys or the event type, so the line still parses.
        redacted = {k: v if k == "type" else self._secrets.redact_data(v) for k, v in data.items()}
        if redacted != data:
            # If it no longer parses, the event stays in memory as it was; the file gets the
            # redacted line either way.
            with contextlib.suppress(ValueError):
                event = parse_event(redacted)
        self.events.append(event)
        if self._file is not None:
            try:
                self._file.write(json.dumps(redacted, ensure_ascii=False) + "\n")
                self._file.flush()
            except OSError as exc:
                self.error = f"writing the event log {self.path} failed: {exc.strerror or exc}"
                self._close_quietly()
        for listener in list(self.listeners):
            listener(event)
        return event

    def close(self) -> None:
        self._close_quietly()

    def _close_quietly(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:  # the buffered tail could not be written
                self.error = self.error or f"closing the event log {self.path} failed: {exc}"
            self._file = None


def _open_private(path: Path) -> IO[str]:
    """``path`` opened for appending, created 0600 in folders created 0700."""
    missing = []
    folder = path.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=_DIR_MODE, exist_ok=True)
        os.chmod(folder, _DIR_MODE)  # mkdir's mode is filtered by the umask
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, _FILE_MODE)
    os.fchmod(fd, _FILE_MODE)
    return os.fdopen(fd, "a", encoding="utf-8")


def read_events(source: str | os.PathLike[str] | Iterable[Event | dict]) -> list[Event]:
    """Events from a JSONL log path, or from an iterable of events or dicts."""
    if isinstance(source, (str, os.PathLike)):
        return list(_iter_file(Path(source)))
    return [e if isinstance(e, Event) else parse_event(e) for e in source]


def _iter_file(path: Path) -> Iterator[Event]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield parse_event(json.loads(line))
            except (ValueError, TypeError) as exc:  # a torn last line from a crash is skipped
                if handle.readline() == "":
                    return
                raise ValueError(f"{path}:{number}: not a grinta event: {exc}") from None
