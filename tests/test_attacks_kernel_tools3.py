"""Attacks on ``inspect`` and ``execute`` (tools/inspect.py, values.py, frames.py, execute.py):
secrets the kernel holds in shapes the redaction did not look at, a final value whose repr held
the interpreter, and a broken rich representation that failed the code.

Each test's docstring names the attack and the bug it found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.execute import run_code
from grinta_jupyter.tools.facade import Runtime
from grinta_jupyter.tools.kernel import DictNamespace, kernel_toolset


def _inspect_all(runtime: Runtime, names: list[str]) -> str:
    calls = [{}, *({"name": name} for name in names)]
    return "\n".join(runtime.call("inspect", args).output for args in calls)


def test_inspect_hides_secrets_held_in_numpy_texts_and_unnamed_series(tmp_path: Path) -> None:
    """Attack: ``passwords = np.array([...])``, ``api_key = np.str_(...)`` (what
    ``array[0]`` gives), ``api_keys = pd.Series([...])``, a frame indexed by its ``api_key``
    column. Bug: the variable's name counted for lists and dicts only: each text was shown as
    it was (a list of the same texts showed [REDACTED])."""
    values: dict[str, Any] = {
        "passwords": np.array(["Hunter2-correct-horse", "Tr0ub4dor-and-3x"]),
        "api_key": np.str_("Zq9xW2vB7nM4kL1pR8tY3uI6"),
        "api_keys": pd.Series(["a8f5f167f44f4964e6c998dee827110c"]),
        "accounts": pd.DataFrame(
            {"api_key": ["0b1c2d3e4f5a6b7c8d9e0f1a"], "owner": ["ada"]}
        ).set_index("api_key"),
        "names": np.array(["ada", "grace"]),
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    out = _inspect_all(runtime, list(values))
    for leaked in ("Hunter2", "Tr0ub4dor", "Zq9xW2vB", "a8f5f167", "0b1c2d3e"):
        assert leaked not in out, (leaked, out)
    assert "[REDACTED]" in out and "'grace'" in out and "ada" in out


def test_execute_redacts_secrets_nested_in_lists_deep_dicts_frames_and_numpy_texts(
    tmp_path: Path,
) -> None:
    """Attack: ``print(users)`` for ``[{"name": ..., "password": ...}]`` (a list under an
    ordinary name), a YAML-like config three dicts deep, a frame with a ``password`` column,
    an ``np.str_`` key. Bug: ``inspect`` showed each as [REDACTED], but ``execute``'s output
    was redacted only of texts at the top of a variable or one level under a secret name: each
    secret reached the model as printed."""
    values: dict[str, Any] = {
        "users": [{"name": "bob", "password": "Hunter2-correct-horse"}],
        "cfg": {"prod": {"db": {"password": "Deep3Secret99-staple"}}},
        "creds": pd.DataFrame({"user": ["ada"], "password": ["FrameCell5Secret-x"]}),
        "api_key": np.str_("Zq9xW2vB7nM4kL1pR8tY3uI6"),
        "names": ["ada", "grace"],
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    code = "print(users, cfg, api_key, names)\nprint(creds.to_string())"
    out = runtime.call("execute", {"code": code}).output
    for leaked in ("Hunter2", "Deep3Secret", "FrameCell5", "Zq9xW2vB"):
        assert leaked not in out, (leaked, out)
    assert "'grace'" in out and "[REDACTED]" in out


def test_a_secret_printed_then_deleted_or_rebound_is_still_redacted(tmp_path: Path) -> None:
    """Attack: ``print(db_password); del db_password`` (or ``token = None`` after printing).
    Bug: the kernel's secrets were read only after the code ran, when the name was gone, so
    the printed value reached the model."""
    values: dict[str, Any] = {
        "db_password": "Hunter2-correct-horse",
        "token": "tok-9f8e7d6c5b4a3210",
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    code = "print(db_password, token)\ndel db_password\ntoken = None"
    out = runtime.call("execute", {"code": code}).output
    assert "Hunter2" not in out and "tok-9f8e" not in out, out
    assert "[REDACTED]" in out


def test_a_final_values_html_is_redacted_of_the_kernels_secrets(tmp_path: Path) -> None:
    """Attack: the code's last line is a frame holding a secret (``creds``): its
    ``_repr_html_`` is a rich output the event log keeps. Bug: only the outputs' text/plain
    descriptions were redacted; the HTML carried the password as it was."""
    values: dict[str, Any] = {
        "creds": pd.DataFrame({"user": ["ada"], "password": ["FrameCell5Secret-x"]}),
    }
    runtime = Runtime(tmp_path, kernel_toolset(DictNamespace(values)))
    observation = runtime.call("execute", {"code": "creds"})
    html = [output["text/html"] for output in observation.outputs if "text/html" in output]
    assert html and "ada" in html[0]
    assert "FrameCell5" not in html[0] and "[REDACTED]" in html[0]


def test_a_final_value_of_nested_lists_is_shown_by_a_bounded_number_of_items() -> None:
    """Attack: the final expression is a list of long lists (a grid: ``[[0] * 10**6] * 1000``
    holds 8 MB). Bug: only the top level was cut to its first items; the inner lists were
    written out whole by one C call holding the interpreter past the time limit, Stop and the
    kernel's event loop (10^9 items: a minute and gigabytes). Here 10^7 items."""
    observation = run_code({}, "[[0] * 100_000] * 100", 30, Settings())
    value = observation.output.split("[value]\n", 1)[1]
    assert value.startswith("[[0, 0")
    assert value.endswith(", ... 99 more]"), value[-200:]
    assert len(value) < 10_000


def test_a_png_representation_that_is_not_base64_is_not_the_codes_failure() -> None:
    """Attack: the final value's ``_repr_png_`` returns text that is not base64. Bug: decoding
    it raised inside the run, and code that ran fine came back EXECUTE_FAILED with a binascii
    error (a representation that raises was already ignored)."""
    code = (
        "class Chart:\n"
        "    def _repr_png_(self):\n"
        "        return 'not base64!'\n"
        "    def __repr__(self):\n"
        "        return 'Chart()'\n"
        "Chart()"
    )
    observation = run_code({}, code, 30, Settings())
    assert observation.ok, observation.output
    assert observation.output.endswith("[value]\nChart()")
