"""Writes the notebooks in this folder from the cell lists below.

The notebooks are committed without outputs; this script is their source, so a
change to a notebook is a readable diff. Run: python notebooks/make_notebooks.py notebooks
"""

import json
import sys
from pathlib import Path


def nb(cells):
    out = []
    for number, (kind, src) in enumerate(cells, 1):
        cell = {
            "cell_type": kind,
            "id": f"cell-{number:02d}",
            "metadata": {},
            "source": src.strip("\n").splitlines(keepends=True),
        }
        if kind == "code":
            cell.update({"execution_count": None, "outputs": []})
        out.append(cell)
    return {
        "cells": out,
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


QUICK = [
    (
        "markdown",
        """
# grinta quickstart

One command starts an agent session on a copy of the bundled `raft_kv` sample (a small Raft key-value store with one failing test).

With no model configured, a **scripted demo model** plays the session and says so. To use a real model, set `GRINTA_MODEL` to any [litellm](https://docs.litellm.ai/docs/providers) model string before starting Jupyter (for example `openai/gpt-4o-mini`, `anthropic/claude-3-5-sonnet-latest`, or `ollama_chat/qwen2.5-coder:7b`).

Each step appears as a card: the tool call, how a symbol was resolved, the exact diff, the validation result. Reads run by themselves; **writes and commands wait for you**: *Approve* (or Enter), *Edit*, or *Veto* (or Escape). Nothing touches a file until you approve.
""",
    ),
    ("code", "%load_ext grinta_jupyter"),
    ("code", "%grinta fix the failing test in raft_kv"),
    (
        "markdown",
        """
**Your turn.** The session stopped at its first write or command and waits for you in the card above: *Approve* (Enter), *Edit*, or *Veto* (Escape). Decide each step as it comes; the session runs in the background, so the notebook stays usable while it waits.
""",
    ),
    (
        "markdown",
        """
### Optional: approve the rest

The next cell approves, without asking, every step **after your first decision**: the first one stays yours. Skip it to keep deciding each step in the cards. It is a loop over `session.updates()`, the stream the cards are drawn from, answering with `session.decide(Approve())`.
""",
    ),
    (
        "code",
        """
# >>> OPTIONAL: approves every step after your first decision, without asking. <<<
import grinta_jupyter
from grinta_jupyter.agent import Approve, NeedsDecision, SessionEnded

session = grinta_jupyter.current()
async for update in session.updates():
    if isinstance(update, NeedsDecision):
        if all(step.decision in (None, "auto") for step in session.steps):
            print(f"step {update.step.number} waits for your decision in its card above")
            continue
        print(f"approving step {update.step.number}: {update.step.proposal.summary}")
        session.decide(Approve())
    elif isinstance(update, SessionEnded):
        print(f"session ended ({update.reason}): {update.summary}")
""",
    ),
    (
        "markdown",
        "Once the session has finished, the fix is on disk, and the sample's own check agrees:",
    ),
    (
        "code",
        """
import grinta_jupyter
from grinta_jupyter.samples.tasks import get_task

get_task("raft_kv/fix-failing-test").check(grinta_jupyter.current().root)
""",
    ),
    (
        "markdown",
        "Every step was recorded as an event; `%grinta metrics` summarises the run, and `%grinta log` writes the whole trace into this cell as step cards, so the saved notebook stays readable without a kernel (in JupyterLab with the grinta extension, on GitHub, on nbviewer).",
    ),
    ("code", "%grinta metrics"),
    ("code", "%grinta log"),
]

STEP = [
    (
        "markdown",
        """
# Stepping a session cell by cell: approve, edit, veto

`--manual` starts a session that only moves when you say so: `%grinta step` advances to the next step that has something to show, and `%grinta approve`, `%grinta edit {json}` and `%grinta veto REASON` decide the pending one. No widgets needed.
""",
    ),
    ("code", "import grinta_jupyter\n\n%load_ext grinta_jupyter"),
    (
        "code",
        "%grinta --manual fix the failing test in raft_kv\nsession = grinta_jupyter.current()",
    ),
    ("markdown", "The model first wants to run the tests. Commands wait for a decision:"),
    ("code", "%grinta step"),
    ("code", "%grinta approve"),
    (
        "markdown",
        "One test fails. The model reads the method it suspects; reads run without asking:",
    ),
    ("code", "%grinta step"),
    ("markdown", "Now it proposes the fix. The card shows the exact diff; nothing is written yet."),
    ("code", "%grinta step"),
    (
        "markdown",
        "**Edit** the proposal before approving: here we keep the fix but add a comment. The runtime re-resolves, re-stages and re-validates the edited call and shows the new diff:",
    ),
    (
        "code",
        """
import json  # noqa: F401  (used by the magic below: $json.dumps(...))

from grinta_jupyter.samples.tasks import DEMO_FIX

edited = {**DEMO_FIX, "new_string": DEMO_FIX["new_string"] + "  # terms must match exactly"}
%grinta edit $json.dumps(edited)
""",
    ),
    ("code", "%grinta approve"),
    (
        "markdown",
        "The model wants to run the tests again. **Veto** it, with a reason the model will read:",
    ),
    ("code", "%grinta step"),
    ("code", "%grinta veto run them after lunch"),
    (
        "markdown",
        "The demo model tries to finish, but it edited a file and never ran the tests since. The **finish guard** sends it back:",
    ),
    ("code", "%grinta step"),
    ("code", "%grinta step"),
    ("code", "%grinta approve"),
    ("code", "%grinta step"),
    ("code", "%grinta status"),
    (
        "markdown",
        "Undo restores the last commit byte for byte (here: the fix). `%grinta log` re-displays the whole trace.",
    ),
    ("code", "%grinta undo"),
    ("code", "%grinta log"),
]

SYMBOLS = [
    (
        "markdown",
        """
# Symbols and diffs: resolution, ambiguity, candidates, a refused edit

The runtime underneath the agent can be used directly. *Reads may search; writes must target*: a read of an ambiguous name returns candidates, a write to one is refused with candidates, never guessed.
""",
    ),
    (
        "code",
        """
import tempfile
from pathlib import Path

from grinta_jupyter import Runtime
from grinta_jupyter.samples.tasks import copy_workspace

root = copy_workspace("raft_kv", Path(tempfile.mkdtemp()) / "raft_kv")
rt = Runtime(root)
""",
    ),
    ("markdown", "A unique name reads directly:"),
    ("code", "print(rt.call('read', {'symbol': 'RaftNode.handle_append_entries', }).output[:900])"),
    ("markdown", "`apply` is defined three times. A read returns the candidates:"),
    ("code", "print(rt.call('read', {'symbol': 'apply'}).output)"),
    ("markdown", "A write to the same name is refused, and nothing changes:"),
    (
        "code",
        """
p = rt.propose("edit_symbols", {"edits": [{"symbol": "apply", "action": "delete"}]})
print(p.error.code)
for c in p.error.candidates:
    print(f"  {c.path}:{c.line} {c.kind} {c.name}")
""",
    ),
    (
        "markdown",
        "Targeting one candidate exactly works. `propose` stages the change and shows the diff; nothing is written until `commit`:",
    ),
    (
        "code",
        """
p = rt.propose("edit_symbols", {"edits": [{
    "symbol": "raft_kv/state_machine.py::KVStateMachine.apply",
    "action": "insert_after",
    "new_source": "def keys(self) -> list[str]:\\n    \\"\\"\\"Every key, sorted.\\"\\"\\"\\n    return sorted(self._data)\\n",
}]})
print(p.diff)
""",
    ),
    ("code", "print(rt.commit(p).output.splitlines()[0])"),
    (
        "markdown",
        "An edit that would break the file is refused with the line, and the file stays as it was:",
    ),
    (
        "code",
        """
p = rt.propose("replace_string", {"path": "raft_kv/log.py", "old_string": "class RaftLog:", "new_string": "class RaftLog("})
print(p.error.render())
""",
    ),
    (
        "markdown",
        "So is code that arrives JSON-escaped, a classic transport failure of tool calls:",
    ),
    (
        "code",
        """
p = rt.propose("create", {"path": "raft_kv/extra.py", "content": "def f():\\\\n    return 1\\\\n"})
print(p.error.code, "-", p.error.message)
""",
    ),
    (
        "markdown",
        "And a near miss says what differs. Here the model copied a method without its indentation; the refusal names the closest places and what differs at each, exactly as the model reads it:",
    ),
    (
        "code",
        """
old = '''def last_index(self) -> int:
    \"\"\"Index of the last entry, 0 when the log is empty.\"\"\"
    return len(self._entries)'''
p = rt.propose("replace_string", {"path": "raft_kv/log.py", "old_string": old, "new_string": "x"})
print(p.error.render())
""",
    ),
    ("markdown", "The same refusal as data, for code: the message, then each candidate's place."),
    (
        "code",
        """
print(p.error.code, "-", p.error.message)
for c in p.error.candidates:
    print(f"  {c.path}:{c.line}  {c.note}")
""",
    ),
    ("code", "print(rt.undo().output)"),
]

METRICS = [
    (
        "markdown",
        """
# Reading an event log and plotting the run

Every session writes `.grinta/sessions/<id>.jsonl`: one event per line. Here we run the demo session (auto-approved), then read its log.
""",
    ),
    (
        "code",
        """
import tempfile
from pathlib import Path

from grinta_jupyter.agent import Session
from grinta_jupyter.agent.models import DemoModel
from grinta_jupyter.samples.tasks import copy_workspace

root = copy_workspace("raft_kv", Path(tempfile.mkdtemp()) / "raft_kv")
session = Session("fix the failing test in raft_kv", model=DemoModel(), root=root, policy="auto", sample="raft_kv")
await session.run()
print(session.end_reason, session.log_path.name)
""",
    ),
    (
        "code",
        """
from grinta_jupyter.events.log import read_events

events = read_events(session.log_path)
for e in events[:12]:
    print(f"{e.seq:3} t={e.t:6.3f} step {e.step} {e.type}")
""",
    ),
    (
        "code",
        """
from grinta_jupyter.events.metrics import measure

# One typed model; its table (with units) is what `grinta metrics LOG` prints.
metrics = measure(session.log_path)
print(metrics.table())
""",
    ),
    ("markdown", "Context growth (prompt tokens per request) and where the time went:"),
    (
        "code",
        """
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3))
a.plot(metrics.context_tokens, marker="o")
a.set(title="prompt tokens per request", xlabel="request", ylabel="tokens")
steps = [e for e in events if e.type == "observation"]
b.barh([f"{e.step} {e.tool}" for e in steps], [e.t for e in steps])
b.set(title="time of each observation (s)")
fig.tight_layout()
plt.show()
""",
    ),
    (
        "markdown",
        "Replaying the log re-runs every model turn and decision and checks that each proposal comes out the same:",
    ),
    (
        "code",
        """
from grinta_jupyter.agent.replay import replay

report = replay(session.log_path)
print(report.identical, report.differences)
""",
    ),
]

HARNESS = [
    (
        "markdown",
        """
# Harness variants: does a simpler tool surface make an agent better?

The same tasks, run under two toolsets: **intent** (8 tools, one per intent) and **broad** (14 tools with overlapping purposes: whole-file writes, patches, line edits, string replacement, AST edits, XML edit blocks, heredocs). Both run on the same runtime, so safety is equal and only the action space differs. Design, tasks built from real packages, running on a Ray cluster, and what the numbers mean: `docs/experiment.md`.

This notebook runs a small eval **offline with a scripted solver** so it runs anywhere. Its numbers exercise the pipeline; they are *not* evidence about models (the solver's tool choice is random by construction).
""",
    ),
    (
        "code",
        """
import tempfile
from pathlib import Path

from IPython.display import HTML

from grinta_jupyter.experiment.report import charts_html
from grinta_jupyter.experiment.suite import (
    load_results,
    plan_runs,
    run_suite,
    select_tasks,
    summarize_results,
    write_report,
)
from grinta_jupyter.tools import get_toolset
from grinta_jupyter.tools.tokens import schema_tokens

for name in ("intent", "broad"):
    toolset = get_toolset(name)
    print(f"{name}: {len(toolset.tools)} tools, {schema_tokens(toolset.schemas())} schema tokens")
""",
    ),
    (
        "code",
        """
out = Path(tempfile.mkdtemp()) / "eval"
tasks = select_tasks("raft_kv")[:2]
specs = plan_runs(tasks, ["intent", "broad"], "scripted", runs=2)
results = run_suite(specs, out, jobs=1, progress=print)
print(write_report(results, ["intent", "broad"], out))
""",
    ),
    (
        "markdown",
        """
## Load a results folder

A results folder holds one `runs/<key>.json` per finished run, whichever backend ran it (local processes or Ray tasks, on this machine or a cluster). Point `folder` at any of them, for instance the `--out` of a `grinta eval`. The charts are the ones `report.html` in the same folder shows: per toolset, the mean with its 95% bootstrap interval; below them, the difference between the toolsets with its own interval.
""",
    ),
    (
        "code",
        """
folder = out  # or Path("my-eval"): the --out of any grinta eval, local or Ray
results = load_results(folder)
table = summarize_results(results, ["intent", "broad"])
print(f"{len(results)} runs from {folder}; the whole report: {folder / 'report.html'}")
HTML(charts_html(table))
""",
    ),
    (
        "markdown",
        """
## Real tasks, real models, more machines

Tasks built from real packages: each is one bug injected into a package's code, caught by that package's own tests, reported as a user would (the failing tests and their assertions). Then the experiment with a real model, on Ray:

```bash
grinta tasks build --packages inflection==0.5.1,isodate==0.7.2,toolz==1.2.0 --out my-tasks
GRINTA_MODEL=openai/gpt-4o-mini grinta eval --tasks my-tasks --toolsets intent,broad --runs 5 --backend ray --jobs 2 --out my-eval
```

`--backend ray` starts a Ray on this machine for the eval; `--address ray://HEAD:10001` (or `auto` on a cluster node) sends the runs to a cluster. An interrupted eval resumes where it stopped when run again with the same `--out`, on either backend. Open `my-eval/report.html` in any browser, or load `my-eval` in the cell above.
""",
    ),
]

NOTEBOOKS = [
    (
        "markdown",
        """
# Notebooks and kernels: a wrong total, found in the kernel, fixed in a cell

The agent reads and edits notebooks as **cells**, never as JSON:

- `read` on a notebook shows each cell with its id, type and numbered source; `search` reports matches as cells.
- A cell is a symbol: `analysis.ipynb::cell:<id>`. `edit_symbols` replaces, inserts or deletes cells (`{"symbol": "analysis.ipynb::cell:by-region", "action": "replace", "new_source": "..."}`), and `replace_string` edits within one cell's source.
- Every notebook write is validated against the nbformat schema before it is committed; the cells it does not touch keep every byte, and an edited code cell loses its outputs (the new source did not produce them).

Run inside a kernel, a session has two more tools:

- `inspect`: your variables, or one in detail (a data frame's columns, dtypes, null counts and first rows). It is a read: it runs without asking, and never runs your code.
- `execute`: runs Python in your namespace, like a cell. It is gated like `run`: the card shows the code, and nothing runs before you approve.

Here the scripted demo model (used when no model is configured) finds why a small sales analysis gets its total wrong, by inspecting its data frames, fixes the cell and checks the total by executing it. More in `docs/notebook.md`.
""",
    ),
    (
        "markdown",
        "The demo works on a fresh copy of the bundled `sales` sample, made in the current folder. We move to a scratch folder first, so that nothing beside this notebook changes:",
    ),
    (
        "code",
        """
import os
import tempfile

import grinta_jupyter

os.chdir(tempfile.mkdtemp(prefix="grinta-notebook-06-"))
%load_ext grinta_jupyter
""",
    ),
    (
        "markdown",
        "The analysis joins the orders with the customer list and sums them by region. `%run` runs a notebook's cells in this kernel, so its data frames become variables here, where `inspect` can see them. This is the pristine sample inside the package (running it changes no file):",
    ),
    (
        "code",
        """
from grinta_jupyter.samples.tasks import sample_path

analysis = sample_path("sales") / "analysis.ipynb"
%run $analysis
""",
    ),
    (
        "markdown",
        """
The regions add up to more than the orders. Ask the agent; with no model configured, the demo model picks this scenario from the task's words.

`--auto` approves every step so that this notebook runs top to bottom by itself. Drop it to decide each write and command in its card: veto the cell edit, and the demo stops without changing a file.
""",
    ),
    ("code", "%grinta --auto fix the wrong total in the sales notebook"),
    (
        "markdown",
        "The session runs in the background; this cell waits for its end, then lists the steps:",
    ),
    (
        "code",
        """
from grinta_jupyter.agent import SessionEnded

session = grinta_jupyter.current()
async for update in session.updates():
    if isinstance(update, SessionEnded):
        print(f"session ended ({update.reason})\\n")
for step in session.steps:
    print(f"{step.number}. {step.call.name}: {step.proposal.summary}")
print(f"\\n{session.summary}")
""",
    ),
    (
        "markdown",
        "The fixed cell, as `read` shows it, in the session's copy of the notebook (every other cell is byte for byte as it was):",
    ),
    (
        "code",
        """
from grinta_jupyter import Runtime

fixed = Runtime(session.root).call("read", {"path": "analysis.ipynb", "symbol": "cell:by-region"})
print(fixed.output)
""",
    ),
    (
        "markdown",
        "`execute` ran the fixed cell in this kernel, so the variables here are right already, as if you had re-run it:",
    ),
    (
        "code",
        """
# total, orders and sales come from %run above (ruff cannot see that: noqa F821).
print(f"total: {total:.2f}, orders: {orders['amount'].sum():.2f}, rows: {len(sales)}")  # noqa: F821
assert round(total, 2) == round(orders["amount"].sum(), 2) and len(sales) == len(orders)  # noqa: F821
""",
    ),
    (
        "markdown",
        "And the sample's own test, which runs the saved notebook from scratch, passes:",
    ),
    (
        "code",
        """
from grinta_jupyter.samples.tasks import run_suite

suite = run_suite(session.root)
for test, outcome in suite.outcomes.items():
    print(outcome, test)
assert suite.exit_code == 0 and not suite.failures
""",
    ),
    ("markdown", "`%grinta log` keeps the whole trace in this notebook, as step cards:"),
    ("code", "%grinta log"),
]

out = Path(sys.argv[1])
for name, cells in [
    ("01-quickstart.ipynb", QUICK),
    ("02-step-approve-edit-veto.ipynb", STEP),
    ("03-symbols-and-diffs.ipynb", SYMBOLS),
    ("04-metrics.ipynb", METRICS),
    ("05-harness-variants.ipynb", HARNESS),
    ("06-notebooks-and-kernels.ipynb", NOTEBOOKS),
]:
    (out / name).write_text(json.dumps(nb(cells), indent=1) + "\n")
