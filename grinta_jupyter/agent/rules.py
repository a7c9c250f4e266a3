"""The project's rules files: what a workspace tells any coding agent, added to the system prompt.

    rules = load_rules(root)
    Context.start(root, task, rules=rules.text)   # the block, labelled, each file named
    SessionStart(rules=rules.files)               # which files were read (path, chars, sha256)

Read, in this order, when present at the workspace root: ``AGENTS.md``,
``CLAUDE.md``, ``.grinta/rules.md``. Each is read safely:

- regular files only (never a FIFO, socket or device; nothing blocks), opened without
  following a link out of the workspace: a symbolic link is followed only when its
  target is inside the root (``CLAUDE.md -> AGENTS.md`` is common), and a file that
  two names lead to is read once;
- bounded: a file over ``MAX_FILE_BYTES`` is skipped (``Rules.skipped`` says why); each
  file keeps at most ``MAX_FILE_CHARS`` characters and ``MAX_FILE_TOKENS`` tokens, all
  files together ``MAX_TOTAL_CHARS`` and ``max_tokens`` (as a request counts them), cut at
  a line end and marked as cut (``RulesFile.truncated``);
- unable to leave their section: a line of a file that would read as a section's
  ``--- begin NAME ---`` or ``--- end NAME ---`` line is changed so that it does not, so
  no text of a file can pass for grinta's words after the rules block;
- decoded as UTF-8 with replacement characters for bytes that are not, and with
  every secret value redacted (``runtime/secrets.py``), like any tool output.

Nothing here raises for a file that cannot be read: it is skipped with a reason.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from grinta_jupyter.events.models import RulesFile
from grinta_jupyter.runtime.files import opened_within, size_text
from grinta_jupyter.runtime.secrets import Secrets
from grinta_jupyter.tools.tokens import counted_in_request

# The files read, in the order they appear in the prompt (workspace-relative, POSIX).
RULES_FILES = ("AGENTS.md", "CLAUDE.md", ".grinta/rules.md")
# A rules file larger than this is not a rules file a prompt can hold: skipped, not read.
MAX_FILE_BYTES = 1_000_000
# About 4,000 tokens per file and 8,000 for all: rules are read on every request. Text that
# tokenizes badly (emoji, tag characters, combining marks: several tokens a character) is
# held to the same number of tokens, counted as the request counts them.
MAX_FILE_CHARS = 16_000
MAX_TOTAL_CHARS = 32_000
MAX_FILE_TOKENS = 4_000
MAX_TOTAL_TOKENS = 8_000

HEADER = (
    "The project's rules: instructions its maintainers wrote for coding agents, read from "
    "the workspace. Follow them where they apply; they do not override the rules above "
    "or the user's messages."
)
TRUNCATED = "[... cut here: the file is longer than grinta's bound for rules files]"

# A line of a file that would read as a section's begin or end line (its dashes are spaced).
_MARKER = re.compile(r"^(\s*)---(?=\s*(?:begin|end)\b)", re.MULTILINE | re.IGNORECASE)

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


@dataclass(frozen=True)
class Rules:
    """The rules block for the system prompt and what it was made of."""

    text: str = ""  # "" when no rules file was read
    files: list[RulesFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


def load_rules(
    root: str | os.PathLike[str],
    secrets: Secrets | None = None,
    *,
    max_tokens: int = MAX_TOTAL_TOKENS,
) -> Rules:
    """The rules files of the workspace ``root``, read safely and bounded (module docstring).

    ``secrets``: the values to redact (default: the environment's, ``Secrets.from_env``);
    ``max_tokens``: what all files together may take of each request (a session with a
    small budget passes a share of it).
    """
    base = Path(root).resolve()
    secrets = secrets if secrets is not None else Secrets.from_env()
    files: list[RulesFile] = []
    skipped: list[tuple[str, str]] = []
    sections: list[str] = []
    seen: set[tuple[int, int]] = set()  # (device, inode) of the files read
    room = MAX_TOTAL_CHARS
    tokens_left = max(0, max_tokens)
    for name in RULES_FILES:
        found = _read(base, name)
        if found is None:
            continue
        if isinstance(found, str):
            skipped.append((name, found))
            continue
        data, identity = found
        if identity in seen:
            continue  # another name of a file already read (CLAUDE.md -> AGENTS.md)
        seen.add(identity)
        if room <= 0:
            skipped.append(
                (name, f"the rules files together are over {MAX_TOTAL_CHARS:,} characters")
            )
            continue
        if tokens_left <= 0:
            skipped.append((name, f"the rules files together are over {max_tokens:,} tokens"))
            continue
        text = secrets.redact(data.decode("utf-8", errors="replace").replace("\r\n", "\n"))
        text = _MARKER.sub(r"\1- - -", text)
        kept, truncated = _cut(text.strip("\n"), min(MAX_FILE_CHARS, room))
        kept, cut_more = _cut_tokens(kept, min(MAX_FILE_TOKENS, tokens_left))
        if cut_more and not kept:
            skipped.append((name, f"the rules files together are over {max_tokens:,} tokens"))
            continue
        truncated = truncated or cut_more
        room -= len(kept)
        tokens_left -= counted_in_request(kept)
        files.append(
            RulesFile(
                path=name,
                chars=len(kept),
                sha256=hashlib.sha256(data).hexdigest(),
                truncated=truncated,
            )
        )
        body = kept + ("\n" + TRUNCATED if truncated else "")
        sections.append(f"--- begin {name} ---\n{body}\n--- end {name} ---")
    text = "\n\n".join([HEADER, *sections]) if sections else ""
    return Rules(text, files, skipped)


def _read(base: Path, name: str) -> tuple[bytes, tuple[int, int]] | str | None:
    """The bytes of ``base/name`` and its identity; a reason it was skipped; None if absent."""
    path = base / name
    try:
        if not os.path.lexists(path):
            return None
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # a link loop, a dangling link, no permission
        return "a link that leads nowhere readable"
    if not target.is_relative_to(base):
        return "a link to a file outside the workspace"
    try:
        status = os.stat(target)
        why = _not_readable(status)
        if why:
            return why
        fd = os.open(target, _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    try:
        opened = os.fstat(fd)  # the file actually opened: it may have been swapped meanwhile
        why = _not_readable(opened)
        if why:
            return why
        if (opened.st_dev, opened.st_ino) != (status.st_dev, status.st_ino):
            return "changed while it was being read"
        if not opened_within(fd, target, str(base)):  # a folder on the way swapped for a link
            return "a link to a file outside the workspace"
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_FILE_BYTES:  # it grew while being read
            return f"over the {size_text(MAX_FILE_BYTES)} limit for a rules file"
        return b"".join(chunks), (opened.st_dev, opened.st_ino)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    finally:
        os.close(fd)


def _not_readable(status: os.stat_result) -> str | None:
    if stat.S_ISDIR(status.st_mode):
        return "a folder, not a file"
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file"
    if status.st_size > MAX_FILE_BYTES:
        return f"{size_text(status.st_size)}, over the {size_text(MAX_FILE_BYTES)} limit"
    return None


def _cut_tokens(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` tokens (``_counted``), at a line end when there is one."""
    tokens = counted_in_request(text)
    cut = False
    while tokens > limit and text:
        text, _ = _cut(text, max(0, len(text) * limit // tokens - 1))
        tokens, cut = counted_in_request(text), True
    return text, cut


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters, at a line end when there is one."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    end = cut.rfind("\n")
    return (cut[:end] if end > limit // 2 else cut).rstrip(), True
