"""Attacks on the kernel tools (tools/inspect.py, tools/execute.py): hostile values and careless code.

``inspect`` promises to never run the user's code beyond reading attributes, to stay bounded, and
to answer whatever the namespace holds; ``execute`` promises bounded output, a time limit and a
Stop that always end the code or report it, nothing run at propose time, and outputs that do not
mix. Each hostile value records any hook it runs; a test asserts no record was made. Broken
promises are ``xfail(strict=True)`` with the bug in the reason (the fix is not this file's).
"""

from __future__ import annotations

import ctypes
import datetime
import fractions
import os
import re
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest
from jupyter_client.manager import start_new_kernel

from grinta_jupyter.tools import execute as execute_tool
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.capture import Routed
from grinta_jupyter.tools.facade import Runtime
from grinta_jupyter.tools.inspect import DETAIL_CHARS, LIST_CHARS, inspect_namespace
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset

CALLS: list[str] = []


def record(what: str) -> None:
    CALLS.append(what)


@pytest.fixture(autouse=True)
def _no_calls() -> Iterator[None]:
    CALLS.clear()
    yield
    CALLS.clear()


# -- hostile values (classes "defined in the notebook") -------------------------------------------


class Loud:
    """Every hook that turns an object into text, or copies it, records the call."""

    __module__ = "__main__"

    def __repr__(self) -> str:
        record("__repr__")
        return "Loud()"

    def __str__(self) -> str:
        record("__str__")
        return "loud"

    def __format__(self, spec: str) -> str:
        record("__format__")
        return "loud"

    def __deepcopy__(self, memo: Any) -> Loud:
        record("__deepcopy__")
        return self

    def __len__(self) -> int:
        record("__len__")
        return 1

    def __getattr__(self, name: str) -> Any:
        record(f"__getattr__ {name}")
        raise AttributeError(name)


class Intercepting:
    __module__ = "__main__"

    def __getattribute__(self, name: str) -> Any:
        record(f"__getattribute__ {name}")
        return object.__getattribute__(self, name)


class Disguised:
    __module__ = "__main__"

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: PLW3201
        record("__class__")
        return int


class LoudMeta(type):
    """A metaclass whose hooks record: on the class itself and on its instances' type."""

    def __getattr__(cls, name: str) -> Any:
        record(f"meta __getattr__ {name}")
        raise AttributeError(name)

    def __repr__(cls) -> str:
        record("meta __repr__")
        return "LoudClass"

    def __len__(cls) -> int:
        record("meta __len__")
        return 0


class LoudClass(metaclass=LoudMeta):
    __module__ = "__main__"
    value = 1


class HashingMeta(type):
    def __hash__(cls) -> int:
        record("meta __hash__")
        return 1

    def __eq__(cls, other: object) -> bool:
        record("meta __eq__")
        return cls is other


class Hashed(metaclass=HashingMeta):
    __module__ = "__main__"


class ComparingMeta(type):
    """``__eq__`` without ``__hash__``: its classes are unhashable."""

    def __eq__(cls, other: object) -> bool:
        return cls is other

    __hash__ = None  # type: ignore[assignment]


class Unhashable(metaclass=ComparingMeta):
    __module__ = "__main__"


class Recording:
    """A data descriptor on the class: reading it through an instance records."""

    def __get__(self, obj: object, owner: type | None = None) -> int:
        record("descriptor __get__")
        return 1

    def __set__(self, obj: object, value: object) -> None:
        record("descriptor __set__")


class WithDescriptor:
    __module__ = "__main__"
    field = Recording()

    def __init__(self) -> None:
        self.plain = 2


class Slotted:
    __module__ = "__main__"
    __slots__ = ("a", "b")

    @property
    def derived(self) -> int:
        record("property")
        return 0


class HostileDict(dict[str, int]):
    __module__ = "__main__"

    def __iter__(self) -> Iterator[str]:
        record("dict __iter__")
        return iter(())

    def keys(self) -> Any:
        record("dict keys")
        return []

    def __len__(self) -> int:
        record("dict __len__")
        return 0


