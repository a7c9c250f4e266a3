"""Attacks on the tools that look into the user's live kernel (tools/values.py, tools/inspect.py,
tools/frames.py, tools/execute.py): values and code that froze the kernel, ran the user's code,
leaked a secret or broke what ``execute`` reports.

Each test's docstring names the attack and the bug it found; hostile values record any hook of
theirs that runs, and a test asserts no record was made.
"""

from __future__ import annotations

import datetime
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest

from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.capture import ROUTER
from grinta_jupyter.tools.execute import VALUE_ITEMS, run_code
from grinta_jupyter.tools.facade import Runtime
from grinta_jupyter.tools.inspect import inspect_namespace
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset

CALLS: list[str] = []


@pytest.fixture(autouse=True)
def _no_calls() -> Iterator[None]:
    CALLS.clear()
    yield
    CALLS.clear()


class Zone(datetime.tzinfo):
    """A time zone defined in the notebook: every hook records."""

    __module__ = "__main__"

    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        CALLS.append("utcoffset")
        return datetime.timedelta(hours=1)

    def dst(self, dt: datetime.datetime | None) -> datetime.timedelta:
        CALLS.append("dst")
        return datetime.timedelta(0)

    def tzname(self, dt: datetime.datetime | None) -> str:
        CALLS.append("tzname")
        return "Z"

    def __repr__(self) -> str:
        CALLS.append("__repr__")
        return "Zone()"

    def __str__(self) -> str:
        CALLS.append("__str__")
        return "Zone()"


class Loud:
    __module__ = "__main__"

    def __repr__(self) -> str:
        CALLS.append("__repr__")
        return "Loud()"


class StandIn(types.ModuleType):
    """What a test double, a lazy importer or a shim may put in ``sys.modules``."""

    def __getattr__(self, name: str) -> Any:
        CALLS.append(f"{self.__name__}.{name}")
        raise AttributeError(name)


def _everything(space: DictNamespace) -> str:
    names = [None, *space.values]
    return "\n".join(inspect_namespace(space, name) for name in names)


# -- inspect ------------------------------------------------------------------------------------


def test_a_broadcast_array_of_ten_trillion_elements_shows_its_first_values() -> None:
    """Attack: a numpy view far larger than memory (``np.broadcast_to``: no data of its own).
    Bug: ``array.ravel()[:10]`` copied the whole view to take 10 values: 3.2 GB and 5.6 s
    for 4*10^8 elements, a kernel killed for lack of memory at 10^9; past what can be
    allocated, MemoryError and no detail at all."""
    view = np.broadcast_to(np.float64(1.5), (10**6, 10**7))
    detail = inspect_namespace(DictNamespace({"view": view}), "view")
    assert "size 10000000000000, 2 dimensions" in detail
    assert "first values: [1.5, 1.5, 1.5" in detail


