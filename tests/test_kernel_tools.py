"""The kernel tools against a plain namespace dict and real pandas, numpy and matplotlib objects:
``inspect`` summarises without running the user's code, ``execute`` runs only once committed,
in a worker thread, bounded, interruptible, with plots as rich outputs."""

from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from grinta_jupyter.agent.models.base import ToolCall
from grinta_jupyter.agent.step import Step
from grinta_jupyter.events.models import EVENT_OUTPUT_CHARS, Observed, parse_event
from grinta_jupyter.jupyter.kernel import IPythonNamespace
from grinta_jupyter.jupyter.mime import STEP_MIME, step_bundle
from grinta_jupyter.runtime.proposal import CommandProposal, Observation
from grinta_jupyter.tools import execute as execute_tool
from grinta_jupyter.tools import inspect as inspect_tool
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.capture import Routed
from grinta_jupyter.tools.facade import Runtime
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset
from grinta_jupyter.tools.tokens import schema_tokens

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SNAPSHOTS = Path(__file__).parent / "snapshots" / "schemas" / "kernel"
TEXT = str(pd.Series(["a"]).dtype)  # "str" from pandas 3, "object" before


class Recorder:
    """Every hook a careless inspector might call records the call. Defined "in the notebook"."""

    __module__ = "__main__"
    calls: list[str] = []

    def __init__(self) -> None:
        self.size = 3

    def __repr__(self) -> str:
        Recorder.calls.append("__repr__")
        return "Recorder()"

    def __str__(self) -> str:
        Recorder.calls.append("__str__")
        return "recorder"

    def __len__(self) -> int:
        Recorder.calls.append("__len__")
        return 1

    def __iter__(self):  # type: ignore[no-untyped-def]
        Recorder.calls.append("__iter__")
        return iter([])

    def __eq__(self, other: object) -> bool:
        Recorder.calls.append("__eq__")
        return False

    __hash__ = object.__hash__

    def __getattr__(self, name: str) -> object:
        Recorder.calls.append(f"__getattr__ {name}")
        raise AttributeError(name)

    @property
    def shape(self) -> tuple[int, int]:
        Recorder.calls.append("shape")
        return (1, 1)

    def _repr_html_(self) -> str:
        Recorder.calls.append("_repr_html_")
        return "<b>x</b>"


class Marked(np.ndarray):  # type: ignore[type-arg]
    """An array subclass "from the notebook" whose shape is a recording property."""

    __module__ = "__main__"

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        Recorder.calls.append("array shape")
        return (0,)


class Zone(datetime.tzinfo):
    __module__ = "__main__"

    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        return datetime.timedelta(0)

    def __repr__(self) -> str:
        Recorder.calls.append("zone __repr__")
        return "Zone()"


@pytest.fixture
def space() -> DictNamespace:
    Recorder.calls = []
    frame = pd.DataFrame(
        {
            "region": ["north", "south", None, "east"],
            "amount": [10.5, None, 3.0, 7.25],
            "count": [1, 2, 3, 4],
        }
    )
    return DictNamespace(
        {
            "df": frame,
            "arr": np.arange(12.0).reshape(3, 4),
            "names": ["ada", "grace", Recorder()],
            "config": {"lr": 0.1, "layers": [64, 32]},
            "title": "quarterly report",
            "obj": Recorder(),
            "add": lambda a, b=Recorder(): a + b,  # noqa: B008 (a default whose repr records)
            "Recorder": Recorder,
            "np": np,
            "_private": 1,
            "In": ["", "x = 1"],
        },
        hidden_names=frozenset({"In"}),
    )


@pytest.fixture
def runtime(tmp_path: Path, space: DictNamespace) -> Runtime:
    return Runtime(tmp_path, kernel_toolset(space))


# -- the toolset -----------------------------------------------------------------------------


