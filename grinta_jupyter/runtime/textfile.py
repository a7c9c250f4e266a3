"""Byte-faithful text files.

A ``TextFile`` remembers how a file was written (UTF-8 with or without a BOM,
LF or CRLF line endings) so that an edit changes only the bytes it means to.
Edits operate on the decoded text with its original line endings; payloads
from the model arrive with LF and are adapted to the file's style.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from grinta_jupyter.runtime.errors import BINARY_FILE, UNSUPPORTED_ENCODING, fail

BOM = b"\xef\xbb\xbf"
_SNIFF = 8192


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class TextFile:
    """A decoded text file and the conventions needed to write it back identically."""

    text: str  # without the BOM, line endings as on disk
    bom: bool
    newline: str  # dominant line ending: "\n" or "\r\n"
    sha256: str  # of the bytes on disk
    raw: bytes = field(default=b"", repr=False)  # those bytes: the base a commit compares against

    @classmethod
    def decode(cls, raw: bytes, path: str = "file") -> TextFile:
        """Decode ``raw``; raise a ToolFailure for binary or non-UTF-8 content."""
        if b"\x00" in raw[:_SNIFF] or (raw and b"\x00" in raw):
            raise fail(BINARY_FILE, f"{path} is a binary file; text tools cannot edit it")
        bom = raw.startswith(BOM)
        body = raw[len(BOM) :] if bom else raw
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(
                UNSUPPORTED_ENCODING,
                f"{path} is not UTF-8 (invalid byte at offset {exc.start}); it cannot be edited as text",
            ) from None
        crlf = text.count("\r\n")
        lf = text.count("\n") - crlf
        return cls(
            text=text, bom=bom, newline="\r\n" if crlf > lf else "\n", sha256=sha256(raw), raw=raw
        )

    @classmethod
    def new(cls) -> TextFile:
        """Conventions for a file that does not exist yet: UTF-8, no BOM, LF."""
        return cls(text="", bom=False, newline="\n", sha256="")

    def encode(self, text: str) -> bytes:
        data = text.encode("utf-8")
        return BOM + data if self.bom else data

    def adapt(self, payload: str) -> str:
        """Give a model payload (LF or CRLF) this file's line endings."""
        lf = payload.replace("\r\n", "\n")
        return lf.replace("\n", "\r\n") if self.newline == "\r\n" else lf


def split_lines(text: str) -> list[str]:
    """Lines without their endings (CRLF or LF); a final newline adds no empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def line_count(text: str) -> int:
    """``len(split_lines(text))``, without making the lines."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def line_numbers(text: str, offsets: Iterable[int]) -> list[int]:
    """1-based line numbers of ascending ``offsets``: newlines are counted once, not per offset."""
    numbers = []
    line, at = 1, 0
    for offset in offsets:
        line += text.count("\n", at, offset)
        at = offset
        numbers.append(line)
    return numbers
