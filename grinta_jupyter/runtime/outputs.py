"""What a read shows of a code cell's outputs: a few bounded lines, never the data.

``summarize_outputs`` turns nbformat output dicts into short text as Jupyter
shows it (colour codes dropped, carriage returns applied): stream text
cut to ``OUTPUT_TEXT_LINES`` lines and ``OUTPUT_TEXT_CHARS`` characters, errors
as ``ename: evalue``, rich results by their ``text/plain`` and images by type
and size (``[image/png 640x480]``, the size from the output's metadata or the
PNG, GIF or JPEG header in the first 64 KiB of its base64). Pure functions of
their input: nothing here raises on odd outputs or reads a file.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from grinta_jupyter.runtime.secrets import before_cut

OUTPUT_TEXT_CHARS = 600
OUTPUT_TEXT_LINES = 12
# Names a notebook gives (an output's type, a stream's name, an error's ename, a MIME
# type) are short in any real one; a hostile one is cut here.
_NAME_CHARS = 80
_MIMES_SHOWN = 3
# Terminal colours (IPython's tracebacks, colored logs): escape codes, not text.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def summarize_outputs(outputs: Sequence[dict[str, Any]], limit: int = 10) -> list[str]:
    """One bounded line (or a few) per output: stream text cut, errors as ``ename: evalue``,
    images as ``[image/png 640x480]``."""
    lines: list[str] = []
    for output in outputs[:limit]:
        kind = output.get("output_type")
        if kind == "stream":
            name = _name(output.get("name", "stdout"))
            lines.append(f"{name}: " + _bounded(_text(output.get("text"))))
        elif kind == "error":
            ename = _name(output.get("ename", "?"))
            lines.append(f"error: {ename}: {_bounded(str(output.get('evalue', '')), 300)}")
        elif kind in ("execute_result", "display_data"):
            lines.append(_bundle(output))
        else:
            lines.append(f"[{_name(kind)}]")
    if len(outputs) > limit:
        lines.append(f"[{len(outputs) - limit} more outputs]")
    return lines


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value or "")


def _as_shown(text: str) -> str:
    """``text`` as Jupyter shows it: colour codes dropped, and a carriage return erasing
    its line so far (a progress bar reads as its last state, not its first)."""
    text = _ANSI.sub("", text)
    if "\r" not in text:
        return text
    lines = re.sub(r"\r+\n", "\n", text).split("\n")
    return "\n".join(_overwritten(line) for line in lines)


def _overwritten(line: str) -> str:
    """What a terminal shows of ``line``: each carriage return moves back to its start and
    what follows writes over it, so a text ending in ``\\r`` (``print(step, end="\\r")``)
    still shows, and a shorter redraw leaves the tail of a longer one. Built from the last
    piece back, each earlier piece adding only what reaches past the later ones: linear."""
    shown = ""
    for piece in reversed(line.split("\r")):
        if len(piece) > len(shown):
            shown += piece[len(shown) :]
    return shown


def _name(value: Any) -> str:
    name = _as_shown(str(value))
    return name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS] + "..."


def _bounded(text: str, chars: int = OUTPUT_TEXT_CHARS) -> str:
    text = _as_shown(text)
    lines = text.rstrip("\n").split("\n")
    cut = "\n".join(lines[:OUTPUT_TEXT_LINES])
    more = len(lines) - OUTPUT_TEXT_LINES
    if len(cut) > chars:
        cut = before_cut(cut)  # a cut through a secret keeps no piece of it
    if len(cut) > chars:
        cut = cut[:chars] + f" [... {len(text) - chars} more chars]"
    elif more > 0:
        cut += f"\n[... {more} more lines]"
    return cut


def _bundle(output: dict[str, Any]) -> str:
    # Not validated on read: a hand-edited notebook may hold anything here.
    data = output.get("data")
    data = data if isinstance(data, dict) else {}
    metadata = output.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    shown: list[str] = []
    images = [m for m in data if m.startswith("image/") and m != "image/svg+xml"]
    for mime in images[:_MIMES_SHOWN]:
        sizes = metadata.get(mime)
        size = _image_size(mime, _text(data[mime]), sizes if isinstance(sizes, dict) else {})
        shown.append(f"[{_name(mime)} {size}]" if size else f"[{_name(mime)}]")
    if len(images) > _MIMES_SHOWN:
        shown.append(f"[{len(images) - _MIMES_SHOWN} more images]")
    if "text/plain" in data:
        shown.append(_bounded(_text(data["text/plain"])))
    elif not shown:
        shown.extend(
            f"[{_name(mime)}, {len(_text(data[mime]))} chars]" for mime in list(data)[:_MIMES_SHOWN]
        )
    prefix = "result" if output.get("output_type") == "execute_result" else "display"
    return f"{prefix}: " + " ".join(shown)


def _image_size(mime: str, b64: str, metadata: dict[str, Any]) -> str | None:
    width, height = metadata.get("width"), metadata.get("height")
    if isinstance(width, int) and isinstance(height, int):
        return f"{width}x{height}"
    # Base64 wrapped in lines (as older writers save it) is cut to whole 4-character
    # groups once the line breaks are gone, or the decoder refuses it as badly padded.
    head64 = "".join(b64[:65536].split())
    try:
        head = base64.b64decode(head64[: len(head64) - len(head64) % 4], validate=False)
    except ValueError:
        return None
    if head.startswith(b"\x89PNG") and len(head) >= 24:
        return f"{int.from_bytes(head[16:20], 'big')}x{int.from_bytes(head[20:24], 'big')}"
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return f"{int.from_bytes(head[6:8], 'little')}x{int.from_bytes(head[8:10], 'little')}"
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(head)
    return None


def _jpeg_size(data: bytes) -> str | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            width = int.from_bytes(data[at + 7 : at + 9], "big")
            return f"{width}x{height}"
        at += 2 + length
    return None


__all__ = ["OUTPUT_TEXT_CHARS", "OUTPUT_TEXT_LINES", "summarize_outputs"]
