"""Every task on the bundled sample workspaces, by id.

A task is what a user asks in a sample workspace, how the copy is prepared,
how to tell it was done, and a reference solution (docs/sample-workspace.md).
The machinery lives in ``core``; each workspace's tasks in their own module.
"""

from __future__ import annotations

from grinta_jupyter.samples.core import (
    CheckResult,
    SuiteRun,
    Task,
    ToolCall,
    copy_workspace,
    run_node_suite,
    run_suite,
    sample_path,
)
from grinta_jupyter.samples.ledger_js_tasks import LEDGER_FIX, LEDGER_JS_TASKS
from grinta_jupyter.samples.raft_kv_tasks import (
    DEMO_FAILING_TEST,
    DEMO_FIX,
    HIDDEN_CAS_TEST,
    RAFT_KV_TASKS,
)

TASKS: dict[str, Task] = {task.id: task for task in [*RAFT_KV_TASKS, *LEDGER_JS_TASKS]}


def get_task(task_id: str) -> Task:
    """The task with id ``task_id``; raises KeyError naming the known ids otherwise."""
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(f"unknown task {task_id!r}; known: {', '.join(sorted(TASKS))}") from None


__all__ = [
    "DEMO_FAILING_TEST",
    "DEMO_FIX",
    "HIDDEN_CAS_TEST",
    "LEDGER_FIX",
    "TASKS",
    "CheckResult",
    "SuiteRun",
    "Task",
    "ToolCall",
    "copy_workspace",
    "get_task",
    "run_node_suite",
    "run_suite",
    "sample_path",
]
