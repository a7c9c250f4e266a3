"""DemoModel: scripted sessions on the bundled samples, played when no model is configured.

It says so, and it plays one of two scenarios, chosen from the task's words
(``demo_sample``):

- raft_kv (the default): run the tests, read ``RaftNode.handle_append_entries``,
  fix the comparison, run the tests again, finish.
- sales (a task about the sales notebook, a total, a data frame): in a kernel,
  ``inspect`` the variables and then the ``customers`` data frame (a customer
  listed twice makes the merge count that customer's orders twice), read
  ``analysis.ipynb``, fix the merge cell with one ``edit_symbols`` on the cell,
  ``execute`` the fixed cell in the kernel to check the total, run the sample's
  test (it runs the saved notebook top to bottom), finish. Without the kernel
  tools (outside a kernel: they are not offered, or come back UNKNOWN_TOOL) or
  without the notebook's data in the kernel, it reads, fixes and runs the test.

Both react to what happens (a veto, a refused edit, a refused finish) rather
than playing a fixed list, so a person can try approve, edit and veto on them
and still get a sensible run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from grinta_jupyter.agent.context import unfence
from grinta_jupyter.agent.models.base import ModelReply
from grinta_jupyter.agent.models.scripted import ScriptedModel, call, reply
from grinta_jupyter.samples.tasks import DEMO_FIX

NOTICE = (
    "(demo model: no model is configured, so this is a scripted session on the bundled raft_kv sample. "
    "Set GRINTA_MODEL to any litellm model string to use a real model.)"
)
TEST_COMMAND = "python -m pytest"
MAX_TURNS = 12


def _history(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool name, arguments, result) for every tool call so far, in order."""
    results = {
        m.get("tool_call_id"): unfence(str(m.get("content") or ""))
        for m in messages
        if m.get("role") == "tool"
    }
    calls = []
    for message in messages:
        for tool_call in message.get("tool_calls") or []:
            function = tool_call["function"]
            try:
                args = json.loads(function["arguments"])
            except ValueError:
                args = {}
            calls.append((function["name"], args, results.get(tool_call["id"], "")))
    return calls


def _run_tests(text: str) -> ModelReply:
    return reply(text, call("run", command=TEST_COMMAND))


def next_turn(messages: list[dict[str, Any]]) -> ModelReply:
    """The demo's next move, from what happened so far."""
    history = _history(messages)
    if not history:
        return _run_tests(f"{NOTICE}\n\nI'll start by running the test suite to see what fails.")
    tool, _args, result = history[-1]
    fixed = any(t == "replace_string" and r.startswith("replaced") for t, _, r in history)
    vetoed = "The user vetoed" in result
    if result.startswith("finish refused"):
        return _run_tests("Right, I have not verified the change yet. Running the tests.")
    if tool == "replace_string" and vetoed:
        return reply(
            "Understood, I will leave the code as it is.",
            call("finish", summary="Stopped at the user's request; no files were changed."),
        )
    if tool == "run" and vetoed:
        if fixed:
            return reply(
                "Understood.",
                call(
                    "finish",
                    summary="The fix is in place but the user chose not to "
                    "run the tests, so it is unverified.",
                ),
            )
        return reply(
            "Then I'll go straight to the code.",
            call("read", symbol="RaftNode.handle_append_entries"),
        )
    if tool == "run" and not fixed:
        failing = re.search(r"FAILED (\S+)", result)
        name = failing.group(1) if failing else "A test"
        return reply(
            f"{name} fails. The follower's consistency check lives in "
            "RaftNode.handle_append_entries; let me read it.",
            call("read", symbol="RaftNode.handle_append_entries"),
        )
    if tool == "read" and not fixed:
        return reply(
            "The follower only rejects when its entry's term is *older* than prev_log_term, but Raft "
            "requires the terms to match exactly (the Log Matching property). Fixing the comparison:",
            call("replace_string", **DEMO_FIX),
        )
    if tool == "replace_string" and not fixed:  # the edit was refused or failed
        return reply(
            "That edit did not apply; I'll stop here rather than guess.",
            call("finish", summary="Could not apply the fix: " + result.splitlines()[0][:200]),
        )
    if tool == "replace_string":
        return _run_tests("Now the suite again, to check the fix and that nothing else broke.")
    passed = re.search(r"(\d+) passed", result)
    if tool == "run" and passed and "failed" not in result:
        return reply(
            "",
            call(
                "finish",
                summary=(
                    "Fixed RaftNode.handle_append_entries: a follower now rejects AppendEntries unless its entry at "
                    f"prev_log_index has exactly prev_log_term. The suite passes ({passed.group(0)})."
                ),
            ),
        )
    return reply(
        "", call("finish", summary="The tests still fail after the change:\n" + result[-400:])
    )


