"""The JSONL event log: one event per line, flushed per event, secrets redacted."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from grinta_jupyter.events.models import Event, parse_event

# Environment variables whose values must never reach a log or an output.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
_MIN_SECRET_LEN = 8
REDACTED = "[REDACTED]"


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of secret-looking environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret value from the environment replaced."""
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


class EventLog:
    """Appends events to ``path`` and to in-memory listeners (the notebook, tests)."""

    def __init__(self, path: Path | None, session: str):
        self.path = path
        self.session = session
        self.events: list[Event] = []
        self.listeners: list[Callable[[Event], None]] = []
        self._started = time.monotonic()
        self._secrets = secret_values()
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def emit(self, event: Event, step: int = 0) -> Event:
        event.seq = len(self.events) + 1
        event.ts = time.time()
        event.t = round(time.monotonic() - self._started, 4)
        event.session = self.session
        event.step = step
        line = redact(event.model_dump_json(), self._secrets)
        if line != event.model_dump_json():
            event = parse_event(line)
        self.events.append(event)
        if self._file is not None:
            self._file.write(line + "\n")
            self._file.flush()
        for listener in list(self.listeners):
            listener(event)
        return event

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


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