class LazyModule(types.ModuleType):
    """A lazy module proxy: any attribute imports something."""

    def __getattr__(self, name: str) -> Any:
        record(f"lazy import {name}")
        raise AttributeError(name)


class LoudFrame(pd.DataFrame):  # type: ignore[misc]
    __module__ = "__main__"

    def __getattr__(self, name: str) -> Any:
        record(f"frame __getattr__ {name}")
        return super().__getattr__(name)

    def __repr__(self) -> str:
        record("frame __repr__")
        return "LoudFrame"


class Zone(datetime.tzinfo):
    __module__ = "__main__"

    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        return datetime.timedelta(0)

    def dst(self, dt: datetime.datetime | None) -> datetime.timedelta:
        return datetime.timedelta(0)

    def tzname(self, dt: datetime.datetime | None) -> str:
        record("tzname")
        return "Z"

    def __repr__(self) -> str:
        record("tzinfo __repr__")
        return "Zone()"


class Count(int):
    __module__ = "__main__"

    def __repr__(self) -> str:
        record("int subclass __repr__")
        return "Count"

    def __str__(self) -> str:
        record("int subclass __str__")
        return "Count"


class FakeNumpy:
    """Claims to be numpy's: ``__module__`` is the class's own to set."""

    __module__ = "numpy"

    def __repr__(self) -> str:
        record("fake numpy __repr__")
        return "array()"


class FakeFrame:
    __module__ = "pandas.core.frame"
    __qualname__ = "DataFrame"

    @property
    def shape(self) -> tuple[int, int]:
        record("fake frame shape")
        return (1, 1)


def _generator() -> Iterator[int]:
    record("generator advanced")
    yield 1


def _recursive() -> list[Any]:
    a: list[Any] = [1]
    a.append(a)
    d: dict[str, Any] = {}
    d["self"] = d
    a.append(d)
    return a


def _frame_with_hostile_labels() -> pd.DataFrame:
    frame = pd.DataFrame({"a": [Intercepting(), Disguised(), 3]})
    frame.index = pd.Index([Loud(), Intercepting(), Disguised()], dtype=object)
    frame.columns = pd.Index([Loud()], dtype=object)
    return frame


def _with_key(key: object) -> object:
    class Plain:
        __module__ = "__main__"

    holder = Plain()
    holder.__dict__[key] = 1  # type: ignore[index]
    return holder


def _attrs_frame() -> pd.DataFrame:
    frame = pd.DataFrame({"a": [1, 2]})
    frame.attrs["source"] = Loud()  # pandas deep-copies attrs into every derived frame
    return frame


def _record_with_object() -> Any:
    rows = np.zeros(1, dtype=[("thing", object)])
    rows[0]["thing"] = Loud()
    return rows[0]


def _wrapped_function() -> Callable[[], None]:
    def wrapper() -> None:
        pass

    wrapper.__wrapped__ = Loud()  # type: ignore[attr-defined]
    return wrapper


def _builders() -> dict[str, Callable[[], object]]:
    """Hostile values inspect handles without running their code (these pass)."""
    return {
        "getattribute": Intercepting,
        "class_property": Disguised,
        "metaclass_hooks_on_the_class": lambda: LoudClass,
        "metaclass_hooks_on_an_instance": LoudClass,
        "descriptor_on_the_class": WithDescriptor,
        "slots": Slotted,
        "weakref_proxy": lambda: weakref.proxy(_KEEP[0]),
        "ctypes_value": lambda: ctypes.c_int(5),
        "ctypes_array": lambda: (ctypes.c_char * 8)(),
        "object_array": lambda: np.array([Loud(), Intercepting(), Disguised()], dtype=object),
        "frame_with_hostile_labels": _frame_with_hostile_labels,
        "frame_subclass_with_getattr": lambda: LoudFrame({"a": [1, 2]}),
        "dict_subclass": lambda: HostileDict(a=1),
        "dict_of_hostile_keys": lambda: {Intercepting(): Loud(), Disguised(): 1},
        "recursive_containers": _recursive,
        "million_items": lambda: list(range(1_000_000)),
        "huge_int": lambda: 10**200_000,
        "bytes": lambda: b"\x00\xff" * 1_000_000,
        "generator": _generator,
        "lazy_module": lambda: LazyModule("lazy"),
        "namespace_with_object_key": lambda: types.SimpleNamespace(x=Loud()),
        "deque_of_hostile": lambda: __import__("collections").deque([Loud()] * 100),
        "series_named_by_hostile": lambda: pd.Series([1], name=Loud()),
        "categorical_of_hostile": lambda: pd.Series(pd.Categorical([Intercepting()] * 3)),
    }