# -- sales: a wrong total in a notebook ---------------------------------------------------------

SALES_NOTICE = (
    "(demo model: no model is configured, so this is a scripted session on the bundled sales sample. "
    "Set GRINTA_MODEL to any litellm model string to use a real model.)"
)
SALES_NOTEBOOK = "analysis.ipynb"
SALES_CELL = f"{SALES_NOTEBOOK}::cell:by-region"
# The fixed merge cell (no final newline: notebook cells are stored without one).
SALES_FIXED_SOURCE = """\
# The CRM export can list a customer twice: merge with one row per customer, and let
# pandas refuse a join that would repeat an order (validate="many_to_one").
sales = orders.merge(
    customers.drop_duplicates("customer_id"), on="customer_id", how="left", validate="many_to_one"
)
by_region = sales.groupby("region")["amount"].sum()
total = by_region.sum()
print(f"total sales: {total:.2f}")
by_region"""
# What the demo executes in the kernel: the fixed cell, then the notebook's check cell.
SALES_CHECK_CODE = (
    SALES_FIXED_SOURCE
    + """
orders_total = orders["amount"].sum()
print(f"orders: {orders_total:.2f}, regions: {total:.2f}, difference: {total - orders_total:.2f}")"""
)
# Words of a task that ask for the sales scenario rather than raft_kv's.
_SALES_TASK = re.compile(
    r"\b(sales|analysis\.ipynb|notebook|totals?|data ?frames?)\b", re.IGNORECASE
)
_WRITES = ("edit_symbols", "replace_string", "multiedit")


def demo_sample(task: str) -> str:
    """The sample the demo plays ``task`` on: "sales" for the sales notebook or a total, else "raft_kv"."""
    if "raft_kv" not in task and _SALES_TASK.search(task):
        return "sales"
    return "raft_kv"