def test_the_kernel_toolset_is_the_intent_toolset_plus_two_within_the_budget(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/nonexistent")  # never a download
    toolset = kernel_toolset(DictNamespace())
    assert list(toolset.tools) == [
        "read",
        "search",
        "create",
        "replace_string",
        "edit_symbols",
        "multiedit",
        "run",
        "inspect",
        "execute",
        "finish",
    ]
    assert toolset.tools["inspect"].kind == "read"
    assert toolset.tools["execute"].kind == "command"
    assert schema_tokens(toolset.schemas()) <= 1000


@pytest.mark.parametrize("name", ["inspect", "execute"])
def test_schema_snapshot(name: str):
    """To accept an intended change: GRINTA_UPDATE_SNAPSHOTS=1 python -m pytest this file."""
    spec = kernel_toolset(DictNamespace()).tools[name]
    path = SNAPSHOTS / f"{name}.json"
    current = json.dumps(spec.schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("GRINTA_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(current)
    assert current == path.read_text(), f"the {name} schema changed; review and update the snapshot"


# -- inspect ---------------------------------------------------------------------------------


def test_inspect_lists_user_variables_with_types_and_summaries(runtime: Runtime):
    proposal = runtime.propose("inspect", {})
    assert proposal.ok and proposal.kind == "read" and not proposal.needs_approval
    lines = (proposal.output or "").splitlines()
    assert lines[0] == "6 variables in the kernel"
    by_name = {line.split(" ", 1)[0]: line for line in lines[1:]}
    assert by_name["df"] == (
        f"df (pandas.DataFrame): 4 rows x 3 columns: region {TEXT}, amount float64, count int64"
    )
    assert by_name["arr"] == "arr (numpy.ndarray): shape (3, 4), dtype float64"
    assert by_name["names"] == "names (list): 3 items: ['ada', 'grace', <Recorder object>]"
    assert by_name["config"] == "config (dict): 2 items: {'lr': 0.1, 'layers': [64, 32]}"
    assert by_name["title"] == "title (str): 16 characters: 'quarterly report'"
    assert by_name["obj"] == "obj (Recorder): <Recorder object>"
    assert by_name["functions:"] == "functions: add"
    assert by_name["classes:"] == "classes: Recorder"
    # Modules, names starting with _ and the kernel's own names are left out.
    assert not {"np", "_private", "In"} & set(by_name)
    assert Recorder.calls == []


def test_inspect_one_data_frame_in_detail(runtime: Runtime):
    out = runtime.call("inspect", {"name": "df"}).output
    assert out.splitlines()[:5] == [
        f"df (pandas.DataFrame): 4 rows x 3 columns: region {TEXT}, amount float64, count int64",
        "columns (dtype, nulls):",
        f"  region: {TEXT}, 1 null",
        "  amount: float64, 1 null",
        "  count: int64, 0 nulls",
    ]
    assert "head(5):" in out
    assert "north" in out and "10.50" in out and "NaN" in out


def test_inspect_an_array_and_an_object_in_detail(runtime: Runtime):
    out = runtime.call("inspect", {"name": "arr"}).output
    assert "size 12, 2 dimensions" in out
    assert "first values: [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]" in out
    assert "min 0.0, max 11.0" in out
    out = runtime.call("inspect", {"name": "obj"}).output
    assert out.splitlines() == [
        "obj (Recorder): <Recorder object>",
        "attributes:",
        "  size (int): 3",
    ]
    out = runtime.call("inspect", {"name": "add"}).output
    assert out.splitlines()[0] == "add (function): <lambda>(a, b=...)"
    assert Recorder.calls == []


def test_inspect_never_runs_user_code(tmp_path: Path):
    """Not a __repr__, __str__, __len__, __iter__, __eq__, __getattr__ or property: not in a
    list, a dict key or value, a data frame cell, index or column name, an object array, or an
    attribute of another object."""
    Recorder.calls = []

    class Holder:
        def __init__(self) -> None:
            self.inner = Recorder()
            self.items = [Recorder()]

    key = Recorder()
    space = DictNamespace(
        {
            "r": Recorder(),
            "in_list": [Recorder(), (Recorder(),)],
            "in_dict": {key: Recorder()},
            "in_set": {key},
            "cells": pd.DataFrame({"thing": [Recorder(), 1]}),
            "labels": pd.DataFrame({"a": [1, 2]}, index=[Recorder(), Recorder()]),
            "columns": pd.DataFrame([[1]], columns=[Recorder()]),
            "series": pd.Series([Recorder()]),
            "objects": np.array([Recorder(), Recorder()], dtype=object),
            "holder": Holder(),
            "f": lambda x=Recorder(): x,  # noqa: B008
        }
    )
    runtime = Runtime(tmp_path, kernel_toolset(space))
    Recorder.calls = []  # building the frames and arrays asked the objects for attributes
    outputs = [runtime.call("inspect", {}).output]
    for name in space.values:
        observation = runtime.call("inspect", {"name": name})
        assert observation.ok, observation.output
        outputs.append(observation.output)
    assert Recorder.calls == [], Recorder.calls
    text = "\n".join(outputs)
    assert "Recorder()" not in text and "recorder" not in text
    assert "<Recorder object>" in text


def test_inspect_does_not_import_numpy_or_pandas():
    code = (
        "import sys\n"
        "from grinta_jupyter.tools.inspect import inspect_namespace\n"
        "from grinta_jupyter.tools.kernel import DictNamespace\n"
        "space = DictNamespace({'x': [1, 2], 'o': object(), 's': {1}})\n"
        "print(inspect_namespace(space))\n"
        "print(inspect_namespace(space, 'o'))\n"
        "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.rstrip().endswith("[]"), result.stdout
    assert "o (object): <object object>" in result.stdout


def test_a_missing_name_is_an_error_with_close_names(runtime: Runtime):
    observation = runtime.call("inspect", {"name": "dff"})
    assert not observation.ok and observation.error is not None
    assert observation.error.code == "NAME_NOT_FOUND"
    assert [c.name for c in observation.error.candidates] == ["df"]
    assert "Did you mean df?" in observation.error.message
    expression = runtime.propose("inspect", {"name": "df.columns"})
    assert expression.error is not None and expression.error.code == "INVALID_ARGS"


def test_inspect_output_is_bounded(tmp_path: Path):
    space = DictNamespace(
        {f"v{i}": list(range(1000)) for i in range(500)}
        | {
            "long": "x" * 1_000_000,
            "nested": [[[[[[1]]]]]] * 1000,
            "wide": pd.DataFrame(np.zeros((3, 300)), columns=[f"c{i}" * 30 for i in range(300)]),
            "huge": 10**100_000,
        }
    )
    runtime = Runtime(tmp_path, kernel_toolset(space))
    listing = runtime.call("inspect", {}).output
    lines = listing.splitlines()
    assert len(listing) <= inspect_tool.LIST_CHARS + 100
    assert max(len(line) for line in lines) <= inspect_tool.LINE_CHARS
    assert "more variables not listed" in listing or "output cut" in listing
    for name in ("long", "nested", "wide", "huge", "v1"):
        out = runtime.call("inspect", {"name": name}).output
        assert len(out) <= inspect_tool.DETAIL_CHARS + 100, name
        assert max(len(line) for line in out.splitlines()) <= inspect_tool.DETAIL_CHARS // 2 + 10
    assert "more columns" in runtime.call("inspect", {"name": "wide"}).output
    assert "<int of" in runtime.call("inspect", {"name": "huge"}).output


def test_library_values_are_known_by_class_and_read_without_their_subclass_code():
    """numpy and pandas values are recognised by subclassing the loaded libraries' classes, and
    read through plain views: a subclass's property, repr or a frame's attrs never run."""
    Recorder.calls = []
    frame = pd.DataFrame({"x": [1, 2]})
    frame.attrs["source"] = Recorder()  # pandas deep-copies attrs into derived frames
    space = DictNamespace(
        {
            "marked": np.arange(4.0).view(Marked),
            "frame": frame,
            "series": pd.Series([1.5], name="v").set_flags(allows_duplicate_labels=True),
            "when": pd.Timestamp("2024-01-01", tz="UTC"),
            "record": np.zeros(1, dtype=[("thing", object)])[0],
            "interval": pd.Interval(1, 2),
        }
    )
    space.values["series"].attrs["source"] = Recorder()
    lines = inspect_tool.inspect_namespace(space).splitlines()
    assert "marked (Marked): shape (4,), dtype float64" in lines
    assert "frame (pandas.DataFrame): 2 rows x 1 column: x int64" in lines
    assert "when (pandas.Timestamp): Timestamp('2024-01-01 00:00:00+0000', tz='UTC')" in lines
    assert "record (numpy.void): record (0,), dtype [('thing', 'O')]" in lines
    assert "interval (pandas.Interval): Interval(1, 2, closed='right')" in lines
    for name in space.values:
        assert "cannot" not in inspect_tool.inspect_namespace(space, name), name
    assert "min 0.0, max 3.0" in inspect_tool.inspect_namespace(space, "marked")
    assert Recorder.calls == [], Recorder.calls


def test_datetimes_functions_and_big_numbers_are_shown_by_parts_built_here():
    import fractions
    import zoneinfo

    Recorder.calls = []

    class Shape:
        def area(self, scale, /, exact=True, *more, unit, digits=2, **options):  # type: ignore[no-untyped-def]
            return 0

    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        return None

    class Posing:
        @property  # type: ignore[misc]
        def __class__(self) -> type:  # noqa: PLW3201
            Recorder.calls.append("__class__")
            return int

    wrapper.__wrapped__ = Recorder()  # type: ignore[attr-defined]
    wrapper.__signature__ = Recorder()  # type: ignore[attr-defined]
    space = DictNamespace(
        {
            "mine": datetime.datetime(2024, 5, 1, 9, 30, tzinfo=Zone()),
            "paris": datetime.datetime(2024, 5, 1, tzinfo=zoneinfo.ZoneInfo("UTC")),
            "cut": slice(Recorder(), None),
            "third": fractions.Fraction(10**400, 3),
            "steps": range(0, 10**300, 7),
            "area": Shape().area,
            "wrapper": wrapper,
            "builtin": divmod,
            "sizeof": Posing().__sizeof__,  # signature() would ask isinstance(its __self__)
        }
    )
    lines = inspect_tool.inspect_namespace(space).splitlines()
    assert (
        "mine (datetime.datetime): datetime.datetime(2024, 5, 1, 9, 30, tzinfo=<Zone object>)"
        in lines
    )
    assert "paris (datetime.datetime): " + repr(space.values["paris"]) in lines
    assert "cut (slice): slice(<Recorder object>, None, None)" in lines
    assert "third (fractions.Fraction): Fraction(<int of 1329 bits>, 3)" in lines
    assert "steps (range): range(0, <int of 997 bits>, 7)" in lines
    assert "functions: area, wrapper, builtin, sizeof" in lines
    assert inspect_tool.inspect_namespace(space, "area").splitlines()[0] == (
        "area (function): area(scale, exact=..., *more, unit, digits=..., **options)"
    )
    assert inspect_tool.inspect_namespace(space, "wrapper").splitlines()[0] == (
        "wrapper (function): wrapper(*args, **kwargs)"
    )
    assert inspect_tool.inspect_namespace(space, "builtin").startswith(
        "builtin (function): divmod(x, y)"
    )
    assert inspect_tool.inspect_namespace(space, "sizeof").startswith(
        "sizeof (function): __sizeof__(...)"
    )
    assert Recorder.calls == [], Recorder.calls


def test_a_value_that_cannot_be_summarised_costs_only_its_own_line():
    unfinished = pd.DataFrame.__new__(pd.DataFrame)  # never initialised: no data at all
    space = DictNamespace({"unfinished": unfinished, "total": 41, 7: "a key that is no name"})
    lines = inspect_tool.inspect_namespace(space).splitlines()
    assert lines[0] == "2 variables in the kernel"
    assert lines[1].startswith("unfinished (pandas.DataFrame): <cannot be summarised: ")
    assert lines[2] == "total (int): 41"
    detail = inspect_tool.inspect_namespace(space, "unfinished").splitlines()
    assert detail[1].startswith("(cannot be shown in detail: ")


# -- execute ---------------------------------------------------------------------------------


def test_nothing_runs_at_propose(runtime: Runtime, space: DictNamespace, tmp_path: Path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()\nresult = 42"
    proposal = runtime.propose("execute", {"code": code})
    assert proposal.ok and isinstance(proposal, CommandProposal) and proposal.needs_approval
    assert proposal.command == code and proposal.summary.startswith("execute: open(")
    assert not marker.exists() and "result" not in space.values
    observation = runtime.commit(proposal)
    assert observation.ok, observation.output
    assert marker.exists() and space.values["result"] == 42


def test_a_syntax_error_is_refused_before_anything_runs(runtime: Runtime):
    proposal = runtime.propose("execute", {"code": "x = 1\n%timeit x"})
    assert proposal.error is not None and proposal.error.code == "SYNTAX_ERROR"
    assert proposal.error.line == 2 and "no %magics" in proposal.error.message
    empty = runtime.propose("execute", {"code": "  \n"})
    assert empty.error is not None and empty.error.code == "INVALID_ARGS"


def test_stdout_stderr_and_the_last_value_come_back(runtime: Runtime, space: DictNamespace):
    code = (
        "import sys\n"
        "print('hello from the kernel')\n"
        "print('a warning', file=sys.stderr)\n"
        "total = df['amount'].sum()\n"
        "total * 2"
    )
    observation = runtime.call("execute", {"code": code})
    assert observation.ok and observation.error is None
    assert observation.output.splitlines()[1:] == [
        "[stdout]",
        "hello from the kernel",
        "[stderr]",
        "a warning",
        "[value]",
        "np.float64(41.5)",
    ]
    assert space.values["total"] == 20.75
    assert not isinstance(sys.stdout, Routed)  # the streams are put back
    quiet = runtime.call("execute", {"code": "x = None\nx"})
    assert quiet.output.startswith("ok (") and "[value]" not in quiet.output


def test_only_the_executing_threads_output_is_captured(capsys: pytest.CaptureFixture[str]):
    """Another thread printing while code runs keeps its output where it was going."""
    started, stop = threading.Event(), threading.Event()

    def chatter() -> None:
        started.set()
        while not stop.is_set():
            print("from elsewhere")
            time.sleep(0.01)

    other = threading.Thread(target=chatter)
    other.start()
    started.wait()
    try:
        observation = execute_tool.run_code(
            {},
            "import time\nfor i in range(5):\n    print('mine', i)\n    time.sleep(0.02)",
            30,
            Settings(),
        )
    finally:
        stop.set()
        other.join()
    assert "from elsewhere" not in observation.output
    assert observation.output.count("mine") == 5
    assert "from elsewhere" in capsys.readouterr().out


def test_an_exception_comes_back_with_its_traceback_in_the_code(runtime: Runtime):
    code = "def ratio(a, b):\n    return a / b\n\nx = 1\nprint('before')\nratio(x, 0)\n"
    observation = runtime.call("execute", {"code": code})
    assert not observation.ok and observation.error is not None
    assert observation.error.code == "EXECUTE_FAILED"
    assert observation.error.message == "ZeroDivisionError: division by zero (line 2)"
    out = observation.output
    assert "line 6, in <module>\n    ratio(x, 0)" in out
    assert "line 2, in ratio\n    return a / b" in out
    assert "[stdout]\nbefore" in out
    assert "grinta_jupyter" not in out  # the runner's own frames are not shown
    exited = runtime.call("execute", {"code": "raise SystemExit(3)"})
    assert exited.error is not None and exited.error.message.startswith("SystemExit: 3")


def test_exit_in_executed_code_ends_the_code_and_elsewhere_asks_the_shell():
    """IPythonNamespace makes the shell's ask_exit (what IPython's exit() and quit() call) raise
    SystemExit in code execute runs, and only there; a second namespace does not wrap it twice."""

    class Shell:
        def __init__(self) -> None:
            self.user_ns: dict[str, object] = {}
            self.asked: list[str] = []

        def ask_exit(self) -> None:
            self.asked.append(threading.current_thread().name)

    shell = Shell()
    space = IPythonNamespace(shell).namespace()
    IPythonNamespace(shell)
    space["bye"] = lambda: shell.ask_exit()  # as IPython's exit object calls it
    observation = execute_tool.run_code(
        space, "print('before')\nbye()\nprint('after')", 30, Settings()
    )
    assert observation.error is not None and observation.error.code == "EXECUTE_FAILED"
    assert observation.error.message.startswith("SystemExit: exit() here ends the executed code")
    assert "before" in observation.output and "after" not in observation.output
    assert shell.asked == []
    code = "import threading\nt = threading.Thread(target=bye, name='started')\nt.start()\nt.join()"
    assert execute_tool.run_code(space, code, 30, Settings()).ok
    shell.ask_exit()  # a cell's exit() still ends the kernel
    # A thread the code started outlives it: its exit() ends that thread only (stop 32; it
    # asked the shell, and the kernel ended after the current cell).
    assert shell.asked == [threading.current_thread().name]


def test_the_time_limit_interrupts_a_python_loop(runtime: Runtime, space: DictNamespace):
    code = "n = 0\nwhile True:\n    n += 1"
    observation = runtime.call("execute", {"code": code, "timeout": 0.5})
    assert not observation.ok and observation.error is not None
    assert observation.error.code == "COMMAND_TIMEOUT"
    assert "interrupted" in observation.error.message
    assert space.values["n"] > 0
    # The namespace and the tool still work.
    after = runtime.call("execute", {"code": "n > 0"})
    assert after.ok and after.output.endswith("[value]\nTrue")


def test_the_sessions_stop_interrupts_running_code(runtime: Runtime):
    proposal = runtime.propose("execute", {"code": "print('started')\nwhile True:\n    pass"})
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    observation = runtime.commit(proposal, cancel=cancel)
    timer.join()
    assert observation.error is not None and observation.error.code == "COMMAND_FAILED"
    assert "stopped" in observation.error.message
    assert "[stdout]\nstarted" in observation.output


def test_stopping_the_session_interrupts_its_execute(tmp_path: Path):
    import asyncio

    from grinta_jupyter.agent import Session
    from grinta_jupyter.agent.models import ScriptedModel, call, reply

    space = DictNamespace({"started": threading.Event()})
    model = ScriptedModel([reply("", call("execute", code="started.set()\nwhile True:\n    pass"))])
    session = Session(
        "spin", model=model, root=tmp_path, toolset=kernel_toolset(space), policy="auto"
    )

    async def go() -> None:
        work = asyncio.ensure_future(session.run())
        while not space.values["started"].is_set():
            await asyncio.sleep(0.02)  # the loop turns while the code runs
        session.stop("stopped by the user")
        await work

    asyncio.run(go())
    (step,) = session.steps
    assert step.observation is not None and step.observation.error is not None
    assert step.observation.error.code == "COMMAND_FAILED" and "Stop" in step.observation.output
    assert session.done


def test_code_inside_a_c_call_stops_when_the_call_returns():
    """time.sleep cannot be interrupted: the tool says so and returns; the thread raises before
    its next line once the sleep ends, so nothing after it runs."""
    space: dict[str, object] = {"marks": []}
    code = "import time\nmarks.append('before')\ntime.sleep(1.5)\nmarks.append('after')"
    observation = execute_tool.run_code(space, code, 0.2, Settings(), grace=0.2)
    assert observation.error is not None and observation.error.code == "COMMAND_TIMEOUT"
    assert "cannot be interrupted" in observation.error.message
    assert space["marks"] == ["before"]
    deadline = time.monotonic() + 30
    while any(t.name == "grinta-execute" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the interrupted thread never ended"
        time.sleep(0.05)
    assert space["marks"] == ["before"]


def test_a_new_figure_is_a_rich_output_and_the_model_gets_a_description(runtime: Runtime):
    code = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 3, 2])\n"
    before = plt.get_fignums()
    observation = runtime.call("execute", {"code": code})
    assert observation.ok, observation.output
    assert "[figure " in observation.output and "image/png 640x480]" in observation.output
    (bundle,) = observation.outputs
    assert bundle["text/plain"].endswith("image/png 640x480]")
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert plt.get_fignums() == before  # captured, then closed like the inline backend does


def test_a_final_value_with_rich_representations(runtime: Runtime):
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    )
    runtime.call(
        "execute",
        {
            "code": "class Chart:\n"
            f"    def _repr_png_(self):\n        return {png!r}\n"
            "    def _repr_html_(self):\n        return '<b>chart</b>'\n"
            "    def __repr__(self):\n        return 'Chart()'\n"
        },
    )
    observation = runtime.call("execute", {"code": "Chart()"})
    assert observation.output.splitlines()[1:] == [
        "[value]",
        "Chart()",
        "[value: image/png 1x1]",
        "[value: text/html, 12 characters]",
    ]
    assert observation.outputs[0]["image/png"] == base64.b64encode(png).decode()
    assert observation.outputs[1]["text/html"] == "<b>chart</b>"


def test_output_is_bounded(runtime: Runtime):
    settings = Settings()
    code = "for i in range(200_000):\n    print('line', i)\n'v' * 1_000_000"
    observation = runtime.call("execute", {"code": code})
    assert len(observation.output) <= settings.run_output_chars + 200
    assert "line 0" in observation.output and "line 199999" in observation.output
    assert "omitted" in observation.output


# -- where the outputs go: the event log and the step card --------------------------------------


def _execute_step(outputs: tuple[dict[str, str], ...]) -> Step:
    call = ToolCall("c1", "execute", json.dumps({"code": "plot()"}))
    proposal = CommandProposal("execute", {"code": "plot()"}, command="plot()", timeout=5)
    text = "ok (0.1s)\n" + "\n".join(b["text/plain"] for b in outputs)
    observation = Observation(True, text, None, proposal.id, outputs=outputs)
    return Step(1, call, proposal, decision="approve", observation=observation)


def test_the_step_card_carries_images_but_no_html():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 30).decode()
    outputs = (
        {"image/png": png, "text/plain": "[figure 1: image/png 640x480]"},
        {
            "text/html": "<script>alert(1)</script>",
            "text/plain": "[value: text/html, 25 characters]",
        },
        {"image/png": "A" * 2_000_001, "text/plain": "[figure 2: image/png 9000x9000]"},
    )
    bundle = step_bundle(_execute_step(outputs), "s1")
    shown = bundle[STEP_MIME]["observation"]["outputs"]
    assert shown == [
        {"image/png": png, "text/plain": "[figure 1: image/png 640x480]"},
        {"text/plain": "[value: text/html, 25 characters]"},
        {"text/plain": "[figure 2: image/png 9000x9000]"},
    ]
    assert "<script>" not in bundle["text/html"] and png not in bundle["text/html"]
    assert "[figure 1: image/png 640x480]" in bundle["text/plain"]


def test_the_event_log_keeps_outputs_bounded():
    small = {"image/png": "A" * 100, "text/plain": "[figure 1: image/png 10x10]"}
    big = {"image/png": "A" * (EVENT_OUTPUT_CHARS + 1), "text/plain": "[figure 2: image/png 1x1]"}
    event = Observed(call_id="c", tool="execute", ok=True, output="ok", outputs=[small, big] * 10)
    assert len(event.outputs) == 8
    assert event.outputs[0] == small
    assert event.outputs[1] == {
        "text/plain": "[figure 2: image/png 1x1] (data not kept in the log)"
    }
    again = parse_event(event.model_dump_json())
    assert isinstance(again, Observed) and again.outputs == event.outputs
