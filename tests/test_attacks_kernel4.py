"""Attacks on ``inspect`` and ``execute`` (tools/inspect.py, values.py, execute.py): keys of the
user's that answer a lookup with their own code, and final values written by a repr the standard
library (or numpy) made, which wrote huge lists whole.

Each test's docstring names the attack and the bug it found.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grinta_jupyter.runtime.errors import ToolFailure
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.execute import _value_repr, run_code
from grinta_jupyter.tools.facade import Runtime
from grinta_jupyter.tools.inspect import inspect_namespace
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset


class _Collider:
    """A key whose hash is a name's: a lookup of that name compares with its ``__eq__``."""

    calls: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        _Collider.calls.append(self.name)
        return False


def test_inspect_never_compares_a_users_key_with_a_name(tmp_path: Path) -> None:
    """Attack: ``globals()[Key()] = 1`` whose hash is ``"df"``'s, a class made with such a key
    beside ``__doc__`` and ``__dict__``, a function whose ``__kwdefaults__`` holds one and whose
    ``__defaults__`` is a tuple subclass with its own ``__len__``. Bug: copying the namespace,
    looking a name up in it, reading a class's doc or an object's ``__dict__`` slot and writing a
    signature compared the names with the key (its ``__eq__`` ran, and one that loops hung the
    read) or asked the tuple its length."""
    _Collider.calls.clear()

    class Counted(tuple):  # type: ignore[type-arg]
        def __len__(self) -> int:
            _Collider.calls.append("len")
            return 1

    def f(a: int, b: int = 1, *, c: int = 2) -> None:
        pass

    f.__defaults__ = Counted((1,))
    f.__kwdefaults__ = {_Collider("c"): 0, "c": 2}
    klass = type("Klass", (), {_Collider("__doc__"): 0, _Collider("__dict__"): 0, "__doc__": "d"})
    live: dict[Any, Any] = {}
    for i in range(10):  # a namespace with deleted names is copied key by key
        live[f"old{i}"] = i
        del live[f"old{i}"]
    live[_Collider("df")] = 1
    live.update(df=[1, 2], f=f, Klass=klass, obj=klass())
    _Collider.calls.clear()
    namespace = DictNamespace(live)
    shown = [
        inspect_namespace(namespace),
        *(inspect_namespace(namespace, n) for n in live if type(n) is str),
    ]
    with pytest.raises(ToolFailure):
        inspect_namespace(namespace, "dg")
    assert _Collider.calls == [], _Collider.calls
    text = "\n".join(shown)
    assert "df (list): 2 items: [1, 2]" in text and "f(a, b=..., c=...)" in text
    assert "doc: d" in text


@dataclasses.dataclass
class _Rows:
    rows: list[Any]
    label: str = "x"


_Pair = collections.namedtuple("_Pair", "rows label")


class _Rowlist(list):  # type: ignore[type-arg]
    pass


def test_execute_writes_namedtuples_dataclasses_subclasses_and_object_arrays_bounded(
    tmp_path: Path,
) -> None:
    """Attack: a final value ``Pair(rows, "x")``, a dataclass, a list subclass, a
    ``defaultdict(list)``, an ``OrderedDict`` or a numpy array of objects holding ten million
    items (``[[0] * 10**5] * 100``). Bug: only exact builtin containers were written with the
    1,000-items budget; these went to their own repr, which writes the lists whole in one C call
    (neither the time limit nor Stop can end it): 30 MB and most of a second here, a minute and
    gigabytes at ``[[0] * 10**6] * 1000``. Small values are still written as their repr writes
    them."""
    rows = [[0] * 10**5] * 100
    array = np.empty(3, dtype=object)
    array[:] = [rows, "x", None]
    namespace: dict[str, Any] = {
        "values": [
            _Pair(rows, "x"),
            _Rows(rows),
            _Rowlist(rows),
            collections.defaultdict(list, a=rows),
            collections.OrderedDict(a=rows),
            array,
        ]
    }
    for i in range(len(namespace["values"])):
        started = time.monotonic()
        observation = run_code(namespace, f"values[{i}]", 30, Settings())
        assert time.monotonic() - started < 0.4, i
        assert observation.ok and "... 99 more" in observation.output, observation.output[-300:]
        assert len(observation.output) < 5_000
    assert "label='x'" in run_code(namespace, "values[0]", 30, Settings()).output
    small: list[Any] = [
        _Pair(1, [2, (3,)]),
        _Rows([_Pair(1, 2)]),
        _Rowlist([1, _Rowlist()]),
        collections.defaultdict(int, a=1),
        collections.OrderedDict(a=(1,)),
        np.array([[1, "a"], [None, [1, 2]]], dtype=object),
    ]
    for value in small:
        assert _value_repr(value) == repr(value)


def test_execute_error_message_is_redacted_of_kernel_secrets(tmp_path: Path) -> None:
    """Attack: ``raise ValueError(db_password)`` through the public ``Runtime.call``. Bug: the
    observation's text said ``ValueError: [REDACTED]``, but its ``error.message``, which a
    caller of the Python API reads, held the password as raised."""
    namespace = DictNamespace({"db_password": "Hunter2-correct-horse-77"})
    runtime = Runtime(tmp_path, kernel_toolset(namespace))
    observation = runtime.call("execute", {"code": "raise ValueError(db_password)"})
    assert observation.error is not None and observation.error.code == "EXECUTE_FAILED"
    assert "Hunter2" not in observation.error.message, observation.error.message
    assert "Hunter2" not in observation.output and "[REDACTED]" in observation.error.message