def _task(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")


def _committed(tool: str, result: str) -> bool:
    return tool in _WRITES and "Committed:" in result and not result.startswith("ERROR")


def _frame_rows(listing: str) -> dict[str, int]:
    """Rows of each data frame in an ``inspect`` listing ("sales (pandas.DataFrame): 8 rows x ...")."""
    return {
        name: int(rows)
        for name, rows in re.findall(r"^(\w+) \(pandas\.DataFrame\): (\d+) rows", listing, re.M)
    }


def _repeated(detail: str, column: str) -> list[str]:
    """Values that appear more than once in ``column`` of the head ``inspect`` shows of a frame."""
    lines = detail.split("head(", 1)[-1].splitlines()[1:]
    if not lines or column not in lines[0].split():
        return []
    at = lines[0].split().index(column) + 1  # each row starts with its index label
    seen: list[str] = []
    repeated: list[str] = []
    for line in lines[1:]:
        words = line.split()
        if len(words) <= at:
            break
        value = words[at]
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.append(value)
    return repeated


def _number(pattern: str, text: str) -> str | None:
    found = re.search(pattern, text, re.M)
    return found.group(1) if found else None


# The name the demo model goes by (GRINTA_MODEL=demo, --model demo choose it too).
DEMO_NAME = "demo"


class SalesNotes:
    """What the sales demo has learned so far.

    Kept by the model, like a person's notes: the session masks older tool
    results (``keep_observations``), so each result is read once, while it is
    fresh, and what matters in it is noted here.
    """

    def __init__(self) -> None:
        self.read = 0  # tool calls of the history noted so far
        self.fixed = False
        self.listing = ""
        self.wrong_total: str | None = None
        self.duplicates: list[str] = []
        self.kernel_total: str | None = None

    def note(self, history: list[tuple[str, dict[str, Any], str]]) -> None:
        """Note what the calls made since the last turn showed."""
        for tool, args, result in history[self.read :]:
            self.fixed = self.fixed or _committed(tool, result)
            if tool == "inspect" and _shown(result) and args.get("name") is None:
                self.listing = result
                self.wrong_total = _number(r"^total \([^)]*\): (?:np\.float64\()?([\d.]+)", result)
            elif tool == "inspect" and _shown(result) and args.get("name") == "customers":
                self.duplicates = _repeated(result, "customer_id")
            elif tool == "read" and _shown(result) and not self.duplicates:
                # The customer list as the notebook writes it: (id, "name", "region") rows.
                rows = re.findall(r'^\s*\d+\t\s*\((\d+), "[^"]*", "[^"]*"\),$', result, re.M)
                self.duplicates = sorted({row for row in rows if rows.count(row) > 1})
            elif tool == "execute" and result.startswith("ok"):
                self.kernel_total = _number(r"regions: ([\d.]+), difference: -?0\.00$", result)
        self.read = len(history)

    def live(self, tools: frozenset[str]) -> bool:
        """Whether the fixed cell can run in the kernel: execute is offered and the data is there."""
        return "execute" in tools and "customers (pandas.DataFrame)" in self.listing

    def test(self, text: str) -> ModelReply:
        return reply(text, call("run", command=TEST_COMMAND))

    def fix(self, text: str) -> ModelReply:
        edit = {"symbol": SALES_CELL, "action": "replace", "new_source": SALES_FIXED_SOURCE}
        return reply(text, call("edit_symbols", edits=[edit]))

    def cause(self) -> str:
        who = f"customer {self.duplicates[0]}" if self.duplicates else "a customer"
        was = f" (it came out {float(self.wrong_total):.2f})" if self.wrong_total else ""
        return (
            f"{who} is listed twice in the customer list, so the merge in cell by-region gave each "
            f"of its orders two rows and the total counted them twice{was}"
        )

    def summary(self, tests: str | None) -> str:
        checks = []
        if self.kernel_total:
            checks.append(
                f"in the kernel the regions now add up to the orders' {self.kernel_total}"
            )
        if tests:
            checks.append(f"the sample's test passes ({tests})")
        else:
            checks.append("the sample's test was not run, so the saved notebook is unverified")
        return (
            f"Fixed {SALES_NOTEBOOK}: {self.cause()}. The cell now merges with one row per customer "
            "(validate='many_to_one' refuses a repeated customer from now on); "
            + "; ".join(checks)
            + "."
        )


def _shown(result: str) -> bool:
    return not result.startswith("ERROR") and "The user vetoed" not in result


def sales_turn(
    messages: list[dict[str, Any]], tools: frozenset[str], notes: SalesNotes
) -> ModelReply:
    """The sales demo's next move, from what happened so far and the tools offered."""
    history = _history(messages)
    if not history:
        if "inspect" in tools:
            return reply(
                f"{SALES_NOTICE}\n\nThe total comes out wrong. First, what the kernel holds:",
                call("inspect"),
            )
        return reply(
            f"{SALES_NOTICE}\n\nThere is no kernel to inspect here, so I'll read the notebook.",
            call("read", path=SALES_NOTEBOOK),
        )
    notes.note(history)
    tool, args, result = history[-1]
    vetoed = "The user vetoed" in result
    if result.startswith("finish refused"):
        if notes.fixed:
            return notes.test(
                "Right, the saved notebook is not verified yet. Running the sample's test."
            )
        previous = next((a.get("summary") for t, a, _ in reversed(history) if t == "finish"), None)
        return reply(
            "The fix was not applied, so there is nothing to verify.",
            call("finish", summary=str(previous or "No files were changed.")),
        )
    if tool == "inspect" and args.get("name") is None:
        return _after_listing(notes, result)
    if tool == "inspect":
        if notes.duplicates:
            text = f"There it is: {notes.cause()}. Let me find that merge in the notebook."
        elif not _shown(result):
            text = "Then I'll read the notebook."
        else:
            text = "Nothing in the customer list stands out here; reading the notebook."
        return reply(text, call("read", path=SALES_NOTEBOOK))
    if tool == "read" and not notes.fixed:
        listed = (
            f"Cell load-customers lists customer {notes.duplicates[0]} twice, and cell by-region "
            if notes.duplicates
            else "Cell by-region "
        )
        return notes.fix(
            f"{listed}merges the orders with the customer list as it is. Merging with one row per "
            "customer fixes the join, and validate='many_to_one' makes pandas refuse a repeated "
            "customer from now on:"
        )
    if tool in _WRITES and vetoed:
        return reply(
            "Understood, I will leave the notebook as it is.",
            call("finish", summary="Stopped at the user's request; no files were changed."),
        )
    if tool in _WRITES and not notes.fixed:  # refused or failed
        return reply(
            "That edit did not apply; I'll stop here rather than guess.",
            call("finish", summary="Could not apply the fix: " + result.splitlines()[0][:200]),
        )
    if tool in _WRITES:
        if notes.live(tools):
            return reply(
                "The cell is fixed on disk. Now the same code in the kernel, with the check cell, "
                "to see the total:",
                call("execute", code=SALES_CHECK_CODE),
            )
        return notes.test("Now the sample's test, which runs the saved notebook top to bottom.")
    if tool == "execute":
        if notes.kernel_total:
            text = (
                f"The regions add up to the orders' total, {notes.kernel_total}. Last, the sample's "
                "test runs the saved notebook from scratch:"
            )
        elif vetoed:
            text = "Then the sample's test will check the fix:"
        else:
            text = "That did not confirm the fix in the kernel; the sample's test will tell:"
        return notes.test(text)
    if tool == "run" and vetoed and notes.fixed:
        return reply("Understood.", call("finish", summary=notes.summary(None)))
    passed = re.search(r"(\d+) passed", result)
    if tool == "run" and passed and "failed" not in result:
        return reply("", call("finish", summary=notes.summary(passed.group(0))))
    if tool == "run" and notes.fixed:
        return reply(
            "", call("finish", summary="The test still fails after the change:\n" + result[-400:])
        )
    return notes.fix("I'll fix the merge cell:")  # the user stepped around the plan


def _after_listing(notes: SalesNotes, result: str) -> ModelReply:
    read = call("read", path=SALES_NOTEBOOK)
    if "UNKNOWN_TOOL" in result:
        return reply("This session cannot see the kernel; I'll read the notebook instead.", read)
    if not _shown(result):
        return reply("Then I'll read the notebook instead.", read)
    if "customers (pandas.DataFrame)" not in result:
        return reply(
            f"The kernel does not hold the notebook's data (run {SALES_NOTEBOOK} to load it), "
            "so I'll read the notebook instead.",
            read,
        )
    rows = _frame_rows(result)
    if rows.get("sales", 0) > rows.get("orders", 0) > 0:
        text = (
            f"sales has {rows['sales']} rows but there are only {rows['orders']} orders: the merge "
            "added rows. The frame it merges with is the suspect:"
        )
    else:
        text = (
            "The totals come from merging the orders with the customers; the customer list first:"
        )
    return reply(text, call("inspect", name="customers"))


class DemoModel(ScriptedModel):
    """The scripted demo: raft_kv (run tests, read, fix, re-run, finish) or the sales notebook
    (inspect, read, fix the cell, execute, test, finish), reacting to decisions."""

    def __init__(self) -> None:
        self.notes = SalesNotes()
        turns: list[Callable[[list[dict[str, Any]]], ModelReply]] = [self._turn] * MAX_TURNS
        super().__init__(turns, name=DEMO_NAME)

    def _offered(self) -> frozenset[str]:
        """The tool names the session offered in the request being answered."""
        tools = self.requests[-1]["tools"] if self.requests else []
        return frozenset(str(t.get("function", {}).get("name")) for t in tools)

    def _turn(self, messages: list[dict[str, Any]]) -> ModelReply:
        if not any(m.get("role") == "tool" for m in messages):
            self.notes = SalesNotes()  # a new session
        if demo_sample(_task(messages)) == "sales":
            return sales_turn(messages, self._offered(), self.notes)
        return next_turn(messages)
