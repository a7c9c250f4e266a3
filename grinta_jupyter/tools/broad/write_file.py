"""write_file: create or overwrite a whole file."""

from __future__ import annotations

from pydantic import Field

from grinta_jupyter.tools.base import Args, ToolContext, ToolSpec, WriteResult, check_size


class WriteFileArgs(Args):
    path: str = Field(description="File to write (created or overwritten).")
    content: str = Field(description="The complete new content of the file.")


def stage(args: WriteFileArgs, ctx: ToolContext) -> WriteResult:
    return WriteResult(write_whole(ctx, args.path, args.content))


def write_whole(ctx: ToolContext, path: str, content: str) -> str:
    """Stage ``content`` as the whole of ``path``, whether or not it exists.

    Whatever exists there is opened as a file to edit, so a folder (the workspace's
    own ``.`` included), a FIFO or a read-only file is refused as the edit tools refuse it.
    """
    where = ctx.workspace.resolve(path, write=True)
    staged = ctx.open(path) if where.abs.exists() else ctx.open_new(path)
    staged.text = staged.conventions.adapt(content) if staged.original else content
    check_size(ctx, staged.rel, staged.text)
    verb = "overwrote" if staged.original else "created"
    return f"{verb} {staged.rel}"


SPEC = ToolSpec(
    name="write_file",
    kind="write",
    description="Write a whole file, replacing any existing content.",
    args=WriteFileArgs,
    stage=stage,
)
