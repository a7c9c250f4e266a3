"""xml_edit: raw XML-style edit blocks, the format some agents use to avoid JSON escaping.

    <edit path="a.py"><old>exact old text</old><new>replacement</new></edit>

Several blocks may follow each other; they apply in order, all or none.
Text inside the tags is taken raw (no XML entities), and one leading and one
trailing newline inside <old>/<new> are ignored. A tag left outside the blocks
read (an unclosed block, a closing tag past the end of one) or a block that
reads two ways (its new text holds ``</old><new>``) refuses the whole call.
"""

from __future__ import annotations

import re

from pydantic import Field

from grinta_jupyter.runtime.errors import AMBIGUOUS_MATCH, INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.matching import Naming, replace_in
from grinta_jupyter.tools.multiedit import MAX_EDITS

_HEAD = re.compile(r'<edit\s+path="([^"]+)"\s*>\s*<old>')
_TO_NEW = re.compile(r"\s*<new>")
_TO_END = re.compile(r"\s*</edit>")
_TAG = re.compile(r"<edit\b|</?old>|</?new>|</edit>")
_SPLIT = re.compile(r"</old>\s*<new>")
# Refusals name the block's own parts (there is no replace_all; files are new by write_file).
NAMING = Naming(
    old="the <old> text",
    new="the <new> text",
    unique="add surrounding lines to make it unique",
    new_file="write_file",
)


def edit_blocks(block: str) -> list[tuple[str, str, str]]:
    """The (path, old, new) of each ``<edit path="..."><old>...</old><new>...</new></edit>``
    in ``block``: each text runs to the first closing tag the rest of the block follows.

    Found tag by tag, each part of the block read once: one expression with lazy texts,
    tried again from each ``<edit``, took the square of the block's length when a closing
    tag never came.
    """
    blocks: list[tuple[str, str, str]] = []
    at = 0
    while (head := _HEAD.search(block, at)) is not None:
        _outside(block, at, head.start())
        found = _rest(block, head.end())
        if found is None:  # any later block's ending would have ended this one
            break
        old, new, end = found
        if _SPLIT.search(new):
            raise fail(
                AMBIGUOUS_MATCH,
                f"edit block {len(blocks) + 1} reads two ways: its new text holds </old><new>, "
                "so its old text could end there too; edit that text with another tool",
            )
        blocks.append((head.group(1), old, new))
        at = end
    _outside(block, at, len(block))
    return blocks


def _outside(block: str, start: int, end: int) -> None:
    """Refuse a tag between blocks: a block that could not be read must not be skipped."""
    tag = _TAG.search(block, start, end)
    if tag is not None:
        line = block.count("\n", 0, tag.start()) + 1
        raise fail(
            INVALID_ARGS,
            f"{tag.group()!r} on line {line} of the block is outside every complete "
            '<edit path="..."><old>...</old><new>...</new></edit>; nothing was applied',
        )


def _rest(block: str, start: int) -> tuple[str, str, int] | None:
    """The old and new texts of a block whose ``<old>`` ends at ``start``, and its end."""
    old_end = block.find("</old>", start)
    while old_end >= 0:
        new = _TO_NEW.match(block, old_end + 6)
        if new is not None:
            new_end = block.find("</new>", new.end())
            while new_end >= 0:
                end = _TO_END.match(block, new_end + 6)
                if end is not None:
                    return block[start:old_end], block[new.end() : new_end], end.end()
                new_end = block.find("</new>", new_end + 1)
            return None  # a later "</old>" has its "<new>" later still: no ending after it
        old_end = block.find("</old>", old_end + 1)
    return None


class XmlEditArgs(Args):
    block: str = Field(
        description='One or more <edit path="..."><old>...</old><new>...</new></edit> blocks.'
    )


def stage(args: XmlEditArgs, ctx: ToolContext) -> WriteResult:
    blocks = edit_blocks(args.block)
    if not blocks:
        raise fail(
            INVALID_ARGS, 'no <edit path="..."><old>...</old><new>...</new></edit> block found'
        )
    if len(blocks) > MAX_EDITS:  # each block costs time linear in its file
        raise fail(
            INVALID_ARGS,
            f"{len(blocks)} edit blocks in one call; at most {MAX_EDITS}: split them over "
            "several calls",
        )
    for path, old, new in blocks:
        replace_in(ctx.open(path), _trim(old), _trim(new), naming=NAMING)
    return WriteResult(f"applied {len(blocks)} edit block{'s' if len(blocks) > 1 else ''}")


def _trim(text: str) -> str:
    """Without one leading and one trailing line break (CRLF or LF)."""
    text = text[2:] if text.startswith("\r\n") else text.removeprefix("\n")
    return text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")


SPEC = ToolSpec(
    name="xml_edit",
    kind="write",
    description="Edit files with raw XML-style <edit> blocks (no JSON escaping needed).",
    args=XmlEditArgs,
    stage=stage,
)
