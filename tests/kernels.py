"""Real kernels for tests: start one, run code in it as a front end would, wait on it.

A kernel is started with jupyter_client in a given folder and environment (no model
configured unless the test says so). ``messages`` sends an execute request, with the
cell's id in its metadata when given (as JupyterLab and Notebook 7 send it), and
collects its output messages up to idle; an error in the kernel raises.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

TIMEOUT = 60


@contextmanager
def running_kernel(cwd: Path, env: Mapping[str, str] | None = None) -> Iterator[Any]:
    """A kernel client for a fresh python3 kernel in ``cwd`` (shut down on exit)."""
    environment = {"GRINTA_MODEL": "", "PATH": os.environ["PATH"], **(env or {})}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(cwd), env=environment)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def messages(
    kc: Any, code: str, cell_id: str | None = None, timeout: float = TIMEOUT
) -> list[dict]:
    """The output messages ``code`` produces, up to idle (raises on an error in the kernel)."""
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    metadata = {"cellId": cell_id} if cell_id else {}
    request = kc.session.msg("execute_request", content, metadata=metadata)
    kc.shell_channel.send(request)
    msg_id = request["header"]["msg_id"]
    seen = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            return seen
        if kind not in ("status", "execute_input"):
            seen.append(msg)


def execute(kc: Any, code: str, cell_id: str | None = None, timeout: float = TIMEOUT) -> str:
    """Run ``code``; its stdout (raises on an error in the kernel)."""
    return "".join(
        m["content"]["text"]
        for m in messages(kc, code, cell_id, timeout)
        if m["msg_type"] == "stream"
    )


def wait_for(kc: Any, expression: str, timeout: float = TIMEOUT) -> None:
    """Until ``expression`` is true in the kernel; each check awaits, so the kernel's
    background tasks (a running session) move meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        check = f"import asyncio; await asyncio.sleep(0.2); print(bool({expression}))"
        if execute(kc, check).strip() == "True":
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {expression}")
