"""xml_edit: raw XML-style edit blocks, the format some agents use to avoid JSON escaping.

    <edit path="a.py"><old>exact old text</old><new>replacement</new></edit>

Several blocks may follow each other; they apply in order, all or none.
Text inside the tags is taken raw (no XML entities), and one leading and one
trailing newline inside <old>/<new> are ignored.
"""

from __future__ import annotations

import re

from pydantic import Field

from grinta_jupyter.runtime.errors import INVALID_ARGS, fail
from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult
from grinta_jupyter.tools.matching import replace_in

_BLOCK = re.compile(
    r'<edit\s+path="([^"]+)"\s*>\s*<old>(.*?)</old>\s*<new>(.*?)</new>\s*</edit>', re.DOTALL
)


class XmlEditArgs(Args):
    block: str = Field(
        description='One or more <edit path="..."><old>...</old><new>...</new></edit> blocks.'
    )


def stage(args: XmlEditArgs, ctx: ToolContext) -> WriteResult:
    blocks = _BLOCK.findall(args.block)
    if not blocks:
        raise fail(
            INVALID_ARGS, 'no <edit path="..."><old>...</old><new>...</new></edit> block found'
        )
    for path, old, new in blocks:
        replace_in(ctx.open(path), _trim(old), _trim(new))
    return WriteResult(f"applied {len(blocks)} edit block{'s' if len(blocks) > 1 else ''}")


def _trim(text: str) -> str:
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


SPEC = ToolSpec(
    name="xml_edit",
    kind="write",
    description="Edit files with raw XML-style <edit> blocks (no JSON escaping needed).",
    args=XmlEditArgs,
    stage=stage,
)