_KEEP: list[object] = [Loud()]


@pytest.mark.parametrize("case", list(_builders()))
def test_inspect_runs_no_user_code_for_hostile_values(case: str) -> None:
    value = _builders()[case]()
    CALLS.clear()  # building the value may ask it things
    space = DictNamespace({case: value, "other": 1})
    listing = inspect_namespace(space)
    detail = inspect_namespace(space, case)
    assert CALLS == [], CALLS
    assert len(listing) <= LIST_CHARS + 100 and len(detail) <= DETAIL_CHARS + 100
    assert "Loud()" not in detail and "loud" not in detail.replace("Loud", "")


def _broken_promises() -> list[Any]:
    """Values whose inspection ran user code (each a bug, fixed as its text says)."""
    cases: list[tuple[str, Callable[[], object], str]] = [
        (
            "metaclass_hash",
            Hashed,
            "`cls in _SCALARS`/`_SEQUENCES.get(cls)` hash the value's type, which runs its "
            "metaclass's __hash__/__eq__; look types up by identity (a dict keyed by id(cls), or "
            "`any(cls is t for t in ...)`)",
        ),
        (
            "datetime_with_user_tzinfo",
            lambda: datetime.datetime(2024, 1, 1, tzinfo=Zone()),
            "datetime/time are in _SCALARS and shown by repr(), which calls repr(tzinfo); show "
            "them only when tzinfo is None or a library zone (datetime.timezone, zoneinfo), "
            "else isoformat-free fields built here",
        ),
        (
            "time_with_user_tzinfo",
            lambda: datetime.time(1, tzinfo=Zone()),
            "as for datetime: repr() calls the user's tzinfo __repr__",
        ),
        (
            "slice_of_hostile",
            lambda: slice(Loud(), None),
            "slice is in _SCALARS and its repr() calls repr() on start/stop/step; build it here "
            "with bounded_repr of the three fields",
        ),
        (
            "class_claiming_numpy",
            FakeNumpy,
            "_library trusts __module__, which a class sets freely; recognise numpy and pandas "
            "classes by identity or subclass of the loaded module's classes "
            "(numpy.generic, numpy.ndarray, pandas.DataFrame, ...)",
        ),
        (
            "class_claiming_pandas_frame",
            FakeFrame,
            "_library trusts __module__/__qualname__: a fake DataFrame's .shape property runs "
            "(and the detail then raises INTERNAL_ERROR); check `cls is pandas.DataFrame` or a "
            "subclass of it",
        ),
        (
            "instance_dict_with_object_key",
            lambda: _with_key(Loud()),
            "_attributes formats each __dict__ key with an f-string, calling the key's "
            "__format__/__str__; show only str keys (type(key) is str), others by bounded_repr",
        ),
        (
            "frame_with_attrs",
            _attrs_frame,
            "pandas deep-copies DataFrame.attrs in every derived frame (.iloc, .head, .isna, "
            ".copy), calling the attrs values' __deepcopy__; start from "
            "`pandas.DataFrame(frame, copy=False)` (no attrs, no copy) before any operation, "
            "and `pandas.Series(series, copy=False)` for a series",
        ),
        (
            "numpy_record_with_object_field",
            _record_with_object,
            "a numpy scalar (np.void) is shown by its repr, which reprs object fields; show "
            "np.void by its dtype and bounded_repr of `value.tolist()` (or only numpy.number / "
            "numpy.bool_ / datetime64 scalars by repr)",
        ),
        (
            "function_with_hostile_wrapped",
            _wrapped_function,
            "inspect.signature follows __wrapped__ and formats the object into its error "
            "message (repr); call signature(function, follow_wrapped=False)",
        ),
        (
            "pandas_interval_of_int_subclass",
            lambda: pd.Interval(Count(1), Count(2)),
            "pandas scalars are shown by repr, and an Interval's repr formats its endpoints "
            "(user subclasses); show Interval by bounded_repr of left/right when their types "
            "are not exact builtins",
        ),
    ]
    return [pytest.param(name, build, id=name) for name, build, _fix in cases]