def test_a_stand_in_module_in_sys_modules_is_not_asked_anything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack: ``sys.modules`` hacks: a ModuleType subclass with ``__getattr__`` as numpy (a
    lazy importer, a test double), a plain module with a module ``__getattr__`` as pandas.
    Bug: every value's description asked them for ``ndarray``, ``sctypeDict``, ``DataFrame``,
    ``Timestamp``, ... with ``getattr``, running their code (a lazy module imports itself)."""
    fake_numpy = StandIn("numpy")
    fake_pandas = types.ModuleType("pandas")

    def module_getattr(name: str) -> Any:
        CALLS.append(f"pandas.{name}")
        raise AttributeError(name)

    fake_pandas.__getattr__ = module_getattr  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "numpy", fake_numpy)
    monkeypatch.setitem(sys.modules, "pandas", fake_pandas)
    space = DictNamespace({"obj": Loud(), "when": datetime.datetime(2024, 1, 1), "n": 3})
    out = _everything(space)
    assert CALLS == [], CALLS
    assert "obj (Loud): <Loud object>" in out


def test_a_time_zone_of_the_users_in_a_frame_runs_none_of_its_code() -> None:
    """Attack: a pandas column and a DatetimeIndex in a ``tzinfo`` defined in the notebook.
    Bug: the dtype was written by pandas as ``datetime64[us, Zone()]``, calling the zone's
    ``__str__`` (summary, column list), and the head's times called its ``utcoffset`` once a
    cell; a zone whose hooks loop held ``inspect`` with them."""
    times = pd.DatetimeIndex([datetime.datetime(2024, 1, 1, tzinfo=Zone())] * 3)
    frame = pd.DataFrame({"when": times, "n": [1, 2, 3]})
    space = DictNamespace({"frame": frame, "times": times, "series": frame["when"]})
    space.values["indexed"] = frame.set_index("when")
    CALLS.clear()
    out = _everything(space)
    assert CALLS == [], CALLS
    assert "when datetime64[us, <Zone object>]" in out
    assert "2023-12-31 23:00:00" in out  # the instants, in UTC


def test_secrets_that_live_only_in_the_kernel_are_redacted(tmp_path: Path) -> None:
    """Attack: a variable holding a password, a dict from a ``.env`` loader, an object's token
    attribute, a key in a provider's format under a plain name, a URL with its password,
    ``os.environ``'s bytes mapping, a data frame cell holding a key, a frame's password column.
    Bug: the session redacts only the environment's secrets; all of these reached the model
    as they were."""

    class Client:
        __module__ = "__main__"

        def __init__(self) -> None:
            self.token = "tok-9f8e7d6c5b4a"
            self.host = "api.example.com"

    key = "sk-proj4abcdefghijKLMNOPQRST0123"
    secrets = {
        "db_password": "Hunter2-correct-horse",
        "config": {"OPENAI_API_KEY": "abcdEFGH12345678", "MODEL": "gpt-4o"},
        "client": Client(),
        "llm": key,
        "urls": ["postgres://ada:s3cretPassw0rd@db/prod", "https://example.com"],
        "environ_data": {b"GITHUB_TOKEN": b"ghtoken-4242-abcd", b"HOME": b"/home/ada"},
        "frame": pd.DataFrame({"user": ["ada"], "key": [key]}),
        "rows": [key],
        "users": pd.DataFrame({"user": ["grace"], "password": ["pw-Staple9876"]}),
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(secrets)))
    out = "\n".join(
        runtime.call("inspect", {"name": name} if name else {}).output for name in [None, *secrets]
    )
    for leaked in (
        "Hunter2",
        "abcdEFGH",
        "tok-9f8e",
        "proj4abcdef",
        "s3cretPassw0rd",
        "ghtoken",
        "Staple9876",
    ):
        assert leaked not in out, leaked
    for kept in ("gpt-4o", "api.example.com", "/home/ada", "0  ada", "https://example.com"):
        assert kept in out, kept
    assert "db_password (str): 21 characters: [REDACTED]" in out


# -- execute ------------------------------------------------------------------------------------


def test_a_figure_that_cannot_be_drawn_is_reported_and_the_capture_released() -> None:
    """Attack: executed code makes a figure matplotlib cannot draw (a mathtext typo).
    Bug: saving it raised outside the code's ``try``, in the worker thread: the step said
    ``ok`` with grinta's own traceback in stderr, and the thread's output capture was never
    released (a later thread with the same id wrote into a dead buffer)."""
    matplotlib.use("Agg")
    code = "import matplotlib.pyplot as plt\nfig = plt.figure()\nfig.text(0.5, 0.5, r'$\\frac{$')\n"
    observation = run_code({}, code + "print('done')", 30, Settings())
    assert "[figure " in observation.output and "not drawn: ValueError" in observation.output
    assert "execute.py" not in observation.output
    assert "done" in observation.output
    assert ROUTER.captures == {}


def test_a_huge_list_as_the_final_value_is_shown_by_its_first_items() -> None:
    """Attack: the final expression is a list of millions of items (``data`` at the end of the
    code). Bug: ``repr(value)`` is one C call: it held the interpreter, so neither the time
    limit nor Stop nor the kernel could run, while it built the whole text (10^8 numbers:
    seconds and a gigabyte) that was then cut to its head and tail."""
    count = 3_000_000
    for code, opening in (
        (f"list(range({count}))", "["),
        (f"{{i: i for i in range({count})}}", "{"),
    ):
        observation = run_code({}, code, 60, Settings())
        value = observation.output.split("[value]\n", 1)[1]
        assert value.startswith(opening + "0")
        assert f"... {count - VALUE_ITEMS} more" in value
    small = run_code({}, "x = [1, 2]\nx.append(x)\nx", 30, Settings())
    assert small.output.endswith("[value]\n[1, 2, [...]]")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_forking_code_returns_once_in_the_kernel() -> None:
    """Attack: executed code forks (``os.fork()``); the child runs the rest of the code and
    ends. Held: the kernel's step reports once; the child's output stays in the child."""
    observation = run_code(
        {},
        "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint('parent')",
        30,
        Settings(),
    )
    assert observation.ok and observation.output.count("parent") == 1


def test_secrets_in_a_container_under_a_secret_name_are_redacted(tmp_path: Path) -> None:
    """Attack: ``API_TOKENS = ["..."]``, ``KEYS = {"github": "..."}``: text that looks like a
    secret, in no provider's format, under a name that says it holds secrets. Bug: the
    name counted only for text directly under it; the items reached the model as they were."""
    values = {
        "API_TOKENS": ["a8f5f167f44f4964e6c998dee827110c", "0b1c2d3e4f5a6b7c8d9e0f1a"],
        "KEYS": {"github": "Zq9xW2vB7nM4kL1pR8tY3uI6", "model": "gpt-4o"},
        "PASSWORDS": (("ada", "correct-horse-battery-staple-42"),),
        "names": ["ada", "grace"],
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    out = "\n".join(
        runtime.call("inspect", {"name": name} if name else {}).output for name in [None, *values]
    )
    for leaked in ("a8f5f167", "0b1c2d3e", "Zq9xW2vB", "correct-horse"):
        assert leaked not in out, (leaked, out)
    for kept in ("gpt-4o", "'ada'", "'grace'", "'github'"):
        assert kept in out, (kept, out)


def test_execute_output_is_redacted_of_secrets_held_only_in_the_kernel(tmp_path: Path) -> None:
    """Attack: ``print(db_password)``, a value under a secret key, a secret made by the code
    itself. Bug: ``execute``'s output was redacted of the environment's secrets only, so a
    secret that lives in the kernel reached the model as printed."""

    class Client:
        __module__ = "__main__"

        def __init__(self) -> None:
            self.token = "tok-9f8e7d6c5b4a3210"

    values: dict[str, Any] = {
        "db_password": "Hunter2-correct-horse",
        "config": {"OPENAI_API_KEY": "abcdEFGH12345678", "MODEL": "gpt-4o"},
        "api_keys": ["a8f5f167f44f4964e6c998dee827110c"],
        "client": Client(),
        "names": ["ada", "grace"],
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    code = (
        "made_token = 'Zq9xW2vB7nM4kL1pR8tY3uI6'\n"
        "print(db_password, config, api_keys, client.token, made_token, names)\n"
        "raise ValueError('bad ' + db_password)"
    )
    out = runtime.call("execute", {"code": code}).output
    for leaked in ("Hunter2", "abcdEFGH", "a8f5f167", "tok-9f8e", "Zq9xW2vB"):
        assert leaked not in out, (leaked, out)
    assert "gpt-4o" in out and "'grace'" in out and "[REDACTED]" in out
    assert "ValueError: bad [REDACTED]" in out
