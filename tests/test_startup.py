"""Startup: ``%load_ext`` imports nothing heavy, and the background warming stays out of sight.

Speed figures live in benchmarks/bench_startup.py; these tests hold the behaviour
the speed rests on: what is (not) imported on the kernel's thread, that warming
really happens in its own thread, and that a warming failure is silent while the
real error still reaches whoever needs the module.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.kernels import execute, running_kernel
from tests.openai_server import OpenAIServer, text_reply

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("litellm", "libcst", "tree_sitter", "nbformat", "tiktoken", "ipywidgets", "pydantic")


def run_python(
    code: str, tmp_path: Path, pythonpath: str = "", args: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    paths = [p for p in (pythonpath, str(REPO)) if p]
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *(args or [])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(paths), "GRINTA_MODEL": ""},
    )


def test_the_package_and_the_magics_import_nothing_heavy(tmp_path: Path) -> None:
    out = run_python(
        f"""
        import sys
        import grinta_jupyter
        import grinta_jupyter.jupyter.magics
        print([m for m in {HEAVY!r} if m in sys.modules])
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_load_ext_in_a_plain_shell_starts_no_thread(tmp_path: Path) -> None:
    out = run_python(
        f"""
        import sys, threading
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        threads = threading.active_count()
        shell.run_line_magic("load_ext", "grinta_jupyter")
        import grinta_jupyter
        print(grinta_jupyter._warming, threading.active_count() - threads,
              [m for m in {HEAVY!r} if m in sys.modules])
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None 0 []"


def test_load_ext_in_a_kernel_leaves_the_heavy_work_to_the_warming_thread(tmp_path: Path) -> None:
    # While this thread holds the import lock no other thread can import anything:
    # what is in sys.modules when load_ext returns was imported by load_ext itself.
    load = f"""
        import _imp, gc, json, sys
        import grinta_jupyter.jupyter.magics
        thresholds = gc.get_threshold()
        _imp.acquire_lock()
        try:
            get_ipython().run_line_magic("load_ext", "grinta_jupyter")
            heavy = [m for m in {HEAVY!r} if m in sys.modules]
            warming = grinta_jupyter._warming.is_alive()
        finally:
            _imp.release_lock()
        print(json.dumps({{"heavy": heavy, "warming": warming}}))
        """
    warmed = f"""
        grinta_jupyter._warming.join(120)
        from grinta_jupyter.agent.models import litellm_model
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        print(json.dumps({{
            "litellm": litellm_model._litellm is not None,
            "encoding": tokens._encoding.cache_info().currsize,
            "helper stopped": counting.HELPER._process is None,
            "imported": [m for m in {HEAVY!r} if m in sys.modules],
            "collector": gc.get_threshold() == thresholds and gc.isenabled(),
        }}))
        """
    # A model configured: the warming imports litellm too (a demo kernel does not:
    # tests/test_warming_demo.py).
    model = {"GRINTA_MODEL": "openai/test-model", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with running_kernel(tmp_path, model) as kc:
        loaded = json.loads(execute(kc, textwrap.dedent(load)))
        after = json.loads(execute(kc, textwrap.dedent(warmed), timeout=150))
    assert loaded == {"heavy": [], "warming": True}
    # ... and the thread did warm: litellm set up, the token encoding loaded.
    assert after["litellm"] and after["encoding"] == 1
    # The counting helper that counted meanwhile was stopped once the encoding was loaded.
    assert after["helper stopped"]
    # The collector's full passes, paused while warming imported, run as before.
    assert after["collector"]
    assert {"litellm", "pydantic", "ipywidgets", "tree_sitter"} <= set(after["imported"])


def test_a_warming_failure_is_silent_and_the_real_error_comes_when_needed(tmp_path: Path) -> None:
    broken = tmp_path / "site"
    (broken / "litellm").mkdir(parents=True)
    (broken / "litellm" / "__init__.py").write_text("raise ImportError('litellm is broken here')\n")
    call = """
        from grinta_jupyter.agent.models import LiteLLMModel
        model = LiteLLMModel("openai/x", api_base="http://127.0.0.1:9/v1", api_key="k")
        try:
            await model.complete([{"role": "user", "content": "hi"}], [])
        except ImportError as exc:
            print("the real error:", exc)
        """
    # A model configured, so the warming tries the broken litellm too.
    environment = {"PYTHONPATH": f"{broken}:{REPO}", "GRINTA_MODEL": "openai/x"}
    with running_kernel(tmp_path, environment) as kc:
        seen = _all_messages(kc, "%load_ext grinta_jupyter")
        seen += _all_messages(kc, "import grinta_jupyter; grinta_jupyter._warming.join(120)")
        assert [m for m in seen if m["msg_type"] in ("stream", "error")] == []
        assert (
            execute(kc, textwrap.dedent(call)).strip() == "the real error: litellm is broken here"
        )


def test_a_first_call_that_waits_for_litellm_is_not_kept_waiting_for_a_rehearsal(
    tmp_path: Path,
) -> None:
    # A real call that asked for litellm first loads what a rehearsal would load: the
    # warming then only imports. Without such a call the warming rehearses. (A model
    # litellm knows: an unknown one's first call goes out without it, agent/models/early.py.)
    code = """
        import asyncio, sys
        from grinta_jupyter.agent.models import LiteLLMModel, litellm_model
        if sys.argv[1] == "call":
            model = LiteLLMModel("openai/gpt-4o-mini", api_base=sys.argv[2], api_key="k")
            reply = asyncio.run(model.complete([{"role": "user", "content": "hi"}], []))
            print(reply.text, end=" ")
        print(litellm_model.warm())
        """
    with OpenAIServer() as server:
        server.queue(text_reply("hello"))
        called = run_python(code, tmp_path, args=["call", server.url])
        alone = run_python(code, tmp_path, args=["alone"])
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "hello False"
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.strip() == "True"
    assert len(server.requests) == 1  # a rehearsal sends nothing


def test_warming_in_a_kernel_prints_nothing_and_the_session_works(tmp_path: Path) -> None:
    with running_kernel(tmp_path) as kc:
        seen = _all_messages(kc, "%load_ext grinta_jupyter")
        seen += _all_messages(kc, "import grinta_jupyter; grinta_jupyter._warming.join(120)")
        shown = [m for m in seen if m["msg_type"] in ("stream", "error")]
        assert shown == []
        # The demo session runs on the warmed modules and stops at its first card.
        seen = _all_messages(kc, "%grinta --manual fix the failing test\n%grinta step")
        text = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
        assert "manual mode" in text
        assert not [m for m in seen if m["msg_type"] == "error"]


def _all_messages(kc: Any, code: str) -> list[dict[str, Any]]:
    """Every iopub message, whatever cell it belongs to, until ``code`` has run."""
    msg_id = kc.execute(code)
    seen = []
    while True:
        msg = kc.get_iopub_msg(timeout=120)
        seen.append(msg)
        state = msg["content"].get("execution_state")
        if msg["parent_header"].get("msg_id") == msg_id and state == "idle":
            return seen