@pytest.mark.parametrize(("case", "build"), _broken_promises())
def test_inspect_runs_no_user_code_broken(case: str, build: Callable[[], object]) -> None:
    value = build()
    CALLS.clear()
    space = DictNamespace({case: value})
    outputs = []
    for name in (None, case):
        try:
            outputs.append(inspect_namespace(space, name))
        except Exception as exc:  # a failure is a finding too, but the calls are the point
            outputs.append(repr(exc))
    assert CALLS == [], CALLS


def test_a_generator_is_not_advanced_and_a_lazy_module_not_loaded() -> None:
    gen = _generator()
    lazy = LazyModule("lazy")
    space = DictNamespace({"gen": gen, "lazy": lazy})
    inspect_namespace(space)
    assert "lazy" in inspect_namespace(space, "lazy")
    inspect_namespace(space, "gen")
    assert CALLS == []
    assert next(gen) == 1 and CALLS == ["generator advanced"], "the generator was still fresh"


def test_one_odd_value_does_not_break_the_listing(tmp_path: Path) -> None:
    values: dict[Any, object] = {
        "total": 41,
        "odd_type": Unhashable(),
        "big_fraction": fractions.Fraction(10**5000, 3),
        "big_range": range(10**5000),
        1: "a non-str key, as `globals()[1] = ...` makes",
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    observation = runtime.call("inspect", {})
    assert observation.ok, observation.output
    assert "total (int): 41" in observation.output
    for name in ("odd_type", "big_fraction", "big_range"):
        assert name in observation.output
        assert runtime.call("inspect", {"name": name}).ok, name


# -- execute ----------------------------------------------------------------------------------


def test_nothing_runs_at_propose_even_code_that_would_end_the_process(tmp_path: Path) -> None:
    space = DictNamespace({})
    runtime = Runtime(tmp_path, kernel_toolset(space))
    for code in (
        "import os\nos._exit(1)",
        "raise SystemExit(1)",
        "while True:\n    pass",
        "@__import__('os')._exit\ndef f(): pass",
        "class C(default=__import__('os')._exit(1)):\n    pass",
    ):
        proposal = runtime.propose("execute", {"code": code})
        assert proposal.ok and proposal.needs_approval, code
    assert space.values == {}


def test_code_that_replaces_sys_stdout_does_not_break_later_captures() -> None:
    original = sys.stdout
    space: dict[str, Any] = {}
    try:
        first = execute_tool.run_code(
            space, "import io, sys\nsys.stdout = io.StringIO()\nprint('kept')", 30, Settings()
        )
        assert first.ok, first.output
        assert "[stdout]" not in first.output  # the user's own stream took the print
        second = execute_tool.run_code(space, "print('seen')", 30, Settings())
        assert "[stdout]\nseen" in second.output
        assert space["sys"].stdout.getvalue() == "kept\n"
    finally:
        sys.stdout = original


def test_a_hundred_megabytes_of_output_come_back_bounded() -> None:
    settings = Settings()
    code = "import sys\nchunk = 'x' * 1_000_000 + '\\n'\nfor _ in range(100):\n    sys.stdout.write(chunk)\nprint('the end')"
    observation = execute_tool.run_code({}, code, 60, settings)
    assert observation.ok, observation.output[:300]
    assert len(observation.output) <= settings.run_output_chars + 200
    assert "the end" in observation.output and "omitted" in observation.output


def test_threads_the_code_starts_do_not_write_into_its_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    space: dict[str, Any] = {}
    code = (
        "import threading\n"
        "go = threading.Event()\n"
        "def chatter():\n"
        "    go.wait(10)\n"
        "    print('from a thread')\n"
        "worker = threading.Thread(target=chatter)\n"
        "worker.start()\n"
        "print('mine')\n"
        "go.set()\n"
        "worker.join(10)\n"
    )
    observation = execute_tool.run_code(space, code, 30, Settings())
    assert observation.ok, observation.output
    assert "[stdout]\nmine" in observation.output
    assert "from a thread" not in observation.output
    assert "from a thread" in capsys.readouterr().out


def test_concurrent_executes_do_not_mix_outputs() -> None:
    results: dict[str, str] = {}
    barrier = threading.Barrier(2)

    def one(tag: str) -> None:
        code = f"for i in range(300):\n    print('{tag}', i)\n    sys.stderr.write('{tag}-err\\n')"
        barrier.wait()
        results[tag] = execute_tool.run_code({"sys": sys}, code, 60, Settings()).output

    threads = [threading.Thread(target=one, args=(tag,)) for tag in ("alpha", "omega")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["alpha"].count("alpha ") == 300 and "omega" not in results["alpha"]
    assert results["omega"].count("omega ") == 300 and "alpha" not in results["omega"]
    assert not isinstance(sys.stdout, Routed)
    assert not isinstance(sys.stderr, Routed)


def test_code_that_swallows_the_interrupt_is_reported_and_the_tool_returns() -> None:
    space: dict[str, Any] = {"stop": False}
    code = (
        "while not stop:\n"
        "    try:\n"
        "        while not stop:\n"
        "            pass\n"
        "    except BaseException:\n"
        "        pass\n"
    )
    try:
        observation = execute_tool.run_code(space, code, 0.3, Settings(), grace=0.3)
        assert observation.error is not None and observation.error.code == "COMMAND_TIMEOUT"
    finally:
        space["stop"] = True  # the documented limit: such code is not stopped; end it here


def test_the_report_for_swallowed_interrupts_says_so() -> None:
    space: dict[str, Any] = {"stop": False}
    code = "while not stop:\n    try:\n        while not stop:\n            pass\n    except BaseException:\n        pass"
    try:
        observation = execute_tool.run_code(space, code, 0.3, Settings(), grace=0.3)
    finally:
        space["stop"] = True
    assert observation.error is not None and "BaseException" in observation.error.message


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_del_raising_recursion_and_deleted_names_are_contained(tmp_path: Path) -> None:
    space = DictNamespace({"keep": 1})
    runtime = Runtime(tmp_path, kernel_toolset(space))
    code = "class Bad:\n    def __del__(self):\n        raise ValueError('in del')\nb = Bad()\ndel b\nprint('after')"
    observation = runtime.call("execute", {"code": code})
    assert observation.ok, observation.output
    assert "[stdout]\nafter" in observation.output  # the error went to sys.unraisablehook
    deep = runtime.call("execute", {"code": "def f(n):\n    return f(n + 1)\nf(0)"})
    assert deep.error is not None and deep.error.message.startswith("RecursionError")
    assert len(deep.output) < 4000
    cleared = runtime.call("execute", {"code": "globals().clear()"})
    assert cleared.ok, cleared.output
    assert runtime.call("inspect", {}).ok
    assert runtime.call("execute", {"code": "x = 1\nx + 1"}).output.endswith("[value]\n2")


def test_an_import_that_loops_is_interrupted_and_can_be_imported_later(tmp_path: Path) -> None:
    module = tmp_path / "spinning_module_a2.py"
    module.write_text(
        "import builtins\nwhile not getattr(builtins, 'A2_RELEASE', False):\n    pass\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        observation = execute_tool.run_code({}, "import spinning_module_a2", 0.3, Settings())
        assert observation.error is not None and observation.error.code == "COMMAND_TIMEOUT"
        assert "spinning_module_a2" not in sys.modules
        import builtins

        builtins.A2_RELEASE = True  # type: ignore[attr-defined]
        again = execute_tool.run_code({}, "import spinning_module_a2", 30, Settings())
        assert again.ok, again.output
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("spinning_module_a2", None)
        import builtins

        if hasattr(builtins, "A2_RELEASE"):
            del builtins.A2_RELEASE


@pytest.mark.xfail(
    strict=True,
    reason="limitation (documented in tools/execute.py and docs/notebook.md): one C call that "
    "holds the GIL (regex backtracking, str() of a huge int, sorting a huge list) starves the "
    "waiting thread and the kernel's event loop: neither the time limit nor Stop can end it or "
    "even report it until it returns (the tool then says ok, or reports the time limit after "
    "the call). Cannot be fixed with threads (only a subprocess could be killed; the tools that "
    "match patterns keep `regex` with a timeout)",
)
def test_the_time_limit_reports_a_regex_that_holds_the_gil() -> None:
    # About 1.7 s of backtracking inside one C call (re.match) on a fast machine, against a
    # 0.5 s limit. On a loaded machine the worker thread could reach the call only after the
    # limit, and this test would then pass for that reason (a strict xfail, it failed CI once
    # so): the code notes when it got there, and a run where that was late says nothing
    # either way. What tells the limitation from a fix is when the tool returns: before the
    # call could have ended (the limit and its grace, 0.7 s), or only after it. Whether the
    # tool names the timeout does not tell: the waiting thread may win the interpreter's lock
    # right after the call returns, and stop the code before its next line (it failed CI
    # once so, as an unexpected pass).
    space: dict[str, Any] = {}
    pattern, text = r"(a+)+$", "a" * 25 + "b"
    code = f"import re, time\nentered = time.monotonic()\nre.match({pattern!r}, {text!r})\n"
    sent = time.monotonic()
    observation = execute_tool.run_code(space, code, 0.5, Settings(), grace=0.2)
    returned = time.monotonic()
    assert space.get("entered", sent + 1) - sent < 0.25, "reached the call late: says nothing"
    started = time.monotonic()  # the same call alone, once the tool's thread is done with it
    re.match(pattern, text)
    alone = time.monotonic() - started
    took = returned - space["entered"]
    assert took < 0.6 * alone, (
        f"the tool returned {took:.2f} s in; the call alone takes {alone:.2f} s"
    )
    assert observation.error is not None and observation.error.code == "COMMAND_TIMEOUT"


def test_what_os_exit_does_is_documented() -> None:
    assert "os._exit" in (execute_tool.__doc__ or "")


# -- exit() in a real kernel --------------------------------------------------------------------


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    km, kc = start_new_kernel(
        kernel_name="python3", cwd=str(tmp_path), env={"PATH": os.environ["PATH"]}
    )
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _run(kc: Any, code: str, timeout: float = 60) -> str:
    msg_id = kc.execute(code)
    out: list[str] = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)


def test_exit_in_executed_code_does_not_end_the_kernel(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    _run(
        kc,
        "import asyncio\n"
        "from grinta_jupyter.tools import execute as ex\n"
        "from grinta_jupyter.tools.base import Settings\n"
        "from grinta_jupyter.jupyter.kernel import current_namespace\n"
        "space = current_namespace().namespace()\n",
    )
    out = _run(
        kc,
        "o = await asyncio.to_thread(ex.run_code, space, 'exit()', 10, Settings())\n"
        "print(o.ok, o.error.code if o.error else None)",
    )
    assert out.split() == ["False", "EXECUTE_FAILED"]
    __import__("time").sleep(1.0)  # ExitAutocall stops the loop 0.1 s later
    assert km.is_alive()
    assert _run(kc, "print('still here')", timeout=10).strip() == "still here"
